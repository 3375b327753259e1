/* SPDX-License-Identifier: MIT */
/*
 * view_screen: `vnoise-guest top` on a terminal, a screen like vnoise-host top's: a header that stays, one row
 * per CPU (noise% of the last period, its largest gap, its top source and its share of the noise, a sparkline
 * of noise% over the last periods), a status line, keys (h/? help, q quit, s/r sort, j/k or arrows select,
 * d/Enter detail, p pause), the terminal restored on every exit path. At the end, the run's text summary on the
 * normal screen, as top --batch prints it.
 *
 * vnoise-guest is static and has no curses: the screen is drawn with the ECMA-48 sequences every terminal
 * emulator knows (alternate screen, cursor home, erase to end of line, reverse video), from termios in
 * non-canonical mode (ISIG stays on: ^C and ^Z reach the engine and the shell). One screen per process.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "attrib/classes.h"
#include "util/log.h"
#include "util/termcell.h"
#include "util/termsafe.h"
#include "views/view_text.h"
#include "views/view_top.h"
#include "views/view_worst.h"

#define SCR_HISTORY 60 /* periods in a row's sparkline */
#define SCR_KEPT 8 /* warnings and errors kept while the screen is on, printed after it */
#define SCR_LINE 512 /* bytes of a line (cells of UTF-8 text) */

enum scr_sort { SORT_CPU, SORT_NOISE, SORT_MAX, SORT_N };
static const char *const sort_name[SORT_N] = { "CPU", "noise%", "max(us)" };

struct scr_cpu {
	struct view_row row; /* the last period */
	struct merge_source *src; /* its sources, largest first */
	size_t nsrc;
	float hist[SCR_HISTORY]; /* noise% per period, oldest first; < 0: no data */
	struct view_worst_gap *pw; /* the last period's worst gap (NULL: none or no memory) */
};

static struct screen {
	int on, have_tio, utf8, rows, cols;
	struct termios tio; /* as found */
	const struct view *v;
	struct scr_cpu *cpu; /* [v->ncpus] */
	int *order; /* CPU indexes as shown */
	int periods, sort, rev, sel, detail, help, paused, sorted_once;
	uint64_t shown_ns,
	    period_len_ns; /* duration at the last period drawn; that period's length */
	char status[256];
	char kept[SCR_KEPT][256];
	int nkept;
} S;

static volatile sig_atomic_t g_winch, g_cont;
static const char enter_seq[] = "\033[?1049h\033[?25l\033[H\033[2J";
static const char leave_seq[] = "\033[0m\033[?25h\033[?1049l";

/* Async-signal-safe: write(), tcsetattr(), sigaction(), raise(). */
static void restore_raw(void)
{
	if (write(STDOUT_FILENO, leave_seq, sizeof(leave_seq) - 1) < 0) {
		/* nothing else to try */
	}
	if (S.have_tio)
		tcsetattr(STDIN_FILENO, TCSANOW, &S.tio);
}

static void on_fatal(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	if (S.on) {
		S.on = 0;
		restore_raw();
	}
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig); /* pending until the handler returns: then the default action */
}

/* ^Z: the shell gets its terminal back as it was; fg brings the screen back (redrawn). */
static void on_tstp(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, me = { .sa_handler = on_tstp };
	sigset_t set;

	(void)sig;
	if (S.on)
		restore_raw();
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGTSTP, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGTSTP);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(SIGTSTP); /* stops here until SIGCONT */
	sigemptyset(&me.sa_mask);
	sigaction(SIGTSTP, &me, NULL);
	g_cont = 1;
}

static void on_winch(int sig)
{
	(void)sig;
	g_winch = 1;
}

static void raw_on(void)
{
	struct termios t = S.tio;

	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (S.have_tio)
		tcsetattr(STDIN_FILENO, TCSANOW, &t);
	if (write(STDOUT_FILENO, enter_seq, sizeof(enter_seq) - 1) < 0) {
		/* the next frame tries again */
	}
}

