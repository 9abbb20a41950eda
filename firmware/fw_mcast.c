/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic firmware: UD multicast groups (ATTACH_MCAST, DETACH_MCAST; spec
 * 6.6.14 and 12.11).  The groups themselves are the model's (model/mcast.c).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qrnic_fw.h"

#define MC_OFF(f)	QRNIC_FW_OFF(u.mcast.f)

static uint8_t mcast_check(struct qrnic_dev *d, const struct qrnic_cmd_mcast *m,
			   struct qrnic_aq_cqe *cqe)
{
	const struct qrnic_qp *qp = qrnic_fw_qp(d, m->qpn);

	if (!qp)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_HANDLE, MC_OFF(qpn));
	if (qp->type != QRNIC_QPT_UD)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, MC_OFF(qpn));
	if (m->rsvd)
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, MC_OFF(rsvd));
	if (!qrnic_gid_is_mcast(m->gid))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, MC_OFF(gid));
	return QRNIC_AQ_OK;
}

uint8_t qrnic_fw_attach_mcast(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			      struct qrnic_aq_cqe *cqe)
{
	uint8_t st = mcast_check(d, &cmd->u.mcast, cqe);

	if (st != QRNIC_AQ_OK)
		return st;
	/* already a member: OK, nothing changes */
	if (qrnic_mcg_attach(d, cmd->u.mcast.gid, cmd->u.mcast.qpn))
		return qrnic_fw_fail(cqe, QRNIC_AQ_NO_RESOURCES, 0);
	return QRNIC_AQ_OK;
}

uint8_t qrnic_fw_detach_mcast(struct qrnic_dev *d, const struct qrnic_aq_cmd *cmd,
			      struct qrnic_aq_cqe *cqe)
{
	uint8_t st = mcast_check(d, &cmd->u.mcast, cqe);

	if (st != QRNIC_AQ_OK)
		return st;
	if (qrnic_mcg_detach(d, cmd->u.mcast.gid, cmd->u.mcast.qpn))
		return qrnic_fw_fail(cqe, QRNIC_AQ_BAD_PARAM, MC_OFF(gid));	/* not a member */
	return QRNIC_AQ_OK;
}
