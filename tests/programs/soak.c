/* SPDX-License-Identifier: MIT */
/*
 * soak.c - the soak test's program (scripts/soak): THREADS threads call
 * randomly nested instrumented functions for SECONDS seconds while signal
 * handlers run instrumented code on top of them and some calls fork a
 * child that goes on inside the frames it inherited.  Every process counts
 * what it did itself and writes it to OUTDIR/counts.<pid>.<start> as it
 * ends (start: /proc/self/stat's field 22, which tells apart two processes
 * given the same pid in a run longer than pid_max forks):
 *
 *   pid P
 *   start S             (its start in clock ticks after boot; 0: not known)
 *   parent PP
 *   forks N             (children this process forked and reaped)
 *   failed N            (children that did not end with status 0)
 *   fn NAME ENTERS EXITS INHERITED
 *
 * ENTERS and EXITS are the entry and exit events the function produced in
 * this process; INHERITED the frames of it that a child found open on its
 * stack at the fork (entered in the parent, left in the child).  Only the
 * soak_* functions are instrumented; the rest of this file is not, so the
 * counts are every event the agent can see.
 *
 * usage: soak THREADS SECONDS OUTDIR
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINST	  __attribute__((no_instrument_function))
#define NF	  8  /* soak_f0 .. soak_f7: the workers' functions */
#define NH	  3  /* soak_h0 .. soak_h2: the signal handlers' functions */
#define MAX_DEPTH 12 /* nesting of a worker's call tree */
#define STACK_MAX 64
#define FORK_ODDS 200000 /* a call forks with probability 1 / FORK_ODDS */

/* Per thread: only this thread writes them, the handler only h_*, so no
 * update is ever interrupted by another update of the same counter. */
static __thread uint64_t f_enter[NF], f_exit[NF], h_enter[NH], h_exit[NH];
static __thread uint8_t stack_ids[STACK_MAX];
static __thread int stack_depth;
static __thread uint64_t rng, h_rng;

/* The process's totals, summed as threads end. */
static pthread_mutex_t totals_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t tot_f_enter[NF], tot_f_exit[NF], tot_h_enter[NH], tot_h_exit[NH];
static uint64_t inherited[NF];
static uint64_t forks, failed_children;

static const char *outdir;
static int in_child;
static volatile int stop;
static struct timespec deadline;
static pthread_t *workers;
static int nworkers;
/* A worker marks itself done under the write lock; the signaller signals
 * only workers not done, under the read lock, so never one that ended. */
static pthread_rwlock_t done_lock = PTHREAD_RWLOCK_INITIALIZER;
static char *done;

static volatile unsigned long sink;

NOINST static uint64_t next(uint64_t *s)
{
	/* xorshift64 */
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

NOINST static void spin(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		sink += i;
}

NOINST static int past_deadline(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline.tv_sec ||
	       (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec);
}

/* ---- the counts file ---------------------------------------------------------- */

static const char *const f_names[NF] = {"soak_f0", "soak_f1", "soak_f2", "soak_f3",
					"soak_f4", "soak_f5", "soak_f6", "soak_f7"};
static const char *const h_names[NH] = {"soak_h0", "soak_h1", "soak_h2"};

/* Field 22 of /proc/self/stat, as the agent writes it in PROCESS. */
NOINST static unsigned long long boot_start(void)
{
	char st[1024];
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n = f ? fread(st, 1, sizeof(st) - 1, f) : 0;
	const char *p;
	unsigned long long v = 0;
	int field = 2;

	if (f)
		fclose(f);
	st[n] = 0;
	p = strrchr(st, ')');
	if (!p)
		return 0;
	for (p++; *p && field < 22; p++)
		field += *p == ' ';
	if (field == 22)
		v = strtoull(p, NULL, 10);
	return v;
}

NOINST static void write_counts(void)
{
	char path[4096];
	unsigned long long start = boot_start();
	FILE *f;

	snprintf(path, sizeof(path), "%s/counts.%ld.%llu", outdir, (long)getpid(), start);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "soak: %s: %s\n", path, strerror(errno));
		_exit(3);
	}
	fprintf(f, "pid %ld\nstart %llu\nparent %ld\nforks %llu\nfailed %llu\n", (long)getpid(),
		start, (long)getppid(), (unsigned long long)forks,
		(unsigned long long)failed_children);
	for (int i = 0; i < NF; i++)
		fprintf(f, "fn %s %llu %llu %llu\n", f_names[i], (unsigned long long)tot_f_enter[i],
			(unsigned long long)tot_f_exit[i], (unsigned long long)inherited[i]);
	for (int i = 0; i < NH; i++)
		fprintf(f, "fn %s %llu %llu 0\n", h_names[i], (unsigned long long)tot_h_enter[i],
			(unsigned long long)tot_h_exit[i]);
	if (fclose(f) != 0) {
		fprintf(stderr, "soak: %s: %s\n", path, strerror(errno));
		_exit(3);
	}
}

