/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qrnic ABI: the admin queue.  The driver writes 128-byte commands into the
 * admin SQ ring and the new producer index into QRNIC_REG_AQ_SQ_DB; the
 * device copies each command out of host memory once, validates the copy,
 * executes it and writes a 32-byte completion into the admin CQ ring, then
 * raises MSI-X vector 0.  At most (ring depth) commands may be outstanding
 * (submitted and their completion not yet consumed).
 *
 * Strictness: hdr.flags, hdr.rsvd and every payload field named rsvd (and
 * MODIFY_QP's attr.sq_draining) must be 0, else QRNIC_AQ_BAD_PARAM.  Bytes
 * after the opcode's payload structure and fields the opcode does not use
 * are ignored (write them as 0).  A failing command has no side effect.
 * docs/spec.md section 6 is the full reference.
 */
#ifndef QRNIC_ADMIN_H
#define QRNIC_ADMIN_H

#include "qrnic_abi_types.h"
#include "qrnic_queue.h"

#define QRNIC_AQ_SQE_SIZE		128
#define QRNIC_AQ_CQE_SIZE		32
#define QRNIC_AQ_VECTOR			0

/* ---- Opcodes ------------------------------------------------------------ */
#define QRNIC_CMD_QUERY_DEVICE		0x01
#define QRNIC_CMD_QUERY_PORT		0x02
#define QRNIC_CMD_SET_GID		0x03
#define QRNIC_CMD_QUERY_GID		0x04
#define QRNIC_CMD_ALLOC_UCTX		0x05
#define QRNIC_CMD_DEALLOC_UCTX		0x06
#define QRNIC_CMD_CREATE_PD		0x07
#define QRNIC_CMD_DESTROY_PD		0x08
#define QRNIC_CMD_CREATE_CQ		0x09
#define QRNIC_CMD_DESTROY_CQ		0x0a
#define QRNIC_CMD_CREATE_QP		0x0b
#define QRNIC_CMD_MODIFY_QP		0x0c
#define QRNIC_CMD_QUERY_QP		0x0d
#define QRNIC_CMD_DESTROY_QP		0x0e
#define QRNIC_CMD_REG_MR		0x0f
#define QRNIC_CMD_DEREG_MR		0x10
#define QRNIC_CMD_QUERY_MR		0x11
#define QRNIC_CMD_CREATE_AH		0x12
#define QRNIC_CMD_DESTROY_AH		0x13
#define QRNIC_CMD_CREATE_EQ		0x14
#define QRNIC_CMD_DESTROY_EQ		0x15
#define QRNIC_CMD_QUERY_STATS		0x16
#define QRNIC_CMD_CREATE_SRQ		0x17
#define QRNIC_CMD_MODIFY_SRQ		0x18
#define QRNIC_CMD_QUERY_SRQ		0x19
#define QRNIC_CMD_DESTROY_SRQ		0x1a
#define QRNIC_CMD_ATTACH_MCAST		0x1b
#define QRNIC_CMD_DETACH_MCAST		0x1c
#define QRNIC_CMD_ALLOC_MR		0x1d
#define QRNIC_CMD_ALLOC_MW		0x1e
#define QRNIC_CMD_RESIZE_CQ		0x1f
#define QRNIC_CMD_MODIFY_CQ		0x20
#define QRNIC_CMD_REREG_MR		0x21
#define QRNIC_CMD_ALLOC_XRCD		0x22	/* ABI 1.3 */
#define QRNIC_CMD_DEALLOC_XRCD		0x23	/* ABI 1.3 */
#define QRNIC_CMD_QUERY_CC		0x24	/* ABI 1.9 */
#define QRNIC_CMD_SET_CC		0x25	/* ABI 1.9 */
#define QRNIC_CMD_MAX			0x25

/* ---- Status codes (admin CQE .status) ----------------------------------- */
#define QRNIC_AQ_OK			0
#define QRNIC_AQ_BAD_OPCODE		1	/* -EOPNOTSUPP */
#define QRNIC_AQ_BAD_PARAM		2	/* -EINVAL: a field is out of range */
#define QRNIC_AQ_BAD_HANDLE		3	/* -EINVAL: no such PD/CQ/QP/MR/AH/EQ/uctx */
#define QRNIC_AQ_NO_RESOURCES		4	/* -ENOMEM: table full or MTT exhausted */
#define QRNIC_AQ_BAD_STATE		5	/* -EINVAL: QP transition not allowed */
#define QRNIC_AQ_BUSY			6	/* -EBUSY: object still in use, or a
						 * second GSI QP / async EQ */
#define QRNIC_AQ_DMA_ERROR		7	/* -EIO: reading/writing host memory failed */
#define QRNIC_AQ_BAD_ATTR_MASK		8	/* -EINVAL: attr mask wrong for transition */
#define QRNIC_AQ_NOT_SUPPORTED		9	/* -EOPNOTSUPP: valid but not implemented
						 * (MODIFY_QP ALT_PATH, PATH_MIG_STATE, CAP) */
#define QRNIC_AQ_INJECTED		10	/* -EIO: fault injection (tests only) */
#define QRNIC_AQ_STATUS_MAX		10

/* ---- Command and completion entries ------------------------------------- */
struct qrnic_aq_hdr {
	uint8_t    opcode;	/* QRNIC_CMD_* */
	uint8_t    flags;	/* must be 0 */
	qrnic_le16 cmd_id;	/* echoed in the completion */
	qrnic_le32 rsvd;
};
QRNIC_ASSERT_SIZE(struct qrnic_aq_hdr, 8);

struct qrnic_cmd_query {	/* QUERY_DEVICE, QUERY_PORT, QUERY_STATS */
	qrnic_le64 resp_addr;	/* device DMA-writes the answer here */
	qrnic_le32 resp_len;	/* bytes available; the answer is truncated to it */
	qrnic_le32 port;	/* QUERY_PORT: 1; ignored by QUERY_DEVICE/_STATS */
};

struct qrnic_cmd_gid {		/* SET_GID, QUERY_GID (answer in result[0..3] and detail) */
	qrnic_le32 index;	/* < gid_tbl_len */
	uint8_t    valid;	/* SET_GID: 1 sets, 0 clears the entry; QUERY_GID: ignored */
	uint8_t    net_type;	/* QRNIC_NET_*; SET_GID with valid = 1 only */
	qrnic_le16 rsvd;
	uint8_t    gid[16];
};

struct qrnic_cmd_handle {	/* DEALLOC_UCTX, DESTROY_*, DEREG_MR */
	qrnic_le32 handle;	/* uctx, pdn, cqn, qpn, key, ahn or eqn */
};

struct qrnic_cmd_create_pd {
	qrnic_le32 uctx;	/* owning user context; 0 = kernel */
};

/* Ring page lists (ABI 1.8, QRNIC_CAP_RING_PAGELIST; spec 6.6.21): with
 * its command's page-list flag, a ring of at least one 4 KiB page is named
 * by a list instead of one contiguous range, as a PAS array names an mlx5
 * queue: the ring's address field holds the guest address of an array of
 * ring bytes / 4096 little-endian 64-bit page addresses (8-byte aligned,
 * contiguous, read once by the command and not used afterwards), page i
 * holding ring bytes [i * 4096, (i + 1) * 4096).  Every entry is nonzero
 * and 4 KiB aligned.  Strides are powers of two of at most 4096 bytes, so
 * no WQE or CQE straddles two pages.  A bad list (ring smaller than a page,
 * list misaligned, an entry zero or misaligned) fails with BAD_PARAM on
 * the address field (or the flags field: list flag on a sub-page ring); a
 * list that cannot be read:
 * DMA_ERROR.  Nothing is created then. */
#define QRNIC_RING_PAGE_SHIFT		12
#define QRNIC_RING_PAGE_SIZE		(1u << QRNIC_RING_PAGE_SHIFT)
#define QRNIC_RING_PL_ENTRY_SIZE	8	/* qrnic_le64 per page */

struct qrnic_cmd_create_cq {
	qrnic_le32 uctx;
	qrnic_le32 eqn;		/* completion events go to this EQ */
	uint8_t    log_depth;	/* 1..QRNIC_MAX_QUEUE_LOG */
	uint8_t    flags;	/* QRNIC_CQ_F_* (ABI 1.7; before: rsvd, 0) */
	uint8_t    rsvd[6];
	qrnic_le64 ring_addr;	/* contiguous, 4 KiB aligned, QRNIC_CQ_CQE_SIZE(flags)
				 * << log_depth bytes (32 or 64 per CQE); with
				 * QRNIC_CQ_F_PAGELIST its page list (below) */
	qrnic_le64 dbrec_addr;	/* 4-byte consumer index record, 0 = none */
};

/* RESIZE_CQ (ABI 1.2): the CQ moves to a new ring of 1 << log_depth
 * entries (zeroed by the driver, as at CREATE_CQ), of the CQE size it was
 * created with (a QRNIC_CQ_F_TIMESTAMP CQ keeps 64-byte CQEs and their
 * timestamps).  The CQEs not yet
 * consumed (after the consumer index in the record, or of the last CQ
 * doorbell) are copied to slots 0, 1, ... of the new ring, in order, and
 * the indices restart: the next CQE to poll is slot 0, and the device
 * writes 0 to the doorbell record.  result[0] = CQEs carried over.  Fails
 * (nothing changed) when they do not fit: BAD_PARAM on log_depth. */
struct qrnic_cmd_resize_cq {
	qrnic_le32 cqn;
	uint8_t    log_depth;	/* 1..QRNIC_MAX_QUEUE_LOG, <= max_cqe */
	uint8_t    flags;	/* ABI 1.8: QRNIC_CQ_F_PAGELIST or 0 (before: rsvd, 0) */
	uint8_t    rsvd[2];
	qrnic_le64 ring_addr;	/* contiguous, 4 KiB aligned, CQE size << log_depth bytes;
				 * with QRNIC_CQ_F_PAGELIST its page list */
	qrnic_le64 rsvd2;
};

/* MODIFY_CQ (ABI 1.2): completion event moderation.  An armed CQ raises
 * its completion event after 'count' CQEs, or 'period_us' microseconds
 * after the first CQE since it was armed, whichever comes first; 0 turns
 * that trigger off (both 0: an event per arming, at once, the default).
 * An error CQE raises it at once. */
struct qrnic_cmd_modify_cq {
	qrnic_le32 cqn;
	qrnic_le16 count;
	qrnic_le16 period_us;
	qrnic_le32 rsvd[2];
};

#define QRNIC_QP_F_SQ_SIG_ALL		(1u << 0)	/* every send WQE is signaled */
#define QRNIC_QP_F_SQ_PAGELIST		(1u << 1)	/* sq_addr is a page list (ABI 1.8) */
#define QRNIC_QP_F_RQ_PAGELIST		(1u << 2)	/* rq_addr is a page list (ABI 1.8) */

struct qrnic_cmd_create_qp {
	qrnic_le32 uctx;
	qrnic_le32 pdn;
	qrnic_le32 send_cqn;
	qrnic_le32 recv_cqn;
	uint8_t    qp_type;	/* QRNIC_QPT_* */
	uint8_t    sq_log_depth;	/* 1..QRNIC_MAX_QUEUE_LOG */
	uint8_t    sq_wqe_shift;	/* QRNIC_MIN_WQE_SHIFT..QRNIC_MAX_SEND_WQE_SHIFT */
	uint8_t    rq_log_depth;	/* 0..QRNIC_MAX_QUEUE_LOG; 0 = no RQ (rq_addr and rq_wqe_shift 0) */
	uint8_t    rq_wqe_shift;	/* QRNIC_MIN_RECV_WQE_SHIFT..QRNIC_MAX_RECV_WQE_SHIFT */
	uint8_t    rsvd0[3];
	qrnic_le32 flags;	/* QRNIC_QP_F_* */
	union {
		qrnic_le32 srqn;	/* receives come from this SRQ (same uctx and PD
				 * owner; RC, UC, UD); 0 = the QP's own RQ.  With
				 * an SRQ, rq_log_depth, rq_wqe_shift and rq_addr
				 * must be 0 */
		qrnic_le32 xrcd;	/* QRNIC_QPT_XRC_TGT: its XRC domain (ABI 1.3) */
	};
	qrnic_le64 sq_addr;	/* contiguous, 4 KiB aligned; QRNIC_QP_F_SQ_PAGELIST: page list */
	qrnic_le64 rq_addr;	/* the same; QRNIC_QP_F_RQ_PAGELIST: page list */
	/* ABI 1.10 (QRNIC_CAP_RQ_DBREC; older devices ignore it): a 4-byte RQ
	 * producer index record, 4-byte aligned, 0 = none (RQ doorbells only).
	 * The device reads it when the RQ looks empty by the producer index
	 * it last knew and a message needs a receive WQE, and before it
	 * flushes the RQ; the driver writes the index there (after the WQEs)
	 * instead of ringing QRNIC_DB_RQ.  Only with an RQ (docs/spec.md 8.6.1). */
	qrnic_le64 rq_dbrec_addr;
	/* ABI 1.11 (QRNIC_CAP_SQ_DBREC; older devices ignore it): an 8-byte
	 * SQ record, 8-byte aligned, 0 = none (SQ doorbells only): the
	 * producer index the driver writes (struct qrnic_sq_dbrec, qrnic_regs.h) and a flag
	 * the device writes, set while it will read the index again without
	 * a doorbell; the driver then need not ring QRNIC_DB_SQ.  Only with
	 * an SQ (not XRC TGT; docs/spec.md 8.6.2). */
	qrnic_le64 sq_dbrec_addr;
};


/* attr_mask bits: enum ibv_qp_attr_mask */
#define QRNIC_QP_ATTR_STATE		(1u << 0)
#define QRNIC_QP_ATTR_CUR_STATE		(1u << 1)
#define QRNIC_QP_ATTR_EN_SQD_ASYNC	(1u << 2)
#define QRNIC_QP_ATTR_ACCESS_FLAGS	(1u << 3)
#define QRNIC_QP_ATTR_PKEY_INDEX	(1u << 4)
#define QRNIC_QP_ATTR_PORT		(1u << 5)
#define QRNIC_QP_ATTR_QKEY		(1u << 6)
#define QRNIC_QP_ATTR_AV		(1u << 7)
#define QRNIC_QP_ATTR_PATH_MTU		(1u << 8)
#define QRNIC_QP_ATTR_TIMEOUT		(1u << 9)
#define QRNIC_QP_ATTR_RETRY_CNT		(1u << 10)
#define QRNIC_QP_ATTR_RNR_RETRY		(1u << 11)
#define QRNIC_QP_ATTR_RQ_PSN		(1u << 12)
#define QRNIC_QP_ATTR_MAX_QP_RD_ATOMIC	(1u << 13)
#define QRNIC_QP_ATTR_ALT_PATH		(1u << 14)
#define QRNIC_QP_ATTR_MIN_RNR_TIMER	(1u << 15)
#define QRNIC_QP_ATTR_SQ_PSN		(1u << 16)
#define QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC (1u << 17)
#define QRNIC_QP_ATTR_PATH_MIG_STATE	(1u << 18)
#define QRNIC_QP_ATTR_CAP		(1u << 19)
#define QRNIC_QP_ATTR_DEST_QPN		(1u << 20)
#define QRNIC_QP_ATTR_CC		(1u << 21)	/* qrnic's own (ABI 1.4): cc_algo */

/* path_mtu: enum ibv_mtu */
#define QRNIC_MTU_256			1
#define QRNIC_MTU_512			2
#define QRNIC_MTU_1024			3
#define QRNIC_MTU_2048			4
#define QRNIC_MTU_4096			5

/* QP attributes: the body of MODIFY_QP and the answer of QUERY_QP. */
struct qrnic_qp_attr {
	qrnic_le32 attr_mask;	/* MODIFY_QP: QRNIC_QP_ATTR_*; QUERY_QP: 0 */
	uint8_t    qp_state;	/* QRNIC_QPS_* */
	uint8_t    cur_qp_state;
	uint8_t    path_mtu;	/* QRNIC_MTU_* */
	uint8_t    timeout;	/* local ACK timeout: 4.096 us << timeout, 0 = infinite */
	uint8_t    retry_cnt;	/* 0..7 */
	uint8_t    rnr_retry;	/* 0..7, 7 = infinite */
	uint8_t    min_rnr_timer;	/* 0..31, IBTA RNR timer encoding */
	uint8_t    max_rd_atomic;	/* outstanding READ/ATOMIC as requester */
	uint8_t    max_dest_rd_atomic; /* as responder */
	uint8_t    sq_draining;	/* QUERY_QP only: always 0 in ABI 1.0; MODIFY_QP: 0 */
	uint8_t    en_sqd_async_notify;	/* 0/1; reads 0 once SQ_DRAINED was raised */
	uint8_t    port_num;	/* 1 */
	qrnic_le16 pkey_index;	/* 0 */
	uint8_t    cc_algo;	/* ABI 1.4, QRNIC_QP_ATTR_CC: 0 the device's cc_algo, n: n - 1 */
	uint8_t    rsvd;
	qrnic_le32 qkey;
	qrnic_le32 rq_psn;	/* [23:0] */
	qrnic_le32 sq_psn;	/* [23:0] */
	qrnic_le32 dest_qpn;	/* [23:0] */
	qrnic_le32 qp_access_flags; /* QRNIC_ACCESS_REMOTE_* allowed as responder */
	struct qrnic_av av;
};
QRNIC_ASSERT_SIZE(struct qrnic_qp_attr, 72);

struct qrnic_cmd_modify_qp {
	qrnic_le32 qpn;
	qrnic_le32 rsvd;
	struct qrnic_qp_attr attr;
};

struct qrnic_cmd_query_qp {	/* also QUERY_MR: handle = key */
	qrnic_le32 handle;
	qrnic_le32 resp_len;
	qrnic_le64 resp_addr;
};

#define QRNIC_MR_F_PHYS			(1u << 0)	/* DMA MR: no PBL, iova = bus address */

struct qrnic_cmd_reg_mr {
	qrnic_le32 pdn;
	qrnic_le32 access;	/* QRNIC_ACCESS_* */
	qrnic_le32 flags;	/* QRNIC_MR_F_* */
	uint8_t    page_shift;	/* QRNIC_MIN_PAGE_SHIFT..QRNIC_MAX_PAGE_SHIFT */
	uint8_t    pbl_levels;	/* 0..QRNIC_PBL_MAX_LEVELS */
	qrnic_le16 rsvd;
	qrnic_le64 iova;
	qrnic_le64 length;	/* 1..max_mr_size */
	qrnic_le64 pbl_addr;	/* ignored with QRNIC_MR_F_PHYS */
	qrnic_le32 npages;	/* must equal the pages [iova, iova+length) spans;
				 * ignored with QRNIC_MR_F_PHYS */
	qrnic_le32 rsvd2;
};

/* ALLOC_MR: a fast-registration MR (kernel PDs only), free (its key does
 * not work) until a REG_MR WQE registers it.  Holds an MPT slot and
 * max_pages MTT entries until DEREG_MR.  result[0] = its key (MPT index
 * and an initial 8-bit variant).  DEREG_MR and QUERY_MR of such an MR take
 * any key with its MPT index (the variant is the consumer's). */
struct qrnic_cmd_alloc_mr {
	qrnic_le32 pdn;
	qrnic_le32 max_pages;	/* 1..QRNIC_MAX_FAST_REG_PAGES */
	qrnic_le32 flags;	/* must be 0 */
	qrnic_le32 rsvd;
};

/* ALLOC_MW: a memory window of PD pdn (any user context's), unbound until
 * a BIND_MW WQE binds it.  result[0] = its rkey.  DEREG_MR frees it (any
 * key with its MPT index); QUERY_MR reports it. */
#define QRNIC_MW_TYPE_1			1
#define QRNIC_MW_TYPE_2			2	/* type 2B: bound to one QP */

struct qrnic_cmd_alloc_mw {
	qrnic_le32 pdn;
	uint8_t    type;	/* QRNIC_MW_TYPE_* */
	uint8_t    rsvd0[3];
	qrnic_le32 flags;	/* must be 0 */
	qrnic_le32 rsvd;
};

/* REREG_MR (ABI 1.2): an MR registered by REG_MR gets a new translation
 * (iova, length, page_shift, pbl_*, npages, flags PHYS), PD and/or access
 * -- the fields of 'reg' named by 'change'; the others are ignored -- and
 * keeps its key (result[0]).  Checked as REG_MR; nothing changes unless it
 * all succeeds.  BUSY while memory windows are bound to it. */
#define QRNIC_REREG_TRANS		(1u << 0)
#define QRNIC_REREG_PD			(1u << 1)
#define QRNIC_REREG_ACCESS		(1u << 2)

struct qrnic_cmd_rereg_mr {
	qrnic_le32 key;		/* the MR's key, exactly */
	qrnic_le32 change;	/* QRNIC_REREG_*, at least one */
	struct qrnic_cmd_reg_mr reg;
};

struct qrnic_cmd_create_ah {
	qrnic_le32 pdn;
	qrnic_le32 rsvd;
	struct qrnic_av av;
};

#define QRNIC_EQ_F_ASYNC		(1u << 0)	/* receives async events; at most one
							 * such EQ (a second: QRNIC_AQ_BUSY) */

struct qrnic_cmd_create_eq {
	uint8_t    log_depth;	/* 1..QRNIC_MAX_QUEUE_LOG */
	uint8_t    rsvd0;
	qrnic_le16 vector;	/* MSI-X vector (0..num_vectors-1) */
	qrnic_le32 flags;	/* QRNIC_EQ_F_* */
	qrnic_le64 ring_addr;	/* contiguous, 4 KiB aligned, 16 << log_depth bytes */
};

/* Shared receive queue: a ring of receive WQEs (struct qrnic_recv_wqe,
 * stride 1 << wqe_shift) that the QPs created with its srqn take their
 * receives from, in ring order.  The device copies a WQE out when a
 * message starts and advances its consumer index at once (the slot is
 * free again); it writes that index to dbrec_addr (4 bytes) after each
 * WQE it takes.  The producer index comes with QRNIC_DB_SRQ. */
struct qrnic_cmd_create_srq {
	qrnic_le32 uctx;
	qrnic_le32 pdn;		/* the SGEs' lkeys belong to this PD */
	uint8_t    log_depth;	/* 1..QRNIC_MAX_QUEUE_LOG, 1 << log_depth <= max_srq_wr */
	uint8_t    wqe_shift;	/* QRNIC_MIN_RECV_WQE_SHIFT..QRNIC_MAX_RECV_WQE_SHIFT */
	qrnic_le16 flags;	/* QRNIC_SRQ_F_* (ABI 1.3; rsvd0, 0, before) */
	qrnic_le32 limit;	/* SRQ_LIMIT_REACHED armed below this many WQEs;
				 * 0 = not armed; < 1 << log_depth */
	qrnic_le64 ring_addr;	/* contiguous, 4 KiB aligned; QRNIC_SRQ_F_PAGELIST: page list */
	qrnic_le64 dbrec_addr;	/* 4-byte consumer index record, 8-byte aligned; 0 = none */
	/* ABI 1.3: with QRNIC_SRQ_F_XRC, else all 0 */
	qrnic_le32 xrcd;	/* the XRC domain of the SRQ */
	qrnic_le32 cqn;		/* receive completions of the SRQ go to this CQ */
	qrnic_le64 rsvd1;
};
#define QRNIC_SRQ_F_XRC			(1u << 0)	/* an XRC SRQ (ABI 1.3) */
#define QRNIC_SRQ_F_PAGELIST		(1u << 1)	/* ring_addr is a page list (ABI 1.8) */

/* XRC domain (ABI 1.3, spec 6.6.20): groups XRC SRQs and XRC TGT QPs.
 * result[0] = the xrcd number.  DEALLOC_XRCD takes handle = xrcd. */
struct qrnic_cmd_alloc_xrcd {
	qrnic_le32 uctx;	/* owner (0 = kernel: usable by every uctx) */
	qrnic_le32 rsvd;
};

/* Congestion control at run time (ABI 1.9, QRNIC_CAP_CC_PARAMS; spec
 * 6.6.22): QUERY_CC reads and SET_CC writes one device-wide congestion
 * control parameter, named by QRNIC_CC_P_*.  Each is a configuration
 * parameter of spec 16.2 (the QEMU property sets its value at power-on and
 * after a device reset).  QUERY_CC: result[0] = value, [1] = min, [2] =
 * max, [3] = the configured (power-on) value. */
#define QRNIC_CC_P_ALGO				0	/* cc_algo: 0 none, 1 DCQCN, 2 TIMELY */
#define QRNIC_CC_P_NP_ENABLE			1	/* np_enable: send CNPs */
#define QRNIC_CC_P_NP_MIN_TIME_BETWEEN_CNPS	2
#define QRNIC_CC_P_NP_CNP_DSCP			3
#define QRNIC_CC_P_RP_ENABLE			4	/* rp_enable: react to CNPs */
#define QRNIC_CC_P_RP_DCE_TCP_G			5
#define QRNIC_CC_P_RP_DCE_TCP_RTT		6
#define QRNIC_CC_P_RP_INITIAL_ALPHA_VALUE	7
#define QRNIC_CC_P_RP_MIN_RATE			8
#define QRNIC_CC_P_RP_MIN_DEC_FAC		9
#define QRNIC_CC_P_RP_TIME_RESET		10
#define QRNIC_CC_P_RP_BYTE_RESET		11
#define QRNIC_CC_P_RP_THRESHOLD			12
#define QRNIC_CC_P_RP_AI_RATE			13
#define QRNIC_CC_P_RP_HAI_RATE			14
#define QRNIC_CC_P_RP_INITIAL_RATE		15
#define QRNIC_CC_P_TIMELY_T_LOW			16
#define QRNIC_CC_P_TIMELY_T_HIGH		17
#define QRNIC_CC_P_TIMELY_MIN_RTT		18
#define QRNIC_CC_P_TIMELY_DELTA			19
#define QRNIC_CC_P_TIMELY_BETA			20
#define QRNIC_CC_P_TIMELY_ALPHA			21
#define QRNIC_CC_P_TIMELY_HAI_N			22
#define QRNIC_CC_P_COUNT			23

struct qrnic_cmd_cc {	/* QUERY_CC, SET_CC */
	qrnic_le32 param;	/* QRNIC_CC_P_* */
	qrnic_le32 value;	/* SET_CC: the new value; QUERY_CC: ignored (write 0) */
	qrnic_le64 rsvd;
};

#define QRNIC_SRQ_ATTR_MAX_WR		(1u << 0)	/* ibv_srq_attr_mask: resize,
							 * answered NOT_SUPPORTED */
#define QRNIC_SRQ_ATTR_LIMIT		(1u << 1)

struct qrnic_cmd_modify_srq {
	qrnic_le32 srqn;
	qrnic_le32 attr_mask;	/* QRNIC_SRQ_ATTR_* */
	qrnic_le32 limit;	/* with QRNIC_SRQ_ATTR_LIMIT: arm (0 disarms) */
	qrnic_le32 rsvd;
};

/* UD multicast (spec 12.11): a UD QP joins (ATTACH) or leaves (DETACH) the
 * group of a multicast GID; the device delivers a copy of every UD packet
 * for that GID (BTH DestQP 0xffffff) to each member. */
#define QRNIC_MAX_MCG			256	/* groups per device */
#define QRNIC_MAX_MCG_QP		32	/* QPs per group */
#define QRNIC_MCAST_QPN			0xffffffu	/* BTH DestQP of multicast packets */

struct qrnic_cmd_mcast {	/* ATTACH_MCAST, DETACH_MCAST */
	qrnic_le32 qpn;		/* a UD QP */
	qrnic_le32 rsvd;
	uint8_t    gid[16];	/* IPv6 ff00::/8, or IPv4-mapped 224.0.0.0/4 */
};

struct qrnic_aq_cmd {
	struct qrnic_aq_hdr hdr;
	union {
		struct qrnic_cmd_query query;
		struct qrnic_cmd_gid gid;
		struct qrnic_cmd_handle handle;
		struct qrnic_cmd_create_pd create_pd;
		struct qrnic_cmd_create_cq create_cq;
		struct qrnic_cmd_create_qp create_qp;
		struct qrnic_cmd_modify_qp modify_qp;
		struct qrnic_cmd_query_qp query_qp;
		struct qrnic_cmd_reg_mr reg_mr;
		struct qrnic_cmd_create_ah create_ah;
		struct qrnic_cmd_create_eq create_eq;
		struct qrnic_cmd_create_srq create_srq;
		struct qrnic_cmd_modify_srq modify_srq;
		struct qrnic_cmd_mcast mcast;
		struct qrnic_cmd_alloc_mr alloc_mr;
		struct qrnic_cmd_alloc_mw alloc_mw;
		struct qrnic_cmd_resize_cq resize_cq;
		struct qrnic_cmd_modify_cq modify_cq;
		struct qrnic_cmd_rereg_mr rereg_mr;
		struct qrnic_cmd_alloc_xrcd alloc_xrcd;
		struct qrnic_cmd_cc cc;
		uint8_t   raw[120];
	} u;
};
QRNIC_ASSERT_SIZE(struct qrnic_aq_cmd, QRNIC_AQ_SQE_SIZE);
QRNIC_ASSERT_OFFSET(struct qrnic_aq_cmd, u, 8);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_query, 16);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_gid, 24);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_handle, 4);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_create_pd, 4);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_query_qp, 16);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_create_cq, 32);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_create_qp, 64);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_modify_qp, 80);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_reg_mr, 48);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_create_ah, 40);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_create_eq, 16);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_create_srq, 48);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_alloc_xrcd, 8);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_modify_srq, 16);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_mcast, 24);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_alloc_mr, 16);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_alloc_mw, 16);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_resize_cq, 24);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_modify_cq, 16);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_rereg_mr, 56);
QRNIC_ASSERT_SIZE(struct qrnic_cmd_cc, 16);

