/* SPDX-License-Identifier: MIT */
/*
 * dump_share.c - which file the dump is, across processes: one recording's
 * file that every process of a program's tree appends to (a token in the
 * environment names it: TA_DUMP_FILE_VAR), and the dump handed to the next
 * image across exec (TA_HANDOVER_VAR: the descriptor, the file's identity
 * and the process's start).
 *
 * Apart from the writer (dump.c), which knows nothing of other processes:
 * this file decides which descriptor it writes to, through the state
 * dump_int.h shares, and writes nothing but a new file's header.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "dump.h"
#include "dump_int.h"
#include "format.h"

static int preloads_agent(char *const envp[]);

/* ---- one file for a process tree -------------------------------------------- */

/* The recording's file as its descendants find it (TA_DUMP_FILE_VAR's
 * value, "" when this process shares none): a file without %p in its name
 * is one recording, every process of the program's tree in it. */
static char dump_token[sizeof(dump_path) + 64];

/* The path of the file open on fd, absolute, in out (readlink of
 * /proc/self/fd; else path made absolute with the working directory). */
static void fd_path(int fd, const char *path, char *out, size_t size)
{
	char proc[64], cwd[4096];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, out, size - 1);
	if (n > 0 && out[0] == '/' && (size_t)n < size - 1) {
		out[n] = 0;
		/* A file removed meanwhile: " (deleted)" is no path to join. */
		if (!strstr(out, " (deleted)"))
			return;
	}
	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)) || strlen(cwd) + strlen(path) + 2 > size) {
		snprintf(out, size, "%s", path);
		return;
	}
	memcpy(out, cwd, strlen(cwd));
	out[strlen(cwd)] = '/';
	memcpy(out + strlen(cwd) + 1, path, strlen(path) + 1);
}

/* The recording's id in the file header of the file this process writes
 * (0: none). */
static uint32_t dump_recording;

/* A token: "DEV:INO:ID:REC:PATH", DEV and INO 0 while no process of the
 * recording has created the file yet (a pending token). */
struct token {
	unsigned long long dev, ino, id;
	uint32_t rec;
	const char *path;
};

static int token_parse(const char *v, struct token *t)
{
	unsigned int rec;
	int off = 0;

	if (!v || sscanf(v, "%llu:%llu:%llx:%x:%n", &t->dev, &t->ino, &t->id, &rec, &off) != 4 ||
	    !off || v[off] != '/' || strlen(v) >= sizeof(dump_token) ||
	    strlen(v + off) >= sizeof(dump_path) || !rec)
		return -1;
	t->rec = rec;
	t->path = v + off;
	return 0;
}

/* A recording's id: random, never 0. */
static uint32_t new_recording(void)
{
	struct timespec ts;
	uint32_t r = 0;

	if (syscall(SYS_getrandom, &r, sizeof(r), GRND_NONBLOCK) != (long)sizeof(r) || !r) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = (uint32_t)ts.tv_nsec * 2654435761u ^ (uint32_t)getpid() * 40503u ^
		    (uint32_t)ts.tv_sec;
	}
	return r ? r : 1;
}

/* The file writes go to from now on: fd, at path. */
static void dump_take(int fd, const char *path, uint32_t rec)
{
	snprintf(dump_path, sizeof(dump_path), "%s", path);
	dump_fd = fd;
	dump_stream = 0;
	dump_failed = 0;
	dump_recording = rec;
}

/*
 * Appends to the recording's file at path if it is one: a dump whose header
 * names recording rec and, for a token with them, that device and inode.
 * 1 when taken (a writer of its own there: sequence from 0, no header
 * written), -ENOENT when nothing is there, -EEXIST when something else is,
 * else -errno.
 */
static int join_file(const char *path, const struct token *t, uint32_t rec)
{
	uint8_t hdr[TA_FILE_HEADER_SIZE];
	struct ta_file_header fh;
	struct stat st;
	int fd;

	/* No O_CREAT; read too, to check the header. */
	fd = open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : errno == ELOOP ? -EEXIST : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (t && t->dev &&
	     ((unsigned long long)st.st_dev != t->dev ||
	      (unsigned long long)st.st_ino != t->ino)) ||
	    pread(fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    ta_file_header_decode(hdr, &fh) < 0 || fh.recording != rec) {
		close(fd);
		return -EEXIST;
	}
	dump_take(fd, path, rec);
	dump_seq = 0;
	dump_bytes = 0;
	return 1;
}

