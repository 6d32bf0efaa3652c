/* SPDX-License-Identifier: MIT */
/*
 * session_meta.c - what a process's metadata chunks say about it: the
 * decoders of the PROCESS, CLOCK, MODULE, MODULE_UNLOAD, LIBCALLS, PATCH,
 * FILTER and CRASH chunks into its struct ta_process, and a module's
 * unloading.  ta_session_chunk (session_procs.c) dispatches to them.
 */
#include "grow.h"
#include "session_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- metadata chunks ------------------------------------------------------------------ */

int ta_sess_process_chunk(struct ta_process *p, struct ta_reader *r)
{
	uint64_t pid, argc;
	char *arch = NULL, *exe = NULL, **argv = NULL;
	int rc = -TA_E_PAYLOAD;

	ta_get_varint(r, &pid);
	ta_get_varint(r, &p->ppid);
	ta_get_varint(r, &p->start_realtime_ns);
	ta_get_varint(r, &p->start_ticks);
	ta_get_varint(r, &p->clock_source);
	ta_get_varint(r, &p->nominal_hz);
	if (r->err)
		return -TA_E_PAYLOAD;
	if ((rc = ta_sess_get_str(r, &arch)) < 0 || (rc = ta_sess_get_str(r, &exe)) < 0)
		goto fail;
	rc = -TA_E_PAYLOAD;
	/* Each argument takes at least one byte. */
	if (ta_get_varint(r, &argc) < 0 || argc > (uint64_t)(r->end - r->p))
		goto fail;
	argv = calloc((size_t)argc + 1, sizeof(*argv));
	if (!argv) {
		rc = -TA_E_NOMEM;
		goto fail;
	}
	for (uint64_t i = 0; i < argc; i++)
		if ((rc = ta_sess_get_str(r, &argv[i])) < 0)
			goto fail;
	ta_get_varint(r, &p->block_size);
	ta_get_varint(r, &p->memory_cap);
	ta_get_varint(r, &p->flush_ms);
	if (r->err) {
		rc = -TA_E_PAYLOAD;
		goto fail;
	}
	p->mode = 0;
	if (r->p < r->end && ta_get_varint(r, &p->mode) < 0) { /* since 1.1 */
		rc = -TA_E_PAYLOAD;
		goto fail;
	}
	/* Since 1.7; an image without it keeps the process's. */
	if (r->p < r->end) {
		uint64_t bs;

		if (ta_get_varint(r, &bs) < 0) {
			rc = -TA_E_PAYLOAD;
			goto fail;
		}
		if (bs)
			p->boot_start = bs;
	}
	/* Since 1.8, likewise. */
	if (r->p < r->end) {
		uint64_t ns;

		if (ta_get_varint(r, &ns) < 0) {
			rc = -TA_E_PAYLOAD;
			goto fail;
		}
		if (ns)
			p->start_ns = ns;
	}
	/* A second PROCESS chunk (exec in place) starts the next image: its
	 * command line goes on the chain, the process's is the last. */
	{
		char **v = ta_vec_reserve(p->images, p->nimages + 1, &p->images_cap, sizeof(*v), 2);
		struct ta_image_cmd *c;

		if (!v) {
			rc = -TA_E_NOMEM;
			goto fail;
		}
		p->images = v;
		c = ta_vec_reserve(p->cmds, p->nimages + 1, &p->cmds_cap, sizeof(*c), 2);
		if (!c) {
			rc = -TA_E_NOMEM;
			goto fail;
		}
		p->cmds = c;
		if (!(p->images[p->nimages] = strdup(exe))) {
			rc = -TA_E_NOMEM;
			goto fail;
		}
		p->cmds[p->nimages].argv = argv;
		p->cmds[p->nimages].argc = (size_t)argc;
		p->nimages++;
	}
	free(p->arch);
	free(p->exe);
	p->arch = arch;
	p->exe = exe;
	p->argv = argv;
	p->argc = (size_t)argc;
	p->has_info = 1;
	ta_sess_note_ticks(p, p->start_ticks);
	return 0;
fail:
	if (argv)
		for (uint64_t i = 0; i < argc; i++)
			free(argv[i]);
	free(argv);
	free(arch);
	free(exe);
	return rc;
}

