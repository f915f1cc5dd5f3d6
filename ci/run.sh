#!/usr/bin/env bash
# The main job: build, then `cujit run` (conformance, benchmarks, report) into one output
# directory, printed at the end. Benchmarks are full with a GPU, quick without.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="${CUDAToolkit_ROOT:-/usr/local/cuda}/bin:$PATH"
jobs=$(nproc 2>/dev/null || echo 2)
preset=${CUJIT_PRESET:-default}

cmake --preset "$preset" > /dev/null
cmake --build --preset "$preset" -j"$jobs"
exec "build/$preset/cli/cujit" run "$@"
