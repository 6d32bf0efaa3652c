/* SPDX-License-Identifier: MIT */
/*
 * dump.c - the dump file: creation, chunk writing, and the small chunks
 * (process, clock) built from the agent's state.
 *
 * Every chunk is one write() to an O_APPEND descriptor, so a chunk is
 * either wholly in the file or (killed mid-write, disk full) a truncated
 * tail the analyzer recognises.
 *
 * Or the same bytes go to a collector (TRACEAGENT_OUTPUT=tcp://HOST:PORT or
 * unix:PATH, sink.c): the file header, then each chunk in one sendmsg.  A
 * stream is one process image's dump: a forked child connects anew and an
 * exec'd image too (no descriptor is handed over).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <stdio.h>
#include <unistd.h>

#include "base.h"
#include "clock.h"
#include "dump.h"
#include "lazylib.h"
#include "format.h"
#include "ring.h"
#include "settings.h"
#include "sink.h"
#include "addr.h"

/* A dump passes 2 GiB (and 4) in a run of minutes: offsets are 64-bit
 * (meson builds with _FILE_OFFSET_BITS=64, 32-bit systems included). */
_Static_assert(sizeof(off_t) == 8, "off_t must be 64-bit: build with _FILE_OFFSET_BITS=64");

static int dump_fd = -1;
static int dump_failed;
static uint32_t dump_seq;
static uint64_t dump_bytes;
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static char dump_path[4096];
/* The dump goes to a collector (dump_path is its address): sendmsg, no
 * file offsets, no handover across exec, a new connection per child. */
static int dump_stream;
static int crash_mode; /* locks are tried, not waited on */
/* The first failed write: the offset (or, for a stream, the bytes sent)
 * where the chunk not written began, and its errno; for END (1.8). */
static uint64_t fail_at;
static int fail_errno;

/*
 * A full disk leaves no room for the END that says so: a page of the same
 * file system is kept, in an unnamed file (O_TMPFILE beside the dump),
 * and given back when a write fails, for that END.  Its identity is
 * checked before the close: a program that closed every descriptor may
 * have the number for a file of its own.  Where there is no O_TMPFILE,
 * no reserve: the END is still tried.
 */
#define RESERVE_BYTES 4096
static int reserve_fd = -1;
static dev_t reserve_dev;
static ino_t reserve_ino;

static void reserve_open(const char *path)
{
	char dir[4096];
	static const uint8_t zero[RESERVE_BYTES];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int fd;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	/* Written, not fallocate'd: every file system then holds the room. */
	if (write(fd, zero, sizeof(zero)) != (ssize_t)sizeof(zero) || fstat(fd, &st) < 0) {
		close(fd);
		return;
	}
	reserve_fd = fd;
	reserve_dev = st.st_dev;
	reserve_ino = st.st_ino;
}

static void reserve_release(void)
{
	struct stat st;

	if (reserve_fd >= 0 && fstat(reserve_fd, &st) == 0 && st.st_dev == reserve_dev &&
	    st.st_ino == reserve_ino && st.st_nlink == 0)
		close(reserve_fd);
	reserve_fd = -1;
}

static void note_failure(uint64_t at, int err)
{
	if (fail_errno)
		return;
	fail_at = at;
	fail_errno = err > 0 ? err : EIO;
}

/* The recording's file as its descendants find it (TA_DUMP_FILE_VAR's
 * value, "" when this process shares none): a file without %p in its name
 * is one recording, every process of the program's tree in it. */
static char dump_token[sizeof(dump_path) + 64];

/* Compression scratch for chunks written without one of their own,
 * used under dump_lock. */
static struct ta_zbuf shared_z;

/*
 * A batch: the small chunks written while it is on (the start's process
 * description, the exit's last ones) go to the file in one write rather
 * than one each (a fib 1 wrote 18 chunks, three system calls each).
 * Static, so that a chunk is never lost to a failed allocation, and small:
 * a chunk that does not fit is written alone, after what is held.  Under
 * dump_lock; only for a file (a collector takes each chunk in a sendmsg).
 */
#define BATCH_BYTES  (16u << 10)
#define BATCH_CHUNKS 64
static struct {
	int on;
	size_t len;
	uint32_t n;
	uint32_t first_seq;	    /* the seq of its first chunk */
	uint32_t end[BATCH_CHUNKS]; /* where each chunk ends */
	uint8_t p[BATCH_BYTES];
} batch;

