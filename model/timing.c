/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic timing model: profiles, resources and translation caches.
 * See qrnic_timing.h for the model and docs/timing.md for the sources of
 * every number.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qrnic_timing.h"

static const struct qrnic_timing_profile profiles[] = {
	{
		/* No timing: effects are visible as soon as the engines
		 * produce them (the model before the timing issue). */
		.name = "functional",
		.clock_mhz = 1000, .num_pu = 1, .pcie_mbps = 1, .pcie_mrrs = 512, .pcie_mps = 256,
		.pcie_read_credits = 1, .link_mbps = 100000,
		.qpc_entries = 1, .qpc_ways = 1, .mpt_entries = 1, .mpt_ways = 1,
		.mtt_entries = 1, .mtt_ways = 1, .mtt_miss_slots = 1,
	},
	{
		/* ConnectX-5 100 Gb/s class (docs/timing.md lists sources). */
		.name = "cx5-100g",
		.clock_mhz = 1000,
		.doorbell_cycles = 40,
		.wqe_cycles = 30,
		.req_pkt_cycles = 50,
		.resp_pkt_cycles = 50,
		.ack_cycles = 20,
		.cqe_cycles = 20,
		.num_pu = 12,
		.pcie_read_ns = 250,
		.pcie_write_ns = 150,
		.pcie_mbps = 15000,
		.pcie_mrrs = 512,
		.pcie_mps = 256,
		.pcie_tlp_overhead = 24,
		.pcie_read_credits = 128,
		.link_mbps = 100000,
		.link_overhead = 24,
		.prop_ns = 50,
		.qpc_entries = 1024, .qpc_ways = 8,
		.mpt_entries = 1024, .mpt_ways = 8,
		.mtt_entries = 2048, .mtt_ways = 8,
		.mtt_miss_slots = 1,
		.mtt_miss_ns = 1100,
		.mtt_prefetch = 1,
		.atomic_ns = 200,
		.irq_moderation_ns = 0,
		.bf_write_ns = 150,
	},
	{
		/* Slow motion for teaching: every stage microseconds long. */
		.name = "teach",
		.clock_mhz = 1,
		.doorbell_cycles = 1,
		.wqe_cycles = 2,
		.req_pkt_cycles = 3,
		.resp_pkt_cycles = 3,
		.ack_cycles = 1,
		.cqe_cycles = 1,
		.num_pu = 1,
		.pcie_read_ns = 4000,
		.pcie_write_ns = 2000,
		.pcie_mbps = 200,
		.pcie_mrrs = 512,
		.pcie_mps = 256,
		.pcie_tlp_overhead = 24,
		.pcie_read_credits = 4,
		.link_mbps = 1000,
		.link_overhead = 24,
		.prop_ns = 5000,
		.qpc_entries = 4, .qpc_ways = 2,
		.mpt_entries = 4, .mpt_ways = 2,
		.mtt_entries = 8, .mtt_ways = 2,
		.mtt_miss_slots = 1,
		.mtt_miss_ns = 0,
		.mtt_prefetch = 1,
		.atomic_ns = 3000,
		.irq_moderation_ns = 0,
		.bf_write_ns = 2000,
	},
};

const struct qrnic_timing_profile *qrnic_timing_profile_find(const char *name)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (name && !strcmp(profiles[i].name, name))
			return &profiles[i];
	return NULL;
}

const char *qrnic_timing_profile_names(void)
{
	return "functional, cx5-100g, teach";
}

static const char *const param_names[] = {
#define QRNIC_TM_NAME(n, doc) #n,
	QRNIC_TIMING_PARAMS(QRNIC_TM_NAME)
#undef QRNIC_TM_NAME
};
static const char *const param_docs[] = {
#define QRNIC_TM_DOC(n, doc) doc,
	QRNIC_TIMING_PARAMS(QRNIC_TM_DOC)
#undef QRNIC_TM_DOC
};
#define NPARAMS (sizeof(param_names) / sizeof(param_names[0]))

static uint32_t *param_ptr(struct qrnic_timing_profile *p, unsigned i)
{
	uint32_t *fields[] = {
#define QRNIC_TM_PTR(n, doc) &p->n,
		QRNIC_TIMING_PARAMS(QRNIC_TM_PTR)
#undef QRNIC_TM_PTR
	};
	return i < NPARAMS ? fields[i] : NULL;
}

