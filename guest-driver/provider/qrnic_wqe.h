/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qrnic provider: encoding of WQEs and doorbells, decoding of CQEs.
 *
 * Pure inline functions over the device ABI (model/abi/qrnic_queue.h,
 * qrnic_regs.h) and the libibverbs work request / completion types.  They
 * touch no device, lock or global state, so tests/qrnic_wqe_test.c can check
 * them byte by byte without a device.  Every multi-byte ABI field is
 * little-endian (docs/spec.md 1.1; qrnic_le32 etc. in the ABI headers, plain
 * integers here, converted with htole32()/le32toh()); immediate data
 * (qrnic_be32) is an opaque big-endian string and is copied verbatim in
 * both directions.  The udata of uverbs commands (qrnic_uverbs.h) is in
 * host byte order.
 */
#ifndef QRNIC_WQE_H
#define QRNIC_WQE_H

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "qrnic_queue.h"
#include "qrnic_regs.h"

#define QRNIC_SEND_WQE_HDR	((unsigned int)sizeof(struct qrnic_send_wqe))
#define QRNIC_RECV_WQE_HDR	((unsigned int)sizeof(struct qrnic_recv_wqe))
#define QRNIC_SGE_SIZE		((unsigned int)sizeof(struct qrnic_sge))
#define QRNIC_CQE_SIZE		((unsigned int)sizeof(struct qrnic_cqe))

/* ---- ring geometry -------------------------------------------------- */

/* SGEs that fit a send WQE slot of 1 << shift bytes (at most QRNIC_MAX_SGE). */
static inline unsigned int qrnic_sq_max_sge(unsigned int wqe_shift)
{
	unsigned int n = ((1u << wqe_shift) - QRNIC_SEND_WQE_HDR) / QRNIC_SGE_SIZE;

	return n < QRNIC_MAX_SGE ? n : QRNIC_MAX_SGE;
}

/* Inline payload bytes that fit a send WQE slot of 1 << shift bytes (at
 * most QRNIC_MAX_INLINE, whatever the stride). */
static inline unsigned int qrnic_sq_max_inline(unsigned int wqe_shift)
{
	unsigned int n = (1u << wqe_shift) - QRNIC_SEND_WQE_HDR;

	return n < QRNIC_MAX_INLINE ? n : QRNIC_MAX_INLINE;
}

/* SGEs that fit a receive WQE slot of 1 << shift bytes. */
static inline unsigned int qrnic_rq_max_sge(unsigned int wqe_shift)
{
	unsigned int n = ((1u << wqe_shift) - QRNIC_RECV_WQE_HDR) / QRNIC_SGE_SIZE;

	return n < QRNIC_MAX_SGE ? n : QRNIC_MAX_SGE;
}

/*
 * Free-running index of the WQE a CQE names.  The CQE carries the low 16
 * bits of the WQE's free-running index (spec 9.1); the WQE is the first one
 * at or after the oldest uncompleted index ci with those low bits.  Rings
 * have at most 2^15 entries, so this is unambiguous.
 */
static inline uint32_t qrnic_wqe_index_expand(uint32_t ci, uint16_t wqe_index)
{
	return ci + ((wqe_index - ci) & 0xffffu);
}

/* ---- doorbells (one 64-bit write each, spec 3.2) --------------------- */

static inline uint64_t qrnic_db_wq_val(uint32_t qpn, uint32_t pi)
{
	return ((uint64_t)qpn & QRNIC_DB_QN_MASK) |
	       ((uint64_t)pi << QRNIC_DB_IDX_SHIFT);
}

/* ---- BlueFlame (spec 3.2.1) ------------------------------------------ */

/* 8-byte words of the send WQE in slot the device needs from a BF buffer
 * (the header, then its inline data or SGEs), or 0 if they are more than
 * max_bytes (the context's bf_size, at most the stride). */
