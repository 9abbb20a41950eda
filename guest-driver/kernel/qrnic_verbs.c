// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic ib_device: device and port queries, GID table, user contexts and
 * mmap, protection domains, address handles, registration.  CQs, QPs, SRQs
 * and MRs live in qrnic_cq.c, qrnic_qp.c, qrnic_srq.c and qrnic_mr.c.
 *
 * The port is RoCE v2 only (RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP), so the RDMA
 * core fills the GID table with RoCE v2 entries only, from the netdev's
 * IP addresses, through add_gid/del_gid (SET_GID).
 */
#include <linux/cc_platform.h>
#include <linux/dma-mapping.h>
#include <linux/vmalloc.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>

#include "qrnic.h"

/* ---- rings shared with the device (and possibly with user space) -------------- */

/*
 * Page lists (ABI 1.8): a ring of more than one page may be separate pages.
 * ring_pagelist 1 (default) lists the rings above PAGE_ALLOC_COSTLY_ORDER
 * (32 KiB), the size from which the page allocator no longer tries hard to
 * find contiguous pages; 2 every multi-page ring (tests); 0 none.  A ring of
 * at most a page -- and every ring of a device without the capability --
 * stays one contiguous allocation, as before.
 */
static bool qrnic_ring_listed(struct qrnic_dev *dev, size_t bytes)
{
	if (!qrnic_has_ring_pagelist(dev) || PAGE_SIZE != QRNIC_RING_PAGE_SIZE ||
	    bytes <= PAGE_SIZE)
		return false;
	switch (qrnic_ring_pagelist) {
	case 0:
		return false;
	case 1:
		return get_order(bytes) > PAGE_ALLOC_COSTLY_ORDER;
	default:
		return true;
	}
}

/*
 * A listed ring's pages, each from dma_alloc_coherent() on its own, as
 * mlx5_frag_buf does: coherent memory is what the device and the CPU may
 * both use at any time without dma_sync_*() calls.  A streaming mapping
 * (dma_map_page() of vmalloc'd pages, as before) is not: with swiotlb=force,
 * or in an SEV or TDX guest where swiotlb is forced, the device reads and
 * writes a bounce buffer that the CPU never sees (tests/test_guest_swiotlb.py).
 * On x86 dma_alloc_coherent() of one page gives a page of the page allocator
 * (dma-direct; decrypted in a confidential guest) or, behind an IOMMU, a
 * page of its own vmapped (dma-iommu): either way a page with its own
 * reference count, which qrnic_mmap() can vm_insert_page().
 */
static void qrnic_frags_free(struct device *dmadev, void **va, dma_addr_t *pl, size_t n)
{
	while (n--)
		dma_free_coherent(dmadev, PAGE_SIZE, va[n], pl[n]);
	kvfree(va);
	kvfree(pl);
}

/* the caller sets ring->bytes */
static int qrnic_ring_alloc_listed(struct qrnic_dev *dev, struct qrnic_ring *ring)
{
	struct device *dmadev = &dev->pdev->dev;
	size_t n = ring->bytes >> PAGE_SHIFT, i;

	ring->pl = kvmalloc_array(n, sizeof(*ring->pl), GFP_KERNEL);
	ring->va = kvmalloc_array(n, sizeof(*ring->va), GFP_KERNEL);
	if (!ring->pl || !ring->va) {
		i = 0;
		goto err_free;
	}
	for (i = 0; i < n; i++) {
		/* zeroed and page aligned */
		ring->va[i] = dma_alloc_coherent(dmadev, PAGE_SIZE, &ring->pl[i],
						 GFP_KERNEL | __GFP_NOWARN);
		if (!ring->va[i])
			goto err_free;
		if (!IS_ALIGNED(ring->pl[i], QRNIC_RING_PAGE_SIZE)) {
			dev_err_ratelimited(dmadev, "ring page DMA address %pad is not 4 KiB aligned\n",
					    &ring->pl[i]);
			i++;
			goto err_free;
		}
		cond_resched();		/* a 4M-entry CQ is 32768 pages */
	}
	ring->dma = ring->pl[0];
	atomic_inc(&dev->ring_pagelists);
	return 0;

err_free:
	qrnic_frags_free(dmadev, ring->va, ring->pl, i);
	ring->va = NULL;
	ring->pl = NULL;
	return -ENOMEM;
}

/* The bus address of byte 'off' of the ring (its dbrec, say). */
dma_addr_t qrnic_ring_dma_at(const struct qrnic_ring *ring, size_t off)
{
	if (!ring->pl)
		return ring->dma + off;
	return ring->pl[off >> PAGE_SHIFT] + (off & ~PAGE_MASK);
}

/*
 * What a create/resize command puts in its ring address field for the
 * first ring_bytes of the ring: the ring's bus address, or (*listed) the
 * address of a page list built in c, which the caller frees with
 * qrnic_ring_cmd_done() once the command ran (the device reads it once).
 * A list of a 4M-entry CQ of 32-byte CQEs is 256 KiB.
 */
