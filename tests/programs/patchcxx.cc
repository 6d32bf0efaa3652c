// SPDX-License-Identifier: MIT
//
// patchcxx.cc - C++ exceptions thrown through patched frames (built WITHOUT
// -finstrument-functions): the unwinder must see the real return
// addresses, the frames still alive after the catch must still be traced.
//
//   patchcxx N   N times: catcher() calls relay(), which calls thrower(3);
//                thrower recurses to depth 0 and throws; each thrower frame
//                runs a Guard destructor that calls cleanup(); relay catches
//                and rethrows; catcher catches.  Then a thread calls
//                exiter(), which leaves by pthread_exit from 2 frames deep.
//
// Calls: catcher N, relay N, thrower 4N, cleanup 4N, exiter 2.
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

static unsigned long n_catcher, n_relay, n_thrower, n_cleanup, n_exiter;

extern "C" {
__attribute__((noipa)) void cleanup(void);
__attribute__((noipa)) int thrower(int d);
__attribute__((noipa)) int relay(int d);
__attribute__((noipa)) int catcher(int i);
__attribute__((noipa)) void exiter(int d);
}

struct Guard {
	~Guard() { cleanup(); }
};

void cleanup(void)
{
	n_cleanup++;
}

int thrower(int d)
{
	Guard g;

	n_thrower++;
	if (d == 0)
		throw std::runtime_error("deep");
	int r = thrower(d - 1) + 1;
	__asm__ volatile("" : "+r"(r));
	return r;
}

int relay(int d)
{
	n_relay++;
	try {
		return thrower(d);
	} catch (const std::exception &) {
		throw;
	}
}

int catcher(int i)
{
	n_catcher++;
	try {
		return relay(3);
	} catch (const std::exception &e) {
		return i + (e.what()[0] == 'd');
	}
}

void exiter(int d)
{
	n_exiter++;
	if (d > 100)
		return;
	if (d == 0)
		pthread_exit(nullptr);
	exiter(d - 1);
	__asm__ volatile("");
}

static void *run_exiter(void *)
{
	exiter(1);
	return nullptr;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 10;
	long sum = 0;
	pthread_t t;

	for (int i = 0; i < n; i++)
		sum += catcher(i);
	if (pthread_create(&t, nullptr, run_exiter, nullptr) != 0)
		return 1;
	pthread_join(t, nullptr);
	std::printf("sum = %ld\n", sum);
	std::printf("calls catcher=%lu relay=%lu thrower=%lu cleanup=%lu exiter=%lu\n", n_catcher,
		    n_relay, n_thrower, n_cleanup, n_exiter);
	return 0;
}
