/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/guestchan's reading of the guest half, over a real region file in /dev/shm and
 * the agent's rings (shmwriter): a ring's samples and its events are each held to start order, not to each
 * other's; valid but hostile streams stay within the domain's budget (far-future ends under a creeping
 * horizon) and the round's work (starts falling while ends rise), and a flood of new epochs is held off;
 * the channel's open errors; the region file: refused when another user owns it or anyone may write it, a
 * truncation under the mapping (seen at a round's start, or as the SIGBUS of an access) survived as a lost
 * channel that is mapped again when the file comes back, and a SIGBUS elsewhere still fatal.
 */
#include <check.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include "check_main.h"
#include "guestchan_check.h"
#include "match/flipgate.h"
#include "match/guestchan_priv.h"

static void put_irq(struct shm_writer *w, uint64_t start, uint64_t end)
{
	struct vn_event e = { .start_ns = start,
			      .end_ns = end,
			      .net_ns = (uint32_t)(end - start),
			      .id = 1,
			      .cls = VN_CLASS_IRQ };

	ck_assert_int_eq(shmwriter_put_event(w, 0, &e), 0);
}

/* The end of a test: the responder stopped, the channel and the writer closed. */
static void finish(struct guestchan *gc, struct shm_writer *w, pthread_t th)
{
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	guestchan_close(gc);
	shmwriter_free(w);
}

/*
 * The agent's drain passes a CPU's samples, then its events: after a drain held up for 80 ms (its vCPU
 * preempted, seen in the soak) the events come 80 ms behind the latest sample. They are taken, and so is an
 * event published after one nested in it (starting 83 ms before it); an event starting over 10 s before
 * the latest event start is refused and counted as invalid (the hostile-input bound, on the queues' key).
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
	put_irq(w, g - 86 * MS,
		g - 1 * MS); /* encloses the one before, published after it: taken */
	put_irq(w, g - 10200 * MS,
		g - 10199 * MS); /* 10.197 s before the latest event start: refused */
	shmwriter_set_horizon(w, 0, g);
	shmwriter_set_horizon(w, 1, g);
	run_rounds(gc, 100 * MS);
	guestchan_period(gc, t0 - S, mono(), ms, NULL, &n, &ch);
	ck_assert_uint_eq(ch.records, 6);
	ck_assert_uint_eq(ch.invalid, 1);
	ck_assert_uint_eq(ch.lost + ch.missed + ch.unsynced + ch.late, 0);
	finish(gc, w, th);
}
END_TEST

#define POLL_CHUNK_BYTES \
	(256 * 512) /* a chunk of records read before the budget is looked at again */

/* A channel with a budget of budget bytes, its clock aligned by the responder thread th. */
static struct guestchan *budget_chan(uint64_t budget, pthread_t *th)
{
	struct guestchan_opts o = { .match = true,
				    .dispatch = true,
				    .detail = VN_DTL_DETAIL_TASK,
				    .period_ns = S,
				    .budget_bytes = budget };
	char why[256];
	struct guestchan *gc = guestchan_open(name, 0, 2, &o, why, sizeof(why));

	ck_assert_msg(gc != NULL, "guestchan_open: %s", why);
	ck_assert_int_eq(pthread_create(th, NULL, responder, NULL), 0);
	run_rounds(gc, 1500 * MS);
	return gc;
}

/*
 * H1: valid gaps and events whose ends lie an hour ahead, under a horizon creeping 1 us a batch (every
 * batch moves it): they wait for a horizon that never comes. What they make the channel hold stays under half
 * the budget (its arrays at most double it), the rest is refused and counted with the matcher's drops; the
 * channel keeps its clock and reads on.
 */
