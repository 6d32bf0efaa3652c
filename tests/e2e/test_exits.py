# SPDX-License-Identifier: MIT
"""The ways a program ends (exit from another thread deep in calls,
quick_exit with its handlers, exit deep in main): same status as untraced,
a complete dump with every call up to the end, the unfinished ones counted
as open.  And thread churn: 10,000 short threads, every event of every one
in the dump, with the memory of exited threads reused."""

import os
import subprocess

import tahelp
from tahelp import LEVELS, MODES


class ExitsTest(tahelp.Case):

    def check(self, level, how, code, want):
        for mode in MODES:
            with self.subTest(level=level, how=how, mode=mode):
                r = self.traced(mode, [self.prog("exits-" + level), how, str(code)],
                                expect_status=code)
                rep = self.report(r.dump)
                self.assertTrue(rep["complete"], rep["errors"])
                self.assertEqual((rep["lost"], rep["errors"]), (0, []))
                funcs = self.functions(rep)
                # The library calls recorded by default (a usleep) are
                # test_libcalls' business.
                got = {n: (f["calls"], f["open"]) for n, f in funcs.items()
                       if n != "spin" and f["module"] != "[libcall]"}
                self.assertEqual(got, want)

    def test_exits(self):
        for level in LEVELS:
            self.check(level, "thread", 3, {"main": (1, 1), "exiter": (1, 1), "outer": (1, 1),
                                             "inner": (1, 1), "work": (1, 0)})
            self.check(level, "quick", 4, {"main": (1, 1), "outer": (1, 1), "inner": (1, 1),
                                            "work": (1, 0), "on_quick_exit": (1, 0),
                                            "handler_work": (1, 0)})
            self.check(level, "deep", 6, {"main": (1, 1), "outer": (1, 1), "inner": (1, 1),
                                           "work": (1, 0)})

    def test_thread_churn(self):
        prog = self.prog("exits-O2")
        r = self.traced("preload", [prog, "churn", "10000"])
        self.assertEqual(r.stdout, "work 30000\n")
        rep = self.report(r.dump)
        self.assert_whole(rep, processes=1)
        self.assertEqual(rep["threads"], 10001)
        self.assert_calls(self.functions(rep), {"main": 1, "churner": 10000, "work": 30000})
        # Exited threads' records and blocks are reused: the peak resident
        # size stays far below 10,000 threads' worth of 64 KiB blocks.  Each
        # exited thread's last block wakes the flusher (every 64): on one
        # CPU, where it runs only when woken, the backlog peaked at 40-69
        # MiB without that, 5 MiB with it.
        self.skip_if_emulated("qemu-user keeps ~300 KiB for every thread that ran: "
                              "10,000 threads peak at 3 GB untraced")
        env = tahelp.clean_env()
        env.update(LD_PRELOAD=tahelp.AGENT, TRACEAGENT_OUTPUT=self.fresh("churn"))
        p = subprocess.Popen([prog, "churn", "10000"], env=env, stdout=subprocess.DEVNULL)
        # This child's own peak (wait4), not RUSAGE_CHILDREN's, which is
        # the largest of every child so far: the report above among them.
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        self.assertEqual(p.returncode, 0)
        self.assertLess(usage.ru_maxrss, 32 * 1024, "peak RSS %d KiB" % usage.ru_maxrss)


if __name__ == "__main__":
    tahelp.main()
