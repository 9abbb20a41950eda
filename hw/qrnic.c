/*
 * qrnic: a RoCEv2 RDMA NIC model, PCI Express glue.
 *
 * The device itself lives in model/ and firmware/ (QEMU-free C).  This file
 * only connects it to QEMU: BARs, MSI-X, DMA through the PCI address space
 * (so an IOMMU is honoured), the net layer, a virtual-clock timer, a bottom
 * half in which all device work runs, properties and trace events.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "system/system.h"
#include "trace.h"

#include "qrnic_model.h"

#define TYPE_QRNIC "qrnic"
OBJECT_DECLARE_SIMPLE_TYPE(QrnicState, QRNIC)

struct QrnicState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion db;
    NICState *nic;
    NICConf conf;
    QEMUBH *bh;
    QEMUTimer *timer;

    struct qrnic_config cfg;
    struct qrnic_dev *dev;
    char *profile;
    uint32_t max_qp, max_cq, max_mr, max_pd, max_ah, max_eq, max_uctx;
    uint32_t max_qp_wr, max_cqe, max_mtt, num_vectors, mtu, gid_tbl_len;
    uint64_t max_mr_size;
};

/* ---- host operations for the model ----------------------------------------- */
static int qrnic_host_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    QrnicState *s = opaque;

    if (pci_dma_read(PCI_DEVICE(s), addr, buf, len) != MEMTX_OK) {
        trace_qrnic_err_dma(addr, len, 0);
        return -1;
    }
    return 0;
}

static int qrnic_host_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
    QrnicState *s = opaque;

    if (pci_dma_write(PCI_DEVICE(s), addr, buf, len) != MEMTX_OK) {
        trace_qrnic_err_dma(addr, len, 1);
        return -1;
    }
    return 0;
}

static void qrnic_host_irq(void *opaque, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(opaque);

    if (msix_enabled(pdev) && vector < msix_nr_vectors_allocated(pdev)) {
        trace_qrnic_irq(vector);
        msix_notify(pdev, vector);
    } else {
        trace_qrnic_ub_irq_no_msix(vector);
    }
}

static void qrnic_host_tx(void *opaque, const uint8_t *frame, size_t len)
{
    QrnicState *s = opaque;

    trace_qrnic_tx(len);
    qemu_send_packet(qemu_get_queue(s->nic), frame, len);
}

static uint64_t qrnic_host_now(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static void qrnic_host_timer_arm(void *opaque, uint64_t deadline)
{
    QrnicState *s = opaque;

    if (deadline == UINT64_MAX) {
        timer_del(s->timer);
    } else {
        timer_mod(s->timer, deadline > INT64_MAX ? INT64_MAX : (int64_t)deadline);
    }
}

static void qrnic_host_schedule(void *opaque)
{
    QrnicState *s = opaque;

    qemu_bh_schedule(s->bh);
}

static void qrnic_host_log(void *opaque, enum qrnic_log_level level, const char *msg)
{
    switch (level) {
    case QRNIC_LOG_GUEST_ERROR:
        trace_qrnic_err_guest(msg);
        qemu_log_mask(LOG_GUEST_ERROR, "%s\n", msg);
        break;
    case QRNIC_LOG_UNIMP:
        trace_qrnic_ub_unimp(msg);
        qemu_log_mask(LOG_UNIMP, "%s\n", msg);
        break;
    default:
        trace_qrnic_info(msg);
        break;
    }
}

static void qrnic_host_trace(void *opaque, const struct qrnic_trace_ev *ev)
{
    trace_qrnic_event(qrnic_trace_name(ev->type), ev->t_ns, ev->qpn, ev->psn,
                      ev->a, ev->b, ev->addr);
}

static const struct qrnic_host_ops qrnic_host_ops = {
    .dma_read = qrnic_host_dma_read,
    .dma_write = qrnic_host_dma_write,
    .irq = qrnic_host_irq,
    .tx_frame = qrnic_host_tx,
    .now_ns = qrnic_host_now,
    .timer_arm = qrnic_host_timer_arm,
    .schedule = qrnic_host_schedule,
    .log = qrnic_host_log,
    .trace = qrnic_host_trace,
};

/* ---- work ------------------------------------------------------------------- */
static void qrnic_bh(void *opaque)
{
    QrnicState *s = opaque;

    qrnic_dev_run(s->dev);
}

static void qrnic_timer_cb(void *opaque)
{
    QrnicState *s = opaque;

    qrnic_dev_timer_fire(s->dev);
}

/* ---- BARs --------------------------------------------------------------------- */
static uint64_t qrnic_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    QrnicState *s = opaque;
    uint64_t val = qrnic_dev_reg_read(s->dev, addr, size);

    trace_qrnic_mmio_read(addr, size, val);
    return val;
}

