/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic test harness: see harness.h.  Uses only the public model API
 * (qrnic_model.h) and the ABI headers: the mini driver below drives each
 * device exactly as a guest driver would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "qrnic_fault.h"
#include "qrnic_firmware.h"
#include "qrnic_pcap.h"

#define HX_LOG_KEEP	64
#define HX_LOG_LEN	256
#define HX_TP_KEEP	64	/* err_/ub_ trace points kept per device */
#define HX_MAX_RULES	64
#define HX_MAX_PATCH	16
#define HX_MAX_DENY	16
#define HX_RX_BURST	256	/* frames delivered to one device per loop iteration */
#define HX_PAGE		4096ull

struct hx_frame {
	struct hx_frame *next;
	uint64_t deliver_at;
	int src, dst;
	int hold_left;
	uint8_t to_switch;	/* crossing the cable to the switch (hx_switch_attach) */
	uint8_t hop;		/* leaf-spine: 0 at the first switch, 1 the spine, 2 the far leaf */
	int8_t spine;		/* leaf-spine: the ECMP choice */
	struct hx_swport *pfc_to;	/* leaf-spine: a switch's 802.1Qbb frame for this port */
	int64_t log_idx;	/* frame log entry, -1 none */
	uint32_t len;
	uint8_t *data;		/* a model frame buffer (qrnic_frame_buf_alloc) */
	uint8_t pristine;	/* the device's own buffer, no byte changed (hx_set_vouch) */
};

struct hx_rule {
	int src;
	int64_t index;
	int opcode;
	int64_t psn;
	int64_t dqpn;
	uint32_t skip;
	int64_t count;
	int action;
	uint32_t arg, arg2;
	uint64_t matched, fired;
};

struct hx_patch {
	uint32_t off, len;
	uint8_t bytes[64];
};

struct hx_cq_rec {
	bool valid;
	uint32_t cqn, uctx, eqn;
	uint8_t log;
	uint8_t flags;		/* QRNIC_CQ_F_*: TIMESTAMP = 64-byte CQEs */
	uint64_t ring, dbrec;
	uint32_t ci;
	bool pl;		/* handed to the device as a page list (ring_at) */
};

struct hx_srq_rec {
	bool valid;
	uint32_t srqn, uctx;
	uint8_t log, shift;
	uint64_t ring, dbrec;
	uint32_t pi;
	bool pl;
};

struct hx_eq_rec {
	bool valid;
	uint32_t eqn;
	uint8_t log;
	uint16_t vector;
	uint64_t ring;
	uint32_t ci;
};

struct hx_qp_rec {
	bool valid;
	uint32_t qpn, uctx, pdn, type, scq, rcq;
	uint64_t sq_addr, rq_addr;
	uint8_t sq_log, sq_shift, rq_log, rq_shift;
	uint32_t sq_pi, sq_ci, rq_pi, rq_ci;
	bool sq_pl, rq_pl;
	uint64_t rq_dbrec;	/* ABI 1.10: RQ producer record, 0 = doorbells */
	uint64_t sq_dbrec;	/* ABI 1.11: SQ record, 0 = doorbells */
};

struct hx_mr_rec {
	bool valid;
	uint32_t key, pdn, access, flags;
	uint64_t iova, length;
	uint32_t page_shift, npages;
	uint64_t *pages;
	uint64_t pbl_addr;
	struct hx_mr_rec *next;
};

struct hx_logmsg {
	int level;
	char msg[HX_LOG_LEN];
};

struct hx_tprec {
	uint32_t tp;
	uint64_t args[QRNIC_TP_MAX_FIELDS];
};

struct hx_dev {
	struct hx_world *w;
	int idx;
	struct qrnic_dev *dev;
	struct qrnic_config cfg;
	int refs;		/* hx_set_dma_refs() mode its ops were chosen by */

	/* host memory */
	uint8_t *mem;
	uint64_t base, size, brk;
	uint64_t deny_addr[HX_MAX_DENY], deny_len[HX_MAX_DENY];
	int ndeny;
	uint64_t dma[5];
	bool watched;		/* its DMA writes count in w->watched_writes */
	uint32_t rx_burst;	/* frames deliver() gave it in call rx_burst_call */
	uint64_t rx_burst_call;
	bool ring_pl;		/* rings of a page or more go as page lists (ABI 1.8) */
	bool rq_dbrec;		/* QPs' RQs get producer records (ABI 1.10) */
	bool sq_dbrec;		/* QPs' SQs get records (ABI 1.11) */
	uint64_t sq_db_skipped;	/* posts that rang no doorbell: the flag was set */
	/* TOCTOU trap (hx_dma_trap): after the first DMA read that overlaps
	 * [trap_addr, +trap_len), the guest's rewrite is applied to memory;
	 * later reads overlapping the range are counted as re-fetches. */
	uint64_t trap_addr, trap_len, trap_waddr;
	uint8_t *trap_bytes;
	uint64_t trap_nbytes;
	int trap_state;		/* 0 off, 1 armed, 2 fired */
	uint64_t trap_refetch;
	uint64_t trap_raddr, trap_rlen;	/* the read that fired it */
	/* DMA write log (hx_dma_log_*): every write's (address, length) */
	uint64_t *wlog;
	uint64_t wlog_n, wlog_cap, wlog_lost;

	/* host services */
	bool sched;		/* its timer deadline: w->dl[idx] */
	bool selfcheck;		/* hx_dev_selfcheck */
	/* hx_set_lazy_icrc, hx_set_trains, hx_set_db_batch: host settings
	 * hx_dev_snapshot gives the new device, as a migration's target has
	 * the same properties */
	bool lazy_icrc, trains, db_batch;
	char tm_profile[32], tm_over[512];	/* hx_set_timing, for hx_dev_snapshot */
	uint64_t *irqs;
	unsigned nvec;
	uint64_t irq_total;
	struct hx_logmsg logs[HX_LOG_KEEP];
	uint64_t nlogs;
	uint64_t log_level_count[3];
	struct hx_tprec tps[HX_TP_KEEP];
	uint64_t ntps;
	int peer;
	uint64_t tx_seq;

	/* driver */
	struct {
		bool alloc;
		uint64_t sq, cq;
		uint8_t log;
		uint32_t pi, ci;
		uint16_t next_id;
		uint8_t last_cqe[QRNIC_AQ_CQE_SIZE];
	} aq;
	uint64_t scratch;
	struct hx_patch cmd_patch[HX_MAX_PATCH];
	int ncmd_patch;
	struct hx_patch wqe_patch[HX_MAX_PATCH];
	int nwqe_patch;
	struct hx_cq_rec *cqs;
	uint32_t ncqs;
	struct hx_srq_rec *srqs;
	uint32_t nsrqs;
	struct hx_eq_rec *eqs;
	uint32_t neqs;
	struct hx_qp_rec *qps;
	uint32_t nqps;
	struct hx_mr_rec *mrs;	/* newest first */
};

struct hx_world {
	uint64_t now;
	/* The earliest of the devices' deadlines, or, while dl_stale, a
	 * bound below it (the earliest one moved later: the devices are
	 * scanned again only when the run loop needs the exact figure,
	 * min_deadline_exact, not on every re-arm of a timer). */
	uint64_t min_deadline;
	bool dl_stale;
	/* While the run loop fires dev[firing]'s timer (-1: none), its pass
	 * over dl[] finds the earliest; dl_other: another device's deadline
	 * was set meanwhile, so the pass's figure may be wrong. */
	int firing;
	bool dl_other;
	uint64_t sched_mask;	/* bit i: dev[i]->sched (the run loop visits only those) */
	/* Per device, packed for the run loop's scans (one cache line for
	 * many devices: with 17 devices, scans of each device's record were
	 * a tenth of a 16:1 incast's time): dl[i] is dev[i]'s timer deadline
	 * (UINT64_MAX: none; deadline_set keeps it); bit i of awake clear:
	 * dev[i] was found not busy at an idle instant and has not been
	 * entered since (see run_loop; a mask, so that the idle scan of an
	 * instant visits only the devices entered in it). */
	uint64_t dl[HX_MAX_DEV];
	uint64_t awake;
	uint64_t mem_size;
	uint64_t seed;
	int ndev;
	struct hx_dev *dev[HX_MAX_DEV];
	char err[256];
	uint64_t admin_timeout_ns;
	uint64_t admin_max_iter;	/* run loop iterations an admin command may wait */
	uint64_t last_iters;
	uint64_t deliver_calls;	/* deliver()'s calls with frames due */
	uint64_t lc[HX_LC_COUNT];	/* run-loop counters since the world was made (hx_loop_count) */
	uint64_t watched_writes;	/* DMA writes by devices hx_watch_writes() named */

	/* wire */
	uint64_t latency;
	uint64_t rate_bps;			/* 0: infinite (no serialization delay) */
	uint32_t rate_overhead;			/* bytes added to each frame for the rate */
	uint32_t ser_len[2];			/* wire_arrival: the last two frame lengths */
	uint64_t ser_ps[2];			/* ... and their serialization times */
	uint64_t tx_free_ps[HX_MAX_DEV];	/* when each device's port is free again */
	struct hx_frame *fl_head, *fl_tail;	/* in flight, sorted by deliver_at */
	struct hx_frame *fl_hint;		/* in flight: inflight_insert's last (or NULL) */
	struct hx_frame *held;			/* held (reorder) frames */
	struct hx_frame *spare_frames;		/* free records (frame_take) */
	struct hx_rule rules[HX_MAX_RULES];
	int nrules;
	uint32_t loss_ppm, dup_ppm, reorder_ppm, corrupt_ppm;
	uint64_t rng;
	uint64_t tx_seq;
	uint64_t ws[HX_WS_COUNT];
	struct qrnic_pcap *pcap;
	bool trusted;				/* hx_wire_trusted() asked for it */
	bool vouch;				/* hx_set_vouch() */
	int dma_refs;				/* hx_set_dma_refs(): the next devices' ops */
	/* hx_set_tx_tap(): a reader of the frames devices hand over */
	int (*tap)(void *ctx, int src, uint8_t *buf, uint32_t len);
	void *tap_ctx;
	bool tap_corrupts;
	bool faults_used;			/* a fault rule or plan was ever added */

	/* switch (hx_switch_attach) */
	struct hx_switch {
		bool on;
		struct hx_switch_cfg c;
		uint64_t rng, t0_ps;
		uint8_t mac[HX_MAX_DEV][6];
		struct hx_swport {
			/* which switch it is on (its buffer): 0 with one switch,
			 * leaf l, or leaves + spine s; its host (-1: a fabric
			 * port); a fabric port's peer: the port at the other end
			 * of its link (where its XOFFs go and whose XOFFs pause it) */
			int8_t node, host;
			struct hx_swport *peer;
			uint8_t mac[6];		/* source of its 802.1Qbb frames */
			uint64_t free_ps;	/* output transmitter busy until (ps) */
			uint64_t last_ps;	/* the queue integral is up to here */
			double area;		/* queue bytes x ps */
			struct hx_switch_stats st;
			uint8_t paused;		/* PFC: priorities its host was sent XOFF for */
			uint64_t pause_ps[8];	/* since when */
			uint64_t refresh_ps[8];	/* when the XOFF is sent again */
			uint64_t ing_p[8];	/* bytes from this port in the buffer, per priority */
			uint64_t eg_p[8];	/* bytes queued to leave this port, per priority */
			struct hx_switch_queue_stats qs[8];
			/* prio_queues: the frames of each priority (linked by
			 * next), their bytes, and until when the host paused it */
			struct hx_frame *pq_head[8], *pq_tail[8];
			uint64_t pq_bytes[8], pq_total;
			uint64_t peer_until_ps[8], peer_since_ps[8];
			/* ets: DWRR deficit per queue (bytes), the queue whose
			 * turn it is and whether it has had its quantum this turn */
			uint64_t dw_def[8];
			uint8_t dw_cur, dw_fresh;
			/* PFC: frames in the queue, for the ingress counts */
			uint64_t *f_done;
			uint32_t *f_len;
			int *f_in;		/* ingress port << 3 | priority */
			uint32_t f_head, f_n, f_cap;
		} port[HX_MAX_DEV];
		/* leaf-spine: up[l][s] leaf l to spine s, dn[s][l] spine s to leaf l */
		struct hx_swport up[HX_SW_MAX_TIER][HX_SW_MAX_TIER], dn[HX_SW_MAX_TIER][HX_SW_MAX_TIER];
		bool track;		/* the FIFO of queued frames is kept (PFC, shared buffer) */
		/* frames wait in per-(port, priority) queues (prio_queues; and
		 * leaf-spine with PFC or a shared buffer: a paused fabric queue
		 * must hold its frames) */
		bool pq;
		/* shared buffer: bytes in each switch's (node's) buffer */
		uint64_t used[2 * HX_SW_MAX_TIER], used_max[2 * HX_SW_MAX_TIER];
		/* external ports (hx_switch_ext, qrnic-switch): frames come in
		 * by hx_switch_port_rx and leave through ext_out instead of
		 * reaching the devices; destinations by learned source MACs */
		void (*ext_out)(void *opaque, int port, const uint8_t *f, uint32_t len);
		void *ext_opaque;
		struct hx_sw_learn { uint8_t mac[6]; int8_t port; } learn[HX_SW_LEARN];
		uint32_t nlearn, learn_next;
		struct hx_switch_ext_stats ext[HX_MAX_DEV];
	} sw;

	/* frame log */
	uint32_t fl_max, fl_count;
	struct hx_frame_info *fl_info;
	uint8_t **fl_data;

	/* trace */
	struct hx_trace_rec *trace;
	uint32_t trace_cap;
	uint64_t trace_total;
};

static void hx_err(hx_world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hx_err(hx_world *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
}

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static struct hx_dev *D(hx_world *w, int d)
{
	if (!w || d < 0 || d >= w->ndev)
		return NULL;
	return w->dev[d];
}

/* ---- host memory ------------------------------------------------------------ */
static bool mem_range_ok(struct hx_dev *h, uint64_t addr, uint64_t len)
{
	if (addr < h->base || len > h->size || addr - h->base > h->size - len)
		return false;
	return true;
}

static bool mem_denied(struct hx_dev *h, uint64_t addr, uint64_t len)
{
	for (int i = 0; i < h->ndeny; i++) {
		uint64_t a = h->deny_addr[i], l = h->deny_len[i];

		if (addr < a + l && a < addr + len)
			return true;
	}
	return false;
}

static uint8_t *mem_ptr(struct hx_dev *h, uint64_t addr)
{
	return h->mem + (addr - h->base);
}

/* Host memory: anonymous pages the kernel backs (with zeros) when first
 * touched -- what calloc does for such sizes, said outright: under a
 * sanitizer, calloc/free of it would also write its whole shadow (1/8 of
 * its size) at every world's start and end, most of a fuzzer's time. */
static uint8_t *mem_map(uint64_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void mem_unmap(uint8_t *mem, uint64_t size)
{
	if (mem)
		munmap(mem, size);
}

/* Descriptors (WQEs, SGEs: up to a few hundred bytes) are validated field
 * by field right after the device reads them: copied with 8-byte moves, a
 * 4-byte field load is served from one store; after memcpy's 32- and
 * 64-byte stores it stalled on store forwarding (1.5 % of qrnic-sim). */
__attribute__((optimize("no-tree-vectorize")))
static void copy_small(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v;

		memcpy(&v, src + i, 8);
		memcpy(dst + i, &v, 8);
	}
	for (; i < len; i++)
		dst[i] = src[i];
}

static int op_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
	struct hx_dev *h = opaque;

	if (!mem_range_ok(h, addr, len) || mem_denied(h, addr, len)) {
		h->dma[4]++;
		return -1;
	}
	if (len <= 256)
		copy_small(buf, mem_ptr(h, addr), len);
	else
		memcpy(buf, mem_ptr(h, addr), len);
	h->dma[0]++;
	h->dma[2] += len;
	if (h->trap_state == 1 && addr < h->trap_addr + h->trap_len && h->trap_addr < addr + len) {
		/* the guest rewrites memory right after the device read it:
		 * at trap_waddr, or (trap_waddr ~0) the bytes just read, with
		 * the pattern repeated */
		h->trap_raddr = addr;
		h->trap_rlen = len;
		if (h->trap_waddr == UINT64_MAX) {
			for (uint64_t i = 0; i < len; i++)
				*((uint8_t *)mem_ptr(h, addr) + i) = h->trap_bytes[i % h->trap_nbytes];
		} else {
			memcpy(mem_ptr(h, h->trap_waddr), h->trap_bytes, h->trap_nbytes);
		}
		h->trap_state = 2;
	} else if (h->trap_state == 2 && addr < h->trap_raddr + h->trap_rlen &&
		   h->trap_raddr < addr + len) {
		h->trap_refetch++;	/* the same bytes read again */
	}
	return 0;
}

/* Payloads by reference: the device reads them when the frame arrives
 * (see qrnic_host_ops.dma_map). */
static const void *op_dma_map(void *opaque, uint64_t addr, size_t len)
{
	struct hx_dev *h = opaque;

	if (!mem_range_ok(h, addr, len) || mem_denied(h, addr, len))
		return NULL;	/* dma_read then counts and reports it */
	h->dma[0]++;
	h->dma[2] += len;
	return mem_ptr(h, addr);
}

/* Checked payload references (hx_set_dma_refs HX_REFS_CHECKED), for the
 * fuzzers: dma_map copies the bytes into a shadow block of its own and
 * returns a pointer there, dma_unmap must give back exactly a live mapping
 * (else abort), and a block is freed when its last mapping goes back, so
 * that under AddressSanitizer a read of released bytes is a use after free
 * (and, while other mappings keep the block, the released bytes are
 * poisoned).  The model promises no more than that (qrnic_model.h: the
 * host holds something for each pointer until it comes back, exactly
 * once; after that nothing reads it).  A map that continues the previous
 * one (the next bytes of host memory, room left in its block) gets the
 * next bytes of the block, so that references made of several mappings
 * stay contiguous as they are in QEMU's RAM.  The bytes are those at map
 * time: the model reads them when the frame arrives, which verbs allow
 * either way (the buffer may not change until the request completes).
 * dma_unmap has no opaque (it may come after the device is gone), so the
 * table is the process's; a mutex, for harness users with threads. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HX_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(HX_ASAN)
#define HX_ASAN 1
#endif
#ifdef HX_ASAN
#include <sanitizer/asan_interface.h>
#define HX_POISON(p, n)		ASAN_POISON_MEMORY_REGION(p, n)
#define HX_UNPOISON(p, n)	ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define HX_POISON(p, n)		((void)(p), (void)(n))
#define HX_UNPOISON(p, n)	((void)(p), (void)(n))
#endif
#include <pthread.h>

#define HX_SHADOW_BLOCK	8192u

struct hx_shadow {
	uint8_t *mem;
	size_t cap, used;
	uint32_t refs;
};

static struct {
	pthread_mutex_t lock;
	struct hx_refmap { const void *ptr; size_t len; struct hx_shadow *blk; } *live;
	size_t nlive, caplive;
	struct hx_shadow *last;		/* the block the next contiguous map may use */
	const void *last_host;		/* host address the next contiguous map starts at */
	uint64_t maps, unmaps;
} hx_refs = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* What every checked mapping starts with: the range's checks, then
 * hx_refs.lock taken and a row of the live table free.  The bytes' host
 * address, or NULL with the lock not held. */
static const uint8_t *refs_begin(struct hx_dev *h, uint64_t addr, size_t len)
{
	if (!len || !mem_range_ok(h, addr, len) || mem_denied(h, addr, len))
		return NULL;	/* dma_read then counts and reports it */
	pthread_mutex_lock(&hx_refs.lock);
	if (hx_refs.nlive == hx_refs.caplive) {
		size_t nc = hx_refs.caplive ? 2 * hx_refs.caplive : 256;
		struct hx_refmap *nl = realloc(hx_refs.live, nc * sizeof(*nl));

		if (!nl) {
			pthread_mutex_unlock(&hx_refs.lock);
			return NULL;
		}
		hx_refs.live = nl;
		hx_refs.caplive = nc;
	}
	return mem_ptr(h, addr);
}

/* ... and ends with: the mapping p (of shadow block b, or NULL) in the
 * table, the lock given back, the device's DMA read counted. */
static const void *refs_end(struct hx_dev *h, const void *p, size_t len, struct hx_shadow *b)
{
	hx_refs.live[hx_refs.nlive++] = (struct hx_refmap){ p, len, b };
	hx_refs.maps++;
	pthread_mutex_unlock(&hx_refs.lock);
	h->dma[0]++;
	h->dma[2] += len;
	return p;
}

/* HX_REFS_LIVE: a pointer into the simulated memory, as QEMU's mapping of
 * guest RAM is, each checked back as the shadow ones are (no shadow: the
 * bytes are read when the frame arrives, so a test can tell a payload
 * still by reference from one copied on the way). */
static const void *op_dma_map_live(void *opaque, uint64_t addr, size_t len)
{
	struct hx_dev *h = opaque;
	const uint8_t *p = refs_begin(h, addr, len);

	return p ? refs_end(h, p, len, NULL) : NULL;
}

static const void *op_dma_map_checked(void *opaque, uint64_t addr, size_t len)
{
	struct hx_dev *h = opaque;
	const uint8_t *src;
	struct hx_shadow *b;
	uint8_t *p;

	src = refs_begin(h, addr, len);
	if (!src)
		return NULL;
	b = hx_refs.last;
	if (!b || hx_refs.last_host != src || b->cap - b->used < len) {
		b = malloc(sizeof(*b));
		if (b)
			b->mem = malloc(len > HX_SHADOW_BLOCK ? len : HX_SHADOW_BLOCK);
		if (!b || !b->mem) {
			free(b);
			pthread_mutex_unlock(&hx_refs.lock);
			return NULL;
		}
		b->cap = len > HX_SHADOW_BLOCK ? len : HX_SHADOW_BLOCK;
		b->used = 0;
		b->refs = 0;
		HX_POISON(b->mem, b->cap);
	}
	p = b->mem + b->used;
	HX_UNPOISON(p, len);
	memcpy(p, src, len);
	b->used += len;
	b->refs++;
	hx_refs.last = b;
	hx_refs.last_host = src + len;
	return refs_end(h, p, len, b);
}

static void op_dma_unmap_checked(const void *ptr, size_t len)
{
	struct hx_shadow *b = NULL;
	size_t i;

	pthread_mutex_lock(&hx_refs.lock);
	for (i = hx_refs.nlive; i-- > 0;) {
		if (hx_refs.live[i].ptr == ptr && hx_refs.live[i].len == len)
			break;
	}
	if (i == SIZE_MAX) {
		fprintf(stderr, "\nqrnic harness: dma_unmap(%p, %zu) of no live mapping "
			"(released twice, or never mapped; %zu live)\n", ptr, len, hx_refs.nlive);
		abort();
	}
	b = hx_refs.live[i].blk;
	hx_refs.live[i] = hx_refs.live[--hx_refs.nlive];
	hx_refs.unmaps++;
	if (!b) {		/* HX_REFS_LIVE: the simulated memory itself */
		pthread_mutex_unlock(&hx_refs.lock);
		return;
	}
	HX_POISON((void *)(uintptr_t)ptr, len);
	if (--b->refs == 0) {
		if (hx_refs.last == b)
			hx_refs.last = NULL;
		HX_UNPOISON(b->mem, b->cap);
		free(b->mem);
		free(b);
	}
	pthread_mutex_unlock(&hx_refs.lock);
}

void hx_dma_refs_stats(uint64_t *maps, uint64_t *unmaps, uint64_t *live)
{
	pthread_mutex_lock(&hx_refs.lock);
	if (maps)
		*maps = hx_refs.maps;
	if (unmaps)
		*unmaps = hx_refs.unmaps;
	if (live)
		*live = hx_refs.nlive;
	pthread_mutex_unlock(&hx_refs.lock);
}

static int op_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
	struct hx_dev *h = opaque;

	if (!mem_range_ok(h, addr, len) || mem_denied(h, addr, len)) {
		h->dma[4]++;
		return -1;
	}
	/* memmove: buf may be a payload by reference in this same memory */
	memmove(mem_ptr(h, addr), buf, len);
	if (h->wlog) {
		if (h->wlog_n < h->wlog_cap) {
			h->wlog[2 * h->wlog_n] = addr;
			h->wlog[2 * h->wlog_n + 1] = len;
			h->wlog_n++;
		} else {
			h->wlog_lost++;
		}
	}
	h->dma[1]++;
	h->dma[3] += len;
	h->w->watched_writes += h->watched;
	return 0;
}

uint64_t hx_mem_base(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	return h ? h->base : 0;
}

uint64_t hx_mem_size(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	return h ? h->size : 0;
}

uint64_t hx_mem_alloc(hx_world *w, int d, uint64_t size, uint64_t align)
{
	struct hx_dev *h = D(w, d);
	uint64_t a;

	if (!h)
		return 0;
	if (align < 64)
		align = 64;
	if (align & (align - 1))
		return 0;
	a = (h->base + h->brk + align - 1) & ~(align - 1);
	if (size == 0)
		size = 1;
	if (a - h->base > h->size || size > h->size - (a - h->base)) {
		hx_err(w, "dev %d: simulated memory exhausted (%llu bytes asked)", d,
		       (unsigned long long)size);
		return 0;
	}
	h->brk = a - h->base + size;
	memset(mem_ptr(h, a), 0, size);
	return a;
}

uint64_t hx_mem_mark(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	return h ? h->brk : 0;
}

int hx_mem_release(hx_world *w, int d, uint64_t mark)
{
	struct hx_dev *h = D(w, d);

	if (!h || mark > h->brk)
		return HX_E_INVAL;
	h->brk = mark;
	return 0;
}

int hx_mem_read(hx_world *w, int d, uint64_t addr, void *buf, uint64_t len)
{
	struct hx_dev *h = D(w, d);

	if (!h || !mem_range_ok(h, addr, len))
		return -1;
	memcpy(buf, mem_ptr(h, addr), len);
	return 0;
}

int hx_mem_write(hx_world *w, int d, uint64_t addr, const void *buf, uint64_t len)
{
	struct hx_dev *h = D(w, d);

	if (!h || !mem_range_ok(h, addr, len))
		return -1;
	memcpy(mem_ptr(h, addr), buf, len);
	return 0;
}

int hx_mem_deny(hx_world *w, int d, uint64_t addr, uint64_t len)
{
	struct hx_dev *h = D(w, d);

	if (!h || h->ndeny >= HX_MAX_DENY)
		return HX_E_INVAL;
	h->deny_addr[h->ndeny] = addr;
	h->deny_len[h->ndeny] = len;
	h->ndeny++;
	return 0;
}

int hx_dma_trap(hx_world *w, int d, uint64_t addr, uint64_t len, uint64_t waddr,
		const void *bytes, uint64_t nbytes)
{
	struct hx_dev *h = D(w, d);
	uint8_t *copy;

	if (!h)
		return HX_E_INVAL;
	free(h->trap_bytes);
	h->trap_bytes = NULL;
	h->trap_state = 0;
	h->trap_refetch = 0;
	if (!len)
		return 0;
	if (!mem_range_ok(h, addr, len) || !nbytes ||
	    (waddr != UINT64_MAX && !mem_range_ok(h, waddr, nbytes)))
		return HX_E_INVAL;
	copy = malloc(nbytes);
	if (!copy)
		return HX_E_NOMEM;
	memcpy(copy, bytes, nbytes);
	h->trap_bytes = copy;
	h->trap_nbytes = nbytes;
	h->trap_addr = addr;
	h->trap_len = len;
	h->trap_waddr = waddr;
	h->trap_state = 1;
	return 0;
}

