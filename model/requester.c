/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model, requester: fetch send WQEs (copied once into the
 * QP's window, then validated), segment messages into path-MTU packets,
 * keep the retransmission state, complete WQEs in order.
 */
#include "qrnic_internal.h"

static inline uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static inline struct qrnic_swqe *slot(struct qrnic_qp *qp, uint32_t idx)
{
	return &qp->req.win[idx % QRNIC_REQ_WINDOW];
}

static uint32_t path_mtu(const struct qrnic_dev *d, const struct qrnic_qp *qp)
{
	uint32_t m = qrnic_mtu_bytes(qp->attr.path_mtu);

	/* UD QPs have no path MTU attribute: the port's MTU applies. */
	if ((!qrnic_qp_rc(qp) && qp->type != QRNIC_QPT_UC) || !m)
		return qrnic_mtu_bytes(qrnic_port_ib_mtu(d));
	return m;
}

/* RC, XRC and UC: one peer, set by MODIFY_QP (attr.av, dest_qpn) */
static inline bool connected(const struct qrnic_qp *qp)
{
	return qrnic_qp_rc(qp) || qp->type == QRNIC_QPT_UC;
}

static bool is_rd_atomic(uint8_t op)
{
	return op == QRNIC_WR_RDMA_READ || op == QRNIC_WR_ATOMIC_CMP_AND_SWP ||
	       op == QRNIC_WR_ATOMIC_FETCH_AND_ADD;
}

static bool is_atomic(uint8_t op)
{
	return op == QRNIC_WR_ATOMIC_CMP_AND_SWP || op == QRNIC_WR_ATOMIC_FETCH_AND_ADD;
}

/* Memory management WQEs: executed by the device, nothing on the wire. */
static bool is_local(uint8_t op)
{
	return op == QRNIC_WR_REG_MR || op == QRNIC_WR_LOCAL_INV || op == QRNIC_WR_BIND_MW;
}

/* Opcodes a QP of this type takes. */
static bool opcode_ok(const struct qrnic_qp *qp, uint8_t op)
{
	switch (op) {
	case QRNIC_WR_SEND:
	case QRNIC_WR_SEND_WITH_IMM:
	case QRNIC_WR_REG_MR:
	case QRNIC_WR_LOCAL_INV:
		return true;
	case QRNIC_WR_RDMA_WRITE:
	case QRNIC_WR_RDMA_WRITE_WITH_IMM:
	case QRNIC_WR_BIND_MW:		/* windows serve rkeys: connected QPs */
		return connected(qp);
	case QRNIC_WR_RDMA_READ:
	case QRNIC_WR_ATOMIC_CMP_AND_SWP:
	case QRNIC_WR_ATOMIC_FETCH_AND_ADD:
	case QRNIC_WR_SEND_WITH_INV:
		return qrnic_qp_rc(qp);
	default:
		return false;
	}
}

/* The fields a REG_MR or LOCAL_INV WQE leaves unused are 0. */
static bool local_wqe_ok(const struct qrnic_send_wqe *q)
{
	if (q->flags & ~(QRNIC_WQE_F_SIGNALED | QRNIC_WQE_F_FENCE))
		return false;
	if (q->opcode == QRNIC_WR_REG_MR) {
		struct qrnic_reg_mr_wqe r;
		static const uint8_t zero[sizeof(r.rsvd1)];

		memcpy(&r, q, sizeof(r));
		return r.rsvd0 == 0 && memcmp(r.rsvd1, zero, sizeof(zero)) == 0;
	}
	if (q->opcode == QRNIC_WR_BIND_MW) {
		struct qrnic_bind_mw_wqe b;
		static const uint8_t zero[sizeof(b.rsvd2)];

		memcpy(&b, q, sizeof(b));
		return b.rsvd0 == 0 && b.rsvd1 == 0 && memcmp(b.rsvd2, zero, sizeof(zero)) == 0;
	}
	return q->num_sge == 0 && q->rsvd0 == 0 && q->rsvd1 == 0;
}

static uint8_t wc_status_for(int verr)
{
	switch (verr) {
	case QRNIC_VERR_LENGTH:	return QRNIC_WC_LOC_LEN_ERR;
	case QRNIC_VERR_BAD_WQE:
	case QRNIC_VERR_BAD_AH:	return QRNIC_WC_LOC_QP_OP_ERR;
	default:		return QRNIC_WC_LOC_PROT_ERR;
	}
}

static void wqe_fail(struct qrnic_swqe *w, uint8_t status, uint8_t verr)
{
	if (w->status != QRNIC_WC_SUCCESS)
		return;		/* keep the first reason */
	w->status = status;
	w->vendor_err = verr;
	w->acked = true;
}

/* Bytes [off, off + len) of the WQE at addr: from its BlueFlame copy if it
 * has one (bf_covers() checked that they are in it), else by DMA. */
static int wqe_read(struct qrnic_dev *d, const struct qrnic_bf_wqe *bf, uint64_t addr,
		    uint32_t off, void *buf, uint32_t len)
{
	if (!bf)
		return qrnic_dma_read(d, addr + off, buf, len);
	if (off + len > bf->nbytes)	/* not reached: bf_covers() */
		return -1;
	memcpy(buf, bf->data + off, len);
	return 0;
}

/* Whether the BF copy holds everything the header q says follows it.  The
 * counts are only compared here; fetch_wqe() validates them as for any WQE
 * (a count too large for the stride fails there, not here). */
static bool bf_covers(const struct qrnic_bf_wqe *bf, const struct qrnic_send_wqe *q)
{
	uint64_t need = sizeof(*q);

	if (q->flags & QRNIC_WQE_F_INLINE)
		need += q->inline_len;
	else if (q->opcode != QRNIC_WR_REG_MR && q->opcode != QRNIC_WR_BIND_MW)
		need += (uint64_t)q->num_sge * sizeof(struct qrnic_sge);
	return need <= bf->nbytes;
}

/* Copy the WQE at SQ index idx into its window slot and validate it.  A
 * WQE that fails validation is marked failed; it completes in order. */
static void fetch_wqe(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t idx)
{
	struct qrnic_swqe *w = slot(qp, idx);
	uint32_t stride = 1u << qp->sq_wqe_shift;
	uint64_t addr = qrnic_ring_at(qp->sq_addr, qp->sq_pl,
		(uint64_t)(idx & ((1u << qp->sq_log_depth) - 1)) << qp->sq_wqe_shift);
	bool ud = qp->type == QRNIC_QPT_UD || qp->type == QRNIC_QPT_GSI;
	uint32_t room = stride - (uint32_t)sizeof(struct qrnic_send_wqe);
	struct qrnic_bf_wqe *bf = NULL;
	int verr;

	/* No memset of the slot: the header is read below (zeroed if the read
	 * fails), and of the SGEs only the num_sge read after it are ever used
	 * (wqe.num_sge bounds every loop over them; 0 for inline data). */
	w->sq_index = idx;
	w->total_len = w->first_psn = w->npkts = 0;
	w->vendor_err = 0;
	w->rd_atomic = w->counted = false;
	w->atomic_orig = 0;
	w->tm_issue = 0;
	w->sent = w->done_bytes = 0;
	w->acked = false;
	w->status = QRNIC_WC_SUCCESS;
	qrnic_trace(d, QRNIC_TR_WQE_FETCH, qp->qpn, qp->req.next_psn, idx, 0, addr);
	/* BlueFlame: the WQE came with its doorbell (regs.c), copied once
	 * into qp->bf; it is validated below exactly like a ring WQE. */
	if (qp->bf && qp->bf->valid && qp->bf->index == idx)
		bf = qp->bf;
	if (wqe_read(d, bf, addr, 0, &w->wqe, sizeof(w->wqe))) {
		wqe_fail(w, QRNIC_WC_LOC_QP_OP_ERR, QRNIC_VERR_DMA);
		return;
	}
	const struct qrnic_send_wqe *q = &w->wqe;

	if (bf && !bf_covers(bf, q)) {
		/* more SGEs or inline bytes than the BF write carried: the
		 * whole WQE from the ring (spec 3.2.1) */
		qrnic_stat_add(d, QRNIC_STAT_BF_FALLBACKS, 1);
		qrnic_tp_ub_bf_fallback(d, qp->qpn, idx, 5);
		bf->valid = false;
		bf = NULL;
		if (qrnic_dma_read(d, addr, &w->wqe, sizeof(w->wqe))) {
			wqe_fail(w, QRNIC_WC_LOC_QP_OP_ERR, QRNIC_VERR_DMA);
			return;
		}
	}

	if (opcode_ok(qp, q->opcode) && is_local(q->opcode)) {
		/* run by the requester loop (exec_local); no payload, no packet */
		if (!local_wqe_ok(q))
			goto bad;
		return;
	}
	if (!opcode_ok(qp, q->opcode) ||
	    (q->flags & ~0xfu) || q->rsvd0 ||
	    (qp->type == QRNIC_QPT_XRC_INI ? (q->xrc_srqn & ~QRNIC_PSN_MASK) : q->rsvd1) ||
	    ((q->flags & QRNIC_WQE_F_INLINE) &&
	     (q->num_sge || q->inline_len > room || q->inline_len > QRNIC_MAX_INLINE ||
	      is_rd_atomic(q->opcode))) ||
	    (!(q->flags & QRNIC_WQE_F_INLINE) &&
	     (q->num_sge > QRNIC_MAX_SGE || q->num_sge * sizeof(struct qrnic_sge) > room)) ||
	    (is_atomic(q->opcode) && q->num_sge != 1)) {
bad:
		qrnic_stat_add(d, QRNIC_STAT_BAD_WQES, 1);
		qrnic_guest_err(d, err_bad_send_wqe,
				(qp->qpn, idx, q->opcode, q->flags, q->num_sge, q->inline_len),
				"qrnic: QP %u bad send WQE %u (opcode %u flags 0x%x sge %u inline %u)",
				  qp->qpn, idx, q->opcode, q->flags, q->num_sge, q->inline_len);
		wqe_fail(w, QRNIC_WC_LOC_QP_OP_ERR, QRNIC_VERR_BAD_WQE);
		return;
	}
	w->rd_atomic = is_rd_atomic(q->opcode);
	if (q->flags & QRNIC_WQE_F_INLINE) {
		if (wqe_read(d, bf, addr, sizeof(*q), w->inline_data, q->inline_len)) {
			wqe_fail(w, QRNIC_WC_LOC_QP_OP_ERR, QRNIC_VERR_DMA);
			return;
		}
		w->total_len = q->inline_len;
	} else {
		uint32_t access = (q->opcode == QRNIC_WR_RDMA_READ || is_atomic(q->opcode))
				  ? QRNIC_ACCESS_LOCAL_WRITE : 0;

		if (wqe_read(d, bf, addr, sizeof(*q), w->sge, q->num_sge * sizeof(struct qrnic_sge))) {
			wqe_fail(w, QRNIC_WC_LOC_QP_OP_ERR, QRNIC_VERR_DMA);
			return;
		}
		verr = qrnic_sgl_check(d, qp->pdn, w->sge, q->num_sge, access, &w->total_len);
		if (verr != QRNIC_VERR_NONE) {
			qrnic_tp_err_send_lkey(d, qp->qpn, idx, (uint32_t)verr);
			wqe_fail(w, wc_status_for(verr), (uint8_t)verr);
			return;
		}
	}
	if (is_atomic(q->opcode) && w->total_len != 8) {
		wqe_fail(w, QRNIC_WC_LOC_LEN_ERR, QRNIC_VERR_LENGTH);
		return;
	}
	if (w->total_len > QRNIC_MAX_MSG_SIZE || (ud && w->total_len > path_mtu(d, qp))) {
		wqe_fail(w, QRNIC_WC_LOC_LEN_ERR, QRNIC_VERR_LENGTH);
		return;
	}
	if (ud) {
		struct qrnic_ah *ah = qrnic_ah_get(d, q->ah);

		if (!ah || ah->pdn != qp->pdn) {
			wqe_fail(w, QRNIC_WC_LOC_QP_OP_ERR, QRNIC_VERR_BAD_AH);
			return;
		}
	}
	if (is_atomic(q->opcode) || q->opcode == QRNIC_WR_RDMA_READ || ud)
		w->npkts = q->opcode == QRNIC_WR_RDMA_READ
			? (w->total_len ? qrnic_div_mtu(w->total_len + path_mtu(d, qp) - 1,
							path_mtu(d, qp)) : 1) : 1;
	else
		w->npkts = w->total_len ? qrnic_div_mtu(w->total_len + path_mtu(d, qp) - 1,
							path_mtu(d, qp)) : 1;
}

/* ---- timers ------------------------------------------------------------- */
static uint64_t ack_timeout_ns(const struct qrnic_qp *qp)
{
	uint8_t t = qp->attr.timeout;

	if (t == 0)
		return 0;	/* infinite */
	if (t > 31)
		t = 31;
	return 4096ull << t;
}

void qrnic_req_arm_retry(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	uint64_t to = ack_timeout_ns(qp);

	qp->req.timer_gen = ++d->timer_gen;
	qp->req.timer_armed = false;
	if (!to || !qrnic_qp_rc(qp))
		return;
	qp->req.timer_armed = true;
	qrnic_event_add_lane(d, QRNIC_LANE_RETRY, qrnic_now(d) + to, QRNIC_EVK_RETRY, qp->qpn,
			     qp->req.timer_gen);
}

void qrnic_req_stop_retry(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	qp->req.timer_gen = ++d->timer_gen;
	qp->req.timer_armed = false;
}

/* An RNR NAK: send nothing until the RNR timer fires (a later RNR NAK
 * restarts it).  The retry timer stays stopped meanwhile (progress does
 * not restart it, completer.c).  The RNR timer has its own generation:
 * an ACK that makes progress during the wait re-arms or stops the retry
 * timer, and must not cancel the RNR timer with it, or rnr_wait would
 * never be cleared and the requester would send nothing more. */
void qrnic_req_rnr_wait(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t wait_ns)
{
	qrnic_req_stop_retry(d, qp);
	qp->req.rnr_wait = true;
	qp->req.rnr_gen = ++d->timer_gen;
	qrnic_event_add(d, qrnic_now(d) + wait_ns, QRNIC_EVK_RNR, qp->qpn, qp->req.rnr_gen);
}

/* Cancel both timers (reset, flush, destroy): an RNR wait ends with its
 * timer. */
void qrnic_req_stop_timers(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	qrnic_req_stop_retry(d, qp);
	qp->req.rnr_gen = ++d->timer_gen;
	qp->req.rnr_wait = false;
}

/* The timer event ev (QRNIC_EVK_RETRY or QRNIC_EVK_RNR) of qp has been
 * neither re-armed nor stopped since it was set. */
bool qrnic_req_event_current(const struct qrnic_qp *qp, const struct qrnic_event *ev)
{
	return ev->gen == (ev->kind == QRNIC_EVK_RNR ? qp->req.rnr_gen : qp->req.timer_gen);
}

/* Something is unacknowledged: PSNs [una_psn, next_psn). */
bool qrnic_req_outstanding(const struct qrnic_qp *qp)
{
	return qp->req.una_psn != qp->req.next_psn;
}

/* ---- completion, in SQ order -------------------------------------------------- */
static uint8_t wc_opcode(uint8_t op)
{
	switch (op) {
	case QRNIC_WR_RDMA_WRITE:
	case QRNIC_WR_RDMA_WRITE_WITH_IMM:	return QRNIC_WC_OP_RDMA_WRITE;
	case QRNIC_WR_RDMA_READ:		return QRNIC_WC_OP_RDMA_READ;
	case QRNIC_WR_ATOMIC_CMP_AND_SWP:	return QRNIC_WC_OP_COMP_SWAP;
	case QRNIC_WR_ATOMIC_FETCH_AND_ADD:	return QRNIC_WC_OP_FETCH_ADD;
	case QRNIC_WR_LOCAL_INV:		return QRNIC_WC_OP_LOCAL_INV;
	case QRNIC_WR_BIND_MW:			return QRNIC_WC_OP_BIND_MW;
	case QRNIC_WR_REG_MR:			return QRNIC_WC_OP_REG_MR;
	default:				return QRNIC_WC_OP_SEND;
	}
}

void qrnic_req_complete(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	while (qp->req.sq_ci != qp->req.sq_next && qp->attr.qp_state != QRNIC_QPS_ERR) {
		struct qrnic_swqe *w = slot(qp, qp->req.sq_ci);
		uint32_t idx = qp->req.sq_ci;
		bool ok;

		if (!w->acked)
			break;
		ok = w->status == QRNIC_WC_SUCCESS;
		if (w->counted) {
			w->counted = false;
			qp->req.rd_atomic_out--;
		}
		if (!ok || (w->wqe.flags & QRNIC_WQE_F_SIGNALED) || (qp->flags & QRNIC_QP_F_SQ_SIG_ALL)) {
			struct qrnic_cq *cq = qrnic_cq_get(d, qp->send_cqn);
			struct qrnic_cqe cqe;

			memset(&cqe, 0, sizeof(cqe));
			cqe.wr_id = w->wqe.wr_id;
			cqe.qpn = qp->qpn;
			cqe.status = w->status;
			cqe.vendor_err = w->vendor_err;
			cqe.opcode = wc_opcode(w->wqe.opcode);
			cqe.flags = QRNIC_CQE_F_SEND;
			cqe.wqe_index = (uint16_t)w->sq_index;
			cqe.byte_len = (w->wqe.opcode == QRNIC_WR_RDMA_READ || is_atomic(w->wqe.opcode))
				       ? w->total_len : 0;
			if (cq)
				qrnic_cq_post(d, cq, &cqe);
			/* The post overran the CQ: that moved the QP to error and
			 * flushed its queues already (this WQE with them) */
			if (qp->req.sq_ci != idx)
				return;
		}
		if (qp->req.cur == qp->req.sq_ci) {
			/* a rewind pointed here: go on with the next WQE's PSN */
			qp->req.cur++;
			qp->req.cur_psn = qp->req.cur != qp->req.sq_next
					  ? slot(qp, qp->req.cur)->first_psn : qp->req.next_psn;
		}
		qp->req.sq_ci++;
		if (!ok) {
			qrnic_qp_error(d, qp, 0xff);
			return;
		}
	}
	if (qp->attr.qp_state == QRNIC_QPS_SQD && qp->req.sq_ci == qp->req.sq_next &&
	    qp->attr.en_sqd_async_notify) {
		qp->attr.en_sqd_async_notify = 0;
		qrnic_async_event(d, QRNIC_EV_SQ_DRAINED, qp->qpn, 0);
	}
}

/* ---- go-back-N ------------------------------------------------------------ */
/* Restart transmission from una_psn: find the WQE holding it, rewind it
 * to that packet and every later WQE to its start. */
void qrnic_req_rewind(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	uint32_t mtu = path_mtu(d, qp);
	uint32_t idx;

	for (idx = qp->req.sq_ci; idx != qp->req.sq_next; idx++) {
		struct qrnic_swqe *w = slot(qp, idx);
		int32_t off = qrnic_psn_diff(qp->req.una_psn, w->first_psn);

		if (w->acked || w->status != QRNIC_WC_SUCCESS)
			continue;
		if (off < 0)
			off = 0;
		if ((uint32_t)off >= w->npkts)
			continue;
		qp->req.cur = idx;
		if (w->wqe.opcode == QRNIC_WR_RDMA_READ)
			w->sent = 0;	/* re-request from done_bytes */
		else if (is_atomic(w->wqe.opcode))
			w->sent = 0;
		else
			w->sent = (uint32_t)off * mtu;
		qp->req.cur_psn = qrnic_psn_add(w->first_psn, (uint32_t)off);
		for (uint32_t j = idx + 1; j != qp->req.sq_next; j++) {
			struct qrnic_swqe *n = slot(qp, j);

			if (!n->acked)
				n->sent = 0;
		}
		return;
	}
	qp->req.cur = qp->req.sq_next;
	qp->req.cur_psn = qp->req.next_psn;
}

/* A loss (retry timeout, sequence NAK): halve the window, once per
 * episode -- until una_psn passes what had been sent when it began. */
void qrnic_req_cwnd_cut(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	struct qrnic_req *r = &qp->req;

	if (!d->cfg.loss_window)
		return;
	if (r->cc_recovering && qrnic_psn_diff(r->una_psn, r->cc_recover_psn) < 0)
		return;
	r->cc_recovering = true;
	r->cc_recover_psn = r->high_psn;
	r->cwnd = r->cwnd / 2 > QRNIC_CWND_MIN ? r->cwnd / 2 : QRNIC_CWND_MIN;
	r->cwnd_acc = 0;
	qrnic_stat_add(d, QRNIC_STAT_WINDOW_CUTS, 1);
	qrnic_trace(d, QRNIC_TR_WINDOW, qp->qpn, r->una_psn, r->cwnd, 0, 0);
}

/* npkts more packets acknowledged: one more packet of window per window. */
void qrnic_req_cwnd_grow(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t npkts)
{
	struct qrnic_req *r = &qp->req;

	qrnic_cc_ack(d, qp, npkts);
	if (r->cc_recovering && qrnic_psn_diff(r->una_psn, r->cc_recover_psn) >= 0)
		r->cc_recovering = false;
	if (r->cwnd >= QRNIC_MAX_UNACKED_PKTS)
		return;
	r->cwnd_acc += npkts;
	while (r->cwnd_acc >= r->cwnd && r->cwnd < QRNIC_MAX_UNACKED_PKTS) {
		r->cwnd_acc -= r->cwnd;
		r->cwnd++;
	}
	if (r->cwnd >= QRNIC_MAX_UNACKED_PKTS)
		r->cwnd_acc = 0;
	(void)d;
}

void qrnic_req_retry(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t reason)
{
	qrnic_trace(d, QRNIC_TR_RETRANSMIT, qp->qpn, qp->req.una_psn, reason, 0, 0);
	qrnic_req_rewind(d, qp);
	qrnic_qp_kick(d, qp);
}

/* Fail the oldest unacknowledged WQE (retry or RNR retry exhausted). */
void qrnic_req_fail_head(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t status, uint8_t verr)
{
	for (uint32_t idx = qp->req.sq_ci; idx != qp->req.sq_next; idx++) {
		struct qrnic_swqe *w = slot(qp, idx);

		if (!w->acked) {
			wqe_fail(w, status, verr);
			break;
		}
	}
	qrnic_req_stop_retry(d, qp);
	qrnic_req_complete(d, qp);
}

static const uint32_t rnr_timer_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
	163840, 245760, 327680, 491520,
};

