/* SPDX-License-Identifier: MIT */
/*
 * test_info.c - `traceagent info` (analyzer/cmds/info.c), run as the real command
 * on a synthetic dump in which every field has a known value: process,
 * clock calibration, settings, threads with names, parents, loss and wait
 * times, modules with build-ids, chunk and byte counts, completeness.
 */
#include "cmdtest.h"
#include "../check_run.h"

static void u(struct pb *b, uint64_t v)
{
	pb_u(b, v);
}

static void chunk(struct dumpgen *g, unsigned type, struct pb *b)
{
	dg_chunk(g, type, b->p, b->len);
	pb_free(b);
	memset(b, 0, sizeof(*b));
}

/*
 * Process 4242 (parent 4000) ran "prog -x 'a b'", started at
 * 1700000000.123456789 (2023-11-14T22:13:20.123456789Z) with the counter at
 * 1000; the clock pairs say 3 ticks per ns.  Settings: 128 KiB blocks,
 * 64 MiB cap, 20 ms flushes.  Thread 4242 "prog" (4 events, waited 3000
 * ticks = 1 us at the cap) started thread 4243 "worker", renamed "pool-1"
 * (2 events, 5 lost).  Modules: the program with build-id deadbeef, and
 * libc without one.  Events from tick 4000 to 16000; END at tick 31000.
 */
static void info_dump(struct dumpgen *g, int with_end)
{
	static const uint64_t pairs[2][2] = {{1000, 5000}, {3001000, 1005000}};
	struct pb b = {0};
	struct ta_encoder e;

	dg_init(g, 4242);
	u(&b, 4242);
	u(&b, 4000);
	u(&b, 1700000000123456789ull);
	u(&b, 1000);
	u(&b, TA_CLOCK_RDTSC);
	u(&b, 0);
	pb_str(&b, "x86_64");
	pb_str(&b, "/usr/bin/prog");
	u(&b, 3);
	pb_str(&b, "prog");
	pb_str(&b, "-x");
	pb_str(&b, "a b");
	u(&b, 128 << 10);
	u(&b, 64 << 20);
	u(&b, 20);
	chunk(g, TA_CHUNK_PROCESS, &b);
	dg_clock(g, 2, pairs);

	u(&b, 1000);
	u(&b, 0x555555554000ull);
	pb_str(&b, "/usr/bin/prog");
	pb_bytes(&b, "\xde\xad\xbe\xef", 4);
	u(&b, 1);
	u(&b, 1);
	u(&b, 0x555555555000ull);
	u(&b, 0x555555556000ull);
	chunk(g, TA_CHUNK_MODULE, &b);
	dg_module(g, "/lib/libc.so.6", 0x7f0000000000ull, 0, 0x7f0000001000ull, 0x7f0000100000ull);

	u(&b, 4242);
	u(&b, 4000);
	u(&b, 1000);
	pb_str(&b, "prog");
	chunk(g, TA_CHUNK_THREAD_START, &b);
	u(&b, 4243);
	u(&b, 4242);
	u(&b, 2000);
	pb_str(&b, "worker");
	chunk(g, TA_CHUNK_THREAD_START, &b);
	dg_thread_name(g, 4243, 2500, "pool-1");

	ta_encoder_init(&e, 4242);
	ta_encoder_begin(&e, 4000);
	ev(&e, 4000, 0x555555555100ull, 0);
	ev(&e, 5000, 0x555555555200ull, 0);
	ev(&e, 6000, 0x555555555200ull, 1);
	ev(&e, 16000, 0x555555555100ull, 1);
	dg_events(g, &e);
	ta_encoder_free(&e);
	ta_encoder_init(&e, 4243);
	ta_encoder_begin(&e, 7000);
	ev(&e, 7000, 0x555555555200ull, 0);
	REQUIRE(ta_encoder_lost(&e, 7500, 5) == 0, "lost");
	ev(&e, 8000, 0x555555555200ull, 1);
	dg_events(g, &e);
	ta_encoder_free(&e);

	u(&b, 4243);
	u(&b, 9000);
	u(&b, 2);
	u(&b, 5);
	u(&b, 0);
	chunk(g, TA_CHUNK_THREAD_END, &b);
	u(&b, 4242);
	u(&b, 30000);
	u(&b, 4);
	u(&b, 0);
	u(&b, 3000);
	chunk(g, TA_CHUNK_THREAD_END, &b);
	if (with_end)
		dg_end(g, 31000, 15000, 6, 5, 2, 0);
}

