/* SPDX-License-Identifier: MIT */
/*
 * record.c - `traceagent record`: run a program with the agent preloaded.
 *
 * The loader finds libtraceagent.so, puts it in LD_PRELOAD, turns its
 * options into the agent's TRACEAGENT_* settings, and runs the program as a
 * child.  It stays out of the way: the child inherits the standard streams,
 * signals meant for the program are passed on, and the loader exits the way
 * the program did, so `traceagent record prog` can stand in for `prog` in a
 * script.  Like a shell, it answers 127 for a program it cannot find and 126
 * for one it cannot run; its own failures are 125 and usage errors 2.
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
#include "auth.h"
#include "cmdopts.h"
#include "commands.h"
#include "common.h"
#include "format.h"
#include "grow.h"
#include "ta_config.h"
#include "launch.h"
#include "values.h"

struct record_opts {
	const char *output;	  /* -o, or NULL */
	const char *buffer;	  /* --buffer, or NULL */
	const char *memory;	  /* --memory, or NULL */
	const char *flush_ms;	  /* --flush-ms, or NULL */
	const char *mode;	  /* --mode, or NULL */
	const char *libcalls;	  /* --libcalls, or NULL */
	const char *patch;	  /* --patch, or NULL */
	const char *channels;	  /* --channels, or NULL */
	const char *filter;	  /* --filter, or NULL */
	const char *exclude;	  /* --exclude, or NULL */
	const char *depth;	  /* --depth, or NULL */
	const char *min_duration; /* --min-duration, or NULL */
	int no_symbols;		  /* --no-symbols */
	const char *args;	  /* --args, or NULL */
	const char *retval;	  /* --retval, or NULL */
	const char *auto_args;	  /* --auto-args, or NULL */
	const char *keep;	  /* --keep, or NULL */
	char **argv;		  /* the program and its arguments */
	const char *token_file;	  /* --token-file, or NULL */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent record [-o FILE] [--buffer SIZE] [--memory SIZE]\n"
		   "                         [--flush-ms N] [--mode lossless|drop|flight]\n"
		   "                         [--libcalls all|none|CLASS,...] [--patch PATTERNS]\n"
		   "                         [--channels LIST] [--filter PATTERNS]\n"
		   "                         [--exclude PATTERNS] [--depth N]\n"
		   "                         [--min-duration TIME] [--no-symbols]\n"
		   "                         [--token-file FILE] [--args SPECS]\n"
		   "                         [--retval PATTERNS] [--auto-args PATTERNS]\n"
		   "                         [--keep slow-frames:BUDGET[,before=K][,set=NAME]]\n"
		   "                         [--] PROG [ARGS...]\n"
		   "\n"
		   "Runs PROG with libtraceagent.so preloaded; the program must be built with\n"
		   "-finstrument-functions (or its functions named by --patch, or its library\n"
		   "calls asked for with --libcalls) and be dynamically linked.\n"
		   "\n"
		   "  -o, --output FILE   the dump (an existing file is replaced; %%p = pid,\n"
		   "                      %%%% = %%), or a collector: tcp://HOST:PORT,\n"
		   "                      unix:PATH (see traceagent serve)\n"
		   "                      default $TRACEAGENT_OUTPUT, else traceagent.<pid>.trace\n"
		   "  --buffer SIZE       per-thread block size (K/M), TRACEAGENT_BUFFER\n"
		   "  --memory SIZE       cap on all ring blocks (K/M/G), TRACEAGENT_MEMORY\n"
		   "  --flush-ms N        flush interval in ms, TRACEAGENT_FLUSH_MS\n"
		   "  --mode MODE         lossless (default: threads wait at the memory cap),\n"
		   "                      drop (never wait; drops are counted) or flight (keep\n"
		   "                      each thread's newest events, written at the end, on a\n"
		   "                      crash or on a signal), TRACEAGENT_MODE\n"
		   "  --libcalls LIST     library calls recorded as zones: all, none, or classes\n"
		   "                      among alloc, lock, io, sleep (comma-separated),\n"
		   "                      TRACEAGENT_LIBCALLS\n"
		   "  --patch PATTERNS    patch these functions' entries at load (x86-64):\n"
		   "                      [!][MODULE:]GLOB, comma-separated, TRACEAGENT_PATCH\n"
		   "  --channels LIST     the channels on at the start: all, -all, NAME, -NAME\n"
		   "                      in order (a list starting with a name: only those),\n"
		   "                      TRACEAGENT_CHANNELS\n"
		   "  --filter PATTERNS   record only these functions and what they call;\n"
		   "                      !GLOB: not this function nor what it calls\n"
		   "                      ([!][MODULE:]GLOB, comma-separated), TRACEAGENT_FILTER\n"
		   "  --exclude PATTERNS  not these functions' own events (their callees are\n"
		   "                      recorded), TRACEAGENT_EXCLUDE\n"
		   "  --depth N           nothing deeper than N recorded frames a thread,\n"
		   "                      TRACEAGENT_DEPTH\n"
		   "  --min-duration TIME calls shorter than TIME (500ns, 10us, 2ms, 1s; a bare\n"
		   "                      number is ns) left out, TRACEAGENT_MIN_DURATION\n"
		   "  --no-symbols        the traced modules' symbols not stored in the dump\n"
		   "                      (a smaller dump, named only where the binaries are),\n"
		   "                      TRACEAGENT_SYMBOLS=off\n"
		   "  --token-file FILE   the secret a collector with --token-file asks for\n"
		   "                      (only an HMAC of it is sent), TRACEAGENT_TOKEN=FILE\n"
		   "  --args SPECS        record these functions' arguments (patching them):\n"
		   "                      PATTERN@arg1,arg2/s,fparg1[;...], formats /d /u /x\n"
		   "                      /s /c /f /p /e with sizes (/d32), TRACEAGENT_ARGS\n"
		   "  --retval PATTERNS   record their return values: PATTERN[/FORMAT][;...],\n"
		   "                      TRACEAGENT_RETVAL\n"
		   "  --auto-args PATTERNS the arguments and return values of the program's\n"
		   "                      functions matching these globs (comma-separated),\n"
		   "                      their types read from its DWARF, TRACEAGENT_AUTO_ARGS\n"
		   "  --keep slow-frames:BUDGET[,before=K][,set=NAME]\n"
		   "                      keep only the frames of set NAME (default the first\n"
		   "                      marked) longer than BUDGET (16.7ms, 500us) and the K\n"
		   "                      frames before each (default 1), every thread's events\n"
		   "                      in them; the rest is let go, TRACEAGENT_KEEP\n"
		   "\n"
		   "The agent library is $TRACEAGENT_LIB if set.  The exit status is the\n"
		   "program's; 127: not found, 126: cannot be run, 125: the loader failed,\n"
		   "2: bad usage or a bad option value (checked before the program runs).\n");
}

