/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: fault injection (interface: qrnic_fault.h, rule
 * grammar and semantics: docs/faults.md).
 *
 * The device keeps d->fault == NULL until the first rule is added, so a
 * device without faults pays one pointer test per hook.  The hooks:
 *
 *   qrnic_fault_tx / qrnic_fault_rx   qrnic_tx, qrnic_dev_rx_frame (device.c)
 *   qrnic_fault_dma                   qrnic_dma_read / qrnic_dma_write (device.c)
 *   qrnic_fault_cqe                   qrnic_cq_post (cq.c)
 *   qrnic_fault_eqe                   qrnic_eq_post (cq.c)
 *   qrnic_fault_admin                 qrnic_fw_exec (firmware/admin.c)
 *   qrnic_fault_admin_hang            qrnic_fw_admin_run (firmware/admin.c)
 *   qrnic_fault_event                 qrnic_dev_timer_fire, QRNIC_EVK_FAULT events
 *   qrnic_fault_reset / _free         qrnic_dev_reset / qrnic_dev_free
 *
 * Frames that the wire faults send on (duplicates, corrupted copies, frames
 * released by delay/reorder) re-enter qrnic_tx / qrnic_dev_rx_frame with
 * fs->bypass set, so they are not shown to the rules a second time.
 */
#include <stdio.h>
#include <stdlib.h>

#include "qrnic_internal.h"
#include "qrnic_fault.h"

/* ---- rules ----------------------------------------------------------------- */
enum fkind {
	FK_DROP, FK_DUP, FK_REORDER, FK_CORRUPT, FK_DELAY, FK_NAK,	/* wire */
	FK_LINK_DOWN, FK_LINK_UP, FK_QP_ERROR, FK_FATAL, FK_EVENT,	/* timed, once */
	FK_DMA_FAIL, FK_CQE_ERROR, FK_CQ_OVERRUN, FK_EQ_OVERFLOW,	/* device */
	FK_ADMIN_FAIL, FK_ADMIN_TIMEOUT,
	FK_COUNT
};

enum fkey {
	KY_DIR, KY_QP, KY_OP, KY_PSN, KY_NTH, KY_SKIP, KY_COUNT, KY_PROB, KY_SEED,
	KY_AT, KY_AFTER, KY_FOR, KY_COPIES, KY_HOLD, KY_RELEASE, KY_TIMEOUT, KY_PART,
	KY_OFF, KY_XOR, KY_NS, KY_JITTER, KY_TYPE, KY_TIMER, KY_RANGE, KY_CQ, KY_EQ,
	KY_STATUS, KY_WC, KY_QPSTATE, KY_EVENT, KY_CODE, KY_HANDLE, KY_DATA,
	KY_NKEYS
};

static const char *const key_names[KY_NKEYS] = {
	"dir", "qp", "op", "psn", "nth", "skip", "count", "prob", "seed",
	"at", "after", "for", "copies", "hold", "release", "timeout", "part",
	"off", "xor", "ns", "jitter", "type", "timer", "range", "cq", "eq",
	"status", "wc", "qp-state", "event", "code", "handle", "data",
};

#define B(k)	(1ull << (k))
#define K_CNT	(B(KY_NTH) | B(KY_SKIP) | B(KY_COUNT) | B(KY_PROB) | B(KY_SEED))
#define K_WHEN	(B(KY_AT) | B(KY_AFTER) | B(KY_FOR))
#define K_ONCE	(B(KY_AT) | B(KY_AFTER))
#define K_WIRE	(B(KY_DIR) | B(KY_QP) | B(KY_OP) | B(KY_PSN) | K_CNT | K_WHEN)
#define UNLIMITED	UINT64_MAX

enum fclass { FC_WIRE, FC_ONCE, FC_DMA, FC_CQE, FC_EQE, FC_ADMIN, FC_HANG };

static const struct kind_desc {
	const char *name;
	uint8_t cls;
	uint64_t keys;		/* allowed */
	uint64_t need;		/* required */
	uint64_t count;		/* default count (0: one-shot) */
} kinds[FK_COUNT] = {
	[FK_DROP]	= { "drop", FC_WIRE, K_WIRE, 0, UNLIMITED },
	[FK_DUP]	= { "dup", FC_WIRE, K_WIRE | B(KY_COPIES), 0, UNLIMITED },
	[FK_REORDER]	= { "reorder", FC_WIRE, K_WIRE | B(KY_HOLD) | B(KY_RELEASE) | B(KY_TIMEOUT),
			    0, UNLIMITED },
	[FK_CORRUPT]	= { "corrupt", FC_WIRE, K_WIRE | B(KY_PART) | B(KY_OFF) | B(KY_XOR), 0,
			    UNLIMITED },
	[FK_DELAY]	= { "delay", FC_WIRE, K_WIRE | B(KY_NS) | B(KY_JITTER), B(KY_NS), UNLIMITED },
	[FK_NAK]	= { "nak", FC_WIRE, (K_WIRE & ~B(KY_OP)) | B(KY_TYPE) | B(KY_TIMER), B(KY_TYPE),
			    UNLIMITED },
	[FK_LINK_DOWN]	= { "link-down", FC_ONCE, K_ONCE | B(KY_FOR), 0, 0 },
	[FK_LINK_UP]	= { "link-up", FC_ONCE, K_ONCE, 0, 0 },
	[FK_QP_ERROR]	= { "qp-error", FC_ONCE, K_ONCE | B(KY_QP) | B(KY_EVENT), B(KY_QP), 0 },
	[FK_FATAL]	= { "fatal", FC_ONCE, K_ONCE | B(KY_CODE), 0, 0 },
	[FK_EVENT]	= { "event", FC_ONCE, K_ONCE | B(KY_TYPE) | B(KY_QP) | B(KY_CQ) | B(KY_HANDLE) |
			    B(KY_DATA), B(KY_TYPE), 0 },
	[FK_DMA_FAIL]	= { "dma-fail", FC_DMA, B(KY_DIR) | B(KY_RANGE) | K_CNT | K_WHEN, 0, UNLIMITED },
	[FK_CQE_ERROR]	= { "cqe-error", FC_CQE, B(KY_CQ) | B(KY_QP) | B(KY_WC) | B(KY_STATUS) |
			    B(KY_QPSTATE) | K_CNT | K_WHEN, 0, 1 },
	[FK_CQ_OVERRUN]	= { "cq-overrun", FC_CQE, B(KY_CQ) | K_CNT | K_WHEN, B(KY_CQ), 1 },
	[FK_EQ_OVERFLOW] = { "eq-overflow", FC_EQE, B(KY_EQ) | K_CNT | K_WHEN, B(KY_EQ), 1 },
	[FK_ADMIN_FAIL]	= { "admin-fail", FC_ADMIN, B(KY_OP) | B(KY_STATUS) | K_CNT | K_WHEN, 0, 1 },
	[FK_ADMIN_TIMEOUT] = { "admin-timeout", FC_HANG, B(KY_OP) | K_CNT | K_WHEN, 0, 1 },
};

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

/* ---- state -------------------------------------------------------------- */
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

#define SCRATCH_LEN	(QRNIC_RX_FRAME_MAX > QRNIC_MAX_FRAME ? QRNIC_RX_FRAME_MAX : QRNIC_MAX_FRAME)

/* ---- small helpers ---------------------------------------------------------- */
static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive, '-' and '_' alike. */
static bool name_eq(const char *a, const char *b)
{
	for (;; a++, b++) {
		char x = *a == '_' ? '-' : lower(*a), y = *b == '_' ? '-' : lower(*b);

		if (x != y)
			return false;
		if (!x)
			return true;
	}
}

static bool name_eq_pfx(const char *s, const char *name, const char *pfx)
{
	size_t n = strlen(pfx);

	if (name_eq(s, name))
		return true;
	for (size_t i = 0; i < n; i++)
		if (!s[i] || lower(s[i]) != lower(pfx[i]))
			return false;
	return name_eq(s + n, name);
}

