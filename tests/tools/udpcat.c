/* SPDX-License-Identifier: MIT */
/*
 * udpcat: test tool. Binds a UDP socket on 127.0.0.1 (port 0: the kernel picks one, printed first as
 * "port N"), then prints every datagram received as one line until none arrives for IDLE seconds or COUNT
 * datagrams were received: udpcat IDLE_S [COUNT]. Exit 0.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	static char buf[65536];
	int fd, idle, count, n = 0;

	if (argc < 2 || (idle = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: udpcat IDLE_S [COUNT]\n");
		return 2;
	}
	count = argc > 2 ? atoi(argv[2]) : 0;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &al)) {
		perror("udpcat");
		return 1;
	}
	printf("port %d\n", ntohs(a.sin_port));
	fflush(stdout);
	while (!count || n < count) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&pf, 1, idle * 1000) <= 0)
			break;
		r = recv(fd, buf, sizeof(buf) - 1, 0);
		if (r < 0)
			break;
		buf[r] = 0;
		printf("%s\n", buf);
		fflush(stdout);
		n++;
	}
	return 0;
}
