/* SPDX-License-Identifier: MIT */
/*
 * tapset: the --flows capture of one domain, a tapflow per tap device of its live XML (at most
 * TAPSET_MAX_TAPS). The live engine opens one when it maps the domain, polls it every tick and cuts it at
 * each period's end into vn_host_flow and vn_host_tap records. A capture that cannot be opened, or fails, is
 * counted as failed in its period, closed after its counts are taken and opened again every TAPSET_RETRY_NS
 * while the domain runs; each failure is logged once per tap. A tap that went away (its domain stopping) has
 * ended, not failed. One thread per object; needs CAP_NET_RAW (tapflow).
 */
#ifndef VNOISE_HOST_NET_TAPSET_H
#define VNOISE_HOST_NET_TAPSET_H

#include <stdbool.h>
#include <stdint.h>
#include "host.h"

#define TAPSET_MAX_TAPS 8 /* tap devices captured per domain */
#define TAPSET_RETRY_NS 2000000000ULL /* a tap whose capture failed is opened again this often */

struct tapset;

/* Where tapset_cut puts its records; each returns 0 or -ENOMEM (the record was lost: said once per cut). */
struct tapset_out {
	int (*flow)(void *ctx, const struct vn_host_flow *f);
	int (*tap)(void *ctx, const struct vn_host_tap *t);
	void *ctx;
};

/* Open the captures of domain (its name, for the messages) on taps ("vnet0,vnet3"; "": none, said once) at
 * t (CLOCK_MONOTONIC ns). NULL with errno ENOMEM. Free with tapset_close. */
struct tapset *tapset_open(const char *domain, const char *taps, uint64_t t)
    __attribute__((warn_unused_result));

/* Every tick: read what the captures hold (frames stamped before t count in the current period); reopen
 * failed ones when the domain is running and their retry time has come. */
void tapset_poll(struct tapset *s, bool running, uint64_t t);

/* End the period [start, t) of the captures: per tap a vn_host_tap record (domain index dom), and its flows
 * with packets, into out. */
void tapset_cut(struct tapset *s, uint32_t dom, uint64_t start, uint64_t t,
		const struct tapset_out *out);

/* Close every capture and free s. Accepts NULL. */
void tapset_close(struct tapset *s);

#endif
