/* SPDX-License-Identifier: MIT */
/*
 * test_ring.c - the agent's rings, pool and flusher, driven through the
 * hot path in-process, checked exactly by decoding the dump they write.
 * Each test runs in its own process (Check's fork mode), so each starts
 * the agent afresh.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <signal.h>

#include "../check_run.h"
#include "../testdir.h"

/* Check's ck_assert_msg (and every ck_assert_* made of it) reports each
 * assertion that passes to the runner: a write to a pipe each
 * (_mark_point).  This file checks every event of dumps of millions, one
 * assertion each.  Here a passing assertion is only its test; a failing
 * one reports as Check's does. */
#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                                                                   \
	((expr) ? (void)0                                                                          \
		: _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed",            \
				    ##__VA_ARGS__))
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "chunkread.h"
#include "dump.h"
#include "flusher.h"
#include "format.h"
#include "values.h"
#include "ring.h"
#include "settings.h"

/* ---- reading back what the agent wrote ------------------------------------ */

#define MAX_TIDS 512

struct thread_log {
	uint64_t tid;
	uint64_t *ev; /* addr | TA_REC_EXIT for exits */
	uint64_t *ticks;
	size_t n, cap;
	uint64_t end_events, end_lost, end_wait;
	uint64_t end_lost_by[TA_LOST_NCAUSES]; /* THREAD_END's by cause */
	uint64_t marker_lost;		       /* sum of LOST records in the stream */
	size_t marker_at;		       /* events recorded before the first one */
	int markers;
	uint64_t *xv; /* EXT events other than LOST: TA_EXT_MAX_VALUES values each */
	size_t nx;
	/* TA_EXT_WAIT records, aside: (events before it, its time, start,
	 * length) each. */
	uint64_t *wv;
	size_t nw;
	int ended;
	char name[17];
};

struct dump {
	struct thread_log t[MAX_TIDS];
	int nthreads;
	uint64_t end_events, end_lost, end_flags;
	uint64_t end_lost_by[TA_LOST_NCAUSES];
	int ended;
	int chunks;
};

static struct thread_log *thread_of(struct dump *d, uint64_t tid)
{
	for (int i = 0; i < d->nthreads; i++)
		if (d->t[i].tid == tid && !d->t[i].ended)
			return &d->t[i];
	ck_assert_int_lt(d->nthreads, MAX_TIDS);
	d->t[d->nthreads].tid = tid;
	return &d->t[d->nthreads++];
}

static void read_name(struct ta_reader *r, char out[17])
{
	const uint8_t *s;
	uint64_t len;

	ck_assert_int_eq(ta_get_bytes(r, &s, &len), 0);
	ck_assert_uint_le(len, 16);
	memcpy(out, s, len);
	out[len] = 0;
}

/* What load_dump allocated, freed after each test (a checked teardown), so
 * that LeakSanitizer in the sanitizer builds reports only real leaks. */
static void **owned;
static size_t nowned;

static void own(void *p)
{
	void **v = realloc(owned, (nowned + 1) * sizeof(*v));

	ck_assert_ptr_nonnull(v);
	owned = v;
	owned[nowned++] = p;
}

static void free_owned(void)
{
	for (size_t i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
	owned = NULL;
	nowned = 0;
}

static void load_dump(const char *path, struct dump *d)
{
	struct ta_dumpfile *df;
	struct ta_chunk ch;
	int got;

	memset(d, 0, sizeof(*d));
	ck_assert_int_eq(ta_dumpfile_open(path, &df), 0);
	while ((got = ta_dumpfile_next(df, &ch)) != 0) {
		const struct ta_chunk_header c = ch.h;
		const uint8_t *p = ch.payload;
		struct ta_reader r;
		uint64_t tid, v;

		/* Every chunk whole: no damage in what the agent wrote. */
		ck_assert_msg(got == 1, "%s: chunk %" PRIu64 " at offset %" PRIu64 ": %s", path,
			      ch.index, ch.offset, ta_strerror(got));
		ck_assert_uint_eq(c.seq, (uint32_t)d->chunks);
		d->chunks++;
		ta_reader_init(&r, p, c.raw_size);
		if (c.type == TA_CHUNK_THREAD_START) {
			struct thread_log *t;
			ta_get_varint(&r, &tid);
			t = thread_of(d, tid);
			ta_get_varint(&r, &v);
			ta_get_varint(&r, &v);
			read_name(&r, t->name);
		} else if (c.type == TA_CHUNK_THREAD_NAME) {
			ta_get_varint(&r, &tid);
			ta_get_varint(&r, &v);
			read_name(&r, thread_of(d, tid)->name);
		} else if (c.type == TA_CHUNK_THREAD_END) {
			struct thread_log *t;
			ta_get_varint(&r, &tid);
			t = thread_of(d, tid);
			ta_get_varint(&r, &v);
			ta_get_varint(&r, &t->end_events);
			ta_get_varint(&r, &t->end_lost);
			ta_get_varint(&r, &t->end_wait);
			ta_get_varint(&r, &v);
			for (uint64_t k = 0; k < v; k++) {
				uint64_t n;

				ta_get_varint(&r, &n);
				if (k < TA_LOST_NCAUSES)
					t->end_lost_by[k] = n;
			}
			t->ended = 1;
		} else if (c.type == TA_CHUNK_END) {
			ta_get_varint(&r, &v);
			ta_get_varint(&r, &v);
			ta_get_varint(&r, &d->end_events);
			ta_get_varint(&r, &d->end_lost);
			ta_get_varint(&r, &v); /* threads */
			ta_get_varint(&r, &d->end_flags);
			ta_get_varint(&r, &v);
			for (uint64_t k = 0; k < v; k++) {
				uint64_t n;

				ta_get_varint(&r, &n);
				if (k < TA_LOST_NCAUSES)
					d->end_lost_by[k] = n;
			}
			d->ended = 1;
		} else if (c.type == TA_CHUNK_EVENTS) {
			struct ta_decoder dec;
			struct ta_event ev;
			struct thread_log *t;
			int rc;

			ta_decoder_init(&dec);
			ck_assert_int_eq(ta_decoder_begin(&dec, p, c.raw_size), 0);
			t = thread_of(d, dec.tid);
			while ((rc = ta_decoder_next(&dec, &ev)) == 1) {
				if (ev.kind == TA_EV_EXT && ev.ext == TA_EXT_WAIT) {
					ck_assert_uint_eq(ev.value, 2);
					t->wv = realloc(t->wv, (t->nw + 1) * 4 * sizeof(uint64_t));
					t->wv[4 * t->nw] = t->n;
					t->wv[4 * t->nw + 1] = ev.ticks;
					t->wv[4 * t->nw + 2] = dec.ext_values[0];
					t->wv[4 * t->nw + 3] = dec.ext_values[1];
					t->nw++;
					continue;
				}
				if (ev.kind == TA_EV_EXT && ev.ext != TA_EXT_LOST) {
					/* In the event list as the raw header the
					 * agent took; its values aside. */
					ev.addr = TA_RAW_EXT | ev.ext << 8 | ev.value;
					ev.kind = TA_EV_ENTER;
					t->xv = realloc(t->xv, (t->nx + 1) * TA_EXT_MAX_VALUES *
								   sizeof(uint64_t));
					memcpy(t->xv + t->nx++ * TA_EXT_MAX_VALUES, dec.ext_values,
					       sizeof(dec.ext_values));
				} else if (ev.kind == TA_EV_EXT) {
					if (!t->markers++)
						t->marker_at = t->n;
					t->marker_lost += ev.value;
					continue;
				}
				if (t->n == t->cap) {
					t->cap = t->cap ? 2 * t->cap : 1024;
					t->ev = realloc(t->ev, t->cap * sizeof(*t->ev));
					t->ticks = realloc(t->ticks, t->cap * sizeof(*t->ticks));
				}
				t->ticks[t->n] = ev.ticks;
				t->ev[t->n++] = ev.addr | (ev.kind == TA_EV_EXIT ? TA_REC_EXIT : 0);
			}
			ck_assert_int_eq(rc, 0);
			ta_decoder_free(&dec);
		}
		ck_assert_int_eq(r.err, 0);
	}
	ta_dumpfile_close(df);
	for (int i = 0; i < d->nthreads; i++) {
		own(d->t[i].ev);
		own(d->t[i].ticks);
		own(d->t[i].xv);
		own(d->t[i].wv);
	}
}

/* ---- set-up ------------------------------------------------------------------ */

static char dump_path[PATH_MAX + 32];

/* The agent's settings for a test, its dump in the test's own directory
 * (the agent never overwrites a file: a shared name could be taken).
 * mode and flight_size: NULL for the defaults.  The agent is not started. */
static void agent_env_only(const char *buffer, const char *memory, const char *mode,
			   const char *flight_size)
{
	if (mode)
		setenv("TRACEAGENT_MODE", mode, 1);
	else
		unsetenv("TRACEAGENT_MODE");
	if (flight_size)
		setenv("TRACEAGENT_FLIGHT_SIZE", flight_size, 1);
	else
		unsetenv("TRACEAGENT_FLIGHT_SIZE");
	unsetenv("TRACEAGENT_TEST_ENCODER_MAX");
	ta_test_path(dump_path, sizeof(dump_path), "test-ring", "ring.trace");
	setenv("TRACEAGENT_OUTPUT", dump_path, 1);
	setenv("TRACEAGENT_BUFFER", buffer, 1);
	setenv("TRACEAGENT_MEMORY", memory, 1);
	setenv("TRACEAGENT_FLUSH_MS", "1", 1);
}

/* The agent started as the first hook would start it: a test whose agent
 * refuses to trace fails here at once, with what it said. */
static void agent_start(void)
{
	struct ta_stderr_catch c;
	char said[1024];
	int ok;

	ta_stderr_begin(&c, "test-ring");
	ok = ta_agent_ensure_started();
	ta_stderr_end(&c, said, sizeof(said));
	ck_assert_msg(ok && __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING,
		      "the agent did not start: %s", said[0] ? said : "(it said nothing)");
}

/* agent_env_only, then the agent started. */
static void agent_env_mode(const char *buffer, const char *memory, const char *mode,
			   const char *flight_size)
{
	agent_env_only(buffer, memory, mode, flight_size);
	agent_start();
}

static void agent_env(const char *buffer, const char *memory)
{
	agent_env_mode(buffer, memory, NULL, NULL);
}

/* Seconds since *t0 (CLOCK_MONOTONIC): the bound of a test's waits. */
static double seconds_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* A thread's known sequence: `calls` calls of a two-level tree whose
 * addresses are unique to the thread. */
static uint64_t addr_of(long id, long k)
{
	return 0x100000ull * (uint64_t)(id + 1) + (uint64_t)k * 16;
}

/* Calls [from, to) of record_tree's sequence. */
static void record_tree_from(long id, long from, long to)
{
	for (long i = from; i < to; i++) {
		ta_record(addr_of(id, 0));
		ta_record(addr_of(id, 1 + i % 3));
		ta_record(addr_of(id, 1 + i % 3) | TA_REC_EXIT);
		ta_record(addr_of(id, 0) | TA_REC_EXIT);
	}
}

static void record_tree(long id, long calls)
{
	record_tree_from(id, 0, calls);
}

static void check_tree(const struct thread_log *t, long id, long calls)
{
	ck_assert_uint_eq(t->n, (uint64_t)calls * 4);
	for (long i = 0; i < calls; i++) {
		const uint64_t *e = t->ev + 4 * i;
		ck_assert_uint_eq(e[0], addr_of(id, 0));
		ck_assert_uint_eq(e[1], addr_of(id, 1 + i % 3));
		ck_assert_uint_eq(e[2], addr_of(id, 1 + i % 3) | TA_REC_EXIT);
		ck_assert_uint_eq(e[3], addr_of(id, 0) | TA_REC_EXIT);
	}
	for (size_t i = 1; i < t->n; i++)
		ck_assert_uint_ge(t->ticks[i], t->ticks[i - 1]);
}

struct worker {
	long id, calls;
	uint64_t tid;
};

static void *worker_main(void *p)
{
	struct worker *w = p;

	record_tree(w->id, w->calls);
	w->tid = ta_thread_self()->tid;
	return NULL;
}

static const struct thread_log *find_tid(const struct dump *d, uint64_t tid)
{
	for (int i = 0; i < d->nthreads; i++)
		if (d->t[i].tid == tid)
			return &d->t[i];
	ck_abort_msg("thread %llu not in the dump", (unsigned long long)tid);
	return NULL;
}

/* ---- tests --------------------------------------------------------------------- */

/* One thread, many times the whole pool: blocks wrap around through the
 * free list and the thread waits at the cap; nothing is lost. */
START_TEST(single_thread_wraps_the_pool)
{
	struct dump d;
	const long calls = 50000; /* 200000 events = ~800 blocks of 4K */

	agent_env("4K", "1M");
	record_tree(0, calls);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 1);
	check_tree(&d.t[0], 0, calls);
	ck_assert_uint_eq(d.t[0].end_events, (uint64_t)calls * 4);
	ck_assert_uint_eq(d.t[0].end_lost, 0);
	ck_assert(d.ended);
	ck_assert_uint_eq(d.end_events, (uint64_t)calls * 4);
	ck_assert_uint_eq(d.end_lost, 0);
	ck_assert_uint_le(ta_pool_peak_bytes(), 1u << 20);
	unlink(dump_path);
}
END_TEST

/* The test thread, which records; its drains are never held. */
static pthread_t wait_producer;
static pid_t wait_producer_tid;
static int wait_seen; /* atomic */

/* The state letter of thread tid of this process (R, S, D...), or 0. */
static char thread_state(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* The flusher thread's drains stop until the test thread sleeps: it does
 * nothing else that sleeps but wait for the flusher (the pool used up, or
 * its own ring held by this drain).  The first held drain says it is in
 * (hold_entered), then waits for the producer to record again
 * (producer_running: its sleeps before that are the test's own), then for
 * it to sleep.  Each wait bounded: 30 s, then it goes on (the test then
 * fails on wait_seen). */
static int hold_entered, producer_running; /* atomic */

static void hold_until_the_producer_waits(const struct ta_block *b)
{
	(void)b;
	if (pthread_equal(pthread_self(), wait_producer) ||
	    __atomic_load_n(&wait_seen, __ATOMIC_ACQUIRE))
		return;
	/* Release/acquire: pairs with the producer's wait for it. */
	__atomic_store_n(&hold_entered, 1, __ATOMIC_RELEASE);
	for (int ms = 0; ms < 30000 && !__atomic_load_n(&producer_running, __ATOMIC_ACQUIRE); ms++)
		usleep(1000);
	for (int ms = 0; ms < 30000; ms++) {
		if (thread_state(wait_producer_tid) == 'S') {
			/* Some more of it, for a wait of a few ms. */
			usleep(5000);
			__atomic_store_n(&wait_seen, 1, __ATOMIC_RELEASE);
			return;
		}
		usleep(1000);
	}
	__atomic_store_n(&wait_seen, -1, __ATOMIC_RELEASE);
}

/* A thread that waits for the flusher has each wait in its stream
 * (TA_EXT_WAIT) where it was: after the events stamped before it, before
 * those stamped after, never inside the leaf call (a wait in an entry's
 * slow path comes before the entry, stamped after it), and the waits add
 * up to the thread's wait in THREAD_END exactly. */
START_TEST(waits_are_in_the_stream_where_they_were)
{
	struct dump d;
	const long calls = 50000; /* ~800 blocks of 4K through a pool of 256 */
	const long first = 3000;  /* ~47 blocks */
	const struct thread_log *t;
	uint64_t sum = 0;

	agent_env("4K", "1M");
	wait_producer = pthread_self();
	wait_producer_tid = (pid_t)syscall(SYS_gettid);
	ta_flusher_test_hold(hold_until_the_producer_waits);
	/* A first part (a multiple of record_tree's 3 leaves, well below the
	 * pool) until the flusher is held in a drain of this ring: the rest
	 * then cannot be drained by this thread (the flusher holds its ring)
	 * and must wait, however the threads are scheduled. */
	record_tree(0, first);
	for (int ms = 0; ms < 10000 && !__atomic_load_n(&hold_entered, __ATOMIC_ACQUIRE); ms++) {
		ta_flusher_kick();
		usleep(1000);
	}
	ck_assert_int_eq(__atomic_load_n(&hold_entered, __ATOMIC_ACQUIRE), 1);
	__atomic_store_n(&producer_running, 1, __ATOMIC_RELEASE);
	record_tree_from(0, first, calls);
	ta_agent_shutdown();
	ta_flusher_test_hold(NULL);
	ck_assert_int_eq(__atomic_load_n(&wait_seen, __ATOMIC_ACQUIRE), 1);
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 1);
	t = &d.t[0];
	check_tree(t, 0, calls);
	ck_assert_uint_eq(t->end_lost, 0);
	ck_assert_uint_gt(t->end_wait, 0);
	ck_assert_uint_gt(t->nw, 0);
	for (size_t i = 0; i < t->nw; i++) {
		uint64_t at = t->wv[4 * i], ticks = t->wv[4 * i + 1];
		uint64_t start = t->wv[4 * i + 2], len = t->wv[4 * i + 3];

		ck_assert_uint_eq(ticks, start);
		ck_assert_uint_gt(len, 0);
		if (at)
			ck_assert_uint_le(t->ticks[at - 1], start);
		if (at < t->n)
			ck_assert_uint_le(start + len, t->ticks[at]);
		/* Not between the leaf's entry (event 1 of each 4) and its
		 * exit (event 2). */
		ck_assert_uint_ne(at % 4, 2);
		sum += len;
	}
	ck_assert_uint_eq(sum, t->end_wait);
	unlink(dump_path);
}
END_TEST

/* Many writers on a pool far smaller than what they write: produced =
 * recorded, per thread, in order; the pool's peak stays within the cap. */
START_TEST(many_writers_lossless_at_the_cap)
{
	enum { N = 8 };
	struct worker w[N];
	pthread_t th[N];
	struct dump d;
	uint64_t total = 0;

	agent_env("4K", "1M"); /* 256 blocks for 46 MB of events */
	for (long i = 0; i < N; i++) {
		w[i].id = i;
		w[i].calls = 20000 * (i + 1);
		total += (uint64_t)w[i].calls * 4;
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	for (int i = 0; i < N; i++) {
		const struct thread_log *t = find_tid(&d, w[i].tid);
		check_tree(t, i, w[i].calls);
		ck_assert(t->ended);
		ck_assert_uint_eq(t->end_events, (uint64_t)w[i].calls * 4);
		ck_assert_uint_eq(t->end_lost, 0);
	}
	ck_assert_uint_eq(d.end_events, total);
	ck_assert_uint_eq(d.end_lost, 0);
	ck_assert_uint_le(ta_pool_peak_bytes(), 1u << 20);
	unlink(dump_path);
}
END_TEST

/* Freezes the calling thread as if a hook were interrupted between its
 * claim (A) and its publication (C), and thaws it: the claim in TLS, as
 * ring.h's ta_claim sets it.  No slot is written while frozen, so nothing
 * needs publishing. */
static void freeze_block(void)
{
	ck_assert_int_eq(ta_claim(), 0);
}

static void thaw_block(void)
{
	ta_unclaim();
}

/*
 * The agent's calls of pthread_sigmask, counted on the thread that asks:
 * this definition takes the place of libc's for the agent's objects linked
 * into this program, and hands each call on to the real one.
 */
static __thread int sigmask_counting, sigmask_calls;

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	static int (*real)(int, const sigset_t *, sigset_t *);

	if (!real)
		real =
		    (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT, "pthread_sigmask");
	if (sigmask_counting)
		sigmask_calls++;
	return real(how, set, old);
}

/* A signal handler's hooks while a hook of its thread is between its claim
 * and its publication only put their events aside: no system call, in
 * particular not the signal mask's pair that the slow path's other work
 * needs.  With them, a handler of a few hundred events took longer than
 * sigdeep's 2 ms timer under qemu-user on one CPU, each handler was
 * followed at once by the next, nested in the same claim, and the program
 * never ended (e2e-signals).  The events still come out in order, after
 * the interrupted hook's, none lost. */
START_TEST(hooks_nested_in_a_claim_make_no_system_call)
{
	struct dump d;
	const uint64_t pairs = 2000; /* well past nest_buf: the reserve too */

	agent_env("4K", "1M");
	ta_record(0x1000);		 /* registers the thread */
	ck_assert_int_eq(ta_claim(), 0); /* a hook between (A) and (C) */
	sigmask_calls = 0;
	sigmask_counting = 1;
	for (uint64_t i = 0; i < pairs; i++) { /* its handler's hooks */
		ta_record(0x2000);
		ta_record(0x2000 | TA_REC_EXIT);
	}
	sigmask_counting = 0;
	ck_assert_int_eq(sigmask_calls, 0);
	ta_unclaim();
	ta_record(0x1000 | TA_REC_EXIT); /* appends what was put aside first */
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 1);
	ck_assert_uint_eq(d.t[0].n, 2 + 2 * pairs);
	ck_assert_uint_eq(d.t[0].ev[0], 0x1000);
	for (uint64_t i = 0; i < 2 * pairs; i++)
		ck_assert_uint_eq(d.t[0].ev[1 + i], 0x2000 | (i & 1 ? TA_REC_EXIT : 0));
	ck_assert_uint_eq(d.t[0].ev[1 + 2 * pairs], 0x1000 | TA_REC_EXIT);
	ck_assert_uint_eq(d.t[0].end_lost, 0);
	ck_assert_uint_eq(d.end_events, 2 + 2 * pairs);
	ck_assert_uint_eq(d.end_lost, 0);
}
END_TEST

/* A hook that runs while another hook of the same thread is half done (a
 * signal handler) must not overwrite the slot being written: its events
 * are put aside and appended after the interrupted one, in order, by the
 * thread's next event; beyond what can be put aside, they are counted. */
START_TEST(nested_hooks_are_recorded_in_order)
{
	struct dump d;
	const uint64_t want[] = {0x1000,
				 0x2000,
				 0x2000 | TA_REC_EXIT,
				 0x3000,
				 0x3000 | TA_REC_EXIT,
				 0x1000 | TA_REC_EXIT};

	agent_env("4K", "1M");
	ta_record(0x1000); /* registers the thread */
	freeze_block();
	ta_record(0x2000);
	ta_record(0x2000 | TA_REC_EXIT);
	ta_record(0x3000);
	ta_record(0x3000 | TA_REC_EXIT);
	thaw_block();
	ta_record(0x1000 | TA_REC_EXIT); /* the thread's next event */
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 1);
	ck_assert_uint_eq(d.t[0].n, 6);
	for (int i = 0; i < 6; i++)
		ck_assert_uint_eq(d.t[0].ev[i], want[i]);
	for (int i = 1; i < 6; i++)
		ck_assert_uint_ge(d.t[0].ticks[i], d.t[0].ticks[i - 1]);
	ck_assert_uint_eq(d.t[0].end_lost, 0);
	unlink(dump_path);
}
END_TEST

