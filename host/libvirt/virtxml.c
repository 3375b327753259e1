/* SPDX-License-Identifier: MIT */
/*
 * virtxml: XPath queries over a libvirt domain XML (see virtxml.h). Names from outside (a channel's
 * target) are bound as XPath variables.
 */
#include <errno.h>
#include <string.h>
#include "util/parse.h"
#include "libvirt/virtxml.h"
#include "libvirt/xmldoc.h"

/* The shmem virtxml_shmem() reads. */
#define SHMEM "(//shmem[@name])[1]"

static struct xmldoc *doc_of(const char *xml)
{
	return xml ? xmldoc_parse(xml, strlen(xml)) : NULL;
}

int virtxml_domain_type(const char *xml, char *out, size_t cap)
{
	struct xmldoc *d = doc_of(xml);
	int rc = -ENOENT;

	if (d && xmldoc_string(d, out, cap, "/domain/@type") == 0)
		rc = 0;
	xmldoc_free(d);
	return rc;
}

/* Bytes per unit of a <size> (libvirt's binary units), 0 if unknown. */
static uint64_t unit_bytes(const char *unit)
{
	if (!strcmp(unit, "b") || !strcmp(unit, "bytes"))
		return 1;
	if (!strcmp(unit, "K") || !strcmp(unit, "KiB"))
		return 1ull << 10;
	if (!strcmp(unit, "M") || !strcmp(unit, "MiB"))
		return 1ull << 20;
	if (!strcmp(unit, "G") || !strcmp(unit, "GiB"))
		return 1ull << 30;
	return 0;
}

int virtxml_shmem(const char *xml, char *name, size_t cap, uint64_t *size_bytes)
{
	struct xmldoc *d = doc_of(xml);
	char unit[16] = "M", num[24];
	uint64_t v, mul;
	int rc = -ENOENT;

	*size_bytes = 0;
	if (!d || xmldoc_string(d, name, cap, SHMEM "/@name"))
		goto out;
	rc = 0;
	if (xmldoc_count(d, SHMEM "/size") <= 0)
		goto out;
	rc = -EINVAL;
	if (xmldoc_string(d, unit, sizeof(unit), SHMEM "/size[1]/@unit") == -ENOSPC)
		goto out;
	mul = unit_bytes(unit);
	if (!mul || xmldoc_string(d, num, sizeof(num), SHMEM "/size[1]") || parse_u64(num, &v) ||
	    v > UINT64_MAX / mul)
		goto out;
	*size_bytes = v * mul;
	rc = 0;
out:
	xmldoc_free(d);
	return rc;
}

int virtxml_taps(const char *xml, char *out, size_t cap)
{
	struct xmldoc *d = doc_of(xml);
	size_t used = 0;
	int i, n = 0, count = d ? xmldoc_count(d, "//interface") : 0;

	if (cap)
		out[0] = 0;
	for (i = 1; i <= count; i++) {
		char dev[64];
		size_t l;

		if (xmldoc_string(d, dev, sizeof(dev),
				  "(//interface)[%d]/descendant::target[1]/@dev", i) ||
		    !dev[0])
			continue;
		l = strlen(dev);
		if (used + l + (n ? 1 : 0) + 1 > cap) {
			n = -ENOSPC;
			break;
		}
		if (n)
			out[used++] = ',';
		memcpy(out + used, dev, l + 1);
		used += l;
		n++;
	}
	xmldoc_free(d);
	return n;
}

int virtxml_channel_path(const char *xml, const char *target, char *path, size_t cap)
{
	struct xmldoc *d = doc_of(xml);
	int rc = -ENOENT;

	if (d && !xmldoc_var(d, "target", target)) {
		rc = xmldoc_string(d, path, cap,
				   "(//channel[@type='unix'][target[@type='virtio' and "
				   "@name=$target]])[1]/source/@path");
		if (rc != -ENOSPC && rc)
			rc = -ENOENT;
	}
	xmldoc_free(d);
	return rc;
}

bool virtxml_has_channel(const char *xml, const char *target)
{
	struct xmldoc *d = doc_of(xml);
	bool has = d && !xmldoc_var(d, "target", target) &&
		   xmldoc_count(d, "//channel[target[@name=$target]]") > 0;

	xmldoc_free(d);
	return has;
}
