/* SPDX-License-Identifier: MIT */
/*
 * crc32: the standard CRC-32 (ISO-HDLC, the one of zlib, gzip, PNG and Ethernet: reflected polynomial
 * 0xEDB88320, initial value and final xor 0xFFFFFFFF), computed with one const 256-entry table and no zlib.
 * It guards the record file's headers and payloads (protocol/record.h). Pure function, thread-safe.
 */
#ifndef VNOISE_UTIL_CRC32_H
#define VNOISE_UTIL_CRC32_H

#include <stddef.h>
#include <stdint.h>

/*
 * Continue a CRC over buf[0..len): start with crc = 0, pass each result back in for the next piece. Same
 * values as zlib's crc32(): crc32_update(0, "123456789", 9) == 0xCBF43926. buf may be NULL when len == 0.
 */
uint32_t crc32_update(uint32_t crc, const void *buf, size_t len);

#endif
