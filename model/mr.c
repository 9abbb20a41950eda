/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: memory protection (MPT) and translation (MTT).
 *
 * The firmware fills d->mr[] (the MPT) and d->mtt[] at REG_MR and ALLOC_MR;
 * the translation below only reads them.  Fast registration and
 * invalidation (the REG_MR and LOCAL_INV WQEs, the responder of a
 * SEND_WITH_INV) change the MPT entry of an ALLOC_MR MR and its MTT range.  Every byte an engine moves between an MR and a
 * local buffer goes through qrnic_mr_read/qrnic_mr_write, which check the
 * key, PD, bounds and access, then copy in chunks that never cross an MR
 * page, through the device's DMA choke point.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qrnic_internal.h"

/* ---- Translation caches (timing model) ------------------------------------ */
/* qrnic_tm_xlate() when the key is not the cache's last one */
void qrnic_tm_xlate_lookup(struct qrnic_dev *d, enum qrnic_tm_cache_id c, uint32_t key)
{
	static const enum qrnic_stat st[3][2] = {	/* [cache][hit] */
		[QRNIC_TM_QPC] = { QRNIC_STAT_QPC_CACHE_MISSES, QRNIC_STAT_QPC_CACHE_HITS },
		[QRNIC_TM_MPT] = { QRNIC_STAT_MPT_CACHE_MISSES, QRNIC_STAT_MPT_CACHE_HITS },
		[QRNIC_TM_MTT] = { QRNIC_STAT_MTT_CACHE_MISSES, QRNIC_STAT_MTT_CACHE_HITS },
	};
	bool hit;

	d->tm_t += qrnic_tm_lookup(&d->tm, c, d->tm_t, key, &hit);
	qrnic_stat_add(d, st[c][hit], 1);
}

/* ---- Protection ----------------------------------------------------------- */
/* Inlined in its callers: it runs several times per packet.  qpn: 0 for a
 * local key (an lkey), else the QP whose responder uses 'key' as an rkey
 * (a memory window's rkey then works: bounds and rights are the window's,
 * the translation its MR's, spec 12.13). */
static inline __attribute__((always_inline)) int
mr_lookup(struct qrnic_dev *d, uint32_t key, uint32_t pdn, uint32_t qpn, uint64_t va,
	  uint64_t len, uint32_t access, const struct qrnic_mpt_entry **out)
{
	uint32_t idx = QRNIC_KEY_INDEX(key);
	const struct qrnic_mpt_entry *m;

	if (idx == 0 || idx >= d->cfg.max_mr)
		return QRNIC_VERR_LKEY;
	m = &d->mr[idx].mpt;
	if (!(m->flags & QRNIC_MPT_VALID) || m->key != key)
		return QRNIC_VERR_LKEY;
	if (__builtin_expect((m->flags & QRNIC_MPT_MW) != 0, 0)) {
		/* a window: never an lkey; type 2 only through its QP */
		if (!qpn || ((m->flags & QRNIC_MPT_MW_TYPE2) && d->mr[idx].mw_qpn != qpn))
			return QRNIC_VERR_LKEY;
	}
	if (m->pdn != pdn)
		return QRNIC_VERR_PD;
	if (len > 0) {
		/* [va, va+len) within [iova, iova+length), no wrap anywhere. */
		if (va < m->iova)
			return QRNIC_VERR_BOUNDS;
		if (va - m->iova >= m->length || len > m->length - (va - m->iova))
			return QRNIC_VERR_BOUNDS;
	}
	if ((m->access & access) != access)
		return QRNIC_VERR_ACCESS;
	if (qrnic_timed(d))	/* MPT cache */
		qrnic_tm_xlate(d, QRNIC_TM_MPT, idx);
	if (__builtin_expect((m->flags & QRNIC_MPT_MW) != 0, 0)) {
		/* translate through the MR: valid while a window is bound to
		 * it (DEREG_MR and invalidation refuse), checked anyway */
		uint32_t p = m->max_pages;

		if (p == 0 || p >= d->cfg.max_mr || !(d->mr[p].mpt.flags & QRNIC_MPT_VALID) ||
		    (d->mr[p].mpt.flags & QRNIC_MPT_MW))
			return QRNIC_VERR_LKEY;
		m = &d->mr[p].mpt;
		if (len > 0 && (va < m->iova || va - m->iova >= m->length ||
				len > m->length - (va - m->iova)))
			return QRNIC_VERR_BOUNDS;
	}
	if (out)
		*out = m;
	return QRNIC_VERR_NONE;
}

