// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic_mr_cq: a guest test program against libibverbs for what no stock
 * tool exercises (tests/test_guest_rereg.py builds it on the host and runs
 * it in a guest):
 *
 *   qrnic_mr_cq rereg DEV GID_INDEX   ibv_rereg_mr: translation, access, PD
 *   qrnic_mr_cq modcq DEV GID_INDEX   ibv_modify_cq: CQ event moderation
 *   qrnic_mr_cq xrcini DEV GID_INDEX  an XRC SEND QP keeps the ACCESS_FLAGS
 *                                     it is given (issue 16)
 *   qrnic_mr_cq bigcq DEV GID_INDEX   a CQ of max_cqe (4M) entries and QPs of
 *                                     1024-entry queues (page-listed rings,
 *                                     ABI 1.8): traffic wraps the queues,
 *                                     then the CQ is resized with CQEs pending
 *
 * Both ends are RC QPs on the one device DEV (local loopback, spec 12.8):
 * the requester's WRITE/READ against the responder's MR is what checks
 * which translation, PD and access the device enforces.  Every step prints
 * "ok <what>"; the first failure prints "FAIL <what>: <why>" and exits 1;
 * success ends with "ALL OK".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG 4096

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

#define OK(what) do { printf("ok %s\n", what); fflush(stdout); } while (0)

static struct ibv_context *ctx;
static union ibv_gid gid;
static int gidx;

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		fail("create_qp: %s", strerror(errno));
	return qp;
}

/* RESET -> INIT -> RTR -> RTS towards rqpn on this device */
static void to_rts(struct ibv_qp *qp, uint32_t rqpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		fail("qp %u to RESET", qp->qp_num);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		fail("qp %u to INIT", qp->qp_num);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = rqpn;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		fail("qp %u to RTR: %s", qp->qp_num, strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		fail("qp %u to RTS", qp->qp_num);
}

static void connect2(struct ibv_qp *a, struct ibv_qp *b)
{
	to_rts(a, b->qp_num);
	to_rts(b, a->qp_num);
}

/* one completion of cq within about 20 s (TCG guests are slow) */
static struct ibv_wc one_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int n, i;

	for (i = 0; i < 2000000; i++) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			fail("poll_cq %d", n);
		if (n == 1)
			return wc;
		if (i > 1000)
			usleep(10);
	}
	fail("no completion");
	return wc;
}

/* requester qp: opcode on [laddr, +len) of lmr against (rkey, raddr); the status */
static int rdma(struct ibv_qp *qp, struct ibv_cq *cq, enum ibv_wr_opcode op,
		struct ibv_mr *lmr, void *laddr, uint32_t len, uint32_t rkey, void *raddr)
{
	struct ibv_sge s = { .addr = (uintptr_t)laddr, .length = len, .lkey = lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &s, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp, &wr, &bad))
		fail("post_send: %s", strerror(errno));
	wc = one_wc(cq);
	if (wc.wr_id != 7)
		fail("wr_id %llu", (unsigned long long)wc.wr_id);
	return wc.status;
}

