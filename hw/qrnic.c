/*
 * qrnic: a RoCEv2 RDMA NIC model, PCI Express glue.
 *
 * The device itself lives in model/ and firmware/ (QEMU-free C).  This file
 * only connects it to QEMU: BARs, MSI-X, DMA through the PCI address space
 * (so an IOMMU is honoured), the net layer, virtual-clock timers and a
 * bottom half in which all device work runs (without the BQL: unlocked-run,
 * docs/qemu.md section 13, in hw/qrnic_run.c), properties and trace events, and
 * the QOM/QMP side of the timing model, its counters and fault injection
 * (docs/qemu.md sections 3 and 11, docs/faults.md section 11), and the
 * port capture pcap=FILE (docs/qemu.md section 12).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "migration/qemu-file-types.h"
#include "net/net.h"
#include "system/cpu-timers.h"
#include "system/runstate.h"
#include "system/system.h"
#include "system/qtest.h"
#include "trace.h"
#include "trace/control.h"

#include "qrnic.h"
#include "qrnic_model.h"
#include "qrnic_firmware.h"
#include "qrnic_pcap.h"
#include "qrnic_fault.h"
#include "qrnic_timing.h"

/* Offsets of the timing properties, in QRNIC_TIMING_PARAMS order. */
static const size_t qrnic_tm_offsets[] = {
#define QRNIC_TM_OFF(n, doc) offsetof(QrnicState, tm_props.n),
    QRNIC_TIMING_PARAMS(QRNIC_TM_OFF)
#undef QRNIC_TM_OFF
};
#define QRNIC_TM_NPARAMS ARRAY_SIZE(qrnic_tm_offsets)

static uint32_t *qrnic_tm_prop(QrnicState *s, unsigned i)
{
    return (uint32_t *)((char *)s + qrnic_tm_offsets[i]);
}

/* ---- host operations for the model ----------------------------------------- */
/* &s->parent_obj rather than PCI_DEVICE(s) on the data path: the checked QOM
 * cast took ~1% of a 1 MiB WRITE stream (perf, issue 23). */
static int qrnic_host_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    QrnicState *s = opaque;

    if (pci_dma_read(&s->parent_obj, addr, buf, len) != MEMTX_OK) {
        trace_qrnic_err_dma(addr, len, 0);
        return -1;
    }
    return 0;
}

/*
 * The bottom half runs the model in one RCU read-side section
 * (qrnic_bh_work, qrnic_bh), as virtio-net's receive does: each DMA's own
 * section (address_space_rw's) is then nested, and leaving a nested
 * section needs no memory barrier.  The outermost rcu_read_unlock() does
 * a full one (smp_mb, QEMU built without membarrier), which waits until
 * the stores of the copy just made have drained: 9.7 % of a T1 1 MiB
 * WRITE stream's main loop went there, once per 4 KiB packet written
 * (perf, issue 23).  A run's RCU section is bounded by its budget, and
 * QEMU itself holds one while an MMIO handler a DMA reaches runs.
 */
static int qrnic_host_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
    QrnicState *s = opaque;

    if (pci_dma_write(&s->parent_obj, addr, buf, len) != MEMTX_OK) {
        trace_qrnic_err_dma(addr, len, 1);
        return -1;
    }
    return 0;
}

/*
 * The payload of a frame by reference (issue 23, docs/timing.md 5.6): for a
 * frame that only qrnic ports of this QEMU read (the lazy ICRC's condition,
 * qrnic_net_walk; every other reader fills the frame first), the
 * sending model maps the guest memory of the payload instead of copying it
 * into the frame, and the port that takes the frame copies it from there
 * into its own guest memory: one copy per payload instead of two.  Only
 * when the whole range maps directly (guest RAM); MMIO, an IOMMU fault or
 * a range leaving the region give NULL, and the model reads the bytes
 * with dma_read as before (reporting any error).  A mapping holds a
 * reference on the RAM region and goes with the frame buffer: the model
 * passes it back (qrnic_host_dma_unmap) exactly once, when the bytes are
 * copied (qrnic_frame_buf_fill, the taker's DMA write) or the buffer is
 * freed -- under the BQL or in a run without it, which excludes every other
 * entry into a qrnic model (qrnic_run_unlocked).  Process-wide counts of both:
 * QOM "dma-maps".
 */
static struct {
    uint64_t map, unmap;
    uint64_t cached;            /* of map, translated by a device's map_cache */
} qrnic_dma_maps;

/*
 * The guest RAM regions with mappings held: one reference on each
 * (memory_region_ref, as address_space_map takes per mapping) while any
 * mapping of it is out, and its host range, so that a mapping goes back
 * without a lookup of the pointer (memory_region_from_host).  What
 * address_space_map/_unmap do for RAM, without their per-call costs (a
 * second translation, the reference and the lookup per frame: together
 * as much as the copy saved, perf of bench/qemu_write_bw).
 */
static struct {
    MemoryRegion *mr;
    const uint8_t *host;        /* memory_region_get_ram_ptr(mr) */
    uint64_t size;
    uint64_t held;              /* mappings out; 0: the slot is free */
} qrnic_map_regions[8];

/*
 * The translation cache of payload mappings (s->map_cache): a sender maps
 * each packet's payload, 4 KiB after 4 KiB of the same guest RAM, and the
 * translation (address_space_translate through the bus-master alias) was
 * about as costly as the mapping's own bookkeeping (perf of a T1 1 MiB
 * WRITE stream, issue 23).  One translation is asked for the whole rest of
 * its section and kept; the next mappings inside it only add the offset.
 * It is dropped by any commit of the memory topology (a map change, bus
 * mastering turned off: map_listener), as virtio drops its ring caches;
 * read and filled only by the thread running the model, inside the RCU
 * section the translation was valid in.  With an IOMMU there is none.
 */
static void qrnic_map_commit(MemoryListener *listener)
{
    QrnicState *s = container_of(listener, QrnicState, map_listener);

    qatomic_inc(&s->map_gen);
}

static MemoryRegion *qrnic_map_translate(QrnicState *s, uint64_t addr, size_t len,
                                         hwaddr *xlat)
{
    AddressSpace *as = pci_get_address_space(&s->parent_obj);
    uint64_t gen = qatomic_read(&s->map_gen);
    hwaddr l;
    MemoryRegion *mr;

    if (s->map_cache.len && s->map_cache.gen == gen && addr >= s->map_cache.base &&
        addr - s->map_cache.base < s->map_cache.len &&
        len <= s->map_cache.len - (addr - s->map_cache.base)) {
        qrnic_dma_maps.cached++;
        *xlat = s->map_cache.xlat + (addr - s->map_cache.base);
        return s->map_cache.mr;
    }
    l = s->map_cacheable ? UINT64_MAX - addr : len;
    mr = address_space_translate(as, addr, xlat, &l, false, MEMTXATTRS_UNSPECIFIED);
    if (l < len || !memory_access_is_direct(mr, false, MEMTXATTRS_UNSPECIFIED)) {
        return NULL;
    }
    if (s->map_cacheable) {
        s->map_cache.gen = gen;     /* read before the translation */
        s->map_cache.base = addr;
        s->map_cache.len = l;
        s->map_cache.mr = mr;
        s->map_cache.xlat = *xlat;
    }
    return mr;
}

static const void *qrnic_host_dma_map(void *opaque, uint64_t addr, size_t len)
{
    QrnicState *s = opaque;
    hwaddr xlat;
    MemoryRegion *mr;
    int slot = -1;

    /* RAM only, whole: anything else (MMIO, an IOMMU fault, a range that
     * leaves the region) goes through dma_read, which reports errors;
     * address_space_map would read MMIO into a bounce buffer, a read
     * with side effects that dma_read would then do again */
    if (addr + len < addr) {
        return NULL;
    }
    RCU_READ_LOCK_GUARD();
    mr = qrnic_map_translate(s, addr, len, &xlat);
    if (!mr) {
        return NULL;
    }
    for (int i = 0; i < (int)ARRAY_SIZE(qrnic_map_regions); i++) {
        if (qrnic_map_regions[i].held && qrnic_map_regions[i].mr == mr) {
            slot = i;
            break;
        }
        if (!qrnic_map_regions[i].held && slot < 0) {
            slot = i;
        }
    }
    if (slot < 0) {             /* mappings of 8 regions out: copy this one */
        return NULL;
    }
    if (!qrnic_map_regions[slot].held) {
        memory_region_ref(mr);
        qrnic_map_regions[slot].mr = mr;
        qrnic_map_regions[slot].host = memory_region_get_ram_ptr(mr);
        qrnic_map_regions[slot].size = memory_region_size(mr);
    }
    qrnic_map_regions[slot].held++;
    qrnic_dma_maps.map++;
    return qrnic_map_regions[slot].host + xlat;
}

/* Needs no device: the one that mapped it may be gone. */
static void qrnic_host_dma_unmap(const void *ptr, size_t len)
{
    const uint8_t *p = ptr;

    for (size_t i = 0; i < ARRAY_SIZE(qrnic_map_regions); i++) {
        if (qrnic_map_regions[i].held && p >= qrnic_map_regions[i].host &&
            p - qrnic_map_regions[i].host < qrnic_map_regions[i].size) {
            qrnic_dma_maps.unmap++;
            if (!--qrnic_map_regions[i].held) {
                memory_region_unref(qrnic_map_regions[i].mr);
            }
            return;
        }
    }
    error_report("qrnic: payload mapping %p+%zu released but not held", ptr, len);
}

void qrnic_host_irq(void *opaque, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(opaque);
    QrnicState *s = opaque;

    if (s->defer) {             /* vector < num_vectors: the model checks */
        set_bit(vector, s->irq_pending);
        return;
    }

    if (msix_enabled(pdev) && vector < msix_nr_vectors_allocated(pdev)) {
        trace_qrnic_irq(vector);
        msix_notify(pdev, vector);
    } else {
        trace_qrnic_ub_irq_no_msix(vector);
    }
}

/* ---- pcap=FILE --------------------------------------------------------------- */
/*
 * A nanosecond pcap, link type 1 (Ethernet), by the model's writer
 * (model/qrnic_pcap.h: one writev() per frame, nothing buffered), stamped
 * with QEMU_CLOCK_VIRTUAL: the same clock as the t= of the qrnic_event
 * trace.  QEMU creates the file, so the usual file names (/dev/fdset/N
 * included) and messages apply.
 */
static bool qrnic_capture_open(QrnicState *s, Error **errp)
{
    Error *local_err = NULL;
    char err[256];
    int fd;

    s->pcap = NULL;
    if (!s->pcap_path || !*s->pcap_path) {
        return true;
    }
    fd = qemu_create(s->pcap_path, O_WRONLY | O_TRUNC | O_BINARY, 0644, &local_err);
    if (fd < 0) {
        /* "qrnic: pcap: Could not create 'FILE': No such file or directory" */
        error_propagate_prepend(errp, local_err, "qrnic: pcap: ");
        return false;
    }
    s->pcap = qrnic_pcap_open_fd(fd, s->pcap_path, true, err, sizeof(err));
    if (!s->pcap) {
        error_setg(errp, "qrnic: pcap: %s", err);
        return false;
    }
    return true;
}

