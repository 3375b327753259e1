/* SPDX-License-Identifier: MIT */
/*
 * qga: framer (a byte-at-a-time state machine over a fixed buffer), agent (QEMU's qmp_dispatch checks and
 * texts; requests are read with util/jsonread, replies are written with the json writer into a fixed buffer
 * through an unbuffered fmemopen stream, so a failed or misbehaving handler is simply rewound) and the host
 * helpers (request lines, strict reply shape checks).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format/qga.h"

/* ==== framer ==== */

void qga_framer_init(struct qga_framer *f)
{
	memset(f, 0, offsetof(struct qga_framer, buf));
	f->buf[0] = '\0';
}

void qga_framer_reset(struct qga_framer *f)
{
	if (f->depth || f->discard)
		f->dropped += f->len;
	f->len = 0;
	f->skip = 0;
	f->depth = 0;
	f->in_str = f->esc = f->discard = 0;
	f->buf[0] = '\0';
}

/* Follow strings, escapes and nesting for one byte inside a text. */
static void framer_track(struct qga_framer *f, unsigned char c)
{
	if (f->in_str) {
		if (f->esc)
			f->esc = 0;
		else if (c == '\\')
			f->esc = 1;
		else if (c == '"')
			f->in_str = 0;
		return;
	}
	if (c == '"')
		f->in_str = 1;
	else if (c == '{' || c == '[')
		f->depth++;
	else if ((c == '}' || c == ']') && f->depth)
		f->depth--;
}

static bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

enum qga_frame_event qga_framer_next(struct qga_framer *f, const char **in, size_t *in_len,
				     const char **msg, size_t *msg_len)
{
	const unsigned char *p = (const unsigned char *)*in;
	size_t n = *in_len;
	enum qga_frame_event ev = QGA_FRAME_NEED;

	while (n && ev == QGA_FRAME_NEED) {
		unsigned char c = *p++;

		n--;
		if (c == QGA_DELIM) {
			qga_framer_reset(f);
			f->resets++;
			ev = QGA_FRAME_RESET;
		} else if (f->discard) {
			framer_track(f, c);
			f->dropped++;
			if (f->depth == 0 || ++f->skip > QGA_MSG_MAX)
				qga_framer_reset(
				    f); /* end of the text, or give up and start afresh */
		} else if (f->depth == 0) {
			if (c == '{' || c == '[') {
				f->buf[0] = (char)c;
				f->len = 1;
				f->depth = 1;
			} else if (!is_ws(c)) {
				f->garbage++;
			}
		} else if (f->len == QGA_MSG_MAX) {
			f->dropped += f->len + 1;
			f->len = 0;
			f->skip = 1;
			f->discard = 1;
			f->oversize++;
			framer_track(f, c);
			if (f->depth == 0)
				qga_framer_reset(f);
			ev = QGA_FRAME_OVERSIZE;
		} else {
			f->buf[f->len++] = (char)c;
			framer_track(f, c);
			if (f->depth == 0) {
				f->buf[f->len] = '\0';
				*msg = f->buf;
				*msg_len = f->len;
				f->messages++;
				ev = QGA_FRAME_MSG;
			}
		}
	}
	*in = (const char *)p;
	*in_len = n;
	return ev;
}

/* ==== command arguments ==== */

static int arg_get(const struct jsonr_value *args, const char *key, bool required,
		   const struct jsonr_value **v, char *err, size_t err_cap)
{
	*v = jsonr_obj_get(args, key);
	if (*v)
		return 0;
	if (!required)
		return -ENOENT;
	snprintf(err, err_cap, "Parameter '%s' is missing", key);
	return -EINVAL;
}

static int arg_type(const char *key, const char *type, char *err, size_t err_cap)
{
	snprintf(err, err_cap, "Invalid parameter type for '%s', expected: %s", key, type);
	return -EINVAL;
}

int qga_arg_i64(const struct jsonr_value *args, const char *key, bool required, int64_t *out,
		char *err, size_t err_cap)
{
	const struct jsonr_value *v;
	int rc = arg_get(args, key, required, &v, err, err_cap);

	if (rc)
		return rc;
	if (jsonr_get_i64(v, out))
		return arg_type(key, "integer", err, err_cap);
	return 0;
}