static void qrnic_regs_write(void *opaque, hwaddr addr, uint64_t val, unsigned size)
{
    QrnicState *s = opaque;

    trace_qrnic_mmio_write(addr, size, val);
    qrnic_dev_reg_write(s->dev, addr, val, size);
}

static const MemoryRegionOps qrnic_regs_ops = {
    .read = qrnic_regs_read,
    .write = qrnic_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

static uint64_t qrnic_db_read(void *opaque, hwaddr addr, unsigned size)
{
    QrnicState *s = opaque;

    return qrnic_dev_db_read(s->dev, addr, size);
}

static void qrnic_db_write(void *opaque, hwaddr addr, uint64_t val, unsigned size)
{
    QrnicState *s = opaque;

    trace_qrnic_db_write(addr, size, val);
    qrnic_dev_db_write(s->dev, addr, val, size);
}

static const MemoryRegionOps qrnic_db_ops = {
    .read = qrnic_db_read,
    .write = qrnic_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* ---- net ---------------------------------------------------------------------- */
static ssize_t qrnic_nc_receive(NetClientState *nc, const uint8_t *buf, size_t size)
{
    QrnicState *s = qemu_get_nic_opaque(nc);

    trace_qrnic_rx(size);
    qrnic_dev_rx_frame(s->dev, buf, size);
    return size;    /* a full device queue drops, as a real port would */
}

static void qrnic_nc_link_status_changed(NetClientState *nc)
{
    QrnicState *s = qemu_get_nic_opaque(nc);

    qrnic_dev_set_link(s->dev, !nc->link_down);
}

static NetClientInfo qrnic_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .receive = qrnic_nc_receive,
    .link_status_changed = qrnic_nc_link_status_changed,
};

/* ---- realize ------------------------------------------------------------------ */
/*
 * qrnic_config_check() names struct qrnic_config fields; say which -device
 * property the user has to change instead.
 */
static const struct {
    const char *field, *prop;
} qrnic_prop_names[] = {
    { "eth_mtu", "mtu" }, { "max_qp_wr", "max-qp-wr" }, { "max_qp", "max-qp" },
    { "max_cqe", "max-cqe" }, { "max_cq", "max-cq" }, { "max_mr_size", "max-mr-size" },
    { "max_mr", "max-mr" }, { "max_pd", "max-pd" }, { "max_ah", "max-ah" },
    { "max_eq", "max-eq" }, { "max_uctx", "max-uctx" }, { "max_mtt", "max-mtt" },
    { "num_vectors", "num-vectors" }, { "gid_tbl_len", "gid-table-len" }, { "mac", "mac" },
};

static const char *qrnic_prop_of(const char *err)
{
    for (size_t i = 0; i < ARRAY_SIZE(qrnic_prop_names); i++) {
        size_t n = strlen(qrnic_prop_names[i].field);

        if (strncmp(err, qrnic_prop_names[i].field, n) == 0 &&
            strncmp(err + n, " must be", 8) == 0) {
            return qrnic_prop_names[i].prop;
        }
    }
    return NULL;
}

static void qrnic_realize(PCIDevice *pdev, Error **errp)
{
    QrnicState *s = QRNIC(pdev);
    struct qrnic_config *c = &s->cfg;
    char err[160];
    uint64_t db_size;
    int ret;

    if (s->profile && strcmp(s->profile, "functional") != 0) {
        error_setg(errp, "qrnic: unknown timing profile '%s' (available: functional)",
                   s->profile);
        return;
    }
    qrnic_config_defaults(c);
    /* Like every QEMU NIC: no mac= gives a unique 52:54:00:12:34:xx address. */
    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    memcpy(c->mac, s->conf.macaddr.a, 6);
    c->max_qp = s->max_qp;
    c->max_cq = s->max_cq;
    c->max_mr = s->max_mr;
    c->max_pd = s->max_pd;
    c->max_ah = s->max_ah;
    c->max_eq = s->max_eq;
    c->max_uctx = s->max_uctx;
    c->max_qp_wr = s->max_qp_wr;
    c->max_cqe = s->max_cqe;
    c->max_mtt = s->max_mtt;
    c->max_mr_size = s->max_mr_size;
    c->num_vectors = s->num_vectors;
    c->eth_mtu = s->mtu;
    c->gid_tbl_len = s->gid_tbl_len;
    if (qrnic_config_check(c, err, sizeof(err)) != 0) {
        const char *prop = qrnic_prop_of(err);

        if (prop) {
            error_setg(errp, "qrnic: invalid property '%s': %s", prop, err);
        } else {
            error_setg(errp, "qrnic: invalid configuration: %s", err);
        }
        return;
    }
    if (c->num_vectors > 2048) {
        error_setg(errp, "qrnic: num-vectors must be at most 2048");
        return;
    }

    s->dev = qrnic_dev_new(c, &qrnic_host_ops, s);
    if (!s->dev) {
        error_setg(errp, "qrnic: cannot allocate the device model");
        return;
    }

    pci_config_set_vendor_id(pdev->config, QRNIC_PCI_VENDOR_ID);
    pci_config_set_device_id(pdev->config, QRNIC_PCI_DEVICE_ID);
    pci_config_set_revision(pdev->config, QRNIC_PCI_REVISION);
    pci_config_set_class(pdev->config, QRNIC_PCI_CLASS >> 8);
    pci_set_word(pdev->config + PCI_SUBSYSTEM_VENDOR_ID, QRNIC_PCI_SUBSYS_VENDOR_ID);
    pci_set_word(pdev->config + PCI_SUBSYSTEM_ID, QRNIC_PCI_SUBSYS_ID);
    pdev->config[PCI_INTERRUPT_PIN] = 0;

    memory_region_init_io(&s->regs, OBJECT(s), &qrnic_regs_ops, s, "qrnic-regs",
                          QRNIC_BAR_REGS_SIZE);
    pci_register_bar(pdev, QRNIC_BAR_REGS,
                     PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64, &s->regs);
    db_size = pow2ceil((uint64_t)c->max_uctx * QRNIC_DB_PAGE_SIZE);
    memory_region_init_io(&s->db, OBJECT(s), &qrnic_db_ops, s, "qrnic-doorbells", db_size);
    pci_register_bar(pdev, QRNIC_BAR_DB,
                     PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64, &s->db);

    ret = msix_init_exclusive_bar(pdev, c->num_vectors, QRNIC_BAR_MSIX, errp);
    if (ret) {
        goto fail;
    }
    for (unsigned i = 0; i < c->num_vectors; i++) {
        msix_vector_use(pdev, i);
    }
    if (pcie_endpoint_cap_init(pdev, 0x80) < 0) {
        error_setg(errp, "qrnic: cannot add the PCI Express capability");
        goto fail_msix;
    }

    s->bh = qemu_bh_new_guarded(qrnic_bh, s, &DEVICE(pdev)->mem_reentrancy_guard);
    s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, qrnic_timer_cb, s);
    s->nic = qemu_new_nic(&qrnic_net_info, &s->conf, object_get_typename(OBJECT(s)),
                          DEVICE(pdev)->id, &DEVICE(pdev)->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    return;

fail_msix:
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
fail:
    qrnic_dev_free(s->dev);
    s->dev = NULL;
}

static void qrnic_exit(PCIDevice *pdev)
{
    QrnicState *s = QRNIC(pdev);

    qemu_del_nic(s->nic);
    timer_free(s->timer);
    qemu_bh_delete(s->bh);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
    qrnic_dev_free(s->dev);
    s->dev = NULL;
}

static void qrnic_reset_hold(Object *obj, ResetType type)
{
    QrnicState *s = QRNIC(obj);

    trace_qrnic_reset();
    if (s->dev) {
        qrnic_dev_reset(s->dev);
    }
    timer_del(s->timer);
}

/*
 * Migration is blocked: QPs with packets in flight, the MTT and the
 * transport timers are not described in VMState yet.  docs/qemu.md says so.
 */
static const VMStateDescription qrnic_vmstate = {
    .name = "qrnic",
    .unmigratable = 1,
};

static const Property qrnic_properties[] = {
    DEFINE_NIC_PROPERTIES(QrnicState, conf),
    DEFINE_PROP_STRING("profile", QrnicState, profile),
    DEFINE_PROP_UINT32("max-qp", QrnicState, max_qp, 1024),
    DEFINE_PROP_UINT32("max-qp-wr", QrnicState, max_qp_wr, 8192),
    DEFINE_PROP_UINT32("max-cq", QrnicState, max_cq, 1024),
    DEFINE_PROP_UINT32("max-cqe", QrnicState, max_cqe, 32768),
    DEFINE_PROP_UINT32("max-mr", QrnicState, max_mr, 4096),
    DEFINE_PROP_UINT64("max-mr-size", QrnicState, max_mr_size, 1ull << 32),
    DEFINE_PROP_UINT32("max-mtt", QrnicState, max_mtt, 1u << 20),
    DEFINE_PROP_UINT32("max-pd", QrnicState, max_pd, 1024),
    DEFINE_PROP_UINT32("max-ah", QrnicState, max_ah, 1024),
    DEFINE_PROP_UINT32("max-eq", QrnicState, max_eq, 64),
    DEFINE_PROP_UINT32("max-uctx", QrnicState, max_uctx, 64),
    DEFINE_PROP_UINT32("num-vectors", QrnicState, num_vectors, 8),
    DEFINE_PROP_UINT32("gid-table-len", QrnicState, gid_tbl_len, 16),
    DEFINE_PROP_UINT32("mtu", QrnicState, mtu, 4200),
};

static void qrnic_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    k->realize = qrnic_realize;
    k->exit = qrnic_exit;
    k->vendor_id = QRNIC_PCI_VENDOR_ID;
    k->device_id = QRNIC_PCI_DEVICE_ID;
    k->revision = QRNIC_PCI_REVISION;
    k->class_id = QRNIC_PCI_CLASS >> 8;
    k->subsystem_vendor_id = QRNIC_PCI_SUBSYS_VENDOR_ID;
    k->subsystem_id = QRNIC_PCI_SUBSYS_ID;
    rc->phases.hold = qrnic_reset_hold;
    dc->desc = "qrnic RoCEv2 RDMA NIC (software model)";
    dc->vmsd = &qrnic_vmstate;
    device_class_set_props(dc, qrnic_properties);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static void qrnic_instance_init(Object *obj)
{
    QrnicState *s = QRNIC(obj);

    device_add_bootindex_property(obj, &s->conf.bootindex, "bootindex",
                                  "/ethernet-phy@0", DEVICE(obj));
}

static const TypeInfo qrnic_info = {
    .name = TYPE_QRNIC,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(QrnicState),
    .class_init = qrnic_class_init,
    .instance_init = qrnic_instance_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void qrnic_register_types(void)
{
    type_register_static(&qrnic_info);
}

type_init(qrnic_register_types)
