/* SPDX-License-Identifier: MIT */
/* agent: `vnoise-guest agent --probe` (see agent.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "agent.h"
#include "guestdev.h"
#include "log.h"
#include "measure.h"

static const char usage[] =
    "usage: vnoise-guest agent --probe\n"
    "  --probe   print the channel's devices (ivshmem BAR2, virtio-serial ports)\n";

static void port(const char *name)
{
	char path[256];

	if (guestdev_find_port(NULL, NULL, name, path, sizeof(path)))
		printf("port %s: absent\n", name);
	else
		printf("port %s: %s\n", name, path);
}

int agent_main(int argc, char **argv)
{
	char path[512];
	uint64_t size = 0;
	int rc;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (argc != 2 || strcmp(argv[1], "--probe")) {
		log_err(
		    "agent: only --probe is available so far (see 'vnoise-guest agent --help')");
		return EXIT_USAGE;
	}
	port("org.qemu.guest_agent.0");
	port("org.vnoise.0");
	rc = guestdev_find_ivshmem(NULL, path, sizeof(path), &size);
	if (rc) {
		printf("ivshmem: absent\n");
		log_err("no ivshmem-plain device (PCI 1af4:1110) in this guest");
		return EXIT_ENV;
	}
	printf("ivshmem: %s %" PRIu64 "\n", path, size);
	return EXIT_OK;
}
