/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic test harness: a "world" of simulated hosts, each with one qrnic
 * device, its own DMA-able memory, a shared virtual clock, cables between
 * device pairs with controllable impairments, and a mini driver that talks
 * to each device only through registers, doorbells and rings in host memory
 * (public API qrnic_model.h, the firmware's qrnic_firmware.h, ABI headers in
 * model/abi; never qrnic_internal.h).
 *
 * Flat C API so that Python can call it with ctypes.  Conventions:
 *   - functions returning int64_t give a handle/key (>= 0) on success, or
 *     -(admin status) (QRNIC_AQ_*) or one of the HX_E_* codes below;
 *   - functions returning int give 0 on success or a negative HX_E_* code.
 */
#ifndef QRNIC_HARNESS_H
#define QRNIC_HARNESS_H

#include <stdint.h>
#include <stddef.h>

#include "qrnic_model.h"

/* devices in a world: a 63:1 incast, or a leaf-spine of 8 leaves x 8 hosts
 * (the model's tables are calloc'ed and host memory is mmap'ed
 * MAP_NORESERVE, so an unused slot costs nothing and a device only what it
 * touches; docs/simulator.md gives the RSS) */
#define HX_MAX_DEV		64
#define HX_MEM_BASE		0x100000000ull	/* device i memory at (i + 1) << 32 */

/* errors (negative) */
#define HX_E_TIMEOUT		(-1000)	/* admin command: no completion */
#define HX_E_NOAQ		(-1001)	/* admin rings not allocated */
#define HX_E_FULL		(-1002)	/* ring full */
#define HX_E_NOOBJ		(-1003)	/* driver knows no such QP/CQ/EQ/MR */
#define HX_E_INVAL		(-1004)	/* bad argument to the harness */
#define HX_E_NOMEM		(-1005)	/* simulated memory exhausted */
#define HX_E_DEV		(-1006)	/* device register check failed */

/* hx_run() results */
#define HX_RUN_IDLE		0	/* nothing left to do, no timers */
#define HX_RUN_TIME		1	/* time limit reached (clock = limit) */
#define HX_RUN_ITER		2	/* iteration cap reached */
#define HX_RUN_STOP		3	/* stop predicate satisfied (internal) */

/* wire rule actions */
#define HX_ACT_DROP		0
#define HX_ACT_DUP		1	/* arg: extra copies (0 means 1) */
#define HX_ACT_HOLD		2	/* arg: release after arg more frames from the same sender */
#define HX_ACT_CORRUPT		3	/* arg: byte offset (from frame start), arg2: xor mask (0 = 0xff) */
/* Set the IP ECN field to CE (11), the IPv4 header checksum updated (the
 * ICRC does not cover it): a switch's ECN marking.  Matches ECN-capable
 * (ECT) IPv4/IPv6 frames only.  arg: mark one in every arg matches (0, 1:
 * every one). */
#define HX_ACT_MARK_CE		4

/* frame log fates (bit set) */
#define HX_F_DELIVERED		(1u << 0)
#define HX_F_DROP_RULE		(1u << 1)
#define HX_F_DROP_RANDOM	(1u << 2)
#define HX_F_DUPLICATED		(1u << 3)
#define HX_F_HELD		(1u << 4)
#define HX_F_CORRUPTED		(1u << 5)
#define HX_F_RX_FULL		(1u << 6)	/* device refused (rx queue full) */
#define HX_F_NO_CABLE		(1u << 7)
#define HX_F_LOOPBACK		(1u << 8)	/* the device received it itself (src == dst) */

/* reg_mr harness flags */
#define HX_MR_SHUFFLE		(1u << 0)	/* data pages mapped in shuffled physical order */
#define HX_MR_CONTIG		(1u << 1)	/* data pages physically contiguous */
#define HX_MR_PHYS		(1u << 2)	/* QRNIC_MR_F_PHYS: iova is the bus address */

/* hx_admin flags */
#define HX_ADMIN_RAW		(1u << 0)	/* keep cmd_id as given, take the next CQE whatever its id */

/* wire statistics (hx_wire_stat) */
enum hx_wire_stat {
	HX_WS_TX, HX_WS_DELIVERED, HX_WS_DROP_RULE, HX_WS_DROP_RANDOM, HX_WS_DUPLICATED,
	HX_WS_HELD, HX_WS_CORRUPTED, HX_WS_RX_FULL, HX_WS_NO_CABLE, HX_WS_INJECTED,
	HX_WS_BUSY_UNSCHEDULED, HX_WS_STALE_ADMIN_CQES,
	HX_WS_DESCRIBED,	/* delivered with headers by description (qrnic_frame_buf_described) */
	HX_WS_LOOPBACK,		/* looped back inside a device (ops->loopback) */
	HX_WS_COUNT
};

struct hx_frame_info {		/* one frame log entry */
	uint64_t t_ns;
	uint64_t seq;		/* global transmit index */
	uint64_t src_seq;	/* transmit index of the sender */
	int32_t  src, dst;	/* device indexes, dst -1: no cable */
	uint32_t len;
	uint32_t fate;		/* HX_F_* */
};

struct hx_trace_rec {
	struct qrnic_trace_ev ev;
	uint32_t dev;
	uint32_t rsvd;
};

