/* SPDX-License-Identifier: MIT */
/*
 * test_symfind.c - where a module's files are looked for
 * (analyzer/lib/symfind.c): the places as paths, in order; the walk over
 * real files, which takes only those with the module's build-id; and the
 * symbol table of a module whose file has another build-id (empty, the
 * file refused).
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols.h"
#include "symfind.h"

/* ---- the places, as paths ------------------------------------------------------ */

static void check_cands(const struct ta_cand *c, long n, const char *const *want, long nwant)
{
	ck_assert_int_eq(n, nwant);
	for (long i = 0; i < n; i++) {
		const char *w = want[i];
		enum ta_cand_kind kind = w[0] == 'F'   ? TA_CAND_FILE
					 : w[0] == 'D' ? TA_CAND_DEBUG
						       : TA_CAND_DEBUGINFOD;

		ck_assert_msg(c[i].kind == kind, "place %ld: kind %d, not %s", i, c[i].kind, w);
		if (kind == TA_CAND_DEBUGINFOD)
			ck_assert_ptr_null(c[i].path);
		else
			ck_assert_str_eq(c[i].path, w + 2);
	}
}

START_TEST(cands_order)
{
	static const char *const want[] = {
	    "F /usr/bin/prog",
	    "F /sfs/usr/bin/prog",
	    "D /d1/.build-id/ab/cdef12.debug",
	    "D /d1/usr/bin/prog.debug",
	    "D /d1/usr/bin/prog.dbg",
	    "D /d2/.build-id/ab/cdef12.debug",
	    "D /d2/usr/bin/prog.debug",
	    "D /d2/usr/bin/prog.dbg",
	    "D /usr/lib/debug/.build-id/ab/cdef12.debug",
	    "D /usr/bin/prog.dbg",
	    "D /usr/bin/.debug/prog.dbg",
	    "D /usr/lib/debug/usr/bin/prog.dbg",
	    "I",
	};
	struct ta_cand *c;
	long n;

	ta_symfind_reset();
	ta_symfind_set_symfs("/sfs");
	ck_assert_int_eq(ta_symfind_add_debug_dir("/d1"), 0);
	ck_assert_int_eq(ta_symfind_add_debug_dir("/d2"), 0);
	n = ta_symfind_cands("/usr/bin/prog", "abcdef12", "prog.dbg", 1, &c);
	check_cands(c, n, want, sizeof(want) / sizeof(want[0]));
	ta_cands_free(c, n);
	ta_symfind_reset();
}
END_TEST

START_TEST(cands_few)
{
	/* Nothing to look by: only the file. */
	static const char *const plain[] = {"F /lib/libx.so"};
	/* A link named as the .debug path is one place; a link with a '/'
	 * is none. */
	static const char *const dup[] = {
	    "F /lib/libx.so",
	    "D /dd/lib/libx.so.debug",
	    "D /lib/libx.so.debug",
	    "D /lib/.debug/libx.so.debug",
	    "D /usr/lib/debug/lib/libx.so.debug",
	};
	static const char *const slash[] = {"F /lib/libx.so"};
	/* No file (the vDSO): only what the build-id finds. */
	static const char *const vdso[] = {"D /usr/lib/debug/.build-id/12/3456.debug", "I"};
	struct ta_cand *c;
	long n;

	ta_symfind_reset();
	n = ta_symfind_cands("/lib/libx.so", "", NULL, 1, &c);
	check_cands(c, n, plain, 1);
	ta_cands_free(c, n);
	ck_assert_int_eq(ta_symfind_add_debug_dir("/dd"), 0);
	n = ta_symfind_cands("/lib/libx.so", "", "libx.so.debug", 0, &c);
	check_cands(c, n, dup, sizeof(dup) / sizeof(dup[0]));
	ta_cands_free(c, n);
	ta_symfind_reset();
	n = ta_symfind_cands("/lib/libx.so", "", "../etc/passwd", 0, &c);
	check_cands(c, n, slash, 1);
	ta_cands_free(c, n);
	n = ta_symfind_cands("linux-vdso.so.1", "123456", NULL, 1, &c);
	check_cands(c, n, vdso, 2);
	ta_cands_free(c, n);
}
END_TEST