/* EXT events with values, of every size, between function events: each
 * group stays whole across block ends (padding skipped), in order, with
 * its values; they are not counted as function events. */
static uint64_t ext_value(long i, uint32_t j)
{
	return (uint64_t)i << 20 | (uint64_t)j << 60 | (uint64_t)(i * 7 + j);
}

START_TEST(ext_events_stay_whole_across_blocks)
{
	struct dump d;
	const long groups = 3000;
	size_t k = 0;

	agent_env("4K", "1M"); /* 252 slots a block: groups straddle ends */
	for (long i = 0; i < groups; i++) {
		uint64_t v[TA_EXT_MAX_VALUES];
		uint32_t n = (uint32_t)(i % (TA_EXT_MAX_VALUES + 1));

		for (uint32_t j = 0; j < n; j++)
			v[j] = ext_value(i, j);
		ta_record(addr_of(0, 0));
		ta_record_ext(12 + (uint32_t)(i % 4), v, n); /* free subtypes: no rule */
		ta_record(addr_of(0, 0) | TA_REC_EXIT);
	}
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 1);
	ck_assert_uint_eq(d.t[0].n, (uint64_t)groups * 3);
	ck_assert_uint_eq(d.t[0].nx, (uint64_t)groups);
	ck_assert_uint_eq(d.t[0].end_events, (uint64_t)groups * 2);
	ck_assert_uint_eq(d.t[0].end_lost, 0);
	for (long i = 0; i < groups; i++) {
		uint32_t n = (uint32_t)(i % (TA_EXT_MAX_VALUES + 1));
		const uint64_t *e = d.t[0].ev + 3 * i;

		ck_assert_uint_eq(e[0], addr_of(0, 0));
		ck_assert_uint_eq(e[1], TA_RAW_EXT | (uint64_t)(12 + i % 4) << 8 | n);
		ck_assert_uint_eq(e[2], addr_of(0, 0) | TA_REC_EXIT);
		for (uint32_t j = 0; j < n; j++)
			ck_assert_uint_eq(d.t[0].xv[k * TA_EXT_MAX_VALUES + j], ext_value(i, j));
		k++;
	}
	for (size_t i = 1; i < d.t[0].n; i++)
		ck_assert_uint_ge(d.t[0].ticks[i], d.t[0].ticks[i - 1]);
	unlink(dump_path);
}
END_TEST

