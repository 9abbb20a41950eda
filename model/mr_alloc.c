/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: the allocators of the memory protection table (MPT
 * slots) and of the translation table (MTT ranges), their rebuild after a
 * snapshot load and their self-check.  The firmware takes and gives slots and
 * ranges through these services (qrnic_fw_services.h); mr.c does the
 * protection and translation that read the tables.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qrnic_internal.h"

/* ---- MPT slot allocator ----------------------------------------------------
 * The lowest free slot first, as the linear scan this replaces: a slot
 * freed is the next one handed out (with the next tag of the slot), so
 * keys are what they were.  Slots >= top were not handed out since the
 * reset and need no bit; below top, the bitmap of struct qrnic_idmap
 * (qrnic_internal.h) marks the free ones.  Peek is four count-trailing-
 * zeros, take and give at most four word updates each: O(1) whatever the
 * table size.  Memory: one bit per slot below the high-water mark (plus
 * 1/63 for the upper levels), grown by doubling when top reaches it.
 * Hand-written: GLib has no bitmap with find-first-set, and a GTree of
 * free slot numbers would cost ~40 bytes per freed slot instead of a bit.
 */
static bool idmap_grow(struct qrnic_idmap *m, uint32_t need, uint32_t max)
{
	uint32_t cap = m->cap ? m->cap : 64;
	uint64_t limit = ((uint64_t)max + 63) & ~63ull;

	while (cap < need && cap < limit)
		cap = cap > UINT32_MAX / 2 ? UINT32_MAX & ~63u : cap * 2;
	if (cap > limit)
		cap = (uint32_t)limit;
	if (cap < need)
		return false;
	for (unsigned k = 0, div = 64; k < QRNIC_IDMAP_LEVELS; k++, div *= 64) {
		size_t o = m->cap ? (m->cap + div - 1) / div : 0, n = (cap + div - 1) / div;
		uint64_t *w = realloc(m->w[k], n * sizeof(*w));

		if (!w)
			return false;	/* the levels grown so far stay: harmless */
		memset(w + o, 0, (n - o) * sizeof(*w));
		m->w[k] = w;
	}
	m->cap = cap;
	return true;
}

static bool idmap_test(const struct qrnic_idmap *m, uint32_t i)
{
	return i < m->cap && (m->w[0][i >> 6] >> (i & 63) & 1);
}

static void idmap_set(struct qrnic_idmap *m, uint32_t i)
{
	for (unsigned k = 0; k < QRNIC_IDMAP_LEVELS; k++, i >>= 6) {
		uint64_t *w = &m->w[k][i >> 6];
		bool was = *w != 0;

		*w |= 1ull << (i & 63);
		if (was)
			break;
	}
}

static void idmap_clear(struct qrnic_idmap *m, uint32_t i)
{
	for (unsigned k = 0; k < QRNIC_IDMAP_LEVELS; k++, i >>= 6) {
		uint64_t *w = &m->w[k][i >> 6];

		*w &= ~(1ull << (i & 63));
		if (*w)
			break;
	}
}

/* The lowest set bit, or UINT32_MAX. */
static uint32_t idmap_first(const struct qrnic_idmap *m)
{
	uint32_t i = 0;

	if (!m->cap || !m->w[QRNIC_IDMAP_LEVELS - 1][0])
		return UINT32_MAX;
	for (int k = QRNIC_IDMAP_LEVELS - 1; k >= 0; k--)
		i = i << 6 | (uint32_t)__builtin_ctzll(m->w[k][i]);
	return i;
}

static void idmap_empty(struct qrnic_idmap *m)
{
	for (unsigned k = 0, div = 64; k < QRNIC_IDMAP_LEVELS; k++, div *= 64)
		if (m->w[k])
			memset(m->w[k], 0, (m->cap + div - 1) / div * sizeof(uint64_t));
	m->top = 1;	/* slot 0 is never handed out */
}

/* Slots an 8-bit tag leaves room for in a 32-bit key */
static uint32_t mpt_limit(const struct qrnic_dev *d)
{
	uint32_t keys = (UINT32_MAX >> QRNIC_KEY_TAG_BITS) + 1;

	return d->cfg.max_mr < keys ? d->cfg.max_mr : keys;
}

