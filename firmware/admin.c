/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic firmware: the admin queue engine and the command dispatcher.
 *
 * qrnic_fw_admin_run() consumes commands from the admin SQ ring: each one is
 * copied out of host memory exactly once into a local struct, executed by
 * qrnic_fw_exec() on that copy, and completed into the admin CQ ring (bytes
 * 0..30 first, the owner byte last), then MSI-X vector QRNIC_AQ_VECTOR is
 * raised.  qrnic_fw_exec() checks the generic header rules, dispatches
 * through fw_ops[] and finalizes the status in fw_finalize(), the single
 * place every command's status passes through.  Fault injection
 * (model/fault.c) fails a command just before its handler runs, in
 * qrnic_fw_exec(), so an injected failure has no side effects, and can hang
 * the queue in qrnic_fw_admin_run().
 *
 * The firmware registers with a device as its admin engine: the creator of
 * the device passes qrnic_fw_admin_ops (qrnic_firmware.h) to qrnic_dev_new().
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qrnic_fw.h"

/* ---- Queries ------------------------------------------------------------- */
uint8_t qrnic_fw_port_mtu(const struct qrnic_dev *d)
{
	/* RoCEv2 overhead inside the Ethernet payload: IPv6 + UDP + BTH +
	 * the largest extension header stack + ICRC. */
	const uint32_t overhead = QRNIC_IPV6_HLEN + QRNIC_UDP_HLEN + QRNIC_BTH_LEN +
				  QRNIC_ATOMICETH_LEN + QRNIC_ICRC_LEN;
	uint8_t mtu;

	for (mtu = QRNIC_MTU_4096; mtu > QRNIC_MTU_256; mtu--)
		if (d->cfg.eth_mtu >= overhead + qrnic_mtu_bytes(mtu))
			return mtu;
	return QRNIC_MTU_256;
}

uint8_t qrnic_fw_respond(struct qrnic_dev *d, struct qrnic_aq_cqe *cqe, uint64_t resp_addr,
			 uint32_t resp_len, uint32_t addr_off, const void *ans, size_t len)
{
	size_t n = resp_len < len ? resp_len : len;

	if (resp_addr == 0)
		return qrnic_fw_fail(cqe, QRNIC_AQ_DMA_ERROR, addr_off);
	if (n && qrnic_dma_write(d, resp_addr, ans, n))
		return qrnic_fw_fail(cqe, QRNIC_AQ_DMA_ERROR, addr_off);
	cqe->result[0] = (uint32_t)len;	/* full answer size */
	cqe->result[1] = (uint32_t)n;	/* bytes written */
	return QRNIC_AQ_OK;
}

