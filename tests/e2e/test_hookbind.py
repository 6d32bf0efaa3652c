# SPDX-License-Identifier: MIT
"""The hooks' GOT entries bound when the agent starts (issue 30): with lazy
binding, an instrumented function's first call went through the dynamic
linker's binder for its hook (its min 0.4 to 7 us against 10 ns).  Once the
agent runs, the JUMP_SLOT entries of __cyg_profile_func_enter and _exit of
the program (linked -z lazy) hold the agent's hooks before the first exit
hook is called, and so do those of a library it dlopens lazily, before any
of its functions is called (hookbind.c looks at them).  Untraced, the same
entries are still lazy: what the test looks at is what binding left."""

import tahelp
from tahelp import LEVELS, MODES

# Lazy binding whatever the caller's environment (empty: not set).
LAZY = {"LD_BIND_NOW": ""}
BOUND = ("program enter: bound\nprogram exit: bound\n"
         "library enter: bound\nlibrary exit: bound\nsample_square(3) = 9\n")


class HookBindTest(tahelp.Case):

    def test_bound_at_start(self):
        for level in LEVELS:
            prog = self.prog("hookbind-" + level)
            plain = self.run_plain([prog, tahelp.LIBSAMPLE], env=LAZY)
            self.assertEqual(plain.returncode, 0, plain.stderr)
            # main's enter hook was called (so bound) before it looks.
            self.assertEqual(plain.stdout,
                             "program enter: bound\nprogram exit: lazy\n"
                             "library enter: lazy\nlibrary exit: lazy\nsample_square(3) = 9\n")
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    r = self.traced(mode, [prog, tahelp.LIBSAMPLE], env=LAZY)
                    self.assertEqual(r.stdout, BOUND)
                    rep = self.report(r.dump)
                    self.check_libsample(rep, 1, "hookbind-" + level)

    def test_filters_keep_theirs(self):
        # The filters point every entry at their own hooks (neither lazy
        # nor the global scope's): binding leaves them so.
        prog = self.prog("hookbind-O2")
        r = self.traced("preload", [prog, tahelp.LIBSAMPLE], env=dict(LAZY, TRACEAGENT_FILTER="main"))
        self.assertEqual(r.stdout, "program enter: other\nprogram exit: other\n"
                         "library enter: other\nlibrary exit: other\nsample_square(3) = 9\n")
        funcs = self.functions(self.report(r.dump))
        self.assert_calls(funcs, {"main": 1, "sample_square": 1, "sample_twice": 1})

if __name__ == "__main__":
    tahelp.main()