/* An EXT event recorded by a handler in the middle of a hook is put aside
 * whole and lands after the interrupted event, in order. */
START_TEST(nested_ext_events_are_recorded_in_order)
{
	struct dump d;
	const uint64_t v[3] = {11, 22, 33};

	agent_env("4K", "1M");
	ta_record(0x1000);
	freeze_block();
	ta_record(0x2000);
	ta_record_ext(12, v, 3);
	ta_record(0x2000 | TA_REC_EXIT);
	thaw_block();
	ta_record(0x1000 | TA_REC_EXIT);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_uint_eq(d.t[0].n, 5);
	ck_assert_uint_eq(d.t[0].ev[0], 0x1000);
	ck_assert_uint_eq(d.t[0].ev[1], 0x2000);
	ck_assert_uint_eq(d.t[0].ev[2], TA_RAW_EXT | 12u << 8 | 3);
	ck_assert_uint_eq(d.t[0].ev[3], 0x2000 | TA_REC_EXIT);
	ck_assert_uint_eq(d.t[0].ev[4], 0x1000 | TA_REC_EXIT);
	ck_assert_uint_eq(d.t[0].nx, 1);
	ck_assert_uint_eq(d.t[0].xv[0], 11);
	ck_assert_uint_eq(d.t[0].xv[1], 22);
	ck_assert_uint_eq(d.t[0].xv[2], 33);
	ck_assert_uint_eq(d.t[0].end_events, 4);
	unlink(dump_path);
}
END_TEST

START_TEST(nested_hooks_beyond_the_buffer_are_kept)
{
	struct dump d;

	agent_env("4K", "1M");
	ta_record(0x1000);
	freeze_block();
	for (int i = 0; i < 300; i++)
		ta_record(0x2000 | (i & 1 ? TA_REC_EXIT : 0));
	thaw_block();
	ta_record(0x1000 | TA_REC_EXIT);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	/* 8 put aside in TLS, 292 in the reserve: all written,
	 * in order, none lost. */
	ck_assert_uint_eq(d.t[0].n, 302);
	for (int i = 0; i < 300; i++)
		ck_assert_uint_eq(d.t[0].ev[1 + i], 0x2000 | (i & 1 ? TA_REC_EXIT : 0));
	ck_assert_uint_eq(d.t[0].end_lost, 0);
	ck_assert_uint_eq(d.end_events, 302);
	unlink(dump_path);
}
END_TEST

/* A signal handler that lands while its thread drains its own ring (the
 * slow path's throttle) cannot wait for a block at the memory cap: the code
 * it interrupted holds that ring (here: the test holds its consume lock),
 * so neither the handler nor the flusher can drain it before the handler
 * returns, and when the ring holds the whole pool the wait never ends (it
 * did: this test hung).  The handler takes blocks from the emergency
 * reserve beyond the cap instead, counted; nothing is lost. */
/* The thread's consume lock, as its own drain holds it: the flusher may
 * be writing the thread's first block out just then (it did, under qemu),
 * so it is waited for, yielding (usleep would be a recorded library call). */
static int take_consume_lock(struct ta_thread *t)
{
	for (int i = 0; i < 10000000; i++) {
		if (ta_consume_trylock(t))
			return 1;
		sched_yield();
	}
	return 0;
}

