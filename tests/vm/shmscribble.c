/* SPDX-License-Identifier: MIT */
/*
 * shmscribble: a hostile guest agent for the VM tests. It writes into a domain's ivshmem region from the host
 * side (/dev/shm/<name>: the very bytes the guest's BAR2 shows) for a given time: valid records with live
 * timestamps and, in between, every kind of damage tests/shm_hostile.h knows (bad indices, lengths and
 * sequence numbers, torn records, a changing header, epoch games), re-initialising cleanly now and then as a
 * restarted agent would. It alternates 1 s phases with and without header and epoch games (without them the
 * reader stays attached and reads damaged rings), and answers the host's clock exchanges (layout v2: the
 * mailbox in the host half, protocol/dtl.h, through dtlreader as a guest responder does) with its own
 * CLOCK_MONOTONIC (a guest whose clock is the host's), so that the host reads what it wrote. At the end it
 * leaves the region as the last operation left it.
 *
 *   shmscribble FILE SECONDS [SEED]     prints: ops, clean re-initialisations, errors
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "shm_hostile.h"
#include "channel/dtlreader.h"
#include "util/monotime.h"

/* Record t: a gap or an event with plausible current timestamps. */
static int put_live(struct shm_writer *w, uint32_t ring, uint64_t t)
{
	uint64_t n = now_ns();

	if (t & 1) {
		struct vn_event e = { .start_ns = n - 2000,
				      .end_ns = n,
				      .net_ns = 2000,
				      .id = (uint32_t)(t % 300),
				      .cpu = (uint16_t)ring,
				      .cls = (uint8_t)(1 + t % 5) };

		if (e.cls == VN_CLASS_THREAD)
			snprintf(e.comm, sizeof(e.comm), "scribble%u", (unsigned int)(t % 7));
		return shmwriter_put_event(w, ring, &e);
	}
	struct vn_sample s = { .start_ns = n - 5000 - t % 100000,
			       .end_ns = n,
			       .cpu = (uint16_t)ring,
			       .kind = VN_SAMPLE_GAP };

	return shmwriter_put_sample(w, ring, &s);
}

int main(int argc, char **argv)
{
	struct hostile_ctx h = { 0 };
	struct dtl_reader *dr;
	char *host_area;
	struct stat st;
	uint64_t end;
	int fd;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: shmscribble FILE SECONDS [SEED]\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0 || fstat(fd, &st) || st.st_size < 65536) {
		fprintf(stderr, "shmscribble: %s: %s\n", argv[1],
			fd < 0 ? strerror(errno) : "too small");
		return 1;
	}
	h.size = (size_t)st.st_size;
	h.base = mmap(NULL, h.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (h.base == MAP_FAILED) {
		perror("shmscribble: mmap");
		return 1;
	}
	h.nrings = 2;
	h.slots = shmwriter_fit_slots(h.size, h.nrings); /* the guest area: the lower half */
	h.slots = h.slots > 1024 ? 1024 : h.slots;
	h.reinit_every = 2000000;
	h.put = put_live;
	h.rng = argc == 4 ? strtoull(argv[3], NULL, 0) | 1 : 0x9e3779b97f4a7c15ull;
	h.epoch = shmwriter_next_epoch(h.base, h.size, now_ns());
	h.w = shmwriter_init(h.base, h.size, h.nrings, h.slots, h.epoch);
	if (!h.w) {
		perror("shmscribble: shmwriter_init");
		return 1;
	}
	host_area = (char *)h.base + vn_dtl_area_offset(h.size);
	dr = dtlreader_new(host_area, h.size - vn_dtl_area_offset(h.size));
	if (!dr) {
		perror("shmscribble: dtlreader_new");
		return 1;
	}
	end = now_ns() + strtoull(argv[2], NULL, 0) * 1000000000ULL;
	while (now_ns() < end) {
		uint64_t seq, sent;

		h.rings_only = (int)((end - now_ns()) / 1000000000ULL) % 2;
		for (int i = 0; i < 1000; i++)
			if (hostile_step(&h))
				break;
		if (dtlreader_sync(dr) >= 0 && dtlreader_request(dr, &seq, &sent) == 1)
			dtlreader_reply(dr, host_area, seq, sent, now_ns(), VN_SHM_CPU_UNKNOWN);
		if (h.errors > 100)
			break;
		usleep(100); /* leave the reader some CPU on a 2-core machine */
	}
	printf("shmscribble: %llu ops, %llu clean re-initialisations, %llu errors\n",
	       (unsigned long long)h.ops, (unsigned long long)h.reinits,
	       (unsigned long long)h.errors);
	dtlreader_free(dr);
	shmwriter_free(h.w);
	munmap(h.base, h.size);
	return h.errors ? 1 : 0;
}
