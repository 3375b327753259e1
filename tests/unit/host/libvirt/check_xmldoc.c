/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/libvirt/xmldoc: what is parsed and what is refused (truncations, several roots, a
 * DOCTYPE with entities, other encodings, empty input), attribute and text values (quotes, entities,
 * character references, '>' inside values), the capacity rule, XPath variables holding quotes, counts,
 * bad expressions, and exact element spans (nested, empty-element tags, namespace prefixes, a document
 * large enough for the parser to move its buffer).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libvirt/xmldoc.h"
#include "check_main.h"

static const char dom_xml[] =
    "<?xml version='1.0' encoding='UTF-8'?>\n"
    "<domain type='qemu' id='3' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>\n"
    "  <name>vm&apos;s &amp; &#x41;</name>\n"
    "  <devices>\n"
    "    <channel type=\"unix\">\n"
    "      <source mode='bind' path='/tmp/a&amp;b&gt;c'/>\n"
    "      <target type='virtio' name='org.vnoise.0' note='a>b'/>\n"
    "    </channel>\n"
    "    <shmem name='say &quot;hi&quot; it&apos;s'><size unit='M'>4</size></shmem>\n"
    "  </devices>\n"
    "  <qemu:commandline><qemu:arg value='-s'/></qemu:commandline>\n"
    "</domain>\n";

/* A heap copy of exactly n bytes, no NUL after it: ASan sees any read past the end. */
static struct xmldoc *parse_exact(const char *s, size_t n, char **keep)
{
	char *b = malloc(n ? n : 1);
	struct xmldoc *d;

	ck_assert_ptr_nonnull(b);
	memcpy(b, s, n);
	d = xmldoc_parse(b, n);
	if (!d) {
		free(b);
		b = NULL;
	}
	*keep = b;
	return d;
}

/* The text of the first element the expression selects, via its span. */
static void span_is(struct xmldoc *d, const char *text, const char *xpath, const char *want)
{
	size_t off = 0, len = 0;

	ck_assert_int_eq(xmldoc_span(d, &off, &len, "%s", xpath), 0);
	ck_assert_msg(len == strlen(want) && !memcmp(text + off, want, len), "%s: '%.*s'", xpath,
		      (int)len, text + off);
}

START_TEST(test_values)
{
	char *keep, out[64];
	struct xmldoc *d = parse_exact(dom_xml, strlen(dom_xml), &keep);

	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "/domain/@type"), 0);
	ck_assert_str_eq(out, "qemu");
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "/domain/name"), 0);
	ck_assert_str_eq(out, "vm's & A");
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "//channel/source/@path"), 0);
	ck_assert_str_eq(out, "/tmp/a&b>c");
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "//channel/@type"), 0);
	ck_assert_str_eq(out, "unix");
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "//shmem/@name"), 0);
	ck_assert_str_eq(out, "say \"hi\" it's");
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "//target/@note"), 0);
	ck_assert_str_eq(out, "a>b");
	/* absent: -ENOENT; an element's text; prefixed names need no namespace binding for count */
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "/domain/@name"), -ENOENT);
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "//nosuch"), -ENOENT);
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "//shmem/size"), 0);
	ck_assert_str_eq(out, "4");
	ck_assert_int_eq(xmldoc_count(d, "//*[local-name()='arg']"), 1);
	/* counts, and indexed queries */
	ck_assert_int_eq(xmldoc_count(d, "//devices/*"), 2);
	ck_assert_int_eq(xmldoc_count(d, "//interface"), 0);
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "(//devices/*)[%d]/@type", 1), 0);
	ck_assert_str_eq(out, "unix");
	/* not node-sets, or not XPath at all */
	ck_assert_int_eq(xmldoc_count(d, "count(//channel)"), -EINVAL);
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "string(/domain/@type)"), -EINVAL);
	ck_assert_int_eq(xmldoc_count(d, "//channel[@type="), -EINVAL);
	ck_assert_int_eq(xmldoc_count(d, "$undefined"), -EINVAL);
	xmldoc_free(d);
	free(keep);
}
END_TEST

