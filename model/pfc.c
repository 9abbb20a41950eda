/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: 802.1Qbb priority flow control frames on the wire
 * (docs/congestion.md, spec 12.15).  A MAC control frame (EtherType
 * 0x8808) is taken by the port's MAC on arrival, before the receive
 * queue: it is never a packet of the transport.  Opcode 0x0101 (PFC)
 * pauses each priority whose class-enable bit is set for its time in
 * quanta of 512 bit times at the port's rate; time 0 resumes it (XON).
 * Opcode 0x0001 (802.3x PAUSE) pauses all eight.  Anything else is
 * counted as malformed and ignored.
 *
 * Under a timing profile a frame's priority is its VLAN PCP or else its
 * IP DSCP >> 3 (the default DSCP-to-priority map of Linux and mlx5).  A
 * frame whose time comes while its priority is paused, or while frames of
 * its priority deferred by an earlier pause are still queued, is deferred
 * behind them: it leaves at the pause's end, one after the other at the
 * port's rate, so that none overtakes another of its priority.  Frames of
 * other priorities are not held.  Under the functional profile there is
 * no modelled port: frames are counted, nothing is held.
 */
#include "qrnic_internal.h"

static const uint8_t pfc_dmac[6] = { 0x01, 0x80, 0xc2, 0x00, 0x00, 0x01 };

size_t qrnic_pfc_frame(uint8_t out[QRNIC_PFC_FRAME_LEN], const uint8_t smac[6], uint8_t class_enable,
		       const uint16_t time[8])
{
	memset(out, 0, QRNIC_PFC_FRAME_LEN);
	memcpy(out, pfc_dmac, 6);
	memcpy(out + 6, smac, 6);
	out[12] = 0x88;
	out[13] = 0x08;
	out[14] = 0x01;		/* opcode 0x0101: priority-based flow control */
	out[15] = 0x01;
	out[16] = 0;		/* class-enable vector: the high octet is reserved */
	out[17] = class_enable;
	for (int p = 0; p < 8; p++) {
		uint16_t t = (class_enable >> p & 1) ? time[p] : 0;

		out[18 + 2 * p] = (uint8_t)(t >> 8);
		out[19 + 2 * p] = (uint8_t)t;
	}
	return QRNIC_PFC_FRAME_LEN;	/* padded with zeroes to the 60-byte minimum */
}

int qrnic_frame_priority(const uint8_t *f, size_t len)
{
	size_t off = 12;
	uint16_t et;

	if (len < 14)
		return 0;
	et = (uint16_t)(f[12] << 8 | f[13]);
	if (et == 0x8100 && len >= 18)
		return f[14] >> 5;	/* 802.1Q PCP */
	off += 2;
	if (et == 0x0800 && len >= off + 2)
		return f[off + 1] >> 5;	/* IPv4 TOS: DSCP >> 3 */
	if (et == 0x86dd && len >= off + 2)
		return (f[off] & 0x0f) >> 1;	/* IPv6 traffic class: DSCP >> 3 */
	return 0;
}

/* pause quanta (512 bit times) at the port's rate, in ns, rounded up */
static uint64_t quanta_ns(const struct qrnic_dev *d, uint32_t q)
{
	uint64_t mbps = d->tm.p.link_mbps ? d->tm.p.link_mbps : 100000;

	return ((uint64_t)q * 512u * 1000u + mbps - 1) / mbps;
}

static uint64_t ser_ns(const struct qrnic_dev *d, uint32_t len)
{
	uint64_t bits = (uint64_t)(len + d->tm.p.link_overhead) * 8;
	uint64_t mbps = d->tm.p.link_mbps;
	uint64_t ns = mbps ? (bits * 1000 + mbps - 1) / mbps : 0;

	return ns ? ns : 1;	/* distinct times keep the order */
}

