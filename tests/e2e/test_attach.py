# SPDX-License-Identifier: MIT
"""`traceagent attach PID` (issue 17) on tests/programs/attachme.c, a
long-running program whose busy threads count their own calls of mid() and
leaf() (leaf twice per mid), with threads blocked in nanosleep, a futex and
epoll_wait, the main thread in read, and a SIGALRM timer: any EINTR ends it
with "FAIL"."""

import ctypes
import json
import os
import re
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import tahelp

DONE = "done: leaf = 2 * mid: yes, alarms: yes\n"


class Target(tahelp.LineChild):
    def __init__(self, case, nthreads=4, env=None, wait=None, opts=()):
        super().__init__(case, [case.prog("attachme-O2"), str(nthreads)] +
                         ([wait or "read"] + list(opts) if wait or opts else []), env)

    def count(self):
        c = self.counts()
        return c["mid"], c["leaf"]

    def counts(self):
        """attachme's counters by name: mid, leaf, churn, dl, chld, timer."""
        self.proc.stdin.write("count\n")
        self.proc.stdin.flush()
        w = tahelp.readline(self.proc.stdout).split()
        self.case.assertEqual((w[0], w[2]), ("mid", "leaf"), w)
        return {w[i]: int(w[i + 1]) for i in range(0, len(w) - 1, 2)}



