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

/*
 * ibv_query_rt_values_ex: the device clock (spec 4.6) read from
 * QRNIC_DB_CLOCK of this context's doorbell page, the one part of the
 * device user space has mapped (BAR0 never is): one 64-bit read, no
 * system call.  raw_clock as mlx5 reports it: tv_sec 0, tv_nsec the
 * ticks (here ns, hca_core_clock 1000000 kHz).  A device without the
 * clock (no QRNIC_CAP_CQE_TS, so hca_core_clock 0): EOPNOTSUPP.
 */
int qrnic_query_rt_values(struct ibv_context *context, struct ibv_values_ex *values)
{
	struct qrnic_context *ctx = to_qctx(context);
	uint32_t comp_mask = 0;

	if (!check_comp_mask(values->comp_mask, IBV_VALUES_MASK_RAW_CLOCK))
		return EINVAL;
	if (!__atomic_load_n(&ctx->clock_known, __ATOMIC_ACQUIRE)) {
		struct ibv_device_attr_ex attr = {};
		int err = qrnic_query_device_ex(context, NULL, &attr, sizeof(attr));

		if (err)
			return err;
		ctx->has_clock = attr.hca_core_clock && attr.completion_timestamp_mask;
		__atomic_store_n(&ctx->clock_known, true, __ATOMIC_RELEASE);
	}
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		if (!ctx->has_clock)
			return EOPNOTSUPP;
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = (long)le64toh(
			mmio_read64_le((uint8_t *)ctx->db + QRNIC_DB_CLOCK));
		comp_mask |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	values->comp_mask = comp_mask;
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
	pd->refcnt = 1;
	return &pd->ibvpd;
}

/* Objects created with a parent domain hold it (no-ops on a plain PD, which
 * the kernel keeps while objects use it). */
static void qrnic_pd_get(struct ibv_pd *ibpd)
{
	struct qrnic_pd *pd = to_qpd(ibpd);

	if (pd->protection)
		__atomic_add_fetch(&pd->refcnt, 1, __ATOMIC_RELAXED);
}

static void qrnic_pd_put(struct ibv_pd *ibpd)
{
	struct qrnic_pd *pd = to_qpd(ibpd);

	if (pd->protection)
		__atomic_sub_fetch(&pd->refcnt, 1, __ATOMIC_RELAXED);
}

int qrnic_dealloc_pd(struct ibv_pd *ibpd)
{
	struct qrnic_pd *pd = to_qpd(ibpd);
	int err;

	/* a PD under parent domains, or a parent domain still in use */
	if (__atomic_load_n(&pd->refcnt, __ATOMIC_RELAXED) > 1)
		return EBUSY;
	if (pd->protection) {
		__atomic_sub_fetch(&pd->protection->refcnt, 1, __ATOMIC_RELAXED);
		if (pd->td)
			__atomic_sub_fetch(&pd->td->refcnt, 1, __ATOMIC_RELAXED);
		free(pd);
		return 0;
	}
	err = ibv_cmd_dealloc_pd(ibpd);
	if (err)
		return err;
	free(pd);
	return 0;
}

/* ---- thread and parent domains ------------------------------------------ */

struct ibv_td *qrnic_alloc_td(struct ibv_context *context,
			      struct ibv_td_init_attr *init_attr)
{
	struct qrnic_td *td;

	if (init_attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td)
		return NULL;
	td->ibvtd.context = context;
	td->refcnt = 1;
	return &td->ibvtd;
}

int qrnic_dealloc_td(struct ibv_td *ibtd)
{
	struct qrnic_td *td = to_qtd(ibtd);

	if (__atomic_load_n(&td->refcnt, __ATOMIC_RELAXED) > 1)
		return EBUSY;
	free(td);
	return 0;
}

/*
 * A parent domain is a user-space object: the QPs, CQs, SRQs, MRs and AHs
 * created with it belong to its protection domain, whose handle it
 * carries.  The thread domain changes nothing (the locks stay).  The
 * allocators of IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS are accepted and
 * never called: the provider allocates no memory the device reads (the
 * rings are kernel memory it maps).
 */
struct ibv_pd *qrnic_alloc_parent_domain(struct ibv_context *context,
					 struct ibv_parent_domain_init_attr *attr)
{
	struct qrnic_pd *pd, *prot;

	if (ibv_check_alloc_parent_domain(attr))
		return NULL;
	if (!check_comp_mask(attr->comp_mask,
			     IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)) {
		errno = EINVAL;
		return NULL;
	}
	prot = to_qpd(attr->pd);
	/* a protection domain of this context, not another parent domain */
	if (attr->pd->context != context || prot->protection ||
	    (attr->td && attr->td->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->protection = prot;
	pd->pdn = prot->pdn;
	pd->refcnt = 1;
	if (attr->td) {
		pd->td = to_qtd(attr->td);
		__atomic_add_fetch(&pd->td->refcnt, 1, __ATOMIC_RELAXED);
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	__atomic_add_fetch(&prot->refcnt, 1, __ATOMIC_RELAXED);
	ibv_initialize_parent_domain(&pd->ibvpd, &prot->ibvpd);
	return &pd->ibvpd;
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
	mr->pd = pd;
	qrnic_pd_get(pd);
	return &mr->vmr.ibv_mr;
}

int qrnic_dereg_mr(struct verbs_mr *vmr)
{
	struct qrnic_mr *mr = container_of(vmr, struct qrnic_mr, vmr);
	int err = ibv_cmd_dereg_mr(vmr);

	if (err)
		return err;
	qrnic_pd_put(mr->pd);
	free(mr);
	return 0;
}

/*
 * ibv_rereg_mr: the kernel's rereg_user_mr changes the MR in place (the
 * device's REREG_MR keeps the key, spec 6.6.19); libibverbs checked the
 * flags and updates mr->addr, length and pd.  The provider only moves its
 * reference from the old PD (or parent domain) to the new one.
 */
int qrnic_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
		   size_t length, int access)
{
	struct qrnic_mr *mr = container_of(vmr, struct qrnic_mr, vmr);
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;
	int err;

	if ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != vmr->ibv_mr.context))
		return EINVAL;
	err = ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr, access, pd,
			       &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (err)
		return err;
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		qrnic_pd_get(pd);
		qrnic_pd_put(mr->pd);
		mr->pd = pd;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	return 0;
}

/* ---- memory windows (spec 12.13) ---------------------------------------- */

struct ibv_mw *qrnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int err;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	/* the kernel's ALLOC_MW: mw->rkey is the window's first rkey */
	err = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(mw);
		errno = err;
		return NULL;
	}
	qrnic_pd_get(pd);
	return mw;
}

int qrnic_dealloc_mw(struct ibv_mw *mw)
{
	struct ibv_pd *pd = mw->pd;
	int err = ibv_cmd_dealloc_mw(mw);

	if (err)
		return err;
	qrnic_pd_put(pd);
	free(mw);
	return 0;
}

/*
 * ibv_bind_mw (type 1; libibverbs checked the type and the MR's PD): a
 * BIND_MW WQE giving the window the next rkey variant, posted like any
 * send WR.  mw->rkey takes the new key once the WQE is posted (as rxe and
 * mlx5 do); the completion (IBV_WC_BIND_MW, or IBV_WC_MW_BIND_ERR and the
 * QP in error) says whether the device bound it.  Length 0 unbinds.
 */
int qrnic_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = {
			.mw = mw,
			.rkey = ibv_inc_rkey(mw->rkey),
			.bind_info = mw_bind->bind_info,
		},
	}, *bad;
	int err;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	err = qrnic_post_send(qp, &wr, &bad);
	if (err)
		return err;
	mw->rkey = wr.bind_mw.rkey;
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

