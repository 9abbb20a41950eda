/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_guest: a stateful guest.  Every input gets a fresh world
 * (fz_world_new, as fuzz_rx); its first byte picks the timing profiles of
 * both devices, a trusted wire, the wire latency and (0x40) receive buffers
 * with PFC on both (fz_cfg_rxbuf), and (0x80) that the reference byte
 * follows (fz_refs_opts: checked dma_map/dma_unmap or none, lazy ICRCs,
 * vouched hand-over, a tap that fills or corrupts frames), then each record
 * (fuzz_common.h; at most FZ_MAX_RECORDS) is one action of a driver gone
 * wrong on device (body[0] & 1):
 *
 *   kind % 16 = 0   admin command through the harness helper for a chosen
 *                   opcode (valid arguments from the objects the fuzzer
 *                   knows, or raw values), then up to 3 byte patches of
 *                   the command (hx_patch_next_cmd); XRC: ALLOC/DEALLOC_XRCD,
 *                   XRC SRQs, XRC INI and TGT QPs, their modify masks;
 *                   REREG_MR (translation onto any host memory, PD, access)
 *             1     admin command, 128 raw bytes
 *             2     post send WQE, fields fuzzed, up to 3 byte patches; the
 *                   XRC SRQ number of an INI QP's WQE from the known SRQs
 *             3     post receive WQE, likewise
 *             4     doorbell (BAR2): page, queue, index near the driver's
 *                   or raw, access size
 *             5     BAR0 register write: a known register or any offset,
 *                   any value and size; CTRL.RESET allowed (and then the
 *                   device is brought up again or left reset)
 *             6     DMA denial of a ring, an MR page, the scratch page or
 *                   any range (hx_mem_deny), or clearing it
 *             7     frame in: fz_frame() (as fuzz_rx) injected into the device
 *             8     raw frame: injected, or sent through the device's
 *                   Ethernet TX ring
 *             9     fast registration: a REG_MR WQE on an FRMR (ALLOC_MR)
 *                   with a page list of the device's pages or raw values,
 *                   LOCAL_INV / SEND_WITH_INV of an FRMR's key (any
 *                   variant), or BIND_MW of a window (ALLOC_MW) to an MR
 *                   of the device, fields fuzzed
 *            15     run: up to 2^(b % 28) ns, 1 + u16 % 4096 iterations
 *            10     service: receive WQEs, polling and arming CQs/EQs
 *            11     reset: CTRL.RESET, FLR or disable/enable, then bring-up
 *                   or not
 *            12     link down/up
 *            13     well-formed traffic (fz_traffic)
 *            14     register and doorbell reads
 *
 * After EVERY action the invariants are checked (fz_check: the QP lists
 * of both devices, self-check failures after service steps -- enabled on
 * both -- and work left unscheduled); runs, including an admin command's
 * wait for its completion, are bounded and watched for hangs (fz_run,
 * fz_account_admin).  Total work per input is bounded by FZ_MAX_RECORDS
 * and FZ_BUDGET_ITERS.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

struct act {
	struct fz *f;
	hx_world *w;
	int d;
	struct fz_dev *fd, *fp;	/* the device and its peer */
	struct fz_in *in;
};

/* ---- admin commands ------------------------------------------------------------ */
static void some_gid(struct act *a, uint8_t sel, uint8_t *gid)
{
	switch (sel % 5) {
	case 0: memcpy(gid, a->fp->gid[0], 16); break;
	case 1: memcpy(gid, a->fp->gid[1], 16); break;
	case 2: memcpy(gid, a->fd->gid[0], 16); break;	/* our own: loopback */
	case 3: memset(gid, 0, 16); break;
	default: fz_take(a->in, gid, 16); break;
	}
}

static void some_mac(struct act *a, uint8_t sel, uint8_t *mac)
{
	switch (sel % 4) {
	case 0: memcpy(mac, hx_mac(a->w, 1 - a->d), 6); break;
	case 1: memcpy(mac, hx_mac(a->w, a->d), 6); break;		/* loopback */
	case 2: memset(mac, 0xff, 6); break;
	default: fz_take(a->in, mac, 6); break;
	}
}

static void some_av(struct act *a, uint8_t s, uint64_t x, struct qrnic_av *av)
{
	memset(av, 0, sizeof(*av));
	some_gid(a, s, av->dgid);
	some_mac(a, s >> 3, av->dmac);
	av->net_type = (s & 0x20) ? (uint8_t)(x % 4) : (s % 5 == 1 ? QRNIC_NET_IPV6 : QRNIC_NET_IPV4);
	av->sgid_index = (s & 0x40) ? (uint8_t)(x >> 8) % 20 : (s % 5 == 1);
	av->hop_limit = (uint8_t)(x >> 16);
	av->traffic_class = (uint8_t)(x >> 24);
	av->flow_label = (uint32_t)(x >> 32) & ((s & 0x80) ? 0xffffffffu : 0xfffffu);
}

