/* SPDX-License-Identifier: MIT */
/*
 * progress: the self-erasing status line of long runs (see progress.h). The text is made by pure functions
 * (progress_format*, unit-tested); drawing is one write(2) of "\r" + text + "\033[K" to stderr, so the line
 * never mixes with a half-written one of stdio (stderr is unbuffered).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "util/log.h"
#include "util/monotime.h"
#include "util/progress.h"

#define PROGRESS_TEXT 512
#define ERASE "\r\033[K"

struct progress {
	char what[32];
	char doing[160];
	uint64_t t0_ns, total_ns; /* total_ns 0: steps mode */
	uint64_t last_draw_ns;
	int shown; /* the line is on the screen */
	char unit[16];
	struct progress_steps st;
};

char *progress_fmt_time(char *buf, size_t len, uint64_t ns)
{
	uint64_t s = ns / 1000000000ULL;
	int n;

	if (!buf || !len)
		return buf;
	if (s >= 3600)
		n = snprintf(buf, len, "%llu:%02u:%02u", (unsigned long long)(s / 3600),
			     (unsigned)(s / 60 % 60), (unsigned)(s % 60));
	else
		n = snprintf(buf, len, "%02u:%02u", (unsigned)(s / 60), (unsigned)(s % 60));
	if (n < 0 || (size_t)n >= len)
		buf[0] = 0;
	return buf;
}

size_t progress_truncate(char *s, int cols)
{
	size_t i;
	int c = 0;

	if (!s)
		return 0;
	for (i = 0; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) == 0x80)
			continue; /* a continuation byte: same column */
		if (cols > 0 && c == cols) {
			s[i] = 0;
			return i;
		}
		c++;
	}
	return i;
}

/* Append src to buf (of len, holding *n bytes), control characters as '?'; stops at a full buffer. */
static void put_clean(char *buf, size_t len, size_t *n, const char *src)
{
	for (; src && *src && *n + 1 < len; src++) {
		unsigned char ch = (unsigned char)*src;

		buf[(*n)++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	buf[*n] = 0;
}

/* "what: " + body + " - doing", cleaned and cut; the common tail of both formats. */
static size_t finish_line(char *buf, size_t len, const char *what, const char *body,
			  const char *doing, int cols)
{
	size_t n = 0;

	buf[0] = 0;
	if (what && *what) {
		put_clean(buf, len, &n, what);
		put_clean(buf, len, &n, ": ");
	}
	put_clean(buf, len, &n, body);
	if (doing && *doing) {
		put_clean(buf, len, &n, " - ");
		put_clean(buf, len, &n, doing);
	}
	if (cols == 1)
		buf[0] = 0; /* no column to spare */
	return progress_truncate(buf, cols > 1 ? cols - 1 : 0);
}

/* ns rounded up to whole seconds (saturating). */
static uint64_t ceil_s(uint64_t ns)
{
	uint64_t r = ns % 1000000000ULL;

	return !r || ns > UINT64_MAX - 1000000000ULL ? ns : ns - r + 1000000000ULL;
}

size_t progress_format(char *buf, size_t len, const char *what, uint64_t elapsed_ns,
		       uint64_t total_ns, const char *doing, int cols)
{
	char e[32], t[32], l[32], body[128];
	uint64_t left;

	if (!buf || !len)
		return 0;
	if (elapsed_ns > total_ns)
		elapsed_ns = total_ns;
	/* elapsed rounded down and left rounded up: they add up to a total of whole seconds */
	left = ceil_s(total_ns - elapsed_ns);
	snprintf(body, sizeof(body), "%s / %s, %s left",
		 progress_fmt_time(e, sizeof(e), elapsed_ns),
		 progress_fmt_time(t, sizeof(t), total_ns), progress_fmt_time(l, sizeof(l), left));
	return finish_line(buf, len, what, body, doing, cols);
}

size_t progress_format_steps(char *buf, size_t len, const char *what,
			     const struct progress_steps *st, uint64_t elapsed_ns,
			     const char *doing, int cols)
{
	char e[32], l[32], body[160];
	int n, done, cur, w;

	if (!buf || !len)
		return 0;
	n = st && st->n > 0 ? st->n : 1;
	done = st ? st->done : 0;
	done = done < 0 ? 0 : done > n ? n : done;
	cur = done < n ? done + 1 : n;
	w = snprintf(body, sizeof(body), "%s %d/%d (%d%%), %s elapsed",
		     st && st->unit ? st->unit : "step", cur, n, done * 100 / n,
		     progress_fmt_time(e, sizeof(e), elapsed_ns));
	if (done > 0 && w > 0 && (size_t)w < sizeof(body)) {
		uint64_t step = st->done_ns / (uint64_t)done;
		uint64_t need = step * (uint64_t)(n - done);
		uint64_t spent = elapsed_ns > st->done_ns ? elapsed_ns - st->done_ns : 0;
		uint64_t left = need > spent ? need - spent : 0;

		snprintf(body + w, sizeof(body) - (size_t)w, ", %s left",
			 progress_fmt_time(l, sizeof(l), left + 500000000ULL)); /* nearest s */
	}
	return finish_line(buf, len, what, body, doing, cols);
}

/* ---- drawing ---- */

static void put_all(const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(STDERR_FILENO, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the terminal went away: nothing to do about it */
		s += w;
		n -= (size_t)w;
	}
}

static int term_cols(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) || !ws.ws_col)
		return PROGRESS_COLS_DEFAULT;
	return ws.ws_col;
}

