/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic firmware: private helpers shared by the admin command handlers.
 * Nothing here is ABI.  Hosts see the firmware through qrnic_firmware.h;
 * the firmware sees the model through qrnic_fw_services.h.
 *
 * Conventions of every handler (struct qrnic_fw_op in admin.c):
 *   - it gets the device's private copy of the command, never guest memory;
 *   - it validates every field before it changes any state;
 *   - it returns one QRNIC_AQ_* status; on failure it has set cqe->detail
 *     to the byte offset (within the 128-byte command) of the offending
 *     field, through qrnic_fw_fail();
 *   - the status is finalized in exactly one place: fw_finalize() in admin.c.
 *
 * What a driver must do:
 *   - hdr.flags, hdr.rsvd and every field named rsvd must be 0 (BAD_PARAM);
 *   - bytes of the payload area after the opcode's structure are ignored,
 *     and so are fields an opcode does not use (QUERY_DEVICE/STATS: port;
 *     QUERY_GID: valid/net_type/gid; SET_GID with valid = 0: net_type/gid;
 *     REG_MR with PHYS: pbl_levels/pbl_addr/npages; CREATE_QP without RQ
 *     (rq_log_depth = 0): rq_wqe_shift, but rq_addr must be 0);
 *   - MODIFY_QP ignores the values of attributes whose mask bit is clear
 *     (as ib_modify_qp does), but sq_draining (a QUERY_QP output) must be 0.
 * detail is the offending field's offset for BAD_PARAM, BAD_HANDLE,
 * BAD_STATE, BAD_ATTR_MASK and NOT_SUPPORTED, 0 for the other failures;
 * on success it is 0 except QUERY_GID ([0] valid, [15:8] net_type).
 * Queries answer result[0] = size of the full answer, result[1] = bytes
 * written (min(resp_len, size)).
 */
#ifndef QRNIC_FW_H
#define QRNIC_FW_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

#include "qrnic_fw_services.h"
#include "qrnic_firmware.h"

/* Byte offset of a command field, for cqe->detail. */
#define QRNIC_FW_OFF(field)	((uint32_t)offsetof(struct qrnic_aq_cmd, field))

static inline uint8_t qrnic_fw_fail(struct qrnic_aq_cqe *cqe, uint8_t status, uint32_t off)
{
	cqe->detail = off;
	return status;
}

/* Index of the first nonzero byte of p[0..n), or -1 if all are zero. */
static inline long qrnic_fw_nonzero(const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i])
			return (long)i;
	return -1;
}

/* Little-endian 64-bit value from host memory (the PBL). */
static inline uint64_t qrnic_fw_le64(uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap64(v);
#else
	return v;
#endif
}

/* ::ffff:a.b.c.d (an IPv4 address as a RoCEv2 GID) */
static inline bool qrnic_fw_gid_v4mapped(const uint8_t g[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g, pfx, sizeof(pfx)) == 0;
}

/* ---- Handle lookups: NULL unless the handle names a valid object -------- */
static inline bool qrnic_fw_uctx_ok(const struct qrnic_dev *d, uint32_t uctx)
{
	return uctx == 0 || (uctx < d->cfg.max_uctx && d->uctx_valid[uctx]);
}

static inline struct qrnic_pd *qrnic_fw_pd(struct qrnic_dev *d, uint32_t pdn)
{
	return (pdn && pdn < d->cfg.max_pd && d->pd[pdn].valid) ? &d->pd[pdn] : NULL;
}

static inline struct qrnic_cq *qrnic_fw_cq(struct qrnic_dev *d, uint32_t cqn)
{
	return (cqn && cqn < d->cfg.max_cq && d->cq[cqn].valid) ? &d->cq[cqn] : NULL;
}

static inline struct qrnic_eq *qrnic_fw_eq(struct qrnic_dev *d, uint32_t eqn)
{
	return (eqn && eqn < d->cfg.max_eq && d->eq[eqn].valid) ? &d->eq[eqn] : NULL;
}

static inline struct qrnic_ah *qrnic_fw_ah(struct qrnic_dev *d, uint32_t ahn)
{
	return (ahn && ahn < d->cfg.max_ah && d->ah[ahn].valid) ? &d->ah[ahn] : NULL;
}

static inline struct qrnic_srq *qrnic_fw_srq(struct qrnic_dev *d, uint32_t srqn)
{
	return (srqn && srqn < d->cfg.max_srq && d->srq[srqn].valid) ? &d->srq[srqn] : NULL;
}

static inline struct qrnic_xrcd *qrnic_fw_xrcd(struct qrnic_dev *d, uint32_t xrcdn)
{
	return (xrcdn && xrcdn < d->cfg.max_xrcd && d->xrcd[xrcdn].valid) ? &d->xrcd[xrcdn] : NULL;
}

/* An XRC domain that objects of user context uctx may join: one of uctx,
 * or a kernel one (uctx 0, shared as the kernel shares an XRCD). */
static inline struct qrnic_xrcd *qrnic_fw_xrcd_for(struct qrnic_dev *d, uint32_t xrcdn,
						   uint32_t uctx)
{
	struct qrnic_xrcd *x = qrnic_fw_xrcd(d, xrcdn);

	return x && (x->uctx == uctx || x->uctx == 0) ? x : NULL;
}

static inline struct qrnic_qp *qrnic_fw_qp(struct qrnic_dev *d, uint32_t qpn)
{
	return (qpn && qpn < d->cfg.max_qp && d->qp[qpn].valid) ? &d->qp[qpn] : NULL;
}

