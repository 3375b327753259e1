/* SPDX-License-Identifier: MIT */
/*
 * live: the live engine of vnoise-host (see live.h). One main thread does everything but libvirt's
 * event loop: every tick (50 ms) it drains the dispatch log and handles lifecycle events and reconnection;
 * with --guest it also reads the channels and matches every GUEST_TICK_NS in between (those ticks do nothing
 * else); every period it reads the counters, emits one vn_host_period per vCPU and hands the period to the
 * sinks.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <libvirt/virterror.h>
#include "schedlog/schedlog_loader.h"
#include "cli/exitcode.h"
#include "engine/hostagg.h"
#include "engine/hostbind.h"
#include "util/progress.h"
#include "util/log.h"
#include "engine/live.h"
#include "match/guestchan.h"
#include "match/regionguard.h"
#include "match/taskclass.h"
#include "dtl.h"
#include "record.h"
#include "procfs/procstat.h"
#include "libvirt/session.h"
#include "net/tapset.h"
#include "libvirt/vmap.h"
#include "util/bufout.h"
#include "util/monotime.h"
#include "util/outfile.h"
#include "util/version.h"

/* on the clock-exchange grid: every domain's channel exchanges once per grid point (dispatch trace log) */
#define TICK_NS VN_SHM_CLOCK_GRID_NS
#define GUEST_TICK_NS 5000000ULL /* --guest: read the channels and match this often (latency) */
/* --guest, a bell rang: the round waits this long, so that the dispatch log's horizon (SCHEDLOG_REORDER_NS
 * behind now) has passed the gap the guest just published and one round matches it */
#define BELL_SETTLE_NS (SCHEDLOG_REORDER_NS + 500000ULL)
/* BELL_HOT_RINGS rings within BELL_HOT_RINGS x BELL_HOT_NS: the guest's gaps come faster than a wake-up per
 * ring pays for (two wake-ups: the ring, the settle); the short round, bells unarmed, for BELL_HOT_HOLD_NS */
#define BELL_HOT_RINGS 8u
#define BELL_HOT_NS 10000000ULL
#define BELL_HOT_HOLD_NS 200000000ULL
#define BACKOFF_MIN_NS 250000000ULL
#define BACKOFF_MAX_NS 5000000000ULL
#define MAX_SLOTS SCHEDLOG_MAX_SLOTS

/* Per vCPU, what the dispatch log added during the current period. */
struct pacc {
	uint64_t out_ns, out_periods, out_r_ns, out_s_ns, idle_ns, wait_ns;
	uint32_t cpu;
};

struct mdom {
	bool used; /* this index is bound to a domain (by UUID) */
	bool running; /* mapped and being monitored */
	bool pending; /* started but its threads were not found yet: retry */
	uint64_t pending_since_ns;
	struct vmap_dom m;
	struct vmap_vcpu_ctr base[VN_HOST_MAX_VCPUS]; /* counters at the last period end */
	struct vmap_vcpu_ctr now[VN_HOST_MAX_VCPUS]; /* counters read at this period end */
	struct pacc acc[VN_HOST_MAX_VCPUS];
	int slot[VN_HOST_MAX_VCPUS]; /* dispatch slot, -1 none */
	uint64_t map_ns; /* when it was (re)mapped: its next period is partial */
	bool gone_in_period; /* stopped during the current period */
	struct guestchan *gc; /* the domain's channel: DTL, clock, --guest matching (NULL: none) */
	uint64_t region_refused, region_lost; /* of the domain's closed channels (chan_close) */
	struct tapset *taps; /* --flows: the captures on its tap devices (NULL: none) */
};

struct vec {
	void *p;
	size_t n, cap, esz;
};

/* A sink: its ops and their context (owned). */
struct sink {
	const struct live_sink_ops *ops;
	void *ctx;
};

