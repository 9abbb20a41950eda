/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qrnic rdma-core provider: objects.
 *
 * The kernel driver (guest-driver/kernel) creates every object through the
 * device's admin queue; the rings live in kernel DMA memory that this
 * provider maps with the keys of model/abi/qrnic_uverbs.h.  The data path
 * (post_send, post_recv, post_srq_recv, poll_cq, req_notify_cq) runs here
 * in user space:
 * WQEs are written into the mapped rings and announced with one 64-bit
 * doorbell write to the context's own page of BAR2.
 */
#ifndef QRNIC_PROVIDER_H
#define QRNIC_PROVIDER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>

#include "qrnic-abi.h"
#include "qrnic_wqe.h"

struct qrnic_device {
	struct verbs_device vdev;
};

struct qrnic_qp;

#define QRNIC_QP_TABLE_SHIFT	12
#define QRNIC_QP_TABLE_LEAF	(1u << QRNIC_QP_TABLE_SHIFT)
#define QRNIC_QP_TABLE_TOP	(1u << (24 - QRNIC_QP_TABLE_SHIFT))

struct qrnic_context {
	struct verbs_context ibvctx;
	void *db;			/* this context's doorbell page (BAR2) */
	uint32_t uctx;
	uint32_t max_inline;
	uint32_t max_sge;
	uint32_t max_send_wqe_shift;
	uint32_t max_recv_wqe_shift;
	/* BlueFlame (spec 3.2.1): bytes of WQE a BF buffer takes, 0 = do not
	 * use BF (an older kernel sends 0).  bf_lock makes one BF copy and
	 * its control word one unit: two threads posting on QPs of this
	 * context must not mix their words in a buffer. */
	uint32_t bf_size;
	int bf_all;			/* QRNIC_BF_ALL: BF whatever the payload */
	uint32_t bf_next;		/* buffer of the next BF post (under bf_lock) */
	pthread_spinlock_t bf_lock;
	/* ibv_query_rt_values_ex: does the device have the clock (asked once) */
	bool clock_known;		/* __atomic */
	bool has_clock;
	/* qpn -> QP, for freeing queue slots from completions: two levels
	 * over the 24-bit QPN space, leaves allocated on demand and kept until
	 * the context is freed.  Written under qp_table_lock and the QP's CQ
	 * locks; read by pollers holding a CQ lock. */
	struct qrnic_qp **qp_table[QRNIC_QP_TABLE_TOP];
	pthread_mutex_t qp_table_lock;
};

/* A thread domain (ibv_alloc_td): a promise of the caller that the objects
 * of a parent domain over it are used by one thread at a time.  The
 * provider keeps its locks anyway (correct, if not the fastest). */
struct qrnic_td {
	struct ibv_td ibvtd;
	unsigned int refcnt;		/* __atomic: 1 + parent domains on it */
};

/*
 * A protection domain, or a parent domain (ibv_alloc_parent_domain) over
 * one: then ibvpd.handle is the protection domain's handle (every
 * ibv_cmd_* names the kernel PD through it) and pdn its number.
 */
struct qrnic_pd {
	struct ibv_pd ibvpd;
	uint32_t pdn;
	struct qrnic_pd *protection;	/* parent domain: its PD; else NULL */
	struct qrnic_td *td;		/* parent domain: its TD or NULL */
	void *pd_context;		/* parent domain: the caller's, kept */
	/* __atomic.  PD: 1 + parent domains over it; parent domain: 1 + QPs,
	 * CQs, SRQs, MRs and AHs created with it (the kernel does not know
	 * parent domains, so the provider keeps them from going away while
	 * in use: dealloc is EBUSY) */
	unsigned int refcnt;
};

struct qrnic_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	uint32_t cqn;
	unsigned int log_depth;
	uint32_t mask;
	uint32_t ci;			/* free-running consumer index */
	uint8_t *ring;			/* cqe_size << log_depth bytes: map or rmap */
	unsigned int cqe_size;		/* 32, or 64 with completion timestamps
					 * (struct qrnic_cqe64, ABI 1.7) */
	void *map;			/* CREATE_CQ's: the first ring, the dbrec */
	size_t map_size;
	void *rmap;			/* the ring of the last ibv_resize_cq, or NULL */
	size_t rmap_size;
	bool lost;			/* a resize left no ring mapped: poll fails */
	qrnic_le32 *dbrec;		/* consumer-index record (in map), or NULL */
	struct ibv_pd *parent_domain;	/* create_cq_ex with a parent domain */
	/* ibv_start_poll .. ibv_end_poll (ibv_cq_ex, under lock): the
	 * current completion, translated as ibv_poll_cq translates it */
	struct ibv_wc ex_wc;
	uint64_t ex_ts;			/* its completion timestamp (64-byte CQEs) */
};

/* A send or receive queue. */
struct qrnic_wq {
	pthread_spinlock_t lock;	/* serializes posters */
	uint8_t *ring;
	size_t map_size;
	uint32_t depth;			/* entries, a power of two */
	uint32_t mask;
	unsigned int log_depth;
	unsigned int wqe_shift;		/* slot = 1 << wqe_shift bytes */
	unsigned int max_sge;
	uint32_t pi;			/* free-running producer index (posters) */
	uint32_t ci;			/* oldest uncompleted WQE (set by pollers,
					 * read by posters: __atomic) */
};

