// The device function of NVIDIA/numba-cuda#194, in numba's ABI for declare_device: the
// result through the first pointer, a status as the return value.
extern "C" __device__ int add(int* ret, int left, int right) {
  *ret = left + right;
  return 0;
}
