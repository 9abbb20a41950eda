// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic_ktest: in-kernel checks of the driver's paths that only kernel
 * callers take, for tests/test_guest_rereg.py:
 *
 * - ib_resize_cq() and CQ moderation, rdma_set_cq_moderation() (ib_modify_cq
 *   before Linux 4.16), on a kernel CQ: the driver's path without udata,
 *   which switches its own ring under the CQ lock (qrnic_cq.c).  The
 *   completions come without a network: receive WQEs posted to an RC QP in
 *   INIT are flushed (IB_WC_WR_FLUSH_ERR) when the QP goes to ERROR, so the
 *   CQ holds a known sequence of CQEs, polled or not;
 * - a kernel QP going to RESET takes its unpolled CQEs out of a CQ it shares
 *   with another QP, whose CQEs stay, in order;
 * - an XRC INI QP's ACCESS_FLAGS, MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER
 *   through ib_modify_qp() (user space cannot pass the last two: ib_uverbs
 *   removes them) come back from ib_query_qp() (issue 16).
 *
 *   insmod qrnic_ktest.ko dev=qrnic_0
 *
 * With fatal=1 it runs only the check of software flush completions on a
 * dead device (fatal_flush() below), which declares the device dead
 * through debugfs inject_fatal: the driver then recovers it.
 *
 * runs the checks at load time and prints "qrnic_ktest: PASS" (the load
 * succeeds; rmmod it) or "qrnic_ktest: FAIL <where>: <what>" (the load
 * fails with -EIO).
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/umh.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *dev = "qrnic_0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "the ib device to test");

static bool fatal;
module_param(fatal, bool, 0444);
MODULE_PARM_DESC(fatal, "only check the flush completions of a dead device (kills it)");

static atomic_t events;

static void comp_handler(struct ib_cq *cq, void *ctx)
{
	atomic_inc(&events);
}

#define CHECK(cond, fmt, ...)							\
	do {									\
		if (!(cond)) {							\
			pr_err("qrnic_ktest: FAIL line %d: %s: " fmt "\n",	\
			       __LINE__, #cond, ##__VA_ARGS__);			\
			err = -EIO;						\
			goto out;						\
		}								\
	} while (0)

struct ctx {
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	void *buf;			/* 64 bytes, mapped at dma */
	u64 dma;
	enum dma_data_direction dir;
};

/* A PD, a 64-byte buffer mapped dir, a CQ of cattr with comp_handler. */
static int ctx_open(struct ctx *c, struct ib_device *ibdev, enum dma_data_direction dir,
		    const struct ib_cq_init_attr *cattr)
{
	int err = 0;

	c->dir = dir;
	c->pd = ib_alloc_pd(ibdev, 0);
	CHECK(!IS_ERR(c->pd), "%ld", PTR_ERR(c->pd));
	c->buf = kzalloc(64, GFP_KERNEL);
	CHECK(c->buf, "");
	c->dma = ib_dma_map_single(ibdev, c->buf, 64, dir);
	CHECK(!ib_dma_mapping_error(ibdev, c->dma), "");
	c->cq = ib_create_cq(ibdev, comp_handler, NULL, NULL, cattr);
	CHECK(!IS_ERR(c->cq), "%ld", PTR_ERR(c->cq));
out:
	return err;
}

/* Whatever of c's QP, CQ, mapping, buffer and PD exists, in reverse order. */
static void ctx_close(struct ctx *c, struct ib_device *ibdev)
{
	if (c->qp && !IS_ERR(c->qp))
		ib_destroy_qp(c->qp);
	if (c->cq && !IS_ERR(c->cq))
		ib_destroy_cq(c->cq);
	if (c->dma && !ib_dma_mapping_error(ibdev, c->dma))
		ib_dma_unmap_single(ibdev, c->dma, 64, c->dir);
	kfree(c->buf);
	if (c->pd && !IS_ERR(c->pd))
		ib_dealloc_pd(c->pd);
}

/* qp (in RESET) to INIT on port 1, remote writes allowed. */
static int to_init(struct ib_qp *qp)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT, .port_num = 1, .qp_access_flags = IB_ACCESS_REMOTE_WRITE,
	};

	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			    IB_QP_ACCESS_FLAGS);
}

