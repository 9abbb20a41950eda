/*
 * qrnic: the QEMU glue's own declarations, shared by hw/qrnic.c (QOM, BARs,
 * host operations, migration) and hw/qrnic_run.c (runs of the model
 * without the BQL).  Not an ABI: the device's ABI is model/abi/.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_QRNIC_QRNIC_H
#define HW_QRNIC_QRNIC_H

#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qapi/qapi-types-common.h"
#include "hw/pci/pci_device.h"
#include "net/net.h"
#include "system/runstate.h"

#include "qrnic_model.h"
#include "qrnic_pcap.h"
#include "qrnic_timing.h"

#define TYPE_QRNIC "qrnic"

/* Doorbells a vCPU may queue while the model runs without the BQL; one
 * more makes that vCPU wait for the run (qrnic_db_write). */
#define QRNIC_DBQ_LEN 256
/* Frames a run keeps for afterwards; one more makes it take the BQL and
 * send them (qrnic_defer). */
#define QRNIC_OUT_LEN 256
OBJECT_DECLARE_SIMPLE_TYPE(QrnicState, QRNIC)

/* A model snapshot stream in the migration stream (qrnic_stream_info). */
typedef struct QrnicStream {
    uint8_t *buf;
    size_t len;
} QrnicStream;

struct QrnicState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion db;
    NICState *nic;
    NICConf conf;
    QEMUBH *bh;
    QEMUTimer *run_timer;   /* unlocked-run: the bottom half's stand-in (qrnic_bh_kick) */
    bool bh_scheduled;      /* bh (run_timer) scheduled and not yet run (qrnic_host_schedule) */
    QEMUTimer *timer;
    QEMUTimer *kick;        /* device work at the current virtual time (see qrnic_kick_cb) */
    bool in_kick;
    bool rx_paused;     /* a frame was held back: the receive queue was full */
    /* inline-doorbell (qrnic_db_write): a doorbell that finds the device
     * idle runs the device in the vCPU thread; in_db: the doorbell write is
     * in progress (qrnic_host_schedule records want_run instead of waking
     * the main loop) */
    bool inline_db;
    bool rx_inline;     /* rx-inline: a received frame runs the device in the net callback */
    bool trains;        /* trains: an RC WRITE's packets as one frame buffer between ports */
    QemuThread main_thread; /* the main loop's (realize's) thread, for rx-inline */
    bool in_db;
    bool want_run;
    uint64_t inline_runs;   /* QOM "inline-runs": doorbells that ran the device inline */
    struct {                /* QOM "host-calls": what woke the device, how often */
        uint64_t bh, kick, timer, rx, db, sched, arm;
        uint64_t unlocked;  /* runs of the model without the BQL (unlocked-run) */
        uint64_t dbq;       /* doorbells queued while a run was in progress */
        uint64_t out_early; /* a run's kept frames sent before its end (list full) */
        uint64_t rx_inline; /* frames the net callback ran the device for (rx-inline) */
        uint64_t taken;     /* frames taken from a qrnic port of this QEMU (the hand-over) */
        uint64_t taken_described;   /* of them, headers by description (not built) */
        uint64_t shortcut;  /* frames sent by the hub's shortcut (qrnic_net_walk) */
        uint64_t train_frames;  /* of the frames taken, those that came in trains */
        uint64_t db_kind[5];    /* doorbell writes by register: SQ, RQ, CQ, SRQ, other (BF) */
    } hc;

    /* unlocked-run (docs/qemu.md section 13): the bottom half runs the
     * model without the BQL; what only the BQL may do
     * (frames, interrupts) waits in out/irq_pending until the run ends;
     * doorbells rung meanwhile wait in dbq. */
    OnOffAuto unlocked_prop;    /* the property: auto = on but under qtest */
    OnOffAuto db_batch_prop;    /* doorbell-batch: auto = on but under qtest and icount */
    bool unlocked_run;          /* in effect (realize) */
    VMChangeStateEntry *vmsc;   /* a stop waits for the run (qrnic_vm_state_change) */
    bool defer;             /* a run without the BQL is in progress */
    unsigned in_model;      /* the model runs with the BQL (qrnic_model_enter) */
    struct QrnicOut *out;   /* QRNIC_OUT_LEN: frames in the order the model sent them */
    unsigned nout;
    unsigned long *irq_pending;     /* bitmap of num_vectors */
    int64_t cap_ts;         /* a deferred frame's capture time, or 0: now */
    struct {
        QemuSpin lock;      /* the vCPU pushes, the run pops */
        unsigned head, n;
        struct {
            hwaddr addr;
            uint64_t val;
            unsigned size;
        } e[QRNIC_DBQ_LEN];
    } dbq;

    /* The configuration properties (one per parameter of the model's table
     * that has a property name, made at class_init) write straight into
     * cfg; instance_init fills it with the table's defaults. */
    struct qrnic_config cfg;
    struct qrnic_dev *dev;

    /* The last translation a payload mapping made (qrnic_host_dma_map):
     * valid while map_gen, bumped by map_listener at every change of the
     * memory topology, is as it was when it was made.  Only without an
     * IOMMU (map_cacheable): an IOMMU's mappings change without one. */
    MemoryListener map_listener;
    bool map_cacheable;
    uint64_t map_gen;
    struct {
        uint64_t gen;
        hwaddr base, len;       /* bus addresses [base, base + len) */
        MemoryRegion *mr;       /* direct RAM */
        hwaddr xlat;            /* base's offset in mr */
    } map_cache;
    char *profile;
    /* "dev N" of the qrnic_event trace: the Nth qrnic realized in this QEMU */
    unsigned trace_dev;
    bool trace_on;      /* the model's trace records are on (qrnic_trace_sync) */

    /* Timing: one property per QRNIC_TIMING_PARAMS entry; UINT32_MAX =
     * unset (the profile's value).  tm_eff: what the model runs with. */
    struct qrnic_timing_profile tm_props;
    struct qrnic_timing_profile tm_eff;

    /* Fault injection: fault-plan=FILE, and fault=RULES given before
     * realize (-device ...,fault=...), loaded at realize. */
    char *fault_plan;
    GString *fault_pending;

    /* pcap=FILE: every frame the port sends or receives (docs/qemu.md
     * section 12); NULL when not capturing (or after a write error). */
    char *pcap_path;
    struct qrnic_pcap *pcap;

    /* Migration: the model's snapshot stream (qrnic_dev_save), between
     * pre_save and post_save, and between reading it and post_load. */
    QrnicStream mig;
};

