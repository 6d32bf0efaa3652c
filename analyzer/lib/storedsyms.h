/* SPDX-License-Identifier: MIT */
/*
 * storedsyms.h - the function symbols a dump stores (SYMBOLS chunks, format
 * 1.9), by module: what names a module's functions when its file is gone,
 * elsewhere, or another build.
 */
#ifndef TA_STOREDSYMS_H
#define TA_STOREDSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "symbols.h"

struct ta_symstore;
struct ta_session;

/* Adds a SYMBOLS payload's symbols to *st (created the first time): 0,
 * -TA_E_PAYLOAD (malformed: nothing added) or -TA_E_NOMEM. */
int ta_symstore_chunk(struct ta_symstore **st, const void *payload, size_t len);
void ta_symstore_free(struct ta_symstore *st);
/* Whether st holds symbols for the module (by build-id; by path for a
 * module without one): 0 when its stored table is empty. */
int ta_symstore_has(const struct ta_symstore *st, const char *path, const uint8_t *id,
		    size_t idlen);
/* The module's stored symbols as a table of its own (ta_stored_fn), or
 * NULL; ctx is a struct ta_symstore *const * (a session's, filled as the
 * dump is read). */
struct ta_symtab *ta_symstore_table(void *ctx, const char *path, const uint8_t *id, size_t idlen);

#endif /* TA_STOREDSYMS_H */