/* ---- the file ------------------------------------------------------------ */

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Header and payload in one writev: with O_APPEND a chunk is never split
 * by another process's chunk.  A short write (disk full) is finished with
 * plain writes, or fails. */
static int write_chunk(const uint8_t *hdr, const void *payload, size_t len)
{
	/* writev's iovec is not const-qualified; it only reads. */
	struct iovec iov[2] = {{(void *)(uintptr_t)hdr, TA_CHUNK_HEADER_SIZE},
			       {(void *)(uintptr_t)payload, len}};
	size_t total = TA_CHUNK_HEADER_SIZE + len;
	ssize_t w;

	if (dump_stream)
		return ta_sink_send(dump_fd, iov, 2);
	do
		w = writev(dump_fd, iov, 2);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	if ((size_t)w == total)
		return 0;
	if ((size_t)w < TA_CHUNK_HEADER_SIZE) {
		int err = write_all(dump_fd, hdr + w, TA_CHUNK_HEADER_SIZE - (size_t)w);
		if (err < 0)
			return err;
		w = TA_CHUNK_HEADER_SIZE;
	}
	return write_all(dump_fd, (const uint8_t *)payload + ((size_t)w - TA_CHUNK_HEADER_SIZE),
			 total - (size_t)w);
}

/* What the last failed open could not say with an errno. */
static const char *open_why;

static int preloads_agent(char *const envp[]);

const char *ta_dump_open_why(void)
{
	return open_why;
}

