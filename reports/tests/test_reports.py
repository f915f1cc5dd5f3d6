"""Reports, the regression gate and history, on small golden JSON files."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import compare  # noqa: E402
import history  # noqa: E402
import report  # noqa: E402
from cujit_reports import bench_json  # noqa: E402
from cujit_reports.stats import mann_whitney_u  # noqa: E402


def golden(name):
    return os.path.join(HERE, "golden", name)


def quiet(fn, *args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = fn(*args)
    return code, out.getvalue(), err.getvalue()


class LoadTest(unittest.TestCase):
    def test_names_lose_decorations_and_times_become_seconds(self):
        run = bench_json.load(golden("base.json"))
        b = run.benchmarks["cujit/e2e_cubin/tiny"]
        self.assertEqual(len(b.samples), 5)
        self.assertAlmostEqual(b.median, 20.1e-3)
        self.assertAlmostEqual(run.benchmarks["cujit/kernel_link/tiny/memory_hit"].median, 40e-6)
        self.assertGreater(b.cv, 0)

    def test_wrong_schema_is_refused(self):
        with self.assertRaises(bench_json.SchemaError) as caught:
            bench_json.load(golden("wrong_schema.json"))
        self.assertIn("cujit_schema", str(caught.exception))
        with self.assertRaises(bench_json.SchemaError):
            bench_json.load(golden("missing.json"))

    def test_peer_label(self):
        self.assertEqual(bench_json.load(golden("peer.json")).label, "cuda.core 1.2.0")


class MannWhitneyTest(unittest.TestCase):
    def test_separated_samples_are_significant(self):
        u, p = mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
        self.assertEqual(u, 0.0)
        self.assertAlmostEqual(p, 0.0122, places=3)  # scipy's asymptotic two-sided value

    def test_identical_samples_are_not(self):
        _, p = mann_whitney_u([1, 1, 1], [1, 1, 1])
        self.assertEqual(p, 1.0)
        _, p = mann_whitney_u([1, 3, 5, 7, 9], [2, 4, 6, 8, 10])
        self.assertGreater(p, 0.5)


class CompareTest(unittest.TestCase):
    def test_a_slowdown_fails_the_gate(self):
        with tempfile.TemporaryDirectory() as tmp:
            md = os.path.join(tmp, "gate.md")
            code, out, _ = quiet(compare.main, [golden("base.json"), golden("slower.json"), "--markdown", md])
            self.assertEqual(code, 1)
            self.assertIn("| `cujit/e2e_cubin/tiny` |", out)
            self.assertIn("slower", out)
            with open(md, encoding="utf-8") as f:
                self.assertIn("1 slower", f.read())

    def test_noise_within_the_threshold_passes(self):
        code, out, _ = quiet(compare.main, [golden("base.json"), golden("same.json")])
        self.assertEqual(code, 0)
        self.assertIn("0 slower", out)

    def test_bad_input_is_exit_2(self):
        code, _, err = quiet(compare.main, [golden("base.json"), golden("wrong_schema.json")])
        self.assertEqual(code, 2)
        self.assertIn("cujit_schema", err)


class ReportTest(unittest.TestCase):
    def test_report_with_plots_and_ratios(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, out, _ = quiet(report.main, ["--out", tmp, golden("base.json"), golden("peer.json")])
            self.assertEqual(code, 0, out)
            for png in ("cold_vs_cached.png", "launch_per_kernel.png", "reduce_throughput.png", "peers.png"):
                path = os.path.join(tmp, png)
                self.assertTrue(os.path.getsize(path) > 1000, png)
            with open(os.path.join(tmp, "report.html"), encoding="utf-8") as f:
                page = f.read()
            self.assertIn("cujit/e2e_cubin/tiny", page)
            self.assertIn("<td class='n'>1.052</td>", page)  # 20.1 ms / 19.1 ms over the raw floor
            self.assertIn("<td class='n'>1.010</td>", page)  # reduce_into over CUB AOT
            self.assertIn("<td class='n'>0.00199</td>", page)  # memory hit 40 us / cold 20.1 ms
            self.assertIn("golden GPU", page)

    def test_missing_data_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, _, _ = quiet(report.main, ["--out", tmp, golden("peer.json")])
            self.assertEqual(code, 0)
            with open(os.path.join(tmp, "report.html"), encoding="utf-8") as f:
                self.assertIn("No data for this plot", f.read())


class HistoryTest(unittest.TestCase):
    def test_append_and_plot(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "history.jsonl")
            self.assertEqual(quiet(history.main, ["append", path, golden("base.json")])[0], 0)
            self.assertEqual(quiet(history.main, ["append", path, golden("slower.json")])[0], 0)
            with open(path, encoding="utf-8") as f:
                lines = [json.loads(line) for line in f]
            self.assertEqual(len(lines), 2)
            self.assertEqual(lines[0]["commit"], "abc123")
            self.assertAlmostEqual(lines[1]["medians"]["cujit/e2e_cubin/tiny"], 20.1e-3 * 1.25)
            code, out, _ = quiet(history.main, ["plot", path, "--out", os.path.join(tmp, "plots")])
            self.assertEqual(code, 0)
            self.assertIn("cujit_e2e_cubin_tiny.png", out)


if __name__ == "__main__":
    unittest.main()
