"""Reports, the regression gate and history, on small golden JSON files."""
import ctypes.util
import io
import json
import math
import os
import re
import subprocess
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
from cujit_reports import stats  # noqa: E402


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


class StatsTest(unittest.TestCase):
    def test_u_counts_are_the_exact_null_distribution(self):
        self.assertEqual(stats.u_counts(3, 3), [1, 1, 2, 3, 3, 3, 3, 2, 1, 1])
        for n, m in ((4, 5), (9, 9), (2, 7)):
            counts = stats.u_counts(n, m)
            self.assertEqual(sum(counts), math.comb(n + m, n))
            self.assertEqual(counts, counts[::-1])  # U is symmetric about n*m/2

    def test_interval_ranks_match_the_tables(self):
        # Two-sided 5% critical values of U from the Mann-Whitney tables, plus one.
        self.assertEqual(stats.interval_rank(9, 9, 0.95)[0], 18)
        self.assertEqual(stats.interval_rank(5, 5, 0.95)[0], 3)
        self.assertEqual(stats.interval_rank(20, 20, 0.95)[0], 128)
        self.assertEqual(stats.interval_rank(3, 3, 0.95), (0, 0.0))  # at best 90%: no 95% interval
        self.assertGreaterEqual(stats.interval_rank(9, 9, 0.95)[1], 0.95)

    def test_the_normal_approximation_beyond_the_exact_limit_is_within_a_rank(self):
        exact = stats.interval_rank(150, 150, 0.95)[0]
        self.assertLessEqual(abs(stats._interval_rank_normal(150, 150, 0.95)[0] - exact), 1)

    def test_a_factor_is_found_with_its_interval(self):
        base = [20.0, 20.4, 19.8, 20.1, 20.2, 19.9, 20.3, 20.0, 20.1]
        shift = stats.ratio_interval(base, [t * 1.5 for t in base])
        self.assertAlmostEqual(shift.estimate, 1.5)
        self.assertTrue(1.45 < shift.low < 1.5 < shift.high < 1.55, shift)
        same = stats.ratio_interval(base, base)
        self.assertTrue(same.low < 1.0 < same.high, same)

    def test_no_interval_from_three_repetitions(self):
        shift = stats.ratio_interval([1.0, 1.1, 1.2], [10.0, 11.0, 12.0])
        self.assertIsNone(shift.low)
        self.assertIsNone(shift.high)


def _doc(name):
    with open(golden(name), encoding="utf-8") as f:
        return json.load(f)


def _write(directory, name, doc):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def gate(baseline, current, *extra):
    return quiet(compare.run, [baseline, current, *extra])


