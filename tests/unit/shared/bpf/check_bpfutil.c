/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/bpf/bpfutil, without privileges: the libbpf message filter, the attach-target probe
 * against a BTF built here, leaving out the programs of a real BPF object (the guest kernel helper, opened,
 * never loaded; BPFUTIL_TEST_OBJ is its path) and the run-statistics bookkeeping.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "bpf/bpfutil.h"

/* A kernel with the tracepoints sched_switch and irq_handler_entry, and the function kvm_wait. */
static struct btf *small_kernel(bool with_switch)
{
	struct btf *b = btf__new_empty();
	int int_id, proto;

	ck_assert_ptr_nonnull(b);
	int_id = btf__add_int(b, "int", 4, BTF_INT_SIGNED);
	ck_assert_int_gt(int_id, 0);
	if (with_switch)
		ck_assert_int_gt(btf__add_typedef(b, "btf_trace_sched_switch", int_id), 0);
	ck_assert_int_gt(btf__add_typedef(b, "btf_trace_irq_handler_entry", int_id), 0);
	proto = btf__add_func_proto(b, int_id);
	ck_assert_int_gt(proto, 0);
	ck_assert_int_gt(btf__add_func(b, "kvm_wait", BTF_FUNC_GLOBAL, proto), 0);
	return b;
}

START_TEST(test_print_levels)
{
	/* quiet by default; -v: warnings and info; -vv: debug too */
	ck_assert(!bpfutil_print_wanted(LIBBPF_WARN, -1));
	ck_assert(!bpfutil_print_wanted(LIBBPF_WARN, 0));
	ck_assert(!bpfutil_print_wanted(LIBBPF_INFO, 0));
	ck_assert(!bpfutil_print_wanted(LIBBPF_DEBUG, 0));
	ck_assert(bpfutil_print_wanted(LIBBPF_WARN, 1));
	ck_assert(bpfutil_print_wanted(LIBBPF_INFO, 1));
	ck_assert(!bpfutil_print_wanted(LIBBPF_DEBUG, 1));
	ck_assert(bpfutil_print_wanted(LIBBPF_DEBUG, 2));
	ck_assert(bpfutil_print_wanted(LIBBPF_WARN, 3));
}
END_TEST

START_TEST(test_has_target)
{
	struct btf *b = small_kernel(true);

	ck_assert(bpfutil_has_target(b, "tp_btf/sched_switch"));
	ck_assert(bpfutil_has_target(b, "tp_btf/irq_handler_entry"));
	ck_assert(!bpfutil_has_target(b, "tp_btf/nmi_handler"));
	ck_assert(bpfutil_has_target(b, "fentry/kvm_wait"));
	ck_assert(bpfutil_has_target(b, "fexit/kvm_wait"));
	ck_assert(!bpfutil_has_target(b, "fentry/kvm_kick_cpu"));
	ck_assert(!bpfutil_has_target(b, "fexit/kvm_kick_cpu"));
	/* the kinds are not mixed up: a tracepoint is a typedef, a function a FUNC */
	ck_assert(!bpfutil_has_target(b, "tp_btf/kvm_wait"));
	ck_assert(!bpfutil_has_target(b, "fentry/btf_trace_sched_switch"));
	ck_assert(!bpfutil_has_target(b, "tp_btf/"));
	/* other sections, or no BTF at all: loading will tell */
	ck_assert(bpfutil_has_target(b, "tracepoint/kvm/kvm_exit"));
	ck_assert(bpfutil_has_target(b, "kprobe/whatever"));
	ck_assert(bpfutil_has_target(NULL, "tp_btf/nmi_handler"));
	ck_assert(bpfutil_has_target(NULL, "fentry/kvm_kick_cpu"));
	btf__free(b);
}
END_TEST

static bool needs_switch(const char *sec)
{
	return !strcmp(sec, "tp_btf/sched_switch");
}

static bool autoload_of(struct bpf_object *obj, const char *sec)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		if (!strcmp(bpf_program__section_name(prog), sec))
			return bpf_program__autoload(prog);
	}
	ck_abort_msg("no program in section %s", sec);
	return false;
}

static void set_autoload(struct bpf_object *obj, const char *sec, bool on)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		if (!strcmp(bpf_program__section_name(prog), sec))
			bpf_program__set_autoload(prog, on);
	}
}

START_TEST(test_drop_missing)
{
	struct bpf_object *obj = bpf_object__open_file(BPFUTIL_TEST_OBJ, NULL);
	struct btf *b = small_kernel(true);
	const char *sec = "unset";

	ck_assert_msg(obj, "cannot open %s", BPFUTIL_TEST_OBJ);
	set_autoload(obj, "fexit/kvm_wait", false); /* already left out: stays out */
	ck_assert_int_eq(bpfutil_drop_missing(obj, b, needs_switch, &sec), 0);
	ck_assert_str_eq(sec, "unset");
	ck_assert(autoload_of(obj, "tp_btf/sched_switch"));
	ck_assert(autoload_of(obj, "tp_btf/irq_handler_entry"));
	ck_assert(autoload_of(obj, "fentry/kvm_wait"));
	ck_assert(!autoload_of(obj, "fexit/kvm_wait"));
	ck_assert(!autoload_of(obj, "tp_btf/irq_handler_exit"));
	ck_assert(!autoload_of(obj, "tp_btf/nmi_handler"));
	ck_assert(!autoload_of(obj, "fentry/kvm_kick_cpu"));
	btf__free(b);
	bpf_object__close(obj);
}
END_TEST

