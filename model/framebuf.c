/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: frame buffers that change hands without a copy.
 *
 * A frame is built in such a buffer, held by a timed transmit effect,
 * handed to the host (ops->tx_frame_buf), carried by its wire and handed
 * to the receiving device (qrnic_dev_rx_frame_buf), which frees it after
 * dispatch.  Two size classes (a RoCE frame of up to 4 KiB payload, and
 * the largest Ethernet frame); freed buffers are kept on small per-thread
 * free lists, so a steady stream of frames allocates nothing.  A buffer
 * may be freed by any thread and any device of the process.
 *
 * A buffer may start a little past its cache line (qrnic_frame_buf_alloc_at):
 * the frame's payload then sits on a cache line of its own, and copying it
 * from or to a 64-byte aligned host buffer is a co-aligned memcpy -- one
 * between addresses that differ modulo 64 costs several times more.  The
 * header is found again by rounding down, the shift being under 64 bytes.
 *
 * A buffer may carry its payload by reference (qrnic_frame_buf_set_ref):
 * bytes [off, off + len) of the frame are then not in the buffer but at
 * src in host memory, read when the peer device writes them to its own
 * memory -- one copy per packet instead of two.  Only a device whose host
 * offers ops->dma_map builds such frames (see qrnic_model.h); whoever
 * reads a frame's bytes otherwise calls qrnic_frame_buf_fill() first.
 * A host that maps its memory for the reference (QEMU: address_space_map)
 * gets each mapping back once (ops->dma_unmap) when the bytes are copied
 * (qrnic_frame_buf_fill) or the buffer is freed, whichever comes first.
 *
 * Such a frame may also carry its headers by description
 * (qrnic_frame_buf_set_pkt): the packet it was to be built from, not the
 * header bytes.  The receiving device takes the packet as parsing the
 * built frame would give it (qrnic_wire_pkt_received), and
 * qrnic_frame_buf_fill() builds the bytes (with the same builder, so the
 * same bytes) for whoever reads them.
 */
#include <stdlib.h>
#include <string.h>

#include "qrnic_internal.h"

#define FB_HDR		320u	/* hidden header, 64-byte multiple: keeps data cache-line aligned */
#define FB_SLACK	64u	/* room for the start shift of qrnic_frame_buf_alloc_at */
#define FB_KEEP		512u	/* free buffers kept per class and thread */

struct fb_hdr {
	struct fb_hdr *next;
	const uint8_t *ref;	/* payload by reference (qrnic_frame_buf_set_ref), or NULL */
	uint32_t ref_off, ref_len;
	/* the host's mappings the reference is made of (ops->dma_unmap) */
	void (*unmap)(const void *ptr, size_t len);
	uint32_t nmap;
	struct qrnic_ref_map map[QRNIC_REF_MAPS];
	uint32_t cls;
	bool has_pkt;		/* headers by description (qrnic_frame_buf_set_pkt) */
	bool icrc_vouched;	/* the host vouches for its ICRC (qrnic_dev_rx_frame_buf_vouched) */
	bool train;		/* a train of packets (qrnic_frame_buf_train): its data area holds it */
	uint32_t icrc_len;	/* ICRC not yet computed over this many bytes (0: none pending) */
	struct qrnic_pkt pkt;
};

_Static_assert(sizeof(struct fb_hdr) <= FB_HDR, "frame buffer header too big");

static const size_t fb_cap[2] = {
	(QRNIC_MAX_FRAME + 63) & ~(size_t)63,
	(QRNIC_FRAME_BUF_MAX + 63) & ~(size_t)63,
};

static __thread struct fb_hdr *fb_free[2];
static __thread uint32_t fb_nfree[2];

uint8_t *qrnic_frame_buf_alloc(size_t len)
{
	return qrnic_frame_buf_alloc_at(len, 0);
}

uint8_t *qrnic_frame_buf_alloc_at(size_t len, size_t aligned_off)
{
	uint32_t cls = len <= fb_cap[0] ? 0 : 1;
	struct fb_hdr *h;

	if (len > fb_cap[1])
		return NULL;
	h = fb_free[cls];
	if (h) {
		fb_free[cls] = h->next;
		fb_nfree[cls]--;
	} else {
		h = aligned_alloc(64, FB_HDR + FB_SLACK + fb_cap[cls]);
		if (!h)
			return NULL;
		h->cls = cls;
	}
	h->next = NULL;
	h->ref = NULL;
	h->nmap = 0;
	h->has_pkt = false;
	h->icrc_vouched = false;
	h->train = false;
	h->icrc_len = 0;
	return (uint8_t *)h + FB_HDR + (64 - aligned_off % 64) % 64;
}