static inline uint32_t qrnic_bf_nwords(const void *slot, uint32_t max_bytes)
{
	const struct qrnic_send_wqe *w = slot;
	uint32_t len = sizeof(*w);

	if (w->opcode == QRNIC_WR_REG_MR || w->opcode == QRNIC_WR_BIND_MW)
		;	/* 64 bytes, no SGEs */
	else if (w->flags & QRNIC_WQE_F_INLINE)
		len += le32toh(w->inline_len);
	else
		len += w->num_sge * (uint32_t)sizeof(struct qrnic_sge);
	len = (len + 7) & ~7u;
	return len <= max_bytes && len <= QRNIC_BF_MAX_WQE ? len / 8 : 0;
}

/*
 * Whether a WQE that fits a BF buffer is worth posting by BF.  A WQE whose
 * payload the device reads by DMA anyway (SGEs) saves only the WQE read, and
 * under emulation each 8 bytes of BF is a store the vCPU makes to MMIO,
 * each taking QEMU's big lock while the device's main loop may hold it: a
 * T2 4 KiB ib_write_bw moved 133-195 MiB/s with BF and 225-243 with plain
 * doorbells, alternating runs on a quiet host (provider/README.md).  So BF
 * carries WQEs with inline data, with
 * no payload (REG_MR, BIND_MW, zero-length), or with at most
 * QRNIC_BF_SGE_PAYLOAD_MAX bytes by SGE; QRNIC_BF_ALL=1 in the environment
 * posts every WQE that fits by BF, as rdma-core's mlx5 does.
 */
#define QRNIC_BF_SGE_PAYLOAD_MAX	256u

static inline int qrnic_bf_worth(const void *slot)
{
	const struct qrnic_send_wqe *w = slot;
	const struct qrnic_sge *sg = (const struct qrnic_sge *)(w + 1);
	uint64_t bytes = 0;

	if (w->opcode == QRNIC_WR_REG_MR || w->opcode == QRNIC_WR_BIND_MW ||
	    (w->flags & QRNIC_WQE_F_INLINE))
		return 1;
	for (uint32_t i = 0; i < w->num_sge; i++)	/* num_sge <= the QP's max_sge */
		bytes += le32toh(sg[i].length);
	return bytes <= QRNIC_BF_SGE_PAYLOAD_MAX;
}

/* BAR2 page offset of BF buffer n (software alternates n = 0, 1, ...) */
static inline uint32_t qrnic_bf_offset(uint32_t n)
{
	return QRNIC_DB_BF_BASE + (n % QRNIC_DB_BF_NUM) * QRNIC_DB_BF_STRIDE;
}

/* the control word, at qrnic_bf_offset(n) + QRNIC_BF_CTRL: an SQ doorbell */
static inline uint64_t qrnic_bf_ctrl_val(uint32_t qpn, uint32_t pi, uint32_t nwords)
{
	return qrnic_db_wq_val(qpn, pi) |
	       ((uint64_t)(nwords & QRNIC_BF_NWORDS_MASK) << QRNIC_BF_NWORDS_SHIFT);
}

static inline uint64_t qrnic_db_cq_val(uint32_t cqn, uint32_t ci, bool arm,
				       bool solicited)
{
	uint64_t v = ((uint64_t)cqn & QRNIC_DB_QN_MASK) |
		     ((uint64_t)ci << QRNIC_DB_IDX_SHIFT);

	if (arm) {
		v |= QRNIC_DB_CQ_ARM;
		if (solicited)
			v |= QRNIC_DB_CQ_SOLICITED;
	}
	return v;
}

/* ---- CQEs -------------------------------------------------------------- */

/* Owner bit the device writes into the entry at free-running index idx. */
static inline uint8_t qrnic_cq_owner(uint32_t idx, unsigned int log_depth)
{
	return ((idx >> log_depth) & 1) ^ 1;
}

/*
 * True when the CQE at consumer index ci is valid.  Reads only the owner
 * byte; the caller must issue a read barrier before reading anything else
 * of the entry.
 */
