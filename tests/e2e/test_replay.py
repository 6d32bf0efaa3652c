# SPDX-License-Identifier: MIT
"""replay: every call of each thread in time order, the threads
interleaved by time (--per-thread: in the order the agent wrote them).
The exact lines of nest, then the exact text of a synthetic dump whose
times are known, with each filter (--tid, --depth, --function,
--min-duration, --time-range), and the JSON objects; threads' lines of a
real run."""

import json
import re
import subprocess

import tahelp
import tadump
from tahelp import LEVELS

LINE = re.compile(r"^(?P<dur>.{12}) (?P<tid>.{8})  (?P<indent> *)(?P<text>\S.*)$")
DEPTH = {"main": 0, "trunk": 1, "branch": 2, "twig": 2, "leaf": 3, "bud": 3}
PARENT = {"trunk": "main", "branch": "trunk", "twig": "trunk", "leaf": "branch", "bud": "twig"}
CALLS = {"main": 1, "trunk": 2, "branch": 6, "twig": 2, "leaf": 24, "bud": 10}
HEAD = "    duration      tid  function"


def nest_lines():
    """(depth, text) of nest's replay."""
    out = [(0, "main() {")]
    for _ in range(2):
        out.append((1, "trunk() {"))
        for _ in range(3):
            out += [(2, "branch() {")] + [(3, "leaf();")] * 4 + [(2, "} /* branch */")]
        out += [(2, "twig() {")] + [(3, "bud();")] * 5 + [(2, "} /* twig */")]
        out.append((1, "} /* trunk */"))
    out.append((0, "} /* main */"))
    return out


def min_duration_cut(durations):
    """(limit, gap): the middle of the widest gap between distinct
    durations (ns), with calls on both sides, and that gap's width."""
    d = sorted(set(durations))
    gap, lo = max((b - a, a) for a, b in zip(d, d[1:]))
    return lo + gap // 2, gap


def time_ns(field):
    """A time column ("  1.500 us") in ns."""
    n, _, unit = field.strip().partition(" ")
    return round(float(n) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit])


def text(*lines):
    return "".join(l + "\n" for l in lines)


