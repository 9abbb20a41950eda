// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic: PCI probe and remove, device reset, fatal state and recovery.
 *
 * Bring-up follows docs/spec.md 5.1: enable the function, check VERSION,
 * reset, read the identity registers, set up MSI-X and the admin queue,
 * enable the device, query it, create the event queues, then the netdev
 * and the ib_device.  Remove and every probe failure unwind in reverse
 * order; the device is reset before any ring it may still use is freed.
 *
 * Recovery: when the device reports a fatal error (async DEVICE_FATAL
 * event, STATUS.FATAL seen by the health check, an admin command timing
 * out), qrnic_set_fatal() marks it dead, resets it at once (no more DMA,
 * no more interrupts), fails the admin commands in flight, dispatches
 * IB_EVENT_DEVICE_FATAL and queues the recovery work.  That work
 * unregisters the ib_device (the RDMA core destroys every object on it:
 * user contexts are disassociated, their processes see the fatal event and
 * -EIO), detaches the net_device and frees its rings, resets the function,
 * runs the bring-up from the admin queue on again, restarts the rings and
 * registers a fresh ib_device.  The PCI function, its MSI-X vectors and
 * the net_device (with its addresses) stay.  A fatal error during probe is
 * retried by probe itself; remove stops the health check and waits for a
 * recovery in progress, after which no new one can start.
 */
#include <linux/debugfs.h>
#include <linux/iopoll.h>
#include <linux/module.h>
#include <linux/seq_file.h>

#include "qrnic.h"

unsigned int qrnic_admin_timeout_ms = 10000;
module_param_named(admin_timeout_ms, qrnic_admin_timeout_ms, uint, 0644);
MODULE_PARM_DESC(admin_timeout_ms,
		 "Admin command timeout in ms; a timeout declares the device dead (default 10000)");

static unsigned int qrnic_aq_log_depth = 6;
module_param_named(aq_log_depth, qrnic_aq_log_depth, uint, 0444);
MODULE_PARM_DESC(aq_log_depth, "log2 of the admin queue depth, 1..12 (default 6)");

unsigned int qrnic_eth_ring_log = 8;
module_param_named(eth_ring_log, qrnic_eth_ring_log, uint, 0444);
MODULE_PARM_DESC(eth_ring_log, "log2 of the Ethernet TX and RX ring sizes, 1..12 (default 8)");

unsigned int qrnic_ring_pagelist = 1;
module_param_named(ring_pagelist, qrnic_ring_pagelist, uint, 0644);
MODULE_PARM_DESC(ring_pagelist,
		 "CQ/QP/SRQ rings as page lists on a device with QRNIC_CAP_RING_PAGELIST: 0 never (one contiguous allocation), 1 rings above 32 KiB (default), 2 every ring of more than a page");

/*
 * Off by default: in TCG guests it measured slower, not faster (fewer MMIO
 * exits, but more completion interrupts per I/O; docs/storage.md "RQ
 * producer records").
 */
bool qrnic_rq_dbrec;
module_param_named(rq_dbrec, qrnic_rq_dbrec, bool, 0644);
MODULE_PARM_DESC(rq_dbrec,
		 "QPs post receives through an RQ producer index record instead of the RQ doorbell on a device with QRNIC_CAP_RQ_DBREC, as ConnectX does (no MMIO write per post_recv; kernel QPs here, user QPs in the provider; default off; read when a QP is created)");

/*
 * SQ records for kernel QPs (ABI 1.11): post_send writes the producer index
 * to a record and rings the SQ doorbell only when the device's flag beside
 * it says the device will not read the record again by itself (spec
 * 8.6.2); under emulation most posts of a busy QP then make no MMIO exit.
 */
bool qrnic_sq_dbrec = true;
module_param_named(sq_dbrec, qrnic_sq_dbrec, bool, 0644);
MODULE_PARM_DESC(sq_dbrec,
		 "kernel QPs post sends through an SQ record and ring the SQ doorbell only when the device's flag there asks for it, on a device with QRNIC_CAP_SQ_DBREC (virtio-style notification suppression; default on; read when a QP is created)");

/*
 * BlueFlame for user contexts (ABI 1.5, spec 3.2.1).  Off by default: an
 * emulated device takes each 8-byte store of a BF write as an MMIO exit (a
 * TCG vCPU takes QEMU's big lock for every one), where a doorbell is one
 * exit and the WQE a DMA read QEMU does in memory; T2 ib_write_lat measured
 * 1.11x (t_avg) and 1.15x (t_typical) the doorbell path's latency with BF
 * (bench/bf_latency, guest-driver/provider/README.md).  On, the device's
 * modelled time of a small post (a timing profile) is ConnectX's.
 */
