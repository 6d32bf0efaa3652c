# SPDX-License-Identifier: MIT
"""Dumps that travel (issue 34): names and source lines come only from a
file with the build-id the dump recorded.  A rebuilt binary gives no
wrong name (module+0xOFFSET and one warning naming the file and both
build-ids), a deleted one module+0xOFFSET after one warning; --symfs finds
the binary kept elsewhere or a dump's whole tree moved; a stripped binary
gets its names and lines from its separate debug file (--debug-dir, in
the .build-id layout or at the recorded path, and through its
.gnu_debuglink), a C++ one its demangled names; debuginfod (a local
server) serves the debug file when DEBUGINFOD_URLS says so.  `info` says
per module where the names came from and whether the file matched."""

import ctypes.util
import http.server
import json
import os
import shutil
import subprocess
import threading

import tahelp
from tahelp import TRACEAGENT, TIMEOUT

LINES = "srcline" in tahelp.FEATURES

# Version 1 of the program: three functions, each on a line of its own.
V1 = """#include <stdio.h>
__attribute__((noinline)) int alpha(int x) { return x * 3 + 1; }
__attribute__((noinline)) int beta(int x) { return alpha(x) + 2; }
int main(void) { printf("%d\\n", beta(4)); return 0; }
"""
V1_LINES = {"alpha": 2, "beta": 3, "main": 4}
V1_CALLS = {"alpha": 1, "beta": 1, "main": 1}

# Version 2: two functions in front move the others, so that version 1's
# offsets fall inside pad1 and pad2.
V2 = """#include <stdio.h>
__attribute__((noinline)) int pad1(int x) { return x * 7 + 5; }
__attribute__((noinline)) int pad2(int x) { return pad1(x) * 11 + x; }
__attribute__((noinline)) int alpha(int x) { return x * 3 + 1; }
__attribute__((noinline)) int beta(int x) { return alpha(x) + 2; }
int main(void) { printf("%d\\n", beta(4) + pad2(1)); return 0; }
"""

CXX = """#include <cstdio>
namespace ns {
struct Klass {
	int v;
	__attribute__((noinline)) int method(int x) { return v * x + 1; }
};
template <typename T> __attribute__((noinline)) T twice(T x) { return x + x; }
}
int main() {
	ns::Klass k{3};
	std::printf("%d %g\\n", k.method(2) + ns::twice<int>(4), ns::twice<double>(1.5));
	return 0;
}
"""
CXX_LINES = {"ns::Klass::method(int)": 5, "int ns::twice<int>(int)": 7,
             "double ns::twice<double>(double)": 7, "main": 9}


def origin(m):
    """Where info says a module's names and lines come from."""
    return (m["symbols_from"], m["symbols_path"], m["build_id_match"], m["lines_from"],
            m["lines_path"])


def lines_from(source, path):
    """info's lines_from and lines_path where the lines are in path."""
    return (source, path) if LINES else ("none", None)


