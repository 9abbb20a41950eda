/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: snapshots (migration, savevm/loadvm, the simulator's
 * --snapshot-at).  qrnic_dev_save writes the device's whole state as a
 * stream of versioned sections (qrnic_snap.h, docs/qemu.md section 9);
 * qrnic_dev_load reads one into a device of the same configuration.
 *
 * A stream is input like any other: the loader reads each section within
 * its length, checks every value against the device's limits and the
 * relations between objects (a QP's CQs, PD and SRQ exist; reference counts
 * agree; rings and MTT ranges are in bounds; queue indexes are within their
 * depths), and on any failure leaves the device reset and says why.  It
 * never trusts a count to size a loop beyond the table it fills.
 *
 * What is NOT state and so not saved: host settings (the ops, trace on/off,
 * trusted wire, the clock variable), the frame being built inside a step,
 * memos the timing model recomputes.  Pending events keep their absolute
 * deadlines on the host's virtual clock, which migration carries over.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "qrnic_internal.h"
#include "qrnic_snap.h"

/* ---- the stream writer and reader ------------------------------------------ */
void qrnic_snap_put(struct qrnic_snap_w *w, const void *p, size_t n)
{
	if (w->oom)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		uint8_t *nb;

		while (cap < w->len + n)
			cap *= 2;
		nb = realloc(w->buf, cap);
		if (!nb) {
			w->oom = true;
			return;
		}
		w->buf = nb;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

void qs_begin(struct qrnic_snap_w *w, const char *tag, uint16_t version, uint16_t flags)
{
	w->sec = w->len;
	qs_u32(w, QRNIC_SNAP_TAG(tag));
	qs_u16(w, version);
	qs_u16(w, flags);
	qs_u32(w, 0);		/* length, filled in by qs_end */
}

void qs_end(struct qrnic_snap_w *w)
{
	uint32_t n = (uint32_t)(w->len - w->sec - 12);

	if (w->oom)
		return;
	for (int i = 0; i < 4; i++)
		w->buf[w->sec + 8 + i] = (uint8_t)(n >> (8 * i));
}

bool qr_fail(struct qrnic_snap_r *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->bad && r->err && r->errlen) {
		va_start(ap, fmt);
		vsnprintf(r->err, r->errlen, fmt, ap);
		va_end(ap);
	}
	r->bad = true;
	return false;
}

bool qr_get(struct qrnic_snap_r *r, void *p, size_t n)
{
	if (r->bad || n > r->len - r->off) {
		if (!r->bad)
			qr_fail(r, "truncated (%zu bytes left, %zu wanted)", r->len - r->off, n);
		memset(p, 0, n);
		return false;
	}
	memcpy(p, r->p + r->off, n);
	r->off += n;
	return true;
}

/* A count of entries that follow, each at least 'min_size' bytes: it must
 * fit the section and 'max'. */
static uint32_t qr_count(struct qrnic_snap_r *r, uint32_t max, size_t min_size, const char *what)
{
	uint32_t n = qr_u32(r);

	if (r->bad)
		return 0;
	if (n > max || (min_size && n > qr_left(r) / min_size)) {
		qr_fail(r, "%u %s (at most %u)", n, what, max);
		return 0;
	}
	return n;
}

/* An index into a table of n entries (handle 0 reserved if !zero_ok). */
static uint32_t qr_index(struct qrnic_snap_r *r, uint32_t n, bool zero_ok, const char *what)
{
	uint32_t i = qr_u32(r);

	if (!r->bad && (i >= n || (!zero_ok && i == 0)))
		qr_fail(r, "%s %u out of range (table of %u)", what, i, n);
	return r->bad ? 0 : i;
}

static void qs_str(struct qrnic_snap_w *w, const char *s)
{
	size_t n = strlen(s);

	qs_u8(w, (uint8_t)(n > 255 ? 255 : n));
	qs_bytes(w, s, n > 255 ? 255 : n);
}

