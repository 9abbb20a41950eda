/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qrnic ABI: PCI identity, BAR map, control registers and doorbells.
 * docs/spec.md sections 1-4, 7.3 and 14 describe the same thing in prose.
 */
#ifndef QRNIC_REGS_H
#define QRNIC_REGS_H

#include "qrnic_abi_types.h"

/* ---- PCI identity ------------------------------------------------------ */
/*
 * 1af4:10f0-10ff is the range QEMU's docs/specs/pci-ids.rst leaves
 * "available for experimental usage without registration".  virtio-pci
 * matches the vendor but rejects device IDs outside 0x1000-0x107f, so no
 * in-tree driver binds to it.
 */
#define QRNIC_PCI_VENDOR_ID		0x1af4
#define QRNIC_PCI_DEVICE_ID		0x10f7
#define QRNIC_PCI_SUBSYS_VENDOR_ID	0x1af4
#define QRNIC_PCI_SUBSYS_ID		0x0001
#define QRNIC_PCI_REVISION		0x01
#define QRNIC_PCI_CLASS			0x020000	/* network, ethernet */

/* ABI version: major changes break old drivers, minor ones add fields. */
#define QRNIC_ABI_MAJOR			1
#define QRNIC_ABI_MINOR			11
#define QRNIC_ABI_VERSION		((QRNIC_ABI_MAJOR << 16) | QRNIC_ABI_MINOR)

/* ---- BARs -------------------------------------------------------------- */
#define QRNIC_BAR_REGS			0	/* control registers, 64-bit BAR */
#define QRNIC_BAR_REGS_SIZE		0x1000
#define QRNIC_BAR_DB			2	/* doorbell pages, 64-bit BAR */
#define QRNIC_DB_PAGE_SIZE		0x1000	/* one page per user context */
#define QRNIC_BAR_MSIX			4	/* MSI-X table and PBA */

/* ---- BAR0 control registers (32-bit unless marked 64) ------------------ */
#define QRNIC_REG_VERSION		0x000	/* RO  QRNIC_ABI_VERSION */
#define QRNIC_REG_CAPS			0x004	/* RO  QRNIC_CAP_*, fixed (not from config) */
#define QRNIC_REG_CTRL			0x008	/* RW  QRNIC_CTRL_* */
#define QRNIC_REG_STATUS		0x00c	/* RO  QRNIC_STATUS_* */
#define QRNIC_REG_FATAL_CODE		0x010	/* RO  QRNIC_FATAL_* when STATUS.FATAL */
#define QRNIC_REG_NUM_DB_PAGES		0x014	/* RO  doorbell pages in BAR2 */
#define QRNIC_REG_NUM_VECTORS		0x018	/* RO  MSI-X vectors */
#define QRNIC_REG_SCRATCH		0x01c	/* RW  free for driver use */
#define QRNIC_REG_AQ_SQ_BASE_LO		0x020	/* RW  admin SQ ring, 4 KiB aligned */
#define QRNIC_REG_AQ_SQ_BASE_HI		0x024
#define QRNIC_REG_AQ_CQ_BASE_LO		0x028	/* RW  admin CQ ring, 4 KiB aligned */
#define QRNIC_REG_AQ_CQ_BASE_HI		0x02c
#define QRNIC_REG_AQ_CTRL		0x030	/* RW  QRNIC_AQ_CTRL_* */
#define QRNIC_REG_AQ_SQ_DB		0x034	/* WO  admin SQ producer index */
#define QRNIC_REG_AQ_SQ_CI		0x038	/* RO  admin SQ consumer index */
#define QRNIC_REG_AQ_STATUS		0x03c	/* RO  QRNIC_AQ_STATUS_* */
#define QRNIC_REG_EQ_DB			0x040	/* WO64 event queue doorbell */
#define QRNIC_REG_ETH_TX_BASE_LO	0x080	/* RW  Ethernet TX ring */
#define QRNIC_REG_ETH_TX_BASE_HI	0x084
#define QRNIC_REG_ETH_RX_BASE_LO	0x088	/* RW  Ethernet RX ring */
#define QRNIC_REG_ETH_RX_BASE_HI	0x08c
#define QRNIC_REG_ETH_CTRL		0x090	/* RW  QRNIC_ETH_CTRL_* */
#define QRNIC_REG_ETH_TX_DB		0x094	/* WO  TX producer index */
#define QRNIC_REG_ETH_RX_DB		0x098	/* WO  RX producer index */
#define QRNIC_REG_ETH_TX_CI		0x09c	/* RO  TX consumer index */
#define QRNIC_REG_ETH_RX_CI		0x0a0	/* RO  RX consumer index */
#define QRNIC_REG_ETH_IRQ		0x0a4	/* RW  [15:0] MSI-X vector; [31] enable */
#define QRNIC_REG_MAC_LO		0x0b0	/* RO  MAC bytes 0-3 */
#define QRNIC_REG_MAC_HI		0x0b4	/* RO  MAC bytes 4-5 in [15:0] */
#define QRNIC_REG_PORT_STATUS		0x0b8	/* RO  QRNIC_PORT_STATUS_* */
#define QRNIC_REG_ETH_MTU		0x0bc	/* RO  port Ethernet MTU (payload bytes) */
#define QRNIC_REG_CLOCK_LO		0x0c0	/* RO64 device clock (ABI 1.7): ns, [31:0]; */
#define QRNIC_REG_CLOCK_HI		0x0c4	/* RO  [63:32]; or one 64-bit read at CLOCK_LO */