enum {
	O_OUTPUT = TA_OPT_OWN,
	O_BUFFER,
	O_MEMORY,
	O_FLUSH_MS,
	O_MODE,
	O_LIBCALLS,
	O_PATCH,
	O_CHANNELS,
	O_FILTER,
	O_EXCLUDE,
	O_DEPTH,
	O_MIN_DURATION,
	O_NO_SYMBOLS,
	O_TOKEN_FILE,
	O_ARGS,
	O_RETVAL,
	O_AUTO_ARGS,
	O_KEEP
};

static const struct ta_opt record_opts[] = {
    {"-o", TA_ARG_NEXT, O_OUTPUT},
    {"--output", TA_ARG_EITHER, O_OUTPUT},
    {"--buffer", TA_ARG_EITHER, O_BUFFER},
    {"--memory", TA_ARG_EITHER, O_MEMORY},
    {"--flush-ms", TA_ARG_EITHER, O_FLUSH_MS},
    {"--mode", TA_ARG_EITHER, O_MODE},
    {"--libcalls", TA_ARG_EITHER, O_LIBCALLS},
    {"--patch", TA_ARG_EITHER, O_PATCH},
    {"--channels", TA_ARG_EITHER, O_CHANNELS},
    {"--filter", TA_ARG_EITHER, O_FILTER},
    {"--exclude", TA_ARG_EITHER, O_EXCLUDE},
    {"--depth", TA_ARG_EITHER, O_DEPTH},
    {"--min-duration", TA_ARG_EITHER, O_MIN_DURATION},
    {"--no-symbols", TA_ARG_NONE, O_NO_SYMBOLS},
    {"--token-file", TA_ARG_EITHER, O_TOKEN_FILE},
    {"--args", TA_ARG_EITHER, O_ARGS},
    {"--retval", TA_ARG_EITHER, O_RETVAL},
    {"--auto-args", TA_ARG_EITHER, O_AUTO_ARGS},
    {"--keep", TA_ARG_EITHER, O_KEEP},
    {NULL, TA_ARG_NONE, 0},
};

/* ---- checking the values ------------------------------------------------ */

/* Whether s is a whole number from lo to hi. */
static int is_number(const char *s, unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	return !errno && !*end && v >= lo && v <= hi;
}

