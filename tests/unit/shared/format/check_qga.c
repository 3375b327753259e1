/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/format/qga: the framer (a multi-message stream split at every byte position and
 * every pair of positions, coalesced messages, garbage, 0xFF resets, oversize texts balanced and not), the
 * dispatcher (byte-exact replies as libvirt expects them, QEMU's request checks, guest-info checked with the
 * JSON reader), downstream registration and handlers, and the host helpers (request lines, hostile
 * replies, guest-sync matching). The JSON reader itself is tested in util/check_jsonread.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format/qga.h"
#include "format/qga_priv.h"

/* ---- helpers ---- */

#define MAX_EVENTS 64

struct evlog {
	int n;
	int kind[MAX_EVENTS];
	char *msg[MAX_EVENTS]; /* MSG events: a copy of the text */
};

static void evlog_clear(struct evlog *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		free(l->msg[i]);
	memset(l, 0, sizeof(*l));
}

/* Feed one chunk, logging every event. */
static void feed(struct qga_framer *f, struct evlog *l, const char *data, size_t len)
{
	const char *msg;
	size_t msg_len;
	enum qga_frame_event ev;

	while ((ev = qga_framer_next(f, &data, &len, &msg, &msg_len)) != QGA_FRAME_NEED) {
		ck_assert_int_lt(l->n, MAX_EVENTS);
		l->kind[l->n] = ev;
		l->msg[l->n] = NULL;
		if (ev == QGA_FRAME_MSG) {
			ck_assert_uint_eq(strlen(msg), msg_len);
			l->msg[l->n] = strndup(msg, msg_len);
		}
		l->n++;
	}
	ck_assert_uint_eq(len, 0);
}

static void evlog_expect(const struct evlog *l, const int *kinds, const char *const *msgs, int n)
{
	int i, m = 0;

	ck_assert_int_eq(l->n, n);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(l->kind[i], kinds[i]);
		if (kinds[i] == QGA_FRAME_MSG)
			ck_assert_str_eq(l->msg[i], msgs[m++]);
	}
}

static struct qga_framer *framer_new(void)
{
	struct qga_framer *f = malloc(sizeof(*f));

	ck_assert_ptr_nonnull(f);
	qga_framer_init(f);
	return f;
}

/* Parse from an exact-size heap copy (no NUL after it), so ASan catches any overread. */
static int parse_exact(struct jsonr_doc *doc, const char *text, size_t len,
		       const struct jsonr_value **root)
{
	char *copy = malloc(len ? len : 1);
	int rc;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, text, len);
	rc = jsonr_parse(doc, copy, len, root);
	free(copy);
	return rc;
}

static int parse_str(struct jsonr_doc *doc, const char *text, const struct jsonr_value **root)
{
	return parse_exact(doc, text, strlen(text), root);
}

static struct jsonr_doc *doc;

static void doc_setup(void)
{
	doc = jsonr_doc_new(QGA_MSG_MAX, QGA_MAX_NODES);
	ck_assert_ptr_nonnull(doc);
}

static void doc_teardown(void)
{
	jsonr_doc_free(doc);
	doc = NULL;
}

static struct qga_agent *agent;

static void agent_setup(void)
{
	doc_setup();
	agent = qga_agent_new("1.2.3");
	ck_assert_ptr_nonnull(agent);
}

static void agent_teardown(void)
{
	qga_agent_free(agent);
	agent = NULL;
	doc_teardown();
}

/* Dispatch a request; returns the reply (static copy); checks it is one line. */
static const char *dispatch(const char *req)
{
	static char out[QGA_REPLY_MAX + 2];
	const char *reply;
	size_t len;
	char *copy = strdup(req);

	ck_assert_ptr_nonnull(copy);
	qga_agent_dispatch(agent, copy, strlen(copy), &reply, &len);
	free(copy);
	ck_assert_uint_ge(len, 2);
	ck_assert_uint_lt(len, sizeof(out));
	ck_assert_int_eq(reply[len - 1], '\n');
	ck_assert_ptr_null(memchr(reply, '\n', len - 1));
	memcpy(out, reply, len);
	out[len] = '\0';
	return out;
}

/* ---- framer ---- */

static const char stream[] = "{\"execute\":\"guest-sync\",\"arguments\":{\"id\":1}}\n"
			     "  {\"a\":\"x}{\\\"y]\"}[1,{\"b\":[]}]\r\n"
			     "{\"s\":\"\\\\\"}{\"t\":\"\\\\\\\"}\"}\t{}";
static const char *const stream_msgs[] = {
	"{\"execute\":\"guest-sync\",\"arguments\":{\"id\":1}}",
	"{\"a\":\"x}{\\\"y]\"}",
	"[1,{\"b\":[]}]",
	"{\"s\":\"\\\\\"}",
	"{\"t\":\"\\\\\\\"}\"}",
	"{}",
};
static const int stream_kinds[] = { 1, 1, 1, 1, 1, 1 };

START_TEST(test_framer_split_every_position)
{
	struct qga_framer *f = framer_new();
	struct evlog l = { 0 };
	size_t len = sizeof(stream) - 1, i, j;

	for (i = 0; i <= len; i++) {
		qga_framer_init(f);
		feed(f, &l, stream, i);
		feed(f, &l, stream + i, len - i);
		evlog_expect(&l, stream_kinds, stream_msgs, 6);
		ck_assert_uint_eq(f->garbage, 0);
		ck_assert_uint_eq(f->messages, 6);
		evlog_clear(&l);
	}
	for (i = 0; i <= len; i++) {
		for (j = i; j <= len; j++) {
			qga_framer_init(f);
			feed(f, &l, stream, i);
			feed(f, &l, stream + i, j - i);
			feed(f, &l, stream + j, len - j);
			evlog_expect(&l, stream_kinds, stream_msgs, 6);
			evlog_clear(&l);
		}
	}
	free(f);
}
END_TEST

START_TEST(test_framer_byte_at_a_time)
{
	struct qga_framer *f = framer_new();
	struct evlog l = { 0 };
	size_t i;

	for (i = 0; i < sizeof(stream) - 1; i++)
		feed(f, &l, stream + i, 1);
	evlog_expect(&l, stream_kinds, stream_msgs, 6);
	evlog_clear(&l);
	free(f);
}
END_TEST

START_TEST(test_framer_coalesced)
{
	static const char in[] = "{\"execute\":\"guest-ping\"}{\"execute\":\"guest-info\"}"
				 "{\"execute\":\"guest-sync\",\"arguments\":{\"id\":5}}";
	static const char *const msgs[] = {
		"{\"execute\":\"guest-ping\"}", "{\"execute\":\"guest-info\"}",
		"{\"execute\":\"guest-sync\",\"arguments\":{\"id\":5}}"
	};
	static const int kinds[] = { 1, 1, 1 };
	struct qga_framer *f = framer_new();
	struct evlog l = { 0 };

	feed(f, &l, in, sizeof(in) - 1);
	evlog_expect(&l, kinds, msgs, 3);
	ck_assert_uint_eq(f->messages, 3);
	evlog_clear(&l);
	free(f);
}
END_TEST

