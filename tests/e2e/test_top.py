# SPDX-License-Identifier: MIT
"""top: `traceagent top`, the live view, from each of its sources.

phases calls phase_a() for PHASE_MS ms, then phase_b(), then phase_c(),
and prints how many times it called each.  `top --batch --interval 0.25
-- phases`: each snapshot's rows sorted by self time in the interval, each
phase's calls in some interval, the hottest function going a, then b,
then c, never back; the last snapshot's
since-start calls are the program's counts exactly and top exits with
the program's status.  The same numbers from a dump top follows while
the program (started apart with LD_PRELOAD) writes it, from a dump sent
in pieces to `top --serve` over a unix and a TCP socket, and from a fake
agent that answers `top -p PID` on its control socket.  Last, top on a
terminal (tmux): rows, the sort column and the filter in its header on
its keys, q quits and the shell's terminal is as it was."""

import os
import random
import shutil
import socket
import subprocess
import threading
import time

import tahelp
from tahelp import TRACEAGENT, AGENT

PHASES = ("phase_a", "phase_b", "phase_c")


def parse_batch(text):
    """The snapshots of `top --batch`: a list of dicts with 'head' (the
    first line's words), 'ended' (the words after "ended" or None) and
    'rows' (name -> dict of the numeric columns), rows in order in
    'order'."""
    snaps = []
    for block in text.split("\n\n"):
        lines = [l for l in block.splitlines() if l.strip()]
        if not lines or not lines[0].startswith("snapshot "):
            continue
        snap = {"head": lines[0].split(), "ended": None, "rows": {}, "order": [],
                "frames": None}
        in_rows = False
        for l in lines[1:]:
            w = l.split()
            if w[0] == "ended":
                snap["ended"] = w[1:]
            elif w[0] == "frames":
                snap["frames"] = w
            elif w[0] == "events/s":
                snap["events"] = int(w[3])
            elif w[0] == "calls/s":
                in_rows = True
            elif w[0] == "thread":
                in_rows = False
            elif in_rows:
                f = l.split(None, 7)
                row = {"calls": int(f[1]), "self_ns": int(f[2]), "calls_all": int(f[4]),
                       "self_ns_all": int(f[5]), "module": f[6]}
                snap["rows"][f[7]] = row
                snap["order"].append(f[7])
        snaps.append(snap)
    return snaps


def own_counts(text):
    """phases' own counts from its output."""
    out = {}
    for l in text.splitlines():
        w = l.split()
        if len(w) == 2 and w[0] in PHASES:
            out[w[0]] = int(w[1])
    return out


