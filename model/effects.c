/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: timing glue.  The engines run functionally at host
 * time; while a data-path step runs (qrnic_tm_begin/end) the choke points
 * account modelled time in d->tm_t, and the effects a host can observe --
 * frames leaving the port, CQEs (with their EQEs) appearing in host memory,
 * moderated interrupts -- are held here and released by the event heap at
 * their modelled time.  Functional results do not change; only when they
 * become visible.
 */
#include <stdio.h>
#include <stdlib.h>

#include "qrnic_internal.h"

static inline uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

int qrnic_dev_set_timing(struct qrnic_dev *d, const char *profile, const char *overrides,
			 char *err, size_t errlen)
{
	const struct qrnic_timing_profile *base =
		qrnic_timing_profile_find(profile && *profile ? profile : "functional");
	struct qrnic_timing_profile p;
	char buf[4096];

	if (!base) {
		snprintf(err, errlen, "unknown timing profile '%s' (available: %s)", profile,
			 qrnic_timing_profile_names());
		return -1;
	}
	p = *base;
	if (overrides && *overrides) {
		char *save = NULL, *tok;

		if (strlen(overrides) >= sizeof(buf)) {
			snprintf(err, errlen, "timing overrides too long");
			return -1;
		}
		strcpy(buf, overrides);
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(tok, '='), *end;
			unsigned long long v;

			if (!eq) {
				snprintf(err, errlen, "timing override '%s' is not name=value", tok);
				return -1;
			}
			*eq = 0;
			v = strtoull(eq + 1, &end, 0);
			if (end == eq + 1 || *end || qrnic_timing_param_set(&p, tok, v) != 0) {
				snprintf(err, errlen, "bad timing override '%s=%s'", tok, eq + 1);
				return -1;
			}
		}
	}
	if (qrnic_timing_profile_check(&p, err, errlen) != 0)
		return -1;
	qrnic_fx_reset(d);
	qrnic_timing_fini(&d->tm);
	if (qrnic_timing_init(&d->tm, &p) != 0) {
		snprintf(err, errlen, "cannot allocate the timing model");
		qrnic_timing_init(&d->tm, qrnic_timing_profile_find("functional"));
		return -1;
	}
	return 0;
}

const char *qrnic_dev_timing_profile(const struct qrnic_dev *d)
{
	return d->tm.p.name;
}

void qrnic_tm_begin(struct qrnic_dev *d)
{
	d->tm_on = d->tm.enabled;	/* qrnic_timed() reads one flag */
	if (!d->tm_on)	/* untimed, nothing reads the step's time: no clock
			 * read per packet (in QEMU a clock_gettime, 6 % of
			 * a T1 WRITE stream's main loop, perf, issue 23) */
		return;
	d->tm_t = qrnic_now(d);
	d->tm_wr_vis = d->tm_t;
	d->tm_cycles = 0;
}

void qrnic_tm_end(struct qrnic_dev *d)
{
	d->tm_on = false;
}

/* ---- the effect pool --------------------------------------------------------- */
static struct qrnic_effect *fx_alloc(struct qrnic_dev *d, uint32_t *idx)
{
	struct qrnic_effect *e;

	if (!d->fx_free) {
		uint32_t cap = d->fx_cap ? d->fx_cap * 2 : 256;
		struct qrnic_effect *n;

		if (cap > (1u << 20))
			return NULL;
		n = realloc(d->fx, cap * sizeof(*n));
		if (!n)
			return NULL;
		memset(n + d->fx_cap, 0, (cap - d->fx_cap) * sizeof(*n));
		/* slot 0 is never used, so 0 can end the free list */
		for (uint32_t i = cap - 1; i >= (d->fx_cap ? d->fx_cap : 1); i--) {
			n[i].next_free = d->fx_free;
			d->fx_free = i;
		}
		d->fx = n;
		d->fx_cap = cap;
	}
	*idx = d->fx_free;
	e = &d->fx[*idx];
	d->fx_free = e->next_free;
	e->gen = ++d->fx_gen;
	d->fx_used++;
	return e;
}

static void fx_release(struct qrnic_dev *d, uint32_t idx)
{
	struct qrnic_effect *e = &d->fx[idx];

	if (e->frame) {	/* a sent frame left with its buffer: no call per frame */
		qrnic_frame_buf_free(e->frame);
		e->frame = NULL;
	}
	e->kind = QRNIC_FX_FREE;
	e->gen = ++d->fx_gen;	/* events naming it become stale */
	e->next_free = d->fx_free;
	d->fx_free = idx;
	d->fx_used--;
}

void qrnic_fx_reset(struct qrnic_dev *d)
{
	for (uint32_t i = 1; i < d->fx_cap; i++)
		if (d->fx[i].kind != QRNIC_FX_FREE)
			fx_release(d, i);
	qrnic_timing_reset(&d->tm);
}

