/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: the QPS. and WORK sections of a snapshot: every QP
 * with its requester (the send window of validated WQEs), responder,
 * retry, RNR, congestion control and timing state; the QP lists, the
 * received frames not yet processed, the pending events and the timed
 * effects (snapshot.c has the stream and what it guarantees).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qrnic_internal.h"
#include "qrnic_snap.h"

/* QP: every valid QP with its requester, responder, window and timing. */
static void save_swqe(struct qrnic_snap_w *w, const struct qrnic_swqe *s)
{
	uint32_t nsge = s->wqe.num_sge <= QRNIC_MAX_SGE ? s->wqe.num_sge : 0;
	uint32_t nin = s->wqe.inline_len <= QRNIC_MAX_INLINE ? s->wqe.inline_len : 0;

	qs_bytes(w, &s->wqe, sizeof(s->wqe));	/* ABI layout */
	qs_bytes(w, s->sge, nsge * sizeof(s->sge[0]));
	qs_u32(w, nin);
	qs_bytes(w, s->inline_data, nin);
	qs_u32(w, s->sq_index);
	qs_u32(w, s->total_len);
	qs_u32(w, s->first_psn);
	qs_u32(w, s->npkts);
	qs_u32(w, s->sent);
	qs_u32(w, s->done_bytes);
	qs_u8(w, s->status);
	qs_u8(w, s->vendor_err);
	qs_bool(w, s->acked);
	qs_bool(w, s->rd_atomic);
	qs_bool(w, s->counted);
	qs_u64(w, s->atomic_orig);
	qs_u64(w, s->tm_issue);
}

static void load_swqe(struct qrnic_snap_r *r, struct qrnic_swqe *s)
{
	uint32_t nin;

	qr_bytes(r, &s->wqe, sizeof(s->wqe));
	if (!r->bad && s->wqe.num_sge > QRNIC_MAX_SGE) {
		qr_fail(r, "WQE with %u SGEs", s->wqe.num_sge);
		return;
	}
	qr_bytes(r, s->sge, s->wqe.num_sge * sizeof(s->sge[0]));
	nin = qr_u32(r);
	if (!r->bad && nin > QRNIC_MAX_INLINE) {
		qr_fail(r, "WQE with %u inline bytes", nin);
		return;
	}
	qr_bytes(r, s->inline_data, nin);
	s->sq_index = qr_u32(r);
	s->total_len = qr_u32(r);
	s->first_psn = qr_u32(r);
	s->npkts = qr_u32(r);
	s->sent = qr_u32(r);
	s->done_bytes = qr_u32(r);
	s->status = qr_u8(r);
	s->vendor_err = qr_u8(r);
	s->acked = qr_bool(r);
	s->rd_atomic = qr_bool(r);
	s->counted = qr_bool(r);
	s->atomic_orig = qr_u64(r);
	s->tm_issue = qr_u64(r);
	if (r->bad)
		return;
	/* the payload the requester will read: within the inline bytes or
	 * the SGEs (which it checks again against their MRs on every read) */
	{
		uint64_t room = 0;

		if (s->wqe.flags & QRNIC_WQE_F_INLINE)
			room = nin;
		else
			for (uint32_t i = 0; i < s->wqe.num_sge; i++)
				room += s->sge[i].length;
		if (s->total_len > room || s->total_len > QRNIC_MAX_MSG_SIZE ||
		    s->sent > (s->total_len ? s->total_len : 1) || s->done_bytes > s->total_len)
			qr_fail(r, "WQE %u: length %u, sent %u, done %u beyond its %llu bytes",
				s->sq_index, s->total_len, s->sent, s->done_bytes,
				(unsigned long long)room);
	}
}

static void save_rwqe(struct qrnic_snap_w *w, const struct qrnic_rwqe *q)
{
	uint32_t nsge = q->num_sge <= QRNIC_MAX_SGE ? q->num_sge : 0;

	qs_u64(w, q->wr_id);
	qs_u32(w, q->rq_index);
	qs_u32(w, q->pdn);
	qs_u32(w, q->srqn);
	qs_u32(w, nsge);
	qs_u32(w, q->total_len);
	qs_bytes(w, q->sge, nsge * sizeof(q->sge[0]));
}