/* A token file the agent could not read: said before the program runs. */
static int check_token(const char *path)
{
	uint8_t tok[TA_AUTH_TOKEN_MAX];
	size_t len;
	int err = ta_auth_read_token(path, tok, &len);

	if (err == 0)
		return 0;
	fprintf(stderr, "traceagent record: --token-file=%s: %s\n", path,
		err == -EINVAL	? "the file is empty"
		: err == -EFBIG ? "more than 4096 bytes: not a token file"
				: strerror(-err));
	return -1;
}

/* Whether s is what agent/keep.c's ta_keep_parse takes. */
static int keep_spec_ok(const char *s)
{
	static const char head[] = "slow-frames:";
	char buf[256], *save = NULL, *tok;
	uint64_t ns;

	if (strncmp(s, head, sizeof(head) - 1) || strlen(s) >= sizeof(buf))
		return 0;
	strcpy(buf, s + sizeof(head) - 1);
	tok = strtok_r(buf, ",", &save);
	if (!tok || ta_parse_time(tok, &ns) < 0 || !ns)
		return 0;
	while ((tok = strtok_r(NULL, ",", &save)) != NULL) {
		if (!strncmp(tok, "before=", 7)
			? !is_number(tok + 7, 0, 64)
			: strncmp(tok, "set=", 4) || !tok[4] || strlen(tok + 4) >= 128)
			return 0;
	}
	return 1;
}

/* The values the agent would otherwise warn about and replace: a usage
 * error here, named by the option, before the program starts.  The
 * ranges are the agent's (agent/settings.c). */
static int check_values(const struct record_opts *o)
{
	uint64_t v;

	if (o->buffer && (ta_parse_size(o->buffer, &v) < 0 || v < 4096 || v > (64u << 20))) {
		fprintf(
		    stderr,
		    "traceagent record: --buffer=%s: not a size from 4K to 64M (like 64K or 1M)\n",
		    o->buffer);
		return EXIT_USAGE;
	}
	if (o->memory && (ta_parse_size(o->memory, &v) < 0 || v < (1u << 20) || v > (1ull << 40))) {
		fprintf(stderr,
			"traceagent record: --memory=%s: not a size from 1M to 1024G (like 64M or "
			"1G)\n",
			o->memory);
		return EXIT_USAGE;
	}
	if (o->flush_ms && !is_number(o->flush_ms, 1, 60000)) {
		fprintf(stderr,
			"traceagent record: --flush-ms=%s: not a number of milliseconds from 1 to "
			"60000 (like 100)\n",
			o->flush_ms);
		return EXIT_USAGE;
	}
	if (o->mode && strcmp(o->mode, "lossless") && strcmp(o->mode, "drop") &&
	    strcmp(o->mode, "flight")) {
		fprintf(stderr, "traceagent record: --mode=%s: not lossless, drop or flight\n",
			o->mode);
		return EXIT_USAGE;
	}
	if (o->depth && !is_number(o->depth, 1, 65536)) {
		fprintf(stderr,
			"traceagent record: --depth=%s: not a number of frames from 1 to 65536 "
			"(like 10)\n",
			o->depth);
		return EXIT_USAGE;
	}
	if (o->token_file && check_token(o->token_file) < 0)
		return EXIT_USAGE;
	if (o->keep && !keep_spec_ok(o->keep)) {
		fprintf(
		    stderr,
		    "traceagent record: --keep=%s: not slow-frames:BUDGET[,before=K][,set=NAME] "
		    "(BUDGET a duration like 16.7ms, K from 0 to 64)\n",
		    o->keep);
		return EXIT_USAGE;
	}
	if (o->min_duration && ta_parse_duration(o->min_duration, &v) < 0) {
		fprintf(stderr,
			"traceagent record: --min-duration=%s: not a duration (like 500ns, 10us, "
			"2ms or 1s; a bare number is ns)\n",
			o->min_duration);
		return EXIT_USAGE;
	}
	return 0;
}

/* 0 with *o filled, or an exit status (0 for --help). */
static int parse_args(int argc, char **argv, struct record_opts *o, int *done)
{
	/* By id - O_OUTPUT: every option is a string the agent checks. */
	const char **value[] = {&o->output, &o->buffer,	  &o->memory, &o->flush_ms,
				&o->mode,   &o->libcalls, &o->patch,  &o->channels,
				&o->filter, &o->exclude,  &o->depth,  &o->min_duration};
	struct ta_opts p;
	int id;

	*done = 0;
	memset(o, 0, sizeof(*o));
	/* Options stop at the first word that is not one, so the program's own
	 * options are never taken for ours. */
	ta_opts_init(&p, "record", record_opts, usage, argc, argv);
	p.flags = TA_OPTS_LEADING;
	while ((id = ta_opts_next(&p)) != TA_OPT_END) {
		if (id == TA_OPT_EXIT) {
			*done = !p.status;
			return p.status;
		}
		if (id == O_NO_SYMBOLS)
			o->no_symbols = 1;
		else if (id == O_TOKEN_FILE)
			o->token_file = p.val;
		else if (id == O_ARGS)
			o->args = p.val;
		else if (id == O_RETVAL)
			o->retval = p.val;
		else if (id == O_AUTO_ARGS)
			o->auto_args = p.val;
		else if (id == O_KEEP)
			o->keep = p.val;
		else
			*value[id - O_OUTPUT] = p.val;
	}
	if (p.i >= argc) {
		ta_usage_error("record", "no program to run");
		return EXIT_USAGE;
	}
	o->argv = argv + p.i;
	return check_values(o);
}