int hx_dma_trap_state(hx_world *w, int d, uint64_t *refetches)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return -1;
	if (refetches)
		*refetches = h->trap_refetch;
	return h->trap_state;
}

int hx_dma_log_start(hx_world *w, int d, uint64_t cap)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return HX_E_INVAL;
	free(h->wlog);
	h->wlog = NULL;
	h->wlog_n = h->wlog_cap = h->wlog_lost = 0;
	if (!cap)
		return 0;
	h->wlog = calloc(cap, 2 * sizeof(uint64_t));
	if (!h->wlog)
		return HX_E_NOMEM;
	h->wlog_cap = cap;
	return 0;
}

uint64_t hx_dma_log_count(hx_world *w, int d, uint64_t *lost)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return 0;
	if (lost)
		*lost = h->wlog_lost;
	return h->wlog_n;
}

int hx_dma_log_get(hx_world *w, int d, uint64_t i, uint64_t *addr, uint64_t *len)
{
	struct hx_dev *h = D(w, d);

	if (!h || i >= h->wlog_n)
		return -1;
	*addr = h->wlog[2 * i];
	*len = h->wlog[2 * i + 1];
	return 0;
}

void hx_mem_deny_clear(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	if (h)
		h->ndeny = 0;
}

uint64_t hx_dma_stat(hx_world *w, int d, int which)
{
	struct hx_dev *h = D(w, d);
	if (!h || which < 0 || which > 4)
		return 0;
	return h->dma[which];
}

/* ---- frame parsing ---------------------------------------------------------- */
int hx_parse_bth(const uint8_t *f, uint32_t len, int *opcode, uint32_t *dqpn, uint32_t *psn,
		 uint32_t *bth_off)
{
	uint32_t off = 14, l4;
	uint16_t et;

	if (len < 14)
		return -1;
	et = (uint16_t)(f[12] << 8 | f[13]);
	if (et == 0x8100) {
		if (len < 18)
			return -1;
		et = (uint16_t)(f[16] << 8 | f[17]);
		off = 18;
	}
	if (et == 0x0800) {
		uint32_t ihl;

		if (len < off + 20)
			return -1;
		ihl = (f[off] & 0xfu) * 4u;
		if (ihl < 20 || f[off + 9] != 17)
			return -1;
		l4 = off + ihl;
	} else if (et == 0x86dd) {
		if (len < off + 40 || f[off + 6] != 17)
			return -1;
		l4 = off + 40;
	} else {
		return -1;
	}
	if (len < l4 + 8 + 12)
		return -1;
	if ((uint16_t)(f[l4 + 2] << 8 | f[l4 + 3]) != 4791)
		return -1;
	off = l4 + 8;
	if (opcode)
		*opcode = f[off];
	if (dqpn)
		*dqpn = (uint32_t)f[off + 5] << 16 | (uint32_t)f[off + 6] << 8 | f[off + 7];
	if (psn)
		*psn = (uint32_t)f[off + 9] << 16 | (uint32_t)f[off + 10] << 8 | f[off + 11];
	if (bth_off)
		*bth_off = off;
	return 0;
}

/* ---- pcap and frame log --------------------------------------------------------- */
/* The devices skip the ICRC (qrnic_dev_set_trusted_wire) only while the
 * wire is trusted: asked for, nothing corrupts frames (no corrupting wire
 * rule, no fault rule on any device, ever), nothing captures them. */
static bool trust_effective(hx_world *w)
{
	if (!w->trusted || w->corrupt_ppm || w->pcap || w->faults_used || w->tap_corrupts)
		return false;
	for (int i = 0; i < w->nrules; i++)
		if (w->rules[i].action == HX_ACT_CORRUPT)
			return false;
	return true;
}

static void trust_apply(hx_world *w)
{
	bool on = trust_effective(w);

	for (int i = 0; i < w->ndev; i++)
		qrnic_dev_set_trusted_wire(w->dev[i]->dev, on);
}

int hx_wire_trusted(hx_world *w, int on)
{
	w->trusted = on != 0;
	trust_apply(w);
	return trust_effective(w);
}

int hx_pcap_open(hx_world *w, const char *path)
{
	char err[256];

	hx_pcap_close(w);
	w->pcap = qrnic_pcap_open(path, true, err, sizeof(err));	/* nanosecond pcap */
	if (!w->pcap) {
		hx_err(w, "pcap: %s", err);
		return HX_E_INVAL;
	}
	trust_apply(w);
	return 0;
}

void hx_pcap_close(hx_world *w)
{
	qrnic_pcap_close(w->pcap);
	w->pcap = NULL;
	trust_apply(w);
}

/* A write error stops the capture (the wire stays as it was) and is kept
 * as the world's error. */
static void pcap_write(hx_world *w, const uint8_t *f, uint32_t len)
{
	char err[256];

	if (w->pcap && qrnic_pcap_write(w->pcap, f, len, w->now, err, sizeof(err))) {
		hx_err(w, "pcap: %s - capture stopped after %llu frames", err,
		       (unsigned long long)qrnic_pcap_frames(w->pcap));
		fprintf(stderr, "harness: %s\n", w->err);
		qrnic_pcap_close(w->pcap);
		w->pcap = NULL;
	}
}

void hx_framelog_clear(hx_world *w)
{
	for (uint32_t i = 0; i < w->fl_count; i++)
		free(w->fl_data[i]);
	w->fl_count = 0;
}

void hx_framelog_enable(hx_world *w, uint32_t max_frames)
{
	hx_framelog_clear(w);
	free(w->fl_info);
	free(w->fl_data);
	w->fl_info = NULL;
	w->fl_data = NULL;
	w->fl_max = 0;
	if (max_frames) {
		w->fl_info = calloc(max_frames, sizeof(*w->fl_info));
		w->fl_data = calloc(max_frames, sizeof(*w->fl_data));
		if (w->fl_info && w->fl_data)
			w->fl_max = max_frames;
	}
}

uint32_t hx_framelog_count(hx_world *w)
{
	return w->fl_count;
}

int hx_framelog_get(hx_world *w, uint32_t i, struct hx_frame_info *info, void *buf, uint32_t buflen)
{
	uint32_t n;

	if (i >= w->fl_count)
		return -1;
	if (info)
		*info = w->fl_info[i];
	n = w->fl_info[i].len < buflen ? w->fl_info[i].len : buflen;
	if (buf && n)
		memcpy(buf, w->fl_data[i], n);
	return (int)w->fl_info[i].len;
}

static int64_t framelog_add(hx_world *w, int src, int dst, uint64_t src_seq,
			    const uint8_t *f, uint32_t len)
{
	struct hx_frame_info *fi;

	if (w->fl_count >= w->fl_max)
		return -1;
	fi = &w->fl_info[w->fl_count];
	fi->t_ns = w->now;
	fi->seq = w->tx_seq;
	fi->src_seq = src_seq;
	fi->src = src;
	fi->dst = dst;
	fi->len = len;
	fi->fate = 0;
	w->fl_data[w->fl_count] = malloc(len ? len : 1);
	if (!w->fl_data[w->fl_count])
		return -1;
	memcpy(w->fl_data[w->fl_count], f, len);
	return w->fl_count++;
}

static void fate(hx_world *w, int64_t idx, uint32_t bit)
{
	if (idx >= 0 && (uint64_t)idx < w->fl_count)
		w->fl_info[idx].fate |= bit;
}

/* ---- the wire ------------------------------------------------------------------- */
void hx_wire_set_latency(hx_world *w, uint64_t ns)
{
	w->latency = ns;
}

int hx_wire_rule_add(hx_world *w, int src, int64_t index, int opcode, int64_t psn,
		     int64_t dqpn, uint32_t skip, int64_t count, int action,
		     uint32_t arg, uint32_t arg2)
{
	struct hx_rule *r;

	if (w->nrules >= HX_MAX_RULES || action < HX_ACT_DROP || action > HX_ACT_MARK_CE)
		return HX_E_INVAL;
	r = &w->rules[w->nrules];
	memset(r, 0, sizeof(*r));
	r->src = src;
	r->index = index;
	r->opcode = opcode;
	r->psn = psn;
	r->dqpn = dqpn;
	r->skip = skip;
	r->count = count;
	r->action = action;
	r->arg = arg;
	r->arg2 = arg2;
	w->nrules++;
	trust_apply(w);
	return w->nrules - 1;
}

uint64_t hx_wire_rule_fired(hx_world *w, int id)
{
	if (id < 0 || id >= w->nrules)
		return 0;
	return w->rules[id].fired;
}

void hx_wire_rules_clear(hx_world *w)
{
	w->nrules = 0;
	trust_apply(w);
}

void hx_wire_random(hx_world *w, uint32_t loss_ppm, uint32_t dup_ppm, uint32_t reorder_ppm,
		    uint32_t corrupt_ppm, uint64_t seed)
{
	w->loss_ppm = loss_ppm;
	w->dup_ppm = dup_ppm;
	w->reorder_ppm = reorder_ppm;
	w->corrupt_ppm = corrupt_ppm;
	w->rng = seed;
	trust_apply(w);
}

void hx_wire_set_rate(hx_world *w, uint64_t bits_per_s, uint32_t overhead_bytes)
{
	w->rate_bps = bits_per_s;
	w->rate_overhead = overhead_bytes;
	w->ser_len[0] = w->ser_len[1] = UINT32_MAX;	/* no frame is that long */
}

/* When a frame from 'src' put on the wire now arrives: after the frames
 * already queued on src's port, its serialization time and the latency. */
static uint64_t wire_arrival(hx_world *w, int src, uint32_t len)
{
	uint64_t start, ser, done;

	if (!w->rate_bps || src < 0 || src >= HX_MAX_DEV)
		return w->now + w->latency;
	start = w->now * 1000ull;
	if (w->tx_free_ps[src] > start)
		start = w->tx_free_ps[src];
	/* a 128-bit division per frame showed in profiles: most frames have
	 * one of a few lengths, so the last two results are kept */
	if (len == w->ser_len[0]) {
		ser = w->ser_ps[0];
	} else if (len == w->ser_len[1]) {
		ser = w->ser_ps[1];
	} else {
		ser = (uint64_t)(((unsigned __int128)(len + (uint64_t)w->rate_overhead) * 8u *
				  1000000000000ull + w->rate_bps - 1) / w->rate_bps);
		w->ser_len[1] = w->ser_len[0];
		w->ser_ps[1] = w->ser_ps[0];
		w->ser_len[0] = len;
		w->ser_ps[0] = ser;
	}
	done = start + ser;
	w->tx_free_ps[src] = done;
	return (done + 999) / 1000 + w->latency;
}

/* A frame on the wire, carrying buf (a frame buffer, taken).  The records
 * are recycled (w->spare_frames): a steady stream allocates nothing. */
static struct hx_frame *frame_take(hx_world *w, uint8_t *buf, uint32_t len, int src, int dst,
				   int64_t li)
{
	struct hx_frame *fr = w->spare_frames;

	if (fr)
		w->spare_frames = fr->next;
	else
		fr = malloc(sizeof(*fr));
	if (!fr || !buf)
		abort();
	memset(fr, 0, sizeof(*fr));
	fr->data = buf;
	fr->len = len;
	fr->src = src;
	fr->dst = dst;
	fr->log_idx = li;
	fr->to_switch = w->sw.on;
	return fr;
}

static struct hx_frame *frame_new(hx_world *w, const uint8_t *f, uint32_t len, int src, int dst,
				  int64_t li)
{
	uint8_t *buf = qrnic_frame_buf_alloc(len);

	if (!buf)
		abort();
	memcpy(buf, f, len);
	return frame_take(w, buf, len, src, dst, li);
}

static void frame_free(hx_world *w, struct hx_frame *fr)
{
	qrnic_frame_buf_free(fr->data);
	fr->data = NULL;
	fr->next = w->spare_frames;
	w->spare_frames = fr;
}

static void inflight_insert(hx_world *w, struct hx_frame *fr, uint64_t at)
{
	struct hx_frame **pp;

	fr->deliver_at = at;
	fr->next = NULL;
	if (!w->fl_head || w->fl_tail->deliver_at <= at) {
		if (w->fl_tail)
			w->fl_tail->next = fr;
		else
			w->fl_head = fr;
		w->fl_tail = fr;
		return;
	}
	/* Start at the frame the last walk put in if it is still in flight
	 * and due no later: the list is sorted, so the place found is the
	 * same as from the head.  Behind a switch the list holds its queued
	 * frames, and a host's frame for the switch (due at now + the cable)
	 * goes in before them after the ones put in earlier: from the head
	 * that walk was ~1 % of a 16:1 incast's instructions. */
	pp = w->fl_hint && w->fl_hint->deliver_at <= at ? &w->fl_hint->next : &w->fl_head;
	while (*pp && (*pp)->deliver_at <= at)
		pp = &(*pp)->next;
	fr->next = *pp;
	*pp = fr;
	w->fl_hint = fr;
}

static void held_release(hx_world *w, struct hx_frame *fr)
{
	inflight_insert(w, fr, wire_arrival(w, fr->src, fr->len));
}

/* After a frame from 'src' entered the wire: count down held frames. */
static void held_tick(hx_world *w, int src)
{
	struct hx_frame **pp = &w->held;

	while (*pp) {
		struct hx_frame *fr = *pp;

		if (fr->src == src && --fr->hold_left <= 0) {
			*pp = fr->next;
			held_release(w, fr);
		} else {
			pp = &fr->next;
		}
	}
}

static void held_add(hx_world *w, struct hx_frame *fr, int k)
{
	struct hx_frame **pp = &w->held;

	fr->hold_left = k > 0 ? k : 1;
	fr->next = NULL;
	while (*pp)
		pp = &(*pp)->next;
	*pp = fr;
}

/* The IP ECN field of a frame: 0..3, or -1 if it is not IPv4/IPv6. */
static int frame_ecn(const uint8_t *f, size_t len)
{
	if (len >= 14 + 20 && f[12] == 0x08 && f[13] == 0x00)
		return f[15] & 3;
	if (len >= 14 + 40 && f[12] == 0x86 && f[13] == 0xdd)
		return (f[15] >> 4) & 3;
	return -1;
}

/* HX_ACT_MARK_CE: ECN field to CE; IPv4: header checksum recomputed. */
static void mark_ce(uint8_t *f, size_t len)
{
	if (len >= 14 + 20 && f[12] == 0x08 && f[13] == 0x00) {
		uint8_t *ip = f + 14;
		uint32_t sum = 0;

		ip[1] |= 3;
		ip[10] = ip[11] = 0;
		for (int i = 0; i < 20; i += 2)
			sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		sum = ~sum & 0xffff;
		ip[10] = (uint8_t)(sum >> 8);
		ip[11] = (uint8_t)sum;
	} else if (len >= 14 + 40 && f[12] == 0x86 && f[13] == 0xdd) {
		f[15] |= 0x30;	/* traffic class bits 1:0 are byte 1 bits 5:4 */
	}
}

static bool rule_matches(struct hx_rule *r, int src, uint64_t src_seq, uint64_t gseq,
			 bool parsed, int op, uint32_t dqpn, uint32_t psn)
{
	if (r->count == 0)
		return false;
	if (r->src >= 0 && r->src != src)
		return false;
	if (r->index >= 0 && (uint64_t)r->index != (r->src >= 0 ? src_seq : gseq))
		return false;
	if (r->opcode >= 0 && (!parsed || r->opcode != op))
		return false;
	if (r->psn >= 0 && (!parsed || (uint32_t)r->psn != psn))
		return false;
	if (r->dqpn >= 0 && (!parsed || (uint32_t)r->dqpn != dqpn))
		return false;
	return true;
}

/* ---- the switch (hx_switch_attach) ------------------------------------------------ */
static int sw_route(hx_world *w, const uint8_t *f, size_t len)
{
	if (len < 14)
		return -1;
	for (int i = 0; i < w->ndev; i++)
		if (!memcmp(f, w->sw.mac[i], 6))
			return i;
	return -1;
}

/* output queue of a port at t (ps), bytes: what is left to serialize */
static double sw_q(const struct hx_switch *sw, const struct hx_swport *p, uint64_t t)
{
	if (sw->pq)	/* the frames waiting in its queues */
		return (double)p->pq_total;
	if (!sw->c.rate_bps || p->free_ps <= t)
		return 0;
	return (double)(p->free_ps - t) * (double)sw->c.rate_bps / 8e12;
}

/* the time integral of the queue up to t */
static void sw_integrate(const struct hx_switch *sw, struct hx_swport *p, uint64_t t)
{
	if (t <= p->last_ps)
		return;
	if (sw->pq) {	/* a step function: constant between changes */
		p->area += (double)p->pq_total * (double)(t - p->last_ps);
		p->last_ps = t;
		return;
	}
	if (sw->c.rate_bps && p->free_ps > p->last_ps) {
		double a = (double)(p->free_ps - p->last_ps);
		double b = p->free_ps > t ? (double)(p->free_ps - t) : 0;

		p->area += (a * a - b * b) / 2 * (double)sw->c.rate_bps / 8e12;
	}
	p->last_ps = t;
}

/* PFC: the time an XOFF asks for (quanta of 512 bit times at the port
 * rate; the most there is) and how often it is sent again while the
 * ingress stays above xon */
#define SW_PFC_QUANTA	0xffffu
static uint64_t sw_pfc_refresh_ps(const struct hx_switch *sw)
{
	uint64_t bps = sw->c.rate_bps ? sw->c.rate_bps : 100000000000ull;

	return (uint64_t)((unsigned __int128)SW_PFC_QUANTA * 512u * 1000000000000ull / bps / 2);
}

/* An 802.1Qbb frame from the switch to host 'host' (after the cable
 * latency): XOFF (time SW_PFC_QUANTA) for the priorities in xoff, XON
 * (time 0) for those in xon.  On the pcap like every frame on a wire. */
static void sw_pfc_send(hx_world *w, int host, uint8_t xoff, uint8_t xon)
{
	uint8_t f[QRNIC_PFC_FRAME_LEN], smac[6] = { 0x02, 0x5c, 0x00, 0x00, 0x00, (uint8_t)host };
	uint16_t tm[8] = { 0 };
	struct hx_frame *fr;

	for (int p = 0; p < 8; p++)
		if (xoff >> p & 1)
			tm[p] = SW_PFC_QUANTA;
	qrnic_pfc_frame(f, smac, xoff | xon, tm);
	pcap_write(w, f, sizeof(f));
	fr = frame_new(w, f, sizeof(f), host, host, -1);
	/* priority queues: it goes straight to the host, ahead of the queues
	 * (src == dst frames entering the switch are the hosts' own pauses) */
	if (w->sw.pq)
		fr->to_switch = 0;
	inflight_insert(w, fr, w->now + w->sw.c.latency_ns);
	w->sw.port[host].st.pfc_frames++;
}

/* the dynamic threshold of a shared buffer: alpha x the free bytes */
static double sw_dyn(const struct hx_switch *sw, int node)
{
	return sw->c.alpha * (double)(sw->c.shared_buffer - sw->used[node]);
}

/* PFC: whether an ingress priority with ing bytes in the buffer is paused */
static bool sw_xoff(const struct hx_switch *sw, int node, uint64_t ing)
{
	return sw->c.shared_buffer ? (double)ing >= sw_dyn(sw, node) : ing >= sw->c.xoff;
}

static bool sw_resume(const struct hx_switch *sw, int node, uint64_t ing)
{
	return sw->c.shared_buffer ? (double)ing + (double)sw->c.pfc_resume < sw_dyn(sw, node)
				   : ing <= sw->c.xon;
}

/* PFC out of ingress port 'in': to its host (sw_pfc_send), or for a
 * fabric port an 802.1Qbb frame over its link (on the pcap when it is
 * sent) that pauses the output queues of the port at the other end once
 * it has crossed the cable (sw_enqueue, pfc_to) */
static void sw_pfc_port(hx_world *w, struct hx_swport *in, uint8_t xoff, uint8_t xon)
{
	uint8_t f[QRNIC_PFC_FRAME_LEN];
	uint16_t tm[8] = { 0 };
	struct hx_frame *fr;

	if (!in->peer) {
		sw_pfc_send(w, in->host, xoff, xon);
		return;
	}
	for (int p = 0; p < 8; p++)
		if (xoff >> p & 1)
			tm[p] = SW_PFC_QUANTA;
	qrnic_pfc_frame(f, in->mac, xoff | xon, tm);
	pcap_write(w, f, sizeof(f));
	fr = frame_new(w, f, sizeof(f), 0, 0, -1);
	fr->to_switch = 1;
	fr->pfc_to = in->peer;
	inflight_insert(w, fr, w->now + w->sw.c.latency_ns);
	in->st.pfc_frames++;
}

/* the ingress port a frame queued at its hop (fr->hop) came in by */
static struct hx_swport *sw_ingress(struct hx_switch *sw, const struct hx_frame *fr)
{
	int la, lb;

	if (!sw->c.leaves || fr->hop == 0)
		return &sw->port[fr->src];
	la = fr->src / sw->c.hosts_per_leaf;
	lb = fr->dst / sw->c.hosts_per_leaf;
	if (fr->hop == 1)	/* at the spine, from leaf la */
		return &sw->dn[fr->spine][la];
	return &sw->up[lb][fr->spine];	/* at leaf lb, from the spine */
}

/* A frame of len bytes from ingress port 'in', priority pr, left output
 * port p's queue at t: the counts go down; a paused ingress priority that
 * falls to xon is resumed. */
static void sw_left(hx_world *w, struct hx_swport *p, struct hx_swport *in, int pr, uint32_t len,
		    uint64_t t)
{
	struct hx_switch *sw = &w->sw;

	in->st.ingress -= len;
	in->ing_p[pr] -= len;
	p->eg_p[pr] -= len;
	sw->used[p->node] -= len;
	if ((in->paused >> pr & 1) && sw_resume(sw, p->node, in->ing_p[pr])) {
		in->paused &= (uint8_t)~(1u << pr);
		in->st.paused_ns += (t - in->pause_ps[pr]) / 1000;
		sw_pfc_port(w, in, 0, (uint8_t)(1u << pr));
	}
}

/* ets: the queue whose head frame port p sends next at t (ps), -1 if
 * every queue with frames is paused.  Strict classes (weight 0) first,
 * 7 first; then deficit round robin (Shreedhar and Varghese 1995) over
 * the weighted ones: on its turn a queue is credited its quantum
 * (HX_SW_ETS_UNIT x weight bytes) and sends while its deficit covers its
 * head frame; an empty queue's deficit goes to 0.  A round that sends
 * nothing (every head frame bigger than its deficit: quanta smaller than
 * a frame) is not walked again and again: the rounds until the first
 * queue can send are credited at once, which is what walking them would
 * have done, so the work per frame is bounded (three passes over 8
 * queues) whatever the weights and frame sizes.  The unit: a round of
 * all weights is 10000 bytes, about one jumbo frame, so a queue of any
 * weight waits at most about a round's time and the share is exact to
 * within about a round (tests/test_model_switch_ets.py derives the bound).
 * Written here rather than taken from a library: it is 40 lines on the
 * switch's own queues and pause state. */
static int sw_ets_pick(const struct hx_switch *sw, struct hx_swport *p, uint64_t t)
{
	const uint8_t *wt = sw->c.ets_weight;
	int pr;

#define SW_ETS_OK(i) (p->pq_head[i] && p->peer_until_ps[i] <= t)
	for (pr = 7; pr >= 0; pr--)
		if (!wt[pr] && SW_ETS_OK(pr))
			return pr;
	for (int pass = 0; pass < 3; pass++) {
		uint64_t r = UINT64_MAX;

		for (int k = 0; k < 8; k++) {
			int i = p->dw_cur;

			if (wt[i] && SW_ETS_OK(i)) {
				if (!p->dw_fresh) {
					p->dw_def[i] += (uint64_t)wt[i] * HX_SW_ETS_UNIT;
					p->dw_fresh = 1;
				}
				if (p->dw_def[i] >= p->pq_head[i]->len + sw->c.overhead)
					return i;
			} else if (!p->pq_head[i]) {
				p->dw_def[i] = 0;
			}
			p->dw_cur = (uint8_t)((i + 1) & 7);
			p->dw_fresh = 0;
		}
		/* a whole round and nobody could send: the rounds each needs */
		for (int i = 0; i < 8; i++)
			if (wt[i] && SW_ETS_OK(i)) {
				uint64_t q = (uint64_t)wt[i] * HX_SW_ETS_UNIT,
					 need = p->pq_head[i]->len + sw->c.overhead - p->dw_def[i];

				if ((need + q - 1) / q < r)
					r = (need + q - 1) / q;
			}
		if (r == UINT64_MAX)
			return -1;	/* every weighted queue with frames is paused */
		for (int i = 0; i < 8; i++)
			if (wt[i] && SW_ETS_OK(i))
				p->dw_def[i] += (r - 1) * wt[i] * HX_SW_ETS_UNIT;
	}
#undef SW_ETS_OK
	return -1;	/* not reached: the pass after the credit sends */
}

/* prio_queues: output port o sends while its transmitter is free by t
 * (ps): each time the frame at the head of the highest priority queue
 * that is not paused (strict priority; with ets, sw_ets_pick's).  A frame
 * starts when the port, the frame and its queue were all ready (so a late
 * call loses no time). */
static void sw_port_tx(hx_world *w, struct hx_swport *p, uint64_t t)
{
	struct hx_switch *sw = &w->sw;

	while (p->pq_total && p->free_ps <= t) {
		struct hx_frame *fr;
		uint64_t start, ser = 0;
		uint32_t bytes;
		int pr;

		if (sw->c.ets) {
			pr = sw_ets_pick(sw, p, t);
		} else {
			for (pr = 7; pr >= 0; pr--)
				if (p->pq_head[pr] && p->peer_until_ps[pr] <= t)
					break;
		}
		if (pr < 0)
			return;	/* every queue with frames is paused */
		fr = p->pq_head[pr];
		p->pq_head[pr] = fr->next;
		if (!fr->next)
			p->pq_tail[pr] = NULL;
		fr->next = NULL;
		bytes = fr->len + sw->c.overhead;
		p->qs[pr].tx_frames++;
		p->qs[pr].tx_bytes += bytes;
		if (sw->c.ets && sw->c.ets_weight[pr]) {	/* DWRR: the deficit pays for it */
			p->dw_def[pr] -= bytes;
			if (!p->pq_head[pr]) {	/* emptied: its turn ends, nothing carried */
				p->dw_def[pr] = 0;
				p->dw_cur = (uint8_t)((pr + 1) & 7);
				p->dw_fresh = 0;
			}
		}
		sw_integrate(sw, p, t);
		p->pq_bytes[pr] -= bytes;
		p->pq_total -= bytes;
		start = p->free_ps;
		if (start < fr->deliver_at * 1000ull)
			start = fr->deliver_at * 1000ull;
		if (start < p->peer_until_ps[pr])
			start = p->peer_until_ps[pr];
		if (sw->c.rate_bps)
			ser = (uint64_t)(((unsigned __int128)bytes * 8u * 1000000000000ull +
					  sw->c.rate_bps - 1) / sw->c.rate_bps);
		p->free_ps = start + ser;
		sw_left(w, p, sw_ingress(sw, fr), pr, bytes, t);
		if (p->peer)	/* a fabric link: on to the next switch */
			fr->hop++;
		else
			fr->to_switch = 0;
		inflight_insert(w, fr, (p->free_ps + 999) / 1000 + sw->c.latency_ns);
	}
}