int qga_arg_u64(const struct jsonr_value *args, const char *key, bool required, uint64_t *out,
		char *err, size_t err_cap)
{
	const struct jsonr_value *v;
	int rc = arg_get(args, key, required, &v, err, err_cap);

	if (rc)
		return rc;
	if (jsonr_get_u64(v, out))
		return arg_type(key, "integer", err, err_cap);
	return 0;
}

int qga_arg_str(const struct jsonr_value *args, const char *key, bool required, const char **out,
		char *err, size_t err_cap)
{
	const struct jsonr_value *v;
	int rc = arg_get(args, key, required, &v, err, err_cap);

	if (rc)
		return rc;
	if (v->kind != JSONR_STR)
		return arg_type(key, "string", err, err_cap);
	*out = v->str;
	return 0;
}

int qga_arg_bool(const struct jsonr_value *args, const char *key, bool required, bool *out,
		 char *err, size_t err_cap)
{
	const struct jsonr_value *v;
	int rc = arg_get(args, key, required, &v, err, err_cap);

	if (rc)
		return rc;
	if (v->kind != JSONR_BOOL)
		return arg_type(key, "boolean", err, err_cap);
	*out = v->b;
	return 0;
}

int qga_args_only(const struct jsonr_value *args, const char *const *allowed, char *err,
		  size_t err_cap)
{
	const struct jsonr_value *m;
	const char *const *k;

	if (!args || args->kind != JSONR_OBJ)
		return 0;
	for (m = args->child; m; m = m->next) {
		for (k = allowed; k && *k; k++)
			if (strcmp(*k, m->key) == 0)
				break;
		if (!k || !*k) {
			snprintf(err, err_cap, "Parameter '%.128s' is unexpected", m->key);
			return -EINVAL;
		}
	}
	return 0;
}

/* ==== agent ==== */

#define CMD_DELIMITED 0x1u /* successful reply is preceded by 0xFF */

struct cmd_entry {
	char name[QGA_NAME_MAX];
	qga_handler_fn fn;
	void *ctx;
	unsigned flags;
};

struct qga_agent {
	struct qga_framer fr;
	struct jsonr_doc *doc; /* requests, QGA_MSG_MAX / QGA_MAX_NODES */
	char version[64];
	struct cmd_entry cmds[QGA_MAX_COMMANDS];
	size_t ncmds;
	FILE *f; /* unbuffered memory stream over out + 1 */
	struct json_writer w;
	char out[1 + QGA_REPLY_MAX + 1]; /* 0xFF prefix slot, reply, NUL */
};

static const char *const no_args[] = { NULL };

static int cmd_sync(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	static const char *const allowed[] = { "id", NULL };
	int64_t id;
	int rc;

	rc = qga_args_only(args, allowed, err, QGA_DESC_MAX);
	if (!rc)
		rc = qga_arg_i64(args, "id", true, &id, err, QGA_DESC_MAX);
	if (rc)
		return rc;
	json_i64(w, id);
	return 0;
}

static int cmd_ping(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	int rc = qga_args_only(args, no_args, err, QGA_DESC_MAX);

	if (rc)
		return rc;
	json_obj_begin(w);
	json_obj_end(w);
	return 0;
}

static void info_entry(struct json_writer *w, const char *name)
{
	json_obj_begin(w);
	json_kv_str(w, "name", name);
	json_kv_bool(w, "enabled", true);
	json_kv_bool(w, "success-response", true);
	json_obj_end(w);
}

static int cmd_info(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err);

static const struct {
	const char *name;
	qga_handler_fn fn;
	unsigned flags;
} builtins[] = {
	{ "guest-sync-delimited", cmd_sync, CMD_DELIMITED },
	{ "guest-sync", cmd_sync, 0 },
	{ "guest-ping", cmd_ping, 0 },
	{ "guest-info", cmd_info, 0 },
};

#define NBUILTINS (sizeof(builtins) / sizeof(builtins[0]))