START_TEST(handler_in_its_own_drain_takes_the_reserve)
{
	struct dump d;
	struct ta_thread *t;
	const uint64_t pairs = 100000; /* ~790 blocks of 4K; the pool has 256 */
	uint64_t per_block;

	agent_env("4K", "1M");
	ta_record(0x1000); /* registers the thread */
	per_block = ta_block_events();
	t = ta_thread_self();
	ck_assert_int_eq(take_consume_lock(t), 1); /* as the interrupted drain */
	ta_ring_test_self_draining(1);
	for (uint64_t i = 0; i < pairs; i++) {
		ta_record(0x2000);
		ta_record(0x2000 | TA_REC_EXIT);
	}
	ta_ring_test_self_draining(0);
	ta_consume_unlock(t);
	/* Every block of the pool is in this ring, the rest came from the
	 * reserve. */
	ck_assert_uint_eq(ta_ring_reserve_taken(),
			  (1 + 2 * pairs + per_block - 1) / per_block - 256);
	ta_record(0x1000 | TA_REC_EXIT);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 1);
	ck_assert_uint_eq(d.t[0].n, 2 + 2 * pairs);
	for (uint64_t i = 0; i < 2 * pairs; i++)
		ck_assert_uint_eq(d.t[0].ev[1 + i], 0x2000 | (i & 1 ? TA_REC_EXIT : 0));
	ck_assert_uint_eq(d.t[0].end_lost, 0);
	ck_assert_uint_eq(d.end_events, 2 + 2 * pairs);
	ck_assert_uint_eq(d.end_lost, 0);
	unlink(dump_path);
}
END_TEST

/* The same handler writing more than the pool and the reserve hold: the
 * rest is counted lost (cause nested) at once, never waited for. */
START_TEST(handler_in_its_own_drain_past_the_reserve_counts)
{
	struct dump d;
	struct ta_thread *t;
	uint64_t per_block, room, pairs;

	agent_env("4K", "1M");
	ta_record(0x1000);
	per_block = ta_block_events();
	room = (256 + (16u << 20) / 4096) * per_block; /* pool + reserve */
	pairs = room / 2 + 5000;
	t = ta_thread_self();
	ck_assert_int_eq(take_consume_lock(t), 1);
	ta_ring_test_self_draining(1);
	for (uint64_t i = 0; i < pairs; i++) {
		ta_record(0x2000);
		ta_record(0x2000 | TA_REC_EXIT);
	}
	ta_ring_test_self_draining(0);
	ta_consume_unlock(t);
	ck_assert_uint_eq(ta_ring_reserve_taken(), (16u << 20) / 4096);
	ta_record(0x1000 | TA_REC_EXIT);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_uint_eq(d.t[0].n, room + 1);
	ck_assert_uint_eq(d.t[0].end_lost, 1 + 2 * pairs - room);
	ck_assert_uint_eq(d.end_events + d.end_lost, 2 + 2 * pairs);
	unlink(dump_path);
}
END_TEST

/*
 * A drain reads a block's state in steps (its next and its head; it once
 * read the limit too: three steps), and the block's producer may go on
 * between them: the flusher thread preempted there, as on a loaded machine
 * under qemu-user, where sigstorm lost 22 events about one run in 400.
 * The block's limit reads 0 while a handler's events are put aside
 * (ring.c's nest_push); the drain that took that 0 for "full", then found
 * the next block linked, freed the block with its last events never read.
 * Here the thread drains its own ring and, held up at step _i of its look
 * at the block, plays its producer there: its next event appends what was
 * put aside, then events until the block is full and the next one linked.
 * Every event is in the dump, in order.
 */
#define FILL_ADDR 0x4000
static const struct ta_block *hold_block;
static pthread_t hold_thread;
static int hold_at, hold_seen;
static uint64_t fill_pairs;

static void fill_block(const struct ta_block *b)
{
	while (!__atomic_load_n(&b->next, __ATOMIC_ACQUIRE)) {
		/* A block holds a few hundred: far more means the events go
		 * nowhere (the agent stopped). */
		ck_assert_uint_lt(fill_pairs, 1u << 20);
		ta_record(FILL_ADDR);
		ta_record(FILL_ADDR | TA_REC_EXIT);
		fill_pairs++;
	}
}

/* Only the test thread's drain of that block: the flusher thread's drains
 * go by untouched. */
static void hold_and_fill(const struct ta_block *b)
{
	if (b == hold_block && pthread_equal(pthread_self(), hold_thread) && hold_seen++ == hold_at)
		fill_block(b);
}

START_TEST(a_block_filled_during_its_drain_is_drained_whole)
{
	struct dump d;
	struct ta_thread *t;
	struct timespec t0;
	uint64_t i, n;

	agent_env("4K", "1M");
	ta_record(0x1000); /* registers the thread */
	for (i = 0; i < 10; i++) {
		ta_record(0x2000);
		ta_record(0x2000 | TA_REC_EXIT);
	}
	/* A handler's events in the middle of a hook: put aside, the
	 * block's limit 0 until the thread's next event. */
	freeze_block();
	ta_record(0x3000);
	ta_record(0x3000 | TA_REC_EXIT);
	thaw_block();
	hold_block = ta_cur;
	hold_thread = pthread_self();
	hold_at = _i;
	ta_flusher_test_hold(hold_and_fill);
	t = ta_thread_self();
	/* The flusher thread may be draining this ring just now: tried
	 * again, up to ~10 s. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!ta_flusher_help(t)) {
		ck_assert_msg(seconds_since(&t0) < 10, "the flusher held the ring for 10 s");
		sched_yield(); /* usleep would be a recorded library call */
	}
	ta_flusher_test_hold(NULL);
	/* A drain with fewer steps than _i: the block is filled after it. */
	ck_assert(_i > 0 || fill_pairs > 0);
	if (!fill_pairs)
		fill_block(hold_block);
	ta_record(0x1000 | TA_REC_EXIT);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 1);
	n = 1 + 20 + 2 + 2 * fill_pairs + 1;
	ck_assert_uint_eq(d.t[0].n, n);
	ck_assert_uint_eq(d.t[0].ev[0], 0x1000);
	for (i = 0; i < 20; i++)
		ck_assert_uint_eq(d.t[0].ev[1 + i], 0x2000 | (i & 1 ? TA_REC_EXIT : 0));
	ck_assert_uint_eq(d.t[0].ev[21], 0x3000);
	ck_assert_uint_eq(d.t[0].ev[22], 0x3000 | TA_REC_EXIT);
	for (i = 0; i < 2 * fill_pairs; i++)
		ck_assert_uint_eq(d.t[0].ev[23 + i], FILL_ADDR | (i & 1 ? TA_REC_EXIT : 0));
	ck_assert_uint_eq(d.t[0].ev[n - 1], 0x1000 | TA_REC_EXIT);
	ck_assert_uint_eq(d.t[0].end_lost, 0);
	ck_assert_uint_eq(d.end_events, n);
	unlink(dump_path);
}
END_TEST

static void *short_thread(void *p)
{
	record_tree((long)(intptr_t)p, 10);
	return NULL;
}

/* Until the flusher has drained every exited thread's record (and so
 * freed it for reuse), 10 s at most: a fixed nap left more than 100
 * records on a loaded machine. */
static void wait_exited_drained(void)
{
	for (int tries = 0; tries < 10000; tries++) {
		int exited = 0;

		/* Acquire: pairs with the flusher's release of a record it
		 * freed. */
		for (struct ta_thread *t = ta_threads; t; t = t->all_next)
			exited += __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == TA_T_EXITED;
		if (!exited)
			return;
		ta_flusher_kick();
		usleep(1000);
	}
	ck_abort_msg("exited threads' records still not drained after 10 s");
}

/* Threads that come and go reuse the records (and blocks) of the ones
 * that exited, and every one of them is in the dump whole. */
START_TEST(exited_threads_are_drained_and_reused)
{
	struct dump d;
	int records = 0;

	agent_env("4K", "1M");
	for (long i = 0; i < 200; i++) {
		pthread_t t;
		ck_assert_int_eq(pthread_create(&t, NULL, short_thread, (void *)(intptr_t)(i % 7)),
				 0);
		pthread_join(t, NULL);
		if (i % 20 == 0)
			wait_exited_drained();
	}
	for (struct ta_thread *t = ta_threads; t; t = t->all_next)
		records++;
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	/* Well below one record per thread: exited ones were reused. */
	ck_assert_int_lt(records, 100);
	ck_assert_uint_eq(d.end_events, 200 * 10 * 4);
	ck_assert_uint_eq(d.end_lost, 0);
	unlink(dump_path);
}
END_TEST

static struct ta_thread *reuse_record[2];
static uint64_t reuse_tid;
static int reuse_go;

