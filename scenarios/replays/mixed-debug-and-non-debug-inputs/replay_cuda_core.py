"""Replay of numba/numba#7159 through cuda.core: a kernel compiled with debug information
(-G) linked, with debug (-g), against device functions compiled without it, as the cujit
scenario does (scenarios/fixtures/mixed_kernel.cu, dev_add.cu, dev_mul.cu, to PTX).

Reported: the link failed: outcome "link-error". Fixed: it links: outcome "ok".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import json
import pathlib
import sys


def report(outcome, detail="", toolkit=""):
    print("CUJIT_REPLAY " + json.dumps({"outcome": outcome, "detail": str(detail)[:1500], "toolkit": toolkit}))
    sys.exit(0)


try:  # cuda.core >= 0.5 exports its API at the top level; older releases under .experimental
    from cuda.core import Linker, LinkerOptions, Program, ProgramOptions
except ImportError:
    from cuda.core.experimental import Linker, LinkerOptions, Program, ProgramOptions

FIXTURES = pathlib.Path(__file__).resolve().parent.parent.parent / "fixtures"
ARCH = "sm_90"


def toolkit():
    try:
        from cuda.bindings import nvjitlink
        return "nvJitLink %d.%d" % tuple(nvjitlink.version())
    except Exception as error:
        return "unknown (%s)" % type(error).__name__


def ptx(name, debug):
    options = ProgramOptions(arch=ARCH, relocatable_device_code=True, debug=debug)
    return Program((FIXTURES / name).read_text(), "c++", options=options).compile("ptx")


try:
    objects = [ptx("mixed_kernel.cu", True), ptx("dev_add.cu", False), ptx("dev_mul.cu", False)]
except Exception as error:
    report("compile-error", "%s: %s" % (type(error).__name__, error), toolkit())
try:
    linked = Linker(*objects, options=LinkerOptions(arch=ARCH, debug=True)).link("cubin")
except Exception as error:
    report("link-error", "%s: %s" % (type(error).__name__, error), toolkit())
report("ok", "linked: %r" % (linked,), toolkit())
