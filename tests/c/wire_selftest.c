/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Self test of model/wire.c (RoCEv2 build / parse / ICRC).
 *
 *   wire_selftest roundtrip        build -> parse of every opcode with random
 *                                  fields, truncations, bit flips, targeted
 *                                  malformed frames, golden vectors.
 *                                  Prints "N passed, M failed"; exit 1 on failure.
 *   wire_selftest pcap OUT.pcap    one frame of every opcode over IPv4 and over
 *                                  IPv6, then a frame with a corrupted ICRC;
 *                                  one JSON line per frame on stdout.
 *
 * Build: cc -std=c11 -O2 -Wall -Imodel -Imodel/abi model/wire.c \
 *           model/pcap.c tests/c/wire_selftest.c -o wire_selftest
 * Run it under -fsanitize=address,undefined: truncated frames are handed to
 * the parser in buffers of exactly their length, so any over-read is caught.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qrnic_pcap.h"
#include "qrnic_wire.h"

static unsigned long n_pass, n_fail;

#define CHECK(cond, ...)							\
	do {									\
		if (cond) {							\
			n_pass++;						\
		} else {							\
			n_fail++;						\
			if (n_fail <= 50) {					\
				fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
				fprintf(stderr, __VA_ARGS__);			\
				fputc('\n', stderr);				\
			}							\
		}								\
	} while (0)

/* ---- deterministic PRNG (xorshift64*) ------------------------------------ */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd64(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}
static uint32_t rnd32(void) { return (uint32_t)(rnd64() >> 32); }
static uint32_t rndn(uint32_t n) { return (uint32_t)(rnd64() % n); }
static void rnd_bytes(uint8_t *b, size_t n)
{
	while (n--)
		*b++ = (uint8_t)rnd32();
}

static const uint8_t all_ops[] = {
	QRNIC_OP_RC_SEND_FIRST, QRNIC_OP_RC_SEND_MIDDLE, QRNIC_OP_RC_SEND_LAST,
	QRNIC_OP_RC_SEND_LAST_IMM, QRNIC_OP_RC_SEND_ONLY, QRNIC_OP_RC_SEND_ONLY_IMM,
	QRNIC_OP_RC_WRITE_FIRST, QRNIC_OP_RC_WRITE_MIDDLE, QRNIC_OP_RC_WRITE_LAST,
	QRNIC_OP_RC_WRITE_LAST_IMM, QRNIC_OP_RC_WRITE_ONLY, QRNIC_OP_RC_WRITE_ONLY_IMM,
	QRNIC_OP_RC_READ_REQ, QRNIC_OP_RC_READ_RESP_FIRST, QRNIC_OP_RC_READ_RESP_MIDDLE,
	QRNIC_OP_RC_READ_RESP_LAST, QRNIC_OP_RC_READ_RESP_ONLY, QRNIC_OP_RC_ACK,
	QRNIC_OP_RC_ATOMIC_ACK, QRNIC_OP_RC_CMP_SWAP, QRNIC_OP_RC_FETCH_ADD,
	QRNIC_OP_RC_SEND_LAST_INV, QRNIC_OP_RC_SEND_ONLY_INV,
	QRNIC_OP_UC_SEND_FIRST, QRNIC_OP_UC_SEND_MIDDLE, QRNIC_OP_UC_SEND_LAST,
	QRNIC_OP_UC_SEND_LAST_IMM, QRNIC_OP_UC_SEND_ONLY, QRNIC_OP_UC_SEND_ONLY_IMM,
	QRNIC_OP_UC_WRITE_FIRST, QRNIC_OP_UC_WRITE_MIDDLE, QRNIC_OP_UC_WRITE_LAST,
	QRNIC_OP_UC_WRITE_LAST_IMM, QRNIC_OP_UC_WRITE_ONLY, QRNIC_OP_UC_WRITE_ONLY_IMM,
	QRNIC_OP_UD_SEND_ONLY, QRNIC_OP_UD_SEND_ONLY_IMM, QRNIC_OP_CNP,
	QRNIC_OP_XRC | QRNIC_OP_RC_SEND_FIRST, QRNIC_OP_XRC | QRNIC_OP_RC_SEND_MIDDLE, QRNIC_OP_XRC | QRNIC_OP_RC_SEND_LAST,
	QRNIC_OP_XRC | QRNIC_OP_RC_SEND_LAST_IMM, QRNIC_OP_XRC | QRNIC_OP_RC_SEND_ONLY, QRNIC_OP_XRC | QRNIC_OP_RC_SEND_ONLY_IMM,
	QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_FIRST, QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_MIDDLE, QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_LAST,
	QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_LAST_IMM, QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_ONLY, QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_ONLY_IMM,
	QRNIC_OP_XRC | QRNIC_OP_RC_READ_REQ, QRNIC_OP_XRC | QRNIC_OP_RC_READ_RESP_FIRST, QRNIC_OP_XRC | QRNIC_OP_RC_READ_RESP_MIDDLE,
	QRNIC_OP_XRC | QRNIC_OP_RC_READ_RESP_LAST, QRNIC_OP_XRC | QRNIC_OP_RC_READ_RESP_ONLY, QRNIC_OP_XRC | QRNIC_OP_RC_ACK,
	QRNIC_OP_XRC | QRNIC_OP_RC_ATOMIC_ACK, QRNIC_OP_XRC | QRNIC_OP_RC_CMP_SWAP, QRNIC_OP_XRC | QRNIC_OP_RC_FETCH_ADD,
	QRNIC_OP_XRC | QRNIC_OP_RC_SEND_LAST_INV, QRNIC_OP_XRC | QRNIC_OP_RC_SEND_ONLY_INV,
};
#define N_OPS (sizeof(all_ops) / sizeof(all_ops[0]))

/* ---- reference CRC: bit at a time, no tables ------------------------------ */
static uint32_t ref_crc32_update(uint32_t reg, const uint8_t *b, size_t n)
{
	while (n--) {
		reg ^= *b++;
		for (int k = 0; k < 8; k++)
			reg = (reg & 1) ? (reg >> 1) ^ 0xedb88320u : reg >> 1;
	}
	return reg;
}

/* Reference ICRC straight from the Annex A17 description: build the masked
 * pseudo packet in a separate buffer, CRC it bit by bit. */
static uint32_t ref_icrc(const uint8_t *frame, size_t len)
{
	static uint8_t tmp[70000];
	bool v6 = frame[12] == 0x86;
	size_t iphl = v6 ? 40 : 20;
	size_t iplen = v6 ? 40u + ((frame[18] << 8) | frame[19]) : (size_t)((frame[16] << 8) | frame[17]);
	size_t n = 0;

	(void)len;
	memset(tmp, 0xff, 8);
	n = 8;
	memcpy(tmp + n, frame + 14, iplen - 4);
	if (v6) {
		tmp[n + 0] |= 0x0f;
		tmp[n + 1] = tmp[n + 2] = tmp[n + 3] = 0xff;
		tmp[n + 7] = 0xff;
	} else {
		tmp[n + 1] = 0xff;
		tmp[n + 8] = 0xff;
		tmp[n + 10] = tmp[n + 11] = 0xff;
	}
	tmp[n + iphl + 6] = tmp[n + iphl + 7] = 0xff;
	tmp[n + iphl + 8 + 4] = 0xff;
	n += iplen - 4;
	return ~ref_crc32_update(0xffffffffu, tmp, n);
}

static uint32_t rd32le(const uint8_t *b)
{
	return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
}

