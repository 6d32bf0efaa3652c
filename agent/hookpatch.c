/* SPDX-License-Identifier: MIT */
/*
 * hookpatch.c - excluded code costs nothing: the calls an instrumented
 * function makes to __cyg_profile_func_enter/exit are rewritten in place
 * into no-ops of the same length, so that the function runs as if it had
 * been compiled without -finstrument-functions (but for the argument
 * set-up the compiler left around the calls).
 *
 * Finding the calls.  The body is decoded linearly (capstone on x86-64,
 * by hand on aarch64, where the few instructions that matter have fixed
 * encodings).  A call or jump goes to a hook when its target is
 *   - the hook itself (dladdr names it), or
 *   - a PLT entry of the module whose GOT entry is relocated against a
 *     hook (modules.c's ta_module_hook_slots): whatever the entry holds now
 *     (the PLT's resolver, glibc's hook, the agent's), or
 *   - (x86-64 -fno-plt) such a GOT entry, called through.
 * With inlining, a function's body also holds the hook calls of the
 * functions inlined in it, made with their addresses: those are left, so
 * the callees' events stay.  The first argument is followed through the
 * body (lea/mov of a constant, a load from the module's GOT, register
 * copies; a write of any other kind forgets the register, a call forgets
 * the caller-saved ones): a call with the function's address is ours, one
 * with another address is an inlined callee's, one whose argument cannot be
 * known is refused.  Also refused: a conditional jump to a hook, a call or
 * jump through a register that holds a hook, a tail jump to the enter hook,
 * and a jump out of [fn_start, fn_end) to anything but a hook: an
 * instrumented function tail-calls nothing else (its exit hook runs after
 * its callees), so that is a part of it placed elsewhere (GCC's .cold),
 * whose hook calls would be missed.
 *
 * Writing.  Other threads may be running the function.  aarch64: every
 * instruction is one aligned 32-bit word, written with one store (single-
 * copy atomic), then the instruction cache cleaned; `bl` -> `nop` is in
 * the architecture's list of instructions that may be modified while
 * executed; `b` -> `ret` is not, but a 4-byte aligned store cannot be seen
 * torn, and the old and the new instruction both leave the function with
 * its caller's state (the hook returned to the same place).  x86-64: when
 * the instruction lies within one aligned 8-byte word, the word is
 * rewritten with one atomic store; within one aligned 16-byte block, the
 * block with one `lock cmpxchg16b` (every x86-64 but the first ones has
 * it; CPUID says): an instruction fetch, which reads aligned 16-byte
 * blocks at least, sees the old bytes or the new ones, never a mix.
 * Otherwise, in three steps separated by
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE), which makes
 * every thread of the process run a core-serialising instruction before it
 * returns (so no thread still holds bytes fetched before it):
 *   (A) the instruction's first bytes become, with one atomic store as
 *       above, an instruction that alone does what the new one does:
 *       `jmp` over the rest for a call (a no-op), `ret` for a tail jump;
 *   (B) the rest gets its new bytes: no thread can decode them as part of
 *       the old instruction any more (after the barrier, every fetch at the
 *       start sees (A), which never runs them);
 *   (C) the first bytes get their new value: after the second barrier
 *       every thread sees (B)'s bytes with them.
 * Without membarrier's SYNC_CORE (kernels before 4.16, qemu-user), or
 * when the first bytes straddle a 16-byte block, such a call is refused.
 * Putting the old bytes back goes through the same steps.
 *
 * The pages are made writable (and kept executable, for the threads
 * running them) for the writes, then given back their segment's
 * protections. *
 * This file is the driver (which functions, the calls kept for the
 * restore, the pages' protections); each machine's decoder and writer is a
 * file of its own (hookpatch_x86.c, hookpatch_a64.c), over what they know
 * beside the code (hookpatch_mod.c); hookpatch_int.h is what they share.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch.h"
#include "base.h"
#include "hookpatch.h"
#include "hookpatch_cache.h"
#include "hookpatch_int.h"
#include "modules.h"
#include "ta_config.h"

#if HP_DECODER

/* Every call rewritten, for the restore.  Under hp_lock. */
static struct site *sites;
static size_t nsites, sites_cap;
static pthread_mutex_t hp_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- writing ------------------------------------------------------------------------ */

/* Makes [lo, hi) writable too (1), or gives it back prot (0). */
static int pages(uintptr_t lo, uintptr_t hi, int prot, int on)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = lo & ~(pg - 1), b = (hi + pg - 1) & ~(pg - 1);

	if (mprotect((void *)a, b - a, on ? prot | PROT_WRITE : prot) < 0)
		return -errno;
	return 0;
}

static int patched_before(uintptr_t fn)
{
	for (size_t i = 0; i < nsites; i++)
		if (sites[i].fn == fn)
			return 1;
	return 0;
}

/* ---- the analyses kept on disk ------------------------------------------------------ */

