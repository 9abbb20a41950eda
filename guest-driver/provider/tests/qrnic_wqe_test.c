// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Byte-layout tests of the provider's WQE, CQE and doorbell helpers
 * (qrnic_wqe.h) against the device ABI.  Expected bytes are spelled out
 * from the offset tables of docs/spec.md (8.1, 8.4, 9.1, 3.2), not taken
 * from the structures, so a structure and the spec cannot drift apart
 * together unnoticed.  No device needed.
 *
 * Prints one line per failed check and closes with "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>

#include "qrnic_wqe.h"
#include "qrnic_uverbs.h"

static int passed, failed;

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (cond) {                                                  \
			passed++;                                            \
		} else {                                                     \
			failed++;                                            \
			printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		}                                                            \
	} while (0)

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static void wr64(uint8_t *p, uint64_t v)
{
	wr32(p, (uint32_t)v);
	wr32(p + 4, (uint32_t)(v >> 32));
}

static bool all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/* ---- ABI structure layout (spec tables) ------------------------------- */

static void test_layouts(void)
{
	CHECK(sizeof(struct qrnic_send_wqe) == 64);
	CHECK(offsetof(struct qrnic_send_wqe, opcode) == 0);
	CHECK(offsetof(struct qrnic_send_wqe, flags) == 1);
	CHECK(offsetof(struct qrnic_send_wqe, num_sge) == 2);
	CHECK(offsetof(struct qrnic_send_wqe, inline_len) == 4);
	CHECK(offsetof(struct qrnic_send_wqe, wr_id) == 8);
	CHECK(offsetof(struct qrnic_send_wqe, imm_data) == 16);
	CHECK(offsetof(struct qrnic_send_wqe, rkey) == 20);
	CHECK(offsetof(struct qrnic_send_wqe, remote_addr) == 24);
	CHECK(offsetof(struct qrnic_send_wqe, compare_add) == 32);
	CHECK(offsetof(struct qrnic_send_wqe, swap) == 40);
	CHECK(offsetof(struct qrnic_send_wqe, ah) == 48);
	CHECK(offsetof(struct qrnic_send_wqe, remote_qpn) == 52);
	CHECK(offsetof(struct qrnic_send_wqe, remote_qkey) == 56);
	CHECK(sizeof(struct qrnic_sge) == 16);
	CHECK(offsetof(struct qrnic_sge, length) == 8);
	CHECK(offsetof(struct qrnic_sge, lkey) == 12);
	CHECK(sizeof(struct qrnic_recv_wqe) == 16);
	CHECK(offsetof(struct qrnic_recv_wqe, num_sge) == 8);
	CHECK(sizeof(struct qrnic_cqe) == 32);
	CHECK(offsetof(struct qrnic_cqe, byte_len) == 8);
	CHECK(offsetof(struct qrnic_cqe, imm_data) == 12);
	CHECK(offsetof(struct qrnic_cqe, qpn) == 16);
	CHECK(offsetof(struct qrnic_cqe, src_qp) == 20);
	CHECK(offsetof(struct qrnic_cqe, status) == 24);
	CHECK(offsetof(struct qrnic_cqe, opcode) == 25);
	CHECK(offsetof(struct qrnic_cqe, flags) == 26);
	CHECK(offsetof(struct qrnic_cqe, vendor_err) == 27);
	CHECK(offsetof(struct qrnic_cqe, wqe_index) == 28);
	CHECK(offsetof(struct qrnic_cqe, owner) == 31);
	/* the provider's view of the uverbs ABI */
	CHECK(sizeof(struct qrnic_alloc_ucontext_resp) == 32);
	CHECK(offsetof(struct qrnic_alloc_ucontext_resp, db_mmap_key) == 8);
	CHECK(sizeof(struct qrnic_create_cq_resp) == 32);
	CHECK(offsetof(struct qrnic_create_cq_resp, dbrec_offset) == 24);
	CHECK(sizeof(struct qrnic_create_qp_resp) == 56);
	CHECK(offsetof(struct qrnic_create_qp_resp, sq_dbrec_offset) == 48);
	CHECK(offsetof(struct qrnic_create_qp_resp, sq_log_depth) == 4);
	CHECK(offsetof(struct qrnic_create_qp_resp, rq_wqe_shift) == 7);
	CHECK(offsetof(struct qrnic_create_qp_resp, sq_mmap_key) == 8);
	CHECK(offsetof(struct qrnic_create_qp_resp, max_inline) == 40);
	CHECK(sizeof(struct qrnic_create_srq_resp) == 32);
	CHECK(offsetof(struct qrnic_create_srq_resp, log_depth) == 4);
	CHECK(offsetof(struct qrnic_create_srq_resp, wqe_shift) == 5);
	CHECK(offsetof(struct qrnic_create_srq_resp, mmap_key) == 8);
	CHECK(offsetof(struct qrnic_create_srq_resp, mmap_size) == 16);
	CHECK(offsetof(struct qrnic_create_srq_resp, dbrec_offset) == 24);
	CHECK(sizeof(struct qrnic_create_ah_resp) == 8);
	/* the ibv values the ABI claims to share */
	CHECK(QRNIC_WR_RDMA_WRITE == IBV_WR_RDMA_WRITE);
	CHECK(QRNIC_WR_RDMA_WRITE_WITH_IMM == IBV_WR_RDMA_WRITE_WITH_IMM);
	CHECK(QRNIC_WR_SEND == IBV_WR_SEND);
	CHECK(QRNIC_WR_SEND_WITH_IMM == IBV_WR_SEND_WITH_IMM);
	CHECK(QRNIC_WR_RDMA_READ == IBV_WR_RDMA_READ);
	CHECK(QRNIC_WR_ATOMIC_CMP_AND_SWP == IBV_WR_ATOMIC_CMP_AND_SWP);
	CHECK(QRNIC_WR_ATOMIC_FETCH_AND_ADD == IBV_WR_ATOMIC_FETCH_AND_ADD);
	CHECK(QRNIC_WR_LOCAL_INV == IBV_WR_LOCAL_INV);
	CHECK(QRNIC_WR_SEND_WITH_INV == IBV_WR_SEND_WITH_INV);
	CHECK(QRNIC_WC_OP_LOCAL_INV == IBV_WC_LOCAL_INV);
	CHECK(QRNIC_WC_SUCCESS == IBV_WC_SUCCESS);
	CHECK(QRNIC_WC_WR_FLUSH_ERR == IBV_WC_WR_FLUSH_ERR);
	CHECK(QRNIC_WC_RNR_RETRY_EXC_ERR == IBV_WC_RNR_RETRY_EXC_ERR);
	CHECK(QRNIC_WC_GENERAL_ERR == IBV_WC_GENERAL_ERR);
	CHECK(QRNIC_WC_OP_SEND == IBV_WC_SEND);
	CHECK(QRNIC_WC_OP_RDMA_WRITE == IBV_WC_RDMA_WRITE);
	CHECK(QRNIC_WC_OP_RDMA_READ == IBV_WC_RDMA_READ);
	CHECK(QRNIC_WC_OP_COMP_SWAP == IBV_WC_COMP_SWAP);
	CHECK(QRNIC_WC_OP_FETCH_ADD == IBV_WC_FETCH_ADD);
	CHECK(QRNIC_WC_OP_RECV == IBV_WC_RECV);
	CHECK(QRNIC_WC_OP_RECV_RDMA_WITH_IMM == IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK(QRNIC_QPT_RC == IBV_QPT_RC && QRNIC_QPT_UD == IBV_QPT_UD);
}

/* ---- geometry ----------------------------------------------------------- */

static void test_geometry(void)
{
	CHECK(qrnic_sq_max_sge(6) == 0);
	CHECK(qrnic_sq_max_sge(7) == 4);
	CHECK(qrnic_sq_max_sge(8) == 12);
	CHECK(qrnic_sq_max_sge(9) == 28);
	CHECK(qrnic_sq_max_sge(10) == 30);	/* room for 60, capped */
	CHECK(qrnic_sq_max_inline(6) == 0);
	CHECK(qrnic_sq_max_inline(9) == 448);
	CHECK(qrnic_sq_max_inline(10) == 448);	/* room for 960, capped */
	CHECK(qrnic_rq_max_sge(5) == 1);
	CHECK(qrnic_rq_max_sge(6) == 3);
	CHECK(qrnic_rq_max_sge(8) == 15);
	CHECK(qrnic_rq_max_sge(9) == 30);	/* room for 31, capped */
}

/* ---- doorbells (spec 3.2) ------------------------------------------------ */

static void test_doorbells(void)
{
	uint64_t v;

	v = qrnic_db_wq_val(0x123456, 0x89abcdef);
	CHECK((v & 0xffffff) == 0x123456);
	CHECK(((v >> 24) & 0xff) == 0);
	CHECK((v >> 32) == 0x89abcdef);
	CHECK(qrnic_db_wq_val(0xff000007, 5) == (7ull | 5ull << 32));

	v = qrnic_db_cq_val(0x42, 0xfffffffe, false, false);
	CHECK(v == (0x42ull | 0xfffffffeull << 32));
	v = qrnic_db_cq_val(0x42, 7, true, false);
	CHECK(v == (0x42ull | 1ull << 24 | 7ull << 32));
	v = qrnic_db_cq_val(0x42, 7, true, true);
	CHECK(v == (0x42ull | 1ull << 24 | 1ull << 25 | 7ull << 32));
	/* solicited without arm means nothing */
	CHECK(qrnic_db_cq_val(1, 0, false, true) == 1);
	CHECK(QRNIC_DB_SQ == 0x00 && QRNIC_DB_RQ == 0x08 && QRNIC_DB_CQ == 0x10);
	/* SRQ doorbell: [23:0] srqn, [63:32] producer index, at 0x18 */
	CHECK(QRNIC_DB_SRQ == 0x18);
	CHECK(qrnic_db_wq_val(0x000abc, 0x10000) == (0xabcull | 0x10000ull << 32));
}

/* ---- send WQEs (spec 8.1-8.3) ------------------------------------------- */

static const struct qrnic_sq_params rc_params = {
	.wqe_shift = 9, .max_sge = 16, .max_inline = 448,
};

static void test_send_rdma_write(void)
{
	uint8_t slot[512];
	struct ibv_sge sg[3] = {
		{ .addr = 0x1122334455667788ull, .length = 0x1000, .lkey = 0xabcd01 },
		{ .addr = 0x10, .length = 0, .lkey = 0x200 },
		{ .addr = 0xfffffffffffff000ull, .length = 0x7fffffff, .lkey = 0xffffffff },
	};
	struct ibv_send_wr wr = {
		.wr_id = 0xdeadbeefcafef00dull, .sg_list = sg, .num_sge = 3,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE,
		.imm_data = htobe32(0x01020304),
	};
	unsigned int n;

	wr.wr.rdma.remote_addr = 0x0102030405060708ull;
	wr.wr.rdma.rkey = 0x9900aa;
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == 0);
	memset(slot, 0xee, sizeof(slot));
	n = qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(n == 64 + 3 * 16);
	CHECK(slot[0] == 1);			/* RDMA_WRITE_WITH_IMM */
	CHECK(slot[1] == (1 | 2 | 8));		/* SIGNALED|SOLICITED|FENCE */
	CHECK(slot[2] == 3);
	CHECK(slot[3] == 0);
	CHECK(rd32(slot + 4) == 0);
	CHECK(rd64(slot + 8) == 0xdeadbeefcafef00dull);
	/* imm: network order, the bytes on the wire */
	CHECK(slot[16] == 1 && slot[17] == 2 && slot[18] == 3 && slot[19] == 4);
	CHECK(rd32(slot + 20) == 0x9900aa);
	CHECK(rd64(slot + 24) == 0x0102030405060708ull);
	CHECK(all_zero(slot + 32, 32));	/* atomics, UD, rsvd1 */
	CHECK(rd64(slot + 64) == 0x1122334455667788ull);
	CHECK(rd32(slot + 72) == 0x1000);
	CHECK(rd32(slot + 76) == 0xabcd01);
	CHECK(rd64(slot + 80) == 0x10 && rd32(slot + 88) == 0 &&
	      rd32(slot + 92) == 0x200);
	CHECK(rd64(slot + 96) == 0xfffffffffffff000ull);
	CHECK(rd32(slot + 104) == 0x7fffffff);
	CHECK(rd32(slot + 108) == 0xffffffff);
	CHECK(slot[112] == 0xee);		/* nothing written past the SGEs */
}

