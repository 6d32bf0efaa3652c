/* SPDX-License-Identifier: MIT */
/*
 * test_modules.c - agent/modules.c's walk of a loaded module's GOT
 * entries, on the instrumented library hookvictim.c built through the PLT
 * and with -fno-plt: every JUMP_SLOT and GLOB_DAT relocation with its
 * symbol's name, address, kind and whether it lies in RELRO
 * (ta_module_got_slots), the hooks' among them (ta_module_hook_slots),
 * compared with the library's file read independently (libelf); the walk
 * stops at the first non-zero answer and returns it; a module without a
 * dynamic section has none.  The libraries' hooks and hv_sink are this
 * program's (exported).
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modules.h"

volatile int hv_sink;

__attribute__((visibility("default"), no_instrument_function)) void
__cyg_profile_func_enter(void *fn, void *site)
{
	(void)fn;
	(void)site;
}

__attribute__((visibility("default"), no_instrument_function)) void
__cyg_profile_func_exit(void *fn, void *site)
{
	(void)fn;
	(void)site;
}

#define MAXSLOTS 256

struct slot {
	char name[128];
	uintptr_t at;
	int jump_slot, relro;
};

static int slot_cmp(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* The library's JUMP_SLOT and GLOB_DAT relocations from its file, at
 * their load addresses (bias added), sorted by address. */
static size_t from_file(const char *path, uintptr_t bias, struct slot *out)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t n = 0, nph;
	unsigned jump_slot, glob_dat;
	uint64_t relro_lo = 0, relro_hi = 0;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ne(elf_version(EV_CURRENT), EV_NONE);
	e = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(gelf_getehdr(e, &eh));
	if (eh.e_machine == EM_X86_64) {
		jump_slot = R_X86_64_JUMP_SLOT;
		glob_dat = R_X86_64_GLOB_DAT;
	} else {
		ck_assert_int_eq(eh.e_machine, EM_AARCH64);
		jump_slot = R_AARCH64_JUMP_SLOT;
		glob_dat = R_AARCH64_GLOB_DAT;
	}
	ck_assert_int_eq(elf_getphdrnum(e, &nph), 0);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		ck_assert_ptr_nonnull(gelf_getphdr(e, (int)i, &ph));
		if (ph.p_type == PT_GNU_RELRO) {
			relro_lo = bias + ph.p_vaddr;
			relro_hi = relro_lo + ph.p_memsz;
		}
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh, symsh;
		Elf_Data *d, *syms;
		Elf_Scn *symscn;

		ck_assert_ptr_nonnull(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_RELA)
			continue;
		d = elf_getdata(scn, NULL);
		symscn = elf_getscn(e, sh.sh_link);
		ck_assert_ptr_nonnull(symscn);
		ck_assert_ptr_nonnull(gelf_getshdr(symscn, &symsh));
		syms = elf_getdata(symscn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym s;
			unsigned type;

			ck_assert_ptr_nonnull(gelf_getrela(d, (int)i, &r));
			type = (unsigned)GELF_R_TYPE(r.r_info);
			if (type != jump_slot && type != glob_dat)
				continue;
			ck_assert_uint_lt(n, MAXSLOTS);
			ck_assert_ptr_nonnull(gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &s));
			snprintf(out[n].name, sizeof(out[n].name), "%s",
				 elf_strptr(e, symsh.sh_link, s.st_name));
			out[n].at = bias + r.r_offset;
			out[n].jump_slot = type == jump_slot;
			out[n].relro = out[n].at >= relro_lo && out[n].at < relro_hi;
			n++;
		}
	}
	elf_end(e);
	close(fd);
	qsort(out, n, sizeof(*out), slot_cmp);
	return n;
}

/* The loaded library's dl_phdr_info, found by its path. */
struct find {
	const char *path;
	struct dl_phdr_info info;
	int found;
};

static int find_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	char real[PATH_MAX];

	(void)size;
	if (info->dlpi_name[0] && realpath(info->dlpi_name, real) && !strcmp(real, f->path)) {
		f->info = *info;
		f->found = 1;
		return 1;
	}
	return 0;
}

static struct find load(const char *env)
{
	const char *p = getenv(env);
	struct find f = {0};
	static char path[PATH_MAX];

	ck_assert_msg(p && realpath(p, path), "%s: no library", env);
	f.path = path;
	ck_assert_msg(dlopen(path, RTLD_NOW), "%s: %s", path, dlerror());
	dl_iterate_phdr(find_one, &f);
	ck_assert_msg(f.found, "%s: not among the loaded objects", path);
	return f;
}

struct collect {
	struct slot s[MAXSLOTS];
	size_t n;
	size_t stop_at; /* answer non-zero at this call (1-based); 0: never */
};