static struct fb_hdr *fb_hdr_of(const uint8_t *buf)
{
	return (struct fb_hdr *)(((uintptr_t)buf - FB_HDR) & ~(uintptr_t)63);
}

void qrnic_frame_buf_set_ref(uint8_t *buf, uint32_t off, const uint8_t *src, uint32_t len)
{
	struct fb_hdr *h = fb_hdr_of(buf);

	h->ref = src;
	h->ref_off = off;
	h->ref_len = len;
}

void qrnic_frame_buf_set_maps(uint8_t *buf, void (*unmap)(const void *, size_t),
			      const struct qrnic_ref_map *map, uint32_t n)
{
	struct fb_hdr *h = fb_hdr_of(buf);

	h->unmap = unmap;
	h->nmap = n;
	memcpy(h->map, map, n * sizeof(*map));
}

/* The payload's bytes are copied or no longer needed: the host's mappings
 * of them go back, once. */
static void fb_unmap(struct fb_hdr *h)
{
	uint32_t n = h->nmap;

	h->nmap = 0;
	for (uint32_t i = 0; i < n; i++)
		h->unmap(h->map[i].ptr, h->map[i].len);
}

const uint8_t *qrnic_frame_buf_ref(const uint8_t *buf, uint32_t *off, uint32_t *len)
{
	const struct fb_hdr *h = fb_hdr_of(buf);

	if (h->ref) {
		*off = h->ref_off;
		*len = h->ref_len;
	}
	return h->ref;
}

void qrnic_frame_buf_set_pkt(uint8_t *buf, const struct qrnic_pkt *p)
{
	struct fb_hdr *h = fb_hdr_of(buf);

	h->pkt = *p;
	h->has_pkt = true;
}

void qrnic_frame_buf_set_vouched(uint8_t *buf, bool on)
{
	fb_hdr_of(buf)->icrc_vouched = on;
}

bool qrnic_frame_buf_vouched(const uint8_t *buf)
{
	return buf && fb_hdr_of(buf)->icrc_vouched;
}

void qrnic_frame_buf_set_icrc_pending(uint8_t *buf, size_t len)
{
	fb_hdr_of(buf)->icrc_len = (uint32_t)len;
}

bool qrnic_frame_buf_icrc_pending(const uint8_t *buf)
{
	return buf && fb_hdr_of(buf)->icrc_len;
}

bool qrnic_frame_buf_described(const uint8_t *buf)
{
	return buf && fb_hdr_of(buf)->has_pkt;
}

const struct qrnic_pkt *qrnic_frame_buf_pkt(const uint8_t *buf)
{
	const struct fb_hdr *h = fb_hdr_of(buf);

	return h->has_pkt ? &h->pkt : NULL;
}

const uint8_t *qrnic_frame_buf_dmac(const uint8_t *buf)
{
	const struct fb_hdr *h = fb_hdr_of(buf);

	return h->has_pkt ? h->pkt.dmac : buf;
}

void qrnic_frame_buf_fill_headers(uint8_t *buf)
{
	struct fb_hdr *h = buf ? fb_hdr_of(buf) : NULL;

	if (h && h->has_pkt) {
		/* the headers around the payload's place (not read: a payload
		 * in place is not copied, and no ICRC is computed: such frames
		 * come from a trusted wire) */
		h->has_pkt = false;
		qrnic_wire_build_icrc(&h->pkt, h->ref ? buf + h->ref_off : NULL, h->ref ? h->ref_len : 0,
				      buf, fb_cap[h->cls], false);
	}
}

void qrnic_frame_buf_fill(uint8_t *buf)
{
	struct fb_hdr *h = buf ? fb_hdr_of(buf) : NULL;

	qrnic_frame_buf_fill_headers(buf);	/* the payload follows */
	if (h && h->ref) {
		memcpy(buf + h->ref_off, h->ref, h->ref_len);
		h->ref = NULL;
		fb_unmap(h);
	}
	if (h && h->icrc_len) {
		/* an IPv4 RoCEv2 frame built with its ICRC left out (a lazy
		 * ICRC, qrnic_dev_set_lazy_icrc): the ICRC ends the IP packet,
		 * which ends the frame; the same bytes the build would write */
		uint32_t len = h->icrc_len;
		uint32_t icrc = qrnic_icrc_ip(buf + QRNIC_ETH_HLEN, false, len - QRNIC_ETH_HLEN);

		h->icrc_len = 0;
		buf[len - 4] = (uint8_t)icrc;
		buf[len - 3] = (uint8_t)(icrc >> 8);
		buf[len - 2] = (uint8_t)(icrc >> 16);
		buf[len - 1] = (uint8_t)(icrc >> 24);
	}
}

