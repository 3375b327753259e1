/* SPDX-License-Identifier: MIT */
/*
 * qemuthread: classify QEMU threads by name (see qemuthread.h).
 */
#include <string.h>
#include "libvirt/qemuthread.h"

enum qemuthread_kind qemuthread_classify(const char *comm, unsigned *vcpu, char *accel,
					 size_t accel_cap)
{
	const char *p, *slash;
	unsigned v = 0;
	int digits = 0;

	if (!strncmp(comm, "IO ", 3))
		return QEMUTHREAD_IOTHREAD;
	if (strncmp(comm, "CPU ", 4))
		return QEMUTHREAD_OTHER;
	for (p = comm + 4; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
		v = v * 10 + (unsigned)(*p - '0');
	if (!digits || *p != '/')
		return QEMUTHREAD_OTHER;
	slash = p;
	if (vcpu)
		*vcpu = v;
	if (accel && accel_cap) {
		size_t l = strnlen(slash + 1, accel_cap - 1);

		memcpy(accel, slash + 1, l);
		accel[l] = 0;
	}
	return QEMUTHREAD_VCPU;
}