static void info(struct qrnic_dev *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void info(struct qrnic_dev *d, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	if (!d->ops->log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	d->ops->log(d->opaque, QRNIC_LOG_INFO, buf);
}

static void count_fault(struct qrnic_dev *d)
{
	d->fault->injected++;
	qrnic_stat_add(d, QRNIC_STAT_FAULTS_INJECTED, 1);
}

static struct frule *rule_by_id(struct qrnic_fault_state *fs, int id)
{
	for (int i = 0; i < fs->nrules; i++)
		if (fs->rules[i].id == id)
			return &fs->rules[i];
	return NULL;
}

static bool active(const struct frule *r, uint64_t now)
{
	return now >= r->start && now < r->end;
}

/* The filters passed: count the match, then skip / nth / count / prob. */
static bool fire(struct frule *r)
{
	uint64_t e;

	r->matched++;
	if (r->fired >= r->count)
		return false;
	if (r->matched <= r->skip)
		return false;
	e = r->matched - r->skip;
	if (r->nth > 1 && e % r->nth)
		return false;
	if (r->ppm < 1000000 && splitmix(&r->rng) % 1000000 >= r->ppm)
		return false;
	r->fired++;
	if (r->fired >= r->count)
		r->done = true;
	return true;
}

/* ---- parsing ----------------------------------------------------------------- */
struct perr {
	char *buf;
	size_t len;
};

static int perr(struct perr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct perr *e, const char *fmt, ...)
{
	va_list ap;

	if (e->buf && e->len) {
		va_start(ap, fmt);
		vsnprintf(e->buf, e->len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	unsigned base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned dg;

		if (*s >= '0' && *s <= '9')
			dg = (unsigned)(*s - '0');
		else if (base == 16 && lower(*s) >= 'a' && lower(*s) <= 'f')
			dg = (unsigned)(lower(*s) - 'a' + 10);
		else
			return false;
		if (v > (UINT64_MAX - dg) / base)
			return false;
		v = v * base + dg;
	}
	*out = v;
	return true;
}

/* "12", "1.5": value times 10^6 in *out; the rest of the string in *rest. */
static bool parse_fixed6(const char *s, uint64_t *out, const char **rest)
{
	uint64_t ip = 0, fp = 0, scale = 1000000;
	bool digits = false;

	for (; *s >= '0' && *s <= '9'; s++) {
		if (ip > 1000000000000ull)
			return false;
		ip = ip * 10 + (uint64_t)(*s - '0');
		digits = true;
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++) {
			if (scale > 1) {
				scale /= 10;
				fp += (uint64_t)(*s - '0') * scale;
			}
			digits = true;
		}
	}
	if (!digits)
		return false;
	*out = ip * 1000000 + fp;
	*rest = s;
	return true;
}

/* Duration or time: a number with an optional unit ns (default), us, ms, s. */
static bool parse_dur(const char *s, uint64_t *ns)
{
	static const struct { const char *u; uint64_t mul; } units[] = {
		{ "", 1 }, { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	};
	const char *rest;
	uint64_t v;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return parse_u64(s, ns);
	if (!parse_fixed6(s, &v, &rest))
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (name_eq(rest, units[i].u)) {
			uint64_t ip = v / 1000000, fp = v % 1000000;

			if (ip > UINT64_MAX / 2 / units[i].mul)
				return false;
			*ns = ip * units[i].mul + fp * units[i].mul / 1000000;
			return true;
		}
	}
	return false;
}

/* Probability: 0.05, 5%, 50000ppm -> ppm. */
static bool parse_prob(const char *s, uint64_t *ppm)
{
	const char *rest;
	uint64_t v;

	if (!parse_fixed6(s, &v, &rest))
		return false;
	if (!*rest)
		*ppm = v;
	else if (!strcmp(rest, "%"))
		*ppm = v / 100;
	else if (name_eq(rest, "ppm") && v % 1000000 == 0)
		*ppm = v / 1000000;
	else
		return false;
	return *ppm <= 1000000;
}

/* "A-B" (inclusive bounds for psn, [A, B) for addresses) or "A+LEN" or "A" */
static bool parse_span(const char *s, uint64_t *lo, uint64_t *hi, bool *plus, bool *single)
{
	char a[64];
	const char *sep = strpbrk(s, "-+");
	size_t n;

	*plus = *single = false;
	if (!sep) {
		*single = true;
		if (!parse_u64(s, lo))
			return false;
		*hi = *lo;
		return true;
	}
	n = (size_t)(sep - s);
	if (n == 0 || n >= sizeof(a))
		return false;
	memcpy(a, s, n);
	a[n] = 0;
	*plus = *sep == '+';
	return parse_u64(a, lo) && parse_u64(sep + 1, hi);
}

static const char *const wc_names[] = {
	"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
	"WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR",
	"REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR",
	"REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR",
	"RESP_TIMEOUT_ERR", "GENERAL_ERR",
};

static const char *const aq_names[] = {
	"OK", "BAD_OPCODE", "BAD_PARAM", "BAD_HANDLE", "NO_RESOURCES", "BAD_STATE", "BUSY",
	"DMA_ERROR", "BAD_ATTR_MASK", "NOT_SUPPORTED", "INJECTED",
};

static const char *const cmd_names[QRNIC_CMD_MAX + 1] = {
	[QRNIC_CMD_QUERY_DEVICE] = "QUERY_DEVICE", [QRNIC_CMD_QUERY_PORT] = "QUERY_PORT",
	[QRNIC_CMD_SET_GID] = "SET_GID", [QRNIC_CMD_QUERY_GID] = "QUERY_GID",
	[QRNIC_CMD_ALLOC_UCTX] = "ALLOC_UCTX", [QRNIC_CMD_DEALLOC_UCTX] = "DEALLOC_UCTX",
	[QRNIC_CMD_CREATE_PD] = "CREATE_PD", [QRNIC_CMD_DESTROY_PD] = "DESTROY_PD",
	[QRNIC_CMD_CREATE_CQ] = "CREATE_CQ", [QRNIC_CMD_DESTROY_CQ] = "DESTROY_CQ",
	[QRNIC_CMD_CREATE_QP] = "CREATE_QP", [QRNIC_CMD_MODIFY_QP] = "MODIFY_QP",
	[QRNIC_CMD_QUERY_QP] = "QUERY_QP", [QRNIC_CMD_DESTROY_QP] = "DESTROY_QP",
	[QRNIC_CMD_REG_MR] = "REG_MR", [QRNIC_CMD_DEREG_MR] = "DEREG_MR",
	[QRNIC_CMD_QUERY_MR] = "QUERY_MR", [QRNIC_CMD_CREATE_AH] = "CREATE_AH",
	[QRNIC_CMD_DESTROY_AH] = "DESTROY_AH", [QRNIC_CMD_CREATE_EQ] = "CREATE_EQ",
	[QRNIC_CMD_DESTROY_EQ] = "DESTROY_EQ", [QRNIC_CMD_QUERY_STATS] = "QUERY_STATS",
};

static const struct { const char *name; uint8_t ev; } ev_names[] = {
	{ "port-down", QRNIC_EV_PORT_ERR }, { "port-err", QRNIC_EV_PORT_ERR },
	{ "port-up", QRNIC_EV_PORT_ACTIVE }, { "port-active", QRNIC_EV_PORT_ACTIVE },
	{ "qp-fatal", QRNIC_EV_QP_FATAL }, { "qp-req-err", QRNIC_EV_QP_REQ_ERR },
	{ "qp-access-err", QRNIC_EV_QP_ACCESS_ERR }, { "comm-est", QRNIC_EV_COMM_EST },
	{ "sq-drained", QRNIC_EV_SQ_DRAINED }, { "last-wqe-reached", QRNIC_EV_QP_LAST_WQE_REACHED },
	{ "cq-err", QRNIC_EV_CQ_ERR }, { "device-fatal", QRNIC_EV_DEVICE_FATAL },
};

static int lookup(const char *s, const char *const *names, size_t n, const char *pfx)
{
	uint64_t v;

	for (size_t i = 0; i < n; i++)
		if (names[i] && name_eq_pfx(s, names[i], pfx))
			return (int)i;
	if (parse_u64(s, &v) && v < n)
		return (int)v;
	return -1;
}

static void opmask_set(struct frule *r, unsigned op)
{
	r->opmask[op >> 3] |= (uint8_t)(1u << (op & 7));
}

static bool opmask_has(const struct frule *r, unsigned op)
{
	return r->opmask[op >> 3] & (1u << (op & 7));
}

/* One element of op=: a class, an opcode name or number. */
static bool parse_op_elem(struct frule *r, const char *s)
{
	static const struct { const char *name; uint32_t flags; uint8_t ack; } cls[] = {
		{ "send", QRNIC_HDR_SEND, 0 }, { "write", QRNIC_HDR_WRITE, 0 },
		{ "read-req", 0, 0 }, { "read-resp", 0, 0 }, { "atomic", 0, 0 },
		{ "atomic-ack", 0, 0 }, { "ack", 0, AK_ACK }, { "nak", 0, AK_RNR | AK_SEQ | AK_NAK },
		{ "rnr-nak", 0, AK_RNR }, { "seq-nak", 0, AK_SEQ },
		{ "request", QRNIC_HDR_REQUEST, 0 }, { "response", QRNIC_HDR_RESPONSE, AK_ALL },
		{ "any", ~0u, AK_ALL },
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(cls) / sizeof(cls[0]); i++) {
		if (!name_eq(s, cls[i].name))
			continue;
		for (unsigned op = 0; op < 256; op++) {
			uint32_t fl = qrnic_opcode_flags((uint8_t)op);

			if (fl && (fl & cls[i].flags) && op != QRNIC_OP_RC_ACK)
				opmask_set(r, op);
		}
		if (name_eq(s, "read-req"))
			opmask_set(r, QRNIC_OP_RC_READ_REQ);
		if (name_eq(s, "read-resp"))
			for (unsigned op = QRNIC_OP_RC_READ_RESP_FIRST; op <= QRNIC_OP_RC_READ_RESP_ONLY; op++)
				opmask_set(r, op);
		if (name_eq(s, "atomic")) {
			opmask_set(r, QRNIC_OP_RC_CMP_SWAP);
			opmask_set(r, QRNIC_OP_RC_FETCH_ADD);
		}
		if (name_eq(s, "atomic-ack"))
			opmask_set(r, QRNIC_OP_RC_ATOMIC_ACK);
		if (cls[i].ack) {
			opmask_set(r, QRNIC_OP_RC_ACK);
			r->ack_mask |= cls[i].ack;
		}
		return true;
	}
	for (unsigned op = 0; op < 256; op++) {
		if (qrnic_opcode_flags((uint8_t)op) && name_eq(s, qrnic_opcode_name((uint8_t)op))) {
			opmask_set(r, op);
			if (op == QRNIC_OP_RC_ACK)
				r->ack_mask = AK_ALL;
			return true;
		}
	}
	if (parse_u64(s, &v) && v < 256) {
		opmask_set(r, (unsigned)v);
		if (v == QRNIC_OP_RC_ACK)
			r->ack_mask = AK_ALL;
		return true;
	}
	return false;
}

static int parse_value(struct frule *r, enum fkey k, const char *v, struct perr *e)
{
	const struct kind_desc *kd = &kinds[r->kind];
	const char *kn = kd->name;
	uint64_t x, y;
	bool plus, single;
	int i;

#define BAD(expect) perr(e, "%s: bad value '%s' for %s (expected %s)", kn, v, key_names[k], expect)
	switch (k) {
	case KY_DIR:
		if (kd->cls == FC_DMA) {
			if (name_eq(v, "read"))
				r->dir = DIR_TX;
			else if (name_eq(v, "write"))
				r->dir = DIR_RX;
			else if (name_eq(v, "any"))
				r->dir = DIR_TX | DIR_RX;
			else
				return BAD("read, write or any");
		} else {
			if (name_eq(v, "tx"))
				r->dir = DIR_TX;
			else if (name_eq(v, "rx"))
				r->dir = DIR_RX;
			else if (name_eq(v, "any"))
				r->dir = DIR_TX | DIR_RX;
			else
				return BAD("tx, rx or any");
		}
		return 0;
	case KY_QP:
		if (!parse_u64(v, &x) || x > QRNIC_PSN_MASK)
			return BAD("a QP number 0..0xffffff");
		r->qp = (int64_t)x;
		return 0;
	case KY_CQ:
		if (!parse_u64(v, &x) || x > 0xffffffu)
			return BAD("a CQ number");
		r->cq = (int64_t)x;
		return 0;
	case KY_EQ:
		if (name_eq(v, "async"))
			r->eq = -2;
		else if (name_eq(v, "any"))
			r->eq = -1;
		else if (parse_u64(v, &x) && x <= 0xffff)
			r->eq = (int64_t)x;
		else
			return BAD("an EQ number, async or any");
		return 0;
	case KY_OP:
		if (kd->cls == FC_ADMIN || kd->cls == FC_HANG) {
			if (name_eq(v, "any")) {
				r->admin_op = -1;
				return 0;
			}
			i = lookup(v, cmd_names, QRNIC_CMD_MAX + 1, "CMD_");
			if (i <= 0 || !cmd_names[i])
				return BAD("an admin command name (CREATE_QP, ...), number or any");
			r->admin_op = i;
			return 0;
		}
		{
			char buf[128];
			char *tok, *save = NULL;

			if (strlen(v) >= sizeof(buf))
				return BAD("op classes or opcodes");
			strcpy(buf, v);
			memset(r->opmask, 0, sizeof(r->opmask));
			r->ack_mask = 0;
			for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
				if (!parse_op_elem(r, tok))
					return perr(e, "%s: unknown op '%s' (classes: send, write, read-req, "
						    "read-resp, atomic, atomic-ack, ack, nak, rnr-nak, seq-nak, "
						    "request, response, any; or an opcode name like "
						    "RC_READ_RESP_LAST, or a number)", kn, tok);
			r->op_set = true;
		}
		return 0;
	case KY_PSN:
		if (!parse_span(v, &x, &y, &plus, &single) || plus || x > QRNIC_PSN_MASK ||
		    y > QRNIC_PSN_MASK)
			return BAD("a PSN or an inclusive range A-B of 24-bit PSNs");
		r->psn_set = true;
		r->psn_lo = (uint32_t)x;
		r->psn_hi = (uint32_t)y;
		return 0;
	case KY_NTH:
		if (!parse_u64(v, &x) || x < 1)
			return BAD("an integer >= 1");
		r->nth = x;
		return 0;
	case KY_SKIP:
		if (!parse_u64(v, &x))
			return BAD("an integer >= 0");
		r->skip = x;
		return 0;
	case KY_COUNT:
		if (name_eq(v, "inf") || name_eq(v, "unlimited"))
			x = UNLIMITED;
		else if (!parse_u64(v, &x) || x < 1)
			return BAD("an integer >= 1 or inf");
		r->count = x;
		return 0;
	case KY_PROB:
		if (!parse_prob(v, &r->ppm))
			return BAD("a probability: 0..1, N% or Nppm");
		return 0;
	case KY_SEED:
		if (!parse_u64(v, &r->seed))
			return BAD("an unsigned 64-bit integer");
		r->seed_set = true;
		return 0;
	case KY_AT:
		if (!parse_dur(v, &r->at))
			return BAD("a time in ns, or with a unit: 10us, 5ms, 1.5s");
		r->at_set = true;
		return 0;
	case KY_AFTER:
		if (!parse_dur(v, &r->after))
			return BAD("a duration: 500 (ns), 10us, 5ms, 1.5s");
		r->after_set = true;
		return 0;
	case KY_FOR:
		if (!parse_dur(v, &r->dur) || r->dur == 0)
			return BAD("a duration > 0: 500 (ns), 10us, 200ms, 1s");
		r->for_set = true;
		return 0;
	case KY_COPIES:
		if (!parse_u64(v, &x) || x < 1 || x > 16)
			return BAD("1..16");
		r->copies = (uint32_t)x;
		return 0;
	case KY_HOLD:
		if (!parse_u64(v, &x) || x < 1 || x > 64)
			return BAD("1..64");
		r->hold = (uint32_t)x;
		return 0;
	case KY_RELEASE:
		if (!parse_u64(v, &x) || x < 1 || x > 4096)
			return BAD("1..4096");
		r->release = (uint32_t)x;
		return 0;
	case KY_TIMEOUT:
		if (!parse_dur(v, &r->timeout) || r->timeout == 0 || r->timeout > 60000000000ull)
			return BAD("a duration 1ns..60s");
		return 0;
	case KY_NS:
		if (!parse_dur(v, &r->delay_ns) || r->delay_ns > 60000000000ull)
			return BAD("a duration 0..60s: 200000, 200us, 2ms");
		return 0;
	case KY_JITTER:
		if (!parse_dur(v, &r->jitter) || r->jitter > 60000000000ull)
			return BAD("a duration 0..60s");
		return 0;
	case KY_PART:
		if (name_eq(v, "payload"))
			r->part = PART_PAYLOAD;
		else if (name_eq(v, "header"))
			r->part = PART_HEADER;
		else if (name_eq(v, "icrc"))
			r->part = PART_ICRC;
		else
			return BAD("payload, header or icrc");
		return 0;
	case KY_OFF:
		if (!parse_u64(v, &x) || x > 65535)
			return BAD("a byte offset 0..65535 in the part");
		r->off = (int64_t)x;
		return 0;
	case KY_XOR:
		if (!parse_u64(v, &x) || x < 1 || x > 255)
			return BAD("a byte mask 1..0xff");
		r->xor_mask = (int)x;
		return 0;
	case KY_TYPE:
		if (r->kind == FK_NAK) {
			static const struct { const char *n; uint8_t syn; } t[] = {
				{ "rnr", 0x20 }, { "seq", 0x60 }, { "inv-req", 0x61 },
				{ "rem-access", 0x62 }, { "rem-op", 0x63 },
			};
			for (size_t j = 0; j < sizeof(t) / sizeof(t[0]); j++) {
				if (name_eq(v, t[j].n)) {
					r->nak_syn = t[j].syn;
					return 0;
				}
			}
			return BAD("rnr, seq, inv-req, rem-access or rem-op");
		}
		for (size_t j = 0; j < sizeof(ev_names) / sizeof(ev_names[0]); j++) {
			if (name_eq(v, ev_names[j].name)) {
				r->ev_type = ev_names[j].ev;
				return 0;
			}
		}
		return BAD("port-down, port-up, qp-fatal, qp-req-err, qp-access-err, comm-est, "
			   "sq-drained, last-wqe-reached, cq-err or device-fatal");
	case KY_TIMER:
		if (!parse_u64(v, &x) || x > 31)
			return BAD("an RNR timer code 0..31");
		r->rnr_timer = (uint8_t)x;
		return 0;
	case KY_RANGE:
		if (!parse_span(v, &x, &y, &plus, &single) || single)
			return BAD("A-B (bus addresses, B excluded) or A+LEN");
		if (plus) {
			if (y == 0 || x + y < x)
				return BAD("A+LEN with LEN > 0");
			y += x;
		}
		if (y <= x)
			return BAD("A-B with A < B");
		r->range_set = true;
		r->range_lo = x;
		r->range_hi = y;
		return 0;
	case KY_STATUS:
		if (kd->cls == FC_ADMIN) {
			i = lookup(v, aq_names, sizeof(aq_names) / sizeof(aq_names[0]), "AQ_");
			if (i <= 0)
				return BAD("an admin status other than OK: BAD_PARAM, NO_RESOURCES, "
					   "BUSY, DMA_ERROR, INJECTED, ... or 1..10");
		} else {
			i = lookup(v, wc_names, sizeof(wc_names) / sizeof(wc_names[0]), "WC_");
			if (i <= 0)
				return BAD("a completion status other than SUCCESS: REM_ACCESS_ERR, "
					   "GENERAL_ERR, ... or 1..21");
		}
		r->status = (uint8_t)i;
		return 0;
	case KY_WC:
		if (name_eq(v, "send"))
			r->wc = 1;
		else if (name_eq(v, "recv"))
			r->wc = 2;
		else if (name_eq(v, "any"))
			r->wc = 0;
		else
			return BAD("send, recv or any");
		return 0;
	case KY_QPSTATE:
		if (name_eq(v, "err"))
			r->keep_state = false;
		else if (name_eq(v, "keep"))
			r->keep_state = true;
		else
			return BAD("err or keep");
		return 0;
	case KY_EVENT:
		if (name_eq(v, "none")) {
			r->ev_type = 0xff;
			return 0;
		}
		if (name_eq(v, "qp-fatal"))
			r->ev_type = QRNIC_EV_QP_FATAL;
		else if (name_eq(v, "qp-req-err"))
			r->ev_type = QRNIC_EV_QP_REQ_ERR;
		else if (name_eq(v, "qp-access-err"))
			r->ev_type = QRNIC_EV_QP_ACCESS_ERR;
		else
			return BAD("qp-fatal, qp-req-err, qp-access-err or none");
		return 0;
	case KY_CODE:
		if (!parse_u64(v, &x) || x < 1 || x > UINT32_MAX)
			return BAD("a fatal code >= 1");
		r->code = (uint32_t)x;
		return 0;
	case KY_HANDLE:
		if (!parse_u64(v, &x) || x > UINT32_MAX)
			return BAD("a 32-bit handle");
		r->handle = (uint32_t)x;
		r->handle_set = true;
		return 0;
	case KY_DATA:
		if (!parse_u64(v, &x) || x > UINT32_MAX)
			return BAD("a 32-bit value");
		r->data = (uint32_t)x;
		return 0;
	default:
		return perr(e, "%s: internal error: key %d", kn, (int)k);
	}
#undef BAD
}

static void rule_defaults(struct frule *r, enum fkind k)
{
	memset(r, 0, sizeof(*r));
	r->kind = (uint8_t)k;
	r->end = UINT64_MAX;
	r->nth = 1;
	r->count = kinds[k].count ? kinds[k].count : 1;
	r->ppm = 1000000;
	r->dir = DIR_TX | DIR_RX;
	r->qp = r->cq = r->eq = -1;
	r->admin_op = -1;
	r->copies = 1;
	r->hold = 1;
	r->release = 1;
	r->timeout = 100000;		/* 100 us */
	r->part = PART_PAYLOAD;
	r->off = -1;
	r->xor_mask = -1;
	r->nak_syn = 0x20;		/* RNR NAK */
	r->rnr_timer = 1;		/* 10 us */
	r->status = k == FK_ADMIN_FAIL ? QRNIC_AQ_INJECTED : QRNIC_WC_GENERAL_ERR;
	r->ev_type = k == FK_QP_ERROR ? QRNIC_EV_QP_FATAL : 0;
	r->code = QRNIC_FATAL_INJECTED;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Parse one rule (no newline, no ';', no comment).  Returns 0, 1 if the
 * text is blank, or -1 with the message in e. */
static int parse_rule(const char *text, struct frule *r, struct perr *e)
{
	char buf[1024];
	char *tok[64];
	int ntok = 0, k;
	uint64_t seen = 0;
	size_t tl = 0;
	char *p;

	if (strlen(text) >= sizeof(buf))
		return perr(e, "rule longer than %zu characters", sizeof(buf) - 1);
	strcpy(buf, text);
	for (p = buf; *p;) {
		while (is_space(*p))
			p++;
		if (!*p)
			break;
		if (ntok == 64)
			return perr(e, "too many words in one rule");
		tok[ntok++] = p;
		while (*p && !is_space(*p))
			p++;
		if (*p)
			*p++ = 0;
	}
	if (ntok == 0)
		return 1;
	for (k = 0; k < FK_COUNT; k++)
		if (name_eq(tok[0], kinds[k].name))
			break;
	if (k == FK_COUNT)
		return perr(e, "unknown fault '%s' (one of: drop, dup, reorder, corrupt, delay, nak, "
			    "link-down, link-up, dma-fail, cqe-error, qp-error, cq-overrun, "
			    "eq-overflow, admin-fail, admin-timeout, fatal, event)", tok[0]);
	rule_defaults(r, (enum fkind)k);
	/* the text kept: the words joined by single spaces */
	for (int i = 0; i < ntok; i++) {
		int w = snprintf(r->text + tl, sizeof(r->text) - tl, "%s%s", i ? " " : "", tok[i]);

		tl = w < 0 ? tl : tl + (size_t)w;
		if (tl >= sizeof(r->text) - 1)
			break;
	}
	for (int i = 1; i < ntok; i++) {
		char *eq = strchr(tok[i], '=');
		int key;

		if (!eq) {
			/* "event port-down": the one positional word */
			if (k == FK_EVENT && i == 1) {
				if (parse_value(r, KY_TYPE, tok[i], e))
					return -1;
				seen |= B(KY_TYPE);
				continue;
			}
			return perr(e, "%s: expected key=value, got '%s'", kinds[k].name, tok[i]);
		}
		*eq = 0;
		for (key = 0; key < KY_NKEYS; key++)
			if (name_eq(tok[i], key_names[key]))
				break;
		if (key == KY_NKEYS || !(kinds[k].keys & B(key))) {
			char allowed[400];
			size_t n = 0;

			allowed[0] = 0;
			for (int j = 0; j < KY_NKEYS; j++)
				if (kinds[k].keys & B(j))
					n += (size_t)snprintf(allowed + n, n < sizeof(allowed) ?
							      sizeof(allowed) - n : 0, "%s%s",
							      n ? ", " : "", key_names[j]);
			return perr(e, "%s: %s key '%s' (keys: %s)", kinds[k].name,
				    key == KY_NKEYS ? "unknown" : "no", tok[i], allowed);
		}
		if (seen & B(key))
			return perr(e, "%s: %s= given twice", kinds[k].name, key_names[key]);
		seen |= B(key);
		if (!eq[1])
			return perr(e, "%s: empty value for %s", kinds[k].name, key_names[key]);
		if (parse_value(r, (enum fkey)key, eq + 1, e))
			return -1;
	}
	for (int j = 0; j < KY_NKEYS; j++)
		if ((kinds[k].need & B(j)) && !(seen & B(j)))
			return perr(e, "%s: %s= is required", kinds[k].name, key_names[j]);
	if ((seen & B(KY_AT)) && (seen & B(KY_AFTER)))
		return perr(e, "%s: give at= or after=, not both", kinds[k].name);
	if (k == FK_EVENT) {
		bool qp_ev = r->ev_type == QRNIC_EV_QP_FATAL || r->ev_type == QRNIC_EV_QP_REQ_ERR ||
			     r->ev_type == QRNIC_EV_QP_ACCESS_ERR || r->ev_type == QRNIC_EV_COMM_EST ||
			     r->ev_type == QRNIC_EV_SQ_DRAINED ||
			     r->ev_type == QRNIC_EV_QP_LAST_WQE_REACHED;
		int nh = !!(seen & B(KY_QP)) + !!(seen & B(KY_CQ)) + !!(seen & B(KY_HANDLE));

		if (nh > 1)
			return perr(e, "event: give one of qp=, cq=, handle=");
		if (seen & B(KY_QP))
			r->handle = (uint32_t)r->qp;
		else if (seen & B(KY_CQ))
			r->handle = (uint32_t)r->cq;
		else if (!(seen & B(KY_HANDLE))) {
			if (qp_ev)
				return perr(e, "event: this event needs qp=");
			if (r->ev_type == QRNIC_EV_CQ_ERR)
				return perr(e, "event: cq-err needs cq=");
			r->handle = (r->ev_type == QRNIC_EV_PORT_ACTIVE ||
				     r->ev_type == QRNIC_EV_PORT_ERR) ? 1 : 0;
		}
		if (r->ev_type == QRNIC_EV_DEVICE_FATAL && !(seen & B(KY_DATA)))
			r->data = QRNIC_FATAL_INJECTED;
	}
	if (k == FK_NAK && (seen & B(KY_TIMER)) && r->nak_syn != 0x20)
		return perr(e, "nak: timer= goes with type=rnr");
	if (k == FK_CORRUPT && r->part == PART_ICRC && r->off >= QRNIC_ICRC_LEN)
		return perr(e, "corrupt: off= must be 0..3 for part=icrc");
	return 0;
}

/* Split a plan into rules; call fn for each.  Returns the rule count or -1. */
static int plan_walk(const char *text, struct frule *out, int max, struct perr *e)
{
	int line = 1, n = 0;
	const char *p = text ? text : "";

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char lbuf[1024];
		char *c, *seg, *save = NULL;

		if (len >= sizeof(lbuf))
			return perr(e, "line %d: longer than %zu characters", line, sizeof(lbuf) - 1);
		memcpy(lbuf, p, len);
		lbuf[len] = 0;
		c = strchr(lbuf, '#');
		if (c)
			*c = 0;
		for (seg = strtok_r(lbuf, ";", &save); seg; seg = strtok_r(NULL, ";", &save)) {
			struct frule tmp;
			char msg[400];
			struct perr le = { msg, sizeof(msg) };
			int rc = parse_rule(seg, &tmp, &le);

			if (rc < 0)
				return perr(e, "line %d: %s", line, msg);
			if (rc > 0)
				continue;
			if (n >= max)
				return perr(e, "line %d: more than %d rules", line, max);
			if (out)
				out[n] = tmp;
			n++;
		}
		if (!eol)
			break;
		p = eol + 1;
		line++;
	}
	return n;
}

/* ---- state management ----------------------------------------------------------- */
static struct qrnic_fault_state *state(struct qrnic_dev *d)
{
	struct qrnic_fault_state *fs = d->fault;

	if (fs)
		return fs;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return NULL;
	fs->rules = calloc(QRNIC_FAULT_MAX_RULES, sizeof(*fs->rules));
	fs->scratch = malloc(SCRATCH_LEN);
	if (!fs->rules || !fs->scratch) {
		free(fs->rules);
		free(fs->scratch);
		free(fs);
		return NULL;
	}
	d->fault = fs;
	return fs;
}

static void recount(struct qrnic_fault_state *fs)
{
	memset(fs->ncls, 0, sizeof(fs->ncls));
	for (int i = 0; i < fs->nrules; i++)
		fs->ncls[kinds[fs->rules[i].kind].cls]++;
}

static void schedule(struct qrnic_dev *d, uint64_t when, uint32_t sub, uint32_t idx, uint32_t gen)
{
	uint64_t now = qrnic_now(d);

	qrnic_event_add(d, when < now ? now : when, QRNIC_EVK_FAULT,
			(sub << SUB_SHIFT) | (idx & SUB_MASK), gen);
}

/* Install a parsed rule: id, seed, window; queue a one-shot. */
static int install(struct qrnic_dev *d, struct frule *r)
{
	struct qrnic_fault_state *fs = d->fault;
	uint64_t now = qrnic_now(d);
	uint64_t base;

	r->id = fs->next_id++;
	if (!r->seed_set)
		r->seed = 0x5eed0000ull + (uint64_t)r->id;
	r->rng = r->seed;
	base = r->at_set ? r->at : now + (r->after_set ? r->after : 0);
	r->start = (r->at_set || r->after_set) ? base : 0;
	if (r->for_set && r->kind != FK_LINK_DOWN)
		r->end = base + r->dur < base ? UINT64_MAX : base + r->dur;
	fs->rules[fs->nrules++] = *r;
	if (kinds[r->kind].cls == FC_ONCE)
		schedule(d, base, SUB_RULE, (uint32_t)r->id, 0);
	return r->id;
}

static void errcpy(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

int qrnic_fault_add(struct qrnic_dev *d, const char *rule, char *err, size_t errlen)
{
	struct qrnic_fault_state *fs;
	struct frule r;
	char msg[400];
	struct perr e = { msg, sizeof(msg) };
	int rc;

	if (!rule || strpbrk(rule, "\n;")) {
		errcpy(err, errlen, "one rule expected (use qrnic_fault_load_plan for several)");
		return -1;
	}
	{
		/* a trailing comment is fine */
		char tmp[1024];
		const char *h = strchr(rule, '#');

		if (strlen(rule) >= sizeof(tmp)) {
			errcpy(err, errlen, "rule too long");
			return -1;
		}
		strcpy(tmp, rule);
		if (h)
			tmp[h - rule] = 0;
		rc = parse_rule(tmp, &r, &e);
	}
	if (rc) {
		errcpy(err, errlen, rc > 0 ? "empty rule" : msg);
		return -1;
	}
	fs = state(d);
	if (!fs) {
		errcpy(err, errlen, "out of memory");
		return -1;
	}
	if (fs->nrules >= QRNIC_FAULT_MAX_RULES) {
		snprintf(err, errlen, "too many rules (at most %d)", QRNIC_FAULT_MAX_RULES);
		return -1;
	}
	rc = install(d, &r);
	recount(fs);
	return rc;
}

int qrnic_fault_check_plan(const char *text, char *err, size_t errlen)
{
	struct perr e = { err, errlen };

	return plan_walk(text, NULL, QRNIC_FAULT_MAX_RULES, &e);
}

int qrnic_fault_load_plan(struct qrnic_dev *d, const char *text, char *err, size_t errlen)
{
	struct qrnic_fault_state *fs;
	struct frule *tmp;
	struct perr e = { err, errlen };
	int n;

	n = plan_walk(text, NULL, QRNIC_FAULT_MAX_RULES, &e);
	if (n <= 0)
		return n;
	fs = state(d);
	tmp = calloc((size_t)n, sizeof(*tmp));
	if (!fs || !tmp) {
		free(tmp);
		errcpy(err, errlen, "out of memory");
		return -1;
	}
	if (fs->nrules + n > QRNIC_FAULT_MAX_RULES) {
		free(tmp);
		snprintf(err, errlen, "plan has %d rules, %d are loaded: at most %d", n, fs->nrules,
			 QRNIC_FAULT_MAX_RULES);
		return -1;
	}
	plan_walk(text, tmp, n, &e);
	for (int i = 0; i < n; i++)
		install(d, &tmp[i]);
	recount(fs);
	free(tmp);
	return n;
}

int qrnic_fault_del(struct qrnic_dev *d, int id)
{
	struct qrnic_fault_state *fs = d->fault;
	struct frule *r = fs ? rule_by_id(fs, id) : NULL;
	int i;

	if (!r)
		return -1;
	i = (int)(r - fs->rules);
	memmove(&fs->rules[i], &fs->rules[i + 1], (size_t)(fs->nrules - i - 1) * sizeof(*r));
	fs->nrules--;
	recount(fs);
	return 0;
}

void qrnic_fault_clear(struct qrnic_dev *d)
{
	if (!d->fault)
		return;
	d->fault->nrules = 0;
	recount(d->fault);
}

int qrnic_fault_info(struct qrnic_dev *d, int id, struct qrnic_fault_info *out)
{
	struct frule *r = d->fault ? rule_by_id(d->fault, id) : NULL;

	if (!r)
		return -1;
	memset(out, 0, sizeof(*out));
	out->id = r->id;
	out->done = r->done;
	out->matched = r->matched;
	out->fired = r->fired;
	memcpy(out->text, r->text, sizeof(out->text));
	return 0;
}

int qrnic_fault_ids(struct qrnic_dev *d, int *ids, int max)
{
	struct qrnic_fault_state *fs = d->fault;

	if (!fs)
		return 0;
	for (int i = 0; i < fs->nrules && i < max; i++)
		ids[i] = fs->rules[i].id;
	return fs->nrules;
}

size_t qrnic_fault_list(struct qrnic_dev *d, char *buf, size_t len)
{
	struct qrnic_fault_state *fs = d->fault;
	size_t n = 0;

	if (buf && len)
		buf[0] = 0;
	for (int i = 0; fs && i < fs->nrules; i++) {
		const struct frule *r = &fs->rules[i];
		int w = snprintf(buf ? buf + (n < len ? n : len) : NULL, n < len ? len - n : 0,
				 "%d matched=%llu fired=%llu%s %s\n", r->id,
				 (unsigned long long)r->matched, (unsigned long long)r->fired,
				 r->done ? " done" : "", r->text);

		if (w > 0)
			n += (size_t)w;
	}
	return n;
}

void qrnic_fault_totals(struct qrnic_dev *d, struct qrnic_fault_totals *out)
{
	struct qrnic_fault_state *fs = d->fault;

	memset(out, 0, sizeof(*out));
	if (!fs)
		return;
	out->injected = fs->injected;
	out->held = fs->nheld;
	out->held_overflow = fs->held_overflow;
	out->held_flushed = fs->held_flushed;
	out->aq_hung = fs->aq_hung;
}

/* ---- frames ------------------------------------------------------------------------ */
struct finfo {
	bool roce, ipv6;
	uint8_t opcode, syn, ackcat;
	uint32_t dqpn, psn;
	uint32_t l3, l4, bth, pay, pay_end, end;	/* offsets; end = after the ICRC */
	bool hdr_ok;				/* BTH + extension headers fit */
};

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void frame_parse(const uint8_t *f, size_t len, struct finfo *fi)
{
	uint32_t l3 = QRNIC_ETH_HLEN, l4, end, hl, pad;
	uint16_t et;

	memset(fi, 0, sizeof(*fi));
	if (len < QRNIC_ETH_HLEN || len > SCRATCH_LEN)
		return;
	et = be16(f + 12);
	if (et == 0x0800) {
		uint32_t ihl, tot;

		if (len < l3 + QRNIC_IPV4_HLEN || f[l3 + 9] != 17)
			return;
		ihl = (f[l3] & 0xfu) * 4u;
		tot = be16(f + l3 + 2);
		if (ihl < QRNIC_IPV4_HLEN)
			return;
		l4 = l3 + ihl;
		end = (l3 + tot <= len && tot >= ihl) ? l3 + tot : (uint32_t)len;
	} else if (et == 0x86dd) {
		if (len < l3 + QRNIC_IPV6_HLEN || f[l3 + 6] != 17)
			return;
		l4 = l3 + QRNIC_IPV6_HLEN;
		end = l4 + be16(f + l3 + 4) <= len ? l4 + be16(f + l3 + 4) : (uint32_t)len;
		fi->ipv6 = true;
	} else {
		return;
	}
	if (end < l4 + QRNIC_UDP_HLEN + QRNIC_BTH_LEN + QRNIC_ICRC_LEN ||
	    be16(f + l4 + 2) != QRNIC_ROCEV2_UDP_PORT)
		return;
	fi->roce = true;
	fi->l3 = l3;
	fi->l4 = l4;
	fi->end = end;
	fi->bth = l4 + QRNIC_UDP_HLEN;
	fi->opcode = f[fi->bth];
	fi->dqpn = (uint32_t)f[fi->bth + 5] << 16 | (uint32_t)f[fi->bth + 6] << 8 | f[fi->bth + 7];
	fi->psn = (uint32_t)f[fi->bth + 9] << 16 | (uint32_t)f[fi->bth + 10] << 8 | f[fi->bth + 11];
	hl = qrnic_opcode_hdr_len(fi->opcode);
	fi->pay = fi->pay_end = fi->bth + QRNIC_BTH_LEN;
	if (hl && fi->bth + hl + QRNIC_ICRC_LEN <= end) {
		fi->hdr_ok = true;
		fi->pay = fi->bth + hl;
		pad = (f[fi->bth + 1] >> 4) & 3;
		fi->pay_end = end - QRNIC_ICRC_LEN >= fi->pay + pad ? end - QRNIC_ICRC_LEN - pad
								     : fi->pay;
		if (qrnic_opcode_flags(fi->opcode) & QRNIC_HDR_AETH) {
			fi->syn = f[fi->bth + QRNIC_BTH_LEN];
			switch (fi->syn >> 5) {
			case 0: fi->ackcat = AK_ACK; break;
			case 1: fi->ackcat = AK_RNR; break;
			case 3: fi->ackcat = (fi->syn & 0x1f) ? AK_NAK : AK_SEQ; break;
			default: fi->ackcat = AK_NAK; break;
			}
		}
	}
}

static bool psn_in(const struct frule *r, uint32_t psn)
{
	return qrnic_psn_diff(psn, r->psn_lo) >= 0 && qrnic_psn_diff(r->psn_hi, psn) >= 0;
}

static bool wire_match(const struct frule *r, const struct finfo *fi)
{
	if (!fi->roce)
		return false;
	if (r->qp >= 0 && fi->dqpn != (uint32_t)r->qp)
		return false;
	if (r->psn_set && !psn_in(r, fi->psn))
		return false;
	if (r->op_set) {
		if (!opmask_has(r, fi->opcode))
			return false;
		if (fi->opcode == QRNIC_OP_RC_ACK && !(r->ack_mask & fi->ackcat))
			return false;
	}
	switch (r->kind) {
	case FK_CORRUPT:
		if (r->part == PART_PAYLOAD)
			return fi->hdr_ok && fi->pay_end > fi->pay &&
			       (r->off < 0 || (uint64_t)r->off < fi->pay_end - fi->pay);
		if (r->part == PART_HEADER)
			return fi->hdr_ok &&
			       (r->off < 0 || (uint64_t)r->off < fi->pay - fi->bth - 1);
		return true;
	case FK_NAK:
		return fi->hdr_ok && fi->opcode == QRNIC_OP_RC_ACK && fi->ackcat == AK_ACK;
	default:
		return true;
	}
}

/* Send a frame on, past the rules. */
static void forward(struct qrnic_dev *d, int dir, const uint8_t *f, size_t len)
{
	d->fault->bypass++;
	if (dir == DIR_TX)
		qrnic_tx(d, f, len);
	else
		qrnic_dev_rx_frame(d, f, len);
	d->fault->bypass--;
}

static void held_free(struct qrnic_fault_state *fs, struct fheld *h)
{
	if (h->why == HELD_REORDER && h->countdown >= 0)
		fs->nreorder[h->dir]--;
	free(h->data);
	h->data = NULL;
	h->why = 0;
	h->gen++;
	fs->nheld--;
}

static struct fheld *held_add(struct qrnic_dev *d, int dir, uint8_t why, const uint8_t *f,
			      size_t len)
{
	struct qrnic_fault_state *fs = d->fault;
	struct fheld *h = NULL;

	if (fs->nheld < QRNIC_FAULT_MAX_HELD)
		for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD; i++)
			if (!fs->held[i].why) {
				h = &fs->held[i];
				break;
			}
	if (h)
		h->data = malloc(len ? len : 1);
	if (!h || !h->data) {
		fs->held_overflow++;
		return NULL;
	}
	memcpy(h->data, f, len);
	h->len = (uint32_t)len;
	h->why = why;
	h->dir = (uint8_t)dir;
	h->seq = fs->held_seq++;
	h->countdown = -1;
	h->tag = 0;
	fs->nheld++;
	return h;
}

/* Send on, in capture order, the held frames 'pick' selects, then free them. */
static void release_where(struct qrnic_dev *d, bool (*pick)(const struct fheld *, uint32_t),
			  uint32_t arg)
{
	struct qrnic_fault_state *fs = d->fault;
	uint32_t n = 0;

	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD && n < fs->nheld; i++) {
		if (fs->held[i].why && pick(&fs->held[i], arg)) {
			uint32_t j = n++;

			while (j > 0 && fs->held[fs->order[j - 1]].seq > fs->held[i].seq) {
				fs->order[j] = fs->order[j - 1];
				j--;
			}
			fs->order[j] = (uint16_t)i;
		}
	}
	for (uint32_t k = 0; k < n; k++) {
		struct fheld *h = &fs->held[fs->order[k]];
		uint8_t *data = h->data;
		uint32_t len = h->len;
		int dir = h->dir;

		h->data = NULL;		/* forward may re-enter: take the frame out first */
		held_free(fs, h);
		forward(d, dir, data, len);
		free(data);
	}
}

static bool pick_tag(const struct fheld *h, uint32_t tag)
{
	return h->why == HELD_REORDER && h->tag == tag;
}

static bool pick_zero(const struct fheld *h, uint32_t dir)
{
	return h->why == HELD_REORDER && h->dir == dir && h->countdown == 0;
}

/* A frame went through direction dir: count down the reorder bursts. */
static void tick(struct qrnic_dev *d, int dir)
{
	struct qrnic_fault_state *fs = d->fault;
	bool any = false;

	if (!fs->nreorder[dir])
		return;
	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD; i++) {
		struct fheld *h = &fs->held[i];

		if (h->why == HELD_REORDER && h->dir == dir && h->countdown > 0 && --h->countdown == 0)
			any = true;
	}
	if (any)
		release_where(d, pick_zero, (uint32_t)dir);
}

