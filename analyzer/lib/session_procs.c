/* SPDX-License-Identifier: MIT */
/*
 * session_procs.c - the processes and threads of a session: the process
 * table, the hash table of threads (a tid reused or exec'd over starts a
 * new thread), the API's sites and channels, and pauses (MARK): the tables
 * the chunks' dispatch (session_chunk.c) and the walk fill and read.
 */
#include "grow.h"
#include "session_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- processes ------------------------------------------------------------------ */

struct ta_process *ta_session_process(const struct ta_session *s, uint32_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->pid == pid)
			return s->procs[i];
	return NULL;
}

const char *ta_pid_name(const struct ta_session *s, uint32_t key, char buf[TA_PID_NAME_MAX])
{
	const struct ta_process *p = ta_session_process(s, key);

	if (p && p->nth > 1)
		snprintf(buf, TA_PID_NAME_MAX, "%" PRIu32 " (%" PRIu32 ")", p->os_pid, p->nth);
	else
		snprintf(buf, TA_PID_NAME_MAX, "%" PRIu32, p ? p->os_pid : key);
	return buf;
}

uint32_t ta_pid_os(const struct ta_session *s, uint32_t key)
{
	const struct ta_process *p = ta_session_process(s, key);

	return p ? p->os_pid : key;
}

/* The latest process whose chunks carry pid, or NULL. */
static struct ta_process *process_latest(const struct ta_session *s, uint32_t pid)
{
	for (size_t i = s->nprocs; i-- > 0;)
		if (s->procs[i]->os_pid == pid)
			return s->procs[i];
	return NULL;
}

static struct ta_process *process_new(struct ta_session *s, uint32_t pid, uint32_t nth)
{
	struct ta_process *p = calloc(1, sizeof(*p)), **v;
	uint32_t key = pid;

	/* pid + k * 2^22 for the first k that no process has: the first
	 * process of a pid is keyed by its pid unless a hostile dump's
	 * pids (2^22 and above) took it. */
	while (ta_session_process(s, key))
		key += 1u << 22;
	v = ta_vec_reserve(s->procs, s->nprocs + 1, &s->procs_cap, sizeof(*v), 8);
	if (!p || !v) {
		free(p);
		if (v)
			s->procs = v;
		return NULL;
	}
	s->procs = v;
	p->pid = key;
	p->os_pid = pid;
	p->nth = nth;
	s->procs[s->nprocs++] = p;
	return p;
}

/* PROCESS's boot_start (1.7) and start_ns (1.8), each 0 when absent: the
 * fields before them skipped. */
static void chunk_starts(const struct ta_chunk *c, uint64_t *bs, uint64_t *ns)
{
	struct ta_reader r;
	const uint8_t *b;
	uint64_t v = 0, argc;

	*bs = *ns = 0;
	ta_reader_init(&r, c->payload, c->len);
	for (int i = 0; i < 6; i++)
		ta_get_varint(&r, &v);
	ta_get_bytes(&r, &b, &v);
	ta_get_bytes(&r, &b, &v);
	if (ta_get_varint(&r, &argc) < 0)
		return;
	for (uint64_t i = 0; i < argc && !r.err; i++)
		ta_get_bytes(&r, &b, &v);
	for (int i = 0; i < 4; i++)
		ta_get_varint(&r, &v);
	if (r.err || r.p >= r.end || ta_get_varint(&r, &v) < 0)
		return;
	*bs = v;
	if (r.p < r.end && ta_get_varint(&r, &v) == 0)
		*ns = v;
}

/*
 * The process a chunk belongs to: the latest one with the chunk's pid (a
 * process with a reused pid had ended before its pid was given again, so
 * its chunks all come before the new one's PROCESS).  A PROCESS chunk for
 * a pid seen with another start (boot_start, or start_ns, which tells
 * apart two processes started in one clock tick) begins a new process, not
 * an image.
 */
struct ta_process *ta_sess_process_get(struct ta_session *s, const struct ta_chunk *c)
{
	struct ta_process *p = process_latest(s, c->h.pid);

	if (p && c->h.type == TA_CHUNK_PROCESS && p->has_info) {
		uint64_t bs, ns;

		chunk_starts(c, &bs, &ns);
		if ((bs && p->boot_start && bs != p->boot_start) ||
		    (ns && p->start_ns && ns != p->start_ns))
			return process_new(s, c->h.pid, p->nth + 1);
	}
	return p ? p : process_new(s, c->h.pid, 1);
}