/*
 * Completion: written with owner last, same owner rule as the CQE.
 * result[]: all 0 on failure.  CREATE_* / ALLOC_UCTX / REG_MR / ALLOC_MR / ALLOC_MW: result[0] =
 * the new handle or key.  Commands with resp_addr (QUERY_DEVICE, _PORT,
 * _STATS, _QP, _MR): result[0] = size of the full answer, result[1] =
 * bytes written = min(resp_len, size); resp_addr 0 or a failed write is
 * QRNIC_AQ_DMA_ERROR.  QUERY_GID: result[0..3] = the GID bytes (0 if the
 * entry is invalid).  QUERY_SRQ (handle = srqn): result[0] = limit (0 when
 * not armed), result[1] = depth (max_wr), result[2] = WQEs posted and not
 * yet taken.
 * detail: on BAD_PARAM, BAD_HANDLE, BAD_STATE, BAD_ATTR_MASK and
 * NOT_SUPPORTED the byte offset, within the 128-byte command, of the
 * offending field; 0 on every other failure.  On success 0, except
 * QUERY_GID: [0] valid, [15:8] net_type.
 */
struct qrnic_aq_cqe {
	qrnic_le32 result[4];	/* command specific, see above */
	qrnic_le16 cmd_id;
	uint8_t    opcode;
	uint8_t    status;	/* QRNIC_AQ_* */
	qrnic_le32 sq_ci;	/* admin SQ consumer index after this command */
	qrnic_le32 detail;	/* see above: offending field offset, or QUERY_GID data */
	uint8_t    rsvd[3];
	uint8_t    owner;
};
QRNIC_ASSERT_SIZE(struct qrnic_aq_cqe, QRNIC_AQ_CQE_SIZE);

