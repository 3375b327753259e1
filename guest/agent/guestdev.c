/* SPDX-License-Identifier: MIT */
/*
 * guestdev: sysfs scans for the ivshmem BAR2 and virtio-serial ports by name (see guestdev.h).
 * REFERENCE.md §3, §4: no /dev/virtio-ports links without udev; find BAR2 by vendor/device.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/guestdev.h"

/* Read a small sysfs file into buf (NUL-terminated, trailing newline removed). */
static int read_attr(const char *path, char *buf, size_t cap)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return (int)n;
}

static int hex_attr(const char *dir, const char *name, unsigned long *v)
{
	char path[512], buf[32], *end;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (read_attr(path, buf, sizeof(buf)) <= 0)
		return -ENOENT;
	errno = 0;
	*v = strtoul(buf, &end, 16);
	return errno || *end ? -EINVAL : 0;
}

/* Size of BAR n from the "resource" table: line n is "start end flags" in hex. */
static int bar_size(const char *dir, int bar, uint64_t *size)
{
	char path[512], buf[4096], *line, *save = NULL;
	int i = 0;

	if (snprintf(path, sizeof(path), "%s/resource", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (read_attr(path, buf, sizeof(buf)) <= 0)
		return -ENOENT;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		unsigned long long start, end, flags;

		if (i != bar)
			continue;
		if (sscanf(line, "%llx %llx %llx", &start, &end, &flags) != 3 || end < start)
			return -EINVAL;
		*size = start || end ? end - start + 1 : 0;
		return 0;
	}
	return -ENOENT;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int guestdev_find_ivshmem(const char *sysfs, char *path, size_t cap, uint64_t *size)
{
	char base[256], dir[512];
	char *names[256];
	struct dirent *de;
	int n = 0, i, rc = -ENOENT;
	DIR *d;

	snprintf(base, sizeof(base), "%s/bus/pci/devices", sysfs ? sysfs : "/sys");
	d = opendir(base);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < 256) {
		if (de->d_name[0] == '.')
			continue;
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]), cmp_names);
	for (i = 0; i < n && rc == -ENOENT; i++) {
		unsigned long vendor, device;

		if (snprintf(dir, sizeof(dir), "%s/%s", base, names[i]) >= (int)sizeof(dir))
			continue;
		if (hex_attr(dir, "vendor", &vendor) || hex_attr(dir, "device", &device) ||
		    vendor != GUESTDEV_IVSHMEM_VENDOR || device != GUESTDEV_IVSHMEM_DEVICE)
			continue;
		if (snprintf(path, cap, "%s/resource2", dir) >= (int)cap) {
			rc = -ENAMETOOLONG;
			break;
		}
		*size = 0;
		rc = bar_size(dir, 2, size);
		if (rc == -ENOENT)
			rc = 0; /* no resource table: the caller learns the size from the file */
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	return rc;
}

int guestdev_find_port(const char *sysfs, const char *dev, const char *name, char *path, size_t cap)
{
	char base[256], attr[512], buf[256];
	struct dirent *de;
	int rc = -ENOENT;
	DIR *d;

	snprintf(base, sizeof(base), "%s/class/virtio-ports", sysfs ? sysfs : "/sys");
	d = opendir(base);
	if (!d)
		return -ENOENT;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (snprintf(attr, sizeof(attr), "%s/%s/name", base, de->d_name) >=
		    (int)sizeof(attr))
			continue;
		if (read_attr(attr, buf, sizeof(buf)) <= 0 || strcmp(buf, name))
			continue;
		rc = snprintf(path, cap, "%s/%s", dev ? dev : "/dev", de->d_name) >= (int)cap
			 ? -ENAMETOOLONG
			 : 0;
		break;
	}
	closedir(d);
	return rc;
}
