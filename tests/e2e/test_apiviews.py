# SPDX-License-Identifier: MIT
"""The views of the manual API's events (apiviews.c, known numbers):
counters (text, --json, --svg), replay's event lines, info's counts per
channel, the Chrome export's instant, counter and frame events and zone
args, report --channel, and zones as frames in graph and flame."""

import json
import math
import re
import xml.etree.ElementTree as ET

import tahelp
import tadump
from tahelp import LEVELS

SVG = "{http://www.w3.org/2000/svg}"
LINE = re.compile(r"^(?P<dur>.{12}) (?P<tid>.{8})  (?P<indent> *)(?P<text>\S.*)$")

COUNTERS = [
    {"name": "queue", "channel": "user", "samples": 100, "non_finite": 0, "integer": True,
     "min": 0, "max": 99, "avg": 49.5, "last": 99},
    {"name": "ratio", "channel": "user", "samples": 10, "non_finite": 0, "integer": False,
     "min": 0, "max": 2.25, "avg": 1.125, "last": 2.25},
    {"name": "bad", "channel": "user", "samples": 1, "non_finite": 1, "integer": False,
     "min": None, "max": None, "avg": None, "last": None},
    {"name": "sent", "channel": "net", "samples": 5, "non_finite": 0, "integer": True,
     "min": 1, "max": 5, "avg": 3, "last": 5},
]


