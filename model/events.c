/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: timed events (retransmission and RNR timers, timed
 * effects, fault injection) in a binary min-heap with FIFO lanes beside it,
 * the host timer that wakes the device for the first of them, and
 * qrnic_dev_timer_fire() that runs the due ones.
 */
#include <stdlib.h>

#include "qrnic_internal.h"

/* ---- timed events: a binary min-heap ---------------------------------------- */
static bool ev_before(const struct qrnic_event *a, const struct qrnic_event *b)
{
	return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

static struct qrnic_event event_pop(struct qrnic_dev *d);

/* event_stale() of the other kinds (apart: the timed effects, a frame's
 * departure or a CQE, are the per-packet case, tested inline). */
static __attribute__((noinline)) bool event_stale_other(struct qrnic_dev *d,
							const struct qrnic_event *ev)
{
	struct qrnic_qp *qp;

	if (ev->kind == QRNIC_EVK_CC)
		return qrnic_cc_event_stale(d, ev);
	if (ev->kind != QRNIC_EVK_RETRY && ev->kind != QRNIC_EVK_RNR)
		return false;
	qp = qrnic_qp_get(d, ev->id);
	return !qp || !qrnic_req_event_current(qp, ev);
}

/* An event whose QP is gone or whose timer was re-armed or stopped since. */
static inline bool event_stale(struct qrnic_dev *d, const struct qrnic_event *ev)
{
	if (ev->kind == QRNIC_EVK_EFFECT)
		return ev->id >= d->fx_cap || d->fx[ev->id].gen != ev->gen;
	return event_stale_other(d, ev);
}

static struct qrnic_event *lane_head(struct qrnic_evlane *l)
{
	return &l->ring[l->head & (l->cap - 1)];
}

/*
 * Where the event due first is, remembered in d->ev_first between the
 * changes that can move it: EVF_UNKNOWN (0, also a new device's), EVF_NONE
 * (nothing pending), EVF_HEAP (the heap top) or EVF_LANE + i (lane i's
 * head).  Adding an event keeps it known (the new event is due first or
 * not: one comparison); taking, purging, restoring and resetting forget
 * it.  The per-packet path asks for the first event several times between
 * two changes (the timer update after every event added, the run loop),
 * and a full look compares the heap top with every lane head.
 */
enum { EVF_UNKNOWN, EVF_NONE, EVF_HEAP, EVF_LANE };

static struct qrnic_event *evf_event(struct qrnic_dev *d, unsigned c)
{
	return c == EVF_HEAP ? &d->events[0] : lane_head(&d->lanes[c - EVF_LANE]);
}

/* A new event from source c (EVF_HEAP or EVF_LANE + i): is it due first
 * now?  (An event appended to a lane is its head if it is due before
 * everything: the lane's events are due no later than it.) */
static void evf_added(struct qrnic_dev *d, const struct qrnic_event *ev, unsigned c)
{
	unsigned f = d->ev_first;

	if (f == EVF_NONE || (f != EVF_UNKNOWN && ev_before(ev, evf_event(d, f))))
		d->ev_first = (uint8_t)c;
}

/* The event due first: the heap top or a lane head (*from: its lane, or
 * -1 for the heap); NULL if none is pending. */
static struct qrnic_event *event_first(struct qrnic_dev *d, int *from)
{
	struct qrnic_event *best;
	unsigned c = d->ev_first;

	if (c != EVF_UNKNOWN) {
		*from = c >= EVF_LANE ? (int)(c - EVF_LANE) : -1;
		return c == EVF_NONE ? NULL : evf_event(d, c);
	}
	best = d->nevents ? &d->events[0] : NULL;
	*from = -1;
	for (int i = 0; i < QRNIC_NUM_LANES; i++) {
		struct qrnic_evlane *l = &d->lanes[i];

		if (l->count && (!best || ev_before(lane_head(l), best))) {
			best = lane_head(l);
			*from = i;
		}
	}
	d->ev_first = !best ? EVF_NONE : *from < 0 ? EVF_HEAP : (uint8_t)(EVF_LANE + *from);
	return best;
}

/* Remove and return the event event_first() found. */
static struct qrnic_event event_take(struct qrnic_dev *d, int from)
{
	struct qrnic_evlane *l;
	struct qrnic_event ev;

	d->ev_first = EVF_UNKNOWN;
	if (from < 0)
		return event_pop(d);
	l = &d->lanes[from];
	ev = *lane_head(l);
	l->head++;
	l->count--;
	return ev;
}

/* timer_update() with the event due first already found (event_first()). */
static void timer_update_from(struct qrnic_dev *d, struct qrnic_event *first, int from)
{
	uint64_t next;

	/* Drop cancelled events at the top so the host timer is not armed
	 * for nothing (events are cancelled lazily, by generation). */
	while (first && event_stale(d, first)) {
		event_take(d, from);
		first = event_first(d, &from);
	}
	next = first ? first->when : UINT64_MAX;

	if (next != d->timer_deadline) {
		d->timer_deadline = next;
		d->ops->timer_arm(d->opaque, next);
	}
}

void qrnic_timer_update(struct qrnic_dev *d)
{
	int from;
	struct qrnic_event *first = event_first(d, &from);

	timer_update_from(d, first, from);
}

static void event_sift_down(struct qrnic_dev *d, uint32_t i)
{
	struct qrnic_event ev = d->events[i];

	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		const struct qrnic_event *best = &ev;

		if (l < d->nevents && ev_before(&d->events[l], best)) {
			m = l;
			best = &d->events[l];
		}
		if (r < d->nevents && ev_before(&d->events[r], best))
			m = r;
		if (m == i)
			break;
		d->events[i] = d->events[m];
		i = m;
	}
	d->events[i] = ev;
}

