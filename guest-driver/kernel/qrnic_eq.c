// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic interrupts and event queues.
 *
 * MSI-X vector 0 serves the admin queue (QRNIC_AQ_VECTOR).  Vector 1 serves
 * the async EQ, vector 2 the Ethernet rings, and vectors 3.. one completion
 * EQ each (at most one per online CPU, with managed affinity: see
 * qrnic_irqs_setup()); num_comp_vectors is their number.  With fewer vectors
 * they are shared: everything beyond vector 0 then lands on the last vector.  One handler per vector dispatches to
 * whatever the vector serves.
 *
 * EQs are processed in the hard interrupt handler: completion EQEs call
 * the CQ's comp_handler, async EQEs the QP/CQ/SRQ event handlers or
 * ib_dispatch_event().  Objects are looked up in xarrays; destroy paths
 * erase them and then synchronize_irq() the vectors that could still be
 * using them (qrnic_eq_sync()) before they are freed.
 */
#include <linux/dma-mapping.h>
#include <linux/log2.h>

#include "qrnic.h"

#define QRNIC_EQ_MIN_LOG	6

static void qrnic_eq_process(struct qrnic_eq *eq);

static irqreturn_t qrnic_irq_handler(int irq, void *data)
{
	struct qrnic_irq *qi = data;
	struct qrnic_dev *dev = qi->dev;

	if (qi->flags & QRNIC_IRQ_AQ)
		qrnic_aq_process_cq(dev);
	if (qi->flags & QRNIC_IRQ_ASYNC)
		qrnic_eq_process(&dev->async_eq);
	if (qi->ceq)
		qrnic_eq_process(qi->ceq);
	if (qi->flags & QRNIC_IRQ_ETH)
		qrnic_netdev_irq(dev);
	return IRQ_HANDLED;
}

int qrnic_irqs_setup(struct qrnic_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	int want, nvec, i, err;

	want = min_t(int, dev->hw_vectors, 3 + num_online_cpus());
	/*
	 * Completion vectors get managed affinity: the kernel spreads vectors
	 * 3.. over the CPUs (one CPU or a group each), the way blk-mq spreads
	 * a ULP's queues, so a ULP that puts queue i on comp_vector i (nvme-rdma,
	 * svcrdma, iser) takes its completions on the CPU that submitted.  The
	 * first three (admin, async, Ethernet) are left out of the spreading.
	 * With fewer than four vectors there is nothing to spread: they are
	 * shared as before, without affinity.
	 */
	if (want > 3) {
		struct irq_affinity affd = { .pre_vectors = 3 };

		nvec = pci_alloc_irq_vectors_affinity(pdev, 4, want, PCI_IRQ_MSIX | PCI_IRQ_AFFINITY,
						      &affd);
		if (nvec < 0)
			nvec = pci_alloc_irq_vectors(pdev, 1, want, PCI_IRQ_MSIX);
	} else {
		nvec = pci_alloc_irq_vectors(pdev, 1, want, PCI_IRQ_MSIX);
	}
	if (nvec < 0) {
		dev_err(&pdev->dev, "cannot allocate MSI-X vectors: %d\n", nvec);
		return nvec;
	}
	dev->nvec = nvec;

	dev->irqs = kcalloc(nvec, sizeof(*dev->irqs), GFP_KERNEL);
	dev->num_ceqs = nvec > 3 ? nvec - 3 : 1;
	dev->ceqs = kcalloc(dev->num_ceqs, sizeof(*dev->ceqs), GFP_KERNEL);
	if (!dev->irqs || !dev->ceqs) {
		err = -ENOMEM;
		goto err_free;
	}

	dev->irqs[QRNIC_AQ_VECTOR].flags |= QRNIC_IRQ_AQ;
	dev->async_vector = nvec > 1 ? 1 : 0;
	dev->irqs[dev->async_vector].flags |= QRNIC_IRQ_ASYNC;
	dev->eth_vector = nvec > 2 ? 2 : nvec - 1;
	dev->irqs[dev->eth_vector].flags |= QRNIC_IRQ_ETH;
	for (i = 0; i < dev->num_ceqs; i++) {
		int v = nvec > 3 ? 3 + i : nvec - 1;

		dev->ceqs[i].vector = v;
		dev->irqs[v].ceq = &dev->ceqs[i];
	}

	for (i = 0; i < nvec; i++) {
		struct qrnic_irq *qi = &dev->irqs[i];

		qi->dev = dev;
		qi->irq = pci_irq_vector(pdev, i);
		snprintf(qi->name, sizeof(qi->name), "qrnic-%s-%d", pci_name(pdev), i);
		err = request_irq(qi->irq, qrnic_irq_handler, 0, qi->name, qi);
		if (err) {
			dev_err(&pdev->dev, "request_irq for vector %d failed: %d\n", i, err);
			goto err_free;
		}
		qi->requested = true;
	}
	return 0;

err_free:
	qrnic_irqs_teardown(dev);
	return err;
}

