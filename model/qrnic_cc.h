/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic congestion control (spec 12.15): ECN, the notification point (CNP
 * generation, cc.c) and the reaction point behind a small interface, one
 * implementation per algorithm (cc.c: "none"; cc_dcqcn.c: DCQCN).
 *
 * The device-wide configuration parameter cc_algo selects the algorithm of
 * every RC and UC QP; its parameters (np_*, rp_*) are configuration
 * parameters too (model/config.c).  The reaction point's rate paces the
 * QP's request packets only under a timing profile (docs/timing.md): the
 * functional profile has no modelled time to pace in, so there the state
 * (alpha, rates) is kept and can be read, but packets are not held.
 */
#ifndef QRNIC_CC_H
#define QRNIC_CC_H

#include <stdbool.h>
#include <stdint.h>

struct qrnic_dev;
struct qrnic_qp;
struct qrnic_pkt;

enum qrnic_cc_algo { QRNIC_CC_NONE = 0, QRNIC_CC_DCQCN = 1, QRNIC_CC_TIMELY = 2, QRNIC_CC_NALGO };

/* The rate limiter lets a QP prepare its next packet (WQE, payload reads)
 * this long before the packet's time, as a NIC's scheduler runs ahead. */
#define QRNIC_CC_LOOKAHEAD_NS	2000

#define QRNIC_ECN_MASK	3
#define QRNIC_ECN_ECT0	2	/* ECN-capable transport (0): IP ECN bits 10 */
#define QRNIC_ECN_CE	3	/* congestion experienced: 11 */

/* Per-QP congestion control state (in struct qrnic_qp; all 0 at CREATE_QP
 * and when the QP's transport state is cleared: not rate limited). */
struct qrnic_cc_qp {
	/* notification point (this QP received CE-marked packets) */
	bool     np_sent;	/* a CNP was sent: np_last is valid */
	uint64_t np_last;	/* when (ns) */
	/* reaction point: the algorithm's state (DCQCN's names) */
	bool     active;	/* rate limited below the line rate */
	double   rc, rt;	/* current and target rate (Mb/s) */
	double   alpha;
	uint64_t alpha_t;	/* start of the current alpha period (ns) */
	uint64_t inc_t;		/* start of the current rate-increase timer period */
	uint32_t t_stage, b_stage;	/* timer and byte-counter rate-increase events since the last CNP */
	uint64_t bytes;		/* bytes sent towards the next byte-counter event */
	uint64_t last;		/* latest time seen: the state never goes back in time */
	uint64_t cnps;		/* CNPs handled by this QP */
	/* the rate limiter (timing profiles only) */
	uint64_t next_tx;	/* earliest modelled time the next request packet may start */
	/* qrnic_cc_pace()'s last gap: gap_ns for a frame of gap_bytes (with
	 * the port's overhead) at gap_rate; a cache (not saved): 0 = none */
	double   gap_rate;
	uint32_t gap_bytes;
	uint64_t gap_ns;
	uint32_t gen;		/* generation of the armed QRNIC_EVK_CC event */
	/* TIMELY (cc_timely.c): one RTT sample in flight at a time */
	bool     rtt_pending;	/* a request packet is timed: rtt_psn, rtt_sent valid */
	uint32_t rtt_psn;	/* its PSN: an ACK that moves una_psn past it completes it */
	uint64_t rtt_sent;	/* when it left the port (modelled ns) */
	double   rtt;		/* latest RTT sample (ns); 0: none yet */
	double   rtt_diff;	/* EWMA of the differences of successive samples (ns) */
	uint32_t hai;		/* samples in a row with a gradient <= 0 */
	uint64_t rtts;		/* RTT samples taken */
};

/* One congestion control algorithm (the reaction point).  'now' is ns of
 * the modelled time (the host clock under the functional profile). */
