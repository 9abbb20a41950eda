/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared part of the qrnic libFuzzer targets (fuzz_rx.c, fuzz_guest.c):
 * a bounded reader over the fuzz input, a live two-device world built
 * through the test harness (tests/harness/harness.h), a RoCEv2 frame
 * builder driven by input bytes, bounded runs with hang detection and the
 * invariant checks that turn a broken device into an abort().
 *
 * Input format of both targets: a sequence of records
 *     kind (1 byte) | body length (2 bytes, little endian) | body
 * A body is read with a reader that yields zeros past its end, so every
 * record means something whatever its length, and a mutation inside one
 * record does not shift the ones after it.
 */
#ifndef QRNIC_FUZZ_COMMON_H
#define QRNIC_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "qrnic_wire.h"

/* ---- input reader ---------------------------------------------------------- */
struct fz_in {
	const uint8_t *p;
	size_t n, off;
};

uint8_t fz_u8(struct fz_in *in);
uint16_t fz_u16(struct fz_in *in);
uint32_t fz_u32(struct fz_in *in);
uint64_t fz_u64(struct fz_in *in);
size_t fz_left(const struct fz_in *in);
/* Copy up to n bytes to out (zeros past the end of the input). */
void fz_take(struct fz_in *in, void *out, size_t n);
/* The next record: its kind and a reader over its body; false at the end. */
bool fz_record(struct fz_in *in, uint8_t *kind, struct fz_in *body);

/* ---- bounds ---------------------------------------------------------------- */
#define FZ_MAX_RECORDS		64	/* records (actions) per input */
#define FZ_BUDGET_ITERS		300000	/* run loop iterations per input */
#define FZ_CHUNK_ITERS		2000	/* one hx_run call at most */
#define FZ_STUCK_ITERS		10000	/* iterations without any progress: a hang */
#define FZ_INSTANT_ITERS	100000	/* iterations at one virtual instant: a hang */
/* the run at the end of every input: long enough to see either hang */
#define FZ_FINAL_NS		200000000ull
#define FZ_FINAL_ITERS		(FZ_INSTANT_ITERS + FZ_CHUNK_ITERS)
#define FZ_ADMIN_ITERS		20000	/* an admin command waits at most this long */
#define FZ_ADMIN_TIMEOUT_NS	20000000ull

/* ---- the world -------------------------------------------------------------- */
#define FZ_NDEV		2
#define FZ_MAX_OBJ	16
#define FZ_QKEY		0x11111111u
#define FZ_PSN0		0x100u		/* first PSN device 0 sends on its RC QP */
#define FZ_PSN1		0x200u		/* first PSN device 1 sends on its RC QP */
#define FZ_MTU		QRNIC_MTU_256	/* small packets: multi-packet messages stay short */
#define FZ_MTU_BYTES	256u
#define FZ_MEM		(8ull << 20)	/* simulated host memory per device */

/* handles known to the fuzzer, newest replacing the oldest when full */
struct fz_objs {
	uint32_t v[FZ_MAX_OBJ];
	int n, next;
};

struct fz_mr {
	uint32_t key;
	uint64_t iova, len;
};

struct fz_dev {
	bool up;		/* base objects exist (fz_setup_dev succeeded) */
	uint32_t eq_async, eq_comp, pd, cq, cq_small, ah;
	uint32_t qp_rc, qp_ud, qp_gsi, qp_err, qp_rtr, qp_reset;
	uint8_t gid[2][16];	/* index 0 IPv4-mapped, 1 IPv6 */
	int nmr;
	struct fz_mr mr[FZ_MAX_OBJ];
	struct fz_objs qps, cqs, pds, eqs, ahs, uctxs, srqs;
	struct fz_objs frmrs;	/* keys of fast-registration MRs (ALLOC_MR) */
	struct fz_objs mws;	/* rkeys of memory windows (ALLOC_MW) */
	struct fz_objs xrcds;	/* XRC domains (ALLOC_XRCD) */
	uint64_t eth_tx_ring, eth_rx_ring;
	uint32_t eth_tx_pi;	/* Ethernet TX producer index */
};

struct fz {
	hx_world *w;
	const char *name;	/* target name for messages */
	struct fz_dev d[FZ_NDEV];
	/* bounded work and hang detection */
	uint64_t total_iters;	/* run loop iterations of this input */
	uint64_t stuck_iters;	/* consecutive iterations without progress */
	uint64_t instant_iters;	/* consecutive iterations at instant_t */
	uint64_t instant_t;
	bool spent;		/* FZ_BUDGET_ITERS reached: the input ends */
	uint64_t mark_t, mark_sig;	/* fz_mark */
	int action;		/* index of the record being executed */
	/* PSN cursors for frames to device 1's RC QP (fz_frame) */
	uint32_t req_psn;	/* next in-order request PSN */
	uint32_t resp_psn;	/* PSN of device 1's oldest outstanding request */
	/* the tap (fz_opts.tap): frames seen, and what it did */
	uint32_t tap_pattern;
	bool tap_corrupts;
	uint64_t tap_frames, tap_headers, tap_fills, tap_corrupted, tap_refs, tap_pending;
	uint64_t maps0, unmaps0;	/* hx_dma_refs_stats at the start of the input */
};