/* prio_queues: an 802.1Qbb (or 802.3x) frame from the host on port o
 * pauses (or resumes) that port's queues for the priorities it names */
static void sw_pfc_rx(hx_world *w, struct hx_swport *p, const uint8_t *f, uint32_t len, uint64_t t)
{
	struct hx_switch *sw = &w->sw;
	uint64_t bps = sw->c.rate_bps ? sw->c.rate_bps : 100000000000ull;
	uint16_t op;
	uint8_t en;

	if (len < QRNIC_PFC_FRAME_LEN ||
	    ((op = (uint16_t)(f[14] << 8 | f[15])) != 0x0101 && op != 0x0001))
		return;
	en = op == 0x0001 ? 0xff : f[17];
	p->st.pfc_rx++;
	for (int pr = 0; pr < 8; pr++) {
		uint16_t q;
		uint64_t end;

		if (!(en >> pr & 1))
			continue;
		q = op == 0x0001 ? (uint16_t)(f[16] << 8 | f[17])
				 : (uint16_t)(f[18 + 2 * pr] << 8 | f[19 + 2 * pr]);
		/* the time paused so far (up to now or the old pause's end) */
		end = p->peer_until_ps[pr] < t ? p->peer_until_ps[pr] : t;
		if (end > p->peer_since_ps[pr])
			p->qs[pr].paused_ns += (end - p->peer_since_ps[pr]) / 1000;
		p->peer_since_ps[pr] = t;
		p->peer_until_ps[pr] = t + (uint64_t)((unsigned __int128)q * 512u * 1000000000000ull / bps);
	}
}

/* PFC: frames that have left the switch by now (ps) leave their ingress
 * counts (sw_left); a paused ingress priority still above xon has its
 * XOFF sent again before the last one runs out. */
static void sw_refresh(hx_world *w, struct hx_swport *in, uint64_t t)
{
	uint8_t again = 0;

	for (int pr = 0; in->paused && pr < 8; pr++)
		if ((in->paused >> pr & 1) && in->refresh_ps[pr] <= t) {
			again |= (uint8_t)(1u << pr);
			in->refresh_ps[pr] = t + sw_pfc_refresh_ps(&w->sw);
		}
	if (again)
		sw_pfc_port(w, in, again, 0);
}

static void sw_drain(hx_world *w, uint64_t t)
{
	struct hx_switch *sw = &w->sw;

	for (int o = 0; o < w->ndev && sw->pq; o++)
		sw_port_tx(w, &sw->port[o], t);
	for (int o = 0; o < w->ndev && !sw->pq; o++) {
		struct hx_swport *p = &sw->port[o];

		while (p->f_n && p->f_done[p->f_head] <= t) {
			sw_left(w, p, &sw->port[p->f_in[p->f_head] >> 3], p->f_in[p->f_head] & 7,
				p->f_len[p->f_head], t);
			p->f_head = (p->f_head + 1) % p->f_cap;
			p->f_n--;
		}
	}
	/* leaf-spine (always pq when tracked): the fabric ports, bounded by
	 * leaves x spines x 2 */
	for (int l = 0; sw->pq && l < sw->c.leaves; l++)
		for (int sp = 0; sp < sw->c.spines; sp++) {
			sw_port_tx(w, &sw->up[l][sp], t);
			sw_port_tx(w, &sw->dn[sp][l], t);
		}
	for (int o = 0; o < w->ndev; o++)
		sw_refresh(w, &sw->port[o], t);
	for (int l = 0; sw->pq && l < sw->c.leaves; l++)
		for (int sp = 0; sp < sw->c.spines; sp++) {
			sw_refresh(w, &sw->up[l][sp], t);
			sw_refresh(w, &sw->dn[sp][l], t);
		}
}

/* when sw_drain has something to do next (ns), UINT64_MAX: nothing */
static uint64_t sw_next(hx_world *w)
{
	uint64_t next = UINT64_MAX;

	if (!w->sw.on || !w->sw.track)
		return next;
	for (int o = 0; o < w->ndev + 2 * w->sw.c.leaves * w->sw.c.spines; o++) {
		int f = o - w->ndev, sp = f / 2 % (w->sw.c.spines ? w->sw.c.spines : 1),
		    l = f / 2 / (w->sw.c.spines ? w->sw.c.spines : 1);
		struct hx_swport *p = o < w->ndev ? &w->sw.port[o] : f % 2 ? &w->sw.dn[sp][l]
									: &w->sw.up[l][sp];

		/* prio_queues: when the transmitter is free, or a pause ends */
		for (int pr = 0; p->pq_total && pr < 8; pr++) {
			uint64_t at;

			if (!p->pq_head[pr])
				continue;
			at = p->free_ps > p->peer_until_ps[pr] ? p->free_ps : p->peer_until_ps[pr];
			if ((at + 999) / 1000 < next)
				next = (at + 999) / 1000;
		}

		if (p->f_n && (p->f_done[p->f_head] + 999) / 1000 < next)
			next = (p->f_done[p->f_head] + 999) / 1000;
		for (int pr = 0; p->paused && pr < 8; pr++)
			if ((p->paused >> pr & 1) && (p->refresh_ps[pr] + 999) / 1000 < next)
				next = (p->refresh_ps[pr] + 999) / 1000;
	}
	return next;
}

static bool sw_fifo_push(struct hx_swport *p, uint64_t done, uint32_t len, int in)
{
	if (p->f_n == p->f_cap) {
		uint32_t cap = p->f_cap ? p->f_cap * 2 : 1024;
		uint64_t *d = malloc(cap * sizeof(*d));
		uint32_t *l = malloc(cap * sizeof(*l));
		int *ix = malloc(cap * sizeof(*ix));

		if (!d || !l || !ix)
			abort();
		for (uint32_t i = 0; i < p->f_n; i++) {
			uint32_t k = (p->f_head + i) % (p->f_cap ? p->f_cap : 1);

			d[i] = p->f_done[k];
			l[i] = p->f_len[k];
			ix[i] = p->f_in[k];
		}
		free(p->f_done);
		free(p->f_len);
		free(p->f_in);
		p->f_done = d;
		p->f_len = l;
		p->f_in = ix;
		p->f_head = 0;
		p->f_cap = cap;
	}
	{
		uint32_t k = (p->f_head + p->f_n) % p->f_cap;

		p->f_done[k] = done;
		p->f_len[k] = len;
		p->f_in[k] = in;
		p->f_n++;
	}
	return true;
}

/* ECMP: FNV-1a over the IP addresses, the protocol and the UDP ports, mixed,
 * (RoCEv2: the source port is the flow's entropy), modulo the spines.
 * Every frame of one flow takes one path: no reordering in the fabric. */
int hx_switch_ecmp(const uint8_t *f, size_t len, int spines)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const uint8_t *parts[3];
	size_t plen[3], l4;
	uint16_t et;

	if (len < 14 || spines <= 0)
		return -1;
	et = (uint16_t)(f[12] << 8 | f[13]);
	if (et == 0x0800 && len >= 14 + 20 && f[14 + 9] == 17) {
		l4 = 14 + (size_t)(f[14] & 0x0f) * 4;
		parts[0] = f + 14 + 12;	/* source and destination addresses */
		plen[0] = 8;
		parts[1] = f + 14 + 9;	/* protocol */
	} else if (et == 0x86dd && len >= 14 + 40 && f[14 + 6] == 17) {
		l4 = 14 + 40;
		parts[0] = f + 14 + 8;
		plen[0] = 32;
		parts[1] = f + 14 + 6;
	} else {
		return -1;
	}
	if (len < l4 + 4)
		return -1;
	plen[1] = 1;
	parts[2] = f + l4;	/* source and destination ports */
	plen[2] = 4;
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < plen[k]; i++) {
			h ^= parts[k][i];
			h *= 0x100000001b3ull;
		}
	/* FNV's low bits depend only on the bytes' low bits: mixed first
	 * (MurmurHash3's fmix64) so that the modulo sees every bit */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return (int)(h % (uint64_t)spines);
}

static void sw_port_tx(hx_world *w, struct hx_swport *p, uint64_t t);

/* prio_queues: frame fr (bytes on the wire) joins its priority's queue
 * at output port p, and the port sends if it is idle */
static void sw_pq_add(hx_world *w, struct hx_swport *p, struct hx_frame *fr, int prio,
		      uint32_t bytes, uint64_t t)
{
	struct hx_switch *sw = &w->sw;
	struct hx_swport *in = sw_ingress(sw, fr);

	fr->next = NULL;
	if (p->pq_tail[prio])
		p->pq_tail[prio]->next = fr;
	else
		p->pq_head[prio] = fr;
	p->pq_tail[prio] = fr;
	p->pq_bytes[prio] += bytes;
	p->pq_total += bytes;
	p->st.frames++;
	p->st.bytes += fr->len;
	if (p->pq_total > p->st.q_max)
		p->st.q_max = p->pq_total;
	if (p->pq_total > p->st.win_max)
		p->st.win_max = p->pq_total;
	p->qs[prio].frames++;
	p->qs[prio].bytes += fr->len;
	if (p->pq_bytes[prio] > p->qs[prio].q_max)
		p->qs[prio].q_max = p->pq_bytes[prio];
	/* ingress counts (PFC), taken back by sw_left when it is sent */
	in->st.ingress += bytes;
	in->ing_p[prio] += bytes;
	p->eg_p[prio] += bytes;
	sw->used[p->node] += bytes;
	if (sw->c.leaves && sw->used[p->node] > sw->used_max[p->node])
		sw->used_max[p->node] = sw->used[p->node];
	if (sw->c.pfc && !((in->paused | sw->c.pfc_lossy) >> prio & 1) &&
	    sw_xoff(sw, p->node, in->ing_p[prio])) {
		in->paused |= (uint8_t)(1u << prio);
		in->pause_ps[prio] = t;
		in->refresh_ps[prio] = t + sw_pfc_refresh_ps(sw);
		in->st.pauses++;
		sw_pfc_port(w, in, (uint8_t)(1u << prio), 0);
	}
	sw_port_tx(w, p, t);
}

/* A frame reached a switch (now): queue it on this hop's output port, or drop it. */
static void sw_enqueue(hx_world *w, struct hx_frame *fr)
{
	struct hx_switch *sw = &w->sw;
	struct hx_swport *p = &sw->port[fr->dst];
	uint64_t t = w->now * 1000ull, ser = 0, start, done;
	bool last = true;

	if (fr->pfc_to) {	/* a switch's 802.1Qbb frame crossed a fabric link */
		sw_drain(w, t);
		sw_pfc_rx(w, fr->pfc_to, fr->data, fr->len, t);
		frame_free(w, fr);
		return;
	}
	if (sw->c.leaves) {	/* leaf-spine: this hop's output queue */
		int la = fr->src / sw->c.hosts_per_leaf, lb = fr->dst / sw->c.hosts_per_leaf;

		if (fr->hop == 0 && la != lb) {
			int sp = hx_switch_ecmp(fr->data, fr->len, sw->c.spines);

			fr->spine = (int8_t)(sp < 0 ? 0 : sp);
			p = &sw->up[la][fr->spine];
			last = false;
		} else if (fr->hop == 1) {
			p = &sw->dn[fr->spine][lb];
			last = false;
		}
	}
	uint32_t bytes = fr->len + sw->c.overhead;
	double q;

	int prio = sw->track ? qrnic_frame_priority(fr->data, fr->len) : 0;

	if (sw->pq && fr->dst == fr->src) {	/* the host's pause frame */
		sw_pfc_rx(w, &sw->port[fr->src], fr->data, fr->len, t);
		frame_free(w, fr);
		return;
	}
	if (sw->track)
		sw_drain(w, t);
	sw_integrate(sw, p, t);
	/* pq: RED and the buffer on the queue's own bytes with prio_queues,
	 * on the port's (all its priorities) otherwise */
	q = sw->pq ? (double)(sw->c.prio_queues ? p->pq_bytes[prio] : p->pq_total) : sw_q(sw, p, t);
	/* shared buffer (this switch's): a lossless (PFC) class is limited by
	 * the ingress thresholds only, as in HPCC's ns-3 SwitchMmu; a lossy one
	 * (no PFC, or its priority in pfc_lossy) by the dynamic threshold of
	 * its egress queue */
	if (sw->c.shared_buffer ? sw->used[p->node] + bytes > sw->c.shared_buffer ||
				  ((!sw->c.pfc || (sw->c.pfc_lossy >> prio & 1)) &&
				   (double)(p->eg_p[prio] + bytes) > sw_dyn(sw, p->node))
	    : sw->pq ? (sw->c.prio_queues ? p->pq_bytes[prio] : p->pq_total) + bytes > sw->c.buffer
		     : q + bytes > (double)sw->c.buffer) {
		p->st.drops++;
		p->qs[prio].drops++;
		fate(w, fr->log_idx, HX_F_DROP_RULE);
		frame_free(w, fr);
		return;
	}
	if (sw->c.kmax) {
		int ecn = frame_ecn(fr->data, fr->len);
		double pr = q <= (double)sw->c.kmin ? 0 : q >= (double)sw->c.kmax ? 1 :
			    sw->c.pmax * (q - (double)sw->c.kmin) / (double)(sw->c.kmax - sw->c.kmin);

		if ((ecn == 1 || ecn == 2) && pr > 0 &&
		    (pr >= 1 || (double)(rng_next(&sw->rng) >> 11) * 0x1p-53 < pr)) {
			mark_ce(fr->data, fr->len);
			p->st.marks++;
			p->qs[prio].marks++;
		}
	}
	if (sw->pq) {
		sw_pq_add(w, p, fr, prio, bytes, t);
		return;
	}
	if (sw->c.rate_bps)
		ser = (uint64_t)(((unsigned __int128)bytes * 8u * 1000000000000ull + sw->c.rate_bps - 1) /
				 sw->c.rate_bps);
	start = p->free_ps > t ? p->free_ps : t;
	done = start + ser;
	p->free_ps = done;
	q += bytes;
	p->st.frames++;
	p->st.bytes += fr->len;
	if ((uint64_t)q > p->st.q_max)
		p->st.q_max = (uint64_t)q;
	if ((uint64_t)q > p->st.win_max)
		p->st.win_max = (uint64_t)q;
	p->qs[prio].frames++;
	p->qs[prio].bytes += fr->len;
	if (sw->track) {
		struct hx_swport *in = &sw->port[fr->src];
		int pr = prio;

		sw_fifo_push(p, done, bytes, fr->src << 3 | pr);
		in->st.ingress += bytes;
		in->ing_p[pr] += bytes;
		p->eg_p[pr] += bytes;
		sw->used[p->node] += bytes;
		if (sw->used[p->node] > sw->used_max[p->node])
			sw->used_max[p->node] = sw->used[p->node];
		if (p->eg_p[pr] > p->qs[pr].q_max)
			p->qs[pr].q_max = p->eg_p[pr];
	}
	if (sw->c.pfc) {
		struct hx_swport *in = &sw->port[fr->src];
		int pr = prio;

		if (!((in->paused | sw->c.pfc_lossy) >> pr & 1) && sw_xoff(sw, p->node, in->ing_p[pr])) {
			in->paused |= (uint8_t)(1u << pr);
			in->pause_ps[pr] = t;
			in->refresh_ps[pr] = t + sw_pfc_refresh_ps(sw);
			in->st.pauses++;
			sw_pfc_port(w, in, (uint8_t)(1u << pr), 0);
		}
	}
	if (last)
		fr->to_switch = 0;
	else
		fr->hop++;
	inflight_insert(w, fr, (done + 999) / 1000 + sw->c.latency_ns);
}

int hx_switch_attach(hx_world *w, const struct hx_switch_cfg *c)
{
	if (!c || w->fl_head || w->held || (c->kmax && c->kmax <= c->kmin) ||
	    c->pmax < 0 || c->pmax > 1 || (c->pfc && c->xon > c->xoff)) {
		hx_err(w, "hx_switch_attach: bad configuration or frames in flight");
		return HX_E_INVAL;
	}
	if (c->ets) {
		unsigned sum = 0;

		for (int i = 0; i < 8; i++)
			sum += c->ets_weight[i] <= 100 ? c->ets_weight[i] : 1000;
		if (!c->prio_queues || sum != 100) {
			hx_err(w, "hx_switch_attach: ETS needs prio_queues and weights 0..100 whose "
			       "sum is 100 (0 = strict priority)");
			return HX_E_INVAL;
		}
	}
	if (c->shared_buffer && (!(c->alpha > 0) || c->alpha > 1024)) {
		hx_err(w, "hx_switch_attach: a shared buffer needs alpha in (0, 1024]");
		return HX_E_INVAL;
	}
	if (c->leaves && (c->leaves < 1 || c->leaves > HX_SW_MAX_TIER || c->spines < 1 ||
			  c->spines > HX_SW_MAX_TIER || c->hosts_per_leaf < 1 ||
			  c->leaves * c->hosts_per_leaf < w->ndev)) {
		hx_err(w, "hx_switch_attach: leaf-spine needs 1..%d leaves and spines, and "
		       "hosts_per_leaf x leaves >= %d hosts", HX_SW_MAX_TIER, w->ndev);
		return HX_E_INVAL;
	}
	memset(&w->sw, 0, sizeof(w->sw));
	w->sw.on = true;
	w->sw.c = *c;
	if (!w->sw.c.buffer)
		w->sw.c.buffer = UINT64_MAX / 2;
	w->sw.rng = c->seed ? c->seed : 1;
	w->sw.track = c->pfc || c->shared_buffer || c->prio_queues;
	w->sw.pq = c->prio_queues || (c->leaves && w->sw.track);
	w->sw.t0_ps = w->now * 1000ull;
	for (int i = 0; i < w->ndev; i++) {
		memcpy(w->sw.mac[i], hx_mac(w, i), 6);
		w->sw.port[i].last_ps = w->sw.t0_ps;
		w->sw.port[i].node = (int8_t)(c->leaves ? i / c->hosts_per_leaf : 0);
		w->sw.port[i].host = (int8_t)i;
	}
	for (int a = 0; a < HX_SW_MAX_TIER; a++)
		for (int b = 0; b < HX_SW_MAX_TIER; b++)
			w->sw.up[a][b].last_ps = w->sw.dn[a][b].last_ps = w->sw.t0_ps;
	/* leaf l's port to spine s (up[l][s]: its output queue up, its
	 * ingress from the spine) and spine s's port to leaf l (dn[s][l]) are
	 * the two ends of one link; their 802.1Qbb frames come from
	 * 02:5c:01:l:s:00 and 02:5c:02:s:l:00 */
	for (int l = 0; l < c->leaves; l++)
		for (int sp = 0; sp < c->spines; sp++) {
			struct hx_swport *u = &w->sw.up[l][sp], *d = &w->sw.dn[sp][l];
			const uint8_t um[6] = { 0x02, 0x5c, 0x01, (uint8_t)l, (uint8_t)sp, 0 },
				      dm[6] = { 0x02, 0x5c, 0x02, (uint8_t)sp, (uint8_t)l, 0 };

			u->node = (int8_t)l;
			d->node = (int8_t)(c->leaves + sp);
			u->host = d->host = -1;
			u->peer = d;
			d->peer = u;
			memcpy(u->mac, um, 6);
			memcpy(d->mac, dm, 6);
		}
	return 0;
}

int hx_switch_stats(hx_world *w, int port, struct hx_switch_stats *out)
{
	struct hx_swport *p;
	uint64_t t = w->now * 1000ull;

	if (!w->sw.on || port < 0 || port >= w->ndev || !out)
		return HX_E_INVAL;
	p = &w->sw.port[port];
	sw_integrate(&w->sw, p, t);
	*out = p->st;
	out->q_now = (uint64_t)sw_q(&w->sw, p, t);
	out->q_avg = t > w->sw.t0_ps ? p->area / (double)(t - w->sw.t0_ps) : 0;
	for (int pr = 0; pr < 8; pr++)
		if (p->paused >> pr & 1)
			out->paused_ns += (t - p->pause_ps[pr]) / 1000;
	return 0;
}

int hx_switch_queue_stats(hx_world *w, int port, int prio, struct hx_switch_queue_stats *out)
{
	struct hx_swport *p;

	if (!w->sw.on || port < 0 || port >= w->ndev || prio < 0 || prio > 7 || !out)
		return HX_E_INVAL;
	if (w->sw.track)
		sw_drain(w, w->now * 1000ull);
	p = &w->sw.port[port];
	*out = p->qs[prio];
	out->q_now = w->sw.pq ? p->pq_bytes[prio] : p->eg_p[prio];
	{	/* a pause still running counts up to now */
		uint64_t t = w->now * 1000ull;
		uint64_t end = p->peer_until_ps[prio] < t ? p->peer_until_ps[prio] : t;

		if (end > p->peer_since_ps[prio])
			out->paused_ns += (end - p->peer_since_ps[prio]) / 1000;
	}
	return 0;
}

uint64_t hx_switch_shared_used(hx_world *w, uint64_t *max)
{
	uint64_t used = 0, mx = 0;

	if (w->sw.on && w->sw.track)
		sw_drain(w, w->now * 1000ull);
	for (int n = 0; n < (w->sw.c.leaves ? w->sw.c.leaves + w->sw.c.spines : 1); n++) {
		used += w->sw.used[n];
		mx = w->sw.used_max[n] > mx ? w->sw.used_max[n] : mx;
	}
	if (max)
		*max = mx;
	return used;
}

int hx_switch_node_used(hx_world *w, int node, uint64_t *now, uint64_t *max)
{
	if (!w->sw.on || node < 0 || node >= (w->sw.c.leaves ? w->sw.c.leaves + w->sw.c.spines : 1))
		return HX_E_INVAL;
	if (w->sw.track)
		sw_drain(w, w->now * 1000ull);
	if (now)
		*now = w->sw.used[node];
	if (max)
		*max = w->sw.used_max[node];
	return 0;
}

int hx_switch_fabric_stats(hx_world *w, int up, int leaf, int spine, struct hx_switch_stats *out)
{
	struct hx_swport *p;
	uint64_t t = w->now * 1000ull;

	if (!w->sw.on || !w->sw.c.leaves || leaf < 0 || leaf >= w->sw.c.leaves || spine < 0 ||
	    spine >= w->sw.c.spines || !out)
		return HX_E_INVAL;
	if (w->sw.track)
		sw_drain(w, t);
	p = up ? &w->sw.up[leaf][spine] : &w->sw.dn[spine][leaf];
	sw_integrate(&w->sw, p, t);
	*out = p->st;
	out->q_now = (uint64_t)sw_q(&w->sw, p, t);
	out->q_avg = t > w->sw.t0_ps ? p->area / (double)(t - w->sw.t0_ps) : 0;
	for (int pr = 0; pr < 8; pr++)
		if (p->paused >> pr & 1)
			out->paused_ns += (t - p->pause_ps[pr]) / 1000;
	return 0;
}

int hx_switch_fabric_queue_stats(hx_world *w, int up, int leaf, int spine, int prio,
				 struct hx_switch_queue_stats *out)
{
	struct hx_swport *p;
	uint64_t t = w->now * 1000ull, end;

	if (!w->sw.on || !w->sw.c.leaves || leaf < 0 || leaf >= w->sw.c.leaves || spine < 0 ||
	    spine >= w->sw.c.spines || prio < 0 || prio > 7 || !out)
		return HX_E_INVAL;
	if (w->sw.track)
		sw_drain(w, t);
	p = up ? &w->sw.up[leaf][spine] : &w->sw.dn[spine][leaf];
	*out = p->qs[prio];
	out->q_now = w->sw.pq ? p->pq_bytes[prio] : 0;
	end = p->peer_until_ps[prio] < t ? p->peer_until_ps[prio] : t;	/* a pause running */
	if (end > p->peer_since_ps[prio])
		out->paused_ns += (end - p->peer_since_ps[prio]) / 1000;
	return 0;
}

void hx_switch_window(hx_world *w)
{
	uint64_t t = w->now * 1000ull;

	for (int i = 0; i < w->ndev; i++)
		w->sw.port[i].st.win_max = (uint64_t)sw_q(&w->sw, &w->sw.port[i], t);
}

/* ---- external ports (qrnic-switch) -------------------------------------------- */
_Static_assert(HX_SW_MAX_FRAME <= QRNIC_FRAME_BUF_MAX, "a port's frame must fit a frame buffer");

int hx_switch_ext(hx_world *w, void (*out)(void *opaque, int port, const uint8_t *f, uint32_t len),
		  void *opaque)
{
	if (!w->sw.on || !out || w->sw.c.leaves) {
		hx_err(w, "hx_switch_ext: needs a one-switch hx_switch_attach first");
		return HX_E_INVAL;
	}
	w->sw.ext_out = out;
	w->sw.ext_opaque = opaque;
	w->sw.nlearn = w->sw.learn_next = 0;
	return 0;
}

static int sw_learned(hx_world *w, const uint8_t *mac)
{
	for (uint32_t i = 0; i < w->sw.nlearn; i++)
		if (!memcmp(w->sw.learn[i].mac, mac, 6))
			return (int)i;
	return -1;
}

/* one copy of f into the switch from port 'in' for output port 'out' (now) */
static void sw_ext_in(hx_world *w, int in, int out, const uint8_t *f, uint32_t len)
{
	struct hx_frame *fr = frame_new(w, f, len, in, out, -1);

	fr->to_switch = 1;
	inflight_insert(w, fr, w->now);
}

int hx_switch_port_rx(hx_world *w, int port, const uint8_t *f, uint32_t len)
{
	struct hx_switch_ext_stats *es;
	int k, dst;

	if (!w->sw.ext_out || port < 0 || port >= w->ndev)
		return HX_E_INVAL;
	es = &w->sw.ext[port];
	if (!f || len < 14 || len > HX_SW_MAX_FRAME) {
		es->malformed++;
		return HX_E_INVAL;
	}
	es->rx_frames++;
	es->rx_bytes += len;
	/* learn the source (unicast only); the table is bounded: the oldest
	 * entry gives way (round robin) */
	if (!(f[6] & 1)) {
		k = sw_learned(w, f + 6);
		if (k < 0) {
			if (w->sw.nlearn < HX_SW_LEARN)
				k = (int)w->sw.nlearn++;
			else
				k = (int)(w->sw.learn_next++ % HX_SW_LEARN);
			memcpy(w->sw.learn[k].mac, f + 6, 6);
		}
		w->sw.learn[k].port = (int8_t)port;
	}
	/* 802.1D link-local (01:80:c2:00:00:0x: pause, PFC, LLDP) is for the
	 * switch itself: a host's PFC pauses its port's queues (prio_queues),
	 * anything else stops here */
	if (!memcmp(f, "\x01\x80\xc2\x00\x00", 5) && (f[5] & 0xf0) == 0) {
		if (w->sw.pq && f[12] == 0x88 && f[13] == 0x08)
			sw_ext_in(w, port, port, f, len);
		else
			es->link_local++;
		return 0;
	}
	dst = (f[0] & 1) ? -1 : sw_learned(w, f);
	if (dst >= 0)
		dst = w->sw.learn[dst].port;
	if (dst == port) {	/* for a host on the port it came from */
		es->filtered++;
		return 0;
	}
	if (dst >= 0) {
		sw_ext_in(w, port, dst, f, len);
		return 0;
	}
	es->flooded++;	/* broadcast, multicast, unknown unicast: every other port */
	for (int o = 0; o < w->ndev; o++)
		if (o != port)
			sw_ext_in(w, port, o, f, len);
	return 0;
}

