/* SPDX-License-Identifier: GPL-2.0-or-later */
/* qrnic device model: address vectors to packet headers, and packet transmit. */
#include "qrnic_internal.h"

/* The UDP source port of a QP's packets (RoCEv2 leaves it to the sender
 * as flow entropy): 0xc000 | the QPN's low 14 bits. */
static uint16_t udp_sport_of(uint32_t qpn)
{
	return (uint16_t)(0xc000 | (qpn & 0x3fff));
}

int qrnic_pkt_fill_av(struct qrnic_dev *d, struct qrnic_pkt *p, const struct qrnic_av *av,
		      const struct qrnic_qp *qp)
{
	uint32_t src_qpn = qp->qpn;
	const struct qrnic_gid_entry *sg;

	if (av->sgid_index >= d->cfg.gid_tbl_len || !d->gid[av->sgid_index].valid)
		return QRNIC_VERR_BAD_AH;
	sg = &d->gid[av->sgid_index];
	memcpy(p->dmac, av->dmac, 6);
	memcpy(p->smac, d->cfg.mac, 6);
	memcpy(p->sgid, sg->gid, 16);
	memcpy(p->dgid, av->dgid, 16);
	p->ipv6 = av->net_type == QRNIC_NET_IPV6;
	p->traffic_class = av->traffic_class;
	/* congestion control on: ECN-capable unless the AV sets ECN bits (12.15) */
	if (qrnic_cc_algo_of(d, qp) && !(p->traffic_class & QRNIC_ECN_MASK))
		p->traffic_class |= QRNIC_ECN_ECT0;
	p->hop_limit = av->hop_limit ? av->hop_limit : 64;
	p->flow_label = av->flow_label & 0xfffff;
	p->udp_sport = udp_sport_of(src_qpn);
	p->pkey = 0xffff;
	return QRNIC_VERR_NONE;
}

/* The buffer the next frame is built in: a frame buffer that goes out with
 * the frame, or the spare one inside the device if none could be had.
 * Its byte at payload_off is 64-byte aligned, unless payload_off is 0
 * (the payload is not read into it, or already is). */
static uint8_t *txbuf(struct qrnic_dev *d, size_t payload_off)
{
	if (d->txbuf && payload_off && ((uintptr_t)(d->txbuf + payload_off) & 63)) {
		qrnic_frame_buf_free(d->txbuf);		/* empty, but misaligned for it */
		d->txbuf = NULL;
	}
	if (!d->txbuf)
		d->txbuf = qrnic_frame_buf_alloc_at(QRNIC_MAX_FRAME, payload_off);
	return d->txbuf ? d->txbuf : d->txbuf_spare;
}

/* Whether the frame goes to an in-process peer untouched and no checksum
 * covers its payload: a host that hands frame buffers over and maps its
 * memory (a simulator's own wire), a trusted wire (no ICRC), no fault
 * plan, IPv4 (IPv6's UDP checksum covers the payload).  Its payload then
 * goes by reference (tx_ref_safe) and its headers by description. */
/* Or with an ICRC, left to qrnic_frame_buf_fill (a lazy ICRC), with a
 * host that releases its mappings (ops->dma_unmap: QEMU's hand-over
 * between qrnic ports, hw/qrnic.c): the headers are built, the payload
 * goes by reference. */
static bool tx_lazy_ref(const struct qrnic_dev *d)
{
	return d->lazy_icrc && !d->fault && d->ops->dma_unmap;
}

static bool tx_untouched(const struct qrnic_dev *d, const struct qrnic_pkt *p)
{
	return d->ops->dma_map && d->ops->tx_frame_buf && !p->ipv6 &&
	       (!qrnic_icrc_on(d) || tx_lazy_ref(d));
}

/* Whose payload may be read when the frame arrives rather than when it
 * leaves, on any host: RC and XRC, whose requests complete on the peer's
 * ACK, after it has read the payload.  A UC or UD request completes when
 * it leaves, and its buffer may change while the frame is on the wire or
 * waits in the peer's receive queue.  Not covered by a WR: a READ
 * response's source, and a request whose QP is destroyed while its frame
 * is on the way; the bytes are then read later than a NIC would
 * (docs/qemu.md section 5 says why that window was left). */
static bool tx_ref_safe(const struct qrnic_pkt *p)
{
	return p->opcode < 0x20 || (p->opcode & 0xe0) == QRNIC_OP_XRC;	/* RC: 000x xxxx */
}

