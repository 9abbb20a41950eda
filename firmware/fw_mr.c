/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic firmware: memory registration (REG_MR, REREG_MR, ALLOC_MR, ALLOC_MW,
 * DEREG_MR, QUERY_MR).
 *
 * REG_MR validates the command, allocates an MPT slot and an MTT range,
 * walks the page buffer list once (each PBL page is read exactly once, the
 * data page addresses land directly in d->mtt[]), validates the copied
 * addresses, and only then makes the MPT entry valid.  Any failure frees
 * what was allocated, in reverse order.
 *
 * A DMA MR (QRNIC_MR_F_PHYS, kernel PDs only) uses no PBL and no MTT:
 * pbl_levels, pbl_addr and npages are ignored; iova is the bus address.
 *
 * ALLOC_MR (kernel PDs only) holds an MPT slot and max_pages MTT entries
 * for a fast-registration MR; the REG_MR and LOCAL_INV WQEs (model/mr.c)
 * register and invalidate it, DEREG_MR gives both back.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qrnic_fw.h"

#define PBL_SHIFT	9	/* log2(QRNIC_PBL_ENTRIES) */

/*
 * Copy the n page addresses described by the list page at 'addr' of the
 * given level (1: a page of data page addresses) into dst[0..n).
 * Recursion depth <= QRNIC_PBL_MAX_LEVELS, one 4 KiB buffer per level.
 */
static uint8_t pbl_walk(struct qrnic_dev *d, uint64_t addr, unsigned level, uint64_t *dst,
			uint32_t n, uint64_t page_mask, uint32_t off, struct qrnic_aq_cqe *cqe)
{
	uint64_t list[QRNIC_PBL_ENTRIES];
	uint64_t span;
	uint32_t nent, i;

	if (level == 1) {
		if (qrnic_dma_read(d, addr, dst, (size_t)n * sizeof(uint64_t)))
			return qrnic_fw_fail(cqe, QRNIC_AQ_DMA_ERROR, off);
		for (i = 0; i < n; i++) {
			dst[i] = qrnic_fw_le64(dst[i]);
			if (dst[i] & page_mask)
				return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, off);
		}
		return QRNIC_AQ_OK;
	}

	span = 1ull << (PBL_SHIFT * (level - 1));	/* data pages per entry */
	nent = (uint32_t)((n + span - 1) / span);	/* <= 512: capacity checked */
	if (qrnic_dma_read(d, addr, list, (size_t)nent * sizeof(uint64_t)))
		return qrnic_fw_fail(cqe, QRNIC_AQ_DMA_ERROR, off);
	for (i = 0; i < nent; i++) {
		uint64_t next = qrnic_fw_le64(list[i]);
		uint32_t m = n < span ? n : (uint32_t)span;
		uint8_t st;

		if (next == 0 || (next & (QRNIC_PBL_PAGE_SIZE - 1)))
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, off);
		st = pbl_walk(d, next, level - 1, dst, m, page_mask, off, cqe);
		if (st != QRNIC_AQ_OK)
			return st;
		dst += m;
		n -= m;
	}
	return QRNIC_AQ_OK;
}

/* Claim MPT slot idx for PD pd: a zeroed entry with the slot's next key
 * (result[0]); the caller fills in the rest. */
static void mpt_claim(struct qrnic_dev *d, struct qrnic_mr *mr, uint32_t idx, uint32_t pdn,
		      struct qrnic_pd *pd, struct qrnic_aq_cqe *cqe)
{
	qrnic_mpt_take(d, idx);
	memset(&mr->mpt, 0, sizeof(mr->mpt));
	mr->bound_mws = mr->mw_qpn = 0;
	mr->mpt.key = QRNIC_MAKE_KEY(idx, (uint32_t)mr->next_tag);
	mr->next_tag++;		/* a stale key of this slot never matches again */
	mr->mpt.pdn = pdn;
	pd->refcnt++;
	cqe->result[0] = mr->mpt.key;
}

/* The lowest free MPT slot (no registered MR, fast-registration MR or
 * window), not claimed yet: the model's allocator (model/mr.c). */
static struct qrnic_mr *mpt_free_slot(struct qrnic_dev *d, uint32_t *idx_out)
{
	uint32_t idx = qrnic_mpt_peek(d);

	if (!idx)
		return NULL;
	*idx_out = idx;
	return &d->mr[idx];
}

/* A translation checked and copied into the MTT (REG_MR, REREG_MR). */
struct mr_xlate {
	bool phys;
	uint32_t mtt_base, npages;	/* npages: MTT entries used (0 for PHYS) */
};

