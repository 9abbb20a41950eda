/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic wire format: byte-exact RoCEv2 frame build and parse.
 *
 * A RoCEv2 frame is  Ethernet | IPv4 or IPv6 | UDP (dport 4791) | BTH |
 * extension headers | payload | pad (0..3 zero bytes) | ICRC (4 bytes).
 *
 * ICRC (IBTA Annex A17, as Linux rxe and ConnectX hardware compute it):
 * the Ethernet CRC-32 (reflected, poly 0xEDB88320, init ~0, final ~) over
 * 8 bytes of 0xff (masked LRH), the IP header with its variant fields set
 * to all ones (IPv4: TOS, TTL, header checksum; IPv6: traffic class, flow
 * label, hop limit), the UDP header with checksum 0xffff, the BTH with byte
 * 4 (FECN, BECN, resv6) set to 0xff, then everything after the BTH up to the
 * ICRC.  The resulting 32-bit value goes on the wire least significant byte
 * first (like the Ethernet FCS): wire bytes = value & 0xff, value >> 8, ...
 * Wireshark shows the 4 bytes read big endian, i.e. byte swapped.
 *
 * Pure C11, no allocation, no global mutable state: safe from any thread.
 */
#ifndef QRNIC_WIRE_H
#define QRNIC_WIRE_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

#define QRNIC_ROCEV2_UDP_PORT 4791
#define QRNIC_ETH_HLEN 14
#define QRNIC_IPV4_HLEN 20
#define QRNIC_IPV6_HLEN 40
#define QRNIC_UDP_HLEN 8
#define QRNIC_BTH_LEN 12
#define QRNIC_RETH_LEN 16
#define QRNIC_AETH_LEN 4
#define QRNIC_ATOMICETH_LEN 28
#define QRNIC_ATOMICACKETH_LEN 8
#define QRNIC_IMMDT_LEN 4
#define QRNIC_IETH_LEN 4
#define QRNIC_DETH_LEN 8
#define QRNIC_XRCETH_LEN 4
#define QRNIC_ICRC_LEN 4
#define QRNIC_CNP_RSVD_LEN 16	/* CNP: 16 reserved bytes after the BTH (RoCEv2 Annex A17) */
/* largest header stack: eth + ipv6 + udp + bth + xrceth + atomiceth (XRC atomics) */
#define QRNIC_MAX_HDR_LEN (QRNIC_ETH_HLEN + QRNIC_IPV6_HLEN + QRNIC_UDP_HLEN + QRNIC_BTH_LEN + \
			   QRNIC_XRCETH_LEN + QRNIC_ATOMICETH_LEN)

/* IBTA BTH opcodes: RC (0x00-0x1f), UC (0x20-0x3f), UD (0x60-0x7f) and XRC
 * (0xa0-0xbf: the RC opcodes + 0xa0; requests carry an XRCETH) */
