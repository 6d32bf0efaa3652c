# SPDX-License-Identifier: MIT
"""A dump past 4 GiB, without the disk: tests/unit/bigdump streams a valid
4.5 GiB dump (EVENTS chunks spread through it, one across 2^31 and one
across 2^32, filler chunks of a type no reader knows between them) through
a pipe into `traceagent info --json /dev/stdin` and `report --json
/dev/stdin`, which must count every chunk, byte and event, place a damaged
chunk past 4 GiB at its 64-bit offset, and read it all in the memory a
small dump takes (the reader streams: one chunk at a time).  About 10
seconds a run on one core for each side; nothing is written to disk."""

import json
import os
import subprocess
import threading
import time

import tahelp
from tahelp import TRACEAGENT, clean_env

BIGDUMP = os.environ.get("TA_BIGDUMP", "")
BIG = (4 << 30) + (512 << 20)
SMALL = 96 << 20
# The analyzer's memory is the reader's (at most a chunk and its read
# buffer, 17 MiB, and a chunk's decompressed payload), the session's and,
# with workers (-j, a CPU each by default), the window's copies of chunks
# of up to 4 MiB (session_par.c: a larger one, such as bigdump's 16 MiB
# fillers, is read in place), whatever the file's size.  The small dump
# holds fillers too: both reach the same peak, and what timing still
# changes (which thread allocates a chunk's sums) is small allocations,
# far below RSS_GROWTH_KIB.
RSS_LIMIT_KIB = 64 << 10
RSS_GROWTH_KIB = 4 << 10
TIMEOUT = 600


