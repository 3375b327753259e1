/* SPDX-License-Identifier: MIT */
/*
 * outfile: the one way vnoise creates a file for its user (record -o, report --html, --pcap-out, --store,
 * mpi --output, the preload library's outputs). Every file is opened O_NOFOLLOW | O_CLOEXEC | O_NOCTTY: a
 * symbolic link as the last component of the path is refused (-ELOOP) before anything is created, truncated
 * or written, so a root daemon cannot be pointed through a planted link at a file of someone else's.
 * (Directories in the path are followed: they are the user's choice, and a link there is no trap of the
 * last moment.)
 *
 * Modes: OUTFILE_MODE (0640) for outputs, OUTFILE_MODE_PRIVATE (0600) for anything holding key material or
 * other people's data (packet captures). A new file gets exactly that mode (not widened by the umask nor
 * narrowed by it); an existing regular file keeps its owner and loses any permission bit beyond it.
 *
 * Two ways to write, chosen by the kind of output:
 *  - replaced whole (a report, a page): outfile_tmp_open() writes a temporary file in the same directory and
 *    outfile_tmp_commit() renames it over the path, so a reader never sees a half-written file and a
 *    failed run leaves the old one. rename() replaces a link at the path itself, never what it points to;
 *    a device or a FIFO at the path is written in place (renaming over /dev/null would replace it).
 *  - streamed for a long run (a record file, a capture, appended lines): outfile_open() writes in place, so
 *    what a killed run wrote stays readable and a pipe or /dev/null works. O_TRUNC is applied only after
 *    O_NOFOLLOW has made sure the path is no link, so nothing is ever truncated through one.
 * No allocation, no stdio: the preload library opens its files with it. Any thread.
 */
#ifndef VNOISE_UTIL_OUTFILE_H
#define VNOISE_UTIL_OUTFILE_H

#include <stddef.h>
#include <sys/types.h>

#define OUTFILE_MODE 0640
#define OUTFILE_MODE_PRIVATE 0600

/*
 * Open path for writing in place: O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY with flags (O_TRUNC,
 * O_APPEND or 0) added. The fd (owned by the caller), or -errno: -ELOOP when path is a symbolic link.
 */
int outfile_open(const char *path, int flags, mode_t mode) __attribute__((warn_unused_result));
/*
 * Create a temporary file beside path ("PATH.tmp.XXXXXX", its name into tmp[tmplen]) to be renamed over path
 * by outfile_tmp_commit(). The fd (owned by the caller: write, fsync and close it first), or -errno: -ELOOP
 * when path is a symbolic link, -EISDIR for a directory, -ENAMETOOLONG when the name does not fit in tmp.
 * A path that is neither absent nor a regular file (a device such as /dev/null, a FIFO) is opened in place
 * instead, tmp set to "": a rename would replace the device node itself.
 */
int outfile_tmp_open(const char *path, char *tmp, size_t tmplen, mode_t mode)
    __attribute__((warn_unused_result));
/* Rename the (closed) temporary file tmp over path (tmp "": written in place, nothing to do); on failure
 * remove tmp. 0 or -errno. */
int outfile_tmp_commit(const char *tmp, const char *path) __attribute__((warn_unused_result));
/* strerror(-err), but for -ELOOP the reason vnoise refuses it: "a symbolic link (...)". */
const char *outfile_strerror(int err);
/*
 * The exit code (cli/exitcode.h) for an output file that could not be written (err, -errno): EXIT_SYMLINK
 * for a link refused, EXIT_CANNOT for a full disk, a quota or a file size limit, else EXIT_FAIL.
 */
int outfile_exit_code(int err);

#endif