static void modify_qp(struct act *a, const uint8_t *s, const uint32_t *v, uint64_t x)
{
	static const uint32_t rc_mask[8] = {
		[QRNIC_QPS_INIT] = QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
				   QRNIC_QP_ATTR_ACCESS_FLAGS,
		[QRNIC_QPS_RTR] = QRNIC_QP_ATTR_AV | QRNIC_QP_ATTR_PATH_MTU | QRNIC_QP_ATTR_DEST_QPN |
				  QRNIC_QP_ATTR_RQ_PSN | QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC |
				  QRNIC_QP_ATTR_MIN_RNR_TIMER,
		[QRNIC_QPS_RTS] = QRNIC_QP_ATTR_TIMEOUT | QRNIC_QP_ATTR_RETRY_CNT |
				  QRNIC_QP_ATTR_RNR_RETRY | QRNIC_QP_ATTR_SQ_PSN |
				  QRNIC_QP_ATTR_MAX_QP_RD_ATOMIC,
		[QRNIC_QPS_SQD] = QRNIC_QP_ATTR_EN_SQD_ASYNC,
	};
	/* XRC TGT: the RC masks without the requester's attributes */
	static const uint32_t xt_mask[8] = {
		[QRNIC_QPS_INIT] = QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
				   QRNIC_QP_ATTR_ACCESS_FLAGS,
		[QRNIC_QPS_RTR] = QRNIC_QP_ATTR_AV | QRNIC_QP_ATTR_PATH_MTU | QRNIC_QP_ATTR_DEST_QPN |
				  QRNIC_QP_ATTR_RQ_PSN | QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC |
				  QRNIC_QP_ATTR_MIN_RNR_TIMER,
		[QRNIC_QPS_RTS] = QRNIC_QP_ATTR_TIMEOUT | QRNIC_QP_ATTR_SQ_PSN,
		[QRNIC_QPS_SQD] = QRNIC_QP_ATTR_EN_SQD_ASYNC,
	};
	static const uint32_t ud_mask[8] = {
		[QRNIC_QPS_INIT] = QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT | QRNIC_QP_ATTR_QKEY,
		[QRNIC_QPS_RTS] = QRNIC_QP_ATTR_SQ_PSN,
		[QRNIC_QPS_SQD] = QRNIC_QP_ATTR_EN_SQD_ASYNC,
	};
	uint32_t qpn = fz_pick(&a->fd->qps, s[0], v[0]);
	uint8_t to = s[1] % 8;
	struct qrnic_qp_attr at;

	memset(&at, 0, sizeof(at));
	at.qp_state = to;
	at.attr_mask = QRNIC_QP_ATTR_STATE |
		       ((s[2] & 1) ? ud_mask : (s[2] & 0x40) ? xt_mask : rc_mask)[to];
	if (s[2] & 0x80)
		at.attr_mask ^= v[1];
	at.cur_qp_state = (uint8_t)(x >> 52) % 8;
	at.port_num = (s[2] & 2) ? s[4] % 3 : 1;
	at.pkey_index = (s[2] & 4) ? (uint16_t)v[2] : 0;
	at.qp_access_flags = (s[2] & 8) ? v[2] : s[5] & 0xf;
	at.qkey = (s[2] & 16) ? v[2] : FZ_QKEY;
	at.path_mtu = 1 + s[6] % 6;
	at.dest_qpn = fz_pick(&a->fp->qps, s[7], v[2]);
	at.rq_psn = v[3] & ((s[2] & 32) ? 0xffffffffu : 0xffffffu);
	at.sq_psn = v[3] >> 8;
	at.max_dest_rd_atomic = (uint8_t)x % 32;
	at.min_rnr_timer = (uint8_t)(x >> 8) % 32;
	at.timeout = (uint8_t)(x >> 16) % 32;
	at.retry_cnt = (uint8_t)(x >> 24) % 9;
	at.rnr_retry = (uint8_t)(x >> 32) % 9;
	at.max_rd_atomic = (uint8_t)(x >> 40) % 32;
	at.en_sqd_async_notify = (uint8_t)(x >> 48) & 1;
	some_av(a, s[3], x, &at.av);
	hx_modify_qp(a->w, a->d, qpn, &at);
}

static void reg_mr(struct act *a, const uint8_t *s, const uint32_t *v, uint64_t x)
{
	uint32_t pd = fz_pick(&a->fd->pds, s[0], v[0]);
	uint32_t access = (s[1] & 0x80) ? v[1] : s[1] & 0xfu;
	unsigned shift = (s[2] & 0x80) ? s[2] & 0x3fu : 12u + s[2] % 5u;
	int levels = s[3] % 5 - 1;
	uint32_t flags = s[4] & (HX_MR_SHUFFLE | HX_MR_CONTIG | HX_MR_PHYS);
	uint64_t len = (s[5] & 0x80) ? x : v[2] % (1u << 18);
	uint64_t iova;
	int64_t r;

	if (flags & HX_MR_PHYS)	/* a bus address: any of the host's memory, rings included */
		iova = hx_mem_base(a->w, a->d) + v[3] % FZ_MEM;
	else
		iova = (s[6] & 0x80) ? x : 0x40000000ull + (v[3] & 0xffffff);
	r = hx_reg_mr(a->w, a->d, pd, access, iova, len, shift, levels, flags);
	if (r >= 0)
		fz_add_mr(a->fd, (uint32_t)r, iova, len);
}

/*
 * REREG_MR of a known MR (or a raw key): a new translation of contiguous
 * pages anywhere in the host's memory (rings included) or raw fields, a PD
 * of the device, any access; the change bits valid or raw.
 */
static void rereg_mr(struct act *a, const uint8_t *s, const uint32_t *v, uint64_t x)
{
	const struct fz_mr *m = fz_pick_mr(a->fd, s[1]);
	struct qrnic_cmd_reg_mr *r;
	struct qrnic_aq_cmd c;
	unsigned shift = 12 + s[5] % 3;
	uint64_t ps = 1ull << shift;

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = QRNIC_CMD_REREG_MR;
	c.u.rereg_mr.key = (s[1] & 0x80) ? v[1] : m->key;
	c.u.rereg_mr.change = (s[2] & 0x80) ? v[2] : 1u + s[2] % 7u;
	r = &c.u.rereg_mr.reg;
	r->pdn = (s[3] & 1) ? a->fd->pd : fz_pick(&a->fd->pds, s[3], v[3]);
	r->access = (s[4] & 0x80) ? v[0] : s[4] & 0xfu;
	r->page_shift = (uint8_t)((s[5] & 0x80) ? s[5] & 0x3f : shift);
	r->iova = (s[6] & 0x20) ? x : 0x40000000ull + (x & 0xffffff);
	r->length = (s[6] & 0x10) ? (uint64_t)v[3] << 8 : 1 + (v[3] >> 8) % (1u << 17);
	r->npages = (uint32_t)(((r->iova & (ps - 1)) + r->length + ps - 1) >> shift);
	if (s[6] & 0x80)
		r->npages = v[0] & 0xffff;
	r->pbl_levels = (s[6] & 0x40) ? s[6] % 5 : 0;
	r->pbl_addr = (s[7] & 0x80) ? x : (hx_mem_base(a->w, a->d) + v[2] % FZ_MEM) & ~(ps - 1);
	r->flags = (s[7] & 0x40) ? QRNIC_MR_F_PHYS : 0;
	hx_admin(a->w, a->d, &c, NULL, 0);
}

