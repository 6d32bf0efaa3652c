/* SPDX-License-Identifier: MIT */
/*
 * session.h - the decoded model of a dump, built in one streaming pass.
 *
 * A session holds what the metadata chunks say (processes, modules, clock
 * pairs, threads) and, while EVENTS chunks go by, one call stack per thread
 * rebuilt from the events.  Each call is handed to a visitor as it enters
 * and exits, with its duration and self time in ticks, so every subcommand
 * (report, and later graph, replay, flame) shares this one walk.  Nothing
 * is kept per event: memory grows with threads, stack depth and modules,
 * not with the length of the trace.
 *
 * Times are ticks (the process's raw counter) until ta_session_finish has
 * seen all CLOCK pairs; then ta_process_dur_ns / ta_process_ticks_ns convert.
 */
#ifndef TA_SESSION_H
#define TA_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dumpfile.h"
#include "format.h"
#include "htab.h"

struct ta_resolver;
struct ta_symstore;

struct ta_clock_pair {
	uint64_t ticks, ns;
};

struct ta_range {
	uint64_t start, end; /* runtime addresses [start, end) */
};

struct ta_sess_module {
	char *path;
	uint8_t *build_id;
	size_t build_id_len;
	uint64_t bias; /* runtime address = st_value + bias */
	uint64_t load_ticks;
	uint64_t unload_ticks; /* MODULE_UNLOAD's time; UINT64_MAX while loaded */
	uint64_t flags;	       /* bit 0: the main executable */
	struct ta_range *ranges;
	size_t nranges;
};

/* An interposed library function (LIBCALLS chunk): its zones are frames
 * at addr. */
struct ta_libcall {
	uint64_t addr;
	char *name;
	uint32_t cls;	/* TA_LC_* */
	uint32_t index; /* its position in the chunk: the same in every process
			   of one agent build */
};

/* A call site of the manual API (SITES chunk, since 1.5). */
struct ta_site {
	uint64_t addr;
	uint32_t kind;	  /* enum ta_site_kind */
	uint32_t channel; /* id in the process's channels */
	uint32_t line;
	char *name, *file;
	char *where;  /* "file:line" */
	uint64_t id;  /* of (kind, name, file, line): the same site in every process */
	uint64_t seq; /* order of description: a later one replaces an earlier */
};

/* A channel (CHANNELS chunk, since 1.5). */
struct ta_channel {
	char *name; /* NULL: no CHANNELS chunk named this id */
	int on;	    /* its state when first described */
};

struct ta_modrange {
	uint64_t start, end;
	const struct ta_sess_module *m;
};

/* One image's command line (struct ta_process's cmds). */
struct ta_image_cmd {
	char **argv;
	size_t argc;
};

/* A KEEP chunk (1.10, TRACEAGENT_KEEP=slow-frames:...): the dump holds the
 * events of the windows [lo[i], hi[i]] (ticks) alone, and the calls open
 * across their edges. */
struct ta_keep_info {
	uint64_t budget_ns, before;
	char *set; /* the set judged ("" when no mark was made) */
	uint64_t frames_seen, frames_slow, frames_kept;
	uint64_t let_go, let_go_early; /* events let go; of them, before being judged */
	uint64_t windows_partial;      /* windows reaching back where events were let go early */
	uint64_t windows_lost;	       /* windows the agent had no room for */
	uint64_t marks_unjudged;       /* marks made while another was being judged */
	size_t nwin;
	uint64_t *lo, *hi;
};
void ta_keep_info_free(struct ta_keep_info *k);
/* Whether [from, to] lies inside one window of k. */
int ta_keep_kept(const struct ta_keep_info *k, uint64_t from, uint64_t to);
/* The line the views print for a keep dump (its JSON object: common.h's
 * ta_keep_json). */
const char *ta_keep_line(char *buf, size_t n, const struct ta_keep_info *k);
/* The first process's KEEP chunk, NULL when none. */
struct ta_session;
const struct ta_keep_info *ta_session_keep(const struct ta_session *s);

