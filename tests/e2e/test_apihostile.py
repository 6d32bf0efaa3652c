# SPDX-License-Identifier: MIT
"""The manual API used badly (tests/programs/apihostile.c): a 100 KB zone
text (kept cut at 992 bytes, flagged), a message with %n (which writes
nothing), NULL texts, 10,000 distinct zone sites, an END without a BEGIN
(an EXT event naming the END's file and line), a NaN counter, zones left
open at exit (closed and counted open, as calls are), and BEGIN nested
beyond its depth of 256 (counted lost, cause zone-depth).  The program
prints the same with and without the agent and nothing else is lost."""

import math
import os
import struct

import tadump
import tahelp

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs",
                      "apihostile.c")


def line_of(marker):
    with open(SOURCE) as fh:
        for i, line in enumerate(fh, 1):
            if marker in line:
                return i
    raise ValueError(marker)


class ApiHostileTest(tahelp.Case):

    def run_both(self, lvl, *args):
        argv = [self.prog("apihostile-" + lvl)] + list(args)
        r = self.traced("preload", argv)
        plain = self.run_plain(argv)
        self.assertEqual((plain.returncode, plain.stderr), (0, ""))
        self.assertEqual(r.stdout, plain.stdout)
        return r

    def test_hostile(self):
        for lvl in tahelp.LEVELS:
            with self.subTest(lvl=lvl):
                r = self.run_both(lvl)
                # %n wrote nothing: the program's int is untouched.
                self.assertEqual(r.stdout, "n 12345\nsink 10000\n")
                rep = self.report(r.dump)
                self.assertTrue(rep["complete"])
                self.assertEqual((rep["lost"], rep["errors"]), (0, []))
                zones = {f["name"]: f for f in rep["functions"] if f["module"] == "[zone]"}
                funcs = {f["name"]: f for f in rep["functions"] if f["module"] != "[zone]"}
                self.assertEqual(len(zones), 10000 + 4)
                for i in range(10000):
                    self.assertEqual((zones["z%04d" % i]["calls"], zones["z%04d" % i]["open"]),
                                     (1, 0))
                for name in ("big", "messages"):
                    self.assertEqual((zones[name]["calls"], zones[name]["open"]), (1, 0))
                # Left open at exit: closed at the end and counted open.
                for name in ("left open", "left open inner"):
                    self.assertEqual((zones[name]["calls"], zones[name]["open"]), (1, 1))
                self.assertEqual(sorted(funcs), sorted(
                    ["main", "big_text", "messages", "unmatched_end", "nan_counter"] +
                    ["sites%d" % d for d in range(10)]))
                for name, f in funcs.items():
                    self.assertEqual((f["calls"], f["open"]), (1, 1 if name == "main" else 0))
                # Entries and exits: 15 calls less main's exit, 10,002 zones
                # and the two left open's entries.
                self.assertEqual(rep["events"], 15 * 2 - 1 + 10002 * 2 + 2)
                self.check_dump(tadump.Read(r.dump))

    def check_dump(self, d):
        self.assertEqual(len(d.site_named("z0000", 1)), 1)
        self.assertEqual(len([s for s in d.sites.values() if s[2].startswith("z")]), 10000)
        texts = [tadump.text_unpack(v) for v in d.ext(tadump.EXT_ZONE_TEXT)]
        self.assertEqual(texts, [("x" * 992, tadump.TEXT_F_CUT), ("(null)", 0)])
        msgs = [tadump.text_unpack(v) for v in d.ext(tadump.EXT_MESSAGE)]
        self.assertEqual(msgs, [("before after 7", 0), ("(null)", 0)])
        unmatched = d.ext(tadump.EXT_ZONE_UNMATCHED)
        self.assertEqual(len(unmatched), 1)
        kind, _chan, _name, path, line = d.sites[unmatched[0][0]]
        self.assertEqual((kind, os.path.basename(path), line),
                         (6, "apihostile.c", line_of("/* unmatched here */")))
        counters = {d.sites[v[0]][2]: v[1:] for v in d.ext(tadump.EXT_COUNTER)}
        nan = struct.unpack("<d", struct.pack("<Q", counters["nan"][1]))[0]
        self.assertTrue(counters["nan"][0] == 1 and math.isnan(nan))
        self.assertEqual(counters["inf"][0], 1)
        self.assertEqual(struct.unpack("<d", struct.pack("<Q", counters["inf"][1]))[0],
                         -math.inf)
        self.assertEqual(counters["min"], (0, 1 << 63))

    def test_deeper_than_256(self):
        for lvl in tahelp.LEVELS:
            with self.subTest(lvl=lvl):
                r = self.run_both(lvl, "deep")
                self.assertEqual(r.stdout, "deep\n")
                rep = self.report_raw(r.dump, "--json")
                self.assertIn("by cause: zone-depth 44", rep.stderr)
                rep = self.report(r.dump)
                self.assertEqual(rep["lost"], 44)
                self.assertEqual(rep["lost_by_cause"]["zone-depth"], 44)
                zones = {f["name"]: f for f in rep["functions"] if f["module"] == "[zone]"}
                self.assertEqual(list(zones), ["deep"])
                self.assertEqual((zones["deep"]["calls"], zones["deep"]["open"]), (256, 0))
                self.assertEqual(rep["events"], 2 * 2 + 256 * 2)


if __name__ == "__main__":
    tahelp.main()
