/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qrnic ABI: work queue entries, completion queue entries and event queue
 * entries.  Numeric values of opcodes, statuses, QP types, states, access
 * flags and attribute masks are those of libibverbs (enum ibv_*), so the
 * provider and the kernel driver pass them through unchanged.  Exception:
 * QRNIC_QPT_GSI is a qrnic value with no ibv_qp_type counterpart.
 */
#ifndef QRNIC_QUEUE_H
#define QRNIC_QUEUE_H

#include "qrnic_abi_types.h"

/* ---- Limits fixed by the ABI -------------------------------------------- */
#define QRNIC_MAX_SGE			30	/* per send or receive WQE (ABI 1.6; 16
						 * before), as a ConnectX-5 */
#define QRNIC_MAX_INLINE		448u	/* bytes of inline payload per send WQE */
#define QRNIC_MIN_WQE_SHIFT		6	/* 64-byte send WQE stride minimum */
#define QRNIC_MAX_SEND_WQE_SHIFT	10	/* 1024 bytes: 64-byte header + up to 30
						 * SGEs (QRNIC_MAX_SGE, 544 bytes) or up
						 * to QRNIC_MAX_INLINE bytes inline (ABI
						 * 1.6; 9 before) */
#define QRNIC_MIN_RECV_WQE_SHIFT	5	/* 32 bytes: header + 1 SGE */
#define QRNIC_MAX_RECV_WQE_SHIFT	9	/* 512 bytes: 16-byte header + 30 SGEs */
#define QRNIC_MAX_QUEUE_LOG		22	/* at most 4M entries per ring (ABI 1.8;
						 * 15 before) */
#define QRNIC_MAX_MSG_SIZE		(1u << 31)	/* RC; UD/GSI: the port MTU */
#define QRNIC_GRH_BYTES			40	/* UD receive buffers start with a GRH */

/* ---- QP types, states, access flags (ibv values) ------------------------ */
#define QRNIC_QPT_RC			2
#define QRNIC_QPT_UC			3
#define QRNIC_QPT_UD			4
#define QRNIC_QPT_GSI			0xf1	/* qrnic value, not an ibv one: QP1, UD
						 * semantics, qpn fixed to 1, kernel only */
#define QRNIC_QPT_XRC_INI		9	/* IBV_QPT_XRC_SEND: RC send side, each
						 * WQE names the remote XRC SRQ (ABI 1.3) */
#define QRNIC_QPT_XRC_TGT		10	/* IBV_QPT_XRC_RECV: RC receive side of
						 * an XRC domain; no SQ, no RQ (ABI 1.3) */

#define QRNIC_QPS_RESET			0
#define QRNIC_QPS_INIT			1
#define QRNIC_QPS_RTR			2
#define QRNIC_QPS_RTS			3
#define QRNIC_QPS_SQD			4
#define QRNIC_QPS_SQE			5
#define QRNIC_QPS_ERR			6

#define QRNIC_ACCESS_LOCAL_WRITE	(1u << 0)
#define QRNIC_ACCESS_REMOTE_WRITE	(1u << 1)
#define QRNIC_ACCESS_REMOTE_READ	(1u << 2)
#define QRNIC_ACCESS_REMOTE_ATOMIC	(1u << 3)
#define QRNIC_ACCESS_ALL		0xfu	/* the data access bits */
#define QRNIC_ACCESS_MW_BIND		(1u << 4)	/* MRs: memory windows may be
							 * bound to it (ABI 1.2) */
#define QRNIC_ACCESS_MR_MASK		(QRNIC_ACCESS_ALL | QRNIC_ACCESS_MW_BIND)

