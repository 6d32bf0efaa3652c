/* SPDX-License-Identifier: MIT */
/*
 * args_hot.c - recording what a spec asks (argregs.h): the arguments as an
 * EXT event TA_EXT_ARGS right after the call's enter, the return value as
 * TA_EXT_RETVAL right before its exit (format.h says the items).
 *
 * Hook rules: no lock, no system call, no allocation, no libc call (no
 * loop here has the shape of memset or memcpy, which compilers would turn
 * into calls).  The values are gathered on the stack first (a string's
 * copy may fault, and is taken back by crash.c's handler: args_copy.c),
 * then written as one group by ta_record_ext (into the thread's block
 * under the claim, as ring.h's ta_record does; the ring's slow path when
 * the block has no room).
 */
#include <stdint.h>

#include "api.h"
#include "args.h"
#include "argregs.h"
#include "crash.h"
#include "ring.h"

/* A string's item: its head, pointer and bytes into v[n..]; returns the
 * new count.  room: values left. */
static uint32_t put_string(uint64_t *v, uint32_t n, uint32_t room, const struct ta_argitem *it,
			   uint64_t p)
{
	uint32_t max = ta_args_strmax, nv;
	unsigned state = TA_ARGS_OK;
	int got = 0, cut = 0;

	if (room < 2)
		return n;
	if (max > (room - 2) * 8)
		max = (room - 2) * 8;
	if (!p)
		state = TA_ARGS_NULL;
	else if (!__atomic_load_n(&ta_crash_fault_guard, __ATOMIC_RELAXED))
		state = TA_ARGS_UNCHECKED;
	else if (p < 4096)
		state = TA_ARGS_UNREADABLE; /* the null page, which nothing maps */
	if (state == TA_ARGS_OK) {
		char buf[TA_ARGS_STR_MAX + 1];

		/* One byte past the limit tells a string cut from one that
		 * ends exactly there. */
		got = ta_args_copy_str(buf, (const char *)(uintptr_t)p, max + 1);
		if (got < 0) {
			state = got == -1 ? TA_ARGS_UNREADABLE : TA_ARGS_UNCHECKED;
			got = 0;
		} else if ((uint32_t)got > max) {
			got = (int)max;
			cut = 1;
		}
		nv = ((uint32_t)got + 7) / 8;
		for (uint32_t k = 0; k < nv; k++) {
			uint64_t w = 0;

			for (uint32_t b = 0; b < 8 && 8 * k + b < (uint32_t)got; b++)
				w |= (uint64_t)(uint8_t)buf[8 * k + b] << (8 * b);
			v[n + 2 + k] = w;
		}
	} else {
		nv = 0;
	}
	v[n] = TA_ARGI_HEAD(it->fmt, it->size, it->reg, it->fp, state, cut, got);
	v[n + 1] = p;
	return n + 2 + nv;
}

static uint32_t put_item(uint64_t *v, uint32_t n, const struct ta_argitem *it, uint64_t raw)
{
	uint32_t room = TA_EXT_MAX_VALUES - n;

	if (it->fmt == TA_ARGF_STR)
		return put_string(v, n, room, it, raw);
	if (room < 2)
		return n;
	v[n] = TA_ARGI_HEAD(it->fmt, it->size, it->reg, it->fp, 0, 0, 0);
	v[n + 1] = raw;
	return n + 2;
}

void ta_args_entry(const struct ta_argspec *spec, const struct ta_argregs *r)
{
	uint64_t v[TA_EXT_MAX_VALUES];
	uint32_t n = 0;

	if (!spec || !spec->nargs || !__atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED))
		return;
	for (unsigned i = 0; i < spec->nargs; i++) {
		const struct ta_argitem *it = &spec->a[i];
		uint64_t raw = it->fp ? r->fp[it->reg - 1] : r->gp[it->reg - 1];

		/* Past the argument registers, on the stack above the
		 * return address (x86-64: the 7th and 8th). */
		if (!it->fp && it->reg > TA_ARCH_GP_ARG_REGS)
			raw = ((const uint64_t *)(uintptr_t)r->sp)[it->reg - TA_ARCH_GP_ARG_REGS];

		n = put_item(v, n, it, raw);
	}
	if (n)
		ta_record_ext(TA_EXT_ARGS, v, n);
}

void ta_args_return(const struct ta_argspec *spec, uint64_t gp, uint64_t fp)
{
	uint64_t v[2 + 2 + TA_ARGS_STR_MAX / 8];
	uint32_t n;

	if (!spec || !spec->has_ret || !__atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED))
		return;
	n = put_item(v, 0, &spec->ret, spec->ret.fmt == TA_ARGF_FLOAT ? fp : gp);
	if (n)
		ta_record_ext(TA_EXT_RETVAL, v, n);
}
