// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic queue pairs: create/modify/query/destroy through the admin queue,
 * and the kernel data path (WQEs written into the rings, 64-bit doorbells
 * in BAR2 page 0).  User QPs' rings are mapped to the provider
 * (struct qrnic_create_qp_resp), which posts to them itself.
 */
#include <linux/log2.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "qrnic.h"

/* enum ib_qp_attr_mask and the device's attribute mask share bit numbers. */
static_assert(IB_QP_STATE == QRNIC_QP_ATTR_STATE);
static_assert(IB_QP_CUR_STATE == QRNIC_QP_ATTR_CUR_STATE);
static_assert(IB_QP_EN_SQD_ASYNC_NOTIFY == QRNIC_QP_ATTR_EN_SQD_ASYNC);
static_assert(IB_QP_ACCESS_FLAGS == QRNIC_QP_ATTR_ACCESS_FLAGS);
static_assert(IB_QP_PKEY_INDEX == QRNIC_QP_ATTR_PKEY_INDEX);
static_assert(IB_QP_PORT == QRNIC_QP_ATTR_PORT);
static_assert(IB_QP_QKEY == QRNIC_QP_ATTR_QKEY);
static_assert(IB_QP_AV == QRNIC_QP_ATTR_AV);
static_assert(IB_QP_PATH_MTU == QRNIC_QP_ATTR_PATH_MTU);
static_assert(IB_QP_TIMEOUT == QRNIC_QP_ATTR_TIMEOUT);
static_assert(IB_QP_RETRY_CNT == QRNIC_QP_ATTR_RETRY_CNT);
static_assert(IB_QP_RNR_RETRY == QRNIC_QP_ATTR_RNR_RETRY);
static_assert(IB_QP_RQ_PSN == QRNIC_QP_ATTR_RQ_PSN);
static_assert(IB_QP_MAX_QP_RD_ATOMIC == QRNIC_QP_ATTR_MAX_QP_RD_ATOMIC);
static_assert(IB_QP_ALT_PATH == QRNIC_QP_ATTR_ALT_PATH);
static_assert(IB_QP_MIN_RNR_TIMER == QRNIC_QP_ATTR_MIN_RNR_TIMER);
static_assert(IB_QP_SQ_PSN == QRNIC_QP_ATTR_SQ_PSN);
static_assert(IB_QP_MAX_DEST_RD_ATOMIC == QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC);
static_assert(IB_QP_PATH_MIG_STATE == QRNIC_QP_ATTR_PATH_MIG_STATE);
static_assert(IB_QP_CAP == QRNIC_QP_ATTR_CAP);
static_assert(IB_QP_DEST_QPN == QRNIC_QP_ATTR_DEST_QPN);
/* ... and so do states, MTUs, access flags and CQE statuses. */
static_assert(IB_QPS_ERR == QRNIC_QPS_ERR && IB_QPS_SQE == QRNIC_QPS_SQE);
static_assert(IB_MTU_4096 == QRNIC_MTU_4096 && IB_MTU_256 == QRNIC_MTU_256);
static_assert(IB_ACCESS_LOCAL_WRITE == QRNIC_ACCESS_LOCAL_WRITE &&
	      IB_ACCESS_REMOTE_WRITE == QRNIC_ACCESS_REMOTE_WRITE &&
	      IB_ACCESS_REMOTE_READ == QRNIC_ACCESS_REMOTE_READ &&
	      IB_ACCESS_REMOTE_ATOMIC == QRNIC_ACCESS_REMOTE_ATOMIC);
static_assert(IB_WC_GENERAL_ERR == QRNIC_WC_GENERAL_ERR &&
	      IB_WC_RETRY_EXC_ERR == QRNIC_WC_RETRY_EXC_ERR);

#define QRNIC_QP_ATTR_SUPPORTED	(IB_QP_DEST_QPN * 2 - 1)	/* bits 0..20 */

/* ---- create / destroy ------------------------------------------------------------- */

