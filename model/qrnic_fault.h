/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: fault injection, the host-facing interface.
 *
 * A device carries an ordered list of fault rules.  Each rule is one line
 * of text (grammar and every fault kind: docs/faults.md), e.g.
 *
 *     drop dir=tx qp=5 op=read-resp nth=3 count=1
 *     corrupt dir=rx part=icrc qp=5 prob=1% seed=7
 *     link-down after=10ms for=200ms
 *     admin-fail op=CREATE_QP status=NO_RESOURCES
 *
 * Wire faults act where frames leave (qrnic_tx, "tx") and enter
 * (qrnic_dev_rx_frame, "rx") the device; device faults act at host memory
 * accesses, CQE/EQE writes and admin command execution; timed faults (link,
 * QP error, fatal, async events) run from the model's event heap, so they
 * happen inside qrnic_dev_timer_fire() like every other timed device work.
 * Decisions depend only on the rule, its seed and the traffic it sees: the
 * same plan, seed and traffic give the same faults.
 *
 * Host-agnostic: plain C, no allocation visible to the caller, no global
 * state.  Call these from the same context as the other qrnic_dev_* entry
 * points (QEMU: with the BQL held), never from inside ops callbacks.  The
 * rules stay across qrnic_dev_reset() (they are test configuration, not
 * device state); frames held by delay/reorder are discarded by a reset.
 */
#ifndef QRNIC_FAULT_H
#define QRNIC_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qrnic_model.h"

#define QRNIC_FAULT_MAX_RULES	256	/* rules per device */
#define QRNIC_FAULT_MAX_HELD	1024	/* frames held by delay/reorder per device */
#define QRNIC_FAULT_TEXT_MAX	256	/* longest rule text kept (longer is truncated) */

/* Add one rule.  Returns its id (>= 0; ids are never reused on a device),
 * or -1 with a message in err (nothing added). */
int qrnic_fault_add(struct qrnic_dev *dev, const char *rule, char *err, size_t errlen);

/* Add every rule of a plan: one rule per line ('#' starts a comment, blank
 * lines are ignored, ';' separates rules on one line).  All or nothing: on
 * any error returns -1, err says "line N: ..." and no rule is added.
 * Returns the number of rules added; their ids are consecutive. */
int qrnic_fault_load_plan(struct qrnic_dev *dev, const char *text, char *err, size_t errlen);

/* Parse a plan without a device (option validation before the device
 * exists).  Returns the number of rules or -1 with "line N: ..." in err. */
int qrnic_fault_check_plan(const char *text, char *err, size_t errlen);

/* Remove one rule (0, or -1 if no such id) or all of them.  Effects already
 * in progress continue: held frames are still released, a link brought down
 * with for= still comes back up, a hung admin queue stays hung until reset. */
int qrnic_fault_del(struct qrnic_dev *dev, int id);
void qrnic_fault_clear(struct qrnic_dev *dev);

struct qrnic_fault_info {
	int id;
	bool done;		/* count reached, or a one-shot rule has run */
	uint64_t matched;	/* events (frames, accesses, CQEs, ...) that passed the filters */
	uint64_t fired;		/* faults this rule injected */
	char text[QRNIC_FAULT_TEXT_MAX];	/* the rule, whitespace normalized */
};
/* 0 and *out filled, or -1 if no such rule. */
int qrnic_fault_info(struct qrnic_dev *dev, int id, struct qrnic_fault_info *out);
/* Ids of the rules in evaluation order; returns how many rules there are
 * (may exceed max; only max ids are stored). */
int qrnic_fault_ids(struct qrnic_dev *dev, int *ids, int max);
/* Text listing, one line per rule: "<id> matched=<n> fired=<n>[ done] <rule>".
 * snprintf semantics: returns the length of the whole listing. */
size_t qrnic_fault_list(struct qrnic_dev *dev, char *buf, size_t len);

struct qrnic_fault_totals {
	uint64_t injected;	/* faults injected (QRNIC_STAT_FAULTS_INJECTED is the same
				 * count, but a device reset clears it; this one is not) */
	uint64_t held;		/* frames held right now by delay/reorder */
	uint64_t held_overflow;	/* frames dropped because QRNIC_FAULT_MAX_HELD were held */
	uint64_t held_flushed;	/* held frames discarded by a device reset */
	uint64_t aq_hung;	/* 1 while admin-timeout keeps the admin queue hung */
};
void qrnic_fault_totals(struct qrnic_dev *dev, struct qrnic_fault_totals *out);

#endif