int ta_sess_clock_chunk(struct ta_process *p, struct ta_reader *r)
{
	uint64_t count;

	/* Each pair takes at least two bytes. */
	if (ta_get_varint(r, &count) < 0 || count > (uint64_t)(r->end - r->p) / 2)
		return -TA_E_PAYLOAD;
	if (p->nclock + count > p->clock_cap) {
		struct ta_clock_pair *v =
		    ta_vec_reserve(p->clock, p->nclock + count, &p->clock_cap, sizeof(*v), 16);

		if (!v)
			return -TA_E_NOMEM;
		p->clock = v;
	}
	for (uint64_t i = 0; i < count; i++) {
		struct ta_clock_pair *cp = &p->clock[p->nclock];

		ta_get_varint(r, &cp->ticks);
		ta_get_varint(r, &cp->ns);
		if (r->err)
			return -TA_E_PAYLOAD;
		p->nclock++;
	}
	return 0;
}

int ta_sess_module_chunk(struct ta_process *p, struct ta_reader *r)
{
	struct ta_sess_module m;
	const uint8_t *bid;
	uint64_t bid_len, n;
	int rc;

	memset(&m, 0, sizeof(m));
	m.unload_ticks = UINT64_MAX;
	ta_get_varint(r, &m.load_ticks);
	ta_get_varint(r, &m.bias);
	if ((rc = ta_sess_get_str(r, &m.path)) < 0)
		goto fail;
	rc = -TA_E_PAYLOAD;
	if (ta_get_bytes(r, &bid, &bid_len) < 0)
		goto fail;
	ta_get_varint(r, &m.flags);
	/* Each range takes at least two bytes. */
	if (ta_get_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p) / 2)
		goto fail;
	m.build_id = malloc(bid_len ? (size_t)bid_len : 1);
	m.ranges = malloc(n ? (size_t)n * sizeof(*m.ranges) : 1);
	if (!m.build_id || !m.ranges) {
		rc = -TA_E_NOMEM;
		goto fail;
	}
	memcpy(m.build_id, bid, (size_t)bid_len);
	m.build_id_len = (size_t)bid_len;
	for (uint64_t i = 0; i < n; i++) {
		ta_get_varint(r, &m.ranges[i].start);
		ta_get_varint(r, &m.ranges[i].end);
	}
	m.nranges = (size_t)n;
	if (r->err)
		goto fail;
	if (p->nmodules == p->modules_cap) {
		struct ta_sess_module *v =
		    ta_vec_reserve(p->modules, p->nmodules + 1, &p->modules_cap, sizeof(*v), 16);

		if (!v) {
			rc = -TA_E_NOMEM;
			goto fail;
		}
		p->modules = v;
	}
	p->modules[p->nmodules++] = m;
	return 0;
fail:
	free(m.path);
	free(m.build_id);
	free(m.ranges);
	return rc;
}

/* MODULE_UNLOAD: the latest instance of that module still loaded ends. */
int ta_sess_module_unload_chunk(struct ta_process *p, struct ta_reader *r)
{
	const uint8_t *path;
	uint64_t ticks, bias, len;
	struct ta_sess_module *m = NULL;

	ta_get_varint(r, &ticks);
	ta_get_varint(r, &bias);
	if (ta_get_bytes(r, &path, &len) < 0)
		return -TA_E_PAYLOAD;
	for (size_t i = p->nmodules; i-- > 0;) {
		struct ta_sess_module *c = &p->modules[i];

		if (c->bias == bias && c->unload_ticks == UINT64_MAX && strlen(c->path) == len &&
		    memcmp(c->path, path, (size_t)len) == 0) {
			m = c;
			break;
		}
	}
	if (!m)
		return 0; /* its MODULE chunk was lost: nothing to end */
	ta_sess_note_ticks(p, ticks);
	return ta_sess_module_gone(p, m, ticks);
}

