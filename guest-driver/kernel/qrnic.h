/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic: Linux driver for the qrnic RoCEv2 RDMA NIC (QEMU device "qrnic").
 * Common definitions shared by the driver's files.
 */
#ifndef QRNIC_H
#define QRNIC_H

#include <linux/bitops.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/semaphore.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "qrnic_abi.h"		/* model/abi: the device ABI */
#include "qrnic_uverbs.h"		/* model/abi: the provider ABI */

#define QRNIC_DRV_NAME		"qrnic"
#define QRNIC_PORT		1

/* ---- module parameters (qrnic_main.c) ----------------------------------- */
extern unsigned int qrnic_admin_timeout_ms;
extern bool qrnic_cq_dim;
extern bool qrnic_rq_dbrec;
extern bool qrnic_sq_dbrec;
extern bool qrnic_bf;
extern unsigned short qrnic_cq_mod_usec, qrnic_cq_mod_count;
extern unsigned int qrnic_cq_dim_scale;
extern unsigned int qrnic_eth_ring_log;
extern unsigned int qrnic_ring_pagelist;

/* Consecutive failed recoveries after which the driver leaves the device dead. */
#define QRNIC_MAX_RECOVERY_FAILURES	5

/* ---- interrupt vectors ------------------------------------------------- */
#define QRNIC_IRQ_AQ		BIT(0)	/* admin CQ */
#define QRNIC_IRQ_ASYNC		BIT(1)	/* async EQ */
#define QRNIC_IRQ_ETH		BIT(2)	/* Ethernet rings */

struct qrnic_dev;
struct qrnic_eq;

struct qrnic_irq {
	struct qrnic_dev *dev;
	unsigned int flags;		/* QRNIC_IRQ_* served by this vector */
	struct qrnic_eq *ceq;		/* completion EQ on this vector, if any */
	int irq;
	bool requested;
	char name[32];
};

/* ---- event queues (qrnic_eq.c) ----------------------------------------- */
struct qrnic_eq {
	struct qrnic_dev *dev;
	struct qrnic_eqe *ring;
	dma_addr_t ring_dma;
	size_t ring_bytes;
	u32 log_depth;
	u32 ci;
	u32 eqn;
	u16 vector;
	bool async;
	bool active;			/* created on the device, handler may run */
};

/* ---- admin queue (qrnic_admin.c) --------------------------------------- */
struct qrnic_aq_ctx {
	struct completion done;
	struct qrnic_aq_cqe cqe;
	u16 cmd_id;
	u8 state;			/* QRNIC_AQ_CTX_* */
	bool aborted;
};

struct qrnic_aq {
	struct qrnic_aq_cmd *sq;
	dma_addr_t sq_dma;
	struct qrnic_aq_cqe *cq;
	dma_addr_t cq_dma;
	u32 log_depth;
	u32 depth;
	u32 sq_pi;			/* under sq_lock */
	u32 cq_ci;			/* under cq_lock */
	spinlock_t sq_lock;
	spinlock_t cq_lock;
	struct semaphore avail;		/* free slots: at most depth outstanding */
	struct qrnic_aq_ctx *ctx;	/* depth of them, named by cmd_id & (depth - 1) */
	bool enabled;
};

/* ---- Ethernet (qrnic_netdev.c) ----------------------------------------- */
struct qrnic_eth_buf {
	struct sk_buff *skb;
	dma_addr_t dma;
	u32 len;
};

struct qrnic_eth {
	struct qrnic_dev *dev;
	struct net_device *ndev;
	struct napi_struct napi;
	struct qrnic_eth_desc *tx_ring;
	struct qrnic_eth_desc *rx_ring;
	dma_addr_t tx_dma;
	dma_addr_t rx_dma;
	u32 tx_log;
	u32 rx_log;
	u32 tx_pi;			/* xmit path (netif tx lock) */
	u32 tx_ci;			/* NAPI */
	u32 rx_pi;
	u32 rx_ci;
	u32 rx_buf_len;
	struct qrnic_eth_buf *tx_buf;
	struct qrnic_eth_buf *rx_buf;
	bool up;
};

