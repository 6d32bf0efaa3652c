/* SPDX-License-Identifier: MIT */
/*
 * libcalls.c - library calls as zones: allocation, locks, I/O and sleeps,
 * by symbol interposition.
 *
 * Each interposer below is the program's malloc, pthread_mutex_lock, read,
 * nanosleep...  While the agent runs and the function's class is selected
 * (TRACEAGENT_LIBCALLS), a call is recorded as a zone under the calling
 * function: an enter of the interposer's own address, the real call, then
 * one EXT event with its arguments and results and the exit (ring.h's
 * ta_record_ext_exit).  The LIBCALLS chunk names these addresses, so the
 * analyzer shows "malloc" whatever name libc gives the code behind it.
 *
 * Otherwise (before the agent starts, after it stopped, in a forked child
 * before its restart, class not selected, or inside the agent: ta_guard)
 * an interposer only calls the real function: one load of ta_lc_on and a
 * predictable branch.
 *
 * The real functions are RTLD_NEXT's, found at the first call (nextsym.h),
 * or by dlsym where that cannot say.  dlsym may itself allocate: while a
 * thread resolves, its allocations are served from a static arena, whose
 * blocks free() ignores and realloc() copies out of.  errno is what the real function
 * left: the recording never touches it.
 */
#define _GNU_SOURCE
#undef _FORTIFY_SOURCE /* the wrappers must not be fortify's inline ones */
/* pread, open...  under their own names, not redirected to their *64
 * forms (which are interposed separately). */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "api.h"
#include "compiler.h"
#include "dump.h"
#include "filter.h"
#include "format.h"
#include "got.h"
#include "libcalls.h"
#include "nextsym.h"
#include "ring.h"
#include "settings.h"

#define TA_PUBLIC __attribute__((visibility("default")))

/* The fortified variants the compiler calls with _FORTIFY_SOURCE, which
 * the headers declare only then. */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
		       socklen_t *alen);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);

/* Every interposed function: id, name, class.  The order is the LIBCALLS
 * chunk's; a version for the few symbols whose unversioned dlsym answer
 * would be an old compatibility version. */
#define LC_FUNCS(X)                                                                                \
	X(malloc, TA_LC_ALLOC)                                                                     \
	X(calloc, TA_LC_ALLOC)                                                                     \
	X(realloc, TA_LC_ALLOC)                                                                    \
	X(reallocarray, TA_LC_ALLOC)                                                               \
	X(free, TA_LC_ALLOC)                                                                       \
	X(posix_memalign, TA_LC_ALLOC)                                                             \
	X(aligned_alloc, TA_LC_ALLOC)                                                              \
	X(memalign, TA_LC_ALLOC)                                                                   \
	X(valloc, TA_LC_ALLOC)                                                                     \
	X(pvalloc, TA_LC_ALLOC)                                                                    \
	X(pthread_mutex_lock, TA_LC_LOCK)                                                          \
	X(pthread_mutex_trylock, TA_LC_LOCK)                                                       \
	X(pthread_mutex_timedlock, TA_LC_LOCK)                                                     \
	X(pthread_mutex_unlock, TA_LC_LOCK)                                                        \
	X(pthread_rwlock_rdlock, TA_LC_LOCK)                                                       \
	X(pthread_rwlock_wrlock, TA_LC_LOCK)                                                       \
	X(pthread_rwlock_tryrdlock, TA_LC_LOCK)                                                    \
	X(pthread_rwlock_trywrlock, TA_LC_LOCK)                                                    \
	X(pthread_rwlock_timedrdlock, TA_LC_LOCK)                                                  \
	X(pthread_rwlock_timedwrlock, TA_LC_LOCK)                                                  \
	X(pthread_rwlock_unlock, TA_LC_LOCK)                                                       \
	X(pthread_cond_wait, TA_LC_LOCK)                                                           \
	X(pthread_cond_timedwait, TA_LC_LOCK)                                                      \
	X(sem_wait, TA_LC_LOCK)                                                                    \
	X(sem_timedwait, TA_LC_LOCK)                                                               \
	X(sem_trywait, TA_LC_LOCK)                                                                 \
	X(read, TA_LC_IO)                                                                          \
	X(write, TA_LC_IO)                                                                         \
	X(pread, TA_LC_IO)                                                                         \
	X(pread64, TA_LC_IO)                                                                       \
	X(pwrite, TA_LC_IO)                                                                        \
	X(pwrite64, TA_LC_IO)                                                                      \
	X(readv, TA_LC_IO)                                                                         \
	X(writev, TA_LC_IO)                                                                        \
	X(open, TA_LC_IO)                                                                          \
	X(open64, TA_LC_IO)                                                                        \
	X(openat, TA_LC_IO)                                                                        \
	X(openat64, TA_LC_IO)                                                                      \
	X(close, TA_LC_IO)                                                                         \
	X(fsync, TA_LC_IO)                                                                         \
	X(fdatasync, TA_LC_IO)                                                                     \
	X(recv, TA_LC_IO)                                                                          \
	X(recvfrom, TA_LC_IO)                                                                      \
	X(send, TA_LC_IO)                                                                          \
	X(sendto, TA_LC_IO)                                                                        \
	X(__read_chk, TA_LC_IO)                                                                    \
	X(__pread_chk, TA_LC_IO)                                                                   \
	X(__pread64_chk, TA_LC_IO)                                                                 \
	X(__recv_chk, TA_LC_IO)                                                                    \
	X(__recvfrom_chk, TA_LC_IO)                                                                \
	X(__open_2, TA_LC_IO)                                                                      \
	X(__open64_2, TA_LC_IO)                                                                    \
	X(__openat_2, TA_LC_IO)                                                                    \
	X(__openat64_2, TA_LC_IO)                                                                  \
	X(nanosleep, TA_LC_SLEEP)                                                                  \
	X(clock_nanosleep, TA_LC_SLEEP)                                                            \
	X(usleep, TA_LC_SLEEP)                                                                     \
	X(sleep, TA_LC_SLEEP)                                                                      \
	X(poll, TA_LC_SLEEP)                                                                       \
	X(__poll_chk, TA_LC_SLEEP)                                                                 \
	X(ppoll, TA_LC_SLEEP)                                                                      \
	X(epoll_wait, TA_LC_SLEEP)                                                                 \
	X(epoll_pwait, TA_LC_SLEEP)                                                                \
	X(select, TA_LC_SLEEP)                                                                     \
	X(pselect, TA_LC_SLEEP)

