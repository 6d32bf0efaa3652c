/* SPDX-License-Identifier: MIT */
/*
 * test_symbols.c - ELF symbols, demangling and the resolver
 * (analyzer/lib/symbols.c): on a tiny ELF file written at test time with
 * chosen symbols, and on the test executable itself.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>

#include "../check_run.h"
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "symbols.h"

/* ---- a tiny ELF file ---------------------------------------------------------- */

struct fake_sym {
	const char *name;
	uint64_t value, size;
	unsigned char type, bind;
	int undef;
};

static const struct fake_sym fake_syms[] = {
    {"alpha", 0x1000, 0x10, STT_FUNC, STB_GLOBAL, 0},
    {"alpha_local_alias", 0x1000, 0x10, STT_FUNC, STB_LOCAL, 0},
    {"beta", 0x1100, 0x20, STT_GNU_IFUNC, STB_GLOBAL, 0},
    {"label", 0x1200, 0, STT_FUNC, STB_LOCAL, 0},
    {"gamma", 0x1300, 0x10, STT_FUNC, STB_GLOBAL, 0},
    {"data_object", 0x1400, 0x100, STT_OBJECT, STB_GLOBAL, 0},
    {"undefined_fn", 0, 0, STT_FUNC, STB_GLOBAL, 1},
    {"_ZN2ta4test5probeEi", 0x1500, 0x10, STT_FUNC, STB_GLOBAL, 0},
    {"weak_name", 0x1600, 8, STT_FUNC, STB_WEAK, 0},
    {"strong_name", 0x1600, 8, STT_FUNC, STB_GLOBAL, 0},
    {"sizeless_alias", 0x1600, 0, STT_FUNC, STB_GLOBAL, 0},
};

static const struct fake_sym dyn_syms[] = {
    {"alpha_dynamic", 0x1000, 0x10, STT_FUNC, STB_GLOBAL, 0},
};

/* Adds a string to a string table under construction; returns its index. */
static size_t str_add(char *tab, size_t *len, const char *s)
{
	size_t at = *len;

	strcpy(tab + at, s);
	*len += strlen(s) + 1;
	return at;
}

static Elf_Scn *add_section(Elf *e, const char *shname_unused, unsigned type, void *buf,
			    size_t size, Elf_Type dtype, size_t entsize)
{
	Elf_Scn *scn = elf_newscn(e);
	Elf_Data *d;
	Elf64_Shdr *sh;

	(void)shname_unused;
	ck_assert_ptr_nonnull(scn);
	d = elf_newdata(scn);
	d->d_buf = buf;
	d->d_size = size;
	d->d_type = dtype;
	d->d_align = 8;
	d->d_version = EV_CURRENT;
	sh = elf64_getshdr(scn);
	sh->sh_type = type;
	sh->sh_entsize = entsize;
	sh->sh_addralign = 8;
	return scn;
}

/*
 * Writes an ELF file with a .text section and the given symbol tables
 * (either may be absent).
 */
