# SPDX-License-Identifier: MIT
"""dlopen: libsample.so opened after the program started; its functions
are resolved as when it is linked (test_lib.py).  dlclose: a library closed,
and another mapped later at the same address, each resolve for the events
of their own time."""

import json
import os
import subprocess

import tahelp
from tahelp import LEVELS, MODES


class DlopenTest(tahelp.Case):

    def test_dlopen(self):
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    exe = "dlopen-" + level
                    r = self.traced(mode, [self.prog(exe), tahelp.LIBSAMPLE, "9"])
                    self.assertEqual(r.stdout, "dlopen: 9 calls, sum 204\n")
                    self.check_libsample(self.report(r.dump), 9, exe)

    def test_address_reuse(self):
        alpha = os.path.join(tahelp.PROGRAMS, "libreuse_alpha.so")
        beta = os.path.join(tahelp.PROGRAMS, "libreuse_beta.so")
        syms_a, syms_b = tahelp.elf_symbols(alpha), tahelp.elf_symbols(beta)
        # Same code, other names: the same offsets, so the same addresses.
        self.assertEqual(syms_a["alpha_work"], syms_b["beta_work"])
        self.assertEqual(syms_a["alpha_leaf"], syms_b["beta_leaf"])
        k, m = 3, 5
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    exe = "reuse-" + level
                    argv = [self.prog(exe), alpha, str(k), beta, str(m)]
                    for _ in range(5):
                        r = self.run_mode(mode, argv)
                        if r.returncode != 3:
                            break
                    if r.returncode == 3:
                        self.skipTest("the kernel never mapped the second library where "
                                      "the first was: " + r.stderr)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(r.stderr_lines(), [] if mode == "preload" else
                                     ["traceagent: dump written to %s" % r.dump])
                    self.assertEqual(r.stdout, "reuse: same base, sum %d\n"
                                     % (sum(6 * i + 5 for i in range(k))
                                        + sum(6 * i + 5 for i in range(m))))
                    rep = self.report(r.dump)
                    self.assert_whole(rep)
                    a = self.functions(rep, module="libreuse_alpha.so")
                    b = self.functions(rep, module="libreuse_beta.so")
                    self.assertEqual({n: f["calls"] for n, f in a.items()},
                                     {"alpha_work": k, "alpha_leaf": 2 * k})
                    self.assertEqual({n: f["calls"] for n, f in b.items()},
                                     {"beta_work": m, "beta_leaf": 2 * m})
                    for name, f in list(a.items()) + list(b.items()):
                        self.assertEqual(f["offset"], syms_a.get(name, syms_b.get(name)))
                    self.assert_calls(self.functions(rep, module=exe),
                                      {"main": 1, "open_call": 2})
                    # One MODULE_UNLOAD (chunk type 10) for each library closed.
                    unloads = [c for c in tahelp.chunks(r.dump) if c[1] == 10]
                    self.assertEqual(len(unloads), 2)
                    info = json.loads(subprocess.run(
                        [tahelp.TRACEAGENT, "info", "--json", r.dump], capture_output=True,
                        text=True, env=tahelp.clean_env()).stdout)
                    mods = {os.path.basename(mo["path"]): mo
                            for mo in info["processes"][0]["modules"]}
                    ma, mb = mods["libreuse_alpha.so"], mods["libreuse_beta.so"]
                    self.assertEqual(ma["bias"], mb["bias"])
                    self.assertIsNotNone(ma["unload_ns"])
                    self.assertIsNotNone(mb["unload_ns"])
                    self.assertLessEqual(ma["load_ns"], ma["unload_ns"])
                    self.assertLessEqual(ma["unload_ns"], mb["load_ns"])
                    self.assertIsNone(mods[exe]["unload_ns"])


if __name__ == "__main__":
    tahelp.main()
