#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck) over the GPU suites of NRT, the
# reduce build and graphs, on the GPU machine, after ci/gpu.sh has built build/gpu.
# Sizes are capped (CUJIT_TEST_MAX_N) because the tools slow kernels by orders of
# magnitude. Summaries in $OUT (or cujit-out/gpu-sanitize).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-cujit-out/gpu-sanitize}
mkdir -p "$out"
export CUJIT_REQUIRE_GPU=1 CUJIT_TEST_MAX_N=${CUJIT_TEST_MAX_N:-1000003}
export CUJIT_CACHE_DIR=$(pwd)/build/gpu/sanitize-cache
status=0
for tool in ${CUJIT_SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
  for suite in nrt cache graph; do
    log="$out/$tool-$suite.log"
    # racecheck and synccheck instrument every shared-memory access: smaller sizes.
    cap=$CUJIT_TEST_MAX_N
    [ "$tool" = memcheck ] || cap=${CUJIT_TEST_SMALL_N:-257}
    # memcheck's API-error notices are left out: cujit counts a kernel's parameters by
    # calling cuFuncGetParamInfo until it answers CUDA_ERROR_INVALID_VALUE (CUDA 13 has no
    # count call), and tests call APIs that fail on purpose; cujit checks every result.
    api=()
    [ "$tool" = memcheck ] && api=(--report-api-errors no --leak-check full)
    CUJIT_TEST_MAX_N=$cap timeout "${CUJIT_SANITIZE_SECONDS:-90}" compute-sanitizer --tool "$tool" "${api[@]}" \
      --error-exitcode 99 --print-limit 20 \
      "build/gpu/conformance/conformance_$suite" --gtest_filter='*Gpu*' > "$log" 2>&1
    result=$?
    if [ "$result" -eq 124 ]; then echo "$tool $suite: stopped after ${CUJIT_SANITIZE_SECONDS:-90} s"; fi
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
    tests=$(grep -E "^\[  (PASSED|FAILED) " "$log" | tr '\n' ' ')
    echo "$tool $suite: exit $result; $summary; $tests"
    [ "$result" -eq 0 ] || status=1
  done
done
exit "$status"
