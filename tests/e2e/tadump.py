# SPDX-License-Identifier: MIT
"""A writer of small synthetic dumps (format/FORMAT.md), for the tests of the
views that need exact times: the clock is CLOCK_MONOTONIC (clock_source 3),
so ticks are nanoseconds and every duration is known to the nanosecond.
Payloads are stored uncompressed, which the format allows."""

import struct

from tahelp import crc32c

PROCESS, CLOCK, MODULE, THREAD_START, THREAD_NAME, THREAD_END, EVENTS, END = range(1, 9)
CLOCK_MONOTONIC = 3
EXIT, ENTER, EXIT_ADDR = 0, 1, 2
EXT_WAIT = 21  # the agent's wait: start, length (format.h TA_EXT_WAIT)


def u(v):
    """An unsigned LEB128 varint."""
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_u(data, i):
    """The unsigned LEB128 varint at data[i]: (value, the index after it);
    protobuf's varints are the same."""
    v = shift = 0
    while True:
        b = data[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def s(v):
    """A zigzag varint."""
    return u((v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1)


def string(text):
    b = text.encode() if isinstance(text, str) else text
    return u(len(b)) + b


class Dump:
    """A dump being built in memory by one process."""

    def __init__(self, pid=4242):
        self.pid = pid
        self.seq = 0
        self.thread_seq = {}
        head = bytearray(b"TRACEAGT" + struct.pack("<HHIIII", 1, 0, 32, pid, 0, 0))
        head += struct.pack("<I", crc32c(bytes(head)))
        self.data = bytearray(head)

    def chunk(self, ctype, payload):
        head = struct.pack("<IHHIIIII", 0x68634154, ctype, 0, len(payload), len(payload),
                           self.pid, self.seq, 0)
        self.data += head + struct.pack("<I", crc32c(head + payload)) + payload
        self.seq += 1

    def process(self, start_ticks, exe, argv=(), clock_source=CLOCK_MONOTONIC):
        p = (u(self.pid) + u(1) + u(1700000000000000000) + u(start_ticks) + u(clock_source)
             + u(0) + string("x86_64") + string(exe) + u(len(argv))
             + b"".join(string(a) for a in argv) + u(65536) + u(256 << 20) + u(50))
        self.chunk(PROCESS, p)

    def clock(self, pairs):
        """A CLOCK chunk: pairs of (ticks, monotonic ns)."""
        self.chunk(CLOCK, u(len(pairs)) + b"".join(u(t) + u(ns) for t, ns in pairs))

    def module(self, path, bias, start, end, main=True):
        self.chunk(MODULE, u(0) + u(bias) + string(path) + string(b"") + u(1 if main else 0)
                   + u(1) + u(start) + u(end))

    def thread_start(self, tid, ticks, name):
        self.chunk(THREAD_START, u(tid) + u(0) + u(ticks) + string(name))

    def thread_end(self, tid, ticks, events):
        self.chunk(THREAD_END, u(tid) + u(ticks) + u(events) + u(0) + u(0))

    def events(self, tid, evs, stack=()):
        """One EVENTS chunk of thread tid: evs are (ticks, ENTER, addr),
        (ticks, EXIT), (ticks, EXIT_ADDR, addr) or (ticks, EXT, subtype,
        values); stack is the shadow stack at its start."""
        seq = self.thread_seq.get(tid, 0)
        self.thread_seq[tid] = seq + 1
        first = evs[0][0] if evs else 0
        n = len(evs)
        # n_events: five bytes, padded, as the agent patches it in.
        padded = bytes(((n >> (7 * i)) & 0x7F) | (0x80 if i < 4 else 0) for i in range(5))
        p = bytearray(u(tid) + u(seq) + u(first) + padded + u(len(stack)))
        prev = 0
        for a in stack:
            p += s(a - prev)
            prev = a
        p += u(0)
        prev_t, prev_a = first, 0
        for ev in evs:
            p += u((ev[0] - prev_t) << 2 | ev[1])
            prev_t = ev[0]
            if ev[1] in (ENTER, EXIT_ADDR):
                p += s(ev[2] - prev_a)
                prev_a = ev[2]
            elif ev[1] == EXT:
                p += u(ev[2]) + u(len(ev[3])) + b"".join(u(v) for v in ev[3])
        self.chunk(EVENTS, bytes(p))

    def end(self, ticks, events, threads):
        self.chunk(END, u(ticks) + u(ticks) + u(events) + u(0) + u(threads) + u(0))

    def write(self, path):
        with open(path, "wb") as fh:
            fh.write(self.data)


def call_events(call, addr):
    """The events of a call tree: call is (name, enter, exit, [callees]),
    exit None for a call that never returns; addr maps names to addresses."""
    name, t0, t1, callees = call
    out = [(t0, ENTER, addr[name])]
    for c in callees:
        out += call_events(c, addr)
    if t1 is not None:
        out.append((t1, EXIT))
    return out


# -- the sample run the view tests share -------------------------------------

BIAS = 0x555555554000
START = 500  # the process starts here: times in the views count from it

# Thread 101 (main) and thread 102 (worker), in ns; the worker's trunk is
# still running when the dump ends (its thread ends at 9500).
MAIN = ("main", 1000, 10000, [
    ("trunk", 1100, 6000, [
        ("branch", 1200, 3200, [("leaf", 1300, 1800, []), ("leaf", 2000, 3000, [])]),
        ("twig", 4000, 5900, [("bud", 4100, 4150, [])]),
    ]),
    ("trunk", 6100, 9900, [
        ("branch", 6200, 9000, [("leaf", 6300, 8800, [])]),
    ]),
])
WORKER = [("twig", 2000, 2500, [("bud", 2100, 2400, [])]),
          ("trunk", 3000, None, [("leaf", 3100, 3300, [])])]
WORKER_END = 9500


def sample(path, exe):
    """Writes the sample run to path, with exe (the nest program) as its
    module so the names resolve."""
    import tahelp
    syms = tahelp.elf_symbols(exe)
    addr = {name: BIAS + syms[name] for name in ("main", "trunk", "branch", "leaf", "twig", "bud")}
    d = Dump()
    d.process(START, exe, [exe])
    d.module(exe, BIAS, BIAS, BIAS + (1 << 30))
    d.thread_start(101, START, "main")
    d.thread_start(102, 900, "worker")
    main_evs = call_events(MAIN, addr)
    worker_evs = []
    for c in WORKER:
        worker_evs += call_events(c, addr)
    # Two chunks for the main thread: the second starts inside main.
    cut = 9
    d.events(101, main_evs[:cut])
    stack = []
    for ev in main_evs[:cut]:
        if ev[1] == ENTER:
            stack.append(ev[2])
        else:
            stack.pop()
    d.events(102, worker_evs)
    d.events(101, main_evs[cut:], stack)
    d.thread_end(101, 10000, len(main_evs))
    d.thread_end(102, WORKER_END, len(worker_evs))
    d.end(10100, len(main_evs) + len(worker_evs), 2)
    d.write(path)


# -- open and partial calls --------------------------------------------------

def partial_sample(path, exe):
    """Writes a run with calls of each kind a view must count apart, to
    path, with exe (the nest program) as its module.  Thread 101 was
    attached to inside branch and trunk: their exits have no entry (at 1500
    and 2300); leaf (400 ns) and twig (600 ns) are whole; bud, entered at
    2400, is still open when the thread ends at 3000.  Thread 102's first
    chunk begins inside trunk > branch (a flight recorder's cut, at 5000):
    branch ends at 5500 and trunk at 6000, their starts guessed; the two
    leaf calls under them (300 and 100 ns) are whole."""
    import tahelp
    syms = tahelp.elf_symbols(exe)
    addr = {n: BIAS + syms[n] for n in ("main", "trunk", "branch", "leaf", "twig", "bud")}
    d = Dump()
    d.process(START, exe, [exe])
    d.module(exe, BIAS, BIAS, BIAS + (1 << 30))
    d.thread_start(101, START, "main")
    d.thread_start(102, 900, "worker")
    m = [(1000, ENTER, addr["leaf"]), (1400, EXIT), (1500, EXIT_ADDR, addr["branch"]),
         (1600, ENTER, addr["twig"]), (2200, EXIT), (2300, EXIT_ADDR, addr["trunk"]),
         (2400, ENTER, addr["bud"])]
    w = [(5000, ENTER, addr["leaf"]), (5300, EXIT), (5500, EXIT),
         (5600, ENTER, addr["leaf"]), (5700, EXIT), (6000, EXIT)]
    d.events(101, m)
    d.events(102, w, [addr["trunk"], addr["branch"]])
    d.thread_end(101, 3000, len(m))
    d.thread_end(102, 6500, len(w))
    d.end(6600, len(m) + len(w), 2)
    d.write(path)


# -- running the views ----------------------------------------------------------

def view(case, *args, status=0):
    """Runs `traceagent ARGS`, checks the exit status, returns the
    CompletedProcess (text)."""
    import subprocess
    import tahelp
    p = subprocess.run([tahelp.TRACEAGENT] + [str(a) for a in args], env=tahelp.clean_env(),
                       capture_output=True, text=True, timeout=tahelp.TIMEOUT)
    case.assertEqual(p.returncode, status,
                     "traceagent %s: status %d\nstderr:\n%s\nstdout:\n%s" %
                     (" ".join(map(str, args)), p.returncode, p.stderr, p.stdout[:3000]))
    return p


def view_json(case, *args, stderr=""):
    """The JSON a view prints for a whole dump (status 0, nothing on
    stderr but what is given)."""
    import json
    p = view(case, *args)
    case.assertEqual(p.stderr, stderr)
    return json.loads(p.stdout)


def sample_dump(case):
    """The sample run written in the test's scratch directory."""
    path = case.path("sample.trace")
    sample(path, case.prog("nest-O2"))
    return path


def traced_dump(case, prog, *argv, mode="preload"):
    """A dump of a sample program run under the agent."""
    return case.traced(mode, [case.prog(prog)] + list(argv)).dump


def thread_ids(case, dump):
    """Thread name -> tid, from report --threads."""
    rep = case.report(dump, "--threads")
    return {t["name"]: t["tid"] for t in rep["per_thread"]}


# -- a reader ------------------------------------------------------------------
#
# What the views do not show (yet): the SITES and CHANNELS chunks and the EXT
# events of the manual API, read by format's chunk reader and decoder
# (tahelp.read_chunks).

SITES, CHANNELS = 13, 14
EXT = 3
EXT_LOST = 1
# The manual API's EXT kinds (format.h).
(EXT_FRAME, EXT_COUNTER, EXT_MESSAGE, EXT_INSTANT, EXT_ZONE_TEXT, EXT_ZONE_VALUE,
 EXT_CHANNEL, EXT_ZONE_UNMATCHED) = range(12, 20)
TEXT_F_CUT = 1


def _text(s):
    """A string of tadumpread's (a code point a byte) as UTF-8 text."""
    return s.encode("latin-1").decode(errors="replace")


def text_unpack(values):
    """(text, flags) of an EXT text (site, len, flags, bytes 8 a value)."""
    n, flags = values[1], values[2]
    raw = b"".join(v.to_bytes(8, "little") for v in values[3:])
    return raw[:n].decode(errors="replace"), flags


class Read:
    """A dump read: sites {addr: (kind, channel, name, file, line)} (the
    last description), channels {id: (name, first state)}, and events
    {tid: [(ticks, kind, addr, ext, values)]} in order (kind ENTER, EXIT
    or EXT; addr the function entered or exited, 0 for EXT; ext and values
    for EXT)."""

    def __init__(self, path):
        import tahelp
        self.sites, self.channels, self.events = {}, {}, {}
        for c in tahelp.read_chunks(path, records=True):
            for addr, kind, chan, name, file, line in c.get("sites", ()):
                self.sites[addr] = (kind, chan, _text(name), _text(file), line)
            for cid, name, on in c.get("channels", ()):
                self.channels[cid] = (_text(name), on)
            if "events" in c:
                out = self.events.setdefault(c["tid"], [])
                out += [(ticks, kind, addr, ext, tuple(vals))
                        for ticks, kind, addr, ext, vals in c["events"]]

    def all_events(self):
        """Every thread's events, by thread then order."""
        return [e for tid in sorted(self.events) for e in self.events[tid]]

    def ext(self, kind):
        """The values of every EXT event of kind, in order."""
        return [e[4] for e in self.all_events() if e[2] == 0 and e[1] == EXT and e[3] == kind]

    def site_named(self, name, kind=None):
        """The addresses of the sites called name (of kind)."""
        return [a for a, s in self.sites.items() if s[2] == name and kind in (None, s[0])]

    def channel_id(self, name):
        for cid, (n, _) in self.channels.items():
            if n == name:
                return cid
        return None
