/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: completion queues, event queues and interrupts.
 * Every entry is written body first, owner byte last.
 */
#include <stdlib.h>

#include "qrnic_internal.h"


static uint8_t owner_bit(uint32_t idx, uint8_t log_depth)
{
	return (uint8_t)(((idx >> log_depth) & 1) ^ 1);
}

int qrnic_eq_post(struct qrnic_dev *d, struct qrnic_eq *eq, uint8_t type, uint8_t subtype,
		  uint32_t handle, uint32_t data)
{
	uint32_t depth = 1u << eq->log_depth;
	struct qrnic_eqe e;
	uint64_t slot;
	uint32_t eqn = (uint32_t)(eq - d->eq);

	if (eq->pi - eq->ci >= depth || (d->fault && qrnic_fault_eqe(d, eq))) {
		if (!eq->overflow)
			qrnic_guest_err(d, err_eq_overflow, (eqn), "qrnic: EQ %u overflow, event lost", eqn);
		eq->overflow = true;
		return -1;
	}
	memset(&e, 0, sizeof(e));
	e.type = type;
	e.subtype = subtype;
	e.handle = handle;
	e.data = data;
	e.owner = owner_bit(eq->pi, eq->log_depth);
	slot = eq->ring + (uint64_t)(eq->pi & (depth - 1)) * sizeof(e);
	if (qrnic_dma_write(d, slot, &e, sizeof(e) - 1) ||
	    qrnic_dma_write(d, slot + sizeof(e) - 1, &e.owner, 1)) {
		qrnic_fatal(d, QRNIC_FATAL_DMA);
		return -1;
	}
	eq->pi++;
	qrnic_stat_add(d, QRNIC_STAT_EQES, 1);
	qrnic_trace(d, QRNIC_TR_EQE, 0, 0, eqn, type, handle);
	if (eq->armed) {
		eq->armed = false;
		qrnic_irq(d, eq->vector);
	}
	return 0;
}

void qrnic_eq_doorbell(struct qrnic_dev *d, uint32_t eqn, uint32_t ci, bool arm)
{
	struct qrnic_eq *eq;

	if (eqn == 0 || eqn >= d->cfg.max_eq || !d->eq[eqn].valid) {
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
		qrnic_guest_err(d, err_eq_db_no_eq, (eqn),
				"qrnic: EQ doorbell for EQ %u that does not exist", eqn);
		return;
	}
	eq = &d->eq[eqn];
	if (eq->pi - ci > (1u << eq->log_depth)) {
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
		qrnic_guest_err(d, err_eq_db_index, (eqn, ci, eq->pi),
				"qrnic: EQ %u consumer index %u outside [pi-depth, pi=%u]",
				  eqn, ci, eq->pi);
		return;
	}
	eq->ci = ci;
	if (eq->pi - eq->ci < (1u << eq->log_depth))
		eq->overflow = false;
	if (arm) {
		if (eq->ci != eq->pi) {
			eq->irq_pending = true;	/* raised from the run loop */
			qrnic_arm_mark(&d->arm_eq_lo, &d->arm_eq_hi, eqn);
			d->arm_pending = true;
			qrnic_schedule(d);
		} else {
			eq->armed = true;
		}
	}
}

static void cq_event(struct qrnic_dev *d, struct qrnic_cq *cq);

/* Widen the range [*lo, *hi] to hold i. */
void qrnic_arm_mark(uint32_t *lo, uint32_t *hi, uint32_t i)
{
	if (*lo > *hi) {
		*lo = *hi = i;
		return;
	}
	if (i < *lo)
		*lo = i;
	if (i > *hi)
		*hi = i;
}

/* Every CQ and EQ may have a pending event: after a snapshot load (the
 * flags come with the queues; the ranges are not saved). */
void qrnic_arm_mark_all(struct qrnic_dev *d)
{
	d->arm_cq_lo = d->arm_eq_lo = 1;
	d->arm_cq_hi = d->cfg.max_cq ? d->cfg.max_cq - 1 : 0;
	d->arm_eq_hi = d->cfg.max_eq ? d->cfg.max_eq - 1 : 0;
}

