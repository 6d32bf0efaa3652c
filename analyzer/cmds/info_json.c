/* SPDX-License-Identifier: MIT */
/*
 * info_json.c - `traceagent info --json`: one object per process under
 * "processes", each section an object of its own (settings, clock,
 * threads, modules, crash, patch, filter, channels), then the file's.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info_int.h"

static void json_patch(const struct ta_patch *pt)
{
	printf("    \"patch\": {\"patched\": %" PRIu64 ", \"refused_count\": %" PRIu64
	       ", \"frames_without_exit\": %" PRIu64 ", \"refused\": [",
	       pt->patched, pt->nrefused, pt->frames_without_exit);
	for (uint64_t i = 0; i < pt->nrefused; i++) {
		const struct ta_patch_refusal *f = &pt->refused[i];
		printf("%s\n      {\"module\": ", i ? "," : "");
		ta_json_str(stdout, f->module);
		printf(", \"name\": ");
		ta_json_str(stdout, f->name);
		printf(", \"address\": %" PRIu64 ", \"code\": %" PRIu64 ", \"reason\": ", f->addr,
		       f->code);
		ta_json_str(stdout, f->reason);
		putchar('}');
	}
	printf("]");
	if (pt->has_method) {
		printf(", \"relocated\": %" PRIu64 ", \"return_stub\": [", pt->relocated);
		for (uint64_t i = 0; i < pt->nfallback; i++) {
			const struct ta_patch_fallback *f = &pt->fallback[i];
			printf("%s{\"code\": %" PRIu64 ", \"count\": %" PRIu64 ", \"reason\": ",
			       i ? ", " : "", f->code, f->count);
			ta_json_str(stdout, f->reason);
			putchar('}');
		}
		putchar(']');
	}
	if (pt->patchable_entry)
		printf(", \"patchable_entry\": %" PRIu64, pt->patchable_entry);
	printf("},\n");
}

static void json_filter(struct ta_view *v, const struct ta_process *p)
{
	const struct ta_filter_info *f = p->filter;

	printf("    \"filters\": {\"filter\": ");
	ta_json_str(stdout, f->filter);
	printf(", \"exclude\": ");
	ta_json_str(stdout, f->exclude);
	printf(", \"depth\": %" PRIu64 ", \"min_duration_ns\": %" PRIu64
	       ", \"patched_out\": %" PRIu64 ", \"run_time\": %" PRIu64 ", \"functions\": [",
	       f->depth, f->min_duration_ns, ta_info_count_how(f, TA_FILTER_HOW_PATCHED),
	       ta_info_count_how(f, TA_FILTER_HOW_RUNTIME));
	for (uint64_t i = 0; i < f->nfns; i++) {
		struct ta_fn fn;
		char k[64];

		ta_view_name(v, p->pid, f->fns[i].addr, &fn);
		printf("%s\n      {\"name\": ", i ? "," : "");
		ta_json_str(stdout, fn.name);
		printf(", \"module\": ");
		ta_json_str(stdout, fn.module);
		printf(", \"address\": %" PRIu64 ", \"how\": \"%s\", \"kind\": \"%s\"}",
		       f->fns[i].addr,
		       f->fns[i].how == TA_FILTER_HOW_PATCHED	? "patched"
		       : f->fns[i].how == TA_FILTER_HOW_RUNTIME ? "run-time"
								: "other",
		       ta_info_filter_kind(k, sizeof(k), f->fns[i].kind));
	}
	printf("]},\n");
}

static void json_channels(const struct api_counts *a)
{
	struct channel_row *rows;
	char(*names)[32] = calloc((a->v->s->nprocs + a->npc) * TA_CHANNELS_MAX + 1, 32);
	long n = names ? ta_info_channel_rows(a, &rows, names) : -1;
	uint64_t switches = 0;

	printf(" \"channels\": [");
	for (long r = 0; r < n; r++) {
		printf("%s{\"name\": ", r ? ", " : "");
		ta_json_str(stdout, rows[r].name);
		for (int c = 0; c < CH_NCOUNTS; c++)
			printf(", \"%s\": %" PRIu64, ch_keys[c], rows[r].n[c]);
		putchar('}');
		switches += rows[r].n[CH_SWITCHES];
	}
	printf("], \"channel_switches\": %" PRIu64 ", \"zone_end_unmatched\": %" PRIu64 ",\n",
	       switches, a->unmatched);
	if (n >= 0)
		free(rows);
	free(names);
}

/* pc as recorded, and the session's key of the function it is in (for a
 * return address, of the call before it). */
