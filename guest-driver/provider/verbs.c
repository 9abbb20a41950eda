// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrnic rdma-core provider: verbs.
 *
 * Control path: uverbs commands (ibv_cmd_*) with the udata of
 * model/abi/qrnic_uverbs.h.  Data path: rings mapped from the kernel,
 * doorbells in the context's BAR2 page (docs/spec.md 3.2, 8, 9).
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <util/mmio.h>
#include <util/udma_barrier.h>
#include <util/util.h>

#include "qrnic.h"

/* ---- device, port ----------------------------------------------------- */

int qrnic_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int err;

	err = ibv_cmd_query_device_any(context, input, attr, attr_size,
				       &resp, &resp_size);
	if (err)
		return err;

	/* The device reports (major << 16) | minor (spec 6.7.1); accept a
	 * kernel that widened it to major.minor.sub in 16-bit fields too. */
	fw = resp.base.fw_ver;
	if (fw >> 32)
		snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
			 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
			 (unsigned int)(fw >> 16) & 0xffff,
			 (unsigned int)fw & 0xffff);
	else
		snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
			 "%u.%u", (unsigned int)(fw >> 16) & 0xffff,
			 (unsigned int)fw & 0xffff);
	return 0;
}

int qrnic_query_port(struct ibv_context *context, uint8_t port,
		     struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

/* ---- PD, MR ----------------------------------------------------------- */

struct ibv_pd *qrnic_alloc_pd(struct ibv_context *context)
{
	struct uqrnic_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd;
	struct qrnic_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	err = ibv_cmd_alloc_pd(context, &pd->ibvpd, &cmd, sizeof(cmd),
			       &resp.ibv_resp, sizeof(resp));
	if (err) {
		free(pd);
		errno = err;
		return NULL;
	}
	pd->pdn = resp.drv_payload.pdn;
	return &pd->ibvpd;
}

int qrnic_dealloc_pd(struct ibv_pd *ibpd)
{
	int err = ibv_cmd_dealloc_pd(ibpd);

	if (err)
		return err;
	free(to_qpd(ibpd));
	return 0;
}

struct ibv_mr *qrnic_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct qrnic_mr *mr;
	int err;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;
	err = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, &mr->vmr,
			     &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(mr);
		errno = err;
		return NULL;
	}
	return &mr->vmr.ibv_mr;
}

int qrnic_dereg_mr(struct verbs_mr *vmr)
{
	int err = ibv_cmd_dereg_mr(vmr);

	if (err)
		return err;
	free(container_of(vmr, struct qrnic_mr, vmr));
	return 0;
}

/* ---- doorbells ------------------------------------------------------- */

/*
 * One aligned 64-bit store to the context's doorbell page (spec 1.5, 3.2).
 * The caller has ordered its ring/dbrec stores before it with
 * udma_to_device_barrier(); the flush pushes the doorbell out at once if
 * the page is mapped write-combining.
 */
static inline void qrnic_ring_db(struct qrnic_context *ctx, unsigned int off,
				 uint64_t val)
{
	mmio_write64_le((uint8_t *)ctx->db + off, htole64(val));
	mmio_flush_writes();
}

/* An index record at offset off of a mapping of map_size bytes, after a
 * ring of ring_size bytes, 4-byte aligned. */
static bool qrnic_dbrec_ok(uint64_t off, size_t ring_size, uint64_t map_size)
{
	return off >= ring_size && !(off & 3) && off + sizeof(uint32_t) <= map_size;
}

/* ---- CQ ----------------------------------------------------------------- */

struct ibv_cq *qrnic_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel, int comp_vector)
{
	struct uqrnic_create_cq_resp resp = {};
	struct qrnic_create_cq_resp *r = &resp.drv_payload;
	struct ibv_create_cq cmd;
	struct qrnic_cq *cq;
	size_t ring_size;
	int err;

	if (cqe < 1) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;

