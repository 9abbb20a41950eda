/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: the OBJS section of a snapshot (user contexts, PDs,
 * CQs, EQs, SRQs, XRC domains, AHs, MRs with the MTT, GIDs, multicast
 * groups) and the check of the relations between the objects a stream
 * brings (snapshot.c has the stream and what it guarantees).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qrnic_internal.h"
#include "qrnic_snap.h"

/* OBJS: user contexts, PDs, CQs, EQs, SRQs, XRC domains, AHs, MRs (with
 * the MTT), GIDs and multicast groups: the entries in use, by index. */
struct mtt_run_w {
	struct qrnic_dev *d;
	struct qrnic_snap_w *w;
};

static void save_mtt_run(void *opaque, uint32_t s, uint32_t len)
{
	struct mtt_run_w *sr = opaque;

	qs_u32(sr->w, s);
	qs_u32(sr->w, len);
	for (uint32_t j = s; j < s + len; j++) {
		qs_u8(sr->w, sr->d->mtt_used[j]);
		qs_u64(sr->w, sr->d->mtt[j]);
	}
}

void qrnic_snap_save_pl(struct qrnic_snap_w *w, const uint64_t *pl, unsigned log_bytes)
{
	uint32_t n = pl ? qrnic_ring_npages(1ull << log_bytes) : 0;

	qs_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		qs_u64(w, pl[i]);
}

bool qrnic_snap_load_pl(struct qrnic_dev *d, struct qrnic_snap_r *r, uint64_t **pl,
			unsigned log_bytes,
			const char *what, uint32_t idx)
{
	/* the largest ring: 2^22 entries of 1024 bytes */
	const unsigned max_log = QRNIC_MAX_QUEUE_LOG + QRNIC_MAX_SEND_WQE_SHIFT;
	uint32_t n = qr_count(r, 1u << (max_log - QRNIC_RING_PAGE_SHIFT), 8, "ring pages");
	uint64_t *p;

	qrnic_ring_pl_free(d, pl);
	if (r->bad || n == 0)
		return !r->bad;
	if (log_bytes < QRNIC_RING_PAGE_SHIFT || log_bytes > max_log ||
	    n != qrnic_ring_npages(1ull << log_bytes))
		return qr_fail(r, "%s %u: a page list of %u pages for a ring of 2^%u bytes", what,
			       idx, n, log_bytes);
	p = malloc((size_t)n * sizeof(*p));
	if (!p)
		return qr_fail(r, "%s %u: no memory for its page list", what, idx);
	for (uint32_t i = 0; i < n; i++) {
		p[i] = qr_u64(r);
		if (!r->bad && !qrnic_ring_pl_entry_ok(p[i])) {
			qr_fail(r, "%s %u: page list entry %u is 0x%llx", what, idx, i,
				(unsigned long long)p[i]);
			break;
		}
	}
	if (r->bad) {
		free(p);
		return false;
	}
	*pl = p;
	d->ring_pls++;
	return true;
}

