/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared part of the qrnic libFuzzer targets: see fuzz_common.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

static int debug_level(void);

/* ---- input reader ---------------------------------------------------------- */
uint8_t fz_u8(struct fz_in *in)
{
	return in->off < in->n ? in->p[in->off++] : 0;
}

uint16_t fz_u16(struct fz_in *in)
{
	uint16_t lo = fz_u8(in);

	return (uint16_t)(lo | fz_u8(in) << 8);
}

uint32_t fz_u32(struct fz_in *in)
{
	uint32_t lo = fz_u16(in);

	return lo | (uint32_t)fz_u16(in) << 16;
}

uint64_t fz_u64(struct fz_in *in)
{
	uint64_t lo = fz_u32(in);

	return lo | (uint64_t)fz_u32(in) << 32;
}

size_t fz_left(const struct fz_in *in)
{
	return in->n - in->off;
}

void fz_take(struct fz_in *in, void *out, size_t n)
{
	size_t k = fz_left(in) < n ? fz_left(in) : n;

	memcpy(out, in->p + in->off, k);
	memset((uint8_t *)out + k, 0, n - k);
	in->off += k;
}

bool fz_record(struct fz_in *in, uint8_t *kind, struct fz_in *body)
{
	size_t len;

	if (!fz_left(in))
		return false;
	*kind = fz_u8(in);
	len = fz_u16(in);
	if (len > fz_left(in))
		len = fz_left(in);
	body->p = in->p + in->off;
	body->n = len;
	body->off = 0;
	in->off += len;
	return true;
}

/* ---- object lists ------------------------------------------------------------ */
void fz_objs_add(struct fz_objs *o, uint32_t v)
{
	if (o->n < FZ_MAX_OBJ)
		o->v[o->n++] = v;
	else
		o->v[o->next++ % FZ_MAX_OBJ] = v;
}

int64_t fz_keep(struct fz_objs *o, int64_t r)
{
	if (r >= 0)
		fz_objs_add(o, (uint32_t)r);
	return r;
}

void fz_objs_del(struct fz_objs *o, uint32_t v)
{
	for (int i = 0; i < o->n; i++) {
		if (o->v[i] == v) {
			o->v[i] = o->v[--o->n];
			return;
		}
	}
}

uint32_t fz_pick(const struct fz_objs *o, uint8_t sel, uint32_t raw)
{
	if ((sel & 0x80) || !o->n)
		return raw;
	return o->v[sel % o->n];
}

const struct fz_mr *fz_pick_mr(const struct fz_dev *fd, uint8_t sel)
{
	static const struct fz_mr none = { 0, 0x1000, 4096 };

	return fd->nmr ? &fd->mr[sel % fd->nmr] : &none;
}

void fz_add_mr(struct fz_dev *fd, uint32_t key, uint64_t iova, uint64_t len)
{
	int i = fd->nmr < FZ_MAX_OBJ ? fd->nmr++ : (int)(key % FZ_MAX_OBJ);

	fd->mr[i] = (struct fz_mr){ key, iova, len ? len : 1 };
}

/* ---- invariants ---------------------------------------------------------------- */
static void die(struct fz *f, const char *what, int d) __attribute__((noreturn));
static void die(struct fz *f, const char *what, int d)
{
	char msg[300];

	fprintf(stderr, "\nqrnic %s: %s (action %d, virtual time %llu ns, %llu iterations)\n",
		f->name, what, f->action, (unsigned long long)hx_now(f->w),
		(unsigned long long)f->total_iters);
	for (int i = 0; d >= 0 && i < 8; i++) {
		int lvl = hx_log_get(f->w, d, i, msg, sizeof(msg));

		if (lvl < 0)
			break;
		fprintf(stderr, "  dev %d log[-%d]: %s\n", d, i, msg);
	}
	abort();
}

void fz_check(struct fz *f)
{
	char why[256], msg[400];

	for (int d = 0; d < FZ_NDEV; d++) {
		if (hx_dev_check(f->w, d, why, sizeof(why))) {
			snprintf(msg, sizeof(msg), "device %d QP lists broken: %s", d, why);
			die(f, msg, d);
		}
	}
	if (hx_wire_stat(f->w, HX_WS_BUSY_UNSCHEDULED))
		die(f, "a device had work but had not asked to be scheduled", -1);
	fz_check_views(f);
}

/* The read-only snapshots (qrnic_dev_view, QEMU's "qps"/"cqs"/"eqs"/"srqs")
 * of whatever state the fuzzer made: every walk ends, reports objects in
 * increasing number order, and each record's number is its first field. */
void fz_check_views(struct fz *f)
{
	static uint32_t buf[16 * 64];
	char msg[200];

	for (int d = 0; d < FZ_NDEV; d++) {
		for (int k = 0; k < QRNIC_VIEW_KINDS; k++) {
			int nf = hx_view_nfields(k);
			uint32_t start = 0, next = 0, last = 0;
			int n, walks = 0;
			bool any = false;

			do {
				n = hx_query_view(f->w, d, k, start, buf, 16, &next);
				if (n < 0 || n > 16 || ++walks > (1 << 17))
					die(f, "qrnic_dev_view: bad count or endless walk", d);
				for (int r = 0; r < n; r++) {
					uint32_t num = buf[r * nf];

					if (num < start || (any && num <= last)) {
						snprintf(msg, sizeof(msg), "qrnic_dev_view kind %d: "
							 "record %u after %u (start %u)", k, num, last, start);
						die(f, msg, d);
					}
					last = num;
					any = true;
				}
				start = next;
			} while (next);
		}
	}
}