START_TEST(test_framer_garbage)
{
	/* 'x','x','1','2',']','}','"',':' = 8 garbage bytes; whitespace is not garbage */
	static const char in[] = "xx 12\n]} {\"a\":1}\r\n\":\t{\"b\":\"]\"}";
	static const char *const msgs[] = { "{\"a\":1}", "{\"b\":\"]\"}" };
	static const int kinds[] = { 1, 1 };
	struct qga_framer *f = framer_new();
	struct evlog l = { 0 };

	feed(f, &l, in, sizeof(in) - 1);
	evlog_expect(&l, kinds, msgs, 2);
	ck_assert_uint_eq(f->garbage, 8);
	ck_assert_uint_eq(f->dropped, 0);
	evlog_clear(&l);
	free(f);
}
END_TEST

START_TEST(test_framer_delim_reset)
{
	/* partial text, 0xFF inside a string after a backslash, then a complete one */
	static const char in[] = "{\"execute\":\"gue\xff{\"a\":\"\\\xff{\"ok\":1}\xff\xff";
	static const char *const msgs[] = { "{\"ok\":1}" };
	static const int kinds[] = { QGA_FRAME_RESET, QGA_FRAME_RESET, QGA_FRAME_MSG,
				     QGA_FRAME_RESET, QGA_FRAME_RESET };
	struct qga_framer *f = framer_new();
	struct evlog l = { 0 };
	size_t len = sizeof(in) - 1, i;

	for (i = 0; i <= len; i++) {
		qga_framer_init(f);
		feed(f, &l, in, i);
		feed(f, &l, in + i, len - i);
		evlog_expect(&l, kinds, msgs, 5);
		ck_assert_uint_eq(f->resets, 4);
		ck_assert_uint_eq(f->dropped, strlen("{\"execute\":\"gue") + strlen("{\"a\":\"\\"));
		ck_assert_uint_eq(f->garbage, 0);
		evlog_clear(&l);
	}
	free(f);
}
END_TEST

/* A balanced object of exactly n bytes: {"p":"aaa..."} */
static char *object_of(size_t n)
{
	char *s = malloc(n + 1);

	ck_assert_uint_ge(n, 8);
	memcpy(s, "{\"p\":\"", 6);
	memset(s + 6, 'a', n - 8);
	memcpy(s + n - 2, "\"}", 2);
	s[n] = '\0';
	return s;
}

START_TEST(test_framer_max_size)
{
	struct qga_framer *f = framer_new();
	struct evlog l = { 0 };
	char *big = object_of(QGA_MSG_MAX);

	feed(f, &l, big, QGA_MSG_MAX);
	ck_assert_int_eq(l.n, 1);
	ck_assert_int_eq(l.kind[0], QGA_FRAME_MSG);
	ck_assert_uint_eq(strlen(l.msg[0]), QGA_MSG_MAX);
	evlog_clear(&l);
	free(big);
	free(f);
}
END_TEST

START_TEST(test_framer_oversize)
{
	static const char *const msgs[] = { "{\"after\":1}" };
	static const int kinds[] = { QGA_FRAME_OVERSIZE, QGA_FRAME_MSG };
	struct qga_framer *f = framer_new();
	struct evlog l = { 0 };
	size_t n = QGA_MSG_MAX + 100, i;
	char *big = malloc(n + 32);

	/* an oversize object whose string holds braces: discarded up to its real end */
	memcpy(big, "{\"p\":\"", 6);
	for (i = 6; i < n - 2; i++)
		big[i] = "}{]["[i % 4];
	memcpy(big + n - 2, "\"}", 2);
	strcpy(big + n, "{\"after\":1}");
	feed(f, &l, big, strlen(big));
	evlog_expect(&l, kinds, msgs, 2);
	ck_assert_uint_eq(f->oversize, 1);
	ck_assert_uint_eq(f->dropped, n);
	ck_assert_uint_eq(f->garbage, 0);
	evlog_clear(&l);

	/* the same in chunks of 1000 */
	qga_framer_init(f);
	for (i = 0; i < strlen(big); i += 1000)
		feed(f, &l, big + i, strlen(big) - i < 1000 ? strlen(big) - i : 1000);
	evlog_expect(&l, kinds, msgs, 2);
	evlog_clear(&l);

	/* exactly one byte too many */
	free(big);
	big = object_of(QGA_MSG_MAX + 1);
	qga_framer_init(f);
	feed(f, &l, big, QGA_MSG_MAX + 1);
	feed(f, &l, "{\"after\":1}", 11);
	evlog_expect(&l, kinds, msgs, 2);
	evlog_clear(&l);
	free(big);
	free(f);
}
END_TEST

START_TEST(test_framer_oversize_unbalanced)
{
	static const char *const msgs[] = { "{\"after\":1}" };
	static const int kinds[] = { QGA_FRAME_OVERSIZE, QGA_FRAME_MSG };
	struct qga_framer *f = framer_new();
	struct evlog l = { 0 };
	size_t n = 3 * QGA_MSG_MAX;
	char *big = malloc(n + 32);

	/* never closes: after the limit plus another QGA_MSG_MAX bytes the framer starts afresh, and the
	 * rest ("1,1,...") is garbage up to the next text */
	big[0] = '{';
	for (size_t i = 1; i < n; i++)
		big[i] = i % 2 ? '1' : ',';
	strcpy(big + n, "{\"after\":1}");
	feed(f, &l, big, n + 11);
	evlog_expect(&l, kinds, msgs, 2);
	ck_assert_uint_eq(f->garbage, n - 2 * QGA_MSG_MAX - 1);
	ck_assert_uint_eq(f->dropped, 2 * QGA_MSG_MAX + 1);
	evlog_clear(&l);

	/* an unterminated string: same */
	qga_framer_init(f);
	memcpy(big, "{\"", 2);
	memset(big + 2, 'x', n - 2);
	strcpy(big + n, "{\"after\":1}");
	feed(f, &l, big, n + 11);
	evlog_expect(&l, kinds, msgs, 2);
	ck_assert_uint_eq(f->garbage, n - 2 * QGA_MSG_MAX - 1);
	evlog_clear(&l);
	free(big);
	free(f);
}
END_TEST

