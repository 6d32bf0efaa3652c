/* SPDX-License-Identifier: MIT */
/*
 * patchent.c - tracing -fpatchable-function-entry builds (patchent.h): the
 * modules that have a __patchable_function_entries section, module by
 * module, at start, after a dlopen and at `traceagent attach --patch`.
 *
 * The section lists, for each function compiled with the option, the
 * address of its no-op area (M bytes before the symbol when M > 0).  It is
 * read in memory, where the loader has relocated it; an address outside the
 * module's executable segments (a corrupt or hostile file) is refused and
 * said.  Each address is matched to the function symbol it belongs to (at
 * it, after an endbr64 there, or within 64 bytes after it); the patterns
 * choose among those by name, as for the other patcher; a function a
 * pattern names that has no area is refused ("no patchable entry").
 *
 * A function's slot (TA_PE_SLOT_SIZE bytes, in memory mapped within the
 * entry's branch reach) holds its descriptor, the common entry its stub
 * calls (patch_stub.S's ta_patch_enter_common, or ta_patchent_enter_args
 * when argregs.h's ta_args_find gives it a spec), the spec, and the stub
 * (patchent_x86.c, patchent_a64.c) that calls it and goes back to the
 * function past its no-ops.  The exit is the return stub's (patch_hot.c):
 * no code of the function is decoded or moved, so no disassembler is
 * opened.
 *
 * The bytes written are kept with the bytes they replaced: at attach they
 * are written with every thread stopped and put back exactly at detach;
 * the slots stay mapped (a thread may be in a stub, or return through the
 * return stub).  Safe points are patch.c's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "patchent.h"

#include "api.h"
#include "argregs.h"
#include "args.h"
#include "base.h"
#include "dump.h"
#include "fnsel.h"
#include "format.h"
#include "patch.h"
#include "ring.h"
#include "symstore.h"

#if TA_HAVE_PATCH_HOT

#define SECTION "__patchable_function_entries"

/* ---- a module's section ---------------------------------------------------------- */

/* Where a module's sections named SECTION are in memory (link-time
 * addresses, at most 8 of them), read from its file: how many, or -1 when
 * the file cannot be read as an ELF file of this machine. */
struct pe_sec {
	uint64_t addr, size;
	int in_load; /* inside a PT_LOAD segment's memory */
};

static int read_sections(const char *path, struct pe_sec *out, int max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
	struct stat st;
	uint8_t *map;
	const ElfW(Ehdr) * eh;
	const ElfW(Shdr) * sh;
	const char *strs;
	size_t len;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(ElfW(Ehdr))) {
		close(fd);
		return -1;
	}
	len = (size_t)st.st_size;
	map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	eh = (const ElfW(Ehdr) *)map;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > len ||
	    (size_t)eh->e_shnum > (len - eh->e_shoff) / sizeof(ElfW(Shdr)) ||
	    eh->e_shstrndx >= eh->e_shnum || eh->e_phentsize != sizeof(ElfW(Phdr)) ||
	    eh->e_phoff > len || (size_t)eh->e_phnum > (len - eh->e_phoff) / sizeof(ElfW(Phdr))) {
		munmap(map, len);
		return -1;
	}
	sh = (const ElfW(Shdr) *)(map + eh->e_shoff);
	if (sh[eh->e_shstrndx].sh_offset > len || sh[eh->e_shstrndx].sh_size > len ||
	    sh[eh->e_shstrndx].sh_offset + sh[eh->e_shstrndx].sh_size > len) {
		munmap(map, len);
		return -1;
	}
	strs = (const char *)map + sh[eh->e_shstrndx].sh_offset;
	for (size_t i = 0; i < eh->e_shnum && n < max; i++) {
		const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(map + eh->e_phoff);
		size_t nl = sizeof(SECTION);

		if (sh[i].sh_name >= sh[eh->e_shstrndx].sh_size ||
		    sh[eh->e_shstrndx].sh_size - sh[i].sh_name < nl ||
		    memcmp(strs + sh[i].sh_name, SECTION, nl) != 0 || !(sh[i].sh_flags & SHF_ALLOC))
			continue;
		out[n].addr = sh[i].sh_addr;
		out[n].size = sh[i].sh_size;
		out[n].in_load = 0;
		for (size_t k = 0; k < eh->e_phnum; k++)
			if (ph[k].p_type == PT_LOAD && (ph[k].p_flags & PF_R) &&
			    sh[i].sh_addr >= ph[k].p_vaddr && sh[i].sh_size <= ph[k].p_memsz &&
			    sh[i].sh_addr - ph[k].p_vaddr <= ph[k].p_memsz - sh[i].sh_size)
				out[n].in_load = 1;
		n++;
	}
	munmap(map, len);
	return n;
}