/*
 * Cancelled events (a re-armed retransmission timer, a released effect)
 * stay in the heap until they reach the top: every ACK re-arms the timer
 * of its QP, so with a long ACK timeout the heap would grow by one event
 * per packet for the whole timeout.  When the heap has doubled since the
 * last purge, drop the stale events and rebuild it.  A stale event never
 * fires and staleness is permanent (generations only grow), and the pop
 * order is the strict (when, seq) order, so this changes nothing but the
 * heap's size.
 */
static void event_purge(struct qrnic_dev *d)
{
	uint32_t n = 0;

	d->ev_first = EVF_UNKNOWN;
	for (uint32_t i = 0; i < d->nevents; i++)
		if (!event_stale(d, &d->events[i]))
			d->events[n++] = d->events[i];
	d->nevents = n;
	for (uint32_t i = n / 2; i-- > 0;)
		event_sift_down(d, i);
	d->events_compact_at = n * 2 > 64 ? n * 2 : 64;
}

void qrnic_event_add(struct qrnic_dev *d, uint64_t when, uint32_t kind, uint32_t id, uint32_t gen)
{
	struct qrnic_event ev = { .when = when, .kind = kind, .id = id, .gen = gen,
				  .seq = d->event_seq++ };
	uint32_t i;

	if (d->nevents >= d->events_compact_at)
		event_purge(d);
	if (d->nevents == d->events_cap) {
		uint32_t cap = d->events_cap ? d->events_cap * 2 : 64;
		struct qrnic_event *n = realloc(d->events, cap * sizeof(*n));

		if (!n)
			return;	/* the QP's retry logic re-arms on the next event */
		d->events = n;
		d->events_cap = cap;
	}
	i = d->nevents++;
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (!ev_before(&ev, &d->events[parent]))
			break;
		d->events[i] = d->events[parent];
		i = parent;
	}
	d->events[i] = ev;
	evf_added(d, &ev, EVF_HEAP);
	if (!d->in_run)
		qrnic_timer_update(d);
}

/*
 * Like the heap (event_purge), a lane keeps cancelled events until they
 * reach its head: every ACK re-arms its QP's retransmission timer, so the
 * retry lane would grow by one event per packet for a whole ACK timeout.
 * When a lane has doubled since it was last compacted, its cancelled
 * events are dropped; the others keep their order.  Staleness is
 * permanent, so this changes nothing but the lane's size.
 */
static void lane_purge(struct qrnic_dev *d, struct qrnic_evlane *l)
{
	uint32_t n = 0;

	d->ev_first = EVF_UNKNOWN;
	for (uint32_t i = 0; i < l->count; i++) {
		struct qrnic_event *ev = &l->ring[(l->head + i) & (l->cap - 1)];

		if (!event_stale(d, ev))
			l->ring[(l->head + n++) & (l->cap - 1)] = *ev;
	}
	l->count = n;
	l->compact_at = n * 2 > 64 ? n * 2 : 64;
}

/* Append an event to lane l, which has room and stays sorted with it. */
static inline void lane_append(struct qrnic_dev *d, struct qrnic_evlane *l, unsigned lane,
			       uint64_t when, uint32_t kind, uint32_t id, uint32_t gen)
{
	struct qrnic_event *ev = &l->ring[(l->head + l->count) & (l->cap - 1)];

	*ev = (struct qrnic_event){
		.when = when, .kind = kind, .id = id, .gen = gen, .seq = d->event_seq++ };
	l->count++;
	evf_added(d, ev, EVF_LANE + lane);
	if (!d->in_run)
		qrnic_timer_update(d);
}

/* qrnic_event_add_lane() when the event would unsort the lane or the lane
 * is to be compacted or grown (apart, so that the common append saves no
 * registers). */