const char *qrnic_timing_param_name(unsigned i)
{
	return i < NPARAMS ? param_names[i] : NULL;
}

const char *qrnic_timing_param_doc(unsigned i)
{
	return i < NPARAMS ? param_docs[i] : NULL;
}

static int param_index(const char *name)
{
	for (unsigned i = 0; i < NPARAMS; i++) {
		const char *a = param_names[i], *b = name;

		/* accept '-' for '_' (QEMU property spelling) */
		while (*a && (*a == *b || (*a == '_' && *b == '-'))) {
			a++;
			b++;
		}
		if (!*a && !*b)
			return (int)i;
	}
	return -1;
}

int qrnic_timing_param_set(struct qrnic_timing_profile *p, const char *name, uint64_t v)
{
	int i = param_index(name);

	if (i < 0 || v > UINT32_MAX)
		return -1;
	*param_ptr(p, (unsigned)i) = (uint32_t)v;
	return 0;
}

int qrnic_timing_param_get(const struct qrnic_timing_profile *p, const char *name, uint64_t *v)
{
	int i = param_index(name);

	if (i < 0)
		return -1;
	*v = *param_ptr((struct qrnic_timing_profile *)p, (unsigned)i);
	return 0;
}

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

int qrnic_timing_profile_check(const struct qrnic_timing_profile *p, char *err, size_t errlen)
{
#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)
	if (p->clock_mhz < 1 || p->clock_mhz > 10000)
		BAD("clock_mhz must be 1..10000");
	if (p->num_pu < 1 || p->num_pu > QRNIC_TM_MAX_PU)
		BAD("num_pu must be 1..%d", QRNIC_TM_MAX_PU);
	if (p->pcie_mbps < 1 || p->link_mbps < 1)
		BAD("pcie_mbps and link_mbps must be positive");
	if (!pow2(p->pcie_mrrs) || p->pcie_mrrs < 64 || p->pcie_mrrs > 4096 ||
	    !pow2(p->pcie_mps) || p->pcie_mps < 64 || p->pcie_mps > 4096)
		BAD("pcie_mrrs and pcie_mps must be powers of two in 64..4096");
	if (p->pcie_read_credits < 1 || p->pcie_read_credits > 256)
		BAD("pcie_read_credits must be 1..256");
	if (!p->qpc_ways || !p->mpt_ways || !p->mtt_ways || p->qpc_ways > QRNIC_TM_MAX_WAYS ||
	    p->mpt_ways > QRNIC_TM_MAX_WAYS || p->mtt_ways > QRNIC_TM_MAX_WAYS)
		BAD("cache ways must be 1..%d", QRNIC_TM_MAX_WAYS);
	if (p->qpc_entries % p->qpc_ways || p->mpt_entries % p->mpt_ways ||
	    p->mtt_entries % p->mtt_ways || !p->qpc_entries || !p->mpt_entries ||
	    !p->mtt_entries || p->qpc_entries > (1u << 20) || p->mpt_entries > (1u << 20) ||
	    p->mtt_entries > (1u << 20))
		BAD("cache entries must be a nonzero multiple of the ways, at most 2^20");
	if (p->mtt_prefetch > 1)
		BAD("mtt_prefetch must be 0 or 1");
	if (p->mtt_miss_slots > QRNIC_TM_MAX_MISS)
		BAD("mtt_miss_slots must be 0 (unlimited)..%d", QRNIC_TM_MAX_MISS);
	return 0;
#undef BAD
}

/* ---- caches -------------------------------------------------------------- */
static int cache_init(struct qrnic_tm_cache *c, uint32_t entries, uint32_t ways)
{
	memset(c, 0, sizeof(*c));
	c->ways = ways;
	c->sets = entries / ways;
	c->tag = malloc(sizeof(uint64_t) * entries);
	c->lru = calloc(entries, sizeof(uint64_t));
	c->ready = calloc(entries, sizeof(uint64_t));
	if (!c->tag || !c->lru || !c->ready)
		return -1;
	memset(c->tag, 0xff, sizeof(uint64_t) * entries);
	c->last = SIZE_MAX;
	return 0;
}

static void cache_fini(struct qrnic_tm_cache *c)
{
	free(c->tag);
	free(c->lru);
	free(c->ready);
	c->tag = c->lru = c->ready = NULL;
}

