/* SPDX-License-Identifier: MIT */
/*
 * serve_ch.c - serve's dumps into ClickHouse (serve_ch.h).
 *
 * A child process per dump rather than a thread: the walk of a hostile
 * dump, or an insert that waits on ClickHouse for long, never holds up
 * serve's clients nor takes serve down, and its memory goes with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chsink.h"
#include "grow.h"
#include "serve_ch.h"

/* After a failure, a dump waits 5 s, doubled each time up to 5 min. */
#define RETRY_FIRST_MS 5000
#define RETRY_MAX_MS   300000

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	fputs("traceagent serve: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ta_chq_init(struct ta_chq *q, const char *url, const char *creds, const char *dir)
{
	struct ta_ch_url u;
	struct ta_ch_auth a;
	const char *why;
	char err[600];
	ssize_t n;

	memset(q, 0, sizeof(*q));
	q->url = url;
	q->creds = creds;
	q->dir = dir;
	q->out_fd = -1;
	if (ta_ch_url_parse(url, &u, &why) < 0) {
		fprintf(stderr, "traceagent serve: --clickhouse: '%s' %s\n", url, why);
		return 2;
	}
	if (creds && ta_ch_auth_load(creds, &a, err, sizeof(err)) < 0) {
		fprintf(stderr, "traceagent serve: --clickhouse-credentials %s\n", err);
		return 2;
	}
	memset(&a, 0, sizeof(a));
	n = readlink("/proc/self/exe", q->exe, sizeof(q->exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "traceagent serve: --clickhouse: cannot find its own program: %s\n",
			strerror(errno));
		return 2;
	}
	q->exe[n] = 0;
	return 0;
}

void ta_chq_add(struct ta_chq *q, const char *file, const char *host)
{
	struct ta_chq_item *it;

	if (q->n >= TA_CHQ_MAX) {
		say("%s/%s not queued for ClickHouse (%d dumps wait already): traceagent export "
		    "--format=clickhouse inserts it",
		    q->dir, file, TA_CHQ_MAX);
		return;
	}
	it = ta_vec_reserve(q->items, q->n + 1, &q->cap, sizeof(*q->items), 16);
	if (!it) {
		say("%s/%s not queued for ClickHouse: out of memory", q->dir, file);
		return;
	}
	q->items = it;
	it = &q->items[q->n++];
	memset(it, 0, sizeof(*it));
	snprintf(it->file, sizeof(it->file), "%s", file);
	snprintf(it->host, sizeof(it->host), "%s", host);
}

static void start(struct ta_chq *q, size_t i)
{
	char path[PATH_MAX + 300], rec[256];
	const char *argv[16];
	int fds[2], k = 0;
	size_t n;
	pid_t pid;

	q->running = q->items[i];
	memmove(&q->items[i], &q->items[i + 1], (q->n - i - 1) * sizeof(*q->items));
	q->n--;
	snprintf(path, sizeof(path), "%s/%s", q->dir, q->running.file);
	n = strlen(q->running.file);
	if (n > 6 && !strcmp(q->running.file + n - 6, ".trace"))
		n -= 6;
	snprintf(rec, sizeof(rec), "%.*s", (int)n, q->running.file);
	argv[k++] = "traceagent";
	argv[k++] = "export";
	argv[k++] = "--format=clickhouse";
	argv[k++] = "--host";
	argv[k++] = q->running.host;
	argv[k++] = "--recording";
	argv[k++] = rec;
	if (q->creds) {
		argv[k++] = "--clickhouse-credentials";
		argv[k++] = q->creds;
	}
	argv[k++] = "--";
	argv[k++] = q->url;
	argv[k++] = path;
	argv[k] = NULL;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		q->child = -1;
		snprintf(q->last, sizeof(q->last), "cannot make a pipe: %s", strerror(errno));
		return;
	}
	q->last[0] = 0;
	q->part_len = 0;
	pid = fork();
	if (pid == 0) {
		sigset_t none;
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

		/* serve's signals blocked for its ppoll: not the export's. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		char *const *av;
		const char **pa = argv;

		/* execv's argv is char *const[]: the strings are not written. */
		memcpy(&av, &pa, sizeof(av));
		execv(q->exe, av);
		_exit(127);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		q->child = -1;
		snprintf(q->last, sizeof(q->last), "cannot start an export: %s", strerror(errno));
		return;
	}
	q->child = pid;
	q->out_fd = fds[0];
	fcntl(q->out_fd, F_SETFL, O_NONBLOCK);
}