/* Adds this thread's counts to the process's (in a forked child, alone,
 * without the lock, which another thread may have held at the fork). */
NOINST static void add_thread_counts(int lock)
{
	if (lock)
		pthread_mutex_lock(&totals_lock);
	for (int i = 0; i < NF; i++) {
		tot_f_enter[i] += f_enter[i];
		tot_f_exit[i] += f_exit[i];
	}
	for (int i = 0; i < NH; i++) {
		tot_h_enter[i] += h_enter[i];
		tot_h_exit[i] += h_exit[i];
	}
	if (lock)
		pthread_mutex_unlock(&totals_lock);
}

/* ---- the signal handlers' functions ---------------------------------------------- */

static void soak_h0(int depth);
static void soak_h1(int depth);
static void soak_h2(int depth);
static void (*const h_table[NH])(int) = {soak_h0, soak_h1, soak_h2};

NOINST static void h_body(int depth)
{
	spin(20);
	if (depth > 0)
		h_table[1 + next(&h_rng) % 2](depth - 1);
}

#define H(i)                                                                                       \
	__attribute__((noipa)) static void soak_h##i(int depth)                                    \
	{                                                                                          \
		h_enter[i]++;                                                                      \
		h_body(depth);                                                                     \
		h_exit[i]++;                                                                       \
	}
H(0)
H(1)
H(2)

NOINST static void on_signal(int sig)
{
	int e = errno;

	soak_h0((int)(next(&h_rng) % 4));
	errno = e;
	(void)sig;
}

/* ---- the workers' functions ---------------------------------------------------------- */

static void soak_f0(int depth);
static void soak_f1(int depth);
static void soak_f2(int depth);
static void soak_f3(int depth);
static void soak_f4(int depth);
static void soak_f5(int depth);
static void soak_f6(int depth);
static void soak_f7(int depth);
static void (*const f_table[NF])(int) = {soak_f0, soak_f1, soak_f2, soak_f3,
					 soak_f4, soak_f5, soak_f6, soak_f7};

/*
 * The child goes on inside the frames it inherited, with counts of its
 * own: the frames open now are entered in the parent and left here.
 */
