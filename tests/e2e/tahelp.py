# SPDX-License-Identifier: MIT
"""Helpers shared by the end-to-end tests: running the sample programs under
the agent (preloaded directly or through `traceagent record`), reading the
report as JSON, and small readers for ELF symbols and dump chunks.

The paths come from the environment meson sets (tests/e2e/meson.build):
TA_TRACEAGENT, TA_AGENT, TA_PROGRAMS, TA_LIBSAMPLE, TA_WORKDIR, TA_DUMPREAD."""

import json
import os
import signal
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

TRACEAGENT = os.environ.get("TA_TRACEAGENT", "")
AGENT = os.environ.get("TA_AGENT", "")
PROGRAMS = os.environ.get("TA_PROGRAMS", "")
LIBSAMPLE = os.environ.get("TA_LIBSAMPLE", "")
WORKDIR = os.environ.get("TA_WORKDIR") or tempfile.gettempdir()
# tests/tools/tadumpread: the dumps' chunks through format's chunk reader.
DUMPREAD = os.environ.get("TA_DUMPREAD", "")
# What the build under test has, as meson configured it (docs/building.md):
# patching (TRACEAGENT_PATCH, --patch: capstone, x86-64), hookpatch (an
# excluded function's hook calls rewritten: capstone on x86-64, always on
# aarch64), srcline (--srcline: libdw).  All of them when run by hand.
FEATURES = set(os.environ.get("TA_FEATURES", "patching hookpatch srcline").split())
# Why a test of each is skipped in a build without it.
FEATURE_OFF = {
    "patching": "this build has no dynamic patching (meson -Dpatching)",
    "hookpatch": "this build rewrites no hook calls (meson -Dpatching, x86-64)",
    "srcline": "this build has no source lines (meson -Dsrcline)",
    "patchent": "this architecture has no patchable-entry patcher",
}

LEVELS = ("O0", "O2")
MODES = ("preload", "record")
# A hang guard for each program a test runs (seconds); 3 times longer
# emulated (below).
TIMEOUT = 120


def fib_calls(n):
    """How many times the naive fib(n) calls itself: 2*F(n+1) - 1."""
    a, b = 0, 1
    for _ in range(n + 1):
        a, b = b, a + b
    return 2 * a - 1


def bounded(call, what, timeout=None):
    """call()'s result, call being a read that blocks until a child says
    something (a line, or all it writes up to its end): a child that never
    does fails the test after timeout seconds (TIMEOUT) with what was
    awaited, rather than hanging it until meson's timeout.  The reader is
    left blocked in a thread of its own, until the child is killed at the
    test's end."""
    box = []

    def run():
        try:
            box.append((True, call()))
        except BaseException as e:  # handed to the caller below
            box.append((False, e))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(TIMEOUT if timeout is None else timeout)
    if not box:
        raise AssertionError("waited %d s for %s: nothing came"
                             % (TIMEOUT if timeout is None else timeout, what))
    ok, value = box[0]
    if not ok:
        raise value
    return value


def readline(stream, what=None):
    """stream.readline(), bounded (bounded())."""
    return bounded(stream.readline, what or "a line from a child")


def read_all(stream, what=None):
    """stream.read() up to the child's end, bounded (bounded())."""
    return bounded(stream.read, what or "the end of a child's output")


