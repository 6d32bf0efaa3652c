# SPDX-License-Identifier: MIT
"""graph: the call tree by call path.  Exact trees of nest (one path per
function), fib (a recursion chain whose calls per depth are known), the
threads sample (merged, split, one thread), the paths to a function and
the tree under it, and exact numbers on a synthetic dump."""

import os
import re

import tahelp
import tadump
from tahelp import LEVELS, MODES

NEST = ("main", 1, [("trunk", 2, [("branch", 6, [("leaf", 24, [])]),
                                  ("twig", 2, [("bud", 10, [])])])])


def by_total(siblings):
    return all(a["total_ns"] >= b["total_ns"] for a, b in zip(siblings, siblings[1:]))


def shape(node):
    """(name, calls, [children]) of a JSON tree node, children by name: the
    order by time of nest's branch and twig is left to the machine."""
    return (node["name"], node["calls"], sorted(shape(c) for c in node["children"]))


def fib_depths(n):
    """Calls of fib at each recursion depth (0 = the call from main)."""
    counts = {}

    def walk(k, d):
        counts[d] = counts.get(d, 0) + 1
        if k >= 2:
            walk(k - 1, d + 1)
            walk(k - 2, d + 1)
    walk(n, 0)
    return [counts[d] for d in range(len(counts))]


def nodes(tree):
    for n in tree:
        yield n
        yield from nodes(n["children"])


