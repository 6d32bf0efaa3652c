/* SPDX-License-Identifier: MIT */
/*
 * traceagent.h - what a program compiles against to speak to traceagent.
 *
 * traceagent records a C or C++ program's function calls: build it with
 * -finstrument-functions (or let the agent patch its functions at load) and
 * run it with libtraceagent.so preloaded.  This header is for the program
 * itself: it needs no library and no link flag (`pkg-config --cflags
 * traceagent`, or -I include in the source tree), and nothing in it depends
 * on how traceagent was built.  It compiles as C99 and C++11.
 *
 * For now it holds the version of the traceagent release it comes with.
 */
#ifndef TRACEAGENT_H
#define TRACEAGENT_H

/* ---- version ------------------------------------------------------------ */

/* The release this header belongs to, as the traceagent command prints it
 * (`traceagent --version`).  TA_VERSION_NUMBER orders releases for #if:
 * 0.1.0 is 100, 1.2.3 is 10203. */
#define TA_VERSION_MAJOR  0
#define TA_VERSION_MINOR  1
#define TA_VERSION_PATCH  0
#define TA_VERSION_NUMBER (TA_VERSION_MAJOR * 10000 + TA_VERSION_MINOR * 100 + TA_VERSION_PATCH)

#define TA_VERSION_STR_(x) #x
#define TA_VERSION_STR(x)  TA_VERSION_STR_(x)
/* "0.1.0" */
#define TA_VERSION_STRING                                                                          \
	TA_VERSION_STR(TA_VERSION_MAJOR)                                                           \
	"." TA_VERSION_STR(TA_VERSION_MINOR) "." TA_VERSION_STR(TA_VERSION_PATCH)

#endif
