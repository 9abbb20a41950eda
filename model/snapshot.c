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
uint32_t qr_count(struct qrnic_snap_r *r, uint32_t max, size_t min_size, const char *what)
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
uint32_t qr_index(struct qrnic_snap_r *r, uint32_t n, bool zero_ok, const char *what)
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

/* CONF: the configuration and the timing profile.  A stream loads only
 * into a device configured the same way (as QEMU requires the same
 * command line on both ends). */
/*
 * Configuration parameters marked QRNIC_CFG_LATE in the table (added after
 * CONF version 4, e.g. rp_port_hold) are written only when not at their
 * default, so that a device at the defaults writes the version-4 layout
 * (tests/fixtures) and older devices load its streams.  Such a parameter
 * absent from a stream must be at its default on the loading device: the
 * saving device had it there, or predates it and behaved so.
 */
static bool conf_late(const struct qrnic_config_param *p)
{
	return p->flags & QRNIC_CFG_LATE;
}

static bool conf_omitted(const struct qrnic_dev *d, const struct qrnic_config_param *p)
{
	return conf_late(p) && qrnic_config_get(&d->boot_cfg, p) == p->def;
}

static void save_conf(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	const struct qrnic_config_param *p;
	uint32_t n = 0;
	uint64_t v;

	qs_begin(w, "CONF", V_CONF, 0);
	for (uint32_t i = 0; (p = qrnic_config_param(i)); i++)
		n += !conf_omitted(d, p);
	qs_u32(w, n);
	for (uint32_t i = 0; (p = qrnic_config_param(i)); i++) {
		if (conf_omitted(d, p))
			continue;
		qs_str(w, p->name);
		qs_u64(w, qrnic_config_get(&d->boot_cfg, p));
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
	/* which late parameters (conf_late) the stream had, by table index */
	bool late_seen[QRNIC_CONFIG_MAX_PARAMS] = { false };
	const struct qrnic_config_param *lp;

	for (uint32_t i = 0; i < n && !r->bad; i++) {
		const struct qrnic_config_param *p;

		qr_str(r, name, sizeof(name));
		v = qr_u64(r);
		if (r->bad)
			break;
		p = qrnic_config_param_find(name);
		if (!p)
			return qr_fail(r, "unknown configuration parameter '%s'", name);
		mine = qrnic_config_get(&d->boot_cfg, p);
		if (v != mine)
			return qr_fail(r, "configuration differs: %s is %llu in the stream, "
				       "%llu on this device", name, (unsigned long long)v,
				       (unsigned long long)mine);
		if (conf_late(p))
			late_seen[p - qrnic_config_param(0)] = true;
	}
	for (uint32_t i = 0; !r->bad && (lp = qrnic_config_param(i)); i++)
		if (conf_late(lp) && !late_seen[i] && !conf_omitted(d, lp))
			return qr_fail(r, "configuration differs: %s is not in the stream (its "
				       "default, %llu), %llu on this device", lp->name,
				       (unsigned long long)lp->def,
				       (unsigned long long)qrnic_config_get(&d->boot_cfg, lp));
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

/* CC..: the congestion control parameters SET_CC changed at run time
 * (spec 6.6.22), those that differ from the configuration.  Written only
 * when there is one: a stream without changes is as before, and a device
 * that does not know the section refuses a stream with changes. */
static bool cc_changed(const struct qrnic_dev *d, uint32_t *n)
{
	const struct qrnic_config_param *p;

	*n = 0;
	for (uint32_t id = 0; (p = qrnic_cc_param(id)); id++)
		if (qrnic_config_get(&d->cfg, p) != qrnic_config_get(&d->boot_cfg, p))
			(*n)++;
	return *n != 0;
}

static void save_cc(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	const struct qrnic_config_param *p;
	uint32_t n;

	if (!cc_changed(d, &n))
		return;
	qs_begin(w, "CC..", V_CC, 0);
	qs_u32(w, n);
	for (uint32_t id = 0; (p = qrnic_cc_param(id)); id++) {
		uint64_t v = qrnic_config_get(&d->cfg, p);

		if (v == qrnic_config_get(&d->boot_cfg, p))
			continue;
		qs_str(w, p->name);
		qs_u64(w, v);
	}
	qs_end(w);
}

static bool load_cc(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	char name[64];
	uint32_t n = qr_count(r, QRNIC_CC_P_COUNT, 10, "congestion control parameters");

	for (uint32_t i = 0; i < n && !r->bad; i++) {
		const struct qrnic_config_param *p = NULL;
		struct qrnic_config_error e;
		uint64_t v;

		qr_str(r, name, sizeof(name));
		v = qr_u64(r);
		if (r->bad)
			break;
		for (uint32_t id = 0; qrnic_cc_param(id); id++)
			if (!strcmp(qrnic_cc_param(id)->name, name))
				p = qrnic_cc_param(id);
		if (!p)
			return qr_fail(r, "'%s' is not a congestion control parameter", name);
		if (qrnic_config_check_value(p, v, &e))
			return qr_fail(r, "%s = %llu out of range %llu..%llu", name,
				       (unsigned long long)v, (unsigned long long)e.min,
				       (unsigned long long)e.max);
		/* the QPs are not loaded yet: their state comes with them */
		qrnic_config_put(&d->cfg, p, v);
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
	qrnic_arm_mark_all(d);	/* the queues' flags are in OBJS: look at all once */
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
	for (int i = 0; i < 8; i++) {	/* v3: PFC frames (pfc.c) */
		qs_u64(w, d->pfc_until[i]);
		qs_u64(w, d->pfc_tail[i]);
	}
	/* v4: the receive buffer (pfc.c); its bytes follow from the frames */
	qs_u64(w, d->rxb.next);
	qs_u64(w, d->rxb.max_used);
	qs_u8(w, d->rxb.xoff);
	qs_u64(w, d->rxb.armed);
	for (int i = 0; i < 8; i++) {
		qs_u64(w, d->rxb.occ_max[i]);
		qs_u64(w, d->rxb.refresh[i]);
	}
	qs_end(w);
}

/* TIME v4: the receive buffer's state; the bytes in it are those of the
 * received frames restored by WORK (which comes before TIME) */
static bool load_rxb(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	memset(&d->rxb, 0, sizeof(d->rxb));
	for (uint32_t i = d->rxq_head; i != d->rxq_tail; i++) {
		const struct qrnic_frame *f = &d->rxq[i % QRNIC_RXQ_DEPTH];

		if (!(f->prio & QRNIC_FRAME_IN_RXB))
			continue;
		d->rxb.used += f->len;
		d->rxb.occ[f->prio & 7] += f->len;
	}
	if (r->version < 4)
		return true;
	d->rxb.next = qr_u64(r);
	d->rxb.max_used = qr_u64(r);
	d->rxb.xoff = qr_u8(r);
	d->rxb.armed = qr_u64(r);
	for (int i = 0; i < 8; i++) {
		d->rxb.occ_max[i] = qr_u64(r);
		d->rxb.refresh[i] = qr_u64(r);
	}
	if (r->bad)
		return false;
	if (d->rxb.used > d->cfg.rx_buffer || (d->rxb.xoff && !d->cfg.rx_pfc_xoff))
		return qr_fail(r, "receive buffer: %llu bytes in %u, XOFF 0x%x",
			       (unsigned long long)d->rxb.used, d->cfg.rx_buffer, d->rxb.xoff);
	return true;
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
	memset(d->pfc_until, 0, sizeof(d->pfc_until));	/* v1, v2: no PFC frames */
	memset(d->pfc_tail, 0, sizeof(d->pfc_tail));
	d->pfc_active = false;
	if (r->version >= 3) {
		for (int i = 0; i < 8; i++) {
			d->pfc_until[i] = qr_u64(r);
			d->pfc_tail[i] = qr_u64(r);
			if (d->pfc_until[i] || d->pfc_tail[i])
				d->pfc_active = true;
		}
		if (r->bad)
			return false;
	}
	return load_rxb(d, r);
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
	save_cc(d, &w);
	save_regs(d, &w);
	qrnic_snap_save_objs(d, &w);
	qrnic_snap_save_qps(d, &w);
	qrnic_snap_save_work(d, &w);
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
	{ "OBJS", V_OBJS, qrnic_snap_load_objs },
	{ "QPS.", V_QP, qrnic_snap_load_qps },
	{ "WORK", V_WORK, qrnic_snap_load_work },
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
	bool fault_seen = false, cc_seen = false;
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
		} else if (tag == QRNIC_SNAP_TAG("CC..") && !cc_seen && next == 1) {
			/* right after CONF, when there is one */
			if (version == 0 || version > V_CC) {
				qr_fail(&r, "section %s version %u (this device reads up to %u)", t,
					version, V_CC);
				goto fail;
			}
			cc_seen = true;
			if (!load_cc(d, &r))
				goto fail;
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
	if (!qrnic_snap_check_relations(d, &r))
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
