/* SPDX-License-Identifier: MIT */
/*
 * qemuthread: what a QEMU thread is, from its name (QEMU's -name debug-threads=on, which libvirt sets): a
 * vCPU thread and its index, an I/O thread, or anything else (emulator, workers). Pure functions, no
 * allocation.
 */
#ifndef VNOISE_HOST_LIBVIRT_QEMUTHREAD_H
#define VNOISE_HOST_LIBVIRT_QEMUTHREAD_H

#include <stddef.h>

/* QEMU thread kinds by name. */
enum qemuthread_kind { QEMUTHREAD_OTHER = 0, QEMUTHREAD_VCPU = 1, QEMUTHREAD_IOTHREAD = 2 };

/*
 * Classify a thread comm: "CPU 3/KVM" or "CPU 3/TCG" -> QEMUTHREAD_VCPU with *vcpu = 3 and accel "KVM"/"TCG";
 * "IO iothread1" / "IO mon_iothread" -> QEMUTHREAD_IOTHREAD; anything else QEMUTHREAD_OTHER. accel may be NULL.
 */
enum qemuthread_kind qemuthread_classify(const char *comm, unsigned *vcpu, char *accel,
					 size_t accel_cap);

#endif
