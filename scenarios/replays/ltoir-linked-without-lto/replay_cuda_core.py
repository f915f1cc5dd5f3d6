"""Replay of NVIDIA/numba-cuda PR #698 through cuda.core: LTO-IR (mixed_kernel.cu, dev_add.cu
and dev_mul.cu from scenarios/fixtures compiled with link_time_optimization) given to a
Linker whose options leave link_time_optimization off, as the cujit scenario links its LTO-IR
fixtures with lto false.

cuda.core does not turn LTO on by itself (the caller's options are the link's), so the case
is handled when the refusal says what to do. "error-without-fix": the link fails without
saying that LTO must be enabled (the reported confusion); "error-names-lto": the error says
LTO-IR needs LTO (-lto); "linked": it links anyway.
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


try:  # cuda.core >= 0.5 exports its API at the top level; older releases under .experimental
    from cuda.core import Device, Linker, LinkerOptions, ObjectCode, Program, ProgramOptions
except ImportError:
    try:
        from cuda.core.experimental import Device, Linker, LinkerOptions, ObjectCode, Program, ProgramOptions
    except Exception as error:  # an import that fails is an outcome too, never a traceback
        report("import-error", failure(error))

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
    objects = [ltoir("mixed_kernel.cu"), ltoir("dev_add.cu"), ltoir("dev_mul.cu")]
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    linked = Linker(*objects, options=LinkerOptions(arch=ARCH, link_time_optimization=False)).link("cubin")
except Exception as error:
    text = failure(error)
    names_lto = "-lto" in text or "LTO_NOT_ENABLED" in text or "without LTO" in text
    report("error-names-lto" if names_lto else "error-without-fix", text, toolkit())
report("linked", "linked: %r" % (linked,), toolkit())
