/* SPDX-License-Identifier: MIT */
/*
 * crash.h - the crash handler (crash.c) and the alternate signal stacks it
 * gives the program's threads.
 */
#ifndef TA_CRASH_H
#define TA_CRASH_H

#include <signal.h>
#include <stdint.h>

#include "compiler.h"

/* Takes SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT, and the signals
 * whose default action ends the process (SIGTERM, SIGINT, SIGHUP, SIGPIPE,
 * SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2), where their action is the default;
 * from here a SIG_DFL the program sets is held by the agent too. */
void ta_crash_install(void) TA_HIDDEN;
/* The signals whose handler is still ours back to SIG_DFL (an attach
 * window's end: the process as it was). */
void ta_crash_uninstall(void) TA_HIDDEN;
/* sigaction as the program sees it (interpose.c): a signal the agent
 * holds shows the default action the program set or found. */
int ta_signal_action(int sig, const struct sigaction *act, struct sigaction *old) TA_HIDDEN;
/* libc's sigaction, never the interposer. */
int ta_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old) TA_HIDDEN;
/* On the flusher: 1 while a held signal's death waits for its END, which
 * ta_death_write writes (the rings, a clock pair, END with the signal). */
uint32_t ta_death_pending(void) TA_HIDDEN;
void ta_death_write(void) TA_HIDDEN;
/* Signal sig's action back to SIG_DFL if its handler is ours still. */
void ta_signal_default_if(int sig, uintptr_t ours) TA_HIDDEN;
/* Gives the calling thread an alternate signal stack of the agent's, if
 * it has none, so the crash handler runs even on an exhausted stack; once
 * per thread. */
void ta_crash_thread_start(void) TA_HIDDEN;
/* At thread exit: removes and frees that stack. */
void ta_crash_thread_exit(void) TA_HIDDEN;
/* 1 while the agent's handler takes SIGSEGV and SIGBUS, whose faults in
 * the copy of a string argument it turns into a failed copy (relaxed). */
extern uint32_t ta_crash_fault_guard TA_HIDDEN;
/* 1 if sp is the base of the calling thread's agent-given stack. */
int ta_crash_altstack_is_ours(const void *sp) TA_HIDDEN;

#endif