/* A record of size bytes (4 or 8, aligned to its size) at offset off of a
 * mapping of map_size bytes, after a ring of ring_size bytes. */
static bool qrnic_record_ok(uint64_t off, size_t size, size_t ring_size, uint64_t map_size)
{
	return off >= ring_size && !(off & (size - 1)) && off + size <= map_size;
}

/* A QP's record (the RQ's producer index, ABI 1.10; the SQ's index and
 * flag, ABI 1.11) at offset off of its work queue's mapping, or NULL,
 * logged, when it does not fit there after the ring. */
static void *qrnic_qp_record(struct ibv_context *context, const struct qrnic_wq *wq,
			     uint32_t off, size_t size, const char *which, uint32_t qpn)
{
	if (qrnic_record_ok(off, size, (size_t)wq->depth << wq->wqe_shift, wq->map_size))
		return wq->ring + off;
	verbs_err(verbs_get_ctx(context), "qrnic: QP %u: %s record offset %u outside its mapping\n",
		  qpn, which, off);
	return NULL;
}

/* ---- CQ ----------------------------------------------------------------- */

/* Map the ring (and dbrec) of a CQ the kernel created; 0 or an errno (the
 * caller then destroys the CQ). */
static int qrnic_cq_map(struct ibv_context *context, struct qrnic_cq *cq,
			const struct qrnic_create_cq_resp *r)
{
	size_t ring_size;

	if (r->log_depth < 1 || r->log_depth > QRNIC_MAX_QUEUE_LOG) {
		verbs_err(verbs_get_ctx(context),
			  "qrnic: CQ %u: bad log_depth %u\n", r->cqn, r->log_depth);
		return EINVAL;
	}
	/* an older kernel leaves cqe_size 0: 32-byte CQEs */
	if (r->cqe_size != 0 && r->cqe_size != QRNIC_CQE_SIZE &&
	    r->cqe_size != sizeof(struct qrnic_cqe64)) {
		verbs_err(verbs_get_ctx(context),
			  "qrnic: CQ %u: bad CQE size %u\n", r->cqn, r->cqe_size);
		return EINVAL;
	}
	cq->cqe_size = r->cqe_size ? r->cqe_size : QRNIC_CQE_SIZE;
	ring_size = (size_t)cq->cqe_size << r->log_depth;
	if (r->mmap_size < ring_size) {
		verbs_err(verbs_get_ctx(context),
			  "qrnic: CQ %u: mapping of %llu bytes < ring of %zu\n",
			  r->cqn, (unsigned long long)r->mmap_size, ring_size);
		return EINVAL;
	}

	cq->cqn = r->cqn;
	cq->log_depth = r->log_depth;
	cq->mask = (1u << r->log_depth) - 1;
	cq->ci = 0;
	cq->map_size = r->mmap_size;
	cq->map = mmap(NULL, cq->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       context->cmd_fd, r->mmap_key);
	if (cq->map == MAP_FAILED) {
		verbs_err(verbs_get_ctx(context), "qrnic: CQ %u: mmap failed\n",
			  r->cqn);
		return errno ? errno : EINVAL;
	}
	cq->ring = cq->map;
	/* The dbrec follows the ring in the same mapping; without one the
	 * consumer index reaches the device through CQ doorbells. */
	if (qrnic_record_ok(r->dbrec_offset, sizeof(*cq->dbrec), ring_size, r->mmap_size))
		cq->dbrec = (qrnic_le32 *)((uint8_t *)cq->map + r->dbrec_offset);
	else
		verbs_warn(verbs_get_ctx(context),
			   "qrnic: CQ %u: no usable dbrec (offset %u)\n",
			   r->cqn, r->dbrec_offset);

	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

struct ibv_cq *qrnic_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel, int comp_vector)
{
	struct uqrnic_create_cq_resp resp = {};
	struct ibv_create_cq cmd;
	struct qrnic_cq *cq;
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
	err = qrnic_cq_map(context, cq, &resp.drv_payload);
	if (err) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		free(cq);
		errno = err;
		return NULL;
	}
	return &cq->vcq.cq;
}

int qrnic_destroy_cq(struct ibv_cq *ibcq)
{
	struct qrnic_cq *cq = to_qcq(ibcq);
	int err;

	err = ibv_cmd_destroy_cq(ibcq);
	if (err)
		return err;
	munmap(cq->map, cq->map_size);
	if (cq->rmap)
		munmap(cq->rmap, cq->rmap_size);
	pthread_spin_destroy(&cq->lock);
	if (cq->parent_domain)
		qrnic_pd_put(cq->parent_domain);
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
			      ((size_t)(cq->ci & cq->mask) * cq->cqe_size);
	struct qrnic_cqe cqe;
	struct qrnic_qp *qp;

	if (cq->lost)
		return EIO;
	if (!qrnic_cqe_valid(slot, cq->ci, cq->log_depth))
		return ENOENT;
	/* The owner byte is written last: read nothing else before it. */
	udma_from_device_barrier();
	memcpy(&cqe, slot, sizeof(cqe));
	if (cq->cqe_size > sizeof(cqe)) {	/* spec 9.8: written before the owner */
		__le64 ts;

		memcpy(&ts, slot + offsetof(struct qrnic_cqe64, timestamp), sizeof(ts));
		cq->ex_ts = le64toh(ts);
	}
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
		*(volatile qrnic_le32 *)cq->dbrec = htole32(cq->ci);
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
	for (n = 0; n < nwc; n++) {
		int err = qrnic_poll_one(ctx, cq, &wc[n]);

		if (err == EIO && !n) {
			pthread_spin_unlock(&cq->lock);
			return -1;	/* no ring: a failed resize */
		}
		if (err)
			break;
	}
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

/*
 * ibv_resize_cq.  The kernel allocates the new ring and sends RESIZE_CQ:
 * the device moves the CQEs not yet consumed (by the dbrec, or the last CQ
 * doorbell) to slots 0, 1, ... of the new ring and writes 0 to the dbrec.
 * The CQ lock is held from before the command until the new ring is
 * mapped and the consumer index is 0, so no poller sees the old ring after
 * the device left it, nor the new one at a stale index.  The dbrec stays
 * in the first mapping.  EINVAL (nothing changed) when the CQEs not polled
 * do not fit.
 */
int qrnic_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct qrnic_cq *cq = to_qcq(ibcq);
	struct uqrnic_resize_cq_resp resp = {};
	struct qrnic_resize_cq_resp *r = &resp.drv_payload;
	struct ibv_resize_cq cmd;
	size_t ring_size;
	void *map;
	int err;

	if (cqe < 1)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	if (cq->lost) {
		err = EIO;
		goto out;
	}
	/* poll_cq / end_poll published what we consumed: the device carries
	 * the rest */
	err = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (err)
		goto out;

	/* From here on the device writes the new ring only, with the CQE
	 * size the CQ was created with (an older kernel: cqe_size 0, 32) */
	ring_size = (size_t)cq->cqe_size << r->log_depth;
	if (r->log_depth < 1 || r->log_depth > QRNIC_MAX_QUEUE_LOG ||
	    (r->cqe_size && r->cqe_size != cq->cqe_size) || r->mmap_size < ring_size) {
		verbs_err(verbs_get_ctx(ibcq->context),
			  "qrnic: CQ %u: bad resize answer (log_depth %u, %llu bytes)\n",
			  cq->cqn, r->log_depth, (unsigned long long)r->mmap_size);
		err = EINVAL;
		cq->lost = true;
		goto out;
	}
	map = mmap(NULL, r->mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ibcq->context->cmd_fd, r->mmap_key);
	if (map == MAP_FAILED) {
		err = errno ? errno : ENOMEM;
		verbs_err(verbs_get_ctx(ibcq->context),
			  "qrnic: CQ %u: mmap of the resized ring failed\n", cq->cqn);
		cq->lost = true;
		goto out;
	}
	if (cq->rmap)
		munmap(cq->rmap, cq->rmap_size);
	cq->rmap = map;
	cq->rmap_size = r->mmap_size;
	cq->ring = map;
	cq->log_depth = r->log_depth;
	cq->mask = (1u << r->log_depth) - 1;
	cq->ci = 0;
out:
	pthread_spin_unlock(&cq->lock);
	return err;
}

