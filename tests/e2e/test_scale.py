# SPDX-License-Identifier: MIT
"""The analyzer's scaling (issue 18) on synthetic dumps of tests/unit/
gendump: -j's default is the number of CPUs the analyzer may run on (its
worker threads counted in /proc while it reads, under an affinity of one
CPU and of two), and the exports (perfetto, chrome) keep their peak RSS
flat in the dump's length (a dump of 8x the events within a few MiB)."""

import os
import subprocess
import time

import tahelp
from tahelp import TRACEAGENT, clean_env

GENDUMP = os.environ.get("TA_GENDUMP", "")
# Memory that does not grow with the events: the same few MiB for 8x them.
RSS_GROWTH_KIB = 4 << 10
RSS_LIMIT_KIB = 64 << 10


def gendump(case, events):
    path = case.fresh("gen%d" % events) + ".trace"
    subprocess.run([GENDUMP, path, str(events)], check=True, env=clean_env(),
                   stdout=subprocess.DEVNULL, timeout=tahelp.TIMEOUT)
    return path


def run(argv, cpus=None):
    """argv's status, peak RSS (KiB) and most threads seen at once (its
    /proc/PID/task, polled every millisecond), on the CPUs given."""
    p = subprocess.Popen(argv, env=clean_env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE,
                         preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    most = 0
    deadline = time.monotonic() + tahelp.TIMEOUT
    while p.poll() is None:
        if time.monotonic() > deadline:
            p.kill()
            p.wait()
            raise AssertionError("%s still running after %d s" % (argv[0], tahelp.TIMEOUT))
        try:
            most = max(most, len(os.listdir("/proc/%d/task" % p.pid)))
        except OSError:
            pass
        time.sleep(0.001)
    err = tahelp.read_all(p.stderr).decode()
    p.stderr.close()
    return p.returncode, most, err


def peak_rss(argv):
    p = subprocess.Popen(argv, env=clean_env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    err = tahelp.read_all(p.stderr).decode()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    p.stderr.close()
    return p.returncode, usage.ru_maxrss, err


class ScaleTest(tahelp.Case):

    def setUp(self):
        super().setUp()
        if not GENDUMP:
            self.fail("TA_GENDUMP is not set: run the tests with meson test")

    def test_default_jobs(self):
        self.skip_if_emulated("qemu-user runs threads of its own in the analyzer's process, "
                              "which the count would take for workers")
        cpus = sorted(os.sched_getaffinity(0))
        dump = gendump(self, 6_000_000)
        # One CPU: no worker; and -j1 on two: none either (what is counted).
        st, most, err = run([TRACEAGENT, "report", dump], cpus={cpus[0]})
        self.assertEqual((st, most), (0, 1), err)
        if len(cpus) < 2:
            self.skipTest("one CPU: the two-CPU half needs two")
        st, most, err = run([TRACEAGENT, "report", "-j1", dump], cpus=set(cpus[:2]))
        self.assertEqual((st, most), (0, 1), err)
        # Two CPUs: -j2, a worker beside the reader.
        st, most, err = run([TRACEAGENT, "report", dump], cpus=set(cpus[:2]))
        self.assertEqual((st, most), (0, 2), err)

    def test_export_memory_flat(self):
        small, big = gendump(self, 500_000), gendump(self, 4_000_000)
        for fmt in ("perfetto", "chrome"):
            for jobs in ("-j1", "-j2"):
                with self.subTest(fmt=fmt, jobs=jobs):
                    rss = []
                    for dump in (small, big):
                        st, kib, err = peak_rss([TRACEAGENT, "export", "--format=" + fmt, jobs,
                                                 "-o", os.devnull, dump])
                        self.assertEqual(st, 0, err)
                        rss.append(kib)
                    self.assertLess(rss[1], RSS_LIMIT_KIB, rss)
                    self.assertLess(rss[1] - rss[0], RSS_GROWTH_KIB, rss)


if __name__ == "__main__":
    tahelp.main()