START_TEST(test_framer_reset_api)
{
	struct qga_framer *f = framer_new();
	struct evlog l = { 0 };

	feed(f, &l, "{\"a\":\"}", 7);
	ck_assert_int_eq(l.n, 0);
	qga_framer_reset(f);
	ck_assert_uint_eq(f->dropped, 7);
	feed(f, &l, "{\"b\":2}", 7);
	ck_assert_int_eq(l.n, 1);
	ck_assert_str_eq(l.msg[0], "{\"b\":2}");
	evlog_clear(&l);
	free(f);
}
END_TEST

/* ---- dispatcher ---- */

START_TEST(test_dispatch_sync)
{
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"guest-sync\",\"arguments\":{\"id\":1234567890123}}"),
	    "{\"return\":1234567890123}\n");
	/* libvirt's spacing */
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-sync\", \"arguments\":{\"id\":42}}\n"),
			 "{\"return\":42}\n");
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"guest-sync\",\"arguments\":{\"id\":-9223372036854775808}}"),
	    "{\"return\":-9223372036854775808}\n");
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"guest-sync\",\"arguments\":{\"id\":9223372036854775807}}"),
	    "{\"return\":9223372036854775807}\n");
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"guest-sync\",\"arguments\":{\"id\":9223372036854775808}}"),
	    "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Invalid parameter type for 'id', "
	    "expected: integer\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-sync\",\"arguments\":{\"id\":\"7\"}}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Invalid parameter type "
			 "for 'id', expected: integer\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-sync\",\"arguments\":{\"id\":1.0}}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Invalid parameter type "
			 "for 'id', expected: integer\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-sync\"}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Parameter 'id' is "
			 "missing\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-sync\",\"arguments\":{}}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Parameter 'id' is "
			 "missing\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-sync\",\"arguments\":{\"id\":1,\"x\":2}}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Parameter 'x' is "
			 "unexpected\"}}\n");
}
END_TEST

START_TEST(test_dispatch_sync_delimited)
{
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"guest-sync-delimited\",\"arguments\":{\"id\":42}}"),
	    "\xff{\"return\":42}\n");
	/* an error reply has no 0xFF (as QEMU: the handler never ran) */
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-sync-delimited\"}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Parameter 'id' is "
			 "missing\"}}\n");
}
END_TEST

START_TEST(test_dispatch_ping)
{
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-ping\"}"), "{\"return\":{}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-ping\",\"arguments\":{}}"),
			 "{\"return\":{}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-info\",\"arguments\":{\"a\":1}}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Parameter 'a' is "
			 "unexpected\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-ping\",\"arguments\":{\"a\":1}}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Parameter 'a' is "
			 "unexpected\"}}\n");
}
END_TEST

static const struct jsonr_value *info_find(const struct jsonr_value *list, const char *name)
{
	const struct jsonr_value *e;

	for (e = list->child; e; e = e->next) {
		const char *n = jsonr_get_str(jsonr_obj_get(e, "name"));

		if (n && strcmp(n, name) == 0)
			return e;
	}
	return NULL;
}

START_TEST(test_dispatch_info)
{
	static const char *const names[] = { "guest-sync-delimited", "guest-sync", "guest-ping",
					     "guest-info" };
	const char *reply = dispatch("{\"execute\":\"guest-info\"}");
	const struct jsonr_value *root, *ret, *list, *e;
	size_t i;

	ck_assert_int_eq(parse_str(doc, reply, &root), 0);
	ck_assert_uint_eq(root->len, 1);
	ret = jsonr_obj_get(root, "return");
	ck_assert_ptr_nonnull(ret);
	ck_assert_uint_eq(ret->len, 2);
	ck_assert_str_eq(jsonr_get_str(jsonr_obj_get(ret, "version")), "1.2.3");
	list = jsonr_obj_get(ret, "supported_commands");
	ck_assert_int_eq(list->kind, JSONR_ARR);
	ck_assert_uint_eq(list->len, 4);
	for (i = 0; i < 4; i++) {
		e = info_find(list, names[i]);
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->len, 3);
		ck_assert(jsonr_obj_get(e, "enabled")->kind == JSONR_BOOL &&
			  jsonr_obj_get(e, "enabled")->b);
		ck_assert(jsonr_obj_get(e, "success-response")->kind == JSONR_BOOL &&
			  jsonr_obj_get(e, "success-response")->b);
	}
	ck_assert_ptr_null(info_find(list, "guest-shutdown"));
	ck_assert_str_eq(
	    reply, "{\"return\":{\"version\":\"1.2.3\",\"supported_commands\":["
		   "{\"name\":\"guest-sync-delimited\",\"enabled\":true,\"success-response\":true},"
		   "{\"name\":\"guest-sync\",\"enabled\":true,\"success-response\":true},"
		   "{\"name\":\"guest-ping\",\"enabled\":true,\"success-response\":true},"
		   "{\"name\":\"guest-info\",\"enabled\":true,\"success-response\":true}]}}\n");
}
END_TEST

START_TEST(test_dispatch_not_found)
{
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"guest-foo\"}"),
	    "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The command guest-foo "
	    "has not been found\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-shutdown\"}"),
			 "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The command "
			 "guest-shutdown has not been found\"}}\n");
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"guest-shutdown\",\"arguments\":{\"mode\":\"powerdown\"}}"),
	    "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The command guest-shutdown has "
	    "not been found\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_start\"}"),
			 "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The command "
			 "__com.vnoise_start has not been found\"}}\n");
	/* hostile names are escaped in the reply */
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"a\\\"b\\n\"}"),
	    "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The command a\\\"b\\n "
	    "has not been found\"}}\n");
}
END_TEST

START_TEST(test_dispatch_bad_requests)
{
	static const struct {
		const char *req, *desc;
	} cases[] = {
		{ "[1,2]", "QMP input must be a JSON object" },
		{ "{}", "QMP input lacks member 'execute'" },
		{ "{\"arguments\":{}}", "QMP input lacks member 'execute'" },
		{ "{\"execute\":1}", "QMP input member 'execute' must be a string" },
		{ "{\"execute\":null}", "QMP input member 'execute' must be a string" },
		{ "{\"execute\":\"guest-ping\",\"arguments\":[]}",
		  "QMP input member 'arguments' must be an object" },
		{ "{\"execute\":\"guest-ping\",\"exec-oob\":\"x\"}",
		  "QMP input member 'exec-oob' is unexpected" },
		{ "{\"execute\":\"guest-ping\",\"execute\":\"guest-info\"}",
		  "JSON parse error at byte 24: duplicate member name" },
		{ "{\"execute\":\"guest-ping\"",
		  "JSON parse error at byte 23: unterminated container" },
		{ "{\"execute\":\"\\u0000\"}",
		  "JSON parse error at byte 18: \\\\u0000 is not supported" }, /* as JSON text */
	};
	char want[512];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(want, sizeof(want),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"%s\"}}\n",
			 cases[i].desc);
		ck_assert_str_eq(dispatch(cases[i].req), want);
	}
}
END_TEST

