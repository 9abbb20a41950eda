/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: the configuration parameters (struct qrnic_config)
 * as data.  The table below is the one place where a parameter's default,
 * bounds and meaning are written down; from it the model fills defaults
 * and validates, QEMU makes its -device properties (hw/qrnic.c), the
 * harness and qrnic-sim set parameters by name, the tests read the
 * defaults and docs/spec.md section 16.2 is checked (tests/test_config.py).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "qrnic_internal.h"

#define U32(f)	QRNIC_CFG_U32, offsetof(struct qrnic_config, f)
#define U64(f)	QRNIC_CFG_U64, offsetof(struct qrnic_config, f)
#define BOOL(f)	QRNIC_CFG_BOOL, offsetof(struct qrnic_config, f)
#define MAC(f)	QRNIC_CFG_MAC, offsetof(struct qrnic_config, f)
#define QRNIC_MAC_MAX	0xffffffffffffull

static const struct qrnic_config_param params[] = {
	{ "mac", "mac", MAC(mac), 0x525400123456ull, 0, QRNIC_MAC_MAX, 0,
	  "port MAC address, unicast (QEMU: the standard NIC property; without it "
	  "QEMU assigns its usual 52:54:00:12:34:xx)",
	  "`MAC_LO/HI`, `mac`" },
	{ "eth_mtu", "mtu", U32(eth_mtu), 4200, 576, 9000, 0,
	  "Ethernet payload MTU of the port (bytes); the largest RoCE path MTU that fits "
	  "is the port's max_mtu", "`ETH_MTU`, `eth_mtu`" },
	{ "speed_mbps", NULL, U32(speed_mbps), 100000, 1, 1000000, 0,
	  "reported link speed (Mb/s)", "`speed_mbps`" },
	{ "max_qp", "max-qp", U32(max_qp), 65536, 4, 65536, 0,
	  "QP number space, including QPN 0 and 1", "`max_qp`" },
	{ "max_qp_wr", "max-qp-wr", U32(max_qp_wr), 8192, 2, 1u << QRNIC_MAX_QUEUE_LOG,
	  QRNIC_CFG_POW2, "entries per send or receive queue", "`max_qp_wr`" },
	{ "max_cq", "max-cq", U32(max_cq), 65536, 2, 65536, 0,
	  "CQ number space, including 0 (unused)", "`max_cq`" },
	{ "max_cqe", "max-cqe", U32(max_cqe), 1u << 22, 2, 1u << QRNIC_MAX_QUEUE_LOG,
	  QRNIC_CFG_POW2, "entries per CQ (4M: a ConnectX-5 reports 4194303 usable entries of a "
	  "2^22 ring; qrnic counts ring entries, a power of two)", "`max_cqe`" },
	{ "max_mr", "max-mr", U32(max_mr), 1u << 24, 2, 1u << 24, 0,
	  "MPT entries (MRs and memory windows), including 0 (unused); 2^24 as a "
	  "ConnectX-5 (64 bytes of host memory per slot, taken as slots are used)", "`max_mr`" },
	{ "max_pd", "max-pd", U32(max_pd), 65536, 2, 1u << 24, 0,
	  "PD number space, including 0 (reserved)", "`max_pd`" },
	{ "max_ah", "max-ah", U32(max_ah), 65536, 2, 1u << 24, 0,
	  "AH number space, including 0 (unused)", "`max_ah`" },
	{ "max_eq", "max-eq", U32(max_eq), 64, 2, 2048, 0,
	  "EQ number space, including 0 (unused)", "`max_eq`" },
	{ "max_uctx", "max-uctx", U32(max_uctx), 64, 1, 4096, 0,
	  "doorbell pages (user contexts), including page 0", "`NUM_DB_PAGES`, `max_uctx`" },
	{ "max_srq", "max-srq", U32(max_srq), 65536, 2, 1u << 24, 0,
	  "SRQ number space, including 0 (unused)", "`max_srq`" },
	{ "max_xrcd", "max-xrcd", U32(max_xrcd), 64, 2, 1u << 24, 0,
	  "XRC domain number space, including 0 (unused)", "`max_xrcd`" },
	{ "max_mtt", "max-mtt", U32(max_mtt), 1u << 24, 1, 1u << 28, 0,
	  "MTT entries, the pages of all MRs together (2^24: 64 GiB of 4 KiB pages; "
	  "9 bytes of host memory per entry, taken as entries are used)", "`max_mtt`" },
	{ "max_mr_size", "max-mr-size", U64(max_mr_size), 1ull << 32, 4096, 1ull << 40, 0,
	  "largest MR (bytes)", "`max_mr_size`" },
	{ "num_vectors", "num-vectors", U32(num_vectors), 8, 1, 2048, 0,
	  "MSI-X vectors", "`NUM_VECTORS`, `num_vectors`" },
	{ "gid_tbl_len", "gid-table-len", U32(gid_tbl_len), 16, 1, 256, 0,
	  "GID table entries", "`gid_tbl_len`" },
	{ "max_rd_atomic", NULL, U32(max_rd_atomic), 16, 1, QRNIC_MAX_RD_ATOMIC, 0,
	  "RDMA READs and atomics in flight per QP, as requester and as responder",
	  "`max_qp_rd_atom`, `max_qp_init_rd_atom`" },
	{ "loss_window", "loss-window", BOOL(loss_window), 1, 0, 1, 0,
	  "on: halve a QP's window on loss (spec 12.3); off: a fixed window of 512 packets",
	  "not seen" },
	/* congestion control, spec 12.15 (names and defaults: ConnectX DCQCN, mlx5 ecn sysfs) */
	{ "cc_algo", "cc-algo", U32(cc_algo), 0, 0, QRNIC_CC_NALGO - 1, 0,
	  "congestion control of RC/UC QPs: 0 none (packets not ECN-capable, no CNPs), "
	  "1 DCQCN (ECT(0), CNPs, rate limiting under a timing profile), "
	  "2 TIMELY (RTT-gradient rate limiting under a timing profile)", "not seen" },
	{ "np_enable", "np-enable", BOOL(np_enable), 1, 0, 1, 0,
	  "notification point: a CE-marked packet makes the device send a CNP (with cc_algo "
	  "not 0); off: counted in ecn_marked_received only (mlx5 ecn/roce_np/enable)",
	  "`QUERY_CC`" },
	{ "rp_enable", "rp-enable", BOOL(rp_enable), 1, 0, 1, 0,
	  "reaction point: DCQCN lowers a QP's rate on a CNP; off: CNPs are counted in "
	  "cnp_received and ignored (mlx5 ecn/roce_rp/enable)", "`QUERY_CC`" },
	{ "np_min_time_between_cnps", "np-min-time-between-cnps", U32(np_min_time_between_cnps),
	  4, 0, 1000000, 0, "notification point: at most one CNP per QP per this many us "
	  "(mlx5 min_time_between_cnps)", "not seen" },
	{ "np_cnp_dscp", "np-cnp-dscp", U32(np_cnp_dscp), 48, 0, 63, 0,
	  "notification point: IP DSCP of CNPs (mlx5 cnp_dscp)", "not seen" },
	{ "rp_dce_tcp_g", "rp-dce-tcp-g", U32(rp_dce_tcp_g), 1019, 0, 1023, 0,
	  "reaction point: alpha keeps this many 1024ths per alpha period, g = 1 - this/1024 "
	  "(mlx5 dce_tcp_g)", "not seen" },
	{ "rp_dce_tcp_rtt", "rp-dce-tcp-rtt", U32(rp_dce_tcp_rtt), 1, 1, 131071, 0,
	  "reaction point: alpha update period (us) (mlx5 dce_tcp_rtt)", "not seen" },
	{ "rp_initial_alpha_value", "rp-initial-alpha-value", U32(rp_initial_alpha_value), 1023,
	  0, 1023, 0, "reaction point: alpha (1024ths) at a QP's first CNP "
	  "(mlx5 initial_alpha_value)", "not seen" },
	{ "rp_min_rate", "rp-min-rate", U32(rp_min_rate), 1, 1, 1000000, 0,
	  "reaction point: lowest rate (Mb/s) (mlx5 rpg_min_rate)", "not seen" },
	{ "rp_min_dec_fac", "rp-min-dec-fac", U32(rp_min_dec_fac), 50, 0, 100, 0,
	  "reaction point: one CNP leaves at least this % of the rate (mlx5 rpg_min_dec_fac)",
	  "not seen" },
	{ "rp_time_reset", "rp-time-reset", U32(rp_time_reset), 300, 1, 1000000, 0,
	  "reaction point: rate-increase timer period T (us) (mlx5 rpg_time_reset)", "not seen" },
	{ "rp_byte_reset", "rp-byte-reset", U32(rp_byte_reset), 32767, 0, 1u << 30, 0,
	  "reaction point: rate-increase byte counter B (bytes sent); 0: none, the timer alone "
	  "sets the stage (mlx5 rpg_byte_reset)", "not seen" },
	{ "rp_threshold", "rp-threshold", U32(rp_threshold), 1, 1, 31, 0,
	  "reaction point: F, rate-increase events of fast recovery (mlx5 rpg_threshold)",
	  "not seen" },
	{ "rp_ai_rate", "rp-ai-rate", U32(rp_ai_rate), 5, 1, 1000000, 0,
	  "reaction point: additive increase R_AI (Mb/s) (mlx5 rpg_ai_rate)", "not seen" },
	{ "rp_hai_rate", "rp-hai-rate", U32(rp_hai_rate), 50, 1, 1000000, 0,
	  "reaction point: hyper increase R_HAI (Mb/s) (mlx5 rpg_hai_rate)", "not seen" },
	{ "rp_initial_rate", "rp-initial-rate", U32(rp_initial_rate), 0, 0, 1000000, 0,
	  "reaction point: a DCQCN QP entering RTS is paced at this rate (Mb/s) and recovers "
	  "to the line rate by the increase rules; 0: it starts unlimited", "not seen" },
	{ "rp_port_hold", "rp-port-hold", BOOL(rp_port_hold), 0, 0, 1, QRNIC_CFG_LATE,
	  "under a timing profile, a QP with congestion control at the line rate hands the port "
	  "one packet at a time, the next when the port is 2 us from free, so that a CNP acts on "
	  "the next packet; off: it hands the port all its window allows at once", "not seen" },
	/* TIMELY (cc_algo 2), Mittal et al. SIGCOMM 2015; defaults: the paper's table 1 */
	{ "timely_t_low", "timely-t-low", U32(timely_t_low), 50, 1, 1000000, 0,
	  "TIMELY: RTT (us) below which the rate grows by delta whatever the gradient", "not seen" },
	{ "timely_t_high", "timely-t-high", U32(timely_t_high), 500, 1, 1000000, 0,
	  "TIMELY: RTT (us) above which the rate shrinks by beta (1 - t_high/RTT)", "not seen" },
	{ "timely_min_rtt", "timely-min-rtt", U32(timely_min_rtt), 20, 1, 1000000, 0,
	  "TIMELY: minimum RTT (us), the gradient's normaliser", "not seen" },
	{ "timely_delta", "timely-delta", U32(timely_delta), 10, 1, 1000000, 0,
	  "TIMELY: additive increase step delta (Mb/s)", "not seen" },
	{ "timely_beta", "timely-beta", U32(timely_beta), 819, 1, 1024, 0,
	  "TIMELY: multiplicative decrease factor beta (1024ths; 819 = 0.8)", "not seen" },
	{ "timely_alpha", "timely-alpha", U32(timely_alpha), 896, 1, 1024, 0,
	  "TIMELY: EWMA weight of a new RTT difference (1024ths; 896 = 0.875)", "not seen" },
	{ "timely_hai_n", "timely-hai-n", U32(timely_hai_n), 5, 1, 1000, 0,
	  "TIMELY: samples in a row with a gradient <= 0 after which the step is N delta "
	  "(hyper-active increase)", "not seen" },
	/* the receive buffer and the PFC frames it sends, spec 12.15 */
	{ "rx_buffer", "rx-buffer", U32(rx_buffer), 0, 0, 16u << 20, 0,
	  "receive buffer of the port (bytes), used under a timing profile: frames wait in it "
	  "until the receive pipeline takes them (resp_pkt_cycles / num_pu each, and "
	  "rx_drain_mbps); a frame that does not fit is dropped (rx_buffer_drops); "
	  "0: off, frames are taken as they arrive", "not seen" },
	{ "rx_pfc_xoff", "rx-pfc-xoff", U32(rx_pfc_xoff), 0, 0, 16u << 20, 0,
	  "receive buffer: when a priority's bytes in it reach this, the port sends an 802.1Qbb "
	  "XOFF for that priority (at most rx_buffer); 0: no PFC", "not seen" },
	{ "rx_pfc_xon", "rx-pfc-xon", U32(rx_pfc_xon), 0, 0, 16u << 20, 0,
	  "receive buffer: a paused priority whose bytes fall to this gets an XON "
	  "(below rx_pfc_xoff)", "not seen" },
	{ "rx_drain_mbps", "rx-drain-mbps", U32(rx_drain_mbps), 0, 0, 1000000, 0,
	  "receive buffer: the pipeline takes frame bytes at most at this rate (Mb/s), "
	  "a slow receiver; 0: only the per-packet cost", "not seen" },
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))
_Static_assert(NPARAMS <= QRNIC_CONFIG_MAX_PARAMS, "raise QRNIC_CONFIG_MAX_PARAMS");