START_TEST(test_cap)
{
	static const char x[] = "<x a='1234567' b='12345678' c='' e='&apos;&apos;&apos;'/>";
	char *keep, out[8];
	struct xmldoc *d = parse_exact(x, strlen(x), &keep);

	ck_assert_ptr_nonnull(d);
	memset(out, 'Z', sizeof(out));
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "/x/@a"), 0);
	ck_assert_str_eq(out, "1234567");
	/* does not fit: -ENOSPC and nothing written */
	memset(out, 'Z', sizeof(out));
	ck_assert_int_eq(xmldoc_string(d, out, sizeof(out), "/x/@b"), -ENOSPC);
	ck_assert_int_eq(out[0], 'Z');
	/* an empty value fits in 1 byte, not in 0 */
	ck_assert_int_eq(xmldoc_string(d, out, 1, "/x/@c"), 0);
	ck_assert_int_eq(out[0], 0);
	ck_assert_int_eq(out[1], 'Z');
	memset(out, 'Z', sizeof(out));
	ck_assert_int_eq(xmldoc_string(d, out, 0, "/x/@c"), -ENOSPC);
	ck_assert_int_eq(out[0], 'Z');
	/* an entity counts as its character */
	ck_assert_int_eq(xmldoc_string(d, out, 4, "/x/@e"), 0);
	ck_assert_str_eq(out, "'''");
	ck_assert_int_eq(xmldoc_string(d, out, 3, "/x/@e"), -ENOSPC);
	xmldoc_free(d);
	free(keep);
}
END_TEST

/* A value from outside goes in through a variable: quotes in it cannot change the expression. */
START_TEST(test_vars)
{
	static const char x[] =
	    "<d><s name='a&apos;b\"c'/><s name='x'/><s name=\"'] | //*[1='1\"/></d>";
	char *keep;
	struct xmldoc *d = parse_exact(x, strlen(x), &keep);

	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(xmldoc_var(d, "n", "a'b\"c"), 0);
	ck_assert_int_eq(xmldoc_count(d, "//s[@name=$n]"), 1);
	span_is(d, x, "//s[@name=$n]", "<s name='a&apos;b\"c'/>");
	ck_assert_int_eq(xmldoc_var(d, "n", "'] | //*[1='1"), 0); /* rebinding replaces */
	ck_assert_int_eq(xmldoc_count(d, "//s[@name=$n]"), 1);
	span_is(d, x, "//s[@name=$n]", "<s name=\"'] | //*[1='1\"/>");
	ck_assert_int_eq(xmldoc_var(d, "n", "nobody"), 0);
	ck_assert_int_eq(xmldoc_count(d, "//s[@name=$n]"), 0);
	ck_assert_int_eq(xmldoc_var(d, NULL, "x"), -EINVAL);
	xmldoc_free(d);
	free(keep);
}
END_TEST

START_TEST(test_spans)
{
	char *keep;
	struct xmldoc *d = parse_exact(dom_xml, strlen(dom_xml), &keep);
	size_t off, len;

	ck_assert_ptr_nonnull(d);
	span_is(d, keep, "//channel",
		"<channel type=\"unix\">\n"
		"      <source mode='bind' path='/tmp/a&amp;b&gt;c'/>\n"
		"      <target type='virtio' name='org.vnoise.0' note='a>b'/>\n"
		"    </channel>");
	span_is(d, keep, "//target", "<target type='virtio' name='org.vnoise.0' note='a>b'/>");
	span_is(d, keep, "//shmem",
		"<shmem name='say &quot;hi&quot; it&apos;s'><size unit='M'>4</size></shmem>");
	span_is(d, keep, "//shmem/size", "<size unit='M'>4</size>");
	span_is(d, keep, "//*[local-name()='commandline']",
		"<qemu:commandline><qemu:arg value='-s'/></qemu:commandline>");
	ck_assert_int_eq(xmldoc_span(d, &off, &len, "/domain"), 0);
	ck_assert(!strncmp(keep + off, "<domain type='qemu'", 19));
	ck_assert_uint_eq(off + len, strlen(dom_xml) - 1);
	/* an attribute is not an element; nothing selected */
	ck_assert_int_eq(xmldoc_span(d, &off, &len, "/domain/@type"), -ENOENT);
	ck_assert_int_eq(xmldoc_span(d, &off, &len, "//interface"), -ENOENT);
	xmldoc_free(d);
	free(keep);
}
END_TEST

