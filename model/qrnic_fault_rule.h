/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: fault rules and a device's fault state, shared by
 * the rule parser (fault_parse.c), the rule set (fault_rules.c) and the
 * engine (fault.c), and its snapshot (fault_snap.c).  Private to those;
 * hosts use qrnic_fault.h.
 */
#ifndef QRNIC_FAULT_RULE_H
#define QRNIC_FAULT_RULE_H

#include "qrnic_internal.h"
#include "qrnic_fault.h"

enum fkind {
	FK_DROP, FK_DUP, FK_REORDER, FK_CORRUPT, FK_DELAY, FK_NAK,	/* wire */
	FK_LINK_DOWN, FK_LINK_UP, FK_QP_ERROR, FK_FATAL, FK_EVENT,	/* timed, once */
	FK_DMA_FAIL, FK_CQE_ERROR, FK_CQ_OVERRUN, FK_EQ_OVERFLOW,	/* device */
	FK_ADMIN_FAIL, FK_ADMIN_TIMEOUT,
	FK_COUNT
};

enum fclass { FC_WIRE, FC_ONCE, FC_DMA, FC_CQE, FC_EQE, FC_ADMIN, FC_HANG };

/* What a fault kind is: its name, its class (where the engine applies it)
 * and, for the parser, its keys and default count.  Indexed by FK_*. */
struct kind_desc {
	const char *name;
	uint8_t cls;
	uint64_t keys;		/* allowed (bit KY_* of fault_parse.c) */
	uint64_t need;		/* required */
	uint64_t count;		/* default count (0: one-shot) */
};
extern const struct kind_desc qrnic_fault_kinds[FK_COUNT];	/* fault_parse.c */

/* ack_mask bits for opcode RC_ACK (0x11), by AETH syndrome */
#define AK_ACK		1u
#define AK_RNR		2u
#define AK_SEQ		4u
#define AK_NAK		8u	/* other NAKs */
#define AK_ALL		15u

enum { PART_PAYLOAD, PART_HEADER, PART_ICRC };
enum { DIR_TX = 1, DIR_RX = 2 };	/* dma-fail: DIR_TX = read, DIR_RX = write */

struct frule {
	int id;
	uint8_t kind;
	bool done;
	char text[QRNIC_FAULT_TEXT_MAX];
	/* when */
	bool at_set, after_set, for_set;
	uint64_t at, after, dur;
	uint64_t start, end;		/* active window [start, end) */
	/* decision */
	uint64_t nth, skip, count, ppm, seed, rng;
	bool seed_set;
	uint64_t matched, fired;
	/* filters */
	uint8_t dir;
	int64_t qp, cq, eq;		/* -1 any; eq -2: the async EQ */
	bool op_set;
	uint8_t opmask[32];
	uint8_t ack_mask;
	int admin_op;			/* -1 any */
	bool psn_set;
	uint32_t psn_lo, psn_hi;
	bool range_set;
	uint64_t range_lo, range_hi;	/* [lo, hi) */
	uint8_t wc;			/* 0 any, 1 send, 2 recv */
	/* parameters */
	uint32_t copies, hold, release;
	uint64_t timeout, delay_ns, jitter;
	uint8_t part;
	int64_t off;			/* -1: random */
	int xor_mask;			/* -1: one random bit (or 0xff with off=) */
	uint8_t nak_syn;		/* AETH syndrome; RNR: | rnr_timer */
	uint8_t rnr_timer;
	uint8_t status;
	bool keep_state;
	uint8_t ev_type;		/* QRNIC_EV_*, qp-error: 0xff = none */
	bool handle_set;
	uint32_t handle, data, code;
	/* reorder: the burst being captured */
	uint32_t burst_left, burst_tag;
	uint8_t burst_dir;
};

static inline bool opmask_has(const struct frule *r, unsigned op)
{
	return r->opmask[op >> 3] & (1u << (op & 7));
}

/* ---- the fault state of a device (d->fault) ------------------------------ */
enum { HELD_DELAY = 1, HELD_REORDER };
enum { SUB_FRAME = 1, SUB_RULE, SUB_LINK, SUB_FLUSH };
#define SUB_SHIFT	24
#define SUB_MASK	((1u << SUB_SHIFT) - 1)

struct fheld {
	uint8_t why;		/* 0 free, HELD_* */
	uint8_t dir;
	uint32_t gen;
	uint32_t tag;		/* reorder burst */
	int32_t countdown;	/* reorder: frames still to pass, -1 while capturing */
	uint64_t seq;
	uint32_t len;
	uint8_t *data;
};

struct qrnic_fault_state {
	struct frule *rules;
	int nrules;
	int next_id;
	uint32_t ncls[FC_HANG + 1];	/* rules per class */
	struct fheld held[QRNIC_FAULT_MAX_HELD];
	uint32_t nheld;
	uint32_t nreorder[3];		/* reorder frames counting down, by dir */
	uint64_t held_seq;
	uint32_t next_tag;
	uint16_t order[QRNIC_FAULT_MAX_HELD];
	uint8_t *scratch;
	int bypass;
	bool aq_hung;
	bool link_restore;
	uint64_t link_up_at;
	uint32_t link_gen;
	uint64_t injected, held_overflow, held_flushed;
};

/* fault_rules.c: the device's fault state, created empty if it has none
 * (NULL: out of memory). */
struct qrnic_fault_state *qrnic_fault_state_get(struct qrnic_dev *d);

#define SCRATCH_LEN	(QRNIC_RX_FRAME_MAX > QRNIC_MAX_FRAME ? QRNIC_RX_FRAME_MAX : QRNIC_MAX_FRAME)

static inline struct frule *rule_by_id(struct qrnic_fault_state *fs, int id)
{
	for (int i = 0; i < fs->nrules; i++)
		if (fs->rules[i].id == id)
			return &fs->rules[i];
	return NULL;
}

/* Queue a fault event (QRNIC_EVK_FAULT) for 'when', or now if that is past. */
static inline void schedule(struct qrnic_dev *d, uint64_t when, uint32_t sub, uint32_t idx,
			    uint32_t gen)
{
	uint64_t now = qrnic_now(d);

	qrnic_event_add(d, when < now ? now : when, QRNIC_EVK_FAULT,
			(sub << SUB_SHIFT) | (idx & SUB_MASK), gen);
}

/* ---- fault_parse.c ---------------------------------------------------------- */
/* Parse one rule (no newline, no ';', no comment) into *r.  Returns 0, 1
 * if the text is blank, or -1 with the message in err. */
int qrnic_fault_parse_rule(const char *text, struct frule *r, char *err, size_t errlen);
/* Parse a plan (rules separated by newlines and ';', '#' comments) into
 * out[0..max) (out may be NULL: check only).  Returns the number of rules,
 * or -1 with "line N: ..." in err. */
int qrnic_fault_parse_plan(const char *text, struct frule *out, int max, char *err,
			   size_t errlen);

#endif
