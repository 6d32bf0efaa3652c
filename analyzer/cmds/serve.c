/* SPDX-License-Identifier: MIT */
/*
 * serve.c - `traceagent serve`: a collector that many traced processes
 * stream their dumps to (TRACEAGENT_OUTPUT=tcp://HOST:PORT or unix:PATH),
 * each written to its own dump in a directory.
 *
 * One thread, one poll loop: a client is read when it has bytes and its
 * bytes go through serve_conn.c (checked, written, counted).  Whatever a
 * client sends, it costs bounded memory (serve.h), and one that sends what
 * is no dump, stops in the middle of a chunk, or passes the quota is cut
 * off with one line; the others go on.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "cmdopts.h"
#include "commands.h"
#include "serve.h"
#include "serve_auth.h"
#include "serve_ch.h"

#define DEFAULT_LISTEN	    "127.0.0.1:7070"
#define DEFAULT_MAX_CLIENTS 64
#define DEFAULT_TIMEOUT_S   10
/* One read per client per turn of the loop, shared by all: a busy client
 * does not starve the others. */
#define READ_SIZE (256u << 10)

struct client {
	int fd;
	char peer[80];
	int64_t last_ms; /* the last bytes received */
	struct ta_sv_conn conn;
	struct ta_sv_auth auth;
};

struct options {
	const char *listen, *dir, *token_file, *clickhouse, *ch_creds;
	uint64_t max_clients, quota, timeout_s;
	int once;
};

static volatile sig_atomic_t stop_sig;
/* --clickhouse: where the closed dumps go next, or NULL. */
static struct ta_chq *chq;

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: traceagent serve [--listen ADDR] [--dir DIR] [--max-clients N]\n"
	    "                        [--quota SIZE] [--timeout SECONDS] [--once]\n"
	    "                        [--token-file FILE] [--clickhouse URL\n"
	    "                        [--clickhouse-credentials FILE]]\n"
	    "\n"
	    "Collects the dumps traced programs stream to it (TRACEAGENT_OUTPUT=tcp://HOST:PORT\n"
	    "or unix:PATH, record -o the same): each connection is written to its own dump in\n"
	    "DIR, named HOST-PROGRAM-PID-YYYYmmddTHHMMSS.trace (its start, UTC; never\n"
	    "overwritten: -2, -3... added).  One line per connection when it ends: who, what,\n"
	    "events, threads, bytes, complete or incomplete (why), the dump.\n"
	    "\n"
	    "  --listen ADDR       HOST:PORT (tcp:// optional; [IPv6]:PORT) or unix:PATH;\n"
	    "                      default " DEFAULT_LISTEN " (port 0: any free one)\n"
	    "  --dir DIR           where the dumps go (default .)\n"
	    "  --max-clients N     connections at once (default %d); more are refused\n"
	    "  --quota SIZE        bytes per dump at most (K/M/G); a client past it is cut off\n"
	    "                      and its dump keeps its whole chunks\n"
	    "  --timeout SECONDS   a client that stops in the middle of a chunk (or before its\n"
	    "                      first) for this long is cut off (default %d); one idle\n"
	    "                      between chunks is a quiet program and is kept\n"
	    "  --once              exit after the first client ends\n"
	    "  --token-file FILE   clients prove they hold the secret in FILE (an HMAC of a\n"
	    "                      nonce; the agent's TRACEAGENT_TOKEN=FILE, record\n"
	    "                      --token-file) before their dump, or are refused; required\n"
	    "                      to listen on an address other than loopback\n"
	    "  --clickhouse URL    each dump, once closed, also inserted into ClickHouse's\n"
	    "                      tables at URL (http://HOST[:PORT][/?SETTINGS]; as traceagent\n"
	    "                      export --format=clickhouse); one that ClickHouse cannot\n"
	    "                      take is kept and tried again later\n"
	    "  --clickhouse-credentials FILE\n"
	    "                      ClickHouse's user=NAME and password=SECRET lines\n"
	    "\n"
	    "SIGTERM or SIGINT: the open dumps are closed (incomplete: no END) and serve\n"
	    "exits 0.  Exit status 2: bad options, or the address cannot be listened on.\n",
	    DEFAULT_MAX_CLIENTS, DEFAULT_TIMEOUT_S);
}

enum {
	O_LISTEN = TA_OPT_OWN,
	O_DIR,
	O_MAX_CLIENTS,
	O_QUOTA,
	O_TIMEOUT,
	O_ONCE,
	O_TOKEN,
	O_CH,
	O_CH_CREDS
};

