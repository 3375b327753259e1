/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/libvirt/domsetup: the shmem name and default size, the device XML it builds
 * (escaping, sizes), detection in libvirt 9.0 domain XML (ours, a foreign shmem of our name, a non-unix
 * channel or bell, the controller, other shmem and channels left alone), what enable adds (nothing to a
 * domain with our devices, only the bell to one enabled by an older vnoise, a controller only when neither
 * a controller nor one of our channels is there), element extraction for detach (the two channels told
 * apart by target name), and removal giving back the original document byte for byte.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libvirt/domsetup.h"
#include "libvirt/domsetup_priv.h"

/* The start of every domain below, up to and with the harness's exec channel. */
#define DOMAIN_HEAD                                                                           \
	"<domain type='qemu'>\n"                                                              \
	"  <name>web1</name>\n"                                                               \
	"  <memory unit='KiB'>655360</memory>\n"                                              \
	"  <vcpu placement='static'>6</vcpu>\n"                                               \
	"  <os>\n"                                                                            \
	"    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>\n"                           \
	"  </os>\n"                                                                           \
	"  <devices>\n"                                                                       \
	"    <controller type='pci' index='0' model='pcie-root'/>\n"                          \
	"    <controller type='virtio-serial' index='0'>\n"                                   \
	"      <address type='pci' domain='0x0000' bus='0x01' slot='0x00' function='0x0'/>\n" \
	"    </controller>\n"                                                                 \
	"    <channel type='unix'>\n"                                                         \
	"      <source mode='bind' path='/run/x/exec.sock'/>\n"                               \
	"      <target type='virtio' name='org.vnoise.test.0'/>\n"                            \
	"      <address type='virtio-serial' controller='0' bus='0' port='1'/>\n"             \
	"    </channel>\n"

/* An inactive q35 TCG domain as `virsh dumpxml --inactive` prints it, without vnoise's devices. */
static const char plain_xml[] = DOMAIN_HEAD "    <shmem name='other'>\n"
					    "      <model type='ivshmem-plain'/>\n"
					    "      <size unit='M'>8</size>\n"
					    "    </shmem>\n"
					    "    <memballoon model='none'/>\n"
					    "  </devices>\n"
					    "</domain>\n";

/* What follows our channels in the enabled domains below: another shmem, ours, the rest. */
#define ENABLED_TAIL                                                                          \
	"    <shmem name='other'>\n"                                                          \
	"      <model type='ivshmem-plain'/>\n"                                               \
	"      <size unit='M'>8</size>\n"                                                     \
	"    </shmem>\n"                                                                      \
	"    <shmem name='vnoise-web1'>\n"                                                    \
	"      <model type='ivshmem-plain'/>\n"                                               \
	"      <size unit='M'>16</size>\n"                                                    \
	"      <address type='pci' domain='0x0000' bus='0x03' slot='0x01' function='0x0'/>\n" \
	"    </shmem>\n"                                                                      \
	"    <memballoon model='none'/>\n"                                                    \
	"  </devices>\n"                                                                      \
	"</domain>\n"

/* The same domain after enable (libvirt's formatting, addresses assigned). */
static const char enabled_xml[] =
    DOMAIN_HEAD "    <channel type='unix'>\n"
		"      <source mode='bind'/>\n"
		"      <target type='virtio' name='org.vnoise.0'/>\n"
		"      <address type='virtio-serial' controller='0' bus='0' port='2'/>\n"
		"    </channel>\n"
		"    <channel type='unix'>\n"
		"      <source mode='bind'/>\n"
		"      <target type='virtio' name='org.vnoise.bell.0'/>\n"
		"      <address type='virtio-serial' controller='0' bus='0' port='3'/>\n"
		"    </channel>\n" ENABLED_TAIL;

/* The same domain enabled by a vnoise before the bell: our shmem and org.vnoise.0 only. */
static const char old_xml[] =
    DOMAIN_HEAD "    <channel type='unix'>\n"
		"      <source mode='bind'/>\n"
		"      <target type='virtio' name='org.vnoise.0'/>\n"
		"      <address type='virtio-serial' controller='0' bus='0' port='2'/>\n"
		"    </channel>\n" ENABLED_TAIL;

#define BIT(k) DOMSETUP_BIT(DOMSETUP_##k)

