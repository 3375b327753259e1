/* SPDX-License-Identifier: MIT */
/*
 * regionguard: reads and writes of a shared-memory region that another process may shrink under the mapping
 * (ftruncate of the file: the pages past the new end fault with SIGBUS). A caller arms a guard around its
 * accesses to one mapping; a SIGBUS whose address falls in the armed mapping, on the thread that armed it,
 * jumps back to the guard's sigsetjmp point instead of killing the process. Any other SIGBUS (another
 * address, another thread, nothing armed, or sent by kill) goes to the handler that was there before, or
 * kills the process as it would have: real bugs still crash. Guards do not nest. The cost on the path is a
 * sigsetjmp without the signal mask (no system call) and two thread-local stores.
 *
 *	regionguard_arm(&g, base, size);
 *	if (sigsetjmp(g.jb, 0)) {
 *		... the region shrank: drop the mapping (the guard is disarmed already) ...
 *		return;
 *	}
 *	... accesses ...
 *	regionguard_disarm();
 *
 * What the guarded code was doing when it faulted is cut short: it must not hold locks or allocations that
 * only its own return would release (the region's readers and writers copy and store, nothing more).
 */
#ifndef VNOISE_HOST_MATCH_REGIONGUARD_H
#define VNOISE_HOST_MATCH_REGIONGUARD_H

#include <setjmp.h>
#include <stddef.h>

struct regionguard {
	sigjmp_buf jb; /* where a fault in [lo, hi) goes (sigsetjmp(jb, 0) by the caller) */
	const char *lo, *hi;
};

/* Install the SIGBUS handler (again, if another module replaced it since); the one found is chained to.
 * 0 or -errno. */
int regionguard_install(void) __attribute__((warn_unused_result));
/* Arm g for faults in [base, base + size) on this thread; the caller's sigsetjmp(g->jb, 0) follows. */
void regionguard_arm(struct regionguard *g, const void *base, size_t size);
/* Disarm this thread's guard (a jump disarms it too). */
void regionguard_disarm(void);

#endif
