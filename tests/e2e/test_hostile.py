# SPDX-License-Identifier: MIT
"""Hostile endings: SIGKILL (the dump is readable, the loss bounded by the
flush interval), a disk that fills up mid-run (the program is unaffected,
one line on stderr, the dump readable up to there and incomplete), and a
symlink planted at the output path (never followed or overwritten)."""

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
        self.assertEqual(p.stdout.readline(), "ready\n")
        time.sleep(0.3)  # six flush intervals
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        r = self.report_raw(dump, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("incomplete dump", r.stderr)
        rep = json.loads(r.stdout)
        self.assertEqual((rep["errors"], rep["lost"]), ([], 0))
        funcs = self.functions(rep)
        # Every call made before the last flush interval is in the dump.
        self.assertEqual(funcs["work"]["calls"], 200000)
        self.assertGreater(funcs["spin"]["calls"], 50)

    def test_disk_full(self):
        mnt = tempfile.mkdtemp(dir=tahelp.WORKDIR)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt],
                          capture_output=True).returncode != 0:
            os.rmdir(mnt)
            self.skipTest("cannot mount a small tmpfs here (not root?)")
        try:
            dump = os.path.join(mnt, "full.trace")
            argv = [self.prog("exits-O0"), "calls", "3000000"]
            plain = subprocess.run(argv, env=tahelp.clean_env(), capture_output=True,
                                   text=True)
            env = tahelp.clean_env()
            env.update(LD_PRELOAD=tahelp.AGENT, TRACEAGENT_OUTPUT=dump)
            r = subprocess.run(argv, env=env, capture_output=True, text=True,
                               timeout=tahelp.TIMEOUT)
            self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout))
            lines = r.stderr.splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertIn("cannot write to the dump", lines[0])
            self.assertIn("No space left on device", lines[0])
            rep_p = self.report_raw(dump, "--json")
            # Whole chunks up to the failure: readable, marked incomplete.
            self.assertEqual(rep_p.returncode, 0, rep_p.stderr)
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


if __name__ == "__main__":
    tahelp.main()