/* ---- device ------------------------------------------------------------ */
enum {
	QRNIC_FLAG_FATAL,		/* device dead: admin fails fast, destroys succeed */
	QRNIC_FLAG_IB_REGISTERED,	/* dev->ib is registered (under ib_lock) */
	QRNIC_FLAG_GONE,		/* surprise removal: no recovery */
	QRNIC_FLAG_STOPPED,		/* dead and reset: no CQE will be written any
					 * more, kernel CQs make software flushes */
};

/*
 * The ib_device is allocated separately from struct qrnic_dev: after a
 * device fatal error the driver unregisters it (the RDMA core tears down
 * every user context and kernel ULP on it), resets the PCI function, brings
 * it up again and registers a fresh ib_device.  The PCI function, its
 * vectors and the net_device stay.
 */
struct qrnic_ib {
	struct ib_device ibdev;		/* first: ib_alloc_device() */
	struct qrnic_dev *dev;
};

struct qrnic_dev {
	struct pci_dev *pdev;
	void __iomem *regs;		/* BAR0 */
	void __iomem *kdb;		/* BAR2 page 0: the kernel's doorbells */
	resource_size_t db_bar_start;
	resource_size_t db_bar_len;

	u32 version;
	u32 caps;
	u32 num_db_pages;
	u32 hw_vectors;
	u8 mac[ETH_ALEN];
	u32 eth_mtu;
	struct qrnic_device_attr attr;	/* QUERY_DEVICE at probe */
	struct qrnic_port_attr port;	/* QUERY_PORT at probe (refreshed by query_port) */

	unsigned long flags;		/* QRNIC_FLAG_* */
	u32 fatal_code;

	/*
	 * The registered ib_device, or NULL (during recovery, or after a
	 * failed one).  ib_lock orders event dispatch (any context) against
	 * unregistration (recovery work, remove).
	 */
	struct qrnic_ib *ib;
	spinlock_t ib_lock;

	/* Recovery after a fatal error (qrnic_main.c). */
	struct delayed_work recovery_work;
	struct delayed_work health_work;	/* polls STATUS.FATAL */
	u32 fatal_count;		/* fatal errors seen */
	u32 recoveries;			/* successful recoveries */
	atomic_t ring_pagelists;	/* rings allocated as page lists (debugfs) */
	u32 recovery_failures;		/* consecutive failed attempts */

	struct qrnic_aq aq;

	int nvec;
	struct qrnic_irq *irqs;
	int async_vector;
	int eth_vector;

	struct qrnic_eq async_eq;
	struct qrnic_eq *ceqs;
	int num_ceqs;

	struct qrnic_eth *eth;
	struct net_device *ndev;

	struct dentry *debugfs;

	/*
	 * Fast registration work requests posted and completions seen by the
	 * kernel data path (debugfs "mem_mgt"; they survive recovery).
	 */
	struct {
		atomic64_t alloc_mr;		/* ALLOC_MR that succeeded */
		atomic64_t fast_mrs;		/* fast-registration MRs now allocated */
		atomic64_t reg_mr_posted;	/* IB_WR_REG_MR WQEs */
		atomic64_t local_inv_posted;	/* IB_WR_LOCAL_INV WQEs */
		atomic64_t send_inv_posted;	/* IB_WR_SEND_WITH_INV WQEs */
		atomic64_t reg_mr_done;		/* IB_WC_REG_MR completions (signaled) */
		atomic64_t local_inv_done;	/* IB_WC_LOCAL_INV completions (signaled) */
		atomic64_t recv_inv;		/* receives with IB_WC_WITH_INVALIDATE */
		atomic64_t errors;		/* error completions of REG_MR / LOCAL_INV */
		atomic64_t rereg_mr;		/* REREG_MR that succeeded (rereg_user_mr) */
		atomic64_t rereg_repin;		/* of them: pinned again (TRANS, or access made writable) */
	} frwr;

	/* SQ records of kernel QPs (ABI 1.11; debugfs "sq_dbrec") */
	struct {
		atomic64_t qps;			/* kernel QPs created with one */
		atomic64_t skipped;		/* posts that rang no doorbell: the device's flag */
		atomic64_t rung;		/* posts that found the flag clear and rang */
	} sqrec;

	/* Kernel CQ moderation by the driver (debugfs "cq_moderation") */
	struct {
		atomic64_t fixed_cqs;		/* CQs given cq_mod_usec / cq_mod_count */
		atomic64_t ignored;		/* modify_cq on such a CQ: nothing done */
		atomic64_t dim_modify;		/* DIM's modify_cq sent (scaled by cq_dim_scale) */
		atomic_t dim_period_max;	/* the longest DIM period asked, us */
		atomic_t dim_period_sent_max;	/* and sent to the device, us */
	} cqmod;