void qrnic_arm_run(struct qrnic_dev *d)
{
	/* the ranges are taken, then emptied: cq_event/qrnic_irq set no
	 * new pending event (qrnic_cq_doorbell/qrnic_eq_doorbell do, from
	 * MMIO), so nothing marked during the walk is lost */
	uint32_t cq_lo = d->arm_cq_lo, cq_hi = d->arm_cq_hi;
	uint32_t eq_lo = d->arm_eq_lo, eq_hi = d->arm_eq_hi;

	d->arm_pending = false;
	d->arm_cq_lo = d->arm_eq_lo = UINT32_MAX;
	d->arm_cq_hi = d->arm_eq_hi = 0;
	if (cq_lo < 1)
		cq_lo = 1;
	if (eq_lo < 1)
		eq_lo = 1;
	for (uint32_t i = cq_lo; i <= cq_hi && i < d->cfg.max_cq; i++) {
		struct qrnic_cq *cq = &d->cq[i];

		if (cq->valid && cq->event_pending) {
			cq->event_pending = false;
			cq_event(d, cq);
		}
	}
	for (uint32_t i = eq_lo; i <= eq_hi && i < d->cfg.max_eq; i++) {
		struct qrnic_eq *eq = &d->eq[i];

		if (eq->valid && eq->irq_pending) {
			eq->irq_pending = false;
			qrnic_irq(d, eq->vector);
		}
	}
}

void qrnic_async_event(struct qrnic_dev *d, uint8_t subtype, uint32_t handle, uint32_t data)
{
	for (uint32_t i = 1; i < d->cfg.max_eq; i++) {
		if (d->eq[i].valid && d->eq[i].async) {
			qrnic_eq_post(d, &d->eq[i], QRNIC_EQE_ASYNC, subtype, handle, data);
			return;
		}
	}
}

static void cq_event(struct qrnic_dev *d, struct qrnic_cq *cq)
{
	uint32_t cqn = (uint32_t)(cq - d->cq);

	cq->armed = false;
	cq->armed_solicited = false;
	cq->mod_seen = 0;
	cq->mod_gen++;		/* a moderation timer running is stale now */
	if (cq->eqn < d->cfg.max_eq && d->eq[cq->eqn].valid)
		qrnic_eq_post(d, &d->eq[cq->eqn], QRNIC_EQE_COMPLETION, 0, cqn, 0);
}

static void cq_overrun(struct qrnic_dev *d, struct qrnic_cq *cq)
{
	uint32_t cqn = (uint32_t)(cq - d->cq);

	cq->error = true;
	qrnic_stat_add(d, QRNIC_STAT_CQ_OVERRUNS, 1);
	qrnic_guest_err(d, err_cq_overrun, (cqn, cq->pi, cq->ci),
			"qrnic: CQ %u overrun (pi %u ci %u)", cqn, cq->pi, cq->ci);
	qrnic_async_event(d, QRNIC_EV_CQ_ERR, cqn, 0);
	for (uint32_t i = 1; i < d->qp_hwm && i < d->cfg.max_qp; i++) {	/* zero above */
		struct qrnic_qp *qp = &d->qp[i];

		if (qp->valid && (qp->send_cqn == cqn || qp->recv_cqn == cqn))
			qrnic_qp_error(d, qp, QRNIC_EV_QP_FATAL);
	}
}

int qrnic_cq_post(struct qrnic_dev *d, struct qrnic_cq *cq, struct qrnic_cqe *cqe)
{
	uint32_t depth = 1u << cq->log_depth;
	uint64_t slot, now;

	if (cq->error) {
		qrnic_stat_add(d, QRNIC_STAT_CQE_ERRORS, 1);
		return -1;
	}
	if (cq->pi - cq->ci >= depth && cq->dbrec) {
		uint32_t ci;

		/* Looks full: refresh the consumer index from the record. */
		if (qrnic_dma_read(d, cq->dbrec, &ci, sizeof(ci)) == 0 && cq->pi - ci <= depth)
			cq->ci = ci;
	}
	if (cq->pi - cq->ci >= depth || (d->fault && qrnic_fault_cqe(d, cq, cqe))) {
		cq_overrun(d, cq);
		return -1;
	}
	cqe->owner = owner_bit(cq->pi, cq->log_depth);
	slot = qrnic_ring_at(cq->ring, cq->ring_pl,
			     (uint64_t)(cq->pi & (depth - 1)) * QRNIC_CQ_CQE_SIZE(cq->flags));
	cq->pi++;	/* the slot is ours from now on */
	if (qrnic_timed(d) && qrnic_fx_cqe(d, (uint32_t)(cq - d->cq), slot, cqe) == 0)
		return 0;	/* written at its modelled time */
	/* Timed CQEs of this CQ may still be due (tm_last): this one comes
	 * after them in the ring, so its timestamp does not go below theirs. */
	now = qrnic_now(d);
	qrnic_cq_write_now(d, cq, slot, cqe, now > cq->tm_last ? now : cq->tm_last);
	return 0;
}

