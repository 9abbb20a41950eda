/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: internal state shared by the model's pipeline stages
 * and the firmware.  Nothing here is ABI; hosts use qrnic_model.h.
 *
 * Resource tables are arrays indexed by handle.  Handle 0 is never valid
 * for PD, CQ, MR index, AH and EQ; QPN 0 is reserved and QPN 1 is the GSI
 * QP; user context 0 is the kernel's and always exists.
 */
#ifndef QRNIC_INTERNAL_H
#define QRNIC_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "qrnic_model.h"

#include "qrnic_cc.h"
#include "qrnic_wire.h"
#include "qrnic_timing.h"

#define QRNIC_FW_VERSION	0x00010000u

#define QRNIC_REQ_WINDOW	64	/* send WQEs in flight per QP (power of 2) */
#define QRNIC_MAX_UNACKED_PKTS	512	/* packets in flight per QP (window cap) */
#define QRNIC_CWND_MIN		4	/* loss window floor, packets */
#define QRNIC_ACKREQ_INTERVAL	64	/* AckReq at least every N packets */
#define QRNIC_ACKREQ_WQES	16	/* ... and every N messages (a quarter of the WQE window) */
#define QRNIC_MAX_RD_ATOMIC	16	/* responder resources per QP */
#define QRNIC_RXQ_DEPTH		1024	/* frames queued between rx and run */
/* frames one QP service step may loop back to us at most (a budget of
 * responses, one of requests -- a train's, qp.c's req_budget -- an ACK),
 * with a margin */
#define QRNIC_RXQ_STEP_RESERVE	(4 * QRNIC_QP_PKT_BUDGET)
#define QRNIC_RUN_RX_BUDGET	256	/* frames per qrnic_dev_run() */
#define QRNIC_RUN_QP_BUDGET	256	/* QP service steps per qrnic_dev_run() */
#define QRNIC_QP_PKT_BUDGET	16	/* packets per QP service step */
#define QRNIC_AQ_BUDGET		16	/* admin commands per qrnic_dev_run() */
#define QRNIC_PSN_MASK		0xffffffu
#define QRNIC_MAX_FRAME		(QRNIC_MAX_HDR_LEN + 4096 + 4 + QRNIC_ICRC_LEN)
#define QRNIC_RX_FRAME_MAX	QRNIC_ETH_MAX_FRAME	/* any frame the port accepts */

/* 24-bit PSN arithmetic: signed distance a - b in (-2^23, 2^23]. */
static inline int32_t qrnic_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}
static inline uint32_t qrnic_psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & QRNIC_PSN_MASK;
}
static inline uint32_t qrnic_mtu_bytes(uint8_t ib_mtu)
{
	return (ib_mtu >= QRNIC_MTU_256 && ib_mtu <= QRNIC_MTU_4096) ? 128u << ib_mtu : 0;
}

/* x / mtu for a path MTU: a power of two, so a shift, not a divide
 * (per packet; anything else still divides). */
static inline uint32_t qrnic_div_mtu(uint32_t x, uint32_t mtu)
{
	if (mtu && !(mtu & (mtu - 1)))
		return x >> __builtin_ctz(mtu);
	return x / mtu;
}

/* ---- Resources ---------------------------------------------------------- */
struct qrnic_pd {
	bool valid;
	uint32_t uctx;
	uint32_t refcnt;	/* QPs, MRs and AHs using it */
};

/* MPT slot allocator (mr.c): lowest free slot first.  Slots >= top were
 * not handed out since the reset; below it a bitmap of four levels marks
 * the free ones: bit i of w[0] = slot i free, bit j of w[k+1] = word j of
 * w[k] not zero.  64^4 = 2^24 covers max_mr's ceiling. */
#define QRNIC_IDMAP_LEVELS 4
struct qrnic_idmap {
	uint64_t *w[QRNIC_IDMAP_LEVELS];
	uint32_t cap;		/* slots the levels cover (a multiple of 64) */
	uint32_t top;
};

/* MTT allocator (mr.c): the free extents of the MTT in a treap ordered by
 * start, each node knowing the longest extent below it (first fit in
 * O(log n)).  Nodes live in one array, indices as links (0: none). */
struct qrnic_mtt_node {
	uint32_t start, len;
	uint32_t maxlen;	/* longest len in this subtree */
	uint32_t prio;		/* heap order (a deterministic pseudo-random) */
	uint32_t l, r;
};

struct qrnic_mtt_tree {
	struct qrnic_mtt_node *n;	/* [cap]; n[0] is the empty tree */
	uint32_t cap;
	uint32_t hi;		/* n[1..hi) handed out at least once */
	uint32_t spare;		/* list of recycled nodes (through .l) */
	uint32_t nspare;
	uint32_t root;
	uint32_t nodes;		/* in the tree */
	uint32_t seed;		/* xorshift state for priorities */
};

struct qrnic_mr {
	struct qrnic_mpt_entry mpt;	/* mpt.flags & QRNIC_MPT_VALID */
	uint8_t next_tag;		/* tag for the next registration of this slot */
	uint32_t bound_mws;		/* MRs: memory windows bound to it now */
	uint32_t mw_qpn;		/* type 2 windows: the QP bound through */
};

struct qrnic_ah {
	bool valid;
	uint32_t pdn;
	struct qrnic_av av;
};

struct qrnic_gid_entry {
	bool valid;
	uint8_t net_type;
	uint8_t gid[16];
};

struct qrnic_eq {
	bool valid;
	bool async;
	bool armed;
	bool overflow;
	bool irq_pending;	/* armed with entries pending: raise from the run loop */
	uint16_t vector;
	uint8_t log_depth;
	uint64_t ring;
	uint32_t pi;		/* next EQE slot, free running */
	uint32_t ci;		/* consumer index from EQ_DB */
	uint32_t refcnt;	/* CQs using it */
};

struct qrnic_cq {
	bool valid;
	bool armed;
	bool armed_solicited;
	bool error;		/* overrun: no more CQEs are written */
	bool event_pending;	/* armed with CQEs pending: EQE from the run loop */
	uint32_t uctx;
	uint32_t eqn;
	uint8_t log_depth;
	uint8_t flags;		/* QRNIC_CQ_F_* of CREATE_CQ: TIMESTAMP = 64-byte CQEs
				 * (PAGELIST is not kept: ring_pl says it) */
	uint64_t ring;		/* the ring, or the address its page list came from */
	uint64_t *ring_pl;	/* ring page list (qrnic_ring_at); NULL: contiguous */
	uint64_t dbrec;
	uint32_t pi;		/* next CQE slot, free running */
	uint32_t ci;		/* last consumer index the device knows */
	uint32_t refcnt;	/* QPs using it */
	uint64_t tm_last;	/* timing: last CQE visible at (keeps CQEs in order) */
	uint32_t vis;		/* CQEs written (pi counts reserved ones too) */
	/* event moderation (MODIFY_CQ): 0 = off */
	uint16_t mod_count;
	uint16_t mod_period_us;
	uint32_t mod_seen;	/* CQEs since armed that raised no event yet */
	uint32_t mod_gen;	/* the period timer's generation */
};

/* A shared receive queue (spec 12.10).  WQEs are copied out in ring order
 * when a message starts (ci advances then). */
struct qrnic_srq {
	bool valid;
	uint32_t uctx;
	uint32_t pdn;
	uint8_t log_depth;
	uint8_t wqe_shift;
	uint64_t ring;		/* the ring, or the address its page list came from */
	uint64_t *ring_pl;	/* ring page list (qrnic_ring_at); NULL: contiguous */
	uint64_t dbrec;		/* consumer index record, 0 = none */
	uint32_t pi;		/* producer index from the doorbell */
	uint32_t ci;		/* next WQE to take, free running */
	uint32_t limit;		/* SRQ_LIMIT_REACHED armed below this; 0 = not */
	uint32_t refcnt;	/* QPs using it */
	uint32_t xrcd;		/* XRC SRQ: its domain (0: an ordinary SRQ) */
	uint32_t cqn;		/* XRC SRQ: where its receive CQEs go */
};

/* An XRC domain (spec 12.14): XRC SRQs and XRC TGT QPs belong to one. */
struct qrnic_xrcd {
	bool valid;
	uint32_t uctx;		/* 0: the kernel's, usable by every uctx */
	uint32_t refcnt;	/* XRC SRQs and TGT QPs in it */
};

/* A UD multicast group (spec 12.11); free while nqp is 0. */
struct qrnic_mcg {
	uint8_t gid[16];
	uint32_t nqp;
	uint32_t qpn[QRNIC_MAX_MCG_QP];
};

/* BlueFlame (regs.c): what a doorbell page's BF buffers hold between the
 * data stores and the control word. */
struct qrnic_bf_stage {
	uint8_t  data[QRNIC_DB_BF_NUM][QRNIC_BF_MAX_WQE];
	uint32_t written[QRNIC_DB_BF_NUM];	/* bit i: word i stored since the last control word */
};

/* The WQE a QP's last accepted BF control word carried: copied once out of
 * the stage, validated when fetched (requester.c) like a ring WQE. */
