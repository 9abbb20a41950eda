/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic timing model: a cycle-approximate account of where an RNIC spends
 * time.  The functional engines decide WHAT happens; this module decides
 * WHEN each externally visible effect (a frame leaving the port, a CQE or
 * EQE becoming visible in host memory, an interrupt) takes place.
 *
 * Resources, each with a "busy until" time: the PCIe link (bandwidth,
 * latency, read credits, max read request / payload sizes), a pool of
 * packet processing units, the Ethernet port (serialization at the port
 * rate), and three set-associative LRU translation caches (QP context,
 * MPT, MTT) whose misses cost a PCIe read.  MTT misses are served by
 * mtt_miss_slots miss handlers, each busy for the fill read plus
 * mtt_miss_ns: when every handler is busy a missing packet waits, so
 * under many misses the handlers, not the port, bound the throughput.
 * Sequential streams have their next MTT line prefetched (mtt_prefetch).  All times are in ns of the
 * host's virtual clock; costs given in device cycles are converted with
 * the profile's clock.
 */
#ifndef QRNIC_TIMING_H
#define QRNIC_TIMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QRNIC_TM_MAX_PU		64
#define QRNIC_TM_MAX_WAYS	16
#define QRNIC_TM_MAX_MISS	64	/* mtt_miss_slots */
#define QRNIC_TM_STREAMS	16	/* recent MTT lines the stream detector remembers */
#define QRNIC_TM_XFER_MEMO	4	/* PCIe transfer times remembered (a power of 2) */

/* Every parameter, documented with its source in docs/timing.md. */
#define QRNIC_TIMING_PARAMS(X)							\
	X(clock_mhz,		"device core clock (MHz); converts cycles to ns")	\
	X(doorbell_cycles,	"MMIO doorbell decode until the QP is scheduled")	\
	X(wqe_cycles,		"WQE parse and validation")			\
	X(req_pkt_cycles,	"requester per-packet processing")		\
	X(resp_pkt_cycles,	"responder per-packet processing")		\
	X(ack_cycles,		"ACK/NAK generation")				\
	X(cqe_cycles,		"CQE formatting")				\
	X(num_pu,		"packet processing units (parallel pipelines)")	\
	X(pcie_read_ns,		"PCIe read round trip (request to completion)")	\
	X(pcie_write_ns,	"PCIe posted write until visible in host memory")	\
	X(pcie_mbps,		"PCIe payload bandwidth per direction (MB/s)")	\
	X(pcie_mrrs,		"max read request size (bytes)")		\
	X(pcie_mps,		"max payload size (bytes)")			\
	X(pcie_tlp_overhead,	"bytes of TLP header+framing per TLP")		\
	X(pcie_read_credits,	"outstanding read requests")			\
	X(link_mbps,		"port rate (Mb/s)")				\
	X(link_overhead,	"bytes per frame on the wire besides the frame (preamble, SFD, FCS, IPG)") \
	X(prop_ns,		"propagation delay of the cable (ns)")		\
	X(qpc_entries,		"QP context cache entries")			\
	X(qpc_ways,		"QP context cache associativity")		\
	X(mpt_entries,		"MPT cache entries")				\
	X(mpt_ways,		"MPT cache associativity")			\
	X(mtt_entries,		"MTT cache entries (one entry = 8 page addresses)") \
	X(mtt_ways,		"MTT cache associativity")			\
	X(mtt_miss_slots,	"MTT misses in service at once (miss handlers); 0 = unlimited") \
	X(mtt_miss_ns,		"miss handler occupancy per MTT miss besides its 64-byte PCIe read") \
	X(mtt_prefetch,		"1: prefetch the next MTT line of a sequential stream; 0: off") \
	X(atomic_ns,		"responder atomic unit occupancy per ATOMIC (read-modify-write)") \
	X(irq_moderation_ns,	"minimum gap between interrupts on one vector")	\
	X(bf_write_ns,		"BlueFlame: CPU stores of a WQE until the device holds it (besides its bytes at pcie_mbps)")

struct qrnic_timing_profile {
	const char *name;
#define QRNIC_TM_FIELD(n, doc) uint32_t n;
	QRNIC_TIMING_PARAMS(QRNIC_TM_FIELD)
#undef QRNIC_TM_FIELD
};

/* Named profiles: "functional" (no timing: every effect immediate),
 * "cx5-100g" (calibrated to published ConnectX-5/6 figures), "teach" (slow:
 * every stage microseconds long so a timeline shows each one). */
const struct qrnic_timing_profile *qrnic_timing_profile_find(const char *name);
const char *qrnic_timing_profile_names(void);	/* "functional, cx5-100g, teach" */
/* Set one parameter by name; 0 or -1 (unknown name / out of range). */
int qrnic_timing_param_set(struct qrnic_timing_profile *p, const char *name, uint64_t v);
int qrnic_timing_param_get(const struct qrnic_timing_profile *p, const char *name, uint64_t *v);
const char *qrnic_timing_param_name(unsigned i);	/* NULL past the end */
const char *qrnic_timing_param_doc(unsigned i);
int qrnic_timing_profile_check(const struct qrnic_timing_profile *p, char *err, size_t errlen);

struct qrnic_tm_cache {
	uint32_t sets, ways;
	uint64_t *tag;		/* [sets * ways], UINT64_MAX = empty */
	uint64_t *lru;		/* [sets * ways] last use stamp */
	uint64_t *ready;	/* [sets * ways] when the entry's fill completes */
	uint64_t stamp;
	uint64_t hits, misses;
	size_t last;		/* index of the last key accessed, SIZE_MAX none */
};

/* Exact division by a divisor fixed when the profile is loaded (timing.c:
 * tm_div), a multiplication instead of a hardware divide. */
