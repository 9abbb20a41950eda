// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The provider's encoders against the device model: work requests are
 * turned into WQE bytes by qrnic_wqe.h exactly as qrnic_post_send() /
 * qrnic_post_recv() do, written into the rings of two simulated qrnic
 * devices (tests/harness, libqrnic_harness.so), announced with doorbell
 * values from qrnic_db_*_val(), and the CQEs the model writes are decoded
 * with qrnic_cqe_to_wc() as qrnic_poll_cq() does.  Data and completions are
 * checked.  No kernel, no rdma-core library: only the encoders are the
 * provider's; rings, MRs and admin commands are the harness's mini driver
 * (user context 0, doorbell page 0).
 *
 * Closes with "N passed, N failed"; exit 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "qrnic_wqe.h"

static int passed, failed;
static hx_world *w;

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (cond) {                                                  \
			passed++;                                            \
		} else {                                                     \
			failed++;                                            \
			printf("FAIL %s:%d: %s [%s]\n", __FILE__, __LINE__,  \
			       #cond, hx_world_error(w));                    \
		}                                                            \
	} while (0)

#define BUF_IOVA	0x7f0000010000ull	/* iova of each device's MR */
#define BUF_LEN		(64 * 1024)
#define DB_PAGE0	0			/* harness objects: uctx 0 */

struct side {
	int d;
	uint32_t qpn, cqn, eqn, pdn, key;
	unsigned int sq_shift, rq_shift;
	bool ud;
};

static struct side A, B;

/* ---- provider-style posting through the harness rings ------------------ */

static int post_send(struct side *s, struct ibv_send_wr *wr, uint32_t ahn)
{
	struct qrnic_sq_params p = {
		.wqe_shift = s->sq_shift,
		.max_sge = qrnic_sq_max_sge(s->sq_shift),
		.max_inline = qrnic_sq_max_inline(s->sq_shift),
		.ud = s->ud,
		.ahn = ahn,
	};
	uint8_t slot[1u << QRNIC_MAX_SEND_WQE_SHIFT];
	uint32_t idx[4];
	int err;

	for (; wr; wr = wr->next) {
		err = qrnic_check_send_wr(wr, &p);
		if (err)
			return err;
		memset(slot, 0, sizeof(slot));
		qrnic_build_send_wqe(slot, wr, &p);
		if (hx_post_send_raw(w, s->d, s->qpn, slot, 1u << s->sq_shift, 0) < 0)
			return ENOMEM;
	}
	hx_qp_indexes(w, s->d, s->qpn, idx);
	hx_db_write(w, s->d, DB_PAGE0 + QRNIC_DB_SQ, qrnic_db_wq_val(s->qpn, idx[0]), 8);
	return 0;
}

/* One send WR posted as the provider does with BF (qrnic_sq_bf): into the
 * ring, then its words into BF buffer n and the control word. */
static int post_send_bf(struct side *s, struct ibv_send_wr *wr, unsigned n)
{
	struct qrnic_sq_params p = {
		.wqe_shift = s->sq_shift,
		.max_sge = qrnic_sq_max_sge(s->sq_shift),
		.max_inline = qrnic_sq_max_inline(s->sq_shift),
	};
	_Alignas(8) uint8_t slot[1u << QRNIC_MAX_SEND_WQE_SHIFT];
	uint32_t idx[4], nwords;
	uint64_t v;
	int err = qrnic_check_send_wr(wr, &p);

	if (err)
		return err;
	memset(slot, 0, sizeof(slot));
	qrnic_build_send_wqe(slot, wr, &p);
	if (hx_post_send_raw(w, s->d, s->qpn, slot, 1u << s->sq_shift, 0) < 0)
		return ENOMEM;
	nwords = qrnic_bf_nwords(slot, QRNIC_BF_MAX_WQE);
	if (!nwords)
		return E2BIG;
	for (uint32_t i = 0; i < nwords; i++) {
		memcpy(&v, slot + 8 * i, 8);
		hx_db_write(w, s->d, DB_PAGE0 + qrnic_bf_offset(n) + 8 * i, v, 8);
	}
	hx_qp_indexes(w, s->d, s->qpn, idx);
	hx_db_write(w, s->d, DB_PAGE0 + qrnic_bf_offset(n) + QRNIC_BF_CTRL,
		    qrnic_bf_ctrl_val(s->qpn, idx[0], nwords), 8);
	return 0;
}

