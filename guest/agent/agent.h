/* SPDX-License-Identifier: MIT */
/*
 * agent: `vnoise-guest agent`, the guest side of the vnoise channel: the QGA protocol on vnoise's own port
 * org.vnoise.0 (and on org.qemu.guest_agent.0 only with --qga-port, when qemu-ga does not hold it), the
 * shared-memory publishing, and `agent --probe` to print the channel's devices (ivshmem BAR2, the two
 * virtio-serial ports; exit 4 when the ivshmem device is missing).
 */
#ifndef VNOISE_GUEST_AGENT_AGENT_H
#define VNOISE_GUEST_AGENT_AGENT_H

int agent_main(int argc, char **argv);

#endif