struct ta_process {
	/* The process's key in the session, which threads, profiles and
	 * frames name it by: its pid, but for a later process given the same
	 * pid in the run (PROCESS's boot_start, FORMAT.md 1.7), which gets
	 * pid + k * 2^22 (pids are below 2^22), the first value no other
	 * process of the session has.  Show os_pid and nth, never the key:
	 * ta_pid_name. */
	uint32_t pid;
	uint32_t os_pid;     /* the pid its chunks carry */
	uint32_t nth;	     /* 1 for the first process of that pid in the dump, 2... */
	uint64_t boot_start; /* its start in clock ticks after boot (0: not known) */
	uint64_t start_ns;   /* its start, CLOCK_BOOTTIME ns (1.8; 0: not known) */
	int has_info;	     /* a PROCESS chunk was read */
	int has_end;	     /* an END chunk was read */
	uint64_t ppid, start_realtime_ns, start_ticks, clock_source, nominal_hz;
	char *arch, *exe;
	char **argv; /* the last image's command line (cmds[nimages - 1]) */
	size_t argc;
	uint64_t block_size, memory_cap, flush_ms;
	uint64_t mode;		       /* 0 lossless, 1 drop, 2 flight (PROCESS, since 1.1) */
	struct ta_crash *crash;	       /* the CRASH chunk, if the process crashed */
	struct ta_patch *patch;	       /* the last PATCH chunk, if functions were patched */
	struct ta_filter_info *filter; /* the last FILTER chunk (1.7): filtered at record time */
	struct ta_keep_info *keep;     /* the last KEEP chunk (1.10): only slow frames kept */
	/* END's, summed over the images (an exec'd image goes on in the
	 * dump with a PROCESS chunk of the same pid); flags are the last. */
	uint64_t end_ticks, end_ns, end_events, end_lost, end_threads, end_flags;
	uint64_t base_events, base_lost, base_threads; /* of the images before */
	/* end_lost by cause (END's trailing counts, since 1.4; format.h's
	 * TA_LOST_*, the last entry the causes of a later version), summed
	 * over the images like end_lost. */
	uint64_t end_lost_by[TA_LOST_NCAUSES + 1], base_lost_by[TA_LOST_NCAUSES + 1];
	/* END's reserve_blocks (1.7): blocks signal handlers took beyond the
	 * memory cap, summed over the images. */
	uint64_t end_reserve_blocks, base_reserve_blocks;
	/* END's trailing fields (1.8), the last image's: the signal the
	 * process died of (0: none), and where the agent's first failed
	 * write began and its errno (0: none failed). */
	uint64_t end_signal, end_failed_at, end_failed_errno;
	/* A CUT chunk (1.8): why the dump stops without END, as the program
	 * that saw it said (cause TA_CUT_*, 0: none). */
	uint64_t cut_cause, cut_value;
	char cut_text[160];
	/* The executable of each image, in order (exe is the last), and its
	 * command line (each owns its argv; argv above is the last one's). */
	char **images;
	struct ta_image_cmd *cmds;
	size_t nimages, images_cap, cmds_cap;

	struct ta_clock_pair *clock;
	size_t nclock, clock_cap;
	struct ta_sess_module *modules;
	size_t nmodules, modules_cap;

	uint64_t next_chunk_seq;       /* expected seq of this writer's next chunk */
	uint64_t chunks_missing;       /* gaps in the writer's chunk sequence */
	uint64_t min_ticks, max_ticks; /* times seen in its chunks */
	int have_ticks;

	/* ns = ns_at_0 + ticks * ns_per_tick; set by ta_session_finish. */
	long double ns_per_tick, ns_at_0;
	int calibrated;	  /* from this process's own CLOCK pairs or frequency */
	int uncalibrated; /* no conversion known: ticks are taken as ns */

	/* The LIBCALLS chunk, sorted by address (a later chunk replaces it). */
	struct ta_libcall *libcalls;
	size_t nlibcalls;
	uint64_t libcall_classes; /* the classes recorded (TA_LC_*) */

	/* The manual API's call sites (sorted by address on demand: see
	 * ta_process_site) and channels by id. */
	struct ta_site *sites;
	size_t nsites, sites_cap;
	int sites_sorted;
	uint64_t sites_seq;
	struct ta_channel channels[TA_CHANNELS_MAX];

	/* Address -> module, sorted by start, built by ta_session_finish. */
	struct ta_modrange *map;
	size_t nmap;