static int qrnic_qp_type(struct qrnic_dev *dev, enum ib_qp_type type, bool user, u8 *hw)
{
	switch (type) {
	case IB_QPT_RC:
		*hw = QRNIC_QPT_RC;
		return 0;
	case IB_QPT_UC:
		if (!(dev->caps & QRNIC_CAP_UC))
			return -EOPNOTSUPP;
		*hw = QRNIC_QPT_UC;
		return 0;
	case IB_QPT_UD:
		if (!(dev->caps & QRNIC_CAP_UD))
			return -EOPNOTSUPP;
		*hw = QRNIC_QPT_UD;
		return 0;
	case IB_QPT_GSI:
		if (user || !(dev->caps & QRNIC_CAP_UD))
			return -EOPNOTSUPP;
		*hw = QRNIC_QPT_GSI;
		return 0;
	case IB_QPT_XRC_INI:
		if (!qrnic_has_xrc(dev))
			return -EOPNOTSUPP;
		*hw = QRNIC_QPT_XRC_INI;
		return 0;
	case IB_QPT_XRC_TGT:
		if (!qrnic_has_xrc(dev))
			return -EOPNOTSUPP;
		*hw = QRNIC_QPT_XRC_TGT;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/*
 * Receive WQE slot (RQs and SRQs): a 16-byte header, then at least @sges
 * SGEs.  Sets the slot size (log2) and how many SGEs it really holds.
 */
void qrnic_recv_geometry(u32 sges, u32 *wqe_shift, u32 *max_sge)
{
	u32 need = sizeof(struct qrnic_recv_wqe) + max_t(u32, sges, 1) * sizeof(struct qrnic_sge);
	u32 shift = clamp_t(u32, order_base_2(need), QRNIC_MIN_RECV_WQE_SHIFT,
			    QRNIC_MAX_RECV_WQE_SHIFT);

	*wqe_shift = shift;
	*max_sge = min_t(u32, QRNIC_MAX_SGE,
			 ((1U << shift) - sizeof(struct qrnic_recv_wqe)) / sizeof(struct qrnic_sge));
}

/*
 * Choose ring geometry for the requested capabilities and report what the
 * QP really gets back in @cap.
 */
static int qrnic_qp_size(struct qrnic_dev *dev, struct qrnic_qp *qp,
			 struct ib_qp_cap *cap)
{
	u32 max_qp_wr = qrnic_attr(dev, max_qp_wr), max_sge = qrnic_attr(dev, max_sge);
	u32 max_inline = qrnic_attr(dev, max_inline);
	u32 need, shift;

	if (cap->max_send_wr > max_qp_wr || cap->max_recv_wr > max_qp_wr ||
	    cap->max_send_sge > max_sge || cap->max_recv_sge > max_sge ||
	    cap->max_inline_data > max_inline)
		return -EINVAL;

	/* send queue: 64-byte header, then SGEs or inline data */
	need = sizeof(struct qrnic_send_wqe) +
	       max_t(u32, cap->max_send_sge * sizeof(struct qrnic_sge), cap->max_inline_data);
	shift = clamp_t(u32, order_base_2(need), QRNIC_MIN_WQE_SHIFT, QRNIC_MAX_SEND_WQE_SHIFT);
	qp->sq.wqe_shift = shift;
	qp->sq.log_depth = max_t(u32, 1, order_base_2(cap->max_send_wr));
	qp->sq.max_sge = min_t(u32, QRNIC_MAX_SGE,
			       ((1U << shift) - sizeof(struct qrnic_send_wqe)) /
			       sizeof(struct qrnic_sge));
	qp->max_inline = min_t(u32, max_inline, (1U << shift) - sizeof(struct qrnic_send_wqe));

	/* receive queue: none if no receive WR (or an SRQ) */
	if (cap->max_recv_wr) {
		qrnic_recv_geometry(cap->max_recv_sge, &qp->rq.wqe_shift, &qp->rq.max_sge);
		qp->rq.log_depth = max_t(u32, 1, order_base_2(cap->max_recv_wr));
	}
	if ((1U << qp->sq.log_depth) > max_qp_wr ||
	    (qp->rq.log_depth && (1U << qp->rq.log_depth) > max_qp_wr))
		return -EINVAL;

	cap->max_send_wr = 1U << qp->sq.log_depth;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_inline_data = qp->max_inline;
	cap->max_recv_wr = qp->rq.log_depth ? 1U << qp->rq.log_depth : 0;
	cap->max_recv_sge = qp->rq.log_depth ? qp->rq.max_sge : 0;
	return 0;
}

/* @extra: bytes after the WQEs (the RQ's producer record), zeroed */
static int qrnic_wq_alloc(struct qrnic_dev *dev, struct qrnic_wq *wq,
			  struct qrnic_ucontext *uctx, size_t extra)
{
	spin_lock_init(&wq->lock);
	wq->pi = 0;
	wq->ci = 0;
	if (!wq->log_depth)
		return 0;
	return qrnic_ring_alloc(dev, &wq->ring,
				((size_t)1 << (wq->log_depth + wq->wqe_shift)) + extra, uctx);
}

/*
 * XRC TGT QP (spec 6.6.8, 12.14): no PD, CQs or rings, only its domain.
 * ib_core creates it without udata (ib_create_qp_user), so it is a kernel
 * QP of a kernel domain whichever process opened it.
 */
static int qrnic_create_xrc_tgt_qp(struct qrnic_dev *dev, struct qrnic_qp *qp,
				   struct ib_qp_init_attr *init_attr)
{
	struct qrnic_cmd_create_qp cmd = {};
	int err;

	if (init_attr->create_flags || init_attr->rwq_ind_tbl || !init_attr->xrcd ||
	    init_attr->srq || init_attr->send_cq || init_attr->recv_cq)
		return -EINVAL;
	err = qrnic_qp_type(dev, IB_QPT_XRC_TGT, false, &qp->hw_type);
	if (err)
		return err;
	qp->user = false;
	qp->sig_all = false;
	qp->state = IB_QPS_RESET;
	spin_lock_init(&qp->sq.lock);
	spin_lock_init(&qp->rq.lock);
	memset(&init_attr->cap, 0, sizeof(init_attr->cap));

	cmd.qp_type = QRNIC_QPT_XRC_TGT;
	cmd.xrcd = cpu_to_le32(to_qxrcd(init_attr->xrcd)->xrcdn);
	err = qrnic_cmd_create_qp(dev, &cmd, &qp->qpn);
	if (err)
		return err;
	qp->ibqp.qp_num = qp->qpn;
	err = qrnic_xa_claim(&dev->qps, qp->qpn, qp);
	if (err) {
		if (qrnic_cmd_destroy_qp(dev, qp->qpn) && !qrnic_dead(dev))
			dev_err(&dev->pdev->dev, "cannot undo XRC TGT QP %u\n", qp->qpn);
		return err;
	}
	return 0;
}

int qrnic_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init_attr,
		    struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibqp->device);
	struct qrnic_qp *qp = to_qqp(ibqp);
	struct qrnic_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct qrnic_ucontext, ibucontext);
	struct ib_cq *recv_cq = init_attr->recv_cq ?: init_attr->send_cq;
	struct qrnic_create_qp_resp resp = {};
	struct qrnic_cmd_create_qp cmd = {};
	struct qrnic_ring_cmd sq_plc, rq_plc = {};
	u64 sq_addr, rq_addr = 0;
	size_t rq_bytes, sq_bytes;
	bool listed, rec, sq_rec;
	u32 flags;
	int err;

	if (init_attr->qp_type == IB_QPT_XRC_TGT)
		return qrnic_create_xrc_tgt_qp(dev, qp, init_attr);
	if (init_attr->create_flags || init_attr->rwq_ind_tbl ||
	    init_attr->xrcd || !init_attr->send_cq)
		return -EOPNOTSUPP;
	if (init_attr->qp_type == IB_QPT_GSI && init_attr->port_num != QRNIC_PORT)
		return -EINVAL;
	err = qrnic_qp_type(dev, init_attr->qp_type, !!uctx, &qp->hw_type);
	if (err)
		return err;
	if (qp->hw_type == QRNIC_QPT_XRC_INI) {
		/* the send side only: no RQ, no SRQ, no receive CQ (spec 6.6.8) */
		if (init_attr->srq)
			return -EINVAL;
		init_attr->cap.max_recv_wr = 0;
		init_attr->cap.max_recv_sge = 0;
		recv_cq = NULL;
	}
	if (init_attr->srq) {
		/* RC, UC, UD only (the device's rule) */
		if (qp->hw_type == QRNIC_QPT_GSI)
			return -EOPNOTSUPP;
		/*
		 * Receives come from the SRQ: no RQ.  The RQ capabilities are
		 * ignored and reported as 0, as ibv_create_qp(3) and mlx5/rxe
		 * do (rdma_cm applications pass max_recv_wr with an SRQ).
		 */
		init_attr->cap.max_recv_wr = 0;
		init_attr->cap.max_recv_sge = 0;
	}
	qp->user = !!uctx;
	qp->sig_all = init_attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->state = IB_QPS_RESET;
	err = qrnic_qp_size(dev, qp, &init_attr->cap);
	if (err)
		return err;

	/*
	 * The SQ record after the WQEs (ABI 1.11): post_send writes the index
	 * there and rings only when the device's flag is clear (this driver
	 * for kernel QPs, the provider, through the SQ's mapping, for user
	 * QPs).  The ring comes zeroed: both words 0, as the device expects.
	 */
	sq_bytes = (size_t)1 << (qp->sq.log_depth + qp->sq.wqe_shift);
	sq_rec = qrnic_use_sq_dbrec(dev);
	qp->sq_rec = NULL;
	err = qrnic_wq_alloc(dev, &qp->sq, uctx, sq_rec ? QRNIC_DBREC_BYTES : 0);
	if (err)
		return err;
	if (sq_rec) {
		if (!uctx)
			qp->sq_rec = qrnic_ring_at(&qp->sq.ring, sq_bytes);
		cmd.sq_dbrec_addr = cpu_to_le64(qrnic_ring_dma_at(&qp->sq.ring, sq_bytes));
	}
	/*
	 * The RQ producer record after the WQEs (ABI 1.10): post_recv writes
	 * it (this driver for kernel QPs, the provider, through the RQ's
	 * mapping, for user QPs) instead of ringing the RQ doorbell.
	 */
	rq_bytes = qp->rq.log_depth ? (size_t)1 << (qp->rq.log_depth + qp->rq.wqe_shift) : 0;
	rec = qp->rq.log_depth && qrnic_use_rq_dbrec(dev);
	qp->rq_rec = NULL;
	err = qrnic_wq_alloc(dev, &qp->rq, uctx, rec ? QRNIC_DBREC_BYTES : 0);
	if (err)
		goto err_free_sq;
	if (rec) {
		if (!uctx)
			qp->rq_rec = qrnic_ring_at(&qp->rq.ring, rq_bytes);
		cmd.rq_dbrec_addr = cpu_to_le64(qrnic_ring_dma_at(&qp->rq.ring, rq_bytes));
	}

	cmd.uctx = cpu_to_le32(uctx ? uctx->uctx : 0);
	cmd.pdn = cpu_to_le32(to_qpd(ibqp->pd)->pdn);
	cmd.send_cqn = cpu_to_le32(to_qcq(init_attr->send_cq)->cqn);
	cmd.recv_cqn = cpu_to_le32(recv_cq ? to_qcq(recv_cq)->cqn : 0);
	cmd.qp_type = qp->hw_type;
	cmd.sq_log_depth = qp->sq.log_depth;
	cmd.sq_wqe_shift = qp->sq.wqe_shift;
	cmd.rq_log_depth = qp->rq.log_depth;
	cmd.rq_wqe_shift = qp->rq.log_depth ? qp->rq.wqe_shift : 0;
	flags = qp->sig_all ? QRNIC_QP_F_SQ_SIG_ALL : 0;
	cmd.srqn = cpu_to_le32(init_attr->srq ? to_qsrq(init_attr->srq)->srqn : 0);
	err = qrnic_ring_cmd_addr(dev, &qp->sq.ring, (size_t)1 << (qp->sq.log_depth + qp->sq.wqe_shift),
				  &sq_plc, &sq_addr, &listed);
	if (err)
		goto err_free_rq;
	flags |= listed ? QRNIC_QP_F_SQ_PAGELIST : 0;
	if (qp->rq.log_depth) {
		err = qrnic_ring_cmd_addr(dev, &qp->rq.ring, rq_bytes, &rq_plc, &rq_addr,
					  &listed);
		if (err) {
			qrnic_ring_cmd_done(dev, &sq_plc);
			goto err_free_rq;
		}
		flags |= listed ? QRNIC_QP_F_RQ_PAGELIST : 0;
	}
	cmd.flags = cpu_to_le32(flags);
	cmd.sq_addr = cpu_to_le64(sq_addr);
	cmd.rq_addr = cpu_to_le64(rq_addr);
	err = qrnic_cmd_create_qp(dev, &cmd, &qp->qpn);
	qrnic_ring_cmd_done(dev, &sq_plc);	/* the device read them */
	qrnic_ring_cmd_done(dev, &rq_plc);
	if (err)
		goto err_free_rq;
	if (qp->hw_type == QRNIC_QPT_GSI && qp->qpn != 1) {
		dev_err(&dev->pdev->dev, "GSI QP got qpn %u\n", qp->qpn);
		err = -EIO;
		goto err_destroy;
	}
	ibqp->qp_num = qp->qpn;

	err = qrnic_xa_claim(&dev->qps, qp->qpn, qp);
	if (err)
		goto err_destroy;

	if (udata) {
		resp.qpn = qp->qpn;
		resp.sq_log_depth = qp->sq.log_depth;
		resp.sq_wqe_shift = qp->sq.wqe_shift;
		resp.rq_log_depth = qp->rq.log_depth;
		resp.rq_wqe_shift = qp->rq.log_depth ? qp->rq.wqe_shift : 0;
		resp.sq_mmap_key = qrnic_ring_mmap_key(&qp->sq.ring);
		resp.sq_mmap_size = qp->sq.ring.bytes;
		if (qp->rq.log_depth) {
			resp.rq_mmap_key = qrnic_ring_mmap_key(&qp->rq.ring);
			resp.rq_mmap_size = qp->rq.ring.bytes;
			resp.rq_dbrec_offset = rec ? rq_bytes : 0;
		}
		resp.sq_dbrec_offset = sq_rec ? sq_bytes : 0;
		resp.max_inline = qp->max_inline;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_erase;
	} else {
		/* software flushes after a fatal error (qrnic_cq.c) */
		qrnic_cq_track_qp(dev, qp, to_qcq(init_attr->send_cq),
				  recv_cq ? to_qcq(recv_cq) : NULL);
	}
	if (sq_rec)
		atomic64_inc(&dev->sqrec.qps);
	return 0;

