/* SPDX-License-Identifier: MIT */
/*
 * attacher.c - `traceagent attach PID`: traces a running process for a while
 * and leaves it as it was.
 *
 * A process that runs the agent already (its control socket answers) is
 * driven through the socket: `attach` (resume), then `detach` (pause and
 * flush).  Any other is injected: one thread is stopped with ptrace, made
 * to call dlopen(agent) and ta_attach_start(settings) on its own stack
 * below the red zone, and given back its registers exactly (a system call
 * it was in restarts as the kernel restarts it after a signal); then the
 * socket as above.  x86-64 and aarch64: the little that differs (the
 * registers, the calling convention, how a system call is restarted) is
 * in the architecture layer below.
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
#include "cmdopts.h"
#include "commands.h"
#include "ctlsock.h"
#include "launch.h"

static volatile sig_atomic_t stop_now;

static void on_stop(int sig)
{
	(void)sig;
	stop_now = 1;
}

static int parse_duration(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v <= 0)
		return -1;
	if (!strcmp(end, "ms"))
		v /= 1000;
	else if (!strcmp(end, "m"))
		v *= 60;
	else if (*end && strcmp(end, "s"))
		return -1;
	*out = v;
	return 0;
}

static void add_setting(char *set, size_t size, const char *name, const char *v)
{
	size_t n = strlen(set);

	if (v && n + strlen(name) + strlen(v) + 2 < size) {
		memcpy(set + n, name, strlen(name));
		n += strlen(name);
		set[n++] = '=';
		memcpy(set + n, v, strlen(v));
		n += strlen(v);
		set[n++] = '\n';
		set[n] = 0;
	}
}

/* Whether a filter list "[!][MODULE:]GLOB,..." has a pattern without
 * '!': the window records only from a call of what it names on (the
 * agent sees the entry of a call, not the calls already running). */
static int has_inclusion(const char *list)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");

		if (n && *p != '!')
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

/* Appends the function pattern of each entry of spec (';' between them)
 * to out at *at: what comes before the last '@' (--args), or before the
 * first '/' (--retval), as agent/args.c reads them.  -1 when out is
 * full. */
static int arg_patterns(const char *spec, int args, char *out, size_t size, size_t *at)
{
	while (spec && *spec) {
		const char *end = strchr(spec, ';');
		size_t len = end ? (size_t)(end - spec) : strlen(spec), n = len;

		if (args) {
			while (n && spec[n - 1] != '@')
				n--;
			n = n ? n - 1 : 0;
		} else {
			const char *slash = memchr(spec, '/', len);

			if (slash)
				n = (size_t)(slash - spec);
		}
		if (n) {
			if (*at + n + 2 > size)
				return -1;
			if (*at)
				out[(*at)++] = ',';
			memcpy(out + *at, spec, n);
			*at += n;
			out[*at] = 0;
		}
		spec += len + (end != NULL);
	}
	return 0;
}

/* --patch's patterns and those of the functions --args and --retval name,
 * in out; -1 when they do not fit. */
