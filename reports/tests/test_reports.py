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


def _base_doc():
    with open(golden("base.json"), encoding="utf-8") as f:
        return json.load(f)


def _with(change):
    """base.json with `change(doc)` applied, as JSON text (NaN and Infinity as Python writes them)."""
    doc = _base_doc()
    change(doc)
    return json.dumps(doc)


def _set(path, value):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _delete(path):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change


# (test name, file text, what the message must name). Every one is input the reports cannot
# use: exit 2 naming the file and the field, never a traceback, never exit 1 ("slower").
HOSTILE_TEXTS = [
    # missing fields
    ("no_context", _with(_delete(["context"])), "context is missing"),
    ("no_schema", _with(_delete(["context", "cujit_schema"])), "context.cujit_schema is None"),
    ("no_benchmarks", _with(_delete(["benchmarks"])), "benchmarks is missing"),
    ("no_real_time", _with(_delete(["benchmarks", 0, "real_time"])), "benchmarks[0].real_time is missing"),
    ("no_name", _with(lambda d: [d["benchmarks"][0].pop(k) for k in ("name", "run_name")]), "benchmarks[0].name is missing"),
    # wrong types
    ("top_level_list", "[1, 2]", "the top level must be an object"),
    ("context_list", _with(_set(["context"], [])), "context must be an object"),
    ("benchmarks_object", _with(_set(["benchmarks"], {})), "benchmarks must be a list"),
    ("entry_string", _with(_set(["benchmarks", 0], "x")), "benchmarks[0] must be an object"),
    ("name_number", _with(lambda d: [d["benchmarks"][0].pop("run_name"), d["benchmarks"][0].update(name=5)]),
     "benchmarks[0].name must be a string"),
    ("real_time_string", _with(_set(["benchmarks", 0, "real_time"], "20")), "benchmarks[0].real_time must be a number"),
    ("real_time_bool", _with(_set(["benchmarks", 0, "real_time"], True)), "benchmarks[0].real_time must be a number"),
    ("real_time_null", _with(_set(["benchmarks", 0, "real_time"], None)), "benchmarks[0].real_time must be a number"),
    ("time_unit_number", _with(_set(["benchmarks", 0, "time_unit"], 3)), "benchmarks[0].time_unit must be a string"),
    ("time_unit_unknown", _with(_set(["benchmarks", 0, "time_unit"], "fortnights")),
     "benchmarks[0].time_unit must be one of ns, us, ms, s"),
    ("error_occurred_string", _with(_set(["benchmarks", 0, "error_occurred"], "yes")),
     "benchmarks[0].error_occurred must be true or false"),
    ("run_type_unknown", _with(_set(["benchmarks", 0, "run_type"], "warmup")), "benchmarks[0].run_type must be"),
    ("device_number", _with(_set(["context", "device"], 5)), "context.device must be a string"),
    ("counter_nan", _with(_set(["benchmarks", 0, "bytes"], float("nan"))), "benchmarks[0].bytes must be a finite number"),
    # NaN, infinite, negative
    ("real_time_nan", _with(_set(["benchmarks", 0, "real_time"], float("nan"))), "benchmarks[0].real_time must be a finite number"),
    ("real_time_inf", _with(_set(["benchmarks", 0, "real_time"], float("inf"))), "benchmarks[0].real_time must be a finite number"),
    ("real_time_huge", _with(_set(["benchmarks", 0, "real_time"], 0)).replace('"real_time": 0', '"real_time": 1e400', 1),
     "benchmarks[0].real_time must be a finite number"),
    ("real_time_negative", _with(_set(["benchmarks", 0, "real_time"], -20.0)), "benchmarks[0].real_time must be a number >= 0"),
    ("median_nan", _with(_set(["benchmarks", 6, "real_time"], float("nan"))), "benchmarks[6].real_time must be a finite number"),
    # nothing to use
    ("empty_benchmarks", _with(_set(["benchmarks"], [])), "benchmarks is empty"),
    # not JSON
    ("not_json", "{ nope", "is not JSON"),
    ("empty_file", "", "is not JSON"),
    ("too_deep", "[" * 100000 + "]" * 100000, "is not JSON"),
]


