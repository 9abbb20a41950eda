// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic admin queue engine and typed command wrappers.
 *
 * The admin SQ and CQ are rings in coherent DMA memory with the same depth.
 * A command takes a slot (a counting semaphore keeps at most depth commands
 * outstanding), is copied into SQ slot pi & (depth - 1) under sq_lock, and
 * the new producer index is written to AQ_SQ_DB.  The device completes
 * commands strictly in order, so completion k of the CQ belongs to SQ slot
 * k & (depth - 1); cmd_id (the low 16 bits of the free-running index) is
 * checked anyway.  Completions are consumed by qrnic_aq_process_cq(), from
 * the vector 0 interrupt or, for atomic callers, by busy polling.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/ktime.h>

#include "qrnic.h"

enum {
	QRNIC_AQ_CTX_FREE,
	QRNIC_AQ_CTX_PENDING,
	QRNIC_AQ_CTX_DONE,
	QRNIC_AQ_CTX_TIMEDOUT,
};

/* The one map from device status to errno (docs/spec.md 6.4). */
static const int qrnic_aq_errno[QRNIC_AQ_STATUS_MAX + 1] = {
	[QRNIC_AQ_OK]		 = 0,
	[QRNIC_AQ_BAD_OPCODE]	 = -EOPNOTSUPP,
	[QRNIC_AQ_BAD_PARAM]	 = -EINVAL,
	[QRNIC_AQ_BAD_HANDLE]	 = -EINVAL,
	[QRNIC_AQ_NO_RESOURCES]	 = -ENOMEM,
	[QRNIC_AQ_BAD_STATE]	 = -EINVAL,
	[QRNIC_AQ_BUSY]		 = -EBUSY,
	[QRNIC_AQ_DMA_ERROR]	 = -EIO,
	[QRNIC_AQ_BAD_ATTR_MASK] = -EINVAL,
	[QRNIC_AQ_NOT_SUPPORTED] = -EOPNOTSUPP,
	[QRNIC_AQ_INJECTED]	 = -EIO,
};

static const char *const qrnic_aq_status_names[QRNIC_AQ_STATUS_MAX + 1] = {
	[QRNIC_AQ_OK]		 = "OK",
	[QRNIC_AQ_BAD_OPCODE]	 = "BAD_OPCODE",
	[QRNIC_AQ_BAD_PARAM]	 = "BAD_PARAM",
	[QRNIC_AQ_BAD_HANDLE]	 = "BAD_HANDLE",
	[QRNIC_AQ_NO_RESOURCES]	 = "NO_RESOURCES",
	[QRNIC_AQ_BAD_STATE]	 = "BAD_STATE",
	[QRNIC_AQ_BUSY]		 = "BUSY",
	[QRNIC_AQ_DMA_ERROR]	 = "DMA_ERROR",
	[QRNIC_AQ_BAD_ATTR_MASK] = "BAD_ATTR_MASK",
	[QRNIC_AQ_NOT_SUPPORTED] = "NOT_SUPPORTED",
	[QRNIC_AQ_INJECTED]	 = "INJECTED",
};

static const char *const qrnic_aq_opcode_names[QRNIC_CMD_MAX + 1] = {
	[QRNIC_CMD_QUERY_DEVICE] = "QUERY_DEVICE",
	[QRNIC_CMD_QUERY_PORT]	 = "QUERY_PORT",
	[QRNIC_CMD_SET_GID]	 = "SET_GID",
	[QRNIC_CMD_QUERY_GID]	 = "QUERY_GID",
	[QRNIC_CMD_ALLOC_UCTX]	 = "ALLOC_UCTX",
	[QRNIC_CMD_DEALLOC_UCTX] = "DEALLOC_UCTX",
	[QRNIC_CMD_CREATE_PD]	 = "CREATE_PD",
	[QRNIC_CMD_DESTROY_PD]	 = "DESTROY_PD",
	[QRNIC_CMD_CREATE_CQ]	 = "CREATE_CQ",
	[QRNIC_CMD_DESTROY_CQ]	 = "DESTROY_CQ",
	[QRNIC_CMD_CREATE_QP]	 = "CREATE_QP",
	[QRNIC_CMD_MODIFY_QP]	 = "MODIFY_QP",
	[QRNIC_CMD_QUERY_QP]	 = "QUERY_QP",
	[QRNIC_CMD_DESTROY_QP]	 = "DESTROY_QP",
	[QRNIC_CMD_REG_MR]	 = "REG_MR",
	[QRNIC_CMD_DEREG_MR]	 = "DEREG_MR",
	[QRNIC_CMD_QUERY_MR]	 = "QUERY_MR",
	[QRNIC_CMD_CREATE_AH]	 = "CREATE_AH",
	[QRNIC_CMD_DESTROY_AH]	 = "DESTROY_AH",
	[QRNIC_CMD_CREATE_EQ]	 = "CREATE_EQ",
	[QRNIC_CMD_DESTROY_EQ]	 = "DESTROY_EQ",
	[QRNIC_CMD_QUERY_STATS]	 = "QUERY_STATS",
	[QRNIC_CMD_ATTACH_MCAST] = "ATTACH_MCAST",
	[QRNIC_CMD_DETACH_MCAST] = "DETACH_MCAST",
	[QRNIC_CMD_CREATE_SRQ]	 = "CREATE_SRQ",
	[QRNIC_CMD_MODIFY_SRQ]	 = "MODIFY_SRQ",
	[QRNIC_CMD_QUERY_SRQ]	 = "QUERY_SRQ",
	[QRNIC_CMD_DESTROY_SRQ]	 = "DESTROY_SRQ",
	[QRNIC_CMD_ALLOC_MR]	 = "ALLOC_MR",
	[QRNIC_CMD_ALLOC_MW]	 = "ALLOC_MW",
	[QRNIC_CMD_RESIZE_CQ]	 = "RESIZE_CQ",
	[QRNIC_CMD_MODIFY_CQ]	 = "MODIFY_CQ",
};