int qrnic_ring_cmd_addr(struct qrnic_dev *dev, const struct qrnic_ring *ring, size_t ring_bytes,
			struct qrnic_ring_cmd *c, u64 *addr, bool *listed)
{
	size_t n = ring_bytes >> QRNIC_RING_PAGE_SHIFT, i;

	memset(c, 0, sizeof(*c));
	*listed = ring->pl != NULL;
	if (!ring->pl) {
		*addr = ring->dma;
		return 0;
	}
	if (WARN_ON(ring_bytes < QRNIC_RING_PAGE_SIZE || ring_bytes > ring->bytes))
		return -EINVAL;
	c->bytes = n * sizeof(*c->va);
	c->va = dma_alloc_coherent(&dev->pdev->dev, c->bytes, &c->dma, GFP_KERNEL | __GFP_NOWARN);
	if (!c->va)
		return -ENOMEM;
	for (i = 0; i < n; i++)		/* QRNIC_RING_PAGE_SIZE == PAGE_SIZE here */
		c->va[i] = cpu_to_le64(ring->pl[i]);
	*addr = c->dma;
	return 0;
}

void qrnic_ring_cmd_done(struct qrnic_dev *dev, struct qrnic_ring_cmd *c)
{
	if (c->va)
		dma_free_coherent(&dev->pdev->dev, c->bytes, c->va, c->dma);
	c->va = NULL;
}

int qrnic_ring_alloc(struct qrnic_dev *dev, struct qrnic_ring *ring, size_t bytes,
		     struct qrnic_ucontext *uctx)
{
	struct device *dmadev = &dev->pdev->dev;
	struct qrnic_mmap_entry *entry;
	bool listed;
	int err;

	memset(ring, 0, sizeof(*ring));
	ring->bytes = PAGE_ALIGN(bytes);
	listed = qrnic_ring_listed(dev, ring->bytes);
	/* Without a page list the device takes one bus address per ring:
	 * physically contiguous. */
	if (!listed && get_order(ring->bytes) > MAX_PAGE_ORDER)
		return -EINVAL;

	if (listed) {
		err = qrnic_ring_alloc_listed(dev, ring);
		if (err)
			return err;
		if (!uctx)
			return 0;
		ring->user = true;
		goto user_entry;
	}

	if (!uctx) {
		ring->buf = dma_alloc_coherent(dmadev, ring->bytes, &ring->dma,
					       GFP_KERNEL | __GFP_NOWARN);
		return ring->buf ? 0 : -ENOMEM;
	}

	/*
	 * A contiguous ring that user space maps: pages of the page allocator
	 * (alloc_pages_exact(): each page has its own reference count, so
	 * vm_insert_page() can map it and the process keeps it after the ring
	 * is freed) with a streaming mapping.  dma_alloc_coherent() memory of
	 * more than a page cannot be mapped that way (its tail pages have no
	 * reference count), and dma_mmap_coherent() makes a VM_PFNMAP mapping
	 * that holds nothing: the memory would have to outlive every mapping,
	 * which only ib_core's private rdma_umap_priv_init() can track.  So a
	 * mapping that needs dma_sync_*() calls (a bounce buffer: swiotlb=force,
	 * SEV/TDX guests; a non-coherent device) is refused with -EIO rather
	 * than used: the device would read and write memory the process never
	 * sees.  Page-listed user rings are coherent pages (above).
	 */
	ring->user = true;
	ring->buf = alloc_pages_exact(ring->bytes, GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN);
	if (!ring->buf)
		return -ENOMEM;
	ring->dma = dma_map_single(dmadev, ring->buf, ring->bytes, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(dmadev, ring->dma)) {
		err = -ENOMEM;
		goto err_free_pages;
	}
	if (dma_need_sync(dmadev, ring->dma) || !IS_ALIGNED(ring->dma, SZ_4K)) {
		dev_err_ratelimited(dmadev,
				    "user ring at %pad needs DMA syncs (bounce buffer?): not usable by user space\n",
				    &ring->dma);
		err = -EIO;
		goto err_unmap;
	}

user_entry:
	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		err = -ENOMEM;
		goto err_unmap;
	}
	entry->type = QRNIC_MMAP_PAGES;
	entry->dmadev = dmadev;
	entry->cpu_addr = ring->buf;
	entry->va = ring->va;
	entry->pl = ring->pl;
	entry->size = ring->bytes;
	err = rdma_user_mmap_entry_insert(&uctx->ibucontext, &entry->rdma_entry,
					  ring->bytes);
	if (err) {
		kfree(entry);
		goto err_unmap;
	}
	/* From here on the memory belongs to the mmap entry (qrnic_mmap_free). */
	ring->mentry = entry;
	return 0;