enum qrnic_ib_opcode {
	QRNIC_OP_RC_SEND_FIRST = 0x00, QRNIC_OP_RC_SEND_MIDDLE = 0x01, QRNIC_OP_RC_SEND_LAST = 0x02,
	QRNIC_OP_RC_SEND_LAST_IMM = 0x03, QRNIC_OP_RC_SEND_ONLY = 0x04, QRNIC_OP_RC_SEND_ONLY_IMM = 0x05,
	QRNIC_OP_RC_WRITE_FIRST = 0x06, QRNIC_OP_RC_WRITE_MIDDLE = 0x07, QRNIC_OP_RC_WRITE_LAST = 0x08,
	QRNIC_OP_RC_WRITE_LAST_IMM = 0x09, QRNIC_OP_RC_WRITE_ONLY = 0x0a, QRNIC_OP_RC_WRITE_ONLY_IMM = 0x0b,
	QRNIC_OP_RC_READ_REQ = 0x0c, QRNIC_OP_RC_READ_RESP_FIRST = 0x0d, QRNIC_OP_RC_READ_RESP_MIDDLE = 0x0e,
	QRNIC_OP_RC_READ_RESP_LAST = 0x0f, QRNIC_OP_RC_READ_RESP_ONLY = 0x10, QRNIC_OP_RC_ACK = 0x11,
	QRNIC_OP_RC_ATOMIC_ACK = 0x12, QRNIC_OP_RC_CMP_SWAP = 0x13, QRNIC_OP_RC_FETCH_ADD = 0x14,
	QRNIC_OP_RC_SEND_LAST_INV = 0x16, QRNIC_OP_RC_SEND_ONLY_INV = 0x17,
	QRNIC_OP_UC_SEND_FIRST = 0x20, QRNIC_OP_UC_SEND_MIDDLE = 0x21, QRNIC_OP_UC_SEND_LAST = 0x22,
	QRNIC_OP_UC_SEND_LAST_IMM = 0x23, QRNIC_OP_UC_SEND_ONLY = 0x24, QRNIC_OP_UC_SEND_ONLY_IMM = 0x25,
	QRNIC_OP_UC_WRITE_FIRST = 0x26, QRNIC_OP_UC_WRITE_MIDDLE = 0x27, QRNIC_OP_UC_WRITE_LAST = 0x28,
	QRNIC_OP_UC_WRITE_LAST_IMM = 0x29, QRNIC_OP_UC_WRITE_ONLY = 0x2a, QRNIC_OP_UC_WRITE_ONLY_IMM = 0x2b,
	QRNIC_OP_UD_SEND_ONLY = 0x64, QRNIC_OP_UD_SEND_ONLY_IMM = 0x65,
	QRNIC_OP_XRC = 0xa0,	/* XRC opcode = RC opcode | QRNIC_OP_XRC */
	QRNIC_OP_XRC_SEND_FIRST = 0xa0, QRNIC_OP_XRC_SEND_ONLY = 0xa4, QRNIC_OP_XRC_READ_REQ = 0xac,
	QRNIC_OP_XRC_ACK = 0xb1, QRNIC_OP_XRC_SEND_ONLY_INV = 0xb7,
	/* RoCEv2 congestion notification packet (transport 100, Annex A17) */
	QRNIC_OP_CNP = 0x81,
};

/* per-opcode header flags */
#define QRNIC_HDR_RETH (1u<<0)
#define QRNIC_HDR_AETH (1u<<1)
#define QRNIC_HDR_ATOMICETH (1u<<2)
#define QRNIC_HDR_ATOMICACKETH (1u<<3)
#define QRNIC_HDR_IMMDT (1u<<4)
#define QRNIC_HDR_DETH (1u<<5)
#define QRNIC_HDR_PAYLOAD (1u<<6)   /* opcode carries payload (may be 0 bytes for ONLY) */
#define QRNIC_HDR_FIRST (1u<<7)
#define QRNIC_HDR_MIDDLE (1u<<8)
#define QRNIC_HDR_LAST (1u<<9)      /* ONLY = FIRST|LAST */
#define QRNIC_HDR_REQUEST (1u<<10)  /* sent by requester (SEND/WRITE/READ_REQ/atomic, UD send) */
#define QRNIC_HDR_RESPONSE (1u<<11) /* READ_RESP_*, ACK, ATOMIC_ACK */
#define QRNIC_HDR_SEND (1u<<12)
#define QRNIC_HDR_WRITE (1u<<13)
#define QRNIC_HDR_READ (1u<<14)
#define QRNIC_HDR_ATOMIC (1u<<15)
#define QRNIC_HDR_IETH (1u<<16)     /* SEND with invalidate: a 4-byte IETH (R_Key) where ImmDt would be */
#define QRNIC_HDR_XRCETH (1u<<17)   /* XRC request: a 4-byte XRCETH ([23:0] XRC SRQ) after the BTH */
#define QRNIC_HDR_CNP (1u<<18)      /* CNP: 16 reserved bytes (written as 0, ignored on receive), no payload */
/* returns 0 for an opcode qrnic does not implement */
uint32_t qrnic_opcode_flags(uint8_t opcode);
const char *qrnic_opcode_name(uint8_t opcode);   /* "RC_SEND_FIRST", ... , "UNKNOWN" */

