/* SPDX-License-Identifier: MIT */
/*
 * traceagent.h - what a program compiles against to speak to traceagent.
 *
 * traceagent records a C or C++ program's function calls: build it with
 * -finstrument-functions (or let the agent patch its functions at load) and
 * run it with libtraceagent.so preloaded.  This header is for the program
 * itself: it needs no library and no link flag (`pkg-config --cflags
 * traceagent`, or -I include in the source tree), and nothing in it depends
 * on how traceagent was built.  It compiles as C99 and C++11.
 *
 * It holds the release's version and the manual instrumentation API:
 *
 *   TA_ZONE("physics");                   a zone to the end of the block
 *   TA_ZONE_BEGIN("load"); ... TA_ZONE_END();    the same, explicit
 *   TA_ZONE_TEXT(level_name); TA_ZONE_VALUE(n);  for the innermost zone
 *   TA_FRAME_MARK();                      the end of a frame ("frame")
 *   TA_FRAME_MARK_NAMED("physics tick");  the end of a frame of another set
 *   TA_COUNTER("queue depth", n);  TA_COUNTER_F("load", 0.75);
 *   TA_MESSAGE("level %s loaded", name);  TA_INSTANT("checkpoint");
 *   TA_CHANNEL(net);  (file scope)  TA_ZONE_C(net, "send"); ...
 *   ta_channel_set("net", 0);             a channel off (and on) at run time
 *   TA_ZONE_DYN(name_buf);                a zone named at run time (copied)
 *   TA_FRAME_BEGIN("load"); ... TA_FRAME_END("load");   a frame with gaps
 *   TA_COUNTER_CONFIG("heap", TA_UNIT_BYTES);  how a counter is shown
 *   TA_APP_INFO("build %s", id);          a line about the program
 *   TA_SECTION_ENTER("level 2"); ... TA_SECTION_LEAVE("level 2");  a phase
 *   TA_ALLOC(p, n); TA_FREE(p);           a custom allocator's blocks
 *   TA_ALLOC_NAMED("pool", p, n); TA_FREE_NAMED("pool", p);   of a named pool
 *   TA_LOCK_NAME(&mu, "cache lock");      a lock's name in the views
 *   TA_FIBER_ENTER(name); ... TA_FIBER_LEAVE();   work of a fiber
 *
 * How it costs nothing without the agent: every macro calls a function the
 * agent defines (ta_zone_enter_ and the like, declared weak below).  When
 * libtraceagent.so is preloaded the dynamic linker binds the references to
 * it; when it is not they stay null, and each macro is one load (the
 * function's address from the GOT) and a branch.  `traceagent attach`
 * points them at the agent it brings into a running process, and leaves
 * them there when it detaches (with every channel reading off).  With the agent, a macro
 * whose channel is off is three loads and two branches: its call site's
 * static descriptor points at the channel's on/off word.  TA_ZONE_BEGIN
 * and TA_ZONE_END always call the agent (it keeps their stack, so that an
 * END matches its BEGIN whatever the channel did in between).
 *
 * Weak references need position-independent code: executables built as
 * PIE (the default of Debian's and most distributions' compilers) or code
 * built with -fPIC.  A -no-pie executable has them bound to 0 by the
 * static linker: its macros then record nothing.
 *
 * Names (zone, frame set, counter, instant, section) must be string
 * literals, but TA_ZONE_DYN's and TA_ZONE_BEGIN_DYN's: they
 * are kept by address, with the file and line, in a static descriptor per
 * call site, which the agent describes once in the dump; an event carries
 * only the descriptor's address.  Texts (TA_ZONE_TEXT, TA_MESSAGE) are
 * copied, up to 992 bytes.  Everything is callable from any thread and from
 * signal handlers (TA_MESSAGE formats with snprintf: not async-signal-safe
 * with floating-point conversions).
 */
#ifndef TRACEAGENT_H
#define TRACEAGENT_H

#include <stdint.h>

