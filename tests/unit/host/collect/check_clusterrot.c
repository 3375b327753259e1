/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the collector's round-robin rotation (host/collect/clusterrot) over the engine, driven by the
 * node module (guest/cluster/node) with the network replaced by arrays: fair share, commands the nodes
 * accept, the end after max_slots, taking a node that slows down while sampled out of the rotation (but not
 * for one stall), commands replayed, forged or for another node.
 * The same paths run for real over UDP in tests/integration/cluster.sh.
 */
#include <check.h>
#include "check_main.h"
#include "clusteragg_check.h"

START_TEST(test_rotation_fair)
{
	const uint64_t slot = 1000000000ull, t0 = 10 * slot;
	struct clusteragg *cs = store(slot, 8, 32);
	struct node n[8];
	int cmds = 0;

	for (int i = 0; i < 8; i++) {
		node_init(&n[i], (uint64_t)i + 1, "pool");
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
		if (i == 6) { /* the rotation waits for 8 nodes */
			deliver(cs, t0);
			clusterrot_tick(cs, t0);
			ck_assert_uint_eq(down->n, 0);
		}
	}
	deliver(cs, t0);
	for (uint64_t s = 0; s < 40; s++) {
		uint64_t t = t0 + s * slot;

		for (int i = 0; i < 8; i++) /* nodes stay alive */
			ck_assert_int_eq(node_hello(&n[i], t), 0);
		deliver(cs, t);
		clusterrot_tick(cs, t);
		cmds += take_commands(n, 8, t);
		/* exactly one node sampled during slots 0..31, none after */
		for (int i = 0, k = 0; i < 8; i++) {
			k += node_sampled(&n[i], t);
			if (i == 7)
				ck_assert_int_eq(k, s < 32 ? 1 : 0);
		}
	}
	ck_assert_int_eq(cmds, 32);
	for (int i = 0; i < 8; i++) {
		ck_assert_uint_eq(n[i].st.cmds, 4);
		ck_assert_uint_eq(n[i].st.leases, 4);
	}
	ck_assert_ptr_nonnull(strstr(render(cs), "vnoise_node_sampled_slots_total{node=\"8\","));
	clusteragg_free(cs);
}
END_TEST

START_TEST(test_exclusion)
{
	const uint64_t slot = 1000000000ull, t0 = 10 * slot;
	struct clusteragg *cs = store(slot, 4, 0);
	struct node n[4];
	uint64_t iv[4] = { 0 };
	int samples[4] = { 0 };

	for (int i = 0; i < 4; i++) {
		node_init(&n[i], (uint64_t)i + 1, "pool");
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
	}
	deliver(cs, t0);
	for (uint64_t s = 0; s < 16; s++) {
		uint64_t t = t0 + s * slot;

		for (int i = 0; i < 4; i++)
			ck_assert_int_eq(node_hello(&n[i], t), 0);
		deliver(cs, t);
		clusterrot_tick(cs, t);
		take_commands(n, 4, t);
		/* 5 intervals per slot; node 3 takes 50% longer while sampled */
		for (int k = 0; k < 5; k++)
			for (int i = 0; i < 4; i++) {
				int smp = node_sampled(&n[i], t + 1);

				samples[i] += smp && k == 0;
				send_iv(&n[i], iv[i]++, 1, i == 2 && smp ? 150000 : 100000 + k, 5,
					smp);
			}
		deliver(cs, t + slot / 2);
	}
	/* node 3 was sampled once, then never again; the other three share the other slots */
	ck_assert_int_eq(samples[2], 1);
	ck_assert_int_eq(samples[0] + samples[1] + samples[3], 15);
	ck_assert_ptr_nonnull(strstr(render(cs), "vnoise_node_excluded{node=\"3\",job=\""));
	ck_assert_ptr_nonnull(strstr(report(cs), "\"node\":3,"));
	ck_assert_msg(strstr(report(cs), "\"slots_sampled\":1,\"commands\":2,\"excluded\":true"),
		      "%s", strstr(report(cs), "\"node\":3,"));
	clusteragg_free(cs);
}
END_TEST