static void json_pc(struct ta_view *v, uint32_t pid, uint64_t pc, uint64_t key)
{
	struct ta_fn fn;

	ta_view_name(v, pid, key, &fn);
	printf("{\"pc\": %" PRIu64 ", \"function\": ", pc);
	ta_json_str(stdout, fn.name);
	printf(", \"module\": ");
	ta_json_str(stdout, fn.module);
	putchar('}');
}

static void json_crash(struct ta_view *v, const struct ta_process *p)
{
	const struct ta_crash *c = p->crash;
	char b[32];

	printf("    \"crash\": {\"signal\": %" PRIu64
	       ", \"signal_name\": \"%s\", \"code\": %" PRId64 ", \"address\": %" PRIu64
	       ", \"tid\": %" PRIu64 ",\n      \"backtrace\": [",
	       c->signal, ta_info_signal_name(b, sizeof(b), c->signal), c->code, c->addr, c->tid);
	for (size_t i = 0; i < c->npcs; i++) {
		printf("%s", i ? ", " : "");
		json_pc(v, p->pid, c->pcs[i], ta_process_addr_at(p, c->pcs[i] - (i > 0), c->ticks));
	}
	printf("],\n      \"stacks\": [");
	for (size_t i = 0, first = 1; i < v->s->nthreads; i++) {
		const struct ta_sess_thread *t = v->s->threads[i];

		if (t->pid != p->pid)
			continue;
		printf("%s{\"tid\": %" PRIu64 ", \"open\": [", first ? "" : ", ", t->tid);
		for (uint32_t k = 0; k < t->last_depth; k++) {
			printf("%s", k ? ", " : "");
			json_pc(v, p->pid, ta_process_addr(p, t->last_stack[k]), t->last_stack[k]);
		}
		printf("]}");
		first = 0;
	}
	printf("]},\n");
}

