# SPDX-License-Identifier: MIT
"""fork: the agent does not record forked children yet (README, Limits).
What must hold now: both processes run and print as they would untraced,
and the parent's dump is whole, with exactly the parent's calls; the child
neither writes into it nor damages it.  When children are recorded, this
becomes: processes 2, child_work 5."""

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
                    rep = self.report(r.dump)
                    self.assert_whole(rep, processes=1)
                    funcs = self.functions(rep)
                    self.assertEqual(sorted(funcs), ["main", "parent_work"])
                    self.assert_calls(funcs, {"main": 1, "parent_work": 3})


if __name__ == "__main__":
    tahelp.main()
