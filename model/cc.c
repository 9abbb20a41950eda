/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: congestion control (spec 12.15) -- ECN, the
 * notification point (CNPs for CE-marked packets), the dispatch of CNPs to
 * the reaction point's algorithm (qrnic_cc.h), the per-QP rate limiter of
 * the requester under a timing profile, and the "none" algorithm.  DCQCN
 * is in cc_dcqcn.c.
 */
#include "qrnic_internal.h"

const char *qrnic_cc_algo_name(uint32_t algo)
{
	switch (algo) {
	case QRNIC_CC_NONE: return "none";
	case QRNIC_CC_DCQCN: return "dcqcn";
	case QRNIC_CC_TIMELY: return "timely";
	}
	return "?";
}

uint32_t qrnic_cc_algo_of(const struct qrnic_dev *d, const struct qrnic_qp *qp)
{
	return qp && qp->attr.cc_algo ? qp->attr.cc_algo - 1u : d->cfg.cc_algo;
}

void qrnic_cc_qp_reset(struct qrnic_qp *qp)
{
	struct qrnic_cc_qp *c = &qp->cc;

	c->active = false;
	c->rc = c->rt = c->alpha = 0;
	c->t_stage = c->b_stage = 0;
	c->bytes = 0;
	c->next_tx = 0;
	c->gen++;		/* an armed QRNIC_EVK_CC event is stale */
	c->rtt_pending = false;
	c->rtt = c->rtt_diff = 0;
	c->hai = 0;
}

void qrnic_cc_param_set(struct qrnic_dev *d, const struct qrnic_config_param *p, uint64_t v)
{
	uint32_t old = d->cfg.cc_algo;

	qrnic_config_put(&d->cfg, p, v);
	if (d->cfg.cc_algo == old)
		return;
	/* the QPs that follow the device's algorithm change algorithm: as
	 * MODIFY_QP with QRNIC_QP_ATTR_CC, their state starts over (the old
	 * algorithm's state means nothing to the new one) */
	for (uint32_t i = 0; i < d->qp_hwm && i < d->cfg.max_qp; i++) {
		struct qrnic_qp *qp = &d->qp[i];

		if (!qp->valid || qp->attr.cc_algo)
			continue;
		qrnic_cc_qp_reset(qp);	/* a limiter event it waits for is stale now */
		if (qp->attr.qp_state == QRNIC_QPS_RTS || qp->attr.qp_state == QRNIC_QPS_SQD)
			qrnic_qp_kick(d, qp);	/* so it is serviced again */
	}
}

int qrnic_dev_cc_param(const struct qrnic_dev *dev, uint32_t id, uint32_t *value)
{
	const struct qrnic_config_param *p = qrnic_cc_param(id);

	if (!p || !value)
		return -1;
	*value = (uint32_t)qrnic_config_get(&dev->cfg, p);
	return 0;
}

const struct qrnic_cc_ops *qrnic_cc_ops_of(const struct qrnic_dev *d, const struct qrnic_qp *qp)
{
	switch (qrnic_cc_algo_of(d, qp)) {
	case QRNIC_CC_DCQCN: return &qrnic_cc_dcqcn_ops;
	case QRNIC_CC_TIMELY: return &qrnic_cc_timely_ops;
	}
	return &qrnic_cc_none_ops;
}

double qrnic_cc_line_rate(const struct qrnic_dev *d)
{
	return d->tm.enabled ? (double)d->tm.p.link_mbps : (double)d->cfg.speed_mbps;
}

/* The time congestion control works in: modelled under a timing profile
 * (in a data-path step), else the host's clock. */
static uint64_t cc_now(struct qrnic_dev *d)
{
	return qrnic_timed(d) ? d->tm_t : qrnic_now(d);
}

static bool connected(const struct qrnic_qp *qp)
{
	return qp->type == QRNIC_QPT_RC || qp->type == QRNIC_QPT_UC;
}

/* ---- "none": never limits ------------------------------------------------ */
static void none_event(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now)
{
	(void)d, (void)qp, (void)now;
}

static void none_count(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t n, uint64_t now)
{
	(void)d, (void)qp, (void)n, (void)now;
}

static double none_rate(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	(void)d, (void)qp;
	return 0;
}

const struct qrnic_cc_ops qrnic_cc_none_ops = {
	.name = "none", .init = none_event, .on_cnp = none_event, .on_ack = none_count,
	.on_tx = none_count, .on_timer = none_event, .current_rate = none_rate,
};

