/* SPDX-License-Identifier: MIT */
/*
 * classes internals that tests need: the lookup of a hypervisor class by name, which no product parses yet
 * (the tests hold the table's names to it in both directions).
 */
#ifndef VNOISE_ATTRIB_CLASSES_PRIV_H
#define VNOISE_ATTRIB_CLASSES_PRIV_H

#include "attrib/classes.h"

/* The hypervisor class named name (as classes_hyp_name() spells it): 0..VN_HCLASS_MAX - 1, VN_HCLASS_HW for
 * "hw", or -ENOENT (-EINVAL: name NULL). */
int classes_hyp_find(const char *name);

#endif
