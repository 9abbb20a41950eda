/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: fault injection, the engine (interface: qrnic_fault.h,
 * rule grammar and semantics: docs/faults.md, the rule parser:
 * fault_parse.c).
 *
 * The device keeps d->fault == NULL until the first rule is added, so a
 * device without faults pays one pointer test per hook.  The hooks:
 *
 *   qrnic_fault_tx / qrnic_fault_rx   qrnic_tx (device.c), qrnic_dev_rx_frame (rx.c)
 *   qrnic_fault_dma                   qrnic_dma_read / qrnic_dma_write (device.c)
 *   qrnic_fault_cqe                   qrnic_cq_post (cq.c)
 *   qrnic_fault_eqe                   qrnic_eq_post (cq.c)
 *   qrnic_fault_admin                 qrnic_fw_exec (firmware/admin.c)
 *   qrnic_fault_admin_hang            qrnic_fw_admin_run (firmware/admin.c)
 *   qrnic_fault_event                 qrnic_dev_timer_fire (events.c), QRNIC_EVK_FAULT events
 *   qrnic_fault_reset / _free         qrnic_dev_reset / qrnic_dev_free
 *
 * Frames that the wire faults send on (duplicates, corrupted copies, frames
 * released by delay/reorder) re-enter qrnic_tx / qrnic_dev_rx_frame with
 * fs->bypass set, so they are not shown to the rules a second time.
 */
#include <stdio.h>
#include <stdlib.h>

#include "qrnic_fault_rule.h"

static const struct kind_desc *const kinds = qrnic_fault_kinds;	/* fault_parse.c */

/* ---- small helpers ---------------------------------------------------------- */
static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}


