// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic completion queues.
 *
 * A CQ is a ring of 32-byte CQEs followed by the 4-byte doorbell record
 * (dbrec, docs/spec.md 9.5) in one DMA buffer.  A user CQ created with
 * IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION (ibv_create_cq_ex with
 * IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) has 64-byte CQEs carrying the
 * completion timestamp (QRNIC_CQ_F_TIMESTAMP, ABI 1.7, spec 9.8); the
 * provider polls those.  Kernel CQs never ask for timestamps.  Kernel CQs are polled here
 * and publish their consumer index in the dbrec after every poll; user CQs
 * are mapped to the provider (struct qrnic_create_cq_resp) and polled there.
 *
 * Resize (RESIZE_CQ, device cap QRNIC_CAP_CQ_RESIZE): the driver gives the
 * device a new zeroed ring; the device moves the CQEs not yet consumed (by
 * the dbrec's index) to its slots 0, 1, ..., writes 0 to the dbrec and
 * goes on there from index 0.  The dbrec does not move (the command has no
 * address for it), so the first ring stays allocated for it.  A kernel CQ
 * is resized under its lock with the command busy-polled: no poll_cq can
 * run between the device's switch and ours to the new ring and index 0.
 * A user CQ gets the new ring's mmap key (struct qrnic_resize_cq_resp);
 * the provider holds its own CQ lock across the command.
 *
 * Moderation (MODIFY_CQ): cq_count CQEs or cq_period microseconds after
 * the first, whichever comes first, raise an armed CQ's event.  With the
 * module parameter cq_mod_usec set, kernel CQs created get that fixed
 * moderation, and modify_cq (DIM's, a ULP's) leaves them as they are.
 *
 * Software flush completions (as mlx5's mlx5_ib_poll_sw_comp and rxe): once
 * the device is dead and reset (QRNIC_FLAG_STOPPED, qrnic_main.c) no CQE
 * will ever be written again, so polling a kernel CQ returns the valid CQEs
 * left in its ring, then one IB_WC_WR_FLUSH_ERR completion per work request
 * still outstanding on the kernel QPs whose send / receive queue completes
 * into it: the WQEs from the queue's consumer index (advanced by the CQEs
 * polled; an unsignaled send is passed by the next signaled one's CQE) up to
 * its producer index, oldest first, with the wr_id (wr_cqe) and opcode the
 * WQE in the ring still holds.  Each is flushed once: the flush advances the
 * consumer index, under the CQ's lock and the queue's.  A QP's unsignaled
 * sends that the device finished after the last signaled one are flushed
 * too (the driver cannot tell), as on mlx5.  Receives posted to an SRQ are
 * not flushed, as on mlx5 (its QPs have no RQ to flush): the SRQ's owner
 * frees their buffers when it destroys the SRQ.  flush_work calls the
 * completion handler of every CQ with outstanding work once (mlx5's
 * mlx5_ib_handle_internal_error), so ULPs polling from their handler (ib_alloc_cq's
 * softirq and workqueue contexts, ib_create_cq users) see them;
 * req_notify_cq reports them as missed events.  User QPs are not flushed
 * (nor by mlx5's provider): user space gets IB_EVENT_DEVICE_FATAL and -EIO.
 */
#include <linux/log2.h>
#include <rdma/uverbs_ioctl.h>

#include "qrnic.h"

static __le32 *qrnic_cq_dbrec(struct qrnic_cq *cq)
{
	return qrnic_ring_at(&cq->ring, cq->dbrec_offset);
}

/* Slot idx (any index: masked here) of the kernel CQ's current ring; under cq->lock. */
static struct qrnic_cqe *qrnic_cqe(struct qrnic_cq *cq, u32 idx)
{
	return qrnic_ring_at(&cq->cqr, (size_t)(idx & ((1U << cq->log_depth) - 1)) *
				       sizeof(struct qrnic_cqe));
}

int qrnic_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs)
{
	struct qrnic_dev *dev = to_qdev(ibcq->device);
	struct qrnic_cq *cq = to_qcq(ibcq);
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct qrnic_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct qrnic_ucontext, ibucontext);
	struct qrnic_create_cq_resp resp = {};
	struct qrnic_cmd_create_cq cmd = {};
	bool ts = attr->flags & IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
	struct qrnic_ring_cmd plc;
	bool listed;
	u64 addr;
	u32 log;
	int err;

	if (attr->flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION)
		return -EOPNOTSUPP;
	/* timestamps: user CQs of a device with the clock (ABI 1.7) only */
	if (ts && (!udata || !qrnic_has_cqe_ts(dev)))
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > qrnic_attr(dev, max_cqe))
		return -EINVAL;
	log = max_t(u32, 1, order_base_2(attr->cqe));
	if (log > QRNIC_MAX_QUEUE_LOG || (1U << log) > qrnic_attr(dev, max_cqe))
		return -EINVAL;

	spin_lock_init(&cq->lock);
	mutex_init(&cq->resize_lock);
	INIT_LIST_HEAD(&cq->sq_qps);
	INIT_LIST_HEAD(&cq->rq_qps);
	INIT_LIST_HEAD(&cq->kick_node);
	cq->kicked = false;
	cq->log_depth = log;
	cq->ci = 0;
	cq->eq_index = attr->comp_vector % dev->num_ceqs;
	cq->flags = ts ? QRNIC_CQ_F_TIMESTAMP : 0;
	cq->dbrec_offset = QRNIC_CQ_CQE_SIZE(cq->flags) << log;
	err = qrnic_ring_alloc(dev, &cq->ring, cq->dbrec_offset + QRNIC_DBREC_BYTES, uctx);
	if (err)
		return err;
	cq->cqr = cq->ring;

	cmd.uctx = cpu_to_le32(uctx ? uctx->uctx : 0);
	cmd.eqn = cpu_to_le32(dev->ceqs[cq->eq_index].eqn);
	cmd.log_depth = log;
	err = qrnic_ring_cmd_addr(dev, &cq->ring, cq->dbrec_offset, &plc, &addr, &listed);
	if (err)
		goto err_free_ring;
	cmd.flags = cq->flags | (listed ? QRNIC_CQ_F_PAGELIST : 0);
	cmd.ring_addr = cpu_to_le64(addr);
	cmd.dbrec_addr = cpu_to_le64(qrnic_ring_dma_at(&cq->ring, cq->dbrec_offset));
	err = qrnic_cmd_create_cq(dev, &cmd, &cq->cqn);
	qrnic_ring_cmd_done(dev, &plc);	/* the device read it */
	if (err)
		goto err_free_ring;

	err = qrnic_xa_claim(&dev->cqs, cq->cqn, cq);
	if (err)
		goto err_destroy;
	cq->created = true;
	ibcq->cqe = 1U << log;

	/* module parameters cq_mod_usec / cq_mod_count: a fixed moderation
	 * of kernel CQs instead of DIM's (qrnic_modify_cq) */
	cq->fixed_mod = false;
	if (!udata && qrnic_has_cq_resize(dev) && READ_ONCE(qrnic_cq_mod_usec)) {
		err = qrnic_cmd_modify_cq(dev, cq->cqn, READ_ONCE(qrnic_cq_mod_count),
					  READ_ONCE(qrnic_cq_mod_usec));
		if (err)
			goto err_erase;
		cq->fixed_mod = true;
		atomic64_inc(&dev->cqmod.fixed_cqs);
	}

	if (udata) {
		resp.cqn = cq->cqn;
		resp.log_depth = log;
		resp.mmap_key = qrnic_ring_mmap_key(&cq->ring);
		resp.mmap_size = cq->ring.bytes;
		resp.dbrec_offset = cq->dbrec_offset;
		resp.cqe_size = QRNIC_CQ_CQE_SIZE(cq->flags);
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	qrnic_xa_release(&dev->cqs, cq->cqn, cq);
	cq->created = false;
err_destroy:
	if (qrnic_cmd_destroy_cq(dev, cq->cqn) && !qrnic_dead(dev)) {
		/* The device may still write the ring: leak it rather than free it. */
		dev_err(&dev->pdev->dev, "cannot undo CQ %u, leaking its ring\n", cq->cqn);
		return err;
	}
err_free_ring:
	qrnic_ring_free(dev, &cq->ring);
	return err;
}

int qrnic_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibcq->device);
	struct qrnic_cq *cq = to_qcq(ibcq);
	int err;

	err = qrnic_cmd_destroy_cq(dev, cq->cqn);
	if (err && !qrnic_dead(dev))
		return err;	/* still in use by the device: keep everything */

	qrnic_xa_release(&dev->cqs, cq->cqn, cq);
	cq->created = false;
	/* no EQ handler may still be calling into this CQ */
	qrnic_eq_sync(dev, &dev->ceqs[cq->eq_index]);
	qrnic_ring_free(dev, &cq->resized);
	qrnic_ring_free(dev, &cq->ring);
	return 0;
}

