/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: configuration, registers, doorbells, the receive
 * queue, the work loop, timed events, and the choke points through which
 * every DMA and every frame passes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "qrnic_internal.h"

/* ---- configuration ------------------------------------------------------- */
void qrnic_config_defaults(struct qrnic_config *cfg)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

	memset(cfg, 0, sizeof(*cfg));
	memcpy(cfg->mac, mac, 6);
	cfg->eth_mtu = 4200;
	cfg->speed_mbps = 100000;
	cfg->max_qp = 1024;
	cfg->max_qp_wr = 8192;
	cfg->max_cq = 1024;
	cfg->max_cqe = 32768;
	cfg->max_mr = 4096;
	cfg->max_pd = 1024;
	cfg->max_ah = 1024;
	cfg->max_eq = 64;
	cfg->max_uctx = 64;
	cfg->max_srq = 1024;
	cfg->max_mtt = 1u << 20;	/* 4 GiB of 4 KiB pages, 8 MiB of device memory */
	cfg->max_mr_size = 1ull << 32;
	cfg->num_vectors = 8;
	cfg->gid_tbl_len = 16;
	cfg->max_rd_atomic = 16;
	cfg->loss_window = true;
}

#define CHECK_RANGE(field, lo, hi)						\
	do {									\
		if ((uint64_t)cfg->field < (uint64_t)(lo) ||			\
		    (uint64_t)cfg->field > (uint64_t)(hi)) {			\
			snprintf(err, errlen, #field " must be in %llu..%llu (got %llu)", \
				 (unsigned long long)(lo), (unsigned long long)(hi), \
				 (unsigned long long)cfg->field);		\
			return -1;						\
		}								\
	} while (0)

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int qrnic_config_check(const struct qrnic_config *cfg, char *err, size_t errlen)
{
	CHECK_RANGE(eth_mtu, 576, 9000);
	CHECK_RANGE(speed_mbps, 1, 1000000);
	CHECK_RANGE(max_qp, 4, 65536);
	CHECK_RANGE(max_qp_wr, 2, 1u << QRNIC_MAX_QUEUE_LOG);
	CHECK_RANGE(max_cq, 2, 65536);
	CHECK_RANGE(max_cqe, 2, 1u << QRNIC_MAX_QUEUE_LOG);
	CHECK_RANGE(max_mr, 2, 1u << 24);
	CHECK_RANGE(max_pd, 2, 1u << 24);
	CHECK_RANGE(max_ah, 2, 1u << 24);
	CHECK_RANGE(max_eq, 2, 2048);
	CHECK_RANGE(max_uctx, 1, 4096);
	CHECK_RANGE(max_srq, 2, 1u << 24);
	CHECK_RANGE(max_mtt, 1, 1u << 28);
	CHECK_RANGE(max_mr_size, 4096, 1ull << 40);
	CHECK_RANGE(num_vectors, 1, 2048);
	CHECK_RANGE(gid_tbl_len, 1, 256);
	CHECK_RANGE(max_rd_atomic, 1, QRNIC_MAX_RD_ATOMIC);
	if (!is_pow2(cfg->max_qp_wr) || !is_pow2(cfg->max_cqe)) {
		snprintf(err, errlen, "max_qp_wr and max_cqe must be powers of two");
		return -1;
	}
	if (cfg->mac[0] & 1) {
		snprintf(err, errlen, "mac must be a unicast address");
		return -1;
	}
	return 0;
}

