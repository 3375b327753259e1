/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/regiontrust: qemu.conf's user (comments, other keys, the last setting, malformed
 * values), and which owners and modes a region file may have.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "check_main.h"
#include "match/regiontrust.h"

START_TEST(test_conf_user)
{
	char u[64];

	ck_assert_int_eq(
	    regiontrust_conf_user("#user = \"root\"\nuser = \"libvirt-qemu\"\n", u, sizeof(u)), 0);
	ck_assert_str_eq(u, "libvirt-qemu");
	ck_assert_int_eq(regiontrust_conf_user("user=\"a\"\n  user = \"+107\"", u, sizeof(u)), 0);
	ck_assert_str_eq(u, "+107");
	ck_assert_int_eq(regiontrust_conf_user(
			     "user_ns = \"x\"\n# user = \"root\"\ngroup = \"kvm\"\n", u, sizeof(u)),
			 -ENOENT);
	ck_assert_int_eq(regiontrust_conf_user("", u, sizeof(u)), -ENOENT);
	ck_assert_int_eq(regiontrust_conf_user("user = root\n", u, sizeof(u)), -EINVAL);
	ck_assert_int_eq(regiontrust_conf_user("user = \"open\n", u, sizeof(u)), -EINVAL);
	ck_assert_int_eq(regiontrust_conf_user("user = \"toolong\"", u, 4), -EINVAL);
}
END_TEST

START_TEST(test_resolve)
{
	struct regiontrust_who w;

	regiontrust_resolve("root", &w);
	ck_assert(w.known && w.uid == 0 && w.has_gid && w.gid == 0);
	regiontrust_resolve("+4242", &w);
	ck_assert(w.known && w.uid == 4242);
	regiontrust_resolve("vnoise-no-such-user", &w);
	ck_assert(!w.known);
}
END_TEST

static struct stat file(uid_t uid, gid_t gid, mode_t mode)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_uid = uid;
	st.st_gid = gid;
	st.st_mode = S_IFREG | mode;
	return st;
}

START_TEST(test_check)
{
	struct regiontrust_who q = { .known = true, .has_gid = true, .uid = 107, .gid = 108 };
	char why[128];
	struct stat st;

	snprintf(q.name, sizeof(q.name), "libvirt-qemu");
	st = file(0, 0, 0644);
	ck_assert_int_eq(regiontrust_check(&st, &q, 0, why, sizeof(why)), 0);
	st = file(107, 108, 0660);
	ck_assert_int_eq(regiontrust_check(&st, &q, 0, why, sizeof(why)), 0);
	st = file(0, 108, 0664);
	ck_assert_int_eq(regiontrust_check(&st, &q, 0, why, sizeof(why)), 0);
	st = file(1000, 1000, 0600); /* vnoise-host's own user */
	ck_assert_int_eq(regiontrust_check(&st, &q, 1000, why, sizeof(why)), 0);
	st = file(1000, 1000, 0600);
	ck_assert_int_eq(regiontrust_check(&st, &q, 0, why, sizeof(why)), -EACCES);
	ck_assert_str_eq(why, "owner uid 1000, not root or libvirt-qemu");
	st = file(0, 0, 0666);
	ck_assert_int_eq(regiontrust_check(&st, &q, 0, why, sizeof(why)), -EACCES);
	ck_assert_str_eq(why, "writable by others (mode 0666)");
	st = file(0, 100, 0660);
	ck_assert_int_eq(regiontrust_check(&st, &q, 0, why, sizeof(why)), -EACCES);
	ck_assert_str_eq(why, "writable by its group (mode 0660)");
	st = file(0, 0, 0644);
	st.st_mode = S_IFIFO | 0600;
	ck_assert_int_eq(regiontrust_check(&st, &q, 0, why, sizeof(why)), -EACCES);
	ck_assert_str_eq(why, "not a regular file");
	q.known = q.has_gid = false; /* QEMU's user unknown here: root only */
	st = file(107, 0, 0600);
	ck_assert_int_eq(regiontrust_check(&st, &q, 0, why, sizeof(why)), -EACCES);
	ck_assert_str_eq(why, "owner uid 107, not root");
}
END_TEST

static Suite *regiontrust_suite(void)
{
	Suite *s = suite_create("regiontrust");
	TCase *tc = tcase_create("trust");

	tcase_add_test(tc, test_conf_user);
	tcase_add_test(tc, test_resolve);
	tcase_add_test(tc, test_check);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(regiontrust_suite());
}
