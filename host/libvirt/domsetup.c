/* SPDX-License-Identifier: MIT */
/*
 * domsetup: the XML of vnoise's devices in a libvirt domain (see domsetup.h). The scanners walk elements
 * by name in libvirt's own output; an element is its start tag up to "/>" or up to its first "</name>"
 * (shmem, channel, vcpu and controller do not nest in themselves).
 */
#include "libvirt/domsetup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One element found in a document: [start, end) the whole element, tag_end just past its start tag. */
struct span {
	const char *start, *tag_end, *end;
};

/* The next element named name at or after from, or -ENOENT. */
static int find_elem(const char *from, const char *name, struct span *sp)
{
	size_t n = strlen(name);
	const char *p = from;

	while ((p = strchr(p, '<'))) {
		const char *q;

		if (strncmp(p + 1, name, n) || !strchr(" \t\n/>", p[1 + n]) || p[1 + n] == '\0') {
			p++;
			continue;
		}
		q = strchr(p, '>');
		if (!q)
			return -ENOENT;
		sp->start = p;
		sp->tag_end = q + 1;
		if (q[-1] == '/') {
			sp->end = q + 1;
			return 0;
		}
		{
			char close[40];
			const char *e;

			snprintf(close, sizeof(close), "</%s>", name);
			e = strstr(q, close);
			if (!e)
				return -ENOENT;
			sp->end = e + strlen(close);
		}
		return 0;
	}
	return -ENOENT;
}

/*
 * The raw (still escaped) value of attribute attr in the start tag [tag, tag_end): *val and *len. Returns 0
 * or -ENOENT.
 */