/* ---- running the child ---------------------------------------------------- */

static const int forwarded[] = {
    SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH, SIGCONT,
};
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig, siginfo_t *info, void *uc)
{
	int saved = errno;

	(void)uc;
	/*
	 * A signal the kernel sent from the terminal (^C, ^\, a resize, a
	 * hangup) went to the whole foreground process group, which the child
	 * is part of: passing it on would deliver it twice.
	 */
	if (child_pid > 0 && info->si_code != SI_KERNEL)
		kill((pid_t)child_pid, sig);
	errno = saved;
}

/* Dies of sig as the child did, so our parent sees the same status. */
static void die_of_signal(int sig)
{
	struct rlimit no_core = {0, 0};
	sigset_t set;

	/* The child already dumped core if it was going to; one is enough. */
	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	exit(128 + sig);
}

/* What the child tells the loader before its exec. */
struct prepared {
	uint8_t stale;	 /* a file was at the dump path: the agent refuses it */
	uint8_t created; /* the loader's child created the recording's file */
	uint64_t dev, ino;
};

/* A recording's id: random, never 0. */
static uint32_t new_recording(void)
{
	uint32_t r = 0;
	struct timespec ts;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r) || !r) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = (uint32_t)ts.tv_nsec * 2654435761u ^ (uint32_t)getpid();
	}
	return r ? r : 1;
}

/*
 * A dump named without %p is one recording, every process of the
 * program's tree in it: the file is created here (with its file header),
 * and named to the agents by TRACEAGENT_DUMP_FILE as agent/dump.c's
 * ta_dump_share does, so that processes that do not descend from the first
 * one to start the agent (the children of an uninstrumented make) join it
 * too.  0, or -1 when it could not be created (the agent then tries, and
 * says why).
 */
static int create_recording(const char *pattern, const char *path, struct prepared *pr)
{
	uint8_t hdr[TA_FILE_HEADER_SIZE];
	char abs[PATH_MAX], cwd[PATH_MAX], token[PATH_MAX + 64];
	uint64_t id = 0xcbf29ce484222325ull;
	struct stat st;
	uint32_t rec;
	int fd, n;

	if (path[0] == '/')
		snprintf(abs, sizeof(abs), "%s", path);
	else if (!getcwd(cwd, sizeof(cwd)) ||
		 (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, path) >= sizeof(abs))
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	/* The agent's file header: the program's pid (this process's) and
	 * the recording's id, which the agents check before they append. */
	rec = new_recording();
	ta_file_header_encode_rec(hdr, (uint32_t)getpid(), rec);
	/* The agent's id of the setting (agent/settings.c's output_id). */
	for (const char *c = pattern; *c; c++)
		id = (id ^ (uint8_t)*c) * 0x100000001b3ull;
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) || fstat(fd, &st) < 0)
		goto fail;
	n = snprintf(token, sizeof(token), "%llu:%llu:%016llx:%08x:%s",
		     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		     (unsigned long long)id, (unsigned)rec, abs);
	if (n < 0 || (size_t)n >= sizeof(token) || setenv("TRACEAGENT_DUMP_FILE", token, 1) < 0)
		goto fail;
	close(fd);
	pr->created = 1;
	pr->dev = (uint64_t)st.st_dev;
	pr->ino = (uint64_t)st.st_ino;
	return 0;
fail:
	close(fd);
	unlink(path);
	return -1;
}

/*
 * In the child, between fork and exec: replace an existing dump at -o,
 * create the recording's file when it is one for every process, then
 * report through the pipe whether a file was at the dump path (the agent
 * will then refuse to write, and the loader must not claim the file as
 * this run's dump) and the file made here.
 */
