/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: QP life cycle, doorbells, flushing and the per-QP
 * service step that the work loop runs.
 */
#include <stddef.h>
#include <stdlib.h>

#include "qrnic_internal.h"

/* The send window (QRNIC_REQ_WINDOW private WQE copies, 52 KiB) is
 * allocated at the QP's first SQ doorbell, not at CREATE_QP: a QP that
 * only receives, or is never used, costs its table entry alone (the
 * road to ConnectX-sized QP counts, issue Verbs I item 5). */
int qrnic_qp_init_state(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->resp, 0, sizeof(qp->resp));
	memset(&qp->cc, 0, sizeof(qp->cc));
	qp->sq_pi = qp->rq_pi = 0;
	return 0;
}

static bool req_window(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	if (!qp->req.win)
		qp->req.win = calloc(QRNIC_REQ_WINDOW, sizeof(*qp->req.win));
	return qp->req.win != NULL;
}

void qrnic_qp_fini_state(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	qrnic_work_remove(d, qp);
	qrnic_qlist_remove(d, &d->flushq, QRNIC_QL_FLUSH, qp);
	free(qp->req.win);
	qp->req.win = NULL;
	free(qp->bf);
	qp->bf = NULL;
	qrnic_req_stop_timers(d, qp);	/* armed events become stale */
}

static void clear_transport(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	struct qrnic_swqe *win = qp->req.win;

	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->resp, 0, sizeof(qp->resp));
	qp->req.win = win;
	if (qp->bf)
		qp->bf->valid = false;
	qrnic_req_stop_timers(d, qp);
	memset(&qp->cc, 0, sizeof(qp->cc));
	qp->sq_pi = qp->rq_pi = 0;
}

static void post_flush_cqe(struct qrnic_dev *d, struct qrnic_qp *qp, bool send, uint64_t wr_id,
			   uint32_t index, uint8_t opcode)
{
	struct qrnic_cq *cq = qrnic_cq_get(d, send ? qp->send_cqn : qp->recv_cqn);
	struct qrnic_cqe cqe;

	if (!cq)
		return;
	memset(&cqe, 0, sizeof(cqe));
	cqe.wr_id = wr_id;
	cqe.qpn = qp->qpn;
	cqe.status = QRNIC_WC_WR_FLUSH_ERR;
	cqe.vendor_err = QRNIC_VERR_FLUSH;
	cqe.opcode = opcode;
	cqe.flags = send ? QRNIC_CQE_F_SEND : 0;
	cqe.wqe_index = (uint16_t)index;
	qrnic_cq_post(d, cq, &cqe);
}

static uint8_t wc_opcode(uint8_t wr_opcode)
{
	switch (wr_opcode) {
	case QRNIC_WR_RDMA_WRITE:
	case QRNIC_WR_RDMA_WRITE_WITH_IMM:	return QRNIC_WC_OP_RDMA_WRITE;
	case QRNIC_WR_RDMA_READ:		return QRNIC_WC_OP_RDMA_READ;
	case QRNIC_WR_ATOMIC_CMP_AND_SWP:	return QRNIC_WC_OP_COMP_SWAP;
	case QRNIC_WR_ATOMIC_FETCH_AND_ADD:	return QRNIC_WC_OP_FETCH_ADD;
	default:				return QRNIC_WC_OP_SEND;
	}
}

