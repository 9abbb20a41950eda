// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic memory regions (docs/spec.md 10).
 *
 * User MRs: the pages are pinned with ib_umem_get(), the largest page size
 * the device and the mapping allow is chosen, and the page addresses are
 * handed to REG_MR in a page buffer list of 4 KiB list pages in coherent
 * memory: level 0 for a single page, else 1, 2 or 3 levels of 512 entries.
 * The device copies the PBL once, so it is freed right after REG_MR.
 *
 * rereg_user_mr (ibv_rereg_mr) changes a user MR in place with REREG_MR
 * (spec 6.6.19), keeping its key; see qrnic_rereg_user_mr().
 *
 * DMA MRs (get_dma_mr, used for the kernel PDs' local_dma_lkey) are
 * QRNIC_MR_F_PHYS MRs over bus addresses [0, max_mr_size).
 *
 * Fast-registration MRs (alloc_mr, spec 12.12; kernel PDs only): ALLOC_MR
 * reserves the MPT slot and max_pages MTT entries; the MR is free (its key
 * does not work) until an IB_WR_REG_MR work request registers it
 * (qrnic_qp.c).  map_mr_sg fills the MR's own page list, max_pages
 * little-endian bus addresses in coherent memory, which the device reads
 * when it executes the REG_MR WQE, so the list lives as long as the MR.
 *
 * Memory windows (alloc_mw, spec 12.13; device cap QRNIC_CAP_MW): ALLOC_MW
 * takes an MPT slot of type 1 or 2 (type 2B) for any PD, kernel or user;
 * DEREG_MR frees it, bound or not.  Binding is a BIND_MW WQE, which only
 * user space posts (the provider: ibv_bind_mw, IBV_WR_BIND_MW): the kernel
 * has no bind work request any more, and kernel ULPs use fast registration.
 * MRs take windows only with IB_ACCESS_MW_BIND (QRNIC_ACCESS_MW_BIND).
 */
#include <linux/dma-mapping.h>
#include <rdma/iter.h>

#include "qrnic.h"

struct qrnic_pbl_page {
	__le64 *va;			/* QRNIC_PBL_ENTRIES little-endian addresses */
	dma_addr_t dma;
};

struct qrnic_pbl {
	u32 levels;
	u32 npages;			/* list pages */
	struct qrnic_pbl_page *pg;
	dma_addr_t root;
};

static void qrnic_pbl_free(struct qrnic_dev *dev, struct qrnic_pbl *pbl)
{
	u32 i;

	if (!pbl->pg)
		return;
	for (i = 0; i < pbl->npages; i++)
		if (pbl->pg[i].va)
			dma_free_coherent(&dev->pdev->dev, QRNIC_PBL_PAGE_SIZE,
					  pbl->pg[i].va, pbl->pg[i].dma);
	kvfree(pbl->pg);
	pbl->pg = NULL;
}

/*
 * Build a PBL of @levels for the @nblocks blocks of @umem.  List pages are
 * laid out leaves first: pg[0..n1) hold data-page addresses, pg[n1..n1+n2)
 * the addresses of the leaves, and so on up to the single root page.
 */
static int qrnic_pbl_build(struct qrnic_dev *dev, struct ib_umem *umem,
			   unsigned long pgsz, u32 nblocks, struct qrnic_pbl *pbl)
{
	u32 n[QRNIC_PBL_MAX_LEVELS + 1] = {}, first[QRNIC_PBL_MAX_LEVELS + 1] = {};
	struct ib_block_iter biter;
	u32 l, i, total = 0;

	pbl->levels = nblocks <= QRNIC_PBL_ENTRIES ? 1 :
		      nblocks <= QRNIC_PBL_ENTRIES * QRNIC_PBL_ENTRIES ? 2 : 3;
	n[0] = nblocks;
	for (l = 1; l <= pbl->levels; l++) {
		n[l] = DIV_ROUND_UP(n[l - 1], QRNIC_PBL_ENTRIES);
		first[l] = total;
		total += n[l];
	}
	if (WARN_ON(n[pbl->levels] != 1))
		return -EINVAL;

	pbl->npages = total;
	pbl->pg = kvcalloc(total, sizeof(*pbl->pg), GFP_KERNEL);
	if (!pbl->pg)
		return -ENOMEM;
	for (i = 0; i < total; i++) {
		pbl->pg[i].va = dma_alloc_coherent(&dev->pdev->dev, QRNIC_PBL_PAGE_SIZE,
						   &pbl->pg[i].dma, GFP_KERNEL);
		if (!pbl->pg[i].va)
			goto err;
	}

	i = 0;
	rdma_umem_for_each_dma_block(umem, &biter, pgsz) {
		if (WARN_ON(i >= nblocks))
			goto err;
		pbl->pg[i / QRNIC_PBL_ENTRIES].va[i % QRNIC_PBL_ENTRIES] =
			cpu_to_le64(rdma_block_iter_dma_address(&biter));
		i++;
	}
	if (WARN_ON(i != nblocks))
		goto err;

	for (l = 2; l <= pbl->levels; l++)
		for (i = 0; i < n[l - 1]; i++)
			pbl->pg[first[l] + i / QRNIC_PBL_ENTRIES].va[i % QRNIC_PBL_ENTRIES] =
				cpu_to_le64(pbl->pg[first[l - 1] + i].dma);
	pbl->root = pbl->pg[first[pbl->levels]].dma;
	return 0;

err:
	qrnic_pbl_free(dev, pbl);
	return -ENOMEM;
}

static_assert(IB_ACCESS_LOCAL_WRITE == QRNIC_ACCESS_LOCAL_WRITE);
static_assert(IB_ACCESS_REMOTE_WRITE == QRNIC_ACCESS_REMOTE_WRITE);
static_assert(IB_ACCESS_REMOTE_READ == QRNIC_ACCESS_REMOTE_READ);
static_assert(IB_ACCESS_REMOTE_ATOMIC == QRNIC_ACCESS_REMOTE_ATOMIC);
static_assert(IB_ACCESS_MW_BIND == QRNIC_ACCESS_MW_BIND);

/* The IB_ACCESS_* bits REG_MR takes: MW_BIND only with memory windows. */
static int qrnic_mr_access_supported(struct qrnic_dev *dev)
{
	return QRNIC_ACCESS_ALL | (qrnic_has_mw(dev) ? QRNIC_ACCESS_MW_BIND : 0);
}

/*
 * The translation of @umem for REG_MR / REREG_MR: page size, page count
 * and the page list (level 0: the only page itself; else a PBL in @pbl,
 * which the caller frees once the device has copied it).
 */
static int qrnic_mr_xlate(struct qrnic_dev *dev, struct ib_umem *umem, u64 iova,
			  u64 length, struct qrnic_cmd_reg_mr *cmd, struct qrnic_pbl *pbl)
{
	struct ib_block_iter biter;
	unsigned long pgsz;
	size_t nblocks;
	int err;

	pgsz = ib_umem_find_best_pgsz(umem,
				      le64_to_cpu(dev->attr.page_size_cap) &
				      GENMASK_ULL(QRNIC_MAX_PAGE_SHIFT, QRNIC_MIN_PAGE_SHIFT),
				      iova);
	if (!pgsz)
		return -EINVAL;
	nblocks = ib_umem_num_dma_blocks(umem, pgsz);
	if (nblocks > qrnic_attr(dev, max_mtt))
		return -ENOMEM;

	cmd->page_shift = __ffs(pgsz);
	cmd->iova = cpu_to_le64(iova);
	cmd->length = cpu_to_le64(length);
	cmd->npages = cpu_to_le32(nblocks);
	if (nblocks == 1) {
		/* level 0: pbl_addr is the (only) data page */
		rdma_umem_for_each_dma_block(umem, &biter, pgsz) {
			cmd->pbl_addr = cpu_to_le64(rdma_block_iter_dma_address(&biter));
			break;
		}
		return 0;
	}
	err = qrnic_pbl_build(dev, umem, pgsz, nblocks, pbl);
	if (err)
		return err;
	cmd->pbl_levels = pbl->levels;
	cmd->pbl_addr = cpu_to_le64(pbl->root);
	return 0;
}

struct ib_mr *qrnic_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibpd->device);
	struct qrnic_cmd_reg_mr cmd = {};
	struct qrnic_pbl pbl = {};
	struct qrnic_mr *mr;
	int err;

	if (access & ~(qrnic_mr_access_supported(dev) | IB_ACCESS_OPTIONAL))
		return ERR_PTR(-EOPNOTSUPP);
	if (!length || length > le64_to_cpu(dev->attr.max_mr_size))
		return ERR_PTR(-EINVAL);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto err_free;
	}
	cmd.pdn = cpu_to_le32(to_qpd(ibpd)->pdn);
	cmd.access = cpu_to_le32(access & QRNIC_ACCESS_MR_MASK);	/* IB_ACCESS_* = QRNIC_ACCESS_* */
	err = qrnic_mr_xlate(dev, mr->umem, iova, length, &cmd, &pbl);
	if (err)
		goto err_release;

	err = qrnic_cmd_reg_mr(dev, &cmd, &mr->key);
	qrnic_pbl_free(dev, &pbl);	/* the device copied it */
	if (err)
		goto err_release;

	mr->access = access;
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;
	return &mr->ibmr;