int hx_switch_ext_stats(hx_world *w, int port, struct hx_switch_ext_stats *out)
{
	if (!w->sw.ext_out || port < 0 || port >= w->ndev || !out)
		return HX_E_INVAL;
	*out = w->sw.ext[port];
	return 0;
}

int hx_switch_ext_malformed(hx_world *w, int port)
{
	if (!w->sw.ext_out || port < 0 || port >= w->ndev)
		return HX_E_INVAL;
	w->sw.ext[port].malformed++;
	return 0;
}

/* A frame put on the wire: f, which is 'owned' (a frame buffer the wire
 * takes) or to be copied (owned NULL). */
static void tx_frame(struct hx_dev *h, const uint8_t *f, uint8_t *owned, size_t len)
{
	hx_world *w = h->w;
	int src = h->idx, dst = h->peer;
	uint64_t src_seq = h->tx_seq++, gseq = w->tx_seq;
	int op = -1;
	uint32_t dqpn = 0, psn = 0;
	bool parsed;
	int action = -1;
	uint32_t arg = 0, arg2 = 0;
	int64_t li;
	struct hx_frame *fr;

	/* the payload may be by reference (ops->dma_map) and the headers by
	 * description: built before anything reads or changes the bytes.
	 * The switch reads and changes (ECN) header bytes only, and keeps
	 * each flow's frames in order on one path (FIFO queues, ECMP per
	 * 5-tuple): a frame that refers to a send buffer arrives before the
	 * work request that buffer belongs to can complete, so its payload
	 * stays by reference and the receiver copies it once (a copy per
	 * packet less: docs/simulator.md "Speed"). */
	bool tapped = owned && w->tap && w->tap(w->tap_ctx, src, owned, (uint32_t)len);

	if (owned && (w->pcap || w->fl_count < w->fl_max || w->nrules || w->dup_ppm ||
		      w->reorder_ppm || w->corrupt_ppm))
		qrnic_frame_buf_fill(owned);
	else if (owned && w->sw.on)
		qrnic_frame_buf_fill_headers(owned);
	if (w->sw.on)
		dst = sw_route(w, f, len);	/* the headers are built now */
	/* a host's MAC control frame (PFC) is for the switch port it enters */
	if (w->sw.on && w->sw.pq && dst < 0 && len >= 14 && f[12] == 0x88 && f[13] == 0x08)
		dst = src;
	/* only rules (and the switch, sw_route) look at the headers */
	parsed = w->nrules && hx_parse_bth(f, (uint32_t)len, &op, &dqpn, &psn, NULL) == 0;
	pcap_write(w, f, (uint32_t)len);
	li = framelog_add(w, src, dst, src_seq, f, (uint32_t)len);
	w->tx_seq++;
	w->ws[HX_WS_TX]++;

	for (int i = 0; i < w->nrules; i++) {
		struct hx_rule *r = &w->rules[i];

		if (!rule_matches(r, src, src_seq, gseq, parsed, op, dqpn, psn))
			continue;
		if (r->action == HX_ACT_MARK_CE) {
			int ecn = frame_ecn(f, len);

			if (ecn != 1 && ecn != 2)
				continue;	/* a switch marks only ECN-capable packets */
		}
		r->matched++;
		if (r->matched <= r->skip)
			continue;
		if (r->action == HX_ACT_MARK_CE && r->arg > 1 && (r->matched - r->skip) % r->arg)
			continue;
		if (r->count > 0)
			r->count--;
		r->fired++;
		action = r->action;
		arg = r->arg;
		arg2 = r->arg2;
		break;
	}
	if (action < 0 && (w->loss_ppm || w->dup_ppm || w->reorder_ppm || w->corrupt_ppm)) {
		uint32_t x = (uint32_t)(rng_next(&w->rng) % 1000000u);

		if (x < w->loss_ppm) {
			w->ws[HX_WS_DROP_RANDOM]++;
			fate(w, li, HX_F_DROP_RANDOM);
			held_tick(w, src);
			qrnic_frame_buf_free(owned);
			return;
		}
		x -= w->loss_ppm;
		if (x < w->dup_ppm) {
			action = HX_ACT_DUP;
		} else if ((x -= w->dup_ppm) < w->reorder_ppm) {
			action = HX_ACT_HOLD;
			arg = 1 + (uint32_t)(rng_next(&w->rng) % 3);
		} else if ((x -= w->reorder_ppm) < w->corrupt_ppm) {
			action = HX_ACT_CORRUPT;
			arg = (uint32_t)(rng_next(&w->rng) % len);
			arg2 = 1u << (rng_next(&w->rng) % 8);
		}
	}
	if (dst < 0) {
		w->ws[HX_WS_NO_CABLE]++;
		fate(w, li, HX_F_NO_CABLE);
		qrnic_frame_buf_free(owned);
		return;
	}
	if (action == HX_ACT_DROP) {
		w->ws[HX_WS_DROP_RULE]++;
		fate(w, li, HX_F_DROP_RULE);
		held_tick(w, src);
		qrnic_frame_buf_free(owned);
		return;
	}
	fr = owned ? frame_take(w, owned, (uint32_t)len, src, dst, li)
		   : frame_new(w, f, (uint32_t)len, src, dst, li);
	fr->pristine = owned && !fr->to_switch && !tapped;
	if (action == HX_ACT_MARK_CE) {
		mark_ce(fr->data, fr->len);
		fr->pristine = 0;
	}
	if (action == HX_ACT_CORRUPT) {
		fr->pristine = 0;
		fr->data[arg % (len ? len : 1)] ^= (uint8_t)(arg2 ? arg2 : 0xff);
		w->ws[HX_WS_CORRUPTED]++;
		fate(w, li, HX_F_CORRUPTED);
	}
	if (action == HX_ACT_HOLD) {
		w->ws[HX_WS_HELD]++;
		fate(w, li, HX_F_HELD);
		held_tick(w, src);
		held_add(w, fr, (int)arg);
		return;
	}
	inflight_insert(w, fr, wire_arrival(w, src, fr->len));
	if (action == HX_ACT_DUP) {
		uint32_t n = arg ? arg : 1;

		for (uint32_t i = 0; i < n; i++) {
			struct hx_frame *c = frame_new(w, fr->data, fr->len, src, dst, li);

			inflight_insert(w, c, wire_arrival(w, src, c->len));
			w->ws[HX_WS_DUPLICATED]++;
		}
		fate(w, li, HX_F_DUPLICATED);
	}
	held_tick(w, src);
}

/* A frame the device looped back to itself: logged and captured like a
 * frame on the wire (src == dst, fate HX_F_LOOPBACK); the wire's rules
 * never see it (the device's own fault rules do). */
static void op_loopback(void *opaque, const uint8_t *f, size_t len)
{
	struct hx_dev *h = opaque;
	hx_world *w = h->w;

	pcap_write(w, f, (uint32_t)len);
	fate(w, framelog_add(w, h->idx, h->idx, h->tx_seq++, f, (uint32_t)len),
	     HX_F_LOOPBACK | HX_F_DELIVERED);
	w->tx_seq++;
	w->ws[HX_WS_LOOPBACK]++;
}

static void op_tx_frame(void *opaque, const uint8_t *f, size_t len)
{
	tx_frame(opaque, f, NULL, len);
}

static void op_tx_frame_each(void *opaque, uint8_t *buf, size_t len)
{
	tx_frame(opaque, buf, buf, len);
}

/* A train (hx_set_trains) goes as one frame buffer while nothing on the
 * wire reads or changes frames (no frame log, capture, rules, random
 * faults, tap or switch), as QEMU hands one to another qrnic port;
 * otherwise as the frames it stands for (qrnic_dev_set_trains). */
static void op_tx_frame_buf(void *opaque, uint8_t *buf, size_t len)
{
	struct hx_dev *h = opaque;
	hx_world *w = h->w;

	if (qrnic_frame_buf_train_len(buf) > 1 &&
	    (w->pcap || w->fl_count < w->fl_max || w->nrules || w->loss_ppm || w->dup_ppm ||
	     w->reorder_ppm || w->corrupt_ppm || w->tap || w->sw.on)) {
		qrnic_frame_buf_train_split(buf, op_tx_frame_each, h);
		return;
	}
	tx_frame(h, buf, buf, len);
}

/* Host d's port puts a frame of its own on its cable (or to the switch),
 * as if the device had sent it: a test's pause frame, say. */
int hx_wire_send(hx_world *w, int d, const void *frame, uint32_t len)
{
	struct hx_dev *h = D(w, d);

	if (!h || !frame || len < 14 || len > 16384)
		return HX_E_INVAL;
	tx_frame(h, frame, NULL, len);
	return 0;
}

int hx_rx_inject(hx_world *w, int d, const void *frame, uint32_t len)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return HX_E_INVAL;
	w->ws[HX_WS_INJECTED]++;
	return qrnic_dev_rx_frame(h->dev, frame, len) ? 0 : HX_E_FULL;
}

/* A frame given as a frame buffer the host vouches for (its ICRC is not
 * checked again): a host that lies, for the tests. */
int hx_rx_inject_vouched(hx_world *w, int d, const void *frame, uint32_t len)
{
	struct hx_dev *h = D(w, d);
	uint8_t *buf;

	if (!h || len > QRNIC_FRAME_BUF_MAX || !(buf = qrnic_frame_buf_alloc(len)))
		return HX_E_INVAL;
	memcpy(buf, frame, len);
	w->ws[HX_WS_INJECTED]++;
	return qrnic_dev_rx_frame_buf_vouched(h->dev, buf, len) ? 0 : HX_E_FULL;
}

void hx_set_vouch(hx_world *w, int on)
{
	w->vouch = on != 0;
}

/* ---- other host ops ----------------------------------------------------------- */
static void op_irq(void *opaque, unsigned vector)
{
	struct hx_dev *h = opaque;

	h->irq_total++;
	if (vector < h->nvec)
		h->irqs[vector]++;
}

static uint64_t op_now(void *opaque)
{
	struct hx_dev *h = opaque;
	return h->w->now;
}

/* Set a device's deadline and the world's earliest (the run loop looks at
 * the devices' timers only when one is due). */
static void deadline_set(struct hx_dev *h, uint64_t deadline)
{
	hx_world *w = h->w;
	uint64_t old = w->dl[h->idx];

	w->dl[h->idx] = deadline;
	if (h->idx >= w->ndev)
		return;		/* being made: counted once added (hx_dev_add) */
	if (w->firing >= 0) {
		/* the run loop's pass over the timers sees this one */
		if (h->idx != w->firing)
			w->dl_other = true;
		return;
	}
	if (deadline <= w->min_deadline) {
		/* every other deadline is at or after the bound: exact now */
		w->min_deadline = deadline;
		w->dl_stale = false;
		return;
	}
	/* the earliest moved later: found again when the run loop needs
	 * it (the device may well move it back before that) */
	if (old <= w->min_deadline)
		w->dl_stale = true;
}

/* The earliest deadline, exactly. */
static uint64_t min_deadline_exact(hx_world *w)
{
	if (w->dl_stale) {
		uint64_t min = UINT64_MAX;

		for (int i = 0; i < w->ndev; i++)
			if (w->dl[i] < min)
				min = w->dl[i];
		w->min_deadline = min;
		w->dl_stale = false;
	}
	return w->min_deadline;
}

static void op_timer_arm(void *opaque, uint64_t deadline)
{
	deadline_set(opaque, deadline);
}

static void sched_set(struct hx_dev *h)
{
	if (!h->sched) {
		h->sched = true;
		h->w->sched_mask |= 1ull << h->idx;
	}
}

static void op_schedule(void *opaque)
{
	sched_set(opaque);
}

static void op_log(void *opaque, enum qrnic_log_level level, const char *msg)
{
	struct hx_dev *h = opaque;
	struct hx_logmsg *m = &h->logs[h->nlogs % HX_LOG_KEEP];
	const char *env = getenv("QRNIC_HARNESS_LOG");

	m->level = (int)level;
	snprintf(m->msg, sizeof(m->msg), "%s", msg);
	h->nlogs++;
	if ((unsigned)level < 3)
		h->log_level_count[level]++;
	if (env && *env && (level != QRNIC_LOG_INFO || strcmp(env, "all") == 0))
		fprintf(stderr, "qrnic%d: %s: %s\n", h->idx,
			level == QRNIC_LOG_GUEST_ERROR ? "guest error" :
			level == QRNIC_LOG_UNIMP ? "unimplemented" : "info", msg);
}

static void op_trace(void *opaque, const struct qrnic_trace_ev *ev)
{
	struct hx_dev *h = opaque;
	hx_world *w = h->w;
	struct hx_trace_rec *r;

	if (!w->trace_cap)
		return;
	r = &w->trace[w->trace_total % w->trace_cap];
	r->ev = *ev;
	r->dev = (uint32_t)h->idx;
	r->rsvd = 0;
	w->trace_total++;
}

/* Guest errors and tolerated undefined behaviour (err_*, ub_*): the last
 * HX_TP_KEEP per device.  Device events are in the trace ring already. */
static void op_tracepoint(void *opaque, enum qrnic_tp tp, const uint64_t *args)
{
	struct hx_dev *h = opaque;
	struct hx_tprec *r;

	if (qrnic_tp_category(tp) == QRNIC_TPC_EV)
		return;
	r = &h->tps[h->ntps % HX_TP_KEEP];
	r->tp = tp;
	memset(r->args, 0, sizeof(r->args));
	memcpy(r->args, args, qrnic_tp_nfields(tp) * sizeof(args[0]));
	h->ntps++;
}

#define HX_OPS_COMMON \
	.dma_read = op_dma_read, \
	.dma_write = op_dma_write, \
	.irq = op_irq, \
	.tx_frame = op_tx_frame, \
	.now_ns = op_now, \
	.timer_arm = op_timer_arm, \
	.schedule = op_schedule, \
	.log = op_log, \
	.trace = op_trace, \
	.tx_frame_buf = op_tx_frame_buf, \
	.loopback = op_loopback, \
	.tracepoint = op_tracepoint

/* indexed by hx_set_dma_refs()'s mode */
static const struct qrnic_host_ops hx_ops_by_refs[4] = {
	[HX_REFS_PTR] = { HX_OPS_COMMON, .dma_map = op_dma_map },
	[HX_REFS_NONE] = { HX_OPS_COMMON },
	[HX_REFS_CHECKED] = { HX_OPS_COMMON, .dma_map = op_dma_map_checked,
			      .dma_unmap = op_dma_unmap_checked },
	[HX_REFS_LIVE] = { HX_OPS_COMMON, .dma_map = op_dma_map_live,
			   .dma_unmap = op_dma_unmap_checked },
};

int hx_set_dma_refs(hx_world *w, int mode)
{
	if (!w || mode < HX_REFS_PTR || mode > HX_REFS_LIVE)
		return HX_E_INVAL;
	w->dma_refs = mode;
	return 0;
}

int hx_set_db_batch(hx_world *w, int d, int on)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return HX_E_INVAL;
	h->db_batch = on != 0;
	qrnic_dev_set_db_batch(h->dev, on != 0);
	return 0;
}

uint64_t hx_db_batched(hx_world *w, int d, int rq)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return 0;
	return rq ? qrnic_dev_rq_db_quiet(h->dev) : qrnic_dev_db_batched(h->dev);
}

uint64_t hx_sq_rec_taken(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);

	return h ? qrnic_dev_sq_rec_taken(h->dev) : 0;
}

int hx_set_lazy_icrc(hx_world *w, int d, int on)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return HX_E_INVAL;
	h->lazy_icrc = on != 0;
	qrnic_dev_set_lazy_icrc(h->dev, on != 0);
	return 0;
}

int hx_set_trains(hx_world *w, int d, int on)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return HX_E_INVAL;
	h->trains = on != 0;
	qrnic_dev_set_trains(h->dev, on != 0);
	return 0;
}

static bool deliver(hx_world *w);

/* Every frame in flight arrives now, in order, into its device's receive
 * queue (or is dropped there as the device would); no device runs.  A
 * test then sees a receive queue as a snapshot between a frame's arrival
 * and the receiver's next run would. */
uint64_t hx_wire_land(hx_world *w)
{
	uint64_t n = w->ws[HX_WS_DELIVERED] + w->ws[HX_WS_RX_FULL];

	for (struct hx_frame *fr = w->fl_head; fr; fr = fr->next)
		if (fr->deliver_at > w->now)
			fr->deliver_at = w->now;	/* still sorted: all equal or earlier */
	while (deliver(w))
		;	/* bounded: each call takes at least one frame off the list */
	return w->ws[HX_WS_DELIVERED] + w->ws[HX_WS_RX_FULL] - n;
}

void hx_set_tx_tap(hx_world *w, int (*tap)(void *ctx, int src, uint8_t *buf, uint32_t len),
		   void *ctx, int corrupts)
{
	w->tap = tap;
	w->tap_ctx = ctx;
	w->tap_corrupts = tap && corrupts;
	trust_apply(w);
}

void hx_trace_enable(hx_world *w, uint32_t capacity)
{
	free(w->trace);
	w->trace = NULL;
	w->trace_cap = 0;
	w->trace_total = 0;
	if (capacity) {
		w->trace = calloc(capacity, sizeof(*w->trace));
		if (w->trace)
			w->trace_cap = capacity;
	}
	/* op_trace drops everything without a ring: spare the model the work */
	for (int i = 0; i < w->ndev; i++)
		qrnic_dev_set_trace(w->dev[i]->dev, w->trace_cap != 0);
}

uint64_t hx_trace_total(hx_world *w)
{
	return w->trace_total;
}

uint32_t hx_trace_read(hx_world *w, uint64_t from_seq, struct hx_trace_rec *out,
		       uint32_t max, uint64_t *first_seq)
{
	uint64_t oldest, s;
	uint32_t n = 0;

	if (!w->trace_cap)
		return 0;
	oldest = w->trace_total > w->trace_cap ? w->trace_total - w->trace_cap : 0;
	s = from_seq < oldest ? oldest : from_seq;
	if (first_seq)
		*first_seq = s;
	for (; s < w->trace_total && n < max; s++)
		out[n++] = w->trace[s % w->trace_cap];
	return n;
}

const char *hx_trace_name(uint32_t type)
{
	return qrnic_trace_name(type);
}

/* ---- world ------------------------------------------------------------------------- */
hx_world *hx_world_new(uint64_t mem_bytes_per_dev, uint64_t seed)
{
	hx_world *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->mem_size = mem_bytes_per_dev ? mem_bytes_per_dev : (256ull << 20);
	w->seed = seed;
	w->rng = seed;
	w->admin_timeout_ns = 1000000000ull;
	w->admin_max_iter = 10000000;
	w->now = 1000;	/* not zero, so that "0" timestamps stand out */
	w->min_deadline = UINT64_MAX;
	w->firing = -1;
	return w;
}

static void dev_free(struct hx_dev *h)
{
	struct hx_mr_rec *m, *n;

	if (h->dev)
		qrnic_dev_free(h->dev);
	mem_unmap(h->mem, h->size);
	free(h->irqs);
	free(h->cqs);
	free(h->srqs);
	free(h->eqs);
	free(h->qps);
	for (m = h->mrs; m; m = n) {
		n = m->next;
		free(m->pages);
		free(m);
	}
	free(h->trap_bytes);
	free(h->wlog);
	free(h);
}

void hx_world_free(hx_world *w)
{
	struct hx_frame *f, *n;

	if (!w)
		return;
	for (int i = 0; i < w->ndev; i++)
		dev_free(w->dev[i]);
	w->ndev = 0;
	w->fl_hint = NULL;
	for (f = w->fl_head; f; f = n) {
		n = f->next;
		frame_free(w, f);
	}
	for (f = w->held; f; f = n) {
		n = f->next;
		frame_free(w, f);
	}
	/* frames still waiting in the switch's priority queues: host ports,
	 * then the fabric links */
	for (int k = 0; k < HX_MAX_DEV + 2 * HX_SW_MAX_TIER * HX_SW_MAX_TIER; k++) {
		int j = k - HX_MAX_DEV;
		struct hx_swport *p = k < HX_MAX_DEV ? &w->sw.port[k] :
				      j % 2 ? &w->sw.dn[j / 2 / HX_SW_MAX_TIER][j / 2 % HX_SW_MAX_TIER]
					    : &w->sw.up[j / 2 / HX_SW_MAX_TIER][j / 2 % HX_SW_MAX_TIER];

		for (int pr = 0; pr < 8; pr++)
			for (f = p->pq_head[pr]; f; f = n) {
				n = f->next;
				frame_free(w, f);
			}
	}
	for (f = w->spare_frames; f; f = n) {
		n = f->next;
		free(f);
	}
	for (int i = 0; i < HX_MAX_DEV; i++) {
		free(w->sw.port[i].f_done);
		free(w->sw.port[i].f_len);
		free(w->sw.port[i].f_in);
	}
	hx_pcap_close(w);
	hx_framelog_enable(w, 0);
	hx_trace_enable(w, 0);
	free(w);
}

const char *hx_world_error(hx_world *w)
{
	return w->err;
}

int hx_cfg_param(int i, const char **name, const char **prop, const char **type,
		 uint64_t *def, uint64_t *min, uint64_t *max, uint32_t *flags,
		 const char **help, const char **seen)
{
	const struct qrnic_config_param *p = i >= 0 ? qrnic_config_param((unsigned)i) : NULL;

	if (!p)
		return -1;
	*name = p->name;
	*prop = p->prop;
	*type = qrnic_config_type_name(p->type);
	*def = p->def;
	*min = p->min;
	*max = p->max;
	*flags = p->flags;
	*help = p->help;
	*seen = p->seen;
	return 0;
}

int hx_dev_add(hx_world *w, const char *cfg_kv)
{
	struct hx_dev *h;
	char *s, *tok, *save = NULL;
	char err[200];

	if (w->ndev >= HX_MAX_DEV) {
		hx_err(w, "too many devices (at most %d)", HX_MAX_DEV);
		return HX_E_INVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return HX_E_NOMEM;
	h->w = w;
	h->idx = w->ndev;
	h->peer = -1;
	w->dl[h->idx] = UINT64_MAX;
	qrnic_config_defaults(&h->cfg);
	h->cfg.mac[0] = 0x02;
	h->cfg.mac[1] = 0x00;
	h->cfg.mac[2] = 0x00;
	h->cfg.mac[3] = 0x00;
	h->cfg.mac[4] = 0x00;
	h->cfg.mac[5] = (uint8_t)(h->idx + 1);
	if (cfg_kv && *cfg_kv) {
		s = strdup(cfg_kv);
		for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(tok, '=');
			struct qrnic_config_error e;

			if (!eq) {
				hx_err(w, "bad config item '%s': not name=value", tok);
				free(s);
				free(h);
				return HX_E_INVAL;
			}
			*eq = 0;
			if (qrnic_config_set(&h->cfg, tok, eq + 1, &e) < 0) {
				qrnic_config_error_str(&e, tok, err, sizeof(err));
				hx_err(w, "bad config item '%s=%s': %s", tok, eq + 1, err);
				free(s);
				free(h);
				return HX_E_INVAL;
			}
		}
		free(s);
	}
	if (qrnic_config_check(&h->cfg, err, sizeof(err)) < 0) {
		hx_err(w, "config: %s", err);
		free(h);
		return HX_E_INVAL;
	}
	h->size = w->mem_size;
	h->base = HX_MEM_BASE * (uint64_t)(h->idx + 1);
	h->mem = mem_map(h->size);
	h->nvec = h->cfg.num_vectors ? h->cfg.num_vectors : 1;
	h->irqs = calloc(h->nvec, sizeof(*h->irqs));
	if (!h->mem || !h->irqs) {
		mem_unmap(h->mem, h->size);
		free(h->irqs);
		free(h);
		hx_err(w, "out of host memory");
		return HX_E_NOMEM;
	}
	h->brk = HX_PAGE;	/* keep bus address base itself unused */
	h->refs = w->dma_refs;
	h->dev = qrnic_dev_new(&h->cfg, &hx_ops_by_refs[h->refs], h, &qrnic_fw_admin_ops, NULL);
	if (!h->dev) {
		hx_err(w, "qrnic_dev_new failed");
		w->sched_mask &= ~(1ull << h->idx);	/* a schedule while it was made */
		mem_unmap(h->mem, h->size);
		free(h->irqs);
		free(h);
		return HX_E_DEV;
	}
	qrnic_dev_set_trace(h->dev, w->trace_cap != 0);
	qrnic_dev_set_clock(h->dev, &w->now);	/* what op_now returns */
	w->dev[w->ndev] = h;
	w->ndev++;
	deadline_set(h, w->dl[h->idx]);	/* one the device armed while it was made */
	/* a schedule while it was made is in sched_mask already (h->idx) */
	trust_apply(w);
	return w->ndev - 1;
}

int hx_num_devs(hx_world *w)
{
	return w->ndev;
}

int hx_cable(hx_world *w, int a, int b)
{
	struct hx_dev *ha = D(w, a), *hb = D(w, b);

	if (!ha || !hb || a == b)
		return HX_E_INVAL;
	ha->peer = b;
	hb->peer = a;
	return 0;
}

uint64_t hx_now(hx_world *w)
{
	return w->now;
}

void hx_set_admin_timeout(hx_world *w, uint64_t ns)
{
	w->admin_timeout_ns = ns;
}

void hx_set_admin_max_iter(hx_world *w, uint64_t iters)
{
	w->admin_max_iter = iters ? iters : 1;
}

uint64_t hx_wire_stat(hx_world *w, int s)
{
	return (s >= 0 && s < HX_WS_COUNT) ? w->ws[s] : 0;
}

uint64_t hx_timer_deadline(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	return h ? w->dl[h->idx] : UINT64_MAX;
}

int hx_sched_pending(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	return h ? h->sched : 0;
}

uint64_t hx_run_iterations(hx_world *w)
{
	return w->last_iters;
}

uint64_t hx_loop_count(hx_world *w, int c)
{
	return c >= 0 && c < HX_LC_COUNT ? w->lc[c] : 0;
}

/* ---- the event loop -------------------------------------------------------------- */
typedef bool (*hx_stop_fn)(hx_world *w, void *arg);

static bool deliver(hx_world *w)
{
	struct hx_frame **pp = &w->fl_head, *prev = NULL;
	bool did = false;

	if (!w->fl_head || w->fl_head->deliver_at > w->now)
		return false;	/* most iterations: nothing due */
	/* Frames taken by each device in this call: a count in the device,
	 * valid while it carries this call's number.  (An array zeroed per
	 * call was a memset of ndev entries, a libc call whose AVX-512 form
	 * stores under a mask below 64 bytes; a load from a masked store
	 * waits until every store before it has drained -- after a payload's
	 * copy, 12 % of qrnic-sim's time on an Intel Xeon.) */
	uint64_t call = ++w->deliver_calls;

	while (*pp && (*pp)->deliver_at <= w->now) {
		struct hx_frame *fr = *pp;
		struct hx_dev *h = D(w, fr->dst);

		if (fr->to_switch) {
			*pp = fr->next;
			if (w->fl_tail == fr)
				w->fl_tail = prev;
			if (w->fl_hint == fr)
				w->fl_hint = NULL;
			sw_enqueue(w, fr);
			did = true;
			continue;
		}
		if (w->sw.ext_out) {	/* an external port: out of the world */
			*pp = fr->next;
			if (w->fl_tail == fr)
				w->fl_tail = prev;
			if (w->fl_hint == fr)
				w->fl_hint = NULL;
			if (fr->dst >= 0 && fr->dst < w->ndev) {
				w->sw.ext[fr->dst].tx_frames++;
				w->sw.ext_out(w->sw.ext_opaque, fr->dst, fr->data, fr->len);
			}
			frame_free(w, fr);
			did = true;
			continue;
		}
		if (h && h->rx_burst_call != call) {
			h->rx_burst_call = call;
			h->rx_burst = 0;
		}
		if (h && h->rx_burst >= HX_RX_BURST) {
			prev = fr;
			pp = &fr->next;
			continue;
		}
		*pp = fr->next;
		if (w->fl_tail == fr)
			w->fl_tail = prev;
		if (w->fl_hint == fr)
			w->fl_hint = NULL;
		if (h) {
			h->rx_burst++;
			uint8_t *buf = fr->data;

			fr->data = NULL;	/* the device takes it */
			w->awake |= 1ull << fr->dst;
			w->ws[HX_WS_DESCRIBED] += qrnic_frame_buf_described(buf);
			if (w->vouch && fr->pristine ? qrnic_dev_rx_frame_buf_vouched(h->dev, buf, fr->len)
						     : qrnic_dev_rx_frame_buf(h->dev, buf, fr->len)) {
				w->ws[HX_WS_DELIVERED]++;
				fate(w, fr->log_idx, HX_F_DELIVERED);
			} else {
				w->ws[HX_WS_RX_FULL]++;
				fate(w, fr->log_idx, HX_F_RX_FULL);
			}
		}
		frame_free(w, fr);
		did = true;
	}
	return did;
}