uint64_t qrnic_rnr_timer_ns(uint8_t code)
{
	return (uint64_t)rnr_timer_us[code & 31] * 1000;
}

void qrnic_req_timer(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t kind)
{
	if (kind == QRNIC_EVK_RNR) {
		qp->req.rnr_wait = false;	/* whatever the state: the wait is over */
		if (qp->attr.qp_state == QRNIC_QPS_RTS || qp->attr.qp_state == QRNIC_QPS_SQD)
			qrnic_req_retry(d, qp, 2);
		return;
	}
	if (qp->attr.qp_state != QRNIC_QPS_RTS && qp->attr.qp_state != QRNIC_QPS_SQD)
		return;
	qp->req.timer_armed = false;
	if (!qrnic_req_outstanding(qp))
		return;
	qrnic_stat_add(d, QRNIC_STAT_RETRANSMIT_TIMEOUTS, 1);
	if (qp->req.retry_left == 0) {
		qrnic_req_fail_head(d, qp, QRNIC_WC_RETRY_EXC_ERR, QRNIC_VERR_RETRY);
		return;
	}
	qp->req.retry_left--;
	qrnic_req_cwnd_cut(d, qp);
	qrnic_req_retry(d, qp, 0);
}

/* ---- transmit ---------------------------------------------------------------- */
static uint8_t rc_opcode(uint8_t wr, bool first, bool last)
{
	bool imm = wr == QRNIC_WR_SEND_WITH_IMM || wr == QRNIC_WR_RDMA_WRITE_WITH_IMM;
	bool inv = wr == QRNIC_WR_SEND_WITH_INV;
	bool send = wr == QRNIC_WR_SEND || wr == QRNIC_WR_SEND_WITH_IMM || inv;

	if (send) {
		if (first && last)
			return inv ? QRNIC_OP_RC_SEND_ONLY_INV
				   : imm ? QRNIC_OP_RC_SEND_ONLY_IMM : QRNIC_OP_RC_SEND_ONLY;
		if (first)
			return QRNIC_OP_RC_SEND_FIRST;
		if (last)
			return inv ? QRNIC_OP_RC_SEND_LAST_INV
				   : imm ? QRNIC_OP_RC_SEND_LAST_IMM : QRNIC_OP_RC_SEND_LAST;
		return QRNIC_OP_RC_SEND_MIDDLE;
	}
	if (first && last)
		return imm ? QRNIC_OP_RC_WRITE_ONLY_IMM : QRNIC_OP_RC_WRITE_ONLY;
	if (first)
		return QRNIC_OP_RC_WRITE_FIRST;
	if (last)
		return imm ? QRNIC_OP_RC_WRITE_LAST_IMM : QRNIC_OP_RC_WRITE_LAST;
	return QRNIC_OP_RC_WRITE_MIDDLE;
}