int qrnic_aq_status_to_errno(u8 status)
{
	if (status > QRNIC_AQ_STATUS_MAX)
		return -EIO;
	return qrnic_aq_errno[status];
}

static const char *qrnic_aq_status_name(u8 status)
{
	if (status > QRNIC_AQ_STATUS_MAX)
		return "UNKNOWN";
	return qrnic_aq_status_names[status];
}

const char *qrnic_aq_opcode_name(u8 opcode)
{
	if (opcode > QRNIC_CMD_MAX || !qrnic_aq_opcode_names[opcode])
		return "UNKNOWN";
	return qrnic_aq_opcode_names[opcode];
}

/* ---- ring set-up ---------------------------------------------------------- */

/* Once per device, before the first qrnic_aq_init(). */
void qrnic_aq_setup(struct qrnic_dev *dev)
{
	spin_lock_init(&dev->aq.sq_lock);
	spin_lock_init(&dev->aq.cq_lock);
}

/*
 * Allocate the rings and enable the admin queue (at probe, and after every
 * reset of a recovery).  The rings and contexts are published under both
 * locks, since qrnic_aq_abort_all() may run at any time.
 */
int qrnic_aq_init(struct qrnic_dev *dev, u32 log_depth)
{
	struct qrnic_aq *aq = &dev->aq;
	struct device *dmadev = &dev->pdev->dev;
	struct qrnic_aq_cqe *cq;
	struct qrnic_aq_cmd *sq;
	struct qrnic_aq_ctx *ctx;
	dma_addr_t sq_dma, cq_dma;
	unsigned long flags;
	u32 st, i;
	int err;

	aq->log_depth = log_depth;
	aq->depth = 1U << log_depth;
	aq->sq_pi = 0;
	aq->cq_ci = 0;
	sema_init(&aq->avail, aq->depth);

	ctx = kcalloc(aq->depth, sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	for (i = 0; i < aq->depth; i++)
		init_completion(&ctx[i].done);

	/* dma_alloc_coherent() memory is zeroed and at least page aligned. */
	sq = dma_alloc_coherent(dmadev, QRNIC_AQ_SQE_SIZE << log_depth, &sq_dma, GFP_KERNEL);
	if (!sq) {
		err = -ENOMEM;
		goto err_free_ctx;
	}
	cq = dma_alloc_coherent(dmadev, QRNIC_AQ_CQE_SIZE << log_depth, &cq_dma, GFP_KERNEL);
	if (!cq) {
		err = -ENOMEM;
		goto err_free_sq;
	}
	spin_lock_irqsave(&aq->sq_lock, flags);
	spin_lock(&aq->cq_lock);
	aq->ctx = ctx;
	aq->sq = sq;
	aq->sq_dma = sq_dma;
	aq->cq = cq;
	aq->cq_dma = cq_dma;
	spin_unlock(&aq->cq_lock);
	spin_unlock_irqrestore(&aq->sq_lock, flags);

	qrnic_wr(dev, QRNIC_REG_AQ_SQ_BASE_LO, lower_32_bits(aq->sq_dma));
	qrnic_wr(dev, QRNIC_REG_AQ_SQ_BASE_HI, upper_32_bits(aq->sq_dma));
	qrnic_wr(dev, QRNIC_REG_AQ_CQ_BASE_LO, lower_32_bits(aq->cq_dma));
	qrnic_wr(dev, QRNIC_REG_AQ_CQ_BASE_HI, upper_32_bits(aq->cq_dma));
	qrnic_wr(dev, QRNIC_REG_AQ_CTRL, QRNIC_AQ_CTRL_ENABLE | log_depth);
	st = qrnic_rd(dev, QRNIC_REG_AQ_STATUS);
	if (!(st & QRNIC_AQ_STATUS_ENABLED) || (st & QRNIC_AQ_STATUS_ERROR)) {
		dev_err(dmadev, "admin queue did not come up (AQ_STATUS 0x%x, log depth %u)\n",
			st, log_depth);
		qrnic_wr(dev, QRNIC_REG_AQ_CTRL, 0);
		qrnic_aq_free(dev);
		return -EIO;
	}
	aq->enabled = true;
	return 0;

err_free_sq:
	dma_free_coherent(dmadev, QRNIC_AQ_SQE_SIZE << log_depth, sq, sq_dma);
err_free_ctx:
	kfree(ctx);
	return err;
}

/* Stop the device from touching the admin rings (before freeing them). */
void qrnic_aq_disable(struct qrnic_dev *dev)
{
	if (!dev->aq.enabled)
		return;
	qrnic_wr(dev, QRNIC_REG_AQ_CTRL, 0);
	dev->aq.enabled = false;
}

/* Only once the device no longer uses the rings (disabled or reset). */
void qrnic_aq_free(struct qrnic_dev *dev)
{
	struct qrnic_aq *aq = &dev->aq;
	struct device *dmadev = &dev->pdev->dev;
	struct qrnic_aq_cqe *cq;
	struct qrnic_aq_cmd *sq;
	struct qrnic_aq_ctx *ctx;
	unsigned long flags;

	spin_lock_irqsave(&aq->sq_lock, flags);
	spin_lock(&aq->cq_lock);
	cq = aq->cq;
	sq = aq->sq;
	ctx = aq->ctx;
	aq->cq = NULL;
	aq->sq = NULL;
	aq->ctx = NULL;
	aq->enabled = false;
	spin_unlock(&aq->cq_lock);
	spin_unlock_irqrestore(&aq->sq_lock, flags);

	if (cq)
		dma_free_coherent(dmadev, QRNIC_AQ_CQE_SIZE << aq->log_depth, cq, aq->cq_dma);
	if (sq)
		dma_free_coherent(dmadev, QRNIC_AQ_SQE_SIZE << aq->log_depth, sq, aq->sq_dma);
	kfree(ctx);
}

/* ---- completions ------------------------------------------------------------ */

/* Consume every valid admin CQE.  Any context: interrupt, or atomic poll. */
void qrnic_aq_process_cq(struct qrnic_dev *dev)
{
	struct qrnic_aq *aq = &dev->aq;
	unsigned long flags;

	spin_lock_irqsave(&aq->cq_lock, flags);
	while (aq->cq) {
		u32 ci = aq->cq_ci;
		struct qrnic_aq_cqe *e = &aq->cq[ci & (aq->depth - 1)];
		u8 phase = ((ci >> aq->log_depth) & 1) ^ 1;
		struct qrnic_aq_ctx *ctx;
		u32 slot;

		if ((READ_ONCE(e->owner) & 1) != phase)
			break;
		dma_rmb();	/* owner before the rest of the entry */

		/* The context is named by the cmd_id the device echoes (its low
		 * bits), not by the CQ slot: see qrnic_aq_take_ctx(). */
		slot = le16_to_cpu(e->cmd_id) & (aq->depth - 1);
		ctx = &aq->ctx[slot];
		if (ctx->state == QRNIC_AQ_CTX_PENDING && le16_to_cpu(e->cmd_id) == ctx->cmd_id) {
			ctx->cqe = *e;
			ctx->state = QRNIC_AQ_CTX_DONE;
			complete(&ctx->done);
		} else {
			dev_warn_ratelimited(&dev->pdev->dev,
					     "unexpected admin completion: cmd_id %u opcode %s status %s (slot %u state %u, expected cmd_id %u)\n",
					     le16_to_cpu(e->cmd_id), qrnic_aq_opcode_name(e->opcode),
					     qrnic_aq_status_name(e->status), slot,
					     ctx->state, ctx->cmd_id);
		}
		aq->cq_ci = ci + 1;
	}
	spin_unlock_irqrestore(&aq->cq_lock, flags);
}

/* Fail every outstanding command with -EIO (device declared dead). */
void qrnic_aq_abort_all(struct qrnic_dev *dev)
{
	struct qrnic_aq *aq = &dev->aq;
	unsigned long flags;
	u32 i;

	spin_lock_irqsave(&aq->sq_lock, flags);
	spin_lock(&aq->cq_lock);
	for (i = 0; aq->ctx && i < aq->depth; i++) {
		struct qrnic_aq_ctx *ctx = &aq->ctx[i];

		if (ctx->state != QRNIC_AQ_CTX_PENDING)
			continue;
		ctx->aborted = true;
		ctx->state = QRNIC_AQ_CTX_DONE;
		complete(&ctx->done);
	}
	spin_unlock(&aq->cq_lock);
	spin_unlock_irqrestore(&aq->sq_lock, flags);
}

static bool qrnic_aq_ctx_finished(struct qrnic_aq *aq, struct qrnic_aq_ctx *ctx)
{
	unsigned long flags;
	bool done;

	spin_lock_irqsave(&aq->cq_lock, flags);
	done = ctx->state == QRNIC_AQ_CTX_DONE;
	if (!done)
		ctx->state = QRNIC_AQ_CTX_TIMEDOUT;	/* a late completion is ignored */
	spin_unlock_irqrestore(&aq->cq_lock, flags);
	return done;
}

/*
 * A free context for a new command, under sq_lock; its index goes into the
 * low log_depth bits of the cmd_id (the SQ index in the high bits, so a late
 * completion of an older use does not match).
 *
 * The context is not the one of the SQ slot: the semaphore only bounds the
 * number of commands in flight, and waiters run in any order.  With the
 * context of SQ slot sq_pi, a command could take over the context of the
 * command depth places before it whose completion had been processed but
 * whose waiter had not run yet (a later command's waiter had run and freed a
 * semaphore count): that waiter then read the new command's state, and set
 * it FREE, so the new command's completion was dropped as unexpected and it
 * timed out, declaring the device dead.  Seen with 1000 rdma_cm connections
 * (the CM's work items run admin commands concurrently), and with many
 * processes creating QPs under aq_log_depth=1 (tests/test_guest_soak.py).
 * A holder of a semaphore count always finds a FREE context: at most depth
 * commands hold one.  Bounded: one pass over the contexts.
 */
static struct qrnic_aq_ctx *qrnic_aq_take_ctx(struct qrnic_aq *aq, u32 idx, u16 *cmd_id)
{
	u32 mask = aq->depth - 1;
	u32 i;

	for (i = 0; i < aq->depth; i++) {
		u32 c = (idx + i) & mask;
		struct qrnic_aq_ctx *ctx = &aq->ctx[c];

		if (READ_ONCE(ctx->state) != QRNIC_AQ_CTX_FREE)
			continue;
		*cmd_id = (u16)((idx & ~mask) | c);
		return ctx;
	}
	return NULL;
}

static int qrnic_aq_get_slot(struct qrnic_dev *dev, bool atomic)
{
	struct qrnic_aq *aq = &dev->aq;
	ktime_t deadline;

	if (!atomic)
		return down_timeout(&aq->avail, msecs_to_jiffies(qrnic_admin_timeout_ms));

	deadline = ktime_add_ms(ktime_get(), qrnic_admin_timeout_ms);
	while (down_trylock(&aq->avail)) {
		if (qrnic_dead(dev))
			return -EIO;
		if (ktime_after(ktime_get(), deadline))
			return -ETIME;
		qrnic_aq_process_cq(dev);
		udelay(5);
	}
	return 0;
}

/**
 * qrnic_aq_exec - run one admin command and wait for its completion
 * @dev: the device
 * @cmd: the command; hdr.opcode and the payload are set by the caller,
 *	 hdr.cmd_id is filled in here
 * @cqe: if not NULL, receives the completion entry (also on failure)
 * @atomic: do not sleep: busy-poll the admin CQ (interrupts may be off)
 *
 * Returns 0, the errno mapped from the completion status, -EIO if the
 * device is (or became) dead, or -ETIMEDOUT; a timeout declares the device
 * dead (qrnic_set_fatal()), since the admin queue can no longer be trusted.
 */
int qrnic_aq_exec(struct qrnic_dev *dev, struct qrnic_aq_cmd *cmd,
		  struct qrnic_aq_cqe *cqe, bool atomic)
{
	struct qrnic_aq *aq = &dev->aq;
	struct device *dmadev = &dev->pdev->dev;
	u8 opcode = cmd->hdr.opcode;
	struct qrnic_aq_ctx *ctx;
	unsigned long flags;
	u16 cmd_id;
	u32 idx, slot;
	int err;

	if (qrnic_dead(dev) || !aq->enabled)
		return -EIO;

	err = qrnic_aq_get_slot(dev, atomic);
	if (err) {
		if (err == -EIO)
			return err;
		dev_err(dmadev, "admin command %s: no admin queue slot free after %u ms\n",
			qrnic_aq_opcode_name(opcode), qrnic_admin_timeout_ms);
		return -ETIMEDOUT;
	}

	spin_lock_irqsave(&aq->sq_lock, flags);
	if (qrnic_dead(dev) || !aq->sq) {
		spin_unlock_irqrestore(&aq->sq_lock, flags);
		up(&aq->avail);
		return -EIO;
	}
	idx = aq->sq_pi;
	slot = idx & (aq->depth - 1);
	ctx = qrnic_aq_take_ctx(aq, idx, &cmd_id);
	if (WARN_ON_ONCE(!ctx)) {	/* cannot happen: we hold a semaphore count */
		spin_unlock_irqrestore(&aq->sq_lock, flags);
		up(&aq->avail);
		return -EIO;
	}
	cmd->hdr.flags = 0;
	cmd->hdr.rsvd = 0;
	cmd->hdr.cmd_id = cpu_to_le16(cmd_id);
	ctx->cmd_id = cmd_id;
	ctx->aborted = false;
	reinit_completion(&ctx->done);
	WRITE_ONCE(ctx->state, QRNIC_AQ_CTX_PENDING);
	memcpy(&aq->sq[slot], cmd, sizeof(*cmd));
	aq->sq_pi = idx + 1;
	/* writel() orders the SQ entry in coherent memory before the doorbell. */
	qrnic_wr(dev, QRNIC_REG_AQ_SQ_DB, aq->sq_pi);
	spin_unlock_irqrestore(&aq->sq_lock, flags);

	if (atomic) {
		ktime_t deadline = ktime_add_ms(ktime_get(), qrnic_admin_timeout_ms);

		for (;;) {
			qrnic_aq_process_cq(dev);
			if (READ_ONCE(ctx->state) == QRNIC_AQ_CTX_DONE ||
			    ktime_after(ktime_get(), deadline))
				break;
			udelay(2);
		}
	} else if (!wait_for_completion_timeout(&ctx->done,
					       msecs_to_jiffies(qrnic_admin_timeout_ms))) {
		/* A lost interrupt would end here: look at the ring once more. */
		qrnic_aq_process_cq(dev);
	}

	if (!qrnic_aq_ctx_finished(aq, ctx)) {
		dev_err(dmadev,
			"admin command %s (opcode 0x%02x, cmd_id %u) timed out after %u ms: AQ_STATUS 0x%x AQ_SQ_CI %u sq_pi %u STATUS 0x%x; declaring the device dead\n",
			qrnic_aq_opcode_name(opcode), opcode, cmd_id,
			qrnic_admin_timeout_ms, qrnic_rd(dev, QRNIC_REG_AQ_STATUS),
			qrnic_rd(dev, QRNIC_REG_AQ_SQ_CI), idx + 1,
			qrnic_rd(dev, QRNIC_REG_STATUS));
		qrnic_set_fatal(dev, "admin command timeout");
		WRITE_ONCE(ctx->state, QRNIC_AQ_CTX_FREE);
		up(&aq->avail);
		return -ETIMEDOUT;
	}

	if (ctx->aborted) {
		err = -EIO;
	} else {
		if (cqe)
			*cqe = ctx->cqe;
		err = qrnic_aq_status_to_errno(ctx->cqe.status);
		if (err)
			dev_warn_ratelimited(dmadev,
					     "admin command %s failed: status %s (%u), detail %u -> %d\n",
					     qrnic_aq_opcode_name(opcode),
					     qrnic_aq_status_name(ctx->cqe.status),
					     ctx->cqe.status, le32_to_cpu(ctx->cqe.detail), err);
	}
	WRITE_ONCE(ctx->state, QRNIC_AQ_CTX_FREE);
	up(&aq->avail);
	return err;
}

/* ---- typed wrappers -------------------------------------------------------- */

static void qrnic_cmd_init(struct qrnic_aq_cmd *cmd, u8 opcode)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->hdr.opcode = opcode;
}