static void size_get(void)
{
	struct winsize ws;

	S.rows = 24;
	S.cols = 80;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		S.rows = ws.ws_row;
		S.cols = ws.ws_col > SCR_LINE / 4 ? SCR_LINE / 4 : ws.ws_col;
	}
}

/* Warnings and errors are kept for after the screen; every line shows in the status line. */
static bool log_sink(void *ctx, const char *line)
{
	(void)ctx;
	snprintf(S.status, sizeof(S.status), "%s", line);
	if (strstr(line, "error: ") || strstr(line, "warning: ")) {
		if (S.nkept == SCR_KEPT) {
			memmove(S.kept[0], S.kept[1], sizeof(S.kept[0]) * (SCR_KEPT - 1));
			S.nkept--;
		}
		snprintf(S.kept[S.nkept++], sizeof(S.kept[0]), "%s", line);
	}
	return true;
}

static void screen_leave(void)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	if (!S.on)
		return;
	S.on = 0;
	log_set_sink(NULL, NULL);
	restore_raw();
	sigemptyset(&dfl.sa_mask);
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		sigaction(fatal[i], &dfl, NULL);
	sigaction(SIGTSTP, &dfl, NULL);
	sigaction(SIGWINCH, &dfl, NULL);
	for (int i = 0; i < S.nkept; i++)
		fprintf(stderr, "%s\n", S.kept[i]);
	S.nkept = 0;
}

static void at_exit(void)
{
	screen_leave();
}

/* ---- one frame ---- */

struct frame {
	char *buf;
	size_t len, cap;
	int y; /* lines drawn */
};

static void put_raw(struct frame *fr, const char *s, size_t n)
{
	if (fr->len + n + 1 > fr->cap) {
		size_t cap = (fr->cap ? fr->cap * 2 : 8192) + n;
		char *nb = realloc(fr->buf, cap);

		if (!nb)
			return;
		fr->buf = nb;
		fr->cap = cap;
	}
	memcpy(fr->buf + fr->len, s, n);
	fr->len += n;
}

/* A line of the screen: cut to its width, the rest of the line erased; rev: in reverse video. */
static void line(struct frame *fr, int rev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void line(struct frame *fr, int rev, const char *fmt, ...)
{
	char text[SCR_LINE];
	va_list ap;
	size_t n;

	if (fr->y >= S.rows)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	n = termcell_off(text, S.cols);
	if (rev)
		put_raw(fr, "\033[7m", 4);
	put_raw(fr, text, n);
	if (rev) { /* the bar runs the whole width */
		int pad = S.cols - termcell_count(text);

		for (; pad > 0; pad--)
			put_raw(fr, " ", 1);
		put_raw(fr, "\033[0m", 4);
	}
	put_raw(fr, "\033[K", 3);
	fr->y++;
	if (fr->y < S.rows)
		put_raw(fr, "\r\n", 2);
}

static double pct_of(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)(int64_t)part / (double)whole : 0.0;
}

/* The name of source s, safe for the terminal (a guest user names its threads). */
static const char *src_name(const struct merge_source *s, char *out, size_t len)
{
	char raw[96];

	merge_source_name(s, S.v->irq_name, S.v->irq_ctx, raw, sizeof(raw));
	termsafe(out, len, raw, sizeof(raw));
	if (view_is_self(S.v, s) && strlen(out) + 9 < len)
		strcat(out, " (vnoise)");
	return out;
}

static int cmp_order(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b, c = 0;
	const struct view_row *rx = &S.cpu[x].row, *ry = &S.cpu[y].row;
	double px = pct_of(rx->noise_ns, rx->runtime_ns), py = pct_of(ry->noise_ns, ry->runtime_ns);

	if (S.sort == SORT_NOISE)
		c = px < py ? 1 : px > py ? -1 : 0;
	else if (S.sort == SORT_MAX)
		c = rx->max_single_ns < ry->max_single_ns   ? 1
		    : rx->max_single_ns > ry->max_single_ns ? -1
							    : 0;
	if (!c)
		c = S.v->cpus[x] - S.v->cpus[y];
	else if (S.rev)
		c = -c;
	if (S.sort == SORT_CPU && S.rev)
		c = -c;
	return c;
}