START_TEST(test_name_and_size)
{
	char n[16];

	ck_assert_int_eq(domsetup_shm_name("web1", n, sizeof(n)), 0);
	ck_assert_str_eq(n, "vnoise-web1");
	ck_assert_int_eq(domsetup_shm_name("a-very-long-name", n, sizeof(n)), -ENAMETOOLONG);
	ck_assert_int_eq(domsetup_shm_name("", n, sizeof(n)), -EINVAL);
	ck_assert_uint_eq(domsetup_size_mib(0), 4);
	ck_assert_uint_eq(domsetup_size_mib(1), 4);
	ck_assert_uint_eq(domsetup_size_mib(2), 4);
	ck_assert_uint_eq(domsetup_size_mib(3), 8);
	ck_assert_uint_eq(domsetup_size_mib(6), 16);
	ck_assert_uint_eq(domsetup_size_mib(64), 128);
	ck_assert_uint_eq(domsetup_size_mib(100000), DOMSETUP_MAX_MIB);
	ck_assert(domsetup_size_ok(1) && domsetup_size_ok(4) && domsetup_size_ok(1024));
	ck_assert(!domsetup_size_ok(0) && !domsetup_size_ok(3) && !domsetup_size_ok(2048));
}
END_TEST

START_TEST(test_build_xml)
{
	char b[DOMSETUP_XML_MAX];
	int n = domsetup_shmem_xml("vnoise-a'b&c", 16, b, sizeof(b));

	ck_assert_int_eq(n, (int)strlen(b));
	ck_assert_str_eq(b,
			 "<shmem name='vnoise-a&apos;b&amp;c'>\n  <model type='ivshmem-plain'/>\n"
			 "  <size unit='M'>16</size>\n</shmem>\n");
	ck_assert_int_eq(domsetup_shmem_xml("vnoise-web1", 4, b, 20), -ENOSPC);
	n = domsetup_channel_xml(b, sizeof(b));
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(b, "<channel type='unix'>"));
	ck_assert_ptr_nonnull(strstr(b, "<source mode='bind'/>"));
	ck_assert_ptr_nonnull(strstr(b, "<target type='virtio' name='org.vnoise.0'/>"));
	ck_assert_int_eq(domsetup_channel_xml(b, 10), -ENOSPC);
	ck_assert_ptr_null(strstr(b, "bell"));
	n = domsetup_bell_xml(b, sizeof(b));
	ck_assert_int_eq(n, (int)strlen(b));
	ck_assert_str_eq(b, "<channel type='unix'>\n  <source mode='bind'/>\n"
			    "  <target type='virtio' name='org.vnoise.bell.0'/>\n</channel>\n");
	ck_assert_int_eq(domsetup_bell_xml(b, 10), -ENOSPC);
	ck_assert_int_gt(domsetup_controller_xml(b, sizeof(b)), 0);
	ck_assert_str_eq(b, "<controller type='virtio-serial'/>\n");
}
END_TEST

START_TEST(test_scan_plain)
{
	struct domsetup_state st;

	ck_assert_int_eq(domsetup_scan(plain_xml, "vnoise-web1", &st), 0);
	ck_assert_int_eq(st.vcpus, 6);
	ck_assert(!st.shmem && !st.shmem_foreign && !st.channel && !st.channel_foreign);
	ck_assert(!st.bell && !st.bell_foreign);
	ck_assert(st.controller);
	/* the controller is there: enable adds the shmem and both channels */
	ck_assert_uint_eq(domsetup_missing(&st), BIT(SHMEM) | BIT(CHANNEL_EL) | BIT(BELL_EL));
	/* another domain's name is not ours, and "other" is someone else's shmem */
	ck_assert_int_eq(domsetup_scan(enabled_xml, "vnoise-web", &st), 0);
	ck_assert(!st.shmem && !st.shmem_foreign);
	ck_assert_int_eq(domsetup_scan("<notadomain/>", "x", &st), -EINVAL);
}
END_TEST

START_TEST(test_scan_enabled_idempotent)
{
	struct domsetup_state st;

	ck_assert_int_eq(domsetup_scan(enabled_xml, "vnoise-web1", &st), 0);
	ck_assert(st.shmem && st.channel && st.bell && st.controller);
	ck_assert(!st.shmem_foreign && !st.channel_foreign && !st.bell_foreign);
	ck_assert_uint_eq(st.shmem_mib, 16);
	/* enable's plan adds nothing here */
	ck_assert_uint_eq(domsetup_missing(&st), 0);
}
END_TEST

