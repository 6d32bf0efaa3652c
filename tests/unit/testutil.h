/* SPDX-License-Identifier: MIT */
/*
 * testutil.h - seeded randomness for the unit tests.
 *
 * Random tests take their seed from TA_TEST_SEED when set, else from the
 * clock, and print it, so a failure can be repeated exactly.
 */
#ifndef TA_TESTUTIL_H
#define TA_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/*
 * In fork mode Check reports every passing ck_assert to the parent with a
 * write; in loops over many values use this, which only costs on failure.
 */
#define REQUIRE(cond, ...)                                                                         \
	do {                                                                                       \
		if (__builtin_expect(!(cond), 0))                                                  \
			ck_abort_msg(__VA_ARGS__);                                                 \
	} while (0)

struct rng {
	uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
	/* splitmix64 */
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n) (n > 0; the bias is irrelevant here). */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

static inline uint64_t test_seed(const char *test)
{
	const char *env = getenv("TA_TEST_SEED");
	uint64_t seed;

	if (env && *env) {
		seed = strtoull(env, NULL, 0);
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
	}
	fprintf(stderr, "%s: seed %llu (TA_TEST_SEED=%llu repeats it)\n", test,
		(unsigned long long)seed, (unsigned long long)seed);
	return seed;
}

#endif