/*
 * Creates the recording's file at path, its header (recording rec) in it
 * before it appears there: written under a name of its own in the same
 * directory, then linked in place (link never replaces a file), so that a
 * process finding it there finds a header to check.  0, -EEXIST when a
 * file is there (another process of the recording may have won: join it),
 * else -errno.  Where the file system has no links, an O_EXCL create.
 */
static int create_file(const char *path, uint32_t rec)
{
	uint8_t hdr[TA_FILE_HEADER_SIZE];
	char tmp[sizeof(dump_path) + 48];
	int fd, err;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%ld.%08x.tmp", path, (long)getpid(),
			     new_recording()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	ta_file_header_encode_rec(hdr, (uint32_t)getpid(), rec);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = ta_dump_write_all(fd, hdr, sizeof(hdr));
	if (err == 0 && link(tmp, path) < 0)
		err = -errno;
	unlink(tmp);
	if (err == -EPERM || err == -EOPNOTSUPP || err == -ENOSYS) {
		close(fd);
		fd =
		    open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		err = ta_dump_write_all(fd, hdr, sizeof(hdr));
		if (err < 0)
			unlink(path);
	}
	if (err < 0) {
		close(fd);
		return err;
	}
	dump_take(fd, path, rec);
	dump_seq = 0;
	dump_bytes = sizeof(hdr);
	return 0;
}

int ta_dump_open_shared(uint64_t output_id, const char *path)
{
	const char *v = secure_getenv(TA_DUMP_FILE_VAR);
	struct token t;
	struct stat st;
	int err;

	dump_open_why = NULL;
	/* The recording's token, for the same setting (a relative path from
	 * another directory is the recording's still) or a setting naming
	 * that very file. */
	if (token_parse(v, &t) == 0 &&
	    (t.id == output_id ||
	     (t.dev && stat(path, &st) == 0 && (unsigned long long)st.st_dev == t.dev &&
	      (unsigned long long)st.st_ino == t.ino))) {
		for (int i = 0; i < 2; i++) {
			err = join_file(t.path, &t, t.rec);
			if (err == 1)
				return 0;
			/* Pending and not there yet: the first to trace makes
			 * it; another may make it meanwhile (then join it). */
			if (err != -ENOENT || t.dev)
				break;
			err = create_file(t.path, t.rec);
			if (err != -EEXIST)
				return err;
		}
		/* The token's file gone, or not the recording's: this
		 * process's own, as without a token. */
	}
	/* The first process of a recording: its file, never one that is
	 * there. */
	return create_file(path, new_recording());
}

int ta_dump_share(uint64_t output_id)
{
	char abs[sizeof(dump_path)];
	struct stat st;
	int n;

	if (dump_fd < 0 || dump_stream || !dump_recording || fstat(dump_fd, &st) < 0)
		return -1;
	fd_path(dump_fd, dump_path, abs, sizeof(abs));
	n = snprintf(dump_token, sizeof(dump_token), "%llu:%llu:%016llx:%08x:%s",
		     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		     (unsigned long long)output_id, (unsigned)dump_recording, abs);
	if (n < 0 || (size_t)n >= sizeof(dump_token)) {
		dump_token[0] = 0;
		return -1;
	}
	/* In the process's own environment: posix_spawn, system(), popen()
	 * and a vfork child's exec pass environ on without a call of ours.
	 * The agent starts before the program's other threads as a rule
	 * (at its first instrumented call); one reading environ meanwhile
	 * sees the old array or the new one. */
	if (setenv(TA_DUMP_FILE_VAR, dump_token, 1) < 0) {
		dump_token[0] = 0;
		return -1;
	}
	return 0;
}

/* The pending token of this process's setting ("NAME=VALUE"), built once
 * (in a vfork child too: static, no allocation), or NULL when the setting
 * is not one file for the whole tree. */