/* Nothing more to start from the SQ until the host acts: none posted, the
 * QP not in RTS, or the SQ stopped on an error. */
static bool sq_idle(const struct qrnic_qp *qp)
{
	return qp->req.sq_next == qp->sq_pi || qp->attr.qp_state != QRNIC_QPS_RTS || qp->req.stopped;
}

static bool sq_window_full(const struct qrnic_qp *qp)
{
	return qp->req.sq_next - qp->req.sq_ci >= QRNIC_REQ_WINDOW;
}

/* No new WQE may be started now, as far as the SQ goes (the loss window is
 * checked apart). */
static bool sq_fetch_blocked(const struct qrnic_qp *qp)
{
	return sq_idle(qp) || sq_window_full(qp);
}

/* A READ/ATOMIC response or the ACK of an AckReq is still to come: the last
 * AckReq went out in [una, high). */
static bool ack_coming(const struct qrnic_req *r)
{
	return r->rd_atomic_out || (qrnic_psn_diff(r->ackreq_psn, r->una_psn) >= 0 &&
				    qrnic_psn_diff(r->high_psn, r->ackreq_psn) > 0);
}

/* AckReq every 64 packets, or every half window when the loss window is
 * smaller, so that ACKs keep a cut window moving. */
static uint32_t ackreq_interval(const struct qrnic_qp *qp)
{
	uint32_t half = qp->req.cwnd / 2 ? qp->req.cwnd / 2 : 1;

	return half < QRNIC_ACKREQ_INTERVAL ? half : QRNIC_ACKREQ_INTERVAL;
}