/* ---- logging, tracing, stats --------------------------------------------- */
static void vlog(struct qrnic_dev *d, enum qrnic_log_level lvl, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void vlog(struct qrnic_dev *d, enum qrnic_log_level lvl, const char *fmt, va_list ap)
{
	char buf[256];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (d->ops->log)
		d->ops->log(d->opaque, lvl, buf);
}

void qrnic_guest_error(struct qrnic_dev *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(d, QRNIC_LOG_GUEST_ERROR, fmt, ap);
	va_end(ap);
}

void qrnic_unimp(struct qrnic_dev *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(d, QRNIC_LOG_UNIMP, fmt, ap);
	va_end(ap);
}

void qrnic_trace_at_emit(struct qrnic_dev *d, uint64_t t, uint32_t type, uint32_t qpn,
			 uint32_t psn, uint32_t a, uint32_t b, uint64_t addr)
{
	struct qrnic_trace_ev ev;

	if (!d->ops->trace || d->trace_off)
		return;
	ev.t_ns = t;
	ev.type = type;
	ev.qpn = qpn;
	ev.psn = psn;
	ev.a = a;
	ev.b = b;
	ev.addr = addr;
	d->ops->trace(d->opaque, &ev);
}

/* Stamped with the modelled time of the stage when a timed step runs. */
void qrnic_trace_emit(struct qrnic_dev *d, uint32_t type, uint32_t qpn, uint32_t psn,
		      uint32_t a, uint32_t b, uint64_t addr)
{
	if (!d->ops->trace || d->trace_off)
		return;
	qrnic_trace_at(d, qrnic_timed(d) ? d->tm_t : qrnic_now(d), type, qpn, psn, a, b, addr);
}

const char *qrnic_trace_name(uint32_t type)
{
	static const char *const names[QRNIC_TR_COUNT] = {
		[QRNIC_TR_DOORBELL] = "doorbell", [QRNIC_TR_WQE_FETCH] = "wqe_fetch",
		[QRNIC_TR_TRANSLATE] = "translate", [QRNIC_TR_TX] = "tx",
		[QRNIC_TR_RX] = "rx", [QRNIC_TR_DMA_READ] = "dma_read",
		[QRNIC_TR_DMA_WRITE] = "dma_write", [QRNIC_TR_ACK] = "ack",
		[QRNIC_TR_NAK] = "nak", [QRNIC_TR_RETRANSMIT] = "retransmit",
		[QRNIC_TR_CQE] = "cqe", [QRNIC_TR_EQE] = "eqe", [QRNIC_TR_IRQ] = "irq",
		[QRNIC_TR_DROP] = "drop", [QRNIC_TR_QP_STATE] = "qp_state",
		[QRNIC_TR_ADMIN] = "admin",
		[QRNIC_TR_WINDOW] = "window",
	};
	return type < QRNIC_TR_COUNT && names[type] ? names[type] : "unknown";
}

const char *qrnic_stat_name(enum qrnic_stat s)
{
#define QRNIC_STAT_STR(name, str) str,
	static const char *const names[] = { QRNIC_STATS(QRNIC_STAT_STR) };
#undef QRNIC_STAT_STR
	return (unsigned)s < QRNIC_STAT_COUNT ? names[s] : "unknown";
}

uint64_t qrnic_dev_stat(const struct qrnic_dev *d, enum qrnic_stat s)
{
	return (unsigned)s < QRNIC_STAT_COUNT ? d->stats[s] : 0;
}

/* Largest IB MTU whose RoCEv2 packets fit the port's Ethernet MTU. */
uint8_t qrnic_port_ib_mtu(const struct qrnic_dev *d)
{
	uint32_t room = d->cfg.eth_mtu - (QRNIC_IPV6_HLEN + QRNIC_UDP_HLEN + QRNIC_BTH_LEN +
					  QRNIC_ATOMICETH_LEN + QRNIC_ICRC_LEN);
	uint8_t m = QRNIC_MTU_4096;

	while (m > QRNIC_MTU_256 && qrnic_mtu_bytes(m) > room)
		m--;
	return m;
}

void qrnic_dev_set_trace(struct qrnic_dev *d, bool on)
{
	d->trace_off = !on;
}

void qrnic_dev_set_trusted_wire(struct qrnic_dev *d, bool on)
{
	d->trusted_wire = on;
}

void qrnic_dev_set_clock(struct qrnic_dev *d, const uint64_t *now)
{
	d->clock = now;
}

/* ---- choke points ---------------------------------------------------------- */
/* A payload read into the frame being built, by reference if it continues
 * the reference so far (contiguous in the frame and in host memory).
 * Returns whether it was taken; if not, what the reference held so far is
 * copied into the frame and the rest of the payload is read as usual. */
static bool dma_read_ref(struct qrnic_dev *d, uint64_t addr, void *buf, size_t len)
{
	const uint8_t *src;

	if ((uint8_t *)buf != d->txref.base + d->txref.len || addr + len < addr)
		return false;
	src = d->ops->dma_map(d->opaque, addr, len);
	if (src && (!d->txref.len || src == d->txref.src + d->txref.len)) {
		if (!d->txref.len)
			d->txref.src = src;
		d->txref.len += (uint32_t)len;
		return true;
	}
	if (d->txref.len)	/* the frame holds bytes, not a reference */
		memcpy(d->txref.base, d->txref.src, d->txref.len);
	d->txref.on = false;
	return false;
}

int qrnic_dma_read(struct qrnic_dev *d, uint64_t addr, void *buf, size_t len)
{
	if (len == 0)
		return 0;
	qrnic_trace(d, QRNIC_TR_DMA_READ, 0, 0, (uint32_t)len, 0, addr);
	if (d->txref.on && dma_read_ref(d, addr, buf, len))
		goto timed;
	if (addr + len < addr || (d->fault && qrnic_fault_dma(d, false, addr, len)) ||
	    d->ops->dma_read(d->opaque, addr, buf, len) != 0) {
		memset(buf, 0, len);
		qrnic_stat_add(d, QRNIC_STAT_DMA_ERRORS, 1);
		return -1;
	}
timed:
	if (qrnic_timed(d))	/* the step waits for the data */
		d->tm_t = qrnic_tm_dma_read(&d->tm, d->tm_t, (uint32_t)len);
	return 0;
}

int qrnic_dma_write(struct qrnic_dev *d, uint64_t addr, const void *buf, size_t len)
{
	if (len == 0)
		return 0;
	qrnic_trace(d, QRNIC_TR_DMA_WRITE, 0, 0, (uint32_t)len, 0, addr);
	if (addr + len < addr || (d->fault && qrnic_fault_dma(d, true, addr, len)) ||
	    d->ops->dma_write(d->opaque, addr, buf, len) != 0) {
		qrnic_stat_add(d, QRNIC_STAT_DMA_ERRORS, 1);
		return -1;
	}
	if (qrnic_timed(d)) {	/* posted: the step goes on, later CQEs wait */
		uint64_t vis = qrnic_tm_dma_write(&d->tm, d->tm_t, (uint32_t)len);

		if (vis > d->tm_wr_vis)
			d->tm_wr_vis = vis;
	}
	return 0;
}

void qrnic_tx(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	if (qrnic_timed(d))
		qrnic_fx_tx(d, frame, len);
	else
		qrnic_tx_now(d, frame, len);
}

void qrnic_tx_buf(struct qrnic_dev *d, uint8_t *buf, size_t len)
{
	if (qrnic_timed(d))
		qrnic_fx_tx_buf(d, buf, len);
	else
		qrnic_tx_now_buf(d, buf, len);
}

/* ---- local loopback ------------------------------------------------------- */
/* A frame for the port's own MAC address does not go on the wire: the
 * port receives it itself, as every RNIC and rxe do (two QPs of one
 * device talking, rdma_cm to a local address).  It leaves the transmit
 * side where a frame would leave the port -- after the timing model's
 * port and the transmit fault rules -- and enters the receive side
 * where a frame from the wire would (rx_admit: link, queue, receive fault
 * rules), so both directions' costs and fault points apply to it. */
static bool tx_loops_back(const struct qrnic_dev *d, const uint8_t *dmac)
{
	return !memcmp(dmac, d->cfg.mac, 6);
}

static void loopback_count(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	qrnic_stat_add(d, QRNIC_STAT_TX_PACKETS, 1);
	qrnic_stat_add(d, QRNIC_STAT_TX_BYTES, len);
	qrnic_stat_add(d, QRNIC_STAT_LOOPBACK_FRAMES, 1);
	if (d->ops->loopback)
		d->ops->loopback(d->opaque, frame, len);
}

/* A multicast frame for a group that has members on this device. */
static bool tx_mcast_member(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	struct qrnic_pkt p;

	return qrnic_wire_parse_icrc(frame, len, &p, false) == QRNIC_WIRE_OK &&
	       qrnic_gid_is_mcast(p.dgid) && qrnic_mcg_find(d, p.dgid);
}

void qrnic_tx_now_buf(struct qrnic_dev *d, uint8_t *buf, size_t len)
{
	const struct qrnic_pkt *desc;

	if (!d->ops->tx_frame_buf || !d->link_up || d->fault || d->nmcg) {
		qrnic_frame_buf_fill(buf);
		qrnic_tx_now(d, buf, len);
		qrnic_frame_buf_free(buf);
		return;
	}
	desc = qrnic_frame_buf_pkt(buf);
	if (tx_loops_back(d, desc ? desc->dmac : buf)) {
		if (d->ops->loopback)
			qrnic_frame_buf_fill(buf);
		loopback_count(d, buf, len);
		qrnic_dev_rx_frame_buf(d, buf, len);
		return;
	}
	qrnic_stat_add(d, QRNIC_STAT_TX_PACKETS, 1);
	qrnic_stat_add(d, QRNIC_STAT_TX_BYTES, len);
	d->ops->tx_frame_buf(d->opaque, buf, len);
}

void qrnic_tx_now(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	if (!d->link_up) {
		qrnic_trace(d, QRNIC_TR_DROP, 0, 0, QRNIC_STAT_TX_PACKETS, (uint32_t)len, 0);
		return;
	}
	if (d->fault && qrnic_fault_tx(d, frame, len))
		return;		/* fault injection dropped, held or sent it */
	if (len >= 6 && tx_loops_back(d, frame)) {
		loopback_count(d, frame, len);
		qrnic_dev_rx_frame(d, frame, len);
		return;
	}
	if (len >= 6 && (frame[0] & 1) && d->nmcg && tx_mcast_member(d, frame, len)) {
		/* multicast loopback: our own members get a copy, and the
		 * frame goes on the wire for the others (captured there) */
		qrnic_stat_add(d, QRNIC_STAT_LOOPBACK_FRAMES, 1);
		qrnic_dev_rx_frame(d, frame, len);
	}
	qrnic_stat_add(d, QRNIC_STAT_TX_PACKETS, 1);
	qrnic_stat_add(d, QRNIC_STAT_TX_BYTES, len);
	d->ops->tx_frame(d->opaque, frame, len);
}

void qrnic_irq(struct qrnic_dev *d, unsigned vector)
{
	if (vector >= d->cfg.num_vectors)
		return;
	if (qrnic_fx_irq(d, vector))
		return;		/* moderated: raised later */
	qrnic_stat_add(d, QRNIC_STAT_INTERRUPTS, 1);
	qrnic_trace(d, QRNIC_TR_IRQ, 0, 0, vector, 0, 0);
	d->ops->irq(d->opaque, vector);
}

void qrnic_schedule(struct qrnic_dev *d)
{
	if (!d->in_run)
		d->ops->schedule(d->opaque);
}

void qrnic_fatal(struct qrnic_dev *d, uint32_t code)
{
	if (d->status & QRNIC_STATUS_FATAL)
		return;
	d->status |= QRNIC_STATUS_FATAL;
	d->fatal_code = code;
	qrnic_guest_error(d, "qrnic: device fatal error %u, reset required", code);
	qrnic_async_event(d, QRNIC_EV_DEVICE_FATAL, 0, code);
}

/* ---- lookups ---------------------------------------------------------------- */
struct qrnic_qp *qrnic_qp_get(struct qrnic_dev *d, uint32_t qpn)
{
	if (qpn == 0 || qpn >= d->cfg.max_qp || !d->qp[qpn].valid)
		return NULL;
	return &d->qp[qpn];
}

struct qrnic_cq *qrnic_cq_get(struct qrnic_dev *d, uint32_t cqn)
{
	if (cqn == 0 || cqn >= d->cfg.max_cq || !d->cq[cqn].valid)
		return NULL;
	return &d->cq[cqn];
}

struct qrnic_ah *qrnic_ah_get(struct qrnic_dev *d, uint32_t ahn)
{
	if (ahn == 0 || ahn >= d->cfg.max_ah || !d->ah[ahn].valid)
		return NULL;
	return &d->ah[ahn];
}

/* ---- timed events: a binary min-heap ---------------------------------------- */
static bool ev_before(const struct qrnic_event *a, const struct qrnic_event *b)
{
	return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

static struct qrnic_event event_pop(struct qrnic_dev *d);

/* An event whose QP is gone or whose timer was re-armed or stopped since. */
static bool event_stale(struct qrnic_dev *d, const struct qrnic_event *ev)
{
	struct qrnic_qp *qp;

	if (ev->kind == QRNIC_EVK_EFFECT)
		return ev->id >= d->fx_cap || d->fx[ev->id].gen != ev->gen;
	if (ev->kind != QRNIC_EVK_RETRY && ev->kind != QRNIC_EVK_RNR)
		return false;
	qp = qrnic_qp_get(d, ev->id);
	return !qp || ev->gen != qp->req.timer_gen;
}

static struct qrnic_event *lane_head(struct qrnic_evlane *l)
{
	return &l->ring[l->head & (l->cap - 1)];
}

/* The event due first: the heap top or a lane head (*from: its lane, or
 * -1 for the heap); NULL if none is pending. */
static struct qrnic_event *event_first(struct qrnic_dev *d, int *from)
{
	struct qrnic_event *best = d->nevents ? &d->events[0] : NULL;

	*from = -1;
	for (int i = 0; i < QRNIC_NUM_LANES; i++) {
		struct qrnic_evlane *l = &d->lanes[i];

		if (l->count && (!best || ev_before(lane_head(l), best))) {
			best = lane_head(l);
			*from = i;
		}
	}
	return best;
}

/* Remove and return the event event_first() found. */
static struct qrnic_event event_take(struct qrnic_dev *d, int from)
{
	struct qrnic_evlane *l;
	struct qrnic_event ev;

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

static void timer_update(struct qrnic_dev *d)
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
	if (!d->in_run)
		timer_update(d);
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

	for (uint32_t i = 0; i < l->count; i++) {
		struct qrnic_event *ev = &l->ring[(l->head + i) & (l->cap - 1)];

		if (!event_stale(d, ev))
			l->ring[(l->head + n++) & (l->cap - 1)] = *ev;
	}
	l->count = n;
	l->compact_at = n * 2 > 64 ? n * 2 : 64;
}

void qrnic_event_add_lane(struct qrnic_dev *d, enum qrnic_event_lane lane, uint64_t when,
			  uint32_t kind, uint32_t id, uint32_t gen)
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
	l->ring[(l->head + l->count) & (l->cap - 1)] = (struct qrnic_event){
		.when = when, .kind = kind, .id = id, .gen = gen, .seq = d->event_seq++ };
	l->count++;
	if (!d->in_run)
		timer_update(d);
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
	}
	d->in_run = false;
	timer_update_from(d, first, from);	/* first: what ended the loop, still first */
	if (qrnic_dev_busy(d))
		d->ops->schedule(d->opaque);
}

