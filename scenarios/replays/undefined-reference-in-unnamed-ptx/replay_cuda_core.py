"""Replay of undefined-reference-in-unnamed-ptx through cuda.core: PTX that calls undefined
functions (scenarios/fixtures/mixed_kernel.cu compiled to relocatable PTX: dev_add and
dev_mul are not defined), given from memory with no name (ObjectCode.from_ptx), linked to a
cubin with Linker.

Found here: the error names the symbol but nothing that identifies the input: outcome
"error-unnamed-input". Fixed: the error identifies the input (its kernel, or a description
such as "ptx input of N bytes"): outcome "error-names-input". A link that succeeds is
"linked".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import re
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

try:
    options = ProgramOptions(arch=ARCH, relocatable_device_code=True)
    ptx = Program((FIXTURES / "mixed_kernel.cu").read_text(), "c++", options=options).compile("ptx").code
    if isinstance(ptx, str):
        ptx = ptx.encode()
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    linked = Linker(ObjectCode.from_ptx(ptx), options=LinkerOptions(arch=ARCH)).link("cubin")
except Exception as error:
    text = failure(error)
    identifies = "mixed_kernel" in text or re.search(r"ptx\W{0,3}(input|of \d+ bytes)", text, re.I)
    report("error-names-input" if identifies else "error-unnamed-input", text, toolkit())
report("linked", "linked: %r" % (linked,), toolkit())
