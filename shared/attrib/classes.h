/* SPDX-License-Identifier: MIT */
/*
 * classes: the names of the attribution model's classes, one table for every view, parser and query. The
 * guest classes (enum vn_class) and the hypervisor classes (enum vn_hclass, with the residual VN_HCLASS_HW)
 * each have a name (JSON keys, metric labels, the report datagram's and the collector's class names), a
 * column head and a narrow column head; lookups go both ways. The spellings are public (protocol/README.md)
 * and never change. Pure functions over constant data: any thread.
 */
#ifndef VNOISE_ATTRIB_CLASSES_H
#define VNOISE_ATTRIB_CLASSES_H

#include "noise.h"

/* enum vn_class -> "none", "nmi", "irq", "softirq", "thread", "hypercall", "steal", "unexplained"; "?". */
const char *classes_guest_name(int cls);
/* enum vn_class -> "-", "NMI", "IRQ", "SIRQ", "THREAD", "HCALL", "STEAL", "UNEXPL" (column heads); "?". */
const char *classes_guest_label(int cls);
/* The guest class named name (as classes_guest_name() spells it): 0..VN_CLASS_MAX - 1, or -ENOENT
 * (-EINVAL: name NULL). */
int classes_guest_find(const char *name);

/* enum vn_hclass or VN_HCLASS_HW -> "host_preempt", "host_wait", "vmexit", "host_irq", "hw"; "?". */
const char *classes_hyp_name(int hc);
/* ... -> "HOSTPRE", "HOSTWAIT", "VMEXIT", "HOSTIRQ", "HW" (column heads); "?". */
const char *classes_hyp_label(int hc);
/* ... -> "HPRE", "HWAIT", "VMEXIT", "HIRQ", "HW" (narrow column heads: the histograms); "?". */
const char *classes_hyp_abbrev(int hc);

/* The plot colour of a guest class / of a hypervisor class or hw ("#rrggbb"; grey for an unknown one):
 * distinct across both sets, so a combined plot never draws two classes alike. */
const char *classes_guest_color(int cls);
const char *classes_hyp_color(int hc);

/* An interval's verdict (enum vn_pipe_verdict, protocol/app.h) -> "none", "noise", "imbalance",
 * "unexplained"; "?". */
const char *classes_verdict_name(unsigned v);

#endif