/* ---- state ----------------------------------------------------------------------- */

static pthread_mutex_t pe_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ta_patterns patterns;
static int pe_on; /* patterns parsed (TRACEAGENT_PATCH or an attach) */
static int attach_mode;

/* The modules looked at, by load bias and path; owned: has the section. */
struct seen {
	uint64_t bias;
	char *path;
	int owned;
};
static struct seen *seen;
static size_t nseen, seen_cap;

static struct ta_refusals refused;
static uint64_t npatched;

/* Each function's written bytes: at attach planned first (applied 0),
 * written by the commit (1), or left alone for good (2: changed since). */
struct written {
	struct ta_pe_plan pl;
	const struct ta_module *mod; /* in mods */
	size_t modi;
	int applied;
};
static struct written *wr;
static size_t nwr, wr_cap;
static struct ta_module *mods;
static size_t nmods, mods_cap;

static const char *refusal_text(unsigned code)
{
	switch (code) {
#define TA_X(name, code, text)                                                                     \
	case code:                                                                                 \
		return text;
		TA_PE_REFUSALS(TA_X)
#undef TA_X
	}
	return "unknown";
}

static void refuse(const char *module, const char *name, uint64_t addr, unsigned reason)
{
	ta_refusals_add(&refused, module, name, addr, reason);
}

static void forget_counts(void)
{
	ta_refusals_clear(&refused);
	npatched = 0;
}

/* The seen entry of a module (added, owned or not, when new): NULL when out
 * of memory; *fresh: it was not seen before. */
static struct seen *seen_of(const struct ta_module *m, int *fresh)
{
	struct pe_sec secs[8];
	struct seen *s;

	*fresh = 0;
	for (size_t i = 0; i < nseen; i++)
		if (seen[i].bias == m->bias && strcmp(seen[i].path, m->path) == 0)
			return &seen[i];
	s = ta_vec_reserve(seen, nseen + 1, &seen_cap, sizeof(*s), 16);
	if (!s)
		return NULL;
	seen = s;
	s = &seen[nseen];
	s->path = strdup(m->path);
	if (!s->path)
		return NULL;
	s->bias = m->bias;
	s->owned = read_sections(m->path, secs, 8) > 0;
	nseen++;
	*fresh = 1;
	return s;
}

int ta_patchent_owns(const struct ta_module *m)
{
	struct pe_sec secs[8];
	int owned = 0;

	pthread_mutex_lock(&pe_lock);
	for (size_t i = 0; i < nseen; i++)
		if (seen[i].bias == m->bias && strcmp(seen[i].path, m->path) == 0) {
			owned = seen[i].owned + 1;
			break;
		}
	pthread_mutex_unlock(&pe_lock);
	if (owned)
		return owned - 1;
	return read_sections(m->path, secs, 8) > 0;
}

/* ---- memory near a module ---------------------------------------------------------- */

static int within(uint64_t a, uint64_t b, uint64_t reach)
{
	return (a > b ? a - b : b - a) < reach;
}