static void qr_str(struct qrnic_snap_r *r, char *buf, size_t size)
{
	uint8_t n = qr_u8(r);
	char tmp[256];

	qr_get(r, tmp, n);
	tmp[r->bad ? 0 : n] = 0;
	for (char *c = tmp; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';	/* printable in messages; no name of ours has it */
	if (strlen(tmp) >= size) {	/* no name of ours is that long */
		qr_fail(r, "name of %zu bytes", strlen(tmp));
		tmp[0] = 0;
	}
	memcpy(buf, tmp, strlen(tmp) + 1);
}

/* ---- sections --------------------------------------------------------------- */
/* Every section's version: bump one when its layout changes, and keep
 * reading the older layouts (tests/fixtures holds a stream of each). */
#define V_CONF	2	/* 2: + timing parameter bf_write_ns (BlueFlame, ABI 1.5) */
#define V_REGS	1
#define V_OBJS	2	/* 2: + the CQ's CREATE_CQ flags (64-byte CQEs, ABI 1.7) */
#define V_QP	2	/* 2: + TIMELY's RTT sampling state */
#define V_WORK	1
#define V_TIME	2	/* 2: + the PFC pause flag */
#define V_STAT	2	/* 2: + counters bf_posts, bf_fallbacks */
#define V_FLT	1

/* CONF: the configuration and the timing profile.  A stream loads only
 * into a device configured the same way (as QEMU requires the same
 * command line on both ends). */
static void save_conf(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	const struct qrnic_config_param *p;
	uint32_t n = 0;
	uint64_t v;

	qs_begin(w, "CONF", V_CONF, 0);
	while (qrnic_config_param(n))
		n++;
	qs_u32(w, n);
	for (uint32_t i = 0; (p = qrnic_config_param(i)); i++) {
		qs_str(w, p->name);
		qs_u64(w, qrnic_config_get(&d->cfg, p));
	}
	qs_str(w, d->tm.p.name ? d->tm.p.name : "");
	for (n = 0; qrnic_timing_param_name(n); n++)
		;
	qs_u32(w, n);
	for (uint32_t i = 0; i < n; i++) {
		qs_str(w, qrnic_timing_param_name(i));
		qrnic_timing_param_get(&d->tm.p, qrnic_timing_param_name(i), &v);
		qs_u64(w, v);
	}
	qs_end(w);
}

static bool load_conf(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	char name[64];
	uint32_t n = qr_count(r, 256, 2, "configuration parameters");
	uint64_t v, mine;

	for (uint32_t i = 0; i < n && !r->bad; i++) {
		const struct qrnic_config_param *p;

		qr_str(r, name, sizeof(name));
		v = qr_u64(r);
		if (r->bad)
			break;
		p = qrnic_config_param_find(name);
		if (!p)
			return qr_fail(r, "unknown configuration parameter '%s'", name);
		mine = qrnic_config_get(&d->cfg, p);
		if (v != mine)
			return qr_fail(r, "configuration differs: %s is %llu in the stream, "
				       "%llu on this device", name, (unsigned long long)v,
				       (unsigned long long)mine);
	}
	qr_str(r, name, sizeof(name));
	if (!r->bad && strcmp(name, d->tm.p.name ? d->tm.p.name : ""))
		return qr_fail(r, "timing profile differs: '%s' in the stream, '%s' on this device",
			       name, d->tm.p.name ? d->tm.p.name : "");
	n = qr_count(r, 256, 2, "timing parameters");
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		qr_str(r, name, sizeof(name));
		v = qr_u64(r);
		if (r->bad)
			break;
		if (qrnic_timing_param_get(&d->tm.p, name, &mine) != 0)
			return qr_fail(r, "unknown timing parameter '%s'", name);
		if (v != mine)
			return qr_fail(r, "timing differs: %s is %llu in the stream, %llu on this "
				       "device", name, (unsigned long long)v, (unsigned long long)mine);
	}
	return !r->bad;
}