static int cmd_info(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	const struct qga_agent *a = ctx;
	size_t i;
	int rc = qga_args_only(args, no_args, err, QGA_DESC_MAX);

	if (rc)
		return rc;
	json_obj_begin(w);
	json_kv_str(w, "version", a->version);
	json_key(w, "supported_commands");
	json_arr_begin(w);
	for (i = 0; i < NBUILTINS; i++)
		info_entry(w, builtins[i].name);
	for (i = 0; i < a->ncmds; i++)
		info_entry(w, a->cmds[i].name);
	json_arr_end(w);
	json_obj_end(w);
	return 0;
}

struct qga_agent *qga_agent_new(const char *version)
{
	struct qga_agent *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	snprintf(a->version, sizeof(a->version), "%s", version ? version : "");
	qga_framer_init(&a->fr);
	a->doc = jsonr_doc_new(QGA_MSG_MAX, QGA_MAX_NODES);
	a->f = fmemopen(a->out + 1, QGA_REPLY_MAX, "w");
	if (!a->doc || !a->f) {
		qga_agent_free(a);
		errno = ENOMEM;
		return NULL;
	}
	setvbuf(a->f, NULL, _IONBF, 0); /* nothing pending: rewind() always starts clean */
	return a;
}

void qga_agent_free(struct qga_agent *a)
{
	if (!a)
		return;
	if (a->f)
		fclose(a->f);
	jsonr_doc_free(a->doc);
	free(a);
}

static bool lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

/* [a-z][a-z0-9-]* over [s, e) */
static bool stem_ok(const char *s, const char *e)
{
	if (s >= e || *s < 'a' || *s > 'z')
		return false;
	for (; s < e; s++)
		if (!lower_alnum(*s) && *s != '-')
			return false;
	return true;
}

bool qga_name_downstream(const char *name)
{
	const char *p, *label, *us;
	size_t n;
	int labels = 0;

	if (!name)
		return false;
	n = strnlen(name, QGA_NAME_MAX);
	if (n >= QGA_NAME_MAX || n < 2 || name[0] != '_' || name[1] != '_')
		return false;
	us = memchr(name + 2, '_', n - 2);
	if (!us)
		return false;
	/* RFQDN: labels of [a-z0-9-], not starting or ending with '-', separated by '.' */
	for (label = p = name + 2; p <= us; p++) {
		if (p < us && *p != '.') {
			if (!lower_alnum(*p) && *p != '-')
				return false;
			continue;
		}
		if (p == label || *label == '-' || p[-1] == '-')
			return false;
		labels++;
		label = p + 1;
	}
	return labels >= 2 && stem_ok(us + 1, name + n);
}

/* A name vnoise-host may send: a QGA name [a-z][a-z0-9-]* or a downstream one. */
static bool name_sendable(const char *name)
{
	size_t n;

	if (!name)
		return false;
	n = strnlen(name, QGA_NAME_MAX);
	if (n >= QGA_NAME_MAX)
		return false;
	return stem_ok(name, name + n) || qga_name_downstream(name);
}

static bool name_taken(const struct qga_agent *a, const char *name)
{
	size_t i;

	for (i = 0; i < NBUILTINS; i++)
		if (strcmp(builtins[i].name, name) == 0)
			return true;
	for (i = 0; i < a->ncmds; i++)
		if (strcmp(a->cmds[i].name, name) == 0)
			return true;
	return false;
}

int qga_agent_register(struct qga_agent *a, const struct qga_command *cmds, size_t n)
{
	size_t i, j;

	if (n && !cmds)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!qga_name_downstream(cmds[i].name) || !cmds[i].fn)
			return -EINVAL;
		if (name_taken(a, cmds[i].name))
			return -EEXIST;
		for (j = 0; j < i; j++)
			if (strcmp(cmds[j].name, cmds[i].name) == 0)
				return -EEXIST;
	}
	if (n > QGA_MAX_COMMANDS - a->ncmds)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		struct cmd_entry *e = &a->cmds[a->ncmds++];

		snprintf(e->name, sizeof(e->name), "%s", cmds[i].name);
		e->fn = cmds[i].fn;
		e->ctx = cmds[i].ctx;
		e->flags = 0;
	}
	return 0;
}

static void reply_begin(struct qga_agent *a)
{
	rewind(a->f);
	clearerr(a->f);
	json_init(&a->w, a->f, 0);
	json_obj_begin(&a->w);
}

