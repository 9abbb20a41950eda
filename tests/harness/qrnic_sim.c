/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic-sim: the standalone simulator.  No QEMU: N model instances (hosts
 * with simulated memory) in one harness world, cabled in pairs, run a
 * workload of RDMA operations and report latency, bandwidth and message
 * rate in simulated time, plus how fast the host simulated it.
 *
 *   qrnic-sim --op write --size 4096 --qps 4 --depth 16 --count 10000 \
 *             --rate 100G --latency 500ns --loss 0.001 --seed 1
 *
 * See docs/simulator.md.  Every number here is *measured* on the virtual
 * clock (hx_now() when a WQE is posted, hx_now() when the poller sees its
 * CQE), never computed from the link parameters: when the model gains a
 * timing model the numbers change and this file does not.
 *
 * Structure: options/workload file -> struct cfg; setup() builds the world
 * (devices, QPs, MRs); run() is the poster/poller loop that steps the world
 * one simulated instant at a time; verify_end() checks the destination
 * bytes; report_*() print.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "cli_units.h"
#include "harness.h"

/* Fault plans: the harness wrappers of model/qrnic_fault.h (grammar:
 * docs/faults.md).  Referenced weakly, so that a harness without the fault
 * engine still links; --plan then says it is not available. */
int hx_fault_load_plan(hx_world *w, int d, const char *text) __attribute__((weak));
int hx_fault_check_plan(hx_world *w, const char *text) __attribute__((weak));

#define SIM_QKEY	0x11111111u
#define SIM_EXIT_OK	0
#define SIM_EXIT_FAIL	1	/* data mismatch, error completion, stall */
#define SIM_EXIT_USAGE	2	/* bad options, setup failure, unavailable feature */
#define TRACE_CAP	(1u << 18)	/* trace ring records, drained after each run step */
#define RUN_ITERS	256		/* event-loop iterations per hx_run call */
#define TRACE_ITERS	8		/* ... when tracing (bounded events per drain) */

/* ---- operations ------------------------------------------------------------- */
enum sim_op { OP_WRITE, OP_READ, OP_SEND, OP_CAS, OP_FAA, OP_UD_SEND, OP_COUNT };

static const char *const op_name[OP_COUNT] = {
	[OP_WRITE] = "write", [OP_READ] = "read", [OP_SEND] = "send",
	[OP_CAS] = "cas", [OP_FAA] = "faa", [OP_UD_SEND] = "ud-send",
};

static bool op_atomic(int op) { return op == OP_CAS || op == OP_FAA; }
static bool op_recv(int op) { return op == OP_SEND || op == OP_UD_SEND; }

enum { VERIFY_OFF, VERIFY_END, VERIFY_EACH };
static const char *const verify_name[] = { "off", "end", "each" };

/* ---- configuration -------------------------------------------------------------- */
struct cfg {
	char name[64];
	int op;
	uint64_t size;
	unsigned qps, depth, hosts;
	unsigned signal;	/* a send WQE in this many asks for a CQE (and the last) */
	uint64_t count;		/* messages per QP; 0 with duration: unlimited */
	uint64_t duration_ns;	/* stop posting after this much simulated time */
	uint64_t rate_bps;	/* 0: infinite */
	uint32_t overhead;	/* framing bytes per frame counted by the rate */
	uint64_t latency_ns;
	double loss;		/* probability */
	uint64_t seed;
	unsigned mtu;		/* path MTU in bytes */
	unsigned ack_timeout;	/* IB local ACK timeout exponent */
	unsigned retry_cnt;
	int verify;
	uint64_t mr_size;	/* write/read: bytes of the remote region (0: depth slots) */
	bool random_offsets;	/* write/read: remote slot of each message at random */
	uint64_t inject;	/* testing the checker: corrupt message inject - 1 of QP 0 */
	const char *trace, *trace_format, *pcap, *plan, *profile, *timing;
	const char *device;	/* --device: "name=value,..." for every host's device */
	const char *plan_hosts;	/* "all" or a comma list of host indexes */
	uint64_t migrate_every;	/* --migrate-every N: devices migrated in place every N run steps */
	bool json, deterministic, quiet, fixed_window;
	bool inl, bf;		/* --inline, --bf */
	bool icrc;		/* --icrc: ICRCs even on a trusted wire */
	bool count_set;
	/* --incast: hosts 1..N-1 send to host 0 through one switch (docs/congestion.md) */
	bool incast, pfc;
	unsigned leaves, spines;	/* --leaves, --spines: a leaf-spine fabric (0: one switch) */
	uint64_t shared_buffer, pfc_resume;	/* --shared-buffer, --pfc-resume */
	bool prio_queues;		/* --prio-queues: a queue per (port, priority) */
	bool ets;			/* --ets: ETS weights between them (0: strict) */
	uint8_t ets_weight[8];
	uint8_t pfc_prios;		/* --pfc-prios: the lossless ones (0: all) */
	uint8_t dscp[16];		/* --dscp: the DSCP of each sender's QPs, in turn */
	unsigned ndscp;
	double alpha;			/* --alpha */
	uint64_t sw_buffer, kmin, kmax, xoff, xon, sample_ns;
	uint64_t stagger_ns;	/* --stagger: incast sender i starts posting at (i - 1) x this */
	double pmax;
};

static void cfg_defaults(struct cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->op = OP_WRITE;
	c->size = 4096;
	c->qps = 1;
	c->depth = 16;
	c->signal = 1;
	c->hosts = 2;
	c->count = 1000;
	c->rate_bps = 100000000000ull;
	c->latency_ns = 500;
	c->seed = 1;
	c->mtu = 4096;
	c->ack_timeout = 14;
	c->retry_cnt = 7;
	c->verify = VERIFY_EACH;
	c->profile = "functional";
	c->plan_hosts = "all";
	c->sw_buffer = 1ull << 20;
	c->kmin = 40000;
	c->kmax = 160000;
	c->pmax = 0.2;
	c->xoff = 128000;
	c->alpha = 1;
	c->pfc_resume = 3000;
	c->xon = 64000;
	c->sample_ns = 10000;
}

static const char usage_text[] =
"usage: qrnic-sim [options]\n"
"  workload\n"
"    --op OP             write | read | send | cas | faa | ud-send   (write)\n"
"    --size BYTES        message size, K/M/G suffixes = KiB/MiB/GiB    (4096; atomics: 8)\n"
"    --qps N             QPs per host pair                              (1)\n"
"    --depth N           outstanding WQEs per QP                        (16)\n"
"    --signal N          a CQE for every Nth send WQE and the last, like\n"
"                        perftest's --cq-mod; N <= depth (latency: those only) (1)\n"
"    --count N           messages per QP                                (1000)\n"
"    --duration T        post for T of simulated time instead (e.g. 100us)\n"
"    --migrate-every N   every N run steps, migrate every device in place (save,\n"
"                        make anew, load: docs/qemu.md 9); the results must not\n"
"                        change (bench/sim_identical)\n"
"    --hosts N           hosts, even: N/2 cabled pairs each run the workload;\n"
"                        with --incast any number; at most 64            (2)\n"
"    --mtu BYTES         RC path MTU 256..4096                          (4096)\n"
"    --ack-timeout E     RC local ACK timeout 4.096us * 2^E             (14)\n"
"    --retry-cnt N       RC retry count 0..7                            (7)\n"
"    --incast            N-1 senders (hosts 1..N-1, --qps QPs each) to host 0\n"
"                        through one output-queued switch (docs/congestion.md)\n"
"    --buffer BYTES      switch: output queue limit, tail drop          (1M)\n"
"    --kmin, --kmax B    switch: RED/ECN marking thresholds, kmax 0: none (40000, 160000)\n"
"    --pmax P            switch: marking probability just below kmax    (0.2)\n"
"    --pfc               switch: PFC pause of the senders at xoff, resume at xon\n"
"    --xoff, --xon B     switch: PFC thresholds per ingress port        (128000, 64000)\n"
"    --sample T          switch: queue and per-flow samples every T     (10us)\n"
"    --stagger T         with --incast: sender i (1..N-1) starts posting at (i - 1) x T,\n"
"                        so flows join one after the other (convergence)  (0)\n"
"    --leaves L, --spines S  with --incast: a two-tier leaf-spine fabric instead of\n"
"                        one switch: host i on leaf i / ceil(hosts/L), ECMP over the\n"
"                        spines on the 5-tuple (UDP source port included); every\n"
"                        link as a switch port; every leaf and spine is one switch\n"
"                        (--pfc: its XOFFs go over fabric links too, pausing the\n"
"                        queue at the other end; --shared-buffer: one per switch)\n"
"    --shared-buffer B   switch: one buffer of B bytes (each leaf and spine its own)\n"
"                        for all its output queues (port, priority), each\n"
"                        limited to alpha x the free bytes (dynamic\n"
"                        threshold); with --pfc the ingress XOFF at that threshold\n"
"    --alpha A           switch: dynamic threshold factor                 (1)\n"
"    --pfc-resume B      switch, shared buffer: XON once below the threshold by B (3000)\n"
"    --prio-queues       switch: one queue per (port, priority), strict priority between\n"
"                        them (7 first), each with --buffer and RED on its own bytes; a\n"
"                        host's 802.1Qbb frames pause its port's queues of those priorities;\n"
"                        with --shared-buffer each queue under the dynamic threshold, with\n"
"                        --leaves at every port (fabric links too), with --pfc or without\n"
"    --pfc-prios LIST    with --pfc: the priorities PFC is on for (lossless), e.g. 3,4;\n"
"                        the others are lossy: they drop at their queue's limit (the\n"
"                        dynamic threshold with --shared-buffer)          (all)\n"
"    --ets W0,...,W7     with --prio-queues: ETS (802.1Qaz) weights in percent per\n"
"                        priority, deficit round robin between the queues; 0 = strict\n"
"                        priority (served first), the others add up to 100  (none)\n"
"    --dscp LIST         the DSCP of each sender's QPs (priority = DSCP >> 3), comma list\n"
"                        taken in turn: incast sender i gets LIST[(i-1) % n]     (0)\n"
"    --mr-size BYTES     write/read: remote memory region size, K/M/G   (depth x size)\n"
"    --offsets MODE      write/read: remote slot of each message: seq | random  (seq)\n"
"    --inline            write/send/ud-send: the payload inline in the WQE (size <= 448)\n"
"    --bf                BlueFlame: a doorbell for one WQE carries the WQE (spec 3.2.1),\n"
"                        as rdma-core's mlx5 does for a single-WQE post\n"
"  link\n"
"    --rate R            link rate per direction, e.g. 100G, 25Gbps, 0 = infinite (100G)\n"
"    --overhead BYTES    framing bytes per frame counted by --rate      (0; Ethernet: 24)\n"
"    --latency T         one-way wire latency, e.g. 500ns, 1.5us        (500ns)\n"
"    --loss P            random frame loss, 0.001 or 0.1%               (0)\n"
"    --seed N            seed of data patterns and loss                 (1)\n"
"    --fixed-window      no loss window: 512 packets in flight per QP even after loss\n"
"    --icrc              compute and check ICRCs (and copy payloads into\n"
"                        frames) although nothing corrupts or captures\n"
"                        frames; always so with --plan or --pcap        (off)\n"
"  checking and output\n"
"    --verify MODE       each | end | off                               (each)\n"
"    --json              one JSON object per run on stdout\n"
"    --deterministic     leave out host (wall-clock) figures: same seed, same bytes\n"
"    --trace FILE        per-stage trace: JSON lines, or CSV if FILE ends in .csv\n"
"    --trace-format F    jsonl | csv (overrides the file name)\n"
"    --pcap FILE         the wire as nanosecond pcap\n"
"    --plan FILE         fault plan (docs/faults.md), loaded into every host ...\n"
"    --plan-hosts LIST   ... or only these: comma list of host indexes, or all   (all)\n"
"    --profile NAME      timing profile: functional (default), cx5-100g, teach\n"
"    --timing K=V,...    override timing parameters (docs/timing.md), e.g. mtt_entries=64\n"
"    --device K=V,...    device configuration of every host (docs/spec.md 16.2),\n"
"                        e.g. max_mtt=4096,gid_tbl_len=4\n"
"    --workload FILE     options from a file (\"key value\" lines, [name] sections = runs)\n"
"    --quiet             no table (errors only)\n"
"    --inject-mismatch N test the checker: flip a destination byte of QP 0's message N\n"
"    -h, --help\n";

/* option table: name, takes a value */
static const struct { const char *name; bool arg; } opt_tab[] = {
	{ "op", true }, { "size", true }, { "qps", true }, { "depth", true }, { "count", true },
	{ "duration", true }, { "migrate-every", true }, { "hosts", true }, { "mtu", true }, { "ack-timeout", true },
	{ "retry-cnt", true }, { "rate", true }, { "overhead", true }, { "latency", true },
	{ "loss", true }, { "seed", true }, { "verify", true }, { "json", false },
	{ "deterministic", false }, { "trace", true }, { "trace-format", true },
	{ "pcap", true }, { "plan", true }, { "plan-hosts", true }, { "profile", true }, { "timing", true }, { "quiet", false },
	{ "device", true },
	{ "fixed-window", false }, { "icrc", false },
	{ "name", true }, { "inject-mismatch", true }, { "mr-size", true }, { "offsets", true },
	{ "signal", true },
	{ "incast", false }, { "buffer", true }, { "kmin", true }, { "kmax", true }, { "pmax", true },
	{ "inline", false }, { "bf", false },
	{ "pfc", false }, { "xoff", true }, { "xon", true }, { "sample", true }, { "stagger", true },
	{ "leaves", true }, { "spines", true },
	{ "shared-buffer", true }, { "alpha", true }, { "pfc-resume", true },
	{ "prio-queues", false }, { "dscp", true }, { "ets", true }, { "pfc-prios", true },
};

static int opt_find(const char *k)
{
	for (size_t i = 0; i < sizeof(opt_tab) / sizeof(opt_tab[0]); i++)
		if (!strcmp(opt_tab[i].name, k))
			return (int)i;
	return -1;
}

static char errbuf[512];

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return -1;
}

/* the numbers: cli_units.c, shared with qrnic-switch */
static int parse_num(const char *s, double *out, char **rest)
{
	return cli_num(s, out, rest);
}

static int parse_u64(const char *k, const char *s, uint64_t *out)
{
	return cli_u64(k, s, out) ? bad("%s", cli_error()) : 0;
}

static int parse_bytes(const char *k, const char *s, uint64_t *out)
{
	return cli_bytes(k, s, out) ? bad("%s", cli_error()) : 0;
}

static int parse_time(const char *k, const char *s, uint64_t *out)
{
	return cli_time(k, s, out) ? bad("%s", cli_error()) : 0;
}

static int parse_rate(const char *k, const char *s, uint64_t *out)
{
	return cli_rate(k, s, out) ? bad("%s", cli_error()) : 0;
}

static int parse_small(const char *k, const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	uint64_t v;

	if (parse_u64(k, s, &v))
		return -1;
	if (v < lo || v > hi)
		return bad("--%s: %s is out of range %u..%u", k, s, lo, hi);
	*out = (unsigned)v;
	return 0;
}

/* Why an option that is no more is not there, or "". */
static const char *retired(const char *k)
{
	if (!strcmp(k, "trusted-wire"))
		return ": the wire is trusted by default now (--icrc computes and checks ICRCs)";
	return "";
}

/* The option values the configuration points at, and the option lists:
 * they live as long as the process and are freed together at exit
 * (sim_cleanup) so that LeakSanitizer reports none of them. */
static char **owned;
static size_t nowned, capowned;

static const char *own(const char *v)
{
	char *d = strdup(v);

	if (!d)
		abort();
	if (nowned == capowned) {
		capowned = capowned ? 2 * capowned : 32;
		owned = realloc(owned, capowned * sizeof(*owned));
		if (!owned)
			abort();
	}
	owned[nowned++] = d;
	return d;
}

/* --device: every item a parameter of the model's configuration table
 * (names and bounds: model/config.c), checked here as the harness will. */
