# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared by bench/scale and tests/test_model_scale.py: create and destroy
many QPs and MRs through the admin queue of one harness device (the model
runs in this process, so its memory is this process's RSS)."""
import struct
import time

import qrnic_harness as q


def rss_kib():
    with open('/proc/self/status') as f:
        for ln in f:
            if ln.startswith('VmRSS:'):
                return int(ln.split()[1])
    return 0


def qp_world(max_qp):
    return q.World(1, cfg=f'max_qp={max_qp},max_cq=4', mem_mb=1200 if max_qp > 8192 else 256,
                   framelog=0)


def qp_cycle(d, pd, cq, ring_every=1):
    """Every free QPN taken (CREATE_QP until NO_RESOURCES), the SQ doorbell
    of every ring_every-th QP rung once (which gives it its send window,
    model/qp.c req_window; 0: none), all destroyed.
    Returns (count, rss after create, seconds)."""
    t = time.time()
    mark = d.mem_mark()         # the rings come from simulated memory: reused each round
    qps = []
    while True:
        qp = d.create_qp(pd, cq, cq, sq_log=1, sq_shift=7, rq_log=1, rq_shift=5, check=False)
        if qp is None:
            break
        qps.append(qp)
    assert d.last_status == 4                      # NO_RESOURCES: the table is full
    if ring_every:
        for qp in qps[::ring_every]:
            qp.ring_sq()
    full = rss_kib()
    for qp in qps:
        qp.destroy()
    d.mem_release(mark)
    return len(qps), full, time.time() - t


def mr_world(n):
    return q.World(1, cfg=f'max_mr={n + 16},max_mtt={n + 16}', mem_mb=64, framelog=0)


def mr_cycle(d, pd, page, pbl, n, progress=None):
    """n MRs of one 4 KiB page by raw REG_MR commands, alternately a DMA
    (physical) MR and one mapped through a one-entry page list (an MTT
    entry each), then all deregistered.  Returns (rss after create, seconds)."""
    t = time.time()
    keys = []
    for i in range(n):
        phys = i & 1
        body = struct.pack('<IIIBBHQQQII', pd.pdn, q.ACCESS_LOCAL_WRITE, 1 if phys else 0, 12,
                           0 if phys else 1, 0, page if phys else 0x7f00_0000_0000 + i * 4096,
                           4096, 0 if phys else pbl, 0 if phys else 1, 0)
        st, c = d.admin(struct.pack('<BBHI', q.CMD['REG_MR'], 0, 0, 0) + body)
        assert st == 0, (i, st, c)
        keys.append(c['result'][0])
        if progress and (i + 1) % progress == 0:
            print(f'    {i + 1} MRs: {time.time() - t:.1f} s, RSS {rss_kib()} KiB', flush=True)
    full = rss_kib()
    for k in keys:
        st, c = d.admin(struct.pack('<BBHII', q.CMD['DEREG_MR'], 0, 0, 0, k))
        assert st == 0, (k, st)
    return full, time.time() - t


def mr_setup(d):
    pd = d.alloc_pd()
    page = d.mem_alloc(4096)
    pbl = d.mem_alloc(4096)
    d.mem_write(pbl, struct.pack('<Q', page))
    return pd, page, pbl