/* Close the reply object (echoing id), end the line. 0 or -EINVAL (misuse) / -ENOSPC (too long). */
static int reply_end(struct qga_agent *a, const struct jsonr_value *id, size_t *len)
{
	long pos;
	int rc;

	if (id) {
		json_key(&a->w, "id");
		jsonr_write_value(&a->w, id);
	}
	json_obj_end(&a->w);
	rc = json_finish(&a->w);
	pos = ftell(a->f);
	if (rc == -EIO || ferror(a->f) || pos < 0 || pos >= QGA_REPLY_MAX)
		return -ENOSPC;
	if (rc)
		return rc;
	a->out[1 + pos] = '\0';
	*len = (size_t)pos;
	return 0;
}

static const char fallback_reply[] =
    "{\"error\":{\"class\":\"GenericError\",\"desc\":\"reply too large\"}}\n";

static void reply_error(struct qga_agent *a, const char *cls, const char *desc,
			const struct jsonr_value *id, const char **reply, size_t *reply_len)
{
	size_t len;

	for (;; id = NULL) {
		reply_begin(a);
		json_key(&a->w, "error");
		json_obj_begin(&a->w);
		json_kv_str(&a->w, "class", cls);
		json_kv_str(&a->w, "desc", desc);
		json_obj_end(&a->w);
		if (reply_end(a, id, &len) == 0) {
			*reply = a->out + 1;
			*reply_len = len;
			return;
		}
		if (!id)
			break;
	}
	*reply = fallback_reply;
	*reply_len = sizeof(fallback_reply) - 1;
}

/* QEMU's qmp_dispatch_check_obj: members in order; returns the error text or NULL. */
static const char *check_request(const struct jsonr_value *root, const char **name,
				 const struct jsonr_value **args, char *err)
{
	const struct jsonr_value *m;

	*name = NULL;
	*args = NULL;
	if (root->kind != JSONR_OBJ)
		return "QMP input must be a JSON object";
	for (m = root->child; m; m = m->next) {
		if (strcmp(m->key, "execute") == 0) {
			if (m->kind != JSONR_STR)
				return "QMP input member 'execute' must be a string";
			*name = m->str;
		} else if (strcmp(m->key, "arguments") == 0) {
			if (m->kind != JSONR_OBJ)
				return "QMP input member 'arguments' must be an object";
			*args = m;
		} else if (strcmp(m->key, "id") != 0) {
			snprintf(err, QGA_DESC_MAX, "QMP input member '%.128s' is unexpected",
				 m->key);
			return err;
		}
	}
	if (!*name)
		return "QMP input lacks member 'execute'";
	return NULL;
}

void qga_agent_dispatch(struct qga_agent *a, const char *msg, size_t len, const char **reply,
			size_t *reply_len)
{
	const struct jsonr_value *root = NULL, *id = NULL, *args;
	qga_handler_fn fn = NULL;
	void *ctx = NULL;
	unsigned flags = 0;
	char err[QGA_DESC_MAX], ebuf[64];
	const char *name, *why;
	size_t i, out_len;
	int rc;

	err[0] = '\0';
	rc = jsonr_parse(a->doc, msg, len, &root);
	if (rc) {
		snprintf(err, sizeof(err), "JSON parse error at byte %zu: %s", a->doc->err_off,
			 a->doc->err ? a->doc->err : "invalid");
		reply_error(a, "GenericError", err, NULL, reply, reply_len);
		return;
	}
	id = jsonr_obj_get(root, "id");
	why = check_request(root, &name, &args, err);
	if (why) {
		reply_error(a, "GenericError", why, id, reply, reply_len);
		return;
	}
	for (i = 0; i < NBUILTINS && !fn; i++) {
		if (strcmp(builtins[i].name, name) == 0) {
			fn = builtins[i].fn;
			ctx = a;
			flags = builtins[i].flags;
		}
	}
	for (i = 0; i < a->ncmds && !fn; i++) {
		if (strcmp(a->cmds[i].name, name) == 0) {
			fn = a->cmds[i].fn;
			ctx = a->cmds[i].ctx;
			flags = a->cmds[i].flags;
		}
	}
	if (!fn) {
		/* guest-shutdown lands here on purpose: see the header */
		snprintf(err, sizeof(err), "The command %.128s has not been found", name);
		reply_error(a, "CommandNotFound", err, id, reply, reply_len);
		return;
	}
	reply_begin(a);
	json_key(&a->w, "return");
	rc = fn(ctx, args, &a->w, err);
	if (rc) {
		err[sizeof(err) - 1] = '\0';
		if (!err[0])
			snprintf(err, sizeof(err), "%.128s failed: %s", name,
				 strerror_r(-rc, ebuf, sizeof(ebuf)));
		reply_error(a, "GenericError", err, id, reply, reply_len);
		return;
	}
	rc = reply_end(a, id, &out_len);
	if (rc) {
		snprintf(err, sizeof(err),
			 rc == -ENOSPC ? "%.128s: reply too large"
				       : "%.128s: internal error: invalid return value",
			 name);
		reply_error(a, "GenericError", err, id, reply, reply_len);
		return;
	}
	if (flags & CMD_DELIMITED) {
		a->out[0] = (char)QGA_DELIM;
		*reply = a->out;
		*reply_len = out_len + 1;
	} else {
		*reply = a->out + 1;
		*reply_len = out_len;
	}
}

