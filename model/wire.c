/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic wire format: RoCEv2 frame build and parse (the ICRC: crc.c).  See
 * qrnic_wire.h.
 *
 * Every multi-byte field is read and written byte by byte (big endian on
 * the wire, except the ICRC which is little endian), so the code is
 * independent of host endianness and alignment.  No allocation, no mutable
 * globals.
 */
#include <stdlib.h>
#include <string.h>

#include "qrnic_bytes.h"
#include "qrnic_wire.h"

#define ETH_P_IPV4	0x0800
#define ETH_P_IPV6	0x86dd
#define IPPROTO_UDP_	17

/* ---- Internet checksum ---------------------------------------------------- */
/* Add n bytes (starting at an even offset of the checksummed stream) to a
 * ones' complement accumulator.  32-bit big-endian words are summed into 64
 * bits; the final fold reduces mod 0xffff, which equals the 16-bit sum. */
static uint64_t csum_add(uint64_t sum, const uint8_t *b, size_t n)
{
	while (n >= 4) {
		sum += rd32(b);
		b += 4;
		n -= 4;
	}
	if (n >= 2) {
		sum += rd16(b);
		b += 2;
		n -= 2;
	}
	if (n)
		sum += (uint32_t)b[0] << 8;
	return sum;
}

static uint16_t csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Ones' complement sum of the UDP pseudo header + UDP header + data. */
static uint16_t udp_sum(const uint8_t *ip, bool ipv6, const uint8_t *udp, size_t udp_len)
{
	uint64_t sum;

	if (ipv6)
		sum = csum_add(0, ip + 8, 32);		/* src + dst */
	else
		sum = csum_add(0, ip + 12, 8);
	sum += (uint32_t)udp_len + IPPROTO_UDP_;
	return csum_fold(csum_add(sum, udp, udp_len));
}

/* ---- Opcodes -------------------------------------------------------------- */
#define F_ONLY		(QRNIC_HDR_FIRST | QRNIC_HDR_LAST)
#define F_RQ		QRNIC_HDR_REQUEST
#define F_RS		QRNIC_HDR_RESPONSE
#define F_PL		QRNIC_HDR_PAYLOAD
#define X		QRNIC_HDR_XRCETH