err_unmap:
	if (listed) {
		qrnic_frags_free(dmadev, ring->va, ring->pl, ring->bytes >> PAGE_SHIFT);
		ring->va = NULL;
		ring->pl = NULL;
		return err;
	}
	dma_unmap_single(dmadev, ring->dma, ring->bytes, DMA_BIDIRECTIONAL);
err_free_pages:
	free_pages_exact(ring->buf, ring->bytes);
	ring->buf = NULL;
	return err;
}

/* Only after the device no longer uses the ring (its object destroyed, or reset). */
void qrnic_ring_free(struct qrnic_dev *dev, struct qrnic_ring *ring)
{
	struct device *dmadev = &dev->pdev->dev;

	if (!ring->buf && !ring->va)
		return;
	if (ring->user) {
		if (!ring->va)
			dma_unmap_single(dmadev, ring->dma, ring->bytes, DMA_BIDIRECTIONAL);
		/* the entry frees the memory (qrnic_mmap_free), once no mmap() is
		 * in progress: a process keeps the pages it mapped */
		rdma_user_mmap_entry_remove(&ring->mentry->rdma_entry);
		ring->mentry = NULL;
	} else if (ring->va) {
		qrnic_frags_free(dmadev, ring->va, ring->pl, ring->bytes >> PAGE_SHIFT);
	} else {
		dma_free_coherent(dmadev, ring->bytes, ring->buf, ring->dma);
	}
	ring->buf = NULL;
	ring->va = NULL;
	ring->pl = NULL;
}

u64 qrnic_ring_mmap_key(const struct qrnic_ring *ring)
{
	return rdma_user_mmap_get_offset(&ring->mentry->rdma_entry);
}

/* ---- device and port ------------------------------------------------------------ */

static int qrnic_query_device(struct ib_device *ibdev, struct ib_device_attr *props,
			      struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibdev);

	memset(props, 0, sizeof(*props));
	props->fw_ver = qrnic_attr(dev, fw_version);
	props->sys_image_guid = ibdev->node_guid;
	props->max_mr_size = le64_to_cpu(dev->attr.max_mr_size);
	props->page_size_cap = le64_to_cpu(dev->attr.page_size_cap);
	props->vendor_id = dev->pdev->vendor;
	props->vendor_part_id = dev->pdev->device;
	props->hw_ver = dev->pdev->revision;
	props->max_qp = qrnic_attr(dev, max_qp) - 2;		/* QPN 0 reserved, 1 is the GSI QP */
	props->max_qp_wr = qrnic_attr(dev, max_qp_wr);
	props->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN | IB_DEVICE_PORT_ACTIVE_EVENT |
				  IB_DEVICE_SYS_IMAGE_GUID;
	props->max_send_sge = qrnic_attr(dev, max_sge);
	props->max_recv_sge = qrnic_attr(dev, max_sge);
	props->max_sge_rd = qrnic_attr(dev, max_sge);
	props->max_cq = qrnic_attr(dev, max_cq) - 1;		/* cqn 0 is never valid */
	props->max_cqe = qrnic_attr(dev, max_cqe);
	props->max_mr = qrnic_attr(dev, max_mr) - 1;
	props->max_pd = qrnic_attr(dev, max_pd) - 1;
	props->max_qp_rd_atom = qrnic_attr(dev, max_qp_rd_atom);
	props->max_qp_init_rd_atom = qrnic_attr(dev, max_qp_init_rd_atom);
	props->max_res_rd_atom = qrnic_attr(dev, max_qp_rd_atom) * props->max_qp;
	props->atomic_cap = (dev->caps & QRNIC_CAP_ATOMIC) ? IB_ATOMIC_HCA : IB_ATOMIC_NONE;
	props->masked_atomic_cap = IB_ATOMIC_NONE;
	props->max_ah = qrnic_attr(dev, max_ah) - 1;
	if (dev->caps & QRNIC_CAP_MCAST) {	/* spec 12.11 */
		props->max_mcast_grp = qrnic_attr(dev, max_mcg);
		props->max_mcast_qp_attach = qrnic_attr(dev, max_mcg_qp);
		props->max_total_mcast_qp_attach = props->max_mcast_grp *
						   props->max_mcast_qp_attach;
	}
	if ((dev->caps & QRNIC_CAP_SRQ) && qrnic_attr(dev, max_srq) > 1) {
		props->max_srq = qrnic_attr(dev, max_srq) - 1;	/* srqn 0 is never valid */
		props->max_srq_wr = qrnic_attr(dev, max_srq_wr);
		props->max_srq_sge = qrnic_attr(dev, max_sge);
	}
	if (qrnic_has_xrc(dev))		/* spec 12.14 (6.12 has no max_xrcd attribute) */
		props->device_cap_flags |= IB_DEVICE_XRC;
	if (qrnic_has_mem_mgt(dev)) {		/* spec 12.12 */
		props->device_cap_flags |= IB_DEVICE_MEM_MGT_EXTENSIONS;
		/*
		 * Behind a bounce buffer (swiotlb=force, SEV/TDX guests) no more
		 * pages than it maps in one piece (256 KiB): nvme-rdma sizes its
		 * largest I/O by this (max_hw_sectors) and lets the block layer
		 * merge contiguous pages into segments of any size, which
		 * dma_map_sg() then cannot bounce ("swiotlb buffer is full").
		 */
		props->max_fast_reg_page_list_len =
			min_t(u64, qrnic_attr(dev, max_fast_reg_pages),
			      max_t(size_t, dma_max_mapping_size(&dev->pdev->dev) >> PAGE_SHIFT, 1));
	}
	if (qrnic_has_mw(dev)) {		/* spec 12.13 */
		props->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
					   IB_DEVICE_MEM_WINDOW_TYPE_2B;
		props->max_mw = qrnic_attr(dev, max_mw) - 1;	/* MPT index 0 is never valid */
	}
	if (qrnic_has_cq_resize(dev)) {		/* MODIFY_CQ: u16 count and period */
		props->cq_caps.max_cq_moderation_count = U16_MAX;
		props->cq_caps.max_cq_moderation_period = U16_MAX;
	}
	if (qrnic_has_cqe_ts(dev)) {		/* spec 4.6: the clock, in kHz */
		props->hca_core_clock = qrnic_attr(dev, hca_core_clock);
		props->timestamp_mask = le64_to_cpu(dev->attr.timestamp_mask);
	}
	props->max_pkeys = 1;
	props->local_ca_ack_delay = 15;
	return 0;
}