START_TEST(test_dispatch_id_echo)
{
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-ping\",\"id\":\"abc\"}"),
			 "{\"return\":{},\"id\":\"abc\"}\n");
	ck_assert_str_eq(dispatch("{\"id\":{\"n\":[1,true]},\"execute\":\"guest-ping\"}"),
			 "{\"return\":{},\"id\":{\"n\":[1,true]}}\n");
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"guest-nope\",\"id\":7}"),
	    "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The command guest-nope "
	    "has not been found\"},\"id\":7}\n");
	ck_assert_str_eq(dispatch("{\"id\":-1}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":"
			 "\"QMP input lacks member 'execute'\"},\"id\":-1}\n");
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"guest-sync-delimited\",\"arguments\":{\"id\":3},\"id\":4}"),
	    "\xff{\"return\":3,\"id\":4}\n");
}
END_TEST

START_TEST(test_dispatch_huge_id)
{
	static const char err_nf[] = "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The "
				     "command x has not been found\"}}\n";
	char *req = malloc(QGA_MSG_MAX + 1);
	const char *reply;
	size_t len, head;

	/* the largest id a ping can carry still fits its reply */
	strcpy(req, "{\"execute\":\"guest-ping\",\"id\":\"");
	head = strlen(req);
	memset(req + head, 'y', QGA_MSG_MAX - head - 2);
	strcpy(req + QGA_MSG_MAX - 2, "\"}");
	qga_agent_dispatch(agent, req, QGA_MSG_MAX, &reply, &len);
	ck_assert_uint_eq(len, QGA_MSG_MAX - head - 2 + strlen("{\"return\":{},\"id\":\"\"}\n"));
	ck_assert(memcmp(reply, "{\"return\":{},\"id\":\"yyy", 22) == 0);
	/* an error reply with that id would not: the id is dropped rather than the line cut */
	strcpy(req, "{\"execute\":\"x\",\"id\":\"");
	head = strlen(req);
	memset(req + head, 'y', QGA_MSG_MAX - head - 2);
	strcpy(req + QGA_MSG_MAX - 2, "\"}");
	qga_agent_dispatch(agent, req, QGA_MSG_MAX, &reply, &len);
	ck_assert_uint_eq(len, strlen(err_nf));
	ck_assert_str_eq(reply, err_nf);
	free(req);
}
END_TEST

struct sink {
	int n;
	char *lines[16];
};

static int sink_emit(void *ctx, const char *reply, size_t len)
{
	struct sink *s = ctx;

	ck_assert_int_lt(s->n, 16);
	ck_assert_int_eq(reply[len - 1], '\n');
	s->lines[s->n++] = strndup(reply, len);
	return 0;
}

static void sink_clear(struct sink *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		free(s->lines[i]);
	s->n = 0;
}

START_TEST(test_feed_libvirt_session)
{
	static const char in[] =
	    "{\"execute\":\"guest-sync\", \"arguments\":{\"id\":1700000000123}}\n"
	    "{\"execute\":\"guest-ping\"}\n{\"execute\":\"guest-shutdown\"}\n"
	    "\xff{\"execute\":\"guest-sync-delimited\",\"arguments\":{\"id\":9}}\n";
	struct sink s = { 0 };
	size_t len = sizeof(in) - 1, i;

	for (i = 0; i <= len; i++) {
		qga_agent_reset(agent);
		ck_assert_int_eq(qga_agent_feed(agent, in, i, sink_emit, &s), 0);
		ck_assert_int_eq(qga_agent_feed(agent, in + i, len - i, sink_emit, &s), 0);
		ck_assert_int_eq(s.n, 4);
		ck_assert_str_eq(s.lines[0], "{\"return\":1700000000123}\n");
		ck_assert_str_eq(s.lines[1], "{\"return\":{}}\n");
		ck_assert_str_eq(s.lines[2],
				 "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The "
				 "command guest-shutdown has not been found\"}}\n");
		ck_assert_str_eq(s.lines[3], "\xff{\"return\":9}\n");
		sink_clear(&s);
	}
	ck_assert_uint_eq(qga_agent_framer(agent)->messages, 4 * (len + 1));
}
END_TEST

START_TEST(test_feed_oversize_and_garbage)
{
	struct sink s = { 0 };
	char *big = object_of(QGA_MSG_MAX + 10);

	ck_assert_int_eq(qga_agent_feed(agent, "junk\n", 5, sink_emit, &s), 0);
	ck_assert_int_eq(s.n, 0);
	ck_assert_int_eq(qga_agent_feed(agent, big, strlen(big), sink_emit, &s), 0);
	ck_assert_int_eq(qga_agent_feed(agent, "{\"execute\":\"guest-ping\"}", 24, sink_emit, &s),
			 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.lines[0],
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"JSON message "
			 "exceeds 65536 bytes\"}}\n");
	ck_assert_str_eq(s.lines[1], "{\"return\":{}}\n");
	ck_assert_uint_eq(qga_agent_framer(agent)->garbage, 4);
	ck_assert_uint_eq(qga_agent_framer(agent)->oversize, 1);
	sink_clear(&s);
	free(big);
}
END_TEST

static int emit_fail(void *ctx, const char *reply, size_t len)
{
	(*(int *)ctx)++;
	return -EPIPE;
}

START_TEST(test_feed_emit_error)
{
	static const char in[] = "{\"execute\":\"guest-ping\"}{\"execute\":\"guest-ping\"}";
	int calls = 0;

	ck_assert_int_eq(qga_agent_feed(agent, in, sizeof(in) - 1, emit_fail, &calls), -EPIPE);
	ck_assert_int_eq(calls, 1);
}
END_TEST

/* ---- downstream registration ---- */

START_TEST(test_name_validation)
{
	static const char *const good[] = {
		"__com.vnoise_start",	    "__com.vnoise_stop",
		"__com.vnoise_status",	    "__org.example.sub_x",
		"__com.vnoise_get-status2", "__a.b_c",
		"__com.vn-oise_x-y",	    "__1.2_a",
		"__com.vnoise_x-start",
	};
	static const char *const bad[] = {
		"",
		"guest-sync",
		"_com.vnoise_start",
		"__vnoise_start", /* one label */
		"__com.vnoise_", /* empty stem */
		"__com.vnoise", /* no stem */
		"__com.vnoise_Start", /* upper case */
		"__COM.vnoise_start", /* upper case RFQDN */
		"__com.vnoise_get_status", /* underscore in the stem */
		"__com..vnoise_start", /* empty label */
		"__.com.vnoise_start",
		"__com.vnoise._start",
		"__com.-vnoise_start", /* label starts with '-' */
		"__com.vnoise-_start", /* label ends with '-' */
		"__com.vnoise_1start", /* stem starts with a digit */
		"__com.vnoise_-start",
		"__com.vnoise_st art",
		"__com.vnoise_st.art",
		"__com.vn oise_start",
		"__com.vnoise_start\n",
		"__com.vnoise_stärt",
	};
	char name[QGA_NAME_MAX + 1];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(qga_name_downstream(good[i]), "rejected %s", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!qga_name_downstream(bad[i]), "accepted %s", bad[i]);
	ck_assert(!qga_name_downstream(NULL));
	/* QGA_NAME_MAX - 1 bytes is the longest */
	strcpy(name, "__com.vnoise_");
	memset(name + 13, 'a', QGA_NAME_MAX - 1 - 13);
	name[QGA_NAME_MAX - 1] = '\0';
	ck_assert(qga_name_downstream(name));
	name[QGA_NAME_MAX - 1] = 'a';
	name[QGA_NAME_MAX] = '\0';
	ck_assert(!qga_name_downstream(name));
}
END_TEST