/*
 * ib_resize_cq() and IB_USER_VERBS_CMD_RESIZE_CQ.  Fails with -EINVAL, and
 * changes nothing, when the CQEs not yet polled do not fit the new size.
 */
static int qrnic_resize_cq(struct ib_cq *ibcq, int entries, struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibcq->device);
	struct qrnic_cq *cq = to_qcq(ibcq);
	struct qrnic_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct qrnic_ucontext, ibucontext);
	struct qrnic_resize_cq_resp resp = {};
	struct qrnic_ring ring, old;
	struct qrnic_ring_cmd plc;
	unsigned long flags;
	u32 log, carried = 0;
	bool listed;
	u64 addr;
	int err;

	if (entries < 1 || entries > qrnic_attr(dev, max_cqe))
		return -EINVAL;
	log = max_t(u32, 1, order_base_2(entries));
	if (log > QRNIC_MAX_QUEUE_LOG || (1U << log) > qrnic_attr(dev, max_cqe))
		return -EINVAL;

	mutex_lock(&cq->resize_lock);
	/* a timestamp CQ keeps its 64-byte CQEs (the device knows its flags) */
	err = qrnic_ring_alloc(dev, &ring, QRNIC_CQ_CQE_SIZE(cq->flags) << log, uctx);
	if (err)
		goto out;
	/* the page list (if any) is built before the CQ lock is taken */
	err = qrnic_ring_cmd_addr(dev, &ring, QRNIC_CQ_CQE_SIZE(cq->flags) << log, &plc, &addr,
				  &listed);
	if (err) {
		qrnic_ring_free(dev, &ring);
		goto out;
	}

	if (uctx) {
		/* the provider polls: it holds its own CQ lock meanwhile */
		err = qrnic_cmd_resize_cq(dev, cq->cqn, log, addr, listed, &carried, false);
	} else {
		spin_lock_irqsave(&cq->lock, flags);
		err = qrnic_cmd_resize_cq(dev, cq->cqn, log, addr, listed, &carried, true);
		if (!err) {
			cq->cqr = ring;
			cq->log_depth = log;
			cq->ci = 0;	/* the device wrote 0 to the dbrec */
		}
		spin_unlock_irqrestore(&cq->lock, flags);
	}
	qrnic_ring_cmd_done(dev, &plc);
	if (err) {
		/* a device status: nothing changed; else the device is dead
		 * (a timeout declares it so) and no longer DMAs */
		qrnic_ring_free(dev, &ring);
		goto out;
	}

	/* the device no longer uses the previous ring */
	old = cq->resized;
	cq->resized = ring;
	cq->log_depth = log;
	qrnic_ring_free(dev, &old);
	ibcq->cqe = 1U << log;

	if (udata) {
		resp.log_depth = log;
		resp.cqe_size = QRNIC_CQ_CQE_SIZE(cq->flags);
		resp.mmap_key = qrnic_ring_mmap_key(&cq->resized);
		resp.mmap_size = cq->resized.bytes;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	}
