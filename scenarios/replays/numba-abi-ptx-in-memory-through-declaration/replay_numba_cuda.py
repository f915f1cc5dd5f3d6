"""Replay of NVIDIA/numba-cuda#101 through numba-cuda: numba-cuda's own Numba-ABI PTX for
__main__.add(int32, int32) (scenarios/fixtures/numba/add_i32_numba_abi.ptx, .target sm_90a),
held in memory as cuda.PTXSource, reached through cuda.declare_device under the symbol numba
gives it, and called from a kernel: out[t] = add(5 * t, -2).

Reported: in-memory PTX linked with pynvjitlink but not with the ctypes (driver) linker:
outcome "link-error". Fixed: it links and computes [-2, 3, 8, 13]: outcome "ok".
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

if not cuda.is_available():
    report("needs-device", "numba.cuda.is_available() is False")
if tuple(cuda.get_current_device().compute_capability) != (9, 0):
    report("needs-device", "the fixture's PTX is for sm_90a: the case needs an sm_90 device", toolkit())
try:
    ptx = FIXTURE.read_bytes()
    symbol = DEFINED.findall(ptx.decode())[0]
    add = cuda.declare_device(symbol, "int32(int32, int32)", link=[cuda.PTXSource(ptx)])

    @cuda.jit
    def kernel(out, a, b):
        t = cuda.threadIdx.x
        out[t] = add(a * t, b)

    out = cuda.to_device(np.zeros(4, dtype=np.int32))
    kernel[1, 4](out, 5, -2)  # compiles and links here
    cuda.synchronize()
    got = out.copy_to_host().tolist()
except Exception as error:
    text = failure(error)
    report("link-error" if "link" in text.lower() else "error", text, toolkit())
report("ok" if got == [-2, 3, 8, 13] else "wrong-result", "out = %s" % got, toolkit())