static void qrnic_eth_speed(u32 mbps, u16 *speed, u8 *width)
{
	static const struct { u32 mbps; u16 speed; u8 width; } map[] = {
		{ 2500, IB_SPEED_SDR, IB_WIDTH_1X },
		{ 10000, IB_SPEED_FDR10, IB_WIDTH_1X },
		{ 20000, IB_SPEED_DDR, IB_WIDTH_4X },
		{ 25000, IB_SPEED_EDR, IB_WIDTH_1X },
		{ 40000, IB_SPEED_FDR10, IB_WIDTH_4X },
		{ 50000, IB_SPEED_HDR, IB_WIDTH_1X },
		{ 100000, IB_SPEED_EDR, IB_WIDTH_4X },
		{ 200000, IB_SPEED_HDR, IB_WIDTH_4X },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(map); i++) {
		if (mbps <= map[i].mbps) {
			*speed = map[i].speed;
			*width = map[i].width;
			return;
		}
	}
	*speed = IB_SPEED_NDR;
	*width = IB_WIDTH_4X;
}

static int qrnic_query_port(struct ib_device *ibdev, u32 port, struct ib_port_attr *pa)
{
	struct qrnic_dev *dev = to_qdev(ibdev);
	struct net_device *ndev = READ_ONCE(dev->ndev);
	struct qrnic_port_attr p;
	bool active;

	if (qrnic_dead(dev) || qrnic_cmd_query_port(dev, &p))
		p = dev->port;	/* last known values */
	else
		dev->port = p;

	active = !qrnic_dead(dev) && p.state == QRNIC_PORT_ACTIVE && ndev &&
		 netif_running(ndev) && netif_carrier_ok(ndev);

	memset(pa, 0, sizeof(*pa));
	pa->state = active ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	pa->phys_state = active ? IB_PORT_PHYS_STATE_LINK_UP : IB_PORT_PHYS_STATE_DISABLED;
	pa->max_mtu = p.max_mtu;
	pa->active_mtu = p.active_mtu;
	if (ndev)
		pa->active_mtu = min_t(enum ib_mtu, pa->active_mtu, iboe_get_mtu(ndev->mtu));
	pa->phys_mtu = ib_mtu_enum_to_int(p.max_mtu);
	pa->gid_tbl_len = le32_to_cpu(p.gid_tbl_len);
	pa->ip_gids = 1;
	pa->port_cap_flags = IB_PORT_CM_SUP;
	pa->max_msg_sz = qrnic_attr(dev, max_msg_size);
	pa->pkey_tbl_len = 1;
	pa->max_vl_num = 1;
	qrnic_eth_speed(le32_to_cpu(p.speed_mbps), &pa->active_speed, &pa->active_width);
	return 0;
}

static int qrnic_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *immutable)
{
	struct qrnic_dev *dev = to_qdev(ibdev);

	immutable->pkey_tbl_len = 1;
	immutable->gid_tbl_len = qrnic_attr(dev, gid_tbl_len);
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer qrnic_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int qrnic_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static void qrnic_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	struct qrnic_dev *dev = to_qdev(ibdev);

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u", qrnic_attr(dev, fw_version) >> 16,
		 qrnic_attr(dev, fw_version) & 0xffff);
}

/*
 * Port and device events go to the registered ib_device only.  ib_lock keeps
 * it from being unregistered meanwhile; ib_dispatch_event() only queues the
 * event (on ib_wq, which unregistration flushes), so any context will do.
 */
