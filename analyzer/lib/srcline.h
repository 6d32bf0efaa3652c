/* SPDX-License-Identifier: MIT */
/*
 * srcline.h - source file and line of functions, from DWARF (libdw).
 */
#ifndef TA_SRCLINE_H
#define TA_SRCLINE_H

#include <stddef.h>
#include <stdint.h>

#include "symbols.h"

struct ta_srclines;

struct ta_srclines *ta_srclines_new(void);
void ta_srclines_free(struct ta_srclines *s);

/*
 * "file:line" where the function at offset (runtime address minus load
 * bias) of the module at path is defined, or NULL when the module has no
 * line information for it.  Owned by s, valid until it is freed.
 */
const char *ta_srcline(struct ta_srclines *s, const char *path, uint64_t offset);

/*
 * Where the source lines of the module recorded at path with build-id id
 * (len 0: none) come from: the first file symfind.h finds with DWARF
 * (a .debug_info), where ta_srcline reads them, its path in *from
 * (malloc'd, NULL for none).
 * TA_SYMS_NONE in a build without source lines.
 */
enum ta_sym_source ta_srcline_origin(const char *path, const uint8_t *id, size_t len, char **from);

/*
 * Removes "." and "dir/.." components from the path p, in place: "/a/./b/../c"
 * becomes "/a/c", "../x/../y" "../y", "a/.." ".", "/.." "/".  The result is
 * never longer than p.
 */
void ta_path_normalise(char *p);

/*
 * Whether this build reads source lines (meson -Dsrcline, libdw): 1, or 0
 * after saying on stderr, for command cmd's --srcline, that it does not.
 */
int ta_srcline_built(const char *cmd);

#endif
