# SPDX-License-Identifier: MIT
"""A recursion 100,000 levels deep (tests/programs/deep.c): every view
finishes and its output stays linear in the events.  A function calling
itself more than 64 levels deep is one "NAME [xN]" in the call paths
(graph, folded, flame, pprof, info's open calls); replay's indentation
stops at 64 levels and the line says its depth."""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import zlib

import tahelp

DEPTH = 100000
# Bytes of output a view may write per event of the dump: a line or an
# object per call is far below it, a line per call as long as the stack
# far above (quadratic: gigabytes).
PER_EVENT = 200
# The program's calls: main; run, then DEPTH nested down(), each calling
# step(), the deepest leaf().
RUN = "down [x%d]" % DEPTH


def bounded_run(argv, limit):
    """Runs argv, reading its standard output up to limit bytes: past
    that the view is killed (no disk fills, no wait for gigabytes) and
    None is returned.  Else (status, output bytes, stderr)."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=tahelp.clean_env())
        out = bytearray()
        try:
            while True:
                b = tahelp.bounded(lambda: p.stdout.read1(1 << 20), "output of %s" % argv)
                if not b:
                    break
                out += b
                if len(out) > limit:
                    p.kill()
                    return None
            p.wait(timeout=tahelp.TIMEOUT)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
        err.seek(0)
        return p.returncode, bytes(out), err.read().decode(errors="replace")


class DeepTest(tahelp.Case):

    dump = None

    @classmethod
    def setUpClass(cls):
        """Records the recursion once for every test of the class."""
        cls.workdir = tempfile.mkdtemp(prefix="e2e-deep-", dir=tahelp.WORKDIR)
        prog = os.path.join(tahelp.PROGRAMS, "deep")
        if not os.path.exists(prog):
            return
        cls.dump = os.path.join(cls.workdir, "deep.trace")
        cls.record = subprocess.run(
            [prog, str(DEPTH)], capture_output=True, text=True, timeout=tahelp.TIMEOUT,
            env=tahelp.clean_env({"LD_PRELOAD": tahelp.AGENT, "TRACEAGENT_OUTPUT": cls.dump}))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def setUp(self):
        super().setUp()
        if self.dump is None:
            self.skipTest("deep was not built")
        self.assertEqual((self.record.returncode, self.record.stdout, self.record.stderr),
                         (0, "depth %d\n" % DEPTH, ""))
        self.events = self.info(self.dump)["events"]
        # enter and exit of main, run, leaf and of each down() and step()
        self.assertGreaterEqual(self.events, 4 * DEPTH + 6)

    def view(self, *args, after=()):
        """The output of `traceagent ARGS DUMP AFTER`, which must succeed
        within the bound."""
        argv = [tahelp.TRACEAGENT] + list(args) + [self.dump] + list(after)
        limit = PER_EVENT * self.events
        r = bounded_run(argv, limit)
        self.assertIsNotNone(r, "%s wrote more than %d bytes (%d events)"
                             % (" ".join(args), limit, self.events))
        status, out, err = r
        self.assertEqual(status, 0, "%s: %s" % (" ".join(args), err))
        return out

    def text(self, *args, after=()):
        return self.view(*args, after=after).decode()

    def assert_has(self, part, out, what):
        """part is in out, a view's output too long for a message."""
        self.assertTrue(part in out, "%r not in the output of %s" % (part, what))

    def test_report(self):
        rep = json.loads(self.text("report", "--json"))
        self.assert_whole(rep)
        self.assert_calls(self.functions(rep),
                          {"main": 1, "run": 1, "down": DEPTH, "step": DEPTH, "leaf": 1})
        self.assertIn("down", self.text("report"))

    def test_graph(self):
        out = self.text("graph")
        rows = [line for line in out.splitlines() if RUN in line]
        self.assertEqual(len(rows), 1, out)
        self.assertEqual(rows[0].split()[0], str(DEPTH))
        # what the run's calls called, merged under it
        self.assertRegex(out, r"\n +%d .* {6}step\n" % DEPTH)
        self.assertRegex(out, r"\n +1 .* {6}leaf\n")

    def test_graph_json(self):
        g = json.loads(self.text("graph", "--json"))
        (run,) = [n for n in g["tree"] if n["name"] == "run"]
        (down,) = [n for n in run["children"] if n["name"] != "[traceagent wait]"]
        self.assertEqual((down["name"], down["repeat"], down["calls"], down["open"]),
                         (RUN, DEPTH, DEPTH, 0))
        self.assertLessEqual(down["total_ns"], run["total_ns"])
        kids = {c["name"]: c for c in down["children"]}
        self.assertEqual((kids["step"]["calls"], kids["leaf"]["calls"]), (DEPTH, 1))
        self.assertNotIn("repeat", kids["step"])
        self.assertLessEqual(down["self_ns"], down["total_ns"])
        self.assertLessEqual(kids["step"]["total_ns"], down["total_ns"])

    def test_graph_function(self):
        out = self.text("graph", after=["down"])
        self.assertIn("down: %d calls" % DEPTH, out)
        self.assertIn("  run > %s\n" % RUN, out)
        self.assertRegex(out, r"\n +%d .* {4}step\n" % DEPTH)

    def test_folded(self):
        lines = self.text("export", "--format=folded", "--by=calls", "-o", "-").splitlines()
        stacks = dict(line.rsplit(" ", 1) for line in lines)
        # The agent's own waits may come anywhere: not the program's.
        stacks = {k: int(v) for k, v in stacks.items() if "[traceagent wait]" not in k}
        self.assertEqual(stacks, {"main": 1, "run": 1, "run;" + RUN: DEPTH,
                                  "run;%s;step" % RUN: DEPTH, "run;%s;leaf" % RUN: 1})
        self.assert_has("run;%s;step " % RUN,
                        self.text("export", "--format=folded", "--threads", "-o", "-"),
                        "folded --threads")

    def test_flame(self):
        self.assert_has(RUN, self.text("flame", "-o", "-"), "flame")

    def test_pprof(self):
        # Bounded once uncompressed too.
        limit = PER_EVENT * self.events
        z = zlib.decompressobj(wbits=31)
        prof = z.decompress(self.view("export", "--format=pprof", "-o", "-"), limit)
        self.assertFalse(z.unconsumed_tail, "the profile is more than %d bytes" % limit)
        self.assert_has(RUN.encode(), prof, "pprof")

    def test_replay(self):
        out = self.text("replay")
        # the tid, 2 spaces, 64 levels of 2
        for line in (r"\n[^\n]* \d+ {130}\[depth %d\] leaf\(\);\n" % (DEPTH + 1),
                     r"\n +\d+ {130}\[depth 65\] down\(\) \{\n",
                     r"\n +\d+ {130}down\(\) \{\n"):  # depth 64: no number
            self.assertTrue(re.search(line, out), "no line %r in the replay" % line)
        self.assertLessEqual(max(len(line) for line in out.splitlines()), 200)
        last = json.loads(self.text("replay", "--json").splitlines()[-1])
        self.assertEqual(last["name"], "main")

    def test_exports(self):
        for fmt in ("chrome", "perfetto"):
            with self.subTest(fmt=fmt):
                self.assertTrue(self.view("export", "--format=" + fmt, "-o", "-"))

    def test_info(self):
        self.assertIn("events:", self.text("info"))
        self.assertEqual(json.loads(self.text("info", "--json"))["events"], self.events)


