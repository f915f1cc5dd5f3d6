"""Replay of NVIDIA/numba-cuda-mlir#247 through numba-cuda: the report's pattern, a kernel
that closes over a NumPy array (a 1 KiB table), launched 2,000 times with 256 threads,
which numba-cuda-mlir copied to the device heap per thread, per launch (numba-cuda was the
report's control: it places the array in constant memory).

Reported: the heap ran out after some launches and a launch failed with
CUDA_ERROR_ILLEGAL_ADDRESS: outcome "illegal-address". Fixed: every launch computes the
table's sum: outcome "ok".
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

LAUNCHES = 2000
THREADS = 256

if not cuda.is_available():
    report("needs-device", "numba.cuda.is_available() is False")
table = np.arange(256, dtype=np.int32)  # 1 KiB: 8 MiB of heap is gone after 32 launches of 256 threads


@cuda.jit
def kernel(out):
    i = cuda.grid(1)
    if i < out.size:
        total = 0
        for k in range(table.size):
            total += table[k]
        out[i] = total


launch = 0
try:
    out = cuda.device_array(THREADS, dtype=np.int32)
    for launch in range(LAUNCHES):
        kernel[1, THREADS](out)
    cuda.synchronize()
    got = out.copy_to_host()
except Exception as error:
    text = failure(error)
    illegal = "ILLEGAL_ADDRESS" in text or "illegal address" in text.lower()
    report("illegal-address" if illegal else "error", "launch %d: %s" % (launch, text), toolkit())
expected = int(table.sum())
report("ok" if bool((got == expected).all()) else "wrong-result",
       "%d launches; out[0] = %d (expected %d)" % (LAUNCHES, int(got[0]), expected), toolkit())