/* ---- trains ------------------------------------------------------------------ */
/* The train of a frame buffer lives in its data area, which a frame by
 * description with its payload by reference does not use (the fill that
 * would build its bytes there is never called on a train: it is split
 * first, qrnic_frame_buf_train_split). */
_Static_assert(sizeof(struct qrnic_train) + 64 <= QRNIC_MAX_FRAME, "train too big for a frame buffer");

static struct qrnic_train *fb_train(struct fb_hdr *h)
{
	return (struct qrnic_train *)((uint8_t *)h + FB_HDR);
}

struct qrnic_train *qrnic_frame_buf_train(uint8_t *buf)
{
	struct fb_hdr *h = buf ? fb_hdr_of(buf) : NULL;

	return h && h->train ? fb_train(h) : NULL;
}

uint32_t qrnic_frame_buf_train_len(const uint8_t *buf)
{
	struct fb_hdr *h = buf ? fb_hdr_of(buf) : NULL;

	return h && h->train ? fb_train(h)->n : 1;
}

struct qrnic_train *qrnic_frame_buf_train_start(uint8_t *buf)
{
	struct fb_hdr *h = fb_hdr_of(buf);
	struct qrnic_train *t = fb_train(h);

	h->train = true;
	t->n = 1;
	t->ackreq = h->pkt.ackreq;
	t->borrowed = 0;
	t->last_opcode = h->pkt.opcode;
	t->last_se = h->pkt.se;
	t->unmap = h->unmap;
	t->seg[0].src = h->ref;
	t->seg[0].len = h->ref_len;
	t->seg[0].nmap = 0;	/* the first packet's are the buffer's own */
	return t;
}

void qrnic_frame_buf_train_single(uint8_t *buf)
{
	struct fb_hdr *h = fb_hdr_of(buf);

	if (h->train && fb_train(h)->n == 1)
		h->train = false;	/* its one packet is the buffer's own */
}

uint64_t qrnic_train_bytes(const struct qrnic_train *t, uint32_t upto)
{
	/* a frame's length is its headers' plus its payload padded to 4
	 * bytes (wire.c): one lookup for the middle packets */
	size_t mid = qrnic_wire_frame_len(false, QRNIC_OP_RC_WRITE_MIDDLE, 0);
	uint64_t bytes = 0;

	for (uint32_t i = 1; i < upto; i++)
		bytes += i + 1 == t->n ? qrnic_wire_frame_len(false, t->last_opcode, t->seg[i].len)
				       : mid + ((t->seg[i].len + 3u) & ~3u);
	return bytes;
}

/* Packet i (< t->n) of the train whose first packet is described by p0. */
void qrnic_train_pkt(const struct qrnic_train *t, const struct qrnic_pkt *p0, uint32_t i,
		     struct qrnic_pkt *p)
{
	*p = *p0;
	if (!i)
		return;
	p->psn = (p0->psn + i) & 0xffffffu;
	p->opcode = i + 1 == t->n ? t->last_opcode : QRNIC_OP_RC_WRITE_MIDDLE;
	p->ackreq = (t->ackreq >> i) & 1;
	p->se = i + 1 == t->n ? t->last_se : false;
	p->reth_va = 0;
	p->reth_rkey = 0;
	p->reth_len = 0;
}

/*
 * The mapping of a run of host memory several packets of a split train
 * read (qrnic_train_add_run: its first packet holds it, the others are
 * borrowed), shared by their frames: each frame's one mapping is this
 * holder ({holder, 0}, released through fb_shared_put), and the run's
 * mapping goes back to the host when the last of them is filled or freed.
 * The frames may end on different threads (a wire's, a receiving
 * device's): the count is atomic, and the last release's acquire orders
 * every other frame's reads of the bytes before the unmap.  Without it a
 * borrowed packet's frame would have to get its bytes at the split, a
 * copy per packet where a trace, a fault plan or a third port splits
 * trains.  malloc rather than the frame buffers' free lists: a split is
 * not the common path, and a holder is not a frame.
 */
struct fb_shared {
	uint32_t refs;
	void (*unmap)(const void *ptr, size_t len);
	struct qrnic_ref_map map;
};

static void fb_shared_put(const void *ptr, size_t len)
{
	struct fb_shared *s = (struct fb_shared *)(uintptr_t)ptr;

	(void)len;
	if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		s->unmap(s->map.ptr, s->map.len);
		free(s);
	}
}

/* The run that packet i of t holds (its borrowed packets i + 1 .. end - 1,
 * at least one), for the frames of the split that exist: one holder for
 * all of them, or, without memory for it, the borrowed ones' bytes now
 * (the run's mapping is still out: no frame is handed on yet).  Returns
 * end. */