static void burst_close(struct qrnic_dev *d, struct frule *r)
{
	struct qrnic_fault_state *fs = d->fault;

	r->burst_left = 0;
	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD; i++) {
		struct fheld *h = &fs->held[i];

		if (h->why == HELD_REORDER && h->tag == r->burst_tag && h->countdown < 0) {
			h->countdown = (int32_t)r->release;
			fs->nreorder[h->dir]++;
		}
	}
}

static void capture(struct qrnic_dev *d, struct frule *r, int dir, const uint8_t *f, size_t len)
{
	struct fheld *h = held_add(d, dir, HELD_REORDER, f, len);

	if (!h) {
		/* no room: the frame is lost */
		if (r->burst_left)
			r->burst_left--;
		return;
	}
	h->tag = r->burst_tag;
	schedule(d, qrnic_now(d) + r->timeout, SUB_FRAME, (uint32_t)(h - d->fault->held), h->gen);
	if (r->burst_left)
		r->burst_left--;
	if (!r->burst_left)
		burst_close(d, r);
}

static void flip(struct frule *r, uint8_t *f, const struct finfo *fi)
{
	uint32_t lo, n, at;
	uint8_t mask;

	switch (r->part) {
	case PART_HEADER:
		lo = fi->bth;
		n = fi->pay - fi->bth - 1;	/* without BTH byte 4: the ICRC masks it */
		break;
	case PART_ICRC:
		lo = fi->end - QRNIC_ICRC_LEN;
		n = QRNIC_ICRC_LEN;
		break;
	default:
		lo = fi->pay;
		n = fi->pay_end - fi->pay;
		break;
	}
	at = r->off >= 0 ? (uint32_t)r->off : (uint32_t)(splitmix(&r->rng) % n);
	if (r->xor_mask >= 0)
		mask = (uint8_t)r->xor_mask;
	else if (r->off >= 0)
		mask = 0xff;
	else
		mask = (uint8_t)(1u << (splitmix(&r->rng) % 8));
	if (r->part == PART_HEADER && at >= 4)
		at++;
	f[lo + at] ^= mask;
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A forged NAK: new AETH syndrome, then the ICRC (and the IPv6 UDP checksum). */
static void forge_nak(struct frule *r, uint8_t *f, const struct finfo *fi)
{
	uint32_t icrc;

	f[fi->bth + QRNIC_BTH_LEN] = r->nak_syn == 0x20 ? (uint8_t)(0x20 | r->rnr_timer) : r->nak_syn;
	icrc = qrnic_icrc(f, fi->end);
	f[fi->end - 4] = (uint8_t)icrc;
	f[fi->end - 3] = (uint8_t)(icrc >> 8);
	f[fi->end - 2] = (uint8_t)(icrc >> 16);
	f[fi->end - 1] = (uint8_t)(icrc >> 24);
	if (fi->ipv6 && be16(f + fi->l4 + 6)) {
		uint32_t sum = 0, ulen = fi->end - fi->l4;

		put_be16(f + fi->l4 + 6, 0);
		for (uint32_t i = 0; i < 32; i += 2)
			sum += be16(f + fi->l3 + 8 + i);
		sum += ulen + 17;
		for (uint32_t i = 0; i + 1 < ulen; i += 2)
			sum += be16(f + fi->l4 + i);
		if (ulen & 1)
			sum += (uint32_t)f[fi->l4 + ulen - 1] << 8;
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		sum = ~sum & 0xffff;
		put_be16(f + fi->l4 + 6, (uint16_t)(sum ? sum : 0xffff));
	}
}

static void apply(struct qrnic_dev *d, struct frule *r, int dir, const uint8_t *f, size_t len,
		  const struct finfo *fi)
{
	struct qrnic_fault_state *fs = d->fault;
	struct fheld *h;

	count_fault(d);
	switch (r->kind) {
	case FK_DROP:
		return;
	case FK_DUP:
		forward(d, dir, f, len);
		for (uint32_t i = 0; i < r->copies; i++)
			forward(d, dir, f, len);
		tick(d, dir);
		return;
	case FK_CORRUPT:
	case FK_NAK:
		memcpy(fs->scratch, f, len);
		if (r->kind == FK_CORRUPT)
			flip(r, fs->scratch, fi);
		else
			forge_nak(r, fs->scratch, fi);
		forward(d, dir, fs->scratch, len);
		tick(d, dir);
		return;
	case FK_DELAY: {
		uint64_t t = r->delay_ns + (r->jitter ? splitmix(&r->rng) % (r->jitter + 1) : 0);

		h = held_add(d, dir, HELD_DELAY, f, len);
		if (h)
			schedule(d, qrnic_now(d) + t, SUB_FRAME, (uint32_t)(h - fs->held), h->gen);
		return;
	}
	case FK_REORDER:
		r->burst_tag = ++fs->next_tag;
		r->burst_left = r->hold;
		r->burst_dir = (uint8_t)dir;
		capture(d, r, dir, f, len);
		return;
	default:
		return;
	}
}

static bool wire(struct qrnic_dev *d, int dir, const uint8_t *f, size_t len)
{
	struct qrnic_fault_state *fs = d->fault;
	struct finfo fi;
	uint64_t now;

	if (fs->bypass || (!fs->ncls[FC_WIRE] && !fs->nreorder[dir]))
		return false;
	frame_parse(f, len, &fi);
	now = qrnic_now(d);
	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		if (kinds[r->kind].cls != FC_WIRE || !(r->dir & dir))
			continue;
		if (r->kind == FK_REORDER && r->burst_left) {
			/* a burst is being captured: take the next matching frames */
			if (r->burst_dir != dir || !wire_match(r, &fi))
				continue;
			r->matched++;
			capture(d, r, dir, f, len);
			return true;
		}
		if (!active(r, now) || !wire_match(r, &fi) || !fire(r))
			continue;
		apply(d, r, dir, f, len, &fi);
		return true;
	}
	if (!fs->nreorder[dir])
		return false;
	forward(d, dir, f, len);
	tick(d, dir);
	return true;
}