enum {
#define LC_X(name, cls) LC_##name,
	LC_FUNCS(LC_X)
#undef LC_X
	    LC_COUNT
};

/* Hidden aliases of the interposers: their own addresses, reached
 * PC-relative, never another object's definition of the name (which
 * taking &malloc could give).  Labels only, never called. */
#define LC_X(name, cls)                                                                            \
	extern const char lc_at_##name[] TA_HIDDEN;                                                \
	__asm__(".hidden lc_at_" #name "\n\t.set lc_at_" #name ", " #name);
LC_FUNCS(LC_X)
#undef LC_X
#define LC_ADDR(name) ((uint64_t)(uintptr_t)lc_at_##name)

static const char *const lc_names[LC_COUNT] = {
#define LC_N(name, cls) #name,
    LC_FUNCS(LC_N)
#undef LC_N
};
static const uint8_t lc_class[LC_COUNT] = {
#define LC_C(name, cls) cls,
    LC_FUNCS(LC_C)
#undef LC_C
};

/* ---- the real functions ------------------------------------------------------- */

static void *lc_real_fn[LC_COUNT];
/* This thread is inside dlsym for us: its allocations come from the arena
 * and a nested lookup is not attempted. */
static __thread int lc_resolving __attribute__((tls_model("initial-exec")));

static __attribute__((noinline, cold)) void *lc_resolve(unsigned i)
{
	void *f = ta_next_sym(lc_names[i]);

	if (!f && !lc_resolving) {
		lc_resolving = 1;
		/* pthread_cond_* exist in two versions on x86-64; an
		 * unversioned lookup may find the old one, whose condvar
		 * layout differs (ta_next_sym takes the default version,
		 * the new one). */
		if (i == LC_pthread_cond_wait || i == LC_pthread_cond_timedwait)
			f = dlvsym(RTLD_NEXT, lc_names[i], "GLIBC_2.3.2");
		if (!f)
			f = dlsym(RTLD_NEXT, lc_names[i]);
		lc_resolving = 0;
	}
	/* Relaxed: threads racing here store the same value, and the code
	 * it points to was mapped before any of them ran. */
	if (f)
		__atomic_store_n(&lc_real_fn[i], f, __ATOMIC_RELAXED);
	return f;
}

static inline void *lc_real(unsigned i)
{
	void *f = __atomic_load_n(&lc_real_fn[i], __ATOMIC_RELAXED);

	return TA_LIKELY(f != NULL) ? f : lc_resolve(i);
}

#define REAL(name) ((__typeof__(&name))lc_real(LC_##name))

/*
 * Each real function is found at the interposer's first call, by
 * ta_next_sym: no lock, no allocation, so a first call from a signal
 * handler is safe, and a process pays only for the functions it calls.
 * When that cannot answer (the agent loaded by dlopen: ta_next_ready says
 * so), they are all resolved here with dlsym, before the program's
 * constructors, so that a first call from a signal handler does not have
 * to run dlsym.
 *
 * Then the classes TRACEAGENT_LIBCALLS names explicitly are armed: their
 * first call goes to the recording path, whose slow path starts the agent
 * (ring.c), so an uninstrumented program's library calls are recorded.
 * The default classes (io, sleep) arm nothing: a shell or any other
 * uninstrumented program under `traceagent record` makes reads and writes,
 * and must still create no dump unless library calls were asked for.
 * Relaxed store: the agent is not running, and ensure_started's enable
 * replaces the value with the settings' classes once it is.
 */
__attribute__((constructor(101))) static void lc_init(void)
{
	if (!ta_next_ready())
		for (unsigned i = 0; i < LC_COUNT; i++)
			(void)lc_real(i);
	ta_lc_asked = ta_settings_libcalls_asked();
	if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_UNINIT)
		__atomic_store_n(&ta_lc_on, ta_lc_asked, __ATOMIC_RELAXED);
}