START_TEST(hex_form)
{
	static const uint8_t id[] = {0x00, 0x1f, 0xa0, 0xff};
	char buf[TA_BUILD_ID_HEX];

	ta_build_id_hex(buf, id, sizeof(id));
	ck_assert_str_eq(buf, "001fa0ff");
	ta_build_id_hex(buf, id, 0);
	ck_assert_str_eq(buf, "");
}
END_TEST

/* ---- the walk over real files -------------------------------------------------- */

static char tmp[64];

/* Copies from (the test program itself for "/proc/self/exe", not the
 * shell's cp) to to, making its folders. */
static void copy_file(const char *from, const char *to)
{
	char cmd[1024], self[512];
	ssize_t n;

	if (!strcmp(from, "/proc/self/exe")) {
		n = readlink(from, self, sizeof(self) - 1);
		ck_assert_int_gt(n, 0);
		self[n] = 0;
		from = self;
	}
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\" && cp '%s' '%s'", to, from, to);
	ck_assert_int_eq(system(cmd), 0);
}

static void make_tmp(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/ta-unit-symfind-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	unsetenv("DEBUGINFOD_URLS");
	ta_symfind_reset();
}

static void remove_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
	ta_symfind_reset();
}

/* The build-id (bytes) of the ELF file at path; its length. */
static size_t build_id_of(const char *path, uint8_t *id, char *hex)
{
	struct ta_symfind f;
	size_t n;

	ck_assert_int_eq(ta_symfind_begin(&f, path, NULL, 0), 0);
	ck_assert_int_eq(f.state, TA_FILE_UNCHECKED);
	strcpy(hex, f.file_id);
	ta_symfind_end(&f);
	n = strlen(hex) / 2;
	ck_assert_uint_gt(n, 1);
	for (size_t i = 0; i < n; i++)
		sscanf(hex + 2 * i, "%2hhx", &id[i]);
	return n;
}

/* The next place found: its path (static), or NULL; *src its source. */
static const char *next_path(struct ta_symfind *f, enum ta_sym_source *src)
{
	static char path[512];
	struct ta_symfile sf;

	if (!ta_symfind_next(f, &sf))
		return NULL;
	snprintf(path, sizeof(path), "%s", sf.path);
	*src = sf.source;
	ta_symfile_close(&sf);
	return path;
}

START_TEST(walk)
{
	char prog[128], other[128], d1[128], d2[128], d3[128], p[512], hex[TA_BUILD_ID_HEX],
	    ohex[TA_BUILD_ID_HEX];
	uint8_t id[TA_BUILD_ID_MAX], oid[TA_BUILD_ID_MAX];
	size_t n;
	struct ta_symfind f;
	enum ta_sym_source src;

	make_tmp();
	snprintf(prog, sizeof(prog), "%s/app/prog", tmp);
	snprintf(other, sizeof(other), "%s/other", tmp);
	copy_file("/proc/self/exe", prog);
	copy_file("/bin/sh", other);
	n = build_id_of(prog, id, hex);
	build_id_of(other, oid, ohex);
	ck_assert_str_ne(hex, ohex);

	/* d1 holds another file where the .build-id layout would have the
	 * module's: skipped.  d2 has it at the recorded path, d3 by id. */
	snprintf(d1, sizeof(d1), "%s/d1", tmp);
	snprintf(d2, sizeof(d2), "%s/d2", tmp);
	snprintf(d3, sizeof(d3), "%s/d3", tmp);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", d1, hex, hex + 2);
	copy_file(other, p);
	snprintf(p, sizeof(p), "%s%s.debug", d2, prog);
	copy_file(prog, p);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", d3, hex, hex + 2);
	copy_file(prog, p);
	ck_assert_int_eq(ta_symfind_add_debug_dir(d1), 0);
	ck_assert_int_eq(ta_symfind_add_debug_dir(d2), 0);
	ck_assert_int_eq(ta_symfind_add_debug_dir(d3), 0);

	ck_assert_int_eq(ta_symfind_begin(&f, prog, id, n), 0);
	ck_assert_int_eq(f.state, TA_FILE_MATCH);
	ck_assert_int_eq(ta_symfind_match(&f), 1);
	ck_assert_str_eq(next_path(&f, &src), prog);
	ck_assert_int_eq(src, TA_SYMS_FILE);
	snprintf(p, sizeof(p), "%s%s.debug", d2, prog);
	ck_assert_str_eq(next_path(&f, &src), p);
	ck_assert_int_eq(src, TA_SYMS_DEBUG_FILE);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", d3, hex, hex + 2);
	ck_assert_str_eq(next_path(&f, &src), p);
	ck_assert_ptr_null(next_path(&f, &src));
	ta_symfind_end(&f);

	/* The dump's build-id is other's: the file at the path is not the
	 * module's, nor anything found by the module's own id. */
	ck_assert_int_eq(ta_symfind_begin(&f, prog, oid, n), 0);
	ck_assert_int_eq(f.state, TA_FILE_OTHER);
	ck_assert_str_eq(f.file_id, hex);
	ck_assert_int_eq(ta_symfind_match(&f), 0);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", d1, ohex, ohex + 2);
	ck_assert_ptr_null(next_path(&f, &src));
	ta_symfind_end(&f);

	/* No file: nothing to compare; found by id all the same. */
	snprintf(p, sizeof(p), "%s/gone", tmp);
	ck_assert_int_eq(ta_symfind_begin(&f, p, id, n), 0);
	ck_assert_int_eq(f.state, TA_FILE_ABSENT);
	ck_assert_int_eq(ta_symfind_match(&f), -1);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", d3, hex, hex + 2);
	ck_assert_str_eq(next_path(&f, &src), p);
	ta_symfind_end(&f);
	remove_tmp();
}
END_TEST

