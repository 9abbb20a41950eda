// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic Ethernet netdev over the plain Ethernet rings (docs/spec.md 14).
 *
 * One TX and one RX ring of struct qrnic_eth_desc in coherent memory, one
 * buffer per frame.  The device sets QRNIC_ETH_DESC_DONE (and _ERR) in a
 * descriptor when it is done with it, and raises the ETH_IRQ vector after
 * each received frame and each batch of sent frames; the interrupt only
 * schedules NAPI, which reaps TX and RX.  The device never masks that
 * interrupt, so NAPI needs no re-enable step.
 *
 * IP, ARP and neighbour discovery run over this netdev, and the RDMA core
 * builds the RoCE GID table from its addresses (ib_device_set_netdev()).
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_vlan.h>
#include <linux/rtnetlink.h>

#include "qrnic.h"

bool qrnic_link_up(struct qrnic_dev *dev)
{
	if (qrnic_dead(dev))
		return false;
	return qrnic_rd(dev, QRNIC_REG_PORT_STATUS) & QRNIC_PORT_STATUS_LINK_UP;
}

/* Any context (async EQ handler). */
void qrnic_netdev_link_event(struct qrnic_dev *dev, bool up)
{
	struct net_device *ndev = READ_ONCE(dev->ndev);
	struct qrnic_eth *eth = READ_ONCE(dev->eth);
	bool rings = eth && READ_ONCE(eth->up);

	/* Without rings (netdev down, or recovering) the carrier stays off. */
	if (ndev && rings) {
		if (up)
			netif_carrier_on(ndev);
		else
			netif_carrier_off(ndev);
	}
	qrnic_dispatch_port_event(dev, up && rings && netif_running(ndev));
}

void qrnic_netdev_irq(struct qrnic_dev *dev)
{
	struct qrnic_eth *eth = READ_ONCE(dev->eth);

	if (eth && READ_ONCE(eth->up))
		napi_schedule(&eth->napi);
}

/* ---- rings ------------------------------------------------------------------ */

static int qrnic_eth_map_rx(struct qrnic_eth *eth, struct qrnic_eth_buf *b,
			    struct sk_buff *skb)
{
	struct device *dmadev = &eth->dev->pdev->dev;
	dma_addr_t dma;

	dma = dma_map_single(dmadev, skb->data, eth->rx_buf_len, DMA_FROM_DEVICE);
	if (dma_mapping_error(dmadev, dma))
		return -ENOMEM;
	b->skb = skb;
	b->dma = dma;
	b->len = eth->rx_buf_len;
	return 0;
}

static void qrnic_eth_post_rx_desc(struct qrnic_eth *eth, u32 idx)
{
	u32 slot = idx & ((1U << eth->rx_log) - 1);
	struct qrnic_eth_desc *d = &eth->rx_ring[slot];

	d->addr = cpu_to_le64(eth->rx_buf[slot].dma);
	d->len = cpu_to_le16(eth->rx_buf_len);
	d->rsvd = 0;
	d->flags = 0;
}

static void qrnic_eth_free_rings(struct qrnic_eth *eth)
{
	struct device *dmadev = &eth->dev->pdev->dev;
	u32 i;

	if (eth->tx_buf) {
		for (i = 0; i < (1U << eth->tx_log); i++) {
			struct qrnic_eth_buf *b = &eth->tx_buf[i];

			if (!b->skb)
				continue;
			dma_unmap_single(dmadev, b->dma, b->len, DMA_TO_DEVICE);
			dev_kfree_skb_any(b->skb);
		}
	}
	if (eth->rx_buf) {
		for (i = 0; i < (1U << eth->rx_log); i++) {
			struct qrnic_eth_buf *b = &eth->rx_buf[i];

			if (!b->skb)
				continue;
			dma_unmap_single(dmadev, b->dma, b->len, DMA_FROM_DEVICE);
			dev_kfree_skb_any(b->skb);
		}
	}
	kvfree(eth->tx_buf);
	kvfree(eth->rx_buf);
	eth->tx_buf = NULL;
	eth->rx_buf = NULL;
	if (eth->tx_ring)
		dma_free_coherent(dmadev, sizeof(*eth->tx_ring) << eth->tx_log,
				  eth->tx_ring, eth->tx_dma);
	if (eth->rx_ring)
		dma_free_coherent(dmadev, sizeof(*eth->rx_ring) << eth->rx_log,
				  eth->rx_ring, eth->rx_dma);
	eth->tx_ring = NULL;
	eth->rx_ring = NULL;
}