static void info(struct qrnic_dev *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void info(struct qrnic_dev *d, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	if (!d->ops->log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	d->ops->log(d->opaque, QRNIC_LOG_INFO, buf);
}

static void count_fault(struct qrnic_dev *d)
{
	d->fault->injected++;
	qrnic_stat_add(d, QRNIC_STAT_FAULTS_INJECTED, 1);
}

static bool active(const struct frule *r, uint64_t now)
{
	return now >= r->start && now < r->end;
}

/* The filters passed: count the match, then skip / nth / count / prob. */
static bool fire(struct frule *r)
{
	uint64_t e;

	r->matched++;
	if (r->fired >= r->count)
		return false;
	if (r->matched <= r->skip)
		return false;
	e = r->matched - r->skip;
	if (r->nth > 1 && e % r->nth)
		return false;
	if (r->ppm < 1000000 && splitmix(&r->rng) % 1000000 >= r->ppm)
		return false;
	r->fired++;
	if (r->fired >= r->count)
		r->done = true;
	return true;
}

/* ---- frames ------------------------------------------------------------------------ */
struct finfo {
	bool roce, ipv6;
	uint8_t opcode, syn, ackcat;
	uint32_t dqpn, psn;
	uint32_t l3, l4, bth, pay, pay_end, end;	/* offsets; end = after the ICRC */
	bool hdr_ok;				/* BTH + extension headers fit */
};

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void frame_parse(const uint8_t *f, size_t len, struct finfo *fi)
{
	uint32_t l3 = QRNIC_ETH_HLEN, l4, end, hl, pad;
	uint16_t et;

	memset(fi, 0, sizeof(*fi));
	if (len < QRNIC_ETH_HLEN || len > SCRATCH_LEN)
		return;
	et = be16(f + 12);
	if (et == 0x0800) {
		uint32_t ihl, tot;

		if (len < l3 + QRNIC_IPV4_HLEN || f[l3 + 9] != 17)
			return;
		ihl = (f[l3] & 0xfu) * 4u;
		tot = be16(f + l3 + 2);
		if (ihl < QRNIC_IPV4_HLEN)
			return;
		l4 = l3 + ihl;
		end = (l3 + tot <= len && tot >= ihl) ? l3 + tot : (uint32_t)len;
	} else if (et == 0x86dd) {
		if (len < l3 + QRNIC_IPV6_HLEN || f[l3 + 6] != 17)
			return;
		l4 = l3 + QRNIC_IPV6_HLEN;
		end = l4 + be16(f + l3 + 4) <= len ? l4 + be16(f + l3 + 4) : (uint32_t)len;
		fi->ipv6 = true;
	} else {
		return;
	}
	if (end < l4 + QRNIC_UDP_HLEN + QRNIC_BTH_LEN + QRNIC_ICRC_LEN ||
	    be16(f + l4 + 2) != QRNIC_ROCEV2_UDP_PORT)
		return;
	fi->roce = true;
	fi->l3 = l3;
	fi->l4 = l4;
	fi->end = end;
	fi->bth = l4 + QRNIC_UDP_HLEN;
	fi->opcode = f[fi->bth];
	fi->dqpn = (uint32_t)f[fi->bth + 5] << 16 | (uint32_t)f[fi->bth + 6] << 8 | f[fi->bth + 7];
	fi->psn = (uint32_t)f[fi->bth + 9] << 16 | (uint32_t)f[fi->bth + 10] << 8 | f[fi->bth + 11];
	hl = qrnic_opcode_hdr_len(fi->opcode);
	fi->pay = fi->pay_end = fi->bth + QRNIC_BTH_LEN;
	if (hl && fi->bth + hl + QRNIC_ICRC_LEN <= end) {
		fi->hdr_ok = true;
		fi->pay = fi->bth + hl;
		pad = (f[fi->bth + 1] >> 4) & 3;
		fi->pay_end = end - QRNIC_ICRC_LEN >= fi->pay + pad ? end - QRNIC_ICRC_LEN - pad
								     : fi->pay;
		if (qrnic_opcode_flags(fi->opcode) & QRNIC_HDR_AETH) {
			fi->syn = f[fi->bth + QRNIC_BTH_LEN];
			switch (fi->syn >> 5) {
			case 0: fi->ackcat = AK_ACK; break;
			case 1: fi->ackcat = AK_RNR; break;
			case 3: fi->ackcat = (fi->syn & 0x1f) ? AK_NAK : AK_SEQ; break;
			default: fi->ackcat = AK_NAK; break;
			}
		}
	}
}

static bool psn_in(const struct frule *r, uint32_t psn)
{
	return qrnic_psn_diff(psn, r->psn_lo) >= 0 && qrnic_psn_diff(r->psn_hi, psn) >= 0;
}

static bool wire_match(const struct frule *r, const struct finfo *fi)
{
	if (!fi->roce)
		return false;
	if (r->qp >= 0 && fi->dqpn != (uint32_t)r->qp)
		return false;
	if (r->psn_set && !psn_in(r, fi->psn))
		return false;
	if (r->op_set) {
		if (!opmask_has(r, fi->opcode))
			return false;
		if (fi->opcode == QRNIC_OP_RC_ACK && !(r->ack_mask & fi->ackcat))
			return false;
	}
	switch (r->kind) {
	case FK_CORRUPT:
		if (r->part == PART_PAYLOAD)
			return fi->hdr_ok && fi->pay_end > fi->pay &&
			       (r->off < 0 || (uint64_t)r->off < fi->pay_end - fi->pay);
		if (r->part == PART_HEADER)
			return fi->hdr_ok &&
			       (r->off < 0 || (uint64_t)r->off < fi->pay - fi->bth - 1);
		return true;
	case FK_NAK:
		return fi->hdr_ok && fi->opcode == QRNIC_OP_RC_ACK && fi->ackcat == AK_ACK;
	default:
		return true;
	}
}

/* Send a frame on, past the rules. */
static void forward(struct qrnic_dev *d, int dir, const uint8_t *f, size_t len)
{
	d->fault->bypass++;
	if (dir == DIR_TX)
		qrnic_tx(d, f, len);
	else
		qrnic_dev_rx_frame(d, f, len);
	d->fault->bypass--;
}

static void held_free(struct qrnic_fault_state *fs, struct fheld *h)
{
	if (h->why == HELD_REORDER && h->countdown >= 0)
		fs->nreorder[h->dir]--;
	free(h->data);
	h->data = NULL;
	h->why = 0;
	h->gen++;
	fs->nheld--;
}

static struct fheld *held_add(struct qrnic_dev *d, int dir, uint8_t why, const uint8_t *f,
			      size_t len)
{
	struct qrnic_fault_state *fs = d->fault;
	struct fheld *h = NULL;

	if (fs->nheld < QRNIC_FAULT_MAX_HELD)
		for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD; i++)
			if (!fs->held[i].why) {
				h = &fs->held[i];
				break;
			}
	if (h)
		h->data = malloc(len ? len : 1);
	if (!h || !h->data) {
		fs->held_overflow++;
		return NULL;
	}
	memcpy(h->data, f, len);
	h->len = (uint32_t)len;
	h->why = why;
	h->dir = (uint8_t)dir;
	h->seq = fs->held_seq++;
	h->countdown = -1;
	h->tag = 0;
	fs->nheld++;
	return h;
}

/* Send on, in capture order, the held frames 'pick' selects, then free them. */
static void release_where(struct qrnic_dev *d, bool (*pick)(const struct fheld *, uint32_t),
			  uint32_t arg)
{
	struct qrnic_fault_state *fs = d->fault;
	uint32_t n = 0;

	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD && n < fs->nheld; i++) {
		if (fs->held[i].why && pick(&fs->held[i], arg)) {
			uint32_t j = n++;

			while (j > 0 && fs->held[fs->order[j - 1]].seq > fs->held[i].seq) {
				fs->order[j] = fs->order[j - 1];
				j--;
			}
			fs->order[j] = (uint16_t)i;
		}
	}
	for (uint32_t k = 0; k < n; k++) {
		struct fheld *h = &fs->held[fs->order[k]];
		uint8_t *data = h->data;
		uint32_t len = h->len;
		int dir = h->dir;

		h->data = NULL;		/* forward may re-enter: take the frame out first */
		held_free(fs, h);
		forward(d, dir, data, len);
		free(data);
	}
}

