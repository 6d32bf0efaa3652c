/* SPDX-License-Identifier: MIT */
/*
 * argsdemo.c - functions whose arguments and return values are known, for
 * the tests of recorded arguments (test_args.py): integers, a negative
 * one, hex, strings (NULL, an unreadable page, one longer than the limit,
 * one with quotes and a newline), floating point, an enum, a char, and a
 * function returning a struct pointer.  Built plain (patched) and with
 * -finstrument-functions; architecture-neutral.  Prints the addresses the
 * test cannot know: the unmapped page and the struct.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__clang__)
#define KEEP __attribute__((noinline, used, optnone))
#else
#define KEEP __attribute__((noinline, used, noipa))
#endif

enum color { RED, GREEN = 5, BLUE };

struct point {
	int x, y;
};

static struct point the_point;
/* Each function writes it: long enough to be patched (5 bytes). */
static volatile int calls;

int add(int a, int b);
long negate(long v);
unsigned mask(unsigned x);
size_t slen(const char *s);
double scale(double v, float f);
int paint(enum color c);
char upper(char c);
struct point *mkpoint(int x, int y);
int pick(int k);

KEEP int add(int a, int b)
{
	calls++;
	return a + b;
}

KEEP long negate(long v)
{
	calls++;
	return -v;
}

KEEP unsigned mask(unsigned x)
{
	calls++;
	return x & 0xff00u;
}

KEEP size_t slen(const char *s)
{
	calls++;
	return s && s != (const char *)-1 ? 1 : 0;
}

KEEP double scale(double v, float f)
{
	calls++;
	return v * f;
}

KEEP int paint(enum color c)
{
	calls++;
	return (int)c * 2;
}

KEEP char upper(char c)
{
	calls++;
	return c >= 'a' && c <= 'z' ? (char)(c - 32) : c;
}

KEEP struct point *mkpoint(int x, int y)
{
	calls++;
	the_point.x = x;
	the_point.y = y;
	return &the_point;
}

/* Called with repeated values, for report --args. */
KEEP int pick(int k)
{
	calls++;
	return k + 1;
}

int main(void)
{
	char longer[100];
	long page = sysconf(_SC_PAGESIZE);
	/* Never readable, and never mapped again by anyone else (an address
	 * unmapped may be the agent's next mapping). */
	void *gone = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	volatile size_t sum = 0;
	struct point *p;

	if (gone == MAP_FAILED)
		return 1;
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = 0;

	sum += (size_t)add(2, 3);
	sum += (size_t)add(-7, 1);
	sum += (size_t)negate(-1234567890123);
	sum += mask(0xbeefu);
	sum += slen("abc");
	sum += slen(NULL);
	sum += slen(gone);
	sum += slen((const char *)-1);
	sum += slen(longer);
	sum += slen("say \"hi\"\n\tbye\\");
	sum += (size_t)scale(1.5, 0.25f);
	sum += (size_t)paint(GREEN);
	sum += (size_t)paint((enum color)42);
	sum += (size_t)upper('q');
	p = mkpoint(3, 4);
	for (int i = 0; i < 10; i++)
		sum += (size_t)pick(i % 3);
	printf("gone %p\n", gone);
	printf("point %p\n", (void *)p);
	printf("sum %zu\n", (size_t)sum);
	return 0;
}
