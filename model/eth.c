/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: the plain Ethernet port.  Frames that are not RoCEv2
 * for one of our GIDs go to the RX ring; the TX ring sends any frame.  The
 * driver's net_device uses these rings for IP and ARP.
 */
#include "qrnic_internal.h"

#define ETH_BUDGET 64

static uint32_t tx_depth(const struct qrnic_dev *d)
{
	return 1u << (d->eth_ctrl & QRNIC_ETH_CTRL_TX_LOG_MASK);
}

static uint32_t rx_depth(const struct qrnic_dev *d)
{
	return 1u << ((d->eth_ctrl >> QRNIC_ETH_CTRL_RX_LOG_SHIFT) & 0xf);
}

static void eth_irq(struct qrnic_dev *d)
{
	if (d->eth_irq & (1u << 31))
		qrnic_irq(d, d->eth_irq & 0xffff);
}

static bool ring_ok(uint32_t log, uint64_t base)
{
	return log >= 1 && log <= 12 && base && !(base & 0xfff);
}

void qrnic_eth_reg_write(struct qrnic_dev *d, uint64_t off, uint32_t v)
{
	bool tx_on = d->eth_ctrl & QRNIC_ETH_CTRL_TX_ENABLE;
	bool rx_on = d->eth_ctrl & QRNIC_ETH_CTRL_RX_ENABLE;

	switch (off) {
	case QRNIC_REG_ETH_TX_BASE_LO:
	case QRNIC_REG_ETH_TX_BASE_HI:
	case QRNIC_REG_ETH_RX_BASE_LO:
	case QRNIC_REG_ETH_RX_BASE_HI: {
		bool tx = off < QRNIC_REG_ETH_RX_BASE_LO;
		uint64_t *base = tx ? &d->eth_tx_base : &d->eth_rx_base;

		if (tx ? tx_on : rx_on) {
			qrnic_guest_err(d, err_eth_base_busy, (off, v),
					"qrnic: Ethernet ring base written while enabled");
			return;
		}
		if (off & 4)
			*base = (*base & 0xffffffffull) | ((uint64_t)v << 32);
		else
			*base = (*base & ~0xffffffffull) | v;
		return;
	}
	case QRNIC_REG_ETH_CTRL: {
		uint32_t txlog = v & QRNIC_ETH_CTRL_TX_LOG_MASK;
		uint32_t rxlog = (v >> QRNIC_ETH_CTRL_RX_LOG_SHIFT) & 0xf;

		if ((v & QRNIC_ETH_CTRL_TX_ENABLE) && !ring_ok(txlog, d->eth_tx_base)) {
			qrnic_guest_err(d, err_eth_bad_ring, (0, txlog),
					"qrnic: Ethernet TX enable with bad ring (log %u)", txlog);
			v &= ~QRNIC_ETH_CTRL_TX_ENABLE;
		}
		if ((v & QRNIC_ETH_CTRL_RX_ENABLE) && !ring_ok(rxlog, d->eth_rx_base)) {
			qrnic_guest_err(d, err_eth_bad_ring, (1, rxlog),
					"qrnic: Ethernet RX enable with bad ring (log %u)", rxlog);
			v &= ~QRNIC_ETH_CTRL_RX_ENABLE;
		}
		v &= QRNIC_ETH_CTRL_TX_ENABLE | QRNIC_ETH_CTRL_RX_ENABLE |
		     QRNIC_ETH_CTRL_TX_LOG_MASK | (0xfu << QRNIC_ETH_CTRL_RX_LOG_SHIFT);
		/* Enabling, disabling or resizing a ring restarts its indexes. */
		if (!tx_on || !(v & QRNIC_ETH_CTRL_TX_ENABLE) ||
		    txlog != (d->eth_ctrl & QRNIC_ETH_CTRL_TX_LOG_MASK))
			d->eth_tx_pi = d->eth_tx_ci = 0;
		if (!rx_on || !(v & QRNIC_ETH_CTRL_RX_ENABLE) ||
		    rxlog != ((d->eth_ctrl >> QRNIC_ETH_CTRL_RX_LOG_SHIFT) & 0xf))
			d->eth_rx_pi = d->eth_rx_ci = 0;
		d->eth_ctrl = v;
		return;
	}
	case QRNIC_REG_ETH_TX_DB:
		if (!tx_on || v - d->eth_tx_ci > tx_depth(d)) {
			qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
			qrnic_guest_err(d, err_eth_db, (0, v, d->eth_tx_ci, tx_on),
					"qrnic: Ethernet TX doorbell %u ignored (ci %u, %s)",
					  v, d->eth_tx_ci, tx_on ? "index out of range" : "TX disabled");
			return;
		}
		d->eth_tx_pi = v;
		d->eth_pending = true;
		qrnic_schedule(d);
		return;
	case QRNIC_REG_ETH_RX_DB:
		if (!rx_on || v - d->eth_rx_ci > rx_depth(d)) {
			qrnic_stat_add(d, QRNIC_STAT_DOORBELLS_IGNORED, 1);
			qrnic_guest_err(d, err_eth_db, (1, v, d->eth_rx_ci, rx_on),
					"qrnic: Ethernet RX doorbell %u ignored (ci %u, %s)",
					  v, d->eth_rx_ci, rx_on ? "index out of range" : "RX disabled");
			return;
		}
		d->eth_rx_pi = v;
		return;
	case QRNIC_REG_ETH_IRQ:
		if ((v & 0xffff) >= d->cfg.num_vectors) {
			qrnic_guest_err(d, err_eth_irq_vector, (v & 0xffff, d->cfg.num_vectors),
					"qrnic: ETH_IRQ vector %u >= %u", v & 0xffff,
					  d->cfg.num_vectors);
			return;
		}
		d->eth_irq = v & (0xffffu | (1u << 31));
		return;
	}
}