int qrnic_mr_check(struct qrnic_dev *d, uint32_t key, uint32_t pdn, uint64_t va,
		   uint64_t len, uint32_t access)
{
	return mr_lookup(d, key, pdn, 0, va, len, access, NULL);
}

int qrnic_rkey_check(struct qrnic_dev *d, const struct qrnic_qp *qp, uint32_t rkey, uint64_t va,
		     uint64_t len, uint32_t access)
{
	return mr_lookup(d, rkey, qrnic_qp_rkey_pdn(qp), qp->qpn, va, len, access, NULL);
}

/* ---- Translation ----------------------------------------------------------- */
/* How far bytes of MR m at DMA address addr, run of them so far ending at
 * the start of page 'page', follow on in DMA addresses through the pages
 * after it: up to len bytes (pages of psz bytes; bounded by len, the MR's
 * pages and the MTT). */
static uint64_t mtt_follow(const struct qrnic_dev *d, const struct qrnic_mpt_entry *m,
			   uint64_t page, uint64_t addr, uint64_t run, uint64_t len, uint64_t psz)
{
	while (run < len && page < m->npages && page < d->cfg.max_mtt - m->mtt_base &&
	       d->mtt[m->mtt_base + page] == addr + run) {
		run += len - run < psz ? len - run : psz;
		page++;
	}
	return run;
}

static int mr_xfer(struct qrnic_dev *d, uint32_t key, uint32_t pdn, uint32_t qpn, uint64_t va,
		   uint8_t *rbuf, const uint8_t *wbuf, uint32_t len, uint32_t access)
{
	const struct qrnic_mpt_entry *m;
	uint64_t psz, mask, off;
	int err;

	qrnic_trace(d, QRNIC_TR_TRANSLATE, 0, 0, key, len, va);
	err = mr_lookup(d, key, pdn, qpn, va, len, access, &m);
	if (err)
		return err;
	if (m->page_shift < QRNIC_MIN_PAGE_SHIFT || m->page_shift > QRNIC_MAX_PAGE_SHIFT)
		return QRNIC_VERR_BOUNDS;	/* cannot happen: REG_MR validated it */
	psz = 1ull << m->page_shift;
	mask = psz - 1;
	/* Offset of va from the start of the MR's first page. */
	off = (va - m->iova) + (m->iova & mask);

	while (len > 0) {
		uint64_t addr, within, chunk;

		if (m->flags & QRNIC_MPT_PHYS) {
			addr = va;
			within = addr & mask;
		} else {
			uint64_t page = off >> m->page_shift;

			within = off & mask;
			if (page >= m->npages || m->mtt_base >= d->cfg.max_mtt ||
			    page >= d->cfg.max_mtt - m->mtt_base)
				return QRNIC_VERR_BOUNDS;	/* cannot happen either */
			addr = d->mtt[m->mtt_base + page] + within;
			if (qrnic_timed(d))	/* MTT cache */
				qrnic_tm_xlate(d, QRNIC_TM_MTT, m->mtt_base + (uint32_t)page);
		}
		chunk = psz - within;
		if (chunk > len)
			chunk = len;
		if (wbuf && d->xfer_merge) {
			/* pages whose DMA addresses follow on: one write (a
			 * train's payload, qrnic_resp_write_train) */
			if (m->flags & QRNIC_MPT_PHYS)
				chunk = len;
			else
				chunk = mtt_follow(d, m, (off + chunk) >> m->page_shift, addr,
						   chunk, len, psz);
		}
		if (rbuf) {
			if (qrnic_dma_read(d, addr, rbuf, (size_t)chunk))
				return QRNIC_VERR_DMA;
			rbuf += chunk;
		} else {
			if (qrnic_dma_write(d, addr, wbuf, (size_t)chunk))
				return QRNIC_VERR_DMA;
			wbuf += chunk;
		}
		va += chunk;
		off += chunk;
		len -= (uint32_t)chunk;
	}
	return QRNIC_VERR_NONE;
}

