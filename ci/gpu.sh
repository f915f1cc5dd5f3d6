#!/usr/bin/env bash
# The GPU lane: build on the GPU machine with the gpu preset and run the tests labelled
# `gpu` with CUJIT_REQUIRE_GPU=1, so a missing device fails instead of skipping, on every
# GPU of the host at once: `cujit resource-spec` gives CTest one `gpus` resource per device
# with CUJIT_GPU_SLOTS slots each (default 4), every GPU test takes one slot, and ctest runs
# GPUS x SLOTS tests at a time (one GPU: 4, as the lane's former -j4; four GPUs: 16, 4 on
# each). Each test process maps its slot to CUDA_VISIBLE_DEVICES and logs its device; the
# summary counts the test processes per device. Without a device the spec would hold no
# GPUs and ctest would not run the gpu tests at all, so they then run without it and each
# fails saying why. Then the CPU tests too, as a second distribution check; then the
# benchmark gate: the gated families against the committed baseline of this device
# (docs/results/baseline/<device>/), exit 1 on a regression (CUJIT_GATE=0 leaves it out; a
# device without a baseline says so and fails, since a lane that cannot gate must not look
# like one that passed). Logs and JUnit XML go to $OUT (or cujit-out/gpu).
set -uo pipefail
cd "$(dirname "$0")/.."

export PATH="${CUDAToolkit_ROOT:-/usr/local/cuda}/bin:$PATH"
out=${OUT:-cujit-out/gpu}
mkdir -p "$out"
out=$(cd "$out" && pwd)  # absolute: ctest and cujit take it from other directories
jobs=$(nproc 2>/dev/null || echo 8)
slots=${CUJIT_GPU_SLOTS:-4}

{
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv || true
  cmake --version | head -1
  nvcc --version | tail -1
} 2>&1 | tee "$out/machine.txt"

cmake --preset gpu > "$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 2; }
cmake --build --preset gpu -j"$jobs" > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 2; }
build/gpu/cli/cujit info 2>&1 | tee -a "$out/machine.txt"

spec=$out/resource-spec.json
build/gpu/cli/cujit resource-spec --slots-per-gpu "$slots" --out "$spec" 2>&1 | tee "$out/resource-spec.log" \
  || { echo "cujit resource-spec failed (CUJIT_GPU_SLOTS=$slots)"; exit 2; }
gpus=$(grep -c '"id"' "$spec")
if [ "$gpus" -gt 0 ]; then
  echo "== gpu label on $gpus GPU(s), $slots test(s) per GPU at once"
  ctest --preset gpu -j$((gpus * slots)) --resource-spec-file "$spec" \
    --output-junit "$out/gpu-junit.xml" > "$out/gpu-tests.log" 2>&1
else
  echo "== gpu label without a resource spec: no device to give the tests"
  ctest --preset gpu -j"$slots" --output-junit "$out/gpu-junit.xml" > "$out/gpu-tests.log" 2>&1
fi
gpu_status=$?
# Every test's output, passing ones included: which device each GPU test process used.
cp build/gpu/Testing/Temporary/LastTest.log "$out/gpu-tests-output.log" 2>/dev/null
ctest --test-dir build/gpu -L cpu -j"$jobs" --output-on-failure > "$out/cpu-tests.log" 2>&1
cpu_status=$?

echo "== gpu label"; grep -E "tests passed|Total Test time|\(Failed\)|\(Skipped\)|\(Not Run\)" "$out/gpu-tests.log"
echo "== gpu test processes per device (from $out/gpu-tests-output.log)"
grep -oE "cujit test: CTEST_RESOURCE_GROUP_0_GPUS=.* -> CUDA_VISIBLE_DEVICES=[^ ]+" "$out/gpu-tests-output.log" 2>/dev/null \
  | sed 's/.*-> //' | sort | uniq -c
grep -oE "cujit test: device 0: .*" "$out/gpu-tests-output.log" 2>/dev/null | sed 's/ (from .*//' | sort | uniq -c
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
