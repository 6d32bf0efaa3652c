# SPDX-License-Identifier: MIT
"""report --srcline on the sample programs: each function's file and the
line of its name, found by searching the source, at both optimisation
levels; C++ members, templates and anonymous namespaces; functions of a
shared library; nothing for modules without line information."""

import os
import re

import tahelp
from tahelp import LEVELS

SOURCES = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "..", "programs"))


def line_of(source, pattern):
    """The 1-based line of the only line of source matching pattern."""
    with open(os.path.join(SOURCES, source)) as fh:
        hits = [i + 1 for i, l in enumerate(fh) if re.search(pattern, l)]
    if len(hits) != 1:
        raise AssertionError("%s: %r matches lines %s" % (source, pattern, hits))
    return hits[0]


class SrclineTest(tahelp.Case):

    def setUp(self):
        super().setUp()
        self.need_feature("srcline")

    def srclines(self, dump):
        rep = self.report(dump, "--srcline")
        return {f["name"]: f["srcline"] for f in rep["functions"]}

    def where(self, source, pattern):
        return "%s:%d" % (os.path.join(SOURCES, source), line_of(source, pattern))

    def test_nest(self):
        for level in LEVELS:
            with self.subTest(level=level):
                r = self.traced("preload", [self.prog("nest-" + level)])
                got = self.srclines(r.dump)
                want = {n: self.where("nest.c", r"^__attribute__\(\(noipa\)\) static void %s\(" % n)
                        for n in ("trunk", "branch", "leaf", "twig", "bud")}
                want["main"] = self.where("nest.c", r"^int main\(")
                self.assertEqual(got, want)

    def test_cxx(self):
        for level in LEVELS:
            with self.subTest(level=level):
                r = self.traced("preload", [self.prog("cxx-" + level)])
                got = self.srclines(r.dump)
                want = {
                    "main": self.where("cxx.cc", r"^int main\(\)"),
                    "ns::Klass::Klass(int)": self.where("cxx.cc", r"\) Klass::Klass\(int b\)"),
                    "ns::Klass::method(int)": self.where("cxx.cc", r"int Klass::method\("),
                    "int ns::twice<int>(int)": self.where("cxx.cc", r"T twice\(T x\)"),
                    "double ns::twice<double>(double)": self.where("cxx.cc", r"T twice\(T x\)"),
                    "ns::fail(int)": self.where("cxx.cc", r"void fail\(int x\)"),
                    "(anonymous namespace)::helper()": self.where("cxx.cc", r"int helper\(\)"),
                }
                self.assertEqual(got, want)

    def test_library(self):
        r = self.traced("preload", [self.prog("uselib-O2"), "3"])
        rep = self.report(r.dump, "--srcline")
        lib = self.functions(rep, module="libsample.so")
        self.assertEqual(lib["sample_square"]["srcline"],
                         self.where("libsample.c", r"^int sample_square\(int x\)$"))
        self.assertEqual(lib["sample_twice"]["srcline"],
                         self.where("libsample.c", r"static int sample_twice\(int x\)$"))

    def test_text_and_csv(self):
        r = self.traced("preload", [self.prog("nest-O2")])
        p = self.report_raw(r.dump, "--srcline", "--function=leaf")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertTrue(lines[0].endswith("  function  module  source"), lines[0])
        self.assertTrue(lines[1].endswith("  leaf  nest-O2  " +
                                          self.where("nest.c", r"static void leaf\(")), lines[1])
        p = self.report_raw(r.dump, "--srcline", "--csv", "--function=bud")
        self.assertEqual(p.stdout.splitlines()[0].split(",")[-1], "srcline")
        self.assertEqual(p.stdout.splitlines()[1].split(",")[-1],
                         self.where("nest.c", r"static void bud\("))


if __name__ == "__main__":
    tahelp.main()
