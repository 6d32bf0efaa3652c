/* SPDX-License-Identifier: MIT */
/*
 * patchbplib.c - a library with breakpoints in its code, set as a debugger,
 * a uprobe or `perf probe` sets them (an int3, 0xCC, written over the first
 * byte of an instruction), for dynamic patching (agent/patch/patch.c):
 * its constructor, which runs inside the dlopen before the agent patches
 * the library, sets one at the entry of bp_entry (over the first byte of
 * its first instruction), one at the entry of bp_endbr (over its endbr64)
 * and one inside bp_inner (on its first nop, past the bytes a patch's jmp
 * replaces), and installs
 * a SIGTRAP handler that plays the debugger: at a breakpoint it set, it
 * counts the hit, puts the original byte back and has the instruction run
 * (a one-shot breakpoint); a trap anywhere else (a breakpoint copied
 * elsewhere by a patch) is what the program would die of without a
 * debugger: it dies by SIGTRAP.  bp_plain has none.  Not instrumented.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

int bp_entry(int x);
int bp_endbr(int x);
int bp_inner(int x);
int bp_plain(int x);
int bp_hits(void);

/* Long enough to be patched: each counts its calls. */
static volatile int calls;

__attribute__((noinline)) int bp_entry(int x)
{
	calls++;
	return x * 3 + 1;
}

__attribute__((noinline)) int bp_plain(int x)
{
	calls++;
	return x + 1;
}

/* Their bytes known.  bp_inner: push (1), mov (3), lea (3), then the nop
 * at offset 7 where the breakpoint goes.  bp_endbr: the same after an
 * endbr64, whose first byte takes the breakpoint. */
#define INNER_BP 7
__asm__(".text\n"
	".globl bp_endbr\n"
	".type bp_endbr, @function\n"
	"bp_endbr:\n"
	"\tendbr64\n"
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tlea 1(%rdi,%rdi), %eax\n"
	"\tnop\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size bp_endbr, .-bp_endbr\n");
__asm__(".text\n"
	".globl bp_inner\n"
	".type bp_inner, @function\n"
	"bp_inner:\n"
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tlea (%rdi,%rdi), %eax\n"
	"\tnop\n"
	"\tnop\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size bp_inner, .-bp_inner\n");

static struct {
	uint8_t *at;
	uint8_t orig;
	int set;
} bps[3];
static volatile int hits;

static int poke(uint8_t *at, uint8_t v)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t page = (uintptr_t)at & ~(uintptr_t)(pg - 1);

	if (mprotect((void *)page, (size_t)pg * 2, PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
		return -1;
	*at = v;
	mprotect((void *)page, (size_t)pg * 2, PROT_READ | PROT_EXEC);
	return 0;
}

static void on_trap(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	uint8_t *pc = (uint8_t *)uc->uc_mcontext.gregs[REG_RIP] - 1;

	(void)si;
	for (int i = 0; i < 3; i++)
		if (bps[i].set && bps[i].at == pc) {
			bps[i].set = 0;
			poke(pc, bps[i].orig);
			uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)pc;
			hits++;
			return;
		}
	signal(sig, SIG_DFL);
	raise(sig);
}

__attribute__((constructor)) static void set_breakpoints(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTRAP, &sa, NULL);
	bps[0].at = (uint8_t *)(uintptr_t)&bp_entry;
	bps[1].at = (uint8_t *)(uintptr_t)&bp_endbr;
	bps[2].at = (uint8_t *)(uintptr_t)&bp_inner + INNER_BP;
	for (int i = 0; i < 3; i++) {
		bps[i].orig = *bps[i].at;
		bps[i].set = poke(bps[i].at, 0xcc) == 0;
	}
}

int bp_hits(void)
{
	return hits;
}
