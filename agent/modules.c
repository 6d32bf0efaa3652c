/* SPDX-License-Identifier: MIT */
/*
 * modules.c - the module map: every loaded ELF object with its load bias,
 * build-id and executable ranges, so the analyzer can resolve addresses in
 * PIE executables and shared libraries.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define NOTE_ALIGN(x) (((x) + 3u) & ~3u)

/* The GNU build-id note of a loaded object, or 0 bytes. */
static size_t build_id(const struct dl_phdr_info *info, const uint8_t **id)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*n);
			const uint8_t *desc = name + NOTE_ALIGN(n->n_namesz);
			if (desc + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0) {
				*id = desc;
				return n->n_descsz;
			}
			p = desc + NOTE_ALIGN(n->n_descsz);
		}
	}
	return 0;
}

static int one_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ta_buf b = {0};
	const uint8_t *id = NULL;
	size_t idlen = build_id(info, &id);
	const char *path = info->dlpi_name;
	char exe[4096];
	int *first = arg;
	uint64_t nranges = 0;
	uint64_t flags = 0;

	(void)size;
	if (*first) {
		/* The first object is the executable, named "" here. */
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		path = exe;
		flags |= 1;
		*first = 0;
	}
	if (!path)
		path = "";
	for (int i = 0; i < info->dlpi_phnum; i++)
		nranges += info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X);
	ta_buf_u(&b, ta_ticks());
	ta_buf_u(&b, (uint64_t)info->dlpi_addr);
	ta_buf_str(&b, path, strlen(path));
	ta_buf_str(&b, (const char *)id, idlen);
	ta_buf_u(&b, flags);
	ta_buf_u(&b, nranges);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			ta_buf_u(&b, info->dlpi_addr + ph->p_vaddr);
			ta_buf_u(&b, info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
		}
	}
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_MODULE, b.p, b.len);
	ta_buf_free(&b);
	return 0;
}

void ta_dump_modules(void)
{
	int first = 1;

	dl_iterate_phdr(one_module, &first);
}
