/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: scheduling of the device's work.  The work list of
 * QPs to service (and its self-check), and qrnic_dev_run(), the loop a
 * host calls when asked to (ops->schedule): raise pending events, run the
 * admin engine, the Ethernet transmit ring, the receive queue (rx.c) and
 * the QP service steps, each with a budget.
 */
#include <stdio.h>

#include "qrnic_internal.h"

/* ---- work list ------------------------------------------------------------- */
/* The work list holds each QP at most once (qrnic_qlist_push refuses a
 * second insert), whoever queues it: a doorbell, a received packet, or a
 * service step that kicks its own QP while it is being serviced. */
void qrnic_qp_kick(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	qrnic_qlist_push(d, &d->work, QRNIC_QL_WORK, qp);
	qrnic_schedule(d);
}

void qrnic_work_remove(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	qrnic_qlist_remove(d, &d->work, QRNIC_QL_WORK, qp);
}

static int check_list(struct qrnic_dev *d, struct qrnic_qlist *l, size_t off, const char *name,
		      char *why, size_t len)
{
	uint32_t n = 0, prev = 0, on = 0;

	for (uint32_t qpn = l->head; qpn; qpn = qrnic_ql(&d->qp[qpn], off)->next) {
		struct qrnic_qlink *k;

		if (qpn >= d->cfg.max_qp || ++n > d->cfg.max_qp) {
			snprintf(why, len, "%s list: QPN %u out of range or a cycle", name, qpn);
			return -1;
		}
		k = qrnic_ql(&d->qp[qpn], off);
		if (!k->on || k->prev != prev || d->qp[qpn].qpn != qpn) {
			snprintf(why, len, "%s list: QP %u links disagree (on %d prev %u, expected %u)",
				 name, qpn, k->on, k->prev, prev);
			return -1;
		}
		prev = qpn;
	}
	for (uint32_t i = 0; i < d->cfg.max_qp; i++)
		on += qrnic_ql(&d->qp[i], off)->on;
	if (prev != l->tail || n != l->len || on != n) {
		snprintf(why, len, "%s list: %u linked, length %u, %u QPs marked on it, tail %u/%u",
			 name, n, l->len, on, l->tail, prev);
		return -1;
	}
	return 0;
}

/* Tests and fuzzers: the lists checked after each service step (costs a
 * walk of the QP table each time). */
static void selfcheck(struct qrnic_dev *d, const struct qrnic_qp *qp)
{
	char why[160];

	if (qrnic_dev_check_lists(d, why, sizeof(why)) == 0)
		return;
	if (!d->selfcheck_failures++ && d->ops->log) {
		char msg[256];

		snprintf(msg, sizeof(msg), "qrnic: model self-check failed after servicing QP %u: %s",
			 qp->qpn, why);
		d->ops->log(d->opaque, QRNIC_LOG_INFO, msg);
	}
}

void qrnic_dev_set_selfcheck(struct qrnic_dev *d, bool on)
{
	d->selfcheck = on;
}

uint32_t qrnic_dev_selfcheck_failures(const struct qrnic_dev *d)
{
	return d->selfcheck_failures;
}

int qrnic_dev_check_lists(struct qrnic_dev *d, char *why, size_t len)
{
	if (check_list(d, &d->work, QRNIC_QL_WORK, "work", why, len) ||
	    check_list(d, &d->flushq, QRNIC_QL_FLUSH, "flush", why, len))
		return -1;
	for (uint32_t i = 0; i < d->cfg.max_qp; i++) {
		if (d->qp[i].work.on && !d->qp[i].valid) {
			snprintf(why, len, "work list: QP %u is not valid", i);
			return -1;
		}
		if (i >= d->qp_hwm && (d->qp[i].valid || d->qp[i].req.win || d->qp[i].bf)) {
			snprintf(why, len, "QP %u in use at or above the high-water mark %u", i,
				 d->qp_hwm);
			return -1;
		}
	}
	return 0;
}

/* ---- the work loop ------------------------------------------------------------ */
/* A device created without an admin engine (qrnic_dev_new): its admin
 * queue goes to error, as it would with firmware that cannot run. */
static bool admin_absent(struct qrnic_dev *d)
{
	d->aq_status |= QRNIC_AQ_STATUS_ERROR;
	qrnic_unimp(d, "qrnic: admin queue: no admin engine (firmware) attached");
	return false;
}

bool qrnic_dev_busy(const struct qrnic_dev *d)
{
	if (!(d->ctrl & QRNIC_CTRL_ENABLE) || (d->status & QRNIC_STATUS_FATAL))
		return false;
	return qrnic_rxq_ready((struct qrnic_dev *)d) || d->work.head || d->eth_pending || d->arm_pending ||
	       (d->aq_pending && (d->aq_ctrl & QRNIC_AQ_CTRL_ENABLE) &&
		!(d->aq_status & QRNIC_AQ_STATUS_ERROR));
}

bool qrnic_dev_run(struct qrnic_dev *d)
{
	bool did = false;
	uint32_t n;

	if (!(d->ctrl & QRNIC_CTRL_ENABLE) || (d->status & QRNIC_STATUS_FATAL) || d->in_run)
		return false;	/* a fatal device does nothing until reset */
	d->in_run = true;

	if (d->arm_pending) {
		qrnic_arm_run(d);
		did = true;
	}

	if (d->aq_pending && (d->aq_ctrl & QRNIC_AQ_CTRL_ENABLE) &&
	    !(d->aq_status & QRNIC_AQ_STATUS_ERROR)) {
		d->aq_pending = d->admin ? d->admin->run(d->admin_opaque, d, QRNIC_AQ_BUDGET)
					 : admin_absent(d);
		did = true;
	}

	if (d->eth_pending) {
		d->eth_pending = qrnic_eth_tx_run(d);
		did = true;
	}

	if (qrnic_rx_run(d, QRNIC_RUN_RX_BUDGET))
		did = true;

	/* Service each QP queued right now once; QPs that still have work
	 * go to the back of the list, so one busy QP cannot starve others. */
	for (n = 0; n < QRNIC_RUN_QP_BUDGET; n++) {
		struct qrnic_qp *qp;

		/* Loopback frames enter our own receive queue while QPs are
		 * serviced: leave room for what one more step can send rather
		 * than drop our own frames (the next run receives them first). */
		if (QRNIC_RXQ_DEPTH - (d->rxq_tail - d->rxq_head) < QRNIC_RXQ_STEP_RESERVE)
			break;
		qp = qrnic_qlist_pop(d, &d->work, QRNIC_QL_WORK);

		if (!qp)
			break;
		did = true;
		/* the service may have queued it again itself (a kick):
		 * the push then leaves it where it is */
		if (qrnic_qp_service(d, qp))
			qrnic_qlist_push(d, &d->work, QRNIC_QL_WORK, qp);
		if (d->selfcheck)
			selfcheck(d, qp);
	}

	d->in_run = false;
	qrnic_timer_update(d);
	if (qrnic_dev_busy(d))
		d->ops->schedule(d->opaque);
	return did;
}