bool qrnic_bf;
module_param_named(bf, qrnic_bf, bool, 0644);
MODULE_PARM_DESC(bf,
		 "offer the device's BlueFlame buffers to user contexts (the provider then writes single small WQEs into the doorbell page, as mlx5 does; default off: slower under emulation; read when a context is allocated)");

bool qrnic_cq_dim = true;
module_param_named(cq_dim, qrnic_cq_dim, bool, 0444);
MODULE_PARM_DESC(cq_dim,
		 "Let ib_core's RDMA DIM moderate the completion events of kernel ULP CQs through MODIFY_CQ (use_cq_dim, as mlx5; default on)");

/*
 * A fixed completion-event moderation for kernel CQs, for experiments
 * (docs/storage.md "Completion moderation in the guest's time"): read when a CQ is
 * created; while cq_mod_usec is not 0, DIM's and the ULPs' modify_cq on
 * kernel CQs change nothing.
 */
unsigned short qrnic_cq_mod_usec;
module_param_named(cq_mod_usec, qrnic_cq_mod_usec, ushort, 0644);
MODULE_PARM_DESC(cq_mod_usec,
		 "Kernel CQs created from now on raise their completion event cq_mod_usec microseconds after the first CQE, or at cq_mod_count CQEs if sooner (MODIFY_CQ), instead of DIM's or the ULP's moderation; 0 = off (default)");

unsigned short qrnic_cq_mod_count;
module_param_named(cq_mod_count, qrnic_cq_mod_count, ushort, 0644);
MODULE_PARM_DESC(cq_mod_count,
		 "With cq_mod_usec: the CQE count that raises the event sooner, 0 = none (default)");

/*
 * 32 by default: a TCG guest's NVMe-oF I/O takes ~100 us of guest CPU, so
 * DIM's top profile (32 CQEs or 32 us) would end every period before the
 * next completion; scaled, its events per I/O dropped from 0.3-0.55 to
 * 0.09-0.10 and the IOPS rose, with QD1 latency unchanged
 * (docs/storage.md "Completion moderation in the guest's time").
 */
unsigned int qrnic_cq_dim_scale = 32;

static int qrnic_set_cq_dim_scale(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, 1000);	/* else -EINVAL, unchanged */
}

static const struct kernel_param_ops qrnic_cq_dim_scale_ops = {
	.set = qrnic_set_cq_dim_scale,
	.get = param_get_uint,
};
module_param_cb(cq_dim_scale, &qrnic_cq_dim_scale_ops, &qrnic_cq_dim_scale, 0644);
MODULE_PARM_DESC(cq_dim_scale,
		 "Multiply the period of DIM's moderation profiles (1..32 us, made for hardware) by this, 1..1000, for guests that run slower than hardware: 1 = as on hardware (KVM); default 32 (TCG); read at each modify_cq");

static unsigned int qrnic_health_poll_ms = 1000;
module_param_named(health_poll_ms, qrnic_health_poll_ms, uint, 0444);
MODULE_PARM_DESC(health_poll_ms,
		 "Interval of the STATUS.FATAL health check in ms, 0 = off (default 1000)");

static bool qrnic_recovery = true;
module_param_named(recovery, qrnic_recovery, bool, 0644);
MODULE_PARM_DESC(recovery,
		 "Reset and re-initialise the device after a fatal error (default on); off: it stays dead until unbound");

#define QRNIC_PROBE_ATTEMPTS	3

/* Recovery works: not ib_wq (unregistration flushes it), no WQ_MEM_RECLAIM. */
static struct workqueue_struct *qrnic_wq;

/*
 * The device is dead: a fatal error was reported or the admin queue stopped
 * answering.  From now on admin commands fail with -EIO and destroy paths
 * only release host resources.  The device is reset right away, which
 * stops all its DMA and interrupts, so that memory freed by those destroy
 * paths can no longer be written by it.  Any context.  Returns false if
 * the device was dead already.
 */
static bool qrnic_mark_dead(struct qrnic_dev *dev, const char *why)
{
	u32 status, code;

	if (test_and_set_bit(QRNIC_FLAG_FATAL, &dev->flags))
		return false;

	status = qrnic_rd(dev, QRNIC_REG_STATUS);
	code = qrnic_rd(dev, QRNIC_REG_FATAL_CODE);
	dev->fatal_code = code;
	dev->fatal_count++;
	dev_err(&dev->pdev->dev,
		"device is dead (%s): STATUS 0x%x FATAL_CODE %u; resetting it to stop DMA\n",
		why, status, code);

	qrnic_wr(dev, QRNIC_REG_CTRL, QRNIC_CTRL_RESET);
	/*
	 * The read returns once the reset is done: every CQE the device wrote
	 * is in memory and none will follow.  From here on polling a kernel CQ
	 * returns the CQEs in its ring, then a software flush completion for
	 * every work request still outstanding on its kernel QPs (qrnic_cq.c);
	 * flush_work calls those CQs' completion handlers once.
	 */
	qrnic_rd(dev, QRNIC_REG_STATUS);
	smp_mb__before_atomic();
	set_bit(QRNIC_FLAG_STOPPED, &dev->flags);
	queue_work(system_wq, &dev->flush_work);
	qrnic_aq_abort_all(dev);
	if (dev->ndev)
		netif_carrier_off(dev->ndev);
	qrnic_dispatch_dev_event(dev, IB_EVENT_DEVICE_FATAL);
	return true;
}