void qrnic_snap_save_objs(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	const struct qrnic_config *c = &d->cfg;
	uint32_t n;

	qs_begin(w, "OBJS", V_OBJS, 0);
	n = 0;
	for (uint32_t i = 0; i < c->max_uctx; i++)
		n += d->uctx_valid[i];
	qs_u32(w, n);
	for (uint32_t i = 0; i < c->max_uctx; i++)
		if (d->uctx_valid[i])
			qs_u32(w, i);

	n = 0;
	for (uint32_t i = 0; i < c->max_pd; i++)
		n += d->pd[i].valid;
	qs_u32(w, n);
	for (uint32_t i = 0; i < c->max_pd; i++) {
		if (!d->pd[i].valid)
			continue;
		qs_u32(w, i);
		qs_u32(w, d->pd[i].uctx);
		qs_u32(w, d->pd[i].refcnt);
	}

	n = 0;
	for (uint32_t i = 0; i < c->max_eq; i++)
		n += d->eq[i].valid;
	qs_u32(w, n);
	for (uint32_t i = 0; i < c->max_eq; i++) {
		const struct qrnic_eq *e = &d->eq[i];

		if (!e->valid)
			continue;
		qs_u32(w, i);
		qs_bool(w, e->async);
		qs_bool(w, e->armed);
		qs_bool(w, e->overflow);
		qs_bool(w, e->irq_pending);
		qs_u16(w, e->vector);
		qs_u8(w, e->log_depth);
		qs_u64(w, e->ring);
		qs_u32(w, e->pi);
		qs_u32(w, e->ci);
		qs_u32(w, e->refcnt);
	}

	n = 0;
	for (uint32_t i = 0; i < c->max_cq; i++)
		n += d->cq[i].valid;
	qs_u32(w, n);
	for (uint32_t i = 0; i < c->max_cq; i++) {
		const struct qrnic_cq *q = &d->cq[i];

		if (!q->valid)
			continue;
		qs_u32(w, i);
		qs_bool(w, q->armed);
		qs_bool(w, q->armed_solicited);
		qs_bool(w, q->error);
		qs_bool(w, q->event_pending);
		qs_u32(w, q->uctx);
		qs_u32(w, q->eqn);
		qs_u8(w, q->log_depth);
		qs_u64(w, q->ring);
		qs_u64(w, q->dbrec);
		qs_u32(w, q->pi);
		qs_u32(w, q->ci);
		qs_u32(w, q->refcnt);
		qs_u64(w, q->tm_last);
		qs_u32(w, q->vis);
		qs_u16(w, q->mod_count);
		qs_u16(w, q->mod_period_us);
		qs_u32(w, q->mod_seen);
		qs_u32(w, q->mod_gen);
		qs_u8(w, q->flags);
		qrnic_snap_save_pl(w, q->ring_pl,
				   q->log_depth + (QRNIC_CQ_CQE_SIZE(q->flags) == 64 ? 6 : 5));
	}

	n = 0;
	for (uint32_t i = 0; i < c->max_xrcd; i++)
		n += d->xrcd[i].valid;
	qs_u32(w, n);
	for (uint32_t i = 0; i < c->max_xrcd; i++) {
		if (!d->xrcd[i].valid)
			continue;
		qs_u32(w, i);
		qs_u32(w, d->xrcd[i].uctx);
		qs_u32(w, d->xrcd[i].refcnt);
	}

	n = 0;
	for (uint32_t i = 0; i < c->max_srq; i++)
		n += d->srq[i].valid;
	qs_u32(w, n);
	for (uint32_t i = 0; i < c->max_srq; i++) {
		const struct qrnic_srq *s = &d->srq[i];

		if (!s->valid)
			continue;
		qs_u32(w, i);
		qs_u32(w, s->uctx);
		qs_u32(w, s->pdn);
		qs_u8(w, s->log_depth);
		qs_u8(w, s->wqe_shift);
		qs_u64(w, s->ring);
		qs_u64(w, s->dbrec);
		qs_u32(w, s->pi);
		qs_u32(w, s->ci);
		qs_u32(w, s->limit);
		qs_u32(w, s->refcnt);
		qs_u32(w, s->xrcd);
		qs_u32(w, s->cqn);
		qrnic_snap_save_pl(w, s->ring_pl, s->log_depth + s->wqe_shift);
	}

	n = 0;
	for (uint32_t i = 0; i < c->max_ah; i++)
		n += d->ah[i].valid;
	qs_u32(w, n);
	for (uint32_t i = 0; i < c->max_ah; i++) {
		if (!d->ah[i].valid)
			continue;
		qs_u32(w, i);
		qs_u32(w, d->ah[i].pdn);
		qs_bytes(w, &d->ah[i].av, sizeof(d->ah[i].av));	/* ABI layout */
	}

	/* MRs: every slot that is not all zero (an invalid slot's next tag
	 * keeps the keys it handed out before stale) */
	n = 0;
	for (uint32_t i = 0; i < d->mr_seen; i++)	/* all zero from mr_seen on */
		n += d->mr[i].mpt.flags || d->mr[i].next_tag || d->mr[i].bound_mws ||
		     d->mr[i].mw_qpn;
	qs_u32(w, n);
	for (uint32_t i = 0; i < d->mr_seen; i++) {
		const struct qrnic_mr *m = &d->mr[i];

		if (!(m->mpt.flags || m->next_tag || m->bound_mws || m->mw_qpn))
			continue;
		qs_u32(w, i);
		qs_bytes(w, &m->mpt, sizeof(m->mpt));	/* ABI layout */
		qs_u8(w, m->next_tag);
		qs_u32(w, m->bound_mws);
		qs_u32(w, m->mw_qpn);
	}

	/* MTT: runs of allocated entries (the gaps between the allocator's
	 * free extents), lowest first */
	qs_u32(w, qrnic_mtt_runs(d, NULL, NULL));
	qrnic_mtt_runs(d, save_mtt_run, &(struct mtt_run_w){ d, w });

	n = 0;
	for (uint32_t i = 0; i < c->gid_tbl_len; i++)
		n += d->gid[i].valid;
	qs_u32(w, n);
	for (uint32_t i = 0; i < c->gid_tbl_len; i++) {
		if (!d->gid[i].valid)
			continue;
		qs_u32(w, i);
		qs_u8(w, d->gid[i].net_type);
		qs_bytes(w, d->gid[i].gid, 16);
	}

	n = 0;
	for (uint32_t i = 0; i < QRNIC_MAX_MCG; i++)
		n += d->mcg[i].nqp != 0;
	qs_u32(w, n);
	for (uint32_t i = 0; i < QRNIC_MAX_MCG; i++) {
		const struct qrnic_mcg *g = &d->mcg[i];

		if (!g->nqp)
			continue;
		qs_u32(w, i);
		qs_bytes(w, g->gid, 16);
		qs_u32(w, g->nqp);
		for (uint32_t j = 0; j < g->nqp && j < QRNIC_MAX_MCG_QP; j++)
			qs_u32(w, g->qpn[j]);
	}
	qs_u32(w, d->nmcg);
	qs_end(w);
}

