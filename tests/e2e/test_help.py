# SPDX-License-Identifier: MIT
"""traceagent help [COMMAND]: the man page built from docs/, found next to
the command (the build tree's docs/ here; the installed one is
tests/api/check_install's), shown with man -l; without the page or man,
the command's --help after one line saying why."""

import os
import shutil

import tahelp

BUILT = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(tahelp.TRACEAGENT))),
                     "docs")


class HelpTest(tahelp.Case):

    def need_page(self, name):
        path = os.path.join(BUILT, name)
        if not os.path.isfile(path):
            self.skipTest("no man page %s: its page of docs/ is not written, or the build "
                          "has no man pages (meson -Dman)" % path)
        if not shutil.which("man"):
            self.skipTest("man is not installed")
        return path

    def help(self, *args, exe=None, env=None):
        return self.run_plain([exe or tahelp.TRACEAGENT, "help"] + list(args),
                              env=dict({"MANWIDTH": "80"}, **(env or {})))

    def lone_copy(self):
        """The command copied alone into a folder: no page beside it."""
        os.mkdir(self.path("bin"))
        exe = self.path("bin/traceagent")
        shutil.copy(tahelp.TRACEAGENT, exe)
        return exe

    def test_page_of_the_build_tree(self):
        for args, page in ((["report"], "traceagent-report.1"), ([], "traceagent.1"),
                           (["settings"], "traceagent-settings.7")):
            with self.subTest(args=args):
                path = self.need_page(page)
                p = self.help(*args)
                self.assertEqual((p.returncode, p.stderr), (0, ""))
                want = self.run_plain(["man", "-l", path], env={"MANWIDTH": "80"}).stdout
                self.assertEqual(p.stdout, want)
                name = page.rsplit(".", 1)[0]
                self.assertIn("NAME %s - " % name, " ".join(p.stdout.split()))

    def test_no_page_prints_the_help(self):
        exe = self.lone_copy()
        bindir = os.path.dirname(exe)
        for cmd in ("report", "record", "ctl"):
            with self.subTest(cmd=cmd):
                p = self.help(cmd, exe=exe)
                want = self.run_plain([exe, cmd, "--help"])
                self.assertEqual((p.returncode, p.stdout), (0, want.stdout))
                lines = p.stderr.splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertTrue(lines[0].startswith(
                    "traceagent help: no man page traceagent-%s(1) (looked at %s/" % (cmd, bindir)),
                    lines[0])
                self.assertIn("and at %s/../docs/traceagent-%s.1;" % (bindir, cmd), lines[0])
                self.assertTrue(lines[0].endswith("; 'traceagent %s --help' follows" % cmd),
                                lines[0])
        p = self.help(exe=exe)
        self.assertEqual((p.returncode, p.stdout),
                         (0, self.run_plain([exe, "--help"]).stdout))
        self.assertTrue(p.stderr.startswith("traceagent help: no man page traceagent(1) "))
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        p = self.help("settings", exe=exe)
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertTrue(p.stderr.startswith("traceagent help: no man page traceagent-settings(7) "))
        self.assertTrue(p.stderr.endswith("; it is docs/traceagent-settings.md in the sources\n"))

    def test_no_man_prints_the_help(self):
        path = self.need_page("traceagent-graph.1")
        os.mkdir(self.path("empty"))
        p = self.help("graph", env={"PATH": self.path("empty")})
        want = self.run_plain([tahelp.TRACEAGENT, "graph", "--help"])
        self.assertEqual((p.returncode, p.stdout), (0, want.stdout))
        self.assertEqual(p.stderr, "traceagent help: cannot run man to show %s: No such file or "
                         "directory (install man-db); 'traceagent graph --help' follows\n"
                         % os.path.join(os.path.dirname(os.path.realpath(tahelp.TRACEAGENT)),
                                        "..", "docs", "traceagent-graph.1"))
        self.assertTrue(os.path.isfile(path))

    def test_unknown_command(self):
        p = self.help("nosuch")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "traceagent help: unknown command 'nosuch'; "
                                   "try 'traceagent --help'\n")
        self.assertEqual(p.stdout, "")
        p = self.help("report", "graph")
        self.assertEqual((p.returncode, p.stderr),
                         (2, "traceagent help: one COMMAND at most, not 'graph'\n"))

    def test_listed_in_the_top_help(self):
        p = self.run_plain([tahelp.TRACEAGENT, "--help"])
        self.assertEqual(p.returncode, 0)
        self.assertIn("       traceagent help [COMMAND]\n", p.stdout)
        self.assertIn("\n  help     the manual page of traceagent or of COMMAND", p.stdout)


if __name__ == "__main__":
    tahelp.main()
