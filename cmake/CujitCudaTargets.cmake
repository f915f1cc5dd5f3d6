# The CUDA libraries cujit links directly or loads: NVRTC and nvJitLink, and nothing else.
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

# libcujit loads NVRTC on first use (core/src/compile/nvrtc_api.cpp) instead of linking it,
# so a process that only hits the cache never maps it. Its default is the file the build
# found, by the name the linker would have recorded (libnvrtc.so.<major>, beside the
# library found above); the soname alone is the fallback when that file is gone at run time.
set(CUJIT_NVRTC_SONAME "libnvrtc.so.${CUDAToolkit_VERSION_MAJOR}")
get_filename_component(cujit_nvrtc_dir "${CUJIT_nvrtc_LIBRARY}" DIRECTORY)
if(EXISTS "${cujit_nvrtc_dir}/${CUJIT_NVRTC_SONAME}")
  set(CUJIT_NVRTC_DEFAULT_LIBRARY "${cujit_nvrtc_dir}/${CUJIT_NVRTC_SONAME}")
else()
  file(REAL_PATH "${CUJIT_nvrtc_LIBRARY}" CUJIT_NVRTC_DEFAULT_LIBRARY)
endif()

# nvJitLink likewise (core/src/link/nvjitlink_api.cpp).
set(CUJIT_NVJITLINK_SONAME "libnvJitLink.so.${CUDAToolkit_VERSION_MAJOR}")
get_filename_component(cujit_nvjitlink_dir "${CUJIT_nvJitLink_LIBRARY}" DIRECTORY)
if(EXISTS "${cujit_nvjitlink_dir}/${CUJIT_NVJITLINK_SONAME}")
  set(CUJIT_NVJITLINK_DEFAULT_LIBRARY "${cujit_nvjitlink_dir}/${CUJIT_NVJITLINK_SONAME}")
else()
  file(REAL_PATH "${CUJIT_nvJitLink_LIBRARY}" CUJIT_NVJITLINK_DEFAULT_LIBRARY)
endif()