static int post_recv(struct side *s, struct ibv_recv_wr *wr)
{
	uint8_t slot[1u << QRNIC_MAX_RECV_WQE_SHIFT];
	uint32_t idx[4];

	for (; wr; wr = wr->next) {
		if (qrnic_check_recv_wr(wr, qrnic_rq_max_sge(s->rq_shift)))
			return EINVAL;
		memset(slot, 0, sizeof(slot));
		qrnic_build_recv_wqe(slot, wr);
		if (hx_post_recv_raw(w, s->d, s->qpn, slot, 1u << s->rq_shift, 0) < 0)
			return ENOMEM;
	}
	hx_qp_indexes(w, s->d, s->qpn, idx);
	hx_db_write(w, s->d, DB_PAGE0 + QRNIC_DB_RQ, qrnic_db_wq_val(s->qpn, idx[2]), 8);
	return 0;
}

/* Poll up to max completions as ibv_wc (raw CQEs kept in cqe[]). */
static int poll(struct side *s, struct ibv_wc *wc, struct qrnic_cqe *cqe, int max)
{
	struct qrnic_cqe raw[16];
	int n, i;

	n = hx_poll_cq(w, s->d, s->cqn, raw, max < 16 ? max : 16);
	for (i = 0; i < n; i++) {
		qrnic_cqe_to_wc(&raw[i], &wc[i]);
		if (cqe)
			cqe[i] = raw[i];
	}
	return n;
}

static void run(void)
{
	CHECK(hx_run(w, 2000000000ull, 10000000) == HX_RUN_IDLE);
}

static struct ibv_sge sge(struct side *s, uint64_t off, uint32_t len)
{
	struct ibv_sge g = { .addr = BUF_IOVA + off, .length = len, .lkey = s->key };

	return g;
}

static void fill(struct side *s, uint64_t off, uint32_t len, uint8_t seed)
{
	uint8_t buf[BUF_LEN];
	uint32_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 31);
	hx_mr_write(w, s->d, s->key, off, buf, len);
}

static bool same(struct side *a, uint64_t aoff, struct side *b, uint64_t boff,
		 uint32_t len)
{
	static uint8_t x[BUF_LEN], y[BUF_LEN];

	hx_mr_read(w, a->d, a->key, aoff, x, len);
	hx_mr_read(w, b->d, b->key, boff, y, len);
	return memcmp(x, y, len) == 0;
}

/* ---- RC ---------------------------------------------------------------- */

static void test_rc_send_imm(void)
{
	struct ibv_sge rs[2] = { sge(&B, 0x1000, 100), sge(&B, 0x2000, 5000) };
	struct ibv_sge ss[2] = { sge(&A, 0x100, 3000), sge(&A, 0x4000, 1000) };
	struct ibv_recv_wr rwr = { .wr_id = 0x1111, .sg_list = rs, .num_sge = 2 };
	struct ibv_send_wr swr = {
		.wr_id = 0x2222, .sg_list = ss, .num_sge = 2,
		.opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(0xc0ffee01),
	};
	struct ibv_wc wc[4];
	struct qrnic_cqe cqe[4];

	fill(&A, 0x100, 3000, 1);
	fill(&A, 0x4000, 1000, 2);
	CHECK(post_recv(&B, &rwr) == 0);
	CHECK(post_send(&A, &swr, 0) == 0);
	run();
	CHECK(poll(&A, wc, cqe, 4) == 1);
	CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_SEND);
	CHECK(wc[0].wr_id == 0x2222 && wc[0].qp_num == A.qpn);
	CHECK(qrnic_cqe_is_send(&cqe[0]) && qrnic_wqe_index_expand(0, cqe[0].wqe_index) == 0);
	CHECK(poll(&B, wc, cqe, 4) == 1);
	CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV);
	CHECK(wc[0].wr_id == 0x1111 && wc[0].byte_len == 4000);
	CHECK(wc[0].wc_flags == IBV_WC_WITH_IMM && be32toh(wc[0].imm_data) == 0xc0ffee01);
	CHECK(wc[0].src_qp == A.qpn && wc[0].qp_num == B.qpn);
	CHECK(!qrnic_cqe_is_send(&cqe[0]));
	/* 4000 bytes gathered from two SGEs, scattered over 100 + 3900 */
	CHECK(same(&A, 0x100, &B, 0x1000, 100));
	CHECK(same(&A, 0x100 + 100, &B, 0x2000, 2900));
	CHECK(same(&A, 0x4000, &B, 0x2000 + 2900, 1000));
}

