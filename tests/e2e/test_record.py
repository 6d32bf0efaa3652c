# SPDX-License-Identifier: MIT
"""traceagent record: the program runs as it would alone (arguments,
standard streams, exit status, death by a signal, signals sent to the
loader), the settings reach the agent, and programs that cannot be traced
are refused with one clear line and a shell's exit status."""

import glob
import os
import select
import shutil
import signal
import struct
import subprocess
import time

import tahelp
from tahelp import TRACEAGENT, AGENT, fib_calls


class RecordTest(tahelp.Case):

    def status(self):
        return self.prog("status-O0")

    def test_exit_status(self):
        for code in (0, 3, 255):
            with self.subTest(code=code):
                r = self.run_record([self.status(), "exit", str(code)])
                self.assertEqual(r.returncode, code, r.stderr)
                self.assertEqual(r.stdout, "exiting with %d\n" % code)
                self.assertEqual(r.stderr_lines(), ["traceagent: dump written to " + r.dump])

    def test_killed_by_signal(self):
        for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGSEGV):
            with self.subTest(sig=sig.name):
                r = self.run_record([self.status(), "signal", str(int(sig))])
                self.assertEqual(r.returncode, -int(sig), r.stderr)
                self.assertEqual(r.stdout, "raising %d\n" % sig)
                self.assertEqual(glob.glob(self.path("core*")), [])

    def test_stdin_passthrough(self):
        text = "".join("line %d\n" % i for i in range(5000))
        r = self.run_record([self.status(), "cat"], stdin=text)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, text)

    def test_arguments_passthrough(self):
        """The program gets its own options, even ones record also has."""
        self.need_host_program("/bin/sh")
        r = self.run_record(["/bin/sh", "-c", 'printf "%s|" "$0" "$@"', "zero", "-o", "x",
                             "--", "a b"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "zero|-o|x|--|a b|")
        r = self.run_record([self.prog("fib-O0"), "5", "--buffer"], dump=False)
        self.assertEqual((r.returncode, r.stdout), (0, "fib(5) = 5\n"), r.stderr)

    def wait_ready(self, proc):
        self.assertEqual(tahelp.readline(proc.stdout), "ready\n")

    def start_waiting(self, dump):
        def preexec():
            tahelp.no_core()
            # The loader keeps a signal ignored if it was started so (as
            # under nohup, which CI may be run with): the signals these
            # tests send start at their default action.
            for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1,
                        signal.SIGUSR2):
                signal.signal(sig, signal.SIG_DFL)

        return subprocess.Popen([TRACEAGENT, "record", "-o", dump, self.status(), "wait"],
                                env=tahelp.clean_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=self.dir,
                                preexec_fn=preexec)

    def test_signals_forwarded(self):
        for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP, signal.SIGINT):
            with self.subTest(sig=sig.name):
                dump = self.path("sig-%d.trace" % sig)
                proc = self.start_waiting(dump)
                try:
                    self.wait_ready(proc)
                    proc.send_signal(sig)
                    out, err = proc.communicate(timeout=tahelp.TIMEOUT)
                finally:
                    proc.kill()
                    proc.wait(timeout=tahelp.TIMEOUT)
                self.assertEqual(proc.returncode, int(sig), err)
                self.assertEqual(out, "got %d\n" % sig)
                self.assertEqual(err, "traceagent: dump written to %s\n" % dump)
                funcs = self.functions(self.report(dump))
                self.assert_calls(funcs, {"main": 1, "wait_for_signal": 1})

    def test_sigterm_forwarded(self):
        """SIGTERM to the loader kills the program, and the loader dies of
        it too."""
        proc = self.start_waiting(self.path("term.trace"))
        try:
            self.wait_ready(proc)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=tahelp.TIMEOUT)
        finally:
            proc.kill()
            proc.wait(timeout=tahelp.TIMEOUT)
        self.assertEqual(proc.returncode, -signal.SIGTERM, err)
        self.assertEqual(out, "")

    def test_terminal_interrupt(self):
        """^C typed at a terminal reaches the program (the terminal signals
        the whole foreground group; the loader does not send it again)."""
        import pty
        dump = self.path("pty.trace")
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.chdir(self.dir)
                os.execve(TRACEAGENT, [TRACEAGENT, "record", "-o", dump, self.status(), "wait"],
                          tahelp.clean_env())
            finally:
                os._exit(127)
        out = b""
        deadline = time.monotonic() + tahelp.TIMEOUT

        def readable():
            """Until fd has something to read (or its other side closed),
            up to the deadline."""
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                self.fail("record said nothing more in %d s: %r" % (tahelp.TIMEOUT, out))

        try:
            while b"ready" not in out:
                readable()
                chunk = os.read(fd, 1024)
                self.assertTrue(chunk, out)
                out += chunk
            os.write(fd, b"\x03")
            while True:
                readable()
                try:
                    chunk = os.read(fd, 1024)
                except OSError:  # EIO: the terminal's other side closed
                    break
                if not chunk:
                    break
                out += chunk
        finally:
            _, status = os.waitpid(pid, 0)
            os.close(fd)
        self.assertEqual(os.waitstatus_to_exitcode(status), int(signal.SIGINT), out)
        self.assertIn(b"got %d" % signal.SIGINT, out)

    def test_ignored_signal_stays_ignored(self):
        """A signal ignored where the loader was started (nohup) is not
        passed on."""
        dump = self.path("nohup.trace")
        proc = subprocess.Popen([TRACEAGENT, "record", "-o", dump, self.status(), "wait"],
                                env=tahelp.clean_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=self.dir,
                                preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
        try:
            self.wait_ready(proc)
            proc.send_signal(signal.SIGHUP)
            proc.send_signal(signal.SIGUSR1)
            out, err = proc.communicate(timeout=tahelp.TIMEOUT)
        finally:
            proc.kill()
            proc.wait(timeout=tahelp.TIMEOUT)
        self.assertEqual((proc.returncode, out), (int(signal.SIGUSR1), "got 10\n"), err)

    def test_setuid_refused(self):
        """The dynamic loader ignores LD_PRELOAD for a set-user-ID program
        that changes the user: refused rather than run untraced."""
        if os.geteuid() != 0:
            self.skipTest("needs root to give a program to another user")
        prog = self.path("fib-setuid")
        shutil.copy(self.prog("fib-O0"), prog)
        os.chown(prog, 65534, -1)
        os.chmod(prog, 0o4755)
        r = self.run_record([prog, "5"])
        self.assertEqual((r.returncode, r.stdout), (126, ""))
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)
        self.assertIn("set-user-ID", r.stderr)

    def test_other_machine_refused(self):
        prog = self.path("fib-other")
        with open(self.prog("fib-O0"), "rb") as fh:
            data = bytearray(fh.read())
        own = struct.unpack_from("<H", data, 18)[0]
        struct.pack_into("<H", data, 18, 183 if own != 183 else 62)  # EM_AARCH64, EM_X86_64
        with open(prog, "wb") as fh:
            fh.write(data)
        os.chmod(prog, 0o755)
        r = self.run_record([prog, "5"])
        self.assertEqual((r.returncode, r.stdout), (126, ""))
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)
        self.assertIn("architecture", r.stderr)

    def test_not_found(self):
        r = self.run_record(["no-such-program-here"])
        self.assertEqual(r.returncode, 127)
        self.assertEqual(r.stderr_lines(),
                         ["traceagent: no-such-program-here: command not found"])
        r = self.run_record(["./no-such-program-here"])
        self.assertEqual(r.returncode, 127)
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)
        self.assertIn("./no-such-program-here", r.stderr)
        self.assertEqual(os.listdir(self.dir), [])

    def test_not_executable(self):
        path = self.path("data")
        with open(path, "w") as fh:
            fh.write("not a program\n")
        r = self.run_record([path])
        self.assertEqual(r.returncode, 126)
        self.assertEqual(r.stderr_lines(), ["traceagent: %s: Permission denied" % path])
        r = self.run_record([self.dir])
        self.assertEqual(r.returncode, 126)
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)

    def test_static_refused(self):
        prog = self.prog("hello-static")
        r = self.run_record([prog])
        self.assertEqual(r.returncode, 126)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)
        self.assertIn(prog, r.stderr)
        self.assertIn("statically linked", r.stderr)

    def test_found_in_path(self):
        fib = self.prog("fib-O2")
        r = self.run_record(["fib-O2", "12"], env={"PATH": os.path.dirname(fib) + ":/usr/bin:/bin"})
        self.assertEqual((r.returncode, r.stdout), (0, "fib(12) = 144\n"), r.stderr)
        self.assert_calls(self.functions(self.report(r.dump)), {"fib": fib_calls(12)})

    def test_script(self):
        """A #! script runs; a traced program it execs is traced."""
        self.need_host_program("/bin/sh")
        script = self.path("run-fib")
        with open(script, "w") as fh:
            fh.write("#!/bin/sh\nexec %s 12\n" % self.prog("fib-O0"))
        os.chmod(script, 0o755)
        r = self.traced("record", [script])
        self.assertEqual(r.stdout, "fib(12) = 144\n")
        self.assert_calls(self.functions(self.report(r.dump)), {"fib": fib_calls(12)})

    def test_output_replaced(self):
        dump = self.path("old.trace")
        with open(dump, "w") as fh:
            fh.write("an old dump\n")
        r = self.traced("record", [self.prog("fib-O0"), "10"], dump=dump)
        self.assert_calls(self.functions(self.report(dump)), {"fib": fib_calls(10)})

    def test_default_output(self):
        r = self.run_record([self.prog("fib-O0"), "10"], dump=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        dumps = glob.glob(self.path("traceagent.*.trace"))
        self.assertEqual(len(dumps), 1, os.listdir(self.dir))
        name = os.path.basename(dumps[0])
        self.assertRegex(name, r"^traceagent\.[0-9]+\.trace$")
        self.assertEqual(r.stderr_lines(), ["traceagent: dump written to " + name])
        self.assert_calls(self.functions(self.report(dumps[0])), {"fib": fib_calls(10)})

    def test_pid_in_output(self):
        r = self.run_record([self.prog("fib-O0"), "10"], dump=self.path("run-%p.trace"))
        self.assertEqual(r.returncode, 0, r.stderr)
        dumps = glob.glob(self.path("run-*.trace"))
        self.assertEqual(len(dumps), 1, os.listdir(self.dir))
        self.assertRegex(os.path.basename(dumps[0]), r"^run-[0-9]+\.trace$")
        self.assertEqual(r.stderr_lines(), ["traceagent: dump written to " + dumps[0]])

    def test_no_dump_no_claim(self):
        """The loader names a dump only when this run wrote one: not for a
        program that runs no instrumented code (it says why instead:
        test_firsttrace), nor when the agent refused a file that was
        already there."""
        self.need_host_program("true")
        r = self.run_record(["true"])
        self.assertEqual(r.returncode, 0)
        self.assertNotIn("dump written to", r.stderr)
        self.assertFalse(os.path.exists(r.dump))
        taken = self.path("taken.trace")
        with open(taken, "w") as fh:
            fh.write("precious\n")
        r = self.run_record([self.prog("fib-O0"), "5"], dump=False,
                            env={"TRACEAGENT_OUTPUT": taken})
        self.assertEqual((r.returncode, r.stdout), (0, "fib(5) = 5\n"))
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)
        self.assertNotIn("dump written", r.stderr)
        with open(taken) as fh:
            self.assertEqual(fh.read(), "precious\n")

    def test_settings_passed(self):
        self.need_host_program("env")
        r = self.run_record(["env"], ["--buffer", "128K", "--memory=64M", "--flush-ms", "20"],
                            env={"LD_PRELOAD": "libm.so.6", "TRACEAGENT_BUFFER": "1M"})
        self.assertEqual(r.returncode, 0, r.stderr)
        env = dict(l.split("=", 1) for l in r.stdout.splitlines() if "=" in l)
        self.assertEqual(env["TRACEAGENT_BUFFER"], "128K")
        self.assertEqual(env["TRACEAGENT_MEMORY"], "64M")
        self.assertEqual(env["TRACEAGENT_FLUSH_MS"], "20")
        self.assertEqual(env["TRACEAGENT_OUTPUT"], r.dump)
        self.assertEqual(env["LD_PRELOAD"], os.path.realpath(AGENT) + ":libm.so.6")

    def test_bad_setting(self):
        """A bad option value is record's usage error, before the program
        runs; a bad TRACEAGENT_* variable is the agent's to judge: one line
        naming it, and the program is still traced."""
        r = self.run_record([self.prog("fib-O2"), "15"], ["--buffer", "banana"])
        self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
        self.assertEqual(r.stderr_lines(), ["traceagent record: --buffer=banana: not a size "
                                            "from 4K to 64M (like 64K or 1M)"])
        r = self.run_record([self.prog("fib-O2"), "15"], env={"TRACEAGENT_BUFFER": "banana"})
        self.assertEqual((r.returncode, r.stdout), (0, "fib(15) = 610\n"), r.stderr)
        lines = r.stderr_lines()
        self.assertEqual(len(lines), 2, r.stderr)
        self.assertIn("TRACEAGENT_BUFFER", lines[0])
        self.assertIn("banana", lines[0])
        self.assertEqual(lines[1], "traceagent: dump written to " + r.dump)
        self.assert_calls(self.functions(self.report(r.dump)), {"fib": fib_calls(15)})

    def test_unwritable_output(self):
        dump = self.path("no-such-dir/x.trace")
        plain = self.run_plain([self.status(), "exit", "3"])
        r = self.run_record([self.status(), "exit", "3"], dump=dump)
        self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout))
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)
        self.assertNotIn("dump written", r.stderr)
        self.assertFalse(os.path.exists(dump))

    def test_usage(self):
        for args in ([], ["-o"], ["--bogus", "true"]):
            with self.subTest(args=args):
                p = subprocess.run([TRACEAGENT, "record"] + args, capture_output=True,
                                   text=True, env=tahelp.clean_env(), cwd=self.dir)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertTrue(p.stderr.startswith("traceagent record: "), p.stderr)
        p = subprocess.run([TRACEAGENT, "record", "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertTrue(p.stdout.startswith("usage: traceagent record"), p.stdout)

    def test_agent_override(self):
        r = self.traced("record", [self.prog("fib-O0"), "5"], env={"TRACEAGENT_LIB": AGENT})
        self.assert_calls(self.functions(self.report(r.dump)), {"fib": fib_calls(5)})
        self.need_host_program("true")
        r = self.run_record(["true"], env={"TRACEAGENT_LIB": self.path("nothing.so")})
        self.assertEqual(r.returncode, 125)
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)
        self.assertIn("TRACEAGENT_LIB", r.stderr)


if __name__ == "__main__":
    tahelp.main()