static void *pages(size_t n)
{
	void *p = mmap(NULL, n * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		fail("mmap");
	return p;
}

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static void expect(int got, int want, const char *what)
{
	if (got != want)
		fail("%s: status %s (%d), expected %s", what, ibv_wc_status_str(got), got,
		     ibv_wc_status_str(want));
}

#define ACC_RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static int do_rereg(void)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx), *pd2 = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *resp, *req, *resp2;
	uint8_t *old = pages(2), *neu = pages(3), *src = pages(4), *chk = pages(4);
	struct ibv_mr *mr, *smr, *ro;
	uint32_t key;
	int r;

	if (!pd || !pd2 || !cq)
		fail("pd/cq");
	resp = make_qp(pd, cq);
	req = make_qp(pd, cq);
	connect2(resp, req);
	smr = ibv_reg_mr(pd, src, 4 * PG, IBV_ACCESS_LOCAL_WRITE);
	mr = ibv_reg_mr(pd, old, 2 * PG, ACC_RW);
	if (!smr || !mr)
		fail("reg_mr: %s", strerror(errno));
	key = mr->rkey;

	/* the first translation */
	pattern(src, 2 * PG, 1);
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, smr, src, 2 * PG, key, old), IBV_WC_SUCCESS,
	       "WRITE to the first range");
	if (memcmp(old, src, 2 * PG))
		fail("first range: bytes differ");
	OK("write before rereg");

	/* IBV_REREG_MR_CHANGE_TRANSLATION: 3 other pages at another address */
	memset(neu, 0xee, 3 * PG);
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, neu + 100, 3 * PG - 200, 0);
	if (r)
		fail("rereg translation: %d (%s)", r, strerror(errno));
	if (mr->rkey != key || mr->lkey != key || mr->addr != neu + 100 ||
	    mr->length != 3 * PG - 200)
		fail("rereg translation: key %#x->%#x addr %p len %zu", key, mr->rkey,
		     mr->addr, mr->length);
	pattern(src, 3 * PG, 2);
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, smr, src, 3 * PG - 200, key, neu + 100),
	       IBV_WC_SUCCESS, "WRITE to the new range");
	if (memcmp(neu + 100, src, 3 * PG - 200))
		fail("new range: bytes differ");
	if (neu[99] != 0xee || neu[3 * PG - 100] != 0xee)
		fail("new range: bytes outside it written");
	pattern(chk, 2 * PG, 1);
	if (memcmp(old, chk, 2 * PG))
		fail("old range changed after rereg");
	memset(src, 0, 3 * PG);
	expect(rdma(req, cq, IBV_WR_RDMA_READ, smr, src, 3 * PG - 200, key, neu + 100),
	       IBV_WC_SUCCESS, "READ of the new range");
	if (memcmp(src, neu + 100, 3 * PG - 200))
		fail("READ of the new range: bytes differ");
	OK("translation: new range written and read through the same rkey");
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, smr, src, 64, key, old), IBV_WC_REM_ACCESS_ERR,
	       "WRITE to the old range after rereg");
	pattern(chk, 2 * PG, 1);
	if (memcmp(old, chk, 2 * PG))
		fail("refused WRITE changed the old range");
	connect2(resp, req);
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, smr, src, 16, key, neu + 3 * PG - 108),
	       IBV_WC_REM_ACCESS_ERR, "WRITE past the new end");
	connect2(resp, req);
	OK("translation: old range and past the end refused");

	/* IBV_REREG_MR_CHANGE_ACCESS: no remote write any more, then back */
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (r || mr->rkey != key)
		fail("rereg access read-only: %d (%s)", r, strerror(errno));
	memcpy(chk, neu, 3 * PG);
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, smr, src, 64, key, neu + 100),
	       IBV_WC_REM_ACCESS_ERR, "WRITE without REMOTE_WRITE");
	if (memcmp(chk, neu, 3 * PG))
		fail("refused WRITE changed memory");
	connect2(resp, req);
	expect(rdma(req, cq, IBV_WR_RDMA_READ, smr, src, 256, key, neu + 100),
	       IBV_WC_SUCCESS, "READ with REMOTE_READ");
	if (memcmp(src, neu + 100, 256))
		fail("READ after access rereg: bytes differ");
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, ACC_RW);
	if (r)
		fail("rereg access back: %d", r);
	pattern(src, 64, 3);
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, smr, src, 64, key, neu + 100), IBV_WC_SUCCESS,
	       "WRITE with REMOTE_WRITE again");
	if (memcmp(src, neu + 100, 64))
		fail("WRITE after access back: bytes differ");
	OK("access: REMOTE_WRITE removed (refused) and given back (written)");

	/* pages pinned read-only (REMOTE_READ only) made writable: pinned again */
	ro = ibv_reg_mr(pd, old, PG, IBV_ACCESS_REMOTE_READ);
	if (!ro)
		fail("reg_mr read-only: %s", strerror(errno));
	r = ibv_rereg_mr(ro, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, ACC_RW);
	if (r)
		fail("rereg read-only -> writable: %d (%s)", r, strerror(errno));
	pattern(src, PG, 4);
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, smr, src, PG, ro->rkey, old), IBV_WC_SUCCESS,
	       "WRITE after read-only -> writable");
	if (memcmp(src, old, PG))
		fail("read-only -> writable: bytes differ");
	if (ibv_dereg_mr(ro))
		fail("dereg ro");
	OK("access: a read-only registration made writable takes WRITEs");

	/* IBV_REREG_MR_CHANGE_PD: QPs of the old PD may not use it */
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	if (r || mr->pd != pd2 || mr->rkey != key)
		fail("rereg pd: %d (%s)", r, strerror(errno));
	memcpy(chk, neu, 3 * PG);
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, smr, src, 64, key, neu + 100),
	       IBV_WC_REM_ACCESS_ERR, "WRITE through a QP of the old PD");
	if (memcmp(chk, neu, 3 * PG))
		fail("refused WRITE (PD) changed memory");
	connect2(resp, req);
	resp2 = make_qp(pd2, cq);
	connect2(resp2, req);
	pattern(src, 512, 5);
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, smr, src, 512, key, neu + 200), IBV_WC_SUCCESS,
	       "WRITE through a QP of the new PD");
	if (memcmp(src, neu + 200, 512))
		fail("WRITE (new PD): bytes differ");
	errno = 0;
	if (ibv_dealloc_pd(pd2) == 0)
		fail("dealloc of the PD the MR moved to succeeded");
	OK("pd: old PD's QP refused, new PD's QP written, new PD busy");

	/* bad input: nothing changes */
	r = ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0);
	if (r == 0)
		fail("rereg with no flags succeeded");
	/* pages the kernel cannot pin (PROT_NONE): ib_umem_get fails */
	void *none = mmap(NULL, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (none == MAP_FAILED)
		fail("mmap PROT_NONE");
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, none, PG, 0);
	if (r != IBV_REREG_MR_ERR_CMD)
		fail("rereg to PROT_NONE memory: %d, expected IBV_REREG_MR_ERR_CMD", r);
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE);
	if (r == 0)
		fail("rereg to REMOTE_WRITE without LOCAL_WRITE succeeded");
	if (mr->rkey != key || mr->addr != neu + 100)
		fail("a failed rereg changed the MR");
	pattern(src, 128, 6);
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, smr, src, 128, key, neu + 1000), IBV_WC_SUCCESS,
	       "WRITE after failed rereg");
	if (memcmp(src, neu + 1000, 128))
		fail("WRITE after failed rereg: bytes differ");
	OK("bad input refused, MR unchanged");

	/* back to the first PD, then everything goes */
	if (ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_TRANSLATION, pd,
			 old, 2 * PG, 0))
		fail("rereg pd+translation back");
	connect2(resp, req);
	pattern(src, 2 * PG, 7);
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, smr, src, 2 * PG, key, old), IBV_WC_SUCCESS,
	       "WRITE after pd+translation back");
	if (memcmp(src, old, 2 * PG))
		fail("pd+translation back: bytes differ");
	OK("pd and translation together");
	if (ibv_destroy_qp(resp2) || ibv_destroy_qp(resp) || ibv_destroy_qp(req) ||
	    ibv_dereg_mr(mr) || ibv_dereg_mr(smr) || ibv_destroy_cq(cq) ||
	    ibv_dealloc_pd(pd2) || ibv_dealloc_pd(pd))
		fail("teardown: %s", strerror(errno));
	OK("teardown");
	return 0;
}

