/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model, completer: the requester's receive side.  Processes
 * ACK, NAK, RNR NAK, READ responses and ATOMIC acknowledgements, places
 * READ/ATOMIC data, and completes send WQEs in order.
 */
#include "qrnic_internal.h"

static inline struct qrnic_swqe *slot(struct qrnic_qp *qp, uint32_t idx)
{
	return &qp->req.win[idx % QRNIC_REQ_WINDOW];
}

static uint32_t path_mtu(const struct qrnic_qp *qp)
{
	uint32_t m = qrnic_mtu_bytes(qp->attr.path_mtu);

	return m ? m : 1024;
}

/* The oldest WQE not yet acknowledged, or NULL. */
static struct qrnic_swqe *head_unacked(struct qrnic_qp *qp)
{
	for (uint32_t idx = qp->req.sq_ci; idx != qp->req.sq_next; idx++) {
		struct qrnic_swqe *w = slot(qp, idx);

		if (!w->acked && w->npkts)
			return w;
	}
	return NULL;
}

static void progress(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	qp->req.retry_left = qp->attr.retry_cnt;
	qp->req.rnr_left = qp->attr.rnr_retry;
	qp->req.resync = false;
	/* During an RNR wait the RNR timer restarts transmission (and the
	 * retry timer with it): the retry timer stays stopped (spec 12.3). */
	if (qrnic_req_outstanding(qp) && !qp->req.rnr_wait)
		qrnic_req_arm_retry(d, qp);
	else
		qrnic_req_stop_retry(d, qp);
}

/* Cumulative acknowledgement of every PSN up to and including psn.
 * Returns true if a READ/ATOMIC before psn has not been answered: its
 * responses were lost and it must be sent again. */
static bool ack_through(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t psn)
{
	uint32_t new_una = qrnic_psn_add(psn, 1);
	bool missing = false;

	if (qrnic_psn_diff(psn, qp->req.una_psn) < 0)
		return false;
	for (uint32_t idx = qp->req.sq_ci; idx != qp->req.sq_next; idx++) {
		struct qrnic_swqe *w = slot(qp, idx);

		if (w->acked || !w->npkts)
			continue;
		if (qrnic_psn_diff(psn, w->first_psn) < 0)
			break;
		if (w->rd_atomic) {
			new_una = qrnic_psn_add(w->first_psn, qrnic_div_mtu(w->done_bytes, path_mtu(qp)));
			missing = true;
			break;
		}
		if (qrnic_psn_diff(psn, qrnic_psn_add(w->first_psn, w->npkts - 1)) >= 0)
			w->acked = true;
		else
			break;
	}
	if (qrnic_psn_diff(new_una, qp->req.una_psn) > 0) {
		uint32_t n = (uint32_t)qrnic_psn_diff(new_una, qp->req.una_psn);

		qp->req.una_psn = new_una;
		qp->req.rnr_echo = false;
		qrnic_req_cwnd_grow(d, qp, n);
		progress(d, qp);
	}
	return missing;
}

/* A READ/ATOMIC response was lost (a later one, or an ACK past it, came
 * in): ask again from una_psn, once per gap, since the rest of the old
 * burst is still arriving. */
static void resync(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	if (qp->req.resync && qp->req.resync_psn == qp->req.una_psn)
		return;
	qp->req.resync = true;
	qp->req.resync_psn = qp->req.una_psn;
	qrnic_req_retry(d, qp, 1);
}

static void fail_at(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t status)
{
	qrnic_req_fail_head(d, qp, status, QRNIC_VERR_NAK);
}