	/* The ranges of unloaded modules, with when.  While there are any,
	 * each function address is tagged at decode time with how many of
	 * them covering it were unloaded by the event's time (bits 56-62,
	 * see ta_process_addr_at), so a library mapped later at the same
	 * place is another function; the tag picks the module instance. */
	struct ta_unloaded {
		uint64_t start, end, ticks;
	} * unloaded;
	size_t nunloaded, unloaded_cap;

	/* The recording's pauses (MARK chunks, 1.6: `traceagent ctl PID
	 * pause`), in order: [from, to), to UINT64_MAX while open; before:
	 * the paused ticks of the ones before.  Calls open across them are
	 * not charged them (ta_process_paused). */
	struct ta_pause {
		uint64_t from, to, before;
	} * pauses;
	size_t npauses, pauses_cap;
	uint64_t channel_marks; /* channels switched through the control socket */
};

/* The paused ticks of p within [a, b). */
uint64_t ta_process_paused(const struct ta_process *p, uint64_t a, uint64_t b);

/* Address tags (above every user-space address). */
#define TA_ADDR_TAG_SHIFT 56
#define TA_ADDR_TAG_MAX	  127u
#define TA_ADDR_MASK	  ((1ull << TA_ADDR_TAG_SHIFT) - 1)
/* The key of the agent's waits (TA_EXT_WAIT): the walk makes each one a
 * frame of its own at this key, a callee of the frame on top, so every
 * view shows it as TA_WAIT_NAME and none charges it to that function's
 * self time.  Above every user-space address, and never tagged. */
#define TA_WAIT_KEY TA_ADDR_MASK

/* A fatal signal, as the crash handler recorded it. */
struct ta_crash {
	uint64_t tid, ticks, signal, addr;
	int64_t code;  /* si_code */
	uint64_t *pcs; /* the backtrace, innermost first */
	size_t npcs;
};

/* Dynamic patching (PATCH chunk, since 1.2): the counts and the functions
 * refused, with the reason. */
struct ta_patch_refusal {
	char *module, *name, *reason;
	uint64_t addr, code;
};

/* Functions patched with a return stub rather than relocated whole, by
 * reason. */
struct ta_patch_fallback {
	uint64_t code, count;
	char *reason;
};

struct ta_patch {
	uint64_t patched, nrefused, frames_without_exit;
	struct ta_patch_refusal *refused;
	int has_method; /* the writer said how each was patched (since 1.8) */
	uint64_t relocated, nfallback;
	struct ta_patch_fallback *fallback;
	/* Of patched, those at their -fpatchable-function-entry no-ops (since
	 * 1.10; 0 before). */
	uint64_t patchable_entry;
};

/* One frame of a rebuilt call stack. */
struct ta_frame {
	uint64_t addr;
	uint64_t enter; /* ticks */
	uint64_t child; /* ticks spent in direct callees */
	uintptr_t user; /* what the visitor's enter returned */
	/* Entered where the dump does not say (a snapshot's frame): its exit
	 * is visited with TA_VISIT_PARTIAL. */
	unsigned partial;
};

struct ta_sess_thread {
	uint32_t index; /* dense, in order of first appearance */
	uint32_t pid;
	uint64_t tid, parent_tid;
	char *name;
	int has_start, has_end;
	uint64_t start_ticks, end_ticks;
	uint64_t end_events, end_lost, wait_ticks; /* as THREAD_END says */

	uint64_t events;	 /* function events decoded */
	uint64_t lost;		 /* counts of LOST events */
	uint64_t unmatched;	 /* exits that were never entered */
	uint64_t resyncs;	 /* chunks whose stack disagreed with the rebuilt one */
	uint64_t chunks_missing; /* gaps in thread_chunk_seq */
	uint64_t last_ticks;
	int have_ticks;
	int have_chunks;
	uint64_t next_seq;

	struct ta_frame *stack;
	uint32_t depth, cap;
	int over; /* its image was replaced by an exec: closed, out of the hash */
	/* A forked child's thread: its bottom `inherited` frames were
	 * entered by the parent, which records them; they are neither
	 * visited nor counted here. */
	int forked;
	uint32_t inherited;
	/* In a process that crashed: the functions open on this thread when
	 * it ended, bottom first (where each thread was). */
	uint64_t *last_stack;
	uint32_t last_depth;
	uint64_t overflow; /* frames beyond what the stack holds, without data */
};

