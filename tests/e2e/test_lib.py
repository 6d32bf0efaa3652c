# SPDX-License-Identifier: MIT
"""libsample.so: functions of a linked shared library, resolved by name
(the static one through .symtab) with the library as their module and the
symbol's value as their offset."""

import tahelp
from tahelp import LEVELS, MODES


class LibTest(tahelp.Case):

    def test_linked(self):
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    exe = "uselib-" + level
                    r = self.traced(mode, [self.prog(exe), "11"])
                    self.assertEqual(r.stdout, "uselib: 11 calls, sum 385\n")
                    self.check_libsample(self.report(r.dump), 11, exe)


if __name__ == "__main__":
    tahelp.main()