static void handle_ack(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	uint8_t syn = p->aeth_syndrome;
	uint32_t psn = p->psn;

	qrnic_stat_add(d, QRNIC_STAT_ACKS_RCVD, 1);
	switch (syn >> 5) {
	case 0:		/* ACK */
		qrnic_trace(d, QRNIC_TR_ACK, qp->qpn, psn, syn, p->aeth_msn, 0);
		if (ack_through(d, qp, psn))
			resync(d, qp);
		break;
	case 1: {	/* RNR NAK */
		uint64_t wait = qrnic_rnr_timer_ns(syn & 0x1f);

		qrnic_trace(d, QRNIC_TR_NAK, qp->qpn, psn, syn, p->aeth_msn, 0);
		qrnic_stat_add(d, QRNIC_STAT_RNR_NAKS_RCVD, 1);
		if (qrnic_psn_diff(psn, qp->req.una_psn) < 0)
			break;	/* stale (a late duplicate): that PSN was ACKed
				 * since; una_psn must not go back to it */
		if (ack_through(d, qp, qrnic_psn_add(psn, QRNIC_PSN_MASK))) {
			resync(d, qp);
			break;
		}
		if (qp->req.rnr_left == 0) {
			fail_at(d, qp, QRNIC_WC_RNR_RETRY_EXC_ERR);
			break;
		}
		if (qp->attr.rnr_retry != 7)
			qp->req.rnr_left--;
		qp->req.una_psn = psn;
		qp->req.rnr_echo = true;
		qp->req.rnr_psn = psn;
		qrnic_req_rnr_wait(d, qp, wait);
		break;
	}
	case 3: {	/* NAK */
		uint8_t code = syn & 0x1f;
		bool missing;

		qrnic_trace(d, QRNIC_TR_NAK, qp->qpn, psn, syn, p->aeth_msn, 0);
		/* Everything before the NAKed PSN arrived, except READ or
		 * ATOMIC responses that were lost: go back to those. */
		missing = ack_through(d, qp, qrnic_psn_add(psn, QRNIC_PSN_MASK));
		switch (code) {
		case 0:
			qrnic_stat_add(d, QRNIC_STAT_SEQ_NAKS_RCVD, 1);
			if (qrnic_psn_diff(psn, qp->req.una_psn) < 0)
				break;	/* stale: the responder has ACKed that
					 * PSN since (a late duplicate) */
			if (qp->req.rnr_wait)
				break;	/* the RNR retry will resend from there */
			if (qp->req.rnr_echo && psn == qp->req.rnr_psn && !missing) {
				/* The responder's echo of the last RNR NAK
				 * (later packets of the same burst): the RNR
				 * retry has resent from there; not a loss. */
				qp->req.rnr_echo = false;
				break;
			}
			if (qp->req.retry_left == 0) {
				fail_at(d, qp, QRNIC_WC_RETRY_EXC_ERR);
				break;
			}
			qp->req.retry_left--;
			if (!missing && qrnic_psn_diff(psn, qp->req.una_psn) > 0)
				qp->req.una_psn = psn;
			qrnic_req_cwnd_cut(d, qp);
			qrnic_req_retry(d, qp, 1);
			break;
		case 1:
			fail_at(d, qp, QRNIC_WC_REM_INV_REQ_ERR);
			break;
		case 2:
			fail_at(d, qp, QRNIC_WC_REM_ACCESS_ERR);
			break;
		case 4:
			fail_at(d, qp, QRNIC_WC_REM_INV_RD_REQ_ERR);
			break;
		default:
			fail_at(d, qp, QRNIC_WC_REM_OP_ERR);
			break;
		}
		break;
	}
	default:
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		break;
	}
}

