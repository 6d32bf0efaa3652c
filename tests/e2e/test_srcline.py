# SPDX-License-Identifier: MIT
"""report --srcline on the sample programs: each function's file and the
line of its name, found by searching the source, at both optimisation
levels; C++ members, templates and anonymous namespaces; functions of a
shared library; nothing for modules without line information.  Source
paths of every length, given whole or through "..": report, replay and the
pprof export print each one exactly, with nothing after it."""

import gzip
import json
import os
import re
import shutil
import subprocess

import tadump
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
                    "int ns::width<char>()": self.where("cxx.cc", r"int width\(\)"),
                    "int ns::width<long>()": self.where("cxx.cc", r"int width\(\)"),
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

    def test_path_lengths(self):
        """32 functions in 32 files whose paths are one byte longer each
        (the analyzer's copies of them fall on every place of the
        allocator's rounding), named to the compiler whole (absolute) or
        from the compilation directory through "..": every source path
        comes out exactly, in report, replay and the pprof export."""
        cc = shutil.which("cc")
        if not cc:
            self.skipTest("no C compiler (cc)")
        base = os.path.realpath(self.dir)
        os.mkdir(os.path.join(base, "src"))
        os.mkdir(os.path.join(base, "build"))
        names, want, calls = [], {}, []
        for i in range(32):
            rel = "src/s%s.c" % ("x" * i)
            with open(os.path.join(base, rel), "w") as fh:
                fh.write("\n" * i + "__attribute__((noipa)) int fn_%d(int x)\n"
                         "{\n\treturn x + %d;\n}\n" % (i, i))
            # Even: "../src/..." from build/ (libdw joins it to the
            # compilation directory); odd: the whole path.
            names.append("../" + rel if i % 2 == 0 else os.path.join(base, rel))
            want["fn_%d" % i] = "%s:%d" % (os.path.join(base, rel), i + 1)
            calls.append("int fn_%d(int);" % i)
        main_c = os.path.join(base, "src", "main.c")
        with open(main_c, "w") as fh:
            fh.write("\n".join(calls) + "\nint main(void)\n{\n\tint s = 0;\n" +
                     "".join("\ts += fn_%d(%d);\n" % (i, i) for i in range(32)) +
                     "\treturn s == 0;\n}\n")
        want["main"] = "%s:%d" % (main_c, len(calls) + 1)
        prog = os.path.join(base, "build", "paths")
        p = subprocess.run([cc, "-g", "-O0", "-finstrument-functions", "-o", prog,
                            "../src/main.c"] + names, cwd=os.path.join(base, "build"),
                           env=tahelp.clean_env({"PWD": os.path.join(base, "build")}),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        # cc builds for the machine it runs on: not for a cross build's.
        self.need_host_program(prog)
        r = self.traced("preload", [prog])

        self.assertEqual(self.srclines(r.dump), want)

        p = tadump.view(self, "replay", "--srcline", "--json", r.dump)
        got = {}
        for line in p.stdout.splitlines():
            call = json.loads(line)
            got[call["name"]] = call["srcline"]
        self.assertEqual(got, want)
        p = tadump.view(self, "replay", "--srcline", r.dump)
        got = {}
        for line in p.stdout.splitlines():
            m = re.search(r"  (\w+)\(\)(?:;| \{) /\* (.*) \*/$", line)
            if m:
                got[m.group(1)] = m.group(2)
        self.assertEqual(got, want)

        out = self.fresh("pprof") + ".pb.gz"
        tadump.view(self, "export", "--format=pprof", "--srcline", "-o", out, r.dump)
        with open(out, "rb") as fh:
            strings = pb_strings(gzip.decompress(fh.read()), 6)
        # The file names of the functions' lines and the program's path:
        # every string under the test's directory is one of them.
        paths = {w.rsplit(":", 1)[0] for w in want.values()}
        mine = {x for x in strings if x.startswith(base.encode())}
        self.assertEqual(mine, {x.encode() for x in paths | {prog}})


def pb_strings(data, field):
    """The values of the length-delimited field number field of a
    protobuf message (pprof's Profile: 6 is string_table)."""
    out, i = [], 0
    while i < len(data):
        key, i = tadump.read_u(data, i)
        wire = key & 7
        if wire == 0:
            _, i = tadump.read_u(data, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = tadump.read_u(data, i)
            if key >> 3 == field:
                out.append(data[i:i + n])
            i += n
        else:
            raise AssertionError("wire type %d at %d" % (wire, i))
    return out


if __name__ == "__main__":
    tahelp.main()
