"""reduce_into against CUB per type: the table's cells from small synthetic runs whose ratios
can be checked by hand, the goal marks on either side of 2^22, the figure, runs with only
some types or none, and the per-type ratios in the history."""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import history  # noqa: E402
import report  # noqa: E402
from cujit_reports import bench_json, reduce_vs_cub, tables  # noqa: E402

sys.path.insert(0, HERE)
from test_report_tables import markdown, quiet, result, table  # noqa: E402

TITLE = "reduce_into vs AOT CUB per type"
DEVICE, COLD = "NVIDIA H100 80GB HBM3", ("full", "cold (vendor cache off)")
# Five repetitions whose median is the given time and whose cv is about 0.7%.
SPREAD = (0.99, 1.0, 1.0, 1.0, 1.01)


def _entries(name, median_us):
    full = name + "/iterations:30/repeats:5/manual_time"
    return [{"name": full, "run_name": full, "run_type": "iteration", "repetitions": 5, "repetition_index": i,
             "iterations": 30, "real_time": median_us * factor, "cpu_time": 10.0, "time_unit": "us"}
            for i, factor in enumerate(SPREAD)]


def reduce_run(directory, cells, name="bench_reduce-cold.json"):
    """A bench_reduce run of the golden record with, for each (type, n): (cujit us, CUB us),
    either None to leave that side out; its path."""
    with open(result("bench_reduce-cold.json"), encoding="utf-8") as f:
        doc = json.load(f)
    doc["benchmarks"] = []
    for (type_name, n), (cujit_us, cub_us) in cells.items():
        if cujit_us is not None:
            doc["benchmarks"] += _entries(reduce_vs_cub.cujit_name(type_name, n), cujit_us)
        if cub_us is not None:
            doc["benchmarks"] += _entries(reduce_vs_cub.cub_name(type_name, n), cub_us)
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def goal_rows(cells):
    with tempfile.TemporaryDirectory() as tmp:
        return table(markdown(reduce_run(tmp, cells)), TITLE)


def by_type(rows):
    return {r["type"]: r for r in rows}


