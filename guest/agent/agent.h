/* SPDX-License-Identifier: MIT */
/*
 * agent: `vnoise-guest agent`, the guest side of the vnoise channel: the QGA protocol on both ports, and
 * `agent --probe` to print the channel's devices (ivshmem BAR2, the two virtio-serial ports; exit 4
 * when the ivshmem device is missing). Shared-memory publishing follows.
 */
#ifndef VNOISE_GUEST_AGENT_AGENT_H
#define VNOISE_GUEST_AGENT_AGENT_H

int agent_main(int argc, char **argv);

#endif