static void draw(struct progress *p, uint64_t now)
{
	char line[PROGRESS_TEXT + 8];
	uint64_t el = now > p->t0_ns ? now - p->t0_ns : 0;
	size_t n;

	line[0] = '\r';
	if (p->total_ns)
		n = progress_format(line + 1, PROGRESS_TEXT, p->what, el, p->total_ns, p->doing,
				    term_cols());
	else
		n = progress_format_steps(line + 1, PROGRESS_TEXT, p->what, &p->st, el, p->doing,
					  term_cols());
	memcpy(line + 1 + n, "\033[K", 3);
	put_all(line, n + 4);
	p->shown = 1;
	p->last_draw_ns = now;
}

/* The log sink: erase the line so the message starts at column 0; it is printed as usual. */
static bool progress_sink(void *ctx, const char *line)
{
	(void)line;
	progress_clear(ctx);
	return false;
}

static bool progress_wanted(bool quiet)
{
	const char *term = getenv("TERM");

	return !quiet && isatty(STDERR_FILENO) && !(term && !strcmp(term, "dumb"));
}

static struct progress *progress_new(const char *what)
{
	struct progress *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL; /* no line: the run goes on without it */
	snprintf(p->what, sizeof(p->what), "%s", what ? what : "");
	p->t0_ns = now_ns();
	log_set_sink(progress_sink, p);
	return p;
}

struct progress *progress_start(const char *what, uint64_t total_ns, bool quiet)
{
	struct progress *p;

	if (total_ns < PROGRESS_MIN_NS || !progress_wanted(quiet))
		return NULL;
	p = progress_new(what);
	if (p)
		p->total_ns = total_ns;
	return p;
}

struct progress *progress_start_steps(const char *what, const char *unit, int nsteps, bool quiet)
{
	struct progress *p;

	if (nsteps <= 0 || !progress_wanted(quiet))
		return NULL;
	p = progress_new(what);
	if (!p)
		return NULL;
	snprintf(p->unit, sizeof(p->unit), "%s", unit ? unit : "step");
	p->st.unit = p->unit;
	p->st.n = nsteps;
	return p;
}

/* Steps mode, like git's delayed progress: nothing in the first PROGRESS_STEPS_DELAY_NS. */
static bool too_early(const struct progress *p, uint64_t now)
{
	return !p->total_ns && now < p->t0_ns + PROGRESS_STEPS_DELAY_NS;
}

void progress_step(struct progress *p, int done, uint64_t now_ns)
{
	if (!p || p->total_ns)
		return;
	p->st.done = done;
	p->st.done_ns = now_ns > p->t0_ns ? now_ns - p->t0_ns : 0;
	if (!too_early(p, now_ns))
		draw(p, now_ns);
}

void progress_update(struct progress *p, uint64_t now_ns, const char *doing)
{
	if (!p)
		return;
	if (doing)
		snprintf(p->doing, sizeof(p->doing), "%s", doing);
	if (too_early(p, now_ns) || (p->shown && now_ns < p->last_draw_ns + PROGRESS_REDRAW_NS))
		return;
	draw(p, now_ns);
}

void progress_clear(struct progress *p)
{
	if (!p || !p->shown)
		return;
	put_all(ERASE, sizeof(ERASE) - 1);
	p->shown = 0;
}

void progress_end(struct progress *p)
{
	if (!p)
		return;
	progress_clear(p);
	log_set_sink(NULL, NULL);
	free(p);
}