/*
 * AckReq on the last packet of a SEND/WRITE message (spec 12.1) when
 * somebody waits for its acknowledgement: the WQE is signaled (its CQE), or
 * it is the last WQE fetched and the requester cannot fetch another now
 * (none posted, the QP no longer in RTS, the SQ stopped: nothing else
 * would ask before the requester goes idle; or the WQE window full while
 * no earlier AckReq or READ/ATOMIC is unanswered: nothing else would
 * reopen it), or
 * QRNIC_ACKREQ_WQES messages went without one (their SQ slots).  An
 * unsignaled message in a stream is acknowledged by a later ACK, as ACKs
 * are cumulative: a stream of unsignaled 4 KiB WRITEs (perftest's default,
 * one CQE per 100 WQEs) then costs one ACK per 16 messages, not one each.
 * (A QP moved to SQD after such a packet left waits for the retry timer:
 * the resent packet then asks.)
 */
static bool last_wants_ack(struct qrnic_qp *qp, const struct qrnic_swqe *w)
{
	if (++qp->req.msgs_since_ackreq >= QRNIC_ACKREQ_WQES)
		return true;
	if (w->wqe.flags & QRNIC_WQE_F_SIGNALED)
		return true;
	if (qp->req.cur + 1 != qp->req.sq_next)
		return false;
	if (sq_idle(qp))
		return true;
	/* Only the full WQE window blocks, with more WQEs posted behind it:
	 * an ACK or response already coming reopens it, and what is sent then
	 * asks in turn. */
	return sq_window_full(qp) && !ack_coming(&qp->req);
}

