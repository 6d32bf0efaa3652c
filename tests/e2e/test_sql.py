# SPDX-License-Identifier: MIT
"""`traceagent sql` (issue 38): a dump in SQLite as Perfetto-shaped tables.

The sample run (tadump.sample: exact ns) gives exact slices, threads,
processes and outputs (table, --csv, --json); fib and threads traced for
real give counts that must equal report's, function_stats equal to
report's numbers on every function, and parent_id and depth consistent;
apiviews the counters, instants, frames and zone args; damaged and
mutated dumps the same messages and status as report."""

import csv
import io
import json
import os
import random
import subprocess

import tahelp
import tadump
from tahelp import LEVELS, TRACEAGENT

FIB_N = 15

# The slices of the sample run, by id: ts, dur, depth, name, parent_id,
# self_dur, incomplete, tid.  Ids are taken at each call's first line, in
# the order the walk reaches them (the main thread's first chunk, the
# worker's, the main thread's second).
SAMPLE_SLICES = """\
id,ts,dur,depth,name,category,parent_id,self_dur,incomplete,tid,thread
1,1000,9000,0,main,nest-O2,,300,0,101,main
2,1100,4900,1,trunk,nest-O2,1,1000,0,101,main
3,1200,2000,2,branch,nest-O2,2,500,0,101,main
4,1300,500,3,leaf,nest-O2,3,500,0,101,main
5,2000,1000,3,leaf,nest-O2,3,1000,0,101,main
6,2000,500,0,twig,nest-O2,,200,0,102,worker
7,2100,300,1,bud,nest-O2,6,300,0,102,worker
8,3000,6500,0,trunk,nest-O2,,6300,1,102,worker
9,3100,200,1,leaf,nest-O2,8,200,0,102,worker
10,4000,1900,2,twig,nest-O2,2,1850,0,101,main
11,4100,50,3,bud,nest-O2,10,50,0,101,main
12,6100,3800,1,trunk,nest-O2,1,1000,0,101,main
13,6200,2800,2,branch,nest-O2,12,300,0,101,main
14,6300,2500,3,leaf,nest-O2,13,2500,0,101,main
"""

SLICES_QUERY = ("SELECT s.id, s.ts, s.dur, s.depth, s.name, s.category, s.parent_id, "
                "s.self_dur, s.incomplete, t.tid, t.name AS thread FROM slice s "
                "JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) "
                "ORDER BY s.id")

# Perfetto's first query, as its docs write it.
PERFETTO_QUERY = "SELECT name, count(*) FROM slice GROUP BY name ORDER BY name"

SAMPLE_COUNTS_TABLE = """\
name    count(*)
------  --------
branch         2
bud            2
leaf           4
main           1
trunk          3
twig           2
"""

SAMPLE_COUNTS_JSON = """\
[{"name": "branch", "count(*)": 2},
 {"name": "bud", "count(*)": 2},
 {"name": "leaf", "count(*)": 4},
 {"name": "main", "count(*)": 1},
 {"name": "trunk", "count(*)": 3},
 {"name": "twig", "count(*)": 2}]
"""

# A slice whose parent is not its caller: depth 0 without a parent, or a
# parent one level up on the same track that holds it in time.
INCONSISTENT = ("SELECT count(*) FROM slice c LEFT JOIN slice p ON c.parent_id = p.id "
                "WHERE (c.depth = 0) != (c.parent_id IS NULL) OR (c.parent_id IS NOT NULL "
                "AND (p.id IS NULL OR p.depth != c.depth - 1 OR p.track_id != c.track_id "
                "OR c.ts < p.ts OR c.ts + c.dur > p.ts + p.dur OR c.id <= p.id))")

STATS_COLUMNS = ("name", "module", "offset", "calls", "total_ns", "self_ns", "min_ns", "max_ns",
                 "avg_ns", "p50_ns", "p90_ns", "p99_ns", "open", "partial")


