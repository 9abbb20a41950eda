/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * harness_smoke: the harness used from C.  Two cabled devices, bring-up,
 * one RC connection, a 5000-byte SEND and a 5000-byte RDMA WRITE, both
 * checked byte for byte.  Exit 0 on success; prints the failing step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fprintf(stderr, " [%s]\n", hx_world_error(w)); exit(1); } } while (0)

int main(void)
{
	hx_world *w = hx_world_new(64ull << 20, 1);
	struct hx_pair p;
	int64_t mr[2];
	uint8_t src[5000], dst[5000];
	struct qrnic_cqe cqe[4];
	int n;

	CHECK(w, "world");
	for (int i = 0; i < 2; i++)
		CHECK(hx_dev_add(w, "") == i, "dev_add");
	CHECK(hx_setup_rc_pair(w, QRNIC_MTU_1024, 6, 8, &p) == 0, "setup");
	for (int i = 0; i < 2; i++) {
		mr[i] = hx_reg_mr(w, i, (uint32_t)p.pd[i], QRNIC_ACCESS_ALL, 0x7f0000001000ull + 123,
				  sizeof(src), 12, -1, HX_MR_SHUFFLE);
		CHECK(mr[i] >= 0, "reg_mr %lld", (long long)mr[i]);
	}
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	CHECK(hx_mr_write(w, 0, (uint32_t)mr[0], 0, src, sizeof(src)) == 0, "mr_write");

	/* SEND */
	{
		uint64_t ra = 0x7f0000001000ull + 123, la = ra;
		uint32_t len = sizeof(src), rk = (uint32_t)mr[1], lk = (uint32_t)mr[0];

		CHECK(hx_post_recv(w, 1, (uint32_t)p.qp[1], 77, 1, &ra, &len, &rk, 1) >= 0, "post_recv");
		CHECK(hx_post_send(w, 0, (uint32_t)p.qp[0], QRNIC_WR_SEND, QRNIC_WQE_F_SIGNALED, 55,
				   1, &la, &len, &lk, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1) >= 0, "post_send");
	}
	n = hx_run(w, 1000000000ull, 1000000);
	CHECK(n == HX_RUN_IDLE, "run %d", n);
	n = hx_poll_cq(w, 0, (uint32_t)p.cq[0], cqe, 4);
	CHECK(n == 1 && cqe[0].status == 0 && cqe[0].wr_id == 55, "send cqe n=%d st=%d", n, cqe[0].status);
	n = hx_poll_cq(w, 1, (uint32_t)p.cq[1], cqe, 4);
	CHECK(n == 1 && cqe[0].status == 0 && cqe[0].wr_id == 77 && cqe[0].byte_len == sizeof(src),
	      "recv cqe n=%d st=%d len=%u", n, cqe[0].status, cqe[0].byte_len);
	CHECK(hx_mr_read(w, 1, (uint32_t)mr[1], 0, dst, sizeof(dst)) == 0, "mr_read");
	CHECK(memcmp(src, dst, sizeof(src)) == 0, "SEND data mismatch");

	/* RDMA WRITE of a different pattern */
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 13 + 1);
	hx_mr_write(w, 0, (uint32_t)mr[0], 0, src, sizeof(src));
	{
		uint64_t la = 0x7f0000001000ull + 123;
		uint32_t len = sizeof(src), lk = (uint32_t)mr[0];

		CHECK(hx_post_send(w, 0, (uint32_t)p.qp[0], QRNIC_WR_RDMA_WRITE, QRNIC_WQE_F_SIGNALED, 56,
				   1, &la, &len, &lk, NULL, 0, 0, (uint32_t)mr[1], la, 0, 0, 0, 0, 0, 1) >= 0,
		      "post write");
	}
	n = hx_run(w, 1000000000ull, 1000000);
	CHECK(n == HX_RUN_IDLE, "run %d", n);
	n = hx_poll_cq(w, 0, (uint32_t)p.cq[0], cqe, 4);
	CHECK(n == 1 && cqe[0].status == 0 && cqe[0].wr_id == 56, "write cqe n=%d st=%d", n, cqe[0].status);
	hx_mr_read(w, 1, (uint32_t)mr[1], 0, dst, sizeof(dst));
	CHECK(memcmp(src, dst, sizeof(src)) == 0, "WRITE data mismatch");

	hx_world_free(w);
	printf("harness_smoke: PASS\n");
	return 0;
}