static void destroy(struct act *a, uint8_t op, struct fz_objs *o, uint8_t sel, uint32_t raw)
{
	uint32_t h = fz_pick(o, sel, raw);

	if (hx_destroy(a->w, a->d, op, h) == QRNIC_AQ_OK)
		fz_objs_del(o, h);
}

static void act_admin(struct act *a)
{
	struct fz_in *in = a->in;
	struct fz_dev *fd = a->fd;
	hx_world *w = a->w;
	int d = a->d;
	uint8_t op = fz_u8(in) % (QRNIC_CMD_MAX + 1), npatch = fz_u8(in), s[8];
	uint32_t v[4], uctx;
	uint64_t x;
	int64_t r = -1;

	fz_take(in, s, sizeof(s));
	for (int i = 0; i < 4; i++)
		v[i] = fz_u32(in);
	x = fz_u64(in);
	uctx = (s[0] & 0x40) ? fz_pick(&fd->uctxs, s[0], v[0]) : 0;
	for (int i = 0; i < (npatch & 3); i++) {
		uint8_t off = fz_u8(in) % QRNIC_AQ_SQE_SIZE, n = 1 + fz_u8(in) % 8, b[8];

		fz_take(in, b, n);
		hx_patch_next_cmd(w, d, off, b, n);
	}
	fz_mark(a->f);
	switch (op) {
	case QRNIC_CMD_QUERY_DEVICE:
	case QRNIC_CMD_QUERY_PORT:
	case QRNIC_CMD_QUERY_STATS:
		hx_query(w, d, op, s[1] % 3, NULL, v[1] % 4097);
		break;
	case QRNIC_CMD_SET_GID: {
		uint8_t gid[16];

		some_gid(a, s[1], gid);
		hx_set_gid(w, d, s[2] % 20, !(s[3] & 1), (s[3] & 0x80) ? s[4] : 1 + (s[3] >> 1) % 2,
			   gid);
		break;
	}
	case QRNIC_CMD_QUERY_GID:
		hx_query_gid(w, d, s[1] % 20, NULL);
		break;
	case QRNIC_CMD_ALLOC_UCTX:
		fz_keep(&fd->uctxs, hx_alloc_uctx(w, d));
		break;
	case QRNIC_CMD_DEALLOC_UCTX:
		destroy(a, op, &fd->uctxs, s[1], v[1]);
		break;
	case QRNIC_CMD_CREATE_PD:
		fz_keep(&fd->pds, hx_create_pd(w, d, uctx));
		break;
	case QRNIC_CMD_DESTROY_PD:
		destroy(a, op, &fd->pds, s[1], v[1]);
		break;
	case QRNIC_CMD_CREATE_CQ:
		/* s[3]: bit 0 a doorbell record, bit 1 64-byte timestamp CQEs */
		fz_keep(&fd->cqs, hx_create_cq_flags(w, d, uctx, fz_pick(&fd->eqs, s[1], v[1]),
						     s[2] % 11, s[3] & 1,
						     (s[3] & 2) ? QRNIC_CQ_F_TIMESTAMP : 0));
		break;
	case QRNIC_CMD_DESTROY_CQ:
		destroy(a, op, &fd->cqs, s[1], v[1]);
		break;
	case QRNIC_CMD_CREATE_QP: {
		static const uint32_t types[4] = { QRNIC_QPT_RC, QRNIC_QPT_UD, QRNIC_QPT_GSI,
						   QRNIC_QPT_UC };

		if (s[7] & 0x80) {	/* on an SRQ */
			fz_keep(&fd->qps, hx_create_qp_srq(w, d, uctx, fz_pick(&fd->pds, s[1], v[1]),
							   fz_pick(&fd->cqs, s[2], v[2]),
							   fz_pick(&fd->cqs, s[3], v[3]), types[s[4] % 4],
							   s[5] % 9, 5 + s[6] % 6,
							   fz_pick(&fd->srqs, s[7], v[0]), 0));
			break;
		}
		if ((s[4] & 0x60) == 0x40) {	/* XRC INI: send side only */
			fz_keep(&fd->qps, hx_create_qp_srq(w, d, uctx, fz_pick(&fd->pds, s[1], v[1]),
							   fz_pick(&fd->cqs, s[2], v[2]),
							   (s[3] & 0x80) ? fz_pick(&fd->cqs, s[3] & 0x7f, v[3])
									 : 0,
							   QRNIC_QPT_XRC_INI, s[5] % 9, 5 + s[6] % 6, 0, 0));
			break;
		}
		if ((s[4] & 0x60) == 0x60) {	/* XRC TGT of a domain: no PD, CQs, rings */
			fz_keep(&fd->qps, hx_create_qp_srq(w, d, uctx,
							   (s[3] & 0x80) ? fz_pick(&fd->pds, s[1], v[1]) : 0,
							   0, 0, QRNIC_QPT_XRC_TGT, 0, 0,
							   fz_pick(&fd->xrcds, s[5], v[0]), 0));
			break;
		}
		/* s[7] bit 6: an RQ producer record (ABI 1.10); bit 7: an SQ
		 * record (ABI 1.11) */
		hx_set_rq_dbrec(w, d, (s[7] >> 6) & 1);
		hx_set_sq_dbrec(w, d, (s[7] >> 7) & 1);
		fz_keep(&fd->qps, hx_create_qp(w, d, uctx, fz_pick(&fd->pds, s[1], v[1]),
					       fz_pick(&fd->cqs, s[2], v[2]), fz_pick(&fd->cqs, s[3], v[3]),
					       types[s[4] % 4], s[5] % 9, 5 + s[6] % 6, s[7] % 9,
					       4 + (s[5] >> 4) % 7,
					       (s[6] & 0x80) ? (uint32_t)x : (s[6] >> 6) & 1));
		hx_set_rq_dbrec(w, d, 0);
		hx_set_sq_dbrec(w, d, 0);
		break;
	}
	case QRNIC_CMD_MODIFY_QP:
		modify_qp(a, s, v, x);
		break;
	case QRNIC_CMD_QUERY_QP:
		hx_query_qp(w, d, fz_pick(&fd->qps, s[1], v[1]), NULL);
		break;
	case QRNIC_CMD_DESTROY_QP:
		destroy(a, op, &fd->qps, s[1], v[1]);
		break;
	case QRNIC_CMD_REG_MR:
		reg_mr(a, s, v, x);
		break;
	case QRNIC_CMD_DEREG_MR:	/* the key stays known: stale keys get used */
		hx_destroy(w, d, op, (s[1] & 0x80) ? v[1] : fz_pick_mr(fd, s[1])->key);
		break;
	case QRNIC_CMD_QUERY_MR:
		hx_query_mr(w, d, (s[1] & 0x80) ? v[1] : fz_pick_mr(fd, s[1])->key, NULL);
		break;
	case QRNIC_CMD_ALLOC_MR: {
		struct qrnic_aq_cmd c;
		struct qrnic_aq_cqe cqe;

		memset(&c, 0, sizeof(c));
		c.hdr.opcode = op;
		c.u.alloc_mr.pdn = (s[1] & 1) ? fd->pd : fz_pick(&fd->pds, s[1], v[1]);
		c.u.alloc_mr.max_pages = (s[2] & 0x80) ? v[2] : 1 + s[2] % 16;
		if (hx_admin(w, d, &c, &cqe, 0) == 0)
			fz_objs_add(&fd->frmrs, cqe.result[0]);
		break;
	}
	case QRNIC_CMD_ALLOC_MW: {
		struct qrnic_aq_cmd c;
		struct qrnic_aq_cqe cqe;

		memset(&c, 0, sizeof(c));
		c.hdr.opcode = op;
		c.u.alloc_mw.pdn = (s[1] & 1) ? fd->pd : fz_pick(&fd->pds, s[1], v[1]);
		c.u.alloc_mw.type = (s[2] & 0x80) ? s[2] : 1 + (s[2] & 1);
		if (hx_admin(w, d, &c, &cqe, 0) == 0)
			fz_objs_add(&fd->mws, cqe.result[0]);
		break;
	}
	case QRNIC_CMD_RESIZE_CQ:
		hx_resize_cq(w, d, fz_pick(&fd->cqs, s[1], v[1]), (s[2] & 0x80) ? s[2] : s[2] % 12);
		break;
	case QRNIC_CMD_MODIFY_CQ:
		hx_modify_cq(w, d, fz_pick(&fd->cqs, s[1], v[1]), v[2] & 0xffff, s[3] % 64);
		break;
	case QRNIC_CMD_CREATE_AH: {
		struct qrnic_av av;

		some_av(a, s[1], x, &av);
		fz_keep(&fd->ahs, hx_create_ah(w, d, fz_pick(&fd->pds, s[2], v[2]), &av));
		break;
	}
	case QRNIC_CMD_DESTROY_AH:
		destroy(a, op, &fd->ahs, s[1], v[1]);
		break;
	case QRNIC_CMD_CREATE_EQ:
		r = fz_keep(&fd->eqs, hx_create_eq(w, d, s[1] % 10, s[2] % 10, s[3] & 1));
		if (r >= 0)
			hx_arm_eq(w, d, (uint32_t)r);
		break;
	case QRNIC_CMD_DESTROY_EQ:
		destroy(a, op, &fd->eqs, s[1], v[1]);
		break;
	case QRNIC_CMD_CREATE_SRQ:
		if (s[6] & 0x80) {	/* an XRC SRQ of a domain, its CQ */
			uint16_t fl = (s[6] & 0x40) ? (uint16_t)v[3] : QRNIC_SRQ_F_XRC;
			uint32_t xrcd = fz_pick(&fd->xrcds, s[6] & 0x3f, v[3]);
			uint32_t cqn = fz_pick(&fd->cqs, s[7], v[0]);

			hx_patch_next_cmd(w, d, offsetof(struct qrnic_aq_cmd, u.create_srq.flags), &fl,
					  sizeof(fl));
			hx_patch_next_cmd(w, d, offsetof(struct qrnic_aq_cmd, u.create_srq.xrcd), &xrcd,
					  sizeof(xrcd));
			hx_patch_next_cmd(w, d, offsetof(struct qrnic_aq_cmd, u.create_srq.cqn), &cqn,
					  sizeof(cqn));
		}
		fz_keep(&fd->srqs, hx_create_srq(w, d, uctx, fz_pick(&fd->pds, s[1], v[1]), s[2] % 17,
						 s[3] % 11, (s[4] & 0x80) ? v[2] : s[4] % 8, s[5] & 1));
		break;
	case QRNIC_CMD_MODIFY_SRQ:
		hx_modify_srq(w, d, fz_pick(&fd->srqs, s[1], v[1]), (s[2] & 0x80) ? v[2] : s[2] % 4,
			      (s[3] & 0x80) ? v[3] : s[3] % 8);
		break;
	case QRNIC_CMD_QUERY_SRQ: {
		uint32_t out[3];

		hx_query_srq(w, d, fz_pick(&fd->srqs, s[1], v[1]), out);
		break;
	}
	case QRNIC_CMD_DESTROY_SRQ:
		destroy(a, op, &fd->srqs, s[1], v[1]);
		break;
	case QRNIC_CMD_REREG_MR:
		rereg_mr(a, s, v, x);
		break;
	case QRNIC_CMD_ALLOC_XRCD: {
		struct qrnic_aq_cmd c;
		struct qrnic_aq_cqe cqe;

		memset(&c, 0, sizeof(c));
		c.hdr.opcode = op;
		c.u.alloc_xrcd.uctx = uctx;
		c.u.alloc_xrcd.rsvd = (s[1] & 0x80) ? v[1] : 0;
		if (hx_admin(w, d, &c, &cqe, 0) == 0)
			fz_objs_add(&fd->xrcds, cqe.result[0]);
		break;
	}
	case QRNIC_CMD_DEALLOC_XRCD:
		destroy(a, op, &fd->xrcds, s[1], v[1]);
		break;
	case QRNIC_CMD_ATTACH_MCAST:
	case QRNIC_CMD_DETACH_MCAST: {
		struct qrnic_aq_cmd c;

		memset(&c, 0, sizeof(c));
		c.hdr.opcode = op;
		c.u.mcast.qpn = fz_pick(&fd->qps, s[1], v[1]);
		/* a few groups, IPv4-mapped and IPv6, or any bytes */
		if (s[2] & 0x80) {
			memcpy(c.u.mcast.gid, &x, 8);
			memcpy(c.u.mcast.gid + 8, v, 8);
		} else if (s[2] & 1) {
			c.u.mcast.gid[10] = c.u.mcast.gid[11] = 0xff;
			c.u.mcast.gid[12] = 239;
			c.u.mcast.gid[15] = s[3] % 4;
		} else {
			c.u.mcast.gid[0] = 0xff;
			c.u.mcast.gid[1] = 0x0e;
			c.u.mcast.gid[15] = s[3] % 4;
		}
		hx_admin(w, d, &c, NULL, 0);
		break;
	}
	default: {	/* opcode 0: an unknown one */
		struct qrnic_aq_cmd c;

		memset(&c, 0, sizeof(c));
		c.hdr.opcode = (uint8_t)(QRNIC_CMD_MAX + 1 + s[1] % (256 - QRNIC_CMD_MAX - 1));
		hx_admin(w, d, &c, NULL, 0);
		break;
	}
	}
	fz_account_admin(a->f);
}

