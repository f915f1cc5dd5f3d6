#!/usr/bin/env python3
"""Package.QuickStartRuns (label gpu): runs the README's quick start, as built against a
fresh install by Package.ConsumerBuildsAgainstInstall, and checks what it prints.

Without a CUDA device (as `cujit info --json` reports it) the test is skipped, exit 77 with
the reason on stdout, unless CUJIT_REQUIRE_GPU is set (the GPU lane), where a missing
device fails it like every GPU test.

    run_quick_start.py --app WORK_DIR/quick-start-build/app --cujit build/default/cli/cujit
"""
import argparse
import json
import os
import subprocess
import sys

SKIP = 77
EXPECTED = "op(1) = 3"  # the README's comment: 2 * 1 + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", required=True)
    parser.add_argument("--cujit", required=True)
    args = parser.parse_args()
    # Under a CTest resource spec (ci/gpu.sh) the test is given one GPU: use that one, as
    # the suites do (conformance/CMakeLists.txt, RESOURCE_GROUPS).
    allotted = os.environ.get("CTEST_RESOURCE_GROUP_0_GPUS", "")
    if allotted.startswith("id:"):
        os.environ["CUDA_VISIBLE_DEVICES"] = allotted[3:].split(",")[0]
    info = subprocess.run([args.cujit, "info", "--json"], capture_output=True, text=True, timeout=120)
    try:
        devices = json.loads(info.stdout)
    except json.JSONDecodeError:
        print(f"run_quick_start: `cujit info --json` printed no JSON (exit {info.returncode}):\n"
              f"{info.stdout}{info.stderr}")
        return 1
    required = os.environ.get("CUJIT_REQUIRE_GPU", "") not in ("", "0", "false", "off", "no")
    if not devices.get("devices"):
        reason = devices.get("why_no_device") or "no CUDA device"
        if required:
            print(f"run_quick_start: CUJIT_REQUIRE_GPU is set and there is no device: {reason}")
            return 1
        print(f"SKIPPED: the README's quick start launches a kernel and needs a CUDA device: {reason}")
        return SKIP
    if not os.path.isfile(args.app):
        print(f"run_quick_start: {args.app} is not built (Package.ConsumerBuildsAgainstInstall builds it)")
        return 1
    run = subprocess.run([args.app], capture_output=True, text=True, timeout=300)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    if run.returncode != 0 or EXPECTED not in run.stdout:
        print(f"run_quick_start: the quick start exited {run.returncode}; expected '{EXPECTED}' on stdout")
        return 1
    print(f"run_quick_start: the README's quick start printed '{EXPECTED}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
