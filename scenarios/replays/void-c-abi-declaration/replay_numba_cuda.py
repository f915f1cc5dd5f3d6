"""Replay of NVIDIA/numba-cuda#845 through numba-cuda: a C-ABI device function that returns
void (record_value, CUDA C++ compiled to LTO-IR with NVRTC; the cujit scenario's
scenarios/fixtures/record_value.cu is the same function writing through a pointer), declared with declare_device(..., abi="c") as
void(int32) and linked with lto=True; it writes 2 * value + 1 to a __device__ variable that
a second C-ABI function, recorded(), returns.

Reported: the declaration returned i8* instead of void, and LTO linked the mismatch
silently into malformed code: outcome "wrong-result" (a linker that notices gives
"link-error", another outcome). Fixed: the kernel reads 2 * value + 1: outcome "ok".
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

RECORD = """
__device__ int recorded_value;
extern "C" __device__ void record_value(int value) { recorded_value = 2 * value + 1; }
extern "C" __device__ int recorded() { return recorded_value; }
"""

if not cuda.is_available():
    report("needs-device", "numba.cuda.is_available() is False")
try:
    cc = cuda.get_current_device().compute_capability
    path = pathlib.Path(tempfile.mkdtemp(prefix="cujit-replay-")) / "record_value.ltoir"
    path.write_bytes(nvrtc(RECORD, "record_value.cu", "compute_%d%d" % tuple(cc), ltoir=True))
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    record_value = cuda.declare_device("record_value", "void(int32)", link=[str(path)], abi="c")
    recorded = cuda.declare_device("recorded", "int32()", abi="c")
except TypeError as error:  # a numba-cuda whose declare_device has no abi= cannot express the case
    report("no-c-abi-declaration", failure(error), toolkit())
try:
    @cuda.jit(lto=True)
    def kernel(out, value):
        record_value(value)
        out[0] = recorded()

    out = cuda.to_device(np.zeros(1, dtype=np.int32))
    kernel[1, 1](out, 10)  # compiles and links here
    cuda.synchronize()
    got = int(out.copy_to_host()[0])
except Exception as error:
    text = failure(error)
    report("link-error" if "link" in text.lower() else "error", text, toolkit())
report("ok" if got == 21 else "wrong-result", "recorded after record_value(10) = %d (expected 21)" % got, toolkit())