/* FNV-1a over a site's identity. */
static uint64_t site_id(const struct ta_site *st)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const char *parts[2] = {st->name, st->file};
	uint32_t nums[2] = {st->kind, st->line};

	for (int k = 0; k < 2; k++) {
		for (const char *c = parts[k]; *c; c++)
			h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
		h = (h ^ 0xff) * 0x100000001b3ull;
		for (int b = 0; b < 4; b++)
			h = (h ^ ((nums[k] >> (8 * b)) & 0xff)) * 0x100000001b3ull;
	}
	return h;
}

/* u count, count x (u addr, u kind, u channel, str name, str file, u line). */
int ta_sess_sites_chunk(struct ta_process *p, struct ta_reader *r)
{
	uint64_t n;

	/* Each entry takes six bytes at least. */
	if (ta_get_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p) / 6)
		return -TA_E_PAYLOAD;
	for (uint64_t i = 0; i < n; i++) {
		struct ta_site st = {0};
		uint64_t kind = 0, ch = 0, line = 0;
		int rc;

		ta_get_varint(r, &st.addr);
		ta_get_varint(r, &kind);
		if (ta_get_varint(r, &ch) < 0)
			return -TA_E_PAYLOAD;
		if ((rc = ta_sess_get_str(r, &st.name)) < 0)
			return rc;
		if ((rc = ta_sess_get_str(r, &st.file)) < 0 || ta_get_varint(r, &line) < 0) {
			free(st.name);
			free(st.file);
			return rc < 0 ? rc : -TA_E_PAYLOAD;
		}
		st.kind = kind > UINT32_MAX ? 0 : (uint32_t)kind;
		st.channel = ch >= TA_CHANNELS_MAX ? TA_CHANNEL_USER : (uint32_t)ch;
		st.line = line > UINT32_MAX ? UINT32_MAX : (uint32_t)line;
		st.id = site_id(&st);
		{
			size_t wl = strlen(st.file) + 16;

			st.where = malloc(wl);
			if (!st.where) {
				free(st.name);
				free(st.file);
				return -TA_E_NOMEM;
			}
			snprintf(st.where, wl, "%s:%u", st.file, st.line);
		}
		st.seq = p->sites_seq++;
		if (p->nsites == p->sites_cap) {
			struct ta_site *ns =
			    ta_vec_reserve(p->sites, p->nsites + 1, &p->sites_cap, sizeof(*ns), 64);

			if (!ns) {
				free(st.name);
				free(st.file);
				free(st.where);
				return -TA_E_NOMEM;
			}
			p->sites = ns;
		}
		p->sites[p->nsites++] = st;
		p->sites_sorted = 0;
	}
	return 0;
}

static int site_cmp(const void *a, const void *b)
{
	const struct ta_site *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const struct ta_site *ta_process_site(struct ta_process *p, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!p->nsites)
		return NULL;
	if (!p->sites_sorted) {
		size_t k = 0;

		/* By address, and of one address only the latest description. */
		qsort(p->sites, p->nsites, sizeof(*p->sites), site_cmp);
		for (size_t i = 0; i < p->nsites; i++) {
			if (k && p->sites[k - 1].addr == p->sites[i].addr) {
				free(p->sites[k - 1].name);
				free(p->sites[k - 1].file);
				free(p->sites[k - 1].where);
				p->sites[k - 1] = p->sites[i];
			} else {
				p->sites[k++] = p->sites[i];
			}
		}
		p->nsites = k;
		p->sites_sorted = 1;
	}
	hi = p->nsites;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->sites[mid].addr == addr)
			return &p->sites[mid];
		if (p->sites[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* u count, count x (u id, str name, u on). */
int ta_sess_channels_chunk(struct ta_process *p, struct ta_reader *r)
{
	uint64_t n;

	if (ta_get_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p) / 3)
		return -TA_E_PAYLOAD;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t id = 0, on = 0;
		char *name = NULL;
		int rc;

		ta_get_varint(r, &id);
		if ((rc = ta_sess_get_str(r, &name)) < 0)
			return rc;
		if (ta_get_varint(r, &on) < 0) {
			free(name);
			return -TA_E_PAYLOAD;
		}
		/* The first description holds: it has the state at the start. */
		if (id >= TA_CHANNELS_MAX || p->channels[id].name) {
			free(name);
			continue;
		}
		p->channels[id].name = name;
		p->channels[id].on = on != 0;
	}
	return 0;
}

/* ---- pauses (MARK chunks, 1.6) --------------------------------------------------- */