void qrnic_irqs_teardown(struct qrnic_dev *dev)
{
	int i;

	if (dev->irqs) {
		for (i = 0; i < dev->nvec; i++)
			if (dev->irqs[i].requested)
				free_irq(dev->irqs[i].irq, &dev->irqs[i]);
	}
	kfree(dev->irqs);
	kfree(dev->ceqs);
	dev->irqs = NULL;
	dev->ceqs = NULL;
	if (dev->nvec > 0)
		pci_free_irq_vectors(dev->pdev);
	dev->nvec = 0;
}

/* Wait until no interrupt handler of the device is running. */
void qrnic_irqs_sync(struct qrnic_dev *dev)
{
	int i;

	if (!dev->irqs)
		return;
	for (i = 0; i < dev->nvec; i++)
		if (dev->irqs[i].requested)
			synchronize_irq(dev->irqs[i].irq);
}

/* Wait until no handler of @eq's vector (and of the async EQ) is running. */
void qrnic_eq_sync(struct qrnic_dev *dev, struct qrnic_eq *eq)
{
	if (eq)
		synchronize_irq(dev->irqs[eq->vector].irq);
	synchronize_irq(dev->irqs[dev->async_vector].irq);
}

static void qrnic_eq_doorbell(struct qrnic_eq *eq, bool arm)
{
	u64 db = (eq->eqn & QRNIC_EQ_DB_EQN_MASK) | ((u64)eq->ci << QRNIC_EQ_DB_CI_SHIFT);

	if (arm)
		db |= QRNIC_EQ_DB_ARM;
	writeq(db, eq->dev->regs + QRNIC_REG_EQ_DB);
}

static void qrnic_handle_async(struct qrnic_dev *dev, const struct qrnic_eqe *e)
{
	u32 handle = le32_to_cpu(e->handle), data = le32_to_cpu(e->data);

	switch (e->subtype) {
	case QRNIC_EV_CQ_ERR:
		qrnic_cq_async_event(dev, handle, IB_EVENT_CQ_ERR);
		break;
	case QRNIC_EV_QP_FATAL:
		qrnic_qp_async_event(dev, handle, IB_EVENT_QP_FATAL);
		break;
	case QRNIC_EV_QP_REQ_ERR:
		qrnic_qp_async_event(dev, handle, IB_EVENT_QP_REQ_ERR);
		break;
	case QRNIC_EV_QP_ACCESS_ERR:
		qrnic_qp_async_event(dev, handle, IB_EVENT_QP_ACCESS_ERR);
		break;
	case QRNIC_EV_COMM_EST:
		qrnic_qp_async_event(dev, handle, IB_EVENT_COMM_EST);
		break;
	case QRNIC_EV_SQ_DRAINED:
		qrnic_qp_async_event(dev, handle, IB_EVENT_SQ_DRAINED);
		break;
	case QRNIC_EV_QP_LAST_WQE_REACHED:
		qrnic_qp_async_event(dev, handle, IB_EVENT_QP_LAST_WQE_REACHED);
		break;
	case QRNIC_EV_SRQ_LIMIT_REACHED:
		qrnic_srq_async_event(dev, handle, IB_EVENT_SRQ_LIMIT_REACHED);
		break;
	case QRNIC_EV_DEVICE_FATAL:
		dev_err(&dev->pdev->dev, "async event DEVICE_FATAL, code %u\n", data);
		qrnic_set_fatal(dev, "device reported a fatal error");
		break;
	case QRNIC_EV_PORT_ACTIVE:
		qrnic_netdev_link_event(dev, true);
		break;
	case QRNIC_EV_PORT_ERR:
		qrnic_netdev_link_event(dev, false);
		break;
	default:
		dev_warn_ratelimited(&dev->pdev->dev,
				     "unknown async event %u (handle %u data %u)\n",
				     e->subtype, handle, data);
		break;
	}
}

static void qrnic_eq_process(struct qrnic_eq *eq)
{
	struct qrnic_dev *dev = eq->dev;
	u32 mask, n = 0;

	if (!READ_ONCE(eq->active))
		return;
	mask = (1U << eq->log_depth) - 1;

	for (;;) {
		const struct qrnic_eqe *e = &eq->ring[eq->ci & mask];
		u8 phase = ((eq->ci >> eq->log_depth) & 1) ^ 1;

		if ((READ_ONCE(e->owner) & 1) != phase)
			break;
		dma_rmb();	/* owner before the rest of the entry */

		if (e->type == QRNIC_EQE_COMPLETION)
			qrnic_cq_comp_event(dev, le32_to_cpu(e->handle));
		else if (e->type == QRNIC_EQE_ASYNC)
			qrnic_handle_async(dev, e);
		else
			dev_warn_ratelimited(&dev->pdev->dev, "EQ %u: unknown EQE type %u\n",
					     eq->eqn, e->type);
		eq->ci++;
		/* Free slots now and then in long bursts so the EQ never fills. */
		if (++n == (mask + 1) / 2) {
			qrnic_eq_doorbell(eq, false);
			n = 0;
		}
	}
	/* Arming with unconsumed EQEs fires at once, so nothing is missed. */
	qrnic_eq_doorbell(eq, true);
}

