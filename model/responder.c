/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model, responder: PSN checking and duplicate detection,
 * receive WQE consumption for SEND, rkey/PD/access/bounds checks for
 * WRITE, READ and ATOMIC, READ responses, exactly-once ATOMICs through the
 * responder resources, ACK coalescing, NAKs, and UD receive.
 */
#include "qrnic_internal.h"

#define AETH_ACK		0x1f	/* ACK, credits invalid */
#define AETH_RNR(t)		(0x20 | ((t) & 0x1f))
#define AETH_NAK_SEQ		0x60
#define AETH_NAK_INV_REQ	0x61
#define AETH_NAK_ACCESS		0x62
#define AETH_NAK_OP		0x63

static uint32_t path_mtu(const struct qrnic_qp *qp)
{
	uint32_t m = qrnic_mtu_bytes(qp->attr.path_mtu);

	return m ? m : 1024;
}

static void send_aeth(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t opcode, uint8_t syn,
		      uint32_t psn, const void *payload, uint32_t len, uint64_t orig)
{
	struct qrnic_pkt p;

	memset(&p, 0, sizeof(p));
	if (qrnic_pkt_fill_av(d, &p, &qp->attr.av, qp) != QRNIC_VERR_NONE) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		return;
	}
	p.opcode = opcode;
	if (qp->type == QRNIC_QPT_XRC_TGT)	/* XRC responses: transport 101, no XRCETH */
		p.opcode |= QRNIC_OP_XRC;
	p.dqpn = qp->attr.dest_qpn;
	p.psn = psn & QRNIC_PSN_MASK;
	p.aeth_syndrome = syn;
	p.aeth_msn = qp->resp.msn & QRNIC_PSN_MASK;
	p.atomic_ack_orig = orig;
	if (opcode == QRNIC_OP_RC_ACK)
		qrnic_trace(d, (syn >> 5) ? QRNIC_TR_NAK : QRNIC_TR_ACK, qp->qpn, p.psn, syn,
			    p.aeth_msn, 0);
	qrnic_send_pkt(d, &p, payload, len);
}

static void send_nak(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t syn, uint32_t psn)
{
	send_aeth(d, qp, QRNIC_OP_RC_ACK, syn, psn, NULL, 0, 0);
}

/* A fatal responder error: NAK it, complete a receive in progress with an
 * error, move the QP to ERROR with an async event. */
static bool rsrc_pending(const struct qrnic_qp *qp);

static void fatal_now(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t syn, uint32_t psn,
		      uint8_t async_ev)
{
	switch (syn) {
	case AETH_NAK_ACCESS:
		qrnic_stat_add(d, QRNIC_STAT_ACCESS_NAKS_SENT, 1);
		break;
	case AETH_NAK_INV_REQ:
		qrnic_stat_add(d, QRNIC_STAT_INV_REQ_NAKS_SENT, 1);
		break;
	}
	send_nak(d, qp, syn, psn);
	qrnic_qp_error(d, qp, async_ev);
}

/* A fatal responder error: complete a receive in progress with an error,
 * NAK it and move the QP to ERROR with an async event.  READ and ATOMIC
 * responses still queued for earlier PSNs leave first (PSN order); until
 * then new requests are dropped. */
static void complete_recv_error(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t status,
				uint8_t verr);

static void resp_fatal(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t syn, uint32_t psn,
		       uint8_t async_ev, uint8_t recv_status, uint8_t verr)
{
	if (qp->resp.recv_active && recv_status != QRNIC_WC_SUCCESS)
		complete_recv_error(d, qp, recv_status, verr);
	if (rsrc_pending(qp)) {
		qp->resp.fatal_pending = true;
		qp->resp.fatal_syn = syn;
		qp->resp.fatal_psn = psn;
		qp->resp.fatal_ev = async_ev;
		qp->resp.ack_pending = false;
		qrnic_qp_kick(d, qp);
		return;
	}
	fatal_now(d, qp, syn, psn, async_ev);
}

/* Copy the receive WQE at addr (ring index idx, slot of 'stride' bytes)
 * once into r and validate it against PD pdn.  Returns QRNIC_VERR_*; r is
 * filled as far as the WQE could be read (its wr_id for the CQE). */
int qrnic_rwqe_read(struct qrnic_dev *d, uint64_t addr, uint32_t stride, uint32_t pdn,
		    uint32_t idx, struct qrnic_rwqe *r)
{
	struct qrnic_recv_wqe hdr;

	memset(r, 0, offsetof(struct qrnic_rwqe, sge));
	r->rq_index = idx;
	r->pdn = pdn;
	if (qrnic_dma_read(d, addr, &hdr, sizeof(hdr)))
		return QRNIC_VERR_DMA;
	r->wr_id = hdr.wr_id;
	for (unsigned i = 0; i < sizeof(hdr.rsvd); i++)
		if (hdr.rsvd[i])
			return QRNIC_VERR_BAD_WQE;
	if (hdr.num_sge > QRNIC_MAX_SGE ||
	    sizeof(hdr) + hdr.num_sge * sizeof(struct qrnic_sge) > stride) {
		qrnic_stat_add(d, QRNIC_STAT_BAD_WQES, 1);
		qrnic_guest_err(d, err_bad_recv_wqe, (idx, addr, hdr.num_sge),
				"qrnic: bad receive WQE %u at 0x%llx (num_sge %u)", idx,
				  (unsigned long long)addr, hdr.num_sge);
		return QRNIC_VERR_BAD_WQE;
	}
	r->num_sge = hdr.num_sge;
	if (qrnic_dma_read(d, addr + sizeof(hdr), r->sge, r->num_sge * sizeof(struct qrnic_sge)))
		return QRNIC_VERR_DMA;
	return qrnic_sgl_check(d, pdn, r->sge, r->num_sge, QRNIC_ACCESS_LOCAL_WRITE,
			       &r->total_len);
}

/* The SRQ a QP's receives come from: its own, or for an XRC TGT QP the
 * XRC SRQ that the request being executed names; 0 = its RQ. */
static inline uint32_t recv_srqn(const struct qrnic_qp *qp)
{
	return qp->type == QRNIC_QPT_XRC_TGT ? qp->resp.xrc_srqn : qp->srqn;
}

/* Take the QP's next receive WQE -- from its RQ, or from its SRQ -- and
 * validate it.  Returns QRNIC_VERR_*; on return the QP has an active
 * receive (completed in error if it failed).  The caller checked that one
 * is posted (rq_empty). */
