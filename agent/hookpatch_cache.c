/* SPDX-License-Identifier: MIT */
/*
 * hookpatch_cache.c - hookpatch's analyses on disk (hookpatch_cache.h):
 * one file per module build-id in the cache directory, written whole to a
 * temporary file and renamed over the old one (two processes writing at
 * once each leave a whole file, the last rename wins), read whole and
 * checked before anything in it is used.
 *
 * The file (native byte order: a build-id names one machine's code):
 *   0   "TAHPCAC\n"
 *   8   u32 version (TA_HPC_VERSION), u32 build-id length (1..32)
 *   16  u8 build-id[32] (zero-padded)
 *   48  u64 the module file's size
 *   56  u64 entries, u64 calls
 *   72  u64 CRC-32C (the format's checksum) of everything after the header
 *   80  the entries, 40 bytes each, by increasing offset:
 *         u64 offset, u64 size, u64 ret offset, u64 hash of the function's
 *         bytes, i32 result, u32 reads
 *       then the calls (struct ta_hpc_site) of each entry (result of
 *       them, if > 0) followed by its reads, in the entries' order.
 * A file whose size, counts, order or sum do not add up is ignored whole.
 *
 * Not the hot path: called at the start and after a dlopen, under
 * hookpatch's lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "format.h"
#include "hookpatch_cache.h"

#define HDR_SIZE 80
#define ENT_SIZE 40

static const char magic[8] = {'T', 'A', 'H', 'P', 'C', 'A', 'C', '\n'};

/* ---- where ----------------------------------------------------------------------- */

int ta_hpc_dir(char *out, size_t size, const char *setting, const char *xdg, const char *home)
{
	int n;

	if (setting && *setting) {
		if (!strcmp(setting, "off"))
			return -1;
		n = snprintf(out, size, "%s", setting);
	} else if (xdg && xdg[0] == '/')
		n = snprintf(out, size, "%s/traceagent", xdg);
	else if (home && home[0] == '/')
		n = snprintf(out, size, "%s/.cache/traceagent", home);
	else
		return -1;
	return n > 0 && (size_t)n < size ? 0 : -1;
}

int ta_hpc_name(char *out, size_t size, const struct ta_hpc_key *k)
{
	static const char hex[] = "0123456789abcdef";

	if (k->idlen == 0 || k->idlen > sizeof(k->id) || size < 2 * k->idlen + 5)
		return -1;
	for (uint32_t i = 0; i < k->idlen; i++) {
		out[2 * i] = hex[k->id[i] >> 4];
		out[2 * i + 1] = hex[k->id[i] & 15];
	}
	memcpy(out + 2 * k->idlen, ".hpc", 5);
	return 0;
}

/* ---- the image ------------------------------------------------------------------- */