START_TEST(walk_symfs)
{
	char prog[128], root[128], p[512], hex[TA_BUILD_ID_HEX];
	uint8_t id[TA_BUILD_ID_MAX];
	size_t n;
	struct ta_symfind f;
	enum ta_sym_source src;
	struct ta_symtab *tab;
	struct ta_sym_origin o;

	make_tmp();
	snprintf(prog, sizeof(prog), "%s/app/prog", tmp);
	snprintf(root, sizeof(root), "%s/root", tmp);
	snprintf(p, sizeof(p), "%s%s", root, prog);
	copy_file("/proc/self/exe", p);
	n = build_id_of(p, id, hex);
	/* At the recorded path, another program (rebuilt). */
	copy_file("/bin/sh", prog);

	ck_assert_int_eq(ta_symtab_find(prog, id, n, &tab, &o), 0);
	ck_assert_uint_eq(ta_symtab_count(tab), 0);
	ck_assert_int_eq(o.source, TA_SYMS_NONE);
	ck_assert_ptr_null(o.path);
	ck_assert_int_eq(o.match, 0);
	ck_assert_int_eq(o.refused, 1);
	ck_assert_str_eq(o.dump_id, hex);
	ck_assert_str_ne(o.file_id, hex);
	ta_symtab_free(tab);

	ta_symfind_set_symfs(root);
	ck_assert_int_eq(ta_symfind_begin(&f, prog, id, n), 0);
	ck_assert_int_eq(f.state, TA_FILE_OTHER);
	ck_assert_int_eq(ta_symfind_match(&f), 1);
	ck_assert_str_eq(next_path(&f, &src), p);
	ck_assert_int_eq(src, TA_SYMS_FILE);
	ta_symfind_end(&f);

	ck_assert_int_eq(ta_symtab_find(prog, id, n, &tab, &o), 0);
	ck_assert_int_eq(o.source, TA_SYMS_FILE);
	ck_assert_str_eq(o.path, p);
	ck_assert_uint_gt(ta_symtab_count(tab), 0);
	ck_assert_str_eq(o.path, p);
	ck_assert_int_eq(o.match, 1);
	ck_assert_int_eq(o.refused, 0);
	ta_symtab_free(tab);
	free(o.path);
	remove_tmp();
}
END_TEST

static Suite *symfind_suite(void)
{
	Suite *s = suite_create("symfind");
	TCase *tc = tcase_create("places");

	tcase_add_test(tc, cands_order);
	tcase_add_test(tc, cands_few);
	tcase_add_test(tc, hex_form);
	tcase_add_test(tc, walk);
	tcase_add_test(tc, walk_symfs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(symfind_suite());
}
