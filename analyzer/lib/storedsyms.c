/* SPDX-License-Identifier: MIT */
/*
 * storedsyms.c - the function symbols a dump stores (storedsyms.h; format/
 * FORMAT.md "19 SYMBOLS"), gathered by module as the chunks are read and
 * handed to a resolver as tables (ta_resolver_stored), so that a module is
 * named from the dump before any file.
 */
#include "storedsyms.h"

#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "grow.h"

/* One module's symbols: every chunk's, as they came (a module's table may
 * take several chunks, and several processes of a dump may each store
 * it). */
struct stored_mod {
	uint8_t *id;
	size_t idlen;
	char *path;
	struct ta_syms *chunks;
	size_t nchunks, chunks_cap;
};

struct ta_symstore {
	struct stored_mod *m;
	size_t n, cap;
};

static struct stored_mod *find(const struct ta_symstore *st, const char *path, const uint8_t *id,
			       size_t idlen)
{
	for (size_t i = 0; st && i < st->n; i++) {
		struct stored_mod *m = &st->m[i];

		if (idlen ? m->idlen == idlen && !memcmp(m->id, id, idlen)
			  : !m->idlen && !strcmp(m->path, path))
			return m;
	}
	return NULL;
}

int ta_symstore_chunk(struct ta_symstore **stp, const void *payload, size_t len)
{
	struct ta_symstore *st = *stp;
	struct stored_mod *m;
	struct ta_syms s, *c;
	int rc = ta_syms_decode(payload, len, &s);

	if (rc < 0)
		return rc;
	if (!st && !(st = *stp = calloc(1, sizeof(*st))))
		goto nomem;
	m = find(st, s.path, s.build_id, s.build_id_len);
	if (!m) {
		m = ta_vec_reserve(st->m, st->n + 1, &st->cap, sizeof(*m), 8);
		if (!m)
			goto nomem;
		st->m = m;
		m = &st->m[st->n];
		memset(m, 0, sizeof(*m));
		m->path = strdup(s.path);
		m->id = malloc(s.build_id_len ? s.build_id_len : 1);
		if (!m->path || !m->id) {
			free(m->path);
			free(m->id);
			goto nomem;
		}
		memcpy(m->id, s.build_id, s.build_id_len);
		m->idlen = s.build_id_len;
		st->n++;
	}
	c = ta_vec_reserve(m->chunks, m->nchunks + 1, &m->chunks_cap, sizeof(*c), 4);
	if (!c)
		goto nomem;
	m->chunks = c;
	m->chunks[m->nchunks++] = s;
	return 0;
nomem:
	ta_syms_free(&s);
	return -TA_E_NOMEM;
}

void ta_symstore_free(struct ta_symstore *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++) {
		for (size_t k = 0; k < st->m[i].nchunks; k++)
			ta_syms_free(&st->m[i].chunks[k]);
		free(st->m[i].chunks);
		free(st->m[i].path);
		free(st->m[i].id);
	}
	free(st->m);
	free(st);
}

int ta_symstore_has(const struct ta_symstore *st, const char *path, const uint8_t *id, size_t idlen)
{
	const struct stored_mod *m = find(st, path, id, idlen);

	for (size_t c = 0; m && c < m->nchunks; c++)
		if (m->chunks[c].n)
			return 1;
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct ta_sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	/* The same symbol stored twice: the first stored stays. */
	return x->name < y->name ? -1 : x->name > y->name;
}

struct ta_symtab *ta_symstore_table(void *ctx, const char *path, const uint8_t *id, size_t idlen)
{
	const struct stored_mod *m = find(*(struct ta_symstore *const *)ctx, path, id, idlen);
	struct ta_symtab *tab;
	struct ta_sym *syms;
	size_t n = 0, pool = 0, k = 0, at = 0;
	char *names;

	if (!m)
		return NULL;
	for (size_t c = 0; c < m->nchunks; c++) {
		n += m->chunks[c].n;
		for (size_t i = 0; i < m->chunks[c].n; i++)
			pool += strlen(m->chunks[c].e[i].name) + 1;
	}
	/* An empty table names nothing: the file may. */
	if (!n)
		return NULL;
	syms = malloc(n * sizeof(*syms));
	names = malloc(pool ? pool : 1);
	if (!syms || !names)
		goto fail;
	/* Names copied in the order stored, so that comparing their
	 * addresses keeps the first of two chunks that hold one symbol. */
	for (size_t c = 0; c < m->nchunks; c++)
		for (size_t i = 0; i < m->chunks[c].n; i++) {
			const struct ta_syms_entry *e = &m->chunks[c].e[i];
			size_t len = strlen(e->name) + 1;

			memcpy(names + at, e->name, len);
			syms[k].value = e->value;
			syms[k].size = e->size;
			syms[k++].name = names + at;
			at += len;
		}
	qsort(syms, n, sizeof(*syms), sym_cmp);
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || syms[k - 1].value != syms[i].value)
			syms[k++] = syms[i];
	tab = ta_symtab_adopt(syms, k, names);
	if (tab)
		return tab;
fail:
	free(syms);
	free(names);
	return NULL;
}