static int device_check(const char *v)
{
	char *s = strdup(v), *tok, *save = NULL;
	struct qrnic_config cfg;
	struct qrnic_config_error e;
	char why[160];
	int r = 0;

	if (strlen(v) > 900) {
		free(s);
		return bad("--device: too long");
	}
	qrnic_config_defaults(&cfg);
	for (tok = strtok_r(s, ",", &save); tok && !r; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq) {
			r = bad("--device: '%s' is not name=value", tok);
			break;
		}
		*eq = 0;
		if (qrnic_config_set(&cfg, tok, eq + 1, &e)) {
			qrnic_config_error_str(&e, tok, why, sizeof(why));
			r = bad("--device: %s", why);
		}
	}
	if (!r && qrnic_config_validate(&cfg, &e)) {
		qrnic_config_error_str(&e, NULL, why, sizeof(why));
		r = bad("--device: %s", why);
	}
	free(s);
	return r;
}

static int cfg_set(struct cfg *c, const char *k, const char *v)
{
	int i = opt_find(k);

	if (i < 0)
		return bad("unknown option '%s'%s", k, retired(k));
	if (opt_tab[i].arg && !v)
		return bad("--%s needs a value", k);
	if (!strcmp(k, "op")) {
		for (int o = 0; o < OP_COUNT; o++) {
			if (!strcmp(v, op_name[o]) || (o == OP_UD_SEND && !strcmp(v, "ud"))) {
				c->op = o;
				return 0;
			}
		}
		return bad("--op: unknown operation '%s' (write, read, send, cas, faa, ud-send)", v);
	}
	if (!strcmp(k, "size"))
		return parse_bytes(k, v, &c->size);
	if (!strcmp(k, "qps"))
		return parse_small(k, v, 1, 256, &c->qps);
	if (!strcmp(k, "depth"))
		return parse_small(k, v, 1, 4096, &c->depth);
	if (!strcmp(k, "signal"))
		return parse_small(k, v, 1, 4096, &c->signal);
	if (!strcmp(k, "count")) {
		c->count_set = true;
		return parse_u64(k, v, &c->count);
	}
	if (!strcmp(k, "duration"))
		return parse_time(k, v, &c->duration_ns);
	if (!strcmp(k, "migrate-every")) {
		if (parse_u64(k, v, &c->migrate_every))
			return -1;
		if (!c->migrate_every) {
			snprintf(errbuf, sizeof(errbuf), "--migrate-every needs a number of steps >= 1");
			return -1;
		}
		return 0;
	}
	if (!strcmp(k, "hosts"))
		return parse_small(k, v, 2, HX_MAX_DEV, &c->hosts);
	if (!strcmp(k, "buffer"))
		return parse_bytes(k, v, &c->sw_buffer);
	if (!strcmp(k, "leaves"))
		return parse_small(k, v, 1, HX_SW_MAX_TIER, &c->leaves);
	if (!strcmp(k, "spines"))
		return parse_small(k, v, 1, HX_SW_MAX_TIER, &c->spines);
	if (!strcmp(k, "kmin"))
		return parse_bytes(k, v, &c->kmin);
	if (!strcmp(k, "kmax"))
		return parse_bytes(k, v, &c->kmax);
	if (!strcmp(k, "xoff"))
		return parse_bytes(k, v, &c->xoff);
	if (!strcmp(k, "xon"))
		return parse_bytes(k, v, &c->xon);
	if (!strcmp(k, "sample"))
		return parse_time(k, v, &c->sample_ns);
	if (!strcmp(k, "stagger"))
		return parse_time(k, v, &c->stagger_ns);
	if (!strcmp(k, "shared-buffer"))
		return parse_bytes(k, v, &c->shared_buffer);
	if (!strcmp(k, "pfc-resume"))
		return parse_bytes(k, v, &c->pfc_resume);
	if (!strcmp(k, "pfc-prios"))
		return cli_prios(k, v, &c->pfc_prios) ? bad("%s", cli_error()) : 0;
	if (!strcmp(k, "ets")) {
		c->ets = true;
		return cli_ets(k, v, c->ets_weight) ? bad("%s", cli_error()) : 0;
	}
	if (!strcmp(k, "dscp")) {	/* a comma list of 1..16 values 0..63 */
		const char *q = v;

		c->ndscp = 0;
		for (;;) {
			char *end;
			unsigned long x = strtoul(q, &end, 10);

			if (end == q || x > 63 || c->ndscp == 16 || (*end && *end != ','))
				return bad("--dscp: '%s' is not a list of up to 16 DSCP values 0..63", v);
			c->dscp[c->ndscp++] = (uint8_t)x;
			if (!*end)
				return 0;
			q = end + 1;
		}
	}
	if (!strcmp(k, "alpha")) {
		char *end;

		c->alpha = strtod(v, &end);
		if (end == v || *end || !(c->alpha > 0 && c->alpha <= 1024))
			return bad("--alpha: '%s' is not a factor in (0, 1024]", v);
		return 0;
	}
	if (!strcmp(k, "pmax")) {
		char *end;

		c->pmax = strtod(v, &end);
		if (end == v || *end || !(c->pmax >= 0 && c->pmax <= 1))
			return bad("--pmax: '%s' is not a probability", v);
		return 0;
	}
	if (!strcmp(k, "mtu")) {
		if (parse_small(k, v, 256, 4096, &c->mtu))
			return -1;
		if (c->mtu & (c->mtu - 1))
			return bad("--mtu: %u is not one of 256, 512, 1024, 2048, 4096", c->mtu);
		return 0;
	}
	if (!strcmp(k, "ack-timeout"))
		return parse_small(k, v, 0, 31, &c->ack_timeout);
	if (!strcmp(k, "retry-cnt"))
		return parse_small(k, v, 0, 7, &c->retry_cnt);
	if (!strcmp(k, "rate"))
		return parse_rate(k, v, &c->rate_bps);
	if (!strcmp(k, "overhead")) {
		unsigned o = 0;

		if (parse_small(k, v, 0, 1000, &o))
			return -1;
		c->overhead = o;
		return 0;
	}
	if (!strcmp(k, "latency"))
		return parse_time(k, v, &c->latency_ns);
	if (!strcmp(k, "loss")) {
		double p;
		char *r;

		if (parse_num(v, &p, &r) || (*r && strcmp(r, "%")))
			return bad("--loss: not a probability: '%s'", v);
		if (*r)
			p /= 100;
		if (p >= 1)
			return bad("--loss: %s is not below 1", v);
		c->loss = p;
		return 0;
	}
	if (!strcmp(k, "seed"))
		return parse_u64(k, v, &c->seed);
	if (!strcmp(k, "mr-size"))
		return parse_bytes(k, v, &c->mr_size);
	if (!strcmp(k, "offsets")) {
		if (strcmp(v, "seq") && strcmp(v, "random"))
			return bad("--offsets: '%s' is not seq or random", v);
		c->random_offsets = !strcmp(v, "random");
		return 0;
	}
	if (!strcmp(k, "inject-mismatch")) {
		if (parse_u64(k, v, &c->inject))
			return -1;
		c->inject++;
		return 0;
	}
	if (!strcmp(k, "verify")) {
		for (int m = 0; m < 3; m++) {
			if (!strcmp(v, verify_name[m])) {
				c->verify = m;
				return 0;
			}
		}
		return bad("--verify: '%s' is not each, end or off", v);
	}
	if (!strcmp(k, "trace-format")) {
		if (strcmp(v, "jsonl") && strcmp(v, "csv") && strcmp(v, "json"))
			return bad("--trace-format: '%s' is not jsonl or csv", v);
		c->trace_format = own(v);
		return 0;
	}
	if (!strcmp(k, "device"))
		return device_check(v) ? -1 : (c->device = own(v), 0);
#define STR(f) if (!strcmp(k, #f)) { c->f = own(v); return 0; }
	STR(trace) STR(pcap) STR(plan) STR(profile) STR(timing)
	if (!strcmp(k, "plan-hosts")) {
		if (strcmp(v, "all") && (!*v || strspn(v, "0123456789,") != strlen(v)))
			return bad("--plan-hosts: '%s' is not 'all' or a comma list of host indexes", v);
		c->plan_hosts = own(v);
		return 0;
	}
#undef STR
	if (!strcmp(k, "name")) {
		snprintf(c->name, sizeof(c->name), "%s", v);
		return 0;
	}
	/* flags: no value, or a boolean in a workload file */
	{
		bool on = !v || !strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes");

		if (v && !on && strcmp(v, "0") && strcasecmp(v, "false") && strcasecmp(v, "no"))
			return bad("--%s: '%s' is not a boolean", k, v);
		if (!strcmp(k, "json"))
			c->json = on;
		else if (!strcmp(k, "deterministic"))
			c->deterministic = on;
		else if (!strcmp(k, "inline"))
			c->inl = on;
		else if (!strcmp(k, "bf"))
			c->bf = on;
		else if (!strcmp(k, "quiet"))
			c->quiet = on;
		else if (!strcmp(k, "incast"))
			c->incast = on;
		else if (!strcmp(k, "pfc"))
			c->pfc = on;
		else if (!strcmp(k, "prio-queues"))
			c->prio_queues = on;
		else if (!strcmp(k, "fixed-window"))
			c->fixed_window = on;
		else if (!strcmp(k, "icrc"))
			c->icrc = on;
	}
	return 0;
}

/* ---- option lists: command line, workload file ------------------------------------ */
struct kv { const char *k, *v; };
struct kvlist { struct kv *a; int n, cap; };
struct section { char name[64]; struct kvlist kv; };

static struct kvlist cli, global;	/* command line; workload file before its sections */
static struct section *secs;
static int nsec;

static void sim_cleanup(void)
{
	for (int i = 0; i < nsec; i++)
		free(secs[i].kv.a);
	free(secs);
	free(cli.a);
	free(global.a);
	for (size_t i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
}

static void kv_add(struct kvlist *l, const char *k, const char *v)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->a = realloc(l->a, (size_t)l->cap * sizeof(*l->a));
		if (!l->a)
			abort();
	}
	l->a[l->n].k = own(k);
	l->a[l->n].v = v ? own(v) : NULL;
	l->n++;
}

static int kv_apply(struct cfg *c, const struct kvlist *l)
{
	for (int i = 0; i < l->n; i++)
		if (cfg_set(c, l->a[i].k, l->a[i].v))
			return -1;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* Workload file: "key value" or "key = value" lines (keys are the long
 * option names, with or without "--"), '#' comments, and optional "[name]"
 * sections.  Lines before the first section apply to every section; each
 * section is one run.  No sections: one run. */
static int load_workload(const char *path, struct kvlist *glob, struct section **sv, int *ns)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int lineno = 0;
	struct kvlist *cur = glob;

	if (!f)
		return bad("--workload %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *s, *k, *v, *h = strchr(line, '#');

		lineno++;
		if (h)
			*h = 0;
		s = trim(line);
		if (!*s)
			continue;
		if (*s == '[') {
			char *e = strchr(s, ']');

			if (!e || e[1]) {
				fclose(f);
				return bad("%s:%d: bad section header", path, lineno);
			}
			*e = 0;
			*sv = realloc(*sv, (size_t)(*ns + 1) * sizeof(**sv));
			if (!*sv)
				abort();
			memset(&(*sv)[*ns], 0, sizeof(**sv));
			snprintf((*sv)[*ns].name, sizeof((*sv)[*ns].name), "%s", trim(s + 1));
			cur = &(*sv)[*ns].kv;
			(*ns)++;
			continue;
		}
		k = s;
		while (*k == '-')
			k++;
		v = k + strcspn(k, " \t=");
		if (*v) {
			*v++ = 0;
			v = trim(v);
			if (*v == '=')
				v = trim(v + 1);
		}
		if (!strcmp(k, "workload")) {
			fclose(f);
			return bad("%s:%d: workload files do not nest", path, lineno);
		}
		if (opt_find(k) < 0) {
			fclose(f);
			return bad("%s:%d: unknown key '%s'", path, lineno, k);
		}
		kv_add(cur, k, *v ? v : NULL);
	}
	fclose(f);
	return 0;
}

/* ---- deterministic data --------------------------------------------------------------- */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t key3(uint64_t seed, uint64_t flow, uint64_t msg, uint64_t salt)
{
	return mix64(seed * 0x9e3779b97f4a7c15ull ^ mix64((flow << 40) ^ salt) ^ mix64(msg + salt));
}

/* The payload of message 'msg' of flow 'flow' is a stream of 8-byte words,
 * word k (little endian) pat_word(key + (k + 1) x golden), key =
 * key3(seed, flow, msg, 0x5ca1ab1e); a message of len bytes is its first
 * len bytes.
 *
 * pat_word is two xorshifts, each invertible, so it is one-to-one: two
 * words are equal only where key + (k + 1) x golden is, i.e. (the golden
 * step being odd) never within a message, and between two messages' words
 * only if their keys differ by a multiple of the step that lands them
 * there, which for mix64-made keys is a 2^-64 chance per pair.  A stale
 * message, a word from another offset or another QP is seen as surely as
 * with a full mix, at half the cost: mix64's two 64-bit multiplies per
 * word made the pattern 15 % of a 16:1 incast's run loop (docs/
 * congestion.md "Simulator speed with DCQCN"). */
#define PAT_STEP	0x9e3779b97f4a7c15ull

static inline uint64_t pat_word(uint64_t x)
{
	x ^= x >> 29;
	return x ^ (x << 17);
}

static uint64_t pattern_key(uint64_t seed, unsigned flow, uint64_t msg)
{
	return key3(seed, flow, msg, 0x5ca1ab1e);
}

/* n whole words from word k0 to p.  Every word is independent of the
 * others, so the loop vectorizes; 64-bit multiplies vectorize well only
 * with AVX-512 (vpmullq) or AVX2, so on x86-64 GCC builds a clone per
 * level and picks one at load time (8x faster than scalar on AVX-512 at
 * 64 KiB; it was a quarter of a 16:1 incast's time, docs/simulator.md
 * "Speed").  The same words on every path: integer arithmetic. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"),
	       optimize("tree-vectorize")))
#endif
static void pattern_words(uint8_t *p, uint64_t key, uint64_t k0, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t z = pat_word(key + (k0 + i + 1) * PAT_STEP);

		memcpy(p + 8 * i, &z, 8);
	}
}

/* bytes [from, from + n) of the stream to p */
static void pattern_range(uint8_t *p, uint64_t key, uint64_t from, uint64_t n)
{
	uint64_t z, k, o, m;

	if (from % 8 && n) {	/* the end of a word */
		k = from / 8;
		o = from % 8;
		m = 8 - o < n ? 8 - o : n;
		z = pat_word(key + (k + 1) * PAT_STEP);
		memcpy(p, (uint8_t *)&z + o, m);
		p += m;
		from += m;
		n -= m;
	}
	pattern_words(p, key, from / 8, n / 8);
	if (n % 8) {		/* the start of one */
		z = pat_word(key + (from / 8 + n / 8 + 1) * PAT_STEP);
		memcpy(p + n / 8 * 8, &z, n % 8);
	}
}

static void pattern(uint8_t *p, uint64_t len, uint64_t seed, unsigned flow, uint64_t msg)
{
	pattern_range(p, pattern_key(seed, flow, msg), 0, len);
}

/* CAS: value of the target after k successful swaps */
static uint64_t cas_value(uint64_t seed, unsigned flow, uint64_t k)
{
	return key3(seed, flow, k, 0xca5ca5);
}

/* FAA: initial value and the addend of message i */
static uint64_t faa_init(uint64_t seed, unsigned flow)
{
	return key3(seed, flow, 0, 0xfaa0);
}

static uint64_t faa_add(uint64_t seed, unsigned flow, uint64_t i)
{
	return key3(seed, flow, i, 0xfaa1) >> 16;
}

/* ---- simulator state -------------------------------------------------------------------- */
struct flow {
	unsigned id;		/* global index: pair * qps + qp */
	int a, b;		/* requester, responder device */
	uint32_t qp[2], cq[2], pd[2], mr[2];
	uint64_t iova[2];
	uint32_t ah;		/* UD: address handle on a towards b */
	uint64_t stride;	/* slot size in the data buffers */
	unsigned sq_n, rq_n;	/* ring entries */
	unsigned nslot_a, nslot_b;
	uint64_t nslot_b_mask;	/* for modp() */

