#!/usr/bin/env bash
# Runs the benchmark suite and writes its JSON into one directory.
#   ci/bench.sh --quick [OUT]   CPU families, cold, few repetitions (seconds); what CI runs
#   ci/bench.sh [OUT]           every family in both vendor-cache states; GPU families need a
#                               device; peers and exec-to-first-result if python has them
#   ci/bench.sh --gate BASELINE [OUT]
#                               the executables in CUJIT_BENCH_GATE (default: bench_jit_gpu,
#                               whose e2e families hold NVRTC and nvJitLink work too; cold) at
#                               full size, then reports/compare.py
#                               against BASELINE/<same file>: exit 1 on a regression
#                               (CUJIT_GATE_THRESHOLD, default 0.10: a slowdown fails when
#                               the whole 95% interval is past it)
# Files are named <executable>-<state>.json, the state being what the run record says:
# "cold" (CUDA_CACHE_DISABLE=1: NVRTC's, nvJitLink's and the driver's own caches off, as on a
# fresh CI machine) or "vendor-cache-warm" (those caches on, as on a developer's machine).
# CUJIT_BENCH_ONLY (executable names) and CUJIT_BENCH_STATES narrow a full run, so that it
# can be split over several calls. OUT defaults to $OUT, else cujit-out/bench-<timestamp>.
# Assumes a configured build (BUILD, default build/default).
set -uo pipefail
cd "$(dirname "$0")/.."

mode=full
baseline=
case "${1:-}" in
  --quick) mode=quick; shift ;;
  --gate) mode=gate; baseline=${2:?--gate needs the baseline directory}; shift 2 ;;
esac
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

python=python3
case "$mode" in
  quick)
    run cold bench_jit --cujit-quick
    run cold bench_reduce --cujit-quick
    ;;
  gate)
    for name in ${CUJIT_BENCH_GATE:-bench_jit_gpu}; do run cold "$name"; done
    for current in "$out"/*.json; do
      file=$(basename "$current")
      if [ ! -f "$baseline/$file" ]; then
        echo "cujit bench: no baseline $baseline/$file: nothing to gate $file against" >&2
        status=1
        continue
      fi
      "$python" reports/compare.py "$baseline/$file" "$current" --threshold "${CUJIT_GATE_THRESHOLD:-0.10}" --markdown "$out/gate-${file%.json}.md" \
        > "$out/gate-${file%.json}.log" 2>&1
      verdict=$?
      head -1 "$out/gate-${file%.json}.log"
      sed -n '/^Failures:/,$p' "$out/gate-${file%.json}.log"
      if [ "$verdict" -ne 0 ]; then
        echo "cujit bench: gate on $file: exit $verdict (table: $out/gate-${file%.json}.md)" >&2
        [ "$verdict" -eq 2 ] && tail -5 "$out/gate-${file%.json}.log" >&2
        status=1
      fi
    done
    ;;
  full)
    for state in ${CUJIT_BENCH_STATES:-cold vendor-cache-warm}; do
      for name in bench_jit bench_jit_gpu bench_reduce; do
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
        > "$out/first_result.log" 2>&1 || { echo "cujit bench: first_result failed ($out/first_result.log)" >&2; status=1; }
    fi
    ;;
esac
# One archive as well: the GPU machine hands back a handful of files at most.
tar -czf "$out/bench-results.tar.gz" -C "$out" $(cd "$out" && ls | grep -v bench-results.tar.gz)
echo "cujit bench: results in $out"
exit "$status"
