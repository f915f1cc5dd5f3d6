"""The A/B gate's decisions (reports/cujit_reports/ab_gate.py), on generated measurements:
a planted factor is found slower, identical arms pass, noise too large for the budget is
undecided (a failure), unusable runs are errors; and its reading of benchmark JSON."""
import math
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from cujit_reports import ab_gate, gate_families  # noqa: E402

FAMILY = gate_families.Family("fake", "bench_fake", "^fake/", ("time", "own"), repetitions=3)


def fake_measure(factor, noise, seed, own_share=0.01):
    """A measure() whose B arm is `factor` times slower than A, each run with lognormal noise;
    the slowdown lands in cujit's own time, as the planted slowdown does."""
    rng = random.Random(seed)

    def measure(arm, family):
        base = 0.040 * math.exp(rng.gauss(0, noise))
        own = base * own_share
        if arm.label == "B":
            extra = base * (factor - 1)
            return {"time": base + extra, "own": own + extra}
        return {"time": base, "own": own}
    return measure


class FakeClock:
    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


A = ab_gate.Arm("A", "/build/a")
B = ab_gate.Arm("B", "/build/b")


class DecisionTest(unittest.TestCase):
    def run_gate(self, factor, noise, seed, rule=None, step=0.1):
        return ab_gate.run_family(FAMILY, A, B, rule or ab_gate.Rule(), fake_measure(factor, noise, seed),
                                  clock=FakeClock(step))

    def test_a_planted_ten_percent_is_slower_across_seeds(self):
        for seed in range(40):
            result = self.run_gate(1.10, 0.03, seed)
            self.assertEqual(result.verdict, "slower", (seed, result))
            self.assertLessEqual(result.rounds, 20, seed)

    def test_identical_arms_pass_across_seeds(self):
        for seed in range(40):
            result = self.run_gate(1.0, 0.03, seed)
            self.assertEqual(result.verdict, "not slower", (seed, result))
            self.assertEqual(len(result.samples["time"]), result.rounds)

    def test_noise_too_large_for_the_budget_is_undecided_and_fails(self):
        rule = ab_gate.Rule(budget_s=3.0, max_rounds=60)
        result = self.run_gate(1.03, 0.60, 7, rule, step=0.1)
        self.assertEqual(result.verdict, "undecided")
        self.assertFalse(ab_gate.passed([result]))
        self.assertLess(result.rounds, 60)  # stopped by the budget, with its figures
        self.assertTrue(all(m.estimate is not None for m in result.metrics))

    def test_max_rounds_stops_an_undecided_family(self):
        rule = ab_gate.Rule(budget_s=1e9, max_rounds=12)
        result = self.run_gate(1.05, 0.40, 3, rule)
        self.assertEqual(result.rounds, 12)
        self.assertEqual(result.verdict, "undecided")

    def test_arms_alternate_which_runs_first(self):
        order = []

        def measure(arm, family):
            order.append(arm.label)
            return {"time": 1.0, "own": 0.0}
        ab_gate.run_family(FAMILY, A, B, ab_gate.Rule(max_rounds=6, min_rounds=6), measure, clock=FakeClock(0))
        self.assertEqual(order, ["A", "B", "B", "A", "A", "B", "B", "A", "A", "B", "B", "A"])

    def test_a_run_that_cannot_be_used_is_an_error_not_a_verdict(self):
        def measure(arm, family):
            raise ab_gate.GateInputError("B: fake exited 1")
        result = ab_gate.run_family(FAMILY, A, B, ab_gate.Rule(), measure, clock=FakeClock(0))
        self.assertEqual(result.verdict, "error")
        self.assertIn("exited 1", result.error)
        self.assertFalse(ab_gate.passed([result]))

    def test_own_is_judged_on_growth_relative_to_the_time(self):
        # A slowdown of 10% of the time, all of it cujit's own work: own grows by 0.10.
        a = {"time": 1.0, "own": 0.01}
        b = {"time": 1.1, "own": 0.11}
        self.assertAlmostEqual(ab_gate.paired_value("own", a, b), 0.10)
        self.assertAlmostEqual(ab_gate.paired_value("time", a, b), math.log(1.1))
        self.assertAlmostEqual(ab_gate.limit("time", 0.05), math.log(1.05))


def entry(name="fake/x/repeats:3", real_time=40.0, unit="ms", **counters):
    record = {"name": name, "run_name": name, "run_type": "iteration", "real_time": real_time}
    if unit is not None:
        record["time_unit"] = unit
    record.update(counters)
    return record