/* One long stall in a sampled interval (a hypervisor preemption) does not take a node out: medians. */
START_TEST(test_exclusion_ignores_one_stall)
{
	const uint64_t slot = 1000000000ull, t0 = 10 * slot;
	struct clusteragg *cs = store(slot, 2, 0);
	struct node n[2];
	uint64_t iv[2] = { 0 };

	for (int i = 0; i < 2; i++) {
		node_init(&n[i], (uint64_t)i + 1, "pool");
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
	}
	deliver(cs, t0);
	for (uint64_t s = 0; s < 6; s++) {
		uint64_t t = t0 + s * slot;

		for (int i = 0; i < 2; i++)
			ck_assert_int_eq(node_hello(&n[i], t), 0);
		deliver(cs, t);
		clusterrot_tick(cs, t);
		take_commands(n, 2, t);
		for (int k = 0; k < 5; k++)
			for (int i = 0; i < 2; i++) {
				int smp = node_sampled(&n[i], t + 1);

				send_iv(&n[i], iv[i]++, 1, smp && k == 2 ? 2000000 : 100000, 5,
					smp);
			}
		deliver(cs, t + slot / 2);
	}
	ck_assert_ptr_null(strstr(report(cs), "\"excluded\":true"));
	clusteragg_free(cs);
}
END_TEST

START_TEST(test_commands_checked)
{
	const uint64_t slot = 1000000000ull;
	struct clusteragg *cs = store(slot, 2, 0);
	struct node n[2], other;
	uint8_t saved[VN_REPORT_MAX_LEN];
	size_t len;

	for (int i = 0; i < 2; i++) {
		node_init(&n[i], (uint64_t)i + 1, "pool");
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
	}
	deliver(cs, 5 * slot);
	clusterrot_tick(cs, 5 * slot);
	ck_assert_uint_eq(down->n, 1);
	memcpy(saved, down->d[0], len = down->len[0]);
	ck_assert_int_eq(ntohs(down_to[0].sin_port), 20001);
	/* for node 1: node 2 refuses it; node 1 takes it once, then refuses the replay */
	ck_assert_int_eq(node_cmd(&n[1], saved, len, 0), -ESRCH);
	ck_assert_int_eq(node_cmd(&n[0], saved, len, 0), 0);
	ck_assert(node_sampled(&n[0], slot - 1));
	ck_assert(!node_sampled(&n[0], slot));
	ck_assert_int_eq(node_cmd(&n[0], saved, len, 0), -EALREADY);
	/* a restarted node 1 (new session) refuses the old session's command */
	node_init(&other, 1, "pool");
	other.cfg.session_id = 5555;
	ck_assert_int_eq(node_cmd(&other, saved, len, 0), -ESRCH);
	/* corrupted, or made with another key */
	saved[40] ^= 1;
	ck_assert_int_eq(node_cmd(&n[0], saved, len, 0), -EKEYREJECTED);
	other = n[0];
	other.cfg.keys = &otherkf;
	saved[40] ^= 1;
	ck_assert_int_eq(node_cmd(&other, saved, len, 0), -EKEYREJECTED);
	ck_assert_uint_eq(n[0].st.cmds, 1);
	ck_assert_uint_eq(n[0].st.cmds_replayed, 1);
	ck_assert_uint_eq(n[0].st.cmds_bad, 1);
	ck_assert_uint_eq(n[1].st.cmds_foreign, 1);
	/* a command sent to the collector is authentic but not taken */
	ck_assert_int_eq(clusteragg_ingest(cs, saved, len, NULL, 0, 6 * slot), CS_WRONG_KIND);
	clusteragg_free(cs);
}
END_TEST

static Suite *clusterrot_suite(void)
{
	Suite *s = suite_create("clusterrot");
	TCase *t = tcase_create("collector");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_rotation_fair);
	tcase_add_test(t, test_exclusion);
	tcase_add_test(t, test_exclusion_ignores_one_stall);
	tcase_add_test(t, test_commands_checked);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return check_main(clusterrot_suite());
}