static int fetch_rwqe(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	struct qrnic_rwqe *r = &qp->resp.rwqe;
	struct qrnic_srq *srq;
	int verr;

	qp->resp.recv_active = true;
	qp->resp.recv_off = 0;
	if (recv_srqn(qp)) {
		srq = qrnic_srq_get(d, recv_srqn(qp));
		if (!srq) {	/* cannot happen: the SRQ is held by the QP (XRC: checked) */
			memset(r, 0, offsetof(struct qrnic_rwqe, sge));
			return QRNIC_VERR_BAD_WQE;
		}
		return qrnic_srq_take(d, srq, r);
	}
	verr = qrnic_rwqe_read(d, qrnic_ring_at(qp->rq_addr, qp->rq_pl,
					       (uint64_t)(qp->resp.rq_ci &
							  ((1u << qp->rq_log_depth) - 1))
					       << qp->rq_wqe_shift),
			       1u << qp->rq_wqe_shift, qp->pdn, qp->resp.rq_ci, r);
	return verr;
}

static uint8_t recv_status_for(int verr)
{
	switch (verr) {
	case QRNIC_VERR_LENGTH:	return QRNIC_WC_LOC_LEN_ERR;
	case QRNIC_VERR_BAD_WQE:
	case QRNIC_VERR_DMA:	return QRNIC_WC_LOC_QP_OP_ERR;
	default:		return QRNIC_WC_LOC_PROT_ERR;
	}
}

/* Post the CQE of the receive in progress (the WQE taken last): it is
 * done, the next message takes the next WQE. */
static void recv_cqe_post(struct qrnic_dev *d, struct qrnic_qp *qp, struct qrnic_cqe *cqe)
{
	struct qrnic_cq *cq;

	if (qp->type == QRNIC_QPT_XRC_TGT) {
		/* to the XRC SRQ's CQ, which says where it came from (spec 12.14) */
		const struct qrnic_srq *srq = qrnic_srq_get(d, qp->resp.rwqe.srqn);

		cq = srq ? qrnic_cq_get(d, srq->cqn) : NULL;
		cqe->flags |= QRNIC_CQE_F_XRC;
		cqe->src_qp = qp->resp.rwqe.srqn;
	} else {
		cq = qrnic_cq_get(d, qp->recv_cqn);
	}
	cqe->wr_id = qp->resp.rwqe.wr_id;
	cqe->qpn = qp->qpn;
	cqe->wqe_index = (uint16_t)qp->resp.rwqe.rq_index;
	qp->resp.recv_active = false;
	qp->resp.rq_ci++;
	if (cq)
		qrnic_cq_post(d, cq, cqe);
}

static void complete_recv(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p,
			  uint32_t byte_len, uint8_t opcode, uint8_t flags, uint32_t src_qp)
{
	struct qrnic_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.src_qp = src_qp;
	cqe.byte_len = byte_len;
	cqe.status = QRNIC_WC_SUCCESS;
	cqe.opcode = opcode;
	cqe.flags = flags;
	if (qrnic_opcode_flags(p->opcode) & QRNIC_HDR_IMMDT) {
		cqe.flags |= QRNIC_CQE_F_WITH_IMM;
		cqe.imm_data = p->imm;
	}
	if (qrnic_opcode_flags(p->opcode) & QRNIC_HDR_IETH) {
		cqe.flags |= QRNIC_CQE_F_WITH_INV;
		cqe.inv_key = p->ieth_rkey;
	}
	if (p->se)
		cqe.rsvd = QRNIC_CQE_RSVD_SOLICITED;
	recv_cqe_post(d, qp, &cqe);
}

/* Complete the receive in progress with an error. */
static void complete_recv_error(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t status,
				uint8_t verr)
{
	struct qrnic_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.status = status;
	cqe.vendor_err = verr;
	cqe.opcode = QRNIC_WC_OP_RECV;
	recv_cqe_post(d, qp, &cqe);
}

static bool rq_empty(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	if (recv_srqn(qp)) {
		const struct qrnic_srq *srq = qrnic_srq_get(d, recv_srqn(qp));

		return !srq || qrnic_srq_empty(srq);
	}
	if (!qp->rq_addr)
		return true;
	/* empty by the index last known: the record (ABI 1.10) may say more */
	return qp->resp.rq_ci == qp->rq_pi && !qrnic_rq_dbrec_read(d, qp);
}

static bool rsrc_pending(const struct qrnic_qp *qp)
{
	for (uint32_t i = 0; i < QRNIC_MAX_RD_ATOMIC; i++)
		if (qp->resp.rsrc[i].valid && qp->resp.rsrc[i].pending)
			return true;
	return false;
}

/* Responses leave in PSN order: a NAK for a later PSN waits behind READ
 * and ATOMIC responses still queued for earlier ones. */
static void nak_in_order(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t syn, uint32_t psn)
{
	if (!rsrc_pending(qp)) {
		send_nak(d, qp, syn, psn);
		return;
	}
	qp->resp.ack_pending = true;
	qp->resp.ack_syndrome = syn;
	qp->resp.ack_psn = psn;
	qrnic_qp_kick(d, qp);
}

static void rnr_nak(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t psn)
{
	/* The rest of the message is discarded silently until the requester
	 * retries from this PSN: no sequence NAK for it. */
	qp->resp.nak_sent = true;
	qrnic_stat_add(d, QRNIC_STAT_RNR_NAKS_SENT, 1);
	nak_in_order(d, qp, AETH_RNR(qp->attr.min_rnr_timer), psn);
}

/* ---- UD receive ------------------------------------------------------------ */
static void build_grh(const struct qrnic_pkt *p, uint8_t grh[QRNIC_GRH_BYTES])
{
	memset(grh, 0, QRNIC_GRH_BYTES);
	if (p->ipv6) {
		uint32_t w0 = (6u << 28) | ((uint32_t)p->traffic_class << 20) | (p->flow_label & 0xfffff);
		uint16_t plen = (uint16_t)(QRNIC_UDP_HLEN + p->paylen);

		grh[0] = w0 >> 24; grh[1] = w0 >> 16; grh[2] = w0 >> 8; grh[3] = w0;
		grh[4] = plen >> 8; grh[5] = plen & 0xff;
		grh[6] = 17;
		grh[7] = p->hop_limit;
		memcpy(grh + 8, p->sgid, 16);
		memcpy(grh + 24, p->dgid, 16);
	} else {
		uint8_t *h = grh + 20;
		uint16_t tot = (uint16_t)(QRNIC_IPV4_HLEN + QRNIC_UDP_HLEN + p->paylen);
		uint32_t sum = 0;

		h[0] = 0x45; h[1] = p->traffic_class;
		h[2] = tot >> 8; h[3] = tot & 0xff;
		h[6] = 0x40;	/* DF */
		h[8] = p->hop_limit; h[9] = 17;
		memcpy(h + 12, p->sgid + 12, 4);
		memcpy(h + 16, p->dgid + 12, 4);
		for (int i = 0; i < 20; i += 2)
			sum += (uint32_t)(h[i] << 8 | h[i + 1]);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		sum = ~sum & 0xffff;
		h[10] = sum >> 8; h[11] = sum & 0xff;
	}
}

