# SPDX-License-Identifier: MIT
"""Arguments and return values (issue 36): argsdemo's functions, whose
arguments are known, recorded through record --args/--retval, the
environment, and --auto-args (DWARF), in the plain build (patched) and
the instrumented one (patched, its hook calls made no-ops: counted once);
replay's exact text (integers, a negative one, hex, strings with NULL, an
unreadable page, a kernel address, a cut one and escapes, floats, an enum
by name, a char, a struct pointer returned), the Chrome export's args, the
Perfetto export's debug annotations (through protoc), report --args.
The expectations hold on any architecture: a build that records
arguments there (patchable-entry builds on aarch64) runs the same file."""

import json
import os
import re
import shutil
import subprocess

import tahelp
import tadump

SPECS = ("add@arg1/d32,arg2/d32;negate@arg1;mask@arg1/x32;slen@arg1/s;"
         "scale@fparg1,fparg2/f32;paint@arg1/e32;upper@arg1/c;mkpoint@arg1/d32,arg2/d32")
RETVALS = "add/d32;negate;mask/x32;slen/u;scale/f;paint/d32;upper/c;mkpoint/p"
FUNCS = "add,negate,mask,slen,scale,paint,upper,mkpoint"

# replay's lines (after the duration and tid columns); GONE and POINT are
# the addresses argsdemo prints.
EXPECTED = [
    'add(2, 3) = 5;',
    'add(-7, 1) = -6;',
    'negate(-1234567890123) = 1234567890123;',
    'mask(0xbeef) = 0xbe00;',
    'slen("abc") = 1;',
    'slen(NULL) = 0;',
    'slen((unreadable GONE)) = 1;',
    'slen((unreadable 0xffffffffffffffff)) = 0;',
    'slen("' + 'x' * 64 + '"...) = 1;',
    'slen("say \\"hi\\"\\n\\tbye\\\\") = 1;',
    'scale(1.5, 0.25) = 0.375;',
    'paint(GREEN) = 10;',
    'paint(42) = 84;',
    "upper('q') = 'Q';",
    'mkpoint(3, 4) = POINT;',
]


def addresses(stdout):
    out = dict(l.split(" ", 1) for l in stdout.splitlines())
    return out["gone"], out["point"]


def expected(stdout, lines=EXPECTED, indent=""):
    gone, point = addresses(stdout)
    return [indent + l.replace("GONE", gone).replace("POINT", point) for l in lines]


