# SPDX-License-Identifier: GPL-2.0-or-later
"""Regression tests for guest-triggerable hangs and crashes of the device
model (issue: hardening).

Bug A: a QP put on the device's work list twice.  A service step that kicks
its own QP (a READ response whose memory read fails while another READ is
pending) and still has requester work used to be appended a second time by
the run loop: the list held a self-loop.  The list now refuses a second
insert by construction; the device's self-check walks it after every step.

Bug B: error propagation used to recurse (CQ overrun -> QP error -> flush
-> CQE post fails -> overrun of the next CQ -> ...), as deep as the guest
could chain QPs across CQs whose rings fail: SIGSEGV in QEMU.  Flushes are
now queued and drained iteratively.  The test runs the chain on a thread
with a small stack, in a child process so that a crash is a failure and
not the end of the test run."""
import os
import random
import subprocess
import sys
import textwrap

import qrnic_harness as q

HERE = os.path.dirname(os.path.abspath(__file__))


def _read_fails_with_requester_busy(world):
    """Two READs reach the responder in one batch; the first one's response
    memory read faults (IOMMU) part way while the second is pending, and
    the responder's own requester has more than a service step of WRITEs.
    Returns the connection and its MRs.  (Admin commands run the world:
    everything is set up before the requests are posted.)"""
    a, b = world.devs
    world.set_latency(0)            # both READ requests arrive together
    conn = q.connect_rc(a, b, mtu=1024, sq_log=8)
    la = a.reg_mr(conn.pda, 1 << 19)
    rb = b.reg_mr(conn.pdb, 1 << 19)
    lb = b.reg_mr(conn.pdb, 1 << 16)
    ra = a.reg_mr(conn.pda, 1 << 16)
    src = lb.fill_random(random.Random(5), 0, 1 << 16)
    b.mem_deny(rb.bus_addr(0x30000) & ~0xfff, 4096)
    conn.qa.post_send('RDMA_READ', [(la, 0, 0x40000)], remote=(rb, 0), wr_id=1)
    conn.qa.post_send('RDMA_READ', [(la, 0x40000, 1024)], remote=(rb, 0x40000), wr_id=2)
    # one iteration: a sends both requests; b has not run yet
    assert world.run(max_iter=1) == 'iter'
    assert b.stat('rx_packets') == 0 and a.stat('tx_packets') == 2
    # b's requester gets 32 x 64 KiB of WRITEs: its service steps stay busy
    for i in range(32):
        conn.qb.post_send('RDMA_WRITE', [(lb, 0, 1 << 16)], remote=(ra, 0), wr_id=100 + i)
    return conn, la, ra, src


def test_bug_a_work_list_never_holds_a_qp_twice(world):
    a, b = world.devs
    # a second connection whose QPs share the work lists with the first
    conn2 = q.connect_rc(a, b, mtu=1024)
    s2 = b.reg_mr(conn2.pdb, 4096)
    d2 = a.reg_mr(conn2.pda, 4096)
    s2.write(0, b'second connection')
    conn, la, ra, src = _read_fails_with_requester_busy(world)
    conn2.qb.post_send('RDMA_WRITE', [(s2, 0, 17)], remote=(d2, 0), wr_id=9)
    a.selfcheck()
    b.selfcheck()           # the lists checked after every service step, too
    for step in range(100000):
        r = world.run(max_iter=1)
        a.check()           # after every iteration: links agree, no QP twice
        b.check()
        if r == 'idle':
            break
    assert r == 'idle'
    assert d2.read(0, 17) == b'second connection'
    got = [(c['wr_id'], c['status_name']) for c in conn.cqa.poll()]
    assert got == [(1, 'REM_ACCESS_ERR'), (2, 'WR_FLUSH_ERR')]
    # the faulting QP's responder went to error: its own WRITEs are either
    # done or flushed, each exactly once, in order
    cb = conn.cqb.poll(100)
    assert [c['wr_id'] for c in cb] == list(range(100, 132))
    done = [c for c in cb if c['status_name'] == 'SUCCESS']
    assert all(c['status_name'] in ('SUCCESS', 'WR_FLUSH_ERR') for c in cb)
    if done:
        assert ra.read(0, 1 << 16) == src
    c2 = conn2.cqb.poll()
    assert len(c2) == 1 and c2[0]['wr_id'] == 9
    # the device keeps servicing: a fresh connection moves data
    conn3 = q.connect_rc(a, b, mtu=1024)
    s3 = a.reg_mr(conn3.pda, 4096)
    d3 = b.reg_mr(conn3.pdb, 4096)
    s3.write(0, b'still alive')
    conn3.qa.post_send('RDMA_WRITE', [(s3, 0, 11)], remote=(d3, 0))
    assert world.run() == 'idle'
    assert [c['status_name'] for c in conn3.cqa.poll()] == ['SUCCESS']
    assert d3.read(0, 11) == b'still alive'
    a.check()
    b.check()