/* ---- bounded runs and hang detection --------------------------------------------- */
/* Counters that move when a device does something observable: frames out
 * and in (accepted or dropped), completions, events, admin commands,
 * Ethernet frames, DMA writes.  A device that keeps the run loop busy
 * while none of them moves and the clock stands still is hung. */
static uint64_t progress(struct fz *f)
{
	static const int st[] = {
		QRNIC_STAT_TX_PACKETS, QRNIC_STAT_RX_PACKETS, QRNIC_STAT_RX_DROP_MALFORMED,
		QRNIC_STAT_RX_DROP_ICRC, QRNIC_STAT_RX_DROP_NO_QP, QRNIC_STAT_RX_DROP_QP_STATE,
		QRNIC_STAT_RX_DROP_OTHER, QRNIC_STAT_CQES, QRNIC_STAT_EQES, QRNIC_STAT_ADMIN_CMDS,
		QRNIC_STAT_ETH_TX_FRAMES, QRNIC_STAT_ETH_RX_FRAMES, QRNIC_STAT_ETH_RX_DROPS,
		QRNIC_STAT_LOOPBACK_FRAMES,
	};
	uint64_t s = hx_wire_stat(f->w, HX_WS_TX) + hx_wire_stat(f->w, HX_WS_DELIVERED);

	for (int d = 0; d < FZ_NDEV; d++) {
		for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
			s += hx_dev_stat(f->w, d, st[i]);
		s += hx_dma_stat(f->w, d, 1);
	}
	return s;
}

static void account(struct fz *f, uint64_t t0, uint64_t sig, uint64_t it, bool hit_cap)
{
	uint64_t now = hx_now(f->w);
	char msg[200];

	f->total_iters += it;
	if (f->total_iters >= FZ_BUDGET_ITERS)
		f->spent = true;
	if (now == t0)
		f->instant_iters += it;
	else
		f->instant_iters = 0;
	if (hit_cap && now == t0 && progress(f) == sig)
		f->stuck_iters += it;
	else
		f->stuck_iters = 0;
	if (f->stuck_iters >= FZ_STUCK_ITERS) {
		snprintf(msg, sizeof(msg), "hang: %llu run loop iterations without progress",
			 (unsigned long long)f->stuck_iters);
		die(f, msg, 1);
	}
	if (f->instant_iters >= FZ_INSTANT_ITERS) {
		snprintf(msg, sizeof(msg), "hang: %llu run loop iterations at one virtual instant",
			 (unsigned long long)f->instant_iters);
		die(f, msg, 1);
	}
}

void fz_run(struct fz *f, uint64_t ns, uint64_t iters)
{
	uint64_t now = hx_now(f->w);
	uint64_t end = ns > UINT64_MAX - now ? UINT64_MAX : now + ns;

	while (iters && !f->spent) {
		uint64_t chunk = iters < FZ_CHUNK_ITERS ? iters : FZ_CHUNK_ITERS;
		uint64_t t0 = hx_now(f->w), sig = progress(f);
		int rc = hx_run(f->w, end > t0 ? end - t0 : 0, chunk);
		uint64_t it = hx_run_iterations(f->w);

		iters -= it < iters ? it : iters;
		account(f, t0, sig, it, rc == HX_RUN_ITER);
		if (rc != HX_RUN_ITER)
			break;
	}
}

void fz_mark(struct fz *f)
{
	f->mark_t = hx_now(f->w);
	f->mark_sig = progress(f);
}

void fz_account_admin(struct fz *f)
{
	uint64_t it = hx_run_iterations(f->w);

	account(f, f->mark_t, f->mark_sig, it, it >= FZ_ADMIN_ITERS);
}

/* ---- world setup ------------------------------------------------------------------ */
/* small tables: setup is cheap and exhausting them is reachable */
static const char fz_cfg[] = "max_qp=64,max_cq=64,max_mr=64,max_pd=16,max_ah=16,max_eq=8,"
			     "max_uctx=4,max_mtt=8192,max_cqe=4096,max_qp_wr=1024,max_srq=16,max_xrcd=8";
/* The same device with a receive buffer that a burst fills (model/pfc.c): it
 * drains at 2 Gb/s under a timing profile, sends XOFF/XON for a priority past
 * the thresholds and drops what does not fit, so that those paths meet every
 * frame the fuzzers make (rx_buffer needs a timing profile to matter). */
static const char fz_cfg_rxbuf[] = "max_qp=64,max_cq=64,max_mr=64,max_pd=16,max_ah=16,max_eq=8,"
				   "max_uctx=4,max_mtt=8192,max_cqe=4096,max_qp_wr=1024,max_srq=16,max_xrcd=8,"
				   "rx_buffer=12288,rx_pfc_xoff=6144,rx_pfc_xon=3072,rx_drain_mbps=2000";
static const char *const fz_profiles[] = { "functional", "cx5-100g", "teach" };

static void gids(int d, uint8_t g[2][16])
{
	memset(g, 0, 32);
	g[0][10] = g[0][11] = 0xff;		/* ::ffff:10.0.0.d+1 */
	g[0][12] = 10;
	g[0][15] = (uint8_t)(d + 1);
	g[1][0] = 0xfd;				/* fd00::d+1 */
	g[1][15] = (uint8_t)(d + 1);
}

static int modify(struct fz *f, int d, uint32_t qpn, uint8_t state, uint32_t mask,
		  struct qrnic_qp_attr *a)
{
	a->attr_mask = QRNIC_QP_ATTR_STATE | mask;
	a->qp_state = state;
	return hx_modify_qp(f->w, d, qpn, a);
}

#define TRY(x) do { if ((x) < 0) return -1; } while (0)

