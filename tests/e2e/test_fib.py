# SPDX-License-Identifier: MIT
"""fib: exact call counts of a recursive function at -O0 and -O2, preloaded
and through `traceagent record`, and the recursion rules of the report."""

import os

import tahelp
from tahelp import LEVELS, MODES, fib_calls


class FibTest(tahelp.Case):

    def check_fib(self, mode, level, n):
        prog = self.prog("fib-" + level)
        r = self.traced(mode, [prog, str(n)])
        self.assertEqual(r.stdout, "fib(%d) = %d\n" % (n, self.fib_value(n)))
        rep = self.report(r.dump)
        self.assert_whole(rep)
        self.assertEqual(rep["threads"], 1)
        funcs = self.functions(rep)
        self.assert_calls(funcs, {"main": 1, "fib": fib_calls(n)})
        self.assertEqual(rep["events"], 2 * (1 + fib_calls(n)))
        for name in ("main", "fib"):
            self.assertEqual(os.path.basename(funcs[name]["module"]), "fib-" + level)
            self.assertEqual(funcs[name]["offset"], tahelp.elf_symbols(prog)[name], name)
        return funcs

    @staticmethod
    def fib_value(n):
        a, b = 0, 1
        for _ in range(n):
            a, b = b, a + b
        return a

    def test_counts(self):
        for level in LEVELS:
            for mode in MODES:
                for n in (1, 20):
                    with self.subTest(level=level, mode=mode, n=n):
                        self.check_fib(mode, level, n)

    def test_bigger(self):
        for level in LEVELS:
            with self.subTest(level=level):
                self.check_fib("preload", level, 25)

    def test_events_chunks_are_large(self):
        """The flusher's passes that producers ask for (every 4 blocks)
        leave small chunks open: fib(27)'s 1.2M events go out in chunks of
        256 KiB of events or more, not in one ~25 KiB chunk a pass (which
        LZ4 packs worse: 0.58 against 0.46 bytes an event on fib 30).  The
        timed pass every 50 ms writes what is open, so the median chunk is
        the measure."""
        self.skip_if_emulated("an emulated fib is slow enough that the timed passes cut every chunk")
        r = self.run_preload([self.prog("fib-O2"), "27"])
        self.assertEqual(r.returncode, 0, r.stderr)
        raw = tahelp.chunk_raw_sizes(r.dump, tahelp.CHUNK_EVENTS)
        self.assertGreater(len(raw), 1)
        raw.sort()
        self.assertGreaterEqual(raw[len(raw) // 2], 128 << 10, raw)

    def test_recursion(self):
        """total counts only the outermost activation, so fib's total is its
        longest call and the sum of its self times; main's total is its self
        plus fib's total (within 1 ns of rounding per call)."""
        n = 18
        for level in LEVELS:
            with self.subTest(level=level):
                funcs = self.check_fib("preload", level, n)
                fib, main = funcs["fib"], funcs["main"]
                calls = fib["calls"]
                self.assert_times_sane(fib)
                self.assertEqual(fib["max_ns"], fib["total_ns"])
                self.assertLessEqual(abs(fib["self_ns"] - fib["total_ns"]), calls)
                self.assertLessEqual(fib["total_ns"], main["total_ns"])
                self.assertLessEqual(
                    abs(main["self_ns"] + fib["total_ns"] - main["total_ns"]), calls + 1)
                self.assertEqual(main["min_ns"], main["total_ns"])
                self.assertEqual(main["max_ns"], main["total_ns"])
                self.assertEqual(main["avg_ns"], main["total_ns"])

    def test_output_unchanged(self):
        for level in LEVELS:
            with self.subTest(level=level):
                prog = self.prog("fib-" + level)
                plain = self.run_plain([prog, "22"])
                for mode in MODES:
                    r = self.run_mode(mode, [prog, "22"])
                    self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout))

    def test_text_report(self):
        prog = self.prog("fib-O0")
        r = self.traced("preload", [prog, "15"])
        p = self.report_raw(r.dump)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [l.split() for l in p.stdout.splitlines()]
        fib_rows = [row for row in rows if "fib" in row]
        self.assertEqual(len(fib_rows), 1, p.stdout)
        self.assertEqual(fib_rows[0][0], str(fib_calls(15)), p.stdout)
        self.assertEqual(fib_rows[0][-1], "fib-O0", p.stdout)
        main_rows = [row for row in rows if "main" in row]
        self.assertEqual(len(main_rows), 1, p.stdout)
        # Sorted by total: main contains fib.
        self.assertLess(rows.index(main_rows[0]), rows.index(fib_rows[0]), p.stdout)


if __name__ == "__main__":
    tahelp.main()