/* AckReq on a SEND or WRITE packet at psn: its message's last packet when
 * somebody waits for it (last_wants_ack), every ackreq_interval packets,
 * and the packet that fills the loss window. */
static bool write_ackreq(struct qrnic_qp *qp, const struct qrnic_swqe *w, uint32_t psn,
			 bool last)
{
	return (last && last_wants_ack(qp, w)) ||
	       ++qp->req.pkts_since_ackreq >= ackreq_interval(qp) ||
	       qrnic_psn_diff(qrnic_psn_add(psn, 1), qp->req.una_psn) >= (int32_t)qp->req.cwnd;
}

/* The packet at psn asks for an ACK: the counts start again from it. */
static void ackreq_sent(struct qrnic_qp *qp, uint32_t psn)
{
	qp->req.pkts_since_ackreq = qp->req.msgs_since_ackreq = 0;
	qp->req.ackreq_psn = psn;
}

static void count_resent(struct qrnic_dev *d, const struct qrnic_qp *qp, uint32_t psn)
{
	if (qrnic_psn_diff(psn, qp->req.high_psn) < 0)
		qrnic_stat_add(d, QRNIC_STAT_RETRANSMITTED_PACKETS, 1);
}

/* cur_psn moved past what was sent: the highest PSN sent follows it */
static void psn_high(struct qrnic_qp *qp)
{
	if (qrnic_psn_diff(qp->req.cur_psn, qp->req.high_psn) > 0)
		qp->req.high_psn = qp->req.cur_psn;
}

