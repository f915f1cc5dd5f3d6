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
# regression gate, same-host A/B (ci/ab_gate.sh): the baseline revision built here and timed
# against this tree in interleaved rounds, every family, exit 1 on a slower or undecided one
# (CUJIT_GATE=0 leaves it out). The baseline is CUJIT_GATE_BASE_ARCHIVE (a `git archive`
# tarball, for a machine that gets the tree without .git), else CUJIT_GATE_BASE or the merge
# base with main; a lane that cannot build one fails, since a lane that cannot gate must not
# look like one that passed. Logs and JUnit XML go to $OUT (or cujit-out/gpu).
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
  echo "== regression gate: same-host A/B"
  base=()
  if [ -n "${CUJIT_GATE_BASE_ARCHIVE:-}" ]; then base=(--base-archive "$CUJIT_GATE_BASE_ARCHIVE"); fi
  CUJIT_GATE_PRESET=gpu bash ci/ab_gate.sh "${base[@]}" "$out/gate"
  gate_status=$?
fi
[ "$gpu_status" -eq 0 ] && [ "$cpu_status" -eq 0 ] && [ "$gate_status" -eq 0 ]