NOINST static void fork_here(void)
{
	pid_t pid = fork();
	int status = 0, rc;

	if (pid < 0)
		return;
	if (pid == 0) {
		in_child = 1;
		memset(f_enter, 0, sizeof(f_enter));
		memset(f_exit, 0, sizeof(f_exit));
		memset(h_enter, 0, sizeof(h_enter));
		memset(h_exit, 0, sizeof(h_exit));
		memset(tot_f_enter, 0, sizeof(tot_f_enter));
		memset(tot_f_exit, 0, sizeof(tot_f_exit));
		memset(tot_h_enter, 0, sizeof(tot_h_enter));
		memset(tot_h_exit, 0, sizeof(tot_h_exit));
		memset(inherited, 0, sizeof(inherited));
		forks = failed_children = 0;
		for (int i = 0; i < stack_depth; i++)
			inherited[stack_ids[i]]++;
		return;
	}
	while ((rc = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&totals_lock);
	forks++;
	if (rc < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		failed_children++;
	pthread_mutex_unlock(&totals_lock);
}

NOINST static void f_body(int depth)
{
	spin(1000 + (unsigned)(next(&rng) % 2000));
	if (depth > 0) {
		int n = 1 + (int)(next(&rng) % 2);

		for (int i = 0; i < n; i++)
			f_table[next(&rng) % NF](depth - 1);
	}
	if (!in_child && next(&rng) % FORK_ODDS == 0)
		fork_here();
}

#define F(i)                                                                                       \
	__attribute__((noipa)) static void soak_f##i(int depth)                                    \
	{                                                                                          \
		f_enter[i]++;                                                                      \
		stack_ids[stack_depth++] = i;                                                      \
		f_body(depth);                                                                     \
		stack_depth--;                                                                     \
		f_exit[i]++;                                                                       \
	}
F(0)
F(1)
F(2)
F(3)
F(4)
F(5)
F(6)
F(7)

/* ---- threads ------------------------------------------------------------------------- */

NOINST static void block_signals(int how)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(how, &set, NULL);
}

NOINST static void *worker(void *arg)
{
	rng = 0x2545f4914f6cdd1dull * ((uint64_t)(uintptr_t)arg + 1);
	h_rng = 0x9e3779b97f4a7c15ull * ((uint64_t)(uintptr_t)arg + 3);
	block_signals(SIG_UNBLOCK);
	while (!past_deadline()) {
		f_table[next(&rng) % NF]((int)(next(&rng) % MAX_DEPTH));
		if (in_child) {
			/* A forked child: what it inherited has unwound; it
			 * is the only thread here. */
			add_thread_counts(0);
			write_counts();
			exit(0);
		}
	}
	/* No handler may run on this thread once its counts are in. */
	block_signals(SIG_BLOCK);
	add_thread_counts(1);
	pthread_rwlock_wrlock(&done_lock);
	done[(uintptr_t)arg] = 1;
	pthread_rwlock_unlock(&done_lock);
	return NULL;
}

/* SIGUSR1 to a random worker every 100 us or so. */
NOINST static void *signaller(void *arg)
{
	uint64_t s = 0x853c49e6748fea9bull;
	struct timespec ts = {0, 100000};

	(void)arg;
	while (!stop) {
		uint64_t i = next(&s) % (uint64_t)nworkers;

		pthread_rwlock_rdlock(&done_lock);
		if (!done[i])
			pthread_kill(workers[i], SIGUSR1);
		pthread_rwlock_unlock(&done_lock);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

NOINST int main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval it = {{0, 1000}, {0, 1000}}; /* SIGALRM every ms */
	pthread_t sig;
	int seconds;

	if (argc != 4 || (nworkers = atoi(argv[1])) <= 0 || (seconds = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: soak THREADS SECONDS OUTDIR\n");
		return 2;
	}
	outdir = argv[3];
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += seconds;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	/* Handlers do not nest: each counts on its own thread's counters. */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGALRM);
	sigaddset(&sa.sa_mask, SIGUSR1);
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	/* Only the workers take signals (they unblock them). */
	block_signals(SIG_BLOCK);

	workers = calloc((size_t)nworkers, sizeof(*workers));
	done = calloc((size_t)nworkers, 1);
	if (!workers || !done)
		return 1;
	for (int i = 0; i < nworkers; i++)
		if (pthread_create(&workers[i], NULL, worker, (void *)(uintptr_t)i) != 0) {
			fprintf(stderr, "soak: cannot create a thread\n");
			return 1;
		}
	pthread_create(&sig, NULL, signaller, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < nworkers; i++)
		pthread_join(workers[i], NULL);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	stop = 1;
	pthread_join(sig, NULL);
	write_counts();
	printf(
	    "soak: %d threads, %d s: %llu calls, %llu signal handlers, %llu forks (%llu failed)\n",
	    nworkers, seconds,
	    (unsigned long long)(tot_f_enter[0] + tot_f_enter[1] + tot_f_enter[2] + tot_f_enter[3] +
				 tot_f_enter[4] + tot_f_enter[5] + tot_f_enter[6] + tot_f_enter[7]),
	    (unsigned long long)tot_h_enter[0], (unsigned long long)forks,
	    (unsigned long long)failed_children);
	return failed_children ? 1 : 0;
}
