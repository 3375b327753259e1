/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/guestchan's reading of the guest half, over a real region file in /dev/shm and
 * the agent's rings (shmwriter): a ring's samples and its events are each held to time order, not to each
 * other's; the channel's open errors.
 */
#include <check.h>
#include "check_main.h"
#include "guestchan_check.h"

static void put_irq(struct shm_writer *w, uint64_t start, uint64_t end)
{
	struct vn_event e = { .start_ns = start,
			      .end_ns = end,
			      .net_ns = (uint32_t)(end - start),
			      .id = 1,
			      .cls = VN_CLASS_IRQ };

	ck_assert_int_eq(shmwriter_put_event(w, 0, &e), 0);
}

/*
 * The agent's drain passes a CPU's samples, then its events: after a drain held up for 80 ms (its vCPU
 * preempted, seen in the soak) the events come 80 ms behind the latest sample. They are taken; an event
 * 80 ms behind the latest event is refused and counted as invalid (the hostile-input bound).
 */
START_TEST(test_streams_ordered_apart)
{
	struct shm_writer *w = shmwriter_init(base, SIZE, 2, 256, 99);
	struct vn_host_match ms[2];
	struct vn_host_chan ch;
	struct guestchan *gc;
	pthread_t th;
	size_t n = 0;
	uint64_t t0, g;

	ck_assert_ptr_nonnull(w);
	gc = chan(true);
	ck_assert_int_eq(pthread_create(&th, NULL, responder, NULL), 0);
	run_rounds(gc, 1500 * MS); /* attached, clock aligned */
	t0 = mono();
	g = t0 + OFF;
	put_sample(w, g - 50 * MS, g - 49 * MS, VN_SAMPLE_GAP);
	put_sample(w, g - 100 * MS, g - 1 * MS, VN_SAMPLE_WINDOW);
	put_irq(w, g - 81 * MS, g - 80 * MS); /* 79 ms behind the latest sample: taken */
	put_irq(w, g - 3 * MS, g - 2 * MS);
	put_irq(w, g - 86 * MS, g - 85 * MS); /* 83 ms behind the latest event: refused */
	shmwriter_set_horizon(w, 0, g);
	shmwriter_set_horizon(w, 1, g);
	run_rounds(gc, 100 * MS);
	guestchan_period(gc, t0 - S, mono(), ms, NULL, &n, &ch);
	ck_assert_uint_eq(ch.records, 5);
	ck_assert_uint_eq(ch.invalid, 1);
	ck_assert_uint_eq(ch.lost + ch.missed + ch.unsynced + ch.late, 0);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	guestchan_close(gc);
	shmwriter_free(w);
}
END_TEST

START_TEST(test_open_errors)
{
	struct guestchan_opts o = { .detail = VN_DTL_DETAIL_CLASS };
	char why[256];

	ck_assert_ptr_null(guestchan_open("no/slash", 0, 1, &o, why, sizeof(why)));
	ck_assert_ptr_null(guestchan_open("vnoise-unit-gc-missing", 0, 1, &o, why, sizeof(why)));
	ck_assert_ptr_nonnull(strstr(why, "vnoise-unit-gc-missing"));
	ck_assert_ptr_null(guestchan_open(name, 0, 0, &o, why, sizeof(why)));
	guestchan_close(NULL);
}
END_TEST

static Suite *guestchan_suite(void)
{
	Suite *s = suite_create("guestchan");
	TCase *tc = tcase_create("records");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_streams_ordered_apart);
	tcase_add_test(tc, test_open_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(guestchan_suite());
}
