#!/usr/bin/env bash
# Runs the benchmark suite and writes its JSON into one directory.
#   ci/bench.sh --quick [OUT]   CPU families, cold, few repetitions (seconds); what CI runs
#   ci/bench.sh [OUT]           every family in both vendor-cache states; GPU families need a
#                               device; peers and exec-to-first-result if python has them
# (The regression gate is ci/ab_gate.sh: same-host A/B, never a stored baseline.)
# Files are named <executable>-<state>.json, the state being what the run record says:
# "cold" (CUDA_CACHE_DISABLE=1: NVRTC's, nvJitLink's and the driver's own caches off, as on a
# fresh CI machine) or "vendor-cache-warm" (those caches on, as on a developer's machine).
# CUJIT_FIRST_RESULT_ROUNDS sets the rounds of exec to first result (default 21; more rounds
# narrow the interval of its ratio).
# CUJIT_BENCH_ONLY (executable names) and CUJIT_BENCH_STATES narrow a full run, so that it
# can be split over several calls. bench_jit runs one process per family (the table below;
# CUJIT_BENCH_FAMILIES names some of them), each into parts/bench_jit-<state>.<family>.json,
# and after each family the finished parts are merged into bench_jit-<state>.json
# (bench/support/merge_results.py, written by rename): a call cut off at its time limit
# still leaves valid JSON with every family that finished. CUJIT_BENCH_FAMILY_TIMEOUT
# (seconds) stops one family's process when it runs longer. Parts of several calls merge
# into one file with merge_results.py OUT FAMILY=PART... (docs/benchmarks.md).
# OUT defaults to $OUT, else cujit-out/bench-<timestamp>.
# Assumes a configured build (BUILD, default build/default).
set -uo pipefail
cd "$(dirname "$0")/.."

mode=full
case "${1:-}" in
  --quick) mode=quick; shift ;;
  --gate) echo "cujit bench: --gate is gone: the gate is ci/ab_gate.sh (same-host A/B, docs/benchmarks.md)" >&2; exit 2 ;;
esac
# The measured code's digest, from its files (ci/source_digest.py), for every run record:
# right even where this tree's git metadata is not the project's (a copied tree).
if [ -z "${CUJIT_SOURCE_DIGEST:-}" ]; then
  if ! CUJIT_SOURCE_DIGEST=$(python3 ci/source_digest.py); then
    echo "cujit bench: no source digest (ci/source_digest.py failed); the records say unknown" >&2
    CUJIT_SOURCE_DIGEST=unknown
  fi
fi
export CUJIT_SOURCE_DIGEST
out=${1:-${OUT:-cujit-out/bench-$(date -u +%Y%m%dT%H%M%SZ)}}
build=${BUILD:-build/default}
mkdir -p "$out"
status=0

run() {  # run STATE NAME [ARGS...]: one benchmark executable, JSON to $out/NAME-STATE.json
  local state=$1 name=$2; shift 2
  local disable=0
  [ "$state" = cold ] && disable=1
  echo "cujit bench: $name ($state) $*" >&2
  if ! CUDA_CACHE_DISABLE=$disable "$build/bench/$name" "$@" --benchmark_out="$out/$name-$state.json" \
      --benchmark_out_format=json --benchmark_format=console > "$out/$name-$state.log" 2>&1; then
    echo "cujit bench: $name ($state) failed (log: $out/$name-$state.log)" >&2
    status=1
  fi
}

wanted() { [ -z "${CUJIT_BENCH_ONLY:-}" ] || [[ " $CUJIT_BENCH_ONLY " == *" $1 "* ]]; }