static void test_send_signal_all_and_read(void)
{
	struct qrnic_sq_params p = rc_params;
	struct ibv_sge sg = { .addr = 0x5000, .length = 64, .lkey = 7 };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sg, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ,
		/* INLINE is meaningless for READ: ignored, SGE used */
		.send_flags = IBV_SEND_INLINE,
	};
	uint8_t slot[512];

	wr.wr.rdma.remote_addr = 0xaaaa;
	wr.wr.rdma.rkey = 0xbbbb;
	memset(slot, 0xee, sizeof(slot));
	CHECK(qrnic_check_send_wr(&wr, &p) == 0);
	qrnic_build_send_wqe(slot, &wr, &p);
	CHECK(slot[0] == 4);
	CHECK(slot[1] == 0);			/* unsignaled */
	CHECK(slot[2] == 1);
	CHECK(rd32(slot + 16) == 0);		/* no imm */
	CHECK(rd32(slot + 20) == 0xbbbb && rd64(slot + 24) == 0xaaaa);
	CHECK(rd64(slot + 64) == 0x5000 && rd32(slot + 72) == 64 &&
	      rd32(slot + 76) == 7);

	p.sig_all = true;
	qrnic_build_send_wqe(slot, &wr, &p);
	CHECK(slot[1] == 1);			/* SIGNALED by sq_sig_all */
}

