# The API reference and the docs' own tests.
# - `docs` target: Doxygen HTML of the public headers into <build>/docs/api/html when
#   Doxygen is installed (ci/setup.sh installs it); otherwise it says so and builds nothing.
find_package(Doxygen QUIET)
if(DOXYGEN_FOUND)
  set(CUJIT_DOXYGEN_OUTPUT ${PROJECT_BINARY_DIR}/docs/api)
  configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${PROJECT_BINARY_DIR}/docs/Doxyfile @ONLY)
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CUJIT_DOXYGEN_OUTPUT}
    COMMAND Doxygen::doxygen ${PROJECT_BINARY_DIR}/docs/Doxyfile
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    COMMENT "cujit API reference: ${CUJIT_DOXYGEN_OUTPUT}/html/index.html" VERBATIM)
else()
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} -E echo "docs: Doxygen is not installed (ci/setup.sh installs it): no API reference"
    VERBATIM)
endif()

# Tests (label cpu), each with a self-test showing it can fail:
# - Docs.ApiDeclarationsDocumented: every public declaration in core/include/cujit has a
#   reference comment (ci/check_api_docs.py: Doxygen with WARN_IF_UNDOCUMENTED and
#   WARN_AS_ERROR); skipped, with the reason, without Doxygen.
# - Docs.NamedThingsExist: every command, flag, CUJIT_* variable, preset and field that
#   README.md and docs/*.md name exists (ci/check_docs.py, against the built `cujit`).
# - Docs.CommandBlocksRun / Docs.GpuCommandBlocksRun (label gpu): the docs run
#   (ci/run_docs.py): shell blocks tagged cpu / gpu run, every block's commands checked, every
#   environment variable core/ and cli/ read listed, every JSON document made and compared.
# - Docs.FiguresMatchResults: the figures quoted in the docs are what ci/doc_figures.py
#   makes from docs/results.
# They check the sources, not the build's code, so the sanitizer lanes leave them to the
# default build.
if(CUJIT_BUILD_TESTS AND NOT CUJIT_SANITIZE)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  set(docs_script ${PROJECT_SOURCE_DIR}/ci)
  add_test(NAME Docs.ApiDeclarationsDocumented
    COMMAND Python3::Interpreter ${docs_script}/check_api_docs.py --root ${PROJECT_SOURCE_DIR})
  add_test(NAME Docs.ApiCheckCatchesUndocumented
    COMMAND Python3::Interpreter ${docs_script}/check_api_docs.py --self-test)
  set_tests_properties(Docs.ApiDeclarationsDocumented Docs.ApiCheckCatchesUndocumented
    PROPERTIES LABELS cpu SKIP_RETURN_CODE 77)
  add_test(NAME Docs.FiguresMatchResults
    COMMAND Python3::Interpreter ${docs_script}/doc_figures.py --check --root ${PROJECT_SOURCE_DIR})
  add_test(NAME Docs.FiguresCheckCatchesStaleFigures
    COMMAND Python3::Interpreter ${docs_script}/doc_figures.py --self-test)
  set_tests_properties(Docs.FiguresMatchResults Docs.FiguresCheckCatchesStaleFigures
    PROPERTIES LABELS cpu)
  if(TARGET cujit_cli)
    add_test(NAME Docs.NamedThingsExist
      COMMAND Python3::Interpreter ${docs_script}/check_docs.py --root ${PROJECT_SOURCE_DIR}
              --cujit $<TARGET_FILE:cujit_cli>)
    add_test(NAME Docs.CheckCatchesPlantedMistakes
      COMMAND Python3::Interpreter ${docs_script}/check_docs.py --root ${PROJECT_SOURCE_DIR}
              --cujit $<TARGET_FILE:cujit_cli> --self-test)
    set_tests_properties(Docs.NamedThingsExist Docs.CheckCatchesPlantedMistakes
      PROPERTIES LABELS cpu)
    # ci/run_docs.py: the docs run (issue 33). The cpu blocks and the JSON documents, the
    # commands of every block, the variables the code reads; its self-test plants one
    # mistake of each kind; the gpu blocks run in the GPU lane (skipped, with the reason,
    # without a device).
    add_test(NAME Docs.CommandBlocksRun
      COMMAND Python3::Interpreter ${docs_script}/run_docs.py --root ${PROJECT_SOURCE_DIR}
              --cujit $<TARGET_FILE:cujit_cli>)
    add_test(NAME Docs.RunCheckCatchesPlantedMistakes
      COMMAND Python3::Interpreter ${docs_script}/run_docs.py --root ${PROJECT_SOURCE_DIR}
              --cujit $<TARGET_FILE:cujit_cli> --self-test)
    set_tests_properties(Docs.CommandBlocksRun Docs.RunCheckCatchesPlantedMistakes
      PROPERTIES LABELS cpu TIMEOUT 300)
    add_test(NAME Docs.GpuCommandBlocksRun
      COMMAND Python3::Interpreter ${docs_script}/run_docs.py --root ${PROJECT_SOURCE_DIR}
              --cujit $<TARGET_FILE:cujit_cli> --gpu)
    set_tests_properties(Docs.GpuCommandBlocksRun PROPERTIES LABELS gpu SKIP_RETURN_CODE 77
      TIMEOUT 300 RESOURCE_GROUPS "gpus:1")
  endif()
endif()