static void test_rc_write_imm_and_unsignaled(void)
{
	struct ibv_sge rs = sge(&B, 0, 0);
	struct ibv_recv_wr rwr = { .wr_id = 0x3333, .sg_list = &rs, .num_sge = 0 };
	struct ibv_sge s1 = sge(&A, 0x8000, 8192), s2 = sge(&A, 0xa000, 512);
	struct ibv_send_wr w2 = {
		.wr_id = 0x5555, .sg_list = &s2, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(7),
	};
	struct ibv_send_wr w1 = {
		.wr_id = 0x4444, .sg_list = &s1, .num_sge = 1, .next = &w2,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = 0,	/* unsignaled */
	};
	struct ibv_wc wc[4];
	struct qrnic_cqe cqe[4];
	uint32_t sq_ci_before, idx[4];

	w1.wr.rdma.remote_addr = BUF_IOVA + 0x8000;
	w1.wr.rdma.rkey = B.key;
	w2.wr.rdma.remote_addr = BUF_IOVA + 0xc000;
	w2.wr.rdma.rkey = B.key;
	fill(&A, 0x8000, 8192, 3);
	fill(&A, 0xa000, 512, 4);
	hx_qp_indexes(w, A.d, A.qpn, idx);
	sq_ci_before = idx[1];
	CHECK(post_recv(&B, &rwr) == 0);
	CHECK(post_send(&A, &w1, 0) == 0);	/* two WQEs, one doorbell */
	run();
	CHECK(poll(&A, wc, cqe, 4) == 1);	/* only the signaled one */
	CHECK(wc[0].wr_id == 0x5555 && wc[0].opcode == IBV_WC_RDMA_WRITE &&
	      wc[0].status == IBV_WC_SUCCESS);
	/* its index frees the unsignaled WQE before it too */
	CHECK(qrnic_wqe_index_expand(sq_ci_before, cqe[0].wqe_index) == sq_ci_before + 1);
	CHECK(poll(&B, wc, NULL, 4) == 1);
	CHECK(wc[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc[0].wr_id == 0x3333);
	CHECK(wc[0].byte_len == 512 && (wc[0].wc_flags & IBV_WC_WITH_IMM) &&
	      be32toh(wc[0].imm_data) == 7);
	CHECK(same(&A, 0x8000, &B, 0x8000, 8192));
	CHECK(same(&A, 0xa000, &B, 0xc000, 512));
}

static void test_rc_read_fence(void)
{
	struct ibv_sge s = sge(&A, 0xe000, 3000);
	struct ibv_send_wr r = {
		.wr_id = 0x6666, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE,
	};
	struct ibv_wc wc[4];

	fill(&B, 0x3000, 3000, 5);
	r.wr.rdma.remote_addr = BUF_IOVA + 0x3000;
	r.wr.rdma.rkey = B.key;
	CHECK(post_send(&A, &r, 0) == 0);
	run();
	CHECK(poll(&A, wc, NULL, 4) == 1);
	CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RDMA_READ);
	CHECK(wc[0].byte_len == 3000 && wc[0].wr_id == 0x6666);
	CHECK(same(&A, 0xe000, &B, 0x3000, 3000));
}

static void test_rc_inline(void)
{
	char msg[300];
	struct ibv_sge rs = sge(&B, 0x5000, 1024);
	struct ibv_recv_wr rwr = { .wr_id = 0x7777, .sg_list = &rs, .num_sge = 1 };
	struct ibv_sge is[2] = {
		{ .addr = (uintptr_t)msg, .length = 200 },
		{ .addr = (uintptr_t)msg + 200, .length = 100 },
	};
	struct ibv_send_wr swr = {
		.wr_id = 0x8888, .sg_list = is, .num_sge = 2, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE | IBV_SEND_SOLICITED,
	};
	uint8_t got[300];
	struct ibv_wc wc[4];
	int i;

	for (i = 0; i < 300; i++)
		msg[i] = (char)('a' + i % 26);
	CHECK(post_recv(&B, &rwr) == 0);
	CHECK(post_send(&A, &swr, 0) == 0);
	memset(msg, 0, sizeof(msg));		/* inline: copied at post time */
	run();
	CHECK(poll(&A, wc, NULL, 4) == 1 && wc[0].status == IBV_WC_SUCCESS);
	CHECK(poll(&B, wc, NULL, 4) == 1 && wc[0].byte_len == 300 &&
	      wc[0].status == IBV_WC_SUCCESS);
	hx_mr_read(w, B.d, B.key, 0x5000, got, 300);
	for (i = 0; i < 300 && got[i] == 'a' + i % 26; i++)
		;
	CHECK(i == 300);
}