/* ---- expected struct after a round trip ---------------------------------- */
static void normalize(struct qrnic_pkt *e, uint32_t paylen)
{
	uint32_t fl = qrnic_opcode_flags(e->opcode);

	if (!e->ipv6) {
		uint8_t a[4];

		memcpy(a, e->sgid + 12, 4);
		qrnic_gid_set_v4mapped(e->sgid, a);
		memcpy(a, e->dgid + 12, 4);
		qrnic_gid_set_v4mapped(e->dgid, a);
		e->flow_label = 0;
	}
	e->flow_label &= 0xfffff;
	e->tver = 0;
	e->dqpn &= 0xffffff;
	e->psn &= 0xffffff;
	e->padcnt = (uint8_t)((4 - (paylen & 3)) & 3);
	if (!(fl & QRNIC_HDR_RETH))
		e->reth_va = 0, e->reth_rkey = 0, e->reth_len = 0;
	if (!(fl & QRNIC_HDR_AETH))
		e->aeth_syndrome = 0, e->aeth_msn = 0;
	e->aeth_msn &= 0xffffff;
	if (!(fl & QRNIC_HDR_ATOMICETH))
		e->atomic_va = 0, e->atomic_rkey = 0, e->atomic_swap_add = 0, e->atomic_cmp = 0;
	if (!(fl & QRNIC_HDR_ATOMICACKETH))
		e->atomic_ack_orig = 0;
	if (!(fl & QRNIC_HDR_IMMDT))
		e->imm = 0;
	if (!(fl & QRNIC_HDR_IETH))
		e->ieth_rkey = 0;
	if (!(fl & QRNIC_HDR_DETH))
		e->deth_qkey = 0, e->deth_sqpn = 0;
	e->deth_sqpn &= 0xffffff;
	e->xrc_srqn = (fl & QRNIC_HDR_XRCETH) ? e->xrc_srqn & 0xffffff : 0;
	e->payload = NULL;
	e->paylen = (fl & QRNIC_HDR_PAYLOAD) ? paylen : 0;
}

/* Compare; returns the name of the first differing field or NULL.
 * loose: ignore fields that RoCEv2 leaves unprotected (MACs, IPv6 traffic
 * class / flow label / hop limit, FECN / BECN). */
static const char *pkt_diff(const struct qrnic_pkt *a, const struct qrnic_pkt *b, bool loose)
{
#define F(x) do { if (a->x != b->x) return #x; } while (0)
#define M(x) do { if (memcmp(a->x, b->x, sizeof(a->x))) return #x; } while (0)
	if (!loose) {
		M(dmac); M(smac);
		F(traffic_class); F(hop_limit); F(flow_label); F(fecn); F(becn);
	}
	F(ipv6); M(sgid); M(dgid); F(udp_sport);
	F(opcode); F(se); F(migreq); F(ackreq); F(padcnt); F(tver); F(pkey); F(dqpn); F(psn);
	F(reth_va); F(reth_rkey); F(reth_len); F(aeth_syndrome); F(aeth_msn);
	F(atomic_va); F(atomic_rkey); F(atomic_swap_add); F(atomic_cmp); F(atomic_ack_orig);
	F(imm); F(ieth_rkey); F(deth_qkey); F(deth_sqpn); F(xrc_srqn); F(paylen);
	return NULL;
#undef F
#undef M
}

static void rand_pkt(struct qrnic_pkt *p, uint8_t op, bool v6)
{
	memset(p, 0, sizeof(*p));
	rnd_bytes(p->dmac, 6);
	rnd_bytes(p->smac, 6);
	p->ipv6 = v6;
	rnd_bytes(p->sgid, 16);
	rnd_bytes(p->dgid, 16);
	if (!v6 && rndn(2)) {		/* sometimes proper v4-mapped, sometimes junk prefix */
		qrnic_gid_set_v4mapped(p->sgid, p->sgid + 12);
		qrnic_gid_set_v4mapped(p->dgid, p->dgid + 12);
	}
	p->traffic_class = (uint8_t)rnd32();
	p->hop_limit = (uint8_t)rnd32();
	p->flow_label = rnd32();
	p->udp_sport = (uint16_t)rnd32();
	p->opcode = op;
	p->se = rndn(2);
	p->migreq = rndn(2);
	p->ackreq = rndn(2);
	p->fecn = rndn(2);
	p->becn = rndn(2);
	p->padcnt = (uint8_t)rnd32();	/* ignored by build */
	p->tver = (uint8_t)rnd32();	/* ignored by build */
	p->pkey = (uint16_t)rnd32();
	p->dqpn = rnd32();
	p->psn = rnd32();
	p->reth_va = rnd64();
	p->reth_rkey = rnd32();
	p->reth_len = rnd32();
	p->aeth_syndrome = (uint8_t)rnd32();
	p->aeth_msn = rnd32();
	p->atomic_va = rnd64();
	p->atomic_rkey = rnd32();
	p->atomic_swap_add = rnd64();
	p->atomic_cmp = rnd64();
	p->atomic_ack_orig = rnd64();
	p->imm = rnd32();
	p->ieth_rkey = rnd32();
	p->deth_qkey = rnd32();
	p->deth_sqpn = rnd32();
	p->xrc_srqn = rnd32();
}

/* Parse a copy of frame[0..len) held in a heap buffer of exactly len bytes,
 * so ASan flags any read past len. */
static int parse_exact(const uint8_t *frame, size_t len, struct qrnic_pkt *out)
{
	uint8_t *b;
	int r;

	if (len == 0)
		return qrnic_wire_parse(frame, 0, out);
	b = malloc(len);
	if (!b) {
		perror("malloc");
		exit(2);
	}
	memcpy(b, frame, len);
	r = qrnic_wire_parse(b, len, out);
	free(b);
	return r;
}

/* Recompute IPv4 header checksum, ICRC and (IPv6) UDP checksum after a
 * deliberate edit, so a test reaches the check it targets. */