uint32_t qrnic_mpt_peek(struct qrnic_dev *d)
{
	struct qrnic_idmap *m = &d->mpt_ids;
	uint32_t i = idmap_first(m);

	if (i != UINT32_MAX)
		return i;
	if (m->top >= mpt_limit(d))
		return 0;
	/* room for top's bit now: give never allocates */
	if (m->top >= m->cap && !idmap_grow(m, m->top + 1, d->cfg.max_mr))
		return 0;
	return m->top;
}

void qrnic_mpt_take(struct qrnic_dev *d, uint32_t idx)
{
	struct qrnic_idmap *m = &d->mpt_ids;

	if (idx == m->top && idx < m->cap) {
		m->top++;
		if (d->mr_seen < m->top)
			d->mr_seen = m->top;
	} else if (idx < m->top) {
		idmap_clear(m, idx);
	}
}

void qrnic_mpt_give(struct qrnic_dev *d, uint32_t idx)
{
	struct qrnic_idmap *m = &d->mpt_ids;

	if (idx == 0 || idx >= m->top)
		return;		/* not handed out */
	if (idx + 1 < m->top) {
		idmap_set(m, idx);
		return;
	}
	/* the top slot: top comes down over the free slots below it (each
	 * was set once: amortized O(1)) */
	m->top--;
	while (m->top > 1 && idmap_test(m, m->top - 1)) {
		idmap_clear(m, m->top - 1);
		m->top--;
	}
}

/* ---- MTT allocator ----------------------------------------------------------
 * First fit, as the byte-map scan this replaces: the lowest run of n free
 * entries.  The free extents (maximal runs of free entries) are the nodes
 * of a treap ordered by start; each node knows the longest extent in its
 * subtree, so the first extent of at least n entries is found in one
 * descent.  Alloc and free are a few splits and merges: O(log e) expected
 * for e extents (e <= allocations + 1), plus the n entries themselves
 * (marked and cleared in mtt_used, which the snapshot and the MR checks
 * read).  Memory: 24 bytes per extent, nodes in one array grown by
 * doubling; allocation keeps two spare nodes so that a free (which adds
 * at most one extent) does not need memory.  Hand-written: the first-fit
 * descent needs the subtree maximum in every node, which GLib's GTree and
 * GSequence do not let a caller keep.
 */
#define MT(d) (&(d)->mtt_tree)

static uint32_t mt_max(const struct qrnic_mtt_node *n, uint32_t x)
{
	return x ? n[x].maxlen : 0;
}

static void mt_upd(struct qrnic_mtt_node *n, uint32_t x)
{
	uint32_t a = mt_max(n, n[x].l), b = mt_max(n, n[x].r), m = n[x].len;

	n[x].maxlen = m > a ? (m > b ? m : b) : (a > b ? a : b);
}

/* a: the nodes of x with start < key, b: the others.  Recursion depth: the
 * treap's height (expected ~3 ln e). */
static void mt_split(struct qrnic_mtt_node *n, uint32_t x, uint32_t key, uint32_t *a,
		     uint32_t *b)
{
	if (!x) {
		*a = *b = 0;
		return;
	}
	if (n[x].start < key) {
		mt_split(n, n[x].r, key, &n[x].r, b);
		*a = x;
	} else {
		mt_split(n, n[x].l, key, a, &n[x].l);
		*b = x;
	}
	mt_upd(n, x);
}

/* every start in a below every start in b */
static uint32_t mt_merge(struct qrnic_mtt_node *n, uint32_t a, uint32_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (n[a].prio > n[b].prio) {
		n[a].r = mt_merge(n, n[a].r, b);
		mt_upd(n, a);
		return a;
	}
	n[b].l = mt_merge(n, a, n[b].l);
	mt_upd(n, b);
	return b;
}

static uint32_t mt_leftmost(const struct qrnic_mtt_node *n, uint32_t x)
{
	while (x && n[x].l)
		x = n[x].l;
	return x;
}

static uint32_t mt_rightmost(const struct qrnic_mtt_node *n, uint32_t x)
{
	while (x && n[x].r)
		x = n[x].r;
	return x;
}