struct qrnic_bf_wqe {
	bool     valid;
	uint32_t index;		/* free-running SQ index of the WQE */
	uint32_t nbytes;	/* 64..QRNIC_BF_MAX_WQE */
	uint8_t  data[QRNIC_BF_MAX_WQE];
};

/* A validated private copy of one send WQE in flight. */
struct qrnic_swqe {
	struct qrnic_send_wqe wqe;
	struct qrnic_sge sge[QRNIC_MAX_SGE];
	uint8_t inline_data[QRNIC_MAX_INLINE];
	uint32_t sq_index;	/* free-running SQ index */
	uint32_t total_len;
	uint32_t first_psn;
	uint32_t npkts;		/* packets this message takes */
	uint32_t sent;		/* bytes already put on the wire (or requested, READ) */
	uint32_t done_bytes;	/* READ: bytes of response data placed */
	uint8_t  status;	/* QRNIC_WC_* to complete with */
	uint8_t  vendor_err;
	bool     acked;		/* ready to complete */
	bool     rd_atomic;	/* READ or ATOMIC */
	bool     counted;	/* counted in req.rd_atomic_out */
	uint64_t atomic_orig;
	uint64_t tm_issue;	/* timing: payload reads may start */
};

/* A validated private copy of one receive WQE. */
struct qrnic_rwqe {
	uint64_t wr_id;
	uint32_t rq_index;	/* of the RQ, or of the SRQ it came from */
	uint32_t pdn;		/* its lkeys' PD: the QP's, or the SRQ's */
	uint32_t srqn;		/* the SRQ it came from, 0: the QP's RQ */
	uint32_t num_sge;
	uint32_t total_len;
	struct qrnic_sge sge[QRNIC_MAX_SGE];
};

/* Requester (send side of an RC QP, and UD sends). */
struct qrnic_req {
	uint32_t next_psn;	/* PSN of the next packet to send */
	uint32_t sq_next;	/* next SQ index to fetch */
	uint32_t sq_ci;		/* oldest SQ index not completed */
	/* window: SQ indexes [sq_ci, sq_next) are in win[idx % QRNIC_REQ_WINDOW] */
	struct qrnic_swqe *win;
	uint32_t cur;		/* SQ index being transmitted (sq_ci <= cur <= sq_next) */
	uint32_t cur_psn;	/* PSN of the next packet of 'cur' */
	uint32_t una_psn;	/* oldest unacknowledged PSN */
	uint32_t high_psn;	/* one past the highest PSN ever sent */
	uint32_t rd_atomic_out;	/* READ/ATOMIC requests outstanding */
	uint32_t pkts_since_ackreq;
	uint32_t msgs_since_ackreq;	/* messages ended without AckReq since the last */
	uint32_t ackreq_psn;	/* PSN of the last packet sent with AckReq */
	uint8_t  retry_left;
	uint8_t  rnr_left;
	/* RNR wait: nothing is sent until the RNR timer fires.  Set only
	 * together with an RNR timer event of generation rnr_gen; whatever
	 * makes that event stale clears it. */
	bool     rnr_wait;
	uint32_t rnr_gen;	/* invalidates an armed RNR timer */
	uint32_t timer_gen;	/* invalidates an armed retry timer */
	bool     timer_armed;
	bool     stopped;	/* a WQE failed: fetch nothing more */
	bool     resync;	/* READ re-requested after a response gap at resync_psn */
	uint32_t resync_psn;
	/* Loss window (spec 12.6): PSNs [una_psn, una_psn + cwnd) may be in
	 * flight.  Halved once per loss episode (retry timeout or sequence
	 * NAK), grown by one packet per window of acknowledged packets. */
	uint32_t cwnd;
	uint32_t cwnd_acc;	/* packets acknowledged towards the next +1 */
	bool     cc_recovering;	/* reduced; no further cut until una_psn passes */
	uint32_t cc_recover_psn;	/* ... this PSN (high_psn at the cut) */
	/* RNR NAK echo (spec 12.5): a sequence NAK naming rnr_psn before any
	 * progress is the responder's echo of that RNR NAK, not a loss. */
	bool     rnr_echo;
	uint32_t rnr_psn;
};

/* Responder resource: one READ or ATOMIC request being answered, kept for
 * duplicate detection (replay of READ, exactly-once ATOMIC). */
struct qrnic_rsrc {
	bool     valid;
	bool     atomic;
	bool     pending;	/* response packets still to send */
	bool     replay;	/* pending only to answer a duplicate again */
	uint32_t psn;		/* PSN of the request */
	uint32_t npkts;		/* response packets (READ) */
	uint32_t next;		/* READ: next response packet to send */
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
	uint64_t atomic_orig;
	uint64_t tm_issue;	/* timing: response payload reads may start */
	uint32_t pdn;		/* XRC TGT: the PD its rkey is checked against */
};

struct qrnic_resp {
	uint32_t epsn;		/* expected PSN */
	uint32_t msn;		/* messages completed, 24 bits */
	bool     nak_sent;	/* sequence NAK sent, waiting for epsn */
	bool     drop_msg;	/* UC: dropping the rest of a message */
	/* receive in progress (multi-packet SEND) */
	bool     recv_active;
	struct qrnic_rwqe rwqe;
	uint32_t recv_off;
	/* WRITE in progress */
	bool     write_active;
	uint64_t write_va;
	uint32_t write_rkey;
	uint32_t write_resid;
	/* A fatal responder error waiting for earlier READ/ATOMIC responses
	 * to leave first (responses go in PSN order): its NAK and async event. */
	bool     fatal_pending;
	uint8_t  fatal_syn;
	uint8_t  fatal_ev;
	uint32_t fatal_psn;
	/* ACK to send: */
	bool     ack_pending;
	uint8_t  ack_syndrome;
	uint32_t ack_psn;
	/* responder resources for READ/ATOMIC, ring of max_dest_rd_atomic */
	struct qrnic_rsrc rsrc[QRNIC_MAX_RD_ATOMIC];
	uint32_t rsrc_head;	/* next slot to use */
	bool rsrc_maybe;	/* set with every rsrc[].pending = true; false:
				 * none is pending (qrnic_resp_step skips the scan) */
	uint32_t rq_ci;		/* next RQ index to consume */
	uint32_t xrc_srqn;	/* XRC TGT: the XRC SRQ the request being executed
				 * names (XRCETH), checked to be of the QP's domain */
	uint32_t xrc_pdn;	/* ... and its PD, that rkeys are checked against */
};

/* A QP's place on one of the device's QP lists (the work list, the flush
 * queue): doubly linked by QPN, 0 = none.  'on' is the only test of
 * membership, so a QP cannot be on a list twice (qrnic_qlist_push refuses
 * it) and leaving a list walks nothing (qrnic_qlist_remove). */
struct qrnic_qlink {
	uint32_t prev, next;
	bool on;
};

struct qrnic_qlist {
	uint32_t head, tail;
	uint32_t len;
};

struct qrnic_qp {
	bool valid;
	uint8_t type;		/* QRNIC_QPT_* */
	uint32_t qpn;
	uint32_t uctx;
	uint32_t pdn;
	uint32_t send_cqn;
	uint32_t recv_cqn;
	uint32_t srqn;		/* receives from this SRQ; 0 = own RQ */
	uint32_t xrcd;		/* XRC TGT: its XRC domain */
	uint32_t flags;		/* QRNIC_QP_F_* */
	struct qrnic_qp_attr attr;	/* current attributes; attr.qp_state is THE state */
	/* rings */
	uint64_t sq_addr;
	uint8_t  sq_log_depth;
	uint8_t  sq_wqe_shift;
	uint64_t rq_addr;
	uint8_t  rq_log_depth;
	uint8_t  rq_wqe_shift;
	uint64_t *sq_pl;	/* page lists (qrnic_ring_at); NULL: contiguous */
	uint64_t *rq_pl;
	uint32_t sq_pi;		/* producer index from the doorbell */
	uint32_t rq_pi;		/* ... or from the RQ's record (qrnic_rq_dbrec_read) */
	uint64_t rq_dbrec;	/* ABI 1.10: RQ producer index record, 0 = none */
	uint64_t sq_dbrec;	/* ABI 1.11: SQ record (struct qrnic_sq_dbrec), 0 = none */
	bool sq_rec_no_db;	/* the flag the device last wrote there (qrnic_sq_dbrec_settle) */
	struct qrnic_req req;
	struct qrnic_resp resp;
	struct qrnic_qlink work;		/* on d->work: has work to service */
	struct qrnic_qlink flushq;	/* on d->flushq: to be flushed (error) */
	uint32_t bound_mws;	/* type 2 windows bound through it (mr.c) */
	/* timing: when this QP's pipelines are free */
	struct qrnic_bf_wqe *bf;	/* BlueFlame copy, allocated at the first BF post */
	uint64_t tm_db;		/* requester: last doorbell processed */
	uint64_t tm_req;	/* requester: last WQE issued (keeps WQEs in order) */
	uint64_t tm_pkt;	/* requester: previous packet processed */
	uint64_t tm_resp;	/* responder: last request processed */
	struct qrnic_cc_qp cc;	/* congestion control (qrnic_cc.h) */
};