static bool pick_tag(const struct fheld *h, uint32_t tag)
{
	return h->why == HELD_REORDER && h->tag == tag;
}

static bool pick_zero(const struct fheld *h, uint32_t dir)
{
	return h->why == HELD_REORDER && h->dir == dir && h->countdown == 0;
}

/* A frame went through direction dir: count down the reorder bursts. */
static void tick(struct qrnic_dev *d, int dir)
{
	struct qrnic_fault_state *fs = d->fault;
	bool any = false;

	if (!fs->nreorder[dir])
		return;
	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD; i++) {
		struct fheld *h = &fs->held[i];

		if (h->why == HELD_REORDER && h->dir == dir && h->countdown > 0 && --h->countdown == 0)
			any = true;
	}
	if (any)
		release_where(d, pick_zero, (uint32_t)dir);
}

static void burst_close(struct qrnic_dev *d, struct frule *r)
{
	struct qrnic_fault_state *fs = d->fault;

	r->burst_left = 0;
	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD; i++) {
		struct fheld *h = &fs->held[i];

		if (h->why == HELD_REORDER && h->tag == r->burst_tag && h->countdown < 0) {
			h->countdown = (int32_t)r->release;
			fs->nreorder[h->dir]++;
		}
	}
}

static void capture(struct qrnic_dev *d, struct frule *r, int dir, const uint8_t *f, size_t len)
{
	struct fheld *h = held_add(d, dir, HELD_REORDER, f, len);

	if (!h) {
		/* no room: the frame is lost */
		if (r->burst_left)
			r->burst_left--;
		return;
	}
	h->tag = r->burst_tag;
	schedule(d, qrnic_now(d) + r->timeout, SUB_FRAME, (uint32_t)(h - d->fault->held), h->gen);
	if (r->burst_left)
		r->burst_left--;
	if (!r->burst_left)
		burst_close(d, r);
}

