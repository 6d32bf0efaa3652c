# SPDX-License-Identifier: MIT
"""Recording less (issue 21): TRACEAGENT_FILTER (with `!` exclusions),
TRACEAGENT_EXCLUDE and TRACEAGENT_DEPTH, alone and combined, at -O0 and -O2,
on filtertree's known call tree (tests/programs/filtertree.c): exactly the
calls kept and none of the others, every recorded entry with its exit, in
threads and in a forked child; `info` and `report` show the filters; a
pattern naming nothing and a bad value are said in one line; `record`'s
options set them."""

import json
import os
import subprocess
import time

import tahelp
from tahelp import LEVELS

CHUNK_FILTER = 16  # format.h

# The whole tree of `filtertree plain` (the library call usleep included).
WHOLE = {"main": 1, "work": 1, "hash": 5, "leaf": 10, "deep1": 1, "deep2": 1, "deep3": 2,
         "noise": 2, "skipme": 1, "usleep": 2}


class FilterTest(tahelp.Case):

    def run_tree(self, level, env, mode="plain", options=None):
        """filtertree run with the settings env (preloaded), or through
        `traceagent record OPTIONS`; returns the run (stderr checked by
        the caller)."""
        prog = self.prog("filtertree-" + level)
        if options is not None:
            r = self.run_record([prog, mode], options=options, env=env)
        else:
            r = self.run_preload([prog, mode], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "done %s\n" % mode)
        return r

    def report_json(self, dump):
        """The JSON report, and its stderr lines."""
        p = self.report_raw(dump, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout), [l for l in p.stderr.splitlines() if l.strip()]

    def calls(self, rep):
        return {f["name"]: f["calls"] for f in rep["functions"]}

    def check(self, level, env, expected, mode="plain", processes=1, options=None):
        """Exactly the calls expected, whole (every entry with its exit, no
        exit without its entry), and the report's one warning that the
        profile is filtered."""
        r = self.run_tree(level, env, mode, options)
        lines = r.stderr_lines()
        if options is not None:
            self.assertEqual(lines, ["traceagent: dump written to %s" % r.dump])
        else:
            self.assertEqual(lines, [], r.stderr)
        rep, warn = self.report_json(r.dump)
        self.assert_whole(rep, processes)
        self.assertEqual(self.calls(rep), expected)
        self.assertEqual(rep["events"], 2 * sum(expected.values()))
        self.assertEqual(len(warn), 1, warn)
        self.assertIn("filtered at record time: ", warn[0])
        self.assertTrue(warn[0].endswith(": this is not a whole profile"), warn)
        return r, rep

    # -- each setting alone ---------------------------------------------------------

    def test_unfiltered(self):
        """The tree as it is, and no FILTER chunk: nothing says filtered."""
        for level in LEVELS:
            with self.subTest(level=level):
                r = self.run_tree(level, {})
                rep, warn = self.report_json(r.dump)
                self.assertEqual(self.calls(rep), WHOLE)
                self.assertEqual(warn, [])
                self.assertIsNone(rep["filters"])
                self.assertNotIn(CHUNK_FILTER, [c[1] for c in tahelp.chunks(r.dump)])

    def test_filter(self):
        """work and everything it calls, nothing else."""
        for level in LEVELS:
            with self.subTest(level=level):
                self.check(level, {"TRACEAGENT_FILTER": "work"},
                           {"work": 1, "hash": 3, "leaf": 5, "deep1": 1, "deep2": 1, "deep3": 2})

    def test_filter_two_and_library_calls(self):
        """Two patterns, one a glob; the library call under noise is kept
        (it runs under a kept stack), none elsewhere."""
        for level in LEVELS:
            with self.subTest(level=level):
                self.check(level, {"TRACEAGENT_FILTER": "deep3,no*"},
                           {"deep3": 2, "leaf": 6, "noise": 2, "hash": 2, "usleep": 2})

    def test_filter_not(self):
        """!skipme: skipme and all it calls are gone (its noise, leaf,
        hash and usleep); the rest stays."""
        for level in LEVELS:
            with self.subTest(level=level):
                self.check(level, {"TRACEAGENT_FILTER": "!skipme"},
                           {"main": 1, "work": 1, "hash": 4, "leaf": 7, "deep1": 1, "deep2": 1,
                            "deep3": 2, "noise": 1, "usleep": 1})

    def test_exclude(self):
        """hash's own events are gone, its leaf calls stay."""
        for level in LEVELS:
            with self.subTest(level=level):
                exp = dict(WHOLE)
                del exp["hash"]
                self.check(level, {"TRACEAGENT_EXCLUDE": "hash"}, exp)

    def test_exclude_patched_out(self):
        """EXCLUDE alone: the excluded functions' calls to the hooks are
        rewritten into no-ops (info: patched), their callees recorded, the
        counts exact, and no function left to the run-time filter."""
        self.need_feature("hookpatch")
        for level in LEVELS:
            with self.subTest(level=level):
                exp = {k: v for k, v in WHOLE.items() if k not in ("hash", "leaf")}
                r, _ = self.check(level, {"TRACEAGENT_EXCLUDE": "hash,leaf"}, exp)
                p = subprocess.run([tahelp.TRACEAGENT, "info", "--json", r.dump],
                                   env=tahelp.clean_env(), capture_output=True, text=True,
                                   timeout=tahelp.TIMEOUT)
                f = json.loads(p.stdout)["processes"][0]["filters"]
                self.assertEqual(sorted((x["name"], x["how"]) for x in f["functions"]),
                                 [("hash", "patched"), ("leaf", "patched")])
                self.assertEqual((f["patched_out"], f["run_time"]), (2, 0))

    def test_exclude_refused_run_time(self):
        """EXCLUDE of a function the rewrite refuses (coldpart's checked,
        which GCC splits at -O2 into checked and checked.cold): filtered
        at run time instead (info: run-time), nothing of it recorded, its
        callees every time.  At -O0 it has no .cold part: rewritten.  (The
        aarch64 cross compiler makes no .cold part at -O2 either: there
        checked is rewritten at both levels.)"""
        self.need_feature("hookpatch")
        for level in LEVELS:
            with self.subTest(level=level):
                prog = self.prog("coldpart-" + level)
                fns = tahelp.elf_functions(prog)
                cold = "checked.cold" in fns
                if tahelp.elf_machine(prog) == 62:  # EM_X86_64 (the host's may differ)
                    self.assertEqual(cold, level == "O2", sorted(fns))
                how = "run-time" if cold else "patched"
                r = self.run_preload([prog, "10"], env={"TRACEAGENT_EXCLUDE": "checked"})
                self.assertEqual((r.returncode, r.stdout, r.stderr),
                                 (0, "coldpart: 10 calls, 5 odd, total 100\n", ""))
                rep, warn = self.report_json(r.dump)
                self.assert_whole(rep)
                self.assertEqual(self.calls(rep), {"main": 1, "step": 20})
                self.assertEqual(rep["events"], 2 * 21)
                self.assertEqual(len(warn), 1, warn)
                f = self.info(r.dump)["processes"][0]["filters"]
                self.assertEqual([(x["name"], x["how"]) for x in f["functions"]],
                                 [("checked", how)])
                self.assertEqual((f["patched_out"], f["run_time"]),
                                 (1, 0) if how == "patched" else (0, 1))

    def test_depth(self):
        """DEPTH=2: main and its direct callees; noise under skipme and
        usleep under noise are deeper."""
        for level in LEVELS:
            with self.subTest(level=level):
                self.check(level, {"TRACEAGENT_DEPTH": "2"},
                           {"main": 1, "work": 1, "noise": 1, "skipme": 1})

    # -- combined ---------------------------------------------------------------------

    def test_exclude_and_depth(self):
        """The depth counts recorded frames: hash's leaf is at depth 3
        under work, as hash is not recorded."""
        for level in LEVELS:
            with self.subTest(level=level):
                self.check(level, {"TRACEAGENT_EXCLUDE": "hash", "TRACEAGENT_DEPTH": "3"},
                           {"main": 1, "work": 1, "leaf": 6, "deep1": 1, "noise": 2,
                            "skipme": 1, "usleep": 1})

    def test_all_three_threads(self):
        """FILTER with a `!`, EXCLUDE and DEPTH together, in main and two
        threads: work, the leaves of its hash calls, deep1 (deep2 is
        excluded with its callees), three times."""
        for level in LEVELS:
            with self.subTest(level=level):
                env = {"TRACEAGENT_FILTER": "work,!deep2", "TRACEAGENT_EXCLUDE": "hash",
                       "TRACEAGENT_DEPTH": "2"}
                r, rep = self.check(level, env, {"work": 3, "leaf": 9, "deep1": 3},
                                    mode="threads")
                self.assertEqual(rep["threads"], 3)

    def test_filter_threads(self):
        for level in LEVELS:
            with self.subTest(level=level):
                self.check(level, {"TRACEAGENT_FILTER": "work"},
                           {"work": 3, "hash": 9, "leaf": 15, "deep1": 3, "deep2": 3, "deep3": 6},
                           mode="threads")

    def test_fork(self):
        """The child's calls are filtered as the parent's: noise twice in
        the parent, once in the child."""
        for level in LEVELS:
            with self.subTest(level=level):
                self.check(level, {"TRACEAGENT_FILTER": "noise"},
                           {"noise": 3, "hash": 3, "leaf": 6, "usleep": 3}, mode="fork",
                           processes=2)

    def test_fork_inherits_depth(self):
        """The child inherits its parent's frames: forked inside main
        (depth 1), its work is at depth 2 and hash under it at 3, not
        recorded with DEPTH=2."""
        for level in LEVELS:
            with self.subTest(level=level):
                self.check(level, {"TRACEAGENT_DEPTH": "2"},
                           {"main": 1, "work": 2, "noise": 2, "skipme": 1}, mode="fork",
                           processes=2)

    # -- what the views say ------------------------------------------------------------

    def test_info_and_report_show_filters(self):
        env = {"TRACEAGENT_FILTER": "work,!deep2", "TRACEAGENT_EXCLUDE": "hash",
               "TRACEAGENT_DEPTH": "2"}
        r = self.run_tree("O2", env)
        syms = tahelp.elf_symbols(self.prog("filtertree-O2"))
        p = subprocess.run([tahelp.TRACEAGENT, "info", "--json", r.dump], env=tahelp.clean_env(),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        proc = json.loads(p.stdout)["processes"][0]
        f = proc["filters"]
        self.assertEqual((f["filter"], f["exclude"], f["depth"], f["min_duration_ns"]),
                         ("work,!deep2", "hash", 2, 0))
        self.assertEqual(f["run_time"] + f["patched_out"], 3)
        got = {x["name"]: x["kind"] for x in f["functions"]}
        self.assertEqual(got, {"work": "filter", "deep2": "filter-!", "hash": "exclude"})
        for x in f["functions"]:
            self.assertIn(x["how"], ("run-time", "patched"))
            self.assertEqual(os.path.basename(x["module"]), "filtertree-O2")
        text = subprocess.run([tahelp.TRACEAGENT, "info", r.dump], env=tahelp.clean_env(),
                              capture_output=True, text=True, timeout=tahelp.TIMEOUT).stdout
        self.assertIn("  filters:     filter=work,!deep2, exclude=hash, depth=2 (recorded with "
                      "filters: not a whole profile)\n", text)
        self.assertIn("functions: ", text)
        rep = self.report_raw(r.dump)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertEqual(rep.stdout.splitlines()[0],
                         "filtered at record time: filter=work,!deep2, exclude=hash, depth=2: "
                         "this is not a whole profile")
        # Said once, on stdout, by the text report.
        self.assertEqual(rep.stderr, "")
        self.assertTrue(syms["work"])

    def test_pattern_naming_nothing(self):
        """One line for each pattern that names no function; the others
        filter as asked."""
        for setting, value, line in (
                ("TRACEAGENT_FILTER", "nosuch*,work",
                 "traceagent: TRACEAGENT_FILTER: 'nosuch*' names no function; the "
                 "functions the other patterns name are recorded"),
                ("TRACEAGENT_EXCLUDE", "libfoo.so:bar",
                 "traceagent: TRACEAGENT_EXCLUDE: 'libfoo.so:bar' names no function (no module "
                 "of that name was loaded); it excludes nothing")):
            with self.subTest(setting=setting):
                r = self.run_tree("O0", {setting: value})
                self.assertEqual(r.stderr_lines(), [line])
                rep, _ = self.report_json(r.dump)
                if setting == "TRACEAGENT_FILTER":
                    self.assertEqual(self.calls(rep), {"work": 1, "hash": 3, "leaf": 5,
                                                       "deep1": 1, "deep2": 1, "deep3": 2})
                else:
                    self.assertEqual(self.calls(rep), WHOLE)

    def test_filter_naming_nothing(self):
        """A filter none of whose patterns names a function records
        nothing, and says so at the start, not that it filters nothing."""
        r = self.run_tree("O0", {"TRACEAGENT_FILTER": "nosuch*"})
        self.assertEqual(r.stderr_lines(), [
            "traceagent: TRACEAGENT_FILTER: 'nosuch*' names no function; no pattern of it "
            "names a function: nothing is recorded until a function it names is called (in "
            "a library loaded later)"])
        rep, _ = self.report_json(r.dump)
        self.assertEqual(self.calls(rep), {})

    def test_dlopen(self):
        """A library loaded later: its functions are looked up when it
        comes, its calls filtered from its first."""
        lib = tahelp.LIBSAMPLE
        for level in LEVELS:
            for value, expected in (("libsample.so:sample_square",
                                     {"sample_square": 9, "sample_twice": 9}),
                                    ("!libsample.so:sample_square", {"main": 1})):
                with self.subTest(level=level, filter=value):
                    r = self.run_preload([self.prog("dlopen-" + level), lib, "9"],
                                         env={"TRACEAGENT_FILTER": value})
                    self.assertEqual((r.returncode, r.stderr), (0, ""))
                    rep, warn = self.report_json(r.dump)
                    self.assert_whole(rep)
                    self.assertEqual(self.calls(rep), expected)
                    self.assertEqual(len(warn), 1, warn)

    def test_dlopen_exclude_patched(self):
        """EXCLUDE of a function of a library loaded later: its hook calls
        are rewritten when it comes (info: patched), nothing of it is
        recorded, its callee is, every time."""
        self.need_feature("hookpatch")
        lib = tahelp.LIBSAMPLE
        for level in LEVELS:
            for excluded, kept in (("sample_square", "sample_twice"),
                                   ("sample_twice", "sample_square")):
                with self.subTest(level=level, exclude=excluded):
                    r = self.run_preload([self.prog("dlopen-" + level), lib, "9"],
                                         env={"TRACEAGENT_EXCLUDE": "libsample.so:" + excluded})
                    self.assertEqual((r.returncode, r.stderr), (0, ""))
                    rep, warn = self.report_json(r.dump)
                    self.assert_whole(rep)
                    self.assertEqual(self.calls(rep), {"main": 1, kept: 9})
                    self.assertEqual(len(warn), 1, warn)
                    f = self.info(r.dump)["processes"][0]["filters"]
                    self.assertEqual([(x["name"], x["how"], os.path.basename(x["module"]))
                                      for x in f["functions"]],
                                     [(excluded, "patched", "libsample.so")])
                    self.assertEqual((f["patched_out"], f["run_time"]), (1, 0))

    def test_zones(self):
        """Zones follow the stack they run under (apiviews.c: work's zone,
        send_one's zones, one of them with its channel off)."""
        for level in LEVELS:
            for env, expected in (
                    ({"TRACEAGENT_FILTER": "!work"},
                     {"main": 1, "helper": 1, "send_one": 6, "send": 5}),
                    ({"TRACEAGENT_FILTER": "send_one"}, {"send_one": 6, "send": 5}),
                    ({"TRACEAGENT_DEPTH": "1"}, {"main": 1, "helper": 1})):
                with self.subTest(level=level, env=env):
                    r = self.run_preload([self.prog("apiviews-" + level)], env=env)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    rep, warn = self.report_json(r.dump)
                    self.assertEqual(self.calls(rep), expected)
                    for f in rep["functions"]:
                        self.assertEqual(f["open"], 0, f)
                    self.assertEqual(len(warn), 1, warn)

    def test_attach(self):
        """`traceagent attach --exclude`: the injected agent filters too
        (the program's leaf calls are left out, its mid calls kept), and
        the program ends as it would have."""
        self.skip_unless_attach()
        from test_attach import DONE, Target
        t = Target(self, 2)
        dump = self.path("attach.trace")
        p = subprocess.run([tahelp.TRACEAGENT, "attach", str(t.proc.pid), "-o", dump,
                            "--duration", "0.3", "--exclude", "leaf"],
                           env=tahelp.clean_env(), capture_output=True, text=True,
                           timeout=tahelp.TIMEOUT, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        rc, out, err = t.quit()
        self.assertEqual((rc, out.splitlines()[-1] + "\n", err), (0, DONE, ""))
        rep, warn = self.report_json(dump)
        calls = self.calls(rep)
        self.assertNotIn("leaf", calls)
        self.assertGreater(calls.get("mid", 0), 0, calls)
        self.assertEqual(rep["filters"], {"filter": "", "exclude": "leaf", "depth": 0,
                                          "min_duration_ns": 0})

    def test_attach_windows_patch_and_restore(self):
        """Each attach window has its own filters: its excluded functions'
        hook calls are rewritten at its start (the code differs inside the
        window, info says `patched`) and put back at its detach (the code
        read from /proc/PID/mem is byte for byte what it was before the
        first attach); a later window with another --exclude rewrites that
        one, and one without records everything.  attachme with no busy
        thread: mid() and leaf() run only at "time N", counts exact."""
        self.need_feature("hookpatch")
        self.skip_unless_attach()
        from test_attach import DONE, Target
        prog = self.prog("attachme-O2")
        fns = tahelp.elf_functions(prog)
        t = Target(self, 0)
        pid = t.proc.pid
        base, text = self.exe_text(pid, prog)
        bias = base if tahelp.elf_is_pie(prog) else 0

        def code(lo, n):
            with open("/proc/%d/mem" % pid, "rb") as mem:
                mem.seek(lo)
                return mem.read(n)

        def fn_code(name):
            return code(bias + fns[name][0], fns[name][1])

        before = {name: fn_code(name) for name in ("mid", "leaf")}
        text_before = code(*text)
        for exclude, expected in (("leaf", {"mid": 1000}), ("mid", {"leaf": 2000}),
                                  (None, {"mid": 1000, "leaf": 2000})):
            with self.subTest(exclude=exclude):
                dump = self.fresh("win")
                a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(pid), "-o", dump] +
                                     (["--exclude", exclude] if exclude else []),
                                     env=tahelp.clean_env(), stderr=subprocess.PIPE, text=True,
                                     cwd=self.dir)
                try:
                    self.assertIn("attached", tahelp.readline(a.stderr))
                    during = {name: fn_code(name) for name in ("mid", "leaf")}
                    self.assertTrue(t.say("time 1000").startswith("ns "))
                finally:
                    a.send_signal(2)
                    a.communicate(timeout=tahelp.TIMEOUT)
                self.assertEqual(a.returncode, 0)
                for name in ("mid", "leaf"):
                    if name == exclude:
                        self.assertNotEqual(during[name], before[name], name)
                    else:
                        self.assertEqual(during[name], before[name], name)
                self.assertEqual(fn_code("mid"), before["mid"])
                self.assertEqual(fn_code("leaf"), before["leaf"])
                self.assertTrue(code(*text) == text_before,
                                "the executable's code differs after the detach")
                rep, _ = self.report_json(dump)
                got = self.calls(rep)
                self.assertEqual({k: got.get(k, 0) for k in ("mid", "leaf") if got.get(k)},
                                 expected)
                f = self.info(dump)["processes"][0]["filters"]
                if exclude is None:
                    self.assertIsNone(f)
                    continue
                self.assertEqual(f["exclude"], exclude)
                self.assertEqual([(x["name"], x["how"]) for x in f["functions"]],
                                 [(exclude, "patched")])
                self.assertEqual((f["patched_out"], f["run_time"]), (1, 0))
        rc, out, err = t.quit()
        self.assertEqual((rc, out.splitlines()[-1] + "\n", err), (0, DONE, ""))

    def test_attach_windows_frames_left(self):
        """A FILTER match open when a window ends is not open in the next
        window: attachme's main thread enters held() inside a window with
        --filter=held and stays in it (reading commands there) through the
        detach and the next window, with --filter=leaf: there only leaf is
        recorded, not the mid calls that held's match would have kept."""
        self.skip_unless_attach()
        from test_attach import DONE, Target
        t = Target(self, 0)
        for filt, say, expected in (("held", "hold", {"held": 1, "commands": 1}),
                                    ("leaf", "time 1000", {"leaf": 2000})):
            with self.subTest(filter=filt):
                dump = self.fresh("frames")
                a = subprocess.Popen([tahelp.TRACEAGENT, "attach", str(t.proc.pid), "-o", dump,
                                      "--filter", filt], env=tahelp.clean_env(),
                                     stderr=subprocess.PIPE, text=True, cwd=self.dir)
                try:
                    self.assertIn("attached", tahelp.readline(a.stderr))
                    self.assertIn(t.say(say).split()[0], ("holding", "ns"))
                    if say == "hold":
                        # Answered by the commands() that held() calls: it
                        # was entered in this window (it printed "holding"
                        # before, and the window could end first).
                        t.counts()
                finally:
                    a.send_signal(2)
                    a.communicate(timeout=tahelp.TIMEOUT)
                self.assertEqual(a.returncode, 0)
                rep, _ = self.report_json(dump)
                # attachme's 10 ms SIGALRM runs on_alarm on the main thread,
                # inside held() or leaf() at times: under the match, kept.
                calls = {k: v for k, v in self.calls(rep).items() if k != "on_alarm"}
                self.assertEqual(calls, expected)
        self.assertEqual(t.say("release"), "released")
        rc, out, err = t.quit()
        self.assertEqual((rc, out.splitlines()[-1] + "\n", err), (0, DONE, ""))

    def exe_text(self, pid, prog):
        """Where the executable prog is loaded in process pid (its mapping
        at file offset 0), and its executable mapping as (start, length)."""
        real = os.path.realpath(prog)
        base = text = None
        with open("/proc/%d/maps" % pid) as fh:
            for line in fh:
                w = line.split()
                if len(w) < 6 or w[5] != real:
                    continue
                lo, hi = (int(x, 16) for x in w[0].split("-"))
                if int(w[2], 16) == 0 and base is None:
                    base = lo
                if "x" in w[1]:
                    text = (lo, hi - lo)
        self.assertIsNotNone(base)
        self.assertIsNotNone(text)
        return base, text

    def test_bad_values(self):
        """A bad depth or duration: one line, and no limit."""
        for setting, value, line in (
                ("TRACEAGENT_DEPTH", "abc",
                 "traceagent: TRACEAGENT_DEPTH='abc' is not a number of frames from 1 to 65536; "
                 "no depth limit"),
                ("TRACEAGENT_DEPTH", "0",
                 "traceagent: TRACEAGENT_DEPTH='0' is not a number of frames from 1 to 65536; "
                 "no depth limit"),
                ("TRACEAGENT_MIN_DURATION", "10xs",
                 "traceagent: TRACEAGENT_MIN_DURATION='10xs' is not a duration (like 500ns, "
                 "10us, 2ms, 1s; a bare number is nanoseconds); no minimum")):
            with self.subTest(setting=setting, value=value):
                r = self.run_tree("O0", {setting: value})
                self.assertEqual(r.stderr_lines(), [line])
                rep, warn = self.report_json(r.dump)
                self.assertEqual(self.calls(rep), WHOLE)
                self.assertEqual(warn, [])

    def test_bad_patterns(self):
        """A pattern list with nothing in it, longer than the limit, or with
        an empty pattern: one line, and no filter at all (not the rest of
        the list: it may not say what was meant)."""
        for setting in ("TRACEAGENT_FILTER", "TRACEAGENT_EXCLUDE"):
            for value, line in (
                    (",,", "%s=',,' names no pattern; no filter"),
                    ("w" * 1024, "%s is longer than 1023 bytes; no filter"),
                    ("work,,hash", "%s='work,,hash' has an empty pattern; no filter"),
                    ("work,", "%s='work,' has an empty pattern; no filter"),
                    ("!,hash", "%s='!,hash' has an empty pattern; no filter"),
                    ("hash,filtertree-O0:", "%s='hash,filtertree-O0:' has an empty pattern; "
                     "no filter")):
                with self.subTest(setting=setting, value=value[:16]):
                    r = self.run_tree("O0", {setting: value})
                    self.assertEqual(r.stderr_lines(), ["traceagent: " + line % setting])
                    rep, warn = self.report_json(r.dump)
                    self.assertEqual(self.calls(rep), WHOLE)
                    self.assertEqual(warn, [])
                    self.assertIsNone(rep["filters"])

    def test_record_options(self):
        """record's --filter, --exclude, --depth set the variables."""
        for level in LEVELS:
            with self.subTest(level=level):
                self.check(level, {}, {"work": 1, "leaf": 3, "deep1": 1},
                           options=["--filter=work,!deep2", "--exclude", "hash", "--depth=2"])

    def test_record_min_duration_written(self):
        """--min-duration's threshold is in the dump (the flusher applies
        it): info and report say so."""
        r = self.run_tree("O0", {}, options=["--min-duration=10us", "--filter=work"])
        p = subprocess.run([tahelp.TRACEAGENT, "info", "--json", r.dump], env=tahelp.clean_env(),
                           capture_output=True, text=True, timeout=tahelp.TIMEOUT)
        f = json.loads(p.stdout)["processes"][0]["filters"]
        self.assertEqual((f["filter"], f["min_duration_ns"]), ("work", 10000))
        rep = self.report_raw(r.dump)
        self.assertEqual(rep.stdout.splitlines()[0],
                         "filtered at record time: filter=work, min-duration=10us: this is not a "
                         "whole profile")


if __name__ == "__main__":
    tahelp.main()
