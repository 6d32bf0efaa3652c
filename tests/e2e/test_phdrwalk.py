# SPDX-License-Identifier: MIT
"""A program's walk of the loaded objects beside the agent's own dlopen
(issue 30).  phdrwalk calls dlsym, dladdr and dl_iterate_phdr from inside
its dl_iterate_phdr callback, as a program with no other thread that loads
may: the walk holds the loader's list lock, dlsym then takes the loader's
lock.  The flusher's dlopen of libunwind (some 20 ms after the start) takes
the two the other way round; before the gate, the traced program hung there
every time (the walk's first callback sleeps 200 ms), untraced it never
does."""

import tahelp
from tahelp import LEVELS, MODES

WORK = 2 * 987 - 1  # calls of work(15): 2 fib(16) - 1
OUT = "".join("walk %d: nested same, dlsym ok, dladdr ok, fib 610\n" % i for i in (1, 2, 3))


class PhdrWalkTest(tahelp.Case):

    def test_walk_beside_the_flusher(self):
        for level in LEVELS:
            prog = self.prog("phdrwalk-" + level)
            plain = self.run_plain([prog, "200"])
            self.assertEqual((plain.returncode, plain.stdout), (0, OUT), plain.stderr)
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    r = self.traced(mode, [prog, "200"])
                    self.assertEqual(r.stdout, OUT)
                    rep = self.report(r.dump)
                    self.assert_whole(rep)
                    self.assert_calls(self.functions(rep), {"main": 1, "work": 3 * WORK})


if __name__ == "__main__":
    tahelp.main()