START_TEST(test_budget_far_future)
{
	const uint64_t budget = 512 * 1024;
	struct shm_writer *w = shmwriter_init(base, SIZE, 2, 1024, 99);
	struct vn_host_match ms[2];
	struct vn_host_chan ch;
	struct guestchan *gc;
	pthread_t th;
	size_t n = 0, max_held = 0;
	uint64_t t0, g, put = 0;

	ck_assert_ptr_nonnull(w);
	gc = budget_chan(budget, &th);
	t0 = mono();
	g = t0 + OFF;
	for (int b = 0; b < 40; b++) {
		for (int k = 0; k < 400; k++, put++) {
			uint64_t s0 = g + put * US;
			struct vn_event e = { .start_ns = s0 + 1,
					      .end_ns = s0 + 3600 * S,
					      .net_ns = 1000,
					      .id = 1,
					      .cls = VN_CLASS_IRQ };

			put_sample(w, s0, s0 + 3600 * S, VN_SAMPLE_GAP);
			ck_assert_int_eq(shmwriter_put_event(w, 0, &e), 0);
		}
		shmwriter_set_horizon(w, 0, g + (uint64_t)b * US + 1);
		shmwriter_set_horizon(w, 1, g + (uint64_t)b * US + 1);
		for (int r = 0; r < 4; r++) {
			uint64_t t = mono();

			guestchan_clock(gc, t);
			guestchan_tick(gc, t, t);
			if (guestchan_held_bytes(gc) > max_held)
				max_held = guestchan_held_bytes(gc);
		}
	}
	guestchan_period(gc, t0 - S, mono(), ms, NULL, &n, &ch);
	ck_assert_msg(2 * max_held <= budget + 2 * POLL_CHUNK_BYTES, "held %zu bytes, budget %llu",
		      max_held, (unsigned long long)budget);
	ck_assert_uint_gt(max_held, budget / 4); /* it did fill up */
	ck_assert_uint_gt(guestchan_over_budget(gc), put);
	ck_assert_uint_ge(ch.match_dropped, guestchan_over_budget(gc));
	ck_assert_uint_eq(ch.records, 2 * put);
	ck_assert_int_eq((int)ch.state, VN_HOST_CHAN_OK);
	ck_assert_uint_ne(ch.clock_uncertainty_ns, UINT64_MAX);
	finish(gc, w, th);
}
END_TEST

/*
 * H2: events whose ends rise while their starts fall (each one passes every event queued before it in the
 * start-sorted queues), with ends far ahead so that nothing drains: no round does more than the round's work
 * bound, plus the one insert it stopped in (at most the records held: two per event, merge and matcher).
 */
START_TEST(test_work_starts_falling)
{
	struct shm_writer *w = shmwriter_init(base, SIZE, 2, 2048, 99);
	struct guestchan *gc;
	pthread_t th;
	uint64_t g, put = 0, worst = 0, total0;

	ck_assert_ptr_nonnull(w);
	gc = budget_chan(256ull << 20, &th);
	g = mono() + OFF;
	total0 = guestchan_work(gc);
	for (int b = 0; b < 12; b++) {
		for (int k = 0; k < 2000; k++, put++) {
			struct vn_event e = { .start_ns = g + 900 * MS - put * 10,
					      .end_ns = g + 3600 * S + put,
					      .net_ns = 1000,
					      .id = 1,
					      .cls = VN_CLASS_IRQ };

			ck_assert_int_eq(shmwriter_put_event(w, 0, &e), 0);
		}
		shmwriter_set_horizon(w, 0, g + (uint64_t)b + 1);
		shmwriter_set_horizon(w, 1, g + (uint64_t)b + 1);
		for (int r = 0; r < 3; r++) {
			uint64_t t = mono(), w0 = guestchan_work(gc), d;

			guestchan_clock(gc, t);
			guestchan_tick(gc, t, t);
			d = guestchan_work(gc) - w0;
			if (d > worst)
				worst = d;
		}
	}
	/* the inserts did pass the queue (the stream is hostile), and each round stopped at the bound */
	ck_assert_uint_gt(guestchan_work(gc) - total0, 4 * (uint64_t)GUESTCHAN_ROUND_WORK);
	ck_assert_msg(worst <= GUESTCHAN_ROUND_WORK + 2 * put + 3, "a round did %llu",
		      (unsigned long long)worst);
	finish(gc, w, th);
}
END_TEST

