# SPDX-License-Identifier: MIT
"""export --format=pprof: read back by `go tool pprof` (Debian's golang-go),
which shares nothing with the analyzer: fib's calls exact in -top, every
call path's calls, total and self time exact against `graph --json` in
-raw, the functions' files and lines with --srcline, the mapping's
build-id, threads merged, --tid, and the options refused."""

import os
import re
import shutil
import subprocess

import tahelp
import tadump
from tahelp import LEVELS

TOP = re.compile(r"^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+?)\s*$")


class PprofTest(tahelp.Case):

    def setUp(self):
        super().setUp()
        if not shutil.which("go"):
            self.skipTest("go not installed (Debian: golang-go)")
        # go keeps a cache; a scratch one keeps the test from writing to $HOME.
        self.env = tahelp.clean_env({"GOCACHE": self.path("gocache"),
                                     "HOME": self.dir, "GOFLAGS": "-mod=mod",
                                     "PPROF_TMPDIR": self.dir})

    def export(self, dump, *options):
        out = self.fresh("pprof") + ".pb.gz"
        p = tadump.view(self, "export", "--format=pprof", "-o", out, *options, dump)
        self.assertEqual((p.stdout, p.stderr), ("", ""))
        with open(out, "rb") as fh:
            self.assertEqual(fh.read(2), b"\x1f\x8b")  # gzip
        return out

    def pprof(self, *args):
        p = subprocess.run(["go", "tool", "pprof"] + list(args), env=self.env,
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def top(self, path, index):
        """function -> (flat, cum) of -top at sample_index."""
        rows = {}
        out = self.pprof("-top", "-sample_index=" + index, "-nodefraction=0",
                         "-unit=ns" if index != "calls" else "-unit=minimum", path)
        for line in out.splitlines()[out.splitlines().index(
                next(x for x in out.splitlines() if x.strip().startswith("flat"))) + 1:]:
            m = TOP.match(line)
            if m:
                rows[m.group(3)] = (m.group(1), m.group(2))
        return rows

    def raw(self, path):
        """(samples as {(leaf first names): (calls, total, self)}, locations
        {id: text}, mappings [text]) of -raw."""
        out = self.pprof("-raw", path).splitlines()
        i = out.index("Samples:")
        self.assertEqual(out[i + 1].split(),
                         ["calls/count", "total/nanoseconds", "self/nanoseconds[dflt]"])
        samples = []
        k = i + 2
        while out[k] != "Locations":
            vals, locs = out[k].split(":")
            samples.append((tuple(int(v) for v in locs.split()),
                            tuple(int(v) for v in vals.split())))
            k += 1
        locations = {}
        k += 1
        while out[k] != "Mappings":
            num, text = out[k].split(":", 1)
            locations[int(num)] = text.split()
            k += 1
        return samples, locations, out[k + 1:]

    def paths(self, samples, locations):
        """{path of names, root first: (calls, total, self)}."""
        got = {}
        for locs, vals in samples:
            names = tuple(locations[x][2] for x in reversed(locs))
            self.assertNotIn(names, got)
            got[names] = vals
        return got

    def graph_paths(self, dump, *options):
        want = {}

        def walk(node, path):
            path = path + (node["name"],)
            want[path] = (node["calls"], node["total_ns"], node["self_ns"])
            for c in node.get("children", []):
                walk(c, path)
        for n in tadump.view_json(self, "graph", "--json", *options, dump)["tree"]:
            walk(n, ())
        return want

    def test_fib(self):
        n = 12
        for level in LEVELS:
            with self.subTest(level=level):
                prog = "fib-" + level
                dump = tadump.traced_dump(self, prog, str(n))
                out = self.export(dump)
                top = self.top(out, "calls")
                self.assertEqual(top["fib"][0], str(tahelp.fib_calls(n)))
                self.assertEqual(top["main"], ("1", str(1 + tahelp.fib_calls(n))))
                samples, locations, mappings = self.raw(out)
                # One sample per call path (fib recursing n levels), each
                # with the graph's calls, total and self time to the ns.
                self.assertEqual(len(samples), n + 1)
                self.assertEqual(self.paths(samples, locations), self.graph_paths(dump))
                # Self time: pprof's flat is the sum over fib's paths.
                funcs = self.functions(self.report(dump))
                self.assertEqual(self.top(out, "self")["fib"][0],
                                 "%dns" % sum(v[2] for p, v in self.paths(samples, locations)
                                              .items() if p[-1] == "fib"))
                self.assertLessEqual(abs(int(self.top(out, "self")["fib"][0][:-2]) -
                                         funcs["fib"]["self_ns"]), n + 1)
                # The module's mapping, with its build-id; names, no lines.
                info = tadump.view_json(self, "info", "--json", dump)
                mod = [m for m in info["processes"][0]["modules"] if m["main"]][0]
                self.assertEqual(len(mappings), 1)
                self.assertIn(" %s %s [FN]" % (mod["path"], mod["build_id"]), mappings[0])
                self.assertEqual(sorted(v[2] for v in locations.values()), ["fib", "main"])
                for v in locations.values():
                    self.assertEqual(v[1], "M=1")
                    self.assertEqual(v[3:], [":0", "s=0"])

    def test_srcline(self):
        self.need_feature("srcline")
        dump = tadump.traced_dump(self, "fib-O0", "5")
        out = self.export(dump, "--srcline")
        samples, locations, mappings = self.raw(out)
        src = {v[2]: v[3] for v in locations.values()}
        self.assertTrue(src["fib"].endswith("tests/programs/fib.c:11"), src)
        self.assertTrue(src["main"].endswith("tests/programs/fib.c:18"), src)
        self.assertTrue(mappings[0].endswith("[FN][FL][LN]"), mappings)

    def test_threads(self):
        """Threads merge into one tree; --tid keeps one."""
        dump = tadump.traced_dump(self, "threads-O2")
        out = self.export(dump)
        samples, locations, _ = self.raw(out)
        self.assertEqual(self.paths(samples, locations), self.graph_paths(dump))
        tids = tadump.thread_ids(self, dump)
        tid = str(tids["worker-2"])
        samples, locations, _ = self.raw(self.export(dump, "--tid=" + tid))
        self.assertEqual(self.paths(samples, locations),
                         self.graph_paths(dump, "--tid=" + tid))

    def test_refused(self):
        dump = tadump.traced_dump(self, "fib-O0", "3")
        for opts, msg in ((["--time-range=1us-"], "--time-range and --min-duration are for"),
                          (["--by=calls"], "--by and --threads are for --format=folded")):
            p = tadump.view(self, "export", "--format=pprof", "-o", os.devnull, *opts, dump,
                            status=2)
            self.assertIn(msg, p.stderr)
        p = tadump.view(self, "export", "--format=chrome", "--srcline", "-o", os.devnull,
                        dump, status=2)
        if "srcline" in tahelp.FEATURES:
            self.assertIn("--srcline is for --format=pprof", p.stderr)
        else:
            self.assertEqual(p.stderr, "traceagent export: --srcline: this build has no source "
                             "lines (built without libdw: meson -Dsrcline)\n")


if __name__ == "__main__":
    tahelp.main()