static void child_prepare(const char *pattern, int explicit_output, int report_fd)
{
	struct prepared pr = {0};
	char path[PATH_MAX];
	struct stat st;

	/* An inherited token names some other recording's file. */
	unsetenv("TRACEAGENT_DUMP_FILE");
	/* A collector's address (tcp://, unix:) is no file to replace or
	 * look at: the collector names its dumps. */
	if (!ta_addr_is_stream(pattern)) {
		ta_output_path(pattern, (long)getpid(), path, sizeof(path));
		if (explicit_output && lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    unlink(path) < 0)
			fprintf(stderr, "traceagent: cannot replace %s: %s\n", path,
				strerror(errno));
		pr.stale = lstat(path, &st) == 0 ? 1 : 0;
		if (!pr.stale && !ta_addr_names_pid(pattern))
			(void)create_recording(pattern, path, &pr);
	}
	/* Below PIPE_BUF: one write, whole. */
	while (write(report_fd, &pr, sizeof(pr)) < 0 && errno == EINTR)
		;
}

/* ---- what became of the dumps ------------------------------------------- */

/*
 * The pipe the agents of the program and its descendants tell when they
 * start (agent.c's tell_loader): its read end, kept here, is reached by
 * path, /proc/OUR-PID/fd/N, so the program inherits no descriptor.
 * Returns the read end, or -1 (the loader then cannot tell a program that
 * ran no instrumented code from an agent that failed and said so).
 */
static int notify_open(void)
{
	char path[64];
	int p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	close(p[1]);
	/* Read once the program is done: room for 128K starts (8 bytes
	 * each) where the system allows it, else the default 64 KiB. */
	(void)fcntl(p[0], F_SETPIPE_SZ, 1 << 20);
	snprintf(path, sizeof(path), "/proc/%ld/fd/%d", (long)getpid(), p[0]);
	if (access(path, W_OK) < 0 || ta_rec_set_env("TRACEAGENT_RECORD_NOTIFY", path) < 0) {
		close(p[0]);
		return -1;
	}
	return p[0];
}

struct started {
	int self;     /* the program's own process started the agent (or said why not) */
	int any;      /* some process started it */
	size_t n;     /* other processes that started it: */
	pid_t *child; /* their pids, sorted, each once (NULL without memory) */
};

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Reads the agents' records: pid, then 1 when it started (0: it could not,
 * and said why itself). */
static void notify_read(int fd, pid_t pid, struct started *st)
{
	size_t cap = 0, k = 0;
	uint32_t rec[2];

	memset(st, 0, sizeof(*st));
	while (read(fd, rec, sizeof(rec)) == (ssize_t)sizeof(rec)) {
		pid_t *v;

		st->any |= rec[1] == 1;
		if ((pid_t)rec[0] == pid) {
			st->self = 1;
			continue;
		}
		if (!rec[1])
			continue;
		v = ta_vec_reserve(st->child, st->n + 1, &cap, sizeof(*v), 16);
		if (!v)
			continue;
		st->child = v;
		st->child[st->n++] = (pid_t)rec[0];
	}
	/* An exec'd image starts again under the same pid. */
	if (st->n)
		qsort(st->child, st->n, sizeof(*st->child), pid_cmp);
	for (size_t i = 0; i < st->n; i++)
		if (!k || st->child[k - 1] != st->child[i])
			st->child[k++] = st->child[i];
	st->n = k;
}

/*
 * The dumps of the program's descendants that started the agent (with %p
 * in the output, one each), comma-separated in names; how many.
 */
static size_t child_dumps(const char *output, const struct started *st, char **names)
{
	char path[PATH_MAX];
	size_t len = 0, cap = 0, named = 0;

	*names = NULL;
	if (ta_addr_is_stream(output))
		return 0;
	for (size_t i = 0; i < st->n; i++) {
		size_t add;
		char *v;

		ta_output_path(output, (long)st->child[i], path, sizeof(path));
		if (access(path, F_OK) < 0)
			continue;
		add = strlen(path) + 2;
		v = ta_vec_reserve(*names, len + add + 1, &cap, 1, 256);
		if (!v)
			break;
		*names = v;
		len += (size_t)sprintf(*names + len, "%s%s", named ? ", " : "", path);
		named++;
	}
	return named;
}

/*
 * The line for a program whose own process never started the agent: it
 * wrote no dump, and says why.  The loader speaks for the program it ran:
 * its children's agents speak for themselves, but a dump they wrote is
 * named here, since the program's own is missing.
 */
