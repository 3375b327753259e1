/* SPDX-License-Identifier: MIT */
/*
 * gapline: one gap's split as one JSON line (see gapline.h). The names come from the one class table
 * (attrib/classes); the writer escapes them like any string.
 */
#include <errno.h>
#include "attrib/classes.h"
#include "attrib/gapline.h"
#include "util/json.h"
#include "util/satadd.h"

uint64_t gapline_sum(const struct gapline *g)
{
	uint64_t s = 0;
	int k;

	for (k = 0; k < VN_CLASS_MAX; k++)
		s = sat_add64(s, g->guest_ns[k]);
	for (k = 0; k < VN_HCLASS_PARTS; k++)
		s = sat_add64(s, g->hyp_ns[k]);
	return s;
}

int gapline_write(FILE *f, const struct gapline *g)
{
	struct json_writer w;
	int k;

	if (gapline_sum(g) != g->duration_ns)
		return -EINVAL;
	json_init(&w, f, 0);
	json_obj_begin(&w);
	json_kv_u64(&w, "cpu", g->cpu);
	json_kv_u64(&w, "start_ns", g->start_ns);
	json_kv_u64(&w, "duration_ns", g->duration_ns);
	json_key(&w, "classes");
	json_obj_begin(&w);
	for (k = 0; k < VN_CLASS_MAX; k++)
		if (g->guest_ns[k])
			json_kv_u64(&w, classes_guest_name(k), g->guest_ns[k]);
	for (k = 0; k < VN_HCLASS_PARTS; k++)
		if (g->hyp_ns[k])
			json_kv_u64(&w, classes_hyp_name(k), g->hyp_ns[k]);
	json_obj_end(&w);
	json_obj_end(&w);
	return json_finish(&w);
}