struct vstate {
	int starts, stops;
	uint64_t cpu;
	const char *mode;
};

static int h_start(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	static const char *const allowed[] = { "cpu", "mode", NULL };
	struct vstate *st = ctx;
	int rc;

	rc = qga_args_only(args, allowed, err, QGA_DESC_MAX);
	if (!rc)
		rc = qga_arg_u64(args, "cpu", true, &st->cpu, err, QGA_DESC_MAX);
	if (!rc) {
		rc = qga_arg_str(args, "mode", false, &st->mode, err, QGA_DESC_MAX);
		if (rc == -ENOENT) {
			st->mode = "measure";
			rc = 0;
		}
	}
	if (rc)
		return rc;
	if (st->starts) {
		snprintf(err, QGA_DESC_MAX, "already running");
		return -EBUSY;
	}
	st->starts++;
	json_obj_begin(w);
	json_kv_u64(w, "cpu", st->cpu);
	json_kv_str(w, "mode", st->mode);
	json_obj_end(w);
	return 0;
}

static int h_stop(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	struct vstate *st = ctx;

	st->stops++;
	return -ENOTCONN; /* no description: the errno text is used */
}

static int h_status(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	struct vstate *st = ctx;

	json_obj_begin(w);
	json_kv_bool(w, "running", st->starts > st->stops);
	json_obj_end(w);
	return 0;
}

static int h_nothing(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	return 0;
}

static int h_two(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	json_u64(w, 1);
	json_u64(w, 2);
	return 0;
}

static int h_open(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	json_arr_begin(w);
	return 0;
}

static int h_huge(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	int i;

	json_arr_begin(w);
	for (i = 0; i < QGA_REPLY_MAX / 4; i++)
		json_u64(w, 1000);
	json_arr_end(w);
	return 0;
}

static int h_echo(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	jsonr_write_value(w, args);
	return 0;
}

START_TEST(test_register_and_call)
{
	struct vstate st = { 0 };
	const struct qga_command cmds[] = {
		{ "__com.vnoise_start", h_start, &st },
		{ "__com.vnoise_stop", h_stop, &st },
		{ "__com.vnoise_status", h_status, &st },
	};
	const struct jsonr_value *root, *list;
	const char *reply;

	ck_assert_int_eq(qga_agent_register(agent, cmds, 3), 0);
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_status\"}"),
			 "{\"return\":{\"running\":false}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_start\",\"arguments\":{\"cpu\":3}}"),
			 "{\"return\":{\"cpu\":3,\"mode\":\"measure\"}}\n");
	ck_assert_int_eq(st.starts, 1);
	ck_assert(st.cpu == 3);
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_status\",\"id\":1}"),
			 "{\"return\":{\"running\":true},\"id\":1}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_start\",\"arguments\":{\"cpu\":3}}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"already running\"}}\n");
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"__com.vnoise_start\",\"arguments\":{\"cpu\":-1}}"),
	    "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Invalid parameter type "
	    "for 'cpu', expected: integer\"}}\n");
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"__com.vnoise_start\",\"arguments\":{\"cpu\":1,\"mode\":2}}"),
	    "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Invalid parameter type for 'mode', "
	    "expected: string\"}}\n");
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"__com.vnoise_start\",\"arguments\":{\"cpus\":1}}"),
	    "{\"error\":{\"class\":\"GenericError\",\"desc\":\"Parameter 'cpus' is "
	    "unexpected\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_stop\"}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"__com.vnoise_stop "
			 "failed: Transport endpoint is not connected\"}}\n");
	ck_assert_int_eq(st.stops, 1);

	/* guest-info lists them after the built-ins, in registration order */
	reply = dispatch("{\"execute\":\"guest-info\"}");
	ck_assert_int_eq(parse_str(doc, reply, &root), 0);
	list = jsonr_obj_get(jsonr_obj_get(root, "return"), "supported_commands");
	ck_assert_uint_eq(list->len, 7);
	ck_assert_ptr_nonnull(info_find(list, "__com.vnoise_start"));
	ck_assert_ptr_nonnull(info_find(list, "__com.vnoise_stop"));
	ck_assert_ptr_nonnull(info_find(list, "__com.vnoise_status"));
	ck_assert_str_eq(jsonr_get_str(jsonr_obj_get(list->child->next->next->next->next, "name")),
			 "__com.vnoise_start");
}
END_TEST

START_TEST(test_register_errors)
{
	const struct qga_command ok[] = { { "__com.vnoise_a", h_status, NULL } };
	const struct qga_command dup_self[] = { { "__com.vnoise_b", h_status, NULL },
						{ "__com.vnoise_b", h_status, NULL } };
	const struct qga_command partly_bad[] = { { "__com.vnoise_c", h_status, NULL },
						  { "guest-exec", h_status, NULL } };
	const struct qga_command no_fn[] = { { "__com.vnoise_d", NULL, NULL } };
	const struct qga_command builtin[] = { { "guest-ping", h_status, NULL } };
	struct qga_command many[QGA_MAX_COMMANDS];
	static char names[QGA_MAX_COMMANDS][QGA_NAME_MAX];
	static struct vstate st;
	int i;

	ck_assert_int_eq(qga_agent_register(agent, ok, 1), 0);
	ck_assert_int_eq(qga_agent_register(agent, ok, 1), -EEXIST);
	ck_assert_int_eq(qga_agent_register(agent, dup_self, 2), -EEXIST);
	ck_assert_int_eq(qga_agent_register(agent, partly_bad, 2), -EINVAL);
	ck_assert_int_eq(qga_agent_register(agent, no_fn, 1), -EINVAL);
	ck_assert_int_eq(qga_agent_register(agent, builtin, 1), -EINVAL);
	ck_assert_int_eq(qga_agent_register(agent, NULL, 1), -EINVAL);
	ck_assert_int_eq(qga_agent_register(agent, NULL, 0), 0);
	/* nothing of the failed tables was registered */
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_c\"}"),
			 "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The command "
			 "__com.vnoise_c has not been found\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_b\"}"),
			 "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The command "
			 "__com.vnoise_b has not been found\"}}\n");
	/* capacity: one is registered already */
	for (i = 0; i < QGA_MAX_COMMANDS; i++) {
		snprintf(names[i], sizeof(names[i]), "__com.vnoise_n%d", i);
		many[i] = (struct qga_command){ names[i], h_status, &st };
	}
	ck_assert_int_eq(qga_agent_register(agent, many, QGA_MAX_COMMANDS), -ENOSPC);
	ck_assert_int_eq(qga_agent_register(agent, many, QGA_MAX_COMMANDS - 1), 0);
	ck_assert_int_eq(qga_agent_register(agent, many + QGA_MAX_COMMANDS - 1, 1), -ENOSPC);
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_n30\"}"),
			 "{\"return\":{\"running\":false}}\n");
}
END_TEST

