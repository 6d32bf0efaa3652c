# SPDX-License-Identifier: MIT
"""TRACEAGENT_MIN_DURATION / record --min-duration (issue 21): the agent
leaves out the calls shorter than the threshold, unless recorded events
need them as their parent, and counts them, so that report's calls stay
exact.  mindur.c's slow() spins 3 ms; quick() and tiny() take nanoseconds;
says() holds a message and zoned() a zone with a text, both forced out;
finish() is open at the end (the process exits in it)."""

import re

import tadump
import tahelp
from tahelp import LEVELS

THRESHOLD = "1ms"
THRESHOLD_NS = 1000000
# The calls of a run without "fork": main's, then the helper thread's.
CALLS = {"main": 1, "slow": 15, "outer": 3, "helper": 1, "quick": 150, "tiny": 180,
         "says": 4, "zoned": 5, "z": 5, "finish": 1}
# The ones that are always long enough, or forced out, or open at the end.
KEPT = {"main", "slow", "outer", "helper", "says", "zoned", "z", "finish"}
# The call tree kept: names and calls by path.
TREE = {("main",): 1, ("main", "slow"): 10, ("main", "outer"): 3,
        ("main", "outer", "slow"): 3, ("main", "says"): 4, ("main", "zoned"): 5,
        ("main", "zoned", "z"): 5, ("main", "finish"): 1,
        ("helper",): 1, ("helper", "slow"): 2}


def paths(nodes, above=()):
    out = {}
    for n in nodes:
        p = above + (n["name"],)
        out[p] = out.get(p, 0) + n["calls"]
        for k, v in paths(n["children"], p).items():
            out[k] = out.get(k, 0) + v
    return out


