/* SPDX-License-Identifier: MIT */
/* keyfile: load the report keys (see keyfile.h for the format). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "format/keyfile.h"
#include "util/parse.h"
#include "util/secmem.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int parse_line(const char *s, size_t len, struct keyfile *kf, unsigned lineno, char *err,
		      size_t errlen)
{
	char idbuf[8];
	size_t i = 0, j, nhex;
	int id;
	uint8_t *out;

	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i == len || s[i] == '#')
		return 0;
	for (j = i; j < len && s[j] != ' ' && s[j] != '\t'; j++)
		;
	if (j - i >= sizeof(idbuf)) {
		snprintf(err, errlen, "line %u: key id is not a number in 0..65535", lineno);
		return -EINVAL;
	}
	memcpy(idbuf, s + i, j - i);
	idbuf[j - i] = '\0';
	if (parse_int(idbuf, 0, 65535, &id)) {
		snprintf(err, errlen, "line %u: key id '%s' is not a number in 0..65535", lineno,
			 idbuf);
		return -EINVAL;
	}
	while (j < len && (s[j] == ' ' || s[j] == '\t'))
		j++;
	while (len > j && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
		len--;
	nhex = len - j;
	if (nhex < 32 || nhex > 2 * KEYFILE_KEY_MAX || nhex % 2) {
		snprintf(err, errlen, "line %u: key must be 32 to %d hex digits (an even number)",
			 lineno, 2 * KEYFILE_KEY_MAX);
		return -EINVAL;
	}
	for (size_t k = 0; k < kf->n; k++)
		if (kf->keys[k].id == id) {
			snprintf(err, errlen, "line %u: key id %d given twice", lineno, id);
			return -EINVAL;
		}
	if (kf->n == KEYFILE_MAX) {
		snprintf(err, errlen, "line %u: more than %d keys", lineno, KEYFILE_MAX);
		return -EINVAL;
	}
	out = kf->bytes[kf->n];
	for (size_t k = 0; k < nhex / 2; k++) {
		int hi = hexval((unsigned char)s[j + 2 * k]),
		    lo = hexval((unsigned char)s[j + 2 * k + 1]);

		if (hi < 0 || lo < 0) {
			snprintf(err, errlen,
				 "line %u: key has a character that is not a hex digit", lineno);
			return -EINVAL;
		}
		out[k] = (uint8_t)(hi << 4 | lo);
	}
	kf->keys[kf->n].id = (uint16_t)id;
	kf->keys[kf->n].key = out;
	kf->keys[kf->n].len = nhex / 2;
	kf->n++;
	return 0;
}

int keyfile_parse(const char *text, struct keyfile *kf, char *err, size_t errlen)
{
	unsigned lineno = 1;
	const char *s = text;
	int rc;

	memset(kf, 0, sizeof(*kf));
	kf->bytes = secmem_alloc(KEYFILE_MAX * sizeof(kf->bytes[0]));
	if (!kf->bytes) {
		snprintf(err, errlen, "no memory for the keys: %s", strerror(errno));
		return -ENOMEM;
	}
	while (*s) {
		const char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		rc = parse_line(s, len, kf, lineno, err, errlen);
		if (rc) {
			keyfile_clear(kf);
			return rc;
		}
		s += len + (e ? 1 : 0);
		lineno++;
	}
	if (!kf->n) {
		snprintf(err, errlen, "no key in it");
		keyfile_clear(kf);
		return -EINVAL;
	}
	kf->tab.keys = kf->keys;
	kf->tab.n = kf->n;
	return 0;
}

int keyfile_load(const char *path, struct keyfile *kf, char *err, size_t errlen)
{
	enum { TEXT_MAX = 8192 };
	char *text = NULL, why[160];
	struct stat st;
	ssize_t n;
	int fd, rc;

	memset(kf, 0, sizeof(*kf));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
		return rc;
	}
	text = secmem_alloc(TEXT_MAX); /* the hex text is key material too */
	if (!text) {
		snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
		rc = -ENOMEM;
		goto out;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "key file %s: not a regular file", path);
		rc = -EINVAL;
		goto out;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "key file %s: group or others may read it (chmod 600 it)",
			 path);
		rc = -EPERM;
		goto out;
	}
	n = read(fd, text, TEXT_MAX - 1);
	if (n < 0 || (size_t)n == TEXT_MAX - 1) {
		snprintf(err, errlen, "key file %s: %s", path,
			 n < 0 ? strerror(errno) : "larger than 8 KiB");
		rc = n < 0 ? -EIO : -EINVAL;
		goto out;
	}
	text[n] = '\0';
	if (memchr(text, '\0', (size_t)n)) {
		snprintf(err, errlen, "key file %s: binary content", path);
		rc = -EINVAL;
		goto out;
	}
	rc = keyfile_parse(text, kf, why, sizeof(why));
	if (rc)
		snprintf(err, errlen, "key file %s: %s", path, why);
out:
	secmem_free(text, TEXT_MAX);
	close(fd);
	return rc;
}

void keyfile_clear(struct keyfile *kf)
{
	if (!kf)
		return;
	secmem_free(kf->bytes,
		    KEYFILE_MAX * sizeof(kf->bytes[0])); /* wiped before it is unmapped */
	explicit_bzero(kf->keys, sizeof(kf->keys));
	kf->bytes = NULL;
	kf->n = 0;
	kf->tab.n = 0;
}
