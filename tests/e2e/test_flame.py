# SPDX-License-Identifier: MIT
"""flame: an SVG flame graph.  The file parses as XML; each frame's title
names the function with its calls, total and self; frames are as wide as
their totals and stacked on their callers; colours follow the names; names
are escaped; the options and errors."""

import re
import xml.etree.ElementTree as ET

import tahelp
import tadump
from tahelp import LEVELS

SVG = "{http://www.w3.org/2000/svg}"
CALLS = {"main": 1, "trunk": 2, "branch": 6, "twig": 2, "leaf": 24, "bud": 10}
PARENT = {"trunk": "main", "branch": "trunk", "twig": "trunk", "leaf": "branch", "bud": "twig"}
PAD, WIDTH = 10, 1200


class Frame:
    def __init__(self, g):
        title = g.find(SVG + "title").text
        rect = g.find(SVG + "rect")
        self.lines = title.split("\n")
        self.name = self.lines[0]
        self.x, self.w = float(rect.get("x")), float(rect.get("width"))
        self.y = float(rect.get("y"))
        self.fill = rect.get("fill")
        self.label = g.find(SVG + "text").text or ""
        m = re.search(r", (\d+) calls?$", title)
        self.calls = int(m.group(1)) if m else None


class FlameTest(tahelp.Case):

    def flame(self, dump, *options):
        out = self.fresh("flame") + ".svg"
        p = tadump.view(self, "flame", "-o", out, *options, dump)
        self.assertEqual((p.stdout, p.stderr), ("", ""))
        root = ET.parse(out).getroot()
        self.assertEqual(root.tag, SVG + "svg")
        with open(out, "rb") as fh:
            data = fh.read()
        frames = [Frame(g) for g in root.iter(SVG + "g") if g.get("class") == "f"]
        return root, frames, data

    def test_nest(self):
        for level in LEVELS:
            with self.subTest(level=level):
                dump = tadump.traced_dump(self, "nest-" + level)
                root, frames, data = self.flame(dump, "--min-width=0")
                by = {f.name: f for f in frames}
                self.assertEqual(sorted(by), sorted(["all"] + list(CALLS)))
                self.assertEqual(len(frames), len(by))
                self.assertEqual({n: by[n].calls for n in CALLS}, CALLS)
                funcs = self.functions(self.report(dump))
                allf = by["all"]
                self.assertEqual((allf.x, allf.w), (PAD, WIDTH - 2 * PAD))
                self.assertEqual(root.get("width"), str(WIDTH))
                for name, f in by.items():
                    if name == "all":
                        continue
                    # As wide as its total, on top of its caller, inside it.
                    self.assertAlmostEqual(f.w, allf.w * funcs[name]["total_ns"]
                                           / funcs["main"]["total_ns"], delta=0.011)
                    below = by[PARENT.get(name, "all")]
                    self.assertEqual(f.y, below.y - 16)
                    self.assertGreaterEqual(f.x, below.x - 0.01)
                    self.assertLessEqual(f.x + f.w, below.x + below.w + 0.02)
                    self.assertEqual(f.lines[1], self.prog("nest-" + level))
                    self.assertRegex(f.lines[2], r"^total \d+(\.\d{3} [um]s| ns) \(\d+\.\d\d%\), "
                                     r"self \d+(\.\d{3} [um]s| ns), \d+ calls?$")
                    self.assertTrue(f.fill.startswith("rgb("))
                self.assertEqual(by["main"].label, "main")
                scripts = list(root.iter(SVG + "script"))
                self.assertEqual(len(scripts), 1)
                self.assertIn("function zoom(", scripts[0].text)
                self.assertNotIn(b"http://", data.replace(b"http://www.w3.org/2000/svg", b""))
                # The same dump gives the same file.
                self.assertEqual(self.flame(dump, "--min-width=0")[2], data)

    def test_colours(self):
        """A function's colour comes from its name: the same in every graph
        and every place."""
        d1 = tadump.traced_dump(self, "nest-O0")
        d2 = tadump.sample_dump(self)
        c1 = {f.name: f.fill for f in self.flame(d1)[1]}
        fills = {}
        for f in self.flame(d2, "--min-width=0")[1]:
            fills.setdefault(f.name, set()).add(f.fill)
        for name, fs in fills.items():
            self.assertEqual(fs, {c1[name]}, name)
        self.assertGreater(len(set(c1.values())), 3)

    def test_sample(self):
        dump = tadump.sample_dump(self)
        root, frames, _ = self.flame(dump, "--min-width=0")
        mod = self.prog("nest-O2")
        titles = sorted(tuple(f.lines) for f in frames)
        self.assertEqual(titles, sorted([
            ("all", "total 16.000 us (100.00%)"),
            ("main", mod, "total 9.000 us (56.25%), self 300 ns, 1 call"),
            ("trunk", mod, "total 8.700 us (54.38%), self 2.000 us, 2 calls"),
            ("branch", mod, "total 4.800 us (30.00%), self 800 ns, 2 calls"),
            ("leaf", mod, "total 4.000 us (25.00%), self 4.000 us, 3 calls"),
            ("twig", mod, "total 1.900 us (11.88%), self 1.850 us, 1 call"),
            ("bud", mod, "total 50 ns (0.31%), self 50 ns, 1 call"),
            ("trunk", mod, "total 6.500 us (40.62%), self 6.300 us, 1 call"),
            ("leaf", mod, "total 200 ns (1.25%), self 200 ns, 1 call"),
            ("twig", mod, "total 500 ns (3.12%), self 200 ns, 1 call"),
            ("bud", mod, "total 300 ns (1.88%), self 300 ns, 1 call")]))
        scale = (WIDTH - 2 * PAD) / 16000
        pos = sorted((f.y, f.x, f.w, f.name) for f in frames)
        top = max(f.y for f in frames)

        def at(depth, start, total, name):
            return (top - 16 * depth, PAD + start * scale, total * scale, name)
        want = sorted([at(0, 0, 16000, "all"), at(1, 0, 9000, "main"), at(1, 9000, 6500, "trunk"),
                       at(1, 15500, 500, "twig"), at(2, 0, 8700, "trunk"),
                       at(2, 9000, 200, "leaf"), at(2, 15500, 300, "bud"),
                       at(3, 0, 4800, "branch"), at(3, 4800, 1900, "twig"),
                       at(4, 0, 4000, "leaf"), at(4, 4800, 50, "bud")])
        self.assertEqual(len(pos), len(want))
        for g, w in zip(pos, want):
            self.assertEqual((g[0], g[3]), (w[0], w[3]))
            self.assertAlmostEqual(g[1], w[1], delta=0.006)
            self.assertAlmostEqual(g[2], w[2], delta=0.006)
        self.assertEqual(root.get("height"), str(40 + 5 * 16 + 28))
        title = [t for t in root.iter(SVG + "text") if t.get("id") == "title"][0]
        self.assertEqual(title.text, "nest-O2: 16.000 us in 2 threads (merged)")
        labels = {(f.name, round(f.w)): f.label for f in frames}
        self.assertEqual(labels[("twig", 37)], "twig")
        self.assertEqual(labels[("leaf", 15)], "")
        # Narrow frames are left out, with what is on them.
        _, frames, _ = self.flame(dump, "--min-width=30")
        self.assertEqual(sorted(f.name for f in frames),
                         ["all", "branch", "leaf", "main", "trunk", "trunk", "twig", "twig"])

    def test_threads_and_options(self):
        dump = tadump.sample_dump(self)
        root, frames, _ = self.flame(dump, "--threads", "--width=800", "--title=a <b> & c")
        by = {f.name: f for f in frames}
        self.assertIn("thread 101 (main)", by)
        self.assertIn("thread 102 (worker)", by)
        self.assertEqual(by["thread 102 (worker)"].lines, ["thread 102 (worker)",
                                                           "total 7.000 us (43.75%)"])
        self.assertEqual(by["all"].w, 800 - 2 * PAD)
        self.assertEqual(root.get("width"), "800")
        title = [t for t in root.iter(SVG + "text") if t.get("id") == "title"][0]
        self.assertEqual(title.text, "a <b> & c")
        _, frames, _ = self.flame(dump, "--tid=102", "--min-width=0")
        self.assertEqual(sorted(f.name for f in frames), ["all", "bud", "leaf", "trunk", "twig"])

    def test_escaping(self):
        """Names are XML-escaped, and bytes that are not text replaced."""
        d = tadump.Dump()
        d.process(100, "/bin/odd")
        d.module('/nonexistent/a<b>&"c\x01', 0x10000, 0x10000, 0x20000)
        d.thread_start(7, 100, "t")
        d.events(7, tadump.call_events(("a", 200, 300, []), {"a": 0x10040}))
        d.thread_end(7, 400, 2)
        d.end(500, 2, 1)
        dump = self.path("odd.trace")
        d.write(dump)
        out = self.path("odd.svg")
        p = tadump.view(self, "flame", "-o", out, dump)
        self.assertIn("cannot read symbols", p.stderr)
        frames = [Frame(g) for g in ET.parse(out).getroot().iter(SVG + "g")
                  if g.get("class") == "f"]
        self.assertEqual(sorted(f.name for f in frames), ["a<b>&\"c?+0x40", "all"])

    def test_errors(self):
        dump = tadump.sample_dump(self)
        out = self.path("f.svg")
        for bad in ([dump], ["-o", out], ["-o", out, "--width=10", dump],
                    ["-o", out, "--min-width=x", dump], ["-o", out, "--by=calls", dump]):
            with self.subTest(args=bad):
                p = tadump.view(self, "flame", *bad, status=2)
                self.assertTrue(p.stderr.startswith("traceagent flame: "), p.stderr)
        missing = self.path("missing.trace")
        p = tadump.view(self, "flame", "-o", out, missing, status=2)
        self.assertEqual(p.stderr, "traceagent: %s: No such file or directory\n" % missing)


if __name__ == "__main__":
    tahelp.main()