static void test_send_atomics(void)
{
	struct ibv_sge sg = { .addr = 0x7000, .length = 8, .lkey = 0x301 };
	struct ibv_send_wr wr = {
		.wr_id = 77, .sg_list = &sg, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
		.send_flags = IBV_SEND_SIGNALED,
	};
	uint8_t slot[64 + 16];

	wr.wr.atomic.remote_addr = 0x8008;
	wr.wr.atomic.compare_add = 0x0123456789abcdefull;
	wr.wr.atomic.swap = 0xfedcba9876543210ull;
	wr.wr.atomic.rkey = 0x4402;
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == 0);
	memset(slot, 0xee, sizeof(slot));
	qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(slot[0] == 5 && slot[1] == 1 && slot[2] == 1);
	CHECK(rd32(slot + 20) == 0x4402);
	CHECK(rd64(slot + 24) == 0x8008);
	CHECK(rd64(slot + 32) == 0x0123456789abcdefull);
	CHECK(rd64(slot + 40) == 0xfedcba9876543210ull);
	CHECK(rd64(slot + 64) == 0x7000 && rd32(slot + 72) == 8);

	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	memset(slot, 0xee, sizeof(slot));
	qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(slot[0] == 6);
	CHECK(rd64(slot + 32) == 0x0123456789abcdefull);
	CHECK(rd64(slot + 40) == 0);		/* swap unused */

	wr.num_sge = 2;
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == EINVAL);
	wr.num_sge = 0;
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == EINVAL);
}

