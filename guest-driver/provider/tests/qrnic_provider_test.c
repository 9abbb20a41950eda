// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The whole provider (qrnic.c, verbs.c) against the device model, with a
 * fake kernel instead of libibverbs + the qrnic kernel driver.
 *
 * This file defines the libibverbs symbols the provider imports
 * (ibv_cmd_*, verbs_* ...).  They create the objects on two simulated
 * devices through the admin queue of tests/harness, return the udata of
 * model/abi/qrnic_uverbs.h, and hand out mmap keys that are offsets into a
 * memfd, which stands in for the uverbs cmd_fd: the provider mmap()s its
 * rings and doorbell page from it exactly as from the real cmd_fd.
 *
 * The simulated device DMAs from its own memory, so the fake kernel mirrors
 * the rings: before the device runs, SQ/RQ/SRQ rings and CQ dbrecs are
 * copied from the memfd into device memory and the doorbells the provider
 * wrote into its doorbell page are forwarded to the device (and cleared);
 * after the device ran, CQ rings and SRQ records are copied back.
 * Everything else, posting WQEs,
 * ringing, polling with the owner bit, freeing queue slots from
 * completions or from an SRQ's record, arming, resetting indexes, is the
 * provider's own code,
 * called through the verbs_context_ops it registers.
 *
 * Closes with "N passed, N failed"; exit 1 on any failure.
 */
#define _GNU_SOURCE
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "qrnic.h"

static int passed, failed;
static hx_world *w;

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (cond) {                                                  \
			passed++;                                            \
		} else {                                                     \
			failed++;                                            \
			printf("FAIL %s:%d: %s [%s]\n", __FILE__, __LINE__,  \
			       #cond, hx_world_error(w));                    \
		}                                                            \
	} while (0)

/* ======================================================================= */
/* fake kernel                                                             */
/* ======================================================================= */

#define FK_MEMFD_SIZE	(64ull << 20)
#define FK_MAX_REGIONS	64
#define PAGE		4096ull

/* FK_CQ: a CQ's first ring and its dbrec; FK_CQRING: the ring of its
 * last resize (CQEs only, as the kernel driver does it) */
enum fk_kind { FK_DB, FK_CQ, FK_WQ, FK_SRQ, FK_CQRING };

struct fk_region {
	bool used;
	enum fk_kind kind;
	uint64_t off;		/* mmap key = offset in the memfd */
	uint64_t size;
	uint64_t bus;		/* device memory (FK_CQ, FK_WQ, FK_SRQ) */
	uint64_t ring_size;	/* FK_CQ: CQEs, FK_SRQ: WQEs; the dbrec follows */
	uint32_t uctx;		/* FK_DB */
	uint32_t handle;	/* cqn / qpn / srqn */
	uint32_t cqe_size;	/* FK_CQ: 32, or 64 with timestamps */
};

struct fk_dev {
	int d;
	int fd;			/* the "cmd_fd" */
	uint8_t *map;		/* our own view of the memfd */
	uint64_t next_off;
	uint32_t eqn;
	struct fk_region reg[FK_MAX_REGIONS];
};

static struct fk_dev fk[2];
static const struct verbs_device_ops *registered_ops;
static struct verbs_context_ops ctx_ops;	/* as set by verbs_set_ops */
static bool fk_no_dbrec;			/* next CQ without a dbrec */
/* next context is a kernel one: uctx 0, so its PD, CQs and QPs are kernel
 * objects (fast registration is for kernel PDs only) and its doorbells go
 * to page 0, the kernel's */
static bool fk_kernel_ctx;

static struct fk_dev *fk_by_fd(int fd)
{
	return fk[0].fd == fd ? &fk[0] : &fk[1];
}

static struct fk_dev *fk_of(struct ibv_context *c)
{
	return fk_by_fd(c->cmd_fd);
}

/* QPs get RQ producer records (ABI 1.10), as from the qrnic kernel driver */
static bool fk_rq_dbrec = true;
/* >= 0: the next QPs' rq_dbrec_offset, whatever it is (a broken kernel) */
static int64_t fk_rq_dbrec_off = -1;
/* QPs get SQ records (ABI 1.11), as from the qrnic kernel driver */
static bool fk_sq_dbrec = true;
/* >= 0: the next QPs' sq_dbrec_offset, whatever it is (a broken kernel) */
static int64_t fk_sq_dbrec_off = -1;

/* regions of a kind in use: what the fake kernel holds */
static int fk_used(const struct fk_dev *f, enum fk_kind kind)
{
	int i, n = 0;

	for (i = 0; i < FK_MAX_REGIONS; i++)
		n += f->reg[i].used && f->reg[i].kind == kind;
	return n;
}

static struct fk_region *fk_alloc(struct fk_dev *f, enum fk_kind kind, uint64_t size,
				  bool device_mem)
{
	int i;

	size = (size + PAGE - 1) & ~(PAGE - 1);
	for (i = 0; i < FK_MAX_REGIONS; i++) {
		struct fk_region *r = &f->reg[i];

		if (r->used)
			continue;
		memset(r, 0, sizeof(*r));
		r->used = true;
		r->kind = kind;
		r->off = f->next_off;
		r->size = size;
		f->next_off += size;
		memset(f->map + r->off, 0, size);
		if (device_mem) {
			r->bus = hx_mem_alloc(w, f->d, size, PAGE);
			if (!r->bus)
				abort();
			{
				void *z = calloc(1, size);

				hx_mem_write(w, f->d, r->bus, z, size);
				free(z);
			}
		}
		return r;
	}
	abort();
}

static struct fk_region *fk_find(struct fk_dev *f, enum fk_kind kind, uint32_t handle)
{
	int i;

	for (i = 0; i < FK_MAX_REGIONS; i++)
		if (f->reg[i].used && f->reg[i].kind == kind && f->reg[i].handle == handle)
			return &f->reg[i];
	return NULL;
}

/* host -> device: rings, dbrecs, then the doorbells */
static void fk_to_dev(struct fk_dev *f)
{
	int i, j;

	for (i = 0; i < FK_MAX_REGIONS; i++) {
		struct fk_region *r = &f->reg[i];

		if (!r->used)
			continue;
		if (r->kind == FK_WQ)
			hx_mem_write(w, f->d, r->bus, f->map + r->off, r->size);
		else if (r->kind == FK_SRQ)	/* the record is the device's */
			hx_mem_write(w, f->d, r->bus, f->map + r->off, r->ring_size);
		else if (r->kind == FK_CQ)
			hx_mem_write(w, f->d, r->bus + r->ring_size,
				     f->map + r->off + r->ring_size, 4);
	}
	for (i = 0; i < FK_MAX_REGIONS; i++) {
		struct fk_region *r = &f->reg[i];

		if (!r->used || r->kind != FK_DB)
			continue;
		for (j = 0; j < 4; j++) {	/* SQ, RQ, CQ, SRQ */
			uint64_t *db = (uint64_t *)(f->map + r->off) + j;

			if (*db) {
				hx_db_write(w, f->d, (uint64_t)r->uctx * QRNIC_DB_PAGE_SIZE + 8 * j,
					    le64toh(*db), 8);
				*db = 0;
			}
		}
	}
}

/* device -> host: CQ rings, SRQ consumer records, and the device clock as
 * the doorbell page's QRNIC_DB_CLOCK shows it (spec 3.2: a real page reads
 * it from the device; the memfd page gets the value as of this run) */
static void fk_from_dev(struct fk_dev *f)
{
	int i;

	for (i = 0; i < FK_MAX_REGIONS; i++) {
		struct fk_region *r = &f->reg[i];

		if (r->used && r->kind == FK_DB) {
			uint64_t clk = hx_db_read(w, f->d, (uint64_t)r->uctx * QRNIC_DB_PAGE_SIZE +
						  QRNIC_DB_CLOCK, 8);

			clk = htole64(clk);
			memcpy(f->map + r->off + QRNIC_DB_CLOCK, &clk, sizeof(clk));
		}

		if (r->used && (r->kind == FK_CQ || r->kind == FK_CQRING))
			hx_mem_read(w, f->d, r->bus, f->map + r->off, r->ring_size);
		else if (r->used && r->kind == FK_SRQ)
			hx_mem_read(w, f->d, r->bus + r->ring_size,
				    f->map + r->off + r->ring_size, 4);
	}
}

static void fk_run(void)
{
	fk_to_dev(&fk[0]);
	fk_to_dev(&fk[1]);
	CHECK(hx_run(w, 2000000000ull, 10000000) == HX_RUN_IDLE);
	fk_from_dev(&fk[0]);
	fk_from_dev(&fk[1]);
}

static unsigned int log2_up(uint32_t n)
{
	unsigned int l = 0;

	while ((1u << l) < n)
		l++;
	return l;
}

static int admin(int d, struct qrnic_aq_cmd *c, uint8_t opcode, uint32_t *result)
{
	struct qrnic_aq_cqe cqe;
	int rc;

	c->hdr.opcode = opcode;
	rc = hx_admin(w, d, c, &cqe, 0);
	if (rc)
		return EINVAL;
	if (result)
		*result = cqe.result[0];
	return 0;
}

static void gid_of(int d, uint8_t *gid)
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	gid[12] = 10;
	gid[15] = (uint8_t)(d + 1);
}

/* ---- libibverbs symbols the provider imports ---------------------------- */

void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	registered_ops = ops;
}

void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
	va_list ap;

	(void)ctx;
	if (level > VERBS_LOG_WARN)
		return;
	va_start(ap, fmt);
	printf("  [provider] ");
	vprintf(fmt, ap);
	va_end(ap);
}

void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id)
{
	uint8_t *p = calloc(1, alloc_size);
	struct verbs_context *vc = (struct verbs_context *)(p + (uintptr_t)context_offset);

	(void)driver_id;
	vc->context.device = device;
	vc->context.cmd_fd = cmd_fd;
	vc->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	vc->sz = sizeof(*vc);
	return p;
}

void verbs_uninit_context(struct verbs_context *context)
{
	(void)context;
}

void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops)
{
	(void)vctx;
	ctx_ops = *ops;
}

int ibv_cmd_get_context(struct verbs_context *context, struct ibv_get_context *cmd,
			size_t cmd_size, struct ib_uverbs_get_context_resp *resp,
			size_t resp_size)
{
	struct uqrnic_alloc_ucontext_resp *r = (void *)resp;
	struct fk_dev *f = fk_by_fd(context->context.cmd_fd);
	struct fk_region *db;
	int64_t uctx;

	(void)cmd;
	(void)cmd_size;
	if (resp_size != sizeof(*r))
		return EINVAL;
	uctx = fk_kernel_ctx ? 0 : hx_alloc_uctx(w, f->d);
	if (uctx < 0 || (!uctx && !fk_kernel_ctx))
		return ENOMEM;
	db = fk_alloc(f, FK_DB, PAGE, false);
	db->uctx = (uint32_t)uctx;
	db->handle = (uint32_t)uctx;
	memset(r, 0, sizeof(*r));
	r->ibv_resp.num_comp_vectors = 1;
	r->drv_payload.uctx = (uint32_t)uctx;
	r->drv_payload.max_inline = 448;
	r->drv_payload.db_mmap_key = db->off;
	r->drv_payload.max_sge = QRNIC_MAX_SGE;
	r->drv_payload.max_send_wqe_shift = QRNIC_MAX_SEND_WQE_SHIFT;
	r->drv_payload.max_recv_wqe_shift = QRNIC_MAX_RECV_WQE_SHIFT;
	context->context.num_comp_vectors = 1;
	return 0;
}

int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size)
{
	struct qrnic_device_attr da = {};

	(void)input;
	memset(attr, 0, attr_size);
	/* the kernel driver's query_device: the clock from QUERY_DEVICE */
	if (hx_query(w, fk_of(context)->d, QRNIC_CMD_QUERY_DEVICE, 0, &da, sizeof(da)) == 0 &&
	    (da.caps & QRNIC_CAP_CQE_TS)) {
		attr->hca_core_clock = da.hca_core_clock;
		attr->completion_timestamp_mask = da.timestamp_mask;
	}
	attr->orig_attr.max_qp = 1024;
	attr->orig_attr.vendor_id = QRNIC_PCI_VENDOR_ID;
	attr->orig_attr.vendor_part_id = QRNIC_PCI_DEVICE_ID;
	if (resp) {
		memset(resp, 0, *resp_size);
		resp->base.fw_ver = 0x00010000;
	}
	return 0;
}

int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr, struct ibv_query_port *cmd,
		       size_t cmd_size)
{
	(void)context;
	(void)cmd;
	(void)cmd_size;
	if (port_num != 1)
		return EINVAL;
	memset(port_attr, 0, sizeof(*port_attr));
	port_attr->state = IBV_PORT_ACTIVE;
	port_attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

static uint32_t fk_uctx(struct ibv_context *c)
{
	return to_qctx(c)->uctx;
}

int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size)
{
	struct uqrnic_alloc_pd_resp *r = (void *)resp;
	int64_t pdn = hx_create_pd(w, fk_of(context)->d, fk_uctx(context));

	(void)cmd;
	(void)cmd_size;
	if (pdn <= 0 || resp_size != sizeof(*r))
		return EINVAL;
	pd->context = context;
	pd->handle = (uint32_t)pdn;
	r->drv_payload.pdn = (uint32_t)pdn;
	return 0;
}

int ibv_cmd_dealloc_pd(struct ibv_pd *pd)
{
	return hx_destroy(w, fk_of(pd->context)->d, QRNIC_CMD_DESTROY_PD, pd->handle) ? EBUSY : 0;
}

int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
		   int access, struct verbs_mr *vmr, struct ibv_reg_mr *cmd,
		   size_t cmd_size, struct ib_uverbs_reg_mr_resp *resp, size_t resp_size)
{
	/* IBV_ACCESS_MW_BIND passes through, as in the kernel driver */
	int64_t key = hx_reg_mr(w, fk_of(pd->context)->d, pd->handle,
				(uint32_t)access & QRNIC_ACCESS_MR_MASK, hca_va, length, 12, -1, 0);

	(void)cmd;
	(void)cmd_size;
	(void)resp;
	(void)resp_size;
	if (key <= 0)
		return EINVAL;
	vmr->ibv_mr.context = pd->context;
	vmr->ibv_mr.pd = pd;
	vmr->ibv_mr.addr = addr;
	vmr->ibv_mr.length = length;
	vmr->ibv_mr.handle = (uint32_t)key;
	vmr->ibv_mr.lkey = vmr->ibv_mr.rkey = (uint32_t)key;
	return 0;
}

int ibv_cmd_dereg_mr(struct verbs_mr *vmr)
{
	return hx_destroy(w, fk_of(vmr->ibv_mr.context)->d, QRNIC_CMD_DEREG_MR,
			  vmr->ibv_mr.handle) ? EINVAL : 0;
}

/*
 * REREG_MR as the kernel driver sends it (qrnic_rereg_user_mr, spec
 * 6.6.19): the PD and access named by flags; a new translation is a fresh
 * contiguous range of the fake host's memory (level 0) whose bus address
 * the test finds in fk_rereg_bus.
 */
static uint64_t fk_rereg_bus;

int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr, size_t length,
		     uint64_t hca_va, int access, struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz)
{
	int d = fk_of(vmr->ibv_mr.context)->d;
	struct qrnic_aq_cmd c;
	uint32_t key;

	(void)addr;
	(void)cmd;
	(void)cmd_sz;
	(void)resp_sz;
	memset(&c, 0, sizeof(c));
	c.u.rereg_mr.key = vmr->ibv_mr.handle;
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		c.u.rereg_mr.change |= QRNIC_REREG_PD;
		c.u.rereg_mr.reg.pdn = pd->handle;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
		c.u.rereg_mr.change |= QRNIC_REREG_ACCESS;
		c.u.rereg_mr.reg.access = (uint32_t)access & QRNIC_ACCESS_MR_MASK;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		uint64_t npages = ((hca_va & 4095) + length + 4095) >> 12;
		uint64_t bus = hx_mem_alloc(w, d, npages << 12, 4096);

		if (!bus)
			return ENOMEM;
		c.u.rereg_mr.change |= QRNIC_REREG_TRANS;
		c.u.rereg_mr.reg.page_shift = 12;
		c.u.rereg_mr.reg.iova = hca_va;
		c.u.rereg_mr.reg.length = length;
		c.u.rereg_mr.reg.pbl_addr = bus;
		c.u.rereg_mr.reg.npages = npages;
		fk_rereg_bus = bus;
	}
	if (admin(d, &c, QRNIC_CMD_REREG_MR, &key))
		return EINVAL;
	/* what libibverbs' ibv_cmd_rereg_mr does with the answer */
	resp->lkey = resp->rkey = key;
	vmr->ibv_mr.lkey = vmr->ibv_mr.rkey = key;
	if (flags & IBV_REREG_MR_CHANGE_PD)
		vmr->ibv_mr.context = pd->context;
	return 0;
}

/* CREATE_CQ as the kernel driver does it; fills the driver udata dr.
 * flags: QRNIC_CQ_F_TIMESTAMP for IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION. */
static int fk_create_cq(struct ibv_context *context, int cqe, struct ibv_cq *cq,
			struct qrnic_create_cq_resp *dr, uint8_t flags)
{
	struct fk_dev *f = fk_of(context);
	unsigned int log = log2_up((uint32_t)cqe);
	struct qrnic_aq_cmd c;
	struct fk_region *reg;
	uint64_t ring = (uint64_t)QRNIC_CQ_CQE_SIZE(flags) << (log ? log : 1);
	uint32_t cqn;

	if (!log)
		log = 1;
	reg = fk_alloc(f, FK_CQ, ring + 4, true);
	reg->ring_size = ring;
	reg->cqe_size = QRNIC_CQ_CQE_SIZE(flags);
	memset(&c, 0, sizeof(c));
	c.u.create_cq.uctx = fk_uctx(context);
	c.u.create_cq.eqn = f->eqn;
	c.u.create_cq.log_depth = (uint8_t)log;
	c.u.create_cq.flags = flags;
	c.u.create_cq.ring_addr = reg->bus;
	c.u.create_cq.dbrec_addr = fk_no_dbrec ? 0 : reg->bus + ring;
	if (admin(f->d, &c, QRNIC_CMD_CREATE_CQ, &cqn)) {
		reg->used = false;
		return EINVAL;
	}
	reg->handle = cqn;
	cq->context = context;
	cq->cqe = (1 << log);
	cq->handle = cqn;
	memset(dr, 0, sizeof(*dr));
	dr->cqn = cqn;
	dr->log_depth = log;
	dr->mmap_key = reg->off;
	dr->mmap_size = reg->size;
	dr->dbrec_offset = fk_no_dbrec ? 0 : (uint32_t)ring;
	dr->cqe_size = reg->cqe_size;
	return 0;
}

int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd, size_t cmd_size,
		      struct ib_uverbs_create_cq_resp *resp, size_t resp_size)
{
	struct uqrnic_create_cq_resp *r = (void *)resp;
	int err;

	(void)channel;
	(void)comp_vector;
	(void)cmd;
	(void)cmd_size;
	if (resp_size != sizeof(*r))
		return EINVAL;
	memset(r, 0, sizeof(*r));
	err = fk_create_cq(context, cqe, cq, &r->drv_payload, 0);
	if (!err)
		r->ibv_resp.cqe = (uint32_t)cq->cqe;
	return err;
}

/* the extended command: libibverbs' comp_mask check, the kernel driver's
 * refusal of CQ flags (qrnic_cq.c) */
static unsigned int fk_cq_ex_cmds;		/* extended CREATE_CQs seen */

int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size, struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags)
{
	struct uqrnic_create_cq_ex_resp *r = (void *)resp;
	int err;

	(void)cmd;
	(void)cmd_size;
	(void)cmd_flags;
	if (resp_size != sizeof(*r))
		return EINVAL;
	if (cq_attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					     IBV_CQ_INIT_ATTR_MASK_PD))
		return EOPNOTSUPP;
	if ((cq_attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (cq_attr->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN))
		return EOPNOTSUPP;
	fk_cq_ex_cmds++;
	memset(r, 0, sizeof(*r));
	/* libibverbs turns either timestamp wc_flag into
	 * IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION, the kernel driver that
	 * into QRNIC_CQ_F_TIMESTAMP */
	err = fk_create_cq(context, (int)cq_attr->cqe, &cq->cq, &r->drv_payload,
			   (cq_attr->wc_flags & (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
						 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)) ?
			   QRNIC_CQ_F_TIMESTAMP : 0);
	if (!err)
		r->ibv_resp.base.cqe = (uint32_t)cq->cq.cqe;
	return err;
}

int ibv_cmd_destroy_cq(struct ibv_cq *cq)
{
	struct fk_dev *f = fk_of(cq->context);
	struct fk_region *reg = fk_find(f, FK_CQ, cq->handle);
	struct fk_region *rr = fk_find(f, FK_CQRING, cq->handle);

	if (hx_destroy(w, f->d, QRNIC_CMD_DESTROY_CQ, cq->handle))
		return EBUSY;
	if (reg)
		reg->used = false;
	if (rr)
		rr->used = false;
	return 0;
}

/* RESIZE_CQ as the kernel driver does it (qrnic_cq.c): a new ring of CQEs
 * only, the dbrec stays in the first region.  The provider's dbrec and
 * doorbells reach the device first (shared memory on a real host), and the
 * device's 0 in the dbrec comes back after. */
static unsigned int fk_resizes;

int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size)
{
	struct uqrnic_resize_cq_resp *r = (void *)resp;
	struct fk_dev *f = fk_of(cq->context);
	struct fk_region *first = fk_find(f, FK_CQ, cq->handle);
	struct fk_region *old = fk_find(f, FK_CQRING, cq->handle);
	unsigned int log = log2_up((uint32_t)cqe);
	struct fk_region *reg;
	struct qrnic_aq_cmd c;
	uint64_t ring;

	(void)cmd;
	(void)cmd_size;
	if (resp_size != sizeof(*r) || cqe < 1 || !first)
		return EINVAL;
	if (!log)
		log = 1;
	ring = (uint64_t)first->cqe_size << log;	/* the CQ's CQE size */
	fk_to_dev(f);
	reg = fk_alloc(f, FK_CQRING, ring, true);
	reg->ring_size = ring;
	memset(&c, 0, sizeof(c));
	c.u.resize_cq.cqn = cq->handle;
	c.u.resize_cq.log_depth = (uint8_t)log;
	c.u.resize_cq.ring_addr = reg->bus;
	if (admin(f->d, &c, QRNIC_CMD_RESIZE_CQ, NULL)) {
		reg->used = false;
		return EINVAL;
	}
	fk_resizes++;
	reg->handle = cq->handle;
	if (old)
		old->used = false;
	hx_mem_read(w, f->d, first->bus + first->ring_size,
		    f->map + first->off + first->ring_size, 4);
	hx_mem_read(w, f->d, reg->bus, f->map + reg->off, ring);
	cq->cqe = 1 << log;
	memset(r, 0, sizeof(*r));
	r->ibv_resp.cqe = (uint32_t)cq->cqe;
	r->drv_payload.log_depth = log;
	r->drv_payload.cqe_size = first->cqe_size;
	r->drv_payload.mmap_key = reg->off;
	r->drv_payload.mmap_size = reg->size;
	return 0;
}

static struct { uint32_t cqn, count, period, mask; } fk_last_modify;

int ibv_cmd_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
		      struct ibv_modify_cq *cmd, size_t cmd_size)
{
	(void)cmd;
	(void)cmd_size;
	fk_last_modify.cqn = cq->handle;
	fk_last_modify.mask = attr->attr_mask;
	fk_last_modify.count = attr->moderate.cq_count;
	fk_last_modify.period = attr->moderate.cq_period;
	/* libibverbs' own check; the kernel: IB_CQ_MODERATE only */
	if (attr->attr_mask != IBV_CQ_ATTR_MODERATE)
		return EINVAL;
	return hx_modify_cq(w, fk_of(cq->context)->d, cq->handle, attr->moderate.cq_count,
			    attr->moderate.cq_period) ? EINVAL : 0;
}

/* ALLOC_MW / DEREG_MR as the kernel driver sends them (qrnic_mr.c) */
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type, struct ibv_mw *mw,
		     struct ibv_alloc_mw *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size)
{
	struct qrnic_aq_cmd c;
	uint32_t rkey;

	(void)cmd;
	(void)cmd_size;
	(void)resp;
	(void)resp_size;
	memset(&c, 0, sizeof(c));
	c.u.alloc_mw.pdn = pd->handle;
	c.u.alloc_mw.type = type == IBV_MW_TYPE_1 ? QRNIC_MW_TYPE_1 : QRNIC_MW_TYPE_2;
	if (admin(fk_of(pd->context)->d, &c, QRNIC_CMD_ALLOC_MW, &rkey))
		return EINVAL;
	mw->context = pd->context;
	mw->pd = pd;
	mw->rkey = rkey;
	mw->handle = rkey;
	mw->type = type;
	return 0;
}