/* Reliable connected semantics (ACKs, retries, READ and atomics): RC and
 * the two XRC types, an INI QP's send side and a TGT QP's receive side. */
static inline bool qrnic_qp_rc(const struct qrnic_qp *qp)
{
	return qp->type == QRNIC_QPT_RC || qp->type == QRNIC_QPT_XRC_INI ||
	       qp->type == QRNIC_QPT_XRC_TGT;
}

/* The PD that the rkeys of incoming requests are checked against: the
 * QP's, or for an XRC TGT QP the PD of the XRC SRQ the request names. */
static inline uint32_t qrnic_qp_rkey_pdn(const struct qrnic_qp *qp)
{
	return qp->type == QRNIC_QPT_XRC_TGT ? qp->resp.xrc_pdn : qp->pdn;
}

/* Timed events (retransmission, RNR wait, later: timing model). */
enum qrnic_event_kind {
	QRNIC_EVK_RETRY = 1,	/* id = qpn, gen = req.timer_gen */
	QRNIC_EVK_RNR,		/* id = qpn, gen = req.rnr_gen */
	QRNIC_EVK_EFFECT,	/* id = effect slot, gen = its generation (timing) */
	QRNIC_EVK_FAULT,	/* id, gen: fault.c's (held frame, timed rule, link-up, flush) */
	QRNIC_EVK_CQ_MOD,	/* id = cqn, gen = cq->mod_gen: moderation period over */
	QRNIC_EVK_CC,		/* id = qpn, gen = cc.gen: the rate limiter lets the QP send */
	QRNIC_EVK_RXBUF,	/* id, gen 0: the receive buffer's next frame is due (pfc.c) */
};

struct qrnic_event {
	uint64_t when;
	uint32_t kind;
	uint32_t id;
	uint32_t gen;
	uint64_t seq;		/* FIFO among equal deadlines */
};

/*
 * Events whose deadlines rarely go backwards -- the frames leaving a port
 * (each departs after the one before it), the CQEs a device writes, the
 * retransmission timers (now + the ACK timeout, mostly the same) -- are
 * queued in FIFO lanes beside the heap: appending one and taking the head
 * is O(1) where the heap costs a sift of O(log n).  An event earlier than
 * the last one of its lane goes to the heap instead, so each lane stays
 * sorted by (when, seq), and the next event is the first of the heap top
 * and the lane heads: the same order as one heap holding them all.
 */
enum qrnic_event_lane { QRNIC_LANE_TX, QRNIC_LANE_CQE, QRNIC_LANE_RETRY, QRNIC_NUM_LANES };

struct qrnic_evlane {
	struct qrnic_event *ring;	/* cap entries, a power of two */
	uint32_t head, count, cap;
	uint32_t compact_at;		/* drop cancelled events at this count */
};

/* An externally visible effect held until its modelled time (timing). */
enum qrnic_effect_kind { QRNIC_FX_FREE, QRNIC_FX_TX, QRNIC_FX_CQE, QRNIC_FX_IRQ };
/* TX effects do not use slot: pfc.c keeps the frame's priority there */
#define QRNIC_FX_SLOT_DEFERRED	0x1ull	/* deferred behind a PFC pause */
#define QRNIC_FX_SLOT_PRIO_OK	0x2ull	/* bits 8..10 hold its priority */
#define QRNIC_FX_SLOT_TX_MASK	0x703ull

struct qrnic_effect {
	uint8_t  kind;
	uint32_t gen;
	uint32_t next_free;
	uint32_t len;		/* TX: frame length; CQE: cqn; IRQ: vector */
	uint64_t when;
	uint64_t slot;		/* CQE: ring slot bus address */
	struct qrnic_cqe cqe;
	uint8_t *frame;		/* TX: malloc'd copy */
};

#define QRNIC_FRAME_IN_RXB	0x80	/* counted in the receive buffer (pfc.c) */
struct qrnic_frame {
	uint32_t len;
	uint8_t prio;		/* receive buffer (pfc.c): its priority, | QRNIC_FRAME_IN_RXB */
	uint8_t *data;		/* QRNIC_RX_FRAME_MAX bytes, preallocated */
	uint64_t start;		/* receive buffer: when the pipeline takes it (ns) */
};

/* ---- The device ----------------------------------------------------------- */
/* One dma_map result a payload by reference is made of (ops->dma_unmap). */
#define QRNIC_REF_MAPS	4
struct qrnic_ref_map {
	const void *ptr;
	size_t len;
};

struct qrnic_dev {
	struct qrnic_config cfg;		/* in use: its congestion control
						 * parameters change with SET_CC */
	struct qrnic_config boot_cfg;		/* as created (QEMU properties): what a
						 * reset restores, what CONF saves */
	const struct qrnic_host_ops *ops;
	void *opaque;
	const struct qrnic_admin_ops *admin;	/* the admin engine (firmware), or NULL */
	void *admin_opaque;

	/* registers */
	uint32_t ctrl;
	uint32_t status;
	uint32_t fatal_code;
	uint32_t scratch;
	uint64_t aq_sq_base;
	uint64_t aq_cq_base;
	uint32_t aq_ctrl;
	uint32_t aq_status;
	uint32_t aq_sq_pi;	/* producer index written by the driver */
	uint32_t aq_sq_ci;	/* commands consumed */
	uint32_t aq_cq_pi;	/* completions written */
	uint64_t eth_tx_base, eth_rx_base;
	uint32_t eth_ctrl, eth_tx_pi, eth_rx_pi, eth_tx_ci, eth_rx_ci, eth_irq;
	bool link_up;
	bool trace_off;		/* qrnic_dev_set_trace(d, false) */
	bool trusted_wire;	/* qrnic_dev_set_trusted_wire(d, true) */
	bool lazy_icrc;		/* qrnic_dev_set_lazy_icrc(d, true) */
	bool trains;		/* qrnic_dev_set_trains(d, true) */
	uint8_t *train_buf;	/* the train being built (net.c), or NULL */
	size_t train_len;	/* ... the length of its first frame */
	struct qrnic_train *train;	/* ... its train and first packet, */
	const struct qrnic_pkt *train_p0;	/* read only while train_buf is set */
	uint32_t rx_skip;	/* packets of a train the responder took whole (rx.c) */
	bool xfer_merge;	/* mr.c: DMA writes across pages that follow on, as one */
	bool db_batch;		/* qrnic_dev_set_db_batch(d, true) */
	uint64_t db_batched;	/* SQ doorbells that waited for the ACK (qrnic_dev_db_batched) */
	uint64_t rq_db_quiet;	/* RQ doorbells that asked for no run (qrnic_dev_rq_db_quiet) */
	uint64_t sq_rec_taken;	/* SQ indexes taken from records (qrnic_dev_sq_rec_taken) */
	const uint64_t *clock;	/* qrnic_dev_set_clock(), or NULL */

	/* resources */
	bool *uctx_valid;		/* [max_uctx] */
	struct qrnic_bf_stage **bf_stage;	/* [max_uctx], allocated at first use */
	struct qrnic_pd *pd;		/* [max_pd] */
	struct qrnic_cq *cq;		/* [max_cq] */
	struct qrnic_eq *eq;		/* [max_eq] */
	struct qrnic_qp *qp;		/* [max_qp] */
	struct qrnic_mr *mr;		/* [max_mr] */
	struct qrnic_ah *ah;		/* [max_ah] */
	struct qrnic_srq *srq;		/* [max_srq] */
	struct qrnic_xrcd *xrcd;	/* [max_xrcd] */
	struct qrnic_mcg mcg[QRNIC_MAX_MCG];
	uint32_t nmcg;			/* groups in use */
	struct qrnic_gid_entry *gid;	/* [gid_tbl_len] */
	uint64_t *mtt;			/* [max_mtt] page bus addresses */
	uint8_t *mtt_used;		/* [max_mtt] entry allocated (mr.c) */
	uint32_t mtt_free;		/* entries free */
	uint32_t mtt_top;		/* entries >= mtt_top untouched since the reset */
	struct qrnic_mtt_tree mtt_tree;	/* the free extents (mr.c) */
	struct qrnic_idmap mpt_ids;	/* the free MPT slots (mr.c) */
	uint32_t mr_seen;		/* slots >= mr_seen all zero (tags too): loops stop
					 * here; only grows (tags outlive a reset) */
	uint32_t next_qpn;		/* firmware: where the QPN search starts (2..max_qp-1) */
	uint32_t qp_hwm;		/* 1 + the highest QP slot made valid since the tables were
					 * made or reset (never lowered before a reset): every slot
					 * from it on is all zero, so teardown, reset and snapshots
					 * walk [0, qp_hwm) instead of max_qp slots of 1992 bytes */
	uint32_t qp_live;		/* firmware: QPs that exist (the QPN window; derived
					 * from the QPs on a snapshot load) */