err_release:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * ibv_rereg_mr (IB_USER_VERBS_CMD_REREG_MR): REREG_MR (spec 6.6.19) changes
 * the MR in place and keeps its key, so this always returns NULL (the core
 * then updates ibmr->pd, iova and length itself).  A new translation pins
 * the new range and builds its page list first; the device copies it and
 * only then lets go of the old MTT range, so the old pages are unpinned
 * after the command succeeded, and a failure leaves the MR (and its pinned
 * pages) exactly as they were.  Pages pinned read-only cannot take a
 * writable access: such an access change pins the same range again,
 * writable, and hands the device that translation too (as mlx5 does).
 * DMA MRs and fast-registration MRs have no umem: EINVAL, as the device
 * would answer BAD_HANDLE for the latter.
 */
struct ib_mr *qrnic_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start, u64 length,
				  u64 iova, int access, struct ib_pd *ibpd,
				  struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibmr->device);
	struct qrnic_mr *mr = to_qmr(ibmr);
	struct qrnic_cmd_reg_mr cmd = {};
	struct ib_umem *umem = NULL;
	struct qrnic_pbl pbl = {};
	u32 change = 0;
	int err;

	if (!mr->umem)
		return ERR_PTR(-EINVAL);
	if (flags & ~(IB_MR_REREG_TRANS | IB_MR_REREG_PD | IB_MR_REREG_ACCESS))
		return ERR_PTR(-EOPNOTSUPP);
	if (flags & IB_MR_REREG_ACCESS) {
		if (access & ~(qrnic_mr_access_supported(dev) | IB_ACCESS_OPTIONAL))
			return ERR_PTR(-EOPNOTSUPP);
		change |= QRNIC_REREG_ACCESS;
		cmd.access = cpu_to_le32(access & QRNIC_ACCESS_MR_MASK);
	} else {
		access = mr->access;
	}
	if (flags & IB_MR_REREG_PD) {
		change |= QRNIC_REREG_PD;
		cmd.pdn = cpu_to_le32(to_qpd(ibpd)->pdn);
	}
	if (!(flags & IB_MR_REREG_TRANS) && ib_access_writable(access) &&
	    !mr->umem->writable) {
		start = mr->umem->address;
		length = mr->umem->length;
		iova = ibmr->iova;
		flags |= IB_MR_REREG_TRANS;
	}
	if (flags & IB_MR_REREG_TRANS) {
		if (!length || length > le64_to_cpu(dev->attr.max_mr_size))
			return ERR_PTR(-EINVAL);
		umem = ib_umem_get(ibmr->device, start, length, access);
		if (IS_ERR(umem))
			return ERR_CAST(umem);
		err = qrnic_mr_xlate(dev, umem, iova, length, &cmd, &pbl);
		if (err)
			goto err_release;
		change |= QRNIC_REREG_TRANS;
	}

	err = qrnic_cmd_rereg_mr(dev, mr->key, change, &cmd);
	qrnic_pbl_free(dev, &pbl);	/* the device copied it */
	if (err)
		goto err_release;
	atomic64_inc(&dev->frwr.rereg_mr);
	if (umem) {
		atomic64_inc(&dev->frwr.rereg_repin);
		ib_umem_release(mr->umem);	/* the device let go of it */
		mr->umem = umem;
	}
	mr->access = access;
	return NULL;

