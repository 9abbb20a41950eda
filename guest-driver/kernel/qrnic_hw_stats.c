// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic hardware counters: the QUERY_STATS counters (docs/spec.md 15) as
 * port counters of the ib_device, so that `rdma statistic show` and
 * /sys/class/infiniband/<dev>/ports/1/hw_counters show them.  The names
 * and their order come from QRNIC_STATS() in the device ABI.
 */
#include "qrnic.h"

#define QRNIC_STAT_DESC(id, str) [QRNIC_STAT_##id] = { .name = str },
static const struct rdma_stat_desc qrnic_stat_descs[QRNIC_STAT_COUNT] = {
	QRNIC_STATS(QRNIC_STAT_DESC)
};
#undef QRNIC_STAT_DESC

struct rdma_hw_stats *qrnic_alloc_hw_port_stats(struct ib_device *ibdev, u32 port)
{
	return rdma_alloc_hw_stats_struct(qrnic_stat_descs, QRNIC_STAT_COUNT,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int qrnic_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index)
{
	struct qrnic_dev *dev = to_qdev(ibdev);
	__le64 counters[QRNIC_STAT_COUNT];	/* little endian, as the device writes them */
	int err, i;

	err = qrnic_cmd_query_stats(dev, counters, QRNIC_STAT_COUNT);
	if (err)
		return err;
	for (i = 0; i < QRNIC_STAT_COUNT && i < stats->num_counters; i++)
		stats->value[i] = le64_to_cpu(counters[i]);
	return i;
}
