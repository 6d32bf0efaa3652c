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

/* Binding rank: when symbols share an address, the global name is the one
 * a user wrote, a local alias (often with underscores) the least likely. */
static int bind_rank(unsigned char info)
{
	switch (GELF_ST_BIND(info)) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

struct raw_sym {
	uint64_t value, size;
	size_t name_off; /* into the pool */
	size_t order;	 /* position in the file, for a stable sort */
	int rank;
};

static int raw_cmp(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	/* Sized before size 0, then by binding, then file order. */
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Which symbols a table holds: functions, or data objects. */
static int wanted(unsigned type, int objects)
{
	if (objects)
		return type == STT_OBJECT;
	return type == STT_FUNC || type == STT_GNU_IFUNC;
}

/* Reads the function (or, objects, the data object) symbols of one section into s. */
static int read_syms(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct ta_symtab *s, int objects)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count, n = 0, pool = 0;
	struct raw_sym *raw;

	if (!data || !sh->sh_entsize)
		return -TA_E_PAYLOAD;
	count = sh->sh_size / sh->sh_entsize;
	raw = malloc((count ? count : 1) * sizeof(*raw));
	if (!raw)
		return -TA_E_NOMEM;
	/* First pass: which symbols, and how much room their names need. */
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		unsigned type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (!wanted(type, objects))
			continue;
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		raw[n].value = sym.st_value;
		raw[n].size = sym.st_size;
		raw[n].name_off = pool;
		raw[n].order = i;
		raw[n].rank = bind_rank(sym.st_info);
		pool += strlen(name) + 1;
		n++;
	}
	s->names = malloc(pool ? pool : 1);
	s->syms = malloc((n ? n : 1) * sizeof(*s->syms));
	if (!s->names || !s->syms) {
		free(raw);
		return -TA_E_NOMEM;
	}
	/* Second pass: copy the names, so the file can be closed. */
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;

		gelf_getsym(data, (int)raw[i].order, &sym);
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		memcpy(s->names + raw[i].name_off, name, strlen(name) + 1);
	}
	qsort(raw, n, sizeof(*raw), raw_cmp);
	s->n = 0;
	for (size_t i = 0; i < n; i++) {
		/* Aliases: the first after sorting is the best name. */
		if (s->n && s->syms[s->n - 1].value == raw[i].value)
			continue;
		s->syms[s->n].value = raw[i].value;
		s->syms[s->n].size = raw[i].size;
		s->syms[s->n].name = s->names + raw[i].name_off;
		s->n++;
	}
	free(raw);
	return 0;
}

static Elf *elf_open(const char *path, int *fd)
{
	Elf *e;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	e = elf_begin(*fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(*fd);
		*fd = -1;
		errno = 0;
		return NULL;
	}
	return e;
}

/* Tries the .symtab of the debug file the build-id names (the distribution
 * layout, /usr/lib/debug/.build-id/xx/rest.debug). */
static int load_debug_file(const uint8_t *id, size_t len, struct ta_symtab *s, int objects)
{
	char path[64 + 2 * 64];
	size_t k;
	int fd, rc = -TA_E_IO;
	Elf *e;
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (!id || len < 2 || len > 64)
		return -TA_E_IO;
	k = (size_t)snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (size_t i = 1; i < len; i++)
		k += (size_t)snprintf(path + k, sizeof(path) - k, "%02x", id[i]);
	snprintf(path + k, sizeof(path) - k, ".debug");
	e = elf_open(path, &fd);
	if (!e)
		return -TA_E_IO;
	scn = find_section(e, SHT_SYMTAB, &sh);
	if (scn)
		rc = read_syms(e, scn, &sh, s, objects);
	elf_end(e);
	close(fd);
	return rc;
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

static int symtab_load(const char *path, const uint8_t *build_id, size_t build_id_len,
		       struct ta_symtab **out, int objects)
{
	struct ta_symtab *s;
	Elf_Scn *scn;
	GElf_Shdr sh;
	Elf *e;
	int fd, rc;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -TA_E_PAYLOAD;
	e = elf_open(path, &fd);
	if (!e)
		return errno ? -TA_E_IO : -TA_E_PAYLOAD;
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = -TA_E_NOMEM;
		goto out;
	}
	if (objects && (rc = read_segments(e, s)) < 0)
		goto out;
	scn = find_section(e, SHT_SYMTAB, &sh);
	if (scn) {
		rc = read_syms(e, scn, &sh, s, objects);
	} else if (load_debug_file(build_id, build_id_len, s, objects) == 0) {
		rc = 0;
	} else {
		/* A stripped file still names its exported functions. */
		free(s->syms);
		free(s->names);
		s->syms = NULL;
		s->names = NULL;
		scn = find_section(e, SHT_DYNSYM, &sh);
		rc = scn ? read_syms(e, scn, &sh, s, objects) : 0;
	}
out:
	elf_end(e);
	close(fd);
	if (rc < 0) {
		ta_symtab_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int ta_symtab_load(const char *path, const uint8_t *build_id, size_t build_id_len,
		   struct ta_symtab **out)
{
	return symtab_load(path, build_id, build_id_len, out, 0);
}

int ta_symtab_load_data(const char *path, const uint8_t *build_id, size_t build_id_len,
			struct ta_symtab **out)
{
	return symtab_load(path, build_id, build_id_len, out, 1);
}

int ta_symtab_maps(const struct ta_symtab *s, uint64_t offset)
{
	for (size_t i = 0; i < s->nsegs; i++)
		if (offset >= s->segs[i].lo && offset < s->segs[i].hi)
			return 1;
	return 0;
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

/* ---- short C++ names -------------------------------------------------------------- */

/* Deeper nesting than this is not shortened (the name stays whole). */
#define SHORT_DEPTH 256

static int ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$';
}

/* The operator after the keyword "operator" at s (its length), or 0 for a
 * conversion operator or none.  Longest first: "<<=" before "<<" and "<". */
static size_t op_token(const char *s)
{
	static const char *const ops[] = {
	    " delete[]", " new[]", " co_await", " delete", " new", "<<=", ">>=", "<=>", "->*",
	    "()",	 "[]",	   "<<",	">>",	   "<=",   ">=",  "->",	 "==",	"!=",
	    "&&",	 "||",	   "++",	"--",	   "+=",   "-=",  "*=",	 "/=",	"%=",
	    "&=",	 "|=",	   "^=",	"<",	   ">",	   "+",	  "-",	 "*",	"/",
	    "%",	 "^",	   "&",		"|",	   "~",	   "!",	  "=",	 ","};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i]);

		if (!strncmp(s, ops[i], n) && (ops[i][0] != ' ' || !ident_char(s[n])))
			return n;
	}
	return 0;
}