static void *reuse_thread(void *p)
{
	long i = (long)(intptr_t)p;

	prctl(PR_SET_NAME, i ? "reused-b" : "reused-a", 0, 0, 0);
	if (i) {
		/* Release/acquire: the tid to main, and its rewrite of the
		 * first record back before this one registers. */
		__atomic_store_n(&reuse_tid, (uint64_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
		/* Up to 10 s: main gives up before. */
		for (int k = 0; k < 100000 && !__atomic_load_n(&reuse_go, __ATOMIC_ACQUIRE); k++)
			usleep(100);
	}
	record_tree(i, i ? 1 : 10);
	reuse_record[i] = ta_thread_self();
	return NULL;
}

/* The kernel reuses the tid of a thread that exited: when the new holder
 * registers before the old one was drained, the old one's THREAD_END still
 * comes before the new one's THREAD_START (a reader tells the two threads
 * apart by that order), though the new record is ahead in the list.  The
 * reuse is made by giving the first thread's exited record the second
 * one's tid while the flusher is held. */
START_TEST(reused_tid_ends_before_it_starts_again)
{
	struct dump d;

	agent_env("4K", "1M");
	ck_assert(ta_agent_ensure_started());
	ta_flusher_fork_prepare(); /* the flusher cannot drain */
	for (long i = 0; i < 2; i++) {
		pthread_t t;

		ck_assert_int_eq(pthread_create(&t, NULL, reuse_thread, (void *)(intptr_t)i), 0);
		if (i) {
			for (int k = 0;
			     k < 100000 && !__atomic_load_n(&reuse_tid, __ATOMIC_ACQUIRE); k++)
				usleep(100);
			ck_assert_msg(__atomic_load_n(&reuse_tid, __ATOMIC_ACQUIRE),
				      "the second thread did not start in 10 s");
			/* The first thread is gone, its record not drained. */
			ck_assert_uint_eq(
			    __atomic_load_n(&reuse_record[0]->state, __ATOMIC_ACQUIRE),
			    TA_T_EXITED);
			reuse_record[0]->tid = reuse_tid;
			__atomic_store_n(&reuse_go, 1, __ATOMIC_RELEASE);
		}
		pthread_join(t, NULL);
		ck_assert_ptr_nonnull(reuse_record[i]);
	}
	ck_assert_ptr_ne(reuse_record[0], reuse_record[1]);
	ta_flusher_fork_parent();
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 2);
	ck_assert_str_eq(d.t[0].name, "reused-a");
	ck_assert_uint_eq(d.t[0].n, 40);
	ck_assert_uint_eq(d.t[0].end_events, 40);
	ck_assert_str_eq(d.t[1].name, "reused-b");
	ck_assert_uint_eq(d.t[1].n, 4);
	ck_assert_uint_eq(d.t[1].end_events, 4);
	ck_assert(d.t[1].ended);
	unlink(dump_path);
}
END_TEST

/* Drop mode never waits: with the flusher held up, what does not fit is
 * dropped and counted, and the gap is marked in the stream where it was;
 * produced = recorded + lost, exactly. */
START_TEST(drop_mode_counts_and_marks_the_gap)
{
	struct dump d;
	const long before = 40000, after = 10; /* 160000 events: 2.5 pools */
	uint64_t produced = (uint64_t)(before + after) * 4;

	agent_env_mode("4K", "1M", "drop", NULL);
	ta_record(addr_of(0, 0)); /* registers the thread */
	ta_record(addr_of(0, 0) | TA_REC_EXIT);
	ta_flusher_fork_prepare(); /* the flusher cannot drain */
	record_tree(0, before);
	ta_flusher_fork_parent();
	/* It drains and frees the pool: waited for (a fixed 50 ms failed
	 * about one run in ten under load, the flusher not yet scheduled),
	 * up to 10 s, until one block is in use, the thread's current. */
	for (int i = 0; i < 10000 && ta_pool_used_bytes() > 4096; i++) {
		ta_flusher_kick();
		usleep(1000);
	}
	ck_assert_uint_le(ta_pool_used_bytes(), 4096);
	record_tree(0, after);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	produced += 2;
	ck_assert_int_eq(d.nthreads, 1);
	ck_assert_uint_gt(d.t[0].end_lost, 0);
	ck_assert_uint_eq(d.t[0].n + d.t[0].end_lost, produced);
	ck_assert_uint_eq(d.end_events + d.end_lost, produced);
	/* One gap, marked with its whole count, after what fitted. */
	ck_assert_int_eq(d.t[0].markers, 1);
	ck_assert_uint_eq(d.t[0].marker_lost, d.t[0].end_lost);
	ck_assert_uint_gt(d.t[0].marker_at, 60000);
	/* What was kept is the stream's start and end, in order. */
	for (size_t i = 0; i < d.t[0].marker_at; i++) {
		uint64_t want = i < 2 ? (addr_of(0, 0) | (i ? TA_REC_EXIT : 0)) : 0;
		if (i >= 2) {
			long k = (long)(i - 2);
			long c = k / 4;
			const uint64_t pat[4] = {addr_of(0, 0), addr_of(0, 1 + c % 3),
						 addr_of(0, 1 + c % 3) | TA_REC_EXIT,
						 addr_of(0, 0) | TA_REC_EXIT};
			want = pat[k % 4];
		}
		ck_assert_uint_eq(d.t[0].ev[i], want);
	}
	ck_assert_uint_eq(d.t[0].ev[d.t[0].n - 1], addr_of(0, 0) | TA_REC_EXIT);
	unlink(dump_path);
}
END_TEST

/* Every thread starts at one shared placeholder block (ring.c's
 * first_block); threads without a ring (drop mode, the pool used up while
 * the flusher is held) come back to the slow path through it or their own. */
#define RINGLESS_EVENTS 5

static void *ringless_thread(void *p)
{
	for (long i = 0; i < RINGLESS_EVENTS; i++)
		ta_record(addr_of(9, 0) | (i % 2 ? TA_REC_EXIT : 0));
	/* Registered, without a ring: its losses are its own. */
	ck_assert_ptr_nonnull(ta_thread_self());
	*(uint64_t *)p = ta_thread_self()->tid;
	return NULL;
}

/* Main records into the whole pool with the flusher held up; returns the
 * events it produced. */
static uint64_t fill_pool_dropping(void)
{
	agent_env_mode("4K", "1M", "drop", NULL);
	ta_record(addr_of(0, 0)); /* registers the thread */
	ta_record(addr_of(0, 0) | TA_REC_EXIT);
	ta_flusher_fork_prepare(); /* the flusher cannot drain */
	record_tree(0, 20000);	   /* 80000 events: more than the 256 blocks hold */
	return 2 + 20000 * 4;
}

/* What the END chunk counts beyond the threads' own counts. */
static uint64_t lost_no_ring(const struct dump *d)
{
	uint64_t threads = 0;

	for (int i = 0; i < d->nthreads; i++)
		threads += d->t[i].end_lost;
	ck_assert_uint_ge(d->end_lost, threads);
	return d->end_lost - threads;
}

/* A thread that never had a ring: in the dump all the same, its events
 * all lost, as its own, for want of a ring. */
static void check_ringless(const struct dump *d, uint64_t tid, uint64_t lost)
{
	const struct thread_log *t = find_tid(d, tid);

	ck_assert_int_eq(t->ended, 1);
	ck_assert_uint_eq(t->n, 0);
	ck_assert_uint_eq(t->end_events, 0);
	ck_assert_uint_eq(t->end_lost, lost);
	ck_assert_uint_eq(t->end_lost_by[TA_LOST_NO_RING], lost);
	ck_assert_uint_eq(lost_no_ring(d), 0);
}

/* Another ringless thread is in its fast path, between (A) and giving the
 * claim back, preempted there.  A thread that hooks meanwhile must not take
 * that for a nested hook of its own and put its events aside: it could
 * never append them, and they would be lost silently (the e2e crowd test's
 * rare "events + lost" short by a few, when the claim was a bit in the
 * placeholder block they shared). */
static pthread_barrier_t claim_held;

static void *claiming_thread(void *p)
{
	(void)p;
	ck_assert_int_eq(ta_claim(), 0); /* the fast path's (A) */
	pthread_barrier_wait(&claim_held);
	pthread_barrier_wait(&claim_held); /* preempted while the other hooks */
	ta_unclaim();
	return NULL;
}

START_TEST(ringless_hooks_do_not_look_nested)
{
	struct dump d;
	pthread_t c, t;
	uint64_t tid = 0;
	uint64_t produced = fill_pool_dropping();

	pthread_barrier_init(&claim_held, NULL, 2);
	ck_assert_int_eq(pthread_create(&c, NULL, claiming_thread, NULL), 0);
	pthread_barrier_wait(&claim_held);
	ck_assert_int_eq(pthread_create(&t, NULL, ringless_thread, &tid), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	pthread_barrier_wait(&claim_held);
	ck_assert_int_eq(pthread_join(c, NULL), 0);
	pthread_barrier_destroy(&claim_held);
	ta_flusher_fork_parent();
	produced += RINGLESS_EVENTS;
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 2);
	check_ringless(&d, tid, RINGLESS_EVENTS);
	ck_assert_uint_eq(d.end_events + d.end_lost, produced);
	unlink(dump_path);
}
END_TEST

static void *ringless_nested_thread(void *p)
{
	struct ta_block *idle = ta_cur;

	/* A signal handler's hooks while the slow path works (its placeholder
	 * in ta_cur): put aside... */
	ta_cur_stop();
	ta_record(addr_of(9, 0));
	ta_record(addr_of(9, 0) | TA_REC_EXIT);
	/* ...then the slow path, which could not give the thread a ring,
	 * ends, and its next event finds no block either. */
	ta_cur = idle;
	ta_record(addr_of(9, 1));
	ta_record(addr_of(9, 1) | TA_REC_EXIT);
	ck_assert_ptr_nonnull(ta_thread_self());
	*(uint64_t *)p = ta_thread_self()->tid;
	return NULL;
}

/* Events put aside by a handler in a thread that cannot get a ring have
 * nowhere to go: they are counted lost, the thread's own. */
START_TEST(ringless_nested_events_are_counted)
{
	struct dump d;
	pthread_t t;
	uint64_t tid = 0;
	uint64_t produced = fill_pool_dropping();

	ck_assert_int_eq(pthread_create(&t, NULL, ringless_nested_thread, &tid), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ta_flusher_fork_parent();
	produced += 4;
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 2);
	check_ringless(&d, tid, 4);
	ck_assert_uint_eq(d.end_events + d.end_lost, produced);
	unlink(dump_path);
}
END_TEST

/* Threads that start while the pool is used up (drop mode) lose their
 * first events, then record once the flusher frees blocks: each thread's
 * recorded + lost is what it produced, exactly, the losses in its own
 * THREAD_END (none in the process's alone) and marked where they were,
 * before its first recorded event. */
#define LATE_THREADS 8
#define LATE_BEFORE  7 /* calls without a ring: 28 events */
#define LATE_AFTER   50

static pthread_barrier_t late_ringless, late_freed;

static void *late_ring_thread(void *p)
{
	struct worker *w = p;

	record_tree(w->id, LATE_BEFORE);
	pthread_barrier_wait(&late_ringless);
	pthread_barrier_wait(&late_freed); /* main waits for free blocks */
	record_tree(w->id, LATE_AFTER);
	w->tid = ta_thread_self()->tid;
	return NULL;
}

START_TEST(ringless_threads_own_their_losses)
{
	struct dump d;
	pthread_t th[LATE_THREADS];
	struct worker w[LATE_THREADS];
	uint64_t produced = fill_pool_dropping(), threads_lost = 0;
	const struct thread_log *m;

	pthread_barrier_init(&late_ringless, NULL, LATE_THREADS + 1);
	pthread_barrier_init(&late_freed, NULL, LATE_THREADS + 1);
	for (long i = 0; i < LATE_THREADS; i++) {
		w[i] = (struct worker){.id = 1 + i, .calls = LATE_AFTER};
		ck_assert_int_eq(pthread_create(&th[i], NULL, late_ring_thread, &w[i]), 0);
	}
	pthread_barrier_wait(&late_ringless);
	ta_flusher_fork_parent();
	/* As in drop_mode_counts_and_marks_the_gap: up to 10 s for the
	 * flusher to free the pool but main's current block. */
	for (int i = 0; i < 10000 && ta_pool_used_bytes() > 4096; i++) {
		ta_flusher_kick();
		usleep(1000);
	}
	ck_assert_uint_le(ta_pool_used_bytes(), 4096);
	pthread_barrier_wait(&late_freed);
	for (int i = 0; i < LATE_THREADS; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&late_ringless);
	pthread_barrier_destroy(&late_freed);
	produced += (uint64_t)LATE_THREADS * (LATE_BEFORE + LATE_AFTER) * 4;
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, LATE_THREADS + 1);
	for (int i = 0; i < LATE_THREADS; i++) {
		const struct thread_log *t = find_tid(&d, w[i].tid);

		check_tree(t, w[i].id, LATE_AFTER);
		ck_assert_uint_eq(t->end_events, LATE_AFTER * 4);
		ck_assert_uint_eq(t->end_lost, LATE_BEFORE * 4);
		ck_assert_uint_eq(t->end_lost_by[TA_LOST_NO_RING], LATE_BEFORE * 4);
		ck_assert_int_eq(t->markers, 1);
		ck_assert_uint_eq(t->marker_lost, LATE_BEFORE * 4);
		ck_assert_uint_eq(t->marker_at, 0);
		threads_lost += t->end_lost;
	}
	/* Main's, all dropped at the cap. */
	m = find_tid(&d, (uint64_t)syscall(SYS_gettid));
	ck_assert_uint_eq(m->end_lost_by[TA_LOST_NO_RING], 0);
	ck_assert_uint_eq(m->n + m->end_lost, 2 + 20000 * 4);
	threads_lost += m->end_lost;
	ck_assert_uint_eq(lost_no_ring(&d), 0);
	ck_assert_uint_eq(d.end_lost, threads_lost);
	ck_assert_uint_eq(d.end_events + d.end_lost, produced);
	unlink(dump_path);
}
END_TEST