class MutualTest(tahelp.Case):
    """ping() and pong() calling each other 20,000 levels deep: no one
    function's run to collapse; the call paths are cut at 1,000 levels,
    said on stderr and in the output."""

    LEVELS = 20000
    CUT = "[deeper than 1000 levels]"

    def test_cut(self):
        dump = self.fresh("mutual")
        r = self.run_preload([self.prog("deep"), str(self.LEVELS), "mutual"], dump=dump)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        events = self.info(dump)["events"]
        self.assertGreaterEqual(events, 2 * self.LEVELS + 4)
        limit = PER_EVENT * events
        # run, then 999 levels of ping and pong, then the rest in one:
        # LEVELS - 999 calls, and the agent's waits for its flusher among
        # them (calls of their own, deeper than the call they came in)
        funcs = self.functions(self.report(dump), agent=True)
        waits = funcs.get("[traceagent wait]", {"calls": 0})["calls"]
        cut = range(self.LEVELS - 999, self.LEVELS - 999 + waits + 1)
        warning = re.compile(r"traceagent: %s: warning: call paths deeper than 1000 levels "
                             r"are cut there: (\d+) deeper paths are one \"%s\"\n\Z"
                             % (re.escape(dump), re.escape(self.CUT)))
        for args in (["graph"], ["graph", "--json"], ["export", "--format=folded", "-o", "-"],
                     ["flame", "-o", "-"]):
            with self.subTest(view=args[0]):
                r = bounded_run([tahelp.TRACEAGENT] + args + [dump], limit)
                self.assertIsNotNone(r, "%s wrote more than %d bytes" % (args, limit))
                status, out, err = r
                self.assertEqual(status, 0, err)
                m = warning.match(err)
                self.assertTrue(m, err)
                self.assertIn(int(m.group(1)), cut)
                self.assertTrue(self.CUT.encode() in out, "no %s in %s" % (self.CUT, args))
        r = bounded_run([tahelp.TRACEAGENT, "export", "--format=folded", "--by=calls", "-o",
                         "-", dump], limit)
        self.assertIsNotNone(r)
        out = r[1]
        (line,) = [x for x in out.decode().splitlines() if self.CUT in x]
        frames = line.rsplit(" ", 1)[0].split(";")
        self.assertEqual(frames, ["run"] + ["ping", "pong"] * 499 + ["ping", self.CUT])
        self.assertIn(int(line.rsplit(" ", 1)[1]), cut)