/* A domain enabled before the bell existed: enable adds only the bell. */
START_TEST(test_scan_old_enabled)
{
	struct domsetup_state st;

	ck_assert_int_eq(domsetup_scan(old_xml, "vnoise-web1", &st), 0);
	ck_assert(st.shmem && st.channel && st.controller);
	ck_assert(!st.bell && !st.bell_foreign && !st.channel_foreign && !st.shmem_foreign);
	ck_assert_uint_eq(domsetup_missing(&st), BIT(BELL_EL));
}
END_TEST

/* The controller rule: needed only when there is no controller and neither of our channels. */
START_TEST(test_missing_controller)
{
	struct domsetup_state st;
	const char *bare = "<domain><vcpu>2</vcpu><devices></devices></domain>";
	const char *chan_only =
	    "<domain><devices><channel type='unix'><source mode='bind'/>"
	    "<target type='virtio' name='org.vnoise.0'/></channel></devices></domain>";
	const char *bell_only =
	    "<domain><devices><channel type='unix'><source mode='bind'/>"
	    "<target type='virtio' name='org.vnoise.bell.0'/></channel></devices></domain>";

	ck_assert_int_eq(domsetup_scan(bare, "vnoise-d", &st), 0);
	ck_assert_uint_eq(domsetup_missing(&st),
			  BIT(SHMEM) | BIT(CONTROLLER) | BIT(CHANNEL_EL) | BIT(BELL_EL));
	ck_assert_int_eq(domsetup_scan(chan_only, "vnoise-d", &st), 0);
	ck_assert(st.channel && !st.bell && !st.controller);
	ck_assert_uint_eq(domsetup_missing(&st), BIT(SHMEM) | BIT(BELL_EL));
	ck_assert_int_eq(domsetup_scan(bell_only, "vnoise-d", &st), 0);
	ck_assert(!st.channel && st.bell && !st.controller);
	ck_assert_uint_eq(domsetup_missing(&st), BIT(SHMEM) | BIT(CHANNEL_EL));
}
END_TEST

START_TEST(test_scan_foreign)
{
	struct domsetup_state st;
	const char *doorbell =
	    "<domain><devices><shmem name='vnoise-d'><model type='ivshmem-doorbell'/>"
	    "<server path='/tmp/s'/></shmem></devices></domain>";
	const char *pty =
	    "<domain><devices><channel type='pty'><target type='virtio' name='org.vnoise.0'/>"
	    "</channel></devices></domain>";
	const char *bytes = "<domain><devices><shmem name='vnoise-d'><model type='ivshmem-plain'/>"
			    "<size unit='bytes'>8388608</size></shmem></devices></domain>";
	const char *nomodel = "<domain><devices><shmem name='vnoise-d'/></devices></domain>";
	const char *bell_pty =
	    "<domain><devices><channel type='unix'><source mode='bind'/>"
	    "<target type='virtio' name='org.vnoise.0'/></channel>"
	    "<channel type='pty'><target type='virtio' name=\"org.vnoise.bell.0\"/></channel>"
	    "</devices></domain>";
	const char *other_bell =
	    "<domain><devices><channel type='unix'><target type='virtio' name='org.vnoise.bell.1'/>"
	    "</channel><channel type='unix'><target type='virtio' name='x.org.vnoise.bell.0'/>"
	    "</channel></devices></domain>";

	ck_assert_int_eq(domsetup_scan(doorbell, "vnoise-d", &st), 0);
	ck_assert(!st.shmem && st.shmem_foreign && !st.controller && st.vcpus == 0);
	ck_assert_int_eq(domsetup_scan(pty, "vnoise-d", &st), 0);
	ck_assert(!st.channel && st.channel_foreign);
	ck_assert(!st.bell && !st.bell_foreign);
	/* a bell that is not a unix socket: foreign, and org.vnoise.0 next to it still ours */
	ck_assert_int_eq(domsetup_scan(bell_pty, "vnoise-d", &st), 0);
	ck_assert(st.bell_foreign && !st.bell);
	ck_assert(st.channel && !st.channel_foreign);
	/* names that only look like the bell's are someone else's */
	ck_assert_int_eq(domsetup_scan(other_bell, "vnoise-d", &st), 0);
	ck_assert(!st.bell && !st.bell_foreign && !st.channel && !st.channel_foreign);
	ck_assert_int_eq(domsetup_scan(bytes, "vnoise-d", &st), 0);
	ck_assert(st.shmem && st.shmem_mib == 8);
	ck_assert_int_eq(domsetup_scan(nomodel, "vnoise-d", &st), 0);
	ck_assert(!st.shmem && st.shmem_foreign);
}
END_TEST