int qga_agent_feed(struct qga_agent *a, const void *data, size_t len, qga_emit_fn emit, void *ctx)
{
	const char *in = data, *msg = NULL, *reply;
	size_t msg_len = 0, reply_len;
	enum qga_frame_event ev;
	char err[80];
	int rc;

	while ((ev = qga_framer_next(&a->fr, &in, &len, &msg, &msg_len)) != QGA_FRAME_NEED) {
		if (ev == QGA_FRAME_MSG) {
			qga_agent_dispatch(a, msg, msg_len, &reply, &reply_len);
		} else if (ev == QGA_FRAME_OVERSIZE) {
			snprintf(err, sizeof(err), "JSON message exceeds %d bytes", QGA_MSG_MAX);
			reply_error(a, "GenericError", err, NULL, &reply, &reply_len);
		} else {
			continue;
		}
		rc = emit(ctx, reply, reply_len);
		if (rc)
			return rc;
	}
	return 0;
}

void qga_agent_reset(struct qga_agent *a)
{
	qga_framer_reset(&a->fr);
}

const struct qga_framer *qga_agent_framer(const struct qga_agent *a)
{
	return &a->fr;
}

/* ==== host side ==== */

/* Write the request into buf via a memory stream. */
static ssize_t request_write(char *buf, size_t cap, bool delim, const char *name,
			     const struct jsonr_value *args, int64_t id)
{
	struct json_writer w;
	size_t off = delim ? 1 : 0;
	ssize_t ret;
	FILE *f;
	long pos;
	int rc;

	if (cap < off + 2)
		return -ENOSPC;
	f = fmemopen(buf + off, cap - off, "w");
	if (!f)
		return -ENOMEM;
	setvbuf(f, NULL, _IONBF, 0);
	json_init(&w, f, 0);
	json_obj_begin(&w);
	json_kv_str(&w, "execute", name);
	if (args) {
		json_key(&w, "arguments");
		jsonr_write_value(&w, args);
	}
	if (id >= 0)
		json_kv_i64(&w, "id", id);
	json_obj_end(&w);
	rc = json_finish(&w);
	pos = ftell(f);
	if (rc == -EIO || ferror(f) || pos < 0 || (size_t)pos >= cap - off)
		ret = -ENOSPC;
	else if (rc)
		ret = rc;
	else
		ret = pos + (ssize_t)off;
	fclose(f);
	if (ret < 0)
		return ret;
	if (delim)
		buf[0] = (char)QGA_DELIM;
	buf[ret] = '\0';
	return ret;
}

ssize_t qga_request(char *buf, size_t cap, const char *name, const char *args_json, int64_t id)
{
	const struct jsonr_value *args = NULL;
	struct jsonr_doc *doc = NULL;
	ssize_t ret;

	if (!buf || !name_sendable(name))
		return -EINVAL;
	if (args_json) {
		doc = jsonr_doc_new(QGA_MSG_MAX, QGA_MAX_NODES);
		if (!doc)
			return -ENOMEM;
		if (jsonr_parse(doc, args_json, strlen(args_json), &args) ||
		    args->kind != JSONR_OBJ) {
			ret = -EINVAL;
			goto out;
		}
	}
	ret = request_write(buf, cap, false, name, args, id);
out:
	jsonr_doc_free(doc);
	return ret;
}

