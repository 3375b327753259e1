/* SPDX-License-Identifier: MIT */
/*
 * session: libvirt connection, event loop thread, lifecycle events and reconnection (see session.h).
 * REFERENCE.md §2: virEventRegisterDefaultImpl() before any open, the loop in its own thread, keepalive,
 * a close callback to notice libvirtd restarts, errors silenced from stderr and read per thread.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libvirt/virterror.h>
#include "util/log.h"
#include "libvirt/session.h"

#define SESSION_QUEUE 256

struct sess {
	char *uri;
	virConnectPtr conn;
	int lifecycle_id; /* callback id, -1 if none */
	atomic_bool lost;
	uint32_t reconnects;
	pthread_mutex_t lock; /* protects the queue */
	struct session_event q[SESSION_QUEUE];
	unsigned q_head, q_len;
	uint64_t q_dropped;
};

static pthread_once_t loop_once = PTHREAD_ONCE_INIT;
static int loop_err;

static void error_silencer(void *ud, virErrorPtr err)
{
	(void)ud;
	(void)err;
}

static void *loop_main(void *arg)
{
	(void)arg;
	for (;;) {
		if (virEventRunDefaultImpl() < 0)
			log_debug("libvirt event loop: %s", session_last_error());
	}
	return NULL;
}

/* A periodic no-op timer keeps the loop iterating so that every wait is bounded. */
static void loop_tick(int timer, void *opaque)
{
	(void)timer;
	(void)opaque;
}

static void loop_start(void)
{
	pthread_attr_t attr;
	pthread_t th;
	sigset_t all, old;

	virSetErrorFunc(NULL, error_silencer);
	if (virEventRegisterDefaultImpl() < 0) {
		loop_err = -EIO;
		return;
	}
	virEventAddTimeout(500, loop_tick, NULL, NULL);
	/* The loop thread takes no signals: the main thread handles them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, loop_main, NULL))
		loop_err = -EAGAIN;
	else
		pthread_setname_np(th, "vnoise-lvloop");
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

const char *session_last_error(void)
{
	const char *m = virGetLastErrorMessage();

	return m ? m : "";
}

static void on_close(virConnectPtr conn, int reason, void *opaque)
{
	struct sess *s = opaque;

	(void)conn;
	(void)reason;
	atomic_store(&s->lost, true);
}

static int on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque)
{
	struct sess *s = opaque;
	struct session_event *e;
	const char *name;

	(void)conn;
	pthread_mutex_lock(&s->lock);
	if (s->q_len == SESSION_QUEUE) {
		s->q_dropped++;
		goto out;
	}
	e = &s->q[(s->q_head + s->q_len) % SESSION_QUEUE];
	memset(e, 0, sizeof(*e));
	e->lv_event = event;
	e->lv_detail = detail;
	e->type = event == VIR_DOMAIN_EVENT_STARTED   ? SESSION_EV_STARTED
		  : event == VIR_DOMAIN_EVENT_STOPPED ? SESSION_EV_STOPPED
						      : SESSION_EV_OTHER;
	if (virDomainGetUUIDString(dom, e->uuid) < 0)
		e->uuid[0] = 0;
	name = virDomainGetName(dom);
	if (name)
		snprintf(e->name, sizeof(e->name), "%s", name);
	s->q_len++;
out:
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static enum session_fail classify(void)
{
	virErrorPtr e = virGetLastError();

	if (!e)
		return SESSION_OTHER;
	/*
	 * Not root and libvirtd answered but refused: its access check (polkit, which needs the system bus)
	 * failed. Socket errors (libvirtd absent) stay "unreachable".
	 */
	if (geteuid() != 0 && e->code != VIR_ERR_SYSTEM_ERROR && e->code != VIR_ERR_NO_CONNECT)
		return SESSION_DENIED;
	switch (e->code) {
	case VIR_ERR_AUTH_FAILED:
	case VIR_ERR_AUTH_CANCELLED:
	case VIR_ERR_AUTH_UNAVAILABLE:
	case VIR_ERR_ACCESS_DENIED:
	case VIR_ERR_OPERATION_DENIED:
		return SESSION_DENIED;
	case VIR_ERR_SYSTEM_ERROR:
		if (e->int1 == EACCES || e->int1 == EPERM)
			return SESSION_DENIED;
		return SESSION_UNREACHABLE;
	case VIR_ERR_NO_CONNECT:
	case VIR_ERR_INVALID_ARG:
	case VIR_ERR_NO_SUPPORT:
	case VIR_ERR_RPC:
		if (e->message && strstr(e->message, "ermission denied"))
			return SESSION_DENIED;
		return SESSION_UNREACHABLE;
	default:
		if (e->message && strstr(e->message, "ermission denied"))
			return SESSION_DENIED;
		return SESSION_OTHER;
	}
}

