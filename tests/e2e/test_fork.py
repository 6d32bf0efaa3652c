# SPDX-License-Identifier: MIT
"""fork: the child is recorded too, into the same dump, as a process of its
own.  Both processes run and print as they would untraced; the dump is
whole and holds exactly each one's calls.  The frames open at the fork
(main) were entered by the parent: the child does not record them again,
and its return from main is not an exit of a function never entered."""

import tahelp
from tahelp import LEVELS, MODES


class ForkTest(tahelp.Case):

    def test_fork(self):
        for level in LEVELS:
            prog = self.prog("fork-" + level)
            plain = self.run_plain([prog])
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    r = self.traced(mode, [prog])
                    self.assertEqual(r.stdout, plain.stdout)
                    self.assertEqual(r.stdout, "fork: child done\nfork: parent done\n")
                    rep = self.report(r.dump, "--threads")
                    self.assert_whole(rep, processes=2)
                    funcs = self.functions(rep)
                    self.assertEqual(sorted(funcs), ["child_work", "main", "parent_work"])
                    self.assert_calls(funcs, {"main": 1, "parent_work": 3, "child_work": 5})
                    # Each process has exactly its own calls.
                    by_pid = {}
                    for t in rep["per_thread"]:
                        names = {f["name"]: f["calls"] for f in t["functions"]}
                        by_pid.setdefault(t["pid"], {}).update(names)
                    self.assertEqual(len(by_pid), 2)
                    self.assertIn({"main": 1, "parent_work": 3}, list(by_pid.values()))
                    self.assertIn({"child_work": 5}, list(by_pid.values()))
                    # The processes, and each one alone with --pid.
                    procs = rep["process_list"]
                    self.assertEqual(len(procs), 2)
                    pids = {p["pid"] for p in procs}
                    (child,) = [p for p in procs if p["ppid"] in pids]
                    (parent,) = [p for p in procs if p is not child]
                    self.assertEqual(child["ppid"], parent["pid"])
                    for p, want in ((parent, {"main": 1, "parent_work": 3}),
                                    (child, {"child_work": 5})):
                        one = self.report(r.dump, "--pid=%d" % p["pid"])
                        self.assertEqual({f["name"]: f["calls"] for f in one["functions"]},
                                         want)


if __name__ == "__main__":
    tahelp.main()