static void ud_receive(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	uint8_t grh[QRNIC_GRH_BYTES];
	int verr;

	if (p->deth_qkey != qp->attr.qkey) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		qrnic_trace(d, QRNIC_TR_DROP, qp->qpn, p->psn, QRNIC_STAT_RX_DROP_OTHER, p->paylen, 0);
		return;
	}
	if (rq_empty(d, qp)) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		return;		/* UD: no receive posted, the message is dropped */
	}
	verr = fetch_rwqe(d, qp);
	if (verr == QRNIC_VERR_NONE && qp->resp.rwqe.total_len < QRNIC_GRH_BYTES + p->paylen)
		verr = QRNIC_VERR_LENGTH;
	if (verr == QRNIC_VERR_NONE) {
		build_grh(p, grh);
		verr = qrnic_sgl_write(d, qp->resp.rwqe.pdn, qp->resp.rwqe.sge, qp->resp.rwqe.num_sge, 0,
				       grh, QRNIC_GRH_BYTES);
	}
	if (verr == QRNIC_VERR_NONE && p->paylen)
		verr = qrnic_sgl_write(d, qp->resp.rwqe.pdn, qp->resp.rwqe.sge, qp->resp.rwqe.num_sge,
				       QRNIC_GRH_BYTES, p->payload, p->paylen);
	if (verr != QRNIC_VERR_NONE) {
		complete_recv_error(d, qp, recv_status_for(verr), (uint8_t)verr);
		if (verr != QRNIC_VERR_LENGTH)
			qrnic_qp_error(d, qp, QRNIC_EV_QP_FATAL);
		return;
	}
	complete_recv(d, qp, p, QRNIC_GRH_BYTES + p->paylen, QRNIC_WC_OP_RECV,
		      QRNIC_CQE_F_GRH | (p->ipv6 ? 0 : QRNIC_CQE_F_IPV4), p->deth_sqpn);
}

/* ---- RC ------------------------------------------------------------------------ */
static struct qrnic_rsrc *rsrc_find(struct qrnic_qp *qp, uint32_t psn, bool atomic)
{
	for (uint32_t i = 0; i < QRNIC_MAX_RD_ATOMIC; i++) {
		struct qrnic_rsrc *r = &qp->resp.rsrc[i];

		if (!r->valid || r->atomic != atomic)
			continue;
		if (atomic ? r->psn == psn
			   : (qrnic_psn_diff(psn, r->psn) >= 0 &&
			      (uint32_t)qrnic_psn_diff(psn, r->psn) < r->npkts))
			return r;
	}
	return NULL;
}

static struct qrnic_rsrc *rsrc_alloc(struct qrnic_qp *qp)
{
	uint32_t n = qp->attr.max_dest_rd_atomic ? qp->attr.max_dest_rd_atomic : 1;
	struct qrnic_rsrc *r;

	if (n > QRNIC_MAX_RD_ATOMIC)
		n = QRNIC_MAX_RD_ATOMIC;
	r = &qp->resp.rsrc[qp->resp.rsrc_head % n];
	/* A slot still answering a new request means more outstanding than
	 * max_dest_rd_atomic.  A slot only replaying an answer for a late
	 * duplicate is not outstanding: the new request takes it (the
	 * requester retries the old one again if it still needs it). */
	if (r->valid && r->pending && !r->replay)
		return NULL;
	qp->resp.rsrc_head = (qp->resp.rsrc_head + 1) % n;
	memset(r, 0, sizeof(*r));
	return r;
}

static void handle_duplicate(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	uint32_t fl = qrnic_opcode_flags(p->opcode);
	struct qrnic_rsrc *r;

	qrnic_stat_add(d, QRNIC_STAT_DUPLICATE_REQUESTS, 1);
	if (fl & QRNIC_HDR_READ) {
		r = rsrc_find(qp, p->psn, false);
		if (r) {
			/* Re-execute from the requested packet on. */
			r->next = (uint32_t)qrnic_psn_diff(p->psn, r->psn);
			if (!r->pending)
				r->replay = true;
			r->pending = true;
			qp->resp.rsrc_maybe = true;
			qrnic_qp_kick(d, qp);
		}
		return;
	}
	if (fl & QRNIC_HDR_ATOMIC) {
		r = rsrc_find(qp, p->psn, true);
		if (r) {
			qrnic_stat_add(d, QRNIC_STAT_ATOMICS_REPLAYED, 1);
			if (!r->pending)
				r->replay = true;
			r->pending = true;	/* answered again, in order */
			qp->resp.rsrc_maybe = true;
			qrnic_qp_kick(d, qp);
		}
		return;
	}
	/* SEND/WRITE: acknowledge everything received so far. */
	if (qp->resp.ack_pending && qp->resp.ack_syndrome != AETH_ACK)
		return;		/* a NAK is queued: it says more */
	qp->resp.ack_pending = true;
	qp->resp.ack_syndrome = AETH_ACK;
	qp->resp.ack_psn = qrnic_psn_add(qp->resp.epsn, QRNIC_PSN_MASK);
	qrnic_qp_kick(d, qp);
}

static bool opcode_in_sequence(const struct qrnic_qp *qp, uint32_t fl)
{
	if (qp->resp.recv_active && !(fl & QRNIC_HDR_SEND))
		return false;
	if (qp->resp.write_active && !(fl & QRNIC_HDR_WRITE))
		return false;
	if (fl & (QRNIC_HDR_MIDDLE | QRNIC_HDR_LAST)) {
		if (fl & QRNIC_HDR_FIRST)
			return !qp->resp.recv_active && !qp->resp.write_active;	/* ONLY */
		return (fl & QRNIC_HDR_SEND) ? qp->resp.recv_active : qp->resp.write_active;
	}
	if (fl & QRNIC_HDR_FIRST)
		return !qp->resp.recv_active && !qp->resp.write_active;
	return !qp->resp.recv_active && !qp->resp.write_active;	/* READ, ATOMIC */
}