static void say_no_dump(const struct record_opts *o, const char *output, const struct started *st)
{
	const char *prog = o->argv[0];
	char *names;

	if (child_dumps(output, st, &names)) {
		fprintf(stderr,
			"traceagent: %s ran no instrumented code; processes it started wrote %s\n",
			prog, names);
		free(names);
		return;
	}
	if (o->patch) {
		/* Its agent starts at the first function patched. */
		fprintf(stderr,
			"traceagent: %s ran no instrumented code and --patch=%s patched none of "
			"its functions: no dump written\n",
			prog, o->patch);
		return;
	}
	if (o->libcalls && strcmp(o->libcalls, "none")) {
		fprintf(
		    stderr,
		    "traceagent: %s ran no instrumented code and made no library call of those "
		    "recorded (%s): no dump written (build with -finstrument-functions, or trace "
		    "its functions with --patch)\n",
		    prog, o->libcalls);
		return;
	}
	fprintf(stderr,
		"traceagent: %s ran no instrumented code: no dump written (build with "
		"-finstrument-functions, or trace its functions with --patch, or its library "
		"calls with --libcalls)\n",
		prog);
}

/*
 * The recording's file the loader made, once the program is done: kept
 * when an agent wrote to it, else removed (a file header alone is no dump)
 * if it is still the one made.  Whether it is kept.
 */
static int recording_kept(const char *path, const struct prepared *pr, const struct started *st,
			  int notified)
{
	struct stat s;

	if (lstat(path, &s) < 0 || (uint64_t)s.st_dev != pr->dev || (uint64_t)s.st_ino != pr->ino)
		return 0;
	if (s.st_size > TA_FILE_HEADER_SIZE || (notified && st->any))
		return 1;
	unlink(path);
	return 0;
}

/* ---- whether the program's dump is whole ------------------------------------ */

/* What the chunk headers of a dump say of one process's last image. */
struct outcome {
	int seen;	    /* a chunk of the pid */
	int has_end;	    /* its last image ended with END */
	uint64_t end_flags; /* END's flags, and its 1.8 trailing fields */
	uint64_t failed_at, failed_errno;
	uint32_t next_seq; /* the seq after its last image's last chunk */
	int torn;	   /* the file ends in the middle of a chunk */
};

static void parse_end(const uint8_t *p, size_t len, struct outcome *oc)
{
	struct ta_reader r;
	uint64_t v, n;

	ta_reader_init(&r, p, len);
	for (int i = 0; i < 6; i++)
		ta_get_varint(&r, &v);
	oc->end_flags = v;
	oc->failed_at = oc->failed_errno = 0;
	/* Lost by cause, reserve_blocks, signal, then the failed write. */
	if (r.p < r.end && ta_get_varint(&r, &n) == 0)
		for (uint64_t i = 0; i < n && !r.err; i++)
			ta_get_varint(&r, &v);
	if (r.p < r.end)
		ta_get_varint(&r, &v);
	if (r.p < r.end)
		ta_get_varint(&r, &v);
	if (r.p < r.end && ta_get_varint(&r, &oc->failed_at) == 0)
		ta_get_varint(&r, &oc->failed_errno);
	if (r.err)
		oc->failed_at = oc->failed_errno = 0;
}

/* Walks the chunk headers (one pread each: a dump of gigabytes has a few
 * thousand chunks), up to a damaged or torn one. */
static void dump_outcome(int fd, pid_t pid, struct outcome *oc)
{
	uint8_t hdr[TA_CHUNK_HEADER_SIZE], end[512];
	struct stat st;
	off_t off = TA_FILE_HEADER_SIZE;

	memset(oc, 0, sizeof(*oc));
	if (fstat(fd, &st) < 0)
		return;
	while (off + TA_CHUNK_HEADER_SIZE <= st.st_size) {
		struct ta_chunk_header h;

		if (pread(fd, hdr, sizeof(hdr), off) != (ssize_t)sizeof(hdr) ||
		    ta_chunk_header_decode(hdr, &h) < 0 ||
		    off + TA_CHUNK_HEADER_SIZE + (off_t)h.stored_size > st.st_size)
			break;
		if (h.pid == (uint32_t)pid && h.type != TA_CHUNK_CUT) {
			oc->seen = 1;
			if (h.type == TA_CHUNK_PROCESS)
				oc->has_end = 0;
			oc->next_seq = h.seq + 1;
			if (h.type == TA_CHUNK_END) {
				oc->has_end = 1;
				oc->end_flags = 0;
				oc->failed_at = oc->failed_errno = 0;
				if (!(h.flags & TA_CHUNK_F_LZ4) && h.stored_size <= sizeof(end) &&
				    pread(fd, end, h.stored_size, off + TA_CHUNK_HEADER_SIZE) ==
					(ssize_t)h.stored_size &&
				    ta_chunk_verify(hdr, &h, end) == 0)
					parse_end(end, h.stored_size, oc);
			}
		}
		off += TA_CHUNK_HEADER_SIZE + (off_t)h.stored_size;
	}
	oc->torn = off != st.st_size;
}

