/* SPDX-License-Identifier: MIT */
/*
 * symbols.c - ELF function symbols (libelf), demangling, and the resolver.
 */
#define _GNU_SOURCE
#include "symbols.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "grow.h"
#include "htab.h"
#include "symfind.h"

/* A short name's hash and its function's whole name's. */
struct name_pair {
	uint64_t shortn, whole;
};

/* The C++ runtime's demangler. */
typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

struct seg {
	uint64_t lo, hi;
};

struct ta_symtab {
	struct ta_sym *syms;
	size_t n;
	char *names; /* one pool for all names */
	/* Data tables: the file's loaded segments (PT_LOAD), offsets. */
	struct seg *segs;
	size_t nsegs;
	/* The short names' uniqueness (short_level), built the first time a
	 * short name is asked: amb_state 1 built, -1 without memory. */
	struct name_pair *amb[TA_SHORT_LEVELS];
	size_t namb[TA_SHORT_LEVELS];
	int amb_state;
};

/* ---- reading ELF ---------------------------------------------------------------- */

static Elf_Scn *find_section(Elf *e, unsigned type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		if (!gelf_getshdr(scn, sh))
			continue;
		if (sh->sh_type == type && sh->sh_entsize && sh->sh_size)
			return scn;
	}
	return NULL;
}

/* Which symbols a table holds: functions, or data objects. */
static int wanted(unsigned type, int objects)
{
	if (objects)
		return type == STT_OBJECT;
	return type == STT_FUNC || type == STT_GNU_IFUNC;
}

/* Reads the function (or, objects, the data object) symbols of one section
 * into s, one per address as format's ta_syms_pick chooses (the agent
 * stores the same, SYMBOLS chunks). */
static int read_syms(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct ta_symtab *s, int objects)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count, n = 0, pool = 0;
	struct ta_syms_raw *raw;

	if (!data || !sh->sh_entsize)
		return -TA_E_PAYLOAD;
	count = sh->sh_size / sh->sh_entsize;
	raw = malloc((count ? count : 1) * sizeof(*raw));
	if (!raw)
		return -TA_E_NOMEM;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if (!wanted(GELF_ST_TYPE(sym.st_info), objects))
			continue;
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		raw[n].value = sym.st_value;
		raw[n].size = sym.st_size;
		raw[n].name = name;
		raw[n].order = i;
		raw[n].rank = ta_syms_rank(GELF_ST_BIND(sym.st_info));
		n++;
	}
	n = ta_syms_pick(raw, n);
	for (size_t i = 0; i < n; i++)
		pool += strlen(raw[i].name) + 1;
	s->names = malloc(pool ? pool : 1);
	s->syms = malloc((n ? n : 1) * sizeof(*s->syms));
	if (!s->names || !s->syms) {
		free(raw);
		return -TA_E_NOMEM;
	}
	/* The names copied, so the file can be closed. */
	pool = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(raw[i].name) + 1;

		memcpy(s->names + pool, raw[i].name, len);
		s->syms[i].value = raw[i].value;
		s->syms[i].size = raw[i].size;
		s->syms[i].name = s->names + pool;
		pool += len;
	}
	s->n = n;
	free(raw);
	return 0;
}

/* The file's PT_LOAD segments, [p_vaddr, p_vaddr + p_memsz). */
static int read_segments(Elf *e, struct ta_symtab *s)
{
	size_t n;

	if (elf_getphdrnum(e, &n) != 0)
		return -TA_E_PAYLOAD;
	s->segs = calloc(n ? n : 1, sizeof(*s->segs));
	if (!s->segs)
		return -TA_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_memsz)
			continue;
		s->segs[s->nsegs].lo = ph.p_vaddr;
		s->segs[s->nsegs].hi = ph.p_vaddr + ph.p_memsz;
		s->nsegs++;
	}
	return 0;
}

/* Reads the .symtab (dynsym: the .dynsym) of the ELF file open at fd into
 * s, with the file's segments for a data table: 1, 0 when the file has no
 * such section, or -TA_E_*. */