static inline bool qrnic_cqe_valid(const void *slot, uint32_t ci,
				   unsigned int log_depth)
{
	const volatile uint8_t *owner = (const volatile uint8_t *)slot +
		offsetof(struct qrnic_cqe, owner);

	return (*owner & 1) == qrnic_cq_owner(ci, log_depth);
}

/* Translate a CQE (already copied out of the ring) into an ibv_wc. */
static inline void qrnic_cqe_to_wc(const struct qrnic_cqe *cqe,
				   struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64toh(cqe->wr_id);
	wc->status = (enum ibv_wc_status)cqe->status;
	wc->opcode = (enum ibv_wc_opcode)cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = le32toh(cqe->byte_len);
	wc->qp_num = le32toh(cqe->qpn) & QRNIC_DB_QN_MASK;
	wc->src_qp = le32toh(cqe->src_qp) & QRNIC_DB_QN_MASK;
	if (cqe->flags & QRNIC_CQE_F_WITH_IMM) {
		/* already in network byte order: copy the four bytes */
		memcpy(&wc->imm_data, &cqe->imm_data, sizeof(wc->imm_data));
		wc->wc_flags |= IBV_WC_WITH_IMM;
	}
	if (cqe->flags & QRNIC_CQE_F_WITH_INV) {
		/* SEND_WITH_INV received: the rkey it invalidated, little
		 * endian in the union with imm_data (spec 12.12) */
		wc->invalidated_rkey = le32toh(cqe->inv_key);
		wc->wc_flags |= IBV_WC_WITH_INV;
	}
	if (cqe->flags & QRNIC_CQE_F_GRH)
		wc->wc_flags |= IBV_WC_GRH;
}

static inline bool qrnic_cqe_is_send(const struct qrnic_cqe *cqe)
{
	return cqe->flags & QRNIC_CQE_F_SEND;
}

/* ---- send WQEs ------------------------------------------------------ */

struct qrnic_sq_params {
	unsigned int wqe_shift;		/* slot is 1 << wqe_shift bytes */
	unsigned int max_sge;		/* SGEs accepted per WR */
	unsigned int max_inline;	/* inline bytes accepted per WR */
	bool ud;			/* UD (or GSI) QP: SEND* only */
	bool uc;			/* UC QP: SEND* and RDMA_WRITE* only */
	bool sig_all;			/* QP created with sq_sig_all */
	bool xrc;			/* XRC INI QP: wr->qp_type.xrc.remote_srqn
					 * goes into xrc_srqn (ABI 1.3) */
	uint32_t ahn;			/* UD: device AH number of wr->wr.ud.ah */
};

/* QRNIC_WR_* for an ibv_wr_opcode, or -1 when the QP type cannot post it
 * (UD: SEND only; UC: SEND, RDMA WRITE and BIND_MW; RC: all; LOCAL_INV:
 * any). */
static inline int qrnic_wr_opcode(enum ibv_wr_opcode op, bool ud, bool uc)
{
	switch (op) {
	case IBV_WR_BIND_MW:
		return ud ? -1 : QRNIC_WR_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return QRNIC_WR_LOCAL_INV;
	case IBV_WR_SEND_WITH_INV:
		return ud || uc ? -1 : QRNIC_WR_SEND_WITH_INV;
	case IBV_WR_SEND:
		return QRNIC_WR_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return QRNIC_WR_SEND_WITH_IMM;
	case IBV_WR_RDMA_WRITE:
		return ud ? -1 : QRNIC_WR_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return ud ? -1 : QRNIC_WR_RDMA_WRITE_WITH_IMM;
	case IBV_WR_RDMA_READ:
		return ud || uc ? -1 : QRNIC_WR_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return ud || uc ? -1 : QRNIC_WR_ATOMIC_CMP_AND_SWP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return ud || uc ? -1 : QRNIC_WR_ATOMIC_FETCH_AND_ADD;
	default:
		return -1;
	}
}