int ibv_cmd_dealloc_mw(struct ibv_mw *mw)
{
	return hx_destroy(w, fk_of(mw->context)->d, QRNIC_CMD_DEREG_MR, mw->handle) ? EINVAL : 0;
}

static unsigned int clampu(unsigned int v, unsigned int lo, unsigned int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The provider creates every QP with the (non-extended) CREATE_QP command
 * through ibv_cmd_create_qp_ex; attr->pd may be a parent domain, whose
 * handle is its protection domain's. */
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *vqp,
			 struct ibv_qp_init_attr_ex *attr, struct ibv_create_qp *cmd,
			 size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size)
{
	struct uqrnic_create_qp_resp *r = (void *)resp;
	struct ibv_qp *qp = &vqp->qp;
	struct ibv_pd *pd = attr->pd;
	struct fk_dev *f = fk_of(context);
	unsigned int sq_log, sq_shift, rq_log = 0, rq_shift = 0;
	struct fk_region *sq, *rq = NULL;
	struct qrnic_aq_cmd c;
	uint32_t qpn;

	(void)cmd;
	(void)cmd_size;
	/* libibverbs' own check */
	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
					  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return EINVAL;
	if (attr->qp_type == IBV_QPT_XRC_RECV) {
		/* as ib_core + the driver: a kernel XRC TGT QP of the domain,
		 * no driver response */
		if (resp_size != sizeof(*resp) || !attr->xrcd)
			return EINVAL;
		memset(&c, 0, sizeof(c));
		c.u.create_qp.qp_type = QRNIC_QPT_XRC_TGT;
		c.u.create_qp.xrcd = container_of(attr->xrcd, struct verbs_xrcd, xrcd)->handle;
		if (admin(f->d, &c, QRNIC_CMD_CREATE_QP, &qpn))
			return EINVAL;
		memset(qp, 0, sizeof(*qp));
		qp->context = context;
		qp->qp_type = attr->qp_type;
		qp->state = IBV_QPS_RESET;
		qp->qp_num = qp->handle = qpn;
		vqp->comp_mask = VERBS_QP_XRCD;
		vqp->xrcd = container_of(attr->xrcd, struct verbs_xrcd, xrcd);
		memset(resp, 0, resp_size);
		resp->qpn = qpn;
		return 0;
	}
	if (resp_size != sizeof(*r))
		return EINVAL;
	sq_log = clampu(log2_up(attr->cap.max_send_wr), 1, QRNIC_MAX_QUEUE_LOG);
	sq_shift = clampu(log2_up(64 + (16 * attr->cap.max_send_sge > attr->cap.max_inline_data ?
					16 * attr->cap.max_send_sge : attr->cap.max_inline_data)),
			  QRNIC_MIN_WQE_SHIFT, QRNIC_MAX_SEND_WQE_SHIFT);
	if (attr->cap.max_recv_wr && !attr->srq) {	/* an SRQ QP has no RQ */
		rq_log = clampu(log2_up(attr->cap.max_recv_wr), 1, QRNIC_MAX_QUEUE_LOG);
		rq_shift = clampu(log2_up(16 + 16 * attr->cap.max_recv_sge),
				  QRNIC_MIN_RECV_WQE_SHIFT, QRNIC_MAX_RECV_WQE_SHIFT);
	}
	/* the SQ record after the WQEs (ABI 1.11; fk_sq_dbrec false: none) */
	sq = fk_alloc(f, FK_WQ, ((1ull << sq_log) << sq_shift) + (fk_sq_dbrec ? 64 : 0), true);
	/* an RQ producer record after the WQEs, as the qrnic kernel driver
	 * gives on an ABI 1.10 device (fk_rq_dbrec false: an older one) */
	if (rq_log)
		rq = fk_alloc(f, FK_WQ, ((1ull << rq_log) << rq_shift) + (fk_rq_dbrec ? 64 : 0),
			      true);

	memset(&c, 0, sizeof(c));
	c.u.create_qp.uctx = fk_uctx(pd->context);
	c.u.create_qp.pdn = pd->handle;
	c.u.create_qp.send_cqn = attr->send_cq->handle;
	c.u.create_qp.recv_cqn = attr->recv_cq ? attr->recv_cq->handle : 0;
	c.u.create_qp.qp_type = attr->qp_type == IBV_QPT_UD ? QRNIC_QPT_UD :
				attr->qp_type == IBV_QPT_XRC_SEND ? QRNIC_QPT_XRC_INI : QRNIC_QPT_RC;
	c.u.create_qp.sq_log_depth = (uint8_t)sq_log;
	c.u.create_qp.sq_wqe_shift = (uint8_t)sq_shift;
	c.u.create_qp.rq_log_depth = (uint8_t)rq_log;
	c.u.create_qp.rq_wqe_shift = (uint8_t)rq_shift;
	c.u.create_qp.flags = attr->sq_sig_all ? QRNIC_QP_F_SQ_SIG_ALL : 0;
	c.u.create_qp.srqn = attr->srq ? attr->srq->handle : 0;
	c.u.create_qp.sq_addr = sq->bus;
	c.u.create_qp.rq_addr = rq ? rq->bus : 0;
	c.u.create_qp.rq_dbrec_addr = rq && fk_rq_dbrec ? rq->bus + ((1ull << rq_log) << rq_shift) : 0;
	c.u.create_qp.sq_dbrec_addr = fk_sq_dbrec ? sq->bus + ((1ull << sq_log) << sq_shift) : 0;
	if (admin(f->d, &c, QRNIC_CMD_CREATE_QP, &qpn)) {
		sq->used = false;
		if (rq)
			rq->used = false;
		return EINVAL;
	}
	sq->handle = qpn;
	if (rq)
		rq->handle = qpn | 0x80000000u;

	qp->context = context;
	qp->qp_context = attr->qp_context;
	vqp->comp_mask = 0;
	qp->pd = pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->qp_type = attr->qp_type;
	qp->state = IBV_QPS_RESET;
	qp->qp_num = qpn;
	qp->handle = qpn;
	memset(r, 0, sizeof(*r));
	r->ibv_resp.qpn = qpn;
	r->drv_payload.qpn = qpn;
	r->drv_payload.sq_log_depth = (uint8_t)sq_log;
	r->drv_payload.sq_wqe_shift = (uint8_t)sq_shift;
	r->drv_payload.rq_log_depth = (uint8_t)rq_log;
	r->drv_payload.rq_wqe_shift = (uint8_t)rq_shift;
	r->drv_payload.sq_mmap_key = sq->off;
	r->drv_payload.sq_mmap_size = sq->size;
	r->drv_payload.rq_mmap_key = rq ? rq->off : 0;
	r->drv_payload.rq_mmap_size = rq ? rq->size : 0;
	r->drv_payload.max_inline = (1u << sq_shift) - 64;
	r->drv_payload.rq_dbrec_offset = rq && fk_rq_dbrec ? (1u << rq_log) << rq_shift : 0;
	if (fk_rq_dbrec_off >= 0)
		r->drv_payload.rq_dbrec_offset = (uint32_t)fk_rq_dbrec_off;
	r->drv_payload.sq_dbrec_offset = fk_sq_dbrec ? (1u << sq_log) << sq_shift : 0;
	if (fk_sq_dbrec_off >= 0)
		r->drv_payload.sq_dbrec_offset = (uint32_t)fk_sq_dbrec_off;
	return 0;
}

int ibv_cmd_destroy_qp(struct ibv_qp *qp)
{
	struct fk_dev *f = fk_of(qp->context);
	struct fk_region *r;

	if (hx_destroy(w, f->d, QRNIC_CMD_DESTROY_QP, qp->handle))
		return EINVAL;
	if ((r = fk_find(f, FK_WQ, qp->handle)))
		r->used = false;
	if ((r = fk_find(f, FK_WQ, qp->handle | 0x80000000u)))
		r->used = false;
	return 0;
}

int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr, struct ibv_create_srq *cmd,
		       size_t cmd_size, struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size)
{
	struct uqrnic_create_srq_resp *r = (void *)resp;
	struct fk_dev *f = fk_of(pd->context);
	unsigned int log = clampu(log2_up(attr->attr.max_wr), 1, QRNIC_MAX_QUEUE_LOG);
	unsigned int shift = clampu(log2_up(16 + 16 * (attr->attr.max_sge ? attr->attr.max_sge : 1)),
				    QRNIC_MIN_RECV_WQE_SHIFT, QRNIC_MAX_RECV_WQE_SHIFT);
	uint64_t ring = (1ull << log) << shift;
	struct qrnic_aq_cmd c;
	struct fk_region *reg;
	uint32_t srqn;

	(void)cmd;
	(void)cmd_size;
	if (resp_size != sizeof(*r))
		return EINVAL;
	reg = fk_alloc(f, FK_SRQ, ring + 4, true);
	reg->ring_size = ring;
	memset(&c, 0, sizeof(c));
	c.u.create_srq.uctx = fk_uctx(pd->context);
	c.u.create_srq.pdn = pd->handle;
	c.u.create_srq.log_depth = (uint8_t)log;
	c.u.create_srq.wqe_shift = (uint8_t)shift;
	c.u.create_srq.ring_addr = reg->bus;
	c.u.create_srq.dbrec_addr = reg->bus + ring;
	if (admin(f->d, &c, QRNIC_CMD_CREATE_SRQ, &srqn)) {
		reg->used = false;
		return EINVAL;
	}
	reg->handle = srqn;
	srq->context = pd->context;
	srq->pd = pd;
	srq->handle = srqn;
	memset(r, 0, sizeof(*r));
	r->ibv_resp.srq_handle = srqn;
	r->ibv_resp.max_wr = attr->attr.max_wr = 1u << log;
	r->ibv_resp.max_sge = attr->attr.max_sge = qrnic_rq_max_sge(shift);
	r->drv_payload.srqn = srqn;
	r->drv_payload.log_depth = (uint8_t)log;
	r->drv_payload.wqe_shift = (uint8_t)shift;
	r->drv_payload.mmap_key = reg->off;
	r->drv_payload.mmap_size = reg->size;
	r->drv_payload.dbrec_offset = (uint32_t)ring;
	return 0;
}

/* XRC SRQs (CREATE_XSRQ): as the driver, the same response as CREATE_SRQ */
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *vsrq,
			  struct ibv_srq_init_attr_ex *attr_ex, struct ibv_create_xsrq *cmd,
			  size_t cmd_size, struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size)
{
	struct uqrnic_create_xsrq_resp *r = (void *)resp;
	struct fk_dev *f = fk_of(context);
	struct ibv_srq *srq = &vsrq->srq;
	unsigned int log = clampu(log2_up(attr_ex->attr.max_wr), 1, QRNIC_MAX_QUEUE_LOG);
	unsigned int shift = clampu(log2_up(16 + 16 * (attr_ex->attr.max_sge ?
						       attr_ex->attr.max_sge : 1)),
				    QRNIC_MIN_RECV_WQE_SHIFT, QRNIC_MAX_RECV_WQE_SHIFT);
	uint64_t ring = (1ull << log) << shift;
	struct qrnic_aq_cmd c;
	struct fk_region *reg;
	uint32_t srqn;

	(void)cmd;
	(void)cmd_size;
	if (resp_size != sizeof(*r) || attr_ex->srq_type != IBV_SRQT_XRC)
		return EINVAL;
	reg = fk_alloc(f, FK_SRQ, ring + 4, true);
	reg->ring_size = ring;
	memset(&c, 0, sizeof(c));
	c.u.create_srq.uctx = fk_uctx(context);
	c.u.create_srq.pdn = attr_ex->pd->handle;
	c.u.create_srq.log_depth = (uint8_t)log;
	c.u.create_srq.wqe_shift = (uint8_t)shift;
	c.u.create_srq.flags = QRNIC_SRQ_F_XRC;
	c.u.create_srq.xrcd = container_of(attr_ex->xrcd, struct verbs_xrcd, xrcd)->handle;
	c.u.create_srq.cqn = attr_ex->cq->handle;
	c.u.create_srq.ring_addr = reg->bus;
	c.u.create_srq.dbrec_addr = reg->bus + ring;
	if (admin(f->d, &c, QRNIC_CMD_CREATE_SRQ, &srqn)) {
		reg->used = false;
		return EINVAL;
	}
	reg->handle = srqn;
	srq->context = context;
	srq->pd = attr_ex->pd;
	srq->handle = srqn;
	vsrq->srq_type = IBV_SRQT_XRC;
	vsrq->srq_num = srqn;
	memset(r, 0, sizeof(*r));
	r->ibv_resp.srq_handle = srqn;
	r->ibv_resp.srqn = srqn;
	r->ibv_resp.max_wr = attr_ex->attr.max_wr = 1u << log;
	r->ibv_resp.max_sge = attr_ex->attr.max_sge = qrnic_rq_max_sge(shift);
	r->drv_payload.srqn = srqn;
	r->drv_payload.log_depth = (uint8_t)log;
	r->drv_payload.wqe_shift = (uint8_t)shift;
	r->drv_payload.mmap_key = reg->off;
	r->drv_payload.mmap_size = reg->size;
	r->drv_payload.dbrec_offset = (uint32_t)ring;
	return 0;
}

/* ibv_open_xrcd: as the driver, a kernel domain (uctx 0) */
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd, int vxrcd_size,
		      struct ibv_xrcd_init_attr *attr, struct ibv_open_xrcd *cmd,
		      size_t cmd_size, struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size)
{
	struct qrnic_aq_cmd c;
	uint32_t n;

	(void)vxrcd_size;
	(void)attr;
	(void)cmd;
	(void)cmd_size;
	(void)resp_size;
	memset(&c, 0, sizeof(c));
	if (admin(fk_of(context)->d, &c, QRNIC_CMD_ALLOC_XRCD, &n))
		return ENOMEM;
	xrcd->xrcd.context = context;
	xrcd->comp_mask = VERBS_XRCD_HANDLE;
	xrcd->handle = n;
	resp->xrcd_handle = n;
	return 0;
}

int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd)
{
	return hx_destroy(w, fk_of(xrcd->xrcd.context)->d, QRNIC_CMD_DEALLOC_XRCD,
			  xrcd->handle) ? EBUSY : 0;
}

int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd, size_t cmd_size)
{
	int rc;

	(void)cmd;
	(void)cmd_size;
	rc = hx_modify_srq(w, fk_of(srq->context)->d, srq->handle, (uint32_t)srq_attr_mask,
			   srq_attr->srq_limit);
	return rc == -QRNIC_AQ_NOT_SUPPORTED ? EOPNOTSUPP : rc ? EINVAL : 0;
}

int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size)
{
	uint32_t q[3];

	(void)cmd;
	(void)cmd_size;
	if (hx_query_srq(w, fk_of(srq->context)->d, srq->handle, q))
		return EINVAL;
	srq_attr->srq_limit = q[0];
	srq_attr->max_wr = q[1];
	srq_attr->max_sge = 2;
	return 0;
}

int ibv_cmd_destroy_srq(struct ibv_srq *srq)
{
	struct fk_dev *f = fk_of(srq->context);
	struct fk_region *reg = fk_find(f, FK_SRQ, srq->handle);

	if (hx_destroy(w, f->d, QRNIC_CMD_DESTROY_SRQ, srq->handle))
		return EBUSY;
	if (reg)
		reg->used = false;
	return 0;
}

static void fk_av(struct ibv_ah_attr *ah, struct qrnic_av *av)
{
	uint8_t gid[16];
	int peer;

	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, ah->grh.dgid.raw, 16);
	av->flow_label = ah->grh.flow_label;
	av->sgid_index = ah->grh.sgid_index;
	av->hop_limit = ah->grh.hop_limit;
	av->traffic_class = ah->grh.traffic_class;
	av->net_type = QRNIC_NET_IPV4;
	for (peer = 0; peer < 2; peer++) {	/* "ARP" */
		gid_of(peer, gid);
		if (!memcmp(gid, av->dgid, 16))
			memcpy(av->dmac, hx_mac(w, peer), 6);
	}
}

int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		      struct ibv_modify_qp *cmd, size_t cmd_size)
{
	struct qrnic_qp_attr a;

	(void)cmd;
	(void)cmd_size;
	memset(&a, 0, sizeof(a));
	a.attr_mask = (uint32_t)attr_mask;
	a.qp_state = (uint8_t)attr->qp_state;
	a.cur_qp_state = (uint8_t)attr->cur_qp_state;
	a.path_mtu = (uint8_t)attr->path_mtu;
	a.timeout = attr->timeout;
	a.retry_cnt = attr->retry_cnt;
	a.rnr_retry = attr->rnr_retry;
	a.min_rnr_timer = attr->min_rnr_timer;
	a.max_rd_atomic = attr->max_rd_atomic;
	a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	a.en_sqd_async_notify = attr->en_sqd_async_notify;
	a.port_num = attr->port_num;
	a.pkey_index = attr->pkey_index;
	a.qkey = attr->qkey;
	a.rq_psn = attr->rq_psn;
	a.sq_psn = attr->sq_psn;
	a.dest_qpn = attr->dest_qp_num;
	a.qp_access_flags = (uint32_t)attr->qp_access_flags;
	if (attr_mask & IBV_QP_AV)
		fk_av(&attr->ah_attr, &a.av);
	/* memory is shared on a real host: the device executes the command
	 * on the rings and records as they are now (a flush reads the RQ's
	 * producer record), and doorbells written before it came first */
	fk_to_dev(fk_of(qp->context));
	return hx_modify_qp(w, fk_of(qp->context)->d, qp->handle, &a) ? EINVAL : 0;
}

int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr, int attr_mask,
		     struct ibv_qp_init_attr *qp_init_attr, struct ibv_query_qp *cmd,
		     size_t cmd_size)
{
	struct qrnic_qp_attr a;

	(void)attr_mask;
	(void)cmd;
	(void)cmd_size;
	if (hx_query_qp(w, fk_of(qp->context)->d, qp->handle, &a))
		return EINVAL;
	memset(qp_attr, 0, sizeof(*qp_attr));
	memset(qp_init_attr, 0, sizeof(*qp_init_attr));
	qp_attr->qp_state = (enum ibv_qp_state)a.qp_state;
	qp_attr->sq_psn = a.sq_psn;
	return 0;
}

int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah, struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size)
{
	struct uqrnic_create_ah_resp *r = (void *)resp;
	struct qrnic_av av;
	int64_t ahn;

	if (resp_size != sizeof(*r))
		return EINVAL;
	fk_av(attr, &av);
	ahn = hx_create_ah(w, fk_of(pd->context)->d, pd->handle, &av);
	if (ahn <= 0)
		return EINVAL;
	ah->context = pd->context;
	ah->pd = pd;
	ah->handle = (uint32_t)ahn;
	r->drv_payload.ahn = (uint32_t)ahn;
	return 0;
}

int ibv_cmd_destroy_ah(struct ibv_ah *ah)
{
	return hx_destroy(w, fk_of(ah->context)->d, QRNIC_CMD_DESTROY_AH, ah->handle) ? EINVAL : 0;
}

/* ATTACH/DETACH_MCAST as the kernel sends them (qrnic_cmd_mcast) */
static int fk_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint8_t op)
{
	struct qrnic_aq_cmd c;
	struct qrnic_aq_cqe cqe;

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = op;
	c.u.mcast.qpn = qp->qp_num;
	memcpy(c.u.mcast.gid, gid->raw, 16);
	return hx_admin(w, fk_of(qp->context)->d, &c, &cqe, 0) == QRNIC_AQ_OK ? 0 : EINVAL;
}

int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return fk_mcast(qp, gid, QRNIC_CMD_ATTACH_MCAST);
}

int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return fk_mcast(qp, gid, QRNIC_CMD_DETACH_MCAST);
}

/* ======================================================================= */
/* the tests: an application using the provider's ops                      */
/* ======================================================================= */

#define IOVA	0x7f0000100000ull
#define MRLEN	(1024 * 1024)

struct app {
	struct verbs_device *vdev;
	struct ibv_context *ctx;
	struct verbs_context_ops ops;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int d;
};

static struct app A, B;

static void fill(struct app *a, uint64_t off, uint32_t len, uint8_t seed)
{
	static uint8_t buf[MRLEN];
	uint32_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 17);
	hx_mr_write(w, a->d, a->mr->lkey, off, buf, len);
}

static bool same(struct app *a, uint64_t aoff, struct app *b, uint64_t boff, uint32_t len)
{
	static uint8_t x[MRLEN], y[MRLEN];

	hx_mr_read(w, a->d, a->mr->lkey, aoff, x, len);
	hx_mr_read(w, b->d, b->mr->lkey, boff, y, len);
	return !memcmp(x, y, len);
}

static struct ibv_sge sge(struct app *a, uint64_t off, uint32_t len)
{
	struct ibv_sge s = { .addr = IOVA + off, .length = len, .lkey = a->mr->lkey };

	return s;
}

static struct ibv_qp *mkqp(struct app *a, enum ibv_qp_type type, uint32_t swr,
			   uint32_t rwr, struct ibv_qp_init_attr *out)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = a->cq, .recv_cq = a->cq, .qp_type = type,
		.cap = { .max_send_wr = swr, .max_recv_wr = rwr, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
	};
	struct ibv_qp *qp = a->ops.create_qp(a->pd, &ia);

	if (out)
		*out = ia;
	return qp;
}

static int to_rts_rc(struct app *a, struct ibv_qp *qp, uint32_t dqpn, int peer)
{
	struct ibv_qp_attr at;
	int err;

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC;
	err = a->ops.modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       IBV_QP_ACCESS_FLAGS);
	if (err)
		return err;
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = dqpn;
	at.rq_psn = 7;
	at.max_dest_rd_atomic = 4;
	at.min_rnr_timer = 1;
	at.ah_attr.is_global = 1;
	at.ah_attr.port_num = 1;
	gid_of(peer, at.ah_attr.grh.dgid.raw);
	err = a->ops.modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			       IBV_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.sq_psn = 7;
	at.max_rd_atomic = 4;
	return a->ops.modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int poll_all(struct app *a, struct ibv_cq *cq, struct ibv_wc *wc, int max)
{
	return a->ops.poll_cq(cq, max, wc);
}