static int ud_up(struct fz *f, int d, uint32_t qpn, bool gsi)
{
	struct qrnic_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qkey = FZ_QKEY;
	a.port_num = 1;
	if (modify(f, d, qpn, QRNIC_QPS_INIT, QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_QKEY |
		   (gsi ? 0 : QRNIC_QP_ATTR_PORT), &a))
		return -1;
	memset(&a, 0, sizeof(a));
	if (modify(f, d, qpn, QRNIC_QPS_RTR, 0, &a))
		return -1;
	memset(&a, 0, sizeof(a));
	return modify(f, d, qpn, QRNIC_QPS_RTS, QRNIC_QP_ATTR_SQ_PSN, &a) ? -1 : 0;
}

static int rc_init(struct fz *f, int d, uint32_t qpn)
{
	struct qrnic_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	a.qp_access_flags = QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_READ |
			    QRNIC_ACCESS_REMOTE_ATOMIC;
	return modify(f, d, qpn, QRNIC_QPS_INIT, QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
		      QRNIC_QP_ATTR_ACCESS_FLAGS, &a) ? -1 : 0;
}

static int rc_rtr(struct fz *f, int d, uint32_t qpn, uint32_t dest, uint32_t rq_psn)
{
	struct qrnic_qp_attr a;
	int o = 1 - d;

	memset(&a, 0, sizeof(a));
	a.path_mtu = FZ_MTU;
	a.dest_qpn = dest;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	memcpy(a.av.dgid, f->d[o].gid[0], 16);
	memcpy(a.av.dmac, hx_mac(f->w, o), 6);
	a.av.net_type = QRNIC_NET_IPV4;
	return modify(f, d, qpn, QRNIC_QPS_RTR, QRNIC_QP_ATTR_AV | QRNIC_QP_ATTR_PATH_MTU |
		      QRNIC_QP_ATTR_DEST_QPN | QRNIC_QP_ATTR_RQ_PSN |
		      QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC | QRNIC_QP_ATTR_MIN_RNR_TIMER, &a) ? -1 : 0;
}

static int rc_rts(struct fz *f, int d, uint32_t qpn, uint32_t sq_psn)
{
	struct qrnic_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.timeout = 8;		/* about 1 ms: retransmissions happen within a run */
	a.retry_cnt = 3;
	a.rnr_retry = 3;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 4;
	return modify(f, d, qpn, QRNIC_QPS_RTS, QRNIC_QP_ATTR_TIMEOUT | QRNIC_QP_ATTR_RETRY_CNT |
		      QRNIC_QP_ATTR_RNR_RETRY | QRNIC_QP_ATTR_SQ_PSN |
		      QRNIC_QP_ATTR_MAX_QP_RD_ATOMIC, &a) ? -1 : 0;
}

static int eth_up(struct fz *f, int d)
{
	struct fz_dev *fd = &f->d[d];
	hx_world *w = f->w;
	uint64_t bufs;

	fd->eth_tx_ring = hx_mem_alloc(w, d, 16 * sizeof(struct qrnic_eth_desc), 4096);
	fd->eth_rx_ring = hx_mem_alloc(w, d, 16 * sizeof(struct qrnic_eth_desc), 4096);
	bufs = hx_mem_alloc(w, d, 16 * 2048, 4096);
	if (!fd->eth_tx_ring || !fd->eth_rx_ring || !bufs)
		return -1;
	for (int i = 0; i < 16; i++) {
		struct qrnic_eth_desc e = { bufs + (uint64_t)i * 2048, 2048, 0, 0 };

		hx_mem_write(w, d, fd->eth_rx_ring + (uint64_t)i * sizeof(e), &e, sizeof(e));
	}
	hx_reg_write(w, d, QRNIC_REG_ETH_TX_BASE_LO, (uint32_t)fd->eth_tx_ring, 4);
	hx_reg_write(w, d, QRNIC_REG_ETH_TX_BASE_HI, (uint32_t)(fd->eth_tx_ring >> 32), 4);
	hx_reg_write(w, d, QRNIC_REG_ETH_RX_BASE_LO, (uint32_t)fd->eth_rx_ring, 4);
	hx_reg_write(w, d, QRNIC_REG_ETH_RX_BASE_HI, (uint32_t)(fd->eth_rx_ring >> 32), 4);
	hx_reg_write(w, d, QRNIC_REG_ETH_CTRL, 4 | 4 << QRNIC_ETH_CTRL_RX_LOG_SHIFT |
		     QRNIC_ETH_CTRL_RX_ENABLE | QRNIC_ETH_CTRL_TX_ENABLE, 4);
	hx_reg_write(w, d, QRNIC_REG_ETH_RX_DB, 16, 4);
	hx_reg_write(w, d, QRNIC_REG_ETH_IRQ, 3u | 1u << 31, 4);
	return 0;
}