/* qp: RESET -> INIT, n receive WQEs wr_id first.., -> ERROR: n flushed CQEs */
static int flush_qp(struct ctx *c, struct ib_qp *qp, u64 first, int n)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_RESET };
	struct ib_sge sge = { .addr = c->dma, .length = 64, .lkey = c->pd->local_dma_lkey };
	const struct ib_recv_wr *bad;
	int i, err;

	err = ib_modify_qp(qp, &a, IB_QP_STATE);
	if (err)
		return err;
	err = to_init(qp);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		struct ib_recv_wr wr = { .wr_id = first + i, .sg_list = &sge, .num_sge = 1 };

		err = ib_post_recv(qp, &wr, &bad);
		if (err)
			return err;
	}
	a.qp_state = IB_QPS_ERR;
	err = ib_modify_qp(qp, &a, IB_QP_STATE);
	msleep(50);	/* the CQEs are written at their modelled time */
	return err;
}

static int flush_n(struct ctx *c, u64 first, int n)
{
	return flush_qp(c, c->qp, first, n);
}

/* poll exactly n flushed CQEs with wr_ids first.. in order, then none */
static int expect_flushed(struct ib_cq *cq, u64 first, int n)
{
	struct ib_wc wc[16];
	int got = 0, k, i, tries;

	for (tries = 0; got < n && tries < 200; tries++) {
		k = ib_poll_cq(cq, min(n - got, 16), wc);
		if (k < 0)
			return k;
		for (i = 0; i < k; i++, got++) {
			if (wc[i].wr_id != first + got || wc[i].status != IB_WC_WR_FLUSH_ERR) {
				pr_err("qrnic_ktest: CQE %d: wr_id %llu status %d, expected %llu flushed\n",
				       got, wc[i].wr_id, wc[i].status, first + got);
				return -EIO;
			}
		}
		if (!k)
			msleep(10);
	}
	if (got != n || ib_poll_cq(cq, 16, wc) != 0) {
		pr_err("qrnic_ktest: %d CQEs of %d, or more than expected\n", got, n);
		return -EIO;
	}
	return 0;
}