bool qrnic_fault_tx(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	return wire(d, DIR_TX, frame, len);
}

bool qrnic_fault_rx(struct qrnic_dev *d, const uint8_t *frame, size_t len)
{
	return wire(d, DIR_RX, frame, len);
}

/* ---- device faults -------------------------------------------------------------------- */
bool qrnic_fault_dma(struct qrnic_dev *d, bool write, uint64_t addr, size_t len)
{
	struct qrnic_fault_state *fs = d->fault;
	uint64_t now;

	if (!fs->ncls[FC_DMA])
		return false;
	now = qrnic_now(d);
	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		if (r->kind != FK_DMA_FAIL || !(r->dir & (write ? DIR_RX : DIR_TX)))
			continue;
		if (r->range_set && !(addr < r->range_hi && r->range_lo < addr + len))
			continue;
		if (!active(r, now) || !fire(r))
			continue;
		count_fault(d);
		info(d, "qrnic: fault rule %d: DMA %s of %zu bytes at 0x%llx fails", r->id,
			    write ? "write" : "read", len, (unsigned long long)addr);
		return true;
	}
	return false;
}

/* Move a QP to ERR as a real completion error would; the flush (and the
 * flush CQEs) follow from the event heap, after the caller is done. */
static void qp_to_err(struct qrnic_dev *d, uint32_t qpn)
{
	struct qrnic_qp *qp = qrnic_qp_get(d, qpn);
	uint8_t old;

	if (!qp || qp->attr.qp_state == QRNIC_QPS_ERR || qp->attr.qp_state == QRNIC_QPS_RESET)
		return;
	old = qp->attr.qp_state;
	qp->attr.qp_state = QRNIC_QPS_ERR;
	qrnic_trace(d, QRNIC_TR_QP_STATE, qpn, 0, old, QRNIC_QPS_ERR, 0);
	schedule(d, 0, SUB_FLUSH, qpn, 0);
}

