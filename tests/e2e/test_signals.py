# SPDX-License-Identifier: MIT
"""Signal handlers that run instrumented code on top of a hook, on an
alternate stack: their events are recorded, in order, none lost; every
count equals the program's own."""

import tahelp
from tahelp import LEVELS


class SignalTest(tahelp.Case):

    def check_handlers(self, prog, args, min_alarms, env=None):
        """Runs prog at each level: its handlers ran at least min_alarms
        times, nothing was lost, and every count equals the program's."""
        for level in LEVELS:
            with self.subTest(level=level):
                r = self.traced("preload", [self.prog(prog + "-" + level)] + args, env=env)
                words = r.stdout.split()
                counts = {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
                self.assertGreater(counts["on_alarm"], min_alarms)  # the storm happened
                rep = self.report(r.dump)
                self.assert_whole(rep, processes=1)
                self.assertEqual(rep["lost"], 0, rep["lost_by_cause"])
                self.assert_calls(self.functions(rep), {"main": 1, **counts})

    def test_signal_storm(self):
        self.check_handlers("sigstorm", ["3000000"], 100)

    def test_deep_handlers_in_a_hook(self):
        """Each timer signal's handler records ~800 events (and a handler
        inside it as many), far more than the 8 slots in TLS put aside for
        events nested in a hook; landing in a hook's claim or in its slow
        path, they used to be counted lost (a few thousand a run).
        Lossless: none may be."""
        self.check_handlers("sigdeep", ["1000000", "200"], 10)

    def test_deep_handlers_in_a_drain(self):
        """The same with 4 KiB blocks: the thread often drains its own ring
        (the slow path's throttle), and a handler landing there filled
        blocks that neither it nor the flusher could drain before it
        returned.  It used to wait ~2 ms a block for them, longer than the
        timer's period: handlers ran back to back and the program never
        ended.  Then it went on at once; now the slow path (and the drain
        in it) runs with the asynchronous signals blocked, so the handlers
        wait for its end.  Still nothing lost."""
        self.check_handlers("sigdeep", ["1000000", "200"], 10, env={"TRACEAGENT_BUFFER": "4K"})

    def test_handlers_that_jump_out(self):
        """A timer's handler siglongjmps out, every 200 us, while the main
        loop makes tiny calls: it lands in hooks and in their slow path,
        which it abandons.  A hook's claim left behind made the agent put
        every later event aside, then count it lost (all but ~0.2-1% of
        them); a drain of the thread's own ring left behind hung the exit.
        Now nothing is lost and the program ends.  A hook abandoned after it
        recorded an entry counts a call whose body never ran: at most one a
        jump."""
        for env in ({}, {"TRACEAGENT_BUFFER": "4K"}):
            for level in LEVELS:
                with self.subTest(level=level, env=env):
                    r = self.traced("preload", [self.prog("sigjump-" + level), "1000000"],
                                    env=env)
                    words = r.stdout.split()
                    counts = {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
                    self.assertGreater(counts["on_alarm"], 10)  # it jumped
                    rep = self.report(r.dump)
                    self.assert_whole(rep, processes=1)
                    self.assertEqual(rep["lost"], 0, rep["lost_by_cause"])
                    calls = self.functions(rep)
                    self.assertEqual(calls["main"]["calls"], 1)
                    self.assertEqual(calls["on_alarm"]["calls"], counts["on_alarm"])
                    self.assertGreaterEqual(calls["leaf"]["calls"], counts["leaf"])
                    self.assertLessEqual(calls["leaf"]["calls"],
                                         counts["leaf"] + counts["on_alarm"])


if __name__ == "__main__":
    tahelp.main()