static int desc_done(struct qrnic_dev *d, uint64_t slot, struct qrnic_eth_desc *desc)
{
	/* length first, flags (with DONE) last */
	if (qrnic_dma_write(d, slot + offsetof(struct qrnic_eth_desc, len), &desc->len,
			    sizeof(desc->len)))
		return -1;
	return qrnic_dma_write(d, slot + offsetof(struct qrnic_eth_desc, flags), &desc->flags,
			       sizeof(desc->flags));
}

/* Transmit up to a budget of frames from the TX ring; true if more remain. */
bool qrnic_eth_tx_run(struct qrnic_dev *d)
{
	static uint8_t frame[QRNIC_ETH_MAX_FRAME];
	uint32_t n;

	for (n = 0; n < ETH_BUDGET && d->eth_tx_ci != d->eth_tx_pi &&
		    (d->eth_ctrl & QRNIC_ETH_CTRL_TX_ENABLE); n++) {
		uint64_t slot = d->eth_tx_base +
			(uint64_t)(d->eth_tx_ci & (tx_depth(d) - 1)) * sizeof(struct qrnic_eth_desc);
		struct qrnic_eth_desc desc;

		if (qrnic_dma_read(d, slot, &desc, sizeof(desc))) {
			qrnic_guest_err(d, err_eth_tx_ring_dma, (slot),
					"qrnic: Ethernet TX ring unreachable; TX disabled");
			d->eth_ctrl &= ~QRNIC_ETH_CTRL_TX_ENABLE;
			break;
		}
		desc.flags = QRNIC_ETH_DESC_DONE;
		if (desc.len < 14 || desc.len > QRNIC_ETH_MAX_FRAME ||
		    desc.len > d->cfg.eth_mtu + 18) {
			qrnic_guest_err(d, err_eth_tx_desc_len, (desc.len),
					"qrnic: Ethernet TX descriptor length %u invalid", desc.len);
			desc.flags |= QRNIC_ETH_DESC_ERR;
		} else if (qrnic_dma_read(d, desc.addr, frame, desc.len)) {
			desc.flags |= QRNIC_ETH_DESC_ERR;
		} else {
			qrnic_stat_add(d, QRNIC_STAT_ETH_TX_FRAMES, 1);
			qrnic_tx(d, frame, desc.len);
		}
		d->eth_tx_ci++;
		if (desc_done(d, slot, &desc))
			break;
	}
	if (n)
		eth_irq(d);
	return d->eth_tx_ci != d->eth_tx_pi && (d->eth_ctrl & QRNIC_ETH_CTRL_TX_ENABLE);
}

void qrnic_eth_rx(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	uint64_t slot;
	struct qrnic_eth_desc desc;

	if (!(d->eth_ctrl & QRNIC_ETH_CTRL_RX_ENABLE) || d->eth_rx_ci == d->eth_rx_pi) {
		qrnic_stat_add(d, QRNIC_STAT_ETH_RX_DROPS, 1);
		return;
	}
	slot = d->eth_rx_base +
	       (uint64_t)(d->eth_rx_ci & (rx_depth(d) - 1)) * sizeof(struct qrnic_eth_desc);
	if (qrnic_dma_read(d, slot, &desc, sizeof(desc))) {
		qrnic_stat_add(d, QRNIC_STAT_ETH_RX_DROPS, 1);
		return;
	}
	d->eth_rx_ci++;
	desc.flags = QRNIC_ETH_DESC_DONE;
	if (len > desc.len || qrnic_dma_write(d, desc.addr, frame, len)) {
		desc.flags |= QRNIC_ETH_DESC_ERR;
		desc.len = 0;
		qrnic_stat_add(d, QRNIC_STAT_ETH_RX_DROPS, 1);
	} else {
		desc.len = (uint16_t)len;
		qrnic_stat_add(d, QRNIC_STAT_ETH_RX_FRAMES, 1);
	}
	desc_done(d, slot, &desc);
	eth_irq(d);
}
