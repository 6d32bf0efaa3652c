/* SPDX-License-Identifier: MIT */
/*
 * crash.h - the crash handler (crash.c) and the alternate signal stacks it
 * gives the program's threads.
 */
#ifndef TA_CRASH_H
#define TA_CRASH_H

#include <stdint.h>

#include "compiler.h"

/* Takes SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT where their action is
 * the default. */
void ta_crash_install(void) TA_HIDDEN;
/* The signals whose handler is still ours back to SIG_DFL (an attach
 * window's end: the process as it was). */
void ta_crash_uninstall(void) TA_HIDDEN;
/* Signal sig's action back to SIG_DFL if its handler is ours still. */
void ta_signal_default_if(int sig, uintptr_t ours) TA_HIDDEN;
/* Gives the calling thread an alternate signal stack of the agent's, if
 * it has none, so the crash handler runs even on an exhausted stack; once
 * per thread. */
void ta_crash_thread_start(void) TA_HIDDEN;
/* At thread exit: removes and frees that stack. */
void ta_crash_thread_exit(void) TA_HIDDEN;
/* 1 if sp is the base of the calling thread's agent-given stack. */
int ta_crash_altstack_is_ours(const void *sp) TA_HIDDEN;

#endif
