# SPDX-License-Identifier: MIT
"""A set-uid or set-gid program is never traced: its settings would come
from a less privileged environment.  The loader ignores LD_PRELOAD paths for
such programs, so the way in is fib-linked, which links the agent itself;
the program is run by an unprivileged uid, with TRACEAGENT_OUTPUT pointing
into a directory anyone may write, and nothing may appear there or in the
working directory (where the default output would go)."""

import os
import shutil
import stat
import subprocess

import tahelp

NOBODY = 65534
RUNNER = 12345  # an unprivileged uid and gid of no one in particular


def as_runner():
    tahelp.no_core()
    os.setgroups([])
    os.setresgid(RUNNER, RUNNER, RUNNER)
    os.setresuid(RUNNER, RUNNER, RUNNER)


class SetuidTest(tahelp.Case):

    def test_setuid_and_setgid_not_traced(self):
        src = self.prog("fib-linked")
        self.skip_if_emulated("qemu-user, started by binfmt_misc, runs set-uid programs "
                              "with the caller's credentials")
        if os.geteuid() != 0:
            self.skipTest("needs root: the set-uid program belongs to another user and is "
                          "run by a third")
        if os.statvfs(self.dir).f_flag & os.ST_NOSUID:
            self.skipTest("%s is on a nosuid file system" % self.dir)
        plain = self.run_plain([self.prog("fib-O2"), "15"])
        self.assertEqual((plain.returncode, plain.stdout), (0, "fib(15) = 610\n"))

        os.chmod(self.dir, 0o755)
        work = self.path("work")
        os.mkdir(work)
        os.chmod(work, 0o777)
        prog = self.path("fib-linked")
        shutil.copy(src, prog)

        # The way in works: not set-uid, the linked agent traces.
        dump = self.path("control.trace")
        r = self.run_plain([prog, "15"], env={"TRACEAGENT_OUTPUT": dump})
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, plain.stdout, ""))
        funcs = self.functions(self.report(dump))
        self.assert_calls(funcs, {"main": 1, "fib": tahelp.fib_calls(15)})

        for kind, owner, mode in (("set-uid", (NOBODY, -1), stat.S_ISUID),
                                  ("set-gid", (-1, NOBODY), stat.S_ISGID)):
            with self.subTest(kind=kind):
                os.chown(prog, 0, 0)
                os.chmod(prog, 0o755)
                os.chown(prog, *owner)
                # After chown, which clears the bit.
                os.chmod(prog, 0o755 | mode)
                self.assertTrue(os.stat(prog).st_mode & mode)
                out = os.path.join(work, "secure.trace")
                p = subprocess.run([prog, "15"], cwd=work, capture_output=True, text=True,
                                   timeout=tahelp.TIMEOUT, preexec_fn=as_runner,
                                   env=tahelp.clean_env({"TRACEAGENT_OUTPUT": out}))
                self.assertEqual((p.returncode, p.stdout, p.stderr), (0, plain.stdout, ""))
                self.assertEqual(os.listdir(work), [], "a %s program was traced" % kind)


if __name__ == "__main__":
    tahelp.main()
