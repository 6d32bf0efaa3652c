# SPDX-License-Identifier: MIT
"""Dumps cut short say so: a full disk (the END says where, record says it,
info names it), a program killed by SIGKILL (record says it and records it
in the dump), a stream cut (serve records it in the dump it saved); every
analyzer command then exits 1 and still shows what it could read.  A
program killed before the flusher's first calibration has its times in
nanoseconds all the same."""

import errno
import json
import os
import re
import signal
import struct
import subprocess
import tempfile
import time

import tahelp
from test_serve import Serve, parse

CHUNK_CLOCK = 2
CHUNK_END = 8
CHUNK_CUT = 18


def whole_chunks(data):
    """(type, bytes) of each whole chunk of a dump that may end in the
    middle of one (a process killed while it wrote)."""
    off, out = tahelp.FILE_HEADER, []
    while off + tahelp.CHUNK_HEADER <= len(data):
        ctype, stored = struct.unpack_from("<HxxI", data, off + 4)
        if off + tahelp.CHUNK_HEADER + stored > len(data):
            break
        out.append((ctype, data[off:off + tahelp.CHUNK_HEADER + stored]))
        off += tahelp.CHUNK_HEADER + stored
    return out


def has_events(path):
    """Whether the whole chunks of a growing dump hold an EVENTS chunk."""
    with open(path, "rb") as fh:
        return any(t == tahelp.CHUNK_EVENTS for t, _ in whole_chunks(fh.read()))


