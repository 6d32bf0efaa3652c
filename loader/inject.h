/* SPDX-License-Identifier: MIT */
/*
 * inject.h - reaching a running process, for `traceagent attach`
 * (analyzer/cmds/attacher.c: options, the control socket's attach and
 * detach, the window): target.c (what /proc, the ELF files and the
 * namespaces tell about the target) and inject.c (ptrace: the safe point,
 * calls made by a stopped thread, dlopen of the agent, --patch).  It
 * prints its own messages and knows nothing of the analyzer.
 */
#ifndef TA_INJECT_H
#define TA_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch.h"

/* Says "traceagent: attach: " and the message on stderr; returns 1. */
int ta_att_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* target.c */
int ta_att_status_field(long pid, const char *key, char *out, size_t size);
int ta_att_process_alive(long pid);
int ta_att_output_reachable(long pid, const char *out);
int ta_att_ctl_say(long pid, uid_t uid, const char *cmd, char *ans, size_t size);
int ta_att_denied(long pid, int err);

#if TA_ARCH_HAS_INJECT
/* A file mapping of /proc/PID/maps. */
struct map_line {
	unsigned long lo, hi, off;
	char perms[8];
	const char *path;
};

int ta_att_maps_each(long pid, int (*fn)(const struct map_line *m, void *arg), void *arg);
uintptr_t ta_att_map_base(long pid, const char *suffix, const char *exact, char *file, size_t size);
uint64_t ta_att_code_maps_digest(long pid);
uint64_t ta_att_elf_sym(const char *path, const char *name, unsigned type);
uint64_t ta_att_elf_dynsym(const char *path, const char *name);

/* inject.c */
int ta_att_inject(pid_t pid, const char *agent, const char *settings);
int ta_att_patch_in(pid_t pid, const char *agent, const char *spec, int later);
int ta_att_patch_out(pid_t pid, const char *agent);
#endif

#endif
