/* SPDX-License-Identifier: MIT */
/*
 * hosttui: the interactive screen of `vnoise-host top` (see hosttui.h): ncurses over the rows of
 * hosttui_model. The screen is one object; a static pointer to it lets the atexit hook give the terminal back
 * (endwin) on paths that never reach hosttui_close. A fatal signal (SIGSEGV, SIGBUS, ...) is another matter:
 * curses' state may be what broke, and endwin() is not async-signal-safe. Its handler only write()s an
 * escape sequence made at open (leave the alternate screen and keypad mode, show the cursor, reset the
 * attributes) and tcsetattr()s the terminal settings saved before curses changed them, then lets the signal
 * kill the process with its default action (the core dump and exit status are the real ones).
 */
#include <curses.h>
#include <errno.h>
#include <inttypes.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "util/log.h"
#include "util/monotime.h"
#include "util/termcell.h"
#include "engine/live.h"
#include "views/hosttui.h"
#include "views/hosttui_model.h"

#define LOG_KEEP 16 /* warnings and errors printed again when the screen closes */
#define LOG_LEN 256
#define DETAIL_LINES 7 /* title, list heads, HOSTTUI_DETAIL_N entries */
#define DETAIL_SPLIT 2 /* the out-time split and steal lines, between the title and the lists */

enum { PAIR_BAR = 1, PAIR_LOW, PAIR_MID, PAIR_HIGH, PAIR_STATUS, PAIR_DOM };

/* The header's figures of one period (frozen with the rows by a pause). */
struct tui_head {
	double host_cpu; /* % of all CPUs, /proc/stat */
	long ncpus;
	double self_pct, bpf_pct; /* % of one CPU over the period */
	uint64_t drops, events_dropped; /* since the start */
	uint64_t span_ns; /* the period shown */
	uint64_t end_ns;
	bool known; /* host CPU and vnoise's cost measured (from the second period on) */
};

struct hosttui {
	const struct host_params *p;
	SCREEN *scr;
	struct hosttui_model live, frozen;
	struct hosttui_view view;
	struct tui_head head, frozen_head;
	bool paused, help, utf8, colour, filtering;
	uint64_t period_ns, start_ns;
	uint64_t cpu_busy, cpu_total, last_self_ns, last_bpf_ns;
	bool have_cpu, have_self;
	/* the selection, by key (it survives sorting and filtering) */
	char sel_uuid[40];
	bool sel_is_vcpu;
	uint32_t sel_vcpu;
	size_t scroll;
	char status[LOG_LEN]; /* the last log line or key message */
	char kept[LOG_KEEP][LOG_LEN];
	int nkept;
	struct sigaction old_fatal[5];
};

static const int fatal_sigs[5] = { SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL };
static struct hosttui *g_tui; /* the open screen, for atexit and fatal signals */
static volatile sig_atomic_t g_on; /* curses owns the terminal */
/* for the fatal-signal handler, made before it is installed: the terminal as it was, the way back */
static struct termios g_tio;
static bool g_have_tio;
static char g_restore[128];
static size_t g_restore_len;

bool hosttui_wanted(const struct host_params *p)
{
	return p->cmd == HCMD_TOP && !p->batch && !p->json && isatty(STDIN_FILENO) &&
	       isatty(STDOUT_FILENO);
}

/* ---- terminal restore on every path ---- */

/* Async-signal-safe only: write(), tcsetattr(), sigaction(), raise(). */
static void on_fatal(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	if (g_on) {
		g_on = 0;
		if (write(STDOUT_FILENO, g_restore, g_restore_len) < 0) {
			/* nothing else to try */
		}
		if (g_have_tio)
			tcsetattr(STDOUT_FILENO, TCSANOW, &g_tio);
	}
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	/* pending until the handler returns: then the default action, a core where allowed */
	raise(sig);
}

/* The terminal's own strings (no padding), else the xterm ones every terminal emulator knows. */
static void restore_init(void)
{
	static const char *const caps[] = { "rmcup", "rmkx", "cnorm", "sgr0" };
	static const char fallback[] = "\033[?1049l\033[?1l\033>\033[?25h\033[0m";
	size_t len = 0;

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		const char *s = tigetstr(caps[i]);
		size_t n;

		if (!s || s == (char *)-1 || strstr(s, "$<")) {
			len = 0;
			break;
		}
		n = strlen(s);
		if (len + n > sizeof(g_restore) - 2) {
			len = 0;
			break;
		}
		memcpy(g_restore + len, s, n);
		len += n;
	}
	if (!len) {
		memcpy(g_restore, fallback, sizeof(fallback) - 1);
		len = sizeof(fallback) - 1;
	}
	memcpy(g_restore + len, "\r\n", 2); /* the shell's prompt starts on a line of its own */
	g_restore_len = len + 2;
}

static void at_exit(void)
{
	hosttui_close(g_tui);
}