int qrnic_mr_read(struct qrnic_dev *d, uint32_t key, uint32_t pdn, uint64_t va,
		  void *buf, uint32_t len, uint32_t access)
{
	return mr_xfer(d, key, pdn, 0, va, buf, NULL, len, access);
}

int qrnic_mr_write(struct qrnic_dev *d, uint32_t key, uint32_t pdn, uint64_t va,
		   const void *buf, uint32_t len, uint32_t access)
{
	return mr_xfer(d, key, pdn, 0, va, NULL, buf, len, access);
}

int qrnic_rkey_read(struct qrnic_dev *d, const struct qrnic_qp *qp, uint32_t rkey, uint64_t va,
		    void *buf, uint32_t len, uint32_t access)
{
	return mr_xfer(d, rkey, qrnic_qp_rkey_pdn(qp), qp->qpn, va, buf, NULL, len, access);
}

int qrnic_rkey_write(struct qrnic_dev *d, const struct qrnic_qp *qp, uint32_t rkey, uint64_t va,
		     const void *buf, uint32_t len, uint32_t access)
{
	return mr_xfer(d, rkey, qrnic_qp_rkey_pdn(qp), qp->qpn, va, NULL, buf, len, access);
}

/* ---- Fast registration and invalidation ----------------------------------- */

/* The MPT slot of key's index, whatever it holds (NULL: out of range). */
static struct qrnic_mpt_entry *mpt_slot(struct qrnic_dev *d, uint32_t key)
{
	uint32_t idx = QRNIC_KEY_INDEX(key);

	if (idx == 0 || idx >= d->cfg.max_mr)
		return NULL;
	return &d->mr[idx].mpt;
}

int qrnic_mr_fast_reg(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_reg_mr_wqe *w)
{
	struct qrnic_mpt_entry *m = mpt_slot(d, w->key);
	uint64_t psz, pmask, span, count, *mtt;
	uint32_t i;

	if (!m || !(m->flags & (QRNIC_MPT_VALID | QRNIC_MPT_FAST | QRNIC_MPT_MW)))
		return QRNIC_VERR_LKEY;
	if (!(m->flags & QRNIC_MPT_FAST) || (m->flags & QRNIC_MPT_VALID))
		return QRNIC_VERR_MR_STATE;	/* not ALLOC_MR's, or not free */
	if (m->pdn != pdn)
		return QRNIC_VERR_PD;
	/* The registration itself, as REG_MR checks it (firmware/fw_mr.c). */
	if (w->page_shift < QRNIC_MIN_PAGE_SHIFT || w->page_shift > QRNIC_MAX_PAGE_SHIFT ||
	    (w->access & ~QRNIC_ACCESS_MR_MASK) ||
	    ((w->access & (QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_ATOMIC)) &&
	     !(w->access & QRNIC_ACCESS_LOCAL_WRITE)) ||
	    w->length == 0 || w->length > d->cfg.max_mr_size ||
	    w->length - 1 > UINT64_MAX - w->iova || (w->pbl_addr & 7))
		return QRNIC_VERR_BAD_WQE;
	psz = 1ull << w->page_shift;
	pmask = psz - 1;
	span = (w->iova & pmask) + w->length;
	if (span < w->length)
		return QRNIC_VERR_BAD_WQE;
	count = (span >> w->page_shift) + ((span & pmask) != 0);
	if (count != w->npages || w->npages > m->max_pages)
		return QRNIC_VERR_BAD_WQE;
	/* The page list, copied once into the MR's own MTT range (held since
	 * ALLOC_MR, which checked it fits), then validated.  The MR is free
	 * meanwhile: nothing translates through these entries. */
	if (m->mtt_base >= d->cfg.max_mtt || m->max_pages > d->cfg.max_mtt - m->mtt_base)
		return QRNIC_VERR_BAD_WQE;	/* cannot happen */
	mtt = &d->mtt[m->mtt_base];
	if (qrnic_dma_read(d, w->pbl_addr, mtt, (size_t)w->npages * sizeof(uint64_t)))
		return QRNIC_VERR_DMA;
	for (i = 0; i < w->npages; i++) {
		mtt[i] = qrnic_le64_to_host(mtt[i]);
		if (mtt[i] & pmask)
			return QRNIC_VERR_BAD_WQE;
	}
	m->key = w->key;	/* the consumer's 8-bit variant */
	m->access = w->access;
	m->iova = w->iova;
	m->length = w->length;
	m->npages = w->npages;
	m->page_shift = w->page_shift;
	m->flags |= QRNIC_MPT_VALID;
	return QRNIC_VERR_NONE;
}

