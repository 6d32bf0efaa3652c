/* SPDX-License-Identifier: MIT */
/*
 * header_version.c - include/traceagent.h compiles as strict C99 (or C11)
 * and says the version the build is (meson's project version, argv[1]).
 * Built once per language standard by tests/api/meson.build; the C++11
 * build is header_version.cc, which includes this file.
 */
#include <stdio.h>
#include <string.h>

#include <traceagent.h>

#if TA_VERSION_NUMBER != TA_VERSION_MAJOR * 10000 + TA_VERSION_MINOR * 100 + TA_VERSION_PATCH
#error "TA_VERSION_NUMBER does not follow the version's parts"
#endif

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s VERSION\n", argv[0]);
		return 2;
	}
	if (strcmp(TA_VERSION_STRING, argv[1]) != 0) {
		fprintf(stderr, "traceagent.h says %s, the build is %s\n", TA_VERSION_STRING,
			argv[1]);
		return 1;
	}
	return 0;
}