static void cache_clear(struct qrnic_tm_cache *c)
{
	if (c->tag)
		memset(c->tag, 0xff, sizeof(uint64_t) * c->sets * c->ways);
	if (c->ready)
		memset(c->ready, 0, sizeof(uint64_t) * c->sets * c->ways);
	c->hits = c->misses = 0;
	c->last = SIZE_MAX;
}

/* True on a hit; on a miss the LRU way of the set is replaced.  *where
 * (may be NULL) is the way's index in tag[]/ready[]. */
static bool cache_access(struct qrnic_tm_cache *c, uint64_t key, size_t *where)
{
	uint32_t h, set, victim = 0;
	uint64_t *tag, *lru;

	c->stamp++;
	/* the key of the last access is still where it was: only a miss
	 * replaces an entry, and a miss makes its key the last one */
	if (c->last != SIZE_MAX && c->tag[c->last] == key) {
		c->lru[c->last] = c->stamp;
		c->hits++;
		if (where)
			*where = c->last;
		return true;
	}
	h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32);
	set = (c->sets & (c->sets - 1)) ? h % c->sets : h & (c->sets - 1);
	tag = c->tag + (size_t)set * c->ways;
	lru = c->lru + (size_t)set * c->ways;
	for (uint32_t w = 0; w < c->ways; w++) {
		if (tag[w] == key) {
			lru[w] = c->stamp;
			c->hits++;
			c->last = (size_t)set * c->ways + w;
			if (where)
				*where = c->last;
			return true;
		}
	}
	/* a miss: the least recently used way (the first of equals) */
	for (uint32_t w = 1; w < c->ways; w++)
		if (lru[w] < lru[victim])
			victim = w;
	tag[victim] = key;
	lru[victim] = c->stamp;
	c->misses++;
	c->last = (size_t)set * c->ways + victim;
	if (where)
		*where = c->last;
	return false;
}

/* ---- life cycle ------------------------------------------------------------ */
void qrnic_timing_reset(struct qrnic_timing *t)
{
	memset(t->pu_free, 0, sizeof(t->pu_free));
	t->pu_head = 0;
	memset(t->last_irq, 0, sizeof(t->last_irq));
	memset(t->rd_credit_free, 0, sizeof(t->rd_credit_free));
	t->pcie_rd_free = t->pcie_wr_free = t->link_free = t->atomic_free = 0;
	t->pu_last = t->pcie_rd_last = t->rd_credit_last = 0;
	t->rd_slot = 0;
	memset(t->miss_free, 0, sizeof(t->miss_free));
	t->miss_last = 0;
	memset(t->mtt_recent, 0xff, sizeof(t->mtt_recent));
	t->mtt_recent_next = 0;
	t->mtt_last = UINT64_MAX;
	t->prefetches = 0;
	cache_clear(&t->qpc);
	cache_clear(&t->mpt);
	cache_clear(&t->mtt);
}

/*
 * Several divisions by profile parameters run per packet (cycles to ns,
 * PCIe and link transfer times, the read credit slot).  A hardware divide
 * costs tens of cycles; dividing by a d fixed at load time is exact as a
 * multiplication (Granlund and Montgomery): with s >= 48 + ceil(log2 d) and
 * m = ceil(2^s / d) = (2^s + e) / d, 0 <= e < d, (x * m) >> s = floor(x / d
 * + x * e / (d * 2^s)), and for x < 2^48 the extra term is under 2^(48 - s)
 * <= 2^-ceil(log2 d) <= 1/d, too little to reach the next integer.  Larger x (never here)
 * take the divide, as does every x where the compiler has no 128-bit
 * integers (32-bit hosts).  The divisors are 32-bit parameters, so m <
 * 2^64 (s = 64 for d <= 2^16, else m < 2^49).
 */
static void tm_div_init(struct qrnic_tm_div *v, uint64_t d)
{
	uint32_t l = 0;

	if (d == 0)
		d = 1;	/* the profile check rules it out */
	while (l < 63 && (1ull << l) < d)
		l++;
	v->d = d;
	/* s >= 64 as well (a larger s only shrinks the error term): the
	 * quotient is then the high word of x * m shifted right by s - 64, one
	 * multiply and one shift, where a 128-bit shift by a variable amount
	 * took several instructions (4 % of qrnic-sim with cx5-100g).  m <
	 * 2^64 needs d >= 2; d = 1 takes the divide. */
	v->s = 48 + l < 64 ? 64 : 48 + l;
#ifdef __SIZEOF_INT128__
	v->m = d >= 2 ? (uint64_t)((((unsigned __int128)1 << v->s) + d - 1) / d) : 0;	/* s <= 111 */
#else
	v->m = 0;
#endif
}

