/* SPDX-License-Identifier: MIT */
/*
 * vnoise-bench: the entry point; `detect` (under mpirun) and `sweep` (runs mpirun itself). One binary, so
 * the sweep can launch itself as the detector (found through /proc/self/exe).
 */
#include <stdio.h>
#include <string.h>
#include "util/log.h"
#include "vnbench.h"

static const char usage[] =
    "usage: vnoise-bench COMMAND [options]\n"
    "  detect   time a loop of collectives (run it under mpirun)\n"
    "  sweep    the detector at injection levels 0..1% beside vnoise's attribution (runs mpirun)\n"
    "see 'vnoise-bench COMMAND --help'\n";

int main(int argc, char **argv)
{
	log_set_prog("vnoise-bench");
	if (argc < 2) {
		log_err("no command (detect or sweep; see 'vnoise-bench --help')");
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "detect"))
		return detect_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "sweep"))
		return sweep_main(argc - 1, argv + 1, argv[0]);
	log_err("unknown command '%s' (detect or sweep)", argv[1]);
	return EXIT_USAGE;
}