/* Bytes of the chunk payloads: the file minus its headers. */
static uint64_t payload_bytes(const struct dumpgen *g, unsigned nchunks)
{
	return g->len - TA_FILE_HEADER_SIZE - (uint64_t)nchunks * TA_CHUNK_HEADER_SIZE;
}

START_TEST(json)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64], want[8192];
	uint64_t bytes;

	info_dump(&g, 1);
	dg_write_tmp(&g, path);
	bytes = payload_bytes(&g, 12);
	run(o, "info", "--json", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_str_eq(o->err, "");
	snprintf(
	    want, sizeof(want),
	    "{\"dump\": \"%s\", \"format\": {\"major\": %d, \"minor\": %d}, "
	    "\"file_bytes\": %zu,\n"
	    " \"complete\": true, \"incomplete\": null, \"errors\": [],\n"
	    " \"chunks\": 12, \"events_chunks\": 2, \"unknown_chunks\": 0, "
	    "\"stored_bytes\": %llu, \"raw_bytes\": %llu, \"compression_ratio\": 1.000,\n"
	    " \"events\": 6, \"lost\": 5, \"lost_no_ring\": 0, \"lost_by_cause\": {\"dropped\": 0, "
	    "\"no-ring\": 0, \"nested\": 0, \"stopped\": 0, \"zone-depth\": 0, \"starting\": 0, "
	    "\"no-memory\": 0}, \"threads\": 2, \"duration_ns\": 10000,\n"
	    " \"channels\": [], \"channel_switches\": 0, \"zone_end_unmatched\": 0,\n"
	    " \"processes\": [\n"
	    "  {\"pid\": 4242, \"pid_nth\": 1, \"boot_start\": null, \"ppid\": 4000, \"exe\": "
	    "\"/usr/bin/prog\", "
	    "\"argv\": [\"prog\", \"-x\", \"a b\"], \"commands\": [[\"prog\", \"-x\", \"a b\"]], "
	    "\"arch\": \"x86_64\",\n"
	    "    \"start_realtime_ns\": 1700000000123456789, "
	    "\"start_time\": \"2023-11-14T22:13:20.123456789Z\", \"duration_ns\": 10000,\n"
	    "    \"clock\": {\"source\": \"rdtsc\", \"nominal_hz\": 0, \"pairs\": 2, "
	    "\"calibrated\": true, \"ticks_per_second\": 3000000000.000},\n"
	    "    \"settings\": {\"block_size\": 131072, \"memory_cap\": 67108864, "
	    "\"flush_ms\": 20, \"mode\": \"lossless\", \"libcalls\": \"none\"},\n"
	    "    \"events\": 6, \"lost\": 5, \"lost_no_ring\": 0, \"chunks_missing\": 0, "
	    "\"lost_by_cause\": {\"dropped\": 0, \"no-ring\": 0, \"nested\": 0, \"stopped\": 0, "
	    "\"zone-depth\": 0, \"starting\": 0, \"no-memory\": 0},\n"
	    "    \"pauses\": 0, \"paused_ns\": 0, \"ctl_channel_switches\": 0,\n"
	    "    \"crash\": null,\n"
	    "    \"patch\": null,\n"
	    "    \"filters\": null,\n"
	    "    \"end\": {\"events\": 6, \"lost\": 5, \"threads\": 2, \"data_lost\": false, "
	    "\"reserve_blocks\": 0, "
	    "\"signal\": 0, \"write_failed_at\": 0, \"write_errno\": 0},\n"
	    "    \"cut\": null,\n"
	    "    \"attached\": false, \"open_at_start\": 0,\n"
	    "    \"threads\": [\n"
	    "      {\"tid\": 4242, \"name\": \"prog\", \"parent_tid\": 4000, \"events\": 4, "
	    "\"lost\": 0, \"wait_ns\": 1000, \"ended\": true},\n"
	    "      {\"tid\": 4243, \"name\": \"pool-1\", \"parent_tid\": 4242, \"events\": 2, "
	    "\"lost\": 5, \"wait_ns\": 0, \"ended\": true}\n"
	    "    ],\n"
	    "    \"modules\": [\n"
	    "      {\"path\": \"/usr/bin/prog\", \"bias\": 93824992231424, "
	    "\"build_id\": \"deadbeef\", \"main\": true, \"load_ns\": 0, \"unload_ns\": null, "
	    "\"ranges\": [[93824992235520, 93824992239616]], \"symbols_from\": \"none\", "
	    "\"symbols_path\": null, \"build_id_match\": null, "
	    "\"lines_from\": \"none\", \"lines_path\": null},\n"
	    "      {\"path\": \"/lib/libc.so.6\", \"bias\": 139637976727552, \"build_id\": \"\", "
	    "\"main\": false, \"load_ns\": 0, \"unload_ns\": null, "
	    "\"ranges\": [[139637976731648, 139637977776128]], \"symbols_from\": \"none\", "
	    "\"symbols_path\": null, \"build_id_match\": null, "
	    "\"lines_from\": \"none\", \"lines_path\": null}\n"
	    "    ]}\n"
	    " ]}\n",
	    path, TA_FORMAT_MAJOR, TA_FORMAT_MINOR, g.len, (unsigned long long)bytes,
	    (unsigned long long)bytes);
	ck_assert_str_eq(o->out, want);
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(text)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64], want[8192];

	info_dump(&g, 1);
	dg_write_tmp(&g, path);
	run(o, "info", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_str_eq(o->err, "");
	snprintf(want, sizeof(want),
		 "dump:          %s\n"
		 "format:        %d.%d\n",
		 path, TA_FORMAT_MAJOR, TA_FORMAT_MINOR);
	ck_assert_msg(!strncmp(o->out, want, strlen(want)), "%s", o->out);
	ck_assert_ptr_nonnull(strstr(o->out, "\ncomplete:      yes\n"));
	ck_assert_ptr_nonnull(strstr(o->out,
				     "\nevents:        6, lost 5\n"
				     "duration:      10.000 us\n"
				     "processes:     1\n"
				     "errors:        0\n"
				     "\n"
				     "process 4242 (parent 4000)\n"
				     "  command:     prog -x a b\n"
				     "  executable:  /usr/bin/prog\n"
				     "  arch:        x86_64\n"
				     "  started:     2023-11-14T22:13:20.123456789Z\n"
				     "  duration:    10.000 us\n"
				     "  clock:       rdtsc, 3000000000 ticks/s from 2 clock pairs\n"
				     "  settings:    block 128.0 KiB, memory cap 64.0 MiB, "
				     "flush every 20 ms, mode lossless\n"
				     "  libcalls:    none\n"
				     "  events:      6, lost 5\n"));
	ck_assert_msg(strstr(o->out,
			     "  end:         present (6 events, 5 lost, 2 threads, by the "
			     "writer)\n"
			     "  threads:     2\n"
			     "         tid     parent       events     lost         wait  name\n"
			     "        4242       4000            4        0     1.000 us  prog\n"
			     "        4243       4242            2        5         0 ns  pool-1\n"
			     "  modules:     2\n"
			     "        0x555555554000  deadbeef     "),
		      "%s", o->out);
	ck_assert_msg(strstr(o->out, "  /usr/bin/prog  (main)\n"
				     "                       symbols: none (no file to check)\n"
				     "                       lines:   none\n"
				     "        0x7f0000000000  -     "),
		      "%s", o->out);
	ck_assert_msg(strstr(o->out, "  /lib/libc.so.6\n"
				     "                       symbols: none (no build-id recorded)\n"
				     "                       lines:   none\n"),
		      "%s", o->out);
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(incomplete)
{
	/* Without END: exit 1, and it says so; cut short: exit 1, and the
	 * error is listed with what could be read. */
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64];

	info_dump(&g, 0);
	dg_write_tmp(&g, path);
	run(o, "info", "--json", path, NULL);
	ck_assert_int_eq(o->status, 1);
	ck_assert_ptr_nonnull(strstr(o->out, "\"complete\": false, \"incomplete\": \"no end chunk: "
					     "the program was killed or is still running\", "
					     "\"errors\": []"));
	ck_assert_ptr_nonnull(strstr(o->out, "\"end\": null,"));
	run(o, "info", path, NULL);
	ck_assert_ptr_nonnull(strstr(o->out, "\n  end:         missing (the program was killed or "
					     "is still running)\n"));
	unlink(path);
	dg_write_bytes_tmp(g.buf, g.len - 5, path);
	run(o, "info", "--json", path, NULL);
	ck_assert_int_eq(o->status, 1);
	ck_assert_ptr_nonnull(strstr(o->err, ": truncated\n"));
	ck_assert_msg(strstr(o->out, "\"complete\": false, \"incomplete\": \"the dump is "
				     "damaged\", \"errors\": [\"chunk 10 at offset "),
		      "%s", o->out);
	ck_assert_ptr_nonnull(strstr(o->out, "\"chunks\": 10,"));
	unlink(path);
	run(o, "info", "/nonexistent/x.trace", NULL);
	ck_assert_int_eq(o->status, 2);
	ck_assert_str_eq(o->err, "traceagent: /nonexistent/x.trace: No such file or directory\n");
	run(o, "info", NULL);
	ck_assert_int_eq(o->status, 2);
	run(o, "info", "--bogus", "x", NULL);
	ck_assert_int_eq(o->status, 2);
	free(o);
	dg_free(&g);
}
END_TEST