/* ---- notification point ---------------------------------------------------- */
/* A CNP (RoCEv2 Annex A17): BTH opcode 0x81, BECN set, DestQP = the QP
 * that sent the marked packet, PSN 0, 16 reserved bytes; IP DSCP
 * np_cnp_dscp, ECN ECT(0) (as ConnectX sends them). */
static void send_cnp(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	struct qrnic_pkt p;
	uint64_t t = d->tm_t;
	uint32_t cycles = d->tm_cycles;

	memset(&p, 0, sizeof(p));
	if (qrnic_pkt_fill_av(d, &p, &qp->attr.av, qp) != QRNIC_VERR_NONE) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		return;
	}
	p.opcode = QRNIC_OP_CNP;
	p.becn = true;
	p.dqpn = qp->attr.dest_qpn;
	p.psn = 0;
	p.traffic_class = (uint8_t)(d->cfg.np_cnp_dscp << 2 | QRNIC_ECN_ECT0);
	if (qrnic_timed(d))	/* made beside the packet's processing, like an ACK */
		d->tm_cycles = d->tm.p.ack_cycles;
	qrnic_send_pkt(d, &p, NULL, 0);
	qrnic_stat_add(d, QRNIC_STAT_CNP_SENT, 1);
	d->tm_t = t;	/* the packet's own processing goes on from where it was */
	d->tm_cycles = cycles;
}

void qrnic_cc_np_ce(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	uint64_t now = cc_now(d);
	uint64_t gap = (uint64_t)d->cfg.np_min_time_between_cnps * 1000;

	(void)p;
	qrnic_stat_add(d, QRNIC_STAT_ECN_MARKED_RECEIVED, 1);
	if (qrnic_cc_algo_of(d, qp) == QRNIC_CC_NONE || !connected(qp) || !d->cfg.np_enable)
		return;
	if (qp->attr.qp_state < QRNIC_QPS_RTR || qp->attr.qp_state == QRNIC_QPS_ERR)
		return;
	if (qp->cc.np_sent && now < qp->cc.np_last + gap)
		return;
	qp->cc.np_sent = true;
	qp->cc.np_last = now;
	send_cnp(d, qp);
}

void qrnic_cc_qp_start(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	const struct qrnic_cc_ops *ops = qrnic_cc_ops_of(d, qp);

	if (ops->on_start && connected(qp))
		ops->on_start(d, qp, cc_now(d));
}

/* ---- reaction point -------------------------------------------------------- */
void qrnic_cc_rx_cnp(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p)
{
	const struct qrnic_cc_ops *ops = qrnic_cc_ops_of(d, qp);
	uint64_t now = cc_now(d);

	if (!connected(qp) || qp->attr.qp_state < QRNIC_QPS_RTR ||
	    qp->attr.qp_state == QRNIC_QPS_ERR) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_QP_STATE, 1);
		qrnic_trace(d, QRNIC_TR_DROP, qp->qpn, p->psn, QRNIC_STAT_RX_DROP_QP_STATE, 0, 0);
		return;
	}
	qrnic_stat_add(d, QRNIC_STAT_CNP_RECEIVED, 1);
	qp->cc.cnps++;
	if (!d->cfg.rp_enable && ops == &qrnic_cc_dcqcn_ops)
		return;		/* the reaction point is off: counted, ignored */
	if (!qp->cc.active)
		ops->init(d, qp, now);
	ops->on_cnp(d, qp, now);
}

void qrnic_cc_ack(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t npkts)
{
	const struct qrnic_cc_ops *ops;

	if (qp->cc.active) {
		qrnic_cc_ops_of(d, qp)->on_ack(d, qp, npkts, cc_now(d));
	} else if (qrnic_cc_algo_of(d, qp) && (ops = qrnic_cc_ops_of(d, qp))->on_sent) {
		ops->on_ack(d, qp, npkts, cc_now(d));	/* RTT-based: samples from the start */
	}
}

void qrnic_cc_sent(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t psn)
{
	const struct qrnic_cc_ops *ops = qrnic_cc_ops_of(d, qp);

	if (ops->on_sent && connected(qp))
		ops->on_sent(d, qp, psn, d->tm_depart);
}

