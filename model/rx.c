/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: the receive path, the pipeline stage in front of the
 * responder (responder.c) and the completer (completer.c).  A frame from
 * the wire (or looped back by the port) is admitted into the receive
 * queue by qrnic_dev_rx_frame / qrnic_dev_rx_frame_buf; qrnic_dev_run()
 * drains the queue through qrnic_rx_run(), which parses each frame and
 * hands it to the completer (responses), the responder (requests), the
 * multicast groups (mcast.c) or the plain Ethernet rings (eth.c).
 */
#include "qrnic_internal.h"

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

/* false: the receive buffer had no room (pfc.c), buf freed */
static bool rx_enqueue(struct qrnic_dev *d, uint8_t *buf, size_t len)
{
	struct qrnic_frame *f = &d->rxq[d->rxq_tail % QRNIC_RXQ_DEPTH];
	uint32_t n = qrnic_frame_buf_train_len(buf);

	if (n > 1) {
		/* a train holds a slot for each of its packets: the first
		 * slot holds it, the others nothing (qrnic_rx_run skips
		 * them), so the queue's room and a snapshot's frames count
		 * packets as before */
		*f = (struct qrnic_frame){ .data = buf, .len = (uint32_t)len };
		for (uint32_t i = 1; i < n; i++)
			d->rxq[(d->rxq_tail + i) % QRNIC_RXQ_DEPTH] = (struct qrnic_frame){ 0 };
		d->rxq_tail += n;
		qrnic_schedule(d);
		return true;
	}

	f->data = buf;
	f->len = (uint32_t)len;
	f->prio = 0;
	f->start = 0;
	if (qrnic_rxb_on(d)) {
		if (!qrnic_rxb_admit(d, f)) {
			f->data = NULL;
			qrnic_frame_buf_free(buf);
			return false;
		}
		f->prio |= QRNIC_FRAME_IN_RXB;
	}
	d->rxq_tail++;
	qrnic_schedule(d);
	return true;
}

bool qrnic_dev_rx_full(const struct qrnic_dev *d)
{
	/* a device that will not empty its queue (disabled, fatal) drops */
	return d->rxq_tail - d->rxq_head >= QRNIC_RXQ_DEPTH && (d->ctrl & QRNIC_CTRL_ENABLE) &&
	       !(d->status & QRNIC_STATUS_FATAL);
}

/* A MAC control frame (EtherType 0x8808) is the port's (pfc.c), taken on
 * arrival: a pause must act even when the receive queue is full. */
static bool rx_mac_control(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	if (len < 14 || frame[12] != 0x88 || frame[13] != 0x08)
		return false;
	if (d->link_up && (d->ctrl & QRNIC_CTRL_ENABLE) && !(d->status & QRNIC_STATUS_FATAL))
		qrnic_pfc_rx(d, frame, len);
	else
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
	return true;
}

bool qrnic_dev_rx_frame(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	int rc;
	uint8_t *buf;

	if (rx_mac_control(d, frame, len))
		return true;
	rc = rx_admit(d, frame, len);
	if (rc <= 0)
		return rc == 0;
	buf = qrnic_frame_buf_alloc(len);
	if (!buf) {
		qrnic_stat_add(d, QRNIC_STAT_RX_DROP_OTHER, 1);
		return false;
	}
	memcpy(buf, frame, len);
	return rx_enqueue(d, buf, len);
}

bool qrnic_dev_rx_has_room(const struct qrnic_dev *d, uint32_t n)
{
	return QRNIC_RXQ_DEPTH - (d->rxq_tail - d->rxq_head) >= n;
}

static void rx_frame_buf_each(void *opaque, uint8_t *buf, size_t len)
{
	qrnic_dev_rx_frame_buf(opaque, buf, len);
}

bool qrnic_dev_rx_frame_buf(struct qrnic_dev *d, uint8_t *buf, size_t len)
{
	int rc;
	uint32_t n = qrnic_frame_buf_train_len(buf);

	/* a train is taken whole only from a host that vouches for it, with
	 * room for each of its packets, no fault plan and no receive buffer
	 * (its frames are admitted one by one, pfc.c), by a device that takes
	 * frames at all; else its frames, each admitted, dropped and counted
	 * as it would be */
	if (n > 1 && (d->fault || !qrnic_frame_buf_vouched(buf) || qrnic_rxb_on(d) ||
		      !qrnic_dev_rx_has_room(d, n) || !d->link_up ||
		      !(d->ctrl & QRNIC_CTRL_ENABLE) || (d->status & QRNIC_STATUS_FATAL))) {
		qrnic_frame_buf_train_split(buf, rx_frame_buf_each, d);
		return true;
	}

	if (d->fault)	/* fault rules look at (and change) the bytes */
		qrnic_frame_buf_fill(buf);
	if (len >= 14 && !qrnic_frame_buf_described(buf) && rx_mac_control(d, buf, len)) {
		qrnic_frame_buf_free(buf);
		return true;
	}
	rc = rx_admit(d, buf, len);

	if (rc <= 0) {
		qrnic_frame_buf_free(buf);
		return rc == 0;
	}
	return rx_enqueue(d, buf, len);
}

