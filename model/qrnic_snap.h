/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: the byte stream of a device snapshot (snapshot.c,
 * fault_snap.c; docs/qemu.md section 9 describes the layout).
 *
 * Why not QEMU's VMState: the model is QEMU-free (the simulator, the test
 * harness and the fuzzers snapshot it too), so it writes its own stream and
 * QEMU carries that stream as one buffer of the device's VMState.  The
 * format borrows VMState's ideas: sections with a version each, optional
 * sections (subsections) that a loader may skip, every value little-endian
 * at a fixed width, and a loader that checks everything it reads.
 *
 * Stream: "QRNS" magic, u32 format version, then sections until "END.":
 *   u32 tag (four ASCII characters), u16 version, u16 flags, u32 length,
 *   then length bytes of payload.
 * A reader never reads past its section: a short section is an error.
 */
#ifndef QRNIC_SNAP_H
#define QRNIC_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define QRNIC_SNAP_MAGIC	0x534e5251u	/* "QRNS" little-endian */
#define QRNIC_SNAP_FORMAT	1
#define QRNIC_SNAP_F_OPTIONAL	1u	/* a loader that does not know it skips it */

#define QRNIC_SNAP_TAG(s)	((uint32_t)(s)[0] | (uint32_t)(s)[1] << 8 |	\
				 (uint32_t)(s)[2] << 16 | (uint32_t)(s)[3] << 24)

struct qrnic_snap_w {
	uint8_t *buf;
	size_t len, cap;
	size_t sec;		/* offset of the open section's header */
	bool oom;
};

struct qrnic_snap_r {
	const uint8_t *p;
	size_t len, off;	/* the section being read: p[0..len) */
	uint16_t version;	/* of that section */
	bool bad;		/* a read went past the end, or a check failed */
	char *err;
	size_t errlen;
};

void qrnic_snap_put(struct qrnic_snap_w *w, const void *p, size_t n);
/* n bytes of v, little-endian (n <= 8) */
static inline void qs_le(struct qrnic_snap_w *w, uint64_t v, unsigned n)
{
	uint8_t b[8];

	for (unsigned i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	qrnic_snap_put(w, b, n);
}
static inline void qs_u8(struct qrnic_snap_w *w, uint8_t v)
{
	qs_le(w, v, 1);
}
static inline void qs_u16(struct qrnic_snap_w *w, uint16_t v)
{
	qs_le(w, v, 2);
}
static inline void qs_u32(struct qrnic_snap_w *w, uint32_t v)
{
	qs_le(w, v, 4);
}
static inline void qs_u64(struct qrnic_snap_w *w, uint64_t v)
{
	qs_le(w, v, 8);
}
static inline void qs_bool(struct qrnic_snap_w *w, bool v)
{
	qs_u8(w, v ? 1 : 0);
}
static inline void qs_f64(struct qrnic_snap_w *w, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));	/* IEEE 754 bits: exact */
	qs_u64(w, u);
}
static inline void qs_bytes(struct qrnic_snap_w *w, const void *p, size_t n)
{
	qrnic_snap_put(w, p, n);
}
void qs_begin(struct qrnic_snap_w *w, const char *tag, uint16_t version, uint16_t flags);
void qs_end(struct qrnic_snap_w *w);

/* Reading: a value past the end of the section reads as 0 and marks the
 * reader bad (the load then fails with "section ... truncated"). */