class GoalTableTest(unittest.TestCase):
    def test_the_cell_is_cub_over_cujit_and_a_miss_is_marked(self):
        rows = goal_rows({("int8", 1 << 16): (1.25, 1.0), ("int8", 1 << 28): (100.0, 100.0),
                          ("int32", 1 << 16): (1.0, 1.1)})
        self.assertEqual(by_type(rows)["int8"], {"type": "int8", "2^16": "80.0% ✗", "2^28": "100.0%"})
        self.assertEqual(by_type(rows)["int32"]["2^16"], "110.0%")  # CUB slower: above 100%
        self.assertEqual(by_type(rows)["int32"]["2^28"], tables.NOT_IN_RUN)

    def test_the_goal_is_98_percent_from_2_22_and_90_below(self):
        self.assertEqual(reduce_vs_cub.goal((1 << 22) - 1), 0.90)
        self.assertEqual(reduce_vs_cub.goal(1 << 22), 0.98)
        rows = goal_rows({("int32", 1 << 21): (1.0, 0.95), ("int32", 1 << 22): (1.0, 0.95),
                          ("uint32", 1 << 21): (1.0, 0.899), ("uint32", 1 << 22): (1.0, 0.98),
                          ("int64", 1 << 21): (1.0, 0.90), ("int64", 1 << 22): (1.0, 0.979)})
        cells = {(r["type"], size): r[size] for r in rows for size in ("2^21", "2^22")}
        self.assertEqual(cells, {("int32", "2^21"): "95.0%", ("int32", "2^22"): "95.0% ✗",
                                 ("uint32", "2^21"): "89.9% ✗", ("uint32", "2^22"): "98.0%",
                                 ("int64", "2^21"): "90.0%", ("int64", "2^22"): "97.9% ✗"})

    def test_a_ratio_is_judged_as_shown(self):
        # 97.996% reads 98.0%: it meets the goal rather than reading "98.0% ✗".
        self.assertTrue(reduce_vs_cub.meets(0.97996, 1 << 28))
        self.assertFalse(reduce_vs_cub.meets(0.97949, 1 << 28))

    def test_rows_follow_the_types_and_the_misses_are_counted(self):
        order = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"]
        with tempfile.TemporaryDirectory() as tmp:  # written in reverse: the rows do not follow the file
            text = markdown(reduce_run(tmp, {(t, 1): (1.0, 0.85 if t == "int64" else 0.95) for t in reversed(order)}))
        self.assertEqual([r["type"] for r in table(text, TITLE)], order)
        self.assertIn("Below their goal: 1 of 10 cells.", text)

    def test_only_int32_and_float64_give_those_rows_and_their_sizes(self):
        rows = goal_rows({("int32", 1 << 13): (1.0, 1.5), ("int32", 1 << 28): (100.0, 101.0),
                          ("float64", 1 << 28): (200.0, 199.0)})
        self.assertEqual(rows, [{"type": "int32", "2^13": "150.0%", "2^28": "101.0%"},
                                {"type": "float64", "2^13": tables.NOT_IN_RUN, "2^28": "99.5%"}])

    def test_a_side_missing_or_failed_says_so(self):
        rows = goal_rows({("int32", 1): (1.0, None), ("int32", 2): (None, 1.0)})
        self.assertEqual(by_type(rows)["int32"], {"type": "int32", "1": "no CUB floor", "2^1": "no cujit figure"})
        with tempfile.TemporaryDirectory() as tmp:
            path = reduce_run(tmp, {("int32", 1): (1.0, 1.0)})
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            for entry in doc["benchmarks"]:
                if entry["name"].startswith("aot/"):
                    entry.update(error_occurred=True, error_message="CUB: golden")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            rows = table(markdown(path), TITLE)
        self.assertEqual(rows[0]["1"], "floor error: CUB: golden")

    def test_the_spread_of_both_sides_is_propagated(self):
        ratio, spread = reduce_vs_cub.ratio_with_spread(1.25e-6, 0.04, 1.0e-6, 0.03)
        self.assertAlmostEqual(ratio, 0.8)
        self.assertAlmostEqual(spread, 0.8 * 0.05)  # sqrt(4%² + 3%²) = 5% of the ratio
        self.assertIsNone(reduce_vs_cub.ratio_with_spread(1.25e-6, None, 1.0e-6, 0.03)[1])  # no cv, no spread
        self.assertIsNone(reduce_vs_cub.ratio_with_spread(0.0, 0.04, 1.0e-6, 0.03))
        with tempfile.TemporaryDirectory() as tmp:
            text = markdown(reduce_run(tmp, {("int8", 1): (1.25, 1.0)}))
        # Each side's cv over SPREAD is 0.7071%: the ratio's is sqrt(2) times that.
        self.assertIn("is at most ±1.0% of a cell (int8 at 1)", text)

    def test_a_miss_is_shaded_in_html(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = bench_json.load(reduce_run(tmp, {("int8", 1): (1.25, 1.0), ("int8", 2): (1.0, 1.0)}))
        page = tables.to_html(tables.build([run])[2])
        self.assertIn("<td class=bad>80.0% ✗</td>", page)
        self.assertIn("<td>100.0%</td>", page)

    def test_a_run_without_reduce_benchmarks_has_no_table(self):
        self.assertNotIn(TITLE, markdown(result("bench_jit-cold.json")))


class GoalPlotTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        cls.plt = plt

    def drawn(self, path):
        """(the plot's path or None, its legend labels, its notes)."""
        seen = {}
        original = report._save

        def recording(fig, ax, title, caption, out_dir, name, plt_, notes=()):
            seen.update(labels=ax.get_legend_handles_labels()[1], notes=tuple(notes))
            return original(fig, ax, title, caption, out_dir, name, plt_, notes)

        report._save = recording
        try:
            data = bench_json.load(path).benchmarks
            drawn = report.plot_reduce_vs_cub(data, os.path.dirname(path), self.plt, "caption", "cold")
        finally:
            report._save = original
        return drawn, seen.get("labels"), seen.get("notes")

    def test_a_line_per_type_with_both_goals_and_the_error_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            path, labels, notes = self.drawn(reduce_run(tmp, {("float64", 1): (1.0, 0.95), ("int8", 1): (1.0, 0.9),
                                                              ("int8", 1 << 28): (100.0, 99.0)}))
            self.assertGreater(os.path.getsize(path), 1000)
        self.assertEqual(os.path.basename(path), "reduce_vs_cub-cold.png")
        self.assertEqual(labels, ["goal at every n: 90%", "goal at n >= 2^22: 98%", "int8", "float64"])
        self.assertIn("r·sqrt(cv_cujit² + cv_CUB²)", notes[0])

    def test_below_2_22_only_the_90_percent_goal_applies(self):
        with tempfile.TemporaryDirectory() as tmp:
            _, labels, _ = self.drawn(reduce_run(tmp, {("int32", 1024): (1.0, 0.95)}))
        self.assertEqual(labels, ["goal at every n: 90%", "int32"])

    def test_no_reduce_benchmarks_no_figure(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = quiet(report.main, ["--out", tmp, result("bench_jit-cold.json")])
            self.assertEqual(code, 0, err)
            self.assertFalse(any(name.startswith("reduce_vs_cub") for name in os.listdir(tmp)))
            with open(os.path.join(tmp, "report.html"), encoding="utf-8") as f:
                self.assertIn(f"<h3>reduce_into vs CUB per type: {DEVICE}, full mode, cold (vendor cache off)</h3>"
                              "<p>No data for this plot in these files. It needs bench_reduce with the AOT CUB floor", f.read())


class GoalHistoryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.path = os.path.join(self.tmp.name, "history.jsonl")

    def test_each_type_is_tracked_at_the_sizes_of_the_98_percent_goal(self):
        run = reduce_run(self.tmp.name, {("float64", 1 << 22): (1.0, 0.97), ("int8", 1 << 16): (1.0, 0.9),
                                         ("int8", 1 << 22): (1.25, 1.0), ("int8", 1 << 28): (100.0, 99.0),
                                         ("uint8", 1 << 28): (100.0, None)})
        self.assertEqual(quiet(history.main, ["append", self.path, run])[0], 0)
        lines = history.read(self.path)
        self.assertEqual(history.reduce_vs_cub_names(lines), ["reduce_vs_cub/int8/4194304", "reduce_vs_cub/int8/268435456",
                                                              "reduce_vs_cub/float64/4194304"])
        [point] = history.series(lines, "reduce_vs_cub/int8/4194304")[DEVICE][COLD]
        self.assertAlmostEqual(point[1], 0.8)
        self.assertGreater(point[2], 0)  # both sides' noise travels with the ratio
        code, out, _ = quiet(history.main, ["plot", self.path, "--out", os.path.join(self.tmp.name, "plots")])
        self.assertEqual(code, 0)
        self.assertIn(os.path.join("NVIDIA_H100_80GB_HBM3", "reduce_vs_cub_int8_4194304.png"), out)
        self.assertNotIn("reduce_vs_cub_int8_65536.png", out)

    def test_old_history_lines_still_read_and_show_the_ratio(self):
        # Lines of an older layout: int32 medians without their noise, and a line of no reduce.
        old = [{"commit": "old1", "device": DEVICE, "mode": "full", "vendor_cache": "cold",
                "medians": {"cujit/reduce_into/int32_sum/268435456": 2.0e-3,
                            "aot/cub_device_reduce/int32_sum/268435456": 1.9e-3}},
               {"commit": "old2", "medians": {"cujit/e2e_cubin/tiny": 0.02}}]
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(line) + "\n" for line in old))
        lines = history.read(self.path)
        self.assertEqual(history.reduce_vs_cub_names(lines), ["reduce_vs_cub/int32/268435456"])
        [point] = history.series(lines, "reduce_vs_cub/int32/268435456")[DEVICE][COLD]
        self.assertEqual((point[0], point[2], point[3]), (0, None, None))  # no noise recorded: no bar
        self.assertAlmostEqual(point[1], 0.95)
        code, out, err = quiet(history.main, ["plot", self.path, "--out", os.path.join(self.tmp.name, "plots")])
        self.assertEqual(code, 0, err)
        self.assertIn("reduce_vs_cub_int32_268435456.png", out)


