"""The exec-to-first-result driver (bench/first_result/run.py) without a GPU: its statistics
against brute force, the JSON it writes, how it treats children that fail, lie, chatter or
hang (fake programs written here), and its command line. CTest label cpu."""
import itertools
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIRST_RESULT = os.path.dirname(HERE)
SOURCE_ROOT = os.path.dirname(os.path.dirname(FIRST_RESULT))
sys.path.insert(0, FIRST_RESULT)
sys.path.insert(0, os.path.join(SOURCE_ROOT, "reports"))

from cujit_reports import stats as paired_stats  # noqa: E402
import run  # noqa: E402

RUN_PY = os.path.join(FIRST_RESULT, "run.py")


def result_line(program, ok=True, error="", context_s=0.1, build_launch_s=0.02, **extra):
    return json.dumps({"program": program, "context_s": context_s, "build_launch_s": build_launch_s, "ok": ok,
                       "error": error, **extra})


class FakePrograms:
    """Tiny Python scripts standing in for the programs, in a temporary directory."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def cleanup(self):
        self.tmp.cleanup()

    def script(self, name, body):
        path = os.path.join(self.dir, name + ".py")
        with open(path, "w", encoding="utf-8") as f:
            f.write("import json, os, sys, time\n" + body + "\n")
        return [sys.executable, path]

    def good(self, name, program=None, ratio=1.0):
        """Prints an ok line; sleeps ratio * 20 ms first so that times differ by program."""
        return self.script(name, f"time.sleep({0.02 * ratio})\nprint({result_line(program or name)!r}, flush=True)")

    def failing_in_round(self, name, program, failing_run):
        """Good until its `failing_run`-th run (1-based, setup included), then ok=false."""
        counter = os.path.join(self.dir, name + ".count")
        return self.script(name, f"""
path = {counter!r}
count = int(open(path).read()) + 1 if os.path.exists(path) else 1
open(path, "w").write(str(count))
if count == {failing_run}:
    print({result_line(program, ok=False, error="injected failure")!r}, flush=True)
    sys.exit(1)