	/*
	 * Kernel QPs with a send or receive queue (qrnic_qp.dev_node), for the
	 * completion handlers called once the device is dead (flush_work,
	 * qrnic_cq.c).  kqp_lock is taken before a CQ's lock.
	 */
	struct list_head kqps;
	spinlock_t kqp_lock;
	struct work_struct flush_work;

	struct xarray cqs;		/* cqn -> struct qrnic_cq (kernel and user) */
	struct xarray qps;		/* qpn -> struct qrnic_qp */
	struct xarray srqs;		/* srqn -> struct qrnic_srq (async events) */
};

static inline struct qrnic_dev *to_qdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct qrnic_ib, ibdev)->dev;
}

static inline bool qrnic_dead(struct qrnic_dev *dev)
{
	return test_bit(QRNIC_FLAG_FATAL, &dev->flags);
}

/* A 32-bit field of QUERY_DEVICE's answer: dev->attr keeps it as the device
 * wrote it, little endian (its two 64-bit fields: le64_to_cpu() at the use). */
#define qrnic_attr(dev, field)	le32_to_cpu((dev)->attr.field)

/* ALLOC_MR, REG_MR / LOCAL_INV WQEs and SEND_WITH_INV (spec 12.12; ABI 1.2) */
static inline bool qrnic_has_mem_mgt(const struct qrnic_dev *dev)
{
	return (qrnic_attr(dev, caps) & QRNIC_CAP_MEM_MGT) &&
	       qrnic_attr(dev, max_fast_reg_pages);
}

/* ALLOC_MW, BIND_MW WQEs (spec 12.13; ABI 1.2) */
static inline bool qrnic_has_mw(const struct qrnic_dev *dev)
{
	return (qrnic_attr(dev, caps) & QRNIC_CAP_MW) && qrnic_attr(dev, max_mw) > 1;
}

/* XRC domains, XRC SRQs, XRC INI/TGT QPs (spec 12.14; ABI 1.3) */
static inline bool qrnic_has_xrc(const struct qrnic_dev *dev)
{
	u32 caps = qrnic_attr(dev, caps);

	return (caps & QRNIC_CAP_XRC) && (caps & QRNIC_CAP_SRQ) &&
	       qrnic_attr(dev, max_xrcd) > 1 && qrnic_attr(dev, max_srq) > 1;
}

/* REREG_MR (ABI 1.2; no capability bit: the ABI minor version says it) */
static inline bool qrnic_has_rereg(const struct qrnic_dev *dev)
{
	return (qrnic_attr(dev, abi_version) & 0xffff) >= 2;
}

/* the device clock and 64-byte timestamp CQEs (ABI 1.7, spec 4.6, 9.8) */
static inline bool qrnic_has_cqe_ts(const struct qrnic_dev *dev)
{
	return (dev->caps & QRNIC_CAP_CQE_TS) && qrnic_attr(dev, hca_core_clock) &&
	       le64_to_cpu(dev->attr.timestamp_mask);
}

/* rings named by page lists (ABI 1.8, spec 6.6.21) */
static inline bool qrnic_has_ring_pagelist(const struct qrnic_dev *dev)
{
	return dev->caps & QRNIC_CAP_RING_PAGELIST;
}

/* RQ producer index records for kernel QPs (ABI 1.10, spec 8.6.1) */
static inline bool qrnic_use_rq_dbrec(const struct qrnic_dev *dev)
{
	return (dev->caps & QRNIC_CAP_RQ_DBREC) && READ_ONCE(qrnic_rq_dbrec);
}

/* SQ records for kernel QPs (ABI 1.11, spec 8.6.2) */
static inline bool qrnic_use_sq_dbrec(const struct qrnic_dev *dev)
{
	return (dev->caps & QRNIC_CAP_SQ_DBREC) && READ_ONCE(qrnic_sq_dbrec);
}

/* QUERY_CC, SET_CC: congestion control parameters at run time (ABI 1.9) */
static inline bool qrnic_has_cc_params(const struct qrnic_dev *dev)
{
	return qrnic_attr(dev, caps) & QRNIC_CAP_CC_PARAMS;
}

