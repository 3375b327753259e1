/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/agent/guestdev: the sysfs scans for the ivshmem BAR2 and virtio-serial ports, against fake
 * sysfs trees built in a temporary directory (the real path is exercised in the test VMs).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agent/guestdev.h"

static char root[256];

static void put(const char *rel, const char *text)
{
	char path[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void setup(void)
{
	strcpy(root, "/tmp/check_guestdev.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

/* A PCI device with vendor/device and a resource table whose BAR2 is size bytes (0: no BAR2 line). */
static void pci_dev(const char *addr, const char *vendor, const char *device, uint64_t size)
{
	char rel[256], res[512];

	snprintf(rel, sizeof(rel), "bus/pci/devices/%s/vendor", addr);
	put(rel, vendor);
	snprintf(rel, sizeof(rel), "bus/pci/devices/%s/device", addr);
	put(rel, device);
	snprintf(rel, sizeof(rel), "bus/pci/devices/%s/resource", addr);
	snprintf(res, sizeof(res),
		 "0x00000000fe000000 0x00000000fe000fff 0x0000000000040200\n"
		 "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
		 "0x0000000800000000 0x%016llx 0x000000000014220c\n",
		 (unsigned long long)(0x800000000ULL + size - 1));
	put(rel, res);
}

START_TEST(test_ivshmem_found)
{
	char path[512], want[512];
	uint64_t size = 0;

	pci_dev("0000:00:01.0", "0x8086\n", "0x29c0\n", 4096);
	pci_dev("0000:03:01.0", "0x1af4\n", "0x1110\n", 4u << 20);
	pci_dev("0000:02:00.0", "0x1af4\n", "0x1003\n", 4096); /* virtio-serial, same vendor */
	ck_assert_int_eq(guestdev_find_ivshmem(root, path, sizeof(path), &size), 0);
	snprintf(want, sizeof(want), "%s/bus/pci/devices/0000:03:01.0/resource2", root);
	ck_assert_str_eq(path, want);
	ck_assert_uint_eq(size, 4u << 20);
}
END_TEST

START_TEST(test_ivshmem_first_by_address)
{
	char path[512];
	uint64_t size = 0;

	pci_dev("0000:05:00.0", "0x1af4", "0x1110", 1u << 20);
	pci_dev("0000:04:00.0", "0x1af4", "0x1110", 2u << 20);
	ck_assert_int_eq(guestdev_find_ivshmem(root, path, sizeof(path), &size), 0);
	ck_assert_ptr_nonnull(strstr(path, "0000:04:00.0"));
	ck_assert_uint_eq(size, 2u << 20);
}
END_TEST

START_TEST(test_ivshmem_absent)
{
	char path[512];
	uint64_t size = 7;

	pci_dev("0000:00:01.0", "0x8086", "0x29c0", 4096);
	put("bus/pci/devices/0000:00:02.0/vendor", "garbage");
	ck_assert_int_eq(guestdev_find_ivshmem(root, path, sizeof(path), &size), -ENOENT);
	/* no PCI bus at all */
	ck_assert_int_lt(guestdev_find_ivshmem("/nonexistent-sysfs", path, sizeof(path), &size), 0);
}
END_TEST

START_TEST(test_ivshmem_short_buffer)
{
	char path[8];
	uint64_t size;

	pci_dev("0000:03:01.0", "0x1af4", "0x1110", 4096);
	ck_assert_int_eq(guestdev_find_ivshmem(root, path, sizeof(path), &size), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_port_by_name)
{
	char path[256];

	put("class/virtio-ports/vport0p1/name", "org.qemu.guest_agent.0\n");
	put("class/virtio-ports/vport0p2/name", "org.vnoise.0\n");
	put("class/virtio-ports/vport0p3/name", "org.vnoise.test.0\n");
	ck_assert_int_eq(guestdev_find_port(root, "/dev", "org.vnoise.0", path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/dev/vport0p2");
	ck_assert_int_eq(
	    guestdev_find_port(root, NULL, "org.qemu.guest_agent.0", path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/dev/vport0p1");
	/* a prefix is not a match */
	ck_assert_int_eq(guestdev_find_port(root, NULL, "org.vnoise", path, sizeof(path)), -ENOENT);
	ck_assert_int_eq(guestdev_find_port(root, NULL, "org.other.0", path, sizeof(path)),
			 -ENOENT);
	ck_assert_int_eq(
	    guestdev_find_port(root, "/a-very-long-device-directory", "org.vnoise.0", path, 12),
	    -ENAMETOOLONG);
	ck_assert_int_eq(
	    guestdev_find_port("/nonexistent-sysfs", NULL, "org.vnoise.0", path, sizeof(path)),
	    -ENOENT);
}
END_TEST

static Suite *guestdev_suite(void)
{
	Suite *s = suite_create("guestdev");
	TCase *tc = tcase_create("ivshmem");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_ivshmem_found);
	tcase_add_test(tc, test_ivshmem_first_by_address);
	tcase_add_test(tc, test_ivshmem_absent);
	tcase_add_test(tc, test_ivshmem_short_buffer);
	suite_add_tcase(s, tc);

	tc = tcase_create("ports");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_port_by_name);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(guestdev_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