struct qrnic_cc_ops {
	const char *name;
	/* the QP's first CNP after being unlimited: set up the state */
	void (*init)(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now);
	void (*on_cnp)(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now);
	/* npkts request packets newly acknowledged */
	void (*on_ack)(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t npkts, uint64_t now);
	/* a request packet of 'bytes' (the frame) is sent */
	void (*on_tx)(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t bytes, uint64_t now);
	/* bring the timers up to 'now' (lazily: called before the rate is used) */
	void (*on_timer)(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now);
	/* the rate (Mb/s) to pace at; 0: not limited */
	double (*current_rate)(struct qrnic_dev *d, struct qrnic_qp *qp);
	/* optional (NULL: not used), timing profiles only: a request packet
	 * that asks for an ACK (AckReq) with this PSN left the port at 'now';
	 * on_ack is then called for every ACK, whether the QP is limited or not */
	void (*on_sent)(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t psn, uint64_t now);
	/* optional: the QP entered RTS (its first packets are still to come) */
	void (*on_start)(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t now);
};

extern const struct qrnic_cc_ops qrnic_cc_none_ops, qrnic_cc_dcqcn_ops, qrnic_cc_timely_ops;
/* The algorithm of a QP: its attribute cc_algo (MODIFY_QP with
 * QRNIC_QP_ATTR_CC; n: algorithm n - 1), or when 0 the device's. */
uint32_t qrnic_cc_algo_of(const struct qrnic_dev *d, const struct qrnic_qp *qp);
const struct qrnic_cc_ops *qrnic_cc_ops_of(const struct qrnic_dev *d, const struct qrnic_qp *qp);
/* MODIFY_QP changed the QP's algorithm: the reaction point starts over */
void qrnic_cc_qp_reset(struct qrnic_qp *qp);
/* SET_CC (firmware, spec 6.6.22): the run-time value v of congestion
 * control parameter p, already range-checked (qrnic_config_check_value).
 * Parameters take effect at each QP's next rate event; a new cc_algo
 * starts over the reaction point of every QP that follows the device's. */
void qrnic_cc_param_set(struct qrnic_dev *d, const struct qrnic_config_param *p, uint64_t v);
/* the QP entered RTS from RTR: its algorithm's on_start, if any */
void qrnic_cc_qp_start(struct qrnic_dev *d, struct qrnic_qp *qp);
const char *qrnic_cc_algo_name(uint32_t algo);
/* The line rate (Mb/s) the reaction point starts from and returns to. */
double qrnic_cc_line_rate(const struct qrnic_dev *d);

/* ---- hooks of the engines (cc.c) ----------------------------------------- */
/* rx.c: a received packet for qp (connected) carried CE: the notification point. */
void qrnic_cc_np_ce(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p);
/* rx.c: a CNP for qp: its reaction point. */
void qrnic_cc_rx_cnp(struct qrnic_dev *d, struct qrnic_qp *qp, const struct qrnic_pkt *p);
/* requester.c: pace a request packet of 'bytes' (frame) that may start at
 * *t (modelled ns): moves *t to the limiter's time and books the packet. */
void qrnic_cc_pace(struct qrnic_dev *d, struct qrnic_qp *qp, uint64_t *t, uint32_t bytes);
/* requester.c: whether the QP must wait for its rate limiter before its
 * next packet (timing profiles only); if so a QRNIC_EVK_CC event is armed
 * that services the QP again when it may send. */
bool qrnic_cc_hold_slow(struct qrnic_dev *d, struct qrnic_qp *qp);
/* requester.c: a request packet with this PSN was sent (timing profiles). */
void qrnic_cc_sent(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t psn);
/* requester.c: npkts packets acknowledged. */
void qrnic_cc_ack(struct qrnic_dev *d, struct qrnic_qp *qp, uint32_t npkts);
/* events.c: the QRNIC_EVK_CC event of a QP. */
struct qrnic_event;
void qrnic_cc_event(struct qrnic_dev *d, const struct qrnic_event *ev);
bool qrnic_cc_event_stale(struct qrnic_dev *d, const struct qrnic_event *ev);

#endif
