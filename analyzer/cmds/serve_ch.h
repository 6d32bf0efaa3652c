/* SPDX-License-Identifier: MIT */
/*
 * serve_ch.h - `traceagent serve --clickhouse URL` (serve_ch.c): each dump
 * a connection wrote, once it is closed, inserted into ClickHouse by a
 * child `traceagent export --format=clickhouse`, one at a time, off serve's
 * loop; a dump ClickHouse cannot take now stays queued (the file is there
 * whatever happens) and is tried again later.
 */
#ifndef TA_SERVE_CH_H
#define TA_SERVE_CH_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

/* Dumps waiting at most; past it a dump is said and left to be exported
 * by hand (its file is there). */
#define TA_CHQ_MAX 10000

struct ta_chq_item {
	char file[256]; /* in dir */
	char host[64];
	unsigned tries;
	int64_t due_ms;
};

struct ta_chq {
	const char *url, *creds, *dir;
	char exe[PATH_MAX];
	struct ta_chq_item *items;
	size_t n, cap;
	pid_t child; /* the export running, or 0 */
	struct ta_chq_item running;
	int out_fd;	/* its stdout and stderr */
	char last[512]; /* its last line */
	char part[512]; /* the line it is writing */
	size_t part_len;
	int down; /* ClickHouse failed last: said once until it is back */
};

/* 0, or 2 after a message (a bad URL, unreadable credentials). */
int ta_chq_init(struct ta_chq *q, const char *url, const char *creds, const char *dir);
/* A closed dump, file in dir, sent by host. */
void ta_chq_add(struct ta_chq *q, const char *file, const char *host);
/* The child's end, and the next dump due: each turn of serve's loop. */
void ta_chq_tick(struct ta_chq *q, int64_t now_ms);
/* serve's end: the running export waited for; with all, every dump left
 * tried once (--once), else (a signal) each named in one line. */
void ta_chq_finish(struct ta_chq *q, int all);

#endif
