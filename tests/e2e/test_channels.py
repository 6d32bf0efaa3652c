# SPDX-License-Identifier: MIT
"""The manual API's channels (tests/programs/channels.c): switched by
ta_channel_set at known rounds, by TRACEAGENT_CHANNELS at the start, and
by TRACEAGENT_CHANNEL_SIGNAL between TRACEAGENT_CHANNELS and _ALT.  Each
run records exactly the events of the rounds its channels were on, and the
dump's CHANNEL switches say when, in their order with the thread's events.
Without the agent the program prints the same and exits 0."""

import tadump
import tahelp

FUNCTIONS, USER, NET = 0, 1, 6


class ChannelsTest(tahelp.Case):

    def run_channels(self, lvl, mode, env=None, options=None):
        argv = [self.prog("channels-" + lvl), mode]
        if options is not None:
            r = self.traced("record", argv, options=options, env=env)
        else:
            r = self.traced("preload", argv, env=env)
        plain = self.run_plain(argv)
        self.assertEqual((plain.returncode, plain.stderr), (0, ""))
        self.assertEqual(r.stdout, plain.stdout)
        self.assertEqual(r.stdout, "%s: sink 5050\n" % mode)
        rep = self.report(r.dump)
        self.assert_whole(rep)
        return rep, tadump.Read(r.dump)

    def zones(self, rep):
        return {f["name"]: f["calls"] for f in rep["functions"] if f["module"] == "[zone]"}

    def program_functions(self, rep):
        return {f["name"]: f["calls"] for f in rep["functions"] if f["module"] != "[zone]"}

    def test_toggled_by_the_program(self):
        for lvl in tahelp.LEVELS:
            with self.subTest(lvl=lvl):
                rep, d = self.run_channels(lvl, "toggle")
                # net off for rounds 30-59, user off for 40-49, functions
                # off for 10-19.
                self.assertEqual(self.zones(rep), {"send": 70, "work": 90})
                funcs = self.program_functions(rep)
                self.assertEqual(funcs["f"], 90)
                self.assertEqual(funcs["main"], 1)
                self.assertEqual(len(d.ext(tadump.EXT_COUNTER)), 90)
                self.assertEqual(d.channel_id("net"), NET)
                self.assertEqual(d.channels[FUNCTIONS], ("functions", 1))
                self.assertEqual(d.channels[USER], ("user", 1))
                self.assertEqual(d.channels[NET], ("net", 1))
                self.assertEqual(d.ext(tadump.EXT_CHANNEL),
                                 [(FUNCTIONS, 0), (FUNCTIONS, 1), (NET, 0), (USER, 0),
                                  (USER, 1), (NET, 1)])
                self.check_between(d)

    def check_between(self, d):
        """No event of a channel between its off and its on."""
        send, = d.site_named("send")
        work, = d.site_named("work")
        depth, = d.site_named("depth")
        events, = d.events.values()
        on = {FUNCTIONS: 1, USER: 1, NET: 1}
        seen = {"send": 0, "work": 0, "depth": 0}
        for _t, kind, addr, ext, vals in events:
            if kind == tadump.EXT and ext == tadump.EXT_CHANNEL:
                on[vals[0]] = vals[1]
            elif kind == tadump.ENTER and addr == send:
                self.assertTrue(on[NET])
                seen["send"] += 1
            elif kind == tadump.ENTER and addr == work:
                self.assertTrue(on[USER])
                seen["work"] += 1
            elif kind == tadump.EXT and ext == tadump.EXT_COUNTER:
                self.assertEqual(vals[0], depth)
                self.assertTrue(on[USER])
                seen["depth"] += 1
        self.assertEqual(seen, {"send": 70, "work": 90, "depth": 90})

    def test_functions_off_from_the_start(self):
        rep, d = self.run_channels("O2", "plain", {"TRACEAGENT_CHANNELS": "-functions"})
        self.assertEqual(self.zones(rep), {"send": 100, "work": 100})
        self.assertEqual(self.program_functions(rep), {})
        self.assertEqual(d.channels[FUNCTIONS], ("functions", 0))
        self.assertEqual(d.ext(tadump.EXT_CHANNEL), [])

    def test_only_functions(self):
        # A list that starts with a name: only the channels named.
        rep, d = self.run_channels("O2", "plain", {"TRACEAGENT_CHANNELS": "functions"})
        self.assertEqual(self.zones(rep), {})
        self.assertEqual(self.program_functions(rep), {"main": 1, "round_of": 100, "f": 100})
        self.assertEqual(d.ext(tadump.EXT_COUNTER), [])
        self.assertEqual((d.channels[USER], d.channels[NET]), (("user", 0), ("net", 0)))

    def test_all_but_net(self):
        rep, d = self.run_channels("O2", "plain", {"TRACEAGENT_CHANNELS": "all,-net"})
        self.assertEqual(self.zones(rep), {"work": 100})
        self.assertEqual(self.program_functions(rep), {"main": 1, "round_of": 100, "f": 100})
        self.assertEqual(len(d.ext(tadump.EXT_COUNTER)), 100)

    def test_record_channels_option(self):
        rep, _ = self.run_channels("O2", "plain", options=["--channels", "-functions,-user"])
        self.assertEqual(self.zones(rep), {"send": 100})
        self.assertEqual(self.program_functions(rep), {})

    def test_switched_by_signal(self):
        # SIGUSR1 at rounds 25 and 75: the _ALT list (user off), then back.
        for lvl in tahelp.LEVELS:
            with self.subTest(lvl=lvl):
                rep, d = self.run_channels(lvl, "signal", {
                    "TRACEAGENT_CHANNEL_SIGNAL": "USR1", "TRACEAGENT_CHANNELS_ALT": "-user"})
                self.assertEqual(self.zones(rep), {"send": 100, "work": 50})
                self.assertEqual(self.program_functions(rep),
                                 {"main": 1, "round_of": 100, "f": 100, "handled": 2})
                self.assertEqual(len(d.ext(tadump.EXT_COUNTER)), 50)
                self.assertEqual(d.ext(tadump.EXT_CHANNEL), [(USER, 0), (USER, 1)])

    def test_signal_without_the_setting(self):
        # Nobody handles SIGUSR1: the program does not raise it.
        rep, d = self.run_channels("O2", "signal")
        self.assertEqual(self.zones(rep), {"send": 100, "work": 100})
        self.assertEqual(d.ext(tadump.EXT_CHANNEL), [])

    def test_channel_set_result(self):
        plain = self.run_plain([self.prog("channels-O2"), "ret"])
        self.assertEqual((plain.returncode, plain.stdout),
                         (0, "net off -1\nnet on -1\nfresh -1\nnull -1\n"))
        r = self.traced("preload", [self.prog("channels-O2"), "ret"])
        self.assertEqual(r.stdout, "net off 0\nnet on 0\nfresh 0\nnull -1\n")
        d = tadump.Read(r.dump)
        fresh = d.channel_id("fresh")
        self.assertEqual(fresh, NET + 1)
        self.assertEqual(d.ext(tadump.EXT_CHANNEL), [(NET, 0), (NET, 1)])


if __name__ == "__main__":
    tahelp.main()
