// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Read-only snapshots of the device's queues (qrnic_model.h, "Read-only
 * snapshots"): what QEMU's "qps", "cqs", "eqs" and "srqs" properties, the
 * harness and scripts/qrnic-view show.
 *
 * The state read here is guest-influenced (ring sizes, indexes, PSNs come
 * from admin commands and doorbells), so this file only copies numbers:
 * each walk visits at most the table's size, follows no pointer of the
 * state (a QP's send window is not looked at), and any value is reported
 * as it is.  tests/test_view.py fuzzes QPs in every state through it.
 */
#include <stddef.h>
#include <string.h>

#include "qrnic_internal.h"

/* Every view is a plain array of uint32_t. */
_Static_assert(sizeof(struct qrnic_qp_view) % sizeof(uint32_t) == 0, "qp view");
_Static_assert(sizeof(struct qrnic_cq_view) == 10 * sizeof(uint32_t), "cq view");
_Static_assert(sizeof(struct qrnic_eq_view) == 8 * sizeof(uint32_t), "eq view");
_Static_assert(sizeof(struct qrnic_srq_view) == 7 * sizeof(uint32_t), "srq view");

#define F(type, name) { #name, offsetof(struct type, name) }
struct view_field {
	const char *name;
	size_t off;
};

static const struct view_field qp_fields[] = {
	F(qrnic_qp_view, qpn), F(qrnic_qp_view, type), F(qrnic_qp_view, state),
	F(qrnic_qp_view, dest_qpn), F(qrnic_qp_view, path_mtu),
	F(qrnic_qp_view, send_cqn), F(qrnic_qp_view, recv_cqn), F(qrnic_qp_view, srqn),
	F(qrnic_qp_view, sq_depth), F(qrnic_qp_view, sq_pi), F(qrnic_qp_view, sq_next),
	F(qrnic_qp_view, sq_ci),
	F(qrnic_qp_view, rq_depth), F(qrnic_qp_view, rq_pi), F(qrnic_qp_view, rq_ci),
	F(qrnic_qp_view, next_psn), F(qrnic_qp_view, una_psn), F(qrnic_qp_view, high_psn),
	F(qrnic_qp_view, send_psn), F(qrnic_qp_view, epsn), F(qrnic_qp_view, msn),
	F(qrnic_qp_view, inflight), F(qrnic_qp_view, cwnd), F(qrnic_qp_view, rd_atomic_out),
	F(qrnic_qp_view, timeout), F(qrnic_qp_view, retry_cnt), F(qrnic_qp_view, retry_left),
	F(qrnic_qp_view, rnr_retry), F(qrnic_qp_view, rnr_left),
	F(qrnic_qp_view, rnr_wait), F(qrnic_qp_view, timer_armed), F(qrnic_qp_view, stopped),
	F(qrnic_qp_view, nak_sent), F(qrnic_qp_view, on_work),
};
_Static_assert(sizeof(qp_fields) / sizeof(qp_fields[0]) * sizeof(uint32_t) ==
	       sizeof(struct qrnic_qp_view), "every qp view field named");

static const struct view_field cq_fields[] = {
	F(qrnic_cq_view, cqn), F(qrnic_cq_view, eqn), F(qrnic_cq_view, depth),
	F(qrnic_cq_view, pi), F(qrnic_cq_view, ci), F(qrnic_cq_view, written),
	F(qrnic_cq_view, armed), F(qrnic_cq_view, error),
	F(qrnic_cq_view, mod_count), F(qrnic_cq_view, mod_period_us),
};

static const struct view_field eq_fields[] = {
	F(qrnic_eq_view, eqn), F(qrnic_eq_view, vector), F(qrnic_eq_view, depth),
	F(qrnic_eq_view, pi), F(qrnic_eq_view, ci), F(qrnic_eq_view, async),
	F(qrnic_eq_view, armed), F(qrnic_eq_view, overflow),
};

static const struct view_field srq_fields[] = {
	F(qrnic_srq_view, srqn), F(qrnic_srq_view, depth), F(qrnic_srq_view, pi),
	F(qrnic_srq_view, ci), F(qrnic_srq_view, limit), F(qrnic_srq_view, xrcd),
	F(qrnic_srq_view, cqn),
};
#undef F

static const struct {
	const char *name;
	const struct view_field *fields;
	unsigned nfields;
	size_t size;
} kinds[QRNIC_VIEW_KINDS] = {
	[QRNIC_VIEW_QP] = { "qp", qp_fields, sizeof(qp_fields) / sizeof(qp_fields[0]),
			    sizeof(struct qrnic_qp_view) },
	[QRNIC_VIEW_CQ] = { "cq", cq_fields, sizeof(cq_fields) / sizeof(cq_fields[0]),
			    sizeof(struct qrnic_cq_view) },
	[QRNIC_VIEW_EQ] = { "eq", eq_fields, sizeof(eq_fields) / sizeof(eq_fields[0]),
			    sizeof(struct qrnic_eq_view) },
	[QRNIC_VIEW_SRQ] = { "srq", srq_fields, sizeof(srq_fields) / sizeof(srq_fields[0]),
			     sizeof(struct qrnic_srq_view) },
};

unsigned qrnic_view_nfields(enum qrnic_view_kind k)
{
	return (unsigned)k < QRNIC_VIEW_KINDS ? kinds[k].nfields : 0;
}

const char *qrnic_view_field(enum qrnic_view_kind k, unsigned i)
{
	if ((unsigned)k >= QRNIC_VIEW_KINDS || i >= kinds[k].nfields)
		return NULL;
	return kinds[k].fields[i].name;
}

const char *qrnic_view_kind_name(enum qrnic_view_kind k)
{
	return (unsigned)k < QRNIC_VIEW_KINDS ? kinds[k].name : NULL;
}

const char *qrnic_qp_state_name(uint32_t state)
{
	static const char *const names[] = {
		[QRNIC_QPS_RESET] = "RESET", [QRNIC_QPS_INIT] = "INIT", [QRNIC_QPS_RTR] = "RTR",
		[QRNIC_QPS_RTS] = "RTS", [QRNIC_QPS_SQD] = "SQD", [QRNIC_QPS_SQE] = "SQE",
		[QRNIC_QPS_ERR] = "ERR",
	};

	return state < sizeof(names) / sizeof(names[0]) && names[state] ? names[state] : "?";
}

const char *qrnic_qp_type_name(uint32_t type)
{
	switch (type) {
	case QRNIC_QPT_RC: return "RC";
	case QRNIC_QPT_UC: return "UC";
	case QRNIC_QPT_UD: return "UD";
	case QRNIC_QPT_GSI: return "GSI";
	case QRNIC_QPT_XRC_INI: return "XRC_INI";
	case QRNIC_QPT_XRC_TGT: return "XRC_TGT";
	default: return "?";
	}
}

/* 1 << log, for a log the guest may have put anywhere. */
static uint32_t depth_of(unsigned log)
{
	return log < 32 ? 1u << log : 0;
}

static void qp_view(const struct qrnic_qp *qp, uint32_t qpn, struct qrnic_qp_view *v)
{
	const struct qrnic_req *r = &qp->req;

	memset(v, 0, sizeof(*v));
	v->qpn = qpn;
	v->type = qp->type;
	v->state = qp->attr.qp_state;
	v->dest_qpn = qp->attr.dest_qpn & QRNIC_PSN_MASK;
	v->path_mtu = qrnic_mtu_bytes(qp->attr.path_mtu);
	v->send_cqn = qp->send_cqn;
	v->recv_cqn = qp->recv_cqn;
	v->srqn = qp->srqn;
	v->sq_depth = depth_of(qp->sq_log_depth);
	v->sq_pi = qp->sq_pi;
	v->sq_next = r->sq_next;
	v->sq_ci = r->sq_ci;
	v->rq_depth = qp->srqn ? 0 : depth_of(qp->rq_log_depth);
	v->rq_pi = qp->rq_pi;
	v->rq_ci = qp->resp.rq_ci;
	v->next_psn = r->next_psn & QRNIC_PSN_MASK;
	v->una_psn = r->una_psn & QRNIC_PSN_MASK;
	v->high_psn = r->high_psn & QRNIC_PSN_MASK;
	v->send_psn = r->cur_psn & QRNIC_PSN_MASK;
	v->epsn = qp->resp.epsn & QRNIC_PSN_MASK;
	v->msn = qp->resp.msn & QRNIC_PSN_MASK;
	v->inflight = qrnic_qp_rc(qp) ? (r->high_psn - r->una_psn) & QRNIC_PSN_MASK : 0;
	v->cwnd = r->cwnd;
	v->rd_atomic_out = r->rd_atomic_out;
	v->timeout = qp->attr.timeout;
	v->retry_cnt = qp->attr.retry_cnt;
	v->retry_left = r->retry_left;
	v->rnr_retry = qp->attr.rnr_retry;
	v->rnr_left = r->rnr_left;
	v->rnr_wait = r->rnr_wait;
	v->timer_armed = r->timer_armed;
	v->stopped = r->stopped;
	v->nak_sent = qp->resp.nak_sent;
	v->on_work = qp->work.on;
}

unsigned qrnic_dev_view(struct qrnic_dev *d, enum qrnic_view_kind k, uint32_t start,
			void *out, unsigned max, uint32_t *next)
{
	uint32_t limit, i;
	unsigned n = 0;

	if (next)
		*next = 0;
	if (!d || !out || (unsigned)k >= QRNIC_VIEW_KINDS)
		return 0;
	switch (k) {
	case QRNIC_VIEW_QP:  limit = d->qp ? d->cfg.max_qp : 0; break;
	case QRNIC_VIEW_CQ:  limit = d->cq ? d->cfg.max_cq : 0; break;
	case QRNIC_VIEW_EQ:  limit = d->eq ? d->cfg.max_eq : 0; break;
	default:             limit = d->srq ? d->cfg.max_srq : 0; break;
	}
	for (i = start; i < limit && n < max; i++) {
		switch (k) {
		case QRNIC_VIEW_QP:
			if (d->qp[i].valid)
				qp_view(&d->qp[i], i, (struct qrnic_qp_view *)out + n++);
			break;
		case QRNIC_VIEW_CQ: {
			const struct qrnic_cq *c = &d->cq[i];
			struct qrnic_cq_view *v = (struct qrnic_cq_view *)out + n;

			if (!c->valid)
				break;
			*v = (struct qrnic_cq_view){
				.cqn = i, .eqn = c->eqn, .depth = depth_of(c->log_depth),
				.pi = c->pi, .ci = c->ci, .written = c->vis,
				.armed = c->armed || c->armed_solicited, .error = c->error,
				.mod_count = c->mod_count, .mod_period_us = c->mod_period_us,
			};
			n++;
			break;
		}
		case QRNIC_VIEW_EQ: {
			const struct qrnic_eq *e = &d->eq[i];
			struct qrnic_eq_view *v = (struct qrnic_eq_view *)out + n;

			if (!e->valid)
				break;
			*v = (struct qrnic_eq_view){
				.eqn = i, .vector = e->vector, .depth = depth_of(e->log_depth),
				.pi = e->pi, .ci = e->ci, .async = e->async, .armed = e->armed,
				.overflow = e->overflow,
			};
			n++;
			break;
		}
		default: {
			const struct qrnic_srq *s = &d->srq[i];
			struct qrnic_srq_view *v = (struct qrnic_srq_view *)out + n;

			if (!s->valid)
				break;
			*v = (struct qrnic_srq_view){
				.srqn = i, .depth = depth_of(s->log_depth), .pi = s->pi,
				.ci = s->ci, .limit = s->limit, .xrcd = s->xrcd, .cqn = s->cqn,
			};
			n++;
			break;
		}
		}
	}
	if (next && i < limit)
		*next = i;
	return n;
}