/* An armed CQ got a CQE that wakes it: the event now, or (moderation)
 * after mod_count of them or mod_period_us after the first. */
static void cq_moderate(struct qrnic_dev *d, struct qrnic_cq *cq, bool error)
{
	if (error || (!cq->mod_count && !cq->mod_period_us)) {
		cq_event(d, cq);
		return;
	}
	cq->mod_seen++;
	if (cq->mod_count && cq->mod_seen >= cq->mod_count) {
		cq_event(d, cq);
		return;
	}
	if (cq->mod_seen == 1 && cq->mod_period_us)
		qrnic_event_add(d, qrnic_now(d) + cq->mod_period_us * 1000ull, QRNIC_EVK_CQ_MOD,
				(uint32_t)(cq - d->cq), cq->mod_gen);
}

void qrnic_cq_mod_timer(struct qrnic_dev *d, const struct qrnic_event *ev)
{
	struct qrnic_cq *cq = qrnic_cq_get(d, ev->id);

	if (cq && cq->armed && cq->mod_seen && ev->gen == cq->mod_gen)
		cq_event(d, cq);
}

/* Writes the CQE (a 64-byte one with the timestamp ts, if the CQ has
 * them): every byte but the owner, then the owner. */
void qrnic_cq_write_now(struct qrnic_dev *d, struct qrnic_cq *cq, uint64_t slot,
			struct qrnic_cqe *cqe, uint64_t ts)
{
	bool solicited = cqe->rsvd == QRNIC_CQE_RSVD_SOLICITED;

	cqe->rsvd = 0;
	if (cq->error)
		return;
	if (cq->flags & QRNIC_CQ_F_TIMESTAMP) {
		struct qrnic_cqe64 e;

		memset(&e, 0, sizeof(e));
		e.timestamp = ts;	/* ABI fields are native: a little-endian host (qrnic_abi_types.h) */
		if (qrnic_dma_write(d, slot + sizeof(*cqe), &e.timestamp,
				    sizeof(e) - sizeof(*cqe))) {
			cq_overrun(d, cq);
			return;
		}
	}
	if (qrnic_dma_write(d, slot, cqe, sizeof(*cqe) - 1) ||
	    qrnic_dma_write(d, slot + sizeof(*cqe) - 1, &cqe->owner, 1)) {
		cq_overrun(d, cq);
		return;
	}
	cq->vis++;
	qrnic_stat_add(d, QRNIC_STAT_CQES, 1);
	if (cqe->status != QRNIC_WC_SUCCESS)
		qrnic_stat_add(d, QRNIC_STAT_CQE_ERRORS, 1);
	qrnic_trace(d, QRNIC_TR_CQE, cqe->qpn, 0, (uint32_t)(cq - d->cq), cqe->status, cqe->wr_id);
	if (cq->armed && (!cq->armed_solicited || solicited || cqe->status != QRNIC_WC_SUCCESS))
		cq_moderate(d, cq, cqe->status != QRNIC_WC_SUCCESS);
}

void qrnic_cq_doorbell(struct qrnic_dev *d, struct qrnic_cq *cq, uint32_t ci, bool arm, bool solicited)
{
	uint32_t depth = 1u << cq->log_depth;

	if (cq->pi - ci > depth) {
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
		qrnic_guest_err(d, err_cq_db_index, ((uint32_t)(cq - d->cq), ci, cq->pi),
				"qrnic: CQ %u consumer index %u outside [pi-depth, pi=%u]",
				  (uint32_t)(cq - d->cq), ci, cq->pi);
		return;
	}
	cq->ci = ci;
	if (!arm)
		return;
	if (cq->ci != cq->vis) {
		/* unconsumed CQEs: no lost wake-up (EQE from the run loop) */
		cq->event_pending = true;
		qrnic_arm_mark(&d->arm_cq_lo, &d->arm_cq_hi, (uint32_t)(cq - d->cq));
		d->arm_pending = true;
		qrnic_schedule(d);
		return;
	}
	cq->armed = true;
	cq->armed_solicited = solicited;
}

