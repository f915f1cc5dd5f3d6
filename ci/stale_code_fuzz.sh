#!/usr/bin/env bash
# A long run of the differential stale-code fuzzer (conformance/test_stale_code_fuzz.cpp):
# TOTAL steps split over JOBS processes, each with its own seed, on a built tree. CI runs the
# fuzzer with 2,000 steps as part of the cache area; this is the long run that goes with it.
#
#   ci/stale_code_fuzz.sh [--build DIR] [--jobs N] [--steps TOTAL] [--out DIR]
#
# Prints each process's seed and summary; exits 1 if any process found stale code (its log,
# with the seed to replay and every change so far, is in OUT).
set -uo pipefail
cd "$(dirname "$0")/.."

build=build/default
jobs=$(nproc 2>/dev/null || echo 2)
total=50000
out=cujit-out/stale-code-fuzz
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --steps) total=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: ci/stale_code_fuzz.sh [--build DIR] [--jobs N] [--steps TOTAL] [--out DIR]" >&2; exit 2 ;;
  esac
done
binary=$build/conformance/conformance_cache
[ -x "$binary" ] || { echo "ci/stale_code_fuzz.sh: $binary is not built" >&2; exit 2; }
mkdir -p "$out"
per_job=$(( (total + jobs - 1) / jobs ))
base_seed=${CUJIT_STALE_FUZZ_SEED:-$(( $(date +%s) % 100000 * 100 ))}

pids=()
for ((j = 0; j < jobs; ++j)); do
  CUJIT_STALE_FUZZ_SEED=$((base_seed + j)) CUJIT_STALE_FUZZ_STEPS=$per_job CUJIT_STALE_FUZZ_SECONDS=${CUJIT_STALE_FUZZ_SECONDS:-3600} \
    CUJIT_CACHE_DIR="$out/cache-$j" \
    "$binary" --gtest_filter='StaleCodeFuzz.*' > "$out/job-$j.log" 2>&1 &
  pids+=($!)
done
status=0
for ((j = 0; j < jobs; ++j)); do
  wait "${pids[$j]}" || status=1
  grep -h "stale-code fuzz: seed" "$out/job-$j.log" | tail -1
done
steps=$(grep -h "stale-code fuzz: seed .*: [0-9]* steps" "$out"/job-*.log | sed -E 's/.*: ([0-9]+) steps.*/\1/' |
        awk '{s += $1} END {print s + 0}')
echo "stale-code fuzz: $steps steps in $jobs processes from seed $base_seed; $([ $status -eq 0 ] && echo "no stale result" || echo "FAILED: see $out")"
exit $status