static void qrnic_queue_recovery(struct qrnic_dev *dev, unsigned long delay)
{
	if (READ_ONCE(qrnic_recovery) && !test_bit(QRNIC_FLAG_GONE, &dev->flags))
		queue_delayed_work(qrnic_wq, &dev->recovery_work, delay);
}

/*
 * Declare the device dead (qrnic_mark_dead()) and have the recovery work
 * reset and re-initialise it.  Any context.  Until probe is complete and
 * once remove has begun the work is disabled: queueing it does nothing.
 */
void qrnic_set_fatal(struct qrnic_dev *dev, const char *why)
{
	if (qrnic_mark_dead(dev, why))
		qrnic_queue_recovery(dev, 0);
}

/* Look at STATUS: a fatal error the async EQ could not report, or a vanished device. */
void qrnic_check_health(struct qrnic_dev *dev)
{
	u32 status;

	if (qrnic_dead(dev))
		return;
	status = qrnic_rd(dev, QRNIC_REG_STATUS);
	if (status == ~0U && !pci_device_is_present(dev->pdev)) {
		set_bit(QRNIC_FLAG_GONE, &dev->flags);
		qrnic_set_fatal(dev, "device no longer present");
	} else if (status & QRNIC_STATUS_FATAL) {
		qrnic_set_fatal(dev, "STATUS.FATAL set");
	}
}

static void qrnic_health_work(struct work_struct *work)
{
	struct qrnic_dev *dev = container_of(to_delayed_work(work), struct qrnic_dev,
					     health_work);

	qrnic_check_health(dev);
	queue_delayed_work(system_wq, &dev->health_work,
			   msecs_to_jiffies(qrnic_health_poll_ms));
}

/*
 * debugfs: /sys/kernel/debug/qrnic/<pci address>/
 *   inject_fatal  write 1: declare the device dead as a fatal error would
 *                 (IB_EVENT_DEVICE_FATAL, then recovery)
 *   recover       write 1: if the device is dead (e.g. recovery gave up),
 *                 try to recover it again
 *   fatal_code, fatal_count, recoveries   read
 *   rings         the admin and event queue rings: bus address, bytes
 *   mem_mgt       fast registration counters of the kernel data path
 *                 (alloc_mr, fast MRs allocated now, REG_MR / LOCAL_INV /
 *                 SEND_WITH_INV posted, their completions, receives with
 *                 an invalidation)
 */
static struct dentry *qrnic_debugfs_root;

static ssize_t qrnic_inject_fatal_write(struct file *file, const char __user *buf,
				       size_t count, loff_t *ppos)
{
	struct qrnic_dev *dev = file->private_data;
	bool val;
	int err;

	err = kstrtobool_from_user(buf, count, &val);
	if (err)
		return err;
	if (val)
		qrnic_set_fatal(dev, "injected through debugfs");
	return count;
}

static const struct file_operations qrnic_inject_fatal_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = qrnic_inject_fatal_write,
	.llseek = noop_llseek,
};

static ssize_t qrnic_recover_write(struct file *file, const char __user *buf,
				   size_t count, loff_t *ppos)
{
	struct qrnic_dev *dev = file->private_data;
	bool val;
	int err;

	err = kstrtobool_from_user(buf, count, &val);
	if (err)
		return err;
	if (!val)
		return count;
	if (!qrnic_dead(dev))
		return -EINVAL;
	WRITE_ONCE(dev->recovery_failures, 0);
	qrnic_queue_recovery(dev, 0);
	return count;
}

static const struct file_operations qrnic_recover_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = qrnic_recover_write,
	.llseek = noop_llseek,
};