/* ---- the arena for dlsym's allocations --------------------------------------- */

#define ARENA_SIZE (64u << 10)
#define ARENA_HDR  16u /* the block's size, before it */
static uint8_t arena[ARENA_SIZE] __attribute__((aligned(64)));
static size_t arena_used; /* atomic */

static int arena_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)arena < ARENA_SIZE;
}

/* Zeroed memory (the arena is never reused), or NULL when it is spent. */
static void *arena_alloc(size_t n, size_t align)
{
	size_t old = __atomic_load_n(&arena_used, __ATOMIC_RELAXED), start, end;

	if (align < ARENA_HDR)
		align = ARENA_HDR;
	if (n > ARENA_SIZE || align > ARENA_SIZE / 4)
		return NULL;
	do {
		start = (old + ARENA_HDR + align - 1) & ~(align - 1);
		end = start + ((n + ARENA_HDR - 1) & ~(size_t)(ARENA_HDR - 1));
		if (end > ARENA_SIZE)
			return NULL;
		/* Relaxed: the CAS only hands each caller a range of its
		 * own; the bytes in it are written by that caller alone. */
	} while (!__atomic_compare_exchange_n(&arena_used, &old, end, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	memcpy(arena + start - sizeof(size_t), &n, sizeof(n));
	return arena + start;
}

static size_t arena_size(const void *p)
{
	size_t n;

	memcpy(&n, (const uint8_t *)p - sizeof(size_t), sizeof(n));
	return n;
}

/* ---- recording ------------------------------------------------------------------ */

/* Whether a call of class cls is recorded here and now.  Relaxed load:
 * pairs with nothing (see ta_libcalls_enable); the ring's slow path
 * decides with its own acquire of the agent's state. */
static inline int lc_want(uint32_t cls)
{
	/* Filters: a call is recorded where a callee would be. */
	return (__atomic_load_n(&ta_lc_on, __ATOMIC_RELAXED) & cls) && !ta_guard &&
	       ta_filter_lets();
}

static inline void lc_enter(uint64_t addr)
{
	ta_record(addr);
}

static inline void lc_done(uint64_t addr, uint32_t subtype, uint64_t a, uint64_t b, uint64_t c,
			   uint64_t d, uint32_t n)
{
	ta_record_ext_exit(addr, subtype, a, b, c, d, n);
}

#define P(x) ((uint64_t)(uintptr_t)(x))

/* ---- allocation -------------------------------------------------------------- */

/*
 * The frequent cheap calls (allocation, locks) keep their recording out of
 * line (RECORDER): what runs when nothing is recorded is then a few
 * instructions and a tail call, without the registers and stack frame the
 * recording needs.
 */
#define RECORDER static __attribute__((noinline))

RECORDER void *malloc_rec(void *(*f)(size_t), size_t n)
{
	void *p;

	lc_enter(LC_ADDR(malloc));
	p = f(n);
	lc_done(LC_ADDR(malloc), TA_EXT_ALLOC, n, P(p), 0, 0, 2);
	return p;
}

TA_PUBLIC void *malloc(size_t n)
{
	void *(*f)(size_t) = REAL(malloc);

	if (TA_UNLIKELY(!f))
		return arena_alloc(n, 16);
	if (!lc_want(TA_LC_ALLOC))
		return f(n);
	return malloc_rec(f, n);
}

RECORDER void *calloc_rec(void *(*f)(size_t, size_t), size_t n, size_t size)
{
	void *p;

	lc_enter(LC_ADDR(calloc));
	p = f(n, size);
	lc_done(LC_ADDR(calloc), TA_EXT_ALLOC, (uint64_t)n * size, P(p), 0, 0, 2);
	return p;
}

TA_PUBLIC void *calloc(size_t n, size_t size)
{
	void *(*f)(size_t, size_t) = REAL(calloc);

	if (TA_UNLIKELY(!f))
		return size && n > SIZE_MAX / size ? NULL : arena_alloc(n * size, 16);
	if (!lc_want(TA_LC_ALLOC))
		return f(n, size);
	return calloc_rec(f, n, size);
}

/* realloc of an arena block: a real block with the same bytes. */
static void *arena_realloc(void *old, size_t n)
{
	size_t have = arena_size(old);
	void *p = malloc(n);

	if (p)
		memcpy(p, old, have < n ? have : n);
	return p;
}

RECORDER void *realloc_rec(void *(*f)(void *, size_t), void *old, size_t n)
{
	void *p;

	lc_enter(LC_ADDR(realloc));
	p = f(old, n);
	lc_done(LC_ADDR(realloc), TA_EXT_REALLOC, P(old), n, P(p), 0, 3);
	return p;
}

TA_PUBLIC void *realloc(void *old, size_t n)
{
	void *(*f)(void *, size_t);

	if (TA_UNLIKELY(old && arena_owns(old)))
		return arena_realloc(old, n);
	f = REAL(realloc);
	if (TA_UNLIKELY(!f))
		return old ? NULL : arena_alloc(n, 16);
	if (!lc_want(TA_LC_ALLOC))
		return f(old, n);
	return realloc_rec(f, old, n);
}

TA_PUBLIC void *reallocarray(void *old, size_t n, size_t size)
{
	void *(*f)(void *, size_t, size_t);
	void *p;

	if (TA_UNLIKELY(old && arena_owns(old))) {
		if (size && n > SIZE_MAX / size) {
			errno = ENOMEM;
			return NULL;
		}
		return arena_realloc(old, n * size);
	}
	f = REAL(reallocarray);
	if (TA_UNLIKELY(!f))
		return NULL;
	if (!lc_want(TA_LC_ALLOC))
		return f(old, n, size);
	lc_enter(LC_ADDR(reallocarray));
	p = f(old, n, size);
	lc_done(LC_ADDR(reallocarray), TA_EXT_REALLOC, P(old), (uint64_t)n * size, P(p), 0, 3);
	return p;
}

RECORDER void free_rec(void (*f)(void *), void *p)
{
	lc_enter(LC_ADDR(free));
	f(p);
	lc_done(LC_ADDR(free), TA_EXT_FREE, P(p), 0, 0, 0, 1);
}

TA_PUBLIC void free(void *p)
{
	void (*f)(void *);

	if (TA_UNLIKELY(arena_owns(p)))
		return; /* the arena is never reused */
	f = REAL(free);
	if (TA_UNLIKELY(!f))
		return; /* only while resolving: a leak, not a crash */
	if (!lc_want(TA_LC_ALLOC)) {
		f(p);
		return;
	}
	free_rec(f, p);
}

TA_PUBLIC int posix_memalign(void **out, size_t align, size_t n)
{
	int (*f)(void **, size_t, size_t) = REAL(posix_memalign);
	int r;

	if (TA_UNLIKELY(!f))
		return (*out = arena_alloc(n, align)) ? 0 : ENOMEM;
	if (!lc_want(TA_LC_ALLOC))
		return f(out, align, n);
	lc_enter(LC_ADDR(posix_memalign));
	r = f(out, align, n);
	lc_done(LC_ADDR(posix_memalign), TA_EXT_ALLOC, n, r ? 0 : P(*out), 0, 0, 2);
	return r;
}

/* The aligned allocators that return the block. */
#define LC_ALIGNED(name, params, args, size, align)                                                \
	TA_PUBLIC void *name params                                                                \
	{                                                                                          \
		void *(*f)params = REAL(name);                                                     \
		void *p;                                                                           \
                                                                                                   \
		if (TA_UNLIKELY(!f))                                                               \
			return arena_alloc(size, align);                                           \
		if (!lc_want(TA_LC_ALLOC))                                                         \
			return f args;                                                             \
		lc_enter(LC_ADDR(name));                                                           \
		p = f args;                                                                        \
		lc_done(LC_ADDR(name), TA_EXT_ALLOC, size, P(p), 0, 0, 2);                         \
		return p;                                                                          \
	}

LC_ALIGNED(aligned_alloc, (size_t align, size_t n), (align, n), n, align)
LC_ALIGNED(memalign, (size_t align, size_t n), (align, n), n, align)
LC_ALIGNED(valloc, (size_t n), (n), n, 4096)
LC_ALIGNED(pvalloc, (size_t n), (n), n, 4096)

/* ---- locks ---------------------------------------------------------------------- */

/* A lock function: (object, result).  The zone's duration is the wait. */
#define LC_UNPAREN(...) __VA_ARGS__
#define LC_LOCK(name, type, params, args, obj)                                                     \
	RECORDER int name##_rec(int(*f) params, LC_UNPAREN params)                                 \
	{                                                                                          \
		int r;                                                                             \
                                                                                                   \
		lc_enter(LC_ADDR(name));                                                           \
		r = f args;                                                                        \
		lc_done(LC_ADDR(name), TA_EXT_LOCK, P(obj),                                        \
			type ? (r < 0 ? (uint64_t)errno : 0) : (uint64_t)r, 0, 0, 2);              \
		return r;                                                                          \
	}                                                                                          \
	TA_PUBLIC int name params                                                                  \
	{                                                                                          \
		int(*f) params = REAL(name);                                                       \
                                                                                                   \
		if (TA_UNLIKELY(!f))                                                               \
			return ENOSYS;                                                             \
		if (!lc_want(TA_LC_LOCK))                                                          \
			return f args;                                                             \
		return name##_rec(f, LC_UNPAREN args);                                             \
	}

LC_LOCK(pthread_mutex_lock, 0, (pthread_mutex_t * m), (m), m)
LC_LOCK(pthread_mutex_trylock, 0, (pthread_mutex_t * m), (m), m)
LC_LOCK(pthread_mutex_timedlock, 0, (pthread_mutex_t * m, const struct timespec *ts), (m, ts), m)
LC_LOCK(pthread_mutex_unlock, 0, (pthread_mutex_t * m), (m), m)
LC_LOCK(pthread_rwlock_rdlock, 0, (pthread_rwlock_t * l), (l), l)
LC_LOCK(pthread_rwlock_wrlock, 0, (pthread_rwlock_t * l), (l), l)
LC_LOCK(pthread_rwlock_tryrdlock, 0, (pthread_rwlock_t * l), (l), l)
LC_LOCK(pthread_rwlock_trywrlock, 0, (pthread_rwlock_t * l), (l), l)
LC_LOCK(pthread_rwlock_timedrdlock, 0, (pthread_rwlock_t * l, const struct timespec *ts), (l, ts),
	l)
LC_LOCK(pthread_rwlock_timedwrlock, 0, (pthread_rwlock_t * l, const struct timespec *ts), (l, ts),
	l)
LC_LOCK(pthread_rwlock_unlock, 0, (pthread_rwlock_t * l), (l), l)
/* The semaphores return -1 and set errno. */
LC_LOCK(sem_wait, 1, (sem_t * s), (s), s)
LC_LOCK(sem_timedwait, 1, (sem_t * s, const struct timespec *ts), (s, ts), s)
LC_LOCK(sem_trywait, 1, (sem_t * s), (s), s)

/* A condition wait: (condition, result, mutex); its time includes taking
 * the mutex back. */
TA_PUBLIC int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	int (*f)(pthread_cond_t *, pthread_mutex_t *) = REAL(pthread_cond_wait);
	int r;

	if (TA_UNLIKELY(!f))
		return ENOSYS;
	if (!lc_want(TA_LC_LOCK))
		return f(c, m);
	lc_enter(LC_ADDR(pthread_cond_wait));
	r = f(c, m);
	lc_done(LC_ADDR(pthread_cond_wait), TA_EXT_LOCK, P(c), (uint64_t)r, P(m), 0, 3);
	return r;
}

TA_PUBLIC int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				     const struct timespec *ts)
{
	int (*f)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *) =
	    REAL(pthread_cond_timedwait);
	int r;

	if (TA_UNLIKELY(!f))
		return ENOSYS;
	if (!lc_want(TA_LC_LOCK))
		return f(c, m, ts);
	lc_enter(LC_ADDR(pthread_cond_timedwait));
	r = f(c, m, ts);
	lc_done(LC_ADDR(pthread_cond_timedwait), TA_EXT_LOCK, P(c), (uint64_t)r, P(m), 0, 3);
	return r;
}