err_erase:
	qrnic_xa_release(&dev->qps, qp->qpn, qp);
	qrnic_eq_sync(dev, NULL);
err_destroy:
	if (qrnic_cmd_destroy_qp(dev, qp->qpn) && !qrnic_dead(dev)) {
		/* The device may still use the rings: leak them rather than free them. */
		dev_err(&dev->pdev->dev, "cannot undo QP %u, leaking its rings\n", qp->qpn);
		return err;
	}
err_free_rq:
	qrnic_ring_free(dev, &qp->rq.ring);
err_free_sq:
	qrnic_ring_free(dev, &qp->sq.ring);
	return err;
}

int qrnic_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibqp->device);
	struct qrnic_qp *qp = to_qqp(ibqp);
	int err;

	err = qrnic_cmd_destroy_qp(dev, qp->qpn);
	if (err && !qrnic_dead(dev))
		return err;	/* still known to the device: keep everything */

	qrnic_xa_release(&dev->qps, qp->qpn, qp);
	qrnic_eq_sync(dev, NULL);		/* async events */
	/* no software flush or flush_work looks at it any more */
	qrnic_cq_untrack_qp(dev, qp);
	if (!qp->user) {
		/* a poll_cq in progress may have looked the QP up */
		if (ibqp->send_cq)	/* an XRC TGT QP has none */
			qrnic_cq_fence(to_qcq(ibqp->send_cq));
		if (ibqp->recv_cq)
			qrnic_cq_fence(to_qcq(ibqp->recv_cq));
	}
	qrnic_ring_free(dev, &qp->rq.ring);
	qrnic_ring_free(dev, &qp->sq.ring);
	return 0;
}