static bool log_sink(void *ctx, const char *line)
{
	struct hosttui *t = ctx;

	snprintf(t->status, sizeof(t->status), "%s", line);
	if (strstr(line, "error: ") || strstr(line, "warning: ")) {
		if (t->nkept == LOG_KEEP) {
			memmove(t->kept[0], t->kept[1], sizeof(t->kept[0]) * (LOG_KEEP - 1));
			t->nkept--;
		}
		snprintf(t->kept[t->nkept++], LOG_LEN, "%s", line);
	}
	return true;
}

static void colours_init(struct hosttui *t)
{
	t->colour = has_colors();
	if (!t->colour)
		return;
	start_color();
	use_default_colors();
	init_pair(PAIR_BAR, COLOR_BLACK, COLOR_CYAN);
	init_pair(PAIR_LOW, COLOR_GREEN, -1);
	init_pair(PAIR_MID, COLOR_YELLOW, -1);
	init_pair(PAIR_HIGH, COLOR_RED, -1);
	init_pair(PAIR_STATUS, COLOR_WHITE, COLOR_BLUE);
	init_pair(PAIR_DOM, COLOR_CYAN, -1);
}

struct hosttui *hosttui_open(const struct host_params *p, char *err, size_t errlen)
{
	static bool atexit_done;
	const char *term = getenv("TERM");
	struct sigaction sa = { .sa_handler = on_fatal, .sa_flags = SA_RESETHAND };
	struct hosttui *t;

	if (!term || !*term || !strcmp(term, "dumb")) {
		log_reason(err, errlen, "TERM is %s", term && *term ? term : "not set");
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		log_reason(err, errlen, "out of memory");
		return NULL;
	}
	t->p = p;
	t->period_ns = p->period_ns;
	t->start_ns = now_ns();
	t->view.sort = HOSTTUI_COL_PREEMPT;
	t->view.guest = p->guest;
	setlocale(LC_ALL, "");
	setlocale(LC_NUMERIC,
		  "C"); /* only the characters: numbers stay as the line output prints them */
	t->utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	g_have_tio =
	    tcgetattr(STDOUT_FILENO, &g_tio) == 0; /* curses works on the output's terminal */
	t->scr = newterm(NULL, stdout, stdin);
	if (!t->scr) {
		log_reason(err, errlen, "terminal '%s' not usable by curses", term);
		free(t);
		return NULL;
	}
	restore_init();
	g_tui = t;
	g_on = 1;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 5; i++)
		sigaction(fatal_sigs[i], &sa, &t->old_fatal[i]);
	if (!atexit_done)
		atexit_done = !atexit(at_exit);
	cbreak(); /* keys at once; ^C still sends SIGINT, which the engine handles */
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	colours_init(t);
	log_set_sink(log_sink, t);
	snprintf(t->status, sizeof(t->status), "waiting for the first period (%.3g s)",
		 (double)t->period_ns / 1e9);
	erase();
	mvaddstr(0, 0, "vnoise-host top: waiting for the first period...");
	refresh();
	return t;
}

void hosttui_close(struct hosttui *t)
{
	if (!t || t != g_tui)
		return; /* NULL, or closed already */
	log_set_sink(NULL, NULL);
	if (g_on) {
		g_on = 0;
		endwin();
	}
	for (int i = 0; i < 5; i++)
		sigaction(fatal_sigs[i], &t->old_fatal[i], NULL);
	delscreen(t->scr);
	g_tui = NULL;
	fflush(stdout);
	for (int i = 0; i < t->nkept; i++)
		fprintf(stderr, "%s\n", t->kept[i]);
	hosttui_model_free(&t->live);
	hosttui_model_free(&t->frozen);
	free(t);
}

uint64_t hosttui_period_ns(const struct hosttui *t)
{
	return t ? t->period_ns : 0;
}

/* ---- drawing ---- */

static const struct hosttui_model *shown(const struct hosttui *t)
{
	return t->paused ? &t->frozen : &t->live;
}

/* At most w cells of UTF-8 text s at (y, x), never past the screen's right edge (no wrapping). */
static void put(int y, int x, int w, const char *s)
{
	int cells = 0, max = COLS - x < w ? COLS - x : w;
	size_t b = 0;

	if (max <= 0 || x < 0)
		return;
	while (s[b]) {
		size_t l = 1;

		while ((s[b + l] & 0xc0) == 0x80) /* continuation bytes: the same cell */
			l++;
		if (cells + 1 > max)
			break;
		cells++;
		b += l;
	}
	if (b)
		mvaddnstr(y, x, s, (int)b);
}

/* Text of width w, right-aligned. */
static void put_right(int y, int x, int w, const char *s)
{
	int n = (int)strlen(s);

	if (n > w)
		n = w;
	put(y, x + w - n, n, s);
}

static attr_t level_attr(const struct hosttui *t, double pct)
{
	if (!t->colour)
		return pct >= 10.0 ? A_BOLD : 0;
	if (pct >= 10.0)
		return COLOR_PAIR(PAIR_HIGH) | A_BOLD;
	if (pct >= 1.0)
		return COLOR_PAIR(PAIR_MID);
	return COLOR_PAIR(PAIR_LOW);
}