/* An XRC INI QP keeps the responder attributes kernel callers give it */
static int xrc_ini_attrs(struct ib_device *ibdev, struct ib_pd *pd, struct ib_cq *cq)
{
	struct ib_qp_init_attr ia = {
		.qp_type = IB_QPT_XRC_INI, .send_cq = cq, .sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ib_qp_init_attr qi;
	struct ib_qp_attr a = {}, q = {};
	const int qmask = IB_QP_STATE | IB_QP_ACCESS_FLAGS | IB_QP_MAX_DEST_RD_ATOMIC |
			  IB_QP_MIN_RNR_TIMER;
	struct ib_qp *qp = NULL;
	union ib_gid gid;
	int err = 0, idx;

	/* a link-local GID of ours: its MAC follows from it, no neighbour lookup */
	for (idx = 0; idx < 8; idx++)
		if (!rdma_query_gid(ibdev, 1, idx, &gid) &&
		    ipv6_addr_type((struct in6_addr *)gid.raw) & IPV6_ADDR_LINKLOCAL)
			break;
	CHECK(idx < 8, "no link-local GID");
	qp = ib_create_qp(pd, &ia);
	CHECK(!IS_ERR(qp), "create XRC INI: %ld", PTR_ERR(qp));

	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			   IB_QP_ACCESS_FLAGS);
	CHECK(!err, "INIT: %d", err);
	err = ib_query_qp(qp, &q, qmask, &qi);
	CHECK(!err && q.qp_state == IB_QPS_INIT && q.qp_access_flags == a.qp_access_flags,
	      "INIT: %d state %d access %#x", err, q.qp_state, q.qp_access_flags);

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.ah_attr.type = rdma_ah_find_type(ibdev, 1);
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &gid, 0, idx, 64, 0);
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = 0x123;
	a.rq_psn = 5;
	a.max_dest_rd_atomic = 3;
	a.min_rnr_timer = 12;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			   IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	CHECK(!err, "RTR: %d", err);
	memset(&q, 0, sizeof(q));
	err = ib_query_qp(qp, &q, qmask, &qi);
	CHECK(!err && q.qp_state == IB_QPS_RTR && q.max_dest_rd_atomic == 3 &&
	      q.min_rnr_timer == 12, "RTR: %d state %d max_dest_rd_atomic %u min_rnr_timer %u",
	      err, q.qp_state, q.max_dest_rd_atomic, q.min_rnr_timer);

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 9;
	a.max_rd_atomic = 1;
	a.min_rnr_timer = 20;
	a.qp_access_flags = IB_ACCESS_REMOTE_WRITE;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			   IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC |
			   IB_QP_MIN_RNR_TIMER | IB_QP_ACCESS_FLAGS);
	CHECK(!err, "RTS: %d", err);
	memset(&q, 0, sizeof(q));
	err = ib_query_qp(qp, &q, qmask, &qi);
	CHECK(!err && q.qp_state == IB_QPS_RTS && q.min_rnr_timer == 20 &&
	      q.max_dest_rd_atomic == 3 && q.qp_access_flags == IB_ACCESS_REMOTE_WRITE,
	      "RTS: %d state %d min_rnr_timer %u max_dest_rd_atomic %u access %#x", err,
	      q.qp_state, q.min_rnr_timer, q.max_dest_rd_atomic, q.qp_access_flags);
	/* not an RTS -> RTS attribute (as for RC): refused, nothing changes */
	memset(&a, 0, sizeof(a));
	a.max_dest_rd_atomic = 1;
	CHECK(ib_modify_qp(qp, &a, IB_QP_MAX_DEST_RD_ATOMIC) != 0, "RTS->RTS MAX_DEST_RD_ATOMIC");
	memset(&q, 0, sizeof(q));
	err = ib_query_qp(qp, &q, qmask, &qi);
	CHECK(!err && q.max_dest_rd_atomic == 3, "%d max_dest_rd_atomic %u", err,
	      q.max_dest_rd_atomic);
	pr_info("qrnic_ktest: XRC INI kept access %#x max_dest_rd_atomic %u min_rnr_timer %u\n",
		q.qp_access_flags, q.max_dest_rd_atomic, q.min_rnr_timer);
out:
	if (qp && !IS_ERR(qp))
		ib_destroy_qp(qp);
	return err;
}

/*
 * Software flush completions after a fatal error.  On one CQ (ib_create_cq,
 * with a handler): QP a, an RC QP in RTS aimed at a QPN nobody has, with
 * an infinite ACK timeout (0), so its sends are sent and never answered,
 * with NR receives and NS sends posted (two of them unsignaled); QP b, in
 * ERROR with 2 receives the device flushed, their CQEs left in the ring.
 * A second CQ (ib_alloc_cq, softirq) with QP c in INIT and NC receives
 * whose wr_cqe count their completions.  Then inject_fatal: the CQ must
 * give the 2 CQEs of b, then NS flushes of a's sends and NR of its
 * receives, in posting order, IB_WC_WR_FLUSH_ERR, the QP and opcode set,
 * then nothing; its handler must have run once; c's completions must
 * arrive by themselves (the kick of ib_alloc_cq's softirq poll); posts
 * fail with -EIO naming the first WR; ib_drain_qp(c) returns.
 */
#define NR	5
#define NS	6
#define NC	3

static atomic_t c_done;

