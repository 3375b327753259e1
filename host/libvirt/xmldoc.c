/* SPDX-License-Identifier: MIT */
/*
 * xmldoc: libxml2's SAX2 tree builder with two hooks that note where each element starts and ends in the
 * text (libxml2 2.9's own node positions leave the start of non-empty elements unset), then XPath queries
 * over the tree. An element's start is found from the parser's position after its attributes: a start
 * tag holds no '<' (a well-formed attribute value escapes it), so the nearest '<' before that position is
 * the tag's; both ends are checked against the text.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libxml/SAX2.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include "libvirt/xmldoc.h"

struct span {
	size_t start, end; /* [start, end) in the text; end 0 while the element is open */
};

struct xmldoc {
	const char *text; /* not owned */
	size_t len;
	xmlDocPtr doc;
	xmlXPathContextPtr xp;
	struct span
	    *spans; /* one per element, in start order; the node's _private is its index + 1 */
	size_t nspans, cap;
	int err; /* a hook's failure (-ENOMEM, -EINVAL: a position that does not check out) */
};

/* Bytes of the input the parser has gone past: an offset in the text (the input is never converted). */
static size_t input_pos(xmlParserCtxtPtr c)
{
	return (size_t)c->input->consumed + (size_t)(c->input->cur - c->input->base);
}

static void on_start(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri,
		     int nb_namespaces, const xmlChar **namespaces, int nb_attributes,
		     int nb_defaulted, const xmlChar **attributes)
{
	xmlParserCtxtPtr c = ctx;
	struct xmldoc *d = c->_private;
	xmlNodePtr before = c->node;
	size_t p = input_pos(c), n = strlen((const char *)localname);
	size_t np = prefix ? strlen((const char *)prefix) + 1 : 0; /* "prefix:" */

	xmlSAX2StartElementNs(ctx, localname, prefix, uri, nb_namespaces, namespaces, nb_attributes,
			      nb_defaulted, attributes);
	if (d->err || !c->node || c->node == before)
		return;
	if (p > d->len)
		p = d->len;
	while (p > 0 && d->text[p - 1] != '<')
		p--;
	if (p == 0 || d->len - p < np + n ||
	    (prefix && (memcmp(d->text + p, prefix, np - 1) || d->text[p + np - 1] != ':')) ||
	    memcmp(d->text + p + np, localname, n)) {
		d->err = -EINVAL;
		return;
	}
	if (d->nspans == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		struct span *s = realloc(d->spans, cap * sizeof(*s));

		if (!s) {
			d->err = -ENOMEM;
			return;
		}
		d->spans = s;
		d->cap = cap;
	}
	d->spans[d->nspans].start = p - 1;
	d->spans[d->nspans].end = 0;
	c->node->_private = (void *)(uintptr_t)(++d->nspans);
}

static void on_end(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri)
{
	xmlParserCtxtPtr c = ctx;
	struct xmldoc *d = c->_private;
	xmlNodePtr n = c->node;
	size_t p = input_pos(c);

	if (!d->err && n && n->_private) {
		if (p == 0 || p > d->len || d->text[p - 1] != '>')
			d->err = -EINVAL;
		else
			d->spans[(uintptr_t)n->_private - 1].end = p;
	}
	xmlSAX2EndElementNs(ctx, localname, prefix, uri);
}

/* XPath errors are results (-EINVAL), not messages on stderr. */
static void quiet(void *ctx, xmlErrorPtr e)
{
}

struct xmldoc *xmldoc_parse(const char *text, size_t len)
{
	xmlParserCtxtPtr c = NULL;
	struct xmldoc *d = NULL;
	int err = -EINVAL;