static void write_elf(const char *path, const struct fake_sym *syms, size_t nsyms,
		      const struct fake_sym *dsyms, size_t ndsyms)
{
	static uint8_t text[0x1000];
	static char strtab[4096], dynstr[4096], shstr[256];
	static Elf64_Sym symtab[32], dynsym[32];
	size_t strlen_ = 1, dynlen = 1, shlen = 1;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	Elf *e;
	Elf64_Ehdr *eh;
	Elf_Scn *scn_text, *scn, *scn_str;
	size_t n_text, n_shstr;

	ck_assert_int_ge(fd, 0);
	ck_assert_uint_ne(elf_version(EV_CURRENT), EV_NONE);
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	ck_assert_ptr_nonnull(e);
	eh = elf64_newehdr(e);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	memset(strtab, 0, sizeof(strtab));
	memset(dynstr, 0, sizeof(dynstr));
	memset(shstr, 0, sizeof(shstr));

	scn_text = add_section(e, ".text", SHT_PROGBITS, text, sizeof(text), ELF_T_BYTE, 0);
	n_text = elf_ndxscn(scn_text);
	elf64_getshdr(scn_text)->sh_name = (Elf64_Word)str_add(shstr, &shlen, ".text");
	elf64_getshdr(scn_text)->sh_addr = 0x1000;
	elf64_getshdr(scn_text)->sh_flags = SHF_ALLOC | SHF_EXECINSTR;

	for (int pass = 0; pass < 2; pass++) {
		const struct fake_sym *fs = pass ? dsyms : syms;
		size_t n = pass ? ndsyms : nsyms;
		char *st = pass ? dynstr : strtab;
		size_t *stl = pass ? &dynlen : &strlen_;
		Elf64_Sym *tab = pass ? dynsym : symtab;

		if (!fs)
			continue;
		memset(tab, 0, 32 * sizeof(*tab));
		for (size_t i = 0; i < n; i++) {
			Elf64_Sym *s = &tab[i + 1];

			s->st_name = (Elf64_Word)str_add(st, stl, fs[i].name);
			s->st_value = fs[i].value;
			s->st_size = fs[i].size;
			s->st_info = ELF64_ST_INFO(fs[i].bind, fs[i].type);
			s->st_shndx = fs[i].undef ? SHN_UNDEF : (Elf64_Section)n_text;
		}
		scn_str = add_section(e, NULL, SHT_STRTAB, st, *stl, ELF_T_BYTE, 0);
		elf64_getshdr(scn_str)->sh_name =
		    (Elf64_Word)str_add(shstr, &shlen, pass ? ".dynstr" : ".strtab");
		scn = add_section(e, NULL, pass ? SHT_DYNSYM : SHT_SYMTAB, tab,
				  (n + 1) * sizeof(Elf64_Sym), ELF_T_SYM, sizeof(Elf64_Sym));
		elf64_getshdr(scn)->sh_name =
		    (Elf64_Word)str_add(shstr, &shlen, pass ? ".dynsym" : ".symtab");
		elf64_getshdr(scn)->sh_link = (Elf64_Word)elf_ndxscn(scn_str);
		elf64_getshdr(scn)->sh_info = 1;
	}
	scn = add_section(e, NULL, SHT_STRTAB, shstr, sizeof(shstr), ELF_T_BYTE, 0);
	n_shstr = elf_ndxscn(scn);
	elf64_getshdr(scn)->sh_name = (Elf64_Word)str_add(shstr, &shlen, ".shstrtab");
	eh->e_shstrndx = (Elf64_Half)n_shstr;
	ck_assert_int_ge(elf_update(e, ELF_C_WRITE), 0);
	elf_end(e);
	close(fd);
}