static uint8_t fw_query_device(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			       struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_query *q = &cmd->u.query;
	const struct qrnic_config *c = &d->cfg;
	struct qrnic_device_attr a;

	memset(&a, 0, sizeof(a));	/* port: only QUERY_PORT uses it */
	a.abi_version = QRNIC_ABI_VERSION;
	a.fw_version = QRNIC_FW_VERSION;
	a.max_qp = c->max_qp;
	a.max_qp_wr = c->max_qp_wr;
	a.max_sge = QRNIC_MAX_SGE;
	a.max_inline = (uint32_t)QRNIC_MAX_INLINE;
	a.max_cq = c->max_cq;
	a.max_cqe = c->max_cqe;
	a.max_mr = c->max_mr;
	a.max_pd = c->max_pd;
	a.max_ah = c->max_ah;
	a.max_eq = c->max_eq;
	a.max_uctx = c->max_uctx;
	a.max_mtt = c->max_mtt;
	a.max_qp_rd_atom = c->max_rd_atomic < QRNIC_MAX_RD_ATOMIC ? c->max_rd_atomic
								 : QRNIC_MAX_RD_ATOMIC;
	a.max_qp_init_rd_atom = a.max_qp_rd_atom;
	a.max_msg_size = QRNIC_MAX_MSG_SIZE;
	a.num_vectors = c->num_vectors;
	a.gid_tbl_len = c->gid_tbl_len;
	a.caps = QRNIC_CAPS_ALL;
	a.max_srq = c->max_srq;
	a.max_srq_wr = c->max_qp_wr;
	a.max_mcg = QRNIC_MAX_MCG;
	a.max_mcg_qp = QRNIC_MAX_MCG_QP;
	a.max_fast_reg_pages = QRNIC_MAX_FAST_REG_PAGES;
	a.max_mw = c->max_mr;	/* one MPT for MRs and windows */
	a.max_xrcd = c->max_xrcd;
	a.hca_core_clock = QRNIC_CLOCK_KHZ;
	a.timestamp_mask = QRNIC_CLOCK_MASK;
	a.page_size_cap = ((1ull << (QRNIC_MAX_PAGE_SHIFT + 1)) - 1) &
			  ~((1ull << QRNIC_MIN_PAGE_SHIFT) - 1);
	a.max_mr_size = c->max_mr_size;
	memcpy(a.mac, c->mac, sizeof(a.mac));
	return qrnic_fw_respond(d, cqe, q->resp_addr, q->resp_len,
				QRNIC_FW_OFF(u.query.resp_addr), &a, sizeof(a));
}

static uint8_t fw_query_port(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			     struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_query *q = &cmd->u.query;
	struct qrnic_port_attr a;

	if (q->port != 1)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.query.port));
	memset(&a, 0, sizeof(a));
	a.state = d->link_up ? QRNIC_PORT_ACTIVE : QRNIC_PORT_DOWN;
	a.phys_state = d->link_up ? QRNIC_PHYS_LINK_UP : QRNIC_PHYS_DISABLED;
	a.max_mtu = qrnic_fw_port_mtu(d);
	a.active_mtu = a.max_mtu;
	a.gid_tbl_len = d->cfg.gid_tbl_len;
	a.speed_mbps = d->cfg.speed_mbps;
	a.eth_mtu = d->cfg.eth_mtu;
	memcpy(a.mac, d->cfg.mac, sizeof(a.mac));
	return qrnic_fw_respond(d, cqe, q->resp_addr, q->resp_len,
				QRNIC_FW_OFF(u.query.resp_addr), &a, sizeof(a));
}

static uint8_t fw_query_stats(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			      struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_query *q = &cmd->u.query;
	uint64_t snap[QRNIC_STAT_COUNT];

	memcpy(snap, d->stats, sizeof(snap));
	return qrnic_fw_respond(d, cqe, q->resp_addr, q->resp_len,
				QRNIC_FW_OFF(u.query.resp_addr), snap, sizeof(snap));
}

/* ---- GID table --------------------------------------------------------- */
static uint8_t fw_set_gid(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			  struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_gid *g = &cmd->u.gid;
	struct qrnic_gid_entry *e;

	if (g->index >= d->cfg.gid_tbl_len)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.gid.index));
	if (g->valid > 1)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.gid.valid));
	if (g->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.gid.rsvd));
	if (g->valid) {
		/* RoCEv2: a v4-mapped GID is always IPv4 (rdma_gid2ip), so the
		 * net_type must agree with the form of the GID. */
		if (g->net_type != QRNIC_NET_IPV4 && g->net_type != QRNIC_NET_IPV6)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.gid.net_type));
		if ((g->net_type == QRNIC_NET_IPV4) != qrnic_fw_gid_v4mapped(g->gid))
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.gid.gid));
	}
	/* Clearing (valid = 0) ignores net_type and gid. */
	e = &d->gid[g->index];
	memset(e, 0, sizeof(*e));
	if (g->valid) {
		e->valid = true;
		e->net_type = g->net_type;
		memcpy(e->gid, g->gid, sizeof(e->gid));
	}
	return QRNIC_AQ_OK;
}