static void c_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	if (wc->status == IB_WC_WR_FLUSH_ERR)
		atomic_inc(&c_done);
	else
		pr_err("qrnic_ktest: QP c completion status %d\n", wc->status);
}

static int to_rts(struct ib_device *ibdev, struct ib_qp *qp)
{
	struct ib_qp_attr a = {};
	union ib_gid gid;
	int err, idx;

	for (idx = 0; idx < 8; idx++)
		if (!rdma_query_gid(ibdev, 1, idx, &gid) &&
		    ipv6_addr_type((struct in6_addr *)gid.raw) & IPV6_ADDR_LINKLOCAL)
			break;
	if (idx == 8)
		return -ENOENT;
	err = to_init(qp);
	if (err)
		return err;
	a.qp_state = IB_QPS_RTR;
	a.ah_attr.type = rdma_ah_find_type(ibdev, 1);
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &gid, 0, idx, 64, 0);
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = 0xabcde;	/* no such QP: its packets are dropped */
	a.rq_psn = 5;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			   IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 0;			/* infinite: the sends stay outstanding */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 9;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
}

/* debugfs inject_fatal, as a test script writes it (kernel_write() needs write_iter) */
static int inject_fatal(struct ib_device *ibdev)
{
	char cmd[160];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	static char *envp[] = { "PATH=/sbin:/bin:/usr/sbin:/usr/bin", NULL };
	int ret;

	snprintf(cmd, sizeof(cmd), "echo 1 > /sys/kernel/debug/qrnic/%s/inject_fatal",
		 dev_name(ibdev->dev.parent));
	ret = call_usermodehelper(argv[0], argv, envp, UMH_WAIT_PROC);
	if (ret)
		pr_err("qrnic_ktest: %s: %d\n", cmd, ret);
	return ret ? -EIO : 0;
}