/* Far more than the parser's input buffer: spans stay exact when it moves its window. */
START_TEST(test_spans_large)
{
	size_t cap = 1 << 20, n = 0;
	char *x = malloc(cap), want[256], xpath[32];
	struct xmldoc *d;
	int i;

	ck_assert_ptr_nonnull(x);
	n += (size_t)sprintf(x + n, "<domain>\n");
	for (i = 0; i < 5000; i++)
		n += (size_t)sprintf(x + n, "  <e i='%d' pad='%0*d'>t%d</e>\n", i, i % 97, 0, i);
	n += (size_t)sprintf(x + n, "</domain>\n");
	d = xmldoc_parse(x, n);
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(xmldoc_count(d, "/domain/e"), 5000);
	for (i = 0; i < 5000; i += 37) {
		snprintf(want, sizeof(want), "<e i='%d' pad='%0*d'>t%d</e>", i, i % 97, 0, i);
		snprintf(xpath, sizeof(xpath), "/domain/e[%d]", i + 1);
		span_is(d, x, xpath, want);
	}
	xmldoc_free(d);
	free(x);
}
END_TEST

START_TEST(test_refused)
{
	static const char *const bad[] = {
		"",
		"   ",
		"text",
		"<a>",
		"<a></b>",
		"<a/><b/>", /* two roots */
		"<a x='1' x='2'/>",
		"<a x='<'/>",
		"<a>&unknown;</a>",
		"<a>&</a>",
		"<a x=1/>",
		"<!DOCTYPE a [<!ENTITY e 'boom'>]><a>&e;</a>",
		"<!DOCTYPE a SYSTEM 'http://example.com/a.dtd'><a/>",
		"<!DOCTYPE a [<!ENTITY x SYSTEM 'file:///etc/passwd'>]><a>&x;</a>",
		"<?xml version='1.0' encoding='ISO-8859-1'?><a>\xe9</a>",
		"<a>\xff</a>", /* not UTF-8 */
		"\xff\xfe<\0a\0/\0>\0", /* UTF-16 */
	};
	char *keep;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = i == sizeof(bad) / sizeof(bad[0]) - 1 ? 10 : strlen(bad[i]);

		errno = 0;
		ck_assert_msg(parse_exact(bad[i], n, &keep) == NULL, "accepted #%zu", i);
		ck_assert_int_eq(errno, EINVAL);
	}
	ck_assert_ptr_null(xmldoc_parse(NULL, 3));
	ck_assert_int_eq(errno, EINVAL);
	xmldoc_free(NULL);
}
END_TEST

/* Every proper prefix of a document is refused; the whole one (and without its last newline) is not. */
START_TEST(test_prefixes)
{
	size_t len = strlen(dom_xml);
	char *keep;

	for (size_t i = 0; i < len - 1; i++) {
		struct xmldoc *d = parse_exact(dom_xml, i, &keep);

		ck_assert_msg(d == NULL, "prefix %zu accepted", i);
	}
	for (size_t i = len - 1; i <= len; i++) {
		struct xmldoc *d = parse_exact(dom_xml, i, &keep);

		ck_assert_ptr_nonnull(d);
		xmldoc_free(d);
		free(keep);
	}
}
END_TEST

static Suite *xmldoc_suite(void)
{
	Suite *s = suite_create("xmldoc");
	TCase *tc = tcase_create("query");

	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_cap);
	tcase_add_test(tc, test_vars);
	tcase_add_test(tc, test_spans);
	tcase_add_test(tc, test_spans_large);
	suite_add_tcase(s, tc);
	tc = tcase_create("parse");
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_prefixes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(xmldoc_suite());
}