/* ---- I/O -------------------------------------------------------------------------- */

/* (fd, bytes asked, bytes done, errno).  errno is read only on failure
 * and left as it is. */
static inline void lc_io_done(uint64_t addr, int fd, uint64_t asked, ssize_t r)
{
	lc_done(addr, TA_EXT_IO, (uint64_t)(int64_t)fd, asked, r >= 0 ? (uint64_t)r : 0,
		r < 0 ? (uint64_t)errno : 0, 4);
}

#define LC_IO(name, rtype, params, args, fd, asked)                                                \
	TA_PUBLIC rtype name params                                                                \
	{                                                                                          \
		rtype(*f) params = REAL(name);                                                     \
		rtype r;                                                                           \
                                                                                                   \
		if (TA_UNLIKELY(!f))                                                               \
			return errno = ENOSYS, (rtype)-1;                                          \
		if (!lc_want(TA_LC_IO))                                                            \
			return f args;                                                             \
		lc_enter(LC_ADDR(name));                                                           \
		r = f args;                                                                        \
		lc_io_done(LC_ADDR(name), fd, asked, (ssize_t)r);                                  \
		return r;                                                                          \
	}

static uint64_t iov_bytes(const struct iovec *iov, int n)
{
	uint64_t sum = 0;

	for (int i = 0; i < n; i++)
		sum += iov[i].iov_len;
	return sum;
}