def clean_env(extra=None):
    """The environment without any TRACEAGENT_* setting or preload of the
    caller, so a test sees only what it sets."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRACEAGENT_") and k != "LD_PRELOAD"}
    env["LC_ALL"] = "C"
    if extra:
        env.update(extra)
    return env


def proc_state(pid, tid=None):
    """The state letter of process pid (or of its thread tid) in /proc's
    status (R, S, T, Z...)."""
    with open("/proc/%d/task/%d/status" % (pid, tid) if tid else "/proc/%d/status" % pid) as f:
        return next(l.split()[1] for l in f if l.startswith("State:"))


# The signals whose deaths the agent handles (crash.c holds them while
# they are at their default), each at its default and unblocked in every
# program a test starts, whatever the runner left: a shell's background job
# (as scripts/test-aarch64's namespace is) ignores SIGINT and SIGQUIT,
# nohup ignores SIGHUP.
DEATH_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE, signal.SIGALRM,
                 signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)


def default_signals():
    """In a preexec_fn: DEATH_SIGNALS at their default and unblocked."""
    for sig in DEATH_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, DEATH_SIGNALS)


def process_tree(root):
    """ps's lines (state, wait channel, arguments) of root and every process
    under it."""
    ps = subprocess.run(["ps", "-eo", "pid,ppid,stat,wchan:32,args"],
                        capture_output=True, text=True).stdout.splitlines()
    rows = [l.split(None, 4) for l in ps[1:]]
    keep, found = {root}, True
    while found:
        found = False
        for r in rows:
            if len(r) > 1 and r[0].isdigit() and int(r[1]) in keep and int(r[0]) not in keep:
                keep.add(int(r[0]))
                found = True
    return [l for l, r in zip(ps[1:], rows) if r and r[0].isdigit() and int(r[0]) in keep]


def run_guarded(argv, timeout=None, input=None, capture_output=False, text=False, **kw):
    """subprocess.run, but a run past its timeout fails with what was still
    running under it (ps: state and wait channel, read before anything is
    killed) and what it had printed, so that a hang says where it was."""
    if capture_output:
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    if input is not None:
        kw["stdin"] = subprocess.PIPE
    with subprocess.Popen(argv, text=text, **kw) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            tree = process_tree(proc.pid)
            for line in tree:
                try:
                    os.kill(int(line.split()[0]), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            out, err = proc.communicate()
            raise AssertionError("%s: still running after %s s; processes:\n%s\nstderr:\n%s"
                                 % (" ".join(argv), timeout, "\n".join(tree),
                                    (err or "")[-2000:])) from None
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def no_core():
    """preexec_fn: programs the tests kill leave no core files, and start
    with DEATH_SIGNALS at their default and unblocked."""
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    default_signals()


def allow_core():
    """preexec_fn: as no_core, but cores allowed (the tests that compare a
    traced death's wait status, core bit included, with an untraced one)."""
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    default_signals()


class Run:
    """The outcome of one program run: returncode, stdout, stderr (text),
    and the dump path the run was asked to write."""

    def __init__(self, proc, dump):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.dump = dump

    def stderr_lines(self):
        """The lines said, but for, under emulation, the host loader's: a
        shell of the host's architecture (system(), popen()) given the
        agent of the architecture under test in LD_PRELOAD ignores it, and
        says so, then runs the program under test, which traces."""
        return [l for l in self.stderr.splitlines()
                if l.strip() and not (EMULATED and l == HOST_LDSO_REFUSAL)]


class LineChild:
    """A long-running test program spoken to by lines on its stdin (the
    attach tests' targets): started with the test's environment, it must
    say "ready" first; killed at the test's end if still running."""

    def __init__(self, case, argv, env=None):
        self.case = case
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=clean_env(env),
                                     cwd=case.dir, preexec_fn=no_core)
        case.addCleanup(self.cleanup)
        case.assertEqual(readline(self.proc.stdout, "%s to say ready" % argv[0]), "ready\n")

    def say(self, line):
        """line sent; the first line of the answer, without its newline."""
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return readline(self.proc.stdout, "the answer to " + line).rstrip("\n")

    def quit(self):
        """(status, stdout, stderr) after "quit"."""
        out, err = self.proc.communicate("quit\n", timeout=TIMEOUT)
        return self.proc.returncode, out, err

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=TIMEOUT)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()


