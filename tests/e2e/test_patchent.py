# SPDX-License-Identifier: MIT
"""Patchable-entry builds (agent/patchent.c): peprog, built WITHOUT
-finstrument-functions but with -fpatchable-function-entry=N[,M] by GCC and
by Clang, traced at its no-op areas at start (TRACEAGENT_PATCH, record
--patch) and by `attach --patch`, without capstone.  The counts are exact
and equal the program's own; after the detach the code is its file's byte
for byte (the program compares itself); a function without an area, an
area too small and an address that is not code are refused and said; a
module without the section is left to the other patcher."""

import os
import re
import subprocess
import time
import unittest

import tahelp
from tahelp import fib_calls

X86_64 = tahelp.elf_machine(tahelp.AGENT) == 62
# The layouts each architecture's build has (tests/programs/meson.build):
# N bytes at the entry, or N of which M before the symbol, by GCC and Clang.
if X86_64:
    GOOD = ["peprog-5", "peprog-7-5", "peprog-endbr", "peprog-clang-5", "peprog-clang-7-5"]
    TOO_SMALL = ["peprog-2", "peprog-clang-2"]
else:
    GOOD = ["peprog-2", "peprog-4-2", "peprog-5"]
    TOO_SMALL = ["peprog-2-2"]
SUMMARY = ("traceagent: patched %d functions at their patchable entries, refused %d%s")


def summary(patched, refused):
    return SUMMARY % (patched, refused, " (see traceagent info)" if refused else "")


def expected_line(n):
    fib = [0, 1]
    for _ in range(n):
        fib.append(fib[-1] + fib[-2])
    return ("fib(%d) = %d calls %d twice %d half %g untraced %d"
            % (n, fib[n], fib_calls(n), n * (n - 1), sum(i * 0.25 for i in range(n)), n + 1))