/* Paused ticks before t. */
static uint64_t paused_before(const struct ta_process *p, uint64_t t)
{
	size_t lo = 0, hi = p->npauses;
	const struct ta_pause *q;

	/* lo: the pauses that began before t. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->pauses[mid].from < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	q = &p->pauses[lo - 1];
	return q->before + ((t < q->to ? t : q->to) - q->from);
}

uint64_t ta_process_paused(const struct ta_process *p, uint64_t a, uint64_t b)
{
	return b > a ? paused_before(p, b) - paused_before(p, a) : 0;
}

/* The pause still open ends at ticks (the image or the process ended). */
void ta_sess_pause_close(struct ta_process *p, uint64_t ticks)
{
	struct ta_pause *q = p->npauses ? &p->pauses[p->npauses - 1] : NULL;

	if (q && q->to == UINT64_MAX)
		q->to = ticks > q->from ? ticks : q->from;
}

static int pause_add(struct ta_process *p, uint64_t from, uint64_t to)
{
	struct ta_pause *q = p->npauses ? &p->pauses[p->npauses - 1] : NULL;
	uint64_t before = q ? q->before + (q->to - q->from) : 0;

	/* In order and apart, or a damaged dump's: ignored. */
	if (q && (q->to == UINT64_MAX || from < q->to))
		return 0;
	if (to < from)
		return -TA_E_PAYLOAD;
	if (p->npauses == p->pauses_cap) {
		struct ta_pause *n =
		    ta_vec_reserve(p->pauses, p->npauses + 1, &p->pauses_cap, sizeof(*n), 8);

		if (!n)
			return -TA_E_NOMEM;
		p->pauses = n;
	}
	p->pauses[p->npauses].from = from;
	p->pauses[p->npauses].to = to;
	p->pauses[p->npauses].before = before;
	p->npauses++;
	return 0;
}

int ta_sess_mark_chunk(struct ta_process *p, struct ta_reader *r)
{
	uint64_t ticks, kind, v = 0;
	struct ta_pause *q;

	if (ta_get_varint(r, &ticks) < 0 || ta_get_varint(r, &kind) < 0)
		return -TA_E_PAYLOAD;
	switch (kind) {
	case TA_MARK_PAUSE:
		return pause_add(p, ticks, UINT64_MAX);
	case TA_MARK_RESUME:
		if (ta_get_varint(r, &v) < 0)
			return -TA_E_PAYLOAD;
		q = p->npauses ? &p->pauses[p->npauses - 1] : NULL;
		if (q && q->to == UINT64_MAX) {
			ta_sess_pause_close(p, ticks);
			return 0;
		}
		/* Its pause was not seen (a stream begun during it). */
		return v <= ticks ? pause_add(p, v, ticks) : -TA_E_PAYLOAD;
	case TA_MARK_CHANNEL:
		p->channel_marks++;
		return 0;
	default:
		return 0; /* a later version's kind */
	}
}

const char *ta_process_channel_name(const struct ta_process *p, uint32_t id, char buf[32])
{
	static const char *const builtin[TA_CHANNEL_FIRST_OWN] = {"functions", "user", "alloc",
								  "lock",      "io",   "sleep"};

	if (p && id < TA_CHANNELS_MAX && p->channels[id].name)
		return p->channels[id].name;
	if (id < TA_CHANNEL_FIRST_OWN)
		return builtin[id];
	snprintf(buf, 32, "channel-%u", id);
	return buf;
}

void ta_sess_process_free(struct ta_process *p)
{
	free(p->arch);
	free(p->exe);
	for (size_t i = 0; i < p->nimages; i++) {
		free(p->images[i]);
		for (size_t k = 0; k < p->cmds[i].argc; k++)
			free(p->cmds[i].argv[k]);
		free(p->cmds[i].argv);
	}
	free(p->images);
	free(p->cmds);
	free(p->clock);
	if (p->crash)
		free(p->crash->pcs);
	free(p->crash);
	ta_sess_patch_free(p->patch);
	if (p->filter)
		ta_filter_info_free(p->filter);
	free(p->filter);
	ta_keep_info_free(p->keep);
	for (size_t i = 0; i < p->nmodules; i++) {
		free(p->modules[i].path);
		free(p->modules[i].build_id);
		free(p->modules[i].ranges);
	}
	free(p->modules);
	for (size_t i = 0; i < p->nlibcalls; i++)
		free(p->libcalls[i].name);
	free(p->libcalls);
	for (size_t i = 0; i < p->nsites; i++) {
		free(p->sites[i].name);
		free(p->sites[i].file);
		free(p->sites[i].where);
	}
	free(p->sites);
	for (size_t i = 0; i < TA_CHANNELS_MAX; i++)
		free(p->channels[i].name);
	free(p->map);
	free(p->unloaded);
	free(p->pauses);
	free(p);
}

int64_t ta_session_start_ns(const struct ta_session *s)
{
	int64_t lo = 0;
	int any = 0;

	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];
		int64_t t;

		if (!p->have_ticks)
			continue;
		t = ta_process_ticks_ns(p, p->min_ticks);
		if (!any || t < lo)
			lo = t;
		any = 1;
	}
	return lo;
}

