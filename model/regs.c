/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: the registers (BAR0) and the doorbell pages (BAR2).
 * A write records what is pending and asks the host to run the device
 * (qrnic_schedule); no device work runs inside it.
 */
#include <stdlib.h>

#include "qrnic_internal.h"

/* ---- registers -------------------------------------------------------------- */
static uint32_t mac_lo(const struct qrnic_dev *d)
{
	const uint8_t *m = d->cfg.mac;

	return m[0] | (m[1] << 8) | (m[2] << 16) | ((uint32_t)m[3] << 24);
}

/* The device clock (QRNIC_REG_CLOCK_LO/HI, QRNIC_DB_CLOCK): the host's
 * clock, free running (a reset does not touch it).  A 64-bit read at
 * CLOCK_LO, or 32-bit reads of either half; anything else is 0. */
static bool clock_read(struct qrnic_dev *d, uint64_t off, unsigned size, uint64_t lo,
		       uint64_t *v)
{
	uint64_t now;

	if (off == lo && size == 8) {
		*v = qrnic_now(d);
		return true;
	}
	if ((off == lo || off == lo + 4) && size == 4) {
		now = qrnic_now(d);
		*v = off == lo ? (uint32_t)now : (uint32_t)(now >> 32);
		return true;
	}
	return false;
}

