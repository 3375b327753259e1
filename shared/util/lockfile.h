/* SPDX-License-Identifier: MIT */
/*
 * lockfile: a lock file private to this user, for flock(). It must live in a directory only root writes to
 * (/run): a lock file another user could open would let that user hold the lock for ever. A file of the path
 * that is not private (another owner, any group or other mode bit, not a regular file) is replaced.
 */
#ifndef VNOISE_UTIL_LOCKFILE_H
#define VNOISE_UTIL_LOCKFILE_H

#include <stdbool.h>

/*
 * Open (or create, mode 0600) the private lock file at path; never follows a symbolic link. Returns the
 * fd (O_CLOEXEC), or -errno. *replaced is set when a file that was not private was found (then the fd is
 * that of the new file, or the error that of replacing it).
 */
int lockfile_open(const char *path, bool *replaced) __attribute__((warn_unused_result));

#endif