/* Send the next packet of WQE w.  Returns false if the WQE failed. */
static bool send_one(struct qrnic_dev *d, struct qrnic_qp *qp, struct qrnic_swqe *w)
{
	uint8_t *payload = NULL;
	struct qrnic_pkt p QRNIC_NOINIT;	/* zeroed below */
	uint32_t mtu = path_mtu(d, qp);
	uint32_t len = 0;
	int verr;

	/* a vector loop, not `rep stosq', in both builds (the memset
	 * strategy of meson.build and hw/meson.build) */
	memset(&p, 0, sizeof(p));
	if (connected(qp))
		verr = qrnic_pkt_fill_av(d, &p, &qp->attr.av, qp);
	else {
		struct qrnic_ah *ah = qrnic_ah_get(d, w->wqe.ah);

		verr = ah ? qrnic_pkt_fill_av(d, &p, &ah->av, qp) : QRNIC_VERR_BAD_AH;
	}
	if (verr != QRNIC_VERR_NONE) {
		wqe_fail(w, QRNIC_WC_LOC_QP_OP_ERR, (uint8_t)verr);
		return false;
	}
	p.dqpn = connected(qp) ? qp->attr.dest_qpn : w->wqe.remote_qpn & QRNIC_PSN_MASK;
	p.psn = qp->req.cur_psn;
	if (qrnic_timed(d))	/* payload reads were issued with the WQE */
		d->tm_t = max64(qrnic_now(d), w->tm_issue);

	switch (w->wqe.opcode) {
	case QRNIC_WR_RDMA_READ: {
		uint32_t done = w->done_bytes;

		p.opcode = QRNIC_OP_RC_READ_REQ;
		p.reth_va = w->wqe.remote_addr + done;
		p.reth_rkey = w->wqe.rkey;
		p.reth_len = w->total_len - done;
		p.ackreq = true;
		w->sent = w->total_len ? w->total_len : 1;
		break;
	}
	case QRNIC_WR_ATOMIC_CMP_AND_SWP:
	case QRNIC_WR_ATOMIC_FETCH_AND_ADD:
		p.opcode = w->wqe.opcode == QRNIC_WR_ATOMIC_CMP_AND_SWP ? QRNIC_OP_RC_CMP_SWAP
									 : QRNIC_OP_RC_FETCH_ADD;
		p.atomic_va = w->wqe.remote_addr;
		p.atomic_rkey = w->wqe.rkey;
		p.atomic_swap_add = w->wqe.opcode == QRNIC_WR_ATOMIC_CMP_AND_SWP ? w->wqe.swap
										  : w->wqe.compare_add;
		p.atomic_cmp = w->wqe.compare_add;
		p.ackreq = true;
		w->sent = 8;
		break;
	default: {
		bool first = w->sent == 0;
		bool last;

		len = w->total_len - w->sent;
		if (len > mtu)
			len = mtu;
		last = w->sent + len >= w->total_len;
		if (!connected(qp)) {
			p.opcode = w->wqe.opcode == QRNIC_WR_SEND_WITH_IMM ? QRNIC_OP_UD_SEND_ONLY_IMM
									   : QRNIC_OP_UD_SEND_ONLY;
			p.deth_qkey = (w->wqe.remote_qkey & 0x80000000u) ? qp->attr.qkey
									 : w->wqe.remote_qkey;
			p.deth_sqpn = qp->qpn;
		} else {
			p.opcode = rc_opcode(w->wqe.opcode, first, last);
			if (qp->type == QRNIC_QPT_UC)	/* the same, transport 001 */
				p.opcode |= QRNIC_OP_UC_SEND_FIRST;
			else if (qp->type == QRNIC_QPT_XRC_INI)	/* transport 101 */
				p.opcode |= QRNIC_OP_XRC;
			if (first && (w->wqe.opcode == QRNIC_WR_RDMA_WRITE ||
				      w->wqe.opcode == QRNIC_WR_RDMA_WRITE_WITH_IMM)) {
				p.reth_va = w->wqe.remote_addr;
				p.reth_rkey = w->wqe.rkey;
				p.reth_len = w->total_len;
			}
		}
		if (len) {
			/* straight into the frame, where the payload goes */
			payload = qrnic_tx_payload(d, &p);
			if (w->wqe.flags & QRNIC_WQE_F_INLINE)
				memcpy(payload, w->inline_data + w->sent, len);
			else {
				verr = qrnic_sgl_read(d, qp->pdn, w->sge, w->wqe.num_sge, w->sent,
						      payload, len);
				if (verr != QRNIC_VERR_NONE) {
					wqe_fail(w, wc_status_for(verr), (uint8_t)verr);
					return false;
				}
			}
		}
		if (last) {
			p.imm = w->wqe.imm_data;
			p.ieth_rkey = w->wqe.inv_key;	/* SEND_WITH_INV: the key */
			p.se = !!(w->wqe.flags & QRNIC_WQE_F_SOLICITED);
		}
		p.ackreq = write_ackreq(qp, w, p.psn, last);
		w->sent += len;
		if (!len)
			w->sent = w->total_len;	/* zero-length message: one packet */
		if (last)
			w->sent = w->total_len;
		break;
	}
	}
	if (qp->type == QRNIC_QPT_XRC_INI) {	/* READ and atomics too; XRCETH */
		p.opcode |= QRNIC_OP_XRC;
		p.xrc_srqn = w->wqe.xrc_srqn & QRNIC_PSN_MASK;
	}
	if (p.ackreq)
		ackreq_sent(qp, p.psn);
	if (!qrnic_qp_rc(qp))
		p.ackreq = false;
	count_resent(d, qp, p.psn);
	if (qrnic_timed(d)) {	/* packets of a QP leave in order */
		d->tm_t = max64(d->tm_t, qp->tm_pkt);
		d->tm_cycles = d->tm.p.req_pkt_cycles;
		if (qp->cc.active)	/* the rate limiter (cc.c) */
			qrnic_cc_pace(d, qp, &d->tm_t,
				      (uint32_t)qrnic_wire_frame_len(p.ipv6, p.opcode, len));
	}
	qrnic_send_pkt(d, &p, payload, len);
	if (qrnic_timed(d)) {
		qp->tm_pkt = d->tm_t;
		if (qrnic_cc_algo_of(d, qp) && p.ackreq)	/* RTT-based algorithms time it: */
			qrnic_cc_sent(d, qp, p.psn);	/* its ACK is not coalesced */
	}
	/* A READ request occupies the PSNs of all its response packets. */
	if (w->wqe.opcode == QRNIC_WR_RDMA_READ)
		qp->req.cur_psn = qrnic_psn_add(w->first_psn, w->npkts);
	else
		qp->req.cur_psn = qrnic_psn_add(qp->req.cur_psn, 1);
	psn_high(qp);
	return true;
}

