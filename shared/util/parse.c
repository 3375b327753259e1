/* SPDX-License-Identifier: MIT */
/* parse: strict conversions of option values. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/parse.h"

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
	/* decimal only: strtod also takes hex floats ("0x10", "0x1p3") */
	if (end == s || strspn(s, "0123456789.eE+-") < (size_t)(end - s))
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

/* The units of a duration, two-letter ones first: "1ms" is a millisecond, "1m5s" a minute and 5 s. */
static const struct {
	const char *sfx;
	uint64_t ns;
} duration_units[] = { { "ns", 1 },
		       { "us", 1000 },
		       { "ms", 1000000 },
		       { "s", 1000000000ULL },
		       { "m", 60000000000ULL },
		       { "h", 3600000000000ULL },
		       { "d", 86400000000000ULL } };

/*
 * One term "NUMBER[UNIT]" at s into *ns, its unit into *unit (0 when it has none: the number is then in
 * def_unit_ns) and where it ends into *end. 0, -EINVAL or -ERANGE.
 */
static int duration_term(const char *s, uint64_t def_unit_ns, uint64_t *ns, uint64_t *unit,
			 const char **end)
{
	const char *rest;
	size_t i, len;
	double v, d;
	int err = parse_number_prefix(s, &v, &rest);

	if (err)
		return err;
	*unit = 0;
	for (i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
		len = strlen(duration_units[i].sfx);
		if (!strncmp(rest, duration_units[i].sfx, len)) {
			*unit = duration_units[i].ns;
			*end = rest + len;
			break;
		}
	}
	if (!*unit)
		*end = rest;
	/* an integer is converted exactly: a double has only 53 bits */
	if (strspn(s, "0123456789") == (size_t)(rest - s)) {
		unsigned long long iv;

		errno = 0;
		iv = strtoull(s, NULL, 10);
		if (errno == ERANGE || __builtin_mul_overflow(iv, *unit ? *unit : def_unit_ns, &iv))
			return -ERANGE;
		*ns = iv;
		return 0;
	}
	d = v * (double)(*unit ? *unit : def_unit_ns);
	if (d >= 18446744073709551615.0)
		return -ERANGE;
	*ns = (uint64_t)(d + 0.5);
	return 0;
}

int parse_duration(const char *s, uint64_t def_unit_ns, uint64_t *out_ns)
{
	uint64_t total = 0, ns, unit, last = UINT64_MAX;
	const char *p = s;
	int err, n = 0;

	do {
		err = duration_term(p, def_unit_ns, &ns, &unit, &p);
		if (err)
			return err;
		/* a number without a unit stands alone; combined units go largest first, once each */
		if ((!unit && (n || *p)) || unit >= last)
			return -EINVAL;
		last = unit;
		n++;
		if (__builtin_add_overflow(total, ns, &total))
			return -ERANGE;
	} while (*p);
	*out_ns = total;
	return 0;
}

/*
 * Adds cpu to the sorted, duplicate-free cpus[0..*count): duplicates do not count against max.
 * Returns 0 or -ERANGE when a new CPU does not fit.
 */
static int cpulist_add(int *cpus, int *count, int max, int cpu)
{
	int lo = 0, hi = *count;

	if (hi && cpus[hi - 1] < cpu) {
		lo = hi; /* the common case: ascending input */
	} else {
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;

			if (cpus[mid] < cpu)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < *count && cpus[lo] == cpu)
			return 0;
	}
	if (*count >= max)
		return -ERANGE;
	memmove(cpus + lo + 1, cpus + lo, (size_t)(*count - lo) * sizeof(*cpus));
	cpus[lo] = cpu;
	(*count)++;
	return 0;
}

int parse_cpulist(const char *s, int *cpus, int max, int limit, int *n)
{
	int count = 0, i;
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
		for (i = (int)a; i <= (int)b; i++)
			if (cpulist_add(cpus, &count, max, i))
				return -ERANGE;
		if (*p == ',') {
			p++;
			if (!*p)
				return -EINVAL;
		} else if (*p) {
			return -EINVAL;
		}
	}
	*n = count;
	return 0;
}

int parse_sockaddr(const char *s, int min_port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	const char *colon;
	char host[64];
	int port;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *e = strchr(s, ']');

		if (!e || e[1] != ':' || e - s - 1 >= (long)sizeof(host))
			return -EINVAL;
		snprintf(host, sizeof(host), "%.*s", (int)(e - s - 1), s + 1);
		colon = e + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || colon - s >= (long)sizeof(host))
			return -EINVAL;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
	}
	if (parse_int(colon + 1, min_port, 65535, &port))
		return -EINVAL;
	if (!host[0] && s[0] != '[')
		snprintf(host, sizeof(host), "0.0.0.0"); /* ":PORT": every interface */
	else if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		*len = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*v6);
		return 0;
	}
	return -EINVAL;
}

const char *parse_sockaddr_fmt(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(v4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(v6->sin6_port));
	} else {
		snprintf(buf, len, "family-%d", sa->sa_family);
	}
	return buf;
}
