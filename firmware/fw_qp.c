/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic firmware: queue pairs (CREATE_QP, MODIFY_QP, QUERY_QP, DESTROY_QP).
 *
 * MODIFY_QP follows the IBTA chapter 11 QP state machine as Linux encodes
 * it in ib_modify_qp_is_ok() (drivers/infiniband/core/verbs.c): for every
 * (current, next) pair, whether it is allowed and which attributes are
 * required and optional, per transport (RC, UC, UD, GSI, XRC INI, XRC TGT).  Differences from
 * that table, all deliberate:
 *   - SQE -> RTS only for UC/UD/GSI (an RC or XRC QP never enters SQE);
 *   - GSI accepts PORT as an optional attribute of RESET->INIT and
 *     INIT->INIT (UD requires it there; harmless for QP1, port is 1);
 *   - ALT_PATH, PATH_MIG_STATE and CAP are answered QRNIC_AQ_NOT_SUPPORTED
 *     (no automatic path migration, no resize).
 * As in Linux, RESET -> ERR is not a transition (ERR -> ERR is).
 *
 * Validation order (spec 6.6.7): qpn (BAD_HANDLE); transition allowed
 * (BAD_STATE, detail = attr.qp_state); CUR_STATE matches (BAD_STATE, detail
 * = attr.cur_qp_state); unsupported attributes (NOT_SUPPORTED); the mask
 * against the table (BAD_ATTR_MASK, detail = attr.attr_mask); the values
 * of the selected attributes and the reserved fields (BAD_PARAM).
 * Everything is validated before anything changes; the transport side
 * effects of a state change belong to qrnic_qp_set_state() (qp.c).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qrnic_fw.h"

/* ---- The state machine ---------------------------------------------------- */
enum { T_RC, T_UD, T_GSI, T_UC, T_XI, T_XT, T_NUM };	/* T_XI/T_XT: XRC INI/TGT */
#define V_RC	(1u << T_RC)
#define V_UD	(1u << T_UD)
#define V_GSI	(1u << T_GSI)
#define V_UC	(1u << T_UC)
#define V_XRC	((1u << T_XI) | (1u << T_XT))
#define V_ALL	(V_RC | V_UD | V_GSI | V_UC | V_XRC)

struct qp_trans {
	uint8_t  valid;			/* V_* bits: allowed for these types */
	uint32_t req[T_NUM];		/* required attributes */
	uint32_t opt[T_NUM];		/* optional attributes */
};

#define A(x) QRNIC_QP_ATTR_##x
#define S(x) QRNIC_QPS_##x

