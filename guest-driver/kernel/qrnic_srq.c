// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic shared receive queues (docs/spec.md 12.10).
 *
 * An SRQ is a ring of receive WQEs (the RQ's layout) followed by the 4-byte
 * consumer-index record in one DMA buffer.  The device takes WQEs in ring
 * order when a message starts and writes its consumer index to the record
 * after each one, so a slot is free again as soon as the record has passed
 * it: posters reclaim slots from the record, not from completions.  Kernel
 * SRQs are posted here (QRNIC_DB_SRQ on the kernel doorbell page); user
 * SRQs are mapped to the provider (struct qrnic_create_srq_resp), which
 * posts to them itself.  The ops are registered only when the device has
 * QRNIC_CAP_SRQ.
 */
#include <linux/log2.h>
#include <rdma/uverbs_ioctl.h>

#include "qrnic.h"

/* enum ib_srq_attr_mask and the device's MODIFY_SRQ mask share bits. */
static_assert(IB_SRQ_MAX_WR == QRNIC_SRQ_ATTR_MAX_WR && IB_SRQ_LIMIT == QRNIC_SRQ_ATTR_LIMIT);

/* The consumer index record after the WQEs, written by the device. */
static const __le32 *qrnic_srq_record(struct qrnic_srq *srq)
{
	return qrnic_ring_at(&srq->wq.ring, srq->dbrec_offset);
}

static int qrnic_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			    struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibsrq->device);
	struct qrnic_srq *srq = to_qsrq(ibsrq);
	struct qrnic_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct qrnic_ucontext, ibucontext);
	struct ib_srq_attr *attr = &init->attr;
	struct qrnic_create_srq_resp resp = {};
	struct qrnic_cmd_create_srq cmd = {};
	struct qrnic_ring_cmd plc;
	bool listed;
	u64 addr;
	u32 log;
	int err;

	if (init->srq_type == IB_SRQT_XRC) {
		if (!qrnic_has_xrc(dev) || !init->ext.xrc.xrcd || !init->ext.cq)
			return -EOPNOTSUPP;
	} else if (init->srq_type != IB_SRQT_BASIC) {
		return -EOPNOTSUPP;
	}
	if (!attr->max_wr || attr->max_wr > qrnic_attr(dev, max_srq_wr) ||
	    attr->max_sge > qrnic_attr(dev, max_sge))
		return -EINVAL;
	log = max_t(u32, 1, order_base_2(attr->max_wr));
	if (log > QRNIC_MAX_QUEUE_LOG || (1U << log) > qrnic_attr(dev, max_srq_wr))
		return -EINVAL;

	spin_lock_init(&srq->wq.lock);
	srq->user = !!uctx;
	srq->wq.pi = 0;
	srq->wq.log_depth = log;
	qrnic_recv_geometry(attr->max_sge, &srq->wq.wqe_shift, &srq->wq.max_sge);
	srq->dbrec_offset = 1U << (log + srq->wq.wqe_shift);
	/* zeroed: the record starts at consumer index 0 */
	err = qrnic_ring_alloc(dev, &srq->wq.ring, srq->dbrec_offset + QRNIC_DBREC_BYTES, uctx);
	if (err)
		return err;

	/* attr->srq_limit is not used at creation (ibv_create_srq(3)): modify_srq arms it */
	cmd.uctx = cpu_to_le32(uctx ? uctx->uctx : 0);
	cmd.pdn = cpu_to_le32(to_qpd(ibsrq->pd)->pdn);
	cmd.log_depth = log;
	cmd.wqe_shift = srq->wq.wqe_shift;
	err = qrnic_ring_cmd_addr(dev, &srq->wq.ring, srq->dbrec_offset, &plc, &addr, &listed);
	if (err)
		goto err_free_ring;
	cmd.ring_addr = cpu_to_le64(addr);
	cmd.dbrec_addr = cpu_to_le64(qrnic_ring_dma_at(&srq->wq.ring, srq->dbrec_offset));
	cmd.flags = cpu_to_le16(listed ? QRNIC_SRQ_F_PAGELIST : 0);
	if (init->srq_type == IB_SRQT_XRC) {	/* spec 6.6.13, 12.14 */
		cmd.flags |= cpu_to_le16(QRNIC_SRQ_F_XRC);
		cmd.xrcd = cpu_to_le32(to_qxrcd(init->ext.xrc.xrcd)->xrcdn);
		cmd.cqn = cpu_to_le32(to_qcq(init->ext.cq)->cqn);
	}
	err = qrnic_cmd_create_srq(dev, &cmd, &srq->srqn);
	qrnic_ring_cmd_done(dev, &plc);	/* the device read it */
	if (err)
		goto err_free_ring;

	err = qrnic_xa_claim(&dev->srqs, srq->srqn, srq);
	if (err)
		goto err_destroy;
	if (init->srq_type == IB_SRQT_XRC)
		ibsrq->ext.xrc.srq_num = srq->srqn;	/* uverbs reports it */
	attr->max_wr = 1U << log;
	attr->max_sge = srq->wq.max_sge;
	attr->srq_limit = 0;

	if (udata) {
		resp.srqn = srq->srqn;
		resp.log_depth = log;
		resp.wqe_shift = srq->wq.wqe_shift;
		resp.mmap_key = qrnic_ring_mmap_key(&srq->wq.ring);
		resp.mmap_size = srq->wq.ring.bytes;
		resp.dbrec_offset = srq->dbrec_offset;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	qrnic_xa_release(&dev->srqs, srq->srqn, srq);
	qrnic_eq_sync(dev, NULL);
err_destroy:
	if (qrnic_cmd_destroy_srq(dev, srq->srqn) && !qrnic_dead(dev)) {
		/* The device may still use the ring: leak it rather than free it. */
		dev_err(&dev->pdev->dev, "cannot undo SRQ %u, leaking its ring\n", srq->srqn);
		return err;
	}
err_free_ring:
	qrnic_ring_free(dev, &srq->wq.ring);
	return err;
}

