#!/usr/bin/env bash
# Times the README's main job the way issue 33 asks it to be judged: on a fresh clone, wall
# time, CPU seconds, the machine's load while it ran, the longest silence on stderr (the
# progress promise: a line at least every 30 s) and whether the clone stays clean.
#
#   ci/time_main_job.sh [CLONE_DIR]   clones this repository's HEAD into CLONE_DIR (default: a
#                                     new temporary directory) and runs `ci/setup.sh &&
#                                     ci/run.sh` there; MAIN_JOB='...' runs another command
#
# Run it on an idle machine of CI's size (2 cores): a shared one measures its neighbours too
# (the load it prints says how much). It prints one summary line per figure at the end; the
# job's own output is in CLONE_DIR.timing/.
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/.." && pwd)
clone=${1:-$(mktemp -d)/cujit}
job=${MAIN_JOB:-"ci/setup.sh && ci/run.sh"}
log=$clone.timing
git clone --quiet "$source_dir" "$clone"
mkdir -p "$log"
# The load, every 10 s, while the job runs.
(while sleep 10; do echo "$(date +%s) $(cut -d' ' -f1-3 /proc/loadavg)"; done) > "$log/load.txt" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT
start=$(date +%s)
# Each stderr line stamped with the second it arrived, for the longest silence.
set +e
(cd "$clone" && /usr/bin/time -f "%e %U %S %M" -o "$log/time.txt" bash -c "$job" \
   > "$log/stdout.txt" 2> >(while IFS= read -r line; do echo "$(date +%s) $line"; done > "$log/stderr.txt"))
status=$?
set -e
sleep 1  # the stamping reader drains
kill "$sampler" 2>/dev/null || true
read -r wall user sys rss < <(tail -n 1 "$log/time.txt")
gap=$(awk -v s="$start" '{ if ($1 - prev > gap) gap = $1 - prev; prev = $1 } BEGIN { prev = s } END { print gap + 0 }' "$log/stderr.txt")
echo "main job: '$job' in $clone: exit $status"
echo "wall: ${wall} s; CPU: $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') s (user $user, sys $sys); max RSS ${rss} KiB; $(nproc) cores"
echo "load (1/5/15 min) while it ran: $(awk '{ print $2 }' "$log/load.txt" | sort -n | awk '{ a[NR] = $1 } END { if (NR) print "min " a[1] ", median " a[int((NR + 1) / 2)] ", max " a[NR]; else print "not sampled" }')"
echo "longest silence on stderr: ${gap} s (the promise: at most 30)"
dirty=$(git -C "$clone" status --porcelain)
echo "working tree after the job: $([ -z "$dirty" ] && echo clean || echo "NOT clean: $dirty")"
exit "$status"