START_TEST(test_handler_misbehaves)
{
	const struct qga_command cmds[] = {
		{ "__com.vnoise_nothing", h_nothing, NULL }, { "__com.vnoise_two", h_two, NULL },
		{ "__com.vnoise_open", h_open, NULL },	     { "__com.vnoise_huge", h_huge, NULL },
		{ "__com.vnoise_echo", h_echo, NULL },
	};

	ck_assert_int_eq(qga_agent_register(agent, cmds, 5), 0);
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_nothing\"}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"__com.vnoise_nothing: "
			 "internal error: invalid return value\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_two\"}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"__com.vnoise_two: "
			 "internal error: invalid return value\"}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_open\",\"id\":2}"),
			 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"__com.vnoise_open: "
			 "internal error: invalid return value\"},\"id\":2}\n");
	ck_assert_str_eq(
	    dispatch("{\"execute\":\"__com.vnoise_huge\"}"),
	    "{\"error\":{\"class\":\"GenericError\",\"desc\":\"__com.vnoise_huge: reply "
	    "too large\"}}\n");
	/* the agent still works afterwards */
	ck_assert_str_eq(dispatch("{\"execute\":\"guest-ping\"}"), "{\"return\":{}}\n");
	/* a handler may echo its arguments (absent: null) */
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_echo\",\"arguments\":{\"a\":[1,{"
				  "\"b\":\"\\u00e9\"}]}}"),
			 "{\"return\":{\"a\":[1,{\"b\":\"\xc3\xa9\"}]}}\n");
	ck_assert_str_eq(dispatch("{\"execute\":\"__com.vnoise_echo\"}"), "{\"return\":null}\n");
}
END_TEST

