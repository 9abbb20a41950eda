/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: shared receive queues (spec 12.10).  A QP created
 * with an SRQ takes its receive WQEs from the SRQ's ring, in ring order, at
 * the start of each message that needs one; the WQE is copied out and
 * validated once (qrnic_rwqe_read, responder.c) and the consumer index
 * advances at once, so the slot is the driver's again.
 */
#include "qrnic_internal.h"

struct qrnic_srq *qrnic_srq_get(struct qrnic_dev *d, uint32_t srqn)
{
	if (srqn == 0 || srqn >= d->cfg.max_srq || !d->srq[srqn].valid)
		return NULL;
	return &d->srq[srqn];
}

void qrnic_srq_arm(struct qrnic_dev *d, struct qrnic_srq *s, uint32_t limit)
{
	s->limit = limit;	/* checked when a WQE is taken (as rxe and mlx5 do) */
}

void qrnic_srq_doorbell(struct qrnic_dev *d, struct qrnic_srq *s, uint32_t pi)
{
	uint32_t depth = 1u << s->log_depth;

	/* the producer may not lap WQEs not yet taken, nor move backwards */
	if (!qrnic_pi_ok(pi, s->ci, s->pi, depth)) {
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
		qrnic_guest_err(d, err_srq_db_index, ((uint32_t)(s - d->srq), pi, s->ci, depth),
				"qrnic: SRQ %u producer index %u invalid (consumer %u, depth %u)",
				  (uint32_t)(s - d->srq), pi, s->ci, depth);
		return;
	}
	s->pi = pi;
}

bool qrnic_srq_empty(const struct qrnic_srq *s)
{
	return s->pi == s->ci;
}

int qrnic_srq_take(struct qrnic_dev *d, struct qrnic_srq *s, struct qrnic_rwqe *r)
{
	uint32_t srqn = (uint32_t)(s - d->srq);
	uint32_t idx = s->ci;
	uint64_t addr = qrnic_ring_at(s->ring, s->ring_pl,
				      (uint64_t)(idx & ((1u << s->log_depth) - 1)) << s->wqe_shift);
	int verr;

	s->ci++;	/* taken, whatever it holds: it completes (maybe in error) */
	verr = qrnic_rwqe_read(d, addr, 1u << s->wqe_shift, s->pdn, idx, r);
	r->srqn = srqn;
	if (s->dbrec && qrnic_dma_write(d, s->dbrec, &s->ci, sizeof(s->ci)))
		qrnic_guest_err(d, err_srq_dbrec, (srqn, s->dbrec),
				"qrnic: SRQ %u consumer record at 0x%llx not writable", srqn,
				  (unsigned long long)s->dbrec);
	if (s->limit && s->pi - s->ci < s->limit) {
		s->limit = 0;	/* one event per arming */
		qrnic_async_event(d, QRNIC_EV_SRQ_LIMIT_REACHED, srqn, 0);
	}
	return verr;
}

/* An XRC TGT QP entering ERROR with a receive taken and not completed: it
 * completes with WR_FLUSH_ERR on the CQ of the XRC SRQ it came from
 * (spec 12.14); the SRQ's other WQEs stay for the other QPs. */
void qrnic_xrc_flush_recv(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	const struct qrnic_srq *s = qrnic_srq_get(d, qp->resp.rwqe.srqn);
	struct qrnic_cq *cq = s ? qrnic_cq_get(d, s->cqn) : NULL;
	struct qrnic_cqe cqe;

	qp->resp.recv_active = false;
	if (!cq)
		return;
	memset(&cqe, 0, sizeof(cqe));
	cqe.wr_id = qp->resp.rwqe.wr_id;
	cqe.qpn = qp->qpn;
	cqe.src_qp = qp->resp.rwqe.srqn;
	cqe.status = QRNIC_WC_WR_FLUSH_ERR;
	cqe.vendor_err = QRNIC_VERR_FLUSH;
	cqe.opcode = QRNIC_WC_OP_RECV;
	cqe.flags = QRNIC_CQE_F_XRC;
	cqe.wqe_index = (uint16_t)qp->resp.rwqe.rq_index;
	qrnic_cq_post(d, cq, &cqe);
}