static int libcall_cmp(const void *a, const void *b)
{
	const struct ta_libcall *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* u classes, u count, count x (u addr, str name, u class). */
int ta_sess_libcalls_chunk(struct ta_process *p, struct ta_reader *r)
{
	struct ta_libcall *lc;
	uint64_t classes, n, i;
	int rc = -TA_E_PAYLOAD;

	ta_get_varint(r, &classes);
	/* Each entry takes three bytes at least. */
	if (ta_get_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p) / 3)
		return -TA_E_PAYLOAD;
	lc = calloc(n ? (size_t)n : 1, sizeof(*lc));
	if (!lc)
		return -TA_E_NOMEM;
	for (i = 0; i < n; i++) {
		uint64_t cls;

		ta_get_varint(r, &lc[i].addr);
		if ((rc = ta_sess_get_str(r, &lc[i].name)) < 0)
			goto fail;
		rc = -TA_E_PAYLOAD;
		if (ta_get_varint(r, &cls) < 0)
			goto fail;
		lc[i].cls = (uint32_t)(cls & TA_LC_ALL);
		lc[i].index = (uint32_t)i;
	}
	qsort(lc, (size_t)n, sizeof(*lc), libcall_cmp);
	for (i = 0; i < p->nlibcalls; i++)
		free(p->libcalls[i].name);
	free(p->libcalls);
	p->libcalls = lc;
	p->nlibcalls = (size_t)n;
	p->libcall_classes = classes;
	return 0;
fail:
	for (uint64_t k = 0; k <= i && k < n; k++)
		free(lc[k].name);
	free(lc);
	return rc;
}

