/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: the fault state in a snapshot (section "FLT.",
 * qrnic_snap.h).  Each rule travels as its text and its progress (id,
 * active window, counters, random generator state, a reorder burst being
 * captured): the loader parses the text again, so a rule loaded is checked
 * as one added by hand, then takes back its progress.  Frames held by
 * delay/reorder rules travel with their bytes.
 */
#include <stdlib.h>

#include "qrnic_fault_rule.h"
#include "qrnic_snap.h"

static const struct kind_desc *const kinds = qrnic_fault_kinds;	/* fault_parse.c */

void qrnic_fault_save(struct qrnic_dev *d, struct qrnic_snap_w *w)
{
	struct qrnic_fault_state *fs = d->fault;

	qs_u32(w, (uint32_t)fs->nrules);
	qs_u32(w, (uint32_t)fs->next_id);
	for (int i = 0; i < fs->nrules; i++) {
		const struct frule *r = &fs->rules[i];
		size_t n = strnlen(r->text, sizeof(r->text));

		qs_u32(w, (uint32_t)n);
		qs_bytes(w, r->text, n);
		qs_u32(w, (uint32_t)r->id);
		qs_bool(w, r->done);
		qs_u64(w, r->start);
		qs_u64(w, r->end);
		qs_u64(w, r->seed);
		qs_u64(w, r->rng);
		qs_u64(w, r->matched);
		qs_u64(w, r->fired);
		qs_u32(w, r->burst_left);
		qs_u32(w, r->burst_tag);
		qs_u8(w, r->burst_dir);
	}
	qs_u32(w, QRNIC_FAULT_MAX_HELD);
	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD; i++) {
		const struct fheld *h = &fs->held[i];

		qs_u8(w, h->why);
		qs_u32(w, h->gen);
		if (!h->why)
			continue;
		qs_u8(w, h->dir);
		qs_u32(w, h->tag);
		qs_u32(w, (uint32_t)h->countdown);
		qs_u64(w, h->seq);
		qs_u32(w, h->len);
		qs_bytes(w, h->data, h->len);
	}
	qs_u64(w, fs->held_seq);
	qs_u32(w, fs->next_tag);
	qs_bool(w, fs->aq_hung);
	qs_bool(w, fs->link_restore);
	qs_u64(w, fs->link_up_at);
	qs_u32(w, fs->link_gen);
	qs_u64(w, fs->injected);
	qs_u64(w, fs->held_overflow);
	qs_u64(w, fs->held_flushed);
}

bool qrnic_fault_load(struct qrnic_dev *d, struct qrnic_snap_r *r)
{
	struct qrnic_fault_state *fs;
	uint32_t nrules, nheld;
	char text[QRNIC_FAULT_TEXT_MAX], err[160];
	int next_id;

	fs = qrnic_fault_state_get(d);	/* empty: the load freed the old one */
	if (!fs)
		return qr_fail(r, "out of memory");

	nrules = qr_u32(r);
	next_id = (int)qr_u32(r);
	if (r->bad)
		return false;
	if (nrules > QRNIC_FAULT_MAX_RULES || next_id < 0)
		return qr_fail(r, "%u fault rules, next id %d", nrules, next_id);
	for (uint32_t i = 0; i < nrules && !r->bad; i++) {
		struct frule fr;
		uint32_t n = qr_u32(r);

		if (!r->bad && n >= sizeof(text))
			return qr_fail(r, "fault rule text of %u bytes", n);
		qr_bytes(r, text, n);
		text[r->bad ? 0 : n] = 0;
		if (r->bad)
			break;
		memset(&fr, 0, sizeof(fr));
		if (qrnic_fault_parse_rule(text, &fr, err, sizeof(err)) != 0)
			return qr_fail(r, "fault rule '%s': %s", text, err);
		fr.id = (int)qr_u32(r);
		fr.done = qr_bool(r);
		fr.start = qr_u64(r);
		fr.end = qr_u64(r);
		fr.seed = qr_u64(r);
		fr.rng = qr_u64(r);
		fr.matched = qr_u64(r);
		fr.fired = qr_u64(r);
		fr.burst_left = qr_u32(r);
		fr.burst_tag = qr_u32(r);
		fr.burst_dir = qr_u8(r);
		if (r->bad)
			break;
		if (fr.id < 0 || fr.id >= next_id)
			return qr_fail(r, "fault rule id %d (next %d)", fr.id, next_id);
		for (int j = 0; j < fs->nrules; j++)
			if (fs->rules[j].id == fr.id)
				return qr_fail(r, "fault rule id %d given twice", fr.id);
		if (fr.burst_dir > DIR_RX)
			return qr_fail(r, "fault rule %d: burst direction %u", fr.id, fr.burst_dir);
		snprintf(fr.text, sizeof(fr.text), "%s", text);
		fs->rules[fs->nrules++] = fr;
		fs->ncls[kinds[fr.kind].cls]++;
	}
	fs->next_id = next_id;

	nheld = qr_u32(r);
	if (!r->bad && nheld != QRNIC_FAULT_MAX_HELD)
		return qr_fail(r, "%u held frame slots (this device has %u)", nheld,
			       QRNIC_FAULT_MAX_HELD);
	for (uint32_t i = 0; i < QRNIC_FAULT_MAX_HELD && !r->bad; i++) {
		struct fheld *h = &fs->held[i];

		h->why = qr_u8(r);
		h->gen = qr_u32(r);
		if (r->bad || !h->why)
			continue;
		h->dir = qr_u8(r);
		h->tag = qr_u32(r);
		h->countdown = (int32_t)qr_u32(r);
		h->seq = qr_u64(r);
		h->len = qr_u32(r);
		if (r->bad)
			break;
		if ((h->why != HELD_DELAY && h->why != HELD_REORDER) ||
		    (h->dir != DIR_TX && h->dir != DIR_RX) || h->countdown < -1 ||
		    h->len == 0 || h->len > SCRATCH_LEN || h->len > qr_left(r)) {
			h->why = 0;
			return qr_fail(r, "held frame %u: kind %u, direction %u, %u bytes", i,
				       h->why, h->dir, h->len);
		}
		h->data = malloc(h->len);
		if (!h->data) {
			h->why = 0;
			return qr_fail(r, "out of memory");
		}
		qr_bytes(r, h->data, h->len);
		fs->nheld++;
		if (h->why == HELD_REORDER && h->countdown >= 0)
			fs->nreorder[h->dir]++;
	}
	fs->held_seq = qr_u64(r);
	fs->next_tag = qr_u32(r);
	fs->aq_hung = qr_bool(r);
	fs->link_restore = qr_bool(r);
	fs->link_up_at = qr_u64(r);
	fs->link_gen = qr_u32(r);
	fs->injected = qr_u64(r);
	fs->held_overflow = qr_u64(r);
	fs->held_flushed = qr_u64(r);
	return !r->bad;
}