if __name__ == "__main__":
    unittest.main()


class ReduceBackendsTest(unittest.TestCase):
    """reports/reduce_backends.py: both backends' CUB / cujit ratios per (type, n), from
    generated runs whose ratios are known, and a side that is missing shown as missing."""

    def test_each_backend_is_divided_into_the_same_cub_figure(self):
        import random
        import reduce_backends
        rng = random.Random(28)
        with tempfile.TemporaryDirectory() as tmp:
            cells, expected = {}, {}
            doc_entries = []
            for type_name in ("int8", "int32", "float64"):
                for n in (1, 1 << 10, 1 << 22):
                    cub_us = rng.uniform(1, 100)
                    hand_us, jit_us = cub_us * rng.uniform(0.8, 1.2), cub_us * rng.uniform(0.8, 1.2)
                    cells[(type_name, n)] = (hand_us, cub_us)
                    doc_entries += _entries(f"cujit/reduce_into_cub/{type_name}_sum/{n}", jit_us)
                    expected[(type_name, n)] = (cub_us / hand_us, cub_us / jit_us)
            path = reduce_run(tmp, cells)
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            doc["benchmarks"] += doc_entries
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            code, out, err = quiet(reduce_backends.main, [path])
            self.assertEqual(code, 0, err)
            rows = {tuple(c.strip() for c in line.strip("|").split("|")[:2]): line for line in out.splitlines()
                    if line.startswith("| int") or line.startswith("| float")}
            for (type_name, n), (hand, jit) in expected.items():
                line = rows[(type_name, reduce_vs_cub.size_label(n))]
                cells_text = [c.strip() for c in line.strip("|").split("|")]
                self.assertTrue(cells_text[2].startswith(reduce_vs_cub.percent(hand)), line)
                self.assertTrue(cells_text[3].startswith(reduce_vs_cub.percent(jit)), line)

    def test_a_missing_side_is_a_dash(self):
        import reduce_backends
        with tempfile.TemporaryDirectory() as tmp:
            path = reduce_run(tmp, {("int32", 1024): (None, 5.0)})
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            doc["benchmarks"] += _entries("cujit/reduce_into_cub/int32_sum/1024", 5.0)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            code, out, _ = quiet(reduce_backends.main, [path])
            self.assertEqual(code, 0)
            self.assertIn("| int32 | 2^10 | - | 100.0% ±", out)

    def test_the_user_defined_pair_argmin_is_a_row_of_its_own(self):
        import reduce_backends
        with tempfile.TemporaryDirectory() as tmp:
            path = reduce_run(tmp, {("int32", 1024): (5.0, 5.0)})
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            doc["benchmarks"] += (_entries("cujit/reduce_into/pair_argmin/1024", 8.0)
                                  + _entries("aot/cub_device_reduce/pair_argmin/1024", 6.0)
                                  + _entries("cujit/reduce_into_cub/pair_argmin/1024", 5.0)
                                  + _entries("cujit/reduce_into_cub/int32_sum/1024", 5.0))
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            code, out, err = quiet(reduce_backends.main, [path])
            self.assertEqual(code, 0, err)
            self.assertIn("| pair (argmin) | 2^10 | 75.0% ±", out)
            self.assertIn("| 120.0% ±", out.split("| pair (argmin) | 2^10 |")[1].splitlines()[0])
            # Sums first, then the argmin.
            self.assertLess(out.index("| int32 | 2^10 |"), out.index("| pair (argmin) |"))