	err = ibv_cmd_create_cq(context, cqe, channel, comp_vector,
				&cq->vcq.cq, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_err(verbs_get_ctx(context), "qrnic: CREATE_CQ failed\n");
		free(cq);
		errno = err;
		return NULL;
	}

	err = EINVAL;
	if (r->log_depth < 1 || r->log_depth > QRNIC_MAX_QUEUE_LOG) {
		verbs_err(verbs_get_ctx(context),
			  "qrnic: CQ %u: bad log_depth %u\n", r->cqn, r->log_depth);
		goto err_destroy;
	}
	ring_size = (size_t)QRNIC_CQE_SIZE << r->log_depth;
	if (r->mmap_size < ring_size) {
		verbs_err(verbs_get_ctx(context),
			  "qrnic: CQ %u: mapping of %llu bytes < ring of %zu\n",
			  r->cqn, (unsigned long long)r->mmap_size, ring_size);
		goto err_destroy;
	}

	cq->cqn = r->cqn;
	cq->log_depth = r->log_depth;
	cq->mask = (1u << r->log_depth) - 1;
	cq->ci = 0;
	cq->map_size = r->mmap_size;
	cq->map = mmap(NULL, cq->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       context->cmd_fd, r->mmap_key);
	if (cq->map == MAP_FAILED) {
		err = errno;
		verbs_err(verbs_get_ctx(context), "qrnic: CQ %u: mmap failed\n",
			  r->cqn);
		goto err_destroy;
	}
	cq->ring = cq->map;
	/* The dbrec follows the ring in the same mapping; without one the
	 * consumer index reaches the device through CQ doorbells. */
	if (qrnic_dbrec_ok(r->dbrec_offset, ring_size, r->mmap_size))
		cq->dbrec = (uint32_t *)((uint8_t *)cq->map + r->dbrec_offset);
	else
		verbs_warn(verbs_get_ctx(context),
			   "qrnic: CQ %u: no usable dbrec (offset %u)\n",
			   r->cqn, r->dbrec_offset);

	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	return &cq->vcq.cq;

err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
	free(cq);
	errno = err;
	return NULL;
}