static uint32_t split_run(struct qrnic_train *t, uint32_t i, uint8_t *const *sub)
{
	uint32_t end = i + 1, refs = 0;
	struct fb_shared *s = NULL;

	while (end < t->n && ((t->borrowed >> end) & 1))	/* <= QRNIC_TRAIN_MAX */
		end++;
	for (uint32_t j = i + 1; j < end; j++)
		refs += sub[j] != NULL;
	if (!refs)		/* no borrowed frame: the holder's own is enough */
		return end;
	refs += sub[i] != NULL;
	if (t->seg[i].nmap == 1)	/* the run's one mapping (ops->dma_unmap) */
		s = malloc(sizeof(*s));
	if (s) {
		struct qrnic_ref_map ref = { s, 0 };

		s->refs = refs;
		s->unmap = t->unmap;
		s->map = t->map[i][0];
		for (uint32_t j = i; j < end; j++)
			if (sub[j])
				qrnic_frame_buf_set_maps(sub[j], fb_shared_put, &ref, 1);
		t->seg[i].nmap = 0;	/* the holder has it */
		return end;
	}
	for (uint32_t j = i + 1; j < end; j++)
		if (sub[j])
			qrnic_frame_buf_fill(sub[j]);
	return end;
}

void qrnic_frame_buf_train_split(uint8_t *buf, void (*each)(void *opaque, uint8_t *buf, size_t len),
				 void *opaque)
{
	struct fb_hdr *h = fb_hdr_of(buf);
	struct qrnic_train t = *fb_train(h);	/* the data area is the first frame's again */
	struct qrnic_pkt p0 = h->pkt;
	bool vouched = h->icrc_vouched, icrc = h->icrc_len != 0;
	uint8_t *sub[QRNIC_TRAIN_MAX];
	size_t len[QRNIC_TRAIN_MAX];

	h->train = false;
	sub[0] = buf;
	len[0] = qrnic_wire_frame_len(false, p0.opcode, h->ref_len);
	for (uint32_t i = 1; i < t.n; i++) {
		struct qrnic_pkt p;
		uint32_t off;

		qrnic_train_pkt(&t, &p0, i, &p);
		off = (uint32_t)qrnic_wire_payload_off(false, p.opcode);
		len[i] = qrnic_wire_frame_len(false, p.opcode, t.seg[i].len);
		/* no memory: the packet is lost, as a frame a full queue drops */
		sub[i] = qrnic_frame_buf_alloc_at(QRNIC_MAX_FRAME, off);
		if (!sub[i])
			continue;	/* its mappings go back below */
		qrnic_frame_buf_set_pkt(sub[i], &p);
		qrnic_frame_buf_set_ref(sub[i], off, t.seg[i].src, t.seg[i].len);
		if (t.seg[i].nmap)
			qrnic_frame_buf_set_maps(sub[i], t.unmap, t.map[i], t.seg[i].nmap);
		if (icrc)
			qrnic_frame_buf_set_icrc_pending(sub[i], len[i]);
		qrnic_frame_buf_set_vouched(sub[i], vouched);
	}
	/* the runs of borrowed packets: packet 0 is the buffer's own and
	 * holds none (qrnic_train_add_run starts a run at 1 or later) */
	for (uint32_t i = 1; i < t.n;)
		i = i + 1 < t.n && ((t.borrowed >> (i + 1)) & 1) ? split_run(&t, i, sub) : i + 1;
	for (uint32_t i = 1; i < t.n; i++)	/* after the runs' holders and fills */
		for (uint32_t m = 0; !sub[i] && m < t.seg[i].nmap; m++)
			t.unmap(t.map[i][m].ptr, t.map[i][m].len);
	for (uint32_t i = 0; i < t.n; i++)
		if (sub[i])
			each(opaque, sub[i], len[i]);
}

void qrnic_frame_buf_free(uint8_t *buf)
{
	struct fb_hdr *h;
	uint32_t cls;

	if (!buf)
		return;
	h = fb_hdr_of(buf);
	if (h->train) {		/* the packets after the first: their mappings */
		struct qrnic_train *t = fb_train(h);

		h->train = false;
		for (uint32_t i = 1; i < t->n; i++)
			for (uint32_t m = 0; m < t->seg[i].nmap; m++)
				t->unmap(t->map[i][m].ptr, t->map[i][m].len);
	}
	fb_unmap(h);
	cls = h->cls;
	if (fb_nfree[cls] >= FB_KEEP) {
		free(h);
		return;
	}
	h->next = fb_free[cls];
	fb_free[cls] = h;
	fb_nfree[cls]++;
}