int fz_setup_dev(struct fz *f, int d)
{
	struct fz_dev *fd = &f->d[d];
	hx_world *w = f->w;
	struct qrnic_av av;
	int64_t r;

	memset(fd, 0, sizeof(*fd));
	gids(d, fd->gid);
	TRY(hx_drv_bringup(w, d, 5) ? -1 : 0);
	TRY(r = hx_create_eq(w, d, 6, 1, QRNIC_EQ_F_ASYNC));
	fd->eq_async = (uint32_t)r;
	TRY(r = hx_create_eq(w, d, 6, 2, 0));
	fd->eq_comp = (uint32_t)r;
	fz_objs_add(&fd->eqs, fd->eq_async);
	fz_objs_add(&fd->eqs, fd->eq_comp);
	hx_arm_eq(w, d, fd->eq_async);
	hx_arm_eq(w, d, fd->eq_comp);
	TRY(hx_set_gid(w, d, 0, 1, QRNIC_NET_IPV4, fd->gid[0]) ? -1 : 0);
	TRY(hx_set_gid(w, d, 1, 1, QRNIC_NET_IPV6, fd->gid[1]) ? -1 : 0);
	TRY(r = fz_keep(&fd->pds, hx_create_pd(w, d, 0)));
	fd->pd = (uint32_t)r;
	TRY(r = fz_keep(&fd->cqs, hx_create_cq(w, d, 0, fd->eq_comp, 8, 1)));
	fd->cq = (uint32_t)r;
	TRY(r = fz_keep(&fd->cqs, hx_create_cq(w, d, 0, fd->eq_comp, 2, 1)));	/* 4 entries */
	fd->cq_small = (uint32_t)r;
	hx_arm_cq(w, d, fd->cq, 0);

	{
		/* 64 KiB of shuffled pages (all access), 8 KiB remote read only,
		 * 128 KiB of 64 KiB pages through a 2-level PBL */
		const struct { uint64_t iova, len; uint32_t access, flags; unsigned shift; int levels; }
		mrs[] = {
			{ 0x7f0000001040ull + ((uint64_t)d << 24), 1 << 16, QRNIC_ACCESS_MR_MASK,
			  HX_MR_SHUFFLE, 12, -1 },	/* windows may be bound to it */
			{ 0x10000000ull, 8192, QRNIC_ACCESS_LOCAL_WRITE | QRNIC_ACCESS_REMOTE_READ,
			  0, 12, -1 },
			{ 0x20000000ull, 1 << 17, QRNIC_ACCESS_ALL, 0, 16, 2 },
		};
		/* the GSI QP first (QPN 1); the small CQ behind the QP in ERR */
		const struct { uint32_t *qpn, type, cq; unsigned log; } qps[] = {
			{ &fd->qp_gsi, QRNIC_QPT_GSI, fd->cq, 4 },
			{ &fd->qp_rc, QRNIC_QPT_RC, fd->cq, 6 },
			{ &fd->qp_ud, QRNIC_QPT_UD, fd->cq, 6 },
			{ &fd->qp_err, QRNIC_QPT_RC, fd->cq_small, 4 },
			{ &fd->qp_rtr, QRNIC_QPT_RC, fd->cq, 4 },
			{ &fd->qp_reset, QRNIC_QPT_RC, fd->cq, 4 },
		};

		for (size_t i = 0; i < sizeof(mrs) / sizeof(mrs[0]); i++) {
			TRY(r = hx_reg_mr(w, d, fd->pd, mrs[i].access, mrs[i].iova, mrs[i].len,
					  mrs[i].shift, mrs[i].levels, mrs[i].flags));
			fz_add_mr(fd, (uint32_t)r, mrs[i].iova, mrs[i].len);
		}
		for (size_t i = 0; i < sizeof(qps) / sizeof(qps[0]); i++) {
			TRY(r = fz_keep(&fd->qps, hx_create_qp(w, d, 0, fd->pd, qps[i].cq, qps[i].cq,
							       qps[i].type, qps[i].log, 8,
							       qps[i].log, 8, 0)));
			*qps[i].qpn = (uint32_t)r;
		}
	}
	TRY(ud_up(f, d, fd->qp_ud, false));
	TRY(ud_up(f, d, fd->qp_gsi, true));
	TRY(rc_init(f, d, fd->qp_err));
	{
		struct qrnic_qp_attr a;

		memset(&a, 0, sizeof(a));
		TRY(modify(f, d, fd->qp_err, QRNIC_QPS_ERR, 0, &a) ? -1 : 0);
	}

	memset(&av, 0, sizeof(av));
	{
		uint8_t peer[2][16];

		gids(1 - d, peer);	/* the peer's, whether or not it is up */
		memcpy(av.dgid, peer[0], 16);
	}
	memcpy(av.dmac, hx_mac(w, 1 - d), 6);
	av.net_type = QRNIC_NET_IPV4;
	TRY(r = fz_keep(&fd->ahs, hx_create_ah(w, d, fd->pd, &av)));
	fd->ah = (uint32_t)r;
	TRY(eth_up(f, d));
	fd->up = true;
	return 0;
}

/* Device d's RC QPs to the peer's: qp_rc in RTS, qp_rtr in RTR. */
static int connect_side(struct fz *f, int d)
{
	struct fz_dev *fd = &f->d[d], *fp = &f->d[1 - d];

	TRY(rc_init(f, d, fd->qp_rc));
	TRY(rc_rtr(f, d, fd->qp_rc, fp->qp_rc, d ? FZ_PSN0 : FZ_PSN1));
	TRY(rc_rts(f, d, fd->qp_rc, d ? FZ_PSN1 : FZ_PSN0));
	TRY(rc_init(f, d, fd->qp_rtr));
	TRY(rc_rtr(f, d, fd->qp_rtr, fp->qp_rtr, 0));
	for (int i = 0; i < 8; i++) {
		struct fz_in none = { NULL, 0, 0 };

		fz_service(f, d, &none);
	}
	return 0;
}

int fz_connect(struct fz *f)
{
	TRY(connect_side(f, 0));
	TRY(connect_side(f, 1));
	f->req_psn = FZ_PSN0;
	f->resp_psn = FZ_PSN1;
	return 0;
}

void fz_reinit(struct fz *f, int d)
{
	hx_drv_forget(f->w, d);
	fz_mark(f);
	if (fz_setup_dev(f, d) == 0 && f->d[1 - d].up)
		connect_side(f, d);
	fz_account_admin(f);
}