/*
 * The device clock (ABI 1.7): a free-running 64-bit count of nanoseconds of
 * the device's time base (in QEMU the virtual clock, in the simulator the
 * simulated time).  It never stops or goes back, not at CTRL.RESET either;
 * it wraps after 2^64 ns.  Read it with one 64-bit read, or as HI, LO, HI
 * again (retry while the two HI reads differ).  Completion timestamps
 * (QRNIC_CQ_F_TIMESTAMP) are in its units.  QUERY_DEVICE reports its
 * frequency in kHz (hca_core_clock) and its width (timestamp_mask).
 */
#define QRNIC_CLOCK_KHZ			1000000u	/* 1 GHz: one tick per ns */
#define QRNIC_CLOCK_MASK		0xffffffffffffffffull	/* 64 bits wide */

/* Reset values: CTRL=0, STATUS=READY, FATAL_CODE=0, AQ_*=0, AQ_STATUS=0,
 * ETH_*=0, SCRATCH=0.  VERSION and CAPS are constants of the device
 * revision (CAPS = QRNIC_CAPS_ALL); NUM_*, MAC and ETH_MTU come
 * from the device config; PORT_STATUS follows the link (not reset).
 * While STATUS.FATAL is set, writes other than CTRL and SCRATCH are ignored. */

#define QRNIC_CAP_RC			(1u << 0)
#define QRNIC_CAP_UD			(1u << 1)
#define QRNIC_CAP_ATOMIC		(1u << 2)
#define QRNIC_CAP_IPV6			(1u << 3)
#define QRNIC_CAP_ETH			(1u << 4)
#define QRNIC_CAP_UC			(1u << 5)
#define QRNIC_CAP_SRQ			(1u << 6)
#define QRNIC_CAP_MCAST			(1u << 7)
#define QRNIC_CAP_MEM_MGT		(1u << 8)	/* ALLOC_MR, REG_MR/LOCAL_INV WQEs,
							 * SEND_WITH_INV (spec 12.12) */
#define QRNIC_CAP_MW			(1u << 9)	/* memory windows type 1 and 2:
							 * ALLOC_MW, BIND_MW (spec 12.13) */
#define QRNIC_CAP_CQ_RESIZE		(1u << 10)	/* RESIZE_CQ, MODIFY_CQ (moderation) */
#define QRNIC_CAP_XRC			(1u << 11)	/* XRC domains, XRC SRQs, XRC INI/TGT QPs
							 * (ABI 1.3) */
#define QRNIC_CAP_QP_CC			(1u << 12)	/* per-QP congestion control:
							 * QRNIC_QP_ATTR_CC (ABI 1.4) */
#define QRNIC_CAP_BF			(1u << 13)	/* BlueFlame: a WQE written into the
							 * doorbell page (QRNIC_DB_BF_*, ABI 1.5) */
#define QRNIC_CAP_CQE_TS		(1u << 14)	/* the device clock, 64-byte CQEs with
							 * completion timestamps:
							 * QRNIC_CQ_F_TIMESTAMP (ABI 1.7) */
#define QRNIC_CAP_RING_PAGELIST		(1u << 15)	/* CQ, QP and SRQ rings named by page
							 * lists (QRNIC_*_F_PAGELIST, ABI 1.8) */
#define QRNIC_CAP_CC_PARAMS		(1u << 16)	/* QUERY_CC, SET_CC: congestion control
							 * parameters at run time (ABI 1.9) */
#define QRNIC_CAP_RQ_DBREC		(1u << 17)	/* RQ producer index records:
							 * CREATE_QP rq_dbrec_addr (ABI 1.10) */