/* a completion event of ch within ms milliseconds? (acked and re-armed by the caller) */
static int cq_event(struct ibv_comp_channel *ch, int ms, struct ibv_cq *want)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *cctx;
	int n = poll(&p, 1, ms);

	if (n < 0)
		fail("poll: %s", strerror(errno));
	if (n == 0)
		return 0;
	if (ibv_get_cq_event(ch, &cq, &cctx))
		fail("get_cq_event: %s", strerror(errno));
	if (cq != want)
		fail("event of another CQ");
	ibv_ack_cq_events(cq, 1);
	return 1;
}

static void moderate(struct ibv_cq *cq, uint16_t count, uint16_t period)
{
	struct ibv_modify_cq_attr a = { .attr_mask = IBV_CQ_ATTR_MODERATE,
					.moderate = { .cq_count = count, .cq_period = period } };
	int r = ibv_modify_cq(cq, &a);

	if (r)
		fail("modify_cq %u/%u: %d (%s)", count, period, r, strerror(r));
}

/* n signaled WRITEs of 8 bytes; their completions polled (all SUCCESS) */
static void writes(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *lmr, struct ibv_mr *rmr,
		   int n)
{
	for (int i = 0; i < n; i++)
		expect(rdma(qp, cq, IBV_WR_RDMA_WRITE, lmr, lmr->addr, 8, rmr->rkey,
			    (uint8_t *)rmr->addr + 8 * i), IBV_WC_SUCCESS, "moderated WRITE");
}