err_release:
	if (umem)
		ib_umem_release(umem);
	return ERR_PTR(err);
}

const struct ib_device_ops qrnic_rereg_ops = {
	.rereg_user_mr = qrnic_rereg_user_mr,
};

struct ib_mr *qrnic_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct qrnic_dev *dev = to_qdev(ibpd->device);
	struct qrnic_cmd_reg_mr cmd = {};
	struct qrnic_mr *mr;
	int err;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	if (le64_to_cpu(dev->attr.max_mr_size) - 1 < dma_get_required_mask(&dev->pdev->dev))
		dev_warn_once(&dev->pdev->dev,
			      "DMA MRs cover bus addresses below %#llx only (device max_mr_size); memory above is not reachable through the local DMA lkey\n",
			      le64_to_cpu(dev->attr.max_mr_size));

	cmd.pdn = cpu_to_le32(to_qpd(ibpd)->pdn);
	cmd.access = cpu_to_le32(access & QRNIC_ACCESS_ALL);
	cmd.flags = cpu_to_le32(QRNIC_MR_F_PHYS);
	cmd.page_shift = QRNIC_MIN_PAGE_SHIFT;
	cmd.iova = 0;
	cmd.length = dev->attr.max_mr_size;	/* both little endian */
	err = qrnic_cmd_reg_mr(dev, &cmd, &mr->key);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;
	return &mr->ibmr;
}

/*
 * DEREG_MR takes any key with the MR's MPT index (the consumer may have
 * changed the low 8 bits of a fast-registration MR's key).
 */