/* A period as the options write it: "1s", "250ms". */
static const char *period_text(uint64_t ns, char *buf, size_t len)
{
	if (ns % 1000000000ULL == 0)
		snprintf(buf, len, "%llus",
			 (unsigned long long)(ns / 1000000000ULL % 100000000ULL));
	else if (ns % 1000000ULL == 0 && ns < 1000000000ULL)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / 1000000ULL));
	else
		hosttui_fmt_ns(ns, buf, len);
	return buf;
}

static void draw_head(struct hosttui *t, int w)
{
	const struct tui_head *h = t->paused ? &t->frozen_head : &t->head;
	char line[512], p1[24], p2[16], p3[16];
	time_t now = time(NULL);
	struct tm tm;
	uint64_t up = (now_ns() - t->start_ns) / 1000000000ULL;

	localtime_r(&now, &tm);
	snprintf(line, sizeof(line),
		 "vnoise-host top - %s  period %s  up %" PRIu64 ":%02" PRIu64 ":%02" PRIu64
		 "  %02d:%02d:%02d",
		 t->p->uri ? t->p->uri : "qemu:///system",
		 period_text(t->period_ns, p1, sizeof(p1)), up / 3600, up / 60 % 60, up % 60,
		 tm.tm_hour, tm.tm_min, tm.tm_sec);
	attron(A_BOLD);
	put(0, 0, w, line);
	attroff(A_BOLD);
	if (t->paused && w > 10) {
		attron(A_REVERSE | A_BOLD);
		put(0, w - 8, 8, "[PAUSED]");
		attroff(A_REVERSE | A_BOLD);
	}
	if (!h->known) { /* the figures are deltas: none before the second period */
		snprintf(p1, sizeof(p1), "-");
		snprintf(p2, sizeof(p2), "-");
		snprintf(p3, sizeof(p3), "-");
	} else {
		hosttui_fmt_pct(h->host_cpu, p1, sizeof(p1));
		hosttui_fmt_pct(h->self_pct, p2, sizeof(p2));
		hosttui_fmt_pct(h->bpf_pct, p3, sizeof(p3));
	}
	snprintf(line, sizeof(line),
		 "host CPU %s%% of %ld | vnoise %s%% (BPF %s%%) | lost: dispatch %" PRIu64
		 ", events %" PRIu64,
		 p1, h->ncpus, p2, p3, h->drops, h->events_dropped);
	if ((h->drops || h->events_dropped) && t->colour)
		attron(COLOR_PAIR(PAIR_HIGH));
	put(1, 0, w, line);
	attroff(COLOR_PAIR(PAIR_HIGH));
}

/* The sort marker: the direction of the order shown (names A-Z are "up"). */
static const char *sort_mark(const struct hosttui *t)
{
	bool up = (t->view.sort == HOSTTUI_COL_NAME || t->view.sort == HOSTTUI_COL_TOP) !=
		  t->view.reverse;

	if (t->utf8)
		return up ? "\u25b2" : "\u25bc";
	return up ? "^" : "v";
}

/* The third header line: counts, sort, filter, view. */
static void draw_state(struct hosttui *t, int w, size_t nshown)
{
	const struct hosttui_model *m = shown(t);
	size_t nd = 0, nv = 0;
	char line[256];

	for (size_t i = 0; i < m->n; i++)
		m->rows[i].is_vcpu ? nv++ : nd++;
	snprintf(line, sizeof(line), "domains %zu  vCPUs %zu  rows %zu  sort %s%s %s%s%s%s%s", nd,
		 nv, nshown, hosttui_col_name(t->view.sort), sort_mark(t),
		 t->view.reverse ? "(reversed)" : "",
		 t->view.filter[0] || t->filtering ? "  filter: " : "", t->view.filter,
		 t->filtering ? "_" : "", t->view.guest ? "  [guest view]" : "");
	put(2, 0, w, line);
}

static void draw_colhead(struct hosttui *t, int y, int w, const struct hosttui_colpos *cp, int ncp)
{
	char buf[96];

	attron(t->colour ? COLOR_PAIR(PAIR_BAR) : A_REVERSE);
	mvhline(y, 0, ' ', w);
	for (int k = 0; k < ncp; k++) {
		int c = cp[k].col, len = (int)strlen(hosttui_col_name(c));
		bool left = c == HOSTTUI_COL_NAME || c == HOSTTUI_COL_TOP || c == HOSTTUI_COL_SPARK;
		/* the direction mark only inside the column: never over the space between two */
		bool mark = c == t->view.sort && (left || cp[k].w > len);

		snprintf(buf, sizeof(buf), "%s%s%s", mark && !left ? sort_mark(t) : "",
			 hosttui_col_name(c), mark && left ? sort_mark(t) : "");
		if (c == t->view.sort)
			attron(A_BOLD | A_UNDERLINE);
		if (left)
			put(y, cp[k].x, cp[k].w, buf);
		else /* right-aligned */
			put(y, cp[k].x + cp[k].w - len - mark, len + mark, buf);
		attroff(A_BOLD | A_UNDERLINE);
	}
	attroff(t->colour ? COLOR_PAIR(PAIR_BAR) : A_REVERSE);
}