print({result_line(program)!r}, flush=True)""")


# ---------------------------------------------------------------------------------------


def brute_force_signed_rank_counts(n):
    counts = [0] * (n * (n + 1) // 2 + 1)
    for signs in itertools.product((0, 1), repeat=n):
        counts[sum(rank for rank, positive in zip(range(1, n + 1), signs) if positive)] += 1
    return counts


class StatsTest(unittest.TestCase):
    def test_hodges_lehmann_is_the_median_of_walsh_averages(self):
        rng = random.Random(7)
        for n in (1, 2, 5, 9, 12):
            values = [rng.uniform(-1, 1) for _ in range(n)]
            walsh = [(a + b) / 2 for a, b in itertools.combinations_with_replacement(values, 2)]
            self.assertEqual(len(walsh), n * (n + 1) // 2)
            self.assertAlmostEqual(paired_stats.pseudo_median(values), statistics.median(walsh))
        self.assertEqual(paired_stats.pseudo_median([1, 2, 3, 4, 5, 6, 7, 8, 9]), 5)
        # Robust: one wild value moves the estimate a little, not to the wild value.
        self.assertLess(paired_stats.pseudo_median([0, 0, 0, 0, 0, 0, 0, 0, 100]), 1)
        with self.assertRaises(ValueError):
            paired_stats.pseudo_median([])

    def test_signed_rank_null_distribution_matches_enumeration(self):
        for n in range(1, 13):
            self.assertEqual(paired_stats.signed_rank_counts(n), brute_force_signed_rank_counts(n), n)

    def test_signed_rank_k_matches_published_critical_values(self):
        # Two-sided 5% critical values of Wilcoxon's signed-rank statistic (reject when
        # W <= c); the interval drops the c + 1 most extreme Walsh averages at each end.
        critical = {6: 0, 7: 2, 8: 3, 9: 5, 10: 8, 11: 10, 12: 13, 13: 17, 14: 21, 15: 25, 16: 29, 17: 34,
                    18: 40, 19: 46, 20: 52, 21: 58, 25: 89, 30: 137}
        for n, c in critical.items():
            k, coverage = paired_stats.signed_rank_k(n)
            self.assertEqual(k, c + 1, n)
            self.assertGreaterEqual(coverage, 0.95)
        self.assertIsNone(paired_stats.signed_rank_k(5))
        k, coverage = paired_stats.signed_rank_k(9)
        self.assertAlmostEqual(coverage, 1 - 2 * 10 / 512)

    def test_median_k_is_the_binomial_order_statistic(self):
        for n in range(6, 40):
            k, coverage = paired_stats.median_k(n)
            miss = lambda j: 2 * sum(math.comb(n, i) for i in range(j)) / 2 ** n  # noqa: E731
            self.assertLessEqual(miss(k), 0.05 + 1e-12, n)
            self.assertGreater(miss(k + 1), 0.05, n)
            self.assertAlmostEqual(coverage, 1 - miss(k))
        self.assertEqual(paired_stats.median_k(9)[0], 2)
        self.assertEqual(paired_stats.median_k(21)[0], 6)
        self.assertIsNone(paired_stats.median_k(5))

    def test_interval_on_known_input(self):
        values = list(range(1, 10))  # Walsh averages 1, 1.5, 2, 2, 2.5, 2.5, 3, 3, 3, 3.5, ...
        low, high, coverage = paired_stats.hl_interval(values)
        walsh = sorted((a + b) / 2 for a, b in itertools.combinations_with_replacement(values, 2))
        self.assertEqual((low, high), (walsh[5], walsh[-6]))
        self.assertEqual((low, high), (2.5, 7.5))
        self.assertGreater(coverage, 0.95)

    def test_interval_coverage_on_simulated_rounds(self):
        """A 96.1% interval (n = 9) covers the true centre of symmetric noise in about that
        share of trials (seeded, so deterministic)."""
        rng = random.Random(2026)
        trials, covered = 3000, 0
        for _ in range(trials):
            logs = [0.3 + rng.gauss(0, 0.1) for _ in range(9)]
            low, high, _ = paired_stats.hl_interval(logs)
            covered += low <= 0.3 <= high
        self.assertGreater(covered / trials, 0.945)
        self.assertLess(covered / trials, 0.978)

    def test_paired_ratio(self):
        floor = [0.2 + 0.01 * i for i in range(9)]
        program = [1.5 * f for f in floor]
        out = paired_stats.paired_ratio(program, floor)
        for key in ("ratio", "ratio_low", "ratio_high"):
            self.assertAlmostEqual(out[key], 1.5)
        # Per-round pairing: a common per-round slowdown cancels.
        noisy_floor = [f * (1 + 0.5 * (i % 3)) for i, f in enumerate(floor)]
        out = paired_stats.paired_ratio([2 * f for f in noisy_floor], noisy_floor)
        self.assertAlmostEqual(out["ratio"], 2.0)
        rng = random.Random(3)
        program = [f * 1.2 * math.exp(rng.gauss(0, 0.05)) for f in floor]
        out = paired_stats.paired_ratio(program, floor)
        self.assertLess(out["ratio_low"], out["ratio"])
        self.assertLess(out["ratio"], out["ratio_high"])
        with self.assertRaises(ValueError):
            paired_stats.paired_ratio([1.0] * 9, [1.0] * 8)
        with self.assertRaises(ValueError):
            paired_stats.paired_ratio([1.0] * 9, [0.0] * 9)
        with self.assertRaises(ValueError):
            paired_stats.paired_ratio([1.0] * 5, [1.0] * 5)

    def test_relative_noise(self):
        values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
        self.assertAlmostEqual(paired_stats.relative_noise(values), (8.0 - 2.0) / 2 / 5.0)
        self.assertEqual(paired_stats.relative_noise([3.0] * 9), 0.0)
        self.assertIsNone(paired_stats.relative_noise([1.0, 2.0]))


# ---------------------------------------------------------------------------------------


def fake_measurement(fakes, names_and_argv, rounds=9, timeout_s=30.0):
    programs = [run.Program(name, argv, cache=f"{name} cache") for name, argv in names_and_argv]
    return run.measure(programs, rounds, timeout_s, seed=5)


class JsonTest(unittest.TestCase):
    def setUp(self):
        self.fakes = FakePrograms()
        self.addCleanup(self.fakes.cleanup)

    def test_shape_of_a_run(self):
        measurement = fake_measurement(self.fakes, [
            ("cujit", self.fakes.good("cujit", ratio=1.5)),
            ("raw_driver", self.fakes.good("raw_driver")),
            ("cupy", self.fakes.script("cupy", "sys.exit(3)")),
        ])
        record = {"device": "NVIDIA H100 80GB HBM3", "driver_release": "580.159.04"}
        doc = run.document(measurement, record, 30.0)
        context = doc["context"]
        self.assertEqual(context["cujit_schema"], "1")
        self.assertEqual(context["cujit_mode"], "full")
        self.assertEqual(context["device"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(context["first_result_rounds"], "9")
        self.assertIn("missing", context["cupy_version"])
        self.assertEqual(context["first_result_cache_cujit"], "cujit cache")

        by_name = {}
        for entry in doc["benchmarks"]:
            by_name.setdefault(entry["name"], []).append(entry)
        for program in ("cujit", "raw_driver"):
            for part in run.PARTS:
                name = f"first_result/{program}/{part}"
                rounds = by_name[name]
                self.assertEqual(len(rounds), 9, name)
                self.assertEqual([e["repetition_index"] for e in rounds], list(range(9)))
                for e in rounds:
                    self.assertEqual((e["run_type"], e["time_unit"], e["repetitions"]), ("iteration", "ms", 9))
                    self.assertGreater(e["real_time"], 0)
                for aggregate in ("mean", "median", "stddev", "cv"):
                    (agg,) = by_name[f"{name}_{aggregate}"]
                    self.assertEqual((agg["run_type"], agg["aggregate_name"], agg["run_name"]),
                                     ("aggregate", aggregate, name))
        whole = [e["real_time"] for e in by_name["first_result/cujit/whole_process"]]
        context_ms = [e["real_time"] for e in by_name["first_result/cujit/context"]]
        self.assertTrue(all(c == 100.0 for c in context_ms))  # the child's own report, in ms
        self.assertTrue(all(w > 30 for w in whole))  # the fake sleeps 30 ms before its line

        (pair,) = by_name["pair/first_result/cujit/whole_process"]
        for key in ("ratio", "ratio_low", "ratio_high", "rounds", "cujit_s", "floor_s", "cujit_noise", "floor_noise",
                    "same_output"):
            self.assertIsInstance(pair[key], (int, float), key)
        self.assertEqual((pair["program"], pair["rounds"], pair["same_output"]), ("cujit", 9, 1))
        self.assertLessEqual(pair["ratio_low"], pair["ratio"])
        self.assertLessEqual(pair["ratio"], pair["ratio_high"])
        self.assertGreater(pair["ratio"], 1.0)  # 30 ms of sleep against 20 ms
        self.assertAlmostEqual(pair["real_time"], pair["cujit_s"] * 1e3)
        self.assertNotIn("pair/first_result/raw_driver/whole_process", by_name)

        for part in run.PARTS:  # a peer that fails is errored with its reason, never dropped
            (entry,) = by_name[f"first_result/cupy/{part}"]
            self.assertTrue(entry["error_occurred"])
            self.assertIn("exited with status 3", entry["error_message"])
        (pair,) = by_name["pair/first_result/cupy/whole_process"]
        self.assertTrue(pair["error_occurred"])
        self.assertEqual(run.exit_status(measurement, lambda text: None), 0)
        self.assertEqual(set(measurement.orders[0]), {"cujit", "raw_driver"})

    def test_the_reports_loader_reads_it(self):
        """reports/ (the gate, the reports) must be able to load what run.py writes."""
        sys.path.insert(0, os.path.join(SOURCE_ROOT, "reports"))
        from cujit_reports import bench_json
        measurement = fake_measurement(self.fakes, [("cujit", self.fakes.good("cujit")),
                                                    ("raw_driver", self.fakes.good("raw_driver"))])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "first_result.json")
            run.write_json(path, run.document(measurement, run.fallback_record("test"), 30.0))
            loaded = bench_json.load(path)
        self.assertEqual(len(loaded.benchmarks["first_result/cujit/whole_process"].samples), 9)
        self.assertIn("ratio", loaded.benchmarks["pair/first_result/cujit/whole_process"].counters)

    def test_a_failing_floor_errors_every_pair_and_exits_1(self):
        measurement = fake_measurement(self.fakes, [
            ("cujit", self.fakes.good("cujit")),
            ("raw_driver", self.fakes.failing_in_round("raw_driver", "raw_driver", 4)),
            ("cupy", self.fakes.good("cupy")),
        ])
        self.assertIn("round 3: reported ok=false: injected failure", measurement.errors["raw_driver"])
        self.assertEqual(len(measurement.orders), 3)  # no rounds after the floor failed
        doc = run.document(measurement, {}, 30.0)
        pairs = [e for e in doc["benchmarks"] if e["name"].startswith("pair/")]
        self.assertEqual(len(pairs), 2)
        for pair in pairs:
            self.assertTrue(pair["error_occurred"])
            self.assertIn("no floor to pair with", pair["error_message"])
        messages = []
        self.assertEqual(run.exit_status(measurement, messages.append), 1)
        self.assertTrue(any("raw_driver" in m and "injected failure" in m for m in messages))

    def test_a_peer_failing_mid_run_is_errored_with_its_round(self):
        measurement = fake_measurement(self.fakes, [
            ("cujit", self.fakes.good("cujit")),
            ("raw_driver", self.fakes.good("raw_driver")),
            ("numba_cuda", self.fakes.failing_in_round("numba", "numba_cuda", 6)),
        ])
        self.assertIn("round 5", measurement.errors["numba_cuda"])
        self.assertEqual(len(measurement.orders), 9)
        self.assertEqual(run.exit_status(measurement, lambda text: None), 0)
        doc = run.document(measurement, {}, 30.0)
        errored = {e["name"] for e in doc["benchmarks"] if e.get("error_occurred")}
        self.assertEqual(errored, {f"first_result/numba_cuda/{p}" for p in run.PARTS}
                         | {"pair/first_result/numba_cuda/whole_process"})

    def test_orders_are_interleaved_and_shuffled(self):
        measurement = fake_measurement(self.fakes, [(n, self.fakes.good(n)) for n in ("cujit", "raw_driver", "cupy")])
        self.assertEqual(len(measurement.orders), 9)
        self.assertTrue(all(sorted(o) == ["cujit", "cupy", "raw_driver"] for o in measurement.orders))
        self.assertGreater(len({tuple(o) for o in measurement.orders}), 1)


# ---------------------------------------------------------------------------------------


class ChildrenTest(unittest.TestCase):
    def setUp(self):
        self.fakes = FakePrograms()
        self.addCleanup(self.fakes.cleanup)

    def child(self, body, timeout_s=30.0, program="cujit"):
        return run.run_child(program, self.fakes.script("child", body), dict(os.environ), timeout_s)

    def test_a_good_child(self):
        out = self.child(f"time.sleep(0.05)\nprint({result_line('cujit', version='9.9')!r}, flush=True)")
        self.assertTrue(out.ok, out.error)
        self.assertEqual((out.context_s, out.build_launch_s, out.version), (0.1, 0.02, "9.9"))
        self.assertGreater(out.whole_process_s, 0.05)

    def test_the_clock_stops_at_the_result_line_not_at_exit(self):
        out = self.child(f"print({result_line('cujit')!r}, flush=True)\ntime.sleep(1.0)")
        self.assertTrue(out.ok, out.error)
        self.assertLess(out.whole_process_s, 0.9)

    def test_ok_false_carries_the_reason(self):
        out = self.child(f"print({result_line('cujit', ok=False, error='cuInit: CUDA_ERROR_NO_DEVICE')!r})\n"
                         "sys.exit(1)")
        self.assertFalse(out.ok)
        self.assertIn("ok=false: cuInit: CUDA_ERROR_NO_DEVICE", out.error)

    def test_garbage_is_an_error_that_shows_the_garbage(self):
        out = self.child("print('hello, not json')\nprint('{not json either')")
        self.assertFalse(out.ok)
        self.assertIn("without a result line", out.error)
        self.assertIn("hello, not json", out.error)

    def test_chatter_before_the_result_line_is_tolerated(self):
        out = self.child(f"print('a library banner')\nprint({result_line('cujit')!r})")
        self.assertTrue(out.ok, out.error)

    def test_a_line_without_newline_at_exit_counts(self):
        out = self.child(f"sys.stdout.write({result_line('cujit')!r})")
        self.assertTrue(out.ok, out.error)

    def test_malformed_result_lines(self):
        cases = {
            json.dumps({"program": "cujit", "context_s": "fast", "build_launch_s": 0.1, "ok": True, "error": ""}):
                "context_s",
            json.dumps({"program": "cujit", "context_s": -1, "build_launch_s": 0.1, "ok": True, "error": ""}):
                "context_s",
            json.dumps({"program": "cujit", "context_s": 0.1, "build_launch_s": 0.1, "ok": "yes", "error": ""}):
                "ok",
            json.dumps({"program": "cupy", "context_s": 0.1, "build_launch_s": 0.1, "ok": True, "error": ""}):
                "expected 'cujit'",
            '{"program": "cujit", "context_s": NaN, "build_launch_s": 0.1, "ok": true, "error": ""}': "context_s",
        }
        for line, expected in cases.items():
            out = self.child(f"print({line!r})")
            self.assertFalse(out.ok, line)
            self.assertIn(expected, out.error, line)

    def test_ok_with_a_failing_exit_is_an_error(self):
        out = self.child(f"print({result_line('cujit')!r}, flush=True)\nsys.exit(4)")
        self.assertFalse(out.ok)
        self.assertIn("exited with status 4", out.error)

    def test_a_crash_names_the_signal_and_keeps_stderr(self):
        out = self.child("sys.stderr.write('about to crash\\n'); sys.stderr.flush()\n"
                         "import signal; os.kill(os.getpid(), signal.SIGSEGV)")
        self.assertFalse(out.ok)
        self.assertIn("SIGSEGV", out.error)
        self.assertIn("about to crash", out.error)

    def test_a_program_that_cannot_start(self):
        out = run.run_child("cujit", ["/nonexistent/first_result_cujit"], dict(os.environ), 5.0)
        self.assertFalse(out.ok)
        self.assertIn("cannot start /nonexistent/first_result_cujit", out.error)

    def test_a_hang_before_the_line_is_killed_at_the_timeout(self):
        pid_file = os.path.join(self.fakes.dir, "pid")
        start = time.perf_counter()
        out = self.child(f"open({pid_file!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)", timeout_s=1.0)
        self.assertLess(time.perf_counter() - start, 20)
        self.assertFalse(out.ok)
        self.assertIn("timed out after 1 s", out.error)
        self.assert_gone(int(open(pid_file).read()))

    def test_a_hang_after_the_line_is_an_error(self):
        pid_file = os.path.join(self.fakes.dir, "pid")
        out = self.child(f"open({pid_file!r}, 'w').write(str(os.getpid()))\n"
                         f"print({result_line('cujit')!r}, flush=True)\ntime.sleep(60)", timeout_s=1.5)
        self.assertFalse(out.ok)
        self.assertIn("did not exit within the 1.5 s timeout", out.error)
        self.assert_gone(int(open(pid_file).read()))

    def test_a_flood_of_output_is_cut_off(self):
        out = self.child("sys.stdout.write('x' * (3 << 20)); sys.stdout.flush(); time.sleep(60)", timeout_s=30)
        self.assertFalse(out.ok)
        self.assertIn("without a result line", out.error)

    def assert_gone(self, pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        self.fail(f"child {pid} is still running")


# ---------------------------------------------------------------------------------------


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def run_py(self, *args, timeout=600):
        return subprocess.run([sys.executable, "-B", RUN_PY, *args], capture_output=True, text=True,
                              timeout=timeout, check=False)

    def fake_build(self, cujit_ok=True):
        """A build directory whose two C++ programs are Python scripts: cujit writes the
        'cubin' on --write-cubin, the floor checks it reads that file."""
        build = os.path.join(self.tmp.name, "build")
        binaries = os.path.join(build, "bench", "first_result")
        os.makedirs(binaries)
        cujit = f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
if "--write-cubin" in args and {cujit_ok}:
    open(args[args.index("--write-cubin") + 1], "wb").write(b"cubin bytes")
    os.makedirs(os.environ["CUJIT_CACHE_DIR"], exist_ok=True)
    open(os.path.join(os.environ["CUJIT_CACHE_DIR"], "entry"), "wb").write(b"cached")
print({result_line("cujit", ok=cujit_ok, error="" if cujit_ok else "cuInit: CUDA_ERROR_NO_DEVICE")!r})
sys.exit(0 if {cujit_ok} else 1)
"""
        raw = f"""#!{sys.executable}
import sys
ok = open(sys.argv[1], "rb").read() == b"cubin bytes"
print({result_line("raw_driver")!r} if ok else "bad cubin")
"""
        for name, text in (("first_result_cujit", cujit), ("first_result_raw_driver", raw)):
            path = os.path.join(binaries, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(path, 0o755)
        return build

    def test_a_full_run_on_fake_programs(self):
        out = os.path.join(self.tmp.name, "out.json")
        done = self.run_py("--build", self.fake_build(), "--out", out, "--rounds", "9",
                           "--programs", "raw_driver,cujit")
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
        names = {e["name"] for e in doc["benchmarks"]}
        self.assertIn("pair/first_result/cujit/whole_process", names)
        self.assertIn("first_result/raw_driver/build_launch_median", names)
        context = doc["context"]
        self.assertIn("run.py fallback", context["run_record_source"])  # no bench_jit in a fake build
        for key in ("device", "driver_release", "cujit_mode", "vendor_cache", "cuda_module_loading",
                    "host_cpu_model", "host_load_avg", "cujit_git_commit"):
            self.assertIsInstance(context[key], str, key)
        self.assertNotIn("cupy_version", context)  # cupy was not asked for

    def test_a_failing_cujit_exits_1_naming_the_reason(self):
        out = os.path.join(self.tmp.name, "out.json")
        done = self.run_py("--build", self.fake_build(cujit_ok=False), "--out", out, "--rounds", "9",
                           "--programs", "raw_driver,cujit")
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("FAILED: cujit", done.stderr)
        self.assertIn("CUDA_ERROR_NO_DEVICE", done.stderr)
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertTrue(all(e.get("error_occurred") for e in doc["benchmarks"]))

    def test_wrong_command_lines_exit_2(self):
        build = self.fake_build()
        out = os.path.join(self.tmp.name, "out.json")
        for args, expected in ((["--rounds", "3"], "--rounds 3"),
                               (["--programs", "cujit,cupy"], "must include raw_driver"),
                               (["--programs", "raw_driver,cujit,triton"], "unknown triton"),
                               (["--timeout", "0"], "--timeout")):
            done = self.run_py("--build", build, "--out", out, *args)
            self.assertEqual(done.returncode, 2, args)
            self.assertIn(expected, done.stderr, args)
        self.assertFalse(os.path.exists(out))

    def test_the_real_programs_fail_cleanly_or_run(self):
        """The built programs: without a device both fail with their reason and run.py
        exits 1; with one, 9 short rounds run and exit 0."""
        build = os.environ.get("CUJIT_FIRST_RESULT_BUILD") or os.path.join(SOURCE_ROOT, "build", "default")
        binaries = [os.path.join(build, "bench", "first_result", name)
                    for name in ("first_result_cujit", "first_result_raw_driver")]
        for binary in binaries:
            self.assertTrue(os.access(binary, os.X_OK), f"{binary} is not built (set CUJIT_FIRST_RESULT_BUILD)")
        out = os.path.join(self.tmp.name, "out.json")
        done = self.run_py("--build", build, "--out", out, "--rounds", "9", "--programs", "raw_driver,cujit",
                           "--timeout", "120")
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
        entries = {e["name"]: e for e in doc["benchmarks"]}
        if done.returncode == 0:
            self.assertGreater(entries["pair/first_result/cujit/whole_process"]["ratio"], 0)
            return
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("FAILED: cujit", done.stderr)
        self.assertIn("exec-to-first-result failed", done.stderr)
        for name in ("first_result/cujit/whole_process", "first_result/raw_driver/whole_process"):
            self.assertTrue(entries[name]["error_occurred"])
            self.assertTrue(entries[name]["error_message"].strip())


if __name__ == "__main__":
    unittest.main()