class ReadingTest(unittest.TestCase):
    def test_the_median_of_the_repetitions_in_seconds(self):
        document = {"benchmarks": [entry(real_time=t, own_s=o) for t, o in ((40, 1e-4), (400, 9e-4), (42, 2e-4))]}
        values = ab_gate.metrics_of(document, FAMILY)
        self.assertAlmostEqual(values["time"], 0.042)
        self.assertAlmostEqual(values["own"], 2e-4)

    def test_every_time_unit(self):
        for unit, scale in ab_gate.TIME_UNITS.items():
            document = {"benchmarks": [entry(real_time=3, unit=unit, own_s=0.0)] * 3}
            self.assertAlmostEqual(ab_gate.metrics_of(document, FAMILY)["time"], 3 * scale)

    def test_refusals(self):
        cases = {
            "no time unit": [entry(unit=None, own_s=0.0)] * 3,
            "unknown unit": [entry(unit="min", own_s=0.0)] * 3,
            "zero time": [entry(real_time=0, own_s=0.0)] * 3,
            "nan time": [entry(real_time=float("nan"), own_s=0.0)] * 3,
            "boolean time": [entry(real_time=True, own_s=0.0)] * 3,
            "boolean own_s": [entry(own_s=True)] * 3,
            "no own_s": [entry()] * 3,
            "too few repetitions": [entry(own_s=0.0)] * 2,
            "two benchmarks": [entry(own_s=0.0), entry(name="fake/y", own_s=0.0), entry(own_s=0.0)],
            "an error": [entry(own_s=0.0, error_occurred=True, error_message="boom")] * 3,
            "a skip": [entry(own_s=0.0, skipped=True, skip_message="no device")] * 3,
        }
        for what, benchmarks in cases.items():
            with self.assertRaises(ab_gate.GateInputError, msg=what):
                ab_gate.metrics_of({"benchmarks": benchmarks}, FAMILY)

    def test_aggregates_are_ignored(self):
        benchmarks = [entry(own_s=0.0)] * 3 + [dict(entry(real_time=1e9, own_s=0.0), run_type="aggregate")]
        self.assertAlmostEqual(ab_gate.metrics_of({"benchmarks": benchmarks}, FAMILY)["time"], 0.040)


CPU_FAMILY = gate_families.Family("fake_cpu", "bench_fake", "^fake/", ("cpu",), repetitions=3)


class ThreadCpuTest(unittest.TestCase):
    """The `cpu` metric: the benchmark thread's CPU time, trusted only while the run shows
    that other threads did (almost) none of the work."""

    def test_cpu_time_is_read_beside_the_wall_time(self):
        document = {"benchmarks": [entry(real_time=50, cpu_time=c, off_thread_cpu_s=0.0, waits=0.0)
                                   for c in (30, 31, 90)]}
        values = ab_gate.metrics_of(document, CPU_FAMILY)
        self.assertAlmostEqual(values["cpu"], 0.031)
        self.assertAlmostEqual(values["time"], 0.050)
        self.assertAlmostEqual(ab_gate.paired_value("cpu", {"cpu": 2.0}, {"cpu": 2.2}), math.log(1.1))

    def test_work_on_other_threads_refuses_the_run_at_the_limit_and_not_below(self):
        cpu_s = 0.030
        for share in (0.0, -ab_gate.OFF_THREAD_LIMIT * 0.5, ab_gate.OFF_THREAD_LIMIT * 0.99,
                      ab_gate.OFF_THREAD_LIMIT * 1.01, 0.37):
            document = {"benchmarks": [entry(real_time=50, cpu_time=30, off_thread_cpu_s=share * cpu_s, waits=0.0)] * 3}
            if share <= ab_gate.OFF_THREAD_LIMIT:
                self.assertAlmostEqual(ab_gate.metrics_of(document, CPU_FAMILY)["cpu"], cpu_s)
            else:
                with self.assertRaisesRegex(ab_gate.GateInputError, "other threads"):
                    ab_gate.metrics_of(document, CPU_FAMILY)

    def test_waiting_refuses_the_run_when_it_could_cost_the_limit(self):
        cpu_s = 40e-9  # a memory hit: one wait in 6,250 iterations is 2% of it
        allowed = ab_gate.OFF_THREAD_LIMIT * cpu_s / ab_gate.WAIT_COST_S
        for waits, refused in ((0.0, False), (allowed * 0.99, False), (allowed * 1.01, True), (1.0, True)):
            document = {"benchmarks": [entry(real_time=50, cpu_time=40, unit="ns", off_thread_cpu_s=0.0,
                                             waits=waits)] * 3}
            if refused:
                with self.assertRaisesRegex(ab_gate.GateInputError, "waited"):
                    ab_gate.metrics_of(document, CPU_FAMILY)
            else:
                self.assertAlmostEqual(ab_gate.metrics_of(document, CPU_FAMILY)["cpu"], cpu_s)

    def test_one_repetition_over_the_limit_refuses_the_run_whatever_the_median(self):
        clean = entry(real_time=50, cpu_time=30, off_thread_cpu_s=0.0, waits=0.0)
        for bad in (dict(clean, off_thread_cpu_s=0.010), dict(clean, waits=1000.0)):
            with self.assertRaises(ab_gate.GateInputError):
                ab_gate.metrics_of({"benchmarks": [clean, bad, clean]}, CPU_FAMILY)

    def test_refusals(self):
        cases = {
            "no cpu_time": [entry(off_thread_cpu_s=0.0, waits=0.0)] * 3,
            "zero cpu_time": [entry(cpu_time=0, off_thread_cpu_s=0.0, waits=0.0)] * 3,
            "boolean cpu_time": [entry(cpu_time=True, off_thread_cpu_s=0.0, waits=0.0)] * 3,
            "no off_thread_cpu_s": [entry(cpu_time=30, waits=0.0)] * 3,
            "no waits": [entry(cpu_time=30, off_thread_cpu_s=0.0)] * 3,
            "off_thread_cpu_s far below zero": [entry(cpu_time=30, off_thread_cpu_s=-1.0, waits=0.0)] * 3,
            "negative waits": [entry(cpu_time=30, off_thread_cpu_s=0.0, waits=-1.0)] * 3,
            "nan off_thread_cpu_s": [entry(cpu_time=30, off_thread_cpu_s=float("nan"), waits=0.0)] * 3,
            "nan waits": [entry(cpu_time=30, off_thread_cpu_s=0.0, waits=float("nan"))] * 3,
            "boolean off_thread_cpu_s": [entry(cpu_time=30, off_thread_cpu_s=False, waits=0.0)] * 3,
        }
        for what, benchmarks in cases.items():
            with self.assertRaises(ab_gate.GateInputError, msg=what):
                ab_gate.metrics_of({"benchmarks": benchmarks}, CPU_FAMILY)

    def test_the_table_names_the_thread_clock(self):
        result = ab_gate.run_family(CPU_FAMILY, A, B, ab_gate.Rule(), lambda arm, family: {"time": 1.0, "cpu": 0.5},
                                    clock=FakeClock(0.1))
        self.assertEqual(result.verdict, "not slower")
        self.assertIn("thread CPU B/A", ab_gate.markdown([result], A, B, ab_gate.Rule()))


