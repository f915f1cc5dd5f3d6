"""Replay of NVIDIA/numba-cuda#101 through numba-cuda: code held in memory, not in a file,
linked into a kernel: a device function's PTX (built separately with NVRTC) given to the
link list as cuda.PTXSource, reached through declare_device, as the report's users did.

Reported: the linker backend had no add_data, and in-memory code could not be linked:
outcome "link-error". Fixed: it links and runs: outcome "ok".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
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

# numba's ABI for declare_device: the result through the first pointer, a status returned.
SCALE = """
extern "C" __device__ int scale3(int* ret, int x, int i) {
  *ret = 3 * x + i;
  return 0;
}
"""

if not cuda.is_available():
    report("needs-device", "numba.cuda.is_available() is False")
try:
    cc = cuda.get_current_device().compute_capability
    ptx = nvrtc(SCALE, "scale3.cu", "compute_%d%d" % tuple(cc))
    source = cuda.PTXSource(ptx)  # in memory: never written to a file
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    scale3 = cuda.declare_device("scale3", "int32(int32, int32)", link=[source])

    @cuda.jit
    def kernel(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = scale3(x, i)

    out = cuda.to_device(np.zeros(4, dtype=np.int32))
    kernel[1, 4](out, 5)  # compiles and links here
    cuda.synchronize()
    got = out.copy_to_host().tolist()
except Exception as error:
    text = failure(error)
    linking = "link" in text.lower() or "add_data" in text
    report("link-error" if linking else "error", text, toolkit())
report("ok" if got == [15, 16, 17, 18] else "wrong-result", "out = %s" % got, toolkit())