/* Whether the keyword "operator" starts at s + i (not inside a word). */
static int at_operator(const char *s, size_t i)
{
	return (i == 0 || !ident_char(s[i - 1])) && !strncmp(s + i, "operator", 8) &&
	       !ident_char(s[i + 8]);
}

/* Past the group that opens at s[i] ('(', '<', '[' or '{') and its
 * matching closer, or 0 when it does not close or nests too deep.  A '<'
 * or '>' that cannot be a bracket (a comparison in an expression, "->",
 * an operator's name) does not count. */
static size_t group_end(const char *s, size_t i)
{
	char want[SHORT_DEPTH];
	size_t depth = 0;

	for (; s[i]; i++) {
		char c = s[i];

		if (at_operator(s, i)) {
			i += 8;
			i += op_token(s + i);
			i--;
			continue;
		}
		if (c == '-' && s[i + 1] == '>') {
			i++;
			continue;
		}
		if (c == '(' || c == '<' || c == '[' || c == '{') {
			if (depth == SHORT_DEPTH)
				return 0;
			want[depth++] = c == '(' ? ')' : c == '<' ? '>' : c == '[' ? ']' : '}';
		} else if (c == ')' || c == ']' || c == '}' || c == '>') {
			size_t d = depth;

			while (d && want[d - 1] != c && want[d - 1] == '>')
				d--;
			if (!d || want[d - 1] != c)
				continue; /* a comparison, or a stray closer */
			depth = d - 1;
			if (!depth)
				return i + 1;
		}
	}
	return 0;
}

/* What may follow a function's parameter list and belongs to it. */
static size_t qualifier_len(const char *s)
{
	static const char *const q[] = {"const", "volatile", "restrict", "noexcept", "&&", "&"};

	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		size_t n = strlen(q[i]);

		if (!strncmp(s, q[i], n) && (q[i][0] == '&' || !ident_char(s[n])))
			return n;
	}
	return 0;
}

/* Whether only qualifiers and "[clone ...]" follow s: the end of the
 * outermost function's name. */
static int at_tail(const char *s)
{
	size_t i = 0, n;

	while (s[i]) {
		if (s[i] == ' ') {
			i++;
		} else if ((n = qualifier_len(s + i)) != 0) {
			i += n;
		} else if (!strncmp(s + i, "[clone ", 7)) {
			n = group_end(s, i);
			if (!n)
				return 0;
			i = n;
		} else {
			return 0;
		}
	}
	return 1;
}

/* Copies s[i, end) to o without its template argument lists; o's end. */
static size_t copy_no_targs(const char *s, size_t i, size_t end, char *o, size_t oi)
{
	while (i < end) {
		size_t e;

		if (at_operator(s, i)) {
			/* group_end skipped the same token: it ends by end,
			 * which bounds it all the same. */
			e = i + 8 + op_token(s + i + 8);
			if (e > end)
				e = end;
			memcpy(o + oi, s + i, e - i);
			oi += e - i;
			i = e;
		} else if (s[i] == '<' && (e = group_end(s, i)) != 0 && e <= end) {
			i = e;
		} else {
			o[oi++] = s[i++];
		}
	}
	return oi;
}

