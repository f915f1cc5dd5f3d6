"""Replay of reduce-with-numbas-c-abi-operator through cuda.core: a block reduction in CUDA
C++ whose operator is an extern "C" min_i32, compiled to LTO-IR for sm_90a, linked with
link-time optimization against numba-cuda's C-ABI LTO-IR for min_i32
(scenarios/fixtures/numba/min_i32_c_abi.ltoir), as cujit's build_reduce links it.

A requirement, not a bug report: "link-error" is the case failing (numba's C-ABI LTO-IR not
usable as an operator), "ok" the case handled.
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

ARCH = "sm_90a"
REDUCE = """
extern "C" __device__ int min_i32(int a, int b);
extern "C" __global__ void reduce_min(const int* in, int* out, int n) {
  __shared__ int partial[256];
  int acc = 2147483647;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc = min_i32(acc, in[i]);
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] = min_i32(partial[threadIdx.x], partial[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = partial[0];
}
"""

try:
    options = ProgramOptions(arch=ARCH, relocatable_device_code=True, link_time_optimization=True)
    kernel = Program(REDUCE, "c++", options=options).compile("ltoir")
    operator = ObjectCode.from_ltoir((FIXTURES / "numba" / "min_i32_c_abi.ltoir").read_bytes())
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    linked = Linker(kernel, operator, options=LinkerOptions(arch=ARCH, link_time_optimization=True)).link("cubin")
except Exception as error:
    report("link-error", failure(error), toolkit())
report("ok", "linked: %r" % (linked,), toolkit())
