/* SPDX-License-Identifier: MIT */
/*
 * placement.h - where the flusher runs and whether it has CPU to spare
 * for LZ4: both decided by the flusher thread alone, once a pass.
 */
#ifndef TA_PLACEMENT_H
#define TA_PLACEMENT_H

#include "compiler.h"

/* Moves the flusher thread off a CPU a producer handed a block over on
 * since the last call, to one of its mask none did (at most every 10 ms). */
void ta_place_flusher(void) TA_HIDDEN;

/* Every SLACK_MS: 1 when the program's threads kept every CPU of the mask
 * busy since the last look (chunks are then stored raw), 0 when not; -1
 * between looks or when the clocks say nothing. */
int ta_slack_judge(void) TA_HIDDEN;

/* Forgets the last look: a forked child's or a new attach's process clock
 * starts anew. */
void ta_slack_reset(void) TA_HIDDEN;

#endif