static int fatal_flush(struct ib_device *ibdev)
{
	struct ib_cq_init_attr cattr = { .cqe = 64 };
	struct ib_qp_init_attr qattr = {
		.qp_type = IB_QPT_RC, .sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ib_cqe c_cqe[NC] = {};
	struct ib_qp *qa = NULL, *qc = NULL;
	struct ib_cq *ccq = NULL;
	struct ib_wc *wc;		/* 32 of them: not on the stack */
	struct ctx c = {};
	int err = 0, i, k, got;

	wc = kcalloc(32, sizeof(*wc), GFP_KERNEL);
	if (!wc)
		return -ENOMEM;
	err = ctx_open(&c, ibdev, DMA_BIDIRECTIONAL, &cattr);
	if (err)
		goto out;
	qattr.send_cq = qattr.recv_cq = c.cq;
	qa = ib_create_qp(c.pd, &qattr);
	CHECK(!IS_ERR(qa), "%ld", PTR_ERR(qa));
	c.qp = ib_create_qp(c.pd, &qattr);	/* b */
	CHECK(!IS_ERR(c.qp), "%ld", PTR_ERR(c.qp));
	ccq = ib_alloc_cq(ibdev, NULL, 16, 0, IB_POLL_SOFTIRQ);
	CHECK(!IS_ERR(ccq), "%ld", PTR_ERR(ccq));
	qattr.send_cq = qattr.recv_cq = ccq;
	qc = ib_create_qp(c.pd, &qattr);
	CHECK(!IS_ERR(qc), "%ld", PTR_ERR(qc));

	/* b: 2 receives flushed by the device, CQEs not polled */
	CHECK(flush_qp(&c, c.qp, 900, 2) == 0, "");
	msleep(200);

	/* c: INIT, NC receives */
	{
		struct ib_qp_attr a = { .qp_state = IB_QPS_INIT, .port_num = 1,
					.qp_access_flags = IB_ACCESS_REMOTE_WRITE };
		struct ib_sge sge = { .addr = c.dma, .length = 64, .lkey = c.pd->local_dma_lkey };

		err = ib_modify_qp(qc, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
				   IB_QP_ACCESS_FLAGS);
		CHECK(!err, "c INIT: %d", err);
		for (i = 0; i < NC; i++) {
			struct ib_recv_wr wr = { .sg_list = &sge, .num_sge = 1 };

			c_cqe[i].done = c_recv_done;
			wr.wr_cqe = &c_cqe[i];
			err = ib_post_recv(qc, &wr, NULL);
			CHECK(!err, "c recv %d: %d", i, err);
		}
	}

	/* a: RTS to nobody, NR receives, NS sends (1 and 3 unsignaled) */
	err = to_rts(ibdev, qa);
	CHECK(!err, "a to RTS: %d", err);
	for (i = 0; i < NR; i++) {
		struct ib_sge sge = { .addr = c.dma, .length = 64, .lkey = c.pd->local_dma_lkey };
		struct ib_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge, .num_sge = 1 };

		err = ib_post_recv(qa, &wr, NULL);
		CHECK(!err, "a recv %d: %d", i, err);
	}
	for (i = 0; i < NS; i++) {
		struct ib_sge sge = { .addr = c.dma, .length = 16, .lkey = c.pd->local_dma_lkey };
		struct ib_send_wr wr = { .wr_id = 200 + i, .sg_list = &sge, .num_sge = 1,
					 .opcode = i == 4 ? IB_WR_RDMA_WRITE : IB_WR_SEND,
					 .send_flags = (i == 1 || i == 3) ? 0 : IB_SEND_SIGNALED };
		struct ib_rdma_wr rw = { .wr = wr, .remote_addr = 0x1000, .rkey = 0x1234 };

		err = ib_post_send(qa, &rw.wr, NULL);
		CHECK(!err, "a send %d: %d", i, err);
	}
	msleep(200);
	atomic_set(&events, 0);
	atomic_set(&c_done, 0);

	err = inject_fatal(ibdev);
	CHECK(!err, "inject_fatal: %d", err);
	for (i = 0; i < 500 && !atomic_read(&events); i++)
		msleep(10);
	CHECK(atomic_read(&events) == 1, "CQ handler ran %d times", atomic_read(&events));
	pr_info("qrnic_ktest: fatal: CQ handler called\n");

	/* 2 CQEs of b, NS sends then NR receives of a; then none */
	got = 0;
	for (i = 0; i < 10 && got < 2 + NS + NR; i++) {
		k = ib_poll_cq(c.cq, 3, wc + got);	/* several polls */
		CHECK(k >= 0, "poll %d", k);
		got += k;
		if (!k)
			break;
	}
	CHECK(got == 2 + NS + NR, "%d completions, %d expected", got, 2 + NS + NR);
	CHECK(ib_poll_cq(c.cq, 4, wc + got) == 0, "more completions than WRs");
	for (i = 0; i < got; i++) {
		u64 want = i < 2 ? 900 + i : i < 2 + NS ? 200 + i - 2 : 100 + i - 2 - NS;
		struct ib_qp *wqp = i < 2 ? c.qp : qa;
		enum ib_wc_opcode op = i < 2 || i >= 2 + NS ? IB_WC_RECV :
				       i == 2 + 4 ? IB_WC_RDMA_WRITE : IB_WC_SEND;

		pr_info("qrnic_ktest: fatal: wc %d wr_id %llu status %d opcode %d qp %u\n", i,
			wc[i].wr_id, wc[i].status, wc[i].opcode, wc[i].qp ? wc[i].qp->qp_num : 0);
		CHECK(wc[i].wr_id == want && wc[i].status == IB_WC_WR_FLUSH_ERR &&
		      wc[i].qp == wqp && (i < 2 || wc[i].opcode == op),
		      "wc %d: wr_id %llu status %d opcode %d, expected wr_id %llu opcode %d", i,
		      wc[i].wr_id, wc[i].status, wc[i].opcode, want, op);
	}
	msleep(100);
	CHECK(atomic_read(&events) == 1, "CQ handler ran %d times", atomic_read(&events));
	CHECK(ib_req_notify_cq(c.cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS) == 0,
	      "missed events with nothing left");
	pr_info("qrnic_ktest: fatal: %d flush completions in order\n", got);

	/* c: by the softirq poll alone */
	for (i = 0; i < 500 && atomic_read(&c_done) < NC; i++)
		msleep(10);
	CHECK(atomic_read(&c_done) == NC, "c: %d of %d", atomic_read(&c_done), NC);

	/* posts now fail at once, naming the first WR */
	{
		struct ib_sge sge = { .addr = c.dma, .length = 16, .lkey = c.pd->local_dma_lkey };
		struct ib_send_wr swr = { .wr_id = 300, .sg_list = &sge, .num_sge = 1,
					  .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
		struct ib_recv_wr rwr = { .wr_id = 301, .sg_list = &sge, .num_sge = 1 };
		const struct ib_send_wr *sbad = NULL;
		const struct ib_recv_wr *rbad = NULL;

		err = ib_post_send(qa, &swr, &sbad);
		CHECK(err == -EIO && sbad == &swr, "post_send after death: %d", err);
		err = ib_post_recv(qa, &rwr, &rbad);
		CHECK(err == -EIO && rbad == &rwr, "post_recv after death: %d", err);
		err = 0;
		CHECK(ib_poll_cq(c.cq, 4, wc) == 0, "completion of a failed post");
	}
	/* the drain (marker flushed by software) returns */
	ib_drain_qp(qc);
	CHECK(atomic_read(&c_done) == NC, "c after drain: %d", atomic_read(&c_done));
	pr_info("qrnic_ktest: fatal: posts fail with -EIO, drain returned\n");
	pr_info("qrnic_ktest: PASS\n");
out:
	if (qc && !IS_ERR(qc))
		ib_destroy_qp(qc);
	if (ccq && !IS_ERR(ccq))
		ib_free_cq(ccq);
	if (qa && !IS_ERR(qa))
		ib_destroy_qp(qa);
	ctx_close(&c, ibdev);
	kfree(wc);
	return err;
}

static int __init qrnic_ktest_init(void)
{
	struct ib_cq_init_attr cattr = { .cqe = 8 };
	struct ib_qp_init_attr qattr = {
		.qp_type = IB_QPT_RC, .sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 32, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ib_device *ibdev;
	struct ib_qp *qp2 = NULL;
	struct ctx c = {};
	int err = 0, i, k, cqe0;

	ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!ibdev) {
		pr_err("qrnic_ktest: FAIL no ib device %s\n", dev);
		return -ENODEV;
	}
	if (fatal) {
		err = fatal_flush(ibdev);
		ib_device_put(ibdev);
		return err;
	}
	err = ctx_open(&c, ibdev, DMA_FROM_DEVICE, &cattr);
	if (err)
		goto out;
	cqe0 = c.cq->cqe;
	qattr.send_cq = qattr.recv_cq = c.cq;
	c.qp = ib_create_qp(c.pd, &qattr);
	CHECK(!IS_ERR(c.qp), "%ld", PTR_ERR(c.qp));

	/* 6 CQEs pending: too small a size fails and loses nothing */
	CHECK(flush_n(&c, 100, 6) == 0, "");
	err = ib_resize_cq(c.cq, 4);
	CHECK(err == -EINVAL, "resize to 4 with 6 pending: %d", err);
	err = 0;
	CHECK(c.cq->cqe == cqe0, "cqe %d -> %d", cqe0, c.cq->cqe);
	/* bigger: the 6 move to the new ring, in order */
	err = ib_resize_cq(c.cq, 200);
	CHECK(err == 0 && c.cq->cqe >= 200, "resize to 200: %d, cqe %d", err, c.cq->cqe);
	CHECK(expect_flushed(c.cq, 100, 6) == 0, "after growing");
	pr_info("qrnic_ktest: grown %d -> %d with 6 CQEs pending\n", cqe0, c.cq->cqe);

	/* some polled, some pending: smaller again */
	CHECK(flush_n(&c, 400, 5) == 0, "");
	{
		struct ib_wc wc[2];

		CHECK(ib_poll_cq(c.cq, 2, wc) == 2 && wc[0].wr_id == 400 && wc[1].wr_id == 401,
		      "first two");
	}
	err = ib_resize_cq(c.cq, 2);
	CHECK(err == -EINVAL, "resize to 2 with 3 pending: %d", err);
	err = 0;
	err = ib_resize_cq(c.cq, 16);
	CHECK(err == 0, "shrink to 16 with 3 pending: %d", err);
	CHECK(expect_flushed(c.cq, 402, 3) == 0, "after shrinking");
	/* new CQEs on the new ring from its index 0, across its end */
	for (i = 0; i < 3; i++) {
		CHECK(flush_n(&c, 500 + 10 * i, 10) == 0, "");
		CHECK(expect_flushed(c.cq, 500 + 10 * i, 10) == 0, "lap %d", i);
	}
	pr_info("qrnic_ktest: shrunk to %d with 3 of 5 pending; 30 CQEs after\n", c.cq->cqe);

	/* a QP to RESET takes its unpolled CQEs out of the CQ, the other's stay */
	qp2 = ib_create_qp(c.pd, &qattr);
	CHECK(!IS_ERR(qp2), "%ld", PTR_ERR(qp2));
	CHECK(flush_n(&c, 800, 3) == 0, "");
	CHECK(flush_qp(&c, qp2, 700, 2) == 0, "");
	CHECK(flush_n(&c, 900, 1) == 0, "");	/* RESET first: 800..802 go */
	{
		static const u64 want[] = { 700, 701, 900 };
		struct ib_wc wc[8];

		k = ib_poll_cq(c.cq, 8, wc);
		CHECK(k == 3, "%d CQEs after RESET", k);
		for (i = 0; i < 3; i++)
			CHECK(wc[i].wr_id == want[i] && wc[i].status == IB_WC_WR_FLUSH_ERR,
			      "CQE %d: wr_id %llu status %d", i, wc[i].wr_id, wc[i].status);
	}
	pr_info("qrnic_ktest: RESET took 3 CQEs of its QP, kept 2 of another\n");

	/* moderation: accepted, and an error CQE raises the event at once */
	err = rdma_set_cq_moderation(c.cq, 4, 0);
	CHECK(err == 0, "modify_cq 4/0: %d", err);
	atomic_set(&events, 0);
	CHECK(ib_req_notify_cq(c.cq, IB_CQ_NEXT_COMP) >= 0, "");
	CHECK(flush_n(&c, 600, 1) == 0, "");
	for (i = 0; i < 100 && !atomic_read(&events); i++)
		msleep(10);
	CHECK(atomic_read(&events) == 1, "events %d", atomic_read(&events));
	CHECK(expect_flushed(c.cq, 600, 1) == 0, "");
	err = rdma_set_cq_moderation(c.cq, 65535, 65535);
	CHECK(err == 0, "modify_cq max: %d", err);
	err = rdma_set_cq_moderation(c.cq, 0, 0);
	CHECK(err == 0, "modify_cq off: %d", err);
	err = xrc_ini_attrs(ibdev, c.pd, c.cq);
	if (err)
		goto out;
	pr_info("qrnic_ktest: PASS\n");
out:
	if (qp2 && !IS_ERR(qp2))
		ib_destroy_qp(qp2);
	ctx_close(&c, ibdev);
	ib_device_put(ibdev);
	return err;
}

static void __exit qrnic_ktest_exit(void)
{
}

module_init(qrnic_ktest_init);
module_exit(qrnic_ktest_exit);
MODULE_DESCRIPTION("qrnic test: kernel CQ resize and moderation, XRC INI attributes, flushes of a dead device");
MODULE_LICENSE("GPL");
