/* SPDX-License-Identifier: MIT */
/*
 * describe.c - the process's description, written in one place for the
 * dump and for a control-socket stream (describe.h).
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>

#include "clock.h"
#include "describe.h"
#include "dump.h"
#include "libcalls.h"
#include "modules.h"
#include "settings.h"

void ta_describe_process(unsigned what, uint64_t load_ticks, void (*between)(void))
{
	uint64_t t0;

	ta_dump_process();
	if (what & TA_DESCRIBE_CLOCK)
		ta_dump_clock();
	if (what & TA_DESCRIBE_EVERY_MODULE) {
		ta_dump_modules_all(load_ticks ? load_ticks : ta_ticks());
	} else {
		t0 = load_ticks ? load_ticks : ta_ticks();
		ta_dump_modules(t0, t0);
	}
	if (between)
		between();
	/* Weak: libcalls.c is in the preloaded library only, not in the
	 * core the unit tests link. */
	if (ta_cfg.libcalls && ta_libcalls_dump)
		ta_libcalls_dump();
}
