/* SPDX-License-Identifier: MIT */
/*
 * dump_int.h - what the dump's files share, and nothing outside them
 * includes: the writer's state (dump.c), which dump_share.c sets when it
 * joins or creates a recording's file or adopts one handed over across
 * exec, and the process's start (dump_process.c), which the handover
 * carries.  The calls go down: dump_share.c to dump.c and dump_process.c,
 * dump_process.c to dump.c.
 */
#ifndef TA_DUMP_INT_H
#define TA_DUMP_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- the writer (dump.c) ---- */

extern int dump_fd;	    /* -1: none */
extern int dump_failed;	    /* a write failed: closed for writing */
extern uint32_t dump_seq;   /* the next chunk's sequence number */
extern uint64_t dump_bytes; /* bytes written since the file was taken */
extern char dump_path[4096];
/* The dump goes to a collector (dump_path is its address). */
extern int dump_stream;
/* The first failed write's place and errno, for END (1.8). */
extern uint64_t dump_fail_at;
extern int dump_fail_errno;
/* What the last failed open could not say with an errno. */
extern const char *dump_open_why;

/* Writes n bytes at p to fd, finishing short writes: 0 or -errno. */
int ta_dump_write_all(int fd, const void *p, size_t n);
/* Keeps a page of the file system of path, given back for END when a
 * write fails (the disk full). */
void ta_dump_reserve_open(const char *path);

/* ---- the process's start (dump_process.c) ---- */

/* /proc/self/stat's start in clock ticks after boot (0: not known), or
 * the one handed over for this pid. */
uint64_t ta_dump_boot_start(void);
/* The process's start as CLOCK_BOOTTIME's nanoseconds, read once a pid. */
uint64_t ta_dump_start_ns(void);
/* What the image before an exec handed over for pid. */
void ta_dump_handed_boot_start(pid_t pid, uint64_t boot_start);
void ta_dump_handed_start_ns(pid_t pid, uint64_t ns);

#endif
