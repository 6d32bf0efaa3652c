# SPDX-License-Identifier: MIT
"""export --format=perfetto: decoded by protoc against tests/proto/
perfetto_subset.proto (Perfetto's own names and field numbers), a decoder
that shares nothing with the analyzer's encoder, then replayed as trace
processor reads it (sequences, interned names, incremental clocks,
descriptors): every slice of fib (exact call counts and nesting), the
manual API's instants, counters, frames and zone args (apiviews), and the
same slices as the Chrome export under each filter (a synthetic dump)."""

import json
import os
import shutil
import subprocess
import zlib

import tahelp
import tadump
from tahelp import LEVELS

PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proto")
PROTO = "perfetto_subset.proto"
CLOCK_MONOTONIC, CLOCK_SEQ = 3, 64


def inflate(data):
    """The packets of the export's compressed_packets bundles, as one Trace
    (only this framing is read by hand: the packets go to protoc)."""
    out = bytearray()
    i = 0
    while i < len(data):
        key, i = tadump.read_u(data, i)
        n, i = tadump.read_u(data, i)
        assert key == (1 << 3 | 2), key
        pkt = data[i:i + n]
        i += n
        key, j = tadump.read_u(pkt, 0)
        m, j = tadump.read_u(pkt, j)
        assert key == (50 << 3 | 2) and j + m == len(pkt), (key, j, m, len(pkt))
        out += zlib.decompress(pkt[j:])
    return bytes(out)