START_TEST(test_element)
{
	const char *at;
	size_t len;
	char el[512];

	ck_assert_int_eq(domsetup_element(enabled_xml, DOMSETUP_SHMEM, "vnoise-web1", &at, &len),
			 0);
	snprintf(el, sizeof(el), "%.*s", (int)len, at);
	ck_assert(!strncmp(el, "<shmem name='vnoise-web1'>", 26));
	ck_assert(len > 9 && !strcmp(el + len - 8, "</shmem>"));
	ck_assert_ptr_nonnull(strstr(el, "bus='0x03'"));
	ck_assert_int_eq(domsetup_element(enabled_xml, DOMSETUP_CHANNEL_EL, NULL, &at, &len), 0);
	snprintf(el, sizeof(el), "%.*s", (int)len, at);
	ck_assert_ptr_nonnull(strstr(el, "name='org.vnoise.0'"));
	ck_assert_ptr_null(strstr(el, "org.vnoise.test.0"));
	ck_assert_ptr_null(strstr(el, "bell"));
	ck_assert_int_eq(domsetup_element(enabled_xml, DOMSETUP_BELL_EL, NULL, &at, &len), 0);
	snprintf(el, sizeof(el), "%.*s", (int)len, at);
	ck_assert(!strncmp(el, "<channel type='unix'>", 21));
	ck_assert(len > 10 && !strcmp(el + len - 10, "</channel>"));
	ck_assert_ptr_nonnull(strstr(el, "name='org.vnoise.bell.0'"));
	ck_assert_ptr_nonnull(strstr(el, "port='3'"));
	ck_assert_ptr_null(strstr(el, "name='org.vnoise.0'"));
	/* a single element, as a detach step holds it, is found by its target name */
	ck_assert_int_eq(domsetup_element(el, DOMSETUP_BELL_EL, NULL, &at, &len), 0);
	ck_assert_ptr_eq(at, el);
	ck_assert_int_eq(domsetup_element(el, DOMSETUP_CHANNEL_EL, NULL, &at, &len), -ENOENT);
	ck_assert_int_eq(domsetup_element(old_xml, DOMSETUP_BELL_EL, NULL, &at, &len), -ENOENT);
	ck_assert_int_eq(domsetup_element(old_xml, DOMSETUP_CHANNEL_EL, NULL, &at, &len), 0);
	ck_assert_int_eq(domsetup_element(enabled_xml, DOMSETUP_CONTROLLER, NULL, &at, &len), 0);
	ck_assert(!strncmp(at, "<controller type='virtio-serial'", 32));
	ck_assert_int_eq(domsetup_element(plain_xml, DOMSETUP_SHMEM, "vnoise-web1", &at, &len),
			 -ENOENT);
	ck_assert_int_eq(domsetup_element(plain_xml, DOMSETUP_CHANNEL_EL, NULL, &at, &len),
			 -ENOENT);
	ck_assert_int_eq(domsetup_element(plain_xml, DOMSETUP_BELL_EL, NULL, &at, &len), -ENOENT);
}
END_TEST

/* A plan step's element, built by enable or taken from the domain for its undo, by kind. */
START_TEST(test_kind_of)
{
	enum domsetup_kind k;
	const char *at;
	size_t len;
	char b[DOMSETUP_XML_MAX], el[512];

	ck_assert_int_gt(domsetup_shmem_xml("vnoise-web1", 16, b, sizeof(b)), 0);
	ck_assert_int_eq(domsetup_kind_of(b, &k), 0);
	ck_assert_int_eq(k, DOMSETUP_SHMEM);
	ck_assert_int_gt(domsetup_controller_xml(b, sizeof(b)), 0);
	ck_assert_int_eq(domsetup_kind_of(b, &k), 0);
	ck_assert_int_eq(k, DOMSETUP_CONTROLLER);
	ck_assert_int_gt(domsetup_channel_xml(b, sizeof(b)), 0);
	ck_assert_int_eq(domsetup_kind_of(b, &k), 0);
	ck_assert_int_eq(k, DOMSETUP_CHANNEL_EL);
	ck_assert_int_gt(domsetup_bell_xml(b, sizeof(b)), 0);
	ck_assert_int_eq(domsetup_kind_of(b, &k), 0);
	ck_assert_int_eq(k, DOMSETUP_BELL_EL);
	ck_assert_int_eq(domsetup_element(enabled_xml, DOMSETUP_BELL_EL, NULL, &at, &len), 0);
	snprintf(el, sizeof(el), "%.*s", (int)len, at);
	ck_assert_int_eq(domsetup_kind_of(el, &k), 0);
	ck_assert_int_eq(k, DOMSETUP_BELL_EL);
	ck_assert_int_eq(domsetup_element(enabled_xml, DOMSETUP_SHMEM, "vnoise-web1", &at, &len),
			 0);
	snprintf(el, sizeof(el), "%.*s", (int)len, at);
	ck_assert_int_eq(domsetup_kind_of(el, &k), 0);
	ck_assert_int_eq(k, DOMSETUP_SHMEM);
	/* a shmem named in text or an attribute is not a shmem element */
	ck_assert_int_eq(domsetup_kind_of("<disk name='&lt;shmem'>&lt;controller</disk>", &k),
			 -EINVAL);
	ck_assert_int_eq(domsetup_kind_of("<shmem", &k), -EINVAL);
	ck_assert_int_eq(domsetup_kind_of(enabled_xml, &k), -EINVAL);
}
END_TEST

