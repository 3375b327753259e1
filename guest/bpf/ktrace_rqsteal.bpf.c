// SPDX-License-Identifier: GPL-2.0-only
/* The kernel helper reading the runqueue's lagging copy of the steal clock (kernels without KALLSYMS_ALL). */
#define KTRACE_STEAL 2
#include "ktrace.bpf.c"
