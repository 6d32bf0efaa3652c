/* SPDX-License-Identifier: MIT */
/*
 * manpage.h - `traceagent help`: a command's man page, shown with man.
 */
#ifndef TA_MANPAGE_H
#define TA_MANPAGE_H

#include <stddef.h>

/*
 * Shows the man page PAGE.SECTION (traceagent-report, "1") with `man -l`,
 * the page found relative to the running command: installed, in
 * <bindir>/TA_MAN_FROM_BINDIR/manSECTION/ (../share/man/man1); in the
 * build tree, next to the command's folder (build/analyzer/../docs/).
 * Returns man's exit status, or -1 with why it could not (no such page,
 * no man) in why, one line without the newline.
 */
int ta_man_show(const char *page, const char *section, char *why, size_t size);

#endif