struct live {
	const struct host_params *p;
	struct sess *s;
	struct schedlog *dl;
	struct hostagg *total, *cur;
	struct sink sinks[LIVE_MAX_SINKS];
	int nsinks;
	struct mdom dom[VN_HOST_MAX_DOMAINS];
	struct {
		int dom;
		uint32_t vcpu;
	} slots[MAX_SLOTS];
	struct vec outs, runs, aggs;
	/* --flows: the period's vn_host_flow and vn_host_tap records */
	struct vec flows, tapstats;
	struct procstat_irqnames *irqnames; /* host /proc/interrupts, read once */
	struct taskclass *tc; /* DTL cause classes of host tasks (every domain's vCPU threads) */
	uint64_t start_ns, period_start_ns;
	uint64_t rounds; /* ticks run (the monitor's wake-ups) */
	uint64_t backoff_ns, next_retry_ns;
	bool lost_logged;
	uint64_t drops_seen;
	char prog_names[SCHEDLOG_MAX_PROGS][BPFUTIL_NAME_LEN];
	uint64_t prog_cnt[SCHEDLOG_MAX_PROGS], prog_ns[SCHEDLOG_MAX_PROGS];
	char domtext[16384];
	struct hostinfo_dtl
	    dtl[VN_HOST_MAX_DOMAINS]; /* the views' copy of the channels' DTL figures */
	struct progress *prog; /* record -d on a terminal */
	uint64_t period_ns; /* --period, or what a sink asked for (the screen's keys) */
	int stopped; /* a -s/-S hit that its chain did not continue: the run ends, exit 3 */
	int hit_dom; /* the hit being acted on: its domain (for trace) */
	uint64_t nhits, nchains;
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static int vec_push(struct vec *v, const void *e)
{
	if (v->n == v->cap) {
		size_t nc = v->cap ? v->cap * 2 : 256;
		void *np = realloc(v->p, nc * v->esz);

		if (!np)
			return -ENOMEM;
		v->p = np;
		v->cap = nc;
	}
	memcpy((char *)v->p + v->n * v->esz, e, v->esz);
	v->n++;
	return 0;
}

/* A record chunk to the sinks that take them (nothing empty). */
static void emit_chunk(struct live *mo, uint16_t type, const void *pl, size_t len)
{
	if (!len)
		return;
	for (int k = 0; k < mo->nsinks; k++)
		if (mo->sinks[k].ops->chunk)
			mo->sinks[k].ops->chunk(mo->sinks[k].ctx, type, pl, len);
}

/* ---- slots: dispatch slot <-> (domain, vCPU) ---- */

static int slot_alloc(struct live *mo, int dom, uint32_t vcpu)
{
	int i;

	for (i = 0; i < MAX_SLOTS; i++)
		if (mo->slots[i].dom < 0) {
			mo->slots[i].dom = dom;
			mo->slots[i].vcpu = vcpu;
			return i;
		}
	return -ENOSPC;
}

/* ---- dispatch log records -> per-period buffers, engine ---- */

static void on_out(void *ctx, const struct outlog_out *o)
{
	struct live *mo = ctx;
	struct vn_host_out r = { 0 };
	struct pacc *a;
	uint64_t len;

	if (o->slot >= MAX_SLOTS || mo->slots[o->slot].dom < 0)
		return;
	r.start_ns = o->start_ns;
	r.end_ns = o->end_ns;
	r.wake_ns = o->wake_ns;
	r.dom = (uint32_t)mo->slots[o->slot].dom;
	r.vcpu = mo->slots[o->slot].vcpu;
	r.cpu = o->cpu;
	r.state = o->state;
	r.flags =
	    (uint8_t)((o->split ? VN_HOST_OUT_F_SPLIT : 0) | (o->cont ? VN_HOST_OUT_F_CONT : 0) |
		      (o->guessed ? VN_HOST_OUT_F_GUESSED : 0));
	len = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
	a = &mo->dom[r.dom].acc[r.vcpu];
	a->out_ns += len;
	if (!o->cont)
		a->out_periods++;
	if (r.state == 'R')
		a->out_r_ns += len;
	else
		a->out_s_ns += len;
	a->wait_ns += o->run_delay_ns;
	a->cpu = r.cpu;
	if (mo->dom[r.dom].gc)
		guestchan_host_out(mo->dom[r.dom].gc, r.vcpu, r.start_ns, r.end_ns, (char)r.state,
				   r.wake_ns, r.flags);
	if (vec_push(&mo->outs, &r))
		log_warn("out of memory: an out interval was not recorded");
}

static void on_run(void *ctx, const struct outlog_run *o)
{
	struct live *mo = ctx;
	struct vn_host_run r = { 0 };

	if (o->slot >= MAX_SLOTS || mo->slots[o->slot].dom < 0)
		return;
	r.start_ns = o->start_ns;
	r.end_ns = o->end_ns;
	r.out_start_ns = o->out_start_ns;
	r.dom = (uint32_t)mo->slots[o->slot].dom;
	r.vcpu = mo->slots[o->slot].vcpu;
	r.pid = o->pid;
	r.cpu = o->cpu;
	r.flags = o->halted ? VN_HOST_RUN_F_HALTED : 0;
	memcpy(r.comm, o->comm, VN_HOST_COMM_LEN);
	if (mo->dom[r.dom].gc)
		guestchan_host_run(mo->dom[r.dom].gc, r.vcpu, r.start_ns, r.end_ns, r.pid, o->comm,
				   o->idle);
	if (o->idle)
		mo->dom[r.dom].acc[r.vcpu].idle_ns +=
		    r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
	if (vec_push(&mo->runs, &r))
		log_warn("out of memory: a run segment was not recorded");
}

/* ---- domains ---- */

static int dom_find(struct live *mo, const char *uuid)
{
	int i;

	for (i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++)
		if (mo->dom[i].used && !strcmp(mo->dom[i].m.uuid, uuid))
			return i;
	return -1;
}

static int dom_new(struct live *mo, const char *uuid, const char *name)
{
	int i;

	for (i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++)
		if (!mo->dom[i].used) {
			memset(&mo->dom[i], 0, sizeof(mo->dom[i]));
			mo->dom[i].used = true;
			snprintf(mo->dom[i].m.uuid, sizeof(mo->dom[i].m.uuid), "%s", uuid);
			snprintf(mo->dom[i].m.name, sizeof(mo->dom[i].m.name), "%s", name);
			for (uint32_t v = 0; v < VN_HOST_MAX_VCPUS; v++)
				mo->dom[i].slot[v] = -1;
			return i;
		}
	log_warn("more than %u domains: %s is not monitored", VN_HOST_MAX_DOMAINS, name);
	return -1;
}

static void dom_binding(struct live *mo, int i, const char *event, uint64_t t)
{
	struct mdom *d = &mo->dom[i];
	int n = hostbind_text(mo->domtext, sizeof(mo->domtext), (uint32_t)i, &d->m, event, t);

	if (n < 0) {
		log_warn("domain %s: binding text too long", d->m.name);
		return;
	}
	if (hostbind_apply(mo->total, mo->domtext, (size_t)n) ||
	    hostbind_apply(mo->cur, mo->domtext, (size_t)n))
		log_warn("domain %s: cannot bind it in the views", d->m.name);
	emit_chunk(mo, VN_CHUNK_HOST_DOMAIN, mo->domtext, (size_t)n);
}

static void read_counters(struct live *mo, const int *idx, int n, struct vmap_vcpu_ctr *const *out);
static void name_irq(struct live *mo, uint32_t irq);

/* ---- --flows: the domains' captures (net/tapset) ---- */

static int take_flow(void *ctx, const struct vn_host_flow *f)
{
	struct live *mo = ctx;

	return vec_push(&mo->flows, f);
}

static int take_tap(void *ctx, const struct vn_host_tap *t)
{
	struct live *mo = ctx;

	return vec_push(&mo->tapstats, t);
}

/* The period [start, t) of domain i's captures into the period's flow and tap records. */
static void taps_cut(struct live *mo, int i, uint64_t start, uint64_t t)
{
	const struct tapset_out out = { .flow = take_flow, .tap = take_tap, .ctx = mo };

	tapset_cut(mo->dom[i].taps, (uint32_t)i, start, t, &out);
}

static void taps_close(struct mdom *d)
{
	tapset_close(d->taps);
	d->taps = NULL;
}

/* Every tick: the captures of every domain read up to t, failed ones of running domains reopened. */
static void taps_poll(struct live *mo, uint64_t t)
{
	for (int i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++)
		if (mo->dom[i].taps)
			tapset_poll(mo->dom[i].taps, mo->dom[i].running, t);
}

/* Close the domain's channel; its region counters stay with the domain. */
static void chan_close(struct mdom *d)
{
	struct guestchan_region_info ri;

	if (!d->gc)
		return;
	guestchan_region_info(d->gc, &ri);
	d->region_refused += ri.refused;
	d->region_lost += ri.lost;
	guestchan_close(d->gc);
	d->gc = NULL;
}

/*
 * Map the domain's channel: its dispatch trace log is published whether or not --guest reads the guest side
 * (a domain without one is shown from the host side only; without --guest that is only a debug line).
 */
static void chan_open(struct live *mo, struct mdom *d, uint32_t i)
{
	struct guestchan_opts o = { .match = mo->p->guest,
				    .dispatch = mo->dl != NULL,
				    .detail = (uint32_t)mo->p->dtl_detail,
				    .period_ns = mo->p->period_ns,
				    .tc = mo->tc,
				    .budget_bytes = mo->p->guest_budget };
	struct guestchan_region_info ri;
	char why[256];

	chan_close(d);
	if (!d->m.shmem[0]) {
		if (mo->p->guest)
			log_warn(
			    "domain %s has no ivshmem device: no guest channel, host view only",
			    d->m.name);
		else
			log_debug("domain %s has no ivshmem device: no dispatch trace log",
				  d->m.name);
		return;
	}
	d->gc = guestchan_open(d->m.shmem, i, d->m.nvcpus, &o, why, sizeof(why));
	if (!d->gc && mo->p->guest)
		log_warn("domain %s: guest channel: %s: host view only", d->m.name, why);
	else if (!d->gc)
		log_warn("domain %s: no dispatch trace log: %s", d->m.name, why);
	else {
		guestchan_set_tids(d->gc, d->m.tids, d->m.nvcpus);
		if (mo->p->guest)
			guestchan_set_bell(d->gc, d->m.bell);
		guestchan_region_info(d->gc, &ri);
		if (ri.state == GUESTCHAN_REGION_MAPPED) /* refused: the channel said why */
			log_info("domain %s: guest channel /dev/shm/%s%s", d->m.name, d->m.shmem,
				 mo->p->guest ? "" : " (dispatch trace log)");
	}
}

/* Map a running domain and start monitoring it. Returns 0, or -errno (-ENOENT: threads not there yet). */

static int dom_attach(struct live *mo, int i, virDomainPtr dom, const char *event)
{
	struct mdom *d = &mo->dom[i];
	char msg[256];
	uint32_t v;
	int rc;

	if (d->taps) {
		/* the taps of an earlier run of the domain that stopped in this period: its last
		 * counts, then closed (the new run may have other tap names) */
		uint64_t t = now_ns();

		taps_cut(mo, i, mo->period_start_ns > d->map_ns ? mo->period_start_ns : d->map_ns,
			 t);
		taps_close(d);
	}
	rc = vmap_map(dom, mo->p->qmp, &d->m, msg, sizeof(msg));
	if (rc)
		return rc == -ENOENT || rc == -ESRCH ? -ENOENT : (log_warn("%s", msg), rc);
	d->running = true;
	d->pending = false;
	d->map_ns = now_ns();
	memset(d->acc, 0, sizeof(d->acc));
	for (v = 0; v < d->m.nvcpus; v++) {
		d->acc[v].cpu = ~0u;
		if (!mo->dl || !d->m.tids[v])
			continue;
		if (d->slot[v] < 0)
			d->slot[v] = slot_alloc(mo, i, v);
		if (d->slot[v] < 0) {
			log_warn("domain %s vCPU %u: no dispatch slot left", d->m.name, v);
			continue;
		}
		rc = schedlog_add(mo->dl, d->m.tids[v], (uint32_t)d->slot[v]);
		if (rc)
			log_warn("domain %s vCPU %u: dispatch log: %s", d->m.name, v,
				 strerror(-rc));
	}
	{
		struct vmap_vcpu_ctr *base = d->base;

		read_counters(mo, &i, 1, &base);
	}
	dom_binding(mo, i, event, d->map_ns);
	log_info("monitoring %s: %u vCPUs, qemu pid %d, %s (%s)", d->m.name, d->m.nvcpus,
		 (int)d->m.qemu_pid, d->m.virt, d->m.tid_source);
	if (mo->tc &&
	    taskclass_set_domain(mo->tc, (uint32_t)i, d->m.qemu_pid, d->m.tids, d->m.nvcpus))
		log_warn("domain %s: out of memory: its vCPUs are not told apart as causes",
			 d->m.name);
	if (mo->p->cmd != HCMD_LIST)
		chan_open(mo, d, (uint32_t)i);
	if (mo->p->flows && mo->p->cmd != HCMD_LIST) {
		d->taps = tapset_open(d->m.name, d->m.taps, d->map_ns);
		if (!d->taps)
			log_warn("domain %s: out of memory: no flows", d->m.name);
	}
	return 0;
}

static void dom_detach(struct live *mo, int i, const char *event)
{
	struct mdom *d = &mo->dom[i];
	uint32_t v;

	if (!d->running)
		return;
	for (v = 0; v < d->m.nvcpus; v++)
		if (mo->dl && d->m.tids[v] && d->slot[v] >= 0)
			(void)schedlog_del(mo->dl, d->m.tids[v]);
	d->running = false;
	d->gone_in_period = true;
	if (mo->tc)
		taskclass_del_domain(mo->tc, (uint32_t)i);
	dom_binding(mo, i, event, now_ns());
	log_info("domain %s %s", d->m.name, event);
}

/* Whether a domain of that name is to be monitored. */
static bool wanted(const struct live *mo, const char *name)
{
	int i;

	if (!mo->p->ndomains)
		return true;
	for (i = 0; i < mo->p->ndomains; i++)
		if (!strcmp(mo->p->domains[i], name))
			return true;
	return false;
}

static void dom_start_by_ptr(struct live *mo, virDomainPtr dom, const char *event)
{
	char uuid[VIR_UUID_STRING_BUFLEN];
	const char *name = virDomainGetName(dom);
	int i, rc;

	if (!name || virDomainGetUUIDString(dom, uuid) < 0 || !wanted(mo, name))
		return;
	i = dom_find(mo, uuid);
	if (i < 0)
		i = dom_new(mo, uuid, name);
	if (i < 0)
		return;
	if (mo->dom[i].running)
		dom_detach(mo, i, "stopped");
	rc = dom_attach(mo, i, dom, event);
	if (rc == -ENOENT && !mo->dom[i].pending) {
		mo->dom[i].pending = true;
		mo->dom[i].pending_since_ns = now_ns();
	}
}

/* Retry domains whose threads were not there yet (QEMU names them as it creates them). */
static void retry_pending(struct live *mo)
{
	virConnectPtr c = session_conn(mo->s);
	int i;

	if (!c)
		return;
	for (i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++) {
		struct mdom *d = &mo->dom[i];
		virDomainPtr dom;

		if (!d->used || !d->pending)
			continue;
		dom = virDomainLookupByUUIDString(c, d->m.uuid);
		if (!dom) {
			d->pending = false;
			continue;
		}
		if (dom_attach(mo, i, dom, "started") == -ENOENT &&
		    now_ns() - d->pending_since_ns > 10000000000ULL) {
			log_warn("domain %s: vCPU threads not found after 10 s; not monitored",
				 d->m.name);
			d->pending = false;
		}
		virDomainFree(dom);
	}
}

/* Attach every wanted running domain not yet monitored (start, and after a reconnect). */
static int scan_domains(struct live *mo, const char *event)
{
	virConnectPtr c = session_conn(mo->s);
	virDomainPtr *doms = NULL;
	int n, i;

	if (!c)
		return -ENOTCONN;
	n = virConnectListAllDomains(c, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0)
		return -EIO;
	/* domains we follow that are no longer active stopped while we could not hear it */
	for (int k = 0; k < (int)VN_HOST_MAX_DOMAINS; k++) {
		bool active = false;

		if (!mo->dom[k].used || !mo->dom[k].running)
			continue;
		for (i = 0; i < n && !active; i++) {
			char uuid[VIR_UUID_STRING_BUFLEN];

			active = virDomainGetUUIDString(doms[i], uuid) == 0 &&
				 !strcmp(uuid, mo->dom[k].m.uuid);
		}
		if (!active)
			dom_detach(mo, k, "stopped");
	}
	for (i = 0; i < n; i++) {
		char uuid[VIR_UUID_STRING_BUFLEN];
		int k;

		if (virDomainGetUUIDString(doms[i], uuid) == 0) {
			k = dom_find(mo, uuid);
			if (k >= 0 && mo->dom[k].running) {
				/* still the same QEMU process? (libvirtd restarts leave QEMU running) */
				struct vmap_dom m;
				char msg[256];

				if (vmap_map(doms[i], mo->p->qmp, &m, msg, sizeof(msg)) == 0 &&
				    m.qemu_pid == mo->dom[k].m.qemu_pid) {
					dom_binding(mo, k, event, now_ns());
					virDomainFree(doms[i]);
					continue;
				}
				dom_detach(mo, k, "stopped");
			}
		}
		/* not followed yet, or another QEMU now: after a reconnect it started while we could not
		 * hear it (the views count a start and show it running) */
		dom_start_by_ptr(mo, doms[i], strcmp(event, "reconnected") ? event : "started");
		virDomainFree(doms[i]);
	}
	free(doms);
	return 0;
}

static void handle_events(struct live *mo)
{
	struct session_event ev[32];
	virConnectPtr c;
	int n, i, k;

	while ((n = session_take_events(mo->s, ev, 32)) > 0) {
		for (i = 0; i < n; i++) {
			k = dom_find(mo, ev[i].uuid);
			if (ev[i].type == SESSION_EV_STOPPED) {
				if (k >= 0) {
					mo->dom[k].pending = false;
					dom_detach(mo, k, "stopped");
				}
			} else if (ev[i].type == SESSION_EV_STARTED) {
				virDomainPtr dom;

				c = session_conn(mo->s);
				if (!c)
					continue;
				dom = virDomainLookupByUUIDString(c, ev[i].uuid);
				if (!dom)
					continue;
				dom_start_by_ptr(mo, dom, "started");
				virDomainFree(dom);
			}
		}
	}
}

static void handle_connection(struct live *mo, uint64_t t)
{
	if (!session_lost(mo->s))
		return;
	if (!mo->lost_logged) {
		log_warn("libvirt connection lost; reconnecting (the dispatch log goes on)");
		mo->lost_logged = true;
		mo->backoff_ns = BACKOFF_MIN_NS;
		mo->next_retry_ns = t;
	}
	if (t < mo->next_retry_ns)
		return;
	if (session_reconnect(mo->s)) {
		mo->next_retry_ns = t + mo->backoff_ns;
		mo->backoff_ns =
		    mo->backoff_ns * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : mo->backoff_ns * 2;
		return;
	}
	mo->lost_logged = false;
	log_info("libvirt connection re-established");
	if (scan_domains(mo, "reconnected"))
		log_warn("after reconnecting: cannot list domains: %s", session_last_error());
}

/* ---- counters and periods ---- */

/*
 * Counters of the domains idx[0..n-1] into out[k] (VN_HOST_MAX_VCPUS entries each): schedstat per vCPU, then
 * one libvirt call for all of them.
 */
static void read_counters(struct live *mo, const int *idx, int n, struct vmap_vcpu_ctr *const *out)
{
	const char *uuids[VN_HOST_MAX_DOMAINS];
	uint32_t nvcpus[VN_HOST_MAX_DOMAINS];
	virConnectPtr c = session_conn(mo->s);
	int k;

	for (k = 0; k < n; k++) {
		struct mdom *d = &mo->dom[idx[k]];
		uint32_t v;

		memset(out[k], 0, sizeof(*out[k]) * VN_HOST_MAX_VCPUS);
		for (v = 0; v < d->m.nvcpus; v++)
			if (d->m.tids[v])
				(void)vmap_schedstat(d->m.qemu_pid, d->m.tids[v], &out[k][v]);
		uuids[k] = d->m.uuid;
		nvcpus[k] = d->m.nvcpus;
	}
	if (c && n && vmap_libvirt_stats(c, uuids, nvcpus, out, n))
		log_debug("libvirt stats: %s", session_last_error());
}

/* Delta of one counter; the baseline only moves on a good read so a missed read is caught up later. */
static uint64_t delta(uint64_t now, uint64_t *base)
{
	uint64_t d = now >= *base ? now - *base : 0;

	*base = now;
	return d;
}

/* A record-array chunk of the period: into both engines (the one chunk table of hostagg) and the file. */
static void take_records(struct live *mo, uint16_t type, const void *recs, size_t len)
{
	(void)hostagg_feed_chunk(mo->total, type, recs, len);
	(void)hostagg_feed_chunk(mo->cur, type, recs, len);
	emit_chunk(mo, type, recs, len);
}

static void take_vec(struct live *mo, uint16_t type, const struct vec *v)
{
	take_records(mo, type, v->p, v->n * v->esz);
}

/* --guest: each channel's records of the period, into both engines and the file; the channels of domains
 * that stopped are closed. */
static void guest_period(struct live *mo, uint64_t t)
{
	struct vn_host_match ms[VN_HOST_MAX_VCPUS];
	static struct vn_host_worst worst[VN_HOST_MAX_VCPUS];
	static struct vn_host_msrc src[8192];
	struct vn_host_chan ch;
	const struct vn_host_mgap *gaps;
	size_t n;
	int i;

	for (i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++) {
		struct mdom *d = &mo->dom[i];

		if (!d->gc)
			continue;
		if (mo->p->guest) {
			n = guestchan_worst(d->gc, worst, VN_HOST_MAX_VCPUS);
			if (n)
				take_records(mo, VN_CHUNK_HOST_WORST, worst, n * sizeof(worst[0]));
			n = sizeof(src) / sizeof(src[0]);
			guestchan_period(d->gc, mo->period_start_ns, t, ms, src, &n, &ch);
			take_records(mo, VN_CHUNK_HOST_MATCH, ms,
				     guestchan_nvcpus(d->gc) * sizeof(ms[0]));
			take_records(mo, VN_CHUNK_HOST_MSRC, src, n * sizeof(src[0]));
			take_records(mo, VN_CHUNK_HOST_CHAN, &ch, sizeof(ch));
			gaps = guestchan_gaps(d->gc, &n);
			if (n)
				take_records(mo, VN_CHUNK_HOST_MGAP, gaps, n * sizeof(gaps[0]));
		}
		if (!d->running)
			chan_close(d);
	}
}

/* Every channel's round at t against the dispatch log's horizon; each vCPU's out piece still open is
 * passed first (its gaps wait for it). */
static void tick_channels(struct live *mo, uint64_t t)
{
	const struct outlog *ol = mo->dl ? schedlog_outlog(mo->dl) : NULL;

	for (int s = 0; ol && s < MAX_SLOTS; s++)
		if (mo->slots[s].dom >= 0 && mo->dom[mo->slots[s].dom].gc)
			guestchan_host_open(mo->dom[mo->slots[s].dom].gc, mo->slots[s].vcpu,
					    outlog_open_since(ol, (uint32_t)s));
	for (int i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++)
		if (mo->dom[i].gc)
			guestchan_tick(mo->dom[i].gc, t, ol ? outlog_horizon(ol) : t);
}

/* The dispatch log up to t and the channels' matching of it, before the period's counters are cut. */
static void drain_sources(struct live *mo, uint64_t t)
{
	if (mo->dl) {
		if (schedlog_poll(mo->dl, t) < 0)
			log_warn("dispatch log: read error");
		schedlog_cut(mo->dl, t);
	}
	tick_channels(mo, t);
}

/* Every running domain's counters into its now[] (the others' are zeroed). */
static void read_period_counters(struct live *mo)
{
	struct vmap_vcpu_ctr *outs[VN_HOST_MAX_DOMAINS];
	int idx[VN_HOST_MAX_DOMAINS], nrun = 0;

	for (int i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++) {
		if (mo->dom[i].used && mo->dom[i].running) {
			idx[nrun] = i;
			outs[nrun++] = mo->dom[i].now;
		} else {
			memset(mo->dom[i].now, 0, sizeof(mo->dom[i].now));
		}
	}
	read_counters(mo, idx, nrun, outs);
}

/* The libvirt and schedstat deltas of a vCPU; a counter seen for the first time only sets its baseline. */
static void counter_deltas(const struct vmap_vcpu_ctr *now, struct vmap_vcpu_ctr *base,
			   struct vn_host_period *pr)
{
	if (now->lv_ok && base->lv_ok) {
		pr->steal_ns = delta(now->delay_ns, &base->delay_ns);
		pr->cpu_ns = delta(now->time_ns, &base->time_ns);
		pr->flags |= VN_HOST_PERIOD_F_LIBVIRT;
	} else if (now->lv_ok) {
		base->delay_ns = now->delay_ns;
		base->time_ns = now->time_ns;
		base->lv_ok = true;
	}
	if (now->ss_ok && base->ss_ok) {
		pr->exec_ns = delta(now->exec_ns, &base->exec_ns);
		pr->run_delay_ns = delta(now->run_delay_ns, &base->run_delay_ns);
		pr->pcount = delta(now->pcount, &base->pcount);
		pr->flags |= VN_HOST_PERIOD_F_SCHEDSTAT;
	} else if (now->ss_ok) {
		base->exec_ns = now->exec_ns;
		base->run_delay_ns = now->run_delay_ns;
		base->pcount = now->pcount;
		base->ss_ok = true;
	}
}

/* The dispatch log's IRQ / softirq / vector / exit aggregates of a vCPU's period, into mo->aggs. */
static void take_aggs(struct live *mo, struct mdom *d, int slot, const struct vn_host_period *pr)
{
	struct schedlog_agg ag[64];
	int na = schedlog_take_aggs(mo->dl, (uint32_t)slot, ag, 64);

	for (int j = 0; j < na; j++) {
		struct vn_host_agg g = {
			.start_ns = pr->start_ns,
			.end_ns = pr->end_ns,
			.dom = pr->dom,
			.vcpu = pr->vcpu,
			.kind = ag[j].kind,
			.isa = ag[j].isa,
			.id = ag[j].id,
			.count = ag[j].count,
			.total_ns = ag[j].total_ns,
			.max_ns = ag[j].max_ns,
		};

		if (vec_push(&mo->aggs, &g))
			log_warn("out of memory: aggregate lost");
		if (d->gc)
			guestchan_host_agg(d->gc, pr->vcpu, g.kind, g.isa, g.id, g.count,
					   g.total_ns);
	}
}

/* The period record of vCPU v of domain i, ending at t; its dispatch-log sums start again. */
static void vcpu_period(struct live *mo, int i, uint32_t v, uint64_t t, struct vn_host_period *pr)
{
	struct mdom *d = &mo->dom[i];
	struct pacc *a = &d->acc[v];

	memset(pr, 0, sizeof(*pr));
	pr->start_ns = mo->period_start_ns > d->map_ns ? mo->period_start_ns : d->map_ns;
	pr->end_ns = t;
	pr->dom = (uint32_t)i;
	pr->vcpu = v;
	pr->tid = d->m.tids[v];
	pr->cpu = a->cpu;
	counter_deltas(&d->now[v], &d->base[v], pr);
	if (mo->dl && d->slot[v] >= 0) {
		pr->out_ns = a->out_ns;
		pr->out_periods = a->out_periods;
		pr->out_r_ns = a->out_r_ns;
		pr->out_s_ns = a->out_s_ns;
		pr->idle_ns = a->idle_ns;
		pr->wait_ns = a->wait_ns;
		pr->flags |= VN_HOST_PERIOD_F_SCHEDLOG;
		take_aggs(mo, d, d->slot[v], pr);
	}
	if (pr->start_ns != mo->period_start_ns || !d->running)
		pr->flags |= VN_HOST_PERIOD_F_PARTIAL;
	memset(a, 0, sizeof(*a));
	a->cpu = pr->cpu;
}

/* Domain i's period: a record per mapped vCPU into periods, its captures' flows; a stopped one is done. */
static void domain_period(struct live *mo, int i, uint64_t t, struct vec *periods)
{
	struct mdom *d = &mo->dom[i];

	if (!d->used || (!d->running && !d->gone_in_period))
		return;
	for (uint32_t v = 0; v < d->m.nvcpus; v++) {
		struct vn_host_period pr;

		if (!d->m.tids[v])
			continue;
		vcpu_period(mo, i, v, t, &pr);
		if (vec_push(periods, &pr))
			log_warn("out of memory: a period record was lost");
	}
	if (d->gc && mo->dl)
		guestchan_host_period(
		    d->gc, mo->period_start_ns > d->map_ns ? mo->period_start_ns : d->map_ns, t);
	if (d->taps) {
		taps_cut(mo, i, mo->period_start_ns > d->map_ns ? mo->period_start_ns : d->map_ns,
			 t);
		if (!d->running)
			taps_close(d);
	}
	d->gone_in_period = false;
	if (d->running)
		d->map_ns = 0;
}

/* Name the host IRQs of the period's aggregates seen for the first time (before the records go out, so
 * that a file names them before it uses them). */
static void name_new_irqs(struct live *mo)
{
	for (size_t k = 0; k < mo->aggs.n; k++) {
		const struct vn_host_agg *g = (const struct vn_host_agg *)mo->aggs.p + k;

		if (g->kind == VN_HOST_AGG_IRQ && !hostagg_irq_name(mo->total, g->id))
			name_irq(mo, g->id);
	}
}

/* End the period [period_start_ns, t): cut every source, build the period's records, feed the engines and
 * the file, start the next period. */
static void end_period(struct live *mo, uint64_t t)
{
	struct vec periods = { .esz = sizeof(struct vn_host_period) };

	drain_sources(mo, t);
	read_period_counters(mo);
	for (int i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++)
		domain_period(mo, i, t, &periods);
	name_new_irqs(mo);
	take_vec(mo, VN_CHUNK_HOST_PERIOD, &periods);
	take_vec(mo, VN_CHUNK_HOST_OUT, &mo->outs);
	take_vec(mo, VN_CHUNK_HOST_RUN, &mo->runs);
	take_vec(mo, VN_CHUNK_HOST_AGG, &mo->aggs);
	take_vec(mo, VN_CHUNK_HOST_FLOW, &mo->flows);
	take_vec(mo, VN_CHUNK_HOST_TAP, &mo->tapstats);
	guest_period(mo, t);
	free(periods.p);
	mo->outs.n = mo->runs.n = mo->aggs.n = mo->flows.n = mo->tapstats.n = 0;
	mo->period_start_ns = t;
}

/* Name a host IRQ seen for the first time: in both engines and, as irq.<n>=<name>, in the file. */
static void name_irq(struct live *mo, uint32_t irq)
{
	const char *n;
	char buf[64];
	int len;

	if (!mo->irqnames)
		mo->irqnames = procstat_irqnames_read();
	n = mo->irqnames ? procstat_irq_name(mo->irqnames, irq) : NULL;
	if (!n || hostagg_set_irq_name(mo->total, irq, n))
		return;
	(void)hostagg_set_irq_name(mo->cur, irq, n);
	len = snprintf(buf, sizeof(buf), "irq.%u=%.40s\n", irq, n);
	if (len > 0 && (size_t)len < sizeof(buf))
		emit_chunk(mo, VN_CHUNK_HOST_META, buf, (size_t)len);
}

/* The DTL publisher of every domain with a channel, for the views' "dtl" keys. */
static void fill_dtl(struct live *mo, struct hostinfo *in)
{
	static const char *const states[] = { [DTLCTL_ON] = "on",
					      [DTLCTL_V1] = "v1-agent",
					      [DTLCTL_BUSY] = "other-publisher",
					      [DTLCTL_FAILED] = "failed" };
	static const char *const regions[] = { [GUESTCHAN_REGION_MAPPED] = "mapped",
					       [GUESTCHAN_REGION_LOST] = "lost",
					       [GUESTCHAN_REGION_REFUSED] = "refused" };
	int n = 0;

	for (int i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++) {
		struct hostinfo_dtl *x = &mo->dtl[n];
		struct guestchan_region_info ri;
		struct dtlctl_info g;

		if (!mo->dom[i].gc)
			continue;
		guestchan_dtl_info(mo->dom[i].gc, &g);
		guestchan_region_info(mo->dom[i].gc, &ri);
		snprintf(x->name, sizeof(x->name), "%s", mo->dom[i].m.name);
		x->state = g.state <= DTLCTL_FAILED ? states[g.state] : "?";
		x->region = ri.state <= GUESTCHAN_REGION_REFUSED ? regions[ri.state] : "?";
		if (ri.state != GUESTCHAN_REGION_MAPPED)
			x->state = x->region; /* nothing published: the region is why */
		snprintf(x->region_why, sizeof(x->region_why), "%s", ri.why);
		x->region_refused = mo->dom[i].region_refused + ri.refused;
		x->region_lost = mo->dom[i].region_lost + ri.lost;
		x->detail = g.detail == VN_DTL_DETAIL_TASK ? "task" : "class";
		x->published = g.published;
		x->dropped = g.dropped;
		x->bell = NULL;
		if (mo->p->guest) {
			static const char *const bells[] = { [CHANBELL_NONE] = "none",
							     [CHANBELL_UNCONNECTED] = "unconnected",
							     [CHANBELL_SILENT] = "silent",
							     [CHANBELL_HEARD] = "heard" };
			struct chanbell_info b;

			guestchan_bell_info(mo->dom[i].gc, &b);
			x->bell = b.state <= CHANBELL_HEARD ? bells[b.state] : "?";
			x->bell_rings = b.rings;
			x->bell_arms = b.arms;
		}
		n++;
	}
	in->dtl = mo->dtl;
	in->ndtl = n;
}

static void fill_info(struct live *mo, struct hostinfo *in, uint64_t start, uint64_t end)
{
	memset(in, 0, sizeof(*in));
	in->source = "live";
	in->cmd = mo->p->cmd == HCMD_TOP ? "top" : mo->p->cmd == HCMD_SERVE ? "serve" : "record";
	in->start_ns = start;
	in->end_ns = end;
	in->period_ns = mo->p->period_ns;
	in->dispatch = mo->dl ? "bpf" : "off";
	in->irqs = mo->dl && !mo->p->no_irqs;
	in->kvm = mo->dl && schedlog_kvm_attached(mo->dl);
	in->top_n = mo->p->top_n;
	in->flows_top = mo->p->flows_top;
	in->wide = mo->p->wide;
	in->nself = hostinfo_self_tids(in->self_tids, HOSTINFO_MAX_SELF);
	in->events_dropped = session_events_dropped(mo->s);
	in->reconnects = session_reconnects(mo->s);
	fill_dtl(mo, in);
	in->rounds = mo->rounds;
	{
		struct rusage ru;

		if (!getrusage(RUSAGE_SELF, &ru))
			in->self_cpu_ns =
			    (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
			    (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL;
	}
	if (mo->dl) {
		struct schedlog_stats st;

		schedlog_get_stats(mo->dl, &st);
		in->schedlog_drops = st.dropped;
		in->schedlog_anomalies = st.anomalies;
		in->bpf_events = st.bpf_events;
		in->bpf_run_ns = st.bpf_run_ns;
		for (int k = 0; k < st.nprogs && k < SCHEDLOG_MAX_PROGS; k++) {
			memcpy(mo->prog_names[k], st.progs[k].name, sizeof(mo->prog_names[k]));
			mo->prog_names[k][sizeof(mo->prog_names[k]) - 1] = 0;
			mo->prog_cnt[k] = st.progs[k].run_cnt;
			mo->prog_ns[k] = st.progs[k].run_time_ns;
		}
		in->nprogs = st.nprogs < SCHEDLOG_MAX_PROGS ? st.nprogs : SCHEDLOG_MAX_PROGS;
		in->prog_names = (const char(*)[40])mo->prog_names;
		in->prog_cnt = mo->prog_cnt;
		in->prog_ns = mo->prog_ns;
	}
}

/* The STATS and END text: the run's loss and overhead counters, and vnoise-host's own thread ids
 * (self_tids=1,2,3: the views of the file label them). Returns its length or -ENOSPC. */
static int stats_text(const struct hostinfo *in, uint64_t t, char *buf, size_t len)
{
	struct bufout o = { .buf = buf, .len = len };

	bufout_put(&o,
		   "end_ns=%" PRIu64 "\ndispatch_dropped=%" PRIu64 "\ndispatch_anomalies=%" PRIu64
		   "\nevents_dropped=%" PRIu64 "\nreconnects=%u\nbpf_events=%" PRIu64
		   "\nbpf_run_ns=%" PRIu64 "\nself_tids=",
		   t, in->schedlog_drops, in->schedlog_anomalies, in->events_dropped,
		   in->reconnects, in->bpf_events, in->bpf_run_ns);
	for (int i = 0; i < in->nself; i++)
		bufout_put(&o, "%s%u", i ? "," : "", in->self_tids[i]);
	bufout_put(&o, "\n");
	/* dtl.K=STATE DETAIL PUBLISHED DROPPED NAME: the domains' DTL publishers (hostrec reads them) */
	for (int i = 0; i < in->ndtl; i++)
		bufout_put(&o, "dtl.%d=%s %s %" PRIu64 " %" PRIu64 " %s\n", i, in->dtl[i].state,
			   in->dtl[i].detail, in->dtl[i].published, in->dtl[i].dropped,
			   in->dtl[i].name);
	/* bell.K=STATE RINGS ARMS NAME: --guest, the domains' bells; rounds=N: the monitor's wake-ups */
	for (int i = 0; i < in->ndtl; i++)
		if (in->dtl[i].bell)
			bufout_put(&o, "bell.%d=%s %" PRIu64 " %" PRIu64 " %s\n", i,
				   in->dtl[i].bell, in->dtl[i].bell_rings, in->dtl[i].bell_arms,
				   in->dtl[i].name);
	/* region.K=STATE REFUSED LOST NAMELEN NAME[ WHY]: the domains' region files (NAMELEN: the name's bytes) */
	for (int i = 0; i < in->ndtl; i++)
		if (in->dtl[i].region)
			bufout_put(&o, "region.%d=%s %" PRIu64 " %" PRIu64 " %zu %s%s%s\n", i,
				   in->dtl[i].region, in->dtl[i].region_refused,
				   in->dtl[i].region_lost, strlen(in->dtl[i].name), in->dtl[i].name,
				   in->dtl[i].region_why[0] ? " " : "", in->dtl[i].region_why);
	bufout_put(&o, "rounds=%" PRIu64 "\n", in->rounds);
	return bufout_result(&o);
}

static void write_stats(struct live *mo, uint16_t type, uint64_t t)
{
	struct hostinfo in;
	char buf[1536 + VN_HOST_MAX_DOMAINS * 720];
	int n;

	fill_info(mo, &in, mo->start_ns, t);
	n = stats_text(&in, t, buf, sizeof(buf));
	if (n < 0) {
		log_warn("statistics text too long: not recorded");
		n = snprintf(buf, sizeof(buf), "end_ns=%" PRIu64 "\n", t);
	}
	emit_chunk(mo, type, buf, (size_t)n);
}

/* The end of the period [start, t) for the sinks that show periods (the facts are gathered only for them). */
static void show_period(struct live *mo, uint64_t start, uint64_t t)
{
	struct hostinfo in;
	int k;

	for (k = 0; k < mo->nsinks && !mo->sinks[k].ops->period; k++)
		;
	if (k == mo->nsinks)
		return;
	fill_info(mo, &in, start, t);
	for (k = 0; k < mo->nsinks; k++)
		if (mo->sinks[k].ops->period)
			mo->sinks[k].ops->period(mo->sinks[k].ctx, mo->cur, &in);
}

/* The run's META text (the first chunk of a record file) into buf; returns its length. */
static size_t meta_text(const struct live *mo, char *buf, size_t len)
{
	struct utsname u;
	int n;

	uname(&u);
	n = snprintf(buf, len,
		     "tool=vnoise-host\nversion=%s\nformat=vnoise.host-record/1\nself_pid=%d\n"
		     "start_ns=%" PRIu64 "\nperiod_ns=%" PRIu64
		     "\ndispatch=%s\nirqs=%d\nkvm=%d\nhostname=%s\nkernel=%s\n"
		     "uri=%s\n",
		     version_string(), (int)getpid(), mo->start_ns, mo->p->period_ns,
		     mo->dl ? "bpf" : "off", mo->dl && !mo->p->no_irqs,
		     mo->dl && schedlog_kvm_attached(mo->dl), u.nodename, u.release,
		     mo->p->uri ? mo->p->uri : "qemu:///system");
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

static int check_domains(struct live *mo)
{
	virConnectPtr c = session_conn(mo->s);
	int i;

	for (i = 0; i < mo->p->ndomains; i++) {
		virDomainPtr dom = virDomainLookupByName(c, mo->p->domains[i]);

		if (!dom) {
			virErrorPtr e = virGetLastError();

			if (e && e->code == VIR_ERR_NO_DOMAIN) {
				log_err("domain '%s' not found at %s", mo->p->domains[i],
					mo->p->uri ? mo->p->uri : "qemu:///system");
				return EXIT_NODOMAIN;
			}
			log_err("domain '%s': %s", mo->p->domains[i], session_last_error());
			return EXIT_FAIL;
		}
		if (virDomainIsActive(dom) != 1)
			log_info("domain '%s' is not running: waiting for it to start",
				 mo->p->domains[i]);
		virDomainFree(dom);
	}
	return EXIT_OK;
}

struct live *live_new(const struct host_params *p)
{
	struct live *mo = calloc(1, sizeof(*mo));

	if (!mo)
		return NULL;
	mo->p = p;
	mo->period_ns = p->period_ns;
	mo->outs.esz = sizeof(struct vn_host_out);
	mo->runs.esz = sizeof(struct vn_host_run);
	mo->aggs.esz = sizeof(struct vn_host_agg);
	mo->flows.esz = sizeof(struct vn_host_flow);
	mo->tapstats.esz = sizeof(struct vn_host_tap);
	for (int i = 0; i < MAX_SLOTS; i++)
		mo->slots[i].dom = -1;
	return mo;
}

int live_add_sink(struct live *lv, const struct live_sink_ops *ops, void *ctx)
{
	if (lv->nsinks == LIVE_MAX_SINKS) {
		if (ops->close)
			ops->close(ctx);
		return -ENOSPC;
	}
	lv->sinks[lv->nsinks++] = (struct sink){ .ops = ops, .ctx = ctx };
	return 0;
}

void live_free(struct live *mo)
{
	if (!mo)
		return;
	/* the screen first (added last): messages below must be readable */
	for (int k = mo->nsinks - 1; k >= 0; k--)
		if (mo->sinks[k].ops->close)
			mo->sinks[k].ops->close(mo->sinks[k].ctx);
	progress_end(mo->prog);
	schedlog_close(mo->dl);
	session_close(mo->s);
	hostagg_free(mo->total);
	hostagg_free(mo->cur);
	procstat_irqnames_free(mo->irqnames);
	taskclass_free(mo->tc);
	free(mo->outs.p);
	free(mo->runs.p);
	free(mo->aggs.p);
	free(mo->flows.p);
	free(mo->tapstats.p);
	for (int i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++) {
		chan_close(&mo->dom[i]);
		taps_close(&mo->dom[i]);
	}
	free(mo);
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Connect to libvirt. Returns EXIT_OK or the exit code of the failure (logged). */
static int open_session(struct live *mo)
{
	const char *uri = mo->p->uri ? mo->p->uri : "qemu:///system";
	enum session_fail why;
	char msg[512];

	mo->s = session_open(mo->p->uri, &why, msg, sizeof(msg));
	if (mo->s)
		return EXIT_OK;
	if (why == SESSION_DENIED) {
		log_err("no permission to use libvirt at %s: %s", uri, msg);
		return EXIT_CANNOT;
	}
	if (why == SESSION_UNREACHABLE) {
		log_err("libvirt unreachable at %s: %s", uri, msg);
		return EXIT_UNREACHABLE;
	}
	log_err("cannot connect to libvirt at %s: %s", uri, msg);
	return EXIT_FAIL;
}

/* Start host tracing (the dispatch log). Returns EXIT_OK or the exit code of the failure (logged). */
static int open_dispatch(struct live *mo)
{
	struct schedlog_opts o = { .want_irqs = !mo->p->no_irqs, .want_kvm = true };
	char msg[512];

	if (geteuid() != 0) {
		log_err("host tracing (the dispatch log) needs root; run as root or use "
			"--no-dispatch");
		return EXIT_CANNOT;
	}
	mo->dl = schedlog_open(&o, msg, sizeof(msg));
	if (!mo->dl) {
		log_err("cannot start the dispatch log: %s", msg);
		return errno == EPERM || errno == EACCES ? EXIT_CANNOT : EXIT_FAIL;
	}
	outlog_set_callbacks(schedlog_outlog(mo->dl), on_out, on_run, mo);
	return EXIT_OK;
}

/* The sinks' open, with the run's META text; the first failure ends it. Returns EXIT_OK or its exit code. */
static int open_sinks(struct live *mo)
{
	char meta[1024];
	size_t n = meta_text(mo, meta, sizeof(meta));
	int ret = EXIT_OK;

	for (int k = 0; k < mo->nsinks && !ret; k++)
		if (mo->sinks[k].ops->open)
			ret = mo->sinks[k].ops->open(mo->sinks[k].ctx, meta, n);
	return ret;
}

/* Everything a run needs, in order: libvirt, the named domains, the engines, host tracing, the sinks (the
 * record file), then the running domains mapped. Returns EXIT_OK or the exit code of the failure (logged). */
static int live_setup(struct live *mo)
{
	const struct host_params *p = mo->p;
	int ret;

	ret = open_session(mo);
	if (!ret)
		ret = check_domains(mo);
	if (ret)
		return ret;
	if (p->flows && p->cmd != HCMD_LIST && geteuid() != 0) {
		log_err("--flows captures on the domains' tap devices and needs root");
		return EXIT_CANNOT;
	}
	mo->total = hostagg_new();
	mo->cur = hostagg_new();
	mo->tc = p->cmd != HCMD_LIST ? taskclass_new(NULL) : NULL;
	if (!mo->total || !mo->cur || (p->cmd != HCMD_LIST && !mo->tc)) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	if (!p->no_dispatch && p->cmd != HCMD_LIST) {
		ret = open_dispatch(mo);
		if (ret)
			return ret;
	}
	mo->start_ns = mo->period_start_ns = now_ns();
	ret = open_sinks(mo);
	if (ret)
		return ret;
	if (scan_domains(mo, "mapped")) {
		log_err("cannot list domains: %s", session_last_error());
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* Sleep until wake (CLOCK_MONOTONIC ns); false if a signal cut it short. */
static bool sleep_until(uint64_t wake)
{
	struct timespec ts = { .tv_sec = (time_t)(wake / 1000000000ULL),
			       .tv_nsec = (long)(wake % 1000000000ULL) };

	return clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != EINTR;
}

/*
 * One tick at t: clock exchanges first, then libvirt, the dispatch log, the captures and the channels. A tick
 * that is not full (--guest, between the TICK_NS grid points) only reads the dispatch log and the channels:
 * what the latency needs; libvirt's events and the captures wait for the next grid point as without --guest.
 */
static void tick(struct live *mo, uint64_t t, bool full)
{
	int i;

	if (full) {
		for (i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++)
			if (mo->dom[i].gc)
				guestchan_clock(mo->dom[i].gc, t);
		handle_connection(mo, t);
		handle_events(mo);
		retry_pending(mo);
	}
	if (mo->dl && schedlog_poll(mo->dl, t) < 0)
		log_warn("dispatch log: read error");
	if (full)
		taps_poll(mo, t);
	tick_channels(mo, t);
}

/*
 * --guest: whether the monitor may sleep to the next grid point instead of the short round: arm is true and
 * every channel is idle or has its bell armed (guestchan_bell_arm). The armed bells' fds go into pfd (their
 * domains in dom), *n of them. arm false: the bells are only read out (the short round).
 */
static bool bells_arm(struct live *mo, uint64_t t, bool arm, struct pollfd *pfd, int *dom, int *n)
{
	bool ok = arm;

	*n = 0;
	for (int i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++) {
		int fd;

		if (!mo->dom[i].gc)
			continue;
		fd = guestchan_bell_arm(mo->dom[i].gc, t, arm);
		if (fd == GUESTCHAN_BUSY)
			ok = arm = false; /* the others are only read out */
		if (fd >= 0) {
			pfd[*n] = (struct pollfd){ .fd = fd, .events = POLLIN };
			dom[(*n)++] = i;
		}
	}
	return ok;
}

/* The first sink that waits in the engine's place: 1 for q, 0; -ENOTTY when none does. */
static int sinks_wait(struct live *mo, uint64_t wake, struct pollfd *pfd, int n)
{
	for (int k = 0; k < mo->nsinks; k++)
		if (mo->sinks[k].ops->wait) {
			int rc = mo->sinks[k].ops->wait(mo->sinks[k].ctx, wake, pfd, n);

			if (rc != -ENOTTY)
				return rc;
		}
	return -ENOTTY;
}

/*
 * Sleep until wake or until a bell of pfd rings (a sink that waits, top's screen: or a key). Returns 1 for q, 0 at wake or a ring
 * (*rang), -1 for a signal.
 */
static int wait_until(struct live *mo, uint64_t wake, struct pollfd *pfd, const int *dom, int n,
		      bool *rang)
{
	int rc = sinks_wait(mo, wake, pfd, n);
	bool waited = rc != -ENOTTY; /* a sink (top's screen) waited */

	*rang = false;
	if (rc == 1)
		return 1; /* q */
	rc = 0;
	if (!waited && n) {
		uint64_t now = now_ns();
		struct timespec ts = { 0, 0 };

		if (wake > now) {
			ts.tv_sec = (time_t)((wake - now) / 1000000000ULL);
			ts.tv_nsec = (long)((wake - now) % 1000000000ULL);
		}
		for (int k = 0; k < n; k++)
			pfd[k].revents = 0;
		if (ppoll(pfd, (nfds_t)n, &ts, NULL) < 0)
			rc = -1;
	} else if (!waited && !sleep_until(wake)) {
		return -1;
	}
	for (int k = 0; k < n; k++)
		if (pfd[k].revents) {
			guestchan_bell_heard(mo->dom[dom[k]].gc, pfd[k].revents, now_ns());
			*rang = true;
		}
	if (!*rang && (rc < 0 || now_ns() < wake))
		return -1; /* a signal (top: a key or a resize, redrawn already) */
	return 0;
}

/* The period a sink asks for (top's keys), from the next period on. */
static void next_period_ns(struct live *mo)
{
	for (int k = 0; k < mo->nsinks; k++) {
		uint64_t ns;

		if (!mo->sinks[k].ops->period_ns)
			continue;
		ns = mo->sinks[k].ops->period_ns(mo->sinks[k].ctx);
		if (ns)
			mo->period_ns = ns;
	}
}

/*
 * Tick until a signal or the end of --duration; a period ends on its grid (records, stats, top's view). With
 * --guest the channels are read every GUEST_TICK_NS, or, while every agent rings its bell, on the TICK_NS grid
 * and when a bell rings (never sooner than GUEST_TICK_NS after the last round, and for BELL_HOT_HOLD_NS on the
 * short round once the rings come faster than one per BELL_HOT_NS: a guest with gaps all the time costs what
 * polling costs, one wake-up per short round).
 */
/* One vCPU of engine a into f: its out-time, its longest out interval, the host tasks that ran meanwhile. */
static void trace_vcpu(FILE *f, const struct hostagg *a, int d, uint32_t j)
{
	const struct hostagg_vcpu *v = &a->dom[d].vcpus[j];
	const struct hostagg_preempt *pr[HOSTAGG_MAX_PREEMPT + 1];
	uint32_t n = hostagg_preempt_sorted(v, pr, HOSTAGG_MAX_PREEMPT + 1), k;

	fprintf(f,
		"domain %.64s vCPU %u: out %.3f ms (preempted %.3f, blocked %.3f, idle pCPU %.3f), "
		"longest out interval %.3f ms (preempted %.3f)\n",
		a->dom[d].name, j, v->out_ns / 1e6, v->out_r_ns / 1e6, v->out_s_ns / 1e6,
		v->idle_ns / 1e6, v->max_out_ns / 1e6, v->max_out_r_ns / 1e6);
	for (k = 0; k < n; k++)
		if (pr[k]->total_ns || pr[k]->halted_ns)
			fprintf(f,
				"  ran meanwhile: %.16s[%u] %.3f ms runnable (%llu times), %.3f ms "
				"halted\n",
				pr[k]->comm, pr[k]->pid, pr[k]->total_ns / 1e6,
				(unsigned long long)pr[k]->count, pr[k]->halted_ns / 1e6);
}

/* --on-threshold trace / --on-end trace: the hit and its vCPU's period as the dispatch log saw it (a run's
 * end: every vCPU over the run), into file (replaced atomically). */
static int host_trace(void *ctx, const char *file, const struct action_hit *hit)
{
	struct live *mo = ctx;
	char tmp[PATH_MAX];
	int fd = outfile_tmp_open(file, tmp, sizeof(tmp), 0644), err;
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!f) {
		err = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		log_err("trace: %s: %s (the chain stops)", file, outfile_strerror(err));
		return -1;
	}
	if (hit->cpu >= 0) {
		fprintf(f,
			"vnoise-host --on-threshold trace: domain %.64s vCPU %d, %.3f ms preempted "
			"in the "
			"period ending at host time %.6f s\n",
			mo->cur->dom[mo->hit_dom].name, hit->cpu, hit->duration_ns / 1e6,
			hit->end_ns / 1e9);
		trace_vcpu(f, mo->cur, mo->hit_dom, (uint32_t)hit->cpu);
	} else {
		fprintf(f, "vnoise-host --on-end trace: %.3f s\n", (now_ns() - mo->start_ns) / 1e9);
		for (int d = 0; d < (int)VN_HOST_MAX_DOMAINS; d++)
			for (uint32_t j = 0;
			     mo->total->dom[d].seen && j < mo->total->dom[d].nvcpus &&
			     j < mo->total->dom[d].nvcpus_alloc;
			     j++)
				if (mo->total->dom[d].vcpus[j].seen)
					trace_vcpu(f, mo->total, d, j);
	}
	err = ferror(f) ? -EIO : 0;
	if (fclose(f) && !err)
		err = -errno;
	if (!err)
		err = outfile_tmp_commit(tmp, file);
	else if (tmp[0])
		unlink(tmp);
	if (err) {
		log_err("trace: %s: %s (the chain stops)", file, outfile_strerror(err));
		return -1;
	}
	return 0;
}

/* -s/-S over the period just ended (cur): each vCPU preempted (runnable, not halted: the guest's idle is no
 * noise) for longer than -s at once, or for more than -S in the period, is a hit, acted on by the chain
 * (--on-threshold); one that the chain does not continue (or with no chain) ends the run. */
static void check_hits(struct live *mo, uint64_t t)
{
	const struct host_params *p = mo->p;

	if (!p->stop_single_ns && !p->stop_total_ns)
		return;
	for (int d = 0; d < (int)VN_HOST_MAX_DOMAINS && !mo->stopped; d++) {
		const struct hostagg_domain *dm = &mo->cur->dom[d];

		for (uint32_t j = 0;
		     dm->seen && j < dm->nvcpus && j < dm->nvcpus_alloc && !mo->stopped; j++) {
			const struct hostagg_vcpu *v = &dm->vcpus[j];
			struct action_hit hit = { (int)j, 0, t };
			const char *what;

			if (p->stop_single_ns && v->max_out_r_ns > p->stop_single_ns) {
				hit.duration_ns = v->max_out_r_ns;
				what = "-s: a preempted out interval";
			} else if (p->stop_total_ns && v->out_r_ns > p->stop_total_ns) {
				hit.duration_ns = v->out_r_ns;
				what = "-S: preempted out-time in the period";
			} else {
				continue;
			}
			mo->nhits++;
			mo->hit_dom = d;
			if (p->on_threshold.n) {
				mo->nchains++;
				if (actions_run(&p->on_threshold, "--on-threshold", &hit,
						host_trace, mo) == 1)
					continue;
			}
			mo->stopped = 1;
			log_info("stop: domain %.64s vCPU %u: %s of %.3f ms", dm->name, j, what,
				 hit.duration_ns / 1e6);
		}
	}
}

static void run_loop(struct live *mo)
{
	const struct host_params *p = mo->p;
	uint64_t end_ns = p->duration_ns ? mo->start_ns + p->duration_ns : 0;
	uint64_t next_period = mo->start_ns + mo->period_ns, last_show = mo->start_ns, t, wake;
	uint64_t next_full = 0, last_tick = 0, hot_until = 0, rung[BELL_HOT_RINGS] = { 0 };
	unsigned nrung = 0;
	struct pollfd pfd[VN_HOST_MAX_DOMAINS];
	int pdom[VN_HOST_MAX_DOMAINS], nb = 0, w;
	bool rang;

	while (!g_stop) {
		uint64_t tick_ns = TICK_NS;

		t = now_ns();
		if (p->guest && !bells_arm(mo, t, t >= hot_until, pfd, pdom, &nb)) {
			tick_ns = GUEST_TICK_NS;
			nb = 0;
		}
		wake = (t / tick_ns + 1) *
		       tick_ns; /* on a grid: clock exchanges go out on the 50 ms grid */
		if (wake > next_period)
			wake = next_period;
		if (end_ns && wake > end_ns)
			wake = end_ns;
		if (wake > t) {
			w = wait_until(mo, wake, pfd, pdom, nb, &rang);
			if (w > 0)
				break; /* q */
			if (w < 0)
				continue; /* a signal */
			if (rang) { /* the dispatch log's horizon past the gap, no sooner than the round */
				uint64_t at = now_ns() + BELL_SETTLE_NS;

				if (rung[nrung % BELL_HOT_RINGS] &&
				    at <
					rung[nrung % BELL_HOT_RINGS] + BELL_HOT_RINGS * BELL_HOT_NS)
					hot_until = at + BELL_HOT_HOLD_NS;
				rung[nrung++ % BELL_HOT_RINGS] = at;
				if (at < last_tick + GUEST_TICK_NS)
					at = last_tick + GUEST_TICK_NS;
				if (!sleep_until(at))
					continue;
			}
		}
		t = last_tick = now_ns();
		mo->rounds++;
		tick(mo, t, t >= next_full || t >= next_period || (end_ns && t >= end_ns));
		if (t >= next_full)
			next_full = (t / TICK_NS + 1) * TICK_NS;
		progress_update(mo->prog, t, "recording");
		if (t >= next_period || (end_ns && t >= end_ns)) {
			end_period(mo, t);
			write_stats(mo, VN_CHUNK_STATS, t);
			show_period(mo, last_show, t);
			check_hits(mo, t);
			hostagg_reset(mo->cur);
			last_show = t;
			next_period_ns(mo);
			while (next_period <= t)
				next_period += mo->period_ns;
		}
		if ((end_ns && t >= end_ns) || mo->stopped)
			break;
	}
}

/* The last (partial) period, the END chunk, the sinks' end (record's summary). Returns the exit code. */
static int finish_run(struct live *mo)
{
	uint64_t t = now_ns();
	struct hostinfo in;
	int ret = EXIT_OK;

	/* the summary and the warnings below go to the normal screen */
	for (int k = 0; k < mo->nsinks; k++)
		if (mo->sinks[k].ops->stop)
			mo->sinks[k].ops->stop(mo->sinks[k].ctx);
	progress_end(mo->prog);
	mo->prog = NULL;
	if (t > mo->period_start_ns + 1000000ULL)
		end_period(mo, t);
	fill_info(mo, &in, mo->start_ns, t);
	write_stats(mo, VN_CHUNK_END, t);
	for (int k = 0; k < mo->nsinks; k++)
		if (mo->sinks[k].ops->end) {
			int rc = mo->sinks[k].ops->end(mo->sinks[k].ctx, mo->total, &in);

			if (!ret)
				ret = rc;
		}
	if (in.schedlog_drops)
		log_warn("%" PRIu64 " dispatch records were lost (ring full)", in.schedlog_drops);
	if (mo->nchains && !mo->p->quiet)
		log_info("--on-threshold: %" PRIu64 " hit%s, the chain ran %" PRIu64 " time%s",
			 mo->nhits, mo->nhits == 1 ? "" : "s", mo->nchains,
			 mo->nchains == 1 ? "" : "s");
	if (mo->p->on_end.n) {
		struct action_hit end = { -1, 0, t };

		actions_run(&mo->p->on_end, "--on-end", &end, host_trace, mo);
	}
	if (mo->stopped && !ret)
		ret = EXIT_STOPPED;
	return ret;
}

/* The sinks' start, over the domains mapped; the first failure ends the run. Returns EXIT_OK or its exit
 * code. */
static int start_sinks(struct live *mo)
{
	const struct vmap_dom *doms[VN_HOST_MAX_DOMAINS];
	int i, n = 0, ret = EXIT_OK;

	for (i = 0; i < (int)VN_HOST_MAX_DOMAINS; i++)
		if (mo->dom[i].used && mo->dom[i].running)
			doms[n++] = &mo->dom[i].m;
	for (int k = 0; k < mo->nsinks && !ret; k++)
		if (mo->sinks[k].ops->start)
			ret = mo->sinks[k].ops->start(mo->sinks[k].ctx, doms, n);
	return ret;
}

int live_run(struct live *mo)
{
	int ret, rc;

	catch_signals();
	ret = live_setup(mo);
	if (!ret)
		ret = start_sinks(mo);
	/* the screen takes SIGBUS for its own cleanup when it starts: the channels' guard goes back in
	 * front of it (and hands it every SIGBUS that is not a region's) */
	if (!ret && (rc = regionguard_install()))
		log_warn("cannot install the SIGBUS guard of the guest channels: %s",
			 strerror(-rc));
	if (!ret && mo->p->cmd != HCMD_LIST) {
		if (mo->p->cmd == HCMD_RECORD)
			mo->prog = progress_start("record", mo->p->duration_ns, mo->p->quiet);
		run_loop(mo);
		ret = finish_run(mo);
	}
	return ret;
}