static int tag_attr(const char *tag, const char *tag_end, const char *attr, const char **val,
		    size_t *len)
{
	size_t n = strlen(attr);
	const char *p = tag;

	while (p < tag_end && *p && *p != ' ' && *p != '\t' && *p != '\n')
		p++; /* past the element name */
	while (p && p < tag_end) {
		const char *v, *e;
		char quote;

		while (p < tag_end && (*p == ' ' || *p == '\t' || *p == '\n'))
			p++;
		if (p >= tag_end || *p == '/' || *p == '>')
			return -ENOENT;
		v = strchr(p, '=');
		if (!v || v + 1 >= tag_end || (v[1] != '\'' && v[1] != '"'))
			return -ENOENT;
		quote = v[1];
		e = strchr(v + 2, quote);
		if (!e || e >= tag_end)
			return -ENOENT;
		if ((size_t)(v - p) == n && !strncmp(p, attr, n)) {
			*val = v + 2;
			*len = (size_t)(e - (v + 2));
			return 0;
		}
		p = e + 1;
	}
	return -ENOENT;
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

/* Attribute attr of the tag equals the (unescaped) text want, compared in escaped form. */
static bool attr_is(const char *tag, const char *tag_end, const char *attr, const char *want)
{
	const char *v;
	size_t len;
	char esc[512];
	int o;

	if (tag_attr(tag, tag_end, attr, &v, &len))
		return false;
	o = put_escaped(esc, sizeof(esc), 0, want);
	return o >= 0 && len == (size_t)o && !memcmp(v, esc, (size_t)o);
}

/* The first child element name inside [sp->tag_end, sp->end), as a span; -ENOENT if none. */
static int child(const struct span *sp, const char *name, struct span *c)
{
	if (sp->tag_end == sp->end || find_elem(sp->tag_end, name, c) || c->end > sp->end)
		return -ENOENT;
	return 0;
}

/* The shmem element sp is ours (its name). */
static bool shmem_ours(const struct span *sp, const char *shm_name)
{
	return attr_is(sp->start, sp->tag_end, "name", shm_name);
}

/* The channel element sp targets name (DOMSETUP_CHANNEL or DOMSETUP_BELL). */
static bool channel_ours(const struct span *sp, const char *name)
{
	struct span t;

	return !child(sp, "target", &t) && attr_is(t.start, t.tag_end, "name", name);
}

/* <size unit='U'>N</size> of a shmem as MiB (0: absent, not whole MiB or unparseable). */
static uint32_t shmem_mib(const struct span *sp)
{
	struct span s;
	const char *u;
	size_t ulen = 0;
	unsigned long long n, div = 1, mul = 1;
	char *e;

	if (child(sp, "size", &s) || s.tag_end == s.end)
		return 0;
	if (tag_attr(s.start, s.tag_end, "unit", &u, &ulen)) {
		u = "b";
		ulen = 1;
	}
	errno = 0;
	n = strtoull(s.tag_end, &e, 10);
	if (errno || e == s.tag_end || *e != '<')
		return 0;
	if ((ulen == 1 && *u == 'M') || (ulen == 3 && !strncmp(u, "MiB", 3)))
		div = 1;
	else if ((ulen == 1 && *u == 'G') || (ulen == 3 && !strncmp(u, "GiB", 3)))
		mul = 1024;
	else if ((ulen == 1 && *u == 'K') || (ulen == 3 && !strncmp(u, "KiB", 3)))
		div = 1024;
	else if ((ulen == 1 && *u == 'b') || (ulen == 5 && !strncmp(u, "bytes", 5)))
		div = 1024 * 1024;
	else
		return 0;
	if (n % div || n / div * mul > UINT32_MAX)
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

/* <vcpu ...>N</vcpu>, 0 if absent or unparseable. */
static int scan_vcpus(const char *xml)
{
	struct span sp;
	char *e;
	long n;

	if (find_elem(xml, "vcpu", &sp) || sp.tag_end == sp.end)
		return 0;
	n = strtol(sp.tag_end, &e, 10);
	return e != sp.tag_end && *e == '<' && n > 0 && n < 1 << 16 ? (int)n : 0;
}

int domsetup_scan(const char *xml, const char *shm_name, struct domsetup_state *st)
{
	struct span sp, m;
	const char *p;

	memset(st, 0, sizeof(*st));
	if (!xml || find_elem(xml, "domain", &sp))
		return -EINVAL;
	st->vcpus = scan_vcpus(xml);
	for (p = xml; !find_elem(p, "shmem", &sp); p = sp.end) {
		if (!shmem_ours(&sp, shm_name))
			continue;
		if (!child(&sp, "model", &m) &&
		    attr_is(m.start, m.tag_end, "type", "ivshmem-plain") &&
		    child(&sp, "server", &m)) {
			st->shmem = true;
			st->shmem_mib = shmem_mib(&sp);
		} else {
			st->shmem_foreign = true;
		}
	}
	for (p = xml; !find_elem(p, "channel", &sp); p = sp.end) {
		bool unix_sock = attr_is(sp.start, sp.tag_end, "type", "unix");

		if (channel_ours(&sp, DOMSETUP_CHANNEL)) {
			st->channel |= unix_sock;
			st->channel_foreign |= !unix_sock;
		} else if (channel_ours(&sp, DOMSETUP_BELL)) {
			st->bell |= unix_sock;
			st->bell_foreign |= !unix_sock;
		}
	}
	for (p = xml; !find_elem(p, "controller", &sp); p = sp.end)
		if (attr_is(sp.start, sp.tag_end, "type", "virtio-serial"))
			st->controller = true;
	return 0;
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

/* Element sp (named as kind's element) is the one of kind. */
static bool is_kind(const struct span *sp, enum domsetup_kind kind, const char *shm_name)
{
	switch (kind) {
	case DOMSETUP_SHMEM:
		return shmem_ours(sp, shm_name);
	case DOMSETUP_CHANNEL_EL:
		return channel_ours(sp, DOMSETUP_CHANNEL);
	case DOMSETUP_BELL_EL:
		return channel_ours(sp, DOMSETUP_BELL);
	case DOMSETUP_CONTROLLER:
		return attr_is(sp->start, sp->tag_end, "type", "virtio-serial");
	}
	return false;
}

int domsetup_element(const char *xml, enum domsetup_kind kind, const char *shm_name,
		     const char **at, size_t *len)
{
	const char *name = kind == DOMSETUP_SHMEM	 ? "shmem"
			   : kind == DOMSETUP_CONTROLLER ? "controller"
							 : "channel";
	struct span sp;

	for (const char *p = xml; !find_elem(p, name, &sp); p = sp.end) {
		if (is_kind(&sp, kind, shm_name)) {
			*at = sp.start;
			*len = (size_t)(sp.end - sp.start);
			return 0;
		}
	}
	return -ENOENT;
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
