/* SPDX-License-Identifier: MIT */
/*
 * domsetup: the XML of vnoise's devices in a libvirt domain (see domsetup.h). Detection and extraction are
 * XPath queries through libvirt/xmldoc (names bound as variables, never pasted into an expression); an
 * element handed back is its exact bytes in the document, so removal leaves the rest as it was.
 */
#include "libvirt/domsetup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/parse.h"
#include "libvirt/xmldoc.h"

/* XPath over a document whose variables $shm, $chan and $bell are bound (doc_of()). */
#define OURS_SHMEM "//shmem[@name=$shm]"
#define PLAIN_SHMEM \
	OURS_SHMEM "[descendant::model[1]/@type='ivshmem-plain'][not(descendant::server)]"
#define CHANNEL_NAMED(var) "//channel[descendant::target[1]/@name=" var "]"
#define SERIAL_CONTROLLER "//controller[@type='virtio-serial']"

/* xml parsed, with $shm (shm_name, or "" when NULL), $chan and $bell bound; NULL if it does not parse. */
static struct xmldoc *doc_of(const char *xml, const char *shm_name)
{
	struct xmldoc *d = xml ? xmldoc_parse(xml, strlen(xml)) : NULL;

	if (d &&
	    (xmldoc_var(d, "shm", shm_name ? shm_name : "") ||
	     xmldoc_var(d, "chan", DOMSETUP_CHANNEL) || xmldoc_var(d, "bell", DOMSETUP_BELL))) {
		xmldoc_free(d);
		d = NULL;
	}
	return d;
}

/* Some node matches the expression. */
static bool has(struct xmldoc *d, const char *xpath)
{
	return xmldoc_count(d, "%s", xpath) > 0;
}

/* The decimal text of the first node xpath selects, if it is in [min, max]. 0 or -EINVAL. */
static int number_of(struct xmldoc *d, const char *xpath, uint64_t min, uint64_t max, uint64_t *out)
{
	char num[24];

	if (xmldoc_string(d, num, sizeof(num), "%s", xpath) || parse_u64(num, out) || *out < min ||
	    *out > max)
		return -EINVAL;
	return 0;
}

/* Append s to out escaped for an attribute value. Returns the new length or -ENOSPC. */
static int put_escaped(char *out, size_t cap, size_t o, const char *s)
{
	for (; *s; s++) {
		const char *r;
		char one[2] = { *s, 0 };

		switch (*s) {
		case '&':
			r = "&amp;";
			break;
		case '<':
			r = "&lt;";
			break;
		case '>':
			r = "&gt;";
			break;
		case '\'':
			r = "&apos;";
			break;
		case '"':
			r = "&quot;";
			break;
		default:
			r = one;
		}
		if (o + strlen(r) >= cap)
			return -ENOSPC;
		memcpy(out + o, r, strlen(r) + 1);
		o += strlen(r);
	}
	return (int)o;
}

/* <size unit='U'>N</size> of our (last) ivshmem-plain shmem as MiB (0: absent, not whole MiB or unparseable). */
static uint32_t shmem_mib(struct xmldoc *d)
{
	uint64_t n, div = 1, mul = 1;
	char u[8] = "b";
	int rc;

	rc = xmldoc_string(d, u, sizeof(u), "(" PLAIN_SHMEM ")[last()]/descendant::size[1]/@unit");
	if (rc && rc != -ENOENT)
		return 0;
	if (number_of(d, "(" PLAIN_SHMEM ")[last()]/descendant::size[1]", 0, UINT64_MAX, &n))
		return 0;
	if (!strcmp(u, "M") || !strcmp(u, "MiB"))
		div = 1;
	else if (!strcmp(u, "G") || !strcmp(u, "GiB"))
		mul = 1024;
	else if (!strcmp(u, "K") || !strcmp(u, "KiB"))
		div = 1024;
	else if (!strcmp(u, "b") || !strcmp(u, "bytes"))
		div = 1024 * 1024;
	else
		return 0;
	if (n % div || n / div > UINT32_MAX / mul)
		return 0;
	return (uint32_t)(n / div * mul);
}