uint64_t qrnic_dev_reg_read(struct qrnic_dev *d, uint64_t off, unsigned size)
{
	uint64_t clk;
	uint32_t v;

	if (clock_read(d, off, size, QRNIC_REG_CLOCK_LO, &clk))
		return clk;
	if (size != 4 || (off & 3)) {
		if (!(size == 8 && off == QRNIC_REG_EQ_DB))
			qrnic_guest_err(d, err_mmio_read_size, (off, size),
					"qrnic: BAR0 read of size %u at 0x%llx: use 32-bit accesses",
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
		qrnic_guest_err(d, err_mmio_read_undefined, (off), "qrnic: read of undefined register 0x%llx",
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
		qrnic_guest_err(d, err_aq_ctrl_busy, (v),
				"qrnic: AQ_CTRL written while the admin queue is enabled");
		return;
	}
	if (log < 1 || log > QRNIC_AQ_MAX_LOG_DEPTH || !d->aq_sq_base || !d->aq_cq_base ||
	    (d->aq_sq_base & 0xfff) || (d->aq_cq_base & 0xfff)) {
		qrnic_guest_err(d, err_aq_bad_config, (log, d->aq_sq_base, d->aq_cq_base),
				"qrnic: admin queue enable with bad depth %u or base "
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
		qrnic_guest_err(d, err_aq_base_busy, (hi, v),
				"qrnic: ring base written while the ring is enabled");
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
			qrnic_tp_ub_eq_db_disabled(d, val);
			return;
		}
		if (size != 8) {
			qrnic_guest_err(d, err_eq_db_size, (size),
					"qrnic: EQ_DB needs one 64-bit write (got %u bytes)", size);
			qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
			return;
		}
		qrnic_eq_doorbell(d, (uint32_t)(val & QRNIC_EQ_DB_EQN_MASK),
				  (uint32_t)(val >> QRNIC_EQ_DB_CI_SHIFT), val & QRNIC_EQ_DB_ARM);
		return;
	}
	if (size != 4 || (off & 3)) {
		qrnic_guest_err(d, err_mmio_write_size, (off, size),
				"qrnic: BAR0 write of size %u at 0x%llx ignored",
				  size, (unsigned long long)off);
		return;
	}
	if (d->status & QRNIC_STATUS_FATAL && off != QRNIC_REG_CTRL && off != QRNIC_REG_SCRATCH) {
		qrnic_tp_ub_write_while_fatal(d, off, v);
		return;
	}

	switch (off) {
	case QRNIC_REG_CTRL:
		if (v & QRNIC_CTRL_RESET) {
			qrnic_dev_reset(d);
			return;
		}
		if (v & ~(QRNIC_CTRL_ENABLE))
			qrnic_guest_err(d, err_ctrl_reserved, (v), "qrnic: reserved CTRL bits 0x%x ignored", v);
		if (d->status & QRNIC_STATUS_FATAL) {
			qrnic_tp_ub_write_while_fatal(d, off, v);
			return;
		}
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
			qrnic_guest_err(d, err_aq_db_not_running, (v),
					"qrnic: admin doorbell while the admin queue is not running");
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
		qrnic_guest_err(d, err_mmio_write_ro, (off, v),
				"qrnic: write 0x%x to read-only or undefined register 0x%llx",
				  v, (unsigned long long)off);
	}
}

/* ---- doorbell pages ---------------------------------------------------------- */
uint64_t qrnic_dev_db_read(struct qrnic_dev *d, uint64_t off, unsigned size)
{
	uint64_t clk;

	/* every page, allocated or not: the clock is no secret of a context */
	if (clock_read(d, off % QRNIC_DB_PAGE_SIZE, size, QRNIC_DB_CLOCK, &clk))
		return clk;
	qrnic_guest_err(d, err_db_read, (off), "qrnic: read of doorbell page offset 0x%llx (write-only; "
			  "the clock is at 0x20)",
			  (unsigned long long)off);
	return 0;
}

/* A doorbell ignored: counted, its trace point err_db_* (name), logged. */
#define db_ignored(d, name, why, off, val)					\
	do {									\
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);		\
		qrnic_guest_err(d, name, (off, val), "qrnic: doorbell 0x%llx=0x%llx ignored: %s", \
				(unsigned long long)(off), (unsigned long long)(val), why); \
	} while (0)

/* ---- BlueFlame buffers (qrnic_regs.h QRNIC_DB_BF_*, spec 3.2.1) ---------------- */
void qrnic_bf_uctx_clear(struct qrnic_dev *d, uint32_t uctx)
{
	if (d->bf_stage && uctx < d->cfg.max_uctx) {
		free(d->bf_stage[uctx]);
		d->bf_stage[uctx] = NULL;
	}
}

void qrnic_bf_free_all(struct qrnic_dev *d)
{
	if (!d->bf_stage)
		return;
	for (uint32_t i = 0; i < d->cfg.max_uctx; i++)
		qrnic_bf_uctx_clear(d, i);
}

static struct qrnic_bf_stage *bf_stage(struct qrnic_dev *d, uint32_t page)
{
	if (!d->bf_stage)
		d->bf_stage = calloc(d->cfg.max_uctx, sizeof(*d->bf_stage));
	if (!d->bf_stage)
		return NULL;
	if (!d->bf_stage[page])
		d->bf_stage[page] = calloc(1, sizeof(*d->bf_stage[page]));
	return d->bf_stage[page];
}

static void bf_fallback(struct qrnic_dev *d, uint32_t qpn, uint32_t idx, uint32_t reason)
{
	qrnic_stat_add(d, QRNIC_STAT_BF_FALLBACKS, 1);
	qrnic_tp_ub_bf_fallback(d, qpn, idx, reason);
}

/*
 * A 64-bit store into BF buffer b of a doorbell page (off: within the BF
 * area).  Data words are staged; the control word is an SQ doorbell that
 * may carry the staged WQE.  The staged bytes are copied once into the
 * QP's BF copy here, and only that copy is validated and used later.
 */
static void bf_write(struct qrnic_dev *d, uint32_t page, uint32_t off, uint64_t val)
{
	uint32_t b = off / QRNIC_DB_BF_STRIDE, o = off % QRNIC_DB_BF_STRIDE;
	uint64_t dboff = (uint64_t)page * QRNIC_DB_PAGE_SIZE + QRNIC_DB_BF_BASE + off;
	struct qrnic_bf_stage *st = bf_stage(d, page);
	uint32_t qn = (uint32_t)(val & QRNIC_DB_QN_MASK);
	uint32_t pi = (uint32_t)(val >> QRNIC_DB_IDX_SHIFT);
	uint32_t nwords = (uint32_t)(val >> QRNIC_BF_NWORDS_SHIFT) & QRNIC_BF_NWORDS_MASK;
	uint32_t want, reason = 0, idx;
	struct qrnic_qp *qp;

	if (o < QRNIC_BF_MAX_WQE) {
		if (!st) {	/* host out of memory: the control word falls back */
			db_ignored(d, err_db_bad_offset, "no memory for the BF buffer", dboff, val);
			return;
		}
		for (int i = 0; i < 8; i++)	/* the store's bytes, little endian */
			st->data[b][o + i] = (uint8_t)(val >> (8 * i));
		st->written[b] |= 1u << (o / 8);
		return;
	}
	if (o != QRNIC_BF_CTRL) {
		db_ignored(d, err_db_bad_offset, "undefined offset in a BF buffer", dboff, val);
		return;
	}
	qp = qrnic_qp_get(d, qn);
	if (!qp || qp->uctx != page) {
		if (st)
			st->written[b] = 0;
		db_ignored(d, err_db_no_qp, "no such QP in this context", dboff, val);
		return;
	}
	idx = qp->sq_pi;	/* the BF WQE's index if the producer moves by one */
	want = nwords >= 8 && nwords <= QRNIC_BF_MAX_WQE / 8
		? (nwords == 32 ? 0xffffffffu : (1u << nwords) - 1) : 0;
	if (!st || (st->written[b] & want) != want)
		reason = 1;
	if (!want || (nwords * 8u > (1u << qp->sq_wqe_shift)))
		reason = 2;
	else if (pi != idx + 1)
		reason = 3;
	if (!reason && qp->sq_addr) {
		if (!qp->bf)
			qp->bf = calloc(1, sizeof(*qp->bf));
		if (qp->bf) {
			qp->bf->index = idx;
			qp->bf->nbytes = nwords * 8;
			memcpy(qp->bf->data, st->data[b], nwords * 8u);
			qp->bf->valid = true;
		} else {
			reason = 1;
		}
	}
	if (st)
		st->written[b] = 0;
	qrnic_stat_add(d, QRNIC_STAT_DOORBELLS, 1);
	qrnic_trace(d, QRNIC_TR_DOORBELL, qn, 0, 0, pi, 0);
	if (!qrnic_qp_doorbell(d, qp, true, pi, want ? nwords * 8 + 8 : 8)) {
		if (!reason && qp->bf)
			qp->bf->valid = false;
		reason = reason ? reason : 4;
	}
	if (reason)
		bf_fallback(d, qn, pi - 1, reason);
	else
		qrnic_stat_add(d, QRNIC_STAT_BF_POSTS, 1);
}

void qrnic_dev_db_write(struct qrnic_dev *d, uint64_t off, uint64_t val, unsigned size)
{
	uint64_t page = off / QRNIC_DB_PAGE_SIZE;
	uint32_t reg = (uint32_t)(off % QRNIC_DB_PAGE_SIZE);
	uint32_t qn = (uint32_t)(val & QRNIC_DB_QN_MASK);
	uint32_t idx = (uint32_t)(val >> QRNIC_DB_IDX_SHIFT);

	if (size != 8 || (off & 7)) {
		db_ignored(d, err_db_size, "doorbells need one aligned 64-bit write", off, val);
		return;
	}
	if (!(d->ctrl & QRNIC_CTRL_ENABLE) || (d->status & QRNIC_STATUS_FATAL)) {
		db_ignored(d, err_db_disabled, "device not enabled", off, val);
		return;
	}
	if (page >= d->cfg.max_uctx || !d->uctx_valid[page]) {
		db_ignored(d, err_db_no_uctx, "doorbell page of no user context", off, val);
		return;
	}
	if (reg >= QRNIC_DB_BF_BASE && reg < QRNIC_DB_BF_BASE + QRNIC_DB_BF_NUM * QRNIC_DB_BF_STRIDE) {
		bf_write(d, (uint32_t)page, reg - QRNIC_DB_BF_BASE, val);
		return;
	}
	switch (reg) {
	case QRNIC_DB_SQ:
	case QRNIC_DB_RQ: {
		struct qrnic_qp *qp = qrnic_qp_get(d, qn);

		if (!qp || qp->uctx != page) {
			db_ignored(d, err_db_no_qp, "no such QP in this context", off, val);
			return;
		}
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS, 1);
		qrnic_trace(d, QRNIC_TR_DOORBELL, qn, 0, reg == QRNIC_DB_SQ ? 0 : 1, idx, 0);
		qrnic_qp_doorbell(d, qp, reg == QRNIC_DB_SQ, idx, 0);
		break;
	}
	case QRNIC_DB_SRQ: {
		struct qrnic_srq *srq = qrnic_srq_get(d, qn);

		if (!srq || srq->uctx != page) {
			db_ignored(d, err_db_no_srq, "no such SRQ in this context", off, val);
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
			db_ignored(d, err_db_no_cq, "no such CQ in this context", off, val);
			return;
		}
		qrnic_stat_add(d, QRNIC_STAT_DOORBELLS, 1);
		qrnic_trace(d, QRNIC_TR_DOORBELL, 0, 0, 2, idx, qn);
		qrnic_cq_doorbell(d, cq, idx, val & QRNIC_DB_CQ_ARM, val & QRNIC_DB_CQ_SOLICITED);
		break;
	}
	default:
		db_ignored(d, err_db_bad_offset, "undefined doorbell offset", off, val);
	}
}