/* ---- work list ------------------------------------------------------------- */
/* The work list holds each QP at most once (qrnic_qlist_push refuses a
 * second insert), whoever queues it: a doorbell, a received packet, or a
 * service step that kicks its own QP while it is being serviced. */
void qrnic_qp_kick(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	qrnic_qlist_push(d, &d->work, QRNIC_QL_WORK, qp);
	qrnic_schedule(d);
}

void qrnic_work_remove(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	qrnic_qlist_remove(d, &d->work, QRNIC_QL_WORK, qp);
}

static int check_list(struct qrnic_dev *d, struct qrnic_qlist *l, size_t off, const char *name,
		      char *why, size_t len)
{
	uint32_t n = 0, prev = 0, on = 0;

	for (uint32_t qpn = l->head; qpn; qpn = qrnic_ql(&d->qp[qpn], off)->next) {
		struct qrnic_qlink *k;

		if (qpn >= d->cfg.max_qp || ++n > d->cfg.max_qp) {
			snprintf(why, len, "%s list: QPN %u out of range or a cycle", name, qpn);
			return -1;
		}
		k = qrnic_ql(&d->qp[qpn], off);
		if (!k->on || k->prev != prev || d->qp[qpn].qpn != qpn) {
			snprintf(why, len, "%s list: QP %u links disagree (on %d prev %u, expected %u)",
				 name, qpn, k->on, k->prev, prev);
			return -1;
		}
		prev = qpn;
	}
	for (uint32_t i = 0; i < d->cfg.max_qp; i++)
		on += qrnic_ql(&d->qp[i], off)->on;
	if (prev != l->tail || n != l->len || on != n) {
		snprintf(why, len, "%s list: %u linked, length %u, %u QPs marked on it, tail %u/%u",
			 name, n, l->len, on, l->tail, prev);
		return -1;
	}
	return 0;
}

