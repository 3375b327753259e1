/* SPDX-License-Identifier: MIT */
/* outfile: output files opened without following a link, with a fixed mode (see outfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/exitcode.h"
#include "util/outfile.h"

#define OPEN_BASE (O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY)

/* An existing regular file loses the permission bits beyond mode (fchmod fails quietly when not ours). */
static void narrow_mode(int fd, mode_t mode)
{
	struct stat st;

	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && (st.st_mode & 07777 & ~mode))
		(void)!fchmod(fd, st.st_mode & 07777 & mode);
}

int outfile_open(const char *path, int flags, mode_t mode)
{
	int fd = -1;

	if (!path || !*path || (flags & ~(O_TRUNC | O_APPEND)))
		return -EINVAL;
	/* a few rounds: the file may be removed between the two opens */
	for (int round = 0; round < 4; round++) {
		/* new: O_EXCL never follows a link, and nothing is there to truncate */
		fd = open(path, OPEN_BASE | O_CREAT | O_EXCL | (flags & O_APPEND), mode);
		if (fd >= 0) {
			(void)!fchmod(fd, mode); /* exactly mode, whatever the umask */
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
		/* there already: O_NOFOLLOW refuses a link (ELOOP) before O_TRUNC touches anything */
		fd = open(path, OPEN_BASE | flags);
		if (fd >= 0) {
			narrow_mode(fd, mode);
			return fd;
		}
		if (errno != ENOENT)
			return -errno;
	}
	return -ENOENT;
}

int outfile_tmp_open(const char *path, char *tmp, size_t tmplen, mode_t mode)
{
	struct stat st;
	int n, fd;

	if (!path || !*path || !tmp)
		return -EINVAL;
	n = snprintf(tmp, tmplen, "%s.tmp.XXXXXX", path);
	if (n < 0 || (size_t)n >= tmplen)
		return -ENAMETOOLONG;
	if (!lstat(path, &st) && S_ISLNK(st.st_mode))
		return -ELOOP;
	if (!access(path, F_OK) && !lstat(path, &st) && !S_ISREG(st.st_mode)) {
		/* a device or a FIFO (/dev/null) is written in place: a rename would replace the node */
		tmp[0] = '\0';
		return S_ISDIR(st.st_mode) ? -EISDIR : outfile_open(path, O_TRUNC, mode);
	}
	fd = mkostemp(tmp, O_CLOEXEC); /* O_CREAT | O_EXCL: a new file, never a link */
	if (fd < 0)
		return -errno;
	(void)!fchmod(fd, mode);
	return fd;
}

int outfile_tmp_commit(const char *tmp, const char *path)
{
	int err = 0;

	if (!tmp || !path)
		return -EINVAL;
	if (!tmp[0]) /* written in place (not a regular file) */
		return 0;
	if (rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
	}
	return err;
}

const char *outfile_strerror(int err)
{
	if (err == -ELOOP)
		return "a symbolic link (refused: vnoise does not write through links)";
	return strerror(err < 0 ? -err : err);
}

int outfile_exit_code(int err)
{
	if (err == -ELOOP)
		return EXIT_SYMLINK;
	return err == -ENOSPC || err == -EDQUOT || err == -EFBIG ? EXIT_CANNOT : EXIT_FAIL;
}
