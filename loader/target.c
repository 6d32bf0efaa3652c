/* SPDX-License-Identifier: MIT */
/*
 * target.c - what `traceagent attach` learns of its target before and
 * while it acts: /proc/PID/status and maps, the symbols of its ELF files,
 * its namespaces (is the dump's directory the same one there?), its
 * control socket, and why ptrace was refused.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "ctlsock.h"

int ta_att_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("traceagent: attach: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* A "Key:\tvalue" line of /proc/PID/status, as text; 0 if found. */
int ta_att_status_field(long pid, const char *key, char *out, size_t size)
{
	char path[64], line[512];
	size_t kl = strlen(key);
	FILE *f;
	int found = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			char *v = line + kl + 1;
			while (*v == '\t' || *v == ' ')
				v++;
			v[strcspn(v, "\n")] = 0;
			snprintf(out, size, "%s", v);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

/* Whether process pid is there and not a zombie (it ended). */
int ta_att_process_alive(long pid)
{
	char st[8] = "";

	return ta_att_status_field(pid, "State", st, sizeof(st)) == 0 && st[0] != 'Z';
}

#if TA_ARCH_HAS_INJECT /* the injection's helpers */
/* Calls fn for each file mapping of process pid, until it returns 1;
 * -1 when the maps cannot be read. */
int ta_att_maps_each(long pid, int (*fn)(const struct map_line *m, void *arg), void *arg)
{
	char path[64], line[PATH_MAX + 128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct map_line m;
		char *p = strchr(line, '/');

		if (!p || sscanf(line, "%lx-%lx %7s %lx", &m.lo, &m.hi, m.perms, &m.off) != 4)
			continue;
		p[strcspn(p, "\n")] = 0;
		m.path = p;
		if (fn(&m, arg))
			break;
	}
	fclose(f);
	return 0;
}

struct base_find {
	const char *suffix, *exact;
	char *file;
	size_t size;
	uintptr_t base;
};

static int base_one(const struct map_line *m, void *arg)
{
	struct base_find *bf = arg;
	size_t n = strlen(m->path);

	if (m->off != 0 || !((bf->exact && !strcmp(m->path, bf->exact)) ||
			     (bf->suffix && n >= strlen(bf->suffix) &&
			      !strcmp(m->path + n - strlen(bf->suffix), bf->suffix))))
		return 0;
	bf->base = m->lo;
	if (bf->file && n < bf->size)
		memcpy(bf->file, m->path, n + 1);
	else if (bf->file)
		bf->base = 0;
	return 1;
}

/* The start of the mapping at file offset 0 of the first object whose path
 * ends with one of the names (libc.so.6) or equals path; its path in file. */
uintptr_t ta_att_map_base(long pid, const char *suffix, const char *exact, char *file, size_t size)
{
	struct base_find bf = {suffix, exact, file, size, 0};

	(void)ta_att_maps_each(pid, base_one, &bf);
	return bf.base;
}

static int digest_one(const struct map_line *m, void *arg)
{
	uint64_t *h = arg;

	if (m->perms[2] == 'x')
		*h = (*h ^ m->lo) * 1099511628211ull;
	return 0;
}

/* A digest of the process's executable file mappings: it changes when a
 * module is loaded or unloaded (--patch's modules loaded in a window). */
uint64_t ta_att_code_maps_digest(long pid)
{
	uint64_t h = 1469598103934665603ull;

	return ta_att_maps_each(pid, digest_one, &h) < 0 ? 0 : h;
}

/* The value of the dynamic symbol name of the type (STT_FUNC, STT_OBJECT)
 * in the ELF file at path (its offset from the load base for a shared
 * object); 0 if not found. */
uint64_t ta_att_elf_sym(const char *path, const char *name, unsigned type)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	const uint8_t *m;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	uint64_t v = 0;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return 0;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 0;
	eh = (const Elf64_Ehdr *)m;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > (uint64_t)st.st_size)
		goto out;
	sh = (const Elf64_Shdr *)(m + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Sym *sym;
		const char *str;
		uint64_t n;

		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		if (sh[i].sh_offset + sh[i].sh_size > (uint64_t)st.st_size ||
		    sh[sh[i].sh_link].sh_offset + sh[sh[i].sh_link].sh_size > (uint64_t)st.st_size)
			break;
		sym = (const Elf64_Sym *)(m + sh[i].sh_offset);
		str = (const char *)(m + sh[sh[i].sh_link].sh_offset);
		n = sh[i].sh_size / sizeof(Elf64_Sym);
		for (uint64_t k = 0; k < n; k++) {
			if (sym[k].st_name < sh[sh[i].sh_link].sh_size &&
			    sym[k].st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym[k].st_info) == type &&
			    !strcmp(str + sym[k].st_name, name)) {
				v = sym[k].st_value;
				break;
			}
		}
		break;
	}
out:
	munmap((void *)(uintptr_t)m, (size_t)st.st_size);
	return v;
}

uint64_t ta_att_elf_dynsym(const char *path, const char *name)
{
	return ta_att_elf_sym(path, name, STT_FUNC);
}

#endif

/* Process pid as it sees itself: its pid in its own pid namespace (the
 * last of NSpid's), and whether its mount or pid namespace is another than
 * ours (then its files are reached from here through /proc/PID/root). */
struct target_ns {
	long pid;
	int other_mnt, other_pid;
};