/* timing profile per device: 0 functional, 1 cx5-100g, 2 teach */
struct fz_opts {
	unsigned profile[FZ_NDEV];
	bool trusted_wire;	/* no ICRCs, payloads by reference (hx_wire_trusted) */
	uint64_t latency_ns;
	bool rx_buffer[FZ_NDEV];	/* a receive buffer with PFC (fz_cfg_rxbuf) */
	/* payloads by reference (fz_refs_opts) */
	int dma_refs;		/* hx_set_dma_refs: HX_REFS_PTR (the old default), _NONE, _CHECKED */
	bool lazy_icrc[FZ_NDEV];	/* qrnic_dev_set_lazy_icrc, and qrnic_dev_set_db_batch */
	bool vouch;		/* hx_set_vouch: untouched frames delivered vouched for */
	bool tap;		/* a reader of the frames handed over (fz_tap) */
	bool tap_corrupts;	/* ... which may change a byte after filling */
	bool no_framelog;	/* fuzz_rx: no frame log (it fills every frame) */
	uint32_t tap_pattern;	/* 2 bits per frame, 16 frames: none, headers, fill, fill+corrupt */
};

/* The reference byte (read when the first byte's reference bit is set):
 *   [1:0] dma refs: 0, 1 HX_REFS_CHECKED, 2 HX_REFS_NONE, 3 HX_REFS_PTR
 *   [2]   lazy ICRC on device 0, [3] on device 1
 *   [4]   vouch (hx_set_vouch)
 *   [5]   a tap (fz_tap), its u32 pattern follows
 *   [6]   no frame log (fuzz_rx)
 *   [7]   the tap may corrupt a filled frame (keeps the wire untrusted) */
void fz_refs_opts(struct fz_opts *o, struct fz_in *in);

/* A world of two cabled devices, each brought up with its base objects
 * (fz_setup_dev) and connected (fz_connect): RC QPs in RTS to each other,
 * a UD and a GSI QP in RTS, a QP in ERR, one in RTR, one in RESET, MRs with
 * remote access, receive WQEs posted, Ethernet rings enabled.  0 or -1
 * (the setup itself failed: a bug in the fuzzer or the device). */
int fz_world_new(struct fz *f, const char *name, const struct fz_opts *o);
/* Frees the world, then checks that every payload mapping went back
 * (HX_REFS_CHECKED: dma_unmap exactly once each; abort() on a leak). */
void fz_world_free(struct fz *f);
/* (Re)create device d's base objects on a device in reset state. */
int fz_setup_dev(struct fz *f, int d);
/* Connect the base QPs of both devices (both must be up). */
int fz_connect(struct fz *f);
/* Forget the driver state of device d after a reset, bring it up again
 * and connect it if both devices are up. */
void fz_reinit(struct fz *f, int d);

/* ---- bounded runs, invariants ------------------------------------------------ */
/* Run the world for at most ns of virtual time and iters iterations, in
 * chunks; aborts on a hang (no progress, or too long at one instant). */
void fz_run(struct fz *f, uint64_t ns, uint64_t iters);
/* Before an admin command (or several): note the clock and progress;
 * after it, account the run loop iterations it waited (hang detection). */
void fz_mark(struct fz *f);
void fz_account_admin(struct fz *f);
/* The device invariants; abort() with a message if one is broken. */
void fz_check(struct fz *f);
void fz_check_views(struct fz *f);

/* ---- frames and traffic ---------------------------------------------------- */
/* Build, from input bytes, a RoCEv2 frame as device 1 - dst would send it
 * to device dst (mostly valid, with field overrides and byte mutations);
 * returns its length (<= cap). */
size_t fz_frame(struct fz *f, int dst, struct fz_in *in, uint8_t *buf, size_t cap);
/* Recompute the IPv4 header checksum, clear the IPv6 UDP checksum and
 * recompute the ICRC of a (mutated) frame. */
void fz_fix_frame(uint8_t *f, size_t len);
/* Post a well-formed work request of device d (input picks QP, opcode,
 * lengths and MRs). */
void fz_traffic(struct fz *f, int d, struct fz_in *in);
/* Post receive WQEs on device d's base QPs, poll and re-arm its CQs/EQs. */
void fz_service(struct fz *f, int d, struct fz_in *in);

/* ---- helpers for the targets ---------------------------------------------- */
void fz_objs_add(struct fz_objs *o, uint32_t v);
/* r: a handle (>= 0), kept in o, or an error; returns r */
int64_t fz_keep(struct fz_objs *o, int64_t r);
void fz_objs_del(struct fz_objs *o, uint32_t v);
/* An element picked by sel, or (sel's top bit set, or no element) raw. */
uint32_t fz_pick(const struct fz_objs *o, uint8_t sel, uint32_t raw);
const struct fz_mr *fz_pick_mr(const struct fz_dev *fd, uint8_t sel);
void fz_add_mr(struct fz_dev *fd, uint32_t key, uint64_t iova, uint64_t len);

#endif
