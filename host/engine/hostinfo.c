/* SPDX-License-Identifier: MIT */
/*
 * hostinfo: the run-wide facts of the views (see hostinfo.h); what the process itself contributes to them.
 */
#include <dirent.h>
#include "engine/hostinfo.h"
#include "util/parse.h"

int hostinfo_self_tids(uint32_t *tids, int max)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!dir)
		return 0;
	while (n < max && (e = readdir(dir)) != NULL) {
		uint64_t v;

		if (!parse_u64(e->d_name, &v) && v && v <= UINT32_MAX)
			tids[n++] = (uint32_t)v;
	}
	closedir(dir);
	return n;
}