CHAIN = textwrap.dedent('''
    import sys, threading
    sys.path.insert(0, %(here)r)
    import qrnic_harness as q
    N = %(n)d
    res = {}

    def chain():
        w = q.World(1, cfg='max_qp=%%d,max_cq=%%d' %% (N + 8, N + 8), cable=False)
        d = w.devs[0]
        pd = d.alloc_pd()
        cqs = [d.create_cq(1, dbrec=False) for _ in range(N + 1)]
        qps = []
        for i in range(N):
            # QP i completes sends on CQ i and receives on CQ i+1
            qp = d.create_qp(pd, cqs[i], cqs[i + 1], 'RC', sq_log=1, rq_log=1)
            qp.to_init()
            qp.post_recv([], wr_id=i)
            qps.append(qp)
        rings = [c.ring_addr for c in cqs]
        d.mem_deny(min(rings), max(rings) + 4096 - min(rings))   # every CQ ring faults
        qps[0].modify('ERR')
        res['run'] = w.run()
        res['states'] = sorted(set(qp.state for qp in qps))
        res['overruns'] = d.stat('cq_overruns')
        d.check()
        w.close()

    threading.stack_size(256 * 1024)
    t = threading.Thread(target=chain)
    t.start()
    t.join()
    print(res)
''')


def test_bug_b_error_propagation_is_iterative(tmp_path):
    """A QP-to-CQ chain 3000 long: the QP error cascades through every CQ
    (each overrun errors the next QP, whose flush overruns the next CQ).
    On a 256 KiB stack the recursive propagation died with SIGSEGV."""
    n = 3000
    script = tmp_path / 'chain.py'
    script.write_text(CHAIN % {'here': HERE, 'n': n})
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ))
    assert p.returncode == 0, f'child died (rc {p.returncode}): {p.stderr[-2000:]}'
    res = eval(p.stdout.strip().splitlines()[-1])
    assert res['run'] == 'idle'
    assert res['states'] == ['ERR']            # every QP of the chain reached error
    assert res['overruns'] == n                # every CQ but the first overran once


def test_65536_qps_created_used_and_destroyed():
    """max_qp 65536 (the QPN space of a ConnectX-sized device): every QPN
    2..65535 is handed out, the next CREATE_QP is NO_RESOURCES, two of the
    QPs move data (local loopback), all are destroyed and the lists stay
    consistent.  Idle QPs get no send window (model/qp.c req_window)."""
    with q.World(1, cfg='max_qp=65536,max_cq=4', mem_mb=1200, framelog=0) as w:
        d = w.devs[0]
        pd = d.alloc_pd()
        cq = d.create_cq(12)
        qps = []
        while True:
            qp = d.create_qp(pd, cq, cq, sq_log=1, sq_shift=7, rq_log=1, rq_shift=5,
                             check=False)
            if qp is None:
                break
            qps.append(qp)
            assert len(qps) <= 65534
        assert len(qps) == 65534 and d.last_status == 4          # NO_RESOURCES
        assert sorted(x.qpn for x in qps) == list(range(2, 65536))
        a, b = qps[0], qps[-1]
        for me, peer in ((a, b), (b, a)):
            me.to_init(q.ACCESS_ALL)
            me.to_rtr(d, peer.qpn, mtu=1024, rq_psn=0)
            me.to_rts(sq_psn=0)
        src = d.reg_mr(pd, 4096)
        dst = d.reg_mr(pd, 4096)
        src.write(0, b'qp 65535 says hello')
        b.post_send('RDMA_WRITE', [(src, 0, 19)], remote=(dst, 0), wr_id=7)
        assert w.run() == 'idle'
        assert [(c['wr_id'], c['status_name']) for c in cq.poll()] == [(7, 'SUCCESS')]
        assert dst.read(0, 19) == b'qp 65535 says hello'
        for x in qps:
            x.destroy()
        d.check()
        assert d.create_qp(pd, cq) is not None



def test_qp_high_water_mark_bounds_teardown_reset_and_snapshots():
    """Teardown, reset and snapshots walk the QP table only up to the highest
    slot ever used (qp_hwm): QPs made at high QPNs (the QPN window grows with
    the live QPs), some destroyed, are saved and loaded whole, every check of
    the lists (which also finds a QP in use above the mark) passes, a reset
    leaves no QP, and the device works on after it."""
    with q.World(1, cfg='max_qp=65536,max_cq=4', framelog=0) as w:
        d = w.devs[0]
        pd = d.alloc_pd()
        cq = d.create_cq(12)
        qps = [d.create_qp(pd, cq, cq, sq_log=1, sq_shift=7, rq_log=1, rq_shift=5)
               for _ in range(1500)]
        top = max(x.qpn for x in qps)
        assert top > 1023                                   # beyond the first window
        for x in qps[::2]:
            x.destroy()
        keep = sorted(x.qpn for x in qps[1::2])
        d.check()
        stream = d.save()
        d.snapshot()                                        # save, make anew, load
        d.check()
        assert d.save() == stream                           # the same QPs, top one included
        d.flr()                                             # qrnic_dev_reset
        d.check()
        d.init()
        pd = d.alloc_pd()
        cq = d.create_cq(4)
        qp = d.create_qp(pd, cq)
        assert qp is not None and qp.qpn < top
        d.check()


