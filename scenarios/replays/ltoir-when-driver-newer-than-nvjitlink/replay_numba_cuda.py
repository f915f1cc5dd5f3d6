"""Replay of NVIDIA/cuda-python#2351 through numba-cuda (whose linker is cuda.core's): a
kernel jitted with lto=True calls a declared function whose code is a .ltoir file (built with
NVRTC), on this machine's driver and nvJitLink. The report's configuration is a driver whose
major version is newer than nvJitLink's (nightly numba-cuda CI with cu12 wheels on a 13.x
driver); the replay records both versions in its detail.

Reported: the link went to the driver's cuLink*, which cannot take LTO-IR ("Unknown
code_type associated with ObjectCode: ltoir"): outcome "ltoir-refused".
Fixed: it links and adds: outcome "ok".
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
ADD = """
extern "C" __device__ int dev_add(int* ret, int a, int b) {
  *ret = a + b;
  return 0;
}
"""

def versions():
    try:
        from cuda.bindings import driver, nvjitlink
        version = driver.cuDriverGetVersion()[1]
        return "driver CUDA %d.%d, nvJitLink %d.%d" % ((version // 1000, version % 1000 // 10) + tuple(nvjitlink.version()))
    except Exception as error:  # for the record only
        return "versions unknown (%s)" % type(error).__name__


if not cuda.is_available():
    report("needs-device", "numba.cuda.is_available() is False")
try:
    cc = cuda.get_current_device().compute_capability
    path = pathlib.Path(tempfile.mkdtemp(prefix="cujit-replay-")) / "dev_add.ltoir"
    path.write_bytes(nvrtc(ADD, "dev_add.cu", "compute_%d%d" % tuple(cc), ltoir=True))
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    dev_add = cuda.declare_device("dev_add", "int32(int32, int32)", link=[str(path)])

    @cuda.jit(lto=True)
    def kernel(out, a, b):
        out[0] = dev_add(a, b)

    out = cuda.to_device(np.zeros(1, dtype=np.int32))
    kernel[1, 1](out, 6, 7)  # compiles and links here
    cuda.synchronize()
    got = int(out.copy_to_host()[0])
except Exception as error:
    text = failure(error)
    refused = "code_type" in text or "ltoir" in text.lower()
    report("ltoir-refused" if refused else "error", "%s (%s)" % (text, versions()), toolkit())
report("ok" if got == 13 else "wrong-result", "dev_add(6, 7) = %d (%s)" % (got, versions()), toolkit())