static int with_arg_patterns(const char *patch, const char *args, const char *retval, char *out,
			     size_t size)
{
	size_t at = patch ? strlen(patch) : 0;

	if (at + 1 > size)
		return -1;
	memcpy(out, patch ? patch : "", at + 1);
	if (arg_patterns(args, 1, out, size, &at) < 0 ||
	    arg_patterns(retval, 0, out, size, &at) < 0)
		return -1;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent attach PID [-o FILE|tcp://HOST:PORT] "
		   "[--duration TIME] [--patch PATTERNS] [--channels LIST] [--mode MODE]\n"
		   "       [--filter PATTERNS] [--exclude PATTERNS] [--depth N] "
		   "[--min-duration TIME] [--libcalls LIST]\n"
		   "       [--args SPECS] [--retval PATTERNS]\n"
		   "Traces the running process PID until Ctrl-C or TIME (10, 10s, 500ms, "
		   "2m),\nthen leaves it as it was.\n"
		   "\n"
		   "  -o FILE             the dump (%%p = pid), or a collector: "
		   "tcp://HOST:PORT,\n"
		   "                      unix:PATH; default traceagent.PID.trace here "
		   "(then\n"
		   "                      traceagent.PID.2.trace, ...: never overwritten)\n"
		   "  --duration TIME     stop after TIME instead of at Ctrl-C\n"
		   "  --patch PATTERNS    patch these functions' entries (x86-64), "
		   "TRACEAGENT_PATCH\n"
		   "  --channels LIST     the channels on at the start, TRACEAGENT_CHANNELS\n"
		   "  --mode MODE         lossless, drop or flight, TRACEAGENT_MODE\n"
		   "  --filter PATTERNS   record only these functions and what they call\n"
		   "                      from their next call on, TRACEAGENT_FILTER\n"
		   "  --exclude PATTERNS  not these functions' own events, "
		   "TRACEAGENT_EXCLUDE\n"
		   "  --depth N           nothing deeper than N recorded frames a thread,\n"
		   "                      TRACEAGENT_DEPTH\n"
		   "  --min-duration TIME calls shorter than TIME left out, "
		   "TRACEAGENT_MIN_DURATION\n"
		   "  --libcalls LIST     library calls recorded as zones, "
		   "TRACEAGENT_LIBCALLS\n"
		   "  --args SPECS        these functions' arguments, "
		   "'PATTERN@arg1,arg2/s;...'\n"
		   "                      (patched as --patch), TRACEAGENT_ARGS\n"
		   "  --retval PATTERNS   these functions' return values, "
		   "'PATTERN[/FORMAT];...',\n"
		   "                      TRACEAGENT_RETVAL\n"
		   "\n"
		   "TRACEAGENT_ATTACH_TIMEOUT: seconds each call into the process may take\n"
		   "(default 10).  Exit status 0 when the window was recorded, 1 when the\n"
		   "attach failed (the process untouched, or said otherwise), 2 on bad "
		   "usage.\n");
}

enum {
	O_OUTPUT = TA_OPT_OWN,
	O_PATCH,
	O_CHANNELS,
	O_MODE,
	O_FILTER,
	O_EXCLUDE,
	O_DEPTH,
	O_MIN_DURATION,
	O_LIBCALLS,
	O_ARGS,
	O_RETVAL,
	O_DURATION
};

static const struct ta_opt attach_opts[] = {
    {"-o", TA_ARG_NEXT, O_OUTPUT},
    {"--patch", TA_ARG_EITHER, O_PATCH},
    {"--channels", TA_ARG_EITHER, O_CHANNELS},
    {"--mode", TA_ARG_EITHER, O_MODE},
    /* Recording less (the agent checks the values; the first window's
     * filters hold for the later ones). */
    {"--filter", TA_ARG_EITHER, O_FILTER},
    {"--exclude", TA_ARG_EITHER, O_EXCLUDE},
    {"--depth", TA_ARG_EITHER, O_DEPTH},
    {"--min-duration", TA_ARG_EITHER, O_MIN_DURATION},
    /* Library calls (the agent points the program's GOT entries at its
     * interposers: agent/attach.c). */
    {"--libcalls", TA_ARG_EITHER, O_LIBCALLS},
    /* Arguments: the functions they name are patched (agent/args.c). */
    {"--args", TA_ARG_EITHER, O_ARGS},
    {"--retval", TA_ARG_EITHER, O_RETVAL},
    {"--duration", TA_ARG_EITHER, O_DURATION},
    {NULL, TA_ARG_NONE, 0},
};