static int read_file(int fd, struct ta_symtab *s, int objects, int dynsym)
{
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn;
	GElf_Shdr sh;
	int rc;

	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		return -TA_E_PAYLOAD;
	}
	scn = find_section(e, dynsym ? SHT_DYNSYM : SHT_SYMTAB, &sh);
	rc = !scn ? 0 : objects ? read_segments(e, s) : 0;
	if (scn && rc == 0)
		rc = read_syms(e, scn, &sh, s, objects);
	elf_end(e);
	if (rc < 0) {
		/* Empty again for the next file tried. */
		free(s->syms);
		free(s->names);
		free(s->segs);
		memset(s, 0, sizeof(*s));
		return rc;
	}
	return scn != NULL;
}

static int symtab_load(const char *path, const uint8_t *build_id, size_t build_id_len,
		       struct ta_symtab **out, int objects, struct ta_sym_origin *o)
{
	struct ta_symfind f;
	struct ta_symfile sf, own = {.fd = -1};
	struct ta_symtab *s;
	int rc = 0, err = 0;

	*out = NULL;
	memset(o, 0, sizeof(*o));
	o->match = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -TA_E_PAYLOAD;
	if (!(s = calloc(1, sizeof(*s))))
		return -TA_E_NOMEM;
	if (ta_symfind_begin(&f, path, build_id, build_id_len) < 0) {
		free(s);
		return -TA_E_NOMEM;
	}
	/* The first file with the module's build-id and a .symtab; the
	 * module's own file, when stripped, still names its exported
	 * functions (.dynsym) if no debug file is found. */
	while (o->source == TA_SYMS_NONE && ta_symfind_next(&f, &sf)) {
		rc = read_file(sf.fd, s, objects, 0);
		if (rc > 0) {
			o->source = sf.source;
			o->path = sf.path;
			sf.path = NULL;
		} else if (rc == 0 && sf.source == TA_SYMS_FILE && own.fd < 0) {
			own = sf;
			continue;
		} else if (rc < 0 && !err) {
			err = rc;
		}
		ta_symfile_close(&sf);
		if (rc == -TA_E_NOMEM)
			break;
	}
	/* An exported table without one function names none. */
	if (o->source == TA_SYMS_NONE && own.fd >= 0 && rc != -TA_E_NOMEM &&
	    (rc = read_file(own.fd, s, objects, 1)) > 0 && s->n) {
		o->source = TA_SYMS_FILE;
		o->path = own.path;
		own.path = NULL;
	}
	if (own.fd >= 0)
		ta_symfile_close(&own);
	o->match = ta_symfind_match(&f);
	o->refused = f.state == TA_FILE_OTHER && !f.symfs_match;
	if (f.dump_has_id)
		memcpy(o->dump_id, f.want, sizeof(o->dump_id));
	memcpy(o->file_id, f.file_id, sizeof(o->file_id));
	if (o->source == TA_SYMS_NONE) {
		/* Nothing read: why, when it is not a refused file. */
		rc = rc == -TA_E_NOMEM		  ? rc
		     : f.state == TA_FILE_ABSENT  ? -TA_E_IO
		     : f.state == TA_FILE_NOT_ELF ? -TA_E_PAYLOAD
						  : (err == -TA_E_NOMEM ? err : 0);
		errno = f.errnum;
		free(s->syms);
		free(s->names);
		free(s->segs);
		memset(s, 0, sizeof(*s));
	} else {
		rc = 0;
	}
	ta_symfind_end(&f);
	if (rc < 0) {
		ta_symtab_free(s);
		free(o->path);
		o->path = NULL;
		return rc;
	}
	*out = s;
	return 0;
}

int ta_symtab_find(const char *path, const uint8_t *build_id, size_t build_id_len,
		   struct ta_symtab **out, struct ta_sym_origin *o)
{
	return symtab_load(path, build_id, build_id_len, out, 0, o);
}

int ta_symtab_load(const char *path, const uint8_t *build_id, size_t build_id_len,
		   struct ta_symtab **out)
{
	struct ta_sym_origin o;
	int rc = symtab_load(path, build_id, build_id_len, out, 0, &o);

	free(o.path);
	return rc;
}

int ta_symtab_load_data(const char *path, const uint8_t *build_id, size_t build_id_len,
			struct ta_symtab **out)
{
	struct ta_sym_origin o;
	int rc = symtab_load(path, build_id, build_id_len, out, 1, &o);

	free(o.path);
	return rc;
}

int ta_symtab_maps(const struct ta_symtab *s, uint64_t offset)
{
	for (size_t i = 0; i < s->nsegs; i++)
		if (offset >= s->segs[i].lo && offset < s->segs[i].hi)
			return 1;
	return 0;
}

