# SPDX-License-Identifier: MIT
"""The agent's own waits (issue 30): a thread that waits for the flusher
(lossless mode at the memory cap) has each wait in its stream (TA_EXT_WAIT),
and every view shows it as a frame of its own, "[traceagent wait]", a
callee of the function that was running, never in that function's self
time.  A synthetic dump with waits at known times checks the views' exact
numbers; a real run whose collector stops reading forces a wait, and
checks that the waits add up to the thread's wait in info, in no leaf."""

import json
import os
import re
import shutil
import socket
import subprocess
import time

import tadump
import tahelp
import test_perfetto
from tadump import ENTER, EXIT, EXT_WAIT

WAIT = "[traceagent wait]"
EXT = 3

# Thread 101, in ns (ticks are ns: CLOCK_MONOTONIC): main calls outer,
# which calls leaf; the agent waits 2000 ns inside leaf and 300 ns in
# outer after leaf returned.
START = 500
EVENTS = [
    (1000, ENTER, "main"),
    (2000, ENTER, "outer"),
    (3000, ENTER, "leaf"),
    (4000, EXT, EXT_WAIT, (4000, 2000)),
    (7000, EXIT),
    (7500, EXT, EXT_WAIT, (7500, 300)),
    (8000, EXIT),
    (10000, EXIT),
]


def synthetic(case, split=False):
    """The dump above (in two EVENTS chunks with split, the second one
    starting at the wait in outer), named with waitleaf's symbols."""
    exe = case.prog("waitleaf-O2")
    syms = tahelp.elf_symbols(exe)
    addr = {n: tadump.BIAS + syms[n] for n in ("main", "outer", "leaf")}
    evs = [(e[0], ENTER, addr[e[2]]) if e[1] == ENTER else e for e in EVENTS]
    d = tadump.Dump()
    d.process(START, exe, [exe])
    d.module(exe, tadump.BIAS, tadump.BIAS, tadump.BIAS + (1 << 30))
    d.thread_start(101, START, "main")
    if split:
        d.events(101, evs[:5])
        d.events(101, evs[5:], [addr["main"], addr["outer"]])
    else:
        d.events(101, evs)
    d.thread_end(101, 10000, 6)
    d.end(10100, 6, 1)
    path = case.path("split.trace" if split else "wait.trace")
    d.write(path)
    return path


WAIT_CALLS = {"x86_64": {"sendmsg": "46", "futex": "202"},
              "aarch64": {"sendmsg": "211", "futex": "98"}}


def sleeping_in(pid, tid, calls):
    """Whether thread tid of pid sleeps in one of the system calls named."""
    nr = WAIT_CALLS.get(os.uname().machine, {})
    try:
        if tahelp.proc_state(pid, tid) != "S":
            return False
        with open("/proc/%d/task/%d/syscall" % (pid, tid)) as f:
            return f.read().split()[0] in [nr.get(c) for c in calls]
    except (OSError, IndexError, StopIteration):
        return False


def stalled(pid, env):
    """Whether the program must wait for the collector: some thread of it
    sleeps in a send (the socket is full: the writer goes on only when the
    collector reads), and either its main thread, which makes no system
    call of its own before its end, sleeps in a send or a lock (helping
    with its own ring: the writer's send, or waiting for the writer), or
    its ring memory is all in use (`ctl status`: only a drain could free
    some, and a drain ends in that send, so the thread is about to wait for
    a block).  Either way it goes on only when the collector reads."""
    try:
        tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
    except OSError:
        return False
    if not any(sleeping_in(pid, t, ("sendmsg",)) for t in tids):
        return False
    if sleeping_in(pid, pid, ("sendmsg", "futex")):
        return True
    p = subprocess.run([tahelp.TRACEAGENT, "ctl", str(pid), "status"], env=env,
                       capture_output=True, text=True, timeout=tahelp.TIMEOUT)
    mem = [l.split()[1].split("/") for l in p.stdout.splitlines() if l.startswith("memory ")]
    return p.returncode == 0 and len(mem) == 1 and mem[0][0] == mem[0][1]


