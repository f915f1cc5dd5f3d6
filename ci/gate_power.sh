#!/usr/bin/env bash
# The A/B gate's power and false-alarm rate on this machine (docs/benchmarks.md, "Measuring
# the gate"): RUNS gates of an A/A run (one build on both sides) and RUNS gates with a
# planted 10% slowdown in arm B (CUJIT_PLANTED_SLOWDOWN=0.10), over FAMILIES, WORKERS gate
# processes at once (1 for GPU families: two gates on one GPU time each other).
#
#   ci/gate_power.sh BUILD FAMILIES RUNS WORKERS OUT
#
# CUJIT_GATE_GPUS=N (N > 1) spreads the gate processes over N GPUs, one GPU each (process k
# of the A/A and planted ones gets CUDA_VISIBLE_DEVICES=k mod N), and starts them together:
# with WORKERS 1 on two GPUs, the A/A gate times on GPU 0 while the planted one times on GPU 1.
#
# Writes OUT/{aa,planted}-<worker>/gate.json (after every run, so a time limit keeps what
# finished) and prints the counts: a planted family is caught when "slower"; an A/A run is
# a false alarm when it fails ("slower" or "undecided").
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:?BUILD}; families=${2:?FAMILIES}; runs=${3:?RUNS}; workers=${4:?WORKERS}; out=${5:?OUT}
budget=${CUJIT_GATE_BUDGET:-60}
gpus=${CUJIT_GATE_GPUS:-0}
per_worker=$(( (runs + workers - 1) / workers ))
mkdir -p "$out"
process=0
for condition in aa planted; do
  for worker in $(seq 1 "$workers"); do
    env_b=()
    [ "$condition" = planted ] && env_b=(--b-env CUJIT_PLANTED_SLOWDOWN=0.10)
    device=()
    [ "$gpus" -gt 1 ] && device=(env CUDA_VISIBLE_DEVICES=$((process % gpus)))
    process=$((process + 1))
    "${device[@]}" python3 reports/ab_gate.py --a "$build" --b "$build" "${env_b[@]}" --families "$families" \
      --budget "$budget" --repeat "$per_worker" --quiet --out "$out/$condition-$worker" \
      > "$out/$condition-$worker.log" 2>&1 &
  done
  [ "$workers" -gt 1 ] || [ "$gpus" -gt 1 ] || wait
done
wait
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
for condition in ("aa", "planted"):
    counts, runs, failed = {}, 0, 0
    for path in glob.glob(os.path.join(out, condition + "-*", "gate.json")):
        document = json.load(open(path))
        runs += document["runs"]
        failed += document["runs_failed"]
        for family, verdicts in document["verdicts"].items():
            for verdict, n in verdicts.items():
                counts.setdefault(family, {}).setdefault(verdict, 0)
                counts[family][verdict] += n
    name = "A/A (false alarm = a failed gate)" if condition == "aa" else "planted 10% (caught = slower)"
    print(f"{name}: {runs} gate runs, {failed} failed")
    for family, verdicts in sorted(counts.items()):
        print(f"  {family}: {verdicts}")
PY
