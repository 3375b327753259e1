/* SPDX-License-Identifier: MIT */
/*
 * tapset: the captures on one domain's tap devices (see tapset.h).
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net/tapset.h"
#include "net/tapflow.h"
#include "util/log.h"

/* The capture on one tap device. */
struct tap {
	char name[VN_HOST_COMM_LEN]; /* from the live XML */
	struct tapflow *tf; /* NULL: not open (failed; retried every TAPSET_RETRY_NS) */
	uint64_t retry_ns;
	bool warned; /* the failure was logged once */
};

struct tapset {
	char domain[128];
	struct tap taps[TAPSET_MAX_TAPS];
	int ntaps;
};

/* Open (again) the capture of tap k; a failure is logged once per tap and retried later. */
static void tap_open(struct tapset *s, struct tap *k, uint64_t t)
{
	char why[320];

	k->tf = tapflow_open(k->name, why, sizeof(why));
	if (k->tf) {
		if (k->warned)
			log_info("domain %s: capturing on tap %s again", s->domain, k->name);
		else
			log_info("domain %s: capturing on tap %s", s->domain, k->name);
		k->warned = false;
		return;
	}
	k->retry_ns = t + TAPSET_RETRY_NS;
	if (!k->warned)
		log_warn("domain %s: no flows from tap %s: %s (retrying)", s->domain, k->name, why);
	k->warned = true;
}

struct tapset *tapset_open(const char *domain, const char *taps, uint64_t t)
{
	struct tapset *s = calloc(1, sizeof(*s));
	char list[256], *tok, *save = NULL;

	if (!s)
		return NULL;
	snprintf(s->domain, sizeof(s->domain), "%s", domain);
	snprintf(list, sizeof(list), "%s", taps);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct tap *k;

		if (s->ntaps == TAPSET_MAX_TAPS) {
			log_warn("domain %s: more than %d taps: %s and later ones not captured",
				 s->domain, TAPSET_MAX_TAPS, tok);
			break;
		}
		k = &s->taps[s->ntaps++];
		snprintf(k->name, sizeof(k->name), "%.*s", (int)sizeof(k->name) - 1, tok);
		tap_open(s, k, t);
	}
	if (!s->ntaps)
		log_warn("domain %s has no tap device: no flows", s->domain);
	return s;
}

void tapset_close(struct tapset *s)
{
	if (!s)
		return;
	for (int k = 0; k < s->ntaps; k++)
		tapflow_close(s->taps[k].tf);
	free(s);
}

void tapset_poll(struct tapset *s, bool running, uint64_t t)
{
	char why[320];

	for (int k = 0; k < s->ntaps; k++) {
		struct tap *m = &s->taps[k];

		if (m->tf && !tapflow_failed(m->tf) &&
		    tapflow_poll(m->tf, t, why, sizeof(why)) < 0) {
			/* a tap that went away: its domain is stopping (the lifecycle event may come a
			 * little later); anything else is a failure */
			if (!if_nametoindex(m->name)) {
				log_debug("domain %s: tap %s went away", s->domain, m->name);
			} else if (running) {
				log_warn("domain %s: capture on tap %s failed: %s (retrying)",
					 s->domain, m->name, why);
				m->warned = true;
			}
		} else if (!m->tf && running && t >= m->retry_ns) {
			tap_open(s, m, t);
		}
	}
}

/* Tap m's flows of the period into out; false when one was lost. */
static bool cut_flows(const struct tap *m, const struct tapflow_tab *tab, uint32_t dom,
		      uint64_t start, uint64_t t, const struct tapset_out *out)
{
	for (uint32_t r = 0; r < tab->n + VN_HOST_FLOW_NDIR; r++) {
		struct vn_host_flow f = r < tab->n ? tab->flow[r] : tab->other[r - tab->n];

		if (!f.packets)
			continue;
		f.start_ns = start;
		f.end_ns = t;
		f.dom = dom;
		memcpy(f.tap, m->name, sizeof(f.tap));
		if (out->flow(out->ctx, &f))
			return false;
	}
	return true;
}

void tapset_cut(struct tapset *s, uint32_t dom, uint64_t start, uint64_t t,
		const struct tapset_out *out)
{
	for (int k = 0; k < s->ntaps; k++) {
		struct tap *m = &s->taps[k];
		struct vn_host_tap ts = { .start_ns = start, .end_ns = t, .dom = dom };
		uint64_t drops[VN_HOST_FLOW_NDIR];
		const struct tapflow_tab *tab;

		memcpy(ts.tap, m->name, sizeof(ts.tap));
		if (!m->tf) {
			ts.state = VN_HOST_TAP_FAILED;
			if (out->tap(out->ctx, &ts))
				log_warn("out of memory: a tap record was lost");
			continue;
		}
		tab = tapflow_cut(m->tf, t, drops);
		/* the device went away (the domain stopped): the capture ended, it did not fail */
		ts.state = tapflow_failed(m->tf) && if_nametoindex(m->name) ? VN_HOST_TAP_FAILED
									    : VN_HOST_TAP_OK;
		for (unsigned dir = 0; dir < VN_HOST_FLOW_NDIR; dir++) {
			ts.packets[dir] = tab->packets[dir];
			ts.bytes[dir] = tab->bytes[dir];
			ts.dropped[dir] = drops[dir];
			ts.overflow[dir] = tab->other[dir].packets;
		}
		ts.truncated = tab->truncated;
		ts.flows = tab->n;
		if (!cut_flows(m, tab, dom, start, t, out))
			log_warn("out of memory: flow records were lost");
		if (out->tap(out->ctx, &ts))
			log_warn("out of memory: a tap record was lost");
		if (tapflow_failed(m->tf)) {
			tapflow_close(m->tf);
			m->tf = NULL;
			m->retry_ns = t + TAPSET_RETRY_NS;
		}
	}
}