static inline uint64_t tm_div(const struct qrnic_tm_div *v, uint64_t x)
{
#ifdef __SIZEOF_INT128__
	if (!(x >> 48) && v->m)
		return (uint64_t)(((unsigned __int128)x * v->m) >> 64) >> (v->s - 64);
#endif
	return x / v->d;
}

/* (len + chunk - 1) / chunk in 32-bit arithmetic; chunk is a power of two
 * for the profile's PCIe sizes (checked), a shift then. */
static inline uint32_t div_up32(uint32_t len, uint32_t chunk)
{
	if (!(chunk & (chunk - 1)))
		return (len + chunk - 1) >> __builtin_ctz(chunk);
	return (len + chunk - 1) / chunk;
}

static uint64_t pcie_xfer_ns(const struct qrnic_timing *t, uint32_t len, uint32_t chunk);

int qrnic_timing_init(struct qrnic_timing *t, const struct qrnic_timing_profile *p)
{
	memset(t, 0, sizeof(*t));
	t->p = *p;
	tm_div_init(&t->by_clock, p->clock_mhz);
	/* cycles * 1000 / clock_mhz is cycles * (1000 / clock_mhz) when that
	 * is an integer (1000 MHz: 1 ns a cycle), one multiply per booking */
	t->ns_per_cycle = p->clock_mhz && 1000 % p->clock_mhz == 0 ? 1000 / p->clock_mhz : 0;
	tm_div_init(&t->by_pcie, p->pcie_mbps);
	tm_div_init(&t->by_link, p->link_mbps);
	t->xfer_mrrs = pcie_xfer_ns(t, p->pcie_mrrs, p->pcie_mps);
	for (unsigned i = 0; i < QRNIC_TM_XFER_MEMO; i++)
		t->xfer_memo_ns[i] = pcie_xfer_ns(t, 0, p->pcie_mps);	/* xfer_memo_len[i] = 0 */
	t->enabled = strcmp(p->name ? p->name : "", "functional") != 0;
	if (cache_init(&t->qpc, p->qpc_entries, p->qpc_ways) ||
	    cache_init(&t->mpt, p->mpt_entries, p->mpt_ways) ||
	    cache_init(&t->mtt, p->mtt_entries, p->mtt_ways)) {
		qrnic_timing_fini(t);
		return -1;
	}
	qrnic_timing_reset(t);
	return 0;
}

void qrnic_timing_fini(struct qrnic_timing *t)
{
	cache_fini(&t->qpc);
	cache_fini(&t->mpt);
	cache_fini(&t->mtt);
}

/* ---- resources ---------------------------------------------------------------- */
static inline uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

uint64_t qrnic_tm_cycles(const struct qrnic_timing *t, uint32_t cycles)
{
	if (t->ns_per_cycle)	/* the clock divides 1 GHz: exact */
		return (uint64_t)cycles * t->ns_per_cycle;
	return tm_div(&t->by_clock, (uint64_t)cycles * 1000);	/* cycles * 1000 / clock_mhz */
}

/*
 * Book 'cost' ns of a resource busy until *free for work ready at 'ready';
 * returns when the work starts.  The engines run in program order, not in
 * time order, so work can be ready earlier than work already booked (an
 * ACK received now while the requester has booked its packets microseconds
 * ahead).  Such work does not queue behind the later booking -- it fits in
 * the idle time before it -- but its cost still delays whatever comes after
 * it, so the resource's throughput is kept.  *last is the latest ready time
 * booked in time order.
 */
static uint64_t book(uint64_t *free, uint64_t *last, uint64_t ready, uint64_t cost)
{
	uint64_t start = ready;

	if (*free > ready && ready >= *last)
		start = *free;		/* in time order: wait for the resource */
	if (ready > *last)
		*last = ready;
	*free = max64(*free, ready) + cost;
	return start;
}