static void draw_cell(struct hosttui *t, int y, const struct hosttui_colpos *cp,
		      const struct hosttui_row *r)
{
	char buf[HOSTTUI_HISTORY * 3 + 8], name[HOSTAGG_NAME_LEN + 24];
	int c = cp->col;

	switch (c) {
	case HOSTTUI_COL_NAME:
		if (r->is_vcpu)
			snprintf(name, sizeof(name), "   vCPU %u", r->vcpu);
		else
			snprintf(name, sizeof(name), "%s %s%s",
				 r->expanded ? (t->utf8 ? "\u25be" : "-")
					     : (t->utf8 ? "\u25b8" : "+"),
				 r->name, r->running ? "" : " (stopped)");
		if (!r->is_vcpu && t->colour)
			attron(COLOR_PAIR(PAIR_DOM) | A_BOLD);
		put(y, cp->x, cp->w, termcell_fit(name, cp->w, t->utf8, buf, sizeof(buf)));
		attroff(COLOR_PAIR(PAIR_DOM) | A_BOLD);
		return;
	case HOSTTUI_COL_TOP:
		put(y, cp->x, cp->w,
		    r->seen ? termcell_fit(r->top, cp->w, t->utf8, buf, sizeof(buf)) : "-");
		return;
	case HOSTTUI_COL_SPARK:
		termcell_spark(r->hist, HOSTTUI_HISTORY, cp->w, t->utf8, buf, sizeof(buf));
		attron(level_attr(t, r->val[HOSTTUI_COL_PREEMPT]));
		put(y, cp->x, cp->w, buf);
		attroff(level_attr(t, r->val[HOSTTUI_COL_PREEMPT]));
		return;
	case HOSTTUI_COL_EXITS:
		put_right(y, cp->x, cp->w,
			  r->seen ? hosttui_fmt_rate(r->val[c], buf, sizeof(buf)) : "-");
		return;
	default:
		if (!r->seen || (c >= HOSTTUI_COL_GUEST && c <= HOSTTUI_COL_HW && !r->has_guest)) {
			put_right(y, cp->x, cp->w, "-");
			return;
		}
		attron(level_attr(t, r->val[c]));
		put_right(y, cp->x, cp->w, hosttui_fmt_pct(r->val[c], buf, sizeof(buf)));
		attroff(level_attr(t, r->val[c]));
	}
}

static bool is_selected(const struct hosttui *t, const struct hosttui_row *r)
{
	return !strcmp(r->uuid, t->sel_uuid) && r->is_vcpu == t->sel_is_vcpu &&
	       (!r->is_vcpu || r->vcpu == t->sel_vcpu);
}

static void select_row(struct hosttui *t, const struct hosttui_row *r)
{
	snprintf(t->sel_uuid, sizeof(t->sel_uuid), "%s", r->uuid);
	t->sel_is_vcpu = r->is_vcpu;
	t->sel_vcpu = r->vcpu;
}

/* The position of the selection in idx; the first row (selected) if it is not shown. */
static size_t sel_pos(struct hosttui *t, const size_t *idx, size_t n)
{
	const struct hosttui_model *m = shown(t);

	for (size_t k = 0; k < n; k++)
		if (is_selected(t, &m->rows[idx[k]]))
			return k;
	if (n)
		select_row(t, &m->rows[idx[0]]);
	return 0;
}

enum { LIST_PCT_A, LIST_RATE, LIST_PCT_B }; /* the figure a list shows: item a as %, a per s, b % */

/* One list of the detail pane in a box of width w at (y, x). */
static void draw_list(struct hosttui *t, int y, int x, int w, const char *title,
		      const struct hosttui_item *it, int n, int kind, const char *empty)
{
	char fig[24], line[160], cut[512];

	attron(A_UNDERLINE);
	put(y, x, w - 1, title);
	attroff(A_UNDERLINE);
	if (!n)
		put(y + 1, x, w - 1, empty);
	for (int i = 0; i < n && i < HOSTTUI_DETAIL_N; i++) {
		if (kind == LIST_RATE)
			snprintf(fig, sizeof(fig), "%s/s", hosttui_fmt_rate(it[i].a, line, 16));
		else
			snprintf(fig, sizeof(fig), "%s%%",
				 hosttui_fmt_pct(kind == LIST_PCT_B ? it[i].b : it[i].a, line, 16));
		if (w - 9 > 0)
			put(y + 1 + i, x, w - 9,
			    termcell_fit(it[i].name, w - 9, t->utf8, cut, sizeof(cut)));
		snprintf(line, sizeof(line), " %7s", fig);
		put(y + 1 + i, x + (w - 9 > 0 ? w - 9 : 0), 8, line);
	}
}