typedef struct hx_world hx_world;

/* ---- world ---------------------------------------------------------------- */
hx_world *hx_world_new(uint64_t mem_bytes_per_dev, uint64_t seed);
void hx_world_free(hx_world *w);
const char *hx_world_error(hx_world *w);
/* Add a device; cfg_kv: "key=value,..." over qrnic_config_defaults() (keys
 * are the parameter names of the model's table, qrnic_config_param(), or
 * their QEMU property names; mac=02:00:00:00:00:01).  Returns index. */
int hx_dev_add(hx_world *w, const char *cfg_kv);
/* The i-th configuration parameter of the model's table (for ctypes):
 * 0, or -1 past the end.  prop is NULL for a parameter without a QEMU
 * property; type "uint32", "uint64", "bool" or "mac". */
int hx_cfg_param(int i, const char **name, const char **prop, const char **type,
		 uint64_t *def, uint64_t *min, uint64_t *max, uint32_t *flags,
		 const char **help, const char **seen);
int hx_num_devs(hx_world *w);
int hx_cable(hx_world *w, int a, int b);
/* ---- switch (docs/congestion.md) ------------------------------------------
 * One output-queued switch that every device is attached to (instead of
 * cables): a frame from host i crosses its cable (the wire's rate and
 * latency, as with a cable), is switched by destination MAC to the output
 * port of the host with that MAC, waits in that port's FIFO queue (bytes,
 * frame + overhead) and leaves at the switch's port rate, then crosses
 * that host's cable (latency).  On enqueue: tail drop if the queue plus the
 * frame would pass 'buffer'; RED/ECN on the instantaneous queue q (bytes,
 * before the frame): ECN-capable frames are marked CE with probability 0
 * (q <= kmin), pmax (q - kmin) / (kmax - kmin) (kmin < q < kmax), 1 (q >=
 * kmax), as DCQCN (Zhu et al.) and HPCC's ns-3 configure it.  PFC (pfc on):
 * bytes buffered per ingress port; passing xoff pauses that port's host
 * (qrnic_dev_port_pause after the cable's latency), falling to xon resumes
 * it.  Deterministic: the marking draws come from 'seed'. */
struct hx_switch_cfg {
	uint64_t rate_bps;	/* each output port; 0 = as fast as it comes */
	uint32_t overhead;	/* framing bytes per frame (Ethernet: 24) */
	uint64_t latency_ns;	/* switch to host cable (host to switch: the wire's) */
	uint64_t buffer;	/* per output queue, bytes */
	uint64_t kmin, kmax;	/* bytes; kmax 0: no marking */
	double pmax;
	int pfc;
	uint64_t xoff, xon;	/* per ingress port, bytes */
	uint64_t seed;
	/* leaf-spine (0: one switch): host i on leaf i / hosts_per_leaf, every
	 * leaf cabled to every spine; a frame between leaves goes up to the
	 * spine its 5-tuple hashes to (ECMP), down to the far leaf, then to
	 * the host.  Every fabric link is like a host port (rate_bps,
	 * latency_ns, buffer, RED).  Every leaf and spine is one switch with
	 * its own buffer (shared_buffer each) and ingress counts; with PFC
	 * or a shared buffer every port has a queue per priority (strict
	 * priority, 7 first) and a switch's XOFF over a fabric link pauses
	 * the other end's queue of that priority (docs/congestion.md). */
	int leaves, spines, hosts_per_leaf;	/* <= HX_SW_MAX_TIER each */
	/* shared buffer (0: each output port has its own 'buffer'): every
	 * output queue (port, priority) draws from shared_buffer bytes and
	 * may hold at most alpha x (shared_buffer - bytes in use), the
	 * dynamic threshold of Broadcom's MMU and HPCC's ns-3 switch.  With
	 * PFC (lossless), the egress queues are not limited (only the
	 * buffer is) and an ingress (port, priority) is sent XOFF at that
	 * threshold and XON once below it by pfc_resume bytes (xoff and xon
	 * unused), as in HPCC's ns-3 SwitchMmu. */
	uint64_t shared_buffer;
	double alpha;
	uint64_t pfc_resume;
	/* priority queues (0: one FIFO per output port): one queue per
	 * (port, priority), each with its own 'buffer' (tail drop) and RED
	 * on its own bytes; the port sends from the highest priority queue
	 * that has a frame and is not paused (strict priority, 7 first).  A
	 * host's 802.1Qbb frame pauses the queues of its port for the
	 * priorities it names (the switch honours it).  With a shared buffer
	 * each queue takes from it under the dynamic threshold (as above) and
	 * RED sees its own bytes; in a leaf-spine every port, fabric ports
	 * too, has the queues, with PFC or without. */
	int prio_queues;
	/* ETS (802.1Qaz) between a port's priority queues (needs prio_queues;
	 * ets 0: strict priority only, 7 first): priorities with weight 0 are
	 * strict (served first, 7 first); the others share what is left by
	 * deficit round robin, quantum HX_SW_ETS_UNIT x weight bytes (wire
	 * bytes: frame + overhead) per round; weights of the non-strict ones
	 * add up to 100 (cli_ets). */
	int ets;
	uint8_t ets_weight[8];
	/* pfc: priorities that stay lossy (no XOFF for them; with a shared
	 * buffer their egress queues are held to the dynamic threshold, with
	 * a buffer per queue or port to 'buffer', and drop there); 0: PFC
	 * for every priority */
	uint8_t pfc_lossy;
};
#define HX_SW_ETS_UNIT	100	/* DWRR quantum per percent of weight, bytes */
struct hx_switch_queue_stats {	/* one output queue: (port, priority) */
	uint64_t frames, bytes, drops;	/* drops: over its dynamic threshold or the buffer */
	uint64_t marks;			/* prio_queues: ECN marks on this queue */
	uint64_t paused_ns;		/* prio_queues: time the host paused it */
	uint64_t q_now, q_max;		/* bytes */
	uint64_t tx_frames, tx_bytes;	/* pq: sent out of this queue (bytes: frame + overhead) */
};
/* the queue of output port 'port' for priority 'prio' (shared buffer or not) */
int hx_switch_queue_stats(hx_world *w, int port, int prio, struct hx_switch_queue_stats *out);
/* shared buffer: bytes in use now, and the largest so far (leaf-spine: the
 * sum over the switches now, the largest of any one switch so far) */