int qrnic_destroy_cq(struct ibv_cq *ibcq)
{
	struct qrnic_cq *cq = to_qcq(ibcq);
	int err;

	err = ibv_cmd_destroy_cq(ibcq);
	if (err)
		return err;
	munmap(cq->map, cq->map_size);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

/* Completion of the WQE with low index bits wqe_index frees it and every
 * older WQE of the queue (completions are in ring order). */
static void qrnic_wq_complete(struct qrnic_wq *wq, uint16_t wqe_index)
{
	uint32_t ci, idx;

	if (!wq->depth)
		return;
	ci = __atomic_load_n(&wq->ci, __ATOMIC_RELAXED);
	idx = qrnic_wqe_index_expand(ci, wqe_index);
	if (idx - ci >= wq->depth)
		return;		/* not outstanding: stale or bogus CQE */
	__atomic_store_n(&wq->ci, idx + 1, __ATOMIC_RELEASE);
}

static struct qrnic_qp *qrnic_lookup_qp(struct qrnic_context *ctx,
					uint32_t qpn)
{
	struct qrnic_qp **leaf;

	if (qpn >= QRNIC_QP_TABLE_TOP * QRNIC_QP_TABLE_LEAF)
		return NULL;
	leaf = __atomic_load_n(&ctx->qp_table[qpn >> QRNIC_QP_TABLE_SHIFT],
			       __ATOMIC_ACQUIRE);
	if (!leaf)
		return NULL;
	return __atomic_load_n(&leaf[qpn & (QRNIC_QP_TABLE_LEAF - 1)],
			       __ATOMIC_ACQUIRE);
}

/* Poll one CQE; 0 on success, ENOENT when the CQ is empty. */
static int qrnic_poll_one(struct qrnic_context *ctx, struct qrnic_cq *cq,
			  struct ibv_wc *wc)
{
	const uint8_t *slot = cq->ring +
			      ((size_t)(cq->ci & cq->mask) * QRNIC_CQE_SIZE);
	struct qrnic_cqe cqe;
	struct qrnic_qp *qp;

	if (!qrnic_cqe_valid(slot, cq->ci, cq->log_depth))
		return ENOENT;
	/* The owner byte is written last: read nothing else before it. */
	udma_from_device_barrier();
	memcpy(&cqe, slot, sizeof(cqe));
	cq->ci++;

	qrnic_cqe_to_wc(&cqe, wc);
	qp = qrnic_lookup_qp(ctx, wc->qp_num);
	if (qp)
		qrnic_wq_complete(qrnic_cqe_is_send(&cqe) ? &qp->sq : &qp->rq,
				  le16toh(cqe.wqe_index));
	return 0;
}

/* Tell the device how far we have consumed (caller holds cq->lock). */
static void qrnic_cq_update_ci(struct qrnic_context *ctx, struct qrnic_cq *cq)
{
	/* our reads of the consumed CQEs happen before the device may reuse
	 * their slots */
	udma_to_device_barrier();
	if (cq->dbrec)
		*(volatile uint32_t *)cq->dbrec = htole32(cq->ci);
	else
		qrnic_ring_db(ctx, QRNIC_DB_CQ,
			      qrnic_db_cq_val(cq->cqn, cq->ci, false, false));
}

int qrnic_poll_cq(struct ibv_cq *ibcq, int nwc, struct ibv_wc *wc)
{
	struct qrnic_context *ctx = to_qctx(ibcq->context);
	struct qrnic_cq *cq = to_qcq(ibcq);
	int n;

	pthread_spin_lock(&cq->lock);
	for (n = 0; n < nwc; n++)
		if (qrnic_poll_one(ctx, cq, &wc[n]))
			break;
	if (n)
		qrnic_cq_update_ci(ctx, cq);
	pthread_spin_unlock(&cq->lock);
	return n;
}

int qrnic_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct qrnic_context *ctx = to_qctx(ibcq->context);
	struct qrnic_cq *cq = to_qcq(ibcq);

	pthread_spin_lock(&cq->lock);
	udma_to_device_barrier();
	qrnic_ring_db(ctx, QRNIC_DB_CQ,
		      qrnic_db_cq_val(cq->cqn, cq->ci, true, solicited_only));
	pthread_spin_unlock(&cq->lock);
	return 0;
}

/* ---- QP ----------------------------------------------------------------- */

static void qrnic_lock_cqs(struct ibv_qp *ibqp)
{
	struct qrnic_cq *scq = to_qcq(ibqp->send_cq);
	struct qrnic_cq *rcq = to_qcq(ibqp->recv_cq);

	if (scq == rcq) {
		pthread_spin_lock(&scq->lock);
	} else if (scq < rcq) {	/* fixed order: no ABBA between QPs */
		pthread_spin_lock(&scq->lock);
		pthread_spin_lock(&rcq->lock);
	} else {
		pthread_spin_lock(&rcq->lock);
		pthread_spin_lock(&scq->lock);
	}
}

static void qrnic_unlock_cqs(struct ibv_qp *ibqp)
{
	struct qrnic_cq *scq = to_qcq(ibqp->send_cq);
	struct qrnic_cq *rcq = to_qcq(ibqp->recv_cq);

	pthread_spin_unlock(&scq->lock);
	if (rcq != scq)
		pthread_spin_unlock(&rcq->lock);
}

static int qrnic_set_qp_table(struct qrnic_context *ctx, struct qrnic_qp *qp,
			      struct qrnic_qp *val)
{
	uint32_t qpn = qp->vqp.qp.qp_num;
	struct qrnic_qp **leaf;
	int err = 0;

