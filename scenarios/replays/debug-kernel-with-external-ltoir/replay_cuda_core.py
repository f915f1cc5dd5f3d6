"""Replay of NVIDIA/numba-cuda#696 through cuda.core: a kernel compiled for debugging (-G)
to LTO-IR (scenarios/fixtures/mixed_kernel.cu) linked, with -g and link-time optimization,
against external LTO-IR built without debug information (dev_add.cu, dev_mul.cu), as the
cujit scenario links its build's dev_add.ltoir and dev_mul.ltoir.

Reported: the link failed: outcome "link-error". Fixed: it links: outcome "ok".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import json
import pathlib
import sys


def report(outcome, detail="", toolkit=""):
    print("CUJIT_REPLAY " + json.dumps({"outcome": outcome, "detail": str(detail)[:1500], "toolkit": toolkit}))
    sys.exit(0)


def failure(error):
    return "%s: %s" % (type(error).__name__, error)


try:  # cuda.core >= 0.5 exports its API at the top level; older releases under .experimental
    from cuda.core import Linker, LinkerOptions, Program, ProgramOptions
except ImportError:
    try:
        from cuda.core.experimental import Linker, LinkerOptions, Program, ProgramOptions
    except Exception as error:  # an import that fails is an outcome too, never a traceback
        report("import-error", failure(error))

FIXTURES = pathlib.Path(__file__).resolve().parent.parent.parent / "fixtures"
ARCH = "sm_90"


def toolkit():
    try:
        from cuda.bindings import nvjitlink
        return "nvJitLink %d.%d" % tuple(nvjitlink.version())
    except Exception as error:  # the version is for the record; its absence is not the outcome
        return "unknown (%s)" % type(error).__name__


def ltoir(name, debug):
    options = ProgramOptions(arch=ARCH, relocatable_device_code=True, link_time_optimization=True, debug=debug)
    return Program((FIXTURES / name).read_text(), "c++", options=options).compile("ltoir")


try:
    objects = [ltoir("mixed_kernel.cu", True), ltoir("dev_add.cu", False), ltoir("dev_mul.cu", False)]
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    options = LinkerOptions(arch=ARCH, link_time_optimization=True, debug=True)
    linked = Linker(*objects, options=options).link("cubin")
except Exception as error:
    report("link-error", failure(error), toolkit())
report("ok", "linked: %r" % (linked,), toolkit())