out:
	mutex_unlock(&cq->resize_lock);
	return err;
}

/* *a = max(*a, v); each failed exchange saw *a grow, so it ends */
static void qrnic_atomic_max(atomic_t *a, int v)
{
	int old = atomic_read(a);

	while (old < v && !atomic_try_cmpxchg(a, &old, v))
		;
}

/* ib_modify_cq(), IB_USER_VERBS_EX_CMD_MODIFY_CQ: event moderation */
static int qrnic_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period)
{
	struct qrnic_dev *dev = to_qdev(ibcq->device);
	unsigned int scale = READ_ONCE(qrnic_cq_dim_scale);	/* 1..1000 */
	u16 period = cq_period;
	int err;

	if (to_qcq(ibcq)->fixed_mod) {
		atomic64_inc(&dev->cqmod.ignored);
		return 0;	/* the cq_mod_usec module parameter's moderation stays */
	}
	/* DIM's profiles (ibcq->dim: a kernel CQ it watches) in the guest's time */
	if (ibcq->dim)
		period = min_t(u32, (u32)cq_period * scale, U16_MAX);
	err = qrnic_cmd_modify_cq(dev, to_qcq(ibcq)->cqn, cq_count, period);
	if (!err && ibcq->dim) {
		atomic64_inc(&dev->cqmod.dim_modify);
		qrnic_atomic_max(&dev->cqmod.dim_period_max, cq_period);
		qrnic_atomic_max(&dev->cqmod.dim_period_sent_max, period);
	}
	return err;
}