static uint8_t fw_query_gid(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			    struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_gid *g = &cmd->u.gid;
	const struct qrnic_gid_entry *e;

	/* Only index is used (valid, net_type and gid are SET_GID inputs). */
	if (g->index >= d->cfg.gid_tbl_len)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.gid.index));
	if (g->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.gid.rsvd));
	e = &d->gid[g->index];
	if (e->valid)
		memcpy(cqe->result, e->gid, sizeof(e->gid));
	/* detail: [0] valid, [15:8] net_type */
	cqe->detail = (e->valid ? 1u : 0u) | ((uint32_t)(e->valid ? e->net_type : 0) << 8);
	return QRNIC_AQ_OK;
}

/* ---- Congestion control parameters (ABI 1.9, spec 6.6.22) -------------- */
/* The parameter of cmd->u.cc.param, or NULL with the command failed. */
static const struct qrnic_config_param *fw_cc_param(const struct qrnic_aq_cmd *cmd,
						    struct qrnic_aq_cqe *cqe, uint8_t *st)
{
	const struct qrnic_config_param *p = qrnic_cc_param(cmd->u.cc.param);

	*st = QRNIC_AQ_OK;
	if (!p)
		*st = qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.cc.param));
	else if (cmd->u.cc.rsvd)
		*st = qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.cc.rsvd));
	return *st == QRNIC_AQ_OK ? p : NULL;
}

static uint8_t fw_query_cc(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			   struct qrnic_aq_cqe *cqe)
{
	uint8_t st;
	const struct qrnic_config_param *p = fw_cc_param(cmd, cqe, &st);

	if (!p)
		return st;
	/* every congestion control parameter is a 32-bit number or a bool */
	cqe->result[0] = (uint32_t)qrnic_config_get(&d->cfg, p);
	cqe->result[1] = (uint32_t)p->min;
	cqe->result[2] = (uint32_t)p->max;
	cqe->result[3] = (uint32_t)qrnic_config_get(&d->boot_cfg, p);
	return QRNIC_AQ_OK;
}

static uint8_t fw_set_cc(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			 struct qrnic_aq_cqe *cqe)
{
	uint8_t st;
	const struct qrnic_config_param *p = fw_cc_param(cmd, cqe, &st);
	struct qrnic_config_error e;

	if (!p)
		return st;
	/* the range of the configuration table, checked where the QEMU
	 * properties are: one place (model/config.c) */
	if (qrnic_config_check_value(p, cmd->u.cc.value, &e)) {
		qrnic_guest_err(d, err_cc_param, (cmd->u.cc.param, cmd->u.cc.value,
						  (uint32_t)e.min, (uint32_t)e.max),
				"SET_CC: %s = %u out of range %u..%u", p->name,
				cmd->u.cc.value, (uint32_t)e.min, (uint32_t)e.max);
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(u.cc.value));
	}
	qrnic_cc_param_set(d, p, cmd->u.cc.value);
	return QRNIC_AQ_OK;
}

/* ---- User contexts --------------------------------------------------------- */
uint8_t qrnic_fw_alloc_uctx(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			    struct qrnic_aq_cqe *cqe)
{
	uint32_t i;

	for (i = 1; i < d->cfg.max_uctx; i++) {
		if (!d->uctx_valid[i]) {
			d->uctx_valid[i] = true;
			qrnic_bf_uctx_clear(d, i);	/* nothing staged by an earlier owner */
			cqe->result[0] = i;
			return QRNIC_AQ_OK;
		}
	}
	return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
}

