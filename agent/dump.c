/* SPDX-License-Identifier: MIT */
/*
 * dump.c - the dump writer: the file (or the collector's stream) opened,
 * its chunks compressed, batched and written, a failed write counted.
 *
 * What else goes into the dump or decides which file it is has files of
 * its own above this one: one recording's file shared by a process tree
 * and the dump handed across exec (dump_share.c), the PROCESS and CLOCK
 * chunks (dump_process.c).  The writer's state they set is dump_int.h's.
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
#include "dump_int.h"
#include "lazylib.h"
#include "format.h"
#include "ring.h"
#include "settings.h"
#include "sink.h"
#include "addr.h"

/* A dump passes 2 GiB (and 4) in a run of minutes: offsets are 64-bit
 * (meson builds with _FILE_OFFSET_BITS=64, 32-bit systems included). */
_Static_assert(sizeof(off_t) == 8, "off_t must be 64-bit: build with _FILE_OFFSET_BITS=64");

int dump_fd = -1;
int dump_failed;
uint32_t dump_seq;
uint64_t dump_bytes;
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
char dump_path[4096];
/* The dump goes to a collector (dump_path is its address): sendmsg, no
 * file offsets, no handover across exec, a new connection per child. */
int dump_stream;
static int crash_mode; /* locks are tried, not waited on */
/*
 * An exec's END is the last chunk of its image: a reader takes a dump (or a
 * collector's stream) whose last chunk is not END for one cut short.  Yet
 * the other threads run on until the kernel ends them, which under
 * qemu-user, or a loaded machine, can be milliseconds after the END: the
 * flusher's pass, or a thread draining its full ring, would append chunks
 * after it.  From the END on (sealed, under dump_lock) they wait on
 * unsealed; their events are the ones an exec loses in any case, and the
 * END's totals do not count them.  If the exec fails, the writers go on and
 * a later END follows.
 */
static int sealed; /* written under dump_lock; read without it by ta_dump_sealed, a hint */
static __thread int sealed_here __attribute__((tls_model("initial-exec")));
static pthread_cond_t unsealed = PTHREAD_COND_INITIALIZER;
/* The function events of the EVENTS chunks handed to the dump (written or
 * not: a failed write makes the END incomplete).  Added under dump_lock,
 * read without it (a crash's END cannot wait for it): relaxed, the
 * ordering is the lock's, taken by ta_dump_seal before an exec's END. */
static uint64_t dump_events;
/* The first failed write: the offset (or, for a stream, the bytes sent)
 * where the chunk not written began, and its errno; for END (1.8). */
uint64_t dump_fail_at;
int dump_fail_errno;

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

void ta_dump_reserve_open(const char *path)
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
	if (dump_fail_errno)
		return;
	dump_fail_at = at;
	dump_fail_errno = err > 0 ? err : EIO;
}

/* Compression scratch for chunks written without one of their own,
 * used under dump_lock. */
static struct ta_zbuf shared_z;

/*
 * A batch: the small chunks written while it is on (the start's process
 * description, the exit's last ones) go to the file in one write rather
 * than one each (a short run writes a score of them, three system calls
 * each).
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

int ta_dump_write_all(int fd, const void *p, size_t n)
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
		return ta_sink_send(
		    dump_fd, iov, 2,
		    __atomic_load_n(&crash_mode, __ATOMIC_RELAXED) ? NULL : ta_dump_up.stalled);
	do
		w = writev(dump_fd, iov, 2);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	if ((size_t)w == total)
		return 0;
	if ((size_t)w < TA_CHUNK_HEADER_SIZE) {
		int err = ta_dump_write_all(dump_fd, hdr + w, TA_CHUNK_HEADER_SIZE - (size_t)w);
		if (err < 0)
			return err;
		w = TA_CHUNK_HEADER_SIZE;
	}
	return ta_dump_write_all(dump_fd,
				 (const uint8_t *)payload + ((size_t)w - TA_CHUNK_HEADER_SIZE),
				 total - (size_t)w);
}

/* What the last failed open could not say with an errno. */
const char *dump_open_why;

const char *ta_dump_open_why(void)
{
	return dump_open_why;
}