struct ta_symtab *ta_symtab_adopt(struct ta_sym *syms, size_t n, char *names)
{
	struct ta_symtab *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->syms = syms;
	s->n = n;
	s->names = names;
	return s;
}

void ta_symtab_free(struct ta_symtab *s)
{
	if (!s)
		return;
	free(s->syms);
	for (int k = 0; k < TA_SHORT_LEVELS; k++)
		free(s->amb[k]);
	free(s->names);
	free(s->segs);
	free(s);
}

size_t ta_symtab_count(const struct ta_symtab *s)
{
	return s->n;
}

const struct ta_sym *ta_symtab_lookup(const struct ta_symtab *s, uint64_t offset)
{
	size_t lo = 0, hi = s->n;
	const struct ta_sym *sym;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->syms[mid].value <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	sym = &s->syms[lo - 1];
	if (!sym->size || offset - sym->value < sym->size)
		return sym;
	return NULL;
}

/*
 * The C++ runtime is loaded the first time a C++ name is demangled, not
 * linked: loading libstdc++ costs every run about 2 ms of start-up (a
 * quarter of what reading a small dump costs), and C programs never need
 * it.  NULL when there is none: C++ names then stay mangled.
 */
static cxa_demangle_fn cxa_demangle(void)
{
	static const char *const libs[] = {"libstdc++.so.6", "libc++abi.so.1", "libc++.so.1"};
	static int tried;
	static cxa_demangle_fn fn;

	for (size_t i = 0; !tried && i < sizeof(libs) / sizeof(libs[0]); i++) {
		void *h = dlopen(libs[i], RTLD_LAZY | RTLD_LOCAL);
		void *sym = h ? dlsym(h, "__cxa_demangle") : NULL;

		/* POSIX guarantees a data pointer from dlsym converts to a
		 * function pointer. */
		if (sym) {
			memcpy(&fn, &sym, sizeof(fn));
			break;
		}
		if (h)
			dlclose(h);
	}
	tried = 1;
	return fn;
}

char *ta_demangle(const char *name)
{
	int status = -1;
	cxa_demangle_fn demangle;
	char *d;

	if (strncmp(name, "_Z", 2) != 0 || !(demangle = cxa_demangle()))
		return NULL;
	d = demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(d);
		return NULL;
	}
	return d;
}

/* ---- the resolver --------------------------------------------------------------------- */

struct module_syms {
	char *path;
	struct ta_symtab *tab; /* NULL when it could not be read */
	int code, errnum;
	struct ta_sym_origin origin;
};

struct cache_entry {
	uint32_t module;	 /* index + 1 */
	uint64_t key;		 /* the offset asked for */
	struct ta_resolved *res; /* apart, so it does not move when the rows grow */
};

struct ta_resolver {
	int shorten; /* ta_resolver_shorten */
	struct module_syms *mods;
	size_t nmods, mods_cap;
	struct cache_entry *cache;
	size_t ncache, cache_cap;
	struct ta_htab cache_index; /* the cache's rows by (module, key) */
	ta_stored_fn *stored;
	void *stored_ctx;
};

void ta_resolver_stored(struct ta_resolver *r, ta_stored_fn *fn, void *ctx)
{
	r->stored = fn;
	r->stored_ctx = ctx;
}

struct ta_resolver *ta_resolver_new(void)
{
	return calloc(1, sizeof(struct ta_resolver));
}

void ta_resolver_free(struct ta_resolver *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nmods; i++) {
		free(r->mods[i].path);
		free(r->mods[i].origin.path);
		ta_symtab_free(r->mods[i].tab);
	}
	free(r->mods);
	for (size_t i = 0; i < r->ncache; i++) {
		struct ta_resolved *res = r->cache[i].res;

		if (res->short_name != res->name)
			free((char *)(uintptr_t)res->short_name);
		free((char *)(uintptr_t)res->name);
		free(res);
	}
	free(r->cache);
	ta_htab_free(&r->cache_index);
	free(r);
}