static const struct {
	uint32_t flags;
	const char *name;
} op_tab[256] = {
	[QRNIC_OP_RC_SEND_FIRST] = { F_RQ | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_FIRST, "RC_SEND_FIRST" },
	[QRNIC_OP_RC_SEND_MIDDLE] = { F_RQ | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_MIDDLE, "RC_SEND_MIDDLE" },
	[QRNIC_OP_RC_SEND_LAST] = { F_RQ | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_LAST, "RC_SEND_LAST" },
	[QRNIC_OP_RC_SEND_LAST_IMM] = { F_RQ | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_LAST | QRNIC_HDR_IMMDT,
					"RC_SEND_LAST_IMM" },
	[QRNIC_OP_RC_SEND_ONLY] = { F_RQ | QRNIC_HDR_SEND | F_PL | F_ONLY, "RC_SEND_ONLY" },
	[QRNIC_OP_RC_SEND_ONLY_IMM] = { F_RQ | QRNIC_HDR_SEND | F_PL | F_ONLY | QRNIC_HDR_IMMDT,
					"RC_SEND_ONLY_IMM" },
	[QRNIC_OP_RC_WRITE_FIRST] = { F_RQ | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_FIRST | QRNIC_HDR_RETH,
				      "RC_WRITE_FIRST" },
	[QRNIC_OP_RC_WRITE_MIDDLE] = { F_RQ | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_MIDDLE, "RC_WRITE_MIDDLE" },
	[QRNIC_OP_RC_WRITE_LAST] = { F_RQ | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_LAST, "RC_WRITE_LAST" },
	[QRNIC_OP_RC_WRITE_LAST_IMM] = { F_RQ | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_LAST | QRNIC_HDR_IMMDT,
					 "RC_WRITE_LAST_IMM" },
	[QRNIC_OP_RC_WRITE_ONLY] = { F_RQ | QRNIC_HDR_WRITE | F_PL | F_ONLY | QRNIC_HDR_RETH,
				     "RC_WRITE_ONLY" },
	[QRNIC_OP_RC_WRITE_ONLY_IMM] = { F_RQ | QRNIC_HDR_WRITE | F_PL | F_ONLY | QRNIC_HDR_RETH |
					 QRNIC_HDR_IMMDT, "RC_WRITE_ONLY_IMM" },
	[QRNIC_OP_RC_READ_REQ] = { F_RQ | QRNIC_HDR_READ | F_ONLY | QRNIC_HDR_RETH, "RC_READ_REQ" },
	[QRNIC_OP_RC_READ_RESP_FIRST] = { F_RS | QRNIC_HDR_READ | F_PL | QRNIC_HDR_FIRST | QRNIC_HDR_AETH,
					  "RC_READ_RESP_FIRST" },
	[QRNIC_OP_RC_READ_RESP_MIDDLE] = { F_RS | QRNIC_HDR_READ | F_PL | QRNIC_HDR_MIDDLE,
					   "RC_READ_RESP_MIDDLE" },
	[QRNIC_OP_RC_READ_RESP_LAST] = { F_RS | QRNIC_HDR_READ | F_PL | QRNIC_HDR_LAST | QRNIC_HDR_AETH,
					 "RC_READ_RESP_LAST" },
	[QRNIC_OP_RC_READ_RESP_ONLY] = { F_RS | QRNIC_HDR_READ | F_PL | F_ONLY | QRNIC_HDR_AETH,
					 "RC_READ_RESP_ONLY" },
	[QRNIC_OP_RC_ACK] = { F_RS | F_ONLY | QRNIC_HDR_AETH, "RC_ACK" },
	[QRNIC_OP_RC_ATOMIC_ACK] = { F_RS | QRNIC_HDR_ATOMIC | F_ONLY | QRNIC_HDR_AETH |
				     QRNIC_HDR_ATOMICACKETH, "RC_ATOMIC_ACK" },
	[QRNIC_OP_RC_CMP_SWAP] = { F_RQ | QRNIC_HDR_ATOMIC | F_ONLY | QRNIC_HDR_ATOMICETH, "RC_CMP_SWAP" },
	[QRNIC_OP_RC_FETCH_ADD] = { F_RQ | QRNIC_HDR_ATOMIC | F_ONLY | QRNIC_HDR_ATOMICETH, "RC_FETCH_ADD" },
	[QRNIC_OP_RC_SEND_LAST_INV] = { F_RQ | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_LAST | QRNIC_HDR_IETH,
					"RC_SEND_LAST_INV" },
	[QRNIC_OP_RC_SEND_ONLY_INV] = { F_RQ | QRNIC_HDR_SEND | F_PL | F_ONLY | QRNIC_HDR_IETH,
					"RC_SEND_ONLY_INV" },
	/* UC: the SEND and WRITE opcodes of RC (IBTA 9.2, transport 001) */
	[QRNIC_OP_UC_SEND_FIRST] = { F_RQ | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_FIRST, "UC_SEND_FIRST" },
	[QRNIC_OP_UC_SEND_MIDDLE] = { F_RQ | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_MIDDLE, "UC_SEND_MIDDLE" },
	[QRNIC_OP_UC_SEND_LAST] = { F_RQ | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_LAST, "UC_SEND_LAST" },
	[QRNIC_OP_UC_SEND_LAST_IMM] = { F_RQ | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_LAST | QRNIC_HDR_IMMDT,
					"UC_SEND_LAST_IMM" },
	[QRNIC_OP_UC_SEND_ONLY] = { F_RQ | QRNIC_HDR_SEND | F_PL | F_ONLY, "UC_SEND_ONLY" },
	[QRNIC_OP_UC_SEND_ONLY_IMM] = { F_RQ | QRNIC_HDR_SEND | F_PL | F_ONLY | QRNIC_HDR_IMMDT,
					"UC_SEND_ONLY_IMM" },
	[QRNIC_OP_UC_WRITE_FIRST] = { F_RQ | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_FIRST | QRNIC_HDR_RETH,
				      "UC_WRITE_FIRST" },
	[QRNIC_OP_UC_WRITE_MIDDLE] = { F_RQ | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_MIDDLE, "UC_WRITE_MIDDLE" },
	[QRNIC_OP_UC_WRITE_LAST] = { F_RQ | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_LAST, "UC_WRITE_LAST" },
	[QRNIC_OP_UC_WRITE_LAST_IMM] = { F_RQ | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_LAST | QRNIC_HDR_IMMDT,
					 "UC_WRITE_LAST_IMM" },
	[QRNIC_OP_UC_WRITE_ONLY] = { F_RQ | QRNIC_HDR_WRITE | F_PL | F_ONLY | QRNIC_HDR_RETH,
				     "UC_WRITE_ONLY" },
	[QRNIC_OP_UC_WRITE_ONLY_IMM] = { F_RQ | QRNIC_HDR_WRITE | F_PL | F_ONLY | QRNIC_HDR_RETH |
					 QRNIC_HDR_IMMDT, "UC_WRITE_ONLY_IMM" },
	[QRNIC_OP_UD_SEND_ONLY] = { F_RQ | QRNIC_HDR_SEND | F_PL | F_ONLY | QRNIC_HDR_DETH, "UD_SEND_ONLY" },
	[QRNIC_OP_UD_SEND_ONLY_IMM] = { F_RQ | QRNIC_HDR_SEND | F_PL | F_ONLY | QRNIC_HDR_DETH |
					QRNIC_HDR_IMMDT, "UD_SEND_ONLY_IMM" },
	/* XRC (IBTA 9.2, transport 101): the RC opcodes; requests carry an XRCETH */
	[QRNIC_OP_XRC | QRNIC_OP_RC_SEND_FIRST] = { F_RQ | X | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_FIRST, "XRC_SEND_FIRST" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_SEND_MIDDLE] = { F_RQ | X | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_MIDDLE, "XRC_SEND_MIDDLE" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_SEND_LAST] = { F_RQ | X | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_LAST, "XRC_SEND_LAST" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_SEND_LAST_IMM] = { F_RQ | X | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_LAST | QRNIC_HDR_IMMDT,
					"XRC_SEND_LAST_IMM" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_SEND_ONLY] = { F_RQ | X | QRNIC_HDR_SEND | F_PL | F_ONLY, "XRC_SEND_ONLY" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_SEND_ONLY_IMM] = { F_RQ | X | QRNIC_HDR_SEND | F_PL | F_ONLY | QRNIC_HDR_IMMDT,
					"XRC_SEND_ONLY_IMM" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_FIRST] = { F_RQ | X | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_FIRST | QRNIC_HDR_RETH,
				      "XRC_WRITE_FIRST" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_MIDDLE] = { F_RQ | X | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_MIDDLE, "XRC_WRITE_MIDDLE" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_LAST] = { F_RQ | X | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_LAST, "XRC_WRITE_LAST" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_LAST_IMM] = { F_RQ | X | QRNIC_HDR_WRITE | F_PL | QRNIC_HDR_LAST | QRNIC_HDR_IMMDT,
					 "XRC_WRITE_LAST_IMM" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_ONLY] = { F_RQ | X | QRNIC_HDR_WRITE | F_PL | F_ONLY | QRNIC_HDR_RETH,
				     "XRC_WRITE_ONLY" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_WRITE_ONLY_IMM] = { F_RQ | X | QRNIC_HDR_WRITE | F_PL | F_ONLY | QRNIC_HDR_RETH |
					 QRNIC_HDR_IMMDT, "XRC_WRITE_ONLY_IMM" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_READ_REQ] = { F_RQ | X | QRNIC_HDR_READ | F_ONLY | QRNIC_HDR_RETH, "XRC_READ_REQ" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_READ_RESP_FIRST] = { F_RS | QRNIC_HDR_READ | F_PL | QRNIC_HDR_FIRST | QRNIC_HDR_AETH,
					  "XRC_READ_RESP_FIRST" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_READ_RESP_MIDDLE] = { F_RS | QRNIC_HDR_READ | F_PL | QRNIC_HDR_MIDDLE,
					   "XRC_READ_RESP_MIDDLE" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_READ_RESP_LAST] = { F_RS | QRNIC_HDR_READ | F_PL | QRNIC_HDR_LAST | QRNIC_HDR_AETH,
					 "XRC_READ_RESP_LAST" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_READ_RESP_ONLY] = { F_RS | QRNIC_HDR_READ | F_PL | F_ONLY | QRNIC_HDR_AETH,
					 "XRC_READ_RESP_ONLY" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_ACK] = { F_RS | F_ONLY | QRNIC_HDR_AETH, "XRC_ACK" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_ATOMIC_ACK] = { F_RS | QRNIC_HDR_ATOMIC | F_ONLY | QRNIC_HDR_AETH |
				     QRNIC_HDR_ATOMICACKETH, "XRC_ATOMIC_ACK" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_CMP_SWAP] = { F_RQ | X | QRNIC_HDR_ATOMIC | F_ONLY | QRNIC_HDR_ATOMICETH, "XRC_CMP_SWAP" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_FETCH_ADD] = { F_RQ | X | QRNIC_HDR_ATOMIC | F_ONLY | QRNIC_HDR_ATOMICETH, "XRC_FETCH_ADD" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_SEND_LAST_INV] = { F_RQ | X | QRNIC_HDR_SEND | F_PL | QRNIC_HDR_LAST | QRNIC_HDR_IETH,
					"XRC_SEND_LAST_INV" },
	[QRNIC_OP_XRC | QRNIC_OP_RC_SEND_ONLY_INV] = { F_RQ | X | QRNIC_HDR_SEND | F_PL | F_ONLY | QRNIC_HDR_IETH,
					"XRC_SEND_ONLY_INV" },
	/* RoCEv2 CNP: neither request nor response; 16 reserved bytes */
	[QRNIC_OP_CNP] = { F_ONLY | QRNIC_HDR_CNP, "CNP" },
};

