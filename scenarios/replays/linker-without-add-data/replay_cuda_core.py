"""Replay of NVIDIA/numba-cuda#101 through cuda.core: PTX held in memory
(scenarios/fixtures/scale_kernel.cu compiled to PTX, given as bytes with ObjectCode.from_ptx)
linked to a cubin with Linker, as the cujit scenario links PTX added from memory.

Reported (numba-cuda's linker backend): in-memory code could not be linked: outcome
"link-error". Fixed: it links: outcome "ok".
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

try:
    options = ProgramOptions(arch=ARCH, relocatable_device_code=True)
    ptx = Program((FIXTURES / "scale_kernel.cu").read_text(), "c++", options=options).compile("ptx").code
    if isinstance(ptx, str):
        ptx = ptx.encode()
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    linked = Linker(ObjectCode.from_ptx(ptx), options=LinkerOptions(arch=ARCH)).link("cubin")
except Exception as error:
    report("link-error", failure(error), toolkit())
report("ok", "linked from memory: %r" % (linked,), toolkit())
