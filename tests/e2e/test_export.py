# SPDX-License-Identifier: MIT
"""export: Chrome Trace Event JSON (one complete event per call, parsed
back and counted against the report; exact events of a synthetic dump and
its filters; the warning for big exports) and folded stacks (exact lines by
calls and by self time, per thread, names made safe)."""

import json
import os

import tahelp
import tadump
from tahelp import LEVELS, MODES

CALLS = {"main": 1, "trunk": 2, "branch": 6, "twig": 2, "leaf": 24, "bud": 10}
PARENT = {"trunk": "main", "branch": "trunk", "twig": "trunk", "leaf": "branch", "bud": "twig"}


def slices(doc):
    return [e for e in doc["traceEvents"] if e["ph"] == "X"]


def ns(us):
    """A µs time of the export back in ns (it has three decimals)."""
    return round(us * 1000)


class ExportTest(tahelp.Case):

    def chrome(self, dump, *options):
        out = self.fresh("chrome") + ".json"
        p = tadump.view(self, "export", "--format=chrome", "-o", out, *options, dump)
        self.assertEqual((p.stdout, p.stderr), ("", ""))
        with open(out) as fh:
            return json.load(fh)

    def folded(self, dump, *options):
        p = tadump.view(self, "export", "--format=folded", "-o", "-", *options, dump)
        self.assertEqual(p.stderr, "")
        return p.stdout.splitlines()

    # -- chrome ----------------------------------------------------------------

    def test_chrome_nest(self):
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    dump = tadump.traced_dump(self, "nest-" + level, mode=mode)
                    doc = self.chrome(dump)
                    self.assertEqual(doc["displayTimeUnit"], "ns")
                    funcs = self.functions(self.report(dump))
                    xs = slices(doc)
                    # Exactly one slice per call.
                    self.assertEqual({n: sum(x["name"] == n for x in xs) for n in funcs},
                                     {n: f["calls"] for n, f in funcs.items()})
                    self.assertEqual(len(xs), sum(CALLS.values()))
                    for x in xs:
                        # The module in the category, no args: viewers such as
                        # speedscope show the args as part of the name.
                        self.assertEqual(x["cat"], "function,nest-" + level)
                        self.assertNotIn("args", x)
                        self.assertGreaterEqual(x["dur"], 0)
                        self.assertGreaterEqual(x["ts"], 0)
                        if x["name"] in PARENT:
                            outer = [o for o in xs if o["name"] == PARENT[x["name"]]
                                     and o["ts"] <= x["ts"]
                                     and x["ts"] + x["dur"] <= o["ts"] + o["dur"] + 1e-9]
                            self.assertEqual(len(outer), 1, x)
                    main = [x for x in xs if x["name"] == "main"][0]
                    # Slices are cut at rounded ends: within 1 ns of the report.
                    self.assertLessEqual(abs(ns(main["dur"]) - funcs["main"]["total_ns"]), 1)
                    pids = {x["pid"] for x in xs}
                    tids = {x["tid"] for x in xs}
                    self.assertEqual(len(pids), 1)
                    self.assertEqual(tids, pids)
                    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
                    self.assertEqual(sorted((m["name"], m["pid"], m["tid"], m["args"]["name"])
                                            for m in meta),
                                     [("process_name", min(pids), min(pids), "nest-" + level),
                                      ("thread_name", min(pids), min(pids), "nest-" + level)])

    def test_chrome_threads(self):
        dump = tadump.traced_dump(self, "threads-O2")
        tids = tadump.thread_ids(self, dump)
        doc = self.chrome(dump)
        names = {m["tid"]: m["args"]["name"] for m in doc["traceEvents"]
                 if m["ph"] == "M" and m["name"] == "thread_name"}
        self.assertEqual(names, {tid: name for name, tid in tids.items()})
        xs = slices(doc)
        self.assertEqual(sum(x["name"] == "step" for x in xs), 360)
        doc = self.chrome(dump, "--tid=%d" % tids["worker-2"])
        self.assertEqual(sorted(x["name"] for x in slices(doc)),
                         sorted(["worker"] + ["work"] * 3 + ["step"] * 30))
        self.assertEqual({x["tid"] for x in slices(doc)}, {tids["worker-2"]})
        self.assertEqual([m["args"]["name"] for m in doc["traceEvents"]
                          if m["ph"] == "M" and m["name"] == "thread_name"], ["worker-2"])

    def test_chrome_sample(self):
        dump = tadump.sample_dump(self)
        doc = self.chrome(dump)
        # No slice has args (speedscope glues them to the name); a call
        # still open at the end says so in its category.
        for x in slices(doc):
            self.assertNotIn("args", x)
        got = sorted((x["tid"], x["name"], x["ts"], x["dur"], x["cat"].endswith(",open"))
                     for x in slices(doc))
        self.assertEqual(got, sorted([
            (101, "main", 0.5, 9.0, False), (101, "trunk", 0.6, 4.9, False),
            (101, "branch", 0.7, 2.0, False), (101, "leaf", 0.8, 0.5, False),
            (101, "leaf", 1.5, 1.0, False), (101, "twig", 3.5, 1.9, False),
            (101, "bud", 3.6, 0.05, False), (101, "trunk", 5.6, 3.8, False),
            (101, "branch", 5.7, 2.8, False), (101, "leaf", 5.8, 2.5, False),
            (102, "twig", 1.5, 0.5, False), (102, "bud", 1.6, 0.3, False),
            (102, "trunk", 2.5, 6.5, True), (102, "leaf", 2.6, 0.2, False)]))
        self.assertEqual({x["pid"] for x in slices(doc)}, {4242})
        self.assertEqual(sorted((m["name"], m["tid"], m["args"]["name"])
                                for m in doc["traceEvents"] if m["ph"] == "M"),
                         [("process_name", 4242, "nest-O2"), ("thread_name", 101, "main"),
                          ("thread_name", 102, "worker")])
        # The text itself: µs with three decimals, nothing rounded.
        p = tadump.view(self, "export", "--format=chrome", "-o", "-", "--tid=101", dump)
        self.assertIn('"name": "bud", "cat": "function,nest-O2", "pid": 4242, "tid": 101, '
                      '"ts": 3.600, "dur": 0.050}', p.stdout)

        def names(*options):
            return sorted((x["tid"], x["name"], x["ts"]) for x in slices(self.chrome(dump, *options)))
        self.assertEqual(names("--min-duration=2.5us"),
                         sorted([(101, "main", 0.5), (101, "trunk", 0.6), (101, "trunk", 5.6),
                                 (101, "branch", 5.7), (101, "leaf", 5.8), (102, "trunk", 2.5)]))
        self.assertEqual(names("--time-range=5us-6us"),
                         sorted([(101, "main", 0.5), (101, "trunk", 0.6), (101, "twig", 3.5),
                                 (101, "trunk", 5.6), (101, "branch", 5.7), (101, "leaf", 5.8),
                                 (102, "trunk", 2.5)]))
        self.assertEqual(names("--time-range=5us-6us", "--tid=102", "--min-duration=1us"),
                         [(102, "trunk", 2.5)])

    def test_chrome_big(self):
        """Past a million events the export says so, and how to cut it."""
        n = 28
        self.assertGreater(tahelp.fib_calls(n), 1000000)
        dump = tadump.traced_dump(self, "fib-O2", str(n))
        p = tadump.view(self, "export", "--format=chrome", "-o", os.devnull, dump)
        self.assertEqual(p.stderr,
                         "traceagent export: %s: over 1M events so far; chrome://tracing and "
                         "Perfetto struggle past about 1M events or 256 MB: --time-range, "
                         "--min-duration or --tid make a smaller export (or --format=perfetto)\n"
                         % os.devnull)
        p = tadump.view(self, "export", "--format=chrome", "-o", os.devnull,
                        "--min-duration=1us", dump)
        self.assertEqual(p.stderr, "")

    # -- folded ----------------------------------------------------------------

    def test_folded_nest(self):
        for level in LEVELS:
            with self.subTest(level=level):
                dump = tadump.traced_dump(self, "nest-" + level)
                self.assertEqual(sorted(self.folded(dump, "--by=calls")), [
                    "main 1", "main;trunk 2", "main;trunk;branch 6", "main;trunk;branch;leaf 24",
                    "main;trunk;twig 2", "main;trunk;twig;bud 10"])
                # By self time: each path's self time, as graph has it.
                g = tadump.view_json(self, "graph", "--json", dump)
                want = []

                def walk(n, path):
                    path = path + [n["name"]]
                    want.append("%s %d" % (";".join(path), n["self_ns"]))
                    for c in n["children"]:
                        walk(c, path)
                for n in g["tree"]:
                    walk(n, [])
                self.assertEqual(self.folded(dump), want)
                self.assertEqual(self.folded(dump, "--by=time"), want)

    def test_folded_sample(self):
        dump = tadump.sample_dump(self)
        self.assertEqual(self.folded(dump), [
            "main 300", "main;trunk 2000", "main;trunk;branch 800", "main;trunk;branch;leaf 4000",
            "main;trunk;twig 1850", "main;trunk;twig;bud 50",
            "trunk 6300", "trunk;leaf 200", "twig 200", "twig;bud 300"])
        self.assertEqual(self.folded(dump, "--by=calls", "--threads"), [
            "thread 101 (main);main 1", "thread 101 (main);main;trunk 2",
            "thread 101 (main);main;trunk;branch 2", "thread 101 (main);main;trunk;branch;leaf 3",
            "thread 101 (main);main;trunk;twig 1", "thread 101 (main);main;trunk;twig;bud 1",
            "thread 102 (worker);trunk 1", "thread 102 (worker);trunk;leaf 1",
            "thread 102 (worker);twig 1", "thread 102 (worker);twig;bud 1"])
        self.assertEqual(self.folded(dump, "--by=calls", "--tid=102"), [
            "trunk 1", "trunk;leaf 1", "twig 1", "twig;bud 1"])
        out = self.path("out.folded")
        tadump.view(self, "export", "--format=folded", "--output=" + out, dump)
        with open(out) as fh:
            self.assertEqual(fh.read().splitlines(), self.folded(dump))

    def test_folded_names(self):
        """';' separates frames and a line ends a stack: names with them
        are made safe.  A function outside any symbol table is named after
        its module's file name, which can hold anything."""
        d = tadump.Dump()
        d.process(100, "/bin/odd")
        mod = "/nonexistent/we;ird\nname"
        d.module(mod, 0x10000, 0x10000, 0x20000)
        d.thread_start(7, 100, "t")
        d.events(7, tadump.call_events(("a", 200, 300, []), {"a": 0x10040}))
        d.thread_end(7, 400, 2)
        d.end(500, 2, 1)
        dump = self.path("odd.trace")
        d.write(dump)
        p = tadump.view(self, "export", "--format=folded", "-o", "-", "--by=calls", dump)
        self.assertEqual(p.stdout, "we,ird?name+0x40 1\n")

    # -- errors ----------------------------------------------------------------

    def test_errors(self):
        dump = tadump.sample_dump(self)
        out = self.path("out.json")
        for bad in (["-o", out, dump], ["--format=svg", "-o", out, dump],
                    ["--format=chrome", dump], ["--format=folded", "-o", out, "--min-duration=1us", dump],
                    ["--format=folded", "-o", out, "--time-range=1us-", dump],
                    ["--format=chrome", "-o", out, "--by=calls", dump],
                    ["--format=chrome", "-o", out, "--threads", dump],
                    ["--format=folded", "-o", out, "--by=bytes", dump],
                    ["--format=chrome", "-o"], ["--format=chrome", "-o", out]):
            with self.subTest(args=bad):
                p = tadump.view(self, "export", *bad, status=2)
                self.assertTrue(p.stderr.startswith("traceagent export: "), p.stderr)
                self.assertFalse(os.path.exists(out))
        missing = self.path("missing.trace")
        p = tadump.view(self, "export", "--format=chrome", "-o", out, missing, status=2)
        self.assertEqual(p.stderr, "traceagent: %s: No such file or directory\n" % missing)
        self.assertFalse(os.path.exists(out))
        p = tadump.view(self, "export", "--format=chrome", "-o", self.path("no/such/dir.json"),
                        dump, status=2)
        self.assertIn("No such file or directory", p.stderr)
        # A cut dump: what could be read is exported, as valid JSON.
        with open(dump, "rb") as fh:
            data = fh.read()
        cut = self.path("cut.trace")
        with open(cut, "wb") as fh:
            fh.write(data[:-10])
        p = tadump.view(self, "export", "--format=chrome", "-o", out, cut, status=1)
        self.assertIn("truncated", p.stderr)
        with open(out) as fh:
            self.assertEqual(len(slices(json.load(fh))), 14)


if __name__ == "__main__":
    tahelp.main()