/* Flags of enter and exit visits. */
#define TA_VISIT_OPEN	1u /* exit: still open at the end, closed at the thread's last time */
#define TA_VISIT_RESYNC 2u /* entered or left where a chunk was lost; time is a guess */
/* exit: left without its exit hook, by a longjmp or an exception (closed at
 * the LONGJMP or CATCH marker) */
#define TA_VISIT_UNWOUND 4u
/* exit: of a frame a chunk's snapshot opened (a thread's first chunk that
 * begins inside calls, as a flight recorder's cut does, or the first after
 * lost chunks): its start is a guess */
#define TA_VISIT_PARTIAL 8u
/* An exit whose duration is not the call's whole length. */
#define TA_VISIT_INCOMPLETE (TA_VISIT_OPEN | TA_VISIT_RESYNC | TA_VISIT_PARTIAL)

struct ta_exit_info {
	uint64_t addr;
	uint64_t enter, exit; /* ticks */
	uint64_t duration;    /* exit - enter */
	uint64_t self;	      /* duration minus direct callees' durations */
	uint32_t depth;	      /* frames below this one */
	unsigned flags;
	uintptr_t user;
};

struct ta_chunk_ops;

struct ta_visitor {
	void *ctx;
	/* A frame was pushed at depth (frames below it); the return value is
	 * given back at its exit. */
	uintptr_t (*enter)(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			   uint64_t addr, unsigned flags);
	void (*exit)(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x);
	void (*lost)(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t count);
	/* An EXT event other than LOST (enum ta_ext_kind) with its n values,
	 * on top of the thread's current frames (after the frames a LONGJMP
	 * or CATCH left were visited as exits with TA_VISIT_UNWOUND). */
	void (*ext)(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		    const uint64_t *values, uint32_t n);
	/* NULL, or how workers sum an EVENTS chunk on their own for this
	 * visitor (-j: see ta_chunk_ops below). */
	const struct ta_chunk_ops *chunks;
	/* NULL, or: calls of addr (a session key, as enter's) that the agent
	 * left out, shorter than its minimum duration (TA_EXT_SHORT); they
	 * are not visited.  Takes TA_EXT_SHORT from ext. */
	void (*shorts)(void *ctx, struct ta_sess_thread *t, uint64_t addr, uint64_t calls);
	/* NULL, or: an exit of addr whose entry the dump does not have, with
	 * nothing open on the thread (a call already running when an attach
	 * window began); not visited as an exit. */
	void (*partial)(void *ctx, struct ta_sess_thread *t, uint64_t addr);
};

/* A problem found while reading, with where it was. */
struct ta_session_error {
	int code; /* negative TA_E_* */
	uint64_t chunk, offset, skipped;
	unsigned type; /* chunk type when the header was readable, else 0 */
	uint64_t tid;  /* EVENTS: the thread, when known */
};

#define TA_SESSION_MAX_ERRORS 256

struct ta_session {
	struct ta_file_header fh;
	struct ta_process **procs;
	size_t nprocs, procs_cap;
	struct ta_sess_thread **threads;
	size_t nthreads, threads_cap;
	/* The threads by (pid, tid): the latest instance of each (a tid
	 * the kernel reused after the first thread ended replaces it). */
	struct ta_htab thash;
	size_t nhashed;

	struct ta_session_error errors[TA_SESSION_MAX_ERRORS];
	size_t nerrors;	     /* stored */
	uint64_t errors_all; /* including those not stored */

	uint64_t chunks, unknown_chunks, events_chunks;
	uint64_t stored_bytes, raw_bytes; /* payloads of the chunks taken, as stored and raw */
	/* Bytes of the dump read, file header included: its size when it was
	 * read to the end (a pipe has no other). */
	uint64_t file_bytes;
	int finished;

	struct ta_decoder dec;
	struct ta_visitor v;
	/* The process whose frames the walk is closing (its pauses). */
	const struct ta_process *walk_proc;
	/* The parallel reader's sums of the EVENTS chunk being taken, or
	 * NULL (session_int.h). */
	struct ta_chunk_part *part;
	/* The same for a visitor with ta_chunk_ops: its worker's result. */
	void *vpart;
	/* EVENTS chunks taken from the workers' parts, not walked here. */
	uint64_t parts_taken;
	/* The agent's minimum duration (TRACEAGENT_MIN_DURATION), in ns,
	 * as the dump's FILTER chunk says; 0: none, or not said. */
	uint64_t min_duration_ns;
	/* Calls the agent left out as shorter than it (TA_EXT_SHORT). */
	uint64_t short_calls;
	/* The modules' symbols the dump stores (SYMBOLS chunks), or NULL. */
	struct ta_symstore *stored;
};

