/* SPDX-License-Identifier: MIT */
/*
 * libcalls.c - known library calls for the library-call tests
 * (tests/e2e/test_libcalls.py): `libcalls MODE`.
 *
 *   alloc  exact allocations in work_alloc (all freed) and one known leak
 *          of 777 bytes in leaker
 *   lock   two threads: holder keeps a mutex while waiter is blocked on it,
 *          and prints how long it held it from the moment the waiter was
 *          blocked (the waiter's recorded wait must be at least that)
 *   sync   a condition wait (signalled by another thread), rwlocks and a
 *          semaphore: known numbers of each
 *   io     known sizes written and read on two fds, whose numbers it prints
 *   sleep  nanosleep of 20 ms and usleep of 1 ms in napper
 *   errno  failing calls: prints errno after each (same traced or not)
 *   ctor   allocates, locks and writes in a constructor, a destructor and an
 *          atexit handler (no recursion, no deadlock, same output)
 *   names  locks and unlocks, once each: cache_lock (a static mutex), the
 *          mutex inside the block cache_new allocates, the one inside stats
 *          (a static struct) and one on the stack; prints their addresses
 *          (and the block's and stats')
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static void *volatile keep;

/* Every block goes through keep, so the compiler cannot drop a
 * malloc/free pair (it may at -O2). */
static void work_alloc(void)
{
	void *a;

	for (int i = 0; i < 10; i++) {
		keep = malloc(100);
		free(keep);
	}
	keep = calloc(3, 50);
	keep = realloc(keep, 300);
	free(keep);
	if (posix_memalign(&a, 64, 256) == 0) {
		keep = a;
		free(keep);
	}
	keep = aligned_alloc(64, 128);
	free(keep);
	keep = NULL;
}

static void leaker(void)
{
	keep = malloc(777);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static int held, waiting; /* atomic */
static uint64_t hold_ns;

static void *holder(void *arg)
{
	struct timespec ts = {0, 50 * 1000 * 1000};
	uint64_t t0;

	(void)arg;
	pthread_mutex_lock(&mtx);
	__atomic_store_n(&held, 1, __ATOMIC_RELEASE);
	/* Until the waiter is blocked in the lock: glibc marks a mutex with
	 * waiters by 2 in its lock word, set by the waiter inside
	 * pthread_mutex_lock, so after its zone began. */
	while (!__atomic_load_n(&waiting, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&mtx.__data.__lock, __ATOMIC_RELAXED) != 2)
		sched_yield();
	t0 = now_ns();
	nanosleep(&ts, NULL);
	hold_ns = now_ns() - t0;
	pthread_mutex_unlock(&mtx);
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
		sched_yield();
	__atomic_store_n(&waiting, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&mtx);
	pthread_mutex_unlock(&mtx);
	return NULL;
}

static int do_lock(void)
{
	pthread_t a, b;

	if (pthread_create(&a, NULL, holder, NULL) || pthread_create(&b, NULL, waiter, NULL))
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("lock %p held %llu\n", (void *)&mtx, (unsigned long long)hold_ns);
	return 0;
}

static pthread_mutex_t cmtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int ready;

static void *signaller(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cmtx);
	ready = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&cmtx);
	return NULL;
}

/* cond_wait until ready (once or more), 2 rdlocks, 1 wrlock, 3 unlocks,
 * 1 tryrdlock that fails (EBUSY) under the wrlock, 2 sem_wait, 1 sem_trywait
 * that fails (EAGAIN). */
static int do_sync(void)
{
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	pthread_t t;
	sem_t s;
	int waits = 0, busy, again;

	pthread_mutex_lock(&cmtx);
	if (pthread_create(&t, NULL, signaller, NULL))
		return 1;
	while (!ready) {
		pthread_cond_wait(&cond, &cmtx);
		waits++;
	}
	pthread_mutex_unlock(&cmtx);
	pthread_join(t, NULL);
	pthread_rwlock_rdlock(&rw);
	pthread_rwlock_rdlock(&rw);
	pthread_rwlock_unlock(&rw);
	pthread_rwlock_unlock(&rw);
	pthread_rwlock_wrlock(&rw);
	busy = pthread_rwlock_tryrdlock(&rw);
	pthread_rwlock_unlock(&rw);
	sem_init(&s, 0, 2);
	sem_wait(&s);
	sem_wait(&s);
	again = sem_trywait(&s) < 0 ? errno : 0;
	sem_destroy(&s);
	printf("cond waits %d busy %d again %d\n", waits, busy, again);
	return 0;
}