static void test_send_inline(void)
{
	char a[] = "hello, ", b[] = "qrnic";
	uint8_t big[449];
	struct ibv_sge sg[2] = {
		{ .addr = (uintptr_t)a, .length = 7, .lkey = 0x999 },
		{ .addr = (uintptr_t)b, .length = 5 },
	};
	struct ibv_send_wr wr = {
		.wr_id = 3, .sg_list = sg, .num_sge = 2, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
	};
	struct qrnic_sq_params p = rc_params;
	uint8_t slot[512];
	unsigned int n;

	memset(slot, 0xee, sizeof(slot));
	CHECK(qrnic_check_send_wr(&wr, &p) == 0);
	n = qrnic_build_send_wqe(slot, &wr, &p);
	CHECK(n == 64 + 12);
	CHECK(slot[0] == 2);
	CHECK(slot[1] == (1 | 4));		/* SIGNALED|INLINE */
	CHECK(slot[2] == 0);			/* num_sge 0 with INLINE */
	CHECK(rd32(slot + 4) == 12);
	CHECK(memcmp(slot + 64, "hello, qrnic", 12) == 0);
	CHECK(slot[76] == 0xee);

	/* inline limit: max_inline of the QP, not the SGE count */
	memset(big, 'x', sizeof(big));
	sg[0].addr = (uintptr_t)big;
	sg[0].length = 448;
	wr.num_sge = 1;
	CHECK(qrnic_check_send_wr(&wr, &p) == 0);
	qrnic_build_send_wqe(slot, &wr, &p);
	CHECK(rd32(slot + 4) == 448 && slot[511] == 'x');
	sg[0].length = 449;
	CHECK(qrnic_check_send_wr(&wr, &p) == EINVAL);
	p.max_inline = 100;
	sg[0].length = 101;
	CHECK(qrnic_check_send_wr(&wr, &p) == EINVAL);
	/* many inline pieces are fine even beyond max_sge */
	p.max_sge = 0;
	sg[0].length = 50;
	wr.num_sge = 2;
	CHECK(qrnic_check_send_wr(&wr, &p) == 0);
	/* without INLINE the SGE limit applies */
	wr.send_flags = 0;
	CHECK(qrnic_check_send_wr(&wr, &p) == EINVAL);
}

static void test_send_ud(void)
{
	struct ibv_sge sg = { .addr = 0x4000, .length = 100, .lkey = 0x55 };
	struct ibv_send_wr wr = {
		.wr_id = 9, .sg_list = &sg, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(0xa1b2c3d4),
	};
	struct qrnic_sq_params p = {
		.wqe_shift = 7, .max_sge = 4, .max_inline = 64, .ud = true,
		.ahn = 0x1234,
	};
	uint8_t slot[128];

	wr.wr.ud.ah = (struct ibv_ah *)&wr;	/* any non-NULL pointer */
	wr.wr.ud.remote_qpn = 0x12345678;	/* upper byte dropped */
	wr.wr.ud.remote_qkey = 0x80010000;
	CHECK(qrnic_check_send_wr(&wr, &p) == 0);
	memset(slot, 0xee, sizeof(slot));
	qrnic_build_send_wqe(slot, &wr, &p);
	CHECK(slot[0] == 3 && slot[1] == 0 && slot[2] == 1);
	CHECK(slot[16] == 0xa1 && slot[19] == 0xd4);
	CHECK(rd32(slot + 20) == 0 && rd64(slot + 24) == 0);
	CHECK(rd32(slot + 48) == 0x1234);
	CHECK(rd32(slot + 52) == 0x345678);
	CHECK(rd32(slot + 56) == 0x80010000);
	CHECK(rd32(slot + 60) == 0);

	/* UD: SEND* only */
	wr.opcode = IBV_WR_RDMA_WRITE;
	CHECK(qrnic_check_send_wr(&wr, &p) == EINVAL);
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = NULL;
	CHECK(qrnic_check_send_wr(&wr, &p) == EINVAL);
	/* UD: no SEND_WITH_INV; LOCAL_INV needs no AH */
	wr.opcode = IBV_WR_SEND_WITH_INV;
	CHECK(qrnic_check_send_wr(&wr, &p) == EINVAL);
	wr.opcode = IBV_WR_LOCAL_INV;
	CHECK(qrnic_check_send_wr(&wr, &p) == 0);
	/* BIND_MW: not on UD; on RC not without a window */
	wr.opcode = IBV_WR_BIND_MW;
	CHECK(qrnic_check_send_wr(&wr, &p) == EINVAL);
	wr.bind_mw.mw = NULL;
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == EINVAL);
	/* SGE limit */
	wr.opcode = IBV_WR_SEND;
	wr.num_sge = 5;
	wr.wr.ud.ah = (struct ibv_ah *)&wr;
	CHECK(qrnic_check_send_wr(&wr, &p) == EINVAL);
	wr.num_sge = 4;
	CHECK(qrnic_check_send_wr(&wr, &p) == 0);
}

/* LOCAL_INV and SEND_WITH_INV (spec 12.12): the key in imm_data as a
 * little-endian number, not in network order */