static void qrnic_capture_close(QrnicState *s)
{
    qrnic_pcap_close(s->pcap);
    s->pcap = NULL;
}

void qrnic_capture_frame_to(QrnicState *s, const uint8_t *frame, size_t len)
{
    char err[256];

    if (qrnic_pcap_write(s->pcap, frame, len,
                         s->cap_ts ? s->cap_ts : qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL),
                         err, sizeof(err))) {
        error_report("qrnic: pcap: %s - capture stopped after %" PRIu64 " frames", err,
                     qrnic_pcap_frames(s->pcap));
        qrnic_capture_close(s);
    }
}

/*
 * Frames between qrnic ports of one QEMU without a copy (issue 23).  The
 * model builds each frame in a frame buffer (qrnic_frame_buf_alloc) and
 * hands it over (ops->tx_frame_buf).  It goes through QEMU's net layer as
 * usual (qemu_send_packet: hubs, filters, queues all see the same bytes),
 * and a qrnic port that receives that very buffer, synchronously, as the
 * first qrnic port to do so and addressed to its MAC (on a hub of more
 * ports the others get the frame too), takes it (qrnic_nc_receive)
 * instead of copying it: once the send has returned -- nothing in the net
 * layer holds the pointer any more (a queue that keeps a frame keeps its
 * own copy) -- the buffer goes to the taker's model, else it is freed.
 * The bytes are the sender's own (no filter or capture changes them), so
 * the taker does not check the ICRC the sender has just computed over
 * them (qrnic_dev_rx_frame_buf_vouched; a fault plan on the sender turns
 * the hand-over off, one on the taker the skip).  Anything else on the
 * way (a hub's other ports, a non-qrnic peer, a dgram socket) reads or
 * copies the bytes while the send runs, as before.  All under the BQL,
 * like every net callback.
 */
static struct {
    uint8_t *buf;               /* the frame being sent, or NULL */
    size_t len;
    QrnicState *from, *taker;
    unsigned receiving;         /* depth of qrnic_nc_receive calls */
} qrnic_handoff;

static NetClientInfo qrnic_net_info;
static ssize_t qrnic_nc_receive(NetClientState *nc, const uint8_t *buf, size_t size);

/* A qrnic port is about to read (or a net queue to copy) the frame being
 * handed over: its ICRC, if still unwritten, is computed now. */
static void qrnic_handoff_fill(const uint8_t *buf)
{
    if (buf && buf == qrnic_handoff.buf) {
        qrnic_frame_buf_fill(qrnic_handoff.buf);
    }
}

/*
 * One walk of QEMU's net clients for each frame a qrnic port sends at the
 * top (not from inside a receive): netdevs and filters may be added at any
 * time, and there are a few to walk.  It answers two questions.
 *
 * Whether only qrnic ports of this process can read the frame
 * (*only_qrnic): every net client is a qrnic port, a hub port whose peer
 * is one (or none), or a NIC without a peer, and no filter is attached
 * anywhere (filter-dump, replay, COLO...), the VM runs and no client's
 * receive is disabled (else QEMU's net queues copy frames without
 * asking).  Then the model's lazy ICRC (qrnic_dev_set_lazy_icrc) may stay
 * unwritten while the frame is sent, and with it the headers, by
 * description (the taker reads the destination MAC from it,
 * qrnic_frame_buf_dmac, and the packet as parsed): each qrnic port that
 * reads the bytes -- one not addressed, one whose queue is full (the net
 * queue would keep a copy), one with a capture or fault plan, the model
 * for a snapshot -- has the ICRC computed first (qrnic_frame_buf_fill),
 * and a taker (the hand-over) never reads it.  Deleted netdevs still
 * peered with a NIC are not on the list, hence "a NIC other than qrnic
 * has no peer".
 *
 * The hub's shortcut (the return value, issue 23).  On a hub of exactly
 * two ports, each the netdev of a qrnic port (T1: -netdev
 * hubport,hubid=0 twice), with no filter on any net client, every link on
 * the way up and the VM running, what one port sends only the other can
 * receive, and QEMU's net layer passes it straight through:
 * qemu_send_packet, the sender's hub port's queue, the hub, the other hub
 * port, the receiver's queue, its receive (qrnic_nc_receive).  Those
 * queues keep a frame only when the receiver cannot take it, and the
 * receiver then pauses (rx_paused, set by qrnic_nc_can_receive and
 * qrnic_nc_receive; cleared by qrnic_rx_resume, which flushes both queues
 * through the hub; QEMU's resume of a stopped VM flushes them too).  So
 * while the receiver is not paused and can take a frame now, the frame
 * goes straight to qrnic_nc_receive -- the call the net layer would make,
 * in the same order -- and the net layer's hops are skipped (qrnic_send;
 * host-calls "shortcut").  The hub of a port is net_hub_id_for_client's
 * (include/net/net.h); QEMU lists a hub's ports for nobody else, hence
 * the walk.
 */
static NetClientState *qrnic_net_walk(QrnicState *s, bool *only_qrnic)
{
    NetClientState *ncs[16] QRNIC_NOINIT;       /* the first n are set */
    int n = qemu_find_net_clients_except(NULL, ncs, NET_CLIENT_DRIVER__MAX, ARRAY_SIZE(ncs));
    NetClientState *me = qemu_get_queue(s->nic), *port = me->peer, *other = NULL;
    bool only = true;
    int hub = -1, ports = 0, id;

    /* a stopped VM's net queues keep a copy of every frame (as does the
     * queue of a client whose receive is disabled) without asking */
    if (n > (int)ARRAY_SIZE(ncs) || !runstate_is_running()) {
        *only_qrnic = false;
        return NULL;
    }
    if (port && port->info->type == NET_CLIENT_DRIVER_HUBPORT && !me->link_down &&
        !port->link_down && !port->receive_disabled && net_hub_id_for_client(port, &id) == 0) {
        hub = id;
    }
    for (int i = 0; i < n; i++) {
        NetClientState *nc = ncs[i], *peer = nc->peer;

        if (!QTAILQ_EMPTY(&nc->filters)) {
            *only_qrnic = false;
            return NULL;
        }
        if (nc->receive_disabled) {
            only = false;
        }
        if (hub >= 0 && nc->info->type == NET_CLIENT_DRIVER_HUBPORT &&
            net_hub_id_for_client(nc, &id) == 0 && id == hub) {
            ports++;
            if (nc != port) {
                other = nc;
            }
        }
        if (nc->info == &qrnic_net_info) {
            continue;
        }
        if (nc->info->type == NET_CLIENT_DRIVER_NIC ? peer != NULL :
            nc->info->type != NET_CLIENT_DRIVER_HUBPORT ||
            (peer && peer->info != &qrnic_net_info)) {
            only = false;
        }
    }
    *only_qrnic = only;
    /* the receiver's receive may be disabled at any frame: qrnic_send asks */
    if (ports == 2 && other && other->peer && other->peer->info == &qrnic_net_info &&
        !other->link_down && !other->peer->link_down) {
        return other->peer;
    }
    return NULL;
}

/*
 * qrnic_net_walk's answer kept through one flush of a run's frames
 * (qrnic_run_flush: the frames of a run sent in one go under the BQL, no
 * main-loop iteration between them; the walk per frame was 6 % of T1's
 * main loop).  Nothing in the walk can change meanwhile -- netdevs,
 * filters, links and the run state change from the main loop or QMP --
 * but a client's receive becoming disabled, which only a receive that
 * refuses a frame does (qemu_deliver_packet_iov); a qrnic port's refusal
 * pauses it (qrnic_rx_pause), which drops what is kept, and a hub port
 * never refuses.  (A pause in the middle of a flush needs the receiver's
 * queue of 1024 frames filled by one sender's run, which sends ~100 in
 * the qemu tier and T1 today: no test reaches that drop.)  The
 * receiver's own state is checked per frame (qrnic_send).
 */
static struct {
    QrnicState *hold;           /* the sender whose flush keeps it, or NULL */
    bool valid;
    bool only_qrnic;
    NetClientState *to;
} qrnic_walk_kept;

void qrnic_net_walk_hold(QrnicState *s)
{
    qrnic_walk_kept.hold = s;
    qrnic_walk_kept.valid = false;
}

static NetClientState *qrnic_net_walk_kept(QrnicState *s, bool *only_qrnic)
{
    NetClientState *to;

    if (qrnic_walk_kept.valid && qrnic_walk_kept.hold == s) {
        *only_qrnic = qrnic_walk_kept.only_qrnic;
        return qrnic_walk_kept.to;
    }
    to = qrnic_net_walk(s, only_qrnic);
    if (qrnic_walk_kept.hold == s) {
        qrnic_walk_kept.valid = true;
        qrnic_walk_kept.only_qrnic = *only_qrnic;
        qrnic_walk_kept.to = to;
    }
    return to;
}

/* A port refuses frames for now: QEMU's net queues keep them (and QEMU
 * disables its receive when it refused one). */
static void qrnic_rx_pause(QrnicState *s)
{
    s->rx_paused = true;
    qrnic_walk_kept.valid = false;
}

/* Send a frame: by the hub's shortcut to `to` (qrnic_net_walk's) if that
 * port can take it now, else through the net layer. */
static void qrnic_send(QrnicState *s, const uint8_t *frame, size_t len, NetClientState *to)
{
    trace_qrnic_tx(len);
    qrnic_capture_frame(s, frame, len);
    if (to) {
        QrnicState *r = qemu_get_nic_opaque(to);

        if (!r->rx_paused && !to->receive_disabled && !qrnic_run_busy(r) &&
            !qrnic_dev_rx_full(r->dev)) {
            /* a train stands for its frames (only a frame buffer being
             * handed over can be one: qrnic_host_tx's frames are any
             * memory) */
            s->hc.shortcut += frame == qrnic_handoff.buf ? qrnic_frame_buf_train_len(frame) : 1;
            qrnic_nc_receive(to, frame, len);
            return;
        }
    }
    qemu_send_packet(qemu_get_queue(s->nic), frame, len);
}

void qrnic_host_tx(void *opaque, const uint8_t *frame, size_t len)
{
    QrnicState *s = opaque;
    NetClientState *to = NULL;
    bool only_qrnic;

    if (s->defer) {
        qrnic_defer_copy(s, QRNIC_OUT_TX, frame, len);
        return;
    }
    if (!qrnic_handoff.receiving && !qrnic_handoff.buf) {
        to = qrnic_net_walk_kept(s, &only_qrnic);
    }
    qrnic_send(s, frame, len, to);
}

static void qrnic_host_tx_buf_each(void *opaque, uint8_t *frame, size_t len)
{
    qrnic_host_tx_buf(opaque, frame, len);
}

/*
 * Whether a train of n packets (qrnic_dev_set_trains) goes whole by the
 * hub's shortcut to `to`: only qrnic ports can read it, nothing captures
 * or traces it frame by frame on either side, and the other port takes
 * it now with room for each of its packets and is the one it is for.
 * Otherwise it goes as the frames it stands for.
 */