LC_IO(read, ssize_t, (int fd, void *buf, size_t n), (fd, buf, n), fd, n)
LC_IO(write, ssize_t, (int fd, const void *buf, size_t n), (fd, buf, n), fd, n)
LC_IO(pread, ssize_t, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off), fd, n)
LC_IO(pread64, ssize_t, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off), fd, n)
LC_IO(pwrite, ssize_t, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), fd, n)
LC_IO(pwrite64, ssize_t, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off), fd, n)
LC_IO(readv, ssize_t, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), fd,
      iov_bytes(iov, cnt))
LC_IO(writev, ssize_t, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), fd,
      iov_bytes(iov, cnt))
LC_IO(close, int, (int fd), (fd), fd, 0)
LC_IO(fsync, int, (int fd), (fd), fd, 0)
LC_IO(fdatasync, int, (int fd), (fd), fd, 0)
LC_IO(recv, ssize_t, (int fd, void *buf, size_t n, int fl), (fd, buf, n, fl), fd, n)
LC_IO(recvfrom, ssize_t, (int fd, void *buf, size_t n, int fl, struct sockaddr *a, socklen_t *alen),
      (fd, buf, n, fl, a, alen), fd, n)
LC_IO(send, ssize_t, (int fd, const void *buf, size_t n, int fl), (fd, buf, n, fl), fd, n)
LC_IO(sendto, ssize_t,
      (int fd, const void *buf, size_t n, int fl, const struct sockaddr *a, socklen_t alen),
      (fd, buf, n, fl, a, alen), fd, n)