/* len bytes mapped within reach of [lo, hi) both ways; NULL if none is free. */
static uint8_t *map_near(uint64_t lo, uint64_t hi, size_t len)
{
	const uint64_t step = 1u << 20;
	const uint64_t reach = ta_pe_arch_reach;

	for (int dir = 0; dir < 2; dir++)
		for (uint64_t k = 1; k < 4096; k++) {
			uint64_t hint = dir == 0 ? ((hi + step - 1) & ~(step - 1)) + k * step
						 : (lo & ~(step - 1)) - k * step - len;
			void *p;

			if (dir == 1 && hint > lo)
				break;
			if (!within(hint, lo, reach) || !within(hint + len, hi, reach))
				break;
			p = mmap((void *)(uintptr_t)hint, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((uint64_t)(uintptr_t)p != hint) {
				munmap(p, len); /* an old kernel took the flag as a hint */
				continue;
			}
			return p;
		}
	return NULL;
}

/* Makes the module's executable segments writable (on) or gives them back
 * their protections: 0 or -errno. */
static int segments_writable(const struct ta_module *m, int on)
{
	long pg = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < m->nseg; i++) {
		uint64_t s = m->seg[i].start & ~(uint64_t)(pg - 1);
		int prot = on ? m->seg[i].prot | PROT_WRITE : m->seg[i].prot;

		if (mprotect((void *)(uintptr_t)s, m->seg[i].end - s, prot) < 0)
			return -errno;
	}
	return 0;
}

static int in_code(const struct ta_module *m, uint64_t a, uint64_t len)
{
	for (int i = 0; i < m->nseg; i++)
		if (a >= m->seg[i].start && a <= m->seg[i].end && len <= m->seg[i].end - a)
			return 1;
	return 0;
}

/* ---- one module ---------------------------------------------------------------------- */

static int all_functions(void *arg, const char *modbase, int is_exe, const char *name)
{
	(void)arg;
	(void)modbase;
	(void)is_exe;
	(void)name;
	return 1;
}

static int wanted(const char *modbase, int is_exe, const char *name)
{
	int in, out;

	ta_patterns_match(&patterns, modbase, is_exe, name, &in, &out);
	return in && !out;
}

/* The function an entry's no-op area belongs to: at it, 4 bytes before it
 * (an endbr64 first), or up to 64 bytes after it (M no-ops before the
 * symbol); -1 when none. */
static long function_of(const struct ta_fn_cand *c, size_t n, uint64_t area)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c[mid].addr < area)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && c[lo].addr == area)
		return (long)lo;
	if (lo > 0 && area - c[lo - 1].addr == 4)
		return (long)lo - 1;
	if (lo < n && c[lo].addr - area <= 64)
		return (long)lo;
	return -1;
}

/* Plans (and at start writes) the entries the patterns name in module m,
 * which has the section; returns how many functions it patched or refused. */
