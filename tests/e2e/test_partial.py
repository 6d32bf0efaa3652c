# SPDX-License-Identifier: MIT
"""Open and partial calls in every view (tadump.partial_sample): calls still
running at the end (open), calls whose start is a guess (a chunk's
snapshot opened them) and calls whose entry was never recorded (an attach
window began inside them) are counted apart and marked wherever a view
counts calls, as report counts them; none is in a minimum, an average or
a percentile; exact values."""

import json

import tahelp
import tadump

WARN_COUNTED = ("traceagent: %s: warning: 2 function exits without a recorded entry were "
                "counted as partial calls, with no time\n")
WARN_IGNORED = ("traceagent: %s: warning: 2 function exits without a recorded entry were "
                "ignored\n")


class PartialTest(tahelp.Case):

    def setUp(self):
        super().setUp()
        self.dump = self.path("partial.trace")
        tadump.partial_sample(self.dump, self.prog("nest-O2"))

    def test_report(self):
        """The reference: report's rows."""
        p = tadump.view(self, "report", "--json", self.dump)
        self.assertEqual(p.stderr, WARN_COUNTED % self.dump)
        got = {f["name"]: (f["calls"], f["open"], f["partial"], f["total_ns"], f["self_ns"],
                           f["min_ns"], f["max_ns"])
               for f in json.loads(p.stdout)["functions"]}
        self.assertEqual(got, {
            "trunk": (2, 0, 2, 1000, 400, None, None),
            "branch": (2, 0, 2, 500, 200, None, None),
            "leaf": (3, 0, 0, 800, 800, 100, 400),
            "twig": (1, 0, 0, 600, 600, 600, 600),
            "bud": (1, 1, 0, 600, 600, None, None),
        })

    def test_graph(self):
        """graph: each path's open and partial calls, marked; a call
        without an entry is its function alone at the top of the thread's
        paths, with no time; the same with -j."""
        want = [
            "         2     1.000 us       400 ns  trunk  (2 partial)",
            "         1       500 ns       200 ns    branch  (1 partial)",
            "         1       300 ns       300 ns      leaf",
            "         1       100 ns       100 ns    leaf",
            "         1       600 ns       600 ns  bud  (1 open at the end)",
            "         1       600 ns       600 ns  twig",
            "         1       400 ns       400 ns  leaf",
            "         1         0 ns         0 ns  branch  (1 partial)",
        ]
        for jobs in ("1", "4"):
            with self.subTest(jobs=jobs):
                p = tadump.view(self, "graph", "-j", jobs, self.dump)
                self.assertEqual(p.stderr, WARN_COUNTED % self.dump)
                self.assertEqual(p.stdout.splitlines()[2:], want)
        p = tadump.view(self, "graph", "--threads", self.dump)
        self.assertEqual(p.stdout.splitlines()[2:], [
            "               1.600 us               thread 101 (main)",
            "         1       600 ns       600 ns    bud  (1 open at the end)",
            "         1       600 ns       600 ns    twig",
            "         1       400 ns       400 ns    leaf",
            "         1         0 ns         0 ns    branch  (1 partial)",
            "         1         0 ns         0 ns    trunk  (1 partial)",
            "               1.000 us               thread 102 (worker)",
            "         1     1.000 us       400 ns    trunk  (1 partial)",
            "         1       500 ns       200 ns      branch  (1 partial)",
            "         1       300 ns       300 ns        leaf",
            "         1       100 ns       100 ns      leaf",
        ])
        # FUNCTION: its calls, its paths and the tree under it, marked.
        p = tadump.view(self, "graph", self.dump, "branch")
        self.assertEqual(p.stdout.splitlines(), [
            "branch: 2 calls, total 500 ns, self 200 ns  (2 partial)",
            "",
            "paths to it:",
            "     calls        total         self  path",
            "         1       500 ns       200 ns  trunk > branch  (1 partial)",
            "         1         0 ns         0 ns  branch  (1 partial)",
            "",
            "calls under it:",
            "     calls        total         self  function",
            "         2       500 ns       200 ns  branch  (2 partial)",
            "         1       300 ns       300 ns    leaf",
        ])
        tree = json.loads(tadump.view(self, "graph", "--json", self.dump).stdout)["tree"]
        top = [(n["name"], n["calls"], n["open"], n["partial"], n["total_ns"]) for n in tree]
        self.assertEqual(top, [("trunk", 2, 0, 2, 1000), ("bud", 1, 1, 0, 600),
                               ("twig", 1, 0, 0, 600), ("leaf", 1, 0, 0, 400),
                               ("branch", 1, 0, 1, 0)])
        self.assertEqual([(n["name"], n["partial"]) for n in tree[0]["children"]],
                         [("branch", 1), ("leaf", 0)])

    def test_folded(self):
        """Folded stacks: the partial calls in the paths' calls, their known
        part in the time, as in graph."""
        p = tadump.view(self, "export", "--format=folded", "-o", "-", self.dump)
        self.assertEqual(p.stderr, WARN_COUNTED % self.dump)
        self.assertEqual(p.stdout.splitlines(), [
            "trunk 400", "trunk;branch 200", "trunk;branch;leaf 300", "trunk;leaf 100",
            "bud 600", "twig 600", "leaf 400", "branch 0"])
        p = tadump.view(self, "export", "--format=folded", "--by=calls", "-o", "-", self.dump)
        self.assertEqual(p.stdout.splitlines(), [
            "trunk 2", "trunk;branch 1", "trunk;branch;leaf 1", "trunk;leaf 1",
            "bud 1", "twig 1", "leaf 1", "branch 1"])

    def test_replay(self):
        """replay: a call whose start is a guess is marked partial, in the
        text and the JSON; calls without an entry have no line and the
        warning says so."""
        p = tadump.view(self, "replay", self.dump)
        self.assertEqual(p.stderr, WARN_IGNORED % self.dump)
        self.assertEqual(p.stdout.splitlines()[1:], [
            "      400 ns      101  leaf();",
            "      600 ns      101  twig();",
            "      600 ns      101  bud(); (open at the end)",
            "                  102  trunk() {",
            "                  102    branch() {",
            "      300 ns      102      leaf();",
            "      500 ns      102    } /* branch */ (partial: begun before the dump says)",
            "      100 ns      102    leaf();",
            "    1.000 us      102  } /* trunk */ (partial: begun before the dump says)",
        ])
        calls = [json.loads(l) for l in
                 tadump.view(self, "replay", "--json", self.dump).stdout.splitlines()]
        self.assertEqual([(c["name"], c["open"], c["partial"], c["duration_ns"]) for c in calls],
                         [("leaf", False, False, 400), ("twig", False, False, 600),
                          ("bud", True, False, 600), ("leaf", False, False, 300),
                          ("branch", False, True, 500), ("leaf", False, False, 100),
                          ("trunk", False, True, 1000)])

    def test_chrome(self):
        """The Chrome export: ",open" and ",partial" in the category."""
        p = tadump.view(self, "export", "--format=chrome", "-o", "-", self.dump)
        got = [(e["name"], e["cat"], e["dur"]) for e in json.loads(p.stdout)["traceEvents"]
               if e.get("ph") == "X"]
        self.assertEqual(sorted(got), sorted([
            ("leaf", "function,nest-O2", 0.4), ("twig", "function,nest-O2", 0.6),
            ("bud", "function,nest-O2,open", 0.6), ("leaf", "function,nest-O2", 0.3),
            ("branch", "function,nest-O2,partial", 0.5), ("leaf", "function,nest-O2", 0.1),
            ("trunk", "function,nest-O2,partial", 1.0)]))

    def test_diff(self):
        """diff: open and partial calls in columns of their own, as report
        shows them, and in the JSON."""
        p = tadump.view(self, "diff", self.dump, self.dump)
        self.assertEqual(p.stderr, (WARN_COUNTED % self.dump) * 2)
        lines = p.stdout.splitlines()
        self.assertTrue(lines[3].endswith(
            " self% base open  new open base partial  new partial  function  module"), lines[3])
        rows = {l.split()[-2]: l.split()[-6:-2] for l in lines[4:9]}
        self.assertEqual(rows, {"trunk": ["0", "0", "2", "2"], "branch": ["0", "0", "2", "2"],
                                "leaf": ["0", "0", "0", "0"], "twig": ["0", "0", "0", "0"],
                                "bud": ["1", "1", "0", "0"]})
        self.assertEqual(lines[9:], [
            "open: calls still running when the dump ends; partial: calls already running when it",
            "begins (or cut by lost events).  Both are in calls, their known part in total",
            "and self."])
        d = json.loads(tadump.view(self, "diff", "--json", self.dump, self.dump).stdout)
        got = {f["name"]: (f["base_calls"], f["base_open"], f["new_open"], f["base_partial"],
                           f["new_partial"]) for f in d["functions"]}
        self.assertEqual(got, {"trunk": (2, 0, 0, 2, 2), "branch": (2, 0, 0, 2, 2),
                               "leaf": (3, 0, 0, 0, 0), "twig": (1, 0, 0, 0, 0),
                               "bud": (1, 1, 1, 0, 0)})


if __name__ == "__main__":
    tahelp.main()