static int qrnic_eth_alloc_rings(struct qrnic_eth *eth)
{
	struct device *dmadev = &eth->dev->pdev->dev;
	u32 i, rx_depth = 1U << eth->rx_log, tx_depth = 1U << eth->tx_log;

	eth->tx_ring = dma_alloc_coherent(dmadev, sizeof(*eth->tx_ring) << eth->tx_log,
					  &eth->tx_dma, GFP_KERNEL);
	eth->rx_ring = dma_alloc_coherent(dmadev, sizeof(*eth->rx_ring) << eth->rx_log,
					  &eth->rx_dma, GFP_KERNEL);
	eth->tx_buf = kvcalloc(tx_depth, sizeof(*eth->tx_buf), GFP_KERNEL);
	eth->rx_buf = kvcalloc(rx_depth, sizeof(*eth->rx_buf), GFP_KERNEL);
	if (!eth->tx_ring || !eth->rx_ring || !eth->tx_buf || !eth->rx_buf)
		goto err;

	for (i = 0; i < rx_depth; i++) {
		struct sk_buff *skb = netdev_alloc_skb_ip_align(eth->ndev, eth->rx_buf_len);

		if (!skb)
			goto err;
		if (qrnic_eth_map_rx(eth, &eth->rx_buf[i], skb)) {
			dev_kfree_skb(skb);
			goto err;
		}
		qrnic_eth_post_rx_desc(eth, i);
	}
	eth->tx_pi = 0;
	eth->tx_ci = 0;
	eth->rx_ci = 0;
	eth->rx_pi = rx_depth;
	return 0;

err:
	qrnic_eth_free_rings(eth);
	return -ENOMEM;
}

/* ---- NAPI --------------------------------------------------------------------- */

static void qrnic_eth_clean_tx(struct qrnic_eth *eth, int budget)
{
	struct device *dmadev = &eth->dev->pdev->dev;
	struct net_device *ndev = eth->ndev;
	u32 mask = (1U << eth->tx_log) - 1;
	u32 ci = eth->tx_ci, pi = smp_load_acquire(&eth->tx_pi);

	while (ci != pi) {
		struct qrnic_eth_desc *d = &eth->tx_ring[ci & mask];
		struct qrnic_eth_buf *b = &eth->tx_buf[ci & mask];
		u32 flags = le32_to_cpu(READ_ONCE(d->flags));

		if (!(flags & QRNIC_ETH_DESC_DONE))
			break;
		dma_rmb();
		dma_unmap_single(dmadev, b->dma, b->len, DMA_TO_DEVICE);
		if (flags & QRNIC_ETH_DESC_ERR) {
			ndev->stats.tx_errors++;
		} else {
			ndev->stats.tx_packets++;
			ndev->stats.tx_bytes += b->len;
		}
		napi_consume_skb(b->skb, budget);
		b->skb = NULL;
		ci++;
	}
	/* Pairs with the barrier in qrnic_eth_xmit() after stopping the queue. */
	smp_store_release(&eth->tx_ci, ci);
	smp_mb();
	if (netif_queue_stopped(ndev) && pi - ci < (1U << eth->tx_log) &&
	    READ_ONCE(eth->up))
		netif_wake_queue(ndev);
}

static int qrnic_eth_rx(struct qrnic_eth *eth, int budget)
{
	struct device *dmadev = &eth->dev->pdev->dev;
	struct net_device *ndev = eth->ndev;
	u32 mask = (1U << eth->rx_log) - 1;
	int done = 0;

	while (done < budget) {
		u32 slot = eth->rx_ci & mask;
		struct qrnic_eth_desc *d = &eth->rx_ring[slot];
		struct qrnic_eth_buf *b = &eth->rx_buf[slot];
		u32 flags = le32_to_cpu(READ_ONCE(d->flags));
		struct sk_buff *skb, *nskb;
		dma_addr_t ndma;
		u32 len;

		if (!(flags & QRNIC_ETH_DESC_DONE))
			break;
		dma_rmb();	/* DONE before len */
		len = le16_to_cpu(d->len);

		if ((flags & QRNIC_ETH_DESC_ERR) || len < ETH_HLEN || len > eth->rx_buf_len) {
			ndev->stats.rx_errors++;
			ndev->stats.rx_length_errors++;
			goto repost;	/* keep the buffer */
		}
		/* Map a fresh buffer first; if that fails, drop the frame and
		 * give the old buffer back to the device. */
		nskb = napi_alloc_skb(&eth->napi, eth->rx_buf_len);
		if (!nskb) {
			ndev->stats.rx_dropped++;
			goto repost;
		}
		ndma = dma_map_single(dmadev, nskb->data, eth->rx_buf_len, DMA_FROM_DEVICE);
		if (dma_mapping_error(dmadev, ndma)) {
			dev_kfree_skb_any(nskb);
			ndev->stats.rx_dropped++;
			goto repost;
		}
		skb = b->skb;
		dma_unmap_single(dmadev, b->dma, b->len, DMA_FROM_DEVICE);
		b->skb = nskb;
		b->dma = ndma;
		b->len = eth->rx_buf_len;
		skb_put(skb, len);
		skb->protocol = eth_type_trans(skb, ndev);
		ndev->stats.rx_packets++;
		ndev->stats.rx_bytes += len;
		napi_gro_receive(&eth->napi, skb);
repost:
		qrnic_eth_post_rx_desc(eth, eth->rx_ci);
		eth->rx_ci++;
		eth->rx_pi++;
		done++;
	}
	if (done)
		/* writel() orders the descriptor stores before the doorbell. */
		qrnic_wr(eth->dev, QRNIC_REG_ETH_RX_DB, eth->rx_pi);
	return done;
}