static int qrnic_cmd_simple(struct qrnic_dev *dev, u8 opcode, u32 handle, bool atomic)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, opcode);
	cmd.u.handle.handle = cpu_to_le32(handle);
	return qrnic_aq_exec(dev, &cmd, NULL, atomic);
}

static int qrnic_cmd_create(struct qrnic_dev *dev, struct qrnic_aq_cmd *cmd,
			    u32 *handle, bool atomic)
{
	struct qrnic_aq_cqe cqe;
	int err;

	err = qrnic_aq_exec(dev, cmd, &cqe, atomic);
	if (!err)
		*handle = le32_to_cpu(cqe.result[0]);
	return err;
}

/*
 * Commands whose answer the device DMA-writes to resp_addr.  The answer
 * buffer is coherent memory of one page; shorter answers (an older minor
 * version) leave the rest of *out zeroed.
 */
static int qrnic_cmd_query_resp(struct qrnic_dev *dev, struct qrnic_aq_cmd *cmd,
				void *out, size_t len)
{
	struct device *dmadev = &dev->pdev->dev;
	dma_addr_t resp_dma;
	void *resp;
	int err;

	if (WARN_ON(len > PAGE_SIZE))
		return -EINVAL;
	resp = dma_alloc_coherent(dmadev, PAGE_SIZE, &resp_dma, GFP_KERNEL);
	if (!resp)
		return -ENOMEM;

	switch (cmd->hdr.opcode) {
	case QRNIC_CMD_QUERY_QP:
	case QRNIC_CMD_QUERY_MR:
		cmd->u.query_qp.resp_addr = cpu_to_le64(resp_dma);
		cmd->u.query_qp.resp_len = cpu_to_le32(len);
		break;
	default:
		cmd->u.query.resp_addr = cpu_to_le64(resp_dma);
		cmd->u.query.resp_len = cpu_to_le32(len);
		break;
	}
	err = qrnic_aq_exec(dev, cmd, NULL, false);
	if (!err)
		memcpy(out, resp, len);
	dma_free_coherent(dmadev, PAGE_SIZE, resp, resp_dma);
	return err;
}