const struct ta_libcall *ta_process_libcall(const struct ta_process *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nlibcalls;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->libcalls[mid].addr == addr)
			return &p->libcalls[mid];
		if (p->libcalls[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void ta_sess_patch_free(struct ta_patch *pt)
{
	if (!pt)
		return;
	for (uint64_t i = 0; i < pt->nrefused; i++) {
		free(pt->refused[i].module);
		free(pt->refused[i].name);
		free(pt->refused[i].reason);
	}
	free(pt->refused);
	for (uint64_t i = 0; i < pt->nfallback; i++)
		free(pt->fallback[i].reason);
	free(pt->fallback);
	free(pt);
}

/* Each PATCH chunk is cumulative (written at start, after a dlopen that
 * patched more, and at the end): the last one replaces the others. */
int ta_sess_patch_chunk(struct ta_process *p, struct ta_reader *r)
{
	struct ta_patch *pt = calloc(1, sizeof(*pt));
	uint64_t n;
	int rc = -TA_E_PAYLOAD;

	if (!pt)
		return -TA_E_NOMEM;
	ta_get_varint(r, &pt->patched);
	ta_get_varint(r, &n);
	ta_get_varint(r, &pt->frames_without_exit);
	/* A refusal takes 5 bytes at least: a larger count is a lie. */
	if (r->err || n > (uint64_t)(r->end - r->p) / 5)
		goto fail;
	pt->refused = n ? calloc((size_t)n, sizeof(*pt->refused)) : NULL;
	if (n && !pt->refused) {
		rc = -TA_E_NOMEM;
		goto fail;
	}
	for (uint64_t i = 0; i < n; i++) {
		struct ta_patch_refusal *f = &pt->refused[i];
		pt->nrefused = i + 1;
		if ((rc = ta_sess_get_str(r, &f->module)) < 0 ||
		    (rc = ta_sess_get_str(r, &f->name)) < 0)
			goto fail;
		ta_get_varint(r, &f->addr);
		ta_get_varint(r, &f->code);
		if ((rc = ta_sess_get_str(r, &f->reason)) < 0)
			goto fail;
		rc = -TA_E_PAYLOAD;
		if (r->err)
			goto fail;
	}
	/* Since 1.8: the functions relocated whole, the others' reasons. */
	if (r->p < r->end) {
		pt->has_method = 1;
		ta_get_varint(r, &pt->relocated);
		ta_get_varint(r, &n);
		/* A reason takes 3 bytes at least. */
		if (r->err || n > (uint64_t)(r->end - r->p) / 3)
			goto fail;
		pt->fallback = n ? calloc((size_t)n, sizeof(*pt->fallback)) : NULL;
		if (n && !pt->fallback) {
			rc = -TA_E_NOMEM;
			goto fail;
		}
		for (uint64_t i = 0; i < n; i++) {
			struct ta_patch_fallback *f = &pt->fallback[i];
			pt->nfallback = i + 1;
			ta_get_varint(r, &f->code);
			ta_get_varint(r, &f->count);
			if ((rc = ta_sess_get_str(r, &f->reason)) < 0)
				goto fail;
			rc = -TA_E_PAYLOAD;
			if (r->err)
				goto fail;
		}
	}
	/* Since 1.10: those patched at their patchable entries. */
	if (r->p < r->end) {
		ta_get_varint(r, &pt->patchable_entry);
		if (r->err || pt->patchable_entry > pt->patched)
			goto fail;
	}
	ta_sess_patch_free(p->patch);
	p->patch = pt;
	return 0;
fail:
	ta_sess_patch_free(pt);
	return rc;
}

/* Each FILTER chunk is cumulative (written at start and after a dlopen
 * whose functions the patterns name): the last one replaces the others. */
int ta_sess_filter_chunk(struct ta_process *p, const void *payload, size_t len)
{
	struct ta_filter_info *f = calloc(1, sizeof(*f));
	int rc;

	if (!f)
		return -TA_E_NOMEM;
	rc = ta_filter_decode(payload, len, f);
	if (rc < 0) {
		free(f);
		return rc;
	}
	if (p->filter)
		ta_filter_info_free(p->filter);
	free(p->filter);
	p->filter = f;
	return 0;
}

int ta_sess_crash_chunk(struct ta_process *p, struct ta_reader *r)
{
	struct ta_crash *c = calloc(1, sizeof(*c));
	uint64_t code, n;

	if (!c)
		return -TA_E_NOMEM;
	ta_get_varint(r, &c->tid);
	ta_get_varint(r, &c->ticks);
	ta_get_varint(r, &c->signal);
	ta_get_varint(r, &code);
	ta_get_varint(r, &c->addr);
	ta_get_varint(r, &n);
	/* Each pc takes a byte at least: a larger count is a lie. */
	if (r->err || n > (uint64_t)(r->end - r->p)) {
		free(c);
		return -TA_E_PAYLOAD;
	}
	c->code = (int64_t)code;
	c->pcs = n ? malloc(n * sizeof(uint64_t)) : NULL;
	if (n && !c->pcs) {
		free(c);
		return -TA_E_NOMEM;
	}
	for (uint64_t i = 0; i < n; i++)
		ta_get_varint(r, &c->pcs[i]);
	if (r->err) {
		free(c->pcs);
		free(c);
		return -TA_E_PAYLOAD;
	}
	c->npcs = (size_t)n;
	if (p->crash) { /* one crash a process; a second chunk replaces it */
		free(p->crash->pcs);
		free(p->crash);
	}
	p->crash = c;
	ta_sess_note_ticks(p, c->ticks);
	return 0;
}
#define UNLOADED_MAX 4096

/* Marks m unloaded at ticks: its ranges join the process's unloaded
 * ones, which tell instances at one address apart (ta_process_addr_at). */
int ta_sess_module_gone(struct ta_process *p, struct ta_sess_module *m, uint64_t ticks)
{
	m->unload_ticks = ticks;
	for (size_t k = 0; k < m->nranges; k++) {
		/* Each is looked at for every later event: a dump claiming
		 * more is not followed (its addresses may then be misnamed). */
		if (m->ranges[k].end <= m->ranges[k].start || p->nunloaded == UNLOADED_MAX)
			continue;
		if (p->nunloaded == p->unloaded_cap) {
			struct ta_unloaded *v = ta_vec_reserve(p->unloaded, p->nunloaded + 1,
							       &p->unloaded_cap, sizeof(*v), 8);

			if (!v)
				return -TA_E_NOMEM;
			p->unloaded = v;
		}
		p->unloaded[p->nunloaded].start = m->ranges[k].start;
		p->unloaded[p->nunloaded].end = m->ranges[k].end;
		p->unloaded[p->nunloaded].ticks = ticks;
		p->nunloaded++;
	}
	return 0;
}
