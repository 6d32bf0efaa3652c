# SPDX-License-Identifier: MIT
"""report's percentiles, --tid, --function, --top and --csv on real runs.

spread holds a function for 100 us 60 times, 300 us 35 times and 1000 us
5 times (waiting on the clock, so never shorter): p50, p90 and p99 are the
nearest-rank percentiles of the calls' own durations (as replay lists
them) within the histogram's error, and never below the group each falls
in, however the scheduler stretched the calls."""

import csv
import io
import json

import tadump
import tahelp
from tahelp import LEVELS

# Histogram error: the middle of a bucket is within 1/256 of its values.
ERR = 1.0 / 256
US = 1000


class ReportMoreTest(tahelp.Case):

    def spread(self, level, rounds=1):
        r = self.traced("preload", [self.prog("spread-" + level), str(rounds)])
        rep = self.report(r.dump)
        self.assert_whole(rep)
        return r, rep

    def test_percentiles(self):
        for level in LEVELS:
            with self.subTest(level=level):
                r, rep = self.spread(level)
                hold = self.functions(rep)["hold"]
                self.assertEqual(hold["calls"], 100)
                calls = [json.loads(line) for line in
                         tadump.view(self, "replay", "--json", r.dump).stdout.splitlines()]
                durs = sorted(c["duration_ns"] for c in calls if c["name"] == "hold")
                self.assertEqual(len(durs), 100)
                # The two views convert ticks to ns each its own way: 1 ns.
                self.assertLessEqual(abs(hold["min_ns"] - durs[0]), 1, (hold, durs[0]))
                self.assertLessEqual(abs(hold["max_ns"] - durs[-1]), 1, (hold, durs[-1]))
                for k, floor in ((50, 100), (90, 300), (99, 1000)):
                    # The smallest duration with at least k% at or below.
                    exact = durs[(len(durs) * k + 99) // 100 - 1]
                    got = hold["p%d_ns" % k]
                    self.assertLessEqual(abs(got - exact), exact * ERR + 2, (k, exact, hold))
                    # Never below what the program waited for.
                    self.assertGreaterEqual(got, floor * US * (1 - ERR), hold)
                # One call: every percentile is that call.
                main = self.functions(rep)["main"]
                self.assertEqual(main["calls"], 1)
                for k in ("p50_ns", "p90_ns", "p99_ns"):
                    self.assertEqual(main[k], main["total_ns"], main)

    def test_percentiles_text(self):
        r, _ = self.spread("O2")
        p = self.report_raw(r.dump)
        self.assertEqual(p.returncode, 0, p.stderr)
        head = p.stdout.splitlines()[0].split()
        self.assertEqual(head, ["calls", "total", "self", "min", "max", "avg", "p50", "p90",
                                "p99", "function", "module"])

    def test_tid(self):
        r = self.traced("preload", [self.prog("threads-O2")])
        rep = self.report(r.dump, "--threads")
        for t in rep["per_thread"]:
            only = self.report(r.dump, "--tid=%d" % t["tid"])
            self.assertEqual(only["functions"], t["functions"], t["name"])
        p = self.report_raw(r.dump, "--tid=1")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "traceagent: %s: no thread 1 in the dump\n" % r.dump)

    def test_function_and_top(self):
        r = self.traced("preload", [self.prog("nest-O2")])
        whole = self.functions(self.report(r.dump))
        rep = self.report(r.dump, "--function=b*")
        self.assertEqual(sorted(self.functions(rep)), ["branch", "bud"])
        for f in rep["functions"]:
            self.assertEqual(f, whole[f["name"]])
        rep = self.report(r.dump, "--function=?run?")
        self.assertEqual(sorted(self.functions(rep)), ["trunk"])
        rep = self.report(r.dump, "--top=2")
        self.assertEqual([f["name"] for f in rep["functions"]], ["main", "trunk"])
        rep = self.report(r.dump, "--top=3", "--sort=calls")
        self.assertEqual([f["name"] for f in rep["functions"]], ["leaf", "bud", "branch"])

    def test_csv(self):
        for level in LEVELS:
            with self.subTest(level=level):
                r = self.traced("record", [self.prog("nest-" + level)])
                rep = self.report(r.dump)
                p = self.report_raw(r.dump, "--csv")
                self.assertEqual(p.returncode, 0, p.stderr)
                rows = list(csv.DictReader(io.StringIO(p.stdout)))
                self.assertEqual(len(rows), len(rep["functions"]))
                for row, f in zip(rows, rep["functions"]):
                    self.assertEqual(row["name"], f["name"])
                    self.assertEqual(row["module"], f["module"])
                    for k in ("offset", "calls", "total_ns", "self_ns", "min_ns", "max_ns",
                              "avg_ns", "p50_ns", "p90_ns", "p99_ns", "open"):
                        self.assertEqual(int(row[k]), f[k], (f["name"], k))


if __name__ == "__main__":
    tahelp.main()