const struct ib_device_ops qrnic_cq_resize_ops = {
	.modify_cq = qrnic_modify_cq,
	.resize_cq = qrnic_resize_cq,
};

/* Wait for a poll_cq in progress (which may be looking at a QP) to finish. */
void qrnic_cq_fence(struct qrnic_cq *cq)
{
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	spin_unlock_irqrestore(&cq->lock, flags);
}

static enum ib_wc_opcode qrnic_wc_opcode(u8 op)
{
	switch (op) {
	case QRNIC_WC_OP_SEND:
		return IB_WC_SEND;
	case QRNIC_WC_OP_RDMA_WRITE:
		return IB_WC_RDMA_WRITE;
	case QRNIC_WC_OP_RDMA_READ:
		return IB_WC_RDMA_READ;
	case QRNIC_WC_OP_COMP_SWAP:
		return IB_WC_COMP_SWAP;
	case QRNIC_WC_OP_FETCH_ADD:
		return IB_WC_FETCH_ADD;
	case QRNIC_WC_OP_BIND_MW:
		return IB_WC_BIND_MW;
	case QRNIC_WC_OP_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case QRNIC_WC_OP_REG_MR:
		return IB_WC_REG_MR;
	case QRNIC_WC_OP_RECV_RDMA_WITH_IMM:
		return IB_WC_RECV_RDMA_WITH_IMM;
	case QRNIC_WC_OP_RECV:
	default:
		return IB_WC_RECV;
	}
}

/* Advance a work queue's consumer index to just past the WQE a CQE names. */
static void qrnic_wq_complete(struct qrnic_wq *wq, u16 wqe_index)
{
	u32 ci = wq->ci;

	WRITE_ONCE(wq->ci, ci + (u16)(wqe_index - (u16)ci) + 1);
}

/* debugfs "mem_mgt": fast registration completions */
static void qrnic_count_wc(struct qrnic_dev *dev, const struct ib_wc *wc)
{
	if (wc->opcode == IB_WC_REG_MR || wc->opcode == IB_WC_LOCAL_INV) {
		if (wc->status != IB_WC_SUCCESS)
			atomic64_inc(&dev->frwr.errors);
		else if (wc->opcode == IB_WC_REG_MR)
			atomic64_inc(&dev->frwr.reg_mr_done);
		else
			atomic64_inc(&dev->frwr.local_inv_done);
	} else if (wc->wc_flags & IB_WC_WITH_INVALIDATE) {
		atomic64_inc(&dev->frwr.recv_inv);
	}
}