int qrnic_cmd_query_device(struct qrnic_dev *dev, struct qrnic_device_attr *out)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_QUERY_DEVICE);
	return qrnic_cmd_query_resp(dev, &cmd, out, sizeof(*out));
}

int qrnic_cmd_query_port(struct qrnic_dev *dev, struct qrnic_port_attr *out)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_QUERY_PORT);
	cmd.u.query.port = cpu_to_le32(QRNIC_PORT);
	return qrnic_cmd_query_resp(dev, &cmd, out, sizeof(*out));
}

int qrnic_cmd_query_stats(struct qrnic_dev *dev, __le64 *counters, u32 count)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_QUERY_STATS);
	return qrnic_cmd_query_resp(dev, &cmd, counters, count * sizeof(*counters));
}

/* QUERY_CC (ABI 1.9, spec 6.6.22): value, min, max, configured */
int qrnic_cmd_query_cc(struct qrnic_dev *dev, u32 param, u32 out[4])
{
	struct qrnic_aq_cmd cmd;
	struct qrnic_aq_cqe cqe;
	int err, i;

	qrnic_cmd_init(&cmd, QRNIC_CMD_QUERY_CC);
	cmd.u.cc.param = cpu_to_le32(param);
	err = qrnic_aq_exec(dev, &cmd, &cqe, false);
	if (err)
		return err;
	for (i = 0; i < 4; i++)
		out[i] = le32_to_cpu(cqe.result[i]);
	return 0;
}