static void rc_send(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p, uint32_t fl)
{
	int verr;

	if (!qp->resp.recv_active) {
		if (rq_empty(d, qp)) {
			rnr_nak(d, qp, p->psn);
			return;
		}
		verr = fetch_rwqe(d, qp);
		if (verr != QRNIC_VERR_NONE) {
			resp_fatal(d, qp, AETH_NAK_OP, p->psn, QRNIC_EV_QP_FATAL,
				   recv_status_for(verr), (uint8_t)verr);
			return;
		}
	}
	if (qp->resp.recv_off + p->paylen > qp->resp.rwqe.total_len) {
		resp_fatal(d, qp, AETH_NAK_INV_REQ, p->psn, QRNIC_EV_QP_REQ_ERR,
			   QRNIC_WC_LOC_LEN_ERR, QRNIC_VERR_LENGTH);
		return;
	}
	if (p->paylen) {
		verr = qrnic_sgl_write(d, qp->resp.rwqe.pdn, qp->resp.rwqe.sge, qp->resp.rwqe.num_sge,
				       qp->resp.recv_off, p->payload, p->paylen);
		if (verr != QRNIC_VERR_NONE) {
			resp_fatal(d, qp, AETH_NAK_OP, p->psn, QRNIC_EV_QP_FATAL,
				   recv_status_for(verr), (uint8_t)verr);
			return;
		}
	}
	if (fl & QRNIC_HDR_IETH) {
		/* SEND with invalidate: the rkey, an FRMR of this QP's PD, is
		 * invalidated once, with the message (a duplicate is only
		 * acknowledged).  A key that cannot be: NAK, as Linux rxe. */
		verr = qrnic_mr_invalidate(d, qrnic_qp_rkey_pdn(qp), qp->qpn, p->ieth_rkey);
		if (verr != QRNIC_VERR_NONE) {
			qrnic_guest_err(d, err_remote_inv, (qp->qpn, p->ieth_rkey, (uint32_t)verr),
					"qrnic: QP %u SEND with invalidate of key 0x%x failed (vendor error %d)",
					  qp->qpn, p->ieth_rkey, verr);
			resp_fatal(d, qp, AETH_NAK_INV_REQ, p->psn, QRNIC_EV_QP_REQ_ERR,
				   QRNIC_WC_REM_INV_REQ_ERR, (uint8_t)verr);
			return;
		}
	}
	qp->resp.recv_off += p->paylen;
	qp->resp.epsn = qrnic_psn_add(qp->resp.epsn, 1);
	if (fl & QRNIC_HDR_LAST) {
		qp->resp.msn = qrnic_psn_add(qp->resp.msn, 1);
		complete_recv(d, qp, p, qp->resp.recv_off, QRNIC_WC_OP_RECV, 0, qp->attr.dest_qpn);
	}
}

static void rc_write(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p, uint32_t fl)
{
	int verr;

	if (fl & QRNIC_HDR_FIRST) {
		if (!(qp->attr.qp_access_flags & QRNIC_ACCESS_REMOTE_WRITE)) {
			resp_fatal(d, qp, AETH_NAK_INV_REQ, p->psn, QRNIC_EV_QP_REQ_ERR, 0, 0);
			return;
		}
		if (p->reth_len > QRNIC_MAX_MSG_SIZE) {
			resp_fatal(d, qp, AETH_NAK_INV_REQ, p->psn, QRNIC_EV_QP_REQ_ERR, 0, 0);
			return;
		}
		if (p->reth_len) {
			verr = qrnic_rkey_check(d, qp, p->reth_rkey, p->reth_va, p->reth_len,
					      QRNIC_ACCESS_REMOTE_WRITE);
			if (verr != QRNIC_VERR_NONE) {
				resp_fatal(d, qp, AETH_NAK_ACCESS, p->psn, QRNIC_EV_QP_ACCESS_ERR, 0, 0);
				return;
			}
		}
		qp->resp.write_va = p->reth_va;
		qp->resp.write_rkey = p->reth_rkey;
		qp->resp.write_resid = p->reth_len;
		qp->resp.write_active = true;
		qp->resp.recv_off = p->reth_len;	/* total, for WRITE_WITH_IMM */
	}
	if (p->paylen > qp->resp.write_resid ||
	    ((fl & QRNIC_HDR_LAST) && p->paylen != qp->resp.write_resid)) {
		qp->resp.write_active = false;
		resp_fatal(d, qp, AETH_NAK_INV_REQ, p->psn, QRNIC_EV_QP_REQ_ERR, 0, 0);
		return;
	}
	/* WRITE with immediate consumes a receive WQE: check before placing.
	 * The retry starts again from this packet, so a WRITE_ONLY forgets
	 * the state it set up above. */
	if ((fl & QRNIC_HDR_IMMDT) && !qp->resp.recv_active && rq_empty(d, qp)) {
		if (fl & QRNIC_HDR_FIRST)
			qp->resp.write_active = false;
		rnr_nak(d, qp, p->psn);
		return;
	}
	if (p->paylen) {
		verr = qrnic_rkey_write(d, qp, qp->resp.write_rkey, qp->resp.write_va,
				      p->payload, p->paylen, QRNIC_ACCESS_REMOTE_WRITE);
		if (verr != QRNIC_VERR_NONE) {
			qp->resp.write_active = false;
			resp_fatal(d, qp, AETH_NAK_ACCESS, p->psn, QRNIC_EV_QP_ACCESS_ERR, 0, 0);
			return;
		}
	}
	qp->resp.write_va += p->paylen;
	qp->resp.write_resid -= p->paylen;
	qp->resp.epsn = qrnic_psn_add(qp->resp.epsn, 1);
	if (fl & QRNIC_HDR_LAST) {
		uint32_t total = qp->resp.recv_off;

		qp->resp.write_active = false;
		qp->resp.msn = qrnic_psn_add(qp->resp.msn, 1);
		if (fl & QRNIC_HDR_IMMDT) {
			verr = fetch_rwqe(d, qp);
			if (verr != QRNIC_VERR_NONE) {
				resp_fatal(d, qp, AETH_NAK_OP, p->psn, QRNIC_EV_QP_FATAL,
					   recv_status_for(verr), (uint8_t)verr);
				return;
			}
			complete_recv(d, qp, p, total, QRNIC_WC_OP_RECV_RDMA_WITH_IMM, 0,
				      qp->attr.dest_qpn);
		}
	}
}

