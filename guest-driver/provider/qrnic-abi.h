/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qrnic provider: uverbs command/response wrappers.
 *
 * The driver-specific udata is exactly model/abi/qrnic_uverbs.h: the
 * provider sends no request udata and receives one qrnic_*_resp after the
 * core response of GET_CONTEXT, ALLOC_PD, CREATE_CQ, RESIZE_CQ, CREATE_QP,
 * CREATE_SRQ and CREATE_AH.  DECLARE_DRV_CMD lays each response out as
 * { core response; driver response } and checks sizes and alignment.
 */
#ifndef QRNIC_ABI_WRAP_H
#define QRNIC_ABI_WRAP_H

#include <infiniband/kern-abi.h>

#include "qrnic_uverbs.h"

/* The driver payloads are reached through .drv_payload only. */
#define _STRUCT_qrnic_alloc_ucontext_resp struct {}
#define _STRUCT_qrnic_alloc_pd_resp struct {}
#define _STRUCT_qrnic_create_cq_resp struct {}
#define _STRUCT_qrnic_create_qp_resp struct {}
#define _STRUCT_qrnic_create_srq_resp struct {}
#define _STRUCT_qrnic_create_ah_resp struct {}
#define _STRUCT_qrnic_resize_cq_resp struct {}

DECLARE_DRV_CMD(uqrnic_alloc_ucontext, IB_USER_VERBS_CMD_GET_CONTEXT,
		empty, qrnic_alloc_ucontext_resp);
DECLARE_DRV_CMD(uqrnic_alloc_pd, IB_USER_VERBS_CMD_ALLOC_PD,
		empty, qrnic_alloc_pd_resp);
DECLARE_DRV_CMD(uqrnic_create_cq, IB_USER_VERBS_CMD_CREATE_CQ,
		empty, qrnic_create_cq_resp);
/* ibv_create_cq_ex: the extended command, the same driver response */
DECLARE_DRV_CMD(uqrnic_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		empty, qrnic_create_cq_resp);
/* ibv_resize_cq: the new ring's mapping (the dbrec stays in the first) */
DECLARE_DRV_CMD(uqrnic_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		empty, qrnic_resize_cq_resp);
DECLARE_DRV_CMD(uqrnic_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		empty, qrnic_create_qp_resp);
DECLARE_DRV_CMD(uqrnic_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		empty, qrnic_create_srq_resp);
/* ibv_create_srq_ex (XRC SRQs): the same driver response */
DECLARE_DRV_CMD(uqrnic_create_xsrq, IB_USER_VERBS_CMD_CREATE_XSRQ,
		empty, qrnic_create_srq_resp);
DECLARE_DRV_CMD(uqrnic_create_ah, IB_USER_VERBS_CMD_CREATE_AH,
		empty, qrnic_create_ah_resp);

#endif /* QRNIC_ABI_WRAP_H */