class GateTest(unittest.TestCase):
    """The regression gate on golden runs of 9 repetitions (3 for the too-few case)."""

    def test_a_faked_50_percent_slowdown_fails(self):
        with tempfile.TemporaryDirectory() as tmp:
            md = os.path.join(tmp, "gate.md")
            code, out, _ = gate(golden("gate_base.json"), golden("gate_slower.json"), "--markdown", md)
            self.assertEqual(code, 1)
            self.assertRegex(out, r"\| `cujit/e2e_cubin/tiny` \| 20.1 ms \| 30.1 ms \| 1.500 \| "
                                  r"\[1.4\d\d, 1.5\d\d\] \|.*\| 9/9 \| slower \|")
            self.assertIn("- `cujit/e2e_cubin/tiny`: slower", out)
            with open(md, encoding="utf-8") as f:
                self.assertIn("FAIL: 1 slower", f.read())

    def test_a_threshold_the_interval_straddles_is_unclear_and_passes(self):
        code, out, _ = gate(golden("gate_base.json"), golden("gate_slower.json"), "--threshold", "0.5")
        self.assertEqual(code, 0, out)
        self.assertIn("| 9/9 | unclear |", out)  # [1.49, 1.51] reaches past 1.5, not wholly

    def test_three_repetitions_are_not_enough_data(self):
        code, out, _ = gate(golden("gate_3reps_base.json"), golden("gate_3reps_slower.json"))
        self.assertEqual(code, 1)
        self.assertIn("| 3/3 | not enough data |", out)
        self.assertNotIn("| same |", out)
        self.assertIn("- `cujit/e2e_cubin/tiny`: not enough data (3 / 3 repetitions; the gate needs 9 a side)", out)

    def test_five_repetitions_are_not_enough_data_either(self):
        code, out, _ = gate(golden("base.json"), golden("same.json"))
        self.assertEqual(code, 1)
        self.assertIn("0 slower, 0 missing, 0 errored, 25 not enough data", out)

    def test_identical_runs_pass(self):
        code, out, _ = gate(golden("gate_base.json"), golden("gate_base.json"))
        self.assertEqual(code, 0, out)
        self.assertIn("PASS: 0 slower, 0 missing, 0 errored, 0 not enough data; 3 same", out)

    def test_noise_within_the_threshold_passes(self):
        code, out, _ = gate(golden("gate_base.json"), golden("gate_same.json"))
        self.assertEqual(code, 0, out)
        self.assertIn("; 3 same", out)

    def test_missing_benchmarks_fail_by_name_on_either_side(self):
        code, out, _ = gate(golden("gate_base.json"), golden("gate_missing.json"))
        self.assertEqual(code, 1)
        self.assertIn("- `raw/e2e_cubin/tiny`: missing (not in the current run)", out)
        code, out, _ = gate(golden("gate_missing.json"), golden("gate_base.json"))
        self.assertEqual(code, 1)
        self.assertIn("- `raw/e2e_cubin/tiny`: missing (not in the baseline)", out)

    def test_errored_and_skipped_benchmarks_fail_by_name(self):
        code, out, _ = gate(golden("gate_base.json"), golden("gate_errored.json"))
        self.assertEqual(code, 1)
        self.assertIn("- `cujit/kernel_link/tiny/memory_hit`: error (current errored: LinkError: golden)", out)
        self.assertIn("- `raw/e2e_cubin/tiny`: error (current skipped: no CUDA device: golden)", out)
        self.assertIn("0 slower, 0 missing, 2 errored", out)
        code, out, _ = gate(golden("gate_errored.json"), golden("gate_base.json"))
        self.assertEqual(code, 1)
        self.assertIn("- `cujit/kernel_link/tiny/memory_hit`: error (baseline errored: LinkError: golden)", out)

    def test_a_zero_time_fails_by_name(self):
        doc = _doc("gate_same.json")
        for entry in doc["benchmarks"]:
            if entry["name"] == "raw/e2e_cubin/tiny/repeats:9" and entry["repetition_index"] == 4:
                entry["real_time"] = 0
        with tempfile.TemporaryDirectory() as tmp:
            code, out, _ = gate(golden("gate_base.json"), _write(tmp, "zero.json", doc))
        self.assertEqual(code, 1)
        self.assertIn("- `raw/e2e_cubin/tiny`: error (current a repetition took 0 s", out)

    def test_a_noisy_run_is_unclear_not_same(self):
        base = bench_json.Benchmark("x", samples=[1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.03, 0.97, 1.0])
        noisy = bench_json.Benchmark("x", samples=[0.95, 1.2, 1.0, 1.1, 0.9, 1.15, 1.05, 0.98, 1.12])
        row = compare.judge("x", base, noisy, 0.05)
        self.assertEqual(row.verdict, "unclear")
        self.assertTrue(row.low < 1.05 < row.high, row)

    def test_faster(self):
        base = bench_json.Benchmark("x", samples=[1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.03, 0.97, 1.0])
        fast = bench_json.Benchmark("x", samples=[t * 0.5 for t in base.samples])
        self.assertEqual(compare.judge("x", base, fast, 0.05).verdict, "faster")

    def test_bad_input_is_exit_2(self):
        code, _, err = gate(golden("base.json"), golden("wrong_schema.json"))
        self.assertEqual(code, 2)
        self.assertIn("cujit_schema", err)


