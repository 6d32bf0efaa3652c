# SPDX-License-Identifier: MIT
"""Dynamic patching (TRACEAGENT_PATCH, x86-64): patchme, built WITHOUT
-finstrument-functions at -O0 and -O2, PIE and not, with and without frame
pointers, and with endbr64 entries, traced by patching its entries.  The
counts are exact and equal the program's own counters; the crafted
functions of patch_asm.S are refused with their reasons; threads, longjmp,
signal handlers and recursion past the return stack keep the program's
behaviour and the counts."""

import json
import os
import re
import subprocess

import tahelp
from tahelp import fib_calls

VARIANTS = ["patchme-%s-%s-%s" % (lvl, pie, fp)
            for lvl in ("O0", "O2") for pie in ("pie", "nopie") for fp in ("fp", "nofp")]
SUMMARY = re.compile(r"^traceagent: patched (\d+) functions, refused (\d+)( \(see traceagent info\))?$")


def own_counts(stdout):
    """The program's own "calls NAME=COUNT" line, as a dict."""
    for line in stdout.splitlines():
        if line.startswith("calls "):
            return {k: int(v) for k, v in (w.split("=") for w in line.split()[1:])}
    raise AssertionError("no calls line in:\n" + stdout)


class PatchTest(tahelp.Case):

    def setUp(self):
        super().setUp()
        self.need_feature("patching")
        self.prog(VARIANTS[0])

    def patched(self, prog, args, patterns, expect_patched=None, expect_refused=0,
                extra_lines=(), mode="preload"):
        """Runs prog patched; checks its output is the untraced run's, its
        stderr the summary line (and extra_lines), and returns the run."""
        plain = self.run_plain([prog] + args)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        if mode == "preload":
            r = self.run_preload([prog] + args, env={"TRACEAGENT_PATCH": patterns})
        else:
            r = self.run_record([prog] + args, options=["--patch=" + patterns])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, plain.stdout)
        lines = r.stderr_lines()
        if mode == "record":
            self.assertEqual(lines[-1], "traceagent: dump written to %s" % r.dump)
            lines = lines[:-1]
        m = SUMMARY.match(lines[0]) if lines else None
        self.assertTrue(m, "stderr: %r" % r.stderr)
        if expect_patched is not None:
            self.assertEqual(int(m.group(1)), expect_patched, r.stderr)
        self.assertEqual(int(m.group(2)), expect_refused, r.stderr)
        self.assertEqual(bool(m.group(3)), expect_refused > 0)
        self.assertEqual(lines[1:], list(extra_lines))
        return r

    def info(self, dump):
        p = subprocess.run([tahelp.TRACEAGENT, "info", "--json", dump], env=tahelp.clean_env(),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_fib_counts(self):
        """fib(20) at every build variant: 2F(21)-1 calls, the program's own
        count, resolved at the symbol's offset; varargs doubles intact."""
        n = 20
        for name in VARIANTS + ["patchme-endbr"]:
            with self.subTest(prog=name):
                prog = self.prog(name)
                r = self.patched(prog, ["fib", str(n)], "fib,vsum,main", expect_patched=3)
                self.assertIn("vsum = 7.75\n", r.stdout)
                own = own_counts(r.stdout)
                self.assertEqual(own["fib"], fib_calls(n))
                rep = self.report(r.dump)
                self.assert_whole(rep)
                funcs = self.functions(rep)
                self.assert_calls(funcs, {"main": 1, "fib": own["fib"], "vsum": 1})
                self.assertEqual(sorted(funcs), ["fib", "main", "vsum"])
                self.assertEqual(rep["events"], 2 * (2 + fib_calls(n)))
                syms = tahelp.elf_symbols(prog)
                for fn in ("main", "fib", "vsum"):
                    self.assertEqual(funcs[fn]["offset"], syms[fn], fn)
                    self.assertEqual(os.path.basename(funcs[fn]["module"]), name)
                # All three relocated whole: no return address replaced.
                patch = self.info(r.dump)["processes"][0]["patch"]
                self.assertEqual((patch["relocated"], patch["return_stub"]), (3, []))

    def test_record_option(self):
        """traceagent record --patch sets TRACEAGENT_PATCH."""
        prog = self.prog("patchme-O2-pie-nofp")
        r = self.patched(prog, ["fib", "15"], "fib", expect_patched=1, mode="record")
        funcs = self.functions(self.report(r.dump))
        self.assert_calls(funcs, {"fib": fib_calls(15)})

    def test_nothing_without_patching(self):
        """The programs are not instrumented: without TRACEAGENT_PATCH, or
        when no pattern matches, there is no dump and nothing on stderr."""
        prog = self.prog("patchme-O2-pie-nofp")
        for env in ({}, {"TRACEAGENT_PATCH": "no_such_function*"}):
            with self.subTest(env=env):
                r = self.run_preload([prog, "fib", "10"], env=env)
                self.assertEqual(r.returncode, 0)
                self.assertEqual(r.stderr, "")
                self.assertFalse(os.path.exists(r.dump))

    def test_patterns_naming_nothing(self):
        """A pattern that names no function is said, with the ones that
        did patch; record --patch that patches nothing says so."""
        prog = self.prog("patchme-O2-pie-nofp")
        r = self.patched(prog, ["fib", "15"], "nosuchfn,fib,libfoo.so:x", expect_patched=1,
                         extra_lines=[
                             "traceagent: TRACEAGENT_PATCH: 'nosuchfn' names no function of "
                             "the executable; it patches nothing",
                             "traceagent: TRACEAGENT_PATCH: 'libfoo.so:x' names no function; "
                             "it patches nothing"])
        self.assert_calls(self.functions(self.report(r.dump)), {"fib": fib_calls(15)})
        r = self.run_record([prog, "fib", "15"], options=["--patch=nosuchfn"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr_lines(), [
            "traceagent: %s ran no instrumented code and --patch=nosuchfn patched none of its "
            "functions: no dump written" % prog])
        self.assertFalse(os.path.exists(r.dump))

    def test_capstone_loaded_only_to_patch(self):
        """libcapstone is opened when TRACEAGENT_PATCH asks for patching,
        never linked: its relocation cost every traced program ~6 ms at
        start-up."""
        for env, loaded in (({}, False), ({"TRACEAGENT_PATCH": "no_such_function*"}, True)):
            with self.subTest(env=env):
                r = self.run_preload(["cat", "/proc/self/maps"], env=env)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual("libcapstone" in r.stdout, loaded, r.stdout)

    def test_threads(self):
        """8 threads: exact counts overall and per thread."""
        for name in ("patchme-O0-pie-fp", "patchme-O2-nopie-nofp"):
            with self.subTest(prog=name):
                prog = self.prog(name)
                r = self.patched(prog, ["threads"], "worker,work,step", expect_patched=3)
                own = own_counts(r.stdout)
                self.assertEqual(own, {"worker": 8, "work": 36, "step": 360})
                rep = self.report(r.dump, "--threads")
                self.assert_whole(rep)
                self.assert_calls(self.functions(rep), own)
                steps = sorted(self.functions(t["functions"])["step"]["calls"]
                               for t in rep["per_thread"]
                               if "step" in self.functions(t["functions"]))
                self.assertEqual(steps, [10 * (i + 1) for i in range(8)])

    def test_exclusions_and_small_stacks(self):
        """'!GLOB' leaves functions out; a thread with the smallest stack
        pthread_create allows still starts (the agent's per-thread return
        stack is not in static TLS)."""
        prog = self.prog("patchme-O2-pie-nofp")
        r = self.patched(prog, ["smallstack"], "*,!_*,!main,!step", expect_refused=6)
        self.assertEqual(own_counts(r.stdout), {"worker": 1, "work": 1, "step": 10})
        funcs = self.functions(self.report(r.dump))
        self.assertEqual(sorted(funcs), ["work", "worker"])
        self.assert_calls(funcs, {"worker": 1, "work": 1})

    def test_crash(self):
        """A crash inside 4 patched frames: the same death as untraced, and
        the crash report's backtrace walks through them (the real return
        addresses are put back before it is taken)."""
        for name in ("patchme-O0-pie-fp", "patchme-O2-nopie-nofp"):
            with self.subTest(prog=name):
                prog = self.prog(name)
                plain = subprocess.run([prog, "crash"], env=tahelp.clean_env(),
                                       capture_output=True, preexec_fn=tahelp.no_core)
                self.assertEqual(plain.returncode, -11)
                r = self.run_preload([prog, "crash"], env={"TRACEAGENT_PATCH": "crasher,main"})
                self.assertEqual(r.returncode, -11)
                self.assertEqual(r.stderr_lines(), [
                    "traceagent: patched 2 functions, refused 0"])
                proc = self.info(r.dump)["processes"][0]
                names = [f["function"] for f in proc["crash"]["backtrace"]]
                self.assertEqual(names[:5], ["crasher"] * 4 + ["main"], names)
                (stack,) = proc["crash"]["stacks"]
                self.assertEqual([f["function"] for f in stack["open"]],
                                 ["main"] + ["crasher"] * 4)

    def test_registers_kept_in_slow_path(self):
        """ta_leaf's call is the thread's first event (the ring's slow path
        runs, with libc calls): ta_keeper's caller-saved registers, xmm
        ones included, are intact all the same."""
        prog = self.prog("patchme-O2-pie-nofp")
        r = self.patched(prog, ["refuse"], "ta_leaf", expect_patched=1)
        self.assertIn(" keeper=1\n", r.stdout)
        self.assert_calls(self.functions(self.report(r.dump)), {"ta_leaf": 1})

    def test_refusals(self):
        """'*': the entry point and the crafted functions are refused with
        their reasons (info), the others patched; the RIP-relative load is
        relocated (ta_ripload returns 42) and traced; a caller that keeps
        values in caller-saved registers across a call (as GCC's -fipa-ra
        does) finds them intact (keeper=1)."""
        for name in ("patchme-O2-pie-nofp", "patchme-O0-nopie-fp"):
            with self.subTest(prog=name):
                prog = self.prog(name)
                r = self.patched(prog, ["refuse"], "*",
                                 expect_refused=8 if "nopie" in name else 7)
                self.assertEqual(r.stdout, "jump_in=7 jrcxz=1,7 ripload=42 keeper=1\n"
                                           "retn=5 whereami=1 hot=2,1 sse=42\n")
                patch = self.info(r.dump)["processes"][0]["patch"]
                self.assertEqual(patch["refused_count"], len(patch["refused"]))
                got = {f["name"]: (f["code"], f["reason"]) for f in patch["refused"]}
                # A non-PIE executable also has glibc's one-byte
                # _dl_relocate_static_pie.
                extra = {"_dl_relocate_static_pie": (1, "too short for a 5-byte jump")}
                self.assertEqual(got, {
                    **(extra if "nopie" in name else {}),
                    "_start": (8, "the program's entry point, which is jumped to, not called"),
                    "ta_short": (1, "too short for a 5-byte jump"),
                    "ta_jump_in": (2, "its first bytes are the target of a jump inside it"),
                    "ta_jrcxz": (3, "an instruction in its first bytes cannot be moved"),
                    "ta_retn": (9, "it returns with ret N, popping its caller's arguments"),
                    "ta_whereami": (10, "it reads or moves its own return address"),
                    "ta_hot.cold": (11, "a part of another function (.cold), entered by a jump"),
                })
                syms = tahelp.elf_symbols(prog)
                for f in patch["refused"]:
                    self.assertEqual(os.path.basename(f["module"]), name)
                # Runtime addresses: the symbol's value plus one load bias
                # (none for a non-PIE executable).
                biases = {f["address"] - syms[f["name"]] for f in patch["refused"]}
                self.assertEqual(len(biases), 1, biases)
                if "nopie" in name:
                    self.assertEqual(biases, {0})
                funcs = self.functions(self.report(r.dump))
                self.assert_calls(funcs, {"main": 1, "ta_ripload": 1, "ta_keeper": 1,
                                          "ta_leaf": 1, "ta_retn_caller": 1, "ta_hot": 2,
                                          "ta_sse": 1, "ta_retn": None, "ta_whereami": None,
                                          "ta_hot.cold": None, "ta_short": None,
                                          "ta_jump_in": None, "ta_jrcxz": None})
                text = subprocess.run([tahelp.TRACEAGENT, "info", r.dump],
                                      env=tahelp.clean_env(), capture_output=True,
                                      text=True).stdout
                self.assertRegex(text, r"patched \d+ functions, refused [78]:\n")
                self.assertRegex(text, r"\n    ta_short \(%s, 0x[0-9a-f]+\): too short" % name)

    def test_endbr64(self):
        """-fcf-protection=full: every entry starts with endbr64, which
        stays in place; the counts are exact."""
        prog = self.prog("patchme-endbr")
        with open(prog, "rb") as fh:
            data = fh.read()
        for fn in ("work", "step"):
            off = self.file_offset(data, tahelp.elf_symbols(prog)[fn])
            self.assertEqual(data[off:off + 4], b"\xf3\x0f\x1e\xfa", fn)
        r = self.patched(prog, ["threads"], "work,step", expect_patched=2)
        self.assert_calls(self.functions(self.report(r.dump)), {"work": 36, "step": 360})

    @staticmethod
    def file_offset(data, vaddr):
        """File offset of a virtual address, from the PT_LOAD headers."""
        import struct
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        for i in range(phnum):
            ptype, _flags, offset, va, _pa, filesz = struct.unpack_from(
                "<IIQQQQ", data, phoff + i * phentsize)
            if ptype == 1 and va <= vaddr < va + filesz:
                return vaddr - va + offset
        raise AssertionError("address %#x not in a PT_LOAD" % vaddr)

    def test_longjmp(self):
        """longjmp out of 4 patched frames, 50 times: the program runs on,
        the counts are exact, no frame is left open."""
        for name in ("patchme-O0-pie-fp", "patchme-O2-pie-nofp"):
            with self.subTest(prog=name):
                prog = self.prog(name)
                r = self.patched(prog, ["longjmp", "50"], "jumper,fib,main", expect_patched=3)
                own = own_counts(r.stdout)
                self.assertEqual(own, {"jumper": 200, "fib": fib_calls(10)})
                rep = self.report(r.dump)
                self.assert_whole(rep)
                self.assert_calls(self.functions(rep), {"main": 1, **own})

    def test_deep_recursion(self):
        """2001 nested calls of a function relocated whole: every exit
        recorded (nothing is kept per frame).  With the return stub
        (ta_deep_ind has an indirect jump), the 1024 deepest-first get
        exits, the others are entered, counted and said to have no
        recorded exit."""
        prog = self.prog("patchme-O2-pie-fp")
        r = self.patched(prog, ["deep", "2000"], "deep", expect_patched=1)
        self.assertEqual(own_counts(r.stdout), {"deep": 2001})
        rep = self.report(r.dump)
        self.assert_whole(rep)
        self.assert_calls(self.functions(rep), {"deep": 2001})
        patch = self.info(r.dump)["processes"][0]["patch"]
        self.assertEqual((patch["relocated"], patch["frames_without_exit"]), (1, 0))

        r = self.patched(prog, ["deepind", "2000"], "ta_deep_ind", expect_patched=1, extra_lines=[
            "traceagent: 977 calls of patched functions nested deeper than 1024 patched "
            "frames: entered, their exits not recorded"])
        self.assertEqual(own_counts(r.stdout), {"ta_deep_ind": 2001})
        rep = self.report(r.dump)
        self.assertEqual(self.functions(rep)["ta_deep_ind"]["calls"], 2001)
        patch = self.info(r.dump)["processes"][0]["patch"]
        self.assertEqual(patch["frames_without_exit"], 977)
        self.assertEqual((patch["relocated"], patch["return_stub"]), (0, [
            {"code": 1, "count": 1,
             "reason": "an indirect jump (a jump table, an indirect tail call)"}]))

    def test_tail_calls_and_fallbacks(self):
        """Functions relocated whole record their exit before a tail call
        (ta_tail's jmp, ta_ctail's jnz), as -finstrument-functions code
        does: ta_leaf is main's callee, not theirs, and no frame is left
        open.  Taking its own address (ta_selfaddr) is no reason not to
        relocate, and gives the entry's.  A jump table (ta_table) and a
        jump to a .cold part (ta_hot) get the return stub instead, with
        exact counts, and info says why."""
        for name in ("patchme-O0-pie-fp", "patchme-O2-nopie-nofp"):
            with self.subTest(prog=name):
                prog = self.prog(name)
                r = self.patched(prog, ["tail"],
                                 "ta_tail,ta_ctail,ta_leaf,ta_table,ta_selfaddr,main",
                                 expect_patched=6)
                self.assertIn("sum = 84\nself=1\n", r.stdout)
                self.assertEqual(own_counts(r.stdout), {"tail+table": 11})
                rep = self.report(r.dump)
                self.assert_whole(rep)
                funcs = self.functions(rep)
                self.assert_calls(funcs, {"main": 1, "ta_tail": 3, "ta_ctail": 3, "ta_leaf": 5,
                                          "ta_table": 4, "ta_selfaddr": 1})
                for fn in ("ta_tail", "ta_ctail"):
                    self.assertEqual(funcs[fn]["self_ns"], funcs[fn]["total_ns"], fn)
                patch = self.info(r.dump)["processes"][0]["patch"]
                self.assertEqual((patch["relocated"], patch["return_stub"]), (5, [
                    {"code": 1, "count": 1,
                     "reason": "an indirect jump (a jump table, an indirect tail call)"}]))

                r = self.patched(prog, ["refuse"], "ta_hot,ta_ripload", expect_patched=2)
                self.assert_calls(self.functions(self.report(r.dump)),
                                  {"ta_hot": 2, "ta_ripload": 1})
                patch = self.info(r.dump)["processes"][0]["patch"]
                self.assertEqual((patch["relocated"], patch["return_stub"]), (1, [
                    {"code": 2, "count": 1, "reason": "a jump to a .cold part"}]))

    def test_signal_handler(self):
        """A signal handler's patched calls, 10 times fib(5)."""
        prog = self.prog("patchme-O2-nopie-fp")
        r = self.patched(prog, ["signal", "10"], "fib,on_usr1", expect_patched=2)
        self.assertEqual(own_counts(r.stdout), {"fib": 10 * fib_calls(5)})
        rep = self.report(r.dump)
        self.assert_whole(rep)
        self.assert_calls(self.functions(rep), {"fib": 150, "on_usr1": 10})

    def test_breakpoints(self):
        """Breakpoints (int3) a debugger, a uprobe or `perf probe` set in a
        library's code before it is patched (patchbplib.c's constructor,
        whose SIGTRAP handler plays the debugger): a function with one at
        its entry (over its first instruction, or over its endbr64) is
        refused, named on stderr and in the PATCH chunk, and left as it is;
        one with a breakpoint further in is patched with its body left in
        place (the return stub).  Every breakpoint traps where it was set,
        the program's output is the untraced run's, and nothing dies of a
        SIGTRAP."""
        prog = self.prog("patchbp")
        lib = os.path.join(tahelp.PROGRAMS, "libpatchbplib.so")
        spec = "libpatchbplib.so:bp_[eip]*"
        plain = self.run_plain([prog, lib])
        self.assertEqual((plain.returncode, plain.stdout), (0, (
            "bp_entry(21) = 64\nbp_endbr(21) = 43\nbp_inner(21) = 42\nbp_plain(21) = 22\n"
            "breakpoints hit: 3\n")))
        why = "a breakpoint (int3) in its first bytes: a debugger, uprobe or perf probe"
        warn = re.compile(r"^traceagent: not patching (\w+) \((.*), 0x[0-9a-f]+\): "
                          + re.escape(why) + "; it is not traced$")
        for mode in ("preload", "record"):
            with self.subTest(mode=mode):
                if mode == "preload":
                    r = self.run_preload([prog, lib], env={"TRACEAGENT_PATCH": spec})
                else:
                    r = self.run_record([prog, lib], options=["--patch=" + spec])
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stdout, plain.stdout)
                lines = r.stderr_lines()
                if mode == "record":
                    self.assertEqual(lines[-1], "traceagent: dump written to %s" % r.dump)
                    lines = lines[:-1]
                self.assertEqual(lines[2:], [
                    "traceagent: patched 2 functions, refused 2 (see traceagent info)"])
                named = [warn.match(l) for l in lines[:2]]
                self.assertTrue(all(named), r.stderr)
                self.assertEqual(sorted(m.group(1) for m in named), ["bp_endbr", "bp_entry"])
                self.assertEqual({os.path.realpath(m.group(2)) for m in named},
                                 {os.path.realpath(lib)})
                patch = self.info(r.dump)["processes"][0]["patch"]
                self.assertEqual((patch["patched"], patch["refused_count"]), (2, 2))
                self.assertEqual(sorted((f["name"], f["code"], f["reason"])
                                        for f in patch["refused"]),
                                 [("bp_endbr", 12, why), ("bp_entry", 12, why)])
                self.assertEqual((patch["relocated"], patch["return_stub"]), (1, [
                    {"code": 9, "count": 1,
                     "reason": "a breakpoint (int3) inside it, which must stay where it was set"}]))
                rep = self.report(r.dump)
                self.assert_whole(rep)
                self.assert_calls(self.functions(rep), {"bp_inner": 1, "bp_plain": 1,
                                                        "bp_entry": None, "bp_endbr": None})

    def test_dlopen(self):
        """A library dlopen'ed later is patched before dlopen returns, and
        again when it is loaded again after a dlclose: plib_square's 2 x 100
        calls; its 4-byte plib_twice is refused each time; the summary line
        comes again with the new totals."""
        prog = self.prog("patchme-O2-pie-nofp")
        lib = os.path.join(tahelp.PROGRAMS, "libpatchlib.so")
        r = self.patched(prog, ["dlopen", lib, "100"], "libpatchlib.so:plib_*,main",
                         expect_patched=1, extra_lines=[
                             "traceagent: patched 2 functions, refused 1 (see traceagent info)",
                             "traceagent: patched 3 functions, refused 2 (see traceagent info)"])
        self.assertIn("calls plib_square=200\n", r.stdout)
        rep = self.report(r.dump)
        self.assert_whole(rep)
        self.assert_calls(self.functions(rep), {"main": 1, "plib_square": 200,
                                                "plib_twice": None})
        self.assertEqual(self.functions(rep)["plib_square"]["offset"],
                         tahelp.elf_symbols(lib)["plib_square"])
        patch = self.info(r.dump)["processes"][0]["patch"]
        self.assertEqual((patch["patched"], patch["refused_count"]), (3, 2))
        self.assertEqual([(f["name"], f["code"]) for f in patch["refused"]],
                         [("plib_twice", 1)] * 2)
        self.assertEqual(os.path.realpath(patch["refused"][0]["module"]), os.path.realpath(lib))

    def test_system_zlib(self):
        """Debian's zlib, never instrumented, patched by MODULE:GLOB: the
        functions zlib does not call itself are called exactly as often as
        the program counted its own calls; deflateInit_ calls deflateInit2_
        once each, and nothing is refused."""
        prog = self.prog("zcount")
        r = self.patched(prog, ["5"], "libz.so.1:deflate*,libz.so.1:inflate*")
        own = own_counts(r.stdout)
        self.assertEqual(own, {"deflateInit_": 5, "deflate": 5 * 64, "deflateEnd": 5,
                               "inflateInit_": 5, "inflate": own["inflate"], "inflateEnd": 5})
        self.assertGreater(own["inflate"], 5 * 64)
        rep = self.report(r.dump)
        self.assert_whole(rep)
        zfuncs = self.functions(rep, module="libz.so.1")
        self.assert_calls(zfuncs, {**own, "deflateInit2_": own["deflateInit_"],
                                   "inflateInit2_": own["inflateInit_"]})
        for name, f in zfuncs.items():
            self.assertTrue(name.startswith(("deflate", "inflate")), name)
        self.assertEqual(self.functions(rep, module="zcount"), {})
        # The offsets are the library's own symbol values (.dynsym).
        libz = next(m["path"] for m in self.info(r.dump)["processes"][0]["modules"]
                    if os.path.basename(m["path"]) == "libz.so.1")
        syms = tahelp.elf_symbols(libz)
        for name in own:
            self.assertEqual(zfuncs[name]["offset"], syms[name], name)

    def test_cxx_exceptions(self):
        """C++ throw and rethrow through patched frames, with destructors
        calling patched code, and pthread_exit from patched frames: the
        program behaves as untraced, the counts are exact and no frame is
        left open (the unwound frames exit at the catch)."""
        for level in ("O0", "O2"):
            with self.subTest(level=level):
                prog = self.prog("patchcxx-" + level)
                r = self.patched(prog, ["25"], "catcher,relay,thrower,cleanup,exiter,main",
                                 expect_patched=6)
                own = own_counts(r.stdout)
                self.assertEqual(own, {"catcher": 25, "relay": 25, "thrower": 100,
                                       "cleanup": 100, "exiter": 2})
                rep = self.report(r.dump)
                self.assert_whole(rep)
                self.assert_calls(self.functions(rep), {"main": 1, **own})


if __name__ == "__main__":
    tahelp.main()