static int qrnic_eth_poll(struct napi_struct *napi, int budget)
{
	struct qrnic_eth *eth = container_of(napi, struct qrnic_eth, napi);
	int work;

	qrnic_eth_clean_tx(eth, budget);
	work = qrnic_eth_rx(eth, budget);
	if (work < budget)
		napi_complete_done(napi, work);
	return work;
}

/* ---- ring bring-up and teardown (RTNL) ------------------------------------------- */

/* Allocate and program the rings, enable them and NAPI.  RTNL held. */
static int qrnic_eth_rings_up(struct qrnic_eth *eth)
{
	struct qrnic_dev *dev = eth->dev;
	struct net_device *ndev = eth->ndev;
	u32 ctrl, want;
	int err;

	if (qrnic_dead(dev))
		return -EIO;
	err = qrnic_eth_alloc_rings(eth);
	if (err)
		return err;

	qrnic_wr(dev, QRNIC_REG_ETH_TX_BASE_LO, lower_32_bits(eth->tx_dma));
	qrnic_wr(dev, QRNIC_REG_ETH_TX_BASE_HI, upper_32_bits(eth->tx_dma));
	qrnic_wr(dev, QRNIC_REG_ETH_RX_BASE_LO, lower_32_bits(eth->rx_dma));
	qrnic_wr(dev, QRNIC_REG_ETH_RX_BASE_HI, upper_32_bits(eth->rx_dma));
	want = eth->tx_log | (eth->rx_log << QRNIC_ETH_CTRL_RX_LOG_SHIFT) |
	       QRNIC_ETH_CTRL_RX_ENABLE | QRNIC_ETH_CTRL_TX_ENABLE;
	qrnic_wr(dev, QRNIC_REG_ETH_CTRL, want);
	ctrl = qrnic_rd(dev, QRNIC_REG_ETH_CTRL);
	if (ctrl != want) {
		netdev_err(ndev, "Ethernet rings did not enable (ETH_CTRL 0x%x, wrote 0x%x)\n",
			   ctrl, want);
		err = -EIO;
		goto err_disable;
	}

	WRITE_ONCE(eth->up, true);
	napi_enable(&eth->napi);
	qrnic_wr(dev, QRNIC_REG_ETH_IRQ, dev->eth_vector | BIT(31));
	qrnic_wr(dev, QRNIC_REG_ETH_RX_DB, eth->rx_pi);
	netif_start_queue(ndev);

	if (qrnic_link_up(dev)) {
		netif_carrier_on(ndev);
		qrnic_dispatch_port_event(dev, true);
	} else {
		netif_carrier_off(ndev);
	}
	return 0;

err_disable:
	qrnic_wr(dev, QRNIC_REG_ETH_CTRL, 0);
	qrnic_eth_free_rings(eth);
	return err;
}

/*
 * Stop the rings and free them.  RTNL held.  On a dead device the function
 * was reset already, which stopped its DMA to the rings.
 */
static void qrnic_eth_rings_down(struct qrnic_eth *eth)
{
	struct qrnic_dev *dev = eth->dev;
	struct net_device *ndev = eth->ndev;

	netif_tx_disable(ndev);
	netif_carrier_off(ndev);
	if (!eth->up)
		return;
	WRITE_ONCE(eth->up, false);
	/* Disabling the rings stops the device's DMA to them. */
	qrnic_wr(dev, QRNIC_REG_ETH_IRQ, 0);
	qrnic_wr(dev, QRNIC_REG_ETH_CTRL, 0);
	(void)qrnic_rd(dev, QRNIC_REG_STATUS);
	synchronize_irq(dev->irqs[dev->eth_vector].irq);
	napi_disable(&eth->napi);
	qrnic_eth_free_rings(eth);
}