class SqlTest(tahelp.Case):

    def sql(self, *args, status=0, stdin=None):
        p = subprocess.run([TRACEAGENT, "sql"] + [str(a) for a in args], env=tahelp.clean_env(),
                           input=stdin, capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, status,
                         "sql %s: status %d\nstderr:\n%s" % (args, p.returncode, p.stderr))
        return p

    def rows(self, dump, query, *options):
        """The rows of query as lists of strings (--csv), header first."""
        p = self.sql("--csv", *options, dump, query)
        self.assertEqual(p.stderr, "")
        return list(csv.reader(io.StringIO(p.stdout)))

    def one(self, dump, query, *options):
        return self.rows(dump, query, *options)[1][0]

    # -- the sample run: exact values -----------------------------------------

    def test_sample_slices(self):
        dump = tadump.sample_dump(self)
        p = self.sql("--csv", dump, SLICES_QUERY)
        self.assertEqual(p.stdout.replace("\r\n", "\n"), SAMPLE_SLICES)
        self.assertEqual(p.stderr, "")
        self.assertEqual(self.rows(dump, "SELECT * FROM trace_bounds"),
                         [["start_ts", "end_ts"], ["500", "10100"]])
        self.assertEqual(self.rows(dump, "SELECT upid, pid, name, start_ts, end_ts, parent_upid "
                                   "FROM process"),
                         [["upid", "pid", "name", "start_ts", "end_ts", "parent_upid"],
                          ["1", "4242", "nest-O2", "500", "10100", ""]])
        self.assertEqual(self.rows(dump, "SELECT * FROM thread ORDER BY utid"),
                         [["utid", "tid", "name", "upid", "start_ts", "end_ts", "is_main_thread"],
                          ["1", "101", "main", "1", "500", "10000", "0"],
                          ["2", "102", "worker", "1", "900", "9500", "0"]])
        self.assertEqual(self.one(dump, INCONSISTENT), "0")

    def test_outputs(self):
        dump = tadump.sample_dump(self)
        self.assertEqual(self.sql(dump, PERFETTO_QUERY).stdout, SAMPLE_COUNTS_TABLE)
        self.assertEqual(self.sql("--json", dump, PERFETTO_QUERY).stdout, SAMPLE_COUNTS_JSON)
        self.assertEqual(self.sql("--csv", dump, PERFETTO_QUERY).stdout,
                         "name,count(*)\r\nbranch,2\r\nbud,2\r\nleaf,4\r\nmain,1\r\n"
                         "trunk,3\r\ntwig,2\r\n".replace("\r\n", "\n"))
        # Several statements, from standard input: one result after another.
        both = "SELECT 1 AS a, NULL AS b, 'x,\"y' AS c;\nSELECT 2.5 AS d;\n"
        self.assertEqual(self.sql(dump, stdin=both).stdout,
                         "a  b     c\n-  ----  ----\n1  NULL  x,\"y\n\n  d\n---\n2.5\n")
        self.assertEqual(self.sql("--csv", dump, stdin=both).stdout,
                         "a,b,c\n1,,\"x,\"\"y\"\n\nd\n2.5\n")
        self.assertEqual(self.sql("--json", dump, stdin=both).stdout,
                         '[{"a": 1, "b": null, "c": "x,\\"y"}]\n[{"d": 2.5}]\n')
        self.assertEqual(self.sql("--json", dump, "SELECT 1 WHERE 0").stdout, "[]\n")

    def test_function_and_min_duration(self):
        dump = tadump.sample_dump(self)
        q = "SELECT name, ts, dur, depth, parent_id IS NULL FROM slice ORDER BY id"
        self.assertEqual(self.rows(dump, q, "--function=branch")[1:],
                         [["branch", "1200", "2000", "0", "1"],
                          ["leaf", "1300", "500", "1", "0"],
                          ["leaf", "2000", "1000", "1", "0"],
                          ["branch", "6200", "2800", "0", "1"],
                          ["leaf", "6300", "2500", "1", "0"]])
        self.assertEqual(self.rows(dump, "SELECT name, calls FROM function_stats",
                                   "--function=branch")[1:], [["branch", "2"]])
        # The worker's trunk, still open, is shown at the end of its
        # thread: its id comes last.
        self.assertEqual(self.rows(dump, q, "--min-duration=2500")[1:],
                         [["main", "1000", "9000", "0", "1"],
                          ["trunk", "1100", "4900", "1", "0"],
                          ["trunk", "6100", "3800", "1", "0"],
                          ["branch", "6200", "2800", "2", "0"],
                          ["leaf", "6300", "2500", "3", "0"],
                          ["trunk", "3000", "6500", "0", "1"]])
        # function_stats stays whole.
        self.assertEqual(self.one(dump, "SELECT sum(calls) FROM function_stats",
                                  "--min-duration=2500"), "14")

    def test_db_file(self):
        dump = tadump.sample_dump(self)
        db = self.path("sample.db")
        self.assertEqual(self.sql("--db", db, dump, "SELECT count(*) FROM slice").stdout,
                         "count(*)\n--------\n      14\n")
        # Kept: queried as it is, and never loaded over.
        self.assertEqual(self.sql(db, "SELECT count(*) FROM thread").stdout,
                         "count(*)\n--------\n       2\n")
        p = self.sql("--db", db, dump, "SELECT 1", status=2)
        self.assertEqual(p.stderr, "traceagent sql: %s: exists (remove it, or query it: "
                         "traceagent sql %s)\n" % (db, db))

    def test_memory_and_file_agree(self):
        """In memory the slices are columns read as a virtual table; in a
        file, a table of SQLite's: the same rows, lookups and order."""
        dump = tadump.traced_dump(self, "threads-O2")
        db = self.path("threads.db")
        queries = ["SELECT * FROM slice ORDER BY id",
                   "SELECT * FROM slice",
                   "SELECT * FROM slice WHERE id = 3",
                   "SELECT count(*) FROM slice WHERE id = '3' OR id = 2.5 OR id = 0",
                   "SELECT c.id, p.name FROM slice c JOIN slice p ON c.parent_id = p.id "
                   "ORDER BY c.id DESC LIMIT 20",
                   INCONSISTENT]
        for q in queries:
            with self.subTest(query=q):
                mem = self.sql("--csv", dump, q).stdout
                if not os.path.exists(db):
                    self.sql("--db", db, dump, "SELECT 1")
                self.assertEqual(self.sql("--csv", db, q).stdout, mem)
                self.assertGreater(len(mem.splitlines()), 1)

    def test_errors(self):
        dump = tadump.sample_dump(self)
        p = self.sql(dump, "SELECT 1 AS a; SELECT * FROM nope; SELECT 3", status=1)
        self.assertEqual(p.stdout, "a\n-\n1\n")
        self.assertEqual(p.stderr, "traceagent sql: statement 2: no such table: nope\n")
        p = self.sql("--csv", "--json", dump, "SELECT 1", status=2)
        self.assertEqual(p.stderr, "traceagent sql: --json or --csv, not both; try "
                         "'traceagent sql --help'\n")
        p = self.sql("--min-duration=soon", dump, "SELECT 1", status=2)
        self.assertIn("'soon' is not a time", p.stderr)
        p = self.sql(self.path("none.trace"), "SELECT 1", status=2)
        self.assertEqual(p.stderr, "traceagent: %s: No such file or directory\n"
                         % self.path("none.trace"))

    # -- traced programs: report's numbers --------------------------------------

    def report_csv(self, dump):
        p = tahelp.subprocess.run([TRACEAGENT, "report", "--csv", dump], env=tahelp.clean_env(),
                                  capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        return {(r["name"], r["module"]): r for r in csv.DictReader(io.StringIO(p.stdout))}

    def check_report(self, dump):
        """function_stats is report's table, number for number, and each
        function has as many slices as report counts calls."""
        want = self.report_csv(dump)
        got = self.rows(dump, "SELECT %s FROM function_stats" % ", ".join(STATS_COLUMNS))
        got = {(r[0], r[1]): dict(zip(STATS_COLUMNS, r)) for r in got[1:]}
        self.assertEqual(got, want)
        counts = self.rows(dump, "SELECT s.name, count(*), f.calls FROM slice s JOIN "
                           "function_stats f ON s.name = f.name GROUP BY s.name")
        self.assertEqual(len(counts) - 1, len(want))
        for name, n, calls in counts[1:]:
            self.assertEqual(n, calls, name)
        self.assertEqual(self.one(dump, INCONSISTENT), "0")
        return got

    def test_fib(self):
        for level in LEVELS:
            with self.subTest(level=level):
                dump = tadump.traced_dump(self, "fib-" + level, str(FIB_N))
                got = self.check_report(dump)
                calls = {k[0]: int(v["calls"]) for k, v in got.items()}
                self.assertEqual(calls["fib"], tahelp.fib_calls(FIB_N))
                self.assertEqual(calls["main"], 1)
                self.assertEqual(self.rows(dump, "SELECT max(depth) FROM slice WHERE "
                                           "name = 'fib'")[1], [str(FIB_N)])

    def test_threads(self):
        dump = tadump.traced_dump(self, "threads-O2")
        self.check_report(dump)
        # The join Perfetto's docs use: slices per thread.
        got = self.rows(dump, "SELECT thread.name, slice.name, count(*) FROM slice "
                        "JOIN thread_track ON slice.track_id = thread_track.id "
                        "JOIN thread USING (utid) WHERE slice.name != '[traceagent wait]' "
                        "GROUP BY 1, 2 ORDER BY 1, 2")
        want = [["name", "name", "count(*)"]]
        main = [r for r in got if r[1] == "main"]
        self.assertEqual(len(main), 1)
        for i in range(8):
            want += [["worker-%d" % i, "step", str(10 * (i + 1))],
                     ["worker-%d" % i, "work", str(i + 1)],
                     ["worker-%d" % i, "worker", "1"]]
        self.assertEqual([r for r in got if r[1] != "main"], want)
        self.assertEqual(self.one(dump, "SELECT count(*) FROM process p JOIN thread t "
                                  "USING (upid) WHERE t.is_main_thread"), "1")

    def test_api(self):
        dump = tadump.traced_dump(self, "apiviews-O2")
        self.assertEqual(self.rows(dump, "SELECT ct.name, count(*), sum(value) FROM counter "
                                   "JOIN counter_track ct ON counter.track_id = ct.id "
                                   "GROUP BY 1 ORDER BY 1")[1:],
                         [["queue", "100", "4950.0"], ["ratio", "10", "11.25"],
                          ["sent", "5", "15.0"]])
        self.assertEqual(self.rows(dump, "SELECT kind, name FROM instant ORDER BY kind, name")[1:],
                         [["channel", "channel net off"], ["channel", "channel net on"],
                          ["instant", "checkpoint"], ["instant", "helper done"],
                          ["message", "helper up"], ["message", "level three loaded"],
                          ["message", "score 42"], ["zone_end", "zone end without a zone"]])
        self.assertEqual(self.rows(dump, "SELECT s.name, s.category, a.key, a.int_value, "
                                   "a.string_value FROM slice s JOIN args a USING (arg_set_id) "
                                   "ORDER BY a.key")[1:],
                         [["work", "[zone]", "debug.text", "", "item 7"],
                          ["work", "[zone]", "debug.value", "7", ""]])
        self.assertEqual(self.rows(dump, "SELECT name, count(*) FROM slice WHERE "
                                   "category = '[zone]' GROUP BY 1 ORDER BY 1")[1:],
                         [["send", "5"], ["work", "1"]])
        frames = self.rows(dump, "SELECT number, ts, dur, name FROM frame ORDER BY number")[1:]
        self.assertEqual([(f[0], f[3]) for f in frames],
                         [("0", "frame"), ("1", "frame"), ("2", "frame"), ("3", "frame")])
        # Frames follow each other.
        for a, b in zip(frames, frames[1:]):
            self.assertEqual(int(a[1]) + int(a[2]), int(b[1]))

    # -- damaged and hostile dumps ----------------------------------------------

    def same_as_report(self, dump):
        """sql says what report says of dump, with its status, and the
        slices it loads are consistent."""
        r = subprocess.run([TRACEAGENT, "report", dump], env=tahelp.clean_env(),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        p = subprocess.run([TRACEAGENT, "sql", "--csv", dump, INCONSISTENT],
                           env=tahelp.clean_env(), capture_output=True, text=True,
                           timeout=tahelp.TIMEOUT)
        self.assertEqual((p.returncode, p.stderr), (r.returncode, r.stderr), dump)
        if p.returncode < 2:
            self.assertEqual(p.stdout, "count(*)\n0\n", dump)

    def test_damaged(self):
        dump = tadump.traced_dump(self, "fib-O0", str(FIB_N))
        with open(dump, "rb") as fh:
            data = fh.read()
        garbage = self.path("garbage.trace")
        with open(garbage, "wb") as fh:
            fh.write(b"not a dump at all\n")
        self.same_as_report(garbage)
        p = self.sql(garbage, "SELECT count(*) FROM slice", status=1)
        self.assertEqual(p.stderr, "traceagent: %s: file header at offset 0: not a traceagent "
                         "dump (bad magic)\n" % garbage)
        # Cut anywhere, bytes changed anywhere (seeded).
        rnd = random.Random(38)
        for i in range(24):
            bad = bytearray(data)
            if i % 3 == 0:
                bad = bad[:rnd.randrange(len(data))]
            else:
                for _ in range(1 + i % 4):
                    bad[rnd.randrange(len(bad))] ^= 1 << rnd.randrange(8)
            path = self.path("bad-%d.trace" % i)
            with open(path, "wb") as fh:
                fh.write(bad)
            with self.subTest(mutant=i):
                self.same_as_report(path)


if __name__ == "__main__":
    tahelp.main()