class PhaseTest(unittest.TestCase):
    """Vendor phase counters ride along with the verdict, never decide it."""

    def test_phase_counters_are_read_as_medians_and_a_missing_one_is_left_out(self):
        rng = random.Random(7)
        for _ in range(50):
            optimizer = [rng.uniform(1, 100) for _ in range(3)]
            drop = rng.randrange(4)  # 3: the link phase is in every repetition
            benchmarks = []
            for i, value in enumerate(optimizer):
                counters = {"own_s": 0.0, "nvrtc_nvvm_optimizer_ms": value, "other_ms": 5.0, "nvrtc_flag": 1.0}
                if i != drop:
                    counters["nvjitlink_time_until_complete_ms"] = 2.0
                benchmarks.append(entry(**counters))
            values = ab_gate.metrics_of({"benchmarks": benchmarks}, FAMILY)
            self.assertAlmostEqual(values["phase:nvrtc_nvvm_optimizer_ms"], sorted(optimizer)[1])
            self.assertEqual("phase:nvjitlink_time_until_complete_ms" in values, drop == 3)
            self.assertNotIn("phase:other_ms", values)
            self.assertNotIn("phase:nvrtc_flag", values)

    def test_a_grown_phase_is_named_beside_the_verdict_and_changes_nothing(self):
        rng = random.Random(11)

        def measure(arm, family):
            base = 0.040 * math.exp(rng.gauss(0, 0.01))
            phases = {"phase:nvrtc_cuda_c_frontend_ms": 10.0, "phase:nvrtc_nvvm_optimizer_ms": 20.0}
            if arm.label == "B":
                phases["phase:nvrtc_nvvm_optimizer_ms"] = 30.0
            return {"time": base, "own": base * 0.01, **phases}

        result = ab_gate.run_family(FAMILY, A, B, ab_gate.Rule(), measure, clock=FakeClock(0.1))
        self.assertEqual(result.verdict, "not slower")
        self.assertAlmostEqual(result.phases["nvrtc_nvvm_optimizer_ms"], 1.5)
        self.assertAlmostEqual(result.phases["nvrtc_cuda_c_frontend_ms"], 1.0)
        text = ab_gate.markdown([result], A, B, ab_gate.Rule())
        self.assertIn("nvrtc_nvvm_optimizer_ms 1.500", text)
        self.assertEqual(ab_gate.to_json([result], A, B, ab_gate.Rule())["families"][0]["phases_b_over_a"],
                         result.phases)


class FamiliesTest(unittest.TestCase):
    def test_groups_and_names(self):
        self.assertEqual([f.name for f in gate_families.select("ci")], list(gate_families.GROUPS["ci"]))
        self.assertTrue(all(f.gpu for f in gate_families.select("gpu")))
        self.assertFalse(any(f.gpu for f in gate_families.select("cpu")))
        with self.assertRaises(ValueError):
            gate_families.select("cpu,no_such_family")
        names = [f.name for f in gate_families.FAMILIES]
        self.assertEqual(len(names), len(set(names)))

    def test_every_headline_family_is_gated(self):
        names = " ".join(f.name for f in gate_families.FAMILIES)
        for headline in ("memory_hit", "disk_hit_new_process", "compile", "link", "module_load", "reduce_into",
                         "stream_launch", "graph_launch", "parallel_sources", "e2e_launchable"):
            self.assertIn(headline, names)


if __name__ == "__main__":
    unittest.main()