void qrnic_cc_pace(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t *t, uint32_t bytes)
{
	const struct qrnic_cc_ops *ops = qrnic_cc_ops_of(d, qp);
	double rate;

	ops->on_timer(d, qp, *t);
	rate = ops->current_rate(d, qp);
	if (rate > 0 && qp->cc.active) {
		struct qrnic_cc_qp *c = &qp->cc;
		/* the port's view of the frame: bytes + preamble, FCS, gap */
		uint32_t fb = bytes + d->tm.p.link_overhead;

		if (c->gap_rate != rate || c->gap_bytes != fb) {
			/* the gap changes only with the rate (a CNP, an
			 * increase event) or the frame size: the division
			 * once per change, not per packet */
			double ns = (double)fb * 8000.0 / rate;
			uint64_t whole = (uint64_t)ns;

			c->gap_rate = rate;
			c->gap_bytes = fb;
			c->gap_ns = whole + ((double)whole < ns);	/* rounded up */
		}
		if (*t < c->next_tx)
			*t = c->next_tx;
		c->next_tx = *t + c->gap_ns;
	}
	ops->on_tx(d, qp, bytes, *t);
}

/*
 * rp_port_hold: a QP at the line rate is not held by its limiter, and
 * without this the requester hands the port all its window allows at once
 * (the port sends the frames one after the other, qrnic_tm_link): a CNP
 * then acts a window late.  With it, the QP's next packet is prepared only
 * when the port is QRNIC_CC_LOOKAHEAD_NS from free, as a NIC's scheduler
 * picks a packet when the port can take it.  Off by default (results of
 * existing setups unchanged).
 */
static bool port_hold(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now)
{
	if (!d->cfg.rp_port_hold || !qrnic_cc_algo_of(d, qp) ||
	    d->tm.link_free <= now + QRNIC_CC_LOOKAHEAD_NS)
		return false;
	qp->cc.gen = ++d->timer_gen;
	qrnic_event_add(d, d->tm.link_free - QRNIC_CC_LOOKAHEAD_NS, QRNIC_EVK_CC, qp->qpn,
			qp->cc.gen);
	return true;
}

bool qrnic_cc_hold_slow(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	uint64_t now = qrnic_now(d);

	/* a packet is prepared up to QRNIC_CC_LOOKAHEAD_NS before its time
	 * (its payload read overlaps the wait); qrnic_cc_pace() then holds
	 * it to the exact time */
	if (!d->tm.enabled)
		return false;
	if (!qp->cc.active)	/* rp_port_hold at the line rate: see below */
		return port_hold(d, qp, now);
	if (qp->cc.next_tx <= now + QRNIC_CC_LOOKAHEAD_NS)
		return false;
	qrnic_cc_ops_of(d, qp)->on_timer(d, qp, now);
	if (!qp->cc.active)
		return port_hold(d, qp, now);	/* back at the line rate */
	qp->cc.gen = ++d->timer_gen;
	qrnic_event_add(d, qp->cc.next_tx - QRNIC_CC_LOOKAHEAD_NS, QRNIC_EVK_CC, qp->qpn, qp->cc.gen);
	return true;
}

bool qrnic_cc_event_stale(struct qrnic_dev *d, const struct qrnic_event *ev)
{
	struct qrnic_qp *qp = qrnic_qp_get(d, ev->id);

	return !qp || qp->cc.gen != ev->gen;
}

void qrnic_cc_event(struct qrnic_dev *d, const struct qrnic_event *ev)
{
	struct qrnic_qp *qp = qrnic_qp_get(d, ev->id);

	if (qp && qp->cc.gen == ev->gen)
		qrnic_qp_kick(d, qp);
}

int qrnic_qp_cc_info(struct qrnic_dev *d, uint32_t qpn, struct qrnic_cc_info *out)
{
	struct qrnic_qp *qp = qrnic_qp_get(d, qpn);
	const struct qrnic_cc_ops *ops = qrnic_cc_ops_of(d, qp);
	double line = qrnic_cc_line_rate(d);

	if (!qp || !out)
		return -1;
	if (qp->cc.active)
		ops->on_timer(d, qp, qrnic_now(d));
	memset(out, 0, sizeof(*out));
	out->algo = qrnic_cc_algo_of(d, qp);
	out->limited = qp->cc.active;
	out->rate_mbps = qp->cc.active ? qp->cc.rc : line;
	out->target_mbps = qp->cc.active ? qp->cc.rt : line;
	out->alpha = qp->cc.alpha;
	out->t_stage = qp->cc.t_stage;
	out->b_stage = qp->cc.b_stage;
	out->cnps = qp->cc.cnps;
	out->rtt_ns = qp->cc.rtt;
	out->rtts = qp->cc.rtts;
	return 0;
}