/* Names before the function's that the demangler writes as words. */
static const char *const special_prefix[] = {
    "non-virtual thunk to ",  "virtual thunk to ",	"covariant return thunk to ",
    "transaction clone for ", "TLS init function for ", "TLS wrapper function for "};

char *ta_cxx_short(const char *name, int level)
{
	const int keep_params = level >= 1, keep_targs = level >= 2, keep_all_targs = level >= 3;
	size_t len = strlen(name), i = 0, oi = 0, pre = 0, e;
	char *o = malloc(len + 1);
	int conv = 0; /* in a conversion operator's type, where spaces belong */

	if (!o)
		return NULL;
	for (size_t k = 0; k < sizeof(special_prefix) / sizeof(special_prefix[0]); k++) {
		size_t n = strlen(special_prefix[k]);

		if (!strncmp(name, special_prefix[k], n)) {
			memcpy(o, name, n);
			i = oi = pre = n;
			break;
		}
	}
	while (name[i]) {
		char c = name[i];

		if (at_operator(name, i)) {
			memcpy(o + oi, name + i, 8);
			oi += 8;
			i += 8;
			if (name[i] == '"' && name[i + 1] == '"') {
				/* A literal operator: operator"" _km. */
				o[oi++] = '"';
				o[oi++] = '"';
				i += 2;
				if (name[i] == ' ')
					o[oi++] = name[i++];
				while (ident_char(name[i]))
					o[oi++] = name[i++];
			} else if ((e = op_token(name + i)) != 0) {
				memcpy(o + oi, name + i, e);
				oi += e;
				i += e;
			} else if (name[i] == ' ') {
				conv = 1;
				o[oi++] = name[i++];
			}
			continue;
		}
		switch (c) {
		case '(':
			if (!strncmp(name + i, "(anonymous namespace)", 21)) {
				memcpy(o + oi, name + i, 21);
				oi += 21;
				i += 21;
				continue;
			}
			if (!(e = group_end(name, i)))
				goto whole;
			if (keep_params && at_tail(name + e)) {
				if (oi == pre)
					goto whole; /* a list without a name */
				oi = copy_no_targs(name, i, e, o, oi);
			}
			i = e;
			conv = 0;
			continue;
		case '<':
			if (!(e = group_end(name, i)))
				goto whole;
			/* The function's own template arguments (those of the
			 * name the last parameter list follows), one level. */
			if (keep_targs) {
				size_t pe = name[e] == '(' ? group_end(name, e) : 0;

				if (keep_all_targs || (pe && at_tail(name + pe))) {
					/* "operator< <int>" keeps its space. */
					if (oi && o[oi - 1] == '<' && i && name[i - 1] == ' ')
						o[oi++] = ' ';
					o[oi++] = '<';
					oi = copy_no_targs(name, i + 1, e - 1, o, oi);
					while (o[oi - 1] == ' ')
						oi--; /* "vector<int> >": the space went with the
							 '>' */
					o[oi++] = '>';
				}
			}
			i = e;
			continue;
		case '{':
			/* {lambda(int)#1}, {unnamed type#1}: what tells them apart. */
			if (!(e = group_end(name, i)))
				goto whole;
			oi = copy_no_targs(name, i, e, o, oi);
			i = e;
			continue;
		case '[':
			if (!(e = group_end(name, i)))
				goto whole;
			/* An ABI tag says nothing a reader needs; a clone is
			 * another function (a .cold part). */
			if (strncmp(name + i, "[abi:", 5)) {
				memcpy(o + oi, name + i, e - i);
				oi += e - i;
			}
			i = e;
			continue;
		case ' ':
			if (conv) {
				o[oi++] = name[i++];
				continue;
			}
			/* "operator< <int>": the space keeps "<<" from being read. */
			if (name[i + 1] == '<') {
				i++;
				continue;
			}
			if (!strncmp(name + i + 1, "[clone ", 7)) {
				o[oi++] = name[i++];
				continue;
			}
			if ((e = qualifier_len(name + i + 1)) != 0) {
				if (keep_params && at_tail(name + i)) {
					memcpy(o + oi, name + i, e + 1);
					oi += e + 1;
				}
				i += e + 1;
				continue;
			}
			/* What came before was the return type. */
			oi = pre;
			i++;
			continue;
		default:
			o[oi++] = name[i++];
		}
	}
	while (oi > pre && o[oi - 1] == ' ')
		oi--;
	if (oi == pre)
		goto whole;
	o[oi] = '\0';
	return o;
whole:
	memcpy(o, name, len + 1);
	return o;
}

/* ---- the resolver --------------------------------------------------------------------- */

struct module_syms {
	char *path;
	struct ta_symtab *tab; /* NULL when it could not be read */
	int code, errnum;
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
};

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
	m->tab = NULL;
	m->errnum = 0;
	/* Modules without a file (the vDSO) have no path to read. */
	rc = path[0] == '/' ? ta_symtab_load(path, id, id_len, &m->tab) : -TA_E_IO;
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