START_TEST(test_drop_missing_required)
{
	struct bpf_object *obj = bpf_object__open_file(BPFUTIL_TEST_OBJ, NULL);
	struct btf *b = small_kernel(false);
	const char *sec = NULL;

	ck_assert_msg(obj, "cannot open %s", BPFUTIL_TEST_OBJ);
	ck_assert_int_eq(bpfutil_drop_missing(obj, b, needs_switch, &sec), -ENOTSUP);
	ck_assert_str_eq(sec, "tp_btf/sched_switch");
	ck_assert_int_eq(bpfutil_drop_missing(obj, b, needs_switch, NULL), -ENOTSUP);
	/* a required program left out beforehand is not asked for */
	set_autoload(obj, "tp_btf/sched_switch", false);
	ck_assert_int_eq(bpfutil_drop_missing(obj, b, needs_switch, &sec), 0);
	btf__free(b);
	bpf_object__close(obj);
}
END_TEST

START_TEST(test_stats_add)
{
	struct bpfutil_prog_stat progs[2];
	struct bpfutil_stats st;

	memset(progs, 0xa5, sizeof(progs));
	bpfutil_stats_init(&st, progs, 2);
	ck_assert_int_eq(st.nprogs, 0);
	ck_assert_uint_eq(st.run_cnt, 0);
	ck_assert_uint_eq(st.run_time_ns, 0);
	ck_assert(bpfutil_stats_add(&st, "ktrace_sched_switch", 10, 1000));
	ck_assert(bpfutil_stats_add(&st, "ktrace_irq_entry", 5, 250));
	/* full: the third program is left out of the entries and of the sums */
	ck_assert(!bpfutil_stats_add(&st, "ktrace_irq_exit", 7, 70));
	ck_assert_int_eq(st.nprogs, 2);
	ck_assert_uint_eq(st.run_cnt, 15);
	ck_assert_uint_eq(st.run_time_ns, 1250);
	ck_assert_str_eq(progs[0].name, "ktrace_sched_switch");
	ck_assert_uint_eq(progs[0].run_cnt, 10);
	ck_assert_uint_eq(progs[0].run_time_ns, 1000);
	ck_assert_str_eq(progs[1].name, "ktrace_irq_entry");
	ck_assert_uint_eq(progs[1].run_cnt, 5);
	ck_assert_uint_eq(progs[1].run_time_ns, 250);
}
END_TEST

START_TEST(test_stats_long_name)
{
	char name[100];
	struct bpfutil_prog_stat p;
	struct bpfutil_stats st;

	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	bpfutil_stats_init(&st, &p, 1);
	ck_assert(bpfutil_stats_add(&st, name, 1, 2));
	ck_assert_uint_eq(strlen(p.name), BPFUTIL_NAME_LEN - 1);
	ck_assert_int_eq(strncmp(p.name, name, BPFUTIL_NAME_LEN - 1), 0);
}
END_TEST

START_TEST(test_stats_no_room)
{
	struct bpfutil_stats st;

	bpfutil_stats_init(&st, NULL, 0);
	ck_assert(!bpfutil_stats_add(&st, "a", 1, 1));
	ck_assert_int_eq(st.nprogs, 0);
	ck_assert_uint_eq(st.run_cnt, 0);
}
END_TEST

START_TEST(test_stats_read_unloaded)
{
	struct bpf_object *obj = bpf_object__open_file(BPFUTIL_TEST_OBJ, NULL);
	struct bpfutil_prog_stat progs[4];
	struct bpfutil_stats st;

	/* programs that were never loaded have nothing to tell */
	ck_assert_msg(obj, "cannot open %s", BPFUTIL_TEST_OBJ);
	bpfutil_stats_init(&st, progs, 4);
	bpfutil_stats_read(&st, obj);
	ck_assert_int_eq(st.nprogs, 0);
	ck_assert_uint_eq(st.run_cnt, 0);
	bpf_object__close(obj);
}
END_TEST

static Suite *bpfutil_suite(void)
{
	Suite *s = suite_create("bpfutil");
	TCase *tc;

	tc = tcase_create("print");
	tcase_add_test(tc, test_print_levels);
	suite_add_tcase(s, tc);

	tc = tcase_create("targets");
	tcase_add_test(tc, test_has_target);
	tcase_add_test(tc, test_drop_missing);
	tcase_add_test(tc, test_drop_missing_required);
	suite_add_tcase(s, tc);

	tc = tcase_create("stats");
	tcase_add_test(tc, test_stats_add);
	tcase_add_test(tc, test_stats_long_name);
	tcase_add_test(tc, test_stats_no_room);
	tcase_add_test(tc, test_stats_read_unloaded);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bpfutil_suite());
	int failed;

	bpfutil_set_print(); /* libbpf's messages about the unloaded object: only with -v */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