/* ---- Answers written to resp_addr -------------------------------------- */
struct qrnic_device_attr {
	qrnic_le32 abi_version;
	qrnic_le32 fw_version;
	qrnic_le32 max_qp;
	qrnic_le32 max_qp_wr;
	qrnic_le32 max_sge;
	qrnic_le32 max_inline;
	qrnic_le32 max_cq;
	qrnic_le32 max_cqe;
	qrnic_le32 max_mr;
	qrnic_le32 max_pd;
	qrnic_le32 max_ah;
	qrnic_le32 max_eq;
	qrnic_le32 max_uctx;
	qrnic_le32 max_mtt;	/* total MTT entries */
	qrnic_le32 max_qp_rd_atom;
	qrnic_le32 max_qp_init_rd_atom;
	qrnic_le32 max_msg_size;
	qrnic_le32 num_vectors;
	qrnic_le32 gid_tbl_len;
	qrnic_le32 caps;	/* QRNIC_CAP_* */
	qrnic_le64 page_size_cap;
	qrnic_le64 max_mr_size;
	uint8_t    mac[6];
	uint8_t    rsvd0[2];
	qrnic_le32 max_srq;	/* SRQ numbers 1..max_srq-1 */
	qrnic_le32 max_srq_wr;	/* WQEs per SRQ (= max_qp_wr) */
	qrnic_le32 max_mcg;	/* QRNIC_MAX_MCG */
	qrnic_le32 max_mcg_qp;	/* QRNIC_MAX_MCG_QP */
	qrnic_le32 max_fast_reg_pages;	/* QRNIC_MAX_FAST_REG_PAGES (ABI 1.2) */
	qrnic_le32 max_mw;	/* memory windows share the MPT with MRs: max_mr (ABI 1.2) */
	qrnic_le32 max_xrcd;	/* XRC domain numbers 1..max_xrcd-1 (ABI 1.3) */
	qrnic_le32 hca_core_clock;	/* device clock frequency, kHz: QRNIC_CLOCK_KHZ
					 * (ABI 1.7; before: rsvd1, 0) */
	qrnic_le64 timestamp_mask;	/* the clock's width: QRNIC_CLOCK_MASK (ABI 1.7) */
};
QRNIC_ASSERT_SIZE(struct qrnic_device_attr, 144);
QRNIC_ASSERT_OFFSET(struct qrnic_device_attr, timestamp_mask, 136);

