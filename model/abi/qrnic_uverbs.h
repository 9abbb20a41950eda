/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qrnic ABI between the Linux kernel driver (guest-driver/kernel) and the
 * rdma-core provider (guest-driver/provider): the udata of uverbs commands
 * and the mmap offsets.  Versioned by QRNIC_UVERBS_ABI_VERSION, which is
 * the ib_device uverbs_abi_ver; the provider refuses any other version.
 *
 * Rings live in kernel-allocated, physically contiguous DMA memory (the
 * device takes one bus address per ring); user space maps them with the
 * mmap keys returned here.  Doorbells: the user context's own 4 KiB page of
 * BAR2, mapped uncached with db_mmap_key.
 *
 * Byte order: these structures go between the kernel and user space of the
 * same CPU, so, like every uverbs ABI (include/uapi/rdma/<driver>-abi.h), they are
 * in host byte order: plain uint32_t/uint64_t, not the device's
 * qrnic_le32/qrnic_le64.  (The rings the mmap keys map hold device
 * structures, which are little endian.)
 */
#ifndef QRNIC_UVERBS_H
#define QRNIC_UVERBS_H

#include "qrnic_abi_types.h"

#define QRNIC_UVERBS_ABI_VERSION	1

struct qrnic_alloc_ucontext_resp {
	uint32_t uctx;			/* doorbell page index in BAR2 */
	uint32_t max_inline;
	uint64_t db_mmap_key;		/* mmap offset of the doorbell page */
	uint32_t max_sge;
	uint32_t max_send_wqe_shift;	/* QRNIC_MAX_SEND_WQE_SHIFT */
	uint32_t max_recv_wqe_shift;	/* QRNIC_MAX_RECV_WQE_SHIFT */
	uint32_t bf_size;		/* BlueFlame: bytes of WQE one BF buffer of the
					 * doorbell page takes (QRNIC_BF_MAX_WQE); 0: do
					 * not use BF (old kernel, or no QRNIC_CAP_BF) */
};
QRNIC_ASSERT_SIZE(struct qrnic_alloc_ucontext_resp, 32);

struct qrnic_alloc_pd_resp {
	uint32_t pdn;
	uint32_t rsvd;
};
QRNIC_ASSERT_SIZE(struct qrnic_alloc_pd_resp, 8);

/* CQ mapping: the ring (cqe_size << log_depth bytes) then, at dbrec_offset,
 * the 4-byte consumer-index record the provider updates on every poll.
 * Timestamps: the core command's IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION
 * (ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) makes a CQ
 * of 64-byte struct qrnic_cqe64 (device ABI 1.7); a kernel without it
 * refuses the flag.  cqe_size: 32 or 64; 0 (an older kernel) means 32. */
struct qrnic_create_cq_resp {
	uint32_t cqn;
	uint32_t log_depth;
	uint64_t mmap_key;
	uint64_t mmap_size;
	uint32_t dbrec_offset;
	uint32_t cqe_size;		/* (rsvd, 0, before) */
};
QRNIC_ASSERT_SIZE(struct qrnic_create_cq_resp, 32);

/* RESIZE_CQ (ABI 1.2, device cap QRNIC_CAP_CQ_RESIZE).  Request udata: none
 * (the core command's cqe says the size).  The kernel allocates the new
 * ring, the device moves the CQEs not consumed to its slots 0, 1, ... and
 * writes 0 to the dbrec; the response maps the new ring (CQEs only: the
 * dbrec stays where CREATE_CQ put it, in the first mapping, which stays
 * valid until the CQ is destroyed).  The provider holds its CQ lock from
 * before the command until it polls the new ring from index 0. */
struct qrnic_resize_cq_resp {
	uint32_t log_depth;
	uint32_t cqe_size;		/* as at CREATE_CQ (rsvd, 0, before) */
	uint64_t mmap_key;
	uint64_t mmap_size;
};
QRNIC_ASSERT_SIZE(struct qrnic_resize_cq_resp, 24);

struct qrnic_create_qp_resp {
	uint32_t qpn;
	uint8_t  sq_log_depth;
	uint8_t  sq_wqe_shift;
	uint8_t  rq_log_depth;		/* 0 with rq_mmap_size 0: no RQ */
	uint8_t  rq_wqe_shift;
	uint64_t sq_mmap_key;
	uint64_t sq_mmap_size;
	uint64_t rq_mmap_key;
	uint64_t rq_mmap_size;
	uint32_t max_inline;
	/* ABI 1.10 device (QRNIC_CAP_RQ_DBREC; before: rsvd, 0): where in the
	 * RQ mapping the RQ producer index record is (after the WQEs), 0 =
	 * none.  The provider writes the producer index there instead of
	 * ringing QRNIC_DB_RQ, and rings as well while the QP is in ERR
	 * (docs/spec.md 8.6.1); it writes 0 there when the QP is reset. */
	uint32_t rq_dbrec_offset;
	/* ABI 1.11 device (QRNIC_CAP_SQ_DBREC; an older kernel writes 48
	 * bytes, so 0): where in the SQ mapping the QP's SQ record is (after
	 * the WQEs, 8-byte aligned), 0 = none.  The provider writes the
	 * producer index there, then reads the device's flag beside it and
	 * rings QRNIC_DB_SQ only if it is clear (docs/spec.md 8.6.2); it
	 * writes 0 to the index when the QP is reset. */
	uint32_t sq_dbrec_offset;
	uint32_t rsvd;
};
QRNIC_ASSERT_SIZE(struct qrnic_create_qp_resp, 56);

/* SRQ mapping: the ring (depth << wqe_shift bytes) then, at dbrec_offset,
 * the 4-byte consumer-index record the device writes after each WQE it
 * takes (the provider posts only while producer - record < depth).
 * Kernel command udata: none (attr.max_wr, max_sge, srq_limit say it). */
struct qrnic_create_srq_resp {
	uint32_t srqn;
	uint8_t  log_depth;
	uint8_t  wqe_shift;
	uint16_t rsvd0;
	uint64_t mmap_key;
	uint64_t mmap_size;
	uint32_t dbrec_offset;
	uint32_t rsvd;
};
QRNIC_ASSERT_SIZE(struct qrnic_create_srq_resp, 32);

struct qrnic_create_ah_resp {
	uint32_t ahn;			/* goes into qrnic_send_wqe.ah */
	uint32_t rsvd;
};
QRNIC_ASSERT_SIZE(struct qrnic_create_ah_resp, 8);

#endif