static int qrnic_eq_create(struct qrnic_dev *dev, struct qrnic_eq *eq,
			   u32 log_depth, bool async)
{
	struct device *dmadev = &dev->pdev->dev;
	int err;

	eq->dev = dev;
	eq->async = async;
	eq->log_depth = log_depth;
	eq->ci = 0;
	eq->ring_bytes = PAGE_ALIGN(sizeof(struct qrnic_eqe) << log_depth);
	eq->ring = dma_alloc_coherent(dmadev, eq->ring_bytes, &eq->ring_dma, GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;

	err = qrnic_cmd_create_eq(dev, log_depth, eq->vector,
				  async ? QRNIC_EQ_F_ASYNC : 0, eq->ring_dma, &eq->eqn);
	if (err) {
		dma_free_coherent(dmadev, eq->ring_bytes, eq->ring, eq->ring_dma);
		eq->ring = NULL;
		return err;
	}
	/* Publish to the interrupt handler, then arm. */
	smp_store_release(&eq->active, true);
	qrnic_eq_doorbell(eq, true);
	return 0;
}

static void qrnic_eq_destroy(struct qrnic_dev *dev, struct qrnic_eq *eq)
{
	int err;

	if (!eq->ring)
		return;
	if (eq->active) {
		err = qrnic_cmd_destroy_eq(dev, eq->eqn);
		/* The ring is freed below: the device must not keep writing it. */
		if (err && !qrnic_dead(dev))
			qrnic_set_fatal(dev, "DESTROY_EQ failed");
		WRITE_ONCE(eq->active, false);
		if (dev->irqs)
			synchronize_irq(dev->irqs[eq->vector].irq);
	}
	dma_free_coherent(&dev->pdev->dev, eq->ring_bytes, eq->ring, eq->ring_dma);
	eq->ring = NULL;
}

static u32 qrnic_eq_log(u32 entries)
{
	u32 log = order_base_2(max_t(u32, entries, 1));

	return clamp_t(u32, log, QRNIC_EQ_MIN_LOG, QRNIC_MAX_QUEUE_LOG);
}

int qrnic_eqs_create(struct qrnic_dev *dev)
{
	u32 max_cq = qrnic_attr(dev, max_cq), max_qp = qrnic_attr(dev, max_qp);
	int i, err;

	/* eqn 1..max_eq-1: one async EQ, the rest for completions */
	dev->num_ceqs = min_t(int, dev->num_ceqs, qrnic_attr(dev, max_eq) - 2);
	if (dev->num_ceqs < 1) {
		dev_err(&dev->pdev->dev, "device allows only %u EQs\n", qrnic_attr(dev, max_eq));
		return -ENODEV;
	}

	/*
	 * Size the EQs so that they cannot overflow (docs/spec.md 7.4): one
	 * completion EQE per armed CQ, and on the async EQ one CQ_ERR per CQ,
	 * a few events per QP, plus port and device events.
	 */
	dev->async_eq.vector = dev->async_vector;
	err = qrnic_eq_create(dev, &dev->async_eq, qrnic_eq_log(max_cq + 2 * max_qp + 64),
			      true);
	if (err) {
		dev_err(&dev->pdev->dev, "cannot create the async EQ: %d\n", err);
		return err;
	}
	for (i = 0; i < dev->num_ceqs; i++) {
		err = qrnic_eq_create(dev, &dev->ceqs[i], qrnic_eq_log(max_cq), false);
		if (err) {
			dev_err(&dev->pdev->dev, "cannot create completion EQ %d: %d\n", i, err);
			goto err_destroy;
		}
	}
	return 0;

err_destroy:
	while (--i >= 0)
		qrnic_eq_destroy(dev, &dev->ceqs[i]);
	qrnic_eq_destroy(dev, &dev->async_eq);
	return err;
}

void qrnic_eqs_destroy(struct qrnic_dev *dev)
{
	int i;

	for (i = dev->num_ceqs - 1; i >= 0; i--)
		if (dev->ceqs)
			qrnic_eq_destroy(dev, &dev->ceqs[i]);
	qrnic_eq_destroy(dev, &dev->async_eq);
}
