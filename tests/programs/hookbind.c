/* SPDX-License-Identifier: MIT */
/*
 * hookbind.c - whether the GOT entries (JUMP_SLOT) of the two hooks,
 * __cyg_profile_func_enter and _exit, are bound before their first call:
 * this program's (linked -z lazy), then those of the library argv[1],
 * which it dlopens lazily (RTLD_LAZY) and calls nothing of before it looks.
 * One line per entry: "MODULE HOOK: STATE", STATE being "bound" (it holds
 * what the global scope binds the name to: the agent's hook when the agent
 * is preloaded, glibc's empty one otherwise), "lazy" (it still points into
 * its module's own PLT: the first call through it would resolve it) or
 * "other".  main is instrumented, so its enter hook was called (and bound)
 * before it looks; nothing instrumented has returned yet, so the exit entry
 * is bound only if something bound it before the first call.  Then it
 * calls sample_square(3) and prints the result.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NI __attribute__((no_instrument_function))

#if defined(__x86_64__)
#define R_JUMP_SLOT R_X86_64_JUMP_SLOT
#elif defined(__aarch64__)
#define R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#endif

struct look {
	const char *module; /* "" for the program, else a part of the path */
	const char *name;
	const char *state;
};

NI static int in_module(const struct dl_phdr_info *info, uintptr_t v)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && v >= lo && v < lo + ph->p_memsz)
			return 1;
	}
	return 0;
}

NI static int look_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct look *lk = arg;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *rel = NULL;
	size_t relsz = 0;

	(void)size;
	if (*lk->module ? !strstr(name, lk->module) : *name != 0)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_DYNAMIC)
			continue;
		for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		     d->d_tag != DT_NULL; d++) {
			if (d->d_tag == DT_SYMTAB)
				symtab = (const ElfW(Sym) *)d->d_un.d_ptr;
			else if (d->d_tag == DT_STRTAB)
				strtab = (const char *)d->d_un.d_ptr;
			else if (d->d_tag == DT_JMPREL)
				rel = (const ElfW(Rela) *)d->d_un.d_ptr;
			else if (d->d_tag == DT_PLTRELSZ)
				relsz = d->d_un.d_val;
		}
	}
	lk->state = "none";
	for (size_t i = 0; rel && symtab && strtab && i < relsz / sizeof(*rel); i++) {
		uintptr_t v, *at;

		if (ELF64_R_TYPE(rel[i].r_info) != R_JUMP_SLOT ||
		    strcmp(strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name, lk->name))
			continue;
		at = (uintptr_t *)(info->dlpi_addr + rel[i].r_offset);
		v = *(volatile uintptr_t *)at;
		lk->state = v == (uintptr_t)dlsym(RTLD_DEFAULT, lk->name) ? "bound"
			    : in_module(info, v)			  ? "lazy"
									  : "other";
	}
	return 1;
}

NI static void say(const char *label, const char *module)
{
	static const char *const hooks[2] = {"__cyg_profile_func_enter", "__cyg_profile_func_exit"};

	for (int h = 0; h < 2; h++) {
		struct look lk = {module, hooks[h], "missing"};

		dl_iterate_phdr(look_module, &lk);
		printf("%s %s: %s\n", label, h ? "exit" : "enter", lk.state);
	}
}

int main(int argc, char **argv)
{
	int (*square)(int);
	void *lib;

	if (argc < 2) {
		fprintf(stderr, "usage: hookbind LIBRARY\n");
		return 2;
	}
	say("program", "");
	lib = dlopen(argv[1], RTLD_LAZY);
	if (!lib) {
		fprintf(stderr, "hookbind: %s\n", dlerror());
		return 1;
	}
	say("library", strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1]);
	square = (int (*)(int))dlsym(lib, "sample_square");
	if (!square) {
		fprintf(stderr, "hookbind: %s\n", dlerror());
		return 1;
	}
	printf("sample_square(3) = %d\n", square(3));
	return 0;
}