/* ---- Send WQE ----------------------------------------------------------- */
#define QRNIC_WR_RDMA_WRITE		0
#define QRNIC_WR_RDMA_WRITE_WITH_IMM	1
#define QRNIC_WR_SEND			2
#define QRNIC_WR_SEND_WITH_IMM		3
#define QRNIC_WR_RDMA_READ		4
#define QRNIC_WR_ATOMIC_CMP_AND_SWP	5
#define QRNIC_WR_ATOMIC_FETCH_AND_ADD	6
#define QRNIC_WR_LOCAL_INV		7	/* invalidate the key in inv_key: an FRMR
						 * or a type 2 memory window
						 * (spec 12.12, 12.13) */
#define QRNIC_WR_BIND_MW		8	/* bind a memory window: the WQE is a struct
						 * qrnic_bind_mw_wqe (spec 12.13) */
#define QRNIC_WR_SEND_WITH_INV		9	/* RC SEND; the responder invalidates the rkey
						 * in inv_key */
#define QRNIC_WR_REG_MR			0x20	/* fast registration: the WQE is a struct
						 * qrnic_reg_mr_wqe (kernel IB_WR_REG_MR) */

#define QRNIC_WQE_F_SIGNALED		(1u << 0)	/* write a CQE on success */
#define QRNIC_WQE_F_SOLICITED		(1u << 1)	/* set SE in the last packet */
#define QRNIC_WQE_F_INLINE		(1u << 2)	/* payload follows the header */
#define QRNIC_WQE_F_FENCE		(1u << 3)	/* wait for prior READ/ATOMIC */
/* flags bits 7:4 are reserved and must be 0 (else QRNIC_VERR_BAD_WQE) */

/*
 * Send WQE: this 64-byte header, then num_sge struct qrnic_sge or, with
 * QRNIC_WQE_F_INLINE, inline_len bytes of payload.  The stride of a send
 * queue is 1 << sq_wqe_shift bytes (64..512), fixed at CREATE_QP.
 */
struct qrnic_send_wqe {
	uint8_t    opcode;	/* QRNIC_WR_* */
	uint8_t    flags;	/* QRNIC_WQE_F_* */
	uint8_t    num_sge;	/* 0..QRNIC_MAX_SGE, must fit the stride */
	uint8_t    rsvd0;
	qrnic_le32 inline_len;	/* INLINE: bytes of inline payload, must fit the stride */
	qrnic_le64 wr_id;	/* returned in the CQE */
	union {
		qrnic_be32 imm_data;	/* *_WITH_IMM: sent as is (network byte order) */
		qrnic_le32 inv_key;	/* LOCAL_INV, SEND_WITH_INV: the key to
					 * invalidate (little endian) */
	};
	qrnic_le32 rkey;	/* RDMA and ATOMIC */
	qrnic_le64 remote_addr;	/* RDMA and ATOMIC */
	qrnic_le64 compare_add;	/* CMP_AND_SWP: compare; FETCH_AND_ADD: add */
	qrnic_le64 swap;	/* CMP_AND_SWP: swap */
	qrnic_le32 ah;		/* UD: address handle number */
	qrnic_le32 remote_qpn;	/* UD: destination QP */
	qrnic_le32 remote_qkey;	/* UD: Q_Key; bit 31 set: send the QP's own qkey */
	union {
		qrnic_le32 rsvd1;	/* 0, except on an XRC INI QP: */
		qrnic_le32 xrc_srqn;	/* XRC INI: [23:0] the remote XRC SRQ (XRCETH),
					 * [31:24] 0 (ABI 1.3) */
	};
};
QRNIC_ASSERT_SIZE(struct qrnic_send_wqe, 64);
QRNIC_ASSERT_OFFSET(struct qrnic_send_wqe, wr_id, 8);
QRNIC_ASSERT_OFFSET(struct qrnic_send_wqe, remote_addr, 24);
QRNIC_ASSERT_OFFSET(struct qrnic_send_wqe, ah, 48);
QRNIC_ASSERT_OFFSET(struct qrnic_send_wqe, xrc_srqn, 60);