static void app_open(struct app *a, int d)
{
	a->d = d;
	a->vdev = registered_ops->alloc_device(NULL);
	CHECK(a->vdev != NULL);
	a->vdev->ops = registered_ops;
	strcpy(a->vdev->device.name, d ? "qrnic1" : "qrnic0");
	a->ctx = &registered_ops->alloc_context(&a->vdev->device, fk[d].fd, NULL)->context;
	a->ops = ctx_ops;
	a->pd = a->ops.alloc_pd(a->ctx);
	CHECK(a->pd != NULL);
	a->mr = a->ops.reg_mr(a->pd, (void *)(uintptr_t)IOVA, MRLEN, IOVA,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(a->mr != NULL);
}

static void test_match_and_context(void)
{
	const struct verbs_match_ent *m;
	struct ibv_device_attr_ex dattr;
	struct ibv_port_attr pattr;

	CHECK(registered_ops && !strcmp(registered_ops->name, "qrnic"));
	CHECK(registered_ops->match_min_abi_version == QRNIC_UVERBS_ABI_VERSION &&
	      registered_ops->match_max_abi_version == QRNIC_UVERBS_ABI_VERSION);
	m = registered_ops->match_table;
	CHECK(m[0].kind == VERBS_MATCH_PCI && m[0].vendor == 0x1af4 && m[0].device == 0x10f7);
	CHECK(to_qctx(A.ctx)->uctx != 0 && to_qctx(B.ctx)->uctx != 0);
	CHECK(A.ops.query_device_ex(A.ctx, NULL, &dattr, sizeof(dattr)) == 0);
	CHECK(!strcmp(dattr.orig_attr.fw_ver, "1.0"));
	CHECK(A.ops.query_port(A.ctx, 1, &pattr) == 0 && pattr.state == IBV_PORT_ACTIVE);
	CHECK(A.ops.create_qp && A.ops.post_send && A.ops.poll_cq && A.ops.req_notify_cq &&
	      A.ops.create_ah && A.ops.query_qp && A.ops.destroy_qp && A.ops.free_context);
	CHECK(A.ops.create_srq && A.ops.post_srq_recv && A.ops.modify_srq && A.ops.query_srq &&
	      A.ops.destroy_srq);
}

static void test_rc_basic(void)
{
	struct ibv_qp_init_attr ia;
	struct ibv_sge rs[2] = { sge(&B, 0x1000, 10), sge(&B, 0x3000, 4000) };
	struct ibv_sge ss[2] = { sge(&A, 0x100, 2000), sge(&A, 0x5000, 2000) };
	struct ibv_recv_wr rwr = { .wr_id = 11, .sg_list = rs, .num_sge = 2 }, *brw;
	struct ibv_send_wr swr = {
		.wr_id = 22, .sg_list = ss, .num_sge = 2, .opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(0xabad1dea),
	}, *bsw;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc[8];

	A.qp = mkqp(&A, IBV_QPT_RC, 8, 8, &ia);
	CHECK(A.qp != NULL);
	/* what the provider reports is what the rings hold */
	CHECK(ia.cap.max_send_wr == 8 && ia.cap.max_recv_wr == 8);
	CHECK(ia.cap.max_send_sge == qrnic_sq_max_sge(to_qqp(A.qp)->sq.wqe_shift));
	CHECK(ia.cap.max_inline_data == 64 && ia.cap.max_recv_sge >= 2);
	B.qp = mkqp(&B, IBV_QPT_RC, 8, 8, NULL);
	CHECK(B.qp != NULL);

	/* no sends before RTS */
	CHECK(A.ops.post_send(A.qp, &swr, &bsw) == EINVAL && bsw == &swr);
	CHECK(to_rts_rc(&A, A.qp, B.qp->qp_num, 1) == 0);
	CHECK(to_rts_rc(&B, B.qp, A.qp->qp_num, 0) == 0);
	CHECK(A.qp->state == IBV_QPS_RTS);

	fill(&A, 0x100, 2000, 1);
	fill(&A, 0x5000, 2000, 2);
	CHECK(B.ops.post_recv(B.qp, &rwr, &brw) == 0);
	CHECK(A.ops.post_send(A.qp, &swr, &bsw) == 0);
	fk_run();
	CHECK(poll_all(&A, A.cq, wc, 8) == 1);
	CHECK(wc[0].wr_id == 22 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_SEND &&
	      wc[0].qp_num == A.qp->qp_num);
	CHECK(poll_all(&B, B.cq, wc, 8) == 1);
	CHECK(wc[0].wr_id == 11 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV &&
	      wc[0].byte_len == 4000 && wc[0].wc_flags == IBV_WC_WITH_IMM &&
	      be32toh(wc[0].imm_data) == 0xabad1dea && wc[0].src_qp == A.qp->qp_num);
	CHECK(same(&A, 0x100, &B, 0x1000, 10));
	CHECK(same(&A, 0x100 + 10, &B, 0x3000, 1990));
	CHECK(same(&A, 0x5000, &B, 0x3000 + 1990, 2000));
	CHECK(poll_all(&A, A.cq, wc, 8) == 0 && poll_all(&B, B.cq, wc, 8) == 0);
	/* slots came back */
	CHECK(to_qqp(A.qp)->sq.ci == 1 && to_qqp(B.qp)->rq.ci == 1);

	/* query_qp reports the real capabilities */
	CHECK(A.ops.query_qp(A.qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qia) == 0);
	CHECK(qa.qp_state == IBV_QPS_RTS && qia.cap.max_inline_data == 64 &&
	      qa.cap.max_send_wr == 8);

	/* bad work requests */
	swr.num_sge = (int)qrnic_sq_max_sge(to_qqp(A.qp)->sq.wqe_shift) + 1;
	CHECK(A.ops.post_send(A.qp, &swr, &bsw) == EINVAL && bsw == &swr);
	swr.num_sge = 2;
	rwr.num_sge = 17;
	CHECK(B.ops.post_recv(B.qp, &rwr, &brw) == EINVAL && brw == &rwr);
	rwr.num_sge = 2;
}

/* The RQ doorbell word of a's doorbell page not yet delivered (fk_to_dev
 * delivers and clears it). */
static uint64_t rq_db_pending(struct app *a)
{
	struct fk_dev *f = fk_of(a->ctx);

	for (int i = 0; i < FK_MAX_REGIONS; i++)
		if (f->reg[i].used && f->reg[i].kind == FK_DB &&
		    f->reg[i].uctx == fk_uctx(a->ctx))
			return ((uint64_t *)(f->map + f->reg[i].off))[1];
	CHECK(!"no doorbell page");
	return 0;
}

/* RQ producer records (ABI 1.10, spec 8.6.1): with rq_dbrec_offset from
 * the kernel, post_recv writes the producer index there and rings no RQ
 * doorbell; in ERR it rings as well (the device flushes at once); RESET
 * zeroes the record; an older kernel (offset 0) gets doorbells. */
static void test_rq_dbrec(void)
{
	struct ibv_sge r = sge(&B, 0x2000, 64), s = sge(&A, 0x100, 40);
	struct ibv_recv_wr rwr = { .wr_id = 5, .sg_list = &r, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .wr_id = 6, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bsw;
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp *qa, *qb;
	struct ibv_wc wc[8];
	qrnic_le32 *rec;

	qa = mkqp(&A, IBV_QPT_RC, 8, 8, NULL);
	qb = mkqp(&B, IBV_QPT_RC, 8, 8, NULL);
	CHECK(qa && qb);
	rec = to_qqp(qb)->rq_dbrec;
	CHECK(rec != NULL && le32toh(*rec) == 0);
	CHECK(to_rts_rc(&A, qa, qb->qp_num, 1) == 0);
	CHECK(to_rts_rc(&B, qb, qa->qp_num, 0) == 0);
	fill(&A, 0x100, 40, 9);
	for (int i = 0; i < 3; i++) {
		rwr.wr_id = 5 + i;
		CHECK(B.ops.post_recv(qb, &rwr, &brw) == 0);
		CHECK(le32toh(*rec) == (uint32_t)i + 1 && rq_db_pending(&B) == 0);
		CHECK(A.ops.post_send(qa, &swr, &bsw) == 0);
		fk_run();
		CHECK(poll_all(&B, B.cq, wc, 8) == 1 && wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].wr_id == 5u + i && wc[0].byte_len == 40);
		CHECK(same(&A, 0x100, &B, 0x2000, 40));
		CHECK(poll_all(&A, A.cq, wc, 8) == 1 && wc[0].status == IBV_WC_SUCCESS);
	}
	/* two posted and never used, then ERR: the flush reads the record */
	CHECK(B.ops.post_recv(qb, &rwr, &brw) == 0 && B.ops.post_recv(qb, &rwr, &brw) == 0);
	CHECK(rq_db_pending(&B) == 0);
	CHECK(B.ops.modify_qp(qb, &at, IBV_QP_STATE) == 0);
	fk_run();
	CHECK(poll_all(&B, B.cq, wc, 8) == 2 && wc[0].status == IBV_WC_WR_FLUSH_ERR &&
	      wc[1].status == IBV_WC_WR_FLUSH_ERR);
	/* in ERR the doorbell rings too, and the device flushes at once */
	rwr.wr_id = 99;
	CHECK(B.ops.post_recv(qb, &rwr, &brw) == 0);
	CHECK(le32toh(*rec) == 6 && rq_db_pending(&B) != 0);
	fk_run();
	CHECK(poll_all(&B, B.cq, wc, 8) == 1 && wc[0].wr_id == 99 &&
	      wc[0].status == IBV_WC_WR_FLUSH_ERR);
	at.qp_state = IBV_QPS_RESET;
	CHECK(B.ops.modify_qp(qb, &at, IBV_QP_STATE) == 0);
	CHECK(le32toh(*rec) == 0 && to_qqp(qb)->rq.pi == 0);
	at.qp_state = IBV_QPS_ERR;
	CHECK(A.ops.modify_qp(qa, &at, IBV_QP_STATE) == 0);
	fk_run();
	poll_all(&A, A.cq, wc, 8);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);

	/* an older kernel: no record, the doorbell */
	fk_rq_dbrec = false;
	qb = mkqp(&B, IBV_QPT_RC, 8, 8, NULL);
	CHECK(qb && to_qqp(qb)->rq_dbrec == NULL);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	CHECK(B.ops.modify_qp(qb, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			      IBV_QP_ACCESS_FLAGS) == 0);
	CHECK(B.ops.post_recv(qb, &rwr, &brw) == 0 && rq_db_pending(&B) != 0);
	fk_run();
	CHECK(B.ops.destroy_qp(qb) == 0);
	fk_rq_dbrec = true;

	/* a kernel whose record offset is not a 4-byte slot after the ring
	 * inside the mapping (8 WQEs of 64 bytes: the ring is 512 bytes, the
	 * mapping a page): the QP is refused with EINVAL and destroyed */
	{
		static const int64_t bad[] = { 4, 508, 514, PAGE - 2, PAGE, 0xfffffffcll };
		int before = fk_used(fk_of(B.ctx), FK_WQ);

		for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			fk_rq_dbrec_off = bad[i];
			errno = 0;
			qb = mkqp(&B, IBV_QPT_RC, 8, 8, NULL);
			CHECK(qb == NULL && errno == EINVAL);
			CHECK(fk_used(fk_of(B.ctx), FK_WQ) == before);
		}
		fk_rq_dbrec_off = 512;		/* right after the ring: taken */
		qb = mkqp(&B, IBV_QPT_RC, 8, 8, NULL);
		CHECK(qb && (uint8_t *)to_qqp(qb)->rq_dbrec == to_qqp(qb)->rq.ring + 512);
		CHECK(qb && B.ops.destroy_qp(qb) == 0);
		fk_rq_dbrec_off = -1;
	}
}

/* The SQ doorbell word of a's doorbell page not yet delivered. */
static uint64_t sq_db_pending(struct app *a)
{
	struct fk_dev *f = fk_of(a->ctx);

	for (int i = 0; i < FK_MAX_REGIONS; i++)
		if (f->reg[i].used && f->reg[i].kind == FK_DB &&
		    f->reg[i].uctx == fk_uctx(a->ctx))
			return ((uint64_t *)(f->map + f->reg[i].off))[0];
	CHECK(!"no doorbell page");
	return 0;
}

/* SQ records (ABI 1.11, spec 8.6.2): with sq_dbrec_offset from the
 * kernel, post_send writes the producer index there, then reads the
 * device's flag and rings only if it is clear (the fake device's flag is
 * set here by hand, as the device would while it waits for an ACK);
 * RESET zeroes the index; an older kernel (offset 0) gets doorbells; a
 * bad offset refuses the QP. */
static void test_sq_dbrec(void)
{
	struct ibv_sge r = sge(&B, 0x2000, 64), s = sge(&A, 0x100, 40);
	struct ibv_recv_wr rwr = { .wr_id = 5, .sg_list = &r, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .wr_id = 6, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bsw;
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp *qa, *qb;
	struct qrnic_sq_dbrec *rec;
	struct ibv_wc wc[8];

	qa = mkqp(&A, IBV_QPT_RC, 8, 8, NULL);
	qb = mkqp(&B, IBV_QPT_RC, 8, 8, NULL);
	CHECK(qa && qb);
	rec = to_qqp(qa)->sq_dbrec;
	CHECK(rec != NULL && (uint8_t *)rec == to_qqp(qa)->sq.ring +
	      ((size_t)to_qqp(qa)->sq.depth << to_qqp(qa)->sq.wqe_shift));
	CHECK(le32toh(rec->pi) == 0 && le32toh(rec->flags) == 0);
	CHECK(to_rts_rc(&A, qa, qb->qp_num, 1) == 0);
	CHECK(to_rts_rc(&B, qb, qa->qp_num, 0) == 0);
	fill(&A, 0x100, 40, 3);
	/* flag clear: the index in the record and the doorbell */
	CHECK(B.ops.post_recv(qb, &rwr, &brw) == 0);
	CHECK(A.ops.post_send(qa, &swr, &bsw) == 0);
	CHECK(le32toh(rec->pi) == 1 && sq_db_pending(&A) != 0);
	fk_run();
	CHECK(poll_all(&B, B.cq, wc, 8) == 1 && wc[0].status == IBV_WC_SUCCESS);
	CHECK(same(&A, 0x100, &B, 0x2000, 40));
	CHECK(poll_all(&A, A.cq, wc, 8) == 1 && wc[0].status == IBV_WC_SUCCESS);
	/* flag set (the device will read the index by itself): no doorbell */
	rec->flags = htole32(QRNIC_SQ_DBREC_NO_DB);
	CHECK(A.ops.post_send(qa, &swr, &bsw) == 0);
	CHECK(le32toh(rec->pi) == 2 && sq_db_pending(&A) == 0);
	rec->flags = 0;
	/* RESET: the index starts over at 0 */
	CHECK(A.ops.modify_qp(qa, &at, IBV_QP_STATE) == 0);
	CHECK(le32toh(rec->pi) == 0 && to_qqp(qa)->sq.pi == 0);
	CHECK(A.ops.destroy_qp(qa) == 0);
	at.qp_state = IBV_QPS_ERR;
	CHECK(B.ops.modify_qp(qb, &at, IBV_QP_STATE) == 0);
	fk_run();
	poll_all(&B, B.cq, wc, 8);
	CHECK(B.ops.destroy_qp(qb) == 0);

	/* an older kernel: no record, a doorbell per post */
	fk_sq_dbrec = false;
	qa = mkqp(&A, IBV_QPT_RC, 8, 8, NULL);
	CHECK(qa && to_qqp(qa)->sq_dbrec == NULL);
	CHECK(A.ops.destroy_qp(qa) == 0);
	fk_sq_dbrec = true;

	/* an offset that is not an 8-byte slot after the ring inside the
	 * mapping (8 WQEs: a ring of 8 strides, the mapping a page): the QP is
	 * refused with EINVAL and destroyed */
	{
		int64_t ring;
		int before = fk_used(fk_of(A.ctx), FK_WQ);

		qa = mkqp(&A, IBV_QPT_RC, 8, 8, NULL);
		CHECK(qa != NULL);
		ring = (int64_t)to_qqp(qa)->sq.depth << to_qqp(qa)->sq.wqe_shift;
		CHECK(ring < PAGE && A.ops.destroy_qp(qa) == 0);
		int64_t bad[] = { 8, ring - 8, ring + 4, PAGE - 4, PAGE, 0xfffffff8ll };

		for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			fk_sq_dbrec_off = bad[i];
			errno = 0;
			qa = mkqp(&A, IBV_QPT_RC, 8, 8, NULL);
			CHECK(qa == NULL && errno == EINVAL);
			CHECK(fk_used(fk_of(A.ctx), FK_WQ) == before);
		}
		fk_sq_dbrec_off = ring + 8;	/* an 8-byte slot after the ring: taken */
		qa = mkqp(&A, IBV_QPT_RC, 8, 8, NULL);
		CHECK(qa && (uint8_t *)to_qqp(qa)->sq_dbrec == to_qqp(qa)->sq.ring + ring + 8);
		CHECK(qa && A.ops.destroy_qp(qa) == 0);
		fk_sq_dbrec_off = -1;
	}
}

/* SQ full -> ENOMEM with bad_wr; unsignaled WQEs freed by a later CQE */
static void test_sq_full_and_unsignaled(void)
{
	struct ibv_sge s = sge(&A, 0x10000, 4096);
	struct ibv_send_wr wr[9];
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[16];
	int i, round;

	fill(&A, 0x10000, 4096, 3);
	for (round = 0; round < 5; round++) {
		memset(wr, 0, sizeof(wr));
		for (i = 0; i < 9; i++) {
			wr[i].wr_id = 100 + i;
			wr[i].sg_list = &s;
			wr[i].num_sge = 1;
			wr[i].opcode = IBV_WR_RDMA_WRITE;
			wr[i].wr.rdma.remote_addr = IOVA + 0x20000 + 4096 * (uint64_t)i;
			wr[i].wr.rdma.rkey = B.mr->rkey;
			wr[i].next = i < 8 ? &wr[i + 1] : NULL;
		}
		wr[7].send_flags = IBV_SEND_SIGNALED;	/* the 8th of 8 slots */
		CHECK(A.ops.post_send(A.qp, wr, &bad) == ENOMEM && bad == &wr[8]);
		fk_run();
		CHECK(poll_all(&A, A.cq, wc, 16) == 1);
		CHECK(wc[0].wr_id == 107 && wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].opcode == IBV_WC_RDMA_WRITE);
		CHECK(to_qqp(A.qp)->sq.pi == to_qqp(A.qp)->sq.ci);
	}
	for (i = 0; i < 8; i++)
		CHECK(same(&A, 0x10000, &B, 0x20000 + 4096 * (uint64_t)i, 4096));
}

/* Many round trips through tiny rings: owner bit phases, free-running
 * indexes, the CQ dbrec (A) and CQ doorbells without dbrec (B). */
static void test_wrap(void)
{
	struct ibv_sge s = sge(&A, 0x40000, 64), r = sge(&B, 0x41000, 64);
	struct ibv_wc wc[8];
	int i, errs = 0, n;
	uint64_t over0 = hx_dev_stat(w, 0, QRNIC_STAT_CQ_OVERRUNS);
	uint64_t over1 = hx_dev_stat(w, 1, QRNIC_STAT_CQ_OVERRUNS);
	uint64_t ign1 = hx_dev_stat(w, 1, QRNIC_STAT_DOORBELLS_IGNORED);

	for (i = 0; i < 300; i++) {
		struct ibv_recv_wr rwr = { .wr_id = 5000 + i, .sg_list = &r, .num_sge = 1 }, *brw;
		struct ibv_send_wr swr = {
			.wr_id = 9000 + i, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED | (i % 3 ? IBV_SEND_INLINE : 0),
		}, *bsw;
		uint8_t inl[64];

		if (i % 3) {	/* inline from host memory */
			memset(inl, i, sizeof(inl));
			s.addr = (uintptr_t)inl;
		} else {
			s.addr = IOVA + 0x40000;
			fill(&A, 0x40000, 64, (uint8_t)i);
		}
		errs += B.ops.post_recv(B.qp, &rwr, &brw) != 0;
		errs += A.ops.post_send(A.qp, &swr, &bsw) != 0;
		fk_run();
		n = poll_all(&A, A.cq, wc, 8);
		if (n != 1 || wc[0].wr_id != 9000u + i || wc[0].status != IBV_WC_SUCCESS) {
			if (!errs)
				printf("  wrap %d: A n=%d wr_id=%llu status=%d verr=%u\n", i, n,
				       (unsigned long long)wc[0].wr_id, wc[0].status, wc[0].vendor_err);
			errs++;
		}
		n = poll_all(&B, B.cq, wc, 8);
		if (n != 1 || wc[0].wr_id != 5000u + i || wc[0].status != IBV_WC_SUCCESS ||
		    wc[0].byte_len != 64) {
			if (!errs)
				printf("  wrap %d: B n=%d wr_id=%llu status=%d verr=%u len=%u\n", i, n,
				       (unsigned long long)wc[0].wr_id, wc[0].status,
				       wc[0].vendor_err, wc[0].byte_len);
			errs++;
		}
		if (i % 3) {
			uint8_t got[64];

			hx_mr_read(w, 1, B.mr->lkey, 0x41000, got, 64);
			errs += memcmp(got, inl, 64) != 0;
		} else {
			errs += !same(&A, 0x40000, &B, 0x41000, 64);
		}
	}
	CHECK(errs == 0);
	CHECK(hx_dev_stat(w, 0, QRNIC_STAT_CQ_OVERRUNS) == over0);
	CHECK(hx_dev_stat(w, 1, QRNIC_STAT_CQ_OVERRUNS) == over1);
	CHECK(hx_dev_stat(w, 1, QRNIC_STAT_DOORBELLS_IGNORED) == ign1);
	/* free-running indexes went around the 4-entry CQ of B many times */
	CHECK(to_qcq(B.cq)->ci > 4 * 60 && to_qcq(B.cq)->dbrec == NULL);
	CHECK(to_qcq(A.cq)->dbrec != NULL);
}

