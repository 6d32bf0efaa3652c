#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ClickHouse for many (issue 38): two real clickhouse-server instances on
loopback ports as two shards under Distributed tables (the schema of
`traceagent export --format=clickhouse --schema --cluster`); three traced
programs streamed through `serve --clickhouse`; the count of fib's slices
exact and function_stats equal to report's on every function; export
--format=clickhouse with credentials from a file; and ClickHouse down:
serve says so in one line and the dumps are whole.  Skipped, saying why,
where clickhouse-server is not installed (scripts/test installs it)."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tahelp  # noqa: E402
from tahelp import TRACEAGENT, AGENT, TIMEOUT, clean_env, fib_calls, no_core  # noqa: E402
from test_serve import Serve, parse  # noqa: E402

SERVER = shutil.which("clickhouse-server") or (
    "/usr/sbin/clickhouse-server" if os.access("/usr/sbin/clickhouse-server", os.X_OK) else None)

CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{dir}/server.log</log>
    <errorlog>{dir}/server.err.log</errorlog></logger>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{dir}/data/</path>
  <tmp_path>{dir}/tmp/</tmp_path>
  <user_files_path>{dir}/user_files/</user_files_path>
  <format_schema_path>{dir}/format_schemas/</format_schema_path>
  <users_config>{dir}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <timezone>UTC</timezone>
  <remote_servers><traceagent>
    <shard><replica><host>127.0.0.1</host><port>{tcp1}</port></replica></shard>
    <shard><replica><host>127.0.0.1</host><port>{tcp2}</port></replica></shard>
  </traceagent></remote_servers>
</yandex>
"""

USERS = """<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <ta><password>s3cr3t</password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></ta>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
  </interval></default></quotas>