/* ---- threads --------------------------------------------------------------------- */

static uint64_t thash(uint32_t pid, uint64_t tid)
{
	return ((tid ^ ((uint64_t)pid << 32)) * 0x9e3779b97f4a7c15ull) >> 32;
}

static uint64_t thread_hash(const void *ctx, size_t i)
{
	const struct ta_sess_thread *t = ((const struct ta_session *)ctx)->threads[i];

	return thash(t->pid, t->tid);
}

struct thread_key {
	uint32_t pid;
	uint64_t tid;
};

static int thread_is(const void *ctx, size_t i, const void *key)
{
	const struct ta_sess_thread *t = ((const struct ta_session *)ctx)->threads[i];
	const struct thread_key *k = key;

	return t->pid == k->pid && t->tid == k->tid;
}

struct ta_sess_thread *ta_sess_thread_find(const struct ta_session *s, uint32_t pid, uint64_t tid)
{
	struct thread_key key = {pid, tid};
	uint32_t at;

	if (!s->thash.nslots)
		return NULL;
	at = ta_htab_at(&s->thash, ta_htab_find(&s->thash, thash(pid, tid), thread_is, s, &key));
	return at ? s->threads[at - 1] : NULL;
}

/* Adds a new thread instance, replacing any previous one with the same ids
 * in the hash (a tid the kernel reused after the first thread ended); the
 * old one stays in s->threads. */
struct ta_sess_thread *ta_sess_thread_new(struct ta_session *s, uint32_t pid, uint64_t tid)
{
	struct thread_key key = {pid, tid};
	struct ta_sess_thread *t;
	size_t k;

	if (ta_htab_reserve_held(&s->thash, s->nhashed, 64, thread_hash, s) < 0)
		return NULL;
	if (s->nthreads == s->threads_cap) {
		struct ta_sess_thread **v =
		    ta_vec_reserve(s->threads, s->nthreads + 1, &s->threads_cap, sizeof(*v), 16);

		if (!v)
			return NULL;
		s->threads = v;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->index = (uint32_t)s->nthreads;
	t->pid = pid;
	t->tid = tid;
	k = ta_htab_find(&s->thash, thash(pid, tid), thread_is, s, &key);
	if (ta_htab_at(&s->thash, k)) {
		ta_htab_del(&s->thash, k, thread_hash, s);
		s->nhashed--;
		k = ta_htab_find(&s->thash, thash(pid, tid), thread_is, s, &key);
	}
	s->threads[s->nthreads++] = t;
	ta_htab_put(&s->thash, k, t->index);
	s->nhashed++;
	return t;
}

struct ta_sess_thread *ta_session_thread(const struct ta_session *s, uint32_t pid, uint64_t tid)
{
	return ta_sess_thread_find(s, pid, tid);
}

struct ta_sess_thread *ta_sess_thread_get(struct ta_session *s, uint32_t pid, uint64_t tid)
{
	struct ta_sess_thread *t = ta_sess_thread_find(s, pid, tid);

	return t ? t : ta_sess_thread_new(s, pid, tid);
}

void ta_sess_thread_unhash(struct ta_session *s, struct ta_sess_thread *t)
{
	struct thread_key key = {t->pid, t->tid};
	size_t k;

	if (!s->thash.nslots)
		return;
	k = ta_htab_find(&s->thash, thash(t->pid, t->tid), thread_is, s, &key);
	if (ta_htab_at(&s->thash, k) == t->index + 1) {
		ta_htab_del(&s->thash, k, thread_hash, s);
		s->nhashed--;
	}
}

void ta_sess_thread_free(struct ta_sess_thread *t)
{
	free(t->name);
	free(t->stack);
	free(t->last_stack);
	free(t);
}