static void qrnic_cqe_to_wc(const struct qrnic_cqe *cqe, struct qrnic_qp *qp,
			    struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64_to_cpu(cqe->wr_id);
	wc->status = cqe->status <= QRNIC_WC_GENERAL_ERR ? cqe->status : IB_WC_GENERAL_ERR;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = le32_to_cpu(cqe->byte_len);
	wc->qp = &qp->ibqp;
	wc->src_qp = le32_to_cpu(cqe->src_qp);
	wc->port_num = QRNIC_PORT;
	wc->opcode = qrnic_wc_opcode(cqe->opcode);
	if (cqe->flags & QRNIC_CQE_F_WITH_IMM) {
		/* opaque 4 bytes in wire order, as ib_wc keeps them */
		wc->ex.imm_data = cqe->imm_data;
		wc->wc_flags |= IB_WC_WITH_IMM;
	}
	if (cqe->flags & QRNIC_CQE_F_WITH_INV) {
		/* SEND_WITH_INV received: the rkey it invalidated */
		wc->ex.invalidate_rkey = le32_to_cpu(cqe->inv_key);
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
	}
	if (cqe->flags & QRNIC_CQE_F_GRH) {
		wc->wc_flags |= IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
		wc->network_hdr_type = (cqe->flags & QRNIC_CQE_F_IPV4) ?
				       RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
	}

	if (cqe->flags & QRNIC_CQE_F_SEND)
		qrnic_wq_complete(&qp->sq, le16_to_cpu(cqe->wqe_index));
	else if (qp->rq.log_depth)	/* an SRQ's slots come back by its record */
		qrnic_wq_complete(&qp->rq, le16_to_cpu(cqe->wqe_index));
}

/* The completion opcode of a send WQE's QRNIC_WR_* (all WQEs start alike). */
static enum ib_wc_opcode qrnic_wr_wc_opcode(u8 op)
{
	switch (op) {
	case QRNIC_WR_RDMA_WRITE:
	case QRNIC_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case QRNIC_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case QRNIC_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case QRNIC_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case QRNIC_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case QRNIC_WR_BIND_MW:
		return IB_WC_BIND_MW;
	case QRNIC_WR_REG_MR:
		return IB_WC_REG_MR;
	default:
		return IB_WC_SEND;
	}
}

/*
 * Software flush completions of one kernel queue's outstanding WQEs, at
 * most max, oldest first; under the CQ's lock (the queue's nests inside,
 * as no path takes them the other way).  Bounded by the queue's depth.
 */
static int qrnic_wq_sw_flush(struct qrnic_dev *dev, struct qrnic_qp *qp, bool send,
			     struct ib_wc *wc, int max)
{
	struct qrnic_wq *wq = send ? &qp->sq : &qp->rq;
	u32 depth = 1U << wq->log_depth, ci, pi;
	int n = 0;