static void act_admin_raw(struct act *a)
{
	uint8_t cmd[QRNIC_AQ_SQE_SIZE];
	uint8_t flags = fz_u8(a->in);

	fz_take(a->in, cmd, sizeof(cmd));
	fz_mark(a->f);
	hx_admin(a->w, a->d, cmd, NULL, (flags & 1) ? HX_ADMIN_RAW : 0);
	fz_account_admin(a->f);
}

/* ---- work requests and doorbells ----------------------------------------------- */
static void wqe_patches(struct act *a, uint8_t npatch)
{
	for (int i = 0; i < (npatch & 3); i++) {
		uint16_t off = fz_u16(a->in) % (1u << QRNIC_MAX_SEND_WQE_SHIFT);
		uint8_t n = 1 + fz_u8(a->in) % 8, b[8];

		fz_take(a->in, b, n);
		hx_patch_next_wqe(a->w, a->d, off, b, n);
	}
}

/* nsge SGEs on MRs of the device (or raw) */
static unsigned sges(struct act *a, unsigned nsge, uint64_t *addr, uint32_t *len, uint32_t *key)
{
	for (unsigned i = 0; i < nsge; i++) {
		uint8_t s = fz_u8(a->in);
		const struct fz_mr *m = fz_pick_mr(a->fd, s);
		uint32_t off = fz_u16(a->in), l = fz_u16(a->in), raw = fz_u32(a->in);

		addr[i] = (s & 0x10) ? raw : m->iova + off % m->len;
		len[i] = (s & 0x20) ? raw : l;
		key[i] = (s & 0x40) ? raw : m->key;
	}
	return nsge;
}