	if (!text || !len)
		goto out;
	err = -E2BIG;
	if (len > INT_MAX)
		goto out;
	err = -ENOMEM;
	xmlInitParser();
	d = calloc(1, sizeof(*d));
	if (!d)
		goto out;
	d->text = text;
	d->len = len;
	c = xmlCreateMemoryParserCtxt(text, (int)len);
	if (!c)
		goto out;
	/* no network, no external DTD, entities left as references (no XML_PARSE_NOENT), quiet */
	xmlCtxtUseOptions(c, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	c->sax->serror = quiet;
	c->sax->startElementNs = on_start;
	c->sax->endElementNs = on_end;
	c->_private = d;
	(void)xmlParseDocument(c);
	d->doc = c->myDoc;
	c->myDoc = NULL;
	err = d->err ? d->err : -EINVAL;
	if (d->err || !c->wellFormed || !d->doc || d->doc->intSubset || d->doc->extSubset ||
	    (c->input && c->input->buf && c->input->buf->encoder))
		goto out;
	err = -ENOMEM;
	d->xp = xmlXPathNewContext(d->doc);
	if (!d->xp)
		goto out;
	d->xp->error = quiet;
	err = 0;
out:
	if (c)
		xmlFreeParserCtxt(c);
	if (err) {
		xmldoc_free(d);
		errno = -err;
		return NULL;
	}
	return d;
}

void xmldoc_free(struct xmldoc *d)
{
	if (!d)
		return;
	if (d->xp)
		xmlXPathFreeContext(d->xp);
	if (d->doc)
		xmlFreeDoc(d->doc);
	free(d->spans);
	free(d);
}

int xmldoc_var(struct xmldoc *d, const char *name, const char *value)
{
	xmlXPathObjectPtr v;

	if (!name || !value)
		return -EINVAL;
	v = xmlXPathNewCString(value);
	if (!v)
		return -ENOMEM;
	if (xmlXPathRegisterVariable(d->xp, (const xmlChar *)name, v)) {
		xmlXPathFreeObject(v);
		return -ENOMEM;
	}
	return 0;
}

/* Evaluate the formatted expression; a node-set result, or NULL (-EINVAL). */
static xmlXPathObjectPtr eval(struct xmldoc *d, const char *fmt, va_list ap)
{
	char expr[XMLDOC_XPATH_MAX];
	xmlXPathObjectPtr o;
	int n = vsnprintf(expr, sizeof(expr), fmt, ap);

	if (n < 0 || (size_t)n >= sizeof(expr))
		return NULL;
	o = xmlXPathEvalExpression((const xmlChar *)expr, d->xp);
	if (o && o->type != XPATH_NODESET) {
		xmlXPathFreeObject(o);
		o = NULL;
	}
	return o;
}

/* The first node of a node-set result, or NULL if it is empty. */
static xmlNodePtr first(xmlXPathObjectPtr o)
{
	return o->nodesetval && o->nodesetval->nodeNr > 0 ? o->nodesetval->nodeTab[0] : NULL;
}

int xmldoc_count(struct xmldoc *d, const char *fmt, ...)
{
	xmlXPathObjectPtr o;
	va_list ap;
	int n;

	va_start(ap, fmt);
	o = eval(d, fmt, ap);
	va_end(ap);
	if (!o)
		return -EINVAL;
	n = o->nodesetval ? o->nodesetval->nodeNr : 0;
	xmlXPathFreeObject(o);
	return n;
}

int xmldoc_string(struct xmldoc *d, char *out, size_t cap, const char *fmt, ...)
{
	xmlXPathObjectPtr o;
	xmlChar *s = NULL;
	xmlNodePtr n;
	va_list ap;
	int rc = -ENOENT;

	va_start(ap, fmt);
	o = eval(d, fmt, ap);
	va_end(ap);
	if (!o)
		return -EINVAL;
	n = first(o);
	if (!n)
		goto out;
	rc = -ENOMEM;
	s = xmlXPathCastNodeToString(n);
	if (!s)
		goto out;
	rc = -ENOSPC;
	if (strlen((const char *)s) >= cap)
		goto out;
	memcpy(out, s, strlen((const char *)s) + 1);
	rc = 0;
out:
	xmlFree(s);
	xmlXPathFreeObject(o);
	return rc;
}

int xmldoc_span(struct xmldoc *d, size_t *off, size_t *len, const char *fmt, ...)
{
	const struct span *sp;
	xmlXPathObjectPtr o;
	xmlNodePtr n;
	va_list ap;
	int rc = -ENOENT;

	va_start(ap, fmt);
	o = eval(d, fmt, ap);
	va_end(ap);
	if (!o)
		return -EINVAL;
	n = first(o);
	if (n && n->type == XML_ELEMENT_NODE && n->_private) {
		sp = &d->spans[(uintptr_t)n->_private - 1];
		if (sp->end > sp->start) {
			*off = sp->start;
			*len = sp->end - sp->start;
			rc = 0;
		}
	}
	xmlXPathFreeObject(o);
	return rc;
}