static int qrnic_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibsrq->device);
	struct qrnic_srq *srq = to_qsrq(ibsrq);
	int err;

	err = qrnic_cmd_destroy_srq(dev, srq->srqn);
	if (err && !qrnic_dead(dev))
		return err;	/* still used by the device: keep everything */

	qrnic_xa_release(&dev->srqs, srq->srqn, srq);
	qrnic_eq_sync(dev, NULL);		/* async events */
	qrnic_ring_free(dev, &srq->wq.ring);
	return 0;
}

static int qrnic_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibsrq->device);
	struct qrnic_srq *srq = to_qsrq(ibsrq);

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;	/* no resize (IB_DEVICE_SRQ_RESIZE not set) */
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	/* armed: SRQ_LIMIT_REACHED once fewer than srq_limit WQEs are left */
	if (attr->srq_limit >= (1U << srq->wq.log_depth))
		return -EINVAL;
	return qrnic_cmd_modify_srq(dev, srq->srqn, QRNIC_SRQ_ATTR_LIMIT, attr->srq_limit);
}

static int qrnic_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct qrnic_srq *srq = to_qsrq(ibsrq);
	struct qrnic_srq_query q;
	int err;

	err = qrnic_cmd_query_srq(to_qdev(ibsrq->device), srq->srqn, &q);
	if (err)
		return err;
	attr->max_wr = q.max_wr;
	attr->max_sge = srq->wq.max_sge;
	attr->srq_limit = q.limit;	/* 0 once the event fired */
	return 0;
}

static int qrnic_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			       const struct ib_recv_wr **bad_wr)
{
	struct qrnic_dev *dev = to_qdev(ibsrq->device);
	struct qrnic_srq *srq = to_qsrq(ibsrq);

	if (unlikely(qrnic_dead(dev))) {
		*bad_wr = wr;
		return -EIO;
	}
	if (unlikely(srq->user)) {	/* the provider posts to its mapping */
		*bad_wr = wr;
		return -EINVAL;
	}
	return qrnic_post_recv_wq(dev, &srq->wq, qrnic_srq_record(srq), NULL, true, srq->srqn,
				  QRNIC_DB_SRQ,
				  wr, bad_wr);
}

/* SRQ_LIMIT_REACHED (the device disarmed the limit): hard interrupt context. */
void qrnic_srq_async_event(struct qrnic_dev *dev, u32 srqn, enum ib_event_type type)
{
	struct qrnic_srq *srq = xa_load(&dev->srqs, srqn);
	struct ib_event ev = {
		.event = type,
	};

	if (!srq) {
		dev_warn_ratelimited(&dev->pdev->dev, "async event %s for unknown SRQ %u\n",
				     ib_event_msg(type), srqn);
		return;
	}
	if (srq->ibsrq.event_handler) {
		ev.device = srq->ibsrq.device;
		ev.element.srq = &srq->ibsrq;
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
}

const struct ib_device_ops qrnic_srq_ops = {
	.create_srq = qrnic_create_srq,
	.destroy_srq = qrnic_destroy_srq,
	.modify_srq = qrnic_modify_srq,
	.post_srq_recv = qrnic_post_srq_recv,
	.query_srq = qrnic_query_srq,

	INIT_RDMA_OBJ_SIZE(ib_srq, qrnic_srq, ibsrq),
};

/* ---- XRC domains (spec 6.6.20) ------------------------------------------- */

static int qrnic_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	/* a kernel domain (uctx 0): shared by processes, usable by TGT QPs */
	return qrnic_cmd_alloc_xrcd(to_qdev(ibxrcd->device), 0, &to_qxrcd(ibxrcd)->xrcdn);
}

static int qrnic_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibxrcd->device);
	int err;

	err = qrnic_cmd_dealloc_xrcd(dev, to_qxrcd(ibxrcd)->xrcdn);
	return qrnic_dead(dev) ? 0 : err;
}

const struct ib_device_ops qrnic_xrc_ops = {
	.alloc_xrcd = qrnic_alloc_xrcd,
	.dealloc_xrcd = qrnic_dealloc_xrcd,

	INIT_RDMA_OBJ_SIZE(ib_xrcd, qrnic_xrcd, ibxrcd),
};
