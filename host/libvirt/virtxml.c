/* SPDX-License-Identifier: MIT */
/*
 * virtxml: bounded scanners over libvirt domain XML (see virtxml.h).
 */
#include <errno.h>
#include <string.h>
#include "util/parse.h"
#include "libvirt/virtxml.h"

/* Find "<elem" followed by whitespace, '>' or '/' at or after p. */
static const char *find_elem(const char *p, const char *elem)
{
	size_t n = strlen(elem);

	while ((p = strchr(p, '<'))) {
		p++;
		if (!strncmp(p, elem, n) &&
		    (p[n] == ' ' || p[n] == '\t' || p[n] == '\n' || p[n] == '>' || p[n] == '/'))
			return p + n;
	}
	return NULL;
}

/* Copy a quoted value [s, e) with entity decoding. Returns 0 or -ENOSPC. */
static int copy_value(const char *s, const char *e, char *out, size_t cap)
{
	static const struct {
		const char *ent;
		char c;
	} ents[] = { { "&apos;", '\'' },
		     { "&quot;", '"' },
		     { "&amp;", '&' },
		     { "&lt;", '<' },
		     { "&gt;", '>' } };
	size_t o = 0;

	while (s < e) {
		char c = *s;
		size_t adv = 1, i;

		if (c == '&') {
			for (i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
				size_t l = strlen(ents[i].ent);

				if ((size_t)(e - s) >= l && !strncmp(s, ents[i].ent, l)) {
					c = ents[i].c;
					adv = l;
					break;
				}
			}
		}
		if (o + 1 >= cap)
			return -ENOSPC;
		out[o++] = c;
		s += adv;
	}
	if (!cap)
		return -ENOSPC;
	out[o] = 0;
	return 0;
}

const char *virtxml_attr(const char *from, const char *elem, const char *attr, char *out,
			 size_t cap)
{
	size_t an = strlen(attr);
	const char *p = from;

	while ((p = find_elem(p, elem))) {
		const char *end = strchr(p, '>');
		const char *q = p;

		if (!end)
			return NULL;
		while (q < end) {
			const char *v, *ve;
			char quote;

			while (q < end && (*q == ' ' || *q == '\t' || *q == '\n'))
				q++;
			if (q >= end)
				break;
			if (!strncmp(q, attr, an) && q[an] == '=' &&
			    (q[an + 1] == '\'' || q[an + 1] == '"')) {
				quote = q[an + 1];
				v = q + an + 2;
				ve = memchr(v, quote, (size_t)(end - v));
				if (!ve || copy_value(v, ve, out, cap))
					return NULL;
				return end + 1;
			}
			/* skip this attribute: name, '=', quoted value */
			while (q < end && *q != '=' && *q != ' ')
				q++;
			if (q < end && *q == '=' && (q[1] == '\'' || q[1] == '"')) {
				quote = q[1];
				ve = memchr(q + 2, quote, (size_t)(end - q - 2));
				q = ve ? ve + 1 : end;
			} else {
				q++;
			}
		}
		p = end + 1;
	}
	return NULL;
}

int virtxml_domain_type(const char *xml, char *out, size_t cap)
{
	return virtxml_attr(xml, "domain", "type", out, cap) ? 0 : -ENOENT;
}