static void act_post_send(struct act *a)
{
	static uint8_t inl[512];
	struct fz_in *in = a->in;
	uint8_t s0 = fz_u8(in), op = fz_u8(in), fl = fz_u8(in), s3 = fz_u8(in), rs = fz_u8(in);
	uint32_t raw = fz_u32(in), imm = fz_u32(in), qkey = fz_u32(in);
	uint64_t raddr = fz_u64(in), ca = fz_u64(in), sw = fz_u64(in);
	uint32_t qpn = fz_pick(&a->fd->qps, s0, raw);
	const struct fz_mr *rm = (rs & 0x40) ? fz_pick_mr(a->fd, rs) : fz_pick_mr(a->fp, rs);
	uint64_t addr[4];
	uint32_t len[4], key[4], inl_len = fz_u16(in) % (sizeof(inl) + 1);
	unsigned nsge = sges(a, s3 % 5, addr, len, key);

	fl &= (s3 & 0x80) ? 0xff : 0x0f;	/* reserved flag bits sometimes */
	if (!(rs & 0x80))
		raddr = rm->iova + raddr % rm->len;
	wqe_patches(a, s3 >> 5);
	if ((op & 0xc0) == 0x40) {	/* an XRC SRQ of the peer (or our own: loopback) */
		uint32_t srqn = fz_pick((op & 0x20) ? &a->fd->srqs : &a->fp->srqs, op >> 3, raw);

		hx_patch_next_wqe(a->w, a->d, offsetof(struct qrnic_send_wqe, xrc_srqn), &srqn,
				  sizeof(srqn));
	}
	hx_post_send(a->w, a->d, qpn, (op & 0x80) ? op & 0x7f : op % 8u, fl, raw, nsge, addr, len,
		     key, inl, inl_len, imm, (rs & 0x20) ? raw : rm->key, raddr, ca, sw,
		     fz_pick(&a->fd->ahs, s0 >> 1, raw), fz_pick(&a->fp->qps, rs, raw),
		     (s3 & 0x10) ? qkey : FZ_QKEY, !(s0 & 0x40));
}

