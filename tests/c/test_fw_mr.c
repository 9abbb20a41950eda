/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit test of the firmware (admin commands, admin queue engine) and of the
 * memory protection/translation functions (model/mr.c).
 *
 * The device is created through the public API with host ops over a
 * malloc'd "guest memory"; commands are executed with qrnic_fw_exec() on
 * local copies, the admin ring engine is driven with qrnic_fw_admin_run().
 * Exit status 0 = all checks passed.  Meant to run under
 * -fsanitize=address,undefined as well.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qrnic_fw.h"

/* ---- Check macros ------------------------------------------------------ */
static int failures, checks;

#define CHECK(cond) do {							\
	checks++;								\
	if (!(cond)) {								\
		failures++;							\
		fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
	}									\
} while (0)

#define CHECK_EQ(a, b) do {							\
	uint64_t _a = (uint64_t)(a), _b = (uint64_t)(b);			\
	checks++;								\
	if (_a != _b) {								\
		failures++;							\
		fprintf(stderr, "%s:%d: CHECK failed: %s == %s (0x%" PRIx64 " != 0x%" PRIx64 ")\n", \
			__FILE__, __LINE__, #a, #b, _a, _b);			\
	}									\
} while (0)

/* ---- Host: guest memory, interrupts, trace ----------------------------- */
#define MEM_BASE	0x40000000ull
#define MEM_SIZE	(40u << 20)

struct host {
	uint8_t *mem;
	uint64_t brk;		/* bump allocator, bus address */
	unsigned irqs;
	unsigned translate;	/* QRNIC_TR_TRANSLATE records */
	unsigned admin_tr;
	unsigned guest_errors;
};

static struct host H;

static bool in_mem(uint64_t addr, size_t len)
{
	return addr >= MEM_BASE && addr - MEM_BASE <= MEM_SIZE && len <= MEM_SIZE - (addr - MEM_BASE);
}

static int h_dma_read(void *o, uint64_t addr, void *buf, size_t len)
{
	struct host *h = o;

	if (!in_mem(addr, len))
		return -1;
	memcpy(buf, h->mem + (addr - MEM_BASE), len);
	return 0;
}

static int h_dma_write(void *o, uint64_t addr, const void *buf, size_t len)
{
	struct host *h = o;

	if (!in_mem(addr, len))
		return -1;
	memcpy(h->mem + (addr - MEM_BASE), buf, len);
	return 0;
}

static void h_irq(void *o, unsigned v) { ((struct host *)o)->irqs++; }
static void h_tx(void *o, const uint8_t *f, size_t len) { }
static uint64_t h_now(void *o) { return 0; }
static void h_timer(void *o, uint64_t t) { }
static void h_schedule(void *o) { }
static void h_log(void *o, enum qrnic_log_level l, const char *msg)
{
	struct host *h = o;

	if (l == QRNIC_LOG_GUEST_ERROR)
		h->guest_errors++;
	if (getenv("QRNIC_TEST_VERBOSE"))
		fprintf(stderr, "log(%d): %s\n", (int)l, msg);
}

static void h_trace(void *o, const struct qrnic_trace_ev *ev)
{
	struct host *h = o;

	if (ev->type == QRNIC_TR_TRANSLATE)
		h->translate++;
	if (ev->type == QRNIC_TR_ADMIN)
		h->admin_tr++;
}

static const struct qrnic_host_ops ops = {
	.dma_read = h_dma_read, .dma_write = h_dma_write, .irq = h_irq, .tx_frame = h_tx,
	.now_ns = h_now, .timer_arm = h_timer, .schedule = h_schedule, .log = h_log,
	.trace = h_trace,
};

static uint8_t *gptr(uint64_t addr) { return H.mem + (addr - MEM_BASE); }

static uint64_t galloc(uint64_t size, uint64_t align)
{
	uint64_t a = (H.brk + align - 1) & ~(align - 1);

	if (a + size > MEM_BASE + MEM_SIZE) {
		fprintf(stderr, "test guest memory exhausted\n");
		exit(2);
	}
	H.brk = a + size;
	memset(gptr(a), 0, size);
	return a;
}

static void gmem_reset(void) { H.brk = MEM_BASE + 0x1000; }

static struct qrnic_dev *dev_new_cfg(void (*tweak)(struct qrnic_config *))
{
	struct qrnic_config cfg;
	struct qrnic_dev *d;
	char err[256];

	qrnic_config_defaults(&cfg);
	cfg.max_mtt = 1u << 19;		/* a 1 GiB MR of 4 KiB pages + room */
	cfg.max_mr_size = 1ull << 32;
	cfg.max_mr = 1024;
	if (tweak)
		tweak(&cfg);
	if (qrnic_config_check(&cfg, err, sizeof(err))) {
		fprintf(stderr, "config rejected: %s\n", err);
		exit(2);
	}
	d = qrnic_dev_new(&cfg, &ops, &H, &qrnic_fw_admin_ops, NULL);
	if (!d) {
		fprintf(stderr, "qrnic_dev_new failed\n");
		exit(2);
	}
	qrnic_dev_set_link(d, true);
	gmem_reset();
	return d;
}

static struct qrnic_dev *dev_new(void) { return dev_new_cfg(NULL); }

/* ---- Command helpers ---------------------------------------------------- */
static uint16_t cmd_seq;

static struct qrnic_aq_cmd mk(uint8_t opcode)
{
	struct qrnic_aq_cmd c;

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = opcode;
	c.hdr.cmd_id = ++cmd_seq;
	return c;
}

static struct qrnic_aq_cqe run(struct qrnic_dev *d, const struct qrnic_aq_cmd *c)
{
	struct qrnic_aq_cqe e;

	memset(&e, 0xee, sizeof(e));
	qrnic_fw_exec(d, c, &e);
	CHECK_EQ(e.cmd_id, c->hdr.cmd_id);
	CHECK_EQ(e.opcode, c->hdr.opcode);
	CHECK(e.status <= QRNIC_AQ_STATUS_MAX);
	return e;
}

static uint8_t st(struct qrnic_dev *d, const struct qrnic_aq_cmd *c) { return run(d, c).status; }

static uint32_t ok_handle(struct qrnic_dev *d, const struct qrnic_aq_cmd *c, int line)
{
	struct qrnic_aq_cqe e = run(d, c);

	if (e.status != QRNIC_AQ_OK) {
		failures++;
		fprintf(stderr, "line %d: opcode 0x%x failed: status %u detail %u\n", line,
			c->hdr.opcode, e.status, e.detail);
		return 0;
	}
	return e.result[0];
}
#define OK_HANDLE(d, c) ok_handle(d, c, __LINE__)

static uint32_t create_pd(struct qrnic_dev *d, uint32_t uctx)
{
	struct qrnic_aq_cmd c = mk(QRNIC_CMD_CREATE_PD);

	c.u.create_pd.uctx = uctx;
	return OK_HANDLE(d, &c);
}

static uint32_t create_eq(struct qrnic_dev *d, bool async)
{
	struct qrnic_aq_cmd c = mk(QRNIC_CMD_CREATE_EQ);

	c.u.create_eq.log_depth = 6;
	c.u.create_eq.vector = 1;
	c.u.create_eq.flags = async ? QRNIC_EQ_F_ASYNC : 0;
	c.u.create_eq.ring_addr = galloc(16 << 6, 4096);
	return OK_HANDLE(d, &c);
}

static struct qrnic_aq_cmd cq_cmd(uint32_t uctx, uint32_t eqn)
{
	struct qrnic_aq_cmd c = mk(QRNIC_CMD_CREATE_CQ);

	c.u.create_cq.uctx = uctx;
	c.u.create_cq.eqn = eqn;
	c.u.create_cq.log_depth = 6;
	c.u.create_cq.ring_addr = galloc(32 << 6, 4096);
	c.u.create_cq.dbrec_addr = galloc(8, 8);
	return c;
}

static uint32_t create_cq(struct qrnic_dev *d, uint32_t uctx, uint32_t eqn)
{
	struct qrnic_aq_cmd c = cq_cmd(uctx, eqn);

	return OK_HANDLE(d, &c);
}

static struct qrnic_aq_cmd qp_cmd(uint32_t uctx, uint8_t type, uint32_t pdn, uint32_t scq,
				  uint32_t rcq)
{
	struct qrnic_aq_cmd c = mk(QRNIC_CMD_CREATE_QP);

	c.u.create_qp.uctx = uctx;
	c.u.create_qp.pdn = pdn;
	c.u.create_qp.send_cqn = scq;
	c.u.create_qp.recv_cqn = rcq;
	c.u.create_qp.qp_type = type;
	c.u.create_qp.sq_log_depth = 4;
	c.u.create_qp.sq_wqe_shift = 7;
	c.u.create_qp.rq_log_depth = 4;
	c.u.create_qp.rq_wqe_shift = 6;
	c.u.create_qp.sq_addr = galloc(1 << 11, 4096);
	c.u.create_qp.rq_addr = galloc(1 << 10, 4096);
	return c;
}

static uint32_t create_qp(struct qrnic_dev *d, uint32_t uctx, uint8_t type, uint32_t pdn,
			  uint32_t scq, uint32_t rcq)
{
	struct qrnic_aq_cmd c = qp_cmd(uctx, type, pdn, scq, rcq);

	return OK_HANDLE(d, &c);
}

static struct qrnic_aq_cmd handle_cmd(uint8_t op, uint32_t h)
{
	struct qrnic_aq_cmd c = mk(op);

	c.u.handle.handle = h;
	return c;
}

static uint8_t destroy(struct qrnic_dev *d, uint8_t op, uint32_t h)
{
	struct qrnic_aq_cmd c = handle_cmd(op, h);

	return st(d, &c);
}

static struct qrnic_aq_cmd mr_cmd(uint32_t pdn, uint32_t access, uint32_t flags, uint8_t shift,
				  uint8_t levels, uint64_t iova, uint64_t len, uint64_t pbl,
				  uint32_t npages)
{
	struct qrnic_aq_cmd c = mk(QRNIC_CMD_REG_MR);

	c.u.reg_mr.pdn = pdn;
	c.u.reg_mr.access = access;
	c.u.reg_mr.flags = flags;
	c.u.reg_mr.page_shift = shift;
	c.u.reg_mr.pbl_levels = levels;
	c.u.reg_mr.iova = iova;
	c.u.reg_mr.length = len;
	c.u.reg_mr.pbl_addr = pbl;
	c.u.reg_mr.npages = npages;
	return c;
}

static uint8_t reg_mr(struct qrnic_dev *d, const struct qrnic_aq_cmd *c, uint32_t *key)
{
	struct qrnic_aq_cqe e = run(d, c);

	if (key)
		*key = e.status == QRNIC_AQ_OK ? e.result[0] : 0;
	return e.status;
}

/* Build a PBL of 'levels' levels for pages[0..n) in guest memory. */
static uint64_t build_pbl(int level, const uint64_t *pages, uint32_t n)
{
	uint64_t page = galloc(4096, 4096);
	uint64_t *list = (uint64_t *)gptr(page);
	uint64_t span;
	uint32_t i;

	if (level == 1) {
		memcpy(list, pages, (size_t)n * 8);
		return page;
	}
	span = 1ull << (9 * (level - 1));
	for (i = 0; n; i++) {
		uint32_t m = n < span ? n : (uint32_t)span;

		list[i] = build_pbl(level - 1, pages, m);
		pages += m;
		n -= m;
	}
	return page;
}

static uint32_t npages_for(uint64_t iova, uint64_t len, unsigned shift)
{
	uint64_t psz = 1ull << shift;
	uint64_t span = (iova & (psz - 1)) + len;

	return (uint32_t)((span + psz - 1) >> shift);
}

static void set_gid(struct qrnic_dev *d, uint32_t idx, bool v4)
{
	struct qrnic_aq_cmd c = mk(QRNIC_CMD_SET_GID);

	c.u.gid.index = idx;
	c.u.gid.valid = 1;
	c.u.gid.net_type = v4 ? QRNIC_NET_IPV4 : QRNIC_NET_IPV6;
	if (v4) {
		c.u.gid.gid[10] = c.u.gid.gid[11] = 0xff;
		c.u.gid.gid[12] = 10;
		c.u.gid.gid[15] = (uint8_t)(idx + 1);
	} else {
		c.u.gid.gid[0] = 0xfe;
		c.u.gid.gid[1] = 0x80;
		c.u.gid.gid[15] = (uint8_t)(idx + 1);
	}
	CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
}

static void av_v4(struct qrnic_av *av, uint8_t sgid_index)
{
	memset(av, 0, sizeof(*av));
	av->dgid[10] = av->dgid[11] = 0xff;
	av->dgid[12] = 10;
	av->dgid[15] = 99;
	av->sgid_index = sgid_index;
	av->hop_limit = 64;
	av->net_type = QRNIC_NET_IPV4;
	av->dmac[0] = 0x52;
	av->dmac[5] = 0x99;
}

static void destroy_all(struct qrnic_dev *d)
{
	uint32_t i;

	for (i = 0; i < d->cfg.max_qp; i++)
		if (d->qp[i].valid)
			CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_QP, i), QRNIC_AQ_OK);
	for (i = 1; i < d->cfg.max_mr; i++)
		if ((d->mr[i].mpt.flags & (QRNIC_MPT_VALID | QRNIC_MPT_FAST | QRNIC_MPT_MW)) &&
		    !d->mr[i].bound_mws)
			CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, d->mr[i].mpt.key), QRNIC_AQ_OK);
	for (i = 1; i < d->cfg.max_mr; i++)	/* MRs that had windows bound */
		if (d->mr[i].mpt.flags & (QRNIC_MPT_VALID | QRNIC_MPT_FAST | QRNIC_MPT_MW))
			CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, d->mr[i].mpt.key), QRNIC_AQ_OK);
	for (i = 1; i < d->cfg.max_ah; i++)
		if (d->ah[i].valid)
			CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_AH, i), QRNIC_AQ_OK);
	for (i = 1; i < d->cfg.max_srq; i++)	/* XRC SRQs hold CQs */
		if (d->srq[i].valid)
			CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_SRQ, i), QRNIC_AQ_OK);
	for (i = 1; i < d->cfg.max_xrcd; i++)
		if (d->xrcd[i].valid)
			CHECK_EQ(destroy(d, QRNIC_CMD_DEALLOC_XRCD, i), QRNIC_AQ_OK);
	for (i = 1; i < d->cfg.max_cq; i++)
		if (d->cq[i].valid)
			CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_CQ, i), QRNIC_AQ_OK);
	for (i = 1; i < d->cfg.max_eq; i++)
		if (d->eq[i].valid)
			CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_EQ, i), QRNIC_AQ_OK);
	for (i = 1; i < d->cfg.max_pd; i++)
		if (d->pd[i].valid)
			CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_PD, i), QRNIC_AQ_OK);
	for (i = 1; i < d->cfg.max_uctx; i++)
		if (d->uctx_valid[i])
			CHECK_EQ(destroy(d, QRNIC_CMD_DEALLOC_UCTX, i), QRNIC_AQ_OK);
	CHECK_EQ(d->mtt_free, d->cfg.max_mtt);
}