/*
 * Check the registration c (fields of struct qrnic_cmd_reg_mr at command
 * offset 'base' more than REG_MR's: 0, or 8 within REREG_MR) for PD pd and
 * copy its page addresses once into a new MTT range (alloc false: check
 * only).  On failure nothing is allocated.
 */
static uint8_t mr_translate(struct qrnic_dev *d, const struct qrnic_cmd_reg_mr *c,
			    const struct qrnic_pd *pd, uint32_t base, bool alloc,
			    struct qrnic_aq_cqe *cqe, struct mr_xlate *x)
{
	const bool phys = c->flags & QRNIC_MR_F_PHYS;
	uint64_t psz, pmask, span, count;
	uint8_t st;

#define F(field) (QRNIC_FW_OFF(u.reg_mr.field) + base)
	if (c->access & ~QRNIC_ACCESS_MR_MASK)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(access));
	/* IB: remote write and remote atomic need local write. */
	if ((c->access & (QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_ATOMIC)) &&
	    !(c->access & QRNIC_ACCESS_LOCAL_WRITE))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(access));
	if (c->flags & ~QRNIC_MR_F_PHYS)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(flags));
	if (phys && pd->uctx != 0)	/* bus addresses are for the kernel only */
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(flags));
	if (c->page_shift < QRNIC_MIN_PAGE_SHIFT || c->page_shift > QRNIC_MAX_PAGE_SHIFT)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(page_shift));
	if (c->pbl_levels > QRNIC_PBL_MAX_LEVELS)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(pbl_levels));
	if (c->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rsvd));
	/* A DMA MR maps bus addresses 1:1 and uses no MTT: max_mr_size (the
	 * MTT-backed limit) does not apply, so it can cover all guest RAM. */
	if (c->length == 0 || (!phys && c->length > d->cfg.max_mr_size) ||
	    c->length - 1 > UINT64_MAX - c->iova)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(length));
	if (c->rsvd2)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rsvd2));

	x->phys = phys;
	x->mtt_base = x->npages = 0;
	if (phys)	/* DMA MR: pbl_levels, pbl_addr and npages are not used */
		return QRNIC_AQ_OK;
	psz = 1ull << c->page_shift;
	pmask = psz - 1;
	/* Pages spanned by [iova, iova + length), given the page offset. */
	span = (c->iova & pmask) + c->length;
	if (span < c->length)	/* only if max_mr_size is near 2^64 */
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(length));
	count = (span >> c->page_shift) + ((span & pmask) != 0);
	if (count != c->npages)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(npages));
	if (c->pbl_levels == 0) {
		/* contiguous: pbl_addr is page 0; all pages must exist */
		if ((c->pbl_addr & pmask) ||
		    count * psz - 1 > UINT64_MAX - c->pbl_addr)	/* count <= 2^32, psz <= 2^30 */
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(pbl_addr));
	} else {
		if (count > 1ull << (PBL_SHIFT * c->pbl_levels))
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(pbl_levels));
		if (c->pbl_addr == 0 || (c->pbl_addr & (QRNIC_PBL_PAGE_SIZE - 1)))
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(pbl_addr));
	}
	if (count > d->cfg.max_mtt)
		return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, F(npages));
	if (!alloc)
		return QRNIC_AQ_OK;

	/* the MTT range, then the page addresses, copied once */
	x->mtt_base = qrnic_mtt_alloc(d, c->npages);
	if (x->mtt_base == UINT32_MAX)
		return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, F(npages));
	x->npages = c->npages;
	if (c->pbl_levels == 0) {
		for (uint32_t i = 0; i < c->npages; i++)
			d->mtt[x->mtt_base + i] = c->pbl_addr + (uint64_t)i * psz;
		return QRNIC_AQ_OK;
	}
	st = pbl_walk(d, c->pbl_addr, c->pbl_levels, &d->mtt[x->mtt_base], c->npages, pmask,
		      F(pbl_addr), cqe);
	if (st != QRNIC_AQ_OK) {
		qrnic_mtt_free(d, x->mtt_base, x->npages);
		x->npages = 0;
	}
	return st;
#undef F
}

uint8_t qrnic_fw_reg_mr(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_reg_mr *c = &cmd->u.reg_mr;
	struct mr_xlate x;
	struct qrnic_pd *pd;
	struct qrnic_mr *mr;
	uint32_t idx;
	uint8_t st;

	pd = qrnic_fw_pd(d, c->pdn);
	if (!pd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.reg_mr.pdn));
	/* an MPT slot (claimed only at the end) before any MTT work */
	mr = mpt_free_slot(d, &idx);
	st = mr_translate(d, c, pd, 0, mr != NULL, cqe, &x);
	if (st != QRNIC_AQ_OK)
		return st;
	if (!mr)
		return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
	mpt_claim(d, mr, idx, c->pdn, pd, cqe);
	mr->mpt.access = c->access;
	mr->mpt.iova = c->iova;
	mr->mpt.length = c->length;
	mr->mpt.mtt_base = x.mtt_base;
	mr->mpt.npages = x.npages;	/* MTT entries used */
	mr->mpt.page_shift = c->page_shift;
	mr->mpt.flags = QRNIC_MPT_VALID | (x.phys ? QRNIC_MPT_PHYS : 0);
	return QRNIC_AQ_OK;
}