static inline bool qrnic_wr_is_atomic(int qop)
{
	return qop == QRNIC_WR_ATOMIC_CMP_AND_SWP ||
	       qop == QRNIC_WR_ATOMIC_FETCH_AND_ADD;
}

/* Inline data is allowed for SEND* and RDMA_WRITE* only (spec 8.3). */
static inline bool qrnic_wr_may_inline(int qop)
{
	return qop == QRNIC_WR_SEND || qop == QRNIC_WR_SEND_WITH_IMM ||
	       qop == QRNIC_WR_SEND_WITH_INV ||
	       qop == QRNIC_WR_RDMA_WRITE || qop == QRNIC_WR_RDMA_WRITE_WITH_IMM;
}

/*
 * The pieces of a send WQE, shared by ibv_post_send (qrnic_build_send_wqe
 * below) and the ibv_wr_* API of ibv_qp_ex (verbs.c), so both write the
 * same bytes for the same work request.  The header h is built apart from
 * the slot and copied into it last; the data (SGEs or inline payload) goes
 * straight into the slot after the header.
 */

/* The fields every send WQE has: opcode, flags, wr_id. */
static inline void qrnic_send_hdr_init(struct qrnic_send_wqe *h, int qop,
				       unsigned int send_flags, bool sig_all,
				       uint64_t wr_id)
{
	memset(h, 0, sizeof(*h));
	h->opcode = (uint8_t)qop;
	if ((send_flags & IBV_SEND_SIGNALED) || sig_all)
		h->flags |= QRNIC_WQE_F_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		h->flags |= QRNIC_WQE_F_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		h->flags |= QRNIC_WQE_F_FENCE;
	h->wr_id = htole64(wr_id);
}

/* *_WITH_IMM: the immediate data, already in network order (copied). */
static inline void qrnic_send_hdr_imm(struct qrnic_send_wqe *h, __be32 imm)
{
	memcpy(&h->imm_data, &imm, sizeof(h->imm_data));
}

/* LOCAL_INV, SEND_WITH_INV: the key, a little-endian number (spec 12.12). */
static inline void qrnic_send_hdr_inv(struct qrnic_send_wqe *h, uint32_t key)
{
	h->inv_key = htole32(key);
}

/* RDMA WRITE*, READ. */
static inline void qrnic_send_hdr_rdma(struct qrnic_send_wqe *h, uint32_t rkey,
				       uint64_t remote_addr)
{
	h->rkey = htole32(rkey);
	h->remote_addr = htole64(remote_addr);
}

/* CMP_AND_SWP (compare, swap) and FETCH_AND_ADD (add, swap unused: 0). */
static inline void qrnic_send_hdr_atomic(struct qrnic_send_wqe *h, uint32_t rkey,
					 uint64_t remote_addr,
					 uint64_t compare_add, uint64_t swap)
{
	qrnic_send_hdr_rdma(h, rkey, remote_addr);
	h->compare_add = htole64(compare_add);
	if (h->opcode == QRNIC_WR_ATOMIC_CMP_AND_SWP)
		h->swap = htole64(swap);
}

/* UD: device AH number, destination QP, Q_Key. */
static inline void qrnic_send_hdr_ud(struct qrnic_send_wqe *h, uint32_t ahn,
				     uint32_t remote_qpn, uint32_t remote_qkey)
{
	h->ah = htole32(ahn);
	h->remote_qpn = htole32(remote_qpn & QRNIC_DB_QN_MASK);
	h->remote_qkey = htole32(remote_qkey);
}

/* Forget the data of h (a data setter of the ibv_wr_* API replaces it). */
static inline void qrnic_send_data_reset(struct qrnic_send_wqe *h)
{
	h->flags &= (uint8_t)~QRNIC_WQE_F_INLINE;
	h->num_sge = 0;
	h->inline_len = 0;
}

