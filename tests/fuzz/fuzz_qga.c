/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the QGA wire protocol on hostile bytes, both directions.
 *  - Guest side: the input is a byte stream fed to an agent (built-ins plus test downstream commands) in
 *    one chunk and, to a second agent, in pseudo-random chunks derived from the input; both must emit the
 *    same replies, and every reply must be one line that the host reply parser accepts.
 *  - Host side: the input is parsed as one reply, and framed (0xFF resets included) with every text parsed
 *    as a reply; accepted replies must have a safe class and description. Every text the parser accepts is
 *    re-serialised with the JSON writer and must parse back to the same serialisation.
 *  - The input (NUL-terminated) is offered as request arguments; a built request must be one line that the
 *    agent answers.
 * Nothing may crash, overread or leak; sanitizers tell. Build: make build-fuzz/fuzz_qga; run with
 * -dict=tests/fuzz/qga.dict.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format/qga.h"
#include "format/qga_priv.h"

struct out {
	char *buf;
	size_t len, cap;
};

static struct qga_agent *whole, *chunked;
static struct jsonr_doc *doc, *doc2;
static struct qga_framer *hf;
static struct out out_whole, out_chunked;

static int h_echo(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	jsonr_write_value(w, args);
	return 0;
}

static int h_fail(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	const char *s;
	int rc = qga_arg_str(args, "desc", false, &s, err, QGA_DESC_MAX);

	if (rc == 0)
		snprintf(err, QGA_DESC_MAX, "%s", s);
	return -EIO;
}

static int h_status(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	static const char *const allowed[] = { "cpu", "verbose", NULL };
	uint64_t cpu = 0;
	bool verbose = false;
	int rc;

	rc = qga_args_only(args, allowed, err, QGA_DESC_MAX);
	if (!rc) {
		rc = qga_arg_u64(args, "cpu", false, &cpu, err, QGA_DESC_MAX);
		rc = rc == -ENOENT ? 0 : rc;
	}
	if (!rc) {
		rc = qga_arg_bool(args, "verbose", false, &verbose, err, QGA_DESC_MAX);
		rc = rc == -ENOENT ? 0 : rc;
	}
	if (rc)
		return rc;
	json_obj_begin(w);
	json_kv_u64(w, "cpu", cpu);
	json_kv_bool(w, "verbose", verbose);
	json_obj_end(w);
	return 0;
}

static const struct qga_command cmds[] = {
	{ "__com.vnoise_echo", h_echo, NULL },
	{ "__com.vnoise_fail", h_fail, NULL },
	{ "__com.vnoise_status", h_status, NULL },
};

static void init_once(void)
{
	if (whole)
		return;
	whole = qga_agent_new("fuzz");
	chunked = qga_agent_new("fuzz");
	doc = jsonr_doc_new(QGA_MSG_MAX, QGA_MAX_NODES);
	doc2 = jsonr_doc_new(QGA_MSG_MAX, QGA_MAX_NODES);
	hf = malloc(sizeof(*hf));
	if (!whole || !chunked || !doc || !doc2 || !hf)
		abort();
	if (qga_agent_register(whole, cmds, 3) || qga_agent_register(chunked, cmds, 3))
		abort();
}

static bool utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0, k, j;

	while (i < n) {
		unsigned char c = s[i];

		if (c < 0x80)
			k = 1;
		else if (c >= 0xc2 && c <= 0xdf)
			k = 2;
		else if (c >= 0xe0 && c <= 0xef)
			k = 3;
		else if (c >= 0xf0 && c <= 0xf4)
			k = 4;
		else
			return false;
		if (i + k > n)
			return false;
		for (j = 1; j < k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
		i += k;
	}
	return true;
}

/* A reply accepted by the host parser: its fields are safe to use and to log. */
static void check_reply(const struct qga_reply *r)
{
	size_t i;

	if (r->is_error == (r->ret != NULL))
		abort();
	if (r->is_error) {
		if (!r->err_class[0] || strlen(r->err_class) >= QGA_CLASS_MAX)
			abort();
		for (i = 0; r->err_class[i]; i++)
			if (!((r->err_class[i] >= 'a' && r->err_class[i] <= 'z') ||
			      (r->err_class[i] >= 'A' && r->err_class[i] <= 'Z')))
				abort();
		for (i = 0; r->err_desc[i]; i++)
			if ((unsigned char)r->err_desc[i] < 0x20 || r->err_desc[i] == 0x7f)
				abort();
		if (i >= QGA_DESC_MAX || !utf8_valid((const unsigned char *)r->err_desc, i))
			abort();
	}
	(void)!qga_reply_sync_check(r, 42);
	(void)qga_reply_id_is(r, 42);
}