/* SET_CC: -EINVAL when the device refuses the value (BAD_PARAM) */
int qrnic_cmd_set_cc(struct qrnic_dev *dev, u32 param, u32 value)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_SET_CC);
	cmd.u.cc.param = cpu_to_le32(param);
	cmd.u.cc.value = cpu_to_le32(value);
	return qrnic_aq_exec(dev, &cmd, NULL, false);
}

int qrnic_cmd_set_gid(struct qrnic_dev *dev, u32 index, bool valid, u8 net_type,
		      const u8 *gid)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_SET_GID);
	cmd.u.gid.index = cpu_to_le32(index);
	cmd.u.gid.valid = valid;
	if (valid) {
		cmd.u.gid.net_type = net_type;
		memcpy(cmd.u.gid.gid, gid, sizeof(cmd.u.gid.gid));
	}
	return qrnic_aq_exec(dev, &cmd, NULL, false);
}

int qrnic_cmd_alloc_uctx(struct qrnic_dev *dev, u32 *uctx)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_ALLOC_UCTX);
	return qrnic_cmd_create(dev, &cmd, uctx, false);
}

int qrnic_cmd_dealloc_uctx(struct qrnic_dev *dev, u32 uctx)
{
	return qrnic_cmd_simple(dev, QRNIC_CMD_DEALLOC_UCTX, uctx, false);
}

