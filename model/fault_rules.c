/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: a device's fault rules, the host-facing part of
 * qrnic_fault.h: adding rules (parsed by fault_parse.c, then installed:
 * id, seed, active window, the one-shot's event), removing and listing
 * them, and the totals.  The engine that applies them: fault.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "qrnic_fault_rule.h"

static const struct kind_desc *const kinds = qrnic_fault_kinds;	/* fault_parse.c */

/* ---- state management ----------------------------------------------------------- */
static struct qrnic_fault_state *state(struct qrnic_dev *d)
{
	struct qrnic_fault_state *fs = d->fault;

	if (fs)
		return fs;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return NULL;
	fs->rules = calloc(QRNIC_FAULT_MAX_RULES, sizeof(*fs->rules));
	fs->scratch = malloc(SCRATCH_LEN);
	if (!fs->rules || !fs->scratch) {
		free(fs->rules);
		free(fs->scratch);
		free(fs);
		return NULL;
	}
	d->fault = fs;
	return fs;
}

struct qrnic_fault_state *qrnic_fault_state_get(struct qrnic_dev *d)
{
	return state(d);
}

static void recount(struct qrnic_fault_state *fs)
{
	memset(fs->ncls, 0, sizeof(fs->ncls));
	for (int i = 0; i < fs->nrules; i++)
		fs->ncls[kinds[fs->rules[i].kind].cls]++;
}

/* Install a parsed rule: id, seed, window; queue a one-shot. */
static int install(struct qrnic_dev *d, struct frule *r)
{
	struct qrnic_fault_state *fs = d->fault;
	uint64_t now = qrnic_now(d);
	uint64_t base;

	r->id = fs->next_id++;
	if (!r->seed_set)
		r->seed = 0x5eed0000ull + (uint64_t)r->id;
	r->rng = r->seed;
	base = r->at_set ? r->at : now + (r->after_set ? r->after : 0);
	r->start = (r->at_set || r->after_set) ? base : 0;
	if (r->for_set && r->kind != FK_LINK_DOWN)
		r->end = base + r->dur < base ? UINT64_MAX : base + r->dur;
	fs->rules[fs->nrules++] = *r;
	if (kinds[r->kind].cls == FC_ONCE)
		schedule(d, base, SUB_RULE, (uint32_t)r->id, 0);
	return r->id;
}

static void errcpy(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

int qrnic_fault_add(struct qrnic_dev *d, const char *rule, char *err, size_t errlen)
{
	struct qrnic_fault_state *fs;
	struct frule r;
	char msg[400];
	int rc;

	if (!rule || strpbrk(rule, "\n;")) {
		errcpy(err, errlen, "one rule expected (use qrnic_fault_load_plan for several)");
		return -1;
	}
	{
		/* a trailing comment is fine */
		char tmp[1024];
		const char *h = strchr(rule, '#');

		if (strlen(rule) >= sizeof(tmp)) {
			errcpy(err, errlen, "rule too long");
			return -1;
		}
		strcpy(tmp, rule);
		if (h)
			tmp[h - rule] = 0;
		rc = qrnic_fault_parse_rule(tmp, &r, msg, sizeof(msg));
	}
	if (rc) {
		errcpy(err, errlen, rc > 0 ? "empty rule" : msg);
		return -1;
	}
	fs = state(d);
	if (!fs) {
		errcpy(err, errlen, "out of memory");
		return -1;
	}
	if (fs->nrules >= QRNIC_FAULT_MAX_RULES) {
		snprintf(err, errlen, "too many rules (at most %d)", QRNIC_FAULT_MAX_RULES);
		return -1;
	}
	rc = install(d, &r);
	recount(fs);
	return rc;
}

int qrnic_fault_check_plan(const char *text, char *err, size_t errlen)
{
	return qrnic_fault_parse_plan(text, NULL, QRNIC_FAULT_MAX_RULES, err, errlen);
}

int qrnic_fault_load_plan(struct qrnic_dev *d, const char *text, char *err, size_t errlen)
{
	struct qrnic_fault_state *fs;
	struct frule *tmp;
	int n;

	n = qrnic_fault_parse_plan(text, NULL, QRNIC_FAULT_MAX_RULES, err, errlen);
	if (n <= 0)
		return n;
	fs = state(d);
	tmp = calloc((size_t)n, sizeof(*tmp));
	if (!fs || !tmp) {
		free(tmp);
		errcpy(err, errlen, "out of memory");
		return -1;
	}
	if (fs->nrules + n > QRNIC_FAULT_MAX_RULES) {
		free(tmp);
		snprintf(err, errlen, "plan has %d rules, %d are loaded: at most %d", n, fs->nrules,
			 QRNIC_FAULT_MAX_RULES);
		return -1;
	}
	qrnic_fault_parse_plan(text, tmp, n, err, errlen);
	for (int i = 0; i < n; i++)
		install(d, &tmp[i]);
	recount(fs);
	free(tmp);
	return n;
}

int qrnic_fault_del(struct qrnic_dev *d, int id)
{
	struct qrnic_fault_state *fs = d->fault;
	struct frule *r = fs ? rule_by_id(fs, id) : NULL;
	int i;

	if (!r)
		return -1;
	i = (int)(r - fs->rules);
	memmove(&fs->rules[i], &fs->rules[i + 1], (size_t)(fs->nrules - i - 1) * sizeof(*r));
	fs->nrules--;
	recount(fs);
	return 0;
}

void qrnic_fault_clear(struct qrnic_dev *d)
{
	if (!d->fault)
		return;
	d->fault->nrules = 0;
	recount(d->fault);
}

int qrnic_fault_info(struct qrnic_dev *d, int id, struct qrnic_fault_info *out)
{
	struct frule *r = d->fault ? rule_by_id(d->fault, id) : NULL;

	if (!r)
		return -1;
	memset(out, 0, sizeof(*out));
	out->id = r->id;
	out->done = r->done;
	out->matched = r->matched;
	out->fired = r->fired;
	memcpy(out->text, r->text, sizeof(out->text));
	return 0;
}

int qrnic_fault_ids(struct qrnic_dev *d, int *ids, int max)
{
	struct qrnic_fault_state *fs = d->fault;

	if (!fs)
		return 0;
	for (int i = 0; i < fs->nrules && i < max; i++)
		ids[i] = fs->rules[i].id;
	return fs->nrules;
}

size_t qrnic_fault_list(struct qrnic_dev *d, char *buf, size_t len)
{
	struct qrnic_fault_state *fs = d->fault;
	size_t n = 0;

	if (buf && len)
		buf[0] = 0;
	for (int i = 0; fs && i < fs->nrules; i++) {
		const struct frule *r = &fs->rules[i];
		int w = snprintf(buf ? buf + (n < len ? n : len) : NULL, n < len ? len - n : 0,
				 "%d matched=%llu fired=%llu%s %s\n", r->id,
				 (unsigned long long)r->matched, (unsigned long long)r->fired,
				 r->done ? " done" : "", r->text);

		if (w > 0)
			n += (size_t)w;
	}
	return n;
}

void qrnic_fault_totals(struct qrnic_dev *d, struct qrnic_fault_totals *out)
{
	struct qrnic_fault_state *fs = d->fault;

	memset(out, 0, sizeof(*out));
	if (!fs)
		return;
	out->injected = fs->injected;
	out->held = fs->nheld;
	out->held_overflow = fs->held_overflow;
	out->held_flushed = fs->held_flushed;
	out->aq_hung = fs->aq_hung;
}