static void test_read_atomic(void)
{
	uint64_t v = 41, got;
	struct ibv_sge rd = sge(&A, 0x60000, 5000), at = sge(&A, 0x62000, 8);
	struct ibv_send_wr faa = {
		.wr_id = 2, .sg_list = &at, .num_sge = 1, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr read = {
		.wr_id = 1, .sg_list = &rd, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED, .next = &faa,
	}, *bsw;
	struct ibv_wc wc[4];

	fill(&B, 0x30000, 5000, 7);
	hx_mr_write(w, 1, B.mr->lkey, 0x38000, &v, 8);
	read.wr.rdma.remote_addr = IOVA + 0x30000;
	read.wr.rdma.rkey = B.mr->rkey;
	faa.wr.atomic.remote_addr = IOVA + 0x38000;
	faa.wr.atomic.rkey = B.mr->rkey;
	faa.wr.atomic.compare_add = 1;
	CHECK(A.ops.post_send(A.qp, &read, &bsw) == 0);
	fk_run();
	CHECK(poll_all(&A, A.cq, wc, 4) == 2);
	CHECK(wc[0].wr_id == 1 && wc[0].opcode == IBV_WC_RDMA_READ && wc[0].byte_len == 5000 &&
	      wc[0].status == IBV_WC_SUCCESS);
	CHECK(wc[1].wr_id == 2 && wc[1].opcode == IBV_WC_FETCH_ADD &&
	      wc[1].status == IBV_WC_SUCCESS);
	CHECK(same(&A, 0x60000, &B, 0x30000, 5000));
	hx_mr_read(w, 0, A.mr->lkey, 0x62000, &got, 8);
	CHECK(got == 41);
	hx_mr_read(w, 1, B.mr->lkey, 0x38000, &got, 8);
	CHECK(got == 42);
}

/* ibv_req_notify_cq: the arm doorbell makes the next completion an EQE. */
static void test_arm(void)
{
	struct ibv_sge s = sge(&A, 0, 16), r = sge(&B, 0, 16);
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &r, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bsw;
	struct qrnic_eqe eqe[8];
	struct ibv_wc wc[4];

	while (hx_poll_eq(w, 1, fk[1].eqn, eqe, 8) > 0)
		;
	CHECK(B.ops.req_notify_cq(B.cq, 0) == 0);
	fk_run();
	CHECK(hx_poll_eq(w, 1, fk[1].eqn, eqe, 8) == 0);	/* nothing yet */
	CHECK(B.ops.post_recv(B.qp, &rwr, &brw) == 0);
	CHECK(A.ops.post_send(A.qp, &swr, &bsw) == 0);
	fk_run();
	CHECK(hx_poll_eq(w, 1, fk[1].eqn, eqe, 8) == 1);
	CHECK(eqe[0].type == QRNIC_EQE_COMPLETION && eqe[0].handle == to_qcq(B.cq)->cqn);
	CHECK(poll_all(&B, B.cq, wc, 4) == 1 && poll_all(&A, A.cq, wc, 4) == 1);

	/* solicited-only: an unsolicited SEND does not wake, a solicited one does */
	CHECK(B.ops.req_notify_cq(B.cq, 1) == 0);
	CHECK(B.ops.post_recv(B.qp, &rwr, &brw) == 0);
	CHECK(A.ops.post_send(A.qp, &swr, &bsw) == 0);
	fk_run();
	CHECK(hx_poll_eq(w, 1, fk[1].eqn, eqe, 8) == 0);
	CHECK(poll_all(&B, B.cq, wc, 4) == 1 && poll_all(&A, A.cq, wc, 4) == 1);
	swr.send_flags |= IBV_SEND_SOLICITED;
	CHECK(B.ops.post_recv(B.qp, &rwr, &brw) == 0);
	CHECK(A.ops.post_send(A.qp, &swr, &bsw) == 0);
	fk_run();
	CHECK(hx_poll_eq(w, 1, fk[1].eqn, eqe, 8) == 1);
	CHECK(poll_all(&B, B.cq, wc, 4) == 1 && poll_all(&A, A.cq, wc, 4) == 1);

	/* arming with completions pending fires at once */
	CHECK(B.ops.post_recv(B.qp, &rwr, &brw) == 0);
	CHECK(A.ops.post_send(A.qp, &swr, &bsw) == 0);
	fk_run();
	CHECK(B.ops.req_notify_cq(B.cq, 0) == 0);
	fk_run();
	CHECK(hx_poll_eq(w, 1, fk[1].eqn, eqe, 8) == 1);
	CHECK(poll_all(&B, B.cq, wc, 4) == 1 && poll_all(&A, A.cq, wc, 4) == 1);
}

/* -> ERR flushes; -> RESET restarts the provider's indexes with the
 * device's; the QP works again afterwards. */
static void test_err_reset(void)
{
	struct ibv_sge r = sge(&B, 0, 16), s = sge(&A, 0, 16);
	struct ibv_recv_wr rwr[3], *brw;
	struct ibv_send_wr swr = { .wr_id = 77, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bsw;
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[8];
	int i;

	for (i = 0; i < 3; i++)
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 300 + i, .sg_list = &r, .num_sge = 1,
					       .next = i < 2 ? &rwr[i + 1] : NULL };
	CHECK(B.ops.post_recv(B.qp, rwr, &brw) == 0);
	CHECK(B.ops.modify_qp(B.qp, &at, IBV_QP_STATE) == 0);
	fk_run();
	CHECK(poll_all(&B, B.cq, wc, 8) == 3);
	for (i = 0; i < 3; i++)
		CHECK(wc[i].status == IBV_WC_WR_FLUSH_ERR && wc[i].wr_id == 300u + i &&
		      wc[i].vendor_err == QRNIC_VERR_FLUSH);
	CHECK(to_qqp(B.qp)->rq.ci == to_qqp(B.qp)->rq.pi && to_qqp(B.qp)->rq.pi != 0);

	at.qp_state = IBV_QPS_RESET;
	CHECK(B.ops.modify_qp(B.qp, &at, IBV_QP_STATE) == 0);
	CHECK(to_qqp(B.qp)->rq.pi == 0 && to_qqp(B.qp)->sq.pi == 0);
	/* A's QP is still connected to B's; bring A through ERR/RESET too */
	at.qp_state = IBV_QPS_ERR;
	CHECK(A.ops.modify_qp(A.qp, &at, IBV_QP_STATE) == 0);
	fk_run();
	poll_all(&A, A.cq, wc, 8);
	at.qp_state = IBV_QPS_RESET;
	CHECK(A.ops.modify_qp(A.qp, &at, IBV_QP_STATE) == 0);
	CHECK(to_rts_rc(&A, A.qp, B.qp->qp_num, 1) == 0);
	CHECK(to_rts_rc(&B, B.qp, A.qp->qp_num, 0) == 0);
	CHECK(B.ops.post_recv(B.qp, rwr, &brw) == 0);
	CHECK(A.ops.post_send(A.qp, &swr, &bsw) == 0);
	fk_run();
	CHECK(poll_all(&A, A.cq, wc, 8) == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 77);
	CHECK(poll_all(&B, B.cq, wc, 8) == 1 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[0].wr_id == 300);
}

static void test_ud(void)
{
	struct ibv_qp *ua, *ub;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr at;
	struct ibv_ah_attr aha = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah;
	struct ibv_sge s = sge(&A, 0x70000, 500), r = sge(&B, 0x71000, 40 + 500);
	struct ibv_recv_wr rwr = { .wr_id = 61, .sg_list = &r, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .wr_id = 62, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bsw;
	struct ibv_wc wc[4];
	int i;

	ua = mkqp(&A, IBV_QPT_UD, 4, 4, &ia);
	ub = mkqp(&B, IBV_QPT_UD, 4, 4, NULL);
	CHECK(ua && ub);
	if (!ua || !ub)
		return;
	for (i = 0; i < 2; i++) {
		struct app *a = i ? &B : &A;
		struct ibv_qp *q = i ? ub : ua;

		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_INIT;
		at.port_num = 1;
		at.qkey = 0x1234;
		CHECK(a->ops.modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_QKEY) == 0);
		at.qp_state = IBV_QPS_RTR;
		CHECK(a->ops.modify_qp(q, &at, IBV_QP_STATE) == 0);
		at.qp_state = IBV_QPS_RTS;
		at.sq_psn = 3;
		CHECK(a->ops.modify_qp(q, &at, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
	}
	gid_of(1, aha.grh.dgid.raw);
	ah = A.ops.create_ah(A.pd, &aha);
	CHECK(ah != NULL && to_qah(ah)->ahn != 0);

	fill(&A, 0x70000, 500, 9);
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = ub->qp_num;
	swr.wr.ud.remote_qkey = 0x1234;
	CHECK(B.ops.post_recv(ub, &rwr, &brw) == 0);
	CHECK(A.ops.post_send(ua, &swr, &bsw) == 0);
	fk_run();
	CHECK(poll_all(&A, A.cq, wc, 4) == 1 && wc[0].wr_id == 62 &&
	      wc[0].status == IBV_WC_SUCCESS && wc[0].qp_num == ua->qp_num);
	CHECK(poll_all(&B, B.cq, wc, 4) == 1);
	CHECK(wc[0].wr_id == 61 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV &&
	      wc[0].byte_len == 540 && wc[0].wc_flags == IBV_WC_GRH &&
	      wc[0].src_qp == ua->qp_num && wc[0].qp_num == ub->qp_num);
	CHECK(same(&A, 0x70000, &B, 0x71000 + 40, 500));

	/* UD takes SEND only */
	swr.opcode = IBV_WR_RDMA_WRITE;
	CHECK(A.ops.post_send(ua, &swr, &bsw) == EINVAL && bsw == &swr);

	CHECK(A.ops.destroy_ah(ah) == 0);
	CHECK(A.ops.destroy_qp(ua) == 0);
	CHECK(B.ops.destroy_qp(ub) == 0);
}

/*
 * Sends one signaled SEND of len bytes from A's offset off on qp, and hands
 * the doorbell to the device at once: the doorbell page is plain memory
 * here, so a second QP's SQ doorbell would overwrite this one before the
 * next fk_run.
 */
static int send_one(struct ibv_qp *qp, uint64_t wr_id, uint64_t off, uint32_t len)
{
	struct ibv_sge s = sge(&A, off, len);
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	int err = A.ops.post_send(qp, &wr, &bad);

	fk_to_dev(&fk[0]);
	return err;
}

#define SRQ_BUF(i)	(0x80000 + 0x1000 * (uint64_t)((i) % 16))

/*
 * A shared receive queue on B feeding two RC QPs: no RQ on the QPs (their
 * RQ capabilities ignored), WQEs taken in ring order whichever QP receives,
 * slots reclaimed from the device's consumer record before any completion
 * is polled, ENOMEM with bad_wr when full, the limit (modify/query) and its
 * event, EBUSY while QPs use it, and many laps of an 8-entry ring.
 */
static void test_srq(void)
{
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 6, .max_sge = 2 } };
	struct ibv_qp_init_attr ia;
	struct ibv_recv_wr rwr[9], *brw;
	struct ibv_sge rs[9];
	struct ibv_srq_attr sa;
	struct ibv_qp *qa[2], *qb[2];
	struct ibv_srq *srq;
	struct qrnic_srq *q;
	struct ibv_cq *cq;
	struct ibv_wc wc[16];
	struct qrnic_eqe eqe[16];
	uint64_t fifo[64];		/* wr_ids posted to the SRQ, in order */
	unsigned int nfifo = 0, taken = 0, sent[2] = { 0, 0 }, seen[2] = { 0, 0 };
	int i, n, errs = 0, limit_events = 0;
	int64_t aeq;

	aeq = hx_create_eq(w, 1, 10, 0, QRNIC_EQ_F_ASYNC);
	CHECK(aeq > 0);
	cq = B.ops.create_cq(B.ctx, 32, NULL, 0);
	srq = B.ops.create_srq(B.pd, &sia);
	CHECK(cq && srq);
	if (!cq || !srq)
		return;
	q = to_qsrq(srq);
	/* what the ring holds */
	CHECK(sia.attr.max_wr == 8 && q->wq.depth == 8);
	CHECK(sia.attr.max_sge == qrnic_rq_max_sge(q->wq.wqe_shift) && sia.attr.max_sge >= 2);
	CHECK(q->dbrec && *q->dbrec == 0);

	for (i = 0; i < 2; i++) {
		ia = (struct ibv_qp_init_attr){
			.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
			/* RQ capabilities are ignored with an SRQ, even impossible ones */
			.cap = { .max_send_wr = 4, .max_send_sge = 1, .max_recv_wr = 64,
				 .max_recv_sge = 64 },
		};
		qb[i] = B.ops.create_qp(B.pd, &ia);
		CHECK(qb[i] != NULL);
		if (!qb[i])
			return;
		CHECK(ia.cap.max_recv_wr == 0 && ia.cap.max_recv_sge == 0 &&
		      to_qqp(qb[i])->rq.ring == NULL);
		qa[i] = mkqp(&A, IBV_QPT_RC, 8, 0, NULL);
		CHECK(qa[i] != NULL);
		if (!qa[i])
			return;
		CHECK(to_rts_rc(&A, qa[i], qb[i]->qp_num, 1) == 0);
		CHECK(to_rts_rc(&B, qb[i], qa[i]->qp_num, 0) == 0);
	}
	/* an SRQ QP has no receive queue of its own */
	rs[0] = sge(&B, SRQ_BUF(0), 256);
	rwr[0] = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = rs, .num_sge = 1 };
	CHECK(B.ops.post_recv(qb[0], rwr, &brw) == EINVAL && brw == rwr);

	/* 9 WRs into 8 slots: ENOMEM at the ninth, nothing of it posted */
	for (i = 0; i < 9; i++) {
		rs[i] = sge(&B, SRQ_BUF(1000 + i), 256);
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 1000 + i, .sg_list = &rs[i], .num_sge = 1,
					       .next = i < 8 ? &rwr[i + 1] : NULL };
	}
	CHECK(B.ops.post_srq_recv(srq, rwr, &brw) == ENOMEM && brw == &rwr[8]);
	CHECK(q->wq.pi == 8);
	for (i = 0; i < 8; i++)
		fifo[nfifo++] = 1000 + i;
	rwr[0].num_sge = (int)q->wq.max_sge + 1;
	CHECK(B.ops.post_srq_recv(srq, rwr, &brw) == EINVAL && brw == rwr);
	rwr[0].num_sge = 1;

	/* 3 messages on one QP, 2 on the other: 5 WQEs taken in ring order */
	for (i = 0; i < 5; i++) {
		int k = i < 3 ? 0 : 1;

		fill(&A, 0x90000 + 0x100 * (uint64_t)i, 256, (uint8_t)(40 + i));
		CHECK(send_one(qa[k], 500 + i, 0x90000 + 0x100 * (uint64_t)i, 256) == 0);
	}
	fk_run();
	/* the record says 5 slots are free: reusable before any poll */
	CHECK(le32toh(*q->dbrec) == 5);
	for (i = 0; i < 6; i++) {
		rs[i] = sge(&B, SRQ_BUF(1008 + i), 256);
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 1008 + i, .sg_list = &rs[i], .num_sge = 1,
					       .next = i < 5 ? &rwr[i + 1] : NULL };
	}
	CHECK(B.ops.post_srq_recv(srq, rwr, &brw) == ENOMEM && brw == &rwr[5]);
	for (i = 0; i < 5; i++)
		fifo[nfifo++] = 1008 + i;

	n = poll_all(&B, cq, wc, 16);
	CHECK(n == 5);
	for (i = 0; i < n; i++) {
		int k = wc[i].qp_num == qb[0]->qp_num ? 0 : 1;
		unsigned int msg = k ? 3 + seen[1] : seen[0];

		seen[k]++;
		/* ring order: the i-th completion has the i-th posted WQE */
		errs += wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RECV ||
			wc[i].byte_len != 256 || wc[i].wr_id != fifo[taken] ||
			wc[i].qp_num != qb[k]->qp_num || wc[i].src_qp != qa[k]->qp_num;
		errs += !same(&A, 0x90000 + 0x100 * (uint64_t)msg, &B, SRQ_BUF(fifo[taken]), 256);
		taken++;
	}
	CHECK(errs == 0 && seen[0] == 3 && seen[1] == 2);
	CHECK(poll_all(&A, A.cq, wc, 16) == 5);

	/* the limit: armed by modify, read back by query, fires once below it */
	CHECK(B.ops.query_srq(srq, &sa) == 0 && sa.max_wr == 8 && sa.srq_limit == 0);
	sa.srq_limit = 4;
	CHECK(B.ops.modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0);
	CHECK(B.ops.query_srq(srq, &sa) == 0 && sa.srq_limit == 4);
	sa.max_wr = 16;
	CHECK(B.ops.modify_srq(srq, &sa, IBV_SRQ_MAX_WR) == EOPNOTSUPP);
	while (hx_poll_eq(w, 1, (uint32_t)aeq, eqe, 16) > 0)
		;
	for (i = 0; i < 5; i++)
		CHECK(send_one(qa[0], 600 + i, 0x90000, 256) == 0);
	fk_run();
	while ((n = hx_poll_eq(w, 1, (uint32_t)aeq, eqe, 16)) > 0)
		for (i = 0; i < n; i++)
			limit_events += eqe[i].subtype == QRNIC_EV_SRQ_LIMIT_REACHED &&
					eqe[i].handle == q->srqn;
	CHECK(limit_events == 1);
	CHECK(B.ops.query_srq(srq, &sa) == 0 && sa.srq_limit == 0);
	n = poll_all(&B, cq, wc, 16);
	CHECK(n == 5);
	for (i = 0; i < n; i++)
		CHECK(wc[i].wr_id == fifo[taken++] && wc[i].status == IBV_WC_SUCCESS);
	CHECK(poll_all(&A, A.cq, wc, 16) == 5);

	/* in use by QPs */
	CHECK(B.ops.destroy_srq(srq) == EBUSY);

	/* 40 round trips through the 8-entry ring, alternating QPs: posts only
	 * ever find room through the record */
	for (i = 0; i < 40; i++) {
		struct ibv_recv_wr one = { .wr_id = 2000 + i, .sg_list = rs, .num_sge = 1 };
		int k = i & 1;

		rs[0] = sge(&B, SRQ_BUF(2000 + i), 64);
		errs += B.ops.post_srq_recv(srq, &one, &brw) != 0;
		fifo[nfifo++ % 64] = 2000 + i;
		fill(&A, 0x98000, 64, (uint8_t)i);
		errs += send_one(qa[k], 700 + i, 0x98000, 64) != 0;
		sent[k]++;
		fk_run();
		n = poll_all(&B, cq, wc, 16);
		errs += n != 1 || wc[0].status != IBV_WC_SUCCESS || wc[0].byte_len != 64 ||
			wc[0].qp_num != qb[k]->qp_num || wc[0].wr_id != fifo[taken % 64];
		if (n == 1)
			errs += !same(&A, 0x98000, &B, SRQ_BUF(fifo[taken % 64]), 64);
		taken++;
		errs += poll_all(&A, A.cq, wc, 16) != 1;
	}
	CHECK(errs == 0 && sent[0] == 20 && sent[1] == 20);
	CHECK(q->wq.pi == 53 && le32toh(*q->dbrec) == q->wq.pi - 3);

	for (i = 0; i < 2; i++) {
		CHECK(B.ops.destroy_qp(qb[i]) == 0);
		CHECK(A.ops.destroy_qp(qa[i]) == 0);
	}
	CHECK(B.ops.destroy_srq(srq) == 0);
	CHECK(B.ops.destroy_cq(cq) == 0);
	CHECK(hx_destroy(w, 1, QRNIC_CMD_DESTROY_EQ, (uint32_t)aeq) == 0);
}

/* ---- LOCAL_INV and SEND_WITH_INV (spec 12.12) ----------------------------- */

/*
 * XRC (spec 12.14): an XRC domain, an XRC SRQ with its own CQ and an XRC
 * RECV QP on B; an XRC SEND QP on A whose WRs name the SRQ, through
 * post_send (wr.qp_type.xrc.remote_srqn) and ibv_wr_set_xrc_srqn.  The
 * receive completions come on the SRQ's CQ with qp_num = the RECV QP;
 * the payload lands in the SRQ's buffers; the SRQ's slots come back.
 */
static void test_xrc(void)
{
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
						      IBV_XRCD_INIT_ATTR_OFLAGS,
					 .fd = -1, .oflags = 0 };
	struct ibv_srq_init_attr_ex sa;
	struct ibv_qp_init_attr_ex qa;
	struct ibv_recv_wr rwr[4], *brw;
	struct ibv_send_wr swr, *bsw;
	struct ibv_sge rs[4], ss;
	struct ibv_qp *sq, *rq;
	struct ibv_qp_ex *x;
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_qp_attr at;
	struct ibv_wc wc[8];
	uint32_t srqn = 0;
	int i, n, errs = 0;

	xrcd = B.ops.open_xrcd(B.ctx, &xa);
	cq = B.ops.create_cq(B.ctx, 8, NULL, 0);
	CHECK(xrcd && cq);
	if (!xrcd || !cq)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
		       IBV_SRQ_INIT_ATTR_PD;
	sa.srq_type = IBV_SRQT_XRC;
	sa.xrcd = xrcd;
	sa.cq = cq;
	sa.pd = B.pd;
	srq = B.ops.create_srq_ex(B.ctx, &sa);
	CHECK(srq != NULL);
	if (!srq)
		return;
	CHECK(B.ops.get_srq_num(srq, &srqn) == 0 && srqn == to_qsrq(srq)->srqn);
	CHECK(sa.attr.max_wr == 4);

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_RECV;
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	qa.xrcd = xrcd;
	rq = B.ops.create_qp_ex(B.ctx, &qa);
	CHECK(rq != NULL);
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_SEND;
	qa.send_cq = A.cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = A.pd;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	sq = A.ops.create_qp_ex(A.ctx, &qa);
	CHECK(sq != NULL);
	if (!rq || !sq)
		return;
	CHECK(to_qqp(sq)->rq.ring == NULL && qa.cap.max_recv_wr == 0);

	/* the RECV QP: RC's responder attributes; the SEND QP: the requester's */
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK(B.ops.modify_qp(rq, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			      IBV_QP_ACCESS_FLAGS) == 0);
	CHECK(A.ops.modify_qp(sq, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT) == 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.rq_psn = 7;
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = 1;
	at.ah_attr.is_global = 1;
	at.ah_attr.port_num = 1;
	at.dest_qp_num = sq->qp_num;
	gid_of(0, at.ah_attr.grh.dgid.raw);
	CHECK(B.ops.modify_qp(rq, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			      IBV_QP_MIN_RNR_TIMER) == 0);
	at.dest_qp_num = rq->qp_num;
	gid_of(1, at.ah_attr.grh.dgid.raw);
	CHECK(A.ops.modify_qp(sq, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN) == 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.sq_psn = 7;
	at.max_rd_atomic = 1;
	CHECK(B.ops.modify_qp(rq, &at, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN) == 0);
	CHECK(A.ops.modify_qp(sq, &at, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0);

	for (i = 0; i < 4; i++) {
		rs[i] = sge(&B, 0xc0000 + 0x1000 * (uint64_t)i, 2048);
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 700 + i, .sg_list = &rs[i], .num_sge = 1,
					       .next = i < 3 ? &rwr[i + 1] : NULL };
	}
	CHECK(B.ops.post_srq_recv(srq, rwr, &brw) == 0);
	fill(&A, 0xb0000, 1500, 0x5a);
	fill(&A, 0xb1000, 700, 0xa5);

	/* post_send: the remote SRQ from wr.qp_type.xrc */
	ss = sge(&A, 0xb0000, 1500);
	swr = (struct ibv_send_wr){ .wr_id = 71, .sg_list = &ss, .num_sge = 1,
				    .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	swr.qp_type.xrc.remote_srqn = srqn;
	CHECK(A.ops.post_send(sq, &swr, &bsw) == 0);
	/* the ibv_wr_* API: ibv_wr_set_xrc_srqn */
	x = (to_qqp(sq)->vqp.comp_mask & VERBS_QP_EX) ? &to_qqp(sq)->vqp.qp_ex : NULL;
	CHECK(x != NULL);
	if (x) {
		x->wr_start(x);
		x->wr_id = 72;
		x->wr_flags = IBV_SEND_SIGNALED;
		x->wr_send(x);
		x->wr_set_xrc_srqn(x, srqn);
		x->wr_set_sge(x, A.mr->lkey, IOVA + 0xb1000, 700);
		CHECK(x->wr_complete(x) == 0);
	}
	fk_run();

	n = poll_all(&B, cq, wc, 8);
	CHECK(n == 2);
	for (i = 0; i < n; i++)
		errs += wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RECV ||
			wc[i].qp_num != rq->qp_num || wc[i].wr_id != 700u + i ||
			wc[i].byte_len != (i ? 700u : 1500u);
	CHECK(errs == 0);
	CHECK(same(&A, 0xb0000, &B, 0xc0000, 1500));
	CHECK(same(&A, 0xb1000, &B, 0xc1000, 700));
	n = poll_all(&A, A.cq, wc, 8);
	CHECK(n == 2 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 71 &&
	      wc[1].status == IBV_WC_SUCCESS && wc[1].wr_id == 72);
	/* the SRQ's two slots came back through its record: 2 + 2 free */
	for (i = 0; i < 2; i++)
		rwr[i].next = i < 1 ? &rwr[i + 1] : NULL;
	CHECK(B.ops.post_srq_recv(srq, rwr, &brw) == 0);

	/* an XRC RECV QP has no queues: nothing to post, RESET touches none */
	CHECK(B.ops.post_send(rq, &swr, &bsw) == EINVAL && bsw == &swr);
	CHECK(B.ops.post_recv(rq, rwr, &brw) == EINVAL && brw == rwr);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RESET;
	CHECK(B.ops.modify_qp(rq, &at, IBV_QP_STATE) == 0);
	/* nor an XRC SEND QP a receive queue */
	CHECK(A.ops.post_recv(sq, rwr, &brw) == EINVAL && brw == rwr);

	/* the domain is busy while its SRQ and RECV QP exist */
	CHECK(B.ops.close_xrcd(xrcd) == EBUSY);
	CHECK(A.ops.destroy_qp(sq) == 0);
	CHECK(B.ops.destroy_qp(rq) == 0);
	CHECK(B.ops.destroy_srq(srq) == 0);
	CHECK(B.ops.destroy_cq(cq) == 0);
	CHECK(B.ops.close_xrcd(xrcd) == 0);
}

static struct app K;	/* a kernel-mode context on device 1 (uctx 0) */
static void app_close(struct app *a);

/* An RC QP of a (on cq, or a's CQ) connected to peer QP pqpn on device peer. */
static struct ibv_qp *rc_qp(struct app *a, struct ibv_cq *cq, uint32_t pqpn, int peer)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq ? cq : a->cq, .recv_cq = cq ? cq : a->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
	};
	struct ibv_qp *qp = a->ops.create_qp(a->pd, &ia);

	if (qp && pqpn && to_rts_rc(a, qp, pqpn, peer)) {
		a->ops.destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* Connect two fresh QPs of a and b (on their CQs). */
static bool rc_pair(struct app *a, struct ibv_cq *acq, struct app *b, struct ibv_cq *bcq,
		    struct ibv_qp **qa, struct ibv_qp **qb)
{
	*qa = rc_qp(a, acq, 0, 0);
	*qb = rc_qp(b, bcq, 0, 0);
	if (!*qa || !*qb)
		return false;
	return !to_rts_rc(a, *qa, (*qb)->qp_num, b->d) && !to_rts_rc(b, *qb, (*qa)->qp_num, a->d);
}

static struct ibv_send_wr wr_of(enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *s,
				 uint32_t key)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = s, .num_sge = s ? 1 : 0, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	};

	if (op == IBV_WR_LOCAL_INV || op == IBV_WR_SEND_WITH_INV)
		wr.invalidate_rkey = key;
	return wr;
}

/*
 * What user space can see of invalidation on ordinary (user) MRs: a
 * LOCAL_INV of an ordinary MR's key completes with LOC_QP_OP_ERR (as on
 * rxe), a SEND_WITH_INV naming one, or no MR at all, is NAKed by the
 * responder (REM_INV_REQ_ERR at the requester).
 */
static void test_invalidate_user_mrs(void)
{
	struct ibv_sge s = sge(&A, 0xa0000, 64), r = sge(&B, 0xa0000, 64);
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &r, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr, *bsw;
	struct ibv_qp *qa, *qb;
	struct ibv_wc wc[8];
	uint32_t bad_keys[2] = { B.mr->rkey, (B.mr->rkey & ~0xffu) + 0x10000 };
	int i, n;

	/* LOCAL_INV of an ordinary MR */
	CHECK(rc_pair(&A, NULL, &B, NULL, &qa, &qb));
	if (!qa || !qb)
		return;
	swr = wr_of(IBV_WR_LOCAL_INV, 0x10, NULL, A.mr->lkey);
	CHECK(A.ops.post_send(qa, &swr, &bsw) == 0);
	fk_run();
	n = poll_all(&A, A.cq, wc, 8);
	CHECK(n == 1 && wc[0].wr_id == 0x10 && wc[0].status == IBV_WC_LOC_QP_OP_ERR &&
	      wc[0].qp_num == qa->qp_num && wc[0].opcode == IBV_WC_LOCAL_INV &&
	      wc[0].vendor_err == QRNIC_VERR_MR_STATE);
	if (n == 1 && wc[0].vendor_err != QRNIC_VERR_MR_STATE)
		printf("  LOCAL_INV of an ordinary MR: status %d opcode %d vendor_err %u\n",
		       wc[0].status, wc[0].opcode, wc[0].vendor_err);
	CHECK(to_qqp(qa)->sq.ci == to_qqp(qa)->sq.pi);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);

	/* SEND_WITH_INV naming an ordinary MR's rkey, then a key of no MR */
	for (i = 0; i < 2; i++) {
		CHECK(rc_pair(&A, NULL, &B, NULL, &qa, &qb));
		if (!qa || !qb)
			return;
		fill(&A, 0xa0000, 64, (uint8_t)i);
		CHECK(B.ops.post_recv(qb, &rwr, &brw) == 0);
		swr = wr_of(IBV_WR_SEND_WITH_INV, 0x20 + i, &s, bad_keys[i]);
		CHECK(A.ops.post_send(qa, &swr, &bsw) == 0);
		fk_run();
		n = poll_all(&A, A.cq, wc, 8);
		CHECK(n == 1 && wc[0].wr_id == 0x20u + i && wc[0].status == IBV_WC_REM_INV_REQ_ERR &&
		      wc[0].vendor_err == QRNIC_VERR_NAK);
		if (n == 1 && wc[0].status != IBV_WC_REM_INV_REQ_ERR)
			printf("  SEND_WITH_INV of key %#x: status %d vendor_err %u\n",
			       bad_keys[i], wc[0].status, wc[0].vendor_err);
		/* the responder's receive fails too (spec 12.12, as rxe) */
		n = poll_all(&B, B.cq, wc, 4);
		CHECK(n == 1 && wc[0].wr_id == 1 && wc[0].status == IBV_WC_REM_INV_REQ_ERR &&
		      wc[0].wc_flags == 0);
		if (n == 1 && wc[0].status != IBV_WC_REM_INV_REQ_ERR)
			printf("  responder of a bad SEND_WITH_INV: status %d vendor_err %u\n",
			       wc[0].status, wc[0].vendor_err);
		CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
		poll_all(&B, B.cq, wc, 4);
	}
}