static void act_fast_reg(struct act *a)
{
	struct fz_in *in = a->in;
	uint8_t s0 = fz_u8(in), s1 = fz_u8(in), s2 = fz_u8(in), s3 = fz_u8(in);
	uint32_t raw = fz_u32(in), key = fz_pick(&a->fd->frmrs, s1, raw);
	uint32_t qpn = fz_pick(&a->fd->qps, s0, raw);
	uint64_t iova = fz_u64(in), len = fz_u16(in);
	uint32_t variant = fz_u8(in);

	if (s2 & 0x80)		/* a window's rkey instead */
		key = fz_pick(&a->fd->mws, s1, raw);
	if (s2 & 1)		/* another variant of the key */
		key = (key & ~0xffu) | variant;
	switch (s3 % 4) {
	case 3: {		/* BIND_MW of a window to one of the device's MRs */
		const struct fz_mr *m = fz_pick_mr(a->fd, s2);
		struct qrnic_bind_mw_wqe b;
		uint32_t mw = fz_pick(&a->fd->mws, s1, raw);

		memset(&b, 0, sizeof(b));
		b.opcode = QRNIC_WR_BIND_MW;
		b.flags = (s2 & 4) ? fz_u8(in) : QRNIC_WQE_F_SIGNALED;
		b.access = (s0 & 0x20) ? fz_u8(in) : QRNIC_ACCESS_REMOTE_READ;
		b.mr_lkey = (s0 & 0x10) ? raw : m->key;
		b.key = (s2 & 1) ? (mw & ~0xffu) | variant : mw;
		b.addr = (s1 & 0x40) ? iova : m->iova + (iova % (m->len ? m->len : 1));
		b.length = (s1 & 0x20) ? iova : len;
		b.wr_id = raw;
		hx_post_send_raw(a->w, a->d, qpn, &b, sizeof(b), 1);
		break;
	}
	case 0: {		/* REG_MR over pages of the device's MRs, or raw */
		struct qrnic_reg_mr_wqe r;
		uint64_t pbl = hx_scratch(a->w, a->d), pages[16];
		uint32_t n = 1 + (s2 >> 4) % 16;

		memset(&r, 0, sizeof(r));
		for (uint32_t i = 0; i < n; i++) {
			const struct fz_mr *m = fz_pick_mr(a->fd, fz_u8(in));
			uint64_t b = hx_mr_bus_addr(a->w, a->d, m->key, 0);

			pages[i] = (s2 & 2) ? fz_u64(in) : (b & ~0xfffull) + 4096ull * (i % 2);
		}
		hx_mem_write(a->w, a->d, pbl, pages, n * sizeof(uint64_t));
		r.opcode = QRNIC_WR_REG_MR;
		r.flags = (s2 & 4) ? fz_u8(in) : QRNIC_WQE_F_SIGNALED;
		r.page_shift = (s2 & 8) ? fz_u8(in) : 12;
		r.access = (s0 & 0x20) ? fz_u8(in) : 0x7;
		r.key = key;
		r.iova = (s1 & 0x40) ? iova : 0x10000 + (iova & 0xfff);
		r.length = (s1 & 0x20) ? iova : (len ? len : 1) + (n - 1) * 4096ull;
		r.npages = (s0 & 0x10) ? fz_u32(in) : (uint32_t)((((r.iova & 0xfff) + r.length +
								    4095) >> 12));
		r.pbl_addr = (s0 & 0x08) ? fz_u64(in) : pbl;
		r.wr_id = raw;
		hx_post_send_raw(a->w, a->d, qpn, &r, sizeof(r), 1);
		break;
	}
	default: {		/* LOCAL_INV or SEND_WITH_INV of the key */
		const struct fz_mr *m = fz_pick_mr(a->fd, s2);
		uint64_t addr = m->iova;
		uint32_t l = len % 5000, k = m->key;

		hx_post_send(a->w, a->d, qpn, s3 % 4 == 1 ? QRNIC_WR_LOCAL_INV : QRNIC_WR_SEND_WITH_INV,
			     QRNIC_WQE_F_SIGNALED, raw, (s3 % 4 == 2 && l) ? 1 : 0, &addr, &l, &k,
			     NULL, 0, __builtin_bswap32(key), 0, 0, 0, 0, 0, 0, 0, 1);
		break;
	}
	}
}

static void act_post_recv(struct act *a)
{
	struct fz_in *in = a->in;
	uint8_t s0 = fz_u8(in), s1 = fz_u8(in);
	uint32_t raw = fz_u32(in);
	uint64_t addr[4];
	uint32_t len[4], key[4];
	unsigned nsge = sges(a, s1 % 5, addr, len, key);

	wqe_patches(a, s1 >> 5);
	if (s0 & 0x20)
		hx_post_srq_recv(a->w, a->d, fz_pick(&a->fd->srqs, s0, raw), raw, nsge, addr, len,
				 key, !(s0 & 0x40));
	else
		hx_post_recv(a->w, a->d, fz_pick(&a->fd->qps, s0, raw), raw, nsge, addr, len, key,
			     !(s0 & 0x40));
}

