"""Replay of NVIDIA/numba-cuda#194 through cuda.core: a kernel and a declared device
function (scenarios/fixtures/dev_add.cu) compiled to LTO-IR with debug information (-G),
linked with link-time optimization and debug (-lto -g), as the cujit scenario does.

Reported: the link failed: outcome "link-error". Fixed: it links: outcome "ok".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import json
import pathlib
import sys


def report(outcome, detail="", toolkit=""):
    print("CUJIT_REPLAY " + json.dumps({"outcome": outcome, "detail": str(detail)[:1500], "toolkit": toolkit}))
    sys.exit(0)


try:
    from cuda.core import Linker, LinkerOptions, Program, ProgramOptions
except ImportError:
    from cuda.core.experimental import Linker, LinkerOptions, Program, ProgramOptions

FIXTURES = pathlib.Path(__file__).resolve().parent.parent.parent / "fixtures"
ARCH = "sm_90"
KERNEL = """
extern "C" __device__ int dev_add(int a, int b);
extern "C" __global__ void add_kernel(int* out, int a, int b) {
  out[threadIdx.x] = dev_add(a, b + static_cast<int>(threadIdx.x));
}
"""


def toolkit():
    try:
        from cuda.bindings import nvjitlink
        return "nvJitLink %d.%d" % tuple(nvjitlink.version())
    except Exception as error:
        return "unknown (%s)" % type(error).__name__


def ltoir(code):
    options = ProgramOptions(arch=ARCH, relocatable_device_code=True, link_time_optimization=True, debug=True)
    return Program(code, "c++", options=options).compile("ltoir")


try:
    objects = [ltoir(KERNEL), ltoir((FIXTURES / "dev_add.cu").read_text())]
except Exception as error:
    report("compile-error", "%s: %s" % (type(error).__name__, error), toolkit())
try:
    options = LinkerOptions(arch=ARCH, link_time_optimization=True, debug=True)
    linked = Linker(*objects, options=options).link("cubin")
except Exception as error:
    report("link-error", "%s: %s" % (type(error).__name__, error), toolkit())
report("ok", "linked: %r" % (linked,), toolkit())
