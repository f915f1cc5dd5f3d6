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

# libcujit loads NVRTC and nvJitLink on first use (core/src/compile/nvrtc_api.cpp,
# core/src/link/nvjitlink_api.cpp) instead of linking them, so a process that only hits the
# cache never maps them. Each one's default is the file the build found, by the name the
# linker would have recorded (lib<name>.so.<major>, beside the library found above); the
# soname alone is the fallback when that file is gone at run time. Sets
# CUJIT_<PREFIX>_SONAME and CUJIT_<PREFIX>_DEFAULT_LIBRARY.
function(cujit_loaded_library prefix library)
  set(soname "lib${library}.so.${CUDAToolkit_VERSION_MAJOR}")
  get_filename_component(dir "${CUJIT_${library}_LIBRARY}" DIRECTORY)
  if(EXISTS "${dir}/${soname}")
    set(default "${dir}/${soname}")
  else()
    file(REAL_PATH "${CUJIT_${library}_LIBRARY}" default)
  endif()
  set(CUJIT_${prefix}_SONAME "${soname}" PARENT_SCOPE)
  set(CUJIT_${prefix}_DEFAULT_LIBRARY "${default}" PARENT_SCOPE)
endfunction()

cujit_loaded_library(NVRTC nvrtc)
cujit_loaded_library(NVJITLINK nvJitLink)
