# SPDX-License-Identifier: MIT
"""_exit: a program that ends without returning from main or running
destructors still leaves a complete dump, its unfinished calls counted as
open."""

import tahelp
from tahelp import LEVELS, MODES


class ExitTest(tahelp.Case):

    def test_underscore_exit(self):
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    r = self.traced(mode, [self.prog("status-" + level), "_exit", "5"],
                                    expect_status=5)
                    self.assertEqual(r.stdout, "leaving with 5\n")
                    rep = self.report(r.dump)
                    self.assertTrue(rep["complete"])
                    self.assertEqual((rep["lost"], rep["errors"]), (0, []))
                    funcs = self.functions(rep)
                    self.assertEqual(sorted(funcs), ["leave", "main"])
                    for name in ("main", "leave"):
                        self.assertEqual((funcs[name]["calls"], funcs[name]["open"]), (1, 1),
                                         name)
                    self.assertLessEqual(funcs["leave"]["total_ns"], funcs["main"]["total_ns"])


if __name__ == "__main__":
    tahelp.main()
