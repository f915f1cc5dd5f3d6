"""A report over a run without a GPU (issue 33): the device is "none (no driver)" (the
loader's error once, in the run's line, not in every heading), no vendor-cache state is
claimed, and each empty plot says what run fills it."""
import json
import re
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import report  # noqa: E402
from cujit_reports import figures  # noqa: E402
from test_report_tables import WARM, quiet, result  # noqa: E402

NO_DRIVER = ("none (libcuda.so.1 could not be loaded (libcuda.so.1: cannot open shared object file: "
             "No such file or directory))")


class DeviceLabelTest(unittest.TestCase):
    def test_labels(self):
        self.assertEqual(figures.device_label(NO_DRIVER), "none (no driver)")
        self.assertEqual(figures.device_label("none (no CUDA device: cuInit returned 100)"), "none (no device)")
        self.assertEqual(figures.device_label("none (0 devices)"), "none (no device)")
        self.assertEqual(figures.device_label("NVIDIA H100 80GB HBM3"), "NVIDIA H100 80GB HBM3")
        self.assertTrue(figures.without_device(NO_DRIVER))
        self.assertFalse(figures.without_device("NVIDIA H100 80GB HBM3"))


class BarScaleTest(unittest.TestCase):
    """Bars are read as proportions: a log axis only when the values span two decades, and
    then the label says so."""

    def test_linear_unless_two_decades(self):
        self.assertEqual(report.bar_scale([1.0, 2.0, 99.0]), ("linear", ""))
        self.assertEqual(report.bar_scale([5.0]), ("linear", ""))
        self.assertEqual(report.bar_scale([]), ("linear", ""))
        scale, note = report.bar_scale([0.5, 20.0, 500.0])
        self.assertEqual(scale, "log")
        self.assertIn("3.0 decades", note)
        self.assertEqual(report.bar_scale([0.0, None, 3.0, 4.0]), ("linear", ""))


class NoGpuReportTest(unittest.TestCase):
    def test_report_reads_well_without_a_gpu(self):
        with open(result(WARM), encoding="utf-8") as f:
            doc = json.load(f)
        doc["context"]["device"] = NO_DRIVER
        doc["context"]["vendor_cache"] = "vendor-cache-warm"  # what CUDA_CACHE_DISABLE unset records
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bench_jit.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            code, _, err = quiet(report.main, ["--out", os.path.join(tmp, "out"), path])
            self.assertEqual(code, 0, err)
            with open(os.path.join(tmp, "out", "report.html"), encoding="utf-8") as f:
                page = f.read()
        self.assertIn("none (no driver)", page)
        # The loader's error once: the run's own line.
        self.assertEqual(page.count("libcuda.so.1 could not be loaded"), 1, page)
        # No state claimed in what a reader reads (the plots' file names keep the record's).
        self.assertNotIn("vendor-cache-warm", re.sub(r"<img [^>]*>", "", page))
        self.assertIn(figures.NO_DEVICE_STATE_LABEL, page)
        # Every empty plot names the run that fills it.
        empty = page.count("No data for this plot in these files.")
        self.assertEqual(page.count("No data for this plot in these files. It needs "), empty)


if __name__ == "__main__":
    unittest.main()
