/* SPDX-License-Identifier: MIT */
/*
 * session: vnoise-host's libvirt connection. It owns the libvirt event loop thread (started once per
 * process), the connection with keepalive, a close callback that notices libvirtd going away, lifecycle
 * event registration, and a queue of lifecycle events for the main thread. After the connection is lost
 * the main thread calls session_reconnect() with backoff; events are registered again on the new connection.
 * Threads: the event loop thread only queues events and flags; every other call is made by one main thread.
 */
#ifndef VNOISE_HOST_LIBVIRT_SESSION_H
#define VNOISE_HOST_LIBVIRT_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <libvirt/libvirt.h>

/* Why session_open() failed: tells the distinct exit codes apart. */
enum session_fail {
	SESSION_OK = 0,
	SESSION_UNREACHABLE = 1, /* no libvirtd at that URI (socket missing, refused, bad URI) */
	SESSION_DENIED =
	    2, /* libvirtd answered but refused us (permission, authentication, policy) */
	SESSION_OTHER = 3,
};

enum session_ev_type { SESSION_EV_STARTED = 1, SESSION_EV_STOPPED = 2, SESSION_EV_OTHER = 3 };

struct session_event {
	enum session_ev_type type;
	int lv_event; /* virDomainEventType */
	int lv_detail;
	char uuid[VIR_UUID_STRING_BUFLEN];
	char name[128];
};

struct sess;

/*
 * Connect to uri (NULL: qemu:///system), start the event loop thread if needed, register the close and
 * lifecycle callbacks. Returns the session or NULL with *why set and a one-line reason in msg (msg_len
 * bytes). The session is owned by the caller until session_close().
 */
struct sess *session_open(const char *uri, enum session_fail *why, char *msg, size_t msg_len)
    __attribute__((warn_unused_result));

/* Close the connection and free s (the event loop thread stays for the process). Accepts NULL. */
void session_close(struct sess *s);

/* The live connection, or NULL while it is lost. Valid until the next session_reconnect()/session_close(). */
virConnectPtr session_conn(struct sess *s);

/* True once libvirtd went away (its close callback ran) or there is no connection. */
bool session_lost(struct sess *s);

/*
 * Try once to connect again (after session_lost()). Returns 0 when connected (callbacks registered again), or
 * -errno; the caller retries with backoff.
 */
int session_reconnect(struct sess *s) __attribute__((warn_unused_result));

/* Times the connection was re-established. */
uint32_t session_reconnects(const struct sess *s);

/*
 * Move up to max queued lifecycle events into out, oldest first. Returns the number moved. Events beyond
 * the queue's capacity are dropped and counted in session_events_dropped().
 */
int session_take_events(struct sess *s, struct session_event *out, int max);
uint64_t session_events_dropped(const struct sess *s);

/* The last libvirt error of this thread as one line ("" if none). */
const char *session_last_error(void);

#endif