static void load_rwqe(struct qrnic_snap_r *r, struct qrnic_rwqe *q)
{
	q->wr_id = qr_u64(r);
	q->rq_index = qr_u32(r);
	q->pdn = qr_u32(r);
	q->srqn = qr_u32(r);
	q->num_sge = qr_u32(r);
	q->total_len = qr_u32(r);
	if (!r->bad && q->num_sge > QRNIC_MAX_SGE) {
		qr_fail(r, "receive WQE with %u SGEs", q->num_sge);
		return;
	}
	qr_bytes(r, q->sge, q->num_sge * sizeof(q->sge[0]));
	if (!r->bad) {
		uint64_t room = 0;

		for (uint32_t i = 0; i < q->num_sge; i++)
			room += q->sge[i].length;
		if (q->total_len > room)
			qr_fail(r, "receive WQE: length %u beyond its %llu bytes", q->total_len,
				(unsigned long long)room);
	}
}

static void save_qp(struct qrnic_dev *d, struct qrnic_snap_w *w, const struct qrnic_qp *qp)
{
	const struct qrnic_req *q = &qp->req;
	const struct qrnic_resp *p = &qp->resp;
	const struct qrnic_cc_qp *cc = &qp->cc;
	uint32_t nwin = q->win ? q->sq_next - q->sq_ci : 0;

	qs_u32(w, qp->qpn);
	qs_u8(w, qp->type);
	qs_u32(w, qp->uctx);
	qs_u32(w, qp->pdn);
	qs_u32(w, qp->send_cqn);
	qs_u32(w, qp->recv_cqn);
	qs_u32(w, qp->srqn);
	qs_u32(w, qp->xrcd);
	qs_u32(w, qp->flags);
	qs_bytes(w, &qp->attr, sizeof(qp->attr));	/* ABI layout */
	qs_u64(w, qp->sq_addr);
	qs_u8(w, qp->sq_log_depth);
	qs_u8(w, qp->sq_wqe_shift);
	qs_u64(w, qp->rq_addr);
	qs_u8(w, qp->rq_log_depth);
	qs_u8(w, qp->rq_wqe_shift);
	qs_u32(w, qp->sq_pi);
	qs_u32(w, qp->rq_pi);
	qs_u32(w, qp->bound_mws);
	qs_u64(w, qp->tm_db);
	qs_u64(w, qp->tm_req);
	qs_u64(w, qp->tm_pkt);
	qs_u64(w, qp->tm_resp);
	qrnic_snap_save_pl(w, qp->sq_pl, qp->sq_log_depth + qp->sq_wqe_shift);	/* V_QP 3 */
	qrnic_snap_save_pl(w, qp->rq_pl, qp->rq_log_depth + qp->rq_wqe_shift);
	qs_u64(w, qp->rq_dbrec);	/* V_QP 4 */
	qs_u64(w, qp->sq_dbrec);	/* V_QP 5 */
	qs_u8(w, qp->sq_rec_no_db);

	/* requester */
	qs_u32(w, q->next_psn);
	qs_u32(w, q->sq_next);
	qs_u32(w, q->sq_ci);
	qs_u32(w, q->cur);
	qs_u32(w, q->cur_psn);
	qs_u32(w, q->una_psn);
	qs_u32(w, q->high_psn);
	qs_u32(w, q->rd_atomic_out);
	qs_u32(w, q->pkts_since_ackreq);
	qs_u32(w, q->msgs_since_ackreq);
	qs_u32(w, q->ackreq_psn);
	qs_u8(w, q->retry_left);
	qs_u8(w, q->rnr_left);
	qs_bool(w, q->rnr_wait);
	qs_u32(w, q->rnr_gen);
	qs_u32(w, q->timer_gen);
	qs_bool(w, q->timer_armed);
	qs_bool(w, q->stopped);
	qs_bool(w, q->resync);
	qs_u32(w, q->resync_psn);
	qs_u32(w, q->cwnd);
	qs_u32(w, q->cwnd_acc);
	qs_bool(w, q->cc_recovering);
	qs_u32(w, q->cc_recover_psn);
	qs_bool(w, q->rnr_echo);
	qs_u32(w, q->rnr_psn);
	qs_bool(w, q->win != NULL);
	qs_u32(w, nwin);
	for (uint32_t i = 0; i < nwin; i++)
		save_swqe(w, &q->win[(q->sq_ci + i) % QRNIC_REQ_WINDOW]);

	/* responder */
	qs_u32(w, p->epsn);
	qs_u32(w, p->msn);
	qs_bool(w, p->nak_sent);
	qs_bool(w, p->drop_msg);
	qs_bool(w, p->recv_active);
	save_rwqe(w, &p->rwqe);
	qs_u32(w, p->recv_off);
	qs_bool(w, p->write_active);
	qs_u64(w, p->write_va);
	qs_u32(w, p->write_rkey);
	qs_u32(w, p->write_resid);
	qs_bool(w, p->fatal_pending);
	qs_u8(w, p->fatal_syn);
	qs_u8(w, p->fatal_ev);
	qs_u32(w, p->fatal_psn);
	qs_bool(w, p->ack_pending);
	qs_u8(w, p->ack_syndrome);
	qs_u32(w, p->ack_psn);
	qs_u32(w, QRNIC_MAX_RD_ATOMIC);
	for (uint32_t i = 0; i < QRNIC_MAX_RD_ATOMIC; i++) {
		const struct qrnic_rsrc *s = &p->rsrc[i];

		qs_bool(w, s->valid);
		qs_bool(w, s->atomic);
		qs_bool(w, s->pending);
		qs_bool(w, s->replay);
		qs_u32(w, s->psn);
		qs_u32(w, s->npkts);
		qs_u32(w, s->next);
		qs_u64(w, s->va);
		qs_u32(w, s->rkey);
		qs_u32(w, s->len);
		qs_u64(w, s->atomic_orig);
		qs_u64(w, s->tm_issue);
		qs_u32(w, s->pdn);
	}
	qs_u32(w, p->rsrc_head);
	qs_bool(w, p->rsrc_maybe);
	qs_u32(w, p->rq_ci);
	qs_u32(w, p->xrc_srqn);
	qs_u32(w, p->xrc_pdn);

	/* congestion control */
	qs_bool(w, cc->np_sent);
	qs_u64(w, cc->np_last);
	qs_bool(w, cc->active);
	qs_f64(w, cc->rc);
	qs_f64(w, cc->rt);
	qs_f64(w, cc->alpha);
	qs_u64(w, cc->alpha_t);
	qs_u64(w, cc->inc_t);
	qs_u32(w, cc->t_stage);
	qs_u32(w, cc->b_stage);
	qs_u64(w, cc->bytes);
	qs_u64(w, cc->last);
	qs_u64(w, cc->cnps);
	qs_u64(w, cc->next_tx);
	qs_u32(w, cc->gen);
	/* v2: TIMELY */
	qs_bool(w, cc->rtt_pending);
	qs_u32(w, cc->rtt_psn);
	qs_u64(w, cc->rtt_sent);
	qs_f64(w, cc->rtt);
	qs_f64(w, cc->rtt_diff);
	qs_u32(w, cc->hai);
	qs_u64(w, cc->rtts);
}