/* At least k nodes available without allocating. */
static bool mt_reserve(struct qrnic_mtt_tree *t, uint32_t k)
{
	uint32_t cap;
	struct qrnic_mtt_node *n;

	if (t->nspare + (t->cap - t->hi) >= k)
		return true;
	cap = t->cap ? t->cap : 16;
	while (t->nspare + (cap - t->hi) < k) {
		if (cap > UINT32_MAX / 2)
			return false;
		cap *= 2;
	}
	n = realloc(t->n, (size_t)cap * sizeof(*n));
	if (!n)
		return false;
	if (!t->cap)
		memset(&n[0], 0, sizeof(n[0]));	/* the empty tree */
	t->n = n;
	t->cap = cap;
	return true;
}

/* A node from the reserve (mt_reserve first). */
static uint32_t mt_node(struct qrnic_mtt_tree *t, uint32_t start, uint32_t len)
{
	uint32_t x;

	if (t->nspare) {
		x = t->spare;
		t->spare = t->n[x].l;
		t->nspare--;
	} else {
		x = t->hi++;
	}
	t->seed ^= t->seed << 13;	/* xorshift32: the same tree every run */
	t->seed ^= t->seed >> 17;
	t->seed ^= t->seed << 5;
	t->n[x] = (struct qrnic_mtt_node){ start, len, len, t->seed, 0, 0 };
	t->nodes++;
	return x;
}

static void mt_recycle(struct qrnic_mtt_tree *t, uint32_t x)
{
	t->n[x].l = t->spare;
	t->spare = x;
	t->nspare++;
	t->nodes--;
}

/* Every entry free: one extent [0, max_mtt).  The arena stays. */
static void mt_reset(struct qrnic_dev *d)
{
	struct qrnic_mtt_tree *t = MT(d);

	t->hi = 1;
	t->spare = t->nspare = 0;
	t->nodes = 0;
	t->seed = 2463534242u;
	t->root = mt_node(t, 0, d->cfg.max_mtt);	/* cap >= 16: init reserved */
}

/* [s, s+len) (all allocated) becomes free, joined with the extents next to
 * it.  False without memory for a node: the entries stay allocated. */
static bool mt_insert(struct qrnic_mtt_tree *t, uint32_t s, uint32_t len)
{
	struct qrnic_mtt_node *n;
	uint32_t a, b, p, q, rest;

	if (!mt_reserve(t, 1))
		return false;
	n = t->n;
	mt_split(n, t->root, s, &a, &b);
	p = mt_rightmost(n, a);
	q = mt_leftmost(n, b);
	if (q && s + len == n[q].start) {	/* q joins: take it out of b */
		mt_split(n, b, n[q].start + 1, &q, &rest);
		b = rest;
	} else {
		q = 0;
	}
	if (p && n[p].start + n[p].len == s) {	/* grows p (and takes q) */
		mt_split(n, a, n[p].start, &a, &p);
		n[p].len += len;
		if (q) {
			n[p].len += n[q].len;
			mt_recycle(t, q);
		}
		mt_upd(n, p);
	} else if (q) {				/* grows q downwards */
		n[q].start = s;
		n[q].len += len;
		mt_upd(n, q);
		p = q;
	} else {
		p = mt_node(t, s, len);
	}
	t->root = mt_merge(n, mt_merge(n, a, p), b);
	return true;
}

uint32_t qrnic_mtt_alloc(struct qrnic_dev *d, uint32_t n)
{
	struct qrnic_mtt_tree *t = MT(d);
	struct qrnic_mtt_node *nd;
	uint32_t x, s, a, b, c;

	if (n == 0 || n > d->mtt_free || !t->n || mt_max(t->n, t->root) < n)
		return UINT32_MAX;
	/* two spare nodes: a later free (which may add an extent) needs none */
	if (!mt_reserve(t, 2))
		return UINT32_MAX;
	nd = t->n;
	/* the leftmost extent of at least n entries */
	for (x = t->root;;) {
		if (mt_max(nd, nd[x].l) >= n)
			x = nd[x].l;
		else if (nd[x].len >= n)
			break;
		else
			x = nd[x].r;
	}
	s = nd[x].start;
	mt_split(nd, t->root, s, &a, &b);
	mt_split(nd, b, s + 1, &b, &c);		/* b is x alone */
	if (nd[x].len > n) {
		nd[x].start += n;
		nd[x].len -= n;
		mt_upd(nd, x);
	} else {
		mt_recycle(t, x);
		b = 0;
	}
	t->root = mt_merge(nd, mt_merge(nd, a, b), c);
	memset(d->mtt_used + s, 1, n);
	d->mtt_free -= n;
	if (d->mtt_top < s + n)
		d->mtt_top = s + n;
	return s;
}