static void test_send_invalidate(void)
{
	struct ibv_sge sg = { .addr = 0x9000, .length = 300, .lkey = 0x77 };
	struct ibv_send_wr wr = {
		.wr_id = 0x1234, .sg_list = &sg, .num_sge = 1,
		.opcode = IBV_WR_LOCAL_INV,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE | IBV_SEND_INLINE,
		.invalidate_rkey = 0x00a1b2c3,
	};
	struct qrnic_sq_params uc = { .wqe_shift = 7, .max_sge = 4, .max_inline = 64, .uc = true };
	char text[] = "inline with invalidate";
	uint8_t slot[512];
	unsigned int n;

	/* LOCAL_INV: header only, SGEs (and INLINE) ignored */
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == 0);
	memset(slot, 0xee, sizeof(slot));
	n = qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(n == 64);
	CHECK(slot[0] == 7);
	CHECK(slot[1] == (1 | 8));		/* SIGNALED|FENCE */
	CHECK(slot[2] == 0 && rd32(slot + 4) == 0);
	CHECK(rd64(slot + 8) == 0x1234);
	CHECK(slot[16] == 0xc3 && slot[17] == 0xb2 && slot[18] == 0xa1 && slot[19] == 0);
	CHECK(all_zero(slot + 20, 44));
	CHECK(slot[64] == 0xee);
	wr.num_sge = 17;			/* more than any QP holds: still ignored */
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == 0);
	CHECK(qrnic_check_send_wr(&wr, &uc) == 0);	/* any QP type */
	wr.num_sge = 1;

	/* SEND_WITH_INV: a SEND whose imm_data is the remote key */
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SOLICITED;
	wr.invalidate_rkey = 0xfedcba98;
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == 0);
	memset(slot, 0xee, sizeof(slot));
	n = qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(n == 64 + 16);
	CHECK(slot[0] == 9 && slot[1] == 2 && slot[2] == 1);
	CHECK(rd32(slot + 16) == 0xfedcba98 && slot[16] == 0x98);
	CHECK(rd32(slot + 20) == 0 && rd64(slot + 24) == 0);
	CHECK(rd64(slot + 64) == 0x9000 && rd32(slot + 72) == 300 && rd32(slot + 76) == 0x77);
	/* ... inline too */
	sg.addr = (uintptr_t)text;
	sg.length = sizeof(text);
	wr.send_flags = IBV_SEND_INLINE;
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == 0);
	n = qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(n == 64 + sizeof(text) && slot[1] == 4 && rd32(slot + 4) == sizeof(text));
	CHECK(memcmp(slot + 64, text, sizeof(text)) == 0 && rd32(slot + 16) == 0xfedcba98);
	/* RC only */
	CHECK(qrnic_check_send_wr(&wr, &uc) == EINVAL);
}

/* UC (spec 12.9): SEND and RDMA WRITE (with immediate), no READ or atomics,
 * no AH: the WQE is laid out as for RC */
static void test_send_uc(void)
{
	struct ibv_sge sg = { .addr = 0x4000, .length = 100, .lkey = 0x55 };
	struct ibv_send_wr wr = {
		.wr_id = 3, .sg_list = &sg, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .imm_data = htobe32(7),
		.wr.rdma = { .remote_addr = 0x1122334455667788ull, .rkey = 0x99 },
	};
	struct qrnic_sq_params p = { .wqe_shift = 7, .max_sge = 4, .max_inline = 64, .uc = true };
	static const enum ibv_wr_opcode bad[] = {
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	uint8_t slot[128];

	CHECK(qrnic_check_send_wr(&wr, &p) == 0);
	memset(slot, 0xee, sizeof(slot));
	qrnic_build_send_wqe(slot, &wr, &p);
	CHECK(slot[0] == QRNIC_WR_RDMA_WRITE_WITH_IMM);
	CHECK(rd64(slot + 24) == 0x1122334455667788ull && rd32(slot + 20) == 0x99);
	CHECK(rd32(slot + 48) == 0 && rd32(slot + 52) == 0);	/* no AH, no remote QPN */
	wr.opcode = IBV_WR_SEND;
	CHECK(qrnic_check_send_wr(&wr, &p) == 0);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wr.opcode = bad[i];
		CHECK(qrnic_check_send_wr(&wr, &p) == EINVAL);
	}
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == 0);	/* the same WR on RC */
}

/* BIND_MW (spec 8.8): the 64-byte bind WQE, whatever the slot size; remote
 * rights only (LOCAL_WRITE dropped), SIGNALED and FENCE only, no data even
 * with IBV_SEND_INLINE; zero-based windows and a length without an MR are
 * refused; length 0 without an MR (type 1 unbind) has mr_lkey 0. */
static void test_bind_mw(void)
{
	struct ibv_mr mr = { .lkey = 0x123456 };
	struct ibv_mw mw = { .rkey = 0x777701, .type = IBV_MW_TYPE_2 };
	struct ibv_sge sg = { .addr = 1, .length = 2, .lkey = 3 };
	struct ibv_send_wr wr = {
		.wr_id = 0x0102030405060708ull, .opcode = IBV_WR_BIND_MW, .sg_list = &sg,
		.num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE | IBV_SEND_SOLICITED |
			      IBV_SEND_INLINE,
	};
	struct qrnic_sq_params uc = { .wqe_shift = 7, .max_sge = 4, .max_inline = 64, .uc = true };
	uint8_t slot[128];
	unsigned int n, i;

	wr.bind_mw.mw = &mw;
	wr.bind_mw.rkey = 0x777702;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = &mr, .addr = 0xfedcba9876543210ull, .length = 0x100000000ull,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_MW_BIND,
	};
	CHECK(qrnic_wr_opcode(IBV_WR_BIND_MW, false, false) == QRNIC_WR_BIND_MW);
	CHECK(qrnic_wr_opcode(IBV_WR_BIND_MW, false, true) == QRNIC_WR_BIND_MW);
	CHECK(qrnic_wr_opcode(IBV_WR_BIND_MW, true, false) == -1);
	CHECK(qrnic_wr_header_only(QRNIC_WR_BIND_MW) && qrnic_wr_header_only(QRNIC_WR_LOCAL_INV) &&
	      !qrnic_wr_header_only(QRNIC_WR_SEND));
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == 0);
	CHECK(qrnic_check_send_wr(&wr, &uc) == 0);
	memset(slot, 0xee, sizeof(slot));
	n = qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(n == 64);
	CHECK(slot[0] == QRNIC_WR_BIND_MW && slot[0] == 8);
	CHECK(slot[1] == (QRNIC_WQE_F_SIGNALED | QRNIC_WQE_F_FENCE));
	CHECK(slot[2] == 0);
	CHECK(slot[3] == (QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_READ |
			  QRNIC_ACCESS_REMOTE_ATOMIC));
	CHECK(rd32(slot + 4) == 0x123456);
	CHECK(rd64(slot + 8) == 0x0102030405060708ull);
	CHECK(rd32(slot + 16) == 0x777702 && rd32(slot + 20) == 0);
	CHECK(rd64(slot + 24) == 0xfedcba9876543210ull);
	CHECK(rd64(slot + 32) == 0x100000000ull);
	for (i = 40; i < 64; i++)
		CHECK(slot[i] == 0);
	CHECK(slot[64] == 0xee);		/* nothing after the 64 bytes */
	/* sig_all signals it */
	wr.send_flags = 0;
	qrnic_build_send_wqe(slot, &wr, &(struct qrnic_sq_params){ .wqe_shift = 6,
		.max_sge = 0, .sig_all = true });
	CHECK(slot[1] == QRNIC_WQE_F_SIGNALED);
	/* type 1 unbind: no MR, length 0 */
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ 0 };
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == 0);
	qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(rd32(slot + 4) == 0 && rd64(slot + 32) == 0 && slot[3] == 0);
	/* refused */
	wr.bind_mw.bind_info.length = 1;
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == EINVAL);
	wr.bind_mw.bind_info.mr = &mr;
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == 0);
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_ZERO_BASED;
	CHECK(qrnic_check_send_wr(&wr, &rc_params) == EINVAL);
	CHECK(qrnic_mw_access(IBV_ACCESS_LOCAL_WRITE) == 0);
}

