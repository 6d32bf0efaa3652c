# SPDX-License-Identifier: MIT
"""info on real runs: what the run was (command line, pid, parent, start
time, settings from the environment), its clock, threads and modules
(with the build-ids the files carry), and counts that agree with the
report and the file."""

import datetime
import json
import os
import re
import struct
import subprocess
import time

import tahelp
from tahelp import TRACEAGENT, TIMEOUT, clean_env, fib_calls


def build_id(path):
    """The GNU build-id of an ELF file, as hex ('' without one)."""
    with open(path, "rb") as fh:
        data = fh.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    for i in range(shnum):
        sh = struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
        if sh[1] != 7:  # SHT_NOTE
            continue
        off, end = sh[4], sh[4] + sh[5]
        while off + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, off)
            name = data[off + 12:off + 12 + namesz]
            desc = off + 12 + (namesz + 3) // 4 * 4
            if ntype == 3 and name == b"GNU\0":
                return data[desc:desc + descsz].hex()
            off = desc + (descsz + 3) // 4 * 4
    return ""


def format_version():
    """The version format/format.h defines, which the agent writes."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "format",
                        "format.h")
    with open(path) as fh:
        text = fh.read()
    return {k: int(re.search(r"#define TA_FORMAT_%s\s+(\d+)" % k.upper(), text).group(1))
            for k in ("major", "minor")}


class InfoTest(tahelp.Case):

    def info(self, dump):
        p = subprocess.run([TRACEAGENT, "info", "--json", dump], env=clean_env(),
                           capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        return json.loads(p.stdout)

    def test_flusher_out_of_memory(self):
        """The flusher without memory to encode (its encoder's buffer may
        not grow: TRACEAGENT_TEST_ENCODER_MAX=1, the agent's fault
        injection): every event counted lost, cause no-memory, said once,
        and the dump incomplete, which info and report show."""
        r = self.run_preload([self.prog("fib-O0"), "15"],
                             env={"TRACEAGENT_TEST_ENCODER_MAX": "1"})
        self.assertEqual((r.returncode, r.stdout), (0, "fib(15) = 610\n"))
        self.assertRegex(r.stderr, r"^traceagent: out of memory in the flusher of process \d+: "
                         r"what it cannot write is counted lost \(no-memory\), and the dump "
                         r"is incomplete\n$")
        produced = 2 * (fib_calls(15) + 1)  # fib's calls and main's
        p = subprocess.run([TRACEAGENT, "info", "--json", r.dump], env=clean_env(),
                           capture_output=True, text=True, timeout=TIMEOUT)
        info = json.loads(p.stdout)
        self.assertFalse(info["complete"])
        self.assertEqual(info["incomplete"], "the agent could not write all of its data")
        self.assertEqual((info["events"], info["lost"]), (0, produced))
        self.assertEqual(info["lost_by_cause"]["no-memory"], produced)
        self.assertEqual(sum(info["lost_by_cause"].values()), produced)
        proc = info["processes"][0]
        self.assertTrue(proc["end"]["data_lost"])
        self.assertEqual([(t["events"], t["lost"]) for t in proc["threads"]], [(0, produced)])
        text = subprocess.run([TRACEAGENT, "info", r.dump], env=clean_env(),
                              capture_output=True, text=True, timeout=TIMEOUT).stdout
        self.assertIn("lost by cause: no-memory %d\n" % produced, text)
        rep = self.report_raw(r.dump)
        self.assertIn("%d events were lost (the agent could not record them); by cause: "
                      "no-memory %d" % (produced, produced), rep.stderr)

    def test_run(self):
        prog = self.prog("threads-O2")
        before = time.time()
        r = self.traced("preload", [prog, "ignored-arg"],
                        env={"TRACEAGENT_BUFFER": "128K", "TRACEAGENT_MEMORY": "64M",
                             "TRACEAGENT_FLUSH_MS": "20"})
        after = time.time()
        info = self.info(r.dump)
        rep = self.report(r.dump)

        self.assertEqual(info["dump"], r.dump)
        self.assertEqual(info["format"], format_version())
        self.assertEqual(info["file_bytes"], os.path.getsize(r.dump))
        self.assertTrue(info["complete"])
        self.assertIsNone(info["incomplete"])
        self.assertEqual(info["errors"], [])
        self.assertEqual(info["chunks"], len(tahelp.chunks(r.dump)))
        self.assertEqual(info["stored_bytes"],
                         sum(c[3] for c in tahelp.chunks(r.dump)))
        self.assertGreaterEqual(info["raw_bytes"], info["stored_bytes"] * 0.5)
        for k in ("events", "lost", "threads", "duration_ns"):
            self.assertEqual(info[k], rep[k], k)

        self.assertEqual(len(info["processes"]), 1)
        p = info["processes"][0]
        self.assertEqual(p["ppid"], os.getpid())
        self.assertEqual(p["argv"], [prog, "ignored-arg"])
        self.assertEqual(os.path.realpath(p["exe"]), os.path.realpath(prog))
        started = datetime.datetime.strptime(p["start_time"][:26] + "Z",
                                             "%Y-%m-%dT%H:%M:%S.%fZ")
        started = started.replace(tzinfo=datetime.timezone.utc).timestamp()
        self.assertTrue(before - 1 <= started <= after + 1, (before, started, after))
        self.assertEqual(p["start_realtime_ns"] // 1000, int(round(started * 1e6)))
        self.assertGreater(p["duration_ns"], 0)
        self.assertLess(p["duration_ns"], (after - before) * 1e9)
        self.assertEqual(p["settings"], {"block_size": 128 << 10, "memory_cap": 64 << 20,
                                         "flush_ms": 20, "mode": "lossless",
                                         "libcalls": "io,sleep"})  # the default
        self.assertIsNone(p["crash"])
        clock = p["clock"]
        self.assertTrue(clock["calibrated"])
        self.assertGreaterEqual(clock["pairs"], 2)
        self.assertGreater(clock["ticks_per_second"], 1e6)
        self.assertEqual(p["end"]["events"], info["events"])
        self.assertEqual(p["end"]["threads"], 9)

        threads = {t["name"]: t for t in p["threads"]}
        self.assertEqual(sorted(threads), sorted(["threads-O2"] +
                                                 ["worker-%d" % i for i in range(8)]))
        main = threads["threads-O2"]
        self.assertEqual(main["tid"], p["pid"])
        self.assertEqual(main["events"], 2)
        for i in range(8):
            t = threads["worker-%d" % i]
            self.assertEqual(t["parent_tid"], p["pid"])
            self.assertEqual(t["events"], 2 * (1 + (i + 1) + 10 * (i + 1)))
            self.assertEqual((t["lost"], t["wait_ns"]), (0, 0))
            self.assertTrue(t["ended"])
        self.assertEqual(sum(t["events"] for t in p["threads"]), info["events"])

        mains = [m for m in p["modules"] if m["main"]]
        self.assertEqual(len(mains), 1)
        self.assertEqual(os.path.realpath(mains[0]["path"]), os.path.realpath(prog))
        for m in p["modules"]:
            if m["path"].startswith("/") and os.path.exists(m["path"]):
                self.assertEqual(m["build_id"], build_id(m["path"]), m["path"])
            self.assertTrue(m["ranges"], m["path"])

    def test_exec_chain(self):
        """A process that exec'd: every command line of it, in order (the
        first image's, then each exec's), in the text and in the JSON."""
        self.need_host_program("/bin/true")
        fib = self.prog("fib-O2")
        chain = [self.prog("exec-O0"), self.prog("exec-O2"), fib, "10"]
        r = self.traced("record", chain)
        self.assertEqual(r.stdout, "fib(10) = 55\n")
        (p,) = self.info(r.dump)["processes"]
        want = [chain, chain[1:], chain[2:]]
        self.assertEqual(p["commands"], want)
        self.assertEqual(p["argv"], [fib, "10"])
        out = subprocess.run([TRACEAGENT, "info", r.dump], env=clean_env(),
                             capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        at = lines.index("  command:     " + " ".join(chain))
        self.assertEqual(lines[at:at + 4],
                         ["  command:     " + " ".join(chain),
                          "             > " + " ".join(chain[1:]),
                          "             > " + " ".join(chain[2:]),
                          "  executable:  " + fib])

    def test_text(self):
        prog = self.prog("nest-O0")
        r = self.traced("record", [prog])
        p = subprocess.run([TRACEAGENT, "info", r.dump], env=clean_env(),
                           capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "dump:          " + r.dump)
        self.assertIn("complete:      yes", lines)
        self.assertIn("events:        90, lost 0", lines)
        self.assertIn("  command:     " + prog, lines)


if __name__ == "__main__":
    tahelp.main()