/* The module's index, loading its symbols the first time; -1 without memory. */
static long module_index(struct ta_resolver *r, const char *path, const uint8_t *id, size_t id_len)
{
	struct module_syms *v, *m;
	int rc;

	for (size_t i = 0; i < r->nmods; i++)
		if (!strcmp(r->mods[i].path, path))
			return (long)i;
	v = ta_vec_reserve(r->mods, r->nmods + 1, &r->mods_cap, sizeof(*v), 8);
	if (!v)
		return -1;
	r->mods = v;
	m = &r->mods[r->nmods];
	m->path = strdup(path);
	if (!m->path)
		return -1;
	m->errnum = 0;
	memset(&m->origin, 0, sizeof(m->origin));
	m->origin.match = -1;
	ta_build_id_hex(m->origin.dump_id, id, id_len);
	ta_symfind_note(path, id, id_len);
	/* The dump's own table first: it names the functions as the recording
	 * machine's file did, whatever is at the path here. */
	m->tab = r->stored ? r->stored(r->stored_ctx, path, id, id_len) : NULL;
	if (m->tab) {
		struct ta_symfind f;

		m->origin.source = TA_SYMS_STORED;
		m->code = 0;
		/* The file at the path only says whether it is the recorded
		 * one: source lines come from it only if it is. */
		if (path[0] == '/' && ta_symfind_begin(&f, path, id, id_len) == 0) {
			m->origin.match = ta_symfind_match(&f);
			m->origin.refused = f.state == TA_FILE_OTHER && !f.symfs_match;
			memcpy(m->origin.file_id, f.file_id, sizeof(m->origin.file_id));
			ta_symfind_end(&f);
		}
		return (long)r->nmods++;
	}
	/* Modules without a file (the vDSO) have no path to read. */
	rc = path[0] == '/' ? ta_symtab_find(path, id, id_len, &m->tab, &m->origin) : -TA_E_IO;
	m->code = rc;
	m->errnum = rc == -TA_E_IO ? (path[0] == '/' ? errno : ENOENT) : 0;
	return (long)r->nmods++;
}

static uint64_t cache_key_hash(uint32_t module, uint64_t key)
{
	return ((key ^ ((uint64_t)module << 48)) * 0x9e3779b97f4a7c15ull) >> 24;
}

static uint64_t cache_hash(const void *ctx, size_t i)
{
	const struct cache_entry *e = &((const struct ta_resolver *)ctx)->cache[i];

	return cache_key_hash(e->module, e->key);
}

static int cache_is(const void *ctx, size_t i, const void *key)
{
	const struct cache_entry *e = &((const struct ta_resolver *)ctx)->cache[i];
	const struct cache_entry *k = key;

	return e->module == k->module && e->key == k->key;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The answer when there is no memory left even for the answer. */
static struct ta_resolved unknown = {"?", "?", "?", 0, 0};

void ta_resolver_shorten(struct ta_resolver *r, int on)
{
	r->shorten = on;
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int pair_cmp(const void *a, const void *b)
{
	const struct name_pair *x = a, *y = b;

	if (x->shortn != y->shortn)
		return x->shortn < y->shortn ? -1 : 1;
	return x->whole < y->whole ? -1 : x->whole > y->whole;
}

/* Sorts the n pairs at v and drops repeats; their new count. */
static size_t pairs_unique(struct name_pair *v, size_t n)
{
	size_t k = 0;

	if (n)
		qsort(v, n, sizeof(*v), pair_cmp);
	for (size_t i = 0; i < n; i++)
		if (!k || pair_cmp(&v[k - 1], &v[i]))
			v[k++] = v[i];
	return k;
}

/* Whether two whole names share the short one of hash h in the sorted
 * unique pairs v. */
static int pairs_shared(const struct name_pair *v, size_t n, uint64_t h)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].shortn < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo + 1 < n && v[lo].shortn == h && v[lo + 1].shortn == h;
}

/* The short names of every C++ function of the file, paired with the
 * whole ones, so that a short name two functions share is known (an
 * overload, a template's instances) whichever of them the dump called. */
static void amb_build(struct ta_symtab *s)
{
	s->amb_state = -1;
	for (int k = 0; k < TA_SHORT_LEVELS; k++)
		if (!(s->amb[k] = malloc((s->n ? s->n : 1) * sizeof(*s->amb[k]))))
			return;
	for (size_t i = 0; i < s->n; i++) {
		char *d = ta_demangle(s->syms[i].name);
		uint64_t w;

		if (!d)
			continue;
		w = name_hash(d);
		for (int k = 0; k < TA_SHORT_LEVELS; k++) {
			char *sh = ta_cxx_short(d, k);

			if (!sh) {
				free(d);
				return;
			}
			s->amb[k][s->namb[k]++] = (struct name_pair){name_hash(sh), w};
			free(sh);
		}
		free(d);
	}
	for (int k = 0; k < TA_SHORT_LEVELS; k++)
		s->namb[k] = pairs_unique(s->amb[k], s->namb[k]);
	s->amb_state = 1;
}