uint32_t qrnic_opcode_flags(uint8_t opcode)
{
	return op_tab[opcode].flags;
}

const char *qrnic_opcode_name(uint8_t opcode)
{
	return op_tab[opcode].name ? op_tab[opcode].name : "UNKNOWN";
}

/* Bytes of extension headers by the QRNIC_HDR_* extension bits (the low
 * six): a table, as ext_len() runs several times per packet. */
#define QRNIC_HDR_EXT_MASK	(QRNIC_HDR_RETH | QRNIC_HDR_AETH | QRNIC_HDR_ATOMICETH | \
				 QRNIC_HDR_ATOMICACKETH | QRNIC_HDR_IMMDT | QRNIC_HDR_DETH)
#define EXT(f)	(((f) & QRNIC_HDR_RETH ? QRNIC_RETH_LEN : 0) +			\
		 ((f) & QRNIC_HDR_AETH ? QRNIC_AETH_LEN : 0) +			\
		 ((f) & QRNIC_HDR_ATOMICETH ? QRNIC_ATOMICETH_LEN : 0) +		\
		 ((f) & QRNIC_HDR_ATOMICACKETH ? QRNIC_ATOMICACKETH_LEN : 0) +	\
		 ((f) & QRNIC_HDR_IMMDT ? QRNIC_IMMDT_LEN : 0) +			\
		 ((f) & QRNIC_HDR_DETH ? QRNIC_DETH_LEN : 0))