def parse_text(text):
    """protoc's text format as nested dicts of lists."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
        elif line.endswith("{"):
            d = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(d)
            stack.append(d)
        else:
            k, v = line.split(": ", 1)
            if v.startswith('"'):
                v = json.loads(v)  # protoc's C escapes of plain text match JSON's
            elif v in ("true", "false"):
                v = v == "true"
            elif v[0].isdigit() or v[0] == "-":
                v = float(v) if any(c in v for c in ".en") and not v.isdigit() else int(v)
            stack[-1].setdefault(k, []).append(v)
    return root


def one(d, k, default=None):
    return d.get(k, [default])[0]


class Trace:
    """A decoded export replayed: slices per track (name, category, start
    and end in ns on CLOCK_MONOTONIC, depth, parent, args), instants,
    counter values, descriptors."""

    def __init__(self, packets):
        self.tracks = {}  # uuid -> descriptor dict
        self.slices = []
        self.instants = []
        self.counters = {}  # track uuid -> [values]
        self.t0 = None
        self.interned = {}  # InternedData field -> entries
        self.seq_times = {}  # sequence id -> its track events' times, in order
        seqs = {}
        open_ = {}  # track uuid -> stack of slices
        for p in packets:
            seq = one(p, "trusted_packet_sequence_id", 0)
            if one(p, "sequence_flags", 0) & 1:
                seqs[seq] = {"names": {}, "cats": {}, "clock": None, "defaults": {},
                             "ann_names": {}, "ann_strings": {}}
            st = seqs.get(seq)
            if "trace_packet_defaults" in p:
                d = p["trace_packet_defaults"][0]
                st["defaults"] = {
                    "clock": one(d, "timestamp_clock_id"),
                    "track": one(one(d, "track_event_defaults", {}), "track_uuid")}
            if "interned_data" in p:
                # Each entry goes out once per sequence (interning is what
                # makes a name cost its bytes once).
                i = p["interned_data"][0]
                for field, key, table in (("event_names", "name", "names"),
                                          ("event_categories", "name", "cats"),
                                          ("debug_annotation_names", "name", "ann_names"),
                                          ("debug_annotation_string_values", "str",
                                           "ann_strings")):
                    for e in i.get(field, []):
                        iid = one(e, "iid")
                        assert iid not in st[table], (field, iid, "sent twice")
                        st[table][iid] = one(e, key)
                        self.interned[field] = self.interned.get(field, 0) + 1
            if "clock_snapshot" in p:
                for c in p["clock_snapshot"][0]["clocks"]:
                    if one(c, "clock_id") == CLOCK_MONOTONIC and seq == 1:
                        self.t0 = one(c, "timestamp")
                    if one(c, "clock_id") == CLOCK_SEQ:
                        assert one(c, "is_incremental")
                        st["clock"] = one(c, "timestamp")
                continue
            if "track_descriptor" in p:
                d = p["track_descriptor"][0]
                self.tracks[one(d, "uuid")] = d
                continue
            te = one(p, "track_event")
            if te is None:
                continue
            clock = one(p, "timestamp_clock_id") or st["defaults"].get("clock")
            ts = one(p, "timestamp")
            if clock == CLOCK_SEQ:
                st["clock"] += ts
                ts = st["clock"]
            else:
                assert clock == CLOCK_MONOTONIC, clock
            self.seq_times.setdefault(seq, []).append(ts)
            track = one(te, "track_uuid") or st["defaults"]["track"]
            kind = one(te, "type")
            iid = one(te, "name_iid")
            name = one(te, "name") or (st["names"][iid] if iid is not None else None)
            args = {}
            for a in te.get("debug_annotations", []):
                k = one(a, "name") or st["ann_names"][one(a, "name_iid")]
                if "string_value_iid" in a:
                    args[k] = st["ann_strings"][one(a, "string_value_iid")]
                else:
                    args[k] = [v for f, v in a.items() if f.endswith("_value")][0][0]
            # A thread's slices (calls and zones) name themselves by iid.
            if kind == "TYPE_SLICE_BEGIN" and track == st["defaults"]["track"]:
                assert "name_iid" in te and "name" not in te, te
            stack = open_.setdefault(track, [])
            if kind == "TYPE_SLICE_BEGIN":
                s = {"track": track, "name": name, "start": ts, "depth": len(stack),
                     "parent": stack[-1]["name"] if stack else None, "args": dict(args),
                     "cat": [st["cats"][c] for c in te.get("category_iids", [])]}
                stack.append(s)
                self.slices.append(s)
            elif kind == "TYPE_SLICE_END":
                s = stack.pop()
                s["end"] = ts
                s["args"].update(args)
                assert s["end"] >= s["start"]
            elif kind == "TYPE_INSTANT":
                self.instants.append((track, name, ts, args))
            elif kind == "TYPE_COUNTER":
                self.counters.setdefault(track, []).append(
                    one(te, "counter_value", one(te, "double_counter_value")))
        assert all(not s for s in open_.values()), "slices without an END"

    def threads(self):
        return {u: d["thread"][0] for u, d in self.tracks.items() if "thread" in d}

    def processes(self):
        return {u: d["process"][0] for u, d in self.tracks.items() if "process" in d}


class PerfettoTest(tahelp.Case):

    def setUp(self):
        super().setUp()
        if not shutil.which("protoc"):
            self.skipTest("protoc not installed (Debian: protobuf-compiler)")

    def export(self, dump, *options, stderr=""):
        out = self.fresh("perfetto") + ".pftrace"
        p = tadump.view(self, "export", "--format=perfetto", "-o", out, *options, dump)
        self.assertEqual((p.stdout, p.stderr), ("", stderr))
        with open(out, "rb") as fh:
            raw = inflate(fh.read())
        d = subprocess.run(["protoc", "--proto_path=" + PROTO_DIR,
                            "--decode=perfetto.protos.Trace", PROTO],
                           input=raw, capture_output=True, timeout=tahelp.TIMEOUT)
        self.assertEqual(d.returncode, 0, d.stderr)
        self.assertEqual(d.stderr, b"")
        return Trace(parse_text(d.stdout.decode())["packet"])

    def test_open_and_partial(self):
        """A call still open at the end has the annotation "open" on its
        end, one whose start is a guess "partial" (tadump.partial_sample);
        calls without an entry have no slice, as the warning says."""
        dump = self.path("partial.trace")
        tadump.partial_sample(dump, self.prog("nest-O2"))
        tr = self.export(dump, stderr="traceagent: %s: warning: 2 function exits without a "
                         "recorded entry were ignored\n" % dump)
        got = sorted((s["name"], s["end"] - s["start"], "open" in s["args"],
                      "partial" in s["args"]) for s in tr.slices)
        self.assertEqual(got, [("branch", 500, False, True), ("bud", 600, True, False),
                               ("leaf", 100, False, False), ("leaf", 300, False, False),
                               ("leaf", 400, False, False), ("trunk", 1000, False, True),
                               ("twig", 600, False, False)])

    def test_fib(self):
        n = 12
        for level in LEVELS:
            with self.subTest(level=level):
                prog = "fib-" + level
                dump = tadump.traced_dump(self, prog, str(n))
                tr = self.export(dump)
                funcs = self.functions(self.report(dump))
                names = [s["name"] for s in tr.slices]
                self.assertEqual((names.count("main"), names.count("fib")),
                                 (1, tahelp.fib_calls(n)))
                self.assertEqual(len(names), 1 + tahelp.fib_calls(n))
                for s in tr.slices:
                    self.assertEqual(s["cat"], ["function," + prog])
                    # The module, an annotation whose name and value are interned.
                    self.assertEqual(s["args"], {"module": prog})
                    self.assertEqual(s["parent"], None if s["name"] == "main"
                                     else "main" if s["depth"] == 1 else "fib")
                # Two function names, one category, one module: each once.
                self.assertEqual(tr.interned, {"event_names": 2, "event_categories": 1,
                                               "debug_annotation_names": 1,
                                               "debug_annotation_string_values": 1})
                # fib(n) recurses n levels under main.
                self.assertEqual(max(s["depth"] for s in tr.slices), n)
                main = [s for s in tr.slices if s["name"] == "main"][0]
                self.assertLessEqual(abs(main["end"] - main["start"] -
                                         funcs["main"]["total_ns"]), 1)
                self.assertGreaterEqual(main["start"], tr.t0)
                # One thread track, in one process described with its command line.
                threads = tr.threads()
                procs = tr.processes()
                self.assertEqual(len(threads), 1)
                self.assertEqual(len(procs), 1)
                (uuid, th), = threads.items()
                proc = list(procs.values())[0]
                self.assertEqual({s["track"] for s in tr.slices}, {uuid})
                self.assertEqual(one(th, "pid"), one(th, "tid"))
                self.assertEqual(one(th, "pid"), one(proc, "pid"))
                self.assertEqual(one(th, "thread_name"), prog)
                self.assertEqual(one(proc, "process_name"), prog)
                self.assertEqual(proc["cmdline"][1:], [str(n)])
                self.assertEqual(one(tr.tracks[uuid], "parent_uuid"),
                                 [u for u in procs][0])

    def test_apiviews(self):
        dump = tadump.traced_dump(self, "apiviews-O2")
        tr = self.export(dump)
        inst = sorted(i[1] for i in tr.instants)
        self.assertEqual(inst, sorted(["helper up", "level three loaded", "score 42",
                                       "checkpoint", "helper done", "channel net off",
                                       "channel net on", "zone end without a zone"]))
        chans = {i[1]: i[3].get("channel") for i in tr.instants}
        self.assertEqual((chans["checkpoint"], chans["score 42"]), ("user", "user"))
        counters = {one(tr.tracks[u], "name"): v for u, v in tr.counters.items()}
        self.assertEqual(counters, {"queue": list(range(100)),
                                    "ratio": [i / 4.0 for i in range(10)],
                                    "sent": [1, 2, 3, 4, 5]})
        for u in tr.counters:
            self.assertIn("counter", tr.tracks[u])
        frame_tracks = [u for u, d in tr.tracks.items() if one(d, "name") == "frames: frame"]
        self.assertEqual(len(frame_tracks), 1)
        frames = [s for s in tr.slices if s["track"] == frame_tracks[0]]
        # Frame 0 from the marking thread's first event, as `frames` has it.
        self.assertEqual([s["name"] for s in frames], ["frame 0", "frame 1", "frame 2", "frame 3"])
        for a, b in zip(frames, frames[1:]):
            self.assertEqual(a["end"], b["start"])
        zones = [s for s in tr.slices if s["cat"] == ["zone"]]
        self.assertEqual(sorted(s["name"] for s in zones), ["send"] * 5 + ["work"])
        work = [s for s in zones if s["name"] == "work"][0]
        self.assertEqual(work["args"], {"text": "item 7", "value": 7, "module": "[zone]"})
        self.assertEqual([s["args"] for s in zones if s["name"] == "send"],
                         [{"module": "[zone]"}] * 5)
        # checkpoint is inside work, on the same thread track.
        cp = [i for i in tr.instants if i[1] == "checkpoint"][0]
        self.assertEqual(cp[0], work["track"])
        self.assertTrue(work["start"] <= cp[2] <= work["end"])
        self.assertEqual(len(tr.threads()), 2)

    def test_frames_as_frames(self):
        """gameloop's frame sets (60 frames of the main thread, 120 of the
        physics thread): the Chrome and the Perfetto export have each frame
        `traceagent frames` counts, frame 0 too, at the same times, and no
        sequence of the Perfetto export goes back in time."""
        dump = tadump.traced_dump(self, "gameloop-O2")
        p = tadump.view(self, "frames", "--json", "--budget=1ns", dump)
        sets = {s["name"]: s for s in json.loads(p.stdout)["frame_sets"]}
        self.assertEqual({k: s["count"] for k, s in sets.items()},
                         {"frame": 60, "physics": 120})
        # --budget=1ns: every frame is a hitch, with its start and length.
        want = {k: [(h["start_ns"], h["duration_ns"]) for h in s["hitches"]]
                for k, s in sets.items()}
        out = self.fresh("chrome") + ".json"
        tadump.view(self, "export", "--format=chrome", "-o", out, dump)
        with open(out) as fh:
            doc = json.load(fh)
        tracks = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
                  if e["ph"] == "M" and e["name"] == "thread_name"}
        chrome = {}
        for e in doc["traceEvents"]:
            if e.get("cat") == "frame":
                self.assertEqual(e["ph"], "X")
                chrome.setdefault(tracks[e["tid"]], []).append(e)
        self.assertEqual(sorted(chrome), ["frames: frame", "frames: physics"])
        tr = self.export(dump)
        names = {u: one(d, "name") for u, d in tr.tracks.items()}
        pf = {}
        for sl in tr.slices:
            if (names.get(sl["track"]) or "").startswith("frames: "):
                pf.setdefault(names[sl["track"]], []).append(sl)
        for name, s in sets.items():
            with self.subTest(set=name):
                c = chrome["frames: " + name]
                self.assertEqual(len(c), s["count"])
                self.assertEqual([e["name"] for e in c],
                                 ["%s %d" % (name, i) for i in range(s["count"])])
                # Microseconds with three decimals: ns.  A length is the
                # difference of its ends, each rounded to the ns: 1 ns off
                # the length rounded on its own at most.
                got = [(round(e["ts"] * 1000), round(e["dur"] * 1000)) for e in c]
                self.assertEqual([g[0] for g in got], [w[0] for w in want[name]])
                for g, w in zip(got, want[name]):
                    self.assertLessEqual(abs(g[1] - w[1]), 1, (g, w))
                f = pf["frames: " + name]
                self.assertEqual(len(f), s["count"])
                self.assertEqual([sl["name"] for sl in f], [e["name"] for e in c])
                self.assertEqual([(sl["start"] - tr.t0, sl["end"] - sl["start"]) for sl in f],
                                 got)
        for seq, times in tr.seq_times.items():
            back = [(a, b) for a, b in zip(times, times[1:]) if b < a]
            self.assertEqual(back, [], "sequence %d goes back in time" % seq)

    def test_filters_as_chrome(self):
        """The slices of a synthetic dump, whole and under each filter, are
        the Chrome export's to the ns."""
        dump = tadump.sample_dump(self)
        for opts in ([], ["--tid=101"], ["--min-duration=2.5us"], ["--time-range=1us-3us"],
                     ["--time-range=5us-"]):
            with self.subTest(opts=opts):
                tr = self.export(dump, *opts)
                out = self.fresh("chrome") + ".json"
                tadump.view(self, "export", "--format=chrome", "-o", out, *opts, dump)
                with open(out) as fh:
                    doc = json.load(fh)
                want = sorted((x["tid"], x["name"], round(x["ts"] * 1000),
                               round(x["dur"] * 1000), x["cat"].endswith(",open"))
                              for x in doc["traceEvents"] if x["ph"] == "X")
                tids = {u: one(t, "tid") for u, t in tr.threads().items()}
                got = sorted((tids[s["track"]], s["name"], s["start"] - tr.t0,
                              s["end"] - s["start"], "open" in s["args"]) for s in tr.slices)
                self.assertEqual(got, want)
                self.assertTrue(got)


if __name__ == "__main__":
    tahelp.main()
