# SPDX-License-Identifier: MIT
"""Keeping only the slow frames (issue 37 item 9): TRACEAGENT_KEEP=
slow-frames:BUDGET[,before=K][,set=NAME] and record --keep.  keepframes
runs N frames; frame f (f % 50 == 7) is busy 60 ms, the others take
microseconds; each frame calls run_frame 1, step 3, worker_job 1 (on the
worker thread) and crunch 2, and slow_part 1 in the slow ones.  Which
frames are slow is judged by the agent's clock; the program writes its
own times of the marks, so a frame a busy machine made slow is expected
as well (the two clocks differ by the microseconds around a mark)."""

import csv
import io
import json
import os
import shutil
import subprocess

import tadump
import tahelp
import test_perfetto

BUDGET = "20ms"
BUDGET_NS = 20000000
PER_FRAME = {"run_frame": 1, "step": 3, "worker_job": 1, "crunch": 2}


class KeepTest(tahelp.Case):

    def run_it(self, frames, spec, mode="preload", env=None):
        times = self.path("times-%d" % len(os.listdir(self.dir)))
        e = {"KEEPFRAMES_TIMES": times}
        e.update(env or {})
        argv = [self.prog("keepframes-O2"), str(frames)]
        if mode == "preload":
            e["TRACEAGENT_KEEP"] = spec
            r = self.traced(mode, argv, env=e)
        else:
            r = self.traced(mode, argv, env=e, options=["--keep", spec])
        self.assertRegex(r.stdout, r"^keepframes: %d frames, " % frames)
        with open(times) as f:
            marks = [int(x) for x in f.read().split()]
        self.assertEqual(len(marks), 2 * frames if "KEEPFRAMES_GAPS" in e else frames + 1)
        return r.dump, marks

    def expected(self, marks, before, budget_ns=BUDGET_NS):
        """The slow frames (1..N) and the frames kept, from the program's
        own times."""
        slow = [f for f in range(1, len(marks)) if marks[f] - marks[f - 1] > budget_ns]
        kept = set()
        for f in slow:
            kept.update(range(max(1, f - before), f + 1))
        return slow, sorted(kept)

    def check(self, dump, marks, before, set_name="frame"):
        slow, kept = self.expected(marks, before)
        # The busy frames are slow whatever the machine.
        self.assertTrue({f for f in range(1, len(marks)) if f % 50 == 7} <= set(slow), slow)
        warn = ("traceagent: %s: warning: kept only the slow frames at record time "
                "(TRACEAGENT_KEEP: frames of set \"%s\" over 20 ms and %d before each): "
                "%d of %d frames seen kept, %d slow; the rest was let go: this is not a "
                "whole profile\n" % (dump, set_name, before, len(kept), len(marks) - 1,
                                     len(slow)))
        fr = tadump.view_json(self, "frames", "--json", dump, stderr=warn)
        sets = {s["name"]: s for s in fr["frame_sets"]}
        self.assertEqual(list(sets), ["frame"])
        s = sets["frame"]
        self.assertEqual(s["count"], len(kept))
        self.assertEqual(s["threshold_ns"], BUDGET_NS)
        self.assertEqual(len(s["hitches"]), len(slow))
        k = s["keep"]
        self.assertEqual((k["budget_ns"], k["before"], k["set"]), (BUDGET_NS, before, set_name))
        self.assertEqual((k["frames_seen"], k["frames_slow"], k["frames_kept"]),
                         (len(marks) - 1, len(slow), len(kept)))
        self.assertEqual((k["events_let_go_early"], k["windows_partial"], k["windows_lost"],
                          k["marks_unjudged"]), (0, 0, 0, 0))
        self.assertGreater(k["events_let_go"], 0)
        # Exactly the kept frames' calls, and the two calls open across
        # them (entered before the first window, left after the last).
        rep = self.report(dump)
        self.assertTrue(rep["complete"])
        self.assertEqual((rep["lost"], rep["errors"]), (0, []))
        self.assertEqual(rep["keep"], k)
        funcs = self.functions(rep)
        want = {n: c * len(kept) for n, c in PER_FRAME.items()}
        want["slow_part"] = len([f for f in kept if f % 50 == 7]) or None
        want.update({"game": 1, "worker_main": 1})
        self.assert_calls(funcs, want)
        self.assertEqual(set(funcs), {n for n, c in want.items() if c})
        info = self.info(dump)
        self.assertEqual(info["processes"][0]["keep"], k)
        return kept

    def test_env_before_1(self):
        dump, marks = self.run_it(200, "slow-frames:" + BUDGET)
        kept = self.check(dump, marks, 1)
        self.assertTrue({6, 7, 56, 57, 106, 107, 156, 157} <= set(kept))

    def test_record_before_2(self):
        dump, marks = self.run_it(120, "slow-frames:%s,before=2,set=frame" % BUDGET,
                                  mode="record")
        kept = self.check(dump, marks, 2)
        self.assertTrue({5, 6, 7, 55, 56, 57, 105, 106, 107} <= set(kept))

    def test_before_0(self):
        dump, marks = self.run_it(60, "slow-frames:" + BUDGET + ",before=0")
        self.check(dump, marks, 0)

    def test_no_such_set(self):
        """A set never marked: nothing judged, nothing kept, the END
        whole."""
        dump, marks = self.run_it(60, "slow-frames:%s,set=physics" % BUDGET)
        rep = self.report(dump)
        self.assertTrue(rep["complete"])
        self.assertEqual(self.functions(rep), {})
        k = rep["keep"]
        self.assertEqual((k["set"], k["frames_seen"], k["frames_kept"], k["windows"]),
                         ("physics", 0, 0, 0))

    def windows(self, slow, before):
        """The windows of frames (first, last) the agent keeps: each slow
        frame's K before it and itself, those that share a frame made one
        (frames side by side are apart: a gap lies between them)."""
        wins = []
        for f in slow:
            lo = max(1, f - before)
            if wins and lo <= wins[-1][1]:
                wins[-1] = (wins[-1][0], f)
            else:
                wins.append((lo, f))
        return wins

    def test_gaps(self):
        """Frames with gaps (TA_FRAME_BEGIN/END): a frame is BEGIN..END,
        judged by that length alone.  keepframes with KEEPFRAMES_GAPS=1:
        120 frames of microseconds but 7, 57 and 107 (60 ms); load(f) in
        the gap before frame f, 30 ms in 12 of them (f % 10 == 3: gaps
        longer than the budget, no frame of their own) and microseconds
        in the others.  A window runs from the BEGIN of its first frame to
        the END of the slow one: the gaps between its frames are in it,
        the gap before it is not."""
        dump, marks = self.run_it(120, "slow-frames:%s,before=2" % BUDGET,
                                  env={"KEEPFRAMES_GAPS": "1"})
        n = 120
        begin, end = marks[0:2 * n:2], marks[1:2 * n:2]
        slow = [f for f in range(1, n + 1) if end[f - 1] - begin[f - 1] > BUDGET_NS]
        self.assertTrue({7, 57, 107} <= set(slow), slow)
        wins = self.windows(slow, 2)
        kept = [f for lo, hi in wins for f in range(lo, hi + 1)]
        # load(f) lies between frames f - 1 and f: kept when both are in
        # one window.
        loads = [f for lo, hi in wins for f in range(lo + 1, hi + 1)]
        warn = ("traceagent: %s: warning: kept only the slow frames at record time "
                "(TRACEAGENT_KEEP: frames of set \"frame\" over 20 ms and 2 before each): "
                "%d of %d frames seen kept, %d slow; the rest was let go: this is not a "
                "whole profile\n" % (dump, len(kept), n, len(slow)))
        fr = tadump.view_json(self, "frames", "--json", dump, stderr=warn)
        self.assertEqual([s["name"] for s in fr["frame_sets"]], ["frame"])
        s = fr["frame_sets"][0]
        self.assertEqual((s["count"], s["gaps"], s["unmatched"]), (len(kept), True, 0))
        self.assertEqual(s["threshold_ns"], BUDGET_NS)
        self.assertEqual(len(s["hitches"]), len(slow))
        k = s["keep"]
        self.assertEqual((k["budget_ns"], k["before"], k["set"]), (BUDGET_NS, 2, "frame"))
        self.assertEqual((k["frames_seen"], k["frames_slow"], k["frames_kept"], k["windows"]),
                         (n, len(slow), len(kept), len(wins)))
        self.assertEqual((k["events_let_go_early"], k["windows_partial"], k["windows_lost"],
                          k["marks_unjudged"]), (0, 0, 0, 0))
        rep = self.report(dump)
        self.assertTrue(rep["complete"])
        self.assertEqual((rep["lost"], rep["errors"]), (0, []))
        funcs = self.functions(rep)
        want = {n_: c * len(kept) for n_, c in PER_FRAME.items()}
        want["slow_part"] = len([f for f in kept if f % 50 == 7]) or None
        want["load"] = len(loads) or None
        want.update({"game": 1, "game_gaps": 1, "worker_main": 1})
        self.assert_calls(funcs, want)
        self.assertEqual(set(funcs), {n_ for n_, c in want.items() if c})

    def frame_slices(self, dump, warn):
        """The frame track's slices of the Chrome export and of the
        Perfetto one (decoded by protoc, test_perfetto's reader), each as
        (name, start ns, length ns); the Perfetto one None without
        protoc."""
        out = self.fresh("chrome") + ".json"
        p = tadump.view(self, "export", "--format=chrome", "-o", out, dump)
        self.assertEqual((p.stdout, p.stderr), ("", warn))
        with open(out) as fh:
            doc = json.load(fh)
        tracks = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
                  if e["ph"] == "M" and e["name"] == "thread_name"}
        chrome = [(e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000))
                  for e in doc["traceEvents"] if e.get("cat") == "frame"]
        self.assertEqual({tracks[e["tid"]] for e in doc["traceEvents"] if e.get("cat") == "frame"},
                         {"frames: frame"})
        if not shutil.which("protoc"):
            return chrome, None
        out = self.fresh("perfetto") + ".pftrace"
        p = tadump.view(self, "export", "--format=perfetto", "-o", out, dump)
        self.assertEqual((p.stdout, p.stderr), ("", warn))
        with open(out, "rb") as fh:
            raw = test_perfetto.inflate(fh.read())
        d = subprocess.run(["protoc", "--proto_path=" + test_perfetto.PROTO_DIR,
                            "--decode=perfetto.protos.Trace", test_perfetto.PROTO],
                           input=raw, capture_output=True, timeout=tahelp.TIMEOUT)
        self.assertEqual((d.returncode, d.stderr), (0, b""))
        tr = test_perfetto.Trace(test_perfetto.parse_text(d.stdout.decode())["packet"])
        names = {u: test_perfetto.one(t, "name") for u, t in tr.tracks.items()}
        pf = [(sl["name"], sl["start"] - tr.t0, sl["end"] - sl["start"]) for sl in tr.slices
              if names.get(sl["track"]) == "frames: frame"]
        return chrome, pf

    def check_exports(self, dump, nkept, warn, sql=True):
        """The exports' frames are the kept frames alone, those `frames`
        counts, at its times: none across the time let go between two
        windows; so are the rows of `sql`'s frame table (TA_FRAME_MARK's
        sets only: sql)."""
        p = tadump.view(self, "frames", "--json", "--budget=1ns", dump)
        self.assertEqual(p.stderr, warn)
        s = json.loads(p.stdout)["frame_sets"][0]
        want = [("frame %d" % h["index"], h["start_ns"], h["duration_ns"])
                for h in s["hitches"]]
        self.assertEqual(len(want), nkept)
        chrome, pf = self.frame_slices(dump, warn)
        for got in (chrome, pf):
            if got is None:
                continue
            self.assertEqual(len(got), nkept)
            self.assertEqual([g[:2] for g in got], [w[:2] for w in want])
            # Each end rounded to the ns: 1 ns off the length at most.
            for g, w in zip(got, want):
                self.assertLessEqual(abs(g[2] - w[2]), 1, (g, w))
        if not sql:
            return
        p = tadump.view(self, "sql", "--csv", dump,
                        "SELECT number, ts, dur, name FROM frame ORDER BY number")
        self.assertEqual(p.stderr, warn)
        rows = list(csv.reader(io.StringIO(p.stdout)))[1:]
        self.assertEqual([(int(r[0]), r[3]) for r in rows], [(i, "frame") for i in range(nkept)])
        ts = [int(r[1]) for r in rows]
        self.assertEqual([t - ts[0] for t in ts], [w[1] - want[0][1] for w in want])
        for r, w in zip(rows, want):
            self.assertLessEqual(abs(int(r[2]) - w[2]), 1, (r, w))

    def test_exports_marks(self):
        """TA_FRAME_MARK's frames: kept 6, 7, 56, 57, 106, 107 (and those
        a busy machine made slow) have a slice each in the exports'
        frame track, and the stretches between them none."""
        dump, marks = self.run_it(120, "slow-frames:" + BUDGET)
        slow, kept = self.expected(marks, 1)
        warn = ("traceagent: %s: warning: kept only the slow frames at record time "
                "(TRACEAGENT_KEEP: frames of set \"frame\" over 20 ms and 1 before each): "
                "%d of 120 frames seen kept, %d slow; the rest was let go: this is not a "
                "whole profile\n" % (dump, len(kept), len(slow)))
        self.check_exports(dump, len(kept), warn)

    def test_exports_gaps(self):
        """TA_FRAME_BEGIN/END's frames: the same, the gaps between the
        frames of a window outside every slice."""
        dump, marks = self.run_it(120, "slow-frames:%s,before=2" % BUDGET,
                                  env={"KEEPFRAMES_GAPS": "1"})
        begin, end = marks[0::2], marks[1::2]
        slow = [f for f in range(1, 121) if end[f - 1] - begin[f - 1] > BUDGET_NS]
        nkept = sum(hi - lo + 1 for lo, hi in self.windows(slow, 2))
        warn = ("traceagent: %s: warning: kept only the slow frames at record time "
                "(TRACEAGENT_KEEP: frames of set \"frame\" over 20 ms and 2 before each): "
                "%d of 120 frames seen kept, %d slow; the rest was let go: this is not a "
                "whole profile\n" % (dump, nkept, len(slow)))
        self.check_exports(dump, nkept, warn, sql=False)

    def test_bad_spec(self):
        """A bad value is said once; every frame is then kept."""
        r = self.run_preload([self.prog("keepframes-O2"), "60"],
                             env={"TRACEAGENT_KEEP": "slow-frames:fast"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr_lines(),
                         ["traceagent: TRACEAGENT_KEEP='slow-frames:fast': BUDGET is not a "
                          "duration (like 16.7ms, 500us); every frame is kept"])
        funcs = self.functions(self.report(r.dump))
        self.assert_calls(funcs, {"run_frame": 60, "step": 180, "crunch": 120})
        p = self.run_record([self.prog("keepframes-O2"), "1"],
                            options=["--keep", "slow-frames:20ms,before=65"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("--keep=slow-frames:20ms,before=65: not slow-frames:", p.stderr)

    def test_budget_with_decimals(self):
        """A 60 Hz frame's budget, 16.7ms, as record and the agent take it."""
        r = self.traced("record", [self.prog("keepframes-O2"), "10"],
                        options=["--keep", "slow-frames:16.7ms"])
        k = self.info(r.dump)["processes"][0]["keep"]
        self.assertEqual((k["budget_ns"], k["frames_seen"]), (16700000, 10))


if __name__ == "__main__":
    tahelp.main()