/*
 * REG_MR WQE (fast registration, spec 12.12): 64 bytes, no SGEs, nothing
 * on the wire.  Makes the fast-registration MR (ALLOC_MR) whose MPT index
 * is key[31:8] valid with key 'key' (the 8-bit variant key[7:0] is the
 * consumer's), over [iova, iova + length), with 'access'.  Its npages page
 * addresses (little endian, 1 << page_shift bytes each, aligned to it) are
 * read once from pbl_addr (8-byte aligned, contiguous) when the WQE runs.
 * npages must be what [iova, iova + length) spans and at most the MR's
 * max_pages.  The MR must be free (invalidated, or never registered) and
 * of the QP's PD.
 */
struct qrnic_reg_mr_wqe {
	uint8_t    opcode;	/* QRNIC_WR_REG_MR */
	uint8_t    flags;	/* QRNIC_WQE_F_SIGNALED, _FENCE; the rest must be 0 */
	uint8_t    page_shift;	/* QRNIC_MIN_PAGE_SHIFT..QRNIC_MAX_PAGE_SHIFT */
	uint8_t    access;	/* QRNIC_ACCESS_* */
	qrnic_le32 npages;	/* 1..max_pages of the MR */
	qrnic_le64 wr_id;
	qrnic_le32 key;		/* the new lkey/rkey */
	qrnic_le32 rsvd0;
	qrnic_le64 iova;
	qrnic_le64 length;	/* 1..max_mr_size */
	qrnic_le64 pbl_addr;	/* bus address of npages uint64_t page addresses */
	uint8_t    rsvd1[16];
};
QRNIC_ASSERT_SIZE(struct qrnic_reg_mr_wqe, 64);
QRNIC_ASSERT_OFFSET(struct qrnic_reg_mr_wqe, wr_id, 8);
QRNIC_ASSERT_OFFSET(struct qrnic_reg_mr_wqe, iova, 24);

/*
 * BIND_MW WQE (spec 12.13): 64 bytes, no SGEs, nothing on the wire.  Binds
 * the memory window whose MPT index is key[31:8] (ALLOC_MW) to
 * [addr, addr + length) of the MR mr_lkey, with the remote rights 'access',
 * and gives it the rkey 'key' (the 8-bit variant is the consumer's).  A
 * type 1 window may be bound again at any time (length 0 unbinds it); a
 * type 2 window must be free (invalidated or never bound) and becomes
 * usable through this QP only.
 */
struct qrnic_bind_mw_wqe {
	uint8_t    opcode;	/* QRNIC_WR_BIND_MW */
	uint8_t    flags;	/* QRNIC_WQE_F_SIGNALED, _FENCE; the rest must be 0 */
	uint8_t    rsvd0;
	uint8_t    access;	/* QRNIC_ACCESS_REMOTE_* only */
	qrnic_le32 mr_lkey;	/* the MR bound to: has QRNIC_ACCESS_MW_BIND */
	qrnic_le64 wr_id;
	qrnic_le32 key;		/* the window's new rkey */
	qrnic_le32 rsvd1;
	qrnic_le64 addr;	/* in the MR's iova space */
	qrnic_le64 length;
	uint8_t    rsvd2[24];
};
QRNIC_ASSERT_SIZE(struct qrnic_bind_mw_wqe, 64);
QRNIC_ASSERT_OFFSET(struct qrnic_bind_mw_wqe, wr_id, 8);
QRNIC_ASSERT_OFFSET(struct qrnic_bind_mw_wqe, addr, 24);

struct qrnic_sge {
	qrnic_le64 addr;	/* virtual address within the MR of lkey */
	qrnic_le32 length;
	qrnic_le32 lkey;
};
QRNIC_ASSERT_SIZE(struct qrnic_sge, 16);

/* Receive WQE: this 16-byte header, then num_sge struct qrnic_sge.  The
 * stride of a receive queue is 1 << rq_wqe_shift bytes (32..512). */