static const struct ta_opt serve_opts[] = {
    {"--listen", TA_ARG_EITHER, O_LISTEN},
    {"--dir", TA_ARG_EITHER, O_DIR},
    {"--max-clients", TA_ARG_EITHER, O_MAX_CLIENTS},
    {"--quota", TA_ARG_EITHER, O_QUOTA},
    {"--timeout", TA_ARG_EITHER, O_TIMEOUT},
    {"--once", TA_ARG_NONE, O_ONCE},
    {"--token-file", TA_ARG_EITHER, O_TOKEN},		     /* serve_auth.c */
    {"--clickhouse", TA_ARG_EITHER, O_CH},		     /* serve_ch.c */
    {"--clickhouse-credentials", TA_ARG_EITHER, O_CH_CREDS}, /* serve_ch.c */
    {NULL, TA_ARG_NONE, 0},
};

/* "4096", "64K", "1M", "2G"; 0 or -1. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	if (*s < '0' || *s > '9')
		return -1;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end || v == 0 || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	struct ta_opts p;
	int id;

	memset(o, 0, sizeof(*o));
	o->listen = DEFAULT_LISTEN;
	o->dir = ".";
	o->max_clients = DEFAULT_MAX_CLIENTS;
	o->timeout_s = DEFAULT_TIMEOUT_S;
	ta_opts_init(&p, "serve", serve_opts, usage, argc, argv);
	while ((id = ta_opts_next(&p)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case TA_OPT_ARG:
			ta_usage_error("serve", "unexpected argument '%s'", p.arg);
			return 2;
		case O_LISTEN:
			o->listen = p.val;
			break;
		case O_DIR:
			o->dir = p.val;
			break;
		case O_MAX_CLIENTS:
			if (ta_opts_u64(&p, "is not a number of clients from 1 to 10000",
					&o->max_clients))
				return 2;
			if (o->max_clients < 1 || o->max_clients > 10000)
				return ta_opts_bad(&p,
						   "is not a number of clients from 1 to 10000");
			break;
		case O_QUOTA:
			if (parse_size(p.val, &o->quota) < 0)
				return ta_opts_bad(&p, "is not a size above 0 (4096, 64K, 1M, 2G)");
			break;
		case O_TIMEOUT:
			if (ta_opts_u64(&p, "is not a number of seconds from 1 to 86400",
					&o->timeout_s))
				return 2;
			if (o->timeout_s < 1 || o->timeout_s > 86400)
				return ta_opts_bad(&p,
						   "is not a number of seconds from 1 to 86400");
			break;
		case O_ONCE:
			o->once = 1;
			break;
		case O_TOKEN:
			o->token_file = p.val;
			break;
		case O_CH:
			o->clickhouse = p.val;
			break;
		case O_CH_CREDS:
			o->ch_creds = p.val;
			break;
		}
	}
	return -1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_stop(int sig)
{
	stop_sig = sig;
}

/* ---- listening ------------------------------------------------------------- */

/* The socket serve listens on, its address said in *said; -1 after a
 * message. */
static int listen_on(const char *spec, char *said, size_t size, char *unix_path, size_t upsize)
{
	struct ta_addr a;
	const char *why;
	int fd, one = 1;

	if (ta_addr_parse(spec, 1, &a, &why) < 0) {
		fprintf(stderr, "traceagent serve: --listen: '%s' %s\n", spec, why);
		return -1;
	}
	if (a.kind == TA_ADDR_UNIX) {
		struct sockaddr_un un;
		struct stat st;

		memset(&un, 0, sizeof(un));
		un.sun_family = AF_UNIX;
		memcpy(un.sun_path, a.path, strlen(a.path) + 1);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			fprintf(stderr, "traceagent serve: socket: %s\n", strerror(errno));
			return -1;
		}
		/* A socket left by a serve that died is replaced; nothing else. */
		if (lstat(a.path, &st) == 0 && S_ISSOCK(st.st_mode) &&
		    connect(fd, (struct sockaddr *)&un, sizeof(un)) < 0 && errno == ECONNREFUSED)
			unlink(a.path);
		if (bind(fd, (struct sockaddr *)&un, sizeof(un)) < 0 || listen(fd, 128) < 0) {
			fprintf(stderr, "traceagent serve: cannot listen on unix:%s: %s\n", a.path,
				strerror(errno));
			close(fd);
			return -1;
		}
		snprintf(said, size, "unix:%s", a.path);
		snprintf(unix_path, upsize, "%s", a.path);
		return fd;
	}
	{
		struct addrinfo hints, *res, *ai;
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char host[NI_MAXHOST], port[NI_MAXSERV];
		int r, err = 0;

		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
		r = getaddrinfo(a.host, a.port, &hints, &res);
		if (r != 0) {
			fprintf(stderr, "traceagent serve: --listen: '%s': %s\n", spec,
				r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
			return -1;
		}
		fd = -1;
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				    ai->ai_protocol);
			if (fd < 0) {
				err = errno;
				continue;
			}
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0)
				break;
			err = errno;
			close(fd);
			fd = -1;
		}
		freeaddrinfo(res);
		if (fd < 0) {
			fprintf(stderr, "traceagent serve: cannot listen on %s: %s\n", spec,
				strerror(err));
			return -1;
		}
		/* Port 0 is any free one: say which. */
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
		    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port, sizeof(port),
				NI_NUMERICHOST | NI_NUMERICSERV) == 0)
			snprintf(said, size,
				 ss.ss_family == AF_INET6 ? "tcp://[%s]:%s" : "tcp://%s:%s", host,
				 port);
		else
			snprintf(said, size, "%.*s", (int)(size - 1), spec);
		return fd;
	}
}