	if (qpn >= QRNIC_QP_TABLE_TOP * QRNIC_QP_TABLE_LEAF)
		return EINVAL;
	pthread_mutex_lock(&ctx->qp_table_lock);
	leaf = ctx->qp_table[qpn >> QRNIC_QP_TABLE_SHIFT];
	if (!leaf && val) {
		leaf = calloc(QRNIC_QP_TABLE_LEAF, sizeof(*leaf));
		if (leaf)
			__atomic_store_n(&ctx->qp_table[qpn >> QRNIC_QP_TABLE_SHIFT],
					 leaf, __ATOMIC_RELEASE);
		else
			err = ENOMEM;
	}
	if (leaf) {
		qrnic_lock_cqs(&qp->vqp.qp);
		__atomic_store_n(&leaf[qpn & (QRNIC_QP_TABLE_LEAF - 1)], val,
				 __ATOMIC_RELEASE);
		qrnic_unlock_cqs(&qp->vqp.qp);
	}
	pthread_mutex_unlock(&ctx->qp_table_lock);
	return err;
}

/* Map one work queue described by a create_qp or create_srq response
 * (what: "SQ of QP", "RQ of QP" or "SRQ", num its number, for messages). */
static int qrnic_wq_map(struct ibv_context *context, struct qrnic_wq *wq,
			const char *what, uint32_t num, unsigned int log_depth,
			unsigned int wqe_shift, unsigned int min_shift,
			unsigned int max_shift, uint64_t key, uint64_t size)
{
	size_t ring_size;

	if (log_depth < 1 || log_depth > QRNIC_MAX_QUEUE_LOG ||
	    wqe_shift < min_shift || wqe_shift > max_shift) {
		verbs_err(verbs_get_ctx(context),
			  "qrnic: %s %u: bad geometry (log_depth %u, wqe_shift %u)\n",
			  what, num, log_depth, wqe_shift);
		return EINVAL;
	}
	ring_size = ((size_t)1 << log_depth) << wqe_shift;
	if (size < ring_size) {
		verbs_err(verbs_get_ctx(context),
			  "qrnic: %s %u: mapping of %llu bytes < ring of %zu\n",
			  what, num, (unsigned long long)size, ring_size);
		return EINVAL;
	}
	wq->ring = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			context->cmd_fd, key);
	if (wq->ring == MAP_FAILED) {
		wq->ring = NULL;
		verbs_err(verbs_get_ctx(context), "qrnic: %s %u: mmap failed\n",
			  what, num);
		return errno ? errno : EINVAL;
	}
	wq->map_size = size;
	wq->log_depth = log_depth;
	wq->depth = 1u << log_depth;
	wq->mask = wq->depth - 1;
	wq->wqe_shift = wqe_shift;
	wq->pi = 0;
	wq->ci = 0;
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

static void qrnic_wq_unmap(struct qrnic_wq *wq)
{
	if (!wq->ring)
		return;
	munmap(wq->ring, wq->map_size);
	pthread_spin_destroy(&wq->lock);
	wq->ring = NULL;
}