/* Parsed/built packet, all fields in host byte order. */
struct qrnic_pkt {
	/* L2 */
	uint8_t dmac[6], smac[6];
	/* L3: GIDs; IPv4 addresses are IPv4-mapped (::ffff:a.b.c.d) */
	bool ipv6;
	uint8_t sgid[16], dgid[16];
	uint8_t traffic_class;    /* IPv4 TOS / IPv6 traffic class */
	uint8_t hop_limit;        /* IPv4 TTL / IPv6 hop limit */
	uint32_t flow_label;      /* IPv6 only, 20 bits */
	/* L4 */
	uint16_t udp_sport;       /* dport is always 4791 */
	/* BTH */
	uint8_t opcode;
	bool se, migreq, ackreq, fecn, becn;
	uint8_t padcnt;           /* parse: as received; build: computed by qrnic_wire_build (ignored on input) */
	uint8_t tver;             /* 0 */
	uint16_t pkey;            /* 0xffff default */
	uint32_t dqpn;            /* 24 bits */
	uint32_t psn;             /* 24 bits */
	/* extension headers: valid per qrnic_opcode_flags(opcode) */
	uint64_t reth_va; uint32_t reth_rkey; uint32_t reth_len;
	uint8_t aeth_syndrome; uint32_t aeth_msn;          /* msn 24 bits */
	uint64_t atomic_va; uint32_t atomic_rkey; uint64_t atomic_swap_add; uint64_t atomic_cmp;
	uint64_t atomic_ack_orig;
	uint32_t imm;             /* raw 4 bytes as they appear on the wire, memcpy'd into this u32 (NOT byte swapped) */
	uint32_t deth_qkey; uint32_t deth_sqpn;           /* sqpn 24 bits */
	uint32_t ieth_rkey;       /* IETH: the R_Key to invalidate */
	uint32_t xrc_srqn;        /* XRCETH: the XRC SRQ, 24 bits */
	/* payload: on parse, points into the caller's frame buffer (valid only while that buffer is) */
	const uint8_t *payload; uint32_t paylen;
};

/* Build a complete Ethernet frame (eth + IPv4/IPv6 + UDP + BTH + ext headers + payload + pad + ICRC).
 * IPv4: version 4, IHL 5, DF set, id 0, protocol 17, TOS = traffic_class,
 * TTL = hop_limit (taken as given), addresses = bytes 12..15 of the GIDs,
 * header checksum computed, UDP checksum 0 (as RoCE hardware sends it).
 * IPv6: next header 17, UDP checksum computed (IPv6 requires it; covers the
 * ICRC).  BTH tver is always written as 0, pad count = (4 - paylen % 4) % 4
 * with zero pad bytes, 24-bit fields are masked to 24 bits.  The frame is
 * not padded to the 60-byte Ethernet minimum (the host's net layer does it;
 * qrnic_wire_parse ignores such trailing padding).  p->payload/p->paylen are
 * ignored: the payload is the (payload, paylen) argument, which may be NULL
 * when paylen is 0.
 * Returns the frame length, or 0 if bufsz is too small, the opcode unknown,
 * or paylen != 0 for an opcode without payload (READ_REQ, ACK, atomics).
 * The payload may already be in place (payload == buf +
 * qrnic_wire_payload_off(...)): it is then not copied. */
size_t qrnic_wire_build(const struct qrnic_pkt *p, const void *payload, uint32_t paylen, uint8_t *buf, size_t bufsz);
/* The same, with icrc false: the ICRC field is written as 0 instead of
 * computed (a trusted simulated wire: qrnic_dev_set_trusted_wire). */
size_t qrnic_wire_build_icrc(const struct qrnic_pkt *p, const void *payload, uint32_t paylen,
			     uint8_t *buf, size_t bufsz, bool icrc);
/* Offset of the payload in a frame built for (ipv6, opcode); 0 for an
 * unknown opcode. */
size_t qrnic_wire_payload_off(bool ipv6, uint8_t opcode);

/* Parse and validate a frame.  Returns 0 and fills *p on success, or a QRNIC_WIRE_E_* reason (>0).
 * *p is zeroed first; on success fields not carried by the opcode stay 0, and
 * p->payload is NULL for opcodes without payload.
 * Classification first (NOT_ROCE): ethertype not 0x0800/0x86dd (VLAN tags
 * included), IP protocol / IPv6 next header not UDP, IPv4 non-first
 * fragment, UDP dport not 4791.  Then validation: IPv4 version / IHL == 5 /
 * no MF / header checksum / total length (BAD_IP or TRUNCATED), UDP length ==
 * IP payload length and, when non-zero, the UDP checksum (BAD_UDP), BTH tver
 * == 0 (BAD_BTH), known opcode (BAD_OPCODE), headers + ICRC fit (TRUNCATED),
 * pad count fits and payload+pad is a multiple of 4, no payload on a
 * non-payload opcode (BAD_BTH), ICRC (ICRC).  Bytes after the IP datagram
 * (Ethernet minimum-size padding) are ignored.  Never reads beyond len. */
