/* SPDX-License-Identifier: MIT */
/*
 * attachapilib - a library attachapi loads with dlopen during an attach
 * window (e2e-attachapi): its own uses of the manual API and its own
 * library calls, which the agent finds at its next look at the modules.
 */
#include <time.h>

#include "traceagent.h"

void attachapilib_work(int n);
void attachapilib_work(int n)
{
	struct timespec ts = {0, 1000};

	for (int i = 0; i < n; i++) {
		TA_ZONE("lib zone");
		nanosleep(&ts, NULL);
	}
}