int domsetup_shm_name(const char *dom, char *out, size_t cap)
{
	int n;

	if (!dom || !*dom)
		return -EINVAL;
	n = snprintf(out, cap, "vnoise-%s", dom);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

uint32_t domsetup_size_mib(int vcpus)
{
	uint64_t want = vcpus > 0 ? (uint64_t)vcpus * DOMSETUP_MIB_PER_VCPU : 0;
	uint32_t mib = DOMSETUP_MIN_MIB;

	while (mib < want && mib < DOMSETUP_MAX_MIB)
		mib *= 2;
	return mib;
}

bool domsetup_size_ok(uint32_t mib)
{
	return mib >= 1 && mib <= DOMSETUP_MAX_MIB && !(mib & (mib - 1));
}

int domsetup_scan(const char *xml, const char *shm_name, struct domsetup_state *st)
{
	struct xmldoc *d = doc_of(xml, shm_name);
	uint64_t vcpus;
	int plain, ours, rc = -EINVAL;

	memset(st, 0, sizeof(*st));
	if (!d || !has(d, "/domain"))
		goto out;
	if (!number_of(d, "(//vcpu)[1]", 1, (1 << 16) - 1, &vcpus))
		st->vcpus = (int)vcpus;
	plain = xmldoc_count(d, PLAIN_SHMEM);
	ours = xmldoc_count(d, OURS_SHMEM);
	st->shmem = plain > 0;
	st->shmem_foreign = ours > plain;
	if (st->shmem)
		st->shmem_mib = shmem_mib(d);
	st->channel = has(d, CHANNEL_NAMED("$chan") "[@type='unix']");
	st->channel_foreign = has(d, CHANNEL_NAMED("$chan") "[not(@type='unix')]");
	st->bell = has(d, CHANNEL_NAMED("$bell") "[@type='unix']");
	st->bell_foreign = has(d, CHANNEL_NAMED("$bell") "[not(@type='unix')]");
	st->controller = has(d, SERIAL_CONTROLLER);
	rc = 0;
out:
	xmldoc_free(d);
	return rc;
}

int domsetup_shmem_xml(const char *shm_name, uint32_t mib, char *out, size_t cap)
{
	int o, n;

	if (cap < 16)
		return -ENOSPC;
	strcpy(out, "<shmem name='");
	o = put_escaped(out, cap, strlen(out), shm_name);
	if (o < 0)
		return o;
	n = snprintf(out + o, cap - (size_t)o,
		     "'>\n  <model type='ivshmem-plain'/>\n  <size unit='M'>%u</size>\n</shmem>\n",
		     mib);
	return n < 0 || (size_t)n >= cap - (size_t)o ? -ENOSPC : o + n;
}

static int put_fixed(const char *s, char *out, size_t cap)
{
	size_t n = strlen(s);

	if (n >= cap)
		return -ENOSPC;
	memcpy(out, s, n + 1);
	return (int)n;
}

int domsetup_channel_xml(char *out, size_t cap)
{
	return put_fixed("<channel type='unix'>\n  <source mode='bind'/>\n  <target type='virtio' "
			 "name='" DOMSETUP_CHANNEL "'/>\n</channel>\n",
			 out, cap);
}

int domsetup_bell_xml(char *out, size_t cap)
{
	return put_fixed("<channel type='unix'>\n  <source mode='bind'/>\n  <target type='virtio' "
			 "name='" DOMSETUP_BELL "'/>\n</channel>\n",
			 out, cap);
}

int domsetup_controller_xml(char *out, size_t cap)
{
	return put_fixed("<controller type='virtio-serial'/>\n", out, cap);
}

unsigned domsetup_missing(const struct domsetup_state *st)
{
	unsigned m = 0;

	if (!st->shmem)
		m |= DOMSETUP_BIT(DOMSETUP_SHMEM);
	if (!st->controller && !st->channel && !st->bell)
		m |= DOMSETUP_BIT(DOMSETUP_CONTROLLER);
	if (!st->channel)
		m |= DOMSETUP_BIT(DOMSETUP_CHANNEL_EL);
	if (!st->bell)
		m |= DOMSETUP_BIT(DOMSETUP_BELL_EL);
	return m;
}

int domsetup_element(const char *xml, enum domsetup_kind kind, const char *shm_name,
		     const char **at, size_t *len)
{
	const char *xpath = kind == DOMSETUP_SHMEM	  ? OURS_SHMEM
			    : kind == DOMSETUP_CONTROLLER ? SERIAL_CONTROLLER
			    : kind == DOMSETUP_BELL_EL	  ? CHANNEL_NAMED("$bell")
							  : CHANNEL_NAMED("$chan");
	struct xmldoc *d = doc_of(xml, shm_name);
	size_t off;
	int rc = -ENOENT;

	if (d && xmldoc_span(d, &off, len, "(%s)[1]", xpath) == 0) {
		*at = xml + off;
		rc = 0;
	}
	xmldoc_free(d);
	return rc;
}

int domsetup_kind_of(const char *xml, enum domsetup_kind *kind)
{
	struct xmldoc *d = doc_of(xml, NULL);
	int rc = 0;

	if (d && has(d, "/shmem"))
		*kind = DOMSETUP_SHMEM;
	else if (d && has(d, "/controller"))
		*kind = DOMSETUP_CONTROLLER;
	else if (d && has(d, "/channel[descendant::target[1]/@name=$bell]"))
		*kind = DOMSETUP_BELL_EL;
	else if (d && has(d, "/channel"))
		*kind = DOMSETUP_CHANNEL_EL;
	else
		rc = -EINVAL;
	xmldoc_free(d);
	return rc;
}

int domsetup_remove(const char *xml, const char *shm_name, char *out, size_t cap)
{
	static const enum domsetup_kind kinds[] = { DOMSETUP_SHMEM, DOMSETUP_CHANNEL_EL,
						    DOMSETUP_BELL_EL };
	const char *cut[3], *p = xml;
	size_t clen[3], o = 0;
	int n = 0, removed = 0;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		const char *at;
		size_t len;
		int i;

		if (domsetup_element(xml, kinds[k], shm_name, &at, &len))
			continue;
		for (i = n; i > 0 && cut[i - 1] > at; i--) { /* insert in document order */
			cut[i] = cut[i - 1];
			clen[i] = clen[i - 1];
		}
		cut[i] = at;
		clen[i] = len;
		n++;
	}
	for (int i = 0; i < n; i++) {
		const char *s = cut[i], *e = cut[i] + clen[i];

		while (s > p && (s[-1] == ' ' || s[-1] == '\t'))
			s--; /* the indentation of its line */
		if (s > xml && s[-1] == '\n' && *e == '\n')
			e++; /* and its line end, when it had the line alone (even right after a cut) */
		if (o + (size_t)(s - p) >= cap)
			return -ENOSPC;
		memcpy(out + o, p, (size_t)(s - p));
		o += (size_t)(s - p);
		p = e;
		removed++;
	}
	if (o + strlen(p) >= cap)
		return -ENOSPC;
	memcpy(out + o, p, strlen(p) + 1);
	return removed;
}