LC_IO(__read_chk, ssize_t, (int fd, void *buf, size_t n, size_t bl), (fd, buf, n, bl), fd, n)
LC_IO(__pread_chk, ssize_t, (int fd, void *buf, size_t n, off_t off, size_t bl),
      (fd, buf, n, off, bl), fd, n)
LC_IO(__pread64_chk, ssize_t, (int fd, void *buf, size_t n, off64_t off, size_t bl),
      (fd, buf, n, off, bl), fd, n)
LC_IO(__recv_chk, ssize_t, (int fd, void *buf, size_t n, size_t bl, int fl), (fd, buf, n, bl, fl),
      fd, n)
LC_IO(__recvfrom_chk, ssize_t,
      (int fd, void *buf, size_t n, size_t bl, int fl, struct sockaddr *a, socklen_t *alen),
      (fd, buf, n, bl, fl, a, alen), fd, n)

/* Opens: the fd is the result (-1 on failure), nothing asked or done. */
#define LC_OPEN(name, params, args)                                                                \
	TA_PUBLIC int name params                                                                  \
	{                                                                                          \
		int(*f) params = REAL(name);                                                       \
		int r;                                                                             \
                                                                                                   \
		if (TA_UNLIKELY(!f))                                                               \
			return errno = ENOSYS, -1;                                                 \
		if (!lc_want(TA_LC_IO))                                                            \
			return f args;                                                             \
		lc_enter(LC_ADDR(name));                                                           \
		r = f args;                                                                        \
		lc_io_done(LC_ADDR(name), r, 0, r < 0 ? -1 : 0);                                   \
		return r;                                                                          \
	}