static bool qpt_known(uint8_t t)
{
	return t == QRNIC_QPT_RC || t == QRNIC_QPT_UC || t == QRNIC_QPT_UD ||
	       t == QRNIC_QPT_GSI || t == QRNIC_QPT_XRC_INI || t == QRNIC_QPT_XRC_TGT;
}

static bool load_qp(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	const struct qrnic_config *c = &d->cfg;
	uint32_t qpn = qr_index(r, c->max_qp, false, "QP");
	struct qrnic_qp *qp = &d->qp[qpn];
	struct qrnic_req *q = &qp->req;
	struct qrnic_resp *p = &qp->resp;
	struct qrnic_cc_qp *cc = &qp->cc;
	uint32_t nwin, nrs;
	bool has_win;

	if (r->bad)
		return false;
	if (qp->valid)
		return qr_fail(r, "QP %u given twice", qpn);
	if (qpn >= d->qp_hwm)
		d->qp_hwm = qpn + 1;	/* a refused load resets up to it */
	qp->valid = true;
	qp->qpn = qpn;
	qp->type = qr_u8(r);
	qp->uctx = qr_u32(r);
	qp->pdn = qr_u32(r);
	qp->send_cqn = qr_u32(r);
	qp->recv_cqn = qr_u32(r);
	qp->srqn = qr_u32(r);
	qp->xrcd = qr_u32(r);
	qp->flags = qr_u32(r);
	qr_bytes(r, &qp->attr, sizeof(qp->attr));
	qp->sq_addr = qr_u64(r);
	qp->sq_log_depth = qr_u8(r);
	qp->sq_wqe_shift = qr_u8(r);
	qp->rq_addr = qr_u64(r);
	qp->rq_log_depth = qr_u8(r);
	qp->rq_wqe_shift = qr_u8(r);
	qp->sq_pi = qr_u32(r);
	qp->rq_pi = qr_u32(r);
	qp->bound_mws = qr_u32(r);
	qp->tm_db = qr_u64(r);
	qp->tm_req = qr_u64(r);
	qp->tm_pkt = qr_u64(r);
	qp->tm_resp = qr_u64(r);
	if (r->bad)
		return false;
	if (!qpt_known(qp->type) || qp->attr.qp_state > QRNIC_QPS_ERR)
		return qr_fail(r, "QP %u: type %u or state %u unknown", qpn, qp->type,
			       qp->attr.qp_state);
	if (qp->sq_log_depth > QRNIC_MAX_QUEUE_LOG || (1ull << qp->sq_log_depth) > c->max_qp_wr ||
	    qp->rq_log_depth > QRNIC_MAX_QUEUE_LOG || (1ull << qp->rq_log_depth) > c->max_qp_wr ||
	    qp->sq_wqe_shift > QRNIC_MAX_SEND_WQE_SHIFT ||
	    (qp->sq_log_depth && qp->sq_wqe_shift < QRNIC_MIN_WQE_SHIFT) ||
	    qp->rq_wqe_shift > QRNIC_MAX_RECV_WQE_SHIFT ||
	    (qp->rq_log_depth && qp->rq_wqe_shift < QRNIC_MIN_RECV_WQE_SHIFT))
		return qr_fail(r, "QP %u: a queue's depth or stride is out of range", qpn);
	if (r->version >= 3 &&
	    (!qrnic_snap_load_pl(d, r, &qp->sq_pl, qp->sq_log_depth + qp->sq_wqe_shift, "QP SQ", qpn) ||
	     !qrnic_snap_load_pl(d, r, &qp->rq_pl, qp->rq_log_depth + qp->rq_wqe_shift, "QP RQ", qpn)))
		return false;
	if ((qp->sq_pl && !qp->sq_addr) || (qp->rq_pl && !qp->rq_addr))
		return qr_fail(r, "QP %u: a page list for a queue it does not have", qpn);
	qp->rq_dbrec = r->version >= 4 ? qr_u64(r) : 0;	/* before: doorbells only */
	qp->sq_dbrec = r->version >= 5 ? qr_u64(r) : 0;
	qp->sq_rec_no_db = r->version >= 5 ? qr_u8(r) != 0 : false;
	if (r->bad)
		return false;
	if (qp->sq_dbrec && (!qp->sq_addr || (qp->sq_dbrec & 7)))
		return qr_fail(r, "QP %u: SQ record 0x%llx (no SQ or misaligned)", qpn,
			       (unsigned long long)qp->sq_dbrec);
	if (qp->rq_dbrec && (!qp->rq_addr || (qp->rq_dbrec & 3) || qp->rq_dbrec > UINT64_MAX - 3))
		return qr_fail(r, "QP %u: RQ producer record 0x%llx (no RQ or misaligned)", qpn,
			       (unsigned long long)qp->rq_dbrec);
	if (qp->attr.path_mtu && !qrnic_mtu_bytes(qp->attr.path_mtu))
		return qr_fail(r, "QP %u: path MTU code %u", qpn, qp->attr.path_mtu);
	if (qp->attr.cc_algo > QRNIC_CC_NALGO)
		return qr_fail(r, "QP %u: congestion control attribute %u", qpn, qp->attr.cc_algo);
	if (qp->attr.max_dest_rd_atomic > QRNIC_MAX_RD_ATOMIC)
		return qr_fail(r, "QP %u: %u responder resources", qpn, qp->attr.max_dest_rd_atomic);

	q->next_psn = qr_u32(r);
	q->sq_next = qr_u32(r);
	q->sq_ci = qr_u32(r);
	q->cur = qr_u32(r);
	q->cur_psn = qr_u32(r);
	q->una_psn = qr_u32(r);
	q->high_psn = qr_u32(r);
	q->rd_atomic_out = qr_u32(r);
	q->pkts_since_ackreq = qr_u32(r);
	q->msgs_since_ackreq = qr_u32(r);
	q->ackreq_psn = qr_u32(r);
	q->retry_left = qr_u8(r);
	q->rnr_left = qr_u8(r);
	q->rnr_wait = qr_bool(r);
	q->rnr_gen = qr_u32(r);
	q->timer_gen = qr_u32(r);
	q->timer_armed = qr_bool(r);
	q->stopped = qr_bool(r);
	q->resync = qr_bool(r);
	q->resync_psn = qr_u32(r);
	q->cwnd = qr_u32(r);
	q->cwnd_acc = qr_u32(r);
	q->cc_recovering = qr_bool(r);
	q->cc_recover_psn = qr_u32(r);
	q->rnr_echo = qr_bool(r);
	q->rnr_psn = qr_u32(r);
	has_win = qr_bool(r);
	nwin = qr_u32(r);
	if (r->bad)
		return false;
	/* the window: SQ indexes [sq_ci, sq_next), cur among them */
	if (nwin != q->sq_next - q->sq_ci || nwin > QRNIC_REQ_WINDOW ||
	    q->cur - q->sq_ci > nwin || (nwin && !has_win))
		return qr_fail(r, "QP %u: send window [%u, %u) cur %u inconsistent", qpn,
			       q->sq_ci, q->sq_next, q->cur);
	if (has_win) {
		q->win = calloc(QRNIC_REQ_WINDOW, sizeof(*q->win));
		if (!q->win)
			return qr_fail(r, "out of memory");
	}
	for (uint32_t i = 0; i < nwin && !r->bad; i++) {
		struct qrnic_swqe *s = &q->win[(q->sq_ci + i) % QRNIC_REQ_WINDOW];

		load_swqe(r, s);
		if (!r->bad && s->sq_index != q->sq_ci + i)
			return qr_fail(r, "QP %u: window entry %u holds SQ index %u", qpn,
				       q->sq_ci + i, s->sq_index);
	}

	p->epsn = qr_u32(r);
	p->msn = qr_u32(r);
	p->nak_sent = qr_bool(r);
	p->drop_msg = qr_bool(r);
	p->recv_active = qr_bool(r);
	load_rwqe(r, &p->rwqe);
	p->recv_off = qr_u32(r);
	p->write_active = qr_bool(r);
	p->write_va = qr_u64(r);
	p->write_rkey = qr_u32(r);
	p->write_resid = qr_u32(r);
	p->fatal_pending = qr_bool(r);
	p->fatal_syn = qr_u8(r);
	p->fatal_ev = qr_u8(r);
	p->fatal_psn = qr_u32(r);
	p->ack_pending = qr_bool(r);
	p->ack_syndrome = qr_u8(r);
	p->ack_psn = qr_u32(r);
	nrs = qr_u32(r);
	if (!r->bad && nrs != QRNIC_MAX_RD_ATOMIC)
		return qr_fail(r, "QP %u: %u responder resources (this device has %u)", qpn, nrs,
			       QRNIC_MAX_RD_ATOMIC);
	for (uint32_t i = 0; i < QRNIC_MAX_RD_ATOMIC && !r->bad; i++) {
		struct qrnic_rsrc *s = &p->rsrc[i];

		s->valid = qr_bool(r);
		s->atomic = qr_bool(r);
		s->pending = qr_bool(r);
		s->replay = qr_bool(r);
		s->psn = qr_u32(r);
		s->npkts = qr_u32(r);
		s->next = qr_u32(r);
		s->va = qr_u64(r);
		s->rkey = qr_u32(r);
		s->len = qr_u32(r);
		s->atomic_orig = qr_u64(r);
		s->tm_issue = qr_u64(r);
		s->pdn = qr_u32(r);
	}
	p->rsrc_head = qr_u32(r);
	p->rsrc_maybe = qr_bool(r);
	p->rq_ci = qr_u32(r);
	p->xrc_srqn = qr_u32(r);
	p->xrc_pdn = qr_u32(r);
	if (!r->bad && p->rsrc_head >= QRNIC_MAX_RD_ATOMIC)
		return qr_fail(r, "QP %u: responder resource head %u", qpn, p->rsrc_head);

	cc->np_sent = qr_bool(r);
	cc->np_last = qr_u64(r);
	cc->active = qr_bool(r);
	cc->rc = qr_f64(r);
	cc->rt = qr_f64(r);
	cc->alpha = qr_f64(r);
	cc->alpha_t = qr_u64(r);
	cc->inc_t = qr_u64(r);
	cc->t_stage = qr_u32(r);
	cc->b_stage = qr_u32(r);
	cc->bytes = qr_u64(r);
	cc->last = qr_u64(r);
	cc->cnps = qr_u64(r);
	cc->next_tx = qr_u64(r);
	cc->gen = qr_u32(r);
	if (r->version >= 2) {
		cc->rtt_pending = qr_bool(r);
		cc->rtt_psn = qr_u32(r);
		cc->rtt_sent = qr_u64(r);
		cc->rtt = qr_f64(r);
		cc->rtt_diff = qr_f64(r);
		cc->hai = qr_u32(r);
		cc->rtts = qr_u64(r);
		/* finite (NaN fails), within a day of modelled time */
		if (!r->bad && (cc->rtt_psn > QRNIC_PSN_MASK || !(cc->rtt >= 0 && cc->rtt <= 864e11) ||
				!(cc->rtt_diff >= -864e11 && cc->rtt_diff <= 864e11) ||
				cc->hai > 1000))
			return qr_fail(r, "QP %u: TIMELY state out of range", qpn);
	}
	/* rates: finite, not negative (NaN fails both) */
	if (!r->bad && !(cc->rc >= 0 && cc->rc <= 1e9 && cc->rt >= 0 && cc->rt <= 1e9 &&
			 cc->alpha >= 0 && cc->alpha <= 1))
		return qr_fail(r, "QP %u: congestion control rates out of range", qpn);
	return !r->bad;
}

