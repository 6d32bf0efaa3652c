# SPDX-License-Identifier: MIT
"""longjmp: frames abandoned by a longjmp (their exit hooks never run) are
closed when the function they jumped back into exits: exact calls, none
left open, the dump whole."""

import tahelp
from tahelp import LEVELS, MODES

CALLS = {"main": 1, "outer": 3, "inner": 3, "deeper": 3, "after": 3}


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
                    # The abandoned frames end inside outer().
                    self.assertLessEqual(funcs["inner"]["total_ns"], funcs["outer"]["total_ns"])
                    self.assertLessEqual(funcs["deeper"]["total_ns"], funcs["inner"]["total_ns"])


if __name__ == "__main__":
    tahelp.main()
