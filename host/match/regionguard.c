/* SPDX-License-Identifier: MIT */
/*
 * regionguard: SIGBUS from a shrunk shared mapping turned into a jump back to the armed guard (see
 * regionguard.h). The handler runs with SA_NODEFER so that the jump (siglongjmp without a saved mask) leaves
 * SIGBUS unblocked for the next fault.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include "match/regionguard.h"

static __thread struct regionguard *armed;
static struct sigaction chained; /* the action found at install: what a SIGBUS not ours gets */

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct regionguard *g = armed;

	if (g && si->si_code != SI_USER && si->si_code != SI_TKILL &&
	    (const char *)si->si_addr >= g->lo && (const char *)si->si_addr < g->hi) {
		armed = NULL;
		siglongjmp(g->jb, 1);
	}
	/* not ours: the action found at install takes it, as it would have without the guard (a fault
	 * that comes back once the handler returns goes to it too) */
	(void)uc;
	sigaction(SIGBUS, &chained, NULL);
	raise(sig);
}

int regionguard_install(void)
{
	struct sigaction sa, cur;

	if (sigaction(SIGBUS, NULL, &cur))
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	chained = cur;
	if (sigaction(SIGBUS, &sa, NULL))
		return -errno;
	return 0;
}

void regionguard_arm(struct regionguard *g, const void *base, size_t size)
{
	g->lo = base;
	g->hi = (const char *)base + size;
	armed = g;
}

void regionguard_disarm(void)
{
	armed = NULL;
}