static void draw_detail(struct hosttui *t, int y, int w, const struct hosttui_row *r)
{
	const struct hosttui_detail *d = r->det;
	char line[256], cpu[16] = "-";
	int cw = w / 3;

	if (!d)
		return;
	if (d->cpu != ~0u)
		snprintf(cpu, sizeof(cpu), "%u", d->cpu);
	snprintf(line, sizeof(line),
		 " vCPU %u of %s: tid %u, pCPU %s; out-time with the pCPU idle %.1f%% ", r->vcpu,
		 r->name, d->tid, cpu, d->idle_pct);
	attron(t->colour ? COLOR_PAIR(PAIR_BAR) : A_REVERSE);
	mvhline(y, 0, ' ', w);
	put(y, 0, w, line);
	attroff(t->colour ? COLOR_PAIR(PAIR_BAR) : A_REVERSE);
	put(y + 1, 0, w - 1, d->out_line);
	put(y + 2, 0, w - 1, d->steal_line);
	y += DETAIL_SPLIT;
	draw_list(t, y + 1, 0, cw, "preemptors (% out-time)", d->pre, d->npre, LIST_PCT_A, "-");
	draw_list(t, y + 1, cw, cw, "exits by reason", d->exit, d->nexit, LIST_RATE,
		  d->note[0] ? d->note : "-");
	draw_list(t, y + 1, 2 * cw, w - 2 * cw, "host IRQs (% of period)", d->irq, d->nirq,
		  LIST_PCT_B, "-");
	if (!t->view.guest)
		return;
	draw_list(t, y + 1 + DETAIL_LINES - 1, 0, w / 2, "hypervisor sources (% of the vCPU)",
		  d->hyp, d->nhyp, LIST_PCT_A, r->has_guest ? "-" : "no guest data");
	draw_list(t, y + 1 + DETAIL_LINES - 1, w / 2, w - w / 2, "guest sources (% of the vCPU)",
		  d->guest, d->nguest, LIST_PCT_A, r->has_guest ? "-" : "no guest data");
}

static void draw_status(struct hosttui *t, int y, int w)
{
	const char *s =
	    t->filtering ? "filter: type a domain name, Enter keeps it, Esc clears it" : t->status;

	char buf[LOG_LEN + 8];
	int n;

	if (!strncmp(
		s, "vnoise-host: ", 13)) /* the screen is vnoise-host's: its prefix says nothing */
		s += 13;
	n = termcell_count(s);
	attron(t->colour ? COLOR_PAIR(PAIR_STATUS) : A_REVERSE);
	mvhline(y, 0, ' ', w);
	if (n <= w - 15 || w <= 30) {
		put(y, 0, w - 15 > 0 ? w - 15 : w, s);
		if (w > 30)
			put(y, w - 14, 14, " h help q quit");
	} else if (n <= w) {
		put(y, 0, w, s); /* a long message takes the hint's room */
	} else { /* cut at its end with an ellipsis (warnings and errors are printed whole at exit) */
		size_t off = termcell_off(s, w - 1);

		snprintf(buf, sizeof(buf), "%.*s%s", (int)off, s, t->utf8 ? "\u2026" : "~");
		put(y, 0, w, buf);
	}
	attroff(t->colour ? COLOR_PAIR(PAIR_STATUS) : A_REVERSE);
}

static void draw_help(struct hosttui *t, int w)
{
	static const char *const keys[] = {
		"Up/Down PgUp/PgDn Home/End  select a row",
		"Enter, space   expand/collapse the domain (its vCPU rows); * all",
		"a selected vCPU shows its detail pane: preemptors, exits, host IRQs",
		"< > (or , .)   sort by the column to the left / right",
		"N S O P T X    sort by name, steal%, out%, prmpt%, top preemptor, exits/s",
		"I or r         invert the order",
		"/              filter by domain name (Enter keeps it, Esc clears it)",
		"p              pause: the screen freezes, collection goes on",
		"+ -            longer / shorter period (250ms .. 60s), from the next one",
		"g              the guest columns and sources (with --guest)",
		"h ? F1         this help (any key leaves it)",
		"q F10 ^C       quit",
		"",
		"Columns (shares of the period; domain rows: mean of its vCPUs):",
	};
	int y = 0;
	char line[160];

	attron(A_BOLD);
	put(y++, 0, w, "vnoise-host top: keys");
	attroff(A_BOLD);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && y < LINES - 1; i++)
		put(y++, 2, w - 2, keys[i]);
	for (int c = 0; c < HOSTTUI_NCOLS && y < LINES - 1; c++) {
		snprintf(line, sizeof(line), "%-15s %s", hosttui_col_name(c), hosttui_col_help(c));
		put(y++, 2, w - 2, line);
	}
}