int ta_dump_open(const char *path)
{
	uint8_t hdr[TA_FILE_HEADER_SIZE];
	int fd, err, stream = ta_addr_is_stream(path);

	open_why = NULL;
	/* O_EXCL|O_NOFOLLOW: never follow a planted symlink, never overwrite
	 * a file that is there (possibly someone else's). */
	if (stream)
		fd = ta_sink_connect(path, &open_why);
	else
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC,
			  0600);
	if (fd < 0)
		return stream ? fd : -errno;
	ta_file_header_encode(hdr, (uint32_t)getpid());
	if (stream) {
		struct iovec iov = {hdr, sizeof(hdr)};
		err = ta_sink_send(fd, &iov, 1);
	} else {
		err = write_all(fd, hdr, sizeof(hdr));
	}
	if (err < 0) {
		close(fd);
		if (!stream)
			unlink(path);
		return err;
	}
	snprintf(dump_path, sizeof(dump_path), "%s", path);
	dump_fd = fd;
	dump_stream = stream;
	dump_failed = 0;
	fail_at = 0;
	fail_errno = 0;
	dump_seq = 0;
	dump_bytes = sizeof(hdr);
	if (!stream)
		reserve_open(path);
	return 0;
}

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
	err = write_all(fd, hdr, sizeof(hdr));
	if (err == 0 && link(tmp, path) < 0)
		err = -errno;
	unlink(tmp);
	if (err == -EPERM || err == -EOPNOTSUPP || err == -ENOSYS) {
		close(fd);
		fd =
		    open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		err = write_all(fd, hdr, sizeof(hdr));
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

	open_why = NULL;
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

int ta_dump_is_stream(void)
{
	return dump_stream;
}

const char *ta_dump_where(void)
{
	return dump_path;
}

/* LZ4 into z when it pays (not for small chunks); returns what to store. */
static const void *compress(struct ta_zbuf *z, const void *payload, size_t len, size_t *stored_len,
			    uint16_t *flags)
{
	size_t bound;
	int n;

	*stored_len = len;
	*flags = 0;
	if (len < 128 || z->store || !ta_lazy_lz4_on())
		return payload;
	bound = (size_t)ta_lazy.lz4_bound((int)len);
	{
		uint8_t *p = ta_vec_reserve(z->p, bound, &z->cap, 1, bound);
		if (!p)
			return payload; /* stored raw: still a valid chunk */
		z->p = p;
	}
	n = ta_lazy.lz4_compress(payload, (char *)z->p, (int)len, (int)z->cap);
	if (n <= 0 || (size_t)n >= len)
		return payload;
	*stored_len = (size_t)n;
	*flags = TA_CHUNK_F_LZ4;
	return z->p;
}

/* The batch off and empty, what it held not written (a closed or a
 * parent's dump). */
static void batch_forget(void)
{
	batch.on = 0;
	batch.len = 0;
	batch.n = 0;
}

/* Writes what the batch holds, under dump_lock; 0 or -errno, the dump then
 * failed (said once, naming the first chunk not written whole). */
static int batch_write(void)
{
	off_t before;
	uint32_t whole = 0;
	size_t done = 0;
	int err;

	if (!batch.len)
		return 0;
	before = lseek(dump_fd, 0, SEEK_END);
	err = write_all(dump_fd, batch.p, batch.len);
	if (err < 0) {
		/* write_all stopped at an error: what reached the file is
		 * the size it has grown by, if nothing else was appended. */
		struct stat st;

		if (before >= 0 && fstat(dump_fd, &st) == 0 && st.st_size >= before &&
		    st.st_size < before + (off_t)batch.len)
			done = (size_t)(st.st_size - before);
		while (whole < batch.n && batch.end[whole] <= done)
			whole++;
		/* The chunks written whole stay, the one cut off goes (as
		 * ta_dump_chunk_z does for one chunk). */
		if (done > (whole ? batch.end[whole - 1] : 0) &&
		    ftruncate(dump_fd, before + (off_t)(whole ? batch.end[whole - 1] : 0)) < 0) {
			/* The reader will see a truncated last chunk. */
		}
		dump_failed = 1;
		note_failure((uint64_t)(before + (off_t)(whole ? batch.end[whole - 1] : 0)), -err);
		ta_warn("cannot write to the dump %s: chunk %" PRIu32 " of process %d at offset "
			"%" PRId64 ": %s; the rest of this run is not recorded",
			dump_path, batch.first_seq + whole, (int)getpid(),
			(int64_t)(before + (off_t)(whole ? batch.end[whole - 1] : 0)),
			strerror(-err));
	}
	batch.len = 0;
	batch.n = 0;
	return err;
}

/* Appends a chunk to the batch, writing what it held first when the chunk
 * does not fit; 0 when it is held, -1 when it is to be written alone. */
static int batch_add(const uint8_t *hdr, const void *stored, size_t stored_len)
{
	size_t need = TA_CHUNK_HEADER_SIZE + stored_len;

	if (batch.len + need > BATCH_BYTES || batch.n == BATCH_CHUNKS) {
		if (batch_write() < 0)
			return -1;
		if (need > BATCH_BYTES)
			return -1;
	}
	if (!batch.n)
		batch.first_seq = dump_seq;
	memcpy(batch.p + batch.len, hdr, TA_CHUNK_HEADER_SIZE);
	memcpy(batch.p + batch.len + TA_CHUNK_HEADER_SIZE, stored, stored_len);
	batch.len += need;
	batch.end[batch.n++] = (uint32_t)batch.len;
	return 0;
}

void ta_dump_batch(int on)
{
	pthread_mutex_lock(&dump_lock);
	batch.on = on && !dump_stream;
	if (!on && dump_fd >= 0 && !dump_failed)
		(void)batch_write();
	pthread_mutex_unlock(&dump_lock);
}

int ta_dump_chunk_z(unsigned type, const void *payload, size_t len, struct ta_zbuf *z)
{
	struct ta_chunk_header h = {0};
	uint8_t hdr[TA_CHUNK_HEADER_SIZE];
	const void *stored = payload;
	size_t stored_len = len;
	off_t before;
	int err = 0;

	if (len > TA_CHUNK_MAX_PAYLOAD)
		return -EINVAL;
	/* Whoever writes (the flusher, a thread draining its ring, the
	 * patcher, exit), its locks, writes and allocations here are the
	 * agent's: never recorded as the program's library calls. */
	TA_GUARD_ENTER();
	/* With the caller's buffer, compression runs outside the lock, so
	 * threads that drain their own rings compress in parallel. */
	if (z)
		stored = compress(z, payload, len, &stored_len, &h.flags);
	if (__atomic_load_n(&crash_mode, __ATOMIC_RELAXED)) {
		if (ta_lock_bounded(&dump_lock) < 0) {
			TA_GUARD_LEAVE();
			return -EBUSY; /* held by the crashed code itself */
		}
	} else {
		pthread_mutex_lock(&dump_lock);
	}
	/* After a failed write only the END is tried, in the room the
	 * reserve gives back: it says where and why the dump stops. */
	if (dump_fd < 0 || (dump_failed && (type != TA_CHUNK_END || dump_stream))) {
		err = -EBADF;
		goto out;
	}
	if (dump_failed)
		reserve_release();
	if (!z)
		stored = compress(&shared_z, payload, len, &stored_len, &h.flags);
	h.type = (uint16_t)type;
	h.stored_size = (uint32_t)stored_len;
	h.raw_size = (uint32_t)len;
	h.pid = (uint32_t)getpid();
	h.seq = dump_seq;
	ta_chunk_header_encode(hdr, &h, stored);
	/* A control-socket stream's reader gets a copy (tap.c); the chunks
	 * made for it alone go nowhere else. */
	if (ta_dump_up.tee(hdr, stored, stored_len))
		goto out;
	if (batch.on && !dump_failed && !__atomic_load_n(&crash_mode, __ATOMIC_RELAXED)) {
		if (batch_add(hdr, stored, stored_len) == 0) {
			dump_seq++;
			dump_bytes += sizeof(hdr) + stored_len;
			goto out;
		}
		if (dump_failed) {
			err = -EIO;
			goto out;
		}
	} else if (batch.len && batch_write() < 0) {
		/* A crash's chunks after what the batch held. */
		err = -EIO;
		goto out;
	}
	before = dump_stream ? (off_t)dump_bytes : lseek(dump_fd, 0, SEEK_END);
	err = write_chunk(hdr, stored, stored_len);
	if (err < 0 && dump_stream)
		goto fail;
	if (err < 0) {
		/* A full disk may have taken part of the chunk: cut it off, so
		 * the dump ends on a chunk boundary (whole, but without END:
		 * incomplete).  Only if nothing else was appended since (a
		 * forked child shares the file). */
		struct stat st;
		if (before >= 0 && fstat(dump_fd, &st) == 0 && st.st_size > before &&
		    st.st_size < before + (off_t)(sizeof(hdr) + stored_len) &&
		    ftruncate(dump_fd, before) < 0) {
			/* The reader will see a truncated last chunk. */
		}
		if (dump_failed)
			goto out; /* the END after a failure: said already */
		goto fail;
	}
	/* The chunk is written (the one place where that is known). */
	dump_seq++;
	dump_bytes += sizeof(hdr) + stored_len;
	goto out;
fail:
	dump_failed = 1;
	note_failure((uint64_t)before, -err);
	if (dump_stream) {
		/* The program goes on; what was sent is the collector's dump
		 * (without END: incomplete).  The flusher keeps draining into
		 * nothing, so no thread waits on a full ring for ever. */
		char why[64];

		if (err == -EAGAIN)
			snprintf(why, sizeof(why), "nothing read for %d s", TA_SINK_STALL_S);
		else
			snprintf(why, sizeof(why), "%s", strerror(-err));
		ta_warn("the collector %s stopped taking the dump (chunk %" PRIu32
			" of process %d, %" PRIu64 " bytes sent): %s; the rest of this run is not "
			"recorded, the program goes on",
			dump_path, dump_seq, (int)getpid(), (uint64_t)dump_bytes, why);
		goto out;
	}
	/* The place: the chunk's number among this writer's (the seq of
	 * its header) and the offset where it began (64-bit: a dump may
	 * pass 4 GiB). */
	ta_warn("cannot write to the dump %s: chunk %" PRIu32 " of process %d at offset %" PRId64
		": %s; the rest of this run is not recorded",
		dump_path, dump_seq, (int)getpid(), (int64_t)before, strerror(-err));
out:
	pthread_mutex_unlock(&dump_lock);
	TA_GUARD_LEAVE();
	return err;
}

void ta_dump_crash_mode(void)
{
	__atomic_store_n(&crash_mode, 1, __ATOMIC_RELAXED);
}

int ta_dump_chunk(unsigned type, const void *payload, size_t len)
{
	return ta_dump_chunk_z(type, payload, len, NULL);
}

void ta_zbuf_free(struct ta_zbuf *z)
{
	free(z->p);
	z->p = NULL;
	z->cap = 0;
}

void ta_dump_close(void)
{
	pthread_mutex_lock(&dump_lock);
	if (dump_fd >= 0 && !dump_failed)
		(void)batch_write();
	batch_forget();
	if (dump_fd >= 0)
		close(dump_fd);
	dump_fd = -1;
	reserve_release();
	pthread_mutex_unlock(&dump_lock);
}

void ta_dump_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	/* The lock may have been held by another thread at fork; that thread
	 * does not exist here.  The descriptor is shared with the parent:
	 * O_APPEND keeps each one's chunks whole. */
	memcpy(&dump_lock, &fresh, sizeof(fresh));
	dump_seq = 0;
	dump_bytes = 0;
	/* What the parent held is the parent's to write. */
	batch_forget();
	/* A stream is the parent's alone: a child that wrote into it would
	 * interleave its chunks with the parent's.  The child connects anew
	 * at its restart (ta_dump_child_open) and sends a dump of its own. */
	if (dump_stream && dump_fd >= 0) {
		close(dump_fd);
		dump_fd = -1;
	}
}