class Piped:
    """bigdump SIZE | traceagent ARGS /dev/stdin: the analyzer's status,
    output and peak RSS (KiB), the generator's manifest, the seconds."""

    def __init__(self, size, args, damage=False):
        gen = subprocess.Popen([BIGDUMP, str(size)] + (["--damage"] if damage else []),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
        ana = subprocess.Popen([TRACEAGENT] + list(args) + ["/dev/stdin"], stdin=gen.stdout,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=clean_env())
        gen.stdout.close()
        out = {}

        def slurp(key, f):
            out[key] = f.read().decode()
            f.close()

        readers = [threading.Thread(target=slurp, args=(k, f))
                   for k, f in (("out", ana.stdout), ("err", ana.stderr),
                                ("manifest", gen.stderr))]
        for r in readers:
            r.start()
        guard = threading.Timer(TIMEOUT, lambda: (gen.kill(), ana.kill()))
        guard.start()
        start = time.monotonic()
        # wait4 rather than Popen.wait: the analyzer's own peak RSS, not
        # the generator's.
        _, status, usage = os.wait4(ana.pid, 0)
        self.seconds = time.monotonic() - start
        ana.returncode = os.waitstatus_to_exitcode(status)
        gen.wait(timeout=tahelp.TIMEOUT)
        guard.cancel()
        for r in readers:
            r.join()
        self.status = ana.returncode
        self.gen_status = gen.returncode
        self.stdout, self.stderr = out["out"], out["err"]
        self.rss_kib = usage.ru_maxrss
        self.manifest = json.loads(out["manifest"]) if gen.returncode == 0 else None

    def __str__(self):
        return "status %d, %.1f s, RSS %d KiB; stderr:\n%s" % (
            self.status, self.seconds, self.rss_kib, self.stderr)


class BigDumpTest(tahelp.Case):
    def setUp(self):
        super().setUp()
        if not BIGDUMP:
            self.fail("TA_BIGDUMP is not set: run the tests with meson test")

    def piped(self, size, args, damage=False):
        if size > SMALL:
            # The reader's offsets are the same C on every architecture;
            # 9 GiB through qemu-user (and a CRC without the CPU's
            # instruction) would take many minutes.
            self.skip_if_emulated("4.5 GiB streamed through qemu-user")
        run = Piped(size, args, damage)
        self.assertEqual(run.gen_status, 0, "bigdump failed")
        print("%s %d bytes: %.1f s, RSS %d KiB" % (" ".join(args), run.manifest["bytes"],
                                                    run.seconds, run.rss_kib))
        return run

    def test_info_past_4gib(self):
        run = self.piped(BIG, ["info", "--json"], damage=True)
        m = run.manifest
        self.assertEqual(run.status, 1, str(run))  # the damaged chunk
        info = json.loads(run.stdout)
        self.assertGreater(m["bytes"], 1 << 32)
        # EVENTS chunks whose headers start before 2^31 and 2^32 and whose
        # payloads go past them.
        for mark in (1 << 31, 1 << 32):
            self.assertIn(mark - 100, m["events_offsets"])
        self.assertEqual(info["file_bytes"], m["bytes"])
        for key in ("chunks", "events_chunks", "unknown_chunks", "stored_bytes", "raw_bytes",
                    "events"):
            self.assertEqual(info[key], m[key], key)
        self.assertGreater(info["stored_bytes"], 1 << 32)
        self.assertEqual((info["lost"], info["threads"]), (0, 1))
        d = m["damaged"]
        self.assertGreater(d["offset"], 1 << 32)
        msg = "chunk %d at offset %d: checksum mismatch; skipped %d bytes" % (
            d["chunk"], d["offset"], d["bytes"])
        self.assertEqual(info["errors"], [msg])
        self.assertIn("traceagent: /dev/stdin: " + msg, run.stderr)
        p = info["processes"][0]
        self.assertEqual(p["chunks_missing"], 1)
        self.assertEqual(p["end"]["events"], m["events"])
        self.assertEqual(p["threads"][0]["events"], m["events"])
        self.assertLess(run.rss_kib, RSS_LIMIT_KIB, str(run))

        # The text form: the size in GiB, from the bytes read.
        text = Piped(SMALL, ["info"])
        self.assertEqual(text.status, 0, str(text))
        self.assertIn("size:          %.1f MiB\n" % (text.manifest["bytes"] / (1 << 20)),
                      text.stdout)

    def test_report_past_4gib_in_flat_memory(self):
        small = self.piped(SMALL, ["report", "--json"])
        big = self.piped(BIG, ["report", "--json"])
        for run in (small, big):
            self.assertEqual(run.status, 0, str(run))
            rep = json.loads(run.stdout)
            self.assertTrue(rep["complete"])
            self.assertEqual(rep["errors"], [])
            self.assertEqual(rep["events"], run.manifest["events"])
            self.assertEqual(sorted((f["name"], f["calls"]) for f in rep["functions"]),
                             [("bigdump+0x1100", run.manifest["calls"]),
                              ("bigdump+0x1200", run.manifest["calls"])])
        self.assertGreater(big.manifest["bytes"], 1 << 32)
        # Flat: 4.5 GiB take no more memory than 96 MiB of the same chunks.
        self.assertLess(big.rss_kib, small.rss_kib + RSS_GROWTH_KIB,
                        "small: %s\nbig: %s" % (small, big))
        self.assertLess(big.rss_kib, RSS_LIMIT_KIB, str(big))

    def test_workers_copy_no_outsized_chunk(self):
        """With workers, a chunk larger than a slot keeps (bigdump's 16 MiB
        fillers) is read in place, not copied into the window: the memory
        of -j4 is that of -j1 but for the slots' small chunks, in every
        run (a copy freed after each merge took 16 MiB more now and
        then, by timing)."""
        # Under qemu-user the peak RSS is the emulator's, which grows with
        # the threads it translates for.
        self.skip_if_emulated("the analyzer's RSS under qemu-user is the emulator's")
        runs = {}
        for jobs in ("-j1", "-j4"):
            runs[jobs] = self.piped(SMALL, ["report", "--json", jobs])
            self.assertEqual(runs[jobs].status, 0, str(runs[jobs]))
            self.assertEqual(json.loads(runs[jobs].stdout)["events"],
                             runs[jobs].manifest["events"])
        self.assertLess(runs["-j4"].rss_kib, runs["-j1"].rss_kib + RSS_GROWTH_KIB,
                        "-j1: %s\n-j4: %s" % (runs["-j1"], runs["-j4"]))

    def test_two_pass_views_refuse_a_pipe(self):
        for args in (["replay"], ["export", "--format=chrome", "-o", self.path("x.json")]):
            run = Piped(SMALL, args)
            self.assertEqual(run.status, 2, str(run))
            self.assertEqual(run.stderr, "traceagent: /dev/stdin: not a file: this view reads "
                             "the dump twice (report and info read it from a pipe)\n")


if __name__ == "__main__":
    tahelp.main()
