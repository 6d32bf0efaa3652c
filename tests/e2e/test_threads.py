# SPDX-License-Identifier: MIT
"""threads: 8 named threads at once; exact calls in all and per thread
(report --threads), thread names, events per thread."""

import re
import shutil

import tahelp
from tahelp import LEVELS, MODES

N = 8


class ThreadsTest(tahelp.Case):

    def test_threads(self):
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    self.check(mode, level)

    def check(self, mode, level):
        name = "threads-" + level
        r = self.traced(mode, [self.prog(name)])
        self.assertTrue(r.stdout.startswith("threads: 8 done"), r.stdout)
        rep = self.report(r.dump, "--threads")
        self.assert_whole(rep)
        self.assertEqual(rep["threads"], N + 1)
        total_work = sum(i + 1 for i in range(N))
        self.assert_calls(self.functions(rep), {
            "main": 1, "worker": N, "work": total_work, "step": 10 * total_work})

        per = rep["per_thread"]
        self.assertEqual(len(per), N + 1)
        self.assertEqual(len({t["tid"] for t in per}), N + 1, "thread ids are not distinct")
        by_name = {t["name"]: t for t in per}
        self.assertEqual(sorted(by_name),
                         sorted([name] + ["worker-%d" % i for i in range(N)]))
        main = by_name[name]
        self.assertEqual({f["name"]: f["calls"] for f in main["functions"]}, {"main": 1})
        self.assertEqual((main["events"], main["lost"]), (2, 0))
        for i in range(N):
            t = by_name["worker-%d" % i]
            calls = {f["name"]: f["calls"] for f in t["functions"]}
            self.assertEqual(calls, {"worker": 1, "work": i + 1, "step": 10 * (i + 1)},
                             "worker-%d" % i)
            self.assertEqual(t["lost"], 0)
            self.assertEqual(t["events"], 2 * sum(calls.values()), "worker-%d" % i)
        self.assertEqual(rep["events"], sum(t["events"] for t in per))

    def test_not_tracing_hooks_write_nothing_shared(self):
        """With the agent not tracing (here: the dump path is taken), every
        hook goes to the slow path through a placeholder block, whose head
        its claim writes.  One placeholder shared by all threads was a line
        they all wrote at every call: four threads on two cores ran 26x
        slower than untraced.  Helgrind names each race it finds: in the
        hooks, the only one left is first_block, where each thread's first
        event lands (written once a thread)."""
        self.skip_if_emulated("valgrind does not run under qemu-user")
        valgrind = shutil.which("valgrind")
        if not valgrind:
            self.skipTest("valgrind is not installed (scripts/test installs it)")
        taken = self.fresh("taken")
        with open(taken, "w"):
            pass
        prog = self.prog("threads-O2")
        r = self.run_preload([valgrind, "--tool=helgrind", prog], dump=taken)
        self.assertIn("not tracing", r.stderr)
        self.assertIn("threads: 8 done", r.stdout)
        in_hooks = [b for b in r.stderr.split("-----")
                    if "Possible data race" in b and "__cyg_profile_func_" in b]
        names = [re.search(r'inside data symbol "([^"]+)"', b) for b in in_hooks]
        self.assertEqual(sorted({m.group(1) if m else "(unnamed)" for m in names}) or
                         ["first_block"], ["first_block"], "\n".join(in_hooks))

    def test_output_unchanged(self):
        prog = self.prog("threads-O2")
        plain = self.run_plain([prog])
        for mode in MODES:
            r = self.run_mode(mode, [prog])
            self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout))


if __name__ == "__main__":
    tahelp.main()