static const struct qp_trans qp_table[S(ERR) + 1][S(ERR) + 1] = {
	[S(RESET)] = {
		[S(RESET)] = { .valid = V_ALL },
		[S(INIT)] = {
			.valid = V_ALL,
			.req = {
				[T_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
				[T_GSI] = A(PKEY_INDEX) | A(QKEY),
				[T_XI] = A(PKEY_INDEX) | A(PORT),
				[T_XT] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			},
			/* XRC INI: ACCESS_FLAGS optional (Linux requires it;
			 * kept and reported, no effect: no responder) */
			.opt = { [T_GSI] = A(PORT), [T_XI] = A(ACCESS_FLAGS) },
		},
	},
	[S(INIT)] = {
		[S(RESET)] = { .valid = V_ALL },
		[S(ERR)] = { .valid = V_ALL },
		[S(INIT)] = {
			.valid = V_ALL,
			.opt = {
				[T_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
				[T_GSI] = A(PKEY_INDEX) | A(QKEY) | A(PORT),
				[T_XI] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_XT] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			},
		},
		[S(RTR)] = {
			.valid = V_ALL,
			.req = {
				[T_RC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
					 A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
				[T_UC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
				[T_XI] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
				[T_XT] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
					 A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
			},
			.opt = {
				[T_RC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
				[T_UC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
				[T_XI] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
					 A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
				[T_XT] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
				[T_UD] = A(PKEY_INDEX) | A(QKEY),
				[T_GSI] = A(PKEY_INDEX) | A(QKEY),
			},
		},
	},
	[S(RTR)] = {
		[S(RESET)] = { .valid = V_ALL },
		[S(ERR)] = { .valid = V_ALL },
		[S(RTS)] = {
			.valid = V_ALL,
			.req = {
				[T_RC] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(SQ_PSN) |
					 A(MAX_QP_RD_ATOMIC),
				[T_UC] = A(SQ_PSN),
				[T_UD] = A(SQ_PSN),
				[T_GSI] = A(SQ_PSN),
				[T_XI] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(SQ_PSN) |
					 A(MAX_QP_RD_ATOMIC),
				[T_XT] = A(TIMEOUT) | A(SQ_PSN),
			},
			.opt = {
				[T_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
				[T_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(PATH_MIG_STATE),
				[T_UD] = A(CUR_STATE) | A(QKEY),
				[T_GSI] = A(CUR_STATE) | A(QKEY),
				[T_XI] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
				[T_XT] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
			},
		},
	},
	[S(RTS)] = {
		[S(RESET)] = { .valid = V_ALL },
		[S(ERR)] = { .valid = V_ALL },
		[S(RTS)] = {
			.valid = V_ALL,
			.opt = {
				[T_RC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
					 A(PATH_MIG_STATE) | A(MIN_RNR_TIMER),
				[T_UC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
					 A(PATH_MIG_STATE),
				[T_UD] = A(CUR_STATE) | A(QKEY),
				[T_GSI] = A(CUR_STATE) | A(QKEY),
				[T_XI] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
				[T_XT] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
					 A(PATH_MIG_STATE) | A(MIN_RNR_TIMER),
			},
		},
		[S(SQD)] = {
			.valid = V_ALL,
			.opt = {
				[T_RC] = A(EN_SQD_ASYNC),
				[T_UC] = A(EN_SQD_ASYNC),
				[T_UD] = A(EN_SQD_ASYNC),
				[T_GSI] = A(EN_SQD_ASYNC),
				[T_XI] = A(EN_SQD_ASYNC),
				[T_XT] = A(EN_SQD_ASYNC),
			},
		},
	},
	[S(SQD)] = {
		[S(RESET)] = { .valid = V_ALL },
		[S(ERR)] = { .valid = V_ALL },
		[S(RTS)] = {
			.valid = V_ALL,
			.opt = {
				[T_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
				[T_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(PATH_MIG_STATE),
				[T_UD] = A(CUR_STATE) | A(QKEY),
				[T_GSI] = A(CUR_STATE) | A(QKEY),
				[T_XI] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
				[T_XT] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
			},
		},
		[S(SQD)] = {
			.valid = V_ALL,
			.opt = {
				[T_RC] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
					 A(MAX_QP_RD_ATOMIC) | A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
					 A(ACCESS_FLAGS) | A(PKEY_INDEX) | A(MIN_RNR_TIMER) |
					 A(PATH_MIG_STATE),
				[T_UC] = A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
					 A(PATH_MIG_STATE),
				[T_UD] = A(PKEY_INDEX) | A(QKEY),
				[T_GSI] = A(PKEY_INDEX) | A(QKEY),
				[T_XI] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
					 A(MAX_QP_RD_ATOMIC) | A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
					 A(ACCESS_FLAGS) | A(PKEY_INDEX) | A(MIN_RNR_TIMER) |
					 A(PATH_MIG_STATE),
				[T_XT] = A(PORT) | A(AV) | A(TIMEOUT) | A(MAX_DEST_RD_ATOMIC) |
					 A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
					 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
			},
		},
	},
	[S(SQE)] = {
		[S(RESET)] = { .valid = V_ALL },
		[S(ERR)] = { .valid = V_ALL },
		[S(RTS)] = {
			.valid = V_UC | V_UD | V_GSI,
			.opt = {
				[T_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
				[T_UD] = A(CUR_STATE) | A(QKEY),
				[T_GSI] = A(CUR_STATE) | A(QKEY),
			},
		},
	},
	[S(ERR)] = {
		[S(RESET)] = { .valid = V_ALL },
		[S(ERR)] = { .valid = V_ALL },
	},
};

static int qp_type_col(uint8_t qp_type)
{
	switch (qp_type) {
	case QRNIC_QPT_RC:	return T_RC;
	case QRNIC_QPT_UC:	return T_UC;
	case QRNIC_QPT_UD:	return T_UD;
	case QRNIC_QPT_GSI:	return T_GSI;
	case QRNIC_QPT_XRC_INI:	return T_XI;
	case QRNIC_QPT_XRC_TGT:	return T_XT;
	default:		return -1;
	}
}

#define QP_ATTR_UNSUPPORTED	(A(ALT_PATH) | A(PATH_MIG_STATE) | A(CAP))

/* The table entry of an allowed transition, or NULL. */
static const struct qp_trans *qp_trans_get(int col, uint8_t cur, uint8_t next)
{
	if (col < 0 || cur > S(ERR) || next > S(ERR))
		return NULL;
	if (!(qp_table[cur][next].valid & (1u << col)))
		return NULL;
	return &qp_table[cur][next];
}

/* Required and only allowed attributes (STATE always allowed). */
static bool qp_mask_ok(const struct qp_trans *t, int col, uint8_t cur, uint32_t mask)
{
	const uint32_t req = t->req[col], opt = t->opt[col];

	/* CC (qrnic's own) is allowed in every transition */
	mask &= ~A(CC);
	/* CUR_STATE only makes sense leaving RTR/RTS/SQD/SQE (Linux rule; the
	 * table agrees, this just says it explicitly). */
	if ((mask & A(CUR_STATE)) && cur != S(RTR) && cur != S(RTS) && cur != S(SQD) &&
	    cur != S(SQE))
		return false;
	return (mask & req) == req && !(mask & ~(req | opt | A(STATE)));
}

uint8_t qrnic_fw_qp_transition_ok(uint8_t qp_type, uint8_t cur, uint8_t next, uint32_t mask)
{
	const int col = qp_type_col(qp_type);
	const struct qp_trans *t = qp_trans_get(col, cur, next);

	if (!t)
		return QRNIC_AQ_BAD_STATE;
	if (mask & QP_ATTR_UNSUPPORTED)
		return QRNIC_AQ_NOT_SUPPORTED;
	if (!qp_mask_ok(t, col, cur, mask))
		return QRNIC_AQ_BAD_ATTR_MASK;
	return QRNIC_AQ_OK;
}

/* ---- Helpers -------------------------------------------------------------- */
static void qp_clear(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	/* The list links belong to the model (qrnic_qlist_*); a destroyed
	 * QP has left its lists (qrnic_qp_fini_state), but keep them intact
	 * whatever happens so that a list is never cut. */
	struct qrnic_qlink work = qp->work, flushq = qp->flushq;

	qrnic_ring_pl_free(d, &qp->sq_pl);
	qrnic_ring_pl_free(d, &qp->rq_pl);
	memset(qp, 0, sizeof(*qp));
	qp->work = work;
	qp->flushq = flushq;
}

static void qp_attr_defaults(struct qrnic_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = S(RESET);
	a->port_num = 1;
}

static uint8_t qp_max_rd_atomic(const struct qrnic_dev *d)
{
	return (uint8_t)(d->cfg.max_rd_atomic < QRNIC_MAX_RD_ATOMIC ? d->cfg.max_rd_atomic
								    : QRNIC_MAX_RD_ATOMIC);
}

/* ---- CREATE_QP ------------------------------------------------------------ */
uint8_t qrnic_fw_create_qp(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			   struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_create_qp *c = &cmd->u.create_qp;
	struct qrnic_pd *pd;
	struct qrnic_cq *scq, *rcq;
	struct qrnic_srq *srq = NULL;
	struct qrnic_qp *qp = NULL;
	uint64_t *sq_pl = NULL, *rq_pl = NULL;
	uint32_t qpn;
	uint8_t st;
	long nz;

#define F(field) QRNIC_FW_OFF(u.create_qp.field)
	/* XRC (ABI 1.3): a TGT QP has no PD, CQ, SQ or RQ, only an XRC domain
	 * (in the srqn field); an INI QP has no receive side */
	const bool ini = c->qp_type == QRNIC_QPT_XRC_INI, tgt = c->qp_type == QRNIC_QPT_XRC_TGT;
	struct qrnic_xrcd *xrcd = NULL;

	if (!qrnic_fw_uctx_ok(d, c->uctx))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, F(uctx));
	if (tgt) {
		if (c->pdn)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(pdn));
		pd = NULL;
	} else {
		pd = qrnic_fw_pd(d, c->pdn);
		if (!pd || pd->uctx != c->uctx)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, F(pdn));
	}
	if (tgt) {
		if (c->send_cqn)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(send_cqn));
		scq = NULL;
	} else {
		scq = qrnic_fw_cq(d, c->send_cqn);
		if (!scq || scq->uctx != c->uctx)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, F(send_cqn));
	}
	if (ini || tgt) {
		if (c->recv_cqn)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(recv_cqn));
		rcq = NULL;
	} else {
		rcq = qrnic_fw_cq(d, c->recv_cqn);
		if (!rcq || rcq->uctx != c->uctx)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, F(recv_cqn));
	}
	if (qp_type_col(c->qp_type) < 0)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(qp_type));
	if (c->qp_type == QRNIC_QPT_GSI && c->uctx != 0)	/* QP1 is the kernel's */
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(uctx));
	if (tgt ? c->sq_log_depth != 0
		: (c->sq_log_depth < 1 || c->sq_log_depth > QRNIC_MAX_QUEUE_LOG ||
		   (1u << c->sq_log_depth) > d->cfg.max_qp_wr))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(sq_log_depth));
	if (tgt ? c->sq_wqe_shift != 0
		: (c->sq_wqe_shift < QRNIC_MIN_WQE_SHIFT || c->sq_wqe_shift > QRNIC_MAX_SEND_WQE_SHIFT))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(sq_wqe_shift));
	if (c->rq_log_depth > QRNIC_MAX_QUEUE_LOG || (1u << c->rq_log_depth) > d->cfg.max_qp_wr ||
	    ((ini || tgt) && c->rq_log_depth))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rq_log_depth));
	/* rq_log_depth 0: no RQ; rq_wqe_shift is then not used, rq_addr must be 0 */
	if (c->rq_log_depth && (c->rq_wqe_shift < QRNIC_MIN_RECV_WQE_SHIFT ||
				c->rq_wqe_shift > QRNIC_MAX_RECV_WQE_SHIFT))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rq_wqe_shift));
	nz = qrnic_fw_nonzero(c->rsvd0, sizeof(c->rsvd0));
	if (nz >= 0)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rsvd0) + (uint32_t)nz);
	/* the page-list flags name rings the QP has (ABI 1.8) */
	if (c->flags & ~(tgt ? 0 : QRNIC_QP_F_SQ_SIG_ALL | QRNIC_QP_F_SQ_PAGELIST |
			 (c->rq_log_depth ? QRNIC_QP_F_RQ_PAGELIST : 0)))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(flags));
	if (tgt) {
		xrcd = qrnic_fw_xrcd_for(d, c->xrcd, c->uctx);
		if (!xrcd)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, F(xrcd));
	} else if (ini && c->srqn) {
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(srqn));
	} else if (c->srqn) {
		srq = qrnic_fw_srq(d, c->srqn);
		/* an XRC SRQ serves XRC TGT QPs only */
		if (!srq || srq->uctx != c->uctx || c->qp_type == QRNIC_QPT_GSI || srq->xrcd)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, F(srqn));
		if (c->rq_log_depth || c->rq_wqe_shift || c->rq_addr)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rq_log_depth));
	}
	if (tgt ? c->sq_addr != 0
		: !(c->flags & QRNIC_QP_F_SQ_PAGELIST) &&
		  !qrnic_fw_ring_ok(c->sq_addr, 1ull << (c->sq_log_depth + c->sq_wqe_shift)))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(sq_addr));
	if (c->rq_log_depth ? !(c->flags & QRNIC_QP_F_RQ_PAGELIST) &&
			      !qrnic_fw_ring_ok(c->rq_addr,
						 1ull << (c->rq_log_depth + c->rq_wqe_shift))
			    : c->rq_addr != 0)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rq_addr));
	/* ABI 1.10: the RQ producer record, only with an RQ, 4-byte aligned */
	if (c->rq_log_depth ? (c->rq_dbrec_addr & 3) || c->rq_dbrec_addr > UINT64_MAX - 3
			    : c->rq_dbrec_addr != 0)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rq_dbrec_addr));
	/* ABI 1.11: the SQ record, only with an SQ (not XRC TGT), 8-byte
	 * aligned (so its 8 bytes cannot wrap) */
	if (tgt ? c->sq_dbrec_addr != 0 : (c->sq_dbrec_addr & 7) != 0)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(sq_dbrec_addr));
	/* the page lists last, once all else is good (ABI 1.8, spec 6.6.21) */
	if (!tgt) {
		st = qrnic_fw_ring_get(d, cqe, c->flags & QRNIC_QP_F_SQ_PAGELIST, c->sq_addr,
				       1ull << (c->sq_log_depth + c->sq_wqe_shift), F(sq_addr),
				       &sq_pl);
		if (st)
			return st;
	}
	if (c->rq_log_depth) {
		st = qrnic_fw_ring_get(d, cqe, c->flags & QRNIC_QP_F_RQ_PAGELIST, c->rq_addr,
				       1ull << (c->rq_log_depth + c->rq_wqe_shift), F(rq_addr),
				       &rq_pl);
		if (st) {
			qrnic_ring_pl_free(d, &sq_pl);
			return st;
		}
	}

	if (c->qp_type == QRNIC_QPT_GSI) {
		qpn = 1;
		if (d->cfg.max_qp < 2 || d->qp[1].valid) {	/* only one QP1 */
			qrnic_ring_pl_free(d, &sq_pl);
			qrnic_ring_pl_free(d, &rq_pl);
			return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, F(qp_type));
		}
		qp = &d->qp[1];
	} else {
		/* Round robin from the last QPN handed out, so a QPN is not
		 * reused at once: CQEs a destroyed QP left in a shared CQ are
		 * not taken for the new QP's.  Within a window of twice the QPs
		 * that exist (at least 1022), not the whole QPN space: a guest
		 * that creates and destroys QPs would otherwise walk the whole
		 * QP table (1968 bytes a slot, 129 MiB at 65536 QPs) and make
		 * every page of it resident; the window keeps the table's
		 * memory proportional to the QPs in use and still leaves at
		 * least as many free QPNs as live ones to rotate through. */
		uint32_t span = d->cfg.max_qp - 2;
		uint32_t window = d->qp_live > 511 ? 2 * d->qp_live : 1022;

		if (window < span)
			span = window;

		for (uint32_t i = 0; i < span; i++) {
			qpn = 2 + (d->next_qpn - 2 + i) % span;
			if (!d->qp[qpn].valid) {
				qp = &d->qp[qpn];
				d->next_qpn = qpn + 1 < d->cfg.max_qp ? qpn + 1 : 2;
				break;
			}
		}
		if (!qp) {
			qrnic_ring_pl_free(d, &sq_pl);
			qrnic_ring_pl_free(d, &rq_pl);
			return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
		}
	}

	if (qpn >= d->qp_hwm)
		d->qp_hwm = qpn + 1;	/* before the slot is written (qrnic_internal.h) */
	qp_clear(d, qp);
	qp->type = c->qp_type;
	qp->qpn = qpn;
	qp->uctx = c->uctx;
	qp->pdn = c->pdn;
	qp->send_cqn = c->send_cqn;
	qp->recv_cqn = c->recv_cqn;
	qp->srqn = tgt ? 0 : c->srqn;
	qp->xrcd = tgt ? c->xrcd : 0;
	qp->flags = c->flags & ~(QRNIC_QP_F_SQ_PAGELIST | QRNIC_QP_F_RQ_PAGELIST);
	qp_attr_defaults(&qp->attr);
	qp->sq_addr = c->sq_addr;
	qp->sq_pl = sq_pl;	/* the QP owns its lists now (qp_clear frees them) */
	qp->rq_pl = rq_pl;
	qp->sq_log_depth = c->sq_log_depth;
	qp->sq_wqe_shift = c->sq_wqe_shift;
	qp->rq_addr = c->rq_addr;
	qp->rq_log_depth = c->rq_log_depth;
	qp->rq_wqe_shift = c->rq_log_depth ? c->rq_wqe_shift : 0;
	qp->rq_dbrec = c->rq_dbrec_addr;
	qp->sq_dbrec = c->sq_dbrec_addr;
	qp->sq_rec_no_db = false;	/* the driver wrote 0 there (spec 8.6.2) */
	qp->valid = true;
	if (qrnic_qp_init_state(d, qp) != 0) {
		qp_clear(d, qp);
		return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
	}
	d->qp_live++;
	if (pd)
		pd->refcnt++;
	if (scq)
		scq->refcnt++;
	if (rcq)
		rcq->refcnt++;
	if (srq)
		srq->refcnt++;
	if (xrcd)
		xrcd->refcnt++;
	cqe->result[0] = qpn;
	return QRNIC_AQ_OK;
