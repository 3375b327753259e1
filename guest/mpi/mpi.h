/* SPDX-License-Identifier: MIT */
/*
 * mpi: `vnoise-guest mpi [options] -- COMMAND...`, an MPI job run with libvnoise-preload.so and the
 * interval pipeline (mpi.c has the whole story). mpi_parse() is the pure command-line parser.
 */
#ifndef VNOISE_GUEST_MPI_MPI_H
#define VNOISE_GUEST_MPI_MPI_H

#include <stddef.h>
#include <stdint.h>

struct mpi_params {
	const char *job; /* --job, default "mpi" */
	double delay_pct; /* --delay-pct, default 10 */
	uint64_t min_noise_ns; /* --min-noise, default 0 */
	uint64_t min_delay_ns; /* --min-delay, default 10 us, at most UINT32_MAX */
	uint32_t classes; /* --classes: 1 << VN_CLASS_*, default every class */
	uint32_t flags; /* VN_PIPE_F_* (--all) */
	const char *output; /* --output FILE (append), or NULL */
	const char *udp; /* --udp ADDR:PORT, or NULL */
	const char *collector; /* --collector ADDR:PORT (needs key_file), or NULL */
	const char *key_file;
	uint64_t node_id; /* --node-id when have_node_id */
	int have_node_id;
	const char *stats; /* --stats FILE for the job's preload, or NULL */
	const char *preload; /* --preload PATH, or NULL */
	int helper; /* 0 with --no-helper */
	int dtl; /* 0 with --no-dtl: the guest-only view (the hypervisor's share stays steal/unexplained) */
	uint64_t
	    dtl_wait_ns; /* --dtl-wait: longest wait for the host's horizon per interval, default 2 s */
	int verbose; /* -v: vnoise's own cost in the ranks, libbpf's lines */
	char **cmd; /* the job's argv (inside the caller's argv), NULL-terminated */
};

/*
 * Parse argv (argv[0] = "mpi"): 0, 1 for --help, or -EINVAL with one line in err. Pure apart from the
 * warning line of a deprecated spelling (cli/cliopt.h). The options end at "--" or the first non-option.
 */
int mpi_parse(int argc, char **argv, struct mpi_params *p, char *err, size_t errlen)
    __attribute__((warn_unused_result));
const char *mpi_usage(void);
/*
 * The command: run the job, report its intervals; the job's exit status, or an exit code of ours. A
 * COMMAND that is not found exits 127, one that cannot be executed 126 (as a shell), with one line and
 * no summary.
 */
int mpi_main(int argc, char **argv);

#endif