/*
 * The event loop.  Each iteration delivers the frames due, fires the due
 * device timers and runs the devices that asked to be scheduled; when an
 * iteration finds nothing to do, the current instant is settled and the
 * clock advances to the next event (frame arrival or device timer).
 *
 * stop is checked before every iteration.  If watch_since is not
 * UINT64_MAX, the loop also stops (HX_RUN_STOP) once an instant is settled
 * -- before the clock moves on -- if w->watched_writes has moved past
 * watch_since: the caller then sees host memory exactly as it is at the
 * end of that instant, as if it had stepped there event by event.
 */
static int run_loop(hx_world *w, uint64_t max_ns, uint64_t max_iter, hx_stop_fn stop, void *arg,
		    uint64_t watch_since)
{
	uint64_t limit = (max_ns > UINT64_MAX - w->now) ? UINT64_MAX : w->now + max_ns;
	uint64_t it = 0;
	int rc;

	w->awake = ~0ull;	/* entered since, for all we know */
	for (;;) {
		bool did = false;

		if (stop && stop(w, arg)) {
			rc = HX_RUN_STOP;
			break;
		}
		if (it >= max_iter) {
			rc = HX_RUN_ITER;
			break;
		}
		it++;
		w->lc[HX_LC_ITERATIONS]++;
		if (w->sw.on && w->sw.track)
			sw_drain(w, w->now * 1000ull);
		/* deliver() is called only when a frame is due: most
		 * iterations (7 per frame in a 16:1 incast) have none */
		if (w->fl_head && w->fl_head->deliver_at <= w->now && deliver(w))
			did = true;
		/* the timers due, in index order; the same pass finds the
		 * earliest deadline after them (deadline_set's scan of every
		 * device per timer fired was 180 instructions per frame of a
		 * 16:1 incast) */
		if (w->min_deadline <= w->now) {
			/* a timer fired moves neither the clock nor the number
			 * of devices */
			const uint64_t now = w->now;
			const int ndev = w->ndev;
			uint64_t min = UINT64_MAX;

			/* (no "dl[i] != UINT64_MAX" here, as before: the loop
			 * never moves the clock to UINT64_MAX, and the test
			 * cost 125 instructions per frame, by what the
			 * compiler made of it) */
			for (int i = 0; i < ndev; i++) {
				struct hx_dev *h;

				/* to the next timer due, without a call in the
				 * way: most devices are passed here */
				while (i < ndev && w->dl[i] > now) {
					if (w->dl[i] < min)
						min = w->dl[i];
					i++;
				}
				if (i >= ndev)
					break;
				h = w->dev[i];
				w->dl[i] = UINT64_MAX;
				w->firing = i;
				w->awake |= 1ull << i;
				w->lc[HX_LC_TIMER_FIRES]++;
				qrnic_dev_timer_fire(h->dev);
				did = true;
				if (w->dl[i] < min)	/* re-armed */
					min = w->dl[i];
			}
			w->firing = -1;
			w->min_deadline = min;
			w->dl_stale = w->dl_other;	/* a deadline already passed moved */
			w->dl_other = false;
			min_deadline_exact(w);
		}
		/* the devices scheduled, in index order: the next set bit of
		 * sched_mask from i on (a device run may schedule another) */
		for (int i = 0; i < w->ndev && (w->sched_mask >> i); i++) {
			struct hx_dev *h;

			i += __builtin_ctzll(w->sched_mask >> i);
			if (i >= w->ndev)
				break;
			h = w->dev[i];
			h->sched = false;
			w->sched_mask &= ~(1ull << i);
			w->awake |= 1ull << i;
			w->lc[HX_LC_DEV_RUNS]++;
			qrnic_dev_run(h->dev);
			did = true;
		}
		if (did)
			continue;
		w->lc[HX_LC_IDLE_SCANS]++;
		/* Idle at this instant.  A device with work that did not ask to
		 * be scheduled is a model bug: count it, but run it anyway.
		 * What makes a device busy changes only in the model's code,
		 * i.e. when the harness enters the device (in this loop: a frame
		 * delivered, a timer fired, a run; anything else happens before
		 * the loop, which starts with no device quiet), except a frame
		 * in its receive buffer becoming due with time: a device found
		 * not busy, with no receive buffer, is quiet until entered. */
		for (uint64_t m = w->awake & (w->ndev < 64 ? (1ull << w->ndev) - 1 : ~0ull); m;
		     m &= m - 1) {
			int i = __builtin_ctzll(m);

			if (qrnic_dev_busy(w->dev[i]->dev)) {
				w->ws[HX_WS_BUSY_UNSCHEDULED]++;
				sched_set(w->dev[i]);
				did = true;
			} else if (qrnic_dev_rxbuf_info(w->dev[i]->dev, NULL) < 0) {
				w->awake &= ~(1ull << i);
			}
		}
		if (did)
			continue;
		if (w->held) {
			/* nothing else will come: release reordered frames now */
			while (w->held) {
				struct hx_frame *fr = w->held;

				w->held = fr->next;
				held_release(w, fr);
			}
			continue;
		}
		if (watch_since != UINT64_MAX && w->watched_writes != watch_since) {
			rc = HX_RUN_STOP;
			break;
		}
		{
			uint64_t next = min_deadline_exact(w);

			if (w->fl_head && w->fl_head->deliver_at < next)
				next = w->fl_head->deliver_at;
			if (w->sw.on && sw_next(w) < next)
				next = sw_next(w);
			if (next == UINT64_MAX) {
				rc = HX_RUN_IDLE;
				break;
			}
			if (next > limit) {
				if (limit > w->now)
					w->now = limit;
				rc = HX_RUN_TIME;
				break;
			}
			if (next > w->now) {
				w->now = next;
				w->lc[HX_LC_INSTANTS]++;
			}
		}
	}
	w->last_iters = it;
	return rc;
}

int hx_run(hx_world *w, uint64_t max_ns, uint64_t max_iter)
{
	return run_loop(w, max_ns, max_iter ? max_iter : UINT64_MAX, NULL, NULL, UINT64_MAX);
}

int hx_advance(hx_world *w, uint64_t ns)
{
	/* saturated below UINT64_MAX, which marks a device without a timer
	 * (the run loop's timer pass fires every device with dl <= now) */
	uint64_t until = ns < UINT64_MAX - 1 - w->now ? w->now + ns : UINT64_MAX - 1;
	int r = hx_run(w, ns, 0);

	if (w->now < until)
		w->now = until;	/* idle before: the clock goes on all the same */
	hx_run(w, 0, 0);
	return r;
}

int hx_watch_writes(hx_world *w, int d, int on)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return HX_E_INVAL;
	h->watched = on != 0;
	return 0;
}

uint64_t hx_watched_writes(hx_world *w)
{
	return w->watched_writes;
}

int hx_run_to_write(hx_world *w, uint64_t max_ns, uint64_t max_iter, uint64_t since)
{
	if (since == UINT64_MAX)
		since--;	/* UINT64_MAX means "no watch" to run_loop */
	return run_loop(w, max_ns, max_iter ? max_iter : UINT64_MAX, NULL, NULL, since);
}

uint64_t hx_next_event(hx_world *w)
{
	uint64_t next = w->fl_head ? w->fl_head->deliver_at : UINT64_MAX;

	for (int i = 0; i < w->ndev; i++)
		if (w->dl[i] < next)
			next = w->dl[i];
	if (w->sw.on && sw_next(w) < next)
		next = sw_next(w);
	return next;
}

/* ---- device level ---------------------------------------------------------------- */
uint64_t hx_reg_read(hx_world *w, int d, uint64_t off, unsigned size)
{
	struct hx_dev *h = D(w, d);
	return h ? qrnic_dev_reg_read(h->dev, off, size) : ~0ull;
}

void hx_reg_write(hx_world *w, int d, uint64_t off, uint64_t val, unsigned size)
{
	struct hx_dev *h = D(w, d);
	if (h)
		qrnic_dev_reg_write(h->dev, off, val, size);
}

uint64_t hx_db_read(hx_world *w, int d, uint64_t off, unsigned size)
{
	struct hx_dev *h = D(w, d);
	return h ? qrnic_dev_db_read(h->dev, off, size) : ~0ull;
}

void hx_db_write(hx_world *w, int d, uint64_t off, uint64_t val, unsigned size)
{
	struct hx_dev *h = D(w, d);
	if (h)
		qrnic_dev_db_write(h->dev, off, val, size);
}

void hx_dev_reset(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	if (h)
		qrnic_dev_reset(h->dev);
}

void hx_set_link(hx_world *w, int d, int up)
{
	struct hx_dev *h = D(w, d);
	if (h)
		qrnic_dev_set_link(h->dev, up != 0);
}

/* PFC: pause (1) or resume (0) device d's port, as an XOFF/XON would */
void hx_port_pause(hx_world *w, int d, int paused)
{
	struct hx_dev *h = D(w, d);

	if (h)
		qrnic_dev_port_pause(h->dev, paused != 0);
}

int hx_port_paused(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);

	return h ? qrnic_dev_port_paused(h->dev) : -1;
}

/* device d's receive buffer (rx_buffer): out[0] bytes in it, [1] the most,
 * [2..9] per priority, [10..17] the most per priority, [18] the priorities
 * it sent an XOFF for; 0, or -1 (no device, or the buffer is off) */
int hx_rxbuf_info(hx_world *w, int d, uint64_t out[19])
{
	struct hx_dev *h = D(w, d);
	struct qrnic_rxbuf_info i;

	memset(out, 0, 19 * sizeof(*out));
	if (!h || qrnic_dev_rxbuf_info(h->dev, &i))
		return -1;
	out[0] = i.used;
	out[1] = i.max_used;
	for (int p = 0; p < 8; p++) {
		out[2 + p] = i.prio[p];
		out[10 + p] = i.prio_max[p];
	}
	out[18] = i.xoff;
	return 0;
}

int hx_dev_busy(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	return h ? qrnic_dev_busy(h->dev) : 0;
}

int hx_dev_check(hx_world *w, int d, char *why, size_t len)
{
	struct hx_dev *h = D(w, d);

	if (!h) {
		snprintf(why, len, "no device %d", d);
		return -1;
	}
	if (qrnic_dev_selfcheck_failures(h->dev)) {
		snprintf(why, len, "%u self-check failures after service steps (see the log)",
			 qrnic_dev_selfcheck_failures(h->dev));
		return -1;
	}
	if (qrnic_dev_check_lists(h->dev, why, len))
		return -1;
	return qrnic_dev_check_alloc(h->dev, why, len);
}

int hx_dev_selfcheck(hx_world *w, int d, int on)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return HX_E_INVAL;
	qrnic_dev_set_selfcheck(h->dev, on != 0);
	h->selfcheck = on != 0;
	return 0;
}

int hx_qp_cc(hx_world *w, int d, uint32_t qpn, double out[4], uint64_t st[6])
{
	struct hx_dev *h = D(w, d);
	struct qrnic_cc_info ci;

	if (!h || qrnic_qp_cc_info(h->dev, qpn, &ci) < 0)
		return HX_E_INVAL;
	out[0] = ci.rate_mbps;
	out[1] = ci.target_mbps;
	out[2] = ci.alpha;
	out[3] = ci.rtt_ns;
	st[0] = ci.algo;
	st[1] = ci.limited;
	st[2] = ci.t_stage;
	st[3] = ci.b_stage;
	st[4] = ci.cnps;
	st[5] = ci.rtts;
	return 0;
}

int hx_query_view(hx_world *w, int d, int k, uint32_t start, uint32_t *out, unsigned max,
		  uint32_t *next)
{
	struct hx_dev *h = D(w, d);

	if (!h || k < 0 || k >= QRNIC_VIEW_KINDS || !out)
		return HX_E_INVAL;
	return (int)qrnic_dev_view(h->dev, (enum qrnic_view_kind)k, start, out, max, next);
}

int hx_view_nfields(int k)
{
	return k < 0 || k >= QRNIC_VIEW_KINDS ? 0 : (int)qrnic_view_nfields((enum qrnic_view_kind)k);
}

const char *hx_view_field(int k, int i)
{
	if (k < 0 || k >= QRNIC_VIEW_KINDS || i < 0)
		return NULL;
	return qrnic_view_field((enum qrnic_view_kind)k, (unsigned)i);
}

uint64_t hx_dev_stat(hx_world *w, int d, int s)
{
	struct hx_dev *h = D(w, d);

	if (!h || s < 0 || s >= QRNIC_STAT_COUNT)
		return 0;
	return qrnic_dev_stat(h->dev, (enum qrnic_stat)s);
}

const char *hx_stat_name(int s)
{
	if (s < 0 || s >= QRNIC_STAT_COUNT)
		return "";
	return qrnic_stat_name((enum qrnic_stat)s);
}

int hx_stat_count(void)
{
	return QRNIC_STAT_COUNT;
}

uint64_t hx_irq_count(hx_world *w, int d, unsigned vector)
{
	struct hx_dev *h = D(w, d);
	return (h && vector < h->nvec) ? h->irqs[vector] : 0;
}

uint64_t hx_irq_total(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	return h ? h->irq_total : 0;
}

const uint8_t *hx_mac(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	return h ? h->cfg.mac : NULL;
}

uint64_t hx_log_total(hx_world *w, int d, int level)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return 0;
	if (level < 0)
		return h->nlogs;
	return level < 3 ? h->log_level_count[level] : 0;
}

int hx_log_get(hx_world *w, int d, int i, char *buf, uint32_t buflen)
{
	struct hx_dev *h = D(w, d);
	struct hx_logmsg *m;

	if (!h || i < 0 || (uint64_t)i >= h->nlogs || i >= HX_LOG_KEEP)
		return -1;
	m = &h->logs[(h->nlogs - 1 - (uint64_t)i) % HX_LOG_KEEP];
	if (buf && buflen)
		snprintf(buf, buflen, "%s", m->msg);
	return m->level;
}

void hx_log_clear(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);

	if (h) {
		h->nlogs = 0;
		memset(h->log_level_count, 0, sizeof(h->log_level_count));
		h->ntps = 0;
	}
}

uint64_t hx_tp_total(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);

	return h ? h->ntps : 0;
}

int hx_tp_get(hx_world *w, int d, int i, uint64_t *args)
{
	struct hx_dev *h = D(w, d);
	struct hx_tprec *r;

	if (!h || i < 0 || (uint64_t)i >= h->ntps || i >= HX_TP_KEEP)
		return -1;
	r = &h->tps[(h->ntps - 1 - (uint64_t)i) % HX_TP_KEEP];
	if (args)
		memcpy(args, r->args, sizeof(r->args));
	return (int)r->tp;
}

int hx_tp_count(void)
{
	return QRNIC_TP_COUNT;
}

/* ---- driver: admin queue ----------------------------------------------------------- */
static uint32_t rd32(struct hx_dev *h, uint64_t off)
{
	return (uint32_t)qrnic_dev_reg_read(h->dev, off, 4);
}

static void wr32(struct hx_dev *h, uint64_t off, uint32_t v)
{
	qrnic_dev_reg_write(h->dev, off, v, 4);
}

int hx_drv_aq_alloc(hx_world *w, int d, unsigned log_depth)
{
	struct hx_dev *h = D(w, d);

	if (!h || log_depth > 15)
		return HX_E_INVAL;
	memset(&h->aq, 0, sizeof(h->aq));
	h->aq.log = (uint8_t)log_depth;
	h->aq.sq = hx_mem_alloc(w, d, (uint64_t)QRNIC_AQ_SQE_SIZE << log_depth, HX_PAGE);
	h->aq.cq = hx_mem_alloc(w, d, (uint64_t)QRNIC_AQ_CQE_SIZE << log_depth, HX_PAGE);
	if (!h->scratch)
		h->scratch = hx_mem_alloc(w, d, HX_PAGE, HX_PAGE);
	if (!h->aq.sq || !h->aq.cq || !h->scratch)
		return HX_E_NOMEM;
	h->aq.alloc = true;
	h->aq.next_id = 1;
	return 0;
}

int hx_drv_bringup(hx_world *w, int d, unsigned log_depth)
{
	struct hx_dev *h = D(w, d);
	uint32_t v;
	int rc;

	if (!h)
		return HX_E_INVAL;
	v = rd32(h, QRNIC_REG_VERSION);
	if ((v >> 16) != QRNIC_ABI_MAJOR) {
		hx_err(w, "dev %d: ABI version %#x, want major %u", d, v, QRNIC_ABI_MAJOR);
		return HX_E_DEV;
	}
	if (!(rd32(h, QRNIC_REG_STATUS) & QRNIC_STATUS_READY)) {
		hx_err(w, "dev %d: STATUS.READY clear (%#x)", d, rd32(h, QRNIC_REG_STATUS));
		return HX_E_DEV;
	}
	rc = hx_drv_aq_alloc(w, d, log_depth);
	if (rc)
		return rc;
	/* start from a disabled admin queue: clears indexes and a previous error */
	wr32(h, QRNIC_REG_AQ_CTRL, 0);
	wr32(h, QRNIC_REG_AQ_SQ_BASE_LO, (uint32_t)h->aq.sq);
	wr32(h, QRNIC_REG_AQ_SQ_BASE_HI, (uint32_t)(h->aq.sq >> 32));
	wr32(h, QRNIC_REG_AQ_CQ_BASE_LO, (uint32_t)h->aq.cq);
	wr32(h, QRNIC_REG_AQ_CQ_BASE_HI, (uint32_t)(h->aq.cq >> 32));
	wr32(h, QRNIC_REG_AQ_CTRL, log_depth | QRNIC_AQ_CTRL_ENABLE);
	wr32(h, QRNIC_REG_CTRL, QRNIC_CTRL_ENABLE);
	hx_run(w, 1000000, 100000);
	v = rd32(h, QRNIC_REG_STATUS);
	if (!(v & QRNIC_STATUS_ENABLED) || (v & QRNIC_STATUS_FATAL)) {
		hx_err(w, "dev %d: STATUS %#x after enable", d, v);
		return HX_E_DEV;
	}
	v = rd32(h, QRNIC_REG_AQ_STATUS);
	if (!(v & QRNIC_AQ_STATUS_ENABLED) || (v & QRNIC_AQ_STATUS_ERROR)) {
		hx_err(w, "dev %d: AQ_STATUS %#x after enable", d, v);
		return HX_E_DEV;
	}
	return 0;
}

void hx_drv_forget(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return;
	memset(&h->aq, 0, sizeof(h->aq));
	if (h->cqs)
		memset(h->cqs, 0, h->ncqs * sizeof(*h->cqs));
	if (h->eqs)
		memset(h->eqs, 0, h->neqs * sizeof(*h->eqs));
	if (h->qps)
		memset(h->qps, 0, h->nqps * sizeof(*h->qps));
	for (struct hx_mr_rec *m = h->mrs; m; m = m->next)
		m->valid = false;
	h->ncmd_patch = h->nwqe_patch = 0;
}

uint64_t hx_drv_aq_addr(hx_world *w, int d, int cq)
{
	struct hx_dev *h = D(w, d);
	return h ? (cq ? h->aq.cq : h->aq.sq) : 0;
}

uint32_t hx_drv_aq_pi(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	return h ? h->aq.pi : 0;
}

uint32_t hx_drv_aq_ci(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	return h ? h->aq.ci : 0;
}

uint64_t hx_scratch(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	return h ? h->scratch : 0;
}

static bool aq_cqe_ready(struct hx_dev *h)
{
	uint32_t mask = (1u << h->aq.log) - 1;
	uint64_t slot = h->aq.cq + (uint64_t)(h->aq.ci & mask) * QRNIC_AQ_CQE_SIZE;
	uint8_t owner;

	if (hx_mem_read(h->w, h->idx, slot + 31, &owner, 1))
		return false;
	return (owner & 1) == (((h->aq.ci >> h->aq.log) & 1) ^ 1);
}

static bool stop_aq(hx_world *w, void *arg)
{
	return aq_cqe_ready(arg);
}

static void apply_patches(struct hx_patch *p, int n, uint8_t *buf, uint32_t size)
{
	for (int i = 0; i < n; i++)
		if (p[i].off < size)
			memcpy(buf + p[i].off, p[i].bytes,
			       p[i].len < size - p[i].off ? p[i].len : size - p[i].off);
}

int hx_patch_next_cmd(hx_world *w, int d, uint32_t off, const void *bytes, uint32_t len)
{
	struct hx_dev *h = D(w, d);

	if (!h || h->ncmd_patch >= HX_MAX_PATCH || len > 64)
		return HX_E_INVAL;
	h->cmd_patch[h->ncmd_patch].off = off;
	h->cmd_patch[h->ncmd_patch].len = len;
	memcpy(h->cmd_patch[h->ncmd_patch].bytes, bytes, len);
	h->ncmd_patch++;
	return 0;
}

int hx_patch_next_wqe(hx_world *w, int d, uint32_t off, const void *bytes, uint32_t len)
{
	struct hx_dev *h = D(w, d);

	if (!h || h->nwqe_patch >= HX_MAX_PATCH || len > 64)
		return HX_E_INVAL;
	h->wqe_patch[h->nwqe_patch].off = off;
	h->wqe_patch[h->nwqe_patch].len = len;
	memcpy(h->wqe_patch[h->nwqe_patch].bytes, bytes, len);
	h->nwqe_patch++;
	return 0;
}

int hx_admin(hx_world *w, int d, const void *cmd, void *cqe_out, uint32_t flags)
{
	struct hx_dev *h = D(w, d);
	uint8_t buf[QRNIC_AQ_SQE_SIZE];
	struct qrnic_aq_cqe cqe;
	uint32_t mask;
	uint16_t id;

	if (!h)
		return HX_E_INVAL;
	if (!h->aq.alloc)
		return HX_E_NOAQ;
	mask = (1u << h->aq.log) - 1;
	memcpy(buf, cmd, sizeof(buf));
	id = h->aq.next_id++;
	if (h->aq.next_id == 0)
		h->aq.next_id = 1;
	if (!(flags & HX_ADMIN_RAW))
		memcpy(buf + offsetof(struct qrnic_aq_hdr, cmd_id), &id, 2);
	apply_patches(h->cmd_patch, h->ncmd_patch, buf, sizeof(buf));
	h->ncmd_patch = 0;
	memcpy(&id, buf + offsetof(struct qrnic_aq_hdr, cmd_id), 2);
	hx_mem_write(w, d, h->aq.sq + (uint64_t)(h->aq.pi & mask) * QRNIC_AQ_SQE_SIZE, buf, sizeof(buf));
	h->aq.pi++;
	wr32(h, QRNIC_REG_AQ_SQ_DB, h->aq.pi);
	for (;;) {
		int rc = run_loop(w, w->admin_timeout_ns, w->admin_max_iter, stop_aq, h, UINT64_MAX);

		if (rc != HX_RUN_STOP)
			return HX_E_TIMEOUT;
		hx_mem_read(w, d, h->aq.cq + (uint64_t)(h->aq.ci & mask) * QRNIC_AQ_CQE_SIZE,
			    &cqe, sizeof(cqe));
		h->aq.ci++;
		if (!(flags & HX_ADMIN_RAW) && cqe.cmd_id != id) {
			w->ws[HX_WS_STALE_ADMIN_CQES]++;
			continue;
		}
		break;
	}
	memcpy(h->aq.last_cqe, &cqe, sizeof(cqe));
	if (cqe_out)
		memcpy(cqe_out, &cqe, sizeof(cqe));
	return cqe.status;
}

int hx_last_cqe(hx_world *w, int d, void *out32)
{
	struct hx_dev *h = D(w, d);

	if (!h)
		return HX_E_INVAL;
	memcpy(out32, h->aq.last_cqe, QRNIC_AQ_CQE_SIZE);
	return 0;
}

static void cmd_init(struct qrnic_aq_cmd *c, uint8_t opcode)
{
	memset(c, 0, sizeof(*c));
	c->hdr.opcode = opcode;
}

/* run a command; return result[0] as handle or -status */
static int64_t admin_handle(hx_world *w, int d, struct qrnic_aq_cmd *c)
{
	struct qrnic_aq_cqe cqe;
	int rc = hx_admin(w, d, c, &cqe, 0);

	if (rc < 0)
		return rc;
	if (rc != QRNIC_AQ_OK)
		return -(int64_t)rc;
	return cqe.result[0];
}

/* ---- driver: helpers ------------------------------------------------------------------ */
int hx_query(hx_world *w, int d, uint8_t opcode, uint32_t port, void *out, uint32_t len)
{
	struct hx_dev *h = D(w, d);
	struct qrnic_aq_cmd c;
	int rc;

	if (!h || !h->scratch || len > HX_PAGE)
		return HX_E_INVAL;
	cmd_init(&c, opcode);
	c.u.query.resp_addr = h->scratch;
	c.u.query.resp_len = len;
	c.u.query.port = port;
	hx_mem_write(w, d, h->scratch, (uint8_t[HX_PAGE]){ 0 }, HX_PAGE);
	rc = hx_admin(w, d, &c, NULL, 0);
	if (rc == QRNIC_AQ_OK && out)
		hx_mem_read(w, d, h->scratch, out, len);
	return rc;
}

int hx_set_gid(hx_world *w, int d, uint32_t index, int valid, int net_type, const uint8_t *gid16)
{
	struct qrnic_aq_cmd c;

	cmd_init(&c, QRNIC_CMD_SET_GID);
	c.u.gid.index = index;
	c.u.gid.valid = (uint8_t)valid;
	c.u.gid.net_type = (uint8_t)net_type;
	if (gid16)
		memcpy(c.u.gid.gid, gid16, 16);
	return hx_admin(w, d, &c, NULL, 0);
}

int hx_query_gid(hx_world *w, int d, uint32_t index, uint8_t *gid16_out)
{
	struct qrnic_aq_cmd c;
	struct qrnic_aq_cqe cqe;
	int rc;

	cmd_init(&c, QRNIC_CMD_QUERY_GID);
	c.u.gid.index = index;
	rc = hx_admin(w, d, &c, &cqe, 0);
	if (rc == QRNIC_AQ_OK && gid16_out)
		memcpy(gid16_out, cqe.result, 16);
	return rc;
}

int64_t hx_alloc_uctx(hx_world *w, int d)
{
	struct qrnic_aq_cmd c;

	cmd_init(&c, QRNIC_CMD_ALLOC_UCTX);
	return admin_handle(w, d, &c);
}