START_TEST(test_remove_restores)
{
	char out[sizeof(enabled_xml)];

	ck_assert_int_eq(domsetup_remove(enabled_xml, "vnoise-web1", out, sizeof(out)), 3);
	ck_assert_str_eq(out, plain_xml);
	/* removing again: nothing to remove, the document unchanged */
	ck_assert_int_eq(domsetup_remove(plain_xml, "vnoise-web1", out, sizeof(out)), 0);
	ck_assert_str_eq(out, plain_xml);
	ck_assert_int_eq(domsetup_remove(enabled_xml, "vnoise-web1", out, 100), -ENOSPC);
	/* a domain enabled before the bell: its two devices */
	ck_assert_int_eq(domsetup_remove(old_xml, "vnoise-web1", out, sizeof(out)), 2);
	ck_assert_str_eq(out, plain_xml);
}
END_TEST

/* The three elements in any document order (the bell first, the shmem between the channels). */
START_TEST(test_remove_any_order)
{
	const char *xml =
	    "<domain>\n<devices>\n"
	    "  <channel type='unix'><target type='virtio' name='org.vnoise.bell.0'/></channel>\n"
	    "  <disk/>\n"
	    "  <shmem name='vnoise-d'><model type='ivshmem-plain'/></shmem>\n"
	    "  <channel type='unix'><target type='virtio' name='org.vnoise.0'/></channel>\n"
	    "  <memballoon/>\n"
	    "</devices>\n</domain>\n";
	char out[512];

	ck_assert_int_eq(domsetup_remove(xml, "vnoise-d", out, sizeof(out)), 3);
	ck_assert_str_eq(
	    out, "<domain>\n<devices>\n  <disk/>\n  <memballoon/>\n</devices>\n</domain>\n");
}
END_TEST

/* Every prefix of the enabled document: the scanners stop at the NUL (ASan sees any read past it). */
START_TEST(test_truncated)
{
	size_t n = strlen(enabled_xml);
	struct domsetup_state st;
	const char *at;
	size_t len;

	for (size_t i = 0; i <= n; i++) {
		char *b = malloc(i + 1);

		ck_assert_ptr_nonnull(b);
		memcpy(b, enabled_xml, i);
		b[i] = '\0';
		int r = domsetup_scan(b, "vnoise-web1", &st);

		ck_assert(r == 0 || r == -EINVAL);
		r = domsetup_element(b, DOMSETUP_SHMEM, "vnoise-web1", &at, &len);
		ck_assert(r == 0 ? at + len <= b + i : r == -ENOENT);
		r = domsetup_element(b, DOMSETUP_CHANNEL_EL, NULL, &at, &len);
		ck_assert(r == 0 ? at + len <= b + i : r == -ENOENT);
		r = domsetup_element(b, DOMSETUP_BELL_EL, NULL, &at, &len);
		ck_assert(r == 0 ? at + len <= b + i : r == -ENOENT);
		free(b);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("domsetup");
	TCase *tc = tcase_create("build");
	TCase *td = tcase_create("detect");
	TCase *tr = tcase_create("remove");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_name_and_size);
	tcase_add_test(tc, test_build_xml);
	tcase_add_test(td, test_scan_plain);
	tcase_add_test(td, test_scan_enabled_idempotent);
	tcase_add_test(td, test_scan_old_enabled);
	tcase_add_test(td, test_missing_controller);
	tcase_add_test(td, test_scan_foreign);
	tcase_add_test(td, test_element);
	tcase_add_test(td, test_kind_of);
	tcase_add_test(td, test_truncated);
	tcase_add_test(tr, test_remove_restores);
	tcase_add_test(tr, test_remove_any_order);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, td);
	suite_add_tcase(s, tr);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