/* What send_one does for a train's next WRITE packet of len bytes at psn
 * besides building it: its AckReq (asked for and recorded), the WQE's
 * progress, the resend count.  Returns whether it asks for an ACK; *last:
 * whether it ends the message. */
static bool train_pkt_sent(struct qrnic_dev *d, struct qrnic_qp *qp, struct qrnic_swqe *w,
			   uint32_t psn, uint32_t len, bool *last)
{
	bool ackreq;

	*last = w->sent + len >= w->total_len;
	ackreq = write_ackreq(qp, w, psn, *last);
	if (ackreq)
		ackreq_sent(qp, psn);
	w->sent = *last ? w->total_len : w->sent + len;
	count_resent(d, qp, psn);
	return ackreq;
}

/*
 * The next packets of an RC WRITE whose packets before them in this step
 * make the train being built (net.c): what send_one does for each, without
 * the packet description, headers and frame buffer that the train does not
 * keep (it carries its first packet's headers and, per packet, a payload
 * by reference, an opcode bit and an AckReq bit).  Untimed and untraced,
 * as every train is.  Returns how many packets it sent, at most budget;
 * 0, having done nothing, where send_one is to send the packet: not such
 * a packet (a WRITE_LAST_IMM does not join a train), or its payload not
 * one run of host memory by reference (send_one then copies it, or fails
 * the WQE with its error).
 *
 * As many packets as the train has room for, the step's budget and the
 * window allow go at once, their payloads one run of host memory
 * translated and mapped once (qrnic_sgl_map_run; a segmentation offload
 * inside the model): per packet, only its AckReq, its PSN and its place
 * on the train.  The sender's per-packet work was 22.7-23.9 % of the QEMU
 * main loop moving a T1 stream of 1 MiB WRITEs, 18.8-21.9 % with one
 * packet at a time on the train, ~10 % of the loop the SGE's translation
 * and mapping per packet (perf, docs/timing.md 5.6).  A payload that is not
 * such a run (pages that do not follow on, several SGEs, rate limiting)
 * goes one packet at a time, by reference if it can (qrnic_train_read).
 */
static uint32_t train_next(struct qrnic_dev *d, struct qrnic_qp *qp, struct qrnic_swqe *w,
			   uint32_t budget)
{
	uint32_t left = w->total_len - w->sent, psn = qp->req.cur_psn;
	uint32_t mtu, len, room, want, run, n, off, bits = 0;
	const uint8_t *src;
	bool last, ackreq, se;

	if (!d->train_buf || qp->type != QRNIC_QPT_RC || !w->sent ||
	    (w->wqe.flags & QRNIC_WQE_F_INLINE) ||
	    (w->wqe.opcode != QRNIC_WR_RDMA_WRITE &&
	     w->wqe.opcode != QRNIC_WR_RDMA_WRITE_WITH_IMM) ||
	    !qrnic_train_continues(d, qp, psn))
		return 0;
	mtu = path_mtu(d, qp);
	/* the packets it may send now: the train's room, the budget, the
	 * window (the caller checked it for the first), none rate limited */
	room = qrnic_train_room(d);
	if (room > budget)
		room = budget;
	if (qp->cc.active || d->cfg.rp_port_hold) {
		room = 1;
	} else {
		int32_t win = (int32_t)qp->req.cwnd - qrnic_psn_diff(psn, qp->req.una_psn);

		if (win < (int32_t)room)
			room = win > 1 ? (uint32_t)win : 1;
	}
	want = (uint64_t)room * mtu < left ? room * mtu : left;
	if (want == left && w->wqe.opcode != QRNIC_WR_RDMA_WRITE)
		want = (left - 1) / mtu * mtu;	/* its LAST_IMM goes by send_one */
	run = room > 1 && want ? qrnic_sgl_map_run(d, qp->pdn, w->sge, w->wqe.num_sge, w->sent,
						   want, mtu, &src) : 0;
	if (!run) {	/* one packet, by reference if it is one run of host memory */
		len = left < mtu ? left : mtu;
		last = w->sent + len >= w->total_len;
		if (!len || (last && w->wqe.opcode != QRNIC_WR_RDMA_WRITE))
			return 0;
		if (!qrnic_train_read(d, qp->pdn, w->sge, w->wqe.num_sge, w->sent, len))
			return 0;
		ackreq = train_pkt_sent(d, qp, w, psn, len, &last);
		se = last && (w->wqe.flags & QRNIC_WQE_F_SOLICITED);
		qrnic_train_add(d, last ? QRNIC_OP_RC_WRITE_LAST : QRNIC_OP_RC_WRITE_MIDDLE, ackreq, se);
		qp->req.cur_psn = qrnic_psn_add(psn, 1);
		psn_high(qp);
		return 1;
	}
	/* what send_one does per packet, for each; then onto the train at once */
	for (n = 0, off = 0; off < run; n++, off += len) {	/* <= room packets */
		len = run - off < mtu ? run - off : mtu;
		if (train_pkt_sent(d, qp, w, psn, len, &last))
			bits |= 1u << n;
		psn = qrnic_psn_add(psn, 1);
	}
	qrnic_train_add_run(d, src, run, mtu, bits, last, last && (w->wqe.flags & QRNIC_WQE_F_SOLICITED));
	qp->req.cur_psn = psn;
	psn_high(qp);
	return n;
}