/* Names r gives the modules of s from the symbols s's dump stores first
 * (ta_resolver_stored); r must not outlive s. */
void ta_session_stored_names(struct ta_session *s, struct ta_resolver *r);

/* ---- EVENTS chunks summed by workers, for visitors other than the profile ---- */

/* Frames kept with their data per thread; deeper ones are only counted.
 * Far beyond TA_STACK_MAX, yet bounded whatever a dump claims. */
#define TA_SESSION_FRAMES_MAX (16u * TA_STACK_MAX)

/*
 * A visitor whose work on an EVENTS chunk can be done from the chunk alone
 * says how (ta_visitor.chunks): with -j, workers build a part per chunk
 * from its stack snapshot, with no state but the part's, and the reader
 * applies the parts in the dump's order in place of walking the chunks.
 * apply must leave the session and ctx exactly as the walk would have, or
 * return 0 having changed nothing (the chunk is then walked); the helpers
 * below do the session's side.
 */
struct ta_chunk_ops {
	/* A worker's part (reused chunk after chunk); NULL without memory. */
	void *(*make)(void *ctx);
	void (*drop)(void *part);
	void (*build)(void *part, const uint8_t *payload, size_t len); /* in a worker */
	/* In the reader, in order: 1 when taken, 0 to walk the chunk, or
	 * -TA_E_NOMEM. */
	int (*apply)(void *ctx, struct ta_session *s, const struct ta_chunk *c,
		     struct ta_process *p, void *part);
};

/* The exit of a frame open at the chunk's start, in order; child: the
 * time its callees took within the chunk. */
struct ta_part_edge {
	uint64_t ticks, child;
	unsigned flags;
};

/* Appends such an exit to *edges (*n of them, room for *cap): 0, or -1
 * without memory. */
int ta_part_edge_add(struct ta_part_edge **edges, size_t *n, size_t *cap, uint64_t ticks,
		     uint64_t child, unsigned flags);

/* A frame of a worker's stack: below nph the snapshot's (their enter and
 * time are the real stack's), above it opened in the chunk.  user: the
 * part's own value, mapped to the visitor's by apply. */
struct ta_part_open {
	uint64_t addr, enter, child;
	uint32_t user;
};

/* What a worker's walk of a chunk leaves for the session. */
struct ta_part_walk {
	const struct ta_decoder *dec; /* the chunk begun: tid, seq, snapshot */
	const struct ta_part_edge *edges;
	size_t nedges;
	const struct ta_part_open *stack;
	uint32_t nph, depth;
	uint64_t events, unmatched, lost, last_ticks;
	int have_ticks;
};

/* The thread of EVENTS chunk c, when the walk would take the chunk's
 * snapshot as its stack as is (the same frames, no overflow, no inherited
 * frames, no pauses nor unloaded modules in p), else NULL (*nomem set when
 * out of memory).  Only the thread may have been made. */
struct ta_sess_thread *ta_session_part_thread(struct ta_session *s, const struct ta_chunk *c,
					      const struct ta_process *p,
					      const struct ta_decoder *d, int *nomem);
/* The walk's effect on the session and t of the chunk w describes: the
 * exits at its edges visited on t's frames, its open frames pushed (user
 * values user[frame's user]), the counts.  0, or -TA_E_NOMEM. */
int ta_session_part_take(struct ta_session *s, struct ta_sess_thread *t, struct ta_process *p,
			 const struct ta_part_walk *w, const uintptr_t *user);

/*
 * Chunk ops for a visitor without exit nor lost whose ext (and enter, if
 * any) look at nothing of the thread but who it is (pid, tid, index): the
 * workers decode each chunk's EXT events and its first enter, which the
 * reader hands to the visitor in order.  Its enter is called for a
 * chunk's first enter only, and its return value is not kept: for a
 * visitor whose enter only notes that the thread began (frames' first
 * pass), counters' ext.
 */
extern const struct ta_chunk_ops ta_session_ext_chunks;

/* Workers that ta_session_read decodes EVENTS chunks with (1: none, the
 * chunks read and walked in one thread); the commands' -j sets it.  The
 * results are the same whatever it is. */
