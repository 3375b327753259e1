/* SPDX-License-Identifier: MIT */
/*
 * cliopt: the common option table, the getopt_long based parser every command is built from and the
 * command dispatch of the programs.
 */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "util/parse.h"
#include "util/version.h"

/* getopt_long's value of the long option at index i of the parser's entries */
#define LONG_BASE 0x10000

/* One entry of the common table: arg is the value's name, NULL for a flag. */
#define COMMON(i, n, l, a, h)                                                                \
	{                                                                                    \
		.id = i, .name = n, .letter = l, .has_arg = (a) != NULL, .arg = a, .help = h \
	}

static const struct cliopt common[] = {
	COMMON(CLIOPT_CPUS, "cpus", 'c', "LIST", "CPUs: a list like 0,2-3, or all"),
	COMMON(CLIOPT_CGROUP, "cgroup", 'C', "PATH", "the cgroup (v2) to watch"),
	COMMON(CLIOPT_PERIOD, "period", 'p', "TIME", "period"),
	COMMON(CLIOPT_RUNTIME, "runtime", 'r', "TIME", "sampler runtime per period"),
	COMMON(CLIOPT_THRESHOLD, "threshold", 'T', "TIME", "smallest gap counted as noise"),
	COMMON(CLIOPT_STOP_SINGLE, "stop-single", 's', "TIME",
	       "stop when one gap exceeds TIME, exit 3"),
	COMMON(CLIOPT_STOP_TOTAL, "stop-total", 'S', "TIME",
	       "stop when a CPU's noise exceeds TIME, exit 3"),
	/* a bare --duration was in seconds: rejected for one release */
	{ .id = CLIOPT_DURATION,
	  .name = "duration",
	  .letter = 'd',
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "stop after TIME (default: until Ctrl-C)",
	  .bare_unit = "s" },
	COMMON(CLIOPT_PRIORITY, "priority", 'P', "POL", "other (default), fifo:N or rr:N"),
	COMMON(CLIOPT_JSON, "json", 'j', NULL, "JSON output"),
	COMMON(CLIOPT_OUTPUT, "output", 'o', "FILE", "file to write"),
	COMMON(CLIOPT_TOP, "top", 'n', "N", "entries listed (default 10)"),
	COMMON(CLIOPT_QUIET, "quiet", 'q', NULL, "no progress messages"),
	COMMON(CLIOPT_VERBOSE, "verbose", 'v', NULL, "more messages (repeat for more)"),
	COMMON(CLIOPT_HELP, "help", 'h', NULL, "this help"),
	COMMON(CLIOPT_VERSION, "version", 'V', NULL, "print the version and exit"),
	COMMON(CLIOPT_DOMAIN, "domain", 'D', "NAME", "the libvirt domain (repeatable)"),
	COMMON(CLIOPT_KEY_FILE, "key-file", 'k', "FILE", "the cluster key file"),
	COMMON(CLIOPT_GUEST, "guest", 'g', NULL, "also read the guests' records"),
	COMMON(CLIOPT_PID, "pid", 0, "PID", "the process (comma-separated list for several)"),
	COMMON(CLIOPT_JOB, "job", 0, "ID", "the job id"),
	COMMON(CLIOPT_CONNECT, "connect", 0, "URI", "the libvirt URI"),
	COMMON(CLIOPT_COLLECTOR, "collector", 0, "ADDR:PORT", "the cluster collector"),
	COMMON(CLIOPT_NODE_ID, "node-id", 0, "N", "this node's id in the cluster"),
};

/* The program's name for --version: set by cliopt_dispatch. */
static const char *prog_name;

