/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/chanbell, through the channel that owns it (host/match/guestchan) over a real
 * region file in /dev/shm and the agent's rings (shmwriter): the bell (a unix socket in the role of QEMU's):
 * when the monitor may sleep on it and when it must keep its short round.
 */
#include <check.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "check_main.h"
#include "guestchan_check.h"

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

static Suite *chanbell_suite(void)
{
	Suite *s = suite_create("chanbell");
	TCase *tc = tcase_create("bell");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_bell);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(chanbell_suite());
}