extern unsigned ta_session_jobs;

/* Returns a new empty session, or NULL without memory.  v may be NULL (no
 * visits); it is copied. */
struct ta_session *ta_session_new(const struct ta_visitor *v);
void ta_session_free(struct ta_session *s);

/*
 * Reads the dump at path to its end, feeding every chunk to
 * ta_session_chunk.  Returns 0 when the file could be read (damage found on
 * the way is in s->errors), or a negative TA_E_* code when it could not be
 * used at all: -TA_E_IO (errno says why), -TA_E_NOMEM, or a bad file header.
 * *err_offset (may be NULL) gets where the fatal problem was.
 */
int ta_session_read(struct ta_session *s, const char *path, uint64_t *err_offset);

/* Takes one verified chunk.  Malformed payloads are recorded in s->errors;
 * returns 0, or -TA_E_NOMEM. */
int ta_session_chunk(struct ta_session *s, const struct ta_chunk *c);

/* Records an error of the dump reader (or any other) at a chunk. */
void ta_session_error(struct ta_session *s, int code, const struct ta_chunk *c, uint64_t tid);

/*
 * Ends the walk: closes the frames still open at each thread's last time
 * (its THREAD_END, else its last event) with TA_VISIT_OPEN, and computes
 * the tick conversions and the address maps.  Call once, after reading.
 */
void ta_session_finish(struct ta_session *s);

struct ta_process *ta_session_process(const struct ta_session *s, uint32_t pid);
/* How a process is shown: "1234", or "1234 (2)" for the second process
 * given pid 1234 in the dump (key as ta_process.pid); in buf. */
#define TA_PID_NAME_MAX 32
const char *ta_pid_name(const struct ta_session *s, uint32_t key, char buf[TA_PID_NAME_MAX]);
/* The pid a key stands for (the key itself when no process has it). */
uint32_t ta_pid_os(const struct ta_session *s, uint32_t key);
/* The latest thread instance of (pid, tid) read so far, or NULL: a hash
 * lookup, callable while the dump is read. */
struct ta_sess_thread *ta_session_thread(const struct ta_session *s, uint32_t pid, uint64_t tid);

/* The earliest time of any process of the dump, in ns (the origin of the
 * views' times), after ta_session_finish; 0 without any. */
int64_t ta_session_start_ns(const struct ta_session *s);

/* The call site described at addr (the latest description), or NULL.
 * Callable while the dump is read: sites described later are not found
 * yet. */
const struct ta_site *ta_process_site(struct ta_process *p, uint64_t addr);
/* A channel's name ("channel-N" for an id no chunk named: static buffer
 * per call, copy it) */
const char *ta_process_channel_name(const struct ta_process *p, uint32_t id, char buf[32]);

/* The interposed function whose zones are at addr, or NULL. */
const struct ta_libcall *ta_process_libcall(const struct ta_process *p, uint64_t addr);

/* Durations and absolute times in ns (after ta_session_finish). */
uint64_t ta_process_dur_ns(const struct ta_process *p, uint64_t ticks);
int64_t ta_process_ticks_ns(const struct ta_process *p, uint64_t ticks);

/* The module whose executable ranges hold addr, or NULL.  addr is an
 * address as the session hands it to visitors (tagged, when modules were
 * unloaded): the module instance mapped there at the event's time. */
const struct ta_sess_module *ta_process_module_at(const struct ta_process *p, uint64_t addr);

/* The key the session uses for the function address addr at time ticks
 * (addr itself unless a module covering it was unloaded by then), and
 * the address again from a key. */
uint64_t ta_process_addr_at(const struct ta_process *p, uint64_t addr, uint64_t ticks);
uint64_t ta_process_addr(const struct ta_process *p, uint64_t key);

/*
 * Is the dump whole and finished?  0 if so; otherwise a short reason (valid
 * until the thread's next call): damage, a process without END (killed by
 * a signal, a stream cut, as a CUT chunk says), or one that says some data
 * could not be written (where, and why: the disk full).
 */
const char *ta_session_incomplete(const struct ta_session *s);

/* ---- duration histograms ---------------------------------------------------- */

