/* SPDX-License-Identifier: MIT */
/*
 * walk.h - the agent's walks of the loaded objects.  Each goes through
 * ta_walk_objects (lazylib.c), never dl_iterate_phdr directly: a fork waits
 * until no walk of the agent is under way, and none begins until it is
 * done, so that no child starts with the loader's list lock copied held.
 */
#ifndef TA_WALK_H
#define TA_WALK_H

#include <link.h>
#include <stddef.h>

#include "compiler.h"

/* dl_iterate_phdr(cb, data), counted against a fork. */
int ta_walk_objects(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data) TA_HIDDEN;

#endif /* TA_WALK_H */