/* A PATCH chunk (dynamic patching): the counts and refusals in text and
 * JSON; the last chunk replaces an earlier one; a chunk that lies about
 * its count, or is cut inside a refusal, is an error naming the chunk. */
static void patch_chunk(struct dumpgen *g, uint64_t patched, uint64_t count, int cut)
{
	struct pb b = {0};

	u(&b, patched);
	u(&b, count);
	u(&b, 3);
	pb_str(&b, "/usr/bin/prog");
	pb_str(&b, "tiny");
	u(&b, 0x555555555300ull);
	u(&b, 1);
	pb_str(&b, "too short for a 5-byte jump");
	if (!cut) {
		pb_str(&b, "/usr/lib/libz.so.1");
		pb_str(&b, "spin");
		u(&b, 0x7f0000002000ull);
		u(&b, 99);
		pb_str(&b, "a reason from a later agent");
	}
	chunk(g, TA_CHUNK_PATCH, &b);
}

START_TEST(patch)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64];

	info_dump(&g, 0);
	patch_chunk(&g, 1, 2, 0);
	patch_chunk(&g, 7, 2, 0);
	dg_end(&g, 31000, 15000, 6, 5, 2, 0);
	dg_write_tmp(&g, path);
	run(o, "info", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_msg(strstr(o->out,
			     "\n  patched 7 functions, refused 2:\n"
			     "    tiny (prog, 0x555555555300): too short for a 5-byte jump\n"
			     "    spin (libz.so.1, 0x7f0000002000): a reason from a later agent\n"
			     "  patched calls deeper than the return stack (exit not "
			     "recorded): 3\n"
			     "  threads:     2\n"),
		      "%s", o->out);
	run(o, "info", "--json", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_msg(strstr(o->out,
			     "    \"patch\": {\"patched\": 7, \"refused_count\": 2, "
			     "\"frames_without_exit\": 3, \"refused\": [\n"
			     "      {\"module\": \"/usr/bin/prog\", \"name\": \"tiny\", "
			     "\"address\": 93824992236288, \"code\": 1, \"reason\": \"too "
			     "short for a 5-byte jump\"},\n"
			     "      {\"module\": \"/usr/lib/libz.so.1\", \"name\": \"spin\", "
			     "\"address\": 139637976735744, \"code\": 99, \"reason\": \"a "
			     "reason from a later agent\"}]},\n"),
		      "%s", o->out);
	unlink(path);
	dg_free(&g);

	for (int cut = 0; cut < 2; cut++) {
		info_dump(&g, 0);
		patch_chunk(&g, 1, cut ? 2 : 1000000, cut);
		dg_end(&g, 31000, 15000, 6, 5, 2, 0);
		dg_write_tmp(&g, path);
		run(o, "info", "--json", path, NULL);
		ck_assert_int_eq(o->status, 1);
		ck_assert_msg(strstr(o->err, ": chunk 11 at offset "), "%s", o->err);
		ck_assert_msg(strstr(o->err, "malformed payload (patch chunk)"), "%s", o->err);
		ck_assert_ptr_nonnull(strstr(o->out, "\"patch\": null,"));
		unlink(path);
		dg_free(&g);
	}
	free(o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("info");
	TCase *tc = tcase_create("command");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, json);
	tcase_add_test(tc, text);
	tcase_add_test(tc, incomplete);
	tcase_add_test(tc, patch);
	suite_add_tcase(s, tc);
	return ta_check_run(s);
}