# One case per run-record field the gate compares: (field, the value the current run gets).
REFUSALS = [("device", "NVIDIA H200"), ("driver_release", "575.57.08"), ("nvrtc_version", "12.9"),
            ("nvrtc_library", "/usr/local/cuda-12.9/lib64/libnvrtc.so.12"), ("nvjitlink_version", "12.9"),
            ("nvjitlink_library", "/usr/local/cuda-12.9/lib64/libnvJitLink.so.12"), ("cujit_mode", "quick"),
            ("vendor_cache", "vendor-cache-warm"), ("cuda_module_loading", "EAGER"),
            ("host_cpu_model", "Other CPU"), ("cujit_build_type", "Debug")]


class RefusalTest(unittest.TestCase):
    """Runs that differ in what their times depend on are exit 2 naming what differs."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_every_field_is_compared(self):
        self.assertEqual(sorted(compare.COMPARABLE_KEYS), sorted(key for key, _ in REFUSALS))

    def test_each_difference_is_refused_by_name(self):
        for key, value in REFUSALS:
            with self.subTest(field=key):
                doc = _doc("gate_same.json")
                doc["context"][key] = value
                code, out, err = gate(golden("gate_base.json"), _write(self.tmp.name, key + ".json", doc))
                self.assertEqual(code, 2, err)
                self.assertIn("cannot be compared", err)
                self.assertIn(f"(context.{key}) differs: baseline ", err)
                self.assertIn(repr(value), err)
                self.assertEqual(out, "")  # no table, no verdict

    def test_an_unrecorded_field_is_refused_by_name(self):
        for key, _ in REFUSALS:
            with self.subTest(field=key):
                doc = _doc("gate_same.json")
                del doc["context"][key]
                path = _write(self.tmp.name, "no_" + key + ".json", doc)
                code, _, err = gate(path, golden("gate_base.json"))
                self.assertEqual(code, 2, err)
                self.assertIn(f"(context.{key}) is not recorded in {path}", err)

    def test_every_difference_is_listed_at_once(self):
        code, _, err = gate(golden("base.json"), golden("peer.json"))
        self.assertEqual(code, 2)
        for key in compare.COMPARABLE_KEYS:
            self.assertIn(f"context.{key}", err)

    def test_allow_different_compares_and_says_so(self):
        doc = _doc("gate_same.json")
        doc["context"]["driver_release"] = "575.57.08"
        path = _write(self.tmp.name, "driver.json", doc)
        code, out, _ = gate(golden("gate_base.json"), path, "--allow-different", "driver_release")
        self.assertEqual(code, 0, out)
        self.assertIn("**Compared across different driver_release**: baseline '580.159.04', current '575.57.08'", out)
        doc["context"]["device"] = "other"
        code, _, err = gate(golden("gate_base.json"), _write(self.tmp.name, "two.json", doc),
                            "--allow-different", "driver_release")
        self.assertEqual(code, 2)
        self.assertIn("context.device", err)
        self.assertNotIn("context.driver_release", err)


class ReportTest(unittest.TestCase):
    def test_report_with_plots_and_ratios(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, out, _ = quiet(report.main, ["--out", tmp, golden("base.json"), golden("peer.json")])
            self.assertEqual(code, 0, out)
            # base.json is a plain <exe>.json of the older layout; its record says "cold".
            for png in ("cold_vs_cached-cold.png", "launch_per_kernel-cold.png", "reduce_throughput-cold.png",
                        "peers-cold.png"):
                path = os.path.join(tmp, png)
                self.assertTrue(os.path.getsize(path) > 1000, png)
            with open(os.path.join(tmp, "report.html"), encoding="utf-8") as f:
                page = f.read()
            self.assertIn("<code>e2e_cubin/tiny</code>", page)
            self.assertIn("1.052 unpaired", page)  # 20.1 ms / 19.1 ms over the raw floor, no pair entry
            self.assertIn("1.010 unpaired", page)  # reduce_into over CUB AOT
            self.assertIn("memory hit, cold (vendor cache off) run: 40 us", page)
            self.assertIn("golden GPU", page)
            with open(os.path.join(tmp, "report.md"), encoding="utf-8") as f:
                self.assertIn("| `e2e_cubin/tiny` | 20.1 ms ", f.read())

    def test_missing_data_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, _, _ = quiet(report.main, ["--out", tmp, golden("peer.json")])
            self.assertEqual(code, 0)
            with open(os.path.join(tmp, "report.html"), encoding="utf-8") as f:
                self.assertIn("No data for a plot", f.read())


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
    ("no_time_unit", _with(_delete(["benchmarks", 0, "time_unit"])), "benchmarks[0].time_unit is missing"),
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
        # The mutations below start from it: it must load as it is, and the gate judges it
        # (five repetitions: "not enough data", exit 1, never 2).
        code, out, err = quiet(compare.run, [golden("base.json"), golden("base.json")])
        self.assertEqual(code, 1, err)
        self.assertIn("not enough data", out)

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
        doc = _doc("gate_same.json")
        for entry in doc["benchmarks"]:
            entry["name"] = entry["run_name"] = "other/" + entry["name"]
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = quiet(compare.run, [golden("gate_base.json"), _write(tmp, "other.json", doc)])
        self.assertEqual(code, 2)
        self.assertIn("no benchmark is in both", err)

    def test_an_unwritable_markdown_is_exit_2_not_a_verdict(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = quiet(compare.run, [golden("gate_base.json"), golden("gate_slower.json"), "--markdown", tmp])
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


ROOT = os.path.dirname(os.path.dirname(HERE))

# The run record the benchmarks write into their JSON's context (docs/benchmarks.md, "Run
# record"), beside Google Benchmark's own fields.
RECORD_FIELDS = ["cujit_schema", "cujit_version", "cujit_git_commit", "cujit_git_tree", "cujit_source_digest",
                 "cujit_build_type",
                 "cujit_mode", "nvrtc_version", "nvrtc_library", "nvrtc_identity", "nvjitlink_version",
                 "nvjitlink_library", "nvjitlink_identity", "cccl_version", "device", "driver_version",
                 "driver_release", "vendor_cache", "cuda_module_loading", "host_cpu_model", "host_load_avg"]


def _build_dir():
    return os.environ.get("CUJIT_BUILD_DIR") or os.path.join(ROOT, "build", "default")


def _source_dir(build):
    """The source tree `build` was configured from (its CMakeCache.txt), else this one."""
    try:
        with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:INTERNAL="):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ROOT


def _stale(binary, source):
    """Why `binary` cannot be used (not built, or older than the record's sources), or None."""
    if not os.access(binary, os.X_OK):
        return f"no bench_jit built at {binary} (set CUJIT_BUILD_DIR)"
    sources = [os.path.join(source, "bench", "support", name)
               for name in ("run_record.cpp", "run_record.hpp", "bench_main.cpp")]
    newest = max((os.path.getmtime(p) for p in sources if os.path.exists(p)), default=0)
    if os.path.getmtime(binary) < newest:
        return f"{binary} is older than bench/support's run-record sources: rebuild it"
    return None


def _git_head(source):
    try:
        done = subprocess.run(["git", "-C", source, "rev-parse", "--verify", "HEAD"], capture_output=True,
                              text=True, timeout=30, check=False)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _first_model_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return None


class RunRecordTest(unittest.TestCase):
    """bench_jit (CPU only, one short benchmark, quick mode) writes the whole run record, with
    values that follow the environment, and two such runs are comparable for the gate unless
    the environment differs. The build is $CUJIT_BUILD_DIR, else build/default (what
    ci/test.sh builds before it runs these tests); its commit is its source tree's."""

    @classmethod
    def setUpClass(cls):
        build = _build_dir()
        cls.bench_jit = os.path.join(build, "bench", "bench_jit")
        cls.source = _source_dir(build)
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        stale = _stale(self.bench_jit, self.source)
        if stale:
            self.skipTest(stale)

    def run_bench(self, name, env_set=None, env_unset=("CUDA_CACHE_DISABLE", "CUDA_MODULE_LOADING", "CUJIT_GIT_COMMIT"),
                  args=()):
        env = {k: v for k, v in os.environ.items() if k not in env_unset and k != "CUJIT_BENCH_QUICK"}
        env.update(env_set or {})
        out = os.path.join(self.tmp.name, name + ".json")
        done = subprocess.run([self.bench_jit, "--cujit-quick", "--benchmark_filter=^cujit/kernel_link/tiny/memory_hit",
                               "--benchmark_min_time=0.01", f"--benchmark_out={out}", "--benchmark_out_format=json",
                               *args], env=env, capture_output=True, text=True, timeout=300, check=False)
        return done, out

    def record(self, name, **kwargs):
        head_before = _git_head(self.source)  # and after: someone may commit meanwhile
        done, out = self.run_bench(name, **kwargs)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        run = bench_json.load(out)
        return run, {head_before, _git_head(self.source)} - {None}

    def test_a_named_commit_wins_over_the_trees_own(self):
        # The GPU machine's copy is a repository of its own: the caller names the commit.
        named = "0123456789abcdef0123456789abcdef01234567"
        run, _ = self.record("named", env_set={"CUJIT_GIT_COMMIT": named})
        self.assertEqual(run.context["cujit_git_commit"], named)
        self.assertEqual(run.context["cujit_git_tree"], "unknown")
        done, out = self.run_bench("bad_name", env_set={"CUJIT_GIT_COMMIT": "not a hash; rm -rf"})
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("CUJIT_GIT_COMMIT is not a lower-case hex commit hash; ignored", done.stderr)
        self.assertNotEqual(bench_json.load(out).context["cujit_git_commit"], "not a hash; rm -rf")

    def test_the_source_digest_is_what_bench_sh_computed(self):
        digest = subprocess.run([sys.executable, os.path.join(self.source, "ci", "source_digest.py"), "--root",
                                 self.source], capture_output=True, text=True, check=True).stdout.strip()
        run, _ = self.record("digest", env_set={"CUJIT_SOURCE_DIGEST": digest})
        self.assertEqual(run.context["cujit_source_digest"], digest)
        # Not set (a bare run of the executable) or not a digest: "unknown", never the text.
        bare, _ = self.record("no_digest", env_unset=["CUJIT_SOURCE_DIGEST"])
        self.assertEqual(bare.context["cujit_source_digest"], "unknown")
        done, out = self.run_bench("bad_digest", env_set={"CUJIT_SOURCE_DIGEST": "$(reboot)"})
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("CUJIT_SOURCE_DIGEST is not 16 lower-case hex digits", done.stderr)
        self.assertEqual(bench_json.load(out).context["cujit_source_digest"], "unknown")

    def test_every_field_is_recorded_and_follows_the_environment(self):
        run, heads = self.record("warm")
        context = run.context
        for key in RECORD_FIELDS + compare.COMPARABLE_KEYS:
            with self.subTest(field=key):
                self.assertIsInstance(context.get(key), str, f"context.{key} missing in {run.path}")
                self.assertNotEqual(context[key], "", key)
        self.assertEqual(context["cujit_mode"], "quick")
        self.assertEqual(context["vendor_cache"], "vendor-cache-warm")
        self.assertEqual(context["cuda_module_loading"], "unset")
        if heads:  # a source tree with git: the commit at run time, in full
            self.assertIn(context["cujit_git_commit"], heads)
            self.assertIn(context["cujit_git_tree"], ("clean", "modified"))
        else:
            self.assertRegex(context["cujit_git_commit"], r"^([0-9a-f]{7,64}|unknown)$")
        # The driver's release ("580.159.04"), never the CUDA version it supports ("13.0").
        self.assertRegex(context["driver_release"], r"^(\d+\.\d+(\.\d+)*|none|unknown)$")
        if (not os.path.exists("/proc/driver/nvidia/version") and not ctypes.util.find_library("nvidia-ml")
                and not ctypes.util.find_library("cuda")):
            self.assertEqual(context["driver_release"], "none")
        for library, stem in (("nvrtc_library", "libnvrtc"), ("nvjitlink_library", "libnvJitLink")):
            self.assertTrue(os.path.isabs(context[library]) and os.path.isfile(context[library]), context[library])
            self.assertTrue(os.path.basename(context[library]).startswith(stem), context[library])
            self.assertIn(f"path={context[library]};", context[library.replace('_library', '_identity')])
        self.assertRegex(context["nvrtc_version"], r"^\d+\.\d+$")
        if _first_model_name():
            self.assertEqual(context["host_cpu_model"], _first_model_name())
        self.assertRegex(context["host_load_avg"], r"^\d+\.\d\d \d+\.\d\d \d+\.\d\d$")

    def test_vendor_cache_and_module_loading_are_read_from_the_environment(self):
        run, _ = self.record("cold", env_set={"CUDA_CACHE_DISABLE": "1", "CUDA_MODULE_LOADING": "EAGER"})
        self.assertEqual(run.context["vendor_cache"], "cold")
        self.assertEqual(run.context["cuda_module_loading"], "EAGER")
        run, _ = self.record("zero", env_set={"CUDA_CACHE_DISABLE": "0", "CUDA_MODULE_LOADING": 'a"b'})
        self.assertEqual(run.context["vendor_cache"], "vendor-cache-warm")
        self.assertEqual(run.context["cuda_module_loading"], "invalid")  # never written unescaped

    def test_two_runs_are_comparable_unless_the_environment_differs(self):
        reps = {"CUJIT_BENCH_REPETITIONS": "9"}
        first, _ = self.record("first", env_set=reps)
        second, _ = self.record("second", env_set=reps)
        self.assertEqual(len(first.benchmarks["cujit/kernel_link/tiny/memory_hit"].samples), 9)
        code, out, err = gate(first.path, second.path)
        self.assertIn(code, (0, 1), err)  # a verdict (timing on a shared machine may vary), not a refusal
        self.assertRegex(out, r"\| `cujit/kernel_link/tiny/memory_hit` \|.*\| 9/9 \| (same|unclear|slower|faster) \|")
        cold, _ = self.record("cold_for_gate", env_set=dict(reps, CUDA_CACHE_DISABLE="1"))
        code, _, err = gate(first.path, cold.path)
        self.assertEqual(code, 2)
        self.assertIn("(context.vendor_cache) differs: baseline 'vendor-cache-warm', current 'cold'", err)

    def test_a_bad_repetition_count_is_refused(self):
        for args, env in (((), {"CUJIT_BENCH_REPETITIONS": "nine"}), (("--cujit-repetitions=0",), {})):
            with self.subTest(args=args, env=env):
                done, _ = self.run_bench("bad", env_set=env, args=args)
                self.assertEqual(done.returncode, 2)
                self.assertIn("must be a whole number from 1 to 1000", done.stderr)


class QuickBenchJsonTest(unittest.TestCase):
    """The JSON ci/bench.sh --quick wrote (ci/test.sh: build/default/bench-quick) carries the
    run record in every file; skipped when there is none or it is older than the build."""

    def test_the_quick_run_carries_the_record(self):
        build = _build_dir()
        out = os.path.join(build, "bench-quick")
        files = [os.path.join(out, name) for name in ("bench_jit-cold.json", "bench_reduce-cold.json")]
        binary = os.path.join(build, "bench", "bench_jit")
        stale = _stale(binary, _source_dir(build))
        if stale:
            self.skipTest(stale)
        if not all(os.path.isfile(f) for f in files):
            self.skipTest(f"no quick benchmark JSON in {out}")
        if min(os.path.getmtime(f) for f in files) < os.path.getmtime(binary):
            self.skipTest(f"the JSON in {out} is older than {binary}")
        for path in files:
            context = bench_json.load(path).context
            for key in RECORD_FIELDS:
                with self.subTest(file=path, field=key):
                    self.assertIsInstance(context.get(key), str)
            self.assertEqual(context["cujit_mode"], "quick")
            self.assertEqual(context["vendor_cache"], "cold")  # CI sees what a fresh machine sees


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


def _pair_doc(ratio, low, high, name="pair/e2e_cubin/tiny"):
    """gate_base.json's run record with one paired entry of these counters."""
    doc = _doc("gate_base.json")
    doc["benchmarks"] = [{"name": name + "/iterations:1/manual_time", "run_name": name + "/iterations:1/manual_time",
                          "run_type": "iteration", "iterations": 1, "real_time": 20.0, "cpu_time": 20.0,
                          "time_unit": "ms", "ratio": ratio, "ratio_low": low, "ratio_high": high,
                          "rounds": 31, "cujit_s": 0.02, "floor_s": 0.02 / ratio, "same_output": 1}]
    return doc


class PairGateTest(unittest.TestCase):
    """Paired entries are judged on their cujit / floor ratio, one entry a run."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def gate_pairs(self, baseline, current, *extra):
        return gate(_write(self.tmp.name, "b.json", baseline), _write(self.tmp.name, "c.json", current), *extra)

    def test_overhead_that_grew_past_the_threshold_fails(self):
        code, out, _ = self.gate_pairs(_pair_doc(1.02, 1.00, 1.04), _pair_doc(1.30, 1.27, 1.33))
        self.assertEqual(code, 1, out)
        self.assertIn("| `pair/e2e_cubin/tiny` | 1.020x floor | 1.300x floor | 1.275 | [1.221, 1.330] |", out)
        self.assertIn("| paired | slower |", out)

    def test_a_single_paired_entry_is_enough_data(self):
        code, out, _ = self.gate_pairs(_pair_doc(1.02, 1.00, 1.04), _pair_doc(1.02, 1.01, 1.03))
        self.assertEqual(code, 0, out)
        self.assertIn("| paired | same |", out)
        self.assertNotIn("not enough data", out.split("**")[2])

    def test_wide_intervals_are_unclear_not_same(self):
        code, out, _ = self.gate_pairs(_pair_doc(1.02, 0.90, 1.15), _pair_doc(1.05, 0.95, 1.20))
        self.assertEqual(code, 0, out)
        self.assertIn("| paired | unclear |", out)

    def test_less_overhead_is_faster(self):
        code, out, _ = self.gate_pairs(_pair_doc(1.50, 1.45, 1.55), _pair_doc(1.01, 1.00, 1.02))
        self.assertEqual(code, 0, out)
        self.assertIn("| paired | faster |", out)

    def test_an_entry_without_its_interval_or_with_a_broken_one_is_an_error(self):
        broken = _pair_doc(1.0, 1.1, 1.2)  # the interval does not hold the ratio
        code, out, _ = self.gate_pairs(_pair_doc(1.0, 0.99, 1.01), broken)
        self.assertEqual(code, 1, out)
        self.assertIn("interval that does not hold its ratio", out)
        bare = _pair_doc(1.0, 0.99, 1.01)
        del bare["benchmarks"][0]["ratio_low"]
        code, out, _ = self.gate_pairs(_pair_doc(1.0, 0.99, 1.01), bare)
        self.assertEqual(code, 1, out)
        self.assertIn("current has no ratio_low: not a paired entry", out)

    def test_an_errored_pair_fails(self):
        errored = _pair_doc(1.0, 0.99, 1.01)
        entry = errored["benchmarks"][0]
        entry.update({"error_occurred": True, "error_message": "the floor does different work: sizes differ"})
        code, out, _ = self.gate_pairs(_pair_doc(1.0, 0.99, 1.01), errored)
        self.assertEqual(code, 1, out)
        self.assertIn("the floor does different work", out)


class FloorMovedTooTest(unittest.TestCase):
    """A cujit/X slowdown that its pair/X shows the floor shared is the machine's, not cujit's."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def runs(self, pair_current):
        base, slow = _doc("gate_base.json"), _doc("gate_slower.json")
        name = "pair/e2e_cubin/tiny"
        base["benchmarks"] += _pair_doc(1.02, 1.00, 1.04, name)["benchmarks"]
        slow["benchmarks"] += _pair_doc(*pair_current, name)["benchmarks"]
        return gate(_write(self.tmp.name, "b.json", base), _write(self.tmp.name, "c.json", slow))

    def test_a_slowdown_the_floor_shared_passes_and_says_so(self):
        code, out, _ = self.runs((1.03, 1.01, 1.05))
        self.assertEqual(code, 0, out)
        self.assertIn("| floor moved too |", out)
        self.assertIn("1 slower with their floor", out)

    def test_a_slowdown_the_floor_did_not_share_fails_twice(self):
        code, out, _ = self.runs((1.53, 1.50, 1.56))
        self.assertEqual(code, 1, out)
        self.assertIn("- `cujit/e2e_cubin/tiny`: slower", out)
        self.assertIn("- `pair/e2e_cubin/tiny`: slower", out)


if __name__ == "__main__":
    unittest.main()
