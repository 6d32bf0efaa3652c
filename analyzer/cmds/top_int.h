/* SPDX-License-Identifier: MIT */
/*
 * top_int.h - what `traceagent top`'s two files share: top.c (options,
 * the terminal, rows, the screen, the loop) and top_source.c (where the
 * bytes come from: a dump followed, a program run, a stream served or
 * asked of a process).
 */
#ifndef TA_TOP_INT_H
#define TA_TOP_INT_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

#include "live.h"

#define READ_SIZE     (1u << 20)
#define READ_PASS_MAX (64u << 20) /* bytes read before looking at the clock and keys */

enum src_kind { SRC_DUMP, SRC_PROG, SRC_SERVE, SRC_PID };

/* Sort columns, in the order of the screen's columns. */
enum col { COL_CALLS, COL_SELF, COL_CALLS_ALL, COL_SELF_ALL, COL_NAME, NCOLS };

struct options {
	uint64_t interval_ns;
	int batch;
	uint64_t count; /* snapshots; 0: no end */
	uint64_t top;
	enum col sort;
	enum src_kind kind;
	const char *dump;
	const char *serve;
	const char *keep; /* -o */
	long pid;
	char **argv;  /* the program's */
	int demangle; /* symbols.h's enum ta_demangle: simple unless asked */
};

/* Where the bytes come from. */
struct source {
	enum src_kind kind;
	int fd;	 /* the dump file or the stream's socket; -1 while there is none */
	int lfd; /* --serve's listening socket until a client came */
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char dir[PATH_MAX]; /* -- PROG's private directory */
	char path[PATH_MAX + 16];
	pid_t child;
	int child_status, child_done;
	int eof;		  /* a socket's stream ended */
	int bad;		  /* the stream went bad: shown, no longer read */
	char why[PATH_MAX + 400]; /* why it ended, for the screen and stderr */
	uint64_t offset;	  /* bytes read */
};

/* top_source.c: each opens its source (the options' dump, program, --serve
 * address or pid) in s: 0, or -1 after printing why.  screen: the terminal
 * is top's, so the program gets none of it. */
int ta_top_open_dump(struct source *s, const char *path);
int ta_top_start_prog(struct source *s, const struct options *o, int screen);
int ta_top_listen_on(struct source *s, const char *addr);
int ta_top_ask_stream(struct source *s, long pid);
void ta_top_source_close(struct source *s);
/* Reads what there is now (up to READ_PASS_MAX bytes, through buf of
 * READ_SIZE) into L: 1 when bytes came, 0 when none, -1 when the stream
 * went bad (said in s->why). */
int ta_top_source_pump(struct source *s, struct ta_live *L, uint8_t *buf);

#endif