void qrnic_dispatch_dev_event(struct qrnic_dev *dev, enum ib_event_type type)
{
	struct ib_event ev = {
		.element.port_num = QRNIC_PORT,
		.event = type,
	};
	unsigned long flags;

	spin_lock_irqsave(&dev->ib_lock, flags);
	if (test_bit(QRNIC_FLAG_IB_REGISTERED, &dev->flags)) {
		ev.device = &dev->ib->ibdev;
		ib_dispatch_event(&ev);
	}
	spin_unlock_irqrestore(&dev->ib_lock, flags);
}

void qrnic_dispatch_port_event(struct qrnic_dev *dev, bool active)
{
	qrnic_dispatch_dev_event(dev, active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
}

/* ---- GID table ---------------------------------------------------------------- */

static int qrnic_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct qrnic_dev *dev = to_qdev(attr->device);
	u8 net_type;

	/* The port is RoCE v2 only, so the core never asks for other types. */
	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EOPNOTSUPP;
	net_type = ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw) ?
		   QRNIC_NET_IPV4 : QRNIC_NET_IPV6;
	return qrnic_cmd_set_gid(dev, attr->index, true, net_type, attr->gid.raw);
}

static int qrnic_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct qrnic_dev *dev = to_qdev(attr->device);
	int err;

	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return 0;
	err = qrnic_cmd_set_gid(dev, attr->index, false, 0, NULL);
	return qrnic_dead(dev) ? 0 : err;
}

/* ---- user contexts and mmap ------------------------------------------------------ */

static int qrnic_alloc_ucontext(struct ib_ucontext *ibuctx, struct ib_udata *udata)
{
	struct qrnic_ucontext *uctx = to_quctx(ibuctx);
	struct qrnic_dev *dev = to_qdev(ibuctx->device);
	struct qrnic_alloc_ucontext_resp resp = {};
	struct qrnic_mmap_entry *entry;
	int err;

	/* Each context maps exactly its own 4 KiB doorbell page. */
	if (PAGE_SIZE != QRNIC_DB_PAGE_SIZE)
		return -EOPNOTSUPP;

	err = qrnic_cmd_alloc_uctx(dev, &uctx->uctx);
	if (err)
		return err;
	if (!uctx->uctx || uctx->uctx >= dev->num_db_pages) {
		dev_err(&dev->pdev->dev, "ALLOC_UCTX returned context %u of %u\n",
			uctx->uctx, dev->num_db_pages);
		err = -EIO;
		goto err_dealloc;
	}

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		err = -ENOMEM;
		goto err_dealloc;
	}
	entry->type = QRNIC_MMAP_DB;
	entry->io_addr = dev->db_bar_start + (phys_addr_t)uctx->uctx * QRNIC_DB_PAGE_SIZE;
	entry->size = QRNIC_DB_PAGE_SIZE;
	err = rdma_user_mmap_entry_insert(ibuctx, &entry->rdma_entry, QRNIC_DB_PAGE_SIZE);
	if (err) {
		kfree(entry);
		goto err_dealloc;
	}
	uctx->db_entry = &entry->rdma_entry;

	resp.uctx = uctx->uctx;
	resp.max_inline = qrnic_attr(dev, max_inline);
	resp.db_mmap_key = rdma_user_mmap_get_offset(uctx->db_entry);
	resp.max_sge = qrnic_attr(dev, max_sge);
	resp.max_send_wqe_shift = QRNIC_MAX_SEND_WQE_SHIFT;
	resp.max_recv_wqe_shift = QRNIC_MAX_RECV_WQE_SHIFT;
	/* BlueFlame buffers in the same doorbell page (spec 3.2.1): nothing
	 * more to map; 0 tells the provider not to use them (qrnic.bf=0,
	 * the default, or a device without them) */
	resp.bf_size = (dev->caps & QRNIC_CAP_BF) && READ_ONCE(qrnic_bf) ?
		       QRNIC_BF_MAX_WQE : 0;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err)
		goto err_remove;
	return 0;

err_remove:
	rdma_user_mmap_entry_remove(uctx->db_entry);
	uctx->db_entry = NULL;
err_dealloc:
	qrnic_cmd_dealloc_uctx(dev, uctx->uctx);
	return err;
}

static void qrnic_dealloc_ucontext(struct ib_ucontext *ibuctx)
{
	struct qrnic_ucontext *uctx = to_quctx(ibuctx);
	struct qrnic_dev *dev = to_qdev(ibuctx->device);

	rdma_user_mmap_entry_remove(uctx->db_entry);
	qrnic_cmd_dealloc_uctx(dev, uctx->uctx);
}

/*
 * Nothing to do: the core zaps the doorbell mappings (rdma_user_mmap_io()),
 * and ring pages mapped with vm_insert_page() stay valid memory until the
 * process unmaps them.  Having this op lets ib_unregister_device() proceed
 * while processes still hold the device open.
 */