/* RESIZE_CQ, MODIFY_CQ (ABI 1.2) */
static inline bool qrnic_has_cq_resize(const struct qrnic_dev *dev)
{
	return qrnic_attr(dev, caps) & QRNIC_CAP_CQ_RESIZE;
}

static inline u32 qrnic_rd(struct qrnic_dev *dev, u32 reg)
{
	return readl(dev->regs + reg);
}

static inline void qrnic_wr(struct qrnic_dev *dev, u32 reg, u32 val)
{
	writel(val, dev->regs + reg);
}

/* ---- verbs objects ------------------------------------------------------ */
enum qrnic_mmap_type {
	QRNIC_MMAP_DB,			/* BAR2 doorbell page, uncached I/O */
	QRNIC_MMAP_PAGES,		/* kernel pages holding a user-visible ring */
};

struct qrnic_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	enum qrnic_mmap_type type;
	phys_addr_t io_addr;		/* QRNIC_MMAP_DB */
	/* QRNIC_MMAP_PAGES: a ring's memory, freed by qrnic_mmap_free() */
	struct device *dmadev;
	void *cpu_addr;			/* contiguous: alloc_pages_exact(), */
	void **va;			/* or listed: coherent pages (qrnic_ring) */
	dma_addr_t *pl;
	size_t size;
};

struct qrnic_ucontext {
	struct ib_ucontext ibucontext;
	u32 uctx;
	struct rdma_user_mmap_entry *db_entry;
};

struct qrnic_pd {
	struct ib_pd ibpd;
	u32 pdn;
	u32 uctx;
};

struct qrnic_ah {
	struct ib_ah ibah;
	u32 ahn;
	struct qrnic_av av;
};

struct qrnic_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;
	u32 key;			/* from REG_MR / ALLOC_MR */
	/*
	 * Fast-registration MRs (alloc_mr, spec 12.12): the page list that
	 * map_mr_sg fills and the device reads when it executes the REG_MR
	 * WQE (little-endian bus addresses, coherent memory).
	 */
	__le64 *pages;
	dma_addr_t pages_dma;
	size_t pages_bytes;
	u32 max_pages;
	u32 npages;			/* of the last map_mr_sg */
	int access;			/* IB_ACCESS_* of a user MR (rereg keeps it) */
};

/*
 * A ring in DMA memory, shared with the device (and possibly user space)
 * for as long as it lives: coherent memory, never a streaming mapping
 * without dma_sync_*() calls, except where noted.
 *
 * Contiguous (va NULL): kernel rings use dma_alloc_coherent(); rings that
 * user space maps are page-allocator pages (alloc_pages_exact(), so every
 * page has its own reference count and can be vm_insert_page()d) mapped
 * with dma_map_single(), and refused when that mapping would need syncs
 * (a bounce buffer); their pages belong to the mmap entry and are freed
 * when the last mapping and the entry are gone (mmap_free).
 *
 * Page-listed (ABI 1.8, QRNIC_CAP_RING_PAGELIST, module parameter
 * ring_pagelist): bytes / PAGE_SIZE pages, each from dma_alloc_coherent()
 * on its own (as mlx5_frag_buf), their CPU addresses in va and bus
 * addresses in pl.  They are not virtually contiguous: the kernel reaches
 * byte 'off' through qrnic_ring_at(); user space maps them page by page
 * (vm_insert_page) into one VA range.  The device gets the list with the
 * create command (qrnic_ring_cmd_addr).  A user ring's arrays belong to
 * its mmap entry.
 */
struct qrnic_ring {
	void *buf;			/* contiguous: the ring; listed: NULL */
	dma_addr_t dma;			/* contiguous: the ring; listed: page 0 */
	size_t bytes;			/* allocation size, page multiple */
	bool user;
	struct qrnic_mmap_entry *mentry;	/* user rings */
	void **va;			/* page-listed: bytes / PAGE_SIZE CPU addresses */
	dma_addr_t *pl;			/* page-listed: their bus addresses */
};

/* The CPU address of byte 'off' of a ring (nothing kernel-side crosses a page:
 * a CQE, a WQE and a dbrec are at most 1 KiB and aligned to their size). */
static inline void *qrnic_ring_at(const struct qrnic_ring *ring, size_t off)
{
	if (!ring->va)
		return ring->buf + off;
	return ring->va[off >> PAGE_SHIFT] + (off & ~PAGE_MASK);
}