static void rc_read(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	uint32_t mtu = path_mtu(qp);
	struct qrnic_rsrc *r;
	int verr;

	if (!(qp->attr.qp_access_flags & QRNIC_ACCESS_REMOTE_READ) ||
	    p->reth_len > QRNIC_MAX_MSG_SIZE) {
		resp_fatal(d, qp, AETH_NAK_INV_REQ, p->psn, QRNIC_EV_QP_REQ_ERR, 0, 0);
		return;
	}
	if (p->reth_len) {
		verr = qrnic_rkey_check(d, qp, p->reth_rkey, p->reth_va, p->reth_len,
				      QRNIC_ACCESS_REMOTE_READ);
		if (verr != QRNIC_VERR_NONE) {
			resp_fatal(d, qp, AETH_NAK_ACCESS, p->psn, QRNIC_EV_QP_ACCESS_ERR, 0, 0);
			return;
		}
	}
	r = rsrc_alloc(qp);
	if (!r) {
		resp_fatal(d, qp, AETH_NAK_INV_REQ, p->psn, QRNIC_EV_QP_REQ_ERR, 0, 0);
		return;
	}
	r->valid = true;
	r->pending = true;
	qp->resp.rsrc_maybe = true;
	r->tm_issue = d->tm_t;
	r->psn = p->psn;
	r->npkts = p->reth_len ? qrnic_div_mtu(p->reth_len + mtu - 1, mtu) : 1;
	r->next = 0;
	r->va = p->reth_va;
	r->rkey = p->reth_rkey;
	r->len = p->reth_len;
	r->pdn = qp->resp.xrc_pdn;	/* XRC TGT: for the response reads */
	qp->resp.epsn = qrnic_psn_add(qp->resp.epsn, r->npkts);
	qp->resp.msn = qrnic_psn_add(qp->resp.msn, 1);
	qrnic_qp_kick(d, qp);
}

static void rc_atomic(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	struct qrnic_rsrc *r;
	uint64_t orig, val;
	int verr;

	if (!(qp->attr.qp_access_flags & QRNIC_ACCESS_REMOTE_ATOMIC) || (p->atomic_va & 7)) {
		resp_fatal(d, qp, AETH_NAK_INV_REQ, p->psn, QRNIC_EV_QP_REQ_ERR, 0, 0);
		return;
	}
	verr = qrnic_rkey_read(d, qp, p->atomic_rkey, p->atomic_va, &orig, 8,
			     QRNIC_ACCESS_REMOTE_ATOMIC);
	if (verr != QRNIC_VERR_NONE) {
		resp_fatal(d, qp, AETH_NAK_ACCESS, p->psn, QRNIC_EV_QP_ACCESS_ERR, 0, 0);
		return;
	}
	r = rsrc_alloc(qp);
	if (!r) {
		resp_fatal(d, qp, AETH_NAK_INV_REQ, p->psn, QRNIC_EV_QP_REQ_ERR, 0, 0);
		return;
	}
	if (p->opcode == QRNIC_OP_RC_CMP_SWAP)
		val = orig == p->atomic_cmp ? p->atomic_swap_add : orig;
	else
		val = orig + p->atomic_swap_add;
	if (val != orig || p->opcode == QRNIC_OP_RC_FETCH_ADD) {
		verr = qrnic_rkey_write(d, qp, p->atomic_rkey, p->atomic_va, &val, 8,
				      QRNIC_ACCESS_REMOTE_ATOMIC);
		if (verr != QRNIC_VERR_NONE) {
			resp_fatal(d, qp, AETH_NAK_ACCESS, p->psn, QRNIC_EV_QP_ACCESS_ERR, 0, 0);
			return;
		}
	}
	qrnic_stat_add(d, QRNIC_STAT_ATOMICS_EXECUTED, 1);
	if (qrnic_timed(d))	/* the read-modify-write unit */
		d->tm_t = qrnic_tm_atomic(&d->tm, d->tm_t);
	r->valid = true;
	r->atomic = true;
	r->pending = true;
	qp->resp.rsrc_maybe = true;
	r->tm_issue = d->tm_t;
	r->psn = p->psn;
	r->npkts = 1;
	r->atomic_orig = orig;
	r->pdn = qp->resp.xrc_pdn;
	qp->resp.epsn = qrnic_psn_add(qp->resp.epsn, 1);
	qp->resp.msn = qrnic_psn_add(qp->resp.msn, 1);
	qrnic_qp_kick(d, qp);
}

/* ---- UC receive ------------------------------------------------------------ */
/* UC has no ACKs, NAKs or retries (IBTA 9.7.5.2; rxe does the same).  A
 * packet out of sequence, out of opcode order, or that fails a check
 * meant for the sender (remote access, length, no receive WQE posted) ends
 * the message in progress: it and the rest of that message are dropped
 * and counted until a FIRST or ONLY packet starts the next one, whose PSN
 * becomes the expected one.  Nothing is completed for a dropped message;
 * a receive WQE it had started to fill is used again by the next SEND.
 * Only the receiver's own faults (a bad receive WQE, a DMA failure on its
 * memory) complete that WQE with an error and move the QP to ERROR, as on
 * RC, without a NAK. */
static void uc_drop(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p,
		    enum qrnic_stat why)
{
	qp->resp.drop_msg = true;
	qp->resp.recv_active = false;	/* the WQE stays first in the RQ */
	qp->resp.write_active = false;
	qrnic_stat_add(d, why, 1);
	qrnic_trace(d, QRNIC_TR_DROP, qp->qpn, p->psn, why, p->paylen, 0);
}

static void uc_local_error(struct qrnic_dev *d, struct qrnic_qp *qp, int verr)
{
	qp->resp.write_active = false;
	complete_recv_error(d, qp, recv_status_for(verr), (uint8_t)verr);
	qrnic_qp_error(d, qp, QRNIC_EV_QP_FATAL);
}