static int do_io(const char *path)
{
	char buf[2000] = {0};
	struct iovec iov[2] = {{buf, 50}, {buf, 25}};
	int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int r;

	if (w < 0)
		return 1;
	if (write(w, buf, 100) != 100 || write(w, buf, 200) != 200 || writev(w, iov, 2) != 75 ||
	    pwrite(w, buf, 10, 375) != 10)
		return 1;
	r = open(path, O_RDONLY);
	if (r < 0)
		return 1;
	/* 385 bytes there: one read gets them all, the next none. */
	if (read(r, buf, 1000) != 385 || read(r, buf, 1000) != 0)
		return 1;
	printf("write fd %d read fd %d\n", w, r);
	close(r);
	close(w);
	return 0;
}

static void napper(void)
{
	struct timespec ts = {0, 20 * 1000 * 1000};

	nanosleep(&ts, NULL);
	usleep(1000);
}

static void do_errno(void)
{
	char c;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	ssize_t n;
	void *p;
	int r, e;

	errno = 0;
	n = read(-1, &c, 1);
	e = errno;
	printf("read %zd errno %d\n", n, e);
	errno = 0;
	r = open("/nonexistent/x", O_RDONLY);
	e = errno;
	printf("open %d errno %d\n", r, e);
	errno = 0;
	r = close(-1);
	e = errno;
	printf("close %d errno %d\n", r, e);
	errno = 1234;
	free(malloc(10)); /* success leaves errno alone */
	e = errno;
	printf("malloc errno %d\n", e);
	errno = 0;
	p = malloc(SIZE_MAX / 2);
	e = errno;
	printf("huge %p errno %d\n", p, e);
	pthread_mutex_lock(&m);
	r = pthread_mutex_trylock(&m);
	printf("trylock %d\n", r);
	pthread_mutex_unlock(&m);
}

struct cache {
	long hits, misses;
	pthread_mutex_t lock;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	long count;
	pthread_mutex_t lock;
} stats = {0, PTHREAD_MUTEX_INITIALIZER};

__attribute__((noinline)) static struct cache *cache_new(void)
{
	struct cache *c = malloc(sizeof(*c));

	if (c) {
		c->hits = c->misses = 0;
		pthread_mutex_init(&c->lock, NULL);
	}
	keep = c;
	return c;
}

static void lock_once(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	pthread_mutex_unlock(m);
}

static int do_names(void)
{
	pthread_mutex_t local;
	struct cache *c = cache_new();

	if (!c)
		return 1;
	pthread_mutex_init(&local, NULL);
	lock_once(&cache_lock);
	lock_once(&c->lock);
	lock_once(&stats.lock);
	lock_once(&local);
	printf("static %p heap %p in %p stats %p in %p stack %p\n", (void *)&cache_lock,
	       (void *)&c->lock, (void *)c, (void *)&stats.lock, (void *)&stats, (void *)&local);
	pthread_mutex_destroy(&local);
	pthread_mutex_destroy(&c->lock);
	free(c);
	keep = NULL;
	return 0;
}

static int ctor_mode;

static void churn(const char *who)
{
	char *p = malloc(64), *q;
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	char line[64];
	int n;

	pthread_mutex_lock(&m);
	q = realloc(p, 4096);
	if (q)
		p = q;
	n = snprintf(line, sizeof(line), "%s ok\n", who);
	if (write(1, line, (size_t)n) != n)
		abort();
	free(p);
	pthread_mutex_unlock(&m);
}

__attribute__((constructor)) static void ctor(void)
{
	const char *m = getenv("LIBCALLS_CTOR");

	ctor_mode = m && *m;
	if (ctor_mode)
		churn("constructor");
}

__attribute__((destructor)) static void dtor(void)
{
	if (ctor_mode)
		churn("destructor");
}

static void at_end(void)
{
	churn("atexit");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "alloc")) {
		work_alloc();
		leaker();
		printf("alloc done\n");
	} else if (!strcmp(mode, "lock")) {
		return do_lock();
	} else if (!strcmp(mode, "sync")) {
		return do_sync();
	} else if (!strcmp(mode, "io")) {
		return do_io(argc > 2 ? argv[2] : "libcalls.out");
	} else if (!strcmp(mode, "sleep")) {
		napper();
	} else if (!strcmp(mode, "errno")) {
		do_errno();
	} else if (!strcmp(mode, "ctor")) {
		atexit(at_end);
		churn("main");
	} else if (!strcmp(mode, "names")) {
		return do_names();
	} else {
		fprintf(stderr, "usage: libcalls alloc|lock|io|sleep|errno|ctor|names\n");
		return 2;
	}
	fflush(stdout);
	return 0;
}
