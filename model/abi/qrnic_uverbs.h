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
 */
#ifndef QRNIC_UVERBS_H
#define QRNIC_UVERBS_H

#include "qrnic_abi_types.h"

#define QRNIC_UVERBS_ABI_VERSION	1

struct qrnic_alloc_ucontext_resp {
	qrnic_le32 uctx;		/* doorbell page index in BAR2 */
	qrnic_le32 max_inline;
	qrnic_le64 db_mmap_key;		/* mmap offset of the doorbell page */
	qrnic_le32 max_sge;
	qrnic_le32 max_send_wqe_shift;	/* QRNIC_MAX_SEND_WQE_SHIFT */
	qrnic_le32 max_recv_wqe_shift;	/* QRNIC_MAX_RECV_WQE_SHIFT */
	qrnic_le32 rsvd;
};
QRNIC_ASSERT_SIZE(struct qrnic_alloc_ucontext_resp, 32);

struct qrnic_alloc_pd_resp {
	qrnic_le32 pdn;
	qrnic_le32 rsvd;
};
QRNIC_ASSERT_SIZE(struct qrnic_alloc_pd_resp, 8);

/* CQ mapping: the ring (32 << log_depth bytes) then, at dbrec_offset, the
 * 4-byte consumer-index record the provider updates on every poll. */
struct qrnic_create_cq_resp {
	qrnic_le32 cqn;
	qrnic_le32 log_depth;
	qrnic_le64 mmap_key;
	qrnic_le64 mmap_size;
	qrnic_le32 dbrec_offset;
	qrnic_le32 rsvd;
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
	qrnic_le32 log_depth;
	qrnic_le32 rsvd;
	qrnic_le64 mmap_key;
	qrnic_le64 mmap_size;
};
QRNIC_ASSERT_SIZE(struct qrnic_resize_cq_resp, 24);

struct qrnic_create_qp_resp {
	qrnic_le32 qpn;
	uint8_t    sq_log_depth;
	uint8_t    sq_wqe_shift;
	uint8_t    rq_log_depth;	/* 0 with rq_mmap_size 0: no RQ */
	uint8_t    rq_wqe_shift;
	qrnic_le64 sq_mmap_key;
	qrnic_le64 sq_mmap_size;
	qrnic_le64 rq_mmap_key;
	qrnic_le64 rq_mmap_size;
	qrnic_le32 max_inline;
	qrnic_le32 rsvd;
};
QRNIC_ASSERT_SIZE(struct qrnic_create_qp_resp, 48);

/* SRQ mapping: the ring (depth << wqe_shift bytes) then, at dbrec_offset,
 * the 4-byte consumer-index record the device writes after each WQE it
 * takes (the provider posts only while producer - record < depth).
 * Kernel command udata: none (attr.max_wr, max_sge, srq_limit say it). */
struct qrnic_create_srq_resp {
	qrnic_le32 srqn;
	uint8_t    log_depth;
	uint8_t    wqe_shift;
	qrnic_le16 rsvd0;
	qrnic_le64 mmap_key;
	qrnic_le64 mmap_size;
	qrnic_le32 dbrec_offset;
	qrnic_le32 rsvd;
};
QRNIC_ASSERT_SIZE(struct qrnic_create_srq_resp, 32);

struct qrnic_create_ah_resp {
	qrnic_le32 ahn;			/* goes into qrnic_send_wqe.ah */
	qrnic_le32 rsvd;
};
QRNIC_ASSERT_SIZE(struct qrnic_create_ah_resp, 8);

#endif
