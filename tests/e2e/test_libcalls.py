# SPDX-License-Identifier: MIT
"""Library calls as zones (issue 6): exact allocation counts and bytes with a
known leak, a contended mutex whose recorded wait covers the other thread's
hold, exact I/O sizes per fd, sleeps, errno untouched, allocation in
constructors and atexit handlers, TRACEAGENT_LIBCALLS / --libcalls, and the
marks the views give library calls."""

import glob
import json
import os
import re
import subprocess

import tahelp
from tahelp import LEVELS, MODES

LIB = "[libcall]"


class LibcallsTest(tahelp.Case):

    def run_lc(self, mode, args, classes="all", level="O2", env=None, **kw):
        prog = self.prog("libcalls-" + level)
        e = dict(env or {})
        if mode == "record":
            opts = ["--libcalls=" + classes] if classes is not None else []
            return self.traced(mode, [prog] + args, options=opts, env=e, **kw)
        if classes is not None:
            e["TRACEAGENT_LIBCALLS"] = classes
        return self.traced(mode, [prog] + args, env=e, **kw)

    def lc_json(self, dump, *opts):
        p = self.report_raw(dump, "--json", *opts)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def rows(self, lst, key):
        out = {}
        for r in lst:
            self.assertNotIn(r[key], out, "%s listed twice" % r[key])
            out[r[key]] = r
        return out

    # -- allocation ------------------------------------------------------------

    def test_alloc_exact(self):
        """work_alloc: 10 x malloc(100), calloc(3, 50) then realloc to 300,
        posix_memalign 256, aligned_alloc 128, all freed; leaker: 777 bytes
        never freed."""
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    r = self.run_lc(mode, ["alloc"], "alloc", level)
                    self.assertEqual(r.stdout, "alloc done\n")
                    a = self.lc_json(r.dump, "--alloc")["alloc"]
                    callers = self.rows(a["callers"], "function")
                    w = callers["work_alloc"]
                    self.assertEqual((w["allocations"], w["bytes_allocated"], w["frees"],
                                      w["bytes_freed"]),
                                     (14, 100 * 10 + 150 + 300 + 256 + 128, 14, 1834))
                    lk = callers["leaker"]
                    self.assertEqual((lk["allocations"], lk["bytes_allocated"], lk["frees"]),
                                     (1, 777, 0))
                    live = self.rows(a["live"], "path")
                    self.assertEqual(live["main > leaker > malloc"],
                                     {"path": "main > leaker > malloc", "bytes": 777,
                                      "blocks": 1})
                    # Nothing of work_alloc's is live.
                    self.assertFalse([p for p in live if "work_alloc" in p], live)
                    self.assertEqual(a["untracked_frees"], 0)
                    # The zones are functions named after the library
                    # function, marked as library calls.
                    funcs = self.functions(self.report(r.dump))
                    for name in ("malloc", "calloc", "realloc", "free", "posix_memalign",
                                 "aligned_alloc"):
                        self.assertEqual(funcs[name]["module"], LIB, name)
                    self.assertEqual(funcs["posix_memalign"]["calls"], 1)
                    self.assertEqual(funcs["aligned_alloc"]["calls"], 1)
                    self.assertEqual(funcs["realloc"]["calls"], 1)

    def test_alloc_text(self):
        r = self.run_lc("preload", ["alloc"], "alloc")
        p = self.report_raw(r.dump, "--alloc")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"\n +14 +1834 +14 +1834  work_alloc\n")
        self.assertRegex(p.stdout, r"\n +777 +1  main > leaker > malloc\n")

    # -- locks -------------------------------------------------------------------

    def test_contention(self):
        """The waiter's recorded wait covers the whole time the holder says
        it held the mutex after the waiter was about to lock it."""
        for mode in MODES:
            with self.subTest(mode=mode):
                r = self.run_lc(mode, ["lock"], "lock")
                m = re.fullmatch(r"lock (0x[0-9a-f]+) held ([0-9]+)\n", r.stdout)
                self.assertTrue(m, r.stdout)
                addr, held = m.group(1), int(m.group(2))
                self.assertGreaterEqual(held, 50_000_000)
                lk = self.lc_json(r.dump, "--locks")["locks"]
                callers = {(c["function"], c["call"]): c for c in lk["callers"]}
                w = callers[("waiter", "pthread_mutex_lock")]
                self.assertEqual(w["calls"], 1)
                self.assertGreaterEqual(w["wait_ns"], held)
                h = callers[("holder", "pthread_mutex_lock")]
                self.assertEqual(h["calls"], 1)
                self.assertLess(h["wait_ns"], held)
                # The static mutex by its name, not its address.
                locks = self.rows(lk["locks"], "lock")
                self.assertNotIn(addr, locks)
                self.assertEqual(locks["mtx"]["kind"], "static")
                self.assertEqual(locks["mtx"]["calls"], 2)
                self.assertGreaterEqual(locks["mtx"]["max_ns"], held)
                # Unlocks are zones too, but not waits.
                funcs = self.functions(self.report(r.dump))
                self.assertEqual(funcs["pthread_mutex_unlock"]["calls"], 2)
                self.assertNotIn(("waiter", "pthread_mutex_unlock"), callers)

    def test_lock_names(self):
        """A static mutex by its variable's name (with the offset inside a
        static struct), a mutex in a malloc'd block by the call path that
        allocated the block (with the alloc class; else its address), one
        on the stack by its address; text and JSON."""
        for level in LEVELS:
            for classes in ("alloc,lock", "lock"):
                with self.subTest(level=level, classes=classes):
                    r = self.run_lc("preload", ["names"], classes, level)
                    m = re.fullmatch(r"static (0x[0-9a-f]+) heap (0x[0-9a-f]+) in (0x[0-9a-f]+) "
                                     r"stats (0x[0-9a-f]+) in (0x[0-9a-f]+) "
                                     r"stack (0x[0-9a-f]+)\n", r.stdout)
                    self.assertTrue(m, r.stdout)
                    heap, block, slock, sbase, stack = (int(m.group(i), 16)
                                                        for i in range(2, 7))
                    if classes == "alloc,lock":
                        heap_name = ("allocated at main > do_names > cache_new > malloc +0x%x"
                                     % (heap - block))
                        heap_kind = "heap"
                    else:
                        heap_name, heap_kind = "0x%x" % heap, "address"
                    stats = "stats+0x%x" % (slock - sbase)
                    want = {"cache_lock": "static", stats: "static", heap_name: heap_kind,
                            "0x%x" % stack: "address"}
                    lk = self.lc_json(r.dump, "--locks")["locks"]
                    got = {l["lock"]: l.get("kind") for l in lk["locks"]}
                    self.assertEqual(got, want)
                    self.assertTrue(lk["recorded"])
                    self.assertEqual([l["calls"] for l in lk["locks"]], [1, 1, 1, 1])
                    p = self.report_raw(r.dump, "--locks")
                    self.assertEqual(p.returncode, 0, p.stderr)
                    rows = p.stdout.split("  lock\n", 1)[1].splitlines()
                    self.assertEqual(sorted(l.split(None, 5)[5] for l in rows), sorted(want))

    def test_class_not_recorded(self):
        """--alloc, --locks, --io of a dump that did not record the class
        say so and how to record it, exit 0; JSON: "recorded": false."""
        r = self.run_lc("preload", ["sleep"], "sleep")
        for opt, cls, what, key in (("--alloc", "alloc", "allocation", "alloc"),
                                    ("--locks", "lock", "lock", "locks"),
                                    ("--io", "io", "I/O", "io")):
            with self.subTest(opt=opt):
                p = self.report_raw(r.dump, opt)
                self.assertEqual((p.returncode, p.stderr), (0, ""))
                self.assertEqual(p.stdout, "no %s calls in this dump: record with --libcalls=%s\n"
                                 % (what, cls))
                sec = self.lc_json(r.dump, opt)[key]
                self.assertFalse(sec["recorded"])
                self.assertEqual(sec["callers"], [])
        # All three at once: each said in its place.
        p = self.report_raw(r.dump, "--alloc", "--locks", "--io")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(p.stdout,
                         "no allocation calls in this dump: record with --libcalls=alloc\n\n"
                         "no lock calls in this dump: record with --libcalls=lock\n\n"
                         "no I/O calls in this dump: record with --libcalls=io\n")
        # A class recorded with no calls made: its tables, empty.
        r = self.run_lc("preload", ["sleep"], "sleep,lock")
        sec = self.lc_json(r.dump, "--locks")["locks"]
        self.assertEqual((sec["recorded"], sec["callers"], sec["locks"]), (True, [], []))
        p = self.report_raw(r.dump, "--locks")
        self.assertTrue(p.stdout.startswith("lock waits by caller"), p.stdout)

    def test_sync_objects(self):
        """Condition waits, rwlocks and semaphores: each call one zone of its
        own name, the failed tries with their error numbers."""
        r = self.run_lc("preload", ["sync"], "lock")
        m = re.fullmatch(r"cond waits ([0-9]+) busy 16 again 11\n", r.stdout)
        self.assertTrue(m, r.stdout)
        waits = int(m.group(1))
        self.assertGreaterEqual(waits, 0)
        funcs = self.functions(self.report(r.dump))
        self.assert_calls(funcs, {"pthread_rwlock_rdlock": 2, "pthread_rwlock_wrlock": 1,
                                  "pthread_rwlock_tryrdlock": 1, "pthread_rwlock_unlock": 3,
                                  "sem_wait": 2, "sem_trywait": 1,
                                  "pthread_mutex_lock": 2, "pthread_mutex_unlock": 2})
        if waits:
            self.assertEqual(funcs["pthread_cond_wait"]["calls"], waits)
        lk = self.lc_json(r.dump, "--locks")["locks"]
        callers = {(c["function"], c["call"]): c["calls"] for c in lk["callers"]}
        self.assertEqual(callers[("do_sync", "sem_wait")], 2)
        self.assertEqual(callers[("do_sync", "pthread_rwlock_rdlock")], 2)
        self.assertNotIn(("do_sync", "pthread_rwlock_unlock"), callers)

    # -- I/O ------------------------------------------------------------------------

    def test_io_exact(self):
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    out = self.path("io-%s-%s.out" % (level, mode))
                    r = self.run_lc(mode, ["io", out], "io", level)
                    m = re.fullmatch(r"write fd ([0-9]+) read fd ([0-9]+)\n", r.stdout)
                    self.assertTrue(m, r.stdout)
                    io = self.lc_json(r.dump, "--io")["io"]
                    fds = self.rows(io["fds"], "fd")
                    # open, write 100, write 200, writev 75, pwrite 10, close
                    self.assertEqual(fds[m.group(1)]["calls"], 6)
                    self.assertEqual(fds[m.group(1)]["bytes_asked"], 385)
                    self.assertEqual(fds[m.group(1)]["bytes_done"], 385)
                    # open, read 1000 (385), read 1000 (0), close
                    self.assertEqual((fds[m.group(2)]["calls"], fds[m.group(2)]["bytes_asked"],
                                      fds[m.group(2)]["bytes_done"],
                                      fds[m.group(2)]["errors"]), (4, 2000, 385, 0))
                    callers = self.rows(io["callers"], "function")
                    self.assertEqual((callers["do_io"]["calls"], callers["do_io"]["bytes_asked"],
                                      callers["do_io"]["bytes_done"]), (10, 2385, 770))
                    funcs = self.functions(self.report(r.dump))
                    # The programs are built with 64-bit file offsets: their
                    # open and pwrite are open64 and pwrite64.
                    self.assert_calls(funcs, {"open64": 2, "write": 2, "writev": 1,
                                              "pwrite64": 1, "read": 2, "close": 2})
                    self.assertNotIn("open", funcs)

    # -- sleeps -------------------------------------------------------------------------

    def test_sleep(self):
        r = self.run_lc("preload", ["sleep"], "sleep")
        funcs = self.functions(self.report(r.dump))
        self.assert_calls(funcs, {"napper": 1, "nanosleep": 1, "usleep": 1})
        self.assertGreaterEqual(funcs["nanosleep"]["total_ns"], 20_000_000)
        self.assertGreaterEqual(funcs["usleep"]["total_ns"], 1_000_000)
        # The sleeps are napper's time (its callees).
        self.assertLess(funcs["napper"]["self_ns"], funcs["napper"]["total_ns"] - 21_000_000)
        g = subprocess.run([tahelp.TRACEAGENT, "graph", r.dump], env=tahelp.clean_env(),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(g.returncode, 0, g.stderr)
        self.assertRegex(g.stdout, r"\n +1 .*  napper\n +1 .*    nanosleep  \[libcall\]\n")

    # -- nothing changes for the program ---------------------------------------------------

    def test_errno_and_results_unchanged(self):
        for level in LEVELS:
            with self.subTest(level=level):
                prog = self.prog("libcalls-" + level)
                plain = self.run_plain([prog, "errno"])
                self.assertEqual(plain.stdout,
                                 "read -1 errno 9\nopen -1 errno 2\nclose -1 errno 9\n"
                                 "malloc errno 1234\nhuge (nil) errno 12\ntrylock 16\n")
                r = self.run_lc("preload", ["errno"], "all", level)
                self.assertEqual(r.stdout, plain.stdout)
                io = self.lc_json(r.dump, "--io")["io"]
                fds = self.rows(io["fds"], "fd")
                self.assertEqual(fds["-1"]["errors"], 3)  # read, open, close

    def test_constructors_and_atexit(self):
        """Allocation, locks and writes in a constructor, the program, an
        atexit handler and a destructor: same output, no recursion or
        deadlock, every class recorded."""
        prog = self.prog("libcalls-O2")
        expect = "constructor ok\nmain ok\natexit ok\ndestructor ok\n"
        plain = self.run_plain([prog, "ctor"], env={"LIBCALLS_CTOR": "1"})
        self.assertEqual(plain.stdout, expect)
        for mode in MODES:
            with self.subTest(mode=mode):
                r = self.run_lc(mode, ["ctor"], "all", env={"LIBCALLS_CTOR": "1"})
                self.assertEqual(r.stdout, expect)
                rep = self.report(r.dump)
                self.assert_whole(rep)
                funcs = self.functions(rep)
                # churn runs four times; the last (the destructor) after
                # the agent may have stopped, so at least three are seen.
                self.assertGreaterEqual(funcs["churn"]["calls"], 3)
                for name in ("malloc", "realloc", "free", "pthread_mutex_lock", "write"):
                    self.assertGreaterEqual(funcs[name]["calls"], funcs["churn"]["calls"],
                                            name)

    def test_preload_order(self):
        """Another preloaded library whose constructor allocates (libstdc++'s
        exception pool), loaded before and after the agent: the interposers
        serve it before the agent is initialised, without recursion."""
        # One of the agent's architecture (an emulated run's is not the
        # host compiler's).
        found = [subprocess.run(["gcc", "-print-file-name=libstdc++.so.6"],
                                capture_output=True, text=True).stdout.strip()]
        found += sorted(glob.glob("/usr/lib/*-linux-gnu/libstdc++.so.6") +
                        glob.glob("/usr/*-linux-gnu/lib/libstdc++.so.6"))
        want = tahelp.elf_machine(tahelp.AGENT)
        cxx = next((c for c in found if os.path.isabs(c) and os.path.exists(c) and
                    tahelp.elf_machine(c) == want), None)
        if cxx is None:
            self.skipTest("no libstdc++.so.6 of the agent's architecture to preload")
        prog = self.prog("libcalls-O2")
        expect = "constructor ok\nmain ok\natexit ok\ndestructor ok\n"
        for order in ((tahelp.AGENT, cxx), (cxx, tahelp.AGENT)):
            with self.subTest(order=order):
                dump = self.fresh("order")
                p = subprocess.run([prog, "ctor"], env=tahelp.clean_env(
                    {"LD_PRELOAD": ":".join(order), "TRACEAGENT_OUTPUT": dump,
                     "TRACEAGENT_LIBCALLS": "all", "LIBCALLS_CTOR": "1"}),
                    capture_output=True, text=True, timeout=tahelp.TIMEOUT, cwd=self.dir)
                self.assertEqual((p.returncode, p.stdout, p.stderr), (0, expect, ""))
                funcs = self.functions(self.report(dump))
                self.assertGreaterEqual(funcs["malloc"]["calls"], 3)

    # -- choosing the classes ------------------------------------------------------------------

    def test_none_records_none(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                out = self.path("none-%s.out" % mode)
                r = self.run_lc(mode, ["io", out], "none")
                funcs = self.functions(self.report(r.dump))
                self.assertEqual([f for f in funcs.values() if f["module"] == LIB], [])
                self.assertEqual(self.chunk_types(r.dump).count(12), 0)
                io = self.lc_json(r.dump, "--io")["io"]
                self.assertEqual((io["fds"], io["callers"]), ([], []))

    def test_classes_selected(self):
        """alloc,lock records allocations but no I/O; the default (io and
        sleep) records I/O but no allocations."""
        out = self.path("sel.out")
        r = self.run_lc("preload", ["io", out], "alloc,lock")
        funcs = self.functions(self.report(r.dump))
        self.assertIn("malloc", funcs)
        self.assertNotIn("write", funcs)
        r = self.run_lc("preload", ["io", out], None)
        funcs = self.functions(self.report(r.dump))
        self.assertNotIn("malloc", funcs)
        self.assert_calls(funcs, {"write": 2, "read": 2})

    def test_bad_setting(self):
        prog = self.prog("libcalls-O2")
        r = self.run_preload([prog, "sleep"], env={"TRACEAGENT_LIBCALLS": "alloc,bogus"})
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stderr_lines(),
                         ["traceagent: TRACEAGENT_LIBCALLS: 'bogus' is not all, none, alloc, "
                          "lock, io or sleep; using the default"])
        funcs = self.functions(self.report(r.dump))
        self.assertIn("nanosleep", funcs)  # the default has sleep
        self.assertNotIn("malloc", funcs)

    # -- the views -------------------------------------------------------------------------------

    def test_views_mark_library_calls(self):
        r = self.run_lc("preload", ["sleep"], "sleep")
        rp = subprocess.run([tahelp.TRACEAGENT, "replay", r.dump], env=tahelp.clean_env(),
                            capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(rp.returncode, 0, rp.stderr)
        self.assertRegex(rp.stdout, r"  nanosleep\(\); \[libcall\]\n")
        chrome = self.path("x.json")
        ex = subprocess.run([tahelp.TRACEAGENT, "export", "--format=chrome", "-o", chrome,
                             r.dump], env=tahelp.clean_env(), capture_output=True, text=True,
                            timeout=tahelp.TIMEOUT)
        self.assertEqual(ex.returncode, 0, ex.stderr)
        with open(chrome) as fh:
            doc = json.load(fh)
        evs = doc["traceEvents"] if isinstance(doc, dict) else doc
        cats = {e["name"]: e.get("cat") for e in evs if e.get("ph") == "X"}
        self.assertEqual(cats["nanosleep"], "libcall")
        self.assertTrue(cats["napper"].startswith("function,"), cats["napper"])
        svg = self.path("x.svg")
        fl = subprocess.run([tahelp.TRACEAGENT, "flame", "-o", svg, r.dump],
                            env=tahelp.clean_env(), capture_output=True, text=True,
                            timeout=tahelp.TIMEOUT)
        self.assertEqual(fl.returncode, 0, fl.stderr)
        with open(svg) as fh:
            text = fh.read()
        # Library calls in blues, with [libcall] in the tooltip.
        m = re.search(r"<title>nanosleep\n\[libcall\]\n[^<]*</title><rect [^>]*"
                      r"fill=\"rgb\(([0-9]+),([0-9]+),([0-9]+)\)\"", text)
        self.assertTrue(m, text[:2000])
        r_, g_, b_ = (int(x) for x in m.groups())
        self.assertGreater(b_, r_)
        m = re.search(r"<title>napper\n[^<]*</title><rect [^>]*"
                      r"fill=\"rgb\(([0-9]+),([0-9]+),([0-9]+)\)\"", text)
        self.assertTrue(m)
        self.assertLess(int(m.group(3)), int(m.group(1)))

    # -- helpers -------------------------------------------------------------------------------

    def chunk_types(self, dump):
        return [c[1] for c in tahelp.chunks(dump)]


if __name__ == "__main__":
    tahelp.main()