#undef U32
#undef U64
#undef BOOL
#undef MAC

const struct qrnic_config_param *qrnic_config_param(unsigned i)
{
	return i < NPARAMS ? &params[i] : NULL;
}

const struct qrnic_config_param *qrnic_config_param_find(const char *name)
{
	for (unsigned i = 0; i < NPARAMS; i++) {
		if (!strcmp(name, params[i].name) ||
		    (params[i].prop && !strcmp(name, params[i].prop)))
			return &params[i];
	}
	return NULL;
}

/* The parameters of QUERY_CC / SET_CC (spec 6.6.22), by QRNIC_CC_P_* id. */
static const char *const cc_params[QRNIC_CC_P_COUNT] = {
	[QRNIC_CC_P_ALGO] = "cc_algo",
	[QRNIC_CC_P_NP_ENABLE] = "np_enable",
	[QRNIC_CC_P_NP_MIN_TIME_BETWEEN_CNPS] = "np_min_time_between_cnps",
	[QRNIC_CC_P_NP_CNP_DSCP] = "np_cnp_dscp",
	[QRNIC_CC_P_RP_ENABLE] = "rp_enable",
	[QRNIC_CC_P_RP_DCE_TCP_G] = "rp_dce_tcp_g",
	[QRNIC_CC_P_RP_DCE_TCP_RTT] = "rp_dce_tcp_rtt",
	[QRNIC_CC_P_RP_INITIAL_ALPHA_VALUE] = "rp_initial_alpha_value",
	[QRNIC_CC_P_RP_MIN_RATE] = "rp_min_rate",
	[QRNIC_CC_P_RP_MIN_DEC_FAC] = "rp_min_dec_fac",
	[QRNIC_CC_P_RP_TIME_RESET] = "rp_time_reset",
	[QRNIC_CC_P_RP_BYTE_RESET] = "rp_byte_reset",
	[QRNIC_CC_P_RP_THRESHOLD] = "rp_threshold",
	[QRNIC_CC_P_RP_AI_RATE] = "rp_ai_rate",
	[QRNIC_CC_P_RP_HAI_RATE] = "rp_hai_rate",
	[QRNIC_CC_P_RP_INITIAL_RATE] = "rp_initial_rate",
	[QRNIC_CC_P_TIMELY_T_LOW] = "timely_t_low",
	[QRNIC_CC_P_TIMELY_T_HIGH] = "timely_t_high",
	[QRNIC_CC_P_TIMELY_MIN_RTT] = "timely_min_rtt",
	[QRNIC_CC_P_TIMELY_DELTA] = "timely_delta",
	[QRNIC_CC_P_TIMELY_BETA] = "timely_beta",
	[QRNIC_CC_P_TIMELY_ALPHA] = "timely_alpha",
	[QRNIC_CC_P_TIMELY_HAI_N] = "timely_hai_n",
};