#undef F
}

/* ---- MODIFY_QP ------------------------------------------------------------ */
uint8_t qrnic_fw_modify_qp(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			   struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_modify_qp *c = &cmd->u.modify_qp;
	const struct qrnic_qp_attr *a = &c->attr;
	const uint32_t mask = a->attr_mask;
	const uint8_t maxrd = qp_max_rd_atomic(d);
	const struct qp_trans *t;
	struct qrnic_qp *qp;
	uint8_t cur, next, st;
	int col;

#define F(field) QRNIC_FW_OFF(u.modify_qp.attr.field)
	qp = qrnic_fw_qp(d, c->qpn);
	if (!qp)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.modify_qp.qpn));

	/* The state machine. */
	col = qp_type_col(qp->type);
	cur = qp->attr.qp_state;
	next = (mask & A(STATE)) ? a->qp_state : cur;	/* no STATE: same state */
	t = qp_trans_get(col, cur, next);
	if (!t)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_STATE, F(qp_state));
	if ((mask & A(CUR_STATE)) && a->cur_qp_state != cur)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_STATE, F(cur_qp_state));
	if (mask & QP_ATTR_UNSUPPORTED)
		return qrnic_fw_fail(cqe, QRNIC_AQ_NOT_SUPPORTED, F(attr_mask));
	if (!qp_mask_ok(t, col, cur, mask))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_ATTR_MASK, F(attr_mask));

	/* Reserved fields, then the values of the attributes present. */
	if (c->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.modify_qp.rsvd));
	if (a->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rsvd));
	if (a->sq_draining)	/* QUERY_QP output */
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(sq_draining));
	if ((mask & A(EN_SQD_ASYNC)) && a->en_sqd_async_notify > 1)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(en_sqd_async_notify));
	if ((mask & A(ACCESS_FLAGS)) && (a->qp_access_flags & ~QRNIC_ACCESS_ALL))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(qp_access_flags));
	if ((mask & A(PKEY_INDEX)) && a->pkey_index != 0)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(pkey_index));
	if ((mask & A(PORT)) && a->port_num != 1)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(port_num));
	if (mask & A(AV)) {
		st = qrnic_fw_check_av(d, &a->av, F(av), cqe);
		if (st != QRNIC_AQ_OK)
			return st;
	}
	if ((mask & A(PATH_MTU)) &&
	    (a->path_mtu < QRNIC_MTU_256 || a->path_mtu > QRNIC_MTU_4096 ||
	     a->path_mtu > qrnic_fw_port_mtu(d)))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(path_mtu));
	if ((mask & A(TIMEOUT)) && a->timeout > 31)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(timeout));
	if ((mask & A(RETRY_CNT)) && a->retry_cnt > 7)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(retry_cnt));
	if ((mask & A(RNR_RETRY)) && a->rnr_retry > 7)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rnr_retry));
	if ((mask & A(RQ_PSN)) && (a->rq_psn & ~QRNIC_PSN_MASK))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rq_psn));
	if ((mask & A(MAX_QP_RD_ATOMIC)) && a->max_rd_atomic > maxrd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(max_rd_atomic));
	if ((mask & A(MIN_RNR_TIMER)) && a->min_rnr_timer > 31)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(min_rnr_timer));
	if ((mask & A(SQ_PSN)) && (a->sq_psn & ~QRNIC_PSN_MASK))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(sq_psn));
	if ((mask & A(MAX_DEST_RD_ATOMIC)) && a->max_dest_rd_atomic > maxrd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(max_dest_rd_atomic));
	if ((mask & A(DEST_QPN)) && (a->dest_qpn & ~QRNIC_PSN_MASK))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(dest_qpn));
	if ((mask & A(CC)) && a->cc_algo > QRNIC_CC_NALGO)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(cc_algo));
	/* QKEY: any 32-bit value. */
