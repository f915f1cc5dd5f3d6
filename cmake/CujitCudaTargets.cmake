# CUDA::nvJitLink arrived in CMake 3.26's FindCUDAToolkit; on 3.25 (Debian 12) it is made
# here from the same toolkit, so the rest of the build uses one name everywhere.
if(NOT TARGET CUDA::nvJitLink)
  find_library(CUJIT_NVJITLINK_LIBRARY nvJitLink
    HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64 REQUIRED)
  add_library(CUDA::nvJitLink UNKNOWN IMPORTED)
  set_target_properties(CUDA::nvJitLink PROPERTIES
    IMPORTED_LOCATION ${CUJIT_NVJITLINK_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES "${CUDAToolkit_INCLUDE_DIRS}")
endif()