	spin_lock(&wq->lock);
	ci = wq->ci;
	pi = wq->pi;
	if (unlikely(pi - ci > depth)) {
		/* posts keep pi - ci <= depth: a CQE named a slot past the last WQE */
		dev_warn_ratelimited(&dev->pdev->dev,
				     "QP %u %s: consumer index %u past producer %u, not flushed\n",
				     qp->qpn, send ? "SQ" : "RQ", ci, pi);
		ci = pi;
	}
	for (; ci != pi && n < max; ci++, n++) {
		const u8 *wqe = qrnic_wqe(wq, ci);
		struct ib_wc *w = &wc[n];

		memset(w, 0, sizeof(*w));
		if (send) {
			/* every send WQE format: opcode at 0, wr_id at 8 */
			const struct qrnic_send_wqe *swqe = (const void *)wqe;

			w->wr_id = le64_to_cpu(swqe->wr_id);
			w->opcode = qrnic_wr_wc_opcode(swqe->opcode);
		} else {
			w->wr_id = le64_to_cpu(((const struct qrnic_recv_wqe *)wqe)->wr_id);
			w->opcode = IB_WC_RECV;
		}
		w->status = IB_WC_WR_FLUSH_ERR;
		w->qp = &qp->ibqp;
		w->port_num = QRNIC_PORT;
		qrnic_count_wc(dev, w);
	}
	WRITE_ONCE(wq->ci, ci);
	spin_unlock(&wq->lock);
	return n;
}

/* Under cq->lock, on a stopped device: its kernel QPs' outstanding WRs. */
static int qrnic_cq_sw_flush(struct qrnic_dev *dev, struct qrnic_cq *cq, struct ib_wc *wc,
			     int max)
{
	struct qrnic_qp *qp;
	int n = 0;

	list_for_each_entry(qp, &cq->sq_qps, scq_node) {
		if (n >= max)
			return n;
		n += qrnic_wq_sw_flush(dev, qp, true, wc + n, max - n);
	}
	list_for_each_entry(qp, &cq->rq_qps, rcq_node) {
		if (n >= max)
			return n;
		n += qrnic_wq_sw_flush(dev, qp, false, wc + n, max - n);
	}
	return n;
}

static bool qrnic_wq_outstanding(struct qrnic_wq *wq)
{
	unsigned long flags;
	bool ret;

	spin_lock_irqsave(&wq->lock, flags);
	ret = wq->pi != READ_ONCE(wq->ci);
	spin_unlock_irqrestore(&wq->lock, flags);
	return ret;
}

/* Under cq->lock: any work request left for qrnic_cq_sw_flush()? */
static bool qrnic_cq_sw_pending(struct qrnic_cq *cq)
{
	struct qrnic_qp *qp;

	list_for_each_entry(qp, &cq->sq_qps, scq_node)
		if (qrnic_wq_outstanding(&qp->sq))
			return true;
	list_for_each_entry(qp, &cq->rq_qps, rcq_node)
		if (qrnic_wq_outstanding(&qp->rq))
			return true;
	return false;
}

/*
 * A kernel QP with a send queue (and maybe an RQ) joins the lists that
 * software flushes walk, after its creation; it leaves them in destroy,
 * which then no poll_cq or flush_work is looking at it any more.
 */
void qrnic_cq_track_qp(struct qrnic_dev *dev, struct qrnic_qp *qp, struct qrnic_cq *scq,
		       struct qrnic_cq *rcq)
{
	unsigned long flags;

	qp->scq = scq;
	qp->rcq = qp->rq.log_depth ? rcq : NULL;
	spin_lock_irqsave(&dev->kqp_lock, flags);
	list_add_tail(&qp->dev_node, &dev->kqps);
	spin_lock(&scq->lock);
	list_add_tail(&qp->scq_node, &scq->sq_qps);
	spin_unlock(&scq->lock);
	if (qp->rcq) {
		spin_lock(&qp->rcq->lock);
		list_add_tail(&qp->rcq_node, &qp->rcq->rq_qps);
		spin_unlock(&qp->rcq->lock);
	}
	qp->tracked = true;
	spin_unlock_irqrestore(&dev->kqp_lock, flags);
}

void qrnic_cq_untrack_qp(struct qrnic_dev *dev, struct qrnic_qp *qp)
{
	unsigned long flags;

	if (!qp->tracked)
		return;
	spin_lock_irqsave(&dev->kqp_lock, flags);
	list_del(&qp->dev_node);
	spin_lock(&qp->scq->lock);
	list_del(&qp->scq_node);
	spin_unlock(&qp->scq->lock);
	if (qp->rcq) {
		spin_lock(&qp->rcq->lock);
		list_del(&qp->rcq_node);
		spin_unlock(&qp->rcq->lock);
	}
	qp->tracked = false;
	spin_unlock_irqrestore(&dev->kqp_lock, flags);
}