/*
 * Post the REG_MR WQE that the kernel driver would post for IB_WR_REG_MR
 * (user space has no fast registration): straight into K's SQ ring, then
 * K's doorbell on the kernel page.
 */
static void k_post_reg_mr(struct ibv_qp *qp, uint64_t wr_id, uint32_t key, uint64_t iova,
			  uint64_t length, uint32_t npages, uint64_t pbl, uint8_t access)
{
	struct qrnic_qp *q = to_qqp(qp);
	struct qrnic_reg_mr_wqe wqe = {
		.opcode = QRNIC_WR_REG_MR, .flags = QRNIC_WQE_F_SIGNALED, .page_shift = 12,
		.access = access, .npages = htole32(npages), .wr_id = htole64(wr_id),
		.key = htole32(key), .iova = htole64(iova), .length = htole64(length),
		.pbl_addr = htole64(pbl),
	};

	memcpy(q->sq.ring + ((size_t)(q->sq.pi & q->sq.mask) << q->sq.wqe_shift), &wqe,
	       sizeof(wqe));
	q->sq.pi++;
	*(volatile uint64_t *)((uint8_t *)to_qctx(K.ctx)->db + QRNIC_DB_SQ) =
		htole64(qrnic_db_wq_val(qp->qp_num, q->sq.pi));
}

static uint32_t mpt_flags(uint32_t key)
{
	struct qrnic_mpt_entry mpt;

	if (hx_query_mr(w, 1, key, &mpt))
		return 0xffffffffu;
	return mpt.flags;
}

/*
 * A fast-registration MR on a kernel context of device 1 (ALLOC_MR, REG_MR
 * WQE as the kernel driver posts them): an RDMA WRITE through the new rkey
 * lands in the registered pages in page-list order; the provider's
 * SEND_WITH_INV invalidates it at the responder, whose receive completion
 * (the provider's poll_cq) carries IBV_WC_WITH_INV and the rkey; registered
 * again, the provider's LOCAL_INV on the kernel QP invalidates it (opcode
 * IBV_WC_LOCAL_INV); a WRITE through the dead key is NAKed.
 */
static void test_invalidate_frmr(void)
{
	const uint64_t iova = 0x5a5a00000100ull, len = 2 * 4096 + 0x100;
	struct ibv_sge s = sge(&A, 0xa4000, (uint32_t)len), r;
	struct ibv_recv_wr rwr = { .wr_id = 0x70, .sg_list = &r, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr, *bsw;
	struct qrnic_aq_cmd c;
	struct ibv_qp *qa = NULL;
	struct ibv_wc wc[8];
	uint64_t pages[4], pbl, page[3], le;
	uint8_t got[3 * 4096], want[3 * 4096];
	uint32_t key0 = 0, key1, key2;
	int i, n;

	fk_kernel_ctx = true;
	app_open(&K, 1);
	fk_kernel_ctx = false;
	CHECK(to_qctx(K.ctx)->uctx == 0);
	K.cq = K.ops.create_cq(K.ctx, 16, NULL, 0);
	CHECK(K.cq != NULL);
	if (!K.cq)
		return;

	/* ALLOC_MR: kernel PD only; the key is unusable until registered */
	memset(&c, 0, sizeof(c));
	c.u.alloc_mr.pdn = B.pd->handle;	/* a user PD */
	c.u.alloc_mr.max_pages = 4;
	CHECK(admin(1, &c, QRNIC_CMD_ALLOC_MR, &key0) != 0);
	c.u.alloc_mr.pdn = K.pd->handle;
	c.u.alloc_mr.max_pages = 0;
	CHECK(admin(1, &c, QRNIC_CMD_ALLOC_MR, &key0) != 0);
	c.u.alloc_mr.max_pages = QRNIC_MAX_FAST_REG_PAGES + 1;
	CHECK(admin(1, &c, QRNIC_CMD_ALLOC_MR, &key0) != 0);
	c.u.alloc_mr.max_pages = 4;
	CHECK(admin(1, &c, QRNIC_CMD_ALLOC_MR, &key0) == 0);
	CHECK((mpt_flags(key0) & (QRNIC_MPT_FAST | QRNIC_MPT_VALID)) == QRNIC_MPT_FAST);
	key1 = (key0 & ~0xffu) | ((key0 + 1) & 0xffu);
	key2 = (key0 & ~0xffu) | ((key0 + 2) & 0xffu);

	K.qp = rc_qp(&K, NULL, 0, 0);
	qa = rc_qp(&A, NULL, 0, 0);
	CHECK(K.qp && qa);
	if (!K.qp || !qa)
		return;
	CHECK(!to_rts_rc(&A, qa, K.qp->qp_num, 1) && !to_rts_rc(&K, K.qp, qa->qp_num, 0));

	/* three pages of device 1 memory, listed out of address order */
	pages[0] = hx_mem_alloc(w, 1, 4 * 4096, 4096);
	pbl = hx_mem_alloc(w, 1, 64, 64);
	CHECK(pages[0] && pbl);
	page[0] = pages[0] + 2 * 4096;
	page[1] = pages[0];
	page[2] = pages[0] + 3 * 4096;
	for (i = 0; i < 3; i++) {
		le = htole64(page[i]);
		hx_mem_write(w, 1, pbl + 8 * (uint64_t)i, &le, 8);
	}
	memset(want, 0, sizeof(want));
	for (i = 0; i < 3; i++)
		hx_mem_write(w, 1, page[i], want, 4096);

	k_post_reg_mr(K.qp, 0x60, key1, iova, len, 3, pbl,
		      QRNIC_ACCESS_LOCAL_WRITE | QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_READ);
	fk_run();
	n = poll_all(&K, K.cq, wc, 8);
	CHECK(n == 1 && wc[0].wr_id == 0x60 && wc[0].status == IBV_WC_SUCCESS);
	if (n == 1 && wc[0].status != IBV_WC_SUCCESS)
		printf("  REG_MR: status %d vendor_err %u\n", wc[0].status, wc[0].vendor_err);
	CHECK(to_qqp(K.qp)->sq.ci == to_qqp(K.qp)->sq.pi);
	CHECK(mpt_flags(key1) & QRNIC_MPT_VALID);

	/* RDMA WRITE through the new rkey: iova offset 0x100 of page[0] on */
	fill(&A, 0xa4000, (uint32_t)len, 0x3c);
	swr = wr_of(IBV_WR_RDMA_WRITE, 0x61, &s, 0);
	swr.wr.rdma.remote_addr = iova;
	swr.wr.rdma.rkey = key1;
	CHECK(A.ops.post_send(qa, &swr, &bsw) == 0);
	fk_run();
	CHECK(poll_all(&A, A.cq, wc, 8) == 1 && wc[0].wr_id == 0x61 &&
	      wc[0].status == IBV_WC_SUCCESS);
	hx_mr_read(w, 0, A.mr->lkey, 0xa4000, want + 0x100, (uint32_t)len);
	for (i = 0; i < 3; i++)
		hx_mem_read(w, 1, page[i], got + 4096 * i, 4096);
	CHECK(!memcmp(got, want, sizeof(got)));

	/* SEND_WITH_INV from the provider: K's receive says which rkey went */
	r = sge(&K, 0x1000, 256);
	CHECK(K.ops.post_recv(K.qp, &rwr, &brw) == 0);
	s.length = 200;
	swr = wr_of(IBV_WR_SEND_WITH_INV, 0x62, &s, key1);
	CHECK(A.ops.post_send(qa, &swr, &bsw) == 0);
	fk_run();
	CHECK(poll_all(&A, A.cq, wc, 8) == 1 && wc[0].wr_id == 0x62 &&
	      wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_SEND);
	n = poll_all(&K, K.cq, wc, 8);
	CHECK(n == 1 && wc[0].wr_id == 0x70 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[0].opcode == IBV_WC_RECV && wc[0].byte_len == 200 &&
	      wc[0].wc_flags == IBV_WC_WITH_INV && wc[0].invalidated_rkey == key1);
	CHECK(same(&A, 0xa4000, &K, 0x1000, 200));
	CHECK((mpt_flags(key1) & (QRNIC_MPT_FAST | QRNIC_MPT_VALID)) == QRNIC_MPT_FAST);

	/* registered again (a new variant), then the provider's LOCAL_INV on
	 * the kernel QP */
	k_post_reg_mr(K.qp, 0x63, key2, iova, len, 3, pbl,
		      QRNIC_ACCESS_LOCAL_WRITE | QRNIC_ACCESS_REMOTE_WRITE);
	swr = wr_of(IBV_WR_LOCAL_INV, 0x64, NULL, key2);
	fk_run();
	CHECK(mpt_flags(key2) & QRNIC_MPT_VALID);
	CHECK(K.ops.post_send(K.qp, &swr, &bsw) == 0);
	fk_run();
	n = poll_all(&K, K.cq, wc, 8);
	CHECK(n == 2 && wc[0].wr_id == 0x63 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[1].wr_id == 0x64 && wc[1].status == IBV_WC_SUCCESS &&
	      wc[1].opcode == IBV_WC_LOCAL_INV);
	CHECK((mpt_flags(key2) & (QRNIC_MPT_FAST | QRNIC_MPT_VALID)) == QRNIC_MPT_FAST);

	/* the invalidated key is dead: a WRITE through it is NAKed */
	s.length = 64;
	swr = wr_of(IBV_WR_RDMA_WRITE, 0x65, &s, 0);
	swr.wr.rdma.remote_addr = iova;
	swr.wr.rdma.rkey = key2;
	CHECK(A.ops.post_send(qa, &swr, &bsw) == 0);
	fk_run();
	CHECK(poll_all(&A, A.cq, wc, 8) == 1 && wc[0].wr_id == 0x65 &&
	      wc[0].status == IBV_WC_REM_ACCESS_ERR);
	poll_all(&K, K.cq, wc, 8);

	CHECK(A.ops.destroy_qp(qa) == 0);
	/* DEREG_MR takes any variant of the key */
	CHECK(hx_destroy(w, 1, QRNIC_CMD_DEREG_MR, key0 ^ 0x80) == 0);
	app_close(&K);
}

/* ======================================================================= */
/* extended verbs: ibv_qp_ex (ibv_wr_*), ibv_cq_ex, parent domains          */
/* ======================================================================= */

#define RC_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |		\
		IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE |	\
		IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |	\
		IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |				\
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV)

static struct ibv_qp_ex *qpx_of(struct ibv_qp *qp)
{
	struct verbs_qp *vqp = container_of(qp, struct verbs_qp, qp);

	return (vqp->comp_mask & VERBS_QP_EX) ? &vqp->qp_ex : NULL;
}

static struct ibv_cq_ex *mkcq_ex(struct app *a, uint32_t cqe, uint64_t wc_flags)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = cqe, .wc_flags = wc_flags };

	return a->ops.create_cq_ex(a->ctx, &ca);
}

static struct ibv_qp *mkqp_ex(struct app *a, struct ibv_pd *pd, struct ibv_cq *cq,
			      enum ibv_qp_type type, uint64_t ops)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd ? pd : a->pd,
		.send_ops_flags = ops,
	};

	return a->ops.create_qp_ex(a->ctx, &ia);
}

/* Every completion start/next/end_poll gives, read back with all the
 * ibv_wc_read_* functions into struct ibv_wc (as ibv_poll_cq fills it). */
static int poll_ex(struct ibv_cq_ex *cq, struct ibv_wc *wc, int max)
{
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
	int n = 0;

	if (ibv_start_poll(cq, &pa))
		return 0;
	do {
		struct ibv_wc *x = &wc[n++];

		memset(x, 0, sizeof(*x));
		x->wr_id = cq->wr_id;
		x->status = cq->status;
		x->opcode = ibv_wc_read_opcode(cq);
		x->vendor_err = ibv_wc_read_vendor_err(cq);
		x->byte_len = ibv_wc_read_byte_len(cq);
		x->wc_flags = ibv_wc_read_wc_flags(cq);
		if (x->wc_flags & IBV_WC_WITH_IMM)
			x->imm_data = ibv_wc_read_imm_data(cq);
		if (x->wc_flags & IBV_WC_WITH_INV)
			x->invalidated_rkey = ibv_wc_read_invalidated_rkey(cq);
		x->qp_num = ibv_wc_read_qp_num(cq);
		x->src_qp = ibv_wc_read_src_qp(cq);
		x->slid = (uint16_t)ibv_wc_read_slid(cq);
		x->sl = ibv_wc_read_sl(cq);
		x->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
	} while (n < max && ibv_next_poll(cq) == 0);
	ibv_end_poll(cq);
	return n;
}

static bool wc_same(const struct ibv_wc *a, const struct ibv_wc *b)
{
	return a->wr_id == b->wr_id && a->status == b->status && a->opcode == b->opcode &&
	       a->vendor_err == b->vendor_err && a->byte_len == b->byte_len &&
	       a->imm_data == b->imm_data && a->qp_num == b->qp_num &&
	       a->src_qp == b->src_qp && a->wc_flags == b->wc_flags &&
	       a->pkey_index == b->pkey_index && a->slid == b->slid && a->sl == b->sl &&
	       a->dlid_path_bits == b->dlid_path_bits;
}

/* The ibv_wr_* calls for wr (one WR of a batch); inl_api: its data through
 * ibv_wr_set_inline_data(_list) instead of the SGEs (wr must be INLINE). */
static void wr_post_ex(struct ibv_qp_ex *x, const struct ibv_send_wr *wr, bool ud, bool inl_api)
{
	x->wr_id = wr->wr_id;
	x->wr_flags = (unsigned int)wr->send_flags;
	switch (wr->opcode) {
	case IBV_WR_SEND:
		ibv_wr_send(x);
		break;
	case IBV_WR_SEND_WITH_IMM:
		ibv_wr_send_imm(x, wr->imm_data);
		break;
	case IBV_WR_SEND_WITH_INV:
		ibv_wr_send_inv(x, wr->invalidate_rkey);
		break;
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(x, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		ibv_wr_rdma_write_imm(x, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr, wr->imm_data);
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(x, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		ibv_wr_atomic_cmp_swp(x, wr->wr.atomic.rkey, wr->wr.atomic.remote_addr,
				      wr->wr.atomic.compare_add, wr->wr.atomic.swap);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		ibv_wr_atomic_fetch_add(x, wr->wr.atomic.rkey, wr->wr.atomic.remote_addr,
					wr->wr.atomic.compare_add);
		break;
	case IBV_WR_LOCAL_INV:
		ibv_wr_local_inv(x, wr->invalidate_rkey);
		return;
	default:
		return;
	}
	if (ud)
		ibv_wr_set_ud_addr(x, wr->wr.ud.ah, wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);
	if (inl_api) {
		struct ibv_data_buf b[4];
		int i;

		for (i = 0; i < wr->num_sge; i++)
			b[i] = (struct ibv_data_buf){ (void *)(uintptr_t)wr->sg_list[i].addr,
						      wr->sg_list[i].length };
		if (wr->num_sge == 1)
			ibv_wr_set_inline_data(x, b[0].addr, b[0].length);
		else
			ibv_wr_set_inline_data_list(x, (size_t)wr->num_sge, b);
	} else if (wr->num_sge == 1) {
		ibv_wr_set_sge(x, wr->sg_list[0].lkey, wr->sg_list[0].addr, wr->sg_list[0].length);
	} else {
		ibv_wr_set_sge_list(x, (size_t)wr->num_sge, wr->sg_list);
	}
}

static void zero(struct app *a, uint64_t off, uint32_t len)
{
	static uint8_t z[MRLEN];

	hx_mr_write(w, a->d, a->mr->lkey, off, z, len);
}

static bool mr_is(struct app *a, uint64_t off, const void *data, uint32_t len)
{
	static uint8_t x[MRLEN];

	hx_mr_read(w, a->d, a->mr->lkey, off, x, len);
	return !memcmp(x, data, len);
}

static uint64_t mr_u64(struct app *a, uint64_t off)
{
	uint64_t v;

	hx_mr_read(w, a->d, a->mr->lkey, off, &v, 8);
	return v;
}

/* create_cq_ex / create_qp_ex refuse what the device cannot do */
static void test_ex_unsupported(void)
{
	static const uint64_t bad_wc[] = {
		/* the device clock is virtual time, no wall clock (verbs.c) */
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
		IBV_WC_EX_WITH_CVLAN, IBV_WC_EX_WITH_FLOW_TAG, IBV_WC_EX_WITH_TM_INFO,
	};
	struct {
		enum ibv_qp_type type;
		uint64_t ops;
	} bad_ops[] = {
		{ IBV_QPT_RC, IBV_QP_EX_WITH_TSO },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_FLUSH },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_ATOMIC_WRITE },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_SEND_WITH_INV },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP },
	};
	struct ibv_cq_init_attr_ex ca = { .cqe = 4, .comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
					  .flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN };
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = A.cq, .recv_cq = A.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
		.pd = A.pd, .create_flags = IBV_QP_CREATE_SCATTER_FCS,
	};
	struct ibv_cq_ex *cx;
	struct ibv_qp *qp;
	unsigned int i, cmds = fk_cq_ex_cmds;

	CHECK(A.ops.create_cq_ex && A.ops.create_qp_ex && A.ops.alloc_parent_domain &&
	      A.ops.alloc_td && A.ops.dealloc_td && A.ops.query_device_ex);
	CHECK(A.ops.query_rt_values != NULL);	/* the device clock (ABI 1.7) */
	for (i = 0; i < sizeof(bad_wc) / sizeof(bad_wc[0]); i++) {
		errno = 0;
		cx = mkcq_ex(&A, 4, IBV_WC_EX_WITH_BYTE_LEN | bad_wc[i]);
		CHECK(cx == NULL && errno == EOPNOTSUPP);
	}
	errno = 0;
	CHECK(A.ops.create_cq_ex(A.ctx, &ca) == NULL && errno == EOPNOTSUPP);
	CHECK(fk_cq_ex_cmds == cmds);	/* refused before the kernel */
	/* a plain PD is no parent domain */
	ca = (struct ibv_cq_init_attr_ex){ .cqe = 4, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
					   .parent_domain = A.pd };
	errno = 0;
	CHECK(A.ops.create_cq_ex(A.ctx, &ca) == NULL && errno == EINVAL);

	for (i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
		errno = 0;
		qp = mkqp_ex(&A, NULL, A.cq, bad_ops[i].type, bad_ops[i].ops);
		CHECK(qp == NULL && errno == EOPNOTSUPP);
	}
	errno = 0;
	CHECK(A.ops.create_qp_ex(A.ctx, &ia) == NULL && errno == EOPNOTSUPP);
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.qp_type = IBV_QPT_RAW_PACKET;	/* XRC_SEND: test_xrc */
	errno = 0;
	CHECK(A.ops.create_qp_ex(A.ctx, &ia) == NULL && errno == EOPNOTSUPP);
	/* without SEND_OPS_FLAGS: a QP without ibv_qp_ex, as from create_qp */
	ia.qp_type = IBV_QPT_RC;
	qp = A.ops.create_qp_ex(A.ctx, &ia);
	CHECK(qp && !qpx_of(qp) && ia.cap.max_send_wr == 2);
	if (qp)
		CHECK(A.ops.destroy_qp(qp) == 0);
	qp = mkqp(&A, IBV_QPT_RC, 2, 2, NULL);
	CHECK(qp && !qpx_of(qp));
	if (qp)
		CHECK(A.ops.destroy_qp(qp) == 0);
	/* every opcode the QP type has */
	qp = mkqp_ex(&A, NULL, A.cq, IBV_QPT_UD, IBV_QP_EX_WITH_SEND |
		     IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_LOCAL_INV);
	CHECK(qp && qpx_of(qp) && qpx_of(qp)->wr_send && !qpx_of(qp)->wr_rdma_write &&
	      !qpx_of(qp)->wr_bind_mw);
	if (qp)
		CHECK(A.ops.destroy_qp(qp) == 0);
}

static uint8_t hbuf[256];	/* host memory: inline payloads */

/* One batch of ibv_wr_* calls (fn) on qp must fail with err at
 * wr_complete and post nothing. */
static void wr_fails(struct app *a, struct ibv_qp *qp, struct ibv_cq_ex *cq,
		     void (*fn)(struct ibv_qp_ex *x, struct app *a), int err, int line)
{
	struct ibv_qp_ex *x = qpx_of(qp);
	struct qrnic_qp *q = to_qqp(qp);
	uint32_t pi = q->sq.pi;
	struct ibv_wc wc[4];
	int rc;

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	fn(x, a);
	rc = ibv_wr_complete(x);
	fk_run();
	CHECK(rc == err && q->sq.pi == pi && poll_ex(cq, wc, 4) == 0);
	if (rc != err || q->sq.pi != pi)
		printf("  line %d: wr_complete %d (want %d), pi %u -> %u\n", line, rc, err,
		       pi, q->sq.pi);
}

static void bad_setter_first(struct ibv_qp_ex *x, struct app *a)
{
	ibv_wr_set_sge(x, a->mr->lkey, IOVA, 8);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a->mr->lkey, IOVA, 8);
}

static void bad_atomic_sges(struct ibv_qp_ex *x, struct app *a)
{
	struct ibv_sge s[2] = { sge(a, 0, 8), sge(a, 8, 8) };

	ibv_wr_send(x);		/* a good one first: it is not posted either */
	ibv_wr_set_sge(x, a->mr->lkey, IOVA, 8);
	ibv_wr_atomic_fetch_add(x, B.mr->rkey, IOVA, 1);
	ibv_wr_set_sge_list(x, 2, s);
}

static void bad_atomic_no_sge(struct ibv_qp_ex *x, struct app *a)
{
	(void)a;
	ibv_wr_atomic_cmp_swp(x, B.mr->rkey, IOVA, 1, 2);
}

static void bad_inline_read(struct ibv_qp_ex *x, struct app *a)
{
	(void)a;
	ibv_wr_rdma_read(x, B.mr->rkey, IOVA);
	ibv_wr_set_inline_data(x, hbuf, 8);
}

static void bad_inline_long(struct ibv_qp_ex *x, struct app *a)
{
	(void)a;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, hbuf, 65);	/* max_inline 64 */
}

static void bad_inline_flag_long(struct ibv_qp_ex *x, struct app *a)
{
	(void)a;
	x->wr_flags |= IBV_SEND_INLINE;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 0, (uintptr_t)hbuf, 65);
}

static void bad_many_sges(struct ibv_qp_ex *x, struct app *a)
{
	unsigned int i, n = to_qqp_ex(x)->sq.max_sge + 1;	/* what the slot holds + 1 */
	struct ibv_sge s[QRNIC_MAX_SGE + 1];

	for (i = 0; i < n; i++)
		s[i] = sge(a, 8 * i, 8);
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, n, s);
}

static void bad_full(struct ibv_qp_ex *x, struct app *a)
{
	int i;

	for (i = 0; i < 9; i++) {	/* 8 slots */
		ibv_wr_send(x);
		ibv_wr_set_sge(x, a->mr->lkey, IOVA, 8);
	}
}

