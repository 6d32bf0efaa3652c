# SPDX-License-Identifier: MIT
"""A newcomer's first trace: `traceagent record` of a program with no
instrumented code says in one line why no dump was written, and exits with
the program's status; with --libcalls that program's library calls are
recorded (the agent starts at the first one); a shell under record, asked
for nothing, still creates no dump; record speaks for the program it ran,
naming the dumps its children wrote when it wrote none itself."""

import glob
import os
import re

import tahelp

WHY = ("traceagent: %s ran no instrumented code: no dump written (build with "
       "-finstrument-functions, or trace its functions with --patch, or its library calls "
       "with --libcalls)")
LIB = "[libcall]"


class FirstTraceTest(tahelp.Case):

    def plain(self):
        return self.prog("plainio")

    def traces(self):
        return sorted(glob.glob(self.path("*.trace")))

    def test_uninstrumented_says_why(self):
        """The exact line, the program's status and output, no dump, for a
        program named by path and one found in PATH."""
        lines = "".join("line %d\n" % i for i in range(3))
        r = self.run_record([self.plain(), "3", "7"])
        self.assertEqual((r.returncode, r.stdout), (7, lines))
        self.assertEqual(r.stderr_lines(), [WHY % self.plain()])
        self.assertEqual(self.traces(), [])
        r = self.run_record(["plainio", "3", "0"], dump=False,
                            env={"PATH": os.path.dirname(self.plain()) + ":/usr/bin:/bin"})
        self.assertEqual((r.returncode, r.stdout), (0, lines))
        self.assertEqual(r.stderr_lines(), [WHY % "plainio"])
        self.assertEqual(self.traces(), [])

    def test_host_true(self):
        self.need_host_program("true")
        r = self.run_record(["true"])
        self.assertEqual((r.returncode, r.stdout), (0, ""))
        self.assertEqual(r.stderr_lines(), [WHY % "true"])
        self.assertFalse(os.path.exists(r.dump))

    def test_untraced_process_loads_nothing_more(self):
        """A process that never records (cat, under LD_PRELOAD) has the
        agent mapped but none of the libraries it records with (liblz4,
        libunwind, liblzma under it): they are opened once it records; an
        instrumented program's dump is compressed all the same."""
        self.need_host_program("cat")
        r = self.run_preload(["cat", "/proc/self/maps"], dump="")
        self.assertEqual(r.returncode, 0, r.stderr)
        libs = {os.path.basename(line.split()[-1]) for line in r.stdout.splitlines()
                if "/" in line}
        self.assertIn(os.path.basename(tahelp.AGENT), libs)
        self.assertEqual([x for x in libs if x.startswith(("liblz4", "libunwind", "liblzma"))],
                         [])
        r = self.run_preload([self.prog("fib-O0"), "20"])
        info = self.info(r.dump)
        self.assertGreater(info["raw_bytes"], info["stored_bytes"], info)

    def test_short_run_loads_no_unwinder(self):
        """A traced run too short to need it (fib 1) never opens libunwind
        (nor liblzma under it): the flusher opens it some time after the
        start, which a run of 100 ms reaches (its dump's module map has
        it); a crash before then is test_crash's."""
        def libs(argv):
            r = self.run_preload(argv)
            self.assertEqual(r.returncode, 0, r.stderr)
            info = self.info(r.dump)
            (proc,) = info["processes"]
            return [os.path.basename(m["path"]) for m in proc["modules"]
                    if os.path.basename(m["path"]).startswith(("libunwind", "liblzma"))]
        self.assertEqual(libs([self.prog("fib-O0"), "1"]), [])
        self.assertIn("libunwind.so.8", libs([self.prog("sleep-O0")]))

    # Functions the agent interposes and never calls itself: a process that
    # never calls them has no reason to look them up.
    UNCALLED = ("pthread_rwlock_timedwrlock", "pthread_rwlock_tryrdlock", "sem_timedwait",
                "sem_trywait", "epoll_pwait", "pselect", "ppoll", "__recvfrom_chk",
                "__pread64_chk", "__openat64_2", "pvalloc", "valloc", "siglongjmp",
                "__longjmp_chk", "_longjmp", "__cxa_begin_catch", "execvpe", "fexecve", "_Exit")
    BINDING = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'")

    def test_untraced_process_resolves_lazily(self):
        """A process that never records looks up no real function it does
        not call: the agent's constructors resolve nothing with dlsym
        (RTLD_NEXT lookups the loader reports as bindings from the agent),
        and the functions it does call are found without dlsym too."""
        for argv in (["true"], [self.plain(), "2"]):
            if argv == ["true"]:
                self.need_host_program("true")
            with self.subTest(argv=argv[0]):
                log = self.path("ld-debug")
                r = self.run_preload(argv, dump="", env={"LD_DEBUG": "bindings",
                                                         "LD_DEBUG_OUTPUT": log})
                self.assertEqual(r.returncode, 0, r.stderr)
                text = "".join(open(f).read() for f in glob.glob(log + ".*"))
                for f in glob.glob(log + ".*"):
                    os.unlink(f)
                agent = os.path.realpath(tahelp.AGENT)
                found = [m.groups() for m in self.BINDING.finditer(text)]
                self.assertTrue(found, text[:2000])
                looked_up = sorted({sym for src, dst, sym in found
                                    if os.path.realpath(src) == agent and
                                    os.path.realpath(dst) != agent})
                self.assertEqual([s for s in looked_up if s in self.UNCALLED], [], looked_up)
                self.assertNotIn("write", looked_up)

    def test_libcalls_recorded(self):
        """--libcalls io and all: the 5 writes of the uninstrumented program
        are in the dump, exactly, and the loader names the dump."""
        for classes in ("io", "all"):
            with self.subTest(classes=classes):
                r = self.run_record([self.plain(), "5", "3"], ["--libcalls", classes])
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertEqual(r.stdout, "".join("line %d\n" % i for i in range(5)))
                self.assertEqual(r.stderr_lines(), ["traceagent: dump written to " + r.dump])
                rep = self.report(r.dump)
                self.assert_whole(rep)
                funcs = self.functions(rep)
                self.assertEqual(funcs["write"]["calls"], 5)
                self.assertEqual(funcs["write"]["module"], LIB)
                if classes == "io":
                    self.assertEqual(sorted(funcs), ["write"])
                io = self.lc_io(r.dump)
                self.assertEqual([(f["fd"], f["calls"], f["bytes_done"]) for f in io["fds"]],
                                 [("1", 5, 5 * len("line 0\n"))])

    def lc_io(self, dump):
        import json
        p = self.report_raw(dump, "--io", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)["io"]

    def test_libcalls_env_preload(self):
        """TRACEAGENT_LIBCALLS set explicitly starts the agent without
        record too; the default classes (io, sleep) do not."""
        out = self.fresh("env")
        r = self.run_preload([self.plain(), "4"], dump=out,
                             env={"TRACEAGENT_LIBCALLS": "io,sleep"})
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assert_calls(self.functions(self.report(out)), {"write": 4})
        out = self.fresh("default")
        r = self.run_preload([self.plain(), "4"], dump=out)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertFalse(os.path.exists(out))

    def test_libcalls_nothing_recorded(self):
        """Asked for a class the program never calls: no dump, and the line
        says so without suggesting --libcalls."""
        r = self.run_record([self.plain(), "2"], ["--libcalls", "lock"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr_lines(), [
            "traceagent: %s ran no instrumented code and made no library call of those "
            "recorded (lock): no dump written (build with -finstrument-functions, or trace "
            "its functions with --patch)" % self.plain()])
        self.assertFalse(os.path.exists(r.dump))

    def test_shell_creates_no_dump(self):
        """A script under record with nothing asked: the shell reads and
        writes (the default classes), and no process creates a dump; the
        line names the script."""
        self.need_host_program("/bin/sh")
        script = self.path("run-plain")
        with open(script, "w") as fh:
            fh.write("#!/bin/sh\n%s 2\necho done\n" % self.plain())
        os.chmod(script, 0o755)
        r = self.run_record([script], dump=self.path("sh-%p.trace"))
        self.assertEqual((r.returncode, r.stdout), (0, "line 0\nline 1\ndone\n"))
        self.assertEqual(r.stderr_lines(), [WHY % script])
        self.assertEqual(self.traces(), [])

    def test_children_dumps_named(self):
        """A shell that ran no instrumented code but started traced
        programs: one line naming their dumps (not the shell's)."""
        self.need_host_program("/bin/sh")
        fib = self.prog("fib-O0")
        r = self.run_record(["/bin/sh", "-c", "%s 5; %s 6; true" % (fib, fib)],
                            dump=self.path("kid-%p.trace"))
        self.assertEqual((r.returncode, r.stdout), (0, "fib(5) = 5\nfib(6) = 8\n"), r.stderr)
        dumps = self.traces()
        self.assertEqual(len(dumps), 2, dumps)
        lines = r.stderr_lines()
        self.assertEqual(len(lines), 1, r.stderr)
        prefix = "traceagent: /bin/sh ran no instrumented code; processes it started wrote "
        self.assertTrue(lines[0].startswith(prefix), lines[0])
        self.assertEqual(sorted(lines[0][len(prefix):].split(", ")), dumps)

    def test_agent_failure_not_blamed_on_program(self):
        """An instrumented program whose agent cannot write its dump says
        so itself: the loader adds nothing."""
        dump = self.path("no-such-dir/x.trace")
        r = self.run_record([self.prog("fib-O0"), "5"], dump=dump)
        self.assertEqual((r.returncode, r.stdout), (0, "fib(5) = 5\n"))
        lines = r.stderr_lines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("cannot create the dump", lines[0])


if __name__ == "__main__":
    tahelp.main()
