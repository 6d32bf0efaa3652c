/* SPDX-License-Identifier: MIT */
/*
 * crc32c.h - CRC-32C computed by an instruction of the CPU, where
 * TA_ARCH_HAS_CRC32C (arch/<cpu>/crc32c.c); format.c's ta_crc32c falls
 * back to its table without it.
 */
#ifndef TA_ARCH_CRC32C_H
#define TA_ARCH_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* 1 if this CPU has the instruction.  Only reads of the CPU's features: a
 * crash handler may be the first caller. */
int ta_arch_crc32c_hw(void) __attribute__((visibility("hidden")));

/* crc (not inverted: the caller inverts before and after) over buf; only
 * where ta_arch_crc32c_hw() said 1. */
uint32_t ta_arch_crc32c_update(uint32_t crc, const void *buf, size_t len)
    __attribute__((visibility("hidden")));

#endif