/* ---- version ------------------------------------------------------------ */

/* The release this header belongs to, as the traceagent command prints it
 * (`traceagent --version`).  TA_VERSION_NUMBER orders releases for #if:
 * 0.1.0 is 100, 1.2.3 is 10203. */
#define TA_VERSION_MAJOR  0
#define TA_VERSION_MINOR  2
#define TA_VERSION_PATCH  0
#define TA_VERSION_NUMBER (TA_VERSION_MAJOR * 10000 + TA_VERSION_MINOR * 100 + TA_VERSION_PATCH)

#define TA_VERSION_STR_(x) #x
#define TA_VERSION_STR(x)  TA_VERSION_STR_(x)
/* "0.2.0" */
#define TA_VERSION_STRING                                                                          \
	TA_VERSION_STR(TA_VERSION_MAJOR)                                                           \
	"." TA_VERSION_STR(TA_VERSION_MINOR) "." TA_VERSION_STR(TA_VERSION_PATCH)

/* ---- the manual API: internals the macros use ----------------------------- */

#ifdef __cplusplus
extern "C" {
#endif

/* A call site's descriptor (one static per macro use).  The layout is an
 * interface with the agent (abi): fields are only ever added at the end.
 * gate first points at `first` (1), so the first use calls the agent,
 * which registers the site and points gate at its channel's on/off word. */
struct ta_site_ {
	const volatile uint32_t *gate;
	uint32_t first;
	uint16_t kind; /* TA_KIND_*_ */
	uint16_t abi;
	const char *name;
	const char *file;
	const char *channel; /* NULL: "user" */
	uint32_t line;
	uint32_t reserved;
};

#define TA_SITE_ABI_	  1
#define TA_KIND_ZONE_	  1
#define TA_KIND_FRAME_	  2
#define TA_KIND_COUNTER_  3
#define TA_KIND_MESSAGE_  4
#define TA_KIND_INSTANT_  5
#define TA_KIND_ZONE_END_ 6
#define TA_KIND_TEXT_	  7
/* The run-time names, discontinuous frames, units, application info and
 * sections (kinds 8-11). */
#define TA_KIND_ZONE_DYN_	8 /* a TA_ZONE_DYN's site: its zones are the agent's */
#define TA_KIND_SECTION_	9
#define TA_KIND_APP_INFO_	10
#define TA_KIND_COUNTER_CONFIG_ 11

#if defined(__GNUC__)
#ifdef TA_AGENT_SIDE_ /* the agent's definitions: not weak */
#define TA_WEAK_ __attribute__((visibility("default")))
#else
#define TA_WEAK_ __attribute__((weak, visibility("default")))
#endif
#define TA_INLINE_	 static inline __attribute__((no_instrument_function, unused))
#define TA_UNUSED_	 __attribute__((unused))
#define TA_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#else
#error "traceagent.h needs GCC or Clang (weak references, cleanup)"
#endif

/* Defined by libtraceagent.so; null when it is not loaded. */
struct ta_site_ *ta_zone_enter_(struct ta_site_ *s) TA_WEAK_;
void ta_zone_exit_(struct ta_site_ *s) TA_WEAK_;
void ta_zone_begin_(struct ta_site_ *s) TA_WEAK_;
void ta_zone_end_(struct ta_site_ *s) TA_WEAK_;
void ta_zone_text_(struct ta_site_ *s, const char *text) TA_WEAK_;
void ta_zone_value_(struct ta_site_ *s, uint64_t value) TA_WEAK_;
void ta_frame_mark_(struct ta_site_ *s) TA_WEAK_;
void ta_counter_(struct ta_site_ *s, int64_t value) TA_WEAK_;
void ta_counter_f_(struct ta_site_ *s, double value) TA_WEAK_;
void ta_message_(struct ta_site_ *s, const char *fmt, ...) TA_WEAK_ TA_PRINTF_(2, 3);
void ta_instant_(struct ta_site_ *s) TA_WEAK_;
int ta_channel_set_(const char *name, int on) TA_WEAK_;
struct ta_site_ *ta_zone_enter_dyn_(struct ta_site_ *s, const char *name) TA_WEAK_;
void ta_zone_begin_dyn_(struct ta_site_ *s, const char *name) TA_WEAK_;
void ta_frame_begin_(struct ta_site_ *s) TA_WEAK_;
void ta_frame_end_(struct ta_site_ *s) TA_WEAK_;
void ta_counter_config_(struct ta_site_ *s, uint32_t unit) TA_WEAK_;
void ta_app_info_(struct ta_site_ *s, const char *fmt, ...) TA_WEAK_ TA_PRINTF_(2, 3);
void ta_section_enter_(struct ta_site_ *s) TA_WEAK_;
void ta_section_leave_(struct ta_site_ *s) TA_WEAK_;

#define TA_SITE_(var, kind, name, ch)                                                              \
	static struct ta_site_ var = {                                                             \
	    &var.first, 1u, (kind), TA_SITE_ABI_, (name), __FILE__, (ch), (uint32_t)__LINE__, 0u}

#define TA_CAT2_(a, b) a##b
#define TA_CAT_(a, b)  TA_CAT2_(a, b)
#ifdef __COUNTER__
#define TA_ID_ __COUNTER__
#else
#define TA_ID_ __LINE__
#endif

/*
 * The agent's function fn, its address read from the GOT at each use
 * (ta_load_<fn>_()): a compiler otherwise reads it once before a loop and
 * keeps it in a register, and a loop that began before `traceagent
 * attach` brought the agent in would never see it.  An asm the compiler
 * may not move out of the loop, on x86-64 and aarch64; elsewhere the
 * plain address.  The macros call through what was read, never through
 * another read of the entry.  `.weak`: the asm's reference is the only
 * one, and must not require the agent at link time.
 */
#if defined(__x86_64__) && defined(__LP64__)
#define TA_LOAD_DEF_(fn)                                                                           \
	TA_INLINE_ __typeof__(&fn) ta_load_##fn##_(void)                                           \
	{                                                                                          \
		__typeof__(&fn) p;                                                                 \
		__asm__ __volatile__(".weak " #fn "\n\tmovq " #fn "@GOTPCREL(%%rip), %0"           \
				     : "=r"(p));                                                   \
		return p;                                                                          \
	}
#elif defined(__aarch64__) && defined(__LP64__)
#define TA_LOAD_DEF_(fn)                                                                           \
	TA_INLINE_ __typeof__(&fn) ta_load_##fn##_(void)                                           \
	{                                                                                          \
		__typeof__(&fn) p;                                                                 \
		__asm__ __volatile__(".weak " #fn "\n\tadrp %0, :got:" #fn                         \
				     "\n\tldr %0, [%0, :got_lo12:" #fn "]"                         \
				     : "=r"(p));                                                   \
		return p;                                                                          \
	}
#else
#define TA_LOAD_DEF_(fn)                                                                           \
	TA_INLINE_ __typeof__(&fn) ta_load_##fn##_(void)                                           \
	{                                                                                          \
		return &fn;                                                                        \
	}
#endif
#ifndef TA_AGENT_SIDE_
TA_LOAD_DEF_(ta_zone_enter_)
TA_LOAD_DEF_(ta_zone_begin_)
TA_LOAD_DEF_(ta_zone_end_)
TA_LOAD_DEF_(ta_zone_text_)
TA_LOAD_DEF_(ta_zone_value_)
TA_LOAD_DEF_(ta_frame_mark_)
TA_LOAD_DEF_(ta_counter_)
TA_LOAD_DEF_(ta_counter_f_)
TA_LOAD_DEF_(ta_message_)
TA_LOAD_DEF_(ta_instant_)
TA_LOAD_DEF_(ta_channel_set_)
TA_LOAD_DEF_(ta_zone_enter_dyn_)
TA_LOAD_DEF_(ta_zone_begin_dyn_)
TA_LOAD_DEF_(ta_frame_begin_)
TA_LOAD_DEF_(ta_frame_end_)
TA_LOAD_DEF_(ta_counter_config_)
TA_LOAD_DEF_(ta_app_info_)
TA_LOAD_DEF_(ta_section_enter_)
TA_LOAD_DEF_(ta_section_leave_)
#endif

/* Whether the site records now: the agent is there (f, its function) and
 * the channel is on (or the site is not registered yet). */
#define TA_ON_(f, var) ((f) && *(var).gate)

/* A zone's entry: its site when recorded (to pass to its exit), or null. */
TA_INLINE_ struct ta_site_ *ta_zone_try_(struct ta_site_ *(*f)(struct ta_site_ *),
					 struct ta_site_ *s)
{
	return f && *s->gate ? f(s) : (struct ta_site_ *)0;
}

/* A run-time named zone's entry: the agent's site of the name when
 * recorded (to pass to ta_zone_exit_), or null. */
TA_INLINE_ struct ta_site_ *ta_zone_try_dyn_(struct ta_site_ *(*f)(struct ta_site_ *, const char *),
					     struct ta_site_ *s, const char *name)
{
	return f && *s->gate ? f(s, name) : (struct ta_site_ *)0;
}

#ifdef __cplusplus
}