const struct qrnic_config_param *qrnic_cc_param(uint32_t id)
{
	return id < QRNIC_CC_P_COUNT ? qrnic_config_param_find(cc_params[id]) : NULL;
}

const char *qrnic_config_type_name(enum qrnic_config_type t)
{
	switch (t) {
	case QRNIC_CFG_U32:
		return "uint32";
	case QRNIC_CFG_U64:
		return "uint64";
	case QRNIC_CFG_BOOL:
		return "bool";
	case QRNIC_CFG_MAC:
		return "mac";
	}
	return "?";
}

uint64_t qrnic_config_get(const struct qrnic_config *cfg, const struct qrnic_config_param *p)
{
	const char *f = (const char *)cfg + p->offset;
	uint64_t v = 0;
	uint32_t v32;

	switch (p->type) {
	case QRNIC_CFG_U32:
		memcpy(&v32, f, sizeof(v32));
		return v32;
	case QRNIC_CFG_U64:
		memcpy(&v, f, sizeof(v));
		return v;
	case QRNIC_CFG_BOOL:
		return *(const bool *)f;
	case QRNIC_CFG_MAC:
		for (int i = 0; i < 6; i++)
			v = v << 8 | (uint8_t)f[i];
		return v;
	}
	return 0;
}

void qrnic_config_put(struct qrnic_config *cfg, const struct qrnic_config_param *p, uint64_t v)
{
	char *f = (char *)cfg + p->offset;
	uint32_t v32 = (uint32_t)v;

	switch (p->type) {
	case QRNIC_CFG_U32:
		memcpy(f, &v32, sizeof(v32));
		break;
	case QRNIC_CFG_U64:
		memcpy(f, &v, sizeof(v));
		break;
	case QRNIC_CFG_BOOL:
		*(bool *)f = v != 0;
		break;
	case QRNIC_CFG_MAC:
		for (int i = 5; i >= 0; i--, v >>= 8)
			f[i] = (char)(uint8_t)v;
		break;
	}
}