class Wait(tahelp.Case):

    def rows(self, dump, *options):
        rep = self.report(dump, *options)
        return {f["name"]: f for f in rep["functions"]}

    def test_report(self):
        """The waits are a row of their own, with their exact times; leaf's
        and outer's self times leave them out, their totals hold them."""
        for split in (False, True):
            with self.subTest(split=split):
                dump = synthetic(self, split)
                for jobs in ("-j1", "-j2"):
                    rows = self.rows(dump, jobs)
                    w = rows[WAIT]
                    self.assertEqual((w["calls"], w["total_ns"], w["self_ns"], w["min_ns"],
                                      w["max_ns"], w["module"]),
                                     (2, 2300, 2300, 300, 2000, "[traceagent]"))
                    self.assertEqual((rows["leaf"]["total_ns"], rows["leaf"]["self_ns"],
                                      rows["leaf"]["max_ns"]), (4000, 2000, 4000))
                    self.assertEqual((rows["outer"]["total_ns"], rows["outer"]["self_ns"]),
                                     (6000, 1700))
                    self.assertEqual((rows["main"]["total_ns"], rows["main"]["self_ns"]),
                                     (9000, 3000))
        text = tadump.view(self, "report", synthetic(self)).stdout
        line = next(l for l in text.splitlines() if l.rstrip().endswith(WAIT + "  [traceagent]"))
        self.assertEqual(line.split()[:3], ["2", "2.300", "us"])

    def test_graph(self):
        """The waits are callees of the frame on top when they happened."""
        for split, jobs in ((False, "-j1"), (True, "-j1"), (True, "-j2")):
            with self.subTest(split=split, jobs=jobs):
                g = tadump.view_json(self, "graph", "--json", jobs, synthetic(self, split))
                main, = g["tree"]
                outer, = main["children"]
                self.assertEqual([(c["name"], c["calls"], c["total_ns"], c["self_ns"])
                                  for c in outer["children"]],
                                 [("leaf", 1, 4000, 2000), (WAIT, 1, 300, 300)])
                leaf = outer["children"][0]
                self.assertEqual([(c["name"], c["calls"], c["total_ns"], c["self_ns"],
                                   c["children"]) for c in leaf["children"]],
                                 [(WAIT, 1, 2000, 2000, [])])

    def test_graph_of_the_waits(self):
        """graph "[traceagent wait]": the paths where the thread waited (a
        name given whole matches itself, brackets and all)."""
        out = tadump.view(self, "graph", synthetic(self), WAIT).stdout
        self.assertIn("         1     2.000 us     2.000 us  main > outer > leaf > %s\n" % WAIT,
                      out)
        self.assertIn("         1       300 ns       300 ns  main > outer > %s\n" % WAIT, out)

    def test_replay(self):
        lines = tadump.view(self, "replay", synthetic(self)).stdout.splitlines()
        body = [l for l in lines if " 101 " in l]
        self.assertEqual(body, [
            "                  101  main() {",
            "                  101    outer() {",
            "                  101      leaf() {",
            "    2.000 us      101        %s();" % WAIT,
            "    4.000 us      101      } /* leaf */",
            "      300 ns      101      %s();" % WAIT,
            "    6.000 us      101    } /* outer */",
            "    9.000 us      101  } /* main */",
        ])

    def test_exports(self):
        dump = synthetic(self)
        out = self.path("c.json")
        tadump.view(self, "export", "--format=chrome", "-o", out, dump)
        with open(out) as f:
            evs = json.load(f)
        evs = evs["traceEvents"] if isinstance(evs, dict) else evs
        waits = sorted((e["ts"], e["dur"], e["cat"]) for e in evs
                       if e.get("ph") == "X" and e.get("name") == WAIT)
        # From the process's start (500 ns), in us.
        self.assertEqual(waits, [(3.5, 2.0, "traceagent"), (7.0, 0.3, "traceagent")])
        svg = self.path("f.svg")
        tadump.view(self, "flame", "-o", svg, dump)
        with open(svg) as f:
            titles = re.findall(r"<title>([^\n<]*)\n([^\n<]*)\ntotal ([^<]*)</title>"
                                r"<rect [^>]*fill=\"([^\"]*)\"", f.read())
        self.assertEqual(sorted(t for t in titles if t[0] == WAIT),
                         [(WAIT, "[traceagent]", "2.000 us (22.22%), self 2.000 us, 1 call",
                           "rgb(160,160,160)"),
                          (WAIT, "[traceagent]", "300 ns (3.33%), self 300 ns, 1 call",
                           "rgb(160,160,160)")])
        folded = tadump.view(self, "export", "--format=folded", "-o", "-", dump).stdout
        self.assertEqual(sorted(folded.split("\n")[:-1]),
                         ["main 3000", "main;outer 1700", "main;outer;[traceagent wait] 300",
                          "main;outer;leaf 2000", "main;outer;leaf;[traceagent wait] 2000"])

    def test_perfetto(self):
        if not shutil.which("protoc"):
            self.skipTest("protoc not installed (Debian: protobuf-compiler)")
        tr = test_perfetto.PerfettoTest.export(self, synthetic(self))
        self.assertEqual(sorted((s["name"], s["parent"], s["depth"], s["end"] - s["start"],
                                 s["cat"]) for s in tr.slices),
                         [(WAIT, "leaf", 3, 2000, ["traceagent"]),
                          (WAIT, "outer", 2, 300, ["traceagent"]),
                          ("leaf", "outer", 2, 4000, ["function,waitleaf-O2"]),
                          ("main", None, 0, 9000, ["function,waitleaf-O2"]),
                          ("outer", "main", 1, 6000, ["function,waitleaf-O2"])])

    def test_hostile(self):
        """A WAIT without its length is skipped; one of any length ends
        within the clock's range; every view still reads the dump."""
        exe = self.prog("waitleaf-O2")
        main = tadump.BIAS + tahelp.elf_symbols(exe)["main"]
        d = tadump.Dump()
        d.process(START, exe, [exe])
        d.module(exe, tadump.BIAS, tadump.BIAS, tadump.BIAS + (1 << 30))
        d.thread_start(101, START, "main")
        d.events(101, [(1000, ENTER, main), (1500, EXT, EXT_WAIT, (1500,)),
                       (1600, EXT, EXT_WAIT, (1600, (1 << 64) - 1)),
                       (1700, EXT, EXT_WAIT, ()), (2000, EXIT)])
        d.thread_end(101, 2000, 2)
        d.end(2100, 2, 1)
        dump = self.path("hostile.trace")
        d.write(dump)
        rows = self.rows(dump)
        self.assertEqual((rows[WAIT]["calls"], rows["main"]["calls"]), (1, 1))
        for view in (["graph"], ["replay"], ["flame", "-o", self.path("f.svg")],
                     ["export", "--format=chrome", "-o", self.path("c.json")],
                     ["export", "--format=pprof", "-o", self.path("p.pb.gz")],
                     ["top", "--batch"]):
            with self.subTest(view=view[0]):
                p = subprocess.run([tahelp.TRACEAGENT] + view + [dump], env=tahelp.clean_env(),
                                   capture_output=True, text=True, timeout=tahelp.TIMEOUT)
                self.assertEqual(p.returncode, 0, p.stderr)

    def test_top(self):
        """top's rows: the waits' self time is theirs, not leaf's."""
        p = subprocess.run([tahelp.TRACEAGENT, "top", "--batch", synthetic(self)],
                           env=tahelp.clean_env(), capture_output=True, text=True,
                           timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        first = p.stdout.split("\n\n")[0].splitlines()
        rows = {l.split()[-1]: l.split() for l in first[3:] if not l.startswith("thread ")}
        rows[WAIT] = next(l.split() for l in first if l.endswith(WAIT))
        self.assertEqual(rows[WAIT][1:3], ["2", "2300"])
        self.assertEqual(rows["leaf"][1:3], ["1", "2000"])
        self.assertEqual(rows["outer"][1:3], ["1", "1700"])

    def stalling_collector(self):
        """waitleaf (3M calls) streaming to a collector on a socket of the
        scratch directory that accepts and never reads (1 MiB of rings, 4 KiB
        blocks): the socket's path, the process and the connection."""
        self.skip_if_emulated("the thread's system call is read from /proc, qemu's own")
        sock = self.path("collector.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(srv.close)
        srv.bind(sock)
        srv.listen(1)
        srv.settimeout(tahelp.TIMEOUT)
        env = {"LD_PRELOAD": tahelp.AGENT, "TRACEAGENT_OUTPUT": "unix:" + sock,
               "TRACEAGENT_MEMORY": "1M", "TRACEAGENT_BUFFER": "4K",
               "XDG_RUNTIME_DIR": self.dir}
        proc = subprocess.Popen([self.prog("waitleaf-O2"), "3000000"], env=tahelp.clean_env(env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=self.dir, preexec_fn=tahelp.no_core)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        conn, _ = srv.accept()
        self.addCleanup(conn.close)
        return sock, proc, conn

    def test_ctl_reaches_a_stalled_program(self):
        """A collector that stops reading before the control thread's late
        start (20 ms into the run) holds the flusher in its send: the
        control thread is started then, so `ctl status` answers while the
        program waits (on main it answered only when the send blocked after
        those 20 ms, about half the runs here)."""
        sock, proc, conn = self.stalling_collector()
        deadline = time.monotonic() + tahelp.TIMEOUT
        while not any(sleeping_in(proc.pid, int(t), ("sendmsg",))
                      for t in os.listdir("/proc/%d/task" % proc.pid)):
            self.assertIsNone(proc.poll(), "the program ended before its collector stalled")
            self.assertLess(time.monotonic(), deadline, "the flusher never waited to send")
            time.sleep(0.002)
        p = subprocess.run([tahelp.TRACEAGENT, "ctl", str(proc.pid), "status"],
                           env=tahelp.clean_env({"XDG_RUNTIME_DIR": self.dir}),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertIn("output unix:" + sock, p.stdout.splitlines())
        # The collector reads again: the program ends as it would have.
        conn.settimeout(tahelp.TIMEOUT)
        while conn.recv(1 << 20):
            pass
        out, err = proc.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual((proc.returncode, err), (0, ""))

    def test_forced_wait(self):
        """A collector that does not read: the flusher's sends stop, the
        pool fills and the thread waits until the collector reads again.
        Every wait is in the stream: their sum is the thread's wait in
        info, exactly, and none is in leaf, a function of a few
        instructions."""
        sock, proc, conn = self.stalling_collector()
        deadline = time.monotonic() + tahelp.TIMEOUT
        while not stalled(proc.pid, tahelp.clean_env({"XDG_RUNTIME_DIR": self.dir})):
            if proc.poll() is not None:
                self.fail("the program ended without waiting: %s" % (proc.communicate(),))
            self.assertLess(time.monotonic(), deadline, "the program never waited")
            time.sleep(0.002)
        # At most a throttle (40 naps) and the rest of its block before
        # the wait that lasts until the collector reads.
        time.sleep(1.5)
        data = bytearray()
        conn.settimeout(tahelp.TIMEOUT)
        while True:
            b = conn.recv(1 << 20)
            if not b:
                break
            data += b
        out, err = proc.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual((proc.returncode, err), (0, ""))
        dump = self.path("forced.trace")
        with open(dump, "wb") as f:
            f.write(data)
        info = self.info(dump)
        self.assertTrue(info["complete"], info)
        thread, = info["processes"][0]["threads"]
        rep = self.report(dump)
        self.assert_whole(rep)
        rows = {f["name"]: f for f in rep["functions"]}
        self.assertEqual(rows["leaf"]["calls"], 3000000)
        self.assertGreater(thread["wait_ns"], 0)
        self.assertEqual(rows[WAIT]["total_ns"], thread["wait_ns"])
        # The thread was seen stalled, then left to wait 1.5 s.
        self.assertGreaterEqual(rows[WAIT]["max_ns"], 1000 * 1000 * 1000)
        # No wait is charged to leaf: every one is a callee of main or
        # outer (the function on top when the wait began, as stamped).
        g = tadump.view_json(self, "graph", "--json", dump)
        main, = g["tree"]
        outer = next(c for c in main["children"] if c["name"] == "outer")
        leaf = next(c for c in outer["children"] if c["name"] == "leaf")
        self.assertEqual(leaf["children"], [])
        nodes = [c["total_ns"] for n in (main, outer) for c in n["children"]
                 if c["name"] == WAIT]
        # Each node's ticks are rounded to the ns on their own.
        self.assertLessEqual(abs(sum(nodes) - rows[WAIT]["total_ns"]), len(nodes))
        self.assertLess(rows["leaf"]["max_ns"], rows[WAIT]["max_ns"])


if __name__ == "__main__":
    tahelp.main()