struct ta_zone_scope_ {
	struct ta_site_ *s;
	__attribute__((no_instrument_function)) ~ta_zone_scope_()
	{
		if (s)
			ta_zone_exit_(s);
	}
};
#define TA_ZONE_I_(id, ch, name)                                                                   \
	TA_SITE_(TA_CAT_(ta_s_, id), TA_KIND_ZONE_, name, ch);                                     \
	ta_zone_scope_ TA_CAT_(ta_z_, id)                                                          \
	    TA_UNUSED_ = {ta_zone_try_(ta_load_ta_zone_enter__(), &TA_CAT_(ta_s_, id))}
#define TA_ZONE_DYN_I_(id, ch, name)                                                               \
	TA_SITE_(TA_CAT_(ta_s_, id), TA_KIND_ZONE_DYN_, "", ch);                                   \
	ta_zone_scope_ TA_CAT_(ta_z_, id) TA_UNUSED_ = {                                           \
	    ta_zone_try_dyn_(ta_load_ta_zone_enter_dyn__(), &TA_CAT_(ta_s_, id), (name))}
#else
TA_INLINE_ void ta_zone_leave_(struct ta_site_ **z)
{
	if (*z)
		ta_zone_exit_(*z);
}
#define TA_ZONE_I_(id, ch, name)                                                                   \
	TA_SITE_(TA_CAT_(ta_s_, id), TA_KIND_ZONE_, name, ch);                                     \
	struct ta_site_ *TA_CAT_(ta_z_, id) __attribute__((cleanup(ta_zone_leave_), unused)) =     \
	    ta_zone_try_(ta_load_ta_zone_enter__(), &TA_CAT_(ta_s_, id))
