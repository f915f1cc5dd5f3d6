#!/usr/bin/env bash
# The main job: build, then `cujit run` (conformance, benchmarks, report) into one output
# directory, printed at the end. Benchmarks are full with a GPU, quick without.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="${CUDAToolkit_ROOT:-/usr/local/cuda}/bin:$PATH"
jobs=$(nproc 2>/dev/null || echo 2)
preset=${CUJIT_PRESET:-default}
# The mutation campaign links 200 mutants per fixture here (spread over every kind of damage;
# about a minute on an idle 2-core machine, several on a loaded one) so that the main job
# stays near 10 minutes; ci/test.sh links 400, the GPU lane's CPU tests (ci/gpu.sh) all of
# them. CUJIT_MUTATION_BUDGET=all overrides.
export CUJIT_MUTATION_BUDGET="${CUJIT_MUTATION_BUDGET:-200}"

cmake --preset "$preset" > /dev/null
cmake --build --preset "$preset" -j"$jobs"
exec "build/$preset/cli/cujit" run "$@"