static void draw_rows(struct hosttui *t, int y0, int nrows, int w, const size_t *idx, size_t n,
		      size_t sel)
{
	const struct hosttui_model *m = shown(t);
	struct hosttui_colpos cp[HOSTTUI_NCOLS];
	int ncp = hosttui_layout(w, t->view.guest, cp);

	draw_colhead(t, y0 - 1, w, cp, ncp);
	if (sel < t->scroll)
		t->scroll = sel;
	if (nrows > 0 && sel >= t->scroll + (size_t)nrows)
		t->scroll = sel - (size_t)nrows + 1;
	if (!n)
		put(y0, 0, w,
		    t->view.filter[0] ? "no domain matches the filter" : "no domain monitored yet");
	for (int i = 0; i < nrows && t->scroll + (size_t)i < n; i++) {
		size_t k = t->scroll + (size_t)i;
		const struct hosttui_row *r = &m->rows[idx[k]];

		if (k == sel)
			attron(A_REVERSE);
		if (k == sel)
			mvhline(y0 + i, 0, ' ', w);
		for (int c = 0; c < ncp; c++)
			draw_cell(t, y0 + i, &cp[c], r);
		attroff(A_REVERSE);
	}
}

static void draw(struct hosttui *t)
{
	const struct hosttui_model *m = shown(t);
	int h, w, nrows, dh = 0;
	size_t *idx = m->n ? malloc(m->n * sizeof(*idx)) : NULL, n = 0, sel = 0;

	getmaxyx(stdscr, h, w);
	erase();
	if (t->help) {
		draw_help(t, w);
		draw_status(t, h - 1, w);
		refresh();
		free(idx);
		return;
	}
	if (idx)
		n = hosttui_model_order(m, &t->view, idx, m->n);
	sel = sel_pos(t, idx, n);
	draw_head(t, w);
	draw_state(t, w, n);
	if (n && m->rows[idx[sel]].is_vcpu)
		dh = 1 + DETAIL_SPLIT + DETAIL_LINES + (t->view.guest ? DETAIL_LINES - 1 : 0);
	nrows = h - 4 - 1 - dh;
	if (nrows < 1 && dh) { /* too short for the pane */
		dh = 0;
		nrows = h - 5;
	}
	draw_rows(t, 4, nrows, w, idx, n, sel);
	if (dh)
		draw_detail(t, h - 1 - dh, w, &m->rows[idx[sel]]);
	draw_status(t, h - 1, w);
	refresh();
	free(idx);
}

/* ---- periods ---- */

/* The header's figures of the period that ended: host CPU from /proc/stat, vnoise's cost, losses. */
static void head_update(struct hosttui *t, const struct hostinfo *in)
{
	struct tui_head *h = &t->head;
	uint64_t span = in->end_ns > in->start_ns ? in->end_ns - in->start_ns : 0;
	uint64_t busy, total;
	char buf[512];
	FILE *f = fopen("/proc/stat", "r");

	if (f && fgets(buf, sizeof(buf), f) && !hosttui_cpu_parse(buf, &busy, &total)) {
		if (t->have_cpu && total > t->cpu_total)
			h->host_cpu =
			    100.0 * (double)(busy - t->cpu_busy) / (double)(total - t->cpu_total);
		t->cpu_busy = busy;
		t->cpu_total = total;
		t->have_cpu = true;
	}
	if (f)
		fclose(f);
	h->ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (t->have_self && span) {
		h->self_pct = 100.0 * (double)(in->self_cpu_ns - t->last_self_ns) / (double)span;
		h->bpf_pct = in->bpf_run_ns >= t->last_bpf_ns
				 ? 100.0 * (double)(in->bpf_run_ns - t->last_bpf_ns) / (double)span
				 : 0.0;
	}
	h->known = t->have_self && t->have_cpu && span;
	t->last_self_ns = in->self_cpu_ns;
	t->last_bpf_ns = in->bpf_run_ns;
	t->have_self = true;
	h->drops = in->schedlog_drops;
	h->events_dropped = in->events_dropped;
	h->span_ns = span;
	h->end_ns = in->end_ns;
}

void hosttui_period(struct hosttui *t, const struct hostagg *cur, const struct hostinfo *in)
{
	if (!t)
		return;
	head_update(t, in);
	if (!t->live.periods && !strncmp(t->status, "waiting", 7))
		t->status[0] = 0;
	if (hosttui_model_update(&t->live, cur, in))
		snprintf(t->status, sizeof(t->status), "out of memory: rows missing");
	if (t->paused) /* keep collecting: the frozen screen stays */
		return;
	draw(t);
}

/* ---- keys ---- */

static void pause_toggle(struct hosttui *t)
{
	if (!t->paused && hosttui_model_copy(&t->frozen, &t->live)) {
		snprintf(t->status, sizeof(t->status), "out of memory: cannot pause");
		return;
	}
	t->frozen_head = t->head;
	t->paused = !t->paused;
	snprintf(t->status, sizeof(t->status), "%s",
		 t->paused ? "paused: the screen is frozen, collection goes on (p resumes)"
			   : "resumed");
}

