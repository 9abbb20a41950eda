// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic congestion control knobs: /sys/class/infiniband/<dev>/cc/<name>,
 * one file per device-wide parameter (ABI 1.9, QUERY_CC / SET_CC, docs/spec.md
 * 6.6.22).  Reading a file is a QUERY_CC, writing one (a decimal or 0x
 * number) a SET_CC; a value the device refuses is -EINVAL, and the device
 * changes nothing.  The ranges are the device's (model/config.c), not
 * repeated here.  mlx5's equivalents (/sys/class/net/<if>/ecn/roce_np,
 * roce_rp) are listed in README.md.
 */
#include "qrnic.h"

struct qrnic_cc_attr {
	struct device_attribute attr;
	u32 param;		/* QRNIC_CC_P_* */
};

static struct qrnic_dev *cc_dev(struct device *device)
{
	struct qrnic_ib *ib = rdma_device_to_drv_device(device, struct qrnic_ib, ibdev);

	return ib->dev;
}

static ssize_t cc_show(struct device *device, struct device_attribute *attr, char *buf)
{
	struct qrnic_cc_attr *a = container_of(attr, struct qrnic_cc_attr, attr);
	u32 r[4];
	int err;

	err = qrnic_cmd_query_cc(cc_dev(device), a->param, r);
	if (err)
		return err;
	return sysfs_emit(buf, "%u\n", r[0]);
}

static ssize_t cc_store(struct device *device, struct device_attribute *attr,
			const char *buf, size_t count)
{
	struct qrnic_cc_attr *a = container_of(attr, struct qrnic_cc_attr, attr);
	u32 v;
	int err;

	err = kstrtou32(buf, 0, &v);
	if (err)
		return -EINVAL;
	err = qrnic_cmd_set_cc(cc_dev(device), a->param, v);
	return err ? err : count;
}

#define QRNIC_CC_ATTR(name, id)							\
	static struct qrnic_cc_attr qrnic_cc_attr_##name = {			\
		.attr = __ATTR(name, 0644, cc_show, cc_store),			\
		.param = QRNIC_CC_P_##id,					\
	}

QRNIC_CC_ATTR(cc_algo, ALGO);
QRNIC_CC_ATTR(np_enable, NP_ENABLE);
QRNIC_CC_ATTR(np_min_time_between_cnps, NP_MIN_TIME_BETWEEN_CNPS);
QRNIC_CC_ATTR(np_cnp_dscp, NP_CNP_DSCP);
QRNIC_CC_ATTR(rp_enable, RP_ENABLE);
QRNIC_CC_ATTR(rp_dce_tcp_g, RP_DCE_TCP_G);
QRNIC_CC_ATTR(rp_dce_tcp_rtt, RP_DCE_TCP_RTT);
QRNIC_CC_ATTR(rp_initial_alpha_value, RP_INITIAL_ALPHA_VALUE);
QRNIC_CC_ATTR(rp_min_rate, RP_MIN_RATE);
QRNIC_CC_ATTR(rp_min_dec_fac, RP_MIN_DEC_FAC);
QRNIC_CC_ATTR(rp_time_reset, RP_TIME_RESET);
QRNIC_CC_ATTR(rp_byte_reset, RP_BYTE_RESET);
QRNIC_CC_ATTR(rp_threshold, RP_THRESHOLD);
QRNIC_CC_ATTR(rp_ai_rate, RP_AI_RATE);
QRNIC_CC_ATTR(rp_hai_rate, RP_HAI_RATE);
QRNIC_CC_ATTR(rp_initial_rate, RP_INITIAL_RATE);
QRNIC_CC_ATTR(timely_t_low, TIMELY_T_LOW);
QRNIC_CC_ATTR(timely_t_high, TIMELY_T_HIGH);
QRNIC_CC_ATTR(timely_min_rtt, TIMELY_MIN_RTT);
QRNIC_CC_ATTR(timely_delta, TIMELY_DELTA);
QRNIC_CC_ATTR(timely_beta, TIMELY_BETA);
QRNIC_CC_ATTR(timely_alpha, TIMELY_ALPHA);
QRNIC_CC_ATTR(timely_hai_n, TIMELY_HAI_N);

static struct attribute *qrnic_cc_attrs[] = {
	&qrnic_cc_attr_cc_algo.attr.attr,
	&qrnic_cc_attr_np_enable.attr.attr,
	&qrnic_cc_attr_np_min_time_between_cnps.attr.attr,
	&qrnic_cc_attr_np_cnp_dscp.attr.attr,
	&qrnic_cc_attr_rp_enable.attr.attr,
	&qrnic_cc_attr_rp_dce_tcp_g.attr.attr,
	&qrnic_cc_attr_rp_dce_tcp_rtt.attr.attr,
	&qrnic_cc_attr_rp_initial_alpha_value.attr.attr,
	&qrnic_cc_attr_rp_min_rate.attr.attr,
	&qrnic_cc_attr_rp_min_dec_fac.attr.attr,
	&qrnic_cc_attr_rp_time_reset.attr.attr,
	&qrnic_cc_attr_rp_byte_reset.attr.attr,
	&qrnic_cc_attr_rp_threshold.attr.attr,
	&qrnic_cc_attr_rp_ai_rate.attr.attr,
	&qrnic_cc_attr_rp_hai_rate.attr.attr,
	&qrnic_cc_attr_rp_initial_rate.attr.attr,
	&qrnic_cc_attr_timely_t_low.attr.attr,
	&qrnic_cc_attr_timely_t_high.attr.attr,
	&qrnic_cc_attr_timely_min_rtt.attr.attr,
	&qrnic_cc_attr_timely_delta.attr.attr,
	&qrnic_cc_attr_timely_beta.attr.attr,
	&qrnic_cc_attr_timely_alpha.attr.attr,
	&qrnic_cc_attr_timely_hai_n.attr.attr,
	NULL,
};
static_assert(ARRAY_SIZE(qrnic_cc_attrs) == QRNIC_CC_P_COUNT + 1);

/* a named group: the files appear in the ib device's directory under cc/ */
const struct attribute_group qrnic_cc_attr_group = {
	.name = "cc",
	.attrs = qrnic_cc_attrs,
};