static void qrnic_disassociate_ucontext(struct ib_ucontext *ibuctx)
{
}

/*
 * Map a ring's pages, one at a time, with vm_insert_page(): each page has
 * its own reference count (alloc_pages_exact(), or a listed ring's
 * dma_alloc_coherent() page), so the process keeps valid memory until it
 * unmaps it, whenever the ring is freed, and nothing here needs to outlive
 * the mapping (no vm_ops: qrnic may be unloaded while a process still maps
 * a ring).  dma_mmap_coherent() is the DMA API's way to map coherent memory
 * but maps one buffer to a whole VMA as VM_PFNMAP, holding no reference.
 * A listed ring's page is in the direct map (dma-direct) or vmapped
 * (dma-iommu).  In an SEV or TDX guest coherent memory is shared with the
 * host (decrypted), and the process's mapping must say so, as
 * dma_mmap_coherent() would (dma_pgprot()).
 */
static int qrnic_mmap_pages(struct qrnic_mmap_entry *entry, struct vm_area_struct *vma)
{
	unsigned long off;
	int err = 0;

	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	if (entry->va && cc_platform_has(CC_ATTR_GUEST_MEM_ENCRYPT))
		vma->vm_page_prot = pgprot_decrypted(vma->vm_page_prot);
	for (off = 0; off < entry->size && !err; off += PAGE_SIZE) {
		struct page *pg;

		if (entry->va) {
			void *va = entry->va[off >> PAGE_SHIFT];

			pg = is_vmalloc_addr(va) ? vmalloc_to_page(va) : virt_to_page(va);
		} else {
			pg = virt_to_page(entry->cpu_addr + off);
		}
		err = vm_insert_page(vma, vma->vm_start + off, pg);
	}
	return err;
}

static int qrnic_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma_entry;
	struct qrnic_mmap_entry *entry;
	int err = 0;

	/* Checks VM_SHARED and that the size matches the entry. */
	rdma_entry = rdma_user_mmap_entry_get(ibuctx, vma);
	if (!rdma_entry)
		return -EINVAL;
	entry = to_qmentry(rdma_entry);

	switch (entry->type) {
	case QRNIC_MMAP_DB:
		err = rdma_user_mmap_io(ibuctx, vma, PHYS_PFN(entry->io_addr), entry->size,
					pgprot_noncached(vma->vm_page_prot), rdma_entry);
		break;
	case QRNIC_MMAP_PAGES:
		err = qrnic_mmap_pages(entry, vma);
		break;
	default:
		err = -EINVAL;
		break;
	}
	rdma_user_mmap_entry_put(rdma_entry);
	return err;
}

static void qrnic_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	struct qrnic_mmap_entry *entry = to_qmentry(rdma_entry);

	if (entry->type == QRNIC_MMAP_PAGES && entry->va) {
		qrnic_frags_free(entry->dmadev, entry->va, entry->pl, entry->size >> PAGE_SHIFT);
	} else if (entry->type == QRNIC_MMAP_PAGES) {
		free_pages_exact(entry->cpu_addr, entry->size);
	}
	kfree(entry);
}

/* ---- protection domains -------------------------------------------------------------- */

static int qrnic_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibpd->device);
	struct qrnic_pd *pd = to_qpd(ibpd);
	struct qrnic_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct qrnic_ucontext, ibucontext);
	struct qrnic_alloc_pd_resp resp = {};
	int err;

	pd->uctx = uctx ? uctx->uctx : 0;
	err = qrnic_cmd_create_pd(dev, pd->uctx, &pd->pdn);
	if (err)
		return err;
	if (udata) {
		resp.pdn = pd->pdn;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err) {
			qrnic_cmd_destroy_pd(dev, pd->pdn);
			return err;
		}
	}
	return 0;
}

static int qrnic_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibpd->device);
	int err;

	err = qrnic_cmd_destroy_pd(dev, to_qpd(ibpd)->pdn);
	return qrnic_dead(dev) ? 0 : err;
}

/* ---- address handles ------------------------------------------------------------------ */

int qrnic_ah_attr_to_av(struct qrnic_dev *dev, const struct rdma_ah_attr *ah_attr,
			struct qrnic_av *av)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;

	if (ah_attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah_attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(ah_attr);
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr || sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	av->flow_label = cpu_to_le32(grh->flow_label & 0xfffff);
	av->sgid_index = sgid_attr->index;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->net_type = rdma_gid_attr_network_type(sgid_attr) == RDMA_NETWORK_IPV4 ?
		       QRNIC_NET_IPV4 : QRNIC_NET_IPV6;
	memcpy(av->dmac, ah_attr->roce.dmac, ETH_ALEN);
	return 0;
}