/* Invariants that must hold whatever the guest did. */
static void check_invariants(struct qrnic_dev *d)
{
	uint32_t i, used = 0, mr_pages = 0;
	uint32_t *pdref = calloc(d->cfg.max_pd, 4), *cqref = calloc(d->cfg.max_cq, 4);
	uint32_t *eqref = calloc(d->cfg.max_eq, 4);

	for (i = 0; i < d->cfg.max_mtt; i++)
		used += d->mtt_used[i] != 0;
	CHECK_EQ(d->mtt_free, d->cfg.max_mtt - used);
	for (i = 1; i < d->cfg.max_mr; i++) {
		const struct qrnic_mpt_entry *m = &d->mr[i].mpt;

		if (!(m->flags & (QRNIC_MPT_VALID | QRNIC_MPT_FAST | QRNIC_MPT_MW)))
			continue;
		CHECK_EQ(QRNIC_KEY_INDEX(m->key), i);
		CHECK(d->pd[m->pdn].valid);
		pdref[m->pdn]++;
		if (m->flags & QRNIC_MPT_FAST)	/* ALLOC_MR holds max_pages */
			mr_pages += m->max_pages;
		else if (!(m->flags & QRNIC_MPT_PHYS))
			mr_pages += m->npages;
	}
	CHECK_EQ(mr_pages, used);
	{
		char why[256];

		CHECK_EQ(qrnic_dev_check_alloc(d, why, sizeof(why)), 0);
	}
	for (i = 1; i < d->cfg.max_ah; i++)
		if (d->ah[i].valid)
			pdref[d->ah[i].pdn]++;
	for (i = 0; i < d->cfg.max_qp; i++) {
		const struct qrnic_qp *qp = &d->qp[i];

		if (!qp->valid)
			continue;
		CHECK_EQ(qp->qpn, i);
		CHECK(qp->attr.qp_state <= QRNIC_QPS_ERR);
		pdref[qp->pdn]++;
		cqref[qp->send_cqn]++;
		cqref[qp->recv_cqn]++;
		CHECK_EQ(d->pd[qp->pdn].uctx, qp->uctx);
	}
	for (i = 1; i < d->cfg.max_cq; i++)
		if (d->cq[i].valid)
			eqref[d->cq[i].eqn]++;
	for (i = 1; i < d->cfg.max_pd; i++)
		CHECK_EQ(d->pd[i].valid ? d->pd[i].refcnt : 0, pdref[i]);
	for (i = 1; i < d->cfg.max_cq; i++)
		CHECK_EQ(d->cq[i].valid ? d->cq[i].refcnt : 0, cqref[i]);
	for (i = 1; i < d->cfg.max_eq; i++)
		CHECK_EQ(d->eq[i].valid ? d->eq[i].refcnt : 0, eqref[i]);
	free(pdref);
	free(cqref);
	free(eqref);
}

/* ==== Tests ================================================================ */

static void test_queries(void)
{
	struct qrnic_dev *d = dev_new();
	struct qrnic_aq_cmd c;
	struct qrnic_aq_cqe e;
	struct qrnic_device_attr da;
	struct qrnic_port_attr pa;
	uint64_t buf = galloc(4096, 4096);

	c = mk(QRNIC_CMD_QUERY_DEVICE);
	c.u.query.resp_addr = buf;
	c.u.query.resp_len = 4096;
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_OK);
	memcpy(&da, gptr(buf), sizeof(da));
	CHECK_EQ(da.abi_version, QRNIC_ABI_VERSION);
	CHECK_EQ(da.fw_version, QRNIC_FW_VERSION);
	CHECK_EQ(da.max_sge, QRNIC_MAX_SGE);
	CHECK_EQ(da.max_inline, QRNIC_MAX_INLINE);
	CHECK_EQ(da.max_msg_size, QRNIC_MAX_MSG_SIZE);
	CHECK_EQ(da.max_mtt, d->cfg.max_mtt);
	CHECK_EQ(da.page_size_cap, 0x7ffff000ull);
	CHECK_EQ(da.caps, QRNIC_CAP_RC | QRNIC_CAP_UD | QRNIC_CAP_ATOMIC | QRNIC_CAP_IPV6 |
			  QRNIC_CAP_ETH | QRNIC_CAP_UC | QRNIC_CAP_SRQ | QRNIC_CAP_MCAST | QRNIC_CAP_MEM_MGT |
			  QRNIC_CAP_RING_PAGELIST |
			  QRNIC_CAP_MW | QRNIC_CAP_CQ_RESIZE | QRNIC_CAP_XRC | QRNIC_CAP_QP_CC |
			  QRNIC_CAP_BF | QRNIC_CAP_CQE_TS | QRNIC_CAP_CC_PARAMS |
	      QRNIC_CAP_RQ_DBREC | QRNIC_CAP_SQ_DBREC);
	CHECK_EQ(da.hca_core_clock, 1000000u);
	CHECK_EQ(da.timestamp_mask, UINT64_MAX);
	CHECK_EQ(da.max_xrcd, d->cfg.max_xrcd);
	CHECK_EQ(da.max_srq, d->cfg.max_srq);
	CHECK_EQ(da.max_srq_wr, d->cfg.max_qp_wr);
	CHECK(da.max_qp_rd_atom <= QRNIC_MAX_RD_ATOMIC);
	CHECK_EQ(da.max_qp_rd_atom, da.max_qp_init_rd_atom);
	CHECK_EQ(memcmp(da.mac, d->cfg.mac, 6), 0);

	/* truncation to resp_len */
	memset(gptr(buf), 0xab, 4096);
	c.u.query.resp_len = 6;
	CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
	CHECK_EQ(gptr(buf)[5], (QRNIC_ABI_VERSION >> 8) & 0xff);
	CHECK_EQ(gptr(buf)[6], 0xab);
	/* resp_addr 0 / unreachable */
	c.u.query.resp_addr = 0;
	CHECK_EQ(st(d, &c), QRNIC_AQ_DMA_ERROR);
	c.u.query.resp_addr = 0x1000;
	CHECK_EQ(st(d, &c), QRNIC_AQ_DMA_ERROR);
	e = run(d, &c);
	CHECK_EQ(e.detail, 0);		/* only field errors carry an offset */
	CHECK_EQ(e.result[0], 0);
	/* port is ignored for QUERY_DEVICE, so are the bytes after the payload;
	 * flags and hdr.rsvd must be 0 */
	c.u.query.resp_addr = buf;
	c.u.query.port = 1;
	c.u.raw[100] = 1;
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_OK);
	CHECK_EQ(e.result[0], sizeof(struct qrnic_device_attr));
	CHECK_EQ(e.result[1], 6);
	c.hdr.flags = 1;
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_BAD_PARAM);
	CHECK_EQ(e.detail, 1);
	c.hdr.flags = 0;
	c.hdr.rsvd = 1;
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_BAD_PARAM);
	CHECK_EQ(e.detail, 4);

	c = mk(QRNIC_CMD_QUERY_PORT);
	c.u.query.resp_addr = buf;
	c.u.query.resp_len = sizeof(pa);
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);	/* port 0 */
	c.u.query.port = 1;
	CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
	memcpy(&pa, gptr(buf), sizeof(pa));
	CHECK_EQ(pa.state, QRNIC_PORT_ACTIVE);
	CHECK_EQ(pa.phys_state, QRNIC_PHYS_LINK_UP);
	CHECK_EQ(pa.eth_mtu, d->cfg.eth_mtu);
	CHECK_EQ(pa.gid_tbl_len, d->cfg.gid_tbl_len);
	if (d->cfg.eth_mtu == 4200)
		CHECK_EQ(pa.max_mtu, QRNIC_MTU_4096);
	qrnic_dev_set_link(d, false);
	CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
	memcpy(&pa, gptr(buf), sizeof(pa));
	CHECK_EQ(pa.state, QRNIC_PORT_DOWN);
	CHECK_EQ(pa.phys_state, QRNIC_PHYS_DISABLED);
	qrnic_dev_set_link(d, true);

	c = mk(QRNIC_CMD_QUERY_STATS);
	c.u.query.resp_addr = buf;
	c.u.query.resp_len = 4096;
	{
		uint64_t before = d->stats[QRNIC_STAT_ADMIN_CMDS], v;

		CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
		memcpy(&v, gptr(buf) + 8 * QRNIC_STAT_ADMIN_CMDS, 8);
		CHECK_EQ(v, before);
		CHECK_EQ(d->stats[QRNIC_STAT_ADMIN_CMDS], before + 1);
	}

	/* unknown opcodes */
	c = mk(0);
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_OPCODE);
	c = mk(QRNIC_CMD_MAX + 1);
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_OPCODE);
	c = mk(0xff);
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_OPCODE);
	qrnic_dev_free(d);
}

static void mtu_1500(struct qrnic_config *c) { c->eth_mtu = 1500; }
static void mtu_9000(struct qrnic_config *c) { c->eth_mtu = 9000; }
static void mtu_1100(struct qrnic_config *c) { c->eth_mtu = 1100; }

static void test_port_mtu(void)
{
	struct qrnic_dev *d;

	d = dev_new_cfg(mtu_1500);
	CHECK_EQ(qrnic_fw_port_mtu(d), QRNIC_MTU_1024);
	qrnic_dev_free(d);
	d = dev_new_cfg(mtu_9000);
	CHECK_EQ(qrnic_fw_port_mtu(d), QRNIC_MTU_4096);
	qrnic_dev_free(d);
	d = dev_new_cfg(mtu_1100);	/* 1100 - 92 = 1008 -> 512 */
	CHECK_EQ(qrnic_fw_port_mtu(d), QRNIC_MTU_512);
	qrnic_dev_free(d);
	d = dev_new();			/* default 4200 */
	CHECK_EQ(qrnic_fw_port_mtu(d), d->cfg.eth_mtu >= 4188 ? QRNIC_MTU_4096 : QRNIC_MTU_2048);
	qrnic_dev_free(d);
}

static void test_gid(void)
{
	struct qrnic_dev *d = dev_new();
	struct qrnic_aq_cmd c;
	struct qrnic_aq_cqe e;

	set_gid(d, 0, true);
	set_gid(d, 1, false);
	c = mk(QRNIC_CMD_QUERY_GID);
	c.u.gid.index = 0;
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_OK);
	CHECK_EQ(e.detail, 1 | (QRNIC_NET_IPV4 << 8));
	CHECK_EQ(((uint8_t *)e.result)[10], 0xff);
	CHECK_EQ(((uint8_t *)e.result)[12], 10);
	c.u.gid.index = 1;
	e = run(d, &c);
	CHECK_EQ(e.detail, 1 | (QRNIC_NET_IPV6 << 8));
	CHECK_EQ(((uint8_t *)e.result)[0], 0xfe);
	c.u.gid.index = 2;
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_OK);
	CHECK_EQ(e.detail, 0);
	c.u.gid.index = d->cfg.gid_tbl_len;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.gid.index = 0;
	c.u.gid.gid[3] = 1;	/* only index is used */
	CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
	c.u.gid.rsvd = 1;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);

	/* v4 net type with a non-mapped gid and vice versa */
	c = mk(QRNIC_CMD_SET_GID);
	c.u.gid.index = 3;
	c.u.gid.valid = 1;
	c.u.gid.net_type = QRNIC_NET_IPV4;
	c.u.gid.gid[0] = 0xfe;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.gid.net_type = 3;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.gid.net_type = QRNIC_NET_IPV6;
	memset(c.u.gid.gid, 0, 16);
	c.u.gid.gid[10] = c.u.gid.gid[11] = 0xff;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.gid.valid = 2;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	/* clear */
	c = mk(QRNIC_CMD_SET_GID);
	c.u.gid.index = 1;
	CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
	CHECK(!d->gid[1].valid);
	qrnic_dev_free(d);
}

/* Translation: PBL levels 0..3, page boundaries, different page sizes. */
static void test_mr_levels(void)
{
	struct qrnic_dev *d = dev_new();
	uint32_t pdn = create_pd(d, 0);
	unsigned level;

	for (level = 0; level <= 3; level++) {
		const unsigned shift = level == 3 ? 16 : 12;
		const uint64_t psz = 1ull << shift;
		const uint64_t iova = 0x7f0000001234ull + (level * 0x100);	/* odd offset */
		const uint64_t len = 5 * psz + 77;
		uint32_t n = npages_for(iova, len, shift), i, key;
		uint64_t pages[16], pbl;
		uint8_t *wr = malloc(len), *rd = malloc(len);
		struct qrnic_aq_cmd c;

		CHECK(n <= 16);
		if (level == 0) {
			pbl = galloc(n * psz, psz);
			for (i = 0; i < n; i++)
				pages[i] = pbl + i * psz;
		} else {
			/* scattered, reverse order */
			for (i = 0; i < n; i++)
				pages[n - 1 - i] = galloc(psz, psz);
			pbl = build_pbl((int)level, pages, n);
		}
		c = mr_cmd(pdn, QRNIC_ACCESS_LOCAL_WRITE | QRNIC_ACCESS_REMOTE_READ, 0,
			   (uint8_t)shift, (uint8_t)level, iova, len, pbl, n);
		CHECK_EQ(reg_mr(d, &c, &key), QRNIC_AQ_OK);
		CHECK_EQ(d->mr[QRNIC_KEY_INDEX(key)].mpt.npages, n);

		/* write across the first page boundary */
		for (i = 0; i < len; i++)
			wr[i] = (uint8_t)(i * 7 + level);
		{
			uint64_t va = iova + (psz - (iova & (psz - 1))) - 100;	/* 100 bytes before page 1 */
			unsigned t0 = H.translate;

			CHECK_EQ(qrnic_mr_write(d, key, pdn, va, wr, 300, QRNIC_ACCESS_LOCAL_WRITE),
				 QRNIC_VERR_NONE);
			CHECK_EQ(H.translate, t0 + 1);
			/* byte at va is in page 0 at offset psz-100, the rest in page 1 */
			CHECK_EQ(memcmp(gptr(pages[0] + psz - 100), wr, 100), 0);
			CHECK_EQ(memcmp(gptr(pages[1]), wr + 100, 200), 0);
			memset(rd, 0, 300);
			CHECK_EQ(qrnic_mr_read(d, key, pdn, va, rd, 300, 0), QRNIC_VERR_NONE);
			CHECK_EQ(memcmp(rd, wr, 300), 0);
		}
		/* first byte: page 0 at iova's offset; last byte: last page */
		CHECK_EQ(qrnic_mr_write(d, key, pdn, iova, wr, 1, QRNIC_ACCESS_LOCAL_WRITE), 0);
		CHECK_EQ(*gptr(pages[0] + (iova & (psz - 1))), wr[0]);
		CHECK_EQ(qrnic_mr_write(d, key, pdn, iova + len - 1, wr + 5, 1,
					QRNIC_ACCESS_LOCAL_WRITE), 0);
		CHECK_EQ(*gptr(pages[n - 1] + ((iova + len - 1) & (psz - 1))), wr[5]);
		/* whole MR round trip, and every byte where the MTT says */
		{
			uint64_t off0 = iova & (psz - 1);

			CHECK_EQ(qrnic_mr_write(d, key, pdn, iova, wr, (uint32_t)len,
						QRNIC_ACCESS_LOCAL_WRITE), 0);
			memset(rd, 0, len);
			CHECK_EQ(qrnic_mr_read(d, key, pdn, iova, rd, (uint32_t)len, 0), 0);
			CHECK_EQ(memcmp(rd, wr, len), 0);
			for (i = 0; i < len; i += 997) {
				uint64_t o = off0 + i;

				CHECK_EQ(*gptr(pages[o >> shift] + (o & (psz - 1))), wr[i]);
			}
		}
		/* bounds */
		CHECK_EQ(qrnic_mr_read(d, key, pdn, iova + len - 1, rd, 2, 0), QRNIC_VERR_BOUNDS);
		CHECK_EQ(qrnic_mr_read(d, key, pdn, iova - 1, rd, 2, 0), QRNIC_VERR_BOUNDS);
		CHECK_EQ(qrnic_mr_check(d, key, pdn, iova + len, 0, 0), QRNIC_VERR_NONE);
		CHECK_EQ(qrnic_mr_check(d, key, pdn, iova, len, QRNIC_ACCESS_REMOTE_READ), 0);
		CHECK_EQ(qrnic_mr_check(d, key, pdn, iova, len + 1, 0), QRNIC_VERR_BOUNDS);
		/* access, PD, key */
		CHECK_EQ(qrnic_mr_check(d, key, pdn, iova, 1, QRNIC_ACCESS_REMOTE_WRITE),
			 QRNIC_VERR_ACCESS);
		CHECK_EQ(qrnic_mr_check(d, key, pdn, iova, 0, QRNIC_ACCESS_REMOTE_ATOMIC),
			 QRNIC_VERR_ACCESS);
		CHECK_EQ(qrnic_mr_check(d, key, pdn + 1, iova, 1, 0), QRNIC_VERR_PD);
		CHECK_EQ(qrnic_mr_check(d, key ^ 1, pdn, iova, 1, 0), QRNIC_VERR_LKEY);
		CHECK_EQ(qrnic_mr_check(d, key & 0xff, pdn, iova, 1, 0), QRNIC_VERR_LKEY);
		CHECK_EQ(qrnic_mr_check(d, 0xffffff00u, pdn, iova, 1, 0), QRNIC_VERR_LKEY);
		CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, key), QRNIC_AQ_OK);
		free(wr);
		free(rd);
	}

	/* a data page whose address is not aligned to the page size */
	{
		uint64_t pages[2] = { galloc(8192, 4096), galloc(8192, 4096) + 0x800 };
		uint64_t pbl = build_pbl(1, pages, 2);
		struct qrnic_aq_cmd c = mr_cmd(pdn, 0, 0, 12, 1, 0, 8192, pbl, 2);
		uint32_t f0 = d->mtt_free;

		CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
		CHECK_EQ(d->mtt_free, f0);
		/* level 0 base must be aligned to the page size too */
		c = mr_cmd(pdn, 0, 0, 13, 0, 0, 8192, galloc(16384, 4096) | 0x1000, 1);
		CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	}
	destroy_all(d);
	qrnic_dev_free(d);
}

