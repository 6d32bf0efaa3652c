/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - function names from the ELF files of the recorded modules.
 *
 * A symbol table holds one file's function symbols (STT_FUNC and
 * STT_GNU_IFUNC) from .symtab, else from a separate debug file found by
 * build-id, else from .dynsym, sorted by address.  The resolver loads each
 * module path once and caches every answer by address, so only the first
 * lookup of an address searches.
 */
#ifndef TA_SYMBOLS_H
#define TA_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct ta_sym {
	uint64_t value; /* st_value: the offset from the load bias */
	uint64_t size;
	const char *name; /* as in the file (mangled), owned by the table */
};

struct ta_symtab;

/* Where a module's names came from (`traceagent info`'s "symbols_from"). */
enum ta_sym_source {
	TA_SYMS_NONE,	    /* nowhere: the functions show as module+0xOFFSET */
	TA_SYMS_FILE,	    /* the module's file (at its path, or under --symfs) */
	TA_SYMS_DEBUG_FILE, /* a separate debug file (symfind.h's places) */
	TA_SYMS_DEBUGINFOD, /* a debug file debuginfod served */
	TA_SYMS_STORED	    /* the symbols the dump itself holds */
};

/* Where a table's symbols came from, and what the module's file was. */
struct ta_sym_origin {
	enum ta_sym_source source;
	char *path; /* the file read (malloc'd), NULL for none or stored */
	/* The module's file against the dump's build-id: 1 the same, 0
	 * another or none, -1 nothing to compare (the dump has no build-id,
	 * or there is no file). */
	int match;
	/* The file at the recorded path had another build-id (or none) and
	 * --symfs gave no right one: its names were not used. */
	int refused;
	char dump_id[2 * 64 + 1], file_id[2 * 64 + 1]; /* hex, "" for none */
};

/*
 * Reads the function symbols of the module recorded at path with GNU
 * build-id build_id (may be NULL): from the first file symfind.h finds
 * with that build-id that has a .symtab, else from the .dynsym of the
 * module's own file.  A file with another build-id is never read (an
 * empty table then).  Returns 0 and sets *out, or -TA_E_IO (errno says
 * why) or -TA_E_PAYLOAD (not a readable ELF file).
 */
int ta_symtab_load(const char *path, const uint8_t *build_id, size_t build_id_len,
		   struct ta_symtab **out);
/* The same, saying where the symbols came from in *o (free its path). */
int ta_symtab_find(const char *path, const uint8_t *build_id, size_t build_id_len,
		   struct ta_symtab **out, struct ta_sym_origin *o);
/*
 * The same for the file's data objects (STT_OBJECT: the variables, such
 * as a static mutex), with the file's loaded segments (ta_symtab_maps).
 */
int ta_symtab_load_data(const char *path, const uint8_t *build_id, size_t build_id_len,
			struct ta_symtab **out);
/* Whether offset lies in one of the segments the file loads (a table of
 * ta_symtab_load_data; 0 for a function table). */
int ta_symtab_maps(const struct ta_symtab *s, uint64_t offset);
/* A table of n symbols sorted by value, one per value (malloc'd syms and
 * the names' pool they point into, both the table's from then on); NULL
 * without memory (syms and names then still the caller's). */
struct ta_symtab *ta_symtab_adopt(struct ta_sym *syms, size_t n, char *names);
void ta_symtab_free(struct ta_symtab *s);
size_t ta_symtab_count(const struct ta_symtab *s);

/*
 * The symbol holding offset (value <= offset < value + size), or else the
 * nearest symbol before it if that one has size 0 (assembly labels), or
 * NULL.  Owned by the table.
 */
const struct ta_sym *ta_symtab_lookup(const struct ta_symtab *s, uint64_t offset);

/* The demangled form of a C++ name (malloc'd), or NULL if name is not a
 * mangled C++ name. */
char *ta_demangle(const char *name);