void qrnic_snap_save_qps(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	uint32_t n = 0;

	qs_begin(w, "QPS.", V_QP, 0);
	for (uint32_t i = 0; i < d->qp_hwm && i < d->cfg.max_qp; i++)
		n += d->qp[i].valid;
	qs_u32(w, n);
	for (uint32_t i = 0; i < d->qp_hwm && i < d->cfg.max_qp; i++)
		if (d->qp[i].valid)
			save_qp(d, w, &d->qp[i]);
	qs_end(w);
}

bool qrnic_snap_load_qps(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	uint32_t n = qr_count(r, d->cfg.max_qp, 64, "QPs");

	while (n-- && !r->bad)
		load_qp(d, r);
	d->qp_live = 0;		/* derived, not saved: the QPs that exist */
	for (uint32_t i = 0; i < d->qp_hwm && i < d->cfg.max_qp && !r->bad; i++)
		d->qp_live += d->qp[i].valid;
	return !r->bad;
}

/* WORK: the QP lists, the receive queue, the events, the timed effects. */
static void save_list(struct qrnic_dev *d, struct qrnic_snap_w *w, const struct qrnic_qlist *l,
		      size_t off)
{
	uint32_t n = 0;

	qs_u32(w, l->len);
	for (uint32_t q = l->head; q && n < l->len && q < d->cfg.max_qp; n++) {
		qs_u32(w, q);
		q = qrnic_ql(&d->qp[q], off)->next;
	}
}