#undef F

	/* Everything is valid: apply. */
	if (next == S(RESET) && cur != S(RESET)) {
		/* Back to the attributes of a fresh QP (the state itself is
		 * qrnic_qp_set_state's to change). */
		qp_attr_defaults(&qp->attr);
		qp->attr.qp_state = cur;
	}
	if (mask & A(EN_SQD_ASYNC))
		qp->attr.en_sqd_async_notify = a->en_sqd_async_notify;
	if (mask & A(ACCESS_FLAGS))
		qp->attr.qp_access_flags = a->qp_access_flags;
	if (mask & A(PKEY_INDEX))
		qp->attr.pkey_index = a->pkey_index;
	if (mask & A(PORT))
		qp->attr.port_num = a->port_num;
	if (mask & A(QKEY))
		qp->attr.qkey = a->qkey;
	if (mask & A(AV))
		qp->attr.av = a->av;
	if (mask & A(PATH_MTU))
		qp->attr.path_mtu = a->path_mtu;
	if (mask & A(TIMEOUT))
		qp->attr.timeout = a->timeout;
	if (mask & A(RETRY_CNT))
		qp->attr.retry_cnt = a->retry_cnt;
	if (mask & A(RNR_RETRY))
		qp->attr.rnr_retry = a->rnr_retry;
	if (mask & A(RQ_PSN))
		qp->attr.rq_psn = a->rq_psn;
	if (mask & A(MAX_QP_RD_ATOMIC))
		qp->attr.max_rd_atomic = a->max_rd_atomic;
	if (mask & A(MIN_RNR_TIMER))
		qp->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & A(SQ_PSN))
		qp->attr.sq_psn = a->sq_psn;
	if (mask & A(MAX_DEST_RD_ATOMIC))
		qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & A(DEST_QPN))
		qp->attr.dest_qpn = a->dest_qpn;
	if ((mask & A(CC)) && a->cc_algo != qp->attr.cc_algo) {
		/* another algorithm: its reaction point starts unlimited */
		qp->attr.cc_algo = a->cc_algo;
		qrnic_cc_qp_reset(qp);
		/* a limiter event it waited for is stale now: serviced again */
		if (next == cur && (cur == QRNIC_QPS_RTS || cur == QRNIC_QPS_SQD))
			qrnic_qp_kick(d, qp);	/* (a new state kicks it anyway) */
	}
	/* ERR -> ERR with an RQ record: set_state flushes again what the
	 * record names since (spec 8.6.1) */
	if (next != cur || (next == QRNIC_QPS_ERR && qp->rq_dbrec))
		qrnic_qp_set_state(d, qp, next);
	return QRNIC_AQ_OK;
}