static void forget_handle(struct hx_dev *h, uint8_t opcode, uint32_t handle)
{
	switch (opcode) {
	case QRNIC_CMD_DESTROY_CQ:
		if (handle < h->ncqs)
			h->cqs[handle].valid = false;
		break;
	case QRNIC_CMD_DESTROY_EQ:
		if (handle < h->neqs)
			h->eqs[handle].valid = false;
		break;
	case QRNIC_CMD_DESTROY_QP:
		if (handle < h->nqps)
			h->qps[handle].valid = false;
		break;
	case QRNIC_CMD_DEREG_MR:
		for (struct hx_mr_rec *m = h->mrs; m; m = m->next)
			if (m->key == handle)
				m->valid = false;
		break;
	}
}

int hx_destroy(hx_world *w, int d, uint8_t opcode, uint32_t handle)
{
	struct hx_dev *h = D(w, d);
	struct qrnic_aq_cmd c;
	int rc;

	if (!h)
		return HX_E_INVAL;
	cmd_init(&c, opcode);
	c.u.handle.handle = handle;
	rc = hx_admin(w, d, &c, NULL, 0);
	if (rc == QRNIC_AQ_OK)
		forget_handle(h, opcode, handle);
	return rc;
}

int64_t hx_create_pd(hx_world *w, int d, uint32_t uctx)
{
	struct qrnic_aq_cmd c;

	cmd_init(&c, QRNIC_CMD_CREATE_PD);
	c.u.create_pd.uctx = uctx;
	return admin_handle(w, d, &c);
}

#define GROW(arr, n, idx) do {							\
	if ((idx) >= (n)) {							\
		uint32_t nn = (idx) + 16;					\
		void *p = realloc((arr), nn * sizeof(*(arr)));			\
		if (!p)								\
			abort();						\
		(arr) = p;							\
		memset(&(arr)[(n)], 0, (nn - (n)) * sizeof(*(arr)));		\
		(n) = nn;							\
	}									\
} while (0)

/* ---- driver: ring page lists (ABI 1.8, spec 6.6.21) ------------------------------ */
/* With hx_set_ring_pagelist, every CQ, QP and SRQ ring of a page or more
 * is handed to the device as a page list.  The ring is still one
 * allocation, but the list names its pages in reverse order: page i of the
 * ring is the allocation's page n - 1 - i.  A device that ignored the list
 * (or a slot that straddled pages) would find the wrong WQEs and CQEs, and
 * the driver side finds every slot through ring_at() as the device does. */
void hx_set_ring_pagelist(hx_world *w, int d, int on)
{
	struct hx_dev *h = D(w, d);

	if (h)
		h->ring_pl = on != 0;
}

/* With hx_set_rq_dbrec, every QP created with an RQ gets a producer index
 * record (ABI 1.10, spec 8.6.1) and posting receives writes the record
 * instead of ringing QRNIC_DB_RQ (hx_ring_rq still rings it). */
void hx_set_rq_dbrec(hx_world *w, int d, int on)
{
	struct hx_dev *h = D(w, d);

	if (h)
		h->rq_dbrec = on != 0;
}

/* With hx_set_sq_dbrec, every QP created with an SQ gets an SQ record
 * (ABI 1.11, spec 8.6.2): a post writes the producer index there, then
 * rings QRNIC_DB_SQ only if the device's flag there is clear
 * (hx_sq_db_skipped counts the posts that did not; hx_ring_sq still
 * rings). */
void hx_set_sq_dbrec(hx_world *w, int d, int on)
{
	struct hx_dev *h = D(w, d);

	if (h)
		h->sq_dbrec = on != 0;
}

uint64_t hx_sq_db_skipped(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);

	return h ? h->sq_db_skipped : 0;
}

static bool ring_listed(struct hx_dev *h, uint64_t bytes)
{
	return h->ring_pl && bytes >= QRNIC_RING_PAGE_SIZE;
}

static uint64_t ring_at(uint64_t ring, bool pl, uint64_t bytes, uint64_t off)
{
	uint64_t n = bytes >> QRNIC_RING_PAGE_SHIFT;

	if (!pl)
		return ring + off;
	return ring + ((n - 1 - (off >> QRNIC_RING_PAGE_SHIFT)) << QRNIC_RING_PAGE_SHIFT) +
	       (off & (QRNIC_RING_PAGE_SIZE - 1));
}

/* The page list of a ring of 'bytes' bytes at 'ring' (ring_at's order), in
 * host memory; 0 when it does not fit. */
static uint64_t ring_list(hx_world *w, int d, uint64_t ring, uint64_t bytes)
{
	uint64_t n = bytes >> QRNIC_RING_PAGE_SHIFT, list;

	list = hx_mem_alloc(w, d, n * 8, 8);
	if (!list)
		return 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t a = ring_at(ring, true, bytes, i << QRNIC_RING_PAGE_SHIFT);

		hx_mem_write(w, d, list + i * 8, &a, 8);	/* little-endian host */
	}
	return list;
}

int64_t hx_create_eq(hx_world *w, int d, unsigned log_depth, unsigned vector, uint32_t flags)
{
	struct hx_dev *h = D(w, d);
	struct qrnic_aq_cmd c;
	uint64_t ring;
	int64_t r;

	if (!h)
		return HX_E_INVAL;
	ring = hx_mem_alloc(w, d, (uint64_t)sizeof(struct qrnic_eqe) << (log_depth > 20 ? 20 : log_depth), HX_PAGE);
	if (!ring)
		return HX_E_NOMEM;
	cmd_init(&c, QRNIC_CMD_CREATE_EQ);
	c.u.create_eq.log_depth = (uint8_t)log_depth;
	c.u.create_eq.vector = (uint16_t)vector;
	c.u.create_eq.flags = flags;
	c.u.create_eq.ring_addr = ring;
	r = admin_handle(w, d, &c);
	if (r >= 0 && r < (1 << 24)) {
		GROW(h->eqs, h->neqs, (uint32_t)r);
		h->eqs[r] = (struct hx_eq_rec){ .valid = true, .eqn = (uint32_t)r,
			.log = (uint8_t)log_depth, .vector = (uint16_t)vector, .ring = ring };
	}
	return r;
}

int64_t hx_create_cq(hx_world *w, int d, uint32_t uctx, uint32_t eqn, unsigned log_depth, int dbrec)
{
	return hx_create_cq_flags(w, d, uctx, eqn, log_depth, dbrec, 0);
}

int64_t hx_create_cq_flags(hx_world *w, int d, uint32_t uctx, uint32_t eqn, unsigned log_depth,
			   int dbrec, unsigned flags)
{
	struct hx_dev *h = D(w, d);
	struct qrnic_aq_cmd c;
	uint64_t ring, rec = 0, bytes, addr;
	bool pl;
	int64_t r;

	if (!h)
		return HX_E_INVAL;
	bytes = (uint64_t)QRNIC_CQ_CQE_SIZE(flags) << (log_depth > QRNIC_MAX_QUEUE_LOG ? 0 : log_depth);
	ring = hx_mem_alloc(w, d, bytes, HX_PAGE);
	pl = ring && ring_listed(h, bytes) && !(flags & QRNIC_CQ_F_PAGELIST);
	addr = pl ? ring_list(w, d, ring, bytes) : ring;
	if (dbrec)
		rec = hx_mem_alloc(w, d, 64, 64);
	if (!ring || !addr || (dbrec && !rec))
		return HX_E_NOMEM;
	cmd_init(&c, QRNIC_CMD_CREATE_CQ);
	c.u.create_cq.uctx = uctx;
	c.u.create_cq.eqn = eqn;
	c.u.create_cq.log_depth = (uint8_t)log_depth;
	c.u.create_cq.flags = (uint8_t)(flags | (pl ? QRNIC_CQ_F_PAGELIST : 0));
	c.u.create_cq.ring_addr = addr;
	c.u.create_cq.dbrec_addr = rec;
	r = admin_handle(w, d, &c);
	if (r >= 0 && r < (1 << 24)) {
		GROW(h->cqs, h->ncqs, (uint32_t)r);
		h->cqs[r] = (struct hx_cq_rec){ .valid = true, .cqn = (uint32_t)r, .uctx = uctx,
			.eqn = eqn, .log = (uint8_t)log_depth,
			.flags = (uint8_t)(flags & ~QRNIC_CQ_F_PAGELIST),
			.ring = ring, .dbrec = rec, .pl = pl };
	}
	return r;
}

static struct hx_cq_rec *cq_find(struct hx_dev *h, uint32_t cqn);

/* RESIZE_CQ as a driver does it (spec 6.6.17): a zeroed new ring, the
 * command, then poll from slot 0 of it.  Returns the CQEs carried over or
 * a negative status; on failure the driver keeps the old ring. */
int64_t hx_resize_cq(hx_world *w, int d, uint32_t cqn, unsigned log_depth)
{
	struct hx_dev *h = D(w, d);
	struct hx_cq_rec *c = cq_find(h, cqn);
	struct qrnic_aq_cmd cmd;
	uint64_t ring, bytes, addr;
	bool pl;
	int64_t r;

	if (!c)
		return HX_E_NOOBJ;
	bytes = (uint64_t)QRNIC_CQ_CQE_SIZE(c->flags) << (log_depth > QRNIC_MAX_QUEUE_LOG ? 0 : log_depth);
	ring = hx_mem_alloc(w, d, bytes, HX_PAGE);
	pl = ring && ring_listed(h, bytes);
	addr = pl ? ring_list(w, d, ring, bytes) : ring;
	if (!ring || !addr)
		return HX_E_NOMEM;
	cmd_init(&cmd, QRNIC_CMD_RESIZE_CQ);
	cmd.u.resize_cq.cqn = cqn;
	cmd.u.resize_cq.log_depth = (uint8_t)log_depth;
	cmd.u.resize_cq.flags = pl ? QRNIC_CQ_F_PAGELIST : 0;
	cmd.u.resize_cq.ring_addr = addr;
	r = admin_handle(w, d, &cmd);
	if (r >= 0) {
		c->ring = ring;
		c->pl = pl;
		c->log = (uint8_t)log_depth;
		c->ci = 0;
	}
	return r;
}

int hx_modify_cq(hx_world *w, int d, uint32_t cqn, unsigned count, unsigned period_us)
{
	struct qrnic_aq_cmd cmd;

	cmd_init(&cmd, QRNIC_CMD_MODIFY_CQ);
	cmd.u.modify_cq.cqn = cqn;
	cmd.u.modify_cq.count = (uint16_t)count;
	cmd.u.modify_cq.period_us = (uint16_t)period_us;
	return (int)admin_handle(w, d, &cmd);
}

static int64_t create_qp(hx_world *w, int d, uint32_t uctx, uint32_t pdn, uint32_t send_cqn,
			 uint32_t recv_cqn, unsigned qp_type, unsigned sq_log, unsigned sq_shift,
			 unsigned rq_log, unsigned rq_shift, uint32_t flags, uint32_t srqn);

int64_t hx_create_qp(hx_world *w, int d, uint32_t uctx, uint32_t pdn, uint32_t send_cqn,
		     uint32_t recv_cqn, unsigned qp_type, unsigned sq_log, unsigned sq_shift,
		     unsigned rq_log, unsigned rq_shift, uint32_t flags)
{
	return create_qp(w, d, uctx, pdn, send_cqn, recv_cqn, qp_type, sq_log, sq_shift, rq_log,
			 rq_shift, flags, 0);
}

int64_t hx_create_qp_srq(hx_world *w, int d, uint32_t uctx, uint32_t pdn, uint32_t send_cqn,
			 uint32_t recv_cqn, unsigned qp_type, unsigned sq_log, unsigned sq_shift,
			 uint32_t srqn, uint32_t flags)
{
	return create_qp(w, d, uctx, pdn, send_cqn, recv_cqn, qp_type, sq_log, sq_shift, 0, 0,
			 flags, srqn);
}

static int64_t create_qp(hx_world *w, int d, uint32_t uctx, uint32_t pdn, uint32_t send_cqn,
			 uint32_t recv_cqn, unsigned qp_type, unsigned sq_log, unsigned sq_shift,
			 unsigned rq_log, unsigned rq_shift, uint32_t flags, uint32_t srqn)
{
	struct hx_dev *h = D(w, d);
	struct qrnic_aq_cmd c;
	uint64_t sq = 0, rq = 0;
	int64_t r;

	if (!h)
		return HX_E_INVAL;
	/* ring sizes as the driver would compute them; capped so that garbage
	 * parameters do not exhaust simulated memory (the device must reject
	 * them anyway) */
	const bool xrc = qp_type == QRNIC_QPT_XRC_INI || qp_type == QRNIC_QPT_XRC_TGT;

	if (qp_type == QRNIC_QPT_XRC_TGT)
		sq = 0;		/* no SQ; srqn is the XRC domain */
	else if (sq_log + sq_shift <= 24)
		sq = hx_mem_alloc(w, d, 1ull << (sq_log + sq_shift), HX_PAGE);
	else
		sq = hx_mem_alloc(w, d, HX_PAGE, HX_PAGE);
	if (srqn || xrc)
		rq = 0;		/* receives from the SRQ (or XRC: none): no RQ */
	else if (rq_log + rq_shift <= 24)
		rq = hx_mem_alloc(w, d, 1ull << (rq_log + rq_shift), HX_PAGE);
	else
		rq = hx_mem_alloc(w, d, HX_PAGE, HX_PAGE);
	if ((!sq && qp_type != QRNIC_QPT_XRC_TGT) || (!rq && !srqn && !xrc))
		return HX_E_NOMEM;
	uint64_t sq_bytes = sq_log + sq_shift <= 24 ? 1ull << (sq_log + sq_shift) : 0;
	uint64_t rq_bytes = rq_log + rq_shift <= 24 ? 1ull << (rq_log + rq_shift) : 0;
	bool sq_pl = sq && ring_listed(h, sq_bytes) && !(flags & QRNIC_QP_F_SQ_PAGELIST);
	bool rq_pl = rq && rq_log && ring_listed(h, rq_bytes) && !(flags & QRNIC_QP_F_RQ_PAGELIST);
	uint64_t sq_arg = sq_pl ? ring_list(w, d, sq, sq_bytes) : sq;
	uint64_t rq_arg = rq_pl ? ring_list(w, d, rq, rq_bytes) : rq;

	uint64_t rec = rq && rq_log && h->rq_dbrec ? hx_mem_alloc(w, d, 64, 64) : 0;
	uint64_t sq_rec = sq && h->sq_dbrec ? hx_mem_alloc(w, d, 64, 64) : 0;

	if ((sq_pl && !sq_arg) || (rq_pl && !rq_arg) || (rq && rq_log && h->rq_dbrec && !rec) ||
	    (sq && h->sq_dbrec && !sq_rec))
		return HX_E_NOMEM;
	flags |= (sq_pl ? QRNIC_QP_F_SQ_PAGELIST : 0) | (rq_pl ? QRNIC_QP_F_RQ_PAGELIST : 0);
	cmd_init(&c, QRNIC_CMD_CREATE_QP);
	c.u.create_qp.uctx = uctx;
	c.u.create_qp.pdn = pdn;
	c.u.create_qp.send_cqn = send_cqn;
	c.u.create_qp.recv_cqn = recv_cqn;
	c.u.create_qp.qp_type = (uint8_t)qp_type;
	c.u.create_qp.sq_log_depth = (uint8_t)sq_log;
	c.u.create_qp.sq_wqe_shift = (uint8_t)sq_shift;
	c.u.create_qp.rq_log_depth = (uint8_t)rq_log;
	c.u.create_qp.rq_wqe_shift = (uint8_t)rq_shift;
	c.u.create_qp.flags = flags;
	c.u.create_qp.srqn = srqn;
	c.u.create_qp.sq_addr = sq_arg;
	c.u.create_qp.rq_addr = rq_arg;
	c.u.create_qp.rq_dbrec_addr = rec;
	c.u.create_qp.sq_dbrec_addr = sq_rec;	/* hx_mem_alloc zeroes it */
	r = admin_handle(w, d, &c);
	if (r >= 0 && r < (1 << 24)) {
		GROW(h->qps, h->nqps, (uint32_t)r);
		h->qps[r] = (struct hx_qp_rec){ .valid = true, .qpn = (uint32_t)r, .uctx = uctx,
			.pdn = pdn, .type = qp_type, .scq = send_cqn, .rcq = recv_cqn,
			.sq_addr = sq, .rq_addr = rq, .sq_log = (uint8_t)sq_log,
			.sq_shift = (uint8_t)sq_shift, .rq_log = (uint8_t)rq_log,
			.rq_shift = (uint8_t)rq_shift, .sq_pl = sq_pl, .rq_pl = rq_pl,
			.rq_dbrec = rec, .sq_dbrec = sq_rec };
	}
	return r;
}

static struct hx_qp_rec *qp_find(struct hx_dev *h, uint32_t qpn);

int hx_modify_qp(hx_world *w, int d, uint32_t qpn, const void *attr72)
{
	struct qrnic_aq_cmd c;
	struct hx_qp_rec *q;
	int rc;

	cmd_init(&c, QRNIC_CMD_MODIFY_QP);
	c.u.modify_qp.qpn = qpn;
	memcpy(&c.u.modify_qp.attr, attr72, sizeof(c.u.modify_qp.attr));
	rc = hx_admin(w, d, &c, NULL, 0);
	/* A QP moved to RESET has empty rings: the driver starts over at 0 too. */
	q = qp_find(D(w, d), qpn);
	if (rc == QRNIC_AQ_OK && q && (c.u.modify_qp.attr.attr_mask & QRNIC_QP_ATTR_STATE) &&
	    c.u.modify_qp.attr.qp_state == QRNIC_QPS_RESET) {
		uint32_t zero = 0;

		q->sq_pi = q->sq_ci = q->rq_pi = q->rq_ci = 0;
		if (q->rq_dbrec)	/* the record restarts at 0 too */
			hx_mem_write(w, d, q->rq_dbrec, &zero, sizeof(zero));
		if (q->sq_dbrec)
			hx_mem_write(w, d, q->sq_dbrec, &zero, sizeof(zero));
	}
	return rc;
}

static int query_handle(hx_world *w, int d, uint8_t opcode, uint32_t handle, void *out, uint32_t len)
{
	struct hx_dev *h = D(w, d);
	struct qrnic_aq_cmd c;
	int rc;

	if (!h || !h->scratch)
		return HX_E_INVAL;
	cmd_init(&c, opcode);
	c.u.query_qp.handle = handle;
	c.u.query_qp.resp_len = len;
	c.u.query_qp.resp_addr = h->scratch;
	hx_mem_write(w, d, h->scratch, (uint8_t[HX_PAGE]){ 0 }, HX_PAGE);
	rc = hx_admin(w, d, &c, NULL, 0);
	if (rc == QRNIC_AQ_OK && out)
		hx_mem_read(w, d, h->scratch, out, len);
	return rc;
}

int hx_query_qp(hx_world *w, int d, uint32_t qpn, void *attr72_out)
{
	return query_handle(w, d, QRNIC_CMD_QUERY_QP, qpn, attr72_out, sizeof(struct qrnic_qp_attr));
}

int hx_query_mr(hx_world *w, int d, uint32_t key, void *mpt48_out)
{
	return query_handle(w, d, QRNIC_CMD_QUERY_MR, key, mpt48_out, sizeof(struct qrnic_mpt_entry));
}

int64_t hx_create_ah(hx_world *w, int d, uint32_t pdn, const void *av32)
{
	struct qrnic_aq_cmd c;

	cmd_init(&c, QRNIC_CMD_CREATE_AH);
	c.u.create_ah.pdn = pdn;
	memcpy(&c.u.create_ah.av, av32, sizeof(c.u.create_ah.av));
	return admin_handle(w, d, &c);
}

/* Build a PBL of 'levels' over pages[0..n) (levels >= 1).  Returns the top
 * list page address or 0.  Entries beyond a level's capacity are left out. */
static uint64_t build_pbl(hx_world *w, int d, const uint64_t *pages, uint64_t n, int levels)
{
	uint64_t per = QRNIC_PBL_ENTRIES, cover = 1, nlist, *addrs;
	uint64_t top;

	for (int i = 1; i < levels; i++)
		cover *= per;	/* data pages covered by one entry of the top page */
	if (levels == 1) {
		top = hx_mem_alloc(w, d, HX_PAGE, HX_PAGE);
		if (!top)
			return 0;
		for (uint64_t i = 0; i < n && i < per; i++)
			hx_mem_write(w, d, top + i * 8, &pages[i], 8);
		return top;
	}
	/* lower levels first: one sub-PBL per entry of the top page */
	nlist = (n + cover - 1) / cover;
	if (nlist > per)
		nlist = per;
	addrs = calloc(nlist ? nlist : 1, sizeof(*addrs));
	for (uint64_t i = 0; i < nlist; i++) {
		uint64_t cnt = n - i * cover < cover ? n - i * cover : cover;

		addrs[i] = build_pbl(w, d, pages + i * cover, cnt, levels - 1);
		if (!addrs[i]) {
			free(addrs);
			return 0;
		}
	}
	top = hx_mem_alloc(w, d, HX_PAGE, HX_PAGE);
	if (top)
		for (uint64_t i = 0; i < nlist; i++)
			hx_mem_write(w, d, top + i * 8, &addrs[i], 8);
	free(addrs);
	return top;
}

