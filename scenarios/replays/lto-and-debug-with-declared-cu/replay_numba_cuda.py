"""Replay of NVIDIA/numba-cuda#194 through numba-cuda: a kernel jitted with lto=True and
debug=True calls a function declared with declare_device and linked from a .cu file (the
report's program, with add.cu beside this file, its arguments by value as numba's ABI
passes them; the report's add.cu took pointers).

Reported: a linker error: outcome "link-error". Fixed: it links and adds: outcome "ok".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import json
import pathlib
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
    except Exception as error:
        return "unknown (%s)" % type(error).__name__


if not cuda.is_available():
    report("needs-device", "numba.cuda.is_available() is False")

ADD_CU = str(pathlib.Path(__file__).resolve().parent / "add.cu")

try:
    add = cuda.declare_device("add", "int32(int32, int32)", link=[ADD_CU])

    @cuda.jit(lto=True, debug=True, opt=False)
    def kernel(a, b, c):
        i = cuda.grid(1)
        c[i] = add(a[i], b[i])

    a = cuda.to_device(np.array([1, 2, 3, 4, 5], dtype=np.int32))
    b = cuda.to_device(np.array([6, 7, 8, 9, 10], dtype=np.int32))
    c = cuda.device_array_like(a)
    kernel[1, 5](a, b, c)  # compiles and links here
    cuda.synchronize()
    got = c.copy_to_host().tolist()
except Exception as error:
    text = "%s: %s" % (type(error).__name__, error)
    report("link-error" if "link" in text.lower() else "error", text, toolkit())
report("ok" if got == [7, 9, 11, 13, 15] else "wrong-result", "c = %s" % got, toolkit())
