/* SPDX-License-Identifier: MIT */
/*
 * export_meta.c - what the Chrome export says of the run as a whole
 * (export_pb.h's ta_xmeta): the program's application info
 * (TA_APP_INFO) and its counters' units (TA_COUNTER_CONFIG), in the
 * trace's "otherData".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "common.h"
#include "export_pb.h"

int ta_xmeta_info(struct ta_xmeta *m, const char *text)
{
	char **v = ta_vec_reserve(m->info, m->ninfo + 1, &m->info_cap, sizeof(*v), 8);

	if (!v)
		return -1;
	m->info = v;
	if (!(v[m->ninfo] = strdup(text)))
		return -1;
	m->ninfo++;
	return 0;
}

int ta_xmeta_unit(struct ta_xmeta *m, const char *counter, uint32_t unit)
{
	struct ta_xunit *u;

	/* The last word on a counter holds. */
	for (size_t k = 0; k < m->nunits; k++)
		if (!strcmp(m->units[k].counter, counter)) {
			m->units[k].unit = unit;
			return 0;
		}
	u = ta_vec_reserve(m->units, m->nunits + 1, &m->units_cap, sizeof(*u), 8);
	if (!u)
		return -1;
	m->units = u;
	if (!(u[m->nunits].counter = strdup(counter)))
		return -1;
	u[m->nunits++].unit = unit;
	return 0;
}

const char *ta_unit_name(uint32_t unit)
{
	return unit == TA_UNIT_BYTES_ ? "bytes" : unit == TA_UNIT_PERCENT_ ? "percent" : "number";
}

void ta_xmeta_chrome(const struct ta_xmeta *m, FILE *f)
{
	if (!m->ninfo && !m->nunits)
		return;
	fputs("\"otherData\": {", f);
	if (m->ninfo) {
		fputs("\"app_info\": [", f);
		for (size_t k = 0; k < m->ninfo; k++) {
			if (k)
				fputs(", ", f);
			ta_json_str(f, m->info[k]);
		}
		fputs(m->nunits ? "], " : "]", f);
	}
	if (m->nunits) {
		fputs("\"counter_units\": {", f);
		for (size_t k = 0; k < m->nunits; k++) {
			if (k)
				fputs(", ", f);
			ta_json_str(f, m->units[k].counter);
			fprintf(f, ": \"%s\"", ta_unit_name(m->units[k].unit));
		}
		fputs("}", f);
	}
	fputs("},\n", f);
}

void ta_xmeta_free(struct ta_xmeta *m)
{
	for (size_t k = 0; k < m->ninfo; k++)
		free(m->info[k]);
	free(m->info);
	for (size_t k = 0; k < m->nunits; k++)
		free(m->units[k].counter);
	free(m->units);
	memset(m, 0, sizeof(*m));
}
