# SPDX-License-Identifier: MIT
"""`traceagent attach` of tests/programs/attachapi.c (issue 17): the manual
API's zones, counters, frame marks and messages, and library calls, recorded
in a window by an agent brought in with dlopen (the GOT entries of the API's
weak references and of the interposed functions pointed at it), and nothing
after the detach."""

import json
import os
import shutil
import signal
import subprocess
import time

import tadump
import tahelp

DONE = "done: ticks yes\n"
# The library calls attachapi's "io" thread makes once a round, and the
# ticker's sleep once a tick.
IO_CALLS = ("nanosleep", "write", "read")
ALL_CALLS = IO_CALLS + ("malloc", "free", "pthread_mutex_lock", "pthread_mutex_unlock")
# The most a count of one macro may differ from another's in a window: the
# tick in flight at each edge (see test_api_windows).
SKEW = 2


class Target(tahelp.LineChild):
    def __init__(self, case):
        super().__init__(case, [case.prog("attachapi")])

    def count(self, loop=False):
        """(ticks, messages, io rounds) as the program counted them, and
        the looper's rounds if loop."""
        self.proc.stdin.write("count\n")
        self.proc.stdin.flush()
        w = tahelp.readline(self.proc.stdout).split()
        self.case.assertEqual(w[0::2], ["ticks", "messages", "io", "loop"], w)
        return (int(w[1]), int(w[3]), int(w[5])) + ((int(w[7]),) if loop else ())