bool qrnic_fault_cqe(struct qrnic_dev *d, struct qrnic_cq *cq, struct qrnic_cqe *cqe)
{
	struct qrnic_fault_state *fs = d->fault;
	uint32_t cqn = (uint32_t)(cq - d->cq);
	uint64_t now;

	if (!fs->ncls[FC_CQE])
		return false;
	now = qrnic_now(d);
	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		if (kinds[r->kind].cls != FC_CQE || (r->cq >= 0 && (uint32_t)r->cq != cqn))
			continue;
		if (r->kind == FK_CQE_ERROR) {
			bool send = cqe->flags & QRNIC_CQE_F_SEND;

			if (cqe->status != QRNIC_WC_SUCCESS ||
			    (r->qp >= 0 && cqe->qpn != (uint32_t)r->qp) ||
			    (r->wc == 1 && !send) || (r->wc == 2 && send))
				continue;
		}
		if (!active(r, now) || !fire(r))
			continue;
		count_fault(d);
		if (r->kind == FK_CQ_OVERRUN) {
			info(d, "qrnic: fault rule %d: CQ %u overrun", r->id, cqn);
			return true;
		}
		info(d, "qrnic: fault rule %d: CQE of QP %u on CQ %u gets status %u", r->id,
			    cqe->qpn, cqn, r->status);
		cqe->status = r->status;
		cqe->vendor_err = QRNIC_VERR_INJECTED;
		if (!r->keep_state)
			qp_to_err(d, cqe->qpn);
		return false;
	}
	return false;
}

