/* SPDX-License-Identifier: MIT */
/*
 * inject: the `vnoise-guest inject` subcommand, a noise source with known ground truth used by the tests
 * (DESIGN.md "inject", seed 003). It pins the calling thread to one CPU, optionally makes it SCHED_FIFO, and
 * burns a measured amount of its own CPU time (CLOCK_THREAD_CPUTIME_ID) either as a duty cycle (PCT% of
 * every second) or as periodic spikes (US microseconds every MS milliseconds). It prints its pid/tid at start
 * and the exact injected CPU time at exit.
 */
#ifndef VNOISE_GUEST_INJECT_INJECT_H
#define VNOISE_GUEST_INJECT_INJECT_H

/*
 * Run the injector in the calling thread until --duration elapses or SIGINT/SIGTERM arrives. argv[0] is
 * "inject". Returns the process exit code: 0 success, 1 runtime failure (e.g. SCHED_FIFO refused),
 * 2 invalid options, 4 a CPU that is not present, offline or outside the process's cpuset (as measure:
 * "CPU N is not present on this machine"). Installs SIGINT/SIGTERM handlers for its
 * duration and restores the thread's affinity, policy and name before returning.
 */
int inject_main(int argc, char **argv);

#endif