/* A TX effect's priority (cached in slot, which TX effects do not use) */
static int fx_prio(struct qrnic_effect *e)
{
	if (!(e->slot & QRNIC_FX_SLOT_PRIO_OK)) {
		qrnic_frame_buf_fill(e->frame);
		e->slot |= QRNIC_FX_SLOT_PRIO_OK | (uint64_t)qrnic_frame_priority(e->frame, e->len) << 8;
	}
	return (int)(e->slot >> 8 & 7);
}

/* Once priority p runs again its deferred frames are the port's next work:
 * frames booked from now on are booked behind them, as the XON of
 * qrnic_dev_port_pause does.  While p is paused the port stays free for the
 * other priorities. */
static void pfc_link_busy(struct qrnic_dev *d, int p)
{
	if (d->pfc_tail[p] > d->tm.p.prop_ns && d->tm.link_free < d->pfc_tail[p] - d->tm.p.prop_ns)
		d->tm.link_free = d->pfc_tail[p] - d->tm.p.prop_ns;
}

bool qrnic_pfc_defer(struct qrnic_dev *d, struct qrnic_effect *e, uint32_t idx, uint64_t now)
{
	int p;
	uint64_t t;

	if (e->slot & QRNIC_FX_SLOT_DEFERRED) {
		e->slot &= ~(uint64_t)QRNIC_FX_SLOT_DEFERRED;
		return false;	/* its deferred time came: it leaves */
	}
	p = fx_prio(e);
	if (d->pfc_until[p] <= now && d->pfc_tail[p] <= now)
		return false;
	t = d->pfc_until[p] + d->tm.p.prop_ns;
	if (t < d->pfc_tail[p])
		t = d->pfc_tail[p];
	t += ser_ns(d, e->len);
	d->pfc_tail[p] = t;
	if (d->pfc_until[p] <= now)
		pfc_link_busy(d, p);
	e->when = t;
	e->slot |= QRNIC_FX_SLOT_DEFERRED;
	e->gen = ++d->fx_gen;
	qrnic_event_add(d, t, QRNIC_EVK_EFFECT, idx, e->gen);
	qrnic_stat_add(d, QRNIC_STAT_PFC_DEFERRED_FRAMES, 1);
	return true;
}

/* priority p is paused until 'until' (ns) from now on: the frames deferred
 * behind the old pause move by the difference, in order */
static void pfc_set(struct qrnic_dev *d, int p, uint64_t until, uint64_t now)
{
	uint64_t base = d->pfc_until[p] > now ? d->pfc_until[p] : now;

	if (d->pfc_tail[p] > now && until != base) {
		for (uint32_t i = 1; i < d->fx_cap; i++) {
			struct qrnic_effect *e = &d->fx[i];

			if (e->kind != QRNIC_FX_TX || !(e->slot & QRNIC_FX_SLOT_DEFERRED) ||
			    fx_prio(e) != p)
				continue;
			e->when = e->when - base + until;	/* >= until + prop + ser > now */
			e->gen = ++d->fx_gen;
			qrnic_event_add(d, e->when, QRNIC_EVK_EFFECT, i, e->gen);
		}
		d->pfc_tail[p] = d->pfc_tail[p] - base + until;
	}
	d->pfc_until[p] = until;
	if (until > now)
		d->pfc_active = true;
	else
		pfc_link_busy(d, p);
}