static int do_modcq(void)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(ctx, 64, NULL, ch, 0) : NULL;
	struct ibv_cq *rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	uint8_t *a = pages(1), *b = pages(1);
	struct ibv_mr *ma, *mb;
	struct ibv_qp *req, *resp;
	struct ibv_modify_cq_attr bad = { .attr_mask = 0 };

	if (!pd || !cq || !rcq)
		fail("pd/channel/cq");
	ma = ibv_reg_mr(pd, a, PG, IBV_ACCESS_LOCAL_WRITE);
	mb = ibv_reg_mr(pd, b, PG, ACC_RW);
	req = make_qp(pd, cq);
	resp = make_qp(pd, rcq);
	if (!ma || !mb)
		fail("reg_mr");
	connect2(req, resp);

	/* default (no moderation): the first CQE raises the event */
	if (ibv_req_notify_cq(cq, 0))
		fail("arm");
	writes(req, cq, ma, mb, 1);
	if (!cq_event(ch, 20000, cq))
		fail("no event without moderation");
	OK("unmoderated: event with the first CQE");

	/* count 4, no period: 3 CQEs raise nothing, the 4th does */
	moderate(cq, 4, 0);
	if (ibv_req_notify_cq(cq, 0))
		fail("arm");
	writes(req, cq, ma, mb, 3);
	if (cq_event(ch, 1500, cq))
		fail("event after 3 CQEs with cq_count 4");
	writes(req, cq, ma, mb, 1);
	if (!cq_event(ch, 20000, cq))
		fail("no event after the 4th CQE with cq_count 4");
	OK("cq_count 4: no event after 3 CQEs, one after the 4th");

	/* count 1000 and a period: the period raises it after one CQE */
	moderate(cq, 1000, 500);
	if (ibv_req_notify_cq(cq, 0))
		fail("arm");
	writes(req, cq, ma, mb, 1);
	if (!cq_event(ch, 20000, cq))
		fail("no event from cq_period 500 us");
	OK("cq_period: event after one CQE of 1000");

	/* an error CQE raises it at once whatever the count */
	moderate(cq, 1000, 0);
	if (ibv_req_notify_cq(cq, 0))
		fail("arm");
	expect(rdma(req, cq, IBV_WR_RDMA_WRITE, ma, a, 8, mb->rkey ^ 0x1000, b),
	       IBV_WC_REM_ACCESS_ERR, "WRITE with a wrong rkey");
	if (!cq_event(ch, 20000, cq))
		fail("no event for an error CQE with cq_count 1000");
	OK("error CQE: event at once");

	/* bad input */
	if (ibv_modify_cq(cq, &bad) == 0)
		fail("modify_cq with no attribute succeeded");
	OK("modify_cq without attributes refused");

	/* moderation off again: the first CQE raises it */
	moderate(cq, 0, 0);
	connect2(req, resp);
	if (ibv_req_notify_cq(cq, 0))
		fail("arm");
	writes(req, cq, ma, mb, 1);
	if (!cq_event(ch, 20000, cq))
		fail("no event with moderation off");
	OK("moderation off again");

	if (ibv_destroy_qp(req) || ibv_destroy_qp(resp) || ibv_dereg_mr(ma) ||
	    ibv_dereg_mr(mb) || ibv_destroy_cq(cq) || ibv_destroy_cq(rcq) ||
	    ibv_destroy_comp_channel(ch) || ibv_dealloc_pd(pd))
		fail("teardown: %s", strerror(errno));
	OK("teardown");
	return 0;
}