#define QRNIC_CAP_SQ_DBREC		(1u << 18)	/* SQ producer index records with a
							 * device-written doorbell flag:
							 * CREATE_QP sq_dbrec_addr (ABI 1.11) */
/* what this device revision has: the CAPS register and QUERY_DEVICE caps */
#define QRNIC_CAPS_ALL			(QRNIC_CAP_RC | QRNIC_CAP_UD | QRNIC_CAP_ATOMIC | \
					 QRNIC_CAP_IPV6 | QRNIC_CAP_ETH | QRNIC_CAP_UC | \
					 QRNIC_CAP_SRQ | QRNIC_CAP_MCAST | QRNIC_CAP_MEM_MGT | \
					 QRNIC_CAP_MW | QRNIC_CAP_CQ_RESIZE | QRNIC_CAP_XRC | \
					 QRNIC_CAP_QP_CC | QRNIC_CAP_BF | QRNIC_CAP_CQE_TS | \
					 QRNIC_CAP_RING_PAGELIST | QRNIC_CAP_CC_PARAMS | \
					 QRNIC_CAP_RQ_DBREC | QRNIC_CAP_SQ_DBREC)

#define QRNIC_CTRL_ENABLE		(1u << 0)  /* device processes queues and frames */
#define QRNIC_CTRL_RESET		(1u << 1)  /* write 1: full function reset; reads 0 */

#define QRNIC_STATUS_READY		(1u << 0)  /* registers may be programmed */
#define QRNIC_STATUS_ENABLED		(1u << 1)
#define QRNIC_STATUS_FATAL		(1u << 2)  /* only RESET clears it */

#define QRNIC_FATAL_NONE		0
#define QRNIC_FATAL_DMA			1	/* a device-internal DMA failed */
#define QRNIC_FATAL_INJECTED		2	/* fault injection (tests only) */
#define QRNIC_FATAL_AQ			3	/* admin queue ring unreachable */

/* AQ_CTRL: [3:0] log2 of entries in both admin rings (1..12); [31] enable. */
#define QRNIC_AQ_CTRL_LOG_DEPTH_MASK	0xfu
#define QRNIC_AQ_CTRL_ENABLE		(1u << 31)
#define QRNIC_AQ_MAX_LOG_DEPTH		12
/* AQ_STATUS */
#define QRNIC_AQ_STATUS_ENABLED		(1u << 0)
#define QRNIC_AQ_STATUS_ERROR		(1u << 1)  /* bad base/depth at enable, producer index
						    * more than depth ahead, or ring DMA
						    * failure; cleared by disable or by a
						    * successful enable */

/* ETH_CTRL: [3:0] log2 TX entries, [7:4] log2 RX entries (1..12),
 * [30] RX enable, [31] TX enable.  An enable bit with a bad log size or
 * base is dropped; enabling or disabling a ring restarts its indexes at 0;
 * ring bases are read-only while their ring is enabled. */
#define QRNIC_ETH_CTRL_TX_LOG_MASK	0xfu
#define QRNIC_ETH_CTRL_RX_LOG_SHIFT	4
#define QRNIC_ETH_CTRL_RX_ENABLE	(1u << 30)
#define QRNIC_ETH_CTRL_TX_ENABLE	(1u << 31)

#define QRNIC_PORT_STATUS_LINK_UP	(1u << 0)

/*
 * EQ_DB (64-bit write): [15:0] eqn, [16] arm, [63:32] consumer index
 * (free-running).  Arming with a consumer index behind the producer
 * raises the vector at once.  Ignored and counted while CTRL.ENABLE is 0 or
 * STATUS.FATAL is set, for an unknown eqn, or for a consumer index outside
 * [pi - depth, pi].
 */
#define QRNIC_EQ_DB_EQN_MASK		0xffffull
#define QRNIC_EQ_DB_ARM			(1ull << 16)
#define QRNIC_EQ_DB_CI_SHIFT		32

/* ---- Doorbell pages (BAR2): page N belongs to user context N ------------
 * Page 0 is the kernel's.  Every doorbell is one 64-bit write; other
 * access sizes are ignored and counted.  A doorbell naming a queue that
 * belongs to another context is ignored and counted, and so are doorbells
 * while CTRL.ENABLE is 0 or STATUS.FATAL is set, doorbells on the page of
 * an unallocated user context, and indexes out of range (spec 3.2).
 */
#define QRNIC_DB_SQ			0x00	/* [23:0] qpn, [63:32] SQ producer index */
#define QRNIC_DB_RQ			0x08	/* [23:0] qpn, [63:32] RQ producer index */
#define QRNIC_DB_CQ			0x10	/* [23:0] cqn, [24] arm, [25] solicited only,
						 * [63:32] CQ consumer index */
