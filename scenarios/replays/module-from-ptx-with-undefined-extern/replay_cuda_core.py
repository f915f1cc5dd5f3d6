"""Replay of NVIDIA/cuda-python#920 through cuda.core: a module loaded straight from PTX
that calls undefined extern functions (scenarios/fixtures/mixed_kernel.cu compiled to
relocatable PTX), with ObjectCode.from_ptx and get_kernel, which loads it on the device.

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


try:  # cuda.core >= 0.5 exports its API at the top level; older releases under .experimental
    from cuda.core import Device, Linker, LinkerOptions, ObjectCode, Program, ProgramOptions
except ImportError:
    from cuda.core.experimental import Device, Linker, LinkerOptions, ObjectCode, Program, ProgramOptions

FIXTURES = pathlib.Path(__file__).resolve().parent.parent.parent / "fixtures"


def toolkit():
    try:
        from cuda.bindings import nvjitlink
        return "nvJitLink %d.%d" % tuple(nvjitlink.version())
    except Exception as error:  # the version is for the record; its absence is not the outcome
        return "unknown (%s)" % type(error).__name__


try:
    device = Device(0)
    device.set_current()
    capability = device.compute_capability
    arch = "sm_%d%d" % (capability.major, capability.minor)
except Exception as error:
    report("needs-device", "%s: %s" % (type(error).__name__, error), toolkit())
try:
    options = ProgramOptions(arch=arch, relocatable_device_code=True)
    ptx = Program((FIXTURES / "mixed_kernel.cu").read_text(), "c++", options=options).compile("ptx").code
except Exception as error:
    report("setup-error", "compiling mixed_kernel.cu to PTX: %s: %s" % (type(error).__name__, error), toolkit())
try:
    kernel = ObjectCode.from_ptx(ptx).get_kernel("mixed_kernel")  # loads the module
except Exception as error:
    report("load-error", "%s: %s" % (type(error).__name__, error), toolkit())
report("loaded", "get_kernel('mixed_kernel') returned %r" % (kernel,), toolkit())
