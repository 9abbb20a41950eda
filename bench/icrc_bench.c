/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * icrc_bench: nanoseconds per qrnic_icrc() call on IPv4 RoCEv2 frames of
 * 64 B, 1 KiB and 4 KiB, on IPv6 frames 20 bytes longer (the same
 * payloads), and per qrnic_crc32() over 64 B, 1 KiB and 4 KiB, from a warm
 * cache.  Best of `reps` runs of `iters` calls each
 * (the machine is noisy).  Prints figures, asserts nothing.
 *
 *   icrc_bench [iters=200000] [reps=7]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "qrnic_wire.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* A frame qrnic_icrc() accepts: random bytes under a valid Ethernet
 * type, IP version and IP length. */
static void make_frame(uint8_t *f, size_t len, bool ipv6)
{
	size_t ip = len - QRNIC_ETH_HLEN;

	for (size_t i = 0; i < len; i++)
		f[i] = (uint8_t)(rand() >> 7);
	f[12] = ipv6 ? 0x86 : 0x08;
	f[13] = ipv6 ? 0xdd : 0x00;
	if (ipv6) {
		f[QRNIC_ETH_HLEN] = 0x60;
		f[QRNIC_ETH_HLEN + 4] = (uint8_t)((ip - QRNIC_IPV6_HLEN) >> 8);
		f[QRNIC_ETH_HLEN + 5] = (uint8_t)(ip - QRNIC_IPV6_HLEN);
	} else {
		f[QRNIC_ETH_HLEN] = 0x45;
		f[QRNIC_ETH_HLEN + 2] = (uint8_t)(ip >> 8);
		f[QRNIC_ETH_HLEN + 3] = (uint8_t)ip;
	}
}

static volatile uint32_t sink;

int main(int argc, char **argv)
{
	long iters = argc > 1 ? strtol(argv[1], NULL, 0) : 200000;
	int reps = argc > 2 ? atoi(argv[2]) : 7;
	static const size_t sizes[] = { 64, 1024, 4096 };
	static uint8_t f[4096 + QRNIC_IPV6_HLEN - QRNIC_IPV4_HLEN];

	printf("%-22s %8s %8s\n", "what", "ns/call", "GB/s");
	for (int k = 0; k < 3; k++) {
		for (int v6 = 0; v6 < 3; v6++) {	/* 2: plain qrnic_crc32 */
			size_t len = sizes[k] + (v6 == 1 ? QRNIC_IPV6_HLEN - QRNIC_IPV4_HLEN : 0);
			double best = 1e30;
			char name[32];

			make_frame(f, len, v6 == 1);
			for (int r = 0; r < reps; r++) {
				uint32_t acc = 0;
				double t0 = now_ns();

				if (v6 == 2)
					for (long i = 0; i < iters; i++)
						acc += qrnic_crc32((uint32_t)i, f, len);
				else
					for (long i = 0; i < iters; i++) {
						f[len - 5] = (uint8_t)i;	/* not hoisted */
						acc += qrnic_icrc(f, len);
					}
				sink = acc;
				t0 = (now_ns() - t0) / (double)iters;
				if (t0 < best)
					best = t0;
			}
			snprintf(name, sizeof(name), "%s %zu B", v6 == 2 ? "crc32" : v6 ? "icrc ipv6" : "icrc ipv4",
				 len);
			printf("%-22s %8.1f %8.2f\n", name, best, len / best);
		}
	}
	return 0;
}
