/* SPDX-License-Identifier: MIT */
/*
 * regiontrust: whether a domain's region file (/dev/shm/<name>, in world-writable /dev/shm) may be used as
 * its guest channel. Anyone on the host can create that name before the domain starts (QEMU then maps their
 * file) or truncate a file they own, so vnoise-host takes only a regular file owned by root, by QEMU's user
 * (libvirt's qemu.conf "user", default libvirt-qemu, or qemu) or by vnoise-host's own user, and writable by
 * nobody else: not by others, and by its group only when that is root's or QEMU's group. The check is made
 * on the opened file (fstat of the fd that is then mapped: nothing can swap it in between).
 */
#ifndef VNOISE_HOST_MATCH_REGIONTRUST_H
#define VNOISE_HOST_MATCH_REGIONTRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define REGIONTRUST_QEMU_CONF "/etc/libvirt/qemu.conf"

/* QEMU's user as vnoise-host resolved it. */
struct regiontrust_who {
	bool known; /* uid (and gid when has_gid) resolved */
	bool has_gid;
	uid_t uid;
	gid_t gid; /* the user's primary group */
	char name[64]; /* as configured ("libvirt-qemu", "+107") */
};

/*
 * The value of qemu.conf's `user = "NAME"` in text (the last one set; comments and other keys skipped) into
 * user (len bytes). 0, -ENOENT when not set, -EINVAL when malformed or too long.
 */
int regiontrust_conf_user(const char *text, char *user, size_t len)
    __attribute__((warn_unused_result));
/* name ("NAME" or "+UID") resolved with getpwnam/getpwuid into *out (known false when nobody has it). */
void regiontrust_resolve(const char *name, struct regiontrust_who *out);
/* QEMU's user on this host: qemu.conf's, else libvirt-qemu, else qemu; resolved once (not thread-safe). */
const struct regiontrust_who *regiontrust_qemu(void);
/*
 * Whether the file st describes may be a region, with q as QEMU's user and self as this process's uid.
 * 0, or -EACCES with the one-line reason in why ("owner uid 1000, not root or libvirt-qemu", "writable by
 * others (mode 0666)", "not a regular file").
 */
int regiontrust_check(const struct stat *st, const struct regiontrust_who *q, uid_t self, char *why,
		      size_t len) __attribute__((warn_unused_result));

#endif
