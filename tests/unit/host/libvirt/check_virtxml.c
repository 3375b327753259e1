/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/libvirt/virtxml: the queries over a libvirt live domain XML (as libvirt 9.0 emits it
 * for a q35 TCG domain with an ivshmem device and two tap interfaces): the domain type, the shmem device and
 * its size units, the tap list, a channel's socket path and presence, and truncated documents (every
 * prefix, in exact-size heap buffers so ASan sees any read past the NUL), which hold nothing. Attribute
 * decoding and the capacity rule are libvirt/xmldoc's, tested in check_xmldoc.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "libvirt/virtxml.h"

#define MIB (1ULL << 20)

/* What `virsh dumpxml` prints for a running q35 TCG domain (libvirt 9.0, QEMU 7.2). */
static const char live_xml[] =
    "<domain type='qemu' id='3'>\n"
    "  <name>vnoise-tcg</name>\n"
    "  <uuid>0c5c2a8e-4d0b-4c7e-9d6f-3b1f2a7e9c11</uuid>\n"
    "  <memory unit='KiB'>2097152</memory>\n"
    "  <currentMemory unit='KiB'>2097152</currentMemory>\n"
    "  <vcpu placement='static'>4</vcpu>\n"
    "  <resource>\n"
    "    <partition>/machine</partition>\n"
    "  </resource>\n"
    "  <os>\n"
    "    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>\n"
    "    <boot dev='hd'/>\n"
    "  </os>\n"
    "  <features>\n"
    "    <acpi/>\n"
    "    <apic/>\n"
    "  </features>\n"
    "  <cpu mode='custom' match='exact' check='full'>\n"
    "    <model fallback='forbid'>qemu64</model>\n"
    "    <feature policy='require' name='x2apic'/>\n"
    "    <feature policy='require' name='hypervisor'/>\n"
    "    <feature policy='require' name='lahf_lm'/>\n"
    "    <feature policy='disable' name='svm'/>\n"
    "  </cpu>\n"
    "  <clock offset='utc'/>\n"
    "  <on_poweroff>destroy</on_poweroff>\n"
    "  <on_reboot>restart</on_reboot>\n"
    "  <on_crash>destroy</on_crash>\n"
    "  <devices>\n"
    "    <emulator>/usr/bin/qemu-system-x86_64</emulator>\n"
    "    <disk type='file' device='disk'>\n"
    "      <driver name='qemu' type='qcow2'/>\n"
    "      <source file='/var/lib/libvirt/images/vnoise-tcg.qcow2' index='1'/>\n"
    "      <backingStore/>\n"
    "      <target dev='vda' bus='virtio'/>\n"
    "      <alias name='virtio-disk0'/>\n"
    "      <address type='pci' domain='0x0000' bus='0x04' slot='0x00' function='0x0'/>\n"
    "    </disk>\n"
    "    <controller type='usb' index='0' model='qemu-xhci' ports='15'>\n"
    "      <alias name='usb'/>\n"
    "      <address type='pci' domain='0x0000' bus='0x02' slot='0x00' function='0x0'/>\n"
    "    </controller>\n"
    "    <controller type='pci' index='0' model='pcie-root'>\n"
    "      <alias name='pcie.0'/>\n"
    "    </controller>\n"
    "    <controller type='virtio-serial' index='0'>\n"
    "      <alias name='virtio-serial0'/>\n"
    "      <address type='pci' domain='0x0000' bus='0x03' slot='0x00' function='0x0'/>\n"
    "    </controller>\n"
    "    <interface type='ethernet'>\n"
    "      <mac address='52:54:00:6b:3c:58'/>\n"
    "      <target dev='vnet7'/>\n"
    "      <model type='virtio'/>\n"
    "      <alias name='net0'/>\n"
    "      <address type='pci' domain='0x0000' bus='0x01' slot='0x00' function='0x0'/>\n"
    "    </interface>\n"
    "    <interface type='ethernet'>\n"
    "      <mac address='52:54:00:11:22:33'/>\n"
    "      <target dev='tap1' managed='no'/>\n"
    "      <model type='e1000e'/>\n"
    "      <alias name='net1'/>\n"
    "      <address type='pci' domain='0x0000' bus='0x05' slot='0x00' function='0x0'/>\n"
    "    </interface>\n"
    "    <serial type='pty'>\n"
    "      <source path='/dev/pts/4'/>\n"
    "      <target type='isa-serial' port='0'>\n"
    "        <model name='isa-serial'/>\n"
    "      </target>\n"
    "      <alias name='serial0'/>\n"
    "    </serial>\n"
    "    <console type='pty' tty='/dev/pts/4'>\n"
    "      <source path='/dev/pts/4'/>\n"
    "      <target type='serial' port='0'/>\n"
    "      <alias name='serial0'/>\n"
    "    </console>\n"
    "    <channel type='unix'>\n"
    "      <source mode='bind' "
    "path='/run/libvirt/qemu/channel/3-vnoise-tcg/org.qemu.guest_agent.0'/>\n"
    "      <target type='virtio' name='org.qemu.guest_agent.0' state='connected'/>\n"
    "      <alias name='channel0'/>\n"
    "      <address type='virtio-serial' controller='0' bus='0' port='1'/>\n"
    "    </channel>\n"
    "    <input type='mouse' bus='ps2'>\n"
    "      <alias name='input0'/>\n"
    "    </input>\n"
    "    <input type='keyboard' bus='ps2'>\n"
    "      <alias name='input1'/>\n"
    "    </input>\n"
    "    <audio id='1' type='none'/>\n"
    "    <memballoon model='virtio'>\n"
    "      <alias name='balloon0'/>\n"
    "      <address type='pci' domain='0x0000' bus='0x06' slot='0x00' function='0x0'/>\n"
    "    </memballoon>\n"
    "    <shmem name='vnoise-x'>\n"
    "      <model type='ivshmem-plain'/>\n"
    "      <size unit='M'>4</size>\n"
    "      <alias name='shmem0'/>\n"
    "      <address type='pci' domain='0x0000' bus='0x10' slot='0x01' function='0x0'/>\n"
    "    </shmem>\n"
    "  </devices>\n"
    "  <seclabel type='dynamic' model='dac' relabel='yes'>\n"
    "    <label>+64055:+108</label>\n"
    "    <imagelabel>+64055:+108</imagelabel>\n"
    "  </seclabel>\n"
    "</domain>\n";