static void flip(struct frule *r, uint8_t *f, const struct finfo *fi)
{
	uint32_t lo, n, at;
	uint8_t mask;

	switch (r->part) {
	case PART_HEADER:
		lo = fi->bth;
		n = fi->pay - fi->bth - 1;	/* without BTH byte 4: the ICRC masks it */
		break;
	case PART_ICRC:
		lo = fi->end - QRNIC_ICRC_LEN;
		n = QRNIC_ICRC_LEN;
		break;
	default:
		lo = fi->pay;
		n = fi->pay_end - fi->pay;
		break;
	}
	at = r->off >= 0 ? (uint32_t)r->off : (uint32_t)(splitmix(&r->rng) % n);
	if (r->xor_mask >= 0)
		mask = (uint8_t)r->xor_mask;
	else if (r->off >= 0)
		mask = 0xff;
	else
		mask = (uint8_t)(1u << (splitmix(&r->rng) % 8));
	if (r->part == PART_HEADER && at >= 4)
		at++;
	f[lo + at] ^= mask;
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A forged NAK: new AETH syndrome, then the ICRC (and the IPv6 UDP checksum). */
static void forge_nak(struct frule *r, uint8_t *f, const struct finfo *fi)
{
	uint32_t icrc;

	f[fi->bth + QRNIC_BTH_LEN] = r->nak_syn == 0x20 ? (uint8_t)(0x20 | r->rnr_timer) : r->nak_syn;
	icrc = qrnic_icrc(f, fi->end);
	f[fi->end - 4] = (uint8_t)icrc;
	f[fi->end - 3] = (uint8_t)(icrc >> 8);
	f[fi->end - 2] = (uint8_t)(icrc >> 16);
	f[fi->end - 1] = (uint8_t)(icrc >> 24);
	if (fi->ipv6 && be16(f + fi->l4 + 6)) {
		uint32_t sum = 0, ulen = fi->end - fi->l4;

		put_be16(f + fi->l4 + 6, 0);
		for (uint32_t i = 0; i < 32; i += 2)
			sum += be16(f + fi->l3 + 8 + i);
		sum += ulen + 17;
		for (uint32_t i = 0; i + 1 < ulen; i += 2)
			sum += be16(f + fi->l4 + i);
		if (ulen & 1)
			sum += (uint32_t)f[fi->l4 + ulen - 1] << 8;
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		sum = ~sum & 0xffff;
		put_be16(f + fi->l4 + 6, (uint16_t)(sum ? sum : 0xffff));
	}
}

static void apply(struct qrnic_dev *d, struct frule *r, int dir, const uint8_t *f, size_t len,
		  const struct finfo *fi)
{
	struct qrnic_fault_state *fs = d->fault;
	struct fheld *h;

	count_fault(d);
	switch (r->kind) {
	case FK_DROP:
		return;
	case FK_DUP:
		forward(d, dir, f, len);
		for (uint32_t i = 0; i < r->copies; i++)
			forward(d, dir, f, len);
		tick(d, dir);
		return;
	case FK_CORRUPT:
	case FK_NAK:
		memcpy(fs->scratch, f, len);
		if (r->kind == FK_CORRUPT)
			flip(r, fs->scratch, fi);
		else
			forge_nak(r, fs->scratch, fi);
		forward(d, dir, fs->scratch, len);
		tick(d, dir);
		return;
	case FK_DELAY: {
		uint64_t t = r->delay_ns + (r->jitter ? splitmix(&r->rng) % (r->jitter + 1) : 0);

		h = held_add(d, dir, HELD_DELAY, f, len);
		if (h)
			schedule(d, qrnic_now(d) + t, SUB_FRAME, (uint32_t)(h - fs->held), h->gen);
		return;
	}
	case FK_REORDER:
		r->burst_tag = ++fs->next_tag;
		r->burst_left = r->hold;
		r->burst_dir = (uint8_t)dir;
		capture(d, r, dir, f, len);
		return;
	default:
		return;
	}
}

static bool wire(struct qrnic_dev *d, int dir, const uint8_t *f, size_t len)
{
	struct qrnic_fault_state *fs = d->fault;
	struct finfo fi;
	uint64_t now;

	if (fs->bypass || (!fs->ncls[FC_WIRE] && !fs->nreorder[dir]))
		return false;
	frame_parse(f, len, &fi);
	now = qrnic_now(d);
	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		if (kinds[r->kind].cls != FC_WIRE || !(r->dir & dir))
			continue;
		if (r->kind == FK_REORDER && r->burst_left) {
			/* a burst is being captured: take the next matching frames */
			if (r->burst_dir != dir || !wire_match(r, &fi))
				continue;
			r->matched++;
			capture(d, r, dir, f, len);
			return true;
		}
		if (!active(r, now) || !wire_match(r, &fi) || !fire(r))
			continue;
		apply(d, r, dir, f, len, &fi);
		return true;
	}
	if (!fs->nreorder[dir])
		return false;
	forward(d, dir, f, len);
	tick(d, dir);
	return true;
}