void qrnic_fx_cancel_cq(struct qrnic_dev *d, uint32_t cqn)
{
	for (uint32_t i = 1; i < d->fx_cap; i++)
		if (d->fx[i].kind == QRNIC_FX_CQE && d->fx[i].len == cqn)
			fx_release(d, i);
}

/* RESIZE_CQ: the CQ's CQEs still to become visible are written now (into
 * the ring they were reserved in), before the ring goes away. */
void qrnic_fx_flush_cq(struct qrnic_dev *d, uint32_t cqn)
{
	struct qrnic_cq *cq = qrnic_cq_get(d, cqn);

	for (uint32_t i = 1; i < d->fx_cap; i++) {
		if (d->fx[i].kind == QRNIC_FX_CQE && d->fx[i].len == cqn) {
			if (cq)	/* stamped with its modelled time, as if due */
				qrnic_cq_write_now(d, cq, d->fx[i].slot, &d->fx[i].cqe,
						   d->fx[i].when);
			fx_release(d, i);
		}
	}
}

static void fx_schedule(struct qrnic_dev *d, struct qrnic_effect *e, uint32_t idx)
{
	/* frames leave one after the other and a CQ's CQEs appear in order:
	 * FIFO lanes (events.c) hold those cheaply */
	if (e->kind == QRNIC_FX_TX)
		qrnic_event_add_lane(d, QRNIC_LANE_TX, e->when, QRNIC_EVK_EFFECT, idx, e->gen);
	else if (e->kind == QRNIC_FX_CQE)
		qrnic_event_add_lane(d, QRNIC_LANE_CQE, e->when, QRNIC_EVK_EFFECT, idx, e->gen);
	else
		qrnic_event_add(d, e->when, QRNIC_EVK_EFFECT, idx, e->gen);
}

/* A frame leaves after processing on a PU and serialization at the port
 * rate, and reaches the cable's far end prop_ns later.  The effect takes
 * the frame buffer. */
void qrnic_fx_tx_buf(struct qrnic_dev *d, uint8_t *buf, size_t len)
{
	struct qrnic_effect *e;
	uint64_t done, depart;
	uint32_t idx;

	done = qrnic_tm_pu(&d->tm, d->tm_t, d->tm_cycles);
	depart = qrnic_tm_link(&d->tm, done, (uint32_t)len);
	d->tm_t = done;
	d->tm_depart = depart;
	e = fx_alloc(d, &idx);
	if (!e) {
		qrnic_tx_now_buf(d, buf, len);	/* out of memory: untimed */
		return;
	}
	e->frame = buf;
	e->kind = QRNIC_FX_TX;
	e->slot = 0;	/* PFC state (pfc.c) */
	e->len = (uint32_t)len;
	e->when = depart + d->tm.p.prop_ns;
	fx_schedule(d, e, idx);
}

void qrnic_fx_tx(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	uint8_t *buf = qrnic_frame_buf_alloc(len);

	if (!buf) {
		/* out of memory: untimed, as before the effect was made */
		d->tm_t = qrnic_tm_pu(&d->tm, d->tm_t, d->tm_cycles);
		d->tm_depart = qrnic_tm_link(&d->tm, d->tm_t, (uint32_t)len);
		qrnic_tx_now(d, frame, len);
		return;
	}
	memcpy(buf, frame, len);
	qrnic_fx_tx_buf(d, buf, len);
}

/* A CQE is formatted after the step's work and becomes visible after its
 * posted write, never before the data writes of the same step, and never
 * before an earlier CQE of the same CQ. */
int qrnic_fx_cqe(struct qrnic_dev *d, uint32_t cqn, uint64_t slot, const struct qrnic_cqe *cqe)
{
	struct qrnic_cq *cq = &d->cq[cqn];
	struct qrnic_effect *e;
	uint64_t t;
	uint32_t idx;

	/* The CQE's posted write follows the step's data writes on the link
	 * (PCIe keeps posted writes in order), so it becomes visible after
	 * them; it need not wait for them to be visible before it is sent. */
	t = d->tm_t + qrnic_tm_cycles(&d->tm, d->tm.p.cqe_cycles);
	t = qrnic_tm_dma_write(&d->tm, t, QRNIC_CQ_CQE_SIZE(cq->flags));
	t = max64(t, d->tm_wr_vis);
	t = max64(t, cq->tm_last);
	e = fx_alloc(d, &idx);
	if (!e)
		return -1;
	cq->tm_last = t;
	e->kind = QRNIC_FX_CQE;
	e->len = cqn;
	e->slot = slot;
	e->cqe = *cqe;
	e->when = t;
	fx_schedule(d, e, idx);
	return 0;
}

