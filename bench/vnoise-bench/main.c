/* SPDX-License-Identifier: MIT */
/*
 * vnoise-bench: the entry point; `detect` (under mpirun) and `sweep` (runs mpirun itself). One binary, so
 * the sweep can launch itself as the detector (found through /proc/self/exe).
 */
#include <stdio.h>
#include "cli/cliopt.h"
#include "util/log.h"
#include "vnbench.h"

static const char *argv0; /* this program as it was started: the command the sweep shows */

static int run_sweep(int argc, char **argv)
{
	return sweep_main(argc, argv, argv0);
}

static const struct cliopt_cmd commands[] = {
	{ "detect", "time a loop of collectives (run it under mpirun)", detect_main },
	{ "sweep", "the detector at injection levels 0..1% beside vnoise's attribution",
	  run_sweep },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	argv0 = argv[0];
	return cliopt_dispatch("vnoise-bench", commands, argc, argv);
}