bool qrnic_fault_tx(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	return wire(d, DIR_TX, frame, len);
}

bool qrnic_fault_rx(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	return wire(d, DIR_RX, frame, len);
}

/* ---- device faults -------------------------------------------------------------------- */
bool qrnic_fault_dma(struct qrnic_dev *d, bool write, uint64_t addr, size_t len)
{
	struct qrnic_fault_state *fs = d->fault;
	uint64_t now;

	if (!fs->ncls[FC_DMA])
		return false;
	now = qrnic_now(d);
	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		if (r->kind != FK_DMA_FAIL || !(r->dir & (write ? DIR_RX : DIR_TX)))
			continue;
		if (r->range_set && !(addr < r->range_hi && r->range_lo < addr + len))
			continue;
		if (!active(r, now) || !fire(r))
			continue;
		count_fault(d);
		info(d, "qrnic: fault rule %d: DMA %s of %zu bytes at 0x%llx fails", r->id,
			    write ? "write" : "read", len, (unsigned long long)addr);
		return true;
	}
	return false;
}

/* Move a QP to ERR as a real completion error would; the flush (and the
 * flush CQEs) follow from the event heap, after the caller is done. */
static void qp_to_err(struct qrnic_dev *d, uint32_t qpn)
{
	struct qrnic_qp *qp = qrnic_qp_get(d, qpn);
	uint8_t old;

	if (!qp || qp->attr.qp_state == QRNIC_QPS_ERR || qp->attr.qp_state == QRNIC_QPS_RESET)
		return;
	old = qp->attr.qp_state;
	qp->attr.qp_state = QRNIC_QPS_ERR;
	qrnic_trace(d, QRNIC_TR_QP_STATE, qpn, 0, old, QRNIC_QPS_ERR, 0);
	schedule(d, 0, SUB_FLUSH, qpn, 0);
}