bool qrnic_fault_eqe(struct qrnic_dev *d, struct qrnic_eq *eq)
{
	struct qrnic_fault_state *fs = d->fault;
	uint32_t eqn = (uint32_t)(eq - d->eq);
	uint64_t now;

	if (!fs->ncls[FC_EQE])
		return false;
	now = qrnic_now(d);
	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		if (r->kind != FK_EQ_OVERFLOW)
			continue;
		if (r->eq == -2 ? !eq->async : (r->eq >= 0 && (uint32_t)r->eq != eqn))
			continue;
		if (!active(r, now) || !fire(r))
			continue;
		count_fault(d);
		return true;
	}
	return false;
}

static struct frule *admin_rule(struct qrnic_dev *d, int cls, uint8_t opcode)
{
	struct qrnic_fault_state *fs = d->fault;
	uint64_t now = qrnic_now(d);

	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		if ((int)kinds[r->kind].cls != cls || (r->admin_op >= 0 && r->admin_op != opcode))
			continue;
		if (active(r, now) && fire(r)) {
			count_fault(d);
			return r;
		}
	}
	return NULL;
}

uint8_t qrnic_fault_admin(struct qrnic_dev *d, uint8_t opcode)
{
	struct frule *r;

	if (!d->fault->ncls[FC_ADMIN])
		return QRNIC_AQ_OK;
	r = admin_rule(d, FC_ADMIN, opcode);
	if (!r)
		return QRNIC_AQ_OK;
	info(d, "qrnic: fault rule %d: admin command 0x%02x fails with status %u", r->id,
		    opcode, r->status);
	return r->status;
}