	/* work */
	bool aq_pending;
	bool eth_pending;
	bool arm_pending;		/* some EQ/CQ has irq_pending/event_pending */
	/* the CQs/EQs that may have event_pending/irq_pending: index ranges
	 * [lo, hi] (empty when lo > hi), so that qrnic_arm_run looks at the
	 * queues that asked and not at the whole table (65536 CQs by default:
	 * a 5.6 MB walk per interrupt otherwise).  Not saved: a snapshot load
	 * widens them to the whole tables. */
	uint32_t arm_cq_lo, arm_cq_hi, arm_eq_lo, arm_eq_hi;
	struct qrnic_qlist work;	/* QPs to service, in order */
	struct qrnic_qlist flushq;	/* QPs moved to error whose queues are to be flushed */
	bool flushing;			/* qrnic_qp_flush is draining flushq */
	struct qrnic_frame rxq[QRNIC_RXQ_DEPTH];
	uint32_t rxq_head, rxq_tail;	/* free running */
	struct qrnic_event *events;	/* binary min-heap */
	struct qrnic_evlane lanes[QRNIC_NUM_LANES];	/* FIFO lanes beside it */
	uint32_t nevents, events_cap;
	uint32_t events_compact_at;	/* purge cancelled events at this size */
	uint8_t ev_first;		/* where the event due first is (events.c), 0: unknown */
	uint64_t event_seq;
	uint32_t timer_gen;		/* source of unique qrnic_req.timer_gen values */
	uint64_t timer_deadline;	/* armed host timer, UINT64_MAX = none */
	bool in_run;
	bool selfcheck;			/* check the QP lists after every service step */
	uint32_t selfcheck_failures;	/* ... and how often they were found broken */

	uint8_t *txbuf;			/* frame being built (a frame buffer), or NULL */
	uint8_t txbuf_spare[QRNIC_MAX_FRAME];	/* ... when none could be allocated */
	/* The payload of the frame being built, by reference (ops->dma_map):
	 * while on, DMA reads landing at base + len extend the reference
	 * instead of copying (qrnic_tx_payload, qrnic_dma_read, qrnic_send_pkt). */
	struct {
		bool on;
		bool only;		/* by reference or not at all (qrnic_train_read) */
		uint8_t *base;		/* where the payload goes in the frame */
		const uint8_t *src;	/* where its first len bytes are */
		uint32_t len;
		uint8_t opcode;		/* of the frame it is read for */
		/* with ops->dma_unmap: the dma_map results it is made of */
		struct qrnic_ref_map map[QRNIC_REF_MAPS];
		uint32_t nmap;
	} txref;

	/* timing (timing.c resources, effects.c scheduling) */
	struct qrnic_timing tm;
	bool tm_on;			/* in a data-path step with a timing profile: account time */
	uint64_t tm_t;			/* modelled time of the work being done */
	uint64_t tm_wr_vis;		/* when the step's posted DMA writes are visible */
	uint32_t tm_cycles;		/* processing cycles of the next packet sent */
	uint64_t tm_depart;		/* when the last timed frame leaves the port */
	bool     port_paused;		/* PFC: the link partner paused the port (qrnic_dev_port_pause) */
	uint64_t pfc_until[8];		/* pfc.c: priority p is paused until then (ns) */
	uint64_t pfc_tail[8];		/* pfc.c: when the last frame deferred by a pause arrives */
	bool     pfc_active;		/* pfc.c: a pause frame was honoured (the TX path looks) */
	/* pfc.c: the port's receive buffer (cfg.rx_buffer, timed only) */
	struct {
		uint64_t next;		/* when the pipeline can take the next frame */
		uint64_t used, max_used;
		uint64_t occ[8], occ_max[8];	/* bytes per priority */
		uint8_t  xoff;		/* priorities we sent an XOFF for */
		uint64_t refresh[8];	/* when that XOFF is sent again */
		uint64_t armed;		/* the QRNIC_EVK_RXBUF event is for then, 0: none */
	} rxb;
	struct qrnic_effect *fx;
	uint32_t fx_cap, fx_free, fx_used, fx_gen;
	uint32_t ring_pls;	/* ring page lists held (ring.c): reset skips the scan at 0 */
	uint64_t stats[QRNIC_STAT_COUNT];
	struct qrnic_fault_state *fault;	/* fault.c; NULL: no fault rules ever added */
};

/* ---- ring.c: rings named by page lists (ABI 1.8, spec 6.6.21) ----------- */
/* The address of byte 'off' of a ring: base + off for a contiguous ring,
 * else through its page list (kept in host memory, fetched once at create).
 * Every access to a CQ, QP or SRQ ring goes through here.  'off' is a slot
 * index (masked to the ring's depth) times its stride, so it is below the
 * ring's size and indexes the list in bounds; a stride is a power of two
 * of at most QRNIC_RING_PAGE_SIZE (checked at create), so a slot never
 * straddles two pages (qrnic_ring_stride_ok). */
static inline uint64_t qrnic_ring_at(uint64_t base, const uint64_t *pl, uint64_t off)
{
	return pl ? pl[off >> QRNIC_RING_PAGE_SHIFT] + (off & (QRNIC_RING_PAGE_SIZE - 1))
		  : base + off;
}
_Static_assert(QRNIC_MAX_SEND_WQE_SHIFT <= QRNIC_RING_PAGE_SHIFT &&
	       QRNIC_MAX_RECV_WQE_SHIFT <= QRNIC_RING_PAGE_SHIFT &&
	       sizeof(struct qrnic_cqe64) <= QRNIC_RING_PAGE_SIZE,
	       "a WQE or CQE never straddles a ring page");
/* A page-listed ring's page count (ring_bytes >= one page, a power of 2). */
static inline uint32_t qrnic_ring_npages(uint64_t ring_bytes)
{
	return (uint32_t)(ring_bytes >> QRNIC_RING_PAGE_SHIFT);
}
/* One page-list entry is good: nonzero, page aligned, the page does not
 * wrap the address space. */
static inline bool qrnic_ring_pl_entry_ok(uint64_t a)
{
	return a != 0 && (a & (QRNIC_RING_PAGE_SIZE - 1)) == 0 &&
	       a <= UINT64_MAX - (QRNIC_RING_PAGE_SIZE - 1);
}
/* Fetch and check the page list at 'list' of a ring of ring_bytes bytes
 * into *out (malloc'd; the caller owns it).  Returns 0, or QRNIC_AQ_BAD_PARAM
 * (ring below one page, list misaligned or wrapping, an entry bad; *bad_entry
 * = its index or -1), QRNIC_AQ_DMA_ERROR, QRNIC_AQ_NO_RESOURCES. */
int qrnic_ring_pl_load(struct qrnic_dev *d, uint64_t list, uint64_t ring_bytes, uint64_t **out,
		       int64_t *bad_entry);
void qrnic_ring_pl_free(struct qrnic_dev *d, uint64_t **pl);
/* Free the page lists of every CQ, QP and SRQ (reset, teardown, load). */
void qrnic_rings_free_all(struct qrnic_dev *d);

/* ---- pfc.c: 802.1Qbb frames ------------------------------------------------ */
void qrnic_pfc_rx(struct qrnic_dev *d, const uint8_t *f, size_t len);
/* true: TX effect idx is deferred behind a pause of its priority (rescheduled) */
bool qrnic_pfc_defer(struct qrnic_dev *d, struct qrnic_effect *e, uint32_t idx, uint64_t now);
/* The receive buffer (cfg.rx_buffer, timed): is it on; a frame arriving
 * now, false: no room, dropped (counted); the frame at the head taken by
 * the pipeline; whether the head may be taken now (else the event that
 * wakes the device then is armed); forget everything (reset). */
static inline bool qrnic_rxb_on(const struct qrnic_dev *d)
{
	return d->cfg.rx_buffer && d->tm.enabled;
}
bool qrnic_rxb_admit(struct qrnic_dev *d, struct qrnic_frame *f);
void qrnic_rxb_taken(struct qrnic_dev *d, const struct qrnic_frame *f);
bool qrnic_rxb_due(struct qrnic_dev *d, const struct qrnic_frame *f, bool arm);
void qrnic_rxb_reset(struct qrnic_dev *d);
void qrnic_rxb_event(struct qrnic_dev *d, const struct qrnic_event *ev);
bool qrnic_rxq_ready(struct qrnic_dev *d);	/* rx.c: the head may be taken now */

/* ---- device.c: the choke points (and regs.c, events.c, work.c, rx.c) ----- */
/* Every host-memory access of the model goes through these two.  They
 * count, trace and (later) apply the timing model and fault injection.
 * Return 0 or -1; on -1 nothing was transferred to/from buf reliably. */
int qrnic_dma_read(struct qrnic_dev *d, uint64_t addr, void *buf, size_t len);
int qrnic_dma_write(struct qrnic_dev *d, uint64_t addr, const void *buf, size_t len);
/* Every RoCEv2 frame leaves through qrnic_tx; every received frame enters
 * through qrnic_dev_rx_frame and is dispatched by qrnic_rx_run (rx.c). */