/* A heap copy of the first n bytes of s, NUL-terminated, no slack: ASan flags any read past the NUL. */
static char *dup_exact(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	ck_assert_ptr_nonnull(d);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

static char *dup_str(const char *s)
{
	return dup_exact(s, strlen(s));
}

/* virtxml_shmem on a document made of the devices fragment s; returns rc, the name in name[64]. */
static int shmem_of(const char *s, char *name, uint64_t *size)
{
	char *d = dup_str(s);
	int rc;

	memset(name, 0, 64);
	*size = 0xdeadbeef;
	rc = virtxml_shmem(d, name, 64, size);
	free(d);
	return rc;
}

/* Size in bytes of a "<shmem name='s'>...<size BODY</shmem>" fragment; ck-fails on rc != want_rc. */
static uint64_t size_of(const char *size_elem, int want_rc)
{
	char doc[256], name[64];
	uint64_t size;
	int rc;

	strcpy(doc, "<devices><shmem name='s'><model type='ivshmem-plain'/>");
	strcat(doc, size_elem);
	strcat(doc, "<alias name='shmem0'/></shmem></devices>");
	rc = shmem_of(doc, name, &size);
	ck_assert_msg(rc == want_rc, "virtxml_shmem(%s) = %d, want %d", size_elem, rc, want_rc);
	if (!rc)
		ck_assert_str_eq(name, "s");
	return size;
}

static int taps_of(const char *s, char *out, size_t cap)
{
	char *d = dup_str(s);
	int rc = virtxml_taps(d, out, cap);

	free(d);
	return rc;
}

/* ---- virtxml_domain_type ---- */

START_TEST(test_domain_type)
{
	char out[16];
	char *d;

	ck_assert_int_eq(virtxml_domain_type(live_xml, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "qemu");
	d = dup_str(
	    "<?xml version=\"1.0\"?>\n<domain type=\"kvm\" id=\"12\"><name>k</name></domain>");
	ck_assert_int_eq(virtxml_domain_type(d, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "kvm");
	free(d);
	/* a too small buffer is not a match */
	ck_assert_int_eq(virtxml_domain_type(live_xml, out, 4), -ENOENT);
	ck_assert_int_eq(virtxml_domain_type("", out, sizeof(out)), -ENOENT);
	ck_assert_int_eq(virtxml_domain_type("<domainx type='qemu'>", out, sizeof(out)), -ENOENT);
	ck_assert_int_eq(virtxml_domain_type("<domain id='1'></domain>", out, sizeof(out)),
			 -ENOENT);
}
END_TEST

/* ---- virtxml_shmem ---- */

START_TEST(test_shmem_live)
{
	char name[64];
	uint64_t size = 1;

	ck_assert_int_eq(virtxml_shmem(live_xml, name, sizeof(name), &size), 0);
	ck_assert_str_eq(name, "vnoise-x");
	ck_assert_uint_eq(size, 4 * MIB);
}
END_TEST

START_TEST(test_shmem_units)
{
	ck_assert_uint_eq(size_of("<size unit='b'>4096</size>", 0), 4096);
	ck_assert_uint_eq(size_of("<size unit='bytes'>4096</size>", 0), 4096);
	ck_assert_uint_eq(size_of("<size unit='K'>64</size>", 0), 64 * 1024);
	ck_assert_uint_eq(size_of("<size unit='KiB'>64</size>", 0), 64 * 1024);
	ck_assert_uint_eq(size_of("<size unit='M'>4</size>", 0), 4 * MIB);
	ck_assert_uint_eq(size_of("<size unit='MiB'>16</size>", 0), 16 * MIB);
	ck_assert_uint_eq(size_of("<size unit=\"M\">2</size>", 0), 2 * MIB);
	ck_assert_uint_eq(size_of("<size unit='G'>1</size>", 0), 1ULL << 30);
	ck_assert_uint_eq(size_of("<size unit='GiB'>2</size>", 0), 2ULL << 30);
	/* no unit: MiB, the unit libvirt writes */
	ck_assert_uint_eq(size_of("<size>8</size>", 0), 8 * MIB);
	/* other attributes do not matter, however long the start tag */
	ck_assert_uint_eq(
	    size_of(
		"<size unit='M' "
		"comment='aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'>4</size>",
		0),
	    4 * MIB);
	ck_assert_uint_eq(size_of("<size unit='M'>0</size>", 0), 0);
	/* largest that fits, and one past it */
	ck_assert_uint_eq(size_of("<size unit='G'>17179869183</size>", 0), 17179869183ULL << 30);
	size_of("<size unit='G'>17179869184</size>", -EINVAL);
	ck_assert_uint_eq(size_of("<size unit='b'>18446744073709551615</size>", 0), UINT64_MAX);
}
END_TEST

START_TEST(test_shmem_bad_size)
{
	/* unknown units (incl. decimal ones libvirt knows but libvirt never writes here) */
	size_of("<size unit='X'>4</size>", -EINVAL);
	size_of("<size unit='MB'>4</size>", -EINVAL);
	size_of("<size unit='T'>1</size>", -EINVAL);
	size_of("<size unit=''>4</size>", -EINVAL);
	/* a unit too long for any known one is still unknown, not the default */
	size_of("<size unit='megabytes'>4</size>", -EINVAL);
	/* not a number */
	size_of("<size unit='M'>four</size>", -EINVAL);
	size_of("<size unit='M'></size>", -EINVAL);
	size_of("<size unit='M'>-4</size>", -EINVAL);
	size_of("<size unit='M'>0x4</size>", -EINVAL);
	size_of("<size unit='M'>4.5</size>", -EINVAL);
	size_of("<size unit='M'>123456789012345678901234567890</size>", -EINVAL);
	size_of("<size unit='b'>18446744073709551616</size>", -EINVAL);
}
END_TEST

START_TEST(test_shmem_absent)
{
	char name[64];
	uint64_t size;
	char *d;

	/* no shmem: -ENOENT, size 0 */
	ck_assert_int_eq(shmem_of("<domain type='qemu'><devices><memballoon model='none'/>"
				  "</devices></domain>",
				  name, &size),
			 -ENOENT);
	ck_assert_uint_eq(size, 0);
	ck_assert_int_eq(shmem_of("", name, &size), -ENOENT);
	ck_assert_int_eq(shmem_of("<shmemx name='a'/>", name, &size), -ENOENT);
	/* a name too long for the buffer */
	d = dup_str("<shmem name='0123456789'><size unit='M'>4</size></shmem>");
	ck_assert_int_ne(virtxml_shmem(d, name, 8, &size), 0);
	ck_assert_int_eq(virtxml_shmem(d, name, 11, &size), 0);
	ck_assert_str_eq(name, "0123456789");
	free(d);
}
END_TEST

START_TEST(test_shmem_no_size)
{
	char name[64];
	uint64_t size;

	/* no <size> in the shmem element: size 0, even if a later element has one */
	ck_assert_int_eq(shmem_of("<devices><shmem name='nosize'><model type='ivshmem-plain'/>"
				  "<alias name='shmem0'/></shmem>"
				  "<memory model='dimm'><target><size unit='KiB'>524288</size>"
				  "<node>0</node></target></memory></devices>",
				  name, &size),
			 0);
	ck_assert_str_eq(name, "nosize");
	ck_assert_uint_eq(size, 0);
	ck_assert_int_eq(shmem_of("<shmem name='a'></shmem>", name, &size), 0);
	ck_assert_uint_eq(size, 0);
	ck_assert_int_eq(shmem_of("<shmem name='a'><sizes unit='G'>1</sizes></shmem>", name, &size),
			 0);
	ck_assert_uint_eq(size, 0);
}
END_TEST

START_TEST(test_shmem_first)
{
	char name[64];
	uint64_t size;

	/* the first shmem counts, with its own size and unit */
	ck_assert_int_eq(shmem_of("<devices><shmem name='one'><model type='ivshmem-plain'/>"
				  "<size unit='M'>2</size></shmem>"
				  "<shmem name='two'><model type='ivshmem-doorbell'/>"
				  "<size unit='G'>1</size></shmem></devices>",
				  name, &size),
			 0);
	ck_assert_str_eq(name, "one");
	ck_assert_uint_eq(size, 2 * MIB);
	/* a <size> without unit takes the default, not the unit of a later <size> */
	ck_assert_int_eq(shmem_of("<devices><shmem name='one'><size>4</size></shmem>"
				  "<shmem name='two'><size unit='G'>1</size></shmem></devices>",
				  name, &size),
			 0);
	ck_assert_str_eq(name, "one");
	ck_assert_uint_eq(size, 4 * MIB);
	ck_assert_int_eq(shmem_of("<devices><shmem name='one'><size>4</size></shmem>"
				  "<memory model='dimm'><target><size unit='KiB'>524288</size>"
				  "</target></memory></devices>",
				  name, &size),
			 0);
	ck_assert_uint_eq(size, 4 * MIB);
	/* entity-encoded name */
	ck_assert_int_eq(
	    shmem_of("<shmem name='vm&apos;s'><size unit='M'>1</size></shmem>", name, &size), 0);
	ck_assert_str_eq(name, "vm's");
	ck_assert_uint_eq(size, MIB);
}
END_TEST

/* ---- virtxml_taps ---- */

START_TEST(test_taps_live)
{
	char out[64];

	ck_assert_int_eq(virtxml_taps(live_xml, out, sizeof(out)), 2);
	ck_assert_str_eq(out, "vnet7,tap1");
}
END_TEST

START_TEST(test_taps_none)
{
	char out[16];

	memset(out, 'Z', sizeof(out));
	ck_assert_int_eq(taps_of("<domain type='qemu'><devices><disk type='file'>"
				 "<target dev='vda' bus='virtio'/></disk></devices></domain>",
				 out, sizeof(out)),
			 0);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(taps_of("", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(taps_of("", out, 0), 0);
}
END_TEST

START_TEST(test_taps_without_target)
{
	char out[64];

	/* user-mode networking has no tap; the next element's <target> is not its */
	ck_assert_int_eq(
	    taps_of("<devices><interface type='user'><mac address='52:54:00:00:00:01'/>"
		    "<model type='virtio'/><alias name='net0'/></interface>"
		    "<interface type='ethernet'><target dev='vnet3'/></interface>"
		    "<interface type='user'><alias name='net2'/></interface>"
		    "<console type='pty'><target type='serial' port='0'/></console>"
		    "<channel type='unix'><target type='virtio' dev='notatap'/></channel>"
		    "</devices>",
		    out, sizeof(out)),
	    1);
	ck_assert_str_eq(out, "vnet3");
	/* a <target> without dev does not borrow the next interface's */
	ck_assert_int_eq(taps_of("<devices>"
				 "<interface type='ethernet'><target managed='no'/></interface>"
				 "<interface type='ethernet'><target dev='tap1'/></interface>"
				 "</devices>",
				 out, sizeof(out)),
			 1);
	ck_assert_str_eq(out, "tap1");
	/* an empty dev is no tap */
	ck_assert_int_eq(taps_of("<devices>"
				 "<interface type='ethernet'><target dev=''/></interface>"
				 "<interface type='ethernet'><target dev=\"tap2\"/></interface>"
				 "</devices>",
				 out, sizeof(out)),
			 1);
	ck_assert_str_eq(out, "tap2");
}
END_TEST

START_TEST(test_taps_nospace)
{
	char out[16];

	/* "vnet7,tap1" needs 11 bytes */
	memset(out, 'Z', sizeof(out));
	ck_assert_int_eq(virtxml_taps(live_xml, out, 11), 2);
	ck_assert_str_eq(out, "vnet7,tap1");
	ck_assert_int_eq(out[11], 'Z');
	memset(out, 'Z', sizeof(out));
	ck_assert_int_eq(virtxml_taps(live_xml, out, 10), -ENOSPC);
	ck_assert_int_eq(out[10], 'Z');
	ck_assert_int_eq(virtxml_taps(live_xml, out, 6), -ENOSPC);
	ck_assert_int_eq(virtxml_taps(live_xml, out, 5), -ENOSPC);
	ck_assert_int_eq(virtxml_taps(live_xml, out, 1), -ENOSPC);
	ck_assert_int_eq(virtxml_taps(live_xml, out, 0), -ENOSPC);
	ck_assert_int_eq(out[10], 'Z');
}
END_TEST

/* ---- truncated documents ---- */

START_TEST(test_truncated_small)
{
	char out[64];
	uint64_t size;
	char *d;

	d = dup_str("<domain type='qe");
	ck_assert_int_eq(virtxml_domain_type(d, out, sizeof(out)), -ENOENT);
	free(d);
	d = dup_str("<domain type='qemu");
	ck_assert_int_eq(virtxml_domain_type(d, out, sizeof(out)), -ENOENT);
	free(d);
	d = dup_str("<domain type=");
	ck_assert_int_eq(virtxml_domain_type(d, out, sizeof(out)), -ENOENT);
	free(d);
	d = dup_str("<domain type");
	ck_assert_int_eq(virtxml_domain_type(d, out, sizeof(out)), -ENOENT);
	free(d);
	d = dup_str("<domain");
	ck_assert_int_eq(virtxml_domain_type(d, out, sizeof(out)), -ENOENT);
	free(d);
	d = dup_str("<");
	ck_assert_int_eq(virtxml_domain_type(d, out, sizeof(out)), -ENOENT);
	free(d);
	/* a start tag that never ends */
	d = dup_str("<domain type='qemu' id='3'");
	ck_assert_int_eq(virtxml_domain_type(d, out, sizeof(out)), -ENOENT);
	free(d);

	/* a document cut anywhere holds nothing, not the part before the cut */
	d = dup_str("<shmem name='x'><size unit='M'>4");
	ck_assert_int_eq(virtxml_shmem(d, out, sizeof(out), &size), -ENOENT);
	free(d);
	d = dup_str("<shmem name='x'><size unit='M");
	ck_assert_int_eq(virtxml_shmem(d, out, sizeof(out), &size), -ENOENT);
	free(d);
	d = dup_str("<shmem name='x'><size");
	ck_assert_int_eq(virtxml_shmem(d, out, sizeof(out), &size), -ENOENT);
	ck_assert_uint_eq(size, 0);
	free(d);
	d = dup_str("<shmem name='x");
	ck_assert_int_eq(virtxml_shmem(d, out, sizeof(out), &size), -ENOENT);
	free(d);

	d = dup_str("<interface type='ethernet'><target dev='vnet0'/>");
	ck_assert_int_eq(virtxml_taps(d, out, sizeof(out)), 0);
	free(d);
	d = dup_str("<devices><interface type='ethernet'><target dev='vnet0'/></interface>"
		    "<interface><target dev='vn");
	ck_assert_int_eq(virtxml_taps(d, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "");
	free(d);
}
END_TEST

START_TEST(test_truncated_every_prefix)
{
	size_t len = strlen(live_xml), n;
	char out[64], name[64];
	uint64_t size;
	int rc;

	/* every prefix: found values are whole and right, or not found; never a read past the end */
	for (n = 0; n <= len; n++) {
		char *d = dup_exact(live_xml, n);

		rc = virtxml_domain_type(d, out, sizeof(out));
		ck_assert_msg(rc == -ENOENT || (rc == 0 && !strcmp(out, "qemu")),
			      "domain type at %zu: %d '%s'", n, rc, out);
		rc = virtxml_shmem(d, name, sizeof(name), &size);
		ck_assert_msg(
		    rc == -ENOENT || rc == -EINVAL ||
			(rc == 0 && !strcmp(name, "vnoise-x") && (size == 0 || size == 4 * MIB)),
		    "shmem at %zu: %d '%s' %llu", n, rc, name, (unsigned long long)size);
		rc = virtxml_taps(d, out, sizeof(out));
		ck_assert_msg((rc == 0 && !strcmp(out, "")) || (rc == 1 && !strcmp(out, "vnet7")) ||
				  (rc == 2 && !strcmp(out, "vnet7,tap1")),
			      "taps at %zu: %d '%s'", n, rc, out);
		if (n == len) {
			ck_assert_int_eq(rc, 2);
			ck_assert_int_eq(virtxml_shmem(d, name, sizeof(name), &size), 0);
			ck_assert_uint_eq(size, 4 * MIB);
		}
		free(d);
	}
}
END_TEST

/* ---- virtxml_channel_path ---- */

/* libvirt's live form: two unix channels, the agent's first; a spice channel without a path. */
static const char chan_xml[] =
    "<domain type='qemu'><devices>\n"
    "    <channel type='spicevmc'>\n"
    "      <target type='virtio' name='org.vnoise.0' state='disconnected'/>\n"
    "    </channel>\n"
    "    <channel type='unix'>\n"
    "      <source mode='bind' path='/run/libvirt/qemu/channel/3-d/org.qemu.guest_agent.0'/>\n"
    "      <target type='virtio' name='org.qemu.guest_agent.0' state='connected'/>\n"
    "      <alias name='channel0'/>\n"
    "    </channel>\n"
    "    <channel type='unix'>\n"
    "      <source mode='bind' path='/tmp/a&amp;b/vnoise.sock'/>\n"
    "      <target type='virtio' name='org.vnoise.0' state='disconnected'/>\n"
    "      <alias name='channel1'/>\n"
    "      <address type='virtio-serial' controller='0' bus='0' port='2'/>\n"
    "    </channel>\n"
    "</devices></domain>\n";

START_TEST(test_channel_path_found)
{
	char path[128];

	ck_assert_int_eq(virtxml_channel_path(chan_xml, "org.vnoise.0", path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/tmp/a&b/vnoise.sock");
	ck_assert_int_eq(
	    virtxml_channel_path(chan_xml, "org.qemu.guest_agent.0", path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/run/libvirt/qemu/channel/3-d/org.qemu.guest_agent.0");
	/* the shared live XML of this suite has the agent channel only */
	ck_assert_int_eq(virtxml_channel_path(live_xml, "org.vnoise.0", path, sizeof(path)),
			 -ENOENT);
}
END_TEST

START_TEST(test_channel_path_absent_or_bad)
{
	char path[128], small[8];

	ck_assert_int_eq(virtxml_channel_path(chan_xml, "org.vnoise", path, sizeof(path)), -ENOENT);
	ck_assert_int_eq(virtxml_channel_path("<domain/>", "org.vnoise.0", path, sizeof(path)),
			 -ENOENT);
	ck_assert_int_eq(virtxml_channel_path(chan_xml, "org.vnoise.0", small, sizeof(small)),
			 -ENOSPC);
	/* no source path; a target of another type; an unterminated channel */
	ck_assert_int_eq(
	    virtxml_channel_path("<channel type='unix'><source mode='bind'/>"
				 "<target type='virtio' name='org.vnoise.0'/></channel>",
				 "org.vnoise.0", path, sizeof(path)),
	    -ENOENT);
	ck_assert_int_eq(
	    virtxml_channel_path("<channel type='unix'><source path='/x'/>"
				 "<target type='guestfwd' name='org.vnoise.0'/></channel>",
				 "org.vnoise.0", path, sizeof(path)),
	    -ENOENT);
	ck_assert_int_eq(virtxml_channel_path("<channel type='unix'><source path='/x'/>"
					      "<target type='virtio' name='org.vnoise.0'/>",
					      "org.vnoise.0", path, sizeof(path)),
			 -ENOENT);
	/* the source of the NEXT channel is not this one's */
	ck_assert_int_eq(
	    virtxml_channel_path("<devices><channel type='unix'>"
				 "<target type='virtio' name='org.vnoise.0'/></channel>"
				 "<channel type='unix'><source path='/other'/>"
				 "<target type='virtio' name='x.y'/></channel></devices>",
				 "org.vnoise.0", path, sizeof(path)),
	    -ENOENT);
}
END_TEST

/* Every prefix of the XML: never reads past the NUL, finds the path only in the whole document. */
START_TEST(test_channel_path_prefixes)
{
	size_t n = strlen(chan_xml), i;
	char *buf = malloc(n + 1), path[128];

	ck_assert_ptr_nonnull(buf);
	for (i = 0; i <= n; i++) {
		int rc;

		memcpy(buf, chan_xml, i);
		buf[i] = 0;
		rc = virtxml_channel_path(buf, "org.vnoise.0", path, sizeof(path));
		/* the last byte is the newline after </domain> */
		ck_assert_int_eq(rc, i >= n - 1 ? 0 : -ENOENT);
	}
	free(buf);
}
END_TEST

START_TEST(test_has_channel)
{
	/* an inactive domain: the channel is there, its socket path comes when it starts */
	static const char inactive[] =
	    "<domain type='qemu'><devices><channel type='unix'><source mode='bind'/>"
	    "<target type='virtio' name='org.vnoise.0'/></channel></devices></domain>";
	char path[64];

	ck_assert(virtxml_has_channel(inactive, "org.vnoise.0"));
	ck_assert_int_eq(virtxml_channel_path(inactive, "org.vnoise.0", path, sizeof(path)),
			 -ENOENT);
	ck_assert(virtxml_has_channel(chan_xml, "org.vnoise.0"));
	ck_assert(virtxml_has_channel(live_xml, "org.qemu.guest_agent.0"));
	ck_assert(!virtxml_has_channel(live_xml, "org.vnoise.0"));
	ck_assert(!virtxml_has_channel(inactive, "org.vnoise"));
	/* the name in an attribute of something else is not a channel */
	ck_assert(!virtxml_has_channel("<domain><description>'org.vnoise.0'</description>"
				       "<disk name='org.vnoise.0'/></domain>",
				       "org.vnoise.0"));
	ck_assert(!virtxml_has_channel("<domain><channel", "org.vnoise.0"));
}
END_TEST

static Suite *virtxml_suite(void)
{
	Suite *s = suite_create("virtxml");
	TCase *tc;

	tc = tcase_create("domain_type");
	tcase_add_test(tc, test_domain_type);
	suite_add_tcase(s, tc);

	tc = tcase_create("shmem");
	tcase_add_test(tc, test_shmem_live);
	tcase_add_test(tc, test_shmem_units);
	tcase_add_test(tc, test_shmem_bad_size);
	tcase_add_test(tc, test_shmem_absent);
	tcase_add_test(tc, test_shmem_no_size);
	tcase_add_test(tc, test_shmem_first);
	suite_add_tcase(s, tc);

	tc = tcase_create("taps");
	tcase_add_test(tc, test_taps_live);
	tcase_add_test(tc, test_taps_none);
	tcase_add_test(tc, test_taps_without_target);
	tcase_add_test(tc, test_taps_nospace);
	suite_add_tcase(s, tc);

	tc = tcase_create("channel");
	tcase_add_test(tc, test_channel_path_found);
	tcase_add_test(tc, test_channel_path_absent_or_bad);
	tcase_add_test(tc, test_channel_path_prefixes);
	tcase_add_test(tc, test_has_channel);
	suite_add_tcase(s, tc);

	tc = tcase_create("truncated");
	tcase_set_timeout(
	    tc, 30); /* every prefix parsed three times: about a second, more on a busy machine */
	tcase_add_test(tc, test_truncated_small);
	tcase_add_test(tc, test_truncated_every_prefix);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(virtxml_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