int64_t hx_reg_mr(hx_world *w, int d, uint32_t pdn, uint32_t access, uint64_t iova,
		  uint64_t length, unsigned page_shift, int levels, uint32_t hxflags)
{
	struct hx_dev *h = D(w, d);
	struct qrnic_aq_cmd c;
	struct hx_mr_rec *m;
	uint64_t ps, off, npages = 0, pbl = 0;
	uint32_t mr_flags = (hxflags & HX_MR_PHYS) ? QRNIC_MR_F_PHYS : 0;
	int64_t r;

	if (!h || page_shift > 40)
		return HX_E_INVAL;
	ps = 1ull << page_shift;
	off = iova & (ps - 1);
	if (length)	/* pages spanned, without wrapping for any length */
		npages = (uint64_t)(((unsigned __int128)off + length + ps - 1) >> page_shift);
	if (page_shift < QRNIC_MIN_PAGE_SHIFT || page_shift > QRNIC_MAX_PAGE_SHIFT ||
	    (!(hxflags & HX_MR_PHYS) && npages > (h->size >> page_shift) / 2)) {
		/* invalid or huge: submit the command without backing pages (the
		 * device must reject it; tests of that only look at the status) */
		hxflags |= HX_MR_PHYS;
		if (levels < 0)
			levels = npages <= QRNIC_PBL_ENTRIES ? 1 : 2;
		pbl = hx_mem_alloc(w, d, HX_PAGE, HX_PAGE);
		if (!pbl)
			return HX_E_NOMEM;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return HX_E_NOMEM;
	/* a page list only for pages the host allocates: those of a DMA MR
	 * follow from its iova (mr_addr), however many it spans */
	m->pages = calloc((hxflags & HX_MR_PHYS) || !npages ? 1 : npages, sizeof(uint64_t));
	if (!m->pages) {
		free(m);
		return HX_E_NOMEM;
	}
	if (levels < 0) {
		if (hxflags & HX_MR_PHYS)
			levels = 0;
		else if (npages <= QRNIC_PBL_ENTRIES)
			levels = 1;
		else if (npages <= (uint64_t)QRNIC_PBL_ENTRIES * QRNIC_PBL_ENTRIES)
			levels = 2;
		else
			levels = 3;
	}
	if (hxflags & HX_MR_PHYS) {
		/* iova is a bus address the caller allocated: no pages to find */
	} else if (levels == 0 || (hxflags & HX_MR_CONTIG)) {
		uint64_t a = hx_mem_alloc(w, d, npages * ps, ps < HX_PAGE ? HX_PAGE : ps);

		if (!a && npages)
			goto nomem;
		for (uint64_t i = 0; i < npages; i++)
			m->pages[i] = a + i * ps;
		pbl = a;
	} else {
		for (uint64_t i = 0; i < npages; i++) {
			m->pages[i] = hx_mem_alloc(w, d, ps, ps < HX_PAGE ? HX_PAGE : ps);
			if (!m->pages[i])
				goto nomem;
		}
		if (hxflags & HX_MR_SHUFFLE) {
			for (uint64_t i = npages; i > 1; i--) {
				uint64_t j = rng_next(&w->rng) % i, t = m->pages[i - 1];

				m->pages[i - 1] = m->pages[j];
				m->pages[j] = t;
			}
		}
	}
	if (levels > 0 && !(hxflags & HX_MR_PHYS)) {
		pbl = build_pbl(w, d, m->pages, npages, levels > 3 ? 3 : levels);
		if (!pbl && npages)
			goto nomem;
		if (!pbl)
			pbl = hx_mem_alloc(w, d, HX_PAGE, HX_PAGE);
	}
	cmd_init(&c, QRNIC_CMD_REG_MR);
	c.u.reg_mr.pdn = pdn;
	c.u.reg_mr.access = access;
	c.u.reg_mr.flags = mr_flags;
	c.u.reg_mr.page_shift = (uint8_t)page_shift;
	c.u.reg_mr.pbl_levels = (uint8_t)levels;
	c.u.reg_mr.iova = iova;
	c.u.reg_mr.length = length;
	c.u.reg_mr.pbl_addr = pbl;
	c.u.reg_mr.npages = mr_flags ? 0 : (uint32_t)npages;	/* DMA MR: no PBL */
	r = admin_handle(w, d, &c);
	if (r < 0) {
		free(m->pages);
		free(m);
		return r;
	}
	m->valid = true;
	m->key = (uint32_t)r;
	m->pdn = pdn;
	m->access = access;
	m->flags = hxflags;
	m->iova = iova;
	m->length = length;
	m->page_shift = page_shift;
	m->npages = (hxflags & HX_MR_PHYS) ? 0 : (uint32_t)npages;
	m->pbl_addr = pbl;
	m->next = h->mrs;
	h->mrs = m;
	return r;
nomem:
	free(m->pages);
	free(m);
	return HX_E_NOMEM;
}

static struct hx_mr_rec *mr_find(struct hx_dev *h, uint32_t key)
{
	for (struct hx_mr_rec *m = h->mrs; m; m = m->next)
		if (m->key == key)
			return m;
	return NULL;
}

/* Bus address of byte off of MR m, 0 if the host has no page there. */
static uint64_t mr_addr(const struct hx_mr_rec *m, uint64_t off)
{
	uint64_t ps = 1ull << m->page_shift, x = (m->iova & (ps - 1)) + off;

	if (m->flags & HX_MR_PHYS)
		return m->iova + off;	/* a DMA MR: bus addresses 1:1 */
	if ((x >> m->page_shift) >= m->npages)
		return 0;
	return m->pages[x >> m->page_shift] + (x & (ps - 1));
}

uint64_t hx_mr_bus_addr(hx_world *w, int d, uint32_t key, uint64_t off)
{
	struct hx_dev *h = D(w, d);
	struct hx_mr_rec *m = h ? mr_find(h, key) : NULL;

	if (!m || off > m->length)
		return 0;
	return mr_addr(m, off);
}

uint64_t hx_mr_pbl_addr(hx_world *w, int d, uint32_t key)
{
	struct hx_dev *h = D(w, d);
	struct hx_mr_rec *m = h ? mr_find(h, key) : NULL;
	return m ? m->pbl_addr : 0;
}

static int mr_rw(hx_world *w, int d, uint32_t key, uint64_t off, void *buf, uint64_t len, bool wr)
{
	struct hx_dev *h = D(w, d);
	struct hx_mr_rec *m = h ? mr_find(h, key) : NULL;
	uint8_t *p = buf;
	uint64_t ps;

	if (!m || off > m->length || len > m->length - off)
		return HX_E_INVAL;
	ps = 1ull << m->page_shift;
	while (len) {
		uint64_t in = ((m->iova & (ps - 1)) + off) & (ps - 1), n = ps - in;
		uint64_t a = mr_addr(m, off);

		if (!a)
			return HX_E_INVAL;

		if (n > len)
			n = len;
		if (wr ? hx_mem_write(w, d, a, p, n) : hx_mem_read(w, d, a, p, n))
			return HX_E_INVAL;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

void *hx_mr_host_span(hx_world *w, int d, uint32_t key, uint64_t off, uint64_t *len)
{
	struct hx_dev *h = D(w, d);
	struct hx_mr_rec *m = h ? mr_find(h, key) : NULL;
	uint64_t ps, a, n, want;

	if (!m || !len || off > m->length || *len > m->length - off)
		return NULL;
	want = *len;
	a = mr_addr(m, off);
	if (!a)
		return NULL;
	if (m->flags & HX_MR_PHYS) {
		n = want;
	} else {
		ps = 1ull << m->page_shift;
		n = ps - (((m->iova & (ps - 1)) + off) & (ps - 1));
		/* join the pages that follow physically (at most the pages
		 * of the range: bounded by want / ps) */
		while (n < want && mr_addr(m, off + n) == a + n)
			n += ps;
	}
	if (n > want)
		n = want;
	if (!mem_range_ok(h, a, n))
		return NULL;
	*len = n;
	return mem_ptr(h, a);
}

int hx_mr_write(hx_world *w, int d, uint32_t key, uint64_t off, const void *buf, uint64_t len)
{
	return mr_rw(w, d, key, off, (void *)buf, len, true);
}

int hx_mr_read(hx_world *w, int d, uint32_t key, uint64_t off, void *buf, uint64_t len)
{
	return mr_rw(w, d, key, off, buf, len, false);
}

/* ---- driver: data path --------------------------------------------------------------- */
static struct hx_qp_rec *qp_find(struct hx_dev *h, uint32_t qpn)
{
	if (!h || qpn >= h->nqps || !h->qps[qpn].valid)
		return NULL;
	return &h->qps[qpn];
}

static struct hx_cq_rec *cq_find(struct hx_dev *h, uint32_t cqn)
{
	if (!h || cqn >= h->ncqs || !h->cqs[cqn].valid)
		return NULL;
	return &h->cqs[cqn];
}

static uint64_t db_page(uint32_t uctx)
{
	return (uint64_t)uctx * QRNIC_DB_PAGE_SIZE;
}

/* One doorbell on a user context's page: queue number and index. */
static void ring_db(struct hx_dev *h, uint32_t uctx, uint64_t off, uint32_t qn, uint32_t idx)
{
	qrnic_dev_db_write(h->dev, db_page(uctx) + off,
			   (qn & QRNIC_DB_QN_MASK) | ((uint64_t)idx << QRNIC_DB_IDX_SHIFT), 8);
}

int hx_ring_sq(hx_world *w, int d, uint32_t qpn)
{
	struct hx_dev *h = D(w, d);
	struct hx_qp_rec *q = qp_find(h, qpn);

	if (!q)
		return HX_E_NOOBJ;
	ring_db(h, q->uctx, QRNIC_DB_SQ, qpn, q->sq_pi);
	return 0;
}

/* BlueFlame (spec 3.2.1): copy the WQE last put on the SQ ring (index
 * sq_pi - 1) into BF buffer 'buf' of doorbell page 'page' (-1: the QP's
 * own), nwords 8-byte words of it (0: as many as it needs), leaving out the words set in skip, then
 * write the control word with nwords and producer index pi (-1: sq_pi). */
int hx_ring_sq_bf(hx_world *w, int d, uint32_t qpn, unsigned buf, unsigned nwords,
		  uint32_t skip, int64_t page, int64_t pi)
{
	struct hx_dev *h = D(w, d);
	struct hx_qp_rec *q = qp_find(h, qpn);
	uint8_t wqe[QRNIC_BF_MAX_WQE] = { 0 };
	uint32_t uctx, idx, stride;
	uint64_t base;

	if (!q || buf >= QRNIC_DB_BF_NUM)
		return q ? HX_E_INVAL : HX_E_NOOBJ;
	uctx = page < 0 ? q->uctx : (uint32_t)page;
	idx = q->sq_pi - 1;
	stride = 1u << q->sq_shift;
	hx_mem_read(w, d, ring_at(q->sq_addr, q->sq_pl, 1ull << (q->sq_log + q->sq_shift),
				  (uint64_t)(idx & ((1u << q->sq_log) - 1)) << q->sq_shift),
		    wqe, stride < sizeof(wqe) ? stride : sizeof(wqe));
	if (!nwords) {	/* the header and what it says follows */
		struct qrnic_send_wqe hd;
		uint64_t n;

		memcpy(&hd, wqe, sizeof(hd));
		n = sizeof(hd) + ((hd.flags & QRNIC_WQE_F_INLINE) ? hd.inline_len
				  : (uint64_t)hd.num_sge * sizeof(struct qrnic_sge));
		n = (n + 7) / 8;
		nwords = n > QRNIC_BF_MAX_WQE / 8 ? QRNIC_BF_MAX_WQE / 8 : (unsigned)n;
	}
	base = db_page(uctx) + QRNIC_DB_BF_BASE + (uint64_t)buf * QRNIC_DB_BF_STRIDE;
	for (unsigned i = 0; i < nwords && i < QRNIC_BF_MAX_WQE / 8; i++) {
		uint64_t v;

		if (skip & (1u << i))
			continue;
		memcpy(&v, wqe + 8 * i, 8);	/* little-endian host, as the model */
		qrnic_dev_db_write(h->dev, base + 8 * i, v, 8);
	}
	qrnic_dev_db_write(h->dev, base + QRNIC_BF_CTRL,
			   (qpn & QRNIC_DB_QN_MASK) |
			   ((uint64_t)(nwords & QRNIC_BF_NWORDS_MASK) << QRNIC_BF_NWORDS_SHIFT) |
			   ((uint64_t)(pi < 0 ? q->sq_pi : (uint32_t)pi) << QRNIC_DB_IDX_SHIFT), 8);
	return 0;
}

/* The QP's RQ producer record (0 = none), for tests that write it themselves. */
uint64_t hx_qp_sq_dbrec(hx_world *w, int d, uint32_t qpn)
{
	struct hx_qp_rec *q = qp_find(D(w, d), qpn);

	return q ? q->sq_dbrec : 0;
}

uint64_t hx_qp_rq_dbrec(hx_world *w, int d, uint32_t qpn)
{
	struct hx_qp_rec *q = qp_find(D(w, d), qpn);

	return q ? q->rq_dbrec : 0;
}

int hx_ring_rq(hx_world *w, int d, uint32_t qpn)
{
	struct hx_dev *h = D(w, d);
	struct hx_qp_rec *q = qp_find(h, qpn);

	if (!q)
		return HX_E_NOOBJ;
	ring_db(h, q->uctx, QRNIC_DB_RQ, qpn, q->rq_pi);
	return 0;
}

/* The SGE array of a WQE being built. */
static void put_sges(uint8_t *dst, unsigned nsge, const uint64_t *addr, const uint32_t *len,
		     const uint32_t *key)
{
	for (unsigned i = 0; i < nsge; i++) {
		struct qrnic_sge s = { addr[i], len[i], key[i] };

		memcpy(dst + i * sizeof(s), &s, sizeof(s));
	}
}

/* The send WQE is built where it goes, in the ring in host memory: building
 * it elsewhere and copying it in stalls on store forwarding (the copy reads
 * with wide loads what was just stored field by field).  scratch stands in
 * for a ring outside host memory (the WQE is then lost, as a write there
 * would be). */
static uint8_t *sq_slot(struct hx_dev *h, struct hx_qp_rec *q, uint8_t *scratch)
{
	uint32_t mask = (1u << q->sq_log) - 1;
	uint64_t addr = ring_at(q->sq_addr, q->sq_pl, 1ull << (q->sq_log + q->sq_shift),
				(uint64_t)(q->sq_pi & mask) << q->sq_shift);

	return mem_range_ok(h, addr, 1u << q->sq_shift) ? mem_ptr(h, addr) : scratch;
}

static int64_t sq_commit(hx_world *w, struct hx_dev *h, struct hx_qp_rec *q, uint8_t *slot, int ring)
{
	uint32_t idx = q->sq_pi;

	apply_patches(h->wqe_patch, h->nwqe_patch, slot, 1u << q->sq_shift);
	h->nwqe_patch = 0;
	q->sq_pi++;
	if (ring && q->sq_dbrec) {
		/* after the WQE, then the device's flag (spec 8.6.2) */
		uint32_t flags = 0;

		hx_mem_write(w, h->idx, q->sq_dbrec, &q->sq_pi, sizeof(q->sq_pi));
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		hx_mem_read(w, h->idx, q->sq_dbrec + 4, &flags, sizeof(flags));
		if (flags & QRNIC_SQ_DBREC_NO_DB) {
			h->sq_db_skipped++;
			return idx;
		}
	}
	if (ring)
		hx_ring_sq(w, h->idx, q->qpn);
	return idx;
}

int64_t hx_post_send(hx_world *w, int d, uint32_t qpn, unsigned opcode, unsigned flags,
		     uint64_t wr_id, unsigned nsge, const uint64_t *sge_addr,
		     const uint32_t *sge_len, const uint32_t *sge_key,
		     const void *inl, uint32_t inl_len, uint32_t imm, uint32_t rkey,
		     uint64_t raddr, uint64_t compare_add, uint64_t swap, uint32_t ah,
		     uint32_t remote_qpn, uint32_t remote_qkey, int ring)
{
	struct hx_dev *h = D(w, d);
	struct hx_qp_rec *q = qp_find(h, qpn);
	_Alignas(64) uint8_t scratch[1u << QRNIC_MAX_SEND_WQE_SHIFT];
	struct qrnic_send_wqe *wqe;
	uint8_t *slot;
	uint32_t stride;

	if (!q)
		return HX_E_NOOBJ;
	stride = 1u << q->sq_shift;
	if (stride > sizeof(scratch))
		return HX_E_INVAL;
	if (flags & QRNIC_WQE_F_INLINE) {
		if (sizeof(*wqe) + (uint64_t)inl_len > stride)
			return HX_E_INVAL;
	} else if (sizeof(*wqe) + (uint64_t)nsge * sizeof(struct qrnic_sge) > stride) {
		return HX_E_INVAL;
	}
	if (q->sq_pi - q->sq_ci >= (1u << q->sq_log))
		return HX_E_FULL;
	slot = sq_slot(h, q, scratch);
	/* the header and what follows it (SGEs or inline data); the rest of
	 * the stride is left as it is, as a driver does: the device reads
	 * only what the header says is there */
	memset(slot, 0, sizeof(*wqe));
	wqe = (struct qrnic_send_wqe *)slot;	/* rings are page-aligned in host memory */
	wqe->opcode = (uint8_t)opcode;
	wqe->flags = (uint8_t)flags;
	wqe->num_sge = (uint8_t)nsge;
	wqe->inline_len = (flags & QRNIC_WQE_F_INLINE) ? inl_len : 0;
	wqe->wr_id = wr_id;
	wqe->imm_data = __builtin_bswap32(imm);	/* network byte order */
	wqe->rkey = rkey;
	wqe->remote_addr = raddr;
	wqe->compare_add = compare_add;
	wqe->swap = swap;
	wqe->ah = ah;
	wqe->remote_qpn = remote_qpn;
	wqe->remote_qkey = remote_qkey;
	if (flags & QRNIC_WQE_F_INLINE) {
		if (inl_len)
			memcpy(slot + sizeof(*wqe), inl, inl_len);
	} else {
		put_sges(slot + sizeof(*wqe), nsge, sge_addr, sge_len, sge_key);
	}
	return sq_commit(w, h, q, slot, ring);
}

int64_t hx_post_send_raw(hx_world *w, int d, uint32_t qpn, const void *bytes, uint32_t len, int ring)
{
	struct hx_dev *h = D(w, d);
	struct hx_qp_rec *q = qp_find(h, qpn);
	_Alignas(64) uint8_t scratch[1u << QRNIC_MAX_SEND_WQE_SHIFT];
	uint8_t *slot;
	uint32_t stride;

	if (!q)
		return HX_E_NOOBJ;
	stride = 1u << q->sq_shift;
	if (stride > sizeof(scratch))
		return HX_E_INVAL;
	if (q->sq_pi - q->sq_ci >= (1u << q->sq_log))
		return HX_E_FULL;
	slot = sq_slot(h, q, scratch);
	memset(slot, 0, stride);
	memcpy(slot, bytes, len < stride ? len : stride);
	return sq_commit(w, h, q, slot, ring);
}

static int64_t put_rq(hx_world *w, struct hx_dev *h, struct hx_qp_rec *q, uint8_t *slot, int ring)
{
	uint32_t stride = 1u << q->rq_shift, mask = (1u << q->rq_log) - 1;
	uint32_t idx = q->rq_pi;

	if (!q->rq_log && !q->rq_shift)
		return HX_E_INVAL;
	if (q->rq_pi - q->rq_ci >= (1u << q->rq_log))
		return HX_E_FULL;
	apply_patches(h->wqe_patch, h->nwqe_patch, slot, stride);
	h->nwqe_patch = 0;
	hx_mem_write(w, h->idx, ring_at(q->rq_addr, q->rq_pl, 1ull << (q->rq_log + q->rq_shift),
					(uint64_t)(idx & mask) << q->rq_shift), slot, stride);
	q->rq_pi++;
	if (ring && q->rq_dbrec)	/* after the WQE, as a driver orders it */
		hx_mem_write(w, h->idx, q->rq_dbrec, &q->rq_pi, sizeof(q->rq_pi));
	else if (ring)
		hx_ring_rq(w, h->idx, q->qpn);
	return idx;
}

/* A receive WQE (RQ or SRQ) in slot, of 'stride' bytes; -1 if it does not fit. */
static int build_recv(uint8_t slot[1u << QRNIC_MAX_RECV_WQE_SHIFT], uint32_t stride,
		      uint64_t wr_id, unsigned nsge, const uint64_t *sge_addr,
		      const uint32_t *sge_len, const uint32_t *sge_key)
{
	struct qrnic_recv_wqe r;

	if (stride > (1u << QRNIC_MAX_RECV_WQE_SHIFT) ||
	    sizeof(r) + (uint64_t)nsge * sizeof(struct qrnic_sge) > stride)
		return -1;
	memset(slot, 0, 1u << QRNIC_MAX_RECV_WQE_SHIFT);
	memset(&r, 0, sizeof(r));
	r.wr_id = wr_id;
	r.num_sge = (uint8_t)nsge;
	memcpy(slot, &r, sizeof(r));
	put_sges(slot + sizeof(r), nsge, sge_addr, sge_len, sge_key);
	return 0;
}

int64_t hx_post_recv(hx_world *w, int d, uint32_t qpn, uint64_t wr_id, unsigned nsge,
		     const uint64_t *sge_addr, const uint32_t *sge_len, const uint32_t *sge_key,
		     int ring)
{
	struct hx_dev *h = D(w, d);
	struct hx_qp_rec *q = qp_find(h, qpn);
	uint8_t slot[1u << QRNIC_MAX_RECV_WQE_SHIFT];

	if (!q)
		return HX_E_NOOBJ;
	if (build_recv(slot, 1u << q->rq_shift, wr_id, nsge, sge_addr, sge_len, sge_key))
		return HX_E_INVAL;
	return put_rq(w, h, q, slot, ring);
}

int64_t hx_post_recv_raw(hx_world *w, int d, uint32_t qpn, const void *bytes, uint32_t len, int ring)
{
	struct hx_dev *h = D(w, d);
	struct hx_qp_rec *q = qp_find(h, qpn);
	uint8_t slot[1u << QRNIC_MAX_RECV_WQE_SHIFT];
	uint32_t stride;

	if (!q)
		return HX_E_NOOBJ;
	stride = 1u << q->rq_shift;
	if (stride > sizeof(slot))
		return HX_E_INVAL;
	memset(slot, 0, sizeof(slot));
	memcpy(slot, bytes, len < stride ? len : stride);
	return put_rq(w, h, q, slot, ring);
}

/* ---- driver: shared receive queues ---------------------------------------------- */
static struct hx_srq_rec *srq_find(struct hx_dev *h, uint32_t srqn)
{
	if (!h || srqn >= h->nsrqs || !h->srqs[srqn].valid)
		return NULL;
	return &h->srqs[srqn];
}

int64_t hx_create_srq(hx_world *w, int d, uint32_t uctx, uint32_t pdn, unsigned log_depth,
		      unsigned wqe_shift, uint32_t limit, int dbrec)
{
	struct hx_dev *h = D(w, d);
	struct qrnic_aq_cmd c;
	uint64_t ring, rec = 0, bytes, addr;
	bool pl;
	int64_t r;

	if (!h)
		return HX_E_INVAL;
	bytes = log_depth + wqe_shift <= 24 ? 1ull << (log_depth + wqe_shift) : HX_PAGE;
	ring = hx_mem_alloc(w, d, bytes, HX_PAGE);
	pl = ring && log_depth + wqe_shift <= 24 && ring_listed(h, bytes);
	addr = pl ? ring_list(w, d, ring, bytes) : ring;
	if (!addr)
		return HX_E_NOMEM;
	if (dbrec)
		rec = hx_mem_alloc(w, d, 64, 64);
	if (!ring || (dbrec && !rec))
		return HX_E_NOMEM;
	cmd_init(&c, QRNIC_CMD_CREATE_SRQ);
	c.u.create_srq.uctx = uctx;
	c.u.create_srq.pdn = pdn;
	c.u.create_srq.log_depth = (uint8_t)log_depth;
	c.u.create_srq.wqe_shift = (uint8_t)wqe_shift;
	c.u.create_srq.limit = limit;
	c.u.create_srq.flags = pl ? QRNIC_SRQ_F_PAGELIST : 0;
	c.u.create_srq.ring_addr = addr;
	c.u.create_srq.dbrec_addr = rec;
	r = admin_handle(w, d, &c);
	if (r >= 0 && r < (1 << 24)) {
		GROW(h->srqs, h->nsrqs, (uint32_t)r);
		h->srqs[r] = (struct hx_srq_rec){ .valid = true, .srqn = (uint32_t)r, .uctx = uctx,
			.log = (uint8_t)log_depth, .shift = (uint8_t)wqe_shift, .ring = ring,
			.dbrec = rec, .pl = pl };
	}
	return r;
}

/* The device's consumer index record of an SRQ (what a provider reads). */
int64_t hx_srq_ci(hx_world *w, int d, uint32_t srqn)
{
	struct hx_srq_rec *q = srq_find(D(w, d), srqn);
	uint32_t ci = 0;

	if (!q || !q->dbrec)
		return HX_E_NOOBJ;
	hx_mem_read(w, d, q->dbrec, &ci, sizeof(ci));
	return ci;
}

int hx_ring_srq(hx_world *w, int d, uint32_t srqn)
{
	struct hx_dev *h = D(w, d);
	struct hx_srq_rec *q = srq_find(h, srqn);

	if (!q)
		return HX_E_NOOBJ;
	ring_db(h, q->uctx, QRNIC_DB_SRQ, srqn, q->pi);
	return 0;
}

/* Post a receive WQE to an SRQ (room: by the consumer record, as a
 * provider does); returns its SRQ index. */
int64_t hx_post_srq_recv(hx_world *w, int d, uint32_t srqn, uint64_t wr_id, unsigned nsge,
			 const uint64_t *sge_addr, const uint32_t *sge_len, const uint32_t *sge_key,
			 int ring)
{
	struct hx_dev *h = D(w, d);
	struct hx_srq_rec *q = srq_find(h, srqn);
	uint8_t slot[1u << QRNIC_MAX_RECV_WQE_SHIFT];
	uint32_t stride, idx;

	if (!q)
		return HX_E_NOOBJ;
	stride = 1u << q->shift;
	if (build_recv(slot, stride, wr_id, nsge, sge_addr, sge_len, sge_key))
		return HX_E_INVAL;
	if (q->dbrec && q->pi - (uint32_t)hx_srq_ci(w, d, srqn) >= (1u << q->log))
		return HX_E_FULL;
	idx = q->pi;
	apply_patches(h->wqe_patch, h->nwqe_patch, slot, stride);
	h->nwqe_patch = 0;
	hx_mem_write(w, d, ring_at(q->ring, q->pl, 1ull << (q->log + q->shift),
				   (uint64_t)(idx & ((1u << q->log) - 1)) << q->shift), slot, stride);
	q->pi++;
	if (ring)
		hx_ring_srq(w, d, srqn);
	return idx;
}

/* MODIFY_SRQ; returns the admin status (0) or a negative one */
int hx_modify_srq(hx_world *w, int d, uint32_t srqn, uint32_t mask, uint32_t limit)
{
	struct qrnic_aq_cmd c;
	int64_t r;

	cmd_init(&c, QRNIC_CMD_MODIFY_SRQ);
	c.u.modify_srq.srqn = srqn;
	c.u.modify_srq.attr_mask = mask;
	c.u.modify_srq.limit = limit;
	r = admin_handle(w, d, &c);
	return r < 0 ? (int)r : 0;
}

/* QUERY_SRQ: out3 = limit, depth, WQEs not yet taken */
int hx_query_srq(hx_world *w, int d, uint32_t srqn, uint32_t *out3)
{
	struct qrnic_aq_cmd c;
	struct qrnic_aq_cqe cqe;
	int rc;

	cmd_init(&c, QRNIC_CMD_QUERY_SRQ);
	c.u.handle.handle = srqn;
	rc = hx_admin(w, d, &c, &cqe, 0);
	if (rc < 0)
		return rc;
	if (rc != QRNIC_AQ_OK)
		return -rc;
	memcpy(out3, cqe.result, 3 * sizeof(uint32_t));
	return 0;
}

int hx_qp_indexes(hx_world *w, int d, uint32_t qpn, uint32_t *out4)
{
	struct hx_qp_rec *q = qp_find(D(w, d), qpn);

	if (!q)
		return HX_E_NOOBJ;
	out4[0] = q->sq_pi;
	out4[1] = q->sq_ci;
	out4[2] = q->rq_pi;
	out4[3] = q->rq_ci;
	return 0;
}

static bool cqe_ready(struct hx_dev *h, struct hx_cq_rec *c, uint32_t ci, struct qrnic_cqe *out,
		      uint64_t *ts)
{
	uint32_t mask = (1u << c->log) - 1, size = QRNIC_CQ_CQE_SIZE(c->flags);
	uint64_t addr = ring_at(c->ring, c->pl, (uint64_t)size << c->log, (uint64_t)(ci & mask) * size);
	const uint8_t *cqe;

	if (!mem_range_ok(h, addr, size))
		return false;
	/* look at the owner bit in place; copy only a valid CQE */
	cqe = mem_ptr(h, addr);
	if ((cqe[offsetof(struct qrnic_cqe, owner)] & 1) != (((ci >> c->log) & 1) ^ 1))
		return false;
	if (out)
		memcpy(out, cqe, sizeof(*out));
	if (ts) {	/* 64-byte CQE: the completion timestamp (LE); else 0 */
		*ts = 0;
		if (size > sizeof(*out))
			for (int i = 7; i >= 0; i--)
				*ts = *ts << 8 | cqe[offsetof(struct qrnic_cqe64, timestamp) + i];
	}
	return true;
}

static void cq_update_ci(struct hx_dev *h, struct hx_cq_rec *c, bool arm, bool sol)
{
	uint64_t v = (c->cqn & QRNIC_DB_QN_MASK) | ((uint64_t)c->ci << QRNIC_DB_IDX_SHIFT);

	if (c->dbrec)
		hx_mem_write(h->w, h->idx, c->dbrec, &c->ci, 4);
	if (arm)
		v |= QRNIC_DB_CQ_ARM | (sol ? QRNIC_DB_CQ_SOLICITED : 0);
	qrnic_dev_db_write(h->dev, db_page(c->uctx) + QRNIC_DB_CQ, v, 8);
}

int hx_poll_cq(hx_world *w, int d, uint32_t cqn, void *out, int max)
{
	return hx_poll_cq_ts(w, d, cqn, out, NULL, max);
}

int hx_poll_cq_ts(hx_world *w, int d, uint32_t cqn, void *out, uint64_t *ts_out, int max)
{
	struct hx_dev *h = D(w, d);
	struct hx_cq_rec *c = cq_find(h, cqn);
	struct qrnic_cqe cqe;
	uint64_t ts;
	int n = 0;

	if (!c)
		return HX_E_NOOBJ;
	while (n < max && cqe_ready(h, c, c->ci, &cqe, &ts)) {
		struct hx_qp_rec *q = qp_find(h, cqe.qpn);

		memcpy((uint8_t *)out + (size_t)n * sizeof(cqe), &cqe, sizeof(cqe));
		if (ts_out)
			ts_out[n] = ts;
		c->ci++;
		n++;
		if (q) {
			bool send = (cqe.flags & QRNIC_CQE_F_SEND) || cqe.opcode < QRNIC_WC_OP_RECV;

			if (send && q->sq_log < 32) {
				uint32_t m = (1u << q->sq_log) - 1;
				uint32_t idx = q->sq_ci + ((cqe.wqe_index - q->sq_ci) & m);

				if (idx - q->sq_ci < q->sq_pi - q->sq_ci)
					q->sq_ci = idx + 1;
			} else if (!send && q->rq_ci != q->rq_pi) {
				q->rq_ci++;
			}
		}
	}
	if (n)
		cq_update_ci(h, c, false, false);
	return n;
}

int hx_peek_cq(hx_world *w, int d, uint32_t cqn)
{
	struct hx_dev *h = D(w, d);
	struct hx_cq_rec *c = cq_find(h, cqn);
	int n = 0;

	if (!c)
		return HX_E_NOOBJ;
	while (n < (1 << c->log) && cqe_ready(h, c, c->ci + (uint32_t)n, NULL, NULL))
		n++;
	return n;
}

int hx_arm_cq(hx_world *w, int d, uint32_t cqn, int solicited)
{
	struct hx_dev *h = D(w, d);
	struct hx_cq_rec *c = cq_find(h, cqn);

	if (!c)
		return HX_E_NOOBJ;
	cq_update_ci(h, c, true, solicited != 0);
	return 0;
}

uint32_t hx_cq_ci(hx_world *w, int d, uint32_t cqn)
{
	struct hx_cq_rec *c = cq_find(D(w, d), cqn);
	return c ? c->ci : 0;
}

int hx_poll_eq(hx_world *w, int d, uint32_t eqn, void *out, int max)
{
	struct hx_dev *h = D(w, d);
	struct hx_eq_rec *e;
	struct qrnic_eqe eqe;
	int n = 0;

	if (!h || eqn >= h->neqs || !h->eqs[eqn].valid)
		return HX_E_NOOBJ;
	e = &h->eqs[eqn];
	while (n < max) {
		uint32_t mask = (1u << e->log) - 1;

		hx_mem_read(w, d, e->ring + (uint64_t)(e->ci & mask) * sizeof(eqe), &eqe, sizeof(eqe));
		if ((eqe.owner & 1) != (((e->ci >> e->log) & 1) ^ 1))
			break;
		memcpy((uint8_t *)out + (size_t)n * sizeof(eqe), &eqe, sizeof(eqe));
		e->ci++;
		n++;
	}
	if (n)
		qrnic_dev_reg_write(h->dev, QRNIC_REG_EQ_DB,
				    (eqn & QRNIC_EQ_DB_EQN_MASK) |
				    ((uint64_t)e->ci << QRNIC_EQ_DB_CI_SHIFT), 8);
	return n;
}

int hx_arm_eq(hx_world *w, int d, uint32_t eqn)
{
	struct hx_dev *h = D(w, d);

	if (!h || eqn >= h->neqs || !h->eqs[eqn].valid)
		return HX_E_NOOBJ;
	qrnic_dev_reg_write(h->dev, QRNIC_REG_EQ_DB,
			    (eqn & QRNIC_EQ_DB_EQN_MASK) | QRNIC_EQ_DB_ARM |
			    ((uint64_t)h->eqs[eqn].ci << QRNIC_EQ_DB_CI_SHIFT), 8);
	return 0;
}

/* ---- layout table ---------------------------------------------------------------- */
#define L(s, f) #s " " #f " %zu %zu\n", offsetof(struct s, f), sizeof(((struct s *)0)->f)
#define S(s) #s " __size__ %zu 0\n", sizeof(struct s)

const char *hx_layout(void)
{
	static char buf[16384];
	size_t n = 0;

#define P(...) (n += (size_t)snprintf(buf + n, sizeof(buf) - n, __VA_ARGS__))
	P(S(qrnic_send_wqe)); P(L(qrnic_send_wqe, opcode)); P(L(qrnic_send_wqe, flags));
	P(L(qrnic_send_wqe, num_sge)); P(L(qrnic_send_wqe, inline_len)); P(L(qrnic_send_wqe, wr_id));
	P(L(qrnic_send_wqe, imm_data)); P(L(qrnic_send_wqe, rkey)); P(L(qrnic_send_wqe, remote_addr));
	P(L(qrnic_send_wqe, compare_add)); P(L(qrnic_send_wqe, swap)); P(L(qrnic_send_wqe, ah));
	P(L(qrnic_send_wqe, remote_qpn)); P(L(qrnic_send_wqe, remote_qkey));
	P(L(qrnic_send_wqe, xrc_srqn));
	P(S(qrnic_sge)); P(L(qrnic_sge, addr)); P(L(qrnic_sge, length)); P(L(qrnic_sge, lkey));
	P(S(qrnic_recv_wqe)); P(L(qrnic_recv_wqe, wr_id)); P(L(qrnic_recv_wqe, num_sge));
	P(S(qrnic_cqe)); P(L(qrnic_cqe, wr_id)); P(L(qrnic_cqe, byte_len)); P(L(qrnic_cqe, imm_data));
	P(L(qrnic_cqe, qpn)); P(L(qrnic_cqe, src_qp)); P(L(qrnic_cqe, status)); P(L(qrnic_cqe, opcode));
	P(L(qrnic_cqe, flags)); P(L(qrnic_cqe, vendor_err)); P(L(qrnic_cqe, wqe_index)); P(L(qrnic_cqe, owner));
	P(S(qrnic_eqe)); P(L(qrnic_eqe, type)); P(L(qrnic_eqe, subtype)); P(L(qrnic_eqe, handle));
	P(L(qrnic_eqe, data)); P(L(qrnic_eqe, owner));
	P(S(qrnic_av)); P(L(qrnic_av, dgid)); P(L(qrnic_av, flow_label)); P(L(qrnic_av, sgid_index));
	P(L(qrnic_av, hop_limit)); P(L(qrnic_av, traffic_class)); P(L(qrnic_av, net_type)); P(L(qrnic_av, dmac));
	P(S(qrnic_qp_attr)); P(L(qrnic_qp_attr, attr_mask)); P(L(qrnic_qp_attr, qp_state));
	P(L(qrnic_qp_attr, cur_qp_state)); P(L(qrnic_qp_attr, path_mtu)); P(L(qrnic_qp_attr, timeout));
	P(L(qrnic_qp_attr, retry_cnt)); P(L(qrnic_qp_attr, rnr_retry)); P(L(qrnic_qp_attr, min_rnr_timer));
	P(L(qrnic_qp_attr, max_rd_atomic)); P(L(qrnic_qp_attr, max_dest_rd_atomic));
	P(L(qrnic_qp_attr, sq_draining)); P(L(qrnic_qp_attr, en_sqd_async_notify));
	P(L(qrnic_qp_attr, port_num)); P(L(qrnic_qp_attr, pkey_index)); P(L(qrnic_qp_attr, qkey));
	P(L(qrnic_qp_attr, rq_psn)); P(L(qrnic_qp_attr, sq_psn)); P(L(qrnic_qp_attr, dest_qpn));
	P(L(qrnic_qp_attr, qp_access_flags)); P(L(qrnic_qp_attr, av));
	P(S(qrnic_aq_cmd)); P(L(qrnic_aq_cmd, hdr)); P(L(qrnic_aq_cmd, u));
	P(S(qrnic_aq_hdr)); P(L(qrnic_aq_hdr, opcode)); P(L(qrnic_aq_hdr, flags)); P(L(qrnic_aq_hdr, cmd_id));
	P(L(qrnic_aq_hdr, rsvd));
	P(S(qrnic_aq_cqe)); P(L(qrnic_aq_cqe, result)); P(L(qrnic_aq_cqe, cmd_id)); P(L(qrnic_aq_cqe, opcode));
	P(L(qrnic_aq_cqe, status)); P(L(qrnic_aq_cqe, sq_ci)); P(L(qrnic_aq_cqe, detail)); P(L(qrnic_aq_cqe, owner));
	P(S(qrnic_cmd_query)); P(L(qrnic_cmd_query, resp_addr)); P(L(qrnic_cmd_query, resp_len));
	P(L(qrnic_cmd_query, port));
	P(S(qrnic_cmd_gid)); P(L(qrnic_cmd_gid, index)); P(L(qrnic_cmd_gid, valid)); P(L(qrnic_cmd_gid, net_type));
	P(L(qrnic_cmd_gid, rsvd)); P(L(qrnic_cmd_gid, gid));
	P(S(qrnic_cmd_create_cq)); P(L(qrnic_cmd_create_cq, uctx)); P(L(qrnic_cmd_create_cq, eqn));
	P(L(qrnic_cmd_create_cq, log_depth)); P(L(qrnic_cmd_create_cq, flags));
	P(L(qrnic_cmd_create_cq, rsvd)); P(L(qrnic_cmd_create_cq, ring_addr));
	P(L(qrnic_cmd_create_cq, dbrec_addr));
	P(S(qrnic_cmd_create_qp)); P(L(qrnic_cmd_create_qp, uctx)); P(L(qrnic_cmd_create_qp, pdn));
	P(L(qrnic_cmd_create_qp, send_cqn)); P(L(qrnic_cmd_create_qp, recv_cqn)); P(L(qrnic_cmd_create_qp, qp_type));
	P(L(qrnic_cmd_create_qp, sq_log_depth)); P(L(qrnic_cmd_create_qp, sq_wqe_shift));
	P(L(qrnic_cmd_create_qp, rq_log_depth)); P(L(qrnic_cmd_create_qp, rq_wqe_shift));
	P(L(qrnic_cmd_create_qp, rsvd0)); P(L(qrnic_cmd_create_qp, flags)); P(L(qrnic_cmd_create_qp, srqn));
	P(L(qrnic_cmd_create_qp, sq_addr)); P(L(qrnic_cmd_create_qp, rq_addr));
	P(L(qrnic_cmd_create_qp, rq_dbrec_addr)); P(L(qrnic_cmd_create_qp, sq_dbrec_addr));
	P(S(qrnic_cmd_modify_qp)); P(L(qrnic_cmd_modify_qp, qpn)); P(L(qrnic_cmd_modify_qp, rsvd));
	P(L(qrnic_cmd_modify_qp, attr));
	P(S(qrnic_cmd_query_qp)); P(L(qrnic_cmd_query_qp, handle)); P(L(qrnic_cmd_query_qp, resp_len));
	P(L(qrnic_cmd_query_qp, resp_addr));
	P(S(qrnic_cmd_reg_mr)); P(L(qrnic_cmd_reg_mr, pdn)); P(L(qrnic_cmd_reg_mr, access));
	P(L(qrnic_cmd_reg_mr, flags)); P(L(qrnic_cmd_reg_mr, page_shift)); P(L(qrnic_cmd_reg_mr, pbl_levels));
	P(L(qrnic_cmd_reg_mr, rsvd)); P(L(qrnic_cmd_reg_mr, iova)); P(L(qrnic_cmd_reg_mr, length));
	P(L(qrnic_cmd_reg_mr, pbl_addr)); P(L(qrnic_cmd_reg_mr, npages)); P(L(qrnic_cmd_reg_mr, rsvd2));
	P(S(qrnic_cmd_create_ah)); P(L(qrnic_cmd_create_ah, pdn)); P(L(qrnic_cmd_create_ah, rsvd));
	P(L(qrnic_cmd_create_ah, av));
	P(S(qrnic_cmd_create_eq)); P(L(qrnic_cmd_create_eq, log_depth)); P(L(qrnic_cmd_create_eq, rsvd0));
	P(L(qrnic_cmd_create_eq, vector)); P(L(qrnic_cmd_create_eq, flags)); P(L(qrnic_cmd_create_eq, ring_addr));
	P(S(qrnic_device_attr)); P(L(qrnic_device_attr, abi_version)); P(L(qrnic_device_attr, fw_version));
	P(L(qrnic_device_attr, max_qp)); P(L(qrnic_device_attr, max_qp_wr)); P(L(qrnic_device_attr, max_sge));
	P(L(qrnic_device_attr, max_inline)); P(L(qrnic_device_attr, max_cq)); P(L(qrnic_device_attr, max_cqe));
	P(L(qrnic_device_attr, max_mr)); P(L(qrnic_device_attr, max_pd)); P(L(qrnic_device_attr, max_ah));
	P(L(qrnic_device_attr, max_eq)); P(L(qrnic_device_attr, max_uctx)); P(L(qrnic_device_attr, max_mtt));
	P(L(qrnic_device_attr, max_qp_rd_atom)); P(L(qrnic_device_attr, max_qp_init_rd_atom));
	P(L(qrnic_device_attr, max_msg_size)); P(L(qrnic_device_attr, num_vectors));
	P(L(qrnic_device_attr, gid_tbl_len)); P(L(qrnic_device_attr, caps)); P(L(qrnic_device_attr, page_size_cap));
	P(L(qrnic_device_attr, max_mr_size)); P(L(qrnic_device_attr, mac));
	P(L(qrnic_device_attr, max_srq)); P(L(qrnic_device_attr, max_srq_wr));
	P(L(qrnic_device_attr, max_mcg)); P(L(qrnic_device_attr, max_mcg_qp));
	P(L(qrnic_device_attr, max_fast_reg_pages)); P(L(qrnic_device_attr, max_mw));
	P(L(qrnic_device_attr, max_xrcd)); P(L(qrnic_device_attr, hca_core_clock));
	P(L(qrnic_device_attr, timestamp_mask));
	P(S(qrnic_cmd_create_srq)); P(L(qrnic_cmd_create_srq, uctx)); P(L(qrnic_cmd_create_srq, pdn));
	P(L(qrnic_cmd_create_srq, log_depth)); P(L(qrnic_cmd_create_srq, wqe_shift));
	P(L(qrnic_cmd_create_srq, flags)); P(L(qrnic_cmd_create_srq, limit));
	P(L(qrnic_cmd_create_srq, ring_addr)); P(L(qrnic_cmd_create_srq, dbrec_addr));
	P(L(qrnic_cmd_create_srq, xrcd)); P(L(qrnic_cmd_create_srq, cqn)); P(L(qrnic_cmd_create_srq, rsvd1));
	P(S(qrnic_cmd_alloc_xrcd)); P(L(qrnic_cmd_alloc_xrcd, uctx)); P(L(qrnic_cmd_alloc_xrcd, rsvd));
	P(S(qrnic_cmd_modify_srq)); P(L(qrnic_cmd_modify_srq, srqn)); P(L(qrnic_cmd_modify_srq, attr_mask));
	P(L(qrnic_cmd_modify_srq, limit)); P(L(qrnic_cmd_modify_srq, rsvd));
	P(S(qrnic_port_attr)); P(L(qrnic_port_attr, state)); P(L(qrnic_port_attr, phys_state));
	P(L(qrnic_port_attr, max_mtu)); P(L(qrnic_port_attr, active_mtu)); P(L(qrnic_port_attr, gid_tbl_len));
	P(L(qrnic_port_attr, speed_mbps)); P(L(qrnic_port_attr, eth_mtu)); P(L(qrnic_port_attr, mac));
	P(S(qrnic_mpt_entry)); P(L(qrnic_mpt_entry, flags)); P(L(qrnic_mpt_entry, key)); P(L(qrnic_mpt_entry, pdn));
	P(L(qrnic_mpt_entry, access)); P(L(qrnic_mpt_entry, iova)); P(L(qrnic_mpt_entry, length));
	P(L(qrnic_mpt_entry, mtt_base)); P(L(qrnic_mpt_entry, npages)); P(L(qrnic_mpt_entry, page_shift));
	P(L(qrnic_mpt_entry, max_pages));
	P(S(qrnic_cmd_alloc_mr)); P(L(qrnic_cmd_alloc_mr, pdn)); P(L(qrnic_cmd_alloc_mr, max_pages));
	P(L(qrnic_cmd_alloc_mr, flags)); P(L(qrnic_cmd_alloc_mr, rsvd));
	P(S(qrnic_cmd_alloc_mw)); P(L(qrnic_cmd_alloc_mw, pdn)); P(L(qrnic_cmd_alloc_mw, type));
	P(L(qrnic_cmd_alloc_mw, rsvd0)); P(L(qrnic_cmd_alloc_mw, flags)); P(L(qrnic_cmd_alloc_mw, rsvd));
	P(S(qrnic_cmd_rereg_mr)); P(L(qrnic_cmd_rereg_mr, key)); P(L(qrnic_cmd_rereg_mr, change));
	P(L(qrnic_cmd_rereg_mr, reg));
	P(S(qrnic_cmd_resize_cq)); P(L(qrnic_cmd_resize_cq, cqn)); P(L(qrnic_cmd_resize_cq, log_depth));
	P(L(qrnic_cmd_resize_cq, flags)); P(L(qrnic_cmd_resize_cq, rsvd));
	P(L(qrnic_cmd_resize_cq, ring_addr)); P(L(qrnic_cmd_resize_cq, rsvd2));
	P(S(qrnic_cmd_modify_cq)); P(L(qrnic_cmd_modify_cq, cqn)); P(L(qrnic_cmd_modify_cq, count));
	P(L(qrnic_cmd_modify_cq, period_us)); P(L(qrnic_cmd_modify_cq, rsvd));
	P(S(qrnic_bind_mw_wqe)); P(L(qrnic_bind_mw_wqe, access)); P(L(qrnic_bind_mw_wqe, mr_lkey));
	P(L(qrnic_bind_mw_wqe, key)); P(L(qrnic_bind_mw_wqe, rsvd1)); P(L(qrnic_bind_mw_wqe, addr));
	P(L(qrnic_bind_mw_wqe, length)); P(L(qrnic_bind_mw_wqe, rsvd2));
	P(S(qrnic_reg_mr_wqe)); P(L(qrnic_reg_mr_wqe, page_shift)); P(L(qrnic_reg_mr_wqe, access));
	P(L(qrnic_reg_mr_wqe, npages)); P(L(qrnic_reg_mr_wqe, key)); P(L(qrnic_reg_mr_wqe, rsvd0));
	P(L(qrnic_reg_mr_wqe, length)); P(L(qrnic_reg_mr_wqe, pbl_addr)); P(L(qrnic_reg_mr_wqe, rsvd1));
	P(S(qrnic_trace_ev)); P(L(qrnic_trace_ev, t_ns)); P(L(qrnic_trace_ev, type)); P(L(qrnic_trace_ev, qpn));
	P(L(qrnic_trace_ev, psn)); P(L(qrnic_trace_ev, a)); P(L(qrnic_trace_ev, b)); P(L(qrnic_trace_ev, addr));
	P(S(hx_trace_rec)); P(L(hx_trace_rec, ev)); P(L(hx_trace_rec, dev));
	P(S(hx_frame_info)); P(L(hx_frame_info, t_ns)); P(L(hx_frame_info, seq)); P(L(hx_frame_info, src_seq));
	P(L(hx_frame_info, src)); P(L(hx_frame_info, dst)); P(L(hx_frame_info, len)); P(L(hx_frame_info, fate));
#undef P
	return buf;
}

/* ---- a ready RC connection between devices 0 and 1 (C users: smoke, bench) -- */
static void gid_v4(uint8_t *g, int host)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	g[12] = 10;
	g[15] = (uint8_t)host;
}

int hx_setup_rc_pair(hx_world *w, unsigned ib_mtu, unsigned sq_log, unsigned cq_log,
		     struct hx_pair *p)
{
	uint8_t gid[2][16];

	memset(p, 0, sizeof(*p));
	for (int i = 0; i < 2; i++) {
		if (hx_drv_bringup(w, i, 5))
			return HX_E_DEV;
		gid_v4(gid[i], i + 1);
		if (hx_set_gid(w, i, 0, 1, QRNIC_NET_IPV4, gid[i]))
			return HX_E_DEV;
		p->eq[i] = hx_create_eq(w, i, 10, 1, 0);
		p->pd[i] = hx_create_pd(w, i, 0);
		p->cq[i] = p->eq[i] > 0 && p->pd[i] > 0
			   ? hx_create_cq(w, i, 0, (uint32_t)p->eq[i], cq_log, 1) : -1;
		p->qp[i] = p->cq[i] > 0
			   ? hx_create_qp(w, i, 0, (uint32_t)p->pd[i], (uint32_t)p->cq[i],
					  (uint32_t)p->cq[i], QRNIC_QPT_RC, sq_log, 9, sq_log, 9, 0)
			   : -1;
		if (p->qp[i] <= 1) {
			hx_err(w, "dev %d: setup failed (eq %lld pd %lld cq %lld qp %lld)", i,
			       (long long)p->eq[i], (long long)p->pd[i], (long long)p->cq[i],
			       (long long)p->qp[i]);
			return HX_E_DEV;
		}
	}
	if (hx_cable(w, 0, 1))
		return HX_E_INVAL;
	for (int i = 0; i < 2; i++) {
		struct qrnic_qp_attr a;
		int o = 1 - i;

		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
			      QRNIC_QP_ATTR_ACCESS_FLAGS;
		a.qp_state = QRNIC_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_READ |
				    QRNIC_ACCESS_REMOTE_ATOMIC;
		if (hx_modify_qp(w, i, (uint32_t)p->qp[i], &a))
			return HX_E_DEV;
		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_AV | QRNIC_QP_ATTR_PATH_MTU |
			      QRNIC_QP_ATTR_DEST_QPN | QRNIC_QP_ATTR_RQ_PSN |
			      QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC | QRNIC_QP_ATTR_MIN_RNR_TIMER;
		a.qp_state = QRNIC_QPS_RTR;
		a.path_mtu = (uint8_t)ib_mtu;
		a.dest_qpn = (uint32_t)p->qp[o];
		a.rq_psn = 100;
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		memcpy(a.av.dgid, gid[o], 16);
		memcpy(a.av.dmac, hx_mac(w, o), 6);
		a.av.net_type = QRNIC_NET_IPV4;
		if (hx_modify_qp(w, i, (uint32_t)p->qp[i], &a))
			return HX_E_DEV;
		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_TIMEOUT | QRNIC_QP_ATTR_RETRY_CNT |
			      QRNIC_QP_ATTR_RNR_RETRY | QRNIC_QP_ATTR_SQ_PSN |
			      QRNIC_QP_ATTR_MAX_QP_RD_ATOMIC;
		a.qp_state = QRNIC_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.sq_psn = 100;
		a.max_rd_atomic = 4;
		if (hx_modify_qp(w, i, (uint32_t)p->qp[i], &a))
			return HX_E_DEV;
	}
	return 0;
}

/* ---- fault injection (model/fault.c; rule grammar: docs/faults.md) -------------- */
int hx_fault_add(hx_world *w, int d, const char *rule)
{
	struct hx_dev *h = D(w, d);
	int id;

	if (!h)
		return HX_E_INVAL;
	w->faults_used = true;
	trust_apply(w);
	id = qrnic_fault_add(h->dev, rule, w->err, sizeof(w->err));
	return id < 0 ? HX_E_INVAL : id;
}

int hx_fault_load_plan(hx_world *w, int d, const char *text)
{
	struct hx_dev *h = D(w, d);
	int n;

	if (!h)
		return HX_E_INVAL;
	w->faults_used = true;
	trust_apply(w);
	n = qrnic_fault_load_plan(h->dev, text, w->err, sizeof(w->err));
	return n < 0 ? HX_E_INVAL : n;
}

int hx_fault_check_plan(hx_world *w, const char *text)
{
	int n = qrnic_fault_check_plan(text, w->err, sizeof(w->err));

	return n < 0 ? HX_E_INVAL : n;
}

int hx_fault_del(hx_world *w, int d, int id)
{
	struct hx_dev *h = D(w, d);

	return h && qrnic_fault_del(h->dev, id) == 0 ? 0 : HX_E_NOOBJ;
}

void hx_fault_clear(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);

	if (h)
		qrnic_fault_clear(h->dev);
}

int hx_fault_info(hx_world *w, int d, int id, uint64_t *out3, char *text, uint32_t textlen)
{
	struct hx_dev *h = D(w, d);
	struct qrnic_fault_info fi;

	if (!h || qrnic_fault_info(h->dev, id, &fi))
		return HX_E_NOOBJ;
	if (out3) {
		out3[0] = fi.matched;
		out3[1] = fi.fired;
		out3[2] = fi.done;
	}
	if (text && textlen)
		snprintf(text, textlen, "%s", fi.text);
	return 0;
}

int hx_fault_ids(hx_world *w, int d, int *ids, int max)
{
	struct hx_dev *h = D(w, d);

	return h ? qrnic_fault_ids(h->dev, ids, max) : HX_E_INVAL;
}

int64_t hx_fault_list(hx_world *w, int d, char *buf, uint32_t len)
{
	struct hx_dev *h = D(w, d);

	return h ? (int64_t)qrnic_fault_list(h->dev, buf, len) : HX_E_INVAL;
}

uint64_t hx_fault_total(hx_world *w, int d, int which)
{
	struct hx_dev *h = D(w, d);
	struct qrnic_fault_totals t;

	if (!h)
		return 0;
	qrnic_fault_totals(h->dev, &t);
	switch (which) {
	case 0: return t.injected;
	case 1: return t.held;
	case 2: return t.held_overflow;
	case 3: return t.held_flushed;
	case 4: return t.aq_hung;
	default: return 0;
	}
}

uint64_t hx_drv_ring_addr(hx_world *w, int d, int kind, uint32_t handle)
{
	struct hx_dev *h = D(w, d);
	struct hx_cq_rec *c;
	struct hx_qp_rec *q;

	if (!h)
		return 0;
	switch (kind) {
	case 0:
		c = cq_find(h, handle);
		return c ? c->ring : 0;
	case 1:
		return handle < h->neqs && h->eqs[handle].valid ? h->eqs[handle].ring : 0;
	case 2:
	case 3:
		q = qp_find(h, handle);
		return q ? (kind == 2 ? q->sq_addr : q->rq_addr) : 0;
	default:
		return 0;
	}
}

/* ---- timing model ------------------------------------------------------------ */
int hx_set_timing(hx_world *w, int d, const char *profile, const char *overrides)
{
	struct hx_dev *h = D(w, d);
	char err[256];

	if (!h)
		return HX_E_INVAL;
	if (qrnic_dev_set_timing(h->dev, profile, overrides, err, sizeof(err)) != 0) {
		hx_err(w, "dev %d: %s", d, err);
		return HX_E_INVAL;
	}
	/* kept for hx_dev_snapshot, which makes the device anew */
	snprintf(h->tm_profile, sizeof(h->tm_profile), "%s", profile ? profile : "");
	snprintf(h->tm_over, sizeof(h->tm_over), "%s", overrides ? overrides : "");
	return 0;
}

/* ---- snapshots ---------------------------------------------------------------- */
int64_t hx_dev_save(hx_world *w, int d, void *out, uint64_t cap)
{
	struct hx_dev *h = D(w, d);
	uint8_t *buf;
	size_t len;

	if (!h)
		return HX_E_INVAL;
	if (qrnic_dev_save(h->dev, &buf, &len) != 0) {
		hx_err(w, "dev %d: save failed", d);
		return HX_E_NOMEM;
	}
	if (out && len <= cap)
		memcpy(out, buf, len);
	free(buf);
	return (int64_t)len;
}

int hx_dev_load(hx_world *w, int d, const void *buf, uint64_t len)
{
	struct hx_dev *h = D(w, d);
	char err[256];

	if (!h)
		return HX_E_INVAL;
	if (qrnic_dev_load(h->dev, buf, len, err, sizeof(err)) != 0) {
		hx_err(w, "dev %d: load: %s", d, err);
		return HX_E_INVAL;
	}
	return 0;
}

int hx_snap_describe(const void *buf, uint64_t len, char *out, uint32_t outlen)
{
	return qrnic_snap_describe(buf, len, out, outlen);
}

/* Migrate device d in place: save it, free it, make a new device with the
 * same configuration and host settings, load the stream into it.  The
 * host memory, the wire and the clock stay: what a migration keeps. */
int hx_dev_snapshot(hx_world *w, int d)
{
	struct hx_dev *h = D(w, d);
	struct qrnic_dev *nd;
	uint8_t *buf;
	size_t len;
	char err[256];

	if (!h)
		return HX_E_INVAL;
	if (qrnic_dev_save(h->dev, &buf, &len) != 0) {
		hx_err(w, "dev %d: save failed", d);
		return HX_E_NOMEM;
	}
	qrnic_dev_free(h->dev);
	h->dev = NULL;
	deadline_set(h, UINT64_MAX);
	nd = qrnic_dev_new(&h->cfg, &hx_ops_by_refs[h->refs], h, &qrnic_fw_admin_ops, NULL);
	if (!nd) {
		free(buf);
		hx_err(w, "dev %d: qrnic_dev_new failed", d);
		return HX_E_DEV;
	}
	h->dev = nd;
	qrnic_dev_set_trace(nd, w->trace_cap != 0);
	qrnic_dev_set_clock(nd, &w->now);
	qrnic_dev_set_selfcheck(nd, h->selfcheck);
	if (h->tm_profile[0] &&
	    qrnic_dev_set_timing(nd, h->tm_profile, h->tm_over[0] ? h->tm_over : NULL, err,
				 sizeof(err)) != 0) {
		free(buf);
		hx_err(w, "dev %d: timing: %s", d, err);
		return HX_E_INVAL;
	}
	trust_apply(w);
	qrnic_dev_set_lazy_icrc(nd, h->lazy_icrc);
	qrnic_dev_set_trains(nd, h->trains);
	qrnic_dev_set_db_batch(nd, h->db_batch);
	if (qrnic_dev_load(nd, buf, len, err, sizeof(err)) != 0) {
		free(buf);
		hx_err(w, "dev %d: load: %s", d, err);
		return HX_E_INVAL;
	}
	free(buf);
	return 0;
}