/* A 1 GiB MR of 4 KiB pages: 262144 MTT entries through a 2-level PBL. */
static void test_mr_1g(void)
{
	struct qrnic_dev *d = dev_new();
	uint32_t pdn = create_pd(d, 0);
	const uint32_t n = 262144, ndata = 1024;
	uint64_t *pages = malloc((size_t)n * 8);
	uint64_t data = galloc((uint64_t)ndata * 4096, 4096), pbl, iova = 0x100000000ull;
	uint32_t i, key, f0 = d->mtt_free;
	struct qrnic_aq_cmd c;
	const uint32_t probes[] = { 0, 1, 511, 512, 513, 4097, 131071, 200000, 262143 };

	for (i = 0; i < n; i++)	/* data pages alias a 4 MiB window, permuted */
		pages[i] = data + (uint64_t)((i * 7919u) % ndata) * 4096;
	pbl = build_pbl(2, pages, n);
	c = mr_cmd(pdn, QRNIC_ACCESS_LOCAL_WRITE, 0, 12, 2, iova, 1ull << 30, pbl, n);
	CHECK_EQ(reg_mr(d, &c, &key), QRNIC_AQ_OK);
	CHECK_EQ(d->mtt_free, f0 - n);
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		uint32_t p = probes[i], v = 0xc0de0000u | p, r = 0;
		uint64_t va = iova + (uint64_t)p * 4096 + 8;

		CHECK_EQ(qrnic_mr_write(d, key, pdn, va, &v, 4, QRNIC_ACCESS_LOCAL_WRITE), 0);
		CHECK_EQ(memcmp(gptr(pages[p] + 8), &v, 4), 0);
		CHECK_EQ(qrnic_mr_read(d, key, pdn, va, &r, 4, 0), 0);
		CHECK_EQ(r, v);
	}
	CHECK_EQ(qrnic_mr_check(d, key, pdn, iova, 1ull << 30, 0), 0);
	CHECK_EQ(qrnic_mr_check(d, key, pdn, iova, (1ull << 30) + 1, 0), QRNIC_VERR_BOUNDS);
	/* the 1 GiB range is not available twice: 2*262144 = 524288 = max_mtt,
	 * but the PD-less first page of MTT may be in use; a second works only
	 * if everything else is free */
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, key), QRNIC_AQ_OK);
	CHECK_EQ(d->mtt_free, f0);

	/* level 1 cannot describe more than 512 pages; level 2 not more than 512^2 */
	c = mr_cmd(pdn, 0, 0, 12, 1, 0, 513 * 4096, pbl, 513);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, 0, 0, 12, 2, 0, (1ull << 30) + 4096, pbl, n + 1);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	/* same 1 GiB through 3 levels */
	c = mr_cmd(pdn, 0, 0, 12, 3, iova, 1ull << 30, build_pbl(3, pages, n), n);
	CHECK_EQ(reg_mr(d, &c, &key), QRNIC_AQ_OK);
	CHECK_EQ(d->mr[QRNIC_KEY_INDEX(key)].mpt.npages, n);
	CHECK_EQ(d->mtt[d->mr[QRNIC_KEY_INDEX(key)].mpt.mtt_base + 200000], pages[200000]);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, key), QRNIC_AQ_OK);
	free(pages);
	destroy_all(d);
	qrnic_dev_free(d);
}

static void test_stale_key(void)
{
	struct qrnic_dev *d = dev_new();
	uint32_t pdn = create_pd(d, 0), k1, k2, k3;
	uint64_t buf = galloc(4096, 4096);
	struct qrnic_aq_cmd c = mr_cmd(pdn, QRNIC_ACCESS_LOCAL_WRITE, 0, 12, 0, 0x1000, 4096, buf, 1);
	struct qrnic_aq_cmd q;
	struct qrnic_mpt_entry m;
	uint64_t resp = galloc(64, 64);

	CHECK_EQ(reg_mr(d, &c, &k1), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, k1), QRNIC_AQ_OK);
	CHECK_EQ(reg_mr(d, &c, &k2), QRNIC_AQ_OK);
	CHECK_EQ(QRNIC_KEY_INDEX(k1), QRNIC_KEY_INDEX(k2));	/* slot reused ... */
	CHECK(k1 != k2);					/* ... with a new tag */
	CHECK_EQ(qrnic_mr_check(d, k1, pdn, 0x1000, 1, 0), QRNIC_VERR_LKEY);
	CHECK_EQ(qrnic_mr_check(d, k2, pdn, 0x1000, 1, 0), QRNIC_VERR_NONE);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, k1), QRNIC_AQ_BAD_HANDLE);
	q = mk(QRNIC_CMD_QUERY_MR);
	q.u.query_qp.handle = k1;
	q.u.query_qp.resp_addr = resp;
	q.u.query_qp.resp_len = sizeof(m);
	CHECK_EQ(st(d, &q), QRNIC_AQ_BAD_HANDLE);
	q.u.query_qp.handle = k2;
	CHECK_EQ(st(d, &q), QRNIC_AQ_OK);
	memcpy(&m, gptr(resp), sizeof(m));
	CHECK_EQ(m.key, k2);
	CHECK_EQ(m.flags, QRNIC_MPT_VALID);
	CHECK_EQ(m.pdn, pdn);
	CHECK_EQ(m.length, 4096);
	CHECK_EQ(m.npages, 1);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, k2), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, k2), QRNIC_AQ_BAD_HANDLE);
	/* 256 registrations of one slot cycle the tag; any two consecutive differ */
	k3 = k2;
	for (int i = 0; i < 300; i++) {
		uint32_t k;

		CHECK_EQ(reg_mr(d, &c, &k), QRNIC_AQ_OK);
		CHECK(k != k3);
		k3 = k;
		CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, k), QRNIC_AQ_OK);
	}
	/* PD in use by an MR */
	CHECK_EQ(reg_mr(d, &c, &k1), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_PD, pdn), QRNIC_AQ_BUSY);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, k1), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_PD, pdn), QRNIC_AQ_OK);
	qrnic_dev_free(d);
}

static void test_bounds(void)
{
	struct qrnic_dev *d = dev_new();
	uint32_t pdn = create_pd(d, 0), key, uctx;
	uint64_t pages[2] = { galloc(4096, 4096), galloc(4096, 4096) };
	uint64_t pbl = build_pbl(1, pages, 2);
	const uint64_t top = UINT64_MAX - 8191;	/* MR ends exactly at 2^64 - 1 */
	struct qrnic_aq_cmd c = mr_cmd(pdn, QRNIC_ACCESS_LOCAL_WRITE, 0, 12, 1, top, 8192, pbl, 2);
	uint8_t b[32];

	CHECK_EQ(reg_mr(d, &c, &key), QRNIC_AQ_OK);
	CHECK_EQ(qrnic_mr_check(d, key, pdn, UINT64_MAX - 10, 11, 0), QRNIC_VERR_NONE);
	CHECK_EQ(qrnic_mr_check(d, key, pdn, UINT64_MAX - 10, 12, 0), QRNIC_VERR_BOUNDS);
	CHECK_EQ(qrnic_mr_check(d, key, pdn, UINT64_MAX - 10, 20, 0), QRNIC_VERR_BOUNDS);
	CHECK_EQ(qrnic_mr_check(d, key, pdn, UINT64_MAX, UINT64_MAX, 0), QRNIC_VERR_BOUNDS);
	CHECK_EQ(qrnic_mr_check(d, key, pdn, top, 8192, 0), QRNIC_VERR_NONE);
	CHECK_EQ(qrnic_mr_check(d, key, pdn, top - 1, 2, 0), QRNIC_VERR_BOUNDS);
	CHECK_EQ(qrnic_mr_check(d, key, pdn, 0, 1, 0), QRNIC_VERR_BOUNDS);
	CHECK_EQ(qrnic_mr_read(d, key, pdn, UINT64_MAX - 4, b, 5, 0), QRNIC_VERR_NONE);
	CHECK_EQ(qrnic_mr_read(d, key, pdn, UINT64_MAX - 4, b, 6, 0), QRNIC_VERR_BOUNDS);
	CHECK_EQ(qrnic_mr_write(d, key, pdn, UINT64_MAX - 4, b, 5, QRNIC_ACCESS_LOCAL_WRITE), 0);
	/* zero-length: no bounds, but key/PD/access */
	CHECK_EQ(qrnic_mr_check(d, key, pdn, 5, 0, 0), QRNIC_VERR_NONE);
	CHECK_EQ(qrnic_mr_check(d, key, pdn + 1, 5, 0, 0), QRNIC_VERR_PD);
	CHECK_EQ(qrnic_mr_check(d, key + 1, pdn, 5, 0, 0), QRNIC_VERR_LKEY);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, key), QRNIC_AQ_OK);

	/* REG_MR: wrap, length limits, access rules, flags, npages */
	c = mr_cmd(pdn, 0, 0, 12, 1, UINT64_MAX - 8190, 8192, pbl, 3);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, 0, 0, 12, 1, 0, 0, pbl, 0);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, 0, 0, 12, 1, 0, d->cfg.max_mr_size + 1, pbl, 2);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, QRNIC_ACCESS_REMOTE_WRITE, 0, 12, 1, 0, 8192, pbl, 2);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, QRNIC_ACCESS_REMOTE_ATOMIC, 0, 12, 1, 0, 8192, pbl, 2);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, QRNIC_ACCESS_REMOTE_READ, 0, 12, 1, 0, 8192, pbl, 2);
	CHECK_EQ(reg_mr(d, &c, &key), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, key), QRNIC_AQ_OK);
	c = mr_cmd(pdn, 0x20, 0, 12, 1, 0, 8192, pbl, 2);	/* 0x10 is MW_BIND (ABI 1.2) */
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, QRNIC_ACCESS_MW_BIND, 0, 12, 1, 0, 8192, pbl, 2);
	CHECK_EQ(reg_mr(d, &c, &key), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, key), QRNIC_AQ_OK);
	c = mr_cmd(pdn, 0, 2, 12, 1, 0, 8192, pbl, 2);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, 0, 0, 12, 1, 0x800, 8192, pbl, 2);	/* spans 3 pages */
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, 0, 0, 11, 1, 0, 8192, pbl, 4);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, 0, 0, 31, 1, 0, 8192, pbl, 1);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, 0, 0, 12, 4, 0, 8192, pbl, 2);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, 0, 0, 12, 1, 0, 8192, pbl + 8, 2);	/* list not 4 KiB aligned */
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, 0, 0, 12, 1, 0, 8192, 0, 2);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c = mr_cmd(pdn, 0, 0, 12, 1, 0, 8192, 0x1000, 2);	/* unreachable PBL */
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_DMA_ERROR);
	c = mr_cmd(pdn + 7, 0, 0, 12, 1, 0, 8192, pbl, 2);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_HANDLE);
	c = mr_cmd(pdn, 0, 0, 12, 1, 0, 8192, pbl, 2);
	c.u.reg_mr.rsvd2 = 1;
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);

	/* PHYS: kernel PDs only, no PBL; iova is the bus address */
	c = mr_cmd(pdn, QRNIC_ACCESS_LOCAL_WRITE, QRNIC_MR_F_PHYS, 12, 0, MEM_BASE, MEM_SIZE, 0, 0);
	CHECK_EQ(reg_mr(d, &c, &key), QRNIC_AQ_OK);
	{
		uint64_t a = galloc(8192, 4096);
		uint32_t v = 0x12345678;

		CHECK_EQ(qrnic_mr_write(d, key, pdn, a + 4094, &v, 4, QRNIC_ACCESS_LOCAL_WRITE), 0);
		CHECK_EQ(memcmp(gptr(a + 4094), &v, 4), 0);
		CHECK_EQ(qrnic_mr_check(d, key, pdn, MEM_BASE - 1, 1, 0), QRNIC_VERR_BOUNDS);
	}
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, key), QRNIC_AQ_OK);
	/* PHYS ignores pbl_levels, pbl_addr, npages and uses no MTT */
	{
		uint32_t f0 = d->mtt_free;

		c = mr_cmd(pdn, 0, QRNIC_MR_F_PHYS, 12, 2, MEM_BASE + 100, 4096, 0x123, 7);
		CHECK_EQ(reg_mr(d, &c, &key), QRNIC_AQ_OK);
		CHECK_EQ(d->mtt_free, f0);
		CHECK_EQ(d->mr[QRNIC_KEY_INDEX(key)].mpt.npages, 0);
		CHECK_EQ(d->mr[QRNIC_KEY_INDEX(key)].mpt.flags, QRNIC_MPT_VALID | QRNIC_MPT_PHYS);
		CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, key), QRNIC_AQ_OK);
		c = mr_cmd(pdn, 0, QRNIC_MR_F_PHYS, 11, 0, MEM_BASE, 4096, 0, 1);
		CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	}
	{
		struct qrnic_aq_cmd a = mk(QRNIC_CMD_ALLOC_UCTX);
		uint32_t upd;

		uctx = OK_HANDLE(d, &a);
		upd = create_pd(d, uctx);
		c = mr_cmd(upd, 0, QRNIC_MR_F_PHYS, 12, 0, MEM_BASE, 4096, 0, 0);
		CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	}
	destroy_all(d);
	qrnic_dev_free(d);
}

static void small_mtt(struct qrnic_config *c) { c->max_mtt = 64; }
static void small_mpt(struct qrnic_config *c) { c->max_mr = 5; }

