/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic admin queue: the engine (qrnic_admin.c) and one typed wrapper per
 * admin command.  Every wrapper returns 0 or a negative errno obtained from
 * the device status through qrnic_aq_status_to_errno(), the single map.
 *
 * Wrappers that may be called in atomic context take a "bool atomic":
 * the command is then submitted without sleeping and its completion is
 * busy-polled (used for address handles, which the RDMA CM creates and
 * destroys under spinlocks).
 */
#ifndef QRNIC_ADMIN_CMDS_H
#define QRNIC_ADMIN_CMDS_H

struct qrnic_dev;

void qrnic_aq_setup(struct qrnic_dev *dev);
int qrnic_aq_init(struct qrnic_dev *dev, u32 log_depth);
void qrnic_aq_disable(struct qrnic_dev *dev);
void qrnic_aq_free(struct qrnic_dev *dev);
void qrnic_aq_process_cq(struct qrnic_dev *dev);
void qrnic_aq_abort_all(struct qrnic_dev *dev);
int qrnic_aq_status_to_errno(u8 status);
const char *qrnic_aq_opcode_name(u8 opcode);

int qrnic_aq_exec(struct qrnic_dev *dev, struct qrnic_aq_cmd *cmd,
		  struct qrnic_aq_cqe *cqe, bool atomic);

int qrnic_cmd_query_device(struct qrnic_dev *dev, struct qrnic_device_attr *out);
int qrnic_cmd_query_port(struct qrnic_dev *dev, struct qrnic_port_attr *out);
int qrnic_cmd_query_stats(struct qrnic_dev *dev, __le64 *counters, u32 count);
int qrnic_cmd_query_cc(struct qrnic_dev *dev, u32 param, u32 out[4]);
int qrnic_cmd_set_cc(struct qrnic_dev *dev, u32 param, u32 value);
int qrnic_cmd_set_gid(struct qrnic_dev *dev, u32 index, bool valid, u8 net_type,
		      const u8 *gid);
int qrnic_cmd_alloc_uctx(struct qrnic_dev *dev, u32 *uctx);
int qrnic_cmd_dealloc_uctx(struct qrnic_dev *dev, u32 uctx);
int qrnic_cmd_create_pd(struct qrnic_dev *dev, u32 uctx, u32 *pdn);
int qrnic_cmd_destroy_pd(struct qrnic_dev *dev, u32 pdn);
int qrnic_cmd_create_cq(struct qrnic_dev *dev,
			const struct qrnic_cmd_create_cq *p, u32 *cqn);
int qrnic_cmd_destroy_cq(struct qrnic_dev *dev, u32 cqn);
int qrnic_cmd_create_qp(struct qrnic_dev *dev,
			const struct qrnic_cmd_create_qp *p, u32 *qpn);
int qrnic_cmd_modify_qp(struct qrnic_dev *dev, u32 qpn,
			const struct qrnic_qp_attr *attr);
int qrnic_cmd_query_qp(struct qrnic_dev *dev, u32 qpn, struct qrnic_qp_attr *out);
int qrnic_cmd_destroy_qp(struct qrnic_dev *dev, u32 qpn);
int qrnic_cmd_reg_mr(struct qrnic_dev *dev, const struct qrnic_cmd_reg_mr *p,
		     u32 *key);
int qrnic_cmd_rereg_mr(struct qrnic_dev *dev, u32 key, u32 change,
		       const struct qrnic_cmd_reg_mr *reg);
int qrnic_cmd_dereg_mr(struct qrnic_dev *dev, u32 key);
int qrnic_cmd_alloc_mr(struct qrnic_dev *dev, u32 pdn, u32 max_pages, u32 *key);
/* ALLOC_MW (spec 6.6.16): type QRNIC_MW_TYPE_1 or _2; DEREG_MR frees it */
int qrnic_cmd_alloc_mw(struct qrnic_dev *dev, u32 pdn, u8 type, u32 *rkey);
/* RESIZE_CQ: *carried = CQEs moved to slots 0.. of the new ring */
/* listed: ring is the address of the new ring's page list (ABI 1.8) */
int qrnic_cmd_resize_cq(struct qrnic_dev *dev, u32 cqn, u8 log_depth,
			u64 ring, bool listed, u32 *carried, bool atomic);
int qrnic_cmd_modify_cq(struct qrnic_dev *dev, u32 cqn, u16 count, u16 period_us);
int qrnic_cmd_create_ah(struct qrnic_dev *dev, u32 pdn,
			const struct qrnic_av *av, u32 *ahn, bool atomic);
int qrnic_cmd_destroy_ah(struct qrnic_dev *dev, u32 ahn, bool atomic);
int qrnic_cmd_create_eq(struct qrnic_dev *dev, u8 log_depth, u16 vector,
			u32 flags, dma_addr_t ring, u32 *eqn);
int qrnic_cmd_destroy_eq(struct qrnic_dev *dev, u32 eqn);
/* ATTACH_MCAST / DETACH_MCAST (op = QRNIC_CMD_*_MCAST) of a UD QP */
int qrnic_cmd_mcast(struct qrnic_dev *dev, u8 op, u32 qpn, const u8 gid[16]);

/* QUERY_SRQ's answer (admin CQE result[0..2]) */
struct qrnic_srq_query {
	u32 limit;			/* 0: SRQ_LIMIT_REACHED not armed */
	u32 max_wr;			/* depth */
	u32 posted;			/* WQEs posted and not yet taken */
};

int qrnic_cmd_create_srq(struct qrnic_dev *dev,
			 const struct qrnic_cmd_create_srq *p, u32 *srqn);
int qrnic_cmd_modify_srq(struct qrnic_dev *dev, u32 srqn, u32 attr_mask, u32 limit);
int qrnic_cmd_query_srq(struct qrnic_dev *dev, u32 srqn, struct qrnic_srq_query *out);
int qrnic_cmd_destroy_srq(struct qrnic_dev *dev, u32 srqn);
int qrnic_cmd_alloc_xrcd(struct qrnic_dev *dev, u32 uctx, u32 *xrcdn);
int qrnic_cmd_dealloc_xrcd(struct qrnic_dev *dev, u32 xrcdn);

#endif /* QRNIC_ADMIN_CMDS_H */