class ArgsTest(tahelp.Case):

    def setUp(self):
        super().setUp()
        self.need_feature("patching")

    def replay_lines(self, dump):
        p = tadump.view(self, "replay", dump)
        self.assertEqual(p.stderr, "")
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["duration", "tid", "function"])
        return [l[23:] for l in lines[1:]]

    def run_ok(self, prog, options=(), env=None, mode="record", patched=8, how=""):
        path = self.prog(prog)
        plain = self.run_plain([path])
        if mode == "record":
            r = self.run_record([path], options=options, env=env)
        else:
            r = self.run_preload([path], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, plain.stdout.replace(addresses(plain.stdout)[0],
                                                        addresses(r.stdout)[0])
                         .replace(addresses(plain.stdout)[1], addresses(r.stdout)[1]))
        lines = r.stderr_lines()
        self.assertEqual(lines[0], "traceagent: patched %d functions%s, refused 0" % (patched, how))
        return r

    def test_record_options(self):
        """record --args and --retval, the plain build: every call of the
        eight functions with what it was given and returned."""
        r = self.run_ok("argsdemo", ["--args", SPECS, "--retval", RETVALS])
        self.assertEqual(self.replay_lines(r.dump), expected(r.stdout))

    def test_environment(self):
        """The same asked through the environment of a preloaded agent."""
        r = self.run_ok("argsdemo", env={"TRACEAGENT_ARGS": SPECS, "TRACEAGENT_RETVAL": RETVALS},
                        mode="preload")
        self.assertEqual(self.replay_lines(r.dump), expected(r.stdout))

    def test_patchable_entry(self):
        """A -fpatchable-function-entry build: the functions with a spec are
        patched at their no-op areas (no capstone), with the same values."""
        r = self.run_ok("argsdemo-pe", ["--args", SPECS, "--retval", RETVALS],
                        how=" at their patchable entries")
        self.assertEqual(self.replay_lines(r.dump), expected(r.stdout))

    def test_no_such_function(self):
        """Arguments asked of functions a process does not have (a shell on
        the way): it runs as without the agent, says nothing, writes no
        dump."""
        out = os.path.join(self.dir, "none.trace")
        env = dict(os.environ, LD_PRELOAD=tahelp.AGENT, TRACEAGENT_ARGS=SPECS,
                   TRACEAGENT_RETVAL=RETVALS, TRACEAGENT_OUTPUT=out)
        r = subprocess.run(["/bin/echo", "hello"], env=env, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "hello\n", ""))
        self.assertFalse(os.path.exists(out))

    def test_instrumented(self):
        """The instrumented build: the functions with a spec are patched and
        their hook calls made no-ops, so each call is there once, inside
        main, whose hooks record it."""
        r = self.run_ok("argsdemo-instr", ["--args", SPECS, "--retval", RETVALS])
        self.assertEqual(self.replay_lines(r.dump),
                         ["main() {"] + expected(r.stdout, indent="  ") + ["  pick();"] * 10 +
                         ["} /* main */"])

    def test_auto_args(self):
        """--auto-args: the formats from the DWARF (an unsigned shown in
        decimal), the same values."""
        r = self.run_ok("argsdemo", ["--auto-args", FUNCS])
        want = [l.replace("mask(0xbeef) = 0xbe00", "mask(48879) = 48640") for l in EXPECTED]
        self.assertEqual(self.replay_lines(r.dump), expected(r.stdout, want))

    def test_nested(self):
        """A call with shown callees: its arguments on its first line, its
        return value on its last."""
        r = self.run_ok("argsdemo", ["--args", "main@arg1/d32;add@arg1/d32,arg2/d32",
                                     "--retval", "main/d32"], patched=2)
        self.assertEqual(self.replay_lines(r.dump),
                         ["main(1) {", "  add(2, 3);", "  add(-7, 1);", "} = 0 /* main */"])

    def test_strlen_and_json(self):
        """TRACEAGENT_ARGS_STRLEN cuts strings shorter; replay --json
        carries the values as shown."""
        r = self.run_ok("argsdemo", ["--args", "slen@arg1/s", "--retval", "slen/u"],
                        env={"TRACEAGENT_ARGS_STRLEN": "4"}, patched=1)
        lines = self.replay_lines(r.dump)
        self.assertEqual(lines[0], 'slen("abc") = 1;')
        self.assertEqual(lines[4], 'slen("xxxx"...) = 1;')
        p = tadump.view(self, "replay", "--json", r.dump)
        calls = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual([(c["args"], c["retval"]) for c in calls][:2],
                         [(['"abc"'], "1"), (["NULL"], "0")])

    def test_bad_spec(self):
        """A bad item is said on stderr, its entry ignored; the program runs
        as untraced."""
        path = self.prog("argsdemo")
        r = self.run_preload([path], env={"TRACEAGENT_ARGS": "add@arg9;slen@arg1/s"})
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stderr_lines()
        self.assertEqual(lines[0], "traceagent: TRACEAGENT_ARGS: bad item \"arg9\" for add "
                         "(argN, fpargN or retval, /d /u /x /s /c /f /p /e, sizes 8 16 32 64); "
                         "entry ignored")
        self.assertEqual(lines[1], "traceagent: patched 1 functions, refused 0")
        self.assertEqual(self.replay_lines(r.dump)[0], 'slen("abc");')

    def test_report_args(self):
        """report --args: a function's calls grouped by their values, with
        their counts exact; --top and --function."""
        r = self.run_ok("argsdemo", ["--args", "pick@arg1/d32;paint@arg1/e32"], patched=2)
        rep = tadump.view_json(self, "report", "--args", "--json", r.dump)
        funcs = {f["name"]: f for f in rep["functions"]}
        self.assertEqual(sorted(funcs), ["paint", "pick"])
        self.assertEqual(funcs["pick"]["calls"], 10)
        self.assertEqual(sorted((v["args"], v["calls"]) for v in funcs["pick"]["values"]),
                         [("0", 4), ("1", 3), ("2", 3)])
        self.assertEqual(sorted((v["args"], v["calls"]) for v in funcs["paint"]["values"]),
                         [("42", 1), ("GREEN", 1)])
        for f in funcs.values():
            totals = [v["total_ns"] for v in f["values"]]
            self.assertEqual(totals, sorted(totals, reverse=True))
            self.assertEqual(sum(totals), f["total_ns"])
            for v in f["values"]:
                self.assertLessEqual(v["p50_ns"], v["p99_ns"])
                self.assertLessEqual(v["p99_ns"], v["total_ns"])
        rep = tadump.view_json(self, "report", "--args", "--json", "--top=1", "--function=pick",
                               r.dump)
        self.assertEqual([(f["name"], len(f["values"])) for f in rep["functions"]],
                         [("pick", 1)])
        p = tadump.view(self, "report", "--args", r.dump)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["calls", "total", "p50", "p99", "call"])
        self.assertEqual(sorted(l.split()[0] + " " + l.split()[-1] for l in lines[1:]),
                         ["1 paint(42)", "1 paint(GREEN)", "3 pick(1)", "3 pick(2)",
                          "4 pick(0)"])

    GRAPH_ARGS = "main@arg1/d32;add@arg1/d32,arg2/d32;pick@arg1/d32;paint@arg1/e32"

    def test_graph_args(self):
        """graph --args: under each call path its calls' values, the most
        calls first (then by text), with their calls exact and their totals
        report --args's (each function has one path); --top cuts the list
        into one line of the rest."""
        r = self.run_ok("argsdemo", ["--args", self.GRAPH_ARGS], patched=4)
        g = tadump.view_json(self, "graph", "--args", "--json", r.dump)
        [main] = g["tree"]
        self.assertEqual((main["name"], main["args_values"], main["args"]),
                         ("main", 1, [{"args": "1", "calls": 1, "total_ns": main["total_ns"]}]))
        kids = {k["name"]: k for k in main["children"]}
        self.assertEqual(sorted(kids), ["add", "paint", "pick"])
        want = {"pick": [("0", 4), ("1", 3), ("2", 3)],
                "add": [("-7, 1", 1), ("2, 3", 1)],
                "paint": [("42", 1), ("GREEN", 1)]}
        rep = tadump.view_json(self, "report", "--args", "--json", r.dump)
        totals = {(f["name"], v["args"]): (v["calls"], v["total_ns"])
                  for f in rep["functions"] for v in f["values"]}
        for name, values in want.items():
            k = kids[name]
            self.assertEqual([(v["args"], v["calls"]) for v in k["args"]], values)
            self.assertEqual(k["args_values"], len(values))
            self.assertEqual([(v["calls"], v["total_ns"]) for v in k["args"]],
                             [totals[(name, a)] for a, _ in values])
        # The text: each value under its path, one level deeper, with no
        # self time; the rest of the values in one line.
        p = tadump.view(self, "graph", "--args", "--top=2", r.dump)
        self.assertEqual(p.stderr, "")
        lines = p.stdout.splitlines()
        self.assertEqual(lines[1].split(), ["calls", "total", "self", "function"])
        blocks = {}
        for l in lines[2:]:
            row = (l[:10].strip(), l[38:])
            if l[24:36].strip():
                blocks[l[38:].strip()] = block = [row]
            else:
                block.append(row)
        self.assertEqual(blocks, {
            "main": [("1", "main"), ("1", "  main(1)")],
            "pick": [("10", "  pick"), ("4", "    pick(0)"), ("3", "    pick(1)"),
                     ("3", "    (1 more value)")],
            "add": [("2", "  add"), ("1", "    add(-7, 1)"), ("1", "    add(2, 3)")],
            "paint": [("2", "  paint"), ("1", "    paint(42)"), ("1", "    paint(GREEN)")]})
        g = tadump.view_json(self, "graph", "--args", "--top=2", "--json", r.dump)
        pick = [k for k in g["tree"][0]["children"] if k["name"] == "pick"][0]
        self.assertEqual((pick["args_values"], [v["args"] for v in pick["args"]]),
                         (3, ["0", "1"]))
        # With FUNCTION: the values of its calls, under it.
        p = tadump.view(self, "graph", "--args", r.dump, "pick")
        self.assertEqual([(l[:10].strip(), l[38:]) for l in
                          p.stdout.split("calls under it:\n")[1].splitlines()[1:]],
                         [("10", "pick"), ("4", "  pick(0)"), ("3", "  pick(1)"),
                          ("3", "  pick(2)")])

    def test_graph_args_recursion(self):
        """A recursion collapsed into one line "down [x100]" (deep, an
        instrumented build): every level's call counts on that line, each
        with its own value."""
        r = self.run_record([self.prog("deep"), "100"], options=["--args", "down@arg1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        g = tadump.view_json(self, "graph", "--args", "--top=200", "--json", r.dump)
        nodes, todo = [], list(g["tree"])
        while todo:
            n = todo.pop()
            nodes.append(n)
            todo += n["children"]
        [down] = [n for n in nodes if n["name"].startswith("down")]
        self.assertEqual((down["name"], down["calls"], down["args_values"]),
                         ("down [x100]", 100, 100))
        self.assertEqual(sorted((int(v["args"]), v["calls"]) for v in down["args"]),
                         [(k, 1) for k in range(1, 101)])
        self.assertEqual(max(v["total_ns"] for v in down["args"]), down["total_ns"])

    def test_graph_args_none(self):
        """graph --args on a dump without arguments prints what graph
        prints; --top needs --args."""
        path = self.prog("argsdemo")
        r = self.run_record([path], options=["--patch", "add,pick"])
        self.assertEqual(r.returncode, 0, r.stderr)
        plain = tadump.view(self, "graph", r.dump)
        self.assertEqual(tadump.view(self, "graph", "--args", r.dump).stdout, plain.stdout)
        self.assertEqual(tadump.view(self, "graph", "--args", "--json", r.dump).stdout,
                         tadump.view(self, "graph", "--json", r.dump).stdout)
        p = tadump.view(self, "graph", "--top=2", r.dump, status=2)
        self.assertEqual(p.stderr, "traceagent graph: --top is the values shown with --args\n")

    def test_chrome(self):
        r = self.run_ok("argsdemo", ["--args", SPECS, "--retval", RETVALS])
        out = self.path("chrome.json")
        tadump.view(self, "export", "--format=chrome", "-o", out, r.dump)
        with open(out) as f:
            events = json.load(f)["traceEvents"]
        got = [(e["name"], e.get("args")) for e in events
               if e.get("ph") == "X" and e["name"] in ("add", "slen", "scale")]
        gone = addresses(r.stdout)[0]
        self.assertEqual(got[:5], [
            ("add", {"arg1": "2", "arg2": "3", "retval": "5"}),
            ("add", {"arg1": "-7", "arg2": "1", "retval": "-6"}),
            ("slen", {"arg1": '"abc"', "retval": "1"}),
            ("slen", {"arg1": "NULL", "retval": "0"}),
            ("slen", {"arg1": "(unreadable %s)" % gone, "retval": "1"})])
        self.assertEqual(got[-1], ("scale", {"fparg1": "1.5", "fparg2": "0.25",
                                             "retval": "0.375"}))

    def test_perfetto(self):
        if not shutil.which("protoc"):
            self.skipTest("protoc not installed (Debian: protobuf-compiler)")
        import test_perfetto
        # Not upper's quotes: protoc writes \' in its text, which the
        # parser of test_perfetto (JSON's escapes) does not read.
        r = self.run_ok("argsdemo", ["--args", SPECS.replace(";upper@arg1/c", ""),
                                     "--retval", RETVALS.replace(";upper/c", "")],
                        patched=7)
        out = self.path("args.pftrace")
        p = tadump.view(self, "export", "--format=perfetto", "-o", out, r.dump)
        self.assertEqual(p.stderr, "")
        with open(out, "rb") as fh:
            raw = test_perfetto.inflate(fh.read())
        d = subprocess.run(["protoc", "--proto_path=" + test_perfetto.PROTO_DIR,
                            "--decode=perfetto.protos.Trace", test_perfetto.PROTO],
                           input=raw, capture_output=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(d.returncode, 0, d.stderr)
        tr = test_perfetto.Trace(test_perfetto.parse_text(d.stdout.decode())["packet"])
        got = [(s["name"], s["args"]) for s in tr.slices if s["name"] in ("add", "paint")]
        self.assertEqual(got, [
            ("add", {"module": "argsdemo", "arg1": "2", "arg2": "3", "retval": "5"}),
            ("add", {"module": "argsdemo", "arg1": "-7", "arg2": "1", "retval": "-6"}),
            ("paint", {"module": "argsdemo", "arg1": "GREEN", "retval": "10"}),
            ("paint", {"module": "argsdemo", "arg1": "42", "retval": "84"})])


if __name__ == "__main__":
    tahelp.main()