/* ---- modify / query ---------------------------------------------------------------- */

int qrnic_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		    struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibqp->device);
	struct qrnic_qp *qp = to_qqp(ibqp);
	struct qrnic_qp_attr hw = {};
	unsigned long flags;
	int err;

	if (attr_mask & ~QRNIC_QP_ATTR_SUPPORTED)
		return -EOPNOTSUPP;
	/*
	 * An XRC INI QP takes ACCESS_FLAGS, MAX_DEST_RD_ATOMIC and
	 * MIN_RNR_TIMER where an RC QP does (spec 11.3; Linux requires
	 * ACCESS_FLAGS at its RESET -> INIT and ibv_xsrq_pingpong passes it):
	 * they go to the device, which keeps them and reports them in
	 * QUERY_QP, though a QP with no responder has no use for them.
	 */
	hw.attr_mask = cpu_to_le32(attr_mask);
	if (attr_mask & IB_QP_STATE)
		hw.qp_state = attr->qp_state;
	if (attr_mask & IB_QP_CUR_STATE)
		hw.cur_qp_state = attr->cur_qp_state;
	if (attr_mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		hw.en_sqd_async_notify = attr->en_sqd_async_notify;
	if (attr_mask & IB_QP_ACCESS_FLAGS)
		hw.qp_access_flags = cpu_to_le32(attr->qp_access_flags & QRNIC_ACCESS_ALL);
	if (attr_mask & IB_QP_PKEY_INDEX)
		hw.pkey_index = cpu_to_le16(attr->pkey_index);
	if (attr_mask & IB_QP_PORT)
		hw.port_num = attr->port_num;
	if (attr_mask & IB_QP_QKEY)
		hw.qkey = cpu_to_le32(attr->qkey);
	if (attr_mask & IB_QP_AV) {
		err = qrnic_ah_attr_to_av(dev, &attr->ah_attr, &hw.av);
		if (err)
			return err;
	}
	if (attr_mask & IB_QP_PATH_MTU)
		hw.path_mtu = attr->path_mtu;
	if (attr_mask & IB_QP_TIMEOUT)
		hw.timeout = attr->timeout;
	if (attr_mask & IB_QP_RETRY_CNT)
		hw.retry_cnt = attr->retry_cnt;
	if (attr_mask & IB_QP_RNR_RETRY)
		hw.rnr_retry = attr->rnr_retry;
	if (attr_mask & IB_QP_RQ_PSN)
		hw.rq_psn = cpu_to_le32(attr->rq_psn);
	if (attr_mask & IB_QP_MAX_QP_RD_ATOMIC)
		hw.max_rd_atomic = attr->max_rd_atomic;
	if (attr_mask & IB_QP_MIN_RNR_TIMER)
		hw.min_rnr_timer = attr->min_rnr_timer;
	if (attr_mask & IB_QP_SQ_PSN)
		hw.sq_psn = cpu_to_le32(attr->sq_psn);
	if (attr_mask & IB_QP_MAX_DEST_RD_ATOMIC)
		hw.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (attr_mask & IB_QP_DEST_QPN)
		hw.dest_qpn = cpu_to_le32(attr->dest_qp_num);

	/*
	 * To ERR: post_recv rings the RQ doorbell from now on (an RQ with a
	 * producer record, qrnic_post_recv), so that a WQE posted while the
	 * device flushes is flushed too, not left to the record alone.
	 */
	if ((attr_mask & IB_QP_STATE) && attr->qp_state == IB_QPS_ERR) {
		enum ib_qp_state old = qp->state;

		WRITE_ONCE(qp->state, IB_QPS_ERR);
		err = qrnic_cmd_modify_qp(dev, qp->qpn, &hw);
		if (err)
			WRITE_ONCE(qp->state, old);
	} else {
		err = qrnic_cmd_modify_qp(dev, qp->qpn, &hw);
	}
	if (err)
		return err;

	if (attr_mask & IB_QP_STATE) {
		WRITE_ONCE(qp->state, attr->qp_state);
		if (attr->qp_state == IB_QPS_RESET && !qp->user) {
			/* the device restarts both queues' indexes at 0 */
			spin_lock_irqsave(&qp->sq.lock, flags);
			qp->sq.pi = 0;
			WRITE_ONCE(qp->sq.ci, 0);
			if (qp->sq_rec)		/* the record too (ABI 1.11) */
				WRITE_ONCE(qp->sq_rec->pi, 0);
			spin_unlock_irqrestore(&qp->sq.lock, flags);
			spin_lock_irqsave(&qp->rq.lock, flags);
			qp->rq.pi = 0;
			WRITE_ONCE(qp->rq.ci, 0);
			if (qp->rq_rec)		/* the record too (ABI 1.10) */
				WRITE_ONCE(*qp->rq_rec, 0);
			spin_unlock_irqrestore(&qp->rq.lock, flags);
			/* and its completions not yet polled go */
			if (ibqp->send_cq)
				qrnic_cq_clean(to_qcq(ibqp->send_cq), qp->qpn);
			if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
				qrnic_cq_clean(to_qcq(ibqp->recv_cq), qp->qpn);
		}
	}
	return 0;
}