uint8_t qrnic_fw_dealloc_uctx(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			      struct qrnic_aq_cqe *cqe)
{
	uint32_t u = cmd->u.handle.handle;
	const uint32_t off = QRNIC_FW_OFF(u.handle.handle);
	uint32_t i;

	if (u == 0 || u >= d->cfg.max_uctx || !d->uctx_valid[u])
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, off);
	/* MRs and AHs hang off PDs, so PDs, CQs and QPs cover everything. */
	for (i = 1; i < d->cfg.max_pd; i++)
		if (d->pd[i].valid && d->pd[i].uctx == u)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, off);
	for (i = 1; i < d->cfg.max_cq; i++)
		if (d->cq[i].valid && d->cq[i].uctx == u)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, off);
	for (i = 1; i < d->cfg.max_srq; i++)
		if (d->srq[i].valid && d->srq[i].uctx == u)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, off);
	for (i = 1; i < d->cfg.max_xrcd; i++)
		if (d->xrcd[i].valid && d->xrcd[i].uctx == u)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, off);
	for (i = 1; i < d->cfg.max_qp; i++)
		if (d->qp[i].valid && d->qp[i].uctx == u)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, off);
	d->uctx_valid[u] = false;
	qrnic_bf_uctx_clear(d, u);
	return QRNIC_AQ_OK;
}

/* ---- Dispatch -------------------------------------------------------------- */
struct qrnic_fw_op {
	const char *name;
	qrnic_fw_handler fn;	/* validates its payload, then executes */
};

#define FW_OP(op, f) [QRNIC_CMD_##op] = { #op, f }

static const struct qrnic_fw_op fw_ops[QRNIC_CMD_MAX + 1] = {
	FW_OP(QUERY_DEVICE, fw_query_device),
	FW_OP(QUERY_PORT, fw_query_port),
	FW_OP(SET_GID, fw_set_gid),
	FW_OP(QUERY_GID, fw_query_gid),
	FW_OP(ALLOC_UCTX, qrnic_fw_alloc_uctx),
	FW_OP(DEALLOC_UCTX, qrnic_fw_dealloc_uctx),
	FW_OP(CREATE_PD, qrnic_fw_create_pd),
	FW_OP(DESTROY_PD, qrnic_fw_destroy_pd),
	FW_OP(CREATE_CQ, qrnic_fw_create_cq),
	FW_OP(DESTROY_CQ, qrnic_fw_destroy_cq),
	FW_OP(CREATE_QP, qrnic_fw_create_qp),
	FW_OP(MODIFY_QP, qrnic_fw_modify_qp),
	FW_OP(QUERY_QP, qrnic_fw_query_qp),
	FW_OP(DESTROY_QP, qrnic_fw_destroy_qp),
	FW_OP(REG_MR, qrnic_fw_reg_mr),
	FW_OP(DEREG_MR, qrnic_fw_dereg_mr),
	FW_OP(QUERY_MR, qrnic_fw_query_mr),
	FW_OP(CREATE_AH, qrnic_fw_create_ah),
	FW_OP(DESTROY_AH, qrnic_fw_destroy_ah),
	FW_OP(CREATE_EQ, qrnic_fw_create_eq),
	FW_OP(DESTROY_EQ, qrnic_fw_destroy_eq),
	FW_OP(QUERY_STATS, fw_query_stats),
	FW_OP(CREATE_SRQ, qrnic_fw_create_srq),
	FW_OP(MODIFY_SRQ, qrnic_fw_modify_srq),
	FW_OP(QUERY_SRQ, qrnic_fw_query_srq),
	FW_OP(DESTROY_SRQ, qrnic_fw_destroy_srq),
	FW_OP(ATTACH_MCAST, qrnic_fw_attach_mcast),
	FW_OP(DETACH_MCAST, qrnic_fw_detach_mcast),
	FW_OP(ALLOC_MR, qrnic_fw_alloc_mr),
	FW_OP(ALLOC_MW, qrnic_fw_alloc_mw),
	FW_OP(RESIZE_CQ, qrnic_fw_resize_cq),
	FW_OP(MODIFY_CQ, qrnic_fw_modify_cq),
	FW_OP(REREG_MR, qrnic_fw_rereg_mr),
	FW_OP(ALLOC_XRCD, qrnic_fw_alloc_xrcd),
	FW_OP(DEALLOC_XRCD, qrnic_fw_dealloc_xrcd),
	FW_OP(QUERY_CC, fw_query_cc),
	FW_OP(SET_CC, fw_set_cc),
};