/* The rings' bus addresses (tests aim DMA faults at them). */
static int qrnic_rings_show(struct seq_file *m, void *v)
{
	struct qrnic_dev *dev = m->private;
	int i;

	seq_printf(m, "admin-sq 0x%llx %u\n", (u64)dev->aq.sq_dma,
		   QRNIC_AQ_SQE_SIZE << dev->aq.log_depth);
	seq_printf(m, "admin-cq 0x%llx %u\n", (u64)dev->aq.cq_dma,
		   QRNIC_AQ_CQE_SIZE << dev->aq.log_depth);
	seq_printf(m, "async-eq 0x%llx %zu eqn %u\n", (u64)dev->async_eq.ring_dma,
		   dev->async_eq.ring_bytes, dev->async_eq.eqn);
	for (i = 0; dev->ceqs && i < dev->num_ceqs; i++)
		seq_printf(m, "comp-eq%d 0x%llx %zu eqn %u\n", i, (u64)dev->ceqs[i].ring_dma,
			   dev->ceqs[i].ring_bytes, dev->ceqs[i].eqn);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(qrnic_rings);

static int qrnic_cq_moderation_show(struct seq_file *m, void *v)
{
	struct qrnic_dev *dev = m->private;

	seq_printf(m, "dim %d\n", qrnic_cq_dim && qrnic_has_cq_resize(dev));
	seq_printf(m, "dim_scale %u\n", READ_ONCE(qrnic_cq_dim_scale));
	seq_printf(m, "dim_modify %lld\n", atomic64_read(&dev->cqmod.dim_modify));
	seq_printf(m, "dim_period_max %d\n", atomic_read(&dev->cqmod.dim_period_max));
	seq_printf(m, "dim_period_sent_max %d\n", atomic_read(&dev->cqmod.dim_period_sent_max));
	seq_printf(m, "fixed_usec %u\n", READ_ONCE(qrnic_cq_mod_usec));
	seq_printf(m, "fixed_count %u\n", READ_ONCE(qrnic_cq_mod_count));
	seq_printf(m, "fixed_cqs %lld\n", atomic64_read(&dev->cqmod.fixed_cqs));
	seq_printf(m, "ignored %lld\n", atomic64_read(&dev->cqmod.ignored));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(qrnic_cq_moderation);

static int qrnic_mem_mgt_show(struct seq_file *m, void *v)
{
	struct qrnic_dev *dev = m->private;

	seq_printf(m, "supported %d\n", qrnic_has_mem_mgt(dev));
	seq_printf(m, "max_fast_reg_pages %u\n", qrnic_attr(dev, max_fast_reg_pages));
	seq_printf(m, "alloc_mr %lld\n", atomic64_read(&dev->frwr.alloc_mr));
	seq_printf(m, "fast_mrs %lld\n", atomic64_read(&dev->frwr.fast_mrs));
	seq_printf(m, "reg_mr_posted %lld\n", atomic64_read(&dev->frwr.reg_mr_posted));
	seq_printf(m, "local_inv_posted %lld\n", atomic64_read(&dev->frwr.local_inv_posted));
	seq_printf(m, "send_inv_posted %lld\n", atomic64_read(&dev->frwr.send_inv_posted));
	seq_printf(m, "reg_mr_done %lld\n", atomic64_read(&dev->frwr.reg_mr_done));
	seq_printf(m, "local_inv_done %lld\n", atomic64_read(&dev->frwr.local_inv_done));
	seq_printf(m, "recv_inv %lld\n", atomic64_read(&dev->frwr.recv_inv));
	seq_printf(m, "errors %lld\n", atomic64_read(&dev->frwr.errors));
	seq_printf(m, "rereg_mr %lld\n", atomic64_read(&dev->frwr.rereg_mr));
	seq_printf(m, "rereg_repin %lld\n", atomic64_read(&dev->frwr.rereg_repin));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(qrnic_mem_mgt);

static int qrnic_sq_dbrec_show(struct seq_file *m, void *v)
{
	struct qrnic_dev *dev = m->private;

	seq_printf(m, "supported %d\n", !!(dev->caps & QRNIC_CAP_SQ_DBREC));
	seq_printf(m, "enabled %d\n", qrnic_use_sq_dbrec(dev));
	seq_printf(m, "qps %lld\n", atomic64_read(&dev->sqrec.qps));
	seq_printf(m, "skipped %lld\n", atomic64_read(&dev->sqrec.skipped));
	seq_printf(m, "rung %lld\n", atomic64_read(&dev->sqrec.rung));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(qrnic_sq_dbrec);

static void qrnic_debugfs_add(struct qrnic_dev *dev)
{
	dev->debugfs = debugfs_create_dir(pci_name(dev->pdev), qrnic_debugfs_root);
	debugfs_create_file("inject_fatal", 0200, dev->debugfs, dev, &qrnic_inject_fatal_fops);
	debugfs_create_file("recover", 0200, dev->debugfs, dev, &qrnic_recover_fops);
	debugfs_create_u32("fatal_code", 0400, dev->debugfs, &dev->fatal_code);
	debugfs_create_u32("fatal_count", 0400, dev->debugfs, &dev->fatal_count);
	debugfs_create_u32("recoveries", 0400, dev->debugfs, &dev->recoveries);
	debugfs_create_atomic_t("ring_pagelists", 0400, dev->debugfs, &dev->ring_pagelists);
	debugfs_create_file("rings", 0400, dev->debugfs, dev, &qrnic_rings_fops);
	debugfs_create_file("mem_mgt", 0400, dev->debugfs, dev, &qrnic_mem_mgt_fops);
	debugfs_create_file("sq_dbrec", 0400, dev->debugfs, dev, &qrnic_sq_dbrec_fops);
	debugfs_create_file("cq_moderation", 0400, dev->debugfs, dev, &qrnic_cq_moderation_fops);
}

static int qrnic_hw_reset(struct qrnic_dev *dev)
{
	u32 status;
	int err;

	qrnic_wr(dev, QRNIC_REG_CTRL, QRNIC_CTRL_RESET);
	dev->aq.enabled = false;
	err = readl_poll_timeout(dev->regs + QRNIC_REG_STATUS, status,
				 status & QRNIC_STATUS_READY, 10, 1000000);
	if (err)
		dev_err(&dev->pdev->dev, "device not ready after reset (STATUS 0x%x)\n",
			status);
	return err;
}

static int qrnic_hw_identify(struct qrnic_dev *dev)
{
	struct device *d = &dev->pdev->dev;
	u32 lo, hi;
	int err;

	dev->version = qrnic_rd(dev, QRNIC_REG_VERSION);
	if ((dev->version >> 16) != QRNIC_ABI_MAJOR) {
		dev_err(d, "device ABI %u.%u, driver supports major %u: not binding\n",
			dev->version >> 16, dev->version & 0xffff, QRNIC_ABI_MAJOR);
		return -ENODEV;
	}

	err = qrnic_hw_reset(dev);
	if (err)
		return err;

	dev->caps = qrnic_rd(dev, QRNIC_REG_CAPS);
	dev->num_db_pages = qrnic_rd(dev, QRNIC_REG_NUM_DB_PAGES);
	dev->hw_vectors = qrnic_rd(dev, QRNIC_REG_NUM_VECTORS);
	lo = qrnic_rd(dev, QRNIC_REG_MAC_LO);
	hi = qrnic_rd(dev, QRNIC_REG_MAC_HI);
	dev->mac[0] = lo;
	dev->mac[1] = lo >> 8;
	dev->mac[2] = lo >> 16;
	dev->mac[3] = lo >> 24;
	dev->mac[4] = hi;
	dev->mac[5] = hi >> 8;
	dev->eth_mtu = qrnic_rd(dev, QRNIC_REG_ETH_MTU);

	if (!(dev->caps & QRNIC_CAP_ETH) || !(dev->caps & QRNIC_CAP_RC)) {
		dev_err(d, "device lacks the Ethernet rings or RC (CAPS 0x%x)\n", dev->caps);
		return -ENODEV;
	}
	if (!dev->num_db_pages || !dev->hw_vectors) {
		dev_err(d, "device reports %u doorbell pages and %u vectors\n",
			dev->num_db_pages, dev->hw_vectors);
		return -ENODEV;
	}
	return 0;
}

static int qrnic_hw_enable(struct qrnic_dev *dev)
{
	u32 status;

	qrnic_wr(dev, QRNIC_REG_CTRL, QRNIC_CTRL_ENABLE);
	status = qrnic_rd(dev, QRNIC_REG_STATUS);
	if (!(status & QRNIC_STATUS_ENABLED) || (status & QRNIC_STATUS_FATAL)) {
		dev_err(&dev->pdev->dev, "device did not enable (STATUS 0x%x)\n", status);
		return -EIO;
	}
	return 0;
}

static int qrnic_query_caps(struct qrnic_dev *dev)
{
	struct device *d = &dev->pdev->dev;
	int err;

	err = qrnic_cmd_query_device(dev, &dev->attr);
	if (err)
		return err;
	if ((qrnic_attr(dev, abi_version) >> 16) != QRNIC_ABI_MAJOR) {
		dev_err(d, "QUERY_DEVICE reports ABI 0x%x\n", qrnic_attr(dev, abi_version));
		return -ENODEV;
	}
	if (!qrnic_attr(dev, gid_tbl_len) || qrnic_attr(dev, max_qp) < 4 ||
	    qrnic_attr(dev, max_cq) < 2 || qrnic_attr(dev, max_pd) < 2 ||
	    qrnic_attr(dev, max_eq) < 2) {
		dev_err(d, "QUERY_DEVICE reports unusable limits\n");
		return -ENODEV;
	}
	return qrnic_cmd_query_port(dev, &dev->port);
}

/* Undo qrnic_hw_start(), or any part of it: reset, no DMA, no interrupts, rings freed. */
static void qrnic_hw_stop(struct qrnic_dev *dev)
{
	qrnic_eqs_destroy(dev);
	qrnic_hw_reset(dev);
	qrnic_irqs_sync(dev);
	qrnic_aq_free(dev);
}

/*
 * Bring-up from the admin queue on (docs/spec.md 5.1 steps 5..7), on a
 * function that was just reset: admin queue, enable, QUERY_DEVICE and
 * QUERY_PORT, event queues.  Cleans up after itself on failure.
 */
static int qrnic_hw_start(struct qrnic_dev *dev)
{
	int err;

	err = qrnic_aq_init(dev, qrnic_aq_log_depth);
	if (err)
		return err;
	err = qrnic_hw_enable(dev);
	if (err)
		goto err_stop;
	err = qrnic_query_caps(dev);
	if (err)
		goto err_stop;
	err = qrnic_eqs_create(dev);
	if (err)
		goto err_stop;
	return 0;

err_stop:
	qrnic_hw_stop(dev);
	return err;
}

static const char *qrnic_ib_name(struct qrnic_dev *dev)
{
	return dev->ib ? dev_name(&dev->ib->ibdev.dev) : "no ib_device";
}

/*
 * The recovery work (qrnic_wq).  Only one runs per device at a time, none
 * before probe is complete, none after remove has begun.
 */
static void qrnic_recovery_work(struct work_struct *work)
{
	struct qrnic_dev *dev = container_of(to_delayed_work(work), struct qrnic_dev,
					     recovery_work);
	struct device *d = &dev->pdev->dev;
	ktime_t t0 = ktime_get();
	int err;

	if (!qrnic_dead(dev))
		return;		/* a second request, and an earlier run recovered */
	if (test_bit(QRNIC_FLAG_GONE, &dev->flags) || !pci_device_is_present(dev->pdev)) {
		dev_err(d, "device no longer present: not recovering\n");
		return;
	}
	if (dev->recovery_failures >= QRNIC_MAX_RECOVERY_FAILURES)
		return;

	dev_warn(d, "recovering from fatal error %u (FATAL_CODE %u): unregistering %s\n",
		 dev->fatal_count, dev->fatal_code, qrnic_ib_name(dev));

	/*
	 * The RDMA core destroys every object of the old ib_device (all
	 * destroy paths succeed on a dead device) and lets go of it ...
	 */
	qrnic_ib_unregister(dev);
	/* ... the net_device lets go of its rings ... */
	qrnic_netdev_suspend(dev);
	/* ... the function is reset and every host-side ring freed ... */
	qrnic_hw_stop(dev);
	/* every kernel QP is gone with the ib_device: nothing left to flush */
	flush_work(&dev->flush_work);
	clear_bit(QRNIC_FLAG_STOPPED, &dev->flags);
	clear_bit(QRNIC_FLAG_FATAL, &dev->flags);
	/* ... and brought up again, with a new ib_device. */
	err = qrnic_hw_start(dev);
	if (!err) {
		qrnic_netdev_resume(dev);
		err = qrnic_ib_register(dev);
	}
	if (!err && !qrnic_dead(dev)) {
		dev->recovery_failures = 0;
		dev->recoveries++;
		dev_info(d, "recovered from fatal error %u in %lld ms: %s registered\n",
			 dev->fatal_count, ktime_ms_delta(ktime_get(), t0), qrnic_ib_name(dev));
		return;
	}

	dev->recovery_failures++;
	if (!err) {
		/* Another fatal error during the bring-up: its recovery is queued. */
		dev_warn(d, "fatal error during recovery (attempt %u)\n", dev->recovery_failures);
		return;
	}
	qrnic_mark_dead(dev, "recovery failed");
	if (dev->recovery_failures < QRNIC_MAX_RECOVERY_FAILURES) {
		unsigned int delay = 100U << dev->recovery_failures;

		dev_err(d, "recovery attempt %u failed (%d); trying again in %u ms\n",
			dev->recovery_failures, err, delay);
		/* replaces an immediate run queued by the failure itself */
		if (READ_ONCE(qrnic_recovery))
			mod_delayed_work(qrnic_wq, &dev->recovery_work, msecs_to_jiffies(delay));
	} else {
		dev_err(d, "recovery failed %u times (%d): the device stays dead; reload the driver or write 1 to debugfs qrnic/%s/recover\n",
			dev->recovery_failures, err, pci_name(dev->pdev));
	}
}

static int qrnic_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct qrnic_dev *dev;
	int attempt, err;

	if (qrnic_aq_log_depth < 1 || qrnic_aq_log_depth > QRNIC_AQ_MAX_LOG_DEPTH)
		qrnic_aq_log_depth = 6;
	if (qrnic_eth_ring_log < 1 || qrnic_eth_ring_log > 12)
		qrnic_eth_ring_log = 8;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	dev->pdev = pdev;
	spin_lock_init(&dev->ib_lock);
	qrnic_aq_setup(dev);
	INIT_DELAYED_WORK(&dev->recovery_work, qrnic_recovery_work);
	INIT_DELAYED_WORK(&dev->health_work, qrnic_health_work);
	INIT_WORK(&dev->flush_work, qrnic_flush_work);
	INIT_LIST_HEAD(&dev->kqps);
	spin_lock_init(&dev->kqp_lock);
	/* No recovery work until probe is complete: probe retries by itself. */
	disable_delayed_work(&dev->recovery_work);
	xa_init_flags(&dev->cqs, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->qps, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->srqs, XA_FLAGS_LOCK_IRQ);
	pci_set_drvdata(pdev, dev);

	err = pci_enable_device_mem(pdev);
	if (err)
		goto err_free;
	err = pci_request_mem_regions(pdev, QRNIC_DRV_NAME);
	if (err)
		goto err_disable;
	pci_set_master(pdev);
	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err) {
		dev_err(&pdev->dev, "no usable 64-bit DMA mask\n");
		goto err_release;
	}
	/*
	 * A bounce buffer (swiotlb=force, SEV/TDX guests) keeps a mapping's
	 * offset within its 4 KiB page, as nvme-pci asks for its PRPs: a
	 * fast registration takes a scatterlist as pages (ib_sg_to_pages),
	 * where every segment but the first starts on a page and every one but
	 * the last ends on one.  Without it, a 512-byte first segment at offset
	 * 3584 was bounced to offset 0 and nvme-rdma failed the I/O ("Failed
	 * to map data (-22)", tests/test_guest_swiotlb.py).
	 */
	dma_set_min_align_mask(&pdev->dev, QRNIC_RING_PAGE_SIZE - 1);

	dev->regs = pci_iomap(pdev, QRNIC_BAR_REGS, QRNIC_BAR_REGS_SIZE);
	if (!dev->regs) {
		err = -ENOMEM;
		goto err_release;
	}
	err = qrnic_hw_identify(dev);
	if (err)
		goto err_unmap_regs;

	dev->db_bar_start = pci_resource_start(pdev, QRNIC_BAR_DB);
	dev->db_bar_len = pci_resource_len(pdev, QRNIC_BAR_DB);
	if (dev->db_bar_len < (resource_size_t)dev->num_db_pages * QRNIC_DB_PAGE_SIZE) {
		dev_err(&pdev->dev, "BAR2 is %pa bytes, too small for %u doorbell pages\n",
			&dev->db_bar_len, dev->num_db_pages);
		err = -ENODEV;
		goto err_unmap_regs;
	}
	dev->kdb = ioremap(dev->db_bar_start, QRNIC_DB_PAGE_SIZE);
	if (!dev->kdb) {
		err = -ENOMEM;
		goto err_unmap_regs;
	}

	err = qrnic_irqs_setup(dev);
	if (err)
		goto err_unmap_db;
	for (attempt = 1; ; attempt++) {
		err = qrnic_hw_start(dev);
		if (!err)
			break;
		/* A fatal error (or admin timeout) while bringing it up: again. */
		if (!qrnic_dead(dev) || attempt >= QRNIC_PROBE_ATTEMPTS)
			goto err_irqs;
		dev_warn(&pdev->dev, "fatal error during bring-up (attempt %d of %d): starting again\n",
			 attempt, QRNIC_PROBE_ATTEMPTS);
		clear_bit(QRNIC_FLAG_STOPPED, &dev->flags);	/* no QP yet */
		clear_bit(QRNIC_FLAG_FATAL, &dev->flags);	/* hw_stop reset it */
	}
	err = qrnic_netdev_create(dev);
	if (err)
		goto err_hw;
	err = qrnic_ib_register(dev);
	/* Failed because the device died meanwhile: the recovery work retries. */
	if (err && !qrnic_dead(dev))
		goto err_netdev;
	qrnic_debugfs_add(dev);

	enable_delayed_work(&dev->recovery_work);
	if (qrnic_dead(dev)) {
		dev_warn(&pdev->dev, "fatal error during probe: recovering\n");
		qrnic_queue_recovery(dev, 0);
	}
	if (qrnic_health_poll_ms)
		queue_delayed_work(system_wq, &dev->health_work,
				   msecs_to_jiffies(qrnic_health_poll_ms));

	dev_info(&pdev->dev,
		 "%s: ABI %u.%u fw 0x%x, %s, %pM, MTU %u, %d vectors, %d completion EQs, %u user contexts\n",
		 qrnic_ib_name(dev), dev->version >> 16, dev->version & 0xffff,
		 qrnic_attr(dev, fw_version), netdev_name(dev->ndev), dev->mac, dev->eth_mtu,
		 dev->nvec, dev->num_ceqs, dev->num_db_pages - 1);
	return 0;

err_netdev:
	qrnic_netdev_destroy(dev);
err_hw:
	qrnic_hw_stop(dev);		/* no DMA and no interrupt from here on */
err_irqs:
	qrnic_irqs_teardown(dev);
	qrnic_aq_free(dev);
err_unmap_db:
	iounmap(dev->kdb);
err_unmap_regs:
	pci_iounmap(pdev, dev->regs);
err_release:
	pci_release_mem_regions(pdev);
err_disable:
	pci_disable_device(pdev);
err_free:
	cancel_work_sync(&dev->flush_work);
	xa_destroy(&dev->srqs);
	xa_destroy(&dev->qps);
	xa_destroy(&dev->cqs);
	kfree(dev);
	return err;
}

static void qrnic_remove(struct pci_dev *pdev)
{
	struct qrnic_dev *dev = pci_get_drvdata(pdev);

	/*
	 * No health check and no recovery from here on; a recovery in
	 * progress finishes first.  A fatal error during the teardown below
	 * only marks the device dead (the destroy paths then free host memory
	 * and succeed).
	 */
	disable_delayed_work_sync(&dev->health_work);
	disable_delayed_work_sync(&dev->recovery_work);
	debugfs_remove_recursive(dev->debugfs);
	/* Surprise removal: do not wait for admin timeouts on every destroy. */
	if (!pci_device_is_present(pdev)) {
		set_bit(QRNIC_FLAG_GONE, &dev->flags);
		qrnic_set_fatal(dev, "device no longer present");
	}
	qrnic_ib_unregister(dev);
	qrnic_netdev_destroy(dev);
	qrnic_hw_stop(dev);
	qrnic_irqs_teardown(dev);
	iounmap(dev->kdb);
	pci_iounmap(pdev, dev->regs);
	pci_release_mem_regions(pdev);
	pci_disable_device(pdev);
	cancel_work_sync(&dev->flush_work);
	WARN_ON(!list_empty(&dev->kqps));
	WARN_ON(!xa_empty(&dev->srqs));
	WARN_ON(!xa_empty(&dev->qps));
	WARN_ON(!xa_empty(&dev->cqs));
	xa_destroy(&dev->srqs);
	xa_destroy(&dev->qps);
	xa_destroy(&dev->cqs);
	kfree(dev);
}

/* Reboot and kexec: make sure the device stops DMA into memory. */
static void qrnic_shutdown(struct pci_dev *pdev)
{
	struct qrnic_dev *dev = pci_get_drvdata(pdev);

	if (!dev || !dev->regs)
		return;
	disable_delayed_work_sync(&dev->health_work);
	disable_delayed_work_sync(&dev->recovery_work);
	qrnic_wr(dev, QRNIC_REG_CTRL, QRNIC_CTRL_RESET);
}

static const struct pci_device_id qrnic_pci_ids[] = {
	{ PCI_DEVICE(QRNIC_PCI_VENDOR_ID, QRNIC_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, qrnic_pci_ids);

static struct pci_driver qrnic_pci_driver = {
	.name = QRNIC_DRV_NAME,
	.id_table = qrnic_pci_ids,
	.probe = qrnic_probe,
	.remove = qrnic_remove,
	.shutdown = qrnic_shutdown,
};

static int __init qrnic_init(void)
{
	int err;

	qrnic_wq = alloc_workqueue("qrnic_recovery", WQ_UNBOUND, 0);
	if (!qrnic_wq)
		return -ENOMEM;
	qrnic_debugfs_root = debugfs_create_dir(QRNIC_DRV_NAME, NULL);
	err = pci_register_driver(&qrnic_pci_driver);
	if (err) {
		debugfs_remove_recursive(qrnic_debugfs_root);
		destroy_workqueue(qrnic_wq);
	}
	return err;
}

static void __exit qrnic_exit(void)
{
	pci_unregister_driver(&qrnic_pci_driver);
	debugfs_remove_recursive(qrnic_debugfs_root);
	destroy_workqueue(qrnic_wq);
}

module_init(qrnic_init);
module_exit(qrnic_exit);

MODULE_DESCRIPTION("qrnic RoCEv2 RDMA NIC driver");
MODULE_AUTHOR("qrnic developers");
MODULE_LICENSE("GPL");
MODULE_SOFTDEP("pre: ib_uverbs");