/* ---- net_device_ops ----------------------------------------------------------- */

static int qrnic_eth_open(struct net_device *ndev)
{
	struct qrnic_eth *eth = netdev_priv(ndev);

	return qrnic_eth_rings_up(eth);
}

static int qrnic_eth_stop(struct net_device *ndev)
{
	struct qrnic_eth *eth = netdev_priv(ndev);

	qrnic_eth_rings_down(eth);
	qrnic_dispatch_port_event(eth->dev, false);
	return 0;
}

static netdev_tx_t qrnic_eth_xmit(struct sk_buff *skb, struct net_device *ndev)
{
	struct qrnic_eth *eth = netdev_priv(ndev);
	struct qrnic_dev *dev = eth->dev;
	struct device *dmadev = &dev->pdev->dev;
	u32 depth = 1U << eth->tx_log;
	u32 pi = eth->tx_pi, slot = pi & (depth - 1);
	struct qrnic_eth_desc *d = &eth->tx_ring[slot];
	struct qrnic_eth_buf *b = &eth->tx_buf[slot];
	dma_addr_t dma;

	if (unlikely(qrnic_dead(dev) || !READ_ONCE(eth->up)))
		goto drop;
	if (skb_put_padto(skb, ETH_ZLEN)) {
		ndev->stats.tx_dropped++;
		return NETDEV_TX_OK;	/* freed by skb_put_padto() */
	}
	if (skb_linearize(skb))
		goto drop;
	if (unlikely(pi - READ_ONCE(eth->tx_ci) >= depth)) {
		netif_stop_queue(ndev);
		return NETDEV_TX_BUSY;
	}

	dma = dma_map_single(dmadev, skb->data, skb->len, DMA_TO_DEVICE);
	if (dma_mapping_error(dmadev, dma))
		goto drop;
	b->skb = skb;
	b->dma = dma;
	b->len = skb->len;
	d->addr = cpu_to_le64(dma);
	d->len = cpu_to_le16(skb->len);
	d->rsvd = 0;
	d->flags = 0;
	skb_tx_timestamp(skb);
	smp_store_release(&eth->tx_pi, pi + 1);
	/* writel() orders the descriptor stores before the doorbell. */
	qrnic_wr(dev, QRNIC_REG_ETH_TX_DB, pi + 1);

	if (pi + 1 - READ_ONCE(eth->tx_ci) >= depth) {
		netif_stop_queue(ndev);
		smp_mb();	/* pairs with qrnic_eth_clean_tx() */
		if (pi + 1 - READ_ONCE(eth->tx_ci) < depth)
			netif_wake_queue(ndev);
	}
	return NETDEV_TX_OK;

drop:
	ndev->stats.tx_dropped++;
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

static int qrnic_eth_change_mtu(struct net_device *ndev, int new_mtu)
{
	/* RX buffers are sized for the device MTU, so any smaller MTU fits. */
	WRITE_ONCE(ndev->mtu, new_mtu);
	return 0;
}

static const struct net_device_ops qrnic_netdev_ops = {
	.ndo_open = qrnic_eth_open,
	.ndo_stop = qrnic_eth_stop,
	.ndo_start_xmit = qrnic_eth_xmit,
	.ndo_change_mtu = qrnic_eth_change_mtu,
	.ndo_validate_addr = eth_validate_addr,
};

/* ---- ethtool -------------------------------------------------------------------- */

static void qrnic_eth_get_drvinfo(struct net_device *ndev, struct ethtool_drvinfo *info)
{
	struct qrnic_eth *eth = netdev_priv(ndev);
	struct qrnic_dev *dev = eth->dev;

	strscpy(info->driver, QRNIC_DRV_NAME, sizeof(info->driver));
	strscpy(info->bus_info, pci_name(dev->pdev), sizeof(info->bus_info));
	snprintf(info->fw_version, sizeof(info->fw_version), "%u.%u",
		 qrnic_attr(dev, fw_version) >> 16, qrnic_attr(dev, fw_version) & 0xffff);
}

static int qrnic_eth_get_link_ksettings(struct net_device *ndev,
					struct ethtool_link_ksettings *ks)
{
	struct qrnic_eth *eth = netdev_priv(ndev);

	ethtool_link_ksettings_zero_link_mode(ks, supported);
	ethtool_link_ksettings_zero_link_mode(ks, advertising);
	ks->base.speed = netif_carrier_ok(ndev) ? le32_to_cpu(eth->dev->port.speed_mbps) :
						  SPEED_UNKNOWN;
	ks->base.duplex = netif_carrier_ok(ndev) ? DUPLEX_FULL : DUPLEX_UNKNOWN;
	ks->base.port = PORT_OTHER;
	ks->base.autoneg = AUTONEG_DISABLE;
	return 0;
}

static const struct ethtool_ops qrnic_ethtool_ops = {
	.get_drvinfo = qrnic_eth_get_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = qrnic_eth_get_link_ksettings,
};

/* ---- create / destroy ------------------------------------------------------------ */

int qrnic_netdev_create(struct qrnic_dev *dev)
{
	struct net_device *ndev;
	struct qrnic_eth *eth;
	int err;

	ndev = alloc_etherdev(sizeof(*eth));
	if (!ndev)
		return -ENOMEM;
	SET_NETDEV_DEV(ndev, &dev->pdev->dev);
	eth = netdev_priv(ndev);
	eth->dev = dev;
	eth->ndev = ndev;
	eth->tx_log = qrnic_eth_ring_log;
	eth->rx_log = qrnic_eth_ring_log;
	eth->rx_buf_len = min_t(u32, dev->eth_mtu + ETH_HLEN + VLAN_HLEN, QRNIC_ETH_MAX_FRAME);

	ndev->netdev_ops = &qrnic_netdev_ops;
	ndev->ethtool_ops = &qrnic_ethtool_ops;
	ndev->features |= NETIF_F_HIGHDMA;
	ndev->min_mtu = ETH_MIN_MTU;
	ndev->max_mtu = dev->eth_mtu;
	ndev->mtu = dev->eth_mtu;
	if (!is_valid_ether_addr(dev->mac)) {
		dev_err(&dev->pdev->dev, "device MAC %pM is not a valid unicast address\n",
			dev->mac);
		err = -EINVAL;
		goto err_free;
	}
	eth_hw_addr_set(ndev, dev->mac);
	netif_napi_add(ndev, &eth->napi, qrnic_eth_poll);
	netif_carrier_off(ndev);

	err = register_netdev(ndev);
	if (err) {
		dev_err(&dev->pdev->dev, "register_netdev failed: %d\n", err);
		goto err_napi;
	}
	WRITE_ONCE(dev->eth, eth);
	WRITE_ONCE(dev->ndev, ndev);
	return 0;

err_napi:
	netif_napi_del(&eth->napi);
err_free:
	free_netdev(ndev);
	return err;
}

/*
 * Recovery (qrnic_main.c): before the function is reset and brought up
 * again, detach the net_device (no transmit, no open) and free its rings;
 * it stays registered with its addresses and routes.
 */
void qrnic_netdev_suspend(struct qrnic_dev *dev)
{
	struct qrnic_eth *eth = dev->eth;

	if (!eth)
		return;
	rtnl_lock();
	netif_device_detach(eth->ndev);
	qrnic_eth_rings_down(eth);
	rtnl_unlock();
}

/* ... and after the bring-up: new rings if the interface is up, attach. */
void qrnic_netdev_resume(struct qrnic_dev *dev)
{
	struct qrnic_eth *eth = dev->eth;
	int err;

	if (!eth)
		return;
	rtnl_lock();
	if (netif_running(eth->ndev) && !eth->up) {
		err = qrnic_eth_rings_up(eth);
		if (err)
			netdev_err(eth->ndev,
				   "cannot restart the Ethernet rings after reset: %d (take the interface down and up)\n",
				   err);
	}
	netif_device_attach(eth->ndev);
	rtnl_unlock();
}

void qrnic_netdev_destroy(struct qrnic_dev *dev)
{
	struct net_device *ndev = dev->ndev;
	struct qrnic_eth *eth = dev->eth;

	if (!ndev)
		return;
	unregister_netdev(ndev);	/* runs ndo_stop if it was up */
	WRITE_ONCE(dev->ndev, NULL);
	WRITE_ONCE(dev->eth, NULL);
	/* no interrupt handler may still be looking at the netdev */
	if (dev->irqs) {
		synchronize_irq(dev->irqs[dev->eth_vector].irq);
		synchronize_irq(dev->irqs[dev->async_vector].irq);
	}
	netif_napi_del(&eth->napi);
	free_netdev(ndev);
}
