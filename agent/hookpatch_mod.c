/* SPDX-License-Identifier: MIT */
/*
 * hookpatch_mod.c - what hookpatch's decoders know beside the code: the
 * module a function is in (its segments, its GOT entries relocated against
 * a hook), whether a call's target is a hook, and whose address a hook
 * call passes (the register tracking's verdict).
 *
 * The bottom of hookpatch: the decoders (hookpatch_x86.c,
 * hookpatch_a64.c) and the driver (hookpatch.c) call it; it calls none of
 * them (a PLT entry is read by the decoder's own plt_slot, passed in).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

#include "hookpatch_int.h"
#include "modules.h"
#include "walk.h"

#if HP_DECODER

/* ---- the module of a function ------------------------------------------------------ */

static int prot_of(uint32_t flags)
{
	return ((flags & PF_R) ? PROT_READ : 0) | ((flags & PF_W) ? PROT_WRITE : 0) |
	       ((flags & PF_X) ? PROT_EXEC : 0);
}

static int add_slot(void *arg, uintptr_t *at, int is_exit, int relro)
{
	struct mod *m = arg;

	(void)relro;
	if (m->nslots < MAX_SLOTS) {
		m->slot[m->nslots] = at;
		m->slot_exit[m->nslots++] = is_exit;
	}
	return 0;
}

/* The module's GNU build-id, from its notes as loaded (the file is not
 * read): in m->build_id, or m->build_id_len 0. */
static void build_id(const struct dl_phdr_info *info, struct mod *m)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		/* Notes are padded to their segment's alignment (4, or 8). */
		size_t off = 0, pad = ph->p_align == 8 ? 7 : 3;

		if (ph->p_type != PT_NOTE)
			continue;
		while (off + sizeof(ElfW(Nhdr)) <= ph->p_memsz) {
			ElfW(Nhdr) nh;
			size_t name_at, desc_at, next;

			memcpy(&nh, p + off, sizeof(nh));
			name_at = off + sizeof(nh);
			desc_at = name_at + ((nh.n_namesz + pad) & ~pad);
			next = desc_at + ((nh.n_descsz + pad) & ~pad);
			if (next > ph->p_memsz || next <= off)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(p + name_at, "GNU", 4) && nh.n_descsz > 0) {
				m->build_id_len = nh.n_descsz > sizeof(m->build_id)
						      ? sizeof(m->build_id)
						      : nh.n_descsz;
				memcpy(m->build_id, p + desc_at, m->build_id_len);
				return;
			}
			off = next;
		}
	}
}

/* dl_iterate_phdr: the module with an executable segment holding m->want. */
static int find_mod(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct mod *m = arg;
	int hit = -1;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && m->want >= lo &&
		    m->want < lo + ph->p_memsz)
			hit = i;
	}
	if (hit < 0)
		return 0;
	m->bias = info->dlpi_addr;
	m->lo = info->dlpi_addr + info->dlpi_phdr[hit].p_vaddr;
	m->hi = m->lo + info->dlpi_phdr[hit].p_memsz;
	m->prot = prot_of(info->dlpi_phdr[hit].p_flags);
	for (int i = 0; i < info->dlpi_phnum && m->nld < MAX_LOADS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R))
			continue;
		m->ld_lo[m->nld] = info->dlpi_addr + ph->p_vaddr;
		m->ld_hi[m->nld++] = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
	}
	ta_module_hook_slots(info, add_slot, m);
	build_id(info, m);
	m->found = 1;
	return 1;
}

int ta_hp_mod_of(uintptr_t addr, struct mod *m)
{
	memset(m, 0, sizeof(*m));
	m->want = addr;
	ta_walk_objects(find_mod, m);
	return m->found ? 0 : -1;
}

struct hp_reads ta_hp_reads;

uintptr_t ta_hp_read(uintptr_t at)
{
	/* Relaxed: the loader wrote it before the module's code could run. */
	uintptr_t v = __atomic_load_n((const uintptr_t *)at, __ATOMIC_RELAXED);

	if (ta_hp_reads.n < HP_MAX_READS) {
		ta_hp_reads.at[ta_hp_reads.n] = at;
		ta_hp_reads.val[ta_hp_reads.n] = v;
	}
	if (ta_hp_reads.n <= HP_MAX_READS)
		ta_hp_reads.n++;
	return v;
}

/* Whether the 8 bytes at a are in the module's file-backed segments. */
int ta_hp_readable(const struct mod *m, uintptr_t a)
{
	for (int i = 0; i < m->nld; i++)
		if (a >= m->ld_lo[i] && a + 8 <= m->ld_hi[i])
			return 1;
	return 0;
}

/* 0 enter, 1 exit, -1 not a GOT entry of a hook. */
int ta_hp_slot_kind(const struct mod *m, uintptr_t at)
{
	for (int i = 0; i < m->nslots; i++)
		if ((uintptr_t)m->slot[i] == at)
			return m->slot_exit[i];
	return -1;
}

int ta_hp_hook_kind(const struct mod *m, uintptr_t t,
		    uintptr_t (*plt_slot)(const struct mod *m, uintptr_t t))
{
	Dl_info di;

	if (t >= m->lo && t + 16 <= m->hi) {
		uintptr_t s = plt_slot(m, t);
		int k = s ? ta_hp_slot_kind(m, s) : -1;

		if (k >= 0)
			return k;
	}
	if (dladdr((void *)t, &di) && di.dli_sname && (uintptr_t)di.dli_saddr == t) {
		if (!strcmp(di.dli_sname, "__cyg_profile_func_enter"))
			return 0;
		if (!strcmp(di.dli_sname, "__cyg_profile_func_exit"))
			return 1;
	}
	return -1;
}

/* A hook call found at `at` (kind), whose first argument register is arg:
 * kept in out when it is the function's own; 0, 1 when it is another's
 * (an inlined callee's, left), or -ENOTSUP when the argument is not known. */
int ta_hp_found_call(const struct regs *r, int arg, uintptr_t fn, struct site *s)
{
	uintptr_t v;

	if (!reg_get(r, arg, &v))
		return -ENOTSUP;
	if (v != fn)
		return 1;
	s->fn = fn;
	memcpy(s->orig, (const void *)s->at, s->len);
	return 0;
}

#endif