static void patch_module(const struct ta_module *m, uint64_t agent_base)
{
	const char *modbase = ta_base_name(m->path);
	struct pe_sec secs[8];
	int nsec;
	size_t n = 0, maplen = 0, nplans = 0, outside = 0;
	uint64_t first_outside = 0;
	void *map = NULL;
	struct ta_fn_cand *c;
	uint8_t *hit = NULL, *pool = NULL;
	struct ta_pe_plan *plans = NULL;
	const struct ta_argspec **specs = NULL;
	size_t pool_len;
	long pg = sysconf(_SC_PAGESIZE);

	if ((m->bias == agent_base && !m->is_exe) ||
	    !ta_patterns_name_module(&patterns, modbase, m->is_exe))
		return;
	nsec = read_sections(m->path, secs, 8);
	if (nsec <= 0)
		return;
	c = ta_module_functions(m, all_functions, NULL, &n, &map, &maplen);
	if (!c || n == 0)
		goto done;
	hit = calloc(n, 1);
	plans = calloc(n, sizeof(*plans));
	specs = calloc(n, sizeof(*specs));
	if (!hit || !plans || !specs)
		goto done;
	for (int s = 0; s < nsec; s++) {
		const uint64_t *ents = (const uint64_t *)(uintptr_t)(m->bias + secs[s].addr);

		if (!secs[s].in_load || secs[s].size % 8 || secs[s].addr % 8) {
			ta_warn("%s: its " SECTION
				" section (%#llx, %llu bytes) is not in its loaded "
				"memory; its functions are not patched",
				m->path, (unsigned long long)secs[s].addr,
				(unsigned long long)secs[s].size);
			continue;
		}
		for (uint64_t k = 0; k < secs[s].size / 8; k++) {
			uint64_t area = ents[k];
			long f;

			if (!in_code(m, area, 16)) {
				if (!outside++)
					first_outside = area;
				continue;
			}
			f = function_of(c, n, area);
			if (f < 0 || hit[f] || !wanted(modbase, m->is_exe, c[f].name))
				continue;
			hit[f] = 1;
			{
				unsigned why =
				    ta_pe_arch_plan(area, c[f].addr, c[f].size, &plans[nplans]);
				if (why) {
					refuse(m->path, c[f].name, c[f].addr, why);
					continue;
				}
			}
			specs[nplans] = ta_args_find(c[f].addr, c[f].name);
			nplans++;
		}
	}
	if (outside)
		ta_warn("%s: %zu addresses of its " SECTION " are outside its code (the first: "
			"%#llx); refused",
			m->path, outside, (unsigned long long)first_outside);
	for (size_t k = 0; k < outside; k++)
		refuse(m->path, "?", first_outside, TA_PE_OUTSIDE);
	/* Functions named that have no area. */
	for (size_t i = 0; i < n; i++)
		if (!hit[i] && !c[i].entry && wanted(modbase, m->is_exe, c[i].name))
			refuse(m->path, c[i].name, c[i].addr, TA_PE_NONE);
	if (nplans == 0)
		goto done;
	pool_len = (nplans * TA_PE_SLOT_SIZE + (size_t)pg - 1) & ~((size_t)pg - 1);
	pool = map_near(m->lo, m->hi, pool_len);
	if (!pool) {
		for (size_t i = 0; i < nplans; i++)
			refuse(m->path, "?", plans[i].fn, TA_PE_NO_MEMORY);
		goto done;
	}
	{
		size_t k = 0;
		struct ta_module *nm = ta_vec_reserve(mods, nmods + 1, &mods_cap, sizeof(*nm), 8);

		if (!nm)
			goto done;
		mods = nm;
		mods[nmods] = *m;
		for (size_t i = 0; i < nplans; i++) {
			uint8_t *slot = pool + k * TA_PE_SLOT_SIZE;
			uint64_t common = (uint64_t)(uintptr_t)(specs[i] ? ta_patchent_enter_args
									 : ta_patch_enter_common);
			uint64_t sp = (uint64_t)(uintptr_t)specs[i];
			struct written *w;

			memcpy(slot, &plans[i].fn, 8);
			memcpy(slot + 8, &common, 8);
			memcpy(slot + 16, &sp, 8);
			if (ta_pe_arch_emit(&plans[i], slot) != 0) {
				refuse(m->path, "?", plans[i].fn, TA_PE_NO_MEMORY);
				continue;
			}
			w = ta_vec_reserve(wr, nwr + 1, &wr_cap, sizeof(*w), 64);
			if (!w)
				break;
			wr = w;
			wr[nwr].pl = plans[i];
			wr[nwr].modi = nmods;
			wr[nwr].applied = 0;
			nwr++;
			k++;
		}
		nmods++;
		if (mprotect(pool, pool_len, PROT_READ | PROT_EXEC) < 0) {
			ta_warn("%s: mprotect: %s; its functions are not patched", m->path,
				strerror(errno));
			nwr -= k;
			goto done;
		}
		ta_pe_arch_flush((uint64_t)(uintptr_t)pool, pool_len);
		/* Its functions' events are in the dump: so are their names. */
		if (k)
			ta_symstore_patched(m->bias);
	}
done:
	free(hit);
	free(plans);
	free(specs);
	free(c);
	if (map)
		munmap(map, maplen);
}

