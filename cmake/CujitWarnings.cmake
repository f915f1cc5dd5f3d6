# Warnings live on an INTERFACE target that project targets link privately, so
# consumers of libcujit and third-party code never inherit them.
add_library(cujit_warnings INTERFACE)
target_compile_options(cujit_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual
  $<$<BOOL:${CUJIT_WARNINGS_AS_ERRORS}>:-Werror>)

add_library(cujit_sanitizers INTERFACE)
if(CUJIT_SANITIZE)
  set(cujit_fuzz_instrumentation "")
  if(CUJIT_FUZZ)
    # libFuzzer's coverage instrumentation in the library; the targets link the driver.
    set(cujit_fuzz_instrumentation -fsanitize=fuzzer-no-link)
  endif()
  target_compile_options(cujit_sanitizers INTERFACE ${cujit_fuzz_instrumentation}
    -fsanitize=${CUJIT_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(cujit_sanitizers INTERFACE -fsanitize=${CUJIT_SANITIZE})
endif()