/* A MAC control frame reached the port (now) */
void qrnic_pfc_rx(struct qrnic_dev *d, const uint8_t *f, size_t len)
{
	uint64_t now = qrnic_now(d);
	uint16_t op;
	uint8_t en;

	/* too short, to another address, or neither PFC nor PAUSE */
	if (len < QRNIC_PFC_FRAME_LEN || (memcmp(f, pfc_dmac, 6) && memcmp(f, d->cfg.mac, 6)) ||
	    ((op = (uint16_t)(f[14] << 8 | f[15])) != 0x0101 && op != 0x0001)) {
		qrnic_stat_add(d, QRNIC_STAT_PFC_MALFORMED, 1);
		qrnic_trace(d, QRNIC_TR_DROP, 0, 0, QRNIC_STAT_PFC_MALFORMED, (uint32_t)len, 0);
		return;
	}
	qrnic_stat_add(d, QRNIC_STAT_PFC_RECEIVED, 1);
	en = op == 0x0001 ? 0xff : f[17];	/* the vector's high octet is reserved: ignored */
	for (int p = 0; p < 8; p++) {
		uint16_t q;

		if (!(en >> p & 1))
			continue;
		q = op == 0x0001 ? (uint16_t)(f[16] << 8 | f[17]) : (uint16_t)(f[18 + 2 * p] << 8 | f[19 + 2 * p]);
		pfc_set(d, p, q ? now + quanta_ns(d, q) : now, now);
	}
}

uint64_t qrnic_dev_pfc_paused_until(const struct qrnic_dev *d, int prio)
{
	return prio >= 0 && prio < 8 ? d->pfc_until[prio] : 0;
}

/* ---- the port's receive buffer and the PFC frames it sends ------------------
 *
 * With rx_buffer set, under a timing profile, a frame admitted to the
 * receive queue occupies rx_buffer bytes (its frame length) from its
 * arrival until the receive pipeline takes it.  The pipeline takes frames
 * in arrival order, one every max(resp_pkt_cycles / num_pu, len at
 * rx_drain_mbps) ns: the responder's per-packet cost spread over the
 * processing units (the profile's receive cost), or the byte rate of a
 * slow receiver.  A frame that does not fit is dropped (rx_buffer_drops).
 * With rx_pfc_xoff set, when a priority's bytes reach it the port sends an
 * 802.1Qbb XOFF for that priority (0xffff quanta, sent again every half
 * of that while the priority stays above rx_pfc_xon), and an XON (time 0)
 * once they fall to rx_pfc_xon.  The pause frames leave at once, ahead of
 * the frames booked on the port (a MAC sends them between frames), and are
 * counted in pfc_sent, not in tx_packets.
 */
#define RXB_QUANTA	0xffffu

static uint64_t rxb_cost(struct qrnic_dev *d, uint32_t len)
{
	uint64_t pkt = (qrnic_tm_cycles(&d->tm, d->tm.p.resp_pkt_cycles) + d->tm.p.num_pu - 1) /
		       d->tm.p.num_pu;
	uint64_t mbps = d->cfg.rx_drain_mbps;
	uint64_t bytes = mbps ? ((uint64_t)len * 8000u + mbps - 1) / mbps : 0;

	return pkt > bytes ? pkt : bytes;
}

static void rxb_arm(struct qrnic_dev *d, uint64_t when)
{
	qrnic_event_add(d, when, QRNIC_EVK_RXBUF, 0, 0);
}

/* an 802.1Qbb frame out of the port: XOFF for xoff, XON for xon */
static void rxb_send(struct qrnic_dev *d, uint8_t xoff, uint8_t xon)
{
	uint8_t f[QRNIC_PFC_FRAME_LEN];
	uint16_t tm[8] = { 0 };
	uint64_t now = qrnic_now(d);

	for (int p = 0; p < 8; p++) {
		if (!(xoff >> p & 1))
			continue;
		tm[p] = RXB_QUANTA;
		/* sent again before the peer's pause runs out */
		d->rxb.refresh[p] = now + quanta_ns(d, RXB_QUANTA) / 2;
		rxb_arm(d, d->rxb.refresh[p]);
	}
	d->rxb.xoff = (uint8_t)((d->rxb.xoff | xoff) & ~xon);
	if (!d->link_up)
		return;
	qrnic_pfc_frame(f, d->cfg.mac, xoff | xon, tm);
	qrnic_stat_add(d, QRNIC_STAT_PFC_SENT, 1);
	d->ops->tx_frame(d->opaque, f, sizeof(f));
}

