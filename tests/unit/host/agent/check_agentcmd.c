/* SPDX-License-Identifier: MIT */
/*
 * check_agentcmd: the client of `vnoise-host agent` against a fake guest agent on a socketpair — the real
 * QGA dispatcher (shared/format/qga) in a thread with vnoise's three commands, and scripted hostile peers:
 * stale replies before the sync, garbage, silence, a peer that hangs up; and the status as text: strings of
 * the guest's reply (keys and values) holding terminal controls and bytes >= 0x80 show escaped.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "agent/agentcmd.h"
#include "util/monotime.h"

struct fake {
	int fd;
	pthread_t t;
	struct qga_agent *qa;
	const char *preamble; /* written before serving (stale replies, garbage) */
	int deaf; /* requests (newline-ended) read and not answered first: a reply the agent dropped */
	char last_args[512]; /* arguments of the last __com.vnoise_start */
};

static int fake_emit(void *ctx, const char *reply, size_t len)
{
	struct fake *f = ctx;

	return write(f->fd, reply, len) == (ssize_t)len ? 0 : -EIO;
}

static int h_status(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	(void)ctx;
	(void)args;
	(void)err;
	json_obj_begin(w);
	json_kv_str(w, "state", "running");
	json_kv_u64(w, "published", 42);
	json_obj_end(w);
	return 0;
}

/* A hostile status: a key and values with ESC, CR, BEL and bytes >= 0x80. */
static int h_status_bad(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	(void)ctx;
	(void)args;
	(void)err;
	json_obj_begin(w);
	json_kv_str(w, "state\x1b[2J", "run\rning\a");
	json_key(w, "list");
	json_arr_begin(w);
	json_obj_begin(w);
	json_kv_str(w, "k\x1b]0;x", "\xc3\xbc\xc2\x9b");
	json_obj_end(w);
	json_arr_end(w);
	json_obj_end(w);
	return 0;
}

static int h_start(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	struct fake *f = ctx;
	FILE *m = fmemopen(f->last_args, sizeof(f->last_args) - 1, "w");
	struct json_writer jw;

	(void)err;
	if (m) {
		json_init(&jw, m, 0);
		if (args)
			jsonr_write_value(&jw, args);
		else
			json_null(&jw);
		fclose(m);
	}
	json_obj_begin(w);
	json_kv_str(w, "state", "running");
	json_obj_end(w);
	return 0;
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	char buf[4096];
	ssize_t n;

	if (f->preamble)
		(void)!write(f->fd, f->preamble, strlen(f->preamble));
	while ((n = read(f->fd, buf, sizeof(buf))) > 0) {
		char *p = buf;

		while (f->deaf > 0 && n > 0) {
			char *nl = memchr(p, '\n', (size_t)n);

			if (!nl) {
				n = 0;
				break;
			}
			f->deaf--;
			n -= nl + 1 - p;
			p = nl + 1;
		}
		if (n > 0 && f->qa && qga_agent_feed(f->qa, p, (size_t)n, fake_emit, f))
			break;
	}
	return NULL;
}

/* A fake agent on sv[1]; the client end is returned. qa: serve the protocol (else stay silent). */
static int fake_start(struct fake *f, bool serve, const char *preamble)
{
	const struct qga_command cmds[] = { { "__com.vnoise_status", h_status, f },
					    { "__com.vnoise_start", h_start, f },
					    { "__com.vnoise_bad", h_status_bad, f } };
	int sv[2];

	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	f->fd = sv[1];
	f->preamble = preamble;
	if (serve) {
		f->qa = qga_agent_new("test");
		ck_assert_ptr_nonnull(f->qa);
		ck_assert_int_eq(qga_agent_register(f->qa, cmds, 3), 0);
	}
	ck_assert_int_eq(pthread_create(&f->t, NULL, fake_main, f), 0);
	return sv[0];
}

static void fake_stop(struct fake *f, int cfd)
{
	shutdown(cfd, SHUT_RDWR);
	close(cfd);
	pthread_join(f->t, NULL);
	close(f->fd);
	qga_agent_free(f->qa);
}