static uint16_t csum16(const uint8_t *b, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		sum += (uint32_t)b[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static void refix(uint8_t *f, size_t len)
{
	bool v6 = f[12] == 0x86;
	uint8_t *ip = f + 14;
	size_t iplen = v6 ? 40u + (size_t)(ip[4] << 8 | ip[5]) : (size_t)(ip[2] << 8 | ip[3]);
	size_t iphl = v6 ? 40 : 20;
	uint8_t *udp = ip + iphl;
	uint32_t c;

	if (!v6) {
		ip[10] = ip[11] = 0;
		c = (uint16_t)~csum16(ip, 20, 0);
		ip[10] = (uint8_t)(c >> 8);
		ip[11] = (uint8_t)c;
	}
	c = qrnic_icrc(f, len);
	ip[iplen - 4] = (uint8_t)c;
	ip[iplen - 3] = (uint8_t)(c >> 8);
	ip[iplen - 2] = (uint8_t)(c >> 16);
	ip[iplen - 1] = (uint8_t)(c >> 24);
	if (v6) {
		size_t ul = iplen - 40;
		uint32_t s = (uint32_t)ul + 17;

		udp[6] = udp[7] = 0;
		s = csum16(ip + 8, 32, s);
		c = (uint16_t)~csum16(udp, ul, s);
		if (!c)
			c = 0xffff;
		udp[6] = (uint8_t)(c >> 8);
		udp[7] = (uint8_t)c;
	}
}

static bool byte_unprotected(bool v6, size_t off)
{
	size_t iphl = v6 ? 40 : 20;

	if (off < 12)					/* MACs */
		return true;
	if (v6 && (off == 14 || off == 15 || off == 16 || off == 17 || off == 21))
		return true;				/* TC, flow label, hop limit */
	if (off == 14 + iphl + 6 || off == 14 + iphl + 7)
		return true;				/* UDP checksum (ICRC-masked) */
	if (off == 14 + iphl + 8 + 4)			/* BTH FECN/BECN/resv6 */
		return true;
	return false;
}

/* ---- the round trip test of one (opcode, ip version, payload size) ------- */
static uint8_t frame[70000], pay[70000], work[70100];

/* work := frame with n bytes inserted (n > 0, zeros) or removed (n < 0)
 * just before the ICRC; IP/UDP lengths adjusted, then refix'ed. */
static size_t resize_before_icrc(size_t len, int n, bool v6)
{
	size_t at = len - 4, nl;
	uint8_t *ip = work + 14, *udp = ip + (v6 ? 40 : 20);
	unsigned v;

	if (n >= 0) {
		memcpy(work, frame, at);
		memset(work + at, 0, (size_t)n);
		memcpy(work + at + n, frame + at, 4);
	} else {
		memcpy(work, frame, at + n);
		memcpy(work + at + n, frame + at, 4);
	}
	nl = len + n;
	if (v6) {
		v = (unsigned)(ip[4] << 8 | ip[5]) + n;
		ip[4] = (uint8_t)(v >> 8), ip[5] = (uint8_t)v;
	} else {
		v = (unsigned)(ip[2] << 8 | ip[3]) + n;
		ip[2] = (uint8_t)(v >> 8), ip[3] = (uint8_t)v;
	}
	v = (unsigned)(udp[4] << 8 | udp[5]) + n;
	udp[4] = (uint8_t)(v >> 8), udp[5] = (uint8_t)v;
	refix(work, nl);
	return nl;
}

static void targeted(uint8_t op, bool v6, size_t len, const struct qrnic_pkt *exp, uint32_t paylen)
{
	struct qrnic_pkt out;
	uint32_t fl = qrnic_opcode_flags(op);
	size_t iphl = v6 ? 40 : 20, nl;
	uint8_t *ip = work + 14, *udp = ip + iphl, *bth = udp + 8;
	const char *nm = qrnic_opcode_name(op);
	int r;

#define RESET() memcpy(work, frame, len)
#define EXPECT(want, what) do {							\
		r = parse_exact(work, len, &out);				\
		CHECK(r == (want), "%s v6=%d paylen=%u: %s -> %s, want %s", nm, v6, paylen, \
		      what, qrnic_wire_strerror(r), qrnic_wire_strerror(want));	\
	} while (0)

	RESET();
	EXPECT(QRNIC_WIRE_OK, "unmodified");
	refix(work, len);
	CHECK(memcmp(work, frame, len) == 0, "%s: refix changed a good frame", nm);

	/* ICRC */
	/* (over IPv6 the UDP checksum covers the ICRC: zero it to reach the ICRC check) */
#define NOUDPCS() do { if (v6) udp[6] = udp[7] = 0; } while (0)
	RESET(); NOUDPCS(); EXPECT(QRNIC_WIRE_OK, "zero UDP checksum");
	RESET(); NOUDPCS(); work[len - 1] ^= 0x80; EXPECT(QRNIC_WIRE_E_ICRC, "icrc bit");
	RESET(); NOUDPCS(); work[len - 4] ^= 0x01; EXPECT(QRNIC_WIRE_E_ICRC, "icrc bit 0");
	RESET(); NOUDPCS(); memset(work + len - 4, 0, 4); EXPECT(QRNIC_WIRE_E_ICRC, "icrc zero");
	if (v6) { RESET(); work[len - 1] ^= 0x80; EXPECT(QRNIC_WIRE_E_BAD_UDP, "icrc bit, v6 checksum on"); }
	/* a covered byte changed, other checks kept consistent: only ICRC catches */
	RESET(); bth[9] ^= 0x10; NOUDPCS(); EXPECT(QRNIC_WIRE_E_ICRC, "psn bit");
	RESET(); bth[2] ^= 0x01; NOUDPCS(); EXPECT(QRNIC_WIRE_E_ICRC, "pkey bit");
	RESET(); ip[v6 ? 39 : 19] ^= 0x01;		/* last byte of the destination address */
	NOUDPCS();
	if (!v6) {
		uint32_t c;

		ip[10] = ip[11] = 0;
		c = (uint16_t)~csum16(ip, 20, 0);
		ip[10] = (uint8_t)(c >> 8), ip[11] = (uint8_t)c;
	}
	EXPECT(QRNIC_WIRE_E_ICRC, "dst address bit");
	if (paylen) {
		RESET();
		work[len - 4 - ((4 - (paylen & 3)) & 3) - 1] ^= 0x04;	/* last payload byte */
		if (v6) {	/* recompute only the UDP checksum: ICRC must catch it */
			uint8_t icrc[4];

			memcpy(icrc, work + len - 4, 4);
			refix(work, len);
			memcpy(work + len - 4, icrc, 4);
			udp[6] = udp[7] = 0;	/* zero UDP checksum: not verified */
		}
		EXPECT(QRNIC_WIRE_E_ICRC, "payload bit");
	}

	/* not RoCE */
	RESET(); udp[3] ^= 0x01; EXPECT(QRNIC_WIRE_E_NOT_ROCE, "dport 4790");
	RESET(); udp[2] = 0; udp[3] = 53; EXPECT(QRNIC_WIRE_E_NOT_ROCE, "dport 53");
	RESET(); work[12] = 0x08; work[13] = 0x06; EXPECT(QRNIC_WIRE_E_NOT_ROCE, "ethertype ARP");
	RESET(); work[12] = 0x81; work[13] = 0x00; EXPECT(QRNIC_WIRE_E_NOT_ROCE, "ethertype 802.1Q");
	RESET(); work[12] = 0x88; work[13] = 0xa8; EXPECT(QRNIC_WIRE_E_NOT_ROCE, "ethertype 802.1ad");
	RESET(); work[12] = 0x88; work[13] = 0xb5; EXPECT(QRNIC_WIRE_E_NOT_ROCE, "ethertype local");
	RESET(); work[12] = v6 ? 0x08 : 0x86; work[13] = v6 ? 0x00 : 0xdd;
	r = parse_exact(work, len, &out);
	CHECK(r != QRNIC_WIRE_OK, "%s: v4/v6 ethertype swapped accepted", nm);
	if (v6) {
		RESET(); ip[6] = 6; EXPECT(QRNIC_WIRE_E_NOT_ROCE, "next header TCP");
		RESET(); ip[6] = 0; EXPECT(QRNIC_WIRE_E_NOT_ROCE, "next header hop-by-hop");
		RESET(); ip[6] = 44; EXPECT(QRNIC_WIRE_E_NOT_ROCE, "next header fragment");
		RESET(); ip[0] = (uint8_t)((ip[0] & 0x0f) | 0x40); EXPECT(QRNIC_WIRE_E_BAD_IP, "version 4 in v6");
		RESET(); ip[4] = 0; ip[5] = 4; EXPECT(QRNIC_WIRE_E_BAD_IP, "v6 payload length 4");
		RESET(); udp[6] = udp[7] = 0; EXPECT(QRNIC_WIRE_OK, "v6 zero UDP checksum");
		RESET(); udp[7] ^= 0x01; EXPECT(QRNIC_WIRE_E_BAD_UDP, "v6 bad UDP checksum");
	} else {
		RESET(); ip[9] = 6; EXPECT(QRNIC_WIRE_E_NOT_ROCE, "protocol TCP");
		RESET(); ip[9] = 1; refix(work, len); EXPECT(QRNIC_WIRE_E_NOT_ROCE, "protocol ICMP");
		RESET(); ip[7] = 0x10; refix(work, len); EXPECT(QRNIC_WIRE_E_NOT_ROCE, "fragment offset");
		RESET(); ip[10] ^= 0x01; EXPECT(QRNIC_WIRE_E_BAD_IP, "bad IPv4 checksum");
		RESET(); ip[11] ^= 0x80; EXPECT(QRNIC_WIRE_E_BAD_IP, "bad IPv4 checksum 2");
		RESET(); ip[8] ^= 0x01; EXPECT(QRNIC_WIRE_E_BAD_IP, "TTL changed, checksum not");
		RESET(); ip[6] = 0x20; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_IP, "MF set");
		RESET(); ip[6] = 0x00; refix(work, len); EXPECT(QRNIC_WIRE_OK, "DF clear");
		RESET(); ip[0] = 0x55; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_IP, "version 5");
		RESET(); ip[0] = 0x44; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_IP, "IHL 4");
		RESET(); ip[0] = 0x46; refix(work, len);
		r = parse_exact(work, len, &out);
		CHECK(r == QRNIC_WIRE_E_BAD_IP || r == QRNIC_WIRE_E_NOT_ROCE, "%s: IHL 6 -> %s", nm,
		      qrnic_wire_strerror(r));
		RESET(); ip[2] = 0; ip[3] = 20; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_IP, "tot_len 20");
		/* UDP checksum: non-zero is verified, zero is accepted */
		RESET(); udp[6] = 0x12; udp[7] = 0x34; EXPECT(QRNIC_WIRE_E_BAD_UDP, "v4 wrong UDP checksum");
		RESET();
		{
			size_t ul = (size_t)(udp[4] << 8 | udp[5]);
			uint32_t c = (uint16_t)~csum16(udp, ul, csum16(ip + 12, 8, (uint32_t)ul + 17));

			if (!c)
				c = 0xffff;
			udp[6] = (uint8_t)(c >> 8), udp[7] = (uint8_t)c;
		}
		EXPECT(QRNIC_WIRE_OK, "v4 correct non-zero UDP checksum");
	}

	/* lengths */
	RESET();
	if (v6) { unsigned v = (unsigned)(ip[4] << 8 | ip[5]) + 4; ip[4] = (uint8_t)(v >> 8); ip[5] = (uint8_t)v; }
	else { unsigned v = (unsigned)(ip[2] << 8 | ip[3]) + 4; ip[2] = (uint8_t)(v >> 8); ip[3] = (uint8_t)v; }
	refix(work, len);
	EXPECT(QRNIC_WIRE_E_TRUNCATED, "IP length beyond frame");
	RESET();
	if (v6) { unsigned v = (unsigned)(ip[4] << 8 | ip[5]) - 4; ip[4] = (uint8_t)(v >> 8); ip[5] = (uint8_t)v; }
	else { unsigned v = (unsigned)(ip[2] << 8 | ip[3]) - 4; ip[2] = (uint8_t)(v >> 8); ip[3] = (uint8_t)v; }
	refix(work, len);
	EXPECT(QRNIC_WIRE_E_BAD_UDP, "IP length < UDP length");
	RESET(); udp[5] ^= 0x04; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_UDP, "UDP length");
	RESET(); udp[4] = 0; udp[5] = 7; EXPECT(QRNIC_WIRE_E_BAD_UDP, "UDP length 7");

	/* BTH */
	RESET(); bth[1] = (uint8_t)((bth[1] & 0xf0) | 1); refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_BTH, "tver 1");
	RESET(); bth[0] = 0x2c; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_OPCODE, "UC READ opcode");
	RESET(); bth[0] = 0x30; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_OPCODE, "opcode 0x30");
	RESET(); bth[0] = 0x80; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_OPCODE, "opcode 0x80 (transport 100 but not CNP)");
	RESET(); bth[0] = 0x15; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_OPCODE, "opcode 0x15");
	RESET(); bth[0] = 0xff; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_OPCODE, "opcode 0xff");
	/* reserved bits are ignored (covered by the ICRC, so refix) */
	RESET(); bth[4] |= 0x3f; bth[8] |= 0x7f; refix(work, len);
	r = parse_exact(work, len, &out);
	CHECK(r == QRNIC_WIRE_OK && !pkt_diff(exp, &out, false), "%s: reserved bits -> %s", nm,
	      qrnic_wire_strerror(r));
	/* FECN/BECN are not covered by the ICRC (only by a non-zero UDP checksum) */
	RESET(); NOUDPCS(); bth[4] ^= 0xc0;
	r = parse_exact(work, len, &out);
	CHECK(r == QRNIC_WIRE_OK && out.fecn == !exp->fecn && out.becn == !exp->becn &&
	      !pkt_diff(exp, &out, true), "%s: FECN/BECN toggle -> %s", nm, qrnic_wire_strerror(r));
	/* IPv4 TOS / TTL changed by a router, checksum updated: ICRC still fine */
	if (!v6) {
		RESET(); ip[1] ^= 0x03; ip[8] -= 1;
		ip[10] = ip[11] = 0;
		{
			uint32_t c = (uint16_t)~csum16(ip, 20, 0);

			ip[10] = (uint8_t)(c >> 8), ip[11] = (uint8_t)c;
		}
		r = parse_exact(work, len, &out);
		CHECK(r == QRNIC_WIRE_OK && out.hop_limit == (uint8_t)(exp->hop_limit - 1) &&
		      out.traffic_class == (exp->traffic_class ^ 3), "%s: router TTL/ECN edit -> %s", nm,
		      qrnic_wire_strerror(r));
	} else {
		RESET(); ip[7] -= 1; ip[1] ^= 0x30;	/* hop limit, ECN bits */
		r = parse_exact(work, len, &out);
		CHECK(r == QRNIC_WIRE_OK && out.hop_limit == (uint8_t)(exp->hop_limit - 1) &&
		      out.traffic_class == (exp->traffic_class ^ 3), "%s: v6 router hop/ECN edit -> %s", nm,
		      qrnic_wire_strerror(r));
	}

	/* pad count */
	if (fl & QRNIC_HDR_PAYLOAD) {
		uint32_t data = (paylen + 3) & ~3u;

		if (data == 0) {
			RESET(); bth[1] |= 0x10; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_BTH, "pad 1 with no data");
		} else {
			RESET(); bth[1] = (uint8_t)((bth[1] & 0xcf) | 0x30); refix(work, len);
			r = parse_exact(work, len, &out);
			CHECK(r == QRNIC_WIRE_OK && out.paylen == data - 3 && out.padcnt == 3,
			      "%s: pad 3 -> %s paylen %u", nm, qrnic_wire_strerror(r), out.paylen);
		}
		/* payload + pad not a multiple of 4 */
		nl = resize_before_icrc(len, 1, v6);
		r = parse_exact(work, nl, &out);
		CHECK(r == QRNIC_WIRE_E_BAD_BTH, "%s: data+pad %%4 != 0 -> %s", nm, qrnic_wire_strerror(r));
		nl = resize_before_icrc(len, 4, v6);
		r = parse_exact(work, nl, &out);
		CHECK(r == QRNIC_WIRE_OK, "%s: 4 more data bytes -> %s", nm, qrnic_wire_strerror(r));
	} else {
		RESET(); bth[1] |= 0x10; refix(work, len); EXPECT(QRNIC_WIRE_E_BAD_BTH, "pad on no-payload op");
		nl = resize_before_icrc(len, 4, v6);
		r = parse_exact(work, nl, &out);
		CHECK(r == QRNIC_WIRE_E_BAD_BTH, "%s: data on no-payload op -> %s", nm, qrnic_wire_strerror(r));
		/* headers cut short */
		nl = resize_before_icrc(len, -4, v6);
		r = parse_exact(work, nl, &out);
		CHECK(r == QRNIC_WIRE_E_TRUNCATED, "%s: ext header cut -> %s", nm, qrnic_wire_strerror(r));
	}
	if (qrnic_opcode_hdr_len(op) > QRNIC_BTH_LEN && paylen == 0) {
		nl = resize_before_icrc(len, -4, v6);
		r = parse_exact(work, nl, &out);
		CHECK(r == QRNIC_WIRE_E_TRUNCATED, "%s: headers cut -> %s", nm, qrnic_wire_strerror(r));
	}
	if (qrnic_opcode_hdr_len(op) == QRNIC_BTH_LEN && paylen == 0) {
		nl = resize_before_icrc(len, -4, v6);	/* BTH cut to 8 bytes */
		r = parse_exact(work, nl, &out);
		CHECK(r == QRNIC_WIRE_E_TRUNCATED, "%s: BTH cut -> %s", nm, qrnic_wire_strerror(r));
	}