void qrnic_config_defaults(struct qrnic_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (unsigned i = 0; i < NPARAMS; i++)
		qrnic_config_put(cfg, &params[i], params[i].def);
}

static int fail(struct qrnic_config_error *e, const struct qrnic_config_param *p,
		enum qrnic_config_reason why, uint64_t v)
{
	if (e) {
		e->param = p;
		e->reason = why;
		e->value = v;
		e->min = p ? p->min : 0;
		e->max = p ? p->max : 0;
	}
	return -1;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* THE range check of one parameter's value: by the QEMU properties, the
 * harness, qrnic-sim and SET_CC (firmware) alike.  The relations between
 * parameters are checked by qrnic_config_validate() below. */
int qrnic_config_check_value(const struct qrnic_config_param *p, uint64_t v,
			     struct qrnic_config_error *e)
{
	if (p->type == QRNIC_CFG_MAC) {
		if (v >> 40 & 1)	/* the group bit of the first byte */
			return fail(e, p, QRNIC_CFG_NOT_UNICAST, v);
		return 0;
	}
	if (v < p->min)
		return fail(e, p, QRNIC_CFG_BELOW_MIN, v);
	if (v > p->max)
		return fail(e, p, QRNIC_CFG_ABOVE_MAX, v);
	if ((p->flags & QRNIC_CFG_POW2) && !is_pow2(v))
		return fail(e, p, QRNIC_CFG_NOT_POW2, v);
	return 0;
}

int qrnic_config_validate(const struct qrnic_config *cfg, struct qrnic_config_error *e)
{
	for (unsigned i = 0; i < NPARAMS; i++) {
		const struct qrnic_config_param *p = &params[i];

		if (qrnic_config_check_value(p, qrnic_config_get(cfg, p), e))
			return -1;
	}
	/* the PFC thresholds within the buffer, XON below XOFF */
	if (cfg->rx_pfc_xoff > cfg->rx_buffer || (cfg->rx_pfc_xoff && cfg->rx_pfc_xon >= cfg->rx_pfc_xoff)) {
		const struct qrnic_config_param *p = qrnic_config_param_find(
			cfg->rx_pfc_xoff > cfg->rx_buffer ? "rx_pfc_xoff" : "rx_pfc_xon");
		uint64_t max = cfg->rx_pfc_xoff > cfg->rx_buffer ? cfg->rx_buffer : cfg->rx_pfc_xoff - 1u;

		fail(e, p, QRNIC_CFG_ABOVE_MAX, qrnic_config_get(cfg, p));
		if (e)
			e->max = max;
		return -1;
	}
	if (e)
		memset(e, 0, sizeof(*e));
	return 0;
}

static int parse_number(const char *s, uint64_t *v)
{
	unsigned long long x;
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (*end)
		return -1;
	*v = errno == ERANGE ? UINT64_MAX : x;
	return 0;
}

static int parse_bool(const char *s, uint64_t *v)
{
	static const char *const words[][2] = {
		{ "off", "on" }, { "false", "true" }, { "no", "yes" },
	};

	for (unsigned i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		for (unsigned b = 0; b < 2; b++) {
			if (!strcmp(s, words[i][b])) {
				*v = b;
				return 0;
			}
		}
	}
	return parse_number(s, v);
}

static int parse_mac(const char *s, uint64_t *v)
{
	unsigned b[6];
	int used = 0;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &used) != 6 || s[used])
		return -1;
	*v = 0;
	for (int i = 0; i < 6; i++)
		*v = *v << 8 | b[i];
	return 0;
}

