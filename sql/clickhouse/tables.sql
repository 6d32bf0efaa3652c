-- traceagent's tables in ClickHouse (18.16 and later), as `traceagent export
-- --format=clickhouse --schema` prints them (docs/clickhouse.md).

-- process: a process of the dump.
CREATE TABLE IF NOT EXISTS process
(
    host String,
    recording String,
    `upid` Int64,
    `pid` Int64,
    `name` Nullable(String),
    `start_ts` Nullable(Int64),
    `end_ts` Nullable(Int64),
    `parent_upid` Nullable(Int64),
    `cmdline` Nullable(String)
)
ENGINE = MergeTree
ORDER BY (host, pid);

-- thread: a thread of a process.
CREATE TABLE IF NOT EXISTS thread
(
    host String,
    recording String,
    `utid` Int64,
    `tid` Int64,
    `name` Nullable(String),
    `upid` Nullable(Int64),
    `start_ts` Nullable(Int64),
    `end_ts` Nullable(Int64),
    `is_main_thread` Int64
)
ENGINE = MergeTree
ORDER BY (host, recording, tid);

-- track: a track: a thread's (slices, instants) or a counter's.
CREATE TABLE IF NOT EXISTS track
(
    host String,
    recording String,
    `id` Int64,
    `name` Nullable(String),
    `type` String
)
ENGINE = MergeTree
ORDER BY (host, recording, id);

-- thread_track: the track of a thread's slices and instants.
CREATE TABLE IF NOT EXISTS thread_track
(
    host String,
    recording String,
    `id` Int64,
    `name` Nullable(String),
    `utid` Int64
)
ENGINE = MergeTree
ORDER BY (host, recording, id);

-- counter_track: a counter (TA_COUNTER) of a process.
CREATE TABLE IF NOT EXISTS counter_track
(
    host String,
    recording String,
    `id` Int64,
    `name` String,
    `upid` Nullable(Int64)
)
ENGINE = MergeTree
ORDER BY (host, recording, id);

-- slice: a call of a function, a zone or a library call.
CREATE TABLE IF NOT EXISTS slice
(
    host String,
    recording String,
    `id` Int64,
    `ts` Int64,
    `dur` Int64,
    `depth` Int64,
    `name` String,
    `category` Nullable(String),
    `track_id` Int64,
    `parent_id` Nullable(Int64),
    `arg_set_id` Nullable(Int64),
    `self_dur` Int64,
    `incomplete` Int64,
    `pid` Int64
)
ENGINE = MergeTree
ORDER BY (host, pid, ts);

-- instant: a message, instant, channel switch or unmatched zone end of the manual API.
CREATE TABLE IF NOT EXISTS instant
(
    host String,
    recording String,
    `id` Int64,
    `ts` Int64,
    `track_id` Int64,
    `name` String,
    `category` Nullable(String),
    `kind` String,
    `pid` Int64
)
ENGINE = MergeTree
ORDER BY (host, pid, ts);

-- counter: a value of a counter.
CREATE TABLE IF NOT EXISTS counter
(
    host String,
    recording String,
    `id` Int64,
    `ts` Int64,
    `track_id` Int64,
    `value` Float64,
    `pid` Int64
)
ENGINE = MergeTree
ORDER BY (host, pid, ts);

-- args: a zone's text or value.
CREATE TABLE IF NOT EXISTS args
(
    host String,
    recording String,
    `arg_set_id` Int64,
    `flat_key` String,
    `key` String,
    `int_value` Nullable(Int64),
    `string_value` Nullable(String),
    `real_value` Nullable(Float64),
    `value_type` String
)
ENGINE = MergeTree
ORDER BY (host, recording, arg_set_id);

-- function_stats: a function's numbers, as traceagent report gives them.
CREATE TABLE IF NOT EXISTS function_stats
(
    host String,
    recording String,
    `name` String,
    `module` String,
    `offset` Int64,
    `calls` Int64,
    `total_ns` Int64,
    `self_ns` Int64,
    `min_ns` Nullable(Int64),
    `max_ns` Nullable(Int64),
    `avg_ns` Nullable(Int64),
    `p50_ns` Nullable(Int64),
    `p90_ns` Nullable(Int64),
    `p99_ns` Nullable(Int64),
    `open` Int64,
    `partial` Int64,
    `unwound` Int64,
    `short_calls` Int64
)
ENGINE = MergeTree
ORDER BY (host, recording, name);

-- frame: a frame of a frame set.
CREATE TABLE IF NOT EXISTS frame
(
    host String,
    recording String,
    `id` Int64,
    `ts` Int64,
    `dur` Int64,
    `name` String,
    `number` Int64,
    `upid` Nullable(Int64),
    `utid` Int64
)
ENGINE = MergeTree
ORDER BY (host, recording, ts);

-- trace_bounds: the dump's first and last times.
CREATE TABLE IF NOT EXISTS trace_bounds
(
    host String,
    recording String,
    `start_ts` Int64,
    `end_ts` Int64
)
ENGINE = MergeTree
ORDER BY (host, recording);

