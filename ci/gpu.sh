#!/usr/bin/env bash
# The GPU lane: build on the GPU machine with the gpu preset and run the tests labelled
# `gpu` with CUJIT_REQUIRE_GPU=1, so a missing device fails instead of skipping; then the
# CPU tests too, as a second distribution check; then the benchmark gate: the gated
# families against the committed baseline of this device (docs/results/baseline/<device>/),
# exit 1 on a regression (CUJIT_GATE=0 leaves it out; a device without a baseline says so
# and fails, since a lane that cannot gate must not look like one that passed). Logs and
# JUnit XML go to $OUT (or cujit-out/gpu).
set -uo pipefail
cd "$(dirname "$0")/.."

export PATH="${CUDAToolkit_ROOT:-/usr/local/cuda}/bin:$PATH"
out=${OUT:-cujit-out/gpu}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 8)

{
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv || true
  cmake --version | head -1
  nvcc --version | tail -1
} 2>&1 | tee "$out/machine.txt"

cmake --preset gpu > "$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 2; }
cmake --build --preset gpu -j"$jobs" > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 2; }

ctest --preset gpu -j4 --output-junit "$(pwd)/$out/gpu-junit.xml" > "$out/gpu-tests.log" 2>&1
gpu_status=$?
ctest --test-dir build/gpu -L cpu -j"$jobs" --output-on-failure > "$out/cpu-tests.log" 2>&1
cpu_status=$?

echo "== gpu label"; grep -E "tests passed|Total Test time|\(Failed\)|\(Skipped\)" "$out/gpu-tests.log"
echo "== cpu label"; grep -E "tests passed|Total Test time|\(Failed\)" "$out/cpu-tests.log"

gate_status=0
if [ "${CUJIT_GATE:-1}" != 0 ]; then
  device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  slug=$(echo "$device" | tr 'A-Z' 'a-z' | grep -oE 'h100|h200|a100|l40s|b200' | head -1)
  baseline=docs/results/baseline/${slug:-none}
  echo "== benchmark gate (${device:-no device}) against $baseline"
  if [ -z "$slug" ] || [ ! -d "$baseline" ]; then
    echo "no baseline for this device in docs/results/baseline/: the lane cannot gate"
    gate_status=1
  else
    BUILD=build/gpu bash ci/bench.sh --gate "$baseline" "$out/gate"
    gate_status=$?
  fi
fi
[ "$gpu_status" -eq 0 ] && [ "$cpu_status" -eq 0 ] && [ "$gate_status" -eq 0 ]