static void test_mtt(void)
{
	struct qrnic_dev *d = dev_new_cfg(small_mtt);
	uint32_t pdn = create_pd(d, 0), a, b, c3, e, keys[16], nk = 0, i;
	uint64_t data = galloc(64 * 4096, 4096);
	struct qrnic_aq_cmd c;

	/* allocator */
	CHECK_EQ(qrnic_mtt_alloc(d, 0), UINT32_MAX);
	CHECK_EQ(qrnic_mtt_alloc(d, 65), UINT32_MAX);
	a = qrnic_mtt_alloc(d, 10);
	b = qrnic_mtt_alloc(d, 10);
	c3 = qrnic_mtt_alloc(d, 10);
	CHECK(a != UINT32_MAX && b != UINT32_MAX && c3 != UINT32_MAX);
	CHECK(b >= a + 10 || a >= b + 10);
	CHECK_EQ(d->mtt_free, 34);
	qrnic_mtt_free(d, b, 10);
	CHECK_EQ(d->mtt_free, 44);
	e = qrnic_mtt_alloc(d, 15);	/* does not fit b's hole */
	CHECK(e != UINT32_MAX && (e + 15 <= b || e >= b + 10));
	CHECK_EQ(qrnic_mtt_alloc(d, 10), b);	/* first fit: the hole */
	CHECK_EQ(d->mtt_free, 19);
	CHECK_EQ(qrnic_mtt_alloc(d, 20), UINT32_MAX);
	qrnic_mtt_free(d, b, 10);
	qrnic_mtt_free(d, b, 10);	/* double free is counted once */
	CHECK_EQ(d->mtt_free, 29);
	qrnic_mtt_free(d, 60, 100);	/* out of range: ignored */
	CHECK_EQ(d->mtt_free, 29);
	qrnic_mtt_free(d, a, 10);
	qrnic_mtt_free(d, c3, 10);
	qrnic_mtt_free(d, e, 15);
	CHECK_EQ(d->mtt_free, 64);
	CHECK_EQ(qrnic_mtt_alloc(d, 64), 0);
	qrnic_mtt_free(d, 0, 64);

	/* exhaustion through REG_MR */
	for (;;) {
		uint32_t k;

		c = mr_cmd(pdn, 0, 0, 12, 0, 0, 12 * 4096, data, 12);
		if (reg_mr(d, &c, &k) != QRNIC_AQ_OK)
			break;
		keys[nk++] = k;
		CHECK(nk <= 5);
		if (nk > 5)
			break;
	}
	CHECK_EQ(nk, 5);
	CHECK_EQ(d->mtt_free, 4);
	c = mr_cmd(pdn, 0, 0, 12, 0, 0, 5 * 4096, data, 5);
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_NO_RESOURCES);
	c = mr_cmd(pdn, 0, 0, 12, 0, 0, 65 * 4096, data, 65);	/* more than max_mtt */
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_NO_RESOURCES);
	CHECK_EQ(d->mtt_free, 4);
	for (i = 0; i < nk; i++)
		CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, keys[i]), QRNIC_AQ_OK);
	CHECK_EQ(d->mtt_free, 64);

	/* unwinding: a PBL walk that fails half way frees its MTT range */
	{
		uint64_t pages[40], top, *l;

		for (i = 0; i < 40; i++)
			pages[i] = data + i * 4096;
		top = build_pbl(2, pages, 40);
		CHECK_EQ(reg_mr(d, &(struct qrnic_aq_cmd){ 0 }, NULL), QRNIC_AQ_BAD_OPCODE);
		c = mr_cmd(pdn, 0, 0, 12, 2, 0, 40 * 4096, top, 40);
		CHECK_EQ(reg_mr(d, &c, &keys[0]), QRNIC_AQ_OK);
		CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, keys[0]), QRNIC_AQ_OK);
		/* 2-level with only one list page (40 <= 512); corrupt its pointer */
		l = (uint64_t *)gptr(top);
		l[0] = 0x1000;	/* aligned but not in guest memory */
		CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_DMA_ERROR);
		CHECK_EQ(d->mtt_free, 64);
		l[0] = 0;	/* null list pointer */
		CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
		CHECK_EQ(d->mtt_free, 64);
		l[0] = pages[0] + 8;	/* misaligned list pointer */
		CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
		CHECK_EQ(d->mtt_free, 64);
		/* last data page misaligned (failure after most of the copy) */
		l[0] = build_pbl(1, pages, 40);
		((uint64_t *)gptr(l[0]))[39] |= 0x10;
		CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
		CHECK_EQ(d->mtt_free, 64);
		for (i = 1; i < d->cfg.max_mr; i++)
			CHECK(!(d->mr[i].mpt.flags & QRNIC_MPT_VALID));
		CHECK_EQ(d->pd[pdn].refcnt, 0);
	}
	destroy_all(d);
	qrnic_dev_free(d);

	/* MPT exhaustion: handles 1..max_mr-1 */
	d = dev_new_cfg(small_mpt);
	pdn = create_pd(d, 0);
	c = mr_cmd(pdn, 0, 0, 12, 0, 0, 4096, galloc(4096, 4096), 1);
	for (i = 1; i < d->cfg.max_mr; i++)
		CHECK_EQ(reg_mr(d, &c, &keys[i]), QRNIC_AQ_OK);
	a = d->mtt_free;
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_NO_RESOURCES);
	CHECK_EQ(d->mtt_free, a);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, keys[2]), QRNIC_AQ_OK);
	CHECK_EQ(reg_mr(d, &c, &keys[0]), QRNIC_AQ_OK);
	CHECK_EQ(QRNIC_KEY_INDEX(keys[0]), QRNIC_KEY_INDEX(keys[2]));
	destroy_all(d);
	qrnic_dev_free(d);
}

/* ---- MPT and MTT allocators (model/mr.c) ------------------------------- */
static void check_alloc(struct qrnic_dev *d, int line)
{
	char why[256];

	checks++;
	if (qrnic_dev_check_alloc(d, why, sizeof(why)) != 0) {
		failures++;
		fprintf(stderr, "line %d: allocator check: %s\n", line, why);
	}
}
#define CHECK_ALLOC(d) check_alloc(d, __LINE__)

static uint32_t alloc_rng = 12345;

static uint32_t arnd(uint32_t n)
{
	alloc_rng ^= alloc_rng << 13;
	alloc_rng ^= alloc_rng >> 17;
	alloc_rng ^= alloc_rng << 5;
	return alloc_rng % n;
}

/* The reference: first fit over a byte map, as the allocator replaced. */
static uint32_t ref_first_fit(uint8_t *map, uint32_t max, uint32_t n)
{
	for (uint32_t i = 0, run = 0; i < max; i++) {
		run = map[i] ? 0 : run + 1;
		if (run == n) {
			memset(map + i + 1 - n, 1, n);
			return i + 1 - n;
		}
	}
	return UINT32_MAX;
}

static void mtt_200(struct qrnic_config *c) { c->max_mtt = 256; c->max_mr = 200; }
static void mtt_1000(struct qrnic_config *c) { c->max_mtt = 1000; }

static void test_alloc_mtt(void)
{
	struct qrnic_dev *d = dev_new_cfg(mtt_200);
	uint32_t base[64], i, a;
	uint8_t ref[1000];
	uint32_t rb[300], rn[300], nlive = 0;

	/* fill the MTT with 64 ranges of 4: first fit packs them from 0 */
	for (i = 0; i < 64; i++) {
		base[i] = qrnic_mtt_alloc(d, 4);
		CHECK_EQ(base[i], i * 4);
	}
	CHECK_EQ(d->mtt_free, 0);
	CHECK_EQ(qrnic_mtt_alloc(d, 1), UINT32_MAX);	/* exhausted: clean refusal */
	CHECK_ALLOC(d);
	/* free every other: 32 holes of 4, none larger */
	for (i = 1; i < 64; i += 2)
		qrnic_mtt_free(d, base[i], 4);
	CHECK_EQ(d->mtt_free, 128);
	CHECK_ALLOC(d);
	CHECK_EQ(qrnic_mtt_alloc(d, 5), UINT32_MAX);	/* 128 free, no run of 5 */
	CHECK_EQ(d->mtt_free, 128);
	CHECK_EQ(qrnic_mtt_alloc(d, 3), 4);		/* the first hole, partly */
	CHECK_EQ(qrnic_mtt_alloc(d, 2), 12);		/* 7 is left: too small */
	CHECK_EQ(qrnic_mtt_alloc(d, 1), 7);		/* first fit: the 1 left */
	CHECK_ALLOC(d);
	/* freeing a range between two holes joins the three */
	qrnic_mtt_free(d, base[10], 4);			/* 36..40 + holes 44.. and 28.. */
	CHECK_EQ(qrnic_mtt_alloc(d, 12), 36);		/* 36..48: hole 28..32 is too small */
	CHECK_EQ(qrnic_mtt_alloc(d, 4), 20);		/* the lowest 4-hole now */
	CHECK_ALLOC(d);
	/* everything back: one run again */
	for (i = 0; i < 256; i++)
		qrnic_mtt_free(d, i, 1);
	CHECK_EQ(d->mtt_free, 256);
	CHECK_ALLOC(d);
	CHECK_EQ(qrnic_mtt_alloc(d, 256), 0);
	qrnic_mtt_free(d, 0, 256);
	CHECK_ALLOC(d);
	qrnic_dev_free(d);

	/* random churn against the reference (first fit: the same bases) */
	d = dev_new_cfg(mtt_1000);
	memset(ref, 0, sizeof(ref));
	for (i = 0; i < 30000; i++) {
		if (nlive < 300 && (nlive == 0 || arnd(100) < 55)) {
			uint32_t n = 1 + (arnd(4) ? arnd(8) : arnd(120));

			a = qrnic_mtt_alloc(d, n);
			CHECK_EQ(a, ref_first_fit(ref, 1000, n));
			if (a != UINT32_MAX) {
				rb[nlive] = a;
				rn[nlive++] = n;
			}
		} else {
			uint32_t k = arnd(nlive);

			qrnic_mtt_free(d, rb[k], rn[k]);
			memset(ref + rb[k], 0, rn[k]);
			rb[k] = rb[--nlive];
			rn[k] = rn[nlive];
		}
		if (i % 1000 == 0)
			CHECK_ALLOC(d);
	}
	CHECK_ALLOC(d);
	qrnic_dev_free(d);
}

static void mpt_200(struct qrnic_config *c) { c->max_mr = 200; }

static void test_alloc_mpt(void)
{
	struct qrnic_dev *d = dev_new_cfg(mpt_200);
	uint32_t pdn = create_pd(d, 0), keys[200], k, i, n = 0;
	struct qrnic_aq_cmd c = mr_cmd(pdn, 0, QRNIC_MR_F_PHYS, 12, 0, MEM_BASE, 4096, 0, 0);
	struct qrnic_aq_cqe e;

	/* slots 1..199 in order, then a clean refusal */
	for (i = 1; i < 200; i++) {
		CHECK_EQ(reg_mr(d, &c, &keys[i]), QRNIC_AQ_OK);
		CHECK_EQ(QRNIC_KEY_INDEX(keys[i]), i);
	}
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_NO_RESOURCES);
	CHECK_EQ(e.detail, 0);
	CHECK_ALLOC(d);
	/* every other slot back: reused lowest first, each with its next tag */
	for (i = 1; i < 200; i += 2)
		CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, keys[i]), QRNIC_AQ_OK);
	CHECK_ALLOC(d);
	for (i = 1; i < 200; i += 2) {
		CHECK_EQ(reg_mr(d, &c, &k), QRNIC_AQ_OK);
		CHECK_EQ(QRNIC_KEY_INDEX(k), i);
		CHECK(k != keys[i]);	/* the old key of the slot stays stale */
		CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, keys[i]), QRNIC_AQ_BAD_HANDLE);
		keys[i] = k;
	}
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_NO_RESOURCES);
	/* the top slots back, then a low one: the low one first */
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, keys[199]), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, keys[198]), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, keys[70]), QRNIC_AQ_OK);
	CHECK_ALLOC(d);
	CHECK_EQ(reg_mr(d, &c, &keys[70]), QRNIC_AQ_OK);
	CHECK_EQ(QRNIC_KEY_INDEX(keys[70]), 70);
	CHECK_EQ(reg_mr(d, &c, &keys[198]), QRNIC_AQ_OK);
	CHECK_EQ(QRNIC_KEY_INDEX(keys[198]), 198);
	CHECK_ALLOC(d);
	/* a failed registration claims nothing */
	c.u.reg_mr.access = 0xffffffff;
	CHECK_EQ(reg_mr(d, &c, NULL), QRNIC_AQ_BAD_PARAM);
	c.u.reg_mr.access = 0;
	CHECK_EQ(reg_mr(d, &c, &keys[199]), QRNIC_AQ_OK);
	CHECK_EQ(QRNIC_KEY_INDEX(keys[199]), 199);
	destroy_all(d);
	CHECK_ALLOC(d);

	/* random churn of MRs, fast-registration MRs and windows against the
	 * lowest-free reference; MTT ranges of 1..8 pages */
	{
		uint64_t data = galloc(8 * 4096, 4096);
		bool used[200] = { false };
		uint32_t live[200];

		pdn = create_pd(d, 0);
		for (i = 0; i < 20000; i++) {
			if (n < 199 && (n == 0 || arnd(100) < 55)) {
				uint32_t want = 1, kind = arnd(4);
				struct qrnic_aq_cmd a;

				while (want < 200 && used[want])
					want++;
				if (kind == 0) {
					a = mk(QRNIC_CMD_ALLOC_MR);
					a.u.alloc_mr.pdn = pdn;
					a.u.alloc_mr.max_pages = 1 + arnd(8);
				} else if (kind == 1) {
					a = mk(QRNIC_CMD_ALLOC_MW);
					a.u.alloc_mw.pdn = pdn;
					a.u.alloc_mw.type = QRNIC_MW_TYPE_1;
				} else {
					uint32_t np = 1 + arnd(8);

					a = mr_cmd(pdn, 0, 0, 12, 0, 0x10000, np * 4096ull, data, np);
				}
				e = run(d, &a);
				CHECK_EQ(e.status, QRNIC_AQ_OK);
				if (e.status != QRNIC_AQ_OK)
					break;
				CHECK_EQ(QRNIC_KEY_INDEX(e.result[0]), want);
				used[want] = true;
				live[n++] = e.result[0];
			} else {
				k = arnd(n);
				CHECK_EQ(destroy(d, QRNIC_CMD_DEREG_MR, live[k]), QRNIC_AQ_OK);
				used[QRNIC_KEY_INDEX(live[k])] = false;
				live[k] = live[--n];
			}
			if (i % 1000 == 0)
				CHECK_ALLOC(d);
		}
		CHECK_ALLOC(d);
		check_invariants(d);

		/* snapshot round trip after the churn: the allocators come back
		 * (rebuilt, not saved) and hand out what the original does */
		{
			struct qrnic_dev *d2 = dev_new_cfg(mpt_200);
			uint8_t *buf = NULL, *buf2 = NULL;
			size_t len = 0, len2 = 0;
			char err[256] = "";

			CHECK_EQ(qrnic_dev_save(d, &buf, &len), 0);
			CHECK_EQ(qrnic_dev_load(d2, buf, len, err, sizeof(err)), 0);
			if (err[0])
				fprintf(stderr, "load: %s\n", err);
			CHECK_ALLOC(d2);
			CHECK_EQ(d2->mtt_free, d->mtt_free);
			CHECK_EQ(d2->mpt_ids.top, d->mpt_ids.top);
			CHECK_EQ(qrnic_dev_save(d2, &buf2, &len2), 0);
			CHECK(len2 == len && !memcmp(buf, buf2, len));
			for (i = 0; i < 5 && n + i < 199; i++) {
				struct qrnic_aq_cmd a = mr_cmd(pdn, 0, 0, 12, 0, 0x10000,
							       (i + 1) * 4096ull, data, i + 1);
				struct qrnic_aq_cqe e1 = run(d, &a), e2 = run(d2, &a);

				CHECK_EQ(e1.status, QRNIC_AQ_OK);
				CHECK_EQ(e2.status, e1.status);
				CHECK_EQ(e2.result[0], e1.result[0]);
				k = QRNIC_KEY_INDEX(e1.result[0]);
				CHECK_EQ(d2->mr[k].mpt.mtt_base, d->mr[k].mpt.mtt_base);
			}
			CHECK_EQ(qrnic_mtt_alloc(d2, 3), qrnic_mtt_alloc(d, 3));
			CHECK_ALLOC(d);
			CHECK_ALLOC(d2);
			/* a stream whose MTT holds an entry no MR uses is refused */
			free(buf);
			buf = NULL;
			qrnic_mtt_alloc(d, 2);	/* orphan range */
			CHECK_EQ(qrnic_dev_save(d, &buf, &len), 0);
			CHECK(qrnic_dev_load(d2, buf, len, err, sizeof(err)) != 0);
			CHECK(strstr(err, "no MR uses it") != NULL);
			CHECK_ALLOC(d2);	/* back to the reset state */
			CHECK_EQ(d2->mtt_free, d2->cfg.max_mtt);
			free(buf);
			free(buf2);
			qrnic_dev_free(d2);
		}
	}
	qrnic_dev_free(d);
}