static bool load_list(struct qrnic_dev *d, struct qrnic_snap_r *r, struct qrnic_qlist *l,
		      size_t off, const char *what)
{
	uint32_t n = qr_count(r, d->cfg.max_qp, 4, what);

	memset(l, 0, sizeof(*l));
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		uint32_t q = qr_index(r, d->cfg.max_qp, false, "listed QP");

		if (r->bad)
			break;
		if (!d->qp[q].valid)
			return qr_fail(r, "%s: QP %u does not exist", what, q);
		if (!qrnic_qlist_push(d, l, off, &d->qp[q]))
			return qr_fail(r, "%s: QP %u listed twice", what, q);
	}
	return !r->bad;
}

static int event_cmp(const void *x, const void *y)
{
	const struct qrnic_event *a = x, *b = y;

	if (a->when != b->when)
		return a->when < b->when ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The frames of a train in the receive queue, into the slots it holds
 * (rx.c rx_enqueue), from its first on. */
struct train_slots {
	struct qrnic_dev *d;
	uint32_t next;
};

static void train_slot(void *opaque, uint8_t *buf, size_t len)
{
	struct train_slots *ts = opaque;

	ts->d->rxq[ts->next++ % QRNIC_RXQ_DEPTH] = (struct qrnic_frame){ .data = buf,
									  .len = (uint32_t)len };
}

void qrnic_snap_save_work(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	uint32_t n;

	qs_begin(w, "WORK", V_WORK, 0);
	save_list(d, w, &d->work, QRNIC_QL_WORK);
	save_list(d, w, &d->flushq, QRNIC_QL_FLUSH);

	/* a train (rx.c) becomes the frames it stands for, in its slots
	 * (tests/test_model_trains.py saves a receiver with one queued:
	 * the harness lands frames without running the receiver) */
	for (uint32_t i = d->rxq_head; i != d->rxq_tail; i++) {
		struct qrnic_frame *f = &d->rxq[i % QRNIC_RXQ_DEPTH];
		uint8_t *buf = f->data;

		if (qrnic_frame_buf_train(buf)) {
			struct train_slots ts = { d, i };

			f->data = NULL;
			qrnic_frame_buf_train_split(buf, train_slot, &ts);
		}
	}
	n = 0;
	for (uint32_t i = d->rxq_head; i != d->rxq_tail; i++)
		n += d->rxq[i % QRNIC_RXQ_DEPTH].data != NULL;
	qs_u32(w, n);
	for (uint32_t i = d->rxq_head; i != d->rxq_tail; i++) {
		struct qrnic_frame *f = &d->rxq[i % QRNIC_RXQ_DEPTH];

		if (!f->data)	/* a frame of a train that could not be had */
			continue;
		qrnic_frame_buf_fill(f->data);	/* bytes by reference or by description */
		qs_u32(w, f->len);
		qs_bytes(w, f->data, f->len);
		qs_u8(w, f->prio);	/* v2: the receive buffer (pfc.c) */
		qs_u64(w, f->start);
	}

	/* events: the heap and the lanes, one list in the order they fire,
	 * (when, seq): which structure held them is no state, and sorted the
	 * stream is the same whatever the heap's layout */
	n = d->nevents;
	for (int l = 0; l < QRNIC_NUM_LANES; l++)
		n += d->lanes[l].count;
	{
		struct qrnic_event *all = n ? malloc(n * sizeof(*all)) : NULL;
		uint32_t k = 0;

		if (n && !all) {
			w->oom = true;
			n = 0;
		}
		for (uint32_t i = 0; i < d->nevents && all; i++)
			all[k++] = d->events[i];
		for (int l = 0; l < QRNIC_NUM_LANES && all; l++) {
			const struct qrnic_evlane *ln = &d->lanes[l];

			for (uint32_t i = 0; i < ln->count; i++)
				all[k++] = ln->ring[(ln->head + i) & (ln->cap - 1)];
		}
		if (n)
			qsort(all, n, sizeof(*all), event_cmp);
		qs_u32(w, n);
		for (uint32_t i = 0; i < n; i++) {
			qs_u64(w, all[i].when);
			qs_u32(w, all[i].kind);
			qs_u32(w, all[i].id);
			qs_u32(w, all[i].gen);
			qs_u64(w, all[i].seq);
		}
		free(all);
	}

	/* timed effects: the slot table as it is (events name slots) */
	qs_u32(w, d->fx_cap);
	qs_u32(w, d->fx_free);
	qs_u32(w, d->fx_used);
	qs_u32(w, d->fx_gen);
	for (uint32_t i = 0; i < d->fx_cap; i++) {
		struct qrnic_effect *e = &d->fx[i];

		qs_u8(w, e->kind);
		qs_u32(w, e->gen);
		qs_u32(w, e->next_free);
		if (e->kind == QRNIC_FX_FREE)
			continue;
		qs_u32(w, e->len);
		qs_u64(w, e->when);
		qs_u64(w, e->slot);
		qs_bytes(w, &e->cqe, sizeof(e->cqe));	/* ABI layout */
		if (e->kind == QRNIC_FX_TX) {
			qrnic_frame_buf_fill(e->frame);
			qs_bytes(w, e->frame, e->len);
		}
	}
	qs_end(w);
}

bool qrnic_snap_load_work(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	uint32_t n, cap;

	if (!load_list(d, r, &d->work, QRNIC_QL_WORK, "work list") ||
	    !load_list(d, r, &d->flushq, QRNIC_QL_FLUSH, "flush queue"))
		return false;

	n = qr_count(r, QRNIC_RXQ_DEPTH, 4, "received frames");
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		uint32_t len = qr_u32(r);
		uint8_t *buf;

		if (r->bad)
			break;
		if (len == 0 || len > QRNIC_RX_FRAME_MAX || len > qr_left(r))
			return qr_fail(r, "received frame of %u bytes", len);
		buf = qrnic_frame_buf_alloc(len);
		if (!buf)
			return qr_fail(r, "out of memory");
		qr_bytes(r, buf, len);
		d->rxq[d->rxq_tail % QRNIC_RXQ_DEPTH] = (struct qrnic_frame){ .len = len, .data = buf };
		d->rxq_tail++;
		if (r->version >= 2) {
			uint8_t prio = qr_u8(r);

			d->rxq[(d->rxq_tail - 1) % QRNIC_RXQ_DEPTH].start = qr_u64(r);
			if (!r->bad && (prio & ~(QRNIC_FRAME_IN_RXB | 7)))
				return qr_fail(r, "received frame: priority byte 0x%x", prio);
			d->rxq[(d->rxq_tail - 1) % QRNIC_RXQ_DEPTH].prio = prio;
		}
	}

	n = qr_count(r, UINT32_MAX / 2, 28, "events");
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		struct qrnic_event ev;

		ev.when = qr_u64(r);
		ev.kind = qr_u32(r);
		ev.id = qr_u32(r);
		ev.gen = qr_u32(r);
		ev.seq = qr_u64(r);
		if (r->bad)
			break;
		if (ev.kind < QRNIC_EVK_RETRY || ev.kind > QRNIC_EVK_RXBUF)
			return qr_fail(r, "event of kind %u", ev.kind);
		if (ev.seq >= d->event_seq)
			return qr_fail(r, "event sequence %llu not below the next (%llu)",
				       (unsigned long long)ev.seq, (unsigned long long)d->event_seq);
		if (qrnic_event_restore(d, &ev) != 0)
			return qr_fail(r, "out of memory");
	}

	cap = qr_u32(r);
	d->fx_free = qr_u32(r);
	d->fx_used = qr_u32(r);
	d->fx_gen = qr_u32(r);
	if (r->bad)
		return false;
	if (cap > (1u << 24) || cap > qr_left(r) / 9 || (cap && (cap & (cap - 1))))
		return qr_fail(r, "effect table of %u slots", cap);
	if (cap) {
		d->fx = calloc(cap, sizeof(*d->fx));
		if (!d->fx)
			return qr_fail(r, "out of memory");
		d->fx_cap = cap;
	}
	if (d->fx_free >= (cap ? cap : 1) || d->fx_used >= (cap ? cap : 1))
		return qr_fail(r, "effect free list %u / used %u out of range", d->fx_free,
			       d->fx_used);
	for (uint32_t i = 0; i < cap && !r->bad; i++) {
		struct qrnic_effect *e = &d->fx[i];

		e->kind = qr_u8(r);
		e->gen = qr_u32(r);
		e->next_free = qr_u32(r);
		if (r->bad)
			break;
		if (e->kind > QRNIC_FX_IRQ || e->next_free >= cap || (i == 0 && e->kind))
			return qr_fail(r, "effect %u: kind %u, next %u", i, e->kind, e->next_free);
		if (e->kind == QRNIC_FX_FREE)
			continue;
		e->len = qr_u32(r);
		e->when = qr_u64(r);
		e->slot = qr_u64(r);
		qr_bytes(r, &e->cqe, sizeof(e->cqe));
		if (r->bad)
			break;
		/* a TX effect's slot is its PFC state (pfc.c); streams from before
		 * it left an old CQE's slot there: not a frame state.  The cached
		 * priority is recomputed from the frame. */
		if (e->kind == QRNIC_FX_TX)
			e->slot = (e->slot & ~QRNIC_FX_SLOT_TX_MASK) ? 0 : e->slot & QRNIC_FX_SLOT_DEFERRED;
		if (e->kind == QRNIC_FX_TX) {
			if (e->len == 0 || e->len > QRNIC_FRAME_BUF_MAX || e->len > qr_left(r))
				return qr_fail(r, "effect %u: frame of %u bytes", i, e->len);
			e->frame = qrnic_frame_buf_alloc(e->len);
			if (!e->frame)
				return qr_fail(r, "out of memory");
			qr_bytes(r, e->frame, e->len);
		}
	}
	/* the free list: a chain of free slots from fx_free, without a cycle */
	for (uint32_t i = d->fx_free, k = 0; i && !r->bad; i = d->fx[i].next_free, k++)
		if (k >= cap || d->fx[i].kind != QRNIC_FX_FREE)
			return qr_fail(r, "effect free list broken at slot %u", i);
	return !r->bad;
}