void fz_refs_opts(struct fz_opts *o, struct fz_in *in)
{
	uint8_t r = fz_u8(in);
	static const int mode[4] = { HX_REFS_CHECKED, HX_REFS_CHECKED, HX_REFS_NONE, HX_REFS_PTR };

	o->dma_refs = mode[r & 3];
	o->lazy_icrc[0] = r & 4;
	o->lazy_icrc[1] = r & 8;
	o->vouch = r & 0x10;
	o->tap = r & 0x20;
	o->no_framelog = r & 0x40;
	o->tap_corrupts = o->tap && (r & 0x80);
	if (o->tap)
		o->tap_pattern = fz_u32(in);
}

/* A reader of the frame buffers the devices hand over, as a capture, a
 * frame log, a switch or a corrupting fault would be: per frame (2 bits of
 * the pattern, 16 frames round) nothing, the headers only
 * (qrnic_frame_buf_fill_headers), a fill (qrnic_frame_buf_fill), or a fill
 * and one flipped bit (only if allowed: the wire is then not trusted). */
static int fz_tap(void *ctx, int src, uint8_t *buf, uint32_t len)
{
	struct fz *f = ctx;
	uint64_t i = f->tap_frames++;
	unsigned act = (f->tap_pattern >> (2 * (i % 16))) & 3;

	(void)src;
	f->tap_pending += qrnic_frame_buf_icrc_pending(buf);
	f->tap_refs += qrnic_frame_buf_described(buf);
	switch (act) {
	case 1:
		qrnic_frame_buf_fill_headers(buf);
		f->tap_headers++;
		return 0;
	case 2:
	case 3:
		qrnic_frame_buf_fill(buf);
		f->tap_fills++;
		if (act == 3 && f->tap_corrupts && len) {
			uint32_t x = (uint32_t)(i * 2654435761u) ^ f->tap_pattern;

			buf[x % len] ^= (uint8_t)(1u << (i % 8));
			f->tap_corrupted++;
			return 1;
		}
		return 0;
	default:
		return 0;
	}
}

/* Over the process (a campaign): inputs that mapped payloads, the maps
 * and unmaps, frames the tap saw; printed at exit in libFuzzer's
 * "stat::" form after its own final stats. */
static uint64_t fz_ref_inputs, fz_tap_frames_total;

static void fz_print_ref_stats(void)
{
	uint64_t maps, unmaps;

	hx_dma_refs_stats(&maps, &unmaps, NULL);
	fprintf(stderr, "stat::qrnic_ref_inputs: %llu\nstat::qrnic_dma_maps: %llu\n"
		"stat::qrnic_dma_unmaps: %llu\nstat::qrnic_tap_frames: %llu\n",
		(unsigned long long)fz_ref_inputs, (unsigned long long)maps,
		(unsigned long long)unmaps, (unsigned long long)fz_tap_frames_total);
}

int fz_world_new(struct fz *f, const char *name, const struct fz_opts *o)
{
	static bool registered;

	if (!registered) {
		registered = true;
		atexit(fz_print_ref_stats);
	}
	memset(f, 0, sizeof(*f));
	f->name = name;
	hx_dma_refs_stats(&f->maps0, &f->unmaps0, NULL);
	f->w = hx_world_new(FZ_MEM, 1);
	if (!f->w)
		return -1;
	hx_set_dma_refs(f->w, o->dma_refs);
	for (int d = 0; d < FZ_NDEV; d++) {
		if (hx_dev_add(f->w, o->rx_buffer[d] ? fz_cfg_rxbuf : fz_cfg) != d)
			return -1;
		hx_dev_selfcheck(f->w, d, 1);
		if (o->profile[d] && hx_set_timing(f->w, d, fz_profiles[o->profile[d] % 3], NULL))
			return -1;
		hx_set_lazy_icrc(f->w, d, o->lazy_icrc[d]);
		/* QEMU turns these host settings on together (hw/qrnic.c) */
		hx_set_db_batch(f->w, d, o->lazy_icrc[d]);
		hx_set_trains(f->w, d, o->lazy_icrc[d]);
	}
	hx_set_vouch(f->w, o->vouch);
	if (o->tap) {
		f->tap_pattern = o->tap_pattern;
		f->tap_corrupts = o->tap_corrupts;
		hx_set_tx_tap(f->w, fz_tap, f, o->tap_corrupts);
	}
	if (debug_level() >= 2)
		hx_trace_enable(f->w, 1u << 16);
	hx_cable(f->w, 0, 1);
	hx_wire_set_latency(f->w, o->latency_ns);
	hx_wire_set_rate(f->w, 100000000000ull, 24);
	hx_wire_trusted(f->w, o->trusted_wire);
	hx_set_admin_timeout(f->w, FZ_ADMIN_TIMEOUT_NS);
	hx_set_admin_max_iter(f->w, FZ_ADMIN_ITERS);
	for (int d = 0; d < FZ_NDEV; d++)
		TRY(fz_setup_dev(f, d));
	TRY(fz_connect(f));
	f->total_iters = f->stuck_iters = f->instant_iters = 0;
	return 0;
}

/* QRNIC_FUZZ_DEBUG=1: what an input did (for seeds and crash inputs);
 * 2: also the trace of both devices */
static int debug_level(void)
{
	static int level = -1;

	if (level < 0) {
		const char *env = getenv("QRNIC_FUZZ_DEBUG");

		level = env ? atoi(env) : 0;
	}
	return level;
}