static void test_sgl(void)
{
	struct qrnic_dev *d = dev_new();
	uint32_t pdn = create_pd(d, 0), kw, kr, total = 0, i;
	uint64_t b1 = galloc(3 * 4096, 4096), b2 = galloc(4096, 4096);
	struct qrnic_aq_cmd c;
	struct qrnic_sge sge[4];
	uint8_t in[6000], out[6000];

	c = mr_cmd(pdn, QRNIC_ACCESS_LOCAL_WRITE, 0, 12, 0, 0x10000, 3 * 4096, b1, 3);
	CHECK_EQ(reg_mr(d, &c, &kw), QRNIC_AQ_OK);
	c = mr_cmd(pdn, 0, 0, 12, 0, 0x20000, 4096, b2, 1);
	CHECK_EQ(reg_mr(d, &c, &kr), QRNIC_AQ_OK);

	sge[0] = (struct qrnic_sge){ 0x10000 + 4000, 200, kw };	/* crosses a page */
	sge[1] = (struct qrnic_sge){ 0, 0, 0xdead00 };		/* zero length: skipped */
	sge[2] = (struct qrnic_sge){ 0x10000 + 8192, 4096, kw };
	sge[3] = (struct qrnic_sge){ 0x20000, 1000, kr };
	CHECK_EQ(qrnic_sgl_check(d, pdn, sge, 4, 0, &total), QRNIC_VERR_LKEY);	/* zero-length SGE key checked */
	sge[1].lkey = kw;
	CHECK_EQ(qrnic_sgl_check(d, pdn, sge, 4, 0, &total), QRNIC_VERR_NONE);
	CHECK_EQ(total, 200 + 4096 + 1000);
	CHECK_EQ(qrnic_sgl_check(d, pdn, sge, 4, QRNIC_ACCESS_LOCAL_WRITE, &total), QRNIC_VERR_ACCESS);
	CHECK_EQ(qrnic_sgl_check(d, pdn, sge, 3, QRNIC_ACCESS_LOCAL_WRITE, &total), QRNIC_VERR_NONE);
	CHECK_EQ(qrnic_sgl_check(d, pdn + 1, sge, 3, 0, &total), QRNIC_VERR_PD);

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 13 + 1);
	/* write 4296 bytes into SGEs 0..2 */
	CHECK_EQ(qrnic_sgl_write(d, pdn, sge, 3, 0, in, 4296), QRNIC_VERR_NONE);
	CHECK_EQ(memcmp(gptr(b1 + 4000), in, 200), 0);
	CHECK_EQ(memcmp(gptr(b1 + 8192), in + 200, 4096), 0);
	/* read back from an offset in the middle, crossing SGEs */
	CHECK_EQ(qrnic_sgl_read(d, pdn, sge, 3, 150, out, 100), QRNIC_VERR_NONE);
	CHECK_EQ(memcmp(out, in + 150, 100), 0);
	/* writes into the read-only MR fail */
	CHECK_EQ(qrnic_sgl_write(d, pdn, sge, 4, 4296, in, 10), QRNIC_VERR_ACCESS);
	CHECK_EQ(qrnic_sgl_read(d, pdn, sge, 4, 4296, out, 1000), QRNIC_VERR_NONE);
	/* past the end */
	CHECK_EQ(qrnic_sgl_read(d, pdn, sge, 4, 4296, out, 1001), QRNIC_VERR_LENGTH);
	CHECK_EQ(qrnic_sgl_read(d, pdn, sge, 4, 5297, out, 0), QRNIC_VERR_LENGTH);
	CHECK_EQ(qrnic_sgl_read(d, pdn, sge, 0, 0, out, 0), QRNIC_VERR_NONE);
	/* an SGE outside its MR */
	sge[0].length = 400;	/* 0x10000+4000+400 still inside, fine */
	CHECK_EQ(qrnic_sgl_check(d, pdn, sge, 1, 0, &total), QRNIC_VERR_NONE);
	sge[0].addr = 0x10000 + 3 * 4096 - 10;
	CHECK_EQ(qrnic_sgl_check(d, pdn, sge, 1, 0, &total), QRNIC_VERR_BOUNDS);
	CHECK_EQ(qrnic_sgl_read(d, pdn, sge, 1, 0, out, 20), QRNIC_VERR_BOUNDS);
	/* sum overflow 2^31 */
	{
		struct qrnic_sge big[3];
		struct qrnic_aq_cmd pc = mr_cmd(pdn, 0, QRNIC_MR_F_PHYS, 12, 0, 0, 1ull << 32, 0, 0);
		uint32_t kp;

		CHECK_EQ(reg_mr(d, &pc, &kp), QRNIC_AQ_OK);
		big[0] = (struct qrnic_sge){ 0, 0x80000000u, kp };
		big[1] = (struct qrnic_sge){ 0, 0, kp };
		big[2] = (struct qrnic_sge){ 0, 1, kp };
		CHECK_EQ(qrnic_sgl_check(d, pdn, big, 2, 0, &total), QRNIC_VERR_NONE);
		CHECK_EQ(total, 0x80000000u);
		CHECK_EQ(qrnic_sgl_check(d, pdn, big, 3, 0, &total), QRNIC_VERR_LENGTH);
		big[0].length = 0xffffffffu;
		big[1].length = 0xffffffffu;
		CHECK_EQ(qrnic_sgl_check(d, pdn, big, 2, 0, &total), QRNIC_VERR_LENGTH);
		/* DMA failure surfaces as VERR_DMA */
		CHECK_EQ(qrnic_mr_read(d, kp, pdn, 0x1000, out, 8, 0), QRNIC_VERR_DMA);
		CHECK_EQ(qrnic_mr_write(d, kp, pdn, 0x1000, out, 8, 0), QRNIC_VERR_DMA);
	}
	destroy_all(d);
	qrnic_dev_free(d);
}

/* Objects, refcounts, ownership. */
/* A page list (ABI 1.8) of n fresh pages, in guest memory; its address. */
static uint64_t page_list(uint32_t n)
{
	uint64_t lst = galloc(8ull * n, 8);

	for (uint32_t i = 0; i < n; i++) {
		uint64_t pg = galloc(4096, 4096);

		memcpy(gptr(lst + 8ull * i), &pg, 8);
	}
	return lst;
}

/* Page-listed CQ, QP and SRQ rings through every way they end: destroy,
 * resize (the old list freed), a failed create after a good list was
 * fetched (SQ good, RQ bad), a device reset and qrnic_dev_free with
 * listed objects alive (ASan/LSan: nothing leaks, nothing is used after
 * free), and the lists the device keeps. */
static void test_ring_pagelists(void)
{
	struct qrnic_dev *d = dev_new();
	struct qrnic_aq_cmd c;
	uint32_t eq, cq, pd, qp, srq, cq2;
	uint64_t bad;

	eq = create_eq(d, false);
	pd = create_pd(d, 0);
	c = cq_cmd(0, eq);
	c.u.create_cq.log_depth = 9;			/* 16 KiB: 4 pages */
	c.u.create_cq.flags = QRNIC_CQ_F_PAGELIST;
	c.u.create_cq.ring_addr = page_list(4);
	cq = OK_HANDLE(d, &c);
	CHECK(d->cq[cq].ring_pl != NULL);
	CHECK_EQ(d->cq[cq].flags, 0);			/* PAGELIST is not kept */
	CHECK_EQ(d->cq[cq].ring_pl[3] & 0xfff, 0);
	cq2 = OK_HANDLE(d, &c);				/* the same list again */
	c = mk(QRNIC_CMD_RESIZE_CQ);			/* to a listed ring of 8 pages */
	c.u.resize_cq.cqn = cq2;
	c.u.resize_cq.log_depth = 10;
	c.u.resize_cq.flags = QRNIC_CQ_F_PAGELIST;
	c.u.resize_cq.ring_addr = page_list(8);
	CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
	c.u.resize_cq.log_depth = 6;			/* to a contiguous one */
	c.u.resize_cq.flags = 0;
	c.u.resize_cq.ring_addr = galloc(32 << 6, 4096);
	CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
	CHECK(d->cq[cq2].ring_pl == NULL);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_CQ, cq2), QRNIC_AQ_OK);

	/* QP: SQ 16 x 128 = 2 KiB stays contiguous; give it 8 x 512 = 4 KiB */
	c = qp_cmd(0, QRNIC_QPT_RC, pd, cq, cq);
	c.u.create_qp.sq_log_depth = 3;
	c.u.create_qp.sq_wqe_shift = 9;
	c.u.create_qp.rq_log_depth = 6;			/* 64 x 64 = 4 KiB */
	c.u.create_qp.flags = QRNIC_QP_F_SQ_PAGELIST | QRNIC_QP_F_RQ_PAGELIST;
	c.u.create_qp.sq_addr = page_list(1);
	bad = page_list(1);
	memset(gptr(bad), 0, 8);			/* RQ list: entry 0 zero */
	c.u.create_qp.rq_addr = bad;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);	/* the SQ's list is freed */
	c.u.create_qp.rq_addr = page_list(1);
	qp = OK_HANDLE(d, &c);
	CHECK(d->qp[qp].sq_pl != NULL && d->qp[qp].rq_pl != NULL);
	CHECK_EQ(d->qp[qp].flags, 0);

	c = mk(QRNIC_CMD_CREATE_SRQ);
	c.u.create_srq.pdn = pd;
	c.u.create_srq.log_depth = 4;
	c.u.create_srq.wqe_shift = 9;			/* 8 KiB: 2 pages */
	c.u.create_srq.flags = QRNIC_SRQ_F_PAGELIST;
	c.u.create_srq.ring_addr = page_list(2);
	srq = OK_HANDLE(d, &c);
	CHECK(d->srq[srq].ring_pl != NULL);
	qrnic_dev_reset(d);				/* frees every list */
	CHECK(d->cq[cq].ring_pl == NULL && d->srq[srq].ring_pl == NULL &&
	      d->qp[qp].sq_pl == NULL && d->qp[qp].rq_pl == NULL);
	qrnic_dev_free(d);

	/* and a device freed with listed objects alive */
	gmem_reset();
	d = dev_new();
	eq = create_eq(d, false);
	c = cq_cmd(0, eq);
	c.u.create_cq.log_depth = 8;
	c.u.create_cq.flags = QRNIC_CQ_F_PAGELIST;
	c.u.create_cq.ring_addr = page_list(2);
	OK_HANDLE(d, &c);
	qrnic_dev_free(d);
	gmem_reset();
}