static void test_wr_errors(struct app *a, struct ibv_qp *qp, struct ibv_cq_ex *cq)
{
	struct ibv_qp_ex *x = qpx_of(qp);
	struct qrnic_qp *q = to_qqp(qp);
	struct ibv_qp *fresh;
	struct ibv_wc wc[4];
	uint32_t pi;

	wr_fails(a, qp, cq, bad_setter_first, EINVAL, __LINE__);
	wr_fails(a, qp, cq, bad_atomic_sges, EINVAL, __LINE__);
	wr_fails(a, qp, cq, bad_atomic_no_sge, EINVAL, __LINE__);
	wr_fails(a, qp, cq, bad_inline_read, EINVAL, __LINE__);
	wr_fails(a, qp, cq, bad_inline_long, EINVAL, __LINE__);
	wr_fails(a, qp, cq, bad_inline_flag_long, EINVAL, __LINE__);
	wr_fails(a, qp, cq, bad_many_sges, EINVAL, __LINE__);
	wr_fails(a, qp, cq, bad_full, ENOMEM, __LINE__);

	/* wr_abort drops the batch */
	pi = q->sq.pi;
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, B.mr->rkey, IOVA + 0x40000);
	ibv_wr_set_sge(x, a->mr->lkey, IOVA, 8);
	ibv_wr_abort(x);
	fk_run();
	CHECK(q->sq.pi == pi && poll_ex(cq, wc, 4) == 0);

	/* and the QP still works: 8 WRs, the whole SQ, one batch; unsignaled
	 * ones come back with the signaled last one */
	ibv_wr_start(x);
	for (pi = 0; pi < 8; pi++) {
		x->wr_id = 0x60 + pi;
		x->wr_flags = pi == 7 ? IBV_SEND_SIGNALED : 0;
		ibv_wr_rdma_write(x, B.mr->rkey, IOVA + 0x40000);
		ibv_wr_set_sge(x, a->mr->lkey, IOVA, 8);
	}
	CHECK(ibv_wr_complete(x) == 0);
	fk_run();
	CHECK(poll_ex(cq, wc, 4) == 1 && wc[0].wr_id == 0x67 && wc[0].status == IBV_WC_SUCCESS);
	CHECK(q->sq.ci == q->sq.pi);

	/* before RTS: EINVAL, as post_send */
	fresh = mkqp_ex(a, NULL, ibv_cq_ex_to_cq(cq), IBV_QPT_RC, RC_OPS);
	CHECK(fresh != NULL);
	if (fresh) {
		ibv_wr_start(qpx_of(fresh));
		ibv_wr_send(qpx_of(fresh));
		ibv_wr_set_sge(qpx_of(fresh), a->mr->lkey, IOVA, 8);
		CHECK(ibv_wr_complete(qpx_of(fresh)) == EINVAL && to_qqp(fresh)->sq.pi == 0);
		CHECK(a->ops.destroy_qp(fresh) == 0);
	}
}

/*
 * The same 8 RC work requests (every RC opcode, SGE lists, inline data
 * from SGEs and through set_inline_data(_list), SOLICITED, FENCE) posted
 * alternately with ibv_post_send and with the ibv_wr_* API: the WQE bytes
 * must be equal, the payloads arrive, and the completions polled with
 * ibv_poll_cq (post_send rounds) and with start/next/end_poll (wr rounds)
 * must be equal field by field.  4 rounds lap both CQs (16 and 8 entries;
 * B's without a dbrec: its consumer index goes by doorbell).
 */
static void test_wr_rc(void)
{
	struct ibv_cq_ex *acx = mkcq_ex(&A, 16, IBV_WC_STANDARD_FLAGS), *bcx;
	struct ibv_qp *qa = NULL, *qb = NULL;
	struct ibv_qp_ex *xa;
	struct ibv_wc awc[2][16], bwc[2][8];
	int round, i;

	fk_no_dbrec = true;
	bcx = mkcq_ex(&B, 8, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
		      IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP);
	fk_no_dbrec = false;
	CHECK(acx && bcx);
	if (!acx || !bcx)
		return;
	CHECK(to_qcq_ex(acx)->dbrec && !to_qcq_ex(bcx)->dbrec);
	qa = mkqp_ex(&A, NULL, ibv_cq_ex_to_cq(acx), IBV_QPT_RC, RC_OPS);
	qb = mkqp_ex(&B, NULL, ibv_cq_ex_to_cq(bcx), IBV_QPT_RC, RC_OPS);
	CHECK(qa && qb && qpx_of(qa) && qpx_of(qb));
	if (!qa || !qb || !qpx_of(qa))
		return;
	xa = qpx_of(qa);
	CHECK(to_rts_rc(&A, qa, qb->qp_num, 1) == 0 && to_rts_rc(&B, qb, qa->qp_num, 0) == 0);

	for (i = 0; i < (int)sizeof(hbuf); i++)
		hbuf[i] = (uint8_t)(0xc3 ^ (i * 7));

	for (round = 0; round < 4; round++) {
		bool ex = round & 1;
		struct ibv_sge s0[2] = { sge(&A, 0x100, 300), sge(&A, 0x800, 200) };
		struct ibv_sge s1[2] = { { (uintptr_t)hbuf, 20, 0 }, { (uintptr_t)hbuf + 100, 30, 0 } };
		struct ibv_sge s2 = { (uintptr_t)hbuf + 50, 40, 0 };
		struct ibv_sge s3 = sge(&A, 0x2000, 3000);
		struct ibv_sge s4 = { (uintptr_t)hbuf + 7, 64, 0 };
		struct ibv_sge s5 = sge(&A, 0x6000, 2500);
		struct ibv_sge s6 = sge(&A, 0x8000, 8), s7 = sge(&A, 0x8008, 8);
		struct ibv_send_wr wr[8] = {
			{ .wr_id = 0x10, .sg_list = s0, .num_sge = 2, .opcode = IBV_WR_SEND,
			  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED },
			{ .wr_id = 0x11, .sg_list = s1, .num_sge = 2, .opcode = IBV_WR_SEND_WITH_IMM,
			  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
			  .imm_data = htobe32(0x1234500u + (unsigned int)(round >> 1)) },
			{ .wr_id = 0x12, .sg_list = &s2, .num_sge = 1, .opcode = IBV_WR_SEND,
			  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE },
			{ .wr_id = 0x13, .sg_list = &s3, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			  .send_flags = IBV_SEND_SIGNALED },
			{ .wr_id = 0x14, .sg_list = &s4, .num_sge = 1,
			  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
			  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
			  .imm_data = htobe32(0xfeed0000u + (unsigned int)(round >> 1)) },
			{ .wr_id = 0x15, .sg_list = &s5, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
			  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE },
			{ .wr_id = 0x16, .sg_list = &s6, .num_sge = 1,
			  .opcode = IBV_WR_ATOMIC_CMP_AND_SWP, .send_flags = IBV_SEND_SIGNALED },
			{ .wr_id = 0x17, .sg_list = &s7, .num_sge = 1,
			  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .send_flags = IBV_SEND_SIGNALED },
		}, *bsw;
		struct ibv_recv_wr rwr[4], *brw;
		struct ibv_sge rs[4] = { sge(&B, 0x100, 600), sge(&B, 0x1000, 100),
					 sge(&B, 0x1100, 100), sge(&B, 0x1200, 16) };
		struct qrnic_qp *q = to_qqp(qa);
		uint32_t pi0 = q->sq.pi;
		struct ibv_wc *aw = awc[ex], *bw = bwc[ex];

		for (i = 0; i < 7; i++)
			wr[i].next = &wr[i + 1];
		wr[3].wr.rdma.rkey = B.mr->rkey;
		wr[3].wr.rdma.remote_addr = IOVA + 0x40000;
		wr[4].wr.rdma.rkey = B.mr->rkey;
		wr[4].wr.rdma.remote_addr = IOVA + 0x48000;
		wr[5].wr.rdma.rkey = B.mr->rkey;
		wr[5].wr.rdma.remote_addr = IOVA + 0x50000;
		wr[6].wr.atomic.rkey = B.mr->rkey;
		wr[6].wr.atomic.remote_addr = IOVA + 0x58000;
		wr[6].wr.atomic.compare_add = 5;
		wr[6].wr.atomic.swap = 9 + (uint64_t)round;
		wr[7].wr.atomic.rkey = B.mr->rkey;
		wr[7].wr.atomic.remote_addr = IOVA + 0x58008;
		wr[7].wr.atomic.compare_add = 3;

		fill(&A, 0x100, 300, (uint8_t)(10 + round));
		fill(&A, 0x800, 200, (uint8_t)(20 + round));
		fill(&A, 0x2000, 3000, (uint8_t)(30 + round));
		fill(&B, 0x50000, 2500, (uint8_t)(40 + round));
		zero(&A, 0x6000, 2500);
		zero(&A, 0x8000, 16);
		zero(&B, 0x40000, 3000);
		zero(&B, 0x48000, 64);
		zero(&B, 0x100, 600);
		{
			uint64_t v[2] = { 5, 100 };

			hx_mr_write(w, 1, B.mr->lkey, 0x58000, v, 16);
		}
		for (i = 0; i < 4; i++)
			rwr[i] = (struct ibv_recv_wr){ .wr_id = 0x20u + (unsigned int)i,
						       .sg_list = &rs[i], .num_sge = 1,
						       .next = i < 3 ? &rwr[i + 1] : NULL };
		CHECK(B.ops.post_recv(qb, rwr, &brw) == 0);

		if (!ex) {
			CHECK(A.ops.post_send(qa, wr, &bsw) == 0);
		} else {
			ibv_wr_start(xa);
			for (i = 0; i < 8; i++)	/* 1: set_inline_data_list, 4: set_inline_data */
				wr_post_ex(xa, &wr[i], false, i == 1 || i == 4);
			CHECK(ibv_wr_complete(xa) == 0);
		}
		CHECK(q->sq.pi == pi0 + 8);
		/* the WQEs are the bytes post_send writes for the same WRs:
		 * header + data, qrnic_build_send_wqe's length */
		for (i = 0; i < 8; i++) {
			struct qrnic_sq_params p = {
				.wqe_shift = q->sq.wqe_shift, .max_sge = q->sq.max_sge,
				.max_inline = q->max_inline,
			};
			static uint8_t tmp[256];
			const uint8_t *slot = q->sq.ring +
				((size_t)((pi0 + (uint32_t)i) & q->sq.mask) << q->sq.wqe_shift);
			unsigned int len = qrnic_build_send_wqe(tmp, &wr[i], &p);

			CHECK(!memcmp(tmp, slot, len));
			if (memcmp(tmp, slot, len))
				printf("  %s: WQE %d differs from qrnic_build_send_wqe's\n",
				       ex ? "wr_*" : "post_send", i);
		}
		fk_run();

		if (ex) {
			CHECK(poll_ex(acx, aw, 16) == 8);
			CHECK(poll_ex(bcx, bw, 8) == 4);
		} else {
			CHECK(A.ops.poll_cq(ibv_cq_ex_to_cq(acx), 16, aw) == 8);
			CHECK(B.ops.poll_cq(ibv_cq_ex_to_cq(bcx), 8, bw) == 4);
		}
		for (i = 0; i < 8; i++)
			CHECK(aw[i].wr_id == 0x10u + (unsigned int)i &&
			      aw[i].status == IBV_WC_SUCCESS && aw[i].qp_num == qa->qp_num);
		CHECK(aw[5].opcode == IBV_WC_RDMA_READ && aw[5].byte_len == 2500 &&
		      aw[6].opcode == IBV_WC_COMP_SWAP && aw[7].opcode == IBV_WC_FETCH_ADD &&
		      aw[3].opcode == IBV_WC_RDMA_WRITE && aw[0].opcode == IBV_WC_SEND);
		CHECK(bw[0].wr_id == 0x20 && bw[0].opcode == IBV_WC_RECV && bw[0].byte_len == 500 &&
		      bw[0].wc_flags == 0 && bw[0].src_qp == qa->qp_num && bw[0].qp_num == qb->qp_num);
		CHECK(bw[1].wr_id == 0x21 && bw[1].byte_len == 50 && bw[1].wc_flags == IBV_WC_WITH_IMM &&
		      be32toh(bw[1].imm_data) == 0x1234500u + (unsigned int)(round >> 1));
		CHECK(bw[2].wr_id == 0x22 && bw[2].byte_len == 40 && bw[2].wc_flags == 0);
		CHECK(bw[3].wr_id == 0x23 && bw[3].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		      bw[3].wc_flags == IBV_WC_WITH_IMM &&
		      be32toh(bw[3].imm_data) == 0xfeed0000u + (unsigned int)(round >> 1));
		/* payloads */
		CHECK(same(&A, 0x100, &B, 0x100, 300) && same(&A, 0x800, &B, 0x100 + 300, 200));
		CHECK(mr_is(&B, 0x1000, hbuf, 20) && mr_is(&B, 0x1000 + 20, hbuf + 100, 30));
		CHECK(mr_is(&B, 0x1100, hbuf + 50, 40));
		CHECK(same(&A, 0x2000, &B, 0x40000, 3000));
		CHECK(mr_is(&B, 0x48000, hbuf + 7, 64));
		CHECK(same(&A, 0x6000, &B, 0x50000, 2500));
		CHECK(mr_u64(&A, 0x8000) == 5 && mr_u64(&B, 0x58000) == 9 + (uint64_t)round);
		CHECK(mr_u64(&A, 0x8008) == 100 && mr_u64(&B, 0x58008) == 103);
		/* every slot back; the CQ index published */
		CHECK(q->sq.ci == q->sq.pi && to_qqp(qb)->rq.ci == to_qqp(qb)->rq.pi);
		CHECK(le32toh(*to_qcq_ex(acx)->dbrec) == to_qcq_ex(acx)->ci);
		if (ex) {	/* the same completions, both ways of polling */
			for (i = 0; i < 8; i++)
				CHECK(wc_same(&awc[0][i], &awc[1][i]));
			for (i = 0; i < 4; i++)
				CHECK(wc_same(&bwc[0][i], &bwc[1][i]));
		}
	}
	CHECK(to_qcq_ex(acx)->ci == 32 && to_qcq_ex(bcx)->ci == 16);	/* lapped */

	/* empty CQ: ENOENT, and no end_poll owed (the lock is free again) */
	{
		struct ibv_poll_cq_attr pa = { 0 };
		struct ibv_wc wc[2];

		CHECK(ibv_start_poll(acx, &pa) == ENOENT);
		CHECK(A.ops.poll_cq(ibv_cq_ex_to_cq(acx), 2, wc) == 0);
		pa.comp_mask = 1;
		CHECK(ibv_start_poll(acx, &pa) == EINVAL);
	}

	/* mixed: one completion by poll_cq, the rest by start/next/end_poll */
	{
		struct ibv_sge s = sge(&A, 0x100, 8);
		struct ibv_wc wc[4];

		ibv_wr_start(xa);
		for (i = 0; i < 3; i++) {
			xa->wr_id = 0x50u + (unsigned int)i;
			xa->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_rdma_write(xa, B.mr->rkey, IOVA + 0x40000);
			ibv_wr_set_sge(xa, s.lkey, s.addr, s.length);
		}
		CHECK(ibv_wr_complete(xa) == 0);
		fk_run();
		CHECK(A.ops.poll_cq(ibv_cq_ex_to_cq(acx), 1, wc) == 1 && wc[0].wr_id == 0x50);
		CHECK(poll_ex(acx, wc, 4) == 2 && wc[0].wr_id == 0x51 && wc[1].wr_id == 0x52);
		CHECK(le32toh(*to_qcq_ex(acx)->dbrec) == 35);
	}

	test_wr_errors(&A, qa, acx);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	CHECK(A.ops.destroy_cq(ibv_cq_ex_to_cq(acx)) == 0);
	CHECK(B.ops.destroy_cq(ibv_cq_ex_to_cq(bcx)) == 0);
}

/*
 * Error completions through start/next/end_poll: a LOCAL_INV of an
 * ordinary MR's key (LOC_QP_OP_ERR, vendor MR_STATE) and the SEND behind
 * it (flushed); a SEND_WITH_INV naming an ordinary MR (REM_INV_REQ_ERR at
 * both ends).  The same fields as ibv_poll_cq gives (test_invalidate_user_mrs).
 */
static void test_wr_error_completions(void)
{
	struct ibv_cq_ex *acx = mkcq_ex(&A, 8, IBV_WC_STANDARD_FLAGS);
	struct ibv_cq_ex *bcx = mkcq_ex(&B, 8, IBV_WC_STANDARD_FLAGS);
	struct ibv_sge r = sge(&B, 0xa0000, 64);
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &r, .num_sge = 1 }, *brw;
	struct ibv_qp *qa, *qb;
	struct ibv_qp_ex *x;
	struct ibv_wc wc[8];

	CHECK(acx && bcx);
	if (!acx || !bcx)
		return;
	qa = mkqp_ex(&A, NULL, ibv_cq_ex_to_cq(acx), IBV_QPT_RC, RC_OPS);
	qb = mkqp_ex(&B, NULL, ibv_cq_ex_to_cq(bcx), IBV_QPT_RC, RC_OPS);
	CHECK(qa && qb && !to_rts_rc(&A, qa, qb->qp_num, 1) && !to_rts_rc(&B, qb, qa->qp_num, 0));
	x = qpx_of(qa);
	ibv_wr_start(x);
	x->wr_id = 0x70;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(x, A.mr->lkey);
	ibv_wr_set_sge(x, A.mr->lkey, IOVA, 8);		/* ignored, as by post_send */
	x->wr_id = 0x71;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, A.mr->lkey, IOVA, 8);
	CHECK(ibv_wr_complete(x) == 0);
	fk_run();
	CHECK(poll_ex(acx, wc, 8) == 2);
	CHECK(wc[0].wr_id == 0x70 && wc[0].status == IBV_WC_LOC_QP_OP_ERR &&
	      wc[0].opcode == IBV_WC_LOCAL_INV && wc[0].vendor_err == QRNIC_VERR_MR_STATE &&
	      wc[0].qp_num == qa->qp_num);
	CHECK(wc[1].wr_id == 0x71 && wc[1].status == IBV_WC_WR_FLUSH_ERR &&
	      wc[1].vendor_err == QRNIC_VERR_FLUSH);
	CHECK(to_qqp(qa)->sq.ci == to_qqp(qa)->sq.pi);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);

	qa = mkqp_ex(&A, NULL, ibv_cq_ex_to_cq(acx), IBV_QPT_RC, RC_OPS);
	qb = mkqp_ex(&B, NULL, ibv_cq_ex_to_cq(bcx), IBV_QPT_RC, RC_OPS);
	CHECK(qa && qb && !to_rts_rc(&A, qa, qb->qp_num, 1) && !to_rts_rc(&B, qb, qa->qp_num, 0));
	CHECK(B.ops.post_recv(qb, &rwr, &brw) == 0);
	x = qpx_of(qa);
	ibv_wr_start(x);
	x->wr_id = 0x72;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(x, B.mr->rkey);
	ibv_wr_set_sge(x, A.mr->lkey, IOVA + 0xa0000, 64);
	CHECK(ibv_wr_complete(x) == 0);
	fk_run();
	CHECK(poll_ex(acx, wc, 8) == 1 && wc[0].wr_id == 0x72 &&
	      wc[0].status == IBV_WC_REM_INV_REQ_ERR && wc[0].vendor_err == QRNIC_VERR_NAK);
	CHECK(poll_ex(bcx, wc, 8) == 1 && wc[0].wr_id == 1 &&
	      wc[0].status == IBV_WC_REM_INV_REQ_ERR && wc[0].wc_flags == 0);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	poll_ex(bcx, wc, 8);
	CHECK(A.ops.destroy_cq(ibv_cq_ex_to_cq(acx)) == 0);
	CHECK(B.ops.destroy_cq(ibv_cq_ex_to_cq(bcx)) == 0);
}

/* UD through the wr_* API: set_ud_addr, SEND and SEND_WITH_IMM (inline),
 * the receiver's GRH flag, src_qp and immediate via the read functions. */
static void test_wr_ud(void)
{
	struct ibv_cq_ex *acx = mkcq_ex(&A, 8, IBV_WC_STANDARD_FLAGS);
	struct ibv_cq_ex *bcx = mkcq_ex(&B, 8, IBV_WC_STANDARD_FLAGS);
	struct ibv_ah_attr aha = { .is_global = 1, .port_num = 1 };
	struct ibv_sge r[2] = { sge(&B, 0x71000, 40 + 500), sge(&B, 0x72000, 40 + 64) };
	struct ibv_recv_wr rwr[2] = {
		{ .wr_id = 81, .sg_list = &r[0], .num_sge = 1, .next = &rwr[1] },
		{ .wr_id = 82, .sg_list = &r[1], .num_sge = 1 },
	}, *brw;
	struct ibv_qp *ua, *ub;
	struct ibv_qp_attr at;
	struct ibv_qp_ex *x;
	struct ibv_ah *ah;
	struct ibv_wc wc[4];
	int i;

	CHECK(acx && bcx);
	if (!acx || !bcx)
		return;
	ua = mkqp_ex(&A, NULL, ibv_cq_ex_to_cq(acx), IBV_QPT_UD,
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	ub = mkqp_ex(&B, NULL, ibv_cq_ex_to_cq(bcx), IBV_QPT_UD, IBV_QP_EX_WITH_SEND);
	CHECK(ua && ub);
	if (!ua || !ub)
		return;
	for (i = 0; i < 2; i++) {
		struct app *a = i ? &B : &A;
		struct ibv_qp *q = i ? ub : ua;

		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_INIT;
		at.port_num = 1;
		at.qkey = 0x1234;
		CHECK(a->ops.modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_QKEY) == 0);
		at.qp_state = IBV_QPS_RTR;
		CHECK(a->ops.modify_qp(q, &at, IBV_QP_STATE) == 0);
		at.qp_state = IBV_QPS_RTS;
		at.sq_psn = 3;
		CHECK(a->ops.modify_qp(q, &at, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
	}
	gid_of(1, aha.grh.dgid.raw);
	ah = A.ops.create_ah(A.pd, &aha);
	CHECK(ah != NULL);
	x = qpx_of(ua);

	/* a UD send without set_ud_addr is refused */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, A.mr->lkey, IOVA, 8);
	CHECK(ibv_wr_complete(x) == EINVAL && to_qqp(ua)->sq.pi == 0);

	fill(&A, 0x70000, 500, 9);
	CHECK(B.ops.post_recv(ub, rwr, &brw) == 0);
	ibv_wr_start(x);
	x->wr_id = 91;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, A.mr->lkey, IOVA + 0x70000, 500);
	ibv_wr_set_ud_addr(x, ah, ub->qp_num, 0x1234);
	x->wr_id = 92;
	ibv_wr_send_imm(x, htobe32(0x5151));
	ibv_wr_set_ud_addr(x, ah, ub->qp_num, 0x1234);
	ibv_wr_set_inline_data(x, hbuf, 64);
	CHECK(ibv_wr_complete(x) == 0);
	fk_run();
	CHECK(poll_ex(acx, wc, 4) == 2 && wc[0].wr_id == 91 && wc[1].wr_id == 92 &&
	      wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS);
	CHECK(poll_ex(bcx, wc, 4) == 2);
	CHECK(wc[0].wr_id == 81 && wc[0].status == IBV_WC_SUCCESS && wc[0].byte_len == 540 &&
	      wc[0].wc_flags == IBV_WC_GRH && wc[0].src_qp == ua->qp_num &&
	      wc[0].qp_num == ub->qp_num && wc[0].slid == 0 && wc[0].sl == 0 &&
	      wc[0].dlid_path_bits == 0);
	CHECK(wc[1].wr_id == 82 && wc[1].byte_len == 104 &&
	      wc[1].wc_flags == (IBV_WC_GRH | IBV_WC_WITH_IMM) && be32toh(wc[1].imm_data) == 0x5151);
	CHECK(same(&A, 0x70000, &B, 0x71000 + 40, 500) && mr_is(&B, 0x72000 + 40, hbuf, 64));

	CHECK(A.ops.destroy_ah(ah) == 0);
	CHECK(A.ops.destroy_qp(ua) == 0 && B.ops.destroy_qp(ub) == 0);
	CHECK(A.ops.destroy_cq(ibv_cq_ex_to_cq(acx)) == 0);
	CHECK(B.ops.destroy_cq(ibv_cq_ex_to_cq(bcx)) == 0);
}

/*
 * Parent domains: a CQ, a QP, an MR and an AH created with one (over A's
 * PD, with and without a TD) are objects of A's PD: an RDMA WRITE through
 * the parent domain's MR and QP to B works; the PD, the TD and the parent
 * domain cannot go while something uses them (EBUSY).
 */
