# Builds fixtures with nvcc: one rule per output file, collected in CUJIT_FIXTURE_OUTPUTS.

set(CUJIT_FIXTURE_OUTPUTS "" CACHE INTERNAL "")

function(cujit_fixture output source)
  set(out ${CUJIT_FIXTURE_DIR}/${output})
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CUJIT_FIXTURE_DIR}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} ${ARGN} ${source} -o ${out}
    DEPENDS ${source}
    COMMENT "fixture ${output}"
    VERBATIM)
  set(CUJIT_FIXTURE_OUTPUTS ${CUJIT_FIXTURE_OUTPUTS} ${out} CACHE INTERNAL "")
endfunction()

# NAME.a: the fixture NAME.o in a static library (nvcc -lib), as device libraries ship.
function(cujit_fixture_archive name)
  set(object ${CUJIT_FIXTURE_DIR}/${name}.o)
  set(archive ${CUJIT_FIXTURE_DIR}/${name}.a)
  add_custom_command(
    OUTPUT ${archive}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -lib ${object} -o ${archive}
    DEPENDS ${object}
    COMMENT "fixture ${name}.a"
    VERBATIM)
  set(CUJIT_FIXTURE_OUTPUTS ${CUJIT_FIXTURE_OUTPUTS} ${archive} CACHE INTERNAL "")
endfunction()

# Every linkable format of one source, for CUJIT_FIXTURE_ARCH (SASS plus PTX for JIT):
# NAME.ptx NAME.ltoir NAME.cubin NAME_sass.fatbin NAME_ptx.fatbin NAME_ltoir.fatbin
# NAME.o (relocatable device code in a host object) NAME.a (archive of that object).
function(cujit_fixture_all_formats name source)
  set(cc ${CUJIT_FIXTURE_ARCH})
  cujit_fixture(${name}.ptx ${source} -arch=sm_${cc} -rdc=true -ptx)
  cujit_fixture(${name}.ltoir ${source} -arch=lto_${cc} -dlto -rdc=true -ltoir)
  cujit_fixture(${name}.cubin ${source} -arch=sm_${cc} -rdc=true -cubin)
  cujit_fixture(${name}_sass.fatbin ${source}
    -gencode arch=compute_${cc},code=sm_${cc} -rdc=true -fatbin)
  cujit_fixture(${name}_ptx.fatbin ${source}
    -gencode arch=compute_${cc},code=compute_${cc} -rdc=true -fatbin)
  cujit_fixture(${name}_ltoir.fatbin ${source}
    -gencode arch=compute_${cc},code=lto_${cc} -rdc=true -fatbin)
  cujit_fixture(${name}.o ${source} "-gencode=arch=compute_${cc},code=[sm_${cc},compute_${cc}]" -dc)
  cujit_fixture_archive(${name})
endfunction()

# An NRT user (external code built against core/device/cujit/nrt.cuh) in every binary
# format, for CUJIT_FIXTURE_ARCH: NAME.cubin NAME_sass.fatbin NAME_ptx.fatbin
# NAME_ltoir.fatbin NAME_multi.fatbin (SASS for sm_80 and the fixture arch) NAME.o NAME.a.
function(cujit_nrt_user_fixtures name source)
  set(cc ${CUJIT_FIXTURE_ARCH})
  set(inc -I${PROJECT_SOURCE_DIR}/core/device)
  cujit_fixture(${name}.cubin ${source} ${inc} -arch=sm_${cc} -rdc=true -cubin)
  cujit_fixture(${name}_sass.fatbin ${source} ${inc}
    -gencode arch=compute_${cc},code=sm_${cc} -rdc=true -fatbin)
  cujit_fixture(${name}_ptx.fatbin ${source} ${inc}
    -gencode arch=compute_${cc},code=compute_${cc} -rdc=true -fatbin)
  cujit_fixture(${name}_ltoir.fatbin ${source} ${inc}
    -gencode arch=compute_${cc},code=lto_${cc} -rdc=true -fatbin)
  cujit_fixture(${name}_multi.fatbin ${source} ${inc} -gencode arch=compute_80,code=sm_80
    -gencode arch=compute_${cc},code=sm_${cc} -rdc=true -fatbin)
  cujit_fixture(${name}.o ${source} ${inc} "-gencode=arch=compute_${cc},code=[sm_${cc},compute_${cc}]" -dc)
  cujit_fixture_archive(${name})
endfunction()