	uint64_t posted;	/* messages posted */
	uint64_t done;		/* RC: completed; UD: resolved (received or lost) */
	uint64_t sq_done;	/* send CQEs seen */
	uint64_t recv_posted, recv_done;
	uint64_t lost;		/* UD */
	uint64_t *post_t;	/* [depth] post time of message i at i % depth */
	uint64_t *atom_expect;	/* [depth] value the atomic of that slot must return */
	uint64_t atom_next;	/* CAS: swaps posted; FAA: expected value after the posted adds */
	uint64_t *slot_msg;	/* destination slot -> last message placed there */
	uint64_t *rslot;	/* [depth] write/read: remote slot of the message at i % depth */
	uint8_t *signaled;	/* [depth] the send WQE of the message at i % depth asks for a CQE */
	bool stop;
	uint64_t t_done;	/* last completion */
	uint64_t seen_wr[2];	/* device DMA writes to a, b when last polled */
};

struct sim {
	struct cfg c;
	uint64_t depth_mask, signal_mask;	/* for modp(): n - 1, or ~0 if not a power of 2 */
	hx_world *w;
	struct flow *f;
	unsigned nflows;
	uint64_t size;		/* effective message size (atomics: 8) */
	uint64_t t0, t_last;	/* first post, last completion */
	uint64_t *lat;
	size_t nlat, caplat;
	uint64_t msgs, bytes, lost, posted;
	uint64_t late;		/* UD: arrived after a later message (counted lost) */
	uint64_t v_msgs, v_bytes, v_atomics, errors;	/* checked at completion */
	uint64_t v_final, v_final_bytes;		/* final buffer contents */
	bool final_pass;
	bool trusted;		/* trusted wire in effect: no ICRCs, payloads by reference */
	uint8_t *buf1, *buf2;	/* scratch, one slot each */
	uint64_t seen_writes;	/* hx_watched_writes() at the last poll */
	uint64_t steps, migrations;	/* run steps so far; in-place migrations (--migrate-every) */
	FILE *trace;
	bool trace_csv;
	uint64_t trace_seq, trace_lost, trace_written;
	double host_s;
	double host_cpu_s;	/* CPU time of the run loop (the machine may be shared) */
	long host_minflt;	/* page faults taken in the run loop (first touches) */
	/* --incast: samples every c.sample_ns: receiver queue max, messages per flow */
	uint64_t next_sample;
	uint64_t *smp_q, *smp_msgs;	/* [nsmp], [nsmp * nflows] */
	uint64_t *smp_used;		/* [nsmp]: shared buffer bytes in use at each sample */
	uint64_t *smp_pq;		/* [nsmp * 8]: --prio-queues, port 0's queue of each priority */
	uint64_t *smp_xoff;		/* [nsmp * 2]: --pfc, XOFFs the switch sent to the hosts so far,
					 * and the time (ns) hosts were paused so far, summed */
	size_t nsmp, capsmp;
	int fail;		/* SIM_EXIT_* once something went wrong */
	char why[512];
};

/* i % n without a division where n is a power of 2 (mask = n - 1; a
 * 64-bit division per use showed in profiles: several per message). */
static inline uint64_t pow2_mask(uint64_t n)
{
	return n && !(n & (n - 1)) ? n - 1 : UINT64_MAX;
}

static inline uint64_t modp(uint64_t i, uint64_t n, uint64_t mask)
{
	return mask != UINT64_MAX ? i & mask : i % n;
}

static int sim_fail(struct sim *s, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sim_fail(struct sim *s, int code, const char *fmt, ...)
{
	va_list ap;

	if (s->fail)
		return -1;	/* keep the first reason */
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	s->fail = code;
	return -1;
}

static const char *wc_status_name(unsigned st)
{
	static const char *const n[] = {
		"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
		"WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR",
		"REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR",
		"LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR",
		"INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR",
	};
	return st < sizeof(n) / sizeof(n[0]) ? n[st] : "?";
}

static unsigned log2_ceil(uint64_t n)
{
	unsigned l = 0;

	while ((1ull << l) < n)
		l++;
	return l;
}

static unsigned ib_mtu(unsigned bytes)
{
	return log2_ceil(bytes) - 7;	/* 256 -> QRNIC_MTU_256 (1) ... 4096 -> 5 */
}

static void gid_v4(uint8_t *g, int dev)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	g[12] = 10;
	g[13] = 0;
	g[14] = (uint8_t)(dev / 250);
	g[15] = (uint8_t)(dev % 250 + 1);
}

/* ---- setup -------------------------------------------------------------------------------- */
static int modify(struct sim *s, int d, uint32_t qpn, struct qrnic_qp_attr *a, const char *what)
{
	int r = hx_modify_qp(s->w, d, qpn, a);

	if (r)
		return sim_fail(s, SIM_EXIT_USAGE, "dev %d QP %u: modify to %s failed (%d) %s", d,
				qpn, what, r, hx_world_error(s->w));
	return 0;
}

/* --dscp: which value a flow takes: incast, its sender host - 1; else its pair */
static unsigned flow_sender_idx(const struct sim *s, const struct flow *f)
{
	return s->c.incast ? (unsigned)(f->a - 1) : (unsigned)(f->a / 2);
}

static int connect_rc(struct sim *s, struct flow *f)
{
	for (int side = 0; side < 2; side++) {
		int d = side ? f->b : f->a, o = side ? f->a : f->b;
		struct qrnic_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
			      QRNIC_QP_ATTR_ACCESS_FLAGS;
		a.qp_state = QRNIC_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = QRNIC_ACCESS_REMOTE_WRITE | QRNIC_ACCESS_REMOTE_READ |
				    QRNIC_ACCESS_REMOTE_ATOMIC;
		if (modify(s, d, f->qp[side], &a, "INIT"))
			return -1;
		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_AV | QRNIC_QP_ATTR_PATH_MTU |
			      QRNIC_QP_ATTR_DEST_QPN | QRNIC_QP_ATTR_RQ_PSN |
			      QRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC | QRNIC_QP_ATTR_MIN_RNR_TIMER;
		a.qp_state = QRNIC_QPS_RTR;
		a.path_mtu = (uint8_t)ib_mtu(s->c.mtu);
		a.dest_qpn = f->qp[!side];
		a.rq_psn = 100;
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = 1;
		gid_v4(a.av.dgid, o);
		memcpy(a.av.dmac, hx_mac(s->w, o), 6);
		a.av.net_type = QRNIC_NET_IPV4;
		/* --dscp: both directions of the flow in its sender's class */
		if (s->c.ndscp)
			a.av.traffic_class = (uint8_t)(s->c.dscp[flow_sender_idx(s, f) % s->c.ndscp] << 2);
		if (modify(s, d, f->qp[side], &a, "RTR"))
			return -1;
		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_TIMEOUT | QRNIC_QP_ATTR_RETRY_CNT |
			      QRNIC_QP_ATTR_RNR_RETRY | QRNIC_QP_ATTR_SQ_PSN |
			      QRNIC_QP_ATTR_MAX_QP_RD_ATOMIC;
		a.qp_state = QRNIC_QPS_RTS;
		a.timeout = (uint8_t)s->c.ack_timeout;
		a.retry_cnt = (uint8_t)s->c.retry_cnt;
		a.rnr_retry = 7;
		a.sq_psn = 100;
		a.max_rd_atomic = 16;
		if (modify(s, d, f->qp[side], &a, "RTS"))
			return -1;
	}
	return 0;
}

static int connect_ud(struct sim *s, struct flow *f)
{
	struct qrnic_av av;
	int64_t ah;

	for (int side = 0; side < 2; side++) {
		int d = side ? f->b : f->a;
		struct qrnic_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_PKEY_INDEX | QRNIC_QP_ATTR_PORT |
			      QRNIC_QP_ATTR_QKEY;
		a.qp_state = QRNIC_QPS_INIT;
		a.port_num = 1;
		a.qkey = SIM_QKEY;
		if (modify(s, d, f->qp[side], &a, "INIT"))
			return -1;
		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE;
		a.qp_state = QRNIC_QPS_RTR;
		if (modify(s, d, f->qp[side], &a, "RTR"))
			return -1;
		memset(&a, 0, sizeof(a));
		a.attr_mask = QRNIC_QP_ATTR_STATE | QRNIC_QP_ATTR_SQ_PSN;
		a.qp_state = QRNIC_QPS_RTS;
		a.sq_psn = 100;
		if (modify(s, d, f->qp[side], &a, "RTS"))
			return -1;
	}
	memset(&av, 0, sizeof(av));
	gid_v4(av.dgid, f->b);
	memcpy(av.dmac, hx_mac(s->w, f->b), 6);
	av.net_type = QRNIC_NET_IPV4;
	ah = hx_create_ah(s->w, f->a, f->pd[0], &av);
	if (ah < 0)
		return sim_fail(s, SIM_EXIT_USAGE, "create_ah failed (%lld) %s", (long long)ah,
				hx_world_error(s->w));
	f->ah = (uint32_t)ah;
	return 0;
}

/* write/read slot size: the message rounded up to 64 bytes, at least 64 */
static uint64_t slot_bytes(uint64_t size)
{
	return size ? (size + 63) & ~63ull : 64;
}

/* Buffers: side a holds the source slots (write, send, ud-send), the
 * destination slots (read) or the atomic result slots; side b the matching
 * remote slots, the receive slots, or the 8-byte atomic target. */
static void flow_geometry(struct sim *s, struct flow *f)
{
	unsigned depth = s->c.depth;

	f->sq_n = 1u << log2_ceil(depth < 2 ? 2 : depth);
	f->rq_n = op_recv(s->c.op) ? 1u << log2_ceil(2 * depth) : 2;
	f->nslot_a = depth;
	if (op_atomic(s->c.op)) {
		f->stride = 8;
		f->nslot_b = 1;
	} else if (op_recv(s->c.op)) {
		uint64_t len = s->size + (s->c.op == OP_UD_SEND ? QRNIC_GRH_BYTES : 0);

		f->stride = (len + 63) & ~63ull;
		f->nslot_b = f->rq_n;
	} else {
		f->stride = slot_bytes(s->size);
		f->nslot_b = depth;
		/* --mr-size: more remote slots than messages in flight */
		if (s->c.mr_size / f->stride > depth)
			f->nslot_b = (unsigned)(s->c.mr_size / f->stride);
	}
	if (!f->stride)
		f->stride = 64;
	f->nslot_b_mask = pow2_mask(f->nslot_b);
}

static uint64_t flow_mem(struct sim *s)
{
	struct flow g;
	uint64_t buf;

	memset(&g, 0, sizeof(g));
	flow_geometry(s, &g);
	buf = g.stride * (g.nslot_a > g.nslot_b ? g.nslot_a : g.nslot_b);
	/* data pages + PBL + rings (512-byte WQEs, 32-byte CQEs) */
	return buf + buf / 256 + 2 * 4096 + ((uint64_t)g.sq_n + g.rq_n) * 512 +
	       ((uint64_t)g.sq_n + g.rq_n) * 64 + 4 * 4096;
}

