/* SPDX-License-Identifier: GPL-2.0-or-later */
/* qrnic device model: address vectors to packet headers, and packet transmit. */
#include "qrnic_internal.h"

int qrnic_pkt_fill_av(struct qrnic_dev *d, struct qrnic_pkt *p, const struct qrnic_av *av,
		      uint32_t src_qpn)
{
	const struct qrnic_gid_entry *sg;

	if (av->sgid_index >= d->cfg.gid_tbl_len || !d->gid[av->sgid_index].valid)
		return QRNIC_VERR_BAD_AH;
	sg = &d->gid[av->sgid_index];
	memcpy(p->dmac, av->dmac, 6);
	memcpy(p->smac, d->cfg.mac, 6);
	memcpy(p->sgid, sg->gid, 16);
	memcpy(p->dgid, av->dgid, 16);
	p->ipv6 = av->net_type == QRNIC_NET_IPV6;
	p->traffic_class = av->traffic_class;
	p->hop_limit = av->hop_limit ? av->hop_limit : 64;
	p->flow_label = av->flow_label & 0xfffff;
	p->udp_sport = (uint16_t)(0xc000 | (src_qpn & 0x3fff));
	p->pkey = 0xffff;
	return QRNIC_VERR_NONE;
}

void qrnic_send_pkt(struct qrnic_dev *d, const struct qrnic_pkt *p, const void *payload,
		    uint32_t paylen)
{
	size_t len = qrnic_wire_build(p, payload, paylen, d->txbuf, sizeof(d->txbuf));

	if (!len) {
		qrnic_guest_error(d, "qrnic: cannot build opcode 0x%x with %u bytes", p->opcode, paylen);
		return;
	}
	qrnic_tx(d, d->txbuf, len);
	/* traced when it leaves the port (timed) or now */
	qrnic_trace_at(d, qrnic_timed(d) ? d->tm_depart : qrnic_now(d), QRNIC_TR_TX, p->dqpn, p->psn,
		       p->opcode, (uint32_t)len, 0);
}
