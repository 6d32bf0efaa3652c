# SPDX-License-Identifier: MIT
"""Hostile endings: SIGKILL (the dump is readable, the loss bounded by the
flush interval), a disk that fills up mid-run (the program is unaffected,
one line on stderr, the dump readable up to there and incomplete), and a
symlink planted at the output path (never followed or overwritten), and
threads that cannot get a ring in drop mode (their loss is shown apart)."""

import json
import os
import signal
import subprocess
import tempfile
import time

import tahelp


class HostileTest(tahelp.Case):

    def test_sigkill(self):
        dump = self.fresh("kill")
        env = tahelp.clean_env()
        env.update(LD_PRELOAD=tahelp.AGENT, TRACEAGENT_OUTPUT=dump)
        p = subprocess.Popen([self.prog("exits-O2"), "loop", "200000"], env=env,
                             stdout=subprocess.PIPE, text=True)
        self.assertEqual(tahelp.readline(p.stdout), "ready\n")
        time.sleep(0.3)  # six flush intervals
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=tahelp.TIMEOUT)
        p.stdout.close()
        r = self.report_raw(dump, "--json")
        # Incomplete: exit status 1, what could be read reported.
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("incomplete dump", r.stderr)
        rep = json.loads(r.stdout)
        self.assertEqual((rep["errors"], rep["lost"]), ([], 0))
        funcs = self.functions(rep)
        # Every call made before the last flush interval is in the dump.
        self.assertEqual(funcs["work"]["calls"], 200000)
        self.assertGreater(funcs["spin"]["calls"], 50)

    def test_disk_full(self):
        mnt = tempfile.mkdtemp(dir=tahelp.WORKDIR)
        # 1 MiB, and the agent's memory 1 MiB: an open chunk is written
        # once it holds 256 KiB (flusher.c), and a pass adds at most what
        # the agent's 1 MiB of blocks hold, so the first chunks fit
        # whatever the load, and the 20M events (some 4 MB) fill the disk.
        # A 64 KiB disk failed under load: a late flusher's first events
        # chunk was already larger, and nothing was recorded.
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt],
                          capture_output=True).returncode != 0:
            os.rmdir(mnt)
            self.skipTest("cannot mount a small tmpfs here (not root?)")
        try:
            dump = os.path.join(mnt, "full.trace")
            argv = [self.prog("exits-O0"), "calls", "10000000"]
            plain = subprocess.run(argv, env=tahelp.clean_env(), capture_output=True,
                                   text=True)
            env = tahelp.clean_env()
            env.update(LD_PRELOAD=tahelp.AGENT, TRACEAGENT_OUTPUT=dump, TRACEAGENT_MEMORY="1M")
            r = subprocess.run(argv, env=env, capture_output=True, text=True,
                               timeout=tahelp.TIMEOUT)
            self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout))
            lines = r.stderr.splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertIn("cannot write to the dump", lines[0])
            self.assertIn("No space left on device", lines[0])
            rep_p = self.report_raw(dump, "--json")
            # Whole chunks up to the failure: readable, marked incomplete
            # (exit status 1).
            self.assertEqual(rep_p.returncode, 1, rep_p.stderr)
            rep = json.loads(rep_p.stdout)
            self.assertFalse(rep["complete"])
            self.assertEqual(rep["errors"], [])
            self.assertGreater(rep["events"], 0)
        finally:
            subprocess.run(["umount", mnt])
            os.rmdir(mnt)

    def test_symlink_at_output(self):
        target = self.path("precious")
        with open(target, "w") as f:
            f.write("keep me")
        link = self.path("link.trace")
        os.symlink(target, link)
        argv = [self.prog("exits-O2"), "calls", "10"]
        env = tahelp.clean_env()
        env.update(LD_PRELOAD=tahelp.AGENT, TRACEAGENT_OUTPUT=link)
        r = subprocess.run(argv, env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn("not tracing", r.stderr)
        with open(target) as f:
            self.assertEqual(f.read(), "keep me")
        self.assertTrue(os.path.islink(link))

    def test_drop_threads_without_ring(self):
        # 320 threads alive at once, each holding a ring once it has one,
        # and 256 blocks in all (1 MiB of 4 KiB): some threads start
        # without a ring.  What they lose is their own (cause no-ring, in
        # their THREAD_END): every lost event is in a thread's count.
        n = 320
        argv = [self.prog("crowd-O2"), str(n)]
        plain = self.run_plain(argv)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        r = self.run_preload(argv, env={"TRACEAGENT_MODE": "drop", "TRACEAGENT_BUFFER": "4K",
                                        "TRACEAGENT_MEMORY": "1M"})
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, plain.stdout, ""))
        end_lost, threads_lost, threads_no_ring = None, 0, 0
        for c in tahelp.read_chunks(r.dump, payload=True):
            ctype = c["type"]
            if ctype not in (6, 8):  # THREAD_END, END
                continue
            vals, v, shift = [], 0, 0
            for b in c["payload"]:
                v |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    vals.append(v)
                    v, shift = 0, 0
            if ctype == 6:
                # tid, end, events, lost, wait, n causes, the causes.
                threads_lost += vals[3]
                threads_no_ring += vals[7]
            else:
                end_lost = vals[3]
        self.assertGreater(threads_no_ring, 0, "every thread got a ring: the test shows nothing")
        self.assertEqual(end_lost, threads_lost)
        p = self.report_raw(r.dump, "--json", "--threads")
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        # Every event the program made is recorded or counted as lost, by
        # its thread.
        self.assertEqual(rep["events"] + rep["lost"], 2 + n * 112)
        self.assertEqual(rep["lost"], end_lost)
        self.assertEqual(rep["lost_no_ring"], 0)
        self.assertEqual(rep["lost_by_cause"]["no-ring"], threads_no_ring)
        self.assertEqual(sum(t["lost"] for t in rep["per_thread"]), rep["lost"])
        self.assertEqual(sum(t["events"] + t["lost"] for t in rep["per_thread"]), 2 + n * 112)
        self.assertNotIn("could not get a ring", p.stderr)
        info = subprocess.run([tahelp.TRACEAGENT, "info", "--json", r.dump],
                              capture_output=True, text=True)
        self.assertEqual(info.returncode, 0, info.stderr)
        info = json.loads(info.stdout)
        self.assertEqual(info["lost_no_ring"], 0)
        self.assertEqual(info["processes"][0]["lost_no_ring"], 0)
        self.assertEqual(info["lost_by_cause"]["no-ring"], threads_no_ring)

if __name__ == "__main__":
    tahelp.main()