static void debug_summary(struct fz *f)
{
	struct hx_trace_rec tr[64];
	uint64_t seq = 0, first;
	uint32_t n;

	if (debug_level() < 1)
		return;
	while (debug_level() >= 2 && (n = hx_trace_read(f->w, seq, tr, 64, &first)) > 0) {
		for (uint32_t i = 0; i < n; i++)
			fprintf(stderr, "  t=%llu dev %u %s qpn %u psn %#x a %u b %u addr %#llx\n",
				(unsigned long long)tr[i].ev.t_ns, tr[i].dev,
				hx_trace_name(tr[i].ev.type), tr[i].ev.qpn, tr[i].ev.psn, tr[i].ev.a,
				tr[i].ev.b, (unsigned long long)tr[i].ev.addr);
		seq = first + n;
	}
	fprintf(stderr, "%s: %d actions, %llu iterations, t=%llu ns\n", f->name, f->action + 1,
		(unsigned long long)f->total_iters, (unsigned long long)hx_now(f->w));
	fprintf(stderr, "  wire: described=%llu; tap: frames=%llu headers=%llu fills=%llu "
		"corrupted=%llu icrc_pending=%llu described=%llu\n",
		(unsigned long long)hx_wire_stat(f->w, HX_WS_DESCRIBED),
		(unsigned long long)f->tap_frames, (unsigned long long)f->tap_headers,
		(unsigned long long)f->tap_fills, (unsigned long long)f->tap_corrupted,
		(unsigned long long)f->tap_pending, (unsigned long long)f->tap_refs);
	for (int d = 0; d < FZ_NDEV; d++) {
		fprintf(stderr, "  dev %d:", d);
		for (int s = 0; s < hx_stat_count(); s++)
			if (hx_dev_stat(f->w, d, s))
				fprintf(stderr, " %s=%llu", hx_stat_name(s),
					(unsigned long long)hx_dev_stat(f->w, d, s));
		fprintf(stderr, " status=%#llx\n",
			(unsigned long long)hx_reg_read(f->w, d, QRNIC_REG_STATUS, 4));
	}
}

void fz_world_free(struct fz *f)
{
	uint64_t maps, unmaps, live;

	debug_summary(f);
	hx_world_free(f->w);
	f->w = NULL;
	/* every device and frame buffer is gone (the model's free lists
	 * hold buffers whose mappings went back when they were freed) */
	hx_dma_refs_stats(&maps, &unmaps, &live);
	fz_ref_inputs += maps != f->maps0;
	fz_tap_frames_total += f->tap_frames;
	if (debug_level() >= 1)
		fprintf(stderr, "  dma refs: maps=%llu unmaps=%llu live=%llu\n",
			(unsigned long long)(maps - f->maps0),
			(unsigned long long)(unmaps - f->unmaps0), (unsigned long long)live);
	if (live) {
		fprintf(stderr, "\nqrnic %s: %llu payload mappings never released (dma_unmap) "
			"after the world was freed (%llu maps, %llu unmaps this input)\n", f->name,
			(unsigned long long)live, (unsigned long long)(maps - f->maps0),
			(unsigned long long)(unmaps - f->unmaps0));
		abort();
	}
}

/* ---- frames --------------------------------------------------------------------- */
static const uint8_t fz_opcodes[] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
	0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x64, 0x65,
};

void fz_fix_frame(uint8_t *f, size_t len)
{
	size_t off = QRNIC_ETH_HLEN, end;
	uint32_t crc;

	if (len < off + QRNIC_IPV4_HLEN)
		return;
	if (f[12] == 0x08 && f[13] == 0x00) {
		size_t ihl = (f[off] & 0xfu) * 4u;
		uint32_t sum = 0;

		if (ihl < QRNIC_IPV4_HLEN || len < off + ihl)
			return;
		f[off + 10] = f[off + 11] = 0;
		for (size_t i = 0; i < ihl; i += 2)
			sum += (uint32_t)f[off + i] << 8 | f[off + i + 1];
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		f[off + 10] = (uint8_t)(~sum >> 8);
		f[off + 11] = (uint8_t)~sum;
		end = off + ((size_t)f[off + 2] << 8 | f[off + 3]);
	} else if (f[12] == 0x86 && f[13] == 0xdd) {
		if (len < off + QRNIC_IPV6_HLEN + QRNIC_UDP_HLEN)
			return;
		f[off + QRNIC_IPV6_HLEN + 6] = f[off + QRNIC_IPV6_HLEN + 7] = 0;	/* no UDP checksum */
		end = off + QRNIC_IPV6_HLEN + ((size_t)f[off + 4] << 8 | f[off + 5]);
	} else {
		return;
	}
	if (end > len || end < off + QRNIC_ICRC_LEN)
		end = len;
	crc = qrnic_icrc(f, len);
	f[end - 4] = (uint8_t)crc;
	f[end - 3] = (uint8_t)(crc >> 8);
	f[end - 2] = (uint8_t)(crc >> 16);
	f[end - 1] = (uint8_t)(crc >> 24);
}

static uint32_t target_qpn(const struct fz_dev *fd, unsigned sel, uint32_t raw)
{
	switch (sel & 7) {
	case 0:
	case 1:	return fd->qp_rc;
	case 2:	return fd->qp_ud;
	case 3:	return fd->qp_gsi;
	case 4:	return fd->qp_err;
	case 5:	return fd->qp_rtr;
	case 6:	return fd->qp_reset;
	default: return raw & 0xffffff;
	}
}

