# SPDX-License-Identifier: MIT
"""C++: names demangled as c++filt shows them; a function left by an
exception is closed (GCC calls its exit hook while unwinding)."""

import tahelp
from tahelp import LEVELS, MODES

CALLS = {
    "main": 1,
    "ns::Klass::Klass(int)": 1,
    "ns::Klass::method(int)": 4,
    "int ns::twice<int>(int)": 3,
    "double ns::twice<double>(double)": 2,
    "(anonymous namespace)::helper()": 1,
    "ns::fail(int)": 2,
}


class CxxTest(tahelp.Case):

    def test_demangled(self):
        for level in LEVELS:
            for mode in MODES:
                with self.subTest(level=level, mode=mode):
                    r = self.traced(mode, [self.prog("cxx-" + level)])
                    self.assertEqual(r.stdout, "cxx: 54 1.0\n")
                    rep = self.report(r.dump)
                    self.assert_whole(rep)
                    funcs = self.functions(rep)
                    self.assertEqual(sorted(funcs), sorted(CALLS))
                    self.assert_calls(funcs, CALLS)


if __name__ == "__main__":
    tahelp.main()