struct ibv_qp *qrnic_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_context *context = pd->context;
	struct qrnic_context *ctx = to_qctx(context);
	struct uqrnic_create_qp_resp resp = {};
	struct qrnic_create_qp_resp *r = &resp.drv_payload;
	struct ibv_create_qp cmd;
	struct qrnic_qp *qp;
	unsigned int max_inline;
	int err;

	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* with an SRQ the RQ capabilities are ignored (the kernel reports 0) */
	if (attr->cap.max_send_sge > ctx->max_sge ||
	    (!attr->srq && attr->cap.max_recv_sge > ctx->max_sge) ||
	    attr->cap.max_inline_data > ctx->max_inline) {
		errno = EINVAL;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	err = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_err(verbs_get_ctx(context), "qrnic: CREATE_QP failed\n");
		free(qp);
		errno = err;
		return NULL;
	}

	err = qrnic_wq_map(context, &qp->sq, "SQ of QP", r->qpn, r->sq_log_depth,
			   r->sq_wqe_shift, QRNIC_MIN_WQE_SHIFT,
			   QRNIC_MAX_SEND_WQE_SHIFT, r->sq_mmap_key,
			   r->sq_mmap_size);
	if (err)
		goto err_destroy;
	qp->sq.max_sge = qrnic_sq_max_sge(r->sq_wqe_shift);

	if (r->rq_log_depth || r->rq_mmap_size) {
		err = qrnic_wq_map(context, &qp->rq, "RQ of QP", r->qpn,
				   r->rq_log_depth, r->rq_wqe_shift,
				   QRNIC_MIN_RECV_WQE_SHIFT,
				   QRNIC_MAX_RECV_WQE_SHIFT, r->rq_mmap_key,
				   r->rq_mmap_size);
		if (err)
			goto err_unmap_sq;
		qp->rq.max_sge = qrnic_rq_max_sge(r->rq_wqe_shift);
	} else if (attr->cap.max_recv_wr && !attr->srq) {
		verbs_err(verbs_get_ctx(context),
			  "qrnic: QP %u: receive queue requested but none created\n",
			  r->qpn);
		err = EINVAL;
		goto err_unmap_sq;
	}

	max_inline = qrnic_sq_max_inline(r->sq_wqe_shift);
	qp->max_inline = r->max_inline < max_inline ? r->max_inline : max_inline;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->ud = attr->qp_type == IBV_QPT_UD;
	qp->uc = attr->qp_type == IBV_QPT_UC;
	qp->vqp.qp.state = IBV_QPS_RESET;

	/* What the rings really hold. */
	attr->cap.max_send_wr = qp->sq.depth;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_recv_wr = qp->rq.depth;
	attr->cap.max_recv_sge = qp->rq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;

	err = qrnic_set_qp_table(ctx, qp, qp);
	if (err)
		goto err_unmap_rq;
	return &qp->vqp.qp;

err_unmap_rq:
	qrnic_wq_unmap(&qp->rq);
err_unmap_sq:
	qrnic_wq_unmap(&qp->sq);
err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
	free(qp);
	errno = err;
	return NULL;
}

static void qrnic_fill_cap(struct qrnic_qp *qp, struct ibv_qp_cap *cap)
{
	cap->max_send_wr = qp->sq.depth;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_recv_wr = qp->rq.depth;
	cap->max_recv_sge = qp->rq.max_sge;
	cap->max_inline_data = qp->max_inline;
}

int qrnic_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr)
{
	struct qrnic_qp *qp = to_qqp(ibqp);
	struct ibv_query_qp cmd;
	int err;

	err = ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
			       sizeof(cmd));
	if (err)
		return err;
	qrnic_fill_cap(qp, &attr->cap);
	qrnic_fill_cap(qp, &init_attr->cap);
	init_attr->sq_sig_all = qp->sq_sig_all;
	return 0;
}

/* The device restarts both queues at index 0 on any -> RESET (spec 11.3). */
static void qrnic_qp_reset_indexes(struct qrnic_qp *qp)
{
	struct qrnic_wq *wqs[2] = { &qp->sq, &qp->rq };
	int i;

	qrnic_lock_cqs(&qp->vqp.qp);
	for (i = 0; i < 2; i++) {
		if (!wqs[i]->ring)
			continue;
		pthread_spin_lock(&wqs[i]->lock);
		wqs[i]->pi = 0;
		__atomic_store_n(&wqs[i]->ci, 0, __ATOMIC_RELEASE);
		pthread_spin_unlock(&wqs[i]->lock);
	}
	qrnic_unlock_cqs(&qp->vqp.qp);
}

int qrnic_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct qrnic_qp *qp = to_qqp(ibqp);
	struct ibv_modify_qp cmd = {};
	int err;

	err = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (attr_mask & IBV_QP_STATE) {
		ibqp->state = attr->qp_state;
		if (attr->qp_state == IBV_QPS_RESET)
			qrnic_qp_reset_indexes(qp);
	}
	return 0;
}