static void test_objects(void)
{
	struct qrnic_dev *d = dev_new();
	struct qrnic_aq_cmd c;
	struct qrnic_aq_cqe e;
	uint32_t eq, eq2, cq, cq2, pd, qp, u1, u2, upd, ucq, uqp, ah, i;

	/* EQ */
	eq = create_eq(d, true);
	c = mk(QRNIC_CMD_CREATE_EQ);
	c.u.create_eq.log_depth = 4;
	c.u.create_eq.flags = QRNIC_EQ_F_ASYNC;
	c.u.create_eq.ring_addr = galloc(4096, 4096);
	CHECK_EQ(st(d, &c), QRNIC_AQ_BUSY);	/* second async EQ */
	c.u.create_eq.flags = 2;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_eq.flags = 0;
	c.u.create_eq.vector = (uint16_t)d->cfg.num_vectors;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_eq.vector = 0;
	c.u.create_eq.log_depth = 0;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_eq.log_depth = QRNIC_MAX_QUEUE_LOG + 1;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_eq.log_depth = 4;
	c.u.create_eq.ring_addr += 8;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_eq.ring_addr = 0;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_eq.ring_addr = galloc(4096, 4096);
	eq2 = OK_HANDLE(d, &c);

	/* CQ */
	c = cq_cmd(0, eq);
	c.u.create_cq.eqn = 77;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_HANDLE);
	c.u.create_cq.eqn = eq;
	c.u.create_cq.uctx = 3;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_HANDLE);
	c.u.create_cq.uctx = 0;
	c.u.create_cq.log_depth = 0;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_cq.log_depth = QRNIC_MAX_QUEUE_LOG + 1;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	for (i = 1; i <= QRNIC_MAX_QUEUE_LOG; i++) {
		if ((1u << i) > d->cfg.max_cqe) {
			c.u.create_cq.log_depth = (uint8_t)i;
			CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
			break;
		}
	}
	c.u.create_cq.log_depth = 6;
	c.u.create_cq.rsvd[5] = 1;
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_BAD_PARAM);
	CHECK_EQ(e.detail, offsetof(struct qrnic_aq_cmd, u.create_cq.rsvd) + 5);
	c.u.create_cq.rsvd[5] = 0;
	c.u.create_cq.flags = 0x4;	/* ABI 1.8: only TIMESTAMP and PAGELIST are defined */
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_BAD_PARAM);
	CHECK_EQ(e.detail, offsetof(struct qrnic_aq_cmd, u.create_cq.flags));
	c.u.create_cq.flags = QRNIC_CQ_F_PAGELIST;	/* a 2 KiB ring stays contiguous */
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_BAD_PARAM);
	CHECK_EQ(e.detail, offsetof(struct qrnic_aq_cmd, u.create_cq.ring_addr));
	c.u.create_cq.flags = 0;
	c.u.create_cq.dbrec_addr |= 2;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_cq.dbrec_addr = 0;
	c.u.create_cq.ring_addr |= 0x800;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_cq.ring_addr &= ~0x800ull;
	cq = OK_HANDLE(d, &c);
	cq2 = create_cq(d, 0, eq2);
	CHECK_EQ(d->eq[eq].refcnt, 1);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_EQ, eq), QRNIC_AQ_BUSY);

	/* QP */
	pd = create_pd(d, 0);
	qp = create_qp(d, 0, QRNIC_QPT_RC, pd, cq, cq2);
	CHECK(qp >= 2);
	CHECK_EQ(d->qp[qp].attr.qp_state, QRNIC_QPS_RESET);
	CHECK_EQ(d->qp[qp].attr.port_num, 1);
	CHECK_EQ(d->pd[pd].refcnt, 1);
	CHECK_EQ(d->cq[cq].refcnt, 1);
	CHECK_EQ(d->cq[cq2].refcnt, 1);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_CQ, cq), QRNIC_AQ_BUSY);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_PD, pd), QRNIC_AQ_BUSY);
	/* GSI: qpn 1, kernel only, only one */
	c = qp_cmd(0, QRNIC_QPT_GSI, pd, cq, cq);
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_OK);
	CHECK_EQ(e.result[0], 1);
	c = qp_cmd(0, QRNIC_QPT_GSI, pd, cq, cq);
	CHECK_EQ(st(d, &c), QRNIC_AQ_BUSY);
	CHECK_EQ(d->cq[cq].refcnt, 3);
	/* bad QP parameters */
	c = qp_cmd(0, 8, pd, cq, cq);	/* RAW_PACKET: not supported */
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c = qp_cmd(0, QRNIC_QPT_RC, pd, cq, cq);
	c.u.create_qp.sq_log_depth = 0;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c = qp_cmd(0, QRNIC_QPT_RC, pd, cq, cq);
	c.u.create_qp.sq_wqe_shift = QRNIC_MAX_SEND_WQE_SHIFT + 1;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c = qp_cmd(0, QRNIC_QPT_RC, pd, cq, cq);
	c.u.create_qp.rq_wqe_shift = 4;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c = qp_cmd(0, QRNIC_QPT_RC, pd, cq, cq);
	c.u.create_qp.sq_addr += 64;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c = qp_cmd(0, QRNIC_QPT_RC, pd, cq, cq);
	c.u.create_qp.rq_log_depth = 0;	/* no RQ: rq_addr must be 0, shift unused */
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_BAD_PARAM);
	CHECK_EQ(e.detail, offsetof(struct qrnic_aq_cmd, u.create_qp.rq_addr));
	c.u.create_qp.rq_addr = 0;
	c.u.create_qp.rq_wqe_shift = 77;
	uqp = OK_HANDLE(d, &c);
	CHECK_EQ(d->qp[uqp].rq_addr, 0);
	CHECK_EQ(d->qp[uqp].rq_wqe_shift, 0);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_QP, uqp), QRNIC_AQ_OK);
	c = qp_cmd(0, QRNIC_QPT_RC, pd, cq, cq);
	c.u.create_qp.rq_addr = 0;	/* an RQ needs a ring */
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c = qp_cmd(0, QRNIC_QPT_RC, pd, cq, cq);
	c.u.create_qp.sq_addr = 0;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c = qp_cmd(0, QRNIC_QPT_UD, pd, cq, cq);
	c.u.create_qp.flags = 2;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_qp.flags = QRNIC_QP_F_SQ_SIG_ALL;
	c.u.create_qp.rsvd0[2] = 1;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_qp.rsvd0[2] = 0;
	c.u.create_qp.sq_log_depth = QRNIC_MAX_QUEUE_LOG + 1;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);

	/* user contexts and ownership */
	c = mk(QRNIC_CMD_ALLOC_UCTX);
	u1 = OK_HANDLE(d, &c);
	u2 = OK_HANDLE(d, &c);
	CHECK(u1 >= 1 && u2 >= 1 && u1 != u2);
	upd = create_pd(d, u1);
	ucq = create_cq(d, u1, eq);
	c = qp_cmd(u1, QRNIC_QPT_RC, pd, ucq, ucq);	/* kernel PD */
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_HANDLE);
	c = qp_cmd(u1, QRNIC_QPT_RC, upd, cq, ucq);	/* kernel CQ */
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_HANDLE);
	c = qp_cmd(u2, QRNIC_QPT_RC, upd, ucq, ucq);	/* another context's */
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_HANDLE);
	c = qp_cmd(0, QRNIC_QPT_RC, upd, ucq, ucq);	/* kernel using user objects */
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_HANDLE);
	c = qp_cmd(u1, QRNIC_QPT_GSI, upd, ucq, ucq);
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	uqp = create_qp(d, u1, QRNIC_QPT_UD, upd, ucq, ucq);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEALLOC_UCTX, u1), QRNIC_AQ_BUSY);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEALLOC_UCTX, 0), QRNIC_AQ_BAD_HANDLE);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEALLOC_UCTX, d->cfg.max_uctx), QRNIC_AQ_BAD_HANDLE);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEALLOC_UCTX, u2), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEALLOC_UCTX, u2), QRNIC_AQ_BAD_HANDLE);
	c = mk(QRNIC_CMD_CREATE_PD);
	c.u.create_pd.uctx = u2;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_HANDLE);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_QP, uqp), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEALLOC_UCTX, u1), QRNIC_AQ_BUSY);	/* PD, CQ */
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_CQ, ucq), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEALLOC_UCTX, u1), QRNIC_AQ_BUSY);	/* PD */
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_PD, upd), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DEALLOC_UCTX, u1), QRNIC_AQ_OK);
	/* uctx exhaustion */
	c = mk(QRNIC_CMD_ALLOC_UCTX);
	for (i = 1; i < d->cfg.max_uctx; i++)
		CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
	CHECK_EQ(st(d, &c), QRNIC_AQ_NO_RESOURCES);
	c.u.raw[0] = 1;	/* ALLOC_UCTX has no payload: ignored */
	CHECK_EQ(st(d, &c), QRNIC_AQ_NO_RESOURCES);

	/* AH */
	set_gid(d, 0, true);
	set_gid(d, 1, false);
	c = mk(QRNIC_CMD_CREATE_AH);
	c.u.create_ah.pdn = pd;
	av_v4(&c.u.create_ah.av, 0);
	ah = OK_HANDLE(d, &c);
	CHECK_EQ(d->pd[pd].refcnt, 3);
	c.u.create_ah.av.sgid_index = 1;	/* IPv6 GID with an IPv4 AV */
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_ah.av.sgid_index = 2;	/* invalid GID */
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_ah.av.sgid_index = (uint8_t)d->cfg.gid_tbl_len;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_ah.av.sgid_index = 0;
	c.u.create_ah.av.flow_label = 1u << 20;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_ah.av.flow_label = 0;
	c.u.create_ah.av.dgid[10] = 0;	/* not v4-mapped */
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_PARAM);
	c.u.create_ah.av.dgid[10] = 0xff;
	c.u.create_ah.av.rsvd = 1;
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_BAD_PARAM);
	CHECK_EQ(e.detail, offsetof(struct qrnic_aq_cmd, u.create_ah.av.rsvd));
	c.u.create_ah.av.rsvd = 0;
	c.u.create_ah.pdn = 0;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_HANDLE);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_AH, ah), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_AH, ah), QRNIC_AQ_BAD_HANDLE);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_AH, 0), QRNIC_AQ_BAD_HANDLE);

	/* teardown order */
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_QP, qp), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_QP, qp), QRNIC_AQ_BAD_HANDLE);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_QP, 1), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_QP, 0), QRNIC_AQ_BAD_HANDLE);
	CHECK_EQ(d->cq[cq].refcnt, 0);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_CQ, cq), QRNIC_AQ_OK);
	CHECK_EQ(destroy(d, QRNIC_CMD_DESTROY_EQ, eq), QRNIC_AQ_OK);
	check_invariants(d);
	destroy_all(d);

	/* table exhaustion */
	c = mk(QRNIC_CMD_CREATE_PD);
	for (i = 1; i < d->cfg.max_pd; i++)
		CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
	CHECK_EQ(st(d, &c), QRNIC_AQ_NO_RESOURCES);
	destroy_all(d);
	qrnic_dev_free(d);
}

/* ---- The QP state machine ------------------------------------------------ */
static bool ib_allowed(int type, int cur, int next)
{
	static const char *const ok[] = {
		"RESET>RESET", "RESET>INIT",
		"INIT>RESET", "INIT>ERR", "INIT>INIT", "INIT>RTR",
		"RTR>RESET", "RTR>ERR", "RTR>RTS",
		"RTS>RESET", "RTS>ERR", "RTS>RTS", "RTS>SQD",
		"SQD>RESET", "SQD>ERR", "SQD>RTS", "SQD>SQD",
		"SQE>RESET", "SQE>ERR", "SQE>RTS",
		"ERR>RESET", "ERR>ERR",
	};
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };
	char key[16];
	size_t i;

	if (cur == QRNIC_QPS_SQE && next == QRNIC_QPS_RTS && type == QRNIC_QPT_RC)
		return false;
	snprintf(key, sizeof(key), "%s>%s", names[cur], names[next]);
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(ok[i], key))
			return true;
	return false;
}

static uint32_t ib_required(int type, int cur, int next)
{
	const bool rc = type == QRNIC_QPT_RC;

	if (cur == QRNIC_QPS_RESET && next == QRNIC_QPS_INIT) {
		if (rc)
			return QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT | QRNIC_QP_ATTR_ACCESS_FLAGS;
		if (type == QRNIC_QPT_UD)
			return QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT | QRNIC_QP_ATTR_QKEY;
		return QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_QKEY;
	}
	if (cur == QRNIC_QPS_INIT && next == QRNIC_QPS_RTR && rc)
		return QRNIC_QP_ATTR_AV | QRNIC_QP_ATTR_PATH_MTU | QRNIC_QP_ATTR_DEST_QPN |
		       QRNIC_QP_ATTR_RQ_PSN | QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC |
		       QRNIC_QP_ATTR_MIN_RNR_TIMER;
	if (cur == QRNIC_QPS_RTR && next == QRNIC_QPS_RTS)
		return rc ? QRNIC_QP_ATTR_SQ_PSN | QRNIC_QP_ATTR_TIMEOUT | QRNIC_QP_ATTR_RETRY_CNT |
			    QRNIC_QP_ATTR_RNR_RETRY | QRNIC_QP_ATTR_MAX_QP_RD_ATOMIC
			  : QRNIC_QP_ATTR_SQ_PSN;
	return 0;
}

static void test_qp_table(void)
{
	static const uint8_t types[] = { QRNIC_QPT_RC, QRNIC_QPT_UD, QRNIC_QPT_GSI };
	const uint32_t S = QRNIC_QP_ATTR_STATE;
	size_t t;
	int cur, next;

	for (t = 0; t < sizeof(types); t++) {
		for (cur = 0; cur <= QRNIC_QPS_ERR; cur++) {
			for (next = 0; next <= QRNIC_QPS_ERR; next++) {
				uint32_t req = ib_required(types[t], cur, next), bit;

				if (!ib_allowed(types[t], cur, next)) {
					CHECK_EQ(qrnic_fw_qp_transition_ok(types[t], cur, next, S | req),
						 QRNIC_AQ_BAD_STATE);
					continue;
				}
				CHECK_EQ(qrnic_fw_qp_transition_ok(types[t], cur, next, S | req),
					 QRNIC_AQ_OK);
				for (bit = 1; bit; bit <<= 1)
					if (req & bit)
						CHECK_EQ(qrnic_fw_qp_transition_ok(types[t], cur, next,
										   S | (req & ~bit)),
							 QRNIC_AQ_BAD_ATTR_MASK);
				/* never allowed: CAP/ALT_PATH/PATH_MIG, undefined bits */
				CHECK_EQ(qrnic_fw_qp_transition_ok(types[t], cur, next,
								   S | req | QRNIC_QP_ATTR_CAP),
					 QRNIC_AQ_NOT_SUPPORTED);
				CHECK_EQ(qrnic_fw_qp_transition_ok(types[t], cur, next,
								   S | req | QRNIC_QP_ATTR_ALT_PATH),
					 QRNIC_AQ_NOT_SUPPORTED);
				CHECK_EQ(qrnic_fw_qp_transition_ok(types[t], cur, next,
								   S | req | (1u << 25)),
					 QRNIC_AQ_BAD_ATTR_MASK);
				/* CUR_STATE only leaving RTR/RTS/SQD/SQE, and not to RESET/ERR */
				if (next == QRNIC_QPS_RESET || next == QRNIC_QPS_ERR ||
				    cur < QRNIC_QPS_RTR)
					CHECK_EQ(qrnic_fw_qp_transition_ok(types[t], cur, next,
									   S | req | QRNIC_QP_ATTR_CUR_STATE),
						 QRNIC_AQ_BAD_ATTR_MASK);
				/* to RESET/ERR nothing but the state */
				if (next == QRNIC_QPS_RESET || next == QRNIC_QPS_ERR)
					for (bit = 2; bit < (1u << 21); bit <<= 1)
						CHECK_EQ(qrnic_fw_qp_transition_ok(types[t], cur, next,
										   S | bit),
							 (bit & (QRNIC_QP_ATTR_CAP | QRNIC_QP_ATTR_ALT_PATH |
								 QRNIC_QP_ATTR_PATH_MIG_STATE)) ?
							 QRNIC_AQ_NOT_SUPPORTED : QRNIC_AQ_BAD_ATTR_MASK);
			}
		}
	}
	/* some optional attributes */
#define T(type, c, n, m) qrnic_fw_qp_transition_ok(QRNIC_QPT_##type, QRNIC_QPS_##c, QRNIC_QPS_##n, m)
	CHECK_EQ(T(RC, RTS, RTS, QRNIC_QP_ATTR_MIN_RNR_TIMER), QRNIC_AQ_OK);
	CHECK_EQ(T(RC, RTS, RTS, QRNIC_QP_ATTR_ACCESS_FLAGS | QRNIC_QP_ATTR_CUR_STATE), QRNIC_AQ_OK);
	CHECK_EQ(T(RC, RTS, RTS, QRNIC_QP_ATTR_TIMEOUT), QRNIC_AQ_BAD_ATTR_MASK);
	CHECK_EQ(T(UD, RTS, RTS, QRNIC_QP_ATTR_QKEY), QRNIC_AQ_OK);
	/* XRC INI (issue 16): the responder's attributes where RC has them,
	 * kept and reported though the INI QP has no responder */
	CHECK_EQ(T(XRC_INI, RESET, INIT, QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_PKEY_INDEX |
		   QRNIC_QP_ATTR_PORT), QRNIC_AQ_OK);
	CHECK_EQ(T(XRC_INI, RESET, INIT, QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_PKEY_INDEX |
		   QRNIC_QP_ATTR_PORT | QRNIC_QP_ATTR_ACCESS_FLAGS), QRNIC_AQ_OK);
	CHECK_EQ(T(XRC_INI, INIT, INIT, QRNIC_QP_ATTR_ACCESS_FLAGS), QRNIC_AQ_OK);
	CHECK_EQ(T(XRC_INI, INIT, RTR, QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_AV |
		   QRNIC_QP_ATTR_PATH_MTU | QRNIC_QP_ATTR_DEST_QPN | QRNIC_QP_ATTR_RQ_PSN |
		   QRNIC_QP_ATTR_ACCESS_FLAGS | QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC |
		   QRNIC_QP_ATTR_MIN_RNR_TIMER), QRNIC_AQ_OK);
	CHECK_EQ(T(XRC_INI, RTR, RTS, QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_SQ_PSN |
		   QRNIC_QP_ATTR_TIMEOUT | QRNIC_QP_ATTR_RETRY_CNT | QRNIC_QP_ATTR_RNR_RETRY |
		   QRNIC_QP_ATTR_MAX_QP_RD_ATOMIC | QRNIC_QP_ATTR_ACCESS_FLAGS |
		   QRNIC_QP_ATTR_MIN_RNR_TIMER), QRNIC_AQ_OK);
	CHECK_EQ(T(XRC_INI, RTR, RTS, QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_SQ_PSN |
		   QRNIC_QP_ATTR_TIMEOUT | QRNIC_QP_ATTR_RETRY_CNT | QRNIC_QP_ATTR_RNR_RETRY |
		   QRNIC_QP_ATTR_MAX_QP_RD_ATOMIC | QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC),
		 QRNIC_AQ_BAD_ATTR_MASK);		/* as RC: not at RTR -> RTS */
	CHECK_EQ(T(XRC_INI, RTS, RTS, QRNIC_QP_ATTR_ACCESS_FLAGS | QRNIC_QP_ATTR_MIN_RNR_TIMER),
		 QRNIC_AQ_OK);
	CHECK_EQ(T(XRC_INI, RTS, RTS, QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC), QRNIC_AQ_BAD_ATTR_MASK);
	CHECK_EQ(T(XRC_INI, SQD, RTS, QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_ACCESS_FLAGS |
		   QRNIC_QP_ATTR_MIN_RNR_TIMER), QRNIC_AQ_OK);
	CHECK_EQ(T(XRC_INI, SQD, SQD, QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC |
		   QRNIC_QP_ATTR_ACCESS_FLAGS | QRNIC_QP_ATTR_MIN_RNR_TIMER), QRNIC_AQ_OK);
	CHECK_EQ(T(XRC_INI, RTS, RTS, QRNIC_QP_ATTR_QKEY), QRNIC_AQ_BAD_ATTR_MASK);
	CHECK_EQ(T(UD, RTS, RTS, QRNIC_QP_ATTR_MIN_RNR_TIMER), QRNIC_AQ_BAD_ATTR_MASK);
	CHECK_EQ(T(RC, INIT, RTR, ib_required(QRNIC_QPT_RC, 1, 2) | QRNIC_QP_ATTR_PKEY_INDEX |
		   QRNIC_QP_ATTR_ACCESS_FLAGS | S), QRNIC_AQ_OK);
	CHECK_EQ(T(RC, INIT, RTR, ib_required(QRNIC_QPT_RC, 1, 2) | QRNIC_QP_ATTR_QKEY | S),
		 QRNIC_AQ_BAD_ATTR_MASK);
	CHECK_EQ(T(UD, INIT, RTR, QRNIC_QP_ATTR_QKEY | S), QRNIC_AQ_OK);
	CHECK_EQ(T(UD, INIT, RTR, QRNIC_QP_ATTR_AV | S), QRNIC_AQ_BAD_ATTR_MASK);
	CHECK_EQ(T(RC, RTS, SQD, QRNIC_QP_ATTR_EN_SQD_ASYNC | S), QRNIC_AQ_OK);
	CHECK_EQ(T(RC, SQD, SQD, QRNIC_QP_ATTR_TIMEOUT | QRNIC_QP_ATTR_AV | S), QRNIC_AQ_OK);
	CHECK_EQ(T(UD, SQD, SQD, QRNIC_QP_ATTR_QKEY | S), QRNIC_AQ_OK);
	CHECK_EQ(T(UD, SQE, RTS, QRNIC_QP_ATTR_QKEY | QRNIC_QP_ATTR_CUR_STATE | S), QRNIC_AQ_OK);
	CHECK_EQ(T(RC, RESET, INIT, ib_required(QRNIC_QPT_RC, 0, 1) | QRNIC_QP_ATTR_QKEY | S),
		 QRNIC_AQ_BAD_ATTR_MASK);
	CHECK_EQ(T(GSI, RESET, INIT, ib_required(QRNIC_QPT_GSI, 0, 1) | QRNIC_QP_ATTR_PORT | S),
		 QRNIC_AQ_OK);
	CHECK_EQ(T(RC, RESET, INIT, ib_required(QRNIC_QPT_RC, 0, 1)), QRNIC_AQ_OK);
	CHECK_EQ(T(RC, RTR, RTR, 0), QRNIC_AQ_BAD_STATE);	/* state-less in RTR */
	CHECK_EQ(T(RC, RTS, RTS, 0), QRNIC_AQ_OK);
	CHECK_EQ(qrnic_fw_qp_transition_ok(0x77, 0, 1, 0), QRNIC_AQ_BAD_STATE);
	CHECK_EQ(qrnic_fw_qp_transition_ok(QRNIC_QPT_RC, 7, 0, 0), QRNIC_AQ_BAD_STATE);
#undef T
}

