/* SPDX-License-Identifier: MIT */
/* parse: strict conversions of option values. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "parse.h"

int parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_int(const char *s, int min, int max, int *out)
{
	long long v;
	char *end;

	if (!s || !(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = (int)v;
	return 0;
}

static int parse_number_prefix(const char *s, double *v, const char **rest)
{
	char *end;

	if (!s || !(isdigit((unsigned char)s[0]) || (s[0] == '.' && isdigit((unsigned char)s[1]))))
		return -EINVAL;
	errno = 0;
	*v = strtod(s, &end);
	if (errno == ERANGE || !isfinite(*v))
		return -ERANGE;
	if (end == s)
		return -EINVAL;
	*rest = end;
	return 0;
}

int parse_double(const char *s, double *out)
{
	const char *rest;
	double v;
	int err = parse_number_prefix(s, &v, &rest);

	if (err)
		return err;
	if (*rest)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_duration(const char *s, uint64_t def_unit_ns, uint64_t *out_ns)
{
	static const struct {
		const char *sfx;
		uint64_t ns;
	} units[] = { { "ns", 1 },
		      { "us", 1000 },
		      { "ms", 1000000 },
		      { "s", 1000000000ULL },
		      { "m", 60000000000ULL },
		      { "h", 3600000000000ULL } };
	const char *rest;
	uint64_t unit = def_unit_ns;
	double v, ns;
	size_t i;
	int err = parse_number_prefix(s, &v, &rest);

	if (err)
		return err;
	if (*rest) {
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(rest, units[i].sfx))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		unit = units[i].ns;
	}
	ns = v * (double)unit;
	if (ns >= 18446744073709551615.0)
		return -ERANGE;
	*out_ns = (uint64_t)(ns + 0.5);
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int parse_cpulist(const char *s, int *cpus, int max, int limit, int *n)
{
	int count = 0, i, j;
	const char *p = s;

	if (!s || !*s)
		return -EINVAL;
	while (*p) {
		long a, b;
		char *end;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		errno = 0;
		a = strtol(p, &end, 10);
		if (errno || a >= limit)
			return -ERANGE;
		b = a;
		p = end;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			b = strtol(p, &end, 10);
			if (errno || b >= limit)
				return -ERANGE;
			if (b < a)
				return -EINVAL;
			p = end;
		}
		for (i = (int)a; i <= (int)b; i++) {
			if (count >= max)
				return -ERANGE;
			cpus[count++] = i;
		}
		if (*p == ',') {
			p++;
			if (!*p)
				return -EINVAL;
		} else if (*p) {
			return -EINVAL;
		}
	}
	qsort(cpus, (size_t)count, sizeof(*cpus), cmp_int);
	for (i = 0, j = 0; i < count; i++)
		if (!j || cpus[j - 1] != cpus[i])
			cpus[j++] = cpus[i];
	*n = j;
	return 0;
}