static bool qrnic_train_goes_whole(QrnicState *s, const uint8_t *frame, uint32_t n,
                                   NetClientState *to, bool only_qrnic)
{
    QrnicState *r;

    if (!to || !only_qrnic || s->pcap || !qrnic_frame_buf_icrc_pending(frame) ||
        trace_event_get_state_backends(TRACE_QRNIC_TX) ||
        trace_event_get_state_backends(TRACE_QRNIC_RX) ||
        trace_event_get_state_backends(TRACE_QRNIC_RX_HANDOFF)) {
        return false;
    }
    r = qemu_get_nic_opaque(to);
    return !r->pcap && !r->rx_paused && !to->receive_disabled && !qrnic_run_busy(r) &&
           qrnic_dev_rx_has_room(r->dev, n) &&
           !memcmp(qrnic_frame_buf_dmac(frame), r->conf.macaddr.a, 6);
}

void qrnic_host_tx_buf(void *opaque, uint8_t *frame, size_t len)
{
    QrnicState *s = opaque;
    QrnicState *taker;
    NetClientState *to = NULL;
    bool top = !qrnic_handoff.buf && !qrnic_handoff.receiving, only_qrnic = false;
    uint32_t n = qrnic_frame_buf_train_len(frame);

    if (s->defer) {
        qrnic_defer(s, QRNIC_OUT_TX_BUF, frame, len);
        return;
    }
    if (top) {
        to = qrnic_net_walk_kept(s, &only_qrnic);
    }
    if (n > 1 && (!top || !qrnic_train_goes_whole(s, frame, n, to, only_qrnic))) {
        qrnic_frame_buf_train_split(frame, qrnic_host_tx_buf_each, s);
        return;
    }
    /* bytes, whatever the model built, unless only qrnic ports read them
     * (they fill it themselves when they do); the capture reads it now */
    if (!top || s->pcap || !qrnic_frame_buf_icrc_pending(frame) || !only_qrnic) {
        qrnic_frame_buf_fill(frame);
    }
    if (qrnic_handoff.buf) {            /* a send inside a send: just copy */
        qrnic_send(s, frame, len, NULL);
        qrnic_frame_buf_free(frame);
        return;
    }
    qrnic_handoff.buf = frame;
    qrnic_handoff.len = len;
    qrnic_handoff.from = s;
    qrnic_handoff.taker = NULL;
    qrnic_send(s, frame, len, to);
    taker = qrnic_handoff.taker;
    qrnic_handoff.buf = NULL;
    qrnic_handoff.from = qrnic_handoff.taker = NULL;
    if (taker) {
        /* the sending model built these very bytes (or described them) */
        taker->hc.taken += n;
        taker->hc.taken_described += qrnic_frame_buf_described(frame) ? n : 0;
        taker->hc.train_frames += n > 1 ? n : 0;
        qrnic_model_enter(taker);

        qrnic_dev_rx_frame_buf_vouched(taker->dev, frame, len);
        qrnic_model_leave(taker);
    } else {
        qrnic_frame_buf_free(frame);
    }
}

/* A frame to the port's own MAC: the model receives it itself (local
 * loopback); only the capture sees it, never the netdev. */
static void qrnic_host_loopback(void *opaque, const uint8_t *frame, size_t len)
{
    QrnicState *s = opaque;

    trace_qrnic_loopback(len);
    if (s->defer) {
        if (s->pcap) {
            qrnic_defer_copy(s, QRNIC_OUT_LOOPBACK, frame, len);
        }
        return;
    }
    qrnic_capture_frame(s, frame, len);
}

static uint64_t qrnic_host_now(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static void qrnic_host_timer_arm(void *opaque, uint64_t deadline)
{
    QrnicState *s = opaque;

    s->hc.arm++;
    if (deadline == UINT64_MAX) {
        timer_del(s->timer);
    } else {
        timer_mod(s->timer, deadline > INT64_MAX ? INT64_MAX : (int64_t)deadline);
    }
}

/*
 * The bottom half, or with unlocked-run its stand-in, a realtime timer due
 * now: from any thread (a run without the BQL, a vCPU queueing a
 * doorbell), hence the atomic.  Why a timer: a bottom half of the main
 * AioContext also runs wherever a thread with the BQL polls that context
 * (a drain: AIO_WAIT_WHILE), and such a caller expects to keep the BQL;
 * the main loop's realtime timers run only at the top of its iteration
 * (main_loop_wait), where letting the BQL go is safe.  (Not the virtual
 * clock's: pause_all_vcpus waits, with the BQL, for its timers to finish.)
 */
void qrnic_bh_kick(QrnicState *s)
{
    /* a plain load first: in a run most calls find it scheduled, and the
     * locked exchange of every call was ~2 % of T1's main loop (perf) */
    if (!qatomic_read(&s->bh_scheduled) && !qatomic_xchg(&s->bh_scheduled, true)) {
        if (s->run_timer) {
            timer_mod(s->run_timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME));
        } else {
            qemu_bh_schedule(s->bh);
        }
    }
}