#define TA_ZONE_DYN_I_(id, ch, name)                                                               \
	TA_SITE_(TA_CAT_(ta_s_, id), TA_KIND_ZONE_DYN_, "", ch);                                   \
	struct ta_site_ *TA_CAT_(ta_z_, id) __attribute__((cleanup(ta_zone_leave_), unused)) =     \
	    ta_zone_try_dyn_(ta_load_ta_zone_enter_dyn__(), &TA_CAT_(ta_s_, id), (name))
#endif

#define TA_CALL_I_(id, kind, ch, name, fn, ...)                                                    \
	do {                                                                                       \
		TA_SITE_(TA_CAT_(ta_s_, id), kind, name, ch);                                      \
		__typeof__(&fn) ta_f_ = ta_load_##fn##_();                                         \
		if (TA_ON_(ta_f_, TA_CAT_(ta_s_, id)))                                             \
			ta_f_(&TA_CAT_(ta_s_, id), __VA_ARGS__);                                   \
	} while (0)
#define TA_CALL0_I_(id, kind, ch, name, fn)                                                        \
	do {                                                                                       \
		TA_SITE_(TA_CAT_(ta_s_, id), kind, name, ch);                                      \
		__typeof__(&fn) ta_f_ = ta_load_##fn##_();                                         \
		if (TA_ON_(ta_f_, TA_CAT_(ta_s_, id)))                                             \
			ta_f_(&TA_CAT_(ta_s_, id));                                                \
	} while (0)