static __attribute__((noinline)) void lane_add_slow(struct qrnic_dev *d, enum qrnic_event_lane lane,
						    uint64_t when, uint32_t kind, uint32_t id,
						    uint32_t gen)
{
	struct qrnic_evlane *l = &d->lanes[lane];

	if (l->count && when < l->ring[(l->head + l->count - 1) & (l->cap - 1)].when) {
		qrnic_event_add(d, when, kind, id, gen);	/* would unsort the lane */
		return;
	}
	if (l->count >= l->compact_at)
		lane_purge(d, l);
	if (l->count == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 64;
		struct qrnic_event *n = malloc(cap * sizeof(*n));

		if (!n) {
			qrnic_event_add(d, when, kind, id, gen);
			return;
		}
		for (uint32_t i = 0; i < l->count; i++)
			n[i] = l->ring[(l->head + i) & (l->cap - 1)];
		free(l->ring);
		l->ring = n;
		l->cap = cap;
		l->head = 0;
	}
	lane_append(d, l, lane, when, kind, id, gen);
}

void qrnic_event_add_lane(struct qrnic_dev *d, enum qrnic_event_lane lane, uint64_t when,
			  uint32_t kind, uint32_t id, uint32_t gen)
{
	struct qrnic_evlane *l = &d->lanes[lane];

	if ((l->count && when < l->ring[(l->head + l->count - 1) & (l->cap - 1)].when) ||
	    l->count >= l->compact_at || l->count == l->cap)
		lane_add_slow(d, lane, when, kind, id, gen);
	else
		lane_append(d, l, lane, when, kind, id, gen);
}

static struct qrnic_event event_pop(struct qrnic_dev *d)
{
	struct qrnic_event top = d->events[0];

	if (--d->nevents) {
		d->events[0] = d->events[d->nevents];
		event_sift_down(d, 0);
	}
	return top;
}

void qrnic_dev_timer_fire(struct qrnic_dev *d)
{
	uint64_t now = qrnic_now(d);
	uint32_t n = 0;
	struct qrnic_event *first;
	int from;

	d->timer_deadline = UINT64_MAX;
	d->in_run = true;
	for (;;) {
		struct qrnic_event ev;
		bool stopped;

		first = event_first(d, &from);
		if (!first || first->when > now || n++ >= 4096)
			break;
		ev = event_take(d, from);
		stopped = !(d->ctrl & QRNIC_CTRL_ENABLE) || (d->status & QRNIC_STATUS_FATAL);

		/* A disabled or fatal device keeps only fault-injection events
		 * (e.g. a timed link-up); its transport timers and timed
		 * effects are dropped. */
		if (stopped && ev.kind != QRNIC_EVK_FAULT)
			continue;
		if (ev.kind == QRNIC_EVK_RETRY || ev.kind == QRNIC_EVK_RNR)
			qrnic_qp_event(d, &ev);
		else if (ev.kind == QRNIC_EVK_EFFECT)
			qrnic_fx_fire(d, &ev);
		else if (ev.kind == QRNIC_EVK_FAULT)
			qrnic_fault_event(d, &ev);
		else if (ev.kind == QRNIC_EVK_CQ_MOD)
			qrnic_cq_mod_timer(d, &ev);
		else if (ev.kind == QRNIC_EVK_CC)
			qrnic_cc_event(d, &ev);
		else if (ev.kind == QRNIC_EVK_RXBUF)
			qrnic_rxb_event(d, &ev);
	}
	d->in_run = false;
	timer_update_from(d, first, from);	/* first: what ended the loop, still first */
	if (qrnic_dev_busy(d))
		d->ops->schedule(d->opaque);
}

/* A saved event goes back into the heap with its sequence number: the
 * order of events is (when, seq) whether a lane or the heap held them. */
int qrnic_event_restore(struct qrnic_dev *d, const struct qrnic_event *ev)
{
	uint32_t i;

	d->ev_first = EVF_UNKNOWN;
	if (d->nevents == d->events_cap) {
		uint32_t cap = d->events_cap ? d->events_cap * 2 : 64;
		struct qrnic_event *n = realloc(d->events, cap * sizeof(*n));

		if (!n)
			return -1;
		d->events = n;
		d->events_cap = cap;
	}
	i = d->nevents++;
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (!ev_before(ev, &d->events[parent]))
			break;
		d->events[i] = d->events[parent];
		i = parent;
	}
	d->events[i] = *ev;
	if (d->nevents * 2 > d->events_compact_at)
		d->events_compact_at = d->nevents * 2;
	return 0;
}

/* Device reset: every pending event is dropped (the rings stay allocated). */
void qrnic_events_reset(struct qrnic_dev *d)
{
	d->nevents = 0;
	d->ev_first = EVF_UNKNOWN;
	d->events_compact_at = 64;
	for (int i = 0; i < QRNIC_NUM_LANES; i++) {
		d->lanes[i].head = d->lanes[i].count = 0;
		d->lanes[i].compact_at = 64;
	}
}

void qrnic_events_free(struct qrnic_dev *d)
{
	free(d->events);
	for (int i = 0; i < QRNIC_NUM_LANES; i++)
		free(d->lanes[i].ring);
}
