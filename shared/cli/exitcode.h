/* SPDX-License-Identifier: MIT */
/*
 * exitcode: the one exit-code table of every vnoise command (vnoise-guest, vnoise-host, vnoise-bench), so a
 * script can tell "the tool failed" from "bad command line" from "a threshold was hit". docs/CLI.md and the
 * man pages list it; a command uses only the codes that can happen to it. Each error is one line on stderr.
 */
#ifndef VNOISE_CLI_EXITCODE_H
#define VNOISE_CLI_EXITCODE_H

enum {
	EXIT_OK = 0,
	EXIT_FAIL =
	    1, /* the tool failed: resources, I/O, a kernel or libvirt call that should work did not */
	EXIT_USAGE = 2, /* invalid command line or configuration (missing key file, bad value) */
	EXIT_STOPPED = 3, /* a --stop-single / --stop-total threshold was hit: not an error */
	EXIT_CANNOT =
	    4, /* this machine or this user cannot do what was asked: no such or offline CPU, no
			    eBPF (privilege, BTF), no permission (libvirtd refused, tracing needs root) */
	EXIT_DAMAGED =
	    5, /* a record file, capture or store is damaged, truncated or foreign; what could be
			     read was reported */
	EXIT_UNREACHABLE = 6, /* libvirt unreachable at the URI */
	EXIT_NODOMAIN = 7, /* a --domain that libvirt does not know */
	EXIT_CONFLICT =
	    8, /* held by another: a device of vnoise's name (enable), a CPU's sampler */
	EXIT_SYMLINK = 9, /* an output file's path is a symbolic link: refused, nothing written */
};

#endif