class ApiViewsTest(tahelp.Case):

    def dump(self, level="O2"):
        return tadump.traced_dump(self, "apiviews-" + level)

    def test_counters(self):
        for level in LEVELS:
            with self.subTest(level=level):
                dump = self.dump(level)
                svg = self.path("c.svg")
                got = tadump.view_json(self, "counters", "--json", "--svg", svg, dump)
                self.assertEqual(got, {"counters": COUNTERS})
                p = tadump.view(self, "counters", "--json", dump)
                self.assertNotIn("nan", p.stdout.lower())
                self.assertNotIn("inf", p.stdout.lower())
                # One plot per counter, each with its name, a polyline and
                # the 4 frame marks.
                root = ET.parse(svg).getroot()
                self.assertEqual(root.tag, SVG + "svg")
                plots = root.findall(SVG + "g")
                self.assertEqual([g.get("data-name") for g in plots],
                                 [c["name"] for c in COUNTERS])
                for g in plots:
                    self.assertEqual(len(g.findall(SVG + "polyline")), 1)
                    self.assertEqual(len(g.findall(SVG + "line")), 4)
                q = plots[0]
                self.assertEqual(len(q.find(SVG + "polyline").get("points").split()), 100)
                labels = {t.get("class"): t.text for t in q.findall(SVG + "text")}
                self.assertEqual((labels["min"], labels["max"]), ("0", "99"))
                text = tadump.view(self, "counters", dump).stdout.splitlines()
                self.assertEqual(text[0].split(),
                                 ["counter", "samples", "min", "max", "avg", "last"])
                self.assertEqual(text[1].split(), ["queue", "100", "0", "99", "49.5", "99"])
                self.assertEqual(text[3].split(),
                                 ["bad", "1", "-", "-", "-", "-", "(1", "not", "finite)"])

    def test_counters_digits(self):
        """The text's average to the precision of the values (one decimal
        place more than the most precise sample), not 17 digits; the JSON's
        the shortest that reads back as the double."""
        for level in LEVELS:
            with self.subTest(level=level):
                dump = self.traced("preload", [self.prog("apiviews-" + level)],
                                   env={"APIVIEWS_THIRDS": "1"}).dump
                rows = {l.split()[0]: l.split()
                        for l in tadump.view(self, "counters", dump).stdout.splitlines()}
                self.assertEqual(rows["thirds"], ["thirds", "3", "1", "2", "1.7", "2"])
                self.assertEqual(rows["quarters"],
                                 ["quarters", "3", "0.25", "0.5", "0.417", "0.5"])
                self.assertEqual(rows["queue"], ["queue", "100", "0", "99", "49.5", "99"])
                self.assertEqual(rows["sent"], ["sent", "5", "1", "5", "3", "5"])
                p = tadump.view(self, "counters", "--json", dump)
                self.assertIn('"avg": 0.4166666666666667,', p.stdout)
                got = {c["name"]: c["avg"] for c in json.loads(p.stdout)["counters"]}
                self.assertEqual(got["thirds"], 5 / 3)
                self.assertEqual(got["quarters"], 1.25 / 3)

    def test_no_counters(self):
        dump = tadump.traced_dump(self, "nest-O2")
        p = tadump.view(self, "counters", dump)
        self.assertEqual(p.stdout, "no counters in %s\n" % dump)
        self.assertEqual(tadump.view_json(self, "counters", "--json", dump), {"counters": []})

    def test_replay(self):
        for level in LEVELS:
            with self.subTest(level=level):
                p = tadump.view(self, "replay", self.dump(level))
                self.assertEqual(p.stderr, "")
                lines = []
                for l in p.stdout.splitlines()[1:]:
                    m = LINE.match(l)
                    self.assertTrue(m, l)
                    lines.append((len(m.group("indent")) // 2, m.group("text")))
                events = [t for _, t in lines if t[0] in "!*#|+~?"]
                self.assertEqual([t for t in events if t.startswith("# counter queue")],
                                 ["# counter queue = %d" % i for i in range(100)])
                self.assertEqual([t for t in events if t.startswith("# counter ratio")],
                                 ["# counter ratio = %s" % ("%.15g" % (i / 4.0))
                                  for i in range(10)])
                self.assertIn("# counter bad = nan", events)
                self.assertEqual([t for t in events if t.startswith("# counter sent")],
                                 ["# counter sent = %d [net]" % i for i in range(1, 6)])
                # The threads' lines interleave as they were flushed: main's
                # two in their order, the helper's anywhere.
                msgs = [t for t in events if t[0] == "!"]
                self.assertEqual(sorted(msgs), ['! message "helper up"',
                                                '! message "level three loaded"',
                                                '! message "score 42"'])
                msgs.remove('! message "helper up"')
                self.assertEqual(msgs, ['! message "level three loaded"',
                                        '! message "score 42"'])
                self.assertEqual(sorted(t for t in events if t[0] == "*"),
                                 ["* instant checkpoint", "* instant helper done"])
                self.assertEqual([t for t in events if t[0] == "|"], ["| frame frame"] * 4)
                self.assertEqual([t for t in events if t[0] == "~"],
                                 ["~ channel net off", "~ channel net on"])
                self.assertEqual(len([t for t in events if t[0] == "?"]), 1)
                self.assertRegex(events[[t[0] for t in events].index("?")],
                                 r"^\? zone end without a zone begun \(.*apiviews\.c:\d+\)$")
                # The zone's text and value inside the zone, under work().
                i = lines.index((2, "work() { [zone]"))
                self.assertEqual(lines[i + 1:i + 4],
                                 [(3, '+ zone text "item 7"'), (3, "+ zone value 7"),
                                  (3, "* instant checkpoint")])
                self.assertEqual(lines[i - 1], (1, "work() {"))

    def test_replay_json(self):
        p = tadump.view(self, "replay", "--json", self.dump())
        evs = [json.loads(l) for l in p.stdout.splitlines()]
        api = [e for e in evs if "event" in e]
        kinds = {}
        for e in api:
            kinds[e["event"]] = kinds.get(e["event"], 0) + 1
        self.assertEqual(kinds, {"counter": 116, "message": 3, "instant": 2, "frame": 4,
                                 "zone-text": 1, "zone-value": 1, "channel": 2,
                                 "zone-end-unmatched": 1})
        bad = [e for e in api if e["name"] == "bad"]
        self.assertEqual((bad[0]["value"], bad[0]["non_finite"]), (None, "nan"))

    def test_info(self):
        for level in LEVELS:
            with self.subTest(level=level):
                info = tadump.view_json(self, "info", "--json", self.dump(level))
                ch = {c["name"]: c for c in info["channels"]}
                self.assertEqual(ch["user"], {"name": "user", "zones": 1, "messages": 3,
                                              "instants": 2, "counter_samples": 111,
                                              "frame_marks": 4, "switches": 0})
                self.assertEqual(ch["net"], {"name": "net", "zones": 5, "messages": 0,
                                             "instants": 0, "counter_samples": 5,
                                             "frame_marks": 0, "switches": 2})
                for name in ("functions", "alloc", "lock", "io", "sleep"):
                    self.assertEqual(sum(v for k, v in ch[name].items() if k != "name"), 0)
                self.assertEqual(info["channel_switches"], 2)
                self.assertEqual(info["zone_end_unmatched"], 1)
        text = tadump.view(self, "info", self.dump()).stdout
        self.assertRegex(text, r"\n {15}user +1 +3 +2 +111 +4 +0\n")
        self.assertRegex(text, r"\n {15}net +5 +0 +0 +5 +0 +2\n")
        self.assertIn("\nzone ENDs without a zone: 1\n", text)

    def test_chrome(self):
        dump = self.dump()
        out = self.path("t.json")
        tadump.view(self, "export", "--format=chrome", "-o", out, dump)
        with open(out) as f:
            evs = json.load(f)["traceEvents"]
        inst = [e for e in evs if e["ph"] == "i"]
        for e in inst:
            self.assertEqual(e["s"], "t")
        msgs = sorted(e["args"]["text"] for e in inst if e["cat"] == "message")
        self.assertEqual(msgs, ["helper up", "level three loaded", "score 42"])
        self.assertEqual(sorted(e["name"] for e in inst if e["cat"] == "instant"),
                         ["checkpoint", "helper done"])
        self.assertEqual([e["name"] for e in inst if e["cat"] == "channel"],
                         ["channel net off", "channel net on"])
        counters = {}
        for e in evs:
            if e["ph"] == "C":
                counters.setdefault(e["name"], []).append(e["args"][e["name"]])
        self.assertEqual(counters, {"queue": list(range(100)),
                                    "ratio": [i / 4.0 for i in range(10)],
                                    "sent": [1, 2, 3, 4, 5]})
        tracks = [e for e in evs if e["ph"] == "M" and e["name"] == "thread_name"
                  and e["args"]["name"] == "frames: frame"]
        self.assertEqual(len(tracks), 1)
        frames = [e for e in evs if e["ph"] == "X" and e.get("cat") == "frame"]
        # The four frames `frames` counts, frame 0 from the thread's first event.
        self.assertEqual([e["name"] for e in frames], ["frame 0", "frame 1", "frame 2", "frame 3"])
        for e in frames:
            self.assertEqual((e["pid"], e["tid"]), (tracks[0]["pid"], tracks[0]["tid"]))
        zones = [e for e in evs if e["ph"] == "X" and e.get("cat") == "zone"]
        self.assertEqual(sorted(e["name"] for e in zones), ["send"] * 5 + ["work"])
        work = [e for e in zones if e["name"] == "work"][0]
        # A zone's text and value: an instant at its start (slices have
        # no args, which speedscope would glue to the name).
        wargs = [e for e in inst if e["cat"] == "zone,args"]
        self.assertEqual([(e["name"], e["ts"], e["tid"], e["args"]) for e in wargs],
                         [("work", work["ts"], work["tid"], {"text": "item 7", "value": 7})])
        for e in evs:
            if e["ph"] == "X":
                self.assertNotIn("args", e)

    def test_report_channel(self):
        dump = self.dump()

        def rows(*opts):
            rep = self.report(dump, *opts)
            return sorted((f["name"], f["module"] == "[zone]", f["calls"])
                          for f in rep["functions"])

        self.assertEqual(rows("--channel=user"), [("work", True, 1)])
        self.assertEqual(rows("--channel=functions"),
                         [("helper", False, 1), ("main", False, 1), ("send_one", False, 6),
                          ("work", False, 1)])
        self.assertEqual(rows("--channel=functions,user"),
                         sorted(rows("--channel=functions") + [("work", True, 1)]))
        self.assertEqual(rows("--channel=-net"), rows("--channel=functions,user"))
        self.assertEqual(rows("--channel=net"), [("send", True, 5)])
        self.assertEqual(rows("--channel=-io"), rows())
        self.assertEqual(rows("--channel=nosuch"), [])
        p = tadump.view(self, "report", "--channel=", dump, status=2)
        self.assertIn("--channel", p.stderr)

    def test_srcline(self):
        self.need_feature("srcline")
        # A zone's source is its site's file and line, not DWARF's.
        rep = self.report(self.dump(), "--srcline", "--channel=user,net")
        src = sorted((f["name"], f["srcline"]) for f in rep["functions"])
        self.assertEqual([(n, s.split("/")[-1]) for n, s in src],
                         [("send", "apiviews.c:18"), ("work", "apiviews.c:24")])

    def test_graph_and_flame(self):
        dump = self.dump()
        g = tadump.view_json(self, "graph", "--json", dump)

        def find(nodes, name, module):
            for n in nodes:
                if n["name"] == name and n["module"] == module:
                    return n
            self.fail("%s %s not in %s" % (name, module, [x["name"] for x in nodes]))

        main = find(g["tree"], "main", tahelp.os.path.join(tahelp.PROGRAMS, "apiviews-O2"))
        send_one = [n for n in main["children"] if n["name"] == "send_one"][0]
        self.assertEqual(find(send_one["children"], "send", "[zone]")["calls"], 5)
        work = [n for n in main["children"] if n["name"] == "work"][0]
        self.assertEqual(find(work["children"], "work", "[zone]")["calls"], 1)
        svg = self.path("f.svg")
        tadump.view(self, "flame", "-o", svg, dump)
        titles = [t.text for t in ET.parse(svg).getroot().iter(SVG + "title")]
        self.assertTrue(any(t.startswith("send\n[zone]\n") and "5 calls" in t for t in titles),
                        titles)


if __name__ == "__main__":
    tahelp.main()
