"""Replay of NVIDIA/cuda-python#920 through CuPy: a module loaded straight from PTX that
calls undefined extern functions (mixed_kernel.ptx beside this file: nvcc 13.0
-arch=compute_90 -rdc=true -ptx of scenarios/fixtures/mixed_kernel.cu), with
cupy.RawModule(path=...) and get_function, which loads it (cuModuleLoad).

Reported: it loaded, and the kernel was empty: outcome "loaded".
Fixed: loading fails, naming the unresolved functions: outcome "load-error".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import json
import pathlib
import sys


def report(outcome, detail="", toolkit=""):
    print("CUJIT_REPLAY " + json.dumps({"outcome": outcome, "detail": str(detail)[:1500], "toolkit": toolkit}))
    sys.exit(0)


import cupy  # noqa: E402

PTX = pathlib.Path(__file__).resolve().parent / "mixed_kernel.ptx"


def toolkit():
    try:
        return "CUDA runtime %d, NVRTC %d.%d" % ((cupy.cuda.runtime.runtimeGetVersion(),) + tuple(cupy.cuda.nvrtc.getVersion()))
    except Exception as error:  # the version is for the record; its absence is not the outcome
        return "unknown (%s)" % type(error).__name__


try:
    if cupy.cuda.runtime.getDeviceCount() < 1:
        report("needs-device", "cupy.cuda.runtime.getDeviceCount() is 0", toolkit())
except Exception as error:
    report("needs-device", "%s: %s" % (type(error).__name__, error), toolkit())
try:
    kernel = cupy.RawModule(path=str(PTX)).get_function("mixed_kernel")  # loads the module
except Exception as error:
    report("load-error", "%s: %s" % (type(error).__name__, error), toolkit())
report("loaded", "get_function('mixed_kernel') returned %r" % (kernel,), toolkit())