static void json_process(struct ta_view *v, const struct ta_process *p)
{
	const struct ta_session *s = v->s;
	struct counts c = ta_info_process_counts(s, p);
	char b[64], lcb[64];
	int first = 1;

	putchar('{');
	ta_json_pid(stdout, s, p->pid);
	printf(", ");
	if (p->has_info) {
		printf("\"ppid\": %" PRIu64 ", \"exe\": ", p->ppid);
		ta_json_str(stdout, p->exe);
		printf(", \"argv\": [");
		for (size_t i = 0; i < p->argc; i++) {
			printf("%s", i ? ", " : "");
			ta_json_str(stdout, p->argv[i]);
		}
		printf("], \"commands\": [");
		for (size_t k = 0; k < p->nimages; k++) {
			printf("%s[", k ? ", " : "");
			for (size_t i = 0; i < p->cmds[k].argc; i++) {
				printf("%s", i ? ", " : "");
				ta_json_str(stdout, p->cmds[k].argv[i]);
			}
			putchar(']');
		}
		printf("], \"arch\": ");
		ta_json_str(stdout, p->arch);
		printf(",\n    \"start_realtime_ns\": %" PRIu64 ", \"start_time\": \"%s\", ",
		       p->start_realtime_ns, ta_info_iso_time(b, sizeof(b), p->start_realtime_ns));
	} else {
		printf("\"ppid\": null, \"exe\": null, \"argv\": null, \"commands\": null, "
		       "\"arch\": null,\n    "
		       "\"start_realtime_ns\": null, \"start_time\": null, ");
	}
	printf("\"duration_ns\": %" PRIu64 ",\n", ta_info_process_duration_ns(p));
	printf("    \"clock\": {\"source\": \"%s\", \"nominal_hz\": %" PRIu64
	       ", \"pairs\": %zu, \"calibrated\": %s, \"ticks_per_second\": %.3f},\n",
	       p->has_info ? ta_info_clock_name(p->clock_source) : "unknown", p->nominal_hz,
	       p->nclock, p->uncalibrated ? "false" : "true", ta_info_ticks_per_second(p));
	if (p->has_info)
		printf("    \"settings\": {\"block_size\": %" PRIu64 ", \"memory_cap\": %" PRIu64
		       ", \"flush_ms\": %" PRIu64 ", \"mode\": \"%s\", \"libcalls\": \"%s\"},\n",
		       p->block_size, p->memory_cap, p->flush_ms, ta_info_mode_name(p->mode),
		       ta_info_libcall_classes(lcb, sizeof(lcb), p->libcall_classes));
	else
		printf("    \"settings\": null,\n");
	printf("    \"events\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"lost_no_ring\": %" PRIu64
	       ", \"chunks_missing\": %" PRIu64 ", \"lost_by_cause\": ",
	       c.events, c.lost, ta_process_lost_no_ring(s, p), p->chunks_missing);
	ta_print_lost_by_json(p->end_lost_by);
	printf(",\n");
	printf("    \"pauses\": %zu, \"paused_ns\": %" PRIu64 ", \"ctl_channel_switches\": %" PRIu64
	       ",\n",
	       p->npauses, ta_info_paused_ns(p), p->channel_marks);
	if (p->crash)
		json_crash(v, p);
	else
		printf("    \"crash\": null,\n");
	if (p->patch)
		json_patch(p->patch);
	else
		printf("    \"patch\": null,\n");
	if (p->filter)
		json_filter(v, p);
	else
		printf("    \"filters\": null,\n");
	if (p->keep) {
		printf("    \"keep\": ");
		ta_keep_json(stdout, p->keep);
		printf(",\n");
	}
	if (p->has_end)
		printf("    \"end\": {\"events\": %" PRIu64 ", \"lost\": %" PRIu64
		       ", \"threads\": %" PRIu64 ", \"data_lost\": %s, \"reserve_blocks\": %" PRIu64
		       ", \"signal\": %" PRIu64 ", \"write_failed_at\": %" PRIu64
		       ", \"write_errno\": %" PRIu64 "},\n",
		       p->end_events, p->end_lost, p->end_threads,
		       p->end_flags & 1 ? "true" : "false", p->end_reserve_blocks,
		       (p->end_flags & TA_END_F_SIGNAL) ? p->end_signal : 0,
		       p->end_failed_errno ? p->end_failed_at : 0, p->end_failed_errno);
	else
		printf("    \"end\": null,\n");
	if (p->cut_cause) {
		printf("    \"cut\": {\"cause\": \"%s\", \"value\": %" PRIu64 ", \"why\": ",
		       p->cut_cause == TA_CUT_KILLED   ? "killed"
		       : p->cut_cause == TA_CUT_STREAM ? "stream"
						       : "unknown",
		       p->cut_value);
		ta_json_str(stdout, p->cut_text);
		printf("},\n");
	} else {
		printf("    \"cut\": null,\n");
	}
	printf("    \"attached\": %s, \"open_at_start\": %" PRIu64 ",\n",
	       p->end_flags & TA_END_F_ATTACH ? "true" : "false",
	       p->end_flags & TA_END_F_ATTACH ? ta_info_open_at_start(s, p) : 0);
	printf("    \"threads\": [");
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct ta_sess_thread *t = s->threads[i];

		if (t->pid != p->pid)
			continue;
		printf("%s\n      {\"tid\": %" PRIu64 ", \"name\": ", first ? "" : ",", t->tid);
		ta_json_str(stdout, t->name ? t->name : "");
		printf(", \"parent_tid\": %" PRIu64 ", \"events\": %" PRIu64 ", \"lost\": %" PRIu64
		       ", \"wait_ns\": %" PRIu64 ", \"ended\": %s}",
		       t->parent_tid, t->events, ta_thread_lost(t),
		       ta_process_dur_ns(p, t->wait_ticks), t->has_end ? "true" : "false");
		first = 0;
	}
	printf("%s],\n    \"modules\": [", first ? "" : "\n    ");
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct ta_sess_module *m = &p->modules[i];
		const struct ta_sym_origin *o;
		char id[2 * 64 + 1], *lines;

		ta_info_hex(id, sizeof(id), m->build_id, m->build_id_len);
		printf("%s\n      {\"path\": ", i ? "," : "");
		ta_json_str(stdout, m->path);
		/* When it appeared and went, from the process's start. */
		printf(", \"bias\": %" PRIu64
		       ", \"build_id\": \"%s\", \"main\": %s, \"load_ns\": %" PRIu64
		       ", \"unload_ns\": ",
		       m->bias, id, m->flags & 1 ? "true" : "false",
		       ta_process_dur_ns(
			   p, m->load_ticks > p->start_ticks ? m->load_ticks - p->start_ticks : 0));
		if (m->unload_ticks != UINT64_MAX)
			printf("%" PRIu64,
			       ta_process_dur_ns(p, m->unload_ticks > p->start_ticks
							? m->unload_ticks - p->start_ticks
							: 0));
		else
			printf("null");
		printf(", \"ranges\": [");
		for (size_t k = 0; k < m->nranges; k++)
			printf("%s[%" PRIu64 ", %" PRIu64 "]", k ? ", " : "", m->ranges[k].start,
			       m->ranges[k].end);
		o = ta_info_symbols(v, m);
		printf("], \"symbols_from\": \"%s\", \"symbols_path\": ",
		       ta_info_symbols_from(o->source));
		if (o->path)
			ta_json_str(stdout, o->path);
		else
			printf("null");
		printf(", \"build_id_match\": %s, \"lines_from\": \"%s\", \"lines_path\": ",
		       o->match > 0 ? "true"
		       : !o->match  ? "false"
				    : "null",
		       ta_info_symbols_from(ta_info_lines(m, &lines)));
		if (lines)
			ta_json_str(stdout, lines);
		else
			printf("null");
		free(lines);
		printf("}");
	}
	printf("%s]}", p->nmodules ? "\n    " : "");
}

