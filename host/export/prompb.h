/* SPDX-License-Identifier: MIT */
/*
 * prompb: Prometheus exposition text (promfmt's format 0.0.4) turned into the protobuf bytes of a
 * remote-write 1.0 WriteRequest, encoded by hand (three small messages: TimeSeries, Label, Sample; no
 * protobuf runtime, no generated code, no allocation per series). Pure functions: no I/O, no state but a
 * C locale object made once; thread-safe on distinct buffers.
 *
 * Parsing: "# ..." lines and empty lines are skipped; a sample line is `name{l="v",...} value [timestamp]`
 * (no braces without labels); label values are unescaped (\\, \", \n); values go through strtod in the C
 * locale (NaN, +Inf, -Inf). A line that is none of these is skipped and counted. Every sample is stamped
 * with the caller's time (a timestamp in the text is ignored).
 *
 * Encoding: per series the labels are __name__ plus the line's labels, sorted by name byte-wise as the
 * spec asks (so __name__ comes first whenever the other names start with a lower-case letter, as all of
 * vnoise's do); labels with an empty value are left out (Prometheus treats them as absent); a label name
 * given twice makes the line bad. Series keep the text's order; a series (same name and labels) met again in
 * the same text is skipped and counted (a receiver refuses two samples of one series at one time).
 */
#ifndef VNOISE_HOST_EXPORT_PROMPB_H
#define VNOISE_HOST_EXPORT_PROMPB_H

#include <stddef.h>
#include <stdint.h>

#define PROMPB_MAX_LABELS 32 /* per sample line, __name__ included: more is a bad line */

/* A growing byte buffer (free with prompb_buf_free; a zeroed struct is empty). */
struct prompb_buf {
	uint8_t *p;
	size_t len, cap;
};

struct prompb_label {
	const char *name, *value;
	size_t name_len, value_len;
};

struct prompb_counts {
	uint64_t samples; /* series encoded */
	uint64_t bad_lines; /* lines that were not comments, empty or samples */
	uint64_t duplicates; /* series met again in the same text (skipped) */
};

/*
 * Append to out the WriteRequest of the exposition text (len bytes), every sample at ts_ms (Unix ms).
 * 0 or -ENOMEM (out then holds a cut request: reset it). counts are set (not added to).
 */
int prompb_write_request(struct prompb_buf *out, const char *text, size_t len, int64_t ts_ms,
			 struct prompb_counts *counts) __attribute__((warn_unused_result));

/*
 * Append one WriteRequest.timeseries field: labels as given (the caller sorts them), one sample.
 * 0 or -ENOMEM.
 */
int prompb_put_series(struct prompb_buf *out, const struct prompb_label *labels, size_t n,
		      double value, int64_t ts_ms) __attribute__((warn_unused_result));

/* Sort labels by name, byte-wise (a shorter name before a longer one it is a prefix of). */
void prompb_sort_labels(struct prompb_label *labels, size_t n);

void prompb_buf_free(struct prompb_buf *b);

#endif
