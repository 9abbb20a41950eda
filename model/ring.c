/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: rings named by page lists (ABI 1.8, spec 6.6.21).
 *
 * A CQ, QP or SRQ ring of one page or more may be a list of 4 KiB pages
 * instead of one contiguous range, as a real NIC's queue is (mlx5's PAS
 * array).  The admin command that names the ring hands the list's address;
 * the list is read once, checked and kept in host memory (8 bytes a page,
 * so memory stays proportional to the rings in use), and every ring access
 * translates through qrnic_ring_at() (qrnic_internal.h).
 */
#include <stdlib.h>

#include "qrnic_internal.h"

int qrnic_ring_pl_load(struct qrnic_dev *d, uint64_t list, uint64_t ring_bytes, uint64_t **out,
		       int64_t *bad_entry)
{
	uint32_t n;
	uint64_t *pl;

	*out = NULL;
	*bad_entry = -1;
	/* a ring smaller than a page stays contiguous; a ring is a power of
	 * two, so one of a page or more is a whole number of pages */
	if (ring_bytes < QRNIC_RING_PAGE_SIZE || (ring_bytes & (ring_bytes - 1)))
		return QRNIC_AQ_BAD_PARAM;
	n = qrnic_ring_npages(ring_bytes);
	if (list == 0 || (list & (QRNIC_RING_PL_ENTRY_SIZE - 1)) ||
	    (uint64_t)n * QRNIC_RING_PL_ENTRY_SIZE - 1 > UINT64_MAX - list)
		return QRNIC_AQ_BAD_PARAM;
	pl = malloc((size_t)n * sizeof(*pl));
	if (!pl)
		return QRNIC_AQ_NO_RESOURCES;
	if (qrnic_dma_read(d, list, pl, (size_t)n * sizeof(*pl))) {
		free(pl);
		return QRNIC_AQ_DMA_ERROR;
	}
	for (uint32_t i = 0; i < n; i++) {
		pl[i] = qrnic_le64_to_host(pl[i]);
		if (!qrnic_ring_pl_entry_ok(pl[i])) {
			qrnic_guest_err(d, err_ring_page_list, (list, i, pl[i]),
					"qrnic: ring page list at 0x%llx: entry %u is 0x%llx, not a "
					"nonzero 4 KiB aligned page", (unsigned long long)list, i,
					(unsigned long long)pl[i]);
			*bad_entry = i;
			free(pl);
			return QRNIC_AQ_BAD_PARAM;
		}
	}
	*out = pl;
	d->ring_pls++;
	return 0;
}

void qrnic_ring_pl_free(struct qrnic_dev *d, uint64_t **pl)
{
	if (!*pl)
		return;
	free(*pl);
	*pl = NULL;
	d->ring_pls--;
}

void qrnic_rings_free_all(struct qrnic_dev *d)
{
	/* no list anywhere (every contiguous-ring device): no scan of the
	 * tables, whose untouched pages stay unread */
	if (!d->ring_pls)
		return;
	if (d->cq)
		for (uint32_t i = 0; i < d->cfg.max_cq; i++)
			if (d->cq[i].ring_pl)
				qrnic_ring_pl_free(d, &d->cq[i].ring_pl);
	if (d->srq)
		for (uint32_t i = 0; i < d->cfg.max_srq; i++)
			if (d->srq[i].ring_pl)
				qrnic_ring_pl_free(d, &d->srq[i].ring_pl);
	if (d->qp)
		for (uint32_t i = 0; i < d->cfg.max_qp; i++) {
			if (d->qp[i].sq_pl)
				qrnic_ring_pl_free(d, &d->qp[i].sq_pl);
			if (d->qp[i].rq_pl)
				qrnic_ring_pl_free(d, &d->qp[i].rq_pl);
		}
	if (d->ring_pls) {	/* a list held elsewhere: the count is wrong */
		d->selfcheck_failures++;
		d->ring_pls = 0;
	}
}