class MinDurationTest(tahelp.Case):

    def run_it(self, mode, level, *args, env=None, options=()):
        prog = self.prog("mindur-" + level)
        e = dict(env or {})
        if mode == "preload":
            e["TRACEAGENT_MIN_DURATION"] = THRESHOLD
            r = self.traced(mode, [prog] + list(args), env=e)
        else:
            r = self.traced(mode, [prog] + list(args), env=e,
                            options=["--min-duration=" + THRESHOLD] + list(options))
        self.assertEqual(r.stdout, "mindur: done\n")
        return r

    def kept_tree(self, dump):
        """The dump's call paths, and those of them made of kept functions
        only, which must be TREE."""
        tree = paths(self.graph(dump))
        kept = {p: n for p, n in tree.items() if not set(p) - KEPT}
        self.assertEqual(kept, TREE)
        return tree, kept

    def whole(self, rep, processes=1):
        """Complete, nothing lost, no errors; open at the end: main and
        finish (the process exits in finish) and in a forked child the
        frames it inherited, none of them counted there."""
        self.assertTrue(rep["complete"], rep)
        self.assertEqual((rep["lost"], rep["errors"], rep["processes"]), (0, [], processes))
        self.assertEqual({f["name"]: f["open"] for f in rep["functions"] if f["open"]},
                         {"main": 1, "finish": 1})

    def graph(self, dump, threshold=THRESHOLD):
        """graph --json's tree, which warns that the profile is filtered."""
        warn = ("traceagent: %s: warning: filtered at record time: min-duration=%s: this is "
                "not a whole profile\n" % (dump, threshold)) if threshold else ""
        return tadump.view_json(self, "graph", "--json", dump, stderr=warn)["tree"]

    def check_counts(self, funcs, calls):
        """Exact calls; the ones recorded are long enough unless forced
        out; the always-kept ones were all recorded."""
        self.assert_calls(funcs, calls)
        for name, f in funcs.items():
            recorded = f["calls"] - f["short_calls"]
            if name in KEPT:
                self.assertEqual(f["short_calls"], 0, f)
            elif recorded:
                # A short call the machine stopped for a millisecond is
                # long: kept, rightly.
                self.assertGreaterEqual(f["min_ns"], THRESHOLD_NS * 0.95, f)

    def test_keeps_long_calls_and_ancestors(self):
        for level in LEVELS:
            for mode in ("preload", "record"):
                with self.subTest(level=level, mode=mode):
                    r = self.run_it(mode, level)
                    rep = self.report(r.dump)
                    self.whole(rep)
                    funcs = self.functions(rep)
                    self.check_counts(funcs, CALLS)
                    self.assertEqual(rep["short_calls"],
                                     sum(f["short_calls"] for f in funcs.values()))
                    # quick and tiny: left out (but for a preempted one).
                    self.assertGreaterEqual(funcs["quick"]["short_calls"], 145)
                    self.assertGreaterEqual(funcs["tiny"]["short_calls"], 175)
                    # Forced out by their message and zone text: timed.
                    self.assertGreater(funcs["says"]["max_ns"], 0)
                    self.assertGreater(funcs["z"]["max_ns"], 0)
                    self.assertEqual(funcs["finish"]["open"], 1)
                    tree, kept = self.kept_tree(r.dump)
                    # What else is in the tree: preempted short calls only.
                    self.assertLessEqual(sum(n for p, n in tree.items() if p not in kept), 10)
                    text = self.report_raw(r.dump).stdout
                    self.assertIn("\ncalls shorter than 1ms were not recorded (their counts "
                                  "are exact, their times are not in total/self)\n", text)

    def test_without_threshold_everything(self):
        """The same program untouched by the setting: every call, in the
        tree too (what the test above would see without the feature)."""
        r = self.traced("preload", [self.prog("mindur-O2")])
        rep = self.report(r.dump)
        funcs = self.functions(rep)
        self.assert_calls(funcs, CALLS)
        self.assertNotIn("short_calls", rep)
        tree = paths(self.graph(r.dump, None))
        self.assertEqual(tree[("main", "quick")], 100)
        self.assertNotIn("calls shorter than", self.report_raw(r.dump).stdout)

    def test_fork(self):
        """The child starts inside main and forks(), which the parent
        writes whatever their length; each process has its own calls."""
        for level in LEVELS:
            with self.subTest(level=level):
                r = self.run_it("record", level, "fork", env={"TRACEAGENT_FLUSH_MS": "1"})
                rep = self.report(r.dump, "--threads")
                self.whole(rep, processes=2)
                calls = dict(CALLS, slow=16, quick=170, tiny=202, forks=1, child_part=1)
                self.check_counts(self.functions(rep), calls)
                by_pid = {}
                for t in rep["per_thread"]:
                    for f in t["functions"]:
                        d = by_pid.setdefault(t["pid"], {})
                        d[f["name"]] = d.get(f["name"], 0) + f["calls"]
                child = [d for d in by_pid.values() if "child_part" in d]
                self.assertEqual(child, [{"child_part": 1, "slow": 1, "quick": 20,
                                          "tiny": 22}])
                parent = [d for d in by_pid.values() if "child_part" not in d]
                self.assertEqual(parent[0]["forks"], 1)
                self.assertEqual(parent[0]["main"], 1)
                # The child's snapshot holds forks(), pending in the parent
                # at the fork: its return there is no exit never entered
                # (report would warn on stderr).
                p = self.report_raw(r.dump)
                self.assertEqual((p.returncode, p.stderr), (0, ""))
                tree = paths(self.graph(r.dump))
                self.assertEqual(tree[("main", "forks")], 1)

    def test_exec(self):
        """exec.c's main calls work() 4 times, then execs: main's entry,
        held back, is written before the image goes (its length is not
        known), and work()'s calls are counted."""
        for level in LEVELS:
            with self.subTest(level=level):
                self.need_host_program("/bin/true")
                r = self.traced("preload", [self.prog("exec-" + level), "/bin/true"],
                                env={"TRACEAGENT_MIN_DURATION": "1s"})
                rep = self.report(r.dump)
                self.assertTrue(rep["complete"], rep["errors"])
                funcs = self.functions(rep)
                self.assert_calls(funcs, {"main": 1, "work": 4})
                self.assertEqual((funcs["main"]["open"], funcs["main"]["short_calls"]), (1, 0))
                self.assertEqual(funcs["work"]["short_calls"], 4)

    def test_chunk_edges(self):
        """Small blocks and a 1 ms flush interval: calls cross many chunks
        (their entries wait in the pending stack from one to the next,
        the snapshots hold only written frames); the same result.  How
        many chunks the flusher writes on its own depends on its share of
        the CPU (4 under qemu-user once, where 5 were expected): mindur
        asks its agent to write what it holds after each of main's first
        10 long calls (control socket, "flush"), and the agent answers once
        it is written, so the dump has at least 10 chunks of events."""
        env = {"TRACEAGENT_BUFFER": "4K", "TRACEAGENT_FLUSH_MS": "1",
               "XDG_RUNTIME_DIR": self.dir}
        for level in LEVELS:
            for mode in ("preload", "record"):
                with self.subTest(level=level, mode=mode):
                    r = self.run_it(mode, level, "flush", env=env)
                    rep = self.report(r.dump)
                    self.whole(rep)
                    self.check_counts(self.functions(rep), CALLS)
                    self.kept_tree(r.dump)
                    info = tadump.view(self, "info", r.dump).stdout
                    m = re.search(r"chunks: +\d+ \((\d+) of events\)", info)
                    self.assertGreaterEqual(int(m.group(1)), 10, info)

    def test_drop_and_flight_modes(self):
        """Drop mode (nothing dropped here: the memory is ample) and
        flight mode (the rings written at the end): the same calls."""
        for level in LEVELS:
            for mode in ("drop", "flight"):
                with self.subTest(level=level, mode=mode):
                    r = self.run_it("preload", level, env={"TRACEAGENT_MODE": mode})
                    rep = self.report(r.dump)
                    self.whole(rep)
                    self.check_counts(self.functions(rep), CALLS)
                    tree, kept = self.kept_tree(r.dump)

    def test_with_filters(self):
        """--min-duration with --filter, --exclude and --depth: the calls
        are exactly those the filters keep (recorded + short_calls), the
        short ones among them left out, the long ones all recorded.
        FILTER=outer: outer, its slow and slow's tiny; EXCLUDE=slow: all
        but slow (its tiny calls stay); DEPTH=2: main's direct callees and
        helper's (zoned's zone z is deeper)."""
        cases = (
            ({"TRACEAGENT_FILTER": "outer"}, ["--filter=outer"],
             {"outer": 3, "slow": 3, "tiny": 6}, {"tiny"}),
            ({"TRACEAGENT_EXCLUDE": "slow"}, ["--exclude=slow"],
             dict((k, v) for k, v in CALLS.items() if k != "slow"), {"quick", "tiny"}),
            ({"TRACEAGENT_DEPTH": "2"}, ["--depth=2"],
             {"main": 1, "slow": 12, "outer": 3, "helper": 1, "quick": 150, "says": 4,
              "zoned": 5, "finish": 1}, {"quick"}))
        for level in LEVELS:
            for env, options, calls, short in cases:
                for mode in ("preload", "record"):
                    with self.subTest(level=level, env=env, mode=mode):
                        if mode == "preload":
                            r = self.run_it(mode, level, env=env)
                        else:
                            r = self.run_it(mode, level, options=options)
                        rep = self.report(r.dump)
                        self.assertTrue(rep["complete"], rep)
                        self.assertEqual((rep["lost"], rep["errors"]), (0, []))
                        funcs = self.functions(rep)
                        self.assertEqual({n: f["calls"] for n, f in funcs.items()}, calls)
                        self.assertEqual(rep["short_calls"],
                                         sum(f["short_calls"] for f in funcs.values()))
                        for name, f in funcs.items():
                            if name in short:
                                # All short but for one the machine
                                # stopped for a millisecond.
                                self.assertGreaterEqual(f["short_calls"], f["calls"] - 5, f)
                            elif name in ("slow", "outer", "main", "helper"):
                                self.assertEqual(f["short_calls"], 0, f)
                        self.assertEqual(rep["filters"]["min_duration_ns"], THRESHOLD_NS)

    def test_units_and_bad_values(self):
        prog = self.prog("mindur-O2")
        # 1 s: only what is forced out or open at the end stays.
        r = self.traced("preload", [prog], env={"TRACEAGENT_MIN_DURATION": "1s"})
        tree = paths(self.graph(r.dump, "1s"))
        self.assertEqual(tree, {("main",): 1, ("main", "says"): 4, ("main", "zoned"): 5,
                                ("main", "zoned", "z"): 5, ("main", "finish"): 1})
        self.assert_calls(self.functions(self.report(r.dump)), CALLS)
        for good in ("500ns", "10us", "2ms", "2000000"):
            r = self.traced("preload", [prog], env={"TRACEAGENT_MIN_DURATION": good})
            self.assert_calls(self.functions(self.report(r.dump)), CALLS)
        for bad in ("fast", "-1ms", "2 ms", "5min", "99999999999999999999s"):
            with self.subTest(bad=bad):
                r = self.run_preload([prog], env={"TRACEAGENT_MIN_DURATION": bad})
                self.assertEqual(r.returncode, 0)
                self.assertEqual(r.stderr_lines(), [
                    "traceagent: TRACEAGENT_MIN_DURATION='%s' is not a duration (like 500ns, "
                    "10us, 2ms, 1s; a bare number is nanoseconds); no minimum" % bad])
                rep = self.report(r.dump)
                self.assertNotIn("short_calls", rep)
                self.assert_calls(self.functions(rep), CALLS)


if __name__ == "__main__":
    tahelp.main()