static void test_parent_domain(void)
{
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_td *td = A.ops.alloc_td(A.ctx, &ta);
	struct ibv_parent_domain_init_attr pa = { .pd = A.pd, .td = td,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT, .pd_context = &ta };
	struct ibv_cq_init_attr_ex ca = { .cqe = 4, .wc_flags = IBV_WC_STANDARD_FLAGS,
					  .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD };
	struct ibv_pd *par, *par2;
	struct ibv_cq_ex *cx;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mr;
	struct ibv_qp_ex *x;
	struct ibv_wc wc[4];

	CHECK(td != NULL);
	par = A.ops.alloc_parent_domain(A.ctx, &pa);
	CHECK(par != NULL);
	if (!par)
		return;
	CHECK(par->handle == A.pd->handle && par->context == A.ctx &&
	      to_qpd(par)->pdn == to_qpd(A.pd)->pdn);
	/* no parent domain over a parent domain; a TD is optional */
	pa.pd = par;
	errno = 0;
	CHECK(A.ops.alloc_parent_domain(A.ctx, &pa) == NULL && errno == EINVAL);
	pa.pd = A.pd;
	pa.td = NULL;
	pa.comp_mask = 0;
	par2 = A.ops.alloc_parent_domain(A.ctx, &pa);
	CHECK(par2 != NULL);

	ca.parent_domain = par;
	cx = A.ops.create_cq_ex(A.ctx, &ca);
	CHECK(cx != NULL);
	mr = A.ops.reg_mr(par2, (void *)(uintptr_t)(IOVA + MRLEN), 65536, IOVA + MRLEN,
			  IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL && mr->pd == par2);
	qa = mkqp_ex(&A, par, cx ? ibv_cq_ex_to_cq(cx) : A.cq, IBV_QPT_RC, RC_OPS);
	qb = mkqp_ex(&B, NULL, B.cq, IBV_QPT_RC, RC_OPS);
	CHECK(qa && qb && qa->pd == par);
	if (!cx || !mr || !qa || !qb)
		return;
	CHECK(!to_rts_rc(&A, qa, qb->qp_num, 1) && !to_rts_rc(&B, qb, qa->qp_num, 0));

	/* in use: EBUSY */
	CHECK(A.ops.dealloc_pd(par) == EBUSY && A.ops.dealloc_pd(par2) == EBUSY);
	CHECK(A.ops.dealloc_pd(A.pd) == EBUSY && A.ops.dealloc_td(td) == EBUSY);

	/* the parent domain's MR (A's PD) is a local key for the QP */
	{
		static uint8_t src[4096];
		unsigned int i;

		for (i = 0; i < sizeof(src); i++)
			src[i] = (uint8_t)(i * 13 + 5);
		hx_mr_write(w, 0, mr->lkey, 0, src, sizeof(src));
		zero(&B, 0x90000, 4096);
		x = qpx_of(qa);
		ibv_wr_start(x);
		x->wr_id = 0xd0;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(x, B.mr->rkey, IOVA + 0x90000);
		ibv_wr_set_sge(x, mr->lkey, IOVA + MRLEN, 4096);
		CHECK(ibv_wr_complete(x) == 0);
		fk_run();
		CHECK(poll_ex(cx, wc, 4) == 1 && wc[0].wr_id == 0xd0 &&
		      wc[0].status == IBV_WC_SUCCESS);
		CHECK(mr_is(&B, 0x90000, src, 4096));
	}

	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	CHECK(A.ops.dealloc_pd(par) == EBUSY);		/* the CQ still */
	CHECK(A.ops.destroy_cq(ibv_cq_ex_to_cq(cx)) == 0);
	CHECK(A.ops.dealloc_pd(par) == 0);
	CHECK(A.ops.dealloc_td(td) == 0);
	CHECK(A.ops.dealloc_pd(par2) == EBUSY);		/* the MR */
	CHECK(A.ops.dereg_mr(verbs_get_mr(mr)) == 0);
	CHECK(A.ops.dealloc_pd(par2) == 0);
}

/* ======================================================================= */
/* memory windows (spec 12.13), CQ resize and moderation                    */
/* ======================================================================= */

#define MWIOVA	0x7f0000400000ull
#define MWLEN	(64 * 1024)

static void drain(void)
{
	struct ibv_wc wc[16];

	fk_run();
	while (poll_all(&A, A.cq, wc, 16) > 0)
		;
	while (poll_all(&B, B.cq, wc, 16) > 0)
		;
}

/* One WR of B on qb against A's memory at raddr with rkey (B's buffer at
 * boff); the status of its completion, or -1 without exactly one. */