static const char *pending_token(void)
{
	static char entry[sizeof(TA_DUMP_FILE_VAR) + sizeof(dump_token)];
	static int state; /* 0: not built, 1: built, -1: none */
	const char *out = getenv("TRACEAGENT_OUTPUT");
	char cwd[sizeof(dump_path)];
	uint64_t id = 0xcbf29ce484222325ull;
	int n;

	if (state)
		return state > 0 ? entry : NULL;
	state = -1;
	/* The agent's settings: an empty one is the default (%p). */
	if (!out || !*out || ta_addr_is_stream(out) || getauxval(AT_SECURE))
		return NULL;
	for (const char *p = out; *p; p++) {
		if (p[0] == '%' && p[1] == 'p')
			return NULL;
		if (p[0] == '%' && p[1] == '%')
			p++;
	}
	for (const char *c = out; *c; c++)
		id = (id ^ (uint8_t)*c) * 0x100000001b3ull;
	if (out[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		return NULL;
	/* %% as the agent expands it: the path the first process creates. */
	n = snprintf(entry, sizeof(entry), TA_DUMP_FILE_VAR "=0:0:%016llx:%08x:%s%s",
		     (unsigned long long)id, (unsigned)new_recording(), out[0] == '/' ? "" : cwd,
		     out[0] == '/' ? "" : "/");
	if (n < 0 || (size_t)n >= sizeof(entry))
		return NULL;
	for (const char *p = out; *p && (size_t)n + 1 < sizeof(entry); p++) {
		entry[n++] = *p;
		if (p[0] == '%' && p[1] == '%')
			p++;
	}
	entry[n] = 0;
	state = 1;
	return entry;
}

/* Built when the agent is loaded, before the program runs: its forked
 * children (a shell's background jobs, make's) copy it, so that they all
 * pass on the same recording, whichever of their images traces first. */
__attribute__((constructor)) static void pending_init(void)
{
	int saved = errno;

	(void)pending_token();
	errno = saved;
}

void ta_dump_token_to_environ(void)
{
	/* NULL when environ has a token: else the pending token's static
	 * entry itself (putenv keeps the pointer), never changed once built. */
	const char *entry = ta_dump_pass_token(environ);

	if (entry)
		putenv((char *)(uintptr_t)entry);
}

const char *ta_dump_pass_token(char *const envp[])
{
	const size_t flen = sizeof(TA_DUMP_FILE_VAR); /* with its '=' */

	if (!envp || !preloads_agent(envp))
		return NULL;
	for (size_t i = 0; envp[i]; i++)
		if (!strncmp(envp[i], TA_DUMP_FILE_VAR "=", flen))
			return NULL;
	/* This process's own, else the one its children are to share. */
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, TA_DUMP_FILE_VAR "=", flen))
			return *e;
	return pending_token();
}

/* ---- the handover across exec ------------------------------------------------ */

/* 1 if envp preloads this library (by its file name: LD_PRELOAD may name
 * it by path or as a bare name). */
static int preloads_agent(char *const envp[])
{
	Dl_info info;
	const char *me;

	if (!dladdr((void *)(uintptr_t)preloads_agent, &info) || !info.dli_fname)
		return 0;
	me = strrchr(info.dli_fname, '/');
	me = me ? me + 1 : info.dli_fname;
	for (size_t i = 0; envp[i]; i++)
		if (!strncmp(envp[i], "LD_PRELOAD=", 11) && strstr(envp[i] + 11, me))
			return 1;
	return 0;
}

#define HANDOVER_LEN 128