/*
 * M1: a guest that starts a new agent epoch every round (each one a full reset of the clock model, the
 * matcher and the guest-only view, and a log line) has its first few followed, then is held off: over 3 s
 * of flips the channel attached at most the first epoch and FLIPGATE_BURST more, and kept its clock.
 */
START_TEST(test_epoch_flood)
{
	struct shm_writer *w = shmwriter_init(base, SIZE, 2, 256, 1);
	struct vn_host_match ms[2];
	struct vn_host_chan ch;
	struct guestchan *gc;
	pthread_t th;
	size_t n = 0;
	uint64_t t0 = mono(), flips = 0;

	ck_assert_ptr_nonnull(w);
	gc = budget_chan(0, &th);
	while (mono() < t0 + 3 * S) {
		uint64_t t;

		shmwriter_free(w);
		w = shmwriter_init(base, SIZE, 2, 256, 100 + ++flips);
		ck_assert_ptr_nonnull(w);
		t = mono();
		guestchan_clock(gc, t);
		guestchan_tick(gc, t, t);
		usleep(5000);
	}
	guestchan_period(gc, t0 - S, mono(), ms, NULL, &n, &ch);
	ck_assert_uint_gt(flips, 200);
	ck_assert_uint_le(ch.epochs, 1 + FLIPGATE_BURST);
	ck_assert_uint_ne(ch.clock_uncertainty_ns, UINT64_MAX);
	finish(gc, w, th);
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

/* ---- the region file itself: who may own it, and a truncation under the mapping ---- */

static void region_path(char *path, size_t len)
{
	snprintf(path, len, "/dev/shm/%s", name);
}

/* The host half untouched: nothing was published into the file. */
static bool host_area_blank(void)
{
	const unsigned char *p = host_area();

	for (size_t i = 0; i < 4096; i++)
		if (p[i])
			return false;
	return true;
}

/* A refused region: not mapped, nothing published into it, the reason shown, said and counted once. */
static void check_refused(const char *reason)
{
	struct guestchan_region_info ri;
	struct vn_host_match ms[2];
	struct vn_host_chan ch;
	struct guestchan *gc = chan(true);
	size_t n = 0;

	run_rounds(gc, 1500 * MS); /* past a look again (GUESTCHAN_REGION_RETRY_NS) */
	ck_assert_msg(host_area_blank(),
		      "the dispatch trace log was published into a refused file");
	guestchan_region_info(gc, &ri);
	ck_assert_int_eq((int)ri.state, GUESTCHAN_REGION_REFUSED);
	ck_assert_msg(strstr(ri.why, reason), "why: %s", ri.why);
	ck_assert_uint_eq(ri.refused, 1);
	guestchan_period(gc, 0, mono(), ms, NULL, &n, &ch);
	ck_assert_uint_eq(ch.state, VN_HOST_CHAN_REFUSED);
	guestchan_close(gc);
}

/* M4: a region file another user owns (created before the domain started) is refused. */
START_TEST(test_refused_owner)
{
	const struct passwd *pw = getpwnam("nobody");
	char path[128], want[64];

	if (geteuid() || !pw) {
		printf("test_refused_owner: skipped (needs root and the user nobody)\n");
		return;
	}
	region_path(path, sizeof(path));
	ck_assert_int_eq(chown(path, pw->pw_uid, pw->pw_gid), 0);
	snprintf(want, sizeof(want), "owner uid %u, not root", (unsigned)pw->pw_uid);
	check_refused(want);
}
END_TEST

/* M4: a region file anyone may write is refused. */
START_TEST(test_refused_mode)
{
	char path[128];

	region_path(path, sizeof(path));
	ck_assert_int_eq(chmod(path, 0666), 0);
	check_refused("writable by others (mode 0666)");
}
END_TEST

/*
 * M4: the region file truncated under a running channel (seen at the round's start): the channel is lost,
 * said and counted once, not a SIGBUS death; restored, it is mapped and published again.
 */
START_TEST(test_truncated)
{
	struct guestchan_region_info ri;
	struct guestchan *gc = chan(true);
	char path[128];

	run_rounds(gc, 100 * MS);
	ck_assert(!host_area_blank());
	region_path(path, sizeof(path));
	ck_assert_int_eq(truncate(path, 0), 0);
	run_rounds(gc, 200 * MS);
	guestchan_region_info(gc, &ri);
	ck_assert_int_eq((int)ri.state, GUESTCHAN_REGION_LOST);
	ck_assert_uint_eq(ri.lost, 1);
	ck_assert_msg(strstr(ri.why, "shrank to 0 bytes"), "why: %s", ri.why);
	ck_assert_int_eq(truncate(path, SIZE), 0); /* back, zeroed */
	run_rounds(gc, 1500 * MS);
	guestchan_region_info(gc, &ri);
	ck_assert_int_eq((int)ri.state, GUESTCHAN_REGION_MAPPED);
	ck_assert_uint_eq(ri.lost, 1);
	ck_assert_msg(!host_area_blank(), "not published again after the file came back");
	guestchan_close(gc);
}
END_TEST

/*
 * M4: truncated between the round's look at the size and the round's writes: the access faults (SIGBUS) and
 * the guard makes it a lost channel; a later dispatch record for the DTL finds nothing mapped.
 */
START_TEST(test_truncated_between)
{
	struct guestchan_region_info ri;
	struct guestchan *gc = chan(false);
	char path[128];
	uint64_t t;

	run_rounds(gc, 50 * MS);
	region_path(path, sizeof(path));
	t = mono();
	guestchan_clock(gc, t);
	ck_assert_int_eq(truncate(path, 4096), 0);
	guestchan_tick(gc, t, t); /* publishes the DTL status in the host half, past the end */
	guestchan_region_info(gc, &ri);
	ck_assert_int_eq((int)ri.state, GUESTCHAN_REGION_LOST);
	ck_assert_msg(strstr(ri.why, "faulted"), "why: %s", ri.why);
	guestchan_host_period(gc, t - S, t);
	ck_assert_uint_eq(ri.lost, 1);
	guestchan_close(gc);
}
END_TEST

/* A SIGBUS that is not an access to a channel's region still kills the process (real bugs crash). */
START_TEST(test_sigbus_elsewhere)
{
	struct guestchan *gc = chan(false);
	char path[128] = "/dev/shm/vnoise-unit-bus-XXXXXX";
	volatile char *p;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(ftruncate(fd, 8192), 0);
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne((void *)p, MAP_FAILED);
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	run_rounds(gc, 20 * MS);
	region_path(path, sizeof(path));
	unlink(path); /* the teardown does not run after the death */
	(void)p[4096]; /* dies here */
	guestchan_close(gc);
}
END_TEST

static Suite *guestchan_suite(void)
{
	Suite *s = suite_create("guestchan");
	TCase *tc = tcase_create("records");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_streams_ordered_apart);
	tcase_add_test(tc, test_budget_far_future);
	tcase_add_test(tc, test_work_starts_falling);
	tcase_add_test(tc, test_epoch_flood);
	tcase_add_test(tc, test_open_errors);
	suite_add_tcase(s, tc);
	tc = tcase_create("region");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_refused_owner);
	tcase_add_test(tc, test_refused_mode);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_truncated_between);
	tcase_add_test_raise_signal(tc, test_sigbus_elsewhere, SIGBUS);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(guestchan_suite());
}