/* Send WQEs posted (their doorbell rung) on QPs completing into CQ cqn and
 * not completed yet: each may still produce a CQE.  A doorbell and an
 * admin command can reach the device in one wake-up, and the admin queue
 * is served first; without this, a CQ shrunk right after sends were
 * posted would be shrunk below the CQEs those sends are about to write
 * and overrun (rdma-core's test_cq.CQTest.test_resize_cq expects EINVAL
 * there, as a fast NIC's completions would already be in the CQ). */
static uint64_t cq_sends_posted(struct qrnic_dev *d, uint32_t cqn)
{
	uint64_t n = 0;

	for (uint32_t i = 1; i < d->qp_hwm && i < d->cfg.max_qp; i++) {	/* zero above */
		const struct qrnic_qp *qp = &d->qp[i];

		if (qp->valid && qp->send_cqn == cqn)
			n += qp->sq_pi - qp->req.sq_ci;
	}
	return n;
}

int qrnic_cq_resize(struct qrnic_dev *d, struct qrnic_cq *cq, uint8_t log_depth, uint64_t ring,
		    uint64_t *ring_pl, uint32_t *carried)
{
	uint32_t cqn = (uint32_t)(cq - d->cq), old_mask = (1u << cq->log_depth) - 1, n, i;
	const uint32_t zero = 0, size = QRNIC_CQ_CQE_SIZE(cq->flags);

	*carried = 0;
	if (cq->error)
		return QRNIC_AQ_BAD_STATE;
	qrnic_fx_flush_cq(d, cqn);	/* every reserved CQE is in the old ring now */
	if (cq->error)
		return QRNIC_AQ_BAD_STATE;
	if (cq->dbrec) {		/* the freshest consumer index */
		uint32_t ci;

		if (qrnic_dma_read(d, cq->dbrec, &ci, sizeof(ci)) == 0 &&
		    cq->pi - ci <= (1u << cq->log_depth))
			cq->ci = ci;
	}
	n = cq->pi - cq->ci;
	if (n + cq_sends_posted(d, cqn) > (1u << log_depth))
		return QRNIC_AQ_BAD_PARAM;
	/* copy, body then owner, as the CQEs were written (n <= depth); a
	 * 64-byte CQE keeps its timestamp */
	for (i = 0; i < n; i++) {
		struct qrnic_cqe64 e;
		uint64_t from = qrnic_ring_at(cq->ring, cq->ring_pl,
					      (uint64_t)((cq->ci + i) & old_mask) * size);
		uint64_t to = qrnic_ring_at(ring, ring_pl, (uint64_t)i * size);
		const uint32_t own = offsetof(struct qrnic_cqe, owner);

		if (qrnic_dma_read(d, from, &e, size))
			return QRNIC_AQ_DMA_ERROR;
		e.cqe.owner = owner_bit(i, log_depth);
		if ((size > sizeof(e.cqe) &&
		     qrnic_dma_write(d, to + sizeof(e.cqe), (uint8_t *)&e + sizeof(e.cqe),
				     size - sizeof(e.cqe))) ||
		    qrnic_dma_write(d, to, &e, own) ||
		    qrnic_dma_write(d, to + own, &e.cqe.owner, 1))
			return QRNIC_AQ_DMA_ERROR;
	}
	if (cq->dbrec && qrnic_dma_write(d, cq->dbrec, &zero, sizeof(zero)))
		return QRNIC_AQ_DMA_ERROR;
	qrnic_ring_pl_free(d, &cq->ring_pl);	/* the new ring's list is the CQ's now */
	cq->ring = ring;
	cq->ring_pl = ring_pl;
	cq->log_depth = log_depth;
	cq->pi = cq->vis = n;
	cq->ci = 0;
	*carried = n;
	return 0;
}