POISON = 0xa4          # even: its owner bit reads "not written yet"


def test_cqes_and_eqes_carry_no_stale_bytes(world):
    """pvrdma class 'uninitialised data reaching the guest': the CQ and EQ
    rings are filled with a poison byte before any entry is written; every
    CQE and EQE the device then writes (successes of every opcode, UD with
    GRH, immediate data, remote and local errors, flushes, async events)
    has its reserved bytes 0 and no field the entry does not use left as
    poison: each is written whole."""
    a, b = world.devs
    conn = q.connect_rc(a, b, mtu=1024, separate_cqs=True)
    ud_a, ud_b = q.create_ud(a), q.create_ud(b)
    cqs = [conn.cqa, conn.cqb, conn.a.rcq, conn.b.rcq, ud_a.cq, ud_b.cq]
    for cq in cqs:
        dev = cq.dev
        dev.mem_write(cq.ring_addr, bytes([POISON]) * (32 << cq.log_depth))
    for d in (a, b):
        d.mem_write(d.async_eq.ring_addr, bytes([POISON]) * (16 << d.async_eq.log_depth))
        d.mem_write(d.comp_eq.ring_addr, bytes([POISON]) * (16 << d.comp_eq.log_depth))
        for cq in cqs:
            if cq.dev is d:
                cq.arm()
    la = a.reg_mr(conn.pda, 1 << 16)
    rb = b.reg_mr(conn.pdb, 1 << 16)
    la.fill_random(random.Random(3))
    conn.qb.post_recv([(rb, 0, 4096)], wr_id=1)
    conn.qb.post_recv([(rb, 4096, 4096)], wr_id=2)
    conn.qa.post_send('SEND', [(la, 0, 100)], wr_id=10)
    conn.qa.post_send('SEND_WITH_IMM', [(la, 0, 0)], imm=0x12345678, wr_id=11)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 3000)], remote=(rb, 0x8000), wr_id=12)
    conn.qa.post_send('RDMA_READ', [(la, 0x4000, 2000)], remote=(rb, 0x8000), wr_id=13)
    conn.qa.post_send('FETCH_AND_ADD', [(la, 0x6000, 8)], remote=(rb, 0xa000), add=1, wr_id=14)
    assert world.run() == 'idle'
    ud_buf = b.reg_mr(ud_b.pd, 8192)
    ud_src = a.reg_mr(ud_a.pd, 4096)
    ud_b.qp.post_recv([(ud_buf, 0, 4096)], wr_id=20)
    ud_a.qp.post_send('SEND', [(ud_src, 0, 64)], ah=a.ah_to(ud_a.pd, b),
                      remote_qpn=ud_b.qp.qpn, qkey=0x11111111, wr_id=21)
    assert world.run() == 'idle'
    # a remote access error, then the flush of what follows, on both sides
    conn.qb.post_recv([(rb, 0, 64)], wr_id=3)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb.rkey ^ 0x200, rb.addr(0)), wr_id=15)
    conn.qa.post_send('SEND', [(la, 0, 64)], wr_id=16)
    assert world.run() == 'idle'
    conn.qb.modify('ERR')
    assert world.run() == 'idle'
    seen = 0
    for cq in cqs:
        n = len(cq.poll())
        assert n < (1 << cq.log_depth)        # the first pass over the ring: slots 0..n-1
        for i in range(n):
            raw = cq.dev.mem_read(cq.ring_addr + 32 * i, 32)
            c = q.Cqe.from_buffer_copy(raw)
            seen += 1
            assert c.rsvd == 0 and c.owner in (0, 1), raw.hex()
            if not c.flags & q.CQE_F_WITH_IMM:
                assert c.imm_data == 0, raw.hex()
            if c.flags & q.CQE_F_SEND:
                assert c.src_qp == 0, raw.hex()
            assert raw.count(bytes([POISON]) * 2) == 0, raw.hex()
        # and the slot after the last CQE is still untouched poison
        assert cq.dev.mem_read(cq.ring_addr + 32 * n, 32) == bytes([POISON]) * 32
    assert seen >= 12
    events = 0
    for d in (a, b):
        for eq in (d.async_eq, d.comp_eq):
            for e in eq.poll():
                events += 1
                assert e['rsvd0'] == 0 and bytes(e['rsvd1']) == b'\0\0\0' and \
                    e['owner'] in (0, 1), e
    assert events >= 3