static void qrnic_kick_add(struct list_head *kick, struct qrnic_cq *cq, struct qrnic_wq *wq)
{
	if (!cq->kicked && qrnic_wq_outstanding(wq)) {
		cq->kicked = true;
		list_add_tail(&cq->kick_node, kick);
	}
}

/*
 * The device was stopped (qrnic_mark_dead()): call the completion handler
 * of each kernel CQ that a kernel QP with outstanding work requests
 * completes into, once, as mlx5_ib_handle_internal_error() does.  Every
 * post from now on fails (the check is under the queue's lock, which
 * qrnic_wq_outstanding() takes), so no WR can be posted unseen.  The
 * handlers run under kqp_lock: a destroy of one of those QPs, and so of
 * their CQs, waits for them.  A CQ polled directly (IB_POLL_DIRECT) is left
 * to its owner: ib_cq_completion_direct() would WARN.
 */
void qrnic_flush_work(struct work_struct *work)
{
	struct qrnic_dev *dev = container_of(work, struct qrnic_dev, flush_work);
	struct qrnic_cq *cq, *tmp;
	struct qrnic_qp *qp;
	unsigned long flags;
	LIST_HEAD(kick);
	int n = 0;

	if (!test_bit(QRNIC_FLAG_STOPPED, &dev->flags))
		return;
	spin_lock_irqsave(&dev->kqp_lock, flags);
	list_for_each_entry(qp, &dev->kqps, dev_node) {
		qrnic_kick_add(&kick, qp->scq, &qp->sq);
		if (qp->rcq)
			qrnic_kick_add(&kick, qp->rcq, &qp->rq);
	}
	list_for_each_entry_safe(cq, tmp, &kick, kick_node) {
		list_del_init(&cq->kick_node);
		if (cq->ibcq.comp_handler && cq->ibcq.poll_ctx != IB_POLL_DIRECT) {
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
			n++;
		}
	}
	spin_unlock_irqrestore(&dev->kqp_lock, flags);
	if (n)
		dev_info(&dev->pdev->dev, "flushing outstanding work requests: %d CQ handlers called\n",
			 n);
}

int qrnic_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct qrnic_dev *dev = to_qdev(ibcq->device);
	struct qrnic_cq *cq = to_qcq(ibcq);
	unsigned long flags;
	bool stopped;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	/* stopped before reading the ring: then the CQEs in it are the last ones */
	stopped = test_bit(QRNIC_FLAG_STOPPED, &dev->flags);
	smp_rmb();
	while (n < num_entries) {
		/* a resize switches cqr and log_depth under the lock */
		const struct qrnic_cqe *cqe = qrnic_cqe(cq, cq->ci);
		u8 phase = ((cq->ci >> cq->log_depth) & 1) ^ 1;
		struct qrnic_qp *qp;

		if ((READ_ONCE(cqe->owner) & 1) != phase)
			break;
		dma_rmb();	/* owner before the rest of the CQE */
		cq->ci++;

		qp = xa_load(&dev->qps, le32_to_cpu(cqe->qpn));
		if (unlikely(!qp)) {
			/* completion of a QP destroyed meanwhile */
			continue;
		}
		qrnic_cqe_to_wc(cqe, qp, &wc[n]);
		qrnic_count_wc(dev, &wc[n]);
		n++;
	}
	if (unlikely(stopped) && n < num_entries)
		n += qrnic_cq_sw_flush(dev, cq, wc + n, num_entries - n);
	/* Tell the device which slots are free again (read when the ring looks full). */
	WRITE_ONCE(*qrnic_cq_dbrec(cq), cpu_to_le32(cq->ci));
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/*
 * Take the CQEs of QP qpn that are not yet polled out of the kernel CQ cq,
 * as mlx5 does when a kernel QP goes to RESET: they name queue slots that
 * no longer exist, and the ULP's objects behind their wr_id (an ib_cqe) may
 * be gone by the time the QP is used again.  The valid CQEs are those from
 * ci up to the first slot the device has not written; from the newest
 * back, the other QPs' CQEs move up over the removed ones (their owner bit
 * set for their new slot) and ci passes the slots that emptied.  Slots the
 * device has not written are not touched.  The provider does the same for
 * user CQs.
 */
