/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic firmware: shared receive queues (CREATE_SRQ, MODIFY_SRQ, QUERY_SRQ,
 * DESTROY_SRQ; spec 6.6.13 and 12.10) and XRC domains (ALLOC_XRCD,
 * DEALLOC_XRCD; 6.6.20 and 12.14).  The receive side of the model takes
 * WQEs from the ring (qrnic_srq_take, model/srq.c).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qrnic_fw.h"

#define SRQ_OFF(f)	QRNIC_FW_OFF(u.create_srq.f)

uint8_t qrnic_fw_create_srq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			    struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_create_srq *c = &cmd->u.create_srq;
	struct qrnic_xrcd *x = NULL;
	struct qrnic_cq *cq = NULL;
	struct qrnic_pd *pd;
	uint64_t *pl;
	uint32_t i;
	uint8_t st;

	if (!qrnic_fw_uctx_ok(d, c->uctx))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, SRQ_OFF(uctx));
	pd = qrnic_fw_pd(d, c->pdn);
	if (!pd || pd->uctx != c->uctx)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, SRQ_OFF(pdn));
	if (c->log_depth < 1 || c->log_depth > QRNIC_MAX_QUEUE_LOG ||
	    (1u << c->log_depth) > d->cfg.max_qp_wr)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, SRQ_OFF(log_depth));
	if (c->wqe_shift < QRNIC_MIN_RECV_WQE_SHIFT || c->wqe_shift > QRNIC_MAX_RECV_WQE_SHIFT)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, SRQ_OFF(wqe_shift));
	if (c->flags & ~(QRNIC_SRQ_F_XRC | QRNIC_SRQ_F_PAGELIST))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, SRQ_OFF(flags));
	if (c->limit >= (1u << c->log_depth))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, SRQ_OFF(limit));
	if (!(c->flags & QRNIC_SRQ_F_PAGELIST) &&
	    !qrnic_fw_ring_ok(c->ring_addr, 1ull << (c->log_depth + c->wqe_shift)))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, SRQ_OFF(ring_addr));
	if ((c->dbrec_addr & 7) || c->dbrec_addr > UINT64_MAX - 7)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, SRQ_OFF(dbrec_addr));
	if (c->flags & QRNIC_SRQ_F_XRC) {	/* ABI 1.3 */
		x = qrnic_fw_xrcd_for(d, c->xrcd, c->uctx);
		if (!x)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, SRQ_OFF(xrcd));
		cq = qrnic_fw_cq(d, c->cqn);
		if (!cq || cq->uctx != c->uctx)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, SRQ_OFF(cqn));
	} else {
		if (c->xrcd)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, SRQ_OFF(xrcd));
		if (c->cqn)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, SRQ_OFF(cqn));
	}
	if (c->rsvd1)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, SRQ_OFF(rsvd1));
	/* last: a page list is fetched only for an otherwise good command */
	st = qrnic_fw_ring_get(d, cqe, c->flags & QRNIC_SRQ_F_PAGELIST, c->ring_addr,
			       1ull << (c->log_depth + c->wqe_shift), SRQ_OFF(ring_addr), &pl);
	if (st)
		return st;

	for (i = 1; i < d->cfg.max_srq && i <= QRNIC_DB_QN_MASK; i++) {
		struct qrnic_srq *s = &d->srq[i];

		if (s->valid)
			continue;
		memset(s, 0, sizeof(*s));
		s->uctx = c->uctx;
		s->pdn = c->pdn;
		s->log_depth = c->log_depth;
		s->wqe_shift = c->wqe_shift;
		s->ring = c->ring_addr;
		s->ring_pl = pl;
		s->dbrec = c->dbrec_addr;
		s->limit = c->limit;
		s->valid = true;
		pd->refcnt++;
		if (x) {
			s->xrcd = c->xrcd;
			s->cqn = c->cqn;
			x->refcnt++;
			cq->refcnt++;
		}
		cqe->result[0] = i;
		return QRNIC_AQ_OK;
	}
	qrnic_ring_pl_free(d, &pl);
	return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
}