int qrnic_mr_invalidate(struct qrnic_dev *d, uint32_t pdn, uint32_t qpn, uint32_t key)
{
	struct qrnic_mpt_entry *m = mpt_slot(d, key);
	struct qrnic_mr *mr;

	if (!m || !(m->flags & (QRNIC_MPT_VALID | QRNIC_MPT_FAST | QRNIC_MPT_MW)) || m->key != key)
		return QRNIC_VERR_LKEY;
	mr = &d->mr[QRNIC_KEY_INDEX(key)];
	if (m->flags & QRNIC_MPT_MW) {
		/* a type 2 window, bound through this QP (type 1: unbound by
		 * a BIND_MW of length 0 only) */
		if (!(m->flags & QRNIC_MPT_MW_TYPE2))
			return QRNIC_VERR_MR_STATE;
		if (m->pdn != pdn)
			return QRNIC_VERR_PD;
		if ((m->flags & QRNIC_MPT_VALID) && mr->mw_qpn != qpn)
			return QRNIC_VERR_LKEY;
		qrnic_mw_unbind(d, mr);
		return QRNIC_VERR_NONE;
	}
	if (!(m->flags & QRNIC_MPT_FAST))
		return QRNIC_VERR_MR_STATE;	/* REG_MR's MRs are not invalidated */
	if (m->pdn != pdn)
		return QRNIC_VERR_PD;
	if (mr->bound_mws)
		return QRNIC_VERR_MR_STATE;	/* windows still use it (as Linux rxe) */
	m->flags &= ~QRNIC_MPT_VALID;	/* free; invalidating a free MR is no error */
	return QRNIC_VERR_NONE;
}

/* ---- Memory windows --------------------------------------------------------- */
void qrnic_mw_unbind(struct qrnic_dev *d, struct qrnic_mr *mw)
{
	uint32_t p = mw->mpt.max_pages;

	if (mw->mpt.flags & QRNIC_MPT_VALID) {
		struct qrnic_qp *qp = mw->mw_qpn ? qrnic_qp_get(d, mw->mw_qpn) : NULL;

		if (p && p < d->cfg.max_mr && d->mr[p].bound_mws)
			d->mr[p].bound_mws--;
		if (qp && qp->bound_mws)
			qp->bound_mws--;
	}
	mw->mpt.flags &= ~QRNIC_MPT_VALID;
	mw->mpt.max_pages = 0;
	mw->mpt.iova = mw->mpt.length = 0;
	mw->mpt.access = 0;
	mw->mw_qpn = 0;
}

