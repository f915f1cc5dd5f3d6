"""Several files read as one run: parts of one run join quietly; files of different commits
are said in the report beside every figure, and refused by the history and by the gate
(unless --allow-mixed-commits); a benchmark two files hold is listed with both files by the
report and refused by the history and the gate. One file merged from parts of several commits
is read as those parts. Synthetic runs built from the golden ones."""
import json
import os
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import history  # noqa: E402
import report  # noqa: E402
from cujit_reports import bench_json, joining, tables  # noqa: E402

sys.path.insert(0, HERE)
from test_reduce_vs_cub import TITLE, by_type, reduce_run  # noqa: E402
from test_report_tables import quiet, table  # noqa: E402
from test_reports import _doc, _write, gate, golden  # noqa: E402

FULL = "0123456789abcdef0123456789abcdef01234567"  # the golden runs' commit
OTHER = "fedcba9876543210fedcba9876543210fedcba98"
TWO_FILES = "Benchmarks in two files, the cold (vendor cache off) column"


def recommit(path, commit, tree="clean"):
    """Rewrites the run record of the file at `path` as a run of `commit`; returns the path."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    doc["context"].update(cujit_git_commit=commit, cujit_git_tree=tree)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def report_of(*paths):
    """(markdown, stderr) of report.py --markdown - over `paths`."""
    code, out, err = quiet(report.main, ["--markdown", "-", *paths])
    if code != 0:
        raise AssertionError(f"report exit {code}: {err}")
    return out, err


class SameRunTest(unittest.TestCase):
    def test_a_commit_matches_its_abbreviation_and_unrecorded_only_unrecorded(self):
        self.assertTrue(joining.same_value("cujit_git_commit", "1bcd7b6", "1BCD7B6f00"))
        self.assertFalse(joining.same_value("cujit_git_commit", "1bcd7b6", "259fe94d38548253"))
        self.assertFalse(joining.same_value("cujit_git_commit", None, "1bcd7b6"))
        self.assertTrue(joining.same_value("device", None, None))
        self.assertFalse(joining.same_value("cujit_git_tree", "clean", "modified"))


class SourceDigestTest(unittest.TestCase):
    def test_unknown_is_unrecorded_and_matches_only_unrecorded(self):
        self.assertTrue(joining.same_value("cujit_source_digest", "722e32de3eaa7e64", "722e32de3eaa7e64"))
        self.assertFalse(joining.same_value("cujit_source_digest", "722e32de3eaa7e64", "0000000000000000"))
        self.assertTrue(joining.same_value("cujit_source_digest", None, "unknown"))
        # Not "matches anything": with [unrecorded, X, Y] grouped on the first, X and Y would
        # have joined as one run.
        self.assertFalse(joining.same_value("cujit_source_digest", None, "722e32de3eaa7e64"))
        self.assertFalse(joining.same_value("cujit_source_digest", "unknown", "722e32de3eaa7e64"))

    def test_one_commit_of_two_codes_is_not_one_run(self):
        # A copied tree whose git HEAD is stale records the same commit for different code:
        # the digest of the files tells them apart.
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, digest, cells in (("bench_reduce-cold.json", "1111111111111111", {("int32", 1024): (10.0, 9.0)}),
                                        ("bench_reduce-b-cold.json", "2222222222222222",
                                         {("float64", 1024): (20.0, 19.0)})):
                path = recommit(reduce_run(tmp, cells, name), FULL)
                with open(path, encoding="utf-8") as f:
                    doc = json.load(f)
                doc["context"]["cujit_source_digest"] = digest
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(doc, f)
                paths.append(path)
            text, _ = report_of(*paths)
            self.assertIn("Not one run", text)
            self.assertIn("source digest", text)


class ReportJoinTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def part(self, name, cells, commit=FULL, tree="clean"):
        return recommit(reduce_run(self.tmp.name, cells, name), commit, tree)

    def test_parts_of_one_run_join_quietly(self):
        # One record writes the short hash, the other the full one: still one run.
        first = self.part("bench_reduce-cold.json", {("int32", 1024): (10.0, 9.0)}, commit=FULL[:7])
        second = self.part("bench_reduce-more-cold.json", {("float64", 1024): (20.0, 19.0)})
        text, err = report_of(first, second)
        self.assertEqual(err, "")
        for said in ("Not one run", "[from", "in two files", TWO_FILES):
            self.assertNotIn(said, text)
        rows = by_type(table(text, TITLE))
        self.assertEqual((rows["int32"]["2^10"], rows["float64"]["2^10"]), ("90.0%", "95.0%"))

    def test_files_of_two_commits_are_said_above_the_runs_and_beside_every_figure(self):
        first = self.part("bench_reduce-cold.json", {("int32", 1024): (10.0, 9.0)})
        second = self.part("bench_reduce-other-cold.json", {("float64", 1024): (20.0, 19.0)}, OTHER, "modified")
        text, err = report_of(first, second)
        self.assertIn("- **Not one run**: the cold (vendor cache off) column joins files that differ in commit, "
                      f"tree: `bench_reduce-cold.json`: commit {FULL}, tree clean; "
                      f"`bench_reduce-other-cold.json`: commit {OTHER}, tree modified.", text)
        self.assertIn("Not one run", err)  # said where the command runs, too
        rows = by_type(table(text, TITLE))
        self.assertEqual(rows["int32"]["2^10"], "90.0% [from commit 0123456, tree clean]")
        self.assertEqual(rows["float64"]["2^10"], "95.0% [from commit fedcba9, tree modified]")
        scenario = table(text, "Scenario `reduce_into`")
        self.assertTrue(all("[from commit " in cell for r in scenario for cell in list(r.values())[1:]), scenario)

    def test_a_ratio_of_figures_from_two_commits_names_each(self):
        first = self.part("bench_reduce-cold.json", {("int32", 1024): (10.0, None)})
        second = self.part("bench_reduce-other-cold.json", {("int32", 1024): (None, 9.0)}, OTHER)
        rows = by_type(table(report_of(first, second)[0], TITLE))
        self.assertEqual(rows["int32"]["2^10"], "90.0% [cujit/reduce_into/int32_sum/1024 from commit 0123456; "
                                                "aot/cub_device_reduce/int32_sum/1024 from commit fedcba9]")

    def test_a_benchmark_in_two_files_is_the_later_one_listed_with_both(self):
        first = self.part("bench_reduce-cold.json", {("int32", 1024): (10.0, 9.0), ("float64", 1024): (20.0, 19.0)})
        second = self.part("bench_reduce-again-cold.json", {("int32", 1024): (9.5, 9.0)})
        text, err = report_of(first, second)
        self.assertNotIn("Not one run", text)  # one commit: a re-measurement, not another build
        self.assertIn("- **2 benchmarks are in two files** of the cold (vendor cache off) column: the later file's "
                      "figures are shown (`bench_reduce-again-cold.json` over `bench_reduce-cold.json`)", text)
        self.assertIn("2 benchmarks are in two files", err)
        self.assertEqual(by_type(table(text, TITLE))["int32"]["2^10"], "94.7%")
        listed = table(text, TWO_FILES)
        self.assertEqual([(r["benchmark"], r["shown: from"], r["not shown: from"]) for r in listed],
                         [(f"`{name}`", "`bench_reduce-again-cold.json`", "`bench_reduce-cold.json`")
                          for name in ("cujit/reduce_into/int32_sum/1024", "aot/cub_device_reduce/int32_sum/1024")])

    def test_a_benchmark_in_files_of_two_commits_names_both_runs(self):
        first = self.part("bench_reduce-cold.json", {("int32", 1024): (10.0, 9.0)})
        second = self.part("bench_reduce-other-cold.json", {("int32", 1024): (9.5, 9.0)}, OTHER)
        text, _ = report_of(first, second)
        self.assertEqual(by_type(table(text, TITLE))["int32"]["2^10"], "94.7% [from commit fedcba9]")
        self.assertEqual(table(text, TWO_FILES)[0]["not shown: from"],
                         "`bench_reduce-cold.json` (commit 0123456)")

    def test_plots_of_a_mixed_column_say_so_in_their_title(self):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        captions = []

        def recording(fig, ax, title, caption, out_dir, name, plt_, notes=()):
            captions.append(caption)
            plt_.close(fig)
            return name

        first = self.part("bench_reduce-cold.json", {("int32", 1024): (10.0, 9.0)})
        second = self.part("bench_reduce-other-cold.json", {("float64", 1024): (20.0, 19.0)}, OTHER)
        with mock.patch.object(report, "_save", recording):
            report.plots([bench_json.load(first), bench_json.load(second)], self.tmp.name, plt)
        self.assertTrue(captions)
        for caption in captions:
            self.assertTrue(caption.endswith("cold (vendor cache off)\nNOT ONE RUN: files of different commit"),
                            caption)

    def test_html_shows_the_notes_and_still_shades_a_miss(self):
        page = tables.to_html([tables.Table("t", ["type", "2^22"], [["int8", "94.3% ✗ [from commit fedcba9]"]])])
        self.assertIn("<td class=bad>94.3% ✗ [from commit fedcba9]</td>", page)
        self.assertEqual(tables.html_text("**Not one run**: `a.json`"),
                         "<strong>Not one run</strong>: <code>a.json</code>")


class HistoryJoinTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.path = os.path.join(self.tmp.name, "history.jsonl")
        self.first = reduce_run(self.tmp.name, {("int32", 1024): (10.0, 9.0)}, "bench_reduce-cold.json")

    def append(self, *files):
        return quiet(history.main, ["append", self.path, *files])

    def test_parts_of_one_run_are_one_line(self):
        second = reduce_run(self.tmp.name, {("float64", 1024): (20.0, 19.0)}, "bench_reduce-more-cold.json")
        self.assertEqual(self.append(self.first, second)[0], 0)
        (line,) = history.read(self.path)
        self.assertEqual(line["commit"], FULL)
        self.assertIn("cujit/reduce_into/float64_sum/1024", line["medians"])

    def test_files_of_two_commits_are_refused_naming_each(self):
        second = recommit(reduce_run(self.tmp.name, {("float64", 1024): (20.0, 19.0)}, "other-cold.json"), OTHER)
        code, _, err = self.append(self.first, second)
        self.assertEqual(code, 2)
        self.assertIn("files are not one run: they differ in commit", err)
        self.assertIn(f"commit {FULL}: {self.first}", err)
        self.assertIn(f"commit {OTHER}: {second}", err)
        self.assertFalse(os.path.exists(self.path))

    def test_a_benchmark_in_two_files_is_refused_naming_both(self):
        again = reduce_run(self.tmp.name, {("int32", 1024): (9.5, 9.0)}, "again-cold.json")
        code, _, err = self.append(self.first, again)
        self.assertEqual(code, 2)
        self.assertIn(f"cujit/reduce_into/int32_sum/1024 in {self.first} and {again}", err)


class GateJoinTest(unittest.TestCase):
    """A side of the gate given as parts (--baseline-part, --current-part)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def split(self, name, commit=FULL, **context):
        """gate_base.json in two parts: raw/ in the second, which is of `commit`."""
        doc = _doc(name)
        raw = [b for b in doc["benchmarks"] if b["name"].startswith("raw/")]
        rest = [b for b in doc["benchmarks"] if not b["name"].startswith("raw/")]
        first = _write(self.tmp.name, "first.json", dict(doc, benchmarks=rest))
        doc["context"] = dict(doc["context"], cujit_git_commit=commit, **context)
        return first, _write(self.tmp.name, "second.json", dict(doc, benchmarks=raw))

    def test_parts_of_one_run_are_compared_as_the_whole(self):
        first, second = self.split("gate_base.json", FULL[:7])
        code, out, err = gate(first, golden("gate_same.json"), "--baseline-part", second)
        self.assertEqual(code, 0, err)
        self.assertIn(f"Baseline: commit {FULL} (clean tree)", out)
        self.assertNotIn("[baseline from", out)
        self.assertIn("`raw/e2e_cubin/tiny`", out)

    def test_a_mixed_baseline_is_refused_naming_each_file_and_commit(self):
        first, second = self.split("gate_base.json", OTHER)
        code, out, err = gate(first, golden("gate_same.json"), "--baseline-part", second)
        self.assertEqual(code, 2)
        self.assertEqual(out, "")  # no table, no verdict
        self.assertIn("compare: the baseline files are not one run: they differ in commit; "
                      "--allow-mixed-commits compares them, saying so", err)
        self.assertIn(f"  commit {FULL}: {first}", err)
        self.assertIn(f"  commit {OTHER}: {second}", err)

    def test_a_mixed_current_is_refused_too(self):
        first, second = self.split("gate_same.json", OTHER)
        code, _, err = gate(golden("gate_base.json"), first, "--current-part", second)
        self.assertEqual(code, 2)
        self.assertIn("the current files are not one run", err)

    def test_allowed_mixed_commits_are_named_above_the_table_and_beside_every_row(self):
        first, second = self.split("gate_base.json", OTHER)
        code, out, err = gate(first, golden("gate_same.json"), "--baseline-part", second, "--allow-mixed-commits")
        self.assertEqual(code, 0, err)
        self.assertIn("**The baseline joins runs of different commits** (--allow-mixed-commits): "
                      f"commit {FULL}: {first}; commit {OTHER}: {second}.", out)
        self.assertIn("Baseline: parts of several commits (below)", out)
        self.assertIn("| `raw/e2e_cubin/tiny` [baseline from commit fedcba9] |", out)
        self.assertIn("| `cujit/e2e_cubin/tiny` [baseline from commit 0123456] |", out)

    def test_parts_that_differ_in_more_than_the_commit_are_always_refused(self):
        first, second = self.split("gate_base.json", OTHER, driver_release="575.57.08")
        code, _, err = gate(first, golden("gate_same.json"), "--baseline-part", second, "--allow-mixed-commits")
        self.assertEqual(code, 2)
        self.assertIn("the baseline files are not one run: they differ in driver release\n", err)
        self.assertIn(f"  commit {OTHER}, driver release 575.57.08: {second}", err)

    def test_a_benchmark_in_two_parts_is_always_refused(self):
        path = golden("gate_base.json")
        code, out, err = gate(path, golden("gate_same.json"), "--baseline-part", path, "--allow-mixed-commits")
        self.assertEqual(code, 2)
        self.assertEqual(out, "")
        self.assertIn("3 benchmarks are in two baseline files, and the gate does not pick one of two measurements:",
                      err)
        self.assertIn(f"  cujit/e2e_cubin/tiny: {path} and {path}", err)


