# SPDX-License-Identifier: MIT
"""Run-time zone names, frames with gaps, counter units, application info
and sections (issue 37), with apizone.c's known numbers: the dump's
records, report (a row per name, the overflow row), frames (the set with
gaps and its hitch), counters (units), info (app info), replay, the Chrome
and the Perfetto export (protoc against Perfetto's own field numbers), and
--section on every view."""

import json
import re
import shutil
import subprocess
import zlib

import tahelp
import tadump
import test_perfetto as tp
from tahelp import LEVELS

EXT_FRAME_BEGIN, EXT_FRAME_END, EXT_SECTION_ENTER, EXT_SECTION_LEAVE = 26, 27, 28, 29
EXT_COUNTER_CONFIG, EXT_APP_INFO = 30, 31
SITE_ZONE, SITE_ZONE_DYN, SITE_SECTION, SITE_APP_INFO, SITE_COUNTER_CONFIG = 1, 8, 9, 10, 11
OVERFLOW = "[traceagent zone names overflow]"

# name -> calls, as apizone.c makes them.
ZONES = {"item 0": 1, "item 1": 2, "item 2": 3, "item 3": 4, "item 4": 5,
         "loaded level": 2, "(null)": 1, "x" * 255: 1, "bad \ufffd\ufffd utf-8": 1}


def zone_rows(rep):
    return {f["name"]: f["calls"] for f in rep["functions"] if f["module"] == "[zone]"}


def fn_calls(rep):
    return {f["name"]: f["calls"] for f in rep["functions"]}


