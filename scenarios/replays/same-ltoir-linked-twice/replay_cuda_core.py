"""Replay of same-ltoir-linked-twice through cuda.core: a kernel's LTO-IR linked with the
same device function's LTO-IR listed twice (dev_add.cu, as a link list that names one
library twice does), and dev_mul's, with link-time optimization.

Reported: the link failed with a multiple definition: outcome "link-error".
Fixed: the identical input is taken once and it links: outcome "ok".
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


ARCH = "sm_90"


def ltoir(name):
    options = ProgramOptions(arch=ARCH, relocatable_device_code=True, link_time_optimization=True)
    return Program((FIXTURES / name).read_text(), "c++", options=options).compile("ltoir")


try:
    # dev_add.cu compiled twice: two identical LTO-IR objects, as a link list naming it twice.
    objects = [ltoir("mixed_kernel.cu"), ltoir("dev_add.cu"), ltoir("dev_add.cu"), ltoir("dev_mul.cu")]
except Exception as error:
    report("setup-error", "%s: %s" % (type(error).__name__, error), toolkit())
try:
    linked = Linker(*objects, options=LinkerOptions(arch=ARCH, link_time_optimization=True)).link("cubin")
except Exception as error:
    report("link-error", "%s: %s" % (type(error).__name__, error), toolkit())
report("ok", "linked: %r" % (linked,), toolkit())
