// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic: PCI probe and remove, device reset, fatal state.
 *
 * Bring-up follows docs/spec.md 5.1: enable the function, check VERSION,
 * reset, read the identity registers, set up MSI-X and the admin queue,
 * enable the device, query it, create the event queues, then the netdev
 * and the ib_device.  Remove and every probe failure unwind in reverse
 * order; the device is reset before any ring it may still use is freed.
 */
#include <linux/debugfs.h>
#include <linux/iopoll.h>
#include <linux/module.h>

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

/*
 * The device is dead: a fatal error was reported or the admin queue stopped
 * answering.  From now on admin commands fail with -EIO and destroy paths
 * only release host resources.  The device is reset right away, which
 * stops all its DMA and interrupts, so that memory freed by those destroy
 * paths can no longer be written by it.  Any context.
 */
void qrnic_set_fatal(struct qrnic_dev *dev, const char *why)
{
	u32 status, code;

	if (test_and_set_bit(QRNIC_FLAG_FATAL, &dev->flags))
		return;

	status = qrnic_rd(dev, QRNIC_REG_STATUS);
	code = qrnic_rd(dev, QRNIC_REG_FATAL_CODE);
	dev->fatal_code = code;
	dev_err(&dev->pdev->dev,
		"device is dead (%s): STATUS 0x%x FATAL_CODE %u; resetting it to stop DMA\n",
		why, status, code);

	qrnic_wr(dev, QRNIC_REG_CTRL, QRNIC_CTRL_RESET);
	qrnic_aq_abort_all(dev);
	if (dev->ndev)
		netif_carrier_off(dev->ndev);

	if (test_bit(QRNIC_FLAG_IB_REGISTERED, &dev->flags)) {
		struct ib_event ev = {
			.device = &dev->ibdev,
			.element.port_num = QRNIC_PORT,
			.event = IB_EVENT_DEVICE_FATAL,
		};

		ib_dispatch_event(&ev);
	}
	/*
	 * TODO(recovery): reset and re-initialise the device here (schedule a
	 * work that re-runs bring-up from the admin queue on and re-creates
	 * the EQs, the GID table and the Ethernet rings; user contexts stay
	 * dead and must be re-opened).  Until then the device stays dead
	 * until the driver is unbound.
	 */
}