#define EXT4(b)		EXT(b), EXT((b) + 1), EXT((b) + 2), EXT((b) + 3)
#define EXT16(b)	EXT4(b), EXT4((b) + 4), EXT4((b) + 8), EXT4((b) + 12)
_Static_assert(QRNIC_HDR_EXT_MASK == 63, "extension header bits are the low six");
static const uint8_t ext_tab[64] = { EXT16(0), EXT16(16), EXT16(32), EXT16(48) };
#undef EXT16
#undef EXT4
#undef EXT

static inline uint32_t ext_len(uint32_t fl)
{
	return ext_tab[fl & QRNIC_HDR_EXT_MASK] + ((fl & QRNIC_HDR_IETH) ? QRNIC_IETH_LEN : 0) +
	       ((fl & QRNIC_HDR_XRCETH) ? QRNIC_XRCETH_LEN : 0) +
	       ((fl & QRNIC_HDR_CNP) ? QRNIC_CNP_RSVD_LEN : 0);
}

uint32_t qrnic_opcode_hdr_len(uint8_t opcode)
{
	uint32_t fl = qrnic_opcode_flags(opcode);

	return fl ? QRNIC_BTH_LEN + ext_len(fl) : 0;
}

/* UDP length (header .. ICRC) for an opcode and payload, 0 if impossible. */
static uint32_t udp_len_for(bool ipv6, uint8_t opcode, uint32_t paylen)
{
	uint32_t fl = qrnic_opcode_flags(opcode);
	uint64_t n;

	if (!fl || (paylen && !(fl & QRNIC_HDR_PAYLOAD)))
		return 0;
	n = (uint64_t)QRNIC_UDP_HLEN + QRNIC_BTH_LEN + ext_len(fl) +
	    (((uint64_t)paylen + 3) & ~(uint64_t)3) + QRNIC_ICRC_LEN;
	/* the IPv4 total length / IPv6 payload length / UDP length are 16 bits */
	if (n + (ipv6 ? 0 : QRNIC_IPV4_HLEN) > 0xffff)
		return 0;
	return (uint32_t)n;
}

size_t qrnic_wire_frame_len(bool ipv6, uint8_t opcode, uint32_t paylen)
{
	uint32_t u = udp_len_for(ipv6, opcode, paylen);

	return u ? (size_t)QRNIC_ETH_HLEN + (ipv6 ? QRNIC_IPV6_HLEN : QRNIC_IPV4_HLEN) + u : 0;
}

void qrnic_wire_pkt_received(const struct qrnic_pkt *p, const uint8_t *payload, uint32_t paylen,
			     struct qrnic_pkt *out)
{
	uint32_t fl = qrnic_opcode_flags(p->opcode);