static struct qrnic_aq_cmd modify_cmd(uint32_t qpn, uint32_t mask, const struct qrnic_qp_attr *a)
{
	struct qrnic_aq_cmd c = mk(QRNIC_CMD_MODIFY_QP);

	c.u.modify_qp.qpn = qpn;
	if (a)
		c.u.modify_qp.attr = *a;
	c.u.modify_qp.attr.attr_mask = mask;
	return c;
}

static uint8_t modify(struct qrnic_dev *d, uint32_t qpn, uint32_t mask, const struct qrnic_qp_attr *a)
{
	struct qrnic_aq_cmd c = modify_cmd(qpn, mask, a);

	return st(d, &c);
}

static struct qrnic_qp_attr query_qp(struct qrnic_dev *d, uint32_t qpn)
{
	struct qrnic_aq_cmd c = mk(QRNIC_CMD_QUERY_QP);
	struct qrnic_qp_attr a;
	uint64_t buf = galloc(sizeof(a), 8);

	c.u.query_qp.handle = qpn;
	c.u.query_qp.resp_addr = buf;
	c.u.query_qp.resp_len = sizeof(a);
	CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
	memcpy(&a, gptr(buf), sizeof(a));
	return a;
}

static void test_modify_qp(void)
{
	struct qrnic_dev *d = dev_new();
	uint32_t eq = create_eq(d, false), cq = create_cq(d, 0, eq), pd = create_pd(d, 0);
	uint32_t qp = create_qp(d, 0, QRNIC_QPT_RC, pd, cq, cq);
	uint32_t ud = create_qp(d, 0, QRNIC_QPT_UD, pd, cq, cq);
	struct qrnic_qp_attr a, q;
	struct qrnic_aq_cmd c;
	struct qrnic_aq_cqe e;
	const uint32_t S = QRNIC_QP_ATTR_STATE;
	const uint32_t RTR_REQ = QRNIC_QP_ATTR_AV | QRNIC_QP_ATTR_PATH_MTU | QRNIC_QP_ATTR_DEST_QPN |
				 QRNIC_QP_ATTR_RQ_PSN | QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC |
				 QRNIC_QP_ATTR_MIN_RNR_TIMER;
	const uint32_t RTS_REQ = QRNIC_QP_ATTR_SQ_PSN | QRNIC_QP_ATTR_TIMEOUT |
				 QRNIC_QP_ATTR_RETRY_CNT | QRNIC_QP_ATTR_RNR_RETRY |
				 QRNIC_QP_ATTR_MAX_QP_RD_ATOMIC;

	set_gid(d, 0, true);
	memset(&a, 0, sizeof(a));
	a.qp_state = QRNIC_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_READ;
	/* missing ACCESS_FLAGS */
	CHECK_EQ(modify(d, qp, S | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT, &a),
		 QRNIC_AQ_BAD_ATTR_MASK);
	a.port_num = 2;
	CHECK_EQ(modify(d, qp, S | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
			QRNIC_QP_ATTR_ACCESS_FLAGS, &a), QRNIC_AQ_BAD_PARAM);
	a.port_num = 1;
	a.pkey_index = 1;
	CHECK_EQ(modify(d, qp, S | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
			QRNIC_QP_ATTR_ACCESS_FLAGS, &a), QRNIC_AQ_BAD_PARAM);
	a.pkey_index = 0;
	a.qp_access_flags = 0x10;
	CHECK_EQ(modify(d, qp, S | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
			QRNIC_QP_ATTR_ACCESS_FLAGS, &a), QRNIC_AQ_BAD_PARAM);
	a.qp_access_flags = QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_READ;
	a.qp_state = 7;
	c = modify_cmd(qp, S | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
		       QRNIC_QP_ATTR_ACCESS_FLAGS, &a);
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_BAD_STATE);
	CHECK_EQ(e.detail, 20);
	a.qp_state = QRNIC_QPS_ERR;	/* RESET -> ERR is not a transition (Linux) */
	CHECK_EQ(modify(d, qp, S, &a), QRNIC_AQ_BAD_STATE);
	a.qp_state = QRNIC_QPS_RTR;	/* RESET -> RTR */
	CHECK_EQ(modify(d, qp, S | RTR_REQ, &a), QRNIC_AQ_BAD_STATE);
	CHECK_EQ(d->qp[qp].attr.qp_state, QRNIC_QPS_RESET);
	a.qp_state = QRNIC_QPS_INIT;
	CHECK_EQ(modify(d, qp, S | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
			QRNIC_QP_ATTR_ACCESS_FLAGS, &a), QRNIC_AQ_OK);
	CHECK_EQ(d->qp[qp].attr.qp_state, QRNIC_QPS_INIT);
	CHECK_EQ(d->qp[qp].attr.qp_access_flags, a.qp_access_flags);

	/* INIT -> RTR with every value checked */
	a.qp_state = QRNIC_QPS_RTR;
	av_v4(&a.av, 0);
	a.path_mtu = QRNIC_MTU_1024;
	a.dest_qpn = 0x123456;
	a.rq_psn = 0xabcdef;
	a.max_dest_rd_atomic = (uint8_t)(d->cfg.max_rd_atomic < 16 ? d->cfg.max_rd_atomic : 16);
	a.min_rnr_timer = 12;
#define BAD(field, val) do {							\
		struct qrnic_qp_attr b = a;					\
		b.field = val;							\
		c = modify_cmd(qp, S | RTR_REQ, &b);				\
		e = run(d, &c);							\
		CHECK_EQ(e.status, QRNIC_AQ_BAD_PARAM);				\
		CHECK_EQ(e.detail, offsetof(struct qrnic_aq_cmd, u.modify_qp.attr.field)); \
	} while (0)
	BAD(path_mtu, 0);
	BAD(path_mtu, 6);
	BAD(dest_qpn, 1u << 24);
	BAD(rq_psn, 1u << 24);
	BAD(max_dest_rd_atomic, (uint8_t)(d->cfg.max_rd_atomic + 1));
	BAD(min_rnr_timer, 32);
	BAD(av.net_type, 0);
	BAD(av.sgid_index, 5);
	BAD(rsvd, 1);
	BAD(sq_draining, 1);
#undef BAD
	/* fields outside the mask are ignored */
	{
		struct qrnic_qp_attr b = a;

		b.timeout = 200;
		b.retry_cnt = 99;
		CHECK_EQ(modify(d, qp, S | RTR_REQ, &b), QRNIC_AQ_OK);
	}
	CHECK_EQ(d->qp[qp].attr.qp_state, QRNIC_QPS_RTR);
	CHECK_EQ(d->qp[qp].attr.dest_qpn, 0x123456);
	CHECK_EQ(d->qp[qp].attr.timeout, 0);
	q = query_qp(d, qp);
	CHECK_EQ(q.qp_state, QRNIC_QPS_RTR);
	CHECK_EQ(q.rq_psn, 0xabcdef);
	CHECK_EQ(q.path_mtu, QRNIC_MTU_1024);
	CHECK_EQ(q.attr_mask, 0);

	/* RTR -> RTS */
	a.qp_state = QRNIC_QPS_RTS;
	a.sq_psn = 0x100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	c = modify_cmd(qp, S | RTS_REQ | QRNIC_QP_ATTR_DEST_QPN, &a);
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_BAD_ATTR_MASK);
	CHECK_EQ(e.detail, 16);
	CHECK_EQ(modify(d, qp, S | RTS_REQ | QRNIC_QP_ATTR_CAP, &a), QRNIC_AQ_NOT_SUPPORTED);
	a.retry_cnt = 8;
	CHECK_EQ(modify(d, qp, S | RTS_REQ, &a), QRNIC_AQ_BAD_PARAM);
	a.retry_cnt = 7;
	a.cur_qp_state = QRNIC_QPS_INIT;	/* wrong current state */
	CHECK_EQ(modify(d, qp, S | RTS_REQ | QRNIC_QP_ATTR_CUR_STATE, &a), QRNIC_AQ_BAD_STATE);
	a.cur_qp_state = QRNIC_QPS_RTR;
	CHECK_EQ(modify(d, qp, S | RTS_REQ | QRNIC_QP_ATTR_CUR_STATE, &a), QRNIC_AQ_OK);
	q = query_qp(d, qp);
	CHECK_EQ(q.qp_state, QRNIC_QPS_RTS);
	CHECK_EQ(q.sq_psn, 0x100);
	CHECK_EQ(q.timeout, 14);

	/* state-less modifies go through the table */
	a.min_rnr_timer = 3;
	CHECK_EQ(modify(d, qp, QRNIC_QP_ATTR_MIN_RNR_TIMER, &a), QRNIC_AQ_OK);
	CHECK_EQ(d->qp[qp].attr.min_rnr_timer, 3);
	CHECK_EQ(modify(d, qp, QRNIC_QP_ATTR_TIMEOUT, &a), QRNIC_AQ_BAD_ATTR_MASK);
	CHECK_EQ(modify(d, qp, QRNIC_QP_ATTR_ALT_PATH, &a), QRNIC_AQ_NOT_SUPPORTED);
	/* RTS -> SQD -> SQD (timeout) -> RTS */
	a.qp_state = QRNIC_QPS_SQD;
	a.en_sqd_async_notify = 1;
	CHECK_EQ(modify(d, qp, S | QRNIC_QP_ATTR_EN_SQD_ASYNC, &a), QRNIC_AQ_OK);
	CHECK_EQ(d->qp[qp].attr.qp_state, QRNIC_QPS_SQD);
	a.timeout = 20;
	CHECK_EQ(modify(d, qp, QRNIC_QP_ATTR_TIMEOUT, &a), QRNIC_AQ_OK);
	CHECK_EQ(d->qp[qp].attr.timeout, 20);
	a.timeout = 32;
	CHECK_EQ(modify(d, qp, QRNIC_QP_ATTR_TIMEOUT, &a), QRNIC_AQ_BAD_PARAM);
	a.qp_state = QRNIC_QPS_RTS;
	CHECK_EQ(modify(d, qp, S, &a), QRNIC_AQ_OK);
	/* -> ERR -> RESET: attributes back to defaults */
	a.qp_state = QRNIC_QPS_ERR;
	a.cur_qp_state = QRNIC_QPS_RTS;	/* right, but not allowed towards ERR */
	CHECK_EQ(modify(d, qp, S | QRNIC_QP_ATTR_CUR_STATE, &a), QRNIC_AQ_BAD_ATTR_MASK);
	CHECK_EQ(modify(d, qp, S, &a), QRNIC_AQ_OK);
	CHECK_EQ(d->qp[qp].attr.qp_state, QRNIC_QPS_ERR);
	a.qp_state = QRNIC_QPS_RTS;
	CHECK_EQ(modify(d, qp, S, &a), QRNIC_AQ_BAD_STATE);
	a.qp_state = QRNIC_QPS_RESET;
	CHECK_EQ(modify(d, qp, S, &a), QRNIC_AQ_OK);
	q = query_qp(d, qp);
	CHECK_EQ(q.qp_state, QRNIC_QPS_RESET);
	CHECK_EQ(q.dest_qpn, 0);
	CHECK_EQ(q.port_num, 1);

	/* UD: RESET -> INIT -> RTR -> RTS */
	memset(&a, 0, sizeof(a));
	a.qp_state = QRNIC_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x11111111;
	CHECK_EQ(modify(d, ud, S | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_QKEY, &a),
		 QRNIC_AQ_BAD_ATTR_MASK);
	CHECK_EQ(modify(d, ud, S | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_QKEY |
			QRNIC_QP_ATTR_PORT, &a), QRNIC_AQ_OK);
	a.qp_state = QRNIC_QPS_RTR;
	CHECK_EQ(modify(d, ud, S, &a), QRNIC_AQ_OK);
	a.qp_state = QRNIC_QPS_RTS;
	a.sq_psn = 0xffffff;
	CHECK_EQ(modify(d, ud, S | QRNIC_QP_ATTR_SQ_PSN, &a), QRNIC_AQ_OK);
	q = query_qp(d, ud);
	CHECK_EQ(q.qp_state, QRNIC_QPS_RTS);
	CHECK_EQ(q.qkey, 0x11111111);
	CHECK_EQ(q.sq_psn, 0xffffff);

	/* QUERY_QP / MODIFY_QP on bad handles */
	c = modify_cmd(0, S, &a);
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_HANDLE);
	a.qp_state = QRNIC_QPS_RESET;	/* qp is in RESET: RESET -> RESET */
	c = modify_cmd(qp, S, &a);
	CHECK_EQ(st(d, &c), QRNIC_AQ_OK);
	c.u.modify_qp.rsvd = 1;
	e = run(d, &c);
	CHECK_EQ(e.status, QRNIC_AQ_BAD_PARAM);
	CHECK_EQ(e.detail, 12);
	c = mk(QRNIC_CMD_QUERY_QP);
	c.u.query_qp.handle = 200;
	c.u.query_qp.resp_addr = galloc(128, 8);
	c.u.query_qp.resp_len = 72;
	CHECK_EQ(st(d, &c), QRNIC_AQ_BAD_HANDLE);
	c.u.query_qp.handle = qp;
	c.u.query_qp.resp_addr = 0;
	CHECK_EQ(st(d, &c), QRNIC_AQ_DMA_ERROR);
	destroy_all(d);
	qrnic_dev_free(d);
}