char **ta_dump_handover(char *const envp[], int with_fd)
{
	const size_t vlen = sizeof(TA_HANDOVER_VAR); /* with its '=' */
	const size_t flen = sizeof(TA_DUMP_FILE_VAR);
	size_t tlen = dump_token[0] ? flen + strlen(dump_token) + 1 : 0;
	struct stat st;
	size_t n = 0, k = 0;
	char **env, *var, *tok;

	/* A new image without the agent would only inherit a descriptor. */
	/* A stream is not handed over: the new image connects anew, as a
	 * dump of its own (the old one ended with END, flag exec). */
	if (!envp || dump_fd < 0 || dump_failed || dump_stream || !preloads_agent(envp) ||
	    fstat(dump_fd, &st) < 0 || (!with_fd && !tlen))
		return (char **)(uintptr_t)envp;
	while (envp[n])
		n++;
	env = malloc((n + 3) * sizeof(*env) + HANDOVER_LEN + tlen);
	if (!env)
		return (char **)(uintptr_t)envp;
	var = (char *)(env + n + 3);
	tok = var + HANDOVER_LEN;
	/* The file's identity too: a descendant that inherits the variable
	 * but not the descriptor (closed at exec, the number reused) must
	 * not write into another file.  Then the process's start, which
	 * its next image names alike. */
	snprintf(var, HANDOVER_LEN, TA_HANDOVER_VAR "=%d:%llu:%llu:%ld:%llu:%llu", dump_fd,
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long)getpid(),
		 (unsigned long long)ta_dump_boot_start(), (unsigned long long)ta_dump_start_ns());
	if (tlen)
		snprintf(tok, tlen, TA_DUMP_FILE_VAR "=%s", dump_token);
	/* The program's environment may lack the token (an environment of
	 * its own making): the new image's descendants get it all the same. */
	for (size_t i = 0; i < n; i++)
		if ((!with_fd || strncmp(envp[i], TA_HANDOVER_VAR "=", vlen)) &&
		    (!tlen || strncmp(envp[i], TA_DUMP_FILE_VAR "=", flen)))
			env[k++] = envp[i];
	if (with_fd)
		env[k++] = var;
	if (tlen)
		env[k++] = tok;
	env[k] = NULL;
	if (with_fd && fcntl(dump_fd, F_SETFD, 0) < 0) {
		free(env);
		return (char **)(uintptr_t)envp;
	}
	return env;
}

void ta_dump_handover_cancel(char **env, char *const envp[])
{
	(void)envp;
	if (dump_fd >= 0)
		fcntl(dump_fd, F_SETFD, FD_CLOEXEC);
	free(env);
}

int ta_dump_adopt(void)
{
	const char *v = secure_getenv(TA_HANDOVER_VAR);
	unsigned long long dev, ino, bs = 0, sns = 0;
	long pid = 0;
	char proc[64], extra;
	struct stat st;
	ssize_t n;
	int fd, fl, got;

	if (!v)
		return 0;
	got = sscanf(v, "%d:%llu:%llu:%ld:%llu:%llu%c", &fd, &dev, &ino, &pid, &bs, &sns, &extra);
	if ((got != 3 && got != 5 && got != 6) || fd < 0)
		return 0;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || !(fl & O_APPEND) || (fl & O_ACCMODE) == O_RDONLY || fstat(fd, &st) < 0 ||
	    !S_ISREG(st.st_mode) || (unsigned long long)st.st_dev != dev ||
	    (unsigned long long)st.st_ino != ino)
		return 0;
	/* Ours again: not inherited by what this image runs. */
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, dump_path, sizeof(dump_path) - 1);
	dump_path[n > 0 ? n : 0] = 0;
	dump_fd = fd;
	dump_stream = 0;
	dump_failed = 0;
	dump_fail_at = 0;
	dump_fail_errno = 0;
	ta_dump_reserve_open(dump_path);
	/* A new writer in the file: its PROCESS chunk starts a new image of
	 * this pid (or, in a descendant, a process of its own). */
	dump_seq = 0;
	dump_bytes = 0;
	if (got >= 5 && pid == (long)getpid())
		ta_dump_handed_boot_start((pid_t)pid, bs);
	if (got == 6 && pid == (long)getpid() && sns)
		ta_dump_handed_start_ns((pid_t)pid, sns);
	/* The recording's file, if the previous image shared it. */
	{
		const char *t = secure_getenv(TA_DUMP_FILE_VAR);

		struct token tk;

		if (t && token_parse(t, &tk) == 0) {
			snprintf(dump_token, sizeof(dump_token), "%s", t);
			dump_recording = tk.rec;
		}
	}
	return 1;
}