struct qrnic_qp {
	struct verbs_qp vqp;
	struct qrnic_wq sq;
	struct qrnic_wq rq;		/* depth 0: no receive queue */
	/* the RQ producer index record in the RQ mapping (ABI 1.10, from
	 * rq_dbrec_offset): post_recv writes it instead of the RQ doorbell;
	 * NULL: doorbells (an older kernel or device) */
	qrnic_le32 *rq_dbrec;
	/* the SQ record in the SQ mapping (ABI 1.11, from sq_dbrec_offset):
	 * a post writes the index there and rings only if the device's flag
	 * is clear; NULL: doorbells */
	struct qrnic_sq_dbrec *sq_dbrec;
	unsigned int max_inline;
	bool sq_sig_all;
	bool ud;
	bool uc;
	bool xrc_send;			/* IBV_QPT_XRC_SEND: WQEs name a remote SRQ */
	bool xrc_recv;			/* IBV_QPT_XRC_RECV: no rings, no CQs, no PD */
	/* The ibv_wr_* API of ibv_qp_ex: from wr_start to wr_complete/abort,
	 * under sq.lock.  Each opcode takes the next SQ slot; its header is
	 * built in wr_hdr and written to wr_slot when the next WR starts or
	 * at wr_complete, its data (SGEs or inline) straight into the slot. */
	uint32_t wr_start_pi;		/* sq.pi at wr_start: abort/error rolls back */
	int wr_err;			/* first error since wr_start, or 0 */
	void *wr_slot;			/* slot of the WR being built, or NULL */
	int wr_qop;			/* its QRNIC_WR_* */
	bool wr_need_ud;		/* UD: no wr_set_ud_addr yet */
	struct qrnic_send_wqe wr_hdr;
};

struct qrnic_srq {
	struct verbs_srq vsrq;
	struct ibv_pd *pd;
	struct qrnic_wq wq;		/* the ring; wq.ci unused (the record says) */
	qrnic_le32 *dbrec;		/* consumer-index record, written by the device */
	uint32_t srqn;
};

struct qrnic_mr {
	struct verbs_mr vmr;
	struct ibv_pd *pd;
};

struct qrnic_ah {
	struct ibv_ah ibvah;
	struct ibv_pd *pd;
	uint32_t ahn;
};

static inline struct qrnic_context *to_qctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct qrnic_context, ibvctx.context);
}

static inline struct qrnic_pd *to_qpd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct qrnic_pd, ibvpd);
}

static inline struct qrnic_td *to_qtd(struct ibv_td *ibtd)
{
	return container_of(ibtd, struct qrnic_td, ibvtd);
}

static inline struct qrnic_cq *to_qcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct qrnic_cq, vcq.cq);
}

static inline struct qrnic_cq *to_qcq_ex(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct qrnic_cq, vcq.cq_ex);
}

static inline struct qrnic_qp *to_qqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct qrnic_qp, vqp.qp);
}

static inline struct qrnic_qp *to_qqp_ex(struct ibv_qp_ex *ibqpx)
{
	return container_of(ibqpx, struct qrnic_qp, vqp.qp_ex);
}

static inline struct qrnic_srq *to_qsrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct qrnic_srq, vsrq.srq);
}

static inline struct qrnic_ah *to_qah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct qrnic_ah, ibvah);
}

/* verbs.c */
int qrnic_query_rt_values(struct ibv_context *context, struct ibv_values_ex *values);
int qrnic_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int qrnic_query_port(struct ibv_context *context, uint8_t port,
		     struct ibv_port_attr *attr);
struct ibv_pd *qrnic_alloc_pd(struct ibv_context *context);
int qrnic_dealloc_pd(struct ibv_pd *pd);
struct ibv_td *qrnic_alloc_td(struct ibv_context *context,
			      struct ibv_td_init_attr *init_attr);
int qrnic_dealloc_td(struct ibv_td *td);
struct ibv_pd *qrnic_alloc_parent_domain(struct ibv_context *context,
					 struct ibv_parent_domain_init_attr *attr);
struct ibv_mr *qrnic_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access);
int qrnic_dereg_mr(struct verbs_mr *vmr);
int qrnic_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
		   size_t length, int access);
struct ibv_cq *qrnic_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *qrnic_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr);
int qrnic_destroy_cq(struct ibv_cq *cq);
int qrnic_poll_cq(struct ibv_cq *cq, int nwc, struct ibv_wc *wc);
int qrnic_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int qrnic_resize_cq(struct ibv_cq *cq, int cqe);
int qrnic_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
struct ibv_mw *qrnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int qrnic_dealloc_mw(struct ibv_mw *mw);
int qrnic_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
struct ibv_qp *qrnic_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *qrnic_create_qp_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr);
int qrnic_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr);
int qrnic_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int qrnic_destroy_qp(struct ibv_qp *qp);
int qrnic_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int qrnic_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);
struct ibv_srq *qrnic_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
struct ibv_srq *qrnic_create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr);
int qrnic_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_xrcd *qrnic_open_xrcd(struct ibv_context *context,
				 struct ibv_xrcd_init_attr *attr);
int qrnic_close_xrcd(struct ibv_xrcd *xrcd);
int qrnic_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask);
int qrnic_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int qrnic_destroy_srq(struct ibv_srq *srq);
int qrnic_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);
struct ibv_ah *qrnic_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int qrnic_destroy_ah(struct ibv_ah *ah);

#endif /* QRNIC_PROVIDER_H */