class AttachTest(tahelp.Case):
    def setUp(self):
        super().setUp()
        self.skip_unless_attach()

    def attach(self, pid, *args, status=0, user=None):
        p = subprocess.run([tahelp.TRACEAGENT, "attach", str(pid)] + list(args),
                           env=tahelp.clean_env(), capture_output=True, text=True,
                           timeout=tahelp.TIMEOUT, cwd=self.dir,
                           preexec_fn=user)
        self.assertEqual(p.returncode, status, p.stderr)
        return p

    def test_filter_on_a_running_call(self):
        """--filter names a function a thread is inside when the attach
        comes: attach says that nothing is recorded until it is called,
        and the calls made inside it in the window are not recorded."""
        t = Target(self, nthreads=1)
        self.assertEqual(t.say("hold"), "holding")
        dump = self.fresh("held")
        a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.proc.pid), "-o", dump,
                              "--filter", "held"], env=tahelp.clean_env(),
                             stderr=subprocess.PIPE, text=True, cwd=self.dir)
        try:
            self.assertEqual(tahelp.readline(a.stderr), "traceagent: attached to process "
                             "%d; Ctrl-C detaches\n" % t.proc.pid)
            self.assertEqual(tahelp.readline(a.stderr),
                             "traceagent: attach: --filter held: a call of these functions "
                             "already running is not recorded, nor what it calls: nothing is "
                             "recorded until one of them is called\n")
            self.assertTrue(t.say("time 100").startswith("ns "))
        finally:
            a.send_signal(2)
            a.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(a.returncode, 0)
        self.assertEqual(t.say("release"), "released")
        p = subprocess.run([tahelp.TRACEAGENT, "info", "--json", dump], env=tahelp.clean_env(),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["events"], 0)
        status, out, err = t.quit()
        self.assertEqual((status, err), (0, ""))
        self.assertTrue(out.endswith(DONE), out)

    def test_window_then_again(self):
        t = Target(self)
        dump = self.fresh("attach")
        m0, _ = t.count()
        p = self.attach(t.proc.pid, "-o", dump, "--duration", "0.5")
        self.assertIn("traceagent: attached to process %d" % t.proc.pid, p.stderr)
        self.assertIn("traceagent: detached from process %d" % t.proc.pid, p.stderr)
        m1, _ = t.count()
        rep = self.report(dump)
        f = self.functions(rep)
        # The calls running when the window began are partial: at most
        # one of each function per busy thread (4), none open.
        for name in ("mid", "leaf"):
            self.assertLessEqual(f[name]["partial"], 4, f[name])
        mid = f["mid"]["calls"] - f["mid"]["partial"]
        leaf = f["leaf"]["calls"] - f["leaf"]["partial"]
        # Entered inside the window: no more than the program counted
        # between the edges, and leaf twice per mid but for the calls
        # open at the edges (one mid per busy thread at each edge).
        self.assertGreater(mid, 0)
        self.assertLessEqual(mid, m1 - m0)
        self.assertLessEqual(abs(leaf - 2 * mid), 2 * 2 * 4)
        # The detach finished the dump: whole while the process runs.
        self.assertTrue(rep["complete"])
        self.assertTrue(self.info(dump)["complete"])
        # After the detach, nothing more is recorded.
        size = os.path.getsize(dump)
        t.count()
        time.sleep(0.3)
        self.assertEqual(os.path.getsize(dump), size)
        # Again: the agent there is reused, into a new dump of its own
        # (the default name, numbered: the first window's is not touched).
        first = os.path.join(self.dir, "traceagent.%d.trace" % t.proc.pid)
        second = os.path.join(self.dir, "traceagent.%d.2.trace" % t.proc.pid)
        self.attach(t.proc.pid, "--duration", "0.3")
        self.attach(t.proc.pid, "--duration", "0.3")
        self.assertEqual(os.path.getsize(dump), size)
        for d in (first, second):
            self.assertTrue(self.info(d)["complete"], d)
            self.assertGreater(self.functions(self.report(d))["mid"]["calls"], 0, d)
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)
        # Nothing written at the exit: the dumps were finished at detach.
        self.assertEqual(os.path.getsize(dump), size)

    def test_call_timeout(self):
        """A call into the process that does not return: attachme lockheld's
        "holder" thread sits in a dl_iterate_phdr callback for ever, so the
        dlopen of the agent waits for the loader's write lock in whichever
        thread it is called through.  With TRACEAGENT_ATTACH_TIMEOUT=1 the
        attach gives up after a second: status 1, the message says so, and
        the process is left stopped (SIGSTOP), as it says."""
        t = Target(self, nthreads=2, wait="libc", opts=["lockheld"])
        t0 = time.monotonic()
        p = subprocess.run([tahelp.TRACEAGENT, "attach", str(t.proc.pid), "--duration", "0.1"],
                           env=tahelp.clean_env({"TRACEAGENT_ATTACH_TIMEOUT": "1"}),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT, cwd=self.dir)
        took = time.monotonic() - t0
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"the call into it \(at 0x[0-9a-f]+\) did not return in "
                         r"1000 ms: .* left stopped \(SIGSTOP\)")
        self.assertNotIn("attached to process", p.stderr)
        self.assertGreaterEqual(took, 1.0)
        # The group stop reaches every thread a moment after the detach.
        for _ in range(200):
            states = {tahelp.proc_state(t.proc.pid, tid)
                      for tid in map(int, os.listdir("/proc/%d/task" % t.proc.pid))}
            if states == {"T"}:
                break
            time.sleep(0.01)
        self.assertEqual(states, {"T"}, p.stderr)

    def caught(self, pid):
        """The signals process pid has handlers for: /proc's SigCgt mask."""
        with open("/proc/%d/status" % pid) as f:
            return next(int(l.split()[1], 16) for l in f if l.startswith("SigCgt:"))

    def test_signals_as_they_were(self):
        """The crash handler the agent sets for a window (SIGSEGV, SIGBUS,
        SIGILL, SIGFPE, SIGABRT... where the program has none) is taken
        out at the detach: the program's signal dispositions are those it
        had before, window after window."""
        t = Target(self)
        before = self.caught(t.proc.pid)
        segv = 1 << (signal.SIGSEGV - 1)
        self.assertEqual(before & segv, 0)
        for i in range(2):
            a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.proc.pid), "-o",
                                  self.fresh("sig%d" % i), "--duration", "1"],
                                 env=tahelp.clean_env(), stderr=subprocess.PIPE, text=True)
            for _ in range(200):
                during = self.caught(t.proc.pid)
                if during & segv:
                    break
                time.sleep(0.01)
            err = a.communicate(timeout=tahelp.TIMEOUT)[1]
            self.assertEqual(a.returncode, 0, err)
            self.assertNotEqual(during & segv, 0, "no crash handler during window %d" % i)
            self.assertEqual(self.caught(t.proc.pid), before, "after window %d" % i)
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)

    def syscall(self, pid):
        """The system call number thread pid is in (/proc), None if it runs."""
        with open("/proc/%d/syscall" % pid) as f:
            w = f.read().split()
        return None if w[0] == "running" else int(w[0])

    def test_main_thread_waits(self):
        """The thread the agent is injected through (the main one) blocked in
        nanosleep, a futex or epoll_wait (attachme's WAIT): each call goes on
        as if no attach had come, no EINTR (attachme ends with "FAIL" on any
        error); the nanosleep is restarted as the kernel restarts it after a
        signal, with restart_syscall (the rest of the sleep, not the whole
        hour again); epoll_wait, which returns EINTR to any stop, is
        entered again."""
        nrs = {"x86_64": {"nanosleep": 230, "restart": 219, "futex": 202, "epoll": 232},
               "aarch64": {"nanosleep": 115, "restart": 128, "futex": 98, "epoll": 22}}
        nr = nrs[platform.machine()]
        for wait, after in (("nanosleep", "restart"), ("futex", "futex"), ("epoll", "epoll")):
            with self.subTest(wait=wait):
                t = Target(self, nthreads=2, wait=wait)
                pid = t.proc.pid
                deadline = time.monotonic() + tahelp.TIMEOUT
                while self.syscall(pid) != nr[wait] and time.monotonic() < deadline:
                    time.sleep(0.01)
                self.assertEqual(self.syscall(pid), nr[wait])
                dump = self.fresh("wait-" + wait)
                self.attach(pid, "-o", dump, "--duration", "0.2")
                self.assertEqual(self.syscall(pid), nr[after])
                self.assertGreater(self.functions(self.report(dump))["mid"]["calls"], 0)
                status, out, err = t.quit()
                self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), out + err)
                self.assertNotIn("FAIL", out)

    def windows(self, t, n, counter, *args):
        """n windows of 50 ms on Target t, each into a dump of its own: every
        attach ends with status 0 (never a hang: the test's timeout), and
        the calls of counter's function that ended in the window are at
        most those the program counted around it, and some in all.  (A
        call still open at the detach is in the dump, open, and the program
        counts it as it ends, which may be after the count that follows
        the window.  A window may have none of a thread's calls: under
        load, its first hook of the window can wait for the CPU, and for
        the mmap lock that a dlopen loop holds, longer than the window
        lasts.)  Returns the stderr lines of the attaches."""
        said = []
        recorded = 0
        for i in range(n):
            dump = self.fresh("w%d" % i)
            c0 = t.counts()
            p = self.attach(t.proc.pid, "-o", dump, "--duration", "0.05", *args)
            c1 = t.counts()
            said += p.stderr.splitlines()
            f = self.functions(self.report(dump)).get(counter,
                                                      {"calls": 0, "open": 0, "partial": 0})
            # Those running when the window began (partial) were counted
            # before it.
            self.assertLessEqual(f["calls"] - f["open"] - f["partial"],
                                 c1[counter] - c0[counter], (i, f))
            self.assertTrue(self.info(dump)["complete"], i)
            recorded += f["calls"]
        self.assertGreater(recorded, 0)
        return said

    def test_safe_point(self):
        """The main thread, the one the agent is injected through, inside
        malloc and free most of the time (attachme malloc: blocks of 16 B
        to 64 KiB), and a thread dlopening and dlclosing libsample again
        and again: a dlopen called where the thread was stopped would wait
        for the arena lock it holds itself, or run inside the loader's
        work.  22 windows: each attach waits for a safe point (outside
        libc and the loader, or in a long wait; the loader consistent),
        none hangs; the calls of churn() recorded are at most the
        program's own count around each window; the output is the
        untraced one."""
        lib = os.path.join(os.path.dirname(self.prog("attachme-O2")), "libsample.so")
        t = Target(self, nthreads=2, wait="malloc", opts=["dl=" + lib])
        c0 = t.counts()
        self.windows(t, 22, "churn")
        c1 = t.counts()
        self.assertGreater(c1["dl"], c0["dl"])
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), out + err)
        self.assertNotIn("FAIL", out)

    def test_main_thread_in_libc(self):
        """The main thread inside libc nearly all the time (attachme libc:
        memset of 4 MiB for ever), where it is almost never caught at a
        safe point: the agent is loaded through another thread that is
        (the busy threads, or those waiting in a system call).  5 windows:
        each attach succeeds (it was refused after 2 s, "did not leave
        libc"), the calls of mid() recorded are at most the program's."""
        t = Target(self, nthreads=2, wait="libc")
        self.windows(t, 5, "mid")
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), out + err)
        self.assertNotIn("FAIL", out)

    def test_signals_kept(self):
        """Signals that come while the agent is injected keep their siginfo
        and their thread: attachme signals' main thread takes a SIGCHLD
        (SA_SIGINFO: si_pid must be a child it can reap, si_code
        CLD_EXITED, si_status 7) every ~5 ms and a POSIX timer's
        SIGRTMIN+1 (si_code SI_TIMER, its sigev_value) every 3 ms; its
        read on stdin is restarted (SA_RESTART).  Across 22 windows no
        handler sees a wrong siginfo (attachme says "FAIL" and ends), no
        SIGCHLD is lost (its forker waits for each), no call fails."""
        t = Target(self, nthreads=2, opts=["signals"])
        c0 = t.counts()
        self.windows(t, 22, "mid")
        c1 = t.counts()
        self.assertGreater(c1["chld"], c0["chld"])
        self.assertGreater(c1["timer"], c0["timer"])
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), out + err)
        self.assertNotIn("FAIL", out)

    def test_fork_in_window(self):
        """A child forked inside a window (attachme "fork": it calls mid()
        for 3 s, past the window) is traced from its first call, into the
        window's dump, and its tracing ends with the window: its part of
        the dump gets its END soon after the detach, the dump does not grow
        while the child runs on, the child holds the dump open no more, and
        it ends as untraced (its counts agree: status 0)."""
        t = Target(self, nthreads=2)
        dump = self.fresh("fork")
        a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.proc.pid), "-o", dump,
                              "--duration", "1"], env=tahelp.clean_env(),
                             stderr=subprocess.PIPE, text=True, cwd=self.dir)
        try:
            self.assertIn("attached", tahelp.readline(a.stderr))
            w = t.say("fork 3000").split()
            self.assertEqual(w[0], "child", w)
            child = int(w[1])
        finally:
            a.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(a.returncode, 0)
        # The child's flusher sees the window's end within a pass (50 ms).
        deadline = time.monotonic() + 10
        while True:
            procs = {p["pid"]: p for p in self.info(dump)["processes"]}
            if child in procs and procs[child]["end"] is not None:
                break
            self.assertLess(time.monotonic(), deadline, "the child's part has no END")
            time.sleep(0.05)
        self.assertTrue(os.path.exists("/proc/%d" % child), "the child ended too soon")
        size = os.path.getsize(dump)
        time.sleep(0.5)
        self.assertEqual(os.path.getsize(dump), size)
        fds = [os.readlink("/proc/%d/fd/%s" % (child, f))
               for f in os.listdir("/proc/%d/fd" % child)]
        self.assertNotIn(dump, fds)
        self.assertTrue(os.path.exists("/proc/%d" % child), "the child ended too soon")
        self.assertGreater(self.functions(self.report(dump, "--pid=%d" % child))["mid"]["calls"], 0)
        got = t.say("wait")
        if got != "child %d status 0" % child:
            status, out, err = t.quit()
            self.fail("%s (want status 0); what the program and its child said on "
                      "stderr:\n%s" % (got, err))
        self.assertTrue(self.info(dump)["complete"])
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)

    def test_open_at_start(self):
        """The calls open when the attach came (the opener thread sleeps in
        outer() nearly always): counted as such by info and report; the
        thread's name, set before the attach, is in the dump."""
        t = Target(self)
        dump = self.fresh("open")
        self.attach(t.proc.pid, "-o", dump, "--duration", "0.5")
        proc = self.info(dump)["processes"][0]
        self.assertTrue(proc["attached"])
        n = proc["open_at_start"]
        self.assertGreaterEqual(n, 1)
        names = [th["name"] for th in proc["threads"]]
        self.assertIn("opener", names)
        p = self.report_raw(dump)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("warning: %d calls were open when tracing started (the process was "
                      "attached to while inside them): counted as partial, with no time\n" % n,
                      p.stderr)
        # The report's rows count them: partial, in calls.
        rep = self.report(dump)
        self.assertEqual(sum(f["partial"] for f in rep["functions"]), n)
        p = subprocess.run([tahelp.TRACEAGENT, "graph", dump], env=tahelp.clean_env(),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertIn("attached to while inside them): counted as partial, with no time\n",
                      p.stderr)
        self.assertNotIn("without a recorded entry", p.stderr)
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)

    def test_dlopen_in_window(self):
        """A module dlopen'ed inside a window gets its hooks too (`ctl
        flush` makes the agent look at once, as the flusher does every
        pass); one loaded before a later window is there from its start;
        after each detach its calls are not recorded."""
        t = Target(self)
        lib = os.path.join(os.path.dirname(t.case.prog("attachme-O2")), "libsample.so")
        dump = self.fresh("dl")
        first = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.proc.pid), "-o", dump],
                                 env=tahelp.clean_env(), stderr=subprocess.PIPE, text=True,
                                 cwd=self.dir)
        try:
            self.assertIn("attached", tahelp.readline(first.stderr))
            self.assertEqual(t.say("load %s 0" % lib), "square 0 sum 0")
            self.ctl(t.proc.pid, "flush")
            self.assertEqual(t.say("load %s 1000" % lib), "square 1000 sum 332833500")
        finally:
            first.send_signal(2)
            first.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(first.returncode, 0)
        self.assertEqual(t.say("load %s 7" % lib), "square 7 sum 91")
        f = self.functions(self.report(dump))
        self.assertEqual((f["sample_square"]["calls"], f["sample_twice"]["calls"]),
                         (1000, 1000))
        dump2 = self.fresh("dl2")
        second = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.proc.pid), "-o", dump2],
                                  env=tahelp.clean_env(), stderr=subprocess.PIPE, text=True,
                                  cwd=self.dir)
        try:
            self.assertIn("attached", tahelp.readline(second.stderr))
            self.assertEqual(t.say("load %s 500" % lib), "square 500 sum 41541750")
        finally:
            second.send_signal(2)
            second.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(t.say("load %s 3" % lib), "square 3 sum 5")
        f = self.functions(self.report(dump2))
        self.assertEqual(f["sample_square"]["calls"], 500)
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)

    def ctl(self, pid, *cmd):
        p = subprocess.run([tahelp.TRACEAGENT, "ctl", str(pid)] + list(cmd),
                           env=tahelp.clean_env(), capture_output=True, text=True,
                           timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)

    def patchme_stdin(self, prog):
        """`patchme stdin` started and ready: (its Popen, say), say(line)
        sending a command and returning the answer's line."""
        c = tahelp.LineChild(self, [prog, "stdin"])
        return c.proc, c.say

    def test_patch(self):
        """--patch on an uninstrumented program (patchme, x86-64) while a
        thread runs the patched work() and step(): the entries are written
        with every thread stopped, fib's calls inside the window are exact,
        none after the detach (the entries restored); a second attach
        patches again into its own dump; the output is the untraced one."""
        prog = self.prog("patchme-O2-pie-fp")  # skips where patching is not built
        t, say = self.patchme_stdin(prog)
        for dump, n, calls in ((self.fresh("p1"), 20, 21891), (self.fresh("p2"), 15, 1973)):
            a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.pid), "-o", dump,
                                  "--patch", "fib,work,step"], env=tahelp.clean_env(),
                                 stderr=subprocess.PIPE, text=True, cwd=self.dir)
            try:
                self.assertEqual(tahelp.readline(a.stderr), "traceagent: attach: patched 3 functions "
                                 "in process %d\n" % t.pid)
                self.assertIn("attached", tahelp.readline(a.stderr))
                self.assertEqual(say("fib %d" % n), "fib(%d) = %d calls %d"
                                 % (n, [6765, 610][n != 20], calls))
                # A window of a few milliseconds may end before the worker
                # thread, resumed last, has run at all (no event of it in
                # the dump, nothing lost): let it run inside the window.
                time.sleep(0.2)
            finally:
                a.send_signal(2)
                a.communicate(timeout=tahelp.TIMEOUT)
            self.assertEqual(a.returncode, 0)
            self.assertEqual(say("fib 10"), "fib(10) = 55 calls 177")
            f = self.functions(self.report(dump))
            self.assertEqual(f["fib"]["calls"], calls, dump)
            self.assertGreater(f["step"]["calls"], 0, dump)
        out, err = t.communicate("quit\n", timeout=tahelp.TIMEOUT)
        self.assertEqual((t.returncode, out, err), (0, "done\n", ""))

    def attach_fib(self, t, say, options, n, first):
        """One attach window with OPTIONS around `fib N` of patchme (t,
        say); first: the attacher's first line.  Returns the dump."""
        dump = self.fresh("fib")
        a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.pid), "-o", dump] + options,
                             env=tahelp.clean_env(), stderr=subprocess.PIPE, text=True,
                             cwd=self.dir)
        try:
            self.assertEqual(tahelp.readline(a.stderr), first % t.pid)
            self.assertIn("attached", tahelp.readline(a.stderr))
            self.assertEqual(say("fib %d" % n), "fib(%d) = %d calls %d"
                             % (n, {5: 5, 4: 3}[n], {5: 15, 4: 9}[n]))
        finally:
            a.send_signal(2)
            a.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(a.returncode, 0)
        return dump

    def replay_fib(self, dump):
        p = subprocess.run([tahelp.TRACEAGENT, "replay", "--function=fib", dump],
                           env=tahelp.clean_env(), capture_output=True, text=True,
                           timeout=tahelp.TIMEOUT)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        return [l[23:] for l in p.stdout.splitlines()[1:]]

    def test_patch_args(self):
        """--args and --retval at attach (the capstone patcher): the
        functions they name are patched in the window, each call with its
        argument and return value; a second window asks fib's return
        value alone, a third none (each window its own settings)."""
        prog = self.prog("patchme-O2-pie-fp")  # skips where patching is not built
        t, say = self.patchme_stdin(prog)
        first = "traceagent: attach: patched 1 functions in process %d\n"
        dump = self.attach_fib(t, say, ["--args", "fib@arg1/d32", "--retval", "fib/d32"], 4,
                               first)
        self.assertEqual(self.replay_fib(dump), [
            "fib(4) {", "  fib(3) {", "    fib(2) {", "      fib(1) = 1;", "      fib(0) = 0;",
            "    } = 1 /* fib */", "    fib(1) = 1;", "  } = 2 /* fib */", "  fib(2) {",
            "    fib(1) = 1;", "    fib(0) = 0;", "  } = 1 /* fib */", "} = 3 /* fib */"])
        rep = json.loads(subprocess.run(
            [tahelp.TRACEAGENT, "report", "--args", "--json", dump], env=tahelp.clean_env(),
            capture_output=True, text=True, timeout=tahelp.TIMEOUT).stdout)
        self.assertEqual(sorted((v["args"], v["calls"]) for v in rep["functions"][0]["values"]),
                         [("0", 2), ("1", 3), ("2", 2), ("3", 1), ("4", 1)])
        dump = self.attach_fib(t, say, ["--retval", "fib/d32"], 4, first)
        self.assertEqual(self.replay_fib(dump)[:4],
                         ["fib() {", "  fib() {", "    fib() {", "      fib() = 1;"])
        dump = self.attach_fib(t, say, ["--patch", "fib"], 4, first)
        self.assertEqual(self.replay_fib(dump)[:4],
                         ["fib() {", "  fib() {", "    fib() {", "      fib();"])
        out, err = t.communicate("quit\n", timeout=tahelp.TIMEOUT)
        self.assertEqual((t.returncode, out, err), (0, "done\n", ""))

    def test_args_instrumented(self):
        """--args naming an instrumented function (attachme's mid): not
        patched at attach (its hook calls would have to become no-ops
        with its threads running); its hooks record it, without
        arguments, and the program runs as untraced."""
        self.need_feature("patching")
        t = Target(self)
        dump = self.fresh("instr")
        a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.proc.pid), "-o", dump,
                              "--args", "mid@arg1"], env=tahelp.clean_env(),
                             stderr=subprocess.PIPE, text=True, cwd=self.dir)
        try:
            self.assertEqual(tahelp.readline(a.stderr),
                             "traceagent: attach: --patch mid: no function to patch in "
                             "process %d\n" % t.proc.pid)
            self.assertIn("attached", tahelp.readline(a.stderr))
            t.say("time 100")
        finally:
            a.send_signal(2)
            a.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(a.returncode, 0)
        self.assertIn("mid", self.functions(self.report(dump)))
        rep = json.loads(subprocess.run(
            [tahelp.TRACEAGENT, "report", "--args", "--json", dump], env=tahelp.clean_env(),
            capture_output=True, text=True, timeout=tahelp.TIMEOUT).stdout)
        self.assertEqual(rep, {"functions": []})
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)

    def test_args_too_long(self):
        """An --args the agent could not read whole is refused."""
        p = subprocess.run([tahelp.TRACEAGENT, "attach", "1", "--args", "f@arg1" + ";g@arg1" * 80],
                           env=tahelp.clean_env(), capture_output=True, text=True,
                           timeout=tahelp.TIMEOUT)
        self.assertEqual((p.returncode, p.stderr),
                         (2, "traceagent: attach: --args is longer than 511 bytes\n"))

    def test_patch_each_window_its_own(self):
        """Each window patches what its own --patch asks: a second window
        asking fib only patches fib (not the first window's work and
        step), and a window without --patch patches nothing (its dump
        has no patching to show)."""
        prog = self.prog("patchme-O2-pie-fp")  # skips where patching is not built
        t, say = self.patchme_stdin(prog)
        for dump, patch, line, names in (
                (self.fresh("w1"), ["--patch", "fib,work,step"], "patched 3 functions",
                 {"fib", "work", "step"}),
                (self.fresh("w2"), ["--patch", "fib"], "patched 1 functions", {"fib"}),
                (self.fresh("w3"), [], None, set())):
            a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.pid), "-o", dump] + patch,
                                 env=tahelp.clean_env(), stderr=subprocess.PIPE, text=True,
                                 cwd=self.dir)
            try:
                if line:
                    self.assertEqual(tahelp.readline(a.stderr), "traceagent: attach: %s "
                                     "in process %d\n" % (line, t.pid))
                self.assertIn("attached", tahelp.readline(a.stderr))
                self.assertEqual(say("fib 10"), "fib(10) = 55 calls 177")
                time.sleep(0.2)
            finally:
                a.send_signal(2)
                a.communicate(timeout=tahelp.TIMEOUT)
            self.assertEqual(a.returncode, 0)
            p = subprocess.run([tahelp.TRACEAGENT, "info", "--json", dump],
                               env=tahelp.clean_env(), capture_output=True, text=True,
                               timeout=tahelp.TIMEOUT)
            self.assertEqual(p.returncode, 0, p.stderr)
            proc = json.loads(p.stdout)["processes"][0]
            if names:
                self.assertEqual(set(self.functions(self.report(dump))), names, dump)
                self.assertEqual(proc["patch"]["patched"], len(names), dump)
            else:
                self.assertIsNone(proc["patch"], dump)
        out, err = t.communicate("quit\n", timeout=tahelp.TIMEOUT)
        self.assertEqual((t.returncode, out, err), (0, "done\n", ""))

    def test_patch_dlopen_in_window(self):
        """--patch names a library's functions; the program dlopens it
        inside the window: the loader sees the new code mapping, the agent
        plans the new module with the threads running and the loader
        writes its entries with every thread stopped; plib_square's calls
        made after are exact (plib_twice, 4 bytes, is refused); after the detach the library's entries are as before
        (its calls are not recorded, their results unchanged)."""
        prog = self.prog("patchme-O2-pie-fp")
        lib = os.path.join(tahelp.PROGRAMS, "libpatchlib.so")
        t, say = self.patchme_stdin(prog)
        dump = self.fresh("pd")
        a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.pid), "-o", dump,
                              "--patch", "fib,libpatchlib.so:plib_*"], env=tahelp.clean_env(),
                             stderr=subprocess.PIPE, text=True, cwd=self.dir)
        try:
            self.assertEqual(tahelp.readline(a.stderr), "traceagent: attach: patched 1 functions "
                             "in process %d\n" % t.pid)
            self.assertIn("attached", tahelp.readline(a.stderr))
            self.assertEqual(say("load " + lib), "loaded")
            # The loader looks at the maps 5 times a second (a loader that
            # never patches is stopped after 30 s: the line below fails).
            stop = threading.Timer(30, a.send_signal, (2,))
            stop.start()
            self.addCleanup(stop.cancel)
            # plib_twice (4 bytes) is refused, as at a preloaded dlopen.
            self.assertEqual(tahelp.readline(a.stderr), "traceagent: attach: patched 1 functions "
                             "in process %d (in modules loaded during the window)\n" % t.pid)
            self.assertEqual(say("square 100"), "sum = 328350")
            self.assertEqual(say("fib 10"), "fib(10) = 55 calls 177")
        finally:
            a.send_signal(2)
            a.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(a.returncode, 0)
        self.assertEqual(say("square 100"), "sum = 328350")
        f = self.functions(self.report(dump))
        self.assertEqual(f["plib_square"]["calls"], 100, dump)
        self.assertNotIn("plib_twice", f)
        self.assertEqual(f["fib"]["calls"], 177, dump)
        out, err = t.communicate("quit\n", timeout=tahelp.TIMEOUT)
        self.assertEqual((t.returncode, out, err), (0, "done\n", ""))

    def test_patch_breakpoints(self):
        """--patch over breakpoints (patchbplib.c's, set when the library
        was loaded, before the attach; its SIGTRAP handler plays the
        debugger): the functions with one at their entry are refused and
        named on the target's stderr, the one with a breakpoint further in
        is patched with its body in place; every breakpoint traps where it
        was set, nothing dies of a SIGTRAP, and the patched ones are
        traced."""
        prog = self.prog("patchme-O2-pie-fp")
        lib = os.path.join(tahelp.PROGRAMS, "libpatchbplib.so")
        t, say = self.patchme_stdin(prog)
        self.assertEqual(say("load " + lib), "loaded")
        dump = self.fresh("pb")
        a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.pid), "-o", dump,
                              "--patch", "libpatchbplib.so:bp_[eip]*"], env=tahelp.clean_env(),
                             stderr=subprocess.PIPE, text=True, cwd=self.dir)
        try:
            self.assertEqual(a.stderr.readline(), "traceagent: attach: patched 2 functions "
                             "in process %d\n" % t.pid)
            self.assertIn("attached", a.stderr.readline())
            for name, want in (("bp_entry", 64), ("bp_endbr", 43), ("bp_inner", 42),
                               ("bp_plain", 22)):
                self.assertEqual(say("call %s 21" % name), "%s(21) = %d" % (name, want))
        finally:
            a.send_signal(2)
            a.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(a.returncode, 0)
        self.assertEqual(say("call bp_hits 0"), "bp_hits(0) = 3")
        f = self.functions(self.report(dump))
        self.assert_calls(f, {"bp_inner": 1, "bp_plain": 1, "bp_entry": None, "bp_endbr": None})
        patch = self.info(dump)["processes"][0]["patch"]
        self.assertEqual(sorted((r["name"], r["code"]) for r in patch["refused"]),
                         [("bp_endbr", 12), ("bp_entry", 12)])
        out, err = t.communicate("quit\n", timeout=tahelp.TIMEOUT)
        self.assertEqual((t.returncode, out), (0, "done\n"))
        named = sorted(re.findall(r"^traceagent: not patching (\w+) \(.*libpatchbplib\.so, "
                                  r"0x[0-9a-f]+\): a breakpoint \(int3\) in its first bytes",
                                  err, re.M))
        self.assertEqual(named, ["bp_endbr", "bp_entry"], err)

    def test_cycles(self):
        """10 windows on 8 busy threads: each a whole dump of its own; after
        each detach the process has its threads, its descriptors and about
        its memory of before the first attach, but for the agent's control
        thread and its 4 descriptors (socket, wake pipe, eventfd), which
        stay; the program's output unchanged."""
        t = Target(self, nthreads=8)
        pid = t.proc.pid

        def status(key):
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith(key + ":"):
                        return int(line.split()[1])

        def fds():
            return len(os.listdir("/proc/%d/fd" % pid))
        threads0, fds0, rss0 = status("Threads"), fds(), status("VmRSS")
        for i in range(10):
            self.attach(pid, "--duration", "0.05")
            self.assertEqual((status("Threads"), fds()), (threads0 + 1, fds0 + 4), i)
            # The rings' pages are given back at each detach: what stays is
            # the agent's code and data, the control thread's stack, libc's
            # pages the agent touched (1-2 MiB), and what malloc keeps of
            # the per-thread arenas in which the busy threads' own drains
            # allocated (up to 8 arenas a core, a few hundred KiB each:
            # scripts/attach-cycles measured 2.7-7.0 MiB after the detaches
            # of 50 windows on 2 cores, 1.7 MiB before; docs/traceagent-attach.md).
            self.assertLess(status("VmRSS") - rss0, 10 * 1024, i)
        for i in range(10):
            d = "traceagent.%d.trace" % pid if i == 0 else "traceagent.%d.%d.trace" % (pid, i + 1)
            self.assertTrue(self.info(os.path.join(self.dir, d))["complete"], d)
        status_, out, err = t.quit()
        self.assertEqual((status_, out.splitlines()[-1] + "\n"), (0, DONE), err)

    def test_second_attach_refused(self):
        t = Target(self)
        dump = self.fresh("busy")
        first = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.proc.pid), "-o", dump,
                                  "--duration", "3"], env=tahelp.clean_env(),
                                 stderr=subprocess.PIPE, text=True, cwd=self.dir)
        def tracer():
            with open("/proc/%d/status" % t.proc.pid) as f:
                for line in f:
                    if line.startswith("TracerPid:"):
                        return int(line.split()[1])
        try:
            # The first attach's window is open: its dump is there and it
            # let go of the process (it holds it with ptrace only while it
            # injects; a second attach then would find a tracer, as it
            # would a debugger).
            for _ in range(500):
                if os.path.exists(dump) and tracer() == 0:
                    break
                time.sleep(0.02)
            self.assertEqual((os.path.exists(dump), tracer()), (True, 0))
            p = self.attach(t.proc.pid, status=1)
            self.assertEqual(p.stderr, "traceagent: attach: process %d: the process is being "
                             "traced by another attach already\n" % t.proc.pid)
        finally:
            first.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(first.returncode, 0)
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)

    def test_refusals(self):
        p = self.attach(999999999, status=1)
        self.assertEqual(p.stderr, "traceagent: attach: no process 999999999\n")
        if os.geteuid() == 0:
            t = Target(self)

            def nobody():
                os.setgid(65534)
                os.setuid(65534)
            p = self.attach(t.proc.pid, user=nobody, status=1)
            self.assertIn("permission denied: process %d belongs to uid 0" % t.proc.pid,
                          p.stderr)
            status, out, err = t.quit()
            self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)

    def sleeper(self, argv, preexec=None):
        """A process left running for the test's length (killed after)."""
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, preexec_fn=preexec)

        def end():
            proc.kill()
            proc.wait(timeout=tahelp.TIMEOUT)
        self.addCleanup(end)
        return proc

    def test_refused_traced(self):
        """A process being ptraced already (TRACEME then exec: this test is
        its tracer, and it stops at the exec)."""
        def traceme():
            libc = ctypes.CDLL(None, use_errno=True)
            libc.ptrace(0, 0, None, None)  # PTRACE_TRACEME
        proc = self.sleeper(["sleep", "30"], preexec=traceme)
        for _ in range(200):
            with open("/proc/%d/status" % proc.pid) as f:
                if "\nTracerPid:\t%d\n" % os.getpid() in f.read():
                    break
            time.sleep(0.01)
        p = self.attach(proc.pid, status=1)
        self.assertEqual(p.stderr, "traceagent: attach: process %d is being traced by process "
                         "%d already (a debugger?)\n" % (proc.pid, os.getpid()))

    def test_refused_static(self):
        src = os.path.join(self.dir, "static.c")
        exe = os.path.join(self.dir, "static")
        with open(src, "w") as f:
            f.write("#include <unistd.h>\nint main(void) { pause(); return 0; }\n")
        if subprocess.run(["cc", "-static", "-o", exe, src], capture_output=True).returncode:
            self.skipTest("cc -static does not link here (no libc.a)")
        proc = self.sleeper([exe])
        p = self.attach(proc.pid, status=1)
        self.assertEqual(p.stderr, "traceagent: attach: process %d is statically linked (no "
                         "libc.so.6 in its maps): the agent cannot be loaded into it\n"
                         % proc.pid)

    def test_refused_other_arch(self):
        """A program of another architecture runs under qemu-user here
        (binfmt_misc or called explicitly): refused as such."""
        qemu = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
        gcc = shutil.which("aarch64-linux-gnu-gcc")
        if platform.machine() == "aarch64" or not qemu or not gcc:
            self.skipTest("needs qemu-aarch64 and aarch64-linux-gnu-gcc on x86-64")
        src = os.path.join(self.dir, "other.c")
        exe = os.path.join(self.dir, "other")
        with open(src, "w") as f:
            f.write("#include <unistd.h>\nint main(void) { pause(); return 0; }\n")
        if subprocess.run([gcc, "-static", "-o", exe, src], capture_output=True).returncode:
            self.skipTest("aarch64-linux-gnu-gcc -static does not link here")
        proc = self.sleeper([qemu, exe])
        p = self.attach(proc.pid, status=1)
        self.assertEqual(p.stderr, "traceagent: attach: process %d runs under %s (a program of "
                         "another architecture): the agent cannot be loaded into it\n"
                         % (proc.pid, os.path.basename(os.path.realpath(qemu))))

    def test_refused_setuid(self):
        """A set-user-ID program (a setuid-root copy of sleep run by nobody)."""
        if os.geteuid() != 0:
            self.skipTest("making a set-user-ID program needs root")
        d = tempfile.mkdtemp(prefix="ta-suid-", dir="/tmp")
        self.addCleanup(shutil.rmtree, d)
        os.chmod(d, 0o755)
        exe = os.path.join(d, "sleep")
        shutil.copy(shutil.which("sleep"), exe)
        os.chmod(exe, 0o4755)

        def nobody():
            os.setgid(65534)
            os.setuid(65534)
        proc = self.sleeper([exe, "30"], preexec=nobody)
        for _ in range(200):
            with open("/proc/%d/status" % proc.pid) as f:
                uid = [l for l in f if l.startswith("Uid:")][0].split()
            if uid[1:3] == ["65534", "0"]:
                break
            time.sleep(0.01)
        else:
            self.skipTest("the set-user-ID bit is not honoured here (nosuid /tmp?)")
        p = self.attach(proc.pid, status=1)
        self.assertEqual(p.stderr, "traceagent: attach: process %d is set-user-ID (uid 65534, "
                         "effective 0): never traced\n" % proc.pid)

    def test_refused_not_dumpable(self):
        """ptrace refused: a process of the same user that made itself
        non-dumpable (as root, both run as nobody, without CAP_SYS_PTRACE).
        The message names kernel.yama.ptrace_scope with its value; a test
        cannot change that setting in a container."""
        user = None
        if os.geteuid() == 0:
            def user():
                os.setgid(65534)
                os.setuid(65534)
        d = tempfile.mkdtemp(prefix="ta-nodump-", dir="/tmp")
        self.addCleanup(shutil.rmtree, d)
        os.chmod(d, 0o755)
        src, exe = os.path.join(d, "nodump.c"), os.path.join(d, "nodump")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\n#include <sys/prctl.h>\n#include <unistd.h>\n"
                    "int main(void) { prctl(PR_SET_DUMPABLE, 0); puts(\"\"); fflush(stdout); "
                    "pause(); return 0; }\n")
        subprocess.run(["cc", "-o", exe, src], check=True)
        proc = subprocess.Popen([exe], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                preexec_fn=user)

        def end():
            proc.kill()
            proc.wait(timeout=tahelp.TIMEOUT)
            proc.stdout.close()
        self.addCleanup(end)
        self.assertEqual(tahelp.readline(proc.stdout), "\n".encode())
        try:
            with open("/proc/sys/kernel/yama/ptrace_scope") as f:
                scope = f.read().strip()
        except OSError:
            scope = "not set (no Yama)"
        p = self.attach(proc.pid, status=1, user=user)
        self.assertEqual(p.stderr, "traceagent: attach: cannot ptrace process %d: Permission "
                         "denied (kernel.yama.ptrace_scope is %s; attach needs the process's "
                         "user with ptrace_scope 0, or CAP_SYS_PTRACE, also for a process "
                         "that made itself non-dumpable)\n" % (proc.pid, scope))

    def test_preloaded_paused(self):
        dump = self.fresh("pre")
        t = Target(self, env={"LD_PRELOAD": tahelp.AGENT, "TRACEAGENT_OUTPUT": dump,
                              "TRACEAGENT_START": "paused", "XDG_RUNTIME_DIR": self.dir})
        for _ in range(200):
            if os.path.exists(dump):
                break
            time.sleep(0.02)
        size = os.path.getsize(dump)
        p = self.attach(t.proc.pid, "--duration", "0.3")
        # Paused again: nothing more after the detach's flush.
        size1 = os.path.getsize(dump)
        self.assertGreater(size1, size)
        time.sleep(0.3)
        # A thread that read its gate just before the pause may record one
        # event after the mark (docs/traceagent-ctl.md): a chunk at most, no stream.
        self.assertLess(os.path.getsize(dump) - size1, 1024)
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)


if __name__ == "__main__":
    tahelp.main()