class GraphTest(tahelp.Case):

    def check_sums(self, tree):
        """total = self + the children's totals, within a nanosecond of
        rounding per node."""
        for n in nodes(tree):
            kids = n["children"]
            self.assertLessEqual(abs(n["total_ns"] - n["self_ns"] - sum(k["total_ns"] for k in kids)),
                                 len(kids) + 1, n["name"])

    def test_nest(self):
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    dump = tadump.traced_dump(self, "nest-" + level, mode=mode)
                    g = tadump.view_json(self, "graph", "--json", dump)
                    self.assertEqual((g["complete"], g["threads"], g["split"]), (True, 1, False))
                    self.assertEqual([shape(n) for n in g["tree"]], [NEST])
                    self.check_sums(g["tree"])
                    for n in nodes(g["tree"]):
                        self.assertTrue(by_total(n["children"]), n)
                    # One path per function: the path's numbers are the
                    # function's, to the nanosecond.
                    funcs = self.functions(self.report(dump))
                    for n in nodes(g["tree"]):
                        f = funcs[n["name"]]
                        self.assertEqual((n["total_ns"], n["self_ns"], n["module"], n["offset"]),
                                         (f["total_ns"], f["self_ns"], f["module"], f["offset"]))

    def test_nest_text(self):
        dump = tadump.traced_dump(self, "nest-O2")
        p = tadump.view(self, "graph", dump)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "call paths of %s: 1 thread, merged (--threads splits them)"
                         % dump)
        self.assertEqual(lines[1].split(), ["calls", "total", "self", "function"])
        rows = [re.match(r"^ *(\d+) +\S+ \S+ +\S+ \S+  ( *)(\S+)$", l) for l in lines[2:]]
        self.assertTrue(all(rows), lines)
        got = [(int(m.group(1)), len(m.group(2)) // 2, m.group(3)) for m in rows]
        top = [(1, 0, "main"), (2, 1, "trunk")]
        branch, twig = [(6, 2, "branch"), (24, 3, "leaf")], [(2, 2, "twig"), (10, 3, "bud")]
        self.assertIn(got, [top + branch + twig, top + twig + branch])
        p = tadump.view(self, "graph", "--depth=2", dump)
        self.assertEqual([l.split()[-1] for l in p.stdout.splitlines()[2:]], ["main", "trunk"])

    def test_fib(self):
        n = 12
        want = fib_depths(n)
        for level in LEVELS:
            with self.subTest(level=level):
                dump = tadump.traced_dump(self, "fib-" + level, str(n))
                g = tadump.view_json(self, "graph", "--json", dump)
                chain, node = [], g["tree"][0]
                self.assertEqual((len(g["tree"]), node["name"]), (1, "main"))
                while node["children"]:
                    self.assertEqual(len(node["children"]), 1)
                    node = node["children"][0]
                    self.assertEqual(node["name"], "fib")
                    chain.append(node["calls"])
                self.assertEqual(chain, want)
                self.assertEqual(sum(chain), tahelp.fib_calls(n))
                self.check_sums(g["tree"])
                fib = self.functions(self.report(dump))["fib"]
                self.assertEqual(g["tree"][0]["children"][0]["total_ns"], fib["total_ns"])

                # The paths to fib and the tree under it.
                q = tadump.view_json(self, "graph", "--json", dump, "fib")
                self.assertEqual(len(q["matches"]), 1)
                m = q["matches"][0]
                self.assertEqual((m["name"], m["calls"], m["total_ns"]),
                                 ("fib", fib["calls"], fib["total_ns"]))
                # Self time is summed over the paths, each rounded.
                self.assertLessEqual(abs(m["self_ns"] - fib["self_ns"]), len(chain))
                self.assertEqual([(c["path"], c["calls"]) for c in m["callers"]],
                                 [(["main", "fib"], 1)])
                chain, node = [], m["tree"]
                while True:
                    chain.append(node["calls"])
                    if not node["children"]:
                        break
                    node = node["children"][0]
                self.assertEqual(chain, want)

    def test_function(self):
        dump = tadump.traced_dump(self, "nest-O0")
        q = tadump.view_json(self, "graph", "--json", dump, "b*")
        self.assertEqual(q["function"], "b*")
        self.assertEqual(sorted(m["name"] for m in q["matches"]), ["branch", "bud"])
        self.assertTrue(by_total(q["matches"]))
        branch, bud = sorted(q["matches"], key=lambda m: m["name"])
        self.assertEqual([(c["path"], c["calls"]) for c in branch["callers"]],
                         [(["main", "trunk", "branch"], 6)])
        self.assertEqual(shape(branch["tree"]), ("branch", 6, [("leaf", 24, [])]))
        self.assertEqual([(c["path"], c["calls"]) for c in bud["callers"]],
                         [(["main", "trunk", "twig", "bud"], 10)])
        self.assertEqual(shape(bud["tree"]), ("bud", 10, []))
        self.assertEqual(branch["callers"][0]["total_ns"], branch["total_ns"])

        p = tadump.view(self, "graph", dump, "twig")
        out = p.stdout.splitlines()
        self.assertRegex(out[0], r"^twig: 2 calls, total \S+ \S+, self \S+ \S+$")
        self.assertEqual(out[2:4], ["paths to it:", out[3]])
        self.assertEqual(out[4].split()[0], "2")
        self.assertTrue(out[4].endswith("  main > trunk > twig"), out[4])
        self.assertEqual(out[6], "calls under it:")
        self.assertEqual([l.split()[0] + " " + l.split()[-1] for l in out[8:]],
                         ["2 twig", "10 bud"])

        # Nothing matches: said on stderr, an empty answer.
        p = tadump.view(self, "graph", "--json", dump, "nosuch*")
        self.assertEqual(p.stderr, "traceagent: %s: warning: no function matches 'nosuch*'\n" % dump)
        self.assertEqual(__import__("json").loads(p.stdout)["matches"], [])

    def test_threads(self):
        dump = tadump.traced_dump(self, "threads-O2")
        g = tadump.view_json(self, "graph", "--json", dump)
        self.assertEqual(g["threads"], 9)
        self.assertEqual(sorted(shape(n) for n in g["tree"]),
                         [("main", 1, []), ("worker", 8, [("work", 36, [("step", 360, [])])])])

        tids = tadump.thread_ids(self, dump)
        g = tadump.view_json(self, "graph", "--json", "--threads", dump)
        self.assertTrue(g["split"])
        per = {n["thread"]["name"]: n for n in g["tree"]}
        self.assertEqual(sorted(per), sorted(tids))
        for name, n in per.items():
            self.assertEqual(n["thread"]["tid"], tids[name])
            self.assertEqual(n["total_ns"], sum(c["total_ns"] for c in n["children"]))
            if name.startswith("worker-"):
                i = int(name[7:])
                self.assertEqual([shape(c) for c in n["children"]],
                                 [("worker", 1, [("work", i + 1, [("step", 10 * (i + 1), [])])])])
            else:
                self.assertEqual([shape(c) for c in n["children"]], [("main", 1, [])])

        g = tadump.view_json(self, "graph", "--json", "--tid=%d" % tids["worker-3"], dump)
        self.assertEqual([shape(n) for n in g["tree"]],
                         [("worker", 1, [("work", 4, [("step", 40, [])])])])
        g = tadump.view_json(self, "graph", "--json",
                             "--tid=%d,%d" % (tids["worker-3"], tids["worker-5"]), dump)
        self.assertEqual([shape(n) for n in g["tree"]],
                         [("worker", 2, [("work", 10, [("step", 100, [])])])])

    def test_sample_exact(self):
        dump = tadump.sample_dump(self)
        g = tadump.view_json(self, "graph", "--json", dump)

        def sums(n):
            return (n["name"], n["calls"], n["total_ns"], n["self_ns"], n["open"],
                    [sums(c) for c in n["children"]])
        self.assertEqual([sums(n) for n in g["tree"]], [
            ("main", 1, 9000, 300, 0, [
                ("trunk", 2, 8700, 2000, 0, [
                    ("branch", 2, 4800, 800, 0, [("leaf", 3, 4000, 4000, 0, [])]),
                    ("twig", 1, 1900, 1850, 0, [("bud", 1, 50, 50, 0, [])])])]),
            ("trunk", 1, 6500, 6300, 1, [("leaf", 1, 200, 200, 0, [])]),
            ("twig", 1, 500, 200, 0, [("bud", 1, 300, 300, 0, [])])])

        p = tadump.view(self, "graph", "--threads", "--depth=2", dump)
        self.assertEqual(p.stdout, "".join(l + "\n" for l in [
            "call paths of %s: 2 threads, one tree each" % dump,
            "     calls        total         self  function",
            "               9.000 us               thread 101 (main)",
            "         1     9.000 us       300 ns    main",
            "               7.000 us               thread 102 (worker)",
            "         1     6.500 us     6.300 us    trunk  (1 open at the end)",
            "         1       500 ns       200 ns    twig",
        ]))

        q = tadump.view_json(self, "graph", "--json", dump, "leaf")
        (m,) = q["matches"]
        self.assertEqual((m["calls"], m["total_ns"], m["self_ns"]), (4, 4200, 4200))
        self.assertEqual([(c["path"], c["calls"], c["total_ns"]) for c in m["callers"]],
                         [(["main", "trunk", "branch", "leaf"], 3, 4000),
                          (["trunk", "leaf"], 1, 200)])
        q = tadump.view_json(self, "graph", "--json", "--threads", dump, "bud")
        self.assertEqual([(c["path"], c["total_ns"]) for c in q["matches"][0]["callers"]],
                         [(["thread 102 (worker)", "twig", "bud"], 300),
                          (["thread 101 (main)", "main", "trunk", "twig", "bud"], 50)])

    def test_srcline(self):
        self.need_feature("srcline")
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs", "nest.c")
        with open(src) as fh:
            lines = fh.read().splitlines()
        want = {}
        for name in ("main", "trunk", "branch", "leaf", "twig", "bud"):
            for i, l in enumerate(lines):
                if re.match(r"^(__attribute__\(\(noipa\)\) static void|int) %s\(void\)$" % name, l):
                    want[name] = i + 1
        self.assertEqual(len(want), 6, want)
        dump = tadump.traced_dump(self, "nest-O0")
        g = tadump.view_json(self, "graph", "--json", "--srcline", dump)
        for n in nodes(g["tree"]):
            self.assertIsNotNone(n["srcline"], n)
            path, line = n["srcline"].rsplit(":", 1)
            self.assertEqual((os.path.basename(path), int(line)), ("nest.c", want[n["name"]]))
        p = tadump.view(self, "graph", "--srcline", dump)
        self.assertIn("  leaf  [", p.stdout)
        self.assertIn("nest.c:%d]\n" % want["leaf"], p.stdout)

    def test_errors(self):
        dump = tadump.sample_dump(self)
        missing = self.path("missing.trace")
        p = tadump.view(self, "graph", missing, status=2)
        self.assertEqual(p.stderr, "traceagent: %s: No such file or directory\n" % missing)
        self.assertEqual(p.stdout, "")
        for bad in (["--depth=0", dump], ["--tid=x", dump], ["--nosuch", dump],
                    [dump, "a", "b"], []):
            with self.subTest(args=bad):
                p = tadump.view(self, "graph", *bad, status=2)
                self.assertTrue(p.stderr.startswith("traceagent graph: "), p.stderr)
        # A cut dump: what could be read is shown, with status 1.
        with open(dump, "rb") as fh:
            data = fh.read()
        cut = self.path("cut.trace")
        with open(cut, "wb") as fh:
            fh.write(data[:-10])
        p = tadump.view(self, "graph", "--json", cut, status=1)
        self.assertIn("truncated", p.stderr)
        g = __import__("json").loads(p.stdout)
        self.assertFalse(g["complete"])
        self.assertEqual([n["name"] for n in g["tree"]], ["main", "trunk", "twig"])
        p = tadump.view(self, "graph", "--tid=77", dump)
        self.assertEqual(p.stderr, "traceagent: %s: warning: no thread 77 in the dump\n" % dump)


if __name__ == "__main__":
    tahelp.main()