/*
 * Trains (qrnic_dev_set_trains; struct qrnic_train): the packets of an RC
 * WRITE message that leave one after the other, each by description with
 * its payload by reference, go as one frame buffer of up to
 * QRNIC_TRAIN_MAX packets.  Only untimed (each packet of a timed device
 * leaves at its own time) and untraced (a record per packet), and only
 * while the payload goes by reference with a lazy ICRC (tx_lazy_ref).
 * The train leaves when its message's last packet joins it, when it is
 * full, before any other frame of the device (qrnic_tx, qrnic_tx_buf) and
 * at the end of the requester's step (qrnic_req_step): frames leave in the
 * order they were built, as before.
 */
bool qrnic_trains_form(const struct qrnic_dev *d)
{
	return d->trains && tx_lazy_ref(d) && !qrnic_timed(d) && !qrnic_tracing(d);
}

static bool train_starts(const struct qrnic_dev *d, const struct qrnic_pkt *p)
{
	return qrnic_trains_form(d) &&
	       (p->opcode == QRNIC_OP_RC_WRITE_FIRST || p->opcode == QRNIC_OP_RC_WRITE_MIDDLE);
}

/* Whether a packet to this peer (QPN, MAC, UDP source port) with this PSN
 * is the next of the train being built: the one question of train_joins()
 * (a packet description) and qrnic_train_continues() (a QP). */
static inline bool train_next_of(const struct qrnic_dev *d, uint32_t dqpn, uint32_t psn,
				 uint16_t sport, const uint8_t *dmac)
{
	const struct qrnic_pkt *p0 = d->train_p0;

	return dqpn == p0->dqpn && psn == ((p0->psn + d->train->n) & 0xffffffu) &&
	       sport == p0->udp_sport && !memcmp(dmac, p0->dmac, 6);
}

static bool train_joins(struct qrnic_dev *d, const struct qrnic_pkt *p)
{
	return (p->opcode == QRNIC_OP_RC_WRITE_MIDDLE || p->opcode == QRNIC_OP_RC_WRITE_LAST) &&
	       train_next_of(d, p->dqpn, p->psn, p->udp_sport, p->dmac) &&
	       !p->ipv6 && !qrnic_timed(d) && !qrnic_tracing(d);
}

void qrnic_train_flush(struct qrnic_dev *d)
{
	uint8_t *buf = d->train_buf;

	d->train_buf = NULL;
	if (buf) {
		qrnic_frame_buf_train_single(buf);	/* a train of one is a frame */
		qrnic_tx_buf(d, buf, d->train_len);
	}
}

/* Start the payload reference of the next frame (d->txref) at base, for a
 * frame of this opcode; what a frame never sent still held goes back. */
static void txref_start(struct qrnic_dev *d, bool on, uint8_t *base, uint8_t opcode)
{
	if (d->txref.nmap)
		qrnic_txref_drop(d, false);
	d->txref.on = on;
	d->txref.base = base;
	d->txref.len = 0;
	d->txref.opcode = opcode;	/* the offset follows from it (IPv4) */
}

/*
 * The requester's shortcut for a train's next packet (requester.c
 * train_next): a train is built within one requester step and leaves at
 * its end (qrnic_req_step), so one being built is the stepping QP's, and
 * its first packet's headers are what that QP's AV gives every packet of
 * the step.  What train_joins() asks of a packet description, asked of
 * the QP: the same peer (QPN, MAC, UDP source port) and the next PSN.
 */
bool qrnic_train_continues(const struct qrnic_dev *d, const struct qrnic_qp *qp, uint32_t psn)
{
	return d->train_buf &&
	       train_next_of(d, qp->attr.dest_qpn, psn, udp_sport_of(qp->qpn), qp->attr.av.dmac);
}

/* Read len bytes at offset off of an SGL by reference only (the mappings
 * into d->txref, for qrnic_train_add): as the payload of a frame by
 * reference is read (qrnic_tx_payload, qrnic_dma_read), but a payload
 * that is not one run of host memory is not read at all.  Returns whether
 * it was; if not, nothing is held, copied or counted, and the packet goes
 * the general way. */