void qrnic_mtt_free(struct qrnic_dev *d, uint32_t base, uint32_t n)
{
	uint32_t max = d->cfg.max_mtt;
	uint32_t i = base, s;

	if (!d->mtt_used || base >= max || n > max - base)
		return;
	/* each run of allocated entries in the range (more than one only if
	 * part of it was freed before: tolerated, counted once) */
	while (i < base + n) {
		if (!d->mtt_used[i]) {
			i++;
			continue;
		}
		for (s = i; i < base + n && d->mtt_used[i]; i++)
			;
		if (!mt_insert(MT(d), s, i - s))
			continue;	/* out of memory: the run stays allocated */
		memset(d->mtt_used + s, 0, i - s);
		memset(d->mtt + s, 0, (size_t)(i - s) * sizeof(*d->mtt));
		d->mtt_free += i - s;
	}
}

/* In order: the gaps between free extents are the allocated runs. */
static void mt_walk(const struct qrnic_mtt_node *n, uint32_t x, uint32_t *end, uint32_t *count,
		    void (*fn)(void *, uint32_t, uint32_t), void *opaque)
{
	if (!x)
		return;
	mt_walk(n, n[x].l, end, count, fn, opaque);
	if (n[x].start > *end) {
		if (fn)
			fn(opaque, *end, n[x].start - *end);
		++*count;
	}
	*end = n[x].start + n[x].len;
	mt_walk(n, n[x].r, end, count, fn, opaque);
}

uint32_t qrnic_mtt_runs(struct qrnic_dev *d, void (*fn)(void *, uint32_t, uint32_t),
			void *opaque)
{
	uint32_t end = 0, count = 0;

	if (!MT(d)->n)
		return 0;
	mt_walk(MT(d)->n, MT(d)->root, &end, &count, fn, opaque);
	if (end < d->cfg.max_mtt) {
		if (fn)
			fn(opaque, end, d->cfg.max_mtt - end);
		count++;
	}
	return count;
}

/* ---- both allocators: life cycle, rebuild, check ------------------------- */
int qrnic_mr_alloc_init(struct qrnic_dev *d)
{
	if (!mt_reserve(MT(d), 16) || !idmap_grow(&d->mpt_ids, 64, d->cfg.max_mr))
		return -1;
	d->mr_seen = 1;
	return 0;
}

void qrnic_mr_alloc_fini(struct qrnic_dev *d)
{
	free(MT(d)->n);
	memset(MT(d), 0, sizeof(*MT(d)));
	for (unsigned k = 0; k < QRNIC_IDMAP_LEVELS; k++)
		free(d->mpt_ids.w[k]);
	memset(&d->mpt_ids, 0, sizeof(d->mpt_ids));
}

void qrnic_mr_alloc_reset(struct qrnic_dev *d)
{
	if (!MT(d)->n)
		return;
	mt_reset(d);
	idmap_empty(&d->mpt_ids);
	d->mtt_free = d->cfg.max_mtt;
	d->mtt_top = 0;
}

/* From the MPT (slots below mr_seen) and mtt_used (entries below mtt_top),
 * which a stream load filled in: derived, so not in the stream. */
bool qrnic_mr_alloc_rebuild(struct qrnic_dev *d)
{
	struct qrnic_idmap *m = &d->mpt_ids;
	struct qrnic_mtt_tree *t = MT(d);
	uint32_t top = 1, i, s, root = 0;

	for (i = 1; i < d->mr_seen; i++)
		if (qrnic_mpt_in_use(&d->mr[i]))
			top = i + 1;
	idmap_empty(m);
	if (top > m->cap && !idmap_grow(m, top, d->cfg.max_mr))
		return false;
	for (i = 1; i < top; i++)
		if (!qrnic_mpt_in_use(&d->mr[i]))
			idmap_set(m, i);
	m->top = top;

	mt_reset(d);
	t->root = 0;
	mt_recycle(t, 1);
	d->mtt_free = 0;
	for (i = 0; i < d->cfg.max_mtt;) {
		if (i < d->mtt_top && d->mtt_used[i]) {
			i++;
			continue;
		}
		for (s = i; i < d->mtt_top && !d->mtt_used[i]; i++)
			;
		if (i >= d->mtt_top)
			i = d->cfg.max_mtt;	/* never allocated since the reset */
		if (!mt_reserve(t, 1))
			return false;
		root = mt_merge(t->n, root, mt_node(t, s, i - s));
		d->mtt_free += i - s;
	}
	t->root = root;
	return mt_reserve(t, 2);
}