/* Append one SGE after the header (the caller checked the count). */
static inline void qrnic_send_add_sge(void *slot, struct qrnic_send_wqe *h,
				      uint64_t addr, uint32_t length,
				      uint32_t lkey)
{
	struct qrnic_sge sge = {
		.addr = htole64(addr),
		.length = htole32(length),
		.lkey = htole32(lkey),
	};

	memcpy((uint8_t *)slot + QRNIC_SEND_WQE_HDR +
	       (unsigned int)h->num_sge * QRNIC_SGE_SIZE, &sge, sizeof(sge));
	h->num_sge++;
}

/* Append length bytes of inline payload (the caller checked the total). */
static inline void qrnic_send_add_inline(void *slot, struct qrnic_send_wqe *h,
					 const void *addr, size_t length)
{
	uint32_t len = le32toh(h->inline_len);

	h->flags |= QRNIC_WQE_F_INLINE;
	memcpy((uint8_t *)slot + QRNIC_SEND_WQE_HDR + len, addr, length);
	h->inline_len = htole32(len + (uint32_t)length);
}

/* Bytes after the header that h describes. */
static inline unsigned int qrnic_send_data_len(const struct qrnic_send_wqe *h)
{
	if (h->flags & QRNIC_WQE_F_INLINE)
		return le32toh(h->inline_len);
	return (unsigned int)h->num_sge * QRNIC_SGE_SIZE;
}

/* True when the data of an sg_list goes inline: IBV_SEND_INLINE on an
 * opcode that may carry inline data (elsewhere the flag is ignored). */
static inline bool qrnic_send_inline(int qop, unsigned int send_flags)
{
	return (send_flags & IBV_SEND_INLINE) && qrnic_wr_may_inline(qop);
}

/*
 * Check the data of a send WR of opcode qop: n SGEs of sg, or their bytes
 * when inl (qrnic_send_inline).  Returns 0 or EINVAL.
 */
static inline int qrnic_check_send_data(int qop, bool inl,
					const struct ibv_sge *sg, int n,
					const struct qrnic_sq_params *p)
{
	uint64_t total = 0;
	int i;

	if (n < 0)
		return EINVAL;
	if (inl) {
		for (i = 0; i < n; i++)
			total += sg[i].length;
		return total > p->max_inline ? EINVAL : 0;
	}
	if ((unsigned int)n > p->max_sge)
		return EINVAL;
	if (qrnic_wr_is_atomic(qop) && n != 1)
		return EINVAL;
	return 0;
}

/* Write the data of a checked sg_list after the header: SGEs, or their
 * bytes when inl. */
static inline void qrnic_send_put_sg(void *slot, struct qrnic_send_wqe *h,
				     bool inl, const struct ibv_sge *sg, int n)
{
	int i;

	if (inl)	/* flagged even with no bytes, as the device reads it */
		h->flags |= QRNIC_WQE_F_INLINE;
	for (i = 0; i < n; i++) {
		if (inl)
			qrnic_send_add_inline(slot, h,
					      (const void *)(uintptr_t)sg[i].addr,
					      sg[i].length);
		else
			qrnic_send_add_sge(slot, h, sg[i].addr, sg[i].length,
					   sg[i].lkey);
	}
}

/* ---- memory window binds (spec 8.8, 12.13) ------------------------- */

/* A bind WQE is a 64-byte header and nothing else, as LOCAL_INV is. */
static inline bool qrnic_wr_header_only(int qop)
{
	return qop == QRNIC_WR_LOCAL_INV || qop == QRNIC_WR_BIND_MW;
}

/*
 * The device access bits of a window from mw_access_flags: the remote
 * rights; IBV_ACCESS_LOCAL_WRITE (which rdma-core's own tests pass) and
 * the MR-only bits mean nothing for a window and are dropped.  Zero-based
 * windows are not supported: -1.
 */
static inline int qrnic_mw_access(unsigned int mw_access_flags)
{
	if (mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return -1;
	return (int)(mw_access_flags & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
					IBV_ACCESS_REMOTE_ATOMIC));
}