static int qrnic_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
			   struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibah->device);
	struct qrnic_ah *ah = to_qah(ibah);
	bool atomic = !(init_attr->flags & RDMA_CREATE_AH_SLEEPABLE);
	struct qrnic_create_ah_resp resp = {};
	int err;

	err = qrnic_ah_attr_to_av(dev, init_attr->ah_attr, &ah->av);
	if (err)
		return err;
	err = qrnic_cmd_create_ah(dev, to_qpd(ibah->pd)->pdn, &ah->av, &ah->ahn, atomic);
	if (err)
		return err;
	if (udata) {
		resp.ahn = ah->ahn;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err) {
			qrnic_cmd_destroy_ah(dev, ah->ahn, atomic);
			return err;
		}
	}
	return 0;
}

static int qrnic_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct qrnic_dev *dev = to_qdev(ibah->device);
	int err;

	err = qrnic_cmd_destroy_ah(dev, to_qah(ibah)->ahn,
				   !(flags & RDMA_DESTROY_AH_SLEEPABLE));
	return qrnic_dead(dev) ? 0 : err;
}

static int qrnic_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *ah_attr)
{
	struct qrnic_ah *ah = to_qah(ibah);
	union ib_gid dgid;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(ah_attr, QRNIC_PORT);
	memcpy(dgid.raw, ah->av.dgid, sizeof(dgid.raw));
	rdma_ah_set_grh(ah_attr, &dgid, le32_to_cpu(ah->av.flow_label), ah->av.sgid_index,
			ah->av.hop_limit, ah->av.traffic_class);
	memcpy(ah_attr->roce.dmac, ah->av.dmac, ETH_ALEN);
	return 0;
}

/* ---- UD multicast (spec 12.11) ---------------------------------------------------------- */

static int qrnic_mcast(struct ib_qp *ibqp, union ib_gid *gid, u8 op)
{
	struct qrnic_dev *dev = to_qdev(ibqp->device);

	if (!(dev->caps & QRNIC_CAP_MCAST))
		return -EOPNOTSUPP;
	if (ibqp->qp_type != IB_QPT_UD)
		return -EINVAL;
	return qrnic_cmd_mcast(dev, op, ibqp->qp_num, gid->raw);
}

static int qrnic_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return qrnic_mcast(ibqp, gid, QRNIC_CMD_ATTACH_MCAST);
}

static int qrnic_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return qrnic_mcast(ibqp, gid, QRNIC_CMD_DETACH_MCAST);
}

/* ---- registration ------------------------------------------------------------------------ */

static const struct ib_device_ops qrnic_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = QRNIC_UVERBS_ABI_VERSION,
	/* no RDMA_DRIVER_QRNIC: rdma-core binds the provider by PCI ID */
	.uverbs_no_driver_id_binding = 1,

	.add_gid = qrnic_add_gid,
	.alloc_hw_port_stats = qrnic_alloc_hw_port_stats,
	.alloc_pd = qrnic_alloc_pd,
	.alloc_ucontext = qrnic_alloc_ucontext,
	.attach_mcast = qrnic_attach_mcast,
	.create_ah = qrnic_create_ah,
	.create_cq = qrnic_create_cq,
	.create_qp = qrnic_create_qp,
	.create_user_ah = qrnic_create_ah,
	.dealloc_pd = qrnic_dealloc_pd,
	.dealloc_ucontext = qrnic_dealloc_ucontext,
	.del_gid = qrnic_del_gid,
	.detach_mcast = qrnic_detach_mcast,
	.dereg_mr = qrnic_dereg_mr,
	.destroy_ah = qrnic_destroy_ah,
	.destroy_cq = qrnic_destroy_cq,
	.destroy_qp = qrnic_destroy_qp,
	.disassociate_ucontext = qrnic_disassociate_ucontext,
	.drain_rq = qrnic_drain_rq,
	.drain_sq = qrnic_drain_sq,
	.get_dev_fw_str = qrnic_get_dev_fw_str,
	.get_dma_mr = qrnic_get_dma_mr,
	.get_hw_stats = qrnic_get_hw_stats,
	.get_link_layer = qrnic_get_link_layer,
	.get_port_immutable = qrnic_get_port_immutable,
	.mmap = qrnic_mmap,
	.mmap_free = qrnic_mmap_free,
	.modify_qp = qrnic_modify_qp,
	.poll_cq = qrnic_poll_cq,
	.post_recv = qrnic_post_recv,
	.post_send = qrnic_post_send,
	.query_ah = qrnic_query_ah,
	.query_device = qrnic_query_device,
	.query_pkey = qrnic_query_pkey,
	.query_port = qrnic_query_port,
	.query_qp = qrnic_query_qp,
	.reg_user_mr = qrnic_reg_user_mr,
	.req_notify_cq = qrnic_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, qrnic_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, qrnic_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, qrnic_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, qrnic_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, qrnic_ucontext, ibucontext),
};

/* /sys/class/infiniband/<dev>/cc/<name> (ABI 1.9, qrnic_cc_sysfs.c) */
static const struct ib_device_ops qrnic_cc_params_ops = {
	.device_group = &qrnic_cc_attr_group,
};

