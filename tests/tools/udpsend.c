/* SPDX-License-Identifier: MIT */
/*
 * udpsend: test tool. Sends COUNT UDP datagrams of SIZE bytes of payload to IPv4 address DST, port PORT, from
 * one unconnected socket (so ICMP errors coming back do not fail later sends), GAP_US microseconds apart
 * (default 1000): udpsend DST PORT COUNT SIZE [GAP_US]. Prints "port N" (its source port) first and
 * "sent N" at the end. Exit 0 when every datagram went out whole, 1 otherwise, 2 on bad arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int num(const char *s, long min, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || end == s || *end || *out < min || *out > max ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in dst = { .sin_family = AF_INET }, me = { .sin_family = AF_INET };
	socklen_t al = sizeof(me);
	static char buf[65507];
	long port, count, size, gap = 1000, i, sent = 0;
	int fd;

	if ((argc != 5 && argc != 6) || inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1 ||
	    num(argv[2], 1, 65535, &port) || num(argv[3], 0, 100000000, &count) ||
	    num(argv[4], 0, (long)sizeof(buf), &size) ||
	    (argc == 6 && num(argv[5], 0, 10000000, &gap))) {
		fprintf(stderr, "usage: udpsend DST_IPV4 PORT COUNT SIZE [GAP_US]\n");
		return 2;
	}
	dst.sin_port = htons((uint16_t)port);
	memset(buf, 'v', (size_t)size);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
	    getsockname(fd, (struct sockaddr *)&me, &al)) {
		perror("udpsend");
		return 1;
	}
	printf("port %d\n", ntohs(me.sin_port));
	fflush(stdout);
	for (i = 0; i < count; i++) {
		struct timespec ts = { .tv_sec = gap / 1000000, .tv_nsec = gap % 1000000 * 1000 };

		if (sendto(fd, buf, (size_t)size, 0, (struct sockaddr *)&dst, sizeof(dst)) == size)
			sent++;
		else
			perror("udpsend: sendto");
		if (gap && i + 1 < count)
			nanosleep(&ts, NULL);
	}
	printf("sent %ld\n", sent);
	close(fd);
	return sent == count ? 0 : 1;
}