/* BEGIN and END: the agent is called whatever the channel (see above). */
#define TA_ALWAYS_I_(id, kind, ch, name, fn)                                                       \
	do {                                                                                       \
		TA_SITE_(TA_CAT_(ta_s_, id), kind, name, ch);                                      \
		__typeof__(&fn) ta_f_ = ta_load_##fn##_();                                         \
		if (ta_f_)                                                                         \
			ta_f_(&TA_CAT_(ta_s_, id));                                                \
	} while (0)

/* TA_ZONE_BEGIN_DYN: the agent is called whatever the channel, as by
 * TA_ZONE_BEGIN. */
#define TA_ALWAYS_ARG_I_(id, kind, ch, name, fn, arg)                                              \
	do {                                                                                       \
		TA_SITE_(TA_CAT_(ta_s_, id), kind, name, ch);                                      \
		__typeof__(&fn) ta_f_ = ta_load_##fn##_();                                         \
		if (ta_f_)                                                                         \
			ta_f_(&TA_CAT_(ta_s_, id), arg);                                           \
	} while (0)

/* ---- the manual API --------------------------------------------------------- */

/* A channel of the program's own: TA_CHANNEL(net) at file scope, then
 * TA_ZONE_C(net, "send") and the like; switched by name ("net").  At most
 * 58 of the program's own channels (64 with the built-in ones). */
#define TA_CHANNEL(name) static const char TA_UNUSED_ ta_channel_##name##_[] = #name
#define TA_CH_(ch)	 ta_channel_##ch##_

/* A zone from here to the end of the enclosing block. */
#define TA_ZONE(name)	    TA_ZONE_I_(TA_ID_, (const char *)0, name)
#define TA_ZONE_C(ch, name) TA_ZONE_I_(TA_ID_, TA_CH_(ch), name)

/* A zone with explicit ends, for code with several exits.  An END with
 * no zone begun on its thread is counted and shown, never a crash. */
#define TA_ZONE_BEGIN(name)                                                                        \
	TA_ALWAYS_I_(TA_ID_, TA_KIND_ZONE_, (const char *)0, name, ta_zone_begin_)
#define TA_ZONE_BEGIN_C(ch, name)                                                                  \
	TA_ALWAYS_I_(TA_ID_, TA_KIND_ZONE_, TA_CH_(ch), name, ta_zone_begin_)
#define TA_ZONE_END() TA_ALWAYS_I_(TA_ID_, TA_KIND_ZONE_END_, (const char *)0, "", ta_zone_end_)

/* A text (copied, up to 992 bytes) or a number for the innermost open zone
 * of the calling thread. */
#define TA_ZONE_TEXT(str)                                                                          \
	TA_CALL_I_(TA_ID_, TA_KIND_TEXT_, (const char *)0, "", ta_zone_text_, (str))
#define TA_ZONE_VALUE(v)                                                                           \
	TA_CALL_I_(TA_ID_, TA_KIND_TEXT_, (const char *)0, "", ta_zone_value_, (uint64_t)(v))

/* The end of a frame: of the default set ("frame"), or of a named one. */
#define TA_FRAME_MARK() TA_FRAME_MARK_NAMED("frame")
#define TA_FRAME_MARK_NAMED(name)                                                                  \
	TA_CALL0_I_(TA_ID_, TA_KIND_FRAME_, (const char *)0, name, ta_frame_mark_)

