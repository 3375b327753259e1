/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/guestchan's dispatch trace log side, over a real region file in /dev/shm: the
 * clock exchange through the DTL mailbox (a test thread answers with dtlreader_request / dtlreader_reply, as
 * a guest responder does, with its clock OFF ahead of the host's), with and without --guest; the published
 * status then carries the mapping, and a run and its piece fed to the channel come out in guest time; no
 * responder: exchanges are abandoned and the host stops spinning; the publishing rule (a v1 agent's live
 * header stops it, epoch 0 or version 2 starts it again with a new host epoch); one publisher per region
 * (flock), taken over when the other one closes. With --guest, over the agent's rings (shmwriter): a ring's
 * samples and its events are each held to time order, not to each other's; the bell (a unix socket in the
 * role of QEMU's): when the monitor may sleep on it and when it must keep its short round.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "dtl.h"
#include "shm.h"
#include "channel/dtlreader.h"
#include "channel/dtlreader_priv.h"
#include "channel/shmwriter.h"
#include "match/guestchan.h"

#define US 1000ULL
#define MS 1000000ULL
#define S 1000000000ULL
#define OFF (7 * S) /* the guest's clock runs this far ahead */
#define SIZE (1u << 20)

static char name[64];
static void *base; /* the test's own mapping of the region */
static atomic_int stop;
static atomic_int answers;

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

static uint64_t guest_now(void *ctx)
{
	(void)ctx;
	return mono() + OFF;
}

static void *host_area(void)
{
	return (char *)base + vn_dtl_area_offset(SIZE);
}

static void setup(void)
{
	char path[128];
	int fd;

	snprintf(name, sizeof(name), "vnoise-unit-gc-%d", (int)getpid());
	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, SIZE), 0);
	base = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(base, MAP_FAILED);
	close(fd);
	atomic_store(&stop, 0);
	atomic_store(&answers, 0);
}

static void teardown(void)
{
	char path[128];

	munmap(base, SIZE);
	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	unlink(path);
}

/* The guest responder: answers every request with its clock (host + OFF). */
static void *responder(void *arg)
{
	struct dtl_reader *r = dtlreader_new(host_area(), SIZE / 2);
	uint64_t seq, send;

	(void)arg;
	if (!r)
		return NULL;
	while (!atomic_load(&stop)) {
		if (dtlreader_sync(r) >= 0 && dtlreader_request(r, &seq, &send) == 1) {
			dtlreader_reply(r, host_area(), seq, send, mono() + OFF, 1);
			atomic_fetch_add(&answers, 1);
		}
		usleep(20);
	}
	dtlreader_free(r);
	return NULL;
}

static struct guestchan *chan(bool match)
{
	struct guestchan_opts o = {
		.match = match, .dispatch = true, .detail = VN_DTL_DETAIL_TASK, .period_ns = S
	};
	char why[256];
	struct guestchan *gc = guestchan_open(name, 0, 2, &o, why, sizeof(why));

	ck_assert_msg(gc != NULL, "guestchan_open: %s", why);
	return gc;
}

/* Rounds as vnoise-host's loop runs them, for dur. */
static void run_rounds(struct guestchan *gc, uint64_t dur)
{
	uint64_t end = mono() + dur, t;

	while ((t = mono()) < end) {
		guestchan_clock(gc, t);
		guestchan_tick(gc, t, t);
		usleep(5000);
	}
}

static struct dtl_reader *guest_reader(void)
{
	struct dtl_reader *r = dtlreader_new(host_area(), SIZE / 2);

	ck_assert_ptr_nonnull(r);
	dtlreader_set_clock(r, guest_now, NULL);
	ck_assert_int_eq(dtlreader_sync(r), 1);
	return r;
}

static struct vn_dtl_entry last;
static int nlast;

static void on_entry(void *ctx, uint32_t vcpu, const struct vn_dtl_entry *e)
{
	(void)ctx;
	(void)vcpu;
	last = *e;
	nlast++;
}