static int b_access(struct ibv_qp *qb, enum ibv_wr_opcode op, uint32_t rkey,
		    uint64_t raddr, uint64_t boff, uint32_t len)
{
	struct ibv_sge s = sge(&B, boff, len);
	struct ibv_send_wr wr = { .wr_id = 0xb0b, .sg_list = &s, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc[4];

	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = raddr;
	if (B.ops.post_send(qb, &wr, &bad))
		return -1;
	fk_run();
	if (poll_all(&B, B.cq, wc, 4) != 1 || wc[0].wr_id != 0xb0b)
		return -1;
	return wc[0].status;
}

/* b_access on a fresh RC pair (type 1 windows answer any QP of the PD) */
static int b_access_new(enum ibv_wr_opcode op, uint32_t rkey, uint64_t raddr, uint64_t boff,
			uint32_t len)
{
	struct ibv_qp *qa, *qb;
	int st = -1;

	if (rc_pair(&A, NULL, &B, NULL, &qa, &qb))
		st = b_access(qb, op, rkey, raddr, boff, len);
	if (qa)
		CHECK(A.ops.destroy_qp(qa) == 0);
	if (qb)
		CHECK(B.ops.destroy_qp(qb) == 0);
	drain();
	return st;
}

static bool mw_same(struct ibv_mr *mr, uint64_t off, uint64_t boff, uint32_t len)
{
	static uint8_t x[MWLEN], y[MWLEN];

	hx_mr_read(w, 0, mr->lkey, off, x, len);
	hx_mr_read(w, 1, B.mr->lkey, boff, y, len);
	return !memcmp(x, y, len);
}

/* A's one completion: its status, or -1; *op its opcode */
static int a_one(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode *op, uint32_t *verr)
{
	struct ibv_wc wc[4];
	int n;

	fk_run();
	n = poll_all(&A, cq, wc, 4);
	if (n != 1 || wc[0].wr_id != wr_id) {
		printf("  A: %d completions, wr_id %llx status %d\n", n,
		       (unsigned long long)wc[0].wr_id, wc[0].status);
		return -1;
	}
	if (op)
		*op = wc[0].opcode;
	if (verr)
		*verr = wc[0].vendor_err;
	return wc[0].status;
}

/*
 * A QP's completions not yet polled leave its CQ when it goes to RESET (as
 * mlx5's provider does; rdma-core's MRTest relies on it): qa1 and qa2 of A
 * share A.cq; a receive of qa2, qa1's two flushed receives (ERR), another
 * receive of qa2 are in it; after qa1 -> RESET the CQ yields qa2's two, in
 * order, and nothing else; qa1 reconnected works with a clean CQ.  Also
 * across the ring's end (the owner bit of a moved CQE flips).
 */
static void one_recv(struct ibv_qp *qp, uint64_t wr_id, uint64_t off)
{
	struct ibv_sge s = sge(&A, off, 256);
	struct ibv_recv_wr r = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;

	CHECK(A.ops.post_recv(qp, &r, &bad) == 0);
}

static void b_send(struct ibv_qp *qb, uint64_t wr_id)
{
	struct ibv_sge s = sge(&B, 0x100, 64);
	struct ibv_send_wr wr = wr_of(IBV_WR_SEND, wr_id, &s, 0), *bad;
	struct ibv_wc wc[2];

	CHECK(B.ops.post_send(qb, &wr, &bad) == 0);
	fk_run();
	CHECK(poll_all(&B, B.cq, wc, 2) == 1 && wc[0].status == IBV_WC_SUCCESS);
}

static void test_reset_cleans_cq(void)
{
	struct ibv_qp *qa1, *qb1, *qa2, *qb2;
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	struct qrnic_cq *cq = to_qcq(A.cq);
	struct ibv_wc wc[8];
	int lap, n;

	drain();
	CHECK(rc_pair(&A, NULL, &B, NULL, &qa1, &qb1));
	CHECK(rc_pair(&A, NULL, &B, NULL, &qa2, &qb2));
	for (lap = 0; lap < 2; lap++) {
		/* the second lap starts near the ring's end */
		if (lap) {
			while ((cq->ci & cq->mask) != cq->mask - 1) {
				one_recv(qa2, 0x7000, 0);
				b_send(qb2, 1);
				fk_run();
				CHECK(poll_all(&A, A.cq, wc, 1) == 1);
			}
		}
		one_recv(qa2, 0x91, 0x1000);
		b_send(qb2, 2);
		one_recv(qa1, 0x81, 0x2000);
		one_recv(qa1, 0x82, 0x3000);
		at.qp_state = IBV_QPS_ERR;
		CHECK(A.ops.modify_qp(qa1, &at, IBV_QP_STATE) == 0);
		fk_run();
		one_recv(qa2, 0x92, 0x4000);
		b_send(qb2, 3);
		at.qp_state = IBV_QPS_RESET;
		CHECK(A.ops.modify_qp(qa1, &at, IBV_QP_STATE) == 0);
		n = poll_all(&A, A.cq, wc, 8);
		CHECK(n == 2 && wc[0].wr_id == 0x91 && wc[1].wr_id == 0x92 &&
		      wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS &&
		      wc[0].qp_num == qa2->qp_num);
		if (n != 2)
			printf("  lap %d: %d CQEs, first wr_id %llx status %d\n", lap, n,
			       (unsigned long long)wc[0].wr_id, wc[0].status);
		/* qa1 again: connected anew, its receive completes, nothing stale */
		CHECK(to_rts_rc(&A, qa1, qb1->qp_num, 1) == 0);
		at.qp_state = IBV_QPS_RESET;
		CHECK(B.ops.modify_qp(qb1, &at, IBV_QP_STATE) == 0);
		CHECK(to_rts_rc(&B, qb1, qa1->qp_num, 0) == 0);
		one_recv(qa1, 0x83, 0x5000);
		b_send(qb1, 4);
		n = poll_all(&A, A.cq, wc, 8);
		CHECK(n == 1 && wc[0].wr_id == 0x83 && wc[0].status == IBV_WC_SUCCESS);
	}
	CHECK(A.ops.destroy_qp(qa1) == 0 && A.ops.destroy_qp(qa2) == 0);
	CHECK(B.ops.destroy_qp(qb1) == 0 && B.ops.destroy_qp(qb2) == 0);
	drain();
}

/*
 * ibv_rereg_mr through the provider's rereg_mr (REREG_MR in the fake
 * kernel): the key stays; ACCESS: a read-only MR refuses B's WRITE, made
 * writable the same rkey takes it; PD: moved to a second PD, QPs of the
 * first are refused (REM_ACCESS_ERR) and the second PD is busy, moved back
 * it works again; TRANSLATION: B's WRITE lands in the new pages at the new
 * iova, the old iova is refused and the old pages keep what they had;
 * bad input: a PD of another context (EINVAL), a device refusal (bound
 * window: BUSY) leaves the MR working as it was.
 */
static void test_rereg_mr(void)
{
	struct ibv_mr *mr = A.ops.reg_mr(A.pd, (void *)(uintptr_t)MWIOVA, MWLEN, MWIOVA,
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
					 IBV_ACCESS_MW_BIND);
	const uint64_t NEWIOVA = MWIOVA + 0x100000 + 0x80;
	static uint8_t x[0x2000], y[0x2000], old[0x1000];
	struct ibv_pd *pd2 = A.ops.alloc_pd(A.ctx);
	struct ibv_mw *mw = A.ops.alloc_mw(A.pd, IBV_MW_TYPE_2);
	uint32_t key;

	CHECK(A.ops.rereg_mr != NULL && mr != NULL && pd2 != NULL && mw != NULL);
	if (!mr || !pd2 || !mw || !A.ops.rereg_mr)
		return;
	key = mr->rkey;
	drain();
	fill(&B, 0x50000, 0x2000, 21);
	CHECK(b_access_new(IBV_WR_RDMA_WRITE, key, MWIOVA + 0x1000, 0x50000, 0x1000) ==
	      IBV_WC_REM_ACCESS_ERR);
	CHECK(A.ops.rereg_mr(verbs_get_mr(mr), IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND) == 0);
	CHECK(mr->rkey == key && mr->lkey == key);
	CHECK(verbs_get_mr(mr)->access & IBV_ACCESS_REMOTE_WRITE);
	CHECK(b_access_new(IBV_WR_RDMA_WRITE, key, MWIOVA + 0x1000, 0x50000, 0x1000) ==
	      IBV_WC_SUCCESS);
	CHECK(mw_same(mr, 0x1000, 0x50000, 0x1000));

	/* another PD: A's QPs (of A.pd) may not use it */
	CHECK(A.ops.rereg_mr(verbs_get_mr(mr), IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0) == 0);
	CHECK(mr->rkey == key);
	CHECK(b_access_new(IBV_WR_RDMA_READ, key, MWIOVA + 0x1000, 0x52000, 0x100) ==
	      IBV_WC_REM_ACCESS_ERR);
	CHECK(A.ops.dealloc_pd(pd2) != 0);		/* the MR is on it */
	CHECK(A.ops.rereg_mr(verbs_get_mr(mr), IBV_REREG_MR_CHANGE_PD, B.pd, NULL, 0, 0) ==
	      EINVAL);					/* another context's PD */
	CHECK(A.ops.rereg_mr(verbs_get_mr(mr), IBV_REREG_MR_CHANGE_PD, A.pd, NULL, 0, 0) == 0);
	CHECK(b_access_new(IBV_WR_RDMA_READ, key, MWIOVA + 0x1000, 0x52000, 0x100) ==
	      IBV_WC_SUCCESS);

	/* a window bound to it: the device refuses (BUSY), nothing changes */
	{
		struct ibv_qp *qa, *qb;
		struct ibv_send_wr bw = { .wr_id = 0x61, .opcode = IBV_WR_BIND_MW,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		enum ibv_wc_opcode op = 0;

		CHECK(rc_pair(&A, NULL, &B, NULL, &qa, &qb));
		bw.bind_mw.mw = mw;
		bw.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
		bw.bind_mw.bind_info.mr = mr;
		bw.bind_mw.bind_info.addr = MWIOVA;
		bw.bind_mw.bind_info.length = 0x1000;
		bw.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
		CHECK(A.ops.post_send(qa, &bw, &bad) == 0);
		CHECK(a_one(A.cq, 0x61, &op, NULL) == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW);
		CHECK(A.ops.rereg_mr(verbs_get_mr(mr), IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				     IBV_ACCESS_LOCAL_WRITE) != 0);
		CHECK(b_access(qb, IBV_WR_RDMA_WRITE, key, MWIOVA + 0x1000, 0x50000, 0x10) ==
		      IBV_WC_SUCCESS);			/* still writable */
		CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
		drain();
		CHECK(A.ops.dealloc_mw(mw) == 0);	/* dead with its QP; freed now */
	}

	/* a new translation: new iova, new pages */
	hx_mr_read(w, 0, key, 0x1000, old, sizeof(old));
	CHECK(A.ops.rereg_mr(verbs_get_mr(mr), IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			     (void *)(uintptr_t)NEWIOVA, 0x3000, 0) == 0);
	CHECK(mr->rkey == key && fk_rereg_bus != 0);
	fill(&B, 0x50000, 0x2000, 77);
	CHECK(b_access_new(IBV_WR_RDMA_WRITE, key, NEWIOVA + 0x100, 0x50000, 0x2000) ==
	      IBV_WC_SUCCESS);
	hx_mem_read(w, 0, fk_rereg_bus + 0x80 + 0x100, x, 0x2000);
	hx_mr_read(w, 1, B.mr->lkey, 0x50000, y, 0x2000);
	CHECK(!memcmp(x, y, 0x2000));
	CHECK(b_access_new(IBV_WR_RDMA_WRITE, key, MWIOVA + 0x1000, 0x50000, 0x10) ==
	      IBV_WC_REM_ACCESS_ERR);		/* the old range is gone */
	CHECK(b_access_new(IBV_WR_RDMA_WRITE, key, NEWIOVA + 0x3000 - 8, 0x50000, 16) ==
	      IBV_WC_REM_ACCESS_ERR);		/* past the new end */
	hx_mr_read(w, 0, key, 0x1000, x, sizeof(old));	/* the harness's record: old pages */
	CHECK(!memcmp(x, old, sizeof(old)));
	CHECK(A.ops.dereg_mr(verbs_get_mr(mr)) == 0);
	CHECK(A.ops.dealloc_pd(pd2) == 0);
}

/*
 * Type 1: ibv_bind_mw gives the window the next rkey (mw->rkey updated),
 * completion IBV_WC_BIND_MW; B's WRITE and READ through it land in (come
 * from) the window's range of the MR; a byte past it, a right it lacks, the
 * rkey of before a rebind and the rkey after an unbind (length 0) are
 * remote access errors; LOCAL_INV does not invalidate a type 1 window.
 */
static void test_mw_type1(void)
{
	struct ibv_mr *mr = A.ops.reg_mr(A.pd, (void *)(uintptr_t)MWIOVA, MWLEN, MWIOVA,
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = A.ops.alloc_mw(A.pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind bind = {
		.wr_id = 0x31, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = MWIOVA + 0x1000, .length = 0x2000,
			       /* LOCAL_WRITE as rdma-core's tests pass it: dropped */
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE },
	};
	enum ibv_wc_opcode op = 0;
	struct ibv_send_wr inv, *bad;
	struct ibv_qp *qa, *qb;
	uint32_t rkey0, old, verr = 0;

	CHECK(A.ops.alloc_mw && A.ops.bind_mw && A.ops.dealloc_mw);
	CHECK(mr != NULL && mw != NULL);
	if (!mr || !mw)
		return;
	CHECK(mw->type == IBV_MW_TYPE_1 && mw->pd == A.pd && (mw->rkey >> 8) != 0);
	drain();
	CHECK(rc_pair(&A, NULL, &B, NULL, &qa, &qb));
	rkey0 = mw->rkey;
	CHECK(A.ops.bind_mw(qa, mw, &bind) == 0);
	CHECK(mw->rkey == ibv_inc_rkey(rkey0) && mw->rkey != rkey0);
	CHECK(a_one(A.cq, 0x31, &op, NULL) == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW);

	fill(&B, 0x50000, 0x2000, 9);
	CHECK(b_access(qb, IBV_WR_RDMA_WRITE, mw->rkey, MWIOVA + 0x1000, 0x50000, 0x2000) ==
	      IBV_WC_SUCCESS);
	CHECK(mw_same(mr, 0x1000, 0x50000, 0x2000));
	CHECK(b_access(qb, IBV_WR_RDMA_READ, mw->rkey, MWIOVA + 0x1800, 0x58000, 0x800) ==
	      IBV_WC_SUCCESS);
	CHECK(mw_same(mr, 0x1800, 0x58000, 0x800));
	/* the MR itself lends nothing remotely (no REMOTE_* on it) */
	CHECK(b_access(qb, IBV_WR_RDMA_WRITE, mr->rkey, MWIOVA + 0x1000, 0x50000, 8) ==
	      IBV_WC_REM_ACCESS_ERR);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	drain();
	/* one byte past the window, one before it; any QP of the PD */
	CHECK(b_access_new(IBV_WR_RDMA_WRITE, mw->rkey, MWIOVA + 0x2fff, 0x50000, 2) ==
	      IBV_WC_REM_ACCESS_ERR);
	CHECK(b_access_new(IBV_WR_RDMA_READ, mw->rkey, MWIOVA + 0xfff, 0x50000, 2) ==
	      IBV_WC_REM_ACCESS_ERR);
	CHECK(b_access_new(IBV_WR_RDMA_READ, mw->rkey, MWIOVA + 0x1000, 0x58000, 16) ==
	      IBV_WC_SUCCESS);

	/* rebind, read-only, elsewhere: the old rkey dies */
	CHECK(rc_pair(&A, NULL, &B, NULL, &qa, &qb));
	old = mw->rkey;
	bind.wr_id = 0x32;
	bind.bind_info.addr = MWIOVA + 0x8000;
	bind.bind_info.length = 0x1000;
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	CHECK(A.ops.bind_mw(qa, mw, &bind) == 0 && mw->rkey == ibv_inc_rkey(old));
	CHECK(a_one(A.cq, 0x32, &op, NULL) == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW);
	CHECK(b_access(qb, IBV_WR_RDMA_READ, mw->rkey, MWIOVA + 0x8000, 0x58000, 0x1000) ==
	      IBV_WC_SUCCESS);
	CHECK(mw_same(mr, 0x8000, 0x58000, 0x1000));
	/* LOCAL_INV of a type 1 window fails (MR_STATE) and the QP errs */
	inv = wr_of(IBV_WR_LOCAL_INV, 0x33, NULL, mw->rkey);
	CHECK(A.ops.post_send(qa, &inv, &bad) == 0);
	CHECK(a_one(A.cq, 0x33, &op, &verr) == IBV_WC_LOC_QP_OP_ERR &&
	      verr == QRNIC_VERR_MR_STATE);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	drain();
	CHECK(b_access_new(IBV_WR_RDMA_READ, old, MWIOVA + 0x1000, 0x58000, 8) ==
	      IBV_WC_REM_ACCESS_ERR);
	CHECK(b_access_new(IBV_WR_RDMA_WRITE, mw->rkey, MWIOVA + 0x8000, 0x50000, 8) ==
	      IBV_WC_REM_ACCESS_ERR);	/* read-only now */
	CHECK(b_access_new(IBV_WR_RDMA_READ, mw->rkey, MWIOVA + 0x8000, 0x58000, 8) ==
	      IBV_WC_SUCCESS);

	/* unbind: length 0, no MR (ibv_bind_mw allows it) */
	CHECK(rc_pair(&A, NULL, &B, NULL, &qa, &qb));
	bind.wr_id = 0x34;
	memset(&bind.bind_info, 0, sizeof(bind.bind_info));
	old = mw->rkey;
	CHECK(A.ops.bind_mw(qa, mw, &bind) == 0 && mw->rkey == ibv_inc_rkey(old));
	CHECK(a_one(A.cq, 0x34, &op, NULL) == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW);
	CHECK(b_access(qb, IBV_WR_RDMA_READ, mw->rkey, MWIOVA + 0x8000, 0x58000, 8) ==
	      IBV_WC_REM_ACCESS_ERR);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	drain();
	CHECK(b_access_new(IBV_WR_RDMA_READ, old, MWIOVA + 0x8000, 0x58000, 8) ==
	      IBV_WC_REM_ACCESS_ERR);

	CHECK(A.ops.dealloc_mw(mw) == 0);
	CHECK(A.ops.dereg_mr(verbs_get_mr(mr)) == 0);
}

/*
 * Type 2 (2B): IBV_WR_BIND_MW in ibv_post_send with the caller's new rkey;
 * B's WRITE through it on the connected QP lands; LOCAL_INV frees it;
 * bound again through ibv_wr_bind_mw of an extended QP, B's SEND_WITH_INV
 * frees it (A's receive carries IBV_WC_WITH_INV and the rkey); accesses
 * after either invalidation are remote access errors; dealloc of a bound
 * window kills it too.
 */
static void test_mw_type2(void)
{
	struct ibv_mr *mr = A.ops.reg_mr(A.pd, (void *)(uintptr_t)MWIOVA, MWLEN, MWIOVA,
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = A.ops.alloc_mw(A.pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind_info bi = { .mr = mr, .addr = MWIOVA, .length = 0x4000,
				       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	struct ibv_send_wr wr = { .wr_id = 0x41, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_sge rs = sge(&A, 0x70000, 64), ss = sge(&B, 0x50000, 64);
	struct ibv_recv_wr rwr = { .wr_id = 0x4a, .sg_list = &rs, .num_sge = 1 }, *brw;
	enum ibv_wc_opcode op = 0;
	struct ibv_qp *qa, *qb, *qx;
	struct ibv_qp_ex *x;
	struct ibv_wc wc[4];
	struct ibv_mw_bind mb = { .bind_info = bi };
	uint32_t rkey;

	CHECK(mr != NULL && mw != NULL);
	if (!mr || !mw)
		return;
	CHECK(mw->type == IBV_MW_TYPE_2);
	drain();
	CHECK(rc_pair(&A, NULL, &B, NULL, &qa, &qb));
	/* ibv_bind_mw is type 1 only */
	CHECK(A.ops.bind_mw(qa, mw, &mb) == EINVAL);
	rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = bi;
	CHECK(A.ops.post_send(qa, &wr, &bad) == 0);
	CHECK(a_one(A.cq, 0x41, &op, NULL) == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW);
	fill(&B, 0x50000, 0x4000, 21);
	CHECK(b_access(qb, IBV_WR_RDMA_WRITE, rkey, MWIOVA, 0x50000, 0x4000) == IBV_WC_SUCCESS);
	CHECK(mw_same(mr, 0, 0x50000, 0x4000));
	/* another QP of the same PDs: type 2B answers its own QP only */
	CHECK(b_access_new(IBV_WR_RDMA_WRITE, rkey, MWIOVA, 0x50000, 8) == IBV_WC_REM_ACCESS_ERR);
	/* bound already: a second bind fails (MR_STATE) */
	/* LOCAL_INV frees it */
	wr = wr_of(IBV_WR_LOCAL_INV, 0x42, NULL, rkey);
	CHECK(A.ops.post_send(qa, &wr, &bad) == 0);
	CHECK(a_one(A.cq, 0x42, &op, NULL) == IBV_WC_SUCCESS && op == IBV_WC_LOCAL_INV);
	CHECK(b_access(qb, IBV_WR_RDMA_WRITE, rkey, MWIOVA, 0x50000, 8) == IBV_WC_REM_ACCESS_ERR);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	drain();

	/* the extended QP's ibv_wr_bind_mw, then SEND_WITH_INV from the peer */
	qx = mkqp_ex(&A, NULL, A.cq, IBV_QPT_RC,
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW);
	CHECK(qx != NULL);
	if (!qx)
		return;
	qb = rc_qp(&B, NULL, qx->qp_num, 0);
	CHECK(qb && to_rts_rc(&A, qx, qb->qp_num, 1) == 0);
	x = qpx_of(qx);
	CHECK(x && x->wr_bind_mw);
	rkey = ibv_inc_rkey(rkey);
	x->wr_start(x);
	x->wr_id = 0x43;
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_bind_mw(x, mw, rkey, &bi);
	ibv_wr_set_sge(x, 1, 2, 3);		/* ignored: a bind has no data */
	CHECK(x->wr_complete(x) == 0);
	CHECK(a_one(A.cq, 0x43, &op, NULL) == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW);
	/* the same bytes post_send writes */
	{
		struct qrnic_qp *q = to_qqp(qx);
		uint8_t want[64];

		qrnic_build_bind_mw_wqe(want, 0x43, IBV_SEND_SIGNALED, false, rkey, &bi);
		CHECK(!memcmp(want, q->sq.ring + ((size_t)((q->sq.pi - 1) & q->sq.mask) <<
						   q->sq.wqe_shift), 64));
	}
	CHECK(b_access(qb, IBV_WR_RDMA_WRITE, rkey, MWIOVA + 0x100, 0x50000, 0x100) ==
	      IBV_WC_SUCCESS);
	CHECK(mw_same(mr, 0x100, 0x50000, 0x100));
	CHECK(A.ops.post_recv(qx, &rwr, &brw) == 0);
	wr = wr_of(IBV_WR_SEND_WITH_INV, 0x44, &ss, rkey);
	CHECK(B.ops.post_send(qb, &wr, &bad) == 0);
	fk_run();
	CHECK(poll_all(&B, B.cq, wc, 4) == 1 && wc[0].wr_id == 0x44 &&
	      wc[0].status == IBV_WC_SUCCESS);
	CHECK(poll_all(&A, A.cq, wc, 4) == 1 && wc[0].wr_id == 0x4a &&
	      wc[0].status == IBV_WC_SUCCESS && (wc[0].wc_flags & IBV_WC_WITH_INV) &&
	      wc[0].invalidated_rkey == rkey);
	CHECK(b_access(qb, IBV_WR_RDMA_WRITE, rkey, MWIOVA, 0x50000, 8) == IBV_WC_REM_ACCESS_ERR);
	CHECK(A.ops.destroy_qp(qx) == 0 && B.ops.destroy_qp(qb) == 0);
	drain();

	/* bound again, then deallocated while bound: its rkey dies with it */
	CHECK(rc_pair(&A, NULL, &B, NULL, &qa, &qb));
	rkey = ibv_inc_rkey(rkey);
	wr = (struct ibv_send_wr){ .wr_id = 0x45, .opcode = IBV_WR_BIND_MW,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = bi;
	CHECK(A.ops.post_send(qa, &wr, &bad) == 0);
	CHECK(a_one(A.cq, 0x45, &op, NULL) == IBV_WC_SUCCESS);
	/* the MR cannot go while a window is bound to it */
	CHECK(A.ops.dereg_mr(verbs_get_mr(mr)) != 0);
	CHECK(A.ops.dealloc_mw(mw) == 0);
	CHECK(b_access(qb, IBV_WR_RDMA_WRITE, rkey, MWIOVA, 0x50000, 8) == IBV_WC_REM_ACCESS_ERR);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	drain();
	CHECK(A.ops.dereg_mr(verbs_get_mr(mr)) == 0);
}

/* Binds the device or the provider refuses. */
static void test_mw_errors(void)
{
	struct ibv_mr *mr = A.ops.reg_mr(A.pd, (void *)(uintptr_t)MWIOVA, MWLEN, MWIOVA,
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mr *ro = A.ops.reg_mr(A.pd, (void *)(uintptr_t)(MWIOVA + MWLEN), 4096,
					 MWIOVA + MWLEN, IBV_ACCESS_MW_BIND);
	struct ibv_mw *m1 = A.ops.alloc_mw(A.pd, IBV_MW_TYPE_1);
	struct ibv_mw *m2 = A.ops.alloc_mw(A.pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind_info bi = { .mr = mr, .addr = MWIOVA, .length = 4096,
				       .mw_access_flags = IBV_ACCESS_REMOTE_READ };
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED },
			   *bad = NULL;
	struct {
		const char *what;
		struct ibv_mw *mw;
		struct ibv_mr *mr;
		uint64_t addr, length;
		unsigned int access;
		uint32_t verr;
	} cases[] = {
		{ "MR without MW_BIND", m1, NULL, IOVA, 4096, IBV_ACCESS_REMOTE_READ,
		  QRNIC_VERR_ACCESS },
		{ "remote write on an MR without local write", m2, NULL, MWIOVA + MWLEN, 4096,
		  IBV_ACCESS_REMOTE_WRITE, QRNIC_VERR_ACCESS },
		{ "past the MR", m2, NULL, MWIOVA + MWLEN - 4096, 8192, IBV_ACCESS_REMOTE_READ,
		  QRNIC_VERR_BOUNDS },
		{ "type 2 bound already", m2, NULL, MWIOVA, 4096, IBV_ACCESS_REMOTE_READ,
		  QRNIC_VERR_MR_STATE },
	};
	enum ibv_wc_opcode op = 0;
	struct ibv_qp *qa, *qb;
	uint32_t verr = 0;
	unsigned int i;

	CHECK(mr && ro && m1 && m2);
	if (!mr || !ro || !m1 || !m2)
		return;
	drain();
	CHECK(A.ops.alloc_mw(A.pd, (enum ibv_mw_type)3) == NULL && errno == EINVAL);
	CHECK(rc_pair(&A, NULL, &B, NULL, &qa, &qb));
	/* refused by the provider: zero-based, an MR missing, a UD-less check */
	wr.bind_mw.mw = m2;
	wr.bind_mw.rkey = ibv_inc_rkey(m2->rkey);
	wr.bind_mw.bind_info = bi;
	wr.bind_mw.bind_info.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
	CHECK(A.ops.post_send(qa, &wr, &bad) == EINVAL && bad == &wr);
	wr.bind_mw.bind_info = bi;
	wr.bind_mw.bind_info.mr = NULL;
	CHECK(A.ops.post_send(qa, &wr, &bad) == EINVAL && bad == &wr);
	wr.bind_mw.mw = NULL;
	CHECK(A.ops.post_send(qa, &wr, &bad) == EINVAL && bad == &wr);
	CHECK(to_qqp(qa)->sq.pi == 0);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);

	/* a first good bind of m2, so that "bound already" has something */
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(rc_pair(&A, NULL, &B, NULL, &qa, &qb));
		if (i == 3) {
			wr.wr_id = 0x60;
			wr.bind_mw.mw = m2;
			wr.bind_mw.rkey = ibv_inc_rkey(m2->rkey);
			wr.bind_mw.bind_info = bi;
			CHECK(A.ops.post_send(qa, &wr, &bad) == 0);
			CHECK(a_one(A.cq, 0x60, NULL, NULL) == IBV_WC_SUCCESS);
			m2->rkey = wr.bind_mw.rkey;
		}
		wr.wr_id = 0x61 + i;
		wr.bind_mw.mw = cases[i].mw;
		wr.bind_mw.rkey = ibv_inc_rkey(cases[i].mw->rkey);
		wr.bind_mw.bind_info.mr = i == 0 ? A.mr : i == 1 || i == 2 ? ro : mr;
		wr.bind_mw.bind_info.addr = cases[i].addr;
		wr.bind_mw.bind_info.length = cases[i].length;
		wr.bind_mw.bind_info.mw_access_flags = cases[i].access;
		if (i == 2)	/* past the end of ro */
			wr.bind_mw.bind_info.addr = MWIOVA + MWLEN;
		CHECK(A.ops.post_send(qa, &wr, &bad) == 0);
		CHECK(a_one(A.cq, 0x61 + i, &op, &verr) == IBV_WC_MW_BIND_ERR &&
		      op == IBV_WC_BIND_MW && verr == cases[i].verr);
		if (verr != cases[i].verr)
			printf("  %s: vendor_err %u\n", cases[i].what, verr);
		CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
		drain();
	}
	CHECK(A.ops.dealloc_mw(m1) == 0 && A.ops.dealloc_mw(m2) == 0);
	CHECK(A.ops.dereg_mr(verbs_get_mr(ro)) == 0);
	CHECK(A.ops.dereg_mr(verbs_get_mr(mr)) == 0);
}

/* n signaled RDMA WRITEs of A on qa, wr_ids id0.. */
static void a_writes(struct ibv_qp *qa, int n, uint64_t id0)
{
	struct ibv_sge s = sge(&A, 0x90000, 256);
	struct ibv_send_wr wr, *bad;
	int i;

	for (i = 0; i < n; i++) {
		wr = (struct ibv_send_wr){ .wr_id = id0 + i, .sg_list = &s, .num_sge = 1,
					   .opcode = IBV_WR_RDMA_WRITE,
					   .send_flags = IBV_SEND_SIGNALED };
		wr.wr.rdma.rkey = B.mr->rkey;
		wr.wr.rdma.remote_addr = IOVA + 0x90000 + 256 * (uint64_t)(i % 16);
		CHECK(A.ops.post_send(qa, &wr, &bad) == 0);
	}
}

/* poll everything of cq; true if it is exactly wr_ids id0..id0+n-1, in order */
static bool a_poll_seq(struct ibv_cq *cq, int n, uint64_t id0)
{
	struct ibv_wc wc[64];
	int got = 0, k, i;

	while ((k = poll_all(&A, cq, wc + got, 64 - got)) > 0)
		got += k;
	if (got != n) {
		printf("  %d completions, want %d\n", got, n);
		return false;
	}
	for (i = 0; i < n; i++)
		if (wc[i].wr_id != id0 + i || wc[i].status != IBV_WC_SUCCESS)
			return false;
	return true;
}

/*
 * ibv_resize_cq with completions in flight: some CQEs polled, some written
 * and not polled, some not written yet (WQEs posted, the doorbell reaching
 * the device with the resize): after it, every one is polled once, in
 * order, from the new ring; too small for what is outstanding: EINVAL and
 * nothing changed; many resizes while traffic runs; a CQ without dbrec.
 */
static void test_resize_cq(void)
{
	uint64_t over = hx_dev_stat(w, 0, QRNIC_STAT_CQ_OVERRUNS);
	struct ibv_cq *cq = A.ops.create_cq(A.ctx, 8, NULL, 0);
	struct qrnic_cq *q;
	struct ibv_qp *qa, *qb;
	struct ibv_wc wc[4];
	unsigned int r0 = fk_resizes;
	int i, errs = 0;
	uint64_t id = 1000;

	CHECK(A.ops.resize_cq != NULL && cq != NULL && cq->cqe == 8);
	if (!cq)
		return;
	q = to_qcq(cq);
	drain();
	CHECK(rc_pair(&A, cq, &B, NULL, &qa, &qb));
	fill(&A, 0x90000, 256, 5);

	a_writes(qa, 4, id);
	fk_run();
	CHECK(poll_all(&A, cq, wc, 1) == 1 && wc[0].wr_id == id);	/* 3 left */
	a_writes(qa, 4, id + 4);		/* not run: in flight at the resize */
	CHECK(A.ops.resize_cq(cq, 16) == 0);
	CHECK(cq->cqe == 16 && q->ci == 0 && q->log_depth == 4 && q->rmap != NULL);
	CHECK(fk_resizes == r0 + 1);
	fk_run();
	CHECK(a_poll_seq(cq, 7, id + 1));
	id += 8;

	/* 6 outstanding do not fit 2: EINVAL, nothing changed */
	a_writes(qa, 6, id);
	fk_run();
	CHECK(A.ops.resize_cq(cq, 2) == EINVAL);
	CHECK(cq->cqe == 16 && q->log_depth == 4);
	CHECK(a_poll_seq(cq, 6, id));
	id += 6;
	/* 3 fit 4 */
	a_writes(qa, 3, id);
	fk_run();
	CHECK(A.ops.resize_cq(cq, 3) == 0 && cq->cqe == 4);
	CHECK(a_poll_seq(cq, 3, id));
	id += 3;
	CHECK(A.ops.resize_cq(cq, 0) == EINVAL);

	/* resize between every post and its completion, wrapping both sizes */
	for (i = 0; i < 40; i++) {
		int n = 1 + i % 4;

		a_writes(qa, n, id);
		if (A.ops.resize_cq(cq, i % 2 ? 4 : 8))
			errs++;
		if (i % 3 == 0)
			fk_run();
		fk_run();
		errs += !a_poll_seq(cq, n, id);
		id += n;
	}
	CHECK(errs == 0);
	CHECK(hx_dev_stat(w, 0, QRNIC_STAT_CQ_OVERRUNS) == over);
	CHECK(to_qqp(qa)->sq.ci == to_qqp(qa)->sq.pi);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	drain();
	CHECK(A.ops.destroy_cq(cq) == 0);

	/* without a dbrec the index reaches the device by CQ doorbells */
	fk_no_dbrec = true;
	cq = A.ops.create_cq(A.ctx, 4, NULL, 0);
	fk_no_dbrec = false;
	CHECK(cq && to_qcq(cq)->dbrec == NULL);
	if (!cq)
		return;
	CHECK(rc_pair(&A, cq, &B, NULL, &qa, &qb));
	errs = 0;
	for (i = 0; i < 20; i++) {
		a_writes(qa, 3, id);
		fk_run();
		poll_all(&A, cq, wc, 1);
		errs += wc[0].wr_id != id;
		if (A.ops.resize_cq(cq, i % 2 ? 4 : 16))
			errs++;
		errs += !a_poll_seq(cq, 2, id + 1);
		id += 3;
	}
	CHECK(errs == 0);
	CHECK(hx_dev_stat(w, 0, QRNIC_STAT_CQ_OVERRUNS) == over);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	drain();
	CHECK(A.ops.destroy_cq(cq) == 0);
}

/* Poll n completions of a timestamp CQ with start/next/end_poll: their
 * wr_ids from id0 in order, timestamps in ts[] */
static bool ts_poll(struct ibv_cq_ex *cx, int n, uint64_t id0, uint64_t *ts)
{
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
	int got = 0;

	if (ibv_start_poll(cx, &pa))
		return n == 0;
	do {
		if (got < n) {
			ts[got] = ibv_wc_read_completion_ts(cx);
			if (cx->wr_id != id0 + (uint64_t)got || cx->status != IBV_WC_SUCCESS)
				got = n + 1;
		}
		got++;
	} while (!ibv_next_poll(cx));
	ibv_end_poll(cx);
	return got == n;
}

/*
 * Completion timestamps (ABI 1.7, spec 9.8): ibv_create_cq_ex with
 * IBV_WC_EX_WITH_COMPLETION_TIMESTAMP gets 64-byte CQEs, whose timestamps
 * ibv_wc_read_completion_ts returns: each between the device clock before
 * and after the run that wrote it, non-decreasing, carried over by
 * ibv_resize_cq; ibv_query_rt_values_ex reads the clock from the doorbell
 * page; query_device_ex reports hca_core_clock and the mask; WALLCLOCK is
 * refused; a CQ without the flag keeps 32-byte CQEs and no reader.
 */
static void test_cq_timestamps(void)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_device_attr_ex da = {};
	struct ibv_cq_ex *cx, *plain;
	struct ibv_qp *qa, *qb;
	uint64_t ts[16], t0, t1, id = 5000;
	int i, bad = 0;

	CHECK(A.ops.query_device_ex(A.ctx, NULL, &da, sizeof(da)) == 0);
	CHECK(da.hca_core_clock == QRNIC_CLOCK_KHZ &&
	      da.completion_timestamp_mask == QRNIC_CLOCK_MASK);
	fk_run();
	CHECK(A.ops.query_rt_values(A.ctx, &v) == 0 && v.comp_mask == IBV_VALUES_MASK_RAW_CLOCK);
	CHECK(v.raw_clock.tv_sec == 0 && (uint64_t)v.raw_clock.tv_nsec == hx_now(w) &&
	      hx_now(w) > 0);
	v.comp_mask = 1u << 5;	/* unknown: EINVAL */
	CHECK(A.ops.query_rt_values(A.ctx, &v) == EINVAL);

	errno = 0;
	CHECK(mkcq_ex(&A, 8, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) == NULL &&
	      errno == EOPNOTSUPP);
	plain = mkcq_ex(&A, 8, IBV_WC_EX_WITH_BYTE_LEN);
	CHECK(plain && to_qcq_ex(plain)->cqe_size == 32 && plain->read_completion_ts == NULL);
	if (plain)
		CHECK(A.ops.destroy_cq(ibv_cq_ex_to_cq(plain)) == 0);

	cx = mkcq_ex(&A, 8, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP);
	CHECK(cx && to_qcq_ex(cx)->cqe_size == 64 && cx->read_completion_ts != NULL);
	if (!cx)
		return;
	drain();
	CHECK(rc_pair(&A, ibv_cq_ex_to_cq(cx), &B, NULL, &qa, &qb));
	fill(&A, 0x90000, 256, 5);
	for (i = 0; i < 6; i++) {	/* the ring (8) wraps */
		t0 = hx_now(w);
		a_writes(qa, 3, id);
		fk_run();
		t1 = hx_now(w);
		CHECK(ts_poll(cx, 3, id, ts));
		bad += !(t0 <= ts[0] && ts[0] <= ts[1] && ts[1] <= ts[2] && ts[2] <= t1);
		id += 3;
	}
	CHECK(bad == 0);
	/* resize with 2 CQEs written and not polled: they keep their timestamps */
	a_writes(qa, 3, id);
	fk_run();
	{
		struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
		uint64_t first, rest[2];

		CHECK(ibv_start_poll(cx, &pa) == 0 && cx->wr_id == id);
		first = ibv_wc_read_completion_ts(cx);
		ibv_end_poll(cx);
		CHECK(A.ops.resize_cq(ibv_cq_ex_to_cq(cx), 16) == 0);
		CHECK(to_qcq_ex(cx)->cqe_size == 64 && to_qcq_ex(cx)->log_depth == 4);
		CHECK(ts_poll(cx, 2, id + 1, rest));
		CHECK(first <= rest[0] && rest[0] <= rest[1] && rest[1] <= hx_now(w));
		id += 3;
	}
	t0 = hx_now(w);
	a_writes(qa, 2, id);
	fk_run();
	CHECK(ts_poll(cx, 2, id, ts) && t0 <= ts[0] && ts[0] <= ts[1] && ts[1] <= hx_now(w));
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	drain();
	CHECK(A.ops.destroy_cq(ibv_cq_ex_to_cq(cx)) == 0);
}

/* ibv_modify_cq (IBV_CQ_ATTR_MODERATE): an armed CQ's event after count CQEs */
static void test_modify_cq(void)
{
	struct ibv_cq *cq = A.ops.create_cq(A.ctx, 16, NULL, 0);
	struct ibv_modify_cq_attr ma = { .attr_mask = IBV_CQ_ATTR_MODERATE,
					 .moderate = { .cq_count = 4, .cq_period = 0 } };
	struct qrnic_eqe eqe[8];
	struct ibv_qp *qa, *qb;
	uint64_t id = 5000;

	CHECK(A.ops.modify_cq != NULL && cq != NULL);
	if (!cq)
		return;
	drain();
	while (hx_poll_eq(w, 0, fk[0].eqn, eqe, 8) > 0)
		;
	CHECK(rc_pair(&A, cq, &B, NULL, &qa, &qb));
	CHECK(A.ops.modify_cq(cq, &ma) == 0);
	CHECK(fk_last_modify.cqn == to_qcq(cq)->cqn && fk_last_modify.count == 4);
	CHECK(A.ops.req_notify_cq(cq, 0) == 0);
	a_writes(qa, 3, id);
	fk_run();
	CHECK(hx_poll_eq(w, 0, fk[0].eqn, eqe, 8) == 0);	/* 3 < 4 */
	a_writes(qa, 1, id + 3);
	fk_run();
	CHECK(hx_poll_eq(w, 0, fk[0].eqn, eqe, 8) == 1 && eqe[0].handle == to_qcq(cq)->cqn);
	CHECK(a_poll_seq(cq, 4, id));
	/* back to an event per completion */
	ma.moderate.cq_count = 0;
	CHECK(A.ops.modify_cq(cq, &ma) == 0);
	CHECK(A.ops.req_notify_cq(cq, 0) == 0);
	a_writes(qa, 1, id + 4);
	fk_run();
	CHECK(hx_poll_eq(w, 0, fk[0].eqn, eqe, 8) == 1);
	CHECK(a_poll_seq(cq, 1, id + 4));
	/* nothing but IBV_CQ_ATTR_MODERATE */
	ma.attr_mask = IBV_CQ_ATTR_MODERATE << 1;
	CHECK(A.ops.modify_cq(cq, &ma) == EINVAL);
	CHECK(A.ops.destroy_qp(qa) == 0 && B.ops.destroy_qp(qb) == 0);
	drain();
	CHECK(A.ops.destroy_cq(cq) == 0);
}

static void app_close(struct app *a)
{
	CHECK(a->ops.destroy_qp(a->qp) == 0);
	CHECK(a->ops.destroy_cq(a->cq) == 0);
	CHECK(a->ops.dereg_mr(verbs_get_mr(a->mr)) == 0);
	CHECK(a->ops.dealloc_pd(a->pd) == 0);
	a->ops.free_context(a->ctx);
	registered_ops->uninit_device(a->vdev);
}

int main(void)
{
	int i;

	setvbuf(stdout, NULL, _IONBF, 0);
	w = hx_world_new(128ull << 20, 1);
	for (i = 0; i < 2; i++) {
		uint8_t gid[16];
		int64_t eqn;

		CHECK(hx_dev_add(w, "") == i);
		CHECK(hx_drv_bringup(w, i, 5) == 0);
		gid_of(i, gid);
		CHECK(hx_set_gid(w, i, 0, 1, QRNIC_NET_IPV4, gid) == 0);
		eqn = hx_create_eq(w, i, 10, 1, 0);
		CHECK(eqn > 0);
		fk[i].d = i;
		fk[i].eqn = (uint32_t)eqn;
		fk[i].fd = memfd_create(i ? "qrnic-fake-uverbs1" : "qrnic-fake-uverbs0", 0);
		CHECK(fk[i].fd >= 0 && ftruncate(fk[i].fd, FK_MEMFD_SIZE) == 0);
		fk[i].map = mmap(NULL, FK_MEMFD_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
				 fk[i].fd, 0);
		CHECK(fk[i].map != MAP_FAILED);
		fk[i].next_off = PAGE;	/* key 0 unused */
	}
	CHECK(hx_cable(w, 0, 1) == 0);
	if (failed || !registered_ops) {
		printf("%d passed, %d failed\n", passed, failed + !registered_ops);
		return 1;
	}

	app_open(&A, 0);
	app_open(&B, 1);
	A.cq = A.ops.create_cq(A.ctx, 16, NULL, 0);	/* with dbrec */
	fk_no_dbrec = true;
	B.cq = B.ops.create_cq(B.ctx, 3, NULL, 0);	/* 4 entries, no dbrec */
	fk_no_dbrec = false;
	CHECK(A.cq && B.cq && B.cq->cqe == 4);
	if (failed) {
		printf("%d passed, %d failed\n", passed, failed);
		return 1;
	}

	test_match_and_context();
	test_rc_basic();
	test_rq_dbrec();
	test_sq_dbrec();
	test_sq_full_and_unsignaled();
	test_wrap();
	test_read_atomic();
	test_arm();
	test_err_reset();
	test_ud();
	test_srq();
	test_xrc();
	test_invalidate_user_mrs();
	test_invalidate_frmr();
	test_ex_unsupported();
	test_wr_rc();
	test_wr_error_completions();
	test_wr_ud();
	test_parent_domain();
	test_mw_type1();
	test_mw_type2();
	test_mw_errors();
	test_resize_cq();
	test_cq_timestamps();
	test_modify_cq();
	test_rereg_mr();
	test_reset_cleans_cq();
	app_close(&A);
	app_close(&B);

	hx_world_free(w);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