void qrnic_tx(struct qrnic_dev *d, const uint8_t *frame, size_t len);
void qrnic_irq(struct qrnic_dev *d, unsigned vector);
/* The host's clock (ns). */
static inline uint64_t qrnic_now(struct qrnic_dev *d)
{
	return d->clock ? *d->clock : d->ops->now_ns(d->opaque);
}
uint8_t qrnic_port_ib_mtu(const struct qrnic_dev *d);
void qrnic_guest_error(struct qrnic_dev *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void qrnic_unimp(struct qrnic_dev *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void qrnic_trace_emit(struct qrnic_dev *d, uint32_t type, uint32_t qpn, uint32_t psn,
		      uint32_t a, uint32_t b, uint64_t addr);
/* Typed trace points (qrnic_tracepoints.h): qrnic_tp_<name>(d, fields...)
 * hands the point to ops->tracepoint, if any.  A guest error is reported
 * with qrnic_guest_err(d, err_<what>, (fields...), "free text", args...):
 * its typed point, then its free-text line for the log. */
void qrnic_tp_emit(struct qrnic_dev *d, enum qrnic_tp tp, const uint64_t *args);
/* The device event (category EV) of a trace record. */
void qrnic_tp_from_trace(struct qrnic_dev *d, const struct qrnic_trace_ev *ev);
#define QRNIC_TP_EMITTER(name, cat, doc, fmt, ...)				\
static inline void qrnic_tp_##name(struct qrnic_dev *d,				\
				   QRNIC_TP_MAP(QRNIC_TP_DECL, __VA_ARGS__))	\
{										\
	if (d->ops->tracepoint) {						\
		const uint64_t args_[] = { QRNIC_TP_MAP(QRNIC_TP_VAL, __VA_ARGS__) }; \
										\
		qrnic_tp_emit(d, QRNIC_TP_##name, args_);			\
	}									\
}
QRNIC_TRACEPOINTS(QRNIC_TP_EMITTER)
#undef QRNIC_TP_EMITTER
#define qrnic_guest_err(d, name, fields, ...)					\
	do {									\
		qrnic_tp_##name(d, QRNIC_TP_UNPAREN fields);			\
		qrnic_guest_error(d, __VA_ARGS__);				\
	} while (0)
void qrnic_trace_at_emit(struct qrnic_dev *d, uint64_t t, uint32_t type, uint32_t qpn,
			 uint32_t psn, uint32_t a, uint32_t b, uint64_t addr);
/* Whether trace records are wanted: trace_off first, one load when off.
 * A caller whose arguments cost something (a clock read: an indirect call
 * the compiler must make even when the record is not) tests it first. */
static inline bool qrnic_tracing(const struct qrnic_dev *d)
{
	return !d->trace_off && d->ops->trace;
}

/* Trace points: inline, so that they cost a test while tracing is off. */
static inline void qrnic_trace(struct qrnic_dev *d, uint32_t type, uint32_t qpn, uint32_t psn,
			       uint32_t a, uint32_t b, uint64_t addr)
{
	if (qrnic_tracing(d))
		qrnic_trace_emit(d, type, qpn, psn, a, b, addr);
}

static inline void qrnic_trace_at(struct qrnic_dev *d, uint64_t t, uint32_t type, uint32_t qpn,
				  uint32_t psn, uint32_t a, uint32_t b, uint64_t addr)
{
	if (qrnic_tracing(d))
		qrnic_trace_at_emit(d, t, type, qpn, psn, a, b, addr);
}
static inline void qrnic_stat_add(struct qrnic_dev *d, enum qrnic_stat s, uint64_t n)
{
	d->stats[s] += n;
}
void qrnic_fatal(struct qrnic_dev *d, uint32_t code);
/* work.c: put a QP on the work list and ask the host to run us. */
void qrnic_qp_kick(struct qrnic_dev *d, struct qrnic_qp *qp);
void qrnic_work_remove(struct qrnic_dev *d, struct qrnic_qp *qp);

/* QP lists (qrnic_qlink): 'off' is the offset of the link in struct qrnic_qp
 * (QRNIC_QL_WORK, QRNIC_QL_FLUSH).  Push appends unless the QP is already
 * on the list (returns false then); remove is O(1). */
#define QRNIC_QL_WORK	offsetof(struct qrnic_qp, work)
#define QRNIC_QL_FLUSH	offsetof(struct qrnic_qp, flushq)
static inline struct qrnic_qlink *qrnic_ql(struct qrnic_qp *qp, size_t off)
{
	return (struct qrnic_qlink *)((char *)qp + off);
}
static inline bool qrnic_qlist_push(struct qrnic_dev *d, struct qrnic_qlist *l, size_t off,
				    struct qrnic_qp *qp)
{
	struct qrnic_qlink *k = qrnic_ql(qp, off);

	if (k->on)
		return false;
	k->on = true;
	k->next = 0;
	k->prev = l->tail;
	if (l->tail)
		qrnic_ql(&d->qp[l->tail], off)->next = qp->qpn;
	else
		l->head = qp->qpn;
	l->tail = qp->qpn;
	l->len++;
	return true;
}
static inline void qrnic_qlist_remove(struct qrnic_dev *d, struct qrnic_qlist *l, size_t off,
				      struct qrnic_qp *qp)
{
	struct qrnic_qlink *k = qrnic_ql(qp, off);

	if (!k->on)
		return;
	if (k->prev)
		qrnic_ql(&d->qp[k->prev], off)->next = k->next;
	else
		l->head = k->next;
	if (k->next)
		qrnic_ql(&d->qp[k->next], off)->prev = k->prev;
	else
		l->tail = k->prev;
	l->len--;
	k->on = false;
	k->prev = k->next = 0;
}
static inline struct qrnic_qp *qrnic_qlist_pop(struct qrnic_dev *d, struct qrnic_qlist *l,
					       size_t off)
{
	struct qrnic_qp *qp;

	if (!l->head)
		return NULL;
	qp = &d->qp[l->head];
	qrnic_qlist_remove(d, l, off, qp);
	return qp;
}
void qrnic_schedule(struct qrnic_dev *d);
void qrnic_event_add(struct qrnic_dev *d, uint64_t when, uint32_t kind, uint32_t id, uint32_t gen);
/* The same, queued in FIFO lane 'lane' when it is not earlier than the
 * lane's last event (else in the heap): for deadlines that mostly grow. */
void qrnic_event_add_lane(struct qrnic_dev *d, enum qrnic_event_lane lane, uint64_t when,
			  uint32_t kind, uint32_t id, uint32_t gen);
/* events.c: (re)arm the host timer for the first pending event; drop every
 * event (device reset); free the event storage (qrnic_dev_free). */
void qrnic_timer_update(struct qrnic_dev *d);
void qrnic_events_reset(struct qrnic_dev *d);
/* snapshot.c: put back a saved event as it was (its seq kept); 0 or -1. */
int qrnic_event_restore(struct qrnic_dev *d, const struct qrnic_event *ev);
void qrnic_events_free(struct qrnic_dev *d);
/* rx.c: dispatch up to 'budget' queued frames (true if any); drop them all. */
bool qrnic_rx_run(struct qrnic_dev *d, uint32_t budget);
void qrnic_rxq_clear(struct qrnic_dev *d);
struct qrnic_qp *qrnic_qp_get(struct qrnic_dev *d, uint32_t qpn);	/* NULL unless valid */
struct qrnic_cq *qrnic_cq_get(struct qrnic_dev *d, uint32_t cqn);
struct qrnic_ah *qrnic_ah_get(struct qrnic_dev *d, uint32_t ahn);

/* ---- cq.c: completions and events ---------------------------------------- */
/* Set in cqe->rsvd by the responder for a solicited completion; cleared
 * before the CQE is written. */
#define QRNIC_CQE_RSVD_SOLICITED	1
/* Write a CQE (owner bit set here) and raise an event if armed.  Returns 0,
 * or -1 if the CQ is in error/overrun (the CQE is lost, counted). */
int qrnic_cq_post(struct qrnic_dev *d, struct qrnic_cq *cq, struct qrnic_cqe *cqe);
void qrnic_cq_doorbell(struct qrnic_dev *d, struct qrnic_cq *cq, uint32_t ci, bool arm, bool solicited);
/* Post an async event on the async EQ (if any). */
void qrnic_async_event(struct qrnic_dev *d, uint8_t subtype, uint32_t handle, uint32_t data);
int qrnic_eq_post(struct qrnic_dev *d, struct qrnic_eq *eq, uint8_t type, uint8_t subtype,
		  uint32_t handle, uint32_t data);
void qrnic_eq_doorbell(struct qrnic_dev *d, uint32_t eqn, uint32_t ci, bool arm);
/* RESIZE_CQ (spec 9.x): 0, or QRNIC_AQ_BAD_PARAM (the CQEs not consumed do
 * not fit), QRNIC_AQ_BAD_STATE (the CQ overran), QRNIC_AQ_DMA_ERROR; on
 * failure nothing changed.  *carried: CQEs copied to the new ring. */
int qrnic_cq_resize(struct qrnic_dev *d, struct qrnic_cq *cq, uint8_t log_depth, uint64_t ring,
		    uint64_t *ring_pl,
		    uint32_t *carried);
/* The moderation period of CQ id ended (QRNIC_EVK_CQ_MOD). */
void qrnic_cq_mod_timer(struct qrnic_dev *d, const struct qrnic_event *ev);
/* Raise what arming doorbells found pending (never inside the MMIO write). */
void qrnic_arm_run(struct qrnic_dev *d);
void qrnic_arm_mark(uint32_t *lo, uint32_t *hi, uint32_t i);
void qrnic_arm_mark_all(struct qrnic_dev *d);

/* Little-endian 64-bit value from host memory (page lists). */
static inline uint64_t qrnic_le64_to_host(uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap64(v);
#else
	return v;
#endif
}

/* ---- mr.c: memory protection and translation ----------------------------- */
/* Allocate/free MTT entries; returns first index or UINT32_MAX (n == 0,
 * no free run of n entries, or no memory for the allocator).  First fit:
 * the lowest run of n free entries.  Freeing tolerates entries already
 * free (counted once) and ignores a range out of bounds. */
uint32_t qrnic_mtt_alloc(struct qrnic_dev *d, uint32_t n);
void qrnic_mtt_free(struct qrnic_dev *d, uint32_t base, uint32_t n);
/* Calls fn for each maximal run of allocated MTT entries, lowest first;
 * returns how many (fn may be NULL: only counted). */
uint32_t qrnic_mtt_runs(struct qrnic_dev *d, void (*fn)(void *, uint32_t, uint32_t),
			void *opaque);
/* The MPT slot allocator.  qrnic_mpt_peek: the lowest free slot (>= 1),
 * or 0 if none (table full, or no memory for the allocator); nothing is
 * claimed.  qrnic_mpt_take claims the slot peek returned (call it before
 * another peek/take/give); qrnic_mpt_give hands a slot back (a slot not
 * taken is ignored). */
uint32_t qrnic_mpt_peek(struct qrnic_dev *d);
void qrnic_mpt_take(struct qrnic_dev *d, uint32_t idx);
void qrnic_mpt_give(struct qrnic_dev *d, uint32_t idx);
/* device.c, snapshot.c: the allocators' memory; their power-on state (all
 * free); their state rebuilt from the MPT and mtt_used (a loaded stream:
 * false if out of memory); check against them: qrnic_dev_check_alloc
 * (qrnic_model.h). */
int qrnic_mr_alloc_init(struct qrnic_dev *d);
void qrnic_mr_alloc_fini(struct qrnic_dev *d);
void qrnic_mr_alloc_reset(struct qrnic_dev *d);
bool qrnic_mr_alloc_rebuild(struct qrnic_dev *d);
/* An MPT slot in use: holds an MR, a fast-registration MR or a window. */
static inline bool qrnic_mpt_in_use(const struct qrnic_mr *m)
{
	return (m->mpt.flags & (QRNIC_MPT_VALID | QRNIC_MPT_FAST | QRNIC_MPT_MW)) != 0;
}
/* Resolve [va, va+len) of MR 'key' for PD 'pdn' needing 'access'
 * (QRNIC_ACCESS_* bits; 0 = local read).  Returns QRNIC_VERR_NONE or the
 * reason (LKEY/PD/BOUNDS/ACCESS). */
int qrnic_mr_check(struct qrnic_dev *d, uint32_t key, uint32_t pdn, uint64_t va,
		   uint64_t len, uint32_t access);
/* Copy between an MR range and a local buffer, checking as above and
 * splitting at page boundaries.  Returns QRNIC_VERR_NONE, a check
 * failure, or QRNIC_VERR_DMA. */
int qrnic_mr_read(struct qrnic_dev *d, uint32_t key, uint32_t pdn, uint64_t va,
		  void *buf, uint32_t len, uint32_t access);
int qrnic_mr_write(struct qrnic_dev *d, uint32_t key, uint32_t pdn, uint64_t va,
		   const void *buf, uint32_t len, uint32_t access);
/* Fast registration (spec 12.12): the REG_MR WQE w, posted on a QP of PD
 * pdn, makes its MR valid; invalidation (LOCAL_INV, SEND_WITH_INV) makes
 * MR 'key' of PD pdn free.  Both return QRNIC_VERR_NONE or the reason
 * (BAD_WQE, LKEY, PD, MR_STATE, DMA); a failure changes nothing the MR's
 * key could reach. */
int qrnic_mr_fast_reg(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_reg_mr_wqe *w);
/* qpn: the QP invalidating (a type 2 window must be bound through it). */
int qrnic_mr_invalidate(struct qrnic_dev *d, uint32_t pdn, uint32_t qpn, uint32_t key);
/* Memory windows (spec 12.13): BIND_MW WQE w on QP qp.  Returns
 * QRNIC_VERR_*; a failure changes nothing. */
int qrnic_mw_bind(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_bind_mw_wqe *w);
/* Window mw becomes free (unbound): its MR and its QP (type 2) have one
 * window less.  DEREG_MR of a window, invalidation, rebinding. */
void qrnic_mw_unbind(struct qrnic_dev *d, struct qrnic_mr *mw);
/* QP qp is destroyed: the type 2 windows bound through it become free. */
void qrnic_mw_qp_gone(struct qrnic_dev *d, struct qrnic_qp *qp);
/* Remote access through rkey by the responder of QP qp (pdn, qpn): as
 * qrnic_mr_check/read/write, and a memory window's rkey works too. */
int qrnic_rkey_check(struct qrnic_dev *d, const struct qrnic_qp *qp, uint32_t rkey, uint64_t va,
		     uint64_t len, uint32_t access);
int qrnic_rkey_read(struct qrnic_dev *d, const struct qrnic_qp *qp, uint32_t rkey, uint64_t va,
		    void *buf, uint32_t len, uint32_t access);
int qrnic_rkey_write(struct qrnic_dev *d, const struct qrnic_qp *qp, uint32_t rkey, uint64_t va,
		     const void *buf, uint32_t len, uint32_t access);
/* Scatter/gather over an SGE list at byte offset 'off'.  Access is checked
 * per SGE (LOCAL_WRITE for writes).  Returns QRNIC_VERR_*. */
int qrnic_sgl_read(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_sge *sge,
		   uint32_t nsge, uint32_t off, void *buf, uint32_t len);
/* Trains: bytes [off, off + len) of an SGL as one run of host memory
 * mapped once, cut to whole units of unit bytes unless it reaches the end;
 * its length (0: none, nothing held) and *src (mr.c). */
uint32_t qrnic_sgl_map_run(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_sge *sge,
			   uint32_t nsge, uint32_t off, uint32_t len, uint32_t unit,
			   const uint8_t **src);
/* Timed steps only: look 'key' up in translation cache 'c', add the miss
 * cost to the step's time (d->tm_t) and count the hit or miss in the
 * device statistics. */
void qrnic_tm_xlate_lookup(struct qrnic_dev *d, enum qrnic_tm_cache_id c, uint32_t key);
static inline void qrnic_tm_xlate(struct qrnic_dev *d, enum qrnic_tm_cache_id c, uint32_t key)
{
	uint64_t delay;

	/* most lookups repeat the cache's last key: that hit inline */
	if (!qrnic_tm_lookup_last(&d->tm, c, d->tm_t, key, &delay)) {
		qrnic_tm_xlate_lookup(d, c, key);
		return;
	}
	d->tm_t += delay;
	qrnic_stat_add(d, c == QRNIC_TM_QPC ? QRNIC_STAT_QPC_CACHE_HITS :
		       c == QRNIC_TM_MPT ? QRNIC_STAT_MPT_CACHE_HITS : QRNIC_STAT_MTT_CACHE_HITS, 1);
}
int qrnic_sgl_write(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_sge *sge,
		    uint32_t nsge, uint32_t off, const void *buf, uint32_t len);
/* Validate a whole SGE list up front: keys, PD, bounds, access; sums the
 * length into *total.  Returns QRNIC_VERR_*. */
int qrnic_sgl_check(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_sge *sge,
		    uint32_t nsge, uint32_t access, uint32_t *total);

/* ---- qp.c: QP lifecycle hooks (called by firmware and engines) ---------- */
int qrnic_qp_init_state(struct qrnic_dev *d, struct qrnic_qp *qp);	/* at CREATE_QP */
void qrnic_qp_fini_state(struct qrnic_dev *d, struct qrnic_qp *qp);	/* at DESTROY_QP */
/* Apply a state change that the firmware validated: RESET clears all
 * transport state; RTR loads resp.epsn from attr.rq_psn; RTS loads
 * req.next_psn from attr.sq_psn; ERR flushes both queues. */
void qrnic_qp_set_state(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t state);
/* Engines: move to ERR (if not already) with an async event subtype
 * (QRNIC_EV_* or 0xff for none) and flush. */
void qrnic_qp_error(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t async_ev);
/* bf_bytes: the BlueFlame write's size (its MMIO time is charged), else 0.
 * Returns whether the doorbell was taken. */
bool qrnic_qp_doorbell(struct qrnic_dev *d, struct qrnic_qp *qp, bool sq, uint32_t pi,
		       uint32_t bf_bytes);
/* A new producer index (doorbell or record) is valid if it neither laps
 * the consumer index (more than depth ahead) nor moves back from the one
 * known (spec 8.6, 8.6.1, 12.10). */
static inline bool qrnic_pi_ok(uint32_t pi, uint32_t ci, uint32_t known, uint32_t depth)
{
	return pi - ci <= depth && (int32_t)(pi - known) >= 0;
}

/* ABI 1.10: take the RQ producer index from the QP's record, if it has one
 * (an invalid or unreadable record is ignored and counted as a doorbell
 * would be).  Returns whether the RQ has a WQE posted. */
bool qrnic_rq_dbrec_read(struct qrnic_dev *d, struct qrnic_qp *qp);
/* ABI 1.11: take the SQ producer index from the QP's record (the same
 * checks); clear the device's flag there first (qp.c, spec 8.6.2). */
void qrnic_sq_dbrec_read(struct qrnic_dev *d, struct qrnic_qp *qp);
void qrnic_sq_dbrec_clear(struct qrnic_dev *d, struct qrnic_qp *qp);
void qrnic_bf_uctx_clear(struct qrnic_dev *d, uint32_t uctx);	/* regs.c */
void qrnic_bf_free_all(struct qrnic_dev *d);			/* regs.c */
/* Service one QP from the work list: ACKs, READ responses, new requests.
 * Returns true if the QP still has work. */
bool qrnic_qp_service(struct qrnic_dev *d, struct qrnic_qp *qp);
void qrnic_qp_event(struct qrnic_dev *d, const struct qrnic_event *ev);
void qrnic_qp_flush(struct qrnic_dev *d, struct qrnic_qp *qp);

/* ---- mcast.c: UD multicast groups ------------------------------------------ */
bool qrnic_gid_is_mcast(const uint8_t gid[16]);
struct qrnic_mcg *qrnic_mcg_find(struct qrnic_dev *d, const uint8_t gid[16]);
int qrnic_mcg_attach(struct qrnic_dev *d, const uint8_t gid[16], uint32_t qpn);	/* 0 / -1 full */
int qrnic_mcg_detach(struct qrnic_dev *d, const uint8_t gid[16], uint32_t qpn);	/* 0 / -1 not a member */
void qrnic_mcg_detach_qp(struct qrnic_dev *d, uint32_t qpn);	/* from every group */
void qrnic_mcg_deliver(struct qrnic_dev *d, const struct qrnic_mcg *g, const struct qrnic_pkt *p);

/* ---- srq.c / responder.c: receive WQEs -------------------------------------- */
int qrnic_rwqe_read(struct qrnic_dev *d, uint64_t addr, uint32_t stride, uint32_t pdn,
		    uint32_t idx, struct qrnic_rwqe *r);
struct qrnic_srq *qrnic_srq_get(struct qrnic_dev *d, uint32_t srqn);	/* NULL unless valid */
void qrnic_srq_arm(struct qrnic_dev *d, struct qrnic_srq *s, uint32_t limit);
void qrnic_srq_doorbell(struct qrnic_dev *d, struct qrnic_srq *s, uint32_t pi);
bool qrnic_srq_empty(const struct qrnic_srq *s);
/* Take the SRQ's next WQE into r (the consumer index advances, the record
 * is written, SRQ_LIMIT_REACHED may fire); QRNIC_VERR_* of its validation. */
int qrnic_srq_take(struct qrnic_dev *d, struct qrnic_srq *s, struct qrnic_rwqe *r);
void qrnic_xrc_flush_recv(struct qrnic_dev *d, struct qrnic_qp *qp);	/* srq.c */

/* ---- requester.c / completer.c / responder.c ----------------------------- */
bool qrnic_req_step(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t budget);
void qrnic_req_timer(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t kind);
void qrnic_req_arm_retry(struct qrnic_dev *d, struct qrnic_qp *qp);
void qrnic_req_stop_retry(struct qrnic_dev *d, struct qrnic_qp *qp);
void qrnic_req_rnr_wait(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t wait_ns);
void qrnic_req_stop_timers(struct qrnic_dev *d, struct qrnic_qp *qp);
bool qrnic_req_event_current(const struct qrnic_qp *qp, const struct qrnic_event *ev);
bool qrnic_req_outstanding(const struct qrnic_qp *qp);
void qrnic_req_cwnd_cut(struct qrnic_dev *d, struct qrnic_qp *qp);
void qrnic_req_cwnd_grow(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t npkts);
void qrnic_req_complete(struct qrnic_dev *d, struct qrnic_qp *qp);
void qrnic_req_rewind(struct qrnic_dev *d, struct qrnic_qp *qp);
void qrnic_req_retry(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t reason);
void qrnic_req_fail_head(struct qrnic_dev *d, struct qrnic_qp *qp, uint8_t status, uint8_t verr);
uint64_t qrnic_rnr_timer_ns(uint8_t code);
void qrnic_comp_packet(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p);
void qrnic_resp_packet(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p);
bool qrnic_resp_step(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t budget);
/* Fill the L2/L3 part of a packet from an address vector, for a packet
 * of QP qp (a valid QP: its congestion control sets ECT).  Returns 0 or VERR. */
int qrnic_pkt_fill_av(struct qrnic_dev *d, struct qrnic_pkt *p, const struct qrnic_av *av,
		      const struct qrnic_qp *qp);
/* Whether frames get (and are checked for) an ICRC: always, but on a
 * trusted simulated wire without a fault plan. */
static inline bool qrnic_icrc_on(const struct qrnic_dev *d)
{
	return !d->trusted_wire || d->fault;
}

/* A frame buffer (qrnic_frame_buf_alloc) whose byte at aligned_off is
 * 64-byte aligned: where the payload goes, for co-aligned copies. */
uint8_t *qrnic_frame_buf_alloc_at(size_t len, size_t aligned_off);
/* Payload by reference: bytes [off, off + len) of the frame are at src. */
void qrnic_frame_buf_set_ref(uint8_t *buf, uint32_t off, const uint8_t *src, uint32_t len);
/* ... and made of these n dma_map results (ops->dma_unmap, not NULL):
 * passed back to unmap once the payload is copied (qrnic_frame_buf_fill)
 * or the buffer freed. */
void qrnic_frame_buf_set_maps(uint8_t *buf, void (*unmap)(const void *, size_t),
			      const struct qrnic_ref_map *map, uint32_t n);
/* The reference being built (d->txref) is given up: its bytes copied into
 * the frame if copy, its mappings released. */
void qrnic_txref_drop(struct qrnic_dev *d, bool copy);
/* src of a frame buffer's payload reference (off, len set), or NULL. */
const uint8_t *qrnic_frame_buf_ref(const uint8_t *buf, uint32_t *off, uint32_t *len);
/* Headers by description: the frame's header bytes are not built; p is
 * the IPv4 packet (no ICRC) they would be built from, its payload none or
 * by reference (qrnic_frame_buf_set_ref).  qrnic_frame_buf_fill builds them. */
void qrnic_frame_buf_set_pkt(uint8_t *buf, const struct qrnic_pkt *p);
/* The packet of a frame with headers by description, or NULL. */
const struct qrnic_pkt *qrnic_frame_buf_pkt(const uint8_t *buf);
/* The host vouches for the frame's ICRC (qrnic_dev_rx_frame_buf_vouched). */
void qrnic_frame_buf_set_vouched(uint8_t *buf, bool on);
bool qrnic_frame_buf_vouched(const uint8_t *buf);
/* The ICRC of the len-byte IPv4 RoCEv2 frame in buf is left to
 * qrnic_frame_buf_fill (qrnic_dev_set_lazy_icrc). */
void qrnic_frame_buf_set_icrc_pending(uint8_t *buf, size_t len);

/*
 * A train: up to QRNIC_TRAIN_MAX packets of one RC WRITE message in one
 * frame buffer, handed from one qrnic port of a QEMU to another without a
 * frame per packet (issue 23, docs/timing.md 5.6).  The buffer describes
 * its first packet as any frame by description does (its pkt, its payload
 * by reference and the mappings of it); the packets after it differ only
 * in PSN (consecutive), opcode (WRITE_MIDDLE, the last one MIDDLE or
 * LAST), AckReq (a bit each), SE (the last one's) and no RETH, and carry
 * their payloads by reference here.  Anything that would read its bytes
 * splits it into its frames first (qrnic_frame_buf_train_split).
 */
#define QRNIC_TRAIN_MAX	32
_Static_assert(QRNIC_QP_PKT_BUDGET + QRNIC_TRAIN_MAX + 1 <= QRNIC_RXQ_STEP_RESERVE,
	       "a step's looped-back frames must fit the receive queue's reserve");
struct qrnic_train {
	uint32_t n;			/* packets, 1..QRNIC_TRAIN_MAX */
	uint32_t ackreq;		/* bit i: packet i asks for an ACK */
	uint32_t borrowed;		/* bit i: packet i's payload lies in an earlier
					 * packet's mapping (qrnic_train_add_run) */
	uint8_t last_opcode;
	bool last_se;
	void (*unmap)(const void *ptr, size_t len);
	/* what every reader of the train reads of each packet, 16 bytes a
	 * packet: a train's 32 in eight cache lines */
	struct {
		const uint8_t *src;	/* its payload, len bytes */
		uint32_t len;
		uint32_t nmap;		/* seg[0]: 0, the buffer holds them */
	} seg[QRNIC_TRAIN_MAX];
	/* packet i's mappings, seg[i].nmap of them: read only where held */
	struct qrnic_ref_map map[QRNIC_TRAIN_MAX][QRNIC_REF_MAPS];
};
/* The train a frame buffer carries, or NULL. */
struct qrnic_train *qrnic_frame_buf_train(uint8_t *buf);
/* Make buf (by description, its payload by reference) a train of its one packet. */
struct qrnic_train *qrnic_frame_buf_train_start(uint8_t *buf);
/* The frame bytes of packets 1 .. upto - 1 of train t (packet 0's is its
 * buffer's length). */
uint64_t qrnic_train_bytes(const struct qrnic_train *t, uint32_t upto);
/* A train of one packet becomes the plain frame it is. */
void qrnic_frame_buf_train_single(uint8_t *buf);
/* Packet i of train t, whose first packet is p0. */
void qrnic_train_pkt(const struct qrnic_train *t, const struct qrnic_pkt *p0, uint32_t i,
		     struct qrnic_pkt *p);

/* How many packets of train t (first packet p0, as received) the
 * responder takes whole: 0..t->n, those before the first it would not
 * take as it takes them one by one (responder.c). */
uint32_t qrnic_resp_write_train(struct qrnic_dev *d, struct qrnic_qp *qp,
				const struct qrnic_pkt *p0, const struct qrnic_train *t);
/* Send the train being built, if any (net.c). */
void qrnic_train_flush(struct qrnic_dev *d);
/* Whether this device's RC WRITE packets may go as trains now: trains on,
 * payloads by reference with a lazy ICRC and no fault plan (tx_lazy_ref),
 * untimed, untraced (net.c). */
bool qrnic_trains_form(const struct qrnic_dev *d);
/* The requester's way to a train's next packet without a packet
 * description (net.c, requester.c train_next): whether the train being
 * built is qp's and goes on at psn; the payload read by reference only;
 * the packet added. */
bool qrnic_train_continues(const struct qrnic_dev *d, const struct qrnic_qp *qp, uint32_t psn);
bool qrnic_train_read(struct qrnic_dev *d, uint32_t pdn, const struct qrnic_sge *sge,
		      uint32_t nsge, uint32_t off, uint32_t len);
void qrnic_train_add(struct qrnic_dev *d, uint8_t opcode, bool ackreq, bool se);
/* The next packets of the train being built, as many as fit (at most
 * qrnic_train_room): run bytes of host memory at src, mapped once for
 * them (qrnic_sgl_map_run), in packets of mtu bytes, the last one up to
 * mtu; ackreq bit j: its packet j asks for an ACK; last: its last packet
 * is the message's (WRITE_LAST), with SE se.  Leaves the train when full
 * or with WRITE_LAST, as qrnic_train_add. */
void qrnic_train_add_run(struct qrnic_dev *d, const uint8_t *src, uint32_t run, uint32_t mtu,
			 uint32_t ackreq, bool last, bool se);
/* Room left on the train being built (0: none being built). */
static inline uint32_t qrnic_train_room(const struct qrnic_dev *d)
{
	return d->train_buf ? QRNIC_TRAIN_MAX - d->train->n : 0;
}

/* Build and send a frame through qrnic_tx.  The payload may already sit
 * where it belongs in the frame: at qrnic_tx_payload(d, p). */
void qrnic_send_pkt(struct qrnic_dev *d, const struct qrnic_pkt *p, const void *payload,
		    uint32_t paylen);
/* Where the payload of the next frame built by qrnic_send_pkt goes, given
 * p->ipv6 and p->opcode: read it there and the build copies nothing. */
uint8_t *qrnic_tx_payload(struct qrnic_dev *d, const struct qrnic_pkt *p);

/* ---- effects.c: timing glue ---------------------------------------------- */
/* True while a data-path step runs with a timing profile other than
 * "functional": the choke points then account time and defer effects. */
static inline bool qrnic_timed(const struct qrnic_dev *d)
{
	return d->tm_on;	/* set by qrnic_tm_begin only with a timing profile */
}
/* Start a data-path step, now.  Only a timed step (qrnic_timed) has a
 * time: an untimed one leaves d->tm_t, tm_wr_vis and tm_cycles as they
 * were (an earlier step's, never later than now), and only timed code
 * uses them (a READ's r->tm_issue copies d->tm_t either way). */
void qrnic_tm_begin(struct qrnic_dev *d);
void qrnic_tm_end(struct qrnic_dev *d);
/* Defer a frame (copied) to leave at its modelled departure time. */
void qrnic_fx_tx(struct qrnic_dev *d, const uint8_t *frame, size_t len);
/* The same, taking a frame buffer. */
void qrnic_fx_tx_buf(struct qrnic_dev *d, uint8_t *buf, size_t len);
/* Defer writing a CQE into 'slot' of CQ cqn until its modelled time. */
int qrnic_fx_cqe(struct qrnic_dev *d, uint32_t cqn, uint64_t slot, const struct qrnic_cqe *cqe);
/* Defer an interrupt for moderation. */
bool qrnic_fx_irq(struct qrnic_dev *d, unsigned vector);
void qrnic_fx_fire(struct qrnic_dev *d, const struct qrnic_event *ev);
void qrnic_fx_reset(struct qrnic_dev *d);
void qrnic_fx_cancel_cq(struct qrnic_dev *d, uint32_t cqn);	/* CQ destroyed */
void qrnic_fx_flush_cq(struct qrnic_dev *d, uint32_t cqn);	/* its CQEs written now */
/* Send a frame now (what a due TX effect does). */
void qrnic_tx_now(struct qrnic_dev *d, const uint8_t *frame, size_t len);
/* The same, taking a frame buffer (qrnic_frame_buf_alloc) instead of copying. */
void qrnic_tx_buf(struct qrnic_dev *d, uint8_t *buf, size_t len);
void qrnic_tx_now_buf(struct qrnic_dev *d, uint8_t *buf, size_t len);
/* Write a reserved CQE now and raise its event (what a due CQE effect does);
 * ts: its completion timestamp (written only by a QRNIC_CQ_F_TIMESTAMP CQ). */
void qrnic_cq_write_now(struct qrnic_dev *d, struct qrnic_cq *cq, uint64_t slot,
			struct qrnic_cqe *cqe, uint64_t ts);

/* ---- eth.c: the plain Ethernet rings ------------------------------------- */
void qrnic_eth_reg_write(struct qrnic_dev *d, uint64_t off, uint32_t v);
bool qrnic_eth_tx_run(struct qrnic_dev *d);
void qrnic_eth_rx(struct qrnic_dev *d, const uint8_t *frame, size_t len);

/* ---- fault.c: fault injection hooks (qrnic_fault.h, docs/faults.md) -------- */
/* Each is called only when d->fault != NULL. */
/* Wire faults on a frame leaving (tx) or entering (rx) the device.  true:
 * fault.c took the frame (dropped, held, or sent on itself). */
bool qrnic_fault_tx(struct qrnic_dev *d, const uint8_t *frame, size_t len);
bool qrnic_fault_rx(struct qrnic_dev *d, const uint8_t *frame, size_t len);
/* true: this host memory access fails (as if the host refused it). */
bool qrnic_fault_dma(struct qrnic_dev *d, bool write, uint64_t addr, size_t len);
/* Before a CQE is written: may rewrite its status; true: take the overrun path. */
bool qrnic_fault_cqe(struct qrnic_dev *d, struct qrnic_cq *cq, struct qrnic_cqe *cqe);
/* Before an EQE is written.  true: take the overflow path (the EQE is lost). */
bool qrnic_fault_eqe(struct qrnic_dev *d, struct qrnic_eq *eq);
/* Before an admin command executes: QRNIC_AQ_OK, or the status to fail it
 * with (the command is then not executed). */
uint8_t qrnic_fault_admin(struct qrnic_dev *d, uint8_t opcode);
/* Before an admin command is taken from the ring: true = the admin queue
 * hangs (no completion, nothing more processed until a device reset). */
bool qrnic_fault_admin_hang(struct qrnic_dev *d, uint8_t opcode);
void qrnic_fault_event(struct qrnic_dev *d, const struct qrnic_event *ev);
void qrnic_fault_reset(struct qrnic_dev *d);	/* after the reset emptied the event heap */
void qrnic_fault_free(struct qrnic_dev *d);

#endif
