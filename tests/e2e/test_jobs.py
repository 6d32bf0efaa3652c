#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The analyzer on several cores (-j N, issue 18): every command's output,
messages and exit status are byte for byte those of -j1, on the sample
programs' dumps and on dumps with damage: chunks lost, a bad CRC, cut
short, without END, starting mid-stack, forks."""

import json
import os
import struct
import subprocess

import tadump
from tahelp import TRACEAGENT, Case, chunks, main, CHUNK_HEADER

JOBS = ("1", "2", "4")
GENDUMP = os.path.join(os.path.dirname(os.path.dirname(TRACEAGENT)), "tests", "unit",
                       "gendump")


def parallel(argv):
    """Does the command's walk run in the workers (not only LZ4)?"""
    if argv[0] in ("report", "graph", "flame", "diff", "counters", "frames"):
        return True
    # chrome's lines are formatted, perfetto's bundles deflated by jobs.
    return argv[0] == "export" and any(a in argv for a in ("--format=folded",
                                                            "--format=pprof",
                                                            "--format=chrome",
                                                            "--format=perfetto"))


class Jobs(Case):
    def outputs(self, dump, argv, out_file=None, jobs=JOBS):
        """(status, stdout, stderr, the written file) of argv with each -j."""
        res = {}
        for j in jobs:
            args = [TRACEAGENT] + argv[:1] + ["-j", j] + argv[1:]
            if out_file:
                args = [a.replace("@OUT", out_file) for a in args]
            p = subprocess.run(args + [dump] if dump else args, capture_output=True,
                               timeout=120)
            data = None
            if out_file and os.path.exists(out_file):
                with open(out_file, "rb") as fh:
                    data = fh.read()
                os.unlink(out_file)
            res[j] = (p.returncode, p.stdout, p.stderr, data)
        return res

    def same(self, dump, argv, out_file=None, jobs=None):
        # -j4 only for the commands whose workers do more than decompress.
        if jobs is None:
            jobs = JOBS if parallel(argv) else JOBS[:2]
        res = self.outputs(dump, argv, out_file, jobs)
        for j in jobs[1:]:
            self.assertEqual(res[j], res["1"], "%s -j%s differs from -j1 on %s"
                             % (" ".join(argv), j, dump))
        return res["1"]

    def all_commands(self, dump, pipe_ok=True):
        out = self.path("out")
        for argv in (["report"], ["report", "--json"], ["report", "--json", "--threads"],
                     ["graph", "--json"],
                     ["info", "--json"], ["counters", "--json"]):
            self.same(dump, argv)
        for fmt in ("chrome", "perfetto", "pprof", "folded"):
            self.same(dump, ["export", "--format=" + fmt, "-o", "@OUT"], out)
        self.same(dump, ["flame", "-o", "@OUT"], out)
        self.same(None, ["diff", "--json", dump, dump])
        self.same(dump, ["frames", "--json"])

    def test_samples(self):
        runs = (("fib-O2", ["20"]), ("threads-O2", []), ("fork-O2", []), ("exec-O2", [self.prog("fib-O2"), "12"]),
                ("longjmp-O2", []), ("jumps-O0", ["1"]), ("apiviews-O2", []),
                ("gameloop-O2", []), ("libcalls-O2", ["alloc"]))
        for prog, argv in runs:
            with self.subTest(prog=prog):
                r = self.traced("preload", [self.prog(prog)] + argv,
                                env={"TRACEAGENT_LIBCALLS": "all"})
                st = self.same(r.dump, ["report", "--json"])
                self.assertEqual(st[0], 0, st[2])
                # Every command on a few (the others only decompress in
                # parallel); report's variants, whose walk is parallel, on all.
                # (gameloop's in test_many_chunks, cut into many chunks.)
                if prog in ("fib-O2", "fork-O2", "apiviews-O2"):
                    self.all_commands(r.dump)
                else:
                    for argv in (["report"], ["report", "--json", "--threads"]):
                        self.same(r.dump, argv)

    def big(self, events, threads):
        if not os.path.exists(GENDUMP):
            self.skipTest("gendump was not built (tests/unit)")
        path = self.fresh("big")
        subprocess.run([GENDUMP, path, str(events), str(threads)], check=True, timeout=120)
        return path

    def variant(self, src, name, edit):
        """A copy of src with its chunks list edited (edit(data, chunks)
        returns the new bytes)."""
        with open(src, "rb") as fh:
            data = fh.read()
        out = self.path(name + ".trace")
        with open(out, "wb") as fh:
            fh.write(edit(data, chunks(src)))
        return out

    def test_damage(self):
        src = self.big(1500000, 3)
        cs = chunks(src)
        ev = [c for c in cs if c[1] == tadump.EVENTS]
        self.assertGreater(len(ev), 20)
        mid = ev[len(ev) // 2]

        def drop(cset):
            def edit(data, _):
                out = bytearray()
                end = 0
                for off, _, _, stored in cs:
                    if off not in cset:
                        out += data[off:off + CHUNK_HEADER + stored]
                    end = off + CHUNK_HEADER + stored
                return bytes(data[:cs[0][0]]) + bytes(out) + data[end:]
            return edit

        def badcrc(data, _):
            b = bytearray(data)
            b[mid[0] + CHUNK_HEADER + mid[3] // 2] ^= 0x55
            return bytes(b)

        variants = {
            "whole": lambda data, _: data,
            "lost": drop({ev[5][0], ev[6][0], mid[0]}),
            "badcrc": badcrc,
            "truncated": lambda data, _: data[:mid[0] + CHUNK_HEADER + mid[3] // 3],
            "noend": drop({cs[-1][0]}),
            # A flight recorder's cut: the first chunks of the threads are
            # gone, the first kept start inside functions.
            "midstack": drop({c[0] for c in ev[:7]}),
        }
        for name, edit in variants.items():
            with self.subTest(variant=name):
                dump = self.variant(src, name, edit)
                st = self.same(dump, ["report", "--json", "--threads"])
                # Damage is an error, chunks missing or the END a warning:
                # none is a whole dump (exit 1).
                self.assertEqual(st[0], 0 if name == "whole" else 1,
                                 (name, st[2]))
                # -j4 too where the stack is rebuilt from a snapshot (the
                # outputs are large: time is short).
                jobs = JOBS if name in ("lost", "midstack") else JOBS[:2]
                for argv in (["report"], ["graph", "--json"], ["info", "--json"]):
                    self.same(dump, argv, jobs=jobs)
                self.same(dump, ["export", "--format=folded", "-o", "@OUT"], self.path("f"),
                          jobs=jobs)

    def test_synthetic_midstack(self):
        # A thread whose first chunk (seq 0) starts three frames deep, then
        # a chunk whose snapshot disagrees (a loss the seq does not show).
        d = tadump.Dump()
        d.process(1000, "/bin/x")
        d.module("/bin/x", 0, 0x1000, 0x9000)
        d.thread_start(7, 1000, "t")
        E, X = tadump.ENTER, tadump.EXIT
        d.events(7, [(2000, E, 0x1400), (2100, X), (2200, X), (2300, E, 0x1500)],
                 stack=(0x1100, 0x1200, 0x1300))
        d.events(7, [(2400, X), (2500, X), (2600, E, 0x1600), (2700, X)], stack=(0x1100, 0x1500))
        d.events(7, [(2800, X), (2900, E, 0x1700), (3000, X), (3100, X)], stack=(0x1100, 0x1200))
        d.thread_end(7, 3200, 14)
        d.end(3300, 14, 1)
        path = self.path("synth.trace")
        d.write(path)
        st = self.same(path, ["report", "--json", "--threads"])
        self.assertEqual(st[0], 0, st[2])
        self.all_commands(path)

    def test_many_chunks(self):
        # A chunk every millisecond: the calls, zones, counters and frame
        # marks of three threads cut into a hundred chunks, most of them
        # inside calls, and the workers' parts grafted in order.
        r = self.traced("preload", [self.prog("gameloop-O2")],
                        env={"TRACEAGENT_FLUSH_MS": "1"})
        ev = [c for c in chunks(r.dump) if c[1] == tadump.EVENTS]
        self.assertGreater(len(ev), 40)
        self.all_commands(r.dump)
        info = json.loads(subprocess.run([TRACEAGENT, "info", "--json", r.dump],
                                         capture_output=True, check=True).stdout)
        tids = [t["tid"] for t in info["processes"][0]["threads"]]
        self.assertEqual(len(tids), 3)
        for argv in (["graph", "--json", "--threads"], ["graph", "--tid=%d" % tids[1]],
                     ["flame", "--tid=%d,%d" % (tids[0], tids[2]), "-o", "@OUT"],
                     ["report", "--frames", "--json"], ["counters", "--json", "--svg", "@OUT"],
                     ["export", "--format=folded", "--threads", "-o", "@OUT"]):
            self.same(r.dump, argv, self.path("o") if "@OUT" in argv else None)
        # The timeline's exports with their filters: zones (their texts on
        # slices that end chunks later), counters, messages, frame sets.
        # The time range: the middle of the run, however long the machine
        # (or qemu) made it.
        ms = info["duration_ns"] // 1000000
        window = "--time-range=%dms-%dms" % (ms // 5, ms * 7 // 10)
        for fmt in ("chrome", "perfetto"):
            for opts in (["--min-duration=20us"],
                         ["--tid=%d,%d" % (tids[0], tids[2]), window]):
                argv = ["export", "--format=" + fmt, "-o", "@OUT"] + opts
                st = self.same(r.dump, argv, self.path("o"))
                self.assertEqual(st[0], 0, (argv, st[2]))
                self.assertGreater(len(st[3]), 1000, argv)

    def test_option(self):
        dump = self.traced("preload", [self.prog("fib-O2"), "10"]).dump
        for bad in ("0", "x", "1025", "-1"):
            p = subprocess.run([TRACEAGENT, "report", "--jobs=" + bad, dump], capture_output=True,
                               text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("traceagent report: --jobs: '%s' is not a number of jobs from 1 to 1024"
                          % bad, p.stderr)
        ref = subprocess.run([TRACEAGENT, "report", dump], capture_output=True).stdout
        for form in (["-j3"], ["--jobs", "3"], ["--jobs=3"], ["-j", "1"]):
            p = subprocess.run([TRACEAGENT, "report"] + form + [dump], capture_output=True)
            self.assertEqual((p.returncode, p.stdout), (0, ref), form)


if __name__ == "__main__":
    main()