/* BlueFlame: an inline SEND and a two-SGE WRITE posted with the provider's
 * BF encoding; both taken from the BF buffers, no WQE read by DMA. */
static void test_rc_bf(void)
{
	char msg[100];
	struct ibv_sge rs = sge(&B, 0x6000, 1024), ws[2] = { sge(&A, 0x100, 64), sge(&A, 0x200, 64) };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 };
	struct ibv_sge is = { .addr = (uintptr_t)msg, .length = sizeof(msg) };
	struct ibv_send_wr swr = {
		.wr_id = 2, .sg_list = &is, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
	};
	struct ibv_send_wr wwr = {
		.wr_id = 3, .sg_list = ws, .num_sge = 2, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = BUF_IOVA + 0x7000, .rkey = B.key },
	};
	uint64_t posts = hx_dev_stat(w, A.d, QRNIC_STAT_BF_POSTS);
	uint64_t falls = hx_dev_stat(w, A.d, QRNIC_STAT_BF_FALLBACKS);
	uint8_t got[100];
	struct ibv_wc wc[4];
	int i;

	CHECK(qrnic_bf_offset(0) == 0x800 && qrnic_bf_offset(1) == 0xa00 &&
	      qrnic_bf_offset(2) == 0x800);
	for (i = 0; i < (int)sizeof(msg); i++)
		msg[i] = (char)(i * 7);
	fill(&A, 0x100, 64, 3);
	fill(&A, 0x200, 64, 4);
	CHECK(post_recv(&B, &rwr) == 0);
	CHECK(post_send_bf(&A, &swr, 0) == 0);
	CHECK(post_send_bf(&A, &wwr, 1) == 0);
	run();
	CHECK(poll(&A, wc, NULL, 4) == 2 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[1].status == IBV_WC_SUCCESS);
	CHECK(poll(&B, wc, NULL, 4) == 1 && wc[0].byte_len == sizeof(msg));
	hx_mr_read(w, B.d, B.key, 0x6000, got, sizeof(got));
	CHECK(memcmp(got, msg, sizeof(msg)) == 0);
	CHECK(same(&A, 0x100, &B, 0x7000, 64) && same(&A, 0x200, &B, 0x7040, 64));
	CHECK(hx_dev_stat(w, A.d, QRNIC_STAT_BF_POSTS) == posts + 2);
	CHECK(hx_dev_stat(w, A.d, QRNIC_STAT_BF_FALLBACKS) == falls);
}

static void test_rc_atomics(void)
{
	uint64_t v = 0x1000000000000005ull, got = 0;
	struct ibv_sge s = sge(&A, 0xf000, 8);
	struct ibv_send_wr cas = {
		.wr_id = 0x9999, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_CMP_AND_SWP, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr faa = cas;
	struct ibv_wc wc[4];

	hx_mr_write(w, B.d, B.key, 0x7000, &v, 8);	/* host (LE) order */
	cas.wr.atomic.remote_addr = BUF_IOVA + 0x7000;
	cas.wr.atomic.rkey = B.key;
	cas.wr.atomic.compare_add = 0x1000000000000005ull;
	cas.wr.atomic.swap = 0x2222222222222222ull;
	CHECK(post_send(&A, &cas, 0) == 0);
	run();
	CHECK(poll(&A, wc, NULL, 4) == 1);
	CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_COMP_SWAP);
	hx_mr_read(w, A.d, A.key, 0xf000, &got, 8);
	CHECK(got == 0x1000000000000005ull);
	hx_mr_read(w, B.d, B.key, 0x7000, &got, 8);
	CHECK(got == 0x2222222222222222ull);

	faa.wr_id = 0xaaaa;
	faa.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	faa.wr.atomic.remote_addr = BUF_IOVA + 0x7000;
	faa.wr.atomic.rkey = B.key;
	faa.wr.atomic.compare_add = 0x10;
	CHECK(post_send(&A, &faa, 0) == 0);
	run();
	CHECK(poll(&A, wc, NULL, 4) == 1);
	CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_FETCH_ADD &&
	      wc[0].wr_id == 0xaaaa);
	hx_mr_read(w, A.d, A.key, 0xf000, &got, 8);
	CHECK(got == 0x2222222222222222ull);
	hx_mr_read(w, B.d, B.key, 0x7000, &got, 8);
	CHECK(got == 0x2222222222222232ull);
}

