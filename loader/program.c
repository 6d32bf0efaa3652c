/* SPDX-License-Identifier: MIT */
/*
 * program.c - what `traceagent record` (and attach, and top) do before a
 * program runs: find libtraceagent.so, find the program on PATH and check
 * that the agent can be preloaded into it (its machine, static or not),
 * and set the environment.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "addr.h"
#include "arch.h"
#include "format.h"
#include "ta_config.h"

#include "launch.h"

/* ---- finding the agent ---------------------------------------------------- */

static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The directory part of path, in buf.  Returns buf. */
static char *dir_of(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (n == 0 && slash)
		n = 1; /* "/x" -> "/" */
	if (n >= size)
		n = size - 1;
	memcpy(buf, slash ? path : ".", slash ? n : 1);
	buf[slash ? n : 1] = '\0';
	return buf;
}

/*
 * An installed traceagent uses the agent installed with it, found relative
 * to the command (TA_AGENT_FROM_BINDIR), so that a tree installed under
 * DESTDIR or moved whole keeps working; one run from the build tree
 * (build/analyzer/traceagent) uses the agent built next to it
 * (build/agent/), so a build never picks up an older installed copy.  No
 * path of the build is compiled in.  Returns 0 with the absolute path in
 * out, or -1 after printing why.
 */
