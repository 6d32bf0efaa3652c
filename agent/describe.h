/* SPDX-License-Identifier: MIT */
/*
 * describe.h - the process's description (describe.c): what a reader of a
 * dump or of a control-socket stream needs before the events.
 */
#ifndef TA_DESCRIBE_H
#define TA_DESCRIBE_H

#include <stdint.h>

#include "compiler.h"

/* What ta_describe_process writes beside PROCESS, the modules and LIBCALLS. */
enum {
	/* A CLOCK pair after PROCESS. */
	TA_DESCRIBE_CLOCK = 1u << 0,
	/* Every module loaded now (a new stream's reader), not only those the
	 * last scan did not see. */
	TA_DESCRIBE_EVERY_MODULE = 1u << 1,
};

/*
 * Writes the PROCESS chunk, a CLOCK pair (TA_DESCRIBE_CLOCK), the modules
 * loaded (stamped load_ticks, or the time they are looked at when 0), what
 * between writes or does (the filters: NULL for nothing), then LIBCALLS
 * when library calls are recorded.  The agent's start, a forked child's,
 * an attach window's and a stream's reader describe the process with it.
 */
void ta_describe_process(unsigned what, uint64_t load_ticks, void (*between)(void)) TA_HIDDEN;

#endif