/* The flusher out of memory (its encoder's buffer may not grow: the
 * agent's fault injection, TRACEAGENT_TEST_ENCODER_MAX): what it cannot
 * encode is counted lost, cause no-memory, in the thread's THREAD_END and
 * the END, and the END says the dump is incomplete. */
static void check_nomem(const struct dump *d, uint64_t produced)
{
	const struct thread_log *t;

	ck_assert_int_eq(d->nthreads, 1);
	t = &d->t[0];
	ck_assert_int_eq(t->ended, 1);
	ck_assert_uint_gt(t->end_lost, 0);
	ck_assert_uint_eq(t->end_lost_by[TA_LOST_NO_MEMORY], t->end_lost);
	ck_assert_uint_eq(t->n, t->end_events);
	ck_assert_uint_eq(t->n + t->end_lost, produced);
	ck_assert_int_eq(d->ended, 1);
	ck_assert_uint_eq(d->end_lost, t->end_lost);
	ck_assert_uint_eq(d->end_lost_by[TA_LOST_NO_MEMORY], t->end_lost);
	ck_assert_uint_eq(d->end_events + d->end_lost, produced);
	ck_assert_uint_eq(d->end_flags & TA_END_F_INCOMPLETE, TA_END_F_INCOMPLETE);
}

/* No room for even a chunk's start: every event is lost, exactly. */
START_TEST(flusher_without_memory_loses_all_counted)
{
	struct dump d;

	agent_env_only("64K", "16M", NULL, NULL);
	setenv("TRACEAGENT_TEST_ENCODER_MAX", "1", 1);
	agent_start();
	record_tree(0, 20000);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	check_nomem(&d, 20000 * 4);
	ck_assert_uint_eq(d.t[0].n, 0);
	unlink(dump_path);
}
END_TEST

/* Room for small batches only: a block handed over whole (the flusher held
 * up while it fills) cannot be encoded, what comes after it can. */
START_TEST(flusher_out_of_memory_loses_a_block_counted)
{
	struct dump d;

	agent_env_only("64K", "16M", NULL, NULL);
	setenv("TRACEAGENT_TEST_ENCODER_MAX", "16K", 1);
	agent_start();
	ta_record(addr_of(0, 0)); /* starts the agent */
	ta_record(addr_of(0, 0) | TA_REC_EXIT);
	ta_flusher_fork_prepare(); /* the flusher cannot drain */
	record_tree(0, 2000);	   /* 8000 events: a block of 4096 full */
	ta_flusher_fork_parent();
	record_tree(0, 10);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	check_nomem(&d, 2 + 2010 * 4);
	/* A full block's batch (4096 slots, 80 KiB reserved) cannot fit. */
	ck_assert_uint_ge(d.t[0].end_lost, 4096 - 2);
	unlink(dump_path);
}
END_TEST

/* No memory for a thread's flush state (the allocation at its first
 * drain fails, ta_flusher_test_no_state): at its end, or the process's,
 * its events are counted lost, no-memory, in the END (no THREAD_START was
 * written, so no THREAD_END carries them), and the dump is incomplete. */
START_TEST(flusher_without_state_memory_counts_at_the_end)
{
	struct dump d;
	struct worker w = {.id = 1, .calls = 500};
	pthread_t th;

	agent_env("64K", "16M");
	ta_flusher_test_no_state(1);
	record_tree(0, 1000);
	ck_assert_int_eq(pthread_create(&th, NULL, worker_main, &w), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 0);
	ck_assert_int_eq(d.ended, 1);
	ck_assert_uint_eq(d.end_events, 0);
	ck_assert_uint_eq(d.end_lost, 1500 * 4);
	ck_assert_uint_eq(d.end_lost_by[TA_LOST_NO_MEMORY], 1500 * 4);
	ck_assert_uint_eq(d.end_flags & TA_END_F_INCOMPLETE, TA_END_F_INCOMPLETE);
	unlink(dump_path);
}
END_TEST

/* Flight mode keeps each thread's newest events, up to its quota, and
 * writes nothing until asked (here: at the end). */
START_TEST(flight_mode_keeps_the_newest_events)
{
	struct dump d;
	const long calls = 50000; /* 200000 events; the quota holds ~4000 */
	size_t kept, first;
	uint64_t written;

	agent_env_mode("4K", "1M", "flight", "64K");
	record_tree(0, 1); /* registers the thread */
	written = ta_dump_bytes();
	record_tree(0, calls - 1);
	usleep(30000); /* a flusher that wrote on its own would do it now */
	ck_assert_uint_eq(ta_dump_bytes(), written);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 1);
	kept = d.t[0].n;
	/* 16 blocks of 252 events at most, and more than one block. */
	ck_assert_uint_le(kept, 16 * 252);
	ck_assert_uint_gt(kept, 252);
	ck_assert_uint_eq(d.t[0].end_lost, 0);
	/* Exactly the last `kept` events produced, in order. */
	first = (size_t)calls * 4 - kept;
	for (size_t i = 0; i < kept; i++) {
		size_t k = first + i;
		/* Two record_tree calls: the second one counts from 0. */
		long c = k < 4 ? 0 : (long)((k - 4) / 4);
		const uint64_t pat[4] = {addr_of(0, 0), addr_of(0, 1 + c % 3),
					 addr_of(0, 1 + c % 3) | TA_REC_EXIT,
					 addr_of(0, 0) | TA_REC_EXIT};
		ck_assert_uint_eq(d.t[0].ev[i], pat[k % 4]);
	}
	unlink(dump_path);
}
END_TEST

/* A flight-mode cut empties the encoder's stack: the depth it knew for a
 * setjmp encoded before the cut means nothing for the frames after it, and
 * a longjmp to it pops none of them. */