START_TEST(test_status_roundtrip)
{
	struct fake f;
	int fd = fake_start(&f, true, NULL);
	struct agentcmd_conn *c = agentcmd_conn_new(fd, 2000000000ULL);
	struct qga_reply r;
	uint64_t pub = 0;

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(agentcmd_sync(c), 0);
	ck_assert_int_eq(agentcmd_exec(c, "__com.vnoise_status", NULL, &r), 0);
	ck_assert(!r.is_error);
	ck_assert_str_eq(jsonr_get_str(jsonr_obj_get(r.ret, "state")), "running");
	ck_assert_int_eq(jsonr_get_u64(jsonr_obj_get(r.ret, "published"), &pub), 0);
	ck_assert_uint_eq(pub, 42);
	/* a second command on the same connection */
	ck_assert_int_eq(agentcmd_exec(c, "__com.vnoise_status", NULL, &r), 0);
	ck_assert(!r.is_error);
	agentcmd_conn_free(c);
	fake_stop(&f, fd);
}
END_TEST

START_TEST(test_status_text_escaped)
{
	struct fake f;
	int fd = fake_start(&f, true, NULL);
	struct agentcmd_conn *c = agentcmd_conn_new(fd, 2000000000ULL);
	struct qga_reply r;
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(agentcmd_sync(c), 0);
	ck_assert_int_eq(agentcmd_exec(c, "__com.vnoise_bad", NULL, &r), 0);
	ck_assert(!r.is_error);
	m = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(m);
	agentcmd_print_text(m, r.ret);
	fclose(m);
	for (size_t i = 0; i < len; i++)
		ck_assert_msg((buf[i] >= 0x20 && buf[i] < 0x7f) || buf[i] == '\n',
			      "byte 0x%02x at %zu: %s", (unsigned char)buf[i], i, buf);
	ck_assert_str_eq(buf, "state\\x1b[2J: run\\x0dning\\x07\n"
			      "list: k\\x1b]0;x=\\xc3\\xbc\\xc2\\x9b\n");
	free(buf);
	agentcmd_conn_free(c);
	fake_stop(&f, fd);
}
END_TEST

START_TEST(test_start_args_pass_through)
{
	struct fake f;
	int fd = fake_start(&f, true, NULL);
	struct agentcmd_conn *c = agentcmd_conn_new(fd, 2000000000ULL);
	struct qga_reply r;

	ck_assert_int_eq(agentcmd_sync(c), 0);
	ck_assert_int_eq(
	    agentcmd_exec(c, "__com.vnoise_start", "{\"cpus\":\"0\",\"period\":\"1000000ns\"}", &r),
	    0);
	ck_assert(!r.is_error);
	ck_assert_str_eq(f.last_args, "{\"cpus\":\"0\",\"period\":\"1000000ns\"}");
	agentcmd_conn_free(c);
	fake_stop(&f, fd);
}
END_TEST

START_TEST(test_error_reply)
{
	struct fake f;
	int fd = fake_start(&f, true, NULL);
	struct agentcmd_conn *c = agentcmd_conn_new(fd, 2000000000ULL);
	struct qga_reply r;

	ck_assert_int_eq(agentcmd_sync(c), 0);
	ck_assert_int_eq(agentcmd_exec(c, "__com.vnoise_stop", NULL, &r), 0);
	ck_assert(r.is_error);
	ck_assert_str_eq(r.err_class, "CommandNotFound");
	agentcmd_conn_free(c);
	fake_stop(&f, fd);
}
END_TEST

/* Replies left by an earlier client, garbage and a half text come first: the sync skips them. */
START_TEST(test_sync_skips_stale)
{
	struct fake f;
	int fd = fake_start(
	    &f, true, "{\"return\":7}\n{\"return\":{}}\ngarbage{\"error\":1}\n{\"return\":[1,");
	struct agentcmd_conn *c = agentcmd_conn_new(fd, 2000000000ULL);
	struct qga_reply r;

	usleep(20000); /* the preamble is in the socket before the request */
	ck_assert_int_eq(agentcmd_sync(c), 0);
	ck_assert_int_eq(agentcmd_exec(c, "__com.vnoise_status", NULL, &r), 0);
	ck_assert(!r.is_error);
	agentcmd_conn_free(c);
	fake_stop(&f, fd);
}
END_TEST

/*
 * A client on a fake agent deaf to its first `deaf` requests: agentcmd_sync() with timeout_ns must return
 * want_rc after min_ns to max_ns.
 */