class HostileInputTest(unittest.TestCase):
    """Unusable input is exit 2 with a message naming the file and the field, for the gate,
    the report and the history."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def expect_unusable(self, path, named):
        """compare (either side), report and history append: exit 2 naming the file and `named`."""
        runs = [(compare.run, [golden("base.json"), path]), (compare.run, [path, golden("base.json")]),
                (report.main, ["--out", os.path.join(self.tmp.name, "out"), path]),
                (history.main, ["append", os.path.join(self.tmp.name, "h.jsonl"), path])]
        for fn, args in runs:
            with self.subTest(tool=fn.__module__, args=args):
                code, _, err = quiet(fn, args)
                self.assertEqual(code, 2, err)
                self.assertIn(path, err)
                self.assertIn(named, err)
                self.assertNotIn("Traceback", err)

    def test_the_golden_base_is_usable(self):
        # The mutations below start from it: it must load as it is.
        self.assertEqual(quiet(compare.run, [golden("base.json"), golden("base.json")])[0], 0)

    def test_every_class_of_unusable_json(self):
        for name, text, named in HOSTILE_TEXTS:
            with self.subTest(case=name):
                self.expect_unusable(self.write(name + ".json", text), named)

    def test_not_utf8(self):
        path = os.path.join(self.tmp.name, "latin1.json")
        with open(path, "wb") as f:
            f.write(b'{"context": {"device": "\xff"}}')
        self.expect_unusable(path, "is not UTF-8")

    def test_a_directory(self):
        path = os.path.join(self.tmp.name, "a_directory.json")
        os.mkdir(path)
        self.expect_unusable(path, "is a directory, not a regular file")

    def test_a_fifo_does_not_hang(self):
        path = os.path.join(self.tmp.name, "fifo.json")
        os.mkfifo(path)
        self.expect_unusable(path, "is a FIFO, not a regular file")

    def test_a_missing_file(self):
        self.expect_unusable(os.path.join(self.tmp.name, "missing.json"), "cannot be opened")

    def test_an_unreadable_file(self):
        if os.geteuid() == 0:
            self.skipTest("running as root: permission bits do not restrict root")
        path = self.write("locked.json", _with(lambda d: None))
        os.chmod(path, 0)
        self.expect_unusable(path, "cannot be opened")

    def test_a_file_over_the_limit_is_refused_unread(self):
        path = self.write("huge.json", "{")
        os.truncate(path, bench_json.MAX_BYTES + 1)  # sparse: nothing is written
        self.expect_unusable(path, f"more than the {bench_json.MAX_BYTES}-byte limit")


class HostileGateTest(unittest.TestCase):
    def test_a_nan_threshold_is_refused(self):
        # NaN makes every comparison false: the gate would always pass.
        for threshold in ("nan", "inf", "-0.1"):
            with self.subTest(threshold=threshold), self.assertRaises(SystemExit) as caught:
                quiet(compare.run, [golden("base.json"), golden("slower.json"), "--threshold", threshold])
            self.assertEqual(caught.exception.code, 2)

    def test_no_common_benchmark_is_exit_2(self):
        code, _, err = quiet(compare.run, [golden("base.json"), golden("peer.json")])
        self.assertEqual(code, 2)
        self.assertIn("no benchmark with a time is in both", err)

    def test_an_unwritable_markdown_is_exit_2_not_a_verdict(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = quiet(compare.run, [golden("base.json"), golden("slower.json"), "--markdown", tmp])
        self.assertEqual(code, 2)
        self.assertIn("cannot write", err)

    def test_an_internal_failure_is_exit_2_not_a_verdict(self):
        original = compare.compare

        def broken(*_):
            raise ZeroDivisionError("injected")

        compare.compare = broken
        try:
            code, _, err = quiet(compare.run, [golden("base.json"), golden("slower.json")])
        finally:
            compare.compare = original
        self.assertEqual(code, 2)
        self.assertIn("no verdict", err)


class HostileHistoryTest(unittest.TestCase):
    def test_a_broken_history_line_is_exit_2_naming_the_line(self):
        cases = [("not json", "{ nope", "line 2"), ("a list", "[1]", "line 2 must be an object"),
                 ("medians nan", '{"medians": {"x": NaN}}', "line 2: medians.x must be a finite number"),
                 ("medians negative", '{"medians": {"x": -1}}', "line 2: medians.x must be a finite number"),
                 ("medians list", '{"medians": [1]}', "line 2: medians must be an object"),
                 ("commit number", '{"commit": 5, "medians": {}}', "line 2: commit must be a string")]
        with tempfile.TemporaryDirectory() as tmp:
            for name, line, named in cases:
                with self.subTest(case=name):
                    path = os.path.join(tmp, "history.jsonl")
                    with open(path, "w", encoding="utf-8") as f:
                        f.write('{"commit": "abc", "medians": {}}\n' + line + "\n")
                    code, _, err = quiet(history.main, ["plot", path, "--out", os.path.join(tmp, "plots")])
                    self.assertEqual(code, 2, err)
                    self.assertIn(path, err)
                    self.assertIn(named, err)

    def test_appending_to_a_fifo_or_directory_is_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "fifo.jsonl")
            os.mkfifo(fifo)
            for target in (fifo, tmp):
                with self.subTest(target=target):
                    code, _, err = quiet(history.main, ["append", target, golden("base.json")])
                    self.assertEqual(code, 2, err)
                    self.assertIn(target, err)


if __name__ == "__main__":
    unittest.main()
