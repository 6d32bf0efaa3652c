/* SPDX-License-Identifier: MIT */
/*
 * hookpatch_cache.h - hookpatch's analyses kept on disk, one file per
 * module build-id (hookpatch_cache.c), so that a process excluding
 * functions whose module was analysed before rewrites their hook calls
 * without decoding them, and without loading the decoder (capstone).
 *
 * In memory: the entries of one module, each the analysis of one function
 * (its offset and size in the module): the calls found (offset, bytes
 * before and after) or the refusal.  The file is only a copy of what the
 * decoder would say; hookpatch.c checks each call's bytes against the
 * loaded code before using an entry, so a wrong entry costs a decode,
 * never a wrong write.
 */
#ifndef TA_HOOKPATCH_CACHE_H
#define TA_HOOKPATCH_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* A call found, as in the file (32 bytes); or (kind TA_HPC_READ) a value
 * the decoder read from the module's data: at_off where, orig the value
 * less the load bias (u64). */
#define TA_HPC_READ 3
struct ta_hpc_site {
	uint64_t at_off; /* the instruction, from the module's load bias */
	uint8_t len, kind;
	uint8_t pad[6];
	uint8_t orig[8], repl[8];
};

/* One function's analysis. */
struct ta_hpc_ent {
	uint64_t fn_off, fn_size; /* from the load bias; st_size */
	uint64_t ret_off;	  /* the decoder's ret_at from the bias, or 0 */
	uint64_t code_hash;	  /* ta_hpc_hash of the function's bytes */
	int32_t result;		  /* calls found (>= 0), or the scan's -errno */
	uint32_t nreads;	  /* values read from the module's data */
	uint32_t first;		  /* its calls, then its reads: sites[first ...] */
};

/* What a file must match: the module's build-id and its file's size. */
struct ta_hpc_key {
	uint8_t id[32];
	uint32_t idlen; /* 0: no build-id, no cache */
	uint64_t file_size;
};

struct ta_hpc {
	struct ta_hpc_key key;
	struct ta_hpc_ent *e; /* sorted by fn_off once loaded; added at the end */
	size_t n, cap, nsorted;
	struct ta_hpc_site *sites;
	size_t nsites, sites_cap;
	int dirty; /* entries added since the load */
};

/* The format's version: a file of another is ignored (and replaced). */
#define TA_HPC_VERSION	 2
#define TA_HPC_MAX_SITES 64
#define TA_HPC_MAX_READS 8
/* Entries a file may hold (a module's functions, bounded). */
#define TA_HPC_MAX_ENTS (1u << 22)

/* The cache directory for settings value `setting` (TRACEAGENT_CACHE; NULL
 * or "" the default: $XDG_CACHE_HOME/traceagent, else
 * $HOME/.cache/traceagent), with xdg and home the variables' values; "off"
 * none.  0 with the path in out, or -1 (no cache). */
int ta_hpc_dir(char *out, size_t size, const char *setting, const char *xdg,
	       const char *home) TA_HIDDEN;
/* The file's name in that directory for key k: the build-id in hex and
 * ".hpc".  0, or -1 (no build-id). */
int ta_hpc_name(char *out, size_t size, const struct ta_hpc_key *k) TA_HIDDEN;

/* Adds the entries of the file image [p, p + len) to c when it is whole
 * and made for c->key: 0, or -1 (nothing added: foreign, truncated,
 * corrupt, of another version). */
int ta_hpc_parse(struct ta_hpc *c, const uint8_t *p, size_t len) TA_HIDDEN;
/* The file image of c (malloc'd, *len bytes), or NULL. */
uint8_t *ta_hpc_image(const struct ta_hpc *c, size_t *len) TA_HIDDEN;

/* Reads dir's file for c->key into c: 0, or -1 (none, or not valid). */
int ta_hpc_load(struct ta_hpc *c, const char *dir) TA_HIDDEN;
/* Writes c as dir's file for its key, atomically (a temporary file
 * renamed over it), making dir if needed: 0, or -1. */
int ta_hpc_store(const struct ta_hpc *c, const char *dir) TA_HIDDEN;

/* The entry of the function at fn_off of size fn_size, or NULL. */
const struct ta_hpc_ent *ta_hpc_find(const struct ta_hpc *c, uint64_t fn_off,
				     uint64_t fn_size) TA_HIDDEN;
/* Adds an entry: sites holds its calls (result of them; none when result
 * < 0), then its nreads reads.  0, or -1 (no memory, too many). */
int ta_hpc_add(struct ta_hpc *c, uint64_t fn_off, uint64_t fn_size, uint64_t ret_off,
	       uint64_t code_hash, int32_t result, uint32_t nreads,
	       const struct ta_hpc_site *sites) TA_HIDDEN;
/* The hash an entry keeps of its function's bytes (the format's CRC-32C). */
uint64_t ta_hpc_hash(const void *p, size_t n) TA_HIDDEN;
/* Empties c (its key kept). */
void ta_hpc_free(struct ta_hpc *c) TA_HIDDEN;

#endif
