/* SPDX-License-Identifier: MIT */
/*
 * ctlsock.c - where a traced process's control socket is (ctlsock.h).
 */
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "ctlsock.h"

int ta_ctl_dir(char *out, size_t size, const char *xdg_runtime_dir, uid_t uid)
{
	int n;

	if (xdg_runtime_dir && xdg_runtime_dir[0] == '/')
		n = snprintf(out, size, "%s/traceagent", xdg_runtime_dir);
	else
		n = snprintf(out, size, "/tmp/traceagent-%lu", (unsigned long)uid);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int ta_ctl_path(char *out, size_t size, const char *dir, long pid)
{
	struct sockaddr_un sun;
	int n = snprintf(out, size, "%s/%ld.sock", dir, pid);

	if (n < 0 || (size_t)n >= size || (size_t)n >= sizeof(sun.sun_path))
		return -1;
	return 0;
}
