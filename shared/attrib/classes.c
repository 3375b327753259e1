/* SPDX-License-Identifier: MIT */
/*
 * classes: one table of the attribution model's classes (see classes.h for the contract): the guest classes
 * by enum vn_class, then the hypervisor classes by enum vn_hclass and the residual hw. Lookups are a linear
 * scan of one part of the table (13 rows).
 */
#include <errno.h>
#include <string.h>
#include "attrib/classes_priv.h"

struct row {
	const char *name; /* JSON key, metric label, datagram/store class name */
	const char *label; /* column head */
	const char *abbrev; /* narrow column head */
	const char *color; /* plot colour (#rrggbb): every plot of a class draws it in this one */
};

#define HYP0 VN_CLASS_MAX /* the first hypervisor row */
#define ROWS (VN_CLASS_MAX + VN_HCLASS_PARTS)

static const struct row rows[ROWS] = {
	[VN_CLASS_NONE] = { "none", "-", "-", "#9c9c9c" },
	[VN_CLASS_NMI] = { "nmi", "NMI", "NMI", "#7f3c8d" },
	[VN_CLASS_IRQ] = { "irq", "IRQ", "IRQ", "#e15759" },
	[VN_CLASS_SOFTIRQ] = { "softirq", "SIRQ", "SIRQ", "#f28e2b" },
	[VN_CLASS_THREAD] = { "thread", "THREAD", "THREAD", "#4e79a7" },
	[VN_CLASS_HCALL] = { "hypercall", "HCALL", "HCALL", "#59a14f" },
	[VN_CLASS_STEAL] = { "steal", "STEAL", "STEAL", "#b07aa1" },
	[VN_CLASS_UNEXPLAINED] = { "unexplained", "UNEXPL", "UNEXPL", "#bab0ac" },
	[HYP0 + VN_HCLASS_HOST_PREEMPT] = { "host_preempt", "HOSTPRE", "HPRE", "#8c564b" },
	[HYP0 + VN_HCLASS_HOST_WAIT] = { "host_wait", "HOSTWAIT", "HWAIT", "#d4a6c8" },
	[HYP0 + VN_HCLASS_VMEXIT] = { "vmexit", "VMEXIT", "VMEXIT", "#17becf" },
	[HYP0 + VN_HCLASS_HOST_IRQ] = { "host_irq", "HOSTIRQ", "HIRQ", "#edc948" },
	[HYP0 + VN_HCLASS_HW] = { "hw", "HW", "HW", "#79706e" },
};

static const struct row *guest_row(int cls)
{
	return cls >= 0 && cls < VN_CLASS_MAX ? &rows[cls] : NULL;
}

static const struct row *hyp_row(int hc)
{
	return hc >= 0 && hc < VN_HCLASS_PARTS ? &rows[HYP0 + hc] : NULL;
}

/* The index in [lo, hi) of the row named name, minus lo; -ENOENT or -EINVAL. */
static int find(int lo, int hi, const char *name)
{
	if (!name)
		return -EINVAL;
	for (int i = lo; i < hi; i++)
		if (!strcmp(rows[i].name, name))
			return i - lo;
	return -ENOENT;
}

const char *classes_guest_name(int cls)
{
	const struct row *r = guest_row(cls);

	return r ? r->name : "?";
}

const char *classes_guest_label(int cls)
{
	const struct row *r = guest_row(cls);

	return r ? r->label : "?";
}

int classes_guest_find(const char *name)
{
	return find(0, HYP0, name);
}

const char *classes_hyp_name(int hc)
{
	const struct row *r = hyp_row(hc);

	return r ? r->name : "?";
}

const char *classes_hyp_label(int hc)
{
	const struct row *r = hyp_row(hc);

	return r ? r->label : "?";
}

const char *classes_hyp_abbrev(int hc)
{
	const struct row *r = hyp_row(hc);

	return r ? r->abbrev : "?";
}

const char *classes_guest_color(int cls)
{
	const struct row *r = guest_row(cls);

	return r ? r->color : "#9c9c9c";
}

const char *classes_hyp_color(int hc)
{
	const struct row *r = hyp_row(hc);

	return r ? r->color : "#9c9c9c";
}

int classes_hyp_find(const char *name)
{
	return find(HYP0, ROWS, name);
}

const char *classes_verdict_name(unsigned v)
{
	static const char *const names[] = { "none", "noise", "imbalance", "unexplained" };

	return v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}
