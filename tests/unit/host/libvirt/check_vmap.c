/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/libvirt/vmap: the reading of QMP query-cpus-fast replies as QEMU 7.2 sends them
 * through libvirt (each element's thread-id, never props.thread-id; vCPUs beyond the domain's count
 * skipped), and the refusal of everything else — garbage, truncations, error replies, wrong shapes, bad or
 * repeated values — without touching the map.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libvirt/vmap_priv.h"
#include "check_main.h"

/* QEMU 7.2, x86_64, 4 vCPUs (1 socket, 2 cores, 2 threads), as libvirt relays it (with its "id"). */
static const char reply_72[] =
    "{\"return\": [{\"thread-id\": 41231, \"props\": {\"core-id\": 0, \"thread-id\": 0, "
    "\"node-id\": 0, \"die-id\": 0, \"socket-id\": 0}, \"qom-path\": "
    "\"/machine/unattached/device[0]\", "
    "\"cpu-index\": 0, \"target\": \"x86_64\"}, {\"thread-id\": 41232, \"props\": {\"core-id\": 0, "
    "\"thread-id\": 1, \"node-id\": 0, \"die-id\": 0, \"socket-id\": 0}, \"qom-path\": "
    "\"/machine/unattached/device[1]\", \"cpu-index\": 1, \"target\": \"x86_64\"}, {\"thread-id\": "
    "41233, \"props\": {\"core-id\": 1, \"thread-id\": 0, \"node-id\": 0, \"die-id\": 0, "
    "\"socket-id\": 0}, \"qom-path\": \"/machine/unattached/device[2]\", \"cpu-index\": 2, "
    "\"target\": \"x86_64\"}, {\"thread-id\": 41234, \"props\": {\"core-id\": 1, \"thread-id\": 1, "
    "\"node-id\": 0, \"die-id\": 0, \"socket-id\": 0}, \"qom-path\": "
    "\"/machine/unattached/device[3]\", "
    "\"cpu-index\": 3, \"target\": \"x86_64\"}], \"id\": \"libvirt-412\"}";

/* vmap_qmp_tids on text s into tids[n] prefilled with 7; returns rc, the reason in msg. */
static int qmp(const char *s, uint32_t n, uint32_t *tids, char *msg, size_t cap)
{
	size_t len = strlen(s);
	char *copy = malloc(len ? len : 1); /* exact size, no NUL: an overread shows under ASan */
	int rc;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, s, len);
	for (uint32_t i = 0; i < n; i++)
		tids[i] = 7;
	msg[0] = '\0';
	rc = vmap_qmp_tids(copy, len, n, tids, msg, cap);
	free(copy);
	return rc;
}

