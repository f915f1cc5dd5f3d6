# CuPy in the "exec to first result" family: cupy.RawKernel from saxpy.cu's text, with
# CuPy's kernel cache warm (CUPY_CACHE_DIR, filled by run.py's setup run).
# Usage: cupy_program.py SOURCE.cu   (prints one JSON line: child_common.py)
import time

T0 = time.perf_counter()  # first statement: the imports below are part of what is timed

import os  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import child_common as common  # noqa: E402


def context():
    import cupy

    cupy.cuda.runtime.free(0)  # cudaFree(0): the runtime makes the primary context current
    return cupy, cupy.__version__


def build_launch(cupy, source_text):
    import numpy

    kernel = cupy.RawKernel(source_text, common.KERNEL)
    x, y = common.inputs(numpy)
    device_x = cupy.asarray(x)
    device_y = cupy.asarray(y)
    kernel((common.GRID,), (common.BLOCK,), (numpy.float32(common.A), device_x, device_y, numpy.int32(common.N)))
    return numpy, device_y.get()  # synchronises with the kernel


if __name__ == "__main__":
    sys.exit(common.main("cupy", T0, context, build_launch))
