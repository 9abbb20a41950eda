/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: UD multicast groups (spec 12.11).  A group is a
 * multicast GID with up to QRNIC_MAX_MCG_QP member UD QPs; a received UD
 * packet for the GID (DestQP 0xffffff) is delivered to every member, and
 * one the device sends is also delivered to its own members (multicast
 * loopback, as on a ConnectX or rxe).
 */
#include "qrnic_internal.h"

bool qrnic_gid_is_mcast(const uint8_t gid[16])
{
	if (qrnic_gid_is_v4mapped(gid))
		return (gid[12] & 0xf0) == 0xe0;	/* 224.0.0.0/4 */
	return gid[0] == 0xff;				/* ff00::/8 */
}

struct qrnic_mcg *qrnic_mcg_find(struct qrnic_dev *d, const uint8_t gid[16])
{
	for (uint32_t i = 0; i < QRNIC_MAX_MCG && d->nmcg; i++)
		if (d->mcg[i].nqp && !memcmp(d->mcg[i].gid, gid, 16))
			return &d->mcg[i];
	return NULL;
}

int qrnic_mcg_attach(struct qrnic_dev *d, const uint8_t gid[16], uint32_t qpn)
{
	struct qrnic_mcg *g = qrnic_mcg_find(d, gid);

	if (!g) {
		for (uint32_t i = 0; i < QRNIC_MAX_MCG && !g; i++)
			if (!d->mcg[i].nqp)
				g = &d->mcg[i];
		if (!g)
			return -1;	/* no free group */
		memcpy(g->gid, gid, 16);
		d->nmcg++;
	}
	for (uint32_t i = 0; i < g->nqp; i++)
		if (g->qpn[i] == qpn)
			return 0;	/* already a member */
	if (g->nqp == QRNIC_MAX_MCG_QP)
		return -1;
	g->qpn[g->nqp++] = qpn;
	return 0;
}

int qrnic_mcg_detach(struct qrnic_dev *d, const uint8_t gid[16], uint32_t qpn)
{
	struct qrnic_mcg *g = qrnic_mcg_find(d, gid);

	if (!g)
		return -1;
	for (uint32_t i = 0; i < g->nqp; i++) {
		if (g->qpn[i] != qpn)
			continue;
		g->qpn[i] = g->qpn[--g->nqp];
		if (!g->nqp) {
			memset(g, 0, sizeof(*g));
			d->nmcg--;
		}
		return 0;
	}
	return -1;
}

void qrnic_mcg_detach_qp(struct qrnic_dev *d, uint32_t qpn)
{
	for (uint32_t i = 0; i < QRNIC_MAX_MCG && d->nmcg; i++)
		if (d->mcg[i].nqp)
			qrnic_mcg_detach(d, d->mcg[i].gid, qpn);
}

void qrnic_mcg_deliver(struct qrnic_dev *d, const struct qrnic_mcg *g, const struct qrnic_pkt *p)
{
	/* a copy of the member list: a delivery may move a QP to ERROR, which
	 * does not detach it, but keep the walk independent of the group */
	uint32_t qpn[QRNIC_MAX_MCG_QP], n = g->nqp;

	memcpy(qpn, g->qpn, n * sizeof(qpn[0]));
	for (uint32_t i = 0; i < n; i++) {
		struct qrnic_qp *qp = qrnic_qp_get(d, qpn[i]);

		if (qp && qp->type == QRNIC_QPT_UD)
			qrnic_resp_packet(d, qp, p);
	}
}