struct qrnic_recv_wqe {
	qrnic_le64 wr_id;
	uint8_t    num_sge;	/* 0..QRNIC_MAX_SGE, must fit the stride */
	uint8_t    rsvd[7];
};
QRNIC_ASSERT_SIZE(struct qrnic_recv_wqe, 16);

/* ---- CQE (32 bytes; 64 with QRNIC_CQ_F_TIMESTAMP) ----------------------- */
/* CREATE_CQ flags (ABI 1.7) */
#define QRNIC_CQ_F_TIMESTAMP		(1u << 0)	/* 64-byte CQEs carrying the completion
							 * timestamp (struct qrnic_cqe64) */
#define QRNIC_CQ_F_PAGELIST		(1u << 1)	/* ring_addr is a page list (ABI 1.8,
							 * QRNIC_RING_PAGE_SHIFT) */
#define QRNIC_CQ_F_ALL			(QRNIC_CQ_F_TIMESTAMP | QRNIC_CQ_F_PAGELIST)
/* status: enum ibv_wc_status, one to one */
#define QRNIC_WC_SUCCESS		0
#define QRNIC_WC_LOC_LEN_ERR		1
#define QRNIC_WC_LOC_QP_OP_ERR		2
#define QRNIC_WC_LOC_EEC_OP_ERR		3
#define QRNIC_WC_LOC_PROT_ERR		4
#define QRNIC_WC_WR_FLUSH_ERR		5
#define QRNIC_WC_MW_BIND_ERR		6
#define QRNIC_WC_BAD_RESP_ERR		7
#define QRNIC_WC_LOC_ACCESS_ERR		8
#define QRNIC_WC_REM_INV_REQ_ERR	9
#define QRNIC_WC_REM_ACCESS_ERR		10
#define QRNIC_WC_REM_OP_ERR		11
#define QRNIC_WC_RETRY_EXC_ERR		12
#define QRNIC_WC_RNR_RETRY_EXC_ERR	13
#define QRNIC_WC_LOC_RDD_VIOL_ERR	14
#define QRNIC_WC_REM_INV_RD_REQ_ERR	15
#define QRNIC_WC_REM_ABORT_ERR		16
#define QRNIC_WC_INV_EECN_ERR		17
#define QRNIC_WC_INV_EEC_STATE_ERR	18
#define QRNIC_WC_FATAL_ERR		19
#define QRNIC_WC_RESP_TIMEOUT_ERR	20
#define QRNIC_WC_GENERAL_ERR		21

/* opcode: enum ibv_wc_opcode */
#define QRNIC_WC_OP_SEND		0
#define QRNIC_WC_OP_RDMA_WRITE		1
#define QRNIC_WC_OP_RDMA_READ		2
#define QRNIC_WC_OP_COMP_SWAP		3
#define QRNIC_WC_OP_FETCH_ADD		4
#define QRNIC_WC_OP_BIND_MW		5
#define QRNIC_WC_OP_LOCAL_INV		6
#define QRNIC_WC_OP_REG_MR		10	/* kernel IB_WC_REG_MR (no ibv value) */
#define QRNIC_WC_OP_RECV		128
#define QRNIC_WC_OP_RECV_RDMA_WITH_IMM	129

#define QRNIC_CQE_F_WITH_IMM		(1u << 0)
#define QRNIC_CQE_F_GRH			(1u << 1)	/* UD: GRH area valid */
#define QRNIC_CQE_F_IPV4		(1u << 2)	/* UD: GRH area holds an IPv4 header in its last 20 bytes */
#define QRNIC_CQE_F_SEND		(1u << 3)	/* completion of a send WQE */
#define QRNIC_CQE_F_WITH_INV		(1u << 4)	/* RECV of a SEND_WITH_INV: inv_key
							 * = the rkey invalidated */