/*
 * What a run without the BQL (unlocked-run) leaves for afterwards: the
 * frames it sent, in order, each with the virtual time it was sent at (the
 * capture's stamp), and the interrupts it raised (qrnic_run_flush).
 */
typedef struct QrnicOut {
    enum { QRNIC_OUT_TX, QRNIC_OUT_TX_BUF, QRNIC_OUT_LOOPBACK } kind;
    uint8_t *frame;             /* g_try_malloc'd (TX, LOOPBACK) or a frame buffer */
    size_t len;
    int64_t ts;
} QrnicOut;

/*
 * The device's own re-entrancy guard.  QEMU's (MemReentrancyGuard, one flag
 * per device, set by the MMIO dispatch for the access) is not thread-aware:
 * a vCPU that waits in a BAR handler for a run (qrnic_run_wait) would hold
 * it engaged, and the other vCPUs' doorbells to the device meanwhile were
 * refused as re-entrant ("Blocked re-entrant IO", a lost doorbell: an
 * NVMe-oF queue hung with two vCPUs).  So the BARs turn QEMU's guard off
 * (disable_reentrancy_guard) and every way into the model with the BQL --
 * the BAR handlers, the bottom half and the timers, the net layer's
 * receive and link callbacks, reset -- counts itself in in_model: a BAR
 * access while the same device's model runs (its DMA pointed at its own
 * BARs) is refused, as QEMU's guard refused it.  A run without the BQL is
 * told apart by thread (qrnic_run_wait).  All under the BQL.
 */
static inline void qrnic_model_enter(QrnicState *s)
{
    s->in_model++;
}

static inline void qrnic_model_leave(QrnicState *s)
{
    s->in_model--;
}

/* hw/qrnic.c: what a run hands over once it has the BQL again */
void qrnic_host_tx(void *opaque, const uint8_t *frame, size_t len);
void qrnic_host_tx_buf(void *opaque, uint8_t *frame, size_t len);
void qrnic_host_irq(void *opaque, unsigned vector);
void qrnic_capture_frame_to(QrnicState *s, const uint8_t *frame, size_t len);
void qrnic_bh_kick(QrnicState *s);

/* Called for every frame: without a capture it costs a test, not the
 * zero fill of the message buffer (QEMU builds with
 * -ftrivial-auto-var-init=zero; ~1% of a 1 MiB WRITE stream, perf). */
static inline void qrnic_capture_frame(QrnicState *s, const uint8_t *frame, size_t len)
{
    if (s->pcap) {
        qrnic_capture_frame_to(s, frame, len);
    }
}

/* hw/qrnic_run.c: runs of the model without the BQL (unlocked-run) */
void qrnic_run_init(void);
bool qrnic_run_wait(QrnicState *s);
bool qrnic_run_busy(QrnicState *s);
/* qrnic_net_walk's answer kept for s's frames until the next call (NULL: none) */
void qrnic_net_walk_hold(QrnicState *s);
bool qrnic_run_is_mine(void);
bool qrnic_dbq_push(QrnicState *s, hwaddr addr, uint64_t val, unsigned size);
unsigned qrnic_dbq_drain(QrnicState *s);
void qrnic_run_flush(QrnicState *s);
void qrnic_run_unlocked(QrnicState *s, void (*work)(QrnicState *s));
void qrnic_bh_work(QrnicState *s);
bool qrnic_unlocked_now(QrnicState *s);
void qrnic_vm_state_change(void *opaque, bool running, RunState state);
void qrnic_defer(QrnicState *s, int kind, uint8_t *frame, size_t len);
void qrnic_defer_copy(QrnicState *s, int kind, const uint8_t *frame, size_t len);

#endif