uint64_t ta_hpc_hash(const void *p, size_t n)
{
	return ta_crc32c(0, p, n);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static int reserve(struct ta_hpc *c, size_t nent, size_t nsites)
{
	struct ta_hpc_ent *e = ta_vec_reserve(c->e, nent ? nent : 1, &c->cap, sizeof(*e), 64);
	struct ta_hpc_site *s;

	if (!e)
		return -1;
	c->e = e;
	s = ta_vec_reserve(c->sites, nsites ? nsites : 1, &c->sites_cap, sizeof(*s), 64);
	if (!s)
		return -1;
	c->sites = s;
	return 0;
}

int ta_hpc_parse(struct ta_hpc *c, const uint8_t *p, size_t len)
{
	uint64_t nent, nsites, used = 0, prev = 0;
	const uint8_t *ents, *sites;
	uint32_t idlen;

	if (len < HDR_SIZE || memcmp(p, magic, sizeof(magic)) != 0 ||
	    get32(p + 8) != TA_HPC_VERSION)
		return -1;
	idlen = get32(p + 12);
	if (idlen != c->key.idlen || idlen == 0 || idlen > 32 ||
	    memcmp(p + 16, c->key.id, idlen) != 0 || get64(p + 48) != c->key.file_size)
		return -1;
	for (uint32_t i = 16 + idlen; i < 48; i++)
		if (p[i])
			return -1;
	nent = get64(p + 56);
	nsites = get64(p + 64);
	if (nent > TA_HPC_MAX_ENTS || nsites > (uint64_t)TA_HPC_MAX_ENTS * TA_HPC_MAX_SITES ||
	    len != HDR_SIZE + nent * ENT_SIZE + nsites * sizeof(struct ta_hpc_site) ||
	    ta_crc32c(0, p + HDR_SIZE, len - HDR_SIZE) != get64(p + 72))
		return -1;
	ents = p + HDR_SIZE;
	sites = ents + nent * ENT_SIZE;
	/* Checked whole before anything is kept. */
	for (uint64_t i = 0; i < nent; i++) {
		const uint8_t *q = ents + i * ENT_SIZE;
		int32_t r = (int32_t)get32(q + 32);

		if ((i > 0 && get64(q) <= prev) || r > TA_HPC_MAX_SITES || r < -4095 ||
		    get64(q + 8) == 0 || get32(q + 36) > TA_HPC_MAX_READS)
			return -1;
		prev = get64(q);
		used += (r > 0 ? (uint64_t)r : 0) + get32(q + 36);
	}
	if (used != nsites)
		return -1;
	for (uint64_t i = 0; i < nsites; i++) {
		struct ta_hpc_site s;

		memcpy(&s, sites + i * sizeof(s), sizeof(s));
		if (s.len == 0 || s.len > 8 || s.kind > TA_HPC_READ)
			return -1;
	}
	if (c->n || c->nsites || reserve(c, (size_t)nent, (size_t)nsites) < 0)
		return -1;
	used = 0;
	for (uint64_t i = 0; i < nent; i++) {
		const uint8_t *q = ents + i * ENT_SIZE;
		struct ta_hpc_ent *e = &c->e[i];

		e->fn_off = get64(q);
		e->fn_size = get64(q + 8);
		e->ret_off = get64(q + 16);
		e->code_hash = get64(q + 24);
		e->result = (int32_t)get32(q + 32);
		e->nreads = get32(q + 36);
		e->first = (uint32_t)used;
		used += (e->result > 0 ? (uint64_t)e->result : 0) + e->nreads;
	}
	if (nsites)
		memcpy(c->sites, sites, (size_t)nsites * sizeof(*c->sites));
	c->n = c->nsorted = (size_t)nent;
	c->nsites = (size_t)nsites;
	return 0;
}

/* By offset, the entry added last first (an entry found wrong for the
 * code is followed by the decoder's). */
static int ent_cmp(const void *a, const void *b)
{
	const struct ta_hpc_ent *x = *(const struct ta_hpc_ent *const *)a;
	const struct ta_hpc_ent *y = *(const struct ta_hpc_ent *const *)b;

	if (x->fn_off != y->fn_off)
		return x->fn_off < y->fn_off ? -1 : 1;
	return x > y ? -1 : x < y;
}

uint8_t *ta_hpc_image(const struct ta_hpc *c, size_t *len)
{
	const struct ta_hpc_ent **order;
	uint8_t *img, *q, *s;
	size_t n = 0, nsites = 0;
	uint32_t v;

	if (c->key.idlen == 0 || c->key.idlen > 32)
		return NULL;
	order = malloc((c->n ? c->n : 1) * sizeof(*order));
	if (!order)
		return NULL;
	for (size_t i = 0; i < c->n; i++)
		order[i] = &c->e[i];
	qsort(order, c->n, sizeof(*order), ent_cmp);
	/* One entry per offset. */
	for (size_t i = 0; i < c->n; i++) {
		if (n && order[n - 1]->fn_off == order[i]->fn_off)
			continue;
		order[n++] = order[i];
		nsites += (order[i]->result > 0 ? (size_t)order[i]->result : 0) + order[i]->nreads;
	}
	*len = HDR_SIZE + n * ENT_SIZE + nsites * sizeof(struct ta_hpc_site);
	img = calloc(1, *len);
	if (!img) {
		free(order);
		return NULL;
	}
	memcpy(img, magic, sizeof(magic));
	v = TA_HPC_VERSION;
	memcpy(img + 8, &v, 4);
	memcpy(img + 12, &c->key.idlen, 4);
	memcpy(img + 16, c->key.id, c->key.idlen);
	memcpy(img + 48, &c->key.file_size, 8);
	memcpy(img + 56, &(uint64_t){n}, 8);
	memcpy(img + 64, &(uint64_t){nsites}, 8);
	q = img + HDR_SIZE;
	s = q + n * ENT_SIZE;
	for (size_t i = 0; i < n; i++, q += ENT_SIZE) {
		memcpy(q, &order[i]->fn_off, 8);
		memcpy(q + 8, &order[i]->fn_size, 8);
		memcpy(q + 16, &order[i]->ret_off, 8);
		memcpy(q + 24, &order[i]->code_hash, 8);
		memcpy(q + 32, &order[i]->result, 4);
		memcpy(q + 36, &order[i]->nreads, 4);
		{
			size_t k = ((order[i]->result > 0 ? (size_t)order[i]->result : 0) +
				    order[i]->nreads) *
				   sizeof(struct ta_hpc_site);

			memcpy(s, &c->sites[order[i]->first], k);
			s += k;
		}
	}
	memcpy(img + 72, &(uint64_t){ta_crc32c(0, img + HDR_SIZE, *len - HDR_SIZE)}, 8);
	free(order);
	return img;
}

/* ---- in memory ------------------------------------------------------------------- */

const struct ta_hpc_ent *ta_hpc_find(const struct ta_hpc *c, uint64_t fn_off, uint64_t fn_size)
{
	size_t lo = 0, hi = c->nsorted;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->e[mid].fn_off < fn_off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->nsorted && c->e[lo].fn_off == fn_off)
		return c->e[lo].fn_size == fn_size ? &c->e[lo] : NULL;
	for (size_t i = c->nsorted; i < c->n; i++)
		if (c->e[i].fn_off == fn_off)
			return c->e[i].fn_size == fn_size ? &c->e[i] : NULL;
	return NULL;
}