static int collect_got(void *arg, const char *name, uintptr_t *at, int jump_slot, int relro)
{
	struct collect *c = arg;

	ck_assert_uint_lt(c->n, MAXSLOTS);
	snprintf(c->s[c->n].name, sizeof(c->s[c->n].name), "%s", name);
	c->s[c->n].at = (uintptr_t)at;
	c->s[c->n].jump_slot = jump_slot;
	c->s[c->n].relro = relro;
	c->n++;
	return c->stop_at && c->n == c->stop_at ? 77 : 0;
}

static int collect_hook(void *arg, uintptr_t *at, int is_exit, int relro)
{
	struct collect *c = arg;

	ck_assert_uint_lt(c->n, MAXSLOTS);
	strcpy(c->s[c->n].name, is_exit ? "__cyg_profile_func_exit" : "__cyg_profile_func_enter");
	c->s[c->n].at = (uintptr_t)at;
	c->s[c->n].relro = relro;
	c->n++;
	return 0;
}

static void assert_same(const struct slot *got, size_t n, const struct slot *want, size_t nwant)
{
	ck_assert_uint_eq(n, nwant);
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_eq(got[i].name, want[i].name);
		ck_assert_msg(got[i].at == want[i].at, "%s: at %#lx, want %#lx", want[i].name,
			      (unsigned long)got[i].at, (unsigned long)want[i].at);
		ck_assert_int_eq(got[i].jump_slot, want[i].jump_slot);
		ck_assert_int_eq(got[i].relro, want[i].relro);
	}
}

static const char *const libs[] = {"TA_HOOKVICTIM_PLT", "TA_HOOKVICTIM_NOPLT"};

START_TEST(got_slots_as_the_file_says)
{
	struct find f = load(libs[_i]);
	struct collect *c = calloc(1, sizeof(*c));
	struct slot *want = calloc(MAXSLOTS, sizeof(*want));
	size_t nwant = from_file(f.path, f.info.dlpi_addr, want);

	ck_assert_int_eq(ta_module_got_slots(&f.info, collect_got, c), 0);
	qsort(c->s, c->n, sizeof(c->s[0]), slot_cmp);
	assert_same(c->s, c->n, want, nwant);
	free(want);
	free(c);
}
END_TEST

START_TEST(hook_slots)
{
	struct find f = load(libs[_i]);
	struct collect *c = calloc(1, sizeof(*c));
	struct slot *want = calloc(MAXSLOTS, sizeof(*want));
	size_t nwant = from_file(f.path, f.info.dlpi_addr, want), k = 0, njump = 0;

	/* Only the hooks' entries. */
	for (size_t i = 0; i < nwant; i++)
		if (!strncmp(want[i].name, "__cyg_profile_func_", 19)) {
			want[k] = want[i];
			njump += want[k].jump_slot;
			want[k++].jump_slot = 0;
		}
	/* One entry per hook: a JUMP_SLOT through the PLT, a GLOB_DAT with
	 * -fno-plt (in RELRO). */
	ck_assert_uint_eq(k, 2);
	ck_assert_uint_eq(njump, _i == 0 ? 2 : 0);
	if (_i == 1)
		ck_assert(want[0].relro && want[1].relro);
	ck_assert_int_eq(ta_module_hook_slots(&f.info, collect_hook, c), 0);
	qsort(c->s, c->n, sizeof(c->s[0]), slot_cmp);
	assert_same(c->s, c->n, want, k);
	/* The entries hold this program's hooks once bound. */
	for (size_t i = 0; _i == 1 && i < c->n; i++)
		ck_assert_ptr_eq((void *)*(uintptr_t *)c->s[i].at,
				 strstr(c->s[i].name, "exit") ? (void *)__cyg_profile_func_exit
							      : (void *)__cyg_profile_func_enter);
	free(want);
	free(c);
}
END_TEST

START_TEST(walk_stops_at_first_answer)
{
	struct find f = load(libs[_i]);
	struct collect *c = calloc(1, sizeof(*c));

	c->stop_at = 2;
	ck_assert_int_eq(ta_module_got_slots(&f.info, collect_got, c), 77);
	ck_assert_uint_eq(c->n, 2);
	free(c);
}
END_TEST

START_TEST(no_dynamic_section)
{
	struct dl_phdr_info none = {.dlpi_addr = 0x1000, .dlpi_name = "none", .dlpi_phnum = 0};
	struct collect *c = calloc(1, sizeof(*c));

	ck_assert_int_eq(ta_module_got_slots(&none, collect_got, c), 0);
	ck_assert_uint_eq(c->n, 0);
	free(c);
}
END_TEST

static Suite *modules_suite(void)
{
	Suite *s = suite_create("modules");
	TCase *tc = tcase_create("modules");

	tcase_add_loop_test(tc, got_slots_as_the_file_says, 0, 2);
	tcase_add_loop_test(tc, hook_slots, 0, 2);
	tcase_add_loop_test(tc, walk_stops_at_first_answer, 0, 2);
	tcase_add_test(tc, no_dynamic_section);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(modules_suite());
}