static void query(struct ibv_qp *qp, struct ibv_qp_attr *a)
{
	struct ibv_qp_init_attr ia;

	memset(a, 0, sizeof(*a));
	if (ibv_query_qp(qp, a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MAX_DEST_RD_ATOMIC |
			 IBV_QP_MIN_RNR_TIMER, &ia))
		fail("query_qp: %s", strerror(errno));
}

/*
 * An XRC SEND (INI) QP takes ACCESS_FLAGS where an RC QP does (issue 16):
 * the kernel driver passes it, the device keeps it and ibv_query_qp reports
 * it.  MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER are accepted but never reach the
 * driver from user space: ib_uverbs's modify_qp_mask() removes them from an
 * XRC INI QP's mask ("ignored fields"), so they read 0.  An attribute that
 * is not one of the transition's is refused and changes nothing.
 */
static int do_xrcini(void)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_XRC_SEND, .send_cq = cq,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd,
	};
	struct ibv_qp_attr a, q;
	struct ibv_qp *qp;
	int r;

	if (!pd || !cq)
		fail("pd/cq");
	qp = ibv_create_qp_ex(ctx, &init);
	if (!qp)
		fail("create XRC SEND QP: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		fail("INI to INIT with ACCESS_FLAGS: %s", strerror(errno));
	query(qp, &q);
	if (q.qp_state != IBV_QPS_INIT || q.qp_access_flags != a.qp_access_flags)
		fail("INIT: state %d access %#x", q.qp_state, q.qp_access_flags);
	OK("INIT: ACCESS_FLAGS kept");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x123;
	a.rq_psn = 5;
	a.max_dest_rd_atomic = 3;
	a.min_rnr_timer = 12;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER |
			  IBV_QP_ACCESS_FLAGS))
		fail("INI to RTR with ACCESS_FLAGS, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER: %s",
		     strerror(errno));
	query(qp, &q);
	if (q.qp_state != IBV_QPS_RTR || q.qp_access_flags != IBV_ACCESS_REMOTE_READ ||
	    q.max_dest_rd_atomic != 0 || q.min_rnr_timer != 0)
		fail("RTR: state %d access %#x max_dest_rd_atomic %u min_rnr_timer %u", q.qp_state,
		     q.qp_access_flags, q.max_dest_rd_atomic, q.min_rnr_timer);
	OK("RTR: ACCESS_FLAGS kept; MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER removed by ib_uverbs");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 9;
	a.max_rd_atomic = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
			  IBV_QP_ACCESS_FLAGS))
		fail("INI to RTS with ACCESS_FLAGS: %s", strerror(errno));
	query(qp, &q);
	if (q.qp_state != IBV_QPS_RTS || q.qp_access_flags != IBV_ACCESS_REMOTE_WRITE)
		fail("RTS: state %d access %#x", q.qp_state, q.qp_access_flags);
	OK("RTS: ACCESS_FLAGS kept");
	memset(&a, 0, sizeof(a));
	a.timeout = 20;
	a.qp_access_flags = 0;
	r = ibv_modify_qp(qp, &a, IBV_QP_TIMEOUT | IBV_QP_ACCESS_FLAGS);
	query(qp, &q);
	if (r == 0 || q.qp_state != IBV_QPS_RTS || q.qp_access_flags != IBV_ACCESS_REMOTE_WRITE)
		fail("RTS->RTS with TIMEOUT: %d, state %d access %#x", r, q.qp_state,
		     q.qp_access_flags);
	OK("RTS->RTS with TIMEOUT (not one of its attributes) refused, nothing changed");
	if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
		fail("teardown: %s", strerror(errno));
	OK("teardown");
	return 0;
}