static void act_doorbell(struct act *a)
{
	static const uint64_t offs[4] = { QRNIC_DB_SQ, QRNIC_DB_RQ, QRNIC_DB_CQ, QRNIC_DB_SRQ };
	struct fz_in *in = a->in;
	uint8_t s0 = fz_u8(in), s1 = fz_u8(in), s2 = fz_u8(in), s3 = fz_u8(in), s4 = fz_u8(in);
	uint32_t raw = fz_u32(in), rawidx = fz_u32(in);
	unsigned which = s1 % 5;
	uint64_t off = which < 4 ? offs[which] : raw & (QRNIC_DB_PAGE_SIZE - 1);
	uint32_t qn = fz_pick(which == 2 ? &a->fd->cqs : which == 3 ? &a->fd->srqs : &a->fd->qps,
			      s2, raw), idx = 0, ix[4];
	uint64_t val;

	if (which == 2)
		idx = hx_cq_ci(a->w, a->d, qn);
	else if (which == 3)
		idx = (uint32_t)hx_srq_ci(a->w, a->d, qn);
	else if (hx_qp_indexes(a->w, a->d, qn, ix) == 0)
		idx = which == 1 ? ix[2] : ix[0];
	if (which == 0 && (s4 & 0x20)) {
		/* BlueFlame (spec 3.2.1): the WQE last put on the ring, whole
		 * or with nwords s3 % 40, words left out (torn), on any page,
		 * with any producer index */
		hx_ring_sq_bf(a->w, a->d, qn, s3 & 1, (s2 & 0x80) ? s3 % 40u : 0,
			      (s0 & 0x80) ? raw : 0, (s4 & 0x10) ? (int64_t)(s0 % 5) : -1,
			      (s4 & 0x80) ? (int64_t)rawidx : -1);
		return;
	}
	idx = (s4 & 0x80) ? rawidx : idx + (uint32_t)(int32_t)(int8_t)s3;
	if (which == 0 && (s4 & 0x08) && hx_qp_sq_dbrec(a->w, a->d, qn)) {
		/* a QP with an SQ record (ABI 1.11): any index written there
		 * instead of the doorbell, and with s4 bit 2 any value over the
		 * flag the device writes */
		uint64_t rec = hx_qp_sq_dbrec(a->w, a->d, qn);

		hx_mem_write(a->w, a->d, rec, &idx, sizeof(idx));
		if (s4 & 0x04)
			hx_mem_write(a->w, a->d, rec + 4, &rawidx, sizeof(rawidx));
		return;
	}
	if (which == 1 && (s4 & 0x08) && hx_qp_rq_dbrec(a->w, a->d, qn)) {
		/* a QP with an RQ producer record (ABI 1.10): any index written
		 * there instead of the doorbell */
		hx_mem_write(a->w, a->d, hx_qp_rq_dbrec(a->w, a->d, qn), &idx, sizeof(idx));
		return;
	}
	val = (qn & QRNIC_DB_QN_MASK) | (uint64_t)idx << QRNIC_DB_IDX_SHIFT |
	      (uint64_t)(s4 & 3) << 24;
	hx_db_write(a->w, a->d, (uint64_t)(s0 % 5) * QRNIC_DB_PAGE_SIZE + off, val,
		    (s4 & 0x40) ? 1u << (s4 >> 4) % 4 : 8);
}

/* ---- registers, memory, frames ---------------------------------------------------- */
static const uint16_t regs[] = {
	QRNIC_REG_VERSION, QRNIC_REG_CAPS, QRNIC_REG_CTRL, QRNIC_REG_STATUS,
	QRNIC_REG_FATAL_CODE, QRNIC_REG_NUM_DB_PAGES, QRNIC_REG_NUM_VECTORS, QRNIC_REG_SCRATCH,
	QRNIC_REG_AQ_SQ_BASE_LO, QRNIC_REG_AQ_SQ_BASE_HI, QRNIC_REG_AQ_CQ_BASE_LO,
	QRNIC_REG_AQ_CQ_BASE_HI, QRNIC_REG_AQ_CTRL, QRNIC_REG_AQ_SQ_DB, QRNIC_REG_AQ_SQ_CI,
	QRNIC_REG_AQ_STATUS, QRNIC_REG_EQ_DB, QRNIC_REG_ETH_TX_BASE_LO, QRNIC_REG_ETH_TX_BASE_HI,
	QRNIC_REG_ETH_RX_BASE_LO, QRNIC_REG_ETH_RX_BASE_HI, QRNIC_REG_ETH_CTRL,
	QRNIC_REG_ETH_TX_DB, QRNIC_REG_ETH_RX_DB, QRNIC_REG_ETH_TX_CI, QRNIC_REG_ETH_RX_CI,
	QRNIC_REG_ETH_IRQ, QRNIC_REG_MAC_LO, QRNIC_REG_MAC_HI, QRNIC_REG_PORT_STATUS,
	QRNIC_REG_ETH_MTU,
};

/* After a reset the driver forgets the device; b & 1: it brings it up again. */
static void after_reset(struct act *a, uint8_t b)
{
	if (b & 1) {
		fz_reinit(a->f, a->d);
	} else {
		hx_drv_forget(a->w, a->d);
		a->fd->up = false;
	}
}

static void act_reg_write(struct act *a)
{
	struct fz_in *in = a->in;
	uint8_t s0 = fz_u8(in), s1 = fz_u8(in);
	uint32_t raw = fz_u32(in);
	uint64_t val = fz_u64(in);
	uint64_t off = (s0 & 0x80) ? raw & (QRNIC_BAR_REGS_SIZE - 1) : regs[s0 % (sizeof(regs) / 2)];
	unsigned size = (s1 & 0x80) ? 1u << (s1 >> 4) % 4 : off == QRNIC_REG_EQ_DB ? 8 : 4;

	hx_reg_write(a->w, a->d, off, val, size);
	if (off == QRNIC_REG_CTRL && (val & QRNIC_CTRL_RESET))
		after_reset(a, s1);
}

static uint64_t deny_addr(struct act *a, uint8_t s, uint32_t raw)
{
	hx_world *w = a->w;
	int d = a->d;

	switch (s % 10) {
	case 0: return hx_drv_aq_addr(w, d, 0);
	case 1: return hx_drv_aq_addr(w, d, 1);
	case 2: return hx_drv_ring_addr(w, d, 0, fz_pick(&a->fd->cqs, s >> 4, raw));
	case 3: return hx_drv_ring_addr(w, d, 1, fz_pick(&a->fd->eqs, s >> 4, raw));
	case 4: return hx_drv_ring_addr(w, d, 2, fz_pick(&a->fd->qps, s >> 4, raw));
	case 5: return hx_drv_ring_addr(w, d, 3, fz_pick(&a->fd->qps, s >> 4, raw));
	case 6: return hx_mr_bus_addr(w, d, fz_pick_mr(a->fd, s >> 4)->key, raw % 65536);
	case 7: return hx_scratch(w, d);
	case 8: return (s & 0x80) ? a->fd->eth_rx_ring : a->fd->eth_tx_ring;
	default: return hx_mem_base(w, d) + raw % FZ_MEM;
	}
}