/* Tests and fuzzers: the lists checked after each service step (costs a
 * walk of the QP table each time). */
static void selfcheck(struct qrnic_dev *d, const struct qrnic_qp *qp)
{
	char why[160];

	if (qrnic_dev_check_lists(d, why, sizeof(why)) == 0)
		return;
	if (!d->selfcheck_failures++ && d->ops->log) {
		char msg[256];

		snprintf(msg, sizeof(msg), "qrnic: model self-check failed after servicing QP %u: %s",
			 qp->qpn, why);
		d->ops->log(d->opaque, QRNIC_LOG_INFO, msg);
	}
}

void qrnic_dev_set_selfcheck(struct qrnic_dev *d, bool on)
{
	d->selfcheck = on;
}

uint32_t qrnic_dev_selfcheck_failures(const struct qrnic_dev *d)
{
	return d->selfcheck_failures;
}

int qrnic_dev_check_lists(struct qrnic_dev *d, char *why, size_t len)
{
	if (check_list(d, &d->work, QRNIC_QL_WORK, "work", why, len) ||
	    check_list(d, &d->flushq, QRNIC_QL_FLUSH, "flush", why, len))
		return -1;
	for (uint32_t i = 0; i < d->cfg.max_qp; i++) {
		if (d->qp[i].work.on && !d->qp[i].valid) {
			snprintf(why, len, "work list: QP %u is not valid", i);
			return -1;
		}
	}
	return 0;
}

/* ---- receive path ------------------------------------------------------------ */
/* Whether a frame arriving now is queued: 1 yes, 0 the fault engine took
 * it, -1 dropped. */
static int rx_admit(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	if (!d->link_up || !(d->ctrl & QRNIC_CTRL_ENABLE) || (d->status & QRNIC_STATUS_FATAL)) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		return -1;
	}
	if (d->rxq_tail - d->rxq_head >= QRNIC_RXQ_DEPTH) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		qrnic_trace(d, QRNIC_TR_DROP, 0, 0, QRNIC_STAT_RX_DROP_OTHER, (uint32_t)len, 0);
		return -1;
	}
	if (len > QRNIC_RX_FRAME_MAX) {
		qrnic_stat_add(d, QRNIC_STAT_ETH_RX_DROPS, 1);
		return -1;
	}
	if (d->fault && qrnic_fault_rx(d, frame, len))
		return 0;	/* fault injection dropped, held or queued it */
	return 1;
}

static void rx_enqueue(struct qrnic_dev *d, uint8_t *buf, size_t len)
{
	struct qrnic_frame *f = &d->rxq[d->rxq_tail % QRNIC_RXQ_DEPTH];

	f->data = buf;
	f->len = (uint32_t)len;
	d->rxq_tail++;
	qrnic_schedule(d);
}

bool qrnic_dev_rx_full(const struct qrnic_dev *d)
{
	/* a device that will not empty its queue (disabled, fatal) drops */
	return d->rxq_tail - d->rxq_head >= QRNIC_RXQ_DEPTH && (d->ctrl & QRNIC_CTRL_ENABLE) &&
	       !(d->status & QRNIC_STATUS_FATAL);
}

bool qrnic_dev_rx_frame(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	int rc = rx_admit(d, frame, len);
	uint8_t *buf;

	if (rc <= 0)
		return rc == 0;
	buf = qrnic_frame_buf_alloc(len);
	if (!buf) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		return false;
	}
	memcpy(buf, frame, len);
	rx_enqueue(d, buf, len);
	return true;
}

bool qrnic_dev_rx_frame_buf(struct qrnic_dev *d, uint8_t *buf, size_t len)
{
	int rc;

	if (d->fault)	/* fault rules look at (and change) the bytes */
		qrnic_frame_buf_fill(buf);
	rc = rx_admit(d, buf, len);

	if (rc <= 0) {
		qrnic_frame_buf_free(buf);
		return rc == 0;
	}
	rx_enqueue(d, buf, len);
	return true;
}

static bool gid_is_local(struct qrnic_dev *d, const uint8_t gid[16])
{
	for (uint32_t i = 0; i < d->cfg.gid_tbl_len; i++)
		if (d->gid[i].valid && !memcmp(d->gid[i].gid, gid, 16))
			return true;
	return false;
}

static void rx_drop(struct qrnic_dev *d, enum qrnic_stat why, uint32_t qpn, uint32_t psn, size_t len)
{
	qrnic_stat_add(d, why, 1);
	qrnic_trace(d, QRNIC_TR_DROP, qpn, psn, why, (uint32_t)len, 0);
}

/* A RoCEv2 packet for a multicast GID: a UD SEND to DestQP 0xffffff for a
 * group with members here goes to each member (spec 12.11).  Returns false
 * for anything else (the caller goes on: the Ethernet path). */
static bool rx_mcast(struct qrnic_dev *d, uint8_t *frame, size_t len, struct qrnic_pkt *p)
{
	const struct qrnic_mcg *g = d->nmcg ? qrnic_mcg_find(d, p->dgid) : NULL;

	if (!g || p->opcode < 0x60 || p->dqpn != QRNIC_MCAST_QPN)
		return false;
	qrnic_stat_add(d, QRNIC_STAT_RX_PACKETS, 1);
	qrnic_stat_add(d, QRNIC_STAT_RX_BYTES, len);
	qrnic_trace(d, QRNIC_TR_RX, p->dqpn, p->psn, p->opcode, (uint32_t)len, 0);
	qrnic_tm_begin(d, 0);
	qrnic_mcg_deliver(d, g, p);
	qrnic_tm_end(d);
	return true;
}

/* frame: a frame buffer (the receive queue holds nothing else), which may
 * carry its payload by reference (qrnic_frame_buf_set_ref) and its headers
 * by description (qrnic_frame_buf_set_pkt). */