/* Enter/space: the selected domain (a vCPU row: its domain) expands or collapses, in both models. */
static void expand_toggle(struct hosttui *t)
{
	const struct hosttui_model *m = shown(t);

	for (size_t i = 0; i < m->n; i++) {
		const struct hosttui_row *r = &m->rows[i];

		if (r->is_vcpu || strcmp(r->uuid, t->sel_uuid))
			continue;
		hosttui_model_expand(&t->live, r->uuid, !r->expanded);
		hosttui_model_expand(&t->frozen, r->uuid, !r->expanded);
		t->sel_is_vcpu = false; /* collapsing hides a selected vCPU: its domain */
		return;
	}
}

static void expand_all(struct hosttui *t)
{
	const struct hosttui_model *m = shown(t);
	int on = 0;

	for (size_t i = 0; i < m->n; i++)
		if (!m->rows[i].is_vcpu && !m->rows[i].expanded)
			on = 1;
	hosttui_model_expand(&t->live, NULL, on);
	hosttui_model_expand(&t->frozen, NULL, on);
	if (!on)
		t->sel_is_vcpu = false;
}

/* Move the selection by delta rows (clamped). */
static void move_sel(struct hosttui *t, long delta)
{
	const struct hosttui_model *m = shown(t);
	size_t *idx, n, sel;
	long to;

	if (!m->n)
		return;
	idx = malloc(m->n * sizeof(*idx));
	if (!idx)
		return;
	n = hosttui_model_order(m, &t->view, idx, m->n);
	sel = sel_pos(t, idx, n);
	to = (long)sel + delta;
	if (to >= (long)n)
		to = (long)n - 1;
	if (to < 0)
		to = 0;
	if (n)
		select_row(t, &m->rows[idx[to]]);
	free(idx);
}

/* The next sort column left (dir < 0) or right: the guest ones only in the guest view. */
static void sort_step(struct hosttui *t, int dir)
{
	int c = t->view.sort;

	do
		c = (c + dir + HOSTTUI_NCOLS) % HOSTTUI_NCOLS;
	while (!t->view.guest && c >= HOSTTUI_COL_GUEST && c <= HOSTTUI_COL_HW);
	t->view.sort = c;
}

static void period_key(struct hosttui *t, int dir)
{
	char b[24];

	t->period_ns = hosttui_period_step(t->period_ns, dir);
	snprintf(t->status, sizeof(t->status), "period %s from the next period",
		 period_text(t->period_ns, b, sizeof(b)));
}

/* A key while the filter is edited. */
static void filter_key(struct hosttui *t, int ch)
{
	size_t len = strlen(t->view.filter);

	if (ch == 27) { /* Esc: no filter */
		t->view.filter[0] = 0;
		t->filtering = false;
	} else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
		t->filtering = false;
	} else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
		if (len)
			t->view.filter[len - 1] = 0;
	} else if (ch >= 32 && ch < 127 && len + 1 < sizeof(t->view.filter)) {
		t->view.filter[len] = (char)ch;
		t->view.filter[len + 1] = 0;
	}
}

static void sort_key(struct hosttui *t, int col)
{
	if (t->view.sort == col)
		t->view.reverse = !t->view.reverse;
	else
		t->view.reverse = false;
	t->view.sort = col;
}

/* The keys that are not about rows and order. */
static int key_more(struct hosttui *t, int ch)
{
	switch (ch) {
	case '/':
		t->filtering = true;
		break;
	case 'p':
		pause_toggle(t);
		break;
	case '+':
	case '=':
		period_key(t, 1);
		break;
	case '-':
		period_key(t, -1);
		break;
	case 'g':
		if (t->p->guest)
			t->view.guest = !t->view.guest;
		else
			snprintf(t->status, sizeof(t->status),
				 "the guest columns need top --guest");
		if (!t->view.guest && t->view.sort >= HOSTTUI_COL_GUEST &&
		    t->view.sort <= HOSTTUI_COL_HW)
			t->view.sort = HOSTTUI_COL_PREEMPT;
		break;
	case 'h':
	case '?':
	case KEY_F(1):
		t->help = true;
		break;
	case 12: /* ^L */
		clearok(curscr, TRUE);
		break;
	default: /* KEY_RESIZE and the rest: a redraw */
		break;
	}
	return 0;
}

/* One key outside the filter and the help. Returns 1 for quit. */
static int key(struct hosttui *t, int ch)
{
	switch (ch) {
	case 'q':
	case 'Q':
	case KEY_F(10):
		return 1;
	case KEY_UP:
	case 'k':
		move_sel(t, -1);
		break;
	case KEY_DOWN:
	case 'j':
		move_sel(t, 1);
		break;
	case KEY_PPAGE:
		move_sel(t, -(LINES / 2));
		break;
	case KEY_NPAGE:
		move_sel(t, LINES / 2);
		break;
	case KEY_HOME:
		move_sel(t, -(1L << 30));
		break;
	case KEY_END:
		move_sel(t, 1L << 30);
		break;
	case '\n':
	case '\r':
	case KEY_ENTER:
	case ' ':
		expand_toggle(t);
		break;
	case '*':
		expand_all(t);
		break;
	case '<':
	case ',':
		sort_step(t, -1);
		break;
	case '>':
	case '.':
	case KEY_F(6):
		sort_step(t, 1);
		break;
	case 'I':
	case 'r':
		t->view.reverse = !t->view.reverse;
		break;
	case 'N':
		sort_key(t, HOSTTUI_COL_NAME);
		break;
	case 'S':
		sort_key(t, HOSTTUI_COL_STEAL);
		break;
	case 'O':
		sort_key(t, HOSTTUI_COL_OUT);
		break;
	case 'P':
		sort_key(t, HOSTTUI_COL_PREEMPT);
		break;
	case 'T':
		sort_key(t, HOSTTUI_COL_TOP);
		break;
	case 'X':
		sort_key(t, HOSTTUI_COL_EXITS);
		break;
	default:
		return key_more(t, ch);
	}
	return 0;
}