/*
 * The name --demangle=simple shows for the C++ function whole (malloc'd),
 * or NULL for whole itself: the shortest of ta_cxx_short's levels that no
 * other function of the file shares (the short name; with its parameters;
 * with its own template arguments too; with every template argument list
 * of the name), else whole.  Two functions never
 * show as one.
 */
static char *short_name(struct ta_symtab *tab, const char *whole)
{
	char *s;

	if (!tab->amb_state)
		amb_build(tab);
	if (tab->amb_state < 0)
		return NULL;
	for (int k = 0; k < TA_SHORT_LEVELS; k++) {
		s = ta_cxx_short(whole, k);
		if (!s)
			return NULL;
		if (!pairs_shared(tab->amb[k], tab->namb[k], name_hash(s)))
			return s;
		free(s);
	}
	return NULL;
}

const struct ta_resolved *ta_resolve(struct ta_resolver *r, const char *path,
				     const uint8_t *build_id, size_t build_id_len, uint64_t offset)
{
	long mi = module_index(r, path, build_id, build_id_len);
	uint32_t mod;
	const struct ta_sym *sym = NULL;
	struct ta_resolved *res;
	struct cache_entry key;
	size_t k;
	char *name, *shortn = NULL;

	if (mi < 0)
		return &unknown;
	mod = (uint32_t)mi + 1;
	key = (struct cache_entry){mod, offset, NULL};
	if (ta_htab_reserve(&r->cache_index, r->ncache, 256, cache_hash, r) < 0)
		return &unknown;
	k = ta_htab_find(&r->cache_index, cache_key_hash(mod, offset), cache_is, r, &key);
	if (ta_htab_at(&r->cache_index, k))
		return r->cache[ta_htab_at(&r->cache_index, k) - 1].res;
	if (r->ncache == r->cache_cap) {
		struct cache_entry *v =
		    ta_vec_reserve(r->cache, r->ncache + 1, &r->cache_cap, sizeof(*v), 256);

		if (!v)
			return &unknown;
		r->cache = v;
	}
	if (r->mods[mi].tab)
		sym = ta_symtab_lookup(r->mods[mi].tab, offset);
	if (sym) {
		name = ta_demangle(sym->name);
		if (name && r->shorten)
			shortn = short_name(r->mods[mi].tab, name);
		else if (!name)
			name = strdup(sym->name);
	} else if (asprintf(&name, "%s+0x%" PRIx64, base_name(path), offset) < 0) {
		name = NULL;
	}
	res = malloc(sizeof(*res));
	if (!name || !res) {
		free(name);
		free(shortn);
		free(res);
		return &unknown;
	}
	res->name = name;
	res->short_name = shortn ? shortn : name;
	res->raw = sym ? sym->name : name;
	res->offset = sym ? sym->value : offset;
	res->found = sym != NULL;
	key.res = res;
	r->cache[r->ncache] = key;
	ta_htab_put(&r->cache_index, k, r->ncache++);
	return res;
}

void ta_resolver_failures(const struct ta_resolver *r,
			  void (*fn)(void *ctx, const char *path, int code, int errnum), void *ctx)
{
	for (size_t i = 0; i < r->nmods; i++)
		if (r->mods[i].code < 0)
			fn(ctx, r->mods[i].path, r->mods[i].code, r->mods[i].errnum);
}

void ta_resolver_refused(const struct ta_resolver *r,
			 void (*fn)(void *ctx, const char *path, const struct ta_sym_origin *o),
			 void *ctx)
{
	for (size_t i = 0; i < r->nmods; i++)
		if (r->mods[i].origin.refused)
			fn(ctx, r->mods[i].path, &r->mods[i].origin);
}

const struct ta_sym_origin *ta_resolver_origin(struct ta_resolver *r, const char *path,
					       const uint8_t *build_id, size_t build_id_len)
{
	static const struct ta_sym_origin none = {.source = TA_SYMS_NONE, .match = -1};
	long mi = module_index(r, path, build_id, build_id_len);

	return mi < 0 ? &none : &r->mods[mi].origin;
}