/* A sample of a counter, an integer or a floating-point value. */
#define TA_COUNTER(name, v)                                                                        \
	TA_CALL_I_(TA_ID_, TA_KIND_COUNTER_, (const char *)0, name, ta_counter_, (int64_t)(v))
#define TA_COUNTER_C(ch, name, v)                                                                  \
	TA_CALL_I_(TA_ID_, TA_KIND_COUNTER_, TA_CH_(ch), name, ta_counter_, (int64_t)(v))
#define TA_COUNTER_F(name, v)                                                                      \
	TA_CALL_I_(TA_ID_, TA_KIND_COUNTER_, (const char *)0, name, ta_counter_f_, (double)(v))
#define TA_COUNTER_F_C(ch, name, v)                                                                \
	TA_CALL_I_(TA_ID_, TA_KIND_COUNTER_, TA_CH_(ch), name, ta_counter_f_, (double)(v))

/* A printf-formatted message at this instant (%n writes nothing). */
#define TA_MESSAGE(...)                                                                            \
	TA_CALL_I_(TA_ID_, TA_KIND_MESSAGE_, (const char *)0, "message", ta_message_, __VA_ARGS__)
#define TA_MESSAGE_C(ch, ...)                                                                      \
	TA_CALL_I_(TA_ID_, TA_KIND_MESSAGE_, TA_CH_(ch), "message", ta_message_, __VA_ARGS__)

/* A named instant without text. */
#define TA_INSTANT(name)       TA_CALL0_I_(TA_ID_, TA_KIND_INSTANT_, (const char *)0, name, ta_instant_)
#define TA_INSTANT_C(ch, name) TA_CALL0_I_(TA_ID_, TA_KIND_INSTANT_, TA_CH_(ch), name, ta_instant_)

/*
 * Switches a channel on (on != 0) or off from now on: "functions", "user",
 * "alloc", "lock", "io", "sleep", or one of the program's own (which need
 * not be used yet).  On is on: switching a channel on twice needs one off.
 * Returns 0, or -1 without the agent or when 64 channels exist already.
 */
#ifndef TA_AGENT_SIDE_
TA_INLINE_ int ta_channel_set(const char *name, int on)
{
	int (*f)(const char *, int) = ta_load_ta_channel_set__();

	return f ? f(name, on) : -1;
}
#endif

/* ---- run-time names, discontinuous frames, units, application info, sections ---- */

/*
 * A zone named by a string known only at run time (a buffer, a
 * std::string's c_str()): the agent copies the name (up to 255 bytes) and
 * keeps one row per distinct name, the same for every call site using it.
 * Names beyond the agent's bounds (4096 distinct names, 256 KiB of them)
 * are counted into one row, "[traceagent zone names overflow]".  NULL is
 * "(null)".  TA_ZONE_DYN lasts to the end of the block, TA_ZONE_BEGIN_DYN
 * to the next TA_ZONE_END.
 */
#define TA_ZONE_DYN(name)	TA_ZONE_DYN_I_(TA_ID_, (const char *)0, name)
#define TA_ZONE_DYN_C(ch, name) TA_ZONE_DYN_I_(TA_ID_, TA_CH_(ch), name)
#define TA_ZONE_BEGIN_DYN(name)                                                                    \
	TA_ALWAYS_ARG_I_(TA_ID_, TA_KIND_ZONE_DYN_, (const char *)0, "", ta_zone_begin_dyn_, (name))
#define TA_ZONE_BEGIN_DYN_C(ch, name)                                                              \
	TA_ALWAYS_ARG_I_(TA_ID_, TA_KIND_ZONE_DYN_, TA_CH_(ch), "", ta_zone_begin_dyn_, (name))

/* A frame of the set name from BEGIN to END, the time between two
 * frames being no frame (a loading screen, a fixed physics step).  A
 * BEGIN while one is open ends it there; an END without a BEGIN is
 * counted and left out. */
