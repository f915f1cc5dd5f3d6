"""Replay of numba/numba#7159 through numba-cuda: a debug=True kernel calls a device
function compiled without debug, which calls a debug=True one (the report's program).

Reported: linking failed (CUDA_ERROR_UNKNOWN from cuLinkComplete): outcome "link-error".
Fixed: the kernel links and computes f1(x, y) = x - (y + 1): outcome "ok".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import json
import sys


def report(outcome, detail="", toolkit=""):
    print("CUJIT_REPLAY " + json.dumps({"outcome": outcome, "detail": str(detail)[:1500], "toolkit": toolkit}))
    sys.exit(0)


import numpy as np  # noqa: E402

# numba-cuda 0.30.4 calls numpy.row_stack, which numpy 2.5 removed (an incompatibility of the
# installed pair, not the reported case): without this the replay ends in that AttributeError.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
from numba import cuda  # noqa: E402


def toolkit():
    try:
        return "CUDA runtime %d.%d" % tuple(cuda.runtime.get_version())
    except Exception as error:  # the version is for the record; its absence is not the outcome
        return "unknown (%s)" % type(error).__name__


if not cuda.is_available():
    report("needs-device", "numba.cuda.is_available() is False")


@cuda.jit(device=True, debug=True, opt=False)
def f2(x):
    return x + 1


@cuda.jit(device=True)
def f1(x, y):
    return x - f2(y)


@cuda.jit(debug=True, opt=False)
def kernel(out, x, y):
    out[0] = f1(x, y)


try:
    out = cuda.to_device(np.zeros(1, dtype=np.int32))
    kernel[1, 1](out, 7, 2)  # compiles and links here
    cuda.synchronize()
    got = int(out.copy_to_host()[0])
except Exception as error:
    text = "%s: %s" % (type(error).__name__, error)
    link = "link" in text.lower() or "CUDA_ERROR_UNKNOWN" in text
    report("link-error" if link else "error", text, toolkit())
report("ok" if got == 4 else "wrong-result", "f1(7, 2) = %d (expected 4)" % got, toolkit())