static void rx_dispatch(struct qrnic_dev *d, uint8_t *frame, size_t len)
{
	struct qrnic_pkt p;
	struct qrnic_qp *qp;
	uint32_t fl, ref_off = 0, ref_len = 0;
	const uint8_t *ref = qrnic_frame_buf_ref(frame, &ref_off, &ref_len);
	const struct qrnic_pkt *desc = qrnic_frame_buf_pkt(frame);
	int rc;

	if ((ref || desc) && qrnic_icrc_on(d)) {	/* the ICRC check reads every byte */
		qrnic_frame_buf_fill(frame);
		ref = NULL;
		desc = NULL;
	}
	if (desc) {	/* built untouched by a device: what parsing it gives */
		qrnic_wire_pkt_received(desc, ref, ref ? ref_len : 0, &p);
		ref = NULL;	/* p.payload is the reference already */
		rc = QRNIC_WIRE_OK;
	} else {
		rc = qrnic_wire_parse_icrc(frame, len, &p, qrnic_icrc_on(d));
	}
	if (ref && rc != QRNIC_WIRE_OK) {
		qrnic_frame_buf_fill(frame);	/* bytes for the Ethernet path */
		ref = NULL;
	}
	if (rc == QRNIC_WIRE_E_NOT_ROCE) {
		qrnic_eth_rx(d, frame, len);
		return;
	}
	if (rc == QRNIC_WIRE_E_ICRC && !gid_is_local(d, p.dgid)) {
		qrnic_eth_rx(d, frame, len);	/* not ours: its ICRC is not our business */
		return;
	}
	if (rc != QRNIC_WIRE_OK) {
		rx_drop(d, rc == QRNIC_WIRE_E_ICRC ? QRNIC_STAT_RX_DROP_ICRC
						   : QRNIC_STAT_RX_DROP_MALFORMED, 0, 0, len);
		return;
	}
	if (qrnic_gid_is_mcast(p.dgid) && rx_mcast(d, frame, len, &p))
		return;
	if (!gid_is_local(d, p.dgid)) {
		qrnic_frame_buf_fill(frame);
		qrnic_eth_rx(d, frame, len);	/* RoCEv2, but not for us */
		return;
	}
	if (ref) {	/* the payload is read where it is, on its way into our memory */
		if (p.payload == frame + ref_off && p.paylen == ref_len)
			p.payload = ref;
		else
			qrnic_frame_buf_fill(frame);
	}
	qrnic_stat_add(d, QRNIC_STAT_RX_PACKETS, 1);
	qrnic_stat_add(d, QRNIC_STAT_RX_BYTES, len);
	qrnic_trace(d, QRNIC_TR_RX, p.dqpn, p.psn, p.opcode, (uint32_t)len, 0);
	qp = qrnic_qp_get(d, p.dqpn);
	if (!qp) {
		rx_drop(d, QRNIC_STAT_RX_DROP_NO_QP, p.dqpn, p.psn, len);
		return;
	}
	fl = qrnic_opcode_flags(p.opcode);
	/* the BTH opcode's transport (its top three bits) must be the QP's */
	if (p.opcode >= 0x60 ? qp->type != QRNIC_QPT_UD && qp->type != QRNIC_QPT_GSI
	    : p.opcode >= 0x20 ? qp->type != QRNIC_QPT_UC : qp->type != QRNIC_QPT_RC) {
		rx_drop(d, QRNIC_STAT_RX_DROP_MALFORMED, p.dqpn, p.psn, len);
		return;
	}
	/* timing: the packet is parsed on a processing unit after its QP
	 * context is looked up */
	qrnic_tm_begin(d, 0);
	if (qrnic_timed(d)) {
		qrnic_tm_xlate(d, QRNIC_TM_QPC, qp->qpn);
		d->tm_t = qrnic_tm_pu(&d->tm, d->tm_t, d->tm.p.resp_pkt_cycles);
		d->tm_cycles = d->tm.p.ack_cycles;	/* what it sends back: ACK/NAK */
	}
	if (fl & QRNIC_HDR_RESPONSE)
		qrnic_comp_packet(d, qp, &p);
	else
		qrnic_resp_packet(d, qp, &p);
	if (qrnic_timed(d) && d->tm_t > qp->tm_resp && !(fl & QRNIC_HDR_RESPONSE))
		qp->tm_resp = d->tm_t;
	qrnic_tm_end(d);
}

/* ---- the work loop ------------------------------------------------------------ */
/* A device created without an admin engine (qrnic_dev_new): its admin
 * queue goes to error, as it would with firmware that cannot run. */
static bool admin_absent(struct qrnic_dev *d)
{
	d->aq_status |= QRNIC_AQ_STATUS_ERROR;
	qrnic_unimp(d, "qrnic: admin queue: no admin engine (firmware) attached");
	return false;
}

bool qrnic_dev_busy(const struct qrnic_dev *d)
{
	if (!(d->ctrl & QRNIC_CTRL_ENABLE) || (d->status & QRNIC_STATUS_FATAL))
		return false;
	return d->rxq_tail != d->rxq_head || d->work.head || d->eth_pending || d->arm_pending ||
	       (d->aq_pending && (d->aq_ctrl & QRNIC_AQ_CTRL_ENABLE) &&
		!(d->aq_status & QRNIC_AQ_STATUS_ERROR));
}

bool qrnic_dev_run(struct qrnic_dev *d)
{
	bool did = false;
	uint32_t n;

	if (!(d->ctrl & QRNIC_CTRL_ENABLE) || (d->status & QRNIC_STATUS_FATAL) || d->in_run)
		return false;	/* a fatal device does nothing until reset */
	d->in_run = true;

	if (d->arm_pending) {
		qrnic_arm_run(d);
		did = true;
	}

	if (d->aq_pending && (d->aq_ctrl & QRNIC_AQ_CTRL_ENABLE) &&
	    !(d->aq_status & QRNIC_AQ_STATUS_ERROR)) {
		d->aq_pending = d->admin ? d->admin->run(d->admin_opaque, d, QRNIC_AQ_BUDGET)
					 : admin_absent(d);
		did = true;
	}

	if (d->eth_pending) {
		d->eth_pending = qrnic_eth_tx_run(d);
		did = true;
	}

	for (n = 0; n < QRNIC_RUN_RX_BUDGET && d->rxq_head != d->rxq_tail; n++) {
		struct qrnic_frame *f = &d->rxq[d->rxq_head % QRNIC_RXQ_DEPTH];

		uint8_t *buf = f->data;

		rx_dispatch(d, buf, f->len);
		f->data = NULL;
		d->rxq_head++;
		qrnic_frame_buf_free(buf);
		did = true;
	}

	/* Service each QP queued right now once; QPs that still have work
	 * go to the back of the list, so one busy QP cannot starve others. */
	for (n = 0; n < QRNIC_RUN_QP_BUDGET; n++) {
		struct qrnic_qp *qp;

		/* Loopback frames enter our own receive queue while QPs are
		 * serviced: leave room for what one more step can send rather
		 * than drop our own frames (the next run receives them first). */
		if (QRNIC_RXQ_DEPTH - (d->rxq_tail - d->rxq_head) < QRNIC_RXQ_STEP_RESERVE)
			break;
		qp = qrnic_qlist_pop(d, &d->work, QRNIC_QL_WORK);

		if (!qp)
			break;
		did = true;
		/* the service may have queued it again itself (a kick):
		 * the push then leaves it where it is */
		if (qrnic_qp_service(d, qp))
			qrnic_qlist_push(d, &d->work, QRNIC_QL_WORK, qp);
		if (d->selfcheck)
			selfcheck(d, qp);
	}

	d->in_run = false;
	timer_update(d);
	if (qrnic_dev_busy(d))
		d->ops->schedule(d->opaque);
	return did;
}