class SymfindTest(tahelp.Case):

    # -- building and recording ------------------------------------------------

    def setUp(self):
        super().setUp()
        self.base = os.path.realpath(self.dir)

    def build(self, source, prog, cxx=False):
        """Compiles source (text) into prog with -g and the entry hooks;
        the source file is prog + ".c" (".cc")."""
        cc = shutil.which("c++" if cxx else "cc")
        if not cc:
            self.skipTest("no %s compiler" % ("C++" if cxx else "C"))
        src = prog + (".cc" if cxx else ".c")
        os.makedirs(os.path.dirname(prog), exist_ok=True)
        with open(src, "w") as fh:
            fh.write(source)
        p = subprocess.run([cc, "-g", "-O0", "-finstrument-functions",
                            "-Wl,--build-id", "-o", prog, src],
                           env=tahelp.clean_env(), capture_output=True, text=True,
                           timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.need_host_program(prog)
        return src

    def record(self, prog, stored=False):
        """Records prog: every recording of this file goes through here.
        Without the symbols stored in the dump (--no-symbols), which would
        name the functions whatever the files say, unless stored."""
        options = [] if stored else ["--no-symbols"]
        return self.traced("record", [prog], options=options).dump

    def strip(self, prog, debug, link=True):
        """Moves prog's debug information to debug (objcopy
        --only-keep-debug) and strips prog, with a .gnu_debuglink to it."""
        for argv in (["objcopy", "--only-keep-debug", prog, debug],
                     ["objcopy", "--strip-all"] +
                     (["--add-gnu-debuglink=" + debug] if link else []) + [prog]):
            if not shutil.which(argv[0]):
                self.skipTest("no objcopy")
            p = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
            self.assertEqual(p.returncode, 0, p.stderr)

    # -- the views ---------------------------------------------------------------

    def run_cmd(self, argv, env=None):
        p = subprocess.run([TRACEAGENT] + argv, env=tahelp.clean_env(env),
                           capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, "%s: %s" % (argv, p.stderr))
        return p

    def names(self, dump, prog, *options, env=None):
        """The report's functions of module prog: name -> (calls, srcline),
        and the report's stderr lines."""
        # A build without source lines (meson -Dsrcline=disabled) checks
        # the names alone.
        srcline = ["--srcline"] if LINES else []
        p = self.run_cmd(["report", "--json"] + srcline + list(options) + [dump], env)
        rep = json.loads(p.stdout)
        got = {f["name"]: (f["calls"], f.get("srcline")) for f in rep["functions"]
               if f["module"] == prog}
        return got, p.stderr.splitlines()

    def module_info(self, dump, prog, *options, env=None):
        p = self.run_cmd(["info", "--json"] + list(options) + [dump], env)
        mods = [m for m in json.loads(p.stdout)["processes"][0]["modules"]
                if m["path"] == prog]
        self.assertEqual(len(mods), 1, mods)
        return mods[0]

    def symbols(self, prog):
        """name -> value of prog's function symbols (its .symtab)."""
        return tahelp.elf_symbols(prog)

    def unnamed(self, prog, syms, calls):
        """What the report shows for functions without names: the
        module's base name and the offset, with no source line."""
        return {"%s+%#x" % (os.path.basename(prog), syms[n]): (c, None)
                for n, c in calls.items()}

    @staticmethod
    def with_lines(src, lines, calls):
        return {n: (calls[n], "%s:%d" % (src, lines[n]) if LINES else None) for n in calls}

    def warning(self, dump, path, file_id, dump_id):
        return ("traceagent: %s: warning: %s: build-id %s of the file is not the dump's %s: "
                "its names and source lines are not used" % (dump, path, file_id, dump_id))

    # -- the tests ------------------------------------------------------------------

    def test_rebuilt(self):
        """Rebuilt at the same path: none of the new file's names (pad1,
        pad2 at the old offsets) appears; the functions show as
        prog+0xOFFSET with no source line, after one warning with both
        build-ids.  The original binary kept elsewhere, given by --symfs,
        names them exactly, with their lines, and no warning."""
        prog = os.path.join(self.base, "app", "prog")
        src = self.build(V1, prog)
        old = self.symbols(prog)
        keep = os.path.join(self.base, "keep")
        os.makedirs(os.path.dirname(keep + prog))
        shutil.copy2(prog, keep + prog)
        dump = self.record(prog)
        old_id = self.module_info(dump, prog)["build_id"]
        self.build(V2, prog)
        new_id = self.module_info(dump, prog)["build_id"]
        self.assertEqual(old_id, new_id, "info's build_id is the dump's")
        p = subprocess.run(["readelf", "-n", prog], capture_output=True, text=True)
        file_id = [l.split()[-1] for l in p.stdout.splitlines() if "Build ID" in l][0]
        self.assertNotEqual(file_id, old_id)

        got, err = self.names(dump, prog)
        self.assertEqual(got, self.unnamed(prog, old, V1_CALLS))
        self.assertEqual(err, [self.warning(dump, prog, file_id, old_id)])
        m = self.module_info(dump, prog)
        self.assertEqual(origin(m), ("none", None, False, "none", None))

        got, err = self.names(dump, prog, "--symfs", keep)
        self.assertEqual(got, self.with_lines(src, V1_LINES, V1_CALLS))
        self.assertEqual(err, [])
        m = self.module_info(dump, prog, "--symfs=" + keep)
        self.assertEqual(origin(m), ("file", keep + prog, True) + lines_from("file", keep + prog))
        # The other views take the option too.
        p = self.run_cmd(["graph", "--symfs=" + keep, dump])
        self.assertIn("beta", p.stdout)
        self.assertNotIn("pad", p.stdout)

    def test_rebuilt_with_stored_symbols(self):
        """Recorded with its symbols stored (the default), rebuilt at the
        same path: the names are the dump's, exactly, and info says so; the
        new file is never read for them, nor for source lines, which it
        cannot give (its build-id differs)."""
        prog = os.path.join(self.base, "app", "prog")
        self.build(V1, prog)
        dump = self.record(prog, stored=True)
        old_id = self.module_info(dump, prog)["build_id"]
        self.build(V2, prog)
        p = subprocess.run(["readelf", "-n", prog], capture_output=True, text=True)
        file_id = [l.split()[-1] for l in p.stdout.splitlines() if "Build ID" in l][0]
        got, err = self.names(dump, prog)
        self.assertEqual(got, {k: (v, None) for k, v in V1_CALLS.items()})
        self.assertEqual(err, ["traceagent: %s: warning: %s: build-id %s of the file is not "
                               "the dump's %s: its source lines (the names are the dump's) "
                               "are not used" % (dump, prog, file_id, old_id)])
        m = self.module_info(dump, prog)
        self.assertEqual(origin(m), ("stored", None, False, "none", None))

    def test_deleted(self):
        """The binary gone: prog+0xOFFSET names after one warning."""
        prog = os.path.join(self.base, "app", "prog")
        self.build(V1, prog)
        syms = self.symbols(prog)
        dump = self.record(prog)
        os.unlink(prog)
        got, err = self.names(dump, prog)
        self.assertEqual(got, self.unnamed(prog, syms, V1_CALLS))
        self.assertEqual(err, ["traceagent: %s: warning: %s: cannot read symbols: "
                               "No such file or directory" % (dump, prog)])
        m = self.module_info(dump, prog)
        self.assertEqual(origin(m), ("none", None, None, "none", None))

    def test_moved_tree(self):
        """The dump and the program's whole tree moved elsewhere (another
        machine): --symfs with the new root names every function, with
        its line."""
        prog = os.path.join(self.base, "tree", "bin", "prog")
        src = self.build(V1, prog)
        dump = self.record(prog)
        root = os.path.join(self.base, "elsewhere")
        os.makedirs(root + self.base)
        os.rename(os.path.join(self.base, "tree"), root + os.path.join(self.base, "tree"))
        moved = os.path.join(root, "x.trace")
        os.rename(dump, moved)
        got, err = self.names(moved, prog, "--symfs=" + root)
        # The source moved with it: the line is the recorded file's.
        self.assertEqual(got, self.with_lines(src, V1_LINES, V1_CALLS))
        self.assertEqual(err, [])
        m = self.module_info(moved, prog, "--symfs", root)
        self.assertEqual(origin(m), ("file", root + prog, True) + lines_from("file", root + prog))

    def test_stripped(self):
        """A stripped binary (no .symtab, no DWARF): without its debug
        file, prog+0xOFFSET; with it through --debug-dir at
        DIR/recorded/path.debug and in DIR/.build-id/xx/rest.debug, and
        next to the binary through its .gnu_debuglink, exact names and
        lines.  A debug file of another build at the same place is not
        used."""
        prog = os.path.join(self.base, "app", "prog")
        src = self.build(V1, prog)
        syms = self.symbols(prog)
        debug = os.path.join(self.base, "prog.debug")
        self.strip(prog, debug, link=False)
        self.assertEqual(self.symbols(prog), {})
        dump = self.record(prog)
        bid = self.module_info(dump, prog)["build_id"]
        want = self.with_lines(src, V1_LINES, V1_CALLS)

        got, err = self.names(dump, prog)
        self.assertEqual(got, self.unnamed(prog, syms, V1_CALLS))
        self.assertEqual(err, [])
        m = self.module_info(dump, prog)
        self.assertEqual(origin(m), ("none", None, True, "none", None))

        # DIR/recorded/path.debug
        d1 = os.path.join(self.base, "dbg1")
        os.makedirs(os.path.dirname(d1 + prog))
        shutil.copy2(debug, d1 + prog + ".debug")
        got, err = self.names(dump, prog, "--debug-dir", d1)
        self.assertEqual((got, err), (want, []))

        # DIR/.build-id/xx/rest.debug, after a first --debug-dir without it
        d2 = os.path.join(self.base, "dbg2")
        byid = os.path.join(d2, ".build-id", bid[:2], bid[2:] + ".debug")
        os.makedirs(os.path.dirname(byid))
        shutil.copy2(debug, byid)
        empty = os.path.join(self.base, "empty")
        os.mkdir(empty)
        got, err = self.names(dump, prog, "--debug-dir=" + empty, "--debug-dir=" + d2)
        self.assertEqual((got, err), (want, []))
        m = self.module_info(dump, prog, "--debug-dir=" + empty, "--debug-dir=" + d2)
        self.assertEqual(origin(m), ("debug-file", byid, True) + lines_from("debug-file", byid))

        # Another build's debug file where this one's would be: not used.
        other = os.path.join(self.base, "other", "prog")
        self.build(V2, other)
        self.strip(other, d1 + prog + ".debug", link=False)
        got, err = self.names(dump, prog, "--debug-dir", d1)
        self.assertEqual((got, err), (self.unnamed(prog, syms, V1_CALLS), []))

    def test_debuglink(self):
        """objcopy --only-keep-debug and --add-gnu-debuglink, the debug
        file left next to the binary (gdb's layout): names and lines."""
        prog = os.path.join(self.base, "app", "prog")
        src = self.build(V1, prog)
        debug = os.path.join(self.base, "app", "prog.dbg")
        self.strip(prog, debug)
        dump = self.record(prog)
        got, err = self.names(dump, prog)
        self.assertEqual((got, err), (self.with_lines(src, V1_LINES, V1_CALLS), []))
        m = self.module_info(dump, prog)
        self.assertEqual(origin(m), ("debug-file", debug, True) + lines_from("debug-file", debug))

    def test_cxx(self):
        """A stripped C++ binary: demangled names and lines from its debug
        file in the .build-id layout of --debug-dir."""
        prog = os.path.join(self.base, "app", "cxxprog")
        src = self.build(CXX, prog, cxx=True)
        debug = os.path.join(self.base, "cxxprog.debug")
        self.strip(prog, debug, link=False)
        dump = self.record(prog)
        bid = self.module_info(dump, prog)["build_id"]
        d = os.path.join(self.base, "dbg")
        byid = os.path.join(d, ".build-id", bid[:2], bid[2:] + ".debug")
        os.makedirs(os.path.dirname(byid))
        shutil.copy2(debug, byid)
        got, err = self.names(dump, prog, "--debug-dir=" + d, "--demangle=full")
        self.assertEqual(got, self.with_lines(src, CXX_LINES, dict.fromkeys(CXX_LINES, 1)))
        self.assertEqual(err, [])

    def test_debuginfod(self):
        """DEBUGINFOD_URLS naming a server (here, in the test) that has the
        stripped binary's debug file: names and lines from it, kept in
        DEBUGINFOD_CACHE_PATH; info says debuginfod.  Unset, it is not
        asked."""
        if not ctypes.util.find_library("debuginfod"):
            self.skipTest("no libdebuginfod")
        prog = os.path.join(self.base, "app", "prog")
        src = self.build(V1, prog)
        syms = self.symbols(prog)
        debug = os.path.join(self.base, "prog.debug")
        self.strip(prog, debug, link=False)
        dump = self.record(prog)
        bid = self.module_info(dump, prog)["build_id"]
        with open(debug, "rb") as fh:
            files = {"/buildid/%s/debuginfo" % bid: fh.read()}
        asked = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                asked.append(self.path)
                body = files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(thread.join, TIMEOUT)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        cache = os.path.join(self.base, "cache")
        env = {"DEBUGINFOD_URLS": "http://127.0.0.1:%d" % server.server_address[1],
               "DEBUGINFOD_CACHE_PATH": cache}

        got, err = self.names(dump, prog, env={"DEBUGINFOD_URLS": ""})
        self.assertEqual(got, self.unnamed(prog, syms, V1_CALLS))
        self.assertEqual(asked, [])

        got, err = self.names(dump, prog, env=env)
        self.assertEqual((got, err), (self.with_lines(src, V1_LINES, V1_CALLS), []))
        self.assertIn("/buildid/%s/debuginfo" % bid, asked)
        m = self.module_info(dump, prog, env=env)
        fetched = os.path.join(cache, bid, "debuginfo")
        self.assertEqual(origin(m), ("debuginfod", fetched, True) +
                         lines_from("debuginfod", fetched))


if __name__ == "__main__":
    tahelp.main()