static int setup(struct sim *s)
{
	struct cfg *c = &s->c;
	unsigned pairs = c->incast ? c->hosts - 1 : c->hosts / 2;
	uint64_t mem, per_flow, touched;
	uint32_t eqn[HX_MAX_DEV], pdn[HX_MAX_DEV];
	char dev_kv[1024];

	s->size = op_atomic(c->op) ? 8 : c->size;
	if (c->inl && ((c->op != OP_WRITE && c->op != OP_SEND && c->op != OP_UD_SEND) ||
		       s->size > (1u << QRNIC_MAX_SEND_WQE_SHIFT) - sizeof(struct qrnic_send_wqe)))
		return sim_fail(s, SIM_EXIT_USAGE, "--inline is for write, send and ud-send of at most "
				"448 bytes");
	if (c->op == OP_UD_SEND && s->size > 4096)
		return sim_fail(s, SIM_EXIT_USAGE, "ud-send: size %" PRIu64 " exceeds the UD MTU (4096)",
				s->size);
	if (s->size > (1ull << 31))
		return sim_fail(s, SIM_EXIT_USAGE, "size %" PRIu64 " exceeds 2 GiB", s->size);
	if (c->duration_ns && !c->latency_ns && !c->rate_bps)
		return sim_fail(s, SIM_EXIT_USAGE,
				"--duration needs --latency or --rate: with neither, simulated time never advances");
	if (c->hosts % 2 && !c->incast)
		return sim_fail(s, SIM_EXIT_USAGE, "--hosts: %u is odd (hosts are cabled in pairs)", c->hosts);
	if ((c->incast || c->pfc) && (c->op == OP_UD_SEND || !c->incast))
		return sim_fail(s, SIM_EXIT_USAGE, "--incast is for RC operations; --pfc needs --incast");
	if (c->incast && c->kmax && c->kmax <= c->kmin)
		return sim_fail(s, SIM_EXIT_USAGE, "--kmax must be above --kmin");
	if (c->shared_buffer && !c->incast)
		return sim_fail(s, SIM_EXIT_USAGE, "--shared-buffer is for --incast");
	if (c->stagger_ns && !c->incast)
		return sim_fail(s, SIM_EXIT_USAGE, "--stagger is for --incast");
	if (c->prio_queues && !c->incast)
		return sim_fail(s, SIM_EXIT_USAGE, "--prio-queues is for --incast (a switch)");
	if (c->pfc_prios && !c->pfc)
		return sim_fail(s, SIM_EXIT_USAGE, "--pfc-prios names the lossless priorities: it needs --pfc");
	if (c->ets && !c->prio_queues)
		return sim_fail(s, SIM_EXIT_USAGE, "--ets weighs the priority queues: it needs --prio-queues");
	if (c->ndscp && c->op == OP_UD_SEND)
		return sim_fail(s, SIM_EXIT_USAGE, "--dscp is for RC operations");
	if ((c->leaves || c->spines) && (!c->incast || !c->leaves || !c->spines))
		return sim_fail(s, SIM_EXIT_USAGE, "--leaves and --spines go together, with --incast");
	if (c->incast && c->pfc && c->xon > c->xoff)
		return sim_fail(s, SIM_EXIT_USAGE, "--xon must not be above --xoff");
	if (!c->count && !c->duration_ns)
		return sim_fail(s, SIM_EXIT_USAGE, "--count 0 needs --duration");
	if ((c->mr_size || c->random_offsets) && c->op != OP_WRITE && c->op != OP_READ)
		return sim_fail(s, SIM_EXIT_USAGE, "--mr-size and --offsets are for write and read");
	if (c->mr_size && c->mr_size < (uint64_t)c->depth * slot_bytes(s->size))
		return sim_fail(s, SIM_EXIT_USAGE,
				"--mr-size %" PRIu64 " is below --depth x the 64-byte aligned size (%" PRIu64 ")",
				c->mr_size, (uint64_t)c->depth * slot_bytes(s->size));
	if (c->signal > c->depth)
		return sim_fail(s, SIM_EXIT_USAGE, "--signal %u is above --depth %u: a full window could hold "
				"no WQE that asks for a CQE", c->signal, c->depth);
	if (c->mr_size / slot_bytes(s->size) > (1u << 24))
		return sim_fail(s, SIM_EXIT_USAGE, "--mr-size: more than 2^24 message slots");
	if (c->loss > 0 && c->loss * 1e6 < 1)
		return sim_fail(s, SIM_EXIT_USAGE, "--loss below 1e-6 (the wire works in ppm)");

	/* every host has the memory of the busiest: with --incast host 0
	 * holds the receiving side of every sender's QPs */
	per_flow = (uint64_t)c->qps * flow_mem(s);
	mem = 2 * per_flow * (c->incast ? c->hosts - 1 : 1) + (32ull << 20);
	mem = (mem + 0xfffff) & ~0xfffffull;
	/* mapped lazily, but buffers and rings are touched: each flow's on
	 * both of its hosts, and 16 MiB a host */
	touched = 2 * per_flow * pairs + (16ull << 20) * c->hosts;
	if (touched > (12ull << 30))
		return sim_fail(s, SIM_EXIT_USAGE,
				"workload needs about %" PRIu64 " MiB of simulated host memory (limit 12 GiB): "
				"fewer QPs, shallower queues or smaller messages", touched >> 20);
	s->depth_mask = pow2_mask(c->depth);
	s->signal_mask = pow2_mask(c->signal);
	s->w = hx_world_new(mem, c->seed);
	if (!s->w)
		return sim_fail(s, SIM_EXIT_USAGE, "out of memory");
	/* --device, then --fixed-window (which wins) */
	snprintf(dev_kv, sizeof(dev_kv), "%s%s%s", c->device ? c->device : "",
		 c->device && c->fixed_window ? "," : "", c->fixed_window ? "loss_window=0" : "");
	for (unsigned d = 0; d < c->hosts; d++) {
		uint8_t gid[16];
		int64_t eq, pd;

		if (hx_dev_add(s->w, dev_kv) != (int)d ||
		    hx_drv_bringup(s->w, (int)d, 5))
			return sim_fail(s, SIM_EXIT_USAGE, "dev %u: bring-up failed: %s", d,
					hx_world_error(s->w));
		if (hx_set_timing(s->w, (int)d, c->profile, c->timing ? c->timing : ""))
			return sim_fail(s, SIM_EXIT_USAGE, "--profile/--timing: %s",
					hx_world_error(s->w));
		gid_v4(gid, (int)d);
		if (hx_set_gid(s->w, (int)d, 0, 1, QRNIC_NET_IPV4, gid))
			return sim_fail(s, SIM_EXIT_USAGE, "dev %u: set_gid failed", d);
		eq = hx_create_eq(s->w, (int)d, 6, 1, 0);
		pd = hx_create_pd(s->w, (int)d, 0);
		if (eq <= 0 || pd <= 0)
			return sim_fail(s, SIM_EXIT_USAGE, "dev %u: EQ/PD failed: %s", d,
					hx_world_error(s->w));
		eqn[d] = (uint32_t)eq;
		pdn[d] = (uint32_t)pd;
	}
	for (unsigned p = 0; p < pairs && !c->incast; p++)
		if (hx_cable(s->w, 2 * (int)p, 2 * (int)p + 1))
			return sim_fail(s, SIM_EXIT_USAGE, "cable failed");

	s->nflows = pairs * c->qps;
	s->f = calloc(s->nflows, sizeof(*s->f));
	if (!s->f)
		return sim_fail(s, SIM_EXIT_USAGE, "out of memory");
	for (unsigned i = 0; i < s->nflows; i++) {
		struct flow *f = &s->f[i];
		unsigned cq_log;

		f->id = i;
		f->seen_wr[0] = f->seen_wr[1] = UINT64_MAX;	/* poll the first time */
		f->a = c->incast ? 1 + (int)(i / c->qps) : 2 * (int)(i / c->qps);
		f->b = c->incast ? 0 : f->a + 1;
		flow_geometry(s, f);
		cq_log = log2_ceil((uint64_t)f->sq_n + f->rq_n);
		for (int side = 0; side < 2; side++) {
			int d = side ? f->b : f->a;
			int64_t cq, qp, mr;
			uint64_t len = f->stride * (side ? f->nslot_b : f->nslot_a);

			f->pd[side] = pdn[d];
			cq = hx_create_cq(s->w, d, 0, eqn[d], cq_log, 1);
			qp = cq > 0 ? hx_create_qp(s->w, d, 0, pdn[d], (uint32_t)cq, (uint32_t)cq,
						   c->op == OP_UD_SEND ? QRNIC_QPT_UD : QRNIC_QPT_RC,
						   log2_ceil(f->sq_n), 9, log2_ceil(f->rq_n), 9, 0)
				    : -1;
			if (qp <= 1)
				return sim_fail(s, SIM_EXIT_USAGE, "dev %d: CQ/QP %u failed (%lld/%lld): %s",
						d, i, (long long)cq, (long long)qp, hx_world_error(s->w));
			f->cq[side] = (uint32_t)cq;
			f->qp[side] = (uint32_t)qp;
			f->iova[side] = (uint64_t)(i + 1) << 36;
			mr = hx_reg_mr(s->w, d, pdn[d], QRNIC_ACCESS_ALL, f->iova[side], len, 12, -1, 0);
			if (mr < 0)
				return sim_fail(s, SIM_EXIT_USAGE, "dev %d: reg_mr of %" PRIu64 " bytes failed (%lld): %s",
						d, len, (long long)mr, hx_world_error(s->w));
			f->mr[side] = (uint32_t)mr;
		}
		if (c->op == OP_UD_SEND ? connect_ud(s, f) : connect_rc(s, f))
			return -1;
		f->post_t = calloc(c->depth, sizeof(uint64_t));
		f->rslot = calloc(c->depth, sizeof(uint64_t));
		f->atom_expect = calloc(c->depth, sizeof(uint64_t));
		f->signaled = calloc(c->depth, 1);
		f->slot_msg = malloc(sizeof(uint64_t) * (f->nslot_a > f->nslot_b ? f->nslot_a : f->nslot_b));
		if (!f->post_t || !f->rslot || !f->atom_expect || !f->signaled || !f->slot_msg)
			return sim_fail(s, SIM_EXIT_USAGE, "out of memory");
		memset(f->slot_msg, 0xff, sizeof(uint64_t) * (f->nslot_a > f->nslot_b ? f->nslot_a : f->nslot_b));
		/* atomic targets start at a known value */
		if (c->op == OP_CAS || c->op == OP_FAA) {
			uint64_t v = c->op == OP_CAS ? cas_value(c->seed, f->id, 0) : faa_init(c->seed, f->id);

			hx_mr_write(s->w, f->b, f->mr[1], 0, &v, 8);
			f->atom_next = c->op == OP_CAS ? 0 : v;
		}
	}
	s->buf1 = malloc(s->size + QRNIC_GRH_BYTES + 64);
	s->buf2 = malloc(s->size + QRNIC_GRH_BYTES + 64);
	if (!s->buf1 || !s->buf2)
		return sim_fail(s, SIM_EXIT_USAGE, "out of memory");
	/* the link: only now, setup had no frames */
	hx_wire_set_latency(s->w, c->latency_ns);
	hx_wire_set_rate(s->w, c->rate_bps, c->overhead);
	hx_wire_random(s->w, (uint32_t)llround(c->loss * 1e6), 0, 0, 0, c->seed);
	if (c->incast) {
		struct hx_switch_cfg sc = {
			.rate_bps = c->rate_bps, .overhead = c->overhead, .latency_ns = c->latency_ns,
			.buffer = c->sw_buffer, .kmin = c->kmin, .kmax = c->kmax, .pmax = c->pmax,
			.pfc = c->pfc, .xoff = c->xoff, .xon = c->xon, .seed = c->seed,
			.leaves = (int)c->leaves, .spines = (int)c->spines,
			.shared_buffer = c->shared_buffer, .alpha = c->alpha, .pfc_resume = c->pfc_resume,
			.prio_queues = c->prio_queues, .ets = c->ets,
			.pfc_lossy = c->pfc_prios ? (uint8_t)~c->pfc_prios : 0,
			.ets_weight = { c->ets_weight[0], c->ets_weight[1], c->ets_weight[2],
					c->ets_weight[3], c->ets_weight[4], c->ets_weight[5],
					c->ets_weight[6], c->ets_weight[7] },
			.hosts_per_leaf = c->leaves ? (int)((c->hosts + c->leaves - 1) / c->leaves) : 0,
		};

		if (hx_switch_attach(s->w, &sc))
			return sim_fail(s, SIM_EXIT_USAGE, "switch: %s", hx_world_error(s->w));
	}
	return 0;
}

/* --incast: one sample of the receiver's queue and every flow's progress */
static void take_sample(struct sim *s)
{
	struct hx_switch_stats st;

	if (s->nsmp == s->capsmp) {
		size_t cap = s->capsmp ? 2 * s->capsmp : 256;
		uint64_t *q = realloc(s->smp_q, cap * sizeof(*q));
		uint64_t *m = q ? realloc(s->smp_msgs, cap * s->nflows * sizeof(*m)) : NULL;
		uint64_t *u = m ? realloc(s->smp_used, cap * sizeof(*u)) : NULL;
		uint64_t *pq = u ? realloc(s->smp_pq, cap * 8 * sizeof(*pq)) : NULL;
		uint64_t *x = pq ? realloc(s->smp_xoff, cap * 2 * sizeof(*x)) : NULL;

		if (q)
			s->smp_q = q;
		if (m)
			s->smp_msgs = m;
		if (u)
			s->smp_used = u;
		if (pq)
			s->smp_pq = pq;
		if (x)
			s->smp_xoff = x;
		if (!m || !u || !pq || !x)
			return;
		s->capsmp = cap;
	}
	hx_switch_stats(s->w, 0, &st);
	hx_switch_window(s->w);
	s->smp_q[s->nsmp] = st.win_max;
	s->smp_used[s->nsmp] = hx_switch_shared_used(s->w, NULL);
	for (int p = 0; p < 8; p++) {
		struct hx_switch_queue_stats qs;

		s->smp_pq[s->nsmp * 8 + p] = hx_switch_queue_stats(s->w, 0, p, &qs) ? 0 : qs.q_now;
	}
	for (unsigned i = 0; i < s->nflows; i++)
		s->smp_msgs[s->nsmp * s->nflows + i] = s->f[i].done;
	s->smp_xoff[s->nsmp * 2] = s->smp_xoff[s->nsmp * 2 + 1] = 0;
	for (int d = 0; s->c.pfc && d < hx_num_devs(s->w); d++)	/* bounded: the hosts */
		if (!hx_switch_stats(s->w, d, &st)) {	/* paused_ns counts a pause until now */
			s->smp_xoff[s->nsmp * 2] += st.pauses;
			s->smp_xoff[s->nsmp * 2 + 1] += st.paused_ns;
		}
	s->nsmp++;
}

