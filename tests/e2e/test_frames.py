# SPDX-License-Identifier: MIT
"""Frames and hitches (`traceagent frames`, `report --frames`) on gameloop:
60 frames marked by the main thread with two planted slow frames (20: the
zone "render", 45: the zone "load level", each 20 ms over a ~1 ms frame),
120 physics ticks of their own set, exact zone counts.

Frame times are wall-clock: a busy machine now and then stretches a frame
past twice the median.  So the program also writes the times it saw
(GAMELOOP_TIMES), and the hitches are checked against them: every frame
clearly over the threshold is one, every frame clearly under it is not.
On a quiet run (by the program's own times; the first of a few), the
hitches are exactly the planted ones."""

import json
import os
import subprocess
import time

import tahelp
from tahelp import LEVELS, TRACEAGENT

FRAMES = 60
PHYSICS = 120
PLANTED = {20: "render", 45: "load level"}
SLOW_NS = 20000000
ZONE = "[zone]"
STDOUT = "gameloop: 60 frames, 120 physics ticks, 20 jobs, checksum 35820\n"
# Runs tried for a quiet one.
ATTEMPTS = 10


class FramesTest(tahelp.Case):

    def frames_raw(self, dump, *options):
        return subprocess.run([TRACEAGENT, "frames"] + list(options) + [dump],
                              env=tahelp.clean_env(), capture_output=True, text=True,
                              timeout=tahelp.TIMEOUT)

    def frames(self, dump, *options):
        p = self.frames_raw(dump, "--json", *options)
        self.assertEqual(p.returncode, 0, "frames %s: stderr:\n%s" % (dump, p.stderr))
        out = json.loads(p.stdout)
        self.assertEqual(p.stderr, "")
        return {s["name"]: s for s in out["frame_sets"]}

    def hitches(self, dump, *options, name="frame"):
        return [h["index"] for h in self.frames(dump, *options)[name]["hitches"]]

    def gameloop(self, level, times=None):
        """A traced run; its dump.  times: a path for GAMELOOP_TIMES."""
        env = {"GAMELOOP_TIMES": times} if times else None
        r = self.traced("preload", [self.prog("gameloop-" + level)], env=env)
        self.assertEqual(r.stdout, STDOUT)
        return r.dump

    def program_frames(self, path):
        """The frame times the program saw (ns)."""
        with open(path) as fh:
            t = [int(l) for l in fh]
        self.assertEqual(len(t), FRAMES + 1)
        return [b - a for a, b in zip(t, t[1:])]

    def check_against(self, seen, got, threshold, what):
        """The hitches got agree with the program's frame times seen: a frame
        more than 5% (and 100 us) over the threshold is one, a frame as much
        under it is not; those near it may go either way."""
        margin = threshold // 20 + 100000
        must = [i for i, d in enumerate(seen) if d > threshold + margin]
        never = [i for i, d in enumerate(seen) if d < threshold - margin]
        # The program reads its clock just after each mark: a delay that
        # falls between the two (the program preempted there) is in its
        # frame i and in the trace's frame i + 1.  Such a pair only.
        shifted = [i for i in must if i not in got and i + 1 in got and i + 1 in never]
        must = [i for i in must if i not in shifted]
        never = [i for i in never if i - 1 not in shifted]
        self.assertEqual([i for i in must if i not in got], [], (what, seen, got))
        self.assertEqual([i for i in never if i in got], [], (what, seen, got))

    def quiet_run(self, level):
        """Runs until the program's own times are quiet (every frame but
        the planted ones under 1.8 times the median), checking each run
        against its times; the quiet run's dump, or None when none of
        ATTEMPTS was (a machine that busy: the checks against the
        program's times were still made)."""
        for attempt in range(ATTEMPTS):
            times = self.path("times-%s-%d" % (level, attempt))
            dump = self.gameloop(level, times)
            seen = self.program_frames(times)
            main = self.check_any_run(dump)["frame"]
            # The analyzer's median is the program's, within the width of a
            # mark (both see the same frames).
            median = sorted(seen)[(FRAMES + 1) // 2 - 1]
            self.assertLess(abs(main["p50_ns"] - median), median // 20 + 50000,
                            (main, median))
            self.check_against(seen, self.hitches(dump), 2 * main["p50_ns"], "default")
            self.check_against(seen, self.hitches(dump, "--hitch=3.5"),
                               int(3.5 * main["p50_ns"]), "--hitch=3.5")
            self.check_against(seen, self.hitches(dump, "--budget=10ms"), 10000000,
                               "--budget=10ms")
            if all(d < 1.8 * median for i, d in enumerate(seen) if i not in PLANTED):
                return dump
            time.sleep(1)
        return None

    def check_any_run(self, dump):
        """What holds however busy the machine: the counts, and the planted
        frames found with their zone as the first culprit."""
        sets = self.frames(dump)
        self.assertEqual(sorted(sets), ["frame", "physics"])
        main, physics = sets["frame"], sets["physics"]
        self.assertEqual(main["count"], FRAMES)
        self.assertEqual(physics["count"], PHYSICS)
        for s in (main, physics):
            self.assertLessEqual(s["min_ns"], s["p50_ns"])
            self.assertLessEqual(s["p50_ns"], s["p90_ns"])
            self.assertLessEqual(s["p90_ns"], s["p99_ns"])
            self.assertLessEqual(s["p99_ns"], s["max_ns"])
            self.assertLessEqual(s["min_ns"], s["avg_ns"])
            self.assertLessEqual(s["avg_ns"], s["max_ns"])
            self.assertGreater(s["fps"], 0)
        # Every frame runs 800 us of busy loops at least.
        self.assertGreaterEqual(main["min_ns"], 800000)
        hitches = {h["index"]: h for h in main["hitches"]}
        for index, zone in PLANTED.items():
            self.assertIn(index, hitches, main)
            h = hitches[index]
            self.assertGreaterEqual(h["duration_ns"], SLOW_NS)
            # The zone's excess is the planted 20 ms (its median self time,
            # 400 us for render, 0 for load level, taken off).  It comes
            # first unless the machine took the thread away for longer
            # than that in the same frame.
            planted = [c for c in h["culprits"] if (c["name"], c["module"]) == (zone, ZONE)]
            self.assertEqual(len(planted), 1, h)
            self.assertGreaterEqual(planted[0]["excess_ns"], SLOW_NS - 500000, h)
            if h["duration_ns"] < SLOW_NS + 5000000:
                first = h["culprits"][0]
                self.assertEqual((first["name"], first["module"]), (zone, ZONE), h)
            self.assertLessEqual(len(h["culprits"]), 5)
            ex = [c["excess_ns"] for c in h["culprits"]]
            self.assertEqual(ex, sorted(ex, reverse=True))
        starts = [h["start_ns"] for h in main["hitches"]]
        self.assertEqual(starts, sorted(starts))
        self.assertGreater(hitches[45]["start_ns"], hitches[20]["start_ns"] + SLOW_NS)
        return sets

    def test_report_counts(self):
        """The zones' exact calls (module [zone]) and the functions'."""
        for level in LEVELS:
            with self.subTest(level=level):
                rep = self.report(self.gameloop(level))
                self.assert_whole(rep)
                self.assertEqual(rep["threads"], 3)
                zones = self.functions(rep, module=ZONE)
                self.assertEqual({n: f["calls"] for n, f in zones.items()},
                                 {"update": 60, "entity": 240, "render": 60,
                                  "load level": 1, "physics step": 120, "job": 20})
                funcs = self.functions(rep, module="gameloop-" + level)
                self.assertEqual({n: f["calls"] for n, f in funcs.items()},
                                 {"game": 1, "run_frame": 60, "update_entity": 240,
                                  "crunch": 20})

    def test_hitches(self):
        """Checked against the program's times on every run; on a quiet
        one, exactly the planted hitches by the default rule, by --hitch
        and by --budget."""
        for level in LEVELS:
            with self.subTest(level=level):
                dump = self.quiet_run(level)
                if dump is None:
                    print("%s: no quiet run in %d: the hitches were checked against "
                          "the program's frame times only" % (level, ATTEMPTS))
                    continue
                self.assertEqual(self.hitches(dump), [20, 45])
                self.assertEqual(self.hitches(dump, "--hitch=1.9"), [20, 45])
                self.assertEqual(self.hitches(dump, "--hitch=4"), [20, 45])
                # Between the quiet frames (under 1.8 times the median) and
                # the slow ones (20 ms and more).
                main = self.frames(dump)["frame"]
                budget = max(3 * main["p50_ns"], 10000000)
                self.assertEqual(self.hitches(dump, "--budget=%dns" % budget), [20, 45])
                self.assertEqual(self.hitches(dump, "--budget=%dus" % (budget // 1000)),
                                 [20, 45])

    def test_options(self):
        """--budget, --hitch and --set where any run gives the same answer,
        and the text form."""
        dump = self.gameloop("O2")
        self.assertEqual(self.hitches(dump, "--hitch=1000"), [])
        self.assertEqual(self.hitches(dump, "--budget=60s"), [])
        # Every frame runs 800 us of busy loops at least.
        self.assertEqual(self.hitches(dump, "--budget=500us"), list(range(FRAMES)))
        b = self.frames(dump, "--budget=10ms")["frame"]
        self.assertEqual(b["budget_ns"], 10000000)
        self.assertEqual(b["threshold_ns"], 10000000)
        h = self.frames(dump, "--hitch=3")["frame"]
        self.assertEqual(h["threshold_ns"], 3 * h["p50_ns"])
        # --set: that set only.
        only = self.frames(dump, "--set=physics")
        self.assertEqual(list(only), ["physics"])
        self.assertEqual(only["physics"]["count"], PHYSICS)
        self.assertEqual(list(self.frames(dump, "--set=frame")), ["frame"])
        p = self.frames_raw(dump, "--json", "--set=nope")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["frame_sets"], [])
        p = self.frames_raw(dump, "--set=nope")
        self.assertEqual((p.returncode, p.stdout), (0, 'no frame set "nope" in %s\n' % dump))
        p = self.frames_raw(dump, "--set=frame")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('frame set "frame" of process', p.stdout)
        self.assertIn(": 60 frames, ", p.stdout)
        self.assertIn("hitches (over 2 x the median", p.stdout)
        self.assertIn("frame 20 at ", p.stdout)
        self.assertIn("render  [zone]", p.stdout)
        self.assertIn("load level  [zone]", p.stdout)

    def test_report_frames(self):
        """report --frames: entity runs 4 times in every frame, update and
        render once, load level in one frame of 60."""
        dump = self.gameloop("O2")
        p = self.report_raw(dump, "--frames", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual(out["frame_set"]["name"], "frame")
        self.assertEqual(out["frame_set"]["count"], FRAMES)
        rows = {(f["name"], os.path.basename(f["module"])): f for f in out["functions"]}
        entity = rows[("entity", ZONE)]
        self.assertEqual((entity["calls"], entity["calls_per_frame"], entity["calls_per_frame_max"]),
                         (240, 4.0, 4))
        for name in ("update", "render"):
            f = rows[(name, ZONE)]
            self.assertEqual((f["calls_per_frame"], f["calls_per_frame_max"]), (1.0, 1), name)
        load = rows[("load level", ZONE)]
        self.assertEqual(load["calls"], 1)
        self.assertGreaterEqual(load["self_per_frame_max_ns"], SLOW_NS)
        self.assertEqual(load["self_per_frame_avg_ns"], load["self_per_frame_max_ns"] // FRAMES)
        render = rows[("render", ZONE)]
        self.assertGreaterEqual(render["self_per_frame_max_ns"], SLOW_NS + 400000)
        self.assertLessEqual(render["self_per_frame_avg_ns"], render["self_per_frame_max_ns"])
        self.assertEqual(rows[("run_frame", "gameloop-O2")]["calls_per_frame"], 1.0)
        # --set, --function, --top and the text form.
        p = self.report_raw(dump, "--frames", "--json", "--set=physics", "--function=physics*")
        out = json.loads(p.stdout)
        self.assertEqual(out["frame_set"]["count"], PHYSICS)
        self.assertEqual([f["name"] for f in out["functions"]], ["physics step"])
        p = self.report_raw(dump, "--frames", "--top=2")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertTrue(lines[0].startswith('frame set "frame" of process'), lines)
        self.assertIn("self/frame", lines[1])
        self.assertEqual(len(lines), 4, lines)
        # Refused together.
        for bad in (["--set=frame"], ["--frames", "--csv"], ["--frames", "--threads"]):
            p = self.report_raw(dump, *bad)
            self.assertEqual(p.returncode, 2, bad)

    def test_culprits_per_thread(self):
        """framethreads: in frame 10 the main thread (which marks the
        frames) runs heavy() while the worker runs heavy() and
        worker_only() beside it.  The culprits are the main thread's
        only: heavy, by exactly its self time on the main thread (it runs
        in no other frame there), never the worker's functions nor its
        heavy() summed in; no excess exceeds its frame."""
        for level in LEVELS:
            with self.subTest(level=level):
                prog = "framethreads-" + level
                r = self.traced("preload", [self.prog(prog)])
                self.assertEqual(r.stdout, "framethreads: 20 frames, sum 184\n")
                threads = self.report(r.dump, "--threads")["per_thread"]
                self.assertEqual(len(threads), 2)
                main = [t for t in threads if t["tid"] == t["pid"]][0]
                heavy_main = [f for f in main["functions"] if f["name"] == "heavy"][0]
                # heavy() spins 20 ms on each thread: each is over the
                # 15 ms budget, so frame 10 is a hitch on any machine.
                sets = self.frames(r.dump, "--budget=15ms")
                self.assertEqual(list(sets), ["frame"])
                s = sets["frame"]
                self.assertEqual(s["count"], 20)
                hitches = {h["index"]: h for h in s["hitches"]}
                self.assertIn(10, hitches, s)
                h = hitches[10]
                self.assertEqual(h["tid"], main["tid"])
                self.assertEqual([(c["name"], os.path.basename(c["module"]), c["excess_ns"])
                                  for c in h["culprits"]],
                                 [("heavy", prog, heavy_main["self_ns"])])
                # Whatever a busy machine made late, and with every frame a
                # hitch: the main thread's functions only, each excess
                # within its frame, and all of them within it too (up to
                # the rounding of each to the ns).
                for opt in ("--budget=15ms", "--budget=1ns"):
                    for h in self.frames(r.dump, opt)["frame"]["hitches"]:
                        self.assertEqual(h["tid"], main["tid"], h)
                        names = {c["name"] for c in h["culprits"]}
                        self.assertLessEqual(names, {"light", "heavy"}, h)
                        for c in h["culprits"]:
                            self.assertLessEqual(c["excess_ns"], h["duration_ns"], h)
                        self.assertLessEqual(sum(c["excess_ns"] for c in h["culprits"]),
                                             h["duration_ns"] + len(h["culprits"]), h)
                # The text names the frame's thread.
                p = self.frames_raw(r.dump, "--budget=15ms")
                self.assertEqual(p.returncode, 0, p.stderr)
                line = [l for l in p.stdout.splitlines() if l.startswith("    frame 10 at ")]
                self.assertEqual(len(line), 1, p.stdout)
                self.assertTrue(line[0].endswith(", thread %d (%s)" % (main["tid"], prog)),
                                line[0])

    def test_culprits_gameloop_threads(self):
        """gameloop, every frame a hitch (--budget=1ns): the main thread's
        frames blame only what the main thread runs, the physics thread's
        only its zone "physics step", never the worker's job."""
        dump = self.gameloop("O2")
        main_fns = {"game", "run_frame", "update_entity", "update", "entity", "render",
                    "load level"}
        sets = self.frames(dump, "--budget=1ns")
        tids = {}
        for name, allowed in (("frame", main_fns), ("physics", {"physics step"})):
            s = sets[name]
            self.assertEqual(len(s["hitches"]), s["count"])
            for h in s["hitches"]:
                self.assertLessEqual({c["name"] for c in h["culprits"]}, allowed, (name, h))
                for c in h["culprits"]:
                    self.assertLessEqual(c["excess_ns"], h["duration_ns"], (name, h))
            tids[name] = {h["tid"] for h in s["hitches"]}
        self.assertEqual(tids["frame"], {sets["frame"]["pid"]})
        self.assertEqual(len(tids["physics"]), 1)
        self.assertNotEqual(tids["physics"], tids["frame"])

    def test_no_marks(self):
        """A dump without marks: said, exit 0, no sets."""
        r = self.traced("preload", [self.prog("fib-O2"), "5"])
        p = self.frames_raw(r.dump)
        self.assertEqual((p.returncode, p.stdout), (0, "no frame marks in %s\n" % r.dump))
        p = self.frames_raw(r.dump, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["frame_sets"], [])
        p = self.report_raw(r.dump, "--frames", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual((out["frame_set"], out["functions"]), (None, []))

    def test_usage_and_damage(self):
        dump = self.gameloop("O2")
        for bad in ("--budget=5x", "--hitch=0", "--hitch=x", "--set=", "--what"):
            p = self.frames_raw(dump, bad)
            self.assertEqual(p.returncode, 2, bad)
            self.assertTrue(p.stderr.startswith("traceagent frames: "), p.stderr)
        p = self.frames_raw(self.path("none.trace"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("none.trace", p.stderr)
        # Cut short: what could be read is shown, status 1, as report does.
        with open(dump, "rb") as fh:
            data = fh.read()
        cut = self.path("cut.trace")
        with open(cut, "wb") as fh:
            fh.write(data[:len(data) * 2 // 3])
        p = self.frames_raw(cut, "--json")
        self.assertEqual(p.returncode, self.report_raw(cut).returncode)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(cut, p.stderr)
        json.loads(p.stdout)
        # A pipe cannot be read twice.
        p = subprocess.run([TRACEAGENT, "frames", "/dev/stdin"], input=data,
                           capture_output=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"not a regular file", p.stderr)

    def test_untraced(self):
        """Without the agent the macros do nothing: the same output."""
        for level in LEVELS:
            with self.subTest(level=level):
                r = self.run_plain([self.prog("gameloop-" + level)])
                self.assertEqual((r.returncode, r.stdout, r.stderr), (0, STDOUT, ""))


if __name__ == "__main__":
    tahelp.main()