/*
 * debugfs: /sys/kernel/debug/qrnic/<pci address>/inject_fatal.  Writing 1
 * declares the device dead as a fatal error would (tests of the fatal
 * path: IB_EVENT_DEVICE_FATAL, destroy paths and unbind on a dead device).
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

static void qrnic_debugfs_add(struct qrnic_dev *dev)
{
	dev->debugfs = debugfs_create_dir(pci_name(dev->pdev), qrnic_debugfs_root);
	debugfs_create_file("inject_fatal", 0200, dev->debugfs, dev, &qrnic_inject_fatal_fops);
	debugfs_create_u32("fatal_code", 0400, dev->debugfs, &dev->fatal_code);
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
	if ((dev->attr.abi_version >> 16) != QRNIC_ABI_MAJOR) {
		dev_err(d, "QUERY_DEVICE reports ABI 0x%x\n", dev->attr.abi_version);
		return -ENODEV;
	}
	if (!dev->attr.gid_tbl_len || dev->attr.max_qp < 4 || dev->attr.max_cq < 2 ||
	    dev->attr.max_pd < 2 || dev->attr.max_eq < 2) {
		dev_err(d, "QUERY_DEVICE reports unusable limits\n");
		return -ENODEV;
	}
	return qrnic_cmd_query_port(dev, &dev->port);
}

static int qrnic_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct qrnic_dev *dev;
	int err;

	if (qrnic_aq_log_depth < 1 || qrnic_aq_log_depth > QRNIC_AQ_MAX_LOG_DEPTH)
		qrnic_aq_log_depth = 6;
	if (qrnic_eth_ring_log < 1 || qrnic_eth_ring_log > 12)
		qrnic_eth_ring_log = 8;

	dev = ib_alloc_device(qrnic_dev, ibdev);
	if (!dev)
		return -ENOMEM;
	dev->pdev = pdev;
	xa_init_flags(&dev->cqs, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->qps, XA_FLAGS_LOCK_IRQ);
	pci_set_drvdata(pdev, dev);

	err = pci_enable_device_mem(pdev);
	if (err)
		goto err_dealloc;
	err = pci_request_mem_regions(pdev, QRNIC_DRV_NAME);
	if (err)
		goto err_disable;
	pci_set_master(pdev);
	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err) {
		dev_err(&pdev->dev, "no usable 64-bit DMA mask\n");
		goto err_release;
	}

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
	err = qrnic_aq_init(dev, qrnic_aq_log_depth);
	if (err)
		goto err_irqs;
	err = qrnic_hw_enable(dev);
	if (err)
		goto err_reset;
	err = qrnic_query_caps(dev);
	if (err)
		goto err_reset;
	err = qrnic_eqs_create(dev);
	if (err)
		goto err_reset;
	err = qrnic_netdev_create(dev);
	if (err)
		goto err_eqs;
	err = qrnic_ib_register(dev);
	if (err)
		goto err_netdev;
	qrnic_debugfs_add(dev);

	dev_info(&pdev->dev,
		 "%s: ABI %u.%u fw 0x%x, %s, %pM, MTU %u, %d vectors, %d completion EQs, %u user contexts\n",
		 dev_name(&dev->ibdev.dev), dev->version >> 16, dev->version & 0xffff,
		 dev->attr.fw_version, netdev_name(dev->ndev), dev->mac, dev->eth_mtu,
		 dev->nvec, dev->num_ceqs, dev->num_db_pages - 1);
	return 0;

err_netdev:
	qrnic_netdev_destroy(dev);
err_eqs:
	qrnic_eqs_destroy(dev);
err_reset:
	qrnic_hw_reset(dev);		/* no DMA and no interrupt from here on */
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
err_dealloc:
	xa_destroy(&dev->qps);
	xa_destroy(&dev->cqs);
	ib_dealloc_device(&dev->ibdev);
	return err;
}

static void qrnic_remove(struct pci_dev *pdev)
{
	struct qrnic_dev *dev = pci_get_drvdata(pdev);

	debugfs_remove_recursive(dev->debugfs);
	/* Surprise removal: do not wait for admin timeouts on every destroy. */
	if (!pci_device_is_present(pdev))
		qrnic_set_fatal(dev, "device no longer present");
	qrnic_ib_unregister(dev);
	qrnic_netdev_destroy(dev);
	qrnic_eqs_destroy(dev);
	qrnic_hw_reset(dev);
	qrnic_irqs_teardown(dev);
	qrnic_aq_free(dev);
	iounmap(dev->kdb);
	pci_iounmap(pdev, dev->regs);
	pci_release_mem_regions(pdev);
	pci_disable_device(pdev);
	WARN_ON(!xa_empty(&dev->qps));
	WARN_ON(!xa_empty(&dev->cqs));
	xa_destroy(&dev->qps);
	xa_destroy(&dev->cqs);
	ib_dealloc_device(&dev->ibdev);
}

/* Reboot and kexec: make sure the device stops DMA into memory. */
static void qrnic_shutdown(struct pci_dev *pdev)
{
	struct qrnic_dev *dev = pci_get_drvdata(pdev);

	if (dev && dev->regs)
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

	qrnic_debugfs_root = debugfs_create_dir(QRNIC_DRV_NAME, NULL);
	err = pci_register_driver(&qrnic_pci_driver);
	if (err)
		debugfs_remove_recursive(qrnic_debugfs_root);
	return err;
}

static void __exit qrnic_exit(void)
{
	pci_unregister_driver(&qrnic_pci_driver);
	debugfs_remove_recursive(qrnic_debugfs_root);
}

module_init(qrnic_init);
module_exit(qrnic_exit);

MODULE_DESCRIPTION("qrnic RoCEv2 RDMA NIC driver");
MODULE_AUTHOR("qrnic developers");
MODULE_LICENSE("GPL");
MODULE_SOFTDEP("pre: ib_uverbs");
