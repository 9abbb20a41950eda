/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic firmware: protection domains, completion queues, event queues and
 * address handles.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qrnic_fw.h"

uint8_t qrnic_fw_check_av(struct qrnic_dev *d, const struct qrnic_av *av,
			  uint32_t base_off, struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_gid_entry *sgid;

#define AV_OFF(f) (base_off + (uint32_t)offsetof(struct qrnic_av, f))
	if (av->net_type != QRNIC_NET_IPV4 && av->net_type != QRNIC_NET_IPV6)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, AV_OFF(net_type));
	if (av->sgid_index >= d->cfg.gid_tbl_len || !d->gid[av->sgid_index].valid)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, AV_OFF(sgid_index));
	sgid = &d->gid[av->sgid_index];
	if (sgid->net_type != av->net_type)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, AV_OFF(net_type));
	if ((av->net_type == QRNIC_NET_IPV4) != qrnic_fw_gid_v4mapped(av->dgid))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, AV_OFF(dgid));
	if (av->flow_label & ~0xfffffu)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, AV_OFF(flow_label));
	/* hop_limit: every value is meaningful (0 = 64); traffic_class too. */
	if (av->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, AV_OFF(rsvd));
#undef AV_OFF
	return QRNIC_AQ_OK;
}

/* ---- PD ------------------------------------------------------------------- */
uint8_t qrnic_fw_create_pd(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			   struct qrnic_aq_cqe *cqe)
{
	uint32_t uctx = cmd->u.create_pd.uctx;
	uint32_t i;

	if (!qrnic_fw_uctx_ok(d, uctx))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.create_pd.uctx));
	for (i = 1; i < d->cfg.max_pd; i++) {
		struct qrnic_pd *pd = &d->pd[i];

		if (!pd->valid) {
			memset(pd, 0, sizeof(*pd));
			pd->valid = true;
			pd->uctx = uctx;
			cqe->result[0] = i;
			return QRNIC_AQ_OK;
		}
	}
	return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
}

uint8_t qrnic_fw_destroy_pd(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			    struct qrnic_aq_cqe *cqe)
{
	const uint32_t off = QRNIC_FW_OFF(u.handle.handle);
	struct qrnic_pd *pd = qrnic_fw_pd(d, cmd->u.handle.handle);

	if (!pd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, off);
	if (pd->refcnt)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, off);
	memset(pd, 0, sizeof(*pd));
	return QRNIC_AQ_OK;
}

/* ---- CQ ------------------------------------------------------------------- */
uint8_t qrnic_fw_create_cq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			   struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_create_cq *c = &cmd->u.create_cq;
	uint64_t *pl;
	struct qrnic_eq *eq;
	uint32_t i;
	uint8_t st;
	long nz;

	if (!qrnic_fw_uctx_ok(d, c->uctx))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.create_cq.uctx));
	eq = qrnic_fw_eq(d, c->eqn);
	if (!eq)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.create_cq.eqn));
	if (c->log_depth < 1 || c->log_depth > QRNIC_MAX_QUEUE_LOG ||
	    (1u << c->log_depth) > d->cfg.max_cqe)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.create_cq.log_depth));
	if (c->flags & ~QRNIC_CQ_F_ALL)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.create_cq.flags));
	nz = qrnic_fw_nonzero(c->rsvd, sizeof(c->rsvd));
	if (nz >= 0)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM,
				     QRNIC_FW_OFF(u.create_cq.rsvd) + (uint32_t)nz);
	if (!(c->flags & QRNIC_CQ_F_PAGELIST) &&
	    !qrnic_fw_ring_ok(c->ring_addr, (uint64_t)QRNIC_CQ_CQE_SIZE(c->flags) << c->log_depth))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.create_cq.ring_addr));
	if ((c->dbrec_addr & 3) || c->dbrec_addr > UINT64_MAX - 3)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.create_cq.dbrec_addr));
	/* the ring holds 1 << log_depth CQEs of the size the flags select;
	 * checked last: a page list is fetched only for a command that is
	 * otherwise good */
	st = qrnic_fw_ring_get(d, cqe, c->flags & QRNIC_CQ_F_PAGELIST, c->ring_addr,
			       (uint64_t)QRNIC_CQ_CQE_SIZE(c->flags) << c->log_depth,
			       QRNIC_FW_OFF(u.create_cq.ring_addr), &pl);
	if (st)
		return st;

	for (i = 1; i < d->cfg.max_cq && i <= QRNIC_DB_QN_MASK; i++) {
		struct qrnic_cq *cq = &d->cq[i];

		if (cq->valid)
			continue;
		memset(cq, 0, sizeof(*cq));
		cq->uctx = c->uctx;
		cq->eqn = c->eqn;
		cq->log_depth = c->log_depth;
		cq->flags = c->flags & ~QRNIC_CQ_F_PAGELIST;	/* ring_pl says it */
		cq->ring = c->ring_addr;
		cq->ring_pl = pl;
		cq->dbrec = c->dbrec_addr;
		cq->valid = true;
		eq->refcnt++;
		cqe->result[0] = i;
		return QRNIC_AQ_OK;
	}
	qrnic_ring_pl_free(d, &pl);
	return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
}

