# SPDX-License-Identifier: MIT
"""Deaths by a signal's default action (SIGTERM, SIGINT, SIGHUP, SIGPIPE,
SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2): the dump holds every call made before
the signal and an END naming it, and the process dies of that signal as it
would untraced (same status, same core-dump bit).  The program's own
handlers stay its own, and sigaction shows it what it set."""

import json
import os
import signal
import subprocess
import tempfile
import time

import tahelp
from tahelp import LEVELS

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGQUIT,
           signal.SIGALRM, signal.SIGUSR1, signal.SIGUSR2)
N = 5000


class SigDeathTest(tahelp.Case):

    def status(self, argv, env):
        """The raw wait status, cores allowed, in a scratch directory."""
        with tempfile.TemporaryDirectory(dir=self.dir) as d:
            p = subprocess.Popen(argv, env=env, cwd=d, preexec_fn=tahelp.allow_core,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _, st = os.waitpid(p.pid, 0)
            err = p.stderr.read().decode()
            p.stderr.close()
            return st, err

    def check_dump(self, dump, sig, calls, threads=1):
        """Complete, nothing lost, the calls exact, END naming sig."""
        p = self.report_raw(dump, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("died of signal %d (%s)" % (sig, signal.Signals(sig).name), p.stderr)
        rep = json.loads(p.stdout)
        self.assertTrue(rep["complete"], p.stderr)
        self.assertEqual(rep["lost"], 0, rep["lost_by_cause"])
        self.assertEqual(rep["threads"], threads)
        funcs = self.functions(rep)
        self.assert_calls(funcs, calls)
        self.assertEqual(funcs["main"]["open"], 1)
        (proc,) = self.info(dump)["processes"]
        self.assertEqual(proc["end"]["signal"], sig)
        return funcs

    def test_raise_each_signal(self):
        """raise(SIG) after N calls: the same death, the calls all there."""
        for level in LEVELS:
            prog = self.prog("sigdeath-" + level)
            for sig in SIGNALS:
                with self.subTest(level=level, sig=sig.name):
                    argv = [prog, "raise", str(int(sig)), str(N)]
                    plain, _ = self.status(argv, tahelp.clean_env())
                    self.assertTrue(os.WIFSIGNALED(plain))
                    self.assertEqual(os.WTERMSIG(plain), sig)
                    dump = self.fresh("raise-%s-%d" % (level, sig))
                    env = tahelp.clean_env()
                    env.update(LD_PRELOAD=tahelp.AGENT, TRACEAGENT_OUTPUT=dump)
                    traced, err = self.status(argv, env)
                    self.assertEqual(traced, plain, err)  # core bit included
                    self.assertEqual(err, "")
                    self.check_dump(dump, sig, {"main": 1, "work": N})

    def test_sent_to_threads(self):
        """Sent from outside while three threads and main wait after their
        calls: every thread's calls are in the dump."""
        prog = self.prog("sigdeath-O2")
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
            with self.subTest(sig=sig.name):
                dump = self.fresh("threads-%d" % sig)
                env = tahelp.clean_env()
                env.update(LD_PRELOAD=tahelp.AGENT, TRACEAGENT_OUTPUT=dump)
                p = subprocess.Popen([prog, "wait", str(int(sig)), str(N), "3"], env=env,
                                     cwd=self.dir, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, preexec_fn=tahelp.no_core)
                self.assertEqual(p.stdout.readline(), b"ready\n")
                p.send_signal(sig)
                _, err = p.communicate(timeout=tahelp.TIMEOUT)
                self.assertEqual(p.returncode, -sig, err)
                if tahelp.EMULATED:
                    # qemu-user's own line for a core-dumping death.
                    err = b"".join(l for l in err.splitlines(True)
                                   if not l.startswith(b"qemu: uncaught target signal"))
                self.assertEqual(err, b"")
                funcs = self.check_dump(dump, sig,
                                        {"main": 1, "thread_main": 3, "work": 4 * N}, threads=4)
                self.assertEqual(funcs["thread_main"]["open"], 3)

    def test_in_the_middle_of_calls(self):
        """SIGTERM while two threads make calls as fast as they can: it
        lands in their hooks and their drains.  The dump is whole, nothing
        lost, every thread's calls in it."""
        dump = self.fresh("firehose")
        env = tahelp.clean_env({"LD_PRELOAD": tahelp.AGENT, "TRACEAGENT_OUTPUT": dump})
        p = subprocess.Popen([self.prog("firehose"), "2", "60"], env=env, cwd=self.dir,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=tahelp.no_core)
        # Once a megabyte is written: the threads are well into their calls.
        end = time.time() + 60
        while time.time() < end and not (os.path.exists(dump) and
                                          os.path.getsize(dump) > 1000000):
            time.sleep(0.02)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=tahelp.TIMEOUT)
        self.assertEqual((p.returncode, err), (-signal.SIGTERM, b""))
        rep = json.loads(self.report_raw(dump, "--json").stdout)
        self.assertTrue(rep["complete"])
        self.assertEqual((rep["lost"], rep["errors"]), (0, []))
        self.assertGreaterEqual(rep["threads"], 2)
        (proc,) = self.info(dump)["processes"]
        self.assertEqual(proc["end"]["signal"], signal.SIGTERM)
        self.assertEqual(sum(t["events"] for t in proc["threads"]), rep["events"])
        self.assertGreater(rep["events"], 100000)

    def test_open_calls_apart(self):
        """SIGTERM while main, hold() and a usleep are running, after
        N_DOZE calls of doze() (a usleep of 1.5 ms each): the three open
        calls are counted apart, in no min, avg or percentile: every min is
        at least the 1.5 ms each whole call slept, and a row without a
        whole call has no min at all (null; "-" in the table)."""
        n_doze = 20
        for level in LEVELS:
            with self.subTest(level=level):
                dump = self.fresh("doze-" + level)
                env = tahelp.clean_env({"LD_PRELOAD": tahelp.AGENT, "TRACEAGENT_OUTPUT": dump})
                p = subprocess.Popen([self.prog("sigdeath-" + level), "doze",
                                      str(int(signal.SIGTERM)), str(n_doze)],
                                     env=env, cwd=self.dir, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, preexec_fn=tahelp.no_core)
                self.assertEqual(p.stdout.readline(), b"ready\n")
                # Asleep in hold()'s usleep (the only call that blocks
                # after the line), bounded by the test's timeout.
                end = time.time() + tahelp.TIMEOUT
                while tahelp.proc_state(p.pid) != "S" and time.time() < end:
                    time.sleep(0.01)
                p.send_signal(signal.SIGTERM)
                _, err = p.communicate(timeout=tahelp.TIMEOUT)
                self.assertEqual((p.returncode, err), (-signal.SIGTERM, b""))
                rep = self.report(dump)
                funcs = self.functions(rep)
                got = {n: (f["calls"], f["open"], f["partial"]) for n, f in funcs.items()}
                self.assertEqual(got, {"main": (1, 1, 0), "doze": (n_doze, 0, 0),
                                       "hold": (1, 1, 0), "usleep": (n_doze + 1, 1, 0)})
                for name in ("doze", "usleep"):
                    f = funcs[name]
                    for key in ("min_ns", "max_ns", "avg_ns", "p50_ns", "p90_ns", "p99_ns"):
                        self.assertGreaterEqual(f[key], 1500000, (name, key, f))
                    self.assertLessEqual(f["min_ns"], f["p50_ns"])
                    self.assertLessEqual(f["p99_ns"], f["max_ns"])
                for name in ("main", "hold"):
                    f = funcs[name]
                    for key in ("min_ns", "max_ns", "avg_ns", "p50_ns", "p90_ns", "p99_ns"):
                        self.assertIsNone(f[key], (name, key, f))
                    # The known part is in total.
                    self.assertGreater(f["total_ns"], 0, f)
                # The table: the open and partial columns, "-" where no
                # whole time is known, and what they mean under it.
                p = self.report_raw(dump)
                lines = p.stdout.splitlines()
                head = lines[0].split()
                self.assertEqual(head, ["calls", "total", "self", "min", "max", "avg", "p50",
                                        "p90", "p99", "open", "partial", "function", "module"])
                rows = {}
                for line in lines[1:]:
                    w = line.split()
                    if len(w) >= 15 and w[0].isdigit():
                        rows[w[-2]] = w
                self.assertEqual(rows["hold"][0], "1")
                self.assertEqual(rows["hold"][5:11], ["-"] * 6)
                self.assertEqual(rows["hold"][-4:-2], ["1", "0"])
                self.assertEqual(rows["doze"][-4:-2], ["0", "0"])
                self.assertIn("open: calls still running when the dump ends; partial: calls "
                              "already running when it", p.stdout)

    def test_pipe_into_head(self):
        """`record ... | head -c 100`: the program dies of SIGPIPE, its
        calls all recorded (each emit() wrote a line but the last)."""
        for mode in ("preload", "record"):
            with self.subTest(mode=mode):
                dump = self.fresh("pipe-" + mode)
                argv = [self.prog("sigdeath-O2"), "pipe", "13", str(N)]
                if mode == "record":
                    cmd = [tahelp.TRACEAGENT, "record", "-o", dump, "--"] + argv
                    env = tahelp.clean_env()
                else:
                    cmd = argv
                    env = tahelp.clean_env({"LD_PRELOAD": tahelp.AGENT,
                                            "TRACEAGENT_OUTPUT": dump})
                p = subprocess.Popen(cmd, env=env, cwd=self.dir, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, preexec_fn=tahelp.no_core)
                got = p.stdout.read(100)
                p.stdout.close()
                _, err = p.communicate(timeout=tahelp.TIMEOUT)
                self.assertEqual(len(got), 100)
                self.assertEqual(p.returncode, -signal.SIGPIPE, err)
                rep = self.report_raw(dump, "--json")
                funcs = self.functions(json.loads(rep.stdout))
                self.assertGreaterEqual(funcs["emit"]["calls"], 100 // len("line 99\n"))
                self.assertEqual(funcs["emit"]["open"], 1)  # the write that failed
                self.check_dump(dump, signal.SIGPIPE,
                                {"main": 1, "work": N, "emit": funcs["emit"]["calls"]})

    def test_record_forwards(self):
        """SIGTERM and SIGALRM sent to record (as `timeout` does) reach the
        program, which dies of it with its dump whole; record dies of it
        too."""
        for sig in (signal.SIGTERM, signal.SIGALRM):
            with self.subTest(sig=sig.name):
                dump = self.fresh("record-%d" % sig)
                p = subprocess.Popen([tahelp.TRACEAGENT, "record", "-o", dump, "--",
                                      self.prog("sigdeath-O2"), "wait", str(int(sig)), str(N)],
                                     env=tahelp.clean_env(), cwd=self.dir,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     preexec_fn=tahelp.no_core)
                self.assertEqual(p.stdout.readline(), b"ready\n")
                p.send_signal(sig)
                _, err = p.communicate(timeout=tahelp.TIMEOUT)
                self.assertEqual(p.returncode, -sig, err)
                self.check_dump(dump, sig, {"main": 1, "work": N})

    def test_own_handler_stays(self):
        """A program's handler is its own: sigaction shows the default
        before, its handler after, and the handler decides (exit 3)."""
        for sig in SIGNALS:
            with self.subTest(sig=sig.name):
                argv = [self.prog("sigdeath-O2"), "own", str(int(sig)), "10"]
                plain = self.run_plain(argv)
                self.assertEqual(plain.returncode, 3)
                self.assertEqual(plain.stdout, "before: default\nafter: own\nown handler\n")
                r = self.run_preload(argv)
                self.assertEqual((r.returncode, r.stdout, r.stderr), (3, plain.stdout, ""))
                rep = self.report(r.dump)
                self.assert_calls(self.functions(rep), {"main": 1, "work": 10})

    def test_ignored_and_reraised(self):
        """SIG_IGN stays ignored; a handler that sets SIG_DFL and raises
        again dies of it, with the END written."""
        argv = [self.prog("sigdeath-O2"), "ignore", "15", "10"]
        plain = self.run_plain(argv)
        r = self.run_preload(argv)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "after: ignored\n", ""))
        self.assertEqual(plain.stdout, r.stdout)
        self.assert_whole(self.report(r.dump))
        r = self.run_preload([self.prog("sigdeath-O2"), "reraise", "15", "10"])
        self.assertEqual((r.returncode, r.stderr), (-signal.SIGTERM, ""))
        # The signal raised in the handler is blocked until it returns:
        # the handler's call is whole, then the process dies of it.
        funcs = self.check_dump(r.dump, signal.SIGTERM,
                                {"main": 1, "work": 10, "reraise_handler": 1})
        self.assertEqual(funcs["reraise_handler"]["open"], 0)


if __name__ == "__main__":
    tahelp.main()