bool qrnic_fault_admin_hang(struct qrnic_dev *d, uint8_t opcode)
{
	struct qrnic_fault_state *fs = d->fault;
	struct frule *r;

	if (fs->aq_hung)
		return true;
	if (!fs->ncls[FC_HANG])
		return false;
	r = admin_rule(d, FC_HANG, opcode);
	if (!r)
		return false;
	info(d, "qrnic: fault rule %d: admin queue hangs at command 0x%02x until reset",
		    r->id, opcode);
	fs->aq_hung = true;
	return true;
}

/* ---- timed faults ------------------------------------------------------------------------- */
static void run_once(struct qrnic_dev *d, struct frule *r)
{
	struct qrnic_fault_state *fs = d->fault;
	struct qrnic_qp *qp;

	r->matched++;
	r->done = true;
	switch (r->kind) {
	case FK_LINK_DOWN:
		info(d, "qrnic: fault rule %d: link down", r->id);
		qrnic_dev_set_link(d, false);
		if (r->for_set) {
			fs->link_restore = true;
			fs->link_up_at = qrnic_now(d) + r->dur;
			schedule(d, fs->link_up_at, SUB_LINK, 0, ++fs->link_gen);
		}
		break;
	case FK_LINK_UP:
		fs->link_restore = false;
		fs->link_gen++;
		qrnic_dev_set_link(d, true);
		break;
	case FK_QP_ERROR:
		qp = qrnic_qp_get(d, (uint32_t)r->qp);
		if (!qp) {
			info(d, "qrnic: fault rule %d: no QP %lld", r->id, (long long)r->qp);
			return;
		}
		info(d, "qrnic: fault rule %d: QP %u to error", r->id, qp->qpn);
		qrnic_qp_error(d, qp, r->ev_type);
		break;
	case FK_FATAL:
		qrnic_fatal(d, r->code);
		break;
	case FK_EVENT:
		info(d, "qrnic: fault rule %d: async event %u handle %u", r->id, r->ev_type,
			    r->handle);
		qrnic_async_event(d, r->ev_type, r->handle, r->data);
		break;
	default:
		return;
	}
	r->fired++;
	count_fault(d);
}

