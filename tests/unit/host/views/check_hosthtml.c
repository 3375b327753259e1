/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/views/hosthtml: record chunks as the report reads them (through the engine and the
 * page's collector), then the page: hostile domain and task names escaped, the preemptors summed over vCPUs
 * and sorted, out intervals cut at a period boundary joined in the histogram, records naming domains or vCPUs
 * out of range or with inverted times passed over, the combined view's split and clock uncertainty, empty
 * data, and a write that cannot happen (nothing left behind).
 */
#include <check.h>
#include "check_main.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "noise.h"
#include "views/hosthtml.h"

#define MS 1000000ull
#define S 1000000000ull

static char dir[] = "/tmp/hosthtml.XXXXXX";
static char path[256];

static void setup(void)
{
	strcpy(dir, "/tmp/hosthtml.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/page.html", dir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

/* The page at path as a string (free it). */
static char *slurp(void)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 22);
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, (1 << 22) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static int count(const char *s, const char *what)
{
	int n = 0;

	while ((s = strstr(s, what))) {
		n++;
		s += strlen(what);
	}
	return n;
}

/* Feed one record array chunk to the engine and the collector, as hostrec does. */
static void feed(struct hostagg *a, struct hosthtml *h, uint16_t type, const void *rec, size_t len)
{
	ck_assert_int_ge(hostagg_feed_chunk(a, type, rec, len), 0);
	ck_assert_int_eq(hosthtml_chunk(h, type, rec, len), 0);
}

static void period(struct hostagg *a, struct hosthtml *h, uint32_t dom, uint32_t vcpu, int k,
		   uint64_t out_r_ns)
{
	struct vn_host_period p = { .start_ns = 10 * S + (uint64_t)k * S,
				    .end_ns = 10 * S + (uint64_t)(k + 1) * S,
				    .dom = dom,
				    .vcpu = vcpu,
				    .out_r_ns = out_r_ns,
				    .out_ns = out_r_ns,
				    .flags = VN_HOST_PERIOD_F_SCHEDLOG };

	feed(a, h, VN_CHUNK_HOST_PERIOD, &p, sizeof(p));
}

/* A run of a host task inside an out interval of (dom, vcpu), and the interval itself. */
static void preempt(struct hostagg *a, struct hosthtml *h, uint32_t vcpu, uint64_t t, uint64_t len,
		    uint32_t pid, const char *comm, uint8_t flags)
{
	struct vn_host_out o = {
		.start_ns = t, .end_ns = t + len, .vcpu = vcpu, .state = 'R', .flags = flags
	};
	struct vn_host_run r = {
		.start_ns = t, .end_ns = t + len, .out_start_ns = t, .vcpu = vcpu, .pid = pid
	};

	memcpy(r.comm, comm, strnlen(comm, VN_HOST_COMM_LEN));
	feed(a, h, VN_CHUNK_HOST_OUT, &o, sizeof(o));
	feed(a, h, VN_CHUNK_HOST_RUN, &r, sizeof(r));
}

/* A host task that ran while (dom 0, vcpu) was halted: a blocked interval, its run before the wakeup. */
static void halted(struct hostagg *a, struct hosthtml *h, uint32_t vcpu, uint64_t t, uint64_t len,
		   uint32_t pid, const char *comm)
{
	struct vn_host_out o = { .start_ns = t, .end_ns = t + len, .vcpu = vcpu, .state = 'S' };
	struct vn_host_run r = { .start_ns = t,
				 .end_ns = t + len,
				 .out_start_ns = t,
				 .vcpu = vcpu,
				 .pid = pid,
				 .flags = VN_HOST_RUN_F_HALTED };

	memcpy(r.comm, comm, strnlen(comm, VN_HOST_COMM_LEN));
	feed(a, h, VN_CHUNK_HOST_OUT, &o, sizeof(o));
	feed(a, h, VN_CHUNK_HOST_RUN, &r, sizeof(r));
}

static struct hostagg *engine(void)
{
	struct hostagg *a = hostagg_new();

	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(
	    hostagg_domain(a, 0, "<script>alert(1)</script>", "u", "qemu", 1, 2, "started"), 0);
	return a;
}

static const struct hostinfo info = { .source = "x<y>.rec",
				      .start_ns = 10 * S,
				      .end_ns = 20 * S,
				      .period_ns = S,
				      .dispatch = "bpf",
				      .top_n = 5 };

START_TEST(host_page)
{
	struct hostagg *a = engine();
	struct hosthtml *h = hosthtml_new();
	struct vn_host_period bad = { .start_ns = 5, .end_ns = 1, .dom = 9999, .vcpu = 9999 };
	char *o;
	int k;

	ck_assert_ptr_nonnull(h);
	for (k = 0; k < 10; k++) {
		period(a, h, 0, 0, k, 250 * MS);
		period(a, h, 0, 1, k, k == 4 ? 500 * MS : 0);
	}
	hostagg_feed_chunk(a, VN_CHUNK_HOST_PERIOD, &bad, sizeof(bad));
	ck_assert_int_eq(hosthtml_chunk(h, VN_CHUNK_HOST_PERIOD, &bad, sizeof(bad)), 0);
	ck_assert_int_eq(hosthtml_chunk(h, VN_CHUNK_HOST_PERIOD, &bad, 7), 0); /* bad length */
	/* "<img src=x>" ran 3 ms on vCPU 0 and 2 ms on vCPU 1; "hog" 4 ms on vCPU 0 */
	preempt(a, h, 0, 11 * S, 3 * MS, 77, "<img src=x>", 0);
	preempt(a, h, 1, 12 * S, 2 * MS, 77, "<img src=x>", 0);
	preempt(a, h, 0, 13 * S, 4 * MS, 88, "hog", 0);
	/* an interval cut at a period boundary: 1 ms + 2 ms joined into one 3 ms interval */
	preempt(a, h, 1, 15 * S - MS, MS, 99, "cut", VN_HOST_OUT_F_SPLIT);
	preempt(a, h, 1, 15 * S, 2 * MS, 99, "cut", VN_HOST_OUT_F_CONT);
	/* "idler" ran 6 ms beside a halted vCPU 1: the longest run, and no preemptor */
	halted(a, h, 1, 17 * S, 6 * MS, 55, "idler");
	ck_assert_int_eq(hosthtml_write(h, a, &info, false, NULL, path), 0);
	o = slurp();
	ck_assert_ptr_null(strstr(o, "<script>alert"));
	ck_assert_ptr_null(strstr(o, "<img"));
	ck_assert_ptr_nonnull(strstr(o, "&lt;script&gt;alert(1)&lt;/script&gt; vCPU 0: out-time"));
	ck_assert_ptr_nonnull(strstr(o, "x&lt;y&gt;.rec"));
	ck_assert_ptr_nonnull(strstr(o, "<td>vCPUs</td><td>2</td>"));
	ck_assert_int_eq(count(o, "<svg class=\"plot timeline\""), 2);
	/* preempted is what other tasks ran while the vCPU was runnable (the runs), not the periods' 25% and
	 * 50% switched out in state R: vCPU 0 3 ms at 1 s and 4 ms at 3 s; vCPU 1 2 ms at 2 s, the cut interval
	 * 1 ms at 4 s and 2 ms at 5 s */
	ck_assert_int_eq(count(o, "<title>preempted "), 5);
	ck_assert_int_eq(count(o, "<title>preempted 0.30% at 1 s</title>"), 1);
	ck_assert_int_eq(count(o, "<title>preempted 0.40% at 3 s</title>"), 1);
	ck_assert_int_eq(count(o, "<title>preempted 0.20% at 2 s</title>"), 1);
	ck_assert_int_eq(count(o, "<title>preempted 0.10% at 4 s</title>"), 1);
	/* preemptors summed over vCPUs: <img src=x>[77] 5 ms (2 times) first, hog 4 ms, cut 3 ms */
	ck_assert_ptr_nonnull(strstr(o, "&lt;img src=x&gt;[77]</text>"));
	ck_assert_ptr_nonnull(strstr(o, ">5.00 ms (2 times)<"));
	ck_assert_ptr_nonnull(strstr(o, "&lt;img src=x&gt;[77]</title>"));
	ck_assert_ptr_nonnull(strstr(o, ">4.00 ms (1 times)<"));
	ck_assert(strstr(o, "&lt;img src=x&gt;[77]</title>") < strstr(o, "hog[88]</title>"));
	ck_assert(strstr(o, "hog[88]</title>") < strstr(o, "cut[99]</title>"));
	/* the task beside the halted vCPU is listed apart, after the preemptors */
	ck_assert_ptr_nonnull(strstr(o, "ran while the vCPU was halted (not preemptors)"));
	ck_assert_int_eq(count(o, "idler[55]</title>"), 1);
	ck_assert(strstr(o, "cut[99]</title>") < strstr(o, "ran while the vCPU was halted"));
	ck_assert(strstr(o, "ran while the vCPU was halted") < strstr(o, "idler[55]</title>"));
	ck_assert_ptr_nonnull(strstr(o, ">6.00 ms (1 times)<"));
	/* the histogram: [2^21, 2^22) ns holds the 3, 4 and 3 ms (joined) intervals, [2^20, 2^21) the 2 ms */
	ck_assert_ptr_nonnull(strstr(o, "preempted out intervals"));
	ck_assert_ptr_nonnull(strstr(o, "<title>2.10 ms .. 4.19 ms: 3</title>"));
	ck_assert_ptr_nonnull(strstr(o, "<title>1.05 ms .. 2.10 ms: 1</title>"));
	ck_assert_ptr_null(strstr(o, "<title>524 us")); /* the 1 ms piece is not counted alone */
	ck_assert_ptr_null(strstr(o, "://"));
	free(o);
	hosthtml_free(h);
	hostagg_free(a);
}
END_TEST

START_TEST(combined_page)
{
	struct hostagg *a = engine();
	struct hosthtml *h = hosthtml_new();
	char *o;
	int k;

	for (k = 0; k < 4; k++) {
		struct vn_host_match m = { .start_ns = 10 * S + (uint64_t)k * S,
					   .end_ns = 10 * S + (uint64_t)(k + 1) * S,
					   .vcpu = 0,
					   .runtime_ns = S,
					   .residual_ns = 10 * MS };
		struct vn_host_chan c = { .start_ns = m.start_ns,
					  .end_ns = m.end_ns,
					  .state = k ? VN_HOST_CHAN_OK : VN_HOST_CHAN_WAITING,
					  .clock_uncertainty_ns = k ? 5000 * (uint64_t)k : ~0ull };

		m.guest_ns[VN_CLASS_THREAD] = 20 * MS;
		m.host_ns[VN_HCLASS_HOST_PREEMPT] = 70 * MS;
		period(a, h, 0, 0, k, 70 * MS);
		feed(a, h, VN_CHUNK_HOST_MATCH, &m, sizeof(m));
		feed(a, h, VN_CHUNK_HOST_CHAN, &c, sizeof(c));
	}
	ck_assert_int_eq(hosthtml_write(h, a, &info, true, "cut short", path), 0);
	o = slurp();
	ck_assert_int_eq(count(o, "<title>guest 2.0% at"), 4);
	ck_assert_int_eq(count(o, "<title>host preempt 7.0% at"), 4);
	ck_assert_int_eq(count(o, "<title>hw (residual) 1.0% at"), 4);
	ck_assert_ptr_nonnull(strstr(o, "vCPU 1: the guest&#39;s noise"));
	/* vCPU 1: the guest did not measure it, and the page says so */
	ck_assert_int_eq(count(o, ">no data: the guest&#39;s sampler did not run on this vCPU"), 1);
	/* the clock: no model in the first period (a break), then 5, 10, 15 us */
	ck_assert_ptr_nonnull(strstr(o, "clock uncertainty"));
	ck_assert_int_eq(count(o, "<path"), 1);
	ck_assert_ptr_nonnull(strstr(o, ">20.0 us<")); /* the axis top */
	ck_assert_ptr_nonnull(strstr(o, "<td>partial file</td><td>cut short</td>"));
	free(o);
	hosthtml_free(h);
	hostagg_free(a);
}
END_TEST

START_TEST(empty_and_errors)
{
	struct hostagg *a = hostagg_new();
	struct hosthtml *h = hosthtml_new();
	char bad[300], *o;

	ck_assert_int_eq(hosthtml_write(h, a, &info, false, NULL, path), 0);
	o = slurp();
	ck_assert_ptr_nonnull(strstr(o, "<td>vCPUs</td><td>0</td>"));
	ck_assert_ptr_nonnull(strstr(o, "<td>domains</td><td>none</td>"));
	ck_assert_ptr_nonnull(strstr(o, ">no data<"));
	ck_assert_ptr_nonnull(strstr(o, ">(none)<"));
	ck_assert_ptr_nonnull(strstr(o, "</html>"));
	free(o);
	snprintf(bad, sizeof(bad), "%s/no/such/page.html", dir);
	ck_assert_int_eq(hosthtml_write(h, a, &info, false, NULL, bad), -ENOENT);
	hosthtml_free(h);
	hosthtml_free(NULL);
	hostagg_free(a);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hosthtml");
	TCase *tc = tcase_create("page");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, host_page);
	tcase_add_test(tc, combined_page);
	tcase_add_test(tc, empty_and_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite());
}
