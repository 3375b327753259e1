/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/mpi/tracebuf: a buffer whose last record ends where an inaccessible page begins
 * takes TRACEBUF_RECS records and refuses the next one without touching the page; a count moved past the
 * bound (a nested call from a signal handler) is refused too and clamped for the writer.
 */
#include <check.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "check_main.h"
#include "mpi/tracebuf.h"

static void *map;
static size_t maplen;

/* A tracebuf ending exactly at a PROT_NONE guard page: one byte past it faults. */
static struct tracebuf *guarded(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE),
	       body = (sizeof(struct tracebuf) + ps - 1) / ps * ps;
	char *guard;

	maplen = body + ps;
	map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	guard = (char *)map + body;
	ck_assert_int_eq(mprotect(guard, ps, PROT_NONE), 0);
	return (struct tracebuf *)(guard - sizeof(struct tracebuf));
}

static void unguard(void)
{
	munmap(map, maplen);
}

START_TEST(test_fill)
{
	struct tracebuf *b = guarded();
	struct vn_app_call r;

	b->n = 0;
	memset(&r, 0, sizeof(r));
	for (uint32_t i = 0; i < TRACEBUF_RECS; i++) {
		ck_assert(!tracebuf_full(b));
		r.start_ns = i;
		ck_assert_int_eq(tracebuf_put(b, &r), 0);
	}
	ck_assert(tracebuf_full(b));
	ck_assert_uint_eq(tracebuf_count(b), TRACEBUF_RECS);
	r.start_ns = 99999;
	ck_assert_int_eq(tracebuf_put(b, &r), -ENOBUFS); /* the guard page is not touched */
	ck_assert_uint_eq(b->n, TRACEBUF_RECS);
	ck_assert_uint_eq(b->rec[TRACEBUF_RECS - 1].start_ns, TRACEBUF_RECS - 1);
	ck_assert_uint_eq(b->rec[0].start_ns, 0);
	unguard();
}
END_TEST

START_TEST(test_count_past_bound)
{
	struct tracebuf *b = guarded();
	struct vn_app_call r;

	memset(&r, 0, sizeof(r));
	b->n = TRACEBUF_RECS + 3;
	ck_assert(tracebuf_full(b));
	ck_assert_int_eq(tracebuf_put(b, &r), -ENOBUFS);
	ck_assert_uint_eq(tracebuf_count(b),
			  TRACEBUF_RECS); /* the writer reads no further than the buffer */
	b->n = 0;
	ck_assert_uint_eq(tracebuf_count(b), 0);
	ck_assert_int_eq(tracebuf_put(b, &r), 0);
	ck_assert_uint_eq(tracebuf_count(b), 1);
	unguard();
}
END_TEST

static Suite *tracebuf_suite(void)
{
	Suite *s = suite_create("tracebuf");
	TCase *tc = tcase_create("bound");

	tcase_add_test(tc, test_fill);
	tcase_add_test(tc, test_count_past_bound);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(tracebuf_suite());
}