LC_OPEN(__open_2, (const char *path, int fl), (path, fl))
LC_OPEN(__open64_2, (const char *path, int fl), (path, fl))
LC_OPEN(__openat_2, (int dir, const char *path, int fl), (dir, path, fl))
LC_OPEN(__openat64_2, (int dir, const char *path, int fl), (dir, path, fl))

/* The variadic opens: the mode is there only when the flags create. */
static mode_t open_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

#define NO_DIR (-1000) /* not an fd: open rather than openat */

static int open_common(unsigned id, uint64_t addr, int dir, const char *path, int flags,
		       mode_t mode)
{
	void *f = lc_real(id);
	int r;

	if (TA_UNLIKELY(!f)) {
		errno = ENOSYS;
		return -1;
	}
	if (lc_want(TA_LC_IO))
		lc_enter(addr);
	else
		addr = 0;
	if (dir == NO_DIR)
		r = ((int (*)(const char *, int, ...))f)(path, flags, mode);
	else
		r = ((int (*)(int, const char *, int, ...))f)(dir, path, flags, mode);
	if (addr)
		lc_io_done(addr, r, 0, r < 0 ? -1 : 0);
	return r;
}

/* open, open64, openat, openat64: the mode read as open_mode says. */
#define LC_OPEN_VA(name, params, dir)                                                              \
	TA_PUBLIC int name params                                                                  \
	{                                                                                          \
		va_list ap;                                                                        \
		mode_t mode;                                                                       \
                                                                                                   \
		va_start(ap, flags);                                                               \
		mode = open_mode(flags, ap);                                                       \
		va_end(ap);                                                                        \
		return open_common(LC_##name, LC_ADDR(name), dir, path, flags, mode);              \
	}

LC_OPEN_VA(open, (const char *path, int flags, ...), NO_DIR)
LC_OPEN_VA(open64, (const char *path, int flags, ...), NO_DIR)
LC_OPEN_VA(openat, (int dir, const char *path, int flags, ...), dir)
LC_OPEN_VA(openat64, (int dir, const char *path, int flags, ...), dir)

/* ---- sleeping and waiting ----------------------------------------------------------- */

static uint64_t ts_ns(const struct timespec *ts)
{
	return ts ? (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec : TA_LC_FOREVER;
}

static uint64_t ms_ns(int ms)
{
	return ms < 0 ? TA_LC_FOREVER : (uint64_t)ms * 1000000u;
}

static uint64_t tv_ns(const struct timeval *tv)
{
	return tv ? (uint64_t)tv->tv_sec * 1000000000u + (uint64_t)tv->tv_usec * 1000u
		  : TA_LC_FOREVER;
}

/* (ns asked, result, errno) for functions returning -1 and errno. */
#define LC_SLEEP(name, rtype, params, args, asked)                                                 \
	TA_PUBLIC rtype name params                                                                \
	{                                                                                          \
		rtype(*f) params = REAL(name);                                                     \
		uint64_t ask;                                                                      \
		rtype r;                                                                           \
                                                                                                   \
		if (TA_UNLIKELY(!f))                                                               \
			return errno = ENOSYS, (rtype)-1;                                          \
		if (!lc_want(TA_LC_SLEEP))                                                         \
			return f args;                                                             \
		ask = asked; /* before the call: some update their argument */                     \
		lc_enter(LC_ADDR(name));                                                           \
		r = f args;                                                                        \
		lc_done(LC_ADDR(name), TA_EXT_SLEEP, ask, r < 0 ? 0 : (uint64_t)r,                 \
			r < 0 ? (uint64_t)errno : 0, 0, 3);                                        \
		return r;                                                                          \
	}

LC_SLEEP(nanosleep, int, (const struct timespec *req, struct timespec *rem), (req, rem), ts_ns(req))
LC_SLEEP(usleep, int, (useconds_t us), (us), (uint64_t)us * 1000u)
LC_SLEEP(poll, int, (struct pollfd * fds, nfds_t n, int ms), (fds, n, ms), ms_ns(ms))
LC_SLEEP(__poll_chk, int, (struct pollfd * fds, nfds_t n, int ms, size_t fl), (fds, n, ms, fl),
	 ms_ns(ms))
LC_SLEEP(ppoll, int, (struct pollfd * fds, nfds_t n, const struct timespec *ts, const sigset_t *m),
	 (fds, n, ts, m), ts_ns(ts))
LC_SLEEP(epoll_wait, int, (int ep, struct epoll_event *ev, int max, int ms), (ep, ev, max, ms),
	 ms_ns(ms))
LC_SLEEP(epoll_pwait, int, (int ep, struct epoll_event *ev, int max, int ms, const sigset_t *m),
	 (ep, ev, max, ms, m), ms_ns(ms))
LC_SLEEP(select, int, (int n, fd_set *r_, fd_set *w, fd_set *e, struct timeval *tv),
	 (n, r_, w, e, tv), tv_ns(tv))
LC_SLEEP(pselect, int,
	 (int n, fd_set *r_, fd_set *w, fd_set *e, const struct timespec *ts, const sigset_t *m),
	 (n, r_, w, e, ts, m), ts_ns(ts))

/* Returns the error number rather than setting errno. */
TA_PUBLIC int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
			      struct timespec *rem)
{
	int (*f)(clockid_t, int, const struct timespec *, struct timespec *) =
	    REAL(clock_nanosleep);
	uint64_t ask;
	int r;

	if (TA_UNLIKELY(!f))
		return ENOSYS;
	if (!lc_want(TA_LC_SLEEP))
		return f(clk, flags, req, rem);
	ask = ts_ns(req);
	if (flags & TIMER_ABSTIME) {
		/* Asked: until then, from now. */
		struct timespec now;
		uint64_t n = clock_gettime(clk, &now) == 0 ? ts_ns(&now) : 0;
		ask = ask > n ? ask - n : 0;
	}
	lc_enter(LC_ADDR(clock_nanosleep));
	r = f(clk, flags, req, rem);
	lc_done(LC_ADDR(clock_nanosleep), TA_EXT_SLEEP, ask, 0, (uint64_t)r, 0, 3);
	return r;
}

/* Returns the seconds left, never fails. */
TA_PUBLIC unsigned sleep(unsigned s)
{
	unsigned (*f)(unsigned) = REAL(sleep);
	unsigned r;

	if (TA_UNLIKELY(!f))
		return s;
	if (!lc_want(TA_LC_SLEEP))
		return f(s);
	lc_enter(LC_ADDR(sleep));
	r = f(s);
	lc_done(LC_ADDR(sleep), TA_EXT_SLEEP, (uint64_t)s * 1000000000u, r, 0, 0, 3);
	return r;
}

/* ---- the LIBCALLS chunk --------------------------------------------------------------- */

static const uint64_t *lc_addrs(void)
{
	static uint64_t a[LC_COUNT];
	unsigned i = 0;

#define LC_A(name, cls) a[i++] = LC_ADDR(name);
	LC_FUNCS(LC_A)
#undef LC_A
	return a;
}

void ta_libcalls_dump(void)
{
	const uint64_t *a = lc_addrs();
	struct ta_buf b = {0};

	ta_buf_u(&b, ta_cfg.libcalls);
	ta_buf_u(&b, LC_COUNT);
	for (unsigned i = 0; i < LC_COUNT; i++) {
		ta_buf_u(&b, a[i]);
		ta_buf_str(&b, lc_names[i], strlen(lc_names[i]));
		ta_buf_u(&b, lc_class[i]);
	}
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_LIBCALLS, b.p, b.len);
	ta_buf_free(&b);
}

/* ---- the GOT entries of an attached agent's program -------------------------------- */

size_t ta_libcalls_got_syms(uint32_t classes, struct ta_got_sym *out, size_t max)
{
	const uint64_t *a = lc_addrs();
	Dl_info self, di;
	size_t n = 0;

	if (!dladdr((void *)&ta_libcalls_got_syms, &self))
		self.dli_fbase = NULL;
	for (unsigned i = 0; i < LC_COUNT && n < max; i++) {
		void *real = lc_real(i);

		if (!(lc_class[i] & classes) || !real)
			continue;
		/* dlsym(RTLD_NEXT) from a library dlopen'ed in its own scope
		 * answers libc's definition; were it ours, a call would loop. */
		if (dladdr(real, &di) && di.dli_fbase == self.dli_fbase) {
			ta_warn("%s: no real function but the agent's own: not recorded",
				lc_names[i]);
			continue;
		}
		out[n].name = lc_names[i];
		out[n].to = (uintptr_t)a[i];
		out[n].real = (uintptr_t)real;
		/* Two versions: an unbound entry may want the old one. */
		out[n].lazy = i != LC_pthread_cond_wait && i != LC_pthread_cond_timedwait;
		n++;
	}
	return n;
}