static void tmp_path(char *path)
{
	int fd;

	strcpy(path, "/tmp/ta-sym-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

static const char *name_at(const struct ta_symtab *s, uint64_t off)
{
	const struct ta_sym *sym = ta_symtab_lookup(s, off);

	return sym ? sym->name : "(none)";
}

START_TEST(symtab_rules)
{
	char path[64];
	struct ta_symtab *s;

	tmp_path(path);
	write_elf(path, fake_syms, sizeof(fake_syms) / sizeof(fake_syms[0]), dyn_syms, 1);
	ck_assert_int_eq(ta_symtab_load(path, NULL, 0, &s), 0);
	unlink(path);
	/* alpha, beta, label, gamma, probe, strong: objects, undefined
	 * symbols and aliases left out. */
	ck_assert_uint_eq(ta_symtab_count(s), 6);
	ck_assert_str_eq(name_at(s, 0xfff), "(none)");
	ck_assert_str_eq(name_at(s, 0x1000), "alpha"); /* global over local alias */
	ck_assert_str_eq(name_at(s, 0x100f), "alpha");
	ck_assert_str_eq(name_at(s, 0x1010), "(none)"); /* past alpha's size */
	ck_assert_str_eq(name_at(s, 0x1100), "beta");	/* an IFUNC */
	ck_assert_str_eq(name_at(s, 0x111f), "beta");
	ck_assert_str_eq(name_at(s, 0x1200), "label");
	ck_assert_str_eq(name_at(s, 0x12ff), "label"); /* size 0: the nearest before */
	ck_assert_str_eq(name_at(s, 0x1300), "gamma");
	ck_assert_str_eq(name_at(s, 0x1400), "(none)"); /* data is not a function */
	ck_assert_str_eq(name_at(s, 0x1500), "_ZN2ta4test5probeEi");
	ck_assert_str_eq(name_at(s, 0x1600), "strong_name"); /* sized global first */
	ck_assert_uint_eq(ta_symtab_lookup(s, 0x1604)->value, 0x1600);
	ck_assert_uint_eq(ta_symtab_lookup(s, 0x1604)->size, 8);
	ta_symtab_free(s);
}
END_TEST

START_TEST(dynsym_fallback)
{
	char path[64];
	struct ta_symtab *s;

	tmp_path(path);
	write_elf(path, NULL, 0, dyn_syms, 1);
	ck_assert_int_eq(ta_symtab_load(path, NULL, 0, &s), 0);
	unlink(path);
	ck_assert_uint_eq(ta_symtab_count(s), 1);
	ck_assert_str_eq(name_at(s, 0x1008), "alpha_dynamic");
	ta_symtab_free(s);
	/* No symbols at all: an empty table, not an error. */
	tmp_path(path);
	write_elf(path, NULL, 0, NULL, 0);
	ck_assert_int_eq(ta_symtab_load(path, NULL, 0, &s), 0);
	unlink(path);
	ck_assert_uint_eq(ta_symtab_count(s), 0);
	ck_assert_ptr_null(ta_symtab_lookup(s, 0x1000));
	ta_symtab_free(s);
}
END_TEST

START_TEST(load_errors)
{
	char path[64];
	struct ta_symtab *s = (struct ta_symtab *)1;
	int fd;

	errno = 0;
	ck_assert_int_eq(ta_symtab_load("/nonexistent/libnothing.so", NULL, 0, &s), -TA_E_IO);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(s);
	tmp_path(path);
	fd = open(path, O_WRONLY);
	ck_assert_int_eq(write(fd, "not an ELF file\n", 16), 16);
	close(fd);
	ck_assert_int_eq(ta_symtab_load(path, NULL, 0, &s), -TA_E_PAYLOAD);
	unlink(path);
}
END_TEST

START_TEST(demangle)
{
	char *d;

	/* The C++ runtime is loaded when a C++ name needs it, not before
	 * (each test runs in a process of its own); the sanitizers' runtimes
	 * load it themselves. */
	ck_assert_ptr_null(ta_demangle("main"));
#if !defined(__SANITIZE_ADDRESS__)
	ck_assert_ptr_null(dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD));
#endif
	d = ta_demangle("_ZN3foo3barEi");
	ck_assert_str_eq(d, "foo::bar(int)");
	free(d);
	d = ta_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi");
	ck_assert_str_eq(d, "std::vector<int, std::allocator<int> >::push_back(int const&)");
	free(d);
	ck_assert_ptr_null(ta_demangle("main"));
	ck_assert_ptr_null(ta_demangle("_Z"));
	ck_assert_ptr_null(ta_demangle("_Zgarbage!"));
}
END_TEST

/* ---- short names (--demangle=simple) ----------------------------------------------- */

static void check_short(const char *name, int level, const char *want)
{
	char *s = ta_cxx_short(name, level);

	ck_assert_ptr_nonnull(s);
	ck_assert_msg(!strcmp(s, want), "ta_cxx_short(\"%s\", %d) = \"%s\", want \"%s\"", name,
		      level, s, want);
	ck_assert_uint_le(strlen(s), strlen(name));
	free(s);
}

START_TEST(short_names)
{
	static const struct {
		const char *name, *simple, *params;
	} cases[] = {
	    /* C and other names pass through. */
	    {"main", "main", "main"},
	    {"f.part.0", "f.part.0", "f.part.0"},
	    {"cxx-O0+0x1139", "cxx-O0+0x1139", "cxx-O0+0x1139"},
	    {"", "", ""},
	    {"foo::bar(int)", "foo::bar", "foo::bar(int)"},
	    {"std::vector<int, std::allocator<int> >::push_back(int const&)",
	     "std::vector::push_back", "std::vector::push_back(int const&)"},
	    /* The return type of a template's instance goes. */
	    {"int ns::twice<int>(int)", "ns::twice", "ns::twice(int)"},
	    {"std::pair<int, int> const& get<0ul>(std::pair<int, int> const&)", "get",
	     "get(std::pair const&)"},
	    {"char const* ns::K::name() const", "ns::K::name", "ns::K::name() const"},
	    {"ns::K::get() const &&", "ns::K::get", "ns::K::get() const &&"},
	    /* Operators. */
	    {"bool operator< <int>(S<int> const&, S<int> const&)", "operator<",
	     "operator<(S const&, S const&)"},
	    {"ns::operator<<(std::ostream&, ns::T const&)", "ns::operator<<",
	     "ns::operator<<(std::ostream&, ns::T const&)"},
	    {"bool std::operator<=><char>(A<char>, A<char>)", "std::operator<=>",
	     "std::operator<=>(A, A)"},
	    {"Fn::operator()(int) const", "Fn::operator()", "Fn::operator()(int) const"},
	    {"V<int>::operator[](unsigned long)", "V::operator[]", "V::operator[](unsigned long)"},
	    {"P<int>::operator->() const", "P::operator->", "P::operator->() const"},
	    {"operator new[](unsigned long)", "operator new[]", "operator new[](unsigned long)"},
	    {"operator delete(void*, unsigned long)", "operator delete",
	     "operator delete(void*, unsigned long)"},
	    {"S::operator unsigned long() const", "S::operator unsigned long",
	     "S::operator unsigned long() const"},
	    {"S::operator std::vector<int, std::allocator<int> >()", "S::operator std::vector",
	     "S::operator std::vector()"},
	    {"operator\"\" _km(unsigned long long)", "operator\"\" _km",
	     "operator\"\" _km(unsigned long long)"},
	    {"ns::operatorish(int)", "ns::operatorish", "ns::operatorish(int)"},
	    /* Lambdas, local and unnamed things. */
	    {"main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()",
	     "main::{lambda(int)#1}::operator()(int) const"},
	    {"f(std::vector<int, std::allocator<int> >)::{lambda(std::map<int, "
	     "int>)#2}::operator()("
	     "std::map<int, int>) const",
	     "f::{lambda(std::map)#2}::operator()",
	     "f::{lambda(std::map)#2}::operator()(std::map) const"},
	    {"(anonymous namespace)::helper()", "(anonymous namespace)::helper",
	     "(anonymous namespace)::helper()"},
	    {"ns::{unnamed type#1}::run()", "ns::{unnamed type#1}::run",
	     "ns::{unnamed type#1}::run()"},
	    /* Function pointers as parameters and as the return type. */
	    {"call(void (*)(int), int (*)(char const*))", "call",
	     "call(void (*)(int), int (*)(char const*))"},
	    {"void (*pick<int>(int))(double)", "void (*pick<int>(int))(double)",
	     "void (*pick<int>(int))(double)"},
	    /* What GCC and the ABI add. */
	    {"g(int) [clone .cold]", "g [clone .cold]", "g(int) [clone .cold]"},
	    {"g(int) [clone .constprop.0] [clone .isra.0]",
	     "g [clone .constprop.0] [clone .isra.0]",
	     "g(int) [clone .constprop.0] [clone .isra.0]"},
	    {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
	     ">::c_str[abi:cxx11]() const",
	     "std::__cxx11::basic_string::c_str", "std::__cxx11::basic_string::c_str() const"},
	    {"non-virtual thunk to ns::D::run(int)", "non-virtual thunk to ns::D::run",
	     "non-virtual thunk to ns::D::run(int)"},
	    /* Template arguments with expressions: '>' and "->" inside. */
	    {"void f<((1)>(2))>(int)", "f", "f(int)"},
	    {"decltype (({parm#1}->x)()) g<A>(A)", "g", "g(A)"},
	    /* Nested templates. */
	    {"a::B<c::D<e::F<int> >, G<H<I<J<K<L<M<N<O<P<int> > > > > > > > > > >::run()",
	     "a::B::run", "a::B::run()"},
	    /* What does not parse comes back whole. */
	    {"f<int(", "f<int(", "f<int("},
	    {"a<b", "a<b", "a<b"},
	    {"x)y", "x)y", "x)y"},
	    {"   ", "   ", "   "},
	};

	/* Level 2: the function's own template arguments, one level deep. */
	static const struct {
		const char *name, *targs;
	} level2[] = {
	    {"int ns::width<char>()", "ns::width<char>()"},
	    {"void f<std::vector<int, std::allocator<int> > >(int)", "f<std::vector>(int)"},
	    {"std::vector<int, std::allocator<int> >::push_back(int const&)",
	     "std::vector::push_back(int const&)"},
	    {"bool operator< <int>(S<int> const&, S<int> const&)",
	     "operator< <int>(S const&, S const&)"},
	    {"T nlohmann::basic_json<std::map, std::vector>::get<T, 0>() const",
	     "nlohmann::basic_json::get<T, 0>() const"},
	    {"auto g<int>(int)::{lambda()#1}::operator()() const",
	     "g::{lambda()#1}::operator()() const"},
	    {"main", "main"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		check_short(cases[i].name, 0, cases[i].simple);
		check_short(cases[i].name, 1, cases[i].params);
	}
	for (size_t i = 0; i < sizeof(level2) / sizeof(level2[0]); i++)
		check_short(level2[i].name, 2, level2[i].targs);
	/* Level 3: every template argument list, one level deep. */
	check_short("std::vector<int, std::allocator<int> >::push_back(int const&)", 3,
		    "std::vector<int, std::allocator>::push_back(int const&)");
	check_short("std::__cxx11::basic_string<wchar_t, std::char_traits<wchar_t>, "
		    "std::allocator<wchar_t> >::_M_data() const",
		    3,
		    "std::__cxx11::basic_string<wchar_t, std::char_traits, "
		    "std::allocator>::_M_data() const");
	check_short("int ns::width<char>()", 3, "ns::width<char>()");
	check_short("bool operator< <int>(S<int> const&, S<int> const&)", 3,
		    "operator< <int>(S const&, S const&)");
}
END_TEST

START_TEST(short_names_bounded)
{
	/* Nested deeper than the shortener goes: whole, no stack used per
	 * level.  Unclosed groups of every kind end at the name's end. */
	size_t n = 100000;
	char *deep = malloc(2 * n + 8), *s;

	ck_assert_ptr_nonnull(deep);
	memcpy(deep, "f", 1);
	for (size_t i = 0; i < n; i++)
		deep[1 + i] = '<';
	for (size_t i = 0; i < n; i++)
		deep[1 + n + i] = '>';
	memcpy(deep + 1 + 2 * n, "()", 3);
	s = ta_cxx_short(deep, 0);
	ck_assert_str_eq(s, deep);
	free(s);
	for (const char *open = "(<[{"; *open; open++) {
		memset(deep, *open, n);
		deep[n] = '\0';
		s = ta_cxx_short(deep, 0);
		ck_assert_str_eq(s, deep);
		free(s);
	}
	/* 300 levels, within the name's own end. */
	strcpy(deep, "a::f");
	for (size_t i = 0; i < 300; i++)
		strcat(deep, "<T");
	for (size_t i = 0; i < 300; i++)
		strcat(deep, ">");
	strcat(deep, "(int)");
	s = ta_cxx_short(deep, 0);
	ck_assert_str_eq(s, deep);
	free(s);
	free(deep);
}
END_TEST

START_TEST(short_names_hostile)
{
	/* Names made of the characters the shortener reads, in any order:
	 * never longer than the name, never past its end (the sanitizers'
	 * builds check the reads), and the same answer twice. */
	static const char *const parts[] = {
	    "<",	">",	"(", ")",     "{",	  "}",
	    "[",	"]",	" ", "::",    "operator", "operator<",
	    "->",	"\"\"", "a", "const", "[clone ",  "(anonymous namespace)",
	    "{lambda(", "#1}",	",", "&&",    "*",	  "~",
	    "-"};
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (int round = 0; round < 20000; round++) {
		char name[256];
		size_t len = 0;
		int n;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		n = (int)(x % 24);
		name[0] = '\0';
		for (int k = 0; k < n; k++) {
			const char *p;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			p = parts[x % (sizeof(parts) / sizeof(parts[0]))];
			if (len + strlen(p) + 1 > sizeof(name))
				break;
			memcpy(name + len, p, strlen(p) + 1);
			len += strlen(p);
		}
		for (int level = 0; level < TA_SHORT_LEVELS; level++) {
			char *a = ta_cxx_short(name, level), *b = ta_cxx_short(name, level);

			ck_assert_ptr_nonnull(a);
			ck_assert_msg(strlen(a) <= len, "\"%s\" -> \"%s\"", name, a);
			ck_assert_str_eq(a, b);
			free(a);
			free(b);
		}
	}
}
END_TEST

/* ---- the resolver ----------------------------------------------------------------- */

static int failures;
static int failure_code, failure_errno;

static void count_failure(void *ctx, const char *path, int code, int errnum)
{
	(void)ctx;
	(void)path;
	failures++;
	failure_code = code;
	failure_errno = errnum;
}

START_TEST(resolver_names_and_cache)
{
	char path[64];
	struct ta_resolver *r = ta_resolver_new();
	const struct ta_resolved *a, *b;
	const char *base;

	ck_assert_ptr_nonnull(r);
	tmp_path(path);
	base = strrchr(path, '/') + 1;
	write_elf(path, fake_syms, sizeof(fake_syms) / sizeof(fake_syms[0]), NULL, 0);
	a = ta_resolve(r, path, NULL, 0, 0x1504);
	ck_assert_str_eq(a->name, "ta::test::probe(int)");
	ck_assert_uint_eq(a->offset, 0x1500);
	ck_assert_int_eq(a->found, 1);
	/* The file is gone, but the answers were cached. */
	unlink(path);
	b = ta_resolve(r, path, NULL, 0, 0x1504);
	ck_assert_ptr_eq(a, b);
	a = ta_resolve(r, path, NULL, 0, 0x1000);
	ck_assert_str_eq(a->name, "alpha");
	/* Many more lookups (the cache grows), and the first answers stay. */
	for (uint64_t off = 0; off < 5000; off++)
		ta_resolve(r, path, NULL, 0, 0x2000 + off);
	ck_assert_ptr_eq(ta_resolve(r, path, NULL, 0, 0x1504), b);
	ck_assert_str_eq(b->name, "ta::test::probe(int)");
	/* Not a function: module basename and offset. */
	a = ta_resolve(r, path, NULL, 0, 0x1400);
	ck_assert_int_eq(a->found, 0);
	ck_assert_uint_eq(a->offset, 0x1400);
	{
		char want[100];

		snprintf(want, sizeof(want), "%s+0x1400", base);
		ck_assert_str_eq(a->name, want);
	}
	failures = 0;
	ta_resolver_failures(r, count_failure, NULL);
	ck_assert_int_eq(failures, 0);
	/* A module that cannot be read: named by offset, reported once. */
	a = ta_resolve(r, "/nonexistent/libgone.so.1", NULL, 0, 0x4a0);
	ck_assert_str_eq(a->name, "libgone.so.1+0x4a0");
	ta_resolve(r, "/nonexistent/libgone.so.1", NULL, 0, 0x4b0);
	ta_resolver_failures(r, count_failure, NULL);
	ck_assert_int_eq(failures, 1);
	ck_assert_int_eq(failure_code, -TA_E_IO);
	ck_assert_int_eq(failure_errno, ENOENT);
	ta_resolver_free(r);
}
END_TEST

/* ---- the test executable itself ------------------------------------------------------ */

__attribute__((noinline, noclone, used)) static int known_static_function(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

/* A C function under a C++ name, to see demangling on a real binary. */
int cxx_named(int x) __asm__("_ZN9traceunit7cxxnameEi");
__attribute__((noinline, used)) int cxx_named(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 2;
}

static int main_bias_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uint64_t *)data = info->dlpi_addr;
	return 1; /* the first object is the main program */
}

START_TEST(self_executable)
{
	int (*volatile fn)(int) = known_static_function;
	int (*volatile cxx)(int) = cxx_named;
	uint64_t bias = 0, off;
	struct ta_symtab *s;
	const struct ta_sym *sym;
	struct ta_resolver *r;
	const struct ta_resolved *res;

	ck_assert_int_eq(fn(1), 4);
	ck_assert_int_eq(cxx(1), 3);
	dl_iterate_phdr(main_bias_cb, &bias);
	off = (uint64_t)(uintptr_t)fn - bias;
	ck_assert_int_eq(ta_symtab_load("/proc/self/exe", NULL, 0, &s), 0);
	sym = ta_symtab_lookup(s, off);
	ck_assert_ptr_nonnull(sym);
	ck_assert_str_eq(sym->name, "known_static_function");
	ck_assert_uint_eq(sym->value, off);
	/* Inside the function still names it. */
	ck_assert_str_eq(ta_symtab_lookup(s, off + 1)->name, "known_static_function");
	ta_symtab_free(s);

	r = ta_resolver_new();
	res = ta_resolve(r, "/proc/self/exe", NULL, 0, (uint64_t)(uintptr_t)cxx - bias);
	ck_assert_str_eq(res->name, "traceunit::cxxname(int)");
	ck_assert_uint_eq(res->offset, (uint64_t)(uintptr_t)cxx - bias);
	res = ta_resolve(r, "/proc/self/exe", NULL, 0, off);
	ck_assert_str_eq(res->name, "known_static_function");
	ta_resolver_free(r);
}
END_TEST

static Suite *symbols_suite(void)
{
	Suite *s = suite_create("symbols");
	TCase *tc = tcase_create("elf");

	tcase_add_test(tc, symtab_rules);
	tcase_add_test(tc, dynsym_fallback);
	tcase_add_test(tc, load_errors);
	tcase_add_test(tc, demangle);
	tcase_add_test(tc, short_names);
	tcase_add_test(tc, short_names_bounded);
	tcase_add_test(tc, short_names_hostile);
	tcase_add_test(tc, resolver_names_and_cache);
	tcase_add_test(tc, self_executable);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(symbols_suite());
}