int qrnic_cmd_create_pd(struct qrnic_dev *dev, u32 uctx, u32 *pdn)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_CREATE_PD);
	cmd.u.create_pd.uctx = cpu_to_le32(uctx);
	return qrnic_cmd_create(dev, &cmd, pdn, false);
}

int qrnic_cmd_destroy_pd(struct qrnic_dev *dev, u32 pdn)
{
	return qrnic_cmd_simple(dev, QRNIC_CMD_DESTROY_PD, pdn, false);
}

int qrnic_cmd_create_cq(struct qrnic_dev *dev,
			const struct qrnic_cmd_create_cq *p, u32 *cqn)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_CREATE_CQ);
	cmd.u.create_cq = *p;
	return qrnic_cmd_create(dev, &cmd, cqn, false);
}

int qrnic_cmd_destroy_cq(struct qrnic_dev *dev, u32 cqn)
{
	return qrnic_cmd_simple(dev, QRNIC_CMD_DESTROY_CQ, cqn, false);
}

int qrnic_cmd_create_qp(struct qrnic_dev *dev,
			const struct qrnic_cmd_create_qp *p, u32 *qpn)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_CREATE_QP);
	cmd.u.create_qp = *p;
	return qrnic_cmd_create(dev, &cmd, qpn, false);
}