/* n completions of cq (any order), each SUCCESS; counts SEND and RECV ones */
static void drain(struct ibv_cq *cq, int n, int *sends, int *recvs, uint32_t recv_len)
{
	struct ibv_wc wc[64];
	long spins = 0;

	while (n > 0) {
		int got = ibv_poll_cq(cq, n < 64 ? n : 64, wc);

		if (got < 0)
			fail("poll_cq %d", got);
		for (int i = 0; i < got; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				fail("wr_id %llu: %s", (unsigned long long)wc[i].wr_id,
				     ibv_wc_status_str(wc[i].status));
			if (wc[i].opcode == IBV_WC_RECV) {
				if (wc[i].byte_len != recv_len)
					fail("recv byte_len %u", wc[i].byte_len);
				++*recvs;
			} else {
				++*sends;
			}
		}
		n -= got;
		if (!got && ++spins > 20000000)
			fail("%d completions missing", n);
		if (!got && spins > 1000)
			usleep(10);
	}
}

static int do_bigcq(void)
{
	enum { SLOT = 256, NSLOT = 256, BATCH = 256, BATCHES = 12 };
	struct ibv_device_attr da;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1024, .max_recv_wr = 1024, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *a, *b;
	struct ibv_mr *smr, *dmr;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	uint8_t *src, *dst;
	int sends = 0, recvs = 0;
	char what[96];

	if (ibv_query_device(ctx, &da))
		fail("query_device");
	if (da.max_cqe < 4194304)
		fail("max_cqe %d, a ConnectX-5 has about 4M", da.max_cqe);
	OK("max_cqe >= 4194304");
	cq = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
	if (!cq)
		fail("create_cq(%d): %s", da.max_cqe, strerror(errno));
	if (cq->cqe < da.max_cqe)
		fail("cq->cqe %d < %d", cq->cqe, da.max_cqe);
	snprintf(what, sizeof(what), "CQ of %d entries", cq->cqe);
	OK(what);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		fail("alloc_pd");
	ia.send_cq = ia.recv_cq = cq;
	a = ibv_create_qp(pd, &ia);
	b = a ? ibv_create_qp(pd, &ia) : NULL;
	if (!a || !b)
		fail("create_qp (1024 WRs): %s", strerror(errno));
	connect2(a, b);
	src = pages(SLOT * NSLOT / PG);
	dst = pages(SLOT * NSLOT / PG);
	smr = ibv_reg_mr(pd, src, SLOT * NSLOT, ACC_RW);
	dmr = ibv_reg_mr(pd, dst, SLOT * NSLOT, ACC_RW);
	if (!smr || !dmr)
		fail("reg_mr");
	for (int bt = 0; bt < BATCHES; bt++) {
		pattern(src, SLOT * NSLOT, bt + 1);
		memset(dst, 0, SLOT * NSLOT);
		for (int i = 0; i < BATCH; i++) {
			struct ibv_sge rs = { .addr = (uintptr_t)(dst + i * SLOT), .length = SLOT,
					      .lkey = dmr->lkey };
			struct ibv_recv_wr rw = { .wr_id = bt * BATCH + i, .sg_list = &rs,
						  .num_sge = 1 }, *rbad;

			if (ibv_post_recv(b, &rw, &rbad))
				fail("post_recv %d: %s", i, strerror(errno));
		}
		for (int i = 0; i < BATCH; i++) {
			struct ibv_sge ss = { .addr = (uintptr_t)(src + i * SLOT), .length = SLOT,
					      .lkey = smr->lkey };
			struct ibv_send_wr sw = { .wr_id = bt * BATCH + i, .sg_list = &ss,
						  .num_sge = 1, .opcode = IBV_WR_SEND,
						  .send_flags = IBV_SEND_SIGNALED }, *sbad;

			if (ibv_post_send(a, &sw, &sbad))
				fail("post_send %d: %s", i, strerror(errno));
		}
		drain(cq, 2 * BATCH, &sends, &recvs, SLOT);
		if (memcmp(src, dst, SLOT * NSLOT))
			fail("batch %d: received bytes differ", bt);
	}
	if (sends != BATCH * BATCHES || recvs != BATCH * BATCHES)
		fail("%d sends, %d receives", sends, recvs);
	snprintf(what, sizeof(what), "%d SENDs through 1024-entry queues, every byte checked",
		 sends);
	OK(what);
	/* CQEs pending across a resize of the 4M CQ to 65536 entries */
	for (int i = 0; i < 100; i++) {
		struct ibv_sge rs = { .addr = (uintptr_t)dst, .length = SLOT, .lkey = dmr->lkey };
		struct ibv_recv_wr rw = { .wr_id = i, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge ss = { .addr = (uintptr_t)src, .length = SLOT, .lkey = smr->lkey };
		struct ibv_send_wr sw = { .wr_id = i, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *sbad;

		if (ibv_post_recv(b, &rw, &rbad) || ibv_post_send(a, &sw, &sbad))
			fail("post %d", i);
	}
	usleep(200000);
	if (ibv_resize_cq(cq, 65536))
		fail("resize_cq(65536): %s", strerror(errno));
	sends = recvs = 0;
	drain(cq, 200, &sends, &recvs, SLOT);
	if (sends != 100 || recvs != 100)
		fail("after resize: %d sends, %d receives", sends, recvs);
	OK("resized to 65536 with completions pending");
	if (ibv_destroy_qp(a) || ibv_destroy_qp(b) || ibv_destroy_cq(cq))
		fail("destroy");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	ibv_dealloc_pd(pd);
	OK("destroyed");
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	char *end;
	int i, n, r;

	if (argc != 4 || (strcmp(argv[1], "rereg") && strcmp(argv[1], "modcq") &&
			  strcmp(argv[1], "xrcini") && strcmp(argv[1], "bigcq"))) {
		fprintf(stderr, "usage: %s rereg|modcq|xrcini|bigcq DEVICE GID_INDEX\n", argv[0]);
		return 2;
	}
	gidx = (int)strtol(argv[3], &end, 10);
	if (*end || gidx < 0 || gidx > 255) {
		fprintf(stderr, "bad GID index '%s'\n", argv[3]);
		return 2;
	}
	list = ibv_get_device_list(&n);
	if (!list)
		fail("no RDMA devices: %s", strerror(errno));
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[2]))
			break;
	if (i == n) {
		fprintf(stderr, "no device '%s'\n", argv[2]);
		return 2;
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		fail("open %s: %s", argv[2], strerror(errno));
	if (ibv_query_gid(ctx, 1, gidx, &gid))
		fail("query_gid %d", gidx);
	r = !strcmp(argv[1], "rereg") ? do_rereg() : !strcmp(argv[1], "modcq") ? do_modcq() :
	    !strcmp(argv[1], "bigcq") ? do_bigcq() : do_xrcini();
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("ALL OK\n");
	return r;
}
