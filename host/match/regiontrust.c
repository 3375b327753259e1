/* SPDX-License-Identifier: MIT */
/*
 * regiontrust: the owner and mode a region file must have (see regiontrust.h).
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "match/regiontrust.h"
#include "util/log.h"
#include "util/parse.h"

/* One line of qemu.conf: the quoted value of key "user" into user. 1 set, 0 another line, -EINVAL bad. */
static int conf_line(const char *l, const char *end, char *user, size_t len)
{
	const char *v;

	while (l < end && (*l == ' ' || *l == '\t'))
		l++;
	if ((size_t)(end - l) < 4 || memcmp(l, "user", 4))
		return 0;
	l += 4;
	while (l < end && (*l == ' ' || *l == '\t'))
		l++;
	if (l == end || *l != '=')
		return 0; /* another key that starts with "user" */
	l++;
	while (l < end && (*l == ' ' || *l == '\t'))
		l++;
	if (l == end || *l != '"')
		return -EINVAL;
	v = ++l;
	while (l < end && *l != '"')
		l++;
	if (l == end || l == v || (size_t)(l - v) >= len)
		return -EINVAL;
	memcpy(user, v, (size_t)(l - v));
	user[l - v] = 0;
	return 1;
}

int regiontrust_conf_user(const char *text, char *user, size_t len)
{
	int found = -ENOENT;

	while (*text) {
		const char *end = strchr(text, '\n');
		int rc;

		if (!end)
			end = text + strlen(text);
		rc = conf_line(text, end, user, len);
		if (rc < 0)
			return rc;
		if (rc)
			found = 0;
		text = *end ? end + 1 : end;
	}
	return found;
}

void regiontrust_resolve(const char *name, struct regiontrust_who *out)
{
	const struct passwd *pw;
	uint64_t id;

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	pw = name[0] == '+' ? NULL : getpwnam(name);
	if (pw) {
		out->known = out->has_gid = true;
		out->uid = pw->pw_uid;
		out->gid = pw->pw_gid;
		return;
	}
	if (parse_u64(name + (name[0] == '+'), &id) || id >= (uid_t)-1)
		return; /* libvirt reads a name that is no user as a uid too */
	out->known = true;
	out->uid = (uid_t)id;
	pw = getpwuid(out->uid);
	if (pw) {
		out->has_gid = true;
		out->gid = pw->pw_gid;
	}
}

const struct regiontrust_who *regiontrust_qemu(void)
{
	static struct regiontrust_who who;
	static bool done;
	char text[65536], user[64];
	size_t n = 0;
	FILE *f;

	if (done)
		return &who;
	done = true;
	f = fopen(REGIONTRUST_QEMU_CONF, "re");
	if (f) {
		n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
	}
	text[n] = 0;
	if (!regiontrust_conf_user(text, user, sizeof(user))) {
		regiontrust_resolve(user, &who);
		if (!who.known)
			log_warn(
			    "%s: QEMU's user '%s' is not known here: region files are taken only "
			    "from root",
			    REGIONTRUST_QEMU_CONF, user);
		return &who;
	}
	regiontrust_resolve("libvirt-qemu", &who);
	if (!who.known)
		regiontrust_resolve("qemu", &who);
	return &who;
}

int regiontrust_check(const struct stat *st, const struct regiontrust_who *q, uid_t self, char *why,
		      size_t len)
{
	bool qemu_owns = q->known && st->st_uid == q->uid;
	bool group_ok = st->st_gid == 0 || (q->has_gid && st->st_gid == q->gid);

	if (!S_ISREG(st->st_mode)) {
		log_reason(why, len, "not a regular file");
		return -EACCES;
	}
	if (st->st_uid != 0 && st->st_uid != self && !qemu_owns) {
		bool named = q->known && q->uid != 0;

		log_reason(why, len, "owner uid %u, not root%s%s", (unsigned)st->st_uid,
			   named ? " or " : "", named ? q->name : "");
		return -EACCES;
	}
	if ((st->st_mode & S_IWOTH) || ((st->st_mode & S_IWGRP) && !group_ok)) {
		log_reason(why, len, "writable by %s (mode %04o)",
			   st->st_mode & S_IWOTH ? "others" : "its group",
			   (unsigned)(st->st_mode & 07777));
		return -EACCES;
	}
	return 0;
}