class PatchEntryTest(tahelp.Case):

    def setUp(self):
        super().setUp()
        self.need_feature("patchent")

    def counts(self, dump, n):
        rep = self.report(dump)
        self.assert_whole(rep)
        f = self.functions(rep)
        return {k: f[k]["calls"] for k in ("fib", "twice", "half") if k in f}

    def test_start(self):
        """At start, by TRACEAGENT_PATCH and by record --patch: each layout
        of each compiler traced exactly, the output the untraced one, one
        summary line, the functions named in the PATCH chunk's count."""
        n = 12
        for name in GOOD:
            prog = self.prog(name)
            for mode in tahelp.MODES:
                with self.subTest(prog=name, mode=mode):
                    if mode == "preload":
                        r = self.run_preload([prog, "fib", str(n)],
                                             env={"TRACEAGENT_PATCH": "fib,twice,half"})
                    else:
                        r = self.run_record([prog, "fib", str(n)],
                                            options=["--patch", "fib,twice,half"])
                    self.assertEqual((r.returncode, r.stdout), (0, expected_line(n) + "\n"),
                                     r.stderr)
                    lines = r.stderr_lines()
                    if mode == "record":
                        self.assertEqual(lines[-1], "traceagent: dump written to " + r.dump)
                        lines = lines[:-1]
                    self.assertEqual(lines, [summary(3, 0)])
                    self.assertEqual(self.counts(r.dump, n),
                                     {"fib": fib_calls(n), "twice": n, "half": n})
                    info = self.info(r.dump)["processes"][0]
                    self.assertEqual((info["patch"]["patched"], info["patch"]["relocated"],
                                      info["patch"]["patchable_entry"]), (3, 0, 3),
                                     info["patch"])

    def test_no_capstone(self):
        """No disassembler is opened for a module built with patchable
        entries."""
        prog = self.prog(GOOD[0])
        r = self.run_preload([prog, "maps"], env={"TRACEAGENT_PATCH": "fib"})
        self.assertEqual((r.returncode, r.stdout),
                         (0, expected_line(10) + "\ncapstone no\n"), r.stderr)
        self.assertEqual(self.counts(r.dump, 10), {"fib": fib_calls(10)})

    def test_refused(self):
        """untraced() has no area (its attribute): refused, named in the
        PATCH chunk, the others traced."""
        prog = self.prog(GOOD[0])
        r = self.run_preload([prog, "fib", "8"],
                             env={"TRACEAGENT_PATCH": "fib,twice,half,untraced"})
        self.assertEqual((r.returncode, r.stdout), (0, expected_line(8) + "\n"), r.stderr)
        self.assertEqual(r.stderr_lines(), [summary(3, 1)])
        self.assertEqual(self.counts(r.dump, 8), {"fib": fib_calls(8), "twice": 8, "half": 8})
        refused = self.info(r.dump)["processes"][0]["patch"]["refused"]
        self.assertEqual([(x["name"], x["code"]) for x in refused], [("untraced", 14)])

    def test_too_small(self):
        """Two bytes at the entry hold no jump on x86-64, nor no-ops before
        the symbol only on aarch64: every function refused, the program
        untraced and unchanged."""
        if not TOO_SMALL:
            self.skipTest("every layout of this architecture is patched")
        for name in TOO_SMALL:
            with self.subTest(prog=name):
                prog = self.prog(name)
                r = self.run_preload([prog, "fib", "8"], env={"TRACEAGENT_PATCH": "fib,twice"})
                self.assertEqual((r.returncode, r.stdout), (0, expected_line(8) + "\n"),
                                 r.stderr)
                self.assertEqual(r.stderr_lines(), [summary(0, 2)])
                refused = self.info(r.dump)["processes"][0]["patch"]["refused"]
                self.assertEqual(sorted((x["name"], x["code"]) for x in refused),
                                 [("fib", 16), ("twice", 16)])

    def test_hostile_section(self):
        """An address in __patchable_function_entries that is not code (a
        variable's, pehostile.c): refused and said, the rest patched."""
        prog = self.prog("peprog-hostile")
        r = self.run_preload([prog, "fib", "8"], env={"TRACEAGENT_PATCH": "fib,twice,half"})
        self.assertEqual((r.returncode, r.stdout), (0, expected_line(8) + "\n"), r.stderr)
        lines = r.stderr_lines()
        self.assertEqual(len(lines), 2, r.stderr)
        self.assertRegex(lines[0], r"^traceagent: %s: 1 addresses of its "
                         r"__patchable_function_entries are outside its code \(the first: "
                         r"0x[0-9a-f]+\); refused$" % re.escape(prog))
        self.assertEqual(lines[1], summary(3, 1))
        self.assertEqual(self.counts(r.dump, 8), {"fib": fib_calls(8), "twice": 8, "half": 8})
        refused = self.info(r.dump)["processes"][0]["patch"]["refused"]
        self.assertEqual([x["code"] for x in refused], [15])

    def test_other_modules_left_alone(self):
        """A program without the section is the other patcher's (capstone's
        where it is built; refused in one line where not)."""
        prog = self.prog("fib-O2")
        r = self.run_preload([prog, "10"], env={"TRACEAGENT_PATCH": "fib"})
        self.assertEqual((r.returncode, r.stdout), (0, "fib(10) = 55\n"), r.stderr)
        for line in r.stderr_lines():
            self.assertNotIn("patchable entries", line)

    def attach_window(self, c, n):
        """attach --patch around `fib n` of c (`peprog stdin`): returns
        (dump, the text check during the window, after it)."""
        self.assertEqual(c.say("text"), "text same")
        dump = self.fresh("attach")
        a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(c.proc.pid), "-o", dump,
                              "--patch", "fib,twice,half"], env=tahelp.clean_env(),
                             stderr=subprocess.PIPE, text=True, cwd=self.dir)
        try:
            self.assertEqual(tahelp.readline(a.stderr),
                             "traceagent: attach: patched 3 functions in process %d\n"
                             % c.proc.pid)
            self.assertIn("attached", tahelp.readline(a.stderr))
            during = c.say("text")
            self.assertEqual(c.say("fib %d" % n), expected_line(n))
        finally:
            a.send_signal(2)
            a.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(a.returncode, 0)
        after = c.say("text")
        self.assertEqual(c.say("fib 5"), expected_line(5))
        return dump, during, after

    def test_attach(self):
        """attach --patch: exact counts inside the window, none after the
        detach, and the code its file's byte for byte again."""
        self.skip_unless_attach()
        n = 11
        for name in GOOD:
            with self.subTest(prog=name):
                c = tahelp.LineChild(self, [self.prog(name), "stdin"])
                dump, during, after = self.attach_window(c, n)
                self.assertRegex(during, r"^text differs at \d+$")
                self.assertEqual(after, "text same")
                self.assertEqual(self.counts(dump, n),
                                 {"fib": fib_calls(n), "twice": n, "half": n})
                self.assertEqual(c.quit(), (0, "done\n", ""))

    def test_attach_args(self):
        """attach --args and --retval in a patchable-entry build: the
        functions they name patched at their entries in the window, each
        call with its values (an integer and a floating-point argument,
        return values); the text its file's again after."""
        self.skip_unless_attach()
        c = tahelp.LineChild(self, [self.prog(GOOD[0]), "stdin"])
        dump = self.fresh("args")
        a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(c.proc.pid), "-o", dump,
                              "--args", "fib@arg1/d32;half@fparg1", "--retval", "fib/d32;twice"],
                             env=tahelp.clean_env(), stderr=subprocess.PIPE, text=True,
                             cwd=self.dir)
        try:
            self.assertEqual(tahelp.readline(a.stderr),
                             "traceagent: attach: patched 3 functions in process %d\n"
                             % c.proc.pid)
            self.assertIn("attached", tahelp.readline(a.stderr))
            self.assertEqual(c.say("fib 3"), expected_line(3))
        finally:
            a.send_signal(2)
            a.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual(a.returncode, 0)
        self.assertEqual(c.say("text"), "text same")
        p = subprocess.run([tahelp.TRACEAGENT, "replay", dump], env=tahelp.clean_env(),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual([l[23:] for l in p.stdout.splitlines()[1:]], [
            "fib(3) {", "  fib(2) {", "    fib(1) = 1;", "    fib(0) = 0;", "  } = 1 /* fib */",
            "  fib(1) = 1;", "} = 2 /* fib */",
            "twice() = 0;", "half(0.0);", "twice() = 2;", "half(0.5);", "twice() = 4;",
            "half(1.0);"])
        self.assertEqual(c.quit(), (0, "done\n", ""))

    def test_attach_twice(self):
        """A second attach to the same process patches the restored areas
        again, into its own dump."""
        self.skip_unless_attach()
        c = tahelp.LineChild(self, [self.prog(GOOD[1]), "stdin"])
        for n in (7, 9):
            dump, during, after = self.attach_window(c, n)
            self.assertEqual(after, "text same")
            self.assertEqual(self.counts(dump, n), {"fib": fib_calls(n), "twice": n, "half": n})
        self.assertEqual(c.quit(), (0, "done\n", ""))


if __name__ == "__main__":
    unittest.main()