/* ---- QUERY_QP ------------------------------------------------------------- */
uint8_t qrnic_fw_query_qp(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			  struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_query_qp *q = &cmd->u.query_qp;
	struct qrnic_qp *qp = qrnic_fw_qp(d, q->handle);
	struct qrnic_qp_attr a;
	uint8_t state;

	if (!qp)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.query_qp.handle));
	a = qp->attr;
	state = qp->attr.qp_state;
	a.attr_mask = 0;
	a.qp_state = state;
	a.cur_qp_state = state;
	if (state == S(RTS) || state == S(SQD) || state == S(SQE))
		a.sq_psn = qp->req.next_psn & QRNIC_PSN_MASK;
	if (state >= S(RTR) && state <= S(SQE))
		a.rq_psn = qp->resp.epsn & QRNIC_PSN_MASK;
	if (state != S(SQD))
		a.sq_draining = 0;
	return qrnic_fw_respond(d, cqe, q->resp_addr, q->resp_len,
				QRNIC_FW_OFF(u.query_qp.resp_addr), &a, sizeof(a));
}

/* ---- DESTROY_QP ----------------------------------------------------------- */
uint8_t qrnic_fw_destroy_qp(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			    struct qrnic_aq_cqe *cqe)
{
	struct qrnic_qp *qp = qrnic_fw_qp(d, cmd->u.handle.handle);
	struct qrnic_pd *pd;
	struct qrnic_cq *cq;
	struct qrnic_srq *srq;
	struct qrnic_xrcd *xrcd;

	if (!qp)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.handle.handle));
	qrnic_qp_fini_state(d, qp);
	qrnic_mcg_detach_qp(d, qp->qpn);	/* its QPN may name another QP later */
	qrnic_mw_qp_gone(d, qp);		/* likewise its type 2 windows */
	pd = qrnic_fw_pd(d, qp->pdn);
	if (pd && pd->refcnt)
		pd->refcnt--;
	cq = qrnic_fw_cq(d, qp->send_cqn);
	if (cq && cq->refcnt)
		cq->refcnt--;
	cq = qrnic_fw_cq(d, qp->recv_cqn);
	if (cq && cq->refcnt)
		cq->refcnt--;
	srq = qrnic_fw_srq(d, qp->srqn);
	if (srq && srq->refcnt)
		srq->refcnt--;
	xrcd = qrnic_fw_xrcd(d, qp->xrcd);
	if (xrcd && xrcd->refcnt)
		xrcd->refcnt--;
	qp_clear(d, qp);
	if (d->qp_live)
		d->qp_live--;
	return QRNIC_AQ_OK;
}