bool qrnic_train_read(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_sge *sge,
		      uint32_t nsge, uint32_t off, uint32_t len)
{
	bool ok;

	/* only the addresses count: nothing is written at base */
	txref_start(d, true, d->txbuf_spare, QRNIC_OP_RC_WRITE_MIDDLE);
	d->txref.only = true;
	ok = qrnic_sgl_read(d, pdn, sge, nsge, off, d->txbuf_spare, len) == QRNIC_VERR_NONE &&
	     d->txref.on && d->txref.len == len;
	if (!ok && d->txref.nmap)
		qrnic_txref_drop(d, false);
	d->txref.on = d->txref.only = false;
	return ok;
}

/* Packets are on train t: their AckReq bits (at their places); the
 * train's last opcode and SE so far; the train leaves when full or with
 * its message's last packet. */
static void train_added(struct qrnic_dev *d, struct qrnic_train *t, uint32_t ackreq,
			uint8_t opcode, bool se)
{
	t->ackreq |= ackreq;
	t->last_opcode = opcode;
	t->last_se = se;
	if (t->n == QRNIC_TRAIN_MAX || opcode == QRNIC_OP_RC_WRITE_LAST)
		qrnic_train_flush(d);
}

/* The payload read by reference (d->txref) goes on the train being built
 * as its next packet, opcode WRITE_MIDDLE or WRITE_LAST. */
void qrnic_train_add(struct qrnic_dev *d, uint8_t opcode, bool ackreq, bool se)
{
	struct qrnic_train *t = d->train;
	uint32_t i = t->n++;

	t->seg[i].src = d->txref.src;
	t->seg[i].len = d->txref.len;
	t->seg[i].nmap = d->txref.nmap;
	for (uint32_t j = 0; j < d->txref.nmap; j++)	/* <= QRNIC_REF_MAPS */
		t->map[i][j] = d->txref.map[j];
	d->txref.nmap = 0;
	d->txref.len = 0;
	train_added(d, t, (uint32_t)ackreq << i, opcode, se);
}

/*
 * The packets of a run of host memory mapped once for several
 * (qrnic_sgl_map_run): the first of them holds the mapping, the others
 * are marked borrowed.  The mapping goes back with the train (freed, or
 * taken whole by the responder) or, where the train is split, with the
 * holder's frame; a borrowed packet's frame then gets its bytes at the
 * split, while the holder's mapping is still out
 * (qrnic_frame_buf_train_split).
 */
void qrnic_train_add_run(struct qrnic_dev *d, const uint8_t *src, uint32_t run, uint32_t mtu,
			 uint32_t ackreq, bool last, bool se)
{
	struct qrnic_train *t = d->train;
	uint32_t i0 = t->n, n = 0;

	for (uint32_t off = 0; off < run; off += mtu, n++) {	/* <= QRNIC_TRAIN_MAX - i0 */
		t->seg[i0 + n].src = src + off;
		t->seg[i0 + n].len = run - off < mtu ? run - off : mtu;
		t->seg[i0 + n].nmap = 0;
	}
	if (d->ops->dma_unmap) {
		t->seg[i0].nmap = 1;
		t->map[i0][0].ptr = src;
		t->map[i0][0].len = run;
	}
	/* i0 >= 1 (a train starts with its frame's own packet): i0 + n <= 32 */
	t->borrowed |= (uint32_t)(((1ull << (n - 1)) - 1) << (i0 + 1));
	t->n += n;
	train_added(d, t, ackreq << i0, last ? QRNIC_OP_RC_WRITE_LAST : QRNIC_OP_RC_WRITE_MIDDLE, se);
}

uint8_t *qrnic_tx_payload(struct qrnic_dev *d, const struct qrnic_pkt *p)
{
	size_t off = qrnic_wire_payload_off(p->ipv6, p->opcode);
	uint8_t *buf;

	/* an unknown opcode: anywhere that fits, the build will refuse it */
	if (!off)
		off = QRNIC_MAX_HDR_LEN;
	/* on a cache line of its own: the DMA into it is a co-aligned copy
	 * for aligned host buffers, as is the responder's out of it */
	buf = txbuf(d, off);
	txref_start(d, buf == d->txbuf && tx_untouched(d, p) && tx_ref_safe(p), buf + off,
		    p->opcode);
	return buf + off;
}