static void sort_rows(void)
{
	int sel_cpu = S.order[S.sel];

	for (int i = 0; i < S.v->ncpus; i++)
		S.order[i] = i;
	qsort(S.order, (size_t)S.v->ncpus, sizeof(*S.order), cmp_order);
	for (int i = 0; i < S.v->ncpus; i++) /* the selection follows its CPU */
		if (S.order[i] == sel_cpu)
			S.sel = i;
}

/* The sort key's mark: ▼ from the largest (▲ for CPU, which runs from the smallest). */
static const char *sort_mark(void)
{
	int down = (S.sort != SORT_CPU) != S.rev;

	return S.utf8 ? (down ? "\u25bc" : "\u25b2") : (down ? "v" : "^");
}

static void header(struct frame *fr)
{
	const struct view *v = S.v;
	time_t now = time(NULL);
	struct tm tm;
	char clock[16] = "", lost[64] = "";
	uint64_t up = v->duration_ns / 1000000000ULL;

	if (localtime_r(&now, &tm))
		strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	line(fr, 0, "vnoise-guest top - %d CPU%s  period %.3g s  up %u:%02u:%02u  %s", v->ncpus,
	     v->ncpus == 1 ? "" : "s", (double)S.period_len_ns / 1e9, (unsigned)(up / 3600),
	     (unsigned)(up / 60 % 60), (unsigned)(up % 60), clock);
	if (v->bpf_dropped || v->sampler_dropped)
		snprintf(lost, sizeof(lost), " | LOST %llu events, %llu samples",
			 (unsigned long long)v->bpf_dropped,
			 (unsigned long long)v->sampler_dropped);
	line(fr, 0, "helper %s | threshold %.1f us | host log %s | own cost %.1f ns/loop%s",
	     v->helper, v->threshold_ns / 1e3, v->dtl ? v->dtl : "absent", view_loop_ns(v), lost);
	line(fr, 0, "sort %s%s  %s%s", sort_name[S.sort], sort_mark(), S.paused ? "PAUSED  " : "",
	     S.status[0] ? S.status : "h help, q quit");
}

/* The row columns: CPU, noise%, max(us), top source (its share of the noise), history. */
static void widths(int *src_w, int *hist_w)
{
	int rest = S.cols - 24; /* " CPU  noise%   max(us)  " */

	*hist_w = rest >= 56   ? (rest - 36 > SCR_HISTORY ? SCR_HISTORY : rest - 36)
		  : rest >= 40 ? 20
			       : 0;
	*src_w = rest - *hist_w - (*hist_w ? 2 : 0);
	if (*src_w < 8)
		*src_w = 8;
}

static void cpu_rows(struct frame *fr, int lines)
{
	int src_w, hist_w, first = 0, n = S.v->ncpus;
	char name[128], cut[512], spark[SCR_HISTORY * 3 + 1], top[160];

	widths(&src_w, &hist_w);
	line(fr, 1, "%4s %7s %9s  %-*s%s%s", "CPU", "noise%", "max(us)", src_w,
	     "top source (of noise)", hist_w ? "  " : "", hist_w ? "noise% history" : "");
	if (lines < 1)
		return;
	if (S.sel >= lines) /* the window holds the selection */
		first = S.sel - lines + 1;
	for (int k = first; k < n && k < first + lines; k++) {
		const struct scr_cpu *c = &S.cpu[S.order[k]];
		const struct view_row *r = &c->row;

		if (!S.periods) {
			line(fr, k == S.sel && S.detail, "%4d %7s", S.v->cpus[S.order[k]], "-");
			continue;
		}
		if (c->nsrc)
			snprintf(top, sizeof(top), "%s %.0f%%",
				 src_name(&c->src[0], name, sizeof(name)),
				 pct_of(c->src[0].total_ns, r->noise_ns));
		else
			snprintf(top, sizeof(top), "%s", r->noise_ns ? "(no source traced)" : "-");
		termcell_fit(top, src_w, S.utf8, cut, sizeof(cut));
		termcell_spark(c->hist, SCR_HISTORY, hist_w, S.utf8, spark, sizeof(spark));
		line(fr, k == S.sel && S.detail, "%4d %7.3f %9.1f  %-*s%s%s", S.v->cpus[S.order[k]],
		     pct_of(r->noise_ns, r->runtime_ns), r->max_single_ns / 1e3,
		     src_w + (int)(strlen(cut) - (size_t)termcell_count(cut)), cut,
		     hist_w ? "  " : "", spark);
	}
}