/* ---- receive WQEs (spec 8.4) ------------------------------------------- */

/* qrnic_bf_worth: BF for inline payloads, no payload, or small SGE payloads */
static void test_bf_worth(void)
{
	char small[8] = "8 bytes";
	struct ibv_sge sg[2] = {
		{ .addr = 0x1000, .length = 200, .lkey = 1 },
		{ .addr = 0x2000, .length = 56, .lkey = 1 },
	};
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = sg, .num_sge = 2, .opcode = IBV_WR_RDMA_WRITE,
	};
	uint8_t slot[512];

	wr.wr.rdma.remote_addr = 0x4000;
	wr.wr.rdma.rkey = 2;
	qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(qrnic_bf_worth(slot));		/* 256 bytes by SGE: the limit */
	sg[1].length = 57;
	qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(!qrnic_bf_worth(slot));		/* 257 */
	wr.num_sge = 1;
	sg[0].length = 4096;
	qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(!qrnic_bf_worth(slot));		/* a 4 KiB WRITE: doorbell */
	CHECK(qrnic_bf_nwords(slot, QRNIC_BF_MAX_WQE) ==	/* though it fits */
	      (sizeof(struct qrnic_send_wqe) + sizeof(struct qrnic_sge)) / 8);
	wr.num_sge = 0;
	qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(qrnic_bf_worth(slot));		/* zero length */
	sg[0].addr = (uintptr_t)small;
	sg[0].length = sizeof(small);
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	qrnic_build_send_wqe(slot, &wr, &rc_params);
	CHECK(qrnic_bf_worth(slot));		/* inline */
	sg[0].length = 300;			/* inline, past the SGE limit: still BF */
	{
		char big[300] = { 0 };

		sg[0].addr = (uintptr_t)big;
		qrnic_build_send_wqe(slot, &wr, &rc_params);
		CHECK(qrnic_bf_worth(slot));
	}
}

static void test_recv(void)
{
	struct ibv_sge sg[2] = {
		{ .addr = 0xa0a0a0a0b0b0b0b0ull, .length = 4096, .lkey = 0x1111 },
		{ .addr = 0x20, .length = 40, .lkey = 0x2222 },
	};
	struct ibv_recv_wr wr = { .wr_id = 0x0807060504030201ull,
				  .sg_list = sg, .num_sge = 2 };
	uint8_t slot[64];
	unsigned int n;

	CHECK(qrnic_check_recv_wr(&wr, 3) == 0);
	CHECK(qrnic_check_recv_wr(&wr, 1) == EINVAL);
	memset(slot, 0xee, sizeof(slot));
	n = qrnic_build_recv_wqe(slot, &wr);
	CHECK(n == 48);
	CHECK(rd64(slot) == 0x0807060504030201ull);
	CHECK(slot[8] == 2);
	CHECK(all_zero(slot + 9, 7));
	CHECK(rd64(slot + 16) == 0xa0a0a0a0b0b0b0b0ull);
	CHECK(rd32(slot + 24) == 4096 && rd32(slot + 28) == 0x1111);
	CHECK(rd64(slot + 32) == 0x20 && rd32(slot + 40) == 40 &&
	      rd32(slot + 44) == 0x2222);
	CHECK(slot[48] == 0xee);

	wr.num_sge = 0;
	memset(slot, 0xee, sizeof(slot));
	CHECK(qrnic_build_recv_wqe(slot, &wr) == 16);
	CHECK(slot[8] == 0 && slot[16] == 0xee);
}

/* ---- shared receive queues (spec 12.10) ---------------------------------- */