/* On QRNIC_WIRE_E_ICRC, p->ipv6 and p->dgid are filled in (nothing else). */
int qrnic_wire_parse(const uint8_t *frame, size_t len, struct qrnic_pkt *p);
/* The same, with icrc false: every check but the ICRC's (a trusted
 * simulated wire: qrnic_dev_set_trusted_wire). */
int qrnic_wire_parse_icrc(const uint8_t *frame, size_t len, struct qrnic_pkt *p, bool icrc);
enum { QRNIC_WIRE_OK = 0, QRNIC_WIRE_E_NOT_ROCE = 1, QRNIC_WIRE_E_TRUNCATED, QRNIC_WIRE_E_BAD_IP,
       QRNIC_WIRE_E_BAD_UDP, QRNIC_WIRE_E_BAD_BTH, QRNIC_WIRE_E_BAD_OPCODE, QRNIC_WIRE_E_ICRC };

/* ICRC over a complete frame (eth header start), as IBTA Annex A17 / Linux rxe compute it.
 * frame[0..len) is the whole frame including the 4 trailing ICRC bytes; the
 * end is taken from the IP length when that fits in len (so Ethernet padding
 * is excluded), else len.  Returns the CRC value whose little-endian encoding
 * is the 4 ICRC bytes on the wire; returns 0 for a frame too short or not
 * IPv4/IPv6. */
uint32_t qrnic_icrc(const uint8_t *frame, size_t len);
/* The same from the IP header on: ip[0..ip_len) is the IP datagram with
 * the ICRC as its last 4 bytes; ipv6 says which header it starts with
 * (crc.c; wire.c's builder and parser use it). */
uint32_t qrnic_icrc_ip(const uint8_t *ip, bool ipv6, size_t ip_len);

/* GID helpers */
bool qrnic_gid_is_v4mapped(const uint8_t gid[16]);

/* ---- Helpers (additions) ------------------------------------------------ */
/* Make gid the IPv4-mapped GID ::ffff:a.b.c.d for ip4 = {a, b, c, d}. */
void qrnic_gid_set_v4mapped(uint8_t gid[16], const uint8_t ip4[4]);
/* Bytes of BTH + extension headers for opcode (0 if unknown). */
uint32_t qrnic_opcode_hdr_len(uint8_t opcode);
/* Frame length qrnic_wire_build produces for these arguments (0 if unknown
 * opcode or payload on a non-payload opcode). */
size_t qrnic_wire_frame_len(bool ipv6, uint8_t opcode, uint32_t paylen);
/* The packet qrnic_wire_parse returns for the frame that
 * qrnic_wire_build(p, payload, paylen, ...) builds, found without building
 * or parsing it: fields the frame does not carry are 0, 24-bit fields
 * masked, IPv4 GIDs IPv4-mapped from their last 4 bytes, pad count and
 * tver as built, out->payload = payload (NULL, and paylen 0, for an
 * opcode without payload).  For frames handed from device to device
 * untouched (headers by description, qrnic_frame_buf_set_pkt).  p must be
 * buildable: qrnic_wire_frame_len(p->ipv6, p->opcode, paylen) != 0. */
void qrnic_wire_pkt_received(const struct qrnic_pkt *p, const uint8_t *payload, uint32_t paylen,
			     struct qrnic_pkt *out);
/* Plain CRC-32 (Ethernet/zlib): crc = qrnic_crc32(crc, buf, len), start with
 * crc = 0 (like zlib's crc32()). */
uint32_t qrnic_crc32(uint32_t crc, const void *buf, size_t len);
/* "OK", "NOT_ROCE", "TRUNCATED", "BAD_IP", ... for a qrnic_wire_parse result. */
const char *qrnic_wire_strerror(int err);

#endif
