"""Replay of NVIDIA/cuda-python#920 through cuda.core, as reported: PTX that calls an
undefined extern function (scenarios/fixtures/mixed_kernel.cu compiled to relocatable PTX:
dev_add and dev_mul are not defined) compiled to a cubin with Program(code_type="ptx").

Reported: it compiled, to a cubin with an empty kernel: outcome "compiled".
Fixed: Program.compile raises, as ptxas does ("Unresolved extern function"): "compile-error".
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
    options = ProgramOptions(arch="sm_90", relocatable_device_code=True)
    ptx = Program((FIXTURES / "mixed_kernel.cu").read_text(), "c++", options=options).compile("ptx").code
except Exception as error:
    report("setup-error", "compiling mixed_kernel.cu to PTX: %s: %s" % (type(error).__name__, error), toolkit())
if isinstance(ptx, bytes):
    ptx = ptx.decode()
try:
    cubin = Program(ptx, code_type="ptx", options=ProgramOptions(arch="sm_90")).compile("cubin")
except Exception as error:
    report("compile-error", "%s: %s" % (type(error).__name__, error), toolkit())
report("compiled", "Program.compile('cubin') returned %r" % (cubin,), toolkit())
