"""Replay of numba-abi-name-is-numbas (cujit's issue 18) through numba-cuda: the installed
numba-cuda compiles __main__.add(int32, int32) for the Numba ABI (compile_ptx, device=True, as
the fixture was made: no device needed), and the replay compares the symbol it defines with the one
in scenarios/fixtures/numba/add_i32_numba_abi.ptx, the name cujit::abi gives that function.

The bug was cujit's: its name lacked numba-cuda's flags tag. "other-name": the installed
numba-cuda names the function otherwise, and cujit's names no longer reach its functions
(the reported case is back); "same-name": they agree (fixed).
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


try:
    import numpy as np

    # numba-cuda 0.30.4 calls numpy.row_stack, which numpy 2.5 removed (an incompatibility of
    # the installed pair, not the reported case).
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    from numba import cuda
except Exception as error:  # an import that fails is an outcome too, never a traceback
    report("import-error", failure(error))


def toolkit():
    try:
        return "CUDA runtime %d.%d" % tuple(cuda.runtime.get_version())
    except Exception as error:  # the version is for the record; its absence is not the outcome
        return "unknown (%s)" % type(error).__name__

FIXTURE = pathlib.Path(__file__).resolve().parent.parent.parent / "fixtures" / "numba" / "add_i32_numba_abi.ptx"
DEFINED = re.compile(r"\.visible\s+\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)\s*\(")


def add(x, y):  # __main__.add: this file runs as __main__, as the fixture's function did
    return x + y


try:
    from numba import types

    # The fixture's own call (scenarios/fixtures/numba: compile_ptx(add, int32(int32, int32),
    # device=True)): the flags tag in the name encodes the compile's options, so it must match.
    ptx, _ = cuda.compile_ptx(add, types.int32(types.int32, types.int32), device=True)
    if isinstance(ptx, bytes):
        ptx = ptx.decode()
except Exception as error:
    report("compile-error", failure(error), toolkit())
theirs = DEFINED.findall(ptx)
ours = DEFINED.findall(FIXTURE.read_text())
if not theirs or not ours:
    report("error", "no .visible .func in %s" % ("numba-cuda's PTX" if not theirs else FIXTURE.name), toolkit())
detail = "numba-cuda: %s; fixture: %s" % (theirs[0], ours[0])
report("same-name" if theirs[0] == ours[0] else "other-name", detail, toolkit())