int qrnic_cmd_modify_qp(struct qrnic_dev *dev, u32 qpn,
			const struct qrnic_qp_attr *attr)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_MODIFY_QP);
	cmd.u.modify_qp.qpn = cpu_to_le32(qpn);
	cmd.u.modify_qp.attr = *attr;
	return qrnic_aq_exec(dev, &cmd, NULL, false);
}

int qrnic_cmd_query_qp(struct qrnic_dev *dev, u32 qpn, struct qrnic_qp_attr *out)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_QUERY_QP);
	cmd.u.query_qp.handle = cpu_to_le32(qpn);
	return qrnic_cmd_query_resp(dev, &cmd, out, sizeof(*out));
}

int qrnic_cmd_destroy_qp(struct qrnic_dev *dev, u32 qpn)
{
	return qrnic_cmd_simple(dev, QRNIC_CMD_DESTROY_QP, qpn, false);
}

int qrnic_cmd_reg_mr(struct qrnic_dev *dev, const struct qrnic_cmd_reg_mr *p,
		     u32 *key)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_REG_MR);
	cmd.u.reg_mr = *p;
	return qrnic_cmd_create(dev, &cmd, key, false);
}

int qrnic_cmd_rereg_mr(struct qrnic_dev *dev, u32 key, u32 change,
		       const struct qrnic_cmd_reg_mr *reg)
{
	struct qrnic_aq_cmd cmd;
	u32 out;

	qrnic_cmd_init(&cmd, QRNIC_CMD_REREG_MR);
	cmd.u.rereg_mr.key = cpu_to_le32(key);
	cmd.u.rereg_mr.change = cpu_to_le32(change);
	cmd.u.rereg_mr.reg = *reg;
	return qrnic_cmd_create(dev, &cmd, &out, false);	/* result[0]: the key, unchanged */
}

int qrnic_cmd_dereg_mr(struct qrnic_dev *dev, u32 key)
{
	return qrnic_cmd_simple(dev, QRNIC_CMD_DEREG_MR, key, false);
}

int qrnic_cmd_alloc_mr(struct qrnic_dev *dev, u32 pdn, u32 max_pages, u32 *key)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_ALLOC_MR);
	cmd.u.alloc_mr.pdn = cpu_to_le32(pdn);
	cmd.u.alloc_mr.max_pages = cpu_to_le32(max_pages);
	return qrnic_cmd_create(dev, &cmd, key, false);
}

int qrnic_cmd_alloc_mw(struct qrnic_dev *dev, u32 pdn, u8 type, u32 *rkey)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_ALLOC_MW);
	cmd.u.alloc_mw.pdn = cpu_to_le32(pdn);
	cmd.u.alloc_mw.type = type;
	return qrnic_cmd_create(dev, &cmd, rkey, false);
}

int qrnic_cmd_resize_cq(struct qrnic_dev *dev, u32 cqn, u8 log_depth,
			u64 ring, bool listed, u32 *carried, bool atomic)
{
	struct qrnic_aq_cmd cmd;
	struct qrnic_aq_cqe cqe;
	int err;

	qrnic_cmd_init(&cmd, QRNIC_CMD_RESIZE_CQ);
	cmd.u.resize_cq.cqn = cpu_to_le32(cqn);
	cmd.u.resize_cq.log_depth = log_depth;
	cmd.u.resize_cq.flags = listed ? QRNIC_CQ_F_PAGELIST : 0;	/* ABI 1.8 */
	cmd.u.resize_cq.ring_addr = cpu_to_le64(ring);
	err = qrnic_aq_exec(dev, &cmd, &cqe, atomic);
	if (!err && carried)
		*carried = le32_to_cpu(cqe.result[0]);
	return err;
}