#undef RESET
#undef EXPECT
#undef NOUDPCS
}


static void roundtrip_one(uint8_t op, bool v6, uint32_t paylen)
{
	struct qrnic_pkt in, exp, out;
	uint32_t fl = qrnic_opcode_flags(op);
	size_t len, want;
	int r;

	rand_pkt(&in, op, v6);
	rnd_bytes(pay, paylen);
	want = qrnic_wire_frame_len(v6, op, paylen);
	len = qrnic_wire_build(&in, paylen ? pay : NULL, paylen, frame, sizeof(frame));
	if (!(fl & QRNIC_HDR_PAYLOAD) && paylen) {
		CHECK(len == 0 && want == 0, "%s: payload on non-payload opcode accepted", qrnic_opcode_name(op));
		return;
	}
	CHECK(len != 0 && len == want, "%s v6=%d paylen=%u: build len %zu want %zu",
	      qrnic_opcode_name(op), v6, paylen, len, want);
	if (!len)
		return;

	/* ICRC: table CRC == bitwise reference, wire bytes little endian */
	CHECK(qrnic_icrc(frame, len) == rd32le(frame + len - 4), "%s: icrc bytes", qrnic_opcode_name(op));
	CHECK(ref_icrc(frame, len) == rd32le(frame + len - 4), "%s v6=%d paylen=%u: reference icrc mismatch",
	      qrnic_opcode_name(op), v6, paylen);

	/* exact parse */
	exp = in;
	normalize(&exp, paylen);
	r = parse_exact(frame, len, &out);
	CHECK(r == QRNIC_WIRE_OK, "%s v6=%d paylen=%u: parse -> %s", qrnic_opcode_name(op), v6, paylen,
	      qrnic_wire_strerror(r));
	if (r == QRNIC_WIRE_OK) {
		const char *d;

		r = qrnic_wire_parse(frame, len, &out);
		d = pkt_diff(&exp, &out, false);
		CHECK(!d, "%s v6=%d paylen=%u: field %s differs", qrnic_opcode_name(op), v6, paylen, d ? d : "");

		/* headers by description: the packet the parse gave, found
		 * from the packet the frame was built from */
		{
			struct qrnic_pkt desc;
			const uint8_t *pl = (fl & QRNIC_HDR_PAYLOAD) ? frame + len - 4 - exp.padcnt - paylen : NULL;

			memset(&desc, 0xa5, sizeof(desc));
			qrnic_wire_pkt_received(&in, pl, paylen, &desc);
			d = pkt_diff(&out, &desc, false);
			CHECK(!d, "%s v6=%d paylen=%u: described packet: field %s differs",
			      qrnic_opcode_name(op), v6, paylen, d ? d : "");
			CHECK(desc.payload == out.payload && desc.paylen == out.paylen,
			      "%s v6=%d paylen=%u: described payload", qrnic_opcode_name(op), v6, paylen);
		}
		if (fl & QRNIC_HDR_PAYLOAD)
			CHECK(out.payload && out.payload >= frame && out.payload + out.paylen <= frame + len &&
			      (paylen == 0 || memcmp(out.payload, pay, paylen) == 0),
			      "%s: payload bytes", qrnic_opcode_name(op));
		else
			CHECK(out.payload == NULL && out.paylen == 0, "%s: payload on no-payload op",
			      qrnic_opcode_name(op));
	}

	/* Ethernet minimum-size / trailing padding is ignored */
	{
		size_t padded = len < 60 ? 60 : len + 7;

		memset(frame + len, 0, padded - len);
		r = parse_exact(frame, padded, &out);
		CHECK(r == QRNIC_WIRE_OK && !pkt_diff(&exp, &out, false), "%s: trailing padding -> %s",
		      qrnic_opcode_name(op), qrnic_wire_strerror(r));
		CHECK(qrnic_icrc(frame, padded) == rd32le(frame + len - 4), "%s: icrc with trailing pad",
		      qrnic_opcode_name(op));
	}

	/* build into a too-small buffer fails */
	CHECK(qrnic_wire_build(&in, paylen ? pay : NULL, paylen, frame, len - 1) == 0, "build with bufsz-1");
	len = qrnic_wire_build(&in, paylen ? pay : NULL, paylen, frame, len);
	CHECK(len == want, "rebuild");

	/* every truncation is rejected, without reading past the end */
	{
		unsigned long bad = 0;

		for (size_t l = 0; l < len; l++) {
			r = parse_exact(frame, l, &out);
			if (r == QRNIC_WIRE_OK)
				bad++;
		}
		CHECK(bad == 0, "%s v6=%d paylen=%u: %lu truncations accepted", qrnic_opcode_name(op), v6,
		      paylen, bad);
	}

	/* single bit flips: all header bits (all bits of small frames), plus
	 * random payload bits; rejected unless the bit is RoCE-unprotected */
	{
		size_t hdr_end = len - paylen - 4 - ((4 - (paylen & 3)) & 3);
		size_t nbits = len <= 320 ? len * 8 : hdr_end * 8 + 64 + 32;
		unsigned long bad = 0, ok_unprot = 0;

		for (size_t i = 0; i < nbits; i++) {
			size_t bit;

			if (len <= 320 || i < hdr_end * 8)
				bit = i;
			else if (i < hdr_end * 8 + 64)
				bit = hdr_end * 8 + rndn((uint32_t)((len - hdr_end) * 8));
			else
				bit = (len - 4) * 8 + (i - hdr_end * 8 - 64);	/* all ICRC bits */
			frame[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			r = qrnic_wire_parse(frame, len, &out);
			if (r == QRNIC_WIRE_OK) {
				if (byte_unprotected(v6, bit / 8) && !pkt_diff(&exp, &out, true))
					ok_unprot++;
				else
					bad++;
			}
			frame[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		CHECK(bad == 0, "%s v6=%d paylen=%u: %lu bit flips accepted", qrnic_opcode_name(op), v6,
		      paylen, bad);
		/* the 96 MAC bits are not covered by anything: must be accepted */
		CHECK(ok_unprot >= 96, "%s v6=%d: only %lu unprotected flips accepted", qrnic_opcode_name(op), v6,
		      ok_unprot);
	}
	CHECK(qrnic_wire_parse(frame, len, &out) == QRNIC_WIRE_OK, "restored");

	/* targeted corruptions */
	targeted(op, v6, len, &exp, paylen);
}

/* ---- golden vectors and table checks ------------------------------------- */
static void hex2bin(const char *h, uint8_t *out, size_t *n)
{
	size_t k = 0;
	int hi = -1;

	for (; *h; h++) {
		int v;

		if (*h >= '0' && *h <= '9') v = *h - '0';
		else if (*h >= 'a' && *h <= 'f') v = *h - 'a' + 10;
		else if (*h >= 'A' && *h <= 'F') v = *h - 'A' + 10;
		else continue;
		if (hi < 0) {
			hi = v;
		} else {
			out[k++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	*n = k;
}

static void golden(void)
{
	uint8_t b[512];
	size_t n;
	struct qrnic_pkt out;
	int r;

	/* CRC-32 check value */
	CHECK(qrnic_crc32(0, "123456789", 9) == 0xcbf43926u, "crc32 check value");
	CHECK(qrnic_crc32(0, NULL, 0) == 0 && qrnic_crc32(0, "", 0) == 0, "crc32 empty");
	CHECK(qrnic_crc32(qrnic_crc32(0, "1234", 4), "56789", 5) == 0xcbf43926u, "crc32 chaining");
	/* rxe's seed: register after ~0 and 8 bytes of 0xff */
	memset(b, 0xff, 8);
	CHECK(~qrnic_crc32(0, b, 8) == 0xdebb20e3u, "ICRC seed 0xdebb20e3");
	/* slicing-by-8 vs bitwise, all lengths 0..300 at offsets 0..7 */
	{
		unsigned long bad = 0;

		rnd_bytes(b, sizeof(b));
		for (size_t off = 0; off < 8; off++)
			for (size_t l = 0; l <= 300; l++)
				if (qrnic_crc32(0, b + off, l) != ~ref_crc32_update(0xffffffffu, b + off, l))
					bad++;
		CHECK(bad == 0, "slicing crc vs bitwise: %lu mismatches", bad);
	}
	/* long buffers (the 512-bit folding path from 256 bytes on, when the
	 * CPU has it; the 128-bit one otherwise): lengths around the 64/256
	 * block boundaries and up to a jumbo frame, at offsets 0..3 */
	{
		static uint8_t big[9100];
		static const size_t lens[] = { 255, 256, 257, 271, 272, 300, 319, 320, 511, 512, 513,
					       767, 768, 1024, 1040, 2048, 4096, 4111, 4112, 4116,
					       4200, 8192, 9018 };
		unsigned long bad = 0;

		rnd_bytes(big, sizeof(big));
		for (size_t off = 0; off < 4; off++)
			for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
				if (qrnic_crc32(0x12345678u, big + off, lens[i]) !=
				    ~ref_crc32_update(~0x12345678u, big + off, lens[i]))
					bad++;
		CHECK(bad == 0, "long crc vs bitwise: %lu mismatches", bad);
	}

	/* RoCEv2 CNP captured on a ConnectX-4 Lx (hardware-computed ICRC
	 * 82 fd 00 2a on the wire); public test vector of scapy's RoCE layer. */
	hex2bin("e41d2dab2bc27cfe90643b32080045c2"
		"003c718c4000401191610a0011010a00"
		"1201000012b7002800008100ffff4000"
		"01180000000000000000000000000000"
		"00000000000082fd002a", b, &n);
	CHECK(n == 74, "cnp vector length %zu", n);
	CHECK(qrnic_icrc(b, n) == 0x2a00fd82u, "ConnectX-4 Lx CNP ICRC: got %08x want 2a00fd82 (wire 82 fd 00 2a)",
	      qrnic_icrc(b, n));
	CHECK(ref_icrc(b, n) == 0x2a00fd82u, "reference ICRC on CNP");
	r = qrnic_wire_parse(b, n, &out);
	CHECK(r == QRNIC_WIRE_OK && out.opcode == QRNIC_OP_CNP && out.dqpn == 0x118 && out.becn &&
	      !out.fecn && out.paylen == 0 && out.payload == NULL && out.traffic_class == 0xc2,
	      "CNP (0x81) parse -> %s", qrnic_wire_strerror(r));
	b[n - 1] ^= 1;
	CHECK(qrnic_icrc(b, n) == 0x2a00fd82u, "ICRC ignores its own bytes");
	/* the CNP with FECN/BECN (byte 4 of the BTH) changed keeps its ICRC */
	b[14 + 20 + 8 + 4] = 0x80;
	CHECK(qrnic_icrc(b, n) == 0x2a00fd82u, "FECN/BECN masked");
	b[14 + 1] = 0x02; b[14 + 8] = 0x01;	/* TOS, TTL masked */
	CHECK(qrnic_icrc(b, n) == 0x2a00fd82u, "TOS/TTL masked");
	b[14 + 20 + 8 + 11] ^= 1;		/* PSN covered */
	CHECK(qrnic_icrc(b, n) != 0x2a00fd82u, "PSN covered");

	/* qrnic_icrc on junk */
	CHECK(qrnic_icrc(b, 10) == 0 && qrnic_icrc(NULL, 100) == 0, "icrc on short/NULL");
	b[12] = 0x08; b[13] = 0x06;
	CHECK(qrnic_icrc(b, n) == 0, "icrc on ARP");

	/* parse of junk */
	CHECK(qrnic_wire_parse(NULL, 0, &out) == QRNIC_WIRE_E_TRUNCATED, "parse NULL");
	CHECK(parse_exact(b, 13, &out) == QRNIC_WIRE_E_TRUNCATED, "parse 13 bytes");
	CHECK(parse_exact(b, 14, &out) == QRNIC_WIRE_E_NOT_ROCE, "parse 14 bytes ARP");
}

static void opcode_table(void)
{
	static const struct { uint8_t op; const char *name; uint32_t hdr; uint32_t fl; } t[] = {
		{ 0x00, "RC_SEND_FIRST", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x01, "RC_SEND_MIDDLE", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_MIDDLE | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x02, "RC_SEND_LAST", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x03, "RC_SEND_LAST_IMM", 16, QRNIC_HDR_IMMDT | QRNIC_HDR_PAYLOAD | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x04, "RC_SEND_ONLY", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x05, "RC_SEND_ONLY_IMM", 16, QRNIC_HDR_IMMDT | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x06, "RC_WRITE_FIRST", 28, QRNIC_HDR_RETH | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x07, "RC_WRITE_MIDDLE", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_MIDDLE | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x08, "RC_WRITE_LAST", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x09, "RC_WRITE_LAST_IMM", 16, QRNIC_HDR_IMMDT | QRNIC_HDR_PAYLOAD | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x0a, "RC_WRITE_ONLY", 28, QRNIC_HDR_RETH | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x0b, "RC_WRITE_ONLY_IMM", 32, QRNIC_HDR_RETH | QRNIC_HDR_IMMDT | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x0c, "RC_READ_REQ", 28, QRNIC_HDR_RETH | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_READ },
		{ 0x0d, "RC_READ_RESP_FIRST", 16, QRNIC_HDR_AETH | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_RESPONSE | QRNIC_HDR_READ },
		{ 0x0e, "RC_READ_RESP_MIDDLE", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_MIDDLE | QRNIC_HDR_RESPONSE | QRNIC_HDR_READ },
		{ 0x0f, "RC_READ_RESP_LAST", 16, QRNIC_HDR_AETH | QRNIC_HDR_PAYLOAD | QRNIC_HDR_LAST | QRNIC_HDR_RESPONSE | QRNIC_HDR_READ },
		{ 0x10, "RC_READ_RESP_ONLY", 16, QRNIC_HDR_AETH | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_RESPONSE | QRNIC_HDR_READ },
		{ 0x11, "RC_ACK", 16, QRNIC_HDR_AETH | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_RESPONSE },
		{ 0x12, "RC_ATOMIC_ACK", 24, QRNIC_HDR_AETH | QRNIC_HDR_ATOMICACKETH | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_RESPONSE | QRNIC_HDR_ATOMIC },
		{ 0x13, "RC_CMP_SWAP", 40, QRNIC_HDR_ATOMICETH | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_ATOMIC },
		{ 0x14, "RC_FETCH_ADD", 40, QRNIC_HDR_ATOMICETH | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_ATOMIC },
		{ 0x16, "RC_SEND_LAST_INV", 16, QRNIC_HDR_IETH | QRNIC_HDR_PAYLOAD | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x17, "RC_SEND_ONLY_INV", 16, QRNIC_HDR_IETH | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x20, "UC_SEND_FIRST", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x21, "UC_SEND_MIDDLE", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_MIDDLE | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x22, "UC_SEND_LAST", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x23, "UC_SEND_LAST_IMM", 16, QRNIC_HDR_IMMDT | QRNIC_HDR_PAYLOAD | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x24, "UC_SEND_ONLY", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x25, "UC_SEND_ONLY_IMM", 16, QRNIC_HDR_IMMDT | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x26, "UC_WRITE_FIRST", 28, QRNIC_HDR_RETH | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x27, "UC_WRITE_MIDDLE", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_MIDDLE | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x28, "UC_WRITE_LAST", 12, QRNIC_HDR_PAYLOAD | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x29, "UC_WRITE_LAST_IMM", 16, QRNIC_HDR_IMMDT | QRNIC_HDR_PAYLOAD | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x2a, "UC_WRITE_ONLY", 28, QRNIC_HDR_RETH | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x2b, "UC_WRITE_ONLY_IMM", 32, QRNIC_HDR_RETH | QRNIC_HDR_IMMDT | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_WRITE },
		{ 0x64, "UD_SEND_ONLY", 20, QRNIC_HDR_DETH | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x65, "UD_SEND_ONLY_IMM", 24, QRNIC_HDR_DETH | QRNIC_HDR_IMMDT | QRNIC_HDR_PAYLOAD | QRNIC_HDR_FIRST | QRNIC_HDR_LAST | QRNIC_HDR_REQUEST | QRNIC_HDR_SEND },
		{ 0x81, "CNP", 28, QRNIC_HDR_CNP | QRNIC_HDR_FIRST | QRNIC_HDR_LAST },
	};
	unsigned known = 0, maxhdr = 0, n_xrc = 0;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		CHECK(qrnic_opcode_flags(t[i].op) == t[i].fl, "flags of %s: %#x want %#x", t[i].name,
		      qrnic_opcode_flags(t[i].op), t[i].fl);
		CHECK(strcmp(qrnic_opcode_name(t[i].op), t[i].name) == 0, "name of %#x", t[i].op);
		CHECK(qrnic_opcode_hdr_len(t[i].op) == t[i].hdr, "hdr len of %s", t[i].name);
		if (t[i].hdr > maxhdr)
			maxhdr = t[i].hdr;
	}
	/* XRC (0xa0..): the RC rows, with a 4-byte XRCETH on requests */
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]) && t[i].op < 0x20; i++) {
		uint8_t op = (uint8_t)(t[i].op | QRNIC_OP_XRC);
		uint32_t x = (t[i].fl & QRNIC_HDR_REQUEST) ? QRNIC_HDR_XRCETH : 0;
		char name[32];

		snprintf(name, sizeof(name), "XRC_%s", t[i].name + 3);
		CHECK(qrnic_opcode_flags(op) == (t[i].fl | x), "flags of %s", name);
		CHECK(strcmp(qrnic_opcode_name(op), name) == 0, "name of %#x", op);
		CHECK(qrnic_opcode_hdr_len(op) == t[i].hdr + (x ? 4 : 0), "hdr len of %s", name);
		if (qrnic_opcode_hdr_len(op) > maxhdr)
			maxhdr = qrnic_opcode_hdr_len(op);
		n_xrc++;
	}
	for (unsigned op = 0; op < 256; op++)
		if (qrnic_opcode_flags((uint8_t)op))
			known++;
		else
			CHECK(strcmp(qrnic_opcode_name((uint8_t)op), "UNKNOWN") == 0 &&
			      qrnic_opcode_hdr_len((uint8_t)op) == 0 &&
			      qrnic_wire_frame_len(false, (uint8_t)op, 0) == 0, "unknown opcode %#x", op);
	CHECK(known == N_OPS && known == sizeof(t) / sizeof(t[0]) + n_xrc, "%u known opcodes", known);
	CHECK(QRNIC_MAX_HDR_LEN == 14 + 40 + 8 + maxhdr, "QRNIC_MAX_HDR_LEN");
	CHECK(strcmp(qrnic_wire_strerror(QRNIC_WIRE_E_ICRC), "ICRC") == 0 &&
	      strcmp(qrnic_wire_strerror(QRNIC_WIRE_E_NOT_ROCE), "NOT_ROCE") == 0, "strerror");
	{
		uint8_t g[16], a[4] = { 10, 1, 2, 3 };

		qrnic_gid_set_v4mapped(g, a);
		CHECK(qrnic_gid_is_v4mapped(g) && g[10] == 0xff && g[15] == 3, "v4mapped");
		g[0] = 0xfe;
		CHECK(!qrnic_gid_is_v4mapped(g), "not v4mapped");
	}
}

/* byte-exact layout of one fixed packet */
static void layout(void)
{
	struct qrnic_pkt p;
	size_t len;
	static const uint8_t imm[4] = { 0xde, 0xad, 0xbe, 0xef };
	const uint8_t *ip = frame + 14, *u = ip + 20, *h = u + 8;

	memset(&p, 0, sizeof(p));
	memset(p.dmac, 0x02, 6);
	memset(p.smac, 0x04, 6);
	p.sgid[10] = p.sgid[11] = 0xff; p.sgid[12] = 10; p.sgid[15] = 1;
	p.dgid[10] = p.dgid[11] = 0xff; p.dgid[12] = 10; p.dgid[15] = 2;
	p.traffic_class = 0x68; p.hop_limit = 64; p.udp_sport = 0xc001;
	p.opcode = QRNIC_OP_RC_WRITE_ONLY_IMM; p.se = true; p.ackreq = true; p.becn = true;
	p.pkey = 0xffff; p.dqpn = 0x123456; p.psn = 0xabcdef;
	p.reth_va = 0x1122334455667788ull; p.reth_rkey = 0x99aabbcc; p.reth_len = 5;
	memcpy(&p.imm, imm, 4);
	len = qrnic_wire_build(&p, "hello", 5, frame, sizeof(frame));
	CHECK(len == 14 + 20 + 8 + 12 + 16 + 4 + 8 + 4, "layout len %zu", len);
	CHECK(frame[12] == 0x08 && frame[13] == 0x00, "ethertype");
	CHECK(ip[0] == 0x45 && ip[1] == 0x68 && ip[2] == 0 && ip[3] == len - 14 && ip[4] == 0 && ip[5] == 0 &&
	      ip[6] == 0x40 && ip[7] == 0 && ip[8] == 64 && ip[9] == 17, "IPv4 header");
	CHECK(csum16(ip, 20, 0) == 0xffff, "IPv4 checksum");
	CHECK(ip[12] == 10 && ip[15] == 1 && ip[16] == 10 && ip[19] == 2, "IPv4 addresses");
	CHECK(u[0] == 0xc0 && u[1] == 0x01 && u[2] == 0x12 && u[3] == 0xb7 && u[4] == 0 &&
	      u[5] == len - 34 && u[6] == 0 && u[7] == 0, "UDP header");
	CHECK(h[0] == 0x0b && h[1] == (0x80 | 0x30) && h[2] == 0xff && h[3] == 0xff && h[4] == 0x40 &&
	      h[5] == 0x12 && h[6] == 0x34 && h[7] == 0x56 && h[8] == 0x80 && h[9] == 0xab &&
	      h[10] == 0xcd && h[11] == 0xef, "BTH bytes");
	CHECK(h[12] == 0x11 && h[19] == 0x88 && h[20] == 0x99 && h[23] == 0xcc && h[24] == 0 && h[27] == 5,
	      "RETH bytes");
	CHECK(memcmp(h + 28, imm, 4) == 0, "ImmDt bytes as given");
	CHECK(memcmp(h + 32, "hello\0\0\0", 8) == 0, "payload + zero pad");
	CHECK(ref_icrc(frame, len) == rd32le(frame + len - 4), "ICRC little endian on the wire");

	/* build argument checks */
	CHECK(qrnic_wire_build(&p, NULL, 5, frame, sizeof(frame)) == 0, "NULL payload with paylen");
	CHECK(qrnic_wire_build(NULL, NULL, 0, frame, sizeof(frame)) == 0, "NULL pkt");
	p.opcode = 0x2c;
	CHECK(qrnic_wire_build(&p, NULL, 0, frame, sizeof(frame)) == 0, "unknown opcode build");
	p.opcode = QRNIC_OP_RC_ACK;
	CHECK(qrnic_wire_build(&p, "x", 1, frame, sizeof(frame)) == 0, "payload on ACK");
	/* 16-bit length limits */
	p.opcode = QRNIC_OP_RC_SEND_MIDDLE;
	rnd_bytes(pay, 65600);
	/* UDP length = 8 + 12 + payload + pad + 4 <= 65535 - 20 (IPv4) */
	len = qrnic_wire_build(&p, pay, 65488, frame, sizeof(frame));
	CHECK(len == 14 + 20 + 8 + 12 + 65488 + 4, "largest IPv4 frame %zu", len);
	CHECK(parse_exact(frame, len, &(struct qrnic_pkt){0}) == QRNIC_WIRE_OK, "largest IPv4 parses");
	CHECK(qrnic_wire_build(&p, pay, 65489, frame, sizeof(frame)) == 0, "IPv4 too large");
	p.ipv6 = true;
	len = qrnic_wire_build(&p, pay, 65508, frame, sizeof(frame));
	CHECK(len == 14 + 40 + 8 + 12 + 65508 + 4, "largest IPv6 frame %zu", len);
	CHECK(parse_exact(frame, len, &(struct qrnic_pkt){0}) == QRNIC_WIRE_OK, "largest IPv6 parses");
	CHECK(qrnic_wire_build(&p, pay, 65509, frame, sizeof(frame)) == 0, "IPv6 too large");
	CHECK(qrnic_wire_frame_len(true, QRNIC_OP_RC_SEND_MIDDLE, 0xffffffffu) == 0, "frame_len overflow");
}

static int mode_roundtrip(void)
{
	static const uint32_t sizes[] = { 0, 1, 2, 3, 4, 5, 255, 256, 1023, 1024, 4096 };

	golden();
	opcode_table();
	layout();
	for (size_t i = 0; i < N_OPS; i++)
		for (int v6 = 0; v6 < 2; v6++)
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
				roundtrip_one(all_ops[i], v6, sizes[s]);
	printf("%lu passed, %lu failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}

/* ---- pcap mode --------------------------------------------------------- */
static void gid_str(char *s, const uint8_t g[16], bool v6)
{
	if (!v6) {
		sprintf(s, "%u.%u.%u.%u", g[12], g[13], g[14], g[15]);
		return;
	}
	for (int i = 0; i < 16; i += 2)
		s += sprintf(s, "%s%02x%02x", i ? ":" : "", g[i], g[i + 1]);
}

static void print_json(unsigned idx, const struct qrnic_pkt *p, size_t len, bool icrc_ok)
{
	uint32_t fl = qrnic_opcode_flags(p->opcode);
	char sg[48], dg[48];
	const uint8_t *ic = frame + len - 4;

	gid_str(sg, p->sgid, p->ipv6);
	gid_str(dg, p->dgid, p->ipv6);
	printf("{\"index\": %u, \"opcode\": %u, \"name\": \"%s\", \"ipv6\": %s, \"len\": %zu, "
	       "\"sip\": \"%s\", \"dip\": \"%s\", \"sport\": %u, \"tclass\": %u, \"hop_limit\": %u, "
	       "\"flow_label\": %u, \"se\": %d, \"migreq\": %d, \"ackreq\": %d, \"fecn\": %d, \"becn\": %d, "
	       "\"padcnt\": %u, \"pkey\": %u, \"dqpn\": %u, \"psn\": %u, \"paylen\": %u",
	       idx, p->opcode, qrnic_opcode_name(p->opcode), p->ipv6 ? "true" : "false", len, sg, dg,
	       p->udp_sport, p->traffic_class, p->hop_limit, p->flow_label, p->se, p->migreq, p->ackreq,
	       p->fecn, p->becn, p->padcnt, p->pkey, p->dqpn, p->psn, p->paylen);
	printf(", \"hdrs\": [");
	{
		const char *sep = "";
		static const struct { uint32_t f; const char *n; } h[] = {
			{ QRNIC_HDR_DETH, "DETH" }, { QRNIC_HDR_RETH, "RETH" }, { QRNIC_HDR_AETH, "AETH" },
			{ QRNIC_HDR_ATOMICETH, "ATOMICETH" }, { QRNIC_HDR_ATOMICACKETH, "ATOMICACKETH" },
			{ QRNIC_HDR_IMMDT, "IMMDT" }, { QRNIC_HDR_PAYLOAD, "PAYLOAD" },
			{ QRNIC_HDR_XRCETH, "XRCETH" },
		};
		for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++)
			if (fl & h[i].f) {
				printf("%s\"%s\"", sep, h[i].n);
				sep = ", ";
			}
	}
	printf("]");
	if (fl & QRNIC_HDR_RETH)
		printf(", \"reth_va\": %" PRIu64 ", \"reth_rkey\": %u, \"reth_len\": %u", p->reth_va, p->reth_rkey,
		       p->reth_len);
	if (fl & QRNIC_HDR_AETH)
		printf(", \"aeth_syndrome\": %u, \"aeth_msn\": %u", p->aeth_syndrome, p->aeth_msn);
	if (fl & QRNIC_HDR_ATOMICETH)
		printf(", \"atomic_va\": %" PRIu64 ", \"atomic_rkey\": %u, \"atomic_swap_add\": %" PRIu64
		       ", \"atomic_cmp\": %" PRIu64, p->atomic_va, p->atomic_rkey, p->atomic_swap_add, p->atomic_cmp);
	if (fl & QRNIC_HDR_ATOMICACKETH)
		printf(", \"atomic_ack_orig\": %" PRIu64, p->atomic_ack_orig);
	if (fl & QRNIC_HDR_DETH)
		printf(", \"deth_qkey\": %u, \"deth_sqpn\": %u", p->deth_qkey, p->deth_sqpn);
	if (fl & QRNIC_HDR_IMMDT) {
		const uint8_t *b = (const uint8_t *)&p->imm;

		printf(", \"imm\": \"%02x%02x%02x%02x\"", b[0], b[1], b[2], b[3]);
	}
	if (fl & QRNIC_HDR_IETH)
		printf(", \"ieth_rkey\": %u", p->ieth_rkey);
	if (fl & QRNIC_HDR_XRCETH)
		printf(", \"xrc_srqn\": %u", p->xrc_srqn);
	printf(", \"payload\": \"");
	for (uint32_t i = 0; i < p->paylen; i++)
		printf("%02x", p->payload[i]);
	printf("\"");
	/* icrc_wire: the 4 bytes in wire order; icrc_value: qrnic_icrc()'s value */
	printf(", \"icrc_wire\": \"%02x%02x%02x%02x\", \"icrc_value\": %u, \"icrc_ok\": %s}\n", ic[0], ic[1], ic[2],
	       ic[3], qrnic_icrc(frame, len), icrc_ok ? "true" : "false");
}

static int mode_pcap(const char *path)
{
	char err[256];
	struct qrnic_pcap *f = qrnic_pcap_open(path, false, err, sizeof(err));	/* microseconds */
	unsigned idx = 0;
	struct qrnic_pkt p, chk;
	size_t len = 0;
	int r;

	if (!f) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	for (int v6 = 0; v6 < 2; v6++) {
		for (size_t i = 0; i < N_OPS; i++) {
			uint8_t op = all_ops[i];
			uint32_t fl = qrnic_opcode_flags(op);
			uint32_t paylen = (fl & QRNIC_HDR_PAYLOAD) ? (uint32_t)(1 + (i * 7 + v6 * 3) % 61) : 0;
			unsigned k = (unsigned)(i + 1 + v6 * 32);

			memset(&p, 0, sizeof(p));
			memcpy(p.dmac, "\x02\x00\x00\x00\x00\x02", 6);
			memcpy(p.smac, "\x02\x00\x00\x00\x00\x01", 6);
			p.ipv6 = v6;
			if (v6) {
				static const uint8_t s[16] = { 0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
				memcpy(p.sgid, s, 16);
				memcpy(p.dgid, s, 16);
				p.dgid[15] = 2;
				p.sgid[14] = (uint8_t)k;
				p.flow_label = 0x12345 + k;
			} else {
				uint8_t a[4] = { 192, 168, 100, 1 }, b[4] = { 192, 168, 100, 2 };

				a[2] = (uint8_t)k;
				qrnic_gid_set_v4mapped(p.sgid, a);
				qrnic_gid_set_v4mapped(p.dgid, b);
			}
			p.traffic_class = (uint8_t)(k * 4);
			p.hop_limit = 64;
			p.udp_sport = (uint16_t)(49152 + k);
			p.opcode = op;
			p.se = (k & 1) != 0;
			p.ackreq = (k & 2) != 0;
			p.migreq = true;
			p.pkey = 0xffff;
			p.dqpn = 0x000100u + k * 0x10101u;
			p.psn = 0x00a000u + k * 0x3001u;
			p.reth_va = 0x00007f0000001000ull + (uint64_t)k * 0x100000001ull;
			p.reth_rkey = 0x1000u + k * 0x11u;
			p.reth_len = 4096u * k + paylen;
			/* valid syndromes: ACK + credit count, RNR NAK + timer, NAK codes 0..4 */
			p.aeth_syndrome = (uint8_t)(k % 3 == 0 ? k & 0x1f : k % 3 == 1 ? 0x20 | (k & 0x1f) : 0x60 + k % 5);
			p.aeth_msn = 0x000200u + k * 0x1111u;
			p.atomic_va = 0x00007f0000002000ull + k * 8u;
			p.atomic_rkey = 0x2000u + k;
			p.atomic_swap_add = 0x1111111111111111ull * (k % 15 + 1);
			p.atomic_cmp = 0x0101010101010101ull * k;
			p.atomic_ack_orig = 0xfedcba9876543210ull ^ k;
			memcpy(&p.imm, "\xca\xfe\x00", 3);
			((uint8_t *)&p.imm)[3] = (uint8_t)k;
			p.deth_qkey = 0x80010000u + k;
			p.deth_sqpn = 0x000300u + k;
			p.xrc_srqn = 0x000400u + k;
			for (uint32_t j = 0; j < paylen; j++)
				pay[j] = (uint8_t)('a' + (j + k) % 26);

			len = qrnic_wire_build(&p, pay, paylen, frame, sizeof(frame));
			if (!len || qrnic_wire_parse(frame, len, &chk) != QRNIC_WIRE_OK) {
				fprintf(stderr, "build/parse failed for %s\n", qrnic_opcode_name(op));
				return 1;
			}
			if (qrnic_pcap_write(f, frame, len, 1700000000ull * 1000000000u + 1000ull * ++idx, err,
					     sizeof(err))) {
				fprintf(stderr, "%s\n", err);
				return 2;
			}
			print_json(idx, &chk, len, true);
		}
	}
	/* last: RC_WRITE_ONLY over IPv4 with its ICRC corrupted (the 4-byte
	 * frame from the IPv4 loop is rebuilt, then one ICRC byte flipped) */
	memset(&p, 0, sizeof(p));
	memcpy(p.dmac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(p.smac, "\x02\x00\x00\x00\x00\x01", 6);
	{
		uint8_t a[4] = { 192, 168, 100, 1 }, b[4] = { 192, 168, 100, 2 };

		qrnic_gid_set_v4mapped(p.sgid, a);
		qrnic_gid_set_v4mapped(p.dgid, b);
	}
	p.hop_limit = 64;
	p.udp_sport = 50000;
	p.opcode = QRNIC_OP_RC_WRITE_ONLY;
	p.ackreq = true;
	p.pkey = 0xffff;
	p.dqpn = 0xbad0cc;
	p.psn = 0x00dead;
	p.reth_va = 0x00007f00deadbeefull;
	p.reth_rkey = 0xbadc0de;
	p.reth_len = 16;
	memcpy(pay, "corrupted-icrc!!", 16);
	len = qrnic_wire_build(&p, pay, 16, frame, sizeof(frame));
	r = qrnic_wire_parse(frame, len, &chk);
	frame[len - 2] ^= 0x5a;
	if (!len || r != QRNIC_WIRE_OK || qrnic_wire_parse(frame, len, &p) != QRNIC_WIRE_E_ICRC) {
		fprintf(stderr, "corrupted frame not rejected\n");
		return 1;
	}
	if (qrnic_pcap_write(f, frame, len, 1700000000ull * 1000000000u + 1000ull * ++idx, err,
			     sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	print_json(idx, &chk, len, false);
	return qrnic_pcap_close(f) ? 2 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "roundtrip") == 0)
		return mode_roundtrip();
	if (argc >= 3 && strcmp(argv[1], "pcap") == 0)
		return mode_pcap(argv[2]);
	fprintf(stderr, "usage: %s roundtrip | pcap OUT.pcap\n", argv[0]);
	return 2;
}