/* Room is what the device's consumer record says, free-running and wrapping. */
static void test_srq_room(void)
{
	CHECK(!qrnic_srq_full(0, 0, 8));		/* empty */
	CHECK(!qrnic_srq_full(7, 0, 8));		/* one slot left */
	CHECK(qrnic_srq_full(8, 0, 8));		/* all posted, none taken */
	CHECK(!qrnic_srq_full(8, 1, 8));		/* one taken: its slot is free */
	CHECK(qrnic_srq_full(13, 5, 8) && !qrnic_srq_full(13, 6, 8));
	/* across the 32-bit wrap of the free-running indexes */
	CHECK(qrnic_srq_full(3, 0xfffffffbu, 8));
	CHECK(!qrnic_srq_full(3, 0xfffffffcu, 8));
	CHECK(!qrnic_srq_full(0xfffffffeu, 0xfffffffau, 8));
	/* a record ahead of the producer (never written by the device) leaves
	 * no room rather than letting posts lap the device */
	CHECK(qrnic_srq_full(5, 6, 8));
	CHECK(qrnic_srq_full(0, 1, 1u << 15));
}

/* An SRQ slot holds the RQ's receive WQE; slot idx of a ring with 1 << shift
 * byte slots and 1 << log entries starts at (idx & mask) << shift. */
static void test_srq_slots(void)
{
	struct ibv_sge sg[3] = {
		{ .addr = 0x1000, .length = 100, .lkey = 0xa1 },
		{ .addr = 0x2000, .length = 200, .lkey = 0xa2 },
		{ .addr = 0x3000, .length = 300, .lkey = 0xa3 },
	};
	struct ibv_recv_wr wr = { .wr_id = 0x77, .sg_list = sg, .num_sge = 3 };
	const unsigned int shift = 6, log = 2;	/* 4 slots of 64 bytes: 3 SGEs */
	uint8_t ring[4 << 6];
	uint32_t idx;

	CHECK(qrnic_rq_max_sge(shift) == 3);
	CHECK(qrnic_check_recv_wr(&wr, qrnic_rq_max_sge(shift)) == 0);
	memset(ring, 0xee, sizeof(ring));
	for (idx = 5; idx < 9; idx++) {		/* second lap of the ring */
		wr.wr_id = 0x70 + idx;
		CHECK(qrnic_build_recv_wqe(ring + ((idx & ((1u << log) - 1)) << shift), &wr) == 64);
	}
	/* index 5 went to slot 1, 8 to slot 0 */
	CHECK(rd64(ring + 64) == 0x75 && rd64(ring) == 0x78);
	CHECK(rd64(ring + 128) == 0x76 && rd64(ring + 192) == 0x77);
	CHECK(ring[64 + 8] == 3 && all_zero(ring + 64 + 9, 7));
	CHECK(rd64(ring + 64 + 48) == 0x3000 && rd32(ring + 64 + 56) == 300 &&
	      rd32(ring + 64 + 60) == 0xa3);
	wr.num_sge = 4;
	CHECK(qrnic_check_recv_wr(&wr, qrnic_rq_max_sge(shift)) == EINVAL);
}

/* ---- CQEs (spec 1.2, 9) --------------------------------------------------- */

static void make_cqe(uint8_t *c, uint64_t wr_id, uint32_t byte_len,
		     const uint8_t imm[4], uint32_t qpn, uint32_t src_qp,
		     uint8_t status, uint8_t opcode, uint8_t flags,
		     uint8_t verr, uint16_t wqe_index, uint8_t owner)
{
	memset(c, 0, 32);
	wr64(c, wr_id);
	wr32(c + 8, byte_len);
	memcpy(c + 12, imm, 4);
	wr32(c + 16, qpn);
	wr32(c + 20, src_qp);
	c[24] = status;
	c[25] = opcode;
	c[26] = flags;
	c[27] = verr;
	c[28] = (uint8_t)wqe_index;
	c[29] = (uint8_t)(wqe_index >> 8);
	c[31] = owner;
}