int ta_dump_child_open(void)
{
	char addr[sizeof(dump_path)];

	open_why = NULL;
	if (!dump_stream)
		return 0;
	memcpy(addr, dump_path, sizeof(addr));
	return ta_dump_open(addr);
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

static uint64_t boot_start(void);
static uint64_t boot_start_of(int nf, const uint64_t f[3]);
static int self_stat(uint64_t f[3]);
static uint64_t process_start_ns(void);

/* The boot_start the image before an exec wrote, and the pid it wrote it
 * for (0: none handed over).  The kernel keeps /proc/self/stat's start
 * across exec, but qemu-user, which emulates that file, restarts with the
 * new image and gives its own start: the value is handed over with the
 * dump so that every image of a process names it alike. */
static uint64_t handed_boot_start;
static pid_t handed_pid;

/* The process's start as CLOCK_BOOTTIME's nanoseconds, and the pid it is
 * for: boot_start's clock ticks (10 ms) cannot tell apart two processes of
 * one pid started in the same tick, while no two processes given one pid
 * live at once, so a clock read while each lives differs.  Read when the
 * agent first writes for the process (a forked child's restart, a new
 * process's start) and handed over across exec with the dump. */
static uint64_t start_ns;
static pid_t start_pid;

/* Whether this process's start was handed over to it. */
static int handed_here(void)
{
	return handed_pid && handed_pid == getpid();
}

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
		 (unsigned long long)boot_start(), (unsigned long long)process_start_ns());
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
	fail_at = 0;
	fail_errno = 0;
	reserve_open(dump_path);
	/* A new writer in the file: its PROCESS chunk starts a new image of
	 * this pid (or, in a descendant, a process of its own). */
	dump_seq = 0;
	dump_bytes = 0;
	if (got >= 5 && pid == (long)getpid()) {
		handed_boot_start = bs;
		handed_pid = (pid_t)pid;
	}
	if (got == 6 && pid == (long)getpid() && sns) {
		start_ns = sns;
		start_pid = (pid_t)pid;
	}
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