int qrnic_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		   struct ib_qp_init_attr *init_attr)
{
	struct qrnic_dev *dev = to_qdev(ibqp->device);
	struct qrnic_qp *qp = to_qqp(ibqp);
	struct qrnic_qp_attr hw;
	int err;

	err = qrnic_cmd_query_qp(dev, qp->qpn, &hw);
	if (err)
		return err;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = hw.qp_state;
	attr->cur_qp_state = hw.qp_state;
	attr->path_mtu = hw.path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = le32_to_cpu(hw.qkey);
	attr->rq_psn = le32_to_cpu(hw.rq_psn);
	attr->sq_psn = le32_to_cpu(hw.sq_psn);
	attr->dest_qp_num = le32_to_cpu(hw.dest_qpn);
	attr->qp_access_flags = le32_to_cpu(hw.qp_access_flags);
	attr->pkey_index = le16_to_cpu(hw.pkey_index);
	attr->en_sqd_async_notify = hw.en_sqd_async_notify;
	attr->sq_draining = hw.sq_draining;
	attr->max_rd_atomic = hw.max_rd_atomic;
	attr->max_dest_rd_atomic = hw.max_dest_rd_atomic;
	attr->min_rnr_timer = hw.min_rnr_timer;
	attr->port_num = hw.port_num;
	attr->timeout = hw.timeout;
	attr->retry_cnt = hw.retry_cnt;
	attr->rnr_retry = hw.rnr_retry;
	attr->cap.max_send_wr = 1U << qp->sq.log_depth;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;
	attr->cap.max_recv_wr = qp->rq.log_depth ? 1U << qp->rq.log_depth : 0;
	attr->cap.max_recv_sge = qp->rq.log_depth ? qp->rq.max_sge : 0;
	if (hw.av.net_type) {
		union ib_gid dgid;

		attr->ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_port_num(&attr->ah_attr, QRNIC_PORT);
		memcpy(dgid.raw, hw.av.dgid, sizeof(dgid.raw));
		rdma_ah_set_grh(&attr->ah_attr, &dgid, le32_to_cpu(hw.av.flow_label), hw.av.sgid_index,
				hw.av.hop_limit, hw.av.traffic_class);
		memcpy(attr->ah_attr.roce.dmac, hw.av.dmac, ETH_ALEN);
	}

	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_type = ibqp->qp_type;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->cap = attr->cap;
	init_attr->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init_attr->port_num = QRNIC_PORT;
	return 0;
}

/* ---- kernel data path ----------------------------------------------------------------- */

static int qrnic_send_opcode(struct qrnic_dev *dev, struct qrnic_qp *qp,
			     enum ib_wr_opcode op, u8 *hw)
{
	bool rc = qp->hw_type == QRNIC_QPT_RC;
	bool connected = rc || qp->hw_type == QRNIC_QPT_UC;	/* UC: SEND and WRITE */