class CutShortTest(tahelp.Case):

    def views_exit_1(self, dump, expect_in_report):
        """Each view exits 1 on the incomplete dump and shows what it read."""
        out = self.path("out-%d" % len(os.listdir(self.dir)))
        for argv in (["report"], ["info"], ["graph"], ["replay"], ["frames"],
                     ["export", "--format=chrome", "-o", out + ".json"],
                     ["flame", "-o", out + ".svg"],
                     ["diff", dump]):
            with self.subTest(view=argv[0]):
                p = subprocess.run([tahelp.TRACEAGENT] + argv + [dump], env=tahelp.clean_env(),
                                   capture_output=True, text=True, timeout=tahelp.TIMEOUT)
                self.assertEqual(p.returncode, 1, (argv, p.stderr))
                self.assertRegex(p.stderr + p.stdout, r"incomplete|complete: +no: ")
                if argv[0] == "report":
                    self.assertIn(expect_in_report, p.stdout)

    def test_disk_full(self):
        mnt = tempfile.mkdtemp(dir=self.dir)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt],
                          capture_output=True).returncode != 0:
            self.skipTest("cannot mount a small tmpfs here (not root?)")
        try:
            dump = os.path.join(mnt, "full.trace")
            argv = [self.prog("exits-O0"), "calls", "10000000"]
            # Room for the process's description and 64 KiB, no more: how
            # well the events compress (the counter's rate and the timing
            # decide it: under qemu a 2 MiB tmpfs once held them all) never
            # decides whether the disk fills.  20 million events are at
            # least a byte each encoded, and LZ4 packs 255 to 1 at most:
            # over 76 KiB.
            small = self.run_record([argv[0], "calls", "1"])
            room = os.path.getsize(small.dump) + (64 << 10)
            st = os.statvfs(mnt)
            with open(os.path.join(mnt, "filler"), "wb") as f:
                f.write(b"\0" * (st.f_bavail * st.f_frsize - room))
            plain = self.run_plain(argv)
            r = self.run_record(argv, dump=dump)
            self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout))
            lines = r.stderr_lines()
            self.assertEqual(len(lines), 2, r.stderr)
            self.assertIn("No space left on device", lines[0])
            m = re.match(r"traceagent: incomplete dump written to (.*): the disk was full at "
                         r"byte (\d+); the rest of the run is not in it$", lines[1])
            self.assertTrue(m, lines[1])
            self.assertEqual(m.group(1), dump)
            at = int(m.group(2))
            # The END was written where the failed chunk began: that byte.
            chunks = tahelp.chunks(dump)
            self.assertEqual(chunks[-1][:2], (at, CHUNK_END))
            p = subprocess.run([tahelp.TRACEAGENT, "info", "--json", dump],
                               env=tahelp.clean_env(), capture_output=True, text=True)
            self.assertEqual(p.returncode, 1, p.stderr)
            (proc,) = json.loads(p.stdout)["processes"]
            self.assertEqual((proc["end"]["write_failed_at"], proc["end"]["write_errno"]),
                             (at, errno.ENOSPC))
            p = subprocess.run([tahelp.TRACEAGENT, "info", dump], env=tahelp.clean_env(),
                               capture_output=True, text=True)
            self.assertIn("the disk was full at byte %d" % at, p.stdout)
            # A chunk of events fits unless it was stored uncompressed (the
            # flusher short of CPU): then the report has none to show.
            self.views_exit_1(dump, "work" if has_events(dump) else "")
        finally:
            subprocess.run(["umount", mnt])

    def test_sigkill(self):
        dump = self.fresh("kill")
        # Small blocks and memory: the thread writes its events out itself
        # as it goes (there is something to show).
        r = self.run_record([self.prog("sigdeath-O2"), "nap", "9", "100000"], dump=dump,
                            options=["--buffer", "4K", "--memory", "1M"])
        self.assertEqual(r.returncode, -signal.SIGKILL)
        self.assertEqual(r.stderr_lines(), [
            "traceagent: incomplete dump written to %s: the program was killed by signal 9 "
            "(SIGKILL) before the agent could end it" % dump])
        self.assertEqual(tahelp.chunks(dump)[-1][1], CHUNK_CUT)
        p = subprocess.run([tahelp.TRACEAGENT, "info", "--json", dump], env=tahelp.clean_env(),
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 1, p.stderr)
        info = json.loads(p.stdout)
        self.assertFalse(info["complete"])
        self.assertIn("killed by signal 9 (SIGKILL)", info["incomplete"])
        (proc,) = info["processes"]
        self.assertEqual(proc["cut"], {"cause": "killed", "value": 9, "why": ""})
        self.assertEqual(proc["chunks_missing"], 0)
        self.views_exit_1(dump, "work")

    def test_stream_cut(self):
        serve = Serve(self)
        env = tahelp.clean_env({"LD_PRELOAD": tahelp.AGENT, "TRACEAGENT_OUTPUT": serve.addr})
        p = subprocess.Popen([self.prog("sigdeath-O2"), "wait", "15", "100000"], env=env,
                             cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=tahelp.no_core)
        self.assertEqual(p.stdout.readline(), b"ready\n")
        # Once a chunk of events is there (the flusher's pass), the
        # stream is cut: the program is killed.
        end = time.time() + 60
        while time.time() < end:
            names = os.listdir(serve.dir)
            if names and has_events(os.path.join(serve.dir, names[0])):
                break
            time.sleep(0.02)
        p.kill()
        p.communicate()
        l = parse(serve.wait_lines(1)[0])
        self.assertEqual(serve.stop(), 0)
        self.assertEqual(l["status"], "incomplete (closed without END)")
        self.assertEqual(os.path.getsize(l["file"]), l["bytes"])
        self.assertEqual(tahelp.chunks(l["file"])[-1][1], CHUNK_CUT)
        q = subprocess.run([tahelp.TRACEAGENT, "info", "--json", l["file"]],
                           env=tahelp.clean_env(), capture_output=True, text=True)
        self.assertEqual(q.returncode, 1, q.stderr)
        info = json.loads(q.stdout)
        self.assertIn("the stream was cut", info["incomplete"])
        (proc,) = info["processes"]
        self.assertEqual(proc["cut"]["cause"], "stream")
        self.assertEqual(proc["cut"]["why"], "closed without END")
        self.assertEqual(proc["chunks_missing"], 0)
        self.views_exit_1(l["file"], "main")

    def test_killed_before_calibration(self):
        """Killed (SIGKILL) before the flusher's first calibration pair (10
        ms in): nap()'s usleep(100) is in nanoseconds, at least 100 us and
        no longer than the program measured around the call.  The kill
        may come later (a loaded machine): the dump is then read again
        with its start's CLOCK chunk alone, the others left out, as it
        would be before the flusher's first pair."""
        for level in tahelp.LEVELS:
            with self.subTest(level=level):
                # Small blocks and memory: the thread writes its own
                # events out as it goes, the flusher not needed.
                r = self.run_preload([self.prog("sigdeath-" + level), "nap", "9", "100000"],
                                     env={"TRACEAGENT_BUFFER": "4K",
                                          "TRACEAGENT_MEMORY": "1M"})
                self.assertEqual(r.returncode, -signal.SIGKILL, r.stderr)
                outer = int(r.stdout)
                with open(r.dump, "rb") as fh:
                    data = fh.read()
                early, clocks = [data[:tahelp.FILE_HEADER]], 0
                for ctype, chunk in whole_chunks(data):
                    clocks += ctype == CHUNK_CLOCK
                    if ctype != CHUNK_CLOCK or clocks == 1:
                        early.append(chunk)
                cut = self.path("early-%s.trace" % level)
                with open(cut, "wb") as fh:
                    fh.write(b"".join(early))
                for dump in (r.dump, cut):
                    p = self.report_raw(dump, "--json")
                    nap = self.functions(json.loads(p.stdout))["nap"]
                    self.assertEqual(nap["calls"], 1)
                    self.assertGreaterEqual(nap["total_ns"], 100000, dump)
                    self.assertLessEqual(nap["total_ns"], outer, dump)
                    self.assertNotIn("no clock calibration", p.stderr)
                    self.assertEqual(p.returncode, 1, p.stderr)


if __name__ == "__main__":
    tahelp.main()
