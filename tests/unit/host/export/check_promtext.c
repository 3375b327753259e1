/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/export/promtext (the published exposition text): a copy is the last text published;
 * a text bigger than the first buffer is rendered again into a bigger one, from scratch; a render that never
 * fits (beyond HTTPD_BODY_MAX) or a failing one keeps the previous text; a copy into a buffer too small says
 * so; and a reader copying while the owner publishes over and over only ever sees whole texts.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "check_main.h"
#include "export/httpd.h"
#include "export/promtext.h"

struct gen {
	size_t len; /* bytes to write; > the buffer: -ENOSPC */
	char c;
	int calls;
	int fail; /* -EIO whatever the buffer */
};

/* len bytes of c and a newline (len + 1 in all), or -ENOSPC */
static int gen(void *ctx, struct bufout *o)
{
	struct gen *g = ctx;

	g->calls++;
	if (g->fail)
		return -EIO;
	if (g->len + 2 > o->len)
		return -ENOSPC;
	memset(o->buf, g->c, g->len);
	o->buf[g->len] = '\n';
	o->buf[g->len + 1] = 0;
	o->off = g->len + 1;
	return 0;
}

static char out[1 << 20];

static size_t copy(struct promtext *p)
{
	struct bufout o = { out, sizeof(out), 0, 0 };

	ck_assert_int_eq(promtext_copy(p, &o), 0);
	return o.off;
}

START_TEST(test_publish_copy)
{
	struct promtext p;
	struct gen g = { .len = 10, .c = 'a' };
	struct bufout small = { out, 5, 0, 0 };
	const char *t;
	size_t len;

	promtext_init(&p);
	ck_assert_ptr_null(promtext_current(&p, &len));
	ck_assert_uint_eq(copy(&p), 0); /* nothing published yet: an empty text */
	ck_assert_int_eq(promtext_publish(&p, gen, &g), 0);
	ck_assert_uint_eq(copy(&p), 11);
	ck_assert_str_eq(out, "aaaaaaaaaa\n");
	t = promtext_current(&p, &len);
	ck_assert_uint_eq(len, 11);
	ck_assert(!memcmp(t, "aaaaaaaaaa\n", 11));
	ck_assert_int_eq(promtext_copy(&p, &small), -ENOSPC);
	ck_assert(small.full);
	/* bigger than the first buffer: rendered again from scratch into one twice as big */
	g = (struct gen){ .len = HTTPD_BODY_MIN + 100, .c = 'b' };
	ck_assert_int_eq(promtext_publish(&p, gen, &g), 0);
	ck_assert_int_eq(g.calls, 2);
	ck_assert_uint_eq(copy(&p), HTTPD_BODY_MIN + 101);
	ck_assert_int_eq(out[0], 'b');
	ck_assert_int_eq(out[HTTPD_BODY_MIN + 99], 'b');
	/* a render that fails, or never fits: the previous text stays */
	g = (struct gen){ .len = 3, .c = 'c', .fail = 1 };
	ck_assert_int_eq(promtext_publish(&p, gen, &g), -EIO);
	ck_assert_int_eq(g.calls, 1);
	g = (struct gen){ .len = HTTPD_BODY_MAX, .c = 'd' };
	ck_assert_int_eq(promtext_publish(&p, gen, &g), -EFBIG);
	ck_assert_uint_eq(copy(&p), HTTPD_BODY_MIN + 101);
	ck_assert_int_eq(out[0], 'b');
	promtext_free(&p);
}
END_TEST

struct race {
	struct promtext *p;
	volatile int stop;
	long copies, torn;
};

static void *reader(void *arg)
{
	static char buf[1 << 16];
	struct race *r = arg;

	while (!r->stop) {
		struct bufout o = { buf, sizeof(buf), 0, 0 };

		if (promtext_copy(r->p, &o) || !o.off)
			continue;
		r->copies++;
		/* whole: one letter throughout, its length that letter's */
		for (size_t i = 0; i + 1 < o.off; i++)
			if (buf[i] != buf[0]) {
				r->torn++;
				break;
			}
		if (o.off != (size_t)(buf[0] == 'x' ? 1001 : 30001))
			r->torn++;
	}
	return NULL;
}

START_TEST(test_no_torn_copy)
{
	struct promtext p;
	struct race r = { .p = &p };
	struct gen x = { .len = 1000, .c = 'x' }, y = { .len = 30000, .c = 'y' };
	pthread_t th;

	promtext_init(&p);
	ck_assert_int_eq(promtext_publish(&p, gen, &x), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, reader, &r), 0);
	for (int i = 0; i < 20000 || r.copies < 1000; i++)
		ck_assert_int_eq(promtext_publish(&p, gen, i % 2 ? &x : &y), 0);
	r.stop = 1;
	pthread_join(th, NULL);
	ck_assert_int_eq(r.torn, 0);
	ck_assert_int_ge(r.copies, 1000);
	promtext_free(&p);
}
END_TEST

static Suite *promtext_suite(void)
{
	Suite *s = suite_create("promtext");
	TCase *t = tcase_create("promtext");

	tcase_add_test(t, test_publish_copy);
	tcase_add_test(t, test_no_torn_copy);
	tcase_set_timeout(t, 30);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return check_main(promtext_suite());
}
