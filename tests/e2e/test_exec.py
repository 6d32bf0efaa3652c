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

    def test_spawn_and_vfork(self):
        """posix_spawn and vfork + exec: the children run (untraced: they
        run no instrumented code), and the parent's dump is whole, exact."""
        self.need_host_program("/bin/true")
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    r = self.traced(mode, [self.prog("spawn-" + level), "/bin/true"])
                    self.assertEqual(r.stdout, "spawned 0 0\n")
                    rep = self.report(r.dump)
                    self.assert_whole(rep, processes=1)
                    self.assert_calls(self.functions(rep), {"main": 1, "work": 4})


if __name__ == "__main__":
    tahelp.main()
