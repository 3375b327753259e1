/* SPDX-License-Identifier: MIT */
/* Passive mode: `vnoise-guest monitor` (monitor.c) and `vnoise-guest mpi` (mpi.c). */
#ifndef VNOISE_GUEST_MONITOR_MONITOR_H
#define VNOISE_GUEST_MONITOR_MONITOR_H

#include <stddef.h>
#include <stdint.h>
#include "app.h"

int monitor_main(int argc, char **argv);
int mpi_main(int argc, char **argv);
/* "thread:comm[pid]", "irq:local_timer", "softirq:NET_RX", "steal"... into buf. */
const char *monitor_cause_name(const struct vn_tgt_cause *c, char *buf, size_t len);
/* Noise of all classes. */
uint64_t monitor_noise_total(const struct vn_tgt *t);

#endif