uint64_t hx_switch_shared_used(hx_world *w, uint64_t *max);
#define HX_SW_MAX_TIER	8
struct hx_switch_stats {	/* one port: output queue, and PFC on its ingress */
	uint64_t frames, bytes;	/* enqueued (leave towards the host) */
	uint64_t marks, drops;
	uint64_t q_now, q_max;	/* bytes */
	double q_avg;		/* time average since the switch was attached, bytes */
	uint64_t win_max;	/* max since the last hx_switch_window() */
	uint64_t pauses;	/* XOFFs sent to this port's host */
	uint64_t paused_ns;	/* time this port's host was told to stay paused */
	uint64_t ingress;	/* bytes from this port in the buffer now */
	uint64_t pfc_frames;	/* 802.1Qbb frames (XOFF, XON, refreshes) sent to this port's host */
	uint64_t pfc_rx;	/* prio_queues: 802.1Qbb frames from this port's host honoured */
};
int hx_switch_attach(hx_world *w, const struct hx_switch_cfg *c);
int hx_switch_stats(hx_world *w, int port, struct hx_switch_stats *out);
/* leaf-spine: the output queue of leaf 'leaf' up to spine 'spine' (up 1),
 * or of spine 'spine' down to leaf 'leaf' (up 0); the PFC counts (pauses,
 * paused_ns, ingress, pfc_frames) are that port's ingress from the other
 * end of the link and the XOFFs it sent there, pfc_rx the frames from the
 * other end that paused its queue */
int hx_switch_fabric_stats(hx_world *w, int up, int leaf, int spine, struct hx_switch_stats *out);
/* ... and its queue of priority prio (paused_ns: the time the port at the
 * other end of the link kept it paused) */
int hx_switch_fabric_queue_stats(hx_world *w, int up, int leaf, int spine, int prio,
				 struct hx_switch_queue_stats *out);
/* the bytes in switch 'node''s buffer now (leaf l: node l, spine s: node
 * leaves + s; 0 with one switch) in *now, the most there were in *max */
int hx_switch_node_used(hx_world *w, int node, uint64_t *now, uint64_t *max);
/* the spine ECMP picks for a frame (its IP/UDP 5-tuple), -1 if not IP/UDP */
int hx_switch_ecmp(const uint8_t *frame, size_t len, int spines);
/* start a new window for win_max (every port) */
void hx_switch_window(hx_world *w);
/* External ports (qrnic-switch, docs/congestion.md "VM topologies"): after
 * hx_switch_attach (one switch), the world's devices stand for ports only:
 * a frame from outside enters by hx_switch_port_rx(port) at the world's
 * now, is switched by destination MAC as a learning switch does (source
 * MACs learned per port; broadcast, multicast and unknown unicast flooded
 * to every other port; 802.1D link-local frames end at the switch, a PFC
 * frame pausing its port's queues with prio_queues), and when it leaves
 * its output queue it goes to out(opaque, port, frame, len) instead of a
 * device.  Everything else (rates, queues, RED/ECN, PFC) is the switch
 * above, unchanged. */
#define HX_SW_LEARN	1024		/* learned MACs, the oldest gives way */
/* the longest frame a port takes: the model's frame buffers' (QRNIC_ETH_MAX_FRAME,
 * a 9000-byte MTU jumbo frame with its header and FCS) */
#define HX_SW_MAX_FRAME	9018
struct hx_switch_ext_stats {
	uint64_t rx_frames, rx_bytes;	/* taken in from the port */
	uint64_t tx_frames;		/* handed to out() for the port */
	uint64_t malformed;		/* shorter than 14 or longer than HX_SW_MAX_FRAME */
	uint64_t flooded;		/* of rx_frames: broadcast/multicast/unknown */
	uint64_t filtered;		/* for a MAC on the port they came from */
	uint64_t link_local;		/* 01:80:c2:00:00:0x frames ended at the switch */
};
int hx_switch_ext(hx_world *w, void (*out)(void *opaque, int port, const uint8_t *f, uint32_t len),
		  void *opaque);
