"""Replay of NVIDIA/numba-cuda PR #167 through numba-cuda, with NUMBA_CUDA_ENABLE_NRT=1: a
kernel calls a shim (declare_device) whose separately supplied PTX (built with NVRTC) is the
only code that calls NRT functions, as cuDF's string UDFs do; the kernel itself uses no NRT.

Reported: NRT use was detected in the kernel's own code only, NRT was not linked, and the
link failed on an undefined NRT_* symbol: outcome "link-error".
Fixed: NRT is linked for the external code too; the kernel runs: outcome "ok".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import os

# Read by numba when it is imported: set before the import below.
os.environ["NUMBA_CUDA_ENABLE_NRT"] = "1"
import json
import pathlib
import sys
import tempfile


def report(outcome, detail="", toolkit=""):
    print("CUJIT_REPLAY " + json.dumps({"outcome": outcome, "detail": str(detail)[:1500], "toolkit": toolkit}))
    sys.exit(0)


def failure(error):
    return "%s: %s" % (type(error).__name__, error)


def nvrtc(source, name, arch, ltoir=False, options=()):
    """CUDA C++ to PTX or LTO-IR through cuda.bindings.nvrtc (numba-cuda's own dependency),
    as the separately built input of the report; raises RuntimeError with NVRTC's log."""
    from cuda.bindings import nvrtc as api

    def check(result):
        if result[0] != api.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError("NVRTC %s" % (result[0],))
        return result[1:]

    (program,) = check(api.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []))
    try:
        flags = [b"--gpu-architecture=" + arch.encode(), b"-rdc=true"] + ([b"-dlto"] if ltoir else [])
        flags += [option.encode() for option in options]
        if api.nvrtcCompileProgram(program, len(flags), flags)[0] != api.nvrtcResult.NVRTC_SUCCESS:
            (size,) = check(api.nvrtcGetProgramLogSize(program))
            log = b" " * size
            check(api.nvrtcGetProgramLog(program, log))
            raise RuntimeError("NVRTC could not compile %s: %s" % (name, log.decode(errors="replace")))
        get_size, get = (api.nvrtcGetLTOIRSize, api.nvrtcGetLTOIR) if ltoir else (api.nvrtcGetPTXSize, api.nvrtcGetPTX)
        (size,) = check(get_size(program))
        code = b" " * size
        check(get(program, code))
        return code if ltoir else code.rstrip(b"\0")
    finally:
        api.nvrtcDestroyProgram(program)


try:
    import numpy as np

    # numba-cuda 0.30.4 calls numpy.row_stack, which numpy 2.5 removed (an incompatibility of
    # the installed pair, not the reported case).
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    from numba import cuda
except Exception as error:  # an import that fails is an outcome too, never a traceback
    report("import-error", failure(error))


def toolkit():
    try:
        return "CUDA runtime %d.%d" % tuple(cuda.runtime.get_version())
    except Exception as error:  # the version is for the record; its absence is not the outcome
        return "unknown (%s)" % type(error).__name__

# The shim, in numba's ABI for declare_device. It calls NRT's refcount functions (declared
# as numba-cuda's NRT defines them, extern "C") only for a negative n, which this replay
# never passes: the references are what the link must resolve.
SHIM = """
extern "C" __device__ void NRT_incref(void* meminfo);
extern "C" __device__ void NRT_decref(void* meminfo);
extern "C" __device__ int string_udf_shim(int* ret, int n) {
  if (n < 0) {
    void* meminfo = reinterpret_cast<void*>(static_cast<long long>(-n));
    NRT_incref(meminfo);
    NRT_decref(meminfo);
  }
  *ret = n * (n - 1);
  return 0;
}
"""

if not cuda.is_available():
    report("needs-device", "numba.cuda.is_available() is False")
try:
    cc = cuda.get_current_device().compute_capability
    ptx = pathlib.Path(tempfile.mkdtemp(prefix="cujit-replay-")) / "string_udf_shim.ptx"
    ptx.write_bytes(nvrtc(SHIM, "string_udf_shim.cu", "compute_%d%d" % tuple(cc)))
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    shim = cuda.declare_device("string_udf_shim", "int32(int32)", link=[str(ptx)])

    @cuda.jit
    def kernel(out, n):
        out[0] = shim(n)

    out = cuda.to_device(np.zeros(1, dtype=np.int32))
    kernel[1, 1](out, 3)  # compiles and links here
    cuda.synchronize()
    got = int(out.copy_to_host()[0])
except Exception as error:
    text = failure(error)
    linking = "link" in text.lower() or "NRT_" in text or "unresolved" in text.lower()
    report("link-error" if linking else "error", text, toolkit())
report("ok" if got == 6 else "wrong-result", "shim(3) = %d (expected 6)" % got, toolkit())