/* Writes a function's sites (first to last: the target of a short jump
 * before the jump). */
static void write_sites(const struct ta_pe_plan *pl)
{
	for (unsigned s = 0; s < pl->nsite; s++) {
		memcpy((void *)(uintptr_t)pl->site[s].at, pl->site[s].repl, pl->site[s].len);
		ta_pe_arch_flush(pl->site[s].at, pl->site[s].len);
	}
}

static int sites_unchanged(const struct ta_pe_plan *pl)
{
	for (unsigned s = 0; s < pl->nsite; s++)
		if (memcmp((const void *)(uintptr_t)pl->site[s].at, pl->site[s].orig,
			   pl->site[s].len) != 0)
			return 0;
	return 1;
}

/* The planned entries of module index k not applied yet, written now (at
 * start or after a dlopen: no other thread is in them). */
static void apply_module(size_t k)
{
	int err = segments_writable(&mods[k], 1);

	if (err < 0) {
		ta_warn("cannot patch %s: mprotect: %s; its functions are not traced", mods[k].path,
			strerror(-err));
		return;
	}
	for (size_t i = 0; i < nwr; i++)
		if (wr[i].modi == k && !wr[i].applied) {
			if (!sites_unchanged(&wr[i].pl)) {
				wr[i].applied = 2;
				continue;
			}
			write_sites(&wr[i].pl);
			wr[i].applied = 1;
			npatched++;
		}
	segments_writable(&mods[k], 0);
}

/* The modules loaded now that were not looked at: each with the section
 * planned, and (not at attach) written.  How many functions this patched or
 * refused. */
static uint64_t patch_new_modules(void)
{
	size_t n;
	struct ta_module *ms = ta_modules_collect(&n);
	uint64_t before = npatched + refused.n, planned = nwr;
	Dl_info self;

	if (!dladdr((void *)(uintptr_t)ta_patchent_start, &self))
		self.dli_fbase = NULL;
	for (size_t i = 0; ms && i < n; i++) {
		int fresh;
		struct seen *s = seen_of(&ms[i], &fresh);
		size_t k0 = nmods;

		if (!s || !fresh || !s->owned)
			continue;
		patch_module(&ms[i], (uint64_t)(uintptr_t)self.dli_fbase);
		if (!attach_mode && nmods > k0)
			apply_module(k0);
	}
	free(ms);
	return npatched + refused.n - before + (attach_mode ? nwr - planned : 0);
}

/* Forgets the modules no longer loaded, and their written entries. */
static void forget_unloaded(void)
{
	size_t n, kept = 0;
	struct ta_module *ms = ta_modules_collect(&n);

	for (size_t k = 0; k < nmods; k++) {
		int present = 0;
		for (size_t i = 0; ms && i < n && !present; i++)
			present =
			    ms[i].bias == mods[k].bias && strcmp(ms[i].path, mods[k].path) == 0;
		if (!present)
			mods[k].nseg = -1;
	}
	for (size_t i = 0; i < nwr; i++)
		if (mods[wr[i].modi].nseg >= 0)
			wr[kept++] = wr[i];
	nwr = kept;
	for (size_t k = 0; k < nseen;) {
		int present = 0;
		for (size_t i = 0; ms && i < n && !present; i++)
			present =
			    ms[i].bias == seen[k].bias && strcmp(ms[i].path, seen[k].path) == 0;
		if (present) {
			k++;
			continue;
		}
		free(seen[k].path);
		seen[k] = seen[--nseen];
	}
	free(ms);
}

/* ---- the patcher's entries ------------------------------------------------------------ */

static void summary(void)
{
	ta_warn("patched %llu functions at their patchable entries, refused %llu%s",
		(unsigned long long)npatched, (unsigned long long)refused.n,
		refused.n ? " (see traceagent info)" : "");
}