/*
 * The units are alike: which one takes a piece of work changes no time the
 * model computes, only when each unit is free does.  So pu_free[] holds
 * those times sorted, as a ring from pu_head.  The work goes to the unit
 * free first (the head).  Its new time is usually the latest of all (work
 * arriving in time order): it stays where it is and becomes the tail, the
 * head moving on.  Work booked out of time order (an ACK received while
 * packets are booked ahead) is sorted in, from the nearer end.  (A scan
 * for the earliest was a compare chain through all num_pu units per
 * booking.)
 */
static inline uint32_t ring_next(uint32_t i, uint32_t n)
{
	return i + 1 == n ? 0 : i + 1;
}

/* qrnic_tm_pu()'s new free time x of the head unit h is not the latest:
 * sort it in (apart, so that the common case saves no registers). */
static __attribute__((noinline)) void pu_sort_in(struct qrnic_timing *t, uint32_t h, uint64_t x)
{
	uint64_t *a = t->pu_free;
	uint32_t n = t->p.num_pu, tail = h ? h - 1 : n - 1, p = h, j;

	if (x < a[(h + n / 2) % n]) {
		/* early: the earlier units move down into the gap at the head */
		for (j = ring_next(h, n); a[j] < x; j = ring_next(j, n)) {
			a[p] = a[j];
			p = j;
		}
		a[p] = x;
	} else {
		/* late: x goes behind the tail, the later units move up */
		for (j = tail; a[j] > x; j = j ? j - 1 : n - 1) {
			a[p] = a[j];
			p = j;
		}
		a[p] = x;
		t->pu_head = ring_next(h, n);
	}
}

uint64_t qrnic_tm_pu(struct qrnic_timing *t, uint64_t ready, uint32_t cycles)
{
	uint64_t cost = qrnic_tm_cycles(t, cycles), *a = t->pu_free;
	uint32_t n = t->p.num_pu, h = t->pu_head, tail = h ? h - 1 : n - 1;
	uint64_t start = book(&a[h], &t->pu_last, ready, cost);

	if (a[h] >= a[tail])
		t->pu_head = ring_next(h, n);	/* a[h] is the latest: it is the tail now */
	else
		pu_sort_in(t, h, a[h]);
	return start + cost;
}

/* Bytes on the PCIe link for len bytes of payload split into TLPs of at
 * most 'chunk' bytes, at pcie_mbps (MB/s = bytes/us). */
static uint64_t pcie_xfer_ns(const struct qrnic_timing *t, uint32_t len, uint32_t chunk)
{
	uint64_t tlps = len ? div_up32(len, chunk) : 1;
	uint64_t bytes = len + tlps * t->p.pcie_tlp_overhead;

	return tm_div(&t->by_pcie, bytes * 1000 + t->p.pcie_mbps / 2);	/* nearest ns */
}

/* pcie_xfer_ns() in TLPs of pcie_mps, remembered for the few lengths a
 * workload repeats (descriptors, CQEs, payloads) in a small direct-mapped
 * table filled at load time for length 0 (qrnic_timing_init). */
static uint64_t pcie_xfer_mps(struct qrnic_timing *t, uint32_t len)
{
	unsigned i = (len >> 6) & (QRNIC_TM_XFER_MEMO - 1);

	if (t->xfer_memo_len[i] != len) {
		t->xfer_memo_len[i] = len;
		t->xfer_memo_ns[i] = pcie_xfer_ns(t, len, t->p.pcie_mps);
	}
	return t->xfer_memo_ns[i];
}

/* Whether the n credits from c on are all free by 'ready': the latest of
 * them, four at a time (a compare chain with a branch-free max). */
static inline bool credits_idle(const uint64_t *c, uint32_t n, uint64_t ready)
{
	uint64_t m0 = 0, m1 = 0, m2 = 0, m3 = 0;
	uint32_t i = 0;

	for (; i + 4 <= n; i += 4) {
		m0 = max64(m0, c[i]);
		m1 = max64(m1, c[i + 1]);
		m2 = max64(m2, c[i + 2]);
		m3 = max64(m3, c[i + 3]);
	}
	for (; i < n; i++)
		m0 = max64(m0, c[i]);
	return max64(max64(m0, m1), max64(m2, m3)) <= ready;
}