/* port state: enum ibv_port_state; phys_state: IB PortPhysicalState */
#define QRNIC_PORT_DOWN			1
#define QRNIC_PORT_ACTIVE		4
#define QRNIC_PHYS_DISABLED		3
#define QRNIC_PHYS_LINK_UP		5

struct qrnic_port_attr {
	uint8_t    state;
	uint8_t    phys_state;
	uint8_t    max_mtu;	/* QRNIC_MTU_* */
	uint8_t    active_mtu;
	qrnic_le32 gid_tbl_len;
	qrnic_le32 speed_mbps;
	qrnic_le32 eth_mtu;
	uint8_t    mac[6];
	uint8_t    rsvd[10];
};
QRNIC_ASSERT_SIZE(struct qrnic_port_attr, 32);

/* QUERY_STATS answers uint64_t counters[QRNIC_STAT_COUNT], in this order.
 * faults_injected is 0 unless the host configured fault injection for
 * tests.  The six translation cache counters are maintained only under a
 * timing profile (the functional profile has no caches: always 0).
 * docs/spec.md section 15 says what each one counts. */
#define QRNIC_STATS(X)						\
	X(TX_PACKETS, "tx_packets")				\
	X(TX_BYTES, "tx_bytes")					\
	X(RX_PACKETS, "rx_packets")				\
	X(RX_BYTES, "rx_bytes")					\
	X(RX_DROP_MALFORMED, "rx_drop_malformed")		\
	X(RX_DROP_ICRC, "rx_drop_icrc")				\
	X(RX_DROP_NO_QP, "rx_drop_no_qp")			\
	X(RX_DROP_QP_STATE, "rx_drop_qp_state")			\
	X(RX_DROP_OTHER, "rx_drop_other")			\
	X(DUPLICATE_REQUESTS, "duplicate_requests")		\
	X(SEQ_NAKS_SENT, "seq_naks_sent")			\
	X(SEQ_NAKS_RCVD, "seq_naks_rcvd")			\
	X(RNR_NAKS_SENT, "rnr_naks_sent")			\
	X(RNR_NAKS_RCVD, "rnr_naks_rcvd")			\
	X(ACCESS_NAKS_SENT, "access_naks_sent")			\
	X(INV_REQ_NAKS_SENT, "inv_req_naks_sent")		\
	X(RETRANSMIT_TIMEOUTS, "retransmit_timeouts")		\
	X(RETRANSMITTED_PACKETS, "retransmitted_packets")	\
	X(ACKS_SENT, "acks_sent")				\
	X(ACKS_RCVD, "acks_rcvd")				\
	X(CQES, "cqes")						\
	X(CQE_ERRORS, "cqe_errors")				\
	X(CQ_OVERRUNS, "cq_overruns")				\
	X(EQES, "eqes")						\
	X(INTERRUPTS, "interrupts")				\
	X(DOORBELLS, "doorbells")				\
	X(DOORBELLS_IGNORED, "doorbells_ignored")		\
	X(BAD_WQES, "bad_wqes")					\
	X(DMA_ERRORS, "dma_errors")				\
	X(ADMIN_CMDS, "admin_cmds")				\
	X(ADMIN_ERRORS, "admin_errors")				\
	X(ATOMICS_EXECUTED, "atomics_executed")			\
	X(ATOMICS_REPLAYED, "atomics_replayed")			\
	X(ETH_TX_FRAMES, "eth_tx_frames")			\
	X(ETH_RX_FRAMES, "eth_rx_frames")			\
	X(ETH_RX_DROPS, "eth_rx_drops")				\
	X(LATE_EVENTS, "late_events")				\
	X(LATE_NS_TOTAL, "late_ns_total")			\
	X(FAULTS_INJECTED, "faults_injected")			\
	X(WINDOW_CUTS, "window_cuts")			\
	X(QPC_CACHE_HITS, "qpc_cache_hits")			\
	X(QPC_CACHE_MISSES, "qpc_cache_misses")			\
	X(MPT_CACHE_HITS, "mpt_cache_hits")			\
	X(MPT_CACHE_MISSES, "mpt_cache_misses")			\
	X(MTT_CACHE_HITS, "mtt_cache_hits")			\
	X(MTT_CACHE_MISSES, "mtt_cache_misses")		\
	X(LOOPBACK_FRAMES, "loopback_frames")			\
	X(ECN_MARKED_RECEIVED, "ecn_marked_received")		\
	X(CNP_SENT, "cnp_sent")					\
	X(CNP_RECEIVED, "cnp_received")				\
	X(BF_POSTS, "bf_posts")					\
	X(BF_FALLBACKS, "bf_fallbacks")				\
	X(PFC_RECEIVED, "pfc_received")				\
	X(PFC_MALFORMED, "pfc_malformed")			\
	X(PFC_DEFERRED_FRAMES, "pfc_deferred_frames")		\
	X(PFC_SENT, "pfc_sent")					\
	X(RX_BUFFER_DROPS, "rx_buffer_drops")

#define QRNIC_STAT_ENUM(name, str) QRNIC_STAT_##name,
enum qrnic_stat { QRNIC_STATS(QRNIC_STAT_ENUM) QRNIC_STAT_COUNT };
#undef QRNIC_STAT_ENUM

#endif