struct qrnic_tm_div {
	uint64_t d, m;
	uint32_t s;
};

struct qrnic_timing {
	struct qrnic_timing_profile p;
	bool enabled;		/* false for "functional" */
	struct qrnic_tm_div by_clock, by_pcie, by_link;	/* p's divisors */
	uint64_t xfer_mrrs;	/* PCIe transfer time of pcie_mrrs bytes */
	uint32_t xfer_memo_len[QRNIC_TM_XFER_MEMO];	/* ... of these lengths (timing.c) */
	uint64_t xfer_memo_ns[QRNIC_TM_XFER_MEMO];
	uint64_t pu_free[QRNIC_TM_MAX_PU];	/* when units are free: a sorted ring (timing.c) */
	uint32_t pu_head;	/* pu_free[pu_head] is the earliest */
	uint64_t pcie_rd_free;	/* read direction busy until */
	/* latest ready time booked in time order (timing.c: book()) */
	uint64_t pu_last, pcie_rd_last, rd_credit_last;
	uint64_t pcie_wr_free;	/* write direction busy until */
	uint64_t link_free;	/* port transmitter busy until */
	uint64_t atomic_free;	/* responder atomic unit busy until */
	uint32_t rd_slot;	/* next read credit, round-robin */
	uint64_t rd_credit_free[256];	/* each outstanding read slot busy until */
	uint64_t last_irq[2048];
	uint64_t miss_free[QRNIC_TM_MAX_MISS];	/* each MTT miss handler busy until */
	uint64_t miss_last;	/* latest ready time booked on them in time order */
	uint64_t mtt_recent[QRNIC_TM_STREAMS];	/* last MTT lines looked up (stream detector) */
	uint32_t mtt_recent_next;
	uint64_t mtt_last;	/* line of the last MTT lookup */
	uint64_t prefetches;	/* MTT lines prefetched */
	struct qrnic_tm_cache qpc, mpt, mtt;
};

/* The translation caches, for qrnic_tm_lookup(). */
enum qrnic_tm_cache_id { QRNIC_TM_QPC, QRNIC_TM_MPT, QRNIC_TM_MTT };

int qrnic_timing_init(struct qrnic_timing *t, const struct qrnic_timing_profile *p);
void qrnic_timing_fini(struct qrnic_timing *t);
void qrnic_timing_reset(struct qrnic_timing *t);	/* caches cold, resources idle */

uint64_t qrnic_tm_cycles(const struct qrnic_timing *t, uint32_t cycles);
/* Reserve a processing unit at or after 'ready' for 'cycles'; returns when
 * the work finishes. */
uint64_t qrnic_tm_pu(struct qrnic_timing *t, uint64_t ready, uint32_t cycles);
/* A DMA read of len bytes issued at 'ready': returns when the data is in. */
uint64_t qrnic_tm_dma_read(struct qrnic_timing *t, uint64_t ready, uint32_t len);
/* A DMA write of len bytes issued at 'ready': returns when it is visible. */
uint64_t qrnic_tm_bf_write(struct qrnic_timing *t, uint32_t len);	/* ns, no booking */
uint64_t qrnic_tm_dma_write(struct qrnic_timing *t, uint64_t ready, uint32_t len);
/* A frame of len bytes ready at 'ready': returns when its last bit leaves. */
uint64_t qrnic_tm_link(struct qrnic_timing *t, uint64_t ready, uint32_t len);
/* Translation cache lookups: return the extra delay (0 on a hit); *hit
 * (may be NULL) says whether the key was cached.  An MTT miss waits for a
 * free miss handler (mtt_miss_slots), then holds it for a 64-byte PCIe read
 * and mtt_miss_ns; the delay includes the wait. */
uint64_t qrnic_tm_lookup(struct qrnic_timing *t, enum qrnic_tm_cache_id c, uint64_t ready,
			 uint32_t key, bool *hit);
/*
 * qrnic_tm_lookup()'s common case inline: a repeat of the cache's last key
 * (for the MTT, of the last line looked up: nothing for the stream
 * detector to do).  True, with the delay in *delay, if it was that; false
 * if qrnic_tm_lookup() must run (nothing changed then).
 */
static inline bool qrnic_tm_lookup_last(struct qrnic_timing *t, enum qrnic_tm_cache_id c,
					uint64_t ready, uint32_t key, uint64_t *delay)
{
	struct qrnic_tm_cache *cc = c == QRNIC_TM_QPC ? &t->qpc : c == QRNIC_TM_MPT ? &t->mpt : &t->mtt;
	uint64_t k = c == QRNIC_TM_MTT ? key / 8 : key;	/* 8 pages an MTT line */
	size_t w = cc->last;

	if (w == SIZE_MAX || cc->tag[w] != k || (c == QRNIC_TM_MTT && k != t->mtt_last))
		return false;
	cc->lru[w] = ++cc->stamp;
	cc->hits++;
	/* a line still being filled is a hit that waits for the fill */
	*delay = c == QRNIC_TM_MTT && cc->ready[w] > ready ? cc->ready[w] - ready : 0;
	return true;
}
uint64_t qrnic_tm_qpc(struct qrnic_timing *t, uint64_t ready, uint32_t qpn);
uint64_t qrnic_tm_mpt(struct qrnic_timing *t, uint64_t ready, uint32_t mpt_index);
uint64_t qrnic_tm_mtt(struct qrnic_timing *t, uint64_t ready, uint32_t mtt_index);
/* The responder's atomic unit: returns when the read-modify-write is done. */
uint64_t qrnic_tm_atomic(struct qrnic_timing *t, uint64_t ready);
/* Interrupt moderation: when vector may fire, at or after 'ready'. */
uint64_t qrnic_tm_irq(struct qrnic_timing *t, uint64_t ready, unsigned vector);

#endif
