/* SPDX-License-Identifier: MIT */
/* Exit codes of vnoise-host (README.md lists them): each failure cause has its own. */
#ifndef VNOISE_CLI_EXITCODE_H
#define VNOISE_CLI_EXITCODE_H

enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1, /* the tool failed (I/O, out of memory, unexpected libvirt error) */
	EXIT_USAGE = 2, /* invalid command line */
	EXIT_DENIED = 4, /* no permission: libvirt refused us, or host tracing needs root */
	EXIT_DAMAGED = 5, /* report read a damaged, truncated or foreign file */
	EXIT_UNREACHABLE = 6, /* libvirt unreachable at the URI */
	EXIT_NODOMAIN = 7, /* a --domain that libvirt does not know */
};

#endif