bool qrnic_dev_rx_frame_buf_vouched(struct qrnic_dev *d, uint8_t *buf, size_t len)
{
	qrnic_frame_buf_set_vouched(buf, true);
	return qrnic_dev_rx_frame_buf(d, buf, len);
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
	qrnic_tm_begin(d);
	qrnic_mcg_deliver(d, g, p);
	qrnic_tm_end(d);
	return true;
}

/* frame: a frame buffer (the receive queue holds nothing else), which may
 * carry its payload by reference (qrnic_frame_buf_set_ref) and its headers
 * by description (qrnic_frame_buf_set_pkt). */
static void rx_dispatch(struct qrnic_dev *d, uint8_t *frame, size_t len)
{
	struct qrnic_pkt p QRNIC_NOINIT;	/* the parse or the description fills it */
	struct qrnic_qp *qp;
	uint32_t fl, ref_off = 0, ref_len = 0;
	const uint8_t *ref = qrnic_frame_buf_ref(frame, &ref_off, &ref_len);
	const struct qrnic_pkt *desc = qrnic_frame_buf_pkt(frame);
	/* a frame the host vouches for is checked only under a fault plan */
	bool check_icrc = qrnic_icrc_on(d) && (d->fault || !qrnic_frame_buf_vouched(frame));
	int rc;

	if (check_icrc) {	/* the check reads every byte: a lazy ICRC
				 * (qrnic_dev_set_lazy_icrc) is computed, a payload by
				 * reference and headers by description built */
		qrnic_frame_buf_fill(frame);
		ref = NULL;
		desc = NULL;
	}
	if (desc) {	/* built untouched by a device: what parsing it gives */
		qrnic_wire_pkt_received(desc, ref, ref ? ref_len : 0, &p);
		ref = NULL;	/* p.payload is the reference already */
		rc = QRNIC_WIRE_OK;
	} else {
		rc = qrnic_wire_parse_icrc(frame, len, &p, check_icrc);
	}
	if (ref && rc != QRNIC_WIRE_OK) {
		qrnic_frame_buf_fill(frame);	/* bytes for the Ethernet path */
		ref = NULL;
	}
	if (rc == QRNIC_WIRE_E_NOT_ROCE) {
		qrnic_frame_buf_fill(frame);
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
	if (p.opcode == QRNIC_OP_CNP) {	/* congestion control (cc.c) */
		qrnic_cc_rx_cnp(d, qp, &p);
		return;
	}
	fl = qrnic_opcode_flags(p.opcode);
	/* the BTH opcode's transport (its top three bits) must be the QP's;
	 * XRC (101): responses for an INI QP, requests for a TGT QP, which
	 * from here on are handled with the RC opcodes (the XRCETH is in p) */
	if (p.opcode >= QRNIC_OP_XRC) {
		if ((fl & QRNIC_HDR_RESPONSE) ? qp->type != QRNIC_QPT_XRC_INI
					      : qp->type != QRNIC_QPT_XRC_TGT) {
			rx_drop(d, QRNIC_STAT_RX_DROP_MALFORMED, p.dqpn, p.psn, len);
			return;
		}
		p.opcode &= (uint8_t)~QRNIC_OP_XRC;
	} else if (p.opcode >= 0x60 ? qp->type != QRNIC_QPT_UD && qp->type != QRNIC_QPT_GSI
		   : p.opcode >= 0x20 ? qp->type != QRNIC_QPT_UC : qp->type != QRNIC_QPT_RC) {
		rx_drop(d, QRNIC_STAT_RX_DROP_MALFORMED, p.dqpn, p.psn, len);
		return;
	}
	/* timing: the packet is parsed on a processing unit after its QP
	 * context is looked up */
	qrnic_tm_begin(d);
	if (qrnic_timed(d)) {
		qrnic_tm_xlate(d, QRNIC_TM_QPC, qp->qpn);
		d->tm_t = qrnic_tm_pu(&d->tm, d->tm_t, d->tm.p.resp_pkt_cycles);
		d->tm_cycles = d->tm.p.ack_cycles;	/* what it sends back: ACK/NAK */
	}
	if ((p.traffic_class & QRNIC_ECN_MASK) == QRNIC_ECN_CE)
		qrnic_cc_np_ce(d, qp, &p);	/* the notification point (cc.c) */
	if (fl & QRNIC_HDR_RESPONSE)
		qrnic_comp_packet(d, qp, &p);
	else
		qrnic_resp_packet(d, qp, &p);
	if (qrnic_timed(d) && d->tm_t > qp->tm_resp && !(fl & QRNIC_HDR_RESPONSE))
		qp->tm_resp = d->tm_t;
	qrnic_tm_end(d);
}

static void rx_dispatch_each(void *opaque, uint8_t *buf, size_t len)
{
	struct qrnic_dev *d = opaque;

	if (d->rx_skip) {	/* taken whole already (qrnic_resp_write_train) */
		d->rx_skip--;
		qrnic_frame_buf_free(buf);
		return;
	}
	rx_dispatch(d, buf, len);
	qrnic_frame_buf_free(buf);
}

/*
 * A train (struct qrnic_train): its packets go to the responder whole
 * when they are WRITE packets of an RC QP that takes them all in order
 * now (qrnic_resp_write_train: the same checks and the same outcome as one
 * by one); whatever it does not take goes packet by packet, as the frames
 * the train stands for.  Takes buf.
 */
static void rx_train(struct qrnic_dev *d, uint8_t *buf, size_t len)
{
	const struct qrnic_train *t = qrnic_frame_buf_train(buf);
	const struct qrnic_pkt *desc = qrnic_frame_buf_pkt(buf);
	struct qrnic_pkt p QRNIC_NOINIT;	/* pkt_received fills it */
	struct qrnic_qp *qp;
	uint32_t taken = 0;

	if (!desc) {	/* cannot be: a train is built by description */
		qrnic_frame_buf_train_split(buf, rx_dispatch_each, d);
		return;
	}
	qrnic_wire_pkt_received(desc, t->seg[0].src, t->seg[0].len, &p);
	/* what rx_dispatch would find for each packet alike: the GID ours,
	 * not multicast, the QP an RC QP, the packets not marked CE; the
	 * device untimed and untraced (a time and a record per packet) */
	qp = qrnic_qp_get(d, p.dqpn);
	if (qp && qp->type == QRNIC_QPT_RC && !d->tm.enabled && !qrnic_tracing(d) &&
	    (p.traffic_class & QRNIC_ECN_MASK) != QRNIC_ECN_CE &&
	    !qrnic_gid_is_mcast(p.dgid) && gid_is_local(d, p.dgid)) {
		taken = qrnic_resp_write_train(d, qp, &p, t);
		if (taken) {
			qrnic_stat_add(d, QRNIC_STAT_RX_PACKETS, taken);
			qrnic_stat_add(d, QRNIC_STAT_RX_BYTES, len + qrnic_train_bytes(t, taken));
		}
	}
	if (taken == t->n) {
		qrnic_frame_buf_free(buf);
		return;
	}
	d->rx_skip = taken;
	qrnic_frame_buf_train_split(buf, rx_dispatch_each, d);
	d->rx_skip = 0;
}

/* Dispatch up to 'budget' frames from the receive queue, oldest first.
 * Returns true if there was any. */
bool qrnic_rx_run(struct qrnic_dev *d, uint32_t budget)
{
	uint32_t n;

	for (n = 0; n < budget && d->rxq_head != d->rxq_tail; n++) {
		struct qrnic_frame *f = &d->rxq[d->rxq_head % QRNIC_RXQ_DEPTH];
		uint8_t *buf = f->data;

		/* in the receive buffer until the pipeline takes it (pfc.c) */
		if (f->prio & QRNIC_FRAME_IN_RXB) {
			if (qrnic_rxb_on(d) && !qrnic_rxb_due(d, f, true))
				break;
			qrnic_rxb_taken(d, f);
		}

		f->data = NULL;
		d->rxq_head++;
		if (!buf)	/* a slot of a train (rx_enqueue) */
			continue;
		if (qrnic_frame_buf_train(buf)) {
			rx_train(d, buf, f->len);
			continue;
		}
		rx_dispatch(d, buf, f->len);
		qrnic_frame_buf_free(buf);
	}
	return n > 0;
}

/* Whether the frame at the head of the receive queue may be taken now. */
bool qrnic_rxq_ready(struct qrnic_dev *d)
{
	const struct qrnic_frame *f = &d->rxq[d->rxq_head % QRNIC_RXQ_DEPTH];

	return d->rxq_head != d->rxq_tail &&
	       (!(f->prio & QRNIC_FRAME_IN_RXB) || !qrnic_rxb_on(d) || f->start <= qrnic_now(d));
}

/* Drop every frame in the receive queue (the receive buffer is empty). */
void qrnic_rxq_clear(struct qrnic_dev *d)
{
	qrnic_rxb_reset(d);
	while (d->rxq_head != d->rxq_tail) {
		struct qrnic_frame *f = &d->rxq[d->rxq_head++ % QRNIC_RXQ_DEPTH];

		qrnic_frame_buf_free(f->data);
		f->data = NULL;
	}
	d->rxq_head = d->rxq_tail = 0;
}