/*
 * REREG_MR: an ordinary MR (REG_MR's) gets a new translation, PD and/or
 * access, keeping its key.  Everything is checked and the new translation
 * copied before anything changes: a failure leaves the MR as it was.
 */
uint8_t qrnic_fw_rereg_mr(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			  struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_rereg_mr *c = &cmd->u.rereg_mr;
	const uint32_t base = QRNIC_FW_OFF(u.rereg_mr.reg) - QRNIC_FW_OFF(u.reg_mr);
	struct qrnic_mr *mr = qrnic_fw_mr(d, c->key);
	struct qrnic_cmd_reg_mr r;
	struct qrnic_pd *pd, *old_pd;
	struct mr_xlate x;
	uint8_t st;

#define F(field) QRNIC_FW_OFF(u.rereg_mr.field)
	if (!mr || (mr->mpt.flags & (QRNIC_MPT_FAST | QRNIC_MPT_MW)))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, F(key));
	if (!c->change || (c->change & ~(QRNIC_REREG_TRANS | QRNIC_REREG_PD | QRNIC_REREG_ACCESS)))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(change));
	if (mr->bound_mws)	/* windows use its translation and rights */
		return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, F(key));
	/* the registration as it will be: new values where they change */
	memset(&r, 0, sizeof(r));
	r.pdn = (c->change & QRNIC_REREG_PD) ? c->reg.pdn : mr->mpt.pdn;
	r.access = (c->change & QRNIC_REREG_ACCESS) ? c->reg.access : mr->mpt.access;
	if (c->change & QRNIC_REREG_TRANS) {
		r.flags = c->reg.flags;
		r.page_shift = c->reg.page_shift;
		r.pbl_levels = c->reg.pbl_levels;
		r.rsvd = c->reg.rsvd;
		r.iova = c->reg.iova;
		r.length = c->reg.length;
		r.pbl_addr = c->reg.pbl_addr;
		r.npages = c->reg.npages;
		r.rsvd2 = c->reg.rsvd2;
	} else {	/* the translation stays: only checked, not copied again */
		r.flags = (mr->mpt.flags & QRNIC_MPT_PHYS) ? QRNIC_MR_F_PHYS : 0;
		r.page_shift = mr->mpt.page_shift;
		r.iova = mr->mpt.iova;
		r.length = mr->mpt.length;
	}
	pd = qrnic_fw_pd(d, r.pdn);
	if (!pd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, base + QRNIC_FW_OFF(u.reg_mr.pdn));
	if (c->change & QRNIC_REREG_TRANS) {
		st = mr_translate(d, &r, pd, base, true, cqe, &x);
		if (st != QRNIC_AQ_OK)
			return st;
	} else {
		/* access and PD rules of REG_MR for what stays (no MTT work) */
		if (r.access & ~QRNIC_ACCESS_MR_MASK)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, base + QRNIC_FW_OFF(u.reg_mr.access));
		if ((r.access & (QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_ATOMIC)) &&
		    !(r.access & QRNIC_ACCESS_LOCAL_WRITE))
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, base + QRNIC_FW_OFF(u.reg_mr.access));
		if ((r.flags & QRNIC_MR_F_PHYS) && pd->uctx != 0)
			return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, base + QRNIC_FW_OFF(u.reg_mr.pdn));
	}
	/* commit */
	if (c->change & QRNIC_REREG_TRANS) {
		if (!(mr->mpt.flags & QRNIC_MPT_PHYS) && mr->mpt.npages)
			qrnic_mtt_free(d, mr->mpt.mtt_base, mr->mpt.npages);
		mr->mpt.iova = r.iova;
		mr->mpt.length = r.length;
		mr->mpt.mtt_base = x.mtt_base;
		mr->mpt.npages = x.npages;
		mr->mpt.page_shift = r.page_shift;
		mr->mpt.flags = QRNIC_MPT_VALID | (x.phys ? QRNIC_MPT_PHYS : 0);
	}
	if (r.pdn != mr->mpt.pdn) {
		old_pd = qrnic_fw_pd(d, mr->mpt.pdn);
		if (old_pd && old_pd->refcnt)
			old_pd->refcnt--;
		pd->refcnt++;
		mr->mpt.pdn = r.pdn;
	}
	mr->mpt.access = r.access;
	cqe->result[0] = mr->mpt.key;
	return QRNIC_AQ_OK;