/* MR by key: valid slot whose current key is exactly 'key' (or a
 * fast-registration MR's slot, by index). */
static inline struct qrnic_mr *qrnic_fw_mr(struct qrnic_dev *d, uint32_t key)
{
	uint32_t idx = QRNIC_KEY_INDEX(key);

	if (idx == 0 || idx >= d->cfg.max_mr)
		return NULL;
	/* A fast-registration MR or a memory window is named by its index:
	 * the key's variant is the consumer's, and it may be free (not VALID). */
	if (d->mr[idx].mpt.flags & (QRNIC_MPT_FAST | QRNIC_MPT_MW))
		return &d->mr[idx];
	if (!(d->mr[idx].mpt.flags & QRNIC_MPT_VALID) || d->mr[idx].mpt.key != key)
		return NULL;
	return &d->mr[idx];
}

/* A ring of 'size' bytes at 'addr': nonzero, 4 KiB aligned, no wrap. */
static inline bool qrnic_fw_ring_ok(uint64_t addr, uint64_t size)
{
	return addr != 0 && (addr & 0xfff) == 0 && size <= UINT64_MAX - addr + 1;
}

/* A ring of 'size' bytes named by the command's address field 'addr' (at
 * command offset 'off'): contiguous (qrnic_fw_ring_ok), or with 'listed'
 * the address of its page list (ABI 1.8, spec 6.6.21), fetched and checked
 * here into *pl (the caller owns it; NULL for a contiguous ring).  Returns
 * QRNIC_AQ_OK, or the failure with the cqe naming the address field. */
static inline uint8_t qrnic_fw_ring_get(struct qrnic_dev *d, struct qrnic_aq_cqe *cqe,
					bool listed, uint64_t addr, uint64_t size, uint32_t off,
					uint64_t **pl)
{
	int64_t bad = -1;
	int st;

	*pl = NULL;
	if (!listed)
		return qrnic_fw_ring_ok(addr, size) ? QRNIC_AQ_OK
						    : qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, off);
	st = qrnic_ring_pl_load(d, addr, size, pl, &bad);	/* a bad entry is traced there */
	return st ? qrnic_fw_fail(cqe, (uint8_t)st, off) : QRNIC_AQ_OK;
}

/* ---- admin.c ------------------------------------------------------------ */
/* The admin engine (qrnic_fw_admin_ops.run): process up to 'budget' admin
 * commands; returns true if more are pending. */
bool qrnic_fw_admin_run(struct qrnic_dev *d, uint32_t budget);
/* Execute one validated-in-place command copy; fills cqe->status/result. */
void qrnic_fw_exec(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
/* Largest IB MTU (QRNIC_MTU_*) whose RoCEv2 frame fits cfg.eth_mtu. */
uint8_t qrnic_fw_port_mtu(const struct qrnic_dev *d);
/* DMA-write min(resp_len, len) bytes of an answer; resp_addr 0 or a DMA
 * failure -> QRNIC_AQ_DMA_ERROR (detail = offset of resp_addr field). */
uint8_t qrnic_fw_respond(struct qrnic_dev *d, struct qrnic_aq_cqe *cqe, uint64_t resp_addr,
			 uint32_t resp_len, uint32_t addr_off, const void *ans, size_t len);

/* ---- fw_res.c ----------------------------------------------------------- */
/* Validate an address vector; base_off = offset of the av in the command. */
uint8_t qrnic_fw_check_av(struct qrnic_dev *d, const struct qrnic_av *av,
			  uint32_t base_off, struct qrnic_aq_cqe *cqe);

/* ---- Handlers (admin.c, fw_res.c, fw_mr.c, fw_qp.c) ---------------------- */
typedef uint8_t (*qrnic_fw_handler)(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
				    struct qrnic_aq_cqe *cqe);

uint8_t qrnic_fw_create_pd(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_destroy_pd(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_create_cq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_destroy_cq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_create_eq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_destroy_eq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_create_ah(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_destroy_ah(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_alloc_uctx(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_dealloc_uctx(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);

uint8_t qrnic_fw_reg_mr(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_dereg_mr(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_alloc_mr(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_rereg_mr(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_resize_cq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_modify_cq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_alloc_mw(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_query_mr(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);

uint8_t qrnic_fw_create_srq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_modify_srq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_query_srq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_destroy_srq(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_alloc_xrcd(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_dealloc_xrcd(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);

uint8_t qrnic_fw_attach_mcast(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_detach_mcast(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);

uint8_t qrnic_fw_create_qp(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_modify_qp(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_query_qp(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);
uint8_t qrnic_fw_destroy_qp(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd, struct qrnic_aq_cqe *cqe);

/* The QP state machine (fw_qp.c), exposed for unit tests:
 * QRNIC_AQ_OK, QRNIC_AQ_BAD_STATE (transition not allowed for the type),
 * QRNIC_AQ_NOT_SUPPORTED (ALT_PATH, PATH_MIG_STATE, CAP) or
 * QRNIC_AQ_BAD_ATTR_MASK (required attribute missing / attribute not
 * allowed).  mask may include QRNIC_QP_ATTR_STATE and _CUR_STATE. */
uint8_t qrnic_fw_qp_transition_ok(uint8_t qp_type, uint8_t cur, uint8_t next, uint32_t mask);

#endif