static void test_rc_error_cqe(void)
{
	/* remote access error: bad rkey -> REM_ACCESS_ERR, then the QP is in
	 * ERROR; done last for this pair. */
	struct ibv_sge s = sge(&A, 0, 16);
	struct ibv_send_wr wr = {
		.wr_id = 0xbbbb, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = 0,	/* errors always complete */
	};
	struct ibv_wc wc[4];

	wr.wr.rdma.remote_addr = BUF_IOVA;
	wr.wr.rdma.rkey = B.key ^ 0x55;
	CHECK(post_send(&A, &wr, 0) == 0);
	run();
	CHECK(poll(&A, wc, NULL, 4) == 1);
	CHECK(wc[0].status == IBV_WC_REM_ACCESS_ERR && wc[0].wr_id == 0xbbbb);
	CHECK(wc[0].vendor_err == QRNIC_VERR_NAK);
}

/* CQ doorbell: arm with the consumer index; the next CQE raises an EQE. */
static void test_cq_arm(void)
{
	struct ibv_sge rs = sge(&B, 0, 64), ss = sge(&A, 0, 64);
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 };
	struct ibv_send_wr swr = {
		.wr_id = 2, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct qrnic_eqe eqe[4];
	struct ibv_wc wc[4];
	uint64_t ign = hx_dev_stat(w, B.d, QRNIC_STAT_DOORBELLS_IGNORED);

	while (hx_poll_eq(w, B.d, B.eqn, eqe, 4) > 0)
		;
	hx_db_write(w, B.d, DB_PAGE0 + QRNIC_DB_CQ,
		    qrnic_db_cq_val(B.cqn, hx_cq_ci(w, B.d, B.cqn), true, false), 8);
	CHECK(post_recv(&B, &rwr) == 0);
	CHECK(post_send(&A, &swr, 0) == 0);
	run();
	CHECK(hx_poll_eq(w, B.d, B.eqn, eqe, 4) == 1);
	CHECK(eqe[0].type == QRNIC_EQE_COMPLETION && eqe[0].handle == B.cqn);
	CHECK(poll(&B, wc, NULL, 4) == 1 && wc[0].status == IBV_WC_SUCCESS);
	CHECK(poll(&A, wc, NULL, 4) == 1 && wc[0].status == IBV_WC_SUCCESS);
	CHECK(hx_dev_stat(w, B.d, QRNIC_STAT_DOORBELLS_IGNORED) == ign);
}

/* ---- UD ---------------------------------------------------------------- */

static int modify(int d, uint32_t qpn, uint32_t mask, uint8_t state, uint32_t qkey)
{
	struct qrnic_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.attr_mask = mask | QRNIC_QP_ATTR_STATE;
	a.qp_state = state;
	a.port_num = 1;
	a.qkey = qkey;
	a.sq_psn = 1;
	return hx_modify_qp(w, d, qpn, &a);
}