static void uc_receive(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	uint32_t fl = qrnic_opcode_flags(p->opcode);
	uint32_t mtu = path_mtu(qp), total;
	int verr;

	if (p->psn != qp->resp.epsn || qp->resp.drop_msg) {
		if (!(fl & QRNIC_HDR_FIRST)) {	/* the rest of a broken message */
			uc_drop(d, qp, p, QRNIC_STAT_RX_DROP_OTHER);
			return;
		}
		/* a new message: what was in progress is abandoned */
		qp->resp.recv_active = false;
		qp->resp.write_active = false;
		qp->resp.drop_msg = false;
		qp->resp.epsn = p->psn;
	}
	if (!opcode_in_sequence(qp, fl) ||
	    (((fl & (QRNIC_HDR_FIRST | QRNIC_HDR_MIDDLE)) && !(fl & QRNIC_HDR_LAST))
	     ? p->paylen != mtu : p->paylen > mtu)) {
		uc_drop(d, qp, p, QRNIC_STAT_RX_DROP_MALFORMED);
		return;
	}
	qp->resp.epsn = qrnic_psn_add(qp->resp.epsn, 1);
	if (fl & QRNIC_HDR_WRITE) {
		if (fl & QRNIC_HDR_FIRST) {
			if (!(qp->attr.qp_access_flags & QRNIC_ACCESS_REMOTE_WRITE) ||
			    p->reth_len > QRNIC_MAX_MSG_SIZE ||
			    (p->reth_len && qrnic_rkey_check(d, qp, p->reth_rkey, p->reth_va,
							   p->reth_len, QRNIC_ACCESS_REMOTE_WRITE))) {
				uc_drop(d, qp, p, QRNIC_STAT_RX_DROP_OTHER);
				return;
			}
			qp->resp.write_va = p->reth_va;
			qp->resp.write_rkey = p->reth_rkey;
			qp->resp.write_resid = p->reth_len;
			qp->resp.write_active = true;
			qp->resp.recv_off = p->reth_len;
		}
		if (p->paylen > qp->resp.write_resid ||
		    ((fl & QRNIC_HDR_LAST) && p->paylen != qp->resp.write_resid) ||
		    ((fl & QRNIC_HDR_IMMDT) && rq_empty(d, qp))) {
			uc_drop(d, qp, p, QRNIC_STAT_RX_DROP_OTHER);
			return;
		}
		if (p->paylen &&
		    qrnic_rkey_write(d, qp, qp->resp.write_rkey, qp->resp.write_va, p->payload,
				   p->paylen, QRNIC_ACCESS_REMOTE_WRITE) != QRNIC_VERR_NONE) {
			uc_drop(d, qp, p, QRNIC_STAT_RX_DROP_OTHER);
			return;
		}
		qp->resp.write_va += p->paylen;
		qp->resp.write_resid -= p->paylen;
		if (!(fl & QRNIC_HDR_LAST))
			return;
		qp->resp.write_active = false;
		if (!(fl & QRNIC_HDR_IMMDT))
			return;
		total = qp->resp.recv_off;	/* the WRITE's length (fetch_rwqe resets it) */
		verr = fetch_rwqe(d, qp);
		if (verr != QRNIC_VERR_NONE) {
			uc_local_error(d, qp, verr);
			return;
		}
		complete_recv(d, qp, p, total, QRNIC_WC_OP_RECV_RDMA_WITH_IMM, 0, qp->attr.dest_qpn);
		return;
	}
	/* SEND */
	if (!qp->resp.recv_active) {
		if (rq_empty(d, qp)) {
			uc_drop(d, qp, p, QRNIC_STAT_RX_DROP_OTHER);
			return;
		}
		verr = fetch_rwqe(d, qp);
		if (verr != QRNIC_VERR_NONE) {
			uc_local_error(d, qp, verr);
			return;
		}
	}
	if (qp->resp.recv_off + p->paylen > qp->resp.rwqe.total_len) {
		uc_drop(d, qp, p, QRNIC_STAT_RX_DROP_OTHER);	/* too long: not completed */
		return;
	}
	if (p->paylen) {
		verr = qrnic_sgl_write(d, qp->resp.rwqe.pdn, qp->resp.rwqe.sge, qp->resp.rwqe.num_sge,
				       qp->resp.recv_off, p->payload, p->paylen);
		if (verr != QRNIC_VERR_NONE) {
			uc_local_error(d, qp, verr);
			return;
		}
	}
	qp->resp.recv_off += p->paylen;
	if (fl & QRNIC_HDR_LAST)
		complete_recv(d, qp, p, qp->resp.recv_off, QRNIC_WC_OP_RECV, 0, qp->attr.dest_qpn);
}

/* XRC TGT: an in-order request names, in its XRCETH, an XRC SRQ of the
 * TGT QP's XRC domain; the receive of a SEND or WRITE with immediate comes
 * from it and rkeys are checked against its PD.  Any other SRQ number
 * (none, an ordinary SRQ, one of another domain) is an invalid request. */
static bool xrc_srq_check(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	const struct qrnic_srq *srq = qrnic_srq_get(d, p->xrc_srqn);

	if (!srq || !srq->xrcd || srq->xrcd != qp->xrcd) {
		qrnic_guest_err(d, err_xrc_srq, (qp->qpn, p->xrc_srqn, p->psn),
				"qrnic: XRC TGT QP %u request psn %u names SRQ %u, not of its XRC domain",
				  qp->qpn, p->psn, p->xrc_srqn);
		resp_fatal(d, qp, AETH_NAK_INV_REQ, p->psn, QRNIC_EV_QP_REQ_ERR,
			   QRNIC_WC_REM_INV_REQ_ERR, QRNIC_VERR_NAK);
		return false;
	}
	qp->resp.xrc_srqn = p->xrc_srqn;
	qp->resp.xrc_pdn = srq->pdn;
	return true;
}

