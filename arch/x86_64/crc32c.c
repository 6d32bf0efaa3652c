/* SPDX-License-Identifier: MIT */
/*
 * x86_64/crc32c.c - CRC-32C with SSE 4.2's crc32 instruction
 * (arch/crc32c.h), for format.c's ta_crc32c.
 */
#include <cpuid.h>
#include <stdint.h>
#include <string.h>

#include "crc32c.h"

#if defined(__GLIBC__) && defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
/* glibc 2.33's view of the CPU, taken by ld.so at the start. */
#include <sys/platform/x86.h>
#define TA_GLIBC_CPU_FEATURES 1
#endif
#endif

/* SSE 4.2's crc32 instruction computes CRC-32C itself: 8 bytes in one
 * instruction rather than the table's ~20 (the flusher and the analyzer
 * checksum every chunk they write or read). */
__attribute__((target("sse4.2"))) uint32_t ta_arch_crc32c_update(uint32_t crc, const void *buf,
								 size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = crc;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	for (; len; p++, len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p);
	return (uint32_t)c;
}

/* 1 with the instruction, 0 without, -1 before the first call.  Only
 * reads of the CPU's features: a crash handler may be the first caller. */
static int crc_hw = -1;

int ta_arch_crc32c_hw(void)
{
	int hw = __atomic_load_n(&crc_hw, __ATOMIC_RELAXED);

	if (hw < 0) {
#ifdef TA_GLIBC_CPU_FEATURES
		/* What ld.so found at the start: no cpuid of ours, which in a
		 * VM traps to the hypervisor (9-16 us each here, at every
		 * traced program's first chunk). */
		hw = CPU_FEATURE_ACTIVE(SSE4_2) ? 1 : 0;
#else
		unsigned a, b, c, d;

		/* One cpuid, when first needed.  Not __builtin_cpu_supports:
		 * it links libgcc's __cpu_indicator_init, a constructor that
		 * runs a dozen cpuid at every traced program's start, each a
		 * trap to the hypervisor in a VM (perf: ~0.2 ms of CPU a start). */
		hw = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? 1 : 0;
#endif
		__atomic_store_n(&crc_hw, hw, __ATOMIC_RELAXED); /* same value for all */
	}
	return hw;
}
