/*
 * qrnic: runs of the device model without QEMU's BQL (unlocked-run,
 * docs/qemu.md section 13): who may enter a model while one runs, the
 * doorbells queued meanwhile, and the frames and interrupts a run keeps
 * for its end.  The rest of the glue is hw/qrnic.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bitops.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qemu/timer.h"

#include "qrnic.h"

/*
 * Runs of the model without the BQL (unlocked-run, docs/qemu.md section 13).
 *
 * Every MMIO access of a TCG vCPU takes the BQL, which the main loop holds
 * while it runs the model: a doorbell rung meanwhile put the vCPU to sleep
 * until the run ended, and its wake-up cost the main loop 20-30 us of CPU
 * in this project's VMs (11-19 % of T1's main loop; NVMe-oF's doorbell
 * waits turned out to be for the main loop's other work, docs/storage.md
 * "Without the BQL").  So the bottom half lets go of the
 * BQL while the model runs (in this mode the bottom half is a realtime
 * timer due now, qrnic_bh_kick says why; the model's own virtual-clock
 * timer keeps the BQL, qrnic_timer_cb):
 *
 *  - The run is the main loop's: at most one in the process at a time
 *    (qrnic_run.dev, set and cleared with the BQL held).  Everything else
 *    that enters a qrnic model from another thread (a vCPU's MMIO, the
 *    migration thread, a device reset or unplug by a vCPU) holds the BQL
 *    and first waits, with the BQL let go, until no run is in progress
 *    (qrnic_run_wait).  Code of the main loop itself never meets a run.
 *    So the process-wide state (the payload mappings, the hand-over, the
 *    frame buffers) needs no lock of its own, and nobody waits for a run
 *    while holding the BQL: the run may take the BQL (a DMA that reaches
 *    MMIO does, in address_space_rw) without a deadlock.
 *  - A doorbell rung during a run does not wait: it goes into the
 *    device's queue (dbq, under a spin lock) and the run or the next
 *    bottom half gives it to the model, in order: a doorbell that finds
 *    no run gives the queued ones to the model first.
 *  - What only the BQL may do waits for the run's end: the frames it
 *    sent (qemu_send_packet walks the net layer), in order and with the
 *    virtual time each was sent at for the capture, and the interrupts
 *    (msix_notify; under TCG raising an interrupt needs the BQL)
 *    (qrnic_run_flush).  Timers (timer_mod), the virtual clock, the log
 *    and trace points are thread-safe; DMA to RAM takes no lock.
 *  - The device's memory re-entrancy guard is not thread-aware: a vCPU's
 *    doorbell during a run would be refused as re-entrant.  So the
 *    bottom half is not a guarded one and the run does its own check: an
 *    access to a qrnic BAR from inside a run (its DMA pointed at MMIO) is
 *    refused for the running device (MEMTX_ERROR: a DMA error), as the
 *    guard refuses it otherwise.
 *  - Only while the VM runs (qrnic_unlocked_now): a stop waits for the run.
 *  - Not under -icount (the kick timer keeps the run deterministic) and,
 *    unless unlocked-run=on, not under qtest (no vCPU to spare a wait).
 */
static struct {
    QrnicState *dev;            /* whose model runs without the BQL, or NULL */
    QemuEvent idle;             /* set while no run is in progress */
    bool init;
} qrnic_run;
static __thread bool qrnic_in_run;      /* this thread is the run's */

/*
 * With the BQL, from any thread: wait until no model runs without it.
 * False when called from inside the run itself and the access is for the
 * running device: the caller refuses it (re-entrant, as the guard would).
 */
bool qrnic_run_wait(QrnicState *s)
{
    while (qatomic_read(&qrnic_run.dev)) {
        if (qrnic_in_run) {
            /* the run's DMA reached a BAR: the BQL is the DMA's; another
             * device's model is not running and may go on */
            return qatomic_read(&qrnic_run.dev) != s;
        }
        bql_unlock();
        qemu_event_wait(&qrnic_run.idle);
        bql_lock();
    }
    return true;
}

/* Whether s's model must not be entered now from this thread. */
bool qrnic_run_busy(QrnicState *s)
{
    QrnicState *r = qatomic_read(&qrnic_run.dev);

    return r && (r == s || !qrnic_in_run);
}

/* A doorbell rung during a run; false when the queue is full. */
bool qrnic_dbq_push(QrnicState *s, hwaddr addr, uint64_t val, unsigned size)
{
    bool ok;

    qemu_spin_lock(&s->dbq.lock);
    ok = s->dbq.n < QRNIC_DBQ_LEN;
    if (ok) {
        unsigned i = (s->dbq.head + s->dbq.n++) % QRNIC_DBQ_LEN;

        s->dbq.e[i].addr = addr;
        s->dbq.e[i].val = val;
        s->dbq.e[i].size = size;
    }
    qemu_spin_unlock(&s->dbq.lock);
    return ok;
}

/* The queued doorbells to the model, oldest first: at most one queue's
 * worth (a vCPU may keep ringing meanwhile; the bottom half it scheduled
 * takes the rest).  From the run or with the BQL and no run. */
unsigned qrnic_dbq_drain(QrnicState *s)
{
    unsigned n;

    for (n = 0; n < QRNIC_DBQ_LEN; n++) {
        hwaddr addr;
        uint64_t val;
        unsigned size;

        qemu_spin_lock(&s->dbq.lock);
        if (!s->dbq.n) {
            qemu_spin_unlock(&s->dbq.lock);
            break;
        }
        addr = s->dbq.e[s->dbq.head].addr;
        val = s->dbq.e[s->dbq.head].val;
        size = s->dbq.e[s->dbq.head].size;
        s->dbq.head = (s->dbq.head + 1) % QRNIC_DBQ_LEN;
        s->dbq.n--;
        qemu_spin_unlock(&s->dbq.lock);
        qrnic_dev_db_write(s->dev, addr, val, size);
    }
    if (qatomic_read(&s->dbq.n)) {
        qrnic_bh_kick(s);
    }
    return n;
}