void ta_info_print_json(struct ta_view *v, const struct api_counts *a)
{
	const struct ta_session *s = v->s;
	const char *why = ta_view_incomplete(v);

	printf("{\"dump\": ");
	ta_json_str(stdout, v->path);
	printf(", \"format\": {\"major\": %u, \"minor\": %u}, \"file_bytes\": %" PRIu64 ",\n",
	       s->fh.major, s->fh.minor, ta_info_file_size(v));
	printf(" \"complete\": %s, \"incomplete\": ", why ? "false" : "true");
	if (why)
		ta_json_str(stdout, why);
	else
		printf("null");
	printf(", \"errors\": ");
	ta_json_errors(stdout, v);
	printf(",\n \"chunks\": %" PRIu64 ", \"events_chunks\": %" PRIu64
	       ", \"unknown_chunks\": %" PRIu64 ", \"stored_bytes\": %" PRIu64
	       ", \"raw_bytes\": %" PRIu64 ", \"compression_ratio\": ",
	       s->chunks, s->events_chunks, s->unknown_chunks, s->stored_bytes, s->raw_bytes);
	if (s->stored_bytes)
		printf("%.3f", (double)s->raw_bytes / (double)s->stored_bytes);
	else
		printf("null");
	printf(",\n \"events\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"lost_no_ring\": %" PRIu64
	       ", \"lost_by_cause\": ",
	       v->events, v->lost, v->lost_no_ring);
	ta_print_lost_by_json(v->lost_by);
	printf(", \"threads\": %zu, \"duration_ns\": %" PRIu64 ",\n", s->nthreads,
	       ta_session_duration_ns(s));
	json_channels(a);
	ta_info_app_json(a);
	printf(" \"processes\": [");
	for (size_t i = 0; i < s->nprocs; i++) {
		printf("%s\n  ", i ? "," : "");
		json_process(v, s->procs[i]);
	}
	printf("%s]}\n", s->nprocs ? "\n " : "");
}