	*out = *p;
	if (!p->ipv6) {
		qrnic_gid_set_v4mapped(out->sgid, p->sgid + 12);
		qrnic_gid_set_v4mapped(out->dgid, p->dgid + 12);
		out->flow_label = 0;
	}
	out->flow_label &= 0xfffff;
	out->tver = 0;
	out->dqpn &= 0xffffff;
	out->psn &= 0xffffff;
	out->padcnt = (uint8_t)((4 - (paylen & 3)) & 3);
	if (!(fl & QRNIC_HDR_DETH))
		out->deth_qkey = 0, out->deth_sqpn = 0;
	out->deth_sqpn &= 0xffffff;
	if (!(fl & QRNIC_HDR_RETH))
		out->reth_va = 0, out->reth_rkey = 0, out->reth_len = 0;
	if (!(fl & QRNIC_HDR_AETH))
		out->aeth_syndrome = 0, out->aeth_msn = 0;
	out->aeth_msn &= 0xffffff;
	if (!(fl & QRNIC_HDR_ATOMICETH))
		out->atomic_va = 0, out->atomic_rkey = 0, out->atomic_swap_add = 0, out->atomic_cmp = 0;
	if (!(fl & QRNIC_HDR_ATOMICACKETH))
		out->atomic_ack_orig = 0;
	if (!(fl & QRNIC_HDR_IMMDT))
		out->imm = 0;
	if (!(fl & QRNIC_HDR_IETH))
		out->ieth_rkey = 0;
	out->xrc_srqn = (fl & QRNIC_HDR_XRCETH) ? out->xrc_srqn & 0xffffff : 0;
	if (fl & QRNIC_HDR_PAYLOAD) {
		out->payload = payload;
		out->paylen = paylen;
	} else {
		out->payload = NULL;
		out->paylen = 0;
	}
}

bool qrnic_gid_is_v4mapped(const uint8_t gid[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(gid, pfx, sizeof(pfx)) == 0;
}

void qrnic_gid_set_v4mapped(uint8_t gid[16], const uint8_t ip4[4])
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* two 8-byte stores: the GID is compared 8 bytes at a time right
	 * after (gid_is_local), which stalls on byte-wise stores */
	uint64_t lo = 0, hi;
	uint32_t a;

	memcpy(&a, ip4, 4);
	hi = 0xffffull << 16 | (uint64_t)a << 32;	/* bytes 8..15: 0 0 ff ff a b c d */
	memcpy(gid, &lo, 8);
	memcpy(gid + 8, &hi, 8);
#else
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, ip4, 4);
#endif
}

const char *qrnic_wire_strerror(int err)
{
	switch (err) {
	case QRNIC_WIRE_OK: return "OK";
	case QRNIC_WIRE_E_NOT_ROCE: return "NOT_ROCE";
	case QRNIC_WIRE_E_TRUNCATED: return "TRUNCATED";
	case QRNIC_WIRE_E_BAD_IP: return "BAD_IP";
	case QRNIC_WIRE_E_BAD_UDP: return "BAD_UDP";
	case QRNIC_WIRE_E_BAD_BTH: return "BAD_BTH";
	case QRNIC_WIRE_E_BAD_OPCODE: return "BAD_OPCODE";
	case QRNIC_WIRE_E_ICRC: return "ICRC";
	default: return "UNKNOWN";
	}
}

size_t qrnic_wire_payload_off(bool ipv6, uint8_t opcode)
{
	uint32_t fl = qrnic_opcode_flags(opcode);

	if (!fl)
		return 0;
	return QRNIC_ETH_HLEN + (ipv6 ? QRNIC_IPV6_HLEN : QRNIC_IPV4_HLEN) + QRNIC_UDP_HLEN +
	       QRNIC_BTH_LEN + ext_len(fl);
}

/* ---- Build ---------------------------------------------------------------- */
size_t qrnic_wire_build(const struct qrnic_pkt *p, const void *payload, uint32_t paylen,
			uint8_t *buf, size_t bufsz)
{
	return qrnic_wire_build_icrc(p, payload, paylen, buf, bufsz, true);
}