/* A worst gap in one line under label: its length, when, its largest parts (cut at the width). */
static void worst_line(struct frame *fr, const char *label, const struct view_worst_gap *g)
{
	char buf[SCR_LINE], at[32], cut[SCR_LINE * 3];
	size_t off, k;

	if (!g || !g->duration_ns) {
		line(fr, 0, " %s: none", label);
		return;
	}
	off = (size_t)snprintf(buf, sizeof(buf), " %s %.1f us at %s:", label, g->duration_ns / 1e3,
			       view_since_start(at, sizeof(at), S.v, g->start_ns));
	for (k = 0; k < g->nparts && off < sizeof(buf) - 1; k++) {
		char safe[TERMSAFE_LEN(VIEW_WORST_NAME)];

		off += (size_t)snprintf(
		    buf + off, sizeof(buf) - off, "%s %s %.0f%%", k ? "," : "",
		    termsafe(safe, sizeof(safe), g->parts[k].source, VIEW_WORST_NAME),
		    100.0 * (double)g->parts[k].ns / (double)g->duration_ns);
	}
	if (termcell_count(buf) > S.cols) /* cut at its end: the largest parts come first */
		snprintf(cut, sizeof(cut), "%.*s%s", (int)termcell_off(buf, S.cols - 1), buf,
			 S.utf8 ? "\u2026" : "~");
	else
		snprintf(cut, sizeof(cut), "%s", buf);
	line(fr, 0, "%s", cut);
}

/* The run's worst gap of CPU index i so far. */
static void run_worst_line(struct frame *fr, int i)
{
	struct view_worst_gap *g = malloc(sizeof(*g));

	if (g && !view_worst(S.v, i, g))
		g->duration_ns = 0;
	worst_line(fr, "run's worst gap", g);
	free(g);
}

/* The selected CPU's last period: its totals, its parts (they add up to its noise), its sources. */
static void detail(struct frame *fr, int lines)
{
	int i = S.order[S.sel], p;
	const struct scr_cpu *c = &S.cpu[i];
	const struct view_row *r = &c->row;
	char parts[SCR_LINE] = "", name[128];
	size_t off = 0;

	line(fr, 1,
	     "CPU %d, last period: noise %.1f us of %.3f s (%.3f%%), %llu samples, max %.1f us",
	     S.v->cpus[i], r->noise_ns / 1e3, r->runtime_ns / 1e9,
	     pct_of(r->noise_ns, r->runtime_ns), (unsigned long long)r->samples,
	     r->max_single_ns / 1e3);
	for (p = 0; p < VIEW_NPARTS && off < sizeof(parts) - 48; p++) {
		int64_t ns = (int64_t)view_part_ns(r, p);

		if (ns > 0)
			off +=
			    (size_t)snprintf(parts + off, sizeof(parts) - off, "%s %s %.1f us",
					     off ? "," : "", view_part_label(p), (double)ns / 1e3);
	}
	line(fr, 0, " parts:%s", off ? parts : " none");
	worst_line(fr, "period's worst gap", c->pw);
	run_worst_line(fr, i);
	if (lines < 6)
		return;
	line(fr, 0, "  %8s %11s %7s %10s  %s", "COUNT", "TOTAL(us)", "%NOISE", "RUNMAX(us)",
	     "SOURCE (RUNMAX: the run's largest event)");
	for (size_t k = 0; k < c->nsrc && (int)k < lines - 5; k++)
		line(fr, 0, "  %8llu %11.1f %7.2f %10.1f  %s", (unsigned long long)c->src[k].count,
		     c->src[k].total_ns / 1e3, pct_of(c->src[k].total_ns, r->noise_ns),
		     c->src[k].max_ns / 1e3, src_name(&c->src[k], name, sizeof(name)));
	if (!c->nsrc)
		line(fr, 0, "  (no source in this period)");
}

