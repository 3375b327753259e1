/* SPDX-License-Identifier: MIT */
/*
 * keyfile: the shared keys of the UDP reports (protocol/cluster.h), read from a file that nodes and the
 * collector both hold. Format: one key per line, "KEY_ID HEX", KEY_ID 0..65535, HEX 32 to 128 hex digits
 * (16 to 64 bytes; 32 random bytes recommended: `printf '1 %s\n' $(head -c32 /dev/urandom | xxd -p -c64)`);
 * blank lines and lines starting with '#' are ignored. The file must not be readable by group or others.
 */
#ifndef VNOISE_FORMAT_KEYFILE_H
#define VNOISE_FORMAT_KEYFILE_H

#include <stddef.h>
#include <stdint.h>
#include "format/datagram.h"

#define KEYFILE_MAX 16
#define KEYFILE_KEY_MAX 64

struct keyfile {
	struct datagram_key keys[KEYFILE_MAX]; /* keys[i].key points into bytes[i] */
	/* [KEYFILE_MAX] keys in their own pages (util/secmem: not in a core dump, wiped and unmapped by
	 * keyfile_clear()); NULL when empty */
	uint8_t (*bytes)[KEYFILE_KEY_MAX];
	struct datagram_keytab tab; /* over keys[0..n): pass &kf->tab to datagram_parse() */
	size_t n;
};

/*
 * Load path into *kf (its old contents are not freed: an empty or cleared one; keyfile_clear() it after). 0, or -ENOENT/-EACCES/... (open), -EPERM (group or others may read it), -EINVAL (a bad
 * line, a duplicate id, no key at all) with a one-line reason naming the line in err. The first key is the
 * one a node seals with.
 */
int keyfile_load(const char *path, struct keyfile *kf, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Parse text (the file's contents) into *kf: the same rules without the permission check; -ENOMEM when
 * the key pages cannot be had. */
int keyfile_parse(const char *text, struct keyfile *kf, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Wipe the key bytes (explicit_bzero) and unmap their pages; kf is empty after. NULL-safe, idempotent. */
void keyfile_clear(struct keyfile *kf);

#endif