class Window:
    """`traceagent attach PID -o DUMP ARGS` with no --duration: the window
    is in force from its "attached to process" line (the loader prints it
    once the agent's ta_attach_start, which points the entries at the
    agent, has returned) until close() interrupts it as Ctrl-C does.  A
    --duration would close it on its own clock, while the test may still
    be looking at it on a loaded machine."""

    def __init__(self, case, pid, dump, args=()):
        self.case = case
        self.proc = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(pid), "-o", dump] +
                                     list(args), env=tahelp.clean_env(),
                                     stderr=subprocess.PIPE, text=True, cwd=case.dir)
        case.addCleanup(self.kill)
        case.assertIn("attached to process", tahelp.readline(self.proc.stderr))

    def close(self):
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=tahelp.TIMEOUT)
        self.case.assertEqual(self.proc.returncode, 0, err)
        self.case.assertIn("detached from process", err)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class AttachApiTest(tahelp.Case):
    def setUp(self):
        super().setUp()
        self.skip_unless_attach()

    def until(self, t, done):
        """Waits (bounded) until done((ticks, messages, io rounds, loop
        rounds)) holds for the program's counts."""
        deadline = time.monotonic() + tahelp.TIMEOUT
        while True:
            c = t.count(loop=True)
            if done(c):
                return c
            self.assertLess(time.monotonic(), deadline, c)
            time.sleep(0.01)

    def got(self, pid, names):
        """name -> the value of the program's GOT entries for the names
        (JUMP_SLOT and GLOB_DAT), read from its memory."""
        prog = self.prog("attachapi")
        rel = subprocess.run(["readelf", "-rW", prog], capture_output=True, text=True,
                             check=True).stdout
        offs = {}
        for line in rel.splitlines():
            w = line.split()
            if len(w) >= 5 and w[2].endswith(("JUMP_SLOT", "GLOB_DAT")):
                name = w[4].split("@")[0]
                if name in names:
                    offs[name] = int(w[0], 16)
        base = None
        with open("/proc/%d/maps" % pid) as f:
            for line in f:
                w = line.split()
                if len(w) >= 6 and os.path.realpath(w[5]) == os.path.realpath(prog) and \
                        int(w[2], 16) == 0:
                    base = int(w[0].split("-")[0], 16)
                    break
        self.assertIsNotNone(base)
        out = {}
        with open("/proc/%d/mem" % pid, "rb") as mem:
            for name, off in offs.items():
                mem.seek(base + off)
                out[name] = int.from_bytes(mem.read(8), "little")
        return out

    def channel(self, dump, name="user"):
        ch = {c["name"]: c for c in self.info(dump)["channels"]}
        return ch[name]

    def test_api_windows(self):
        """Zones, counters, frame marks and messages in a window, counted as
        the program counts its ticks (within the one tick open at each edge;
        a message every 10th tick); nothing after the detach; a second
        window records them again, named (the sites are described in each
        dump) and switched on (the channels' words come back)."""
        t = Target(self)
        pid = t.proc.pid
        for window in (1, 2):
            with self.subTest(window=window):
                dump = self.fresh("api")
                t0, m0, _, l0 = t.count(loop=True)
                # Open until more than 10 ticks (their zones closed) and
                # loop rounds were made in it (the first counted after the
                # attach may have begun before it, the last counted may
                # still be open).
                w = Window(self, pid, dump)
                ta, _, _, la = t.count(loop=True)
                self.until(t, lambda c: c[0] > ta + 12 and c[3] > la + 11)
                w.close()
                t1, m1, _, l1 = t.count(loop=True)
                # The looper's loop began before the attach: its macro
                # reads the agent's address at each round (the header's
                # ta_load_*), not once before the loop.
                # (Its stderr may say calls were open at the start.)
                counters = {c["name"]: c for c in json.loads(tadump.view(
                    self, "counters", "--json", dump).stdout)["counters"]}
                self.assertEqual(set(counters), {"ticks", "loop"})
                self.assertGreater(counters["loop"]["samples"], 10)
                self.assertLessEqual(counters["loop"]["samples"], l1 - l0)
                user = self.channel(dump)
                zones = user["zones"]
                self.assertGreater(zones, 10, user)
                self.assertLessEqual(zones, t1 - t0)
                # The entries are pointed one after another, with the
                # channel held off meanwhile: a tick in flight at each edge
                # may have its zone and not its counter, or the reverse.
                self.assertLessEqual(abs(counters["ticks"]["samples"] - zones), SKEW, user)
                self.assertLessEqual(abs(user["frame_marks"] - zones), SKEW, user)
                self.assertLessEqual(user["messages"], m1 - m0 + 1, user)
                self.assertLessEqual(abs(user["messages"] - zones / 10), 2, user)
                rep = self.report(dump)
                self.assertTrue(rep["complete"])
                # The END counts this window's events, as the dump holds them.
                proc = self.info(dump)["processes"][0]
                self.assertEqual(proc["end"]["events"], proc["events"])
                zone = self.functions(rep, "[zone]")
                self.assertEqual(list(zone), ["tick"])
                # But the one open when the window began (partial: its end
                # and not its start in the dump).
                self.assertLessEqual(zone["tick"]["partial"], 1)
                self.assertEqual(zone["tick"]["calls"] - zone["tick"]["partial"], zones)
                # The instrumented function that holds the zone: one call a
                # tick too (its hooks are pointed at the agent before the
                # API's entries and put back before its gates close: no
                # closer relation to the zones).
                fn = self.functions(rep, "attachapi")
                self.assertGreater(fn["tick"]["calls"], 10)
                # The one running when the window began (partial) was
                # counted before it.
                self.assertLessEqual(fn["tick"]["calls"] - fn["tick"]["partial"], t1 - t0)
                # After the detach, nothing is recorded.
                size = os.path.getsize(dump)
                time.sleep(0.3)
                t2, _, _ = t.count()
                self.assertGreater(t2, t1)
                self.assertEqual(os.path.getsize(dump), size)
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)

    def test_pairs_window(self):
        """attachpair's threads loop on step() then TA_INSTANT("pair"),
        with no pause, so calls go through the entries while the attach
        points them.  The API's entries are pointed first and held (a call
        through one waits), then the hooks', then the API let go: every
        step() recorded has its instant recorded after it, but for the one
        step in flight on each thread at the detach (it read the hook's
        entry just before the hooks were put back, and its instant may come
        after the API's gates closed); an instant may come before the
        first step.  Nothing is lost."""
        t = tahelp.LineChild(self, [self.prog("attachpair")])
        for window in (1, 2):
            with self.subTest(window=window):
                dump = self.fresh("pair")
                w = Window(self, t.proc.pid, dump)
                r0 = int(t.say("count").split()[1])
                deadline = time.monotonic() + tahelp.TIMEOUT
                while int(t.say("count").split()[1]) < r0 + 100000:
                    self.assertLess(time.monotonic(), deadline)
                    time.sleep(0.01)
                w.close()
                info = self.info(dump)
                self.assertEqual(info["lost"], 0, info)
                instants = self.channel(dump)["instants"]
                step = self.functions(self.report(dump), "attachpair")["step"]
                # Not those running when the window began (partial).
                steps = step["calls"] - step["partial"]
                self.assertGreater(steps, 100000)
                self.assertGreaterEqual(instants, steps - 2)  # two threads
        status, out, err = t.quit()
        self.assertEqual((status, out), (0, "done\n"), err)

    def test_channel_switch(self):
        """ta_channel_set in a window: without the agent it says -1; in a
        window it switches the user channel (recorded: 2 switches), and no
        tick is recorded while the channel is off."""
        t = Target(self)
        pid = t.proc.pid
        self.assertEqual(t.say("user off"), "channel -1")
        dump = self.fresh("switch")
        t0, _, _ = t.count()
        w = Window(self, pid, dump)
        # Ticks made in the window with the channel on, then off, then on.
        ta, _, _ = t.count()
        self.until(t, lambda c: c[0] > ta + 1)
        self.assertEqual(t.say("user off"), "channel 0")
        off0, _, _ = t.count()
        self.until(t, lambda c: c[0] > off0 + 10)
        off1, _, _ = t.count()
        self.assertEqual(t.say("user on"), "channel 0")
        w.close()
        user = self.channel(dump)
        self.assertEqual(user["switches"], 2, user)
        # The ticks made while it was off (the program's count between
        # the two) are not in the dump: the window's zones are fewer than
        # its ticks by at least those.
        t1, _, _ = t.count()
        self.assertGreater(off1 - off0, 10)
        self.assertGreater(user["zones"], 0)
        self.assertLessEqual(user["zones"], (t1 - t0) - (off1 - off0))
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)

    def test_dlopen_in_window(self):
        """A library loaded during a window (attachapilib, 300 ms before it
        is used: the agent looks at the modules every 50 ms): its zones and
        its library calls are recorded, all of them."""
        t = Target(self)
        pid = t.proc.pid
        lib = os.path.join(os.path.dirname(self.prog("attachapi")), "libattachapilib.so")
        dump = self.fresh("dlopen")
        w = Window(self, pid, dump)
        self.assertEqual(t.say("load %s 40" % lib), "loaded")
        w.close()
        rep = self.report(dump)
        zones = self.functions(rep, "[zone]")
        self.assertEqual(zones["lib zone"]["calls"], 40)
        # Its function, its zones and their nanosleep calls, one path.
        graph = subprocess.run([tahelp.TRACEAGENT, "graph", "--json", dump],
                               env=tahelp.clean_env(), capture_output=True, text=True,
                               timeout=tahelp.TIMEOUT)
        self.assertEqual(graph.returncode, 0, graph.stderr)
        work = [n for n in json.loads(graph.stdout)["tree"]
                if n["name"] == "attachapilib_work"]
        self.assertEqual(len(work), 1, graph.stdout[:2000])
        path = []
        node = work[0]
        while True:
            path.append((node["name"], node["module"].split("/")[-1], node["calls"]))
            if not node["children"]:
                break
            node = node["children"][0]
        self.assertEqual(path, [("attachapilib_work", "libattachapilib.so", 1),
                                ("lib zone", "[zone]", 40), ("nanosleep", "[libcall]", 40)])
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)

    def test_libcalls_window(self):
        """Library calls in a window, as zones: the default classes (io,
        sleep) and all of them; one call of each per round of the io thread
        (within the round open at each edge), clock_nanosleep once a tick;
        the GOT entries hold what they held before the attach once it is
        over, and nothing more is recorded."""
        t = Target(self)
        pid = t.proc.pid
        names = ALL_CALLS + ("clock_nanosleep",)
        # Every entry bound first (lazy binding: at its first call).
        deadline = time.monotonic() + tahelp.TIMEOUT
        while min(t.count()[0::2]) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        before = self.got(pid, names)
        self.assertEqual(set(before), set(names))
        for opts, expect in (((), IO_CALLS), (("--libcalls", "all"), ALL_CALLS)):
            with self.subTest(opts=opts):
                dump = self.fresh("libcalls")
                t0, _, r0, l0 = t.count(loop=True)
                # A window held open while its entries are looked at.
                w = Window(self, pid, dump, opts)
                during = self.got(pid, names)
                # And until the program has made more than 10 io rounds
                # and ticks in it (the first one counted after the attach
                # may have begun before it).
                ta, _, ra = t.count()
                self.until(t, lambda c: c[0] > ta + 11 and c[2] > ra + 11)
                w.close()
                t1, _, r1, l1 = t.count(loop=True)
                for name in names:
                    asked = name in expect or name == "clock_nanosleep"
                    self.assertEqual(during[name] != before[name], asked, name)
                self.assertEqual(self.got(pid, names), before)
                lc = self.functions(self.report(dump), "[libcall]")
                self.assertEqual(set(lc), set(expect) | {"clock_nanosleep"})
                n = lc["nanosleep"]["calls"]
                self.assertGreater(n, 10)
                for name in expect:
                    self.assertLessEqual(lc[name]["calls"], r1 - r0 + 1, name)
                    self.assertLessEqual(abs(lc[name]["calls"] - n), 1, name)
                # Once a tick and once a looper's round.
                self.assertGreater(lc["clock_nanosleep"]["calls"], 10)
                self.assertLessEqual(lc["clock_nanosleep"]["calls"], t1 - t0 + l1 - l0 + 2)
                size = os.path.getsize(dump)
                time.sleep(0.3)
                t.count()
                self.assertEqual(os.path.getsize(dump), size)
        status, out, err = t.quit()
        self.assertEqual((status, out.splitlines()[-1] + "\n"), (0, DONE), err)