size_t qrnic_wire_build_icrc(const struct qrnic_pkt *p, const void *payload, uint32_t paylen,
			     uint8_t *buf, size_t bufsz, bool icrc)
{
	uint32_t fl, udp_len, pad;
	size_t iphl, total;
	uint8_t *ip, *udp, *h;

	if (!p || !buf)
		return 0;
	if (paylen && !payload)
		return 0;
	udp_len = udp_len_for(p->ipv6, p->opcode, paylen);
	if (!udp_len)
		return 0;
	fl = qrnic_opcode_flags(p->opcode);
	iphl = p->ipv6 ? QRNIC_IPV6_HLEN : QRNIC_IPV4_HLEN;
	total = QRNIC_ETH_HLEN + iphl + udp_len;
	if (total > bufsz)
		return 0;
	pad = (4 - (paylen & 3)) & 3;

	/* Ethernet */
	memcpy(buf, p->dmac, 6);
	memcpy(buf + 6, p->smac, 6);
	wr16(buf + 12, p->ipv6 ? ETH_P_IPV6 : ETH_P_IPV4);

	/* IP */
	ip = buf + QRNIC_ETH_HLEN;
	if (p->ipv6) {
		uint32_t fl_lbl = p->flow_label & 0xfffff;

		wr32(ip, (6u << 28) | ((uint32_t)p->traffic_class << 20) | fl_lbl);
		wr16(ip + 4, udp_len);
		ip[6] = IPPROTO_UDP_;
		ip[7] = p->hop_limit;
		memcpy(ip + 8, p->sgid, 16);
		memcpy(ip + 24, p->dgid, 16);
	} else {
		/* The header checksum is summed from the field values, the same
		 * 32-bit words csum_add would read back: reading back bytes just
		 * stored one by one stalls on store forwarding. */
		uint32_t w0 = 0x45u << 24 | (uint32_t)p->traffic_class << 16 |
			      ((QRNIC_IPV4_HLEN + udp_len) & 0xffff);
		uint32_t w1 = 0x4000;				/* id 0, DF, offset 0 */
		uint32_t w2 = (uint32_t)p->hop_limit << 24 | (uint32_t)IPPROTO_UDP_ << 16;
		uint64_t sum = (uint64_t)w0 + w1 + w2 + rd32(p->sgid + 12) + rd32(p->dgid + 12);

		ip[0] = 0x45;
		ip[1] = p->traffic_class;
		wr16(ip + 2, QRNIC_IPV4_HLEN + udp_len);
		wr16(ip + 4, 0);		/* id */
		wr16(ip + 6, 0x4000);		/* DF, offset 0 */
		ip[8] = p->hop_limit;
		ip[9] = IPPROTO_UDP_;
		memcpy(ip + 12, p->sgid + 12, 4);
		memcpy(ip + 16, p->dgid + 12, 4);
		wr16(ip + 10, (uint16_t)~csum_fold(sum));
	}

	/* UDP */
	udp = ip + iphl;
	wr16(udp, p->udp_sport);
	wr16(udp + 2, QRNIC_ROCEV2_UDP_PORT);
	wr16(udp + 4, udp_len);
	wr16(udp + 6, 0);

	/* BTH */
	h = udp + QRNIC_UDP_HLEN;
	h[0] = p->opcode;
	h[1] = (uint8_t)((p->se ? 0x80 : 0) | (p->migreq ? 0x40 : 0) | (pad << 4));	/* tver 0 */
	wr16(h + 2, p->pkey);
	h[4] = (uint8_t)((p->fecn ? 0x80 : 0) | (p->becn ? 0x40 : 0));
	wr24(h + 5, p->dqpn);
	h[8] = p->ackreq ? 0x80 : 0;
	wr24(h + 9, p->psn);
	h += QRNIC_BTH_LEN;

	/* extension headers, in IBTA order */
	if (fl & QRNIC_HDR_DETH) {
		wr32(h, p->deth_qkey);
		h[4] = 0;
		wr24(h + 5, p->deth_sqpn);
		h += QRNIC_DETH_LEN;
	}
	if (fl & QRNIC_HDR_XRCETH) {
		h[0] = 0;
		wr24(h + 1, p->xrc_srqn);
		h += QRNIC_XRCETH_LEN;
	}
	if (fl & QRNIC_HDR_RETH) {
		wr64(h, p->reth_va);
		wr32(h + 8, p->reth_rkey);
		wr32(h + 12, p->reth_len);
		h += QRNIC_RETH_LEN;
	}
	if (fl & QRNIC_HDR_AETH) {
		h[0] = p->aeth_syndrome;
		wr24(h + 1, p->aeth_msn);
		h += QRNIC_AETH_LEN;
	}
	if (fl & QRNIC_HDR_ATOMICETH) {
		wr64(h, p->atomic_va);
		wr32(h + 8, p->atomic_rkey);
		wr64(h + 12, p->atomic_swap_add);
		wr64(h + 20, p->atomic_cmp);
		h += QRNIC_ATOMICETH_LEN;
	}
	if (fl & QRNIC_HDR_ATOMICACKETH) {
		wr64(h, p->atomic_ack_orig);
		h += QRNIC_ATOMICACKETH_LEN;
	}
	if (fl & QRNIC_HDR_IMMDT) {
		memcpy(h, &p->imm, 4);
		h += QRNIC_IMMDT_LEN;
	}
	if (fl & QRNIC_HDR_IETH) {
		wr32(h, p->ieth_rkey);
		h += QRNIC_IETH_LEN;
	}
	if (fl & QRNIC_HDR_CNP) {
		memset(h, 0, QRNIC_CNP_RSVD_LEN);
		h += QRNIC_CNP_RSVD_LEN;
	}

	/* payload + pad (nothing to copy when it was read in place) */
	if (paylen && h != (const uint8_t *)payload)
		memmove(h, payload, paylen);
	h += paylen;
	memset(h, 0, pad);
	h += pad;

	/* ICRC, then (IPv6) the UDP checksum, which covers the ICRC */
	wr32le(h, icrc ? qrnic_icrc_ip(ip, p->ipv6, iphl + udp_len) : 0);
	if (p->ipv6) {
		uint16_t c = (uint16_t)~udp_sum(ip, true, udp, udp_len);

		wr16(udp + 6, c ? c : 0xffff);
	}
	return total;
}

