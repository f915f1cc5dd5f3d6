"""The A/B gate on real CPU families of this machine's build (docs/benchmarks.md, "Measuring
the gate"): an A/A run of one build passes, and the same build with a planted 10% slowdown
in arm B (CUJIT_PLANTED_SLOWDOWN=0.10, core/src/support/planted_slowdown.hpp) fails with
every family "slower". One build, a run-time switch: CI builds the project once.

Needs the benchmark executables: CUJIT_BUILD_DIR, else build/default. ci/test.sh sets
CUJIT_AB_GATE_REQUIRED=1, so that a missing build fails there instead of skipping."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GATE = os.path.join(ROOT, "reports", "ab_gate.py")
BUILD = os.environ.get("CUJIT_BUILD_DIR", os.path.join(ROOT, "build", "default"))
HAVE_BUILD = os.path.isfile(os.path.join(BUILD, "bench", "bench_jit"))
REQUIRED = os.environ.get("CUJIT_AB_GATE_REQUIRED") == "1"
# CI's budget: generous, since an undecided family fails (docs/benchmarks.md gives the
# measured false-alarm rate at this setting).
BUDGET = os.environ.get("CUJIT_AB_GATE_BUDGET", "90")


def run_gate(*extra):
    with tempfile.TemporaryDirectory(prefix="cujit-ab-test-") as out:
        done = subprocess.run([sys.executable, GATE, "--a", BUILD, "--b", BUILD, "--families", "ci",
                               "--budget", BUDGET, "--out", out, *extra],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        with open(os.path.join(out, "gate.json"), encoding="utf-8") as handle:
            return done.returncode, done.stdout.decode("utf-8", "replace"), json.load(handle)


@unittest.skipUnless(HAVE_BUILD or REQUIRED, f"no benchmark build at {BUILD} (set CUJIT_BUILD_DIR)")
class AbGateOnCpuTest(unittest.TestCase):
    def test_a_planted_ten_percent_slowdown_fails(self):
        code, output, document = run_gate("--b-env", "CUJIT_PLANTED_SLOWDOWN=0.10")
        print(output, file=sys.stderr)
        self.assertEqual(code, 1, output)
        verdicts = {f["family"]: f["verdict"] for f in document["families"]}
        self.assertEqual(set(verdicts.values()), {"slower"}, verdicts)
        self.assertFalse(document["passed"])

    def test_an_a_a_run_passes(self):
        code, output, document = run_gate()
        print(output, file=sys.stderr)
        self.assertEqual(code, 0, output)
        self.assertTrue(all(f["verdict"] == "not slower" for f in document["families"]), output)

    def test_a_bad_planted_value_is_an_error_not_a_verdict(self):
        code, output, document = run_gate("--b-env", "CUJIT_PLANTED_SLOWDOWN=ten percent", "--max-rounds", "8")
        self.assertEqual(code, 2, output)
        errors = [f for f in document["families"] if f["verdict"] == "error"]
        self.assertTrue(errors, output)
        self.assertIn("CUJIT_PLANTED_SLOWDOWN", errors[0]["error"])


if __name__ == "__main__":
    unittest.main()