int hx_switch_port_rx(hx_world *w, int port, const uint8_t *f, uint32_t len);
int hx_switch_ext_stats(hx_world *w, int port, struct hx_switch_ext_stats *out);
/* count a datagram the caller found malformed before it became a frame */
int hx_switch_ext_malformed(hx_world *w, int port);
uint64_t hx_now(hx_world *w);
int hx_run(hx_world *w, uint64_t max_ns, uint64_t max_iter);
uint64_t hx_run_iterations(hx_world *w);	/* iterations of the last hx_run */
/* Run-loop counters since the world was made (for profiling: how many
 * iterations, device timer fires, device runs, idle scans of the devices
 * and clock advances a workload costs). */
enum { HX_LC_ITERATIONS, HX_LC_TIMER_FIRES, HX_LC_DEV_RUNS, HX_LC_IDLE_SCANS, HX_LC_INSTANTS,
       HX_LC_COUNT };
uint64_t hx_loop_count(hx_world *w, int c);
/* hx_run() for ns, then the clock is at now + ns even if the world went idle. */
int hx_advance(hx_world *w, uint64_t ns);
/* Earliest pending event (frame arrival, timer deadline) in ns, UINT64_MAX if
 * none.  hx_run(w, 0, 0) settles the current instant; hx_run(w, next - now, 0)
 * then advances to exactly that event and settles it. */
uint64_t hx_next_event(hx_world *w);
/* Event-driven stepping for pollers.  hx_watch_writes() marks device d
 * (on) or unmarks it: every DMA write of a marked device into its host
 * memory (CQEs, EQEs, received data) then counts in hx_watched_writes().
 * hx_run_to_write() runs like hx_run() but also stops, with HX_RUN_STOP,
 * at the end of the first settled instant (before the clock moves on) at
 * which hx_watched_writes() differs from 'since': a poller that reads
 * host memory only there sees exactly what it would see polling at every
 * instant, without being called at the instants where nothing it could
 * see changed. */
int hx_watch_writes(hx_world *w, int d, int on);
uint64_t hx_watched_writes(hx_world *w);
int hx_run_to_write(hx_world *w, uint64_t max_ns, uint64_t max_iter, uint64_t since);
uint64_t hx_timer_deadline(hx_world *w, int d);
int hx_sched_pending(hx_world *w, int d);
uint64_t hx_wire_stat(hx_world *w, int s);
void hx_set_admin_timeout(hx_world *w, uint64_t ns);
/* Run loop iterations an admin command waits at most for its completion
 * (default 10000000; then HX_E_TIMEOUT, hx_run_iterations() tells how many
 * ran): bounds the work of one command for fuzzers. */
void hx_set_admin_max_iter(hx_world *w, uint64_t iters);

/* ---- device level (what a host/VMM does) --------------------------------- */
uint64_t hx_reg_read(hx_world *w, int d, uint64_t off, unsigned size);
void hx_reg_write(hx_world *w, int d, uint64_t off, uint64_t val, unsigned size);
uint64_t hx_db_read(hx_world *w, int d, uint64_t off, unsigned size);
void hx_db_write(hx_world *w, int d, uint64_t off, uint64_t val, unsigned size);
void hx_dev_reset(hx_world *w, int d);		/* qrnic_dev_reset (FLR) */
void hx_set_link(hx_world *w, int d, int up);
/* Rings of a page or more go to the device as page lists (ABI 1.8). */
void hx_set_ring_pagelist(hx_world *w, int d, int on);
void hx_set_rq_dbrec(hx_world *w, int d, int on);
void hx_set_sq_dbrec(hx_world *w, int d, int on);
uint64_t hx_sq_db_skipped(hx_world *w, int d);
/* PFC: pause (1) / resume (0) a device's port (qrnic_dev_port_pause) */
void hx_port_pause(hx_world *w, int d, int paused);
int hx_port_paused(hx_world *w, int d);
/* the receive buffer (rx_buffer, pfc.c): out[0] bytes in it, [1] the most,
 * [2..9] per priority, [10..17] the most per priority, [18] priorities sent
 * an XOFF; -1: no such device or the buffer is off */
int hx_rxbuf_info(hx_world *w, int d, uint64_t out[19]);
int hx_dev_busy(hx_world *w, int d);
/* qrnic_dev_check_lists: 0, or -1 with the reason in why */
int hx_dev_check(hx_world *w, int d, char *why, size_t len);
/* Snapshots (qrnic_dev_save/load): the stream's length (copied to out if
 * it fits cap), or < 0; load 0 or < 0 (hx_world_error says why);
 * snapshot: save, make the device anew, load (a migration in place). */
int64_t hx_dev_save(hx_world *w, int d, void *out, uint64_t cap);
int hx_dev_load(hx_world *w, int d, const void *buf, uint64_t len);
int hx_dev_snapshot(hx_world *w, int d);
int hx_snap_describe(const void *buf, uint64_t len, char *out, uint32_t outlen);
/* check the lists after every QP service step too (hx_dev_check reports) */
int hx_dev_selfcheck(hx_world *w, int d, int on);
uint64_t hx_dev_stat(hx_world *w, int d, int s);
/* A QP's congestion control state (qrnic_qp_cc_info): 0 or HX_E_*.
 * out: rate_mbps, target_mbps, alpha; st: algo, limited, t_stage, b_stage, cnps. */
