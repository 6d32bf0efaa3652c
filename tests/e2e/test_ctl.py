# SPDX-License-Identifier: MIT
"""`traceagent ctl PID COMMAND` and the agent's control socket (issue 16),
on tests/programs/ctlphases.c, which runs one phase per line of its input
(N calls of work() in phase()) and answers "done N": the test knows where
the program is at each command, so every count is exact."""

import os
import signal
import socket
import subprocess
import time

import tahelp


class Traced(tahelp.LineChild):
    """ctlphases running with the agent, driven line by line."""

    def __init__(self, case, lvl="O2", env=None, xdg=None):
        self.dump = case.fresh("ctl")
        # The sockets in the test's own directory (0700), unless asked.
        self.xdg = case.dir if xdg is None else xdg
        e = {"LD_PRELOAD": tahelp.AGENT, "TRACEAGENT_OUTPUT": self.dump,
             "XDG_RUNTIME_DIR": self.xdg}
        e.update(env or {})
        super().__init__(case, [case.prog("ctlphases-" + lvl)], e)
        self.out = ["ready\n"]

    def line(self, s, expect=None):
        self.proc.stdin.write(s + "\n")
        self.proc.stdin.flush()
        got = tahelp.readline(self.proc.stdout)
        self.out.append(got)
        if expect is not None:
            self.case.assertEqual(got, expect)
        return got

    def env(self):
        return tahelp.clean_env({"XDG_RUNTIME_DIR": self.xdg})

    def sock(self):
        return socket_path(self.proc.pid, self.xdg)

    def phase(self, n):
        self.line(str(n), "done %d\n" % n)

    def ctl(self, *args, status=0):
        p = subprocess.run([tahelp.TRACEAGENT, "ctl", str(self.proc.pid)] + list(args),
                           env=self.env(), capture_output=True, text=True,
                           timeout=tahelp.TIMEOUT)
        self.case.assertEqual(p.returncode, status, "ctl %s: %s" % (args, p.stderr))
        return p

    def finish(self):
        self.proc.stdin.close()
        rest = tahelp.read_all(self.proc.stdout)
        err = tahelp.read_all(self.proc.stderr)
        self.case.assertEqual(self.proc.wait(timeout=tahelp.TIMEOUT), 0, err)
        self.case.assertEqual(err, "")
        self.case.assertEqual(rest, "bye\n")
        return "".join(self.out) + rest


def socket_path(pid, xdg):
    if xdg.startswith("/"):
        return os.path.join(xdg, "traceagent", "%d.sock" % pid)
    return "/tmp/traceagent-%d/%d.sock" % (os.getuid(), pid)