/*
 * qrnic_tm_dma_read() when the credits its requests take (the next nreq,
 * not wrapping) are free by 'ready', as they are unless reads are queued
 * on them: the loop below with what is then known.  Every request issues
 * at 'ready' and asks at req = ready + pcie_read_ns; if that is in time
 * order on the read direction, the requests' data follow each other from
 * when it is free (or req), else each comes in at req plus its transfer
 * (the idle time before later bookings); the direction's busy-until time
 * grows by every transfer either way, and each credit is held until its
 * data is in.
 */
static uint64_t dma_read_idle(struct qrnic_timing *t, uint64_t ready, uint32_t len, uint32_t nreq)
{
	uint32_t mrrs = t->p.pcie_mrrs, slot = t->rd_slot;
	/* every request but the last moves mrrs bytes (a power of two,
	 * checked), the last one too if len is a multiple of it */
	uint32_t nfull = len & (mrrs - 1) ? nreq - 1 : nreq;
	uint64_t *credit = t->rd_credit_free + slot;
	uint64_t req = ready + t->p.pcie_read_ns, x = t->xfer_mrrs, done;
	uint64_t acc = max64(t->pcie_rd_free, req);
	bool chain = req >= t->pcie_rd_last;

	/*
	 * The loop of the general case (dma_read_multi) in closed form: a
	 * full request's data comes in at acc + (i + 1) * x when chained
	 * (each after the one before it), else at req + x; the last,
	 * shorter one after them.  The latest of them is when all are in.
	 */
	if (chain) {
		t->pcie_rd_last = req;
		for (uint32_t i = 0; i < nfull; i++)
			credit[i] = acc += x;
		done = acc;
	} else {
		for (uint32_t i = 0; i < nfull; i++)
			credit[i] = req + x;
		acc += (uint64_t)nfull * x;
		done = nfull ? req + x : ready;
	}
	if (nfull < nreq) {
		uint64_t xl = pcie_xfer_mps(t, len - nfull * mrrs);
		uint64_t data = (chain ? acc : req) + xl;

		acc += xl;
		credit[nfull] = data;
		done = max64(done, data);
	}
	t->pcie_rd_free = acc;
	slot += nreq;
	t->rd_slot = slot == t->p.pcie_read_credits ? 0 : slot;
	return max64(done, ready);
}

/*
 * qrnic_tm_dma_read() of one request (len <= pcie_mrrs: descriptors,
 * CQ doorbell records, cache fills): the loop below run once, apart, so
 * that the common small read costs no more than it needs.
 */
static inline uint64_t dma_read_one(struct qrnic_timing *t, uint64_t ready, uint32_t len)
{
	uint32_t slot = t->rd_slot;
	uint64_t xfer = len == t->p.pcie_mrrs ? t->xfer_mrrs : pcie_xfer_mps(t, len);
	uint64_t credit = t->rd_credit_free[slot];
	bool in_order = ready >= t->rd_credit_last;
	uint64_t issue = in_order && credit > ready ? credit : ready;
	uint64_t req = issue + t->p.pcie_read_ns;
	uint64_t rd_free = t->pcie_rd_free, rd_last = t->pcie_rd_last;
	uint64_t data = (rd_free > req && req >= rd_last ? rd_free : req) + xfer;

	if (in_order)
		t->rd_credit_last = ready;
	if (req > rd_last)
		t->pcie_rd_last = req;
	t->pcie_rd_free = max64(rd_free, req) + xfer;
	t->rd_credit_free[slot] = max64(credit, ready) + (data - issue);
	t->rd_slot = slot + 1 == t->p.pcie_read_credits ? 0 : slot + 1;
	return max64(ready, data);
}

static __attribute__((noinline)) uint64_t dma_read_multi(struct qrnic_timing *t, uint64_t ready,
							  uint32_t len);

uint64_t qrnic_tm_dma_read(struct qrnic_timing *t, uint64_t ready, uint32_t len)
{
	return len <= t->p.pcie_mrrs ? dma_read_one(t, ready, len) : dma_read_multi(t, ready, len);
}

/* qrnic_tm_dma_read() of more than one request (apart, so that the
 * one-request case needs no registers saved). */