/* ibv_modify_cq: completion event moderation (MODIFY_CQ: count, period) */
int qrnic_modify_cq(struct ibv_cq *ibcq, struct ibv_modify_cq_attr *attr)
{
	struct ibv_modify_cq cmd = {};

	if (attr->attr_mask & ~(uint32_t)IBV_CQ_ATTR_MODERATE)
		return EINVAL;
	return ibv_cmd_modify_cq(ibcq, attr, &cmd, sizeof(cmd));
}

/* ---- extended CQ (ibv_create_cq_ex, ibv_start_poll ...) --------------------- */

/*
 * The same CQ, polled one completion at a time: start_poll takes the lock
 * and the first CQE, next_poll the following ones, end_poll publishes the
 * consumer index and unlocks.  Each CQE is consumed exactly as poll_cq
 * consumes it (qrnic_poll_one: owner bit, read barrier, copy, ci++, the
 * send/receive queue slots freed) into cq->ex_wc, which the read_*
 * functions return from; the index reaches the dbrec (or the CQ doorbell)
 * once per start..end, as once per poll_cq call.  Both kinds of polling
 * may be mixed on one CQ.
 */
static int qrnic_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct qrnic_cq *cq = to_qcq_ex(ibcq);
	int err;

	if (attr->comp_mask)
		return EINVAL;

	pthread_spin_lock(&cq->lock);
	err = qrnic_poll_one(to_qctx(ibcq->context), cq, &cq->ex_wc);
	if (err) {
		pthread_spin_unlock(&cq->lock);
		return err;	/* ENOENT (or EIO): no end_poll follows */
	}
	ibcq->status = cq->ex_wc.status;
	ibcq->wr_id = cq->ex_wc.wr_id;
	return 0;
}

static int qrnic_next_poll(struct ibv_cq_ex *ibcq)
{
	struct qrnic_cq *cq = to_qcq_ex(ibcq);

	if (qrnic_poll_one(to_qctx(ibcq->context), cq, &cq->ex_wc))
		return ENOENT;	/* the lock stays until end_poll */
	ibcq->status = cq->ex_wc.status;
	ibcq->wr_id = cq->ex_wc.wr_id;
	return 0;
}

static void qrnic_end_poll(struct ibv_cq_ex *ibcq)
{
	struct qrnic_cq *cq = to_qcq_ex(ibcq);

	/* start_poll consumed at least one CQE */
	qrnic_cq_update_ci(to_qctx(ibcq->context), cq);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode qrnic_wc_read_opcode(struct ibv_cq_ex *ibcq)
{
	return to_qcq_ex(ibcq)->ex_wc.opcode;
}

static uint32_t qrnic_wc_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return to_qcq_ex(ibcq)->ex_wc.vendor_err;
}

static uint32_t qrnic_wc_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return to_qcq_ex(ibcq)->ex_wc.byte_len;
}

/* The immediate data (network order) or, with IBV_WC_WITH_INV, the
 * invalidated rkey (host order): ibv_wc_read_invalidated_rkey() reads it
 * through this function too, as from the union of struct ibv_wc. */
static __be32 qrnic_wc_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return to_qcq_ex(ibcq)->ex_wc.imm_data;
}

static uint32_t qrnic_wc_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return to_qcq_ex(ibcq)->ex_wc.qp_num;
}

static uint32_t qrnic_wc_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return to_qcq_ex(ibcq)->ex_wc.src_qp;
}

static unsigned int qrnic_wc_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return to_qcq_ex(ibcq)->ex_wc.wc_flags;
}

/* RoCE: no LIDs, no SL in the CQE; 0, as ibv_poll_cq reports them (and rxe) */
static uint32_t qrnic_wc_read_slid(struct ibv_cq_ex *ibcq)
{
	return to_qcq_ex(ibcq)->ex_wc.slid;
}

static uint8_t qrnic_wc_read_sl(struct ibv_cq_ex *ibcq)
{
	return to_qcq_ex(ibcq)->ex_wc.sl;
}

static uint8_t qrnic_wc_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return to_qcq_ex(ibcq)->ex_wc.dlid_path_bits;
}

/* The device clock's value when the device wrote the CQE (spec 9.8), in
 * its ticks: ns, hca_core_clock 1000000 kHz. */
static uint64_t qrnic_wc_read_completion_ts(struct ibv_cq_ex *ibcq)
{
	return to_qcq_ex(ibcq)->ex_ts;
}

/* What create_cq_ex accepts in wc_flags.  COMPLETION_TIMESTAMP makes a CQ
 * of 64-byte CQEs (the kernel passes IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION
 * on; it refuses it for a device without QRNIC_CAP_CQE_TS).  Not:
 * COMPLETION_TIMESTAMP_WALLCLOCK (the device clock is the VM's virtual
 * time, not a real-time clock: converting it would not be honest), CVLAN,
 * flow tag, TM info. */
#define QRNIC_CQ_EX_WC_FLAGS						\
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |			\
	 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |		\
	 IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |			\
	 IBV_WC_EX_WITH_DLID_PATH_BITS |				\
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)

struct ibv_cq_ex *qrnic_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr)
{
	struct uqrnic_create_cq_ex_resp resp = {};
	struct ibv_create_cq_ex cmd = {};
	struct ibv_pd *parent = NULL;
	struct ibv_cq_ex *ex;
	struct qrnic_cq *cq;
	int err;

	if ((attr->wc_flags & ~(uint64_t)QRNIC_CQ_EX_WC_FLAGS) ||
	    !check_comp_mask(attr->comp_mask, IBV_CQ_INIT_ATTR_MASK_FLAGS |
			     IBV_CQ_INIT_ATTR_MASK_PD) ||
	    /* SINGLE_THREADED is a hint (the lock stays); no IGNORE_OVERRUN */
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		parent = attr->parent_domain;
		/* a parent domain of this context, not a plain PD */
		if (!parent || parent->context != context ||
		    !to_qpd(parent)->protection) {
			errno = EINVAL;
			return NULL;
		}
	}
	if (attr->cqe < 1 || attr->cqe > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;

	err = ibv_cmd_create_cq_ex(context, attr, &cq->vcq, &cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp), 0);
	if (err) {
		verbs_err(verbs_get_ctx(context), "qrnic: CREATE_CQ (ex) failed\n");
		free(cq);
		errno = err;
		return NULL;
	}
	err = qrnic_cq_map(context, cq, &resp.drv_payload);
	if (!err && (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) &&
	    cq->cqe_size != sizeof(struct qrnic_cqe64)) {
		/* a kernel that ignored the flag: no timestamps to give */
		verbs_err(verbs_get_ctx(context),
			  "qrnic: CQ %u: the kernel gave no timestamp CQEs\n", cq->cqn);
		munmap(cq->map, cq->map_size);
		err = EOPNOTSUPP;
	}
	if (err) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		free(cq);
		errno = err;
		return NULL;
	}
	if (parent) {
		cq->parent_domain = parent;
		qrnic_pd_get(parent);
	}

	ex = &cq->vcq.cq_ex;
	ex->start_poll = qrnic_start_poll;
	ex->next_poll = qrnic_next_poll;
	ex->end_poll = qrnic_end_poll;
	ex->read_opcode = qrnic_wc_read_opcode;
	ex->read_vendor_err = qrnic_wc_read_vendor_err;
	ex->read_wc_flags = qrnic_wc_read_wc_flags;
	/* every reader we have, whatever wc_flags asked for */
	ex->read_byte_len = qrnic_wc_read_byte_len;
	ex->read_imm_data = qrnic_wc_read_imm_data;
	ex->read_qp_num = qrnic_wc_read_qp_num;
	ex->read_src_qp = qrnic_wc_read_src_qp;
	ex->read_slid = qrnic_wc_read_slid;
	ex->read_sl = qrnic_wc_read_sl;
	ex->read_dlid_path_bits = qrnic_wc_read_dlid_path_bits;
	if (cq->cqe_size == sizeof(struct qrnic_cqe64))
		ex->read_completion_ts = qrnic_wc_read_completion_ts;
	return ex;
}