# bench_jit's families: name=--benchmark_filter regex. Together they cover every benchmark
# bench_jit registers in full mode; each takes under 6 minutes on the H100 in either state
# (docs/benchmarks.md, "Splitting a run").
jit_families=(
  "scenarios=^(cujit|pair)/(nvrtc|nvjitlink|e2e_cubin|first_call_new_process|kernel_link)/"
  "parallel_sources=^pair/parallel_sources/"
  "incremental_rebuild=^cujit/incremental/[^/]+/rebuild_one"
  "incremental_cold=^cujit/incremental/[^/]+/cold"
)
family_wanted() { [ -z "${CUJIT_BENCH_FAMILIES:-}" ] || [[ " $CUJIT_BENCH_FAMILIES " == *" $1 "* ]]; }

run_families() {  # run_families STATE NAME: one process per family, merged after each
  local state=$1 name=$2 entry family filter disable=0 merged=()
  [ "$state" = cold ] && disable=1
  mkdir -p "$out/parts"
  for entry in "${jit_families[@]}"; do
    family=${entry%%=*}
    filter=${entry#*=}
    family_wanted "$family" || continue
    local part="$out/parts/$name-$state.$family.json" log="$out/$name-$state.$family.log"
    echo "cujit bench: $name ($state) family $family" >&2
    local limit=()
    [ -n "${CUJIT_BENCH_FAMILY_TIMEOUT:-}" ] && limit=(timeout --signal=KILL "$CUJIT_BENCH_FAMILY_TIMEOUT")
    if ! CUDA_CACHE_DISABLE=$disable "${limit[@]}" "$build/bench/$name" --benchmark_filter="$filter" \
        --benchmark_out="$part" --benchmark_out_format=json --benchmark_format=console > "$log" 2>&1; then
      echo "cujit bench: $name ($state) family $family failed or was stopped (log: $log)" >&2
      status=1
    fi
    if [ ! -s "$part" ]; then  # no benchmark of the family is registered (quick mode), or killed at once
      echo "cujit bench: $name ($state) family $family: no JSON written" >&2
      continue
    fi
    merged+=("$family=$part")
    "$python" bench/support/merge_results.py "$out/$name-$state.json" "${merged[@]}" || status=1
  done
}

python=python3
case "$mode" in
  quick)
    run cold bench_jit --cujit-quick
    run cold bench_reduce --cujit-quick
    ;;
  full)
    for state in ${CUJIT_BENCH_STATES:-cold vendor-cache-warm}; do
      if wanted bench_jit; then run_families "$state" bench_jit; fi
      for name in bench_jit_gpu bench_reduce; do
        if wanted "$name"; then run "$state" "$name"; fi
      done
      disable=0
      [ "$state" = cold ] && disable=1
      if wanted peers; then
        CUJIT_BUILD_DIR=$build CUDA_CACHE_DISABLE=$disable "$python" bench/peers/numba_peer.py "$out/peer_numba-$state.json" scenarios 9 \
          > "$out/peer_numba-$state.log" 2>&1 || status=1
        CUJIT_BUILD_DIR=$build CUDA_CACHE_DISABLE=$disable "$python" bench/peers/cuda_core_peer.py "$out/peer_cuda_core-$state.json" \
          scenarios 9 > "$out/peer_cuda_core-$state.log" 2>&1 || status=1
      fi
    done
    # Launch figures do not depend on the JIT caches: one run, in the usual state.
    if wanted bench_launch; then run vendor-cache-warm bench_launch; fi
    # Exec to first result, caches warm by construction (its setup fills them).
    if wanted first_result; then
      "$python" bench/first_result/run.py --build "$build" --out "$out/first_result-vendor-cache-warm.json" \
        ${CUJIT_FIRST_RESULT_ROUNDS:+--rounds "$CUJIT_FIRST_RESULT_ROUNDS"} \
        > "$out/first_result.log" 2>&1 || { echo "cujit bench: first_result failed ($out/first_result.log)" >&2; status=1; }
    fi
    ;;
esac
# One archive as well: the GPU machine hands back a handful of files at most.
tar -czf "$out/bench-results.tar.gz" -C "$out" $(cd "$out" && ls | grep -v bench-results.tar.gz)
echo "cujit bench: results in $out"
exit "$status"