#undef F
}

uint8_t qrnic_fw_dereg_mr(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			  struct qrnic_aq_cqe *cqe)
{
	struct qrnic_mr *mr = qrnic_fw_mr(d, cmd->u.handle.handle);
	struct qrnic_pd *pd;
	uint8_t tag;

	if (!mr)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.handle.handle));
	if (mr->bound_mws)	/* memory windows are bound to it (as Linux rxe) */
		return qrnic_fw_fail(cqe, QRNIC_AQ_BUSY, QRNIC_FW_OFF(u.handle.handle));
	if (mr->mpt.flags & QRNIC_MPT_MW)
		qrnic_mw_unbind(d, mr);	/* a window: its MR and QP have one less */
	else if (mr->mpt.flags & QRNIC_MPT_FAST)
		qrnic_mtt_free(d, mr->mpt.mtt_base, mr->mpt.max_pages);
	else if (!(mr->mpt.flags & QRNIC_MPT_PHYS) && mr->mpt.npages)
		qrnic_mtt_free(d, mr->mpt.mtt_base, mr->mpt.npages);
	pd = qrnic_fw_pd(d, mr->mpt.pdn);
	if (pd && pd->refcnt)
		pd->refcnt--;
	tag = mr->next_tag;	/* persists across registrations of the slot */
	memset(mr, 0, sizeof(*mr));
	mr->next_tag = tag;
	qrnic_mpt_give(d, (uint32_t)(mr - d->mr));
	return QRNIC_AQ_OK;
}

uint8_t qrnic_fw_alloc_mr(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			  struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_alloc_mr *c = &cmd->u.alloc_mr;
	struct qrnic_pd *pd;
	struct qrnic_mr *mr;
	uint32_t idx, base;

#define F(field) QRNIC_FW_OFF(u.alloc_mr.field)
	pd = qrnic_fw_pd(d, c->pdn);
	if (!pd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, F(pdn));
	if (pd->uctx != 0)	/* fast registration is a kernel verb */
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(pdn));
	if (c->max_pages == 0 || c->max_pages > QRNIC_MAX_FAST_REG_PAGES)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(max_pages));
	if (c->flags)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(flags));
	if (c->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rsvd));
	mr = mpt_free_slot(d, &idx);
	if (!mr)
		return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
	base = qrnic_mtt_alloc(d, c->max_pages);
	if (base == UINT32_MAX)
		return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, F(max_pages));
	mpt_claim(d, mr, idx, c->pdn, pd, cqe);
	mr->mpt.mtt_base = base;
	mr->mpt.max_pages = c->max_pages;
	mr->mpt.page_shift = QRNIC_MIN_PAGE_SHIFT;
	mr->mpt.flags = QRNIC_MPT_FAST;	/* free: not VALID until a REG_MR WQE */
	return QRNIC_AQ_OK;
#undef F
}

uint8_t qrnic_fw_alloc_mw(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			  struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_alloc_mw *c = &cmd->u.alloc_mw;
	struct qrnic_pd *pd;
	struct qrnic_mr *mr;
	uint32_t idx;

#define F(field) QRNIC_FW_OFF(u.alloc_mw.field)
	pd = qrnic_fw_pd(d, c->pdn);
	if (!pd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, F(pdn));
	if (c->type != QRNIC_MW_TYPE_1 && c->type != QRNIC_MW_TYPE_2)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(type));
	if (c->rsvd0[0] || c->rsvd0[1] || c->rsvd0[2])
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rsvd0));
	if (c->flags)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(flags));
	if (c->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, F(rsvd));
	mr = mpt_free_slot(d, &idx);
	if (!mr)
		return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
	mpt_claim(d, mr, idx, c->pdn, pd, cqe);
	mr->mpt.flags = QRNIC_MPT_MW | (c->type == QRNIC_MW_TYPE_2 ? QRNIC_MPT_MW_TYPE2 : 0);
	return QRNIC_AQ_OK;
#undef F
}

uint8_t qrnic_fw_query_mr(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			  struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_cmd_query_qp *q = &cmd->u.query_qp;
	struct qrnic_mr *mr = qrnic_fw_mr(d, q->handle);
	struct qrnic_mpt_entry e;

	if (!mr)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, QRNIC_FW_OFF(u.query_qp.handle));
	e = mr->mpt;
	return qrnic_fw_respond(d, cqe, q->resp_addr, q->resp_len,
				QRNIC_FW_OFF(u.query_qp.resp_addr), &e, sizeof(e));
}
