/* SPDX-License-Identifier: MIT */
/*
 * agent: `vnoise-guest agent`, the guest side of the vnoise channel. So far: `agent --probe` finds and
 * prints the channel's devices (ivshmem BAR2, the agent and vnoise virtio-serial ports) and exits 0, or 4
 * when the ivshmem device is missing. The daemon (shared-memory publishing, QGA protocol) follows.
 */
#ifndef VNOISE_AGENT_H
#define VNOISE_AGENT_H

int agent_main(int argc, char **argv);

#endif