void qrnic_fault_event(struct qrnic_dev *d, const struct qrnic_event *ev)
{
	struct qrnic_fault_state *fs = d->fault;
	uint32_t sub = ev->id >> SUB_SHIFT, idx = ev->id & SUB_MASK;
	struct fheld *h;
	struct frule *r;
	struct qrnic_qp *qp;

	if (!fs)
		return;
	switch (sub) {
	case SUB_FRAME:
		if (idx >= QRNIC_FAULT_MAX_HELD)
			return;
		h = &fs->held[idx];
		if (!h->why || h->gen != ev->gen)
			return;		/* released already */
		if (h->why == HELD_REORDER) {
			/* timeout: the whole burst goes, in order */
			uint32_t tag = h->tag;

			for (int i = 0; i < fs->nrules; i++)
				if (fs->rules[i].kind == FK_REORDER && fs->rules[i].burst_left &&
				    fs->rules[i].burst_tag == tag)
					fs->rules[i].burst_left = 0;
			release_where(d, pick_tag, tag);
		} else {
			uint8_t *data = h->data;
			uint32_t len = h->len;
			int dir = h->dir;

			h->data = NULL;
			held_free(fs, h);
			forward(d, dir, data, len);
			free(data);
		}
		return;
	case SUB_RULE:
		r = rule_by_id(fs, (int)idx);
		if (r && !r->done)
			run_once(d, r);
		return;
	case SUB_LINK:
		if (fs->link_restore && ev->gen == fs->link_gen) {
			fs->link_restore = false;
			qrnic_dev_set_link(d, true);
		}
		return;
	case SUB_FLUSH:
		qp = qrnic_qp_get(d, idx);
		if (qp && qp->attr.qp_state == QRNIC_QPS_ERR)
			qrnic_qp_flush(d, qp);
		return;
	default:
		return;
	}
}

void qrnic_fault_reset(struct qrnic_dev *d)
{
	struct qrnic_fault_state *fs = d->fault;

	if (!fs)
		return;
	/* The reset emptied the event heap: frames held inside the device are
	 * gone, timed rules and a pending link-up are queued again. */
	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD; i++) {
		if (fs->held[i].why) {
			held_free(fs, &fs->held[i]);
			fs->held_flushed++;
		}
	}
	memset(fs->nreorder, 0, sizeof(fs->nreorder));
	fs->aq_hung = false;
	for (int i = 0; i < fs->nrules; i++) {
		struct frule *r = &fs->rules[i];

		r->burst_left = 0;
		if (kinds[r->kind].cls == FC_ONCE && !r->done)
			schedule(d, r->start, SUB_RULE, (uint32_t)r->id, 0);
	}
	if (fs->link_restore)
		schedule(d, fs->link_up_at, SUB_LINK, 0, fs->link_gen);
}

void qrnic_fault_free(struct qrnic_dev *d)
{
	struct qrnic_fault_state *fs = d->fault;

	if (!fs)
		return;
	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD; i++)
		free(fs->held[i].data);
	free(fs->rules);
	free(fs->scratch);
	free(fs);
	d->fault = NULL;
}