int qrnic_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibmr->device);
	struct qrnic_mr *mr = to_qmr(ibmr);
	int err;

	err = qrnic_cmd_dereg_mr(dev, mr->key);
	if (err && !qrnic_dead(dev))
		return err;	/* the device may still access the pages */
	ib_umem_release(mr->umem);
	if (mr->pages) {
		dma_free_coherent(&dev->pdev->dev, mr->pages_bytes, mr->pages, mr->pages_dma);
		atomic64_dec(&dev->frwr.fast_mrs);
	}
	kfree(mr);
	return 0;
}

/* ---- fast registration (spec 12.12) ------------------------------------------ */

static struct ib_mr *qrnic_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
				    u32 max_num_sg)
{
	struct qrnic_dev *dev = to_qdev(ibpd->device);
	struct qrnic_pd *pd = to_qpd(ibpd);
	struct qrnic_mr *mr;
	int err;

	if (!qrnic_has_mem_mgt(dev))
		return ERR_PTR(-EOPNOTSUPP);
	if (mr_type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EINVAL);
	if (!max_num_sg || max_num_sg > qrnic_attr(dev, max_fast_reg_pages))
		return ERR_PTR(-EINVAL);
	if (pd->uctx)		/* the device: kernel PDs only */
		return ERR_PTR(-EOPNOTSUPP);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->max_pages = max_num_sg;
	mr->pages_bytes = PAGE_ALIGN((size_t)max_num_sg * sizeof(*mr->pages));
	mr->pages = dma_alloc_coherent(&dev->pdev->dev, mr->pages_bytes, &mr->pages_dma,
				       GFP_KERNEL);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_free;
	}

	err = qrnic_cmd_alloc_mr(dev, pd->pdn, max_num_sg, &mr->key);
	if (err)
		goto err_free_pages;
	atomic64_inc(&dev->frwr.alloc_mr);
	atomic64_inc(&dev->frwr.fast_mrs);
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;
	return &mr->ibmr;

err_free_pages:
	dma_free_coherent(&dev->pdev->dev, mr->pages_bytes, mr->pages, mr->pages_dma);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

static int qrnic_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct qrnic_mr *mr = to_qmr(ibmr);

	if (unlikely(mr->npages >= mr->max_pages))
		return -ENOMEM;
	mr->pages[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

/*
 * The page list for the next REG_MR of this MR.  The core set
 * ibmr->page_size; ib_sg_to_pages() sets iova and length, and maps as many
 * SG entries as fit max_pages pages of that size (the return value).
 */
static int qrnic_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
			   unsigned int *sg_offset)
{
	struct qrnic_dev *dev = to_qdev(ibmr->device);
	struct qrnic_mr *mr = to_qmr(ibmr);
	unsigned int shift;

	if (!mr->pages)
		return -EINVAL;
	shift = ilog2(ibmr->page_size);
	if (!is_power_of_2(ibmr->page_size) || shift < QRNIC_MIN_PAGE_SHIFT ||
	    shift > QRNIC_MAX_PAGE_SHIFT || !(le64_to_cpu(dev->attr.page_size_cap) & ibmr->page_size))
		return -EINVAL;
	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, qrnic_set_page);
}

const struct ib_device_ops qrnic_mem_mgt_ops = {
	.alloc_mr = qrnic_alloc_mr,
	.map_mr_sg = qrnic_map_mr_sg,
};

/* ---- memory windows (spec 12.13) --------------------------------------------- */

static int qrnic_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct qrnic_dev *dev = to_qdev(ibmw->device);
	struct qrnic_mw *mw = to_qmw(ibmw);
	u8 type;
	int err;

	if (!qrnic_has_mw(dev))
		return -EOPNOTSUPP;
	switch (ibmw->type) {
	case IB_MW_TYPE_1:
		type = QRNIC_MW_TYPE_1;
		break;
	case IB_MW_TYPE_2:
		type = QRNIC_MW_TYPE_2;
		break;
	default:
		return -EINVAL;
	}
	err = qrnic_cmd_alloc_mw(dev, to_qpd(ibmw->pd)->pdn, type, &mw->key);
	if (err)
		return err;
	ibmw->rkey = mw->key;
	return 0;
}

/* DEREG_MR takes any key with the window's MPT index, bound or not. */
static int qrnic_dealloc_mw(struct ib_mw *ibmw)
{
	struct qrnic_dev *dev = to_qdev(ibmw->device);
	int err;

	err = qrnic_cmd_dereg_mr(dev, to_qmw(ibmw)->key);
	if (err && !qrnic_dead(dev))
		return err;
	return 0;
}

const struct ib_device_ops qrnic_mw_ops = {
	.alloc_mw = qrnic_alloc_mw,
	.dealloc_mw = qrnic_dealloc_mw,

	INIT_RDMA_OBJ_SIZE(ib_mw, qrnic_mw, ibmw),
};
