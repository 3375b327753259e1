// SPDX-License-Identifier: GPL-2.0
/* The kernel helper reading the runqueue's lagging copy of the steal clock (kernels without KALLSYMS_ALL). */
#define KH_STEAL 2
#include "khelper.bpf.c"
