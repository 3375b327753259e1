/* SPDX-License-Identifier: MIT */
/*
 * progress: one self-erasing status line on stderr for long runs (record -d, measure -d, vnoise-bench
 * sweep): elapsed / total, remaining, and what is being done. Shown only when stderr is a terminal (and
 * TERM is not "dumb"), the run is not quiet and lasts at least PROGRESS_MIN_NS; redrawn at most every
 * PROGRESS_REDRAW_NS as "\r" + text + "\033[K", cut to the terminal's width (read at each redraw); erased by
 * progress_end and progress_clear. While a line exists it is the log sink (util/log.h): a log line erases it
 * first and is printed as usual, the next update draws it again. Not thread-safe: one thread drives it.
 */
#ifndef VNOISE_UTIL_PROGRESS_H
#define VNOISE_UTIL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROGRESS_MIN_NS 10000000000ULL /* runs shorter than 10 s show nothing */
#define PROGRESS_REDRAW_NS 250000000ULL
#define PROGRESS_STEPS_DELAY_NS 2000000000ULL /* steps mode: nothing in the first 2 s */
#define PROGRESS_COLS_DEFAULT 80 /* when the terminal does not say its width */

struct progress;

/* A progress line for a run of total_ns (CLOCK_MONOTONIC, from now) labelled what ("record", "sweep");
 * NULL (and nothing shown) when quiet, stderr is not a terminal or total_ns < PROGRESS_MIN_NS. */
struct progress *progress_start(const char *what, uint64_t total_ns, bool quiet);

/*
 * A progress line for a run of nsteps steps of unknown length (vnoise-bench sweep): it shows the step
 * ("level 3/8"), the share of steps done and the time left estimated from the steps done so far (the mean
 * step so far). The run's length is not known up front: nothing is drawn in its first
 * PROGRESS_STEPS_DELAY_NS (a short run shows nothing), then as above. NULL when quiet or stderr is not a
 * terminal, or nsteps <= 0. unit names a step ("level", "job").
 */
struct progress *progress_start_steps(const char *what, const char *unit, int nsteps, bool quiet);

/* Steps mode: done steps are complete as of now_ns (CLOCK_MONOTONIC); redraws at once. Accepts NULL. */
void progress_step(struct progress *p, int done, uint64_t now_ns);

/*
 * Redraw if due: now_ns (CLOCK_MONOTONIC), doing (a short phrase, copied; NULL: the last one given, if any).
 * Drawn at once when the line is not on the screen (after progress_clear or a log line). Accepts NULL.
 */
void progress_update(struct progress *p, uint64_t now_ns, const char *doing);

/* Erase the line (it is drawn again at the next update). Accepts NULL. */
void progress_clear(struct progress *p);

/* Erase the line, remove the log sink and free p. Accepts NULL. */
void progress_end(struct progress *p);

/* ---- the pure parts (no I/O), for tests and for callers that draw elsewhere ---- */

/* ns as "MM:SS" (whole seconds, rounded down), or "H:MM:SS" from an hour on, into buf; returns buf ("" when
 * len is too small; NULL buf: NULL). */
char *progress_fmt_time(char *buf, size_t len, uint64_t ns);

/*
 * Cut the NUL-terminated s in place to at most cols columns (a UTF-8 character counts as one column and is
 * never split; cols <= 0: no limit). Returns the new length in bytes (0 for NULL).
 */
size_t progress_truncate(char *s, int cols);

/*
 * The text of a timed line, "what: 00:12 / 01:00, 00:48 left - doing" (elapsed rounded down, left rounded
 * up, elapsed past total shown as total), without "\r" or escapes: control characters in what and doing
 * become '?'; NULL or empty what / doing are left out; cut to cols - 1 columns (the last column stays empty
 * so the terminal never wraps; cols <= 0: no limit). Returns the length (0 and "" when buf is NULL or len 0).
 */
size_t progress_format(char *buf, size_t len, const char *what, uint64_t elapsed_ns,
		       uint64_t total_ns, const char *doing, int cols);

/* Where a steps run is: done of n steps complete, the last one done_ns after the start. */
struct progress_steps {
	const char *unit; /* "level"; NULL: "step" */
	int done, n;
	uint64_t done_ns;
};

/*
 * The text of a steps line: "what: level 3/8 (25%), 00:40 elapsed, 01:10 left - doing" (the current step is
 * done + 1, at most n; left = the mean step so far times the steps to go, minus the time already spent in
 * the current one, never below 0, to the nearest second; with no step done yet no "left"). Same rules as
 * progress_format.
 */
size_t progress_format_steps(char *buf, size_t len, const char *what,
			     const struct progress_steps *st, uint64_t elapsed_ns,
			     const char *doing, int cols);

#endif