/* ---- fault plans, timing profiles -------------------------------------------------------------- */
static char *read_file(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	for (;;) {
		if (cap - n < 4096) {
			cap = cap ? 2 * cap : 8192;
			buf = realloc(buf, cap + 1);
			if (!buf)
				abort();
		}
		size_t r = fread(buf + n, 1, cap - n, f);

		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	buf[n] = 0;
	return buf;
}

static bool plan_host(const char *list, int d)
{
	const char *p = list;

	if (!strcmp(list, "all"))
		return true;
	while (*p) {
		char *e;
		long v = strtol(p, &e, 10);

		if (e != p && v == d)
			return true;
		p = *e ? e + 1 : e;
	}
	return false;
}

static bool fault_api(void)
{
	return hx_fault_load_plan != NULL && hx_fault_check_plan != NULL;
}

/* Load --plan into the selected hosts, after setup (so that the plan sees
 * only the workload's traffic) and before the first WQE. */
static int load_plan(struct sim *s)
{
	char err[256];
	char *text;
	int hosts = 0;

	if (!s->c.plan)
		return 0;
	if (!fault_api())
		return sim_fail(s, SIM_EXIT_USAGE,
				"--plan %s: fault plans are not available yet (this build's model has no fault engine)",
				s->c.plan);
	text = read_file(s->c.plan, err, sizeof(err));
	if (!text)
		return sim_fail(s, SIM_EXIT_USAGE, "--plan %s: %s", s->c.plan, err);
	if (hx_fault_check_plan(s->w, text) < 0) {
		free(text);
		return sim_fail(s, SIM_EXIT_USAGE, "--plan %s: %s", s->c.plan, hx_world_error(s->w));
	}
	for (int d = 0; d < hx_num_devs(s->w); d++) {
		if (!plan_host(s->c.plan_hosts, d))
			continue;
		if (hx_fault_load_plan(s->w, d, text) < 0) {
			free(text);
			return sim_fail(s, SIM_EXIT_USAGE, "--plan %s: host %d: %s", s->c.plan, d,
					hx_world_error(s->w));
		}
		hosts++;
	}
	free(text);
	if (!hosts)
		return sim_fail(s, SIM_EXIT_USAGE, "--plan-hosts %s: no such host", s->c.plan_hosts);
	return 0;
}

static bool profile_is_functional(const char *p)
{
	return !strcmp(p, "functional");
}

/* ---- trace and pcap ---------------------------------------------------------------------------- */
static int trace_open(struct sim *s)
{
	const char *fmt = s->c.trace_format;
	size_t n;

	if (!s->c.trace)
		return 0;
	n = strlen(s->c.trace);
	s->trace_csv = fmt ? !strcmp(fmt, "csv") : (n >= 4 && !strcasecmp(s->c.trace + n - 4, ".csv"));
	s->trace = strcmp(s->c.trace, "-") ? fopen(s->c.trace, "w") : stdout;
	if (!s->trace)
		return sim_fail(s, SIM_EXIT_USAGE, "--trace %s: %s", s->c.trace, strerror(errno));
	if (s->trace_csv)
		fprintf(s->trace, "seq,dev,t_ns,type,qpn,psn,a,b,addr\n");
	hx_trace_enable(s->w, TRACE_CAP);
	s->trace_seq = hx_trace_total(s->w);
	return 0;
}

static void trace_drain(struct sim *s)
{
	static struct hx_trace_rec rec[4096];
	uint64_t first;
	uint32_t n;

	if (!s->trace)
		return;
	while ((n = hx_trace_read(s->w, s->trace_seq, rec, 4096, &first)) > 0) {
		if (first > s->trace_seq)
			s->trace_lost += first - s->trace_seq;
		for (uint32_t i = 0; i < n; i++) {
			const struct hx_trace_rec *r = &rec[i];
			const struct qrnic_trace_ev *e = &r->ev;

			if (s->trace_csv)
				fprintf(s->trace, "%" PRIu64 ",%u,%" PRIu64 ",%s,%u,%u,%u,%u,0x%" PRIx64 "\n",
					first + i, r->dev, e->t_ns, hx_trace_name(e->type), e->qpn, e->psn,
					e->a, e->b, e->addr);
			else
				fprintf(s->trace,
					"{\"seq\":%" PRIu64 ",\"dev\":%u,\"t_ns\":%" PRIu64 ",\"type\":\"%s\","
					"\"qpn\":%u,\"psn\":%u,\"a\":%u,\"b\":%u,\"addr\":%" PRIu64 "}\n",
					first + i, r->dev, e->t_ns, hx_trace_name(e->type), e->qpn, e->psn,
					e->a, e->b, e->addr);
		}
		s->trace_written += n;
		s->trace_seq = first + n;
	}
}

/* ---- the run loop ------------------------------------------------------------------------------- */
static void lat_add(struct sim *s, uint64_t ns)
{
	if (s->nlat == s->caplat) {
		s->caplat = s->caplat ? 2 * s->caplat : 4096;
		s->lat = realloc(s->lat, s->caplat * sizeof(*s->lat));
		if (!s->lat)
			abort();
	}
	s->lat[s->nlat++] = ns;
}

/* --migrate-every N: after every N run steps, every device is saved,
 * made anew and loaded (qrnic_dev_save/qrnic_dev_load through
 * hx_dev_snapshot), as a migration would.  The run must not notice:
 * bench/sim_identical compares the outputs with and without. */
static void step_done(struct sim *s)
{
	if (!s->c.migrate_every || ++s->steps % s->c.migrate_every || s->fail)
		return;
	for (int d = 0; d < hx_num_devs(s->w); d++)
		if (hx_dev_snapshot(s->w, d) != 0) {
			sim_fail(s, SIM_EXIT_FAIL, "migration of device %d: %s", d, hx_world_error(s->w));
			return;
		}
	s->migrations++;
}

/* Settle the current instant.  The trace ring is drained between bounded
 * steps. */
static void settle(struct sim *s)
{
	uint64_t iters = s->trace ? TRACE_ITERS : RUN_ITERS;
	int rc;

	do {
		rc = hx_run(s->w, 0, iters);
		trace_drain(s);
		step_done(s);
	} while (rc == HX_RUN_ITER);
}

/*
 * Advance the clock, instant by instant, to the end of the first instant
 * at which a device the pollers look at (the requesters, and for SEND the
 * receivers too) has written host memory: only there can a poll find a
 * CQE.  Every instant in between is settled exactly as if the simulator
 * had stepped to it and polled for nothing -- such a poll changes nothing
 * (no completion, so no post either).  Returns false if nothing is left
 * to happen (no frame in flight, no timer), with the clock unchanged.
 */
static bool advance(struct sim *s)
{
	uint64_t iters = s->trace ? TRACE_ITERS : RUN_ITERS;
	int rc;

	if (s->c.incast && s->c.sample_ns) {
		uint64_t now = hx_now(s->w);

		do {
			rc = hx_run_to_write(s->w, s->next_sample > now ? s->next_sample - now : 0, iters,
					     s->seen_writes);
			trace_drain(s);
		} while (rc == HX_RUN_ITER);
		if (rc == HX_RUN_TIME || hx_now(s->w) >= s->next_sample) {
			while (hx_now(s->w) >= s->next_sample) {
				take_sample(s);
				s->next_sample += s->c.sample_ns;
			}
			return true;
		}
		return rc != HX_RUN_IDLE;
	}
	do {
		rc = hx_run_to_write(s->w, UINT64_MAX, iters, s->seen_writes);
		trace_drain(s);
		step_done(s);
	} while (rc == HX_RUN_ITER);
	return rc != HX_RUN_IDLE;
}

/* When the flow may post its first message: --stagger delays incast sender
 * host i by (i - 1) x stagger after the start. */
static uint64_t flow_start(const struct sim *s, const struct flow *f)
{
	if (!s->c.incast || !s->c.stagger_ns || f->a < 1)
		return s->t0;
	return s->t0 + (uint64_t)(f->a - 1) * s->c.stagger_ns;
}

/* How many messages the flow may post now (one burst, one doorbell). */
static uint64_t flow_room(struct sim *s, struct flow *f, uint64_t now)
{
	uint64_t n;

	if (f->stop)
		return 0;
	if ((s->c.count && f->posted >= s->c.count) ||
	    (s->c.duration_ns && now - s->t0 >= s->c.duration_ns)) {
		f->stop = true;
		return 0;
	}
	if (now < flow_start(s, f))
		return 0;	/* --stagger: not yet */
	n = s->c.depth - (f->posted - f->done);
	if (n > f->sq_n - (f->posted - f->sq_done))
		n = f->sq_n - (f->posted - f->sq_done);
	if (s->c.count && n > s->c.count - f->posted)
		n = s->c.count - f->posted;
	return n;
}

static uint64_t slot_addr(struct flow *f, int side, uint64_t slot)
{
	return f->iova[side] + slot * f->stride;
}

/* Remote slot of write/read message i: i modulo the slots, or with
 * --offsets random a slot drawn from the seed, the flow and i, never one of
 * the depth - 1 messages before it uses (those may still be in flight, and
 * a message's data is checked at its completion).  Only the workload
 * decides it, not the timing: every profile writes the same slots. */
static uint64_t remote_slot(struct sim *s, struct flow *f, uint64_t i)
{
	uint64_t n = f->nslot_b, r = modp(i, n, f->nslot_b_mask), first = i >= s->c.depth ? i - s->c.depth + 1 : 0;

	if (!s->c.random_offsets)
		return r;
	for (uint64_t attempt = 0;; attempt++) {
		bool busy = false;

		if (attempt < 64)
			r = key3(s->c.seed, f->id, i, 0x0ff5e7 + attempt) % n;
		else
			r = (r + 1) % n;	/* nearly every slot in flight: the next free one */
		for (uint64_t j = first; j < i && !busy; j++)
			busy = f->rslot[modp(j, s->c.depth, s->depth_mask)] == r;
		if (!busy)
			return r;
	}
}

/* Post the next message.  Its send WQE asks for a CQE if it is every
 * --signal'th or the last of --count, as perftest does with --cq-mod: with
 * --signal <= --depth every full window holds one, so the window always
 * reopens.  (A --duration run may end on unsignaled WQEs: run() accounts
 * for them once nothing is left in flight.) */
/* message msg's pattern into MR mr of device d at off: written where the
 * MR's pages are (no copy through a scratch buffer), or, for --inline
 * (the payload goes in the WQE from buf1) or a range the host cannot
 * map, made in buf1 and copied. */
static void pattern_to_mr(struct sim *s, struct flow *f, int d, uint32_t mr, uint64_t off, uint64_t msg)
{
	uint64_t key = pattern_key(s->c.seed, f->id, msg), done = 0;

	while (!s->c.inl && done < s->size) {
		uint64_t n = s->size - done;
		uint8_t *p = hx_mr_host_span(s->w, d, mr, off + done, &n);

		if (!p)
			break;
		pattern_range(p, key, done, n);
		done += n;
	}
	if (done < s->size) {
		pattern_range(s->buf1, key, 0, s->size);
		hx_mr_write(s->w, d, mr, off, s->buf1, s->size);
	}
}

static int post_one(struct sim *s, struct flow *f, uint64_t now)
{
	struct cfg *c = &s->c;
	uint64_t i = f->posted, slot = modp(i, c->depth, s->depth_mask), la, ra = 0, cmp = 0, swp = 0;
	uint32_t len = (uint32_t)s->size, lk = f->mr[0], rk = f->mr[1], imm = 0;
	unsigned opc = 0;
	int64_t r;

	la = slot_addr(f, 0, slot);
	switch (c->op) {
	case OP_WRITE:
		opc = QRNIC_WR_RDMA_WRITE;
		f->rslot[slot] = remote_slot(s, f, i);
		ra = slot_addr(f, 1, f->rslot[slot]);
		break;
	case OP_READ:
		opc = QRNIC_WR_RDMA_READ;
		f->rslot[slot] = remote_slot(s, f, i);
		ra = slot_addr(f, 1, f->rslot[slot]);
		break;
	case OP_SEND:
		opc = QRNIC_WR_SEND;
		break;
	case OP_UD_SEND:
		opc = QRNIC_WR_SEND_WITH_IMM;
		imm = (uint32_t)i;	/* identifies the message at the receiver */
		break;
	case OP_CAS:
		opc = QRNIC_WR_ATOMIC_CMP_AND_SWP;
		ra = f->iova[1];
		cmp = cas_value(c->seed, f->id, f->atom_next);
		swp = cas_value(c->seed, f->id, f->atom_next + 1);
		f->atom_expect[slot] = cmp;
		f->atom_next++;
		break;
	case OP_FAA:
		opc = QRNIC_WR_ATOMIC_FETCH_AND_ADD;
		ra = f->iova[1];
		cmp = faa_add(c->seed, f->id, i);
		f->atom_expect[slot] = f->atom_next;
		f->atom_next += cmp;
		break;
	}
	/* source data: the requester's slot, or the responder's for READ */
	if (c->verify != VERIFY_OFF && !op_atomic(c->op) && s->size) {
		if (c->op == OP_READ)
			pattern_to_mr(s, f, f->b, f->mr[1], f->rslot[slot] * f->stride, i);
		else
			pattern_to_mr(s, f, f->a, f->mr[0], slot * f->stride, i);
	}
	f->post_t[slot] = now;
	f->signaled[slot] = modp(i + 1, c->signal, s->signal_mask) == 0 || (c->count && i + 1 == c->count);
	if (c->inl)	/* the payload (the pattern, with --verify) in the WQE */
		r = hx_post_send(s->w, f->a, f->qp[0], opc,
				 (f->signaled[slot] ? QRNIC_WQE_F_SIGNALED : 0) | QRNIC_WQE_F_INLINE, i,
				 0, NULL, NULL, NULL, s->buf1, len, imm, rk, ra, cmp, swp, f->ah, f->qp[1],
				 SIM_QKEY, 0);
	else
		r = hx_post_send(s->w, f->a, f->qp[0], opc, f->signaled[slot] ? QRNIC_WQE_F_SIGNALED : 0, i, 1, &la, &len, &lk,
				 NULL, 0, imm, rk, ra, cmp, swp, f->ah, f->qp[1], SIM_QKEY, 0);
	if (r < 0)
		return sim_fail(s, SIM_EXIT_FAIL, "QP %u: post_send %" PRIu64 " failed (%lld)", f->id, i,
				(long long)r);
	f->posted++;
	s->posted++;
	return 0;
}

static int post_recvs(struct sim *s, struct flow *f)
{
	bool any = false;

	while (f->recv_posted - f->recv_done < f->rq_n) {
		uint64_t j = f->recv_posted, addr = slot_addr(f, 1, j % f->rq_n);
		uint32_t len = (uint32_t)f->stride, key = f->mr[1];

		if (hx_post_recv(s->w, f->b, f->qp[1], j, 1, &addr, &len, &key, 0) < 0)
			return sim_fail(s, SIM_EXIT_FAIL, "QP %u: post_recv failed", f->id);
		f->recv_posted++;
		any = true;
	}
	if (any)
		hx_ring_rq(s->w, f->b, f->qp[1]);
	return 0;
}

/* compare 'len' bytes of MR 'mr' at 'off' on device d with message msg's pattern */
static int check_data(struct sim *s, struct flow *f, int d, uint32_t mr, uint64_t off, uint64_t msg,
		      const char *what)
{
	if (!s->size)
		return 0;
	uint64_t done = 0;
	bool same = true;

	pattern(s->buf1, s->size, s->c.seed, f->id, msg);
	/* compared where the bytes are, span by span (hx_mr_host_span), the
	 * copy (hx_mr_read) only for a mismatch's report */
	while (same && done < s->size) {
		uint64_t n = s->size - done;
		const uint8_t *p = hx_mr_host_span(s->w, d, mr, off + done, &n);

		if (!p)
			break;
		same = !memcmp(p, s->buf1 + done, n);
		done += n;
	}
	if (!same || done < s->size) {
		if (hx_mr_read(s->w, d, mr, off, s->buf2, s->size))
			return sim_fail(s, SIM_EXIT_FAIL, "QP %u: cannot read back %s", f->id, what);
		same = !memcmp(s->buf1, s->buf2, s->size);
	}
	if (!same) {
		uint64_t k = 0;

		while (s->buf1[k] == s->buf2[k])
			k++;
		s->errors++;
		return sim_fail(s, SIM_EXIT_FAIL,
				"QP %u message %" PRIu64 ": %s differs at byte %" PRIu64
				" (0x%02x, expected 0x%02x)", f->id, msg, what, k, s->buf2[k], s->buf1[k]);
	}
	if (s->final_pass) {
		s->v_final++;
		s->v_final_bytes += s->size;
	} else {
		s->v_msgs++;
		s->v_bytes += s->size;
	}
	return 0;
}

/* --inject-mismatch: flip one destination byte of QP 0's chosen message
 * as it completes, before any check; the run must then fail. */
static void maybe_inject(struct sim *s, struct flow *f, int d, uint32_t mr, uint64_t off, uint64_t msg)
{
	uint8_t b;

	if (!s->c.inject || f->id != 0 || msg != s->c.inject - 1 || !s->size)
		return;
	off += s->size / 2;
	hx_mr_read(s->w, d, mr, off, &b, 1);
	b ^= 0x01;
	hx_mr_write(s->w, d, mr, off, &b, 1);
}

static int check_atomic(struct sim *s, struct flow *f, uint64_t slot, uint64_t msg)
{
	uint64_t v;

	hx_mr_read(s->w, f->a, f->mr[0], slot * 8, &v, 8);
	if (v != f->atom_expect[slot]) {
		s->errors++;
		return sim_fail(s, SIM_EXIT_FAIL, "QP %u atomic %" PRIu64 ": returned 0x%" PRIx64
				", expected 0x%" PRIx64, f->id, msg, v, f->atom_expect[slot]);
	}
	s->v_atomics++;
	return 0;
}

/* Message msg is complete at now.  Its latency is a sample only if its own
 * CQE says so: an unsignaled send WQE is known complete only when a later
 * one's CQE arrives (UD messages complete at the receiver: always). */
static void complete(struct sim *s, struct flow *f, uint64_t msg, uint64_t now, bool timed)
{
	if (timed)
		lat_add(s, now - f->post_t[modp(msg, s->c.depth, s->depth_mask)]);
	s->msgs++;
	s->bytes += s->size;
	s->t_last = now;
	f->t_done = now;
}

/* The send side's next message (f->sq_done) is complete: check what it
 * left (data at the destination, an atomic's returned value) and count it.
 * upto: the message whose CQE reported it. */
static int sender_done(struct sim *s, struct flow *f, uint64_t now, uint64_t upto)
{
	bool each = s->c.verify == VERIFY_EACH;
	uint64_t msg = f->sq_done, slot = modp(msg, s->c.depth, s->depth_mask);

	f->sq_done++;
	if (s->c.op == OP_UD_SEND)
		return 0;	/* UD completes at the receiver */
	switch (s->c.op) {
	case OP_WRITE:
	case OP_READ: {
		/* where the data landed: the responder's slot, or (READ) ours */
		bool wr = s->c.op == OP_WRITE;
		uint64_t dst = wr ? f->rslot[slot] : slot;
		int dev = wr ? f->b : f->a;
		uint32_t mr = f->mr[wr];

		maybe_inject(s, f, dev, mr, dst * f->stride, msg);
		if (each && check_data(s, f, dev, mr, dst * f->stride, msg, wr ? "remote WRITE data" : "READ data"))
			return -1;
		f->slot_msg[dst] = msg;
		break;
	}
	case OP_CAS:
	case OP_FAA:
		maybe_inject(s, f, f->a, f->mr[0], slot * 8, msg);
		if (s->c.verify != VERIFY_OFF && check_atomic(s, f, slot, msg))
			return -1;
		break;
	default:
		break;
	}
	f->done++;
	complete(s, f, msg, now, msg == upto);
	return 0;
}

/* The send WQE whose CQE comes next: the first signaled one not yet
 * completed (f->posted if none is posted). */
static uint64_t next_signaled(const struct sim *s, const struct flow *f)
{
	uint64_t i = f->sq_done;

	while (i < f->posted && !f->signaled[modp(i, s->c.depth, s->depth_mask)])
		i++;
	return i;
}

/* Poll both CQs of a flow; returns 1 if anything was seen, -1 on failure. */
static int poll_flow(struct sim *s, struct flow *f, uint64_t now)
{
	struct qrnic_cqe cqe[64];
	bool each = s->c.verify == VERIFY_EACH;
	int n, any = 0;
	uint64_t wr_a = hx_dma_stat(s->w, f->a, 1);
	uint64_t wr_b = op_recv(s->c.op) ? hx_dma_stat(s->w, f->b, 1) : 0;

	/* A CQE only appears through a device DMA write: none since the last
	 * poll (which drained both CQs), nothing to see. */
	if (wr_a == f->seen_wr[0] && wr_b == f->seen_wr[1])
		return 0;
	f->seen_wr[0] = wr_a;
	f->seen_wr[1] = wr_b;

	/* receiver first, so that its receive WQEs are back before the sender goes on */
	/* A poll that returns fewer CQEs than asked for has emptied the CQ
	 * (nothing writes host memory while the simulator polls), so the
	 * empty poll after it is skipped: it would change nothing. */
	n = 64;
	while (op_recv(s->c.op) && n == 64 && (n = hx_poll_cq(s->w, f->b, f->cq[1], cqe, 64)) > 0) {
		any = 1;
		for (int k = 0; k < n; k++) {
			struct qrnic_cqe *e = &cqe[k];
			uint64_t j = f->recv_done, slot = j % f->rq_n, msg = j, want = s->size;

			if (e->status != QRNIC_WC_SUCCESS)
				return sim_fail(s, SIM_EXIT_FAIL, "QP %u: receive completion %s (vendor_err %u)",
						f->id, wc_status_name(e->status), e->vendor_err);
			if (e->wr_id != j)
				return sim_fail(s, SIM_EXIT_FAIL, "QP %u: receive %" PRIu64 " completed out of order (wr_id %" PRIu64 ")",
						f->id, j, (uint64_t)e->wr_id);
			if (s->c.op == OP_UD_SEND) {
				uint32_t imm = __builtin_bswap32(e->imm_data);

				want += QRNIC_GRH_BYTES;
				if (!(e->flags & QRNIC_CQE_F_WITH_IMM))
					return sim_fail(s, SIM_EXIT_FAIL, "QP %u: UD receive without immediate", f->id);
				int32_t ahead = (int32_t)(imm - (uint32_t)f->done);

				msg = f->done + (uint64_t)(int64_t)ahead;
				if (ahead >= 0 && msg >= f->posted)
					return sim_fail(s, SIM_EXIT_FAIL, "QP %u: UD message %" PRIu64 " was never sent",
							f->id, msg);
				if (ahead < 0) {
					/* behind a later one (fault plans: reorder, duplicate):
					 * already counted lost; data still checked */
					s->late++;
				} else {
					/* one cable, in order: a gap means loss */
					f->lost += msg - f->done;
					s->lost += msg - f->done;
					f->done = msg + 1;
					complete(s, f, msg, now, true);
				}
			}
			if (e->byte_len != want)
				return sim_fail(s, SIM_EXIT_FAIL, "QP %u: received %u bytes, expected %" PRIu64,
						f->id, e->byte_len, want);
			maybe_inject(s, f, f->b, f->mr[1],
				     slot * f->stride + (s->c.op == OP_UD_SEND ? QRNIC_GRH_BYTES : 0), msg);
			if (each && check_data(s, f, f->b, f->mr[1],
					       slot * f->stride + (s->c.op == OP_UD_SEND ? QRNIC_GRH_BYTES : 0),
					       msg, "received data"))
				return -1;
			f->slot_msg[slot] = msg;
			f->recv_done++;
		}
	}
	if (op_recv(s->c.op) && post_recvs(s, f))
		return -1;

	n = 64;
	while (n == 64 && (n = hx_poll_cq(s->w, f->a, f->cq[0], cqe, 64)) > 0) {
		any = 1;
		for (int k = 0; k < n; k++) {
			struct qrnic_cqe *e = &cqe[k];
			uint64_t upto = e->wr_id;

			/* A CQE completes its WQE and every unsignaled one before it
			 * (send WQEs complete in order); an error CQE comes even for
			 * an unsignaled WQE. */
			if (e->status != QRNIC_WC_SUCCESS)
				return sim_fail(s, SIM_EXIT_FAIL, "QP %u message %" PRIu64 ": completion %s (vendor_err %u)",
						f->id, upto, wc_status_name(e->status), e->vendor_err);
			if (upto != next_signaled(s, f))
				return sim_fail(s, SIM_EXIT_FAIL, "QP %u: completion for %" PRIu64 " while expecting %" PRIu64,
						f->id, upto, next_signaled(s, f));
			while (f->sq_done <= upto)
				if (sender_done(s, f, now, upto))
					return -1;
		}
	}
	return any;
}

static bool flow_finished(struct sim *s, struct flow *f)
{
	/* RC SEND: the receiver's CQE may become visible after the sender's
	 * (the ACK can beat the receive CQE write): wait for both. */
	return (f->stop || (s->c.count && f->posted >= s->c.count)) && f->done == f->posted &&
	       f->sq_done == f->posted &&
	       (s->c.op != OP_SEND || f->recv_done == f->posted);
}

static int run(struct sim *s)
{
	struct timespec h0, h1, c0, c1;
	struct rusage u0, u1;

	getrusage(RUSAGE_SELF, &u0);
	clock_gettime(CLOCK_MONOTONIC, &h0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	s->t0 = s->t_last = hx_now(s->w);
	s->next_sample = s->t0 + s->c.sample_ns;
	for (unsigned i = 0; i < s->nflows; i++) {
		/* the devices whose CQs poll_flow() reads */
		hx_watch_writes(s->w, s->f[i].a, 1);
		if (op_recv(s->c.op))
			hx_watch_writes(s->w, s->f[i].b, 1);
		if (op_recv(s->c.op) && post_recvs(s, &s->f[i]))
			return -1;
	}
	for (;;) {
		bool progress = true, finished;

		/* at this instant: poll, post, let the devices work, until quiet */
		while (progress) {
			uint64_t now = hx_now(s->w);

			progress = false;
			s->seen_writes = hx_watched_writes(s->w);
			for (unsigned i = 0; i < s->nflows; i++) {
				struct flow *f = &s->f[i];
				int r = poll_flow(s, f, now);
				uint64_t nposted = 0;

				if (r < 0)
					return -1;
				for (uint64_t k = 0, n = flow_room(s, f, now); k < n; k++) {
					if (post_one(s, f, now))
						return -1;
					nposted++;
				}
				if (nposted == 1 && s->c.bf)	/* mlx5: BF for a single WQE */
					hx_ring_sq_bf(s->w, f->a, f->qp[0], (unsigned)(f->posted & 1), 0, 0,
						      -1, -1);
				else if (nposted)
					hx_ring_sq(s->w, f->a, f->qp[0]);
				if (r || nposted)
					progress = true;
			}
			if (progress)
				settle(s);
		}
		finished = true;
		for (unsigned i = 0; i < s->nflows; i++)
			if (!flow_finished(s, &s->f[i]))
				finished = false;
		if (finished)
			break;
		if (!advance(s)) {
			bool lost = false, tail = false;
			uint64_t now = hx_now(s->w), next = UINT64_MAX;

			/* idle, and a --stagger flow still to start: go to its start */
			for (unsigned i = 0; i < s->nflows; i++) {
				uint64_t t = flow_start(s, &s->f[i]);

				if (!s->f[i].stop && t > now && t < next)
					next = t;
			}
			if (next != UINT64_MAX) {
				hx_advance(s->w, next - now);
				continue;
			}

			/* nothing in flight, no timer and no CQE left: the unsignaled
			 * send WQEs after the last signaled one of a --duration run
			 * are complete (an error would have produced a CQE) */
			for (unsigned i = 0; i < s->nflows; i++) {
				struct flow *f = &s->f[i];

				if (!f->stop || f->sq_done == f->posted || f->signaled[modp(f->posted - 1, s->c.depth, s->depth_mask)])
					continue;
				while (f->sq_done < f->posted)
					if (sender_done(s, f, hx_now(s->w), UINT64_MAX))
						return -1;
				tail = true;
			}
			if (tail)
				continue;

			/* nothing in flight and no timer: UD messages not received are lost */
			for (unsigned i = 0; i < s->nflows && s->c.op == OP_UD_SEND; i++) {
				struct flow *f = &s->f[i];

				if (f->sq_done == f->posted && f->done < f->posted) {
					f->lost += f->posted - f->done;
					s->lost += f->posted - f->done;
					f->done = f->posted;
					lost = true;
				}
			}
			if (lost)
				continue;
			return sim_fail(s, SIM_EXIT_FAIL,
					"stalled: %" PRIu64 " messages outstanding and nothing left to happen",
					s->posted - s->msgs - s->lost);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &h1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	s->host_s = (double)(h1.tv_sec - h0.tv_sec) + (double)(h1.tv_nsec - h0.tv_nsec) / 1e9;
	s->host_cpu_s = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
	getrusage(RUSAGE_SELF, &u1);
	s->host_minflt = u1.ru_minflt - u0.ru_minflt;
	return 0;
}

/* Final contents of every destination slot and atomic target. */
static int verify_end(struct sim *s)
{
	if (s->c.verify == VERIFY_OFF)
		return 0;
	s->final_pass = true;
	for (unsigned i = 0; i < s->nflows; i++) {
		struct flow *f = &s->f[i];

		switch (s->c.op) {
		case OP_WRITE:
		case OP_READ: {
			int side = s->c.op == OP_WRITE;

			for (unsigned k = 0; k < (side ? f->nslot_b : s->c.depth); k++) {
				if (f->slot_msg[k] == UINT64_MAX)
					continue;
				if (check_data(s, f, side ? f->b : f->a, f->mr[side], k * f->stride,
					       f->slot_msg[k], "final destination data"))
					return -1;
			}
			break;
		}
		case OP_SEND:
		case OP_UD_SEND:
			for (unsigned k = 0; k < f->rq_n; k++) {
				if (f->slot_msg[k] == UINT64_MAX)
					continue;
				if (check_data(s, f, f->b, f->mr[1],
					       k * f->stride + (s->c.op == OP_UD_SEND ? QRNIC_GRH_BYTES : 0),
					       f->slot_msg[k], "final receive buffer"))
					return -1;
			}
			break;
		case OP_CAS:
		case OP_FAA: {
			uint64_t v, want = s->c.op == OP_CAS ? cas_value(s->c.seed, f->id, f->atom_next)
							    : f->atom_next;

			hx_mr_read(s->w, f->b, f->mr[1], 0, &v, 8);
			if (v != want) {
				s->errors++;
				return sim_fail(s, SIM_EXIT_FAIL, "QP %u: atomic target is 0x%" PRIx64
						", expected 0x%" PRIx64, f->id, v, want);
			}
			s->v_final++;
			s->v_final_bytes += 8;
			break;
		}
		}
	}
	return 0;
}

/* ---- results ------------------------------------------------------------------------------------ */
struct results {
	uint64_t sim_ns;
	uint64_t p50, p90, p99, p999, min, max;
	double mean;
	double bw_bps, msg_rate;	/* < 0: undefined (no simulated time elapsed) */
	uint64_t frames, dropped, delivered;
	uint64_t stats[QRNIC_STAT_COUNT];
	uint64_t role[2][6];	/* [requesters, responders] QPC/MPT/MTT cache hits, misses */
	uint64_t guest_errors, busy_unscheduled;
};

#define CACHE_STAT0 QRNIC_STAT_QPC_CACHE_HITS	/* the six cache counters follow it */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	size_t k;

	if (!n)
		return 0;
	k = (size_t)ceil(p / 100.0 * (double)n);	/* nearest rank */
	return v[k ? k - 1 : 0];
}

/* Ascending, like qsort with cmp_u64, in linear time: LSD radix sort on
 * 16-bit digits, only as many as the largest value has (latencies: 1-2). */
static void sort_u64(uint64_t *v, size_t n)
{
	uint64_t max = 0, *tmp, *src = v, *dst;
	size_t *cnt;

	for (size_t i = 0; i < n; i++)
		if (v[i] > max)
			max = v[i];
	tmp = n > 1 ? malloc(n * sizeof(*tmp)) : NULL;
	cnt = tmp ? malloc(65536 * sizeof(*cnt)) : NULL;
	if (!cnt) {
		free(tmp);
		qsort(v, n, sizeof(*v), cmp_u64);
		return;
	}
	dst = tmp;
	for (unsigned shift = 0; shift < 64 && (max >> shift); shift += 16) {
		size_t pos = 0;

		memset(cnt, 0, 65536 * sizeof(*cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(src[i] >> shift) & 0xffff]++;
		for (size_t d = 0; d < 65536; d++) {
			size_t c = cnt[d];

			cnt[d] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[cnt[(src[i] >> shift) & 0xffff]++] = src[i];
		dst = src;
		src = src == v ? tmp : v;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(cnt);
	free(tmp);
}

static void compute(struct sim *s, struct results *r)
{
	double sum = 0;

	memset(r, 0, sizeof(*r));
	r->sim_ns = s->t_last - s->t0;
	sort_u64(s->lat, s->nlat);
	r->p50 = pct(s->lat, s->nlat, 50);
	r->p90 = pct(s->lat, s->nlat, 90);
	r->p99 = pct(s->lat, s->nlat, 99);
	r->p999 = pct(s->lat, s->nlat, 99.9);
	r->min = s->nlat ? s->lat[0] : 0;
	r->max = s->nlat ? s->lat[s->nlat - 1] : 0;
	for (size_t i = 0; i < s->nlat; i++)
		sum += (double)s->lat[i];
	r->mean = s->nlat ? sum / (double)s->nlat : 0;
	r->bw_bps = r->sim_ns ? (double)s->bytes * 8e9 / (double)r->sim_ns : -1;
	r->msg_rate = r->sim_ns ? (double)s->msgs * 1e9 / (double)r->sim_ns : -1;
	r->frames = hx_wire_stat(s->w, HX_WS_TX);
	r->dropped = hx_wire_stat(s->w, HX_WS_DROP_RANDOM) + hx_wire_stat(s->w, HX_WS_DROP_RULE);
	r->delivered = hx_wire_stat(s->w, HX_WS_DELIVERED);
	r->busy_unscheduled = hx_wire_stat(s->w, HX_WS_BUSY_UNSCHEDULED);
	for (int d = 0; d < hx_num_devs(s->w); d++) {
		for (int k = 0; k < QRNIC_STAT_COUNT; k++)
			r->stats[k] += hx_dev_stat(s->w, d, k);
		for (int k = 0; k < 6; k++)	/* host 2k requests, 2k+1 responds */
			r->role[s->c.incast ? d == 0 : d % 2][k] += hx_dev_stat(s->w, d, CACHE_STAT0 + k);
		r->guest_errors += hx_log_total(s->w, d, QRNIC_LOG_GUEST_ERROR);
	}
}

static void fmt_time(char *b, size_t n, double ns)
{
	if (ns < 1e4)
		snprintf(b, n, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(b, n, "%.3f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(b, n, "%.3f ms", ns / 1e6);
	else
		snprintf(b, n, "%.3f s", ns / 1e9);
}

static void fmt_rate(char *b, size_t n, double bps)
{
	if (bps < 0)
		snprintf(b, n, "n/a (no simulated time elapsed)");
	else if (bps >= 1e9)
		snprintf(b, n, "%.4g Gb/s", bps / 1e9);
	else if (bps >= 1e6)
		snprintf(b, n, "%.4g Mb/s", bps / 1e6);
	else
		snprintf(b, n, "%.0f b/s", bps);
}

static const char *timing_note(const struct cfg *c)
{
	if (profile_is_functional(c->profile))
		return "functional profile: the device takes no time; simulated time advances "
		       "only through wire latency, link serialization and timers";
	return "timed profile: device pipeline, PCIe, caches and port modelled (docs/timing.md)";
}

/* "st", "nd", "rd" or "th", as after n in English */
static const char *ordinal_suffix(unsigned n)
{
	if (n % 100 / 10 == 1)
		return "th";
	return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

/* ---- --incast figures ------------------------------------------------------------------ */
struct incast_fig {
	struct hx_switch_stats rx;	/* the receiver's port (0) */
	uint64_t fab_pauses, fab_pfc_frames, fab_pfc_rx;	/* leaf-spine: sent/honoured on fabric links */
	uint64_t drops, marks, pauses, paused_ns, pfc_frames;	/* all ports */
	double jain, sum_gbps;
	uint64_t cnp_sent, cnp_received, ecn_marked;
	uint64_t pfc_received, pfc_deferred;	/* the devices' counters */
};

static uint64_t stat_by_name(struct sim *s, const char *name)
{
	uint64_t v = 0;

	for (int k = 0; k < hx_stat_count(); k++)
		if (!strcmp(hx_stat_name(k), name))
			for (int d = 0; d < hx_num_devs(s->w); d++)
				v += hx_dev_stat(s->w, d, k);
	return v;
}

static double flow_gbps(const struct sim *s, const struct flow *f)
{
	return f->t_done > s->t0 ? (double)f->done * (double)s->size * 8 / (double)(f->t_done - s->t0) : 0;
}

static void incast_figures(struct sim *s, struct incast_fig *g)
{
	double sum = 0, sq = 0;

	memset(g, 0, sizeof(*g));
	hx_switch_stats(s->w, 0, &g->rx);
	for (int d = 0; d < hx_num_devs(s->w); d++) {
		struct hx_switch_stats st;

		hx_switch_stats(s->w, d, &st);
		g->drops += st.drops;
		g->marks += st.marks;
		g->pauses += st.pauses;
		g->paused_ns += st.paused_ns;
		g->pfc_frames += st.pfc_frames;
	}
	for (unsigned l = 0; l < s->c.leaves; l++)	/* leaf-spine: the fabric links too */
		for (unsigned sp = 0; sp < s->c.spines; sp++)
			for (int up = 0; up < 2; up++) {
				struct hx_switch_stats st;

				hx_switch_fabric_stats(s->w, up, (int)l, (int)sp, &st);
				g->drops += st.drops;
				g->marks += st.marks;
				g->fab_pauses += st.pauses;
				g->fab_pfc_frames += st.pfc_frames;
				g->fab_pfc_rx += st.pfc_rx;
			}
	/* Jain's index over the flows' throughputs: (sum x)^2 / (n sum x^2) */
	for (unsigned i = 0; i < s->nflows; i++) {
		double x = flow_gbps(s, &s->f[i]);

		sum += x;
		sq += x * x;
	}
	g->sum_gbps = sum;
	g->jain = sq > 0 ? sum * sum / ((double)s->nflows * sq) : 0;
	g->cnp_sent = stat_by_name(s, "cnp_sent");
	g->cnp_received = stat_by_name(s, "cnp_received");
	g->ecn_marked = stat_by_name(s, "ecn_marked_received");
	g->pfc_received = stat_by_name(s, "pfc_received");
	g->pfc_deferred = stat_by_name(s, "pfc_deferred_frames");
}

static void incast_table(struct sim *s)
{
	struct incast_fig g;

	incast_figures(s, &g);
	printf("\n  incast: %u senders -> host 0 through the switch (buffer %" PRIu64 " B, "
	       "kmin %" PRIu64 " kmax %" PRIu64 " pmax %g%s)\n", s->c.hosts - 1, s->c.sw_buffer,
	       s->c.kmin, s->c.kmax, s->c.pmax, s->c.pfc ? ", PFC" : "");
	for (unsigned i = 0; i < s->nflows; i++)
		printf("    flow %2u host %2d: %10" PRIu64 " bytes %8.2f Gb/s\n", i, s->f[i].a,
		       s->f[i].done * s->size, flow_gbps(s, &s->f[i]));
	printf("    sum %.2f Gb/s, Jain fairness %.4f\n", g.sum_gbps, g.jain);
	for (unsigned sp = 0; sp < s->c.spines; sp++) {
		uint64_t fr = 0, mx = 0;

		for (unsigned l = 0; l < s->c.leaves; l++) {
			struct hx_switch_stats st;

			hx_switch_fabric_stats(s->w, 1, (int)l, (int)sp, &st);
			fr += st.frames;
			mx = st.q_max > mx ? st.q_max : mx;
		}
		printf("    spine %u: %" PRIu64 " frames up from the leaves, uplink queue max %" PRIu64 " B\n",
		       sp, fr, mx);
	}
	printf("    queue to host 0: max %" PRIu64 " B, avg %.0f B; marks %" PRIu64 ", drops %" PRIu64
	       " (all ports %" PRIu64 ")\n", g.rx.q_max, g.rx.q_avg, g.rx.marks, g.rx.drops, g.drops);
	printf("    CNPs sent %" PRIu64 ", handled %" PRIu64 "; PFC pauses %" PRIu64 " (%.1f us paused)\n",
	       g.cnp_sent, g.cnp_received, g.pauses, (double)g.paused_ns / 1e3);
	if (s->c.shared_buffer) {
		uint64_t mx = 0;

		hx_switch_shared_used(s->w, &mx);
		printf("    shared buffer %" PRIu64 " B%s, alpha %g: at most %" PRIu64 " B in use\n",
		       s->c.shared_buffer, s->c.leaves ? " per switch" : "", s->c.alpha, mx);
	}
	if (s->c.leaves && s->c.pfc)
		printf("    fabric links: %" PRIu64 " XOFFs (%" PRIu64 " 802.1Qbb frames) sent between "
		       "switches, %" PRIu64 " honoured\n", g.fab_pauses, g.fab_pfc_frames, g.fab_pfc_rx);
	for (int pr = 0; s->c.prio_queues && pr < 8; pr++) {
		struct hx_switch_queue_stats qs;

		if (hx_switch_queue_stats(s->w, 0, pr, &qs) || !(qs.frames || qs.drops))
			continue;
		printf("    queue to host 0, priority %d: %" PRIu64 " frames, max %" PRIu64 " B, marks %"
		       PRIu64 ", drops %" PRIu64 ", paused by the host %.1f us\n", pr, qs.frames, qs.q_max,
		       qs.marks, qs.drops, (double)qs.paused_ns / 1e3);
	}
	if (s->c.pfc)
		printf("    802.1Qbb frames: %" PRIu64 " sent by the switch, %" PRIu64
		       " honoured by hosts, %" PRIu64 " frames deferred\n", g.pfc_frames, g.pfc_received,
		       g.pfc_deferred);
}

static void incast_json(struct sim *s, FILE *o)
{
	struct incast_fig g;

	incast_figures(s, &g);
	fprintf(o, ",\"incast\":{\"senders\":%u,\"switch\":{\"buffer\":%" PRIu64 ",\"kmin\":%" PRIu64
		",\"kmax\":%" PRIu64 ",\"pmax\":%g,\"pfc\":%s,\"xoff\":%" PRIu64 ",\"xon\":%" PRIu64,
		s->c.hosts - 1, s->c.sw_buffer, s->c.kmin, s->c.kmax, s->c.pmax,
		s->c.pfc ? "true" : "false", s->c.xoff, s->c.xon);
	if (s->c.ets) {
		fputs(",\"ets\":[", o);
		for (int pr = 0; pr < 8; pr++)
			fprintf(o, "%s%u", pr ? "," : "", s->c.ets_weight[pr]);
		fputs("]", o);
	}
	if (s->c.pfc_prios)
		fprintf(o, ",\"pfc_prios\":%u", s->c.pfc_prios);
	fputs("}", o);
	if (s->c.leaves) {	/* the fabric: per uplink (leaf to spine) and downlink */
		fprintf(o, ",\"fabric\":{\"leaves\":%u,\"spines\":%u,\"hosts_per_leaf\":%u,\"links\":[",
			s->c.leaves, s->c.spines, (s->c.hosts + s->c.leaves - 1) / s->c.leaves);
		for (unsigned l = 0, n = 0; l < s->c.leaves; l++)
			for (unsigned sp = 0; sp < s->c.spines; sp++)
				for (int up = 1; up >= 0; up--) {
					struct hx_switch_stats st;

					hx_switch_fabric_stats(s->w, up, (int)l, (int)sp, &st);
					fprintf(o, "%s{\"leaf\":%u,\"spine\":%u,\"up\":%s,\"frames\":%" PRIu64
						",\"bytes\":%" PRIu64 ",\"q_max\":%" PRIu64 ",\"marks\":%" PRIu64
						",\"drops\":%" PRIu64, n++ ? "," : "", l, sp, up ? "true" : "false",
						st.frames, st.bytes, st.q_max, st.marks, st.drops);
					if (s->c.pfc || s->c.shared_buffer) {
						/* this port (up: the leaf's, down: the spine's): the
						 * XOFFs it sent to the other end for its ingress, and
						 * how long its own queue was paused by the other end */
						uint64_t qp = 0;

						for (int pr = 0; pr < 8; pr++) {
							struct hx_switch_queue_stats qs;

							if (!hx_switch_fabric_queue_stats(s->w, up, (int)l,
											  (int)sp, pr, &qs))
								qp += qs.paused_ns;
						}
						fprintf(o, ",\"pauses\":%" PRIu64 ",\"pfc_frames\":%" PRIu64
							",\"ingress_paused_ns\":%" PRIu64 ",\"pfc_rx\":%" PRIu64
							",\"paused_ns\":%" PRIu64, st.pauses, st.pfc_frames,
							st.paused_ns, st.pfc_rx, qp);
					}
					int m = 0;

					for (int pr = 0; s->c.prio_queues && pr < 8; pr++) {
						struct hx_switch_queue_stats qs;

						if (hx_switch_fabric_queue_stats(s->w, up, (int)l, (int)sp, pr,
										 &qs) || !(qs.frames || qs.drops))
							continue;
						fprintf(o, "%s{\"prio\":%d,\"frames\":%" PRIu64 ",\"drops\":%"
							PRIu64 ",\"q_max\":%" PRIu64 ",\"tx_bytes\":%" PRIu64 "}",
							m++ ? "," : ",\"queues\":[", pr, qs.frames, qs.drops,
							qs.q_max, qs.tx_bytes);
					}
					fputs(m ? "]}" : "}", o);
				}
		fputs("]", o);
		if (s->c.pfc || s->c.shared_buffer) {	/* each switch's buffer */
			fputs(",\"switches\":[", o);
			for (unsigned n = 0; n < s->c.leaves + s->c.spines; n++) {
				uint64_t now = 0, mx = 0;

				hx_switch_node_used(s->w, (int)n, &now, &mx);
				fprintf(o, "%s{\"%s\":%u,\"used\":%" PRIu64 ",\"used_max\":%" PRIu64 "}",
					n ? "," : "", n < s->c.leaves ? "leaf" : "spine",
					n < s->c.leaves ? n : n - s->c.leaves, now, mx);
			}
			fprintf(o, "],\"pauses\":%" PRIu64 ",\"pfc_frames\":%" PRIu64 ",\"pfc_rx\":%" PRIu64,
				g.fab_pauses, g.fab_pfc_frames, g.fab_pfc_rx);
		}
		fputs("}", o);
	}
	if (s->c.shared_buffer) {
		uint64_t mx = 0, now = hx_switch_shared_used(s->w, &mx);

		fprintf(o, ",\"shared\":{\"buffer\":%" PRIu64 ",\"alpha\":%g,\"used\":%" PRIu64
			",\"used_max\":%" PRIu64 "}", s->c.shared_buffer, s->c.alpha, now, mx);
	}
	/* per output queue (port, priority) that saw a frame */
	fputs(",\"queues\":[", o);
	for (unsigned pt = 0, n = 0; pt < s->c.hosts; pt++)
		for (int pr = 0; pr < 8; pr++) {
			struct hx_switch_queue_stats qs;

			if (hx_switch_queue_stats(s->w, (int)pt, pr, &qs) || !(qs.frames || qs.drops))
				continue;
			fprintf(o, "%s{\"port\":%u,\"prio\":%d,\"frames\":%" PRIu64 ",\"bytes\":%" PRIu64
				",\"drops\":%" PRIu64 ",\"q_max\":%" PRIu64, n++ ? "," : "", pt, pr,
				qs.frames, qs.bytes, qs.drops, qs.q_max);
			if (s->c.prio_queues)
				fprintf(o, ",\"marks\":%" PRIu64 ",\"paused_ns\":%" PRIu64
					",\"tx_frames\":%" PRIu64 ",\"tx_bytes\":%" PRIu64, qs.marks,
					qs.paused_ns, qs.tx_frames, qs.tx_bytes);
			if (s->c.ets)
				fprintf(o, ",\"weight\":%u", s->c.ets_weight[pr]);
			fputs("}", o);
		}
	fputs("]", o);
	fputs(",\"flows\":[", o);
	for (unsigned i = 0; i < s->nflows; i++)
		fprintf(o, "%s{\"host\":%d,\"bytes\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"gbps\":%.3f}",
			i ? "," : "", s->f[i].a, s->f[i].done * s->size, s->f[i].t_done - s->t0,
			flow_gbps(s, &s->f[i]));
	fprintf(o, "],\"sum_gbps\":%.3f,\"jain\":%.4f", g.sum_gbps, g.jain);
	fprintf(o, ",\"queue\":{\"max\":%" PRIu64 ",\"avg\":%.0f,\"frames\":%" PRIu64 ",\"marks\":%" PRIu64
		",\"drops\":%" PRIu64 "}", g.rx.q_max, g.rx.q_avg, g.rx.frames, g.rx.marks, g.rx.drops);
	fprintf(o, ",\"drops\":%" PRIu64 ",\"marks\":%" PRIu64 ",\"cnp_sent\":%" PRIu64
		",\"cnp_received\":%" PRIu64 ",\"ecn_marked_received\":%" PRIu64
		",\"pfc_pauses\":%" PRIu64 ",\"paused_ns\":%" PRIu64, g.drops, g.marks, g.cnp_sent,
		g.cnp_received, g.ecn_marked, g.pauses, g.paused_ns);
	fprintf(o, ",\"pfc_frames\":%" PRIu64 ",\"pfc_received\":%" PRIu64 ",\"pfc_deferred\":%" PRIu64,
		g.pfc_frames, g.pfc_received, g.pfc_deferred);
	fprintf(o, ",\"samples\":{\"every_ns\":%" PRIu64 ",\"q_max\":[", s->c.sample_ns);
	for (size_t k = 0; k < s->nsmp; k++)
		fprintf(o, "%s%" PRIu64, k ? "," : "", s->smp_q[k]);
	fputs("],\"shared_used\":[", o);
	for (size_t k = 0; k < s->nsmp && s->c.shared_buffer; k++)
		fprintf(o, "%s%" PRIu64, k ? "," : "", s->smp_used[k]);
	if (s->c.prio_queues) {	/* the queue to host 0 of each priority, at each sample */
		fputs("],\"prio_q\":[", o);
		for (int p = 0; p < 8; p++) {
			fputs(p ? ",[" : "[", o);
			for (size_t k = 0; k < s->nsmp; k++)
				fprintf(o, "%s%" PRIu64, k ? "," : "", s->smp_pq[k * 8 + p]);
			fputs("]", o);
		}
	}
	if (s->c.pfc) {	/* so far (cumulative): XOFFs to the hosts, their paused time */
		fputs("],\"pfc_pauses\":[", o);
		for (size_t k = 0; k < s->nsmp; k++)
			fprintf(o, "%s%" PRIu64, k ? "," : "", s->smp_xoff[k * 2]);
		fputs("],\"paused_ns\":[", o);
		for (size_t k = 0; k < s->nsmp; k++)
			fprintf(o, "%s%" PRIu64, k ? "," : "", s->smp_xoff[k * 2 + 1]);
	}
	fputs("],\"flow_msgs\":[", o);
	for (unsigned i = 0; i < s->nflows; i++) {
		fputs(i ? ",[" : "[", o);
		for (size_t k = 0; k < s->nsmp; k++)
			fprintf(o, "%s%" PRIu64, k ? "," : "", s->smp_msgs[k * s->nflows + i]);
		fputs("]", o);
	}
	fputs("]}}", o);
}

static void report_table(struct sim *s, const struct results *r)
{
	const struct cfg *c = &s->c;
	char t1[64], t2[64];

	printf("qrnic-sim%s%s: %s", *c->name ? " " : "", c->name, op_name[c->op]);
	if (!op_atomic(c->op))
		printf(" %" PRIu64 " B", s->size);
	if (c->incast)
		printf(", %u hosts (%u:1 incast through a switch), %u QP%s x depth %u, ", c->hosts,
		       c->hosts - 1, c->qps, c->qps > 1 ? "s" : "", c->depth);
	else
		printf(", %u hosts (%u link%s), %u QP%s x depth %u, ", c->hosts, c->hosts / 2,
		       c->hosts > 2 ? "s" : "", c->qps, c->qps > 1 ? "s" : "", c->depth);
	if (c->count)
		printf("%" PRIu64 " msgs/QP", c->count);
	if (c->duration_ns) {
		fmt_time(t1, sizeof(t1), (double)c->duration_ns);
		printf("%s%s", c->count ? ", at most " : "for ", t1);
	}
	printf("\n");
	fmt_rate(t1, sizeof(t1), (double)c->rate_bps);
	fmt_time(t2, sizeof(t2), (double)c->latency_ns);
	printf("  link %s, latency %s, loss %g%%, seed %" PRIu64 ", path MTU %u, profile %s\n",
	       c->rate_bps ? t1 : "infinite", t2, c->loss * 100, c->seed,
	       c->op == OP_UD_SEND ? 4096 : c->mtu, c->profile);
	if (c->mr_size || c->random_offsets)
		printf("  remote region %" PRIu64 " bytes per QP, offsets %s\n",
		       s->nflows ? s->f[0].stride * s->f[0].nslot_b : c->mr_size,
		       c->random_offsets ? "random" : "seq");
	if (c->signal > 1)
		printf("  a CQE for every %u%s send WQE and the last: latency of those only\n",
		       c->signal, ordinal_suffix(c->signal));
	printf("  note: %s\n", timing_note(c));
	printf("\n");
	printf("  %-22s %" PRIu64 " of %" PRIu64 " posted", "messages completed", s->msgs, s->posted);
	if (c->op == OP_UD_SEND)
		printf(" (%" PRIu64 " lost%s", s->lost, s->late ? "" : ")");
	if (s->late)
		printf(", %" PRIu64 " of them late)", s->late);
	printf("\n");
	if (c->verify == VERIFY_OFF)
		printf("  %-22s off\n", "data verified");
	else if (op_atomic(c->op))
		printf("  %-22s %" PRIu64 " returned values, %" PRIu64 " final targets%s\n",
		       "data verified", s->v_atomics, s->v_final, s->errors ? "" : ": OK");
	else
		printf("  %-22s %" PRIu64 " messages (%" PRIu64 " bytes) at completion, %" PRIu64
		       " final buffers%s\n", "data verified", s->v_msgs, s->v_bytes, s->v_final,
		       s->errors ? "" : ": OK");
	fmt_time(t1, sizeof(t1), (double)r->sim_ns);
	printf("  %-22s %s\n", "simulated time", t1);
	fmt_rate(t1, sizeof(t1), r->bw_bps);
	printf("  %-22s %s", "bandwidth (payload)", t1);
	if (r->bw_bps >= 0 && c->rate_bps)
		printf("  (%.1f%% of link%s)", 100.0 * r->bw_bps / (double)c->rate_bps /
		       (c->incast ? 1 : c->hosts / 2), c->hosts > 2 && !c->incast ? "s" : "");
	printf("\n");
	if (r->msg_rate >= 1e6)
		printf("  %-22s %.4g M msg/s\n", "message rate", r->msg_rate / 1e6);
	else if (r->msg_rate >= 0)
		printf("  %-22s %.4g k msg/s\n", "message rate", r->msg_rate / 1e3);
	else
		printf("  %-22s n/a\n", "message rate");
	printf("  %-22s %" PRIu64 " (dropped %" PRIu64 ", retransmitted %" PRIu64 ", timeouts %" PRIu64 ")\n",
	       "frames on the wire", r->frames, r->dropped, r->stats[QRNIC_STAT_RETRANSMITTED_PACKETS],
	       r->stats[QRNIC_STAT_RETRANSMIT_TIMEOUTS]);
	if (!profile_is_functional(c->profile)) {
		static const char *const cn[3] = { "QPC", "MPT", "MTT" };

		for (int role = 0; role < 2; role++) {
			printf("  %-22s", role ? "  responder" : "cache misses requester");
			for (int k = 0; k < 3; k++) {
				uint64_t h = r->role[role][2 * k], m = r->role[role][2 * k + 1];

				printf(" %s %" PRIu64 "/%" PRIu64 " (%.1f%%)%s", cn[k], m, h + m,
				       h + m ? 100.0 * (double)m / (double)(h + m) : 0.0, k < 2 ? "," : "\n");
			}
		}
	}
	if (c->plan)
		printf("  %-22s %" PRIu64 " (plan %s)\n", "faults injected",
		       r->stats[QRNIC_STAT_FAULTS_INJECTED], c->plan);
	printf("  %-22s %s\n", "ICRC", s->trusted ? "skipped: nothing corrupts or captures frames (--icrc)"
					  : c->icrc ? "computed and checked (--icrc)"
					  : "computed and checked (--plan/--pcap)");
	printf("\n  latency, post to CQE%s (simulated ns)\n",
	       c->op == OP_UD_SEND ? " at the receiver" : "");
	printf("  %10s %10s %10s %10s %10s %10s %12s\n", "min", "p50", "p90", "p99", "p99.9", "max", "mean");
	printf("  %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %12.1f\n",
	       r->min, r->p50, r->p90, r->p99, r->p999, r->max, r->mean);
	if (!c->deterministic && s->host_s > 0) {
		printf("\n  host: %.3f s (%.3f s of CPU), %.0f simulated packets/s, %.0f messages/s\n",
		       s->host_s, s->host_cpu_s, (double)r->frames / s->host_s,
		       (double)s->msgs / s->host_s);
	}
	if (s->trace)
		printf("  trace: %" PRIu64 " events to %s%s\n", s->trace_written, c->trace,
		       s->trace_lost ? " (some lost: ring overrun)" : "");
	for (int d = 0; d < hx_num_devs(s->w); d++) {
		uint64_t b[19];

		if (hx_rxbuf_info(s->w, d, b))
			continue;
		printf("  %-22s host %d: most %.1f KB (", "receive buffer", d, (double)b[1] / 1e3);
		for (int p = 0, n = 0; p < 8; p++)
			if (b[10 + p])
				printf("%sprio %d: %.1f KB", n++ ? ", " : "", p, (double)b[10 + p] / 1e3);
		printf("), dropped %" PRIu64 ", PFC frames sent %" PRIu64 "\n",
		       hx_dev_stat(s->w, d, QRNIC_STAT_RX_BUFFER_DROPS),
		       hx_dev_stat(s->w, d, QRNIC_STAT_PFC_SENT));
	}
	if (c->incast)
		incast_table(s);
	if (r->guest_errors || r->busy_unscheduled)
		printf("  WARNING: model reported %" PRIu64 " guest errors, %" PRIu64 " unscheduled busy devices\n",
		       r->guest_errors, r->busy_unscheduled);
	if (s->fail)
		printf("\n  FAILED: %s\n", s->why);
}

static void json_str(FILE *o, const char *v)
{
	fputc('"', o);
	for (const char *p = v; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(o, "\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			fprintf(o, "\\u%04x", *p);
		else
			fputc(*p, o);
	}
	fputc('"', o);
}

static void json_num(FILE *o, double v)
{
	if (v < 0)
		fputs("null", o);
	else
		fprintf(o, "%.3f", v);
}

static void report_json(struct sim *s, const struct results *r)
{
	const struct cfg *c = &s->c;
	FILE *o = stdout;
	bool first = true;

	fputs("{\"name\":", o);
	json_str(o, c->name);
	fputs(",\"ok\":", o);
	fputs(s->fail ? "false" : "true", o);
	fputs(",\"error\":", o);
	if (s->fail)
		json_str(o, s->why);
	else
		fputs("null", o);
	fprintf(o, ",\"config\":{\"op\":\"%s\",\"size\":%" PRIu64 ",\"hosts\":%u,\"qps\":%u,"
		"\"depth\":%u,\"count\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"rate_bps\":%" PRIu64
		",\"overhead\":%u,\"latency_ns\":%" PRIu64 ",\"loss\":%.9g,\"seed\":%" PRIu64
		",\"mtu\":%u,\"ack_timeout\":%u,\"retry_cnt\":%u,\"verify\":\"%s\",\"profile\":",
		op_name[c->op], s->size, c->hosts, c->qps, c->depth, c->count, c->duration_ns,
		c->rate_bps, c->overhead, c->latency_ns, c->loss, c->seed,
		c->op == OP_UD_SEND ? 4096 : c->mtu, c->ack_timeout, c->retry_cnt,
		verify_name[c->verify]);
	json_str(o, c->profile);
	fprintf(o, ",\"mr_size\":%" PRIu64 ",\"offsets\":\"%s\"",
		s->nflows && (c->op == OP_WRITE || c->op == OP_READ) ? s->f[0].stride * s->f[0].nslot_b : 0,
		c->random_offsets ? "random" : "seq");
	fprintf(o, ",\"trusted_wire\":%s,\"signal\":%u", s->trusted ? "true" : "false", c->signal);
	if (c->inl || c->bf)	/* only when set: older outputs stay byte for byte */
		fprintf(o, ",\"inline\":%s,\"bf\":%s", c->inl ? "true" : "false",
			c->bf ? "true" : "false");
	fputs("},\"timing\":", o);
	json_str(o, profile_is_functional(c->profile) ? "functional" : "timed");
	fputs(",\"note\":", o);
	json_str(o, timing_note(c));
	fprintf(o, ",\"links\":%u,\"qps_total\":%u,\"posted\":%" PRIu64 ",\"messages\":%" PRIu64 ",\"lost\":%" PRIu64
		",\"late\":%" PRIu64 ",\"bytes\":%" PRIu64, c->incast ? 1 : c->hosts / 2, s->nflows, s->posted, s->msgs,
		s->lost, s->late, s->bytes);
	fprintf(o, ",\"verified\":{\"mode\":\"%s\",\"messages\":%" PRIu64 ",\"bytes\":%" PRIu64
		",\"atomics\":%" PRIu64 ",\"final_buffers\":%" PRIu64 ",\"final_bytes\":%" PRIu64
		",\"errors\":%" PRIu64 "}", verify_name[c->verify], s->v_msgs, s->v_bytes, s->v_atomics,
		s->v_final, s->v_final_bytes, s->errors);
	if (c->migrate_every)
		fprintf(o, ",\"migrations\":%" PRIu64, s->migrations);
	fprintf(o, ",\"sim_ns\":%" PRIu64, r->sim_ns);
	fprintf(o, ",\"latency_ns\":{\"min\":%" PRIu64 ",\"p50\":%" PRIu64 ",\"p90\":%" PRIu64
		",\"p99\":%" PRIu64 ",\"p999\":%" PRIu64 ",\"max\":%" PRIu64 ",\"mean\":%.1f}",
		r->min, r->p50, r->p90, r->p99, r->p999, r->max, r->mean);
	fputs(",\"bandwidth_bps\":", o);
	json_num(o, r->bw_bps);
	fputs(",\"msg_rate\":", o);
	json_num(o, r->msg_rate);
	fprintf(o, ",\"wire\":{\"frames\":%" PRIu64 ",\"delivered\":%" PRIu64 ",\"dropped\":%" PRIu64 "}",
		r->frames, r->delivered, r->dropped);
	fputs(",\"stats\":{", o);
	for (int k = 0; k < QRNIC_STAT_COUNT; k++) {
		if (!r->stats[k])
			continue;
		fprintf(o, "%s\"%s\":%" PRIu64, first ? "" : ",", hx_stat_name(k), r->stats[k]);
		first = false;
	}
	fputs("}", o);
	/* translation caches by role: misses and lookups (hits + misses) */
	fputs(",\"caches\":{", o);
	for (int role = 0; role < 2; role++) {
		static const char *const cn[3] = { "qpc", "mpt", "mtt" };

		fprintf(o, "%s\"%s\":{", role ? "," : "", role ? "responder" : "requester");
		for (int k = 0; k < 3; k++)
			fprintf(o, "%s\"%s_hits\":%" PRIu64 ",\"%s_misses\":%" PRIu64, k ? "," : "",
				cn[k], r->role[role][2 * k], cn[k], r->role[role][2 * k + 1]);
		fputs("}", o);
	}
	fputs("}", o);
	fprintf(o, ",\"warnings\":{\"guest_errors\":%" PRIu64 ",\"busy_unscheduled\":%" PRIu64 "}",
		r->guest_errors, r->busy_unscheduled);
	if (s->trace)
		fprintf(o, ",\"trace\":{\"events\":%" PRIu64 ",\"lost\":%" PRIu64 "}", s->trace_written,
			s->trace_lost);
	/* the devices' receive buffers (rx_buffer), where on */
	{
		int n = 0;

		for (int d = 0; d < hx_num_devs(s->w); d++) {
			uint64_t b[19];

			if (hx_rxbuf_info(s->w, d, b))
				continue;
			fprintf(o, "%s{\"host\":%d,\"used\":%" PRIu64 ",\"max_used\":%" PRIu64
				",\"prio_max\":[", n++ ? "," : ",\"rx_buffer\":[", d, b[0], b[1]);
			for (int p = 0; p < 8; p++)
				fprintf(o, "%s%" PRIu64, p ? "," : "", b[10 + p]);
			fprintf(o, "],\"drops\":%" PRIu64 ",\"pfc_sent\":%" PRIu64 "}",
				hx_dev_stat(s->w, d, QRNIC_STAT_RX_BUFFER_DROPS),
				hx_dev_stat(s->w, d, QRNIC_STAT_PFC_SENT));
		}
		if (n)
			fputs("]", o);
	}
	if (c->incast)
		incast_json(s, o);
	if (!c->deterministic) {
		fprintf(o, ",\"host\":{\"seconds\":%.6f,\"packets_per_s\":", s->host_s);
		json_num(o, s->host_s > 0 ? (double)r->frames / s->host_s : -1);
		fputs(",\"messages_per_s\":", o);
		json_num(o, s->host_s > 0 ? (double)s->msgs / s->host_s : -1);
		fprintf(o, ",\"cpu_seconds\":%.6f", s->host_cpu_s);
		/* first touches of memory in the run loop: a fixed start-up cost
		 * a short run pays in full (docs/congestion.md) */
		fprintf(o, ",\"page_faults\":%ld", s->host_minflt);
		/* what the run loop did (hx_loop_count), for profiling per packet */
		fprintf(o, ",\"loop\":{\"iterations\":%" PRIu64 ",\"timer_fires\":%" PRIu64
			",\"dev_runs\":%" PRIu64 ",\"idle_scans\":%" PRIu64 ",\"instants\":%" PRIu64 "}}",
			hx_loop_count(s->w, HX_LC_ITERATIONS), hx_loop_count(s->w, HX_LC_TIMER_FIRES),
			hx_loop_count(s->w, HX_LC_DEV_RUNS), hx_loop_count(s->w, HX_LC_IDLE_SCANS),
			hx_loop_count(s->w, HX_LC_INSTANTS));
	}
	fputs("}\n", o);
	fflush(o);
}

static void sim_free(struct sim *s)
{
	if (s->w) {
		hx_pcap_close(s->w);
		hx_world_free(s->w);
	}
	if (s->trace && s->trace != stdout)
		fclose(s->trace);
	for (unsigned i = 0; s->f && i < s->nflows; i++) {
		free(s->f[i].post_t);
		free(s->f[i].atom_expect);
		free(s->f[i].signaled);
		free(s->f[i].slot_msg);
		free(s->f[i].rslot);
	}
	free(s->smp_q);
	free(s->smp_used);
	free(s->smp_xoff);
	free(s->smp_pq);
	free(s->smp_msgs);
	free(s->f);
	free(s->lat);
	free(s->buf1);
	free(s->buf2);
}

/* One workload: returns a SIM_EXIT_* code. */
static int simulate(const struct cfg *c)
{
	struct sim s;
	struct results r;
	int rc;

	memset(&s, 0, sizeof(s));
	s.c = *c;
	if (setup(&s) || load_plan(&s) || trace_open(&s))
		goto out;
	if (c->pcap && hx_pcap_open(s.w, c->pcap)) {
		sim_fail(&s, SIM_EXIT_USAGE, "--pcap: %s", hx_world_error(s.w));
		goto out;
	}
	/* after the plan and the pcap, which keep the ICRC on */
	if (!c->icrc)
		s.trusted = hx_wire_trusted(s.w, 1) != 0;
	if (run(&s) == 0)
		verify_end(&s);
	trace_drain(&s);
	compute(&s, &r);
	if (c->json)
		report_json(&s, &r);
	else if (!c->quiet)
		report_table(&s, &r);
out:
	if (s.fail)
		fprintf(stderr, "qrnic-sim%s%s: %s\n", *c->name ? " " : "", c->name, s.why);
	rc = s.fail;
	sim_free(&s);
	return rc;
}

int main(int argc, char **argv)
{
	int worst = 0;
	const char *workload = NULL;
	char k[128];

	/* the harness copies every frame; keep freed memory in the process */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	atexit(sim_cleanup);
	for (int i = 1; i < argc; i++) {
		char *a = argv[i], *v = NULL, *eq;
		int o;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (strncmp(a, "--", 2)) {
			fprintf(stderr, "qrnic-sim: unexpected argument '%s' (see --help)\n", a);
			return SIM_EXIT_USAGE;
		}
		eq = strchr(a + 2, '=');
		if ((eq ? (size_t)(eq - a - 2) : strlen(a + 2)) >= sizeof(k)) {
			fprintf(stderr, "qrnic-sim: option name too long: '%.40s...'\n", a);
			return SIM_EXIT_USAGE;
		}
		snprintf(k, sizeof(k), "%.*s", eq ? (int)(eq - a - 2) : (int)strlen(a + 2), a + 2);
		if (eq)
			v = eq + 1;
		if (!strcmp(k, "workload")) {
			if (!v && i + 1 < argc)
				v = argv[++i];
			if (!v) {
				fprintf(stderr, "qrnic-sim: --workload needs a file\n");
				return SIM_EXIT_USAGE;
			}
			workload = v;
			continue;
		}
		o = opt_find(k);
		if (o < 0) {
			fprintf(stderr, "qrnic-sim: unknown option '--%s'%s (see --help)\n", k, retired(k));
			return SIM_EXIT_USAGE;
		}
		if (opt_tab[o].arg && !v) {
			if (i + 1 >= argc) {
				fprintf(stderr, "qrnic-sim: --%s needs a value\n", k);
				return SIM_EXIT_USAGE;
			}
			v = argv[++i];
		}
		kv_add(&cli, k, v);
	}
	if (workload && load_workload(workload, &global, &secs, &nsec)) {
		fprintf(stderr, "qrnic-sim: %s\n", errbuf);
		return SIM_EXIT_USAGE;
	}
	for (int r = 0; r < (nsec ? nsec : 1); r++) {
		struct cfg c;
		int rc;

		cfg_defaults(&c);
		if (nsec)
			snprintf(c.name, sizeof(c.name), "%s", secs[r].name);
		if (kv_apply(&c, &global) || (nsec && kv_apply(&c, &secs[r].kv)) || kv_apply(&c, &cli)) {
			fprintf(stderr, "qrnic-sim: %s\n", errbuf);
			return SIM_EXIT_USAGE;
		}
		/* --duration alone means "for that long", not "count or duration" */
		if (c.duration_ns && !c.count_set)
			c.count = 0;
		if (r && !c.json && !c.quiet)
			printf("\n");
		rc = simulate(&c);
		if (rc == SIM_EXIT_USAGE)
			return rc;
		if (rc > worst)
			worst = rc;
	}
	return worst;
}