static void test_ud(struct hx_pair *p)
{
	static const uint8_t gid_b[16] = { [10] = 0xff, [11] = 0xff,
					   [12] = 10, [13] = 0, [14] = 0, [15] = 2 };
	struct side ua = A, ub = B;
	struct qrnic_av av;
	struct ibv_sge rs = sge(&B, 0x9000, 40 + 256), ss = sge(&A, 0x6000, 256);
	struct ibv_recv_wr rwr = { .wr_id = 0xd00d, .sg_list = &rs, .num_sge = 1 };
	struct ibv_send_wr swr = {
		.wr_id = 0xf00d, .sg_list = &ss, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(0x12345678),
	};
	struct ibv_wc wc[4];
	int64_t q[2], ah;
	int i;

	for (i = 0; i < 2; i++) {
		q[i] = hx_create_qp(w, i, 0, (uint32_t)p->pd[i], (uint32_t)p->cq[i],
				    (uint32_t)p->cq[i], QRNIC_QPT_UD, 4, 7, 4, 6, 0);
		CHECK(q[i] > 1);
		CHECK(modify(i, (uint32_t)q[i], QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
			     QRNIC_QP_ATTR_QKEY, QRNIC_QPS_INIT, 0x11111111) == 0);
		CHECK(modify(i, (uint32_t)q[i], 0, QRNIC_QPS_RTR, 0) == 0);
		CHECK(modify(i, (uint32_t)q[i], QRNIC_QP_ATTR_SQ_PSN, QRNIC_QPS_RTS, 0) == 0);
	}
	ua.qpn = (uint32_t)q[0];
	ua.ud = true;
	ua.sq_shift = 7;
	ua.rq_shift = 6;
	ub.qpn = (uint32_t)q[1];
	ub.ud = true;
	ub.sq_shift = 7;
	ub.rq_shift = 6;

	memset(&av, 0, sizeof(av));
	memcpy(av.dgid, gid_b, 16);
	av.net_type = QRNIC_NET_IPV4;
	memcpy(av.dmac, hx_mac(w, 1), 6);
	ah = hx_create_ah(w, 0, (uint32_t)p->pd[0], &av);
	CHECK(ah > 0);

	fill(&A, 0x6000, 256, 9);
	swr.wr.ud.ah = (struct ibv_ah *)&av;	/* non-NULL; ahn passed below */
	swr.wr.ud.remote_qpn = ub.qpn;
	swr.wr.ud.remote_qkey = 0x11111111;
	CHECK(post_recv(&ub, &rwr) == 0);
	CHECK(post_send(&ua, &swr, (uint32_t)ah) == 0);
	run();
	CHECK(poll(&ua, wc, NULL, 4) == 1);
	CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_SEND &&
	      wc[0].wr_id == 0xf00d);
	CHECK(poll(&ub, wc, NULL, 4) == 1);
	CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV);
	CHECK(wc[0].byte_len == 40 + 256);
	CHECK(wc[0].wc_flags == (IBV_WC_GRH | IBV_WC_WITH_IMM));
	CHECK(be32toh(wc[0].imm_data) == 0x12345678);
	CHECK(wc[0].src_qp == ua.qpn && wc[0].qp_num == ub.qpn);
	CHECK(same(&A, 0x6000, &B, 0x9000 + 40, 256));

	/* a wrong Q_Key is dropped: nothing completes at B */
	swr.wr.ud.remote_qkey = 0x22222222;
	CHECK(post_recv(&ub, &rwr) == 0);
	CHECK(post_send(&ua, &swr, (uint32_t)ah) == 0);
	run();
	CHECK(poll(&ua, wc, NULL, 4) == 1 && wc[0].status == IBV_WC_SUCCESS);
	CHECK(poll(&ub, wc, NULL, 4) == 0);
}

int main(void)
{
	struct hx_pair p;
	int i;

	w = hx_world_new(64ull << 20, 1);
	if (!w) {
		printf("FAIL: no world\n0 passed, 1 failed\n");
		return 1;
	}
	for (i = 0; i < 2; i++)
		CHECK(hx_dev_add(w, "") == i);
	CHECK(hx_setup_rc_pair(w, QRNIC_MTU_1024, 6, 8, &p) == 0);
	if (failed) {
		printf("%d passed, %d failed\n", passed, failed);
		return 1;
	}
	A = (struct side){ .d = 0, .qpn = (uint32_t)p.qp[0], .cqn = (uint32_t)p.cq[0],
			   .eqn = (uint32_t)p.eq[0], .pdn = (uint32_t)p.pd[0],
			   .sq_shift = 9, .rq_shift = 9 };
	B = (struct side){ .d = 1, .qpn = (uint32_t)p.qp[1], .cqn = (uint32_t)p.cq[1],
			   .eqn = (uint32_t)p.eq[1], .pdn = (uint32_t)p.pd[1],
			   .sq_shift = 9, .rq_shift = 9 };
	for (i = 0; i < 2; i++) {
		struct side *s = i ? &B : &A;
		int64_t k = hx_reg_mr(w, i, s->pdn, QRNIC_ACCESS_ALL, BUF_IOVA, BUF_LEN,
				      12, -1, HX_MR_SHUFFLE);

		CHECK(k > 0);
		s->key = (uint32_t)k;
	}

	test_rc_send_imm();
	test_rc_write_imm_and_unsignaled();
	test_rc_read_fence();
	test_rc_inline();
	test_rc_bf();
	test_rc_atomics();
	test_cq_arm();
	test_ud(&p);
	test_rc_error_cqe();

	hx_world_free(w);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