const struct cliopt *cliopt_common(int id)
{
	size_t i;

	for (i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		if (common[i].id == id)
			return &common[i];
	return NULL;
}

int cliopt_fail(struct cliopt_parser *ps, const char *fmt, ...)
{
	va_list ap;

	if (ps->err && ps->errlen) {
		va_start(ap, fmt);
		vsnprintf(ps->err, ps->errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int is_end(const struct cliopt *o)
{
	return !o->id && !o->alias_of;
}

static const struct cliopt *find_id(const struct cliopt_parser *ps, int id)
{
	int i;

	for (i = 0; i < ps->n; i++)
		if (!ps->ent[i].alias_of && ps->ent[i].id == id)
			return &ps->ent[i];
	return NULL;
}

/* The entry of a command's table with the common fields filled in (aliases: in resolve_aliases). */
static int resolve_entry(struct cliopt_parser *ps, const struct cliopt *o, struct cliopt *out)
{
	const struct cliopt *c;

	*out = *o;
	if (o->alias_of) {
		if (!o->name && !o->letter)
			return cliopt_fail(ps, "cliopt: an alias of %d has no spelling",
					   o->alias_of);
		return 0;
	}
	if (o->id >= CLIOPT_OWN) {
		if (!o->name)
			return cliopt_fail(ps, "cliopt: option %d has no name", o->id);
		if (o->letter)
			return cliopt_fail(
			    ps, "cliopt: --%s: a command's own options are long-only", o->name);
		return 0;
	}
	c = cliopt_common(o->id);
	if (!c)
		return cliopt_fail(ps, "cliopt: %d is not a common option", o->id);
	if (o->name || o->letter)
		return cliopt_fail(ps, "cliopt: --%s: a common option keeps its spelling", c->name);
	*out = *c;
	if (o->help)
		out->help = o->help;
	if (o->bare_unit)
		out->bare_unit = o->bare_unit;
	return 0;
}

static int resolve_aliases(struct cliopt_parser *ps)
{
	const struct cliopt *t;
	int i;

	for (i = 0; i < ps->n; i++) {
		if (!ps->ent[i].alias_of)
			continue;
		t = find_id(ps, ps->ent[i].alias_of);
		if (!t)
			return cliopt_fail(ps, "cliopt: alias of an option the command lacks (%d)",
					   ps->ent[i].alias_of);
		ps->ent[i].id = t->id;
		ps->ent[i].has_arg = t->has_arg;
	}
	return 0;
}

/* Every name and letter once: a letter a command uses with its common meaning cannot be an alias. */
static int check_unique(struct cliopt_parser *ps)
{
	const struct cliopt *a, *b;
	int i, j;

	for (i = 0; i < ps->n; i++)
		for (j = i + 1; j < ps->n; j++) {
			a = &ps->ent[i];
			b = &ps->ent[j];
			if (a->letter && a->letter == b->letter)
				return cliopt_fail(ps, "cliopt: -%c is defined twice", a->letter);
			if (a->name && b->name && !strcmp(a->name, b->name))
				return cliopt_fail(ps, "cliopt: --%s is defined twice", a->name);
		}
	return 0;
}

/* getopt_long's tables: "+:" (stop at the first non-option, report a missing value as ':'). */
static void build_getopt(struct cliopt_parser *ps)
{
	char *s = ps->shorts;
	int i, nl = 0;

	*s++ = '+';
	*s++ = ':';
	for (i = 0; i < ps->n; i++) {
		const struct cliopt *o = &ps->ent[i];

		if (o->letter) {
			*s++ = (char)o->letter;
			if (o->has_arg)
				*s++ = ':';
		}
		if (o->name)
			ps->lopts[nl++] =
			    (struct option){ o->name, o->has_arg ? required_argument : no_argument,
					     NULL, LONG_BASE + i };
	}
	*s = 0;
	ps->lopts[nl] = (struct option){ 0 };
}

int cliopt_init(struct cliopt_parser *ps, const struct cliopt *opts, int argc, char **argv,
		char *err, size_t errlen)
{
	int rc;

	memset(ps, 0, sizeof(*ps));
	ps->argc = argc;
	ps->argv = argv;
	ps->err = err;
	ps->errlen = errlen;
	for (; !is_end(opts); opts++) {
		if (ps->n == CLIOPT_MAX)
			return cliopt_fail(ps, "cliopt: more than %d options", CLIOPT_MAX);
		rc = resolve_entry(ps, opts, &ps->ent[ps->n++]);
		if (rc)
			return rc;
	}
	/* every command takes --version (the one slot beyond CLIOPT_MAX is for it) */
	if (!find_id(ps, CLIOPT_VERSION))
		ps->ent[ps->n++] = *cliopt_common(CLIOPT_VERSION);
	rc = resolve_aliases(ps);
	if (!rc)
		rc = check_unique(ps);
	if (rc)
		return rc;
	build_getopt(ps);
	optind = 0;
	opterr = 0;
	return 0;
}

/* "--json=1": the name of a flag given a value, or NULL. */
static const struct cliopt *flag_with_value(const struct cliopt_parser *ps, const char *a)
{
	const char *eq = strchr(a, '=');
	int i;

	if (strncmp(a, "--", 2) || !eq)
		return NULL;
	for (i = 0; i < ps->n; i++)
		if (ps->ent[i].name && !ps->ent[i].has_arg &&
		    strlen(ps->ent[i].name) == (size_t)(eq - a - 2) &&
		    !strncmp(ps->ent[i].name, a + 2, (size_t)(eq - a - 2)))
			return &ps->ent[i];
	return NULL;
}

static int getopt_error(struct cliopt_parser *ps, int c, const char *a)
{
	const struct cliopt *f;

	if (c == ':')
		return cliopt_fail(ps, "option '%s' needs a value", a);
	f = flag_with_value(ps, a);
	if (f)
		return cliopt_fail(ps, "option '--%s' takes no value (in '%s')", f->name, a);
	if (optopt && optopt < LONG_BASE && strncmp(a, "--", 2) && a[1] == optopt && !a[2])
		return cliopt_fail(ps, "unknown option '-%c'", optopt);
	if (optopt && optopt < LONG_BASE && strncmp(a, "--", 2))
		return cliopt_fail(ps, "unknown option '-%c' (in '%s')", optopt, a);
	return cliopt_fail(ps, "unknown option '%s'", a);
}

static const struct cliopt *entry_of(const struct cliopt_parser *ps, int c)
{
	int i;

	if (c >= LONG_BASE)
		return &ps->ent[c - LONG_BASE];
	for (i = 0; i < ps->n; i++)
		if (ps->ent[i].letter == c)
			return &ps->ent[i];
	return NULL;
}

int cliopt_next(struct cliopt_parser *ps)
{
	/* the argument getopt looks at: an error may be in the middle of a group "-qx" */
	int cur = optind ? optind : 1;
	const struct cliopt *o;
	int c = getopt_long(ps->argc, ps->argv, ps->shorts, ps->lopts, NULL);

	ps->arg = NULL;
	if (c == -1)
		return 0;
	o = entry_of(ps, c);
	if (!o)
		return getopt_error(ps, c, cur < ps->argc ? ps->argv[cur] : "");
	if (c >= LONG_BASE)
		snprintf(ps->spell, sizeof(ps->spell), "--%s", o->name);
	else
		snprintf(ps->spell, sizeof(ps->spell), "-%c", c);
	ps->spelled = ps->spell;
	if (o->alias_of) {
		o = find_id(ps, o->alias_of);
		if (o->letter && o->name)
			log_warn("%s is deprecated, use -%c (--%s)", ps->spell, o->letter, o->name);
		else
			log_warn("%s is deprecated, use --%s", ps->spell, o->name);
	}
	if (o->id == CLIOPT_VERSION) {
		version_print(stdout, prog_name ? prog_name : program_invocation_short_name);
		exit(fflush(stdout) ? EXIT_FAIL : EXIT_OK);
	}
	ps->cur = o;
	snprintf(ps->lname, sizeof(ps->lname), "--%s", o->name);
	ps->arg = o->has_arg ? optarg : NULL;
	return o->id;
}

const char *cliopt_name(const struct cliopt_parser *ps)
{
	return ps->lname;
}

/* A number without a unit ("10", "1.5"): what a bare_unit option must not get for one release. */
static int is_bare_nonzero(const char *s)
{
	size_t n = strlen(s);
	double v;

	return n && (isdigit((unsigned char)s[n - 1]) || s[n - 1] == '.') && !parse_double(s, &v) &&
	       v > 0;
}

/* Microseconds in one of a bare TIME's former units ("s", "ms", "us", "m", "h"). */
static uint64_t unit_us(const char *unit)
{
	return !strcmp(unit, "h")    ? 3600000000ull
	       : !strcmp(unit, "m")  ? 60000000ull
	       : !strcmp(unit, "s")  ? 1000000ull
	       : !strcmp(unit, "ms") ? 1000ull
				     : 1ull;
}

/* What is wrong with a TIME that parse_duration refused with rc. */
static const char *time_problem(int rc)
{
	return rc == -ERANGE ? "out of range (at most 5124095h, about 584 years)"
			     : "want a time such as 100us, 5ms, 2s or 1m30s";
}

int cliopt_parse_time(const char *spelled, const char *s, const char *bare_unit, uint64_t *ns,
		      char *err, size_t errlen)
{
	uint64_t v;
	int rc = parse_duration(s, 1000, &v);

	if (rc) {
		log_reason(err, errlen, "invalid %s '%s': %s", spelled, s, time_problem(rc));
		return -EINVAL;
	}
	if (bare_unit && is_bare_nonzero(s)) {
		double days = (double)v / 1000.0 * (double)unit_us(bare_unit) / 86400e6;

		if (days > 1) /* the unit it once had would give days: microseconds are meant */
			log_reason(
			    err, errlen,
			    "%s %s: a time without a unit is in microseconds; write %sus (%.3g s; "
			    "%s%s would be %.1f days)",
			    spelled, s, s, (double)v / 1e9, s, bare_unit, days);
		else
			log_reason(
			    err, errlen,
			    "%s %s: a time without a unit is in microseconds; write %s%s (or %sus)",
			    spelled, s, s, bare_unit, s);
		return -EINVAL;
	}
	*ns = v;
	return 0;
}

int cliopt_time(struct cliopt_parser *ps, uint64_t *ns)
{
	uint64_t v;
	int rc = parse_duration(ps->arg, 1000, &v);

	if (rc)
		return cliopt_fail(ps, "invalid %s '%s': %s", cliopt_name(ps), ps->arg,
				   time_problem(rc));
	return cliopt_parse_time(ps->spelled, ps->arg, ps->cur->bare_unit, ns, ps->err, ps->errlen);
}

int cliopt_priority(struct cliopt_parser *ps, int *policy, int *prio)
{
	const char *s = ps->arg, *n = strchr(s, ':');

	if (!strcmp(s, "other") || !strcmp(s, "o")) {
		*policy = SCHED_OTHER;
		*prio = 0;
		return 0;
	}
	if (!n || (strncmp(s, "fifo:", 5) && strncmp(s, "f:", 2) && strncmp(s, "rr:", 3) &&
		   strncmp(s, "r:", 2)))
		return cliopt_fail(ps, "invalid %s '%s': want other, fifo:N or rr:N",
				   cliopt_name(ps), s);
	if (parse_int(n + 1, 1, 99, prio))
		return cliopt_fail(ps, "invalid %s '%s': priority must be 1..99", cliopt_name(ps),
				   s);
	*policy = s[0] == 'f' ? SCHED_FIFO : SCHED_RR;
	return 0;
}

void cliopt_deprecated(const struct cliopt_parser *ps, const char *use)
{
	log_warn("%s is deprecated, use %s", ps->spelled, use);
}

int cliopt_int(struct cliopt_parser *ps, int min, int max, int *out)
{
	if (parse_int(ps->arg, min, max, out))
		return cliopt_fail(ps, "invalid %s '%s': want %d..%d", cliopt_name(ps), ps->arg,
				   min, max);
	return 0;
}

int cliopt_flag(int c, const struct cliopt_flags *f)
{
	if (c == CLIOPT_JSON && f->json)
		*f->json = 1;
	else if (c == CLIOPT_QUIET && f->quiet)
		*f->quiet = 1;
	else if (c == CLIOPT_VERBOSE && f->verbose)
		(*f->verbose)++;
	else
		return 0;
	return 1;
}

/* printf at buf + n of a buffer of len bytes (truncated, never past it); returns n plus what it needed. */
static size_t VN_FMT(4, 5) append(char *buf, size_t len, size_t n, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(n < len ? buf + n : NULL, n < len ? len - n : 0, fmt, ap);
	va_end(ap);
	return w > 0 ? n + (size_t)w : n;
}

/* One option line of a help: "  -c, --cpus LIST        CPUs...\n" at buf + n; returns the new n. */
#define HELP_WIDTH 80 /* every help line fits a terminal of 80 columns */
#define HELP_TEXT_COL 25 /* where the options' texts begin */

/*
 * One option's lines: the option at the left, its text from HELP_TEXT_COL wrapped at word boundaries within
 * HELP_WIDTH (a text's own line breaks and indentation are words' spaces). An option too long for its
 * column has its text on the next line.
 */
static size_t help_line(const struct cliopt *e, char *buf, size_t len, size_t n)
{
	const char *w = e->help;
	char left[64];
	int col;

	if (e->letter)
		snprintf(left, sizeof(left), "  -%c, --%s%s%s", e->letter, e->name,
			 e->has_arg ? " " : "", e->has_arg && e->arg ? e->arg : "");
	else
		snprintf(left, sizeof(left), "      --%s%s%s", e->name, e->has_arg ? " " : "",
			 e->has_arg && e->arg ? e->arg : "");
	if ((int)strlen(left) < HELP_TEXT_COL) {
		n = append(buf, len, n, "%-*s", HELP_TEXT_COL, left);
	} else {
		n = append(buf, len, n, "%s\n%*s", left, HELP_TEXT_COL, "");
	}
	col = HELP_TEXT_COL;
	while (*w) {
		int l;

		while (*w == ' ' || *w == '\n')
			w++;
		l = (int)strcspn(w, " \n");
		if (!l)
			break;
		if (col > HELP_TEXT_COL && col + 1 + l > HELP_WIDTH) {
			n = append(buf, len, n, "\n%*s", HELP_TEXT_COL, "");
			col = HELP_TEXT_COL;
		} else if (col > HELP_TEXT_COL) {
			n = append(buf, len, n, " ");
			col++;
		}
		n = append(buf, len, n, "%.*s", l, w);
		col += l;
		w += l;
	}
	return append(buf, len, n, "\n");
}

size_t cliopt_help(const struct cliopt *opts, char *buf, size_t len)
{
	struct cliopt e;
	const struct cliopt *c, *o;
	size_t n = 0;
	int has_version = 0;

	if (len)
		buf[0] = 0;
	for (o = opts; !is_end(o); o++)
		has_version |= !o->alias_of && o->id == CLIOPT_VERSION;
	for (; !is_end(opts); opts++) {
		e = *opts;
		c = e.id < CLIOPT_OWN ? cliopt_common(e.id) : NULL;
		if (e.alias_of)
			continue;
		if (c) {
			e = *c;
			if (opts->help)
				e.help = opts->help;
		}
		if (!e.help || !e.help[0] || !e.name)
			continue;
		n = help_line(&e, buf, len, n);
		if (e.id == CLIOPT_HELP && !has_version)
			n = help_line(cliopt_common(CLIOPT_VERSION), buf, len, n);
	}
	return n;
}

size_t cliopt_exit_help(char *buf, size_t len, size_t n, unsigned mask)
{
	static const char *const words[] = {
		[EXIT_OK] = "ok",
		[EXIT_FAIL] = "failed",
		[EXIT_USAGE] = "usage",
		[EXIT_STOPPED] = "threshold hit",
		[EXIT_CANNOT] = "cannot here",
		[EXIT_DAMAGED] = "damaged or foreign file",
		[EXIT_UNREACHABLE] = "libvirt unreachable",
		[EXIT_NODOMAIN] = "no such domain",
		[EXIT_CONFLICT] = "held by another",
		[EXIT_SYMLINK] = "output path is a symlink",
	};
	int col = 0;

	for (unsigned c = 0; c < sizeof(words) / sizeof(words[0]); c++) {
		char item[80];
		int l;

		if (!(mask & CLIOPT_EXIT(c)))
			continue;
		l = snprintf(item, sizeof(item), "%u %s", c, words[c]);
		if (!col) {
			n = append(buf, len, n, "exit: %s", item);
			col = 6 + l;
		} else if (col + 2 + l > HELP_WIDTH - 1) {
			n = append(buf, len, n, ",\n      %s", item);
			col = 6 + l;
		} else {
			n = append(buf, len, n, ", %s", item);
			col += 2 + l;
		}
	}
	return append(buf, len, n, "%s", col ? "\n" : "");
}

void cliopt_exit_print(FILE *f, unsigned mask)
{
	char line[512];

	cliopt_exit_help(line, sizeof(line), 0, mask);
	fputs(line, f);
}

/* "a, b or c": the names of cmds into buf (len > 0). */
static void cmd_list(const struct cliopt_cmd *cmds, char *buf, size_t len)
{
	size_t n = 0;
	int i;

	buf[0] = 0;
	for (i = 0; cmds[i].name; i++)
		n = append(buf, len, n, "%s%s",
			   !i		      ? ""
			   : cmds[i + 1].name ? ", "
					      : " or ",
			   cmds[i].name);
}

size_t cliopt_usage(const char *prog, const struct cliopt_cmd *cmds, char *buf, size_t len)
{
	size_t n;
	int i;

	if (len)
		buf[0] = 0;
	n = append(buf, len, 0, "usage: %s COMMAND [options]\ncommands:\n", prog);
	for (i = 0; cmds[i].name; i++)
		n = append(buf, len, n, "  %-9s %s\n", cmds[i].name, cmds[i].summary);
	n = append(buf, len, n, "options:\n");
	n = help_line(cliopt_common(CLIOPT_HELP), buf, len, n);
	n = help_line(cliopt_common(CLIOPT_VERSION), buf, len, n);
	return append(buf, len, n, "run '%s COMMAND --help' for the options of a command\n", prog);
}

int cliopt_dispatch(const char *prog, const struct cliopt_cmd *cmds, int argc, char **argv)
{
	char list[256], usage[2048];
	const char *a = argc > 1 ? argv[1] : NULL;
	int i;

	prog_name = prog;
	log_set_prog(prog);
	cmd_list(cmds, list, sizeof(list));
	if (!a) {
		log_err("no command (want %s; see '%s --help')", list, prog);
		return EXIT_USAGE;
	}
	if (!strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "help")) {
		cliopt_usage(prog, cmds, usage, sizeof(usage));
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
		version_print(stdout, prog);
		return EXIT_OK;
	}
	for (i = 0; cmds[i].name; i++)
		if (!strcmp(a, cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	log_err("unknown command '%s' (want %s; see '%s --help')", a, list, prog);
	return EXIT_USAGE;
}