/* XOFFs whose refresh time came go out again */
static void rxb_refresh(struct qrnic_dev *d)
{
	uint64_t now = qrnic_now(d);
	uint8_t again = 0;

	for (int p = 0; d->rxb.xoff && p < 8; p++)
		if ((d->rxb.xoff >> p & 1) && d->rxb.refresh[p] <= now)
			again |= (uint8_t)(1u << p);
	if (again)
		rxb_send(d, again, 0);
}

bool qrnic_rxb_admit(struct qrnic_dev *d, struct qrnic_frame *f)
{
	const struct qrnic_pkt *desc = qrnic_frame_buf_pkt(f->data);
	uint64_t now = qrnic_now(d), start;
	int p;

	if (d->rxb.used + f->len > d->cfg.rx_buffer) {
		qrnic_stat_add(d, QRNIC_STAT_RX_BUFFER_DROPS, 1);
		qrnic_trace(d, QRNIC_TR_DROP, 0, 0, QRNIC_STAT_RX_BUFFER_DROPS, f->len, 0);
		return false;
	}
	/* a frame with its headers by description is IPv4 without a VLAN tag */
	p = desc ? desc->traffic_class >> 5 : qrnic_frame_priority(f->data, f->len);
	start = d->rxb.next > now ? d->rxb.next : now;
	d->rxb.next = start + rxb_cost(d, f->len);
	f->start = start;
	f->prio = (uint8_t)p;
	d->rxb.used += f->len;
	d->rxb.occ[p] += f->len;
	if (d->rxb.used > d->rxb.max_used)
		d->rxb.max_used = d->rxb.used;
	if (d->rxb.occ[p] > d->rxb.occ_max[p])
		d->rxb.occ_max[p] = d->rxb.occ[p];
	if (d->cfg.rx_pfc_xoff && !(d->rxb.xoff >> p & 1) && d->rxb.occ[p] >= d->cfg.rx_pfc_xoff)
		rxb_send(d, (uint8_t)(1u << p), 0);
	return true;
}

void qrnic_rxb_taken(struct qrnic_dev *d, const struct qrnic_frame *f)
{
	int p = f->prio & 7;

	d->rxb.used -= f->len;
	d->rxb.occ[p] -= f->len;
	if ((d->rxb.xoff >> p & 1) && d->rxb.occ[p] <= d->cfg.rx_pfc_xon)
		rxb_send(d, 0, (uint8_t)(1u << p));
	rxb_refresh(d);
}

bool qrnic_rxb_due(struct qrnic_dev *d, const struct qrnic_frame *f, bool arm)
{
	if (f->start <= qrnic_now(d))
		return true;
	if (arm && d->rxb.armed != f->start) {
		d->rxb.armed = f->start;
		rxb_arm(d, f->start);
	}
	return false;
}

/* a QRNIC_EVK_RXBUF event: the head may be due (the run after the timer
 * takes it), an XOFF may be due again */
void qrnic_rxb_event(struct qrnic_dev *d, const struct qrnic_event *ev)
{
	if (d->rxb.armed == ev->when)
		d->rxb.armed = 0;
	if (qrnic_rxb_on(d))
		rxb_refresh(d);
}

void qrnic_rxb_reset(struct qrnic_dev *d)
{
	memset(&d->rxb, 0, sizeof(d->rxb));
}

int qrnic_dev_rxbuf_info(struct qrnic_dev *d, struct qrnic_rxbuf_info *out)
{
	if (!out)	/* only whether there is one (the harness's idle scan) */
		return qrnic_rxb_on(d) ? 0 : -1;
	memset(out, 0, sizeof(*out));
	if (!qrnic_rxb_on(d))
		return -1;
	out->used = d->rxb.used;
	out->max_used = d->rxb.max_used;
	memcpy(out->prio, d->rxb.occ, sizeof(out->prio));
	memcpy(out->prio_max, d->rxb.occ_max, sizeof(out->prio_max));
	out->xoff = d->rxb.xoff;
	return 0;
}
