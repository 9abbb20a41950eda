/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: logging and tracing, the choke points through which
 * every DMA and every frame passes, lookups, and the device's life cycle
 * (create, reset, free).  The rest of the device core: the configuration
 * parameters (config.c), registers and doorbells (regs.c), timed events
 * (events.c), the work loop (work.c) and the receive path (rx.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "qrnic_internal.h"

/* ---- logging, tracing, stats --------------------------------------------- */
static void vlog(struct qrnic_dev *d, enum qrnic_log_level lvl, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void vlog(struct qrnic_dev *d, enum qrnic_log_level lvl, const char *fmt, va_list ap)
{
	char buf[256];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (d->ops->log)
		d->ops->log(d->opaque, lvl, buf);
}

void qrnic_guest_error(struct qrnic_dev *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(d, QRNIC_LOG_GUEST_ERROR, fmt, ap);
	va_end(ap);
}

void qrnic_unimp(struct qrnic_dev *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(d, QRNIC_LOG_UNIMP, fmt, ap);
	va_end(ap);
}

void qrnic_trace_at_emit(struct qrnic_dev *d, uint64_t t, uint32_t type, uint32_t qpn,
			 uint32_t psn, uint32_t a, uint32_t b, uint64_t addr)
{
	struct qrnic_trace_ev ev;

	if (!d->ops->trace || d->trace_off)
		return;
	ev.t_ns = t;
	ev.type = type;
	ev.qpn = qpn;
	ev.psn = psn;
	ev.a = a;
	ev.b = b;
	ev.addr = addr;
	d->ops->trace(d->opaque, &ev);
	if (d->ops->tracepoint)
		qrnic_tp_from_trace(d, &ev);
}

/* Stamped with the modelled time of the stage when a timed step runs. */
void qrnic_trace_emit(struct qrnic_dev *d, uint32_t type, uint32_t qpn, uint32_t psn,
		      uint32_t a, uint32_t b, uint64_t addr)
{
	if (!d->ops->trace || d->trace_off)
		return;
	qrnic_trace_at(d, qrnic_timed(d) ? d->tm_t : qrnic_now(d), type, qpn, psn, a, b, addr);
}

const char *qrnic_trace_name(uint32_t type)
{
	static const char *const names[QRNIC_TR_COUNT] = {
		[QRNIC_TR_DOORBELL] = "doorbell", [QRNIC_TR_WQE_FETCH] = "wqe_fetch",
		[QRNIC_TR_TRANSLATE] = "translate", [QRNIC_TR_TX] = "tx",
		[QRNIC_TR_RX] = "rx", [QRNIC_TR_DMA_READ] = "dma_read",
		[QRNIC_TR_DMA_WRITE] = "dma_write", [QRNIC_TR_ACK] = "ack",
		[QRNIC_TR_NAK] = "nak", [QRNIC_TR_RETRANSMIT] = "retransmit",
		[QRNIC_TR_CQE] = "cqe", [QRNIC_TR_EQE] = "eqe", [QRNIC_TR_IRQ] = "irq",
		[QRNIC_TR_DROP] = "drop", [QRNIC_TR_QP_STATE] = "qp_state",
		[QRNIC_TR_ADMIN] = "admin",
		[QRNIC_TR_WINDOW] = "window",
	};
	return type < QRNIC_TR_COUNT && names[type] ? names[type] : "unknown";
}

const char *qrnic_stat_name(enum qrnic_stat s)
{
#define QRNIC_STAT_STR(name, str) str,
	static const char *const names[] = { QRNIC_STATS(QRNIC_STAT_STR) };
#undef QRNIC_STAT_STR
	return (unsigned)s < QRNIC_STAT_COUNT ? names[s] : "unknown";
}

uint64_t qrnic_dev_stat(const struct qrnic_dev *d, enum qrnic_stat s)
{
	return (unsigned)s < QRNIC_STAT_COUNT ? d->stats[s] : 0;
}

/* Largest IB MTU whose RoCEv2 packets fit the port's Ethernet MTU. */
uint8_t qrnic_port_ib_mtu(const struct qrnic_dev *d)
{
	uint32_t room = d->cfg.eth_mtu - (QRNIC_IPV6_HLEN + QRNIC_UDP_HLEN + QRNIC_BTH_LEN +
					  QRNIC_ATOMICETH_LEN + QRNIC_ICRC_LEN);
	uint8_t m = QRNIC_MTU_4096;

	while (m > QRNIC_MTU_256 && qrnic_mtu_bytes(m) > room)
		m--;
	return m;
}

void qrnic_dev_set_trace(struct qrnic_dev *d, bool on)
{
	d->trace_off = !on;
}

void qrnic_dev_set_trusted_wire(struct qrnic_dev *d, bool on)
{
	d->trusted_wire = on;
}

void qrnic_dev_set_trains(struct qrnic_dev *d, bool on)
{
	d->trains = on;
}

void qrnic_dev_set_lazy_icrc(struct qrnic_dev *d, bool on)
{
	d->lazy_icrc = on;
}

void qrnic_dev_set_db_batch(struct qrnic_dev *d, bool on)
{
	d->db_batch = on;
}

uint64_t qrnic_dev_db_batched(const struct qrnic_dev *d)
{
	return d->db_batched;
}

uint64_t qrnic_dev_rq_db_quiet(const struct qrnic_dev *d)
{
	return d->rq_db_quiet;
}

uint64_t qrnic_dev_sq_rec_taken(const struct qrnic_dev *d)
{
	return d->sq_rec_taken;
}

void qrnic_dev_set_clock(struct qrnic_dev *d, const uint64_t *now)
{
	d->clock = now;
}

/* ---- choke points ---------------------------------------------------------- */
/* A payload read into the frame being built, by reference if it continues
 * the reference so far (contiguous in the frame and in host memory).
 * Returns whether it was taken; if not, what the reference held so far is
 * copied into the frame and the rest of the payload is read as usual. */
static bool dma_read_ref(struct qrnic_dev *d, uint64_t addr, void *buf, size_t len)
{
	const uint8_t *src;

	if ((uint8_t *)buf != d->txref.base + d->txref.len || addr + len < addr)
		return false;
	src = d->ops->dma_map(d->opaque, addr, len);
	if (src && d->ops->dma_unmap &&
	    (d->txref.nmap >= QRNIC_REF_MAPS || (d->txref.len && src != d->txref.src + d->txref.len))) {
		d->ops->dma_unmap(src, len);	/* not used */
		src = NULL;
	}
	if (src && (!d->txref.len || src == d->txref.src + d->txref.len)) {
		if (!d->txref.len)
			d->txref.src = src;
		d->txref.len += (uint32_t)len;
		if (d->ops->dma_unmap) {
			d->txref.map[d->txref.nmap].ptr = src;
			d->txref.map[d->txref.nmap].len = len;
			d->txref.nmap++;
		}
		return true;
	}
	/* the frame holds bytes, not a reference; or, reading by reference
	 * only, nothing: the caller takes its general path */
	qrnic_txref_drop(d, !d->txref.only);
	return false;
}

void qrnic_txref_drop(struct qrnic_dev *d, bool copy)
{
	if (copy && d->txref.len)
		memcpy(d->txref.base, d->txref.src, d->txref.len);
	for (uint32_t i = 0; i < d->txref.nmap; i++)
		d->ops->dma_unmap(d->txref.map[i].ptr, d->txref.map[i].len);
	d->txref.nmap = 0;
	d->txref.on = false;
}

int qrnic_dma_read(struct qrnic_dev *d, uint64_t addr, void *buf, size_t len)
{
	if (len == 0)
		return 0;
	qrnic_trace(d, QRNIC_TR_DMA_READ, 0, 0, (uint32_t)len, 0, addr);
	if (d->txref.on) {
		if (dma_read_ref(d, addr, buf, len))
			goto timed;
		if (d->txref.only)	/* nothing read, nothing counted */
			return -1;
	}
	if (addr + len < addr || (d->fault && qrnic_fault_dma(d, false, addr, len)) ||
	    d->ops->dma_read(d->opaque, addr, buf, len) != 0) {
		memset(buf, 0, len);
		qrnic_stat_add(d, QRNIC_STAT_DMA_ERRORS, 1);
		return -1;
	}
timed:
	if (qrnic_timed(d))	/* the step waits for the data */
		d->tm_t = qrnic_tm_dma_read(&d->tm, d->tm_t, (uint32_t)len);
	return 0;
}

int qrnic_dma_write(struct qrnic_dev *d, uint64_t addr, const void *buf, size_t len)
{
	if (len == 0)
		return 0;
	qrnic_trace(d, QRNIC_TR_DMA_WRITE, 0, 0, (uint32_t)len, 0, addr);
	if (addr + len < addr || (d->fault && qrnic_fault_dma(d, true, addr, len)) ||
	    d->ops->dma_write(d->opaque, addr, buf, len) != 0) {
		qrnic_stat_add(d, QRNIC_STAT_DMA_ERRORS, 1);
		return -1;
	}
	if (qrnic_timed(d)) {	/* posted: the step goes on, later CQEs wait */
		uint64_t vis = qrnic_tm_dma_write(&d->tm, d->tm_t, (uint32_t)len);

		if (vis > d->tm_wr_vis)
			d->tm_wr_vis = vis;
	}
	return 0;
}

void qrnic_tx(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	if (d->train_buf)	/* frames leave in order */
		qrnic_train_flush(d);
	if (qrnic_timed(d))
		qrnic_fx_tx(d, frame, len);
	else
		qrnic_tx_now(d, frame, len);
}

void qrnic_tx_buf(struct qrnic_dev *d, uint8_t *buf, size_t len)
{
	if (d->train_buf && buf != d->train_buf)	/* frames leave in order */
		qrnic_train_flush(d);
	if (qrnic_timed(d))
		qrnic_fx_tx_buf(d, buf, len);
	else
		qrnic_tx_now_buf(d, buf, len);
}

/* ---- local loopback ------------------------------------------------------- */
/* A frame for the port's own MAC address does not go on the wire: the
 * port receives it itself, as every RNIC and rxe do (two QPs of one
 * device talking, rdma_cm to a local address).  It leaves the transmit
 * side where a frame would leave the port -- after the timing model's
 * port and the transmit fault rules -- and enters the receive side
 * where a frame from the wire would (rx_admit: link, queue, receive fault
 * rules), so both directions' costs and fault points apply to it. */
static bool tx_loops_back(const struct qrnic_dev *d, const uint8_t *dmac)
{
	return !memcmp(dmac, d->cfg.mac, 6);
}

static void loopback_count(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	qrnic_stat_add(d, QRNIC_STAT_TX_PACKETS, 1);
	qrnic_stat_add(d, QRNIC_STAT_TX_BYTES, len);
	qrnic_stat_add(d, QRNIC_STAT_LOOPBACK_FRAMES, 1);
	if (d->ops->loopback)
		d->ops->loopback(d->opaque, frame, len);
}

/* A multicast frame for a group that has members on this device. */
static bool tx_mcast_member(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	struct qrnic_pkt p;

	return qrnic_wire_parse_icrc(frame, len, &p, false) == QRNIC_WIRE_OK &&
	       qrnic_gid_is_mcast(p.dgid) && qrnic_mcg_find(d, p.dgid);
}

static void tx_now_buf_each(void *opaque, uint8_t *buf, size_t len)
{
	qrnic_tx_now_buf(opaque, buf, len);
}

void qrnic_tx_now_buf(struct qrnic_dev *d, uint8_t *buf, size_t len)
{
	/* the host takes the buffer as it is (else it gets bytes, or none) */
	bool to_host = d->ops->tx_frame_buf && d->link_up && !d->fault && !d->nmcg;
	bool loops = to_host && tx_loops_back(d, qrnic_frame_buf_dmac(buf));
	struct qrnic_train *t = qrnic_frame_buf_train(buf);

	if (t && (!to_host || loops)) {
		/* a train goes only to the host that takes it: its frames */
		qrnic_frame_buf_train_split(buf, tx_now_buf_each, d);
		return;
	}
	if (!to_host) {
		qrnic_frame_buf_fill(buf);
		qrnic_tx_now(d, buf, len);
		qrnic_frame_buf_free(buf);
		return;
	}
	if (loops) {
		if (d->ops->loopback)
			qrnic_frame_buf_fill(buf);
		loopback_count(d, buf, len);
		qrnic_dev_rx_frame_buf(d, buf, len);
		return;
	}
	qrnic_stat_add(d, QRNIC_STAT_TX_PACKETS, t ? t->n : 1);
	qrnic_stat_add(d, QRNIC_STAT_TX_BYTES, len + (t ? qrnic_train_bytes(t, t->n) : 0));
	d->ops->tx_frame_buf(d->opaque, buf, len);
}

void qrnic_tx_now(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	if (!d->link_up) {
		qrnic_trace(d, QRNIC_TR_DROP, 0, 0, QRNIC_STAT_TX_PACKETS, (uint32_t)len, 0);
		return;
	}
	if (d->fault && qrnic_fault_tx(d, frame, len))
		return;		/* fault injection dropped, held or sent it */
	if (len >= 6 && tx_loops_back(d, frame)) {
		loopback_count(d, frame, len);
		qrnic_dev_rx_frame(d, frame, len);
		return;
	}
	if (len >= 6 && (frame[0] & 1) && d->nmcg && tx_mcast_member(d, frame, len)) {
		/* multicast loopback: our own members get a copy, and the
		 * frame goes on the wire for the others (captured there) */
		qrnic_stat_add(d, QRNIC_STAT_LOOPBACK_FRAMES, 1);
		qrnic_dev_rx_frame(d, frame, len);
	}
	qrnic_stat_add(d, QRNIC_STAT_TX_PACKETS, 1);
	qrnic_stat_add(d, QRNIC_STAT_TX_BYTES, len);
	d->ops->tx_frame(d->opaque, frame, len);
}

void qrnic_irq(struct qrnic_dev *d, unsigned vector)
{
	if (vector >= d->cfg.num_vectors)
		return;
	if (qrnic_fx_irq(d, vector))
		return;		/* moderated: raised later */
	qrnic_stat_add(d, QRNIC_STAT_INTERRUPTS, 1);
	qrnic_trace(d, QRNIC_TR_IRQ, 0, 0, vector, 0, 0);
	d->ops->irq(d->opaque, vector);
}

void qrnic_schedule(struct qrnic_dev *d)
{
	if (!d->in_run)
		d->ops->schedule(d->opaque);
}

void qrnic_fatal(struct qrnic_dev *d, uint32_t code)
{
	if (d->status & QRNIC_STATUS_FATAL)
		return;
	d->status |= QRNIC_STATUS_FATAL;
	d->fatal_code = code;
	qrnic_guest_err(d, err_fatal, (code), "qrnic: device fatal error %u, reset required", code);
	qrnic_async_event(d, QRNIC_EV_DEVICE_FATAL, 0, code);
}

/* ---- lookups ---------------------------------------------------------------- */
struct qrnic_qp *qrnic_qp_get(struct qrnic_dev *d, uint32_t qpn)
{
	if (qpn == 0 || qpn >= d->cfg.max_qp || !d->qp[qpn].valid)
		return NULL;
	return &d->qp[qpn];
}

struct qrnic_cq *qrnic_cq_get(struct qrnic_dev *d, uint32_t cqn)
{
	if (cqn == 0 || cqn >= d->cfg.max_cq || !d->cq[cqn].valid)
		return NULL;
	return &d->cq[cqn];
}

struct qrnic_ah *qrnic_ah_get(struct qrnic_dev *d, uint32_t ahn)
{
	if (ahn == 0 || ahn >= d->cfg.max_ah || !d->ah[ahn].valid)
		return NULL;
	return &d->ah[ahn];
}

/* ---- life cycle -------------------------------------------------------------- */
/*
 * The MPT and the MTT are sized for the configured maximum (2^24 slots and
 * entries by default, ~1.2 GiB): an anonymous mapping, whose pages cost
 * nothing until touched, so memory grows with use.  calloc gives no such
 * promise: once free() raised malloc's dynamic mmap threshold (up to
 * 32 MiB), a table below it comes from the heap and is cleared page by
 * page.  Under AddressSanitizer only tables of 64 MiB and more are
 * mapped: ASan checks the smaller ones (the fuzzers' and unit tests'),
 * but freeing a 1 GiB chunk would poison 128 MiB of its shadow memory
 * (every in-place migration of a device frees its tables).  Indexes into
 * these tables are checked against the configured maximum in the code.
 */
#ifdef __SANITIZE_ADDRESS__
#define TABLE_MAP_MIN	((size_t)64 << 20)
#else
#define TABLE_MAP_MIN	((size_t)1 << 20)
#endif

static void *table_alloc(size_t n, size_t size)
{
	void *p;

	if (n && size <= SIZE_MAX / n && n * size >= TABLE_MAP_MIN) {
		p = mmap(NULL, n * size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	return calloc(n ? n : 1, size);
}

static void table_free(void *p, size_t n, size_t size)
{
	if (!p)
		return;
	if (n * size >= TABLE_MAP_MIN)
		munmap(p, n * size);
	else
		free(p);
}

static void free_tables(struct qrnic_dev *d)
{
	qrnic_rings_free_all(d);
	if (d->qp)	/* slots from qp_hwm on are all zero: not read (not faulted in) */
		for (uint32_t i = 0; i < d->qp_hwm && i < d->cfg.max_qp; i++) {
			free(d->qp[i].req.win);
			free(d->qp[i].bf);
		}
	qrnic_bf_free_all(d);
	free(d->bf_stage);
	d->bf_stage = NULL;
	free(d->uctx_valid);
	free(d->pd);
	free(d->cq);
	free(d->eq);
	free(d->qp);
	table_free(d->mr, d->cfg.max_mr, sizeof(*d->mr));
	free(d->ah);
	free(d->gid);
	table_free(d->mtt, d->cfg.max_mtt, sizeof(*d->mtt));
	table_free(d->mtt_used, d->cfg.max_mtt, sizeof(*d->mtt_used));
	free(d->srq);
	free(d->xrcd);
	qrnic_mr_alloc_fini(d);
	d->srq = NULL;
	d->uctx_valid = NULL;
	d->pd = NULL;
	d->cq = NULL;
	d->eq = NULL;
	d->qp = NULL;
	d->mr = NULL;
	d->ah = NULL;
	d->gid = NULL;
	d->mtt = NULL;
	d->mtt_used = NULL;
}

static int alloc_tables(struct qrnic_dev *d)
{
	const struct qrnic_config *c = &d->cfg;

	d->uctx_valid = calloc(c->max_uctx, sizeof(*d->uctx_valid));
	d->pd = calloc(c->max_pd, sizeof(*d->pd));
	d->cq = calloc(c->max_cq, sizeof(*d->cq));
	d->eq = calloc(c->max_eq, sizeof(*d->eq));
	d->qp = calloc(c->max_qp, sizeof(*d->qp));
	d->qp_hwm = 0;
	d->mr = table_alloc(c->max_mr, sizeof(*d->mr));
	d->ah = calloc(c->max_ah, sizeof(*d->ah));
	d->gid = calloc(c->gid_tbl_len, sizeof(*d->gid));
	d->mtt = table_alloc(c->max_mtt, sizeof(*d->mtt));
	d->mtt_used = table_alloc(c->max_mtt, sizeof(*d->mtt_used));
	d->srq = calloc(c->max_srq, sizeof(*d->srq));
	d->xrcd = calloc(c->max_xrcd, sizeof(*d->xrcd));
	if (!d->uctx_valid || !d->pd || !d->cq || !d->eq || !d->qp || !d->mr || !d->ah ||
	    !d->gid || !d->mtt || !d->mtt_used || !d->srq || !d->xrcd ||
	    qrnic_mr_alloc_init(d) != 0) {
		free_tables(d);
		return -1;
	}
	return 0;
}

/* Zero the entries of a table that are not zero already.  Reading an
 * untouched page of a calloc'd table maps the shared zero page; writing
 * it would allocate it, so a table of 65536 slots of which a few were used
 * costs only those few pages after a reset, as after power-on. */
static void clear_used(void *table, uint32_t n, size_t size)
{
	static const uint8_t zero[4096];
	uint8_t *p = table;
	/* whole runs of entries are compared with memcmp (fast): a table of
	 * 65536 small entries is mostly zero, and is scanned in a few 100 us */
	uint32_t run = size <= sizeof(zero) ? (uint32_t)(sizeof(zero) / size) : 1;

	for (uint32_t i = 0; i < n; i += run, p += (size_t)run * size) {
		uint32_t k = n - i < run ? n - i : run;

		if (size <= sizeof(zero) && !memcmp(p, zero, k * size))
			continue;
		for (uint32_t e = 0; e < k; e++) {
			uint8_t *q = p + e * size;

			for (size_t j = 0; j < size; j++)
				if (q[j]) {
					memset(q, 0, size);
					break;
				}
		}
	}
}

/* Back to the power-on state.  fresh: the tables were just allocated
 * zeroed (alloc_tables), so clearing them again is skipped -- it would
 * only fault in every page of tables sized for the largest configuration. */
static void reset_state(struct qrnic_dev *d, bool fresh)
{
	const struct qrnic_config *c = &d->cfg;

	if (!fresh) {
		qrnic_rings_free_all(d);
		/* an entry no QP uses is all zero (DESTROY_QP clears it): only
		 * reading it leaves the table's untouched pages unallocated */
		for (uint32_t i = 0; i < d->qp_hwm && i < c->max_qp; i++) {
			if (!d->qp[i].valid && !d->qp[i].req.win && !d->qp[i].work.on &&
			    !d->qp[i].flushq.on && !d->qp[i].bf)
				continue;
			free(d->qp[i].req.win);
			free(d->qp[i].bf);
			memset(&d->qp[i], 0, sizeof(d->qp[i]));
		}
		d->qp_hwm = 0;		/* every slot is zero again */
		memset(d->uctx_valid, 0, c->max_uctx * sizeof(*d->uctx_valid));
		qrnic_bf_free_all(d);
		clear_used(d->pd, c->max_pd, sizeof(*d->pd));
		clear_used(d->cq, c->max_cq, sizeof(*d->cq));
		memset(d->eq, 0, c->max_eq * sizeof(*d->eq));
		clear_used(d->srq, c->max_srq, sizeof(*d->srq));
		clear_used(d->xrcd, c->max_xrcd, sizeof(*d->xrcd));
		/* Keep each MR slot's tag so keys from before the reset stay
		 * stale.  Slots from mr_seen on and MTT entries from mtt_top on
		 * were never touched: the loops stop there, the pages of tables
		 * sized for the configured maximum stay unallocated. */
		for (uint32_t i = 0; i < d->mr_seen; i++) {
			uint8_t tag = d->mr[i].next_tag;

			memset(&d->mr[i], 0, sizeof(d->mr[i]));
			d->mr[i].next_tag = tag;
		}
		clear_used(d->ah, c->max_ah, sizeof(*d->ah));
		memset(d->gid, 0, c->gid_tbl_len * sizeof(*d->gid));
		memset(d->mtt, 0, (size_t)d->mtt_top * sizeof(*d->mtt));
		memset(d->mtt_used, 0, (size_t)d->mtt_top * sizeof(*d->mtt_used));
	}
	qrnic_mr_alloc_reset(d);	/* every slot and entry free */
	if (d->admin && d->admin->reset)
		d->admin->reset(d->admin_opaque, d);
	d->uctx_valid[0] = true;

	d->ctrl = 0;
	d->status = QRNIC_STATUS_READY;
	d->fatal_code = QRNIC_FATAL_NONE;
	d->scratch = 0;
	d->aq_sq_base = d->aq_cq_base = 0;
	d->aq_ctrl = d->aq_status = 0;
	d->aq_sq_pi = d->aq_sq_ci = d->aq_cq_pi = 0;
	d->eth_tx_base = d->eth_rx_base = 0;
	d->eth_ctrl = d->eth_tx_pi = d->eth_rx_pi = d->eth_tx_ci = d->eth_rx_ci = 0;
	d->eth_irq = 0;
	d->aq_pending = d->eth_pending = false;
	d->arm_cq_lo = d->arm_eq_lo = UINT32_MAX;	/* no CQ/EQ marked */
	d->arm_cq_hi = d->arm_eq_hi = 0;
	memset(d->mcg, 0, sizeof(d->mcg));
	d->nmcg = 0;
	memset(&d->work, 0, sizeof(d->work));
	memset(&d->flushq, 0, sizeof(d->flushq));
	d->flushing = false;
	qrnic_rxq_clear(d);
	qrnic_frame_buf_free(d->train_buf);	/* none outside qrnic_req_step */
	d->train_buf = NULL;
	qrnic_events_reset(d);
	d->in_run = false;
	d->tm_on = false;
	qrnic_fx_reset(d);
	memset(d->stats, 0, sizeof(d->stats));
	/* run-time congestion control parameters (SET_CC) go back to the
	 * configured ones; nothing else of the configuration changes */
	d->cfg = d->boot_cfg;
}

void qrnic_dev_reset(struct qrnic_dev *d)
{
	reset_state(d, false);
	if (d->fault)
		qrnic_fault_reset(d);
	qrnic_timer_update(d);
}

struct qrnic_dev *qrnic_dev_new(const struct qrnic_config *cfg,
				const struct qrnic_host_ops *ops, void *opaque,
				const struct qrnic_admin_ops *admin, void *admin_opaque)
{
	struct qrnic_dev *d;

	if (qrnic_config_validate(cfg, NULL) != 0)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->cfg = *cfg;
	d->boot_cfg = *cfg;
	d->ops = ops;
	d->opaque = opaque;
	d->admin = admin;
	d->admin_opaque = admin_opaque;
	d->link_up = true;
	d->timer_deadline = UINT64_MAX;
	if (alloc_tables(d) != 0 ||
	    qrnic_timing_init(&d->tm, qrnic_timing_profile_find("functional")) != 0)
		goto fail;
	reset_state(d, true);
	return d;
fail:
	qrnic_dev_free(d);
	return NULL;
}

void qrnic_dev_free(struct qrnic_dev *d)
{
	if (!d)
		return;
	free_tables(d);
	qrnic_rxq_clear(d);
	qrnic_txref_drop(d, false);
	qrnic_frame_buf_free(d->txbuf);
	qrnic_frame_buf_free(d->train_buf);
	qrnic_events_free(d);
	qrnic_fault_free(d);
	if (d->fx) {
		qrnic_fx_reset(d);
		free(d->fx);
	}
	qrnic_timing_fini(&d->tm);
	free(d);
}

void qrnic_dev_set_link(struct qrnic_dev *d, bool up)
{
	if (d->link_up == up)
		return;
	d->link_up = up;
	qrnic_async_event(d, up ? QRNIC_EV_PORT_ACTIVE : QRNIC_EV_PORT_ERR, 1, 0);
}
