/* SPDX-License-Identifier: MIT */
/*
 * parse: strict number helpers (STYLE.md 9). Every function rejects empty strings, signs where not allowed,
 * trailing junk and overflow, and returns 0 or -EINVAL / -ERANGE. Pure; no locale.
 */
#ifndef VNOISE_UTIL_PARSE_H
#define VNOISE_UTIL_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

int parse_u64(const char *s, uint64_t *out) __attribute__((warn_unused_result));
/* Integer in [min, max]. */
int parse_int(const char *s, int min, int max, int *out) __attribute__((warn_unused_result));
/* Finite non-negative decimal number ("0.1", "5", "1e-3"). */
int parse_double(const char *s, double *out) __attribute__((warn_unused_result));
/*
 * Duration to ns: a non-negative number with an optional unit ns, us, ms, s, m, h, d; without a unit the number
 * is in def_unit_ns (e.g. 1000 for microseconds). "1.5ms" is allowed, and so are several numbers with units,
 * largest unit first and each unit once ("1h30m", "2m0.5s", "1d12h"; not "30m1h" nor "1h30"). -ERANGE when the
 * result does not fit in uint64 (about 584 years), -EINVAL for anything else that is not a duration.
 */
int parse_duration(const char *s, uint64_t def_unit_ns, uint64_t *out_ns)
    __attribute__((warn_unused_result));
/*
 * CPU list "0,2-4,7" into cpus[] (sorted, duplicates removed), at most max entries, each < limit.
 * Returns 0, -EINVAL (syntax), -ERANGE (a CPU >= limit or too many).
 */
int parse_cpulist(const char *s, int *cpus, int max, int limit, int *n)
    __attribute__((warn_unused_result));
/*
 * A socket address as users write it into *ss and *len: "1.2.3.4:PORT", "[::1]:PORT", "localhost:PORT"
 * (127.0.0.1) or ":PORT" (0.0.0.0: every IPv4 interface, for a listener); no other name (no resolver: the
 * guest binary is static). Port in [min_port, 65535] (min_port 0 lets a listener pick a free port).
 * 0 or -EINVAL (say PARSE_SOCKADDR_WANT).
 */
#define PARSE_SOCKADDR_WANT \
	"want ADDR:PORT: 1.2.3.4:P, [::1]:P, localhost:P or :P (every interface)"
int parse_sockaddr(const char *s, int min_port, struct sockaddr_storage *ss, socklen_t *len)
    __attribute__((warn_unused_result));
/* "ADDR:PORT" / "[ADDR6]:PORT" of an IPv4 or IPv6 socket address into buf; returns buf. */
const char *parse_sockaddr_fmt(const struct sockaddr *sa, char *buf, size_t len);

#endif
