# SPDX-License-Identifier: MIT
"""C++: names demangled as c++filt shows them; a function left by an
exception is closed (GCC calls its exit hook while unwinding); functions
left by exceptions, built by GCC and by Clang (which calls no exit hook
for them), are closed at the catch: exact calls, exact nesting, and none
charged the pause the catching function makes after the catch."""

import json

import tadump
import tahelp
from tahelp import LEVELS, MODES

CALLS = {
    "main": 1,
    "ns::Klass::Klass(int)": 1,
    "ns::Klass::method(int)": 4,
    "int ns::twice<int>(int)": 3,
    "double ns::twice<double>(double)": 2,
    "int ns::width<char>()": 1,
    "int ns::width<long>()": 1,
    "(anonymous namespace)::helper()": 1,
    "ns::fail(int)": 2,
}

# throwcatch.cc, in the order the calls end: (depth, name).
PAUSE_MS = 200
THROWS = [
    (6, "t5(int)"), (5, "t4(int)"), (4, "t3(int)"), (3, "t2(int)"), (2, "t1(int)"),
    (2, "pause_here()"), (2, "after_deep()"), (1, "deep()"),
    (4, "r2(int)"), (3, "r1(int)"), (2, "relay(int)"),
    (2, "pause_here()"), (2, "after_rethrow()"), (1, "outer_catch()"),
    (2, "c1(int)"), (1, "capture()"),
    (3, "p2()"), (2, "p1()"), (2, "pause_here()"), (2, "after_ptr()"), (1, "catch_ptr()"),
    (6, "rec(int)"), (5, "rec(int)"), (4, "rec(int)"),
    (4, "pause_here()"), (4, "after_rec()"), (3, "rec(int)"), (2, "rec(int)"), (1, "rec(int)"),
    (3, "b2(int)"), (2, "b1(int)"), (2, "pause_here()"), (2, "after_bridge()"),
    (1, "catch_bridge()"),
    (0, "main"),
]
THROW_CALLS = {}
for _, _name in THROWS:
    THROW_CALLS[_name] = THROW_CALLS.get(_name, 0) + 1
# The activations a throw leaves (Clang: closed by the catch).
THROWN_THROUGH = {
    (6, "t5(int)"), (5, "t4(int)"), (4, "t3(int)"), (3, "t2(int)"), (2, "t1(int)"),
    (4, "r2(int)"), (3, "r1(int)"), (2, "relay(int)"), (2, "c1(int)"),
    (3, "p2()"), (2, "p1()"), (6, "rec(int)"), (5, "rec(int)"), (4, "rec(int)"),
    (3, "b2(int)"), (2, "b1(int)"),
}
THROW_UNWOUND = dict.fromkeys(THROW_CALLS, 0)
for _, _name in THROWN_THROUGH:
    THROW_UNWOUND[_name] += 1


