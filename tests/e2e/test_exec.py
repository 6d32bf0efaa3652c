# SPDX-License-Identifier: MIT
"""exec: what the program recorded before it replaced itself is in the dump,
flushed by the exec wrapper (the flusher's interval has not passed), and the
dump says the image ended with an exec: complete, main left open."""

import tahelp
from tahelp import LEVELS, MODES


class ExecTest(tahelp.Case):

    def test_exec(self):
        for level in LEVELS:
            prog = self.prog("exec-" + level)
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    self.need_host_program("/bin/true")
                    r = self.traced(mode, [prog, "/bin/true"])
                    self.assertEqual(r.returncode, 0)
                    rep = self.report(r.dump)
                    # Whole, though main never returned (assert_whole wants
                    # every frame closed).
                    self.assertTrue(rep["complete"], rep["errors"])
                    self.assertEqual((rep["errors"], rep["lost"], rep["processes"]), ([], 0, 1))
                    funcs = self.functions(rep)
                    self.assert_calls(funcs, {"main": 1, "work": 4})
                    self.assertEqual(funcs["main"]["open"], 1)


if __name__ == "__main__":
    tahelp.main()
