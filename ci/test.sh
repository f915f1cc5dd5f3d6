#!/usr/bin/env bash
# Configure, build and run every conformance test on this machine. Without a GPU the tests
# labelled `gpu` skip with their reason and are counted as skipped, never as passed.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="${CUDAToolkit_ROOT:-/usr/local/cuda}/bin:$PATH"
jobs=$(nproc 2>/dev/null || echo 2)

# The mutation campaign links 400 mutants per fixture here (about 5,200, each in a child,
# spread evenly over every kind of damage): a third of the full campaign's time on CI's 2
# cores. The GPU lane's CPU tests (ci/gpu.sh, 16 cores) run all of them;
# CUJIT_MUTATION_BUDGET=all does here too.
export CUJIT_MUTATION_BUDGET="${CUJIT_MUTATION_BUDGET:-400}"

cmake --preset default
cmake --build --preset default -j"$jobs"

log=build/default/ctest.log
set +e
ctest --preset default -j"$jobs" --output-junit ctest-junit.xml 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

# The benchmarks' quick mode (CPU families): they must run and produce valid JSON.
if ! bash ci/bench.sh --quick build/default/bench-quick > build/default/bench-quick.log 2>&1; then
  echo "cujit: quick benchmarks failed (build/default/bench-quick.log)"
  tail -20 build/default/bench-quick.log
  status=1
fi

# The reports' tests (Debian's python3 has python3-matplotlib; see ci/setup.sh).
python=python3
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import matplotlib' > /dev/null 2>&1; then python=$candidate; break; fi
done
if ! CUJIT_AB_GATE_REQUIRED=1 "$python" -m unittest discover -s reports/tests 2>&1 | tee build/default/reports-tests.log; then
  status=1
fi

skipped=$(grep -c '(Skipped)' "$log" || true)
gpu_total=$(ctest --test-dir build/default -N -L gpu | sed -n 's/^Total Tests: //p')
echo "cujit: tests skipped on this machine: ${skipped} (${gpu_total} tests carry the label gpu; each skip names its reason in ${log})"
exit "$status"