uint8_t qrnic_fw_modify_srq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			    struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_modify_srq *m = &cmd->u.modify_srq;
	struct qrnic_srq *s = qrnic_fw_srq(d, m->srqn);

	if (!s)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.modify_srq.srqn));
	if (m->attr_mask & QRNIC_SRQ_ATTR_MAX_WR)	/* no resize */
		return qrnic_fw_fail(cqe, QRNIC_AQ_NOT_SUPPORTED,
				     QRNIC_FW_OFF(u.modify_srq.attr_mask));
	if (m->attr_mask & ~QRNIC_SRQ_ATTR_LIMIT)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.modify_srq.attr_mask));
	if (m->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.modify_srq.rsvd));
	if ((m->attr_mask & QRNIC_SRQ_ATTR_LIMIT) && m->limit >= (1u << s->log_depth))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.modify_srq.limit));
	if (m->attr_mask & QRNIC_SRQ_ATTR_LIMIT)
		qrnic_srq_arm(d, s, m->limit);
	return QRNIC_AQ_OK;
}

uint8_t qrnic_fw_query_srq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			   struct qrnic_aq_cqe *cqe)
{
	struct qrnic_srq *s = qrnic_fw_srq(d, cmd->u.handle.handle);

	if (!s)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.handle.handle));
	cqe->result[0] = s->limit;
	cqe->result[1] = 1u << s->log_depth;
	cqe->result[2] = s->pi - s->ci;
	return QRNIC_AQ_OK;
}

uint8_t qrnic_fw_destroy_srq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			     struct qrnic_aq_cqe *cqe)
{
	const uint32_t off = QRNIC_FW_OFF(u.handle.handle);
	struct qrnic_srq *s = qrnic_fw_srq(d, cmd->u.handle.handle);
	struct qrnic_pd *pd;

	if (!s)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, off);
	if (s->refcnt)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, off);
	pd = qrnic_fw_pd(d, s->pdn);
	if (pd && pd->refcnt)
		pd->refcnt--;
	if (s->xrcd) {
		struct qrnic_xrcd *x = qrnic_fw_xrcd(d, s->xrcd);
		struct qrnic_cq *cq = qrnic_fw_cq(d, s->cqn);

		if (x && x->refcnt)
			x->refcnt--;
		if (cq && cq->refcnt)
			cq->refcnt--;
	}
	qrnic_ring_pl_free(d, &s->ring_pl);
	memset(s, 0, sizeof(*s));
	return QRNIC_AQ_OK;
}

/* ---- XRC domains (ABI 1.3) ------------------------------------------------ */
uint8_t qrnic_fw_alloc_xrcd(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			    struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_alloc_xrcd *c = &cmd->u.alloc_xrcd;

	if (!qrnic_fw_uctx_ok(d, c->uctx))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.alloc_xrcd.uctx));
	if (c->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.alloc_xrcd.rsvd));
	for (uint32_t i = 1; i < d->cfg.max_xrcd; i++) {
		struct qrnic_xrcd *x = &d->xrcd[i];

		if (x->valid)
			continue;
		memset(x, 0, sizeof(*x));
		x->uctx = c->uctx;
		x->valid = true;
		cqe->result[0] = i;
		return QRNIC_AQ_OK;
	}
	return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
}

uint8_t qrnic_fw_dealloc_xrcd(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			      struct qrnic_aq_cqe *cqe)
{
	const uint32_t off = QRNIC_FW_OFF(u.handle.handle);
	struct qrnic_xrcd *x = qrnic_fw_xrcd(d, cmd->u.handle.handle);

	if (!x)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, off);
	if (x->refcnt)		/* XRC SRQs or TGT QPs still in it */
		return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, off);
	memset(x, 0, sizeof(*x));
	return QRNIC_AQ_OK;
}