/* Open s->uri and register the callbacks. Returns 0 or -EIO with libvirt's error left for classify(). */
static int connect_once(struct sess *s)
{
	virConnectPtr c;

	c = virConnectOpen(s->uri);
	if (!c)
		return -EIO;
	if (virConnectSetKeepAlive(c, 2, 3) < 0)
		log_debug("keepalive: %s", session_last_error());
	if (virConnectRegisterCloseCallback(c, on_close, s, NULL) < 0)
		log_debug("close callback: %s", session_last_error());
	s->lifecycle_id =
	    virConnectDomainEventRegisterAny(c, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
					     VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle), s, NULL);
	if (s->lifecycle_id < 0) {
		virConnectUnregisterCloseCallback(c, on_close);
		virConnectClose(c);
		return -EIO;
	}
	s->conn = c;
	atomic_store(&s->lost, false);
	return 0;
}

static void disconnect(struct sess *s)
{
	if (!s->conn)
		return;
	if (s->lifecycle_id >= 0)
		virConnectDomainEventDeregisterAny(s->conn, s->lifecycle_id);
	s->lifecycle_id = -1;
	virConnectUnregisterCloseCallback(s->conn, on_close);
	virConnectClose(s->conn);
	s->conn = NULL;
}

struct sess *session_open(const char *uri, enum session_fail *why, char *msg, size_t msg_len)
{
	struct sess *s;

	*why = SESSION_OK;
	pthread_once(&loop_once, loop_start);
	if (loop_err) {
		*why = SESSION_OTHER;
		snprintf(msg, msg_len, "cannot start the libvirt event loop");
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		goto fail_mem;
	s->lifecycle_id = -1;
	pthread_mutex_init(&s->lock, NULL);
	s->uri = strdup(uri ? uri : "qemu:///system");
	if (!s->uri)
		goto fail_mem;
	if (connect_once(s) < 0) {
		*why = classify();
		snprintf(msg, msg_len, "%s", session_last_error());
		session_close(s);
		return NULL;
	}
	return s;
fail_mem:
	session_close(s);
	*why = SESSION_OTHER;
	snprintf(msg, msg_len, "out of memory");
	return NULL;
}

void session_close(struct sess *s)
{
	if (!s)
		return;
	disconnect(s);
	pthread_mutex_destroy(&s->lock);
	free(s->uri);
	free(s);
}

virConnectPtr session_conn(struct sess *s)
{
	return atomic_load(&s->lost) ? NULL : s->conn;
}

bool session_lost(struct sess *s)
{
	return atomic_load(&s->lost) || !s->conn;
}

int session_reconnect(struct sess *s)
{
	disconnect(s);
	if (connect_once(s) < 0)
		return -ECONNREFUSED;
	s->reconnects++;
	return 0;
}

uint32_t session_reconnects(const struct sess *s)
{
	return s->reconnects;
}

int session_take_events(struct sess *s, struct session_event *out, int max)
{
	int n = 0;

	pthread_mutex_lock(&s->lock);
	while (n < max && s->q_len) {
		out[n++] = s->q[s->q_head];
		s->q_head = (s->q_head + 1) % SESSION_QUEUE;
		s->q_len--;
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

uint64_t session_events_dropped(const struct sess *s)
{
	return s->q_dropped;
}