/* A CUT chunk (format.h) for a process killed before its agent wrote
 * END: the dump then says why it stops, for every reader. */
static int append_cut(int fd, pid_t pid, uint32_t seq, int sig)
{
	uint8_t buf[TA_CUT_CHUNK_SIZE(0)];
	size_t n =
	    ta_cut_chunk_encode(buf, (uint32_t)pid, seq, TA_CUT_KILLED, (uint64_t)sig, NULL, 0);

	return write(fd, buf, n) == (ssize_t)n ? 0 : -1;
}

/* The line for the program's dump at path: written whole, or incomplete
 * and why (its END says a write failed; killed before the agent could
 * write END, as the wait status says, which a CUT chunk then records). */
static void say_dump(const char *path, pid_t pid, int status)
{
	int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	struct outcome oc;

	if (fd < 0) {
		fprintf(stderr, "traceagent: dump written to %s\n", path);
		return;
	}
	dump_outcome(fd, pid, &oc);
	if (!oc.seen) {
		/* Not the program's own (its agent wrote nothing): its
		 * descendants' dumps say for themselves. */
		fprintf(stderr, "traceagent: dump written to %s\n", path);
	} else if (oc.has_end && (oc.end_flags & TA_END_F_INCOMPLETE) &&
		   oc.failed_errno == ENOSPC) {
		fprintf(
		    stderr,
		    "traceagent: incomplete dump written to %s: the disk was full at byte %" PRIu64
		    "; the rest of the run is not in it\n",
		    path, oc.failed_at);
	} else if (oc.has_end && (oc.end_flags & TA_END_F_INCOMPLETE) && oc.failed_errno) {
		fprintf(stderr,
			"traceagent: incomplete dump written to %s: the agent could not write from "
			"byte %" PRIu64 " on (%s)\n",
			path, oc.failed_at, strerror((int)oc.failed_errno));
	} else if (oc.has_end && (oc.end_flags & TA_END_F_INCOMPLETE)) {
		fprintf(stderr,
			"traceagent: incomplete dump written to %s: the agent could not write all "
			"of its data\n",
			path);
	} else if (oc.has_end) {
		fprintf(stderr, "traceagent: dump written to %s\n", path);
	} else if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		/* Not after a torn chunk: a reader would not find it there. */
		int noted = !oc.torn && append_cut(fd, pid, oc.next_seq, sig) == 0;

		fprintf(
		    stderr,
		    "traceagent: incomplete dump written to %s: the program was killed by signal "
		    "%d (%s) before the agent could end it%s\n",
		    path, sig, ta_signal_name(sig), noted ? "" : " (not recorded in the dump)");
	} else {
		fprintf(stderr,
			"traceagent: incomplete dump written to %s: it has no end (the agent could "
			"not finish it)\n",
			path);
	}
	close(fd);
}

static int run(const struct record_opts *o, const char *prog_path, const char *output,
	       int explicit_output)
{
	struct sigaction old_act[NFORWARDED], act;
	sigset_t block, old_mask;
	int report[2], status, installed[NFORWARDED], notify;
	struct started started = {0};
	struct prepared pr = {0};
	char path[PATH_MAX];
	pid_t pid;
	ssize_t n;

	if (pipe2(report, O_CLOEXEC) < 0) {
		fprintf(stderr, "traceagent: pipe: %s\n", strerror(errno));
		return EXIT_LOADER;
	}
	notify = notify_open();

	/* Signals wait until child_pid is known (A), so none is lost. */
	sigemptyset(&block);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaddset(&block, forwarded[i]);
	sigprocmask(SIG_BLOCK, &block, &old_mask);

	memset(&act, 0, sizeof(act));
	act.sa_sigaction = forward_signal;
	act.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&act.sa_mask);
	for (size_t i = 0; i < NFORWARDED; i++) {
		sigaction(forwarded[i], NULL, &old_act[i]);
		/* A signal ignored by whoever started us (nohup, a background
		 * job) stays ignored, for us and the child alike. */
		installed[i] = old_act[i].sa_handler != SIG_IGN;
		if (installed[i])
			sigaction(forwarded[i], &act, NULL);
	}

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "traceagent: fork: %s\n", strerror(errno));
		return EXIT_LOADER;
	}
	if (pid == 0) {
		int err;

		for (size_t i = 0; i < NFORWARDED; i++)
			if (installed[i])
				sigaction(forwarded[i], &old_act[i], NULL);
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		close(report[0]);
		child_prepare(output, explicit_output, report[1]);
		execv(prog_path, o->argv);
		err = errno;
		fprintf(stderr, "traceagent: %s: %s\n", o->argv[0], strerror(err));
		_exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
	}
	child_pid = pid;
	sigprocmask(SIG_SETMASK, &old_mask, NULL); /* (A) */

	/* The pipe closes at exec (or at the child's exit when exec fails). */
	close(report[1]);
	do
		n = read(report[0], &pr, sizeof(pr));
	while (n < 0 && errno == EINTR);
	close(report[0]);

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "traceagent: waitpid: %s\n", strerror(errno));
			return EXIT_LOADER;
		}
	}
	child_pid = 0;

	ta_output_path(output, (long)pid, path, sizeof(path));
	if (notify >= 0) {
		notify_read(notify, pid, &started);
		close(notify);
	}
	if (n == (ssize_t)sizeof(pr) && pr.created) {
		/* One file for the program and every descendant. */
		if (recording_kept(path, &pr, &started, notify >= 0))
			say_dump(path, pid, status);
		else if (notify >= 0 && !started.self)
			say_no_dump(o, output, &started);
	} else if (n == (ssize_t)sizeof(pr) && !pr.stale && !ta_addr_is_stream(output) &&
		   access(path, F_OK) == 0) {
		char *names;

		/* One dump a process (%p): every one written. */
		if (child_dumps(output, &started, &names))
			fprintf(stderr, "traceagent: dumps written to %s, %s\n", path, names);
		else
			say_dump(path, pid, status);
		free(names);
	} else if (n == (ssize_t)sizeof(pr) && notify >= 0 && !started.self) {
		say_no_dump(o, output, &started);
	}
	free(started.child);

	if (WIFSIGNALED(status))
		die_of_signal(WTERMSIG(status));
	return WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_LOADER;
}