/* ---- registers -------------------------------------------------------------- */
static uint32_t mac_lo(const struct qrnic_dev *d)
{
	const uint8_t *m = d->cfg.mac;

	return m[0] | (m[1] << 8) | (m[2] << 16) | ((uint32_t)m[3] << 24);
}

uint64_t qrnic_dev_reg_read(struct qrnic_dev *d, uint64_t off, unsigned size)
{
	uint32_t v;

	if (size != 4 || (off & 3)) {
		if (!(size == 8 && off == QRNIC_REG_EQ_DB))
			qrnic_guest_error(d, "qrnic: BAR0 read of size %u at 0x%llx: use 32-bit accesses",
					  size, (unsigned long long)off);
		return 0;
	}
	switch (off) {
	case QRNIC_REG_VERSION:		v = QRNIC_ABI_VERSION; break;
	case QRNIC_REG_CAPS:		v = QRNIC_CAPS_ALL; break;
	case QRNIC_REG_CTRL:		v = d->ctrl; break;
	case QRNIC_REG_STATUS:		v = d->status; break;
	case QRNIC_REG_FATAL_CODE:	v = d->fatal_code; break;
	case QRNIC_REG_NUM_DB_PAGES:	v = d->cfg.max_uctx; break;
	case QRNIC_REG_NUM_VECTORS:	v = d->cfg.num_vectors; break;
	case QRNIC_REG_SCRATCH:		v = d->scratch; break;
	case QRNIC_REG_AQ_SQ_BASE_LO:	v = (uint32_t)d->aq_sq_base; break;
	case QRNIC_REG_AQ_SQ_BASE_HI:	v = (uint32_t)(d->aq_sq_base >> 32); break;
	case QRNIC_REG_AQ_CQ_BASE_LO:	v = (uint32_t)d->aq_cq_base; break;
	case QRNIC_REG_AQ_CQ_BASE_HI:	v = (uint32_t)(d->aq_cq_base >> 32); break;
	case QRNIC_REG_AQ_CTRL:		v = d->aq_ctrl; break;
	case QRNIC_REG_AQ_SQ_CI:	v = d->aq_sq_ci; break;
	case QRNIC_REG_AQ_STATUS:	v = d->aq_status; break;
	case QRNIC_REG_ETH_TX_BASE_LO:	v = (uint32_t)d->eth_tx_base; break;
	case QRNIC_REG_ETH_TX_BASE_HI:	v = (uint32_t)(d->eth_tx_base >> 32); break;
	case QRNIC_REG_ETH_RX_BASE_LO:	v = (uint32_t)d->eth_rx_base; break;
	case QRNIC_REG_ETH_RX_BASE_HI:	v = (uint32_t)(d->eth_rx_base >> 32); break;
	case QRNIC_REG_ETH_CTRL:	v = d->eth_ctrl; break;
	case QRNIC_REG_ETH_TX_CI:	v = d->eth_tx_ci; break;
	case QRNIC_REG_ETH_RX_CI:	v = d->eth_rx_ci; break;
	case QRNIC_REG_ETH_IRQ:		v = d->eth_irq; break;
	case QRNIC_REG_MAC_LO:		v = mac_lo(d); break;
	case QRNIC_REG_MAC_HI:		v = d->cfg.mac[4] | (d->cfg.mac[5] << 8); break;
	case QRNIC_REG_PORT_STATUS:	v = d->link_up ? QRNIC_PORT_STATUS_LINK_UP : 0; break;
	case QRNIC_REG_ETH_MTU:		v = d->cfg.eth_mtu; break;
	case QRNIC_REG_AQ_SQ_DB:
	case QRNIC_REG_ETH_TX_DB:
	case QRNIC_REG_ETH_RX_DB:
		v = 0;	/* write-only */
		break;
	default:
		qrnic_guest_error(d, "qrnic: read of undefined register 0x%llx",
				  (unsigned long long)off);
		v = 0;
	}
	return v;
}

static void aq_ctrl_write(struct qrnic_dev *d, uint32_t v)
{
	uint32_t log = v & QRNIC_AQ_CTRL_LOG_DEPTH_MASK;

	if (!(v & QRNIC_AQ_CTRL_ENABLE)) {
		d->aq_ctrl = v & QRNIC_AQ_CTRL_LOG_DEPTH_MASK;
		d->aq_status = 0;
		d->aq_sq_pi = d->aq_sq_ci = d->aq_cq_pi = 0;
		d->aq_pending = false;
		return;
	}
	if (d->aq_ctrl & QRNIC_AQ_CTRL_ENABLE) {
		qrnic_guest_error(d, "qrnic: AQ_CTRL written while the admin queue is enabled");
		return;
	}
	if (log < 1 || log > QRNIC_AQ_MAX_LOG_DEPTH || !d->aq_sq_base || !d->aq_cq_base ||
	    (d->aq_sq_base & 0xfff) || (d->aq_cq_base & 0xfff)) {
		qrnic_guest_error(d, "qrnic: admin queue enable with bad depth %u or base "
				  "0x%llx/0x%llx", log, (unsigned long long)d->aq_sq_base,
				  (unsigned long long)d->aq_cq_base);
		d->aq_status = QRNIC_AQ_STATUS_ERROR;
		return;
	}
	d->aq_ctrl = v & (QRNIC_AQ_CTRL_ENABLE | QRNIC_AQ_CTRL_LOG_DEPTH_MASK);
	d->aq_status = QRNIC_AQ_STATUS_ENABLED;
	d->aq_sq_pi = d->aq_sq_ci = d->aq_cq_pi = 0;
}

static void set_base(struct qrnic_dev *d, uint64_t *base, bool hi, uint32_t v, bool locked)
{
	if (locked) {
		qrnic_guest_error(d, "qrnic: ring base written while the ring is enabled");
		return;
	}
	if (hi)
		*base = (*base & 0xffffffffull) | ((uint64_t)v << 32);
	else
		*base = (*base & ~0xffffffffull) | v;
}