/* EINVAL for a bind the device would refuse as malformed; checks that need
 * the device's tables (keys, PDs, bounds, the MR's MW_BIND) are its own. */
static inline int qrnic_check_bind(const struct ibv_mw *mw,
				   const struct ibv_mw_bind_info *bi)
{
	if (!mw || qrnic_mw_access(bi->mw_access_flags) < 0)
		return EINVAL;
	if (!bi->mr && (bi->addr || bi->length))
		return EINVAL;
	return 0;
}

/*
 * Write the BIND_MW WQE binding the window to [bi->addr, +bi->length) of
 * bi->mr with rkey new_rkey (the window's MPT index, any 8-bit variant).
 * Flags: SIGNALED and FENCE only (the device refuses any other).  The bind
 * must have passed qrnic_check_bind().  Returns the bytes written (64).
 */
static inline unsigned int qrnic_build_bind_mw_wqe(void *slot, uint64_t wr_id,
						   unsigned int send_flags, bool sig_all,
						   uint32_t new_rkey,
						   const struct ibv_mw_bind_info *bi)
{
	struct qrnic_bind_mw_wqe b;

	memset(&b, 0, sizeof(b));
	b.opcode = QRNIC_WR_BIND_MW;
	if ((send_flags & IBV_SEND_SIGNALED) || sig_all)
		b.flags |= QRNIC_WQE_F_SIGNALED;
	if (send_flags & IBV_SEND_FENCE)
		b.flags |= QRNIC_WQE_F_FENCE;
	b.access = (uint8_t)qrnic_mw_access(bi->mw_access_flags);
	b.mr_lkey = htole32(bi->mr ? bi->mr->lkey : 0);
	b.wr_id = htole64(wr_id);
	b.key = htole32(new_rkey);
	b.addr = htole64(bi->addr);
	b.length = htole64(bi->length);
	memcpy(slot, &b, sizeof(b));
	return (unsigned int)sizeof(b);
}

/*
 * Check a send work request against the QP's limits without writing
 * anything.  Returns 0 or EINVAL.
 */
static inline int qrnic_check_send_wr(const struct ibv_send_wr *wr,
				      const struct qrnic_sq_params *p)
{
	int qop = qrnic_wr_opcode(wr->opcode, p->ud, p->uc);

	if (qop < 0 || wr->num_sge < 0)
		return EINVAL;
	if (qop == QRNIC_WR_BIND_MW)
		return qrnic_check_bind(wr->bind_mw.mw, &wr->bind_mw.bind_info);
	if (qop == QRNIC_WR_LOCAL_INV)	/* no SGEs, no AH: sg_list is ignored */
		return 0;
	if (p->ud && !wr->wr.ud.ah)
		return EINVAL;
	return qrnic_check_send_data(qop, qrnic_send_inline(qop, wr->send_flags),
				     wr->sg_list, wr->num_sge, p);
}

/*
 * Write the send WQE for wr into slot (1 << p->wqe_shift bytes).  The work
 * request must have passed qrnic_check_send_wr().  Returns the number of
 * bytes written (header plus SGEs or inline data).
 */
