# SPDX-License-Identifier: MIT
"""Crashes: the program dies exactly as it would untraced (same signal, same
core-dump bit), and the dump is whole: every call up to the crash, the
signal, the crashing thread, a backtrace naming the function that faulted,
and where each thread was."""

import json
import os
import signal
import subprocess
import tempfile

import tahelp
from tahelp import LEVELS, MODES

EM_AARCH64 = 183

CASES = {"segv": signal.SIGSEGV, "abort": signal.SIGABRT, "fpe": signal.SIGFPE,
         "ill": signal.SIGILL, "bus": signal.SIGBUS}


class CrashTest(tahelp.Case):

    def status(self, argv, env):
        """The raw wait status, with cores allowed, in a scratch directory."""
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.Popen(argv, env=env, cwd=d, preexec_fn=tahelp.allow_core,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _, st = os.waitpid(p.pid, 0)
            p.stderr.close()
            return st

    def test_crashes(self):
        for level in LEVELS:
            prog = self.prog("crash-" + level)
            for how, sig in CASES.items():
                with self.subTest(level=level, how=how):
                    if how == "fpe" and tahelp.elf_machine(prog) == EM_AARCH64:
                        self.skipTest("aarch64: integer division by zero gives 0, no SIGFPE")
                    plain = self.status([prog, how], tahelp.clean_env())
                    self.assertTrue(os.WIFSIGNALED(plain))
                    self.assertEqual(os.WTERMSIG(plain), sig)
                    dump = self.fresh("crash-%s-%s.trace" % (level, how))
                    env = tahelp.clean_env()
                    env.update(LD_PRELOAD=tahelp.AGENT, TRACEAGENT_OUTPUT=dump)
                    traced = self.status([prog, how], env)
                    # Same death, core bit included.
                    self.assertEqual(traced, plain)
                    p = self.report_raw(dump, "--json")
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertIn("crashed with signal %d" % sig, p.stderr)
                    rep = json.loads(p.stdout)
                    self.assertTrue(rep["complete"])
                    self.assertEqual(rep["lost"], 0)
                    funcs = self.functions(rep)
                    self.assert_calls(funcs, {"main": 1, "deeper": 1, "fault": 1, "work": 8})
                    for name in ("main", "deeper", "fault"):
                        self.assertEqual(funcs[name]["open"], 1)
                    info = json.loads(subprocess.run(
                        [tahelp.TRACEAGENT, "info", "--json", dump], capture_output=True,
                        text=True, env=tahelp.clean_env()).stdout)
                    (proc,) = info["processes"]
                    crash = proc["crash"]
                    self.assertEqual(crash["signal"], sig)
                    self.assertEqual(crash["tid"], proc["pid"])
                    # GCC may move the crashing path of fault() into fault.cold.
                    names = [f["function"].replace(".cold", "") for f in crash["backtrace"]]
                    self.assertIn("fault", names)
                    if how != "abort":  # abort faults in libc, below fault()
                        self.assertEqual(names[0], "fault")
                    self.assertEqual(names[names.index("fault"):][:3], ["fault", "deeper", "main"])
                    (stack,) = crash["stacks"]
                    self.assertEqual([f["function"] for f in stack["open"]],
                                     ["main", "deeper", "fault"])

    def test_stack_overflow(self):
        # The thread's stack is exhausted: the handler runs on the agent's
        # alternate stack, so the crash is recorded like any other.
        for level in LEVELS:
            prog = self.prog("crash-" + level)
            with self.subTest(level=level):
                plain = self.status([prog, "overflow"], tahelp.clean_env())
                self.assertTrue(os.WIFSIGNALED(plain))
                self.assertEqual(os.WTERMSIG(plain), signal.SIGSEGV)
                dump = self.fresh("overflow-%s.trace" % level)
                env = tahelp.clean_env()
                env.update(LD_PRELOAD=tahelp.AGENT, TRACEAGENT_OUTPUT=dump)
                self.assertEqual(self.status([prog, "overflow"], env), plain)
                p = self.report_raw(dump, "--json")
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("crashed with signal %d" % signal.SIGSEGV, p.stderr)
                rep = json.loads(p.stdout)
                self.assertTrue(rep["complete"], p.stderr)
                self.assertEqual(rep["lost"], 0)
                funcs = self.functions(rep)
                self.assert_calls(funcs, {"main": 1, "deeper": 1, "fault": 1, "work": 8})
                depth = funcs["recurse"]["calls"]
                self.assertGreater(depth, 100)
                self.assertEqual(funcs["recurse"]["open"], depth)
                info = json.loads(subprocess.run(
                    [tahelp.TRACEAGENT, "info", "--json", dump], capture_output=True,
                    text=True, env=tahelp.clean_env()).stdout)
                (proc,) = info["processes"]
                crash = proc["crash"]
                self.assertEqual((crash["signal"], crash["tid"]), (signal.SIGSEGV, proc["pid"]))
                bt = crash["backtrace"]
                # The fault may land in the agent's enter hook, called
                # from recurse's prologue: the program's frames follow.
                while bt and os.path.basename(bt[0]["module"]) == "libtraceagent.so":
                    bt = bt[1:]
                names = [f["function"] for f in bt]
                self.assertGreaterEqual(len(names), 32, crash["backtrace"])
                self.assertEqual(names[:32], ["recurse"] * 32)
                (stack,) = crash["stacks"]
                self.assertEqual([f["function"] for f in stack["open"]],
                                 ["main", "deeper", "fault"] + ["recurse"] * depth)

    def test_program_altstack_unchanged(self):
        # The agent's alternate stack is not the program's: sigaltstack
        # says there is none, the program's own replaces it, and its
        # handler runs on its own stack.
        prog = self.prog("crash-O0")
        plain = self.run_plain([prog, "altstack"])
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertEqual(plain.stdout, "before: disabled\nafter: own\nhandler: on own\n")
        r = self.run_preload([prog, "altstack"])
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, plain.stdout, ""))


if __name__ == "__main__":
    tahelp.main()
