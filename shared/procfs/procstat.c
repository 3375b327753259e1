/* SPDX-License-Identifier: MIT */
/*
 * procstat: parsers of /proc/interrupts, /proc/softirqs, /proc/stat and /proc/schedstat into a snapshot, the
 * per-CPU delta of two snapshots, and the IRQ name table. Parsers walk the text in place with a (pointer,
 * end) cursor, so lines of any length work and nothing is copied into fixed buffers except names (truncated).
 * Every number goes through one strict helper (digits only, overflow rejected). On any malformed input a
 * parser empties its part and returns -EINVAL.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "procfs/procstat.h"

#define U32_WRAP (1ull << 32)

/* ---- text helpers ---- */

struct cursor {
	const char *p, *end;
};

/* Next line [*ls, *le) without the newline; 0 at the end of the text. */
static int next_line(struct cursor *c, const char **ls, const char **le)
{
	const char *nl;

	if (c->p >= c->end)
		return 0;
	nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
	*ls = c->p;
	*le = nl ? nl : c->end;
	c->p = nl ? nl + 1 : c->end;
	return 1;
}

/* Next blank-separated token of [*p, end) as [*ts, *ts + *tl); 0 if none. */
static int next_tok(const char **p, const char *end, const char **ts, size_t *tl)
{
	const char *q = *p;

	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	if (q >= end) {
		*p = q;
		return 0;
	}
	*ts = q;
	while (q < end && *q != ' ' && *q != '\t')
		q++;
	*tl = (size_t)(q - *ts);
	*p = q;
	return 1;
}

static int blank_line(const char *ls, const char *le)
{
	const char *ts;
	size_t tl;

	return !next_tok(&ls, le, &ts, &tl);
}

