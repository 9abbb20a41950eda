/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * model_bench: throughput of the QEMU-free device model on one core.
 * Two model instances cabled back to back in one process (the test
 * harness's simulated hosts), one RC QP pair, a stream of RDMA WRITEs.
 * Prints simulated packets and payload bytes per host second.  It asserts
 * nothing about time: it is a benchmark, not a test.
 *
 *   model_bench [size=4096] [count=200000] [mtu=4096]
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned ib_mtu(unsigned bytes)
{
	unsigned m = QRNIC_MTU_256;

	while (m < QRNIC_MTU_4096 && (128u << (m + 1)) <= bytes)
		m++;
	return m;
}

int main(int argc, char **argv)
{
	uint32_t size = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 4096;
	uint64_t count = argc > 2 ? strtoull(argv[2], NULL, 0) : 200000;
	unsigned mtu = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 4096;
	const unsigned sq_log = 8, depth = 1u << sq_log;
	hx_world *w = hx_world_new(64ull << 20, 1);
	struct hx_pair p;
	struct qrnic_cqe cqe[64];
	uint64_t posted = 0, done = 0, va = 0x10000000ull;
	int64_t mr[2];
	double t0, t1;
	uint64_t pkts, bytes, sim_ns;

	/* The harness copies every frame onto its wire queue; keep freed
	 * memory instead of returning it to the kernel on every frame. */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	if (!w || hx_dev_add(w, "") != 0 || hx_dev_add(w, "") != 1 ||
	    hx_setup_rc_pair(w, ib_mtu(mtu), sq_log, 12, &p) != 0) {
		fprintf(stderr, "model_bench: setup failed: %s\n", w ? hx_world_error(w) : "no memory");
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		mr[i] = hx_reg_mr(w, i, (uint32_t)p.pd[i], QRNIC_ACCESS_ALL, va, size ? size : 1, 12,
				  -1, 0);
		if (mr[i] < 0) {
			fprintf(stderr, "model_bench: reg_mr failed: %s\n", hx_world_error(w));
			return 1;
		}
	}
	t0 = now_s();
	while (done < count) {
		while (posted < count && posted - done < depth) {
			uint32_t len = size, lk = (uint32_t)mr[0];

			if (hx_post_send(w, 0, (uint32_t)p.qp[0], QRNIC_WR_RDMA_WRITE,
					 QRNIC_WQE_F_SIGNALED, posted, 1, &va, &len, &lk, NULL, 0, 0,
					 (uint32_t)mr[1], va, 0, 0, 0, 0, 0, 0) < 0)
				break;
			posted++;
		}
		hx_ring_sq(w, 0, (uint32_t)p.qp[0]);
		hx_run(w, UINT64_MAX, 64);
		for (int n; (n = hx_poll_cq(w, 0, (uint32_t)p.cq[0], cqe, 64)) > 0; ) {
			for (int i = 0; i < n; i++) {
				if (cqe[i].status != QRNIC_WC_SUCCESS) {
					fprintf(stderr, "model_bench: WQE %llu status %u\n",
						(unsigned long long)cqe[i].wr_id, cqe[i].status);
					return 1;
				}
			}
			done += (uint64_t)n;
		}
	}
	t1 = now_s();
	pkts = hx_dev_stat(w, 0, QRNIC_STAT_TX_PACKETS) + hx_dev_stat(w, 1, QRNIC_STAT_TX_PACKETS);
	bytes = (uint64_t)size * count;
	sim_ns = hx_now(w);
	printf("model_bench: %llu RDMA WRITEs of %u bytes, path MTU %u, one core\n",
	       (unsigned long long)count, size, 128u << ib_mtu(mtu));
	printf("  host time          %.3f s\n", t1 - t0);
	printf("  packets on wire    %llu (requests %llu, ACKs %llu)\n", (unsigned long long)pkts,
	       (unsigned long long)hx_dev_stat(w, 0, QRNIC_STAT_TX_PACKETS),
	       (unsigned long long)hx_dev_stat(w, 1, QRNIC_STAT_TX_PACKETS));
	printf("  packets/host-s     %.0f\n", pkts / (t1 - t0));
	printf("  payload bytes/host-s %.0f (%.2f Gb/s)\n", bytes / (t1 - t0),
	       bytes * 8 / (t1 - t0) / 1e9);
	printf("  messages/host-s    %.0f\n", count / (t1 - t0));
	printf("  simulated time     %llu ns (functional profile: the device takes no time)\n",
	       (unsigned long long)sim_ns);
	hx_world_free(w);
	return 0;
}
