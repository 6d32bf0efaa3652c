# SPDX-License-Identifier: MIT
"""The command line forgives: every command takes an option's value as
getopt_long does ("--opt=value" or "--opt value", "-oVALUE" or "-o VALUE"),
--top cuts every table of report, including --alloc, --locks and --io, and
a usage error is one line with a hint, status 2."""

import json
import os
import re

import tahelp
from tahelp import TRACEAGENT

# Every command: an unknown option is one line naming it and the command's --help.
# tests/programs/family.c: child K -> its calls of work().
CHILD_CALLS = {2: 2, 3: 3, 4: 4, 5: 5, 6: 7}

COMMANDS = ["record", "attach", "report", "graph", "replay", "export", "flame", "diff", "info",
            "counters", "frames", "serve", "top", "ctl"]


class CmdlineTest(tahelp.Case):

    def lc_dump(self, mode, classes):
        r = self.traced("preload", [self.prog("libcalls-O2"), mode, self.path(mode + ".out")],
                        env={"TRACEAGENT_LIBCALLS": classes})
        return r.dump

    def run_ok(self, argv):
        r = self.run_plain([TRACEAGENT] + argv)
        self.assertEqual(r.returncode, 0, "%s: %s" % (argv, r.stderr))
        return r.stdout

    def test_top_cuts_library_tables(self):
        for view, mode, classes, tables in (("--io", "io", "io", ("fds", "callers")),
                                            ("--locks", "sync", "lock", ("callers", "locks")),
                                            ("--alloc", "alloc", "alloc", ("callers", "live"))):
            with self.subTest(view=view):
                dump = self.lc_dump(mode, classes)
                key = view[2:]
                full = json.loads(self.run_ok(["report", "--json", view, dump]))[key]
                # Something to cut: a table of several rows.
                self.assertGreater(max(len(full[t]) for t in tables), 1, full)
                for top in (["--top=1"], ["--top", "1"]):
                    cut = json.loads(self.run_ok(["report", "--json", view] + top + [dump]))[key]
                    for t in tables:
                        self.assertEqual(cut[t], full[t][:1], (top, t))
                    # Totals count every row.
                    for k in full:
                        if k not in tables:
                            self.assertEqual(cut[k], full[k], (top, k))
                    text = self.run_ok(["report", view] + top + [dump])
                    whole = self.run_ok(["report", view, dump])
                    self.assertLess(len(text.splitlines()), len(whole.splitlines()))

    def test_values_either_form(self):
        r = self.traced("record", [self.prog("fib-O0"), "10"],
                        options=["--depth", "5", "--mode", "lossless"])
        dump = r.dump
        # "--opt value" and "--opt=value" give the same output.
        for eq, sp in ((["report", "--top=3", "--sort=self"], ["report", "--top", "3", "--sort", "self"]),
                       (["graph", "--depth=2"], ["graph", "--depth", "2"]),
                       (["replay", "--depth=2"], ["replay", "--depth", "2"]),
                       (["export", "--format=folded", "--output=-"],
                        ["export", "--format", "folded", "--output", "-"]),
                       (["export", "--format=folded", "-o-"], ["export", "--format", "folded", "-o", "-"])):
            with self.subTest(argv=sp):
                self.assertEqual(self.run_ok(sp + [dump]), self.run_ok(eq + [dump]))
        # A flag never takes the next word: the dump after --json is the dump.
        self.assertEqual(json.loads(self.run_ok(["info", "--json", dump]))["processes"][0]["argv"],
                         [self.prog("fib-O0"), "10"])
        # -jN and -j N.
        self.assertEqual(self.run_ok(["report", "-j2", dump]), self.run_ok(["report", "-j", "2", dump]))

    def test_attach_values_either_form(self):
        # Parsed, then refused for the process that is not there: status 1.
        nopid = "4194305"  # above the largest pid Linux gives (2^22)
        for argv in (["--duration=1s", nopid], ["--duration", "1s", nopid],
                     ["-o" + self.path("a.trace"), "--mode=drop", nopid],
                     [nopid, "--filter", "main", "--depth=3"]):
            with self.subTest(argv=argv):
                r = self.run_plain([TRACEAGENT, "attach"] + argv)
                self.assertEqual((r.returncode, r.stderr),
                                 (1, "traceagent: attach: no process %s\n" % nopid))
        r = self.run_plain([TRACEAGENT, "attach", "--duration=soon", nopid])
        self.assertEqual((r.returncode, r.stderr),
                         (2, "traceagent attach: --duration: 'soon' is not a time "
                             "(10, 10s, 500ms, 2m)\n"))

    def test_usage_error_one_line(self):
        for cmd in COMMANDS:
            with self.subTest(cmd=cmd):
                r = self.run_plain([TRACEAGENT, cmd, "--foo", "x.trace"])
                self.assertEqual((r.returncode, r.stdout, r.stderr),
                                 (2, "", "traceagent %s: unknown option '--foo'; try "
                                         "'traceagent %s --help'\n" % (cmd, cmd)))
        for argv, msg in ((["report"], "report: no dump given"),
                          (["report", "--top"], "report: option '--top' needs a value"),
                          (["graph", "-j"], "graph: option '-j' needs a value"),
                          (["record"], "record: no program to run"),
                          (["record", "-o"], "record: option '-o' needs a value"),
                          (["attach"], "attach: no process id given"),
                          (["attach", "--duration"], "attach: option '--duration' needs a value"),
                          (["attach", "1", "2"], "attach: one process at a time ('1' and '2')"),
                          (["diff", "a.trace"], "diff: two dumps are needed, BASE and NEW"),
                          (["export", "a.trace"],
                           "export: say --format=chrome, folded, perfetto or pprof"),
                          (["top", "--batch"],
                           "top: nothing to watch: give -- PROG, DUMP, --serve or -p"),
                          (["serve", "x"], "serve: unexpected argument 'x'"),
                          (["ctl"], "ctl: no process id given")):
            with self.subTest(argv=argv):
                r = self.run_plain([TRACEAGENT] + argv)
                cmd = argv[0]
                self.assertEqual((r.returncode, r.stdout, r.stderr),
                                 (2, "", "traceagent %s; try 'traceagent %s --help'\n"
                                  % (msg, cmd)))
        r = self.run_plain([TRACEAGENT, "nosuch"])
        self.assertEqual((r.returncode, r.stderr),
                         (2, "traceagent: unknown command 'nosuch'; try 'traceagent --help'\n"))

    def test_report_several_dumps(self):
        """A recording with %p (one dump per process) is one report from its
        files or their directory: totals and --pid as for the one dump of
        a recording without %p."""
        prog = self.prog("family-O2")
        d = self.path("fam")
        os.mkdir(d)
        r = self.run_record([prog], dump=os.path.join(d, "%p.trace"))
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        pids = [int(p) for p in re.findall(r"^parent (\d+)$", out, re.M)]
        pids += [int(p) for p in re.findall(r"^child \d pid (\d+)", out, re.M)]
        self.assertEqual(len(pids), 6, r.stdout)
        files = sorted(os.path.join(d, f) for f in os.listdir(d))
        self.assertEqual(len(files), 5)  # the forked child goes on in its parent's

        def calls(rep):
            return {f["name"]: f["calls"] for f in rep["functions"]
                    if f["name"] in ("main", "work")}

        rep = json.loads(self.run_ok(["report", "--json"] + files))
        self.assertEqual((rep["dump"], rep["dumps"], rep["processes"], rep["complete"]),
                         (", ".join(files), files, 6, True))
        self.assertEqual(calls(rep), {"main": 6, "work": 22})
        self.assertEqual(sorted(p["pid"] for p in rep["process_list"]), sorted(pids))
        # The same from the directory, which is named with the files read.
        r = self.run_plain([TRACEAGENT, "report", "--json", d + "/"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "traceagent report: %s/: reading 5 dumps: %s\n"
                         % (d, " ".join(os.path.basename(f) for f in files)))
        drep = json.loads(r.stdout)
        self.assertEqual((drep["dump"], drep["dumps"]), (d + "/", files))
        self.assertEqual(drep["functions"], rep["functions"])
        # Each process by --pid: its own calls (family's child K calls work
        # CHILD_CALLS[K] times, the parent once).
        want = {int(m.group(2)): CHILD_CALLS[int(m.group(1))]
                for m in re.finditer(r"^child (\d) pid (\d+)", out, re.M)}
        want[pids[0]] = 1
        for pid in pids:
            prep = json.loads(self.run_ok(["report", "--json", "--pid=%d" % pid, d]))
            self.assertEqual(calls(prep), {"main": 1, "work": want[pid]}, pid)
        # -j N gives the same.
        self.assertEqual(self.run_ok(["report", "-j1", "--json"] + files),
                         self.run_ok(["report", "-j3", "--json"] + files))
        # A file that is not a dump: named, status 2, no report.
        with open(os.path.join(d, "notes.trace"), "w") as fh:
            fh.write("not a dump\n")
        r = self.run_plain([TRACEAGENT, "report", d])
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertEqual(r.stderr.splitlines()[-1],
                         "traceagent: %s: not a dump (file header at offset 0: not a "
                         "traceagent dump (bad magic))" % os.path.join(d, "notes.trace"))
        r = self.run_plain([TRACEAGENT, "report", self.path("empty")])
        self.assertEqual(r.returncode, 2)
        os.mkdir(self.path("empty"))
        r = self.run_plain([TRACEAGENT, "report", self.path("empty")])
        self.assertEqual((r.returncode, r.stderr),
                         (2, "traceagent report: %s: no dump in it (no file named *.trace)\n"
                          % self.path("empty")))


if __name__ == "__main__":
    tahelp.main()