/* The one strict number helper: [t, t+n) is one or more digits, value fits u64. 0 or -EINVAL. */
static int tok_u64(const char *t, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		unsigned int d;

		if (t[i] < '0' || t[i] > '9')
			return -EINVAL;
		d = (unsigned int)(t[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* A row label before its ':' ("24", "LOC", "NET_RX", "IPI0"): letters, digits, '_'. */
static int label_ok(const char *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char ch = t[i];

		if (!((ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= 'a' && ch <= 'z') || ch == '_'))
			return 0;
	}
	return n > 0;
}

static int tok_eq(const char *t, size_t n, const char *s)
{
	return strlen(s) == n && !memcmp(t, s, n);
}

/* Copy [t, t+n) into dst (PROCSTAT_NAME_LEN), truncating, optionally lowercased. */
static void name_copy(char *dst, const char *t, size_t n, int lower)
{
	size_t i;

	if (n > PROCSTAT_NAME_LEN - 1)
		n = PROCSTAT_NAME_LEN - 1;
	for (i = 0; i < n; i++) {
		char ch = t[i];

		if (lower && ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		dst[i] = ch;
	}
	dst[n] = '\0';
}

/* ---- tables ---- */

static void table_clear(struct procstat_table *t)
{
	free(t->rows);
	free(t->counts);
	free(t->has_cpu);
	memset(t, 0, sizeof(*t));
}

/* Room for one more row; 0 or -ENOMEM. *cap is the row capacity. */
static int table_grow(struct procstat_table *t, unsigned int *cap)
{
	struct procstat_src *rows;
	uint64_t *counts;
	unsigned int ncap;

	if (t->nrows < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 32;
	if (ncap > UINT32_MAX / 2 || (size_t)ncap * t->ncpus > SIZE_MAX / sizeof(uint64_t))
		return -ENOMEM;
	rows = realloc(t->rows, ncap * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	t->rows = rows;
	counts = realloc(t->counts, (size_t)ncap * t->ncpus * sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	t->counts = counts;
	*cap = ncap;
	return 0;
}

/*
 * Header line "CPU0 CPU1 ...": fills *cols (CPU number per column, caller frees), *ncols and t->ncpus /
 * t->has_cpu. CPU numbers must increase. 0, -EINVAL or -ENOMEM.
 */
static int parse_header(struct procstat_table *t, const char *ls, const char *le,
			unsigned int **cols, unsigned int *ncols)
{
	const char *p = ls, *ts;
	size_t tl;
	unsigned int n = 0, cap = 0, *c = NULL, *nc;
	uint64_t cpu;
	int err = -EINVAL;

	while (next_tok(&p, le, &ts, &tl)) {
		if (tl < 4 || memcmp(ts, "CPU", 3) || tok_u64(ts + 3, tl - 3, &cpu) ||
		    cpu >= PROCSTAT_CPU_MAX || (n && cpu <= c[n - 1]))
			goto out;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			nc = realloc(c, cap * sizeof(*c));
			if (!nc) {
				err = -ENOMEM;
				goto out;
			}
			c = nc;
		}
		c[n++] = (unsigned int)cpu;
	}
	if (!n)
		goto out;
	t->ncpus = c[n - 1] + 1;
	t->has_cpu = calloc(t->ncpus, 1);
	if (!t->has_cpu) {
		err = -ENOMEM;
		goto out;
	}
	for (unsigned int i = 0; i < n; i++)
		t->has_cpu[c[i]] = 1;
	*cols = c;
	*ncols = n;
	c = NULL;
	err = 0;
out:
	free(c);
	return err;
}

/*
 * Parse up to ncols numbers of [*p, le) into vals (stops at the first token that is not a number, leaving *p
 * before it). Returns how many were parsed, or -EINVAL if a number token overflows.
 */
static int parse_values(const char **p, const char *le, uint64_t *vals, unsigned int ncols)
{
	const char *q, *ts;
	size_t tl;
	unsigned int n = 0;

	while (n < ncols) {
		q = *p;
		if (!next_tok(&q, le, &ts, &tl) || ts[0] < '0' || ts[0] > '9')
			break;
		if (tok_u64(ts, tl, &vals[n]))
			return -EINVAL;
		*p = q;
		n++;
	}
	return (int)n;
}

/* Store a row with per-column values. */
static int table_add(struct procstat_table *t, unsigned int *cap, const struct procstat_src *src,
		     const uint64_t *vals, const unsigned int *cols, unsigned int ncols)
{
	uint64_t *row;
	int err;

	err = table_grow(t, cap);
	if (err)
		return err;
	t->rows[t->nrows] = *src;
	row = t->counts + (size_t)t->nrows * t->ncpus;
	memset(row, 0, t->ncpus * sizeof(*row));
	for (unsigned int i = 0; i < ncols; i++)
		row[cols[i]] = vals[i];
	t->nrows++;
	return 0;
}

/* ---- /proc/interrupts ---- */

static const struct {
	const char *label, *name;
	uint32_t id;
	uint8_t cls, counted;
} irq_named[] = {
	{ "NMI", "nmi", 0, VN_CLASS_NMI, 1 },
	{ "LOC", "local_timer", VN_VEC_BASE + VN_VEC_LOCAL_TIMER, VN_CLASS_IRQ, 1 },
	{ "RES", "reschedule", VN_VEC_BASE + VN_VEC_RESCHEDULE, VN_CLASS_IRQ, 1 },
	{ "CAL", "call_function", VN_VEC_BASE + VN_VEC_CALL_FUNCTION, VN_CLASS_IRQ, 1 },
	{ "IWI", "irq_work", VN_VEC_BASE + VN_VEC_IRQ_WORK, VN_CLASS_IRQ, 1 },
	{ "PLT", "x86_platform_ipi", VN_VEC_BASE + VN_VEC_X86_PLATFORM_IPI, VN_CLASS_IRQ, 1 },
	{ "RTR", "rtr", PROCSTAT_ID_NAMED, VN_CLASS_IRQ, 0 },
	{ "MCP", "mcp", PROCSTAT_ID_NAMED, VN_CLASS_IRQ, 0 },
	{ "PMI", "pmi", PROCSTAT_ID_NAMED, VN_CLASS_IRQ, 0 },
	{ "MIS", "mis", PROCSTAT_ID_NAMED, VN_CLASS_IRQ, 0 },
};

static const char *const vec_names[VN_VEC_MAX] = {
	[VN_VEC_LOCAL_TIMER] = "local_timer",
	[VN_VEC_RESCHEDULE] = "reschedule",
	[VN_VEC_CALL_FUNCTION] = "call_function",
	[VN_VEC_CALL_FUNCTION_SINGLE] = "call_function_single",
	[VN_VEC_IRQ_WORK] = "irq_work",
	[VN_VEC_X86_PLATFORM_IPI] = "x86_platform_ipi",
	[VN_VEC_SPURIOUS_APIC] = "spurious_apic",
	[VN_VEC_ERROR_APIC] = "error_apic",
	[VN_VEC_THERMAL_APIC] = "thermal_apic",
};

/* "5-edge", "-fasteoi" (x86: hwirq and flow name) or "Level"/"Edge[-x]" (GENERIC_IRQ_SHOW_LEVEL). */
static int is_type_tok(const char *t, size_t n)
{
	size_t i = 0;

	while (i < n && t[i] >= '0' && t[i] <= '9')
		i++;
	if (i + 1 < n && t[i] == '-' &&
	    ((t[i + 1] >= 'a' && t[i + 1] <= 'z') || (t[i + 1] >= 'A' && t[i + 1] <= 'Z')))
		return 1;
	return (n >= 4 && !memcmp(t, "Edge", 4) && (n == 4 || t[4] == '-')) ||
	       (n >= 5 && !memcmp(t, "Level", 5) && (n == 5 || t[5] == '-'));
}

/*
 * Name of a numeric IRQ from the text after its counts: chip [hwirq-type] action[, action...]. The name is
 * everything after the type token; without one, the last token; with only the chip, "irq<N>".
 */
static void irq_action_name(char *dst, const char *p, const char *le, unsigned int irq)
{
	const char *ts, *first = NULL, *last = NULL, *after_type = NULL;
	size_t tl, lastl = 0;
	unsigned int n = 0;

	while (next_tok(&p, le, &ts, &tl)) {
		if (!first)
			first = ts;
		if (n >= 1 && !after_type && is_type_tok(ts, tl))
			after_type = ts + tl;
		last = ts;
		lastl = tl;
		n++;
	}
	if (after_type) {
		const char *e = le;

		while (after_type < le && (*after_type == ' ' || *after_type == '\t'))
			after_type++;
		while (e > after_type && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e > after_type) {
			name_copy(dst, after_type, (size_t)(e - after_type), 0);
			return;
		}
	} else if (n >= 2) {
		name_copy(dst, last, lastl, 0);
		return;
	}
	snprintf(dst, PROCSTAT_NAME_LEN, "irq%u", irq);
}

/*
 * One row of /proc/interrupts or /proc/softirqs after its "label:" token (ts, tl without the colon): fill src,
 * vals[ncols] from the text at p. Returns 0 to add the row, 1 to skip it, -EINVAL if it is malformed.
 */
typedef int (*row_parser)(struct procstat_src *src, const char *ts, size_t tl, const char *p,
			  const char *le, uint64_t *vals, unsigned int ncols);

/* The shape both files share: a header of CPU columns, then labelled rows of per-CPU counts. */
static int parse_table(struct procstat_snap *s, struct procstat_table *t, unsigned int part,
		       const char *text, size_t len, row_parser row, int need_rows)
{
	struct cursor c = { text, text + len };
	unsigned int *cols = NULL, ncols = 0, cap = 0;
	uint64_t *vals = NULL;
	const char *ls, *le;
	int err = -EINVAL;

	table_clear(t);
	s->parts &= ~part;
	if (!text)
		goto out;
	do {
		if (!next_line(&c, &ls, &le))
			goto out;
	} while (blank_line(ls, le));
	err = parse_header(t, ls, le, &cols, &ncols);
	if (err)
		goto out;
	vals = calloc(ncols, sizeof(*vals));
	if (!vals) {
		err = -ENOMEM;
		goto out;
	}
	while (next_line(&c, &ls, &le)) {
		struct procstat_src src = { 0 };
		const char *p = ls, *ts;
		size_t tl;

		if (!next_tok(&p, le, &ts, &tl))
			continue;
		err = -EINVAL;
		if (tl < 2 || ts[tl - 1] != ':' || !label_ok(ts, tl - 1))
			goto out;
		err = row(&src, ts, tl - 1, p, le, vals, ncols);
		if (err > 0)
			continue;
		if (!err)
			err = table_add(t, &cap, &src, vals, cols, ncols);
		if (err)
			goto out;
	}
	err = need_rows && !t->nrows ? -EINVAL : 0;
	if (!err)
		s->parts |= part;
out:
	if (err)
		table_clear(t);
	free(cols);
	free(vals);
	return err;
}

static int interrupts_row(struct procstat_src *src, const char *ts, size_t tl, const char *p,
			  const char *le, uint64_t *vals, unsigned int ncols)
{
	uint64_t irq;
	unsigned int i;
	int n;

	src->cls = VN_CLASS_IRQ;
	src->counted = 1;
	n = parse_values(&p, le, vals, ncols);
	if (n < 0)
		return -EINVAL;
	if (!tok_u64(ts, tl, &irq)) {
		if (irq > UINT32_MAX || (unsigned int)n != ncols)
			return -EINVAL;
		src->id = (uint32_t)irq;
		irq_action_name(src->name, p, le, src->id);
		return 0;
	}
	if (n == 1 && ncols > 1)
		return 1; /* a global counter (ERR, MIS): not per CPU */
	if ((unsigned int)n != ncols)
		return -EINVAL;
	for (i = 0; i < sizeof(irq_named) / sizeof(irq_named[0]); i++) {
		if (tok_eq(ts, tl, irq_named[i].label)) {
			snprintf(src->name, sizeof(src->name), "%s", irq_named[i].name);
			src->id = irq_named[i].id;
			src->cls = irq_named[i].cls;
			src->counted = irq_named[i].counted;
			return 0;
		}
	}
	name_copy(src->name, ts, tl, 1);
	src->id = PROCSTAT_ID_NAMED;
	return 0;
}

int procstat_parse_interrupts(struct procstat_snap *s, const char *text, size_t len)
{
	return parse_table(s, &s->irq, PROCSTAT_PART_INTERRUPTS, text, len, interrupts_row, 0);
}

/* ---- /proc/softirqs ---- */

static const char *const softirq_labels[] = { "HI",	  "TIMER",   "NET_TX", "NET_RX",  "BLOCK",
					      "IRQ_POLL", "TASKLET", "SCHED",  "HRTIMER", "RCU" };

static int softirqs_row(struct procstat_src *src, const char *ts, size_t tl, const char *p,
			const char *le, uint64_t *vals, unsigned int ncols)
{
	const char *js;
	size_t jl, i;

	src->cls = VN_CLASS_SOFTIRQ;
	src->counted = 1;
	src->id = PROCSTAT_ID_NAMED;
	if (parse_values(&p, le, vals, ncols) != (int)ncols)
		return -EINVAL;
	if (next_tok(&p, le, &js, &jl))
		return -EINVAL; /* trailing junk */
	for (i = 0; i < sizeof(softirq_labels) / sizeof(softirq_labels[0]); i++) {
		if (tok_eq(ts, tl, softirq_labels[i])) {
			src->id = (uint32_t)i;
			break;
		}
	}
	name_copy(src->name, ts, tl, 1);
	return 0;
}

int procstat_parse_softirqs(struct procstat_snap *s, const char *text, size_t len)
{
	return parse_table(s, &s->soft, PROCSTAT_PART_SOFTIRQS, text, len, softirqs_row, 1);
}

/* ---- per-CPU scalars ---- */

static int cpu_reserve(struct procstat_snap *s, unsigned int n)
{
	struct procstat_cpu *c;

	if (n <= s->ncpus)
		return 0;
	c = realloc(s->cpu, n * sizeof(*c));
	if (!c)
		return -ENOMEM;
	memset(c + s->ncpus, 0, (n - s->ncpus) * sizeof(*c));
	s->cpu = c;
	s->ncpus = n;
	return 0;
}

/* "cpu<N>" (not the aggregate "cpu"): 1 and *cpu, 0 if the token is something else, -EINVAL if N is bad. */
static int cpu_label(const char *ts, size_t tl, unsigned int *cpu)
{
	uint64_t v;

	if (tl < 4 || memcmp(ts, "cpu", 3))
		return 0;
	if (tok_u64(ts + 3, tl - 3, &v) || v >= PROCSTAT_CPU_MAX)
		return -EINVAL;
	*cpu = (unsigned int)v;
	return 1;
}

#define CPU_LINE_MAX 9 /* numbers used of a cpu<N> line, at most */

/*
 * One line of /proc/stat or /proc/schedstat: for a "cpu<N>" line followed by at least nvals numbers, 1 with
 * *cpu (its slot reserved in s) and the first nvals numbers in v; 0 for any other line; -errno for a bad
 * per-CPU line.
 */
static int cpu_line(struct procstat_snap *s, const char *ls, const char *le, uint64_t *v,
		    unsigned int nvals, unsigned int *cpu)
{
	const char *p = ls, *ts;
	size_t tl;
	int r;

	if (!next_tok(&p, le, &ts, &tl))
		return 0;
	r = cpu_label(ts, tl, cpu);
	if (r <= 0)
		return r;
	if (parse_values(&p, le, v, nvals) != (int)nvals)
		return -EINVAL;
	r = cpu_reserve(s, *cpu + 1);
	return r ? r : 1;
}

/* The CPU's "has a line in this file" flag of part PROCSTAT_PART_STAT or PROCSTAT_PART_SCHEDSTAT. */
static uint8_t *cpu_has(struct procstat_cpu *c, unsigned int part)
{
	return part == PROCSTAT_PART_STAT ? &c->has_stat : &c->has_sched;
}

/*
 * The cpu<N> lines of a per-CPU file (part PROCSTAT_PART_STAT or PROCSTAT_PART_SCHEDSTAT) from c on, other
 * lines skipped: each CPU at most once, with at least nvals (<= CPU_LINE_MAX) numbers, whose first nvals
 * store() keeps; the CPU's flag of part is set. Returns 0, or -errno (no CPU line: -EINVAL) with the flag
 * of part cleared on every CPU.
 */
static int cpu_lines(struct procstat_snap *s, struct cursor *c, unsigned int part,
		     unsigned int nvals, void (*store)(struct procstat_cpu *cpu, const uint64_t *v))
{
	const char *ls, *le;
	unsigned int i, found = 0;
	int err = -EINVAL;

	while (next_line(c, &ls, &le)) {
		uint64_t v[CPU_LINE_MAX];
		unsigned int cpu;
		int r = cpu_line(s, ls, le, v, nvals, &cpu);

		if (r == 0)
			continue;
		err = r < 0 ? r : -EINVAL;
		if (r < 0 || *cpu_has(&s->cpu[cpu], part))
			goto out;
		*cpu_has(&s->cpu[cpu], part) = 1;
		store(&s->cpu[cpu], v);
		found++;
	}
	err = found ? 0 : -EINVAL;
out:
	if (err) {
		for (i = 0; i < s->ncpus; i++)
			*cpu_has(&s->cpu[i], part) = 0;
	}
	return err;
}

/* A /proc/stat cpu line: user nice system idle iowait irq softirq steal (USER_HZ ticks). */
static void stat_store(struct procstat_cpu *c, const uint64_t *v)
{
	c->steal_ticks = v[7];
}

int procstat_parse_stat(struct procstat_snap *s, const char *text, size_t len, long clk_tck)
{
	struct cursor c = { text, text + len };
	int err;

	s->parts &= ~PROCSTAT_PART_STAT;
	for (unsigned int i = 0; i < s->ncpus; i++) {
		s->cpu[i].has_stat = 0;
		s->cpu[i].steal_ticks = 0;
	}
	if (!text || clk_tck <= 0)
		return -EINVAL;
	s->clk_tck = clk_tck;
	err = cpu_lines(s, &c, PROCSTAT_PART_STAT, 8, stat_store);
	if (err)
		return err;
	s->parts |= PROCSTAT_PART_STAT;
	return 0;
}

/*
 * A /proc/schedstat version 15..17 cpu line: yld_count, 0, sched_count, sched_goidle, ttwu_count,
 * ttwu_local, rq_cpu_time (ns), run_delay (ns), pcount. We use the last three.
 */
static void schedstat_store(struct procstat_cpu *c, const uint64_t *v)
{
	c->run_ns = v[6];
	c->wait_ns = v[7];
	c->timeslices = v[8];
}

/* The "version N" line that starts /proc/schedstat (blank lines before it skipped): 0 or -errno. */
static int schedstat_version(struct cursor *c, uint64_t *ver)
{
	const char *ls, *le, *p, *ts;
	size_t tl;

	do {
		if (!next_line(c, &ls, &le))
			return -EINVAL;
	} while (blank_line(ls, le));
	p = ls;
	if (!next_tok(&p, le, &ts, &tl) || !tok_eq(ts, tl, "version") ||
	    !next_tok(&p, le, &ts, &tl) || tok_u64(ts, tl, ver) || *ver > UINT32_MAX)
		return -EINVAL;
	return *ver < 15 ? -ENOTSUP : 0;
}

int procstat_parse_schedstat(struct procstat_snap *s, const char *text, size_t len)
{
	struct cursor c = { text, text + len };
	uint64_t ver;
	int err;

	s->parts &= ~PROCSTAT_PART_SCHEDSTAT;
	s->schedstat_version = 0;
	for (unsigned int i = 0; i < s->ncpus; i++) {
		s->cpu[i].has_sched = 0;
		s->cpu[i].run_ns = s->cpu[i].wait_ns = s->cpu[i].timeslices = 0;
	}
	if (!text)
		return -EINVAL;
	err = schedstat_version(&c, &ver);
	if (!err) /* then cpu<N> lines among timestamp and domain<N> lines */
		err = cpu_lines(s, &c, PROCSTAT_PART_SCHEDSTAT, 9, schedstat_store);
	if (err)
		return err;
	s->schedstat_version = (unsigned int)ver;
	s->parts |= PROCSTAT_PART_SCHEDSTAT;
	return 0;
}

/* ---- snapshot ---- */

struct procstat_snap *procstat_snap_new(void)
{
	struct procstat_snap *s = calloc(1, sizeof(*s));

	if (!s)
		errno = ENOMEM;
	return s;
}

void procstat_snap_free(struct procstat_snap *s)
{
	if (!s)
		return;
	table_clear(&s->irq);
	table_clear(&s->soft);
	free(s->cpu);
	free(s);
}

int procstat_read_file(const char *path, char **buf, size_t *len)
{
	size_t cap = 16384, n = 0;
	char *b = NULL, *nb;
	ssize_t r;
	int fd, err = 0;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	b = malloc(cap);
	if (!b) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (cap - n < 2) {
			if (cap > SIZE_MAX / 2) {
				err = -EFBIG;
				goto out;
			}
			nb = realloc(b, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	b = NULL;
out:
	free(b);
	close(fd);
	return err;
}

static int read_part(struct procstat_snap *s, const char *path, int which)
{
	char *buf = NULL;
	size_t len = 0;
	int err;

	err = procstat_read_file(path, &buf, &len);
	if (err)
		goto out;
	switch (which) {
	case PROCSTAT_PART_INTERRUPTS:
		err = procstat_parse_interrupts(s, buf, len);
		break;
	case PROCSTAT_PART_SOFTIRQS:
		err = procstat_parse_softirqs(s, buf, len);
		break;
	case PROCSTAT_PART_STAT:
		err = procstat_parse_stat(s, buf, len, sysconf(_SC_CLK_TCK));
		break;
	default:
		err = procstat_parse_schedstat(s, buf, len);
		break;
	}
out:
	free(buf);
	return err;
}

int procstat_snap_read(struct procstat_snap *s)
{
	struct timespec ts;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->mono_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	err = read_part(s, "/proc/interrupts", PROCSTAT_PART_INTERRUPTS);
	if (err)
		goto out;
	err = read_part(s, "/proc/softirqs", PROCSTAT_PART_SOFTIRQS);
	if (err)
		goto out;
	err = read_part(s, "/proc/stat", PROCSTAT_PART_STAT);
	if (err)
		goto out;
	err = read_part(s, "/proc/schedstat", PROCSTAT_PART_SCHEDSTAT);
	if (err == -ENOENT || err == -ENOTSUP)
		err = 0; /* optional: no CONFIG_SCHEDSTATS, or an old format */
out:
	return err;
}

/* ---- deltas ---- */

static int src_same(const struct procstat_src *a, const struct procstat_src *b)
{
	return a->cls == b->cls && a->id == b->id && !strcmp(a->name, b->name);
}

/* Index of the row of t equal to src, trying hint first; -1 if none. */
static long table_find(const struct procstat_table *t, const struct procstat_src *src,
		       unsigned int hint)
{
	if (hint < t->nrows && src_same(&t->rows[hint], src))
		return hint;
	for (unsigned int i = 0; i < t->nrows; i++) {
		if (src_same(&t->rows[i], src))
			return i;
	}
	return -1;
}

/* cur - prev of a 32-bit kernel counter: a backwards step within 32 bits is one wrap. */
static uint64_t diff32(uint64_t prev, uint64_t cur, struct procstat_delta *d)
{
	if (cur >= prev)
		return cur - prev;
	if (prev < U32_WRAP && cur < U32_WRAP) {
		d->nwraps++;
		return cur + U32_WRAP - prev;
	}
	d->nresets++;
	return cur;
}

static uint64_t diff64(uint64_t prev, uint64_t cur, struct procstat_delta *d)
{
	if (cur >= prev)
		return cur - prev;
	d->nresets++;
	return 0;
}

static void top_insert(struct procstat_delta *d, const struct procstat_src *src, uint64_t count)
{
	unsigned int i;

	if (!count)
		return;
	if (d->ntop == PROCSTAT_TOP && d->top[PROCSTAT_TOP - 1].count >= count)
		return;
	i = d->ntop < PROCSTAT_TOP ? d->ntop++ : PROCSTAT_TOP - 1;
	while (i > 0 && d->top[i - 1].count < count) {
		d->top[i] = d->top[i - 1];
		i--;
	}
	memset(&d->top[i], 0, sizeof(d->top[i]));
	memcpy(d->top[i].name, src->name, sizeof(d->top[i].name));
	d->top[i].id = src->id;
	d->top[i].cls = src->cls;
	d->top[i].count = count;
}

static int table_has(const struct procstat_table *t, unsigned int cpu)
{
	return t->rows && cpu < t->ncpus && t->has_cpu[cpu];
}

static void table_delta(const struct procstat_table *prev, const struct procstat_table *cur,
			unsigned int cpu, struct procstat_delta *d)
{
	for (unsigned int r = 0; r < cur->nrows; r++) {
		const struct procstat_src *src = &cur->rows[r];
		uint64_t now = cur->counts[(size_t)r * cur->ncpus + cpu], n;
		long pr = table_find(prev, src, r);

		n = pr < 0 ? now : diff32(prev->counts[(size_t)pr * prev->ncpus + cpu], now, d);
		if (!src->counted)
			continue;
		if (src->cls == VN_CLASS_NMI)
			d->nmi += n;
		else if (src->cls == VN_CLASS_SOFTIRQ)
			d->softirq += n;
		else
			d->irq += n;
		if (src->cls == VN_CLASS_IRQ && src->id == VN_VEC_BASE + VN_VEC_LOCAL_TIMER)
			d->local_timer += n;
		top_insert(d, src, n);
	}
}

int procstat_delta(const struct procstat_snap *prev, const struct procstat_snap *cur,
		   unsigned int cpu, struct procstat_delta *out)
{
	const struct procstat_cpu *pc, *cc;

	if (!prev || !cur || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->cpu = cpu;
	if (prev->mono_ns && cur->mono_ns >= prev->mono_ns)
		out->wall_ns = cur->mono_ns - prev->mono_ns;
	if (table_has(&prev->irq, cpu) && table_has(&cur->irq, cpu)) {
		out->parts |= PROCSTAT_PART_INTERRUPTS;
		table_delta(&prev->irq, &cur->irq, cpu, out);
	}
	if (table_has(&prev->soft, cpu) && table_has(&cur->soft, cpu)) {
		out->parts |= PROCSTAT_PART_SOFTIRQS;
		table_delta(&prev->soft, &cur->soft, cpu, out);
	}
	pc = cpu < prev->ncpus ? &prev->cpu[cpu] : NULL;
	cc = cpu < cur->ncpus ? &cur->cpu[cpu] : NULL;
	if (pc && cc && pc->has_stat && cc->has_stat && cur->clk_tck > 0) {
		uint64_t t = diff64(pc->steal_ticks, cc->steal_ticks, out),
			 hz = (uint64_t)cur->clk_tck;

		out->parts |= PROCSTAT_PART_STAT;
		out->steal_ns = t / hz * 1000000000ull + t % hz * 1000000000ull / hz;
	}
	if (pc && cc && pc->has_sched && cc->has_sched) {
		out->parts |= PROCSTAT_PART_SCHEDSTAT;
		out->run_ns = diff64(pc->run_ns, cc->run_ns, out);
		out->wait_ns = diff64(pc->wait_ns, cc->wait_ns, out);
		out->ctxsw = diff64(pc->timeslices, cc->timeslices, out);
	}
	return out->parts ? 0 : -ENOENT;
}

/* ---- IRQ names ---- */

struct procstat_irqname {
	uint32_t irq;
	char name[PROCSTAT_NAME_LEN];
};

struct procstat_irqnames {
	size_t n;
	struct procstat_irqname *e; /* sorted by irq */
};

static int irqname_cmp(const void *a, const void *b)
{
	const struct procstat_irqname *x = a, *y = b;

	return x->irq < y->irq ? -1 : x->irq > y->irq;
}

struct procstat_irqnames *procstat_irqnames_parse(const char *text, size_t len)
{
	struct procstat_snap *s = NULL;
	struct procstat_irqnames *t = NULL;
	int err;

	s = procstat_snap_new();
	t = calloc(1, sizeof(*t));
	if (!s || !t) {
		err = -ENOMEM;
		goto out;
	}
	err = procstat_parse_interrupts(s, text, len);
	if (err)
		goto out;
	t->e = calloc(s->irq.nrows ? s->irq.nrows : 1, sizeof(*t->e));
	if (!t->e) {
		err = -ENOMEM;
		goto out;
	}
	for (unsigned int i = 0; i < s->irq.nrows; i++) {
		const struct procstat_src *src = &s->irq.rows[i];

		if (src->cls != VN_CLASS_IRQ || src->id >= VN_VEC_BASE)
			continue;
		t->e[t->n].irq = src->id;
		memcpy(t->e[t->n].name, src->name, sizeof(t->e[t->n].name));
		t->n++;
	}
	qsort(t->e, t->n, sizeof(*t->e), irqname_cmp);
out:
	procstat_snap_free(s);
	if (err) {
		procstat_irqnames_free(t);
		errno = -err;
		return NULL;
	}
	return t;
}

struct procstat_irqnames *procstat_irqnames_read(void)
{
	struct procstat_irqnames *t;
	char *buf = NULL;
	size_t len;
	int err;

	err = procstat_read_file("/proc/interrupts", &buf, &len);
	if (err) {
		errno = -err;
		return NULL;
	}
	t = procstat_irqnames_parse(buf, len);
	err = errno;
	free(buf);
	errno = err;
	return t;
}

void procstat_irqnames_free(struct procstat_irqnames *t)
{
	if (!t)
		return;
	free(t->e);
	free(t);
}

const char *procstat_irq_name(const struct procstat_irqnames *t, unsigned int irq)
{
	struct procstat_irqname key = { .irq = irq }, *e;

	if (irq >= VN_VEC_BASE)
		return irq - VN_VEC_BASE < VN_VEC_MAX ? vec_names[irq - VN_VEC_BASE] : NULL;
	if (!t || !t->n)
		return NULL;
	e = bsearch(&key, t->e, t->n, sizeof(*t->e), irqname_cmp);
	return e ? e->name : NULL;
}
