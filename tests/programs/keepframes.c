/* SPDX-License-Identifier: MIT */
/*
 * keepframes.c - a game loop of N frames (argv[1], default 200) with known
 * slow frames, for TRACEAGENT_KEEP=slow-frames:... (keep mode).
 *
 * The main thread calls game() (once), which marks TA_FRAME_MARK() once
 * before the first frame, then for f = 1..N runs run_frame(f) and marks
 * its end: N + 1 marks, N frames.  run_frame(f) calls step() STEPS = 3
 * times, and in a slow frame (f % 50 == 7) slow_part() once, busy for
 * SLOW_MS = 60 ms of CLOCK_MONOTONIC; the other frames do no waiting at
 * all.  It hands the worker thread its part of the frame and waits for
 * it: worker_job() calls crunch() twice, inside the frame.  So in every
 * frame: run_frame 1, step 3, worker_job 1, crunch 2, and slow_part 1 in
 * the slow ones; game and worker_main are open across all frames.  main
 * and the waits are not instrumented.
 *
 * argv[2] and argv[3] change the slow frames' period (f % P == 7, P
 * default 50) and the steps per frame (default STEPS), for a long run's
 * measure (docs/bench.md).
 *
 * With KEEPFRAMES_GAPS=1 the frames have gaps between them: each frame is
 * TA_FRAME_BEGIN("frame") .. TA_FRAME_END("frame") around run_frame(f)
 * (no TA_FRAME_MARK), and before each frame but the first, in the gap,
 * load(f) runs, busy GAP_MS = 30 ms of CLOCK_MONOTONIC when f % 10 == 3
 * (a gap longer than a budget between the frames' lengths), microseconds
 * otherwise.
 *
 * With KEEPFRAMES_TIMES=FILE it writes to FILE the CLOCK_MONOTONIC time in
 * ns of each mark, one a line (with gaps: each frame's BEGIN and END):
 * the frame times as the program saw them, so a test tells the frames a
 * busy machine made slow as well.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "traceagent.h"

#define STEPS	3
#define SLOW_MS 60
#define GAP_MS	30
#define MAXF	1000000

#define NI __attribute__((no_instrument_function))

static sem_t go, done;
static volatile int stop;
static uint64_t checksum, worker_sum;
static uint64_t *mark_ns;
static int period = 50, steps = STEPS, gaps;

NI static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NI static void wait_sem(sem_t *s)
{
	while (sem_wait(s) != 0)
		;
}

__attribute__((noinline)) static uint64_t crunch(uint64_t x)
{
	return x * 2654435761u + 1;
}

__attribute__((noinline)) static void worker_job(uint64_t f)
{
	worker_sum += crunch(f) ^ crunch(f + 1);
}

__attribute__((noinline)) static void *worker_main(void *arg)
{
	uint64_t f = 0;

	(void)arg;
	for (;;) {
		wait_sem(&go);
		if (stop)
			break;
		worker_job(++f);
		sem_post(&done);
	}
	return NULL;
}

__attribute__((noinline)) static void step(int f, int i)
{
	checksum += (uint64_t)(f * STEPS + i);
}

/* Busy, not asleep: the frame's length is its own, measured with the
 * clock the marks are timed with. */
NI static void busy_ms(uint64_t ms)
{
	uint64_t end = now_ns() + ms * 1000000ull;

	while (now_ns() < end)
		;
}

__attribute__((noinline)) static void slow_part(void)
{
	busy_ms(SLOW_MS);
}

__attribute__((noinline)) static void load(int f)
{
	checksum += (uint64_t)f;
	if (f % 10 == 3)
		busy_ms(GAP_MS);
}

__attribute__((noinline)) static void run_frame(int f)
{
	sem_post(&go);
	for (int i = 0; i < steps; i++)
		step(f, i);
	if (f % period == 7)
		slow_part();
	wait_sem(&done);
}

__attribute__((noinline)) static void game_gaps(int frames)
{
	for (int f = 1; f <= frames; f++) {
		if (f > 1)
			load(f);
		TA_FRAME_BEGIN("frame");
		mark_ns[2 * f - 2] = now_ns();
		run_frame(f);
		TA_FRAME_END("frame");
		mark_ns[2 * f - 1] = now_ns();
	}
}

__attribute__((noinline)) static void game(int frames)
{
	if (gaps) {
		game_gaps(frames);
		return;
	}
	TA_FRAME_MARK();
	mark_ns[0] = now_ns();
	for (int f = 1; f <= frames; f++) {
		run_frame(f);
		TA_FRAME_MARK();
		mark_ns[f] = now_ns();
	}
}

NI int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 200;
	const char *times = getenv("KEEPFRAMES_TIMES");
	pthread_t worker;
	int nmarks;

	if (frames < 1 || frames > MAXF)
		frames = 200;
	if (argc > 2 && atoi(argv[2]) > 7)
		period = atoi(argv[2]);
	if (argc > 3 && atoi(argv[3]) > 0)
		steps = atoi(argv[3]);
	gaps = getenv("KEEPFRAMES_GAPS") && atoi(getenv("KEEPFRAMES_GAPS"));
	nmarks = gaps ? 2 * frames : frames + 1;
	mark_ns = calloc((size_t)nmarks, sizeof(*mark_ns));
	if (!mark_ns || sem_init(&go, 0, 0) || sem_init(&done, 0, 0) ||
	    pthread_create(&worker, NULL, worker_main, NULL))
		return 1;
	game(frames);
	stop = 1;
	sem_post(&go);
	pthread_join(worker, NULL);
	if (times) {
		FILE *f = fopen(times, "w");

		if (!f)
			return 1;
		for (int i = 0; i < nmarks; i++)
			fprintf(f, "%llu\n", (unsigned long long)mark_ns[i]);
		fclose(f);
	}
	printf("keepframes: %d frames, checksum %llu %llu\n", frames, (unsigned long long)checksum,
	       (unsigned long long)worker_sum);
	free(mark_ns);
	return 0;
}
