# SPDX-License-Identifier: MIT
"""The analyses of TRACEAGENT_EXCLUDE's hook-call rewrite kept on disk
(issue 35; agent/hookpatch_cache.c): a run that finds its module's file
rewrites the same calls as one that decodes them (same patches, exact
counts), and takes what the file says (a refusal kept there is obeyed);
a file made for another build of the module, a changed or truncated file,
a cache directory that cannot be made, and two first runs at once each
give the decoded result, say nothing, and leave a valid file."""

import json
import os
import shutil
import struct
import subprocess

import tahelp
from tahelp import LEVELS

# The tree of `filtertree plain` less hash and leaf (test_filter.py's).
KEPT = {"main": 1, "work": 1, "deep1": 1, "deep2": 1, "deep3": 2, "noise": 2, "skipme": 1,
        "usleep": 2}
HDR = struct.Struct("<8sII32sQQQQ")
ENT = struct.Struct("<QQQQiI")
SITE = 32
ENOTSUP = 95


def read_cache(path):
    """(header fields, [(entry fields, [site bytes])]) of a cache file."""
    with open(path, "rb") as f:
        data = f.read()
    h = HDR.unpack_from(data, 0)
    nent, nsites = h[5], h[6]
    assert len(data) == HDR.size + nent * ENT.size + nsites * SITE, path
    assert tahelp.crc32c(data[HDR.size:]) == h[7], path
    ents, at = [], HDR.size + nent * ENT.size
    for i in range(nent):
        e = ENT.unpack_from(data, HDR.size + i * ENT.size)
        k = max(e[4], 0) + e[5]
        ents.append((e, [data[at + j * SITE:at + (j + 1) * SITE] for j in range(k)]))
        at += k * SITE
    return h, ents


def write_cache(path, h, ents):
    body = b"".join(ENT.pack(*e) for e, _ in ents) + b"".join(b"".join(s) for _, s in ents)
    nsites = sum(len(s) for _, s in ents)
    with open(path, "wb") as f:
        f.write(HDR.pack(h[0], h[1], h[2], h[3], h[4], len(ents), nsites, tahelp.crc32c(body)) + body)