static int mt_check(const struct qrnic_dev *d, const struct qrnic_mtt_node *n, uint32_t x,
		    uint32_t *end, uint64_t *sum, uint32_t *count, char *why, size_t len)
{
	uint32_t e;

	if (!x)
		return 0;
	if (mt_check(d, n, n[x].l, end, sum, count, why, len))
		return -1;
	if ((n[x].l && n[n[x].l].prio > n[x].prio) || (n[x].r && n[n[x].r].prio > n[x].prio)) {
		snprintf(why, len, "MTT extent %u: heap order", n[x].start);
		return -1;
	}
	e = n[x].len;
	if (mt_max(n, n[x].l) > e)
		e = mt_max(n, n[x].l);
	if (mt_max(n, n[x].r) > e)
		e = mt_max(n, n[x].r);
	if (e != n[x].maxlen || n[x].len == 0 || n[x].len > d->cfg.max_mtt - n[x].start ||
	    (*count && n[x].start <= *end)) {
		snprintf(why, len, "MTT extent %u+%u: bad length, order or join", n[x].start,
			 n[x].len);
		return -1;
	}
	/* allocated before it, free in it (below mtt_top: never touched above) */
	for (uint32_t i = *end; i < n[x].start; i++)
		if (!d->mtt_used[i]) {
			snprintf(why, len, "MTT entry %u is free but in no extent", i);
			return -1;
		}
	for (uint32_t i = n[x].start; i < n[x].start + n[x].len && i < d->mtt_top; i++)
		if (d->mtt_used[i]) {
			snprintf(why, len, "MTT entry %u is allocated but in an extent", i);
			return -1;
		}
	*end = n[x].start + n[x].len;
	*sum += n[x].len;
	++*count;
	return mt_check(d, n, n[x].r, end, sum, count, why, len);
}

int qrnic_dev_check_alloc(struct qrnic_dev *d, char *why, size_t len)
{
	const struct qrnic_idmap *m = &d->mpt_ids;
	const struct qrnic_mtt_tree *t = MT(d);
	uint32_t end = 0, count = 0;
	uint64_t sum = 0;

	if (mt_check(d, t->n, t->root, &end, &sum, &count, why, len))
		return -1;
	for (uint32_t i = end; i < d->cfg.max_mtt && i < d->mtt_top; i++)
		if (!d->mtt_used[i]) {
			snprintf(why, len, "MTT entry %u is free but in no extent", i);
			return -1;
		}
	if (sum != d->mtt_free || count != t->nodes) {
		snprintf(why, len, "MTT: %llu entries in %u extents, %u free in %u nodes",
			 (unsigned long long)sum, count, d->mtt_free, t->nodes);
		return -1;
	}
	if (m->top < 1 || m->top > d->mr_seen || m->top > m->cap) {
		snprintf(why, len, "MPT: top %u, %u slots seen, bitmap of %u", m->top, d->mr_seen,
			 m->cap);
		return -1;
	}
	for (uint32_t i = 1; i < d->mr_seen; i++) {
		bool in_use = qrnic_mpt_in_use(&d->mr[i]);
		bool free_bit = idmap_test(m, i);

		if (i < m->top ? in_use == free_bit : (in_use || free_bit)) {
			snprintf(why, len, "MPT slot %u: %s but %s", i,
				 in_use ? "in use" : "free", free_bit ? "marked free" : "not marked free");
			return -1;
		}
	}
	if (m->top > 1 && !qrnic_mpt_in_use(&d->mr[m->top - 1])) {
		snprintf(why, len, "MPT: top %u above a free slot", m->top);
		return -1;
	}
	/* the upper levels summarize the lower ones */
	for (unsigned k = 1, div = 64; k < QRNIC_IDMAP_LEVELS; k++, div *= 64)
		for (uint32_t j = 0; j < (m->cap + div - 1) / div; j++)
			if ((m->w[k][j >> 6] >> (j & 63) & 1) != (m->w[k - 1][j] != 0)) {
				snprintf(why, len, "MPT bitmap level %u word %u", k, j);
				return -1;
			}
	return 0;
}
