# Install rules and the package: `cmake --install` puts libcujit, its public headers, the
# NRT device header (nrt.cuh, nrt_functions.def), the `cujit` command, a CMake package
# (cujitConfig.cmake, cujitConfigVersion.cmake, cujitTargets.cmake) and a pkg-config file
# under the prefix, so that an external project needs only
#   find_package(cujit 0.2 REQUIRED)   target_link_libraries(app PRIVATE cujit::cujit)
# or `pkg-config --cflags --libs cujit`. ci/consumer/ is such a project, built by the CTest
# test Package.ConsumerBuildsAgainstInstall.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(CUJIT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/cujit CACHE STRING
    "Where the cujit CMake package (cujitConfig.cmake) is installed, relative to the prefix")

# The public headers are C++20; consumers get that from the target.
target_compile_features(cujit PUBLIC cxx_std_20)

install(TARGETS cujit EXPORT cujitTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/cujit
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
# Device code that includes NRT's declarations (as cuDF's shims do) compiles against
# <prefix>/include with `#include "cujit/nrt.cuh"`.
install(FILES ${PROJECT_SOURCE_DIR}/core/device/cujit/nrt.cuh
              ${PROJECT_SOURCE_DIR}/core/device/cujit/nrt_functions.def
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cujit)
if(TARGET cujit_cli)
  install(TARGETS cujit_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # The scripts `cujit report` / `cujit compare` run: an installed cujit finds them beside
  # itself (<prefix>/share/cujit/reports), never in the source tree it was built from.
  install(FILES ${PROJECT_SOURCE_DIR}/reports/report.py ${PROJECT_SOURCE_DIR}/reports/compare.py
                ${PROJECT_SOURCE_DIR}/reports/history.py
    DESTINATION ${CMAKE_INSTALL_DATADIR}/cujit/reports)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/reports/cujit_reports DESTINATION ${CMAKE_INSTALL_DATADIR}/cujit/reports
    FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
endif()
# Side-by-side compiles run in this worker (core/src/compile/compile_worker.hpp); an
# installed program finds it at <its directory>/../libexec/cujit, else here.
install(TARGETS cujit_compile_worker RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/cujit)

install(EXPORT cujitTargets NAMESPACE cujit:: DESTINATION ${CUJIT_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/cujitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/cujitConfig.cmake
  INSTALL_DESTINATION ${CUJIT_INSTALL_CMAKEDIR})
# 0.x: a minor release may change the API, so 0.2 accepts 0.2.* only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/cujitConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/cujitConfig.cmake
              ${PROJECT_BINARY_DIR}/package/cujitConfigVersion.cmake
  DESTINATION ${CUJIT_INSTALL_CMAKEDIR})

# pkg-config: libcujit is static, so Libs names what it links (OpenSSL through libcrypto.pc).
set(CUJIT_PC_EXTRA_LIBS "")
file(RELATIVE_PATH CUJIT_PC_PREFIX_FROM_PCFILEDIR
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_CURRENT_LIST_DIR}/cujit.pc.in ${PROJECT_BINARY_DIR}/package/cujit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/cujit.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