class CxxTest(tahelp.Case):

    def test_demangled(self):
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    r = self.traced(mode, [self.prog("cxx-" + level)])
                    self.assertEqual(r.stdout, "cxx: 54 1.0\n")
                    rep = self.report(r.dump)
                    self.assert_whole(rep)
                    funcs = self.functions(rep)
                    self.assertEqual(sorted(funcs), sorted(CALLS))
                    self.assert_calls(funcs, CALLS)

    def test_exceptions(self):
        pause_ns = PAUSE_MS * 1000000
        for compiler, prefix in (("gcc", "throwcatch-"), ("clang", "throwcatch-clang-")):
            for level in LEVELS:
                for mode in MODES:
                    with self.subTest(compiler=compiler, level=level, mode=mode):
                        r = self.traced(mode, [self.prog(prefix + level), str(PAUSE_MS)])
                        self.assertEqual(r.stdout, "throwcatch: 6\n")
                        rep = self.report(r.dump)
                        self.assert_whole(rep)
                        funcs = self.functions(rep)
                        self.assert_calls(funcs, THROW_CALLS)
                        # GCC closes them itself, while unwinding; for
                        # Clang the catch does.
                        unwound = {n: funcs[n]["unwound"] for n in THROW_CALLS}
                        self.assertEqual(unwound, THROW_UNWOUND if compiler == "clang"
                                         else dict.fromkeys(THROW_CALLS, 0))
                        p = tadump.view(self, "replay", "--json", r.dump)
                        calls = [c for c in map(json.loads, p.stdout.splitlines())
                                 if c["name"] in THROW_CALLS]
                        self.assertEqual([(c["depth"], c["name"]) for c in calls], THROWS)
                        for c in calls:
                            self.assertFalse(c["open"], c)
                            left = (c["depth"], c["name"]) in THROWN_THROUGH
                            self.assertEqual(c["unwound"], compiler == "clang" and left, c)
                            if left:
                                # Closed at the catch (or by GCC while
                                # unwinding), before the pause.
                                self.assertLess(c["duration_ns"], pause_ns // 2, c)
                            if c["name"] == "pause_here()":
                                self.assertGreaterEqual(c["duration_ns"], pause_ns, c)

    def test_replay_names(self):
        """replay writes a C++ name with its own parameter list, as report
        names it, and "()" after a C name only: each call once."""
        for level in LEVELS:
            with self.subTest(level=level):
                r = self.traced("preload", [self.prog("cxx-" + level)])
                p = tadump.view(self, "replay", "--demangle=full", r.dump)
                lines = p.stdout.splitlines()
                self.assertEqual(lines[0].split(), ["duration", "tid", "function"])
                starts = {}
                for line in lines[1:]:
                    text = line[23:].strip()
                    if text.startswith("} /* "):
                        continue
                    self.assertRegex(text, r"(;| \{)$", line)
                    name = text[:-1] if text.endswith(";") else text[:-2]
                    starts[name] = starts.get(name, 0) + 1
                want = {("main()" if n == "main" else n): c for n, c in CALLS.items()}
                self.assertEqual(starts, want)

    # --demangle: each function's name in the three forms (cxx.cc).
    NAMES = [
        # (whole, short, mangled, or a tuple of the mangled names it may have)
        ("main", "main", "main"),
        ("ns::Klass::Klass(int)", "ns::Klass::Klass", ("_ZN2ns5KlassC1Ei", "_ZN2ns5KlassC2Ei")),
        ("ns::Klass::method(int)", "ns::Klass::method", "_ZN2ns5Klass6methodEi"),
        # Two instances of one template: short with their parameters.
        ("int ns::twice<int>(int)", "ns::twice(int)", "_ZN2ns5twiceIiEET_S1_"),
        ("double ns::twice<double>(double)", "ns::twice(double)", "_ZN2ns5twiceIdEET_S1_"),
        # Two instances the parameters do not tell apart: with their
        # template arguments.
        ("int ns::width<char>()", "ns::width<char>()", "_ZN2ns5widthIcEEiv"),
        ("int ns::width<long>()", "ns::width<long>()", "_ZN2ns5widthIlEEiv"),
        ("(anonymous namespace)::helper()", "(anonymous namespace)::helper",
         "_ZN12_GLOBAL__N_16helperEv"),
        ("ns::fail(int)", "ns::fail", "_ZN2ns4failEi"),
    ]

    def names_in(self, form, whole_to_calls, got, shown=lambda n: n):
        """Checks got (name -> calls) against CALLS in form (0 whole, 1
        short, 2 mangled), each name as shown(name) writes it."""
        want = {}
        for entry in self.NAMES:
            name = entry[form]
            if isinstance(name, tuple):
                name = next((n for n in name if shown(n) in got), name[0])
            want[shown(name)] = whole_to_calls[entry[0]]
        self.assertEqual(got, want)

    def test_demangle(self):
        """--demangle: short names by default in report's table, graph,
        replay and folded stacks (never two functions under one name),
        whole with full and in the JSON and the tools' exports, mangled
        with no; --function matches the whole name too."""
        for level in LEVELS:
            with self.subTest(level=level):
                r = self.traced("preload", [self.prog("cxx-" + level)])
                for form, opts in ((1, ()), (1, ("--demangle=simple",)),
                                   (0, ("--demangle=full",)), (2, ("--demangle=no",))):
                    # report's table: "...  NAME  MODULE", names without
                    # two spaces in a row.
                    p = tadump.view(self, "report", *opts, r.dump)
                    rows = p.stdout.splitlines()[1:]
                    got = {}
                    for row in rows:
                        cols = row.strip().split("  ")
                        got[cols[-2]] = int(cols[0])
                    self.names_in(form, CALLS, got)
                    # graph: one path each (main calls them all).
                    p = tadump.view(self, "graph", *opts, r.dump)
                    lines = p.stdout.splitlines()
                    col = lines[1].index("function")
                    got = {}
                    for line in lines[2:]:
                        got[line[col:].strip()] = int(line.split()[0])
                    self.names_in(form, CALLS, got)
                    # replay: "NAME;" with "()" after a name without a
                    # parameter list.
                    p = tadump.view(self, "replay", *opts, r.dump)
                    got = {}
                    for line in p.stdout.splitlines()[1:]:
                        text = line[23:].strip()
                        if text.startswith("} /* "):
                            continue
                        name = text[:-1] if text.endswith(";") else text[:-2]
                        got[name] = got.get(name, 0) + 1
                    self.names_in(form, CALLS, got,
                                  lambda n: n if n.endswith(")") else n + "()")
                    # Folded stacks: "main;NAME CALLS" by calls.
                    p = tadump.view(self, "export", "--format=folded", "--by=calls", *opts,
                                    "-o", "-", r.dump)
                    got = {}
                    for line in p.stdout.splitlines():
                        stack, n = line.rsplit(" ", 1)
                        frames = stack.split(";")
                        got[frames[-1]] = int(n)
                    self.names_in(form, CALLS, got)
                # The JSON and the Chrome export: whole by default.
                rep = self.report(r.dump)
                self.names_in(0, CALLS, {f["name"]: f["calls"] for f in rep["functions"]})
                p = tadump.view(self, "export", "--format=chrome", "-o", "-", r.dump)
                got = {}
                for ev in json.loads(p.stdout)["traceEvents"]:
                    if ev.get("ph") == "X":
                        got[ev["name"]] = got.get(ev["name"], 0) + 1
                self.names_in(0, CALLS, got)
                # --function on the whole name, the short one shown.
                p = tadump.view(self, "report", "--function=*(int)", r.dump)
                got = sorted(row.strip().split("  ")[-2] for row in p.stdout.splitlines()[1:])
                self.assertEqual(got, ["ns::Klass::Klass", "ns::Klass::method", "ns::fail",
                                       "ns::twice(int)"])
                p = tadump.view(self, "report", "--demangle=maybe", r.dump, status=2)
                self.assertEqual(p.stderr, "traceagent report: --demangle: 'maybe' is not "
                                 "simple, full or no\n")

if __name__ == "__main__":
    tahelp.main()
