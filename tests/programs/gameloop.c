/* SPDX-License-Identifier: MIT */
/*
 * gameloop.c - a game loop on three threads, marked with the manual API,
 * with two frames made slow on purpose (for `traceagent frames`).
 *
 * The main thread starts the other two, then calls game() (once), which
 * runs FRAMES = 60 frames and marks each with TA_FRAME_MARK() at its end.
 * A frame is run_frame(): zone "update" with 4 calls of update_entity()
 * (each a zone "entity" of 100 us), then zone "render" (400 us).  Frame
 * 20's render takes 20 ms more; frame 45 also has zone "load level"
 * (20 ms), the only one.  So: game 1, run_frame 60, update_entity 240;
 * zones update 60, entity 240, render 60, load level 1.  main is not
 * instrumented.
 *
 * The physics thread runs 2 ticks per frame in lockstep with the main
 * thread (it waits on a semaphore the main thread posts at each frame's
 * start and after its update): zone "physics step" (100 us) and
 * TA_FRAME_MARK_NAMED("physics"), 120 of each.  The worker runs a job
 * every third frame (0, 3, ... 57): zone "job" calling crunch() (150 us),
 * 20 of each.
 *
 * Counters: "entities" = 100 + f and "load" = f / 60.0 at every frame f
 * (60 samples each); messages "level 1 loaded" (frame 0) and "level 2
 * loaded" (frame 45); the instant "halfway" at frame 30.
 *
 * The waits and the busy loops are not instrumented, so their time is the
 * self time of the zone they are in, or of nothing (a thread waiting for
 * work is idle, not a culprit); the waits are semaphores, which the
 * agent's default library calls (io, sleep) do not record.  It prints one
 * line that does not depend on timing and exits 0.
 *
 * With GAMELOOP_TIMES=FILE it also writes to FILE the CLOCK_MONOTONIC
 * times in ns of game()'s start and of each mark, one a line: the frame
 * times as the program saw them, for a test to tell a frame a busy
 * machine made slow from a mistake of the analyzer.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "traceagent.h"

#define FRAMES	      60
#define ENTITIES      4
#define PHYSICS_TICKS 2 /* per frame */
#define JOB_EVERY     3
#define SLOW_RENDER   20
#define LOAD_LEVEL    45
/* How much longer the slow frames are: large beside what a busy machine
 * adds to a frame now and then. */
#define SLOW_US 20000

#define NI __attribute__((no_instrument_function))

static sem_t physics_go, worker_go;
static uint64_t checksum, physics_sum, worker_sum;
static uint64_t mark_ns[FRAMES + 1];

NI static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Busy for us microseconds of wall time: the same length whatever the
 * machine's speed. */
NI static void spin(uint64_t us)
{
	uint64_t end = now_ns() + us * 1000;

	while (now_ns() < end)
		;
}

NI static void wait_sem(sem_t *s)
{
	while (sem_wait(s) != 0)
		;
}

__attribute__((noinline)) static uint64_t crunch(uint64_t x)
{
	spin(150);
	return x * 2654435761u + 1;
}

__attribute__((noinline)) static void update_entity(int f, int i)
{
	TA_ZONE("entity");
	spin(100);
	checksum += (uint64_t)(f * ENTITIES + i);
}

__attribute__((noinline)) static void run_frame(int f)
{
	sem_post(&physics_go);
	if (f % JOB_EVERY == 0)
		sem_post(&worker_go);
	{
		TA_ZONE("update");
		for (int i = 0; i < ENTITIES; i++)
			update_entity(f, i);
	}
	sem_post(&physics_go);
	{
		TA_ZONE("render");
		spin(f == SLOW_RENDER ? 400 + SLOW_US : 400);
	}
	if (f == LOAD_LEVEL) {
		TA_ZONE("load level");
		spin(SLOW_US);
		TA_MESSAGE("level %d loaded", 2);
	}
	TA_COUNTER("entities", 100 + f);
	TA_COUNTER_F("load", f / 60.0);
	if (f == FRAMES / 2)
		TA_INSTANT("halfway");
}

NI static void *physics_main(void *arg)
{
	(void)arg;
	for (int t = 0; t < FRAMES * PHYSICS_TICKS; t++) {
		wait_sem(&physics_go);
		{
			TA_ZONE("physics step");
			spin(100);
			physics_sum += (uint64_t)t;
		}
		TA_FRAME_MARK_NAMED("physics");
	}
	return NULL;
}

NI static void *worker_main(void *arg)
{
	uint64_t x = 1;

	(void)arg;
	for (int j = 0; j < FRAMES / JOB_EVERY; j++) {
		wait_sem(&worker_go);
		{
			TA_ZONE("job");
			x = crunch(x);
			worker_sum++;
		}
	}
	return NULL;
}

/* The game proper: the main thread's first event, so the first frame
 * (from it to the first mark) is a frame like the others. */
__attribute__((noinline)) static void game(void)
{
	mark_ns[0] = now_ns();
	TA_MESSAGE("level %d loaded", 1);
	for (int f = 0; f < FRAMES; f++) {
		run_frame(f);
		TA_FRAME_MARK();
		mark_ns[f + 1] = now_ns();
	}
}

NI static int write_times(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	for (int i = 0; i <= FRAMES; i++)
		fprintf(f, "%llu\n", (unsigned long long)mark_ns[i]);
	return fclose(f);
}

NI int main(void)
{
	pthread_t physics, worker;

	sem_init(&physics_go, 0, 0);
	sem_init(&worker_go, 0, 0);
	if (pthread_create(&physics, NULL, physics_main, NULL) ||
	    pthread_create(&worker, NULL, worker_main, NULL)) {
		fprintf(stderr, "gameloop: cannot start the threads\n");
		return 1;
	}
	game();
	pthread_join(physics, NULL);
	pthread_join(worker, NULL);
	if (getenv("GAMELOOP_TIMES") && write_times(getenv("GAMELOOP_TIMES")) < 0) {
		perror(getenv("GAMELOOP_TIMES"));
		return 1;
	}
	printf("gameloop: %d frames, %d physics ticks, %llu jobs, checksum %llu\n", FRAMES,
	       FRAMES * PHYSICS_TICKS, (unsigned long long)worker_sum,
	       (unsigned long long)(checksum + physics_sum));
	return 0;
}