/*
 * The short form of a demangled C++ name (malloc'd, NULL without memory):
 * at level 0 without return type, template arguments, ABI tags and
 * parameter lists, as `--demangle=simple` shows it ("std::vector<int>::
 * push_back(int const&)" is "std::vector::push_back").  At level 1 the
 * outermost function's parameter list and qualifiers stay, their template
 * arguments dropped ("std::vector::push_back(int const&)"); at level 2 the
 * function's own template arguments too, one level deep ("f<std::vector>(int)"
 * for "void f<std::vector<int> >(int)"); at level 3 every template argument
 * list of the name (not of the parameters), one level deep
 * ("std::vector<int, std::allocator>::push_back(int const&)").  What tells functions
 * apart stays: operator names, lambdas and unnamed types ("{lambda(int)#1}"),
 * "(anonymous namespace)", "[clone .cold]", thunks.  A name it cannot
 * parse (unbalanced, nested deeper than 256) comes back whole; the result
 * is never longer than name.
 */
char *ta_cxx_short(const char *name, int level);
#define TA_SHORT_LEVELS 4

/* How the views show C++ names (--demangle). */
enum ta_demangle {
	TA_DEMANGLE_SIMPLE, /* ta_cxx_short's, whole where two functions would share one */
	TA_DEMANGLE_FULL,   /* as the demangler writes them */
	TA_DEMANGLE_NO	    /* as the symbol table has them (mangled) */
};

/* ---- the resolver ---------------------------------------------------------- */

struct ta_resolved {
	const char *name; /* demangled, or "module+0xOFFSET" when unknown */
	/* --demangle=simple's name (ta_resolver_shorten), else name. */
	const char *short_name;
	const char *raw; /* as in the symbol table (mangled), else name */
	uint64_t offset; /* the symbol's value when found, else the offset given */
	int found;
};

struct ta_resolver;

struct ta_resolver *ta_resolver_new(void);
void ta_resolver_free(struct ta_resolver *r);
/* With on, each C++ name resolved gets its short_name: ta_cxx_short's
 * where no other function of its file has the same, else with the
 * parameters, else the whole name.  Set before the first ta_resolve. */
void ta_resolver_shorten(struct ta_resolver *r, int on);

/*
 * Names the function at offset (runtime address minus load bias) in the
 * module at path.  Never fails: without symbols or memory the name is
 * "basename+0xOFFSET".  The result is owned by the resolver and stays
 * valid until it is freed.
 */
const struct ta_resolved *ta_resolve(struct ta_resolver *r, const char *path,
				     const uint8_t *build_id, size_t build_id_len, uint64_t offset);

/* The symbols a dump stored for a module (SYMBOLS chunks, storedsyms.h): a
 * table the resolver then owns, or NULL when the dump has none. */
typedef struct ta_symtab *ta_stored_fn(void *ctx, const char *path, const uint8_t *build_id,
				       size_t build_id_len);
/* Where the resolver looks first for a module's symbols, before its file. */
void ta_resolver_stored(struct ta_resolver *r, ta_stored_fn *fn, void *ctx);

/* Calls fn for each module path whose symbols could not be read, with the
 * TA_E_* code and errno of the failure. */
void ta_resolver_failures(const struct ta_resolver *r,
			  void (*fn)(void *ctx, const char *path, int code, int errnum), void *ctx);
/* Calls fn for each module path whose file had another build-id than the
 * dump's (ta_sym_origin's refused), with the origin. */
void ta_resolver_refused(const struct ta_resolver *r,
			 void (*fn)(void *ctx, const char *path, const struct ta_sym_origin *o),
			 void *ctx);
/* Where the names of the module at path come from, loading them the first
 * time (never NULL). */
const struct ta_sym_origin *ta_resolver_origin(struct ta_resolver *r, const char *path,
					       const uint8_t *build_id, size_t build_id_len);

#endif /* TA_SYMBOLS_H */
