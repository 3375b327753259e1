// SPDX-License-Identifier: GPL-2.0-only
/* The kernel helper built without the KVM steal clock, for kernels that have no steal_time (not a KVM guest). */
#define KTRACE_STEAL 0
#include "ktrace.bpf.c"