/* The generic part of validation, shared by every opcode.  Bytes of the
 * payload area after the opcode's structure are ignored (spec 6.2). */
static uint8_t fw_check_common(const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe)
{
	if (cmd->hdr.flags)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(hdr.flags));
	if (cmd->hdr.rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, QRNIC_FW_OFF(hdr.rsvd));
	return QRNIC_AQ_OK;
}

/*
 * fw_finalize: THE place where every admin command's status is decided
 * (an injected failure, from qrnic_fault_admin(), passes through here too).
 */
static void fw_finalize(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			struct qrnic_aq_cqe *cqe, uint8_t status)
{
	if (status > QRNIC_AQ_STATUS_MAX)	/* a handler bug must not reach the guest */
		status = QRNIC_AQ_BAD_PARAM;
	cqe->cmd_id = cmd->hdr.cmd_id;
	cqe->opcode = cmd->hdr.opcode;
	cqe->status = status;
	if (status != QRNIC_AQ_OK) {
		memset(cqe->result, 0, sizeof(cqe->result));
		qrnic_stat_add(d, QRNIC_STAT_ADMIN_ERRORS, 1);
		switch (status) {
		case QRNIC_AQ_BAD_PARAM:
		case QRNIC_AQ_BAD_HANDLE:
		case QRNIC_AQ_BAD_STATE:
		case QRNIC_AQ_BAD_ATTR_MASK:
		case QRNIC_AQ_NOT_SUPPORTED:
			break;		/* detail: offset of the offending field */
		default:
			cqe->detail = 0;
			break;
		}
		switch (status) {
		case QRNIC_AQ_BAD_OPCODE:
		case QRNIC_AQ_BAD_PARAM:
		case QRNIC_AQ_BAD_HANDLE:
		case QRNIC_AQ_BAD_STATE:
		case QRNIC_AQ_BAD_ATTR_MASK:
			qrnic_guest_err(d, err_admin_cmd,
					(cmd->hdr.opcode, cmd->hdr.cmd_id, status, cqe->detail),
					"admin %s (0x%02x) id %u: status %u, field at byte %u",
					  (cmd->hdr.opcode <= QRNIC_CMD_MAX &&
					   fw_ops[cmd->hdr.opcode].fn) ?
					  fw_ops[cmd->hdr.opcode].name : "?",
					  cmd->hdr.opcode, cmd->hdr.cmd_id, status, cqe->detail);
			break;
		default:
			break;
		}
	}
	qrnic_stat_add(d, QRNIC_STAT_ADMIN_CMDS, 1);
	qrnic_trace(d, QRNIC_TR_ADMIN, 0, 0, cmd->hdr.opcode, status, 0);
}

void qrnic_fw_exec(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_fw_op *op = NULL;
	uint8_t status;

	memset(cqe, 0, sizeof(*cqe));
	if (cmd->hdr.opcode <= QRNIC_CMD_MAX && fw_ops[cmd->hdr.opcode].fn)
		op = &fw_ops[cmd->hdr.opcode];
	if (!op)
		status = qrnic_fw_fail(cqe, QRNIC_AQ_BAD_OPCODE, QRNIC_FW_OFF(hdr.opcode));
	else {
		status = fw_check_common(cmd, cqe);
		if (status == QRNIC_AQ_OK && d->fault)
			status = qrnic_fault_admin(d, cmd->hdr.opcode);	/* injected: not executed */
		if (status == QRNIC_AQ_OK)
			status = op->fn(d, cmd, cqe);
	}
	fw_finalize(d, cmd, cqe, status);
}