int qrnic_mw_bind(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_bind_mw_wqe *w)
{
	struct qrnic_mpt_entry *m = mpt_slot(d, w->key);
	const struct qrnic_mpt_entry *mr;
	struct qrnic_mr *mw;
	uint32_t pidx = QRNIC_KEY_INDEX(w->mr_lkey);
	bool type2;

	if (!m || !(m->flags & QRNIC_MPT_MW))
		return m && (m->flags & (QRNIC_MPT_VALID | QRNIC_MPT_FAST)) ? QRNIC_VERR_MR_STATE
									     : QRNIC_VERR_LKEY;
	mw = &d->mr[QRNIC_KEY_INDEX(w->key)];
	type2 = m->flags & QRNIC_MPT_MW_TYPE2;
	if (m->pdn != qp->pdn)
		return QRNIC_VERR_PD;
	if (type2 && (m->flags & QRNIC_MPT_VALID))
		return QRNIC_VERR_MR_STATE;	/* invalidate it first */
	if (w->access & ~(QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_READ |
			  QRNIC_ACCESS_REMOTE_ATOMIC))
		return QRNIC_VERR_BAD_WQE;	/* no zero-based windows either */
	if (!type2 && w->length == 0) {		/* type 1: unbind */
		qrnic_mw_unbind(d, mw);
		m->key = w->key;
		return QRNIC_VERR_NONE;
	}
	/* the MR: exactly its lkey, valid, of this PD, not a window */
	if (pidx == 0 || pidx >= d->cfg.max_mr)
		return QRNIC_VERR_LKEY;
	mr = &d->mr[pidx].mpt;
	if (!(mr->flags & QRNIC_MPT_VALID) || mr->key != w->mr_lkey || (mr->flags & QRNIC_MPT_MW))
		return QRNIC_VERR_LKEY;
	if (mr->pdn != qp->pdn)
		return QRNIC_VERR_PD;
	if (!(mr->access & QRNIC_ACCESS_MW_BIND))
		return QRNIC_VERR_ACCESS;
	/* remote write or atomic through the window need local write on the MR */
	if ((w->access & (QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & QRNIC_ACCESS_LOCAL_WRITE))
		return QRNIC_VERR_ACCESS;
	if (w->addr < mr->iova || (w->length && (w->addr - mr->iova >= mr->length ||
						w->length > mr->length - (w->addr - mr->iova))))
		return QRNIC_VERR_BOUNDS;
	qrnic_mw_unbind(d, mw);			/* type 1: bound elsewhere before */
	m->key = w->key;
	m->iova = w->addr;
	m->length = w->length;
	m->access = w->access;
	m->max_pages = pidx;
	mw->mw_qpn = type2 ? qp->qpn : 0;
	if (type2)
		qp->bound_mws++;
	d->mr[pidx].bound_mws++;
	m->flags |= QRNIC_MPT_VALID;
	return QRNIC_VERR_NONE;
}

void qrnic_mw_qp_gone(struct qrnic_dev *d, struct qrnic_qp *qp)
{
	uint32_t qpn = qp->qpn;

	/* the MPT walk (up to the highest slot in use) only for a QP that
	 * has windows bound through it */
	for (uint32_t i = 1; i < d->mpt_ids.top && qp->bound_mws; i++) {
		struct qrnic_mr *mw = &d->mr[i];

		if ((mw->mpt.flags & (QRNIC_MPT_MW | QRNIC_MPT_MW_TYPE2 | QRNIC_MPT_VALID)) ==
		    (QRNIC_MPT_MW | QRNIC_MPT_MW_TYPE2 | QRNIC_MPT_VALID) && mw->mw_qpn == qpn)
			qrnic_mw_unbind(d, mw);
	}
}

/* ---- Scatter/gather ------------------------------------------------------ */
static int sgl_xfer(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_sge *sge,
		    uint32_t nsge, uint32_t off, uint8_t *rbuf, const uint8_t *wbuf,
		    uint32_t len)
{
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < nsge; i++)
		total += sge[i].length;
	if ((uint64_t)off + len > total)
		return QRNIC_VERR_LENGTH;

	for (i = 0; i < nsge && len > 0; i++) {
		uint32_t slen = sge[i].length, n;
		int err;

		if (off >= slen) {	/* also skips zero-length SGEs */
			off -= slen;
			continue;
		}
		if (sge[i].addr > UINT64_MAX - off)
			return QRNIC_VERR_BOUNDS;
		n = slen - off;
		if (n > len)
			n = len;
		if (rbuf) {
			err = qrnic_mr_read(d, sge[i].lkey, pdn, sge[i].addr + off, rbuf, n, 0);
			rbuf += n;
		} else {
			err = qrnic_mr_write(d, sge[i].lkey, pdn, sge[i].addr + off, wbuf, n,
					     QRNIC_ACCESS_LOCAL_WRITE);
			wbuf += n;
		}
		if (err)
			return err;
		len -= n;
		off = 0;
	}
	return QRNIC_VERR_NONE;
}