class AttachNamespaceTest(tahelp.Case):
    """A process in a mount and pid namespace of its own (unshare, a
    directory of the test's a tmpfs of its own there, its control socket
    in it), attached to from ours."""

    def setUp(self):
        super().setUp()
        self.skip_unless_attach()
        if os.geteuid() != 0 or not shutil.which("unshare"):
            self.skipTest("needs root and unshare(1) to make the namespaces")
        probe = subprocess.run(["unshare", "--mount", "--pid", "--fork", "true"],
                               capture_output=True)
        if probe.returncode != 0:
            self.skipTest("unshare refused here: %s" % probe.stderr.decode().strip())

    def test_other_namespaces(self):
        prog = self.prog("attachme-O2")
        # A directory of the test's own gets a tmpfs in the namespace (not
        # /tmp, which may hold the build: CI's clone does), and the
        # program's control socket goes there (XDG_RUNTIME_DIR): seen from
        # here only through /proc/PID/root.
        private = self.path("private")
        os.makedirs(private, exist_ok=True)
        proc = tahelp.LineChild(self, ["unshare", "--mount", "--pid", "--fork", "sh", "-c",
                                       "mount -t tmpfs none %s && exec %s 2" % (private, prog)],
                                env={"XDG_RUNTIME_DIR": private}).proc
        # The program: unshare's child (pid 1 in its namespace).
        with open("/proc/%d/task/%d/children" % (proc.pid, proc.pid)) as f:
            pid = int(f.read().split()[0])
        with open("/proc/%d/status" % pid) as f:
            nspid = [line.split()[1:] for line in f if line.startswith("NSpid:")][0]
        self.assertEqual(nspid, [str(pid), "1"])

        def maps():
            with open("/proc/%d/maps" % pid) as f:
                return f.read()

        def attach(*args):
            return subprocess.run([tahelp.TRACEAGENT, "attach", str(pid)] + list(args),
                                  env=tahelp.clean_env(), capture_output=True, text=True,
                                  timeout=tahelp.TIMEOUT, cwd=self.dir)
        # Its private directory is not ours: refused before anything is
        # done to it.
        p = attach("-o", os.path.join(private, "attachns.trace"), "--duration", "0.2")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr, "traceagent: attach: process %d is in another mount "
                         "namespace, where %s is not this directory: its dump would not be "
                         "written here; give -o a file in a directory it shares with you, or "
                         "tcp://HOST:PORT (traceagent serve)\n" % (pid, private))
        self.assertNotIn("libtraceagent", maps())
        # A directory it shares with us (the test's): two windows, each
        # ended through its control socket, named after its own pid (1)
        # in its private directory.
        for window in (1, 2):
            dump = self.fresh("ns")
            p = attach("-o", dump, "--duration", "0.3")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("traceagent: detached from process %d" % pid, p.stderr)
            rep = self.report(dump)
            self.assertTrue(rep["complete"])
            self.assertGreater(self.functions(rep)["mid"]["calls"], 0)
        out, err = proc.communicate("quit\n", timeout=tahelp.TIMEOUT)
        self.assertEqual((proc.returncode, out.splitlines()[-1]),
                         (0, "done: leaf = 2 * mid: yes, alarms: yes"), err)


if __name__ == "__main__":
    tahelp.main()