static void act_dma_deny(struct act *a)
{
	uint8_t s0 = fz_u8(a->in), s1 = fz_u8(a->in);
	uint32_t raw = fz_u32(a->in), len = fz_u16(a->in);

	if (s1 & 1)
		hx_mem_deny_clear(a->w, a->d);
	else
		hx_mem_deny(a->w, a->d, deny_addr(a, s0, raw) + (s1 >> 4) * 64, 1 + len % 8192);
}

static void act_frame(struct act *a, bool raw)
{
	static uint8_t frame[QRNIC_ETH_MAX_FRAME + 64];
	uint8_t s0 = fz_u8(a->in);
	size_t n;

	if (raw) {
		n = fz_left(a->in) < sizeof(frame) ? fz_left(a->in) : sizeof(frame);
		fz_take(a->in, frame, n);
	} else {
		n = fz_frame(a->f, a->d, a->in, frame, sizeof(frame));
	}
	if (raw && (s0 & 2) && a->fd->up) {
		/* through the device's own Ethernet TX ring (one descriptor) */
		uint64_t buf = hx_mem_base(a->w, a->d) + FZ_MEM - 2 * 8192;	/* top of memory */
		struct qrnic_eth_desc e = { buf, (uint16_t)n, 0, 0 };

		hx_mem_write(a->w, a->d, buf, frame, n);
		hx_mem_write(a->w, a->d, a->fd->eth_tx_ring + (a->fd->eth_tx_pi % 16) * sizeof(e),
			     &e, sizeof(e));
		hx_reg_write(a->w, a->d, QRNIC_REG_ETH_TX_DB, ++a->fd->eth_tx_pi, 4);
		return;
	}
	hx_rx_inject(a->w, a->d, frame, (uint32_t)n);
}

static void act_reset(struct act *a)
{
	uint8_t s0 = fz_u8(a->in), s1 = fz_u8(a->in);

	switch (s0 % 3) {
	case 0:
		hx_reg_write(a->w, a->d, QRNIC_REG_CTRL, QRNIC_CTRL_RESET, 4);
		after_reset(a, s1);
		break;
	case 1:
		hx_dev_reset(a->w, a->d);
		after_reset(a, s1);
		break;
	default:
		hx_reg_write(a->w, a->d, QRNIC_REG_CTRL, 0, 4);
		fz_run(a->f, 1u << (s1 % 20), 256);
		hx_reg_write(a->w, a->d, QRNIC_REG_CTRL, QRNIC_CTRL_ENABLE, 4);
		break;
	}
}

static void act_reads(struct act *a)
{
	uint8_t s0 = fz_u8(a->in);
	uint32_t raw = fz_u32(a->in);

	hx_reg_read(a->w, a->d, raw & (QRNIC_BAR_REGS_SIZE - 1), 1u << s0 % 4);
	hx_db_read(a->w, a->d, (raw >> 12) % (5 * QRNIC_DB_PAGE_SIZE), 1u << (s0 >> 2) % 4);
}

static void act_service(struct act *a)
{
	uint8_t s = fz_u8(a->in), buf[16 * sizeof(struct qrnic_cqe)];
	uint32_t cqn = fz_pick(&a->fd->cqs, s, 0);

	hx_poll_cq(a->w, a->d, cqn, buf, 16);
	if (s & 0x40)
		hx_arm_cq(a->w, a->d, cqn, s & 0x20);
	if (a->fd->up)
		fz_service(a->f, a->d, a->in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size, 0 }, body;
	struct fz_opts o;
	struct fz f;
	uint8_t cfg = fz_u8(&in), kind;

	memset(&o, 0, sizeof(o));
	o.profile[0] = (cfg & 3) % 3;
	o.profile[1] = ((cfg >> 2) & 3) % 3;
	o.trusted_wire = cfg & 0x10;
	o.latency_ns = (cfg & 0x20) ? 0 : 1000;
	o.rx_buffer[0] = o.rx_buffer[1] = cfg & 0x40;
	if (cfg & 0x80)		/* payload references: a byte (and a tap pattern) follow */
		fz_refs_opts(&o, &in);
	if (fz_world_new(&f, "fuzz_guest", &o)) {
		fprintf(stderr, "fuzz_guest: world setup failed: %s\n", f.w ? hx_world_error(f.w) : "");
		abort();
	}
	fz_check(&f);
	for (int i = 0; i < FZ_MAX_RECORDS && !f.spent && fz_record(&in, &kind, &body); i++) {
		struct act a;

		a.f = &f;
		a.w = f.w;
		a.in = &body;
		a.d = fz_u8(&body) & 1;
		a.fd = &f.d[a.d];
		a.fp = &f.d[1 - a.d];
		f.action = i;
		switch (kind % 16) {
		case 0: act_admin(&a); break;
		case 1: act_admin_raw(&a); break;
		case 2: act_post_send(&a); break;
		case 3: act_post_recv(&a); break;
		case 4: act_doorbell(&a); break;
		case 5: act_reg_write(&a); break;
		case 6: act_dma_deny(&a); break;
		case 7: act_frame(&a, false); break;
		case 8: act_frame(&a, true); break;
		case 9: act_fast_reg(&a); break;
		case 10: act_service(&a); break;
		case 11: act_reset(&a); break;
		case 12: hx_set_link(f.w, a.d, fz_u8(&body) & 1); break;
		case 13: fz_traffic(&f, a.d, &body); break;
		case 14: act_reads(&a); break;
		default: {
			uint8_t e = fz_u8(&body);

			fz_run(&f, 1ull << (e % 28), 1 + fz_u16(&body) % 4096u);
			break;
		}
		}
		fz_check(&f);
	}
	fz_run(&f, FZ_FINAL_NS, FZ_FINAL_ITERS);
	fz_check(&f);
	fz_world_free(&f);
	return 0;
}