int qrnic_destroy_qp(struct ibv_qp *ibqp)
{
	struct qrnic_context *ctx = to_qctx(ibqp->context);
	struct qrnic_qp *qp = to_qqp(ibqp);
	int err;

	err = ibv_cmd_destroy_qp(ibqp);
	if (err)
		return err;
	/* no poller can still be looking at qp once the CQ locks are taken */
	qrnic_set_qp_table(ctx, qp, NULL);
	qrnic_wq_unmap(&qp->rq);
	qrnic_wq_unmap(&qp->sq);
	free(qp);
	return 0;
}

/* ---- post ------------------------------------------------------------- */

static inline bool qrnic_wq_full(struct qrnic_wq *wq)
{
	return wq->pi - __atomic_load_n(&wq->ci, __ATOMIC_ACQUIRE) >= wq->depth;
}

static inline void *qrnic_wq_slot(struct qrnic_wq *wq, uint32_t idx)
{
	return wq->ring + ((size_t)(idx & wq->mask) << wq->wqe_shift);
}

int qrnic_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	struct qrnic_context *ctx = to_qctx(ibqp->context);
	struct qrnic_qp *qp = to_qqp(ibqp);
	struct qrnic_wq *sq = &qp->sq;
	struct qrnic_sq_params p = {
		.wqe_shift = sq->wqe_shift,
		.max_sge = sq->max_sge,
		.max_inline = qp->max_inline,
		.ud = qp->ud,
		.uc = qp->uc,
		.sig_all = qp->sq_sig_all,
	};
	uint32_t start;
	int err = 0;

	/* IB: no sends before RTS (ERR flushes them, SQD/SQE queue them). */
	switch (ibqp->state) {
	case IBV_QPS_RESET:
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		*bad_wr = wr;
		return EINVAL;
	default:
		break;
	}

	pthread_spin_lock(&sq->lock);
	start = sq->pi;
	for (; wr; wr = wr->next) {
		err = qrnic_check_send_wr(wr, &p);
		if (!err && qrnic_wq_full(sq))
			err = ENOMEM;
		if (err) {
			*bad_wr = wr;
			break;
		}
		if (p.ud && wr->opcode != IBV_WR_LOCAL_INV)
			p.ahn = to_qah(wr->wr.ud.ah)->ahn;
		qrnic_build_send_wqe(qrnic_wq_slot(sq, sq->pi), wr, &p);
		sq->pi++;
	}
	if (sq->pi != start) {
		/* WQEs are in memory before the device hears of them */
		udma_to_device_barrier();
		qrnic_ring_db(ctx, QRNIC_DB_SQ,
			      qrnic_db_wq_val(ibqp->qp_num, sq->pi));
	}
	pthread_spin_unlock(&sq->lock);
	return err;
}

/*
 * Post receive WQEs to a QP's RQ (record NULL: slots come back with
 * completions) or to an SRQ (slots come back when the device's consumer
 * index record passes them), then one doorbell at db_off for queue num.
 */
static int qrnic_post_recv_wq(struct qrnic_context *ctx, struct qrnic_wq *wq,
			      const uint32_t *record, unsigned int db_off,
			      uint32_t num, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr)
{
	uint32_t start;
	int err = 0;

	pthread_spin_lock(&wq->lock);
	start = wq->pi;
	for (; wr; wr = wr->next) {
		bool full;

		err = qrnic_check_recv_wr(wr, wq->max_sge);
		/* acquire: the device read the slot before its record passed it */
		full = record ? qrnic_srq_full(wq->pi,
					       le32toh(__atomic_load_n(record, __ATOMIC_ACQUIRE)),
					       wq->depth) :
				qrnic_wq_full(wq);
		if (!err && full)
			err = ENOMEM;
		if (err) {
			*bad_wr = wr;
			break;
		}
		qrnic_build_recv_wqe(qrnic_wq_slot(wq, wq->pi), wr);
		wq->pi++;
	}
	if (wq->pi != start) {
		udma_to_device_barrier();
		qrnic_ring_db(ctx, db_off, qrnic_db_wq_val(num, wq->pi));
	}
	pthread_spin_unlock(&wq->lock);
	return err;
}