int qrnic_sgl_read(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_sge *sge,
		   uint32_t nsge, uint32_t off, void *buf, uint32_t len)
{
	return sgl_xfer(d, pdn, sge, nsge, off, buf, NULL, len);
}

/*
 * A train's packets (requester.c train_next): bytes [off, off + len) of an
 * SGL as one run of host memory, mapped once (ops->dma_map) for several
 * packets of one message instead of once per packet with a translation
 * each (qrnic_sgl_read).  The run lies in one SGE and in pages whose DMA
 * addresses follow on; it is cut to whole units (packets of unit bytes)
 * unless it reaches off + len.  The checks are qrnic_sgl_read's (length,
 * key, PD, bounds, over the whole SGE span asked for).  Returns its length
 * and its mapping in *src, or 0 -- none, nothing held or counted: the
 * caller takes its general path, which reports any error.  Untimed and
 * untraced (as trains are): one translation, no per-page cache lookups.
 */
uint32_t qrnic_sgl_map_run(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_sge *sge,
			   uint32_t nsge, uint32_t off, uint32_t len, uint32_t unit,
			   const uint8_t **src)
{
	const struct qrnic_mpt_entry *m;
	uint64_t total = 0, va, addr, run;
	uint32_t i, asked = len;

	for (i = 0; i < nsge; i++)	/* <= QRNIC_MAX_SGE */
		total += sge[i].length;
	if (!len || !unit || (uint64_t)off + len > total)
		return 0;
	for (i = 0; off >= sge[i].length; i++)	/* ends: off < total */
		off -= sge[i].length;
	if (len > sge[i].length - off)
		len = sge[i].length - off;
	if (sge[i].addr > UINT64_MAX - off)
		return 0;
	va = sge[i].addr + off;
	if (mr_lookup(d, sge[i].lkey, pdn, 0, va, len, 0, &m) != QRNIC_VERR_NONE ||
	    m->page_shift < QRNIC_MIN_PAGE_SHIFT || m->page_shift > QRNIC_MAX_PAGE_SHIFT)
		return 0;
	if (m->flags & QRNIC_MPT_PHYS) {
		addr = va;
		run = len;
	} else {
		uint64_t psz = 1ull << m->page_shift, mask = psz - 1;
		uint64_t pgoff = (va - m->iova) + (m->iova & mask);
		uint64_t page = pgoff >> m->page_shift;

		if (page >= m->npages || m->mtt_base >= d->cfg.max_mtt ||
		    page >= d->cfg.max_mtt - m->mtt_base)
			return 0;
		addr = d->mtt[m->mtt_base + page] + (pgoff & mask);
		run = psz - (pgoff & mask);
		run = mtt_follow(d, m, page + 1, addr, run < len ? run : len, len, psz);
	}
	/* whole units unless it ends where asked: not at the SGE's end,
	 * where the next unit goes on in the next SGE */
	if (run < asked)	/* run < asked <= UINT32_MAX: a 32-bit division */
		run -= (uint32_t)run % unit;
	if (!run || addr + run < addr)
		return 0;
	*src = d->ops->dma_map(d->opaque, addr, (size_t)run);
	return *src ? (uint32_t)run : 0;
}

int qrnic_sgl_write(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_sge *sge,
		    uint32_t nsge, uint32_t off, const void *buf, uint32_t len)
{
	return sgl_xfer(d, pdn, sge, nsge, off, NULL, buf, len);
}

int qrnic_sgl_check(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_sge *sge,
		    uint32_t nsge, uint32_t access, uint32_t *total)
{
	uint64_t sum = 0;
	uint32_t i;

	if (total)
		*total = 0;
	for (i = 0; i < nsge; i++) {
		/* Zero length: key, PD and access are still checked, bounds not. */
		int err = qrnic_mr_check(d, sge[i].lkey, pdn, sge[i].addr, sge[i].length, access);

		if (err)
			return err;
		sum += sge[i].length;
		if (sum > QRNIC_MAX_MSG_SIZE)
			return QRNIC_VERR_LENGTH;
	}
	if (total)
		*total = (uint32_t)sum;
	return QRNIC_VERR_NONE;
}