/*
 * Allocate and register a fresh ib_device for @dev (at probe, and after
 * every recovery from a fatal error).  On failure nothing is left behind.
 */
int qrnic_ib_register(struct qrnic_dev *dev)
{
	struct ib_device *ibdev;
	struct qrnic_ib *ib;
	unsigned long flags;
	int err;

	ib = ib_alloc_device(qrnic_ib, ibdev);
	if (!ib)
		return -ENOMEM;
	ib->dev = dev;
	ibdev = &ib->ibdev;
	ibdev->dev.parent = &dev->pdev->dev;	/* sysfs: .../qrnic_0/device -> the PCI function */
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = dev->num_ceqs;
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, dev->mac);
	strscpy(ibdev->node_desc, "qrnic RoCEv2 NIC", sizeof(ibdev->node_desc));
	ib_set_device_ops(ibdev, &qrnic_dev_ops);
	if ((dev->caps & QRNIC_CAP_SRQ) && qrnic_attr(dev, max_srq) > 1)
		ib_set_device_ops(ibdev, &qrnic_srq_ops);
	if (qrnic_has_xrc(dev))
		ib_set_device_ops(ibdev, &qrnic_xrc_ops);
	if (qrnic_has_mem_mgt(dev))
		ib_set_device_ops(ibdev, &qrnic_mem_mgt_ops);
	if (qrnic_has_mw(dev))
		ib_set_device_ops(ibdev, &qrnic_mw_ops);
	if (qrnic_has_cq_resize(dev)) {
		ib_set_device_ops(ibdev, &qrnic_cq_resize_ops);
		/*
		 * Kernel ULP CQs polled from softirq or a workqueue (nvme-rdma,
		 * nvmet-rdma, xprtrdma, iser) get ib_core's RDMA DIM: it watches
		 * completions per event and moves the CQ along its profiles
		 * (1 us/1 CQE .. 32 us/32 CQEs) with modify_cq, i.e. MODIFY_CQ
		 * from a workqueue.  It starts at one CQE (no moderation), so a
		 * lightly loaded CQ keeps its latency.
		 */
		ibdev->use_cq_dim = qrnic_cq_dim;
	}
	if (qrnic_has_rereg(dev))
		ib_set_device_ops(ibdev, &qrnic_rereg_ops);
	if (qrnic_has_cc_params(dev))
		ib_set_device_ops(ibdev, &qrnic_cc_params_ops);

	err = ib_device_set_netdev(ibdev, dev->ndev, QRNIC_PORT);
	if (err)
		goto err_dealloc;
	/*
	 * The largest scatterlist segment a ULP may hand us (the block layer's
	 * max_segment_size comes from it): the device takes any length, but
	 * the DMA layer maps a segment in one piece, and a bounce buffer
	 * (swiotlb=force, SEV/TDX guests) holds at most 256 KiB in one
	 * (dma_max_mapping_size(); SIZE_MAX otherwise).  With UINT_MAX,
	 * nvme-rdma's 1 MiB I/Os failed under swiotlb=force ("swiotlb buffer
	 * is full (sz: 913408 bytes)", "Failed to map data").
	 */
	dma_set_max_seg_size(&dev->pdev->dev,
			     min_t(size_t, UINT_MAX, dma_max_mapping_size(&dev->pdev->dev)));
	err = ib_register_device(ibdev, "qrnic_%d", &dev->pdev->dev);
	if (err) {
		dev_err(&dev->pdev->dev, "ib_register_device failed: %d\n", err);
		ib_device_set_netdev(ibdev, NULL, QRNIC_PORT);
		goto err_dealloc;
	}
	spin_lock_irqsave(&dev->ib_lock, flags);
	dev->ib = ib;
	set_bit(QRNIC_FLAG_IB_REGISTERED, &dev->flags);
	spin_unlock_irqrestore(&dev->ib_lock, flags);
	return 0;

err_dealloc:
	ib_dealloc_device(ibdev);
	return err;
}

/*
 * Unregister and free the ib_device, if there is one.  Sleeps: the core
 * destroys every object still open (user contexts are disassociated: their
 * processes get IB_EVENT_DEVICE_FATAL and -EIO from then on), waits for the
 * kernel ULPs to let go, flushes queued events, then drops the netdev.
 */
void qrnic_ib_unregister(struct qrnic_dev *dev)
{
	unsigned long flags;
	struct qrnic_ib *ib;

	spin_lock_irqsave(&dev->ib_lock, flags);
	ib = dev->ib;
	clear_bit(QRNIC_FLAG_IB_REGISTERED, &dev->flags);
	dev->ib = NULL;
	spin_unlock_irqrestore(&dev->ib_lock, flags);
	if (!ib)
		return;
	ib_unregister_device(&ib->ibdev);
	ib_dealloc_device(&ib->ibdev);
}
