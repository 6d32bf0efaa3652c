# SPDX-License-Identifier: MIT
"""Dumps that travel (issue 34): the dump stores the traced modules'
function symbols (SYMBOLS chunks), so that a dump whose binaries were
deleted names every function exactly as it did with them: a C and a C++
program (each --demangle mode), a stripped binary with only dynamic
symbols, a dlopen'd library, a dump taken by `attach` and one streamed to
`serve`.  TRACEAGENT_SYMBOLS=off and `record --no-symbols` store none: the
names are then module+0x offsets, and the dump is smaller by the chunks."""

import os
import re
import shutil
import subprocess

import tahelp
from tahelp import TRACEAGENT, TIMEOUT, clean_env

SYMBOLS = 19  # format.h TA_CHUNK_SYMBOLS

# A program stripped of .symtab whose functions stay in .dynsym (-rdynamic).
STRIPPED_C = r"""
#include <stdio.h>
__attribute__((noinline)) int dyn_leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int dyn_mid(int x) { return dyn_leaf(x) + dyn_leaf(x + 1); }
int main(void)
{
	int s = 0;
	for (int i = 0; i < 4; i++)
		s += dyn_mid(i);
	printf("%d\n", s);
	return 0;
}
"""


class SymstoreTest(tahelp.Case):

    def copy(self, path, name=None):
        """path copied into a directory of its own in the scratch directory."""
        d = self.path("bin-%d" % len(os.listdir(self.dir)))
        os.mkdir(d)
        dest = os.path.join(d, name or os.path.basename(path))
        shutil.copy2(path, dest)
        return dest

    def rows(self, dump, *options):
        """(name, module's base name, calls) of every function the report
        lists, sorted, and its stderr."""
        p = self.report_raw(dump, "--json", *options)
        self.assertEqual(p.returncode, 0, p.stderr)
        import json
        rep = json.loads(p.stdout)
        return sorted((f["name"], os.path.basename(f["module"]), f["calls"])
                      for f in rep["functions"] if f["module"] != "[traceagent]"), p.stderr

    def symbol_chunks(self, dump):
        return [c for c in tahelp.read_chunks(dump) if c["type"] == SYMBOLS]

    def same_after_delete(self, dump, paths, options_list=((),)):
        """The report's rows of dump for each set of options: the same after
        the files at paths are deleted, with no other warning than before;
        returns the rows of the first options."""
        before = [self.rows(dump, *o) for o in options_list]
        for p in paths:
            os.unlink(p)
        after = [self.rows(dump, *o) for o in options_list]
        for (b, berr), (a, err), o in zip(before, after, options_list):
            self.assertEqual(a, b, o)
            self.assertEqual(err, berr, o)
            self.assertNotIn("cannot read symbols", err)
        return before[0][0]

    def test_c_program_deleted(self):
        for mode in tahelp.MODES:
            with self.subTest(mode=mode):
                exe = self.copy(self.prog("nest-O2"))
                r = self.traced(mode, [exe])
                self.assertEqual(len(self.symbol_chunks(r.dump)), 1)
                rows = self.same_after_delete(r.dump, [exe])
                base = os.path.basename(exe)
                names = {n for n, m, _ in rows if m == base}
                self.assertTrue(names, rows)
                self.assertTrue(names <= set(tahelp.elf_symbols(self.prog("nest-O2"))), rows)
                self.assertIn("main", names)
                self.assertFalse([n for n, _, _ in rows if "+0x" in n], rows)

    def test_cxx_program_deleted(self):
        exe = self.copy(self.prog("cxx-O2"))
        r = self.traced("record", [exe])
        modes = [("--demangle=full",), ("--demangle=simple",), ("--demangle=no",), ()]
        rows = self.same_after_delete(r.dump, [exe], modes)
        self.assertEqual([(n, c) for n, _, c in rows],
                         [("(anonymous namespace)::helper()", 1),
                          ("double ns::twice<double>(double)", 2),
                          ("int ns::twice<int>(int)", 3), ("int ns::width<char>()", 1),
                          ("int ns::width<long>()", 1), ("main", 1),
                          ("ns::Klass::Klass(int)", 1), ("ns::Klass::method(int)", 4),
                          ("ns::fail(int)", 2)])

    def test_stripped_dynamic_symbols(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc or not shutil.which("strip"):
            self.skipTest("no C compiler or strip")
        src = self.path("dyn.c")
        with open(src, "w") as f:
            f.write(STRIPPED_C)
        exe = self.path("dyn")
        subprocess.run([cc, "-O2", "-rdynamic", "-finstrument-functions", "-o", exe, src],
                       check=True, timeout=TIMEOUT)
        subprocess.run(["strip", exe], check=True, timeout=TIMEOUT)
        self.need_host_program(exe)
        r = self.traced("record", [exe])
        self.assertEqual(r.stdout, "%d\n" % sum(2 * (3 * i + 1) + 3 for i in range(4)))
        rows = self.same_after_delete(r.dump, [exe])
        self.assertEqual([(n, c) for n, m, c in rows if m == "dyn"],
                         [("dyn_leaf", 8), ("dyn_mid", 4), ("main", 1)])

    def test_symbols_off(self):
        exe = self.copy(self.prog("nest-O2"))
        on = self.traced("preload", [exe])
        off = self.traced("preload", [exe], env={"TRACEAGENT_SYMBOLS": "off"})
        rec = self.traced("record", [exe], options=["--no-symbols"])
        # What the symbols cost: their chunks, which the others lack (the
        # whole dumps' sizes differ by how the events were compressed,
        # which the machine's load decides: agent/flusher.c judge_slack).
        stored = self.symbol_chunks(on.dump)
        self.assertEqual(len(stored), 1)
        self.assertGreater(stored[0]["stored"], 0)
        for r in (off, rec):
            self.assertEqual(self.symbol_chunks(r.dump), [])
        named, _ = self.rows(off.dump)
        os.unlink(exe)
        for r in (off, rec):
            rows, err = self.rows(r.dump)
            self.assertIn("%s: cannot read symbols: No such file or directory" % exe, err)
            base = os.path.basename(exe)
            self.assertEqual(sorted(c for _, m, c in rows if m == base),
                             sorted(c for _, m, c in named if m == base))
            self.assertEqual([n for n, m, _ in rows if m == base and
                              not re.match(re.escape(base) + r"\+0x[0-9a-f]+$", n)], [])

    def test_dlopen_library_deleted(self):
        exe = self.copy(self.prog("dlopen-O2"))
        lib = self.copy(tahelp.LIBSAMPLE)
        r = self.traced("preload", [exe, lib, "9"])
        self.assertEqual(r.stdout, "dlopen: 9 calls, sum 204\n")
        self.assertEqual(len(self.symbol_chunks(r.dump)), 2)
        rows = self.same_after_delete(r.dump, [exe, lib])
        self.assertEqual([(n, c) for n, m, c in rows if m == "libsample.so"],
                         [("sample_square", 9), ("sample_twice", 9)])
        self.assertIn(("main", "dlopen-O2", 1), rows)

    def test_patched_module_deleted(self):
        """A program built without -finstrument-functions, its functions
        patched at load: their names are stored too."""
        self.need_feature("patching")
        exe = self.copy(self.prog("patchme-O2-pie-nofp"))
        r = self.run_preload([exe, "fib", "15"], env={"TRACEAGENT_PATCH": "fib"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.symbol_chunks(r.dump)), 1)
        rows = self.same_after_delete(r.dump, [exe])
        self.assertEqual(rows, [("fib", "patchme-O2-pie-nofp", tahelp.fib_calls(15))])

    def test_fork_child_leaves_them_to_the_parent(self):
        exe = self.copy(self.prog("fork-O2"))
        r = self.traced("preload", [exe])
        pids = {c["pid"] for c in tahelp.read_chunks(r.dump)}
        self.assertEqual(len(pids), 2)
        self.assertEqual(len(self.symbol_chunks(r.dump)), 1)
        rows = self.same_after_delete(r.dump, [exe])
        self.assertFalse([n for n, _, _ in rows if "+0x" in n], rows)

    def test_attach_dump(self):
        self.skip_unless_attach()
        exe = self.copy(self.prog("attachme-O2"))
        t = tahelp.LineChild(self, [exe, "2"])
        dump = self.fresh("attach")
        p = subprocess.run([TRACEAGENT, "attach", str(t.proc.pid), "-o", dump,
                            "--duration", "0.3"], env=clean_env(), capture_output=True,
                           text=True, timeout=TIMEOUT, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        status, _, err = t.quit()
        self.assertEqual(status, 0, err)
        self.assertEqual(len(self.symbol_chunks(dump)), 1)
        rows = self.same_after_delete(dump, [exe])
        names = {n for n, m, _ in rows if m == "attachme-O2"}
        self.assertTrue({"mid", "leaf"} <= names, rows)
        self.assertFalse([n for n in names if "+0x" in n], rows)

    def test_top_names_from_the_dump(self):
        """top's live aggregator names the functions of a dump whose binary
        is gone as report does."""
        exe = self.copy(self.prog("nest-O2"))
        r = self.traced("preload", [exe])
        rows = self.same_after_delete(r.dump, [exe])
        p = subprocess.run([TRACEAGENT, "top", "--batch", "--interval", "0.1", r.dump],
                           env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("cannot read symbols", p.stderr)
        last = p.stdout.split("snapshot ")[-1].splitlines()
        self.assertIn("ended complete", last)
        # calls/s calls self_ns self% calls_all self_ns_all module name
        got = sorted((w[7], w[6], int(w[4])) for w in (l.split() for l in last)
                     if len(w) == 8 and w[6] == "nest-O2")
        self.assertEqual(got, rows)

    def test_serve_stream(self):
        from test_serve import Serve, parse
        exe = self.copy(self.prog("nest-O2"))
        serve = Serve(self)
        r = self.run_preload([exe], dump=serve.addr)
        self.assertEqual(r.returncode, 0, r.stderr)
        line = parse(serve.wait_lines(1)[0])
        self.assertEqual(serve.stop(), 0)
        self.assertEqual(line["status"], "complete", line)
        self.assertEqual(len(self.symbol_chunks(line["file"])), 1)
        local = self.traced("preload", [exe])
        want, _ = self.rows(local.dump)
        rows = self.same_after_delete(line["file"], [exe])
        self.assertEqual(rows, want)


if __name__ == "__main__":
    tahelp.main()