static void help_screen(struct frame *fr)
{
	static const char *const keys[] = {
		"h ?       this help (any key leaves it)",
		"q         quit: leave the screen, print the run's summary",
		"s         sort by the next column (CPU, noise%, max(us))",
		"r         reverse the order",
		"j k       select the next / previous CPU (also the arrow keys)",
		"d Enter   detail of the selected CPU: parts and sources (again: leave it)",
		"p         pause the screen (measuring goes on)",
		"Ctrl-C    stop, as q",
	};

	line(fr, 1, "vnoise-guest top: keys");
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		line(fr, 0, "  %s", keys[k]);
	line(fr, 0, "%s", "");
	line(fr, 0,
	     "noise%%: the CPU's time in gaps of at least the threshold in the last period;");
	line(fr, 0,
	     "max(us): its longest gap; top source: the largest net time inside them and its");
	line(fr, 0,
	     "share of the noise; parts: the split of the noise (guest, hypervisor, residual).");
}

static void draw(void)
{
	struct frame fr = { 0 };
	int body;

	if (!S.on)
		return;
	put_raw(&fr, "\033[H", 3);
	if (S.help) {
		help_screen(&fr);
	} else {
		header(&fr);
		body = S.rows - fr.y - 1; /* below the column heads */
		if (S.detail) {
			int want = S.v->ncpus < body / 2 ? S.v->ncpus : body / 2;

			cpu_rows(&fr, want < 1 ? 1 : want);
			detail(&fr, S.rows - fr.y);
		} else {
			cpu_rows(&fr, body);
			if (!S.periods)
				line(&fr, 0, "waiting for the first period...");
		}
	}
	put_raw(&fr, "\033[J", 3);
	if (fr.buf && write(STDOUT_FILENO, fr.buf, fr.len) < 0) {
		/* a terminal gone: the run ends on SIGHUP */
	}
	free(fr.buf);
}

/* ---- the ops ---- */

static void screen_start(const struct view *v, uint64_t planned_ns)
{
	static int atexit_done;
	struct sigaction sa = { .sa_handler = on_fatal, .sa_flags = SA_RESETHAND };
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	const char *lang = getenv("LC_ALL");

	(void)planned_ns;
	S.v = v;
	S.cpu = calloc((size_t)v->ncpus, sizeof(*S.cpu));
	S.order = calloc((size_t)v->ncpus, sizeof(*S.order));
	if (!S.cpu || !S.order) {
		log_err("out of memory for the screen");
		return;
	}
	for (int i = 0; i < v->ncpus; i++) {
		S.order[i] = i;
		for (int k = 0; k < SCR_HISTORY; k++)
			S.cpu[i].hist[k] = -1.0f;
	}
	S.sort = SORT_NOISE;
	S.period_len_ns = v->period_ns;
	if (!lang || !*lang)
		lang = getenv("LC_CTYPE");
	if (!lang || !*lang)
		lang = getenv("LANG");
	S.utf8 = lang && (strstr(lang, "UTF-8") || strstr(lang, "utf8") || strstr(lang, "UTF8"));
	S.have_tio = tcgetattr(STDIN_FILENO, &S.tio) == 0;
	size_get();
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		sigaction(fatal[i], &sa, NULL);
	sa = (struct sigaction){ .sa_handler = on_tstp };
	sigaction(SIGTSTP, &sa, NULL);
	sa = (struct sigaction){ .sa_handler = on_winch, .sa_flags = SA_RESTART };
	sigaction(SIGWINCH, &sa, NULL);
	if (!atexit_done)
		atexit_done = !atexit(at_exit);
	S.on = 1;
	raw_on();
	log_set_sink(log_sink, NULL);
	draw();
}