/*
 * The device writes bytes 0..30 first and the owner byte last.  The owner
 * bit of a slot flips each time the producer wraps: on the first pass the
 * device writes 1, then 0, and so on.  A CQE is valid when its owner bit
 * equals ((consumer index >> log_depth) & 1) ^ 1.
 */
struct qrnic_cqe {
	qrnic_le64 wr_id;
	qrnic_le32 byte_len;	/* RECV: bytes received (UD: + 40 GRH bytes);
				 * RECV_RDMA_WITH_IMM: RETH length; send CQE of
				 * READ: its length, ATOMIC: 8; else 0 */
	union {
		qrnic_be32 imm_data;	/* with QRNIC_CQE_F_WITH_IMM: network byte order */
		qrnic_le32 inv_key;	/* with QRNIC_CQE_F_WITH_INV: the rkey
					 * invalidated (little endian) */
	};
	qrnic_le32 qpn;		/* local QP */
	qrnic_le32 src_qp;	/* receive CQEs: sender's QP (UD: DETH SrcQP;
				 * RC: the peer's QPN, attr.dest_qpn); with
				 * QRNIC_CQE_F_XRC: the XRC SRQ number; else 0 */
	uint8_t    status;	/* QRNIC_WC_* */
	uint8_t    opcode;	/* QRNIC_WC_OP_* */
	uint8_t    flags;	/* QRNIC_CQE_F_* */
	uint8_t    vendor_err;	/* QRNIC_VERR_*: finer cause of an error status */
	qrnic_le16 wqe_index;	/* low 16 bits of the WQE's free-running queue
				 * index; slot = wqe_index & (depth - 1) */
	uint8_t    rsvd;
	uint8_t    owner;	/* bit 0: owner/phase; written last */
};
QRNIC_ASSERT_SIZE(struct qrnic_cqe, 32);
QRNIC_ASSERT_OFFSET(struct qrnic_cqe, status, 24);
QRNIC_ASSERT_OFFSET(struct qrnic_cqe, owner, 31);

/*
 * 64-byte CQE (ABI 1.7): the ring of a CQ created with QRNIC_CQ_F_TIMESTAMP
 * has this stride.  Bytes 0..31 are a struct qrnic_cqe (owner at byte 31,
 * same rule); the device writes bytes 32..63 and 0..30 before the owner
 * byte.  timestamp: the device clock (QRNIC_REG_CLOCK_LO/HI, ns) when the
 * device wrote the CQE -- under a timing profile, the modelled time at
 * which it became visible.  Non-decreasing in CQE order within a CQ.
 */
struct qrnic_cqe64 {
	struct qrnic_cqe cqe;
	uint64_t timestamp;
	uint8_t  rsvd[24];	/* written as 0 */
};
QRNIC_ASSERT_SIZE(struct qrnic_cqe64, 64);
QRNIC_ASSERT_OFFSET(struct qrnic_cqe64, timestamp, 32);
#define QRNIC_CQ_CQE_SIZE(flags)	(((flags) & QRNIC_CQ_F_TIMESTAMP) ? 64u : 32u)

/* vendor_err: why an error CQE was produced */
#define QRNIC_CQE_F_XRC			(1u << 5)	/* receive through an XRC SRQ: qpn = the
							 * XRC TGT QP, src_qp = the SRQ (ABI 1.3) */
#define QRNIC_VERR_NONE			0
#define QRNIC_VERR_BAD_WQE		1	/* opcode, flags or counts invalid */
#define QRNIC_VERR_LKEY			2	/* no such MR / stale key */
#define QRNIC_VERR_PD			3	/* MR of another PD */
#define QRNIC_VERR_BOUNDS		4	/* outside the MR */
#define QRNIC_VERR_ACCESS		5	/* access flag missing */
#define QRNIC_VERR_DMA			6	/* host DMA failed */
#define QRNIC_VERR_LENGTH		7	/* message longer than buffers / limit */
#define QRNIC_VERR_NAK			8	/* peer NAKed (RNR and sequence NAK
						 * retries exhausted, bad READ
						 * response: also this) */