/* Every key waiting. Returns 1 for quit. */
static int keys(struct hosttui *t)
{
	bool any = false;
	int ch;

	while ((ch = getch()) != ERR) {
		any = true;
		if (ch == KEY_RESIZE)
			continue;
		if (t->filtering) {
			filter_key(t, ch);
		} else if (t->help) {
			t->help = false; /* any key leaves the help, q too (as the help says) */
		} else if (key(t, ch)) {
			return 1;
		}
	}
	if (any)
		draw(t);
	return 0;
}

int hosttui_wait(struct hosttui *t, uint64_t wake, struct pollfd *extra, int n)
{
	struct pollfd pfd[1 + HOSTTUI_MAX_EXTRA];

	if (!t)
		return 0;
	if (n > HOSTTUI_MAX_EXTRA)
		n = HOSTTUI_MAX_EXTRA;
	for (;;) {
		uint64_t now = now_ns();
		int rc;

		if (now >= wake)
			return 0;
		pfd[0] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
		for (int k = 0; k < n; k++)
			pfd[1 + k] =
			    (struct pollfd){ .fd = extra[k].fd, .events = extra[k].events };
		rc = poll(pfd, (nfds_t)(1 + n), (int)((wake - now + 999999) / 1000000));
		if (rc < 0) {
			/* a signal: SIGWINCH leaves a KEY_RESIZE; SIGINT/SIGTERM are the engine's */
			if (errno == EINTR)
				return keys(t);
			return 0;
		}
		if (rc > 0 && (pfd[0].revents & (POLLHUP | POLLERR | POLLNVAL)))
			return 1; /* the terminal is gone */
		if (rc > 0 && pfd[0].revents && keys(t))
			return 1;
		for (int k = 0; k < n; k++)
			extra[k].revents = pfd[1 + k].revents;
		for (int k = 0; k < n; k++)
			if (extra[k].revents)
				return 0;
	}
}

/* ---- the screen as a sink of the live engine ---- */

struct tuisink {
	const struct host_params *p;
	struct hosttui *tui; /* NULL: not open (yet, or the terminal could not), or closed */
	void *lines; /* the line output when the screen could not open (hostview_sink_ops) */
	bool fallback;
};

static int tui_sink_start(void *ctx, const struct vmap_dom *const *doms, int n)
{
	struct tuisink *s = ctx;
	char err[256];

	(void)doms;
	(void)n;
	s->tui = hosttui_open(s->p, err, sizeof(err));
	if (!s->tui) {
		log_warn("no interactive screen (%s): line output", err);
		s->fallback = true;
	}
	return 0;
}

static void tui_sink_period(void *ctx, const struct hostagg *cur, const struct hostinfo *in)
{
	struct tuisink *s = ctx;

	if (s->tui)
		hosttui_period(s->tui, cur, in);
	else if (s->fallback)
		hostview_sink_ops.period(s->lines, cur, in);
}

static int tui_sink_wait(void *ctx, uint64_t wake, struct pollfd *extra, int n)
{
	struct tuisink *s = ctx;

	return s->tui ? hosttui_wait(s->tui, wake, extra, n) : -ENOTTY;
}

static uint64_t tui_sink_period_ns(void *ctx)
{
	struct tuisink *s = ctx;

	return s->tui ? hosttui_period_ns(s->tui) : 0;
}

static void tui_sink_stop(void *ctx)
{
	struct tuisink *s = ctx;

	hosttui_close(s->tui);
	s->tui = NULL;
}

static void tui_sink_close(void *ctx)
{
	struct tuisink *s = ctx;

	hosttui_close(s->tui);
	free(s->lines);
	free(s);
}

static const struct live_sink_ops tui_sink_ops = {
	.name = "screen",
	.start = tui_sink_start,
	.period = tui_sink_period,
	.wait = tui_sink_wait,
	.period_ns = tui_sink_period_ns,
	.stop = tui_sink_stop,
	.close = tui_sink_close,
};

int hosttui_sink_add(struct live *lv, const struct host_params *p)
{
	struct tuisink *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->p = p;
	s->lines = hostview_sink_new(p, HOSTVIEW_SINK_PERIODS);
	if (!s->lines) {
		free(s);
		return -ENOMEM;
	}
	return live_add_sink(lv, &tui_sink_ops, s);
}
