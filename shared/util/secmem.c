/* SPDX-License-Identifier: MIT */
/* secmem: pages for key material, kept out of core dumps and wiped on free (see secmem.h). */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "util/secmem.h"

static size_t page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	return ps > 0 ? (size_t)ps : 4096;
}

static size_t round_up(size_t len)
{
	size_t ps = page_size();

	return (len + ps - 1) / ps * ps;
}

void *secmem_alloc(size_t len)
{
	size_t n = round_up(len ? len : 1);
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (madvise(p, n, MADV_DONTDUMP)) {
		int e = errno;

		munmap(p, n);
		errno = e;
		return NULL;
	}
	(void)mlock(
	    p, n); /* best effort: over RLIMIT_MEMLOCK the key may be swapped, and still works */
	return p;
}

void secmem_free(void *p, size_t len)
{
	size_t n = round_up(len ? len : 1);

	if (!p)
		return;
	explicit_bzero(p, n);
	munlock(p, n);
	munmap(p, n);
}

int secmem_dontdump(void *p, size_t len)
{
	size_t ps = page_size();
	uintptr_t a = (uintptr_t)p / ps * ps, e = ((uintptr_t)p + len + ps - 1) / ps * ps;

	if (!p || !len)
		return -EINVAL;
	return madvise((void *)a, e - a, MADV_DONTDUMP) ? -errno : 0;
}
