# SPDX-License-Identifier: MIT
"""longjmp: frames abandoned by a longjmp or a siglongjmp (their exit hooks
never run) are closed at the jump, flagged unwound: exact calls, exact
nesting of what follows, none left open, and no time charged to them for
what the function that called setjmp did after the jump."""

import json

import tadump
import tahelp
from tahelp import LEVELS, MODES

CALLS = {"main": 1, "outer": 3, "inner": 3, "deeper": 3, "after": 3}

# jumps.c, in the order the calls end: (depth, name, unwound).  The frames a
# jump left end at the jump, before anything the setjmp caller does next.
PAUSE_MS = 200
JUMPS = [
    (6, "f5", True), (5, "f4", True), (4, "f3", True), (3, "f2", True), (2, "f1", True),
    (2, "pause_here", False), (2, "after_deep", False), (1, "deep", False),
    (6, "rec", True), (5, "rec", True), (4, "rec", True),
    (4, "pause_here", False), (4, "after_rec", False),
    (3, "rec", False), (2, "rec", False), (1, "rec", False),
    (5, "handler_helper", True), (4, "on_signal", True), (3, "sig_inner", True),
    (2, "sig_mid", True),
    (2, "pause_here", False), (2, "after_sig", False), (1, "sig_outer", False),
    (0, "main", False),
]


class LongjmpTest(tahelp.Case):

    def test_longjmp(self):
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    r = self.traced(mode, [self.prog("longjmp-" + level)])
                    self.assertEqual(r.stdout, "longjmp: 6\n")
                    rep = self.report(r.dump)
                    self.assert_whole(rep)
                    funcs = self.functions(rep)
                    self.assertEqual(sorted(funcs), sorted(CALLS))
                    self.assert_calls(funcs, CALLS)
                    for f in funcs.values():
                        self.assert_times_sane(f)
                    # deeper() and inner() are left by every jump, and
                    # by nothing else.
                    self.assertEqual({n: f["unwound"] for n, f in funcs.items()},
                                     {"main": 0, "outer": 0, "inner": 3, "deeper": 3,
                                      "after": 0})
                    # The abandoned frames end inside outer().
                    self.assertLessEqual(funcs["inner"]["total_ns"], funcs["outer"]["total_ns"])
                    self.assertLessEqual(funcs["deeper"]["total_ns"], funcs["inner"]["total_ns"])

    def test_jumps(self):
        """longjmp out of five frames, longjmp to an outer instance of a
        recursive function, siglongjmp out of a signal handler; at -O2 with
        _FORTIFY_SOURCE (__longjmp_chk)."""
        pause_ns = PAUSE_MS * 1000000
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    r = self.traced(mode, [self.prog("jumps-" + level), str(PAUSE_MS)])
                    self.assertEqual(r.stdout, "jumps: 3\n")
                    rep = self.report(r.dump)
                    self.assert_whole(rep)
                    funcs = self.functions(rep)
                    self.assertEqual(funcs["rec"]["calls"], 6)
                    self.assertEqual(funcs["rec"]["unwound"], 3)
                    for name in ("f1", "f2", "f3", "f4", "f5", "handler_helper",
                                 "on_signal", "sig_inner", "sig_mid"):
                        self.assertEqual((funcs[name]["calls"], funcs[name]["unwound"]),
                                         (1, 1), name)
                    p = tadump.view(self, "replay", "--json", r.dump)
                    calls = [json.loads(l) for l in p.stdout.splitlines()]
                    # The pauses' nanosleep zones (library calls) apart.
                    naps = [c for c in calls if c["module"] == "[libcall]"]
                    calls = [c for c in calls if c["module"] != "[libcall]"]
                    self.assertEqual([(c["depth"], c["name"]) for c in naps],
                                     [(3, "nanosleep"), (5, "nanosleep"), (3, "nanosleep")])
                    self.assertEqual([(c["depth"], c["name"], c["unwound"]) for c in calls],
                                     JUMPS)
                    for c in calls:
                        self.assertFalse(c["open"], c)
                        if c["name"] == "pause_here":
                            self.assertGreaterEqual(c["duration_ns"], pause_ns, c)
                        if c["unwound"]:
                            # Closed at the jump: the pause that follows
                            # is not theirs.
                            self.assertLess(c["duration_ns"], pause_ns // 2, c)

    def test_fork(self):
        """A forked child longjmps to its parent's setjmp: the frames it
        leaves (entered by the parent) go, whether the parent's setjmp was
        still in its ring at the fork (0) or already encoded (300 ms, six
        flush periods): child_after() runs in outer(), at depth 2."""
        for pause in ("0", "300"):
            for mode in MODES:
                with self.subTest(pause=pause, mode=mode):
                    r = self.traced(mode, [self.prog("forkjmp-O0"), pause])
                    self.assertEqual(sorted(r.stdout.splitlines()),
                                     ["forkjmp: child", "forkjmp: parent"])
                    rep = self.report(r.dump)
                    self.assert_whole(rep, processes=2)
                    self.assert_calls(self.functions(rep),
                                      {"main": 1, "outer": 1, "mid": 1, "low": 1,
                                       "child_after": 1, "parent_after": 1})
                    p = tadump.view(self, "replay", "--json", r.dump)
                    calls = {c["name"]: c for c in map(json.loads, p.stdout.splitlines())}
                    self.assertEqual(calls["child_after"]["depth"], 2)
                    self.assertEqual(calls["parent_after"]["depth"], 2)
                    self.assertNotEqual(calls["child_after"]["pid"], calls["main"]["pid"])


if __name__ == "__main__":
    tahelp.main()