/* The page list buffer of one create/resize command (freed once it ran). */
struct qrnic_ring_cmd {
	__le64 *va;
	dma_addr_t dma;
	size_t bytes;
};

#define QRNIC_DBREC_BYTES	64	/* a cache line for a 4-byte index record */

/*
 * A CQ: ring holds the CQEs, then the dbrec word, from CREATE_CQ on.  After
 * a resize (RESIZE_CQ has no dbrec address: the record stays where it was)
 * the CQEs are in resized, a ring of CQEs only, and ring keeps just the
 * record; another resize replaces resized.  cqr is the ring polled.
 */
struct qrnic_cq {
	struct ib_cq ibcq;
	u32 cqn;
	u32 log_depth;			/* kernel CQs: under lock */
	u32 ci;				/* kernel CQs: under lock */
	u32 eq_index;
	struct qrnic_ring ring;		/* CQEs (until a resize), then the dbrec word */
	struct qrnic_ring resized;	/* CQEs after a resize, or buf NULL */
	struct qrnic_ring cqr;		/* kernel CQs: a copy of the ring polled, under lock */
	u32 dbrec_offset;
	u8 flags;			/* QRNIC_CQ_F_*: TIMESTAMP (user CQs only) = 64-byte CQEs */
	spinlock_t lock;
	struct mutex resize_lock;	/* one resize at a time */
	bool created;
	bool fixed_mod;	/* cq_mod_usec applied at creation: modify_cq ignored */
	/* kernel QPs whose SQ / RQ complete here (qrnic_qp.scq_node / rcq_node), under lock */
	struct list_head sq_qps;
	struct list_head rq_qps;
	/* its completion handler called after a fatal error (under dev->kqp_lock) */
	struct list_head kick_node;
	bool kicked;
};

struct qrnic_wq {
	struct qrnic_ring ring;
	u32 log_depth;			/* 0 = no queue (RQ only) */
	u32 wqe_shift;
	u32 pi;				/* kernel QPs: under lock */
	u32 ci;				/* advanced by poll_cq */
	u32 max_sge;
	spinlock_t lock;
};

/* The WQE of index idx (the ring wraps at 2^log_depth entries). */
static inline void *qrnic_wqe(struct qrnic_wq *wq, u32 idx)
{
	return qrnic_ring_at(&wq->ring, (size_t)(idx & ((1U << wq->log_depth) - 1)) << wq->wqe_shift);
}

struct qrnic_qp {
	struct ib_qp ibqp;
	u32 qpn;
	u8 hw_type;			/* QRNIC_QPT_* */
	bool user;
	bool sig_all;
	u32 max_inline;
	enum ib_qp_state state;		/* last state set by modify_qp */
	struct qrnic_wq sq;
	struct qrnic_wq rq;		/* log_depth 0 with an SRQ */
	/*
	 * Kernel QPs on an ABI 1.10 device (QRNIC_CAP_RQ_DBREC): the RQ's
	 * producer index record, after the WQEs in the RQ's ring.  post_recv
	 * writes the index there instead of ringing QRNIC_DB_RQ (an MMIO write,
	 * a VM exit under the big QEMU lock); the device reads it when it
	 * needs a WQE and before it flushes.  NULL: doorbells.
	 */
	__le32 *rq_rec;
	/*
	 * Kernel QPs on an ABI 1.11 device (QRNIC_CAP_SQ_DBREC): the SQ record
	 * after the WQEs in the SQ's ring.  post_send writes the producer
	 * index there, then reads the flag the device writes beside it, and
	 * rings QRNIC_DB_SQ only if the flag is clear (spec 8.6.2).  NULL:
	 * doorbells only.
	 */
	struct qrnic_sq_dbrec *sq_rec;
	/* kernel QPs: on dev->kqps and on their CQs' lists (software flushes) */
	bool tracked;
	struct qrnic_cq *scq;
	struct qrnic_cq *rcq;		/* NULL without an RQ */
	struct list_head dev_node;
	struct list_head scq_node;
	struct list_head rcq_node;	/* with an RQ only */
};

/*
 * A shared receive queue: receive WQEs (the RQ's layout), then the 4-byte
 * consumer-index record that the device writes after each WQE it takes, in
 * one ring.  A slot is free again once the record has passed it.
 */