/* Complete every posted WQE of both queues with WR_FLUSH_ERR. */
static void qp_flush_now(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	uint32_t sq_depth = 1u << qp->sq_log_depth;
	uint32_t rq_depth = qp->rq_addr ? 1u << qp->rq_log_depth : 0;

	/* the WQEs posted with no doorbell flush too: the flag goes first, so
	 * that later posts ring (and flush at once), then the index */
	qrnic_sq_dbrec_clear(d, qp);

	/* At most a ring's worth of each queue: pi - ci <= depth always holds
	 * (the doorbells check it, and no engine may move a consumer index
	 * past its producer).  Were it ever broken, the loops below would run
	 * up to 2^32 times and hang the host: count it as a self-check failure
	 * (the fuzzers and tests check them) and flush nothing instead. */
	if (qp->sq_pi - qp->req.sq_ci > sq_depth) {
		d->selfcheck_failures++;
		qp->req.sq_ci = qp->req.sq_next = qp->sq_pi;
	}
	if (rq_depth && qp->rq_pi - qp->resp.rq_ci > rq_depth) {
		d->selfcheck_failures++;
		qp->resp.rq_ci = qp->rq_pi;
	}
	/* Send queue: WQEs in the window have private copies; the rest are
	 * read once for their wr_id. */
	while (qp->req.sq_ci != qp->sq_pi) {
		uint32_t idx = qp->req.sq_ci;
		uint64_t wr_id = 0;
		uint8_t op = 0;

		if (qp->req.win && idx != qp->req.sq_next) {
			const struct qrnic_swqe *w = &qp->req.win[idx % QRNIC_REQ_WINDOW];

			wr_id = w->wqe.wr_id;
			op = w->wqe.opcode;
		} else {
			struct qrnic_send_wqe wqe;
			uint64_t a = qrnic_ring_at(qp->sq_addr, qp->sq_pl,
						   (uint64_t)(idx & (sq_depth - 1)) << qp->sq_wqe_shift);

			if (qrnic_dma_read(d, a, &wqe, sizeof(wqe)) == 0) {
				wr_id = wqe.wr_id;
				op = wqe.opcode;
			}
		}
		if (idx == qp->req.sq_next)
			qp->req.sq_next++;
		qp->req.sq_ci++;
		post_flush_cqe(d, qp, true, wr_id, idx, wc_opcode(op));
	}
	qp->req.cur = qp->req.sq_next = qp->req.sq_ci;
	qp->req.rd_atomic_out = 0;

	if (qp->resp.recv_active && qp->type == QRNIC_QPT_XRC_TGT) {
		qrnic_xrc_flush_recv(d, qp);	/* to the CQ of the XRC SRQ */
	} else if (qp->resp.recv_active) {
		post_flush_cqe(d, qp, false, qp->resp.rwqe.wr_id, qp->resp.rq_ci, QRNIC_WC_OP_RECV);
		qp->resp.recv_active = false;
		qp->resp.rq_ci++;
	}
	qrnic_rq_dbrec_read(d, qp);	/* WQEs posted with no doorbell flush too */
	while (rq_depth && qp->resp.rq_ci != qp->rq_pi) {
		uint32_t idx = qp->resp.rq_ci;
		struct qrnic_recv_wqe rw;
		uint64_t a = qrnic_ring_at(qp->rq_addr, qp->rq_pl,
					   (uint64_t)(idx & (rq_depth - 1)) << qp->rq_wqe_shift);

		if (qrnic_dma_read(d, a, &rw, sizeof(rw)) != 0)
			rw.wr_id = 0;
		qp->resp.rq_ci++;
		post_flush_cqe(d, qp, false, rw.wr_id, idx, QRNIC_WC_OP_RECV);
	}
	qp->resp.write_active = false;
	for (uint32_t i = 0; i < QRNIC_MAX_RD_ATOMIC; i++)
		qp->resp.rsrc[i].pending = false;
	qp->resp.ack_pending = false;
	qrnic_req_stop_timers(d, qp);
}

/* Flush a QP's queues (qp_flush_now), iteratively: a flush CQE that
 * overruns another CQ moves that CQ's QPs to error, and their flushes are
 * queued on d->flushq and done here by the outermost call, one after the
 * other.  (Done recursively, a guest that chained QPs across CQs it made
 * unwritable drove the recursion as deep as max_qp and overflowed the
 * host's stack.)  Each QP is on the queue at most once, so the drain ends
 * after at most max_qp flushes. */
void qrnic_qp_flush(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	qrnic_qlist_push(d, &d->flushq, QRNIC_QL_FLUSH, qp);
	if (d->flushing)
		return;
	d->flushing = true;
	while ((qp = qrnic_qlist_pop(d, &d->flushq, QRNIC_QL_FLUSH)))
		qp_flush_now(d, qp);
	d->flushing = false;
}

