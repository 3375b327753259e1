/* SPDX-License-Identifier: MIT */
/*
 * agentcmd: `vnoise-host agent -D DOM status|start|stop [options]` — talks to vnoise-guest's agent through
 * the host socket of the domain's org.vnoise.0 virtio-serial channel (found in the live XML), never through
 * libvirt's agent API, so it works beside a stock qemu-ga on org.qemu.guest_agent.0. The socket is vnoise's
 * own channel, so the 0xFF-delimited guest-sync-delimited resynchronises the stream first; then one QAPI
 * command (__com.vnoise_status / __com.vnoise_start with measure options / __com.vnoise_stop). Every byte
 * the agent sends is hostile input (shared/format/qga validates the replies); every wait has a deadline.
 *
 * The client part (agentcmd_conn_*) works on any connected stream fd, so tests drive it with a fake agent.
 */
#ifndef VNOISE_HOST_AGENT_AGENTCMD_H
#define VNOISE_HOST_AGENT_AGENTCMD_H

#include <stdint.h>
#include <stdio.h>
#include "format/qga.h"

#define AGENTCMD_CHANNEL "org.vnoise.0"
#define AGENTCMD_TIMEOUT_NS \
	10000000000ULL /* default --timeout: 10 s (eBPF detach under TCG is slow) */

struct agentcmd_conn;

/* A client on fd (not owned), each wait bounded by timeout_ns. NULL + errno on failure. */
struct agentcmd_conn *agentcmd_conn_new(int fd, uint64_t timeout_ns)
    __attribute__((warn_unused_result));
void agentcmd_conn_free(struct agentcmd_conn *c);

/*
 * Send 0xFF + guest-sync-delimited {"id":N} and read until the reply that returns N (any other reply,
 * valid or not, is left from an earlier client and skipped). Returns 0, -ETIMEDOUT (no answer in time),
 * -EPROTO (no answer in time, but texts that are not valid replies came), -ECONNRESET (the peer closed), or
 * another -errno of the socket.
 */
int agentcmd_sync(struct agentcmd_conn *c) __attribute__((warn_unused_result));

/*
 * Run command name with args_json (NULL or the text of a JSON object) and wait for its reply (matched by
 * "id"). *r is the validated reply (r->ret points into c, valid until the next call on c). Returns 0 (r may
 * be an error reply: r->is_error), or the errors of agentcmd_sync().
 */
int agentcmd_exec(struct agentcmd_conn *c, const char *name, const char *args_json,
		  struct qga_reply *r) __attribute__((warn_unused_result));

/* The command `vnoise-host agent` (argv[0] = "agent"): an exit code (shared/cli/exitcode.h). */
int agentcmd_main(int argc, char **argv);
/* A reply's value as `agent status` prints it: an object's members one "key: value" line each, scalars as
 * they are, nested objects as "k=v" pairs; every string from the guest escaped (util/termsafe). */
void agentcmd_print_text(FILE *f, const struct jsonr_value *ret);

#endif