/* REGS: registers and the device's scalars. */
static void save_regs(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	qs_begin(w, "REGS", V_REGS, 0);
	qs_u32(w, d->ctrl);
	qs_u32(w, d->status);
	qs_u32(w, d->fatal_code);
	qs_u32(w, d->scratch);
	qs_u64(w, d->aq_sq_base);
	qs_u64(w, d->aq_cq_base);
	qs_u32(w, d->aq_ctrl);
	qs_u32(w, d->aq_status);
	qs_u32(w, d->aq_sq_pi);
	qs_u32(w, d->aq_sq_ci);
	qs_u32(w, d->aq_cq_pi);
	qs_u64(w, d->eth_tx_base);
	qs_u64(w, d->eth_rx_base);
	qs_u32(w, d->eth_ctrl);
	qs_u32(w, d->eth_tx_pi);
	qs_u32(w, d->eth_rx_pi);
	qs_u32(w, d->eth_tx_ci);
	qs_u32(w, d->eth_rx_ci);
	qs_u32(w, d->eth_irq);
	qs_bool(w, d->link_up);
	qs_bool(w, d->aq_pending);
	qs_bool(w, d->eth_pending);
	qs_bool(w, d->arm_pending);
	qs_u32(w, d->next_qpn);
	qs_u64(w, d->event_seq);
	qs_u32(w, d->timer_gen);
	qs_end(w);
}

static bool load_regs(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	d->ctrl = qr_u32(r);
	d->status = qr_u32(r);
	d->fatal_code = qr_u32(r);
	d->scratch = qr_u32(r);
	d->aq_sq_base = qr_u64(r);
	d->aq_cq_base = qr_u64(r);
	d->aq_ctrl = qr_u32(r);
	d->aq_status = qr_u32(r);
	d->aq_sq_pi = qr_u32(r);
	d->aq_sq_ci = qr_u32(r);
	d->aq_cq_pi = qr_u32(r);
	d->eth_tx_base = qr_u64(r);
	d->eth_rx_base = qr_u64(r);
	d->eth_ctrl = qr_u32(r);
	d->eth_tx_pi = qr_u32(r);
	d->eth_rx_pi = qr_u32(r);
	d->eth_tx_ci = qr_u32(r);
	d->eth_rx_ci = qr_u32(r);
	d->eth_irq = qr_u32(r);
	d->link_up = qr_bool(r);
	d->aq_pending = qr_bool(r);
	d->eth_pending = qr_bool(r);
	d->arm_pending = qr_bool(r);
	d->next_qpn = qr_u32(r);
	d->event_seq = qr_u64(r);
	d->timer_gen = qr_u32(r);
	if (r->bad)
		return false;
	/* The engines re-check the rings' indexes against their depths
	 * whenever they use them (as for any register write); what they
	 * rely on is checked here. */
	if (d->next_qpn >= d->cfg.max_qp)
		return qr_fail(r, "next QPN %u out of range", d->next_qpn);
	return true;
}

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

static void save_objs(struct qrnic_dev *d, struct qrnic_snap_w *w)
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

static bool load_objs(struct qrnic_dev *d, struct qrnic_snap_r *r)
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
		if (!r->bad && (q->flags & ~QRNIC_CQ_F_ALL))
			return qr_fail(r, "CQ %u: flags 0x%x unknown", i, q->flags);
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

static void save_qps(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	uint32_t n = 0;

	qs_begin(w, "QPS.", V_QP, 0);
	for (uint32_t i = 0; i < d->cfg.max_qp; i++)
		n += d->qp[i].valid;
	qs_u32(w, n);
	for (uint32_t i = 0; i < d->cfg.max_qp; i++)
		if (d->qp[i].valid)
			save_qp(d, w, &d->qp[i]);
	qs_end(w);
}