void qrnic_qp_set_state(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t state)
{
	uint8_t old = qp->attr.qp_state;

	qp->attr.qp_state = state;
	if (old != state)
		qrnic_trace(d, QRNIC_TR_QP_STATE, qp->qpn, 0, old, state, 0);
	switch (state) {
	case QRNIC_QPS_RESET:
		qrnic_work_remove(d, qp);
		clear_transport(d, qp);
		qrnic_sq_dbrec_clear(d, qp);	/* the driver zeroes the index (8.6.2) */
		break;
	case QRNIC_QPS_RTR:
		if (old == QRNIC_QPS_INIT) {
			qp->resp.epsn = qp->attr.rq_psn & QRNIC_PSN_MASK;
			qp->resp.msn = 0;
		}
		qrnic_qp_kick(d, qp);
		break;
	case QRNIC_QPS_RTS:
		if (old == QRNIC_QPS_RTR) {
			uint32_t psn = qp->attr.sq_psn & QRNIC_PSN_MASK;

			qp->req.next_psn = qp->req.cur_psn = qp->req.una_psn = psn;
			qp->req.high_psn = psn;
			qrnic_cc_qp_start(d, qp);
			qp->req.cwnd = QRNIC_MAX_UNACKED_PKTS;
			qp->req.cwnd_acc = 0;
			qp->req.cc_recovering = false;
			qp->req.rnr_echo = false;
		}
		qp->req.retry_left = qp->attr.retry_cnt;
		qp->req.rnr_left = qp->attr.rnr_retry;
		qrnic_qp_kick(d, qp);
		break;
	case QRNIC_QPS_ERR:
		qrnic_qp_flush(d, qp);
		/* it takes no more WQEs from its SRQ (IBTA 11.6.3.3: the
		 * driver may now destroy it without losing a receive) */
		if (old != QRNIC_QPS_ERR && (qp->srqn || qp->type == QRNIC_QPT_XRC_TGT))
			qrnic_async_event(d, QRNIC_EV_QP_LAST_WQE_REACHED, qp->qpn, 0);
		break;
	case QRNIC_QPS_SQD:
		/* Already drained (nothing in flight): say so now. */
		if (qp->req.sq_ci == qp->req.sq_next && qp->attr.en_sqd_async_notify) {
			qp->attr.en_sqd_async_notify = 0;
			qrnic_async_event(d, QRNIC_EV_SQ_DRAINED, qp->qpn, 0);
		}
		qrnic_qp_kick(d, qp);
		break;
	default:
		qrnic_qp_kick(d, qp);
		break;
	}
}

void qrnic_qp_error(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t async_ev)
{
	if (qp->attr.qp_state == QRNIC_QPS_ERR)
		return;
	qrnic_qp_set_state(d, qp, QRNIC_QPS_ERR);
	if (async_ev != 0xff)
		qrnic_async_event(d, async_ev, qp->qpn, 0);
}

/*
 * Doorbell batching may apply (qrnic_dev_set_db_batch): the host asked for
 * it, the doorbell came from outside a run (within one there is no wake-up
 * to save: the run goes on) and no timing profile models the doorbell's
 * own cost.
 */
static bool db_batch_applies(const struct qrnic_dev *d)
{
	return d->db_batch && !d->in_run && !d->tm.enabled;
}

/*
 * An SQ doorbell that rides on the acknowledgement: the QP waits for an
 * ACK, NAK or its retransmission timer, each of which kicks it
 * (completer.c, qrnic_req_retry), so its new WQEs need no run of their own.
 */
static bool sq_db_rides_on_ack(const struct qrnic_dev *d, const struct qrnic_qp *qp)
{
	const struct qrnic_req *r = &qp->req;

	return db_batch_applies(d) &&
	       qp->attr.qp_state == QRNIC_QPS_RTS && r->timer_armed &&
	       r->una_psn != r->high_psn && !r->rnr_wait && !r->stopped;
}

/*
 * An RQ doorbell needs no run: in RTR and RTS the receive WQEs are taken
 * when messages arrive, and a run has nothing to do with them; only a QP
 * in ERR needs one, to flush them (qp_service).
 */
