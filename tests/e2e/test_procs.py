# SPDX-License-Identifier: MIT
"""Every process of a recording (issue 30): children started by posix_spawn,
vfork + exec, system() and fork + exec append to the one dump the first
process created, each a process of its own (pid, parent, command line, exec
chain) with exact counts in the views' totals and --pid; with %p in the
output, one dump per process, each named by record.  And processes given
the same pid, started in the same clock tick, are told apart."""

import glob
import json
import os
import re
import shutil
import struct
import subprocess

import tahelp
from tahelp import LEVELS, MODES, TRACEAGENT


# family's children: K -> calls of work() (6: one before its exec, then 6).
CHILD_CALLS = {2: 2, 3: 3, 4: 4, 5: 5, 6: 7}


class ProcsTest(tahelp.Case):

    def family(self, out):
        """The pids family printed: parent, and K -> (pid, ppid)."""
        kids, parent = {}, None
        for line in out.splitlines():
            m = re.match(r"^child (\d) pid (\d+) ppid (\d+)$", line)
            if m:
                kids[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
            m = re.match(r"^parent (\d+)$", line)
            if m:
                parent = int(m.group(1))
        self.assertEqual(sorted(kids), sorted(CHILD_CALLS), out)
        self.assertIsNotNone(parent, out)
        return parent, kids

    def calls_of(self, dump, pid):
        rep = self.report(dump, "--pid=%d" % pid)
        return {f["name"]: f["calls"] for f in rep["functions"]
                if f["name"] in ("main", "work")}

    def test_every_way_one_dump(self):
        for level in LEVELS:
            prog = self.prog("family-" + level)
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    r = self.traced(mode, [prog])
                    parent, kids = self.family(r.stdout)
                    rep = self.report(r.dump)
                    self.assert_whole(rep, processes=1 + len(kids))
                    self.assert_calls(self.functions(rep),
                                      {"main": 1 + len(kids),
                                       "work": 1 + sum(CHILD_CALLS.values())})
                    procs = {p["pid"]: p for p in self.info(r.dump)["processes"]}
                    self.assertEqual(sorted(procs),
                                     sorted([parent] + [pid for pid, _ in kids.values()]))
                    self.assertEqual(procs[parent]["argv"], [prog])
                    self.assertEqual(self.calls_of(r.dump, parent), {"main": 1, "work": 1})
                    for k, (pid, ppid) in sorted(kids.items()):
                        p = procs[pid]
                        # system()'s shell names the program by its path.
                        self.assertEqual((p["pid_nth"], p["ppid"], p["argv"]),
                                         (1, ppid, [prog if k == 4 else "family", "child",
                                                    str(k)]), k)
                        self.assertEqual(self.calls_of(r.dump, pid),
                                         {"main": 1, "work": CHILD_CALLS[k]}, "child %d" % k)
                    # Those started from the parent itself name it.
                    for k in (2, 3, 5, 6):
                        self.assertEqual(kids[k][1], parent)
                    # The fork + exec child with a call before its exec:
                    # one process of two images.
                    images = {p["pid"]: p["images"] for p in rep["process_list"]}
                    self.assertEqual(images[kids[6][0]], [prog, prog])
                    self.assertEqual(images[kids[5][0]], [prog])

    def test_uninstrumented_parent(self):
        """A shell that runs no instrumented code (make, a test runner):
        the processes it starts one after the other share record's file."""
        self.need_host_program("/bin/sh")
        prog = self.prog("family-O2")
        r = self.run_record(["/bin/sh", "-c", "%s child 2; %s child 3" % (prog, prog)])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr_lines(), ["traceagent: dump written to " + r.dump])
        kids = {}
        for line in r.stdout.splitlines():
            m = re.match(r"^child (\d) pid (\d+) ppid (\d+)$", line)
            kids[int(m.group(1))] = int(m.group(2))
        rep = self.report(r.dump)
        self.assert_whole(rep, processes=2)
        for k, pid in kids.items():
            self.assertEqual(self.calls_of(r.dump, pid), {"main": 1, "work": k})

    def test_file_not_overwritten(self):
        """The token names a file by device, inode and the recording's id
        in its header: a file put in its place, or another recording's, is
        never appended to, and the process says why it does not trace."""
        prog = self.prog("family-O2")
        dump = self.fresh("moved")
        r = self.run_preload([prog, "child", "2"], dump=dump,
                             env={"TRACEAGENT_DUMP_FILE": "1:2:%016x:1:%s" % (0, dump)})
        # Not the token's setting nor file: the process creates its own.
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assert_calls(self.functions(self.report(dump)), {"work": 2})
        with open(dump, "rb") as fh:
            before = fh.read()
        st = os.stat(dump)
        rec = struct.unpack_from("<I", before, 24)[0]
        self.assertNotEqual(rec, 0)
        for token in ("%d:%d:%016x:%08x:%s" % (st.st_dev, st.st_ino + 1, fnv(dump), rec, dump),
                      "%d:%d:%016x:%08x:%s" % (st.st_dev, st.st_ino, fnv(dump), rec ^ 1, dump),
                      "0:0:%016x:%08x:%s" % (fnv(dump), rec ^ 1, dump)):
            with self.subTest(token=token):
                r = self.run_preload([prog, "child", "3"], dump=dump,
                                     env={"TRACEAGENT_DUMP_FILE": token})
                self.assertEqual(r.returncode, 0)
                self.assertIn("a file is already there (not overwritten)", r.stderr)
                with open(dump, "rb") as fh:
                    self.assertEqual(fh.read(), before)
        self.assertEqual(os.listdir(self.dir), [os.path.basename(dump)])

    def test_same_file_other_name(self):
        """A descendant whose setting names the recording's file another
        way (relative, from the directory it runs in) joins it too."""
        prog = self.prog("family-O2")
        dump = self.fresh("spelled")
        first = self.run_preload([prog, "child", "2"], dump=dump)
        self.assertEqual((first.returncode, first.stderr), (0, ""))
        st = os.stat(dump)
        with open(dump, "rb") as fh:
            rec = struct.unpack_from("<I", fh.read(32), 24)[0]
        token = "%d:%d:%016x:%08x:%s" % (st.st_dev, st.st_ino, fnv(dump), rec, dump)
        r = self.run_preload([prog, "child", "3"], dump="./" + os.path.basename(dump),
                             env={"TRACEAGENT_DUMP_FILE": token})
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        rep = self.report(dump)
        self.assert_whole(rep, processes=2)
        self.assert_calls(self.functions(rep), {"main": 2, "work": 5})

    def test_preload_uninstrumented_parent(self):
        """LD_PRELOAD on a shell that runs no instrumented code: its
        children, one after the other and at the same time, share the one
        file (the first to trace creates it), and the shell writes none."""
        self.need_host_program("/bin/sh")
        prog = self.prog("family-O2")
        script = "%s child 2; %s child 3 & %s child 4 & %s child 5 & wait" % ((prog,) * 4)
        dumps = []
        for mode in MODES:
            with self.subTest(mode=mode):
                r = self.traced(mode, ["/bin/sh", "-c", script])
                dumps.append(os.path.basename(r.dump))
                kids = {}
                for line in r.stdout.splitlines():
                    m = re.match(r"^child (\d) pid (\d+) ppid (\d+)$", line)
                    kids[int(m.group(1))] = int(m.group(2))
                self.assertEqual(sorted(kids), [2, 3, 4, 5])
                rep = self.report(r.dump)
                self.assert_whole(rep, processes=4)
                for k, pid in kids.items():
                    self.assertEqual(self.calls_of(r.dump, pid), {"main": 1, "work": k})
                self.assertEqual(sorted(os.listdir(self.dir)), dumps)

    def test_system_and_popen_from_untraced_parent(self):
        """A parent that never traces (built without instrumentation) and
        runs its children with system() and popen(): one dump, every
        child in it with its calls."""
        self.need_host_program("/bin/sh")
        prog = self.prog("family-O2")
        argv = [self.prog("sysroot")] + ["%s child %d" % (prog, k) for k in (2, 3, 4)]
        for mode in MODES:
            with self.subTest(mode=mode):
                r = self.traced(mode, argv)
                kids = {int(m.group(1)): int(m.group(2)) for m in
                        re.finditer(r"^child (\d) pid (\d+) ppid \d+$", r.stdout, re.M)}
                self.assertEqual(sorted(kids), [2, 3, 4], r.stdout)
                rep = self.report(r.dump)
                self.assert_whole(rep, processes=3)
                for k, pid in kids.items():
                    self.assertEqual(self.calls_of(r.dump, pid), {"main": 1, "work": k})

    def test_concurrent_writers(self):
        """Processes writing the one file at the same time (small blocks,
        a small flush interval) never cut into each other's chunks: every
        one is read, every call counted."""
        self.need_host_program("/bin/sh")
        fib = self.prog("fib-O2")
        n = 4
        script = " ".join("%s 20 &" % fib for _ in range(n)) + " wait"
        for mode in MODES:
            with self.subTest(mode=mode):
                r = self.traced(mode, ["/bin/sh", "-c", script],
                                env={"TRACEAGENT_FLUSH_MS": "1", "TRACEAGENT_BUFFER": "4K"})
                self.assertEqual(r.stdout, "fib(20) = 6765\n" * n)
                rep = self.report(r.dump, "--threads")
                self.assert_whole(rep, processes=n)
                self.assertEqual(sorted(t["functions"] and
                                        {f["name"]: f["calls"] for f in t["functions"]}["fib"]
                                        for t in rep["per_thread"]),
                                 [tahelp.fib_calls(20)] * n)
                self.assertEqual(self.info(r.dump)["errors"], [])

    def test_refused_leaves_no_file(self):
        """The file record made for the recording, when no agent could
        trace (the ring's memory refused): removed, and not claimed; the
        agent's own line says why."""
        self.need_host_program("/bin/sh")
        dump = self.fresh("refused")
        cmd = "ulimit -v 1000000 && exec %s record -o %s --memory 2G -- %s 5" % (
            TRACEAGENT, dump, self.prog("fib-O2"))
        p = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, text=True,
                           cwd=self.dir, env=tahelp.clean_env(), timeout=tahelp.TIMEOUT)
        self.assertEqual((p.returncode, p.stdout), (0, "fib(5) = 5\n"), p.stderr)
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("cannot reserve 2147483648 bytes of ring memory", lines[0])
        self.assertEqual(os.listdir(self.dir), [])

    def test_forked_child_in_call_trees(self):
        """The call trees (graph, -j1 and -j2, and the folded export) hold
        a forked child's calls, under the frames its parent entered before
        the fork (no call of the child's there): the totals of every
        process, as report has them."""
        prog = self.prog("fork-O2")
        r = self.traced("preload", [prog])
        calls = {f["name"]: f["calls"] for f in self.report(r.dump)["functions"]}
        self.assertEqual((calls["parent_work"], calls["child_work"]), (3, 5))

        def paths(tree, up=""):
            out = {}
            for n in tree:
                out[up + n["name"]] = n["calls"]
                out.update(paths(n["children"], up + n["name"] + ";"))
            return out

        for jobs in ("-j1", "-j2"):
            with self.subTest(jobs=jobs):
                p = subprocess.run([TRACEAGENT, "graph", "--json", jobs, r.dump],
                                   capture_output=True, text=True, env=tahelp.clean_env())
                self.assertEqual(p.returncode, 0, p.stderr)
                got = paths(json.loads(p.stdout)["tree"])
                self.assertEqual(got, {"main": 1, "main;parent_work": 3,
                                       "main;child_work": 5})
                p = subprocess.run([TRACEAGENT, "graph", "--json", "--threads", jobs, r.dump],
                                   capture_output=True, text=True, env=tahelp.clean_env())
                self.assertEqual(p.returncode, 0, p.stderr)
                per = [paths(t["children"]) for t in json.loads(p.stdout)["tree"]]
                self.assertEqual(per, [{"main": 1, "main;parent_work": 3},
                                       {"main": 0, "main;child_work": 5}])
        folded = self.path("fork.folded")
        p = subprocess.run([TRACEAGENT, "export", "--format=folded", "-o", folded, r.dump],
                           capture_output=True, text=True, env=tahelp.clean_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(folded) as fh:
            stacks = sorted(l.rsplit(" ", 1)[0] for l in fh)
        self.assertEqual(stacks, ["main", "main;child_work", "main;parent_work"])

    def test_pid_pattern_lists_every_dump(self):
        """With %p each process that is not a forked child writes its own
        dump, and record names every one."""
        prog = self.prog("family-O2")
        pattern = self.path("fam-%p.trace")
        r = self.run_record([prog], dump=pattern)
        self.assertEqual(r.returncode, 0, r.stderr)
        parent, kids = self.family(r.stdout)
        lines = r.stderr_lines()
        self.assertEqual(len(lines), 1, r.stderr)
        prefix = "traceagent: dumps written to "
        self.assertTrue(lines[0].startswith(prefix), lines[0])
        listed = lines[0][len(prefix):].split(", ")
        # The program's first; the fork + work + exec child went on in
        # its parent's file, as a forked child does.
        own = [parent] + [kids[k][0] for k in (2, 3, 4, 5)]
        self.assertEqual(listed[0], pattern.replace("%p", str(parent)))
        self.assertEqual(sorted(listed), sorted(pattern.replace("%p", str(p)) for p in own))
        self.assertEqual(sorted(glob.glob(self.path("fam-*.trace"))), sorted(listed))
        work = 0
        for path in listed:
            rep = self.report(path)
            work += self.functions(rep)["work"]["calls"]
        self.assertEqual(work, 1 + sum(CHILD_CALLS.values()))

    def test_pid_reused_same_tick(self):
        """Children given one pid in a new PID namespace (ns_last_pid),
        the later ones started in the earlier one's clock tick (a time
        namespace set back): each is a process of its own in every view,
        with its exact calls."""
        tahelp.Case.skip_if_emulated(self, "qemu-user emulates /proc/self/stat")
        unshare = shutil.which("unshare")
        probe = unshare and subprocess.run([unshare, "--pid", "--fork", "--mount-proc", "true"],
                                           capture_output=True, text=True)
        if not probe or probe.returncode != 0:
            self.skipTest("cannot make a PID namespace (unshare --pid --fork --mount-proc "
                          "needs root): %s" % (probe.stderr.strip() if probe else "no unshare"))
        for mode in MODES:
            with self.subTest(mode=mode):
                dump = self.fresh("again")
                argv = [unshare, "--pid", "--fork", "--mount-proc"]
                if mode == "preload":
                    argv += ["env", "LD_PRELOAD=" + tahelp.AGENT, "TRACEAGENT_OUTPUT=" + dump]
                else:
                    argv += [TRACEAGENT, "record", "-o", dump, "--"]
                argv.append(self.prog("pidagain-O2"))
                p = subprocess.run(argv, capture_output=True, text=True, cwd=self.dir,
                                   env=tahelp.clean_env(), timeout=tahelp.TIMEOUT)
                self.assertEqual(p.returncode, 0, p.stderr)
                kids = [tuple(int(x) for x in m.groups()) for m in
                        re.finditer(r"^child (\d+) start (\d+) calls (\d+)$", p.stdout, re.M)]
                same = re.search(r"^same-tick (\d+) timens (\d)$", p.stdout, re.M)
                self.assertTrue(same and kids, p.stdout)
                timens = int(same.group(2))
                # The case checked: a pid and a start tick given twice.
                if timens:
                    self.assertGreaterEqual(int(same.group(1)), 1,
                                            "no child started in the first one's tick:\n" +
                                            p.stdout)
                # Each child is the next process of its pid (a later one
                # may have got another pid: a thread took the first's).
                nth, want_start, want_calls = {}, {}, {}
                for cpid, start, calls in kids:
                    nth[cpid] = nth.get(cpid, 0) + 1
                    want_start[(cpid, nth[cpid])] = start
                    want_calls[(cpid, nth[cpid])] = calls
                # The pid given again: the first child's, or a later one's
                # when a thread of the agent took the first's for good.
                again = [cpid for cpid, n in nth.items() if n >= 2]
                self.assertEqual(len(again), 1, p.stdout)
                pid = again[0]
                rep = self.report(dump, "--threads")
                self.assertTrue(rep["complete"], rep["errors"])
                self.assertEqual((rep["errors"], rep["lost"]), ([], 0))
                self.assertEqual(rep["processes"], 1 + len(kids))
                starts = {(q["pid"], q["pid_nth"]): q["boot_start"]
                          for q in rep["process_list"] if q["pid"] in nth}
                self.assertEqual(starts, want_start)
                per = {}
                for t in rep["per_thread"]:
                    calls = {f["name"]: f["calls"] for f in t["functions"]}
                    per[(t["pid"], t["pid_nth"])] = calls.get("work")
                self.assertEqual({k: v for k, v in per.items() if k[0] in nth}, want_calls)
                info = subprocess.run([TRACEAGENT, "info", dump], capture_output=True,
                                      text=True, env=tahelp.clean_env())
                heads = [l for l in info.stdout.splitlines()
                         if l.startswith("process %d" % pid)]
                self.assertEqual([h.split(" (parent")[0] for h in heads],
                                 ["process %d" % pid] +
                                 ["process %d (%d)" % (pid, i) for i in range(2, nth[pid] + 1)])
                if not timens:
                    self.skipTest("no time namespace (CONFIG_TIME_NS): the reused pid was "
                                  "checked, a start in the same tick could not be forced")


def fnv(s):
    h = 0xcbf29ce484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


if __name__ == "__main__":
    tahelp.main()
