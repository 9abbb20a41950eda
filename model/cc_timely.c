/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: TIMELY, the RTT-gradient congestion control of
 * Mittal et al., "TIMELY: RTT-based Congestion Control for the
 * Datacenter" (SIGCOMM 2015), Algorithm 1, behind the interface of
 * qrnic_cc.h (cc_algo = 2).  Rates in Mb/s, times in ns.
 *
 * RTT samples (within the model, timing profiles only): one request
 * packet of the QP at a time, among those that ask for an ACK (the
 * requester calls on_sent for those only: a sample then is not stretched
 * by the pacing of the packets whose ACK was coalesced into it), is timed
 * from when it leaves the port to the ACK that first moves una_psn past
 * its PSN (on_ack; a READ response acknowledges as an ACK does).  For each sample:
 *
 *   new_rtt_diff = rtt - prev_rtt;  prev_rtt = rtt
 *   rtt_diff     = (1 - a) rtt_diff + a new_rtt_diff        a = timely_alpha/1024
 *   gradient     = rtt_diff / min_rtt
 *   rtt < Tlow:    R += delta
 *   rtt > Thigh:   R *= 1 - beta (1 - Thigh / rtt)           beta = timely_beta/1024
 *   gradient <= 0: R += N delta, N = timely_hai_n once that many samples in
 *                  a row had gradient <= 0, else 1  (hyper-active increase)
 *   else:          R *= 1 - beta min(gradient, 1)
 *   R within [rp_min_rate, line rate].
 *
 * The first sample only sets prev_rtt and starts the limiter at the line
 * rate; the QP stays rate limited (paced at R) from then on.  CNPs are
 * counted but do not change the rate.  Difference from the paper: the
 * gradient is capped at 1, so that one sample cuts the rate by at most
 * beta (the paper's R (1 - beta g) goes below 0 for g > 1/beta; it would
 * then sit at the minimum rate).
 */
#include "qrnic_internal.h"

static void timely_init(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now)
{
	struct qrnic_cc_qp *c = &qp->cc;

	(void)now;
	if (c->active)
		return;
	c->active = true;
	c->rc = c->rt = qrnic_cc_line_rate(d);
	c->rtt_diff = 0;
	c->hai = 0;
	c->next_tx = 0;
}

static void timely_cnp(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now)
{
	(void)d, (void)qp, (void)now;	/* TIMELY does not use ECN */
}

static void timely_sent(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t psn, uint64_t now)
{
	struct qrnic_cc_qp *c = &qp->cc;

	(void)d;
	if (c->rtt_pending)
		return;
	c->rtt_pending = true;
	c->rtt_psn = psn;
	c->rtt_sent = now;
}

static void sample(struct qrnic_dev *d, struct qrnic_cc_qp *c, double rtt)
{
	const struct qrnic_config *g = &d->cfg;
	double line = qrnic_cc_line_rate(d);
	double a = g->timely_alpha / 1024.0, beta = g->timely_beta / 1024.0;
	double t_low = g->timely_t_low * 1000.0, t_high = g->timely_t_high * 1000.0;
	double grad, r = c->rc;

	c->rtts++;
	if (!c->active) {	/* the first sample: a reference only */
		c->active = true;
		c->rc = c->rt = line;
		c->rtt_diff = 0;
		c->hai = 0;
		c->next_tx = 0;
		c->rtt = rtt;
		return;
	}
	c->rtt_diff = (1 - a) * c->rtt_diff + a * (rtt - c->rtt);
	c->rtt = rtt;
	grad = c->rtt_diff / (g->timely_min_rtt * 1000.0);
	if (grad > 1)
		grad = 1;	/* one sample cuts by at most beta (as above Thigh) */
	if (rtt < t_low) {
		r += g->timely_delta;
		c->hai = 0;
	} else if (rtt > t_high) {
		r *= 1 - beta * (1 - t_high / rtt);
		c->hai = 0;
	} else if (grad <= 0) {
		if (c->hai < g->timely_hai_n)
			c->hai++;
		r += (c->hai >= g->timely_hai_n ? g->timely_hai_n : 1) * (double)g->timely_delta;
	} else {
		r *= 1 - beta * grad;
		c->hai = 0;
	}
	if (r > line)
		r = line;
	if (r < g->rp_min_rate)
		r = g->rp_min_rate;
	c->rc = c->rt = r;
}

static void timely_ack(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t npkts, uint64_t now)
{
	struct qrnic_cc_qp *c = &qp->cc;

	(void)npkts;
	if (!c->rtt_pending || qrnic_psn_diff(qp->req.una_psn, c->rtt_psn) <= 0)
		return;
	c->rtt_pending = false;
	sample(d, c, now > c->rtt_sent ? (double)(now - c->rtt_sent) : 0);
}

static void timely_tx(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t bytes, uint64_t now)
{
	(void)d, (void)qp, (void)bytes, (void)now;
}

static void timely_timer(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now)
{
	(void)d, (void)qp, (void)now;	/* no timers: every change comes from a sample */
}

static double timely_rate(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	(void)d;
	return qp->cc.active ? qp->cc.rc : 0;
}

const struct qrnic_cc_ops qrnic_cc_timely_ops = {
	.name = "timely", .init = timely_init, .on_cnp = timely_cnp, .on_ack = timely_ack,
	.on_tx = timely_tx, .on_timer = timely_timer, .current_rate = timely_rate,
	.on_sent = timely_sent,
};
