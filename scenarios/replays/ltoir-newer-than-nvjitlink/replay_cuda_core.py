"""Replay of ltoir-newer-than-nvjitlink (NVIDIA/cuda-python#712) through cuda.core: LTO-IR
whose version field says a newer toolkit wrote it (dev_add.cu compiled to LTO-IR, bytes 4
and 5 set to 0x7f 0x7f, as the cujit scenario patches its dev_add.ltoir) linked with
mixed_kernel's and dev_mul's LTO-IR.

Reported: the link failed with an error that says neither which input nor that a newer
nvJitLink is needed: outcome "error-without-reason".
Fixed: the error says the input needs a newer nvJitLink (or names the version): outcome
"error-names-version". A link that succeeds is "linked".
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
    future = bytearray(ltoir("dev_add.cu").code)
    future[4:6] = b"\x7f\x7f"  # the LTO-IR version field: a toolkit that does not exist yet
    objects = [ltoir("mixed_kernel.cu"), ObjectCode.from_ltoir(bytes(future)), ltoir("dev_mul.cu")]
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    linked = Linker(*objects, options=LinkerOptions(arch=ARCH, link_time_optimization=True)).link("cubin")
except Exception as error:
    text = failure(error)
    says_why = any(word in text.lower() for word in ("version", "newer", "too old"))
    report("error-names-version" if says_why else "error-without-reason", text, toolkit())
report("linked", "linked: %r" % (linked,), toolkit())