/* The module whose analyses are at hand (ta_hookpatch_cache_begin), by its
 * load bias; under hp_lock. */
static struct ta_hpc cache;
static uintptr_t cache_bias;
static int cache_on;
static char cache_dir[4096];

void ta_hookpatch_cache_begin(const char *path, uintptr_t addr)
{
	const char *setting = secure_getenv("TRACEAGENT_CACHE");
	struct mod m;
	struct stat st;
	int saved = errno;

	pthread_mutex_lock(&hp_lock);
	ta_hpc_free(&cache);
	cache_on = 0;
	memset(&cache.key, 0, sizeof(cache.key));
	if (ta_hpc_dir(cache_dir, sizeof(cache_dir), setting, secure_getenv("XDG_CACHE_HOME"),
		       secure_getenv("HOME")) == 0 &&
	    ta_hp_mod_of(addr, &m) == 0 && m.build_id_len > 0 && stat(path, &st) == 0) {
		memcpy(cache.key.id, m.build_id, m.build_id_len);
		cache.key.idlen = m.build_id_len;
		cache.key.file_size = (uint64_t)st.st_size;
		cache_bias = m.bias;
		cache_on = 1;
		(void)ta_hpc_load(&cache, cache_dir);
	}
	pthread_mutex_unlock(&hp_lock);
	errno = saved;
}

void ta_hookpatch_cache_end(void)
{
	int saved = errno;

	pthread_mutex_lock(&hp_lock);
	if (cache_on && cache.dirty)
		(void)ta_hpc_store(&cache, cache_dir);
	ta_hpc_free(&cache);
	cache_on = 0;
	pthread_mutex_unlock(&hp_lock);
	errno = saved;
}

/* The calls of [fn, end) from the module's entry, in out: how many, or the
 * scan's -errno; -1000 when there is no usable entry.  An entry is used
 * only for the bytes it was made from (their hash) and the values the
 * decoder read from the module's data (the same now), on which alone its
 * verdict depends, and only when each of its calls is within the function
 * and its bytes are the code's. */
static int from_cache(const struct mod *m, uintptr_t fn, uintptr_t end, struct site *out,
		      uintptr_t *ret_at)
{
	const struct ta_hpc_ent *e;

	if (!cache_on || m->bias != cache_bias)
		return -1000;
	e = ta_hpc_find(&cache, fn - m->bias, end - fn);
	if (!e || ta_hpc_hash((const void *)fn, end - fn) != e->code_hash)
		return -1000;
	for (uint32_t i = 0; i < e->nreads; i++) {
		const struct ta_hpc_site *c =
		    &cache.sites[e->first + (uint32_t)(e->result > 0 ? e->result : 0) + i];
		uintptr_t at = m->bias + (uintptr_t)c->at_off;
		uint64_t off;

		memcpy(&off, c->orig, 8);
		if (c->kind != TA_HPC_READ || !ta_hp_readable(m, at) ||
		    __atomic_load_n((const uintptr_t *)at, __ATOMIC_RELAXED) != m->bias + off)
			return -1000;
	}
	for (int i = 0; i < e->result; i++) {
		const struct ta_hpc_site *c = &cache.sites[e->first + (uint32_t)i];
		uintptr_t at = m->bias + (uintptr_t)c->at_off;

		if (c->kind > K_TAIL || at < fn || at + c->len > end ||
		    memcmp((const void *)at, c->orig, c->len))
			return -1000;
		out[i].fn = fn;
		out[i].at = at;
		out[i].len = c->len;
		out[i].kind = c->kind;
		memcpy(out[i].orig, c->orig, sizeof(out[i].orig));
		memcpy(out[i].repl, c->repl, sizeof(out[i].repl));
	}
	*ret_at = e->ret_off ? m->bias + (uintptr_t)e->ret_off : 0;
	return e->result;
}

/* The analysis of [fn, end): from the cache, else from the decoder (and
 * kept, when it depends on the code alone). */