/*
 * XRC domain: always a kernel one (uctx 0) on the device, because
 * ibv_open_xrcd shares it between processes and ib_core creates XRC TGT
 * QPs without udata (spec 6.6.20).
 */
struct qrnic_xrcd {
	struct ib_xrcd ibxrcd;
	u32 xrcdn;
};

static inline struct qrnic_xrcd *to_qxrcd(struct ib_xrcd *x)
{
	return container_of(x, struct qrnic_xrcd, ibxrcd);
}

struct qrnic_srq {
	struct ib_srq ibsrq;
	u32 srqn;
	struct qrnic_wq wq;		/* wq.ring holds the record too; wq.ci unused */
	u32 dbrec_offset;
	bool user;
};

static inline struct qrnic_ucontext *to_quctx(struct ib_ucontext *u)
{
	return container_of(u, struct qrnic_ucontext, ibucontext);
}

static inline struct qrnic_pd *to_qpd(struct ib_pd *pd)
{
	return container_of(pd, struct qrnic_pd, ibpd);
}

static inline struct qrnic_ah *to_qah(struct ib_ah *ah)
{
	return container_of(ah, struct qrnic_ah, ibah);
}

static inline struct qrnic_mr *to_qmr(struct ib_mr *mr)
{
	return container_of(mr, struct qrnic_mr, ibmr);
}

struct qrnic_mw {
	struct ib_mw ibmw;
	u32 key;			/* from ALLOC_MW: DEREG_MR takes it */
};

static inline struct qrnic_mw *to_qmw(struct ib_mw *mw)
{
	return container_of(mw, struct qrnic_mw, ibmw);
}

static inline struct qrnic_cq *to_qcq(struct ib_cq *cq)
{
	return container_of(cq, struct qrnic_cq, ibcq);
}

static inline struct qrnic_qp *to_qqp(struct ib_qp *qp)
{
	return container_of(qp, struct qrnic_qp, ibqp);
}

static inline struct qrnic_srq *to_qsrq(struct ib_srq *srq)
{
	return container_of(srq, struct qrnic_srq, ibsrq);
}

static inline struct qrnic_mmap_entry *
to_qmentry(struct rdma_user_mmap_entry *e)
{
	return container_of(e, struct qrnic_mmap_entry, rdma_entry);
}

/* ---- qrnic_main.c -------------------------------------------------------- */
void qrnic_set_fatal(struct qrnic_dev *dev, const char *why);
void qrnic_check_health(struct qrnic_dev *dev);

#include "qrnic_admin_cmds.h"

/* ---- qrnic_eq.c ---------------------------------------------------------- */
int qrnic_irqs_setup(struct qrnic_dev *dev);
void qrnic_irqs_teardown(struct qrnic_dev *dev);
void qrnic_irqs_sync(struct qrnic_dev *dev);
int qrnic_eqs_create(struct qrnic_dev *dev);
void qrnic_eqs_destroy(struct qrnic_dev *dev);
void qrnic_eq_sync(struct qrnic_dev *dev, struct qrnic_eq *eq);

/* ---- qrnic_netdev.c ------------------------------------------------------ */
int qrnic_netdev_create(struct qrnic_dev *dev);
void qrnic_netdev_destroy(struct qrnic_dev *dev);
void qrnic_netdev_suspend(struct qrnic_dev *dev);
void qrnic_netdev_resume(struct qrnic_dev *dev);
void qrnic_netdev_irq(struct qrnic_dev *dev);
void qrnic_netdev_link_event(struct qrnic_dev *dev, bool up);
bool qrnic_link_up(struct qrnic_dev *dev);

/* ---- qrnic_verbs.c ------------------------------------------------------- */
int qrnic_ib_register(struct qrnic_dev *dev);
void qrnic_ib_unregister(struct qrnic_dev *dev);
void qrnic_dispatch_port_event(struct qrnic_dev *dev, bool active);
void qrnic_dispatch_dev_event(struct qrnic_dev *dev, enum ib_event_type type);
dma_addr_t qrnic_ring_dma_at(const struct qrnic_ring *ring, size_t off);
int qrnic_ring_cmd_addr(struct qrnic_dev *dev, const struct qrnic_ring *ring, size_t ring_bytes,
			struct qrnic_ring_cmd *c, u64 *addr, bool *listed);