static bool log_depth_ok(uint8_t l, uint32_t max_entries)
{
	return l >= 1 && l <= QRNIC_MAX_QUEUE_LOG && (1ull << l) <= max_entries;
}

bool qrnic_snap_load_objs(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	const struct qrnic_config *c = &d->cfg;
	uint32_t n, i;

	n = qr_count(r, c->max_uctx, 4, "user contexts");
	memset(d->uctx_valid, 0, c->max_uctx * sizeof(*d->uctx_valid));
	while (n-- && !r->bad)
		d->uctx_valid[qr_index(r, c->max_uctx, true, "user context")] = true;
	if (!d->uctx_valid[0])
		return qr_fail(r, "the kernel's user context 0 is missing");

	n = qr_count(r, c->max_pd, 12, "PDs");
	while (n-- && !r->bad) {
		struct qrnic_pd *p = &d->pd[i = qr_index(r, c->max_pd, false, "PD")];

		p->valid = !r->bad;
		p->uctx = qr_u32(r);
		p->refcnt = qr_u32(r);
	}

	n = qr_count(r, c->max_eq, 20, "EQs");
	while (n-- && !r->bad) {
		struct qrnic_eq *e = &d->eq[i = qr_index(r, c->max_eq, false, "EQ")];

		e->valid = !r->bad;
		e->async = qr_bool(r);
		e->armed = qr_bool(r);
		e->overflow = qr_bool(r);
		e->irq_pending = qr_bool(r);
		e->vector = qr_u16(r);
		e->log_depth = qr_u8(r);
		e->ring = qr_u64(r);
		e->pi = qr_u32(r);
		e->ci = qr_u32(r);
		e->refcnt = qr_u32(r);
		if (!r->bad && (e->vector >= c->num_vectors || e->log_depth < 1 ||
				e->log_depth > QRNIC_MAX_QUEUE_LOG))
			return qr_fail(r, "EQ %u: vector %u or depth 2^%u out of range", i,
				       e->vector, e->log_depth);
	}

	n = qr_count(r, c->max_cq, 40, "CQs");
	while (n-- && !r->bad) {
		struct qrnic_cq *q = &d->cq[i = qr_index(r, c->max_cq, false, "CQ")];

		q->valid = !r->bad;
		q->armed = qr_bool(r);
		q->armed_solicited = qr_bool(r);
		q->error = qr_bool(r);
		q->event_pending = qr_bool(r);
		q->uctx = qr_u32(r);
		q->eqn = qr_u32(r);
		q->log_depth = qr_u8(r);
		q->ring = qr_u64(r);
		q->dbrec = qr_u64(r);
		q->pi = qr_u32(r);
		q->ci = qr_u32(r);
		q->refcnt = qr_u32(r);
		q->tm_last = qr_u64(r);
		q->vis = qr_u32(r);
		q->mod_count = qr_u16(r);
		q->mod_period_us = qr_u16(r);
		q->mod_seen = qr_u32(r);
		q->mod_gen = qr_u32(r);
		q->flags = r->version >= 2 ? qr_u8(r) : 0;	/* before: 32-byte CQEs only */
		if (!r->bad && !log_depth_ok(q->log_depth, c->max_cqe))
			return qr_fail(r, "CQ %u: depth 2^%u out of range", i, q->log_depth);
		if (!r->bad && (q->flags & ~QRNIC_CQ_F_TIMESTAMP))
			return qr_fail(r, "CQ %u: flags 0x%x unknown", i, q->flags);
		if (r->version >= 3 &&
		    !qrnic_snap_load_pl(d, r, &q->ring_pl, q->log_depth +
					(QRNIC_CQ_CQE_SIZE(q->flags) == 64 ? 6 : 5), "CQ", i))
			return false;
	}

	n = qr_count(r, c->max_xrcd, 12, "XRC domains");
	while (n-- && !r->bad) {
		struct qrnic_xrcd *x = &d->xrcd[i = qr_index(r, c->max_xrcd, false, "XRC domain")];

		x->valid = !r->bad;
		x->uctx = qr_u32(r);
		x->refcnt = qr_u32(r);
	}

	n = qr_count(r, c->max_srq, 50, "SRQs");
	while (n-- && !r->bad) {
		struct qrnic_srq *s = &d->srq[i = qr_index(r, c->max_srq, false, "SRQ")];

		s->valid = !r->bad;
		s->uctx = qr_u32(r);
		s->pdn = qr_u32(r);
		s->log_depth = qr_u8(r);
		s->wqe_shift = qr_u8(r);
		s->ring = qr_u64(r);
		s->dbrec = qr_u64(r);
		s->pi = qr_u32(r);
		s->ci = qr_u32(r);
		s->limit = qr_u32(r);
		s->refcnt = qr_u32(r);
		s->xrcd = qr_u32(r);
		s->cqn = qr_u32(r);
		if (!r->bad && (!log_depth_ok(s->log_depth, c->max_qp_wr) ||
				s->wqe_shift < QRNIC_MIN_RECV_WQE_SHIFT ||
				s->wqe_shift > QRNIC_MAX_RECV_WQE_SHIFT))
			return qr_fail(r, "SRQ %u: depth 2^%u or stride 2^%u out of range", i,
				       s->log_depth, s->wqe_shift);
		if (r->version >= 3 &&
		    !qrnic_snap_load_pl(d, r, &s->ring_pl, s->log_depth + s->wqe_shift, "SRQ", i))
			return false;
	}

	n = qr_count(r, c->max_ah, 8 + sizeof(struct qrnic_av), "AHs");
	while (n-- && !r->bad) {
		struct qrnic_ah *a = &d->ah[i = qr_index(r, c->max_ah, false, "AH")];

		a->valid = !r->bad;
		a->pdn = qr_u32(r);
		qr_bytes(r, &a->av, sizeof(a->av));
	}

	n = qr_count(r, c->max_mr, 4 + sizeof(struct qrnic_mpt_entry), "MR slots");
	while (n-- && !r->bad) {
		struct qrnic_mr *m = &d->mr[i = qr_index(r, c->max_mr, false, "MR slot")];

		if (d->mr_seen <= i)
			d->mr_seen = i + 1;
		qr_bytes(r, &m->mpt, sizeof(m->mpt));
		m->next_tag = qr_u8(r);
		m->bound_mws = qr_u32(r);
		m->mw_qpn = qr_u32(r);
	}

	n = qr_count(r, c->max_mtt, 8, "MTT runs");
	while (n-- && !r->bad) {
		uint32_t s = qr_index(r, c->max_mtt, true, "MTT entry");
		uint32_t len = qr_u32(r);

		if (r->bad)
			break;
		if (len == 0 || len > c->max_mtt - s || len > qr_left(r) / 9)
			return qr_fail(r, "MTT run %u+%u out of range", s, len);
		if (d->mtt_top < s + len)	/* a reset after a failure clears it */
			d->mtt_top = s + len;
		for (uint32_t j = s; j < s + len; j++) {
			if (d->mtt_used[j])
				return qr_fail(r, "MTT entry %u given twice", j);
			d->mtt_used[j] = qr_u8(r);
			d->mtt[j] = qr_u64(r);
			if (d->mtt_used[j] != 1)
				return qr_fail(r, "MTT entry %u of a run is not in use", j);
		}
	}
	/* the allocators' state follows from the MPT and the MTT map */
	if (!r->bad && !qrnic_mr_alloc_rebuild(d))
		return qr_fail(r, "out of memory for the MR allocators");

	n = qr_count(r, c->gid_tbl_len, 21, "GIDs");
	while (n-- && !r->bad) {
		struct qrnic_gid_entry *g = &d->gid[i = qr_index(r, c->gid_tbl_len, true, "GID")];

		g->valid = !r->bad;
		g->net_type = qr_u8(r);
		qr_bytes(r, g->gid, 16);
	}

	n = qr_count(r, QRNIC_MAX_MCG, 24, "multicast groups");
	while (n-- && !r->bad) {
		struct qrnic_mcg *g = &d->mcg[i = qr_index(r, QRNIC_MAX_MCG, true, "group")];

		qr_bytes(r, g->gid, 16);
		g->nqp = qr_count(r, QRNIC_MAX_MCG_QP, 4, "group members");
		if (!r->bad && !g->nqp)
			return qr_fail(r, "multicast group %u has no member", i);
		for (uint32_t j = 0; j < g->nqp && !r->bad; j++)
			g->qpn[j] = qr_index(r, c->max_qp, false, "group member QP");
	}
	d->nmcg = qr_u32(r);
	return !r->bad;
}