int qrnic_cmd_modify_cq(struct qrnic_dev *dev, u32 cqn, u16 count, u16 period_us)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_MODIFY_CQ);
	cmd.u.modify_cq.cqn = cpu_to_le32(cqn);
	cmd.u.modify_cq.count = cpu_to_le16(count);
	cmd.u.modify_cq.period_us = cpu_to_le16(period_us);
	return qrnic_aq_exec(dev, &cmd, NULL, false);
}

int qrnic_cmd_create_ah(struct qrnic_dev *dev, u32 pdn,
			const struct qrnic_av *av, u32 *ahn, bool atomic)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_CREATE_AH);
	cmd.u.create_ah.pdn = cpu_to_le32(pdn);
	cmd.u.create_ah.av = *av;
	return qrnic_cmd_create(dev, &cmd, ahn, atomic);
}

int qrnic_cmd_destroy_ah(struct qrnic_dev *dev, u32 ahn, bool atomic)
{
	return qrnic_cmd_simple(dev, QRNIC_CMD_DESTROY_AH, ahn, atomic);
}

int qrnic_cmd_create_eq(struct qrnic_dev *dev, u8 log_depth, u16 vector,
			u32 flags, dma_addr_t ring, u32 *eqn)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_CREATE_EQ);
	cmd.u.create_eq.log_depth = log_depth;
	cmd.u.create_eq.vector = cpu_to_le16(vector);
	cmd.u.create_eq.flags = cpu_to_le32(flags);
	cmd.u.create_eq.ring_addr = cpu_to_le64(ring);
	return qrnic_cmd_create(dev, &cmd, eqn, false);
}

int qrnic_cmd_destroy_eq(struct qrnic_dev *dev, u32 eqn)
{
	return qrnic_cmd_simple(dev, QRNIC_CMD_DESTROY_EQ, eqn, false);
}

int qrnic_cmd_create_srq(struct qrnic_dev *dev,
			 const struct qrnic_cmd_create_srq *p, u32 *srqn)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_CREATE_SRQ);
	cmd.u.create_srq = *p;
	return qrnic_cmd_create(dev, &cmd, srqn, false);
}

int qrnic_cmd_alloc_xrcd(struct qrnic_dev *dev, u32 uctx, u32 *xrcdn)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_ALLOC_XRCD);
	cmd.u.alloc_xrcd.uctx = cpu_to_le32(uctx);
	return qrnic_cmd_create(dev, &cmd, xrcdn, false);
}

int qrnic_cmd_dealloc_xrcd(struct qrnic_dev *dev, u32 xrcdn)
{
	return qrnic_cmd_simple(dev, QRNIC_CMD_DEALLOC_XRCD, xrcdn, false);
}

int qrnic_cmd_modify_srq(struct qrnic_dev *dev, u32 srqn, u32 attr_mask, u32 limit)
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, QRNIC_CMD_MODIFY_SRQ);
	cmd.u.modify_srq.srqn = cpu_to_le32(srqn);
	cmd.u.modify_srq.attr_mask = cpu_to_le32(attr_mask);
	cmd.u.modify_srq.limit = cpu_to_le32(limit);
	return qrnic_aq_exec(dev, &cmd, NULL, false);
}

int qrnic_cmd_query_srq(struct qrnic_dev *dev, u32 srqn, struct qrnic_srq_query *out)
{
	struct qrnic_aq_cmd cmd;
	struct qrnic_aq_cqe cqe;
	int err;

	qrnic_cmd_init(&cmd, QRNIC_CMD_QUERY_SRQ);
	cmd.u.handle.handle = cpu_to_le32(srqn);
	err = qrnic_aq_exec(dev, &cmd, &cqe, false);
	if (err)
		return err;
	out->limit = le32_to_cpu(cqe.result[0]);
	out->max_wr = le32_to_cpu(cqe.result[1]);
	out->posted = le32_to_cpu(cqe.result[2]);
	return 0;
}

int qrnic_cmd_destroy_srq(struct qrnic_dev *dev, u32 srqn)
{
	return qrnic_cmd_simple(dev, QRNIC_CMD_DESTROY_SRQ, srqn, false);
}

int qrnic_cmd_mcast(struct qrnic_dev *dev, u8 op, u32 qpn, const u8 gid[16])
{
	struct qrnic_aq_cmd cmd;

	qrnic_cmd_init(&cmd, op);
	cmd.u.mcast.qpn = cpu_to_le32(qpn);
	memcpy(cmd.u.mcast.gid, gid, sizeof(cmd.u.mcast.gid));
	return qrnic_aq_exec(dev, &cmd, NULL, false);
}