static struct agentcmd_conn *deaf_sync(struct fake *f, int *fd, int deaf, uint64_t timeout_ns,
				       int want_rc, uint64_t min_ns, uint64_t max_ns)
{
	struct agentcmd_conn *c;
	uint64_t t0 = now_ns(), dt;

	*fd = fake_start(f, true, NULL);
	f->deaf = deaf; /* set before the client sends anything */
	c = agentcmd_conn_new(*fd, timeout_ns);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(agentcmd_sync(c), want_rc);
	dt = now_ns() - t0;
	ck_assert_uint_ge(dt, min_ns);
	ck_assert_uint_lt(dt, max_ns);
	return c;
}

/*
 * The agent drops the first syncs' replies (its port's host end not yet connected on the guest side): the
 * client sends the sync again every second and takes the third's answer; the next command matches its id.
 */
START_TEST(test_sync_resent)
{
	struct fake f;
	int fd;
	struct agentcmd_conn *c =
	    deaf_sync(&f, &fd, 2, 5000000000ULL, 0, 1900000000ULL, 4500000000ULL);
	struct qga_reply r;

	ck_assert_int_eq(agentcmd_exec(c, "__com.vnoise_status", NULL, &r), 0);
	ck_assert(!r.is_error);
	ck_assert_str_eq(jsonr_get_str(jsonr_obj_get(r.ret, "state")), "running");
	agentcmd_conn_free(c);
	fake_stop(&f, fd);
}
END_TEST

/* A sync answered by no one before the timeout: the client gives up at the timeout, not at a resend. */
START_TEST(test_sync_resend_until_timeout)
{
	struct fake f;
	int fd;
	struct agentcmd_conn *c =
	    deaf_sync(&f, &fd, 1000, 2500000000ULL, -ETIMEDOUT, 2490000000ULL, 3500000000ULL);

	agentcmd_conn_free(c);
	fake_stop(&f, fd);
	ck_assert_int_eq(f.deaf, 1000 - 3); /* sent at 0, 1 and 2 s */
}
END_TEST

START_TEST(test_silent_times_out)
{
	struct fake f;
	int fd = fake_start(&f, false, NULL);
	struct agentcmd_conn *c = agentcmd_conn_new(fd, 200000000ULL);
	uint64_t t0 = now_ns();

	ck_assert_int_eq(agentcmd_sync(c), -ETIMEDOUT);
	ck_assert_uint_ge(now_ns() - t0, 190000000ULL);
	ck_assert_uint_lt(now_ns() - t0, 2000000000ULL);
	agentcmd_conn_free(c);
	fake_stop(&f, fd);
}
END_TEST

/* A peer that only sends hostile texts: not a timeout but a protocol error. */
START_TEST(test_hostile_only)
{
	struct fake f;
	int fd = fake_start(&f, false,
			    "{\"return\":1,\"return\":2}\n{\"error\":{\"class\":\"X\"}}\n[1,2]\n"
			    "{\"return\":\"\xff\xfe\"}\n");
	struct agentcmd_conn *c = agentcmd_conn_new(fd, 300000000ULL);

	ck_assert_int_eq(agentcmd_sync(c), -EPROTO);
	agentcmd_conn_free(c);
	fake_stop(&f, fd);
}
END_TEST

START_TEST(test_peer_hangs_up)
{
	int sv[2];
	struct agentcmd_conn *c;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	c = agentcmd_conn_new(sv[0], 1000000000ULL);
	ck_assert_int_eq(agentcmd_sync(c), -ECONNRESET);
	agentcmd_conn_free(c);
	close(sv[0]);
}
END_TEST

static Suite *agentcmd_suite(void)
{
	Suite *s = suite_create("agentcmd");
	TCase *tc = tcase_create("client");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_status_roundtrip);
	tcase_add_test(tc, test_status_text_escaped);
	tcase_add_test(tc, test_start_args_pass_through);
	tcase_add_test(tc, test_error_reply);
	tcase_add_test(tc, test_sync_skips_stale);
	tcase_add_test(tc, test_sync_resent);
	tcase_add_test(tc, test_sync_resend_until_timeout);
	tcase_add_test(tc, test_silent_times_out);
	tcase_add_test(tc, test_hostile_only);
	tcase_add_test(tc, test_peer_hangs_up);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(agentcmd_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