static void clock_through_mailbox(bool match)
{
	struct guestchan *gc = chan(match);
	struct dtlctl_info info;
	struct dtl_reader *r;
	struct vn_dtl_status st;
	struct vn_dtl_cause c;
	pthread_t th;
	uint64_t t;
	int64_t err;

	ck_assert_int_eq(pthread_create(&th, NULL, responder, NULL), 0);
	run_rounds(gc, 1500 * MS);
	ck_assert_int_ge(atomic_load(&answers), 10);
	r = guest_reader();
	ck_assert_int_eq(dtlreader_status(r, &st), 0);
	ck_assert_uint_eq(st.flags & VN_DTL_S_CLOCK, VN_DTL_S_CLOCK);
	err = st.offset_ns - (int64_t)OFF;
	ck_assert_msg(err < (int64_t)MS && err > -(int64_t)MS, "offset off by %lld ns",
		      (long long)err);
	ck_assert_uint_gt(st.horizon_ns, OFF);
	/* a run and its piece, fed as the dispatch log does: published in guest time */
	t = mono();
	guestchan_host_run(gc, 0, t - 300 * US, t - 200 * US, 4242, "hog", 0);
	guestchan_host_out(gc, 0, t - 400 * US, t - 200 * US, 'R', 0);
	nlast = 0;
	while (dtlreader_poll(r, 0, on_entry, NULL, 64) > 0)
		;
	ck_assert_int_eq(nlast, 2);
	ck_assert_uint_eq(last.cls, VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(last.kind, VN_DTL_KIND_PREEMPTED);
	err = (int64_t)(last.end_ns - (t - 200 * US + OFF));
	ck_assert_msg(err < (int64_t)MS && err > -(int64_t)MS, "entry end off by %lld ns",
		      (long long)err);
	ck_assert_int_eq(dtlreader_cause(r, last.cause, &c), 0);
	ck_assert_str_eq(c.comm, "hog");
	ck_assert_uint_eq(c.pid, 4242);
	guestchan_dtl_info(gc, &info);
	ck_assert_int_eq(info.state, DTLCTL_ON);
	ck_assert_uint_eq(info.published, 2);
	ck_assert_uint_ne(info.epoch, 0);
	ck_assert_uint_eq(info.detail, VN_DTL_DETAIL_TASK);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	dtlreader_free(r);
	guestchan_close(gc);
}

START_TEST(test_clock_publish_only)
{
	clock_through_mailbox(false);
}
END_TEST

START_TEST(test_clock_with_guest)
{
	clock_through_mailbox(true);
}
END_TEST

/* Nobody answers: no mapping (pieces dropped), and the host stops watching the mailbox for answers. */
START_TEST(test_no_responder)
{
	struct guestchan *gc = chan(false);
	struct vn_host_match ms[2];
	struct vn_host_chan ch;
	struct dtlctl_info info;
	size_t n = 0;
	uint64_t t0 = mono(), t;

	run_rounds(gc, 600 * MS);
	/* about 6 exchanges abandoned: at most UNANSWERED_SPIN of them watched for 300 us */
	ck_assert_uint_lt(mono() - t0, 700 * MS);
	t = mono();
	guestchan_host_out(gc, 1, t - 100 * US, t, 'S', 0);
	guestchan_dtl_info(gc, &info);
	ck_assert_uint_eq(info.published, 0);
	ck_assert_uint_eq(info.dropped, 1);
	/* publish-only: no matching records */
	guestchan_period(gc, t0, t, ms, NULL, &n, &ch);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(ms[1].gaps, 0);
	guestchan_close(gc);
}
END_TEST

START_TEST(test_v1_agent_owns_region)
{
	struct vn_shm_header *h = base;
	const struct vn_dtl_header *dh = host_area();
	struct guestchan *gc;
	struct dtlctl_info info;
	uint64_t e1;

	h->version = 1;
	h->epoch = 5;
	gc = chan(false);
	run_rounds(gc, 20 * MS);
	guestchan_dtl_info(gc, &info);
	ck_assert_int_eq(info.state, DTLCTL_V1);
	ck_assert_uint_eq(info.epoch, 0);
	ck_assert_uint_eq(dh->host_epoch, 0); /* the upper half untouched */
	ck_assert_uint_eq(dh->magic[0], 0);
	/* the agent stops (epoch 0): published */
	__atomic_store_n(&h->epoch, 0, __ATOMIC_RELEASE);
	run_rounds(gc, 20 * MS);
	guestchan_dtl_info(gc, &info);
	ck_assert_int_eq(info.state, DTLCTL_ON);
	ck_assert_uint_ne(info.epoch, 0);
	ck_assert_int_eq(memcmp(dh->magic, VN_DTL_MAGIC, VN_DTL_MAGIC_LEN), 0);
	e1 = dh->host_epoch;
	ck_assert_uint_eq(e1, info.epoch);
	/* a v1 agent again: stopped; a v2 agent: published again, in a new host epoch */
	__atomic_store_n(&h->epoch, 6, __ATOMIC_RELEASE);
	run_rounds(gc, 20 * MS);
	guestchan_dtl_info(gc, &info);
	ck_assert_int_eq(info.state, DTLCTL_V1);
	h->version = 2;
	__atomic_store_n(&h->epoch, 7, __ATOMIC_RELEASE);
	run_rounds(gc, 20 * MS);
	guestchan_dtl_info(gc, &info);
	ck_assert_int_eq(info.state, DTLCTL_ON);
	ck_assert_uint_gt(dh->host_epoch, e1);
	guestchan_close(gc);
}
END_TEST

START_TEST(test_one_publisher)
{
	const struct vn_dtl_header *dh = host_area();
	struct guestchan *a = chan(false), *b;
	struct dtlctl_info info;
	uint64_t ea;

	run_rounds(a, 20 * MS);
	ea = dh->host_epoch;
	ck_assert_uint_ne(ea, 0);
	b = chan(false);
	run_rounds(b, 20 * MS);
	guestchan_dtl_info(b, &info);
	ck_assert_int_eq(info.state, DTLCTL_BUSY);
	ck_assert_uint_eq(dh->host_epoch, ea);
	/* the publisher goes away: the other one takes over within a second, in a new epoch */
	guestchan_close(a);
	run_rounds(b, 1100 * MS);
	guestchan_dtl_info(b, &info);
	ck_assert_int_eq(info.state, DTLCTL_ON);
	ck_assert_uint_gt(dh->host_epoch, ea);
	guestchan_close(b);
}
END_TEST

static void put_sample(struct shm_writer *w, uint64_t start, uint64_t end, uint8_t kind)
{
	struct vn_sample s = { .start_ns = start, .end_ns = end, .kind = kind };

	ck_assert_int_eq(shmwriter_put_sample(w, 0, &s), 0);
}

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

/* QEMU's end of the bell: a listening unix socket at path (returned), accepting on demand. */
static int bell_listen(char *path, size_t cap)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(path, cap, "/tmp/vnoise-unit-bell-%d.sock", (int)getpid());
	unlink(path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	return fd;
}

static uint64_t arm_seq(void)
{
	const struct vn_dtl_header *h = host_area();

	return __atomic_load_n(&h->bell.arm_seq, __ATOMIC_ACQUIRE);
}

static enum chanbell_state bell_state(struct guestchan *gc, uint64_t *rings)
{
	struct chanbell_info b;

	guestchan_bell_info(gc, &b);
	if (rings)
		*rings = b.rings;
	return b.state;
}

/*
 * The bell, with the test as QEMU (the socket) and as the agent (the rings): the channel connects and arms
 * once, stays on the short round until the agent rang; then it hands out the bell's fd while nothing waits,
 * and the short round again, unarmed, while a gap waits for the host's horizon; a flood of bytes is one ring; QEMU
 * hanging up closes it (short round); no bell: short round; no agent publishing: idle.
 */
START_TEST(test_bell)
{
	struct shm_writer *w = shmwriter_init(base, SIZE, 2, 256, 99);
	char path[108], flood[8192];
	struct guestchan *gc;
	uint64_t t, g, a, rings;
	pthread_t th;
	int lfd = bell_listen(path, sizeof(path)), qfd, fd;

	struct vn_shm_status st = { .agent_state = VN_SHM_AGENT_RUNNING, .guest_ncpus = 2 };

	ck_assert_ptr_nonnull(w);
	shmwriter_set_status(w, &st);
	gc = chan(true);
	ck_assert_int_eq(pthread_create(&th, NULL, responder, NULL), 0);
	run_rounds(gc, 1500 * MS); /* attached, clock aligned */
	ck_assert_int_eq(bell_state(gc, NULL), CHANBELL_NONE);
	ck_assert_int_eq(guestchan_bell_arm(gc, mono(), true), GUESTCHAN_BUSY); /* no bell */
	ck_assert_uint_eq(arm_seq(), 0);
	guestchan_set_bell(gc, path);
	ck_assert_int_eq(guestchan_bell_arm(gc, mono(), true), GUESTCHAN_BUSY); /* not heard yet */
	qfd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(qfd, 0);
	ck_assert_int_eq(bell_state(gc, NULL), CHANBELL_SILENT);
	a = arm_seq();
	ck_assert_uint_eq(a, 1);
	ck_assert_int_eq(guestchan_bell_arm(gc, mono(), true), GUESTCHAN_BUSY);
	ck_assert_uint_eq(arm_seq(), a); /* armed already: not again */
	/* the agent's first ring: heard; armed again; the fd to sleep on */
	ck_assert_int_eq(write(qfd, "\a", 1), 1);
	fd = guestchan_bell_arm(gc, mono(), true);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bell_state(gc, &rings), CHANBELL_HEARD);
	ck_assert_uint_eq(rings, 1);
	ck_assert_uint_eq(arm_seq(), a + 1);
	/* a gap the host's horizon has not passed: the short round; once passed, the bell again */
	t = mono();
	g = t + OFF;
	put_sample(w, g - 2 * MS, g - 1 * MS, VN_SAMPLE_GAP);
	shmwriter_set_horizon(w, 0, g);
	shmwriter_set_horizon(w, 1, g);
	ck_assert_int_eq(write(qfd, "\a", 1), 1);
	guestchan_bell_heard(gc, POLLIN, mono());
	ck_assert_int_eq(bell_state(gc, &rings), CHANBELL_HEARD);
	ck_assert_uint_eq(rings, 2);
	guestchan_tick(gc, mono(), t - 10 * MS);
	ck_assert_int_eq(guestchan_bell_arm(gc, mono(), true), GUESTCHAN_BUSY);
	ck_assert_uint_eq(arm_seq(), a + 1); /* the short round reads: not armed meanwhile */
	guestchan_tick(gc, mono(), mono());
	ck_assert_int_eq(guestchan_bell_arm(gc, mono(), true), fd);
	ck_assert_uint_eq(arm_seq(), a + 2);
	/* a guest writing without pause: one ring per read-out, the rest discarded */
	memset(flood, 'x', sizeof(flood));
	ck_assert_int_eq(write(qfd, flood, sizeof(flood)), (int)sizeof(flood));
	ck_assert_int_eq(guestchan_bell_arm(gc, mono(), true), fd);
	ck_assert_int_eq(bell_state(gc, &rings), CHANBELL_HEARD);
	ck_assert_uint_eq(rings, 3);
	/* the monitor on its short round (rings coming fast): read out, not armed again */
	a = arm_seq();
	ck_assert_int_eq(write(qfd, "\a", 1), 1);
	ck_assert_int_eq(guestchan_bell_arm(gc, mono(), false), GUESTCHAN_BUSY);
	ck_assert_uint_eq(arm_seq(), a);
	ck_assert_int_eq(bell_state(gc, &rings), CHANBELL_HEARD);
	ck_assert_uint_eq(rings, 4);
	ck_assert_int_eq(guestchan_bell_arm(gc, mono(), true), fd);
	ck_assert_uint_eq(arm_seq(), a + 1);
	/* QEMU hangs up: closed, the short round, connected again later */
	close(qfd);
	guestchan_bell_heard(gc, POLLIN | POLLHUP, mono());
	ck_assert_int_eq(bell_state(gc, NULL), CHANBELL_UNCONNECTED);
	ck_assert_int_eq(guestchan_bell_arm(gc, mono(), true), GUESTCHAN_BUSY);
	/* an agent that says it is not measuring: nothing to wait for */
	st.agent_state = VN_SHM_AGENT_PAUSED;
	shmwriter_set_status(w, &st);
	ck_assert_int_eq(guestchan_bell_arm(gc, mono(), true), GUESTCHAN_IDLE);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	guestchan_close(gc);
	shmwriter_free(w);
	/* no agent publishing (epoch 0): nothing to wait for */
	memset(base, 0, SIZE / 2);
	gc = chan(true);
	guestchan_set_bell(gc, path);
	guestchan_tick(gc, mono(), mono());
	ck_assert_int_eq(guestchan_bell_arm(gc, mono(), true), GUESTCHAN_IDLE);
	guestchan_close(gc);
	close(lfd);
	unlink(path);
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
	TCase *tc = tcase_create("dtl");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_clock_publish_only);
	tcase_add_test(tc, test_clock_with_guest);
	tcase_add_test(tc, test_no_responder);
	tcase_add_test(tc, test_v1_agent_owns_region);
	tcase_add_test(tc, test_one_publisher);
	tcase_add_test(tc, test_streams_ordered_apart);
	tcase_add_test(tc, test_bell);
	tcase_add_test(tc, test_open_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(guestchan_suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