/*
 * Record layout (all fields read whether used or not, zeros past the end):
 *   sel     opcode: fz_opcodes[sel % 23], or raw2 & 0xff when sel >= 0xf0
 *   tgt     [2:0] target QP (target_qpn), [3] IPv6, [4] a GID not ours,
 *           [5] broadcast destination MAC, [7:6] PSN mode
 *   fl      BTH SE, MigReq, AckReq, FECN, BECN, [5] pkey = raw, [7] TOS = raw
 *   mode    [1:0] payload length: consistent with the opcode, len, MTU, 0;
 *           [4] RETH length = raw, [5] DETH Q_Key = raw, [6] DETH SrcQP = raw2
 *   mut     [2:0] XOR mutations, [3] fix checksums and ICRC afterwards,
 *           [4] truncate by trunc % 32 bytes
 *   delta   u16, signed PSN offset from the cursor
 *   off     u16, offset in the MR; len u16
 *   raw     u32; raw2 u32
 *   keysel  [3:0] MR of the target, [6] virtual address = a, [7] rkey = raw2
 *   syn     AETH syndrome (MSN = raw)
 *   a, b    u64: atomic swap/add and compare, original value of an atomic ACK
 *   trunc   u8
 *   7 x (u16 position, u8 mask) XOR mutations
 *   payload bytes
 */
size_t fz_frame(struct fz *f, int dst, struct fz_in *in, uint8_t *buf, size_t cap)
{
	const struct fz_dev *fs = &f->d[1 - dst], *fd = &f->d[dst];
	static uint8_t payload[4096];
	struct qrnic_pkt p;
	uint8_t sel = fz_u8(in), tgt = fz_u8(in), fl = fz_u8(in), mode = fz_u8(in);
	uint8_t mut = fz_u8(in);
	int16_t delta = (int16_t)fz_u16(in);
	uint16_t off = fz_u16(in), len = fz_u16(in);
	uint32_t raw = fz_u32(in), raw2 = fz_u32(in);
	uint8_t keysel = fz_u8(in), syn = fz_u8(in);
	uint64_t a = fz_u64(in), b = fz_u64(in);
	uint8_t trunc = fz_u8(in);
	uint16_t xpos[7];
	uint8_t xmask[7];
	const struct fz_mr *m = fz_pick_mr(fd, keysel & 0xf);
	uint8_t opcode = sel >= 0xf0 ? (uint8_t)raw2 : fz_opcodes[sel % sizeof(fz_opcodes)];
	uint32_t fl_op = qrnic_opcode_flags(opcode), paylen, *cursor, npkt = 1;
	bool v6 = tgt & 8;
	size_t n;

	for (int i = 0; i < 7; i++) {
		xpos[i] = fz_u16(in);
		xmask[i] = fz_u8(in);
	}
	memset(&p, 0, sizeof(p));
	memcpy(p.dmac, (tgt & 0x20) ? (const uint8_t *)"\xff\xff\xff\xff\xff\xff"
				    : hx_mac(f->w, dst), 6);
	memcpy(p.smac, hx_mac(f->w, 1 - dst), 6);
	p.ipv6 = v6;
	memcpy(p.sgid, fs->gid[v6], 16);
	memcpy(p.dgid, fd->gid[v6], 16);
	if (tgt & 0x10)
		p.dgid[15] ^= (uint8_t)(raw | 1);
	p.hop_limit = 64;
	p.traffic_class = (fl & 0x80) ? (uint8_t)raw : 0;
	p.flow_label = raw2 & 0xfffff;
	p.udp_sport = (uint16_t)(0xc000 | (raw & 0x3fff));
	p.opcode = opcode;
	p.se = fl & 1;
	p.migreq = fl & 2;
	p.ackreq = fl & 4;
	p.fecn = fl & 8;
	p.becn = fl & 16;
	p.pkey = (fl & 0x20) ? (uint16_t)raw : 0xffff;
	p.dqpn = target_qpn(fd, tgt, raw);

	/* payload length */
	switch (mode & 3) {
	case 0:
		if (!(fl_op & QRNIC_HDR_PAYLOAD))
			paylen = 0;
		else if (fl_op & QRNIC_HDR_MIDDLE || (fl_op & (QRNIC_HDR_FIRST | QRNIC_HDR_LAST)) ==
			 QRNIC_HDR_FIRST)
			paylen = FZ_MTU_BYTES;
		else
			paylen = len % (((fl_op & QRNIC_HDR_DETH) ? 1024u : FZ_MTU_BYTES) + 1);
		break;
	case 1:	paylen = len % (sizeof(payload) + 1); break;
	case 2:	paylen = FZ_MTU_BYTES; break;
	default: paylen = 0; break;
	}

	/* extension headers: keys and addresses of the target's MRs */
	p.reth_va = (keysel & 0x40) ? a : m->iova + off % m->len;
	p.reth_rkey = (keysel & 0x80) ? raw2 : m->key;
	p.reth_len = (mode & 0x10) ? raw : (fl_op & QRNIC_HDR_PAYLOAD) && (fl_op & QRNIC_HDR_LAST) &&
		     !(mode & 3) ? paylen : len;	/* an ONLY packet: its payload */
	if (opcode == QRNIC_OP_RC_READ_REQ)
		npkt = p.reth_len ? (p.reth_len + FZ_MTU_BYTES - 1) / FZ_MTU_BYTES : 1;
	p.aeth_syndrome = syn;
	p.aeth_msn = raw & 0xffffff;
	p.atomic_va = (keysel & 0x40) ? a : m->iova + ((off % m->len) & ~7u);
	p.atomic_rkey = p.reth_rkey;
	p.atomic_swap_add = a;
	p.atomic_cmp = b;
	p.atomic_ack_orig = b;
	p.imm = raw2;
	p.deth_qkey = (mode & 0x20) ? raw : FZ_QKEY;
	p.deth_sqpn = (mode & 0x40) ? raw2 & 0xffffff : fs->qp_ud;

	/* PSN: relative to the cursor of the expected request or response */
	cursor = (fl_op & QRNIC_HDR_RESPONSE) ? &f->resp_psn : &f->req_psn;
	switch (tgt >> 6) {
	case 0:
		p.psn = *cursor + (uint32_t)(int32_t)delta;
		if (!delta && p.dqpn == fd->qp_rc)
			*cursor += (fl_op & QRNIC_HDR_REQUEST) ? npkt :
				   (fl_op & (QRNIC_HDR_READ | QRNIC_HDR_ATOMIC)) ? 1 : 0;
		break;
	case 1:	p.psn = raw; break;
	case 2:	p.psn = *cursor - 1 - (uint32_t)(delta & 0xff); break;
	default: p.psn = *cursor + (uint32_t)(int32_t)delta; break;
	}
	*cursor &= 0xffffff;
	p.psn &= 0xffffff;

	fz_take(in, payload, paylen);
	n = qrnic_wire_build(&p, payload, paylen, buf, cap);
	if (!n) {
		/* an opcode the builder refuses (unknown, or a payload it does
		 * not carry): a SEND frame with the opcode byte replaced */
		p.opcode = QRNIC_OP_RC_SEND_ONLY;
		n = qrnic_wire_build(&p, payload, paylen, buf, cap);
		if (!n)
			return 0;
		buf[QRNIC_ETH_HLEN + (v6 ? QRNIC_IPV6_HLEN : QRNIC_IPV4_HLEN) + QRNIC_UDP_HLEN] = opcode;
		fz_fix_frame(buf, n);
	}
	for (int i = 0; i < (mut & 7); i++)
		buf[xpos[i] % n] ^= xmask[i] ? xmask[i] : 0xff;
	if (mut & 8)
		fz_fix_frame(buf, n);
	if (mut & 16)
		n -= trunc % 32 < n ? trunc % 32 : n;
	return n;
}

