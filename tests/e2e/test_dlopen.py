# SPDX-License-Identifier: MIT
"""dlopen: libsample.so opened after the program started; its functions
are resolved as when it is linked (test_lib.py)."""

import tahelp
from tahelp import LEVELS, MODES


class DlopenTest(tahelp.Case):

    def test_dlopen(self):
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    exe = "dlopen-" + level
                    r = self.traced(mode, [self.prog(exe), tahelp.LIBSAMPLE, "9"])
                    self.assertEqual(r.stdout, "dlopen: 9 calls, sum 204\n")
                    self.check_libsample(self.report(r.dump), 9, exe)


if __name__ == "__main__":
    tahelp.main()
