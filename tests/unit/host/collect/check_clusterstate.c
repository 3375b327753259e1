/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/collect/clusterstate (the engine's state snapshot): an engine loaded from another's
 * snapshot gives the same report and /metrics, refuses the datagrams the first had seen (anti-replay state
 * carried), and goes on equal to it on the same later datagrams and rotation; a snapshot of another
 * layout is refused as such, a damaged one (truncated, bytes changed, beyond max_nodes) is refused or loaded
 * within bounds, never crashing, and a failed load leaves the engine new and working; a forged session's
 * lockout is not brought back by a load.
 */
#include <check.h>
#include "check_main.h"
#include "clusteragg_check.h"
#include "collect/clusterstate.h"

static struct wire *copy; /* what up held, to deliver to a second engine */

static void save_up(void)
{
	memcpy(copy, up, sizeof(*up));
}

static void restore_up(void)
{
	memcpy(up, copy, sizeof(*up));
}

/* Two jobs of 4 and 2 nodes, rotating, 5 intervals each: an engine worth a snapshot. */
static struct clusteragg *busy(struct node *n, uint64_t t)
{
	struct clusteragg *cs = store(10000000, 2, 0);

	for (int i = 0; i < 6; i++) {
		node_init(&n[i], (uint64_t)i + 1, i < 4 ? "job-a" : "job-b");
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
	}
	deliver(cs, t);
	clusterrot_tick(cs, t);
	take_commands(n, 6, t);
	for (uint64_t iv = 0; iv < 5; iv++)
		for (int i = 0; i < 6; i++)
			send_iv(&n[i], iv, 2, 1000 * (uint64_t)(i + 1) + iv, 10 + iv, iv % 2);
	deliver(cs, t + 1000);
	return cs;
}

static void same_outputs(struct clusteragg *a, struct clusteragg *b)
{
	char *ra = strdup(report(a)), *pa = strdup(render(a));

	ck_assert_ptr_nonnull(ra);
	ck_assert_ptr_nonnull(pa);
	ck_assert_str_eq(report(b), ra);
	ck_assert_str_eq(render(b), pa);
	free(ra);
	free(pa);
}

START_TEST(test_round_trip)
{
	struct node n[6];
	struct clusteragg *a = busy(n, 1000000000ull), *b = store(10000000, 2, 0);
	struct sockaddr_in from = node_addr(3);
	uint8_t old[VN_REPORT_MAX_LEN];
	size_t oldlen, len;
	void *blob;

	/* a datagram node 3 sent before the snapshot, to be replayed at the loaded engine */
	send_iv(&n[2], 5, 2, 3000, 10, 0);
	oldlen = up->len[0];
	memcpy(old, up->d[0], oldlen);
	deliver(a, 1000002000ull);
	ck_assert_int_eq(clusterstate_save(a, &blob, &len), 0);
	ck_assert_int_eq(clusterstate_load(b, blob, len), 0);
	free(blob);
	same_outputs(a, b);
	ck_assert_int_eq(clusteragg_ingest(b, old, oldlen, (struct sockaddr *)&from, sizeof(from),
					   1000003000ull),
			 CS_DUP);
	ck_assert_int_eq(clusteragg_ingest(a, old, oldlen, (struct sockaddr *)&from, sizeof(from),
					   1000003000ull),
			 CS_DUP);
	/* the same later datagrams and rotation into both: still equal */
	for (uint64_t iv = 6; iv < 12; iv++)
		for (int i = 0; i < 6; i++)
			send_iv(&n[i], iv, 2, 1000 * (uint64_t)(i + 1) + iv, 10 + iv, 0);
	save_up();
	deliver(a, 1020000000ull);
	restore_up();
	deliver(b, 1020000000ull);
	clusterrot_tick(a, 1030000000ull);
	clusterrot_tick(b, 1030000000ull);
	clusteragg_close_all(a);
	clusteragg_close_all(b);
	same_outputs(a, b);
	down->n = 0;
	clusteragg_free(a);
	clusteragg_free(b);
}
END_TEST

/* An engine a failed load left: new (no node) and working. */
static void still_new(struct clusteragg *cs)
{
	struct clusteragg_stats st;
	struct node n;

	clusteragg_stats(cs, &st);
	ck_assert_uint_eq(st.nodes, 0);
	ck_assert_uint_eq(st.jobs, 0);
	ck_assert_uint_eq(st.received, 0);
	node_init(&n, 9, "job-z");
	ck_assert_int_eq(node_hello(&n, 1), 0);
	ck_assert_uint_eq(deliver(cs, 5), 1);
	clusteragg_stats(cs, &st);
	ck_assert_uint_eq(st.nodes, 1);
}

START_TEST(test_refused)
{
	struct node n[6];
	struct clusteragg *a = busy(n, 1000000000ull), *b;
	struct clusteragg_cfg small = { .keys = &kf, .max_nodes = 5 };
	unsigned char *blob, *bad;
	size_t len;

	ck_assert_int_eq(clusterstate_save(a, (void **)&blob, &len), 0);
	ck_assert_int_eq(clusterstate_load(a, blob, len), -EBUSY); /* not a new engine */
	bad = malloc(len);
	ck_assert_ptr_nonnull(bad);
	/* another build or layout: the header's layout text differs */
	memcpy(bad, blob, len);
	bad[8] ^= 1;
	b = store(10000000, 2, 0);
	ck_assert_int_eq(clusterstate_load(b, bad, len), -ESTALE);
	still_new(b);
	clusteragg_free(b);
	/* truncated anywhere, or one byte too long */
	for (size_t cut = 0; cut < len; cut += cut < 300 ? 1 : 997) {
		b = store(10000000, 2, 0);
		ck_assert_int_eq(clusterstate_load(b, blob, cut), -EBADMSG);
		still_new(b);
		clusteragg_free(b);
	}
	bad = realloc(bad, len + 1);
	ck_assert_ptr_nonnull(bad);
	memcpy(bad, blob, len);
	bad[len] = 0;
	b = store(10000000, 2, 0);
	ck_assert_int_eq(clusterstate_load(b, bad, len + 1), -EBADMSG);
	still_new(b);
	ck_assert_int_eq(clusterstate_load(b, bad, len), -EBUSY);
	clusteragg_free(b);
	b = store(10000000, 2, 0);
	ck_assert_int_eq(clusterstate_load(b, bad, len), 0); /* the intact copy loads */
	clusteragg_free(b);
	/* more nodes than the engine may keep */
	b = clusteragg_new(&small);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(clusterstate_load(b, blob, len), -EBADMSG);
	still_new(b);
	clusteragg_free(b);
	free(bad);
	free(blob);
	clusteragg_free(a);
}
END_TEST

/* Bytes changed anywhere after the header: refused, or loaded and the engine works (bounds hold). */
/*
 * M6: a forged session's lockout is not brought back by a restart: an engine loaded from a snapshot taken
 * while the forger held the node takes the real node again at the same bound, and still refuses a replay.
 */
START_TEST(test_lockout_not_restored)
{
	const uint64_t s = 1000000000ull, t0 = 1700000000ull * s;
	struct clusteragg *a = store(0, 1, 0), *b = store(0, 1, 0);
	struct clusteragg_node_info ni;
	struct node real, forger;
	uint8_t forged[VN_REPORT_MAX_LEN];
	size_t forgedlen, len;
	struct sockaddr_in addr = node_addr(1);
	void *blob;
	uint64_t t;

	node_session(&real, 1, t0);
	ck_assert_int_eq(hello_at(a, &real, t0, t0, NULL, NULL), CS_OK);
	node_session(&forger, 1, UINT64_MAX);
	ck_assert_int_eq(hello_at(a, &forger, t0 + s, t0 + s, forged, &forgedlen), CS_OK);
	ck_assert_int_eq(clusterstate_save(a, &blob, &len), 0);
	ck_assert_int_eq(clusterstate_load(b, blob, len), 0);
	free(blob);
	ck_assert_int_eq(clusteragg_node_info(b, 0, &ni), 0);
	ck_assert_uint_eq(ni.session_id, UINT64_MAX);
	t = taken_at(b, &real, t0 + 2 * s, s / 2, t0 + s + CS_LOCKOUT_MAX_NS);
	ck_assert_int_eq(clusteragg_node_info(b, 0, &ni), 0);
	ck_assert_uint_eq(ni.session_id, t0);
	ck_assert_int_eq(
	    clusteragg_ingest(b, forged, forgedlen, (struct sockaddr *)&addr, sizeof(addr), t + s),
	    CS_STALE);
	clusteragg_free(a);
	clusteragg_free(b);
}
END_TEST

START_TEST(test_damaged_bytes)
{
	struct node n[6];
	struct clusteragg *a = busy(n, 1000000000ull);
	unsigned char *blob, *bad;
	size_t len;
	unsigned seed = 7, refused = 0;

	ck_assert_int_eq(clusterstate_save(a, (void **)&blob, &len), 0);
	bad = malloc(len);
	ck_assert_ptr_nonnull(bad);
	for (int k = 0; k < 2000; k++) {
		struct clusteragg *b = store(10000000, 2, 0);
		size_t at = 128 + (size_t)rand_r(&seed) % (len - 128);
		int rc;

		memcpy(bad, blob, len);
		bad[at] = (unsigned char)rand_r(&seed);
		if (k & 1) /* a 32-bit field set large (a count or an index) */
			memset(bad + (at & ~(size_t)3), 0x7f, at + 4 <= len ? 4 : 1);
		rc = clusterstate_load(b, bad, len);
		if (rc) {
			ck_assert_int_eq(rc, -EBADMSG);
			refused++;
			still_new(b);
		} else { /* loaded: it takes more datagrams, rotates and reports within bounds */
			for (int i = 0; i < 6; i++)
				send_iv(&n[i], 100 + (uint64_t)k, 2, 1000, 10, 0);
			deliver(b, 2000000000ull);
			clusterrot_tick(b, 2100000000ull);
			down->n = 0;
			clusteragg_close_all(b);
			ck_assert_ptr_nonnull(report(b));
			ck_assert_ptr_nonnull(render(b));
		}
		clusteragg_free(b);
	}
	ck_assert_uint_gt(refused, 0);
	free(bad);
	free(blob);
	clusteragg_free(a);
}
END_TEST

static void setup_all(void)
{
	setup();
	copy = calloc(1, sizeof(*copy));
}

static void teardown_all(void)
{
	free(copy);
	teardown();
}

static Suite *clusterstate_suite(void)
{
	Suite *s = suite_create("clusterstate");
	TCase *t = tcase_create("snapshot");

	tcase_add_checked_fixture(t, setup_all, teardown_all);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_round_trip);
	tcase_add_test(t, test_refused);
	tcase_add_test(t, test_damaged_bytes);
	tcase_add_test(t, test_lockout_not_restored);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return check_main(clusterstate_suite());
}