void qrnic_dev_reg_write(struct qrnic_dev *d, uint64_t off, uint64_t val, unsigned size)
{
	uint32_t v = (uint32_t)val;
	bool aq_on = d->aq_ctrl & QRNIC_AQ_CTRL_ENABLE;

	if (off == QRNIC_REG_EQ_DB) {
		if (!(d->ctrl & QRNIC_CTRL_ENABLE) || (d->status & QRNIC_STATUS_FATAL)) {
			qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
			return;
		}
		if (size != 8) {
			qrnic_guest_error(d, "qrnic: EQ_DB needs one 64-bit write (got %u bytes)", size);
			qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
			return;
		}
		qrnic_eq_doorbell(d, (uint32_t)(val & QRNIC_EQ_DB_EQN_MASK),
				  (uint32_t)(val >> QRNIC_EQ_DB_CI_SHIFT), val & QRNIC_EQ_DB_ARM);
		return;
	}
	if (size != 4 || (off & 3)) {
		qrnic_guest_error(d, "qrnic: BAR0 write of size %u at 0x%llx ignored",
				  size, (unsigned long long)off);
		return;
	}
	if (d->status & QRNIC_STATUS_FATAL && off != QRNIC_REG_CTRL && off != QRNIC_REG_SCRATCH)
		return;

	switch (off) {
	case QRNIC_REG_CTRL:
		if (v & QRNIC_CTRL_RESET) {
			qrnic_dev_reset(d);
			return;
		}
		if (v & ~(QRNIC_CTRL_ENABLE))
			qrnic_guest_error(d, "qrnic: reserved CTRL bits 0x%x ignored", v);
		if (d->status & QRNIC_STATUS_FATAL)
			return;
		d->ctrl = v & QRNIC_CTRL_ENABLE;
		if (d->ctrl)
			d->status |= QRNIC_STATUS_ENABLED;
		else
			d->status &= ~QRNIC_STATUS_ENABLED;
		qrnic_schedule(d);
		break;
	case QRNIC_REG_SCRATCH:
		d->scratch = v;
		break;
	case QRNIC_REG_AQ_SQ_BASE_LO: set_base(d, &d->aq_sq_base, false, v, aq_on); break;
	case QRNIC_REG_AQ_SQ_BASE_HI: set_base(d, &d->aq_sq_base, true, v, aq_on); break;
	case QRNIC_REG_AQ_CQ_BASE_LO: set_base(d, &d->aq_cq_base, false, v, aq_on); break;
	case QRNIC_REG_AQ_CQ_BASE_HI: set_base(d, &d->aq_cq_base, true, v, aq_on); break;
	case QRNIC_REG_AQ_CTRL:
		aq_ctrl_write(d, v);
		break;
	case QRNIC_REG_AQ_SQ_DB:
		if (!aq_on || (d->aq_status & QRNIC_AQ_STATUS_ERROR)) {
			qrnic_guest_error(d, "qrnic: admin doorbell while the admin queue is not running");
			qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
			return;
		}
		d->aq_sq_pi = v;
		d->aq_pending = true;
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS, 1);
		qrnic_schedule(d);
		break;
	case QRNIC_REG_ETH_TX_BASE_LO:
	case QRNIC_REG_ETH_TX_BASE_HI:
	case QRNIC_REG_ETH_RX_BASE_LO:
	case QRNIC_REG_ETH_RX_BASE_HI:
	case QRNIC_REG_ETH_CTRL:
	case QRNIC_REG_ETH_TX_DB:
	case QRNIC_REG_ETH_RX_DB:
	case QRNIC_REG_ETH_IRQ:
		qrnic_eth_reg_write(d, off, v);
		break;
	default:
		qrnic_guest_error(d, "qrnic: write 0x%x to read-only or undefined register 0x%llx",
				  v, (unsigned long long)off);
	}
}

/* ---- doorbell pages ---------------------------------------------------------- */
uint64_t qrnic_dev_db_read(struct qrnic_dev *d, uint64_t off, unsigned size)
{
	qrnic_guest_error(d, "qrnic: read of doorbell page offset 0x%llx (write-only)",
			  (unsigned long long)off);
	return 0;
}

static void db_ignored(struct qrnic_dev *d, const char *why, uint64_t off, uint64_t val)
{
	qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
	qrnic_guest_error(d, "qrnic: doorbell 0x%llx=0x%llx ignored: %s",
			  (unsigned long long)off, (unsigned long long)val, why);
}

void qrnic_dev_db_write(struct qrnic_dev *d, uint64_t off, uint64_t val, unsigned size)
{
	uint64_t page = off / QRNIC_DB_PAGE_SIZE;
	uint32_t reg = (uint32_t)(off % QRNIC_DB_PAGE_SIZE);
	uint32_t qn = (uint32_t)(val & QRNIC_DB_QN_MASK);
	uint32_t idx = (uint32_t)(val >> QRNIC_DB_IDX_SHIFT);

	if (size != 8 || (off & 7)) {
		db_ignored(d, "doorbells need one aligned 64-bit write", off, val);
		return;
	}
	if (!(d->ctrl & QRNIC_CTRL_ENABLE) || (d->status & QRNIC_STATUS_FATAL)) {
		db_ignored(d, "device not enabled", off, val);
		return;
	}
	if (page >= d->cfg.max_uctx || !d->uctx_valid[page]) {
		db_ignored(d, "doorbell page of no user context", off, val);
		return;
	}
	switch (reg) {
	case QRNIC_DB_SQ:
	case QRNIC_DB_RQ: {
		struct qrnic_qp *qp = qrnic_qp_get(d, qn);

		if (!qp || qp->uctx != page) {
			db_ignored(d, "no such QP in this context", off, val);
			return;
		}
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS, 1);
		qrnic_trace(d, QRNIC_TR_DOORBELL, qn, 0, reg == QRNIC_DB_SQ ? 0 : 1, idx, 0);
		qrnic_qp_doorbell(d, qp, reg == QRNIC_DB_SQ, idx);
		break;
	}
	case QRNIC_DB_SRQ: {
		struct qrnic_srq *srq = qrnic_srq_get(d, qn);

		if (!srq || srq->uctx != page) {
			db_ignored(d, "no such SRQ in this context", off, val);
			return;
		}
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS, 1);
		qrnic_trace(d, QRNIC_TR_DOORBELL, 0, 0, 3, idx, qn);
		qrnic_srq_doorbell(d, srq, idx);
		break;
	}
	case QRNIC_DB_CQ: {
		struct qrnic_cq *cq = qrnic_cq_get(d, qn);

		if (!cq || cq->uctx != page) {
			db_ignored(d, "no such CQ in this context", off, val);
			return;
		}
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS, 1);
		qrnic_trace(d, QRNIC_TR_DOORBELL, 0, 0, 2, idx, qn);
		qrnic_cq_doorbell(d, cq, idx, val & QRNIC_DB_CQ_ARM, val & QRNIC_DB_CQ_SOLICITED);
		break;
	}
	default:
		db_ignored(d, "undefined doorbell offset", off, val);
	}
}

/* ---- life cycle -------------------------------------------------------------- */
static void free_tables(struct qrnic_dev *d)
{
	if (d->qp)
		for (uint32_t i = 0; i < d->cfg.max_qp; i++)
			free(d->qp[i].req.win);
	free(d->uctx_valid);
	free(d->pd);
	free(d->cq);
	free(d->eq);
	free(d->qp);
	free(d->mr);
	free(d->ah);
	free(d->gid);
	free(d->mtt);
	free(d->mtt_used);
	free(d->srq);
	d->srq = NULL;
	d->uctx_valid = NULL;
	d->pd = NULL;
	d->cq = NULL;
	d->eq = NULL;
	d->qp = NULL;
	d->mr = NULL;
	d->ah = NULL;
	d->gid = NULL;
	d->mtt = NULL;
	d->mtt_used = NULL;
}