class ApiZoneTest(tahelp.Case):

    def dump(self, level="O2", *argv):
        return tadump.traced_dump(self, "apizone-" + level, *argv)

    def test_records(self):
        """The dump: each distinct name a ZONE site of the agent's (the
        long one cut at 255 bytes), the call sites as ZONE_DYN; the frame,
        section, unit and app info events, exact in number."""
        r = tadump.Read(self.dump())
        names = sorted(s[2] for s in r.sites.values() if s[0] == SITE_ZONE)
        self.assertEqual(len(names), len(ZONES))
        self.assertIn("x" * 255, names)
        self.assertIn("(null)", names)
        self.assertEqual(len([s for s in r.sites.values() if s[0] == SITE_ZONE_DYN]), 3)
        self.assertEqual(len(r.ext(EXT_FRAME_BEGIN)), 6)
        self.assertEqual(len(r.ext(EXT_FRAME_END)), 7)
        self.assertEqual(len(r.ext(EXT_SECTION_ENTER)), 3)
        self.assertEqual(len(r.ext(EXT_SECTION_LEAVE)), 3)
        self.assertEqual(sorted(v[1] for v in r.ext(EXT_COUNTER_CONFIG)), [1, 2])
        texts = [tadump.text_unpack(v)[0] for v in r.ext(EXT_APP_INFO)]
        self.assertEqual(texts, ["build abc123", "levels 3"])

    def test_report_rows(self):
        """A row per distinct name, whichever call site and channel; the
        name a zone's, so graph and flame show it as one."""
        for level in LEVELS:
            with self.subTest(level=level):
                rep = self.report(self.dump(level))
                self.assertEqual(zone_rows(rep), ZONES)

    def test_overflow(self):
        """Past 4096 distinct names every new one is the overflow row's."""
        dump = self.traced("preload", [self.prog("apizone-O2"), "overflow", "5000"]).dump
        rows = zone_rows(self.report(dump))
        self.assertEqual(rows.pop(OVERFLOW), 5000 - 4096)
        self.assertEqual(len(rows), 4096)
        self.assertEqual(set(rows.values()), {1})
        self.assertEqual(rows["n0"], 1)
        self.assertEqual(rows["n4095"], 1)

    def test_threads(self):
        """4 threads interning the same 100 names at once: one site per
        name, 12 calls each."""
        dump = self.traced("preload", [self.prog("apizone-O2"), "threads"]).dump
        r = tadump.Read(dump)
        names = sorted(s[2] for s in r.sites.values() if s[0] == SITE_ZONE)
        self.assertEqual(names, sorted("t%d" % i for i in range(100)))
        self.assertEqual(zone_rows(self.report(dump)), {"t%d" % i: 12 for i in range(100)})

    def test_frames_with_gaps(self):
        """6 frames, the gaps (20 ms each) in none; the 60 ms one a hitch
        over a 50 ms budget; the END without a BEGIN left out."""
        dump = self.dump()
        got = tadump.view_json(self, "frames", "--json", "--set=physics", "--budget=50ms", dump)
        s = got["frame_sets"][0]
        self.assertEqual((s["name"], s["count"], s["gaps"], s["unmatched"]),
                         ("physics", 6, True, 1))
        self.assertIn(3, [h["index"] for h in s["hitches"]])
        self.assertGreaterEqual([h for h in s["hitches"] if h["index"] == 3][0]["duration_ns"],
                                60 * 10**6)
        text = tadump.view(self, "frames", "--set=physics", dump).stdout
        self.assertIn('frame set "physics" of process', text)
        self.assertIn("6 frames with gaps", text)

    def test_counters_units(self):
        dump = self.dump()
        got = {c["name"]: c for c in tadump.view_json(self, "counters", "--json", dump)["counters"]}
        self.assertEqual((got["heap"]["unit"], got["heap"]["min"], got["heap"]["max"]),
                         ("bytes", 1536, 3 * 1048576))
        self.assertEqual((got["load"]["unit"], got["load"]["last"]), ("percent", 42.5))
        rows = {l.split()[0]: l.split()
                for l in tadump.view(self, "counters", dump).stdout.splitlines()}
        self.assertEqual(rows["heap"], ["heap", "3", "1.5KiB", "3.0MiB", "1.0MiB", "2.0KiB"])
        self.assertEqual(rows["load"], ["load", "1", "42.5%", "42.5%", "42.5%", "42.5%"])

    def test_info_app_info(self):
        dump = self.dump()
        got = tadump.view_json(self, "info", "--json", dump)
        self.assertEqual([a["text"] for a in got["app_info"]], ["build abc123", "levels 3"])
        text = tadump.view(self, "info", dump).stdout.splitlines()
        self.assertEqual([l for l in text if l.startswith("app info:")],
                         ["app info:      build abc123", "app info:      levels 3"])

    def raw_view(self, *args):
        """A view's stdout as text, the bytes a program's names hold that
        are not UTF-8 replaced (replay prints names as they are)."""
        p = subprocess.run([tahelp.TRACEAGENT] + list(args), env=tahelp.clean_env(),
                           capture_output=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.decode(errors="replace")

    def test_replay_lines(self):
        out = self.raw_view("replay", self.dump())
        lines = [re.sub(r"^.{12} .{8}  ", "", l).strip() for l in out.splitlines()]
        self.assertEqual(sum(l == "| frame begin physics" for l in lines), 6)
        self.assertEqual(sum(l == "| frame end physics" for l in lines), 7)
        self.assertEqual(sum(l == "> section level 1" for l in lines), 2)
        self.assertEqual(sum(l == "< section bench" for l in lines), 1)
        self.assertIn('! app info "build abc123"', lines)
        self.assertIn("# counter heap unit bytes", lines)

    def test_chrome(self):
        dump = self.dump()
        out = self.path("c.json")
        tadump.view(self, "export", "--format=chrome", "-o", out, dump)
        with open(out) as fh:
            doc = json.load(fh)
        self.assertEqual(doc["otherData"], {"app_info": ["build abc123", "levels 3"],
                                            "counter_units": {"heap": "bytes",
                                                              "load": "percent"}})
        tracks = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
                  if e["ph"] == "M" and e["name"] == "thread_name"}
        frames = [e for e in doc["traceEvents"]
                  if e.get("cat") == "frame" and tracks[e["tid"]] == "frames: physics"]
        self.assertEqual([e["name"] for e in frames], ["physics %d" % i for i in range(6)])
        for a, b in zip(frames, frames[1:]):
            self.assertLess(a["ts"] + a["dur"], b["ts"])  # the gaps are no frame
        sections = {}
        for e in doc["traceEvents"]:
            if e.get("cat") == "section":
                sections.setdefault(tracks[e["tid"]], []).append(e["name"])
        self.assertEqual(sections, {"section: level 1": ["level 1"] * 2,
                                    "section: bench": ["bench"]})
        zones = [e["name"] for e in doc["traceEvents"] if e.get("cat") == "zone"]
        self.assertEqual({n: zones.count(n) for n in set(zones)}, ZONES)

    def test_perfetto(self):
        if not shutil.which("protoc"):
            self.skipTest("protoc not installed (Debian: protobuf-compiler)")
        dump = self.dump()
        out = self.path("p.pftrace")
        p = tadump.view(self, "export", "--format=perfetto", "-o", out, dump)
        self.assertEqual((p.stdout, p.stderr), ("", ""))
        with open(out, "rb") as fh:
            raw = tp.inflate(fh.read())
        d = subprocess.run(["protoc", "--proto_path=" + tp.PROTO_DIR,
                            "--decode=perfetto.protos.Trace", tp.PROTO],
                           input=raw, capture_output=True, timeout=tahelp.TIMEOUT)
        self.assertEqual((d.returncode, d.stderr), (0, b""))
        # protoc writes the bytes of a string past ASCII as octal escapes.
        text = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), d.stdout)
        tr = tp.Trace(tp.parse_text(text.decode())["packet"])
        names = {u: tp.one(dsc, "name") for u, dsc in tr.tracks.items()}
        units = {names[u]: tp.one(tr.tracks[u], "counter", {}) for u in tr.counters}
        self.assertEqual(units["heap"], {"unit": ["UNIT_SIZE_BYTES"]})
        self.assertEqual(units["load"], {"unit_name": ["%"]})
        by_track = {}
        for sl in tr.slices:
            by_track.setdefault(names.get(sl["track"]), []).append(sl)
        self.assertEqual([sl["name"] for sl in by_track["frames: physics"]],
                         ["physics %d" % i for i in range(6)])
        self.assertEqual([sl["name"] for sl in by_track["section: level 1"]], ["level 1"] * 2)
        self.assertEqual([sl["name"] for sl in by_track["section: bench"]], ["bench"])
        inst = [i[1] for i in tr.instants]
        self.assertIn("app info: build abc123", inst)
        self.assertIn("app info: levels 3", inst)
        zones = [sl["name"] for sl in tr.slices if sl["cat"] == ["zone"]]
        self.assertEqual({n: zones.count(n) for n in set(zones)}, ZONES)

    def test_section_report(self):
        """Calls clipped to the section: step 4 times in "level 1" (spans'
        one included), other never; in "bench" step twice, other once,
        spans (running when it began) once."""
        for level in LEVELS:
            with self.subTest(level=level):
                dump = self.dump(level)
                whole = fn_calls(self.report(dump))
                self.assertEqual((whole["step"], whole["other"], whole["spans"]), (27, 2, 1))
                lvl = fn_calls(self.report(dump, "--section", "level 1"))
                self.assertEqual((lvl.get("step"), lvl.get("other"), lvl.get("spans")),
                                 (4, None, 1))
                self.assertNotIn("item 0", lvl)
                bench = fn_calls(self.report(dump, "--section=bench"))
                self.assertEqual((bench.get("step"), bench.get("other"), bench.get("spans")),
                                 (2, 1, 1))

    def test_section_views(self):
        """--section on the other views: the events and calls inside it."""
        dump = self.dump()
        sec = ["--section", "level 1"]
        # No frame of physics and no counter sample is inside "level 1".
        p = tadump.view(self, "frames", "--json", *sec, dump)
        self.assertEqual(json.loads(p.stdout)["frame_sets"], [])
        self.assertEqual(tadump.view_json(self, "counters", "--json", *sec, dump),
                         {"counters": []})
        # A unit given outside the section holds inside it.
        got = tadump.view_json(self, "counters", "--json", "--section=bench", dump)
        self.assertEqual([(c["name"], c["samples"], c["last"], c["unit"])
                          for c in got["counters"]], [("heap", 1, 2048, "bytes")])
        out = self.path("u.json")
        tadump.view(self, "export", "--format=chrome", "--section=bench", "-o", out, dump)
        with open(out) as fh:
            self.assertEqual(json.load(fh)["otherData"]["counter_units"],
                             {"heap": "bytes", "load": "percent"})
        lines = self.raw_view("replay", *sec, dump).splitlines()
        # main once per occurrence, from the ENTER; the LEAVE is outside;
        # the units and app info, said before, at the section's start.
        self.assertEqual([re.sub(r"^.{12} .{8}  ", "", l).strip() for l in lines[1:]],
                         ["main() {", '! app info "build abc123"', '! app info "levels 3"',
                          "# counter heap unit bytes", "# counter load unit percent [net]",
                          "> section level 1", "step();", "step();",
                          "} /* main */", "main() {", "> section level 1", "spans() {",
                          "> section bench", "step();", "} /* spans */", "step();",
                          "} /* main */"])
        out = self.path("s.json")
        tadump.view(self, "export", "--format=chrome", *sec, "-o", out, dump)
        with open(out) as fh:
            doc = json.load(fh)
        calls = [e["name"] for e in doc["traceEvents"] if e.get("ph") == "X"
                 and e.get("cat", "").startswith("function")]
        self.assertEqual(calls.count("step"), 4)
        self.assertEqual(calls.count("other"), 0)
        g = tadump.view_json(self, "graph", "--json", *sec, dump)
        self.assertIn("step", json.dumps(g))
        self.assertNotIn('"other"', json.dumps(g))
        # --min-width=0: a step takes no tick of a coarse counter (qemu-user's
        # steps once a microsecond) and would be 0 pixels wide.
        svg = tadump.view(self, "flame", "-o", "-", "--min-width=0", *sec, dump).stdout
        self.assertIn("step", svg)
        self.assertNotIn("other", svg)
        folded = tadump.view(self, "export", "--format=folded", "-o", "-", *sec, dump).stdout
        self.assertIn("step", folded)
        self.assertNotIn("other", folded)
        pp = self.path("s.pb.gz")
        tadump.view(self, "export", "--format=pprof", "-o", pp, *sec, dump)
        with open(pp, "rb") as fh:
            strings = zlib.decompress(fh.read(), 31)
        self.assertIn(b"step", strings)
        self.assertNotIn(b"other", strings)
        d = tadump.view_json(self, "diff", "--json", *sec, dump, dump)
        self.assertNotIn('"other"', json.dumps(d))

    def test_section_unknown(self):
        dump = self.dump()
        p = tadump.view(self, "report", "--section", "nowhere", dump)
        self.assertIn("no section 'nowhere'", p.stderr)


if __name__ == "__main__":
    tahelp.main()
