/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the shared-memory channel suites (check_shmwriter, check_shmreader): RSIZE, the default region
 * size, region_new(size), a zeroed region allocated to the byte (ASan reports any read past size; the
 * caller frees it), and H(base), the region's header.
 */
#ifndef VNOISE_SHM_CHECK_H
#define VNOISE_SHM_CHECK_H

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "shm.h"

#define RSIZE (64u * 1024) /* default region: 2 rings x 64 slots fit */

static void *region_new(size_t size)
{
	void *p = NULL;

	ck_assert_int_eq(posix_memalign(&p, 4096, size), 0);
	memset(p, 0, size);
	return p;
}

static struct vn_shm_header *H(void *base)
{
	return base;
}

#endif