/* With the BQL again: the run's frames and interrupts, in order. */
void qrnic_run_flush(QrnicState *s)
{
    unsigned nvec = s->cfg.num_vectors;

    qrnic_net_walk_hold(s);
    for (unsigned i = 0; i < s->nout; i++) {
        QrnicOut *o = &s->out[i];

        s->cap_ts = o->ts;
        switch (o->kind) {
        case QRNIC_OUT_TX:
            qrnic_host_tx(s, o->frame, o->len);
            g_free(o->frame);
            break;
        case QRNIC_OUT_TX_BUF:
            qrnic_host_tx_buf(s, o->frame, o->len);
            break;
        default:
            qrnic_capture_frame(s, o->frame, o->len);
            g_free(o->frame);
            break;
        }
        s->cap_ts = 0;
    }
    s->nout = 0;
    qrnic_net_walk_hold(NULL);
    for (unsigned long v = find_first_bit(s->irq_pending, nvec); v < nvec;
         v = find_next_bit(s->irq_pending, nvec, v + 1)) {
        clear_bit(v, s->irq_pending);
        qrnic_host_irq(s, v);
    }
}

/* work() of the model with the BQL let go; called and returns with it. */
void qrnic_run_unlocked(QrnicState *s, void (*work)(QrnicState *s))
{
    s->hc.unlocked++;
    s->defer = true;
    qemu_event_reset(&qrnic_run.idle);
    qatomic_set(&qrnic_run.dev, s);
    qrnic_in_run = true;
    bql_unlock();
    work(s);
    bql_lock();
    qrnic_in_run = false;
    qatomic_set(&qrnic_run.dev, NULL);
    qemu_event_set(&qrnic_run.idle);    /* the waiters need the BQL: after us */
    s->defer = false;
    qrnic_run_flush(s);
    if (qatomic_read(&s->dbq.n)) {  /* rung after the run last looked */
        qrnic_model_enter(s);

        qrnic_dbq_drain(s);
        qrnic_model_leave(s);
    }
}

/* The bottom half's work: the queued doorbells and one budget of device
 * work, again while doorbells came in meanwhile (a few rounds at most).
 * In one RCU read-side section: see qrnic_host_dma_write (hw/qrnic.c). */
void qrnic_bh_work(QrnicState *s)
{
    RCU_READ_LOCK_GUARD();

    for (int round = 0; round < 4; round++) {
        if (qrnic_dbq_drain(s) == 0 && round > 0) {
            break;
        }
        qrnic_dev_run(s->dev);
    }
}

/*
 * Only while the VM runs: a stop (vm_stop: migration's last pass over RAM
 * and the devices, a snapshot, the monitor's stop) waits for the run in
 * progress (qrnic_vm_state_change), and after it the device runs with the
 * BQL, which whoever stopped the VM holds while it saves: no DMA behind
 * the last pass's back.
 */
bool qrnic_unlocked_now(QrnicState *s)
{
    return s->unlocked_run && runstate_is_running();
}

void qrnic_vm_state_change(void *opaque, bool running, RunState state)
{
    if (!running) {
        qrnic_run_wait(opaque);
    }
}

/* Once per process, before the first device's run. */
void qrnic_run_init(void)
{
    if (!qrnic_run.init) {
        qemu_event_init(&qrnic_run.idle, true);
        qrnic_run.init = true;
    }
}

/* Whether this thread is the run's (a doorbell from the run's own DMA). */
bool qrnic_run_is_mine(void)
{
    return qrnic_in_run;
}

/*
 * In a run: send what it kept now, then this frame if there is one (a
 * frame that could not be kept), with the BQL taken for that (the run may
 * take it: nobody waits for a run while holding it), then go on without.
 */
static void qrnic_run_send_now(QrnicState *s, int kind, const uint8_t *frame, size_t len)
{
    s->hc.out_early++;
    bql_lock();
    s->defer = false;
    qrnic_run_flush(s);
    if (frame && kind == QRNIC_OUT_TX) {
        qrnic_host_tx(s, frame, len);
    } else if (frame) {
        qrnic_capture_frame(s, frame, len);
    }
    s->defer = true;
    bql_unlock();
}

/* Keep a frame for the run's end: a full list is sent first (no allocation
 * here: the list is the device's, QRNIC_OUT_LEN long). */
void qrnic_defer(QrnicState *s, int kind, uint8_t *frame, size_t len)
{
    if (s->nout == QRNIC_OUT_LEN) {
        qrnic_run_send_now(s, 0, NULL, 0);
    }
    s->out[s->nout++] = (QrnicOut) {
        .kind = kind, .frame = frame, .len = len,
        /* the capture's stamp; without a capture no clock read (one
         * clock_gettime per frame was ~4 % of T1's main loop, perf) */
        .ts = s->pcap ? qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) : 0,
    };
}

/* A copy of a frame the model passes by pointer (it reuses the bytes): out
 * of memory, the kept ones and this one go now, with the BQL. */
void qrnic_defer_copy(QrnicState *s, int kind, const uint8_t *frame, size_t len)
{
    uint8_t *copy = g_try_malloc(len);

    if (copy) {
        memcpy(copy, frame, len);
        qrnic_defer(s, kind, copy, len);
    } else {
        qrnic_run_send_now(s, kind, frame, len);
    }
}