int hx_qp_cc(hx_world *w, int d, uint32_t qpn, double out[4], uint64_t st[6]);
/* The model's read-only queue snapshots (qrnic_dev_view, model/query.c):
 * up to max records of kind k (enum qrnic_view_kind) from number start on,
 * each hx_view_nfields(k) uint32 values, into out.  Returns how many (or
 * a negative HX_E_*); *next as qrnic_dev_view's. */
int hx_query_view(hx_world *w, int d, int k, uint32_t start, uint32_t *out, unsigned max,
		  uint32_t *next);
int hx_view_nfields(int k);
const char *hx_view_field(int k, int i);	/* NULL past the end */
const char *hx_stat_name(int s);
int hx_stat_count(void);
uint64_t hx_irq_count(hx_world *w, int d, unsigned vector);
uint64_t hx_irq_total(hx_world *w, int d);
int hx_rx_inject(hx_world *w, int d, const void *frame, uint32_t len);
/* The same through qrnic_dev_rx_frame_buf_vouched: the host vouches for
 * the frame's ICRC, which the device then does not check. */
int hx_rx_inject_vouched(hx_world *w, int d, const void *frame, uint32_t len);
/* Deliver the frames a device sent that nothing changed on the way (no
 * corrupting or CE-marking rule, no switch) through
 * qrnic_dev_rx_frame_buf_vouched, as QEMU does between its qrnic ports.
 * Off by default. */
void hx_set_vouch(hx_world *w, int on);
/* Payload references (qrnic_host_ops.dma_map, dma_unmap) of the devices
 * added after this call (hx_dev_add): HX_REFS_PTR (the default) maps a
 * pointer into the simulated memory and has no dma_unmap; HX_REFS_NONE has
 * no dma_map (payloads always copied); HX_REFS_CHECKED maps a shadow copy
 * and checks every dma_unmap against a process-wide table of live mappings
 * (abort() on one that is not live; freed, so released bytes are poisoned
 * under AddressSanitizer); HX_REFS_LIVE checks the same way a pointer into
 * the simulated memory, as QEMU maps guest RAM (the bytes read when a frame
 * arrives).  hx_dma_refs_stats: maps and unmaps so far in the process, and
 * the mappings live now (0 once every world is freed). */
enum { HX_REFS_PTR = 0, HX_REFS_NONE = 1, HX_REFS_CHECKED = 2, HX_REFS_LIVE = 3 };
int hx_set_dma_refs(hx_world *w, int mode);
void hx_dma_refs_stats(uint64_t *maps, uint64_t *unmaps, uint64_t *live);
/* qrnic_dev_set_lazy_icrc on device d.  The wire fills (qrnic_frame_buf_fill)
 * every frame it reads (frame log, pcap, rules), as the model requires. */
int hx_set_lazy_icrc(hx_world *w, int d, int on);
/* qrnic_dev_set_trains on device d: its trains go whole while nothing on
 * the wire reads frames, else split (op_tx_frame_buf). */
int hx_set_trains(hx_world *w, int d, int on);
/* Every frame in flight arrives now, no device runs; returns how many. */
uint64_t hx_wire_land(hx_world *w);
/* qrnic_dev_set_db_batch on device d, and its counts qrnic_dev_db_batched
 * (rq 0) and qrnic_dev_rq_db_quiet (rq 1). */
int hx_set_db_batch(hx_world *w, int d, int on);
uint64_t hx_db_batched(hx_world *w, int d, int rq);
uint64_t hx_sq_rec_taken(hx_world *w, int d);
/* A reader of every frame buffer a device hands over (ops->tx_frame_buf),
 * called first: it may fill the frame (qrnic_frame_buf_fill, _fill_headers)
 * and, after a fill, change bytes; it returns nonzero if it changed any
 * (the frame is then not vouched for).  corrupts: it may, which keeps the
 * wire from being trusted (hx_wire_trusted).  NULL: none. */
void hx_set_tx_tap(hx_world *w, int (*tap)(void *ctx, int src, uint8_t *buf, uint32_t len),
		   void *ctx, int corrupts);
/* host d's port sends a frame of its own (through the wire, or the switch) */
int hx_wire_send(hx_world *w, int d, const void *frame, uint32_t len);
const uint8_t *hx_mac(hx_world *w, int d);

/* logs: the last messages per device */
uint64_t hx_log_total(hx_world *w, int d, int level);	/* level -1: all */
int hx_log_get(hx_world *w, int d, int i, char *buf, uint32_t buflen);	/* i=0 newest; returns level or -1 */
void hx_log_clear(hx_world *w, int d);	/* and the trace points below */
/* typed trace points err_* and ub_* (model/qrnic_tracepoints.h): the last
 * ones per device; args: QRNIC_TP_MAX_FIELDS values (the point's fields,
 * then 0) */
uint64_t hx_tp_total(hx_world *w, int d);
int hx_tp_get(hx_world *w, int d, int i, uint64_t *args);	/* i=0 newest; returns tp or -1 */
int hx_tp_count(void);	/* QRNIC_TP_COUNT; names etc.: qrnic_tp_name() ... */