int ta_cmd_attach(int argc, char **argv)
{
	const char *out = NULL, *patch = NULL, *channels = NULL, *mode = NULL;
	const char *filter = NULL, *exclude = NULL, *depth = NULL, *min_duration = NULL;
	const char *libcalls = NULL, *args = NULL, *retval = NULL;
	char agent[PATH_MAX], val[256], exe[64], ans[512], settings[4096] = "", cwd[PATH_MAX];
	double duration = 0;
	long pid = 0;
	uid_t uid;
	struct sigaction sa;
	struct timespec t0;
	unsigned char eh[20];
	int fd, rc, injected = 0;
	__attribute__((unused)) unsigned looks = 0;
	__attribute__((unused)) uint64_t maps_seen = 0;

	{
		/* By id - O_OUTPUT: the values the agent checks. */
		const char **value[] = {&out,	&patch,	       &channels, &mode, &filter, &exclude,
					&depth, &min_duration, &libcalls, &args, &retval};
		struct ta_opts p;
		int id;

		ta_opts_init(&p, "attach", attach_opts, usage, argc, argv);
		while ((id = ta_opts_next(&p)) != TA_OPT_END) {
			char *end;

			if (id == TA_OPT_EXIT)
				return p.status;
			if (id == O_DURATION) {
				if (parse_duration(p.val, &duration) < 0)
					return ta_opts_bad(&p,
							   "is not a time (10, 10s, 500ms, 2m)");
				continue;
			}
			if (id != TA_OPT_ARG) {
				*value[id - O_OUTPUT] = p.val;
				continue;
			}
			if (pid)
				return ta_usage_error(
				    "attach", "one process at a time ('%ld' and '%s')", pid, p.val);
			errno = 0;
			pid = strtol(p.val, &end, 10);
			if (errno || *end || end == p.val || pid <= 0) {
				fprintf(stderr, "traceagent attach: '%s' is not a process id\n",
					p.val);
				return 2;
			}
		}
	}
	if (!pid)
		return ta_usage_error("attach", "no process id given");
	if (mode && strcmp(mode, "lossless") && strcmp(mode, "drop") && strcmp(mode, "flight")) {
		fprintf(stderr, "traceagent: attach: --mode is lossless, drop or flight\n");
		return 2;
	}
	if (args || retval) {
		/* The functions whose arguments are asked are patched, as at a
		 * program's start: their patterns join --patch's. */
		static char all[8192];

		/* The agent reads a setting of an attach into 512 bytes
		 * (agent/settings.c's setting_env). */
		if ((args && strlen(args) > 511) || (retval && strlen(retval) > 511)) {
			fprintf(stderr, "traceagent: attach: --%s is longer than 511 bytes\n",
				args && strlen(args) > 511 ? "args" : "retval");
			return 2;
		}
		if (with_arg_patterns(patch, args, retval, all, sizeof(all)) < 0) {
			fprintf(stderr, "traceagent: attach: --patch, --args and --retval name "
					"too many functions\n");
			return 2;
		}
		patch = all[0] ? all : NULL;
	}
	if (ta_att_status_field(pid, "Uid", val, sizeof(val)) < 0)
		return ta_att_fail("no process %ld", pid);
	{
		unsigned ruid, euid;
		if (sscanf(val, "%u %u", &ruid, &euid) != 2)
			return ta_att_fail("process %ld: cannot read its status", pid);
		if (ruid != euid)
			return ta_att_fail(
			    "process %ld is set-user-ID (uid %u, effective %u): never traced", pid,
			    ruid, euid);
		uid = euid;
		if (ta_att_status_field(pid, "Gid", val, sizeof(val)) == 0 &&
		    sscanf(val, "%u %u", &ruid, &euid) == 2 && ruid != euid)
			return ta_att_fail("process %ld is set-group-ID: never traced", pid);
	}
	if (geteuid() != 0 && uid != geteuid())
		return ta_att_fail(
		    "permission denied: process %ld belongs to uid %u (attach needs the "
		    "same user, or CAP_SYS_PTRACE)",
		    pid, (unsigned)uid);
	if (ta_att_status_field(pid, "TracerPid", val, sizeof(val)) == 0 && strcmp(val, "0"))
		return ta_att_fail(
		    "process %ld is being traced by process %s already (a debugger?)", pid, val);
	snprintf(exe, sizeof(exe), "/proc/%ld/exe", pid);
	{
		/* A program of another architecture runs under qemu-user: the
		 * process is qemu's (of ours, statically linked), the code
		 * the guest's, which no dlopen of ours can enter. */
		char target[PATH_MAX];
		ssize_t n = readlink(exe, target, sizeof(target) - 1);
		const char *b;

		target[n > 0 ? n : 0] = 0;
		b = strrchr(target, '/');
		b = b ? b + 1 : target;
		if (!strncmp(b, "qemu-", 5))
			return ta_att_fail("process %ld runs under %s (a program of another "
					   "architecture): the agent cannot be loaded into it",
					   pid, b);
	}
	fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM))
		return ta_att_denied(pid, errno);
	if (fd < 0)
		return ta_att_fail("process %ld: cannot read %s: %s", pid, exe, strerror(errno));
	if (read(fd, eh, sizeof(eh)) != (ssize_t)sizeof(eh)) {
		close(fd);
		return ta_att_fail("process %ld: %s is not an ELF file", pid, exe);
	}
	close(fd);
	{
		unsigned mach = eh[18] | (unsigned)eh[19] << 8;
#ifdef TA_ARCH_ELF_MACHINE
		unsigned mine = TA_ARCH_ELF_MACHINE;
#else
		unsigned mine = 0;
#endif
		if (memcmp(eh, ELFMAG, SELFMAG) || eh[EI_CLASS] != ELFCLASS64 || mach != mine)
			return ta_att_fail(
			    "process %ld is of another architecture (ELF machine %u)", pid, mach);
	}

	/* Settings: the output relative to our directory, not the target's. */
	if (out && !strstr(out, "://") && strncmp(out, "unix:", 5) && out[0] != '/' &&
	    getcwd(cwd, sizeof(cwd))) {
		static char abs[PATH_MAX * 2];
		if (strlen(cwd) + strlen(out) + 2 > 2048)
			return ta_att_fail("the output path %s/%s is too long", cwd, out);
		snprintf(abs, sizeof(abs), "%s/%s", cwd, out);
		out = abs;
	}
	if (!out && getcwd(cwd, sizeof(cwd))) {
		/* The agent's default name, in our directory; a window after
		 * the first (a dump of the process is there already) gets a
		 * number: traceagent.PID.2.trace, .3, ...  Never overwritten
		 * (the agent opens it O_EXCL). */
		static char def[PATH_MAX + 64];

		for (int n = 1; n < 10000; n++) {
			if (n == 1)
				snprintf(def, sizeof(def), "%s/traceagent.%ld.trace", cwd, pid);
			else
				snprintf(def, sizeof(def), "%s/traceagent.%ld.%d.trace", cwd, pid,
					 n);
			if (access(def, F_OK) < 0 && errno == ENOENT)
				break;
		}
		out = def;
	}
	add_setting(settings, sizeof(settings), "TRACEAGENT_OUTPUT", out);
	add_setting(settings, sizeof(settings), "TRACEAGENT_MODE", mode);
	add_setting(settings, sizeof(settings), "TRACEAGENT_CHANNELS", channels);
	add_setting(settings, sizeof(settings), "TRACEAGENT_PATCH", patch);
	add_setting(settings, sizeof(settings), "TRACEAGENT_FILTER", filter);
	add_setting(settings, sizeof(settings), "TRACEAGENT_EXCLUDE", exclude);
	add_setting(settings, sizeof(settings), "TRACEAGENT_DEPTH", depth);
	add_setting(settings, sizeof(settings), "TRACEAGENT_MIN_DURATION", min_duration);
	add_setting(settings, sizeof(settings), "TRACEAGENT_LIBCALLS", libcalls);
	add_setting(settings, sizeof(settings), "TRACEAGENT_ARGS", args);
	add_setting(settings, sizeof(settings), "TRACEAGENT_RETVAL", retval);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* An agent we injected earlier and that is idle between windows
	 * answers with agent/attach.h's TA_ATTACH_IDLE: it is called again,
	 * as the first time, with this attach's settings. */
	if (ta_att_ctl_say(pid, uid, "attach\n", ans, sizeof(ans)) == 0 &&
	    strcmp(ans, "error: the agent is idle between attach windows")) {
		/* The agent runs there already. */
		if (strcmp(ans, "ok"))
			return ta_att_fail("process %ld: %s", pid,
					   !strncmp(ans, "error: ", 7) ? ans + 7 : ans);
		if (out || mode || patch || libcalls || args || retval)
			fprintf(stderr,
				"traceagent: attach: process %ld runs the agent already: "
				"it records into its own output with its own settings\n",
				pid);
		if (channels) {
			char cmd[TA_CTL_LINE_MAX];
			snprintf(cmd, sizeof(cmd), "channels %s\n", channels);
			if (ta_att_ctl_say(pid, uid, cmd, ans, sizeof(ans)) < 0 ||
			    strcmp(ans, "ok"))
				ta_att_fail("process %ld: channels %s: %s", pid, channels, ans);
		}
	} else {
#if TA_ARCH_HAS_INJECT
		if (ta_record_find_agent(agent) < 0 || ta_att_output_reachable(pid, out))
			return 1;
		rc = ta_att_inject((pid_t)pid, agent, settings);
		if (rc)
			return rc;
		if (patch) {
			uint64_t digest = ta_att_code_maps_digest(pid);

			rc = ta_att_patch_in((pid_t)pid, agent, patch, 0);
			if (rc == 1) {
				patch = NULL;
				fprintf(stderr,
					"traceagent: attach: --patch not applied in process "
					"%ld\n",
					pid);
			}
			/* Inside a dlopen: planned again at the next look. */
			maps_seen = rc == 2 ? 0 : digest;
		}
		injected = 1;
#else
		(void)rc;
		(void)agent;
		(void)injected;
		return ta_att_fail(
		    "injecting the agent is implemented for x86-64 and aarch64 only; "
		    "start the program with the agent (TRACEAGENT_START=paused) to attach "
		    "to it");
#endif
	}
	fprintf(stderr, "traceagent: attached to process %ld%s\n", pid,
		duration ? "" : "; Ctrl-C detaches");
	if (filter && has_inclusion(filter))
		fprintf(stderr,
			"traceagent: attach: --filter %s: a call of these functions already "
			"running is not recorded, nor what it calls: nothing is recorded until "
			"one of them is called\n",
			filter);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop_now) {
		struct timespec now, nap = {0, 20 * 1000 * 1000};
		char p[64];

		snprintf(p, sizeof(p), "/proc/%ld", pid);
		if (access(p, F_OK) < 0) {
			fprintf(stderr, "traceagent: process %ld has ended\n", pid);
			return 0;
		}
#if TA_ARCH_HAS_PATCHING
		/* --patch in the modules dlopen'ed since (5 looks a second). */
		if (injected && patch && ++looks % 10 == 0) {
			uint64_t digest = ta_att_code_maps_digest(pid);

			if (digest != maps_seen) {
				int r = ta_att_patch_in((pid_t)pid, agent, patch, 1);

				maps_seen = r == 2 ? 0 : digest;
			}
		}
#endif
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (duration &&
		    (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 >=
			duration)
			break;
		nanosleep(&nap, NULL);
	}
#if TA_ARCH_HAS_INJECT
	/* The entries back while no thread runs, before the agent stops. */
	if (injected && patch && ta_att_patch_out((pid_t)pid, agent))
		fprintf(stderr,
			"traceagent: attach: the patched entries of process %ld stay (they "
			"record nothing once detached)\n",
			pid);
#endif
	if (ta_att_ctl_say(pid, uid, "detach\n", ans, sizeof(ans)) < 0)
		return ta_att_fail("process %ld: its control socket does not answer: cannot detach",
				   pid);
	/* Closed with no answer: the process ended meanwhile, or the control
	 * thread dropped a line it could not read within 2 s (a loader that
	 * waited that long for a CPU between its connect and its write),
	 * which does nothing: asked once more. */
	if (!ans[0] && !ta_att_process_alive(pid))
		return ta_att_fail("process %ld ended during the detach", pid);
	if (!ans[0] && ta_att_ctl_say(pid, uid, "detach\n", ans, sizeof(ans)) < 0)
		return ta_att_fail("process %ld: its control socket does not answer: cannot detach",
				   pid);
	if (!ans[0])
		return ta_att_fail(
		    "process %ld: its control socket closed twice without an answer: cannot "
		    "detach",
		    pid);
	if (strcmp(ans, "ok"))
		return ta_att_fail("process %ld: detach: %s", pid, ans);
	fprintf(stderr, "traceagent: detached from process %ld\n", pid);
	return 0;
}