static void screen_tick(FILE *f, const struct view *v)
{
	struct view_row *rows = calloc((size_t)v->ncpus + 1, sizeof(*rows));

	(void)f;
	if (!rows || !S.cpu || !v->period) {
		free(rows);
		return;
	}
	S.period_len_ns = v->duration_ns - S.shown_ns;
	S.shown_ns = v->duration_ns;
	for (int i = 0; i < v->ncpus && !S.paused;
	     i++) { /* before view_top_period starts the next */
		struct scr_cpu *c = &S.cpu[i];

		if (!c->pw)
			c->pw = malloc(sizeof(*c->pw));
		if (c->pw && !view_worst_period(v, i, c->pw))
			c->pw->duration_ns = 0;
	}
	view_top_period(v, rows);
	for (int i = 0; i < v->ncpus; i++) {
		struct scr_cpu *c = &S.cpu[i];
		struct merge_source *src = NULL;
		size_t n = view_top_period_sources(v, i, &src);

		if (S.paused) { /* the snapshot moved; the screen keeps what it shows */
			free(src);
			continue;
		}
		free(c->src);
		c->src = src;
		c->nsrc = n;
		c->row = rows[i];
		memmove(c->hist, c->hist + 1, sizeof(c->hist[0]) * (SCR_HISTORY - 1));
		c->hist[SCR_HISTORY - 1] = rows[i].runtime_ns
					       ? (float)pct_of(rows[i].noise_ns, rows[i].runtime_ns)
					       : -1.0f;
	}
	free(rows);
	if (S.paused)
		return;
	S.periods++;
	sort_rows();
	draw();
}

/* Keys typed since the last read, one at a time (the arrow keys' escape sequences as k and j, Enter as d);
 * -1 when none is left. A read may bring several. */
static int key_read(void)
{
	static unsigned char b[64];
	static ssize_t n, at;
	unsigned char c;

	if (at >= n) {
		n = read(STDIN_FILENO, b, sizeof(b));
		at = 0;
		if (n <= 0) {
			n = 0;
			return -1;
		}
	}
	c = b[at++];
	if (c == 033 && at < n && (b[at] == '[' || b[at] == 'O')) {
		unsigned char k = at + 1 < n ? b[at + 1] : 0;

		at += at + 1 < n ? 2 : 1;
		return k == 'A' ? 'k' : k == 'B' ? 'j' : 0;
	}
	if (c == '\r' || c == '\n')
		return 'd';
	return c;
}

/* The keys between periods; 1: quit. */
static int screen_input(FILE *f, const struct view *v)
{
	int key, redraw = 0;

	(void)f;
	if (!S.on || !S.cpu)
		return 0;
	if (g_cont) {
		g_cont = 0;
		raw_on();
		redraw = 1;
	}
	if (g_winch) {
		g_winch = 0;
		size_get();
		redraw = 1;
	}
	while ((key = key_read()) >= 0) {
		redraw = 1;
		if (S.help) {
			S.help = 0; /* any key leaves the help, q too */
			continue;
		}
		S.status[0] = 0;
		switch (key) {
		case 'q':
		case 'Q':
			return 1;
		case 'h':
		case '?':
			S.help = 1;
			break;
		case 's':
			S.sort = (S.sort + 1) % SORT_N;
			S.rev = 0;
			sort_rows();
			break;
		case 'r':
			S.rev = !S.rev;
			sort_rows();
			break;
		case 'j':
			if (S.sel < v->ncpus - 1)
				S.sel++;
			break;
		case 'k':
			if (S.sel > 0)
				S.sel--;
			break;
		case 'd':
			S.detail = !S.detail;
			break;
		case 'p':
			S.paused = !S.paused;
			break;
		default:
			snprintf(S.status, sizeof(S.status), "unknown key: h for help");
		}
	}
	if (redraw)
		draw();
	return 0;
}

static void screen_end(FILE *f, const struct view *v)
{
	screen_leave();
	for (int i = 0; S.cpu && i < v->ncpus; i++) {
		free(S.cpu[i].src);
		free(S.cpu[i].pw);
	}
	free(S.cpu);
	free(S.order);
	S.cpu = NULL;
	S.order = NULL;
	view_text_end(f, v);
}

const struct view_ops view_screen_ops = {
	.start = screen_start,
	.tick = screen_tick,
	.input = screen_input,
	.end = screen_end,
};
