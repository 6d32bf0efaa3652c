#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A collector that lets in only its own (issue 38): serve on an address
other than loopback refuses to start without --token-file; with one, each
client proves it holds the secret (an HMAC of serve's nonce) before a byte
of its dump, and the others are refused, counted and named in one line
each, no dump written; clients without a token still stream to a serve
without one."""

import hashlib
import hmac
import os
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tahelp  # noqa: E402
from tahelp import TRACEAGENT, TIMEOUT, clean_env, fib_calls  # noqa: E402
from test_serve import Serve, parse  # noqa: E402

REFUSED = re.compile(r"^traceagent serve: (\S+) refused \((\d+) refused so far\): (.*)$")


class TokenTest(tahelp.Case):

    def token(self, name, secret):
        path = self.path(name)
        with open(path, "w") as f:
            f.write(secret + "\n")
        os.chmod(path, 0o600)
        return path

    def test_not_loopback_needs_a_token(self):
        for listen in ("0.0.0.0:0", "[::]:0"):
            r = subprocess.run([TRACEAGENT, "serve", "--listen", listen, "--dir", self.dir],
                               capture_output=True, text=True, timeout=TIMEOUT,
                               env=clean_env())
            if "Address family not supported" in r.stderr:
                continue
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertRegex(r.stderr, r"^traceagent serve: tcp://\S+ is not loopback: .*"
                             r"give --token-file FILE")
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        # With a token it listens there.
        serve = Serve(self, "--token-file", self.token("tok", "s3cret"), listen="0.0.0.0:0")
        self.assertTrue(serve.addr.startswith("tcp://0.0.0.0:"), serve.addr)
        self.assertEqual(serve.stop(), 0)
        # A token file that cannot be read: said, exit 2.
        r = subprocess.run([TRACEAGENT, "serve", "--token-file", self.path("none"),
                            "--dir", self.dir], capture_output=True, text=True,
                           timeout=TIMEOUT, env=clean_env())
        self.assertEqual(r.returncode, 2)
        self.assertIn("--token-file %s: No such file or directory" % self.path("none"),
                      r.stderr)

    def test_right_wrong_and_no_token(self):
        tok = self.token("tok", "correct horse")
        bad = self.token("bad", "correct hors")
        serve = Serve(self, "--token-file", tok)
        fib = [self.prog("fib-O2"), "12"]
        # The right secret, by the environment and by record's option.
        r = self.run_preload(fib, dump=serve.addr, env={"TRACEAGENT_TOKEN": tok})
        self.assertEqual((r.stdout, r.stderr, r.returncode), ("fib(12) = 144\n", "", 0))
        r = self.run_record(fib, options=["--token-file", tok], dump=serve.addr)
        self.assertEqual((r.stdout, r.stderr, r.returncode), ("fib(12) = 144\n", "", 0))
        lines = serve.wait_lines(2)
        # A wrong one: the program runs untraced, said in one line.
        r = self.run_preload(fib, dump=serve.addr, env={"TRACEAGENT_TOKEN": bad})
        self.assertEqual((r.stdout, r.returncode), ("fib(12) = 144\n", 0))
        self.assertRegex(r.stderr, r"^traceagent: cannot send the dump of process \d+ to the "
                         r"collector %s: the collector refused TRACEAGENT_TOKEN's secret; "
                         r"not tracing" % re.escape(serve.addr))
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        # None: an agent without TRACEAGENT_TOKEN sends its dump at once.
        r = self.run_preload(fib, dump=serve.addr)
        self.assertEqual((r.stdout, r.returncode), ("fib(12) = 144\n", 0))
        lines = serve.wait_lines(4)
        self.assertEqual(serve.stop(), 0)
        lines = serve.lines()
        self.assertEqual(len(lines), 4, lines)
        for l in lines[:2]:
            c = parse(l)
            self.assertEqual(c["status"], "complete", l)
            self.assert_calls(self.functions(self.report(c["file"])),
                              {"main": 1, "fib": fib_calls(12)})
        m3, m4 = REFUSED.match(lines[2]), REFUSED.match(lines[3])
        self.assertTrue(m3 and m4, lines)
        self.assertEqual((m3.group(2), m3.group(3)), ("1", "wrong token"))
        self.assertEqual(m4.group(2), "2")
        self.assertTrue(m4.group(3).startswith("no token: it sends its dump without the "
                                               "handshake"), m4.group(3))
        self.assertTrue(m3.group(1).startswith("127.0.0.1:"), lines[2])
        # Nothing of the refused written: the two dumps only.
        self.assertEqual(len(os.listdir(serve.dir)), 2, os.listdir(serve.dir))

    def test_forked_child_shakes_hands_too(self):
        """A forked child connects anew and answers its own nonce with the
        secret its parent read."""
        serve = Serve(self, "--token-file", self.token("tok", "fork secret"))
        r = self.run_preload([self.prog("fork-O2")], dump=serve.addr,
                             env={"TRACEAGENT_TOKEN": self.path("tok")})
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        lines = serve.wait_lines(2)
        self.assertEqual(serve.stop(), 0)
        self.assertEqual(len(serve.lines()), 2, serve.lines())
        self.assertEqual([parse(l)["status"] for l in lines], ["complete", "complete"])

    def test_token_to_a_serve_without_one(self):
        serve = Serve(self, "--once")
        r = self.run_record([self.prog("fib-O2"), "10"], dump=serve.addr,
                            options=["--token-file", self.token("tok", "x")])
        self.assertEqual((r.stdout, r.stderr, r.returncode), ("fib(10) = 55\n", "", 0))
        serve.proc.wait(timeout=TIMEOUT)
        self.assertEqual(parse(serve.lines()[0])["status"], "complete")

    def test_record_token_file_unreadable(self):
        r = self.run_record([self.prog("fib-O2"), "10"], dump=self.path("x.trace"),
                            options=["--token-file", self.path("missing")])
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, "traceagent record: --token-file=%s: No such file or "
                         "directory\n" % self.path("missing"))
        empty = self.path("empty")
        open(empty, "w").close()
        r = self.run_record([self.prog("fib-O2"), "10"], dump=self.path("x.trace"),
                            options=["--token-file", empty])
        self.assertEqual((r.returncode, r.stderr),
                         (2, "traceagent record: --token-file=%s: the file is empty\n" % empty))

    def raw(self, addr):
        host, port = addr[len("tcp://"):].rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=TIMEOUT)
        return s

    def recv_exact(self, s, n):
        got = b""
        while len(got) < n:
            b = s.recv(n - len(got))
            if not b:
                break
            got += b
        return got

    def test_hostile_handshakes(self):
        """By hand, as a hostile client would: the nonce differs each time,
        an answer to an old nonce is refused, a half handshake is cut off
        at the timeout, garbage is refused; serve goes on."""
        secret = b"hunter2"
        serve = Serve(self, "--token-file", self.token("tok", "hunter2"), "--timeout", "1")
        s = self.raw(serve.addr)
        s.sendall(b"TAAUTH01")
        msg = self.recv_exact(s, 40)
        self.assertEqual(msg[:8], b"TANONCE1")
        nonce = msg[8:]
        s.sendall(hmac.new(secret, nonce, hashlib.sha256).digest())
        self.assertEqual(self.recv_exact(s, 8), b"TAAUTHOK")
        s.close()
        # A replayed answer: another nonce, refused.
        s = self.raw(serve.addr)
        s.sendall(b"TAAUTH01")
        msg = self.recv_exact(s, 40)
        self.assertNotEqual(msg[8:], nonce)
        s.sendall(hmac.new(secret, nonce, hashlib.sha256).digest())
        self.assertEqual(self.recv_exact(s, 8), b"TAAUTHNO")
        self.assertEqual(s.recv(1), b"")
        s.close()
        # Garbage, and a hello that stops.
        s = self.raw(serve.addr)
        s.sendall(b"\x00" * 100)
        self.assertEqual(self.recv_exact(s, 8), b"TAAUTHNO")
        s.close()
        s = self.raw(serve.addr)
        s.sendall(b"TAAUTH01" + b"\x01" * 5)
        self.assertEqual(self.recv_exact(s, 40)[:8], b"TANONCE1")
        self.assertEqual(s.recv(1), b"")  # cut off at the timeout
        s.close()
        lines = serve.wait_lines(4)
        self.assertEqual(serve.stop(), 0)
        self.assertEqual(len(serve.lines()), 4, serve.lines())
        self.assertRegex(lines[1], r"refused \(1 refused so far\): wrong token$")
        self.assertRegex(lines[2], r"refused \(2 refused so far\): no token")
        self.assertRegex(lines[3], r"stalled: nothing for 1 s before its first chunk\), no dump "
                         r"written$")
        self.assertEqual(os.listdir(serve.dir), [])


if __name__ == "__main__":
    tahelp.main()