static inline unsigned int qrnic_build_send_wqe(void *slot,
						const struct ibv_send_wr *wr,
						const struct qrnic_sq_params *p)
{
	int qop = qrnic_wr_opcode(wr->opcode, p->ud, p->uc);
	struct qrnic_send_wqe h;

	if (qop == QRNIC_WR_BIND_MW)	/* its own 64-byte layout */
		return qrnic_build_bind_mw_wqe(slot, wr->wr_id, wr->send_flags, p->sig_all,
					       wr->bind_mw.rkey, &wr->bind_mw.bind_info);
	qrnic_send_hdr_init(&h, qop, wr->send_flags, p->sig_all, wr->wr_id);
	if (p->xrc)	/* the remote XRC SRQ, sent in the XRCETH (spec 8.1) */
		h.xrc_srqn = htole32(wr->qp_type.xrc.remote_srqn & 0xffffffu);

	switch (qop) {
	case QRNIC_WR_SEND_WITH_IMM:
	case QRNIC_WR_RDMA_WRITE_WITH_IMM:
		qrnic_send_hdr_imm(&h, wr->imm_data);
		break;
	case QRNIC_WR_LOCAL_INV:
	case QRNIC_WR_SEND_WITH_INV:
		qrnic_send_hdr_inv(&h, wr->invalidate_rkey);
		break;
	default:
		break;
	}
	if (qop == QRNIC_WR_LOCAL_INV) {	/* header only */
		memcpy(slot, &h, sizeof(h));
		return QRNIC_SEND_WQE_HDR;
	}

	switch (qop) {
	case QRNIC_WR_RDMA_WRITE:
	case QRNIC_WR_RDMA_WRITE_WITH_IMM:
	case QRNIC_WR_RDMA_READ:
		qrnic_send_hdr_rdma(&h, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		break;
	case QRNIC_WR_ATOMIC_CMP_AND_SWP:
	case QRNIC_WR_ATOMIC_FETCH_AND_ADD:
		qrnic_send_hdr_atomic(&h, wr->wr.atomic.rkey,
				      wr->wr.atomic.remote_addr,
				      wr->wr.atomic.compare_add,
				      wr->wr.atomic.swap);
		break;
	default:
		break;
	}

	if (p->ud)
		qrnic_send_hdr_ud(&h, p->ahn, wr->wr.ud.remote_qpn,
				  wr->wr.ud.remote_qkey);

	qrnic_send_put_sg(slot, &h, qrnic_send_inline(qop, wr->send_flags),
			  wr->sg_list, wr->num_sge);

	memcpy(slot, &h, sizeof(h));
	return QRNIC_SEND_WQE_HDR + qrnic_send_data_len(&h);
}

/* ---- receive WQEs -------------------------------------------------- */

static inline int qrnic_check_recv_wr(const struct ibv_recv_wr *wr,
				      unsigned int max_sge)
{
	if (wr->num_sge < 0 || (unsigned int)wr->num_sge > max_sge)
		return EINVAL;
	return 0;
}

/* Write the receive WQE for wr into slot; returns the bytes written. */
static inline unsigned int qrnic_build_recv_wqe(void *slot,
						const struct ibv_recv_wr *wr)
{
	uint8_t *data = (uint8_t *)slot + QRNIC_RECV_WQE_HDR;
	struct qrnic_recv_wqe h;
	int i;

	memset(&h, 0, sizeof(h));
	h.wr_id = htole64(wr->wr_id);
	h.num_sge = (uint8_t)wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		struct qrnic_sge sge = {
			.addr = htole64(wr->sg_list[i].addr),
			.length = htole32(wr->sg_list[i].length),
			.lkey = htole32(wr->sg_list[i].lkey),
		};

		memcpy(data + (unsigned int)i * QRNIC_SGE_SIZE, &sge, sizeof(sge));
	}
	memcpy(slot, &h, sizeof(h));
	return QRNIC_RECV_WQE_HDR + (unsigned int)wr->num_sge * QRNIC_SGE_SIZE;
}

/* ---- shared receive queues (spec 12.10) ---------------------------- */

/*
 * An SRQ's slots are SRQ-wide: the device takes WQEs in ring order and
 * writes its free-running consumer index into the SRQ's record after each
 * one, so the slot is free again once the record has passed it (no
 * completion needed).  Full when pi - record >= depth; a record ahead of
 * pi (which the device never writes) reads as full too.  The WQEs are
 * receive WQEs (qrnic_build_recv_wqe) and the doorbell is
 * qrnic_db_wq_val(srqn, pi) at QRNIC_DB_SRQ.
 */
static inline bool qrnic_srq_full(uint32_t pi, uint32_t record, uint32_t depth)
{
	return pi - record >= depth;
}

#endif /* QRNIC_WQE_H */