START_TEST(test_arg_helpers)
{
	const struct jsonr_value *args;
	char err[QGA_DESC_MAX];
	const char *s;
	int64_t i;
	uint64_t u;
	bool b;

	ck_assert_int_eq(parse_str(doc, "{\"i\":-3,\"u\":7,\"s\":\"x\",\"b\":true}", &args), 0);
	ck_assert_int_eq(qga_arg_i64(args, "i", true, &i, err, sizeof(err)), 0);
	ck_assert_int_eq(i, -3);
	ck_assert_int_eq(qga_arg_u64(args, "i", true, &u, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "Invalid parameter type for 'i', expected: integer");
	ck_assert_int_eq(qga_arg_u64(args, "u", true, &u, err, sizeof(err)), 0);
	ck_assert(u == 7);
	ck_assert_int_eq(qga_arg_str(args, "s", true, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s, "x");
	ck_assert_int_eq(jsonr_get_u64(NULL, &u), -ENOENT);
	ck_assert_int_eq(jsonr_get_u64(jsonr_obj_get(args, "s"), &u), -EINVAL);
	ck_assert_int_eq(qga_arg_str(args, "u", true, &s, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "Invalid parameter type for 'u', expected: string");
	ck_assert_int_eq(qga_arg_bool(args, "b", true, &b, err, sizeof(err)), 0);
	ck_assert(b);
	ck_assert_int_eq(qga_arg_bool(args, "s", true, &b, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "Invalid parameter type for 's', expected: boolean");
	err[0] = '\0';
	ck_assert_int_eq(qga_arg_i64(args, "none", false, &i, err, sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "");
	ck_assert_int_eq(qga_arg_i64(NULL, "none", true, &i, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "Parameter 'none' is missing");
	ck_assert_int_eq(qga_args_only(args, NULL, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "Parameter 'i' is unexpected");
	ck_assert_int_eq(qga_args_only(NULL, NULL, err, sizeof(err)), 0);
	/* bounded */
	ck_assert_int_eq(qga_arg_i64(NULL, "a-long-name", true, &i, err, 8), -EINVAL);
	ck_assert_str_eq(err, "Paramet");
}
END_TEST

/* ---- host side ---- */

START_TEST(test_request_lines)
{
	char buf[256];
	ssize_t n;

	n = qga_request(buf, sizeof(buf), "guest-ping", NULL, -1);
	ck_assert_str_eq(buf, "{\"execute\":\"guest-ping\"}\n");
	ck_assert_int_eq(n, (ssize_t)strlen(buf));
	n = qga_request(buf, sizeof(buf), "__com.vnoise_start",
			" { \"cpu\" : [ 0 , 1 ] ,\n\"m\":\"a\\nb\" } ", 17);
	ck_assert_str_eq(
	    buf,
	    "{\"execute\":\"__com.vnoise_start\",\"arguments\":{\"cpu\":[0,1],\"m\":\"a\\nb\"},"
	    "\"id\":17}\n");
	ck_assert_int_eq(n, (ssize_t)strlen(buf));
	n = qga_request(buf, sizeof(buf), "guest-info", "{}", 0);
	ck_assert_str_eq(buf, "{\"execute\":\"guest-info\",\"arguments\":{},\"id\":0}\n");
	ck_assert_int_eq(n, (ssize_t)strlen(buf));

	n = qga_request_sync(buf, sizeof(buf), false, 1234567890123);
	ck_assert_str_eq(buf,
			 "{\"execute\":\"guest-sync\",\"arguments\":{\"id\":1234567890123}}\n");
	ck_assert_int_eq(n, (ssize_t)strlen(buf));
	n = qga_request_sync(buf, sizeof(buf), true, -5);
	ck_assert_str_eq(buf,
			 "\xff{\"execute\":\"guest-sync-delimited\",\"arguments\":{\"id\":-5}}\n");
	ck_assert_int_eq(n, (ssize_t)strlen(buf));
	n = qga_request_sync(buf, sizeof(buf), true, INT64_MIN);
	ck_assert_str_eq(buf, "\xff{\"execute\":\"guest-sync-delimited\",\"arguments\":{\"id\":"
			      "-9223372036854775808}}\n");
}
END_TEST

START_TEST(test_request_errors)
{
	static const char *const bad_names[] = { "",	   "Guest-ping", "guest ping", "guest\"x",
						 "-guest", "__com_x",	 NULL };
	static const char *const bad_args[] = {
		"[]", "1", "\"x\"", "{", "{\"a\":1}x", "", "{\"a\":1,\"a\":2}"
	};
	char buf[256];
	size_t i, need;

	for (i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
		ck_assert_int_eq(qga_request(buf, sizeof(buf), bad_names[i], NULL, -1), -EINVAL);
	for (i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++)
		ck_assert_int_eq(qga_request(buf, sizeof(buf), "guest-ping", bad_args[i], -1),
				 -EINVAL);
	ck_assert_int_eq(qga_request(NULL, 10, "guest-ping", NULL, -1), -EINVAL);
	/* every capacity below the needed one fails cleanly; the needed one works */
	need = (size_t)qga_request(buf, sizeof(buf), "guest-ping", "{\"a\":[1,2]}", 99) + 1;
	for (i = 0; i < need; i++) {
		char *small = malloc(i ? i : 1);

		ck_assert_int_eq(qga_request(small, i, "guest-ping", "{\"a\":[1,2]}", 99), -ENOSPC);
		free(small);
	}
	ck_assert_int_eq(qga_request(buf, need, "guest-ping", "{\"a\":[1,2]}", 99),
			 (ssize_t)need - 1);
	need = (size_t)qga_request_sync(buf, sizeof(buf), true, 7) + 1;
	for (i = 0; i < need; i++)
		ck_assert_int_eq(qga_request_sync(buf, i, true, 7), -ENOSPC);
	ck_assert_int_eq(qga_request_sync(buf, need, true, 7), (ssize_t)need - 1);
}
END_TEST

static int reply_str(const char *s, struct qga_reply *r)
{
	char *copy = malloc(strlen(s) + 1);
	int rc;

	memcpy(copy, s, strlen(s));
	rc = qga_reply_parse(doc, copy, strlen(s), r);
	free(copy);
	return rc;
}

START_TEST(test_reply_valid)
{
	struct qga_reply r;
	int64_t v;

	ck_assert_int_eq(reply_str("{\"return\":42}", &r), 0);
	ck_assert(!r.is_error);
	ck_assert_int_eq(jsonr_get_i64(r.ret, &v), 0);
	ck_assert_int_eq(v, 42);
	ck_assert_ptr_null(r.id);
	ck_assert_int_eq(qga_reply_sync_check(&r, 42), 0);
	ck_assert_int_eq(qga_reply_sync_check(&r, 41), -ESTALE);

	ck_assert_int_eq(reply_str("{\"return\": {\"running\": true}, \"id\": 5}\n", &r), 0);
	ck_assert_int_eq(r.ret->kind, JSONR_OBJ);
	ck_assert(qga_reply_id_is(&r, 5));
	ck_assert(!qga_reply_id_is(&r, 6));
	ck_assert_int_eq(qga_reply_sync_check(&r, 5), -EPROTO);

	ck_assert_int_eq(
	    reply_str("{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The command "
		      "x has not been found\"},\"id\":\"a\"}",
		      &r),
	    0);
	ck_assert(r.is_error);
	ck_assert_ptr_null(r.ret);
	ck_assert_str_eq(r.err_class, "CommandNotFound");
	ck_assert_str_eq(r.err_desc, "The command x has not been found");
	ck_assert(!qga_reply_id_is(&r, 0));
	ck_assert_int_eq(qga_reply_sync_check(&r, 1), -EREMOTEIO);

	/* a stale reply with a huge number is ESTALE, not a match */
	ck_assert_int_eq(reply_str("{\"return\":18446744073709551615}", &r), 0);
	ck_assert_int_eq(qga_reply_sync_check(&r, -1), -ESTALE);
	ck_assert_int_eq(reply_str("{\"return\":\"42\"}", &r), 0);
	ck_assert_int_eq(qga_reply_sync_check(&r, 42), -EPROTO);
	ck_assert_int_eq(reply_str("{\"return\":42.0}", &r), 0);
	ck_assert_int_eq(qga_reply_sync_check(&r, 42), -EPROTO);
}
END_TEST

START_TEST(test_reply_hostile)
{
	static const struct {
		const char *in;
		int rc;
	} cases[] = {
		{ "[]", -EPROTO },
		{ "42", -EPROTO },
		{ "{}", -EPROTO },
		{ "{\"id\":1}", -EPROTO },
		{ "{\"return\":1,\"error\":{\"class\":\"A\",\"desc\":\"b\"}}", -EPROTO },
		{ "{\"return\":1,\"extra\":2}", -EPROTO },
		{ "{\"return\":1,\"return\":2}", -EINVAL },
		{ "{\"error\":\"x\"}", -EPROTO },
		{ "{\"error\":{}}", -EPROTO },
		{ "{\"error\":{\"class\":\"A\"}}", -EPROTO },
		{ "{\"error\":{\"desc\":\"d\"}}", -EPROTO },
		{ "{\"error\":{\"class\":\"A\",\"desc\":\"d\",\"x\":1}}", -EPROTO },
		{ "{\"error\":{\"class\":\"A\",\"x\":1}}", -EPROTO },
		{ "{\"error\":{\"class\":1,\"desc\":\"d\"}}", -EPROTO },
		{ "{\"error\":{\"class\":\"A\",\"desc\":null}}", -EPROTO },
		{ "{\"error\":{\"class\":\"\",\"desc\":\"d\"}}", -EPROTO },
		{ "{\"error\":{\"class\":\"Generic Error\",\"desc\":\"d\"}}", -EPROTO },
		{ "{\"error\":{\"class\":\"Generic\\u001bError\",\"desc\":\"d\"}}", -EPROTO },
		{ "{\"error\":{\"class\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"desc\":\"d\"}}",
		  -EPROTO },
		{ "{\"return\":1", -EINVAL },
		{ "{\"return\":1}\xff", -EINVAL },
		{ "{\"return\":99999999999999999999}", -ERANGE },
	};
	struct qga_reply r;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&r, 0x5a, sizeof(r));
		ck_assert_msg(reply_str(cases[i].in, &r) == cases[i].rc, "%s", cases[i].in);
		/* a rejected reply leaves nothing usable behind */
		ck_assert_ptr_null(r.ret);
		ck_assert_ptr_null(r.id);
		ck_assert(!r.is_error);
		ck_assert_str_eq(r.err_class, "");
	}
	/* 31 letters is the longest class */
	ck_assert_int_eq(
	    reply_str("{\"error\":{\"class\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"desc\":\"d\"}}",
		      &r),
	    0);
}
END_TEST

START_TEST(test_reply_desc_sanitised)
{
	struct qga_reply r;
	char *in;
	size_t i, n;

	ck_assert_int_eq(
	    reply_str("{\"error\":{\"class\":\"GenericError\",\"desc\":\"a\\u001b[2Jb\\nc"
		      "\\u007f\\u00e9\"}}",
		      &r),
	    0);
	ck_assert_str_eq(r.err_desc, "a?[2Jb?c?\xc3\xa9");

	/* 300 two-byte characters: truncated to 127 whole characters (254 bytes) */
	in = malloc(1024);
	strcpy(in, "{\"error\":{\"class\":\"X\",\"desc\":\"");
	n = strlen(in);
	for (i = 0; i < 300; i++, n += 2)
		memcpy(in + n, "\xc3\xa9", 2);
	strcpy(in + n, "\"}}");
	ck_assert_int_eq(reply_str(in, &r), 0);
	ck_assert_uint_eq(strlen(r.err_desc), 254);
	for (i = 0; i < 254; i += 2)
		ck_assert(memcmp(r.err_desc + i, "\xc3\xa9", 2) == 0);
	/* ASCII fills the buffer exactly */
	strcpy(in, "{\"error\":{\"class\":\"X\",\"desc\":\"");
	n = strlen(in);
	memset(in + n, 'd', 400);
	strcpy(in + n + 400, "\"}}");
	ck_assert_int_eq(reply_str(in, &r), 0);
	ck_assert_uint_eq(strlen(r.err_desc), QGA_DESC_MAX - 1);
	free(in);
}
END_TEST

/* Every reply the agent writes is a valid reply for the host parser. */
START_TEST(test_roundtrip_agent_to_host)
{
	static const char *const reqs[] = {
		"{\"execute\":\"guest-sync\",\"arguments\":{\"id\":77}}",
		"{\"execute\":\"guest-ping\",\"id\":[1]}",
		"{\"execute\":\"guest-info\"}",
		"{\"execute\":\"guest-shutdown\"}",
		"{\"execute\":\"nope\",\"id\":\"q\"}",
		"[1]",
		"{\"execute\":\"guest-ping\",\"arguments\":{\"\\u001b\":1}}",
		"not json at all",
	};
	struct qga_framer *f = framer_new();
	struct qga_reply r;
	const char *reply, *msg, *in;
	size_t i, len, msg_len;

	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		qga_agent_dispatch(agent, reqs[i], strlen(reqs[i]), &reply, &len);
		in = reply;
		ck_assert_int_eq(qga_framer_next(f, &in, &len, &msg, &msg_len), QGA_FRAME_MSG);
		ck_assert_int_eq(qga_reply_parse(doc, msg, msg_len, &r), 0);
		if (i == 0)
			ck_assert_int_eq(qga_reply_sync_check(&r, 77), 0);
		if (i == 1)
			ck_assert_int_eq(r.id->kind, JSONR_ARR);
		if (i >= 3)
			ck_assert(r.is_error);
		ck_assert_int_eq(qga_framer_next(f, &in, &len, &msg, &msg_len), QGA_FRAME_NEED);
	}
	free(f);
}
END_TEST

/* The host's delimited resync: discard what came before the 0xFF, then match the id. */
START_TEST(test_host_delimited_resync)
{
	static const char in[] = "{\"return\":{\"stale\":1}}\n{\"retu\xff{\"return\":8}\n"
				 "\xff{\"return\":9}\n";
	struct qga_framer *f = framer_new();
	struct qga_reply r;
	const char *p = in, *msg;
	size_t len = sizeof(in) - 1, msg_len;
	bool armed = false;
	int ev, matched = 0;

	while ((ev = qga_framer_next(f, &p, &len, &msg, &msg_len)) != QGA_FRAME_NEED) {
		if (ev == QGA_FRAME_RESET) {
			armed = true;
			continue;
		}
		if (ev != QGA_FRAME_MSG || !armed)
			continue;
		armed = false;
		ck_assert_int_eq(qga_reply_parse(doc, msg, msg_len, &r), 0);
		if (qga_reply_sync_check(&r, 9) == 0)
			matched++;
		else
			ck_assert_int_eq(qga_reply_sync_check(&r, 9), -ESTALE);
	}
	ck_assert_int_eq(matched, 1);
	ck_assert_uint_eq(f->resets, 2);
	free(f);
}
END_TEST

static Suite *qga_suite(void)
{
	Suite *s = suite_create("qga");
	TCase *tc;

	tc = tcase_create("framer");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_framer_split_every_position);
	tcase_add_test(tc, test_framer_byte_at_a_time);
	tcase_add_test(tc, test_framer_coalesced);
	tcase_add_test(tc, test_framer_garbage);
	tcase_add_test(tc, test_framer_delim_reset);
	tcase_add_test(tc, test_framer_max_size);
	tcase_add_test(tc, test_framer_oversize);
	tcase_add_test(tc, test_framer_oversize_unbalanced);
	tcase_add_test(tc, test_framer_reset_api);
	suite_add_tcase(s, tc);

	tc = tcase_create("dispatcher");
	tcase_add_checked_fixture(tc, agent_setup, agent_teardown);
	tcase_add_test(tc, test_dispatch_sync);
	tcase_add_test(tc, test_dispatch_sync_delimited);
	tcase_add_test(tc, test_dispatch_ping);
	tcase_add_test(tc, test_dispatch_info);
	tcase_add_test(tc, test_dispatch_not_found);
	tcase_add_test(tc, test_dispatch_bad_requests);
	tcase_add_test(tc, test_dispatch_id_echo);
	tcase_add_test(tc, test_dispatch_huge_id);
	tcase_add_test(tc, test_feed_libvirt_session);
	tcase_add_test(tc, test_feed_oversize_and_garbage);
	tcase_add_test(tc, test_feed_emit_error);
	suite_add_tcase(s, tc);

	tc = tcase_create("downstream");
	tcase_add_checked_fixture(tc, agent_setup, agent_teardown);
	tcase_add_test(tc, test_name_validation);
	tcase_add_test(tc, test_register_and_call);
	tcase_add_test(tc, test_register_errors);
	tcase_add_test(tc, test_handler_misbehaves);
	tcase_add_test(tc, test_arg_helpers);
	suite_add_tcase(s, tc);

	tc = tcase_create("host");
	tcase_add_checked_fixture(tc, agent_setup, agent_teardown);
	tcase_add_test(tc, test_request_lines);
	tcase_add_test(tc, test_request_errors);
	tcase_add_test(tc, test_reply_valid);
	tcase_add_test(tc, test_reply_hostile);
	tcase_add_test(tc, test_reply_desc_sanitised);
	tcase_add_test(tc, test_roundtrip_agent_to_host);
	tcase_add_test(tc, test_host_delimited_resync);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(qga_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