uint64_t ta_dump_bytes(void)
{
	return dump_bytes;
}

int ta_dump_failed(void)
{
	return dump_failed;
}

void ta_dump_failure(uint64_t *at, int *err)
{
	*at = fail_errno ? fail_at : 0;
	*err = fail_errno;
}

int ta_dump_end_chunk(const void *payload, size_t len)
{
	return ta_dump_chunk(TA_CHUNK_END, payload, len);
}

/* ---- process and clock chunks ---------------------------------------------- */

static void dump_clock_pairs(unsigned n, const uint64_t *ticks, const uint64_t *ns)
{
	struct ta_buf b = {0};

	ta_buf_u(&b, n);
	for (unsigned i = 0; i < n; i++) {
		ta_buf_u(&b, ticks[i]);
		ta_buf_u(&b, ns[i]);
	}
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_CLOCK, b.p, b.len);
	ta_buf_free(&b);
}

void ta_dump_clock(void)
{
	uint64_t ticks, ns;

	ta_clock_pair(&ticks, &ns);
	dump_clock_pairs(1, &ticks, &ns);
}

void ta_dump_clock_since(uint64_t ticks0, uint64_t ns0)
{
	uint64_t ticks[2] = {ticks0}, ns[2] = {ns0};

	ta_clock_pair(&ticks[1], &ns[1]);
	dump_clock_pairs(2, ticks, ns);
}