/* trace */
void hx_trace_enable(hx_world *w, uint32_t capacity);	/* 0 disables */
uint64_t hx_trace_total(hx_world *w);
uint32_t hx_trace_read(hx_world *w, uint64_t from_seq, struct hx_trace_rec *out,
		       uint32_t max, uint64_t *first_seq);
const char *hx_trace_name(uint32_t type);

/* ---- simulated host memory ------------------------------------------------ */
uint64_t hx_mem_base(hx_world *w, int d);
uint64_t hx_mem_size(hx_world *w, int d);
uint64_t hx_mem_alloc(hx_world *w, int d, uint64_t size, uint64_t align);	/* 0 = failed */
/* The allocator's current end, and a return to it: everything allocated
 * since the mark is free again (the caller has destroyed what used it). */
uint64_t hx_mem_mark(hx_world *w, int d);
int hx_mem_release(hx_world *w, int d, uint64_t mark);
int hx_mem_read(hx_world *w, int d, uint64_t addr, void *buf, uint64_t len);
int hx_mem_write(hx_world *w, int d, uint64_t addr, const void *buf, uint64_t len);
int hx_mem_deny(hx_world *w, int d, uint64_t addr, uint64_t len);	/* DMA there fails */
void hx_mem_deny_clear(hx_world *w, int d);
uint64_t hx_dma_stat(hx_world *w, int d, int which);	/* 0 reads 1 writes 2 rbytes 3 wbytes 4 fails */
/* TOCTOU: arm a one-shot trap.  Right after the device's first DMA read
 * overlapping [addr, addr+len) has copied its bytes, 'nbytes' at 'waddr' are
 * overwritten with 'bytes' (the guest racing the device); waddr ~0: the bytes
 * that read fetched are overwritten with 'bytes' repeated.  Later device reads
 * of any byte that first read fetched count as re-fetches.  len 0 disarms.  State: 0 off,
 * 1 armed, 2 fired. */
int hx_dma_trap(hx_world *w, int d, uint64_t addr, uint64_t len, uint64_t waddr,
		const void *bytes, uint64_t nbytes);
int hx_dma_trap_state(hx_world *w, int d, uint64_t *refetches);
/* DMA write log: the (address, length) of each of the device's next 'cap'
 * DMA writes (more are counted as lost); cap 0 stops and frees it. */
int hx_dma_log_start(hx_world *w, int d, uint64_t cap);
uint64_t hx_dma_log_count(hx_world *w, int d, uint64_t *lost);
int hx_dma_log_get(hx_world *w, int d, uint64_t i, uint64_t *addr, uint64_t *len);

/* ---- the wire ------------------------------------------------------------- */
void hx_wire_set_latency(hx_world *w, uint64_t ns);
/* Link rate (default 0: infinite).  Each device's port sends its frames one
 * after the other: a frame takes (len + overhead_bytes) * 8 / bits_per_s to
 * serialize (store and forward), then the latency.  overhead_bytes models
 * preamble, FCS and inter-frame gap (24 for Ethernet) if wanted. */
void hx_wire_set_rate(hx_world *w, uint64_t bits_per_s, uint32_t overhead_bytes);
/* A trusted wire (off by default): the devices neither compute nor check
 * ICRCs (qrnic_dev_set_trusted_wire), which saves two CRC passes over every
 * frame, and send payloads by reference (op_dma_map), which saves a copy;
 * a frame log or wire rule gets the bytes copied in.  Only while nothing
 * corrupts frames (hx_wire_random corrupt_ppm,
 * HX_ACT_CORRUPT rules, any fault rule or plan ever added to any device)
 * and no pcap is open: otherwise, and whenever that changes, the ICRC is on
 * again.  Returns whether the wire is trusted now. */
int hx_wire_trusted(hx_world *w, int on);
int hx_wire_rule_add(hx_world *w, int src, int64_t index, int opcode, int64_t psn,
		     int64_t dqpn, uint32_t skip, int64_t count, int action,
		     uint32_t arg, uint32_t arg2);
uint64_t hx_wire_rule_fired(hx_world *w, int id);
void hx_wire_rules_clear(hx_world *w);
void hx_wire_random(hx_world *w, uint32_t loss_ppm, uint32_t dup_ppm, uint32_t reorder_ppm,
		    uint32_t corrupt_ppm, uint64_t seed);
int hx_pcap_open(hx_world *w, const char *path);
void hx_pcap_close(hx_world *w);
void hx_framelog_enable(hx_world *w, uint32_t max_frames);	/* 0 disables (and clears) */
uint32_t hx_framelog_count(hx_world *w);
int hx_framelog_get(hx_world *w, uint32_t i, struct hx_frame_info *info, void *buf, uint32_t buflen);
void hx_framelog_clear(hx_world *w);
/* BTH fields of a frame: returns 0 and fills, or -1 if not RoCEv2 */
int hx_parse_bth(const uint8_t *f, uint32_t len, int *opcode, uint32_t *dqpn, uint32_t *psn,
		 uint32_t *bth_off);