	switch (op) {
	case IB_WR_SEND:
		*hw = QRNIC_WR_SEND;
		return 0;
	case IB_WR_SEND_WITH_IMM:
		*hw = QRNIC_WR_SEND_WITH_IMM;
		return 0;
	case IB_WR_RDMA_WRITE:
		*hw = QRNIC_WR_RDMA_WRITE;
		return connected ? 0 : -EINVAL;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		*hw = QRNIC_WR_RDMA_WRITE_WITH_IMM;
		return connected ? 0 : -EINVAL;
	case IB_WR_RDMA_READ:
		*hw = QRNIC_WR_RDMA_READ;
		return rc ? 0 : -EINVAL;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		*hw = QRNIC_WR_ATOMIC_CMP_AND_SWP;
		return rc && (dev->caps & QRNIC_CAP_ATOMIC) ? 0 : -EINVAL;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		*hw = QRNIC_WR_ATOMIC_FETCH_AND_ADD;
		return rc && (dev->caps & QRNIC_CAP_ATOMIC) ? 0 : -EINVAL;
	case IB_WR_LOCAL_INV:
		*hw = QRNIC_WR_LOCAL_INV;
		return qrnic_has_mem_mgt(dev) ? 0 : -EINVAL;
	case IB_WR_SEND_WITH_INV:
		*hw = QRNIC_WR_SEND_WITH_INV;
		return rc && qrnic_has_mem_mgt(dev) ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

static int qrnic_build_send_wqe(struct qrnic_dev *dev, struct qrnic_qp *qp,
				const struct ib_send_wr *wr, struct qrnic_send_wqe *wqe)
{
	struct qrnic_sge *sge = (struct qrnic_sge *)(wqe + 1);
	u8 opcode;
	int i, err;

	err = qrnic_send_opcode(dev, qp, wr->opcode, &opcode);
	if (err)
		return err;

	memset(wqe, 0, sizeof(*wqe));
	wqe->opcode = opcode;
	wqe->wr_id = cpu_to_le64(wr->wr_id);
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sig_all)
		wqe->flags |= QRNIC_WQE_F_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		wqe->flags |= QRNIC_WQE_F_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		wqe->flags |= QRNIC_WQE_F_FENCE;
	if (opcode == QRNIC_WR_SEND_WITH_IMM || opcode == QRNIC_WR_RDMA_WRITE_WITH_IMM)
		wqe->imm_data = wr->ex.imm_data;		/* wire order, as is */
	if (opcode == QRNIC_WR_LOCAL_INV || opcode == QRNIC_WR_SEND_WITH_INV)
		wqe->inv_key = cpu_to_le32(wr->ex.invalidate_rkey);
	if (opcode == QRNIC_WR_LOCAL_INV)
		return 0;					/* no SGEs */

	switch (opcode) {
	case QRNIC_WR_RDMA_WRITE:
	case QRNIC_WR_RDMA_WRITE_WITH_IMM:
	case QRNIC_WR_RDMA_READ:
		wqe->remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		wqe->rkey = cpu_to_le32(rdma_wr(wr)->rkey);
		break;
	case QRNIC_WR_ATOMIC_CMP_AND_SWP:
	case QRNIC_WR_ATOMIC_FETCH_AND_ADD:
		wqe->remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		wqe->rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		wqe->compare_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		wqe->swap = cpu_to_le64(atomic_wr(wr)->swap);
		break;
	default:
		if (qp->hw_type == QRNIC_QPT_UD || qp->hw_type == QRNIC_QPT_GSI) {
			wqe->ah = cpu_to_le32(to_qah(ud_wr(wr)->ah)->ahn);
			wqe->remote_qpn = cpu_to_le32(ud_wr(wr)->remote_qpn);
			wqe->remote_qkey = cpu_to_le32(ud_wr(wr)->remote_qkey);
		}
		break;
	}

	if ((wr->send_flags & IB_SEND_INLINE) &&
	    opcode != QRNIC_WR_RDMA_READ && opcode != QRNIC_WR_ATOMIC_CMP_AND_SWP &&
	    opcode != QRNIC_WR_ATOMIC_FETCH_AND_ADD) {
		u8 *dst = (u8 *)(wqe + 1);
		u32 len = 0;

		for (i = 0; i < wr->num_sge; i++) {
			if (wr->sg_list[i].length > qp->max_inline - len)
				return -EINVAL;
			/* inline SGEs carry kernel virtual addresses */
			memcpy(dst + len, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		wqe->flags |= QRNIC_WQE_F_INLINE;
		wqe->inline_len = cpu_to_le32(len);
		return 0;
	}

	if (wr->num_sge > qp->sq.max_sge)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = cpu_to_le64(wr->sg_list[i].addr);
		sge[i].length = cpu_to_le32(wr->sg_list[i].length);
		sge[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
	}
	wqe->num_sge = wr->num_sge;
	return 0;
}

/* IB_ACCESS_* bits a fast registration may ask for that the device ignores */
#define QRNIC_REG_ACCESS_HINTS	IB_ACCESS_OPTIONAL	/* e.g. IB_ACCESS_RELAXED_ORDERING */

/*
 * IB_WR_REG_MR: register the fast-registration MR reg_wr(wr)->mr with the
 * page list its last map_mr_sg built (spec 12.12).  The WQE is a struct
 * qrnic_reg_mr_wqe; the device reads the page list when it executes it.
 */
static int qrnic_build_reg_mr_wqe(struct qrnic_dev *dev, struct qrnic_qp *qp,
				  const struct ib_send_wr *wr, struct qrnic_reg_mr_wqe *wqe)
{
	const struct ib_reg_wr *reg = reg_wr(wr);
	struct qrnic_mr *mr = to_qmr(reg->mr);
	int access = reg->access & ~QRNIC_REG_ACCESS_HINTS;

	if (!qrnic_has_mem_mgt(dev) || !mr->pages)
		return -EINVAL;
	/* zero-based, on-demand paging, flush...: not honoured; MW binding
	 * with memory windows only (the REG_MR WQE takes QRNIC_ACCESS_MW_BIND) */
	if (access & ~(QRNIC_ACCESS_ALL | (qrnic_has_mw(dev) ? IB_ACCESS_MW_BIND : 0)))
		return -EINVAL;
	/* IB: remote write and atomic need local write */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	/* a new variant of this MR's key only */
	if (QRNIC_KEY_INDEX(reg->key) != QRNIC_KEY_INDEX(mr->key))
		return -EINVAL;
	if (!mr->npages || !mr->ibmr.length)
		return -EINVAL;

	memset(wqe, 0, sizeof(*wqe));
	wqe->opcode = QRNIC_WR_REG_MR;
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sig_all)
		wqe->flags |= QRNIC_WQE_F_SIGNALED;
	if (wr->send_flags & IB_SEND_FENCE)
		wqe->flags |= QRNIC_WQE_F_FENCE;
	wqe->page_shift = ilog2(mr->ibmr.page_size);
	wqe->access = access;
	wqe->npages = cpu_to_le32(mr->npages);
	wqe->wr_id = cpu_to_le64(wr->wr_id);
	wqe->key = cpu_to_le32(reg->key);
	wqe->iova = cpu_to_le64(mr->ibmr.iova);
	wqe->length = cpu_to_le64(mr->ibmr.length);
	wqe->pbl_addr = cpu_to_le64(mr->pages_dma);
	return 0;
}

static void qrnic_count_posted(struct qrnic_dev *dev, enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_REG_MR:
		atomic64_inc(&dev->frwr.reg_mr_posted);
		break;
	case IB_WR_LOCAL_INV:
		atomic64_inc(&dev->frwr.local_inv_posted);
		break;
	case IB_WR_SEND_WITH_INV:
		atomic64_inc(&dev->frwr.send_inv_posted);
		break;
	default:
		break;
	}
}

int qrnic_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct qrnic_dev *dev = to_qdev(ibqp->device);
	struct qrnic_qp *qp = to_qqp(ibqp);
	struct qrnic_wq *sq = &qp->sq;
	u32 depth = 1U << sq->log_depth;
	unsigned long flags;
	int err = 0;
	u32 pi;