int ta_dump_open(const char *path)
{
	uint8_t hdr[TA_FILE_HEADER_SIZE];
	int fd, err, stream = ta_addr_is_stream(path);

	dump_open_why = NULL;
	/* O_EXCL|O_NOFOLLOW: never follow a planted symlink, never overwrite
	 * a file that is there (possibly someone else's). */
	if (stream)
		fd = ta_sink_connect(path, &dump_open_why);
	else
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC,
			  0600);
	if (fd < 0)
		return stream ? fd : -errno;
	ta_file_header_encode(hdr, (uint32_t)getpid());
	if (stream) {
		struct iovec iov = {hdr, sizeof(hdr)};
		err = ta_sink_send(fd, &iov, 1, NULL);
	} else {
		err = ta_dump_write_all(fd, hdr, sizeof(hdr));
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
	dump_fail_at = 0;
	dump_fail_errno = 0;
	dump_seq = 0;
	dump_bytes = sizeof(hdr);
	if (!stream)
		ta_dump_reserve_open(path);
	return 0;
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
	err = ta_dump_write_all(dump_fd, batch.p, batch.len);
	if (err < 0) {
		/* ta_dump_write_all stopped at an error: what reached the file is
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

static int dump_chunk(unsigned type, const void *payload, size_t len, struct ta_zbuf *z,
		      uint64_t events)
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
	while (__atomic_load_n(&sealed, __ATOMIC_RELAXED) && !sealed_here) {
		/* A crash must not wait: the process dies of it. */
		if (__atomic_load_n(&crash_mode, __ATOMIC_RELAXED)) {
			err = -EBUSY;
			goto out;
		}
		pthread_cond_wait(&unsealed, &dump_lock);
	}
	__atomic_add_fetch(&dump_events, events, __ATOMIC_RELAXED);
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

int ta_dump_chunk_z(unsigned type, const void *payload, size_t len, struct ta_zbuf *z)
{
	return dump_chunk(type, payload, len, z, 0);
}

int ta_dump_events_chunk(const void *payload, size_t len, struct ta_zbuf *z, uint64_t events)
{
	return dump_chunk(TA_CHUNK_EVENTS, payload, len, z, events);
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
	pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;

	/* The lock may have been held by another thread at fork; that thread
	 * does not exist here.  The descriptor is shared with the parent:
	 * O_APPEND keeps each one's chunks whole. */
	memcpy(&dump_lock, &fresh, sizeof(fresh));
	/* Not sealed: the thread that sealed it (an exec that failed since,
	 * or one under way in the parent) is not here. */
	memcpy(&unsealed, &fresh_cond, sizeof(fresh_cond));
	sealed = 0;
	sealed_here = 0;
	__atomic_store_n(&dump_events, 0, __ATOMIC_RELAXED);
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

	dump_open_why = NULL;
	if (!dump_stream)
		return 0;
	memcpy(addr, dump_path, sizeof(addr));
	return ta_dump_open(addr);
}

/* ---- what was written ------------------------------------------------------ */

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
	*at = dump_fail_errno ? dump_fail_at : 0;
	*err = dump_fail_errno;
}

int ta_dump_end_chunk(const void *payload, size_t len)
{
	return ta_dump_chunk(TA_CHUNK_END, payload, len);
}

void ta_dump_seal(void)
{
	pthread_mutex_lock(&dump_lock);
	__atomic_store_n(&sealed, 1, __ATOMIC_RELAXED);
	sealed_here = 1;
	pthread_mutex_unlock(&dump_lock);
}

int ta_dump_sealed(void)
{
	return __atomic_load_n(&sealed, __ATOMIC_RELAXED);
}

uint64_t ta_dump_events(void)
{
	return __atomic_load_n(&dump_events, __ATOMIC_RELAXED);
}

void ta_dump_events_forget(void)
{
	__atomic_store_n(&dump_events, 0, __ATOMIC_RELAXED);
}

void ta_dump_unseal(void)
{
	if (!sealed_here)
		return;
	pthread_mutex_lock(&dump_lock);
	__atomic_store_n(&sealed, 0, __ATOMIC_RELAXED);
	sealed_here = 0;
	pthread_cond_broadcast(&unsealed);
	pthread_mutex_unlock(&dump_lock);
}