/* ---- driver: admin queue --------------------------------------------------- */
int hx_drv_aq_alloc(hx_world *w, int d, unsigned log_depth);	/* rings only, no registers */
int hx_drv_bringup(hx_world *w, int d, unsigned log_depth);	/* everything up to AQ enabled */
void hx_drv_forget(hx_world *w, int d);	/* drop all driver state (after a reset) */
uint64_t hx_drv_aq_addr(hx_world *w, int d, int cq);
uint32_t hx_drv_aq_pi(hx_world *w, int d);
uint32_t hx_drv_aq_ci(hx_world *w, int d);
/* Submit one 128-byte command and wait for its completion (copied to
 * cqe_out, 32 bytes, may be NULL).  Returns the status or HX_E_*. */
int hx_admin(hx_world *w, int d, const void *cmd, void *cqe_out, uint32_t flags);
int hx_last_cqe(hx_world *w, int d, void *out32);
/* Patch bytes of the next command built by the driver (any helper). */
int hx_patch_next_cmd(hx_world *w, int d, uint32_t off, const void *bytes, uint32_t len);
/* Patch bytes of the next WQE (send or receive) built by the driver. */
int hx_patch_next_wqe(hx_world *w, int d, uint32_t off, const void *bytes, uint32_t len);
uint64_t hx_scratch(hx_world *w, int d);	/* 4 KiB response page */

/* ---- driver: helpers (each one admin command) ----------------------------- */
int hx_query(hx_world *w, int d, uint8_t opcode, uint32_t port, void *out, uint32_t len);
int hx_set_gid(hx_world *w, int d, uint32_t index, int valid, int net_type, const uint8_t *gid16);
int hx_query_gid(hx_world *w, int d, uint32_t index, uint8_t *gid16_out);
int64_t hx_alloc_uctx(hx_world *w, int d);
int hx_destroy(hx_world *w, int d, uint8_t opcode, uint32_t handle);
int64_t hx_create_pd(hx_world *w, int d, uint32_t uctx);
int64_t hx_create_eq(hx_world *w, int d, unsigned log_depth, unsigned vector, uint32_t flags);
int64_t hx_create_cq(hx_world *w, int d, uint32_t uctx, uint32_t eqn, unsigned log_depth, int dbrec);
/* flags: QRNIC_CQ_F_* (TIMESTAMP: 64-byte CQEs) */
int64_t hx_create_cq_flags(hx_world *w, int d, uint32_t uctx, uint32_t eqn, unsigned log_depth,
			   int dbrec, unsigned flags);
int64_t hx_resize_cq(hx_world *w, int d, uint32_t cqn, unsigned log_depth);
int hx_modify_cq(hx_world *w, int d, uint32_t cqn, unsigned count, unsigned period_us);
int64_t hx_create_qp(hx_world *w, int d, uint32_t uctx, uint32_t pdn, uint32_t send_cqn,
		     uint32_t recv_cqn, unsigned qp_type, unsigned sq_log, unsigned sq_shift,
		     unsigned rq_log, unsigned rq_shift, uint32_t flags);
int hx_modify_qp(hx_world *w, int d, uint32_t qpn, const void *attr72);
int hx_query_qp(hx_world *w, int d, uint32_t qpn, void *attr72_out);
int64_t hx_reg_mr(hx_world *w, int d, uint32_t pdn, uint32_t access, uint64_t iova,
		  uint64_t length, unsigned page_shift, int levels, uint32_t hxflags);
int hx_query_mr(hx_world *w, int d, uint32_t key, void *mpt48_out);
int64_t hx_create_ah(hx_world *w, int d, uint32_t pdn, const void *av32);

/* host access to an MR's bytes by offset from its iova (works after dereg) */
int hx_mr_write(hx_world *w, int d, uint32_t key, uint64_t off, const void *buf, uint64_t len);
int hx_mr_read(hx_world *w, int d, uint32_t key, uint64_t off, void *buf, uint64_t len);
uint64_t hx_mr_bus_addr(hx_world *w, int d, uint32_t key, uint64_t off);	/* 0 = none */
/* The host memory behind MR bytes [off, off + *len): a pointer to byte off
 * and in *len how many bytes from there are contiguous in host memory
 * (at most the *len asked; the pages that follow each other physically
 * joined), or NULL if the range is not wholly in the MR or has no page
 * there.  For a simulator that writes or checks a buffer where it is
 * instead of through hx_mr_write/hx_mr_read and a copy. */
void *hx_mr_host_span(hx_world *w, int d, uint32_t key, uint64_t off, uint64_t *len);
uint64_t hx_mr_pbl_addr(hx_world *w, int d, uint32_t key);

/* ---- driver: data path ------------------------------------------------------ */
int64_t hx_post_send(hx_world *w, int d, uint32_t qpn, unsigned opcode, unsigned flags,
		     uint64_t wr_id, unsigned nsge, const uint64_t *sge_addr,
		     const uint32_t *sge_len, const uint32_t *sge_key,
		     const void *inl, uint32_t inl_len, uint32_t imm, uint32_t rkey,
		     uint64_t raddr, uint64_t compare_add, uint64_t swap, uint32_t ah,
		     uint32_t remote_qpn, uint32_t remote_qkey, int ring);
int64_t hx_post_send_raw(hx_world *w, int d, uint32_t qpn, const void *bytes, uint32_t len, int ring);
int64_t hx_post_recv(hx_world *w, int d, uint32_t qpn, uint64_t wr_id, unsigned nsge,
		     const uint64_t *sge_addr, const uint32_t *sge_len, const uint32_t *sge_key,
		     int ring);
