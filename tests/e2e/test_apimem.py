# SPDX-License-Identifier: MIT
"""The manual API's memory, lock-name and fiber macros (apimem.c, known
numbers): report --alloc's pools beside malloc's, report --locks by the
names TA_LOCK_NAME gave, replay's lines and fibers, the Chrome export's
pool counter tracks and fiber tracks, the Perfetto export's pool
counters, instants and fiber tracks (decoded by protoc, as
test_perfetto.py does); a fiber switched out inside a call and resumed on
another thread (apifiber.c)."""

import json
import shutil

import tahelp
import tadump
from tahelp import LEVELS

LONG = "x" * 255  # the agent keeps 255 bytes of a 2000-byte name


class ApiMemTest(tahelp.Case):

    def dump(self, level):
        return self.traced("preload", [self.prog("apimem-" + level)],
                           env={"TRACEAGENT_LIBCALLS": "lock"}).dump

    def check_lock_calls(self, addr, slices):
        """Every lock call's slice (the waits, and the unlocks) carries its
        lock's address, the one TA_LOCK_NAME named, and the name: "late
        lock" too, named after its calls."""
        got = {}
        for sl in slices:
            if not sl["name"].startswith("pthread_mutex_"):
                continue
            a = sl.get("args", {})
            self.assertEqual(a["lock"], addr[a["lock_name"]], sl)
            key = (sl["name"], a["lock_name"])
            got[key] = got.get(key, 0) + 1
        self.assertEqual(got, {("pthread_mutex_lock", "cache lock"): 5,
                               ("pthread_mutex_unlock", "cache lock"): 5,
                               ("pthread_mutex_lock", "stats"): 2,
                               ("pthread_mutex_unlock", "stats"): 2,
                               ("pthread_mutex_lock", "late lock"): 3,
                               ("pthread_mutex_unlock", "late lock"): 3})

    def test_report_alloc(self):
        for level in LEVELS:
            with self.subTest(level=level):
                dump = self.dump(level)
                rep = tadump.view_json(self, "report", "--alloc", "--json", dump)
                self.assertFalse(rep["alloc"]["recorded"])
                pools = {p["pool"]: p for p in rep["pools"]}
                self.assertEqual(sorted(pools), ["arena", "default"])
                a = pools["arena"]
                self.assertEqual((a["allocations"], a["bytes_allocated"], a["frees"],
                                  a["bytes_freed"], a["unknown_frees"], a["live_bytes"],
                                  a["live_blocks"]), (10, 1000, 8, 700, 1, 300, 3))
                self.assertEqual(a["live"], [{"path": "main > arena_get", "bytes": 300,
                                              "blocks": 3}])
                callers = {c["function"]: c for c in a["callers"]}
                self.assertEqual(callers["arena_get"]["allocations"], 10)
                self.assertEqual(callers["arena_put"]["frees"], 8)
                d = pools["default"]
                self.assertEqual((d["allocations"], d["bytes_allocated"], d["frees"],
                                  d["bytes_freed"], d["unknown_frees"], d["live_bytes"],
                                  d["live_blocks"], d["live"]),
                                 (4, 256, 4, 256, 0, 0, 0, []))
                text = tadump.view(self, "report", "--alloc", dump).stdout
                self.assertIn("pool arena (TA_ALLOC): allocations by calling function:", text)
                self.assertIn("1 frees of pointers the pool did not hold\n", text)
                self.assertIn("           300          3  main > arena_get\n", text)

    def test_report_locks(self):
        for level in LEVELS:
            with self.subTest(level=level):
                rep = tadump.view_json(self, "report", "--locks", "--json", self.dump(level))
                got = sorted((l["lock"], l["kind"], l["calls"]) for l in rep["locks"]["locks"])
                # "late lock" was named after its waits: named all the same.
                self.assertEqual(got, [("cache lock", "named", 5), ("late lock", "named", 3),
                                       ("stats", "named", 2)])

    def test_replay(self):
        for level in LEVELS:
            with self.subTest(level=level):
                dump = self.dump(level)
                lines = tadump.view(self, "replay", dump).stdout.splitlines()
                text = [l[23:].strip() for l in lines[1:]]
                self.assertEqual(sum(t.startswith("@ alloc arena 0x") for t in text), 10)
                self.assertEqual(sum(t.startswith("@ alloc default 0x") for t in text), 4)
                self.assertEqual(sum(t.startswith("@ free arena 0x") for t in text), 9)
                names = [t.split(" named ", 1)[1] for t in text if t.startswith("= lock 0x")]
                self.assertEqual(names, ['"cache lock"', '"stats"', '"(null)"',
                                         '"%s" (cut at 255 bytes)' % LONG, '"late lock"'])
                fib = [t for t in text if "fiber" in t]
                self.assertEqual(fib, [
                    '> fiber "job A"', 'step(); [zone] [fiber "job A"]',
                    '} /* job_step */ [fiber "job A"]', '< fiber "job A"',
                    '> fiber "job A"', 'step(); [zone] [fiber "job A"]',
                    '} /* job_step */ [fiber "job A"]', '< fiber "job A"',
                    '> fiber "job B"', 'step(); [zone] [fiber "job B"]',
                    '} /* job_step */ [fiber "job B"]', '< fiber "job B"',
                    '> fiber "(null)"', '< fiber "(null)"',
                    '> fiber "%s" (cut at 255 bytes)' % LONG, '< fiber "%s"' % LONG])
                # The two runs of "job A" were on two threads.
                tids = {l[13:22].strip() for l in lines if '> fiber "job A"' in l}
                self.assertEqual(len(tids), 2)
                objs = [json.loads(l) for l in
                        tadump.view(self, "replay", "--json", dump).stdout.splitlines()]
                steps = [o for o in objs if o.get("name") == "job_step"]
                self.assertEqual([o["fiber"] for o in steps], ["job A", "job A", "job B"])
                self.assertEqual(len({o["tid"] for o in steps if o["fiber"] == "job A"}), 2)
                self.assertEqual(sum(o.get("event") == "alloc" for o in objs), 14)

    def test_chrome(self):
        for level in LEVELS:
            with self.subTest(level=level):
                dump = self.dump(level)
                out = self.path("c-%s.json" % level)
                tadump.view(self, "export", "--format=chrome", "-o", out, dump)
                with open(out) as fh:
                    ev = json.load(fh)["traceEvents"]
                mem = {}
                for e in ev:
                    if e["ph"] == "C" and e["cat"] == "memory":
                        mem.setdefault(e["name"], []).append(e["args"]["bytes"])
                self.assertEqual(mem["memory: arena"],
                                 list(range(100, 1001, 100)) + list(range(900, 299, -100))
                                 + [300, 300])
                self.assertEqual(mem["memory: default"], [64, 128, 192, 256, 192, 128, 64, 0])
                tracks = {e["tid"]: e["args"]["name"] for e in ev
                          if e["ph"] == "M" and e["name"] == "thread_name"
                          and e["args"]["name"].startswith("fiber ")}
                self.assertEqual(sorted(tracks.values()),
                                 sorted(["fiber job A", "fiber job B", "fiber (null)",
                                         "fiber " + LONG]))
                on = {}
                for e in ev:
                    if e["ph"] == "X" and e["tid"] in tracks:
                        on.setdefault(tracks[e["tid"]], []).append(e["name"])
                self.assertEqual(on, {"fiber job A": ["step", "job_step"] * 2,
                                      "fiber job B": ["step", "job_step"]})
                named = sorted(e["args"]["name"] for e in ev if e.get("cat") == "lock")
                self.assertEqual(named, ["(null)", "cache lock", "late lock", "stats", LONG])
                addr = {e["args"]["name"]: e["args"]["lock"] for e in ev
                        if e.get("cat") == "lock"}
                self.check_lock_calls(addr, [e for e in ev if e["ph"] == "X"])

    def test_perfetto(self):
        if not shutil.which("protoc"):
            self.skipTest("protoc not installed (Debian: protobuf-compiler)")
        import test_perfetto
        for level in LEVELS:
            with self.subTest(level=level):
                tr = test_perfetto.PerfettoTest.export(self, self.dump(level))
                counters = {test_perfetto.one(tr.tracks[u], "name"): v
                            for u, v in tr.counters.items()}
                self.assertEqual(counters["memory: arena"],
                                 list(range(100, 1001, 100)) + list(range(900, 299, -100))
                                 + [300, 300])
                self.assertEqual(counters["memory: default"],
                                 [64, 128, 192, 256, 192, 128, 64, 0])
                names = [i[1] for i in tr.instants]
                self.assertEqual([n for n in names if n.startswith("fiber ")],
                                 ["fiber enter job A", "fiber leave job A"] * 2
                                 + ["fiber enter job B", "fiber leave job B",
                                    "fiber enter (null)", "fiber leave (null)",
                                    "fiber enter " + LONG, "fiber leave " + LONG])
                # The calls made inside a fiber's runs on its own track,
                # whichever thread ran it; none on the threads' tracks.
                on = {}
                for sl in tr.slices:
                    track = test_perfetto.one(tr.tracks.get(sl["track"], {}), "name", "")
                    on.setdefault(track if track.startswith("fiber ") else "threads",
                                  []).append(sl["name"])
                self.assertEqual(sorted(on["fiber job A"]), ["job_step", "job_step",
                                                             "step", "step"])
                self.assertEqual(sorted(on["fiber job B"]), ["job_step", "step"])
                self.assertNotIn("job_step", on["threads"])
                self.assertNotIn("step", on["threads"])
                named = sorted(n.split(" named ", 1)[1] for n in names if n.startswith("lock 0x"))
                self.assertEqual(named, ["(null)", "cache lock", "late lock", "stats", LONG])
                addr = {n.split(" named ", 1)[1]: n.split(" ", 2)[1] for n in names
                        if n.startswith("lock 0x")}
                self.check_lock_calls(addr, tr.slices)


    def test_switched_out(self):
        """apifiber.c: a fiber switched out inside fiber_yield on the main
        thread and resumed on a second one.  Its parts, each inside one
        run, are the fiber's on both threads; fiber_yield stays the main
        thread's, closed by the scheduler's next exit below it (resume's),
        and its return on the second thread is one exit never entered."""
        for level in LEVELS:
            with self.subTest(level=level):
                dump = self.traced("preload", [self.prog("apifiber-" + level)]).dump
                warn = ("traceagent: %s: warning: 1 function exits without a recorded "
                        "entry were ignored\n" % dump)
                p = tadump.view(self, "replay", "--json", dump)
                self.assertEqual(p.stderr, warn)
                objs = [json.loads(l) for l in p.stdout.splitlines()]
                parts = [o for o in objs if o.get("name") == "part"]
                self.assertEqual([(o["module"] == "[zone]", o.get("fiber")) for o in parts],
                                 [(True, "worker"), (False, "worker")] * 2)
                self.assertEqual(len({o["tid"] for o in parts}), 2)
                main_tid = parts[0]["tid"]
                y = [o for o in objs if o.get("name") == "fiber_yield"]
                self.assertEqual([(o["tid"], "fiber" in o) for o in y], [(main_tid, False)])
                r = [o for o in objs if o.get("name") == "resume" and o["tid"] == main_tid]
                self.assertEqual(y[0]["start_ns"] + y[0]["duration_ns"],
                                 r[0]["start_ns"] + r[0]["duration_ns"])
                out = self.path("f-%s.json" % level)
                p = tadump.view(self, "export", "--format=chrome", "-o", out, dump)
                self.assertEqual(p.stderr, warn)
                with open(out) as fh:
                    ev = json.load(fh)["traceEvents"]
                track = [e["tid"] for e in ev if e["ph"] == "M"
                         and e["args"]["name"] == "fiber worker"]
                self.assertEqual(len(track), 1)
                self.assertEqual([e["name"] for e in ev
                                  if e["ph"] == "X" and e["tid"] == track[0]],
                                 ["part", "part"] * 2)

    def test_report_fibers(self):
        """report's rows per fiber: apifiber.c's "worker", run twice on two
        threads, owns the two part() calls and their zones (fiber_yield,
        left inside, is the main thread's); its total is the part() calls'
        time, its run time its two runs', as replay shows them (each
        within a ns a term: replay rounds each end, report each sum)."""
        for level in LEVELS:
            with self.subTest(level=level):
                dump = self.traced("preload", [self.prog("apifiber-" + level)]).dump
                warn = ("traceagent: %s: warning: 1 function exits without a recorded "
                        "entry were counted as partial calls, with no time\n" % dump)
                rep = tadump.view_json(self, "report", "--json", dump, stderr=warn)
                self.assertEqual(len(rep["fibers"]), 1)
                f = rep["fibers"][0]
                self.assertEqual((f["name"], f["pid"], f["runs"], f["threads"], f["calls"]),
                                 ("worker", rep["process_list"][0]["pid"], 2, 2, 4))
                objs = [json.loads(l) for l in
                        tadump.view(self, "replay", "--json", dump).stdout.splitlines()]
                parts = [o["duration_ns"] for o in objs
                         if o.get("name") == "part" and o["module"] != "[zone]"]
                self.assertEqual(len(parts), 2)
                self.assertLessEqual(abs(f["total_ns"] - sum(parts)), 2)
                edges = [o["time_ns"] for o in objs
                         if o.get("event") in ("fiber-enter", "fiber-leave")]
                self.assertEqual(len(edges), 4)
                runs = edges[1] - edges[0] + edges[3] - edges[2]
                self.assertLessEqual(abs(f["run_ns"] - runs), 2)
                text = tadump.view(self, "report", dump).stdout
                self.assertIn("\nper fiber (the calls made inside its runs, whichever thread "
                              "ran them):\n      runs      calls        total     run time  "
                              "threads  fiber  process\n         2          4 ", text)
                self.assertIn("        2  fiber worker  %d\n" % f["pid"], text)

    def test_report_fibers_apimem(self):
        """apimem.c's fibers: "job A" twice on two threads, "job B" once,
        each run a job_step and its zone; the hostile names run empty.
        --tid counts one thread's runs, --pid keeps its process's; from
        a pipe (read once) there are none, and report says why."""
        dump = self.dump(LEVELS[0])
        rep = tadump.view_json(self, "report", "--json", dump)
        got = [(f["name"], f["runs"], f["threads"], f["calls"]) for f in rep["fibers"]]
        self.assertEqual(got, [("job A", 2, 2, 4), ("job B", 1, 1, 2), ("(null)", 1, 1, 0),
                               (LONG, 1, 1, 0)])
        pid = rep["process_list"][0]["pid"]
        rep = tadump.view_json(self, "report", "--json", "--tid=%d" % pid, dump)
        self.assertEqual([(f["name"], f["runs"], f["threads"], f["calls"])
                          for f in rep["fibers"]][:2], [("job A", 1, 1, 2), ("job B", 1, 1, 2)])
        rep = tadump.view_json(self, "report", "--json", "--pid=%d" % pid, dump)
        self.assertEqual(len(rep["fibers"]), 4)
        import subprocess
        with open(dump, "rb") as fh:
            cat = subprocess.Popen(["cat"], stdin=fh, stdout=subprocess.PIPE)
            p = subprocess.run([tahelp.TRACEAGENT, "report", "--json", "/dev/stdin"],
                               stdin=cat.stdout, env=tahelp.clean_env(), capture_output=True,
                               text=True, timeout=tahelp.TIMEOUT)
            cat.stdout.close()
            cat.wait()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "traceagent: /dev/stdin: no rows per fiber: not a file, and "
                         "they take a second pass over the dump\n")
        self.assertEqual(json.loads(p.stdout)["fibers"], [])


if __name__ == "__main__":
    tahelp.main()
