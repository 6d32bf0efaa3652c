/* SPDX-License-Identifier: MIT */
/*
 * attach.h - `traceagent attach`'s side in the agent (attach.c): the
 * control socket's `attach` and `detach` commands.
 */
#ifndef TA_ATTACH_H
#define TA_ATTACH_H

#include "compiler.h"

/* `attach` (on) begins a window: the hooks in place (an injected agent),
 * recording resumed; `detach` ends it: the hooks taken out, recording
 * paused, everything recorded written.  0, or a negative errno with *why
 * the control socket's answer (-EBUSY: another attach holds the process). */
int ta_attach_command(int on, const char **why) TA_HIDDEN;
/* The `attach` command's answer for an injected agent between windows:
 * the loader then calls ta_attach_start again with the new settings
 * (loader/attacher.c matches it). */
#define TA_ATTACH_IDLE "the agent is idle between attach windows"
/* The flusher's loop, while an injected agent's window is open: modules
 * dlopen'ed since the last look get their GOT entries pointed at our hooks
 * (and written to the dump), those dlclose'd are forgotten.  Cheap when
 * nothing changed (one dl_iterate_phdr callback); never waits for the
 * attach lock. */
void ta_attach_poll(void) TA_HIDDEN;
/* In a forked child (agent.c's fork handler, the agent running): a child
 * forked inside an attach window ends its tracing with that window. */
void ta_attach_fork_child(void) TA_HIDDEN;
/* A forked child's restart (agent.c): 1 if the window it was forked in
 * has ended, and then it never restarts (its GOT entries are put back
 * here: glibc's empty hooks again). */
int ta_attach_child_closed(void) TA_HIDDEN;
/* 1 once ta_attach_start ran: the agent was brought in by dlopen. */
extern int ta_attach_injected TA_HIDDEN;

#endif
