/* SPDX-License-Identifier: MIT */
/*
 * dumpfile.h - the analyzer's dump reader: format/chunkread.h, the one
 * chunk reader the analyzer and the tests share (a dump read as a stream
 * of verified chunks, bounded memory, damage reported by chunk and offset).
 */
#ifndef TA_DUMPFILE_H
#define TA_DUMPFILE_H

#include "chunkread.h"

#endif /* TA_DUMPFILE_H */