static bool rq_db_needs_no_run(const struct qrnic_dev *d, const struct qrnic_qp *qp)
{
	return db_batch_applies(d) &&
	       (qp->attr.qp_state == QRNIC_QPS_RTR || qp->attr.qp_state == QRNIC_QPS_RTS);
}

bool qrnic_qp_doorbell(struct qrnic_dev *d, struct qrnic_qp *qp, bool sq, uint32_t pi,
		       uint32_t bf_bytes)
{
	uint32_t depth;
	uint32_t ci;

	if (sq) {
		if (!qp->sq_addr) {	/* an XRC TGT QP */
			qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
			qrnic_guest_err(d, err_qp_db_no_sq, (qp->qpn),
					"qrnic: SQ doorbell for QP %u which has no SQ", qp->qpn);
			return false;
		}
		depth = 1u << qp->sq_log_depth;
		ci = qp->req.sq_ci;
	} else {
		if (!qp->rq_addr) {
			qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
			qrnic_guest_err(d, err_qp_db_no_rq, (qp->qpn),
					"qrnic: RQ doorbell for QP %u which has no RQ", qp->qpn);
			return false;
		}
		depth = 1u << qp->rq_log_depth;
		ci = qp->resp.rq_ci;
	}
	/* A QP with an SQ record: a doorbell whose index the device already
	 * took from the record (a doorbell queued while a run read the record
	 * a later post wrote) is an old doorbell, not a bad one. */
	if (sq && qp->sq_dbrec && (int32_t)(qp->sq_pi - pi) > 0 && qp->sq_pi - pi <= depth)
		pi = qp->sq_pi;
	/* The producer may not lap entries the device has not completed, nor
	 * move backwards. */
	if (!qrnic_pi_ok(pi, ci, sq ? qp->sq_pi : qp->rq_pi, depth)) {
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
		qrnic_guest_err(d, err_qp_db_index, (qp->qpn, !sq, pi, ci, depth),
				"qrnic: QP %u %s producer index %u invalid (consumer %u, depth %u)",
				  qp->qpn, sq ? "SQ" : "RQ", pi, ci, depth);
		return false;
	}
	if (sq) {
		qp->sq_pi = pi;
		if (!req_window(d, qp)) {	/* host out of memory: the QP's WQEs flush */
			qrnic_guest_err(d, err_qp_no_memory, (qp->qpn),
					"qrnic: QP %u: no memory for its send window", qp->qpn);
			qrnic_qp_error(d, qp, QRNIC_EV_QP_FATAL);
			return false;
		}
		if (d->tm.enabled)
			qp->tm_db = qrnic_now(d) + (bf_bytes ? qrnic_tm_bf_write(&d->tm, bf_bytes) : 0) +
				    qrnic_tm_cycles(&d->tm, d->tm.p.doorbell_cycles);
	} else {
		qp->rq_pi = pi;
	}
	if (sq && sq_db_rides_on_ack(d, qp)) {
		d->db_batched++;
		return true;
	}
	if (!sq && rq_db_needs_no_run(d, qp)) {
		d->rq_db_quiet++;
		return true;
	}
	qrnic_qp_kick(d, qp);
	return true;
}

/*
 * A producer record's index, checked as a doorbell's would be: true with a
 * new *pi; false when the record holds the index the device has, or is
 * unreadable or holds one that laps the consumer or moves back (counted
 * and logged as an ignored doorbell).  sq: the SQ's record, else the RQ's.
 */
