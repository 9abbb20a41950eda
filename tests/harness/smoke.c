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

static void gid_v4(uint8_t *g, int host)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	g[12] = 10;
	g[15] = (uint8_t)host;
}

int main(void)
{
	hx_world *w = hx_world_new(64ull << 20, 1);
	int64_t pd[2], cq[2], qp[2], mr[2], eq[2];
	uint8_t gid[2][16], src[5000], dst[5000];
	struct qrnic_cqe cqe[4];
	int n;

	CHECK(w, "world");
	for (int i = 0; i < 2; i++) {
		CHECK(hx_dev_add(w, "") == i, "dev_add");
		CHECK(hx_drv_bringup(w, i, 5) == 0, "bringup %d", i);
		gid_v4(gid[i], i + 1);
		CHECK(hx_set_gid(w, i, 0, 1, QRNIC_NET_IPV4, gid[i]) == 0, "set_gid");
		eq[i] = hx_create_eq(w, i, 6, 1, 0);
		CHECK(eq[i] > 0, "create_eq %lld", (long long)eq[i]);
		pd[i] = hx_create_pd(w, i, 0);
		CHECK(pd[i] > 0, "create_pd %lld", (long long)pd[i]);
		cq[i] = hx_create_cq(w, i, 0, (uint32_t)eq[i], 8, 1);
		CHECK(cq[i] > 0, "create_cq %lld", (long long)cq[i]);
		qp[i] = hx_create_qp(w, i, 0, (uint32_t)pd[i], (uint32_t)cq[i], (uint32_t)cq[i],
				     QRNIC_QPT_RC, 6, 9, 6, 9, 0);
		CHECK(qp[i] > 1, "create_qp %lld", (long long)qp[i]);
		mr[i] = hx_reg_mr(w, i, (uint32_t)pd[i], QRNIC_ACCESS_ALL, 0x7f0000001000ull + 123,
				  sizeof(src), 12, -1, HX_MR_SHUFFLE);
		CHECK(mr[i] >= 0, "reg_mr %lld", (long long)mr[i]);
	}
	CHECK(hx_cable(w, 0, 1) == 0, "cable");
	for (int i = 0; i < 2; i++) {
		struct qrnic_qp_attr a;
		int o = 1 - i;

		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
			      QRNIC_QP_ATTR_ACCESS_FLAGS;
		a.qp_state = QRNIC_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_READ |
				    QRNIC_ACCESS_REMOTE_ATOMIC;
		CHECK(hx_modify_qp(w, i, (uint32_t)qp[i], &a) == 0, "INIT");
		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_AV | QRNIC_QP_ATTR_PATH_MTU |
			      QRNIC_QP_ATTR_DEST_QPN | QRNIC_QP_ATTR_RQ_PSN |
			      QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC | QRNIC_QP_ATTR_MIN_RNR_TIMER;
		a.qp_state = QRNIC_QPS_RTR;
		a.path_mtu = QRNIC_MTU_1024;
		a.dest_qpn = (uint32_t)qp[o];
		a.rq_psn = 100;
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		memcpy(a.av.dgid, gid[o], 16);
		memcpy(a.av.dmac, hx_mac(w, o), 6);
		a.av.net_type = QRNIC_NET_IPV4;
		CHECK(hx_modify_qp(w, i, (uint32_t)qp[i], &a) == 0, "RTR");
		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_TIMEOUT | QRNIC_QP_ATTR_RETRY_CNT |
			      QRNIC_QP_ATTR_RNR_RETRY | QRNIC_QP_ATTR_SQ_PSN | QRNIC_QP_ATTR_MAX_QP_RD_ATOMIC;
		a.qp_state = QRNIC_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.sq_psn = 100;
		a.max_rd_atomic = 4;
		CHECK(hx_modify_qp(w, i, (uint32_t)qp[i], &a) == 0, "RTS");
	}
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	CHECK(hx_mr_write(w, 0, (uint32_t)mr[0], 0, src, sizeof(src)) == 0, "mr_write");

	/* SEND */
	{
		uint64_t ra = 0x7f0000001000ull + 123, la = ra;
		uint32_t len = sizeof(src), rk = (uint32_t)mr[1], lk = (uint32_t)mr[0];

		CHECK(hx_post_recv(w, 1, (uint32_t)qp[1], 77, 1, &ra, &len, &rk, 1) >= 0, "post_recv");
		CHECK(hx_post_send(w, 0, (uint32_t)qp[0], QRNIC_WR_SEND, QRNIC_WQE_F_SIGNALED, 55,
				   1, &la, &len, &lk, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1) >= 0, "post_send");
	}
	n = hx_run(w, 1000000000ull, 1000000);
	CHECK(n == HX_RUN_IDLE, "run %d", n);
	n = hx_poll_cq(w, 0, (uint32_t)cq[0], cqe, 4);
	CHECK(n == 1 && cqe[0].status == 0 && cqe[0].wr_id == 55, "send cqe n=%d st=%d", n, cqe[0].status);
	n = hx_poll_cq(w, 1, (uint32_t)cq[1], cqe, 4);
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

		CHECK(hx_post_send(w, 0, (uint32_t)qp[0], QRNIC_WR_RDMA_WRITE, QRNIC_WQE_F_SIGNALED, 56,
				   1, &la, &len, &lk, NULL, 0, 0, (uint32_t)mr[1], la, 0, 0, 0, 0, 0, 1) >= 0,
		      "post write");
	}
	n = hx_run(w, 1000000000ull, 1000000);
	CHECK(n == HX_RUN_IDLE, "run %d", n);
	n = hx_poll_cq(w, 0, (uint32_t)cq[0], cqe, 4);
	CHECK(n == 1 && cqe[0].status == 0 && cqe[0].wr_id == 56, "write cqe n=%d st=%d", n, cqe[0].status);
	hx_mr_read(w, 1, (uint32_t)mr[1], 0, dst, sizeof(dst));
	CHECK(memcmp(src, dst, sizeof(src)) == 0, "WRITE data mismatch");

	hx_world_free(w);
	printf("harness_smoke: PASS\n");
	return 0;
}
