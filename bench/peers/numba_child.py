"""One numba-cuda first launch in this new process; prints its seconds (definition through
the first launch's completion; the import and the context are not counted).
Usage: numba_child.py cold EXTERNAL.cu | numba_child.py cached EXTERNAL.cu CACHE_DIR
(cached: a kernel without the external file, which numba-cuda cannot cache)."""
import os
import sys
import time

mode, external = sys.argv[1], sys.argv[2]
if mode == "cached":
    os.environ["NUMBA_CACHE_DIR"] = sys.argv[3]
import numpy

numpy.row_stack = numpy.vstack
from numba import cuda

cuda.current_context()  # the context exists before timing, as for cujit's figures
start = time.perf_counter()
if mode == "cold":
    dev_add = cuda.declare_device("dev_add", "int32(int32, int32)")

    @cuda.jit(link=[external])
    def kernel(out, a, b):
        out[0] = dev_add(a, b)
else:
    @cuda.jit(cache=True)
    def kernel(out, a, b):
        out[0] = a + b


out = cuda.device_array(1, dtype=numpy.int32)
kernel[1, 1](out, 2, 3)
cuda.synchronize()
elapsed = time.perf_counter() - start
assert out.copy_to_host()[0] == 5
print(elapsed)