/* ---- Parse ---------------------------------------------------------------- */
int qrnic_wire_parse(const uint8_t *frame, size_t len, struct qrnic_pkt *p)
{
	return qrnic_wire_parse_icrc(frame, len, p, true);
}

int qrnic_wire_parse_icrc(const uint8_t *frame, size_t len, struct qrnic_pkt *p, bool icrc)
{
	const uint8_t *ip, *udp, *h;
	size_t avail, iphl, ip_len, udp_len, l4, data;
	uint32_t fl, hdr, pad;
	bool ipv6;

	if (!p)
		return QRNIC_WIRE_E_TRUNCATED;
	memset(p, 0, sizeof(*p));
	if (!frame || len < QRNIC_ETH_HLEN)
		return QRNIC_WIRE_E_TRUNCATED;
	ip = frame + QRNIC_ETH_HLEN;
	avail = len - QRNIC_ETH_HLEN;

	switch (rd16(frame + 12)) {
	case ETH_P_IPV4: {
		size_t ihl;
		uint16_t frag;

		ipv6 = false;
		if (avail < QRNIC_IPV4_HLEN)
			return QRNIC_WIRE_E_TRUNCATED;
		if ((ip[0] >> 4) != 4)
			return QRNIC_WIRE_E_BAD_IP;
		if (ip[9] != IPPROTO_UDP_)
			return QRNIC_WIRE_E_NOT_ROCE;
		frag = rd16(ip + 6);
		if (frag & 0x1fff)		/* non-first fragment: no UDP header */
			return QRNIC_WIRE_E_NOT_ROCE;
		ihl = (size_t)(ip[0] & 0xf) * 4;
		if (ihl < QRNIC_IPV4_HLEN)
			return QRNIC_WIRE_E_BAD_IP;
		if (avail < ihl + 4)
			return QRNIC_WIRE_E_TRUNCATED;
		if (rd16(ip + ihl + 2) != QRNIC_ROCEV2_UDP_PORT)
			return QRNIC_WIRE_E_NOT_ROCE;
		/* RoCEv2 from here on */
		if (ihl != QRNIC_IPV4_HLEN || (frag & 0x2000))
			return QRNIC_WIRE_E_BAD_IP;
		if (csum_fold(csum_add(0, ip, QRNIC_IPV4_HLEN)) != 0xffff)
			return QRNIC_WIRE_E_BAD_IP;
		ip_len = rd16(ip + 2);
		if (ip_len < QRNIC_IPV4_HLEN + QRNIC_UDP_HLEN)
			return QRNIC_WIRE_E_BAD_IP;
		if (ip_len > avail)
			return QRNIC_WIRE_E_TRUNCATED;
		iphl = QRNIC_IPV4_HLEN;
		break;
	}
	case ETH_P_IPV6:
		ipv6 = true;
		if (avail < QRNIC_IPV6_HLEN)
			return QRNIC_WIRE_E_TRUNCATED;
		if ((ip[0] >> 4) != 6)
			return QRNIC_WIRE_E_BAD_IP;
		if (ip[6] != IPPROTO_UDP_)	/* extension headers are not used by RoCEv2 */
			return QRNIC_WIRE_E_NOT_ROCE;
		if (avail < QRNIC_IPV6_HLEN + 4)
			return QRNIC_WIRE_E_TRUNCATED;
		if (rd16(ip + QRNIC_IPV6_HLEN + 2) != QRNIC_ROCEV2_UDP_PORT)
			return QRNIC_WIRE_E_NOT_ROCE;
		ip_len = (size_t)QRNIC_IPV6_HLEN + rd16(ip + 4);
		if (ip_len < QRNIC_IPV6_HLEN + QRNIC_UDP_HLEN)
			return QRNIC_WIRE_E_BAD_IP;
		if (ip_len > avail)
			return QRNIC_WIRE_E_TRUNCATED;
		iphl = QRNIC_IPV6_HLEN;
		break;
	default:	/* other ethertypes, 802.1Q / 802.1ad tagged frames */
		return QRNIC_WIRE_E_NOT_ROCE;
	}

	/* UDP */
	udp = ip + iphl;
	udp_len = rd16(udp + 4);
	if (udp_len != ip_len - iphl)
		return QRNIC_WIRE_E_BAD_UDP;
	if (rd16(udp + 6) != 0 && udp_sum(ip, ipv6, udp, udp_len) != 0xffff)
		return QRNIC_WIRE_E_BAD_UDP;

	/* BTH */
	l4 = udp_len - QRNIC_UDP_HLEN;
	h = udp + QRNIC_UDP_HLEN;
	if (l4 < QRNIC_BTH_LEN + QRNIC_ICRC_LEN)
		return QRNIC_WIRE_E_TRUNCATED;
	if (h[1] & 0x0f)
		return QRNIC_WIRE_E_BAD_BTH;
	fl = qrnic_opcode_flags(h[0]);
	if (!fl)
		return QRNIC_WIRE_E_BAD_OPCODE;
	hdr = QRNIC_BTH_LEN + ext_len(fl);
	if (l4 < hdr + QRNIC_ICRC_LEN)
		return QRNIC_WIRE_E_TRUNCATED;
	data = l4 - hdr - QRNIC_ICRC_LEN;	/* payload + pad */
	pad = (h[1] >> 4) & 3;
	if (fl & QRNIC_HDR_PAYLOAD) {
		if ((data & 3) || pad > data)
			return QRNIC_WIRE_E_BAD_BTH;
	} else if (data || pad) {
		return QRNIC_WIRE_E_BAD_BTH;
	}

	/* ICRC.  On failure the destination is still reported, so the
	 * caller can tell RoCE traffic for someone else (Ethernet path) from
	 * a corrupted packet for us. */
	if (icrc && qrnic_icrc_ip(ip, ipv6, ip_len) != rd32le(ip + ip_len - QRNIC_ICRC_LEN)) {
		p->ipv6 = ipv6;
		if (ipv6)
			memcpy(p->dgid, ip + 24, 16);
		else
			qrnic_gid_set_v4mapped(p->dgid, ip + 16);
		return QRNIC_WIRE_E_ICRC;
	}

	/* Accepted: fill in */
	memcpy(p->dmac, frame, 6);
	memcpy(p->smac, frame + 6, 6);
	p->ipv6 = ipv6;
	if (ipv6) {
		uint32_t w = rd32(ip);

		p->traffic_class = (uint8_t)(w >> 20);
		p->flow_label = w & 0xfffff;
		p->hop_limit = ip[7];
		memcpy(p->sgid, ip + 8, 16);
		memcpy(p->dgid, ip + 24, 16);
	} else {
		p->traffic_class = ip[1];
		p->hop_limit = ip[8];
		qrnic_gid_set_v4mapped(p->sgid, ip + 12);
		qrnic_gid_set_v4mapped(p->dgid, ip + 16);
	}
	p->udp_sport = rd16(udp);

	p->opcode = h[0];
	p->se = (h[1] & 0x80) != 0;
	p->migreq = (h[1] & 0x40) != 0;
	p->padcnt = (uint8_t)pad;
	p->tver = 0;
	p->pkey = rd16(h + 2);
	p->fecn = (h[4] & 0x80) != 0;
	p->becn = (h[4] & 0x40) != 0;
	p->dqpn = rd24(h + 5);
	p->ackreq = (h[8] & 0x80) != 0;
	p->psn = rd24(h + 9);
	h += QRNIC_BTH_LEN;

	if (fl & QRNIC_HDR_DETH) {
		p->deth_qkey = rd32(h);
		p->deth_sqpn = rd24(h + 5);
		h += QRNIC_DETH_LEN;
	}
	if (fl & QRNIC_HDR_XRCETH) {
		p->xrc_srqn = rd24(h + 1);	/* [31:24] reserved: ignored */
		h += QRNIC_XRCETH_LEN;
	}
	if (fl & QRNIC_HDR_RETH) {
		p->reth_va = rd64(h);
		p->reth_rkey = rd32(h + 8);
		p->reth_len = rd32(h + 12);
		h += QRNIC_RETH_LEN;
	}
	if (fl & QRNIC_HDR_AETH) {
		p->aeth_syndrome = h[0];
		p->aeth_msn = rd24(h + 1);
		h += QRNIC_AETH_LEN;
	}
	if (fl & QRNIC_HDR_ATOMICETH) {
		p->atomic_va = rd64(h);
		p->atomic_rkey = rd32(h + 8);
		p->atomic_swap_add = rd64(h + 12);
		p->atomic_cmp = rd64(h + 20);
		h += QRNIC_ATOMICETH_LEN;
	}
	if (fl & QRNIC_HDR_ATOMICACKETH) {
		p->atomic_ack_orig = rd64(h);
		h += QRNIC_ATOMICACKETH_LEN;
	}
	if (fl & QRNIC_HDR_IMMDT) {
		memcpy(&p->imm, h, 4);
		h += QRNIC_IMMDT_LEN;
	}
	if (fl & QRNIC_HDR_IETH) {
		p->ieth_rkey = rd32(h);
		h += QRNIC_IETH_LEN;
	}
	if (fl & QRNIC_HDR_CNP)
		h += QRNIC_CNP_RSVD_LEN;	/* reserved: not checked */
	if (fl & QRNIC_HDR_PAYLOAD) {
		p->payload = h;
		p->paylen = (uint32_t)(data - pad);
	}
	return QRNIC_WIRE_OK;
}