static bool dbrec_new_pi(struct qrnic_dev *d, struct qrnic_qp *qp, bool sq, uint32_t *pi)
{
	uint64_t addr = sq ? qp->sq_dbrec : qp->rq_dbrec;
	uint32_t ci = sq ? qp->req.sq_ci : qp->resp.rq_ci;
	uint32_t cur = sq ? qp->sq_pi : qp->rq_pi;
	uint32_t depth = 1u << (sq ? qp->sq_log_depth : qp->rq_log_depth);

	if (qrnic_dma_read(d, addr, pi, sizeof(*pi))) {
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
		if (sq)
			qrnic_guest_err(d, err_qp_sq_dbrec, (qp->qpn, addr, 0),
					"qrnic: QP %u SQ record at 0x%llx not readable", qp->qpn,
					(unsigned long long)addr);
		else
			qrnic_guest_err(d, err_qp_dbrec, (qp->qpn, addr),
					"qrnic: QP %u RQ producer record at 0x%llx not readable",
					qp->qpn, (unsigned long long)addr);
		return false;
	}
	if (*pi == cur)
		return false;
	if (qrnic_pi_ok(*pi, ci, cur, depth))
		return true;
	qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
	if (sq)
		qrnic_guest_err(d, err_qp_sq_dbrec_index, (qp->qpn, *pi, ci, depth),
				"qrnic: QP %u SQ record producer index %u invalid "
				"(consumer %u, depth %u)", qp->qpn, *pi, ci, depth);
	else
		qrnic_guest_err(d, err_qp_dbrec_index, (qp->qpn, *pi, ci, depth),
				"qrnic: QP %u RQ record producer index %u invalid "
				"(consumer %u, depth %u)", qp->qpn, *pi, ci, depth);
	return false;
}

bool qrnic_rq_dbrec_read(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	uint32_t pi;

	if (!qp->rq_dbrec || !qp->rq_addr)
		return qp->rq_addr && qp->resp.rq_ci != qp->rq_pi;
	if (dbrec_new_pi(d, qp, false, &pi))
		qp->rq_pi = pi;
	return qp->resp.rq_ci != qp->rq_pi;
}

/*
 * SQ records (ABI 1.11, spec 8.6.2): the driver writes the producer index
 * to the record, then reads the flag the device writes there, and rings
 * QRNIC_DB_SQ only if the flag is clear.  The device sets the flag only
 * while it is sure to service the QP again without a doorbell (then it
 * reads the index first), and before it clears it for good it reads the
 * index once more: each side writes, fences, then reads what the other
 * wrote (Dekker), so a post the device does not see in time rings.
 */
void qrnic_sq_dbrec_read(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	uint32_t pi;

	if (!qp->sq_dbrec || !qp->sq_addr || !dbrec_new_pi(d, qp, true, &pi))
		return;
	qp->sq_pi = pi;
	d->sq_rec_taken++;
	if (!req_window(d, qp)) {	/* host out of memory: the QP's WQEs flush */
		qrnic_guest_err(d, err_qp_no_memory, (qp->qpn),
				"qrnic: QP %u: no memory for its send window", qp->qpn);
		qrnic_qp_error(d, qp, QRNIC_EV_QP_FATAL);
	}
}

static void sq_dbrec_flag(struct qrnic_dev *d, struct qrnic_qp *qp, bool no_db)
{
	uint32_t flags = no_db ? QRNIC_SQ_DBREC_NO_DB : 0;

	qp->sq_rec_no_db = no_db;
	if (qrnic_dma_write(d, qp->sq_dbrec + offsetof(struct qrnic_sq_dbrec, flags), &flags,
			    sizeof(flags)))
		qrnic_guest_err(d, err_qp_sq_dbrec, (qp->qpn, qp->sq_dbrec, 1),
				"qrnic: QP %u SQ record at 0x%llx not writable", qp->qpn,
				  (unsigned long long)qp->sq_dbrec);
}

/* The flag cleared (if the device had set it), then the index read: what
 * was posted without a doorbell is known, and every later post rings. */