def merged_doc(parts):
    """What bench/support/merge_results.py writes for [(family, doc)]: the first part's record,
    a commit or tree the parts differ in as "mixed: a, b", each part in cujit_parts."""
    context = dict(parts[0][1]["context"])
    for key in joining.COMMIT_FIELDS:
        values = []
        for _, doc in parts:
            if not any(joining.same_value(key, doc["context"].get(key), seen) for seen in values):
                values.append(doc["context"].get(key))
        context[key] = values[0] if len(values) == 1 else bench_json.MIXED + ", ".join(map(str, values))
    context["cujit_families"] = [family for family, _ in parts]
    context["cujit_parts"] = [{"family": family, "file": f"parts/{family}.json",
                               "commit": doc["context"].get("cujit_git_commit"),
                               "tree": doc["context"].get("cujit_git_tree"),
                               "benchmarks": len(doc["benchmarks"])} for family, doc in parts]
    return {"context": context, "benchmarks": [entry for _, doc in parts for entry in doc["benchmarks"]]}


def split_doc(name, commit=OTHER, tree="clean"):
    """[("rest", ...), ("raw", ...)]: golden `name` in two parts, raw/ of `commit` and `tree`."""
    doc = _doc(name)
    rest = dict(doc, benchmarks=[b for b in doc["benchmarks"] if not b["name"].startswith("raw/")])
    raw = dict(doc, benchmarks=[b for b in doc["benchmarks"] if b["name"].startswith("raw/")],
               context=dict(doc["context"], cujit_git_commit=commit, cujit_git_tree=tree))
    return [("rest", rest), ("raw", raw)]