class OverflowTest(tahelp.Case):
    """A stack overflow: info's open calls of the crashed thread are one
    short line, the recursion one entry."""

    def test_info_after_overflow(self):
        prog = self.prog("crash-O0")
        dump = self.fresh("overflow")
        env = {"LD_PRELOAD": tahelp.AGENT, "TRACEAGENT_OUTPUT": dump}
        p = subprocess.run([prog, "overflow"], env=tahelp.clean_env(env), capture_output=True,
                           timeout=tahelp.TIMEOUT, preexec_fn=tahelp.no_core)
        self.assertEqual(p.returncode, -signal.SIGSEGV)
        depth = self.functions(self.report(dump))["recurse"]["open"]
        self.assertGreater(depth, 64)
        out = subprocess.run([tahelp.TRACEAGENT, "info", dump], env=tahelp.clean_env(),
                             capture_output=True, text=True, timeout=tahelp.TIMEOUT).stdout
        (line,) = [x for x in out.splitlines() if "(crashed):" in x]
        self.assertLess(len(line), 200, line[:400])
        self.assertRegex(line, r"^    thread \d+ \(crashed\): main \(crash-O0\) > deeper "
                         r"\(crash-O0\) > fault \(crash-O0\) > recurse \(crash-O0\) \[x%d\]$"
                         % depth)
        folded = subprocess.run([tahelp.TRACEAGENT, "export", "--format=folded", "--by=calls",
                                 "-o", "-", dump], env=tahelp.clean_env(), capture_output=True,
                                text=True, timeout=tahelp.TIMEOUT).stdout
        self.assertIn("main;deeper;fault;recurse [x%d] %d\n" % (depth, depth), folded)


if __name__ == "__main__":
    tahelp.main()