class ReplayTest(tahelp.Case):

    def test_nest(self):
        for level in LEVELS:
            with self.subTest(level=level):
                dump = tadump.traced_dump(self, "nest-" + level)
                p = tadump.view(self, "replay", dump)
                self.assertEqual(p.stderr, "")
                lines = p.stdout.splitlines()
                self.assertEqual(lines[0], HEAD)
                got = []
                tids = set()
                for l in lines[1:]:
                    m = LINE.match(l)
                    self.assertTrue(m, l)
                    got.append((len(m.group("indent")) // 2, m.group("text")))
                    tids.add(m.group("tid"))
                    # A duration on every line but the first of a call.
                    has_dur = not m.group("text").endswith("{")
                    self.assertEqual(bool(m.group("dur").strip()), has_dur, l)
                    if has_dur:
                        self.assertRegex(m.group("dur"), r"^ *\d+(\.\d{3} [um]s| ns)$")
                self.assertEqual(got, nest_lines())
                self.assertEqual(len(tids), 1)

    def test_nest_json(self):
        dump = tadump.traced_dump(self, "nest-O2")
        p = tadump.view(self, "replay", "--json", dump)
        calls = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual({n: sum(c["name"] == n for c in calls) for n in CALLS}, CALLS)
        self.assertEqual(len(calls), sum(CALLS.values()))
        funcs = self.functions(self.report(dump))
        for c in calls:
            self.assertEqual(c["depth"], DEPTH[c["name"]], c)
            self.assertFalse(c["open"])
            self.assertLessEqual(c["self_ns"], c["duration_ns"])
            if c["name"] in PARENT:
                # Inside exactly one call of its caller.
                outer = [o for o in calls if o["name"] == PARENT[c["name"]]
                         and o["start_ns"] <= c["start_ns"]
                         and c["start_ns"] + c["duration_ns"] <= o["start_ns"] + o["duration_ns"]]
                self.assertEqual(len(outer), 1, c)
        main = [c for c in calls if c["name"] == "main"][0]
        # Calls are cut at their rounded ends: within 1 ns of the report.
        self.assertLessEqual(abs(main["duration_ns"] - funcs["main"]["total_ns"]), 1)
        self.assertEqual(calls[-1], main)  # the objects come as the calls end
        for name in CALLS:
            # Each call's duration is rounded to the ns, the report's sum once.
            self.assertLessEqual(abs(sum(c["duration_ns"] for c in calls if c["name"] == name)
                                     - funcs[name]["total_ns"]), 2 * CALLS[name], name)

        # --min-duration keeps exactly the calls that lasted that long.
        # The filter compares the call's ticks, the objects show rounded
        # ends, and on a coarse counter (qemu: 16 ns) many calls last the
        # same: a limit next to a duration could land on either side.  So
        # the limit sits in the middle of the widest gap between the
        # durations, far from every call, on any clock.
        limit, gap = min_duration_cut(c["duration_ns"] for c in calls)
        self.assertGreater(gap, 4, sorted(c["duration_ns"] for c in calls))
        p = tadump.view(self, "replay", "--json", "--min-duration=%dns" % limit, dump)
        kept = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual(kept, [c for c in calls if c["duration_ns"] >= limit])
        self.assertLess(len(kept), len(calls))

    def test_sample(self):
        dump = tadump.sample_dump(self)
        # The threads interleaved by the time of each line (a call's
        # start, or its end on "} /* fn */"); equal times as written.
        p = tadump.view(self, "replay", "--time", dump)
        self.assertEqual(p.stderr, "")
        self.assertEqual(p.stdout, text(
            "        time     duration      tid  function",
            "      500 ns                   101  main() {",
            "      600 ns                   101    trunk() {",
            "      700 ns                   101      branch() {",
            "      800 ns       500 ns      101        leaf();",
            "    1.500 us     1.000 us      101        leaf();",
            "    1.500 us                   102  twig() {",
            "    1.600 us       300 ns      102    bud();",
            "    2.000 us       500 ns      102  } /* twig */",
            "    2.500 us                   102  trunk() {",
            "    2.600 us       200 ns      102    leaf();",
            "    2.700 us     2.000 us      101      } /* branch */",
            "    3.500 us                   101      twig() {",
            "    3.600 us        50 ns      101        bud();",
            "    5.400 us     1.900 us      101      } /* twig */",
            "    5.500 us     4.900 us      101    } /* trunk */",
            "    5.600 us                   101    trunk() {",
            "    5.700 us                   101      branch() {",
            "    5.800 us     2.500 us      101        leaf();",
            "    8.500 us     2.800 us      101      } /* branch */",
            "    9.000 us     6.500 us      102  } /* trunk */ (open at the end)",
            "    9.400 us     3.800 us      101    } /* trunk */",
            "    9.500 us     9.000 us      101  } /* main */"))
        # --per-thread: the order the agent wrote them (main's first
        # chunk, the worker's, main's second).
        p = tadump.view(self, "replay", "--time", "--per-thread", dump)
        self.assertEqual(p.stderr, "")
        self.assertEqual(p.stdout, text(
            "        time     duration      tid  function",
            "      500 ns                   101  main() {",
            "      600 ns                   101    trunk() {",
            "      700 ns                   101      branch() {",
            "      800 ns       500 ns      101        leaf();",
            "    1.500 us     1.000 us      101        leaf();",
            "    2.700 us     2.000 us      101      } /* branch */",
            "    1.500 us                   102  twig() {",
            "    1.600 us       300 ns      102    bud();",
            "    2.000 us       500 ns      102  } /* twig */",
            "    2.500 us                   102  trunk() {",
            "    2.600 us       200 ns      102    leaf();",
            "    3.500 us                   101      twig() {",
            "    3.600 us        50 ns      101        bud();",
            "    5.400 us     1.900 us      101      } /* twig */",
            "    5.500 us     4.900 us      101    } /* trunk */",
            "    5.600 us                   101    trunk() {",
            "    5.700 us                   101      branch() {",
            "    5.800 us     2.500 us      101        leaf();",
            "    8.500 us     2.800 us      101      } /* branch */",
            "    9.400 us     3.800 us      101    } /* trunk */",
            "    9.500 us     9.000 us      101  } /* main */",
            "    9.000 us     6.500 us      102  } /* trunk */ (open at the end)"))

    def check(self, dump, option, *lines):
        """lines: replay's output with --per-thread; without, the same
        lines in the order of their times."""
        with self.subTest(option=option):
            p = tadump.view(self, "replay", option, "--per-thread", dump)
            self.assertEqual(p.stderr, "")
            self.assertEqual(p.stdout, text(HEAD, *lines))
            p = tadump.view(self, "replay", option, dump)
            self.assertEqual(p.stderr, "")
            timed = tadump.view(self, "replay", option, "--time", dump).stdout.splitlines()[1:]
            times = [time_ns(l[:12]) for l in timed]
            self.assertEqual(times, sorted(times), timed)
            self.assertEqual(p.stdout, text(HEAD, *[l[13:] for l in timed]))
            self.assertEqual(sorted(p.stdout.splitlines()[1:]), sorted(lines))

    def test_filters(self):
        dump = tadump.sample_dump(self)
        self.check(dump, "--tid=102",
                   "                  102  twig() {",
                   "      300 ns      102    bud();",
                   "      500 ns      102  } /* twig */",
                   "                  102  trunk() {",
                   "      200 ns      102    leaf();",
                   "    6.500 us      102  } /* trunk */ (open at the end)")
        self.check(dump, "--depth=2",
                   "                  102  twig() {",
                   "      300 ns      102    bud();",
                   "      500 ns      102  } /* twig */",
                   "                  102  trunk() {",
                   "      200 ns      102    leaf();",
                   "                  101  main() {",
                   "    4.900 us      101    trunk();",
                   "    3.800 us      101    trunk();",
                   "    9.000 us      101  } /* main */",
                   "    6.500 us      102  } /* trunk */ (open at the end)")
        self.check(dump, "--function=br*",
                   "                  101  branch() {",
                   "      500 ns      101    leaf();",
                   "    1.000 us      101    leaf();",
                   "    2.000 us      101  } /* branch */",
                   "                  101  branch() {",
                   "    2.500 us      101    leaf();",
                   "    2.800 us      101  } /* branch */")
        self.check(dump, "--min-duration=2us",
                   "                  101  main() {",
                   "                  101    trunk() {",
                   "    2.000 us      101      branch();",
                   "    4.900 us      101    } /* trunk */",
                   "                  101    trunk() {",
                   "                  101      branch() {",
                   "    2.500 us      101        leaf();",
                   "    2.800 us      101      } /* branch */",
                   "    3.800 us      101    } /* trunk */",
                   "    9.000 us      101  } /* main */",
                   "    6.500 us      102  trunk(); (open at the end)")
        # Calls that overlap 5 to 6 us after the start (5.5 to 6.5 us in
        # the dump's clock).
        self.check(dump, "--time-range=5us-6us",
                   "                  101  main() {",
                   "                  101    trunk() {",
                   "    1.900 us      101      twig();",
                   "    4.900 us      101    } /* trunk */",
                   "                  101    trunk() {",
                   "                  101      branch() {",
                   "    2.500 us      101        leaf();",
                   "    2.800 us      101      } /* branch */",
                   "    3.800 us      101    } /* trunk */",
                   "    9.000 us      101  } /* main */",
                   "    6.500 us      102  trunk(); (open at the end)")
        self.check(dump, "--time-range=-1us",
                   "                  101  main() {",
                   "                  101    trunk() {",
                   "                  101      branch() {",
                   "      500 ns      101        leaf();",
                   "    2.000 us      101      } /* branch */",
                   "    4.900 us      101    } /* trunk */",
                   "    9.000 us      101  } /* main */")
        self.check(dump, "--time-range=9.2us-",
                   "                  101  main() {",
                   "    3.800 us      101    trunk();",
                   "    9.000 us      101  } /* main */")
        # Filters combine: under twig, on the main thread.
        p = tadump.view(self, "replay", "--function=twig", "--tid=101", "--depth=1", dump)
        self.assertEqual(p.stdout, text(HEAD, "    1.900 us      101  twig();"))

    def test_min_duration_judges_the_shown_duration(self):
        # A 2.5 GHz counter (0.4 ns a tick): a call's two ends round apart,
        # so the duration shown (rounded end - rounded start) can be 1 ns
        # off the duration rounded on its own.  --min-duration must keep
        # exactly the calls shown with at least the limit.
        exe = self.prog("nest-O2")
        syms = tahelp.elf_symbols(exe)
        bias = tadump.BIAS
        addr = {n: bias + syms[n] for n in ("main", "trunk", "leaf", "bud", "twig")}
        # (name, enter, exit) in ticks; shown ns, and the duration's own
        # rounding: trunk 0.4->0 .. 9.6->10: shown 10, own 23*0.4=9.2->9;
        # leaf 41.6->42 .. 50.4->50: shown 8, own 22*0.4=8.8->9;
        # bud 80 .. 89.2->89: shown 9, own 9.2->9 (both agree).
        calls = [("trunk", 1, 24), ("leaf", 104, 126), ("bud", 200, 223)]
        evs = [(0, tadump.ENTER, addr["main"])]
        for name, t0, t1 in calls:
            evs += [(t0, tadump.ENTER, addr[name]), (t1, tadump.EXIT)]
        evs.append((1000, tadump.EXIT))
        d = tadump.Dump()
        d.process(0, exe, [exe], clock_source=1)
        d.clock([(0, 0), (2500000, 1000000)])
        d.module(exe, bias, bias, bias + (1 << 30))
        d.thread_start(101, 0, "main")
        d.events(101, evs)
        d.thread_end(101, 1000, len(evs))
        d.end(1000, len(evs), 1)
        path = self.path("ticks.trace")
        d.write(path)
        every = [json.loads(l) for l in tadump.view(self, "replay", "--json", path).stdout.splitlines()]
        shown = {c["name"]: c["duration_ns"] for c in every}
        self.assertEqual(shown, {"trunk": 10, "leaf": 8, "bud": 9, "main": 400})
        for limit in (8, 9, 10, 11):
            with self.subTest(limit=limit):
                p = tadump.view(self, "replay", "--json", "--min-duration=%dns" % limit, path)
                kept = [json.loads(l) for l in p.stdout.splitlines()]
                self.assertEqual(kept, [c for c in every if c["duration_ns"] >= limit])

    def test_sample_json(self):
        dump = tadump.sample_dump(self)
        p = tadump.view(self, "replay", "--json", "--tid=102", dump)
        mod = self.prog("nest-O2")
        self.assertEqual([json.loads(l) for l in p.stdout.splitlines()], [
            {"tid": 102, "pid": 4242, "depth": 1, "name": "bud", "module": mod,
             "start_ns": 1600, "duration_ns": 300, "self_ns": 300, "open": False, "partial": False, "unwound": False},
            {"tid": 102, "pid": 4242, "depth": 0, "name": "twig", "module": mod,
             "start_ns": 1500, "duration_ns": 500, "self_ns": 200, "open": False, "partial": False, "unwound": False},
            {"tid": 102, "pid": 4242, "depth": 1, "name": "leaf", "module": mod,
             "start_ns": 2600, "duration_ns": 200, "self_ns": 200, "open": False, "partial": False, "unwound": False},
            {"tid": 102, "pid": 4242, "depth": 0, "name": "trunk", "module": mod,
             "start_ns": 2500, "duration_ns": 6500, "self_ns": 6300, "open": True, "partial": False, "unwound": False}])

    def test_srcline(self):
        self.need_feature("srcline")
        dump = tadump.traced_dump(self, "nest-O0")
        p = tadump.view(self, "replay", "--srcline", "--depth=2", dump)
        lines = p.stdout.splitlines()
        self.assertRegex(lines[1], r"  main\(\) \{ /\* \S*nest\.c:\d+ \*/$")
        self.assertRegex(lines[2], r"    trunk\(\); /\* \S*nest\.c:\d+ \*/$")
        self.assertTrue(lines[-1].endswith("} /* main */"), lines[-1])
        p = tadump.view(self, "replay", "--srcline", "--json", "--depth=1", dump)
        main = json.loads(p.stdout.splitlines()[-1])
        self.assertRegex(main["srcline"], r"nest\.c:\d+$")

    def test_threads(self):
        """threads: 8 workers and main.  Lines of all threads in the order
        of their times; --per-thread keeps each thread's lines in its
        order."""
        dump = tadump.traced_dump(self, "threads-O2")
        ids = tadump.thread_ids(self, dump)
        workers = {ids["worker-%d" % i]: i for i in range(8)}
        p = tadump.view(self, "replay", "--time", dump)
        self.assertEqual(p.stderr, "")
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "        time " + HEAD)
        lines = lines[1:]
        # main (its callees untraced), and per worker i: worker { i+1
        # times work { 10 x step } }.
        self.assertEqual(len(lines), 1 + 8 * 2 + 36 * 12)
        times = [time_ns(l[:12]) for l in lines]
        self.assertEqual(times, sorted(times))
        per = {}
        for l in lines:
            m = LINE.match(l[13:])
            self.assertTrue(m, l)
            per.setdefault(int(m.group("tid")), []).append(m.group("text"))
        self.assertEqual(per.pop(ids["threads-O2"]), ["main();"])
        self.assertEqual(set(per), set(workers))
        for tid, i in workers.items():
            body = ["work() {"] + ["step();"] * 10 + ["} /* work */"]
            self.assertEqual(per[tid], ["worker() {"] + body * (i + 1) + ["} /* worker */"], tid)
        # The workers run at once: their lines mix.
        self.assertNotEqual([l for l in lines if int(l[26:34]) in workers],
                            sorted((l for l in lines if int(l[26:34]) in workers),
                                   key=lambda l: int(l[26:34])))
        # --per-thread: the same lines, each thread's in the same order.
        q = tadump.view(self, "replay", "--time", "--per-thread", dump).stdout.splitlines()[1:]
        self.assertEqual(sorted(q), sorted(lines))
        for tid in list(workers) + [ids["threads-O2"]]:
            self.assertEqual([l for l in q if int(l[26:34]) == tid],
                             [l for l in lines if int(l[26:34]) == tid])
        # JSON: the objects in the order the calls end, all threads.
        calls = [json.loads(l) for l in tadump.view(self, "replay", "--json", dump).stdout.splitlines()]
        self.assertEqual(len(calls), 1 + 8 + 36 + 360)
        ends = [c["start_ns"] + c["duration_ns"] for c in calls]
        self.assertEqual(ends, sorted(ends))
        q = [json.loads(l) for l in tadump.view(self, "replay", "--json", "--per-thread", dump).stdout.splitlines()]
        key = lambda c: (c["start_ns"], c["tid"], c["depth"])
        self.assertEqual(sorted(q, key=key), sorted(calls, key=key))

    def test_no_tmpdir(self):
        """Where no temporary file can be made (TMPDIR missing, or a file),
        replay still shows every line, in --per-thread's order, with one
        line on stderr saying why; exit status 0."""
        dump = tadump.traced_dump(self, "threads-O2")
        per = tadump.view(self, "replay", "--time", "--per-thread", dump)
        not_dir = self.path("not-a-dir")
        with open(not_dir, "w") as f:
            f.write("x")
        for tmpdir, err in ((self.path("nonexistent"), "No such file or directory"),
                            (not_dir, "Not a directory")):
            with self.subTest(tmpdir=tmpdir):
                for args, want in ((("--time",), per.stdout),
                                   (("--json",), tadump.view(self, "replay", "--json",
                                                             "--per-thread", dump).stdout)):
                    p = subprocess.run([tahelp.TRACEAGENT, "replay"] + list(args) + [dump],
                                       env=tahelp.clean_env({"TMPDIR": tmpdir}),
                                       capture_output=True, text=True, timeout=tahelp.TIMEOUT)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertEqual(p.stdout, want)
                    self.assertEqual(p.stderr,
                                     "traceagent replay: %s: cannot "
                                     "create a temporary file to interleave the threads (%s): "
                                     "the lines are in the order the agent wrote them, as with "
                                     "--per-thread (TMPDIR names the directory)\n" % (tmpdir, err))

    def test_errors(self):
        dump = tadump.sample_dump(self)
        for bad in ("--time-range=5", "--time-range=2s-1s", "--time-range=1x-", "--depth=0",
                    "--depth=x", "--min-duration=fast", "--tid=", "--function=", "--nosuch"):
            with self.subTest(option=bad):
                p = tadump.view(self, "replay", bad, dump, status=2)
                self.assertTrue(p.stderr.startswith("traceagent replay: "), p.stderr)
                self.assertEqual(p.stdout, "")
        missing = self.path("missing.trace")
        p = tadump.view(self, "replay", missing, status=2)
        self.assertEqual((p.stdout, p.stderr),
                         ("", "traceagent: %s: No such file or directory\n" % missing))
        p = tadump.view(self, "replay", "--tid=5", dump)
        self.assertEqual((p.stdout, p.stderr),
                         (HEAD + "\n", "traceagent: %s: warning: no thread 5 in the dump\n" % dump))


if __name__ == "__main__":
    tahelp.main()