int64_t hx_post_recv_raw(hx_world *w, int d, uint32_t qpn, const void *bytes, uint32_t len, int ring);
/* shared receive queues (spec 12.10) */
int64_t hx_create_qp_srq(hx_world *w, int d, uint32_t uctx, uint32_t pdn, uint32_t send_cqn,
			 uint32_t recv_cqn, unsigned qp_type, unsigned sq_log, unsigned sq_shift,
			 uint32_t srqn, uint32_t flags);
int64_t hx_create_srq(hx_world *w, int d, uint32_t uctx, uint32_t pdn, unsigned log_depth,
		      unsigned wqe_shift, uint32_t limit, int dbrec);
int64_t hx_srq_ci(hx_world *w, int d, uint32_t srqn);
int hx_ring_srq(hx_world *w, int d, uint32_t srqn);
int64_t hx_post_srq_recv(hx_world *w, int d, uint32_t srqn, uint64_t wr_id, unsigned nsge,
			 const uint64_t *sge_addr, const uint32_t *sge_len, const uint32_t *sge_key,
			 int ring);
int hx_modify_srq(hx_world *w, int d, uint32_t srqn, uint32_t mask, uint32_t limit);
int hx_query_srq(hx_world *w, int d, uint32_t srqn, uint32_t *out3);
int hx_ring_sq(hx_world *w, int d, uint32_t qpn);
int hx_ring_sq_bf(hx_world *w, int d, uint32_t qpn, unsigned buf, unsigned nwords,
		  uint32_t skip, int64_t page, int64_t pi);	/* BlueFlame, spec 3.2.1 */
int hx_ring_rq(hx_world *w, int d, uint32_t qpn);
uint64_t hx_qp_rq_dbrec(hx_world *w, int d, uint32_t qpn);
uint64_t hx_qp_sq_dbrec(hx_world *w, int d, uint32_t qpn);
int hx_qp_indexes(hx_world *w, int d, uint32_t qpn, uint32_t *out4);	/* sq_pi sq_ci rq_pi rq_ci */
int hx_poll_cq(hx_world *w, int d, uint32_t cqn, void *out, int max);	/* 32-byte CQEs */
/* the same, and each CQE's completion timestamp into ts_out[] (0 for a
 * CQ of 32-byte CQEs); ts_out may be NULL */
int hx_poll_cq_ts(hx_world *w, int d, uint32_t cqn, void *out, uint64_t *ts_out, int max);
int hx_peek_cq(hx_world *w, int d, uint32_t cqn);	/* CQEs ready, not consumed */
int hx_arm_cq(hx_world *w, int d, uint32_t cqn, int solicited);
uint32_t hx_cq_ci(hx_world *w, int d, uint32_t cqn);
int hx_poll_eq(hx_world *w, int d, uint32_t eqn, void *out, int max);	/* 16-byte EQEs */
int hx_arm_eq(hx_world *w, int d, uint32_t eqn);

/* Timing profile and overrides ("param=value,...") of device d; see
 * qrnic_dev_set_timing(). */
int hx_set_timing(hx_world *w, int d, const char *profile, const char *overrides);

/* ---- a ready RC connection (C users) ----------------------------------------- */
struct hx_pair {
	int64_t pd[2], cq[2], qp[2], eq[2];
};
/* Bring up devices 0 and 1 (IPv4 GIDs 10.0.0.1/2, one EQ, PD, CQ and RC QP
 * each; SQ/RQ 1 << sq_log entries with 512-byte WQEs), cable them and move
 * both QPs to RTS (sq_psn = rq_psn = 100). */
int hx_setup_rc_pair(hx_world *w, unsigned ib_mtu, unsigned sq_log, unsigned cq_log,
		     struct hx_pair *p);

/* layout table "struct field offset size\n..." for the Python mirror check */
const char *hx_layout(void);

/* ---- fault injection (model/qrnic_fault.h; grammar: docs/faults.md) ------------ */
/* Add one rule / a whole plan to device d: rule id / number of rules, or
 * HX_E_INVAL with the parser's message in hx_world_error(). */
int hx_fault_add(hx_world *w, int d, const char *rule);
int hx_fault_load_plan(hx_world *w, int d, const char *text);
int hx_fault_check_plan(hx_world *w, const char *text);	/* parse only */
int hx_fault_del(hx_world *w, int d, int id);
void hx_fault_clear(hx_world *w, int d);
/* out3: matched, fired, done; text: the rule */
int hx_fault_info(hx_world *w, int d, int id, uint64_t *out3, char *text, uint32_t textlen);
int hx_fault_ids(hx_world *w, int d, int *ids, int max);
int64_t hx_fault_list(hx_world *w, int d, char *buf, uint32_t len);
/* which: 0 injected, 1 held now, 2 held overflow, 3 held flushed by reset, 4 AQ hung */
uint64_t hx_fault_total(hx_world *w, int d, int which);
/* Ring base the driver gave the device: kind 0 CQ, 1 EQ, 2 SQ, 3 RQ (0 = none). */
uint64_t hx_drv_ring_addr(hx_world *w, int d, int kind, uint32_t handle);

#endif