int qrnic_config_set(struct qrnic_config *cfg, const char *name, const char *value,
		     struct qrnic_config_error *e)
{
	const struct qrnic_config_param *p = qrnic_config_param_find(name);
	uint64_t v;
	int r;

	if (!p)
		return fail(e, NULL, QRNIC_CFG_UNKNOWN, 0);
	switch (p->type) {
	case QRNIC_CFG_BOOL:
		r = parse_bool(value, &v);
		break;
	case QRNIC_CFG_MAC:
		r = parse_mac(value, &v);
		break;
	default:
		r = parse_number(value, &v);
		break;
	}
	if (r < 0)
		return fail(e, p, QRNIC_CFG_BAD_VALUE, 0);
	if ((p->type == QRNIC_CFG_U32 && v > UINT32_MAX) || (p->type == QRNIC_CFG_BOOL && v > 1))
		return fail(e, p, QRNIC_CFG_ABOVE_MAX, v);
	qrnic_config_put(cfg, p, v);
	return 0;
}

int qrnic_config_reason_str(const struct qrnic_config_error *e, char *buf, size_t len)
{
	const struct qrnic_config_param *p = e->param;
	unsigned long long v = e->value, lo = e->min, hi = e->max;

	switch (e->reason) {
	case QRNIC_CFG_OK:
		return snprintf(buf, len, "is valid");
	case QRNIC_CFG_BELOW_MIN:
	case QRNIC_CFG_ABOVE_MAX:
		if (p && p->type == QRNIC_CFG_BOOL)
			return snprintf(buf, len, "must be on or off (got %llu)", v);
		if (p && (p->flags & QRNIC_CFG_POW2))
			return snprintf(buf, len, "must be a power of two in %llu..%llu (got %llu)",
					lo, hi, v);
		return snprintf(buf, len, "must be in %llu..%llu (got %llu)", lo, hi, v);
	case QRNIC_CFG_NOT_POW2:
		return snprintf(buf, len, "must be a power of two in %llu..%llu (got %llu)",
				lo, hi, v);
	case QRNIC_CFG_NOT_UNICAST:
		return snprintf(buf, len, "must be a unicast address (got %02llx:%02llx:%02llx:"
				"%02llx:%02llx:%02llx)", v >> 40 & 0xff, v >> 32 & 0xff,
				v >> 24 & 0xff, v >> 16 & 0xff, v >> 8 & 0xff, v & 0xff);
	case QRNIC_CFG_BAD_VALUE:
		if (p && p->type == QRNIC_CFG_BOOL)
			return snprintf(buf, len, "must be on, off, true, false, yes, no, 1 or 0");
		if (p && p->type == QRNIC_CFG_MAC)
			return snprintf(buf, len, "must be a MAC address aa:bb:cc:dd:ee:ff");
		return snprintf(buf, len, "must be a number");
	case QRNIC_CFG_UNKNOWN:
		return snprintf(buf, len, "is not a configuration parameter");
	}
	return snprintf(buf, len, "is invalid");
}

int qrnic_config_error_str(const struct qrnic_config_error *e, const char *name,
			   char *buf, size_t len)
{
	char why[128];

	qrnic_config_reason_str(e, why, sizeof(why));
	if (!name)
		name = e->param ? e->param->name : "parameter";
	return snprintf(buf, len, "%s %s", name, why);
}

int qrnic_config_check(const struct qrnic_config *cfg, char *err, size_t errlen)
{
	struct qrnic_config_error e;

	if (qrnic_config_validate(cfg, &e) == 0)
		return 0;
	if (err && errlen)
		qrnic_config_error_str(&e, NULL, err, errlen);
	return -1;
}