#define QRNIC_DB_SRQ			0x18	/* [23:0] srqn, [63:32] SRQ producer index */
#define QRNIC_DB_CLOCK			0x20	/* RO (ABI 1.7): the device clock, as
						 * QRNIC_REG_CLOCK_LO/HI (a 64-bit read at
						 * 0x20, or 32-bit reads at 0x20 and 0x24),
						 * so that user space reads it from its own
						 * doorbell page; writes are ignored */
#define QRNIC_DB_QN_MASK		0xffffffull
#define QRNIC_DB_CQ_ARM			(1ull << 24)
#define QRNIC_DB_CQ_SOLICITED		(1ull << 25)
#define QRNIC_DB_IDX_SHIFT		32

/*
 * The SQ record of a QP created with CREATE_QP sq_dbrec_addr (ABI 1.11,
 * QRNIC_CAP_SQ_DBREC; spec 8.6.2): the driver writes the SQ producer index
 * to pi (after the WQEs), fences, then reads flags, and rings QRNIC_DB_SQ
 * only if QRNIC_SQ_DBREC_NO_DB is clear.  The device writes flags.
 */
struct qrnic_sq_dbrec {
	qrnic_le32 pi;		/* driver: the SQ producer index, after the WQEs */
	qrnic_le32 flags;	/* device: QRNIC_SQ_DBREC_* */
};
QRNIC_ASSERT_SIZE(struct qrnic_sq_dbrec, 8);
#define QRNIC_SQ_DBREC_NO_DB		(1u << 0)	/* the device will read pi again
							 * without a doorbell */

/*
 * BlueFlame buffers (QRNIC_CAP_BF, ABI 1.5; spec 3.2.1).  Each doorbell page
 * holds QRNIC_DB_BF_NUM buffers; buffer n starts at QRNIC_DB_BF_BASE +
 * n * QRNIC_DB_BF_STRIDE.  Software copies a send WQE that it has ALSO
 * written to the SQ ring (bytes 0..8*nwords-1, at most QRNIC_BF_MAX_WQE)
 * into the buffer's data area with aligned 64-bit stores, then writes the
 * buffer's control word (one 64-bit write at QRNIC_BF_CTRL):
 *   [23:0] qpn, [31:24] nwords (8-byte words written), [63:32] the SQ
 *   producer index, exactly one more than the previous one.
 * The control word is an SQ doorbell (same checks, same effect).  If the
 * doorbell is accepted and every one of the nwords words was written since
 * the buffer's last control word, and 8 <= nwords <= 32, and nwords * 8
 * fits the QP's stride, and the index moves by exactly one, the device
 * copies those bytes once and uses them as the WQE at index pi - 1 instead
 * of reading it from the ring (it is validated exactly like a ring WQE).
 * Otherwise it reads the WQE from the ring as for any doorbell and counts
 * a BF fallback (bf_fallbacks); a BF WQE that turns out to need more than
 * the nwords words it came with (SGEs or inline data beyond them) is also
 * read from the ring and counted.  Data stores of another size, or
 * unaligned, are ignored and counted (doorbells_ignored), which makes the
 * next control word of that buffer a fallback.  Reads return 0.
 */
#define QRNIC_DB_BF_BASE		0x800
#define QRNIC_DB_BF_STRIDE		0x200
#define QRNIC_DB_BF_NUM			2	/* software alternates between them */
#define QRNIC_BF_MAX_WQE		256	/* data area: offsets 0x000..0x0ff */
#define QRNIC_BF_CTRL			0x100	/* control word, within the buffer */
#define QRNIC_BF_NWORDS_SHIFT		24
#define QRNIC_BF_NWORDS_MASK		0xffu

/* ---- Ethernet descriptors (16 bytes) ------------------------------------ */
struct qrnic_eth_desc {
	qrnic_le64 addr;	/* buffer bus address */
	qrnic_le16 len;		/* TX: frame length; RX: buffer size, device writes frame length */
	qrnic_le16 rsvd;
	qrnic_le32 flags;	/* QRNIC_ETH_DESC_*; device sets DONE last */
};
QRNIC_ASSERT_SIZE(struct qrnic_eth_desc, 16);
#define QRNIC_ETH_DESC_DONE		(1u << 0)
#define QRNIC_ETH_DESC_ERR		(1u << 1)  /* TX: bad len or buffer unreadable;
						    * RX: frame larger than the buffer or
						    * write failed (len = 0) */
#define QRNIC_ETH_MAX_FRAME		9018	/* 9000 + 14 + 4; TX also <= ETH_MTU + 18 */

#endif
