/* SPDX-License-Identifier: MIT */
/*
 * guestdev: finds the guest-side devices of the vnoise channel through sysfs, without udev — the ivshmem-plain
 * PCI device (vendor 0x1af4, device 0x1110: its BAR2 is the shared memory, sysfs "resource2") and a
 * virtio-serial port by name (/sys/class/virtio-ports/vportNpM/name -> /dev/vportNpM). The sysfs root is a
 * parameter so tests can point it at a fake tree. No allocation; paths are written into caller buffers.
 */
#ifndef VNOISE_GUEST_AGENT_GUESTDEV_H
#define VNOISE_GUEST_AGENT_GUESTDEV_H

#include <stddef.h>
#include <stdint.h>

#define GUESTDEV_IVSHMEM_VENDOR 0x1af4u
#define GUESTDEV_IVSHMEM_DEVICE 0x1110u

/*
 * First ivshmem-plain device under <sysfs>/bus/pci/devices (sorted by address): its BAR2 file
 * (".../resource2") into path and the BAR's size in bytes (from the "resource" table) into *size.
 * sysfs NULL means "/sys". Returns 0, -ENOENT (none), -ENAMETOOLONG, or -errno of the scan.
 */
int guestdev_find_ivshmem(const char *sysfs, char *path, size_t cap, uint64_t *size)
    __attribute__((warn_unused_result));

/*
 * The virtio-serial port named name: its device node "<dev>/vportNpM" into path (dev NULL means "/dev").
 * Returns 0, -ENOENT (no such port) or -ENAMETOOLONG.
 */
int guestdev_find_port(const char *sysfs, const char *dev, const char *name, char *path, size_t cap)
    __attribute__((warn_unused_result));

#endif