static void qrnic_host_schedule(void *opaque)
{
    QrnicState *s = opaque;

    s->hc.sched++;
    /*
     * Under -icount all work goes through the kick timer, which runs in the
     * vCPU thread at a definite instruction (the bottom half would run in the
     * main loop whenever the host schedules it, and read a virtual clock that
     * lags behind the vCPU there): the run then depends on nothing but the
     * guest.  Work left after one budget is picked up by the timer again one
     * ns later (qrnic_kick_cb).
     */
    if (icount_enabled()) {
        if (!s->in_kick && !timer_pending(s->kick)) {
            timer_mod(s->kick, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
        }
        return;
    }
    if (s->in_db) {
        s->want_run = true;     /* qrnic_db_write decides: inline or the bottom half */
        return;
    }
    /*
     * Once per run of the bottom half: qemu_bh_schedule of a bottom half
     * already scheduled still calls aio_notify, which writes the main
     * loop's eventfd whenever its notify_me is set -- also while the loop
     * dispatches, as it does after a prepare that found bottom halves
     * pending (glib then skips aio_ctx_check, which clears it).  That was a
     * write(2) for every frame a port took (rx_enqueue) and every
     * completion: 28% of the main loop's CPU in T1 (perf, issue 23).
     * The first qemu_bh_schedule has woken the loop already; it runs the
     * bottom half at its next dispatch.  Under the BQL, or in a run without
     * it (unlocked-run) while vCPUs queue doorbells: hence the atomic.
     */
    qrnic_bh_kick(s);
    /*
     * Under qtest, also a virtual-clock timer due now: when the clock jumps
     * (clock_step) timers run at each deadline on the way but bottom halves
     * only afterwards, so a frame that arrived from a peer's timer would
     * otherwise be handled at the end of the jump.  The timer runs one
     * budget of work at the right virtual time; the bottom half does the
     * rest (in_kick: no re-arming from inside the timer, so a long burst
     * cannot keep the timer list busy).  With a guest CPU (no icount) the
     * virtual clock follows the host's and never jumps, and the timer would
     * only run the device a second time for every bottom half (QOM
     * host-calls: kick = bh).
     */
    if (qtest_enabled() && !s->in_kick && !timer_pending(s->kick)) {
        timer_mod(s->kick, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
    }
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
    QrnicState *s = opaque;

    trace_qrnic_event(s->trace_dev, qrnic_trace_name(ev->type), ev->t_ns, ev->qpn, ev->psn,
                      ev->a, ev->b, ev->addr);
}

/*
 * The model's typed trace points (model/qrnic_tracepoints.h) to their
 * trace_qrnic_<name>() functions, generated from the same list as the
 * qrnic section of hw/trace-events (scripts/qrnic-trace-events).
 */
static void qrnic_host_tracepoint(void *opaque, enum qrnic_tp tp, const uint64_t *args)
{
    QrnicState *s = opaque;

    switch (tp) {
#define QRNIC_HW_TP(name, cat, doc, fmt, ...)                                   \
    case QRNIC_TP_##name:                                                       \
        trace_qrnic_##name(s->trace_dev, QRNIC_TP_MAP(QRNIC_TP_ARG, __VA_ARGS__)); \
        break;
    QRNIC_TRACEPOINTS(QRNIC_HW_TP)
#undef QRNIC_HW_TP
    default:
        break;
    }
}

/*
 * The model builds a trace record for every device event while its trace
 * is on (ops->trace), a few percent of the data path's time (perf, issue
 * 23) thrown away when no trace event reads them.  So it is on only while
 * qrnic_event or a typed device event (category EV; guest errors come
 * anyway) is enabled, at start (-trace) or later (QMP
 * trace-event-set-state): checked where the model is entered (bottom
 * half, timers, MMIO writes, frames in), a few loads while tracing is off.
 */
#define QRNIC_HW_TP_IS_EV   1
#define QRNIC_HW_TP_IS_ERR  0
#define QRNIC_HW_TP_IS_UB   0
static TraceEvent *qrnic_dev_events[64];
static unsigned qrnic_n_dev_events;

static void qrnic_dev_events_add(const char *name)
{
    TraceEvent *ev = trace_event_name(name);

    if (ev && qrnic_n_dev_events < ARRAY_SIZE(qrnic_dev_events)) {
        qrnic_dev_events[qrnic_n_dev_events++] = ev;
    }
}

static void qrnic_dev_events_init(void)
{
    static bool done;

    if (done) {
        return;
    }
    done = true;
    qrnic_dev_events_add("qrnic_event");
#define QRNIC_HW_TP_EV(name, cat, ...)          \
    if (QRNIC_HW_TP_IS_##cat) {                 \
        qrnic_dev_events_add("qrnic_" #name);   \
    }
    QRNIC_TRACEPOINTS(QRNIC_HW_TP_EV)
#undef QRNIC_HW_TP_EV
}

static void qrnic_trace_sync(QrnicState *s)
{
    bool on = false;

    /* called for every frame received: with no trace event of the whole
     * QEMU enabled (QEMU's own count) the walk below is skipped */
    for (unsigned i = 0; trace_events_enabled_count && i < qrnic_n_dev_events && !on; i++) {
        on = trace_event_get_state_dynamic(qrnic_dev_events[i]);
    }
    if (on != s->trace_on) {
        s->trace_on = on;
        qrnic_dev_set_trace(s->dev, on);
    }
}

static const struct qrnic_host_ops qrnic_host_ops = {
    .dma_read = qrnic_host_dma_read,
    .dma_write = qrnic_host_dma_write,
    .dma_map = qrnic_host_dma_map,
    .dma_unmap = qrnic_host_dma_unmap,
    .irq = qrnic_host_irq,
    .tx_frame = qrnic_host_tx,
    .tx_frame_buf = qrnic_host_tx_buf,
    .now_ns = qrnic_host_now,
    .timer_arm = qrnic_host_timer_arm,
    .schedule = qrnic_host_schedule,
    .log = qrnic_host_log,
    .trace = qrnic_host_trace,
    .loopback = qrnic_host_loopback,
    .tracepoint = qrnic_host_tracepoint,
};

/* ---- work ------------------------------------------------------------------- */
static void qrnic_rx_resume(QrnicState *s);

static void qrnic_bh(void *opaque)
{
    QrnicState *s = opaque;

    qatomic_set(&s->bh_scheduled, false);  /* what schedules it from here on runs it again */
    if (qrnic_run_busy(s)) {
        /* the bottom half polled by another thread (a drain) while a model
         * runs without the BQL: again later, without waiting here (that
         * poller means to keep the BQL) */
        qrnic_bh_kick(s);
        return;
    }
    s->hc.bh++;
    qrnic_trace_sync(s);
    if (qrnic_unlocked_now(s)) {
        qrnic_run_unlocked(s, qrnic_bh_work);
    } else {
        qrnic_model_enter(s);

        WITH_RCU_READ_LOCK_GUARD() {    /* see qrnic_host_dma_write */
            qrnic_dbq_drain(s);
            qrnic_dev_run(s->dev);
        }
        qrnic_model_leave(s);
    }
    qrnic_rx_resume(s);
}

/* The model's timer keeps the BQL: it is a virtual-clock timer, whose
 * callbacks pause_all_vcpus waits for with the BQL held (qemu_clock_enable);
 * most work comes through the bottom half anyway. */
static void qrnic_timer_cb(void *opaque)
{
    QrnicState *s = opaque;
    qrnic_model_enter(s);

    s->hc.timer++;
    qrnic_trace_sync(s);
    qrnic_dev_timer_fire(s->dev);
    qrnic_model_leave(s);
}

static void qrnic_kick_cb(void *opaque)
{
    QrnicState *s = opaque;
    qrnic_model_enter(s);

    s->hc.kick++;
    qrnic_trace_sync(s);
    s->in_kick = true;
    qrnic_dev_run(s->dev);
    s->in_kick = false;
    qrnic_rx_resume(s);
    if (icount_enabled() && qrnic_dev_busy(s->dev)) {
        /* no bottom half under icount (qrnic_host_schedule): the rest, one ns on */
        timer_mod(s->kick, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + 1);
    }
    qrnic_model_leave(s);
}

/* ---- BARs --------------------------------------------------------------------- */
/* An access to a BAR from the device's own model (its DMA pointed at its
 * BARs) is refused (qrnic_model_enter); from another thread during a run
 * without the BQL it waits for the run. */
static bool qrnic_mmio_enter(QrnicState *s, hwaddr addr, unsigned size, bool write)
{
    if (qrnic_run_wait(s) && !s->in_model) {
        return true;
    }
    trace_qrnic_err_reentrant_mmio(addr, size, write);
    return false;
}

/* The handlers return a MemTxResult: a refused access is an error for the
 * DMA that made it (qrnic_err_dma), as the re-entrancy guard's refusal is. */
static MemTxResult qrnic_regs_read(void *opaque, hwaddr addr, uint64_t *val, unsigned size,
                                   MemTxAttrs attrs)
{
    QrnicState *s = opaque;

    if (!qrnic_mmio_enter(s, addr, size, false)) {
        return MEMTX_ERROR;
    }
    qrnic_model_enter(s);
    *val = qrnic_dev_reg_read(s->dev, addr, size);
    qrnic_model_leave(s);
    trace_qrnic_mmio_read(addr, size, *val);
    return MEMTX_OK;
}

static MemTxResult qrnic_regs_write(void *opaque, hwaddr addr, uint64_t val, unsigned size,
                                    MemTxAttrs attrs)
{
    QrnicState *s = opaque;

    trace_qrnic_mmio_write(addr, size, val);
    if (!qrnic_mmio_enter(s, addr, size, true)) {
        return MEMTX_ERROR;
    }
    qrnic_model_enter(s);
    qrnic_dbq_drain(s);         /* doorbells rung before it (the EQ doorbell is here) */
    qrnic_trace_sync(s);
    qrnic_dev_reg_write(s->dev, addr, val, size);
    qrnic_model_leave(s);
    return MEMTX_OK;
}

static const MemoryRegionOps qrnic_regs_ops = {
    .read_with_attrs = qrnic_regs_read,
    .write_with_attrs = qrnic_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

static MemTxResult qrnic_db_read(void *opaque, hwaddr addr, uint64_t *val, unsigned size,
                                 MemTxAttrs attrs)
{
    QrnicState *s = opaque;

    if (!qrnic_mmio_enter(s, addr, size, false)) {
        return MEMTX_ERROR;
    }
    qrnic_model_enter(s);
    qrnic_dbq_drain(s);
    *val = qrnic_dev_db_read(s->dev, addr, size);
    qrnic_model_leave(s);
    return MEMTX_OK;
}

/*
 * A doorbell that finds the device idle (nothing queued, nothing received)
 * runs one round of device work right here, in the vCPU thread that rang it
 * (it holds the BQL, and the MMIO dispatch has engaged the device's
 * re-entrancy guard, as the bottom half does): the first frame leaves
 * without waking the main loop and waiting for it to get a host CPU, which
 * on a host whose CPUs the vCPUs keep busy is most of a small message's
 * latency (bench/guest_vs_rxe prints those waits).  What that round leaves
 * goes to the bottom half as before, so a busy device (a stream of posts)
 * costs the vCPU no more than one round.  Not under icount (the kick timer
 * keeps the run deterministic there).
 *
 * Off by default (inline-doorbell=on turns it on): on this project's 2-CPU
 * host it halves the main-loop wake-ups of a ping-pong but made
 * ib_write_lat slower (1240 and 2383 us against 325 and 962 us off,
 * alternating runs): the frame is now sent, and the peer QEMU's main loop
 * woken, by a vCPU thread that keeps spinning, and the woken main loop
 * waits for that CPU (its runnable wait per iteration went from 380 to
 * 1936 us); with a main loop as the waker it goes to sleep and hands the
 * CPU over.  NVMe-oF IOPS did not change, the initiator's vCPU took
 * 50-80 us more host CPU per I/O (docs/qemu.md section 3).
 */
static MemTxResult qrnic_db_write(void *opaque, hwaddr addr, uint64_t val, unsigned size,
                                  MemTxAttrs attrs)
{
    QrnicState *s = opaque;
    bool idle;

    s->hc.db++;
    /* by register of the page (QRNIC_DB_SQ 0x00 .. QRNIC_DB_SRQ 0x18) */
    s->hc.db_kind[(addr & (QRNIC_DB_PAGE_SIZE - 1)) <= QRNIC_DB_SRQ ?
                  (addr & (QRNIC_DB_PAGE_SIZE - 1)) / 8 : 4]++;
    trace_qrnic_db_write(addr, size, val);
    /* a run in progress (unlocked-run): queued, the vCPU goes on */
    if (qrnic_run_busy(s) && !qrnic_run_is_mine() && qrnic_dbq_push(s, addr, val, size)) {
        s->hc.dbq++;
        qrnic_bh_kick(s);
        return MEMTX_OK;
    }
    if (!qrnic_mmio_enter(s, addr, size, true)) {
        return MEMTX_ERROR;
    }
    qrnic_model_enter(s);
    qrnic_dbq_drain(s);         /* the ones queued during the run go first */
    idle = s->inline_db && !icount_enabled() && !qrnic_dev_busy(s->dev);
    qrnic_trace_sync(s);
    s->in_db = true;
    s->want_run = false;
    qrnic_dev_db_write(s->dev, addr, val, size);
    s->in_db = false;
    if (s->want_run) {
        if (idle) {
            s->inline_runs++;
            qrnic_dev_run(s->dev);      /* schedules the bottom half if work is left */
        } else {
            qrnic_host_schedule(s);
        }
    }
    qrnic_model_leave(s);
    if (s->want_run && idle) {
        qrnic_rx_resume(s);
    }
    return MEMTX_OK;
}

static const MemoryRegionOps qrnic_db_ops = {
    .read_with_attrs = qrnic_db_read,
    .write_with_attrs = qrnic_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* ---- net ---------------------------------------------------------------------- */
/*
 * A full receive queue pauses the netdev instead of dropping (as PFC does on
 * a lossless RoCE fabric): returning 0 makes QEMU keep the frame (and those
 * behind it) in the net queue; the bottom half flushes it once the device
 * has taken frames from its queue.  A netdev that reads a socket (dgram)
 * stops reading until then, and the host socket buffer may drop, as a
 * lossy wire does.
 */
static bool qrnic_nc_can_receive(NetClientState *nc)
{
    QrnicState *s = qemu_get_nic_opaque(nc);

    if (qrnic_run_busy(s)) {
        /* a frame from another thread (a vCPU's NIC on the same hub)
         * during a run: the net queue keeps it until the bottom half */
        qrnic_rx_pause(s);
        qrnic_bh_kick(s);
        qrnic_handoff_fill(qrnic_handoff.buf);
        return false;
    }
    if (qrnic_dev_rx_full(s->dev)) {
        qrnic_rx_pause(s);      /* QEMU queues what comes: flush it later */
        qrnic_handoff_fill(qrnic_handoff.buf);  /* a copy of it, maybe */
        return false;
    }
    return true;
}

/*
 * rx-inline: a frame from a netdev of its own (dgram, socket, tap: T2's
 * link between two QEMUs) runs the device right in the net callback, in
 * the main loop with the BQL, instead of arming the run's timer.  That
 * timer costs an iteration of the main loop per frame received: its
 * timer_mod writes the loop's eventfd (qemu_notify_event) and the next
 * ppoll returns at once to read it, though the timer runs in this very
 * iteration; the netdev hands over one frame per iteration anyway.  Only
 * for a device with nothing else to do (one frame's work, not a backlog
 * held under the BQL), with the callback in the main loop's thread, not
 * nested in another entry into the model, and never behind a hub or
 * another NIC: there a frame comes from a device of this process while
 * that one sends, and an inline run would answer into its model mid-run.
 * Not under -icount (all work goes through the kick timer there).
 * NVMe-oF 4 KiB, T2: no eventfd write or read per frame left, 1.03x IOPS
 * in eight alternated pairs, within the noise (docs/storage.md "Where a T2
 * I/O's host CPU goes").  QEMU's NICs take frames in this callback anyway.
 */
static bool qrnic_rx_inline_ok(QrnicState *s, NetClientState *nc)
{
    NetClientState *peer = nc->peer;

    return s->rx_inline && s->in_model == 1 && !s->in_db && !qrnic_handoff.buf && peer &&
           peer->info->type != NET_CLIENT_DRIVER_HUBPORT && peer->info->type != NET_CLIENT_DRIVER_NIC &&
           !icount_enabled() && qemu_thread_is_self(&s->main_thread) && !qrnic_dev_busy(s->dev);
}

static ssize_t qrnic_nc_receive(NetClientState *nc, const uint8_t *buf, size_t size)
{
    QrnicState *s = qemu_get_nic_opaque(nc);
    bool inline_run;

    /* a train (qrnic_host_tx_buf) stands for its frames */
    s->hc.rx += buf == qrnic_handoff.buf ? qrnic_frame_buf_train_len(buf) : 1;
    if (qrnic_run_busy(s)) {    /* as in qrnic_nc_can_receive */
        qrnic_rx_pause(s);
        qrnic_bh_kick(s);
        qrnic_handoff_fill(buf);
        return 0;
    }
    if (qrnic_dev_rx_full(s->dev)) {
        qrnic_rx_pause(s);
        trace_qrnic_rx_paused(size);
        qrnic_handoff_fill(buf);    /* the net queue keeps a copy */
        return 0;
    }
    trace_qrnic_rx(size);
    qrnic_trace_sync(s);
    if (buf == qrnic_handoff.buf && size == qrnic_handoff.len && !qrnic_handoff.taker &&
        qrnic_handoff.from != s && size >= 6 &&
        !memcmp(qrnic_frame_buf_dmac(buf), s->conf.macaddr.a, 6)) {   /* maybe unbuilt */
        trace_qrnic_rx_handoff(size);
        if (s->pcap) {
            qrnic_handoff_fill(buf);
            qrnic_capture_frame(s, buf, size);
        }
        qrnic_handoff.taker = s;    /* the sender hands it over when the send is done */
        return size;
    }
    qrnic_handoff_fill(buf);
    qrnic_capture_frame(s, buf, size);     /* also a frame the device then drops */
    qrnic_handoff.receiving++;
    qrnic_model_enter(s);
    inline_run = qrnic_rx_inline_ok(s, nc);
    s->in_db = inline_run;      /* a run it asks for is recorded in want_run */
    s->want_run = false;
    qrnic_dev_rx_frame(s->dev, buf, size);
    s->in_db = false;
    if (inline_run && s->want_run) {
        s->hc.rx_inline++;
        qrnic_dbq_drain(s);
        qrnic_dev_run(s->dev);          /* schedules the bottom half if work is left */
    }
    qrnic_model_leave(s);
    qrnic_handoff.receiving--;
    return size;
}

/* After the device ran: frames held back while its queue was full. */
static void qrnic_rx_resume(QrnicState *s)
{
    if (s->rx_paused && !qrnic_dev_rx_full(s->dev)) {
        s->rx_paused = false;
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
}

static void qrnic_nc_link_status_changed(NetClientState *nc)
{
    QrnicState *s = qemu_get_nic_opaque(nc);
    /* the PORT_ERR/PORT_ACTIVE event is an EQE written by DMA: under the
     * re-entrancy guard, like the timers and the bottom half */
    qrnic_model_enter(s);

    qrnic_dev_set_link(s->dev, !nc->link_down);
    qrnic_model_leave(s);
}

static NetClientInfo qrnic_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .receive = qrnic_nc_receive,
    .link_status_changed = qrnic_nc_link_status_changed,
    .can_receive = qrnic_nc_can_receive,
};

/* ---- realize ------------------------------------------------------------------ */
/* ---- timing ------------------------------------------------------------------- */
/*
 * "name=value,..." (the model's parameter names) for every timing property
 * that was set, and the effective parameters in s->tm_eff.  The model checks
 * the values; qrnic_tm_explain() turns its parameter names into property
 * names for the error message.
 */
static char *qrnic_tm_overrides(QrnicState *s)
{
    GString *o = g_string_new("");

    for (unsigned i = 0; i < QRNIC_TM_NPARAMS; i++) {
        uint32_t v = *qrnic_tm_prop(s, i);

        if (v != UINT32_MAX) {
            g_string_append_printf(o, "%s%s=%" PRIu32, o->len ? "," : "",
                                   qrnic_timing_param_name(i), v);
        }
    }
    return g_string_free(o, false);
}

static char *qrnic_prop_name_of(const char *param)
{
    return g_strdelimit(g_strdup(param), "_", '-');
}

/*
 * The model's message, plus which -device properties it is about: those it
 * names, else the timing properties that were set.
 */
static char *qrnic_tm_explain(QrnicState *s, const char *err)
{
    GString *props = g_string_new("");
    unsigned nprops = 0;
    char *out;

    for (unsigned i = 0; i < QRNIC_TM_NPARAMS; i++) {
        const char *n = qrnic_timing_param_name(i);
        const char *hit = strstr(err, n);
        size_t len = strlen(n);

        /* a whole word: not "mtt_entries" inside "mtt_entries_x" */
        if (hit && (hit == err || !(g_ascii_isalnum(hit[-1]) || hit[-1] == '_')) &&
            !(g_ascii_isalnum(hit[len]) || hit[len] == '_')) {
            g_autofree char *pn = qrnic_prop_name_of(n);

            g_string_append_printf(props, "%s'%s'", props->len ? ", " : "", pn);
            nprops++;
        }
    }
    if (!props->len) {
        for (unsigned i = 0; i < QRNIC_TM_NPARAMS; i++) {
            uint32_t v = *qrnic_tm_prop(s, i);

            if (v != UINT32_MAX) {
                g_autofree char *pn = qrnic_prop_name_of(qrnic_timing_param_name(i));

                g_string_append_printf(props, "%s%s=%" PRIu32, props->len ? ", " : "",
                                       pn, v);
            }
        }
        if (props->len) {
            out = g_strdup_printf("%s (timing properties given: %s)", err, props->str);
        } else {
            out = g_strdup(err);
        }
    } else {
        out = g_strdup_printf("%s (%s %s)", err, nprops > 1 ? "properties" : "property",
                              props->str);
    }
    g_string_free(props, true);
    return out;
}

static bool qrnic_setup_timing(QrnicState *s, Error **errp)
{
    const char *profile = s->profile && *s->profile ? s->profile : "functional";
    g_autofree char *ov = qrnic_tm_overrides(s);
    const struct qrnic_timing_profile *base;
    char err[256];

    if (*ov && strcmp(profile, "functional") == 0) {
        g_autofree char *first = NULL;

        for (unsigned i = 0; i < QRNIC_TM_NPARAMS && !first; i++) {
            if (*qrnic_tm_prop(s, i) != UINT32_MAX) {
                first = qrnic_prop_name_of(qrnic_timing_param_name(i));
            }
        }
        error_setg(errp, "qrnic: timing property '%s' has no effect with profile=functional "
                   "(no timing model); choose profile=cx5-100g or profile=teach", first);
        return false;
    }
    if (qrnic_dev_set_timing(s->dev, profile, ov, err, sizeof(err)) != 0) {
        g_autofree char *msg = qrnic_tm_explain(s, err);

        error_setg(errp, "qrnic: %s", msg);
        return false;
    }
    base = qrnic_timing_profile_find(profile);
    s->tm_eff = *base;
    for (unsigned i = 0; i < QRNIC_TM_NPARAMS; i++) {
        uint32_t v = *qrnic_tm_prop(s, i);

        if (v != UINT32_MAX) {
            qrnic_timing_param_set(&s->tm_eff, qrnic_timing_param_name(i), v);
        }
    }
    trace_qrnic_timing(profile, ov);
    return true;
}

/* ---- fault injection ------------------------------------------------------------ */
/*
 * The model says "line N: reason" for plans.  Plans from a file become
 * "FILE:N: reason"; a single line set through QMP just "reason".
 */
static char *qrnic_fault_msg(const char *err, const char *file, bool one_line)
{
    unsigned line;
    int used = 0;

    if (sscanf(err, "line %u: %n", &line, &used) == 1 && used > 0) {
        if (file) {
            return g_strdup_printf("%s:%u: %s", file, line, err + used);
        }
        if (one_line) {
            return g_strdup(err + used);
        }
    }
    return g_strdup(err);
}

/* Add the rules of `text` (one or more, '\n' or ';' separated): all or none. */
static bool qrnic_fault_load(QrnicState *s, const char *text, const char *file, Error **errp)
{
    int ids[QRNIC_FAULT_MAX_RULES];
    char err[512];
    int n, total;

    n = qrnic_fault_load_plan(s->dev, text, err, sizeof(err));
    if (n < 0) {
        g_autofree char *msg = qrnic_fault_msg(err, file, !strchr(text, '\n'));

        trace_qrnic_err_fault(msg);
        if (file) {
            error_setg(errp, "qrnic: fault-plan %s", msg);
        } else {
            error_setg(errp, "qrnic: fault: %s", msg);
        }
        return false;
    }
    total = qrnic_fault_ids(s->dev, ids, ARRAY_SIZE(ids));
    trace_qrnic_fault_load(n, n > 0 && total >= n ? ids[total - n] : -1, text);
    return true;
}

static bool qrnic_setup_faults(QrnicState *s, Error **errp)
{
    if (s->fault_plan && *s->fault_plan) {
        g_autofree char *text = NULL;
        g_autoptr(GError) gerr = NULL;
        char err[512];

        if (!g_file_get_contents(s->fault_plan, &text, NULL, &gerr)) {
            error_setg(errp, "qrnic: fault-plan: %s", gerr->message);
            return false;
        }
        if (qrnic_fault_check_plan(text, err, sizeof(err)) < 0) {
            g_autofree char *msg = qrnic_fault_msg(err, s->fault_plan, false);

            error_setg(errp, "qrnic: fault-plan %s", msg);
            return false;
        }
        if (!qrnic_fault_load(s, text, s->fault_plan, errp)) {
            return false;
        }
    }
    if (s->fault_pending && s->fault_pending->len) {
        if (!qrnic_fault_load(s, s->fault_pending->str, NULL, errp)) {
            return false;
        }
        g_string_truncate(s->fault_pending, 0);
    }
    return true;
}

static void qrnic_realize(PCIDevice *pdev, Error **errp)
{
    static unsigned instances;
    QrnicState *s = QRNIC(pdev);
    struct qrnic_config *c = &s->cfg;
    struct qrnic_config_error cerr;
    uint64_t db_size;
    int ret;

    /* Like every QEMU NIC: no mac= gives a unique 52:54:00:12:34:xx address. */
    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    memcpy(c->mac, s->conf.macaddr.a, 6);
    qemu_thread_get_self(&s->main_thread);     /* realize runs in the main loop's thread */
    s->trace_dev = instances++;
    if (qrnic_config_validate(c, &cerr) != 0) {
        char why[128];

        qrnic_config_reason_str(&cerr, why, sizeof(why));
        if (cerr.param && cerr.param->prop) {
            error_setg(errp, "qrnic: property '%s' %s", cerr.param->prop, why);
        } else {
            error_setg(errp, "qrnic: invalid configuration: %s %s",
                       cerr.param ? cerr.param->name : "?", why);
        }
        return;
    }
    if (!qrnic_capture_open(s, errp)) {
        return;
    }

    /* before the model: loading a timed fault rule arms the timer */
    /* not a guarded bottom half: it engages the guard itself when it runs
     * with the BQL (qrnic_bh; the guard is not thread-aware) */
    s->bh = qemu_bh_new(qrnic_bh, s);
    qrnic_run_init();
    s->unlocked_run = !icount_enabled() &&
        (s->unlocked_prop == ON_OFF_AUTO_ON ||
         (s->unlocked_prop == ON_OFF_AUTO_AUTO && !qtest_enabled()));
    if (s->unlocked_run) {
        s->run_timer = timer_new_ns(QEMU_CLOCK_REALTIME, qrnic_bh, s);
    }
    s->out = g_new0(QrnicOut, QRNIC_OUT_LEN);
    s->vmsc = qemu_add_vm_change_state_handler(qrnic_vm_state_change, s);
    s->irq_pending = bitmap_new(c->num_vectors);
    qemu_spin_init(&s->dbq.lock);
    s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, qrnic_timer_cb, s);
    s->kick = timer_new_ns(QEMU_CLOCK_VIRTUAL, qrnic_kick_cb, s);
    s->dev = qrnic_dev_new(c, &qrnic_host_ops, s, &qrnic_fw_admin_ops, NULL);
    if (!s->dev) {
        error_setg(errp, "qrnic: cannot allocate the device model");
        goto fail;
    }
    qrnic_dev_events_init();
    s->trace_on = true;         /* the model's default */
    qrnic_trace_sync(s);
    qrnic_dev_set_lazy_icrc(s->dev, true);  /* qrnic_host_tx_buf fills it */
    qrnic_dev_set_trains(s->dev, s->trains);    /* qrnic_host_tx_buf splits them */
    /* SQ doorbells that ride on the ACK (qrnic_dev_set_db_batch): under
     * TCG a doorbell that wakes the main loop costs the vCPU that rang it
     * (docs/storage.md "Doorbells that ride on the ACK"); not under qtest
     * (no vCPU) or icount (fidelity over speed) unless asked for */
    qrnic_dev_set_db_batch(s->dev, s->db_batch_prop == ON_OFF_AUTO_ON ||
                           (s->db_batch_prop == ON_OFF_AUTO_AUTO && !qtest_enabled() &&
                            !icount_enabled()));
    if (!qrnic_setup_timing(s, errp) || !qrnic_setup_faults(s, errp)) {
        goto fail;
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
    s->regs.disable_reentrancy_guard = true;    /* the device's own: qrnic_model_enter */
    pci_register_bar(pdev, QRNIC_BAR_REGS,
                     PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64, &s->regs);
    db_size = pow2ceil((uint64_t)c->max_uctx * QRNIC_DB_PAGE_SIZE);
    memory_region_init_io(&s->db, OBJECT(s), &qrnic_db_ops, s, "qrnic-doorbells", db_size);
    s->db.disable_reentrancy_guard = true;
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

    s->nic = qemu_new_nic(&qrnic_net_info, &s->conf, object_get_typename(OBJECT(s)),
                          DEVICE(pdev)->id, &DEVICE(pdev)->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    /* the payload mappings' translation cache (qrnic_map_translate) */
    s->map_cacheable = pci_device_iommu_address_space(pdev) == &address_space_memory;
    s->map_listener = (MemoryListener) {
        .name = "qrnic-dma-map",
        .commit = qrnic_map_commit,
    };
    memory_listener_register(&s->map_listener, pci_get_address_space(pdev));
    return;

fail_msix:
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
fail:
    qemu_del_vm_change_state_handler(s->vmsc);
    s->vmsc = NULL;
    qrnic_capture_close(s);
    qrnic_dev_free(s->dev);
    s->dev = NULL;
    timer_free(s->timer);
    timer_free(s->kick);
    timer_free(s->run_timer);
    qemu_bh_delete(s->bh);
    s->timer = s->kick = s->run_timer = NULL;
    s->bh = NULL;
}

static void qrnic_exit(PCIDevice *pdev)
{
    QrnicState *s = QRNIC(pdev);

    qrnic_run_wait(s);          /* an unplug by a vCPU: not during a run */
    memory_listener_unregister(&s->map_listener);
    qemu_del_vm_change_state_handler(s->vmsc);
    s->vmsc = NULL;
    qemu_del_nic(s->nic);
    timer_free(s->timer);
    timer_free(s->kick);
    timer_free(s->run_timer);
    s->run_timer = NULL;
    qemu_bh_delete(s->bh);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
    qrnic_dev_free(s->dev);
    s->dev = NULL;
    qrnic_capture_close(s);
}

static void qrnic_reset_hold(Object *obj, ResetType type)
{
    QrnicState *s = QRNIC(obj);

    trace_qrnic_reset();
    qrnic_run_wait(s);          /* a reset by a vCPU (FLR): not during a run */
    /*
     * The model re-arms or cancels its timer itself (ops->timer_arm) during
     * the reset.  Fault-injection events survive a reset (a link-down's
     * for= restore, timed rules), so the timer must not be cancelled here.
     */
    if (s->dev) {
        qrnic_model_enter(s);

        qrnic_dev_reset(s->dev);
        qrnic_model_leave(s);
        qrnic_rx_resume(s);     /* the queue is empty: frames held back may come */
    }
}

/*
 * Migration and snapshots (docs/qemu.md section 9).  The PCI function's
 * config space and MSI-X table go as every PCI device's do; the device
 * itself is the model's snapshot stream (qrnic_dev_save), one opaque
 * field.  Why not one VMState field per model field: the model is
 * QEMU-free (the simulator and the test harness snapshot it too), so it
 * owns its format -- versioned sections, checked on load -- and QEMU
 * carries the bytes.
 *
 * On the wire: a be64 length, then the bytes.  The reader grows its buffer
 * as bytes actually arrive (at most 1 MiB ahead), so a corrupt length in a
 * hostile stream costs no more memory than the stream holds.
 */
#define QRNIC_STREAM_MAX   (UINT64_C(1) << 36)    /* far above any device */
#define QRNIC_STREAM_CHUNK (1u << 20)

static int qrnic_stream_put(QEMUFile *f, void *pv, size_t size, const VMStateField *field,
                            JSONWriter *vmdesc)
{
    QrnicStream *st = pv;

    qemu_put_be64(f, st->len);
    qemu_put_buffer(f, st->buf, st->len);
    return 0;
}

static int qrnic_stream_get(QEMUFile *f, void *pv, size_t size, const VMStateField *field)
{
    QrnicStream *st = pv;
    uint64_t len = qemu_get_be64(f), got = 0;
    uint8_t *buf = NULL;

    g_free(st->buf);
    st->buf = NULL;
    st->len = 0;
    if (len > QRNIC_STREAM_MAX) {
        error_report("qrnic: migration: device stream of %" PRIu64 " bytes refused", len);
        return -EINVAL;
    }
    while (got < len) {
        size_t n = MIN(len - got, QRNIC_STREAM_CHUNK);

        buf = g_realloc(buf, got + n);
        if (qemu_get_buffer(f, buf + got, n) != n) {
            g_free(buf);
            error_report("qrnic: migration: device stream truncated at %" PRIu64
                         " of %" PRIu64 " bytes", got, len);
            return -EIO;
        }
        got += n;
    }
    st->buf = buf;
    st->len = len;
    return 0;
}

static const VMStateInfo qrnic_stream_info = {
    .name = "qrnic-model-stream",
    .get = qrnic_stream_get,
    .put = qrnic_stream_put,
};

static int qrnic_pre_save(void *opaque)
{
    QrnicState *s = opaque;
    uint8_t *buf;
    size_t len;

    qrnic_run_wait(s);          /* the migration thread: not during a run */
    qrnic_dbq_drain(s);
    if (qrnic_dev_save(s->dev, &buf, &len) != 0) {
        error_report("qrnic: cannot save the device state (out of memory)");
        return -ENOMEM;
    }
    g_free(s->mig.buf);
    s->mig.buf = g_memdup2(buf, len);
    s->mig.len = len;
    free(buf);
    trace_qrnic_migration(0, len);
    return 0;
}

static int qrnic_post_save(void *opaque)
{
    QrnicState *s = opaque;

    g_free(s->mig.buf);
    s->mig.buf = NULL;
    s->mig.len = 0;
    return 0;
}

static int qrnic_post_load(void *opaque, int version_id)
{
    QrnicState *s = opaque;
    char err[256];
    int ret;

    qrnic_run_wait(s);
    ret = qrnic_dev_load(s->dev, s->mig.buf, s->mig.len, err, sizeof(err));
    trace_qrnic_migration(1, s->mig.len);
    g_free(s->mig.buf);
    s->mig.buf = NULL;
    s->mig.len = 0;
    if (ret != 0) {
        error_report("qrnic: migration: device state refused: %s", err);
        return -EINVAL;
    }
    qrnic_rx_resume(s);     /* frames held back at the source are gone; take new ones */
    return 0;
}

static const VMStateDescription qrnic_vmstate = {
    .name = "qrnic",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = qrnic_pre_save,
    .post_save = qrnic_post_save,
    .post_load = qrnic_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, QrnicState),
        VMSTATE_MSIX(parent_obj, QrnicState),
        VMSTATE_SINGLE(mig, QrnicState, 1, qrnic_stream_info, QrnicStream),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * The properties that are not configuration parameters.  The timing ones
 * (generated from QRNIC_TIMING_PARAMS with the model's names) are renamed
 * to QEMU's spelling, '-' for '_', by qrnic_make_properties().  They have
 * no default; instance_init sets them to UINT32_MAX ("unset": the
 * profile's value).
 */
#define QRNIC_TM_PROP(n, doc) \
    DEFINE_PROP_UNSIGNED_NODEFAULT(#n, QrnicState, tm_props.n, qdev_prop_uint32, uint32_t),

static const Property qrnic_fixed_properties[] = {
    DEFINE_NIC_PROPERTIES(QrnicState, conf),
    DEFINE_PROP_STRING("profile", QrnicState, profile),
    DEFINE_PROP_STRING("fault-plan", QrnicState, fault_plan),
    DEFINE_PROP_STRING("pcap", QrnicState, pcap_path),
    DEFINE_PROP_BOOL("inline-doorbell", QrnicState, inline_db, false),
    DEFINE_PROP_BOOL("rx-inline", QrnicState, rx_inline, true),
    DEFINE_PROP_BOOL("trains", QrnicState, trains, true),
    DEFINE_PROP_ON_OFF_AUTO("unlocked-run", QrnicState, unlocked_prop, ON_OFF_AUTO_AUTO),
    DEFINE_PROP_ON_OFF_AUTO("doorbell-batch", QrnicState, db_batch_prop, ON_OFF_AUTO_AUTO),
    QRNIC_TIMING_PARAMS(QRNIC_TM_PROP)
};

/*
 * A property for every parameter of the model's configuration table that
 * has a property name (but the MAC: that is the NIC property), writing into
 * QrnicState.cfg, with the table's default: the default lives only in
 * model/config.c.  Then the fixed properties.  Made once, at class_init;
 * the array lives as long as the class.
 */
static const Property *qrnic_make_properties(size_t *count)
{
    size_t nfixed = ARRAY_SIZE(qrnic_fixed_properties), n = 0, cap = nfixed;
    const struct qrnic_config_param *p;
    Property *props;

    for (unsigned i = 0; qrnic_config_param(i); i++) {
        cap++;
    }
    props = g_new0(Property, cap);
    for (unsigned i = 0; (p = qrnic_config_param(i)); i++) {
        Property *q = &props[n];

        if (!p->prop || p->type == QRNIC_CFG_MAC) {
            continue;
        }
        q->name = p->prop;
        q->offset = offsetof(QrnicState, cfg) + p->offset;
        q->set_default = true;
        q->defval.u = p->def;
        switch (p->type) {
        case QRNIC_CFG_U32:
            q->info = &qdev_prop_uint32;
            break;
        case QRNIC_CFG_U64:
            q->info = &qdev_prop_uint64;
            break;
        case QRNIC_CFG_BOOL:
            q->info = &qdev_prop_bool;
            break;
        default:
            g_assert_not_reached();
        }
        n++;
    }
    for (size_t i = 0; i < nfixed; i++) {
        props[n] = qrnic_fixed_properties[i];
        if (strchr(props[n].name, '_')) {
            props[n].name = qrnic_prop_name_of(props[n].name);
        }
        n++;
    }
    *count = n;
    return props;
}

/* "<help>, <range>": what -device qrnic,help shows (then the default). */
static void qrnic_describe_config_properties(ObjectClass *klass)
{
    const struct qrnic_config_param *p;

    for (unsigned i = 0; (p = qrnic_config_param(i)); i++) {
        g_autofree char *desc = NULL;

        if (!p->prop || p->type == QRNIC_CFG_MAC) {
            continue;
        }
        if (p->type == QRNIC_CFG_BOOL) {
            desc = g_strdup(p->help);
        } else {
            desc = g_strdup_printf("%s; %s%" PRIu64 "..%" PRIu64, p->help,
                                   p->flags & QRNIC_CFG_POW2 ? "a power of two in " : "",
                                   p->min, p->max);
        }
        object_class_property_set_description(klass, p->prop, desc);
    }
}

/* ---- QOM: fault control, counters, timing (docs/qemu.md section 11) ---------------- */
static char *qrnic_get_fault(Object *obj, Error **errp)
{
    QrnicState *s = QRNIC(obj);
    size_t n;
    char *buf;

    if (!s->dev) {
        return g_strdup(s->fault_pending ? s->fault_pending->str : "");
    }
    n = qrnic_fault_list(s->dev, NULL, 0);
    buf = g_malloc(n + 1);
    qrnic_fault_list(s->dev, buf, n + 1);
    return buf;
}

static void qrnic_set_fault(Object *obj, const char *value, Error **errp)
{
    QrnicState *s = QRNIC(obj);
    char err[512];

    if (s->dev) {
        qrnic_fault_load(s, value, NULL, errp);
        return;
    }
    /* -device qrnic,fault=...: checked now, loaded at realize */
    if (qrnic_fault_check_plan(value, err, sizeof(err)) < 0) {
        g_autofree char *msg = qrnic_fault_msg(err, NULL, !strchr(value, '\n'));

        error_setg(errp, "qrnic: fault: %s", msg);
        return;
    }
    if (!s->fault_pending) {
        s->fault_pending = g_string_new("");
    }
    g_string_append_printf(s->fault_pending, "%s\n", value);
}

static void qrnic_set_fault_del(Object *obj, Visitor *v, const char *name, void *opaque,
                                Error **errp)
{
    QrnicState *s = QRNIC(obj);
    int64_t id;

    if (!visit_type_int(v, name, &id, errp)) {
        return;
    }
    if (!s->dev || id < 0 || id > INT_MAX || qrnic_fault_del(s->dev, (int)id) != 0) {
        error_setg(errp, "qrnic: fault-del: no fault rule %" PRId64, id);
        return;
    }
    trace_qrnic_fault_del((int)id);
}

static void qrnic_set_fault_clear(Object *obj, Visitor *v, const char *name, void *opaque,
                                  Error **errp)
{
    QrnicState *s = QRNIC(obj);
    bool clear;

    if (!visit_type_bool(v, name, &clear, errp) || !clear) {
        return;
    }
    if (s->dev) {
        qrnic_fault_clear(s->dev);
    } else if (s->fault_pending) {
        g_string_truncate(s->fault_pending, 0);
    }
    trace_qrnic_fault_clear();
}

static void qrnic_get_fault_rules(Object *obj, Visitor *v, const char *name, void *opaque,
                                  Error **errp)
{
    QrnicState *s = QRNIC(obj);
    int ids[QRNIC_FAULT_MAX_RULES];
    int n = s->dev ? qrnic_fault_ids(s->dev, ids, ARRAY_SIZE(ids)) : 0;

    if (!visit_start_list(v, name, NULL, 0, errp)) {
        return;
    }
    for (int i = 0; i < n && i < (int)ARRAY_SIZE(ids); i++) {
        struct qrnic_fault_info fi;
        int64_t id;
        char *text;
        bool ok;

        if (qrnic_fault_info(s->dev, ids[i], &fi) != 0) {
            continue;
        }
        id = fi.id;
        text = fi.text;
        ok = visit_start_struct(v, NULL, NULL, 0, errp) &&
             visit_type_int(v, "id", &id, errp) &&
             visit_type_str(v, "rule", &text, errp) &&
             visit_type_uint64(v, "matched", &fi.matched, errp) &&
             visit_type_uint64(v, "fired", &fi.fired, errp) &&
             visit_type_bool(v, "done", &fi.done, errp);
        if (ok) {
            ok = visit_check_struct(v, errp);
        }
        visit_end_struct(v, NULL);
        if (!ok) {
            break;
        }
    }
    visit_end_list(v, NULL);
}

static void qrnic_get_fault_totals(Object *obj, Visitor *v, const char *name, void *opaque,
                                   Error **errp)
{
    QrnicState *s = QRNIC(obj);
    struct qrnic_fault_totals t = { 0 };
    bool ok;

    if (s->dev) {
        qrnic_fault_totals(s->dev, &t);
    }
    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    ok = visit_type_uint64(v, "injected", &t.injected, errp) &&
         visit_type_uint64(v, "held", &t.held, errp) &&
         visit_type_uint64(v, "held-overflow", &t.held_overflow, errp) &&
         visit_type_uint64(v, "held-flushed", &t.held_flushed, errp) &&
         visit_type_uint64(v, "aq-hung", &t.aq_hung, errp);
    if (ok) {
        visit_check_struct(v, errp);
    }
    visit_end_struct(v, NULL);
}

/* One device counter (opaque: enum qrnic_stat); 0 before realize. */
static void qrnic_get_stat(Object *obj, Visitor *v, const char *name, void *opaque,
                           Error **errp)
{
    QrnicState *s = QRNIC(obj);
    uint64_t val = s->dev ? qrnic_dev_stat(s->dev, (enum qrnic_stat)(uintptr_t)opaque) : 0;

    visit_type_uint64(v, name, &val, errp);
}

/* inline-runs: doorbells that ran the device in the vCPU thread (qrnic_db_write). */
static void qrnic_get_inline_runs(Object *obj, Visitor *v, const char *name, void *opaque,
                                  Error **errp)
{
    uint64_t val = QRNIC(obj)->inline_runs;

    visit_type_uint64(v, name, &val, errp);
}

/* host-calls: what woke the device, how often (docs/qemu.md section 10). */
static void qrnic_get_host_calls(Object *obj, Visitor *v, const char *name, void *opaque,
                                 Error **errp)
{
    QrnicState *s = QRNIC(obj);
    uint64_t bh = s->hc.bh, kick = s->hc.kick, timer = s->hc.timer, rx = s->hc.rx;
    uint64_t db = s->hc.db, sched = s->hc.sched, arm = s->hc.arm;
    uint64_t unlocked = s->hc.unlocked, dbq = s->hc.dbq, early = s->hc.out_early;
    uint64_t batched = s->dev ? qrnic_dev_db_batched(s->dev) : 0;
    uint64_t rq_quiet = s->dev ? qrnic_dev_rq_db_quiet(s->dev) : 0;
    uint64_t sq_rec = s->dev ? qrnic_dev_sq_rec_taken(s->dev) : 0;
    uint64_t dbk[ARRAY_SIZE(s->hc.db_kind)];
    static const char *const dbk_name[ARRAY_SIZE(dbk)] = {
        "db-sq", "db-rq", "db-cq", "db-srq", "db-other",
    };
    bool ok;

    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    ok = visit_type_uint64(v, "bh", &bh, errp) &&
         visit_type_uint64(v, "kick", &kick, errp) &&
         visit_type_uint64(v, "timer", &timer, errp) &&
         visit_type_uint64(v, "rx", &rx, errp) &&
         visit_type_uint64(v, "db", &db, errp) &&
         visit_type_uint64(v, "sched", &sched, errp) &&
         visit_type_uint64(v, "arm", &arm, errp) &&
         visit_type_uint64(v, "unlocked", &unlocked, errp) &&
         visit_type_uint64(v, "db-queued", &dbq, errp) &&
         visit_type_uint64(v, "sent-early", &early, errp) &&
         visit_type_uint64(v, "db-batched", &batched, errp) &&
         visit_type_uint64(v, "rq-db-quiet", &rq_quiet, errp) &&
         visit_type_uint64(v, "sq-rec-taken", &sq_rec, errp) &&
         visit_type_uint64(v, "rx-inline", &s->hc.rx_inline, errp) &&
         visit_type_uint64(v, "taken", &s->hc.taken, errp) &&
         visit_type_uint64(v, "taken-described", &s->hc.taken_described, errp) &&
         visit_type_uint64(v, "shortcut", &s->hc.shortcut, errp) &&
         visit_type_uint64(v, "train-frames", &s->hc.train_frames, errp);
    memcpy(dbk, s->hc.db_kind, sizeof(dbk));
    for (size_t i = 0; ok && i < ARRAY_SIZE(dbk); i++) {
        ok = visit_type_uint64(v, dbk_name[i], &dbk[i], errp);
    }
    if (ok) {
        visit_check_struct(v, errp);
    }
    visit_end_struct(v, NULL);
}

/* dma-maps: payload mappings made and released, process-wide. */
static void qrnic_get_dma_maps(Object *obj, Visitor *v, const char *name, void *opaque,
                               Error **errp)
{
    uint64_t map = qrnic_dma_maps.map, unmap = qrnic_dma_maps.unmap;
    uint64_t cached = qrnic_dma_maps.cached;
    bool ok;

    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    ok = visit_type_uint64(v, "map", &map, errp) &&
         visit_type_uint64(v, "unmap", &unmap, errp) &&
         visit_type_uint64(v, "cached", &cached, errp);
    if (ok) {
        visit_check_struct(v, errp);
    }
    visit_end_struct(v, NULL);
}

/* Every counter of QUERY_STATS, by its name there. */
static void qrnic_get_stats(Object *obj, Visitor *v, const char *name, void *opaque,
                            Error **errp)
{
    QrnicState *s = QRNIC(obj);
    bool ok = true;

    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    for (unsigned i = 0; i < QRNIC_STAT_COUNT && ok; i++) {
        uint64_t val = s->dev ? qrnic_dev_stat(s->dev, (enum qrnic_stat)i) : 0;

        ok = visit_type_uint64(v, qrnic_stat_name((enum qrnic_stat)i), &val, errp);
    }
    if (ok) {
        visit_check_struct(v, errp);
    }
    visit_end_struct(v, NULL);
}

/* The congestion control parameters in use (QUERY_CC's values: the
 * properties until the guest changes them with SET_CC), by their names. */
static void qrnic_get_cc(Object *obj, Visitor *v, const char *name, void *opaque,
                         Error **errp)
{
    QrnicState *s = QRNIC(obj);
    bool ok = true;

    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    for (uint32_t id = 0; qrnic_cc_param(id) && ok; id++) {
        uint32_t val = 0;

        if (s->dev) {
            qrnic_dev_cc_param(s->dev, id, &val);
        }
        ok = visit_type_uint32(v, qrnic_cc_param(id)->name, &val, errp);
    }
    if (ok) {
        visit_check_struct(v, errp);
    }
    visit_end_struct(v, NULL);
}

/* "qps", "cqs", "eqs", "srqs": the model's read-only snapshot of every valid
 * object of a kind (qrnic_dev_view, model/query.c), a list of structs of
 * its uint32 fields; QPs also get "state-name" and "type-name".  Field names
 * come from the model's table (underscores as in "stats"). */
static void qrnic_get_view(Object *obj, Visitor *v, const char *name, void *opaque,
                           Error **errp)
{
    QrnicState *s = QRNIC(obj);
    enum qrnic_view_kind k = (enum qrnic_view_kind)(uintptr_t)opaque;
    unsigned nf = qrnic_view_nfields(k);
    uint32_t buf[64 * 40], start = 0, next = 0;
    unsigned chunk = ARRAY_SIZE(buf) / (nf ? nf : 1);
    bool ok = true;

    if (!visit_start_list(v, name, NULL, 0, errp)) {
        return;
    }
    do {
        /* each round moves start past the records it got (chunk >= 1) */
        unsigned n = s->dev && chunk ? qrnic_dev_view(s->dev, k, start, buf, chunk, &next) : 0;

        for (unsigned r = 0; r < n && ok; r++) {
            uint32_t *rec = buf + r * nf;

            ok = visit_start_struct(v, NULL, NULL, 0, errp);
            for (unsigned i = 0; i < nf && ok; i++) {
                ok = visit_type_uint32(v, qrnic_view_field(k, i), &rec[i], errp);
            }
            if (ok && k == QRNIC_VIEW_QP) {
                struct qrnic_qp_view *qv = (struct qrnic_qp_view *)rec;
                char *st = (char *)qrnic_qp_state_name(qv->state);
                char *ty = (char *)qrnic_qp_type_name(qv->type);

                ok = visit_type_str(v, "state-name", &st, errp) &&
                     visit_type_str(v, "type-name", &ty, errp);
            }
            if (ok) {
                ok = visit_check_struct(v, errp);
            }
            visit_end_struct(v, NULL);
        }
        start = next;
    } while (ok && next);
    visit_end_list(v, NULL);
}

/* The profile and every parameter the model runs with (after overrides). */
static void qrnic_get_timing(Object *obj, Visitor *v, const char *name, void *opaque,
                             Error **errp)
{
    QrnicState *s = QRNIC(obj);
    const struct qrnic_timing_profile *p = s->dev ? &s->tm_eff :
        qrnic_timing_profile_find(s->profile && *s->profile ? s->profile : "functional");
    char *pname = (char *)(p ? p->name : (s->profile ? s->profile : ""));
    bool ok;

    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    ok = visit_type_str(v, "profile", &pname, errp);
    for (unsigned i = 0; i < QRNIC_TM_NPARAMS && ok && p; i++) {
        g_autofree char *pn = qrnic_prop_name_of(qrnic_timing_param_name(i));
        uint64_t val = 0;

        qrnic_timing_param_get(p, qrnic_timing_param_name(i), &val);
        ok = visit_type_uint64(v, pn, &val, errp);
    }
    if (ok) {
        visit_check_struct(v, errp);
    }
    visit_end_struct(v, NULL);
}

static void qrnic_class_add_qom(ObjectClass *klass)
{
    static const struct {
        const char *name;
        enum qrnic_stat stat;
        const char *desc;
    } counters[] = {
        { "late-events", QRNIC_STAT_LATE_EVENTS,
          "timed effects released after their modelled time (host timer late)" },
        { "late-ns-total", QRNIC_STAT_LATE_NS_TOTAL,
          "sum of how late those effects were, in ns of the virtual clock" },
        { "faults-injected", QRNIC_STAT_FAULTS_INJECTED,
          "faults injected by fault rules since the last device reset" },
    };
    static const struct {
        const char *name;
        enum qrnic_view_kind kind;
        const char *desc;
    } views[] = {
        { "qps", QRNIC_VIEW_QP, "read-only: every QP: state, PSNs (next, una, high, epsn), "
          "window, retry counters, SQ/RQ producer and consumer indexes (docs/qemu.md 11)" },
        { "cqs", QRNIC_VIEW_CQ, "read-only: every CQ: depth, producer and consumer indexes" },
        { "eqs", QRNIC_VIEW_EQ, "read-only: every EQ: depth, producer and consumer indexes" },
        { "srqs", QRNIC_VIEW_SRQ, "read-only: every SRQ: depth, producer and consumer indexes" },
    };

    object_class_property_add_str(klass, "fault", qrnic_get_fault, qrnic_set_fault);
    object_class_property_set_description(klass, "fault",
        "fault rules (docs/faults.md): setting adds the rules of the string ('\\n' or ';' "
        "separated, all or none); reading lists them");
    object_class_property_add(klass, "fault-del", "int", NULL, qrnic_set_fault_del,
                              NULL, NULL);
    object_class_property_set_description(klass, "fault-del",
                                          "write-only: remove the fault rule with this id");
    object_class_property_add(klass, "fault-clear", "bool", NULL, qrnic_set_fault_clear,
                              NULL, NULL);
    object_class_property_set_description(klass, "fault-clear",
                                          "write-only: true removes every fault rule");
    object_class_property_add(klass, "fault-rules", "qrnic-fault-rules",
                              qrnic_get_fault_rules, NULL, NULL, NULL);
    object_class_property_set_description(klass, "fault-rules",
        "read-only: the fault rules as a list of {id, rule, matched, fired, done}");
    object_class_property_add(klass, "fault-totals", "qrnic-fault-totals",
                              qrnic_get_fault_totals, NULL, NULL, NULL);
    object_class_property_set_description(klass, "fault-totals",
        "read-only: {injected, held, held-overflow, held-flushed, aq-hung}; survives resets");
    for (size_t i = 0; i < ARRAY_SIZE(counters); i++) {
        object_class_property_add(klass, counters[i].name, "uint64", qrnic_get_stat, NULL,
                                  NULL, (void *)(uintptr_t)counters[i].stat);
        object_class_property_set_description(klass, counters[i].name, counters[i].desc);
    }
    object_class_property_add(klass, "stats", "qrnic-stats", qrnic_get_stats, NULL, NULL,
                              NULL);
    object_class_property_set_description(klass, "stats",
        "read-only: every device counter, as QUERY_STATS reports them");
    object_class_property_add(klass, "cc", "qrnic-cc", qrnic_get_cc, NULL, NULL, NULL);
    object_class_property_set_description(klass, "cc",
        "read-only: the congestion control parameters in use (QUERY_CC; SET_CC changes them)");
    object_class_property_add(klass, "inline-runs", "uint64", qrnic_get_inline_runs, NULL, NULL,
                              NULL);
    object_class_property_set_description(klass, "inline-runs",
        "read-only: doorbells that found the device idle and ran it in the vCPU thread "
        "(inline-doorbell)");
    object_class_property_add(klass, "host-calls", "qrnic-host-calls", qrnic_get_host_calls, NULL, NULL,
                              NULL);
    object_class_property_set_description(klass, "host-calls",
        "read-only: how often QEMU entered the device since realize (bottom halves, kick "
        "timer runs, model timer expiries, frames received, doorbell writes, run requests, "
        "timer arms)");
    object_class_property_add(klass, "dma-maps", "qrnic-dma-maps", qrnic_get_dma_maps, NULL, NULL, NULL);
    object_class_property_set_description(klass, "dma-maps",
        "read-only: guest memory mapped for payloads by reference and released again, "
        "counted over all qrnic devices of the process");
    object_class_property_add(klass, "timing", "qrnic-timing", qrnic_get_timing, NULL, NULL,
                              NULL);
    for (size_t i = 0; i < ARRAY_SIZE(views); i++) {
        object_class_property_add(klass, views[i].name, "qrnic-view-list", qrnic_get_view,
                                  NULL, NULL, (void *)(uintptr_t)views[i].kind);
        object_class_property_set_description(klass, views[i].name, views[i].desc);
    }
    object_class_property_set_description(klass, "timing",
        "read-only: the timing profile and the parameters in effect");
}

static void qrnic_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    const Property *props;
    size_t nprops;

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
    props = qrnic_make_properties(&nprops);
    device_class_set_props_n(dc, props, nprops);
    qrnic_describe_config_properties(klass);
    object_class_property_set_description(klass, "profile",
        "timing profile: functional (default: no timing model), cx5-100g or teach");
    object_class_property_set_description(klass, "fault-plan",
        "file of fault rules loaded at realize (docs/faults.md)");
    object_class_property_set_description(klass, "pcap",
        "write every frame the port sends and receives to this pcap file "
        "(Ethernet, nanosecond timestamps of the virtual clock)");
    for (unsigned i = 0; i < QRNIC_TM_NPARAMS; i++) {
        g_autofree char *pn = qrnic_prop_name_of(qrnic_timing_param_name(i));
        g_autofree char *desc = g_strdup_printf("timing: %s (default: the profile's value)",
                                                qrnic_timing_param_doc(i));

        object_class_property_set_description(klass, pn, desc);
    }
    qrnic_class_add_qom(klass);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static void qrnic_instance_init(Object *obj)
{
    QrnicState *s = QRNIC(obj);

    device_add_bootindex_property(obj, &s->conf.bootindex, "bootindex",
                                  "/ethernet-phy@0", DEVICE(obj));
    /* the parameters without a property; the others get the same values
     * from their property defaults, and then what -device gives */
    qrnic_config_defaults(&s->cfg);
    for (unsigned i = 0; i < QRNIC_TM_NPARAMS; i++) {
        *qrnic_tm_prop(s, i) = UINT32_MAX;
    }
}

static void qrnic_instance_finalize(Object *obj)
{
    QrnicState *s = QRNIC(obj);

    if (s->fault_pending) {
        g_string_free(s->fault_pending, true);
        s->fault_pending = NULL;
    }
    g_free(s->out);
    s->out = NULL;
    g_free(s->irq_pending);
    s->irq_pending = NULL;
}

static const TypeInfo qrnic_info = {
    .name = TYPE_QRNIC,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(QrnicState),
    .class_init = qrnic_class_init,
    .instance_init = qrnic_instance_init,
    .instance_finalize = qrnic_instance_finalize,
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