class CtlTest(tahelp.Case):

    def calls(self, dump):
        rep = self.report(dump)
        self.assert_whole(rep)
        return self.functions(rep)

    def test_pause_resume_records_exactly_between(self):
        for lvl in tahelp.LEVELS:
            with self.subTest(lvl=lvl):
                t = Traced(self, lvl)
                t.phase(10)
                self.assertEqual(t.ctl("pause").stdout, "ok\n")
                t.phase(100)
                self.assertEqual(t.ctl("resume").stdout, "ok\n")
                t.phase(1000)
                t.ctl("pause")
                t.phase(7)
                t.ctl("resume")
                t.finish()
                f = self.calls(t.dump)
                self.assertEqual(f["work"]["calls"], 1010)
                self.assertEqual(f["phase"]["calls"], 2)

    def test_start_paused_then_resume(self):
        t = Traced(self, env={"TRACEAGENT_START": "paused"})
        t.phase(10)
        self.assertIn("paused yes\n", t.ctl("status").stdout)
        t.ctl("resume")
        t.phase(100)
        t.finish()
        f = self.calls(t.dump)
        self.assertEqual(f["work"]["calls"], 100)
        self.assertEqual(f["phase"]["calls"], 1)

    def test_open_call_not_charged_the_pause(self):
        t = Traced(self)
        t.line("hold", "holding\n")
        t.ctl("pause")
        time.sleep(1.5)
        t.ctl("resume")
        t.line("", "held\n")
        t.finish()
        f = self.calls(t.dump)
        self.assertEqual(f["hold"]["calls"], 1)
        # Open across a pause of 1.5 s: without it, hold took a few ms.
        self.assertLess(f["hold"]["total_ns"], 1.0e9, f["hold"])
        self.assertLess(f["main"]["total_ns"], 1.0e9, f["main"])

    def test_other_user_refused(self):
        if os.geteuid() != 0:
            self.skipTest("needs root: connecting as another user (uid 65534) is refused")
        # In a runtime directory of this test's own under /tmp, which the
        # other user can be let into (not /tmp/traceagent-0: other tests
        # running at the same time use it, and the agent refuses it open).
        import shutil
        import tempfile
        xdg = tempfile.mkdtemp(prefix="ta-ctl-other.")
        self.addCleanup(shutil.rmtree, xdg, True)
        os.chmod(xdg, 0o711)
        t = Traced(self, xdg=xdg)
        path = t.sock()
        # Let the other user reach the socket, so that the agent's own
        # check (SO_PEERCRED) is what refuses it.
        os.chmod(os.path.dirname(path), 0o711)
        os.chmod(path, 0o777)
        r, w = os.pipe()
        child = os.fork()
        if child == 0:
            answer = b"no answer"
            try:
                os.close(r)
                os.setgid(65534)
                os.setuid(65534)
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                s.settimeout(10)
                try:
                    s.sendall(b"pause\n")
                except BrokenPipeError:
                    pass  # refused before the line was read: the answer is there
                answer = s.recv(200)
            except Exception as e:  # noqa: BLE001 - reported to the parent
                answer = repr(e).encode()
            os.write(w, answer)
            os._exit(0)
        os.close(w)
        answer = os.read(r, 200)
        os.close(r)
        os.waitpid(child, 0)
        self.assertEqual(answer, b"error: permission denied\n")
        t.phase(10)  # not paused
        t.finish()
        self.assertEqual(self.calls(t.dump)["work"]["calls"], 10)

    def test_dump_in_flight_mode_writes_the_rings(self):
        t = Traced(self, env={"TRACEAGENT_MODE": "flight"})
        t.phase(10)
        t.phase(20)
        self.assertEqual(t.ctl("dump").stdout, "ok\n")
        # Killed: only what `dump` wrote is there.
        t.proc.kill()
        t.proc.wait(timeout=tahelp.TIMEOUT)
        p = self.report_raw(t.dump, "--json")
        self.assertIn('"name": "work"', p.stdout, p.stderr)
        import json
        rep = json.loads(p.stdout)
        self.assertFalse(rep["complete"])
        self.assertEqual(self.functions(rep)["work"]["calls"], 30)

    def test_flight_gaps_said_as_gaps(self):
        """A flight recorder's snapshot, then more than its rings hold:
        the report says there is one gap between what it kept, not that
        0 chunks are missing."""
        t = Traced(self, env={"TRACEAGENT_MODE": "flight", "TRACEAGENT_BUFFER": "4K",
                              "TRACEAGENT_FLIGHT_SIZE": "8K"})
        t.phase(10)
        self.assertEqual(t.ctl("dump").stdout, "ok\n")
        t.phase(20000)
        t.finish()
        p = self.report_raw(t.dump)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.splitlines(), [
            "traceagent: %s: warning: 1 gaps between the stretches of events the flight "
            "recorder kept (its newest at each snapshot): the call stacks after them come "
            "from chunk snapshots (times across the gaps are estimates)" % t.dump])

    def test_status_after_flush_and_channels(self):
        t = Traced(self)
        t.phase(10)
        t.phase(1000)
        self.assertEqual(t.ctl("flush").stdout, "ok\n")
        st = t.ctl("status").stdout.splitlines()
        keys = [l.split(" ", 1)[0] for l in st]
        self.assertEqual(keys, ["events", "lost", "threads", "memory", "output", "mode",
                                "paused", "channels", "stream", "ok"])
        # main's enter, then each phase's enter and exit and its calls'.
        self.assertEqual(st[0], "events %d" % (1 + 2 * 11 + 2 * 1001))
        self.assertEqual(st[1:3], ["lost 0", "threads 1"])
        self.assertEqual(st[4:7], ["output " + t.dump, "mode lossless", "paused no"])
        self.assertEqual(st[7], "channels functions=on,user=on,alloc=on,lock=on,io=on,sleep=on")
        t.ctl("channels", "-functions")
        self.assertIn("channels functions=off,", t.ctl("status").stdout)
        t.phase(7)
        t.ctl("channels", "all")
        t.phase(5)
        t.finish()
        f = self.calls(t.dump)
        self.assertEqual(f["work"]["calls"], 1015)
        self.assertEqual(f["phase"]["calls"], 3)

    def test_usage_and_errors(self):
        t = Traced(self)
        p = t.ctl("bogus", status=1)
        self.assertIn("unknown command 'bogus'", p.stderr)
        self.assertIn("process %d" % t.proc.pid, p.stderr)
        t.ctl("pause", "now", status=1)
        t.ctl(status=2)
        t.finish()
        p = subprocess.run([tahelp.TRACEAGENT, "ctl", str(t.proc.pid), "status"],
                           env=t.env(), capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "traceagent ctl: no traced process %d listening at %s\n"
                         % (t.proc.pid, t.sock()))

    def test_control_off(self):
        t = Traced(self, env={"TRACEAGENT_CONTROL": "off"})
        self.assertFalse(os.path.exists(t.sock()))
        p = t.ctl("status", status=1)
        self.assertIn("no traced process %d listening" % t.proc.pid, p.stderr)
        t.phase(10)
        t.finish()
        self.assertEqual(self.calls(t.dump)["work"]["calls"], 10)

    def test_hostile_clients(self):
        plain = self.run_plain([self.prog("ctlphases-O2")], stdin="10\n20\n")
        t = Traced(self)
        path = t.sock()

        def conn():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            s.settimeout(10)
            return s

        # A line that does not end: dropped after ~2 s; meanwhile the
        # program runs on.
        silent = conn()
        silent.sendall(b"pau")
        t.phase(10)
        # A long line: refused.
        s = conn()
        s.sendall(b"x" * 5000)
        self.assertEqual(s.recv(200), b"error: the line is longer than 1024 bytes\n")
        s.close()
        # Garbage, binary.
        s = conn()
        s.sendall(b"\xff\x01garbage\n")
        self.assertTrue(s.recv(200).startswith(b"error: unknown command '?"))
        s.close()
        # Many connections that say nothing and go.
        for _ in range(200):
            conn().close()
        self.assertEqual(silent.recv(200), b"")  # dropped
        silent.close()
        self.assertEqual(t.ctl("status").stdout.splitlines()[-1], "ok")
        t.phase(20)
        out = t.finish()
        self.assertEqual(out, plain.stdout)
        self.assertEqual(self.calls(t.dump)["work"]["calls"], 30)

    def test_stream_is_a_dump(self):
        t = Traced(self)
        t.phase(10)
        t.ctl("flush")
        out = self.path("stream.trace")
        with open(out, "wb") as f:
            st = subprocess.Popen([tahelp.TRACEAGENT, "ctl", str(t.proc.pid), "stream"],
                                  stdout=f, stderr=subprocess.PIPE, env=t.env())
            # The stream is on once status says so.
            for _ in range(200):
                if "stream on" in t.ctl("status").stdout:
                    break
                time.sleep(0.05)
            t.phase(1000)
            t.phase(20)
            t.finish()
            self.assertEqual(st.wait(timeout=tahelp.TIMEOUT), 0, st.stderr.read())
        f = self.calls(out)
        self.assertEqual(f["work"]["calls"], 1020)
        self.assertEqual(f["phase"]["calls"], 2)
        # The file dump is whole as ever.
        self.assertEqual(self.calls(t.dump)["work"]["calls"], 1030)
        p = subprocess.run([tahelp.TRACEAGENT, "ctl", "1", "stream"], env=tahelp.clean_env(),
                           capture_output=True, stdin=subprocess.DEVNULL)
        self.assertIn(p.returncode, (1, 2))

    def test_fork_and_exec_answer_on_their_own_pid(self):
        fifo = self.path("child.fifo")
        os.mkfifo(fifo)
        f = Family(self)
        parent = f.pid
        f.say("5", "parent %d done 5\n" % parent)
        f.say("fork " + fifo)
        w = f.answer()
        self.assertTrue(w.startswith("forked "), w)
        child = int(w.split()[2])
        f.child = open(fifo, "w")
        self.assertEqual(f.answer(), "child %d ready\n" % child)
        # The child listens under its own pid, a process of its own.
        st = f.ctl(child, "status").stdout.splitlines()
        self.assertEqual((st[6], st[-1]), ("paused no", "ok"))
        # Pausing the parent does not pause the child.
        f.ctl(parent, "pause")
        self.assertIn("paused yes\n", f.ctl(parent, "status").stdout)
        self.assertIn("paused no\n", f.ctl(child, "status").stdout)
        f.say("100", "parent %d done 100\n" % parent)
        f.say("7", "child %d done 7\n" % child, to_child=True)
        f.ctl(parent, "resume")
        f.say("3", "parent %d done 3\n" % parent)
        # Pausing the child does not pause the parent.
        f.ctl(child, "pause")
        f.say("50", "child %d done 50\n" % child, to_child=True)
        f.say("2", "parent %d done 2\n" % parent)
        f.ctl(child, "resume")
        # The exec'ed image answers on the same pid, anew: not paused,
        # and its own events only (main's enter, phase's and exec_work's).
        f.say("exec", "exec %d ready\n" % child, to_child=True)
        f.say("9", "exec %d done 9\n" % child, to_child=True)
        self.assertEqual(f.ctl(child, "flush").stdout, "ok\n")
        st = f.ctl(child, "status").stdout.splitlines()
        self.assertEqual((st[0], st[6]), ("events %d" % (1 + 2 + 2 * 9), "paused no"))
        f.ctl(child, "pause")
        f.say("11", "exec %d done 11\n" % child, to_child=True)
        f.ctl(child, "resume")
        f.say("4", "exec %d done 4\n" % child, to_child=True)
        f.child.close()
        self.assertEqual(f.answer(), "exec %d bye\n" % child)
        f.finish()
        rep = self.report(f.dump)
        self.assert_whole(rep, processes=2)
        self.assert_calls(self.functions(rep),
                          {"work": 5 + 3 + 2, "child_work": 7, "exec_work": 9 + 4,
                           "phase": 3 + 1 + 2, "forked": 1})

    def test_fork_while_paused(self):
        # A child forked while its parent is paused (or has functions off)
        # restarts at its first hook all the same: it listens, is paused
        # as its parent was, and records once resumed.
        for how in ("pause", "channels"):
            with self.subTest(how=how):
                fifo = self.path("paused-%s.fifo" % how)
                os.mkfifo(fifo)
                f = Family(self)
                if how == "pause":
                    f.ctl(f.pid, "pause")
                else:
                    f.ctl(f.pid, "channels", "-functions")
                f.say("fork " + fifo)
                child = int(f.answer().split()[2])
                f.child = open(fifo, "w")
                self.assertEqual(f.answer(), "child %d ready\n" % child)
                f.say("4", "child %d done 4\n" % child, to_child=True)
                st = f.ctl(child, "status").stdout
                self.assertIn("paused %s\n" % ("yes" if how == "pause" else "no"), st)
                f.ctl(child, "resume" if how == "pause" else "channels", *(
                    () if how == "pause" else ("all",)))
                f.say("6", "child %d done 6\n" % child, to_child=True)
                f.child.close()
                self.assertEqual(f.answer(), "child %d bye\n" % child)
                # The parent as it was, so that its main's exit is recorded.
                f.ctl(f.pid, *(("resume",) if how == "pause" else ("channels", "all")))
                f.finish()
                rep = self.report(f.dump)
                self.assert_whole(rep, processes=2)
                self.assert_calls(self.functions(rep), {"child_work": 6, "phase": 1})

    def test_stream_reader_that_never_reads(self):
        # A reader that asks for the stream and takes nothing: its queue
        # fills and whole chunks are dropped for it; the program, its output,
        # exit status and file dump are as without it.
        big = 6000000  # 12M events, 2-3 MiB of chunks on x86-64 (less on aarch64)
        t = Traced(self)
        t.phase(10)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(t.sock())
        s.sendall(b"stream\n")
        for _ in range(200):
            if "stream on" in t.ctl("status").stdout:
                break
            time.sleep(0.05)
        # Phases until the dump holds 16 MiB, twice the reader's 8 MiB
        # queue (how many depends on how well the events compress).
        phases = 0
        while phases < 30:
            t.phase(big)
            phases += 1
            t.ctl("flush")
            if os.path.getsize(t.dump) > (16 << 20):
                break
        self.assertGreater(os.path.getsize(t.dump), 16 << 20)
        plain = self.run_plain([self.prog("ctlphases-O2")],
                               stdin="10\n" + ("%d\n" % big) * phases + "5\n")
        t.ctl("flush")
        st = dict(l.split(" ", 1) for l in t.ctl("status").stdout.splitlines()[:-1])
        on, dropped = st["stream"].split()
        self.assertEqual(on, "on")
        self.assertGreater(int(dropped), 0, st)
        # Status, pause and resume still answer while the reader is stuck.
        t.ctl("pause")
        t.ctl("resume")
        t.phase(5)
        out = t.finish()
        s.close()
        self.assertEqual(out, plain.stdout)
        rep = self.report(t.dump)
        self.assert_whole(rep)
        self.assert_calls(self.functions(rep), {"work": phases * big + 15, "phase": phases + 2})

    def info(self, dump):
        import json
        p = subprocess.run([tahelp.TRACEAGENT, "info", "--json", dump], env=tahelp.clean_env(),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        js = json.loads(p.stdout)["processes"]
        p = subprocess.run([tahelp.TRACEAGENT, "info", dump], env=tahelp.clean_env(),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        text = [l for l in p.stdout.splitlines() if l.startswith("  control:")]
        return js, text

    def test_info_pauses_and_switches(self):
        t0 = time.monotonic()
        t = Traced(self)
        t.phase(10)
        t.ctl("pause")
        time.sleep(0.3)
        t.phase(100)
        t.ctl("resume")
        t.ctl("channels", "-functions")
        t.phase(7)
        t.ctl("channels", "all")
        t.ctl("pause")
        t.ctl("resume")
        t.ctl("channels", "-io")
        t.phase(5)
        t.finish()
        wall = time.monotonic() - t0
        js, text = self.info(t.dump)
        p = js[0]
        self.assertEqual((p["pauses"], p["ctl_channel_switches"]), (2, 3))
        # At least the sleep, at most the whole run.
        self.assertGreaterEqual(p["paused_ns"], 300000000)
        self.assertLessEqual(p["paused_ns"], wall * 1e9)
        self.assertEqual(len(text), 1, text)
        self.assertRegex(text[0], r"^  control:     pauses 2, paused [0-9.]+ m?s; "
                                  r"channel switches 3 \(traceagent ctl\)$")
        # Never paused nor switched: zeros, and no line.
        r = self.run_preload([self.prog("ctlphases-O2")], stdin="3\n")
        js, text = self.info(r.dump)
        self.assertEqual((js[0]["pauses"], js[0]["paused_ns"], js[0]["ctl_channel_switches"]),
                         (0, 0, 0))
        self.assertEqual(text, [])

    def test_info_paused_never_resumed(self):
        # Started paused and never resumed: one pause, to the end.
        t = Traced(self, env={"TRACEAGENT_START": "paused"})
        t.phase(10)
        time.sleep(0.2)
        t.phase(10)
        t.finish()
        js, text = self.info(t.dump)
        self.assertEqual((js[0]["pauses"], js[0]["ctl_channel_switches"]), (1, 0))
        self.assertGreaterEqual(js[0]["paused_ns"], 200000000)
        self.assertEqual(len(text), 1, text)
        self.assertTrue(text[0].startswith("  control:     pauses 1, paused "), text)


class Family:
    """ctlfamily with the agent: the parent on stdin, a forked child on a
    FIFO, their answers on one pipe."""

    def __init__(self, case, lvl="O2", env=None):
        self.case = case
        self.dump = case.fresh("family")
        self.xdg = case.dir
        self.child = None
        # No library calls: a status's events are the functions' alone.
        e = {"LD_PRELOAD": tahelp.AGENT, "TRACEAGENT_OUTPUT": self.dump,
             "XDG_RUNTIME_DIR": self.xdg, "TRACEAGENT_LIBCALLS": "none"}
        e.update(env or {})
        self.proc = subprocess.Popen([case.prog("ctlfamily-" + lvl)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=tahelp.clean_env(e), cwd=case.dir,
                                     preexec_fn=tahelp.no_core)
        self.pid = self.proc.pid
        case.addCleanup(self.cleanup)
        case.assertEqual(self.answer(), "parent %d ready\n" % self.pid)

    def answer(self):
        return tahelp.readline(self.proc.stdout)

    def say(self, line, expect=None, to_child=False):
        f = self.child if to_child else self.proc.stdin
        f.write(line + "\n")
        f.flush()
        if expect is not None:
            self.case.assertEqual(self.answer(), expect)

    def ctl(self, pid, *args):
        p = subprocess.run([tahelp.TRACEAGENT, "ctl", str(pid)] + list(args),
                           env=tahelp.clean_env({"XDG_RUNTIME_DIR": self.xdg}),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.case.assertEqual(p.returncode, 0, "ctl %d %s: %s" % (pid, args, p.stderr))
        return p

    def finish(self):
        self.proc.stdin.close()
        rest = tahelp.read_all(self.proc.stdout)
        err = tahelp.read_all(self.proc.stderr)
        self.case.assertEqual(self.proc.wait(timeout=tahelp.TIMEOUT), 0, err)
        self.case.assertEqual(err, "")
        self.case.assertEqual(rest, "parent %d bye\n" % self.pid)

    def cleanup(self):
        if self.child and not self.child.closed:
            self.child.close()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=tahelp.TIMEOUT)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()


if __name__ == "__main__":
    tahelp.main()