/* ---- QP ----------------------------------------------------------------- */

/* An XRC SEND QP has no receive CQ: its send CQ stands in. */
static struct qrnic_cq *qrnic_qp_rcq(struct ibv_qp *ibqp)
{
	return to_qcq(ibqp->recv_cq ? ibqp->recv_cq : ibqp->send_cq);
}

static void qrnic_lock_cqs(struct ibv_qp *ibqp)
{
	struct qrnic_cq *scq = to_qcq(ibqp->send_cq);
	struct qrnic_cq *rcq = qrnic_qp_rcq(ibqp);

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
	struct qrnic_cq *rcq = qrnic_qp_rcq(ibqp);

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
	if (qp->xrc_recv)	/* no queue of its own to free slots in */
		return 0;
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

/* send_ops_flags (ibv_qp_ex) each QP type accepts: what post_send posts on
 * it (qrnic_wr_opcode).  Not: TSO, FLUSH, ATOMIC_WRITE. */
#define QRNIC_UD_SEND_OPS							(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |			 IBV_QP_EX_WITH_LOCAL_INV)
#define QRNIC_UC_SEND_OPS							(QRNIC_UD_SEND_OPS | IBV_QP_EX_WITH_RDMA_WRITE |			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_BIND_MW)
#define QRNIC_RC_SEND_OPS							(QRNIC_UC_SEND_OPS | IBV_QP_EX_WITH_SEND_WITH_INV |			 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |		 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

static void qrnic_set_wr_ops(struct qrnic_qp *qp, uint64_t send_ops_flags);

/*
 * XRC RECV QP (IBV_QPT_XRC_RECV, spec 12.14): the kernel creates the XRC
 * TGT QP in the XRC domain, without rings, CQs or PD and without driver
 * data (ib_core passes no udata for it).  Its receives come through the
 * XRC SRQs of the domain, whose CQEs name it (QRNIC_CQE_F_XRC).
 */
static struct ibv_qp *qrnic_create_xrc_recv_qp(struct ibv_context *context,
					       struct ibv_qp_init_attr_ex *attr)
{
	struct ib_uverbs_create_qp_resp resp = {};
	struct ibv_create_qp cmd;
	struct qrnic_qp *qp;
	int err;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd ||
	    !check_comp_mask(attr->comp_mask, IBV_QP_INIT_ATTR_XRCD) ||
	    attr->srq || attr->send_cq || attr->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	err = ibv_cmd_create_qp_ex(context, &qp->vqp, attr, &cmd, sizeof(cmd),
				   &resp, sizeof(resp));
	if (err) {
		verbs_err(verbs_get_ctx(context), "qrnic: CREATE_QP (XRC RECV) failed\n");
		free(qp);
		errno = err;
		return NULL;
	}
	qp->xrc_recv = true;
	qp->vqp.qp.state = IBV_QPS_RESET;
	memset(&attr->cap, 0, sizeof(attr->cap));
	return &qp->vqp.qp;
}

/*
 * create_qp and create_qp_ex.  Both send the same (non-extended) CREATE_QP
 * command with the same udata; ibv_qp_ex is set up only when
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS asks for it (ibv_qp_to_qp_ex() is NULL
 * otherwise).  attr->pd may be a parent domain.
 */
static struct ibv_qp *qrnic_create_qp_common(struct ibv_context *context,
					     struct ibv_qp_init_attr_ex *attr)
{
	struct qrnic_context *ctx = to_qctx(context);
	struct uqrnic_create_qp_resp resp = {};
	struct qrnic_create_qp_resp *r = &resp.drv_payload;
	struct ibv_create_qp cmd;
	struct qrnic_qp *qp;
	unsigned int max_inline;
	uint64_t ops = 0;
	int err;

	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return qrnic_create_xrc_recv_qp(context, attr);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	if (!check_comp_mask(attr->comp_mask, IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ||
	    (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	     attr->qp_type != IBV_QPT_UD && attr->qp_type != IBV_QPT_XRC_SEND)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->qp_type == IBV_QPT_XRC_SEND) {
		/* the send side only (spec 12.14) */
		if (attr->srq || attr->cap.max_recv_wr) {
			errno = EINVAL;
			return NULL;
		}
		attr->recv_cq = NULL;
		attr->cap.max_recv_sge = 0;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		ops = attr->send_ops_flags;
		if (ops & ~(uint64_t)(attr->qp_type == IBV_QPT_RC ||
				      attr->qp_type == IBV_QPT_XRC_SEND ? QRNIC_RC_SEND_OPS :
				      attr->qp_type == IBV_QPT_UC ? QRNIC_UC_SEND_OPS :
				      QRNIC_UD_SEND_OPS)) {
			errno = EOPNOTSUPP;
			return NULL;
		}
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

	err = ibv_cmd_create_qp_ex(context, &qp->vqp, attr, &cmd, sizeof(cmd),
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
	if (r->sq_dbrec_offset) {
		qp->sq_dbrec = qrnic_qp_record(context, &qp->sq, r->sq_dbrec_offset,
					       sizeof(*qp->sq_dbrec), "SQ", r->qpn);
		if (!qp->sq_dbrec) {
			err = EINVAL;
			goto err_unmap_sq;
		}
	}

	if (r->rq_log_depth || r->rq_mmap_size) {
		err = qrnic_wq_map(context, &qp->rq, "RQ of QP", r->qpn,
				   r->rq_log_depth, r->rq_wqe_shift,
				   QRNIC_MIN_RECV_WQE_SHIFT,
				   QRNIC_MAX_RECV_WQE_SHIFT, r->rq_mmap_key,
				   r->rq_mmap_size);
		if (err)
			goto err_unmap_sq;
		qp->rq.max_sge = qrnic_rq_max_sge(r->rq_wqe_shift);
		if (r->rq_dbrec_offset) {
			qp->rq_dbrec = qrnic_qp_record(context, &qp->rq, r->rq_dbrec_offset,
						       sizeof(*qp->rq_dbrec), "RQ", r->qpn);
			if (!qp->rq_dbrec) {
				err = EINVAL;
				goto err_unmap_rq;
			}
		}
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
	qp->xrc_send = attr->qp_type == IBV_QPT_XRC_SEND;
	qp->vqp.qp.state = IBV_QPS_RESET;

	/* What the rings really hold. */
	attr->cap.max_send_wr = qp->sq.depth;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_recv_wr = qp->rq.depth;
	attr->cap.max_recv_sge = qp->rq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qrnic_set_wr_ops(qp, ops);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}

	err = qrnic_set_qp_table(ctx, qp, qp);
	if (err)
		goto err_unmap_rq;
	qrnic_pd_get(attr->pd);
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

struct ibv_qp *qrnic_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp = qrnic_create_qp_common(pd->context, &ex);

	if (qp)
		attr->cap = ex.cap;
	return qp;
}

struct ibv_qp *qrnic_create_qp_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr)
{
	return qrnic_create_qp_common(context, attr);
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

/*
 * Take the CQEs of QP qpn that are in cq and not yet polled out of it
 * (caller holds cq->lock), as mlx5's provider does when a QP goes to
 * RESET: the completions of before the reset (the flushed WQEs of an
 * ERROR, say) name queue slots that no longer exist, and a consumer that
 * reconnects the QP must not poll them as completions of its new work
 * (rdma-core's MRTest polls the first CQE after restating its QPs).
 * The valid CQEs are those from ci up to the first slot the device has
 * not written; from the newest back, the others' CQEs move up over the
 * removed ones (their owner bit set for their new slot), and ci passes
 * the slots that emptied.  Slots not yet written are not touched.
 */
static void qrnic_cq_clean(struct qrnic_context *ctx, struct qrnic_cq *cq, uint32_t qpn)
{
	uint32_t end, i, nfreed = 0;

	if (cq->lost || !cq->ring)
		return;
	for (end = cq->ci; end - cq->ci <= cq->mask; end++)
		if (!qrnic_cqe_valid(cq->ring + (size_t)(end & cq->mask) * cq->cqe_size, end,
				     cq->log_depth))
			break;
	udma_from_device_barrier();
	for (i = end; i != cq->ci;) {
		struct qrnic_cqe *c;

		i--;
		c = (struct qrnic_cqe *)(cq->ring + (size_t)(i & cq->mask) * cq->cqe_size);
		if (le32toh(c->qpn) == qpn) {
			nfreed++;
		} else if (nfreed) {
			/* the whole entry: a 64-byte CQE moves with its timestamp */
			struct qrnic_cqe64 tmp;
			uint8_t *to = cq->ring + (size_t)((i + nfreed) & cq->mask) * cq->cqe_size;

			memcpy(&tmp, c, cq->cqe_size);
			tmp.cqe.owner = (uint8_t)((tmp.cqe.owner & ~1u) |
						  qrnic_cq_owner(i + nfreed, cq->log_depth));
			memcpy(to, &tmp, cq->cqe_size);
		}
	}
	if (nfreed) {
		cq->ci += nfreed;
		qrnic_cq_update_ci(ctx, cq);
	}
}

/*
 * The device restarts both queues at index 0 on any -> RESET (spec 11.3);
 * the QP's completions not yet polled go (qrnic_cq_clean).
 */
static void qrnic_qp_reset_indexes(struct qrnic_qp *qp)
{
	struct qrnic_context *ctx = to_qctx(qp->vqp.qp.context);
	struct ibv_qp *ibqp = &qp->vqp.qp;
	struct qrnic_wq *wqs[2] = { &qp->sq, &qp->rq };
	struct qrnic_cq *scq, *rcq;
	int i;

	if (qp->xrc_recv)	/* no queues, no CQs */
		return;
	qrnic_lock_cqs(ibqp);
	scq = to_qcq(ibqp->send_cq);
	rcq = qrnic_qp_rcq(ibqp);
	qrnic_cq_clean(ctx, scq, ibqp->qp_num);
	if (rcq && rcq != scq)
		qrnic_cq_clean(ctx, rcq, ibqp->qp_num);
	for (i = 0; i < 2; i++) {
		if (!wqs[i]->ring)
			continue;
		pthread_spin_lock(&wqs[i]->lock);
		wqs[i]->pi = 0;
		__atomic_store_n(&wqs[i]->ci, 0, __ATOMIC_RELEASE);
		if (wqs[i] == &qp->rq && qp->rq_dbrec)	/* the device's index is 0 too */
			*(volatile qrnic_le32 *)qp->rq_dbrec = 0;
		if (wqs[i] == &qp->sq && qp->sq_dbrec)
			*(volatile qrnic_le32 *)&qp->sq_dbrec->pi = 0;
		pthread_spin_unlock(&wqs[i]->lock);
	}
	qrnic_unlock_cqs(&qp->vqp.qp);
}

int qrnic_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct qrnic_qp *qp = to_qqp(ibqp);
	struct ibv_modify_qp cmd = {};
	enum ibv_qp_state old = ibqp->state;
	int err;

	/* To ERR: post_recv rings the RQ doorbell from now on (with an RQ
	 * record), so that a WQE posted while the device flushes is flushed
	 * too, not left to the record alone. */
	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_ERR)
		*(volatile enum ibv_qp_state *)&ibqp->state = IBV_QPS_ERR;
	err = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (err) {
		*(volatile enum ibv_qp_state *)&ibqp->state = old;
		return err;
	}
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
	if (!qp->xrc_recv)	/* it has no PD */
		qrnic_pd_put(ibqp->pd);
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

/* IB: no sends before RTS (ERR flushes them, SQD/SQE queue them). */
static inline bool qrnic_may_send(struct ibv_qp *ibqp)
{
	switch (ibqp->state) {
	case IBV_QPS_RESET:
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		return false;
	default:
		return true;
	}
}

static struct qrnic_sq_params qrnic_qp_sq_params(struct qrnic_qp *qp)
{
	struct qrnic_sq_params p = {
		.wqe_shift = qp->sq.wqe_shift,
		.max_sge = qp->sq.max_sge,
		.max_inline = qp->max_inline,
		.ud = qp->ud,
		.uc = qp->uc,
		.sig_all = qp->sq_sig_all,
		.xrc = qp->xrc_send,
	};

	return p;
}

/*
 * BlueFlame (spec 3.2.1), as mlx5 does for a single small WQE: the WQE,
 * already in the ring, is also stored into a BF buffer of the doorbell page
 * with 64-bit stores, then the control word, which is the SQ doorbell.
 * The device then needs no DMA read of the WQE; if anything is wrong with
 * the copy it reads the ring.  Returns false if the WQE is not for BF.
 */
static bool qrnic_sq_bf(struct qrnic_context *ctx, struct qrnic_qp *qp, uint32_t idx)
{
	const __le64 *src = qrnic_wq_slot(&qp->sq, idx);	/* little-endian as stored */
	uint32_t max = ctx->bf_size < (1u << qp->sq.wqe_shift) ? ctx->bf_size
							       : (1u << qp->sq.wqe_shift);
	uint32_t nwords = qrnic_bf_nwords(src, max);
	uint8_t *buf;

	if (!nwords)
		return false;
	pthread_spin_lock(&ctx->bf_lock);
	buf = (uint8_t *)ctx->db + qrnic_bf_offset(ctx->bf_next++);
	for (uint32_t i = 0; i < nwords; i++)	/* the ring's bytes, as stored */
		mmio_write64_le(buf + 8 * i, src[i]);
	/* the data words before the control word, even write-combined */
	mmio_flush_writes();
	mmio_write64_le(buf + QRNIC_BF_CTRL,
			htole64(qrnic_bf_ctrl_val(qp->vqp.qp.qp_num, qp->sq.pi, nwords)));
	mmio_flush_writes();
	pthread_spin_unlock(&ctx->bf_lock);
	return true;
}

/*
 * A store before a load, against a device (the kernel's mb(), not
 * smp_mb()).  On x86 an MFENCE, not the `lock or` GCC makes of a
 * sequentially consistent fence: QEMU's TCG with one vCPU translates a
 * locked instruction as a plain load and store, with no barrier on the
 * host, while it always makes MFENCE one (a device model runs on another
 * host thread).  The SQ record's handshake then lost a post now and then:
 * the index still in the vCPU's store buffer when the device read it, the
 * flag read before the device cleared it, and no doorbell (an
 * ib_read_lat between two guests hung about once in four runs,
 * docs/interop.md 4.3).  Written here because rdma-core's
 * util/udma_barrier.h has none: its barriers order stores to the device
 * (udma_to_device_barrier, mmio_flush_writes: SFENCE) or loads from it
 * (udma_from_device_barrier), never a store before a load.
 */
static inline void qrnic_store_load_fence(void)
{
#if defined(__x86_64__) || defined(__i386__)
	asm volatile("mfence" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Announce the SQ's WQEs from start on (caller holds sq.lock). */
static inline void qrnic_sq_doorbell(struct qrnic_context *ctx,
				     struct qrnic_qp *qp, uint32_t start)
{
	if (qp->sq.pi == start)
		return;
	/* WQEs are in memory before the device hears of them */
	udma_to_device_barrier();
	if (qp->sq_dbrec) {
		*(volatile qrnic_le32 *)&qp->sq_dbrec->pi = htole32(qp->sq.pi);
		/* the index's write before the flag's read: the device clears
		 * the flag, fences, then reads the index, so either it sees
		 * this index or we see the flag clear (spec 8.6.2) */
		qrnic_store_load_fence();
		if (le32toh(*(volatile qrnic_le32 *)&qp->sq_dbrec->flags) & QRNIC_SQ_DBREC_NO_DB)
			return;
	}
	if (ctx->bf_size && qp->sq.pi - start == 1 &&
	    (ctx->bf_all || qrnic_bf_worth(qrnic_wq_slot(&qp->sq, start))) &&
	    qrnic_sq_bf(ctx, qp, start))
		return;
	qrnic_ring_db(ctx, QRNIC_DB_SQ, qrnic_db_wq_val(qp->vqp.qp.qp_num, qp->sq.pi));
}

int qrnic_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	struct qrnic_context *ctx = to_qctx(ibqp->context);
	struct qrnic_qp *qp = to_qqp(ibqp);
	struct qrnic_wq *sq = &qp->sq;
	struct qrnic_sq_params p = qrnic_qp_sq_params(qp);
	uint32_t start;
	int err = 0;

	if (!qrnic_may_send(ibqp) || qp->xrc_recv) {	/* an XRC RECV QP has no SQ */
		*bad_wr = wr;
		return EINVAL;
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
	qrnic_sq_doorbell(ctx, qp, start);
	pthread_spin_unlock(&sq->lock);
	return err;
}

/* ---- post: the ibv_wr_* API of ibv_qp_ex ------------------------------------ */

/*
 * wr_start takes the SQ lock (as post_send holds it for a list of WRs);
 * each opcode call takes the next slot, the setters fill it; wr_complete
 * rings one doorbell for all of them, or, after any error, posts none of
 * them and returns the first error (EINVAL: a bad WR or a QP before RTS;
 * ENOMEM: the SQ is full), as mlx5 does; wr_abort drops them.  The WQE
 * bytes are those post_send writes for the same ibv_send_wr: both use the
 * pieces of qrnic_wqe.h.
 */

static inline void qrnic_wr_fail(struct qrnic_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

/* Close the WR being built: complete?  Then its header goes into its slot. */
static void qrnic_wr_finish(struct qrnic_qp *qp)
{
	if (!qp->wr_slot)
		return;
	if (qp->wr_need_ud ||
	    (qrnic_wr_is_atomic(qp->wr_qop) && qp->wr_hdr.num_sge != 1))
		qrnic_wr_fail(qp, EINVAL);
	else
		memcpy(qp->wr_slot, &qp->wr_hdr, sizeof(qp->wr_hdr));
	qp->wr_slot = NULL;
}

/* Start a WR of opcode op in the next SQ slot; its header, or NULL after
 * an error (the rest of the batch is then ignored). */
static struct qrnic_send_wqe *qrnic_wr_new(struct ibv_qp_ex *ibqpx,
					   enum ibv_wr_opcode op)
{
	struct qrnic_qp *qp = to_qqp_ex(ibqpx);
	struct qrnic_wq *sq = &qp->sq;
	int qop;

	qrnic_wr_finish(qp);
	if (qp->wr_err)
		return NULL;
	qop = qrnic_wr_opcode(op, qp->ud, qp->uc);
	if (qop < 0) {
		qrnic_wr_fail(qp, EINVAL);
		return NULL;
	}
	if (qrnic_wq_full(sq)) {
		qrnic_wr_fail(qp, ENOMEM);
		return NULL;
	}
	qp->wr_slot = qrnic_wq_slot(sq, sq->pi);
	sq->pi++;
	qp->wr_qop = qop;
	qp->wr_need_ud = qp->ud && qop != QRNIC_WR_LOCAL_INV;
	qrnic_send_hdr_init(&qp->wr_hdr, qop, ibqpx->wr_flags, qp->sq_sig_all,
			    ibqpx->wr_id);
	return &qp->wr_hdr;
}

static void qrnic_wr_start(struct ibv_qp_ex *ibqpx)
{
	struct qrnic_qp *qp = to_qqp_ex(ibqpx);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_start_pi = qp->sq.pi;
	qp->wr_slot = NULL;
	qp->wr_err = qrnic_may_send(&qp->vqp.qp) ? 0 : EINVAL;
}

static int qrnic_wr_complete(struct ibv_qp_ex *ibqpx)
{
	struct qrnic_qp *qp = to_qqp_ex(ibqpx);
	int err;

	qrnic_wr_finish(qp);
	err = qp->wr_err;
	if (err)
		qp->sq.pi = qp->wr_start_pi;	/* none of the batch is posted */
	else
		qrnic_sq_doorbell(to_qctx(qp->vqp.qp.context), qp, qp->wr_start_pi);
	pthread_spin_unlock(&qp->sq.lock);
	return err;
}

static void qrnic_wr_abort(struct ibv_qp_ex *ibqpx)
{
	struct qrnic_qp *qp = to_qqp_ex(ibqpx);

	qp->wr_slot = NULL;
	qp->sq.pi = qp->wr_start_pi;
	pthread_spin_unlock(&qp->sq.lock);
}

static void qrnic_wr_send(struct ibv_qp_ex *ibqpx)
{
	qrnic_wr_new(ibqpx, IBV_WR_SEND);
}

static void qrnic_wr_send_imm(struct ibv_qp_ex *ibqpx, __be32 imm_data)
{
	struct qrnic_send_wqe *h = qrnic_wr_new(ibqpx, IBV_WR_SEND_WITH_IMM);

	if (h)
		qrnic_send_hdr_imm(h, imm_data);
}

static void qrnic_wr_send_inv(struct ibv_qp_ex *ibqpx, uint32_t invalidate_rkey)
{
	struct qrnic_send_wqe *h = qrnic_wr_new(ibqpx, IBV_WR_SEND_WITH_INV);

	if (h)
		qrnic_send_hdr_inv(h, invalidate_rkey);
}

static void qrnic_wr_rdma_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				uint64_t remote_addr)
{
	struct qrnic_send_wqe *h = qrnic_wr_new(ibqpx, IBV_WR_RDMA_WRITE);

	if (h)
		qrnic_send_hdr_rdma(h, rkey, remote_addr);
}

static void qrnic_wr_rdma_write_imm(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	struct qrnic_send_wqe *h = qrnic_wr_new(ibqpx, IBV_WR_RDMA_WRITE_WITH_IMM);

	if (h) {
		qrnic_send_hdr_rdma(h, rkey, remote_addr);
		qrnic_send_hdr_imm(h, imm_data);
	}
}

static void qrnic_wr_rdma_read(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			       uint64_t remote_addr)
{
	struct qrnic_send_wqe *h = qrnic_wr_new(ibqpx, IBV_WR_RDMA_READ);

	if (h)
		qrnic_send_hdr_rdma(h, rkey, remote_addr);
}

static void qrnic_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	struct qrnic_send_wqe *h = qrnic_wr_new(ibqpx, IBV_WR_ATOMIC_CMP_AND_SWP);

	if (h)
		qrnic_send_hdr_atomic(h, rkey, remote_addr, compare, swap);
}

static void qrnic_wr_atomic_fetch_add(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	struct qrnic_send_wqe *h = qrnic_wr_new(ibqpx, IBV_WR_ATOMIC_FETCH_AND_ADD);

	if (h)
		qrnic_send_hdr_atomic(h, rkey, remote_addr, add, 0);
}

/* ibv_wr_bind_mw: the bind WQE goes through wr_hdr (the same 64 bytes). */
static void qrnic_wr_bind_mw(struct ibv_qp_ex *ibqpx, struct ibv_mw *mw, uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	struct qrnic_send_wqe *h = qrnic_wr_new(ibqpx, IBV_WR_BIND_MW);
	struct qrnic_qp *qp = to_qqp_ex(ibqpx);

	if (!h)
		return;
	if (qrnic_check_bind(mw, bind_info)) {
		qrnic_wr_fail(qp, EINVAL);
		return;
	}
	qrnic_build_bind_mw_wqe(h, ibqpx->wr_id, ibqpx->wr_flags, qp->sq_sig_all, rkey,
				bind_info);
}

static void qrnic_wr_local_inv(struct ibv_qp_ex *ibqpx, uint32_t invalidate_rkey)
{
	struct qrnic_send_wqe *h = qrnic_wr_new(ibqpx, IBV_WR_LOCAL_INV);

	if (h)
		qrnic_send_hdr_inv(h, invalidate_rkey);
}

/* The WR the setters apply to, or NULL (no WR, or an error already). */
static struct qrnic_qp *qrnic_wr_cur(struct ibv_qp_ex *ibqpx)
{
	struct qrnic_qp *qp = to_qqp_ex(ibqpx);

	if (qp->wr_err)
		return NULL;
	if (!qp->wr_slot) {	/* a setter before any opcode */
		qrnic_wr_fail(qp, EINVAL);
		return NULL;
	}
	return qp;
}

/* XRC SEND QPs: the remote XRC SRQ of the WR being built (spec 8.1) */
static void qrnic_wr_set_xrc_srqn(struct ibv_qp_ex *ibqpx, uint32_t remote_srqn)
{
	struct qrnic_qp *qp = to_qqp_ex(ibqpx);

	if (!qp->wr_slot || !qp->xrc_send) {
		qrnic_wr_fail(qp, EINVAL);
		return;
	}
	qp->wr_hdr.xrc_srqn = htole32(remote_srqn & 0xffffffu);
}

static void qrnic_wr_set_ud_addr(struct ibv_qp_ex *ibqpx, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct qrnic_qp *qp = qrnic_wr_cur(ibqpx);

	/* ignored on RC/UC and on LOCAL_INV, as post_send ignores wr.ud */
	if (!qp || !qp->ud || qrnic_wr_header_only(qp->wr_qop))
		return;
	if (!ah) {
		qrnic_wr_fail(qp, EINVAL);
		return;
	}
	qrnic_send_hdr_ud(&qp->wr_hdr, to_qah(ah)->ahn, remote_qpn, remote_qkey);
	qp->wr_need_ud = false;
}

/* SGEs, or with IBV_SEND_INLINE in wr_flags (SEND*, WRITE*) their bytes
 * inline: exactly post_send's rules and layout. */
static void qrnic_wr_set_sge_list(struct ibv_qp_ex *ibqpx, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct qrnic_qp *qp = qrnic_wr_cur(ibqpx);
	struct qrnic_sq_params p;
	bool inl;

	if (!qp || qrnic_wr_header_only(qp->wr_qop))	/* header only */
		return;
	p = qrnic_qp_sq_params(qp);
	inl = qrnic_send_inline(qp->wr_qop, ibqpx->wr_flags);
	if (num_sge > INT32_MAX ||
	    qrnic_check_send_data(qp->wr_qop, inl, sg_list, (int)num_sge, &p)) {
		qrnic_wr_fail(qp, EINVAL);
		return;
	}
	qrnic_send_data_reset(&qp->wr_hdr);
	qrnic_send_put_sg(qp->wr_slot, &qp->wr_hdr, inl, sg_list, (int)num_sge);
}

static void qrnic_wr_set_sge(struct ibv_qp_ex *ibqpx, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	qrnic_wr_set_sge_list(ibqpx, 1, &sge);
}

/* Inline payload: SEND* and RDMA WRITE* only (EINVAL elsewhere). */
static void qrnic_wr_set_inline_data_list(struct ibv_qp_ex *ibqpx, size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct qrnic_qp *qp = qrnic_wr_cur(ibqpx);
	uint64_t total = 0;
	size_t i;

	if (!qp || qrnic_wr_header_only(qp->wr_qop))
		return;
	for (i = 0; i < num_buf; i++)
		total += buf_list[i].length;
	if (!qrnic_wr_may_inline(qp->wr_qop) || total > qp->max_inline) {
		qrnic_wr_fail(qp, EINVAL);
		return;
	}
	qrnic_send_data_reset(&qp->wr_hdr);
	qp->wr_hdr.flags |= QRNIC_WQE_F_INLINE;
	for (i = 0; i < num_buf; i++)
		qrnic_send_add_inline(qp->wr_slot, &qp->wr_hdr, buf_list[i].addr,
				      buf_list[i].length);
}

static void qrnic_wr_set_inline_data(struct ibv_qp_ex *ibqpx, void *addr,
				     size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	qrnic_wr_set_inline_data_list(ibqpx, 1, &buf);
}

static void qrnic_set_wr_ops(struct qrnic_qp *qp, uint64_t flags)
{
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;

	x->wr_start = qrnic_wr_start;
	x->wr_complete = qrnic_wr_complete;
	x->wr_abort = qrnic_wr_abort;
	if (flags & IBV_QP_EX_WITH_SEND)
		x->wr_send = qrnic_wr_send;
	if (flags & IBV_QP_EX_WITH_SEND_WITH_IMM)
		x->wr_send_imm = qrnic_wr_send_imm;
	if (flags & IBV_QP_EX_WITH_SEND_WITH_INV)
		x->wr_send_inv = qrnic_wr_send_inv;
	if (flags & IBV_QP_EX_WITH_RDMA_WRITE)
		x->wr_rdma_write = qrnic_wr_rdma_write;
	if (flags & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		x->wr_rdma_write_imm = qrnic_wr_rdma_write_imm;
	if (flags & IBV_QP_EX_WITH_RDMA_READ)
		x->wr_rdma_read = qrnic_wr_rdma_read;
	if (flags & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		x->wr_atomic_cmp_swp = qrnic_wr_atomic_cmp_swp;
	if (flags & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		x->wr_atomic_fetch_add = qrnic_wr_atomic_fetch_add;
	if (flags & IBV_QP_EX_WITH_LOCAL_INV)
		x->wr_local_inv = qrnic_wr_local_inv;
	if (flags & IBV_QP_EX_WITH_BIND_MW)
		x->wr_bind_mw = qrnic_wr_bind_mw;
	x->wr_set_ud_addr = qrnic_wr_set_ud_addr;
	x->wr_set_xrc_srqn = qrnic_wr_set_xrc_srqn;
	x->wr_set_sge = qrnic_wr_set_sge;
	x->wr_set_sge_list = qrnic_wr_set_sge_list;
	x->wr_set_inline_data = qrnic_wr_set_inline_data;
	x->wr_set_inline_data_list = qrnic_wr_set_inline_data_list;
}

/* The SRQ's little-endian consumer record, read with acquire semantics.
 * Under sparse __atomic_load_n() takes no pointer to a bitwise type, so
 * the word is loaded as the integer it is and given its type back. */
static uint32_t qrnic_srq_record_acquire(const qrnic_le32 *record)
{
	return le32toh((__force qrnic_le32)__atomic_load_n((const uint32_t *)record,
							   __ATOMIC_ACQUIRE));
}

/*
 * Post receive WQEs to a QP's RQ (record NULL: slots come back with
 * completions) or to an SRQ (slots come back when the device's consumer
 * index record passes them), then one doorbell at db_off for queue num --
 * or, with pi_record (the RQ's producer record, ABI 1.10), the new
 * producer index written there, and the doorbell as well only if ring.
 */
static int qrnic_post_recv_wq(struct qrnic_context *ctx, struct qrnic_wq *wq,
			      const qrnic_le32 *record, qrnic_le32 *pi_record,
			      bool ring, unsigned int db_off,
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
		full = record ? qrnic_srq_full(wq->pi, qrnic_srq_record_acquire(record),
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
		udma_to_device_barrier();	/* the WQEs before the record or doorbell */
		if (pi_record)
			*(volatile qrnic_le32 *)pi_record = htole32(wq->pi);
		if (!pi_record || ring)	/* the MMIO write is ordered after the record */
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
	/* with a producer record, ring as well in ERR: the device then flushes
	 * the new WQEs at once (it reads the record only when it needs a WQE
	 * or flushes) */
	return qrnic_post_recv_wq(to_qctx(ibqp->context), &qp->rq, NULL, qp->rq_dbrec,
				  *(volatile enum ibv_qp_state *)&ibqp->state == IBV_QPS_ERR,
				  QRNIC_DB_RQ, ibqp->qp_num, wr, bad_wr);
}

int qrnic_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct qrnic_srq *srq = to_qsrq(ibsrq);

	return qrnic_post_recv_wq(to_qctx(ibsrq->context), &srq->wq, srq->dbrec, NULL, true,
				  QRNIC_DB_SRQ, srq->srqn, wr, bad_wr);
}

/* ---- SRQ ---------------------------------------------------------------- */

static int qrnic_srq_map(struct ibv_context *context, struct qrnic_srq *srq,
			 const struct qrnic_create_srq_resp *r);

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

	err = qrnic_srq_map(context, srq, r);
	if (err)
		goto err_destroy;
	/* What the ring really holds. */
	attr->attr.max_wr = srq->wq.depth;
	attr->attr.max_sge = srq->wq.max_sge;
	srq->pd = pd;
	qrnic_pd_get(pd);
	return &srq->vsrq.srq;

err_destroy:
	ibv_cmd_destroy_srq(&srq->vsrq.srq);
	free(srq);
	errno = err;
	return NULL;
}

/* Map an SRQ's ring and record as a create_srq response describes them. */
static int qrnic_srq_map(struct ibv_context *context, struct qrnic_srq *srq,
			 const struct qrnic_create_srq_resp *r)
{
	int err;

	/* one mapping: the ring, then the record the device writes */
	err = qrnic_wq_map(context, &srq->wq, "SRQ", r->srqn, r->log_depth,
			   r->wqe_shift, QRNIC_MIN_RECV_WQE_SHIFT,
			   QRNIC_MAX_RECV_WQE_SHIFT, r->mmap_key, r->mmap_size);
	if (err)
		return err;
	if (!qrnic_record_ok(r->dbrec_offset, sizeof(*srq->dbrec),
			     (size_t)srq->wq.depth << srq->wq.wqe_shift, r->mmap_size)) {
		verbs_err(verbs_get_ctx(context), "qrnic: SRQ %u: bad dbrec offset %u\n",
			  r->srqn, r->dbrec_offset);
		qrnic_wq_unmap(&srq->wq);
		return EINVAL;
	}
	srq->dbrec = (qrnic_le32 *)(srq->wq.ring + r->dbrec_offset);
	srq->wq.max_sge = qrnic_rq_max_sge(r->wqe_shift);
	srq->srqn = r->srqn;
	return 0;
}

/*
 * ibv_create_srq_ex: basic SRQs as ibv_create_srq, XRC SRQs (spec 12.14)
 * through CREATE_XSRQ: an XRC domain, a PD and the CQ its receive
 * completions go to.  Slots are reclaimed from the record as for any SRQ,
 * so polling needs nothing from the SRQ (QRNIC_CQE_F_XRC CQEs name the
 * XRC RECV QP, which wc.qp_num reports, and the SRQ in src_qp).
 */
struct ibv_srq *qrnic_create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr)
{
	struct uqrnic_create_xsrq_resp resp = {};
	struct qrnic_create_srq_resp *r = &resp.drv_payload;
	struct ibv_create_xsrq cmd;
	struct qrnic_srq *srq;
	int err;

	if (!check_comp_mask(attr->comp_mask, IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) || attr->srq_type == IBV_SRQT_BASIC) {
		struct ibv_srq_init_attr a = {
			.srq_context = attr->srq_context,
			.attr = attr->attr,
		};
		struct ibv_srq *s = qrnic_create_srq(attr->pd, &a);

		if (s)
			attr->attr = a.attr;
		return s;
	}
	if (attr->srq_type != IBV_SRQT_XRC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
	    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq ||
	    attr->attr.max_wr < 1 || attr->attr.max_sge > to_qctx(context)->max_sge) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	err = ibv_cmd_create_srq_ex(context, &srq->vsrq, attr, &cmd, sizeof(cmd),
				    &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_err(verbs_get_ctx(context), "qrnic: CREATE_XSRQ failed\n");
		free(srq);
		errno = err;
		return NULL;
	}
	err = qrnic_srq_map(context, srq, r);
	if (err) {
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		free(srq);
		errno = err;
		return NULL;
	}
	srq->vsrq.srq_type = IBV_SRQT_XRC;	/* as libibverbs sets it */
	attr->attr.max_wr = srq->wq.depth;
	attr->attr.max_sge = srq->wq.max_sge;
	srq->pd = attr->pd;
	qrnic_pd_get(attr->pd);
	return &srq->vsrq.srq;
}

int qrnic_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct qrnic_srq *srq = to_qsrq(ibsrq);

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EOPNOTSUPP;
	*srq_num = srq->srqn;
	return 0;
}

/* ---- XRC domains (spec 6.6.20) ------------------------------------------ */

struct ibv_xrcd *qrnic_open_xrcd(struct ibv_context *context,
				 struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp;
	struct ibv_open_xrcd cmd;
	struct verbs_xrcd *xrcd;
	int err;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd)
		return NULL;
	err = ibv_cmd_open_xrcd(context, xrcd, sizeof(*xrcd), attr, &cmd, sizeof(cmd),
				&resp, sizeof(resp));
	if (err) {
		free(xrcd);
		errno = err;
		return NULL;
	}
	return &xrcd->xrcd;
}

int qrnic_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd = container_of(ibxrcd, struct verbs_xrcd, xrcd);
	int err;

	err = ibv_cmd_close_xrcd(xrcd);
	if (err)
		return err;
	free(xrcd);
	return 0;
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
	qrnic_pd_put(srq->pd);
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
	ah->pd = pd;
	qrnic_pd_get(pd);
	return &ah->ibvah;
}

int qrnic_destroy_ah(struct ibv_ah *ibah)
{
	struct qrnic_ah *ah = to_qah(ibah);
	int err = ibv_cmd_destroy_ah(ibah);

	if (err)
		return err;
	qrnic_pd_put(ah->pd);
	free(ah);
	return 0;
}
