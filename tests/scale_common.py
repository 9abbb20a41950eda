# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared by bench/scale and tests/test_model_scale.py: create and destroy
many QPs and MRs through the admin queue of one harness device (the model
runs in this process, so its memory is this process's RSS)."""
import struct
import time

import qrnic_harness as q


def _status_kib(field):
    with open('/proc/self/status') as f:
        for ln in f:
            if ln.startswith(field + ':'):
                return int(ln.split()[1])
    return 0


def rss_kib():
    return _status_kib('VmRSS')


def peak_rss_kib():
    """The process's peak RSS (VmHWM) since reset_peak_rss()."""
    return _status_kib('VmHWM')


def reset_peak_rss():
    """Peak RSS back to the current RSS (Linux: clear_refs 5); False if
    the kernel refuses (then VmHWM is the peak since the process began)."""
    try:
        with open('/proc/self/clear_refs', 'w') as f:
            f.write('5')
        return True
    except OSError:
        return False


class Laps:
    """Seconds per `every` operations of one kind, block by block: the
    start of a run against its end (near equal: each operation costs the
    same at any table fill, O(1))."""

    def __init__(self, every=1000):
        self.every = every
        self.blocks = {}        # kind -> [seconds of each block]
        self._t = {}

    def tick(self, kind, i):
        """Call before operation i (0-based) of kind; one more call with
        i = count closes the last block."""
        if i % self.every == 0:
            now = time.perf_counter()
            if kind in self._t:
                self.blocks.setdefault(kind, []).append(now - self._t[kind])
            self._t[kind] = now

    def done(self, kind):
        self._t.pop(kind, None)

    def line(self, kind):
        """The median block of the first and of the last tenth of the run
        (medians: the machine is shared, single blocks are noisy)."""
        b = self.blocks.get(kind)
        if not b:
            return f'{kind}: fewer than {self.every}'
        k = max(1, len(b) // 10)
        first = sorted(b[:k])[k // 2]
        last = sorted(b[-k:])[k // 2]
        return (f'{kind}: {first * 1e3:.1f} ms per {self.every} at the start, '
                f'{last * 1e3:.1f} ms at the end (x{last / first:.2f}; medians of the '
                f'first and last {k} of {len(b)} blocks)')


def qp_world(max_qp):
    return q.World(1, cfg=f'max_qp={max_qp},max_cq=4', mem_mb=1200 if max_qp > 8192 else 256,
                   framelog=0)


def qp_cycle(d, pd, cq, ring_every=1, laps=None):
    """Every free QPN taken (CREATE_QP until NO_RESOURCES), the SQ doorbell
    of every ring_every-th QP rung once (which gives it its send window,
    model/qp.c req_window; 0: none), all destroyed.  laps: a Laps to time
    'create QP' and 'destroy QP' in.
    Returns (count, rss after create, seconds)."""
    t = time.time()
    mark = d.mem_mark()         # the rings come from simulated memory: reused each round
    qps = []
    while True:
        if laps:
            laps.tick('create QP', len(qps))
        qp = d.create_qp(pd, cq, cq, sq_log=1, sq_shift=7, rq_log=1, rq_shift=5, check=False)
        if qp is None:
            break
        qps.append(qp)
    if laps:
        laps.done('create QP')      # the block with the refused create is not closed
    assert d.last_status == 4                      # NO_RESOURCES: the table is full
    if ring_every:
        for qp in qps[::ring_every]:
            qp.ring_sq()
    full = rss_kib()
    for i, qp in enumerate(qps):
        if laps:
            laps.tick('destroy QP', i)
        qp.destroy()
    if laps:
        laps.tick('destroy QP', len(qps))
        laps.done('destroy QP')
    d.mem_release(mark)
    return len(qps), full, time.time() - t


def mr_world(n, default_limits=False):
    """default_limits: the device's default max_mr and max_mtt (2^24 each)
    rather than n + 16."""
    cfg = '' if default_limits else f'max_mr={n + 16},max_mtt={n + 16}'
    return q.World(1, cfg=cfg, mem_mb=64, framelog=0)


def mr_cycle(d, pd, page, pbl, n, progress=None, laps=None):
    """n MRs of one 4 KiB page by raw REG_MR commands, alternately a DMA
    (physical) MR and one mapped through a one-entry page list (an MTT
    entry each), then all deregistered.  laps: a Laps to time 'REG_MR' and
    'DEREG_MR' in.  Returns (rss after create, seconds)."""
    t = time.time()
    keys = []
    for i in range(n):
        if laps:
            laps.tick('REG_MR', i)
        phys = i & 1
        body = struct.pack('<IIIBBHQQQII', pd.pdn, q.ACCESS_LOCAL_WRITE, 1 if phys else 0, 12,
                           0 if phys else 1, 0, page if phys else 0x7f00_0000_0000 + i * 4096,
                           4096, 0 if phys else pbl, 0 if phys else 1, 0)
        st, c = d.admin(struct.pack('<BBHI', q.CMD['REG_MR'], 0, 0, 0) + body)
        assert st == 0, (i, st, c)
        keys.append(c['result'][0])
        if progress and (i + 1) % progress == 0:
            print(f'    {i + 1} MRs: {time.time() - t:.1f} s, RSS {rss_kib()} KiB', flush=True)
    if laps:
        laps.tick('REG_MR', n)
        laps.done('REG_MR')
    full = rss_kib()
    for i, k in enumerate(keys):
        if laps:
            laps.tick('DEREG_MR', i)
        st, c = d.admin(struct.pack('<BBHII', q.CMD['DEREG_MR'], 0, 0, 0, k))
        assert st == 0, (k, st)
    if laps:
        laps.tick('DEREG_MR', n)
        laps.done('DEREG_MR')
    return full, time.time() - t


def mr_setup(d):
    pd = d.alloc_pd()
    page = d.mem_alloc(4096)
    pbl = d.mem_alloc(4096)
    d.mem_write(pbl, struct.pack('<Q', page))
    return pd, page, pbl
