/* SPDX-License-Identifier: MIT */
/* lockfile: a private lock file (see lockfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/lockfile.h"

#define LOCK_FLAGS (O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY)

/* fd is ours alone: a regular file of this user that no one else may open. */
static bool is_private(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 077);
}

int lockfile_open(const char *path, bool *replaced)
{
	int fd = open(path, LOCK_FLAGS | O_CREAT, 0600);

	*replaced = false;
	if (fd >= 0 && is_private(fd))
		return fd;
	if (fd < 0 && errno != ELOOP)
		return -errno;
	/* not private, or a symbolic link: only root could have left it in a root-only directory */
	*replaced = true;
	if (fd >= 0)
		close(fd);
	if (unlink(path))
		return -errno;
	fd = open(path, LOCK_FLAGS | O_CREAT | O_EXCL, 0600);
	return fd >= 0 ? fd : -errno;
}