void qrnic_resp_packet(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	uint8_t st = qp->attr.qp_state;
	uint32_t fl = qrnic_opcode_flags(p->opcode);
	uint32_t mtu = path_mtu(qp);
	int32_t diff;

	if (st != QRNIC_QPS_RTR && st != QRNIC_QPS_RTS && st != QRNIC_QPS_SQD &&
	    st != QRNIC_QPS_SQE) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_QP_STATE, 1);
		return;
	}
	if (qp->type == QRNIC_QPT_UC) {
		uc_receive(d, qp, p);
		return;
	}
	if (!qrnic_qp_rc(qp)) {
		ud_receive(d, qp, p);
		return;
	}
	if (qp->resp.fatal_pending) {	/* on the way to ERROR */
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_QP_STATE, 1);
		return;
	}
	diff = qrnic_psn_diff(p->psn, qp->resp.epsn);
	if (diff < 0) {
		handle_duplicate(d, qp, p);
		return;
	}
	if (diff > 0) {
		if (!qp->resp.nak_sent) {
			qp->resp.nak_sent = true;
			qrnic_stat_add(d, QRNIC_STAT_SEQ_NAKS_SENT, 1);
			nak_in_order(d, qp, AETH_NAK_SEQ, qp->resp.epsn);
		}
		return;
	}
	qp->resp.nak_sent = false;

	if (qp->type == QRNIC_QPT_XRC_TGT && !xrc_srq_check(d, qp, p))
		return;
	if (!opcode_in_sequence(qp, fl) ||
	    ((fl & QRNIC_HDR_PAYLOAD) &&
	     (((fl & (QRNIC_HDR_FIRST | QRNIC_HDR_MIDDLE)) && !(fl & QRNIC_HDR_LAST))
		      ? p->paylen != mtu : p->paylen > mtu))) {
		qrnic_guest_err(d, err_bad_request, (qp->qpn, p->opcode, p->paylen, p->psn),
				"qrnic: QP %u invalid request opcode 0x%x len %u psn %u",
				  qp->qpn, p->opcode, p->paylen, p->psn);
		resp_fatal(d, qp, AETH_NAK_INV_REQ, p->psn, QRNIC_EV_QP_REQ_ERR,
			   QRNIC_WC_REM_INV_REQ_ERR, QRNIC_VERR_NAK);
		return;
	}

	if (fl & QRNIC_HDR_SEND)
		rc_send(d, qp, p, fl);
	else if (fl & QRNIC_HDR_WRITE)
		rc_write(d, qp, p, fl);
	else if (fl & QRNIC_HDR_READ)
		rc_read(d, qp, p);
	else if (fl & QRNIC_HDR_ATOMIC)
		rc_atomic(d, qp, p);

	if (qp->attr.qp_state == QRNIC_QPS_ERR)
		return;
	/* Acknowledge when asked; ACKs of one batch coalesce into one. */
	if (p->ackreq && !(fl & (QRNIC_HDR_READ | QRNIC_HDR_ATOMIC)) &&
	    qrnic_psn_diff(qp->resp.epsn, p->psn) > 0 &&
	    !(qp->resp.ack_pending && qp->resp.ack_syndrome != AETH_ACK)) {
		qp->resp.ack_pending = true;
		qp->resp.ack_syndrome = AETH_ACK;
		qp->resp.ack_psn = p->psn;
		qrnic_qp_kick(d, qp);
	}
}

/*
 * A train of WRITE packets (rx.c rx_train) taken whole: what
 * qrnic_resp_packet does for each of them in turn, when every one of them
 * would pass its checks -- the QP's state, the PSN, the opcode sequence,
 * the lengths, the R_Key -- checked first, before anything is written.
 * Returns how many were taken: all, none (a check failed: the caller
 * gives them to qrnic_resp_packet one by one, which does what it would
 * have done), or those before the one whose write failed (a DMA error:
 * the caller gives that one and the rest one by one, and its write fails
 * again there with its NAK and async event; writing a packet's bytes
 * twice leaves the same bytes).
 */
uint32_t qrnic_resp_write_train(struct qrnic_dev *d, struct qrnic_qp *qp,
				const struct qrnic_pkt *p0, const struct qrnic_train *t)
{
	uint8_t st = qp->attr.qp_state;
	uint32_t mtu = path_mtu(qp), n = t->n, taken, last_ack = UINT32_MAX;
	bool first = p0->opcode == QRNIC_OP_RC_WRITE_FIRST;
	bool last = t->last_opcode == QRNIC_OP_RC_WRITE_LAST;
	uint64_t total = 0, resid, va;
	uint32_t rkey;

	if ((st != QRNIC_QPS_RTR && st != QRNIC_QPS_RTS && st != QRNIC_QPS_SQD &&
	     st != QRNIC_QPS_SQE) || qp->type != QRNIC_QPT_RC || qp->resp.fatal_pending ||
	    p0->psn != qp->resp.epsn || qp->resp.recv_active)
		return 0;
	if (first ? qp->resp.write_active : p0->opcode != QRNIC_OP_RC_WRITE_MIDDLE ||
							!qp->resp.write_active)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len = t->seg[i].len;

		if (i + 1 < n || !last ? len != mtu : len > mtu)
			return 0;
		total += len;
	}
	if (first) {
		if (!(qp->attr.qp_access_flags & QRNIC_ACCESS_REMOTE_WRITE) ||
		    p0->reth_len > QRNIC_MAX_MSG_SIZE || !p0->reth_len ||
		    qrnic_rkey_check(d, qp, p0->reth_rkey, p0->reth_va, p0->reth_len,
				     QRNIC_ACCESS_REMOTE_WRITE) != QRNIC_VERR_NONE)
			return 0;
		resid = p0->reth_len;
		va = p0->reth_va;
		rkey = p0->reth_rkey;
	} else {
		resid = qp->resp.write_resid;
		va = qp->resp.write_va;
		rkey = qp->resp.write_rkey;
	}
	if (total > resid || (last && total != resid))
		return 0;

	/* The payloads, into the target in order: those that follow on in
	 * host memory as one write, and its pages that follow on in DMA
	 * addresses as one DMA (d->xfer_merge; no fault plan to see each
	 * page's DMA, no trace, no timing: rx.c checked).  A write that fails
	 * is made again packet by packet to find the packet it fails at: the
	 * caller gives that one to qrnic_resp_packet, whose write then fails
	 * and counts the DMA error, once, as without a train. */
	total = 0;
	taken = 0;
	d->xfer_merge = !d->fault;
	while (taken < n) {
		uint32_t end = taken + 1, run = t->seg[taken].len;
		uint64_t errors = d->stats[QRNIC_STAT_DMA_ERRORS];

		while (end < n && t->seg[end].src == t->seg[end - 1].src + t->seg[end - 1].len)
			run += t->seg[end++].len;
		if (qrnic_rkey_write(d, qp, rkey, va + total, t->seg[taken].src, run,
				     QRNIC_ACCESS_REMOTE_WRITE) != QRNIC_VERR_NONE) {
			d->xfer_merge = false;
			while (taken < end &&
			       qrnic_rkey_write(d, qp, rkey, va + total, t->seg[taken].src,
						t->seg[taken].len, QRNIC_ACCESS_REMOTE_WRITE) ==
				       QRNIC_VERR_NONE) {
				total += t->seg[taken].len;
				if ((t->ackreq >> taken) & 1)
					last_ack = taken;
				taken++;
			}
			d->stats[QRNIC_STAT_DMA_ERRORS] = errors;
			break;
		}
		for (; taken < end; taken++) {
			total += t->seg[taken].len;
			if ((t->ackreq >> taken) & 1)
				last_ack = taken;
		}
	}
	d->xfer_merge = false;
	if (!taken)
		return 0;
	qp->resp.nak_sent = false;
	if (first) {
		qp->resp.write_rkey = rkey;
		qp->resp.write_active = true;
		qp->resp.recv_off = p0->reth_len;	/* total, for WRITE_WITH_IMM */
	}
	qp->resp.write_va = va + total;
	qp->resp.write_resid = (uint32_t)(resid - total);
	qp->resp.epsn = qrnic_psn_add(qp->resp.epsn, taken);
	if (taken == n && last) {
		qp->resp.write_active = false;
		qp->resp.msn = qrnic_psn_add(qp->resp.msn, 1);
	}
	if (last_ack != UINT32_MAX &&
	    !(qp->resp.ack_pending && qp->resp.ack_syndrome != AETH_ACK)) {
		qp->resp.ack_pending = true;
		qp->resp.ack_syndrome = AETH_ACK;
		qp->resp.ack_psn = qrnic_psn_add(p0->psn, last_ack);
		qrnic_qp_kick(d, qp);
	}
	return taken;
}