	if (unlikely(qp->state == IB_QPS_RESET)) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&sq->lock, flags);
	/*
	 * A dead device fails every post with -EIO, as mlx5 does (its
	 * MLX5_DEVICE_STATE_INTERNAL_ERROR check): the ULP learns at once that
	 * the WR will not run, where a flush completion would arrive later
	 * and look like any QP error.  The WRs posted before complete with
	 * IB_WC_WR_FLUSH_ERR (qrnic_cq.c).  Checked under the queue's lock:
	 * flush_work takes it after the device is marked dead, so a post that
	 * passed this point is visible to it.
	 */
	if (unlikely(qrnic_dead(dev))) {
		spin_unlock_irqrestore(&sq->lock, flags);
		*bad_wr = wr;
		return -EIO;
	}
	pi = sq->pi;
	for (; wr; wr = wr->next) {
		if (pi - READ_ONCE(sq->ci) >= depth) {
			err = -ENOMEM;
			break;
		}
		if (wr->opcode == IB_WR_REG_MR)
			err = qrnic_build_reg_mr_wqe(dev, qp, wr, qrnic_wqe(sq, pi));
		else
			err = qrnic_build_send_wqe(dev, qp, wr, qrnic_wqe(sq, pi));
		if (err)
			break;
		qrnic_count_posted(dev, wr->opcode);
		pi++;
	}
	if (pi != sq->pi) {
		sq->pi = pi;
		/* WQEs in coherent memory before the record or the doorbell */
		dma_wmb();
		if (qp->sq_rec) {
			WRITE_ONCE(qp->sq_rec->pi, cpu_to_le32(pi));
			/*
			 * The index's write before the flag's read: the device
			 * clears the flag, fences, then reads the index, so
			 * either it sees this index or we see the flag clear
			 * (spec 8.6.2).
			 */
			mb();
			if (READ_ONCE(qp->sq_rec->flags) & cpu_to_le32(QRNIC_SQ_DBREC_NO_DB)) {
				atomic64_inc(&dev->sqrec.skipped);
				goto out;
			}
			atomic64_inc(&dev->sqrec.rung);
		}
		/* writeq() orders after the WQEs and the record too */
		writeq((qp->qpn & QRNIC_DB_QN_MASK) | ((u64)pi << QRNIC_DB_IDX_SHIFT),
		       dev->kdb + QRNIC_DB_SQ);
	}
out:
	spin_unlock_irqrestore(&sq->lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}

/* A receive WQE (RQ or SRQ slot); the caller checked num_sge. */
static void qrnic_write_recv_wqe(struct qrnic_recv_wqe *wqe, const struct ib_recv_wr *wr)
{
	struct qrnic_sge *sge = (struct qrnic_sge *)(wqe + 1);
	int i;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = cpu_to_le64(wr->wr_id);
	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = cpu_to_le64(wr->sg_list[i].addr);
		sge[i].length = cpu_to_le32(wr->sg_list[i].length);
		sge[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
	}
}

/*
 * Write receive WQEs into @wq, a QP's RQ or an SRQ's ring, while it has
 * room by the consumer index (@record NULL: the RQ's wq->ci, advanced by
 * poll_cq; else the SRQ's little-endian record, which the device writes
 * after copying a WQE out: the control dependency orders our slot writes
 * after reading it), then ring doorbell @db for queue @qn -- or, with
 * @pi_record (a kernel QP's RQ producer record, ABI 1.10), write the new
 * producer index there instead, and ring as well only if @ring.
 */
int qrnic_post_recv_wq(struct qrnic_dev *dev, struct qrnic_wq *wq, const __le32 *record,
		       __le32 *pi_record, bool ring,
		       u32 qn, u32 db, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	u32 depth = 1U << wq->log_depth;
	unsigned long flags;
	int err = 0;
	u32 pi;

	spin_lock_irqsave(&wq->lock, flags);
	pi = wq->pi;
	if (unlikely(qrnic_dead(dev)))	/* under the lock: see qrnic_post_send() */
		err = -EIO;
	for (; wr && !err; wr = wr->next) {
		u32 ci = record ? le32_to_cpu(READ_ONCE(*record)) : READ_ONCE(wq->ci);

		if (pi - ci >= depth) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge > wq->max_sge) {
			err = -EINVAL;
			break;
		}
		qrnic_write_recv_wqe(qrnic_wqe(wq, pi), wr);
		pi++;
	}
	if (pi != wq->pi) {
		wq->pi = pi;
		/* WQEs in coherent memory before the record or the doorbell */
		dma_wmb();
		if (pi_record)
			WRITE_ONCE(*pi_record, cpu_to_le32(pi));
		if (!pi_record || ring)	/* writeq() orders after the record too */
			writeq((qn & QRNIC_DB_QN_MASK) | ((u64)pi << QRNIC_DB_IDX_SHIFT),
			       dev->kdb + db);
	}
	spin_unlock_irqrestore(&wq->lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}

int qrnic_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct qrnic_dev *dev = to_qdev(ibqp->device);
	struct qrnic_qp *qp = to_qqp(ibqp);

	/* no RQ: created without receive WRs, or on an SRQ */
	if (unlikely(!qp->rq.log_depth || qp->state == IB_QPS_RESET)) {
		*bad_wr = wr;
		return -EINVAL;
	}
	/*
	 * With a producer record the device reads the index when it needs a
	 * WQE; a QP in ERR needs none, so ring as well there: the device then
	 * flushes the new WQEs at once (ib_drain_rq's WQE among them).
	 */
	return qrnic_post_recv_wq(dev, &qp->rq, NULL, qp->rq_rec,
				  READ_ONCE(qp->state) == IB_QPS_ERR, qp->qpn, QRNIC_DB_RQ,
				  wr, bad_wr);
}

/* ---- async events ------------------------------------------------------------------------ */