uint8_t qrnic_fw_destroy_cq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			    struct qrnic_aq_cqe *cqe)
{
	const uint32_t off = QRNIC_FW_OFF(u.handle.handle);
	struct qrnic_cq *cq = qrnic_fw_cq(d, cmd->u.handle.handle);
	struct qrnic_eq *eq;

	if (!cq)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, off);
	if (cq->refcnt)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, off);
	eq = qrnic_fw_eq(d, cq->eqn);
	if (eq && eq->refcnt)
		eq->refcnt--;
	qrnic_fx_cancel_cq(d, cmd->u.handle.handle);	/* timed CQEs not yet written */
	qrnic_ring_pl_free(d, &cq->ring_pl);
	memset(cq, 0, sizeof(*cq));
	return QRNIC_AQ_OK;
}

uint8_t qrnic_fw_resize_cq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			   struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_resize_cq *c = &cmd->u.resize_cq;
	struct qrnic_cq *cq = qrnic_fw_cq(d, c->cqn);
	uint64_t *pl;
	uint32_t carried;
	long nz;
	int st;

#define F(field) QRNIC_FW_OFF(u.resize_cq.field)
	if (!cq)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, F(cqn));
	if (c->log_depth < 1 || c->log_depth > QRNIC_MAX_QUEUE_LOG ||
	    (1u << c->log_depth) > d->cfg.max_cqe)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(log_depth));
	if (c->flags & ~QRNIC_CQ_F_PAGELIST)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(flags));
	nz = qrnic_fw_nonzero(c->rsvd, sizeof(c->rsvd));
	if (nz >= 0)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rsvd) + (uint32_t)nz);
	if (c->rsvd2)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rsvd2));
	/* the new ring has the CQ's CQE size (a timestamp CQ stays one) */
	st = qrnic_fw_ring_get(d, cqe, c->flags & QRNIC_CQ_F_PAGELIST, c->ring_addr,
			       (uint64_t)QRNIC_CQ_CQE_SIZE(cq->flags) << c->log_depth, F(ring_addr),
			       &pl);
	if (st)
		return (uint8_t)st;
	/* on success the CQ owns pl (and frees its old list) */
	st = qrnic_cq_resize(d, cq, c->log_depth, c->ring_addr, pl, &carried);
	if (st)
		qrnic_ring_pl_free(d, &pl);
	if (st == QRNIC_AQ_BAD_PARAM)	/* the CQEs not consumed do not fit */
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(log_depth));
	if (st == QRNIC_AQ_BAD_STATE)	/* it overran: destroy it */
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_STATE, F(cqn));
	if (st)
		return qrnic_fw_fail(cqe, (uint8_t)st, F(ring_addr));
	cqe->result[0] = carried;
	return QRNIC_AQ_OK;
#undef F
}