int virtxml_shmem(const char *xml, char *name, size_t cap, uint64_t *size_bytes)
{
	const char *p = virtxml_attr(xml, "shmem", "name", name, cap);
	const char *close, *sz, *te;
	char tag[64], unit[sizeof(tag)] = "M";
	uint64_t v, mul;

	*size_bytes = 0;
	if (!p)
		return -ENOENT;
	close = strstr(p, "</shmem>");
	sz = find_elem(p, "size");
	if (!sz || (close && sz > close))
		return 0;
	/* the unit of this <size> only: scan a copy of its start tag, not the rest of the document */
	te = strchr(sz, '>');
	if (!te || (size_t)(te + 1 - (sz - 5)) >= sizeof(tag))
		return -EINVAL;
	memcpy(tag, sz - 5, (size_t)(te + 1 - (sz - 5)));
	tag[te + 1 - (sz - 5)] = 0;
	if (virtxml_attr(tag, "size", "unit", unit, sizeof(unit)) == NULL)
		strcpy(unit, "M");
	sz = strchr(sz, '>');
	if (!sz)
		return -EINVAL;
	{
		char num[24];
		const char *e = strchr(sz + 1, '<');

		if (!e || (size_t)(e - sz - 1) >= sizeof(num))
			return -EINVAL;
		memcpy(num, sz + 1, (size_t)(e - sz - 1));
		num[e - sz - 1] = 0;
		if (parse_u64(num, &v))
			return -EINVAL;
	}
	if (!strcmp(unit, "b") || !strcmp(unit, "bytes"))
		mul = 1;
	else if (!strcmp(unit, "K") || !strcmp(unit, "KiB"))
		mul = 1ull << 10;
	else if (!strcmp(unit, "M") || !strcmp(unit, "MiB"))
		mul = 1ull << 20;
	else if (!strcmp(unit, "G") || !strcmp(unit, "GiB"))
		mul = 1ull << 30;
	else
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -EINVAL;
	*size_bytes = v * mul;
	return 0;
}

int virtxml_taps(const char *xml, char *out, size_t cap)
{
	const char *p = xml;
	size_t used = 0;
	int n = 0;

	if (cap)
		out[0] = 0;
	while ((p = find_elem(p, "interface"))) {
		const char *close = strstr(p, "</interface>");
		char dev[64];
		const char *t, *te = NULL;
		size_t l;

		if (!close)
			break;
		t = find_elem(p, "target");
		if (t && t < close)
			te = virtxml_attr(t - 7, "target", "dev", dev, sizeof(dev));
		/* te past close: the dev of a later element, not of this interface's <target> */
		if (te && te <= close && dev[0]) {
			l = strlen(dev);
			if (used + l + (n ? 1 : 0) + 1 > cap)
				return -ENOSPC;
			if (n)
				out[used++] = ',';
			memcpy(out + used, dev, l + 1);
			used += l;
			n++;
		}
		p = close;
	}
	return n;
}

/* Copy the element text [from, to) into buf (cap bytes) for a scan that must not leave it. 0 or -ENOSPC. */
static int copy_span(const char *from, const char *to, char *buf, size_t cap)
{
	if ((size_t)(to - from) >= cap)
		return -ENOSPC;
	memcpy(buf, from, (size_t)(to - from));
	buf[to - from] = 0;
	return 0;
}

int virtxml_channel_path(const char *xml, const char *target, char *path, size_t cap)
{
	char el[4096], src[sizeof(el)], v[256];
	const char *p = xml, *end;

	while ((p = find_elem(p, "channel"))) {
		end = strstr(p, "</channel>");
		if (!end)
			return -ENOENT;
		/* el: "<channel ...>...</channel>" of this element only; an oversize one is skipped */
		if (copy_span(p - 8, end + 10, el, sizeof(el)) == 0 &&
		    virtxml_attr(el, "channel", "type", v, sizeof(v)) && !strcmp(v, "unix") &&
		    virtxml_attr(el, "target", "name", v, sizeof(v)) && !strcmp(v, target) &&
		    virtxml_attr(el, "target", "type", v, sizeof(v)) && !strcmp(v, "virtio")) {
			/* the value is shorter than its element: a buffer of el's size holds it */
			if (!virtxml_attr(el, "source", "path", src, sizeof(src)))
				return -ENOENT;
			if (strlen(src) >= cap)
				return -ENOSPC;
			memcpy(path, src, strlen(src) + 1);
			return 0;
		}
		p = end + 10;
	}
	return -ENOENT;
}
