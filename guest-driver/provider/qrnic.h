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
	/* qpn -> QP, for freeing queue slots from completions: two levels
	 * over the 24-bit QPN space, leaves allocated on demand and kept until
	 * the context is freed.  Written under qp_table_lock and the QP's CQ
	 * locks; read by pollers holding a CQ lock. */
	struct qrnic_qp **qp_table[QRNIC_QP_TABLE_TOP];
	pthread_mutex_t qp_table_lock;
};

struct qrnic_pd {
	struct ibv_pd ibvpd;
	uint32_t pdn;
};

struct qrnic_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	uint32_t cqn;
	unsigned int log_depth;
	uint32_t mask;
	uint32_t ci;			/* free-running consumer index */
	uint8_t *ring;			/* 32 << log_depth bytes */
	void *map;
	size_t map_size;
	uint32_t *dbrec;		/* consumer-index record, or NULL */
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
	unsigned int max_inline;
	bool sq_sig_all;
	bool ud;
	bool uc;
};

struct qrnic_srq {
	struct verbs_srq vsrq;
	struct qrnic_wq wq;		/* the ring; wq.ci unused (the record says) */
	uint32_t *dbrec;		/* consumer-index record, written by the device */
	uint32_t srqn;
};

struct qrnic_mr {
	struct verbs_mr vmr;
};

struct qrnic_ah {
	struct ibv_ah ibvah;
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

static inline struct qrnic_cq *to_qcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct qrnic_cq, vcq.cq);
}

static inline struct qrnic_qp *to_qqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct qrnic_qp, vqp.qp);
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
int qrnic_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int qrnic_query_port(struct ibv_context *context, uint8_t port,
		     struct ibv_port_attr *attr);
struct ibv_pd *qrnic_alloc_pd(struct ibv_context *context);
int qrnic_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *qrnic_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access);
int qrnic_dereg_mr(struct verbs_mr *vmr);
struct ibv_cq *qrnic_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel, int comp_vector);
int qrnic_destroy_cq(struct ibv_cq *cq);
int qrnic_poll_cq(struct ibv_cq *cq, int nwc, struct ibv_wc *wc);
int qrnic_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_qp *qrnic_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int qrnic_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr);
int qrnic_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int qrnic_destroy_qp(struct ibv_qp *qp);
int qrnic_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int qrnic_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);
struct ibv_srq *qrnic_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
int qrnic_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask);
int qrnic_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int qrnic_destroy_srq(struct ibv_srq *srq);
int qrnic_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);
struct ibv_ah *qrnic_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int qrnic_destroy_ah(struct ibv_ah *ah);

#endif /* QRNIC_PROVIDER_H */