START_TEST(flight_cut_forgets_setjmp_depths)
{
	struct dump d;
	const uint64_t env = 0xe000;
	const uint64_t *jmp = NULL;

	agent_env_mode("4K", "1M", "flight", "64K");
	ta_record(addr_of(0, 5));
	ta_record(addr_of(0, 6));
	ta_record_ext(TA_EXT_SETJMP, &env, 1); /* at depth 2 */
	ta_flusher_drain(0);		       /* the encoder has seen it */
	record_tree(0, 50000);		       /* 200000 events: the oldest go */
	ta_record(addr_of(0, 7));
	ta_record(addr_of(0, 8));
	ta_record(addr_of(0, 9));
	ta_record_ext(TA_EXT_LONGJMP, &env, 1);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 1);
	for (uint64_t i = 0, k = 0; i < d.t[0].n; i++) {
		if (!ta_raw_is_ext(d.t[0].ev[i]))
			continue;
		if (ta_raw_ext_kind(d.t[0].ev[i]) == TA_EXT_LONGJMP)
			jmp = d.t[0].xv + k * TA_EXT_MAX_VALUES;
		k++;
	}
	ck_assert_ptr_nonnull(jmp);
	ck_assert_uint_eq(jmp[0], env);
	ck_assert_uint_eq(jmp[1], 0); /* popped */
	unlink(dump_path);
}
END_TEST

START_TEST(thread_name_is_recorded)
{
	struct dump d;

	agent_env("4K", "1M");
	ta_record(0x1000);
	ta_thread_set_name((unsigned long)pthread_self(), "renamed-thread-longer-than-15");
	usleep(20000); /* the flusher may write it as a THREAD_NAME */
	ta_record(0x1000 | TA_REC_EXIT);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_str_eq(d.t[0].name, "renamed-thread-");
	unlink(dump_path);
}
END_TEST

START_TEST(existing_output_is_not_overwritten)
{
	struct stat st;
	FILE *f;

	agent_env_only("4K", "1M", NULL, NULL);
	f = fopen(dump_path, "w");
	fputs("precious", f);
	fclose(f);
	ta_record(0x1000);
	ck_assert_uint_eq(ta_state, TA_S_STOPPED);
	ck_assert_int_eq(stat(dump_path, &st), 0);
	ck_assert_int_eq(st.st_size, 8);
	unlink(dump_path);
}
END_TEST