void qrnic_qp_async_event(struct qrnic_dev *dev, u32 qpn, enum ib_event_type type)
{
	struct qrnic_qp *qp = xa_load(&dev->qps, qpn);
	struct ib_event ev = {
		.event = type,
	};

	if (!qp) {
		dev_warn_ratelimited(&dev->pdev->dev, "async event %s for unknown QP %u\n",
				     ib_event_msg(type), qpn);
		return;
	}
	/* the others say that something went wrong */
	if (type != IB_EVENT_SQ_DRAINED && type != IB_EVENT_COMM_EST &&
	    type != IB_EVENT_QP_LAST_WQE_REACHED)
		dev_warn_ratelimited(&dev->pdev->dev, "QP %u: %s\n", qpn, ib_event_msg(type));
	if (qp->ibqp.event_handler) {
		ev.device = qp->ibqp.device;
		ev.element.qp = &qp->ibqp;
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
}

/* ---- drain ------------------------------------------------------------------------- */

/*
 * ib_drain_sq()/ib_drain_rq(): the core's own drain (move the QP to ERROR,
 * post a marker WR, wait for its flush completion), which also works on a
 * dead device, as mlx5_ib_drain_sq/rq do: there modify_qp and the ULP's
 * posts fail with -EIO, but the marker goes into the ring all the same (no
 * doorbell: the device was reset) and, like every WR still outstanding
 * before it, comes back as a software flush completion (qrnic_cq.c) when
 * the CQ is polled.  Every kernel ULP drains its QPs in its DEVICE_REMOVAL
 * path, which is what the recovery's unregister triggers (nvmet-rdma,
 * nvme-rdma, rpcrdma, isert, SMB Direct).  The drain calls the CQ's
 * handler itself on a dead device (polls it, for IB_POLL_DIRECT), as mlx5's
 * handle_drain_completion() does.  What cannot complete is not waited for
 * without end: a queue too full for the marker on a dead device is not
 * drained (its WRs are still flushed by the polls); the wait on a dead
 * device gives up after QRNIC_DRAIN_DEAD_WAITS tenths of a second, leaving
 * the marker allocated rather than freed under a late poll.
 */
#define QRNIC_DRAIN_DEAD_WAITS	300	/* 30 s */

struct qrnic_drain {
	struct ib_cqe cqe;
	struct completion done;
};

static void qrnic_drain_done(struct ib_cq *cq, struct ib_wc *wc)
{
	complete(&container_of(wc->wr_cqe, struct qrnic_drain, cqe)->done);
}

/*
 * The marker on a dead device: written into the ring as a post would, the
 * dead check aside, and no doorbell.  Its software flush completes it.
 */
static int qrnic_post_dead_marker(struct qrnic_qp *qp, bool sq, struct ib_cqe *cqe)
{
	struct qrnic_wq *wq = sq ? &qp->sq : &qp->rq;
	unsigned long flags;
	int err = 0;

	if (!wq->log_depth || !qp->tracked)
		return -EINVAL;
	spin_lock_irqsave(&wq->lock, flags);
	if (wq->pi - READ_ONCE(wq->ci) >= (1U << wq->log_depth)) {
		err = -ENOMEM;
	} else if (sq) {
		struct qrnic_send_wqe *wqe = qrnic_wqe(wq, wq->pi);

		memset(wqe, 0, sizeof(*wqe));
		wqe->opcode = QRNIC_WR_RDMA_WRITE;
		wqe->flags = QRNIC_WQE_F_SIGNALED;
		wqe->wr_id = cpu_to_le64((uintptr_t)cqe);
		wq->pi++;
	} else {
		struct qrnic_recv_wqe *wqe = qrnic_wqe(wq, wq->pi);

		memset(wqe, 0, sizeof(*wqe));
		wqe->wr_id = cpu_to_le64((uintptr_t)cqe);
		wq->pi++;
	}
	spin_unlock_irqrestore(&wq->lock, flags);
	return err;
}

static void qrnic_drain(struct ib_qp *ibqp, bool sq)
{
	struct qrnic_dev *dev = to_qdev(ibqp->device);
	struct qrnic_qp *qp = to_qqp(ibqp);
	struct ib_cq *cq = sq ? ibqp->send_cq : ibqp->recv_cq;
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	unsigned int dead_waits = 0;
	struct qrnic_drain *d;
	int err;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d) {
		WARN_ONCE(1, "qrnic: no memory to drain QP %u\n", qp->qpn);
		return;
	}
	d->cqe.done = qrnic_drain_done;
	init_completion(&d->done);

	err = qrnic_dead(dev) ? -EIO : ib_modify_qp(ibqp, &attr, IB_QP_STATE);
	if (!err) {
		if (sq) {
			struct ib_rdma_wr wr = {
				.wr = {
					.next = NULL,
					{ .wr_cqe = &d->cqe, },
					.opcode = IB_WR_RDMA_WRITE,
					.send_flags = IB_SEND_SIGNALED,
				},
			};

			err = ib_post_send(ibqp, &wr.wr, NULL);
		} else {
			struct ib_recv_wr wr = { .wr_cqe = &d->cqe };

			err = ib_post_recv(ibqp, &wr, NULL);
		}
	}
	if (err && qrnic_dead(dev))
		err = qrnic_post_dead_marker(qp, sq, &d->cqe);
	if (err) {
		WARN_ONCE(!qrnic_dead(dev), "qrnic: failed to drain %s of QP %u: %d\n",
			  sq ? "send queue" : "receive queue", qp->qpn, err);
		kfree(d);
		return;
	}
	for (;;) {
		if (cq->poll_ctx == IB_POLL_DIRECT)
			ib_process_cq_direct(cq, -1);
		if (wait_for_completion_timeout(&d->done, HZ / 10) > 0)
			break;
		if (!qrnic_dead(dev))
			continue;
		if (++dead_waits > QRNIC_DRAIN_DEAD_WAITS) {
			dev_warn(&dev->pdev->dev, "QP %u: %s drain marker not completed\n",
				 qp->qpn, sq ? "send" : "receive");
			return;		/* d stays allocated: see above */
		}
		/* flush_work called it once; the marker may have come after */
		if (test_bit(QRNIC_FLAG_STOPPED, &dev->flags) &&
		    cq->poll_ctx != IB_POLL_DIRECT && cq->comp_handler)
			cq->comp_handler(cq, cq->cq_context);
	}
	kfree(d);
}

void qrnic_drain_sq(struct ib_qp *ibqp)
{
	qrnic_drain(ibqp, true);
}

void qrnic_drain_rq(struct ib_qp *ibqp)
{
	qrnic_drain(ibqp, false);
}