int ta_record_find_agent(char out[PATH_MAX])
{
	const char *env = getenv("TRACEAGENT_LIB");
	char exe[PATH_MAX], exe_dir[PATH_MAX], installed[PATH_MAX * 2], built[PATH_MAX * 2];
	const char *found;

	if (env && *env) {
		if (!is_file(env) || !realpath(env, out)) {
			fprintf(stderr, "traceagent: TRACEAGENT_LIB=%s: no such library\n", env);
			return -1;
		}
		return 0;
	}
	if (!realpath("/proc/self/exe", exe)) {
		fprintf(stderr,
			"traceagent: cannot find %s: /proc/self/exe: %s; set TRACEAGENT_LIB\n",
			TA_AGENT_NAME, strerror(errno));
		return -1;
	}
	dir_of(exe, exe_dir, sizeof(exe_dir));
	snprintf(installed, sizeof(installed), "%s/%s/%s", exe_dir, TA_AGENT_FROM_BINDIR,
		 TA_AGENT_NAME);
	snprintf(built, sizeof(built), "%s/../agent/%s", exe_dir, TA_AGENT_NAME);
	if (is_file(installed)) {
		found = installed;
	} else if (is_file(built)) {
		found = built;
	} else {
		fprintf(
		    stderr,
		    "traceagent: cannot find %s (looked at %s, where it is installed, and at %s); "
		    "set TRACEAGENT_LIB\n",
		    TA_AGENT_NAME, installed, built);
		return -1;
	}
	if (!realpath(found, out)) {
		fprintf(stderr, "traceagent: %s: %s\n", found, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- finding and checking the program ------------------------------------- */

/*
 * Resolves prog the way execvp would: a name with a slash is a path, any
 * other is looked up in PATH (empty entries meaning the current directory).
 * Returns 0 with the path in out, or an exit status after printing why.
 */
int ta_rec_resolve_program(const char *prog, char *out, size_t size)
{
	const char *path, *p;
	int denied = 0;
	struct stat st;

	if (strchr(prog, '/')) {
		if (stat(prog, &st) < 0) {
			fprintf(stderr, "traceagent: %s: %s\n", prog, strerror(errno));
			return errno == ENOENT || errno == ENOTDIR ? EXIT_NOT_FOUND
								   : EXIT_CANNOT_RUN;
		}
		if (S_ISDIR(st.st_mode)) {
			fprintf(stderr, "traceagent: %s: %s\n", prog, strerror(EISDIR));
			return EXIT_CANNOT_RUN;
		}
		if (access(prog, X_OK) < 0) {
			fprintf(stderr, "traceagent: %s: %s\n", prog, strerror(errno));
			return EXIT_CANNOT_RUN;
		}
		snprintf(out, size, "%s", prog);
		return 0;
	}
	path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p++) {
		const char *end = strchrnul(p, ':');
		int n = (int)(end - p);

		if (n == 0)
			snprintf(out, size, "%s", prog);
		else
			snprintf(out, size, "%.*s/%s", n, p, prog);
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			denied = 1;
		}
		p = end;
		if (!*p)
			break;
	}
	if (denied) {
		fprintf(stderr, "traceagent: %s: %s\n", prog, strerror(EACCES));
		return EXIT_CANNOT_RUN;
	}
	fprintf(stderr, "traceagent: %s: command not found\n", prog);
	return EXIT_NOT_FOUND;
}

/* Little-endian or big-endian field of an ELF header, as the file says. */
static uint64_t elf_get(const unsigned char *p, int size, int big)
{
	uint64_t v = 0;

	for (int i = 0; i < size; i++)
		v |= (uint64_t)p[big ? size - 1 - i : i] << (8 * i);
	return v;
}

/* The machine the agent (built with this compiler) runs on. */
static int machine_matches(uint64_t machine)
{
#ifdef TA_ARCH_ELF_MACHINE
	return machine == TA_ARCH_ELF_MACHINE;
#else
	(void)machine;
	return 1; /* unknown here: let the dynamic loader judge */
#endif
}

/*
 * The agent can only be preloaded into a dynamically linked program of the
 * loader's own class and machine: the dynamic loader is what reads
 * LD_PRELOAD, and it skips a library of the wrong class with no more than a
 * warning.  A script (#!) is left to its interpreter.  Returns 0, or an exit
 * status after printing why.
 */
int ta_rec_check_program(const char *prog, const char *path)
{
	unsigned char eh[64], ph[64];
	int fd, big, is64, has_interp = 0;
	uint64_t phoff, phnum, phentsize, machine;
	struct stat st;
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* Execute-only programs cannot be inspected; let exec decide. */
		return 0;
	}
	if (fstat(fd, &st) == 0 && ((st.st_mode & S_ISUID && st.st_uid != geteuid()) ||
				    (st.st_mode & S_ISGID && st.st_gid != getegid()))) {
		close(fd);
		fprintf(stderr,
			"traceagent: %s: set-user-ID or set-group-ID program: the dynamic loader "
			"ignores LD_PRELOAD for it\n",
			prog);
		return EXIT_CANNOT_RUN;
	}
	n = pread(fd, eh, sizeof(eh), 0);
	if (n < 4 || memcmp(eh, ELFMAG, SELFMAG)) {
		close(fd);
		return 0; /* a script, or something exec will judge */
	}
	if (n < 52 || (eh[EI_CLASS] != ELFCLASS32 && eh[EI_CLASS] != ELFCLASS64))
		goto malformed;
	is64 = eh[EI_CLASS] == ELFCLASS64;
	big = eh[EI_DATA] == ELFDATA2MSB;
	machine = elf_get(eh + 18, 2, big);
	if (is64 != (sizeof(void *) == 8) || !machine_matches(machine)) {
		close(fd);
		fprintf(stderr,
			"traceagent: %s: built for another architecture or word size than the "
			"agent\n",
			prog);
		return EXIT_CANNOT_RUN;
	}
	if (is64 && n < 64)
		goto malformed;
	phoff = elf_get(eh + (is64 ? 32 : 28), is64 ? 8 : 4, big);
	phentsize = elf_get(eh + (is64 ? 54 : 42), 2, big);
	phnum = elf_get(eh + (is64 ? 56 : 44), 2, big);
	if (phentsize < (is64 ? 56u : 32u) || phentsize > sizeof(ph))
		goto malformed;
	for (uint64_t i = 0; i < phnum; i++) {
		if (pread(fd, ph, phentsize, (off_t)(phoff + i * phentsize)) != (ssize_t)phentsize)
			goto malformed;
		if (elf_get(ph, 4, big) == PT_INTERP) {
			has_interp = 1;
			break;
		}
	}
	close(fd);
	if (!has_interp) {
		fprintf(stderr,
			"traceagent: %s: statically linked: the agent cannot be preloaded into it "
			"(link it dynamically)\n",
			prog);
		return EXIT_CANNOT_RUN;
	}
	return 0;

malformed:
	close(fd);
	fprintf(stderr, "traceagent: %s: malformed ELF file\n", prog);
	return EXIT_CANNOT_RUN;
}

/* ---- the environment ------------------------------------------------------ */

int ta_rec_set_env(const char *name, const char *value)
{
	if (setenv(name, value, 1) < 0) {
		fprintf(stderr, "traceagent: cannot set %s: %s\n", name, strerror(errno));
		return -1;
	}
	return 0;
}

int ta_record_set_preload(const char *agent)
{
	const char *old = getenv("LD_PRELOAD");
	char *value;
	int r;

	/* ld.so splits LD_PRELOAD at spaces and colons and has no escape. */
	if (strpbrk(agent, " :")) {
		fprintf(stderr,
			"traceagent: %s: a path with a space or colon cannot go in "
			"LD_PRELOAD\n",
			agent);
		return -1;
	}
	if (old && *old) {
		if (asprintf(&value, "%s:%s", agent, old) < 0)
			return -1;
	} else {
		value = strdup(agent);
		if (!value)
			return -1;
	}
	r = ta_rec_set_env("LD_PRELOAD", value);
	free(value);
	return r;
}