START_TEST(sizes_and_output_patterns)
{
	uint64_t v;
	char out[64];

	ck_assert_int_eq(ta_parse_size("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(ta_parse_size("64K", &v), 0);
	ck_assert_uint_eq(v, 65536);
	ck_assert_int_eq(ta_parse_size("256MiB", &v), 0);
	ck_assert_uint_eq(v, 256u << 20);
	ck_assert_int_eq(ta_parse_size("2g", &v), 0);
	ck_assert_uint_eq(v, 2ull << 30);
	ck_assert_int_eq(ta_parse_size("", &v), -1);
	ck_assert_int_eq(ta_parse_size("-1", &v), -1);
	ck_assert_int_eq(ta_parse_size("12Q", &v), -1);
	ck_assert_int_eq(ta_parse_size("99999999999999999999", &v), -1);
	ck_assert_int_eq(ta_parse_size("17179869184G", &v), -1); /* overflows 64 bits */
	ck_assert_int_eq(ta_expand_output("run.%p.trace", 42, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "run.42.trace");
	ck_assert_int_eq(ta_expand_output("100%%-%p", 7, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "100%-7");
	ck_assert_int_eq(ta_expand_output("%p%p%p%p%p%p%p%p", 1234567, out, 16), -1);
}
END_TEST

/*
 * A signal can land between any two instructions of a hook, and its handler
 * can run instrumented code for as long as it likes.  Here the real hook is
 * single-stepped (x86's trap flag), and at step _i the SIGTRAP handler acts
 * as a heavy handler: its hooks fill the thread's block and move the thread
 * on to a new one, the old block is drained and freed, and another thread
 * takes it from the pool (the free list is LIFO: that very block).  A hook
 * that loaded ta_cur before the handler and claimed the block after it
 * would write its event into the other thread's block: lost from its own
 * stream, a foreign event in the other's.  At every step, each thread's
 * stream is exactly its own events.
 */
/* ThreadSanitizer's runtime would be stepped too: about 1900 steps a hook,
 * each signal through its handler wrapper, a second a run. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STEP_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define STEP_TSAN 1
#endif

#if defined(__x86_64__) && !defined(STEP_TSAN)
#define STEP_TEST 1
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>
#include <ucontext.h>

/* Runs of the loop test, one step each: more than an undisturbed call
 * takes (asserted).  GCC 12: 32 steps at -O2, 103 at -O0, 158 with
 * AddressSanitizer. */
#define STEP_RUNS 192
/* Past this many steps (a slow path) the rest runs at full speed. */
#define STEP_MAX 100000
#define X86_TF	 0x100

/* hooks.c's: no header declares them, the compiler calls them by name. */
void __cyg_profile_func_enter(void *fn, void *call_site);
void __cyg_profile_func_exit(void *fn, void *call_site);

/* Called through these, so that the calls are the hook's own code, never
 * inlined into the test. */
static void (*volatile step_enter)(void *, void *) = __cyg_profile_func_enter;
static void (*volatile step_exit)(void *, void *) = __cyg_profile_func_exit;

static void hook_enter(uint64_t addr)
{
	step_enter((void *)(uintptr_t)addr, NULL);
}

static void hook_exit(uint64_t addr)
{
	step_exit((void *)(uintptr_t)addr, NULL);
}

#define STEP_MAIN(k)  addr_of(0, k)
#define STEP_HANDLER  addr_of(1, 0)
#define STEP_OTHER(k) addr_of(2, k)
#define HANDLER_PAIRS 2

/* Where the handler's step fell: it decides whether the handler's events
 * or the hook's come first in the thread's stream, but inside the hook,
 * where the claim does. */
enum step_at { STEP_NONE, STEP_BEFORE_HOOK, STEP_IN_HOOK, STEP_AFTER_HOOK };

/* The SIGTRAP handler's state: written by the main thread and its
 * handler only, which sees its stores in program order. */
static struct {
	long act;		  /* the step at which the handler acts, or -1 */
	long steps;		  /* traps so far */
	uintptr_t entry;	  /* the hook's first instruction */
	uintptr_t entry_sp;	  /* %rsp there (the return address on top), 0 before */
	enum step_at at;	  /* where the handler acted */
	const struct ta_block *b; /* the thread's block before the call */
} step;

static sem_t other_go, other_done, other_end;
static uint64_t other_tid;

/* Every wait bounded: a test that hangs tells nothing. */
static int sem_wait_2s(sem_t *s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 2;
	while (sem_timedwait(s, &ts) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/* Not registered until it is let go: its first event then takes a block
 * from the pool.  It stays alive until the end so that its block is not
 * drained and freed under the hook that may still write into it. */
static void *step_other(void *p)
{
	(void)p;
	if (sem_wait_2s(&other_go) == 0) {
		hook_enter(STEP_OTHER(0));
		hook_enter(STEP_OTHER(1));
		__atomic_store_n(&other_tid, ta_thread_self()->tid, __ATOMIC_RELAXED);
	}
	sem_post(&other_done);
	sem_wait_2s(&other_end);
	hook_exit(STEP_OTHER(1));
	hook_exit(STEP_OTHER(0));
	return NULL;
}

/* The other thread records its first events, and the caller waits for them
 * (up to 2 s). */
static void let_other_record(void)
{
	sem_post(&other_go);
	sem_wait_2s(&other_done);
}

/* The heavy handler.  Its events fill the block the hook may have loaded
 * (one slot was left) and go on into a new one; that block is then
 * drained and freed (this thread drains its own ring, as the slow path's
 * throttle does; the flusher may be at it, so tried again, up to 2 s)
 * and the other thread takes it.  When the block did not fill (the
 * handler interrupted the hook between its claim and its publication, and
 * its events were put aside) nothing is freed and there is nothing to wait
 * for. */
static void step_heavy(void)
{
	struct ta_thread *me = ta_thread_self();

	for (int i = 0; i < HANDLER_PAIRS; i++) {
		hook_enter(STEP_HANDLER);
		hook_exit(STEP_HANDLER);
	}
	if (__atomic_load_n(&step.b->next, __ATOMIC_ACQUIRE)) {
		for (int ms = 0; ms < 2000; ms++) {
			struct timespec ts = {0, 1000000};

			/* One block in use, the thread's new one: the old
			 * one is on the free list (ta_flusher_help returns
			 * once the drain, ta_block_put included, is done). */
			if (ta_flusher_help(me) && ta_pool_used_bytes() <= 4096)
				break;
			ta_flusher_kick();
			nanosleep(&ts, NULL);
		}
	}
	let_other_record();
}

/* The kernel clears the trap flag for the handler and sigreturn restores
 * it: each trap is one instruction of the stepped code.  The return from
 * the hook is told by the stack pointer: at the hook's first instruction
 * its return address is on top, and only the ret lifts %rsp above that.
 * The first step after it is the last: stepping the test's own code would
 * tell nothing more. */
static void step_trap(int sig, siginfo_t *si, void *ctx)
{
	greg_t *r = ((ucontext_t *)ctx)->uc_mcontext.gregs;
	uintptr_t ip = (uintptr_t)r[REG_RIP], sp = (uintptr_t)r[REG_RSP];
	long n = step.steps++;
	int returned;

	(void)sig;
	(void)si;
	if (!step.entry_sp && ip == step.entry)
		step.entry_sp = sp;
	returned = step.entry_sp && sp > step.entry_sp;
	if (n == step.act) {
		if (!step.entry_sp)
			step.at = STEP_BEFORE_HOOK;
		else
			step.at = returned ? STEP_AFTER_HOOK : STEP_IN_HOOK;
		step_heavy();
	}
	/* Once the handler has acted the steps tell nothing more: the rest
	 * (a slow path, up to STEP_MAX steps of it, a signal each) runs at
	 * full speed. */
	if (returned || n >= STEP_MAX || (step.act >= 0 && n >= step.act))
		r[REG_EFL] &= ~(greg_t)X86_TF;
}

/* The entry hook of addr, single-stepped from just after the flag is set
 * (the red zone skipped: pushfq writes below %rsp).  The flag is cleared
 * after the call too, for when the handler did not. */
static __attribute__((noinline)) void stepped_enter(uint64_t addr, long act)
{
	step.act = act;
	step.steps = 0;
	step.entry = (uintptr_t)__cyg_profile_func_enter;
	step.entry_sp = 0;
	step.at = STEP_NONE;
	__asm__ volatile("lea -128(%%rsp), %%rsp\n\t"
			 "pushfq\n\t"
			 "orq %0, (%%rsp)\n\t"
			 "popfq\n\t"
			 "lea 128(%%rsp), %%rsp"
			 :
			 : "i"(X86_TF)
			 : "memory", "cc");
	hook_enter(addr);
	__asm__ volatile("lea -128(%%rsp), %%rsp\n\t"
			 "pushfq\n\t"
			 "andq %0, (%%rsp)\n\t"
			 "popfq\n\t"
			 "lea 128(%%rsp), %%rsp"
			 :
			 : "i"(~X86_TF)
			 : "memory", "cc");
}

/* The thread's stream is exactly want[0..n), in time order unless
 * `any_time` (below). */
static void check_stream(const struct thread_log *t, const char *who, const uint64_t *want,
			 size_t n, int any_time)
{
	for (size_t i = 0; i < t->n && i < n; i++)
		ck_assert_msg(t->ev[i] == want[i],
			      "%s thread: event %zu of %zu is %#llx, not %#llx", who, i, t->n,
			      (unsigned long long)t->ev[i], (unsigned long long)want[i]);
	ck_assert_msg(t->n == n, "%s thread: %zu events, not %zu", who, t->n, n);
	for (size_t i = 1; i < t->n && !any_time; i++)
		ck_assert_uint_ge(t->ticks[i], t->ticks[i - 1]);
	ck_assert(t->ended);
	ck_assert_uint_eq(t->end_events, n);
	ck_assert_uint_eq(t->end_lost, 0);
}
#else
#define STEP_RUNS 1
#endif

START_TEST(hook_interrupted_at_each_step_keeps_to_its_thread)
{
#if defined(STEP_TEST)
	struct sigaction sa = {.sa_sigaction = step_trap, .sa_flags = SA_SIGINFO};
	const uint64_t other_want[] = {STEP_OTHER(0), STEP_OTHER(1), STEP_OTHER(1) | TA_REC_EXIT,
				       STEP_OTHER(0) | TA_REC_EXIT};
	uint64_t want[512], main_tid;
	const struct thread_log *t;
	uint32_t fill, head;
	pthread_t other;
	struct dump d;
	size_t n = 0;
	int hook_first;

	agent_env("4K", "1M");
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGTRAP, &sa, NULL), 0);
	ck_assert_int_eq(sem_init(&other_go, 0, 0), 0);
	ck_assert_int_eq(sem_init(&other_done, 0, 0), 0);
	ck_assert_int_eq(sem_init(&other_end, 0, 0), 0);
	/* Registers the thread (the slow path, not
	 * stepped: long, and nothing to find there). */
	hook_enter(STEP_MAIN(0));
	want[n++] = STEP_MAIN(0);
	/* The steps of an undisturbed call: the loop must go past them. */
	stepped_enter(STEP_MAIN(1), -1);
	ck_assert_uint_ne(step.entry_sp, 0);
	ck_assert_int_le(step.steps, STEP_RUNS);
	hook_exit(STEP_MAIN(1));
	want[n++] = STEP_MAIN(1);
	want[n++] = STEP_MAIN(1) | TA_REC_EXIT;
	/* The block one event short of full: the handler's first event
	 * fills it (or the hook's does, and then the handler's go on). */
	fill = ta_block_events() - 1;
	ck_assert_uint_lt(fill, sizeof(want) / sizeof(want[0]) - 16);
	while (n + 2 <= fill) {
		hook_enter(STEP_MAIN(2));
		hook_exit(STEP_MAIN(2));
		want[n++] = STEP_MAIN(2);
		want[n++] = STEP_MAIN(2) | TA_REC_EXIT;
	}
	head = __atomic_load_n(&ta_cur->head, __ATOMIC_RELAXED);
	ck_assert_uint_eq(head, fill);
	ck_assert_int_eq(pthread_create(&other, NULL, step_other, NULL), 0);
	main_tid = ta_thread_self()->tid;
	step.b = ta_cur;
	stepped_enter(STEP_MAIN(3), _i);
	if (step.at == STEP_NONE)
		let_other_record(); /* _i is past the call's last step */
	hook_exit(STEP_MAIN(3));
	hook_exit(STEP_MAIN(0));
	sem_post(&other_end);
	ck_assert_int_eq(pthread_join(other, NULL), 0);
	ta_agent_shutdown();
	load_dump(dump_path, &d);
	ck_assert_int_eq(d.nthreads, 2);

	/* The other thread first: it holds the main thread's event, if it
	 * went astray. */
	ck_assert_uint_ne(other_tid, 0);
	check_stream(find_tid(&d, other_tid), "other", other_want, 4, 0);

	/* Where the handler ran decides the order: before the hook, its
	 * events come first; after it, the hook's; inside it, the hook's
	 * when the handler came after its claim (as in
	 * nested_hooks_are_recorded_in_order), the handler's when it came
	 * before.  One of those two, and nothing else. */
	t = find_tid(&d, main_tid);
	hook_first = step.at == STEP_AFTER_HOOK ||
		     (step.at == STEP_IN_HOOK && n < t->n && t->ev[n] == STEP_MAIN(3));
	if (hook_first || step.at == STEP_NONE)
		want[n++] = STEP_MAIN(3);
	for (int i = 0; step.at != STEP_NONE && i < HANDLER_PAIRS; i++) {
		want[n++] = STEP_HANDLER;
		want[n++] = STEP_HANDLER | TA_REC_EXIT;
	}
	if (!hook_first && step.at != STEP_NONE)
		want[n++] = STEP_MAIN(3);
	want[n++] = STEP_MAIN(3) | TA_REC_EXIT;
	want[n++] = STEP_MAIN(0) | TA_REC_EXIT;
	/* A hook reads the counter, then claims: a handler between the two
	 * records before the hook's event with later times (the encoder
	 * clamps the step back within a chunk; the handler's block went out
	 * in a chunk of its own here).  Not a loss, nor a foreign event. */
	check_stream(t, "main", want, n, step.at == STEP_IN_HOOK);

	ck_assert(d.ended);
	ck_assert_uint_eq(d.end_events, n + 4);
	ck_assert_uint_eq(d.end_lost, 0);
	sem_destroy(&other_go);
	sem_destroy(&other_done);
	sem_destroy(&other_end);
	unlink(dump_path);
#else
	/* Nothing to step with: no trap flag but on x86 (aarch64 is tested
	 * under qemu-user, which does not single-step a program for
	 * itself), and under ThreadSanitizer (above) too slow. */
#endif
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("ring");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, NULL, free_owned);
	tcase_add_test(tc, single_thread_wraps_the_pool);
	tcase_add_test(tc, waits_are_in_the_stream_where_they_were);
	tcase_add_test(tc, many_writers_lossless_at_the_cap);
	tcase_add_test(tc, nested_hooks_are_recorded_in_order);
	tcase_add_test(tc, nested_hooks_beyond_the_buffer_are_kept);
	tcase_add_test(tc, hooks_nested_in_a_claim_make_no_system_call);
	tcase_add_test(tc, handler_in_its_own_drain_takes_the_reserve);
	tcase_add_test(tc, handler_in_its_own_drain_past_the_reserve_counts);
	/* Each step of a drain's look at a block in turn. */
	tcase_add_loop_test(tc, a_block_filled_during_its_drain_is_drained_whole, 0, 3);
	tcase_add_test(tc, ext_events_stay_whole_across_blocks);
	tcase_add_test(tc, nested_ext_events_are_recorded_in_order);
	tcase_add_test(tc, exited_threads_are_drained_and_reused);
	tcase_add_test(tc, reused_tid_ends_before_it_starts_again);
	tcase_add_test(tc, drop_mode_counts_and_marks_the_gap);
	tcase_add_test(tc, ringless_hooks_do_not_look_nested);
	tcase_add_test(tc, ringless_nested_events_are_counted);
	tcase_add_test(tc, ringless_threads_own_their_losses);
	tcase_add_test(tc, flusher_without_memory_loses_all_counted);
	tcase_add_test(tc, flusher_out_of_memory_loses_a_block_counted);
	tcase_add_test(tc, flusher_without_state_memory_counts_at_the_end);
	tcase_add_test(tc, flight_mode_keeps_the_newest_events);
	tcase_add_test(tc, flight_cut_forgets_setjmp_depths);
	tcase_add_test(tc, thread_name_is_recorded);
	tcase_add_test(tc, existing_output_is_not_overwritten);
	tcase_add_test(tc, sizes_and_output_patterns);
	/* The hook interrupted at each of its steps in turn. */
	tcase_add_loop_test(tc, hook_interrupted_at_each_step_keeps_to_its_thread, 0, STEP_RUNS);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(ring_suite());
}