static void handle_read_resp(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	struct qrnic_swqe *w;
	uint32_t mtu = path_mtu(qp);
	uint32_t fl = qrnic_opcode_flags(p->opcode);
	uint32_t exp;
	int verr;

	/* A response implicitly acknowledges every request before it; an
	 * earlier READ/ATOMIC still unanswered lost its response. */
	if (ack_through(d, qp, qrnic_psn_add(p->psn, QRNIC_PSN_MASK)) &&
	    qrnic_psn_diff(p->psn, qp->req.una_psn) > 0) {
		w = head_unacked(qp);
		if (w && w->wqe.opcode != QRNIC_WR_RDMA_READ) {
			resync(d, qp);
			return;
		}
	}
	w = head_unacked(qp);
	if (!w || w->wqe.opcode != QRNIC_WR_RDMA_READ) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		return;
	}
	exp = qrnic_psn_add(w->first_psn, qrnic_div_mtu(w->done_bytes, mtu));
	if (p->psn != exp) {
		if (qrnic_psn_diff(p->psn, exp) > 0)
			resync(d, qp);	/* a response was lost */
		return;		/* (or a duplicate) */
	}
	if ((w->done_bytes == 0) != !!(fl & QRNIC_HDR_FIRST) ||
	    ((fl & QRNIC_HDR_LAST) ? p->paylen != w->total_len - w->done_bytes
				   : p->paylen != mtu) ||
	    p->paylen > mtu) {
		qrnic_guest_err(d, err_bad_read_resp, (qp->qpn, p->opcode, p->paylen),
				"qrnic: QP %u bad READ response opcode 0x%x len %u",
				  qp->qpn, p->opcode, p->paylen);
		fail_at(d, qp, QRNIC_WC_BAD_RESP_ERR);
		return;
	}
	if (p->paylen) {
		verr = qrnic_sgl_write(d, qp->pdn, w->sge, w->wqe.num_sge, w->done_bytes,
				       p->payload, p->paylen);
		if (verr != QRNIC_VERR_NONE) {
			qrnic_req_fail_head(d, qp, QRNIC_WC_LOC_PROT_ERR, (uint8_t)verr);
			return;
		}
	}
	w->done_bytes += p->paylen;
	if (fl & QRNIC_HDR_LAST)
		w->acked = true;
	qp->req.una_psn = qrnic_psn_add(p->psn, 1);
	progress(d, qp);
}

static void handle_atomic_ack(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	struct qrnic_swqe *w;
	uint64_t orig = p->atomic_ack_orig;
	int verr;

	if (ack_through(d, qp, qrnic_psn_add(p->psn, QRNIC_PSN_MASK)))
		resync(d, qp);	/* an earlier READ/ATOMIC response was lost */
	w = head_unacked(qp);
	if (!w || !w->rd_atomic || w->wqe.opcode == QRNIC_WR_RDMA_READ || p->psn != w->first_psn) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		return;
	}
	verr = qrnic_sgl_write(d, qp->pdn, w->sge, w->wqe.num_sge, 0, &orig, sizeof(orig));
	if (verr != QRNIC_VERR_NONE) {
		qrnic_req_fail_head(d, qp, QRNIC_WC_LOC_PROT_ERR, (uint8_t)verr);
		return;
	}
	w->atomic_orig = orig;
	w->done_bytes = 8;
	w->acked = true;
	qp->req.una_psn = qrnic_psn_add(p->psn, 1);
	progress(d, qp);
}

void qrnic_comp_packet(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	uint8_t st = qp->attr.qp_state;

	if ((st != QRNIC_QPS_RTS && st != QRNIC_QPS_SQD && st != QRNIC_QPS_SQE) || !qp->req.win) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_QP_STATE, 1);
		return;
	}
	/* A response must be for something we sent: [una_psn - 1, next_psn). */
	if (qrnic_psn_diff(p->psn, qp->req.next_psn) >= 0 ||
	    qrnic_psn_diff(p->psn, qp->req.una_psn) < -1) {
		if (qrnic_psn_diff(p->psn, qp->req.next_psn) >= 0)
			qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		return;		/* late duplicate or bogus */
	}
	switch (p->opcode) {
	case QRNIC_OP_RC_ACK:
		handle_ack(d, qp, p);
		break;
	case QRNIC_OP_RC_ATOMIC_ACK:
		handle_atomic_ack(d, qp, p);
		break;
	default:
		handle_read_resp(d, qp, p);
		/* READ_RESP_FIRST/LAST/ONLY carry an AETH: a NAK ends the READ. */
		if ((qrnic_opcode_flags(p->opcode) & QRNIC_HDR_AETH) && (p->aeth_syndrome >> 5) == 3)
			handle_ack(d, qp, p);
		break;
	}
	if (qp->attr.qp_state == QRNIC_QPS_ERR)
		return;
	qrnic_req_complete(d, qp);
	if (qp->attr.qp_state != QRNIC_QPS_ERR)
		qrnic_qp_kick(d, qp);
}
