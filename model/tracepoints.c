/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: typed trace points (qrnic_tracepoints.h) -- their
 * names and texts, and the device events made from the trace records.
 */
#include <stdio.h>

#include "qrnic_internal.h"

#define TP_COUNT_FIELDS(name, cat, doc, fmt, ...) QRNIC_TP_NARGS(__VA_ARGS__),
static const uint8_t tp_nfields[QRNIC_TP_COUNT] = {
	QRNIC_TRACEPOINTS(TP_COUNT_FIELDS)
};
#undef TP_COUNT_FIELDS

#define TP_INFO(name, cat, doc, fmt, ...)					\
	{ #name, QRNIC_TPC_##cat, doc, #fmt, #__VA_ARGS__ },
static const struct {
	const char *name;
	enum qrnic_tp_category cat;
	const char *doc, *fmt, *fields;
} tp_info[QRNIC_TP_COUNT] = {
	QRNIC_TRACEPOINTS(TP_INFO)
};
#undef TP_INFO

const char *qrnic_tp_name(unsigned tp)
{
	return tp < QRNIC_TP_COUNT ? tp_info[tp].name : NULL;
}

enum qrnic_tp_category qrnic_tp_category(unsigned tp)
{
	return tp < QRNIC_TP_COUNT ? tp_info[tp].cat : QRNIC_TPC_EV;
}

const char *qrnic_tp_doc(unsigned tp)
{
	return tp < QRNIC_TP_COUNT ? tp_info[tp].doc : NULL;
}

const char *qrnic_tp_format_src(unsigned tp)
{
	return tp < QRNIC_TP_COUNT ? tp_info[tp].fmt : NULL;
}

const char *qrnic_tp_fields_src(unsigned tp)
{
	return tp < QRNIC_TP_COUNT ? tp_info[tp].fields : NULL;
}

unsigned qrnic_tp_nfields(unsigned tp)
{
	return tp < QRNIC_TP_COUNT ? tp_nfields[tp] : 0;
}

/* One snprintf per point, with the fields in their own types: the compiler
 * checks every format against its fields (-Wformat), as QEMU's generated
 * trace functions will. */
int qrnic_tp_format(unsigned tp, const uint64_t *args, char *buf, size_t len)
{
	switch (tp) {
#define TP_FORMAT(name, cat, doc, fmt, ...)					\
	case QRNIC_TP_##name:							\
		return snprintf(buf, len, fmt, QRNIC_TP_MAP(QRNIC_TP_ARG, __VA_ARGS__));
	QRNIC_TRACEPOINTS(TP_FORMAT)
#undef TP_FORMAT
	default:
		return snprintf(buf, len, "?");
	}
}

void qrnic_tp_emit(struct qrnic_dev *d, enum qrnic_tp tp, const uint64_t *args)
{
	if (d->ops->tracepoint)
		d->ops->tracepoint(d->opaque, tp, args);
}

/* The device event of a trace record (qrnic_trace_at_emit, tracing on). */
void qrnic_tp_from_trace(struct qrnic_dev *d, const struct qrnic_trace_ev *ev)
{
	uint64_t t = ev->t_ns;

	switch (ev->type) {
	case QRNIC_TR_DOORBELL:	/* SQ/RQ: qn in qpn; CQ/SRQ: in addr */
		qrnic_tp_doorbell(d, t, ev->a, ev->a < 2 ? ev->qpn : (uint32_t)ev->addr, ev->b);
		break;
	case QRNIC_TR_WQE_FETCH:
		qrnic_tp_wqe_fetch(d, t, ev->qpn, ev->psn, ev->a, ev->addr);
		break;
	case QRNIC_TR_TRANSLATE:
		qrnic_tp_translate(d, t, ev->a, ev->b, ev->addr);
		break;
	case QRNIC_TR_TX:
		qrnic_tp_pkt_tx(d, t, ev->qpn, ev->psn, ev->a, ev->b);
		break;
	case QRNIC_TR_RX:
		qrnic_tp_pkt_rx(d, t, ev->qpn, ev->psn, ev->a, ev->b);
		break;
	case QRNIC_TR_DROP:
		qrnic_tp_pkt_drop(d, t, ev->qpn, ev->psn, ev->a, ev->b);
		break;
	case QRNIC_TR_DMA_READ:
		qrnic_tp_dma_read(d, t, ev->addr, ev->a);
		break;
	case QRNIC_TR_DMA_WRITE:
		qrnic_tp_dma_write(d, t, ev->addr, ev->a);
		break;
	case QRNIC_TR_ACK:
		qrnic_tp_ack(d, t, ev->qpn, ev->psn, ev->a, ev->b);
		break;
	case QRNIC_TR_NAK:	/* AETH syndrome 001xxxxx: RNR NAK */
		if ((ev->a >> 5) == 1)
			qrnic_tp_rnr_nak(d, t, ev->qpn, ev->psn, ev->a, ev->b);
		else
			qrnic_tp_nak(d, t, ev->qpn, ev->psn, ev->a, ev->b);
		break;
	case QRNIC_TR_RETRANSMIT:
		qrnic_tp_retransmit(d, t, ev->qpn, ev->psn, ev->a);
		break;
	case QRNIC_TR_WINDOW:
		qrnic_tp_loss_window(d, t, ev->qpn, ev->psn, ev->a);
		break;
	case QRNIC_TR_CQE:
		qrnic_tp_cqe(d, t, ev->a, ev->qpn, ev->b, ev->addr);
		break;
	case QRNIC_TR_EQE:
		qrnic_tp_eqe(d, t, ev->a, ev->b, ev->addr);
		break;
	case QRNIC_TR_IRQ:
		qrnic_tp_interrupt(d, t, ev->a);
		break;
	case QRNIC_TR_QP_STATE:
		qrnic_tp_qp_state(d, t, ev->qpn, ev->a, ev->b);
		break;
	case QRNIC_TR_ADMIN:
		qrnic_tp_admin_cmd(d, t, ev->a, ev->b);
		break;
	default:
		break;
	}
}
