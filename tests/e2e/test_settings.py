# SPDX-License-Identifier: MIT
"""The agent's settings, preloaded directly: where the dump goes, what
happens when it cannot go there, bad values, and small buffers."""

import os
import subprocess

import tahelp
from tahelp import LEVELS, fib_calls


class SettingsTest(tahelp.Case):

    def test_default_output(self):
        prog = self.prog("fib-O0")
        r = self.run_preload([prog, "10"], dump="")
        self.assertEqual(r.returncode, 0, r.stderr)
        names = os.listdir(self.dir)
        self.assertEqual(len(names), 1, names)
        self.assertRegex(names[0], r"^traceagent\.[0-9]+\.trace$")
        self.assert_calls(self.functions(self.report(self.path(names[0]))),
                          {"fib": fib_calls(10)})

    def test_pid_in_output(self):
        prog = self.prog("fib-O0")
        env = tahelp.clean_env({"LD_PRELOAD": tahelp.AGENT,
                                "TRACEAGENT_OUTPUT": self.path("x-%p.trace")})
        proc = subprocess.Popen([prog, "10"], env=env, cwd=self.dir,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(os.listdir(self.dir), ["x-%d.trace" % proc.pid])

    def test_existing_file_kept(self):
        """The agent never overwrites: one line, the program runs untraced,
        the file is as it was."""
        prog = self.prog("status-O0")
        dump = self.path("taken.trace")
        with open(dump, "w") as fh:
            fh.write("precious\n")
        plain = self.run_plain([prog, "exit", "3"])
        r = self.run_preload([prog, "exit", "3"], dump=dump)
        self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout))
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)
        self.assertIn(dump, r.stderr)
        with open(dump) as fh:
            self.assertEqual(fh.read(), "precious\n")

    def test_unwritable_output(self):
        prog = self.prog("status-O0")
        dump = self.path("no-such-dir/x.trace")
        plain = self.run_plain([prog, "exit", "3"])
        r = self.run_preload([prog, "exit", "3"], dump=dump)
        self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout))
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)
        self.assertIn(dump, r.stderr)
        self.assertFalse(os.path.exists(dump))
        self.assertEqual(os.listdir(self.dir), [])

    def test_bad_values(self):
        """Each bad value: one line naming the variable and the value; the
        default is used and the program is traced."""
        prog = self.prog("fib-O2")
        for var, value in (("TRACEAGENT_BUFFER", "banana"), ("TRACEAGENT_BUFFER", "12Q"),
                           ("TRACEAGENT_MEMORY", "-5"), ("TRACEAGENT_MEMORY", "lots"),
                           ("TRACEAGENT_FLUSH_MS", "abc"), ("TRACEAGENT_FLUSH_MS", "0")):
            with self.subTest(var=var, value=value):
                dump = self.path("bad-%s-%s.trace" % (var, value))
                r = self.run_preload([prog, "15"], dump=dump, env={var: value})
                self.assertEqual((r.returncode, r.stdout), (0, "fib(15) = 610\n"), r.stderr)
                lines = r.stderr_lines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertIn(var, lines[0])
                self.assertIn(value, lines[0])
                rep = self.report(dump)
                self.assert_whole(rep)
                self.assert_calls(self.functions(rep), {"fib": fib_calls(15)})

    def test_size_message_in_units(self):
        """A bad size is answered with the range and an example in the
        units a user types, not in bytes."""
        prog = self.prog("fib-O2")
        for env, line in (
                ({"TRACEAGENT_MODE": "flight", "TRACEAGENT_FLIGHT_SIZE": "64K"},
                 "traceagent: TRACEAGENT_FLIGHT_SIZE='64K' is not a size from 128K to 1024G "
                 "(bytes, or with K, M or G like 4M); using 4M"),
                ({"TRACEAGENT_BUFFER": "12Q"},
                 "traceagent: TRACEAGENT_BUFFER='12Q' is not a size from 4K to 64M "
                 "(bytes, or with K, M or G like 64K); using 64K")):
            with self.subTest(env=env):
                r = self.run_preload([prog, "15"], env=env)
                self.assertEqual((r.returncode, r.stdout), (0, "fib(15) = 610\n"), r.stderr)
                self.assertEqual(r.stderr_lines(), [line])

    def test_record_refuses_bad_values(self):
        """A bad value of a `record` option is a usage error of record
        (exit 2, one line naming the option), before the program runs."""
        prog = self.prog("fib-O2")
        for option, line in (
                ("--memory=12Q", "--memory=12Q: not a size from 1M to 1024G (like 64M or 1G)"),
                ("--buffer=1K", "--buffer=1K: not a size from 4K to 64M (like 64K or 1M)"),
                ("--flush-ms=0", "--flush-ms=0: not a number of milliseconds from 1 to 60000 "
                                 "(like 100)"),
                ("--mode=fast", "--mode=fast: not lossless, drop or flight"),
                ("--depth=0", "--depth=0: not a number of frames from 1 to 65536 (like 10)"),
                ("--min-duration=2h", "--min-duration=2h: not a duration (like 500ns, 10us, "
                                      "2ms or 1s; a bare number is ns)")):
            with self.subTest(option=option):
                dump = self.fresh("refused")
                r = self.run_record([prog, "15"], [option], dump=dump)
                self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
                self.assertEqual(r.stderr_lines(), ["traceagent record: " + line])
                self.assertFalse(os.path.exists(dump))
        # The same option in two words, and good values, run the program.
        r = self.run_record([prog, "15"], ["--memory", "12Q"])
        self.assertEqual(r.returncode, 2, r.stderr)
        r = self.run_record([prog, "15"], ["--memory=64M", "--buffer", "64K", "--depth=5",
                                           "--min-duration=1us", "--mode", "drop",
                                           "--flush-ms=20"])
        self.assertEqual((r.returncode, r.stdout), (0, "fib(15) = 610\n"), r.stderr)
        self.assertEqual(r.stderr_lines(), ["traceagent: dump written to " + r.dump])

    def test_patch_refused_off_x86_64(self):
        """Where dynamic patching does not exist (aarch64: the suite under
        qemu) or was not built (meson -Dpatching), TRACEAGENT_PATCH
        gets one line saying so, and the program is traced as without it."""
        if "patching" in tahelp.FEATURES:  # e2e-patch tests it
            self.skipTest("this build has dynamic patching")
        if tahelp.elf_machine(tahelp.AGENT) == 62:  # EM_X86_64
            why = ("this build has no dynamic patching "
                   "(built without capstone: meson -Dpatching)")
        else:
            why = "dynamic patching is not supported on aarch64"
        prog = self.prog("fib-O2")
        dump = self.path("patch-refused.trace")
        r = self.run_preload([prog, "15"], dump=dump, env={"TRACEAGENT_PATCH": "fib"})
        self.assertEqual((r.returncode, r.stdout), (0, "fib(15) = 610\n"), r.stderr)
        self.assertEqual(r.stderr_lines(), ["traceagent: " + why + "; TRACEAGENT_PATCH ignored"])
        rep = self.report(dump)
        self.assert_whole(rep)
        self.assert_calls(self.functions(rep), {"fib": fib_calls(15)})

    def test_small_buffers(self):
        """Small blocks and a small cap: threads wait for memory rather than
        lose events, so the counts stay exact."""
        for level in LEVELS:
            with self.subTest(level=level):
                r = self.traced("preload", [self.prog("fib-" + level), "24"],
                                env={"TRACEAGENT_BUFFER": "4K", "TRACEAGENT_MEMORY": "1M",
                                     "TRACEAGENT_FLUSH_MS": "1"})
                rep = self.report(r.dump)
                self.assert_whole(rep)
                self.assert_calls(self.functions(rep), {"fib": fib_calls(24), "main": 1})
                r = self.traced("preload", [self.prog("threads-" + level)],
                                env={"TRACEAGENT_BUFFER": "4K", "TRACEAGENT_MEMORY": "1M"})
                rep = self.report(r.dump)
                self.assert_whole(rep)
                self.assert_calls(self.functions(rep), {"step": 360, "work": 36})

    def test_flight_size_over_the_cap(self):
        """Flight mode with each thread's quota (TRACEAGENT_FLIGHT_SIZE, 4M)
        over the memory cap (1M): at the cap a thread below its quota
        takes its own oldest block again, as at the quota (it waited for
        a block that nothing frees in flight mode: the program never
        ended).  The dump is whole with the newest events, and its
        events are compressed (liblz4 opened by the flusher when it
        starts: a flight recorder never hands a block over, and its
        rings are written where no dlopen may run)."""
        r = self.traced("preload", [self.prog("fib-O2"), "30"],
                        env={"TRACEAGENT_MODE": "flight", "TRACEAGENT_MEMORY": "1M"})
        info = self.info(r.dump)
        self.assertTrue(info["complete"], info)
        self.assertEqual(info["lost"], 0, info)
        self.assertGreater(info["events"], 0, info)
        flags = [f for _, t, f, _ in tahelp.chunks(r.dump) if t == tahelp.CHUNK_EVENTS]
        self.assertTrue(flags and all(f & 1 for f in flags), flags)


if __name__ == "__main__":
    tahelp.main()