#define TA_FRAME_BEGIN(name)                                                                       \
	TA_CALL0_I_(TA_ID_, TA_KIND_FRAME_, (const char *)0, name, ta_frame_begin_)
#define TA_FRAME_END(name) TA_CALL0_I_(TA_ID_, TA_KIND_FRAME_, (const char *)0, name, ta_frame_end_)

/* How the views show the counter name's values: a number, bytes (KiB,
 * MiB...), or a percentage.  Once is enough, anywhere in the run. */
#define TA_UNIT_NUMBER	0u
#define TA_UNIT_BYTES	1u
#define TA_UNIT_PERCENT 2u
#define TA_COUNTER_CONFIG(name, unit)                                                              \
	TA_CALL_I_(TA_ID_, TA_KIND_COUNTER_CONFIG_, (const char *)0, name, ta_counter_config_,     \
		   (uint32_t)(unit))
#define TA_COUNTER_CONFIG_C(ch, name, unit)                                                        \
	TA_CALL_I_(TA_ID_, TA_KIND_COUNTER_CONFIG_, TA_CH_(ch), name, ta_counter_config_,          \
		   (uint32_t)(unit))

/* A printf-formatted line about the program (its version, build, the
 * options it runs with), copied up to 992 bytes: `traceagent info` and
 * the exports' metadata show each. */
#define TA_APP_INFO(...)                                                                           \
	TA_CALL_I_(TA_ID_, TA_KIND_APP_INFO_, (const char *)0, "app-info", ta_app_info_,           \
		   __VA_ARGS__)

/* A phase of the program (a level, a loading screen, a benchmark pass),
 * process-wide, from ENTER to the LEAVE of the same name; phases may
 * overlap.  `--section NAME` limits a view to the time inside it. */
#define TA_SECTION_ENTER(name)                                                                     \
	TA_CALL0_I_(TA_ID_, TA_KIND_SECTION_, (const char *)0, name, ta_section_enter_)
#define TA_SECTION_ENTER_C(ch, name)                                                               \
	TA_CALL0_I_(TA_ID_, TA_KIND_SECTION_, TA_CH_(ch), name, ta_section_enter_)
#define TA_SECTION_LEAVE(name)                                                                     \
	TA_CALL0_I_(TA_ID_, TA_KIND_SECTION_, (const char *)0, name, ta_section_leave_)
#define TA_SECTION_LEAVE_C(ch, name)                                                               \
	TA_CALL0_I_(TA_ID_, TA_KIND_SECTION_, TA_CH_(ch), name, ta_section_leave_)
/* ---- memory, lock names, fibers ------------------------------------------ */

#define TA_KIND_ALLOC_	   12
#define TA_KIND_FREE_	   13
#define TA_KIND_LOCK_NAME_ 14
#define TA_KIND_FIBER_	   15

#ifdef __cplusplus
extern "C" {
#endif

/* Defined by libtraceagent.so; null when it is not loaded. */
void ta_alloc_(struct ta_site_ *s, const volatile void *ptr, uint64_t size) TA_WEAK_;
void ta_free_(struct ta_site_ *s, const volatile void *ptr) TA_WEAK_;
void ta_lock_name_(struct ta_site_ *s, const volatile void *lock, const char *name) TA_WEAK_;
void ta_fiber_enter_(struct ta_site_ *s, const char *name) TA_WEAK_;
void ta_fiber_leave_(struct ta_site_ *s) TA_WEAK_;

#ifndef TA_AGENT_SIDE_
TA_LOAD_DEF_(ta_alloc_)
TA_LOAD_DEF_(ta_free_)
TA_LOAD_DEF_(ta_lock_name_)
TA_LOAD_DEF_(ta_fiber_enter_)
TA_LOAD_DEF_(ta_fiber_leave_)
#endif

#ifdef __cplusplus
}
#endif