/* ---- traffic ------------------------------------------------------------------------ */
void fz_traffic(struct fz *f, int d, struct fz_in *in)
{
	struct fz_dev *fd = &f->d[d], *fp = &f->d[1 - d];
	uint8_t s = fz_u8(in), o = fz_u8(in), fl = fz_u8(in), ms = fz_u8(in), rs = fz_u8(in);
	uint32_t off = fz_u16(in), len = fz_u16(in);
	uint64_t roff = fz_u16(in), a = fz_u64(in);
	const struct fz_mr *lm = fz_pick_mr(fd, ms), *rm = fz_pick_mr(fp, rs);
	static const uint8_t inl[256 - sizeof(struct qrnic_send_wqe)];	/* the base QPs' stride */
	uint32_t qpn, op, flags = QRNIC_WQE_F_SIGNALED, key = lm->key, rqpn = fp->qp_ud;
	uint64_t addr, raddr;
	bool ud = false;

	switch (s % 8) {
	case 3: qpn = fd->qp_ud; ud = true; break;
	case 4: qpn = fd->qp_gsi; ud = true; rqpn = 1; break;
	case 5: qpn = fd->qp_err; break;
	case 6: qpn = fd->qp_rtr; break;
	case 7: qpn = fd->qp_reset; break;
	default: qpn = fd->qp_rc; break;
	}
	op = ud ? QRNIC_WR_SEND + (o & 1) : o % 7u;
	off = (uint32_t)(off % lm->len);
	len = len % (ud ? 1025u : 8193u);
	if (len > lm->len - off)
		len = (uint32_t)(lm->len - off);
	if (op == QRNIC_WR_ATOMIC_CMP_AND_SWP || op == QRNIC_WR_ATOMIC_FETCH_AND_ADD) {
		off &= ~7u;
		len = 8;
	}
	roff = len <= rm->len ? roff % (rm->len - len + 1) : 0;
	if (len == 8)
		roff &= ~7ull;
	addr = lm->iova + off;
	raddr = rm->iova + roff;
	flags |= fl & (QRNIC_WQE_F_SOLICITED | QRNIC_WQE_F_FENCE);
	if ((fl & 0x80) && len <= sizeof(inl) && op <= QRNIC_WR_SEND_WITH_IMM)
		flags |= QRNIC_WQE_F_INLINE;
	hx_post_send(f->w, d, qpn, op, flags, a, 1, &addr, &len, &key, inl, len, (uint32_t)a,
		     rm->key, raddr, a, ~a, fd->ah, rqpn, FZ_QKEY, 1);
}

void fz_service(struct fz *f, int d, struct fz_in *in)
{
	struct fz_dev *fd = &f->d[d];
	uint8_t what = fz_left(in) ? fz_u8(in) : 1;
	uint8_t buf[64 * sizeof(struct qrnic_cqe)];
	const struct fz_mr *m = &fd->mr[0];

	if ((what & 1) && fd->nmr) {
		/* RC: 4 KiB; UD and GSI: a GRH and 1 KiB */
		const uint32_t qpn[3] = { fd->qp_rc, fd->qp_ud, fd->qp_gsi };

		for (int i = 0; i < 3; i++) {
			uint32_t len = i ? QRNIC_GRH_BYTES + 1024 : 4096;
			uint64_t addr = m->iova + (uint64_t)(i * 8192 + (what >> 4) * 1024) % (m->len - len);

			hx_post_recv(f->w, d, qpn[i], 0x1000 + (uint64_t)i, 1, &addr, &len, &m->key, 1);
		}
	}
	if (what & 2) {
		hx_poll_cq(f->w, d, fd->cq, buf, 64);
		hx_poll_cq(f->w, d, fd->cq_small, buf, 64);
		hx_arm_cq(f->w, d, fd->cq, (what >> 3) & 1);
	}
	if (what & 4) {
		hx_poll_eq(f->w, d, fd->eq_async, buf, 64);
		hx_poll_eq(f->w, d, fd->eq_comp, buf, 64);
		hx_arm_eq(f->w, d, fd->eq_async);
		hx_arm_eq(f->w, d, fd->eq_comp);
	}
}
