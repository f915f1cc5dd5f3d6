#!/usr/bin/env bash
# The regression gate: the baseline revision and the current tree, built and timed on this
# machine in interleaved rounds (reports/ab_gate.py; docs/benchmarks.md, "The gate"). A lent
# GPU host differs from the last one, so a stored baseline is never what a gate compares with.
#
#   ci/ab_gate.sh [--build-only] [--base REV | --base-tree DIR | --base-archive FILE] [OUT]
#
# The baseline's source: a git revision (default CUJIT_GATE_BASE, else the merge base of
# HEAD and origin/main, else of HEAD and main), a directory holding that source, or a
# `git archive` tarball of it (the GPU machine gets the working tree without .git: make one
# with `git archive -o gate-base.tar.gz REV`). It is built in build/gate-base (benchmarks
# only) with the preset CUJIT_GATE_PRESET (default: gpu with a device, else default); the
# current tree's benchmarks are built in its preset's build directory.
# CUJIT_GATE_FAMILIES names the families (default all with a device, cpu without);
# CUJIT_GATE_BUDGET the seconds a family may take before it is undecided (default 60).
# Exit 0 when every family is "not slower", 1 when one is slower or undecided, 2 when the
# gate could not run (a build failed, a run could not be used).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

export PATH="${CUDAToolkit_ROOT:-/usr/local/cuda}/bin:$PATH"
base_rev=${CUJIT_GATE_BASE:-}
base_tree=
base_archive=
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
case "${1:-}" in
  --base) base_rev=${2:?--base needs a revision}; shift 2 ;;
  --base-tree) base_tree=${2:?--base-tree needs a directory}; shift 2 ;;
  --base-archive) base_archive=${2:?--base-archive needs a file}; shift 2 ;;
esac
out=${1:-${OUT:-cujit-out/gate-$(date -u +%Y%m%dT%H%M%SZ)}}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if nvidia-smi -L > /dev/null 2>&1; then has_gpu=1; else has_gpu=0; fi
preset=${CUJIT_GATE_PRESET:-$([ "$has_gpu" = 1 ] && echo gpu || echo default)}
families=${CUJIT_GATE_FAMILIES:-$([ "$has_gpu" = 1 ] && echo all || echo cpu)}
targets=(--target bench_jit bench_jit_gpu bench_launch bench_reduce)
jobs=$(nproc 2>/dev/null || echo 2)

fail() { echo "cujit gate: $*" >&2; exit 2; }

# ---- the baseline's source ----
base_src=$root/build/gate-base-src
if [ -n "$base_tree" ]; then
  base_src=$(cd "$base_tree" && pwd) || fail "no directory $base_tree"
  base_name="tree $base_tree"
elif [ -n "$base_archive" ]; then
  # The same archive as last time keeps its tree (and the build's timestamps: no rebuild).
  digest=$(sha256sum "$base_archive" | cut -d' ' -f1) || fail "cannot read $base_archive"
  if [ "$(cat "$base_src/.cujit-gate-archive" 2>/dev/null)" != "$digest" ]; then
    rm -rf "$base_src" && mkdir -p "$base_src"
    tar -xzf "$base_archive" -C "$base_src" || fail "cannot extract $base_archive"
    echo "$digest" > "$base_src/.cujit-gate-archive"
  fi
  base_name="archive $(basename "$base_archive") (sha256 ${digest:0:12})"
else
  if [ -z "$base_rev" ]; then
    base_rev=$(git merge-base HEAD origin/main 2>/dev/null || git merge-base HEAD main 2>/dev/null) \
      || fail "no baseline: name one with --base REV, --base-tree or --base-archive"
  fi
  rm -rf "$base_src" && mkdir -p "$base_src"
  git archive "$base_rev" | tar -x -C "$base_src" || fail "git archive $base_rev failed"
  base_name="revision $(git rev-parse --short "$base_rev")"
fi
echo "cujit gate: A = $base_name, B = this tree ($(git rev-parse --short HEAD 2>/dev/null || echo 'no git')" \
     "+ $(python3 ci/source_digest.py 2>/dev/null | cut -c1-12)), preset $preset, families $families" | tee "$out/arms.txt"

# ---- both builds, benchmarks only ----
base_build=$root/build/gate-base
(cd "$base_src" && cmake --preset "$preset" -B "$base_build" > "$out/base-configure.log" 2>&1 \
  && cmake --build "$base_build" -j"$jobs" "${targets[@]}" > "$out/base-build.log" 2>&1) \
  || { tail -30 "$out/base-build.log" "$out/base-configure.log" 2>/dev/null; fail "the baseline did not build ($out/base-build.log)"; }
current_build=$root/build/$preset
(cmake --preset "$preset" > "$out/current-configure.log" 2>&1 \
  && cmake --build "$current_build" -j"$jobs" "${targets[@]}" > "$out/current-build.log" 2>&1) \
  || { tail -30 "$out/current-build.log"; fail "the current tree did not build ($out/current-build.log)"; }
if [ "$build_only" = 1 ]; then echo "cujit gate: both builds ready ($base_build, $current_build)"; exit 0; fi

# ---- the gate ----
python3 reports/ab_gate.py --a "$base_build" --b "$current_build" --families "$families" \
  --budget "${CUJIT_GATE_BUDGET:-60}" --out "$out" 2> "$out/gate-progress.log" | tee "$out/gate.txt"
status=${PIPESTATUS[0]}
echo "cujit gate: exit $status (table: $out/gate.md, figures: $out/gate.json)"
exit "$status"