/*
 * A block of a custom allocator: TA_ALLOC when it is handed out (its
 * address and size), TA_FREE when it comes back.  `report --alloc` shows
 * each pool beside malloc's (bytes, calls, what is live at the end by the
 * call path that allocated it), and the exports a counter track of each
 * pool's live bytes.  The pool is a string literal (TA_ALLOC's is
 * "default"); a block is freed in the pool it was allocated in.  A free of
 * a pointer the pool does not hold (or NULL) is counted and shown.
 */
#define TA_ALLOC(ptr, size)	  TA_ALLOC_NAMED("default", ptr, size)
#define TA_ALLOC_C(ch, ptr, size) TA_ALLOC_NAMED_C(ch, "default", ptr, size)
#define TA_ALLOC_NAMED(pool, ptr, size)                                                            \
	TA_CALL_I_(TA_ID_, TA_KIND_ALLOC_, (const char *)0, pool, ta_alloc_,                       \
		   (const volatile void *)(ptr), (uint64_t)(size))
#define TA_ALLOC_NAMED_C(ch, pool, ptr, size)                                                      \
	TA_CALL_I_(TA_ID_, TA_KIND_ALLOC_, TA_CH_(ch), pool, ta_alloc_,                            \
		   (const volatile void *)(ptr), (uint64_t)(size))
#define TA_FREE(ptr)	   TA_FREE_NAMED("default", ptr)
#define TA_FREE_C(ch, ptr) TA_FREE_NAMED_C(ch, "default", ptr)
#define TA_FREE_NAMED(pool, ptr)                                                                   \
	TA_CALL_I_(TA_ID_, TA_KIND_FREE_, (const char *)0, pool, ta_free_,                         \
		   (const volatile void *)(ptr))
#define TA_FREE_NAMED_C(ch, pool, ptr)                                                             \
	TA_CALL_I_(TA_ID_, TA_KIND_FREE_, TA_CH_(ch), pool, ta_free_, (const volatile void *)(ptr))

/* A name for the lock at lock (a mutex, rwlock, condition or semaphore,
 * or any object the program locks): `report --locks` and the exports show
 * it instead of the address.  The name is copied (up to 255 bytes); the
 * latest one given to an address holds from then. */
#define TA_LOCK_NAME(lock, name)                                                                   \
	TA_CALL_I_(TA_ID_, TA_KIND_LOCK_NAME_, (const char *)0, "lock name", ta_lock_name_,        \
		   (const volatile void *)(lock), (name))
#define TA_LOCK_NAME_C(ch, lock, name)                                                             \
	TA_CALL_I_(TA_ID_, TA_KIND_LOCK_NAME_, TA_CH_(ch), "lock name", ta_lock_name_,             \
		   (const volatile void *)(lock), (name))

/*
 * A fiber (a coroutine, a job system's task) runs on the calling thread
 * from TA_FIBER_ENTER to TA_FIBER_LEAVE: the zones and calls made in
 * between belong to the fiber named name (copied, up to 255 bytes; one
 * fiber per distinct name in a process), whichever thread runs it, and
 * the views show it as a track of its own.  An ENTER while another fiber
 * runs on the thread leaves that one first.  TA_FIBER_LEAVE always calls
 * the agent (a leave is recorded when its enter was, whatever the channel
 * did in between).
 */
#define TA_FIBER_ENTER(name)                                                                       \
	TA_CALL_I_(TA_ID_, TA_KIND_FIBER_, (const char *)0, "fiber", ta_fiber_enter_, (name))
#define TA_FIBER_ENTER_C(ch, name)                                                                 \
	TA_CALL_I_(TA_ID_, TA_KIND_FIBER_, TA_CH_(ch), "fiber", ta_fiber_enter_, (name))
#define TA_FIBER_LEAVE()                                                                           \
	TA_ALWAYS_I_(TA_ID_, TA_KIND_FIBER_, (const char *)0, "fiber", ta_fiber_leave_)

#endif