class TopTest(tahelp.Case):

    def phases(self, level="O2"):
        return self.prog("phases-" + level)

    def assert_final(self, snaps, counts):
        """The last snapshot: the stream's end, and every phase's calls
        since the start exactly the program's."""
        self.assertTrue(snaps, "no snapshot")
        last = snaps[-1]
        self.assertIsNotNone(last["ended"], "the last snapshot does not say it ended")
        self.assertEqual(set(counts), set(PHASES))
        for name in PHASES:
            self.assertEqual(last["rows"][name]["calls_all"], counts[name], name)
        # Only what the interval added is in the interval's column.
        for s in snaps:
            for name, row in s["rows"].items():
                self.assertLessEqual(row["calls"], row["calls_all"], name)

    def test_program_phases(self):
        env = tahelp.clean_env({"PHASE_MS": "700"})
        proc = subprocess.run([TRACEAGENT, "top", "--batch", "--interval", "0.25", "--",
                               self.phases()],
                              env=env, cwd=self.dir, capture_output=True, text=True,
                              timeout=tahelp.TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        snaps = parse_batch(proc.stdout)
        # Which phase leads which snapshot depends on where the snapshots
        # fall (an interval may hold two phases, or the whole of one when
        # top gets no CPU for a while), so what is asserted is what top
        # guarantees: each snapshot ranked by its interval's self time,
        # every phase's calls in some interval, and the hottest phase
        # going a, then b, then c, never back.
        for s in snaps:
            if s["order"]:
                top_self = s["rows"][s["order"][0]]["self_ns"]
                self.assertEqual(top_self, max(r["self_ns"] for r in s["rows"].values()), s)
        for name in PHASES:
            self.assertTrue(any(s["rows"].get(name, {}).get("calls", 0) > 0 for s in snaps),
                            "%s: no calls in any snapshot's interval" % name)
        hot = [s["order"][0] for s in snaps if s["order"] and s["order"][0] in PHASES
               and s["rows"][s["order"][0]]["calls"] > 0]
        steps = [PHASES.index(h) for h in hot]
        self.assertEqual(steps, sorted(steps), hot)
        self.assertEqual(snaps[-1]["ended"], ["exit", "0"])
        self.assert_final(snaps, own_counts(proc.stderr))
        # The program marks frames: the frames line, and its count.
        self.assertIsNotNone(snaps[-1]["frames"])
        self.assertEqual(snaps[-1]["frames"][1], "frame")
        # -o keeps the dump, which report reads with the same counts;
        # and top ends with the program's exit status.
        kept = self.path("kept.trace")
        proc = subprocess.run([TRACEAGENT, "top", "--batch", "-o", kept, "--",
                               self.prog("status-O0"), "exit", "3"],
                              env=tahelp.clean_env(), cwd=self.dir, capture_output=True,
                              text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.assertTrue(os.path.exists(kept))
        self.assertEqual(parse_batch(proc.stdout)[-1]["ended"], ["exit", "3"])
        # Without -o, nothing is left behind.
        tmp = self.path("tmp")
        os.mkdir(tmp)
        proc = subprocess.run([TRACEAGENT, "top", "--batch", "--", self.prog("status-O0"),
                               "exit", "0"],
                              env=tahelp.clean_env({"TMPDIR": tmp}), cwd=self.dir,
                              capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.listdir(tmp), [])

    def test_follow_dump(self):
        dump = self.path("follow.trace")
        env = tahelp.clean_env({"LD_PRELOAD": AGENT, "TRACEAGENT_OUTPUT": dump,
                                "PHASE_MS": "600"})
        prog = subprocess.Popen([self.phases("O0")], env=env, cwd=self.dir,
                                stdout=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while not os.path.exists(dump) and time.time() < deadline:
            time.sleep(0.01)
        top = subprocess.Popen([TRACEAGENT, "top", "--batch", "--interval", "0.25", "-n", "200",
                                dump],
                               env=tahelp.clean_env(), cwd=self.dir, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        out, _ = prog.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(prog.returncode, 0)
        tout, terr = top.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(top.returncode, 0, terr)
        snaps = parse_batch(tout)
        # It read the dump as it grew: the first snapshot saw less than the
        # last, and the end is the dump's.
        self.assertLess(snaps[0]["events"], snaps[-1]["events"])
        self.assertEqual(snaps[-1]["ended"], ["complete"])
        self.assert_final(snaps, own_counts(out))

    def test_self_pct_within_a_thread(self):
        """phases is one thread: in every snapshot each row's self% and
        their sum stay within 100% (0.1 of rounding a row), though the
        dump, read at once, holds far more time than an interval of wall
        time: the interval's self times are shares of the program time it
        covered."""
        r = self.run_preload([self.phases()], env={"PHASE_MS": "300"})
        self.assertEqual(r.returncode, 0, r.stderr)
        proc = subprocess.run([TRACEAGENT, "top", "--batch", "--interval", "0.05", "-n", "3",
                               r.dump],
                              env=tahelp.clean_env(), cwd=self.dir, capture_output=True,
                              text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        seen = 0
        for block in proc.stdout.split("\n\n"):
            lines = block.splitlines()
            if not lines or not lines[0].startswith("snapshot "):
                continue
            at = next(i for i, l in enumerate(lines) if l.split()[:1] == ["calls/s"])
            pcts = [float(l.split()[3]) for l in lines[at + 1:]
                    if l.strip() and not l.startswith("thread ")]
            for p in pcts:
                self.assertLessEqual(p, 100.0, block)
            self.assertLessEqual(sum(pcts), 100.0 + 0.1 * len(pcts), block)
            seen += sum(pcts) > 0
        self.assertGreater(seen, 0, proc.stdout)

    def record_phases(self):
        """A dump of phases and its counts."""
        r = self.run_preload([self.phases()], env={"PHASE_MS": "150"})
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(r.dump, "rb") as f:
            return f.read(), own_counts(r.stdout)

    @staticmethod
    def send_in_pieces(sock, data, seed):
        """Sends data in pieces of random sizes, some a byte long, with
        pauses, so top sees chunks cut anywhere."""
        rnd = random.Random(seed)
        i = 0
        while i < len(data):
            n = rnd.choice((1, 7, 31, 4096, 65536, 300000))
            sock.sendall(data[i:i + n])
            i += n
            if rnd.random() < 0.05:
                time.sleep(0.01)
        sock.close()

    def serve_case(self, addr, connect):
        data, counts = self.record_phases()
        top = subprocess.Popen([TRACEAGENT, "top", "--batch", "--interval", "0.1",
                                "--serve=" + addr],
                               env=tahelp.clean_env(), cwd=self.dir, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while True:
            try:
                sock = connect()
                break
            except OSError:
                if time.time() > deadline or top.poll() is not None:
                    raise
                time.sleep(0.02)
        seed = random.randrange(1 << 30)
        self.send_in_pieces(sock, data, seed)
        out, err = top.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(top.returncode, 0, err)
        snaps = parse_batch(out)
        self.assertEqual(snaps[-1]["ended"], ["complete"], "seed %d" % seed)
        self.assert_final(snaps, counts)

    def test_serve_unix(self):
        path = self.path("top.sock")

        def connect():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
            except OSError:
                s.close()
                raise
            return s

        self.serve_case("unix:" + path, connect)
        self.assertFalse(os.path.exists(path), "top left its socket")

    def test_serve_tcp(self):
        # A free port: the kernel's, given back for top to take.
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        self.serve_case("tcp://127.0.0.1:%d" % port,
                        lambda: socket.create_connection(("127.0.0.1", port), timeout=5))

    def fake_agent(self, pid, answer, data):
        """A control socket at the place format/ctlsock.h says for pid,
        under XDG_RUNTIME_DIR: answers one "stream" request with answer
        and data.  Returns the environment for top and the thread."""
        xdg = self.path("xdg")
        os.makedirs(os.path.join(xdg, "traceagent"), mode=0o700)
        path = os.path.join(xdg, "traceagent", "%d.sock" % pid)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        got = []

        def serve():
            conn, _ = srv.accept()
            req = b""
            while not req.endswith(b"\n"):
                b = conn.recv(1)
                if not b:
                    break
                req += b
            got.append(req)
            conn.sendall(answer)
            if data:
                self.send_in_pieces(conn, data, 16)
            else:
                conn.close()
            srv.close()

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        return tahelp.clean_env({"XDG_RUNTIME_DIR": xdg}), t, got

    def test_pid(self):
        data, counts = self.record_phases()
        env, t, got = self.fake_agent(4242, b"ok stream\n", data)
        proc = subprocess.run([TRACEAGENT, "top", "--batch", "--interval", "0.1", "-p", "4242"],
                              env=env, cwd=self.dir, capture_output=True, text=True,
                              timeout=tahelp.TIMEOUT)
        t.join(10)
        self.assertEqual(got, [b"stream\n"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assert_final(parse_batch(proc.stdout), counts)

    def test_pid_refused(self):
        env, t, got = self.fake_agent(4243, b"error: stream: not now\n", None)
        proc = subprocess.run([TRACEAGENT, "top", "--batch", "-p", "4243"], env=env,
                              cwd=self.dir, capture_output=True, text=True,
                              timeout=tahelp.TIMEOUT)
        t.join(10)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stdout, "")
        self.assertEqual(proc.stderr.strip(),
                         "traceagent top: process 4243: error: stream: not now")
        # No socket at all: said, status 1.
        proc = subprocess.run([TRACEAGENT, "top", "--batch", "-p", "4244"], env=env,
                              cwd=self.dir, capture_output=True, text=True,
                              timeout=tahelp.TIMEOUT)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("process 4244: no control socket", proc.stderr)

    def test_usage(self):
        for argv, why in ((["--batch"], "nothing to watch"),
                          (["--batch", "--interval", "soon", "x.trace"], "--interval: 'soon'"),
                          (["--batch", "-p", "1", "x.trace"], "one source at a time"),
                          (["--batch", "-o", "k", "x.trace"], "-o is for -- PROG")):
            with self.subTest(argv=argv):
                r = self.run_plain([TRACEAGENT, "top"] + argv)
                self.assertEqual(r.returncode, 2)
                self.assertIn(why, r.stderr)
        # --help prints the help and exits 0, and nothing else.
        for flag in ("--help", "-h"):
            with self.subTest(argv=[flag]):
                r = self.run_plain([TRACEAGENT, "top", flag])
                self.assertEqual(r.returncode, 0)
                self.assertIn("usage: traceagent top", r.stdout)
                self.assertEqual(r.stderr, "")
        # The screen needs a terminal.
        r = self.run_plain([TRACEAGENT, "top", self.path("none.trace")])
        self.assertEqual(r.returncode, 2)
        self.assertIn("not on a terminal", r.stderr)

    def tmux_bash(self, name):
        """A tmux server of the test's own (socket NAME-PID) running bash in
        a 120x30 terminal in the test's directory, killed at the end:
        (screen(), keys(*k), wait_for(pred, what)).  Skips without tmux."""
        if not shutil.which("tmux"):
            self.skipTest("tmux is not installed")
        tmux = ["tmux", "-L", "%s-%d" % (name, os.getpid()), "-f", "/dev/null"]
        env = tahelp.clean_env({"PHASE_MS": "20000", "PS1": "$ "})
        env.pop("TMUX", None)
        subprocess.run(tmux + ["new-session", "-d", "-x", "120", "-y", "30",
                               "bash --norc --noprofile"],
                       env=env, cwd=self.dir, check=True, timeout=30)
        self.addCleanup(subprocess.run, tmux + ["kill-server"], capture_output=True)

        def screen():
            return subprocess.run(tmux + ["capture-pane", "-p"], capture_output=True,
                                  text=True, timeout=30).stdout

        def keys(*k):
            subprocess.run(tmux + ["send-keys"] + list(k), check=True, timeout=30)

        def wait_for(pred, what):
            deadline = time.time() + 20
            while time.time() < deadline:
                s = screen()
                if pred(s):
                    return s
                time.sleep(0.1)
            self.fail("%s; the screen:\n%s" % (what, screen()))

        return screen, keys, wait_for

    def test_screen_tmux(self):
        screen, keys, wait_for = self.tmux_bash("ta-top")

        keys("stty -a > before.txt; %s top --interval 0.2 -- %s; echo top-status-$?"
             % (TRACEAGENT, self.phases()), "Enter")
        s = wait_for(lambda s: "phase_a" in s and "sort: SELF" in s,
                     "no phase_a row under the sort by self")
        self.assertIn("traceagent top", s)
        self.assertIn("q quit", s)
        keys("c")
        wait_for(lambda s: "sort: CALLS/S" in s and ">CALLS/S" in s, "c did not sort by calls/s")
        keys(">")
        wait_for(lambda s: "sort: SELF " in s.splitlines()[0] and ">SELF " in s,
                 "> did not move the sort column")
        keys("S")
        wait_for(lambda s: "sort: SELF-ALL" in s, "S did not sort by self since the start")
        keys("/", "now", "Enter")

        def filtered(s):
            rows = s.split(">SELF-ALL", 1)[-1]
            return "filter: now" in s and "now_ns" in rows and "phase_a" not in rows

        wait_for(filtered, "/ did not filter the rows")
        keys("/", "Enter")
        wait_for(lambda s: "filter:" not in s and "phase_a" in s, "an empty filter did not clear")
        keys("t")
        wait_for(lambda s: "EVENTS/S" in s and "TID" in s, "t did not show the threads")
        keys("q")
        s = wait_for(lambda s: "top-status-" in s, "q did not end top")
        # The terminal is as before: the same settings, the shell's screen.
        keys("stty -a > after.txt; echo stty-done", "Enter")
        wait_for(lambda s: "stty-done\n" in s.replace("echo stty-done", ""), "the shell is stuck")
        with open(self.path("before.txt")) as a, open(self.path("after.txt")) as b:
            self.assertEqual(a.read(), b.read())

    def test_screen_stdin_redirected(self):
        """top on a terminal with its standard input redirected (top --
        prog < FILE, or a pipe): the keys come from the terminal, q quits,
        and the terminal is as it was."""
        screen, keys, wait_for = self.tmux_bash("ta-top-in")
        for n, redirect in enumerate(("%s top --interval 0.2 -- %s < /dev/null",
                                      "echo x | %s top --interval 0.2 -- %s")):
            with self.subTest(redirect=redirect):
                keys("clear; stty -a > before%d.txt" % n, "Enter")
                keys((redirect + "; echo top-status-$?") % (TRACEAGENT, self.phases()),
                     "Enter")
                wait_for(lambda s: "phase_a" in s and "sort: SELF" in s,
                         "no phase_a row under the sort by self")
                keys("c")
                wait_for(lambda s: "sort: CALLS/S" in s, "c did not sort by calls/s")
                keys("q")
                wait_for(lambda s: "top-status-" in s, "q did not end top")
                keys("stty -a > after%d.txt; echo stty-done%d" % (n, n), "Enter")
                wait_for(lambda s: ("stty-done%d\n" % n) in s.replace("echo stty-done", ""),
                         "the shell is stuck")
                with open(self.path("before%d.txt" % n)) as a, \
                        open(self.path("after%d.txt" % n)) as b:
                    self.assertEqual(a.read(), b.read())

    # ---- against the real agent -------------------------------------------------

    def test_pid_real_agent(self):
        # Started paused, so that what the stream shows is exactly what
        # the file dump holds: top -p, then resume, known phases, the end.
        from test_ctl import Family
        f = Family(self, env={"TRACEAGENT_START": "paused"})
        top = subprocess.Popen([TRACEAGENT, "top", "--batch", "--interval", "0.1",
                                "--sort=self-all", "-p", str(f.pid)],
                               env=tahelp.clean_env({"XDG_RUNTIME_DIR": f.xdg}), cwd=self.dir,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: top.poll() is None and top.kill())
        for _ in range(400):
            if "stream on" in f.ctl(f.pid, "status").stdout:
                break
            self.assertIsNone(top.poll(), top.stderr.read() if top.poll() is not None else "")
            time.sleep(0.05)
        f.say("10", "parent %d done 10\n" % f.pid)  # paused: in neither
        f.ctl(f.pid, "resume")
        f.say("hot 300", "parent %d hot 300\n" % f.pid)
        f.say("1000", "parent %d done 1000\n" % f.pid)
        f.finish()
        out, err = top.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(top.returncode, 0, err)
        snaps = parse_batch(out)
        last = snaps[-1]
        self.assertEqual(last["ended"], ["complete"])
        self.assertEqual(last["order"][0], "hot", last["order"])
        got = {n: last["rows"][n]["calls_all"] for n in ("hot", "work", "phase")}
        self.assertEqual(got, {"hot": 300, "work": 1000, "phase": 1})
        rep = self.report(f.dump)
        self.assert_whole(rep)
        self.assert_calls(self.functions(rep), {"hot": 300, "work": 1000, "phase": 1})

    def test_pid_threads(self):
        """top -p of a process whose threads started before it: the
        stream's reader is told of them, so the head counts them and each
        thread's line has its name (attachme 2: main, 2 busy, sleeper,
        waiter, poller and "opener": 7 threads that call traced code)."""
        xdg = self.dir
        child = tahelp.LineChild(self, [self.prog("attachme-O2"), "2"],
                                 env={"LD_PRELOAD": AGENT, "XDG_RUNTIME_DIR": xdg,
                                      "TRACEAGENT_OUTPUT": self.path("attachme.trace")})
        pid = child.proc.pid
        task = "/proc/%d/task" % pid
        names = {}
        for tid in os.listdir(task):
            with open(os.path.join(task, tid, "comm")) as fh:
                names[int(tid)] = fh.read().strip()
        self.assertIn("opener", names.values())
        # -n bounds top: 300 snapshots, 30 s, for the threads to be seen.
        top = subprocess.Popen([TRACEAGENT, "top", "--batch", "--interval", "0.1", "-n", "300",
                                "-p", str(pid)],
                               env=tahelp.clean_env({"XDG_RUNTIME_DIR": xdg}), cwd=self.dir,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: top.poll() is None and top.kill())
        block, seen = [], None
        while True:
            line = tahelp.readline(top.stdout, "top's next line")
            if not line:
                break
            if line.strip():
                block.append(line.split())
                continue
            head = next((w for w in block if w and w[0] == "events/s"), None)
            threads = {int(w[2]): w[w.index("name") + 1] for w in block
                       if w and w[0] == "thread"}
            block = []
            if head is None or int(head[head.index("threads") + 1]) != 7:
                continue
            if "opener" in threads.values():
                seen = threads
                break
        top.kill()
        top.wait(timeout=tahelp.TIMEOUT)
        self.assertIsNotNone(seen, "no snapshot of top -p counted 7 threads and named opener")
        for tid, name in seen.items():
            self.assertEqual(name, names[tid], "thread %d" % tid)
        status, out, err = child.quit()
        self.assertEqual(status, 0, err)

    def wait_listening(self, addr, proc):
        """Until addr (unix:PATH or tcp://127.0.0.1:PORT) has a listening
        socket: its file, or a LISTEN row in /proc/net/tcp."""
        deadline = time.time() + 30
        while True:
            if addr.startswith("unix:"):
                if os.path.exists(addr[5:]):
                    return
            else:
                port = "%04X" % int(addr.rsplit(":", 1)[1])
                with open("/proc/net/tcp") as f:
                    for l in f.readlines()[1:]:
                        w = l.split()
                        if w[1] == "0100007F:" + port and w[3] == "0A":
                            return
            self.assertIsNone(proc.poll(), "it ended")
            self.assertLess(time.time(), deadline, "nobody listens at " + addr)
            time.sleep(0.02)

    def real_serve_case(self, addr):
        env = {"LD_PRELOAD": AGENT, "TRACEAGENT_OUTPUT": addr, "PHASE_MS": "150"}
        top = subprocess.Popen([TRACEAGENT, "top", "--batch", "--interval", "0.1",
                                "--serve=" + addr],
                               env=tahelp.clean_env(), cwd=self.dir, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: top.poll() is None and top.kill())
        # The program starts once top listens, seen without connecting
        # (top takes the first connection as its client).
        self.wait_listening(addr, top)
        prog = subprocess.run([self.phases()], env=tahelp.clean_env(env), cwd=self.dir,
                              capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(prog.returncode, 0, prog.stderr)
        self.assertEqual(prog.stderr, "")
        out, err = top.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(top.returncode, 0, err)
        snaps = parse_batch(out)
        self.assertEqual(snaps[-1]["ended"], ["complete"])
        self.assert_final(snaps, own_counts(prog.stdout))


    def test_serve_real_agent_unix(self):
        self.real_serve_case("unix:" + self.path("real.sock"))

    def test_serve_real_agent_tcp(self):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        self.real_serve_case("tcp://127.0.0.1:%d" % port)

    def test_follow_what_serve_writes(self):
        # serve writes the stream of a running program; top follows the
        # dump as it grows, to its END, with the program's own counts.
        from test_serve import Serve
        srv = Serve(self)
        env = tahelp.clean_env({"LD_PRELOAD": AGENT, "TRACEAGENT_OUTPUT": srv.addr,
                                "PHASE_MS": "400"})
        prog = subprocess.Popen([self.phases("O0")], env=env, cwd=self.dir,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: prog.poll() is None and prog.kill())
        deadline = time.time() + 30
        while not os.listdir(srv.dir):
            self.assertLess(time.time(), deadline, "serve wrote no dump")
            time.sleep(0.01)
        dump = os.path.join(srv.dir, os.listdir(srv.dir)[0])
        top = subprocess.Popen([TRACEAGENT, "top", "--batch", "--interval", "0.25", "-n", "200",
                                dump],
                               env=tahelp.clean_env(), cwd=self.dir, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        out, perr = prog.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual((prog.returncode, perr), (0, ""))
        tout, terr = top.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(top.returncode, 0, terr)
        snaps = parse_batch(tout)
        self.assertLess(snaps[0]["events"], snaps[-1]["events"])
        self.assertEqual(snaps[-1]["ended"], ["complete"])
        self.assert_final(snaps, own_counts(out))
        srv.wait_lines(1)
        self.assertTrue(srv.lines()[0].endswith(", complete, " + dump), srv.lines())


if __name__ == "__main__":
    tahelp.main()
