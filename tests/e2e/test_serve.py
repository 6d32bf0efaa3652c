#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Streaming to a collector (TRACEAGENT_OUTPUT=tcp://, unix:) and
`traceagent serve`: many traced programs at once, each connection a whole
dump; the programs unaffected when serve dies; hostile clients cut off
with serve unaffected and its memory bounded; a collector down at start."""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tahelp  # noqa: E402
from tahelp import TRACEAGENT, AGENT, TIMEOUT, clean_env, fib_calls, no_core  # noqa: E402

LINE = re.compile(r"^traceagent serve: (\S+) (\S+) pid (\d+): (\d+) events, (\d+) threads?, "
                  r"(\d+) bytes, (complete|incomplete \(.*\)), (.*)$")


class Serve:
    """A serve in the background; its log lines on stdout."""

    def __init__(self, case, *options, listen="127.0.0.1:0"):
        self.dir = case.path("dumps-%d" % len(os.listdir(case.dir)))
        os.mkdir(self.dir)
        # Appending: serve shares the file's offset with this object, which
        # seeks to read; O_APPEND puts serve's lines at the end whatever it is.
        self.log = open(self.dir + ".log", "a+")
        self.proc = subprocess.Popen(
            [TRACEAGENT, "serve", "--listen", listen, "--dir", self.dir] + list(options),
            stdout=self.log, stderr=subprocess.PIPE, text=True, env=clean_env())
        first = tahelp.readline(self.proc.stderr)
        m = re.match(r"traceagent serve: listening on (\S+), dumps in ", first)
        case.assertTrue(m, first)
        self.addr = m.group(1)
        case.addCleanup(self.kill)

    def lines(self):
        self.log.seek(0)
        return [l.rstrip("\n") for l in self.log.readlines()]

    def wait_lines(self, n, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            got = self.lines()
            if len(got) >= n:
                return got
            time.sleep(0.05)
        raise AssertionError("serve said %d lines, not %d:\n%s" %
                             (len(self.lines()), n, "\n".join(self.lines())))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=TIMEOUT)
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=tahelp.TIMEOUT)
        self.proc.stderr.close()
        self.log.close()

    def vm_hwm_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for l in f:
                if l.startswith("VmHWM:"):
                    return int(l.split()[1])
        return 0


def parse(line):
    m = LINE.match(line)
    if not m:
        raise AssertionError("not a connection line: %r" % line)
    return {"peer": m.group(1), "prog": m.group(2), "pid": int(m.group(3)),
            "events": int(m.group(4)), "threads": int(m.group(5)), "bytes": int(m.group(6)),
            "status": m.group(7), "file": m.group(8)}


class ServeTest(tahelp.Case):

    def programs(self):
        """8 programs: threads, forks, an exec (argv lists)."""
        p = self.prog
        return [[p("fib-O0"), "18"], [p("fib-O2"), "16"], [p("threads-O0")],
                [p("threads-O2")], [p("fork-O0")], [p("fork-O2")],
                [p("exec-O0"), p("fib-O2"), "12"], [p("nest-O0")]]

    def start_all(self, progs, output, extra=None):
        env = {"LD_PRELOAD": AGENT, "TRACEAGENT_OUTPUT": output}
        env.update(extra or {})
        return [subprocess.Popen(a, env=clean_env(env), cwd=self.dir, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, preexec_fn=no_core)
                for a in progs]

    def calls(self, dumps):
        """name -> calls summed over the dumps (each must be whole)."""
        total = {}
        for d in dumps:
            rep = self.report(d)
            # Not assert_whole: exec's main stays open where its image ends.
            self.assertEqual((rep["complete"], rep["lost"], rep["errors"]), (True, 0, []), d)
            for f in rep["functions"]:
                total[f["name"]] = total.get(f["name"], 0) + f["calls"]
        return total

    def test_eight_at_once(self):
        progs = self.programs()
        serve = Serve(self)
        procs = self.start_all(progs, serve.addr)
        outs = [p.communicate(timeout=TIMEOUT) + (p.returncode,) for p in procs]
        # Each fork and exec program is two connections.
        lines = [parse(l) for l in serve.wait_lines(11)]
        self.assertEqual(serve.stop(), 0)
        self.assertEqual(len(serve.lines()), 11, serve.lines())
        for (out, err, status), argv in zip(outs, progs):
            self.assertEqual(status, 0, (argv, err))
            self.assertEqual(err, "", argv)
        for l in lines:
            self.assertEqual(l["status"], "complete", l)
            self.assertTrue(os.path.isfile(l["file"]), l)
            self.assertEqual(os.path.getsize(l["file"]), l["bytes"], l)
            rep = self.report(l["file"])
            self.assertEqual((rep["complete"], rep["lost"], rep["errors"], rep["processes"]),
                             (True, 0, [], 1), l)
            self.assertEqual(rep["events"], l["events"], l)
        names = sorted(l["prog"] for l in lines)
        self.assertEqual(names, sorted(["fib-O0", "fib-O2", "fib-O2", "threads-O0",
                                        "threads-O2", "fork-O0", "fork-O0", "fork-O2",
                                        "fork-O2", "exec-O0", "nest-O0"]))
        # Every count as the same programs' file dumps give.
        files = []
        for argv in progs:
            r = self.run_preload(argv)
            self.assertEqual(r.returncode, 0, r.stderr)
            files.append(r.dump)
        self.assertEqual(self.calls([l["file"] for l in lines]), self.calls(files))
        self.assertEqual(self.calls([l["file"] for l in lines if l["prog"] == "fib-O0"]),
                         {"main": 1, "fib": fib_calls(18)})

    def test_exec_end_is_last(self):
        """An exec's END is the last chunk of its image's stream, though
        another thread records on until the exec ends it: the exec held
        300 ms in the kernel (strace's delay), with the flusher passing
        every 10 ms, the collector still gets a whole dump of each image."""
        strace = shutil.which("strace")
        self.assertIsNotNone(strace, "strace is needed (scripts/test installs it)")
        serve = Serve(self)
        # The agent for the program only (-E), not for strace itself.
        env = {"LD_PRELOAD": AGENT, "TRACEAGENT_OUTPUT": serve.addr, "TRACEAGENT_FLUSH_MS": "10"}
        argv = [self.prog("execbusy-O2"), self.prog("fib-O2"), "12"]
        p = subprocess.run([strace, "-o", os.devnull, "-f", "-qq", "-e", "trace=execve",
                            "-e", "inject=execve:delay_enter=300000"] +
                           ["-E%s=%s" % kv for kv in sorted(env.items())] + argv,
                           env=clean_env(), cwd=self.dir, capture_output=True, text=True,
                           timeout=TIMEOUT, preexec_fn=no_core)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "fib(12) = 144\n", ""))
        lines = [parse(l) for l in serve.wait_lines(2)]
        self.assertEqual(serve.stop(), 0)
        self.assertEqual(sorted(l["prog"] for l in lines), ["execbusy-O2", "fib-O2"])
        for l in lines:
            self.assertEqual(l["status"], "complete", l)
            rep = self.report(l["file"])
            self.assertEqual((rep["complete"], rep["lost"], rep["errors"]), (True, 0, []), l)
            self.assertEqual(rep["events"], l["events"], l)
            chunks = tahelp.read_chunks(l["file"])
            self.assertEqual(chunks[-1]["type"], tahelp.CHUNK_END, l)

    def test_serve_killed(self):
        progs = [[self.prog("fib-O0"), "27"], [self.prog("fib-O2"), "27"]] + self.programs()[2:]
        plain = [self.run_plain(a) for a in progs]
        serve = Serve(self)
        procs = self.start_all(progs, serve.addr)
        time.sleep(0.3)
        serve.proc.kill()
        serve.proc.wait(timeout=tahelp.TIMEOUT)
        for p, argv, want in zip(procs, progs, plain):
            out, err, status = p.communicate(timeout=TIMEOUT) + (None,)
            self.assertEqual((out, p.returncode), (want.stdout, want.returncode), argv)
            agent = [l for l in err.splitlines() if l.startswith("traceagent: ")]
            self.assertEqual([l for l in err.splitlines() if l not in agent], [], argv)
            # One line per process at most: a fork is two.
            self.assertLessEqual(len(agent), 2, (argv, err))

    def test_client_killed(self):
        serve = Serve(self)
        p = self.start_all([[self.prog("fib-O0"), "34"]], serve.addr)[0]
        end = time.time() + 30
        dumps = []
        while time.time() < end:
            dumps = os.listdir(serve.dir)
            if dumps and os.path.getsize(os.path.join(serve.dir, dumps[0])) > 200000:
                break
            time.sleep(0.05)
        p.kill()
        p.communicate()
        l = parse(serve.wait_lines(1)[0])
        self.assertEqual(serve.stop(), 0)
        self.assertTrue(l["status"].startswith("incomplete"), l)
        self.assertEqual(os.path.getsize(l["file"]), l["bytes"])
        r = self.report_raw(l["file"], "--json")
        rep = json.loads(r.stdout)
        self.assertFalse(rep["complete"])
        self.assertEqual(rep["events"], l["events"], (l, r.stderr))
        self.assertGreater(l["events"], 10000)

    def test_hostile_clients(self):
        serve = Serve(self, "--quota", "64K", "--timeout", "1", "--max-clients", "8")
        host, port = serve.addr[len("tcp://"):].rsplit(":", 1)
        # A quiet program holding its connection is kept throughout.
        good = self.start_all([[self.prog("fib-O0"), "15"]], serve.addr)[0]
        # Garbage.
        g = socket.create_connection((host, int(port)))
        g.sendall(b"GET / HTTP/1.0\r\n\r\n" * 10)
        # Stalled in the middle of the file header.
        s = socket.create_connection((host, int(port)))
        s.sendall(b"TRACEAG")
        # Oversized: fib(25) streams more than 64 KiB.
        big = self.start_all([[self.prog("fib-O0"), "25"]], serve.addr)[0]
        out, err = big.communicate(timeout=TIMEOUT)
        self.assertEqual((out, big.returncode), ("fib(25) = 75025\n", 0))
        self.assertLessEqual(len(err.splitlines()), 1, err)
        good.communicate(timeout=TIMEOUT)
        lines = serve.wait_lines(4)
        g.close()
        s.close()
        text = "\n".join(lines)
        self.assertIn("no dump written", text)
        self.assertRegex(text, r"not a dump stream at byte \d+: not a traceagent dump")
        self.assertIn("stalled: nothing for 1 s before its first chunk", text)
        over = [parse(l) for l in lines if "quota" in l]
        self.assertEqual(len(over), 1, text)
        self.assertLessEqual(over[0]["bytes"], 65536)
        self.assertEqual(os.path.getsize(over[0]["file"]), over[0]["bytes"])
        self.assertFalse(json.loads(self.report_raw(over[0]["file"], "--json").stdout)["complete"])
        ok = [parse(l) for l in lines if "complete," in l]
        self.assertEqual(len(ok), 1, text)
        self.assert_calls(self.functions(self.report(ok[0]["file"])),
                          {"main": 1, "fib": fib_calls(15)})
        # Many garbage clients (valid-looking headers claiming big chunks
        # too): serve's memory stays bounded.
        junk = os.urandom(200000)
        hdr = open(ok[0]["file"], "rb").read(32 + 32 + 1000)
        # In batches under --max-clients, each batch's lines awaited: on a
        # loaded machine serve may not have closed the last ones yet, and
        # a connection over the limit is refused on stderr, not logged.
        for b in range(50):
            for i in range(4):
                c = socket.create_connection((host, int(port)))
                try:
                    c.sendall(hdr if i % 2 else junk)
                except OSError:
                    pass
                c.close()
            serve.wait_lines(4 + 4 * (b + 1))
        self.assertLess(serve.vm_hwm_kib(), 64 * 1024)
        self.assertEqual(serve.proc.poll(), None)
        self.assertEqual(serve.stop(), 0)

    def test_quota_counts_what_is_kept(self):
        """The line counts what the saved dump holds: a chunk that arrives
        past --quota is cut off the dump and is not counted (an EVENTS
        chunk's events, a THREAD_START's thread, an END's totals)."""
        r = self.run_preload([self.prog("threads-O0")])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(r.dump, "rb") as f:
            data = f.read()
        chunks = []  # (type, offset of its end)
        off = struct.unpack_from("<I", data, 12)[0]
        while off < len(data):
            ctype, stored = struct.unpack_from("<HxxI", data, off + 4)
            off += 32 + stored
            chunks.append((ctype, off))
        self.assertEqual(off, len(data))
        EVENTS, THREAD_START, END = 7, 4, 8
        for kind in (EVENTS, THREAD_START, END):
            # The quota ends one byte into the last chunk of the kind: the
            # dump keeps the chunks before it.
            end = [e for t, e in chunks[1:] if t == kind][-1]
            keep = max(e for _, e in chunks if e < end)
            serve = Serve(self, "--quota", str(end - 1))
            host, port = serve.addr[len("tcp://"):].rsplit(":", 1)
            with socket.create_connection((host, int(port))) as c:
                try:
                    c.sendall(data)
                except OSError:
                    pass  # cut off while sending
            l = parse(serve.wait_lines(1)[0])
            self.assertEqual(serve.stop(), 0)
            self.assertIn("over the quota", l["status"], l)
            with open(l["file"], "rb") as f:
                saved = f.read()
            # The chunks kept, then serve's CUT chunk (type 18) alone.
            self.assertEqual(saved[:keep], data[:keep])
            self.assertEqual(l["bytes"], len(saved), l)
            ctype, stored = struct.unpack_from("<HxxI", saved, keep + 4)
            self.assertEqual((ctype, keep + 32 + stored), (18, len(saved)))
            p = self.report_raw(l["file"], "--json")
            rep = json.loads(p.stdout)
            self.assertFalse(rep["complete"])
            self.assertEqual((l["events"], l["threads"]), (rep["events"], rep["threads"]),
                             (kind, l, p.stderr))

    def slow_collector(self, path, dump):
        """A collector on unix:path that reads 8 KiB every 5 ms (1.6 MB/s)
        into dump; returns the thread (joined when the sender closes)."""
        import threading
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)

        def run():
            conn, _ = srv.accept()
            with conn, open(dump, "wb") as out:
                while True:
                    b = conn.recv(8192)
                    if not b:
                        break
                    out.write(b)
                    time.sleep(0.005)
            srv.close()
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def test_slow_collector(self):
        """A collector slower than the program: lossless waits at the memory
        cap, as with a slow disk (nothing lost, exact counts, the waits in
        the dump); drop mode drops and counts, every event accounted for."""
        n = 29
        events = 2 * (fib_calls(n) + 1)  # fib's and main's enters and exits
        for mode in ("lossless", "drop"):
            with self.subTest(mode=mode):
                sock = self.path("slow-%s.sock" % mode)
                dump = self.path("slow-%s.trace" % mode)
                t = self.slow_collector(sock, dump)
                p = subprocess.run([self.prog("fib-O2"), str(n)], env=clean_env({
                    "LD_PRELOAD": AGENT, "TRACEAGENT_OUTPUT": "unix:" + sock,
                    "TRACEAGENT_MODE": mode, "TRACEAGENT_MEMORY": "1M",
                    "TRACEAGENT_BUFFER": "16K"}), stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
                t.join(TIMEOUT)
                self.assertEqual((p.returncode, p.stderr), (0, ""))
                info = json.loads(subprocess.run([TRACEAGENT, "info", "--json", dump],
                                                 stdout=subprocess.PIPE, check=True,
                                                 text=True).stdout)
                self.assertTrue(info["complete"], info)
                self.assertEqual(info["events"] + info["lost"], events)
                if mode == "lossless":
                    self.assertEqual(info["lost"], 0)
                    waited = sum(th["wait_ns"] for pr in info["processes"]
                                 for th in pr["threads"])
                    self.assertGreater(waited, 0, "no wait at the cap: not a slow collector")
                    self.assert_calls(self.functions(self.report(dump)),
                                      {"fib": fib_calls(n), "main": 1})
                else:
                    self.assertGreater(info["lost"], 0)
                    self.assertEqual(info["lost_by_cause"]["dropped"], info["lost"])

    def test_collector_down(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        addr = "tcp://127.0.0.1:%d" % port
        argv = [self.prog("fib-O0"), "12"]
        plain = self.run_plain(argv)
        r = self.run_preload(argv, dump=addr)
        self.assertEqual((r.stdout, r.returncode), (plain.stdout, plain.returncode))
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)
        self.assertIn("the collector %s: Connection refused; not tracing" % addr, r.stderr)
        self.assertEqual(os.listdir(self.dir), [])
        r = self.run_preload(argv, dump=addr, env={"TRACEAGENT_OUTPUT_FALLBACK": "file"})
        self.assertEqual((r.stdout, r.returncode), (plain.stdout, plain.returncode))
        self.assertEqual(len(r.stderr_lines()), 1, r.stderr)
        m = re.search(r"writing (traceagent\.(\d+)\.trace) instead", r.stderr)
        self.assertTrue(m, r.stderr)
        self.assert_calls(self.functions(self.report(self.path(m.group(1)))),
                          {"main": 1, "fib": fib_calls(12)})

    def test_record_tcp_and_unix(self):
        for listen in ("127.0.0.1:0", "unix:" + self.path("serve.sock")):
            serve = Serve(self, "--once", listen=listen)
            r = self.run_record([self.prog("fib-O2"), "14"], dump=serve.addr)
            self.assertEqual((r.stdout, r.returncode), ("fib(14) = 377\n", 0), r.stderr)
            self.assertEqual(r.stderr, "")
            serve.proc.wait(timeout=TIMEOUT)
            self.assertEqual(serve.proc.returncode, 0)
            l = parse(serve.lines()[0])
            self.assertEqual(l["status"], "complete")
            self.assert_calls(self.functions(self.report(l["file"])),
                              {"main": 1, "fib": fib_calls(14)})
            self.assertEqual(l["events"], 2 * (1 + fib_calls(14)))


if __name__ == "__main__":
    tahelp.main()