ssize_t qga_request_sync(char *buf, size_t cap, bool delimited, int64_t sync_id)
{
	struct jsonr_value args = { .kind = JSONR_OBJ, .len = 1 }, idv = { .kind = JSONR_INT };

	if (!buf)
		return -EINVAL;
	idv.key = "id";
	idv.key_len = 2;
	idv.neg = sync_id < 0;
	idv.mag = sync_id < 0 ? (uint64_t)0 - (uint64_t)sync_id : (uint64_t)sync_id;
	args.child = &idv;
	return request_write(buf, cap, delimited, delimited ? "guest-sync-delimited" : "guest-sync",
			     &args, -1);
}

/* Copy a hostile description: bounded, cut on a UTF-8 boundary, control characters made '?'. */
static void copy_desc(char *dst, size_t cap, const struct jsonr_value *v)
{
	const unsigned char *s = (const unsigned char *)v->str;
	size_t i = 0, n = 0, k;

	while (i < v->len) {
		k = json_utf8_len(s + i, v->len - i); /* the parser validated it: k >= 1 */
		if (!k)
			k = 1;
		if (n + k >= cap)
			break;
		if (k == 1 && (s[i] < 0x20 || s[i] == 0x7f))
			dst[n] = '?';
		else
			memcpy(dst + n, s + i, k);
		n += k;
		i += k;
	}
	dst[n] = '\0';
}

static int reply_error_parse(const struct jsonr_value *e, struct qga_reply *r)
{
	const struct jsonr_value *cls, *desc;
	uint32_t i;

	/* exactly two members, both found (duplicates are parse errors): nothing else */
	if (e->kind != JSONR_OBJ || e->len != 2)
		return -EPROTO;
	cls = jsonr_obj_get(e, "class");
	desc = jsonr_obj_get(e, "desc");
	if (!cls || !desc || cls->kind != JSONR_STR || desc->kind != JSONR_STR)
		return -EPROTO;
	if (cls->len == 0 || cls->len >= QGA_CLASS_MAX)
		return -EPROTO;
	for (i = 0; i < cls->len; i++) {
		char ch = cls->str[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
			return -EPROTO;
	}
	memcpy(r->err_class, cls->str, cls->len);
	r->err_class[cls->len] = '\0';
	copy_desc(r->err_desc, sizeof(r->err_desc), desc);
	return 0;
}

int qga_reply_parse(struct jsonr_doc *doc, const char *msg, size_t len, struct qga_reply *r)
{
	const struct jsonr_value *root, *m, *err = NULL;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = jsonr_parse(doc, msg, len, &root);
	if (rc)
		return rc;
	rc = -EPROTO;
	if (root->kind != JSONR_OBJ)
		goto out;
	for (m = root->child; m; m = m->next) {
		if (strcmp(m->key, "return") == 0)
			r->ret = m;
		else if (strcmp(m->key, "error") == 0)
			err = m;
		else if (strcmp(m->key, "id") == 0)
			r->id = m;
		else
			goto out;
	}
	if (!r->ret == !err)
		goto out;
	rc = 0;
	if (err) {
		r->is_error = true;
		rc = reply_error_parse(err, r);
	}
out:
	if (rc)
		memset(r, 0, sizeof(*r));
	return rc;
}

int qga_reply_sync_check(const struct qga_reply *r, int64_t sync_id)
{
	int64_t v;

	if (r->is_error)
		return -EREMOTEIO;
	if (!r->ret || r->ret->kind != JSONR_INT)
		return -EPROTO;
	if (jsonr_get_i64(r->ret, &v) || v != sync_id)
		return -ESTALE;
	return 0;
}

bool qga_reply_id_is(const struct qga_reply *r, int64_t id)
{
	int64_t v;

	return r->id && jsonr_get_i64(r->id, &v) == 0 && v == id;
}