int qrnic_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	struct qrnic_qp *qp = to_qqp(ibqp);

	/* no RQ: created without receive WRs, or on an SRQ */
	if (!qp->rq.ring || ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	return qrnic_post_recv_wq(to_qctx(ibqp->context), &qp->rq, NULL, QRNIC_DB_RQ,
				  ibqp->qp_num, wr, bad_wr);
}

int qrnic_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct qrnic_srq *srq = to_qsrq(ibsrq);

	return qrnic_post_recv_wq(to_qctx(ibsrq->context), &srq->wq, srq->dbrec,
				  QRNIC_DB_SRQ, srq->srqn, wr, bad_wr);
}

/* ---- SRQ ---------------------------------------------------------------- */

struct ibv_srq *qrnic_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_context *context = pd->context;
	struct uqrnic_create_srq_resp resp = {};
	struct qrnic_create_srq_resp *r = &resp.drv_payload;
	struct ibv_create_srq cmd;
	struct qrnic_srq *srq;
	int err;

	if (attr->attr.max_wr < 1 || attr->attr.max_sge > to_qctx(context)->max_sge) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;

	err = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_err(verbs_get_ctx(context), "qrnic: CREATE_SRQ failed\n");
		free(srq);
		errno = err;
		return NULL;
	}

	/* one mapping: the ring, then the record the device writes */
	err = qrnic_wq_map(context, &srq->wq, "SRQ", r->srqn, r->log_depth,
			   r->wqe_shift, QRNIC_MIN_RECV_WQE_SHIFT,
			   QRNIC_MAX_RECV_WQE_SHIFT, r->mmap_key, r->mmap_size);
	if (err)
		goto err_destroy;
	if (!qrnic_dbrec_ok(r->dbrec_offset, (size_t)srq->wq.depth << srq->wq.wqe_shift,
			    r->mmap_size)) {
		verbs_err(verbs_get_ctx(context), "qrnic: SRQ %u: bad dbrec offset %u\n",
			  r->srqn, r->dbrec_offset);
		err = EINVAL;
		goto err_unmap;
	}
	srq->dbrec = (uint32_t *)(srq->wq.ring + r->dbrec_offset);
	srq->wq.max_sge = qrnic_rq_max_sge(r->wqe_shift);
	srq->srqn = r->srqn;

	/* What the ring really holds. */
	attr->attr.max_wr = srq->wq.depth;
	attr->attr.max_sge = srq->wq.max_sge;
	return &srq->vsrq.srq;

err_unmap:
	qrnic_wq_unmap(&srq->wq);
err_destroy:
	ibv_cmd_destroy_srq(&srq->vsrq.srq);
	free(srq);
	errno = err;
	return NULL;
}

int qrnic_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask)
{
	struct ibv_modify_srq cmd;

	return ibv_cmd_modify_srq(srq, attr, attr_mask, &cmd, sizeof(cmd));
}

int qrnic_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int qrnic_destroy_srq(struct ibv_srq *ibsrq)
{
	struct qrnic_srq *srq = to_qsrq(ibsrq);
	int err;

	err = ibv_cmd_destroy_srq(ibsrq);
	if (err)
		return err;
	qrnic_wq_unmap(&srq->wq);
	free(srq);
	return 0;
}

/* ---- AH ----------------------------------------------------------------- */

struct ibv_ah *qrnic_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct uqrnic_create_ah_resp resp = {};
	struct qrnic_ah *ah;
	int err;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	err = ibv_cmd_create_ah(pd, &ah->ibvah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (err) {
		free(ah);
		errno = err;
		return NULL;
	}
	ah->ahn = resp.drv_payload.ahn;
	return &ah->ibvah;
}

int qrnic_destroy_ah(struct ibv_ah *ibah)
{
	int err = ibv_cmd_destroy_ah(ibah);

	if (err)
		return err;
	free(to_qah(ibah));
	return 0;
}