/* Reads a small /proc file whole (our own, no stdio). */
static size_t read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;

	if (fd < 0)
		return 0;
	while (n < size) {
		ssize_t r = read(fd, buf + n, size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	return n;
}

/*
 * The process's start time in clock ticks after boot, /proc/self/stat's
 * field 22 (0: not known).  The kernel keeps it across exec, so it names the
 * process in the dump beyond its pid, which a long run reuses (FORMAT.md,
 * PROCESS's boot_start).  The fields after the command's name, which may
 * hold spaces and parentheses, follow its last ')': state is field 3.
 */
static uint64_t boot_start(void)
{
	uint64_t f[3];

	return boot_start_of(handed_here() ? 0 : self_stat(f), f);
}

static uint64_t process_start_ns(void)
{
	struct timespec ts;

	if (start_pid != getpid()) {
		if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0 &&
		    clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
			return 0;
		start_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		start_pid = getpid();
	}
	return start_ns;
}

/* The start handed over by the image before an exec, else field 22 of the
 * nf fields self_stat read into f. */
static uint64_t boot_start_of(int nf, const uint64_t f[3])
{
	if (handed_here())
		return handed_boot_start;
	return nf >= 1 ? f[0] : 0;
}

/* Fields 22 (the start), 48 and 49 (where the arguments are) of
 * /proc/self/stat, in f; how many were there (qemu-user's has 44). */
static int self_stat(uint64_t f[3])
{
	static const int want[3] = {22, 48, 49};
	char st[1024];
	const char *p;
	size_t n;
	int field = 2, k = 0;

	n = read_file("/proc/self/stat", st, sizeof(st) - 1);
	st[n] = 0;
	p = strrchr(st, ')');
	if (!p)
		return 0;
	for (p++; *p && k < 3; p++) {
		if (*p != ' ')
			continue;
		if (++field != want[k])
			continue;
		f[k] = 0;
		for (; p[1] >= '0' && p[1] <= '9'; p++)
			f[k] = f[k] * 10 + (uint64_t)(p[1] - '0');
		k++;
	}
	return k;
}

/*
 * /proc/self/cmdline's bytes, read from the arguments' memory ([start,
 * end), /proc/self/stat's fields 48 and 49) in one system call rather
 * than three on /proc.  The same bytes the kernel gives when the area
 * still ends with its NUL; when it does not (a program that overwrote its
 * arguments, setproctitle), or the fields are not known (0 under
 * qemu-user), or the area is larger than out, 0: read the file.
 */
static size_t cmdline_at(uint64_t start, uint64_t end, char *out, size_t size)
{
	struct iovec here = {out, (size_t)(end - start)};
	struct iovec there = {(void *)(uintptr_t)start, (size_t)(end - start)};

	if (!start || end <= start || end - start > size)
		return 0;
	/* process_vm_readv, not a plain copy: a page of it gone (unmapped
	 * by the program) is an error, not a crash. */
	if (process_vm_readv(getpid(), &here, 1, &there, 1, 0) != (ssize_t)(end - start) ||
	    out[end - start - 1] != 0)
		return 0;
	return (size_t)(end - start);
}

void ta_dump_process(void)
{
	struct ta_buf b = {0};
	char exe[4096];
	static char cmd[65536];
	size_t n, clen, argc = 0;
	uint64_t ticks, ns, f[3], boot;
	int nf = self_stat(f);

	n = ta_exe_path(exe, sizeof(exe));
	clen = nf == 3 ? cmdline_at(f[1], f[2], cmd, sizeof(cmd)) : 0;
	if (!clen)
		clen = read_file("/proc/self/cmdline", cmd, sizeof(cmd));
	boot = boot_start_of(nf, f);
	for (size_t i = 0; i < clen; i++)
		argc += cmd[i] == 0;
	if (clen && cmd[clen - 1] != 0)
		argc++; /* cut short: the last argument has no NUL */
	ta_clock_pair(&ticks, &ns);
	ta_buf_u(&b, (uint64_t)getpid());
	ta_buf_u(&b, (uint64_t)getppid());
	ta_buf_u(&b, ta_clock_realtime_ns());
	ta_buf_u(&b, ticks);
	ta_buf_u(&b, TA_CLOCK_SOURCE);
	ta_buf_u(&b, ta_clock_nominal_hz());
	ta_buf_str(&b, TA_ARCH_NAME, strlen(TA_ARCH_NAME));
	ta_buf_str(&b, exe, n);
	ta_buf_u(&b, argc);
	for (size_t i = 0; i < clen;) {
		size_t len = strnlen(cmd + i, clen - i);
		ta_buf_str(&b, cmd + i, len);
		i += len + 1;
	}
	ta_buf_u(&b, ta_cfg.block_bytes);
	ta_buf_u(&b, ta_cfg.memory_cap);
	ta_buf_u(&b, ta_cfg.flush_ms);
	ta_buf_u(&b, ta_cfg.mode);
	ta_buf_u(&b, boot);		  /* 1.7 */
	ta_buf_u(&b, process_start_ns()); /* 1.8 */
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_PROCESS, b.p, b.len);
	ta_buf_free(&b);
}
