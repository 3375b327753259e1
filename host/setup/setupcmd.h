/* SPDX-License-Identifier: MIT */
/*
 * setupcmd: `vnoise-host enable` and `vnoise-host disable` — add to a libvirt domain, or remove from it,
 * the devices vnoise needs (host/libvirt/domsetup.h), through libvirt's device attach/detach API, live
 * (hot-plug) and/or in the persistent definition. All-or-nothing: a step that fails undoes the steps before.
 */
#ifndef VNOISE_HOST_SETUP_SETUPCMD_H
#define VNOISE_HOST_SETUP_SETUPCMD_H

/* The command (argv[0] "enable" or "disable"). Returns the exit code (shared/cli/exitcode.h). */
int setupcmd_main(int argc, char **argv);

#endif