uint64_t ta_patchent_start(const char *spec)
{
	uint64_t done;

	pthread_mutex_lock(&pe_lock);
	if (spec && *spec && ta_patterns_parse(&patterns, spec, "TRACEAGENT_PATCH") < 0) {
		pthread_mutex_unlock(&pe_lock);
		return 0;
	}
	/* The functions whose arguments are asked are patched too. */
	if (ta_args_wanted())
		ta_args_add_patterns(&patterns);
	if (!patterns.n) {
		pthread_mutex_unlock(&pe_lock);
		return 0;
	}
	/* Release: a dlopen in another thread that sees it sees the
	 * patterns; pairs with the acquire in ta_patchent_after_dlopen. */
	__atomic_store_n(&pe_on, 1, __ATOMIC_RELEASE);
	done = patch_new_modules();
	pthread_mutex_unlock(&pe_lock);
	if (done)
		summary();
	return done;
}

void ta_patchent_after_dlopen(void)
{
	uint64_t done;

	/* Acquire: pairs with the release in ta_patchent_start. */
	if (!__atomic_load_n(&pe_on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&pe_lock);
	done = patch_new_modules();
	pthread_mutex_unlock(&pe_lock);
	if (done) {
		summary();
		if (ta_ring_up.ensure_started()) {
			ta_patch_dump();
			ta_symstore_scan();
		}
	}
}

void ta_patchent_after_dlclose(void)
{
	/* Acquire: pairs with the release in ta_patchent_start. */
	if (!__atomic_load_n(&pe_on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&pe_lock);
	forget_unloaded();
	pthread_mutex_unlock(&pe_lock);
}

void ta_patchent_counts(uint64_t *patched, uint64_t *nref)
{
	pthread_mutex_lock(&pe_lock);
	*patched = npatched;
	*nref = refused.n;
	pthread_mutex_unlock(&pe_lock);
}

void ta_patchent_put_refusals(struct ta_buf *b, uint64_t count)
{
	pthread_mutex_lock(&pe_lock);
	/* Fewer than counted: an attach forgot them meanwhile. */
	ta_refusals_put(&refused, count, TA_PE_NONE, refusal_text, b);
	pthread_mutex_unlock(&pe_lock);
}

void ta_patchent_dump(void)
{
	struct ta_buf b = {0};
	uint64_t np, nr;

	ta_patchent_counts(&np, &nr);
	if (np == 0 && nr == 0)
		return;
	ta_buf_u(&b, np);
	ta_buf_u(&b, nr);
	/* Relaxed: a count, read for the record (patch_hot.c adds to it). */
	ta_buf_u(&b, __atomic_load_n(&ta_patch_frames_without_exit, __ATOMIC_RELAXED));
	ta_patchent_put_refusals(&b, nr);
	ta_buf_u(&b, 0); /* relocated: none, every one has the return stub */
	ta_buf_u(&b, 0);
	ta_buf_u(&b, np); /* since 1.10: at their patchable entries */
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_PATCH, b.p, b.len);
	ta_buf_free(&b);
}

/* ---- at attach ------------------------------------------------------------------------ */

int ta_patchent_attach_prepare(const char *spec)
{
	size_t before;

	pthread_mutex_lock(&pe_lock);
	if (!nwr || !attach_mode) {
		/* A window's first plan: this attach's patterns. */
		struct ta_patterns ps = {0};

		if (ta_patterns_parse(&ps, spec, "TRACEAGENT_PATCH") < 0) {
			pthread_mutex_unlock(&pe_lock);
			return -EINVAL;
		}
		ta_patterns_free(&patterns);
		patterns = ps;
		forget_counts();
	}
	__atomic_store_n(&pe_on, 1, __ATOMIC_RELEASE);
	attach_mode = 1;
	forget_unloaded();
	before = nwr;
	patch_new_modules();
	before = nwr - before;
	pthread_mutex_unlock(&pe_lock);
	return (int)before;
}

/* No lock, no allocation: every other thread is stopped (one may hold
 * any lock).  mprotect and stores only. */
int ta_patchent_attach_commit(const uint64_t *pcs, size_t npcs)
{
	int applied = 0;

	for (size_t k = 0; k < nmods; k++) {
		int any = 0;

		for (size_t i = 0; i < nwr; i++)
			any |= wr[i].modi == k && !wr[i].applied;
		if (!any || mods[k].nseg < 0 || segments_writable(&mods[k], 1) < 0)
			continue;
		for (size_t i = 0; i < nwr; i++) {
			const struct ta_pe_plan *pl = &wr[i].pl;
			int inside = 0;

			if (wr[i].modi != k || wr[i].applied)
				continue;
			/* A thread stopped inside the bytes replaced (not at
			 * their start) would resume in the middle of a jump. */
			for (size_t j = 0; j < npcs && !inside; j++)
				for (unsigned s = 0; s < pl->nsite; s++)
					inside |= pcs[j] > pl->site[s].at &&
						  pcs[j] < pl->site[s].at + pl->site[s].len;
			if (inside)
				continue;
			if (!sites_unchanged(pl)) {
				wr[i].applied = 2;
				continue;
			}
			write_sites(pl);
			wr[i].applied = 1;
			applied++;
			npatched++;
		}
		segments_writable(&mods[k], 0);
	}
	return applied;
}

void ta_patchent_attach_restore(void)
{
	for (size_t k = 0; k < nmods; k++) {
		if (mods[k].nseg < 0 || segments_writable(&mods[k], 1) < 0)
			continue;
		for (size_t i = 0; i < nwr; i++) {
			const struct ta_pe_plan *pl = &wr[i].pl;

			if (wr[i].modi != k || wr[i].applied != 1)
				continue;
			/* Last to first: the short jump before its target. */
			for (unsigned s = pl->nsite; s > 0; s--) {
				memcpy((void *)(uintptr_t)pl->site[s - 1].at, pl->site[s - 1].orig,
				       pl->site[s - 1].len);
				ta_pe_arch_flush(pl->site[s - 1].at, pl->site[s - 1].len);
			}
		}
		segments_writable(&mods[k], 0);
	}
	/* The slots stay: a thread may be in a stub, or return through the
	 * return stub. */
	nwr = 0;
	nmods = 0;
}

void ta_patchent_attach_forget(void)
{
	pthread_mutex_lock(&pe_lock);
	for (size_t i = 0; i < nseen; i++)
		free(seen[i].path);
	nseen = 0;
	attach_mode = 0;
	forget_counts();
	pthread_mutex_unlock(&pe_lock);
}

/* ---- the stubs' C side ------------------------------------------------------------------ */

void ta_patchent_on_enter_args(const struct ta_patch_desc *d, uint64_t *slot,
			       const struct ta_argregs *r)
{
	const struct ta_argspec *spec;

	memcpy(&spec, (const uint8_t *)d + 16, sizeof(spec));
	if (ta_patch_on_enter_args(d, slot, spec))
		ta_args_entry(spec, r);
}

#else

uint64_t ta_patchent_start(const char *spec)
{
	(void)spec;
	return 0;
}

int ta_patchent_owns(const struct ta_module *m)
{
	(void)m;
	return 0;
}

void ta_patchent_after_dlopen(void)
{
}

void ta_patchent_after_dlclose(void)
{
}

void ta_patchent_counts(uint64_t *patched, uint64_t *nref)
{
	*patched = 0;
	*nref = 0;
}

void ta_patchent_put_refusals(struct ta_buf *b, uint64_t count)
{
	(void)b;
}

void ta_patchent_dump(void)
{
}

int ta_patchent_attach_prepare(const char *spec)
{
	(void)spec;
	return 0;
}

int ta_patchent_attach_commit(const uint64_t *pcs, size_t npcs)
{
	(void)pcs;
	(void)npcs;
	return 0;
}

void ta_patchent_attach_restore(void)
{
}

void ta_patchent_attach_forget(void)
{
}

#endif
