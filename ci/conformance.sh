#!/usr/bin/env bash
# The main job (until the cujit command exists): the full conformance run, with JUnit XML
# and the log written under one output directory, printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="${CUDAToolkit_ROOT:-/usr/local/cuda}/bin:$PATH"
out=${1:-cujit-out/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)

cmake --preset default
cmake --build --preset default -j"$jobs"

set +e
ctest --preset default -j"$jobs" --output-junit "$out/conformance-junit.xml" 2>&1 |
  tee "$out/conformance.log"
status=${PIPESTATUS[0]}
set -e
echo "cujit: conformance results in $out"
exit "$status"
