#!/usr/bin/env bash
# Runs the benchmark suite and writes its JSON into one directory.
#   ci/bench.sh --quick [OUT]   CPU families, few repetitions (seconds); what CI runs
#   ci/bench.sh [OUT]           every family; the GPU ones need a device; peers if python
#                               has numba-cuda / cuda.core
# OUT defaults to $OUT, else cujit-out/bench-<timestamp>. Assumes a configured build
# (BUILD, default build/default).
set -uo pipefail
cd "$(dirname "$0")/.."

quick=0
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
out=${1:-${OUT:-cujit-out/bench-$(date -u +%Y%m%dT%H%M%SZ)}}
build=${BUILD:-build/default}
mkdir -p "$out"
status=0

run() {  # run NAME [ARGS...]: one benchmark executable, JSON to $out/NAME.json
  local name=$1; shift
  echo "cujit bench: $name $*" >&2
  if ! "$build/bench/$name" "$@" --benchmark_out="$out/$name.json" --benchmark_out_format=json \
      --benchmark_format=console > "$out/$name.log" 2>&1; then
    echo "cujit bench: $name failed (log: $out/$name.log)" >&2
    status=1
  fi
}

if [ "$quick" = 1 ]; then
  run bench_jit --cujit-quick
  run bench_reduce --cujit-quick
else
  run bench_jit
  for name in bench_jit_gpu bench_launch bench_reduce; do run "$name"; done
  python3 bench/peers/numba_peer.py "$out/peer_numba.json" scenarios 5 > "$out/peer_numba.log" 2>&1 || status=1
  python3 bench/peers/cuda_core_peer.py "$out/peer_cuda_core.json" scenarios 5 > "$out/peer_cuda_core.log" 2>&1 || status=1
fi
# One archive as well: the GPU machine hands back a handful of files at most.
tar -czf "$out/bench-results.tar.gz" -C "$out" $(cd "$out" && ls | grep -v bench-results.tar.gz)
echo "cujit bench: results in $out"
exit "$status"