/* Who the peer is, for the lines, and the host its dumps are named by:
 * this host's name for a local peer, else its address. */
static void describe_peer(int fd, char *peer, size_t psize, char *host, size_t hsize)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[NI_MAXHOST], p[NI_MAXSERV];
	int local = 1;

	snprintf(peer, psize, "local");
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family != AF_UNIX &&
	    getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p, sizeof(p),
			NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
		snprintf(peer, psize, ss.ss_family == AF_INET6 ? "[%.60s]:%s" : "%.60s:%s", h, p);
		if (ss.ss_family == AF_INET)
			local = (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
		else if (ss.ss_family == AF_INET6) {
			struct in6_addr *a6 = &((struct sockaddr_in6 *)&ss)->sin6_addr;
			local = IN6_IS_ADDR_LOOPBACK(a6) ||
				(IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
		}
		if (!local)
			snprintf(host, hsize, "%.*s", (int)(hsize - 1), h);
	}
	if (local && gethostname(host, hsize) < 0)
		snprintf(host, hsize, "localhost");
	host[hsize - 1] = 0;
}

/* ---- clients ------------------------------------------------------------------ */

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

/* The client's one line, and its end. */
static void finish(struct client *c, const char *dir, const char *why)
{
	struct ta_sv_conn *k = &c->conn;
	char status[300];
	uint64_t threads;
	int complete;

	if (why)
		ta_sv_conn_cut(k, why);
	complete = ta_sv_conn_close(k);
	if (complete)
		snprintf(status, sizeof(status), "complete");
	else if (k->cut)
		snprintf(status, sizeof(status), "incomplete (cut off: %s)", k->why);
	else if (!ta_stream_at_boundary(&k->st))
		snprintf(status, sizeof(status),
			 "incomplete (closed in the middle of a chunk; kept up to byte %" PRIu64
			 ")",
			 k->written);
	else
		snprintf(status, sizeof(status), "incomplete (closed without END)");
	threads = ta_sv_conn_threads(k);
	if (k->file[0])
		say("%s %s pid %" PRIu64 ": %" PRIu64 "%s events, %" PRIu64 " thread%s, %" PRIu64
		    " bytes, %s, %s/%s",
		    c->peer, k->prog, k->pid, ta_sv_conn_events(k),
		    k->events_unknown && !k->last_end ? "+" : "", threads, threads == 1 ? "" : "s",
		    k->written + k->cut_bytes, status, dir, k->file);
	else
		say("%s: %" PRIu64 " bytes, %s, no dump written", c->peer, k->written, status);
	if (chq && k->file[0])
		ta_chq_add(chq, k->file, k->host);
	ta_sv_conn_free(k);
	close(c->fd);
	c->fd = -1;
}