START_TEST(test_qmp_reply_72)
{
	uint32_t tids[8];
	char msg[256];

	ck_assert_int_eq(qmp(reply_72, 4, tids, msg, sizeof(msg)), 4);
	ck_assert_uint_eq(tids[0], 41231);
	ck_assert_uint_eq(tids[1], 41232);
	ck_assert_uint_eq(tids[2], 41233);
	ck_assert_uint_eq(tids[3], 41234);
	/* a domain of 8 vCPUs of which 4 are plugged: the others are 0 */
	ck_assert_int_eq(qmp(reply_72, 8, tids, msg, sizeof(msg)), 4);
	ck_assert_uint_eq(tids[3], 41234);
	ck_assert_uint_eq(tids[4], 0);
	ck_assert_uint_eq(tids[7], 0);
	/* fewer vCPUs than listed: the rest are skipped, not an error */
	ck_assert_int_eq(qmp(reply_72, 2, tids, msg, sizeof(msg)), 2);
	ck_assert_uint_eq(tids[1], 41232);
	/* an empty list, compact text, members in any order */
	ck_assert_int_eq(qmp("{\"return\":[]}", 2, tids, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(tids[0], 0);
	ck_assert_int_eq(
	    qmp("{\"id\":\"libvirt-1\",\"return\":[{\"cpu-index\":1,\"props\":{\"thread-id\":5},"
		"\"thread-id\":99}]}",
		2, tids, msg, sizeof(msg)),
	    1);
	ck_assert_uint_eq(tids[0], 0);
	ck_assert_uint_eq(tids[1], 99);
}
END_TEST

START_TEST(test_qmp_garbage)
{
	static const struct {
		const char *in;
		int rc;
	} bad[] = {
		{ "", -EPROTO },
		{ "garbage", -EPROTO },
		{ "\"cpu-index\": 0, \"thread-id\": 1234", -EPROTO }, /* what a string scan took */
		{ "[{\"cpu-index\":0,\"thread-id\":1234}]", -EPROTO }, /* not an object */
		{ "{\"return\":{\"cpu-index\":0,\"thread-id\":1234}}", -EPROTO },
		{ "{\"return\":[{\"cpu-index\":0,\"thread-id\":1234}]} trailing", -EPROTO },
		{ "{\"return\":[{\"cpu-index\":0,\"thread-id\":1234}],\"return\":[]}", -EPROTO },
		{ "{\"return\":[1]}", -EPROTO },
		{ "{\"return\":[{\"cpu-index\":0}]}", -EPROTO },
		{ "{\"return\":[{\"thread-id\":1234}]}", -EPROTO },
		{ "{\"return\":[{\"cpu-index\":0,\"props\":{\"thread-id\":0}}]}", -EPROTO },
		{ "{\"return\":[{\"cpu-index\":0,\"thread-id\":\"1234\"}]}", -EPROTO },
		{ "{\"return\":[{\"cpu-index\":0,\"thread-id\":0}]}", -EPROTO },
		{ "{\"return\":[{\"cpu-index\":0,\"thread-id\":-1}]}", -EPROTO },
		{ "{\"return\":[{\"cpu-index\":0,\"thread-id\":1.5}]}", -EPROTO },
		{ "{\"return\":[{\"cpu-index\":0,\"thread-id\":4294967297}]}", -EPROTO },
		{ "{\"return\":[{\"cpu-index\":-1,\"thread-id\":1234}]}", -EPROTO },
		{ "{\"return\":[{\"cpu-index\":0,\"thread-id\":1},{\"cpu-index\":0,\"thread-id\":2}"
		  "]}",
		  -EPROTO },
		{ "{\"return\":[{\"cpu-index\":0,\"thread-id\":1},{\"cpu-index\":1}]}", -EPROTO },
		{ "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"The command "
		  "query-cpus-fast has "
		  "not been found\"},\"id\":\"libvirt-9\"}",
		  -EREMOTEIO },
	};
	uint32_t tids[4];
	char msg[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = qmp(bad[i].in, 4, tids, msg, sizeof(msg));

		ck_assert_msg(rc == bad[i].rc, "%s: %d, want %d", bad[i].in, rc, bad[i].rc);
		ck_assert_msg(msg[0], "%s: no reason", bad[i].in);
		for (int k = 0; k < 4; k++)
			ck_assert_msg(tids[k] == 7, "%s: map changed", bad[i].in);
	}
	ck_assert_ptr_nonnull(strstr(msg, "has not been found"));
	ck_assert_int_eq(vmap_qmp_tids(NULL, 0, 4, tids, msg, sizeof(msg)), -EPROTO);
	ck_assert_int_eq(vmap_qmp_tids(reply_72, VMAP_QMP_MAX + 1, 4, tids, msg, sizeof(msg)),
			 -E2BIG);
}
END_TEST

/* Every proper prefix of a real reply is refused, and the map is left alone. */
START_TEST(test_qmp_truncations)
{
	size_t len = sizeof(reply_72) - 1;
	uint32_t tids[4];
	char msg[256], *buf = malloc(len + 1);

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < len; i++) {
		memcpy(buf, reply_72, i);
		buf[i] = '\0';
		ck_assert_msg(qmp(buf, 4, tids, msg, sizeof(msg)) == -EPROTO, "prefix %zu", i);
		ck_assert_uint_eq(tids[0], 7);
	}
	free(buf);
}
END_TEST

static Suite *vmap_suite(void)
{
	Suite *s = suite_create("vmap");
	TCase *tc = tcase_create("qmp");

	tcase_add_test(tc, test_qmp_reply_72);
	tcase_add_test(tc, test_qmp_garbage);
	tcase_add_test(tc, test_qmp_truncations);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(vmap_suite());
}