class Case(unittest.TestCase):
    """A test case with its own scratch directory."""

    maxDiff = None

    def setUp(self):
        for what, path in (("TA_TRACEAGENT", TRACEAGENT), ("TA_AGENT", AGENT),
                           ("TA_PROGRAMS", PROGRAMS)):
            if not path:
                self.fail("%s is not set: run the tests with meson test" % what)
        self.dir = tempfile.mkdtemp(prefix="e2e-", dir=WORKDIR)
        if not os.environ.get("TA_KEEP_DIRS"):
            self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    # -- programs ----------------------------------------------------------

    def prog(self, name):
        """Path of a sample program; skips the test when it was not built
        (the C++ sample without a C++ compiler, the static one without
        libc.a)."""
        path = os.path.join(PROGRAMS, name)
        if not os.path.exists(path):
            self.skipTest("%s was not built" % name)
        return path

    def path(self, name):
        return os.path.join(self.dir, name)

    # -- emulated runs (scripts/test-aarch64) ---------------------------------

    def need_host_program(self, name):
        """Skips the test when the system program name (a shell, env, true),
        which the test runs traced, is of another architecture than the
        programs under test: a cross build run under qemu-user, where the
        agent cannot be preloaded into it and record refuses it."""
        path = shutil.which(name) or name
        theirs, ours = elf_machine(path), elf_machine(TRACEAGENT)
        if theirs is not None and ours is not None and theirs != ours:
            self.skipTest("emulated run: %s is not built for the architecture under test"
                          % path)

    def need_feature(self, name):
        """Skips the test when the build was configured without the feature
        name (FEATURES), saying so."""
        if name not in FEATURES:
            self.skipTest(FEATURE_OFF[name])

    def skip_if_emulated(self, why):
        """Skips the test when the programs under test run emulated
        (qemu-user), for a check that emulation itself would fail: why."""
        if EMULATED:
            self.skipTest("emulated run: " + why)

    def skip_unless_attach(self):
        """Skips the test where `traceagent attach` cannot inject: another
        architecture than x86-64 and aarch64, or under qemu-user."""
        if platform.machine() not in ("x86_64", "aarch64"):
            self.skipTest("the injection is implemented for x86-64 and aarch64 only")
        self.skip_if_emulated("qemu-user does not let one guest ptrace another "
                              "(scripts/test-aarch64-vm tests the injection on an arm64 kernel)")

    def fresh(self, stem):
        """A dump path not used before in this test."""
        self._n = getattr(self, "_n", 0) + 1
        return self.path("%s-%d.trace" % (stem, self._n))

    def run_plain(self, argv, env=None, stdin=None, cwd=None):
        proc = subprocess.run(argv, env=clean_env(env), input=stdin, cwd=cwd or self.dir,
                              capture_output=True, text=True, timeout=TIMEOUT,
                              preexec_fn=no_core)
        return Run(proc, None)

    def run_preload(self, argv, dump=None, env=None, stdin=None, cwd=None):
        """Runs argv with the agent in LD_PRELOAD, writing to dump (a new
        path in the scratch directory by default; "" leaves
        TRACEAGENT_OUTPUT unset)."""
        if dump is None:
            dump = self.fresh("preload")
        e = {"LD_PRELOAD": AGENT}
        if dump:
            e["TRACEAGENT_OUTPUT"] = dump
        e.update(env or {})
        proc = run_guarded(argv, env=clean_env(e), input=stdin, cwd=cwd or self.dir,
                           capture_output=True, text=True, timeout=TIMEOUT,
                           preexec_fn=no_core)
        return Run(proc, dump or None)

    def run_record(self, argv, options=(), dump=None, env=None, stdin=None, cwd=None):
        """Runs argv through `traceagent record -o dump OPTIONS` (a new
        path by default); dump=False leaves -o out."""
        cmd = [TRACEAGENT, "record"]
        if dump is None:
            dump = self.fresh("record")
        if dump:
            cmd += ["-o", dump]
        cmd += list(options) + ["--"] + list(argv)
        proc = run_guarded(cmd, env=clean_env(env), input=stdin, cwd=cwd or self.dir,
                           capture_output=True, text=True, timeout=TIMEOUT,
                           preexec_fn=no_core)
        return Run(proc, dump or None)

    def run_mode(self, mode, argv, **kw):
        if mode == "preload":
            return self.run_preload(argv, **kw)
        return self.run_record(argv, **kw)

    def traced(self, mode, argv, expect_status=0, **kw):
        """Runs argv traced in the given mode, checks it ended as expected
        and said nothing but the loader's own line, and returns the run."""
        r = self.run_mode(mode, argv, **kw)
        self.assertEqual(r.returncode, expect_status,
                         "%s %s: status %d, stderr:\n%s" % (mode, argv, r.returncode, r.stderr))
        lines = r.stderr_lines()
        if mode == "record":
            self.assertEqual(lines[-1:], ["traceagent: dump written to %s" % r.dump],
                             "stderr:\n" + r.stderr)
            lines = lines[:-1]
        self.assertEqual(lines, [], "stderr of %s %s" % (mode, argv))
        self.assertTrue(os.path.isfile(r.dump), "no dump at %s" % r.dump)
        return r

    def info(self, dump):
        """`traceagent info --json` of a dump, which must succeed."""
        p = subprocess.run([TRACEAGENT, "info", "--json", dump], env=clean_env(),
                           capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    # -- the report ----------------------------------------------------------

    def report_raw(self, dump, *options):
        return subprocess.run([TRACEAGENT, "report"] + list(options) + [dump],
                              env=clean_env(), capture_output=True, text=True,
                              timeout=TIMEOUT)

    def report(self, dump, *options):
        """The JSON report of a dump that must be whole."""
        p = self.report_raw(dump, "--json", *options)
        self.assertEqual(p.returncode, 0, "report %s: stderr:\n%s" % (dump, p.stderr))
        try:
            rep = json.loads(p.stdout)
        except ValueError as e:
            self.fail("report --json %s: not JSON (%s):\n%s" % (dump, e, p.stdout[:2000]))
        return rep

    def assert_whole(self, rep, processes=1):
        """The dump is complete, lost nothing and had no errors."""
        self.assertTrue(rep["complete"], rep)
        # What a loss would need to be told apart: threads without a ring,
        # and the report's counts (the functions' calls are checked after).
        self.assertEqual(rep["lost"], 0,
                         {k: rep.get(k) for k in ("lost", "lost_by_cause", "lost_no_ring", "threads",
                                                  "events", "processes", "duration_ns")})
        self.assertEqual(rep["errors"], [])
        self.assertEqual(rep["processes"], processes)
        for f in rep["functions"]:
            self.assertEqual(f["open"], 0, f)

    def functions(self, rep_or_list, module=None, agent=False):
        """name -> function entry; fails on a name seen twice.  The agent's
        own row ("[traceagent wait]", module "[traceagent]") only with
        agent: a thread waits for the flusher or not as the machine's load
        goes (test_wait's business)."""
        lst = rep_or_list["functions"] if isinstance(rep_or_list, dict) else rep_or_list
        out = {}
        for f in lst:
            if module and os.path.basename(f["module"]) != module:
                continue
            if f["module"] == "[traceagent]" and not agent:
                continue
            self.assertNotIn(f["name"], out, "function %s listed twice" % f["name"])
            out[f["name"]] = f
        return out

    def assert_calls(self, funcs, expected):
        """Exactly the expected calls for each named function."""
        got = {name: funcs[name]["calls"] if name in funcs else None for name in expected}
        self.assertEqual(got, expected)

    def assert_times_sane(self, f):
        """min <= avg <= max, all within the total."""
        self.assertGreaterEqual(f["min_ns"], 0, f)
        self.assertLessEqual(f["min_ns"], f["max_ns"], f)
        self.assertLessEqual(f["max_ns"], f["total_ns"], f)
        self.assertLessEqual(f["self_ns"], f["total_ns"], f)


    def check_libsample(self, rep, n, exe):
        """The report of a run that called sample_square() n times from
        the program exe."""
        self.assert_whole(rep)
        syms = elf_symbols(LIBSAMPLE)
        lib = self.functions(rep, module="libsample.so")
        self.assert_calls(lib, {"sample_square": n, "sample_twice": n})
        self.assertEqual(sorted(lib), ["sample_square", "sample_twice"])
        for name, f in lib.items():
            self.assertEqual(f["offset"], syms[name], name)
            self.assertEqual(os.path.realpath(f["module"]), os.path.realpath(LIBSAMPLE))
        main = self.functions(rep, module=exe)
        self.assert_calls(main, {"main": 1})


# -- ELF files ---------------------------------------------------------------

def elf_machine(path):
    """e_machine of an ELF file; None for anything else (a script, no file)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return struct.unpack_from("<H" if head[5] == 1 else ">H", head, 18)[0]


# The programs under test are of another architecture than the Python
# running the tests: a cross build run under qemu-user (scripts/test-aarch64).
EMULATED = (TRACEAGENT != "" and elf_machine(TRACEAGENT) is not None and
            elf_machine(TRACEAGENT) != elf_machine(os.path.realpath(sys.executable)))
if EMULATED:
    # qemu-user runs the programs 5 to 20 times slower.
    TIMEOUT *= 3
HOST_LDSO_REFUSAL = ("ERROR: ld.so: object '%s' from LD_PRELOAD cannot be preloaded "
                     "(cannot open shared object file): ignored." % AGENT)


def elf_symbols(path):
    """name -> st_value of the function symbols in .symtab (else .dynsym)
    of a 64-bit little-endian ELF file."""
    return {name: v for name, (v, _size) in elf_functions(path).items()}


def elf_is_pie(path):
    """Whether the ELF file is position-independent (ET_DYN): its symbols'
    values are offsets from where it is loaded."""
    with open(path, "rb") as fh:
        head = fh.read(18)
    return struct.unpack_from("<H", head, 16)[0] == 3


def elf_functions(path):
    """name -> (st_value, st_size) of the function symbols in .symtab (else
    .dynsym) of a 64-bit little-endian ELF file."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("%s: not a 64-bit little-endian ELF file" % path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    syms = {}
    for wanted in (2, 11):  # SHT_SYMTAB, then SHT_DYNSYM
        for sh in sections:
            if sh[1] != wanted:
                continue
            strtab = sections[sh[6]]
            for off in range(sh[4], sh[4] + sh[5], 24):
                name, info, _other, shndx, value, size = struct.unpack_from(
                    "<IBBHQQ", data, off)
                if info & 0xF != 2 or shndx == 0:  # STT_FUNC, defined
                    continue
                end = data.index(b"\0", strtab[4] + name)
                syms.setdefault(data[strtab[4] + name:end].decode(), (value, size))
        if syms:
            break
    return syms


# -- dump chunks -------------------------------------------------------------

FILE_HEADER = 32
CHUNK_HEADER = 32


def read_chunks(path, payload=False, records=False):
    """The chunks of a whole dump as format's chunk reader reads them (the
    analyzer's; tests/tools/tadumpread.c prints them): a dict per chunk in
    file order, with chunk (its index), offset, type, flags, stored, raw
    (the payload's sizes), pid and seq; with payload, "payload": the raw
    payload's bytes; with records, the records of SITES ("sites"), CHANNELS
    ("channels") and EVENTS ("tid", "events") chunks (tadumpread.c says
    how).  A damaged chunk, or a file that is not a dump, raises ValueError
    naming the chunk and its offset."""
    args = [DUMPREAD] + (["--payload"] if payload else []) + (["--records"] if records else [])
    p = subprocess.run(args + [path], capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode == 2:
        raise ValueError(p.stderr.strip() or "%s: tadumpread: status 2" % path)
    out = []
    for line in p.stdout.splitlines():
        rec = json.loads(line)
        if "error" in rec:
            raise ValueError("%s: chunk %d at offset %d: %s" % (path, rec["chunk"], rec["offset"],
                                                               rec["error"]))
        if "header" in rec:
            continue
        if payload:
            rec["payload"] = bytes.fromhex(rec["payload"])
        out.append(rec)
    if p.returncode != 0:
        raise ValueError("%s: tadumpread: status %d: %s" % (path, p.returncode, p.stderr))
    return out


def chunks(path):
    """(offset, type, flags, stored_size) of each chunk of a whole dump."""
    return [(c["offset"], c["type"], c["flags"], c["stored"]) for c in read_chunks(path)]


CHUNK_EVENTS = 7
CHUNK_END = 8


def chunk_raw_sizes(path, ctype):
    """The raw (decompressed) payload sizes of a whole dump's chunks of
    type ctype, in file order."""
    return [c["raw"] for c in read_chunks(path) if c["type"] == ctype]


_CRC_TABLE = []


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli), as the format uses."""
    if not _CRC_TABLE:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
            _CRC_TABLE.append(c)
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ _CRC_TABLE[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


def main():
    unittest.main(verbosity=2, buffer=False)


if __name__ == "__main__":
    sys.exit("tahelp.py is a module for the tests")
