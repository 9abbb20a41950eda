#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write the seed corpus of fuzz_snapshot (tests/fuzz/corpus/snapshot/):
device snapshot streams of devices configured as fuzz_snapshot.c's world
(SNAP_CFG; functional profile, or teach), caught in different states:
idle after bring-up; RC traffic in flight; loss and retransmission timers
with fault rules holding frames; an inline SEND half sent; a QP in ERR
with an armed CQ.

    /usr/bin/python3 tests/fuzz/make_snapshot_corpus.py
"""
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import qrnic_harness as q  # noqa: E402

SNAP_CFG = ('max_qp=64,max_cq=64,max_mr=256,max_mtt=4096,max_pd=16,max_ah=16,'
            'max_srq=16,max_eq=8,max_uctx=8,max_xrcd=8,max_cqe=32768')


def world(profile):
    w = q.World(2, cfg=SNAP_CFG, mem_mb=64)
    if profile != 'functional':
        for d in w.devs:
            d.set_timing(profile)
    return w


def rc_traffic(w, iters, plan=None, loss=0.0):
    a, b = w.devs
    if loss:
        w.random_impairments(loss=loss, seed=3)
    c = q.connect_rc(a, b, mtu=1024, timeout=5)
    if plan:
        a.fault_plan(plan)
    rng = random.Random(1)
    src = a.reg_mr(c.pda, 1 << 15)
    dst = b.reg_mr(c.pdb, 1 << 15)
    src.fill_random(rng, 0, 1 << 15)
    c.qb.post_recv([(dst, 0x6000, 4096)], wr_id=9)
    c.qa.post_send('RDMA_WRITE', [(src, 0, 12000)], remote=(dst, 0), wr_id=1)
    c.qa.post_send('RDMA_READ', [(src, 0x4000, 5000)], remote=(dst, 0x100), wr_id=2)
    c.qa.post_send('SEND', [(src, 0x100, 2000)], wr_id=3)
    c.qa.post_send('FETCH_AND_ADD', [(src, 0x7000, 8)], remote=(dst, 0x7000), add=1, wr_id=4)
    w.run(max_iter=iters)
    return c


def seeds():
    out = {}
    w = world('functional')
    out['idle'] = w.devs[0].save()
    w.close()
    w = world('functional')
    rc_traffic(w, 3)
    out['rc-functional'] = w.devs[0].save()
    w.close()
    w = world('teach')
    rc_traffic(w, 40)
    out['rc-teach'] = w.devs[1].save()
    w.close()
    w = world('teach')
    rc_traffic(w, 120, plan='drop nth=3 count=4\ndelay dir=rx ns=40000 count=2', loss=0.05)
    out['faults-teach'] = w.devs[0].save()
    w.close()
    w = world('teach')
    a, b = w.devs
    c = q.connect_rc(a, b, mtu=256)
    dst = b.reg_mr(c.pdb, 1 << 12)
    c.qb.post_recv([(dst, 0, 4096)], wr_id=1)
    c.qa.post_send('SEND', inline=bytes(range(200)), wr_id=2)
    w.run(max_iter=3)
    out['inline-teach'] = a.save()
    w.close()
    w = world('functional')
    c = rc_traffic(w, 2)
    a = w.devs[0]
    c.cqa.arm()
    c.qa.modify('ERR')
    w.run(max_iter=2)
    out['err-armed'] = a.save()
    w.close()
    return out


if __name__ == '__main__':
    d = os.path.join(HERE, 'corpus', 'snapshot')
    os.makedirs(d, exist_ok=True)
    for name, s in seeds().items():
        with open(os.path.join(d, name), 'wb') as f:
            f.write(s)
        print(f'{name}: {len(s)} bytes')
