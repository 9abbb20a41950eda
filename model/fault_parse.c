/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: the fault rule parser (rules and their meaning:
 * docs/faults.md; the engine that applies them: fault.c).
 *
 * The grammar:
 *
 *     plan  := line ('\n' line)*
 *     line  := rule (';' rule)* ['#' comment]
 *     rule  := blank | kind word*          words separated by blanks
 *     word  := key '=' value               (event: its type may come first
 *                                           without "type=")
 *
 * Kinds and keys are matched case-insensitively, '-' and '_' alike.  Two
 * tables drive it: qrnic_fault_kinds[] (each kind's name, class, allowed
 * and required keys, default count) and key_names[] (the keys); the value
 * of each key is checked by parse_value(), and a rule's kind-specific
 * constraints by the end of parse_rule().
 *
 * A hand-written parser, not GLib's GScanner: the model is plain C11 with
 * no dependency but the C library (the simulator, the harness, the fuzzers
 * and the unit tests build it without GLib; only QEMU's glue has GLib), and
 * the grammar is a list of words, which needs no tokenizer.
 */
#include <stdio.h>
#include <stdlib.h>

#include "qrnic_fault_rule.h"

/* ---- rules ----------------------------------------------------------------- */
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

static const struct kind_desc *const kinds = qrnic_fault_kinds;

const struct kind_desc qrnic_fault_kinds[FK_COUNT] = {
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

/* ---- small helpers ---------------------------------------------------------- */
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

int qrnic_fault_parse_rule(const char *text, struct frule *r, char *err, size_t errlen)
{
	struct perr e = { err, errlen };

	return parse_rule(text, r, &e);
}

int qrnic_fault_parse_plan(const char *text, struct frule *out, int max, char *err,
			   size_t errlen)
{
	struct perr e = { err, errlen };

	return plan_walk(text, out, max, &e);
}
