/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: DCQCN, the reaction point of Zhu et al., "Congestion
 * Control for Large-Scale RDMA Deployments" (SIGCOMM 2015), with the
 * parameters ConnectX exposes (mlx5 ecn sysfs rpg_*, dce_tcp_*; config.c
 * rp_*).  Rates in Mb/s, times in ns; the equations (spec 12.15):
 *
 *   alpha period K = rp_dce_tcp_rtt, g = 1 - rp_dce_tcp_g / 1024:
 *     each whole period without a CNP:  alpha <- (1 - g) alpha
 *   on a CNP (the first after being unlimited: Rc = Rt = line rate,
 *   alpha = rp_initial_alpha_value / 1024):
 *     Rt <- Rc;  Rc <- max(Rc (1 - alpha/2), Rc min_dec_fac/100, min_rate);
 *     alpha <- (1 - g) alpha + g;  the alpha period, the rate-increase
 *     timer, the byte counter and both stages restart
 *   a rate-increase event every T = rp_time_reset (timer stage t += 1) and
 *   every B = rp_byte_reset bytes sent (byte stage b += 1); with
 *   F = rp_threshold, max = max(t, b), min = min(t, b) (B = 0: both are t):
 *     max < F   fast recovery    Rc <- (Rt + Rc) / 2
 *     min > F   hyper increase   Rt <- Rt + (min - F) R_HAI;  Rc <- (Rt + Rc) / 2
 *     else      additive         Rt <- Rt + R_AI;             Rc <- (Rt + Rc) / 2
 *     Rt, Rc at most the line rate; once Rt is the line rate and Rc within
 *     1 Mb/s of it the QP is unlimited again.
 *
 * Timers are not events: they are brought up to date (on_timer) whenever
 * the rate is used or read, which gives the same result as firing each.
 */
#include "qrnic_internal.h"

/* b^n by squaring (no libm: the model links without it) */
static double powu(double b, uint64_t n)
{
	double r = 1;

	for (; n; n >>= 1, b *= b)
		if (n & 1)
			r *= b;
	return r;
}

static double line_rate(const struct qrnic_dev *d)
{
	return qrnic_cc_line_rate(d);
}

static void dcqcn_init(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now)
{
	struct qrnic_cc_qp *c = &qp->cc;

	c->active = true;
	c->rc = c->rt = line_rate(d);
	c->alpha = d->cfg.rp_initial_alpha_value / 1024.0;
	c->alpha_t = c->inc_t = c->last = now;
	c->t_stage = c->b_stage = 0;
	c->bytes = 0;
	c->next_tx = 0;
}

/* rp_initial_rate: a QP starts limited at that rate, with Rt at the line
 * rate: the increase events then bring Rc back up (fast recovery first),
 * unless CNPs come.  The windows a requester books before its first CNP
 * can come back are paced from the start. */
static void dcqcn_start(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now)
{
	double line = line_rate(d);

	if (!d->cfg.rp_initial_rate || (double)d->cfg.rp_initial_rate >= line)
		return;
	dcqcn_init(d, qp, now);
	qp->cc.rc = d->cfg.rp_initial_rate;
}

static void release_check(struct qrnic_dev *d, struct qrnic_cc_qp *c)
{
	double line = line_rate(d);

	if (c->rt >= line && line - c->rc < 1.0) {
		c->rc = c->rt = line;
		c->active = false;
	}
}

static void increase(struct qrnic_dev *d, struct qrnic_cc_qp *c)
{
	uint32_t f = d->cfg.rp_threshold;
	uint32_t hi = c->t_stage, lo = c->t_stage;
	double line = line_rate(d);

	if (d->cfg.rp_byte_reset) {
		hi = c->t_stage > c->b_stage ? c->t_stage : c->b_stage;
		lo = c->t_stage < c->b_stage ? c->t_stage : c->b_stage;
	}
	if (hi < f) {
		c->rc = (c->rt + c->rc) / 2;			/* fast recovery */
	} else {
		if (lo > f)
			c->rt += (double)(lo - f) * d->cfg.rp_hai_rate;	/* hyper increase */
		else
			c->rt += d->cfg.rp_ai_rate;		/* additive increase */
		if (c->rt > line)
			c->rt = line;
		c->rc = (c->rt + c->rc) / 2;
	}
	if (c->rc > line)
		c->rc = line;
	release_check(d, c);
}

static void dcqcn_timer(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now)
{
	struct qrnic_cc_qp *c = &qp->cc;
	uint64_t k = (uint64_t)d->cfg.rp_dce_tcp_rtt * 1000;
	uint64_t t = (uint64_t)d->cfg.rp_time_reset * 1000;
	uint64_t n;

	if (!c->active)
		return;
	if (now < c->last)
		now = c->last;	/* engines visit work out of time order */
	c->last = now;
	if (now - c->alpha_t >= k) {	/* whole periods ended (most calls: none, no division) */
		n = (now - c->alpha_t) / k;
		c->alpha *= powu(d->cfg.rp_dce_tcp_g / 1024.0, n);
		c->alpha_t += n * k;
	}
	while (c->active && now - c->inc_t >= t) {
		c->inc_t += t;
		c->t_stage++;
		increase(d, c);
	}
}

static void dcqcn_cnp(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now)
{
	struct qrnic_cc_qp *c = &qp->cc;
	double g = 1.0 - d->cfg.rp_dce_tcp_g / 1024.0;
	double floor_dec, r;

	dcqcn_timer(d, qp, now);	/* the periods that ended before it */
	if (!c->active)
		dcqcn_init(d, qp, now);	/* the timers released it meanwhile */
	now = c->last;
	c->rt = c->rc;
	r = c->rc * (1.0 - c->alpha / 2);
	floor_dec = c->rc * d->cfg.rp_min_dec_fac / 100.0;
	if (r < floor_dec)
		r = floor_dec;
	if (r < d->cfg.rp_min_rate)
		r = d->cfg.rp_min_rate;
	c->rc = r;
	c->alpha = (1.0 - g) * c->alpha + g;
	c->alpha_t = c->inc_t = now;
	c->t_stage = c->b_stage = 0;
	c->bytes = 0;
}

static void dcqcn_ack(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t npkts, uint64_t now)
{
	(void)d, (void)qp, (void)npkts, (void)now;	/* DCQCN does not use ACKs */
}

static void dcqcn_tx(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t bytes, uint64_t now)
{
	struct qrnic_cc_qp *c = &qp->cc;

	(void)now;
	if (!c->active || !d->cfg.rp_byte_reset)
		return;
	c->bytes += bytes;
	while (c->active && c->bytes >= d->cfg.rp_byte_reset) {
		c->bytes -= d->cfg.rp_byte_reset;
		c->b_stage++;
		increase(d, c);
	}
}

static double dcqcn_rate(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	(void)d;
	return qp->cc.active ? qp->cc.rc : 0;
}

const struct qrnic_cc_ops qrnic_cc_dcqcn_ops = {
	.name = "dcqcn", .init = dcqcn_init, .on_cnp = dcqcn_cnp, .on_ack = dcqcn_ack,
	.on_tx = dcqcn_tx, .on_timer = dcqcn_timer, .current_rate = dcqcn_rate,
	.on_start = dcqcn_start,
};