static int emit(void *ctx, const char *reply, size_t len)
{
	struct out *o = ctx;
	struct qga_reply r;
	const char *line = reply;
	size_t n = len;

	/* one line; 0xFF only as the first byte (guest-sync-delimited) */
	if (n && (unsigned char)line[0] == QGA_DELIM) {
		line++;
		n--;
	}
	if (n < 2 || line[n - 1] != '\n' || memchr(line, '\n', n - 1) || memchr(line, 0xff, n))
		abort();
	if (qga_reply_parse(doc2, line, n - 1, &r) != 0)
		abort();
	check_reply(&r);
	if (o->len + len > o->cap) {
		size_t cap = (o->len + len) * 2;
		char *b = realloc(o->buf, cap);

		if (!b)
			abort();
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, reply, len);
	o->len += len;
	return 0;
}

static char *serialise(const struct jsonr_value *v, size_t *len)
{
	struct json_writer w;
	char *buf = NULL;
	FILE *f;

	*len = 0;
	f = open_memstream(&buf, len);
	if (!f)
		abort();
	json_init(&w, f, 0);
	jsonr_write_value(&w, v);
	if (json_finish(&w) != 0)
		abort();
	fclose(f);
	return buf;
}

/*
 * Re-serialise v; the result must parse, and from then on the serialisation is a fixed point (the first
 * round may differ: "-0.0" is written "-0", which reads back as the integer 0).
 */
static void check_roundtrip(const struct jsonr_value *v)
{
	const struct jsonr_value *v2;
	size_t alen, blen, clen;
	char *a, *b, *c;

	a = serialise(v, &alen);
	if (alen > QGA_MSG_MAX) { /* numbers may grow ("1e5" is written 100000): skip */
		free(a);
		return;
	}
	if (jsonr_parse(doc2, a, alen, &v2) != 0)
		abort();
	b = serialise(v2, &blen);
	if (blen > QGA_MSG_MAX || jsonr_parse(doc2, b, blen, &v2) != 0)
		abort();
	c = serialise(v2, &clen);
	if (blen != clen || memcmp(b, c, blen) != 0)
		abort();
	free(a);
	free(b);
	free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data, *msg;
	const struct jsonr_value *root;
	struct qga_reply r;
	size_t left = size, off, chunk, msg_len;
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ size;
	char *text, line[512];
	ssize_t n;
	int ev;

	init_once();

	/* guest: the same stream in one chunk and in pseudo-random chunks gives the same replies */
	qga_agent_reset(whole);
	qga_agent_reset(chunked);
	out_whole.len = out_chunked.len = 0;
	if (qga_agent_feed(whole, data, size, emit, &out_whole))
		abort();
	for (off = 0; off < size && off < 16; off++)
		x = (x ^ data[off]) * 0x100000001b3ULL;
	for (off = 0; off < size; off += chunk) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		chunk = (x & 0x300) ? 1 + (x % 17) : 1 + (x % 4096);
		if (chunk > size - off)
			chunk = size - off;
		if (qga_agent_feed(chunked, data + off, chunk, emit, &out_chunked))
			abort();
	}
	if (out_whole.len != out_chunked.len ||
	    memcmp(out_whole.buf, out_chunked.buf, out_whole.len) != 0)
		abort();

	/* host: the whole input as one reply */
	if (qga_reply_parse(doc, in, size, &r) == 0)
		check_reply(&r);

	/* host: framed replies */
	qga_framer_init(hf);
	while ((ev = qga_framer_next(hf, &in, &left, &msg, &msg_len)) != QGA_FRAME_NEED) {
		if (ev != QGA_FRAME_MSG)
			continue;
		if (qga_reply_parse(doc, msg, msg_len, &r) == 0)
			check_reply(&r);
		if (jsonr_parse(doc, msg, msg_len, &root) == 0)
			check_roundtrip(root);
	}
	if (size <= QGA_MSG_MAX && jsonr_parse(doc, (const char *)data, size, &root) == 0)
		check_roundtrip(root);

	/* host: the input as request arguments */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	n = qga_request(line, sizeof(line), "__com.vnoise_echo", text, 7);
	if (n >= 0) {
		const char *reply;
		size_t reply_len;

		if ((size_t)n != strlen(line) || line[n - 1] != '\n' || memchr(line, '\n', n - 1))
			abort();
		qga_agent_dispatch(whole, line, n, &reply, &reply_len);
		if (qga_reply_parse(doc, reply, reply_len - 1, &r) != 0 || !qga_reply_id_is(&r, 7))
			abort();
	} else if (n != -EINVAL && n != -ENOSPC) {
		abort();
	}
	free(text);
	return 0;
}