/* ---- The admin queue engine ----------------------------------------------- */
static void aq_fail(struct qrnic_dev *d, bool fatal, const char *why)
{
	d->aq_status |= QRNIC_AQ_STATUS_ERROR;
	if (fatal)
		qrnic_fatal(d, QRNIC_FATAL_AQ);
	else	/* the one failure that is not fatal: a bad depth */
		qrnic_guest_err(d, err_aq_bad_depth, (d->aq_ctrl & QRNIC_AQ_CTRL_LOG_DEPTH_MASK),
				"admin queue: %s", why);
}

bool qrnic_fw_admin_run(struct qrnic_dev *d, uint32_t budget)
{
	uint32_t log = d->aq_ctrl & QRNIC_AQ_CTRL_LOG_DEPTH_MASK;
	uint32_t depth, done;

	if (!(d->aq_ctrl & QRNIC_AQ_CTRL_ENABLE) || (d->aq_status & QRNIC_AQ_STATUS_ERROR))
		return false;
	if (log < 1 || log > QRNIC_AQ_MAX_LOG_DEPTH) {
		aq_fail(d, false, "bad ring depth");
		return false;
	}
	depth = 1u << log;

	for (done = 0; done < budget; done++) {
		uint32_t pending = d->aq_sq_pi - d->aq_sq_ci;
		struct qrnic_aq_cmd cmd;
		struct qrnic_aq_cqe cqe;
		uint64_t sqe_addr, cqe_addr;
		uint8_t owner;

		if (pending == 0)
			return false;
		if (pending > depth) {
			qrnic_guest_err(d, err_aq_index, (d->aq_sq_pi, d->aq_sq_ci, depth),
					"admin queue: producer %u more than %u ahead of consumer %u",
					  d->aq_sq_pi, depth, d->aq_sq_ci);
			d->aq_status |= QRNIC_AQ_STATUS_ERROR;
			return false;
		}
		sqe_addr = d->aq_sq_base + (uint64_t)(d->aq_sq_ci & (depth - 1)) * QRNIC_AQ_SQE_SIZE;
		if (qrnic_dma_read(d, sqe_addr, &cmd, sizeof(cmd))) {
			aq_fail(d, true, "SQ read failed");
			return false;
		}
		if (d->fault && qrnic_fault_admin_hang(d, cmd.hdr.opcode))
			return false;	/* injected admin timeout: hung until reset */
		qrnic_fw_exec(d, &cmd, &cqe);	/* the one and only copy */
		d->aq_sq_ci++;
		cqe.sq_ci = d->aq_sq_ci;

		cqe_addr = d->aq_cq_base + (uint64_t)(d->aq_cq_pi & (depth - 1)) * QRNIC_AQ_CQE_SIZE;
		owner = (uint8_t)(((d->aq_cq_pi >> log) & 1) ^ 1);
		cqe.owner = 0;
		if (qrnic_dma_write(d, cqe_addr, &cqe, offsetof(struct qrnic_aq_cqe, owner)) ||
		    qrnic_dma_write(d, cqe_addr + offsetof(struct qrnic_aq_cqe, owner), &owner, 1)) {
			aq_fail(d, true, "CQ write failed");
			return false;
		}
		d->aq_cq_pi++;
		qrnic_irq(d, QRNIC_AQ_VECTOR);
	}
	return d->aq_sq_pi != d->aq_sq_ci;
}

/* ---- Registration with the device ------------------------------------------- */
static bool fw_engine_run(void *opaque, struct qrnic_dev *d, uint32_t budget)
{
	return qrnic_fw_admin_run(d, budget);
}

static void fw_engine_reset(void *opaque, struct qrnic_dev *d)
{
	d->next_qpn = 2;
	d->qp_live = 0;
}

const struct qrnic_admin_ops qrnic_fw_admin_ops = {
	.run = fw_engine_run,
	.reset = fw_engine_reset,
};
