# The CUDA libraries cujit links directly: NVRTC and nvJitLink, and nothing else.
# FindCUDAToolkit's CUDA::nvrtc carries CUDA::cuda_driver (the libcuda stub) along, which
# would make binaries need libcuda.so.1 to start; cujit loads the driver at run time
# instead, so these targets hold the library files alone. CUDA::nvJitLink arrived in
# CMake 3.26; on 3.25 (Debian 12) the library is found here.

function(cujit_cuda_library target library)
  find_library(CUJIT_${library}_LIBRARY ${library}
    HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64 REQUIRED)
  add_library(${target} UNKNOWN IMPORTED)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION ${CUJIT_${library}_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES "${CUDAToolkit_INCLUDE_DIRS}")
endfunction()

cujit_cuda_library(cujit::nvrtc nvrtc)
cujit_cuda_library(cujit::nvjitlink nvJitLink)
