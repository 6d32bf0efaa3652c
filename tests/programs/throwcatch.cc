// SPDX-License-Identifier: MIT
//
// throwcatch.cc - functions left by C++ exceptions, built with GCC (which
// calls their exit hooks while unwinding) and with Clang (which does not).
// Each catch is followed by a pause in the function that catches, so a
// reader that closed the frames the exception left late would charge them
// the pause.  In order:
//  - deep(): t1 -> t2 -> t3 -> t4 -> t5, which throws; deep() catches;
//  - outer_catch() -> relay() -> r1 -> r2, which throws; relay catches
//    with catch (...) and rethrows; outer_catch() catches;
//  - capture() -> c1, which throws; capture keeps std::current_exception();
//    then catch_ptr() -> p1 -> p2, which rethrows it; catch_ptr() catches;
//  - rec(5): rec(0) throws and rec(3) catches, past rec(2) and rec(1);
//  - catch_bridge() -> bridge() (not instrumented) -> b1 -> b2, which
//    throws; catch_bridge() catches.
// argv[1]: the pause in ms (default 200).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <time.h>

#ifdef __clang__
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

static volatile int sink;
static long pause_ms = 200;
static std::exception_ptr kept;

NOIPA static void pause_here()
{
	struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

NOIPA static void t5(int x)
{
	if (x >= 0)
		throw x;
	sink++;
}

NOIPA static void t4(int x)
{
	t5(x);
	sink++;
}

NOIPA static void t3(int x)
{
	t4(x);
	sink++;
}

NOIPA static void t2(int x)
{
	t3(x);
	sink++;
}

NOIPA static void t1(int x)
{
	t2(x);
	sink++;
}

NOIPA static void after_deep()
{
	sink++;
}

NOIPA static void deep()
{
	try {
		t1(1);
	} catch (int x) {
		pause_here();
		after_deep();
	}
}

NOIPA static void r2(int x)
{
	if (x >= 0)
		throw x;
	sink++;
}

NOIPA static void r1(int x)
{
	r2(x);
	sink++;
}

NOIPA static void relay(int x)
{
	try {
		r1(x);
	} catch (...) {
		sink++;
		throw;
	}
}

NOIPA static void after_rethrow()
{
	sink++;
}

NOIPA static void outer_catch()
{
	try {
		relay(2);
	} catch (int) {
		pause_here();
		after_rethrow();
	}
}

NOIPA static void c1(int x)
{
	if (x >= 0)
		throw x;
	sink++;
}

NOIPA static void capture()
{
	try {
		c1(3);
	} catch (...) {
		kept = std::current_exception();
	}
}

NOIPA static void p2()
{
	std::rethrow_exception(kept);
}

NOIPA static void p1()
{
	p2();
	sink++;
}

NOIPA static void after_ptr()
{
	sink++;
}

NOIPA static void catch_ptr()
{
	try {
		p1();
	} catch (int) {
		pause_here();
		after_ptr();
	}
}

NOIPA static int after_rec()
{
	return ++sink;
}

NOIPA static int rec(int n)
{
	if (n == 0)
		throw n;
	if (n == 3) {
		try {
			return rec(n - 1) + 1;
		} catch (int) {
			pause_here();
			return after_rec();
		}
	}
	return rec(n - 1) + 1;
}

NOIPA static void b2(int x)
{
	if (x >= 0)
		throw x;
	sink++;
}

NOIPA static void b1(int x)
{
	b2(x);
	sink++;
}

// Not instrumented: the exception crosses a frame the agent does not see.
NOIPA __attribute__((no_instrument_function)) static void bridge(int x)
{
	b1(x);
	sink++;
}

NOIPA static void after_bridge()
{
	sink++;
}

NOIPA static void catch_bridge()
{
	try {
		bridge(4);
	} catch (int) {
		pause_here();
		after_bridge();
	}
}

int main(int argc, char **argv)
{
	if (argc > 1)
		pause_ms = std::atol(argv[1]);
	deep();
	outer_catch();
	capture();
	catch_ptr();
	rec(5);
	catch_bridge();
	std::printf("throwcatch: %d\n", sink);
	return 0;
}