static int scan(const struct mod *m, uintptr_t fn, uintptr_t end, struct site *out,
		uintptr_t *ret_at)
{
	struct ta_hpc_site cs[MAX_FN_SITES + HP_MAX_READS];
	int n = from_cache(m, fn, end, out, ret_at), k = 0;

	if (n != -1000)
		return n;
	memset(out, 0, MAX_FN_SITES * sizeof(*out));
	*ret_at = 0;
	ta_hp_reads.n = 0;
	n = ta_hp_scan(m, fn, end, out, MAX_FN_SITES, ret_at);
	/* A decoder missing or short of memory says nothing of the code. */
	if (!cache_on || m->bias != cache_bias || ta_hp_reads.n > HP_MAX_READS || n == -ENOSYS ||
	    n == -ENOMEM)
		return n;
	memset(cs, 0, sizeof(cs));
	for (; k < n; k++) {
		cs[k].at_off = out[k].at - m->bias;
		cs[k].len = out[k].len;
		cs[k].kind = out[k].kind;
		memcpy(cs[k].orig, out[k].orig, sizeof(cs[k].orig));
		memcpy(cs[k].repl, out[k].repl, sizeof(cs[k].repl));
	}
	/* A value read, as an offset from the bias (wrapping: one outside
	 * the module matches again only where it is the same). */
	for (int i = 0; i < ta_hp_reads.n; i++, k++) {
		uint64_t off = (uint64_t)(ta_hp_reads.val[i] - m->bias);

		cs[k].at_off = ta_hp_reads.at[i] - m->bias;
		cs[k].len = 8;
		cs[k].kind = TA_HPC_READ;
		memcpy(cs[k].orig, &off, 8);
	}
	(void)ta_hpc_add(&cache, fn - m->bias, end - fn, *ret_at ? *ret_at - m->bias : 0,
			 ta_hpc_hash((const void *)fn, end - fn), n, (uint32_t)ta_hp_reads.n, cs);
	return n;
}

int ta_hookpatch_nop(uintptr_t fn_start, uintptr_t fn_end)
{
	struct site found[MAX_FN_SITES], *ns;
	struct mod m;
	uintptr_t ret_at = 0;
	int n, err = 0, enters = 0, exits = 0, saved = errno;

	if (fn_end <= fn_start || fn_end - fn_start > (1u << 24))
		return -EINVAL;
	pthread_mutex_lock(&hp_lock);
	if (patched_before(fn_start))
		goto out;
	memset(found, 0, sizeof(found));
	if (ta_hp_mod_of(fn_start, &m) < 0 || fn_end > m.hi) {
		err = -EINVAL;
		goto out;
	}
	n = scan(&m, fn_start, fn_end, found, &ret_at);
	if (n < 0) {
		err = n;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		enters += found[i].kind == K_ENTER;
		exits += found[i].kind != K_ENTER;
		found[i].bias = m.bias;
		found[i].lo = m.lo;
		found[i].hi = m.hi;
		found[i].prot = m.prot;
		if (!err)
			err = ta_hp_writable_site(&found[i], ret_at);
	}
	if (!err && (!enters || !exits))
		err = -ENOENT;
	if (err)
		goto out;
	ns = ta_vec_reserve(sites, nsites + (size_t)n, &sites_cap, sizeof(*sites), 64);
	if (!ns) {
		err = -ENOMEM;
		goto out;
	}
	sites = ns;
	err = pages(found[0].at, found[n - 1].at + found[n - 1].len, m.prot, 1);
	if (err)
		goto out;
	for (int i = 0; i < n; i++) {
		ta_hp_write_site(&found[i], found[i].repl);
		sites[nsites++] = found[i];
	}
	(void)pages(found[0].at, found[n - 1].at + found[n - 1].len, m.prot, 0);
out:
	pthread_mutex_unlock(&hp_lock);
	errno = saved;
	return err;
}

/* Whether the site's module is still loaded where it was. */
static int alive(const struct site *s)
{
	struct mod m;

	return ta_hp_mod_of(s->at, &m) == 0 && m.bias == s->bias && m.lo == s->lo;
}

int ta_hookpatch_restore_all(void)
{
	int done = 0, first_err = 0, saved = errno;

	pthread_mutex_lock(&hp_lock);
	for (size_t i = nsites; i-- > 0;) {
		const struct site *s = &sites[i];
		int err;

		if (!alive(s) || memcmp((const void *)s->at, s->repl, s->len) != 0)
			continue;
		err = pages(s->at, s->at + s->len, s->prot, 1);
		if (err) {
			if (!first_err)
				first_err = err;
			continue;
		}
		ta_hp_write_site(s, s->orig);
		(void)pages(s->at, s->at + s->len, s->prot, 0);
		done++;
	}
	nsites = 0;
	pthread_mutex_unlock(&hp_lock);
	errno = saved;
	return first_err ? first_err : done;
}

void ta_hookpatch_forget_unloaded(void)
{
	size_t k = 0;

	pthread_mutex_lock(&hp_lock);
	for (size_t i = 0; i < nsites; i++)
		if (alive(&sites[i]))
			sites[k++] = sites[i];
	nsites = k;
	pthread_mutex_unlock(&hp_lock);
}

#else /* no decoder for this architecture */

int ta_hookpatch_nop(uintptr_t fn_start, uintptr_t fn_end)
{
	(void)fn_start;
	(void)fn_end;
	return -ENOSYS;
}

int ta_hookpatch_restore_all(void)
{
	return 0;
}

void ta_hookpatch_cache_begin(const char *path, uintptr_t addr)
{
	(void)path;
	(void)addr;
}

void ta_hookpatch_cache_end(void)
{
}

void ta_hookpatch_forget_unloaded(void)
{
}

#endif