void qrnic_sq_dbrec_clear(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	if (!qp->sq_dbrec || !qp->sq_addr)
		return;
	if (qp->sq_rec_no_db) {
		sq_dbrec_flag(d, qp, false);
		/* the flag's write before the index's read (the driver fences
		 * between its index write and its flag read) */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	if (qp->attr.qp_state != QRNIC_QPS_RESET)
		qrnic_sq_dbrec_read(d, qp);
}

/* Whether the device will service the QP again with no doorbell: it has
 * more to do now (back on the work list), or it waits in RTS for an ACK,
 * a NAK or a timer of its own, each of which kicks it (completer.c,
 * qrnic_req_retry).  Never under a timing profile, which times doorbells. */
static bool sq_dbrec_will_look(const struct qrnic_dev *d, const struct qrnic_qp *qp, bool more)
{
	const struct qrnic_req *r = &qp->req;

	if (d->tm.enabled || qp->attr.qp_state != QRNIC_QPS_RTS)
		return false;
	if (more || r->rnr_wait)
		return true;
	return qrnic_qp_rc(qp) && r->timer_armed && r->una_psn != r->high_psn && !r->stopped;
}

/* After a service: the flag as the QP now is.  Returns whether the QP has
 * more to do (WQEs found when the flag was cleared). */
static bool sq_dbrec_settle(struct qrnic_dev *d, struct qrnic_qp *qp, bool more)
{
	bool want = sq_dbrec_will_look(d, qp, more);
	uint32_t pi = qp->sq_pi;

	if (want) {
		if (!qp->sq_rec_no_db)
			sq_dbrec_flag(d, qp, true);
		return false;
	}
	qrnic_sq_dbrec_clear(d, qp);
	return qp->sq_pi != pi && qp->valid && qp->attr.qp_state != QRNIC_QPS_ERR;
}

static bool qp_service(struct qrnic_dev *d, struct qrnic_qp *qp);

bool qrnic_qp_service(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	bool more;

	if (!qp->valid)
		return false;
	qrnic_tm_begin(d);
	if (qrnic_timed(d))
		qrnic_tm_xlate(d, QRNIC_TM_QPC, qp->qpn);
	if (qp->sq_dbrec)
		qrnic_sq_dbrec_read(d, qp);	/* WQEs posted with no doorbell */
	more = qp_service(d, qp);
	if (qp->sq_dbrec && qp->valid)
		more |= sq_dbrec_settle(d, qp, more);
	qrnic_tm_end(d);
	return more;
}

/*
 * Packets the requester may send in one service step: a train's worth
 * where its packets may go as trains (QRNIC_TRAIN_MAX; qrnic_trains_form,
 * the same test that starts a train, net.c), since a train leaves at the
 * end of the step; else the common budget.  Half as many trains for a T1
 * 1 MiB WRITE stream as with 16, so half the per-train work (the
 * hand-over, the taker's queue and dispatch, the step itself: a third off
 * those functions' share of the main loop, docs/timing.md 5.6; issue 23).  The packets of a QP go in
 * the same order either way; only how many go before the next QP is
 * served differs, and only where trains form (QEMU's default between its
 * ports, without a fault plan or a trace; not qrnic-sim's).
 */
static uint32_t req_budget(const struct qrnic_dev *d)
{
	return qrnic_trains_form(d) ? QRNIC_TRAIN_MAX : QRNIC_QP_PKT_BUDGET;
}

static bool qp_service(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	bool more = false;

	switch (qp->attr.qp_state) {
	case QRNIC_QPS_ERR:
		qrnic_qp_flush(d, qp);
		return false;
	case QRNIC_QPS_RTR:
		if (qrnic_qp_rc(qp))
			more = qrnic_resp_step(d, qp, QRNIC_QP_PKT_BUDGET);
		return more;
	case QRNIC_QPS_RTS:
	case QRNIC_QPS_SQD:
	case QRNIC_QPS_SQE:
		if (qrnic_qp_rc(qp))
			more = qrnic_resp_step(d, qp, QRNIC_QP_PKT_BUDGET);
		if (qp->attr.qp_state == QRNIC_QPS_ERR)
			return false;
		if (qp->attr.qp_state != QRNIC_QPS_SQE)
			more |= qrnic_req_step(d, qp, req_budget(d));
		return more;
	default:
		return false;
	}
}

void qrnic_qp_event(struct qrnic_dev *d, const struct qrnic_event *ev)
{
	struct qrnic_qp *qp = qrnic_qp_get(d, ev->id);

	if (!qp || !qrnic_req_event_current(qp, ev))
		return;		/* stale: QP gone, reset, or timer re-armed since */
	qrnic_req_timer(d, qp, ev->kind);
}
