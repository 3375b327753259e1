/* SPDX-License-Identifier: MIT */
/*
 * xmldoc: one libvirt XML document (a domain, or a single device element) parsed with libxml2 and queried
 * with XPath 1.0, as libvirt's own virxml.c does. The text is treated as untrusted: it must be one
 * well-formed UTF-8 document without a document type declaration (libvirt writes none, so there are no
 * entity definitions to expand), and nothing is ever loaded from the network or the file system. Queries
 * are XPath expressions formatted printf-style; a value from outside (a domain or device name) is bound to
 * an XPath variable with xmldoc_var() and written $name in the expression, never pasted into it. Every
 * element also knows its exact bytes in the text, so an element can be handed back to libvirt (detach) or
 * cut out of the document as it was written.
 *
 * A document is used by one thread at a time.
 */
#ifndef VNOISE_HOST_LIBVIRT_XMLDOC_H
#define VNOISE_HOST_LIBVIRT_XMLDOC_H

#include <stddef.h>

#define XMLDOC_XPATH_MAX 512 /* longest formatted XPath expression, bytes with the NUL */

struct xmldoc;

/*
 * Parse len bytes at text (need not be NUL-terminated; the caller keeps it alive and unchanged while the
 * document is used: spans point into it). NULL + errno: EINVAL (not one well-formed UTF-8 document, or it
 * has a DOCTYPE), E2BIG (longer than INT_MAX), ENOMEM. The document is the caller's: xmldoc_free().
 */
struct xmldoc *xmldoc_parse(const char *text, size_t len) __attribute__((warn_unused_result));
void xmldoc_free(struct xmldoc *d); /* accepts NULL */

/* Bind the XPath variable $name to the string value (copied). 0, -EINVAL or -ENOMEM. */
int xmldoc_var(struct xmldoc *d, const char *name, const char *value)
    __attribute__((warn_unused_result));

/* The number of nodes the expression selects (>= 0), or -EINVAL (bad expression, or not a node-set). */
int xmldoc_count(struct xmldoc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The string value of the first node (document order) the expression selects — an attribute's decoded
 * value, an element's text — into out (cap bytes, NUL-terminated). 0, -ENOENT (nothing selected), -ENOSPC
 * (does not fit in cap: out is not written), -EINVAL (bad expression, or not a node-set).
 */
int xmldoc_string(struct xmldoc *d, char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * The first node the expression selects, an element: its bytes in the text, from its '<' to the end of
 * its end tag (or of its empty-element tag), as *off and *len. 0, -ENOENT (nothing selected, or not an
 * element), -EINVAL (bad expression, or not a node-set).
 */
int xmldoc_span(struct xmldoc *d, size_t *off, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