class MixedValueTest(unittest.TestCase):
    """A commit that reads "mixed: ..." keeps every hash when labels shorten commits."""

    def run_of(self, path, commit):
        return bench_json.Run(path, {"cujit_git_commit": commit, "cujit_git_tree": "clean"}, {})

    def test_a_mixed_commit_is_shortened_hash_by_hash(self):
        fields = [("commit", "cujit_git_commit")]
        run = self.run_of("m.json", f"mixed: {FULL}, {OTHER}")
        self.assertEqual(joining.record_text(run, fields, short=True), "commit mixed: 0123456, fedcba9")
        self.assertEqual(joining.record_text(run, fields), f"commit mixed: {FULL}, {OTHER}")
        unknown = self.run_of("u.json", f"mixed: {FULL}, not recorded, unknown")
        self.assertEqual(joining.record_text(unknown, fields, short=True), "commit mixed: 0123456, not recorded, unknown")

    def test_a_joined_label_of_a_mixed_commit_names_its_hashes(self):
        mixed, plain = self.run_of("m.json", f"mixed: {FULL}, {OTHER}"), self.run_of("p.json", FULL)
        joined = joining.join([mixed, plain])
        self.assertEqual(joined.label(mixed), "commit mixed: 0123456, fedcba9")
        self.assertEqual(joined.label(plain), "commit 0123456")