static int same_ns(long pid, const char *kind)
{
	char path[64];
	struct stat mine, theirs;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", kind);
	if (stat(path, &mine) < 0)
		return 1; /* no namespaces to tell apart */
	snprintf(path, sizeof(path), "/proc/%ld/ns/%s", pid, kind);
	if (stat(path, &theirs) < 0)
		return 1; /* not readable: ptrace says why, later */
	return mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino;
}

static void target_ns(long pid, struct target_ns *t)
{
	char v[256];
	const char *last;

	t->pid = pid;
	if (ta_att_status_field(pid, "NSpid", v, sizeof(v)) == 0) {
		last = strrchr(v, '\t');
		last = last ? last + 1 : strrchr(v, ' ') ? strrchr(v, ' ') + 1 : v;
		if (atol(last) > 0)
			t->pid = atol(last);
	}
	t->other_mnt = !same_ns(pid, "mnt");
	t->other_pid = !same_ns(pid, "pid");
}

/* The file path out, where the agent in process pid is to create it: in
 * another mount namespace the same path may name another directory (a
 * private /tmp), and the dump would be written there, not here.  0 when
 * its directory is the one we see (the same inode through /proc/PID/root);
 * else 1, said. */
int ta_att_output_reachable(long pid, const char *out)
{
	char dir[PATH_MAX], seen[PATH_MAX + 32];
	struct stat here, there;
	struct target_ns t;
	char *slash;

	target_ns(pid, &t);
	if (!t.other_mnt || !out || strstr(out, "://") || !strncmp(out, "unix:", 5))
		return 0;
	snprintf(dir, sizeof(dir), "%s", out);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	snprintf(seen, sizeof(seen), "/proc/%ld/root%s", pid, dir);
	if (stat(dir, &here) == 0 && stat(seen, &there) == 0 && here.st_dev == there.st_dev &&
	    here.st_ino == there.st_ino)
		return 0;
	return ta_att_fail(
	    "process %ld is in another mount namespace, where %s is not this directory: "
	    "its dump would not be written here; give -o a file in a directory it shares "
	    "with you, or tcp://HOST:PORT (traceagent serve)",
	    pid, dir);
}

/* The target's control socket, connected as the target's user (root
 * attaching to another user's process: the agent answers its own user
 * only); -1 if nobody listens.  The agent names it after its pid in its
 * own pid namespace, in its own mount namespace's directory. */
static int ctl_connect(long pid, uid_t uid)
{
	struct target_ns t;
	char local[sizeof(((struct sockaddr_un *)0)->sun_path)], root[48];
	char envp[64], env[65536], dir[PATH_MAX], path[PATH_MAX];
	const char *places[2] = {NULL, NULL};
	ssize_t n = 0;
	int fd;

	target_ns(pid, &t);
	snprintf(root, sizeof(root), "/proc/%ld/root", pid);
	snprintf(envp, sizeof(envp), "/proc/%ld/environ", pid);
	fd = open(envp, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, env, sizeof(env) - 1);
		close(fd);
	}
	if (n < 0)
		n = 0;
	env[n] = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(env + i) + 1)
		if (!strncmp(env + i, "XDG_RUNTIME_DIR=", 16))
			places[0] = env + i + 16;
	for (int k = 0; k < 2; k++) {
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		uid_t me = geteuid();
		int ok;

		if (k == 1 && !places[0])
			break;
		if (ta_ctl_dir(dir, sizeof(dir), k == 0 ? places[0] : NULL, uid) < 0 ||
		    ta_ctl_path(local, sizeof(local), dir, t.pid) < 0)
			continue;
		/* Its directory seen from here: /proc/PID/root's prefix
		 * (bounded: local fits a socket address). */
		snprintf(path, sizeof(path), "%s%s", t.other_mnt ? root : "", local);
		if (strlen(path) >= sizeof(sun.sun_path))
			continue;
		memcpy(sun.sun_path, path, strlen(path) + 1);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (me == 0 && uid != 0 && seteuid(uid) < 0) {
			close(fd);
			return -1;
		}
		ok = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
		if (me == 0 && uid != 0 && seteuid(0) < 0) {
			close(fd);
			return -1;
		}
		if (ok)
			return fd;
		close(fd);
	}
	return -1;
}

/* One command on the target's socket; its answer's last line in ans. */
int ta_att_ctl_say(long pid, uid_t uid, const char *cmd, char *ans, size_t size)
{
	char buf[4096];
	size_t got = 0;
	int fd = ctl_connect(pid, uid);

	if (fd < 0)
		return -1;
	if (write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd)) {
		close(fd);
		return -1;
	}
	for (;;) {
		ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == sizeof(buf) - 1)
			break;
	}
	close(fd);
	buf[got] = 0;
	while (got && buf[got - 1] == '\n')
		buf[--got] = 0;
	{
		char *last = strrchr(buf, '\n');
		const char *l = last ? last + 1 : buf;
		size_t ln = strlen(l) < size - 1 ? strlen(l) : size - 1;

		memcpy(ans, l, ln);
		ans[ln] = 0;
	}
	return 0;
}

/* ptrace refused (err): the message names the settings that decide it. */
int ta_att_denied(long pid, int err)
{
	char scope[32] = "not set (no Yama)";
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		ssize_t n = read(fd, scope, sizeof(scope) - 1);
		scope[n > 0 ? n : 0] = 0;
		scope[strcspn(scope, "\n")] = 0;
		close(fd);
	}
	return ta_att_fail(
	    "cannot ptrace process %ld: %s (kernel.yama.ptrace_scope is %s; attach needs "
	    "the process's user with ptrace_scope 0, or CAP_SYS_PTRACE, also for a "
	    "process that made itself non-dumpable)",
	    pid, strerror(err), scope);
}