static __attribute__((noinline)) uint64_t dma_read_multi(struct qrnic_timing *t, uint64_t ready,
							  uint32_t len)
{
	uint32_t mrrs = t->p.pcie_mrrs, credits = t->p.pcie_read_credits;
	uint32_t nreq = div_up32(len, mrrs);
	uint32_t slot = t->rd_slot;
	uint64_t read_ns = t->p.pcie_read_ns;
	uint64_t rd_free = t->pcie_rd_free, rd_last = t->pcie_rd_last;
	/* All requests are ready at once, so the credit booking (book() with
	 * no cost) is in time order for all of them or for none, and its
	 * 'last' is ready from the first one on. */
	bool in_order = ready >= t->rd_credit_last;
	uint64_t done = ready;

	if (in_order)
		t->rd_credit_last = ready;
	if (slot + nreq <= credits && credits_idle(t->rd_credit_free + slot, nreq, ready))
		return dma_read_idle(t, ready, len, nreq);
	/* Each read request takes a credit for a round trip; the completion
	 * data then occupies the read direction of the link.  The credit is
	 * held until the data is in.  Every request but the last moves mrrs
	 * bytes, whose transfer time was computed once (qrnic_timing_init);
	 * the last one's is looked up once, before the loop. */
	uint64_t x = t->xfer_mrrs, xlast = len & (mrrs - 1) ? pcie_xfer_mps(t, len & (mrrs - 1)) : x;

	for (uint32_t i = 0; i < nreq; i++) {
		uint64_t xfer = i + 1 == nreq ? xlast : x;
		uint64_t credit = t->rd_credit_free[slot];
		uint64_t issue = in_order && credit > ready ? credit : ready;
		uint64_t req = issue + read_ns, data;

		/* book(&pcie_rd_free, &pcie_rd_last, req, xfer) + xfer */
		data = (rd_free > req && req >= rd_last ? rd_free : req) + xfer;
		if (req > rd_last)
			rd_last = req;
		rd_free = (rd_free > req ? rd_free : req) + xfer;
		/* busy from when it was free and the request ready (the later)
		 * until the data is in */
		t->rd_credit_free[slot] = max64(credit, ready) + (data - issue);
		done = max64(done, data);
		if (++slot == credits)
			slot = 0;
	}
	t->rd_slot = slot;
	t->pcie_rd_free = rd_free;
	t->pcie_rd_last = rd_last;
	return done;
}

uint64_t qrnic_tm_dma_write(struct qrnic_timing *t, uint64_t ready, uint32_t len)
{
	uint64_t start = max64(ready, t->pcie_wr_free);

	t->pcie_wr_free = start + pcie_xfer_mps(t, len);
	return t->pcie_wr_free + t->p.pcie_write_ns;
}

/* A BlueFlame write of len bytes (the WQE and its control word) that the
 * CPU stores into the doorbell page: posted, in 64-byte write-combining
 * TLPs; the device holds the whole WQE bf_write_ns after the bytes have
 * crossed the link.  Not booked on a direction: the model's PCIe read
 * direction carries completions, and MMIO writes are few beside them. */
uint64_t qrnic_tm_bf_write(struct qrnic_timing *t, uint32_t len)
{
	return t->p.bf_write_ns + pcie_xfer_ns(t, len, 64);
}

uint64_t qrnic_tm_link(struct qrnic_timing *t, uint64_t ready, uint32_t len)
{
	uint64_t bits = (uint64_t)(len + t->p.link_overhead) * 8;
	uint64_t start = max64(ready, t->link_free);

	/* Mb/s = bits/us: ns = bits * 1000 / mbps, rounded up */
	t->link_free = start + tm_div(&t->by_link, bits * 1000 + t->p.link_mbps - 1);
	return t->link_free;
}

static uint64_t miss(struct qrnic_timing *t, uint64_t ready, bool hit)
{
	return hit ? 0 : qrnic_tm_dma_read(t, ready, 64) - ready;
}

/*
 * An MTT line is fetched by one of mtt_miss_slots miss handlers (0: as many
 * as needed).  The least busy handler takes the fill when it is free
 * (booked like the other resources, book()); it reads the 64-byte line
 * over PCIe and stays busy mtt_miss_ns more (docs/timing.md section 3 says
 * what that stands for).  Returns when the line is in the cache.
 */
static uint64_t mtt_fill(struct qrnic_timing *t, uint64_t ready)
{
	uint32_t best = 0;
	uint64_t start, done;

	if (!t->p.mtt_miss_slots)
		return qrnic_tm_dma_read(t, ready, 64) + t->p.mtt_miss_ns;
	for (uint32_t i = 1; i < t->p.mtt_miss_slots; i++)
		if (t->miss_free[i] < t->miss_free[best])
			best = i;
	start = book(&t->miss_free[best], &t->miss_last, ready, 0);
	done = qrnic_tm_dma_read(t, start, 64) + t->p.mtt_miss_ns;
	t->miss_free[best] += done - start;
	return done;
}