class HpCacheTest(tahelp.Case):

    def setUp(self):
        super().setUp()
        self.need_feature("hookpatch")

    def run_excl(self, level, cache, excl="hash,leaf"):
        """filtertree with EXCLUDE=excl and the cache in directory cache:
        nothing said, the exact calls; the functions' ways (info)."""
        r = self.run_preload([self.prog("filtertree-" + level), "plain"],
                             env={"TRACEAGENT_EXCLUDE": excl, "TRACEAGENT_CACHE": cache})
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "done plain\n", ""))
        return self.result(r.dump)

    def result(self, dump):
        p = self.report_raw(dump, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        self.assert_whole(rep)
        calls = {f["name"]: f["calls"] for f in rep["functions"]}
        self.assertEqual(rep["events"], 2 * sum(calls.values()))
        f = self.info(dump)["processes"][0]["filters"]
        return calls, sorted((x["name"], x["how"]) for x in f["functions"])

    def files(self, cache):
        return sorted(n for n in os.listdir(cache)) if os.path.isdir(cache) else []

    def one_file(self, cache):
        names = self.files(cache)
        self.assertEqual(len(names), 1, names)
        self.assertTrue(names[0].endswith(".hpc"), names)
        return os.path.join(cache, names[0])

    def test_hit_same_as_miss(self):
        """The first run decodes and writes the file (one entry per
        excluded function, each with its enter and exit calls); the next
        ones read it: same patches, same counts, the file unchanged."""
        for level in LEVELS:
            with self.subTest(level=level):
                cache = self.path("c-" + level)
                want = (KEPT, [("hash", "patched"), ("leaf", "patched")])
                self.assertEqual(self.run_excl(level, cache), want)
                path = self.one_file(cache)
                h, ents = read_cache(path)
                fns = tahelp.elf_functions(self.prog("filtertree-" + level))
                self.assertEqual(sorted((e[0], e[1]) for e, _ in ents),
                                 sorted([fns["hash"], fns["leaf"]]))
                for e, sites in ents:
                    self.assertGreaterEqual(e[4], 2)
                    kinds = sorted(s[9] for s in sites)
                    self.assertEqual(kinds[0], 0)  # an enter call
                    self.assertGreaterEqual(kinds[-1], 1)  # an exit or tail jump
                with open(path, "rb") as f:
                    before = f.read()
                st = os.stat(path)
                for _ in range(2):
                    self.assertEqual(self.run_excl(level, cache), want)
                with open(path, "rb") as f:
                    self.assertEqual(f.read(), before)
                # A hit writes nothing: the same file, not a new one renamed.
                self.assertEqual(os.stat(path).st_ino, st.st_ino)

    def test_library_read_values(self):
        """A library's function (libsample.so, -fPIC: its own address
        loaded from its GOT, an interposable symbol): the entry keeps the
        GOT values the decoder read; a run that finds them the same uses
        it (a refusal written there is obeyed), one where a value differs
        decodes again (patched) and writes the entry anew."""
        lib = tahelp.LIBSAMPLE
        cache = self.path("c")
        prog = self.prog("dlopen-O2")
        env = {"TRACEAGENT_EXCLUDE": "libsample.so:sample_square", "TRACEAGENT_CACHE": cache}

        def run():
            r = self.run_preload([prog, lib, "9"], env=env)
            self.assertEqual((r.returncode, r.stderr), (0, ""))
            calls, how = self.result(r.dump)
            self.assertEqual(calls, {"main": 1, "sample_twice": 9})
            return how

        self.assertEqual(run(), [("sample_square", "patched")])
        path = self.one_file(cache)
        with open(path, "rb") as f:
            good = f.read()
        h, ents = read_cache(path)
        self.assertEqual(len(ents), 1)
        (e, sites), = ents
        reads = sites[max(e[4], 0):]
        self.assertEqual(len(reads), e[5])
        if tahelp.elf_machine(lib) == 62:  # EM_X86_64: mov sample_square@GOTPCREL(%rip)
            self.assertGreaterEqual(e[5], 1)
        self.assertEqual(run(), [("sample_square", "patched")])
        # The same values read: the refusal is taken.
        write_cache(path, h, [((e[0], e[1], 0, e[3], -ENOTSUP, e[5]), reads)])
        self.assertEqual(run(), [("sample_square", "run-time")])
        if e[5]:
            # A value that is not the GOT's now: decoded again.
            bad = [r[:16] + bytes([r[16] ^ 0x40]) + r[17:] for r in reads]
            write_cache(path, h, [((e[0], e[1], 0, e[3], -ENOTSUP, e[5]), bad)])
            self.assertEqual(run(), [("sample_square", "patched")])
            with open(path, "rb") as f:
                self.assertEqual(f.read(), good)

    def test_entry_obeyed(self):
        """The file is what a run goes by: hash's entry made a refusal
        (as the decoder gives for a call it cannot rewrite) is filtered at
        run time, with the same counts; leaf still patched."""
        level = "O2"
        cache = self.path("c")
        self.run_excl(level, cache)
        path = self.one_file(cache)
        h, ents = read_cache(path)
        off = tahelp.elf_functions(self.prog("filtertree-" + level))["hash"][0]
        ents = [((e[0], e[1], 0, e[3], -ENOTSUP, 0), []) if e[0] == off else (e, s)
                for e, s in ents]
        write_cache(path, h, ents)
        self.assertEqual(self.run_excl(level, cache),
                         (KEPT, [("hash", "run-time"), ("leaf", "patched")]))

    def test_other_build_ignored(self):
        """A file for the build-id whose module file has another size (a
        rebuilt module), or whose calls are not the code's bytes (made for
        other code): ignored, the functions decoded (patched, exact counts)
        and the file written anew for this build."""
        level = "O2"
        cache = self.path("c")
        self.run_excl(level, cache)
        path = self.one_file(cache)
        with open(path, "rb") as f:
            good = f.read()
        h, ents = read_cache(path)
        refused = [((e[0], e[1], 0, e[3], -ENOTSUP, 0), []) for e, _ in ents]
        # Another file size, every function refused: were it used, both
        # would be filtered at run time.
        write_cache(path, h[:4] + (h[4] + 1,) + h[5:], refused)
        self.assertEqual(self.run_excl(level, cache),
                         (KEPT, [("hash", "patched"), ("leaf", "patched")]))
        with open(path, "rb") as f:
            self.assertEqual(f.read(), good)
        # Made from other bytes (their hash): ignored too.
        write_cache(path, h, [((e[0], e[1], 0, e[3] ^ 1, -ENOTSUP, 0), []) for e, _ in ents])
        self.assertEqual(self.run_excl(level, cache),
                         (KEPT, [("hash", "patched"), ("leaf", "patched")]))
        # The calls' bytes not the code's (orig[0], at 16 in a call).
        write_cache(path, h, [(e, [c[:16] + bytes([c[16] ^ 0xff]) + c[17:] for c in sites])
                              for e, sites in ents])
        self.assertEqual(self.run_excl(level, cache),
                         (KEPT, [("hash", "patched"), ("leaf", "patched")]))
        with open(path, "rb") as f:
            self.assertEqual(f.read(), good)
        # The other level's program: a build-id of its own, a file of its own.
        other = "O0" if level == "O2" else "O2"
        self.run_excl(other, cache)
        self.assertEqual(len(self.files(cache)), 2)

    def test_corrupt_ignored(self):
        """A truncated file, one with a byte changed, one of another
        version, garbage: ignored, nothing said, and replaced by a valid
        one."""
        level = "O2"
        cache = self.path("c")
        self.run_excl(level, cache)
        path = self.one_file(cache)
        with open(path, "rb") as f:
            good = f.read()
        bad = [good[:len(good) - 1], good[:40], b"",
               good[:100] + bytes([good[100] ^ 1]) + good[101:],
               good[:8] + struct.pack("<I", 99) + good[12:],
               b"\xff" * len(good)]
        for i, data in enumerate(bad):
            with self.subTest(case=i):
                with open(path, "wb") as f:
                    f.write(data)
                self.assertEqual(self.run_excl(level, cache),
                                 (KEPT, [("hash", "patched"), ("leaf", "patched")]))
                with open(path, "rb") as f:
                    self.assertEqual(f.read(), good)

    def test_no_directory(self):
        """A cache directory that cannot be made (its parent a file; what
        a read-only home gives): decoded, nothing said, nothing made.
        TRACEAGENT_CACHE=off: no file either."""
        block = self.path("file")
        with open(block, "w") as f:
            f.write("x")
        cache = os.path.join(block, "cache")
        for c in (cache, "off"):
            with self.subTest(cache=c):
                self.assertEqual(self.run_excl("O2", c),
                                 (KEPT, [("hash", "patched"), ("leaf", "patched")]))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "off")))
        # Read-only for a user other than root: mode 0500.
        ro = self.path("ro")
        os.mkdir(ro, 0o500)
        self.assertEqual(self.run_excl("O2", ro),
                         (KEPT, [("hash", "patched"), ("leaf", "patched")]))
        if os.geteuid() != 0:
            self.assertEqual(self.files(ro), [])

    def test_default_directory(self):
        """Without TRACEAGENT_CACHE: $XDG_CACHE_HOME/traceagent, else
        $HOME/.cache/traceagent."""
        xdg, home = self.path("xdg"), self.path("home")
        os.mkdir(home)
        prog = self.prog("filtertree-O2")
        for env, where in (({"XDG_CACHE_HOME": xdg, "HOME": home}, os.path.join(xdg, "traceagent")),
                           ({"XDG_CACHE_HOME": "", "HOME": home},
                            os.path.join(home, ".cache", "traceagent"))):
            r = self.run_preload([prog, "plain"], env=dict(env, TRACEAGENT_EXCLUDE="hash,leaf"))
            self.assertEqual((r.returncode, r.stderr), (0, ""))
            self.one_file(where)

    def test_concurrent_first_runs(self):
        """Four first runs at once on an empty directory: each patched with
        the exact counts, and one whole file left (no temporary ones), the
        same a single run writes."""
        level = "O2"
        single = self.path("single")
        self.run_excl(level, single)
        with open(self.one_file(single), "rb") as f:
            good = f.read()
        cache = self.path("c")
        prog = self.prog("filtertree-" + level)
        procs = []
        for i in range(4):
            dump = self.path("con-%d.trace" % i)
            env = tahelp.clean_env({"LD_PRELOAD": tahelp.AGENT, "TRACEAGENT_OUTPUT": dump,
                                    "TRACEAGENT_EXCLUDE": "hash,leaf",
                                    "TRACEAGENT_CACHE": cache})
            procs.append((subprocess.Popen([prog, "plain"], env=env, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True, cwd=self.dir),
                          dump))
        for p, dump in procs:
            out, err = p.communicate(timeout=tahelp.TIMEOUT)
            self.assertEqual((p.returncode, out, err), (0, "done plain\n", ""))
            self.assertEqual(self.result(dump),
                             (KEPT, [("hash", "patched"), ("leaf", "patched")]))
        with open(self.one_file(cache), "rb") as f:
            self.assertEqual(f.read(), good)


if __name__ == "__main__":
    tahelp.main()