bool qrnic_fx_irq(struct qrnic_dev *d, unsigned vector)
{
	uint64_t now = qrnic_now(d);
	uint64_t at;
	struct qrnic_effect *e;
	uint32_t idx;

	if (!d->tm.enabled || !d->tm.p.irq_moderation_ns)
		return false;
	at = qrnic_tm_irq(&d->tm, now, vector);
	if (at <= now)
		return false;
	/* one deferred interrupt per vector is enough */
	for (uint32_t i = 1; i < d->fx_cap; i++)
		if (d->fx[i].kind == QRNIC_FX_IRQ && d->fx[i].len == vector)
			return true;
	e = fx_alloc(d, &idx);
	if (!e)
		return false;
	e->kind = QRNIC_FX_IRQ;
	e->len = vector;
	e->when = at;
	fx_schedule(d, e, idx);
	return true;
}

void qrnic_fx_fire(struct qrnic_dev *d, const struct qrnic_event *ev)
{
	struct qrnic_effect *e;
	uint64_t now = qrnic_now(d);

	if (ev->id == 0 || ev->id >= d->fx_cap)
		return;
	e = &d->fx[ev->id];
	if (e->kind == QRNIC_FX_FREE || e->gen != ev->gen)
		return;
	if (now > e->when) {
		qrnic_stat_add(d, QRNIC_STAT_LATE_EVENTS, 1);
		qrnic_stat_add(d, QRNIC_STAT_LATE_NS_TOTAL, now - e->when);
	}
	switch (e->kind) {
	case QRNIC_FX_TX: {
		uint8_t *buf = e->frame;

		if (d->port_paused)
			return;	/* held (its time has passed) until the XON */
		if (d->pfc_active && qrnic_pfc_defer(d, e, ev->id, now))
			return;	/* its priority is paused: it leaves later */

		e->frame = NULL;	/* it leaves with the frame */
		qrnic_tx_now_buf(d, buf, e->len);
		break;
	}
	case QRNIC_FX_CQE: {
		struct qrnic_cq *cq = qrnic_cq_get(d, e->len);

		if (cq)	/* the timestamp: the modelled time it became visible */
			qrnic_cq_write_now(d, cq, e->slot, &e->cqe, e->when);
		break;
	}
	case QRNIC_FX_IRQ:
		qrnic_stat_add(d, QRNIC_STAT_INTERRUPTS, 1);
		qrnic_trace(d, QRNIC_TR_IRQ, 0, 0, e->len, 0, 0);
		d->ops->irq(d->opaque, e->len);
		break;
	}
	fx_release(d, ev->id);
}

/* ---- PFC pause ---------------------------------------------------------------- */
static bool fx_tx_before(const struct qrnic_effect *x, const struct qrnic_effect *y)
{
	if (x->when != y->when)
		return x->when < y->when;
	/* the same instant: in the order they were made (generations, mod 2^32) */
	return (int32_t)(x->gen - y->gen) < 0;
}

bool qrnic_dev_port_paused(const struct qrnic_dev *d)
{
	return d->port_paused;
}

/*
 * The XON: the frames held while paused (their time has passed: their
 * events were consumed) leave back to back from now, each after its
 * serialization at the port's rate; every frame booked behind them
 * (pending, in time order) leaves at its own time or after the one before
 * it, whichever is later, so that none overtakes another.
 */
void qrnic_dev_port_pause(struct qrnic_dev *d, bool paused)
{
	uint64_t now = qrnic_now(d), last;
	uint32_t *ix, n = 0;

	if (paused || !d->port_paused) {
		d->port_paused = paused;
		return;
	}
	d->port_paused = false;
	if (!d->fx_used)
		return;
	ix = malloc(sizeof(*ix) * d->fx_used);
	if (!ix)
		return;	/* out of memory: the held frames stay held */
	for (uint32_t i = 1; i < d->fx_cap && n < d->fx_used; i++)
		if (d->fx[i].kind == QRNIC_FX_TX)
			ix[n++] = i;
	for (uint32_t k = 1; k < n; k++) {	/* insertion sort: few, mostly in order */
		uint32_t v = ix[k], j = k;

		for (; j && fx_tx_before(&d->fx[v], &d->fx[ix[j - 1]]); j--)
			ix[j] = ix[j - 1];
		ix[j] = v;
	}
	last = now + d->tm.p.prop_ns;
	for (uint32_t k = 0; k < n; k++) {
		struct qrnic_effect *e = &d->fx[ix[k]];
		uint64_t bits = (uint64_t)(e->len + d->tm.p.link_overhead) * 8;
		uint64_t ser = (bits * 1000 + d->tm.p.link_mbps - 1) / d->tm.p.link_mbps;
		uint64_t t = last + ser;

		if (e->when >= t && e->when > now) {
			last = e->when;	/* its own time is later: it and those after are unmoved */
			continue;
		}
		if (t < now)
			t = now;
		e->when = t;
		e->gen = ++d->fx_gen;	/* its old event, if any, is stale */
		qrnic_event_add(d, t, QRNIC_EVK_EFFECT, ix[k], e->gen);
		last = t;
	}
	if (d->tm.link_free < last - d->tm.p.prop_ns)
		d->tm.link_free = last - d->tm.p.prop_ns;
	free(ix);
}