static int alloc_tables(struct qrnic_dev *d)
{
	const struct qrnic_config *c = &d->cfg;

	d->uctx_valid = calloc(c->max_uctx, sizeof(*d->uctx_valid));
	d->pd = calloc(c->max_pd, sizeof(*d->pd));
	d->cq = calloc(c->max_cq, sizeof(*d->cq));
	d->eq = calloc(c->max_eq, sizeof(*d->eq));
	d->qp = calloc(c->max_qp, sizeof(*d->qp));
	d->mr = calloc(c->max_mr, sizeof(*d->mr));
	d->ah = calloc(c->max_ah, sizeof(*d->ah));
	d->gid = calloc(c->gid_tbl_len, sizeof(*d->gid));
	d->mtt = calloc(c->max_mtt, sizeof(*d->mtt));
	d->mtt_used = calloc(c->max_mtt, sizeof(*d->mtt_used));
	d->srq = calloc(c->max_srq, sizeof(*d->srq));
	if (!d->uctx_valid || !d->pd || !d->cq || !d->eq || !d->qp || !d->mr || !d->ah ||
	    !d->gid || !d->mtt || !d->mtt_used || !d->srq) {
		free_tables(d);
		return -1;
	}
	return 0;
}

/* Put every resource and register back to its reset value. */
static void rxq_clear(struct qrnic_dev *d)
{
	while (d->rxq_head != d->rxq_tail) {
		struct qrnic_frame *f = &d->rxq[d->rxq_head++ % QRNIC_RXQ_DEPTH];

		qrnic_frame_buf_free(f->data);
		f->data = NULL;
	}
	d->rxq_head = d->rxq_tail = 0;
}

/* Back to the power-on state.  fresh: the tables were just allocated
 * zeroed (alloc_tables), so clearing them again is skipped -- it would
 * only fault in every page of tables sized for the largest configuration. */
static void reset_state(struct qrnic_dev *d, bool fresh)
{
	const struct qrnic_config *c = &d->cfg;

	if (!fresh) {
		/* an entry no QP uses is all zero (DESTROY_QP clears it): only
		 * reading it leaves the table's untouched pages unallocated */
		for (uint32_t i = 0; i < c->max_qp; i++) {
			if (!d->qp[i].valid && !d->qp[i].req.win && !d->qp[i].work.on &&
			    !d->qp[i].flushq.on)
				continue;
			free(d->qp[i].req.win);
			memset(&d->qp[i], 0, sizeof(d->qp[i]));
		}
		memset(d->uctx_valid, 0, c->max_uctx * sizeof(*d->uctx_valid));
		memset(d->pd, 0, c->max_pd * sizeof(*d->pd));
		memset(d->cq, 0, c->max_cq * sizeof(*d->cq));
		memset(d->eq, 0, c->max_eq * sizeof(*d->eq));
		memset(d->srq, 0, c->max_srq * sizeof(*d->srq));
		/* Keep each MR slot's tag so keys from before the reset stay stale. */
		for (uint32_t i = 0; i < c->max_mr; i++) {
			uint8_t tag = d->mr[i].next_tag;

			memset(&d->mr[i], 0, sizeof(d->mr[i]));
			d->mr[i].next_tag = tag;
		}
		memset(d->ah, 0, c->max_ah * sizeof(*d->ah));
		memset(d->gid, 0, c->gid_tbl_len * sizeof(*d->gid));
		memset(d->mtt, 0, c->max_mtt * sizeof(*d->mtt));
		memset(d->mtt_used, 0, c->max_mtt * sizeof(*d->mtt_used));
	}
	d->mtt_free = c->max_mtt;
	if (d->admin && d->admin->reset)
		d->admin->reset(d->admin_opaque, d);
	d->uctx_valid[0] = true;

	d->ctrl = 0;
	d->status = QRNIC_STATUS_READY;
	d->fatal_code = QRNIC_FATAL_NONE;
	d->scratch = 0;
	d->aq_sq_base = d->aq_cq_base = 0;
	d->aq_ctrl = d->aq_status = 0;
	d->aq_sq_pi = d->aq_sq_ci = d->aq_cq_pi = 0;
	d->eth_tx_base = d->eth_rx_base = 0;
	d->eth_ctrl = d->eth_tx_pi = d->eth_rx_pi = d->eth_tx_ci = d->eth_rx_ci = 0;
	d->eth_irq = 0;
	d->aq_pending = d->eth_pending = false;
	memset(d->mcg, 0, sizeof(d->mcg));
	d->nmcg = 0;
	memset(&d->work, 0, sizeof(d->work));
	memset(&d->flushq, 0, sizeof(d->flushq));
	d->flushing = false;
	rxq_clear(d);
	d->nevents = 0;
	d->events_compact_at = 64;
	for (int i = 0; i < QRNIC_NUM_LANES; i++) {
		d->lanes[i].head = d->lanes[i].count = 0;
		d->lanes[i].compact_at = 64;
	}
	d->in_run = false;
	d->tm_on = false;
	qrnic_fx_reset(d);
	memset(d->stats, 0, sizeof(d->stats));
}

void qrnic_dev_reset(struct qrnic_dev *d)
{
	reset_state(d, false);
	if (d->fault)
		qrnic_fault_reset(d);
	timer_update(d);
}

struct qrnic_dev *qrnic_dev_new(const struct qrnic_config *cfg,
				const struct qrnic_host_ops *ops, void *opaque,
				const struct qrnic_admin_ops *admin, void *admin_opaque)
{
	char err[128];
	struct qrnic_dev *d;

	if (qrnic_config_check(cfg, err, sizeof(err)) != 0)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->cfg = *cfg;
	d->ops = ops;
	d->opaque = opaque;
	d->admin = admin;
	d->admin_opaque = admin_opaque;
	d->link_up = true;
	d->timer_deadline = UINT64_MAX;
	if (alloc_tables(d) != 0 ||
	    qrnic_timing_init(&d->tm, qrnic_timing_profile_find("functional")) != 0)
		goto fail;
	reset_state(d, true);
	return d;
fail:
	qrnic_dev_free(d);
	return NULL;
}

void qrnic_dev_free(struct qrnic_dev *d)
{
	if (!d)
		return;
	free_tables(d);
	rxq_clear(d);
	qrnic_frame_buf_free(d->txbuf);
	free(d->events);
	for (int i = 0; i < QRNIC_NUM_LANES; i++)
		free(d->lanes[i].ring);
	qrnic_fault_free(d);
	if (d->fx) {
		qrnic_fx_reset(d);
		free(d->fx);
	}
	qrnic_timing_fini(&d->tm);
	free(d);
}

void qrnic_dev_set_link(struct qrnic_dev *d, bool up)
{
	if (d->link_up == up)
		return;
	d->link_up = up;
	qrnic_async_event(d, up ? QRNIC_EV_PORT_ACTIVE : QRNIC_EV_PORT_ERR, 1, 0);
}