void qrnic_send_pkt(struct qrnic_dev *d, const struct qrnic_pkt *p, const void *payload,
		    uint32_t paylen)
{
	uint8_t *buf = txbuf(d, 0);
	const uint8_t *ref = NULL;
	size_t len;

	if (d->txref.on) {	/* the payload read by reference (dma_read_ref) */
		d->txref.on = false;
		/* the frame it was read for (same opcode: the build finds the
		 * payload in place and leaves it there), else the bytes; with
		 * an ICRC only if it is left to qrnic_frame_buf_fill */
		if (d->txref.len && payload == d->txref.base && paylen == d->txref.len &&
		    p->opcode == d->txref.opcode && !p->ipv6 && buf == d->txbuf &&
		    (!qrnic_icrc_on(d) || tx_lazy_ref(d)))
			ref = d->txref.src;
		else
			qrnic_txref_drop(d, true);
	}
	if (buf == d->txbuf && ref && d->train_buf && train_joins(d, p)) {
		/* the next packet of the train being built: the buffer stays
		 * for the next frame */
		qrnic_train_add(d, p->opcode, p->ackreq, p->se);
		return;
	}
	/* Headers by description where nothing will read them unless it
	 * builds them first (qrnic_frame_buf_fill): the packet goes with the
	 * frame buffer and the peer takes it as it would parse it.  The
	 * payload, if any, is by reference (no bytes of the frame are built);
	 * a reference was only taken where tx_untouched() held, which with
	 * an ICRC means a lazy one (tx_lazy_ref): the ICRC is then left to
	 * the fill too, after the headers (QEMU's hand-over between qrnic
	 * ports: no header build and no parse per frame, ~9 % of a T1 WRITE
	 * stream's main loop, perf, issue 23). */
	len = 0;
	if (ref || (!paylen && buf == d->txbuf && tx_untouched(d, p))) {
		len = qrnic_wire_frame_len(false, p->opcode, paylen);
		if (len && len <= QRNIC_MAX_FRAME) {
			qrnic_frame_buf_set_pkt(buf, p);
			if (qrnic_icrc_on(d))
				qrnic_frame_buf_set_icrc_pending(buf, len);
		} else {
			len = 0;	/* the build below refuses it */
		}
	}
	if (!len) {
		/* a lazy ICRC (qrnic_dev_set_lazy_icrc): IPv4 only (IPv6's UDP
		 * checksum covers the ICRC), in a buffer that leaves with it */
		bool lazy = d->lazy_icrc && qrnic_icrc_on(d) && !p->ipv6 && buf == d->txbuf;

		len = qrnic_wire_build_icrc(p, payload, paylen, buf, QRNIC_MAX_FRAME,
					    qrnic_icrc_on(d) && !lazy);
		if (len && lazy)
			qrnic_frame_buf_set_icrc_pending(buf, len);
	}

	if (!len && ref)
		qrnic_txref_drop(d, false);
	if (!len) {
		qrnic_guest_err(d, err_build_packet, (p->opcode, paylen),
				"qrnic: cannot build opcode 0x%x with %u bytes", p->opcode, paylen);
		return;
	}
	if (buf == d->txbuf) {
		if (d->train_buf)
			qrnic_train_flush(d);
		if (ref) {
			qrnic_frame_buf_set_ref(buf, (uint32_t)(d->txref.base - buf), ref, paylen);
			if (d->txref.nmap)	/* the buffer holds the mappings now */
				qrnic_frame_buf_set_maps(buf, d->ops->dma_unmap, d->txref.map,
							 d->txref.nmap);
			d->txref.nmap = 0;
		}
		d->txbuf = NULL;	/* it leaves with the frame */
		if (ref && train_starts(d, p)) {
			d->train = qrnic_frame_buf_train_start(buf);
			d->train_p0 = qrnic_frame_buf_pkt(buf);
			d->train_buf = buf;
			d->train_len = len;
			return;
		}
		qrnic_tx_buf(d, buf, len);
	} else {
		qrnic_tx(d, buf, len);
	}
	/* traced when it leaves the port (timed) or now; the clock is read
	 * only for a record (one read per frame was ~5 % of a QEMU main loop
	 * moving 1 MiB WRITEs between two ports, docs/qemu.md section 13) */
	if (qrnic_tracing(d))
		qrnic_trace_at(d, qrnic_timed(d) ? d->tm_depart : qrnic_now(d), QRNIC_TR_TX, p->dqpn,
			       p->psn, p->opcode, (uint32_t)len, 0);
}
