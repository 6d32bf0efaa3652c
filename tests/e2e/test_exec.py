# SPDX-License-Identifier: MIT
"""exec: what the program recorded before it replaced itself is in the dump,
flushed by the exec wrapper (the flusher's interval has not passed), and the
dump says the image ended with an exec: complete, main left open.  A new
image that preloads the agent goes on in the same dump, as the next image
of the same process."""

import json
import os
import subprocess

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

    def test_exec_traced_image(self):
        """exec of an instrumented program: its calls are in the same dump,
        exact, after the first image's; twice in a row too."""
        fib = self.prog("fib-O2")
        for level in LEVELS:
            exe = "exec-" + level
            prog = self.prog(exe)
            for mode in MODES:
                for chain in ([prog, fib, "10"], [prog, self.prog("exec-O0"), fib, "10"]):
                    with self.subTest(level=level, mode=mode, execs=len(chain) - 2):
                        r = self.traced(mode, chain)
                        self.assertEqual(r.stdout, "fib(10) = 55\n")
                        rep = self.report(r.dump)
                        self.assertTrue(rep["complete"], rep["errors"])
                        self.assertEqual((rep["errors"], rep["lost"], rep["processes"]),
                                         ([], 0, 1))
                        images = [a for a in chain if a.startswith("/")]
                        (proc,) = rep["process_list"]
                        self.assertEqual(proc["images"], images)
                        self.assertEqual(proc["exe"], fib)
                        self.assertEqual(proc["threads"], len(images))
                        calls = {}
                        for f in rep["functions"]:
                            key = (os.path.basename(f["module"]), f["name"])
                            calls[key] = (f["calls"], f["open"])
                        want = {("fib-O2", "main"): (1, 0),
                                ("fib-O2", "fib"): (tahelp.fib_calls(10), 0)}
                        for image in images[:-1]:
                            name = os.path.basename(image)
                            # main never returns: it exec'd.
                            want[(name, "main")] = (want.get((name, "main"), (0, 0))[0] + 1,
                                                    want.get((name, "main"), (0, 0))[1] + 1)
                            want[(name, "work")] = (want.get((name, "work"), (0, 0))[0] + 4, 0)
                        self.assertEqual(calls, want)
                        info = subprocess.run([tahelp.TRACEAGENT, "info", r.dump],
                                              capture_output=True, text=True,
                                              env=tahelp.clean_env())
                        self.assertIn("images:      %s (exec)" % " > ".join(images),
                                      info.stdout)

    def test_exec_environment(self):
        """The new image's environment is the program's plus the agent's
        own handover variables (the descriptor, and the recording's file
        for the processes it starts), and only when it preloads the agent."""
        self.need_host_program("env")
        prog = self.prog("exec-O2")
        env = "/usr/bin/env" if os.path.exists("/usr/bin/env") else "/bin/env"
        r = self.traced("preload", [prog, env], env={"SOME_SETTING": "x y"})
        lines = sorted(r.stdout.splitlines())
        handover = [l for l in lines if l.startswith("TRACEAGENT_DUMP_FD=")]
        self.assertEqual(len(handover), 1, lines)
        st = os.stat(r.dump)
        shared = [l for l in lines if l.startswith("TRACEAGENT_DUMP_FILE=")]
        self.assertEqual(len(shared), 1, lines)
        self.assertTrue(shared[0].startswith("TRACEAGENT_DUMP_FILE=%d:%d:" %
                                             (st.st_dev, st.st_ino)), shared)
        self.assertTrue(shared[0].endswith(":" + r.dump), shared)
        handover += shared
        plain = self.run_plain([env], env={"LD_PRELOAD": tahelp.AGENT,
                                           "TRACEAGENT_OUTPUT": r.dump,
                                           "SOME_SETTING": "x y"})
        self.assertEqual([l for l in lines if l not in handover],
                         sorted(plain.stdout.splitlines()))


if __name__ == "__main__":
    tahelp.main()