int ta_cmd_record(int argc, char **argv)
{
	char agent[PATH_MAX], prog_path[PATH_MAX];
	struct record_opts o;
	const char *output;
	int r, done;

	r = parse_args(argc, argv, &o, &done);
	if (r || done)
		return r;
	r = ta_rec_resolve_program(o.argv[0], prog_path, sizeof(prog_path));
	if (r)
		return r;
	r = ta_rec_check_program(o.argv[0], prog_path);
	if (r)
		return r;
	if (ta_record_find_agent(agent) < 0 || ta_record_set_preload(agent) < 0)
		return EXIT_LOADER;

	/* Without -o, a TRACEAGENT_OUTPUT already in the environment stands. */
	output = o.output;
	if (!output) {
		output = getenv("TRACEAGENT_OUTPUT");
		if (!output || !*output)
			output = TA_DEFAULT_OUTPUT;
	}
	if (!*output) {
		fprintf(stderr, "traceagent record: empty output path\n");
		return EXIT_USAGE;
	}
	if (ta_rec_set_env("TRACEAGENT_OUTPUT", output) < 0 ||
	    (o.buffer && ta_rec_set_env("TRACEAGENT_BUFFER", o.buffer) < 0) ||
	    (o.memory && ta_rec_set_env("TRACEAGENT_MEMORY", o.memory) < 0) ||
	    (o.flush_ms && ta_rec_set_env("TRACEAGENT_FLUSH_MS", o.flush_ms) < 0) ||
	    (o.mode && ta_rec_set_env("TRACEAGENT_MODE", o.mode) < 0) ||
	    (o.libcalls && ta_rec_set_env("TRACEAGENT_LIBCALLS", o.libcalls) < 0) ||
	    (o.channels && ta_rec_set_env("TRACEAGENT_CHANNELS", o.channels) < 0) ||
	    (o.patch && ta_rec_set_env("TRACEAGENT_PATCH", o.patch) < 0) ||
	    (o.filter && ta_rec_set_env("TRACEAGENT_FILTER", o.filter) < 0) ||
	    (o.exclude && ta_rec_set_env("TRACEAGENT_EXCLUDE", o.exclude) < 0) ||
	    (o.depth && ta_rec_set_env("TRACEAGENT_DEPTH", o.depth) < 0) ||
	    (o.min_duration && ta_rec_set_env("TRACEAGENT_MIN_DURATION", o.min_duration) < 0) ||
	    (o.no_symbols && ta_rec_set_env("TRACEAGENT_SYMBOLS", "off") < 0) ||
	    (o.token_file && ta_rec_set_env("TRACEAGENT_TOKEN", o.token_file) < 0) ||

	    (o.keep && ta_rec_set_env("TRACEAGENT_KEEP", o.keep) < 0))
		return EXIT_LOADER;
	r = ta_record_args_env(prog_path, o.args, o.retval, o.auto_args);
	if (r)
		return r;
	return run(&o, prog_path, output, o.output != NULL);
}
