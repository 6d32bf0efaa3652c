/* SPDX-License-Identifier: MIT */
/*
 * symstore.h - the traced modules' function symbols in the dump (SYMBOLS
 * chunks, symstore.c), so that it names its functions without the files.
 * Slow paths only (the module scans, the patcher): it reads files and
 * allocates.
 */
#ifndef TA_SYMSTORE_H
#define TA_SYMSTORE_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* A module the scan found (path: the executable's own for the first):
 * its symbols queued for the dump if its functions can be in it and they
 * are not there yet; again == 1 writes them now whatever was written
 * before (a control-socket stream's description, to that stream alone). */
void ta_symstore_module(const struct dl_phdr_info *info, const char *path, const uint8_t *id,
			size_t idlen, int again) TA_HIDDEN;
/* Writes the symbols of the modules found since the last call: the
 * flusher's pass (flusher 1: it may open liblz4), the END's writer. */
void ta_symstore_flush(int flusher) TA_HIDDEN;
/* The patcher patched functions of the module at this load bias. */
void ta_symstore_patched(uint64_t bias) TA_HIDDEN;
/* Writes what ta_symstore_module would for every module loaded now (after
 * the patcher patched one that a scan had found before). */
void ta_symstore_scan(void) TA_HIDDEN;
/* In a forked child (before the dump's own fork handling): a child that
 * writes into its parent's file leaves the parent's symbols there alone;
 * one with a stream of its own writes them again. */
void ta_symstore_fork_child(void) TA_HIDDEN;
/* After a detach: the next attach's dump is a new one. */
void ta_symstore_forget(void) TA_HIDDEN;

#endif /* TA_SYMSTORE_H */
