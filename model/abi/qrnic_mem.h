/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qrnic ABI: memory registration.  The driver describes an MR's pages with
 * a page buffer list (PBL) in host memory; REG_MR copies it once into the
 * device's memory translation table (MTT) and fills an entry of the memory
 * protection table (MPT).  After REG_MR completes the device never reads
 * the PBL again.
 */
#ifndef QRNIC_MEM_H
#define QRNIC_MEM_H

#include "qrnic_abi_types.h"

/*
 * Keys: [31:8] MPT index, [7:0] tag.  The device chooses the tag and
 * changes it every time an MPT slot is reused, so a stale key from a
 * deregistered MR never matches.
 */
#define QRNIC_KEY_TAG_BITS		8
#define QRNIC_KEY_INDEX(key)		((key) >> QRNIC_KEY_TAG_BITS)
#define QRNIC_KEY_TAG(key)		((key) & 0xffu)
#define QRNIC_MAKE_KEY(index, tag)	(((index) << QRNIC_KEY_TAG_BITS) | ((tag) & 0xffu))

/*
 * PBL: pages of 512 little-endian 64-bit bus addresses, each list page
 * 4 KiB and 4 KiB aligned.
 *   pbl_levels = 0: no list; the MR's pages are contiguous from pbl_addr.
 *   pbl_levels = 1: pbl_addr is one list page of data page addresses
 *                   (npages <= 512).
 *   pbl_levels = 2: pbl_addr is a page of list-page addresses
 *                   (npages <= 512 * 512 = 262144: 1 GiB of 4 KiB pages).
 *   pbl_levels = 3: one more level (npages <= 2^27).
 * Data pages are 1 << page_shift bytes (12..30) and aligned to that size.
 * Byte iova of the MR lives at page[0] + (iova & (page_size - 1)).
 */
#define QRNIC_PBL_PAGE_SIZE		4096
#define QRNIC_PBL_ENTRIES		512
#define QRNIC_PBL_MAX_LEVELS		3
#define QRNIC_MIN_PAGE_SHIFT		12
#define QRNIC_MAX_PAGE_SHIFT		30

/* MPT entry (device-internal, reported by QUERY_MR). */
#define QRNIC_MPT_VALID			(1u << 0)
#define QRNIC_MPT_PHYS			(1u << 1)	/* DMA MR: iova is the bus address */
#define QRNIC_MPT_FAST			(1u << 2)	/* fast-registration MR (ALLOC_MR): the
							 * slot is held; VALID says whether the
							 * key works (REG_MR WQE sets, LOCAL_INV
							 * and remote invalidation clear it) */
#define QRNIC_MPT_MW			(1u << 3)	/* memory window (ALLOC_MW): VALID
							 * when bound (spec 12.13) */
#define QRNIC_MPT_MW_TYPE2		(1u << 4)	/* with MW: a type 2 window */
/* A fast-registration MR holds at most this many pages (ALLOC_MR max_pages,
 * struct qrnic_device_attr max_fast_reg_pages). */
#define QRNIC_MAX_FAST_REG_PAGES	4096

struct qrnic_mpt_entry {
	qrnic_le32 flags;	/* QRNIC_MPT_* */
	qrnic_le32 key;		/* lkey == rkey */
	qrnic_le32 pdn;
	qrnic_le32 access;	/* QRNIC_ACCESS_* */
	qrnic_le64 iova;
	qrnic_le64 length;
	qrnic_le32 mtt_base;	/* first MTT entry */
	qrnic_le32 npages;	/* MTT entries in use (FAST: of the registration) */
	uint8_t    page_shift;
	uint8_t    rsvd[3];
	qrnic_le32 max_pages;	/* FAST: MTT entries held, from ALLOC_MR; MW: the
				 * MPT index of the MR it is bound to */
};
QRNIC_ASSERT_SIZE(struct qrnic_mpt_entry, 48);

#endif