static bool mtt_recent(const struct qrnic_timing *t, uint64_t line)
{
	for (unsigned i = 0; i < QRNIC_TM_STREAMS; i++)
		if (t->mtt_recent[i] == line)
			return true;
	return false;
}

/*
 * MTT lookup of line 'line' (8 pages) at 'ready'.  A miss waits for the
 * fill.  A line still being filled (by an earlier miss or a prefetch) is a
 * hit that waits for the rest of the fill.  Sequential streams: when a
 * lookup enters a line (another line than the previous lookup's) whose
 * predecessor is one of the last QRNIC_TM_STREAMS distinct lines looked
 * up, the next line is prefetched in the background unless cached
 * (mtt_prefetch): a stream through a large buffer then never waits for its
 * translations; random accesses hardly ever trigger it.
 */
static uint64_t mtt_lookup(struct qrnic_timing *t, uint64_t ready, uint64_t line, bool *hit)
{
	size_t w;
	uint64_t delay = 0;

	*hit = cache_access(&t->mtt, line, &w);
	if (*hit) {
		if (t->mtt.ready[w] > ready)
			delay = t->mtt.ready[w] - ready;
	} else {
		t->mtt.ready[w] = mtt_fill(t, ready);
		delay = t->mtt.ready[w] - ready;
	}
	if (line != t->mtt_last) {	/* entering another line */
		if (t->p.mtt_prefetch && line && mtt_recent(t, line - 1)) {
			size_t pw;

			/* a prefetch is not a lookup: no hit or miss counted */
			if (!cache_access(&t->mtt, line + 1, &pw)) {
				t->mtt.misses--;
				t->mtt.ready[pw] = mtt_fill(t, ready);
				t->prefetches++;
			} else {
				t->mtt.hits--;
			}
		}
		if (!mtt_recent(t, line))
			t->mtt_recent[t->mtt_recent_next++ % QRNIC_TM_STREAMS] = line;
		t->mtt_last = line;
	}
	return delay;
}

uint64_t qrnic_tm_lookup(struct qrnic_timing *t, enum qrnic_tm_cache_id c, uint64_t ready,
			 uint32_t key, bool *hit)
{
	bool h;

	switch (c) {
	case QRNIC_TM_QPC:
		h = cache_access(&t->qpc, key, NULL);
		break;
	case QRNIC_TM_MPT:
		h = cache_access(&t->mpt, key, NULL);
		break;
	default: {
		uint64_t delay = mtt_lookup(t, ready, key / 8, &h);	/* 8 pages a line */

		if (hit)
			*hit = h;
		return delay;
	}
	}
	if (hit)
		*hit = h;
	return miss(t, ready, h);
}

uint64_t qrnic_tm_qpc(struct qrnic_timing *t, uint64_t ready, uint32_t qpn)
{
	return qrnic_tm_lookup(t, QRNIC_TM_QPC, ready, qpn, NULL);
}

uint64_t qrnic_tm_mpt(struct qrnic_timing *t, uint64_t ready, uint32_t idx)
{
	return qrnic_tm_lookup(t, QRNIC_TM_MPT, ready, idx, NULL);
}

uint64_t qrnic_tm_mtt(struct qrnic_timing *t, uint64_t ready, uint32_t idx)
{
	return qrnic_tm_lookup(t, QRNIC_TM_MTT, ready, idx, NULL);
}

uint64_t qrnic_tm_atomic(struct qrnic_timing *t, uint64_t ready)
{
	t->atomic_free = max64(ready, t->atomic_free) + t->p.atomic_ns;
	return t->atomic_free;
}

uint64_t qrnic_tm_irq(struct qrnic_timing *t, uint64_t ready, unsigned vector)
{
	uint64_t at = ready;

	if (vector >= sizeof(t->last_irq) / sizeof(t->last_irq[0]))
		return ready;
	if (t->last_irq[vector] && t->p.irq_moderation_ns)
		at = max64(ready, t->last_irq[vector] + t->p.irq_moderation_ns);
	t->last_irq[vector] = at;
	return at;
}