bool qrnic_fault_cqe(struct qrnic_dev *d, struct qrnic_cq *cq, struct qrnic_cqe *cqe)
{
	struct qrnic_fault_state *fs = d->fault;
	uint32_t cqn = (uint32_t)(cq - d->cq);
	uint64_t now;

	if (!fs->ncls[FC_CQE])
		return false;
	now = qrnic_now(d);
	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		if (kinds[r->kind].cls != FC_CQE || (r->cq >= 0 && (uint32_t)r->cq != cqn))
			continue;
		if (r->kind == FK_CQE_ERROR) {
			bool send = cqe->flags & QRNIC_CQE_F_SEND;

			if (cqe->status != QRNIC_WC_SUCCESS ||
			    (r->qp >= 0 && cqe->qpn != (uint32_t)r->qp) ||
			    (r->wc == 1 && !send) || (r->wc == 2 && send))
				continue;
		}
		if (!active(r, now) || !fire(r))
			continue;
		count_fault(d);
		if (r->kind == FK_CQ_OVERRUN) {
			info(d, "qrnic: fault rule %d: CQ %u overrun", r->id, cqn);
			return true;
		}
		info(d, "qrnic: fault rule %d: CQE of QP %u on CQ %u gets status %u", r->id,
			    cqe->qpn, cqn, r->status);
		cqe->status = r->status;
		cqe->vendor_err = QRNIC_VERR_INJECTED;
		if (!r->keep_state)
			qp_to_err(d, cqe->qpn);
		return false;
	}
	return false;
}

bool qrnic_fault_eqe(struct qrnic_dev *d, struct qrnic_eq *eq)
{
	struct qrnic_fault_state *fs = d->fault;
	uint32_t eqn = (uint32_t)(eq - d->eq);
	uint64_t now;

	if (!fs->ncls[FC_EQE])
		return false;
	now = qrnic_now(d);
	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		if (r->kind != FK_EQ_OVERFLOW)
			continue;
		if (r->eq == -2 ? !eq->async : (r->eq >= 0 && (uint32_t)r->eq != eqn))
			continue;
		if (!active(r, now) || !fire(r))
			continue;
		count_fault(d);
		return true;
	}
	return false;
}

static struct frule *admin_rule(struct qrnic_dev *d, int cls, uint8_t opcode)
{
	struct qrnic_fault_state *fs = d->fault;
	uint64_t now = qrnic_now(d);

	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		if ((int)kinds[r->kind].cls != cls || (r->admin_op >= 0 && r->admin_op != opcode))
			continue;
		if (active(r, now) && fire(r)) {
			count_fault(d);
			return r;
		}
	}
	return NULL;
}

uint8_t qrnic_fault_admin(struct qrnic_dev *d, uint8_t opcode)
{
	struct frule *r;

	if (!d->fault->ncls[FC_ADMIN])
		return QRNIC_AQ_OK;
	r = admin_rule(d, FC_ADMIN, opcode);
	if (!r)
		return QRNIC_AQ_OK;
	info(d, "qrnic: fault rule %d: admin command 0x%02x fails with status %u", r->id,
		    opcode, r->status);
	return r->status;
}

bool qrnic_fault_admin_hang(struct qrnic_dev *d, uint8_t opcode)
{
	struct qrnic_fault_state *fs = d->fault;
	struct frule *r;

	if (fs->aq_hung)
		return true;
	if (!fs->ncls[FC_HANG])
		return false;
	r = admin_rule(d, FC_HANG, opcode);
	if (!r)
		return false;
	info(d, "qrnic: fault rule %d: admin queue hangs at command 0x%02x until reset",
		    r->id, opcode);
	fs->aq_hung = true;
	return true;
}

