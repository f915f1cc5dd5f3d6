"""The report's tables and plots on a synthetic results directory (golden/results/): paired
ratios with their intervals, errors shown as errors, cold and vendor-cache-warm columns taken
by the run record's vendor_cache, exec to first result with a missing peer, the L2 marking,
and the history kept per device."""
import io
import json
import os
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import history  # noqa: E402
import report  # noqa: E402
from cujit_reports import bench_json, figures, tables  # noqa: E402

sys.path.insert(0, HERE)
from test_reports import _write  # noqa: E402  (only the helper: its tests run from their own module)

RESULTS = os.path.join(HERE, "golden", "results")
COLD, WARM = "bench_jit-cold.json", "bench_jit-vendor-cache-warm.json"
FIRST, REDUCE = "first_result.json", "bench_reduce-cold.json"
ALL = [COLD, WARM, FIRST, REDUCE]
DEVICE = "NVIDIA H100 80GB HBM3"


def result(name):
    return os.path.join(RESULTS, name)


def quiet(fn, *args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = fn(*args)
    return code, out.getvalue(), err.getvalue()


def markdown(*paths):
    code, out, err = quiet(report.main, ["--markdown", "-", *paths])
    if code != 0:
        raise AssertionError(f"report exit {code}: {err}")
    return out


def table(text, title_part):
    """The rows of the markdown table whose heading contains title_part, as dicts by header."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("### ") and title_part in line)
    body = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            body.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
        elif body:
            break
    headers = body[0]
    return [dict(zip(headers, cells)) for cells in body[2:]]


def row(rows, figure):
    return next(r for r in rows if r[next(iter(r))].startswith(f"`{figure}`") or r[next(iter(r))].startswith(figure))


COLD_MEDIAN = "cold (vendor cache off): cujit median"
COLD_RATIO = "cold (vendor cache off): cujit / floor [95% interval]"
WARM_MEDIAN = "vendor-cache-warm: cujit median"
WARM_RATIO = "vendor-cache-warm: cujit / floor [95% interval]"


def _load_doc(name):
    with open(result(name), encoding="utf-8") as f:
        return json.load(f)




class ScenarioTableTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.text = markdown(*map(result, ALL))
        cls.tiny = table(cls.text, "Scenario `tiny`")

    def test_pair_entries_show_the_ratio_with_its_interval_in_each_state(self):
        r = row(self.tiny, "nvrtc/tiny/ptx")
        self.assertEqual(r[COLD_MEDIAN], "38.1 ms ±0.6% (cv, n=5)")
        self.assertEqual(r[COLD_RATIO], "1.021 [0.990, 1.050], 30 rounds; floor 37.3 ms ±1.0% (95% CI, 30 rounds)")
        self.assertEqual(r[WARM_MEDIAN], "20.1 ms ±1.1% (cv, n=5)")
        self.assertEqual(r[WARM_RATIO], "0.985 [0.962, 1.004], 40 rounds; floor 20.4 ms ±0.7% (95% CI, 40 rounds)")

    def test_a_pair_alone_gives_the_cujit_figure_and_says_what_was_not_checked(self):
        r = row(self.tiny, "module_load/tiny")
        self.assertEqual(r[WARM_MEDIAN], "29.1 us ±2.0% (95% CI, 50 rounds)")
        self.assertIn("1.130 [1.080, 1.190], 50 rounds; output check not recorded", r[WARM_RATIO])
        self.assertEqual(r[COLD_MEDIAN], "not in this run")  # only the warm run has it

    def test_an_errored_pair_is_shown_as_an_error(self):
        r = row(table(self.text, "Scenario `nrt`"), "e2e_cubin/nrt")
        message = "error: floor output differs from cujit's: cubin 4120 bytes vs 4096"
        self.assertEqual(r[COLD_MEDIAN], message)
        self.assertEqual(r[COLD_RATIO], message)
        self.assertTrue(r[WARM_RATIO].startswith("1.090 [1.050, 1.120], 25 rounds"), r[WARM_RATIO])

    def test_an_unpaired_ratio_says_it_has_no_interval(self):
        r = row(self.tiny, "e2e_cubin/tiny")
        self.assertTrue(r[COLD_RATIO].startswith("1.026 unpaired (medians of separate benchmarks, no interval)"))

    def test_cached_figures_name_their_cache_and_run(self):
        cell = row(self.tiny, "e2e_cubin/tiny")["cached (a hit in cujit's cache), by run"]
        self.assertEqual(cell, "memory hit, cold (vendor cache off) run: 33 us ±3.0% (cv, n=3); "
                               "memory hit, vendor-cache-warm run: 31 us ±1.6% (cv, n=3)")

    def test_tables_name_device_and_mode(self):
        self.assertIn(f"### Scenario `tiny` ({DEVICE}, full mode)", self.text)
        self.assertIn(f"## cujit benchmarks: {DEVICE}, full mode, cold (vendor cache off), vendor-cache-warm", self.text)

    def test_columns_follow_the_record_not_the_file_name(self):
        # The cold run's JSON under the warm file's name and the other way round: the columns
        # still come from context.vendor_cache.
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(result(COLD), os.path.join(tmp, WARM))
            shutil.copy(result(WARM), os.path.join(tmp, COLD))
            text = markdown(os.path.join(tmp, WARM), os.path.join(tmp, COLD))
        r = row(table(text, "Scenario `tiny`"), "nvrtc/tiny/ptx")
        self.assertEqual(r[COLD_MEDIAN], "38.1 ms ±0.6% (cv, n=5)")
        self.assertEqual(r[WARM_MEDIAN], "20.1 ms ±1.1% (cv, n=5)")

    def test_a_run_without_the_state_gets_its_own_column(self):
        doc = _load_doc(WARM)
        del doc["context"]["vendor_cache"]
        with tempfile.TemporaryDirectory() as tmp:
            text = markdown(result(COLD), _write(tmp, "bench_jit.json", doc))
        r = row(table(text, "Scenario `tiny`"), "nvrtc/tiny/ptx")
        self.assertEqual(r["vendor cache not recorded: cujit median"], "20.1 ms ±1.1% (cv, n=5)")
        self.assertEqual(r[COLD_MEDIAN], "38.1 ms ±0.6% (cv, n=5)")

    def test_an_unknown_state_or_two_devices_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            doc = _load_doc(WARM)
            doc["context"]["vendor_cache"] = "lukewarm"
            code, _, err = quiet(report.main, ["--markdown", "-", _write(tmp, "odd.json", doc)])
            self.assertEqual(code, 2)
            self.assertIn("context.vendor_cache is 'lukewarm'", err)
            doc = _load_doc(WARM)
            doc["context"]["device"] = "NVIDIA H200"
            other = _write(tmp, "h200.json", doc)
            code, _, err = quiet(report.main, ["--markdown", "-", result(COLD), other])
            self.assertEqual(code, 2)
            self.assertIn("more than one device", err)
            self.assertIn("'NVIDIA H200'", err)

    def test_markdown_file_and_out_dir_agree(self):
        with tempfile.TemporaryDirectory() as tmp:
            md = os.path.join(tmp, "figures.md")
            self.assertEqual(quiet(report.main, ["--markdown", md, *map(result, ALL)])[0], 0)
            with open(md, encoding="utf-8") as f:
                self.assertEqual(f.read(), self.text)

    def test_a_pair_of_several_entries_reads_one_entry_whole(self):
        b = bench_json.Benchmark("pair/x", counters={"ratio": [1.3, 1.0, 1.1], "ratio_low": [1.2, 0.9, 1.05],
                                                     "ratio_high": [1.4, 1.1, 1.15], "same_output": [1, 1, 0]})
        p = figures.pair(b)
        self.assertEqual((p.ratio, p.low, p.high, p.same_output), (1.1, 1.05, 1.15, False))
        self.assertIn("outputs NOT checked identical", tables.fmt_pair(p))


class FirstResultTableTest(unittest.TestCase):
    def test_five_programs_with_the_missing_peer_shown(self):
        rows = table(markdown(result(FIRST)), "Exec to first result, cold (vendor cache off)")
        self.assertEqual([r["program"] for r in rows],
                         ["raw_driver (the floor)", "cujit", "cupy", "numba_cuda", "cuda_core"])
        cujit = row(rows, "cujit")
        self.assertEqual(cujit["whole process median"], "219 ms ±0.7% (cv, n=3)")
        self.assertEqual(cujit["context median"], "190 ms ±0.4% (cv, n=3)")
        self.assertEqual(cujit["build + launch median"], "29 ms ±5.2% (cv, n=3)")
        self.assertTrue(cujit["whole process / raw_driver [95% interval]"].startswith("1.043 [1.012, 1.071], 15 rounds"))
        for cell in row(rows, "cupy").values():
            if cell != "cupy":
                self.assertEqual(cell, "not installed: cupy (No module named 'cupy')")
        self.assertEqual(row(rows, "raw_driver")["whole process / raw_driver [95% interval]"], "1 (the floor)")

    def test_a_program_without_entries_is_missing_not_dropped(self):
        doc = _load_doc(FIRST)
        doc["benchmarks"] = [e for e in doc["benchmarks"] if "/cuda_core/" not in e["name"]]
        with tempfile.TemporaryDirectory() as tmp:
            rows = table(markdown(_write(tmp, FIRST, doc)), "Exec to first result")
        r = row(rows, "cuda_core")
        self.assertEqual(r["whole process median"], "missing: no entry")
        self.assertEqual(r["whole process / raw_driver [95% interval]"], "missing: no pair entry")


class L2Test(unittest.TestCase):
    def points(self, doc):
        with tempfile.TemporaryDirectory() as tmp:
            run = bench_json.load(_write(tmp, REDUCE, doc))
        return report.reduce_points(run.benchmarks), figures.l2_bytes(run.context)

    def test_the_recorded_l2_size_decides(self):
        points, (l2, source) = self.points(_load_doc(REDUCE))
        self.assertEqual((l2, source), (8 << 20, "context.device_l2_bytes"))
        # reduce of 2^20 int32 (4 MiB) and the copy of them (8 MiB, read + written) fit.
        self.assertEqual(report.fits_in_l2(points, l2), [4 << 20, 8 << 20])

    def test_the_device_table_when_the_record_has_no_size(self):
        doc = _load_doc(REDUCE)
        del doc["context"]["device_l2_bytes"]
        points, (l2, source) = self.points(doc)
        self.assertEqual(l2, 50 << 20)
        self.assertIn("H100", source)
        self.assertEqual(report.fits_in_l2(points, l2), [4 << 20, 8 << 20, 16 << 20, 32 << 20])
        self.assertEqual(figures.l2_bytes({"device": "NVIDIA H200"})[0], 50 << 20)

    def test_an_unknown_device_marks_nothing_and_says_so(self):
        doc = _load_doc(REDUCE)
        del doc["context"]["device_l2_bytes"]
        doc["context"]["device"] = "NVIDIA RTX A1000"
        points, (l2, source) = self.points(doc)
        self.assertIsNone(l2)
        self.assertEqual(report.fits_in_l2(points, l2), [])
        with tempfile.TemporaryDirectory() as tmp:
            text = markdown(_write(tmp, REDUCE, doc))
        self.assertIn("L2: the L2 size of 'NVIDIA RTX A1000' is not known; sizes whose working set fits in L2 "
                      "are not marked.", text)
        self.assertNotIn("fits in L2:", text)

    def test_a_malformed_size_is_refused(self):
        with self.assertRaises(bench_json.SchemaError):
            figures.l2_bytes({"device_l2_bytes": "50 MiB"}, "x.json")

    def test_table_rows_are_marked(self):
        rows = table(markdown(result(REDUCE)), "Scenario `reduce_into`")
        labels = [next(iter(r.values())) for r in rows]
        self.assertIn("`reduce_into/int32_sum/1048576` (working set 4 MiB fits in L2: a cache hit, not HBM bandwidth)",
                      labels)
        self.assertIn("`reduce_into/int32_sum/4194304`", labels)  # 16 MiB: past the recorded 8 MiB

    def test_every_type_is_set_against_its_floor_and_sized_by_its_items(self):
        """bench_reduce measures every reduce type; each row has its own type's CUB floor, and
        without a bytes counter the working set is n times that type's item size."""
        doc = _load_doc(REDUCE)
        extra = []
        for b in doc["benchmarks"]:
            if "int32_sum/" not in b["name"]:
                continue
            for type_name, size in (("int8", 1), ("float64", 8)):
                copy = dict(b, name=b["name"].replace("int32_sum", f"{type_name}_sum"),
                            run_name=b["run_name"].replace("int32_sum", f"{type_name}_sum"))
                copy.pop("bytes", None)
                extra.append(copy)
        doc["benchmarks"].extend(extra)
        with tempfile.TemporaryDirectory() as tmp:
            rows = table(markdown(_write(tmp, REDUCE, doc)), "Scenario `reduce_into`")
        by_label = {next(iter(r.values())).split("`")[1]: r for r in rows}
        for type_name in ("int8", "int32", "float64"):
            for n in (1048576, 4194304, 67108864):
                with self.subTest(type=type_name, n=n):
                    row = by_label[f"reduce_into/{type_name}_sum/{n}"]
                    self.assertIn("unpaired", list(row.values())[2])
        self.assertNotIn("other", [tables.row_key(f"aot/cub_device_reduce/{t}_sum/1")[0] for t in ("int8", "float64")])
        # 2^20 int8 is 1 MiB and 2^22 is 4 MiB (within the recorded 8 MiB); 2^22 float64 is 32 MiB.
        labels = [next(iter(r.values())) for r in rows]
        self.assertIn("`reduce_into/int8_sum/4194304` (working set 4 MiB fits in L2: a cache hit, not HBM bandwidth)",
                      labels)
        self.assertIn("`reduce_into/float64_sum/4194304`", labels)

    def test_throughput_comes_with_its_noise(self):
        run = bench_json.load(result(REDUCE))
        for label, series in report.reduce_points(run.benchmarks):
            for size, rate, error in series:
                with self.subTest(series=label, size=size):
                    self.assertGreater(error, 0)
                    self.assertGreater(rate, 0)


class PlotTest(unittest.TestCase):
    def test_every_plot_names_device_mode_and_state_and_marks_l2(self):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        titles = []
        original = report._save

        def recording(fig, ax, title, caption, out_dir, name, plt_, notes=()):
            titles.append((name, caption, tuple(notes)))
            return original(fig, ax, title, caption, out_dir, name, plt_, notes)

        report._save = recording
        try:
            runs = [bench_json.load(result(name)) for name in ALL]
            with tempfile.TemporaryDirectory() as tmp:
                drawn, marked = report.plots(runs, tmp, plt)
                self.assertTrue(all(os.path.getsize(p) > 1000 for _, p in drawn if p))
        finally:
            report._save = original
        self.assertEqual(sorted(n for n, _, _ in titles),
                         ["cold_vs_cached-cold.png", "cold_vs_cached-vendor-cache-warm.png", "reduce_throughput-cold.png",
                          "reduce_vs_cub-cold.png"])
        for name, caption, _ in titles:
            state = "vendor-cache-warm" if "warm" in name else "cold (vendor cache off)"
            self.assertEqual(caption, f"{DEVICE}, full mode, {state}")
        self.assertEqual(marked["cold"], [4 << 20, 8 << 20])
        notes = dict((n, notes) for n, _, notes in titles)["reduce_throughput-cold.png"]
        self.assertIn("L2 8 MiB from context.device_l2_bytes", notes)


class HistoryByDeviceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        doc = _load_doc(COLD)
        doc["context"]["device"] = "NVIDIA H200"
        self.h200 = _write(self.tmp.name, "h200-" + COLD, doc)
        self.path = os.path.join(self.tmp.name, "history.jsonl")

    def lines(self):
        return history.read(self.path)

    def test_one_line_per_state_and_no_line_mixes_devices(self):
        self.assertEqual(quiet(history.main, ["append", self.path, result(COLD), result(WARM)])[0], 0)
        code, _, err = quiet(history.main, ["append", self.path, result(COLD), self.h200])
        self.assertEqual(code, 2)
        self.assertIn("more than one device", err)
        self.assertEqual(quiet(history.main, ["append", self.path, self.h200])[0], 0)
        lines = self.lines()
        self.assertEqual([(l["device"], l["vendor_cache"]) for l in lines],
                         [(DEVICE, "cold"), (DEVICE, "vendor-cache-warm"), ("NVIDIA H200", "cold")])
        self.assertEqual(lines[0]["ratios"]["pair/nvrtc/tiny/ptx"], [1.021, 0.99, 1.05])
        self.assertAlmostEqual(lines[1]["medians"]["cujit/nvrtc/tiny/ptx"], 20.1e-3)

    def test_series_and_plots_are_per_device(self):
        for files in ([result(COLD)], [self.h200], [result(COLD)]):
            self.assertEqual(quiet(history.main, ["append", self.path, *files])[0], 0)
        by_device = history.series(self.lines(), "cujit/nvrtc/tiny/ptx")
        self.assertEqual(sorted(by_device), [DEVICE, "NVIDIA H200"])
        self.assertEqual([p[0] for p in by_device[DEVICE][("full", "cold (vendor cache off)")]], [0, 2])
        self.assertEqual([p[0] for p in by_device["NVIDIA H200"][("full", "cold (vendor cache off)")]], [1])
        point = by_device[DEVICE][("full", "cold (vendor cache off)")][0]
        self.assertGreater(point[2], 0)  # the noise travels with the median
        ratio = history.series(self.lines(), "pair/nvrtc/tiny/ptx")[DEVICE][("full", "cold (vendor cache off)")][0]
        self.assertAlmostEqual(ratio[2], 1.021 - 0.990)
        code, out, _ = quiet(history.main, ["plot", self.path, "--out", os.path.join(self.tmp.name, "plots")])
        self.assertEqual(code, 0)
        self.assertIn(os.path.join("NVIDIA_H100_80GB_HBM3", "cujit_nvrtc_tiny_ptx.png"), out)
        self.assertIn(os.path.join("NVIDIA_H200", "cujit_nvrtc_tiny_ptx.png"), out)


if __name__ == "__main__":
    unittest.main()


class BenchmarkBuildsTest(unittest.TestCase):
    """The run line says how Google Benchmark was built, and whether that build can reach a
    time: generated runs mixing self-timed (/manual_time) and own-clock entries, with each
    library build type, read back from JSON as the report reads them."""

    def test_the_line_counts_own_clock_benchmarks_exactly(self):
        import random
        rng = random.Random(20261127)
        with tempfile.TemporaryDirectory() as tmp:
            for case in range(60):
                library = rng.choice(["debug", "release", None])
                entries, own_clock = [], set()
                for i in range(rng.randint(1, 6)):
                    manual = rng.random() < 0.6
                    name = f"family{i}/{rng.randint(1, 9)}" + ("/manual_time" if manual else "")
                    for repetition in range(rng.randint(1, 3)):
                        entries.append({"name": name, "run_name": name, "run_type": "iteration",
                                        "repetitions": 3, "repetition_index": repetition,
                                        "real_time": 1.0 + repetition, "time_unit": "us"})
                    if not manual:
                        own_clock.add(bench_json.base_name(name))
                context = {"cujit_schema": "1", "cujit_build_type": "Release"}
                if library:
                    context["library_build_type"] = library
                path = _write(tmp, f"run{case}.json", {"context": context, "benchmarks": entries})
                run = bench_json.load(path)
                line = tables.benchmark_builds(run)
                self.assertIn("cujit Release build", line)
                if library is None:
                    self.assertIn("build not recorded", line)
                    continue
                self.assertIn(f"Google Benchmark library {library}", line)
                if library != "debug":
                    self.assertNotIn("(", line)
                elif own_clock:
                    self.assertIn(f"timing {len(own_clock)} of {len(run.benchmarks)} benchmarks with its own clock",
                                  line)
                else:
                    self.assertIn("each benchmark times itself", line)