/* timing: a response packet is processed once its data is in and after
 * the QP's previous response. */
static void tm_resp_pkt(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t ready, uint32_t cycles)
{
	if (!qrnic_timed(d))
		return;
	if (ready < d->tm_t)
		ready = d->tm_t;
	if (ready < qp->tm_resp)
		ready = qp->tm_resp;
	d->tm_t = ready;
	d->tm_cycles = cycles;
}

static void tm_resp_done(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	if (qrnic_timed(d))
		qp->tm_resp = d->tm_t;
}

/* Send pending READ responses and the coalesced ACK.  READ responses go
 * first: an ACK for a later PSN would tell the requester they were lost. */
bool qrnic_resp_step(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t budget)
{
	uint32_t mtu = path_mtu(qp);
	uint32_t n = qp->attr.max_dest_rd_atomic ? qp->attr.max_dest_rd_atomic : 1, k;

	if (n > QRNIC_MAX_RD_ATOMIC)
		n = QRNIC_MAX_RD_ATOMIC;
	/* oldest first: start after the newest allocated slot (no division
	 * per slot: this runs for every packet the QP receives; and no scan
	 * at all when nothing was made pending since the last full one) */
	k = 0;
	for (uint32_t i = qp->resp.rsrc_head % n; qp->resp.rsrc_maybe && k < n && budget;
	     k++, i = i + 1 == n ? 0 : i + 1) {
		struct qrnic_rsrc *r = &qp->resp.rsrc[i];

		if (r->valid && r->pending && r->atomic && budget) {
			tm_resp_pkt(d, qp, r->tm_issue, d->tm.p.ack_cycles);
			send_aeth(d, qp, QRNIC_OP_RC_ATOMIC_ACK, AETH_ACK, r->psn, NULL, 0,
				  r->atomic_orig);
			tm_resp_done(d, qp);
			r->pending = r->replay = false;
			budget--;
		}
		while (r->valid && r->pending && !r->atomic && budget) {
			uint32_t off = r->next * mtu;
			uint32_t len = r->len - off > mtu ? mtu : r->len - off;
			bool first = r->next == 0, last = r->next + 1 >= r->npkts;
			uint8_t op;
			int verr;

			uint8_t *payload = NULL;

			if (r->len == 0)
				len = 0;
			if (qrnic_timed(d))	/* response reads were issued with the request */
				d->tm_t = r->tm_issue > qrnic_now(d) ? r->tm_issue : qrnic_now(d);
			op = first && last ? QRNIC_OP_RC_READ_RESP_ONLY
			     : first ? QRNIC_OP_RC_READ_RESP_FIRST
			     : last ? QRNIC_OP_RC_READ_RESP_LAST : QRNIC_OP_RC_READ_RESP_MIDDLE;
			if (qp->type == QRNIC_QPT_XRC_TGT) {
				op |= QRNIC_OP_XRC;
				qp->resp.xrc_pdn = r->pdn;	/* the READ's rkey PD */
			}
			if (len) {
				/* straight into the frame, where the payload goes */
				struct qrnic_pkt where = {
					.ipv6 = qp->attr.av.net_type == QRNIC_NET_IPV6, .opcode = op };

				payload = qrnic_tx_payload(d, &where);
				verr = qrnic_rkey_read(d, qp, r->rkey, r->va + off, payload, len,
						     QRNIC_ACCESS_REMOTE_READ);
				if (verr != QRNIC_VERR_NONE) {
					r->pending = false;
					resp_fatal(d, qp, AETH_NAK_ACCESS, qrnic_psn_add(r->psn, r->next),
						   QRNIC_EV_QP_ACCESS_ERR, 0, 0);
					return false;
				}
			}
			tm_resp_pkt(d, qp, d->tm_t, d->tm.p.resp_pkt_cycles);
			send_aeth(d, qp, op, AETH_ACK, qrnic_psn_add(r->psn, r->next), payload, len, 0);
			tm_resp_done(d, qp);
			r->next++;
			budget--;
			if (r->next >= r->npkts)
				r->pending = r->replay = false;
		}
		if (r->valid && r->pending)
			return true;
	}
	if (k == n) {
		/* every slot in use seen, none pending: clear the hint unless
		 * a slot beyond n is (should max_dest_rd_atomic grow again) */
		bool any = false;

		for (uint32_t i = 0; i < QRNIC_MAX_RD_ATOMIC; i++)
			any |= qp->resp.rsrc[i].valid && qp->resp.rsrc[i].pending;
		qp->resp.rsrc_maybe = any;
	}
	if (qp->resp.fatal_pending) {	/* every earlier response is out */
		qp->resp.fatal_pending = false;
		tm_resp_pkt(d, qp, 0, d->tm.p.ack_cycles);
		fatal_now(d, qp, qp->resp.fatal_syn, qp->resp.fatal_psn, qp->resp.fatal_ev);
		return false;
	}
	if (qp->resp.ack_pending && budget) {
		qp->resp.ack_pending = false;
		if (qp->resp.ack_syndrome == AETH_ACK)
			qrnic_stat_add(d, QRNIC_STAT_ACKS_SENT, 1);
		tm_resp_pkt(d, qp, 0, d->tm.p.ack_cycles);
		send_nak(d, qp, qp->resp.ack_syndrome, qp->resp.ack_psn);
		tm_resp_done(d, qp);
	}
	return false;
}