int ta_hpc_add(struct ta_hpc *c, uint64_t fn_off, uint64_t fn_size, uint64_t ret_off,
	       uint64_t code_hash, int32_t result, uint32_t nreads, const struct ta_hpc_site *sites)
{
	size_t k = (result > 0 ? (size_t)result : 0) + nreads;
	struct ta_hpc_ent *e;

	if (result > TA_HPC_MAX_SITES || nreads > TA_HPC_MAX_READS || c->n >= TA_HPC_MAX_ENTS ||
	    fn_size == 0 || reserve(c, c->n + 1, c->nsites + k) < 0)
		return -1;
	e = &c->e[c->n++];
	e->fn_off = fn_off;
	e->fn_size = fn_size;
	e->ret_off = ret_off;
	e->code_hash = code_hash;
	e->result = result;
	e->nreads = nreads;
	e->first = (uint32_t)c->nsites;
	if (k)
		memcpy(&c->sites[c->nsites], sites, k * sizeof(*sites));
	c->nsites += k;
	c->dirty = 1;
	return 0;
}

void ta_hpc_free(struct ta_hpc *c)
{
	free(c->e);
	free(c->sites);
	c->e = NULL;
	c->sites = NULL;
	c->n = c->cap = c->nsorted = c->nsites = c->sites_cap = 0;
	c->dirty = 0;
}

/* ---- on disk --------------------------------------------------------------------- */

int ta_hpc_load(struct ta_hpc *c, const char *dir)
{
	char name[80], path[4200];
	struct stat st;
	void *p;
	int fd, rc;

	if (ta_hpc_name(name, sizeof(name), &c->key) < 0 ||
	    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < HDR_SIZE ||
	    (uint64_t)st.st_size > HDR_SIZE + (uint64_t)TA_HPC_MAX_ENTS * ENT_SIZE * 4) {
		close(fd);
		return -1;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	rc = ta_hpc_parse(c, p, (size_t)st.st_size);
	munmap(p, (size_t)st.st_size);
	return rc;
}

/* mkdir -p of dir (mode 0700 for what it makes): 0, or -1. */
static int make_dir(const char *dir)
{
	char p[4200];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(p))
		return -1;
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		p[i] = 0;
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return -1;
		p[i] = i < n ? '/' : 0;
	}
	return 0;
}

int ta_hpc_store(const struct ta_hpc *c, const char *dir)
{
	char name[80], path[4200], tmp[4300];
	size_t len, off = 0;
	uint8_t *img;
	int fd, ok;

	if (ta_hpc_name(name, sizeof(name), &c->key) < 0 ||
	    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s.%d.%lx.tmp", path, (int)getpid(),
			     (unsigned long)(uintptr_t)&tmp) >= sizeof(tmp))
		return -1;
	if (make_dir(dir) < 0)
		return -1;
	img = ta_hpc_image(c, &len);
	if (!img)
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		free(img);
		return -1;
	}
	while (off < len) {
		ssize_t w = write(fd, img + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(img);
	ok = off == len;
	if (close(fd) < 0)
		ok = 0;
	if (!ok || rename(tmp, path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}
