"""Replay of NVIDIA/numba-cuda#696 through numba-cuda: a kernel jitted for debugging
(debug=True, opt=False) with lto=True that calls a device function whose code is external
LTO-IR, built separately without debug information (NVRTC, -dlto), linked from a .ltoir file.

Reported: the link failed: outcome "link-error". Fixed: it links and adds: outcome "ok".
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

# numba's ABI for declare_device: the result through the first pointer, a status returned.
ADD = """
extern "C" __device__ int dev_add(int* ret, int a, int b) {
  *ret = a + b;
  return 0;
}
"""


def toolkit():
    try:
        return "CUDA runtime %d.%d" % tuple(cuda.runtime.get_version())
    except Exception as error:  # the version is for the record; its absence is not the outcome
        return "unknown (%s)" % type(error).__name__


if not cuda.is_available():
    report("needs-device", "numba.cuda.is_available() is False")
try:
    cc = cuda.get_current_device().compute_capability
    ltoir = pathlib.Path(tempfile.mkdtemp(prefix="cujit-replay-")) / "dev_add.ltoir"
    ltoir.write_bytes(nvrtc(ADD, "dev_add.cu", "compute_%d%d" % tuple(cc), ltoir=True))
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    dev_add = cuda.declare_device("dev_add", "int32(int32, int32)", link=[str(ltoir)])

    @cuda.jit(debug=True, opt=False, lto=True)
    def kernel(a, b, c):
        i = cuda.grid(1)
        if i < c.size:
            c[i] = dev_add(a[i], b[i])

    a = cuda.to_device(np.array([1, 2, 3, 4, 5], dtype=np.int32))
    b = cuda.to_device(np.array([6, 7, 8, 9, 10], dtype=np.int32))
    c = cuda.device_array_like(a)
    kernel[1, 5](a, b, c)  # compiles and links here
    cuda.synchronize()
    got = c.copy_to_host().tolist()
except Exception as error:
    text = failure(error)
    report("link-error" if "link" in text.lower() else "error", text, toolkit())
report("ok" if got == [7, 9, 11, 13, 15] else "wrong-result", "c = %s" % got, toolkit())