/* Run a REG_MR, LOCAL_INV or BIND_MW WQE (validated by fetch_wqe) now. */
static void exec_local(struct qrnic_dev *d, struct qrnic_qp *qp, struct qrnic_swqe *w)
{
	static const char *const name[] = {
		[QRNIC_WR_LOCAL_INV] = "LOCAL_INV", [QRNIC_WR_BIND_MW] = "BIND_MW",
		[QRNIC_WR_REG_MR] = "REG_MR",
	};
	uint8_t op = w->wqe.opcode;
	struct qrnic_reg_mr_wqe r;
	struct qrnic_bind_mw_wqe b;
	uint32_t key;
	int verr;

	switch (op) {
	case QRNIC_WR_REG_MR:
		memcpy(&r, &w->wqe, sizeof(r));
		key = r.key;
		verr = qrnic_mr_fast_reg(d, qp->pdn, &r);
		break;
	case QRNIC_WR_BIND_MW:
		memcpy(&b, &w->wqe, sizeof(b));
		key = b.key;
		verr = qrnic_mw_bind(d, qp, &b);
		break;
	default:
		key = w->wqe.inv_key;
		verr = qrnic_mr_invalidate(d, qp->pdn, qp->qpn, key);
		break;
	}
	if (verr != QRNIC_VERR_NONE) {
		qrnic_guest_err(d, err_mr_wqe, (qp->qpn, w->sq_index, op, key, (uint32_t)verr),
				"qrnic: QP %u %s WQE %u of key 0x%x failed (vendor error %d)",
				  qp->qpn, name[op], w->sq_index, key, verr);
		/* IBTA: a bind fails with a memory window bind error */
		wqe_fail(w, op == QRNIC_WR_BIND_MW ? QRNIC_WC_MW_BIND_ERR : QRNIC_WC_LOC_QP_OP_ERR,
			 (uint8_t)verr);
		return;
	}
	w->acked = true;
}

static bool wqe_fully_sent(const struct qrnic_qp *qp, const struct qrnic_swqe *w)
{
	return (uint32_t)qrnic_psn_diff(qp->req.cur_psn, w->first_psn) >= w->npkts;
}

static bool req_step(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t budget)
{
	bool rc = qrnic_qp_rc(qp);
	bool sent_any = false;

	if (!qp->req.win || qp->req.rnr_wait)
		return false;
	while (budget) {
		struct qrnic_swqe *w;
		uint32_t sent;

		if (qp->attr.qp_state == QRNIC_QPS_ERR)
			return false;
		if (qp->req.cur == qp->req.sq_next) {
			/* Start a new WQE? */
			if (sq_fetch_blocked(qp))
				break;
			if (rc && qrnic_psn_diff(qp->req.next_psn, qp->req.una_psn) >=
				  (int32_t)qp->req.cwnd)
				break;
			w = slot(qp, qp->req.sq_next);
			/* Fetched once the doorbell is decoded.  The fetch unit
			 * does not wait for the packets of the WQEs before it
			 * (d->tm_t is where their payload left it): fetches go
			 * ahead, within the WQE window, and w->tm_issue keeps
			 * the WQEs in order. */
			if (qrnic_timed(d))
				d->tm_t = max64(qrnic_now(d), qp->tm_db);
			fetch_wqe(d, qp, qp->req.sq_next);
			if (qrnic_timed(d)) {
				d->tm_t += qrnic_tm_cycles(&d->tm, d->tm.p.wqe_cycles);
				w->tm_issue = max64(d->tm_t, qp->tm_req);
				qp->tm_req = w->tm_issue;
			}
			if (w->status == QRNIC_WC_SUCCESS && rc) {
				if ((w->wqe.flags & QRNIC_WQE_F_FENCE) && qp->req.rd_atomic_out)
					break;	/* re-fetched when the fence clears */
				if (w->rd_atomic && qp->req.rd_atomic_out >=
				    (qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1))
					break;
			}
			if (w->status == QRNIC_WC_SUCCESS && is_local(w->wqe.opcode)) {
				/* LOCAL_INV waits for every earlier WQE to complete:
				 * a retransmission or a READ response of one of them
				 * may still need the key (re-fetched then). */
				if (w->wqe.opcode == QRNIC_WR_LOCAL_INV &&
				    qp->req.sq_ci != qp->req.sq_next)
					break;
				exec_local(d, qp, w);
			}
			w->first_psn = qp->req.next_psn;
			if (w->status == QRNIC_WC_SUCCESS) {
				qp->req.next_psn = qrnic_psn_add(qp->req.next_psn, w->npkts);
				if (w->rd_atomic) {
					qp->req.rd_atomic_out++;
					w->counted = true;
				}
			} else {
				w->npkts = 0;
			}
			qp->req.sq_next++;
			if (w->status == QRNIC_WC_SUCCESS)
				qp->req.cur_psn = w->first_psn;	/* it starts now */
			if (w->status == QRNIC_WC_SUCCESS && w->acked) {
				/* done at once (a memory management WQE):
				 * completes in order behind the WQEs before it */
				qp->req.cur = qp->req.sq_next;
				qrnic_req_complete(d, qp);
				continue;
			}
			if (w->status != QRNIC_WC_SUCCESS) {
				qp->req.stopped = true;
				qp->req.cur = qp->req.sq_next;
				qrnic_req_complete(d, qp);
				continue;
			}
		}
		w = slot(qp, qp->req.cur);
		if (w->acked || w->status != QRNIC_WC_SUCCESS) {
			qp->req.cur++;
			continue;
		}
		if (rc && qrnic_psn_diff(qp->req.cur_psn, qp->req.una_psn) >= (int32_t)qp->req.cwnd)
			break;
		if ((qp->cc.active || d->cfg.rp_port_hold) && qrnic_cc_hold_slow(d, qp))
			break;	/* the rate limiter services the QP again (cc.c) */
		sent = train_next(d, qp, w, budget);
		if (!sent && !send_one(d, qp, w)) {
			qp->req.stopped = true;
			qp->req.cur++;
			qrnic_req_complete(d, qp);
			continue;
		}
		sent_any = true;
		budget -= sent ? sent : 1;
		if (wqe_fully_sent(qp, w)) {
			qp->req.cur++;
			if (qp->req.cur != qp->req.sq_next)
				qp->req.cur_psn = slot(qp, qp->req.cur)->first_psn;
			else
				qp->req.cur_psn = qp->req.next_psn;
			if (!rc) {
				w->acked = true;	/* UD: done once on the wire */
				qrnic_req_complete(d, qp);
			}
		}
	}
	if (rc && sent_any && !qp->req.timer_armed)
		qrnic_req_arm_retry(d, qp);
	/* More to do now if a WQE is mid-message or more are posted and
	 * nothing above is blocking. */
	return budget == 0;
}

bool qrnic_req_step(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t budget)
{
	bool more = req_step(d, qp, budget);

	qrnic_train_flush(d);	/* a train leaves with the step (net.c) */
	return more;
}