bool qr_fail(struct qrnic_snap_r *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool qr_get(struct qrnic_snap_r *r, void *p, size_t n);
/* n bytes, little-endian (n <= 8); 0 past the end of the section */
static inline uint64_t qr_le(struct qrnic_snap_r *r, unsigned n)
{
	uint8_t b[8] = { 0 };
	uint64_t v = 0;

	qr_get(r, b, n);
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}
static inline uint8_t qr_u8(struct qrnic_snap_r *r)
{
	return (uint8_t)qr_le(r, 1);
}
static inline uint16_t qr_u16(struct qrnic_snap_r *r)
{
	return (uint16_t)qr_le(r, 2);
}
static inline uint32_t qr_u32(struct qrnic_snap_r *r)
{
	return (uint32_t)qr_le(r, 4);
}
static inline uint64_t qr_u64(struct qrnic_snap_r *r)
{
	return qr_le(r, 8);
}
static inline bool qr_bool(struct qrnic_snap_r *r)
{
	uint8_t v = qr_u8(r);

	if (v > 1)
		qr_fail(r, "boolean %u is neither 0 nor 1", v);
	return v == 1;
}
static inline double qr_f64(struct qrnic_snap_r *r)
{
	uint64_t u = qr_u64(r);
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}
static inline bool qr_bytes(struct qrnic_snap_r *r, void *p, size_t n)
{
	return qr_get(r, p, n);
}
/* Bytes left in the section. */
static inline size_t qr_left(const struct qrnic_snap_r *r)
{
	return r->len - r->off;
}

struct qrnic_dev;
/* fault_snap.c: the fault state ("FLT." section, optional: only a device
 * that ever had fault rules writes it; loading replaces the rules). */
/* Every section's version: bump one when its layout changes, and keep
 * reading the older layouts (tests/fixtures holds a stream of each). */
#define V_CONF	4	/* 2: + timing parameter bf_write_ns (BlueFlame, ABI 1.5);
			 * 3: + rx_buffer, rx_pfc_xoff, rx_pfc_xon, rx_drain_mbps;
			 * 4: + np_enable, rp_enable (ABI 1.9) */
#define V_CC	1	/* run-time congestion control parameters (SET_CC, ABI 1.9) */
#define V_REGS	1
#define V_OBJS	3	/* 2: + the CQ's CREATE_CQ flags (64-byte CQEs, ABI 1.7);
			 * 3: + CQ and SRQ ring page lists (ABI 1.8) */
#define V_QP	5	/* 2: + TIMELY's RTT sampling state; 3: + SQ and RQ page lists;
			 * 4: + the RQ producer record address (ABI 1.10);
			 * 5: + the SQ record address and the flag written there (ABI 1.11) */
#define V_WORK	2	/* 2: + each received frame's receive buffer priority and time */
#define V_TIME	4	/* 2: + the PFC pause flag; 3: + PFC frame pauses;
			 * 4: + the receive buffer's state */
/* STAT 2: + counters bf_posts, bf_fallbacks; 3: + pfc_received, pfc_malformed,
 * pfc_deferred_frames; 4: + pfc_sent, rx_buffer_drops */
#define V_STAT	4
#define V_FLT	1

/* The sections in their own files (snapshot.c writes and reads the stream,
 * CONF, REGS, TIME and STAT; snap_objs.c OBJS and the relations between
 * objects; snap_qp.c QPS. and WORK). */
uint32_t qr_count(struct qrnic_snap_r *r, uint32_t max, size_t min_size, const char *what);
uint32_t qr_index(struct qrnic_snap_r *r, uint32_t n, bool zero_ok, const char *what);
/* A ring's page list (ABI 1.8): u32 count (0 = a contiguous ring), then
 * the page addresses.  Loading checks the count against the ring of
 * 2^log_bytes bytes and every entry as CREATE_* does (qrnic_ring_pl_load);
 * *pl is replaced (the old list freed). */
void qrnic_snap_save_pl(struct qrnic_snap_w *w, const uint64_t *pl, unsigned log_bytes);
bool qrnic_snap_load_pl(struct qrnic_dev *d, struct qrnic_snap_r *r, uint64_t **pl,
			unsigned log_bytes,
			const char *what, uint32_t idx);
void qrnic_snap_save_objs(struct qrnic_dev *d, struct qrnic_snap_w *w);
bool qrnic_snap_load_objs(struct qrnic_dev *d, struct qrnic_snap_r *r);
bool qrnic_snap_check_relations(struct qrnic_dev *d, struct qrnic_snap_r *r);
void qrnic_snap_save_qps(struct qrnic_dev *d, struct qrnic_snap_w *w);
bool qrnic_snap_load_qps(struct qrnic_dev *d, struct qrnic_snap_r *r);
void qrnic_snap_save_work(struct qrnic_dev *d, struct qrnic_snap_w *w);
bool qrnic_snap_load_work(struct qrnic_dev *d, struct qrnic_snap_r *r);

void qrnic_fault_save(struct qrnic_dev *d, struct qrnic_snap_w *w);
bool qrnic_fault_load(struct qrnic_dev *d, struct qrnic_snap_r *r);

#endif