/* ---- Admin queue engine --------------------------------------------------- */
static void test_aq_ring(void)
{
	struct qrnic_dev *d = dev_new();
	const uint32_t log = 3, depth = 1u << log;
	uint64_t sq = galloc(QRNIC_AQ_SQE_SIZE * depth, 4096), cq = galloc(QRNIC_AQ_CQE_SIZE * depth, 4096);
	unsigned irq0, err0, n, total = 0;
	uint32_t ci = 0;

	d->aq_sq_base = sq;
	d->aq_cq_base = cq;
	d->aq_ctrl = QRNIC_AQ_CTRL_ENABLE | log;
	d->aq_sq_pi = d->aq_sq_ci = d->aq_cq_pi = 0;
	d->aq_status = QRNIC_AQ_STATUS_ENABLED;
	irq0 = H.irqs;

	/* three rounds of commands, wrapping the ring several times */
	for (int round = 0; round < 5; round++) {
		unsigned cnt = round == 0 ? 5 : depth;
		unsigned i;

		for (i = 0; i < cnt; i++) {
			struct qrnic_aq_cmd c = mk(i % 3 == 2 ? 0x55 : QRNIC_CMD_CREATE_PD);

			memcpy(gptr(sq + (uint64_t)(d->aq_sq_pi & (depth - 1)) * QRNIC_AQ_SQE_SIZE), &c,
			       sizeof(c));
			d->aq_sq_pi++;
		}
		/* budget 3 at a time */
		for (n = 0; n < 10 && qrnic_fw_admin_run(d, 3); n++)
			;
		CHECK(!qrnic_fw_admin_run(d, 3));
		CHECK_EQ(d->aq_sq_ci, d->aq_sq_pi);
		CHECK_EQ(d->aq_cq_pi, d->aq_sq_pi);
		for (i = 0; i < cnt; i++, ci++) {
			struct qrnic_aq_cqe e;
			struct qrnic_aq_cmd c;

			memcpy(&e, gptr(cq + (uint64_t)(ci & (depth - 1)) * QRNIC_AQ_CQE_SIZE), sizeof(e));
			memcpy(&c, gptr(sq + (uint64_t)(ci & (depth - 1)) * QRNIC_AQ_SQE_SIZE), sizeof(c));
			CHECK_EQ(e.owner, ((ci >> log) & 1) ^ 1);
			CHECK_EQ(e.cmd_id, c.hdr.cmd_id);
			CHECK_EQ(e.sq_ci, ci + 1);
			CHECK_EQ(e.status, c.hdr.opcode == 0x55 ? QRNIC_AQ_BAD_OPCODE : QRNIC_AQ_OK);
			total++;
		}
	}
	CHECK_EQ(H.irqs - irq0, total);
	CHECK_EQ(d->aq_status & QRNIC_AQ_STATUS_ERROR, 0);
	CHECK(!qrnic_fw_admin_run(d, 0));

	/* budget 0 with work pending reports more */
	{
		struct qrnic_aq_cmd c = mk(QRNIC_CMD_QUERY_STATS);

		memcpy(gptr(sq + (uint64_t)(d->aq_sq_pi & (depth - 1)) * QRNIC_AQ_SQE_SIZE), &c, sizeof(c));
		d->aq_sq_pi++;
		CHECK(qrnic_fw_admin_run(d, 0));
		CHECK(!qrnic_fw_admin_run(d, 1));
	}

	/* producer more than depth ahead: guest error, stop, nothing written */
	err0 = H.guest_errors;
	d->aq_sq_pi = d->aq_sq_ci + depth + 1;
	{
		uint32_t cqpi = d->aq_cq_pi;

		CHECK(!qrnic_fw_admin_run(d, 16));
		CHECK(d->aq_status & QRNIC_AQ_STATUS_ERROR);
		CHECK(H.guest_errors > err0);
		CHECK_EQ(d->aq_cq_pi, cqpi);
		CHECK(!qrnic_fw_admin_run(d, 16));	/* stays stopped */
	}
	/* exactly depth outstanding is fine */
	d->aq_status = QRNIC_AQ_STATUS_ENABLED;
	d->aq_sq_pi = d->aq_sq_ci + depth;
	for (n = 0; n < depth; n++) {
		struct qrnic_aq_cmd c = mk(QRNIC_CMD_QUERY_STATS);

		memcpy(gptr(sq + (uint64_t)((d->aq_sq_ci + n) & (depth - 1)) * QRNIC_AQ_SQE_SIZE), &c,
		       sizeof(c));
	}
	CHECK(!qrnic_fw_admin_run(d, 16));
	CHECK_EQ(d->aq_status & QRNIC_AQ_STATUS_ERROR, 0);
	CHECK_EQ(d->aq_sq_ci, d->aq_sq_pi);

	/* unreachable SQ / CQ ring: error, no loop */
	d->aq_sq_base = 0x2000;
	d->aq_sq_pi++;
	CHECK(!qrnic_fw_admin_run(d, 16));
	CHECK(d->aq_status & QRNIC_AQ_STATUS_ERROR);
	d->aq_status = QRNIC_AQ_STATUS_ENABLED;
	d->aq_sq_base = sq;
	d->aq_cq_base = 0x2000;
	CHECK(!qrnic_fw_admin_run(d, 16));
	CHECK(d->aq_status & QRNIC_AQ_STATUS_ERROR);
	qrnic_dev_free(d);
}

/* ---- Garbage commands -------------------------------------------------------- */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_garbage(void)
{
	struct qrnic_dev *d = dev_new();
	uint32_t eq = create_eq(d, false), cq = create_cq(d, 0, eq), pd = create_pd(d, 0);
	uint32_t qp = create_qp(d, 0, QRNIC_QPT_RC, pd, cq, cq), key;
	uint64_t pages[8], pbl, resp = galloc(4096, 4096);
	struct qrnic_aq_cmd tmpl[QRNIC_CMD_MAX + 1];
	unsigned op, it, i;
	unsigned long ok = 0, total = 0;
	const char *env = getenv("QRNIC_GARBAGE_ITERS");
	unsigned iters = env ? (unsigned)strtoul(env, NULL, 0) : 3000;

	set_gid(d, 0, true);
	set_gid(d, 1, false);
	for (i = 0; i < 8; i++)
		pages[i] = galloc(4096, 4096);
	pbl = build_pbl(1, pages, 8);
	{
		struct qrnic_aq_cmd c = mr_cmd(pd, QRNIC_ACCESS_LOCAL_WRITE, 0, 12, 1, 0x5000, 8 * 4096,
					       pbl, 8);

		CHECK_EQ(reg_mr(d, &c, &key), QRNIC_AQ_OK);
	}

	/* A plausible template for every opcode. */
	memset(tmpl, 0, sizeof(tmpl));
	for (op = 1; op <= QRNIC_CMD_MAX; op++)
		tmpl[op] = mk((uint8_t)op);
	tmpl[QRNIC_CMD_QUERY_DEVICE].u.query.resp_addr = resp;
	tmpl[QRNIC_CMD_QUERY_DEVICE].u.query.resp_len = 128;
	tmpl[QRNIC_CMD_QUERY_PORT].u.query = tmpl[QRNIC_CMD_QUERY_DEVICE].u.query;
	tmpl[QRNIC_CMD_QUERY_PORT].u.query.port = 1;
	tmpl[QRNIC_CMD_QUERY_STATS].u.query = tmpl[QRNIC_CMD_QUERY_DEVICE].u.query;
	tmpl[QRNIC_CMD_SET_GID].u.gid.index = 2;
	tmpl[QRNIC_CMD_SET_GID].u.gid.valid = 1;
	tmpl[QRNIC_CMD_SET_GID].u.gid.net_type = QRNIC_NET_IPV6;
	tmpl[QRNIC_CMD_SET_GID].u.gid.gid[0] = 0xfe;
	tmpl[QRNIC_CMD_QUERY_GID].u.gid.index = 1;
	tmpl[QRNIC_CMD_DEALLOC_UCTX].u.handle.handle = 1;
	tmpl[QRNIC_CMD_DESTROY_PD].u.handle.handle = pd;
	tmpl[QRNIC_CMD_CREATE_CQ] = cq_cmd(0, eq);
	tmpl[QRNIC_CMD_DESTROY_CQ].u.handle.handle = cq;
	tmpl[QRNIC_CMD_CREATE_QP] = qp_cmd(0, QRNIC_QPT_RC, pd, cq, cq);
	tmpl[QRNIC_CMD_MODIFY_QP] = modify_cmd(qp, QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_PKEY_INDEX |
					       QRNIC_QP_ATTR_PORT | QRNIC_QP_ATTR_ACCESS_FLAGS, NULL);
	tmpl[QRNIC_CMD_MODIFY_QP].u.modify_qp.attr.qp_state = QRNIC_QPS_INIT;
	tmpl[QRNIC_CMD_MODIFY_QP].u.modify_qp.attr.port_num = 1;
	av_v4(&tmpl[QRNIC_CMD_MODIFY_QP].u.modify_qp.attr.av, 0);
	tmpl[QRNIC_CMD_QUERY_QP].u.query_qp.handle = qp;
	tmpl[QRNIC_CMD_QUERY_QP].u.query_qp.resp_addr = resp;
	tmpl[QRNIC_CMD_QUERY_QP].u.query_qp.resp_len = 72;
	tmpl[QRNIC_CMD_DESTROY_QP].u.handle.handle = qp;
	tmpl[QRNIC_CMD_REG_MR] = mr_cmd(pd, QRNIC_ACCESS_LOCAL_WRITE, 0, 12, 1, 0x5000, 8 * 4096, pbl, 8);
	tmpl[QRNIC_CMD_DEREG_MR].u.handle.handle = key;
	tmpl[QRNIC_CMD_QUERY_MR].u.query_qp.handle = key;
	tmpl[QRNIC_CMD_QUERY_MR].u.query_qp.resp_addr = resp;
	tmpl[QRNIC_CMD_QUERY_MR].u.query_qp.resp_len = 48;
	tmpl[QRNIC_CMD_CREATE_AH].u.create_ah.pdn = pd;
	av_v4(&tmpl[QRNIC_CMD_CREATE_AH].u.create_ah.av, 0);
	tmpl[QRNIC_CMD_DESTROY_AH].u.handle.handle = 1;
	tmpl[QRNIC_CMD_CREATE_EQ].u.create_eq.log_depth = 4;
	tmpl[QRNIC_CMD_CREATE_EQ].u.create_eq.ring_addr = galloc(4096, 4096);
	tmpl[QRNIC_CMD_DESTROY_EQ].u.handle.handle = eq;
	for (op = 1; op <= QRNIC_CMD_MAX; op++)
		CHECK(st(d, &tmpl[op]) <= QRNIC_AQ_STATUS_MAX);

	for (it = 0; it < iters; it++) {
		for (op = 0; op <= 0xff; op++) {
			struct qrnic_aq_cmd c;
			struct qrnic_aq_cqe e;
			unsigned mode = (unsigned)(rnd() % 4), k;

			if (op > QRNIC_CMD_MAX && it % 16)	/* unknown opcodes: sample */
				continue;
			if (mode == 0 || op == 0 || op > QRNIC_CMD_MAX) {
				/* random bytes */
				for (k = 0; k < sizeof(c); k += 8) {
					uint64_t r = rnd();

					memcpy((uint8_t *)&c + k, &r, 8);
				}
				if (rnd() & 1) {
					c.hdr.flags = 0;
					c.hdr.rsvd = 0;
				}
			} else {
				/* a valid-looking command with 1..4 random bytes changed */
				unsigned nflip = 1 + (unsigned)(rnd() % 4);

				c = tmpl[op];
				for (k = 0; k < nflip; k++) {
					unsigned pos = mode == 1 ? 8 + (unsigned)(rnd() % 56)
								 : (unsigned)(rnd() % 128);

					((uint8_t *)&c)[pos] = (uint8_t)rnd();
				}
				if (mode == 3)	/* valid header: exercise the handler */
					memcpy(&c.hdr, &tmpl[op].hdr, sizeof(c.hdr));
			}
			c.hdr.opcode = (uint8_t)op;
			memset(&e, 0xcc, sizeof(e));
			qrnic_fw_exec(d, &c, &e);
			CHECK(e.status <= QRNIC_AQ_STATUS_MAX);
			CHECK_EQ(e.opcode, op);
			CHECK_EQ(e.cmd_id, c.hdr.cmd_id);
			if (op == 0 || op > QRNIC_CMD_MAX)
				CHECK_EQ(e.status, QRNIC_AQ_BAD_OPCODE);
			if (e.status != QRNIC_AQ_OK)
				CHECK(e.result[0] == 0 && e.result[1] == 0);
			if (e.status == QRNIC_AQ_BAD_PARAM)
				CHECK(e.detail < QRNIC_AQ_SQE_SIZE);
			ok += e.status == QRNIC_AQ_OK;
			total++;
		}
		if (it % 256 == 255) {
			check_invariants(d);
			if (failures)
				break;
		}
	}
	check_invariants(d);
	if (getenv("QRNIC_TEST_VERBOSE"))
		fprintf(stderr, "garbage: %lu commands, %lu succeeded\n", total, ok);
	CHECK(ok > 0);
	/* everything can still be torn down; all MTT entries come back */
	destroy_all(d);
	check_invariants(d);
	qrnic_dev_free(d);
}

int main(void)
{
	H.mem = calloc(1, MEM_SIZE);
	if (!H.mem)
		return 2;

	test_queries();
	test_port_mtu();
	test_gid();
	test_mr_levels();
	test_mr_1g();
	test_stale_key();
	test_bounds();
	test_mtt();
	test_alloc_mtt();
	test_alloc_mpt();
	test_sgl();
	test_objects();
	test_ring_pagelists();
	test_qp_table();
	test_modify_qp();
	test_aq_ring();
	test_garbage();

	free(H.mem);
	printf("test_fw_mr: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