void qrnic_cq_clean(struct qrnic_cq *cq, u32 qpn)
{
	u32 mask, end, i, nfreed = 0;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	mask = (1U << cq->log_depth) - 1;
	for (end = cq->ci; end - cq->ci <= mask; end++) {
		u8 phase = ((end >> cq->log_depth) & 1) ^ 1;

		if ((READ_ONCE(qrnic_cqe(cq, end)->owner) & 1) != phase)
			break;
	}
	dma_rmb();	/* owners before the rest of the CQEs */
	for (i = end; i != cq->ci;) {
		struct qrnic_cqe *c = qrnic_cqe(cq, --i);

		if (le32_to_cpu(c->qpn) == qpn) {
			nfreed++;
		} else if (nfreed) {
			struct qrnic_cqe tmp = *c;
			u32 to = i + nfreed;

			tmp.owner = (tmp.owner & ~1) | (((to >> cq->log_depth) & 1) ^ 1);
			*qrnic_cqe(cq, to) = tmp;
		}
	}
	if (nfreed) {
		cq->ci += nfreed;
		WRITE_ONCE(*qrnic_cq_dbrec(cq), cpu_to_le32(cq->ci));
	}
	spin_unlock_irqrestore(&cq->lock, flags);
}

int qrnic_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct qrnic_dev *dev = to_qdev(ibcq->device);
	struct qrnic_cq *cq = to_qcq(ibcq);
	unsigned long irqflags;
	bool stopped;
	u64 db;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	stopped = test_bit(QRNIC_FLAG_STOPPED, &dev->flags);
	smp_rmb();
	db = (cq->cqn & QRNIC_DB_QN_MASK) | QRNIC_DB_CQ_ARM |
	     ((u64)cq->ci << QRNIC_DB_IDX_SHIFT);
	if ((flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED)
		db |= QRNIC_DB_CQ_SOLICITED;
	if (!stopped)
		writeq(db, dev->kdb + QRNIC_DB_CQ);

	if (flags & IB_CQ_REPORT_MISSED_EVENTS) {
		const struct qrnic_cqe *cqe = qrnic_cqe(cq, cq->ci);
		u8 phase = ((cq->ci >> cq->log_depth) & 1) ^ 1;

		/* a dead device raises no event: what is left to flush is missed */
		if ((READ_ONCE(cqe->owner) & 1) == phase ||
		    (stopped && qrnic_cq_sw_pending(cq)))
			ret = 1;
	}
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/* Completion EQE: hard interrupt context. */
void qrnic_cq_comp_event(struct qrnic_dev *dev, u32 cqn)
{
	struct qrnic_cq *cq = xa_load(&dev->cqs, cqn);

	if (cq && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

void qrnic_cq_async_event(struct qrnic_dev *dev, u32 cqn, enum ib_event_type type)
{
	struct qrnic_cq *cq = xa_load(&dev->cqs, cqn);
	struct ib_event ev = {
		.event = type,
	};

	if (!cq) {
		dev_warn_ratelimited(&dev->pdev->dev, "async event %u for unknown CQ %u\n",
				     type, cqn);
		return;
	}
	dev_warn_ratelimited(&dev->pdev->dev, "CQ %u: %s\n", cqn, ib_event_msg(type));
	if (cq->ibcq.event_handler) {
		ev.device = cq->ibcq.device;
		ev.element.cq = &cq->ibcq;
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
	}
}
