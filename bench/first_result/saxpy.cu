// The kernel of the "exec to first result" family (docs/benchmarks.md): every program that
// compiles CUDA C++ reads this file, so they all compile the same text. numba-cuda compiles
// the same arithmetic written in Python (numba_program.py).
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = a * x[i] + y[i];
}