</yandex>
"""


SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sql",
                       "clickhouse")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(http, sql, user=None):
    req = urllib.request.Request("http://127.0.0.1:%d/" % http, data=sql.encode(),
                                 method="POST")
    if user:
        import base64
        req.add_header("Authorization", "Basic " + base64.b64encode(user.encode()).decode())
    with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
        return r.read().decode()


class ClickHouseTest(tahelp.Case):

    @classmethod
    def setUpClass(cls):
        try:
            cls.start_servers()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_servers(cls):
        if not SERVER:
            raise unittest.SkipTest("clickhouse-server is not installed (scripts/test installs "
                                    "Debian's clickhouse-server where it can)")
        if tahelp.EMULATED:
            # The server is the host's either way; the x86-64 run covers the
            # path, and the emulated run's time is CI's budget.
            raise unittest.SkipTest("emulated run: the servers and the HTTP path are the "
                                    "host's, tested by the native run")
        cls.top = tahelp.tempfile.mkdtemp(prefix="ta-ch-", dir=tahelp.WORKDIR)
        cls.servers = []
        ports = [(free_port(), free_port()) for _ in range(2)]
        for i, (http, tcp) in enumerate(ports):
            d = os.path.join(cls.top, "shard%d" % (i + 1))
            os.makedirs(d)
            with open(os.path.join(d, "config.xml"), "w") as f:
                f.write(CONFIG.format(dir=d, http=http, tcp=tcp, tcp1=ports[0][1],
                                      tcp2=ports[1][1]))
            with open(os.path.join(d, "users.xml"), "w") as f:
                f.write(USERS)
            log = open(os.path.join(d, "stdout"), "w")
            p = subprocess.Popen([SERVER, "--config-file=" + os.path.join(d, "config.xml")],
                                 stdout=log, stderr=subprocess.STDOUT, cwd=d,
                                 preexec_fn=no_core)
            log.close()
            cls.servers.append((p, http, d))
        # Up when /ping answers (bounded: a server that died says why).
        for p, http, d in cls.servers:
            end = time.time() + 120
            while True:
                try:
                    with urllib.request.urlopen("http://127.0.0.1:%d/ping" % http,
                                                timeout=5) as r:
                        if r.read() == b"Ok.\n":
                            break
                except (urllib.error.URLError, ConnectionError, socket.timeout):
                    pass
                if p.poll() is not None or time.time() > end:
                    raise AssertionError("clickhouse-server in %s did not start:\n%s" %
                                         (d, open(os.path.join(d, "stdout")).read()[-2000:]))
                time.sleep(0.1)
        # The definitions the repository ships (SchemaTest: the command's).
        with open(os.path.join(SQL_DIR, "distributed.sql")) as f:
            schema = f.read()
        for _, http, _ in cls.servers:
            for stmt in schema.split(";"):
                if stmt.strip():
                    query(http, stmt)
        cls.http1 = cls.servers[0][1]

    @classmethod
    def tearDownClass(cls):
        for p, _, _ in getattr(cls, "servers", []):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if getattr(cls, "top", None):
            shutil.rmtree(cls.top, ignore_errors=True)

    def url(self, http, extra=""):
        return "http://127.0.0.1:%d/?insert_distributed_sync=1%s" % (http, extra)

    NUMBERS = ("calls", "total_ns", "self_ns", "min_ns", "max_ns", "avg_ns", "p50_ns",
               "p90_ns", "p99_ns", "open", "partial", "unwound")

    def stats(self, recording):
        """name -> report's numbers of one recording, from function_stats."""
        out = query(self.http1, "SELECT name, %s FROM function_stats WHERE recording = '%s' "
                    "FORMAT TabSeparated" % (", ".join(self.NUMBERS), recording))
        got = {}
        for l in out.splitlines():
            name, *nums = l.split("\t")
            got[name] = tuple(None if n == "\\N" else int(n) for n in nums)
        return got

    def test_three_programs_two_shards(self):
        serve = Serve(self, "--clickhouse", self.url(self.http1))
        progs = [[self.prog("fib-O0"), "15"], [self.prog("fib-O2"), "20"],
                 [self.prog("threads-O2")]]
        env = clean_env({"LD_PRELOAD": AGENT, "TRACEAGENT_OUTPUT": serve.addr})
        procs = [subprocess.Popen(a, env=env, cwd=self.dir, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, preexec_fn=no_core)
                 for a in progs]
        for p in procs:
            _, err = p.communicate(timeout=TIMEOUT)
            self.assertEqual((p.returncode, err), (0, ""))
        lines = serve.wait_lines(6)
        self.assertEqual(serve.stop(), 0)
        lines = serve.lines()
        conns = [parse(l) for l in lines if " pid " in l]
        inserted = [l for l in lines if " into ClickHouse at " in l]
        self.assertEqual((len(conns), len(inserted)), (3, 3), lines)
        base = query(self.http1, "SELECT count() FROM slice WHERE name = 'fib' AND "
                     "recording IN (%s)" % ", ".join(
                         "'%s'" % os.path.basename(c["file"])[:-6] for c in conns))
        self.assertEqual(int(base), fib_calls(15) + fib_calls(20))
        # Each shard holds whole recordings, and the two hold them all.
        per_shard = [int(query(h, "SELECT count() FROM slice_local WHERE name = 'fib'"))
                     for _, h, _ in self.servers]
        self.assertEqual(sum(per_shard),
                         int(query(self.http1, "SELECT count() FROM slice WHERE name = 'fib'")))
        for c in conns:
            rec = os.path.basename(c["file"])[:-6]
            rep = self.report(c["file"])
            want = {f["name"]: tuple(f.get(k) for k in self.NUMBERS) for f in rep["functions"]}
            self.assertTrue(want)
            self.assertEqual(self.stats(rec), want, rec)
            hosts = query(self.http1, "SELECT DISTINCT host FROM slice WHERE recording = '%s'"
                          % rec).split()
            self.assertEqual(hosts, [socket.gethostname()[:63]])

    def test_export_with_credentials(self):
        dump = self.traced("preload", [self.prog("fib-O2"), "12"]).dump
        creds = self.path("creds")
        with open(creds, "w") as f:
            f.write("# ClickHouse's user\nuser=ta\npassword=s3cr3t\n")
        r = subprocess.run([TRACEAGENT, "export", "--format=clickhouse", "--host", "h-export",
                            "--recording", "rec-export", "--clickhouse-credentials", creds,
                            self.url(self.servers[1][1]), dump],
                           capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertRegex(r.stdout, r"^traceagent export: .* into ClickHouse at .* \(host "
                         r"h-export, recording rec-export\): %d slices, 2 functions, 1 thread\n$"
                         % (fib_calls(12) + 1))
        self.assertEqual(int(query(self.http1, "SELECT count() FROM slice WHERE name = 'fib' "
                                   "AND recording = 'rec-export' AND host = 'h-export'")),
                         fib_calls(12))
        # A wrong password: ClickHouse's refusal, said; exit 4.
        with open(creds, "w") as f:
            f.write("user=ta\npassword=wrong\n")
        r = subprocess.run([TRACEAGENT, "export", "--format=clickhouse", "--clickhouse-"
                            "credentials", creds, self.url(self.http1), dump],
                           capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertRegex(r.stderr, r"^traceagent export: ClickHouse at \S+ refused an insert: "
                         r"HTTP \d+: .*(assword|Authentication)")
        # Credentials are never taken from the command line.
        r = subprocess.run([TRACEAGENT, "export", "--format=clickhouse",
                            "http://ta:s3cr3t@127.0.0.1:%d/" % self.http1, dump],
                           capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(r.returncode, 2)
        self.assertIn("give them in a file", r.stderr)

    TABLES = ("process", "thread", "track", "thread_track", "counter_track", "slice", "instant",
              "counter", "args", "function_stats", "frame", "trace_bounds")

    def test_every_table_as_sql_has_it(self):
        """The manual API's events (every table has rows) and its hostile
        strings (a 100 KB zone name, bytes a TSV line must escape): each
        table's rows and the bytes of the names as traceagent sql has them."""
        for prog, argv in (("apiviews", []), ("apihostile", [])):
            r = self.run_record([self.prog(prog + "-O2")] + argv)
            self.assertTrue(os.path.isfile(r.dump), r.stderr)
            rec = "rec-" + prog
            x = subprocess.run([TRACEAGENT, "export", "--format=clickhouse", "--recording", rec,
                                self.url(self.http1), r.dump],
                               capture_output=True, text=True, timeout=TIMEOUT)
            self.assertIn(x.returncode, (0, 1), x.stderr)
            for t in self.TABLES:
                q = subprocess.run([TRACEAGENT, "sql", "--csv", r.dump,
                                    "SELECT count(*) FROM %s" % t],
                                   capture_output=True, text=True, timeout=TIMEOUT)
                want = int(q.stdout.splitlines()[-1])
                got = int(query(self.http1, "SELECT count() FROM %s WHERE recording = '%s'"
                                % (t, rec)))
                self.assertEqual(got, want, (prog, t))
            q = subprocess.run([TRACEAGENT, "sql", "--csv", r.dump,
                                "SELECT count(*), sum(length(CAST(name AS BLOB))) FROM slice"],
                               capture_output=True, text=True, timeout=TIMEOUT)
            want = q.stdout.splitlines()[-1].replace(",", "\t")
            got = query(self.http1, "SELECT count(), sum(length(name)) FROM slice WHERE "
                        "recording = '%s' FORMAT TabSeparated" % rec).strip()
            self.assertEqual(got, want, prog)
            if prog == "apiviews":
                self.assertEqual(int(query(self.http1, "SELECT count() FROM counter WHERE "
                                           "recording = '%s'" % rec)), 115)

    def test_retried_when_clickhouse_takes_it(self):
        """A dump ClickHouse refuses (no such database yet) is kept and
        inserted once it can be: one line when it fails, one when it is
        back, the dump's rows once."""
        query(self.http1, "DROP DATABASE IF EXISTS later")
        serve = Serve(self, "--clickhouse", "http://127.0.0.1:%d/?database=later" % self.http1)
        r = self.run_preload([self.prog("fib-O2"), "13"], dump=serve.addr)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        lines = serve.wait_lines(2)
        self.assertRegex(lines[1], r"^traceagent serve: ClickHouse at \S+ cannot take dumps now "
                         r"\(ClickHouse at \S+ refused an insert: HTTP \d+: .*later.*\); they "
                         r"stay in \S+ and are tried again later$")
        query(self.http1, "CREATE DATABASE later")
        with open(os.path.join(SQL_DIR, "tables.sql")) as f:
            for stmt in f.read().split(";"):
                if stmt.strip():
                    query(self.http1, stmt.replace("CREATE TABLE IF NOT EXISTS ",
                                                   "CREATE TABLE later."))
        lines = serve.wait_lines(4)
        self.assertEqual(serve.stop(), 0)
        lines = serve.lines()
        self.assertEqual(len(lines), 4, lines)
        self.assertRegex(lines[2], r"^traceagent serve: ClickHouse at \S+ takes dumps again$")
        self.assertRegex(lines[3], r" into ClickHouse at .*: %d slices, 2 functions, 1 thread$"
                         % (fib_calls(13) + 1))
        self.assertEqual(int(query(self.http1, "SELECT count() FROM later.slice WHERE name = "
                                   "'fib'")), fib_calls(13))
        query(self.http1, "DROP DATABASE later")

    def test_clickhouse_down(self):
        down = free_port()
        serve = Serve(self, "--clickhouse", "http://127.0.0.1:%d/" % down)
        r = self.run_preload([self.prog("fib-O2"), "14"], dump=serve.addr)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        lines = serve.wait_lines(2)
        self.assertEqual(serve.stop(), 0)
        lines = serve.lines()
        self.assertEqual(len(lines), 3, lines)
        c = parse(lines[0])
        self.assertEqual(c["status"], "complete")
        self.assertRegex(lines[1], r"^traceagent serve: ClickHouse at http://127.0.0.1:%d/ "
                         r"cannot take dumps now \(ClickHouse at \S+ cannot be reached: cannot "
                         r"connect to 127.0.0.1:%d: Connection refused\); they stay in \S+ and "
                         r"are tried again later$" % (down, down))
        self.assertEqual(lines[2], "traceagent serve: %s not inserted into ClickHouse: "
                         "traceagent export --format=clickhouse http://127.0.0.1:%d/ %s inserts "
                         "it" % (c["file"], down, c["file"]))
        rep = self.report(c["file"])
        self.assertEqual((rep["complete"], rep["errors"]), (True, []))
        self.assert_calls(self.functions(rep), {"main": 1, "fib": fib_calls(14)})


class SchemaTest(tahelp.Case):
    """The definitions in sql/clickhouse/ are what the command prints."""

    def test_shipped_schema(self):
        for name, extra in (("tables.sql", []), ("distributed.sql", ["--cluster", "traceagent"])):
            r = subprocess.run([TRACEAGENT, "export", "--format=clickhouse", "--schema"] + extra,
                               capture_output=True, text=True, timeout=TIMEOUT)
            self.assertEqual((r.returncode, r.stderr), (0, ""))
            with open(os.path.join(SQL_DIR, name)) as f:
                self.assertEqual(f.read(), r.stdout, "sql/clickhouse/%s differs from traceagent "
                                 "export --format=clickhouse --schema %s" % (name, " ".join(extra)))
            self.assertIn("ORDER BY (host, pid, ts);", r.stdout)
        self.assertIn("ENGINE = Distributed(traceagent, currentDatabase(), slice_local, "
                      "cityHash64(host, recording));", r.stdout)


if __name__ == "__main__":
    tahelp.main()