/* ---- timed faults ------------------------------------------------------------------------- */
static void run_once(struct qrnic_dev *d, struct frule *r)
{
	struct qrnic_fault_state *fs = d->fault;
	struct qrnic_qp *qp;

	r->matched++;
	r->done = true;
	switch (r->kind) {
	case FK_LINK_DOWN:
		info(d, "qrnic: fault rule %d: link down", r->id);
		qrnic_dev_set_link(d, false);
		if (r->for_set) {
			fs->link_restore = true;
			fs->link_up_at = qrnic_now(d) + r->dur;
			schedule(d, fs->link_up_at, SUB_LINK, 0, ++fs->link_gen);
		}
		break;
	case FK_LINK_UP:
		fs->link_restore = false;
		fs->link_gen++;
		qrnic_dev_set_link(d, true);
		break;
	case FK_QP_ERROR:
		qp = qrnic_qp_get(d, (uint32_t)r->qp);
		if (!qp) {
			info(d, "qrnic: fault rule %d: no QP %lld", r->id, (long long)r->qp);
			return;
		}
		info(d, "qrnic: fault rule %d: QP %u to error", r->id, qp->qpn);
		qrnic_qp_error(d, qp, r->ev_type);
		break;
	case FK_FATAL:
		qrnic_fatal(d, r->code);
		break;
	case FK_EVENT:
		info(d, "qrnic: fault rule %d: async event %u handle %u", r->id, r->ev_type,
			    r->handle);
		qrnic_async_event(d, r->ev_type, r->handle, r->data);
		break;
	default:
		return;
	}
	r->fired++;
	count_fault(d);
}

void qrnic_fault_event(struct qrnic_dev *d, const struct qrnic_event *ev)
{
	struct qrnic_fault_state *fs = d->fault;
	uint32_t sub = ev->id >> SUB_SHIFT, idx = ev->id & SUB_MASK;
	struct fheld *h;
	struct frule *r;
	struct qrnic_qp *qp;

	if (!fs)
		return;
	switch (sub) {
	case SUB_FRAME:
		if (idx >= QRNIC_FAULT_MAX_HELD)
			return;
		h = &fs->held[idx];
		if (!h->why || h->gen != ev->gen)
			return;		/* released already */
		if (h->why == HELD_REORDER) {
			/* timeout: the whole burst goes, in order */
			uint32_t tag = h->tag;

			for (int i = 0; i < fs->nrules; i++)
				if (fs->rules[i].kind == FK_REORDER && fs->rules[i].burst_left &&
				    fs->rules[i].burst_tag == tag)
					fs->rules[i].burst_left = 0;
			release_where(d, pick_tag, tag);
		} else {
			uint8_t *data = h->data;
			uint32_t len = h->len;
			int dir = h->dir;

			h->data = NULL;
			held_free(fs, h);
			forward(d, dir, data, len);
			free(data);
		}
		return;
	case SUB_RULE:
		r = rule_by_id(fs, (int)idx);
		if (r && !r->done)
			run_once(d, r);
		return;
	case SUB_LINK:
		if (fs->link_restore && ev->gen == fs->link_gen) {
			fs->link_restore = false;
			qrnic_dev_set_link(d, true);
		}
		return;
	case SUB_FLUSH:
		qp = qrnic_qp_get(d, idx);
		if (qp && qp->attr.qp_state == QRNIC_QPS_ERR)
			qrnic_qp_flush(d, qp);
		return;
	default:
		return;
	}
}

void qrnic_fault_reset(struct qrnic_dev *d)
{
	struct qrnic_fault_state *fs = d->fault;

	if (!fs)
		return;
	/* The reset emptied the event heap: frames held inside the device are
	 * gone, timed rules and a pending link-up are queued again. */
	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD; i++) {
		if (fs->held[i].why) {
			held_free(fs, &fs->held[i]);
			fs->held_flushed++;
		}
	}
	memset(fs->nreorder, 0, sizeof(fs->nreorder));
	fs->aq_hung = false;
	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		r->burst_left = 0;
		if (kinds[r->kind].cls == FC_ONCE && !r->done)
			schedule(d, r->start, SUB_RULE, (uint32_t)r->id, 0);
	}
	if (fs->link_restore)
		schedule(d, fs->link_up_at, SUB_LINK, 0, fs->link_gen);
}

void qrnic_fault_free(struct qrnic_dev *d)
{
	struct qrnic_fault_state *fs = d->fault;

	if (!fs)
		return;
	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD; i++)
		free(fs->held[i].data);
	free(fs->rules);
	free(fs->scratch);
	free(fs);
	d->fault = NULL;
}