static bool load_qps(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	uint32_t n = qr_count(r, d->cfg.max_qp, 64, "QPs");

	while (n-- && !r->bad)
		load_qp(d, r);
	d->qp_live = 0;		/* derived, not saved: the QPs that exist */
	for (uint32_t i = 0; i < d->cfg.max_qp && !r->bad; i++)
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

static void save_work(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	uint32_t n;

	qs_begin(w, "WORK", V_WORK, 0);
	save_list(d, w, &d->work, QRNIC_QL_WORK);
	save_list(d, w, &d->flushq, QRNIC_QL_FLUSH);

	qs_u32(w, d->rxq_tail - d->rxq_head);
	for (uint32_t i = d->rxq_head; i != d->rxq_tail; i++) {
		struct qrnic_frame *f = &d->rxq[i % QRNIC_RXQ_DEPTH];

		qrnic_frame_buf_fill(f->data);	/* bytes by reference or by description */
		qs_u32(w, f->len);
		qs_bytes(w, f->data, f->len);
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

static bool load_work(struct qrnic_dev *d, struct qrnic_snap_r *r)
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
		if (ev.kind < QRNIC_EVK_RETRY || ev.kind > QRNIC_EVK_CC)
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

/* TIME: the timing model's resources and caches. */
static void save_cache(struct qrnic_snap_w *w, const struct qrnic_tm_cache *c)
{
	uint32_t n = c->sets * c->ways;

	qs_u32(w, c->sets);
	qs_u32(w, c->ways);
	for (uint32_t i = 0; i < n; i++) {
		qs_u64(w, c->tag[i]);
		qs_u64(w, c->lru[i]);
		qs_u64(w, c->ready[i]);
	}
	qs_u64(w, c->stamp);
	qs_u64(w, c->hits);
	qs_u64(w, c->misses);
	qs_u64(w, c->last == SIZE_MAX ? UINT64_MAX : (uint64_t)c->last);
}

static bool load_cache(struct qrnic_snap_r *r, struct qrnic_tm_cache *c, const char *what)
{
	uint32_t sets = qr_u32(r), ways = qr_u32(r), n;
	uint64_t last;

	if (!r->bad && (sets != c->sets || ways != c->ways))
		return qr_fail(r, "%s cache is %ux%u in the stream, %ux%u here", what, sets, ways,
			       c->sets, c->ways);
	n = sets * ways;
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		c->tag[i] = qr_u64(r);
		c->lru[i] = qr_u64(r);
		c->ready[i] = qr_u64(r);
	}
	c->stamp = qr_u64(r);
	c->hits = qr_u64(r);
	c->misses = qr_u64(r);
	last = qr_u64(r);
	if (!r->bad && last != UINT64_MAX && last >= n)
		return qr_fail(r, "%s cache: last entry %llu", what, (unsigned long long)last);
	c->last = last == UINT64_MAX ? SIZE_MAX : (size_t)last;
	return !r->bad;
}

static void save_time(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	const struct qrnic_timing *t = &d->tm;

	qs_begin(w, "TIME", V_TIME, 0);
	qs_u64(w, d->tm_t);
	qs_u64(w, d->tm_wr_vis);
	qs_u32(w, d->tm_cycles);
	qs_u64(w, d->tm_depart);
	qs_u32(w, QRNIC_TM_MAX_PU);
	for (int i = 0; i < QRNIC_TM_MAX_PU; i++)
		qs_u64(w, t->pu_free[i]);
	qs_u32(w, t->pu_head);
	qs_u64(w, t->pcie_rd_free);
	qs_u64(w, t->pu_last);
	qs_u64(w, t->pcie_rd_last);
	qs_u64(w, t->rd_credit_last);
	qs_u64(w, t->pcie_wr_free);
	qs_u64(w, t->link_free);
	qs_u64(w, t->atomic_free);
	qs_u32(w, t->rd_slot);
	for (size_t i = 0; i < sizeof(t->rd_credit_free) / sizeof(t->rd_credit_free[0]); i++)
		qs_u64(w, t->rd_credit_free[i]);
	/* last_irq: vectors beyond num_vectors stay 0 */
	for (uint32_t i = 0; i < d->cfg.num_vectors && i < 2048; i++)
		qs_u64(w, t->last_irq[i]);
	for (int i = 0; i < QRNIC_TM_MAX_MISS; i++)
		qs_u64(w, t->miss_free[i]);
	qs_u64(w, t->miss_last);
	for (int i = 0; i < QRNIC_TM_STREAMS; i++)
		qs_u64(w, t->mtt_recent[i]);
	qs_u32(w, t->mtt_recent_next);
	qs_u64(w, t->mtt_last);
	qs_u64(w, t->prefetches);
	save_cache(w, &t->qpc);
	save_cache(w, &t->mpt);
	save_cache(w, &t->mtt);
	qs_u8(w, d->port_paused);	/* v2 */
	qs_end(w);
}

static bool load_time(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	struct qrnic_timing *t = &d->tm;

	d->tm_t = qr_u64(r);
	d->tm_wr_vis = qr_u64(r);
	d->tm_cycles = qr_u32(r);
	d->tm_depart = qr_u64(r);
	if (qr_u32(r) != QRNIC_TM_MAX_PU && !r->bad)
		return qr_fail(r, "processing unit count differs");
	for (int i = 0; i < QRNIC_TM_MAX_PU; i++)
		t->pu_free[i] = qr_u64(r);
	t->pu_head = qr_u32(r);
	t->pcie_rd_free = qr_u64(r);
	t->pu_last = qr_u64(r);
	t->pcie_rd_last = qr_u64(r);
	t->rd_credit_last = qr_u64(r);
	t->pcie_wr_free = qr_u64(r);
	t->link_free = qr_u64(r);
	t->atomic_free = qr_u64(r);
	t->rd_slot = qr_u32(r);
	for (size_t i = 0; i < sizeof(t->rd_credit_free) / sizeof(t->rd_credit_free[0]); i++)
		t->rd_credit_free[i] = qr_u64(r);
	for (uint32_t i = 0; i < d->cfg.num_vectors && i < 2048; i++)
		t->last_irq[i] = qr_u64(r);
	for (int i = 0; i < QRNIC_TM_MAX_MISS; i++)
		t->miss_free[i] = qr_u64(r);
	t->miss_last = qr_u64(r);
	for (int i = 0; i < QRNIC_TM_STREAMS; i++)
		t->mtt_recent[i] = qr_u64(r);
	t->mtt_recent_next = qr_u32(r);
	t->mtt_last = qr_u64(r);
	t->prefetches = qr_u64(r);
	if (r->bad)
		return false;
	/* mtt_recent_next runs free (used modulo QRNIC_TM_STREAMS) */
	if (t->pu_head >= QRNIC_TM_MAX_PU || (t->p.num_pu && t->pu_head >= t->p.num_pu) ||
	    t->rd_slot >= sizeof(t->rd_credit_free) / sizeof(t->rd_credit_free[0]) ||
	    (t->p.pcie_read_credits && t->rd_slot >= t->p.pcie_read_credits))
		return qr_fail(r, "timing: a resource index is out of range");
	if (!load_cache(r, &t->qpc, "QPC") || !load_cache(r, &t->mpt, "MPT") ||
	    !load_cache(r, &t->mtt, "MTT"))
		return false;
	d->port_paused = false;	/* v1: no PFC */
	if (r->version >= 2) {
		uint8_t v = qr_u8(r);

		if (r->bad)
			return false;
		if (v > 1)
			return qr_fail(r, "port pause flag %u", v);
		d->port_paused = v;
	}
	return true;
}

static void save_stat(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	qs_begin(w, "STAT", V_STAT, 0);
	qs_u32(w, QRNIC_STAT_COUNT);
	for (int i = 0; i < QRNIC_STAT_COUNT; i++)
		qs_u64(w, d->stats[i]);
	qs_end(w);
}

static bool load_stat(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	/* an older stream has fewer counters: the new ones start at 0 */
	uint32_t n = qr_count(r, QRNIC_STAT_COUNT, 8, "counters");

	for (uint32_t i = 0; i < n && !r->bad; i++)
		d->stats[i] = qr_u64(r);
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
static bool check_relations(struct qrnic_dev *d, struct qrnic_snap_r *r)
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

/* ---- the stream ----------------------------------------------------------------- */
int qrnic_dev_save(struct qrnic_dev *d, uint8_t **buf, size_t *len)
{
	struct qrnic_snap_w w = { 0 };

	*buf = NULL;
	*len = 0;
	if (d->in_run)
		return -1;	/* never inside a step: the host saves between calls */
	qs_u32(&w, QRNIC_SNAP_MAGIC);
	qs_u32(&w, QRNIC_SNAP_FORMAT);
	save_conf(d, &w);
	save_regs(d, &w);
	save_objs(d, &w);
	save_qps(d, &w);
	save_work(d, &w);
	save_time(d, &w);
	save_stat(d, &w);
	if (d->fault) {
		qs_begin(&w, "FLT.", V_FLT, QRNIC_SNAP_F_OPTIONAL);
		qrnic_fault_save(d, &w);
		qs_end(&w);
	}
	qs_begin(&w, "END.", 1, 0);
	qs_end(&w);
	if (w.oom) {
		free(w.buf);
		return -1;
	}
	*buf = w.buf;
	*len = w.len;
	return 0;
}

static const struct {
	const char *tag;
	uint16_t version;
	bool (*load)(struct qrnic_dev *d, struct qrnic_snap_r *r);
} sections[] = {
	{ "CONF", V_CONF, load_conf },
	{ "REGS", V_REGS, load_regs },
	{ "OBJS", V_OBJS, load_objs },
	{ "QPS.", V_QP, load_qps },
	{ "WORK", V_WORK, load_work },
	{ "TIME", V_TIME, load_time },
	{ "STAT", V_STAT, load_stat },
};

static void tag_str(uint32_t tag, char out[5])
{
	for (int i = 0; i < 4; i++) {
		char ch = (char)(tag >> (8 * i));

		out[i] = ch >= 0x20 && ch < 0x7f ? ch : '?';
	}
	out[4] = 0;
}

/* The header of the section at *off: 0, or -1 (with the reason). */
static int section_at(const uint8_t *buf, size_t len, size_t *off, uint32_t *tag,
		      uint16_t *version, uint16_t *flags, size_t *plen, struct qrnic_snap_r *r)
{
	struct qrnic_snap_r h = { .p = buf + *off, .len = len - *off };

	if (len - *off < 12)
		return qr_fail(r, "stream truncated at byte %zu (no section header)", *off) ? 0 : -1;
	*tag = qr_u32(&h);
	*version = qr_u16(&h);
	*flags = qr_u16(&h);
	*plen = qr_u32(&h);
	if (*plen > len - *off - 12) {
		char t[5];

		tag_str(*tag, t);
		qr_fail(r, "stream truncated: section %s of %zu bytes, %zu left", t, *plen,
			len - *off - 12);
		return -1;
	}
	*off += 12;
	return 0;
}

int qrnic_dev_load(struct qrnic_dev *d, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	struct qrnic_snap_r r = { .err = err, .errlen = errlen };
	struct qrnic_snap_r h = { .p = buf, .len = len };
	size_t off = 8, next = 0;
	bool fault_seen = false;
	char t[5] = "head";

	if (err && errlen)
		err[0] = 0;
	if (d->in_run)
		return qr_fail(&r, "device busy"), -1;
	if (!buf || len < 8 || qr_u32(&h) != QRNIC_SNAP_MAGIC) {
		qr_fail(&r, "not a qrnic device stream");
		goto refused;
	}
	if (qr_u32(&h) != QRNIC_SNAP_FORMAT) {
		qr_fail(&r, "stream format %u, this device reads %u",
			(unsigned)h.p[4] | h.p[5] << 8, QRNIC_SNAP_FORMAT);
		goto refused;
	}

	/* from the power-on state; the load fills it in */
	qrnic_dev_reset(d);
	qrnic_fault_free(d);	/* the stream's fault state replaces this one */
	qrnic_events_reset(d);
	qrnic_fx_reset(d);
	free(d->fx);
	d->fx = NULL;
	d->fx_cap = d->fx_free = d->fx_used = 0;
	memset(d->uctx_valid, 0, d->cfg.max_uctx * sizeof(*d->uctx_valid));
	for (uint32_t i = 0; i < d->mr_seen; i++)	/* all zero above */
		d->mr[i].next_tag = 0;
	d->mr_seen = 1;		/* the load raises it over every slot it fills */

	for (;;) {
		uint32_t tag;
		uint16_t version, flags;
		size_t plen;

		memcpy(t, "", 1);	/* not in a section: no prefix */
		if (section_at(buf, len, &off, &tag, &version, &flags, &plen, &r))
			goto fail;
		tag_str(tag, t);
		r.p = buf + off;
		r.len = plen;
		r.off = 0;
		r.version = version;
		off += plen;
		if (tag == QRNIC_SNAP_TAG("END."))
			break;
		if (next < sizeof(sections) / sizeof(sections[0]) &&
		    tag == QRNIC_SNAP_TAG(sections[next].tag)) {
			if (version == 0 || version > sections[next].version) {
				qr_fail(&r, "section %s version %u (this device reads up to %u)", t,
					version, sections[next].version);
				goto fail;
			}
			if (!sections[next].load(d, &r))
				goto fail;
			next++;
		} else if (tag == QRNIC_SNAP_TAG("FLT.") && !fault_seen &&
			   next == sizeof(sections) / sizeof(sections[0])) {
			if (version == 0 || version > V_FLT) {
				qr_fail(&r, "section %s version %u (this device reads up to %u)", t,
					version, V_FLT);
				goto fail;
			}
			fault_seen = true;
			if (!qrnic_fault_load(d, &r))
				goto fail;
		} else if (flags & QRNIC_SNAP_F_OPTIONAL) {
			continue;	/* a part this device does not know */
		} else {
			qr_fail(&r, "unexpected section %s", t);
			goto fail;
		}
		if (r.off != r.len) {
			qr_fail(&r, "%zu bytes left over", r.len - r.off);
			goto fail;
		}
	}
	t[0] = 0;
	if (next != sizeof(sections) / sizeof(sections[0])) {
		qr_fail(&r, "section %s missing", sections[next].tag);
		goto fail;
	}
	if (off != len) {
		qr_fail(&r, "%zu bytes after the end", len - off);
		goto fail;
	}
	t[0] = 0;
	if (!check_relations(d, &r))
		goto fail;
	{
		char why[128];

		if (qrnic_dev_check_lists(d, why, sizeof(why))) {
			qr_fail(&r, "QP lists: %s", why);
			goto fail;
		}
	}
	/* the host timer for the first event, and a run if work is pending */
	d->timer_deadline = UINT64_MAX - 1;	/* differs from any deadline: re-arms */
	qrnic_timer_update(d);
	if (qrnic_dev_busy(d))
		d->ops->schedule(d->opaque);
	return 0;

fail:
	{
		/* the message names the section; the device goes back to reset */
		char msg[256];

		snprintf(msg, sizeof(msg), "%s", err && errlen ? err : "");
		if (err && errlen && t[0])
			snprintf(err, errlen, "section %s: %s", t, msg);
	}
refused:
	qrnic_fault_free(d);
	qrnic_dev_reset(d);
	return -1;
}

int qrnic_snap_describe(const uint8_t *buf, size_t len, char *out, size_t outlen)
{
	struct qrnic_snap_r r = { .err = out, .errlen = outlen };
	size_t off = 8, used = 0;

	if (outlen)
		out[0] = 0;
	if (!buf || len < 8 || buf[0] != 'Q' || buf[1] != 'R' || buf[2] != 'N' || buf[3] != 'S')
		return -1;
	for (;;) {
		uint32_t tag;
		uint16_t version, flags;
		size_t plen;
		char t[5];
		int n;

		if (section_at(buf, len, &off, &tag, &version, &flags, &plen, &r))
			return -1;
		off += plen;
		tag_str(tag, t);
		n = snprintf(out + used, outlen > used ? outlen - used : 0, "%s %u%s %zu\n", t,
			     version, (flags & QRNIC_SNAP_F_OPTIONAL) ? " optional" : "", plen);
		if (n > 0)
			used += (size_t)n;
		if (tag == QRNIC_SNAP_TAG("END."))
			break;
	}
	return used < outlen ? 0 : -1;
}