#define QRNIC_VERR_RETRY		9	/* retries exhausted after a timeout */
#define QRNIC_VERR_FLUSH		10	/* QP in error */
#define QRNIC_VERR_INJECTED		11	/* fault injection (tests only) */
#define QRNIC_VERR_BAD_AH		12	/* UD: no such address handle; UD/RC:
						 * source GID of the AV no longer valid */
#define QRNIC_VERR_ALIGN		13	/* atomic target not 8-byte aligned:
						 * reserved, not generated in ABI 1.0
						 * (the responder NAKs, giving
						 * REM_INV_REQ_ERR + QRNIC_VERR_NAK) */
#define QRNIC_VERR_MR_STATE		14	/* REG_MR of an MR not free, LOCAL_INV
						 * or SEND_WITH_INV of a key that is not
						 * a fast-registration MR's or a type 2
						 * window's; BIND_MW of a window not
						 * free, or over an MR that is not
						 * valid (spec 12.12, 12.13) */

/* ---- EQE (16 bytes) ----------------------------------------------------- */
#define QRNIC_EQE_COMPLETION		0	/* handle = cqn */
#define QRNIC_EQE_ASYNC			1	/* subtype = enum ibv_event_type */

/* enum ibv_event_type values used in async EQEs */
#define QRNIC_EV_CQ_ERR			0	/* handle = cqn (overrun) */
#define QRNIC_EV_QP_FATAL		1	/* handle = qpn (QP events below too) */
#define QRNIC_EV_QP_REQ_ERR		2
#define QRNIC_EV_QP_ACCESS_ERR		3
#define QRNIC_EV_COMM_EST		4	/* reserved, not generated in ABI 1.0 */
#define QRNIC_EV_SQ_DRAINED		5
#define QRNIC_EV_DEVICE_FATAL		8	/* data = QRNIC_FATAL_* */
#define QRNIC_EV_PORT_ACTIVE		9	/* handle = port (1) */
#define QRNIC_EV_PORT_ERR		10
#define QRNIC_EV_SRQ_LIMIT_REACHED	15	/* handle = srqn; the limit is disarmed */
#define QRNIC_EV_QP_LAST_WQE_REACHED	16	/* handle = qpn of an SRQ QP in ERROR: it
						 * takes no more WQEs from its SRQ */

struct qrnic_eqe {
	uint8_t    type;	/* QRNIC_EQE_* */
	uint8_t    subtype;	/* QRNIC_EV_* for ASYNC */
	qrnic_le16 rsvd0;
	qrnic_le32 handle;	/* cqn, qpn or port */
	qrnic_le32 data;	/* event specific */
	uint8_t    rsvd1[3];
	uint8_t    owner;	/* bit 0, same rule as the CQE; written last */
};
QRNIC_ASSERT_SIZE(struct qrnic_eqe, 16);

/* ---- Address vector, used by MODIFY_QP (RC) and CREATE_AH (UD) ---------- */
#define QRNIC_NET_IPV4			1	/* RoCEv2 over IPv4: GIDs are ::ffff:a.b.c.d */
#define QRNIC_NET_IPV6			2	/* RoCEv2 over IPv6 */

struct qrnic_av {
	uint8_t    dgid[16];
	qrnic_le32 flow_label;	/* [19:0] */
	uint8_t    sgid_index;
	uint8_t    hop_limit;	/* IPv4 TTL / IPv6 hop limit; 0 means 64 */
	uint8_t    traffic_class;	/* DSCP/ECN byte */
	uint8_t    net_type;	/* QRNIC_NET_* */
	uint8_t    dmac[6];
	qrnic_le16 rsvd;
};
QRNIC_ASSERT_SIZE(struct qrnic_av, 32);

#endif