static void test_cqe(void)
{
	static const uint8_t imm[4] = { 0xde, 0xad, 0xbe, 0xef };
	uint8_t raw[32];
	struct qrnic_cqe cqe;
	struct ibv_wc wc;

	/* UD receive with immediate and GRH */
	make_cqe(raw, 0x1122334455667788ull, 40 + 100, imm, 17, 0x654321,
		 0, 128, 1 | 2 | 4, 0, 0xbeef, 1);
	memcpy(&cqe, raw, sizeof(cqe));
	qrnic_cqe_to_wc(&cqe, &wc);
	CHECK(wc.wr_id == 0x1122334455667788ull);
	CHECK(wc.status == IBV_WC_SUCCESS);
	CHECK(wc.opcode == IBV_WC_RECV);
	CHECK(wc.byte_len == 140);
	CHECK(wc.qp_num == 17);
	CHECK(wc.src_qp == 0x654321);
	CHECK(wc.wc_flags == (IBV_WC_WITH_IMM | IBV_WC_GRH));
	CHECK(memcmp(&wc.imm_data, imm, 4) == 0);
	CHECK(be32toh(wc.imm_data) == 0xdeadbeef);
	CHECK(wc.vendor_err == 0);
	CHECK(!qrnic_cqe_is_send(&cqe));
	CHECK(le16toh(cqe.wqe_index) == 0xbeef && rd16(raw + 28) == 0xbeef);

	/* send completion, error with vendor_err; no imm flag: imm ignored */
	make_cqe(raw, 5, 0, imm, 0x20, 0, 12, 2, 8, 9, 3, 0);
	memcpy(&cqe, raw, sizeof(cqe));
	qrnic_cqe_to_wc(&cqe, &wc);
	CHECK(wc.status == IBV_WC_RETRY_EXC_ERR);
	CHECK(wc.opcode == IBV_WC_RDMA_READ);
	CHECK(wc.vendor_err == 9);
	CHECK(wc.wc_flags == 0 && wc.imm_data == 0);
	CHECK(qrnic_cqe_is_send(&cqe));

	/* RECV of a SEND_WITH_INV: the rkey in imm_data, little endian */
	{
		static const uint8_t key[4] = { 0x01, 0x07, 0x34, 0x00 };

		make_cqe(raw, 8, 64, key, 0x23, 0x24, 0, 128, 16, 0, 2, 1);
		memcpy(&cqe, raw, sizeof(cqe));
		qrnic_cqe_to_wc(&cqe, &wc);
		CHECK(wc.opcode == IBV_WC_RECV && wc.byte_len == 64);
		CHECK(wc.wc_flags == IBV_WC_WITH_INV);
		CHECK(wc.invalidated_rkey == 0x00340701);
	}

	/* LOCAL_INV completion, and its error (spec 12.12: LOC_QP_OP_ERR) */
	make_cqe(raw, 9, 0, imm, 0x25, 0, 0, 6, 8, 0, 4, 1);
	memcpy(&cqe, raw, sizeof(cqe));
	qrnic_cqe_to_wc(&cqe, &wc);
	CHECK(wc.opcode == IBV_WC_LOCAL_INV && wc.status == IBV_WC_SUCCESS && wc.wc_flags == 0);
	make_cqe(raw, 9, 0, imm, 0x25, 0, 2, 6, 8, 14, 4, 1);
	memcpy(&cqe, raw, sizeof(cqe));
	qrnic_cqe_to_wc(&cqe, &wc);
	CHECK(wc.status == IBV_WC_LOC_QP_OP_ERR && wc.vendor_err == QRNIC_VERR_MR_STATE);

	/* RECV_RDMA_WITH_IMM */
	make_cqe(raw, 6, 1 << 20, imm, 0x21, 0x22, 0, 129, 1, 0, 0, 1);
	memcpy(&cqe, raw, sizeof(cqe));
	qrnic_cqe_to_wc(&cqe, &wc);
	CHECK(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK(wc.byte_len == 1u << 20 && wc.wc_flags == IBV_WC_WITH_IMM);
}

static void test_owner(void)
{
	uint8_t ring[4][32];
	unsigned int log = 2;	/* 4 entries */
	uint32_t i;

	/* zeroed ring: nothing valid on the first pass */
	memset(ring, 0, sizeof(ring));
	for (i = 0; i < 4; i++)
		CHECK(!qrnic_cqe_valid(ring[i], i, log));
	/* the device writes 1 on the first pass, 0 on the second, ... */
	CHECK(qrnic_cq_owner(0, log) == 1 && qrnic_cq_owner(3, log) == 1);
	CHECK(qrnic_cq_owner(4, log) == 0 && qrnic_cq_owner(7, log) == 0);
	CHECK(qrnic_cq_owner(8, log) == 1);
	ring[0][31] = 1;
	CHECK(qrnic_cqe_valid(ring[0], 0, log));
	CHECK(!qrnic_cqe_valid(ring[0], 4, log));	/* stale on pass 2 */
	ring[0][31] = 0;
	CHECK(qrnic_cqe_valid(ring[0], 4, log));
	/* only bit 0 of the owner byte counts */
	ring[1][31] = 0xfe;
	CHECK(qrnic_cqe_valid(ring[1], 5, log));
	CHECK(!qrnic_cqe_valid(ring[1], 1, log));
	/* the other bytes do not matter */
	memset(ring[2], 0xff, 31);
	ring[2][31] = 0;
	CHECK(!qrnic_cqe_valid(ring[2], 2, log));
	/* free-running wrap at 2^32 with the largest ring */
	CHECK(qrnic_cq_owner(0xffffffffu, 15) == 0);
	CHECK(qrnic_cq_owner(0xffffffffu + 1u, 15) == 1);
}

static void test_wqe_index(void)
{
	CHECK(qrnic_wqe_index_expand(0, 0) == 0);
	CHECK(qrnic_wqe_index_expand(0, 5) == 5);
	CHECK(qrnic_wqe_index_expand(0xfffe, 0xffff) == 0xffff);
	CHECK(qrnic_wqe_index_expand(0xfffe, 0x0001) == 0x10001);
	CHECK(qrnic_wqe_index_expand(0x12340000, 0x7fff) == 0x12347fff);
	CHECK(qrnic_wqe_index_expand(0xfffffff0u, 0xfff5) == 0xfffffff5u);
	CHECK(qrnic_wqe_index_expand(0xfffffff0u, 0x0003) == 0x00000003u);
	/* a CQE for an already completed WQE maps ~64k ahead, which the
	 * provider rejects as not outstanding */
	CHECK(qrnic_wqe_index_expand(10, 9) - 10 == 0xffff);
}

int main(void)
{
	test_layouts();
	test_geometry();
	test_doorbells();
	test_send_rdma_write();
	test_send_signal_all_and_read();
	test_send_atomics();
	test_send_inline();
	test_send_ud();
	test_send_uc();
	test_bind_mw();
	test_send_invalidate();
	test_bf_worth();
	test_recv();
	test_srq_room();
	test_srq_slots();
	test_cqe();
	test_owner();
	test_wqe_index();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