uint8_t qrnic_fw_modify_cq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			   struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_modify_cq *c = &cmd->u.modify_cq;
	struct qrnic_cq *cq = qrnic_fw_cq(d, c->cqn);

	if (!cq)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.modify_cq.cqn));
	if (c->rsvd[0] || c->rsvd[1])
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM,
				     QRNIC_FW_OFF(u.modify_cq.rsvd) + (c->rsvd[0] ? 0 : 4));
	cq->mod_count = c->count;
	cq->mod_period_us = c->period_us;
	return QRNIC_AQ_OK;
}

/* ---- EQ ------------------------------------------------------------------- */
uint8_t qrnic_fw_create_eq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			   struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_create_eq *c = &cmd->u.create_eq;
	bool async = c->flags & QRNIC_EQ_F_ASYNC;
	uint32_t i;

	if (c->log_depth < 1 || c->log_depth > QRNIC_MAX_QUEUE_LOG)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.create_eq.log_depth));
	if (c->rsvd0)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.create_eq.rsvd0));
	if (c->vector >= d->cfg.num_vectors)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.create_eq.vector));
	if (c->flags & ~QRNIC_EQ_F_ASYNC)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.create_eq.flags));
	if (!qrnic_fw_ring_ok(c->ring_addr, (uint64_t)sizeof(struct qrnic_eqe) << c->log_depth))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.create_eq.ring_addr));
	if (async) {
		/* At most one async EQ. */
		for (i = 1; i < d->cfg.max_eq; i++)
			if (d->eq[i].valid && d->eq[i].async)
				return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, 0);
	}
	for (i = 1; i < d->cfg.max_eq && i <= QRNIC_EQ_DB_EQN_MASK; i++) {
		struct qrnic_eq *eq = &d->eq[i];

		if (eq->valid)
			continue;
		memset(eq, 0, sizeof(*eq));
		eq->async = async;
		eq->vector = c->vector;
		eq->log_depth = c->log_depth;
		eq->ring = c->ring_addr;
		eq->valid = true;
		cqe->result[0] = i;
		return QRNIC_AQ_OK;
	}
	return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
}

uint8_t qrnic_fw_destroy_eq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			    struct qrnic_aq_cqe *cqe)
{
	const uint32_t off = QRNIC_FW_OFF(u.handle.handle);
	struct qrnic_eq *eq = qrnic_fw_eq(d, cmd->u.handle.handle);

	if (!eq)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, off);
	if (eq->refcnt)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, off);
	memset(eq, 0, sizeof(*eq));
	return QRNIC_AQ_OK;
}

/* ---- AH ------------------------------------------------------------------- */
uint8_t qrnic_fw_create_ah(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			   struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_create_ah *c = &cmd->u.create_ah;
	struct qrnic_pd *pd = qrnic_fw_pd(d, c->pdn);
	uint32_t i;
	uint8_t st;

	if (!pd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.create_ah.pdn));
	if (c->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.create_ah.rsvd));
	st = qrnic_fw_check_av(d, &c->av, QRNIC_FW_OFF(u.create_ah.av), cqe);
	if (st != QRNIC_AQ_OK)
		return st;
	for (i = 1; i < d->cfg.max_ah; i++) {
		struct qrnic_ah *ah = &d->ah[i];

		if (ah->valid)
			continue;
		memset(ah, 0, sizeof(*ah));
		ah->pdn = c->pdn;
		ah->av = c->av;
		ah->valid = true;
		pd->refcnt++;
		cqe->result[0] = i;
		return QRNIC_AQ_OK;
	}
	return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
}

uint8_t qrnic_fw_destroy_ah(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			    struct qrnic_aq_cqe *cqe)
{
	struct qrnic_ah *ah = qrnic_fw_ah(d, cmd->u.handle.handle);
	struct qrnic_pd *pd;

	if (!ah)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.handle.handle));
	pd = qrnic_fw_pd(d, ah->pdn);
	if (pd && pd->refcnt)
		pd->refcnt--;
	memset(ah, 0, sizeof(*ah));
	return QRNIC_AQ_OK;
}