/* The export's output, its last whole line kept; the pipe drained each
 * turn, so the export never waits on it for long. */
static void drain(struct ta_chq *q)
{
	char buf[4096];
	ssize_t r;

	while (q->out_fd >= 0 && (r = read(q->out_fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] == '\n') {
				q->part[q->part_len] = 0;
				if (q->part_len)
					memcpy(q->last, q->part, q->part_len + 1);
				q->part_len = 0;
			} else if (q->part_len < sizeof(q->part) - 1) {
				q->part[q->part_len++] = buf[i];
			}
		}
	}
}

/* What the export came to: inserted, or back in the queue for later. */
static void ended(struct ta_chq *q, int status, int64_t now)
{
	static const char prefix[] = "traceagent export: ";
	const char *line = q->last;
	struct ta_chq_item *it;
	int64_t wait;

	if (!strncmp(line, prefix, sizeof(prefix) - 1))
		line += sizeof(prefix) - 1;
	if (status == 0 || status == 1) {
		if (q->down)
			say("ClickHouse at %s takes dumps again", q->url);
		q->down = 0;
		say("%s%s", line,
		    status ? " (a damaged or incomplete dump: its readable rows)" : "");
		return;
	}
	if (status == 2) {
		say("%s/%s not inserted into ClickHouse: %s", q->dir, q->running.file,
		    *line ? line : "it cannot be read");
		return;
	}
	/* Down, refusing, or the export died: later, whatever it was. */
	if (!q->down)
		say("ClickHouse at %s cannot take dumps now (%s); they stay in %s and are tried "
		    "again later",
		    q->url, *line ? line : "the export failed", q->dir);
	q->down = 1;
	q->running.tries++;
	wait = (int64_t)RETRY_FIRST_MS << (q->running.tries < 7 ? q->running.tries - 1 : 6);
	if (wait > RETRY_MAX_MS)
		wait = RETRY_MAX_MS;
	q->running.due_ms = now + wait;
	it = ta_vec_reserve(q->items, q->n + 1, &q->cap, sizeof(*q->items), 16);
	if (!it) {
		say("%s/%s not queued again for ClickHouse: out of memory", q->dir,
		    q->running.file);
		return;
	}
	q->items = it;
	q->items[q->n++] = q->running;
}

static int reap(struct ta_chq *q, int block, int64_t now)
{
	int st, status;
	pid_t r;

	if (q->child < 0) {
		q->child = 0;
		ended(q, 3, now);
		return 1;
	}
	if (!q->child)
		return 0;
	drain(q);
	do
		r = waitpid(q->child, &st, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 0;
	drain(q);
	if (q->part_len) {
		q->part[q->part_len] = 0;
		memcpy(q->last, q->part, q->part_len + 1);
	}
	close(q->out_fd);
	q->out_fd = -1;
	q->child = 0;
	status = r > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : 3;
	if (r > 0 && WIFSIGNALED(st))
		snprintf(q->last, sizeof(q->last), "the export died of signal %d", WTERMSIG(st));
	ended(q, status, now);
	return 1;
}

void ta_chq_tick(struct ta_chq *q, int64_t now)
{
	reap(q, 0, now);
	if (q->child)
		return;
	for (size_t i = 0; i < q->n; i++)
		if (q->items[i].due_ms <= now) {
			start(q, i);
			return;
		}
}

void ta_chq_finish(struct ta_chq *q, int all)
{
	if (q->child) {
		/* Blocking, but the export's own waits are bounded. */
		while (q->child > 0 && !reap(q, 0, now_ms())) {
			struct timespec t = {0, 20 * 1000000};

			nanosleep(&t, NULL);
		}
		reap(q, 1, now_ms());
	}
	if (all) {
		/* Once each, now: a script's serve --once ends with its dump in. */
		size_t left = q->n;

		for (size_t k = 0; k < left && q->n; k++) {
			start(q, 0);
			reap(q, 1, now_ms());
			if (q->down)
				break;
		}
	}
	for (size_t i = 0; i < q->n; i++)
		say("%s/%s not inserted into ClickHouse: traceagent export "
		    "--format=clickhouse %s %s/%s inserts it",
		    q->dir, q->items[i].file, q->url, q->dir, q->items[i].file);
	free(q->items);
	q->items = NULL;
	q->n = 0;
}
