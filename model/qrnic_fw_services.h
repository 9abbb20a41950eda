/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: what the model offers the firmware (firmware/), the
 * one model header the firmware includes.
 *
 * The dependency goes one way: the firmware uses the model, the model
 * does not know the firmware.  The model runs whatever admin engine its
 * creator handed to qrnic_dev_new() (struct qrnic_admin_ops, qrnic_model.h)
 * and links, and runs, without one.
 *
 * The firmware creates, changes and destroys the objects of the model's
 * tables (PDs, CQs, EQs, QPs, MRs, AHs, SRQs, GIDs, user contexts), so it
 * sees their layout and the model's inline helpers: qrnic_internal.h.  Of
 * the model's functions it calls only the services listed below;
 * tests/test_layering.py checks that against the symbols the firmware's
 * objects need (nm).  A handler that needs another model function adds it
 * here, which makes the firmware's use of the model a decision rather than
 * an accident.
 */
#ifndef QRNIC_FW_SERVICES_H
#define QRNIC_FW_SERVICES_H

#include "qrnic_internal.h"

/* The model functions the firmware may call (declared in qrnic_internal.h;
 * the inline helpers there -- qrnic_stat_add, qrnic_trace, ... -- come with
 * it, and qrnic_trace_emit is what qrnic_trace calls). */
#define QRNIC_FW_SERVICES(X)						\
	/* host memory, interrupts, errors (device.c) */		\
	X(qrnic_dma_read) X(qrnic_dma_write) X(qrnic_irq)		\
	X(qrnic_fatal) X(qrnic_guest_error) X(qrnic_trace_emit)		\
	/* typed trace points: what qrnic_guest_err() calls (tracepoints.c) */ \
	X(qrnic_tp_emit)						\
	/* fault injection of admin commands (fault.c) */		\
	X(qrnic_fault_admin) X(qrnic_fault_admin_hang)			\
	/* QP life cycle (qp.c) */					\
	X(qrnic_qp_init_state) X(qrnic_qp_fini_state) X(qrnic_qp_set_state) \
	/* MTT and MPT allocation, windows of a destroyed QP (mr.c) */	\
	X(qrnic_mtt_alloc) X(qrnic_mtt_free) X(qrnic_mw_qp_gone) X(qrnic_mw_unbind)	\
	X(qrnic_mpt_peek) X(qrnic_mpt_take) X(qrnic_mpt_give)		\
	/* CQ teardown of deferred effects (effects.c), resize (cq.c) */	\
	X(qrnic_fx_cancel_cq) X(qrnic_cq_resize)			\
	/* ring page lists (ring.c) */					\
	X(qrnic_ring_pl_load) X(qrnic_ring_pl_free)			\
	/* SRQ limit (srq.c), multicast groups (mcast.c) */		\
	X(qrnic_srq_arm)						\
	X(qrnic_gid_is_mcast) X(qrnic_mcg_attach) X(qrnic_mcg_detach)	\
	X(qrnic_mcg_detach_qp)						\
	/* MODIFY_QP of the QP's congestion control (cc.c) */		\
	X(qrnic_cc_qp_reset) X(qrnic_qp_kick)				\
	/* QUERY_CC, SET_CC: the configuration table (config.c, cc.c) */	\
	X(qrnic_cc_param) X(qrnic_config_get) X(qrnic_config_check_value) \
	X(qrnic_cc_param_set)						\
	/* BlueFlame buffers of a user context's page (regs.c) */	\
	X(qrnic_bf_uctx_clear)

#endif