class MergedFileTest(unittest.TestCase):
    """One file merged from parts of several commits (merge_results.py --allow-mixed-commits)
    is read as its parts: said by the report, refused by the history and, unless
    --allow-mixed-commits, by the gate, exactly as those parts given one by one are."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def merged(self, parts, name="merged.json"):
        return _write(self.tmp.name, name, merged_doc(parts))

    def test_the_gate_refuses_a_merged_baseline_of_two_commits_naming_the_file_and_its_parts(self):
        path = self.merged(split_doc("gate_base.json"))
        code, out, err = gate(path, golden("gate_same.json"))
        self.assertEqual(code, 2)
        self.assertEqual(out, "")
        self.assertIn("compare: the baseline file's parts are not one run: they differ in commit; "
                      "--allow-mixed-commits compares them, saying so", err)
        self.assertIn(f"  commit {FULL}: {path} (part rest)", err)
        self.assertIn(f"  commit {OTHER}: {path} (part raw)", err)

    def test_the_gate_refuses_a_merged_current_of_two_commits_and_trees(self):
        path = self.merged(split_doc("gate_same.json", tree="modified"))
        code, _, err = gate(golden("gate_base.json"), path)
        self.assertEqual(code, 2)
        self.assertIn("the current file's parts are not one run: they differ in commit, tree;", err)
        self.assertIn(f"  commit {OTHER}, tree modified: {path} (part raw)", err)

    def test_allowed_the_gate_names_each_parts_commit_above_the_table_and_beside_every_row(self):
        path = self.merged(split_doc("gate_base.json"))
        code, out, err = gate(path, golden("gate_same.json"), "--allow-mixed-commits")
        self.assertEqual(code, 0, err)
        self.assertIn("Baseline: parts of several commits (below)", out)
        self.assertIn("**The baseline joins runs of different commits** (--allow-mixed-commits): "
                      f"commit {FULL}: {path} (part rest); commit {OTHER}: {path} (part raw).", out)
        self.assertIn("| `raw/e2e_cubin/tiny` [baseline from commit fedcba9] |", out)
        self.assertIn("| `cujit/e2e_cubin/tiny` [baseline from commit 0123456] |", out)

    def test_a_merged_file_of_one_commit_is_one_run(self):
        path = self.merged(split_doc("gate_base.json", commit=FULL[:7]))
        code, out, err = gate(path, golden("gate_same.json"))
        self.assertEqual(code, 0, err)
        self.assertIn(f"Baseline: commit {FULL} (clean tree)", out)
        self.assertNotIn("[baseline from", out)

    def test_the_file_merge_results_writes_is_refused_too(self):
        sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "support"))
        self.addCleanup(sys.path.remove, sys.path[0])
        import merge_results
        parts = [f"{family}={_write(self.tmp.name, family + '.json', doc)}"
                 for family, doc in split_doc("gate_base.json")]
        path = os.path.join(self.tmp.name, "merged.json")
        self.assertEqual(quiet(merge_results.main, ["--allow-mixed-commits", path, *parts])[0], 0)
        code, _, err = gate(path, golden("gate_same.json"))
        self.assertEqual(code, 2)
        self.assertIn(f"  commit {OTHER}: {path} (part raw)", err)

    def test_a_mixed_commit_without_its_parts_is_refused_naming_the_file(self):
        doc = merged_doc(split_doc("gate_base.json"))
        del doc["context"]["cujit_parts"]
        path = _write(self.tmp.name, "merged.json", doc)
        code, _, err = gate(path, golden("gate_same.json"), "--allow-mixed-commits")
        self.assertEqual(code, 2)
        self.assertIn(f"compare: {path}: context.cujit_git_commit is 'mixed: {FULL}, {OTHER}', but "
                      "context.cujit_parts is missing", err)

    def test_parts_whose_counts_miss_the_entries_are_refused(self):
        doc = merged_doc(split_doc("gate_base.json"))
        doc["context"]["cujit_parts"][0]["benchmarks"] -= 1
        path = _write(self.tmp.name, "merged.json", doc)
        code, _, err = gate(path, golden("gate_same.json"), "--allow-mixed-commits")
        self.assertEqual(code, 2)
        self.assertIn(f"{path}: context.cujit_parts counts 38 benchmark entries, and the file holds 39", err)

    def test_a_mixed_record_over_parts_of_one_commit_is_refused(self):
        doc = merged_doc(split_doc("gate_base.json"))
        doc["context"]["cujit_parts"][1]["commit"] = FULL
        path = _write(self.tmp.name, "merged.json", doc)
        code, _, err = gate(path, golden("gate_same.json"), "--allow-mixed-commits")
        self.assertEqual(code, 2)
        self.assertIn("every part in context.cujit_parts records the same commit and tree", err)

    def reduce_parts(self):
        """[(family, doc)]: two bench_reduce parts, the second of OTHER with a modified tree."""
        docs = []
        for family, cells, commit, tree in (("int", {("int32", 1024): (10.0, 9.0)}, FULL, "clean"),
                                            ("float", {("float64", 1024): (20.0, 19.0)}, OTHER, "modified")):
            with open(recommit(reduce_run(self.tmp.name, cells, f"{family}.json"), commit, tree), encoding="utf-8") as f:
                docs.append((family, json.load(f)))
        return docs

    def test_the_report_says_a_merged_file_of_two_commits_is_not_one_run(self):
        path = self.merged(self.reduce_parts(), "bench_reduce-cold.json")
        text, err = report_of(path)
        self.assertIn("- **Not one run**: the cold (vendor cache off) column joins files that differ in commit, "
                      f"tree: `bench_reduce-cold.json (part int)`: commit {FULL}, tree clean; "
                      f"`bench_reduce-cold.json (part float)`: commit {OTHER}, tree modified.", text)
        self.assertIn("Not one run", err)
        rows = by_type(table(text, TITLE))
        self.assertEqual(rows["int32"]["2^10"], "90.0% [from commit 0123456, tree clean]")
        self.assertEqual(rows["float64"]["2^10"], "95.0% [from commit fedcba9, tree modified]")

    def test_history_refuses_a_merged_file_of_two_commits_naming_its_parts(self):
        path = self.merged(self.reduce_parts(), "bench_reduce-cold.json")
        history_path = os.path.join(self.tmp.name, "history.jsonl")
        code, _, err = quiet(history.main, ["append", history_path, path])
        self.assertEqual(code, 2)
        self.assertIn("files are not one run: they differ in commit, tree", err)
        self.assertIn(f"commit {FULL}, tree clean: {path} (part int)", err)
        self.assertIn(f"commit {OTHER}, tree modified: {path} (part float)", err)
        self.assertFalse(os.path.exists(history_path))


if __name__ == "__main__":
    unittest.main()
