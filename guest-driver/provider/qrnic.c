// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrnic rdma-core provider: device matching and user contexts.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <util/util.h>

#include "qrnic.h"

/* No RDMA_DRIVER_QRNIC exists: match the PCI function, or the ib device
 * name when sysfs has no modalias (e.g. a device without a PCI parent). */
static const struct verbs_match_ent qrnic_match_table[] = {
	VERBS_PCI_MATCH(QRNIC_PCI_VENDOR_ID, QRNIC_PCI_DEVICE_ID, NULL),
	VERBS_NAME_MATCH("qrnic", NULL),
	{}
};

static void qrnic_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops qrnic_ctx_ops = {
	.alloc_mw = qrnic_alloc_mw,
	.alloc_parent_domain = qrnic_alloc_parent_domain,
	.alloc_pd = qrnic_alloc_pd,
	.alloc_td = qrnic_alloc_td,
	/* UD multicast (spec 12.11): the kernel sends ATTACH/DETACH_MCAST */
	.attach_mcast = ibv_cmd_attach_mcast,
	/* memory windows (spec 12.13): type 1 binds through ibv_bind_mw,
	 * type 2 through IBV_WR_BIND_MW / ibv_wr_bind_mw */
	.bind_mw = qrnic_bind_mw,
	.create_ah = qrnic_create_ah,
	.create_cq = qrnic_create_cq,
	.create_cq_ex = qrnic_create_cq_ex,
	.create_qp = qrnic_create_qp,
	.create_qp_ex = qrnic_create_qp_ex,
	.create_srq = qrnic_create_srq,
	/* XRC (spec 12.14; the kernel has them with QRNIC_CAP_XRC) */
	.create_srq_ex = qrnic_create_srq_ex,
	.get_srq_num = qrnic_get_srq_num,
	.open_xrcd = qrnic_open_xrcd,
	.close_xrcd = qrnic_close_xrcd,
	.dealloc_mw = qrnic_dealloc_mw,
	.dealloc_pd = qrnic_dealloc_pd,
	.dealloc_td = qrnic_dealloc_td,
	.dereg_mr = qrnic_dereg_mr,
	.destroy_ah = qrnic_destroy_ah,
	.destroy_cq = qrnic_destroy_cq,
	.destroy_qp = qrnic_destroy_qp,
	.detach_mcast = ibv_cmd_detach_mcast,
	.destroy_srq = qrnic_destroy_srq,
	.free_context = qrnic_free_context,
	.modify_cq = qrnic_modify_cq,
	.modify_qp = qrnic_modify_qp,
	.modify_srq = qrnic_modify_srq,
	.poll_cq = qrnic_poll_cq,
	.post_recv = qrnic_post_recv,
	.post_send = qrnic_post_send,
	.post_srq_recv = qrnic_post_srq_recv,
	.query_device_ex = qrnic_query_device_ex,
	.query_port = qrnic_query_port,
	.query_rt_values = qrnic_query_rt_values,
	.query_qp = qrnic_query_qp,
	.query_srq = qrnic_query_srq,
	.reg_mr = qrnic_reg_mr,
	.req_notify_cq = qrnic_req_notify_cq,
	.rereg_mr = qrnic_rereg_mr,
	.resize_cq = qrnic_resize_cq,
};

static struct verbs_context *qrnic_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct uqrnic_alloc_ucontext_resp resp = {};
	struct qrnic_alloc_ucontext_resp *r = &resp.drv_payload;
	struct ibv_get_context cmd = {};
	struct qrnic_context *ctx;
	long page_size = sysconf(_SC_PAGESIZE);

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibvctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	if (ibv_cmd_get_context(&ctx->ibvctx, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp))) {
		verbs_err(&ctx->ibvctx, "qrnic: GET_CONTEXT failed\n");
		goto err_free;
	}

	ctx->uctx = r->uctx;
	ctx->max_inline = r->max_inline;
	ctx->max_sge = r->max_sge;
	ctx->max_send_wqe_shift = r->max_send_wqe_shift;
	ctx->max_recv_wqe_shift = r->max_recv_wqe_shift;
	ctx->bf_size = r->bf_size < QRNIC_BF_MAX_WQE ? r->bf_size : QRNIC_BF_MAX_WQE;
	if (getenv("QRNIC_NO_BF"))	/* compare with the plain doorbell path */
		ctx->bf_size = 0;
	ctx->bf_all = getenv("QRNIC_BF_ALL") != NULL;	/* see qrnic_bf_worth() */

	if (page_size != QRNIC_DB_PAGE_SIZE) {
		/* the kernel maps exactly one 4 KiB doorbell page */
		verbs_err(&ctx->ibvctx, "qrnic: needs 4 KiB pages (have %ld)\n",
			  page_size);
		goto err_free;
	}

	/* readable too: the device clock is there (QRNIC_DB_CLOCK, ABI 1.7) */
	ctx->db = mmap(NULL, QRNIC_DB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       cmd_fd, r->db_mmap_key);
	if (ctx->db == MAP_FAILED) {
		verbs_err(&ctx->ibvctx,
			  "qrnic: mmap of the doorbell page failed: %s\n",
			  strerror(errno));
		ctx->db = NULL;
		goto err_free;
	}

	pthread_mutex_init(&ctx->qp_table_lock, NULL);
	pthread_spin_init(&ctx->bf_lock, PTHREAD_PROCESS_PRIVATE);
	verbs_set_ops(&ctx->ibvctx, &qrnic_ctx_ops);
	return &ctx->ibvctx;

err_free:
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
	return NULL;
}

static void qrnic_free_context(struct ibv_context *ibctx)
{
	struct qrnic_context *ctx = to_qctx(ibctx);

	unsigned int i;

	if (ctx->db)
		munmap(ctx->db, QRNIC_DB_PAGE_SIZE);
	for (i = 0; i < QRNIC_QP_TABLE_TOP; i++)
		free(ctx->qp_table[i]);
	pthread_mutex_destroy(&ctx->qp_table_lock);
	pthread_spin_destroy(&ctx->bf_lock);
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
}

static struct verbs_device *qrnic_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct qrnic_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->vdev;
}

static void qrnic_uninit_device(struct verbs_device *vdev)
{
	free(container_of(vdev, struct qrnic_device, vdev));
}

static const struct verbs_device_ops qrnic_dev_ops = {
	.name = "qrnic",
	.match_min_abi_version = QRNIC_UVERBS_ABI_VERSION,
	.match_max_abi_version = QRNIC_UVERBS_ABI_VERSION,
	.match_table = qrnic_match_table,
	.alloc_device = qrnic_alloc_device,
	.uninit_device = qrnic_uninit_device,
	.alloc_context = qrnic_alloc_context,
};

PROVIDER_DRIVER(qrnic, qrnic_dev_ops);