int ta_cmd_serve(int argc, char **argv)
{
	struct options o;
	struct client *clients;
	struct pollfd *pfd;
	char said[300], unix_path[108] = "";
	struct sigaction sa;
	sigset_t block, old;
	struct ta_chq q;
	uint8_t *buf, token[TA_AUTH_TOKEN_MAX], nonce[TA_AUTH_NONCE_SIZE] = {0};
	size_t n = 0, token_len = 0;
	uint64_t refused = 0;
	int r, lfd, dir_fd, ended = 0;

	r = parse_args(argc, argv, &o);
	if (r >= 0)
		return r;
	if (o.token_file && ta_sv_token_load(o.token_file, token, &token_len) < 0)
		return 2;
	if (o.ch_creds && !o.clickhouse) {
		ta_usage_error("serve", "--clickhouse-credentials goes with --clickhouse");
		return 2;
	}
	if (o.clickhouse && (r = ta_chq_init(&q, o.clickhouse, o.ch_creds, o.dir)) != 0)
		return r;
	if (o.clickhouse)
		chq = &q;
	dir_fd = open(o.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		fprintf(stderr, "traceagent serve: --dir %s: %s\n", o.dir, strerror(errno));
		return 2;
	}
	clients = calloc(o.max_clients, sizeof(*clients));
	pfd = calloc(o.max_clients + 1, sizeof(*pfd));
	buf = malloc(READ_SIZE);
	if (!clients || !pfd || !buf) {
		fprintf(stderr, "traceagent serve: out of memory\n");
		return 1;
	}
	lfd = listen_on(o.listen, said, sizeof(said), unix_path, sizeof(unix_path));
	if (lfd < 0)
		return 2;
	if (!o.token_file && !ta_sv_listen_is_local(lfd)) {
		fprintf(stderr,
			"traceagent serve: %s is not loopback: anyone who reaches it could send "
			"dumps; give --token-file FILE (a shared secret) to listen there\n",
			said);
		return 2;
	}

	/* The signals wait outside ppoll, so none falls between the check
	 * and the wait. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);

	fprintf(stderr, "traceagent serve: listening on %s, dumps in %s\n", said, o.dir);
	while (!stop_sig && !(o.once && ended)) {
		struct timespec tick = {0, 250 * 1000000};
		int64_t now;
		size_t np = 0;

		pfd[np++] = (struct pollfd){lfd, POLLIN, 0};
		for (size_t i = 0; i < n; i++)
			pfd[np++] = (struct pollfd){clients[i].fd, POLLIN, 0};
		r = ppoll(pfd, np, &tick, &old);
		if (r < 0 && errno != EINTR) {
			fprintf(stderr, "traceagent serve: poll: %s\n", strerror(errno));
			break;
		}
		now = now_ms();
		if (chq)
			ta_chq_tick(chq, now);
		/* Clients first (their slots in pfd match while n is unchanged). */
		for (size_t i = 0; r > 0 && i < n; i++) {
			struct client *c = &clients[i];
			ssize_t got;

			if (!(pfd[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			got = read(c->fd, buf, READ_SIZE);
			if (got < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (got > 0) {
				c->last_ms = now;
				r = ta_sv_client_feed(&c->auth, &c->conn, c->fd, buf, (size_t)got);
				if (r == 0)
					continue;
				if (r == TA_SV_REFUSED) {
					say("%s refused (%" PRIu64 " refused so far): %s", c->peer,
					    ++refused, c->auth.why);
					ta_sv_conn_free(&c->conn);
					close(c->fd);
					c->fd = -1;
					continue;
				}
				finish(c, o.dir, NULL);
			} else {
				finish(c, o.dir,
				       got < 0 && errno != ECONNRESET ? strerror(errno) : NULL);
			}
			ended = 1;
		}
		/* Stalled clients. */
		for (size_t i = 0; i < n; i++) {
			struct client *c = &clients[i];
			char why[80];

			if (c->fd < 0 || !ta_sv_conn_midway(&c->conn) ||
			    now - c->last_ms < (int64_t)o.timeout_s * 1000)
				continue;
			snprintf(
			    why, sizeof(why), "stalled: nothing for %" PRIu64 " s %s", o.timeout_s,
			    !c->conn.named ? "before its first chunk" : "in the middle of a chunk");
			finish(c, o.dir, why);
			ended = 1;
		}
		/* The ended go. */
		for (size_t i = 0; i < n;) {
			if (clients[i].fd < 0)
				clients[i] = clients[--n];
			else
				i++;
		}
		if (r > 0 && (pfd[0].revents & POLLIN)) {
			/* A bounded number per round: a flood of connections
			 * does not keep the clients waiting. */
			for (int a = 0; a < 256; a++) {
				char peer[80], host[64];
				int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

				if (cfd < 0)
					break;
				describe_peer(cfd, peer, sizeof(peer), host, sizeof(host));
				if (n >= o.max_clients) {
					say("%s refused: %" PRIu64
					    " clients connected already (--max-clients)",
					    peer, o.max_clients);
					close(cfd);
					continue;
				}
				clients[n].fd = cfd;
				clients[n].last_ms = now;
				snprintf(clients[n].peer, sizeof(clients[n].peer), "%s", peer);
				ta_sv_conn_init(&clients[n].conn, dir_fd, host, o.quota);
				if (token_len && ta_sv_nonce(nonce) < 0) {
					say("%s refused: no random nonce: %s", peer,
					    strerror(errno));
					ta_sv_conn_free(&clients[n].conn);
					close(cfd);
					continue;
				}
				ta_sv_auth_init(&clients[n].auth, token_len ? token : NULL,
						token_len, nonce);
				n++;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		finish(&clients[i], o.dir, stop_sig ? "serve stopped" : "serve ended (--once)");
	if (chq)
		ta_chq_finish(chq, !stop_sig);
	close(lfd);
	if (unix_path[0])
		unlink(unix_path);
	close(dir_fd);
	free(clients);
	free(pfd);
	free(buf);
	return 0;
}