void qrnic_ring_cmd_done(struct qrnic_dev *dev, struct qrnic_ring_cmd *c);
int qrnic_ring_alloc(struct qrnic_dev *dev, struct qrnic_ring *ring,
		     size_t bytes, struct qrnic_ucontext *uctx);
void qrnic_ring_free(struct qrnic_dev *dev, struct qrnic_ring *ring);
u64 qrnic_ring_mmap_key(const struct qrnic_ring *ring);
int qrnic_ah_attr_to_av(struct qrnic_dev *dev, const struct rdma_ah_attr *ah_attr,
			struct qrnic_av *av);

/* ---- qrnic_cq.c ---------------------------------------------------------- */
int qrnic_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs);
int qrnic_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int qrnic_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int qrnic_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
extern const struct ib_device_ops qrnic_cq_resize_ops;
void qrnic_cq_clean(struct qrnic_cq *cq, u32 qpn);
void qrnic_cq_fence(struct qrnic_cq *cq);
void qrnic_cq_track_qp(struct qrnic_dev *dev, struct qrnic_qp *qp, struct qrnic_cq *scq,
		       struct qrnic_cq *rcq);
void qrnic_cq_untrack_qp(struct qrnic_dev *dev, struct qrnic_qp *qp);
void qrnic_flush_work(struct work_struct *work);
void qrnic_cq_comp_event(struct qrnic_dev *dev, u32 cqn);
void qrnic_cq_async_event(struct qrnic_dev *dev, u32 cqn, enum ib_event_type type);

/* ---- qrnic_qp.c ---------------------------------------------------------- */
int qrnic_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init_attr,
		    struct ib_udata *udata);
int qrnic_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		    struct ib_udata *udata);
int qrnic_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		   struct ib_qp_init_attr *init_attr);
int qrnic_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
void qrnic_drain_sq(struct ib_qp *ibqp);
void qrnic_drain_rq(struct ib_qp *ibqp);
int qrnic_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int qrnic_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
void qrnic_qp_async_event(struct qrnic_dev *dev, u32 qpn, enum ib_event_type type);
void qrnic_recv_geometry(u32 sges, u32 *wqe_shift, u32 *max_sge);
int qrnic_post_recv_wq(struct qrnic_dev *dev, struct qrnic_wq *wq, const __le32 *record,
		       __le32 *pi_record, bool ring,
		       u32 qn, u32 db, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);

/* ---- qrnic_srq.c --------------------------------------------------------- */
extern const struct ib_device_ops qrnic_srq_ops;
extern const struct ib_device_ops qrnic_xrc_ops;
void qrnic_srq_async_event(struct qrnic_dev *dev, u32 srqn, enum ib_event_type type);

/* ---- qrnic_mr.c ---------------------------------------------------------- */
struct ib_mr *qrnic_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *qrnic_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
int qrnic_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *qrnic_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start, u64 length,
				  u64 iova, int access, struct ib_pd *ibpd,
				  struct ib_udata *udata);
extern const struct ib_device_ops qrnic_mem_mgt_ops;
extern const struct ib_device_ops qrnic_mw_ops;
extern const struct ib_device_ops qrnic_rereg_ops;

/* ---- qrnic_hw_stats.c ---------------------------------------------------- */
struct rdma_hw_stats *qrnic_alloc_hw_port_stats(struct ib_device *ibdev, u32 port);
/* /sys/class/infiniband/<dev>/cc/ (qrnic_cc_sysfs.c; QRNIC_CAP_CC_PARAMS, ABI 1.9) */
extern const struct attribute_group qrnic_cc_attr_group;
int qrnic_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index);

/*
 * The device hands out a number (CQN, QPN, SRQN) again as soon as its
 * DESTROY completed, while the destroyer has yet to remove the old object
 * from the xarray: a create on another CPU or process must then replace
 * that entry (xa_insert() failed with -EBUSY: seen with concurrent
 * create/destroy loops, tests/test_guest_soak.py), and the destroyer may
 * remove the entry only if it is still its own.
 */
static inline int qrnic_xa_claim(struct xarray *xa, unsigned long index, void *obj)
{
	return xa_err(xa_store_irq(xa, index, obj, GFP_KERNEL));
}

static inline void qrnic_xa_release(struct xarray *xa, unsigned long index, void *obj)
{
	xa_cmpxchg_irq(xa, index, obj, NULL, 0);
}

#endif /* QRNIC_H */