/*
 * Log-linear buckets: every value below 2 * TA_HIST_SUB has its own bucket,
 * then each power of two [2^k, 2^(k+1)) is cut into TA_HIST_SUB equal
 * buckets, so the middle of a bucket is within 1 / (2 * TA_HIST_SUB) = 0.4%
 * of any value in it.  Counts exist only for the contiguous run of blocks
 * (TA_HIST_BLOCK buckets each) between the smallest and largest value seen:
 * at most TA_HIST_BUCKETS counters, usually a few blocks, whatever the
 * number of values.
 */
#define TA_HIST_SUB_BITS 7
#define TA_HIST_SUB	 (1u << TA_HIST_SUB_BITS)
#define TA_HIST_BUCKETS	 ((64u - TA_HIST_SUB_BITS + 1) << TA_HIST_SUB_BITS)
#define TA_HIST_BLOCK	 32u

struct ta_hist {
	uint64_t *count; /* buckets [lo, hi), or NULL while empty */
	uint32_t lo, hi; /* multiples of TA_HIST_BLOCK */
};

static inline uint32_t ta_hist_bucket(uint64_t v)
{
	/* The shift is max(0, (bit length of v) - 1 - TA_HIST_SUB_BITS),
	 * computed without a compare: the top bit of v >> SUB_BITS. */
	unsigned shift = 63u - (unsigned)__builtin_clzll((v >> TA_HIST_SUB_BITS) | 1);

	return (uint32_t)((shift << TA_HIST_SUB_BITS) + (v >> shift));
}

/* The smallest value of bucket b, and how many values it holds. */
static inline uint64_t ta_hist_low(uint32_t b)
{
	unsigned shift = b < 2 * TA_HIST_SUB ? 0 : (b >> TA_HIST_SUB_BITS) - 1;

	return (uint64_t)(b - (shift << TA_HIST_SUB_BITS)) << shift;
}

static inline uint64_t ta_hist_width(uint32_t b)
{
	return b < 2 * TA_HIST_SUB ? 1 : 1ull << ((b >> TA_HIST_SUB_BITS) - 1);
}

/* Makes room for bucket b; 0, or -TA_E_NOMEM (the value is then not counted). */
int ta_hist_reserve(struct ta_hist *h, uint32_t b);

static inline void ta_hist_add(struct ta_hist *h, uint64_t v)
{
	uint32_t b = ta_hist_bucket(v);

	/* b < lo wraps above hi - lo: one compare for both bounds. */
	if (__builtin_expect(b - h->lo >= h->hi - h->lo, 0) && ta_hist_reserve(h, b) < 0)
		return;
	h->count[b - h->lo]++;
}

void ta_hist_free(struct ta_hist *h);

/* ---- the profile: per-thread, per-function totals in ticks ---------------- */

struct ta_fstat {
	uint32_t thread; /* ta_thread.index */
	uint32_t pid;
	uint64_t addr;
	uint64_t calls;	 /* activations, open, partial and shorts included */
	uint64_t shorts; /* of calls: left out by the agent as shorter than its
			    minimum duration (no time, not in min/max/sum) */
	uint64_t open;	 /* activations still open at the end */
	/* Activations, not open, whose start (or end, after a loss) the dump
	 * does not have: already running when it began, or where chunks were
	 * lost.  Neither these nor the open ones are in min, max, sum or hist;
	 * their known part is in total and self. */
	uint64_t partial;
	uint64_t unwound; /* activations left by a longjmp or an exception */
	uint64_t total;	  /* outermost activations only (recursion counted once) */
	uint64_t self;
	uint64_t min, max;
	uint64_t sum;	     /* all activations' durations (for the mean) */
	uint32_t active;     /* activations on the stack right now */
	struct ta_hist hist; /* every activation's duration, when the profile keeps them */
};

struct ta_profile {
	struct ta_fstat *f; /* dense; indices are stable */
	size_t n, cap;
	struct ta_htab by_fn; /* f by (thread, addr) */
	int hist;	      /* set before ta_profile_visitor: fill each ta_fstat's hist */
	/* Enters that looked their function up in the hash; the others found
	 * its entry in their stack slot, left there by the frame before. */
	uint64_t lookups;
};

void ta_profile_init(struct ta_profile *p);
void ta_profile_free(struct ta_profile *p);
/* A visitor that fills p. */
void ta_profile_visitor(struct ta_profile *p, struct ta_visitor *v);

#endif /* TA_SESSION_H */
