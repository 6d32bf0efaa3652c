/* SPDX-License-Identifier: MIT */
/*
 * placement.c - the flusher's place among the program's threads: which CPU
 * it runs on, and whether the CPU time LZ4 takes is spare or the program's.
 * Called by the flusher thread between its passes; the program's threads
 * and their masks are never touched.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "placement.h"
#include "ring.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Keeps the flusher off the CPUs its producers run on, when the process
 * may use another.  Its wake-ups (a producer's futex wake, its own timer)
 * leave it on the CPU it last ran on or the waker's, and where the kernel
 * sees no cache shared between CPUs (VMs that show no cache topology) it
 * never looks for an idle one: a flusher that once landed on a producer's
 * CPU would stay there for the whole run, the two time-sharing one core
 * while another stays idle (docs/bench.md has what that costs).  So after
 * each wake-up it checks whether a producer handed a block over on its CPU
 * since the last pass, and if another CPU of its affinity mask had none,
 * it moves there: pinned to it for the move, then its mask back as it was
 * (the kernel does not move a task whose mask holds its CPU).  At most
 * every 10 ms; nothing when every CPU has a producer (more threads than
 * cores: then the scheduler shares them out).
 */
void ta_place_flusher(void)
{
	static uint64_t last_ms;
	cpu_set_t busy, mask, one;
	int me, to = -1;
	uint64_t now;

	CPU_ZERO(&busy);
	for (struct ta_thread *t = __atomic_load_n(&ta_threads, __ATOMIC_ACQUIRE); t;
	     t = t->all_next) {
		/* Relaxed, pairs with nothing: a hint, and a stale one
		 * only delays a move to the next pass. */
		uint32_t c = __atomic_exchange_n(&t->cpu_seen, 0, __ATOMIC_RELAXED);

		if (c && c - 1 < CPU_SETSIZE)
			CPU_SET(c - 1, &busy);
	}
	me = sched_getcpu();
	if (me < 0 || me >= CPU_SETSIZE || !CPU_ISSET(me, &busy))
		return;
	now = clock_ns(CLOCK_MONOTONIC) / 1000000;
	if (now - last_ms < 10)
		return;
	last_ms = now;
	if (sched_getaffinity(0, sizeof(mask), &mask) != 0)
		return;
	for (int c = 0; c < CPU_SETSIZE && to < 0; c++)
		if (CPU_ISSET(c, &mask) && !CPU_ISSET(c, &busy))
			to = c;
	if (to < 0)
		return;
	CPU_ZERO(&one);
	CPU_SET(to, &one);
	if (sched_setaffinity(0, sizeof(one), &one) == 0)
		sched_setaffinity(0, sizeof(mask), &mask);
}

/*
 * Compression only when the flusher has CPU to spare.  LZ4 is about half
 * of the flusher's work on an event, and writing the payload as it is
 * costs a little more I/O than writing it compressed (its bytes are about
 * 2.7 times as many).  While one of the program's CPUs is idle that work
 * is free to the program; once the program's threads keep every CPU of
 * the mask busy (more threads than cores), every nanosecond of it is taken
 * from them (docs/bench.md: the placement figures).  So every SLACK_MS
 * the flusher compares the CPU time the process used, less its own, with
 * the CPUs it may use: above all of them but three quarters of one, the
 * chunks written until the next look are stored as they are (FORMAT.md:
 * chunk flag bit 0 clear); else compressed.  A program of one thread
 * never uses more than one CPU, so on two or more it is always
 * compressed.  Other processes' CPU time is not counted: the scheduler
 * shares the CPUs among all runnable threads, so the flusher's work then
 * comes partly out of theirs (4 threads on 2 CPUs beside one busy process
 * get 1.33 CPUs: still judged busy).
 */
#define SLACK_MS 20

/* 1 if the program's threads (cpu_ns of CPU time in wall_ns) used more
 * than all ncpu CPUs but three quarters of one. */
static int program_busy(uint64_t cpu_ns, uint64_t wall_ns, int ncpu)
{
	return ncpu > 0 && cpu_ns * 4 > wall_ns * (uint64_t)(4 * ncpu - 3);
}

/* The last look's clocks (the flusher thread's own; 0: none yet). */
static uint64_t slack_wall, slack_proc, slack_self;

int ta_slack_judge(void)
{
	uint64_t wall = clock_ns(CLOCK_MONOTONIC), proc, self;
	cpu_set_t mask;
	int busy = -1;

	if (slack_wall && wall - slack_wall < SLACK_MS * 1000000ull)
		return -1;
	proc = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	self = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	/* Clocks that went back (none should) only start a new look. */
	if (slack_wall && proc >= slack_proc && self >= slack_self &&
	    proc - slack_proc >= self - slack_self &&
	    sched_getaffinity(0, sizeof(mask), &mask) == 0)
		busy = program_busy((proc - slack_proc) - (self - slack_self), wall - slack_wall,
				    CPU_COUNT(&mask));
	slack_wall = wall;
	slack_proc = proc;
	slack_self = self;
	return busy;
}

void ta_slack_reset(void)
{
	slack_wall = slack_proc = slack_self = 0;
}