/* ---- the relations between objects ------------------------------------------ */
static bool pd_ok(struct qrnic_dev *d, uint32_t pdn)
{
	return pdn && pdn < d->cfg.max_pd && d->pd[pdn].valid;
}

static bool cq_ok(struct qrnic_dev *d, uint32_t cqn)
{
	return cqn && cqn < d->cfg.max_cq && d->cq[cqn].valid;
}

static bool uctx_ok(struct qrnic_dev *d, uint32_t u)
{
	return u < d->cfg.max_uctx && d->uctx_valid[u];
}

/* Every reference names an object that exists, and every reference count
 * is the number of references (recounted here). */
bool qrnic_snap_check_relations(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	const struct qrnic_config *c = &d->cfg;
	uint32_t *cnt;
	bool ok = false;
	size_t n = c->max_pd + c->max_cq + c->max_eq + c->max_srq + c->max_xrcd;

	cnt = calloc(n ? n : 1, sizeof(*cnt));
	if (!cnt)
		return qr_fail(r, "out of memory");
	uint32_t *pd_ref = cnt, *cq_ref = pd_ref + c->max_pd, *eq_ref = cq_ref + c->max_cq;
	uint32_t *srq_ref = eq_ref + c->max_eq, *xrcd_ref = srq_ref + c->max_srq;

	for (uint32_t i = 1; i < c->max_pd; i++)
		if (d->pd[i].valid && !uctx_ok(d, d->pd[i].uctx)) {
			qr_fail(r, "PD %u: user context %u does not exist", i, d->pd[i].uctx);
			goto out;
		}
	for (uint32_t i = 1; i < c->max_cq; i++) {
		const struct qrnic_cq *q = &d->cq[i];

		if (!q->valid)
			continue;
		if (!uctx_ok(d, q->uctx) || !q->eqn || q->eqn >= c->max_eq || !d->eq[q->eqn].valid) {
			qr_fail(r, "CQ %u: its user context or EQ does not exist", i);
			goto out;
		}
		eq_ref[q->eqn]++;
	}
	for (uint32_t i = 1; i < c->max_xrcd; i++)
		if (d->xrcd[i].valid && !uctx_ok(d, d->xrcd[i].uctx)) {
			qr_fail(r, "XRC domain %u: user context does not exist", i);
			goto out;
		}
	for (uint32_t i = 1; i < c->max_srq; i++) {
		const struct qrnic_srq *s = &d->srq[i];

		if (!s->valid)
			continue;
		if (!uctx_ok(d, s->uctx) || !pd_ok(d, s->pdn) ||
		    (s->xrcd && (s->xrcd >= c->max_xrcd || !d->xrcd[s->xrcd].valid ||
				 !cq_ok(d, s->cqn)))) {
			qr_fail(r, "SRQ %u: its user context, PD, XRC domain or CQ does not exist", i);
			goto out;
		}
		pd_ref[s->pdn]++;
		if (s->xrcd) {
			xrcd_ref[s->xrcd]++;
			cq_ref[s->cqn]++;
		}
	}
	for (uint32_t i = 1; i < c->max_ah; i++) {
		if (!d->ah[i].valid)
			continue;
		if (!pd_ok(d, d->ah[i].pdn)) {
			qr_fail(r, "AH %u: PD %u does not exist", i, d->ah[i].pdn);
			goto out;
		}
		pd_ref[d->ah[i].pdn]++;
	}
	for (uint32_t i = 0; i < d->mr_seen; i++) {	/* the load set mr_seen */
		const struct qrnic_mpt_entry *m = &d->mr[i].mpt;
		uint64_t span;

		/* every slot in use holds its PD (a fast-registration MR not
		 * registered and a window not bound too) */
		if (!qrnic_mpt_in_use(&d->mr[i]))
			continue;
		if (i == 0) {
			qr_fail(r, "MR slot 0 is in use");
			goto out;
		}
		if (!pd_ok(d, m->pdn)) {
			qr_fail(r, "MR %u: PD %u does not exist", i, m->pdn);
			goto out;
		}
		pd_ref[m->pdn]++;
		if (m->flags & QRNIC_MPT_MW)
			continue;
		/* the MTT range it owns: in bounds and allocated */
		span = (m->flags & QRNIC_MPT_FAST) ? m->max_pages : m->npages;
		if (m->mtt_base > c->max_mtt || span > c->max_mtt - m->mtt_base ||
		    ((m->flags & QRNIC_MPT_FAST) && m->npages > m->max_pages) ||
		    m->page_shift < QRNIC_MIN_PAGE_SHIFT || m->page_shift > QRNIC_MAX_PAGE_SHIFT) {
			qr_fail(r, "MR %u: MTT range %u+%llu or page size out of range", i, m->mtt_base,
				(unsigned long long)span);
			goto out;
		}
		/* each entry of one MR only: marked 2 while checking (a failed
		 * load resets the device, which clears the marks) */
		for (uint64_t j = 0; j < span; j++) {
			uint8_t *u = &d->mtt_used[m->mtt_base + j];

			if (*u != 1) {
				qr_fail(r, "MR %u: MTT entry %llu is %s", i,
					(unsigned long long)(m->mtt_base + j),
					*u ? "another MR's too" : "not allocated");
				goto out;
			}
			*u = 2;
		}
	}
	/* and no allocated entry without its MR (the allocator would never
	 * get it back) */
	for (uint32_t j = 0; j < d->mtt_top; j++) {
		if (d->mtt_used[j] == 1) {
			qr_fail(r, "MTT entry %u is allocated but no MR uses it", j);
			goto out;
		}
		d->mtt_used[j] = d->mtt_used[j] != 0;
	}
	for (uint32_t i = 1; i < c->max_qp; i++) {
		const struct qrnic_qp *qp = &d->qp[i];
		bool tgt = qp->type == QRNIC_QPT_XRC_TGT;

		if (!qp->valid)
			continue;
		if (!uctx_ok(d, qp->uctx) || (!tgt && !pd_ok(d, qp->pdn)) ||
		    (!tgt && !cq_ok(d, qp->send_cqn)) || (!tgt && !cq_ok(d, qp->recv_cqn) &&
		     qp->type != QRNIC_QPT_XRC_INI) ||
		    (qp->srqn && (qp->srqn >= c->max_srq || !d->srq[qp->srqn].valid)) ||
		    (tgt && (!qp->xrcd || qp->xrcd >= c->max_xrcd || !d->xrcd[qp->xrcd].valid))) {
			qr_fail(r, "QP %u: an object it uses does not exist", i);
			goto out;
		}
		if (pd_ok(d, qp->pdn))
			pd_ref[qp->pdn]++;
		if (cq_ok(d, qp->send_cqn))
			cq_ref[qp->send_cqn]++;
		if (cq_ok(d, qp->recv_cqn))
			cq_ref[qp->recv_cqn]++;
		if (qp->srqn)
			srq_ref[qp->srqn]++;
		if (tgt)
			xrcd_ref[qp->xrcd]++;
	}
	for (uint32_t i = 1; i < c->max_pd; i++)
		if (d->pd[i].valid && d->pd[i].refcnt != pd_ref[i]) {
			qr_fail(r, "PD %u: reference count %u, %u references", i, d->pd[i].refcnt,
				pd_ref[i]);
			goto out;
		}
	for (uint32_t i = 1; i < c->max_cq; i++)
		if (d->cq[i].valid && d->cq[i].refcnt != cq_ref[i]) {
			qr_fail(r, "CQ %u: reference count %u, %u references", i, d->cq[i].refcnt,
				cq_ref[i]);
			goto out;
		}
	for (uint32_t i = 1; i < c->max_eq; i++)
		if (d->eq[i].valid && d->eq[i].refcnt != eq_ref[i]) {
			qr_fail(r, "EQ %u: reference count %u, %u references", i, d->eq[i].refcnt,
				eq_ref[i]);
			goto out;
		}
	for (uint32_t i = 1; i < c->max_srq; i++)
		if (d->srq[i].valid && d->srq[i].refcnt != srq_ref[i]) {
			qr_fail(r, "SRQ %u: reference count %u, %u references", i, d->srq[i].refcnt,
				srq_ref[i]);
			goto out;
		}
	for (uint32_t i = 1; i < c->max_xrcd; i++)
		if (d->xrcd[i].valid && d->xrcd[i].refcnt != xrcd_ref[i]) {
			qr_fail(r, "XRC domain %u: reference count %u, %u references", i,
				d->xrcd[i].refcnt, xrcd_ref[i]);
			goto out;
		}
	/* memory windows: each MR's and QP's count of the windows bound to it */
	{
		/* slots from mr_seen on are all zero: neither windows nor MRs */
		uint32_t *mw_mr = calloc(d->mr_seen, sizeof(*mw_mr));
		uint32_t *mw_qp = calloc(c->max_qp ? c->max_qp : 1, sizeof(*mw_qp));
		bool bad = !mw_mr || !mw_qp;

		for (uint32_t i = 0; i < d->mr_seen && !bad; i++) {
			const struct qrnic_mr *m = &d->mr[i];
			uint32_t p = m->mpt.max_pages;

			if (!(m->mpt.flags & QRNIC_MPT_VALID) || !(m->mpt.flags & QRNIC_MPT_MW))
				continue;
			if (!p || p >= d->mr_seen || !(d->mr[p].mpt.flags & QRNIC_MPT_VALID) ||
			    (d->mr[p].mpt.flags & QRNIC_MPT_MW) ||
			    (m->mw_qpn && (m->mw_qpn >= c->max_qp || !d->qp[m->mw_qpn].valid))) {
				qr_fail(r, "window %u: bound to MR %u or QP %u that does not exist", i, p,
					m->mw_qpn);
				bad = true;
				break;
			}
			mw_mr[p]++;
			if (m->mw_qpn)
				mw_qp[m->mw_qpn]++;
		}
		for (uint32_t i = 0; i < d->mr_seen && !bad; i++)
			if ((d->mr[i].mpt.flags & QRNIC_MPT_VALID) &&
			    !(d->mr[i].mpt.flags & QRNIC_MPT_MW) && d->mr[i].bound_mws != mw_mr[i]) {
				qr_fail(r, "MR %u: %u windows bound, %u counted", i, mw_mr[i],
					d->mr[i].bound_mws);
				bad = true;
			}
		for (uint32_t i = 1; i < c->max_qp && !bad; i++)
			if (d->qp[i].valid && d->qp[i].bound_mws != mw_qp[i]) {
				qr_fail(r, "QP %u: %u windows bound through it, %u counted", i, mw_qp[i],
					d->qp[i].bound_mws);
				bad = true;
			}
		if (!mw_mr || !mw_qp)
			qr_fail(r, "out of memory");
		free(mw_mr);
		free(mw_qp);
		if (bad)
			goto out;
	}
	{
		uint32_t groups = 0;

		for (uint32_t i = 0; i < QRNIC_MAX_MCG; i++)
			groups += d->mcg[i].nqp != 0;
		if (groups != d->nmcg) {
			qr_fail(r, "%u multicast groups counted as %u", groups, d->nmcg);
			goto out;
		}
	}
	ok = true;
out:
	free(cnt);
	return ok;
}

