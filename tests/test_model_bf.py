"""BlueFlame: a send WQE written into the doorbell page (spec 3.2.1, ABI 1.5).

The device takes the WQE from the BF write instead of reading it from the
SQ ring, validates that copy exactly like a ring WQE, and falls back to the
ring (counting bf_fallbacks) on a torn write, a bad size or an index that
is not the next one.
"""
import random

import pytest

import qrnic_harness as q

def _pair(profile=None, **tm):
    w = q.World(2)
    if profile:
        for dev in w.devs:
            dev.set_timing(profile, **tm)
    c = q.connect_rc(w.devs[0], w.devs[1], mtu=1024)
    src = c.a.dev.reg_mr(c.pda, 4096)
    dst = c.b.dev.reg_mr(c.pdb, 4096)
    return w, c, src, dst

def _post(c, src, dst, kind, bf, **bfargs):
    if kind == 'inline':
        c.qa.post_send('RDMA_WRITE', inline=b'inline!!' * 4, remote=(dst, 64), ring=not bf)
    elif kind == 'send':
        c.qb.post_recv([(dst, 512, 256)])
        c.qa.post_send('SEND', inline=bytes(range(40)), ring=not bf)
    elif kind == 'sge':
        src.write(0, bytes(range(200)))
        c.qa.post_send('RDMA_WRITE', [(src, 0, 100), (src, 100, 100)], remote=(dst, 1024),
                       ring=not bf)
    if bf:
        c.qa.ring_bf(**bfargs)

@pytest.mark.parametrize('kind', ['inline', 'send', 'sge'])
def test_bf_post_delivers_what_a_ring_post_does(kind):
    """Same WQE through the ring and through BF: same frames on the wire
    (byte for byte), same data at the responder, same CQEs; the BF post
    is counted and needs no DMA read of the WQE."""
    out = []
    for bf in (False, True):
        w, c, src, dst = _pair()
        reads = c.a.dev.dma_stats()['reads']
        _post(c, src, dst, kind, bf)
        assert w.run() == 'idle'
        cqes = c.cqa.poll()
        assert [e['status_name'] for e in cqes] == ['SUCCESS']
        rcqes = c.cqb.poll() if kind == 'send' else []
        frames = [(f.src, f.data) for f in w.frames(roce_only=True)]
        out.append((frames, dst.read(0, 4096), cqes, rcqes,
                    c.a.dev.dma_stats()['reads'] - reads,
                    c.a.dev.stat('bf_posts'), c.a.dev.stat('bf_fallbacks')))
    ring, bf = out
    assert bf[:4] == ring[:4]
    assert ring[5:] == (0, 0) and bf[5:] == (1, 0)
    # the WQE header and its inline data / SGE list are not read by DMA:
    # inline WQEs need no read at all, SGE WQEs only their payload
    payload_reads = 2 if kind == 'sge' else 0     # one read per SGE
    assert bf[4] == payload_reads
    assert ring[4] == 2 + payload_reads

def test_bf_copy_is_taken_once_and_validated():
    """The device uses the bytes of the BF write, not the ring's later
    contents (copy once), and validates them like a ring WQE."""
    w, c, src, dst = _pair()
    c.qa.post_send('RDMA_WRITE', inline=b'from-bf!', remote=(dst, 0), ring=False)
    c.qa.ring_bf()
    # the ring now says something else: not read
    slot = c.qa.sq_addr
    c.a.dev.mem_write(slot + 64, b'RINGRING')
    w.run()
    assert c.cqa.poll()[0]['status_name'] == 'SUCCESS'
    assert dst.read(0, 8) == b'from-bf!'

    # a bad WQE in the BF copy fails as a ring WQE would, even if the
    # ring holds a good one by the time the device runs
    c.qa.post_send('RDMA_WRITE', inline=b'x' * 8, remote=(dst, 0), ring=False)
    idx = c.qa.indexes()['sq_pi'] - 1
    addr = slot + (idx % 64) * 512
    good = c.a.dev.mem_read(addr, 64)
    c.a.dev.mem_write(addr, bytes([q.WR['RDMA_WRITE'], 0xf0]) + good[2:])   # reserved flags
    c.qa.ring_bf()
    c.a.dev.mem_write(addr, good)
    w.run()
    e = c.cqa.poll()[0]
    assert (e['status_name'], e['vendor_err_name']) == ('LOC_QP_OP_ERR', 'BAD_WQE')
    assert c.a.dev.stat('bad_wqes') == 1

def _fallback_case(c, dst, case):
    """Post an 8-byte inline WRITE and ring BF in a bad way; returns the
    expected (bf_fallbacks, doorbells_ignored) increments."""
    c.qa.post_send('RDMA_WRITE', inline=b'fallback', remote=(dst, 0), ring=False)
    if case == 'torn':
        c.qa.ring_bf(skip=1 << 3)           # word 3 of the header never stored
    elif case == 'short':
        c.qa.ring_bf(nwords=4)              # less than the 64-byte header
    elif case == 'too_long':
        c.qa.ring_bf(nwords=33)             # more than the 256-byte buffer
    elif case == 'missing_inline':
        c.qa.ring_bf(nwords=8)              # the header only: inline data not in it
    elif case == 'two_posted':
        c.qa.post_send('RDMA_WRITE', inline=b'fallback', remote=(dst, 8), ring=False)
        c.qa.ring_bf()                      # the index moves by two
    elif case == 'buffer1_torn':
        c.qa.ring_bf(buf=1, skip=1)
    else:
        raise AssertionError(case)

@pytest.mark.parametrize('case', ['torn', 'short', 'too_long', 'missing_inline', 'two_posted',
                                  'buffer1_torn'])
def test_bad_bf_write_falls_back_to_the_ring(case):
    w, c, src, dst = _pair()
    c.a.dev.clear_logs()
    _fallback_case(c, dst, case)
    assert w.run() == 'idle'
    n = 2 if case == 'two_posted' else 1
    cqes = c.cqa.poll()
    assert [e['status_name'] for e in cqes] == ['SUCCESS'] * n
    assert dst.read(0, 8 * n) == b'fallback' * n
    assert c.a.dev.stat('bf_fallbacks') == 1
    # bf_posts counts BF writes taken; a copy found too short when the
    # WQE is fetched is taken, then counted as a fallback too
    posts = 1 if case == 'missing_inline' else 0
    assert c.a.dev.stat('bf_posts') == posts
    tps = [t for t in c.a.dev.tracepoints() if t[0] == 'ub_bf_fallback']
    assert len(tps) == 1
    want = {'torn': 1, 'buffer1_torn': 1, 'short': 2, 'too_long': 2, 'two_posted': 3,
            'missing_inline': 5}[case]
    assert tps[0][1]['reason'] == want
    # the next, good, BF post after a bad one is taken
    c.qa.post_send('RDMA_WRITE', inline=b'good one', remote=(dst, 64), ring=False)
    c.qa.ring_bf()
    w.run()
    assert dst.read(64, 8) == b'good one'
    assert c.a.dev.stat('bf_posts') == posts + 1

def test_bf_write_for_another_context_is_ignored():
    """A BF control word on one context's page naming another context's QP
    is ignored like any such doorbell: not posted, not counted as BF."""
    w = q.World(2)
    dev = w.devs[0]
    u1, u2 = dev.alloc_uctx(), dev.alloc_uctx()
    pd = dev.alloc_pd(uctx=u1)
    cq = dev.create_cq(6, uctx=u1)
    qp = dev.create_qp(pd, cq, cq, uctx=u1)
    qp.post_send('SEND', inline=b'intruder', ring=False)
    ign, dbs = dev.stat('doorbells_ignored'), dev.stat('doorbells')
    dev.clear_logs()
    qp.ring_bf(page=u2)
    assert dev.stat('doorbells_ignored') == ign + 1
    assert dev.stat('doorbells') == dbs
    assert (dev.stat('bf_posts'), dev.stat('bf_fallbacks')) == (0, 0)
    assert [v['sq_pi'] for v in dev.view('qp') if v['qpn'] == qp.qpn] == [0]
    assert [t[0] for t in dev.tracepoints()] == ['err_db_no_qp']
    assert w.run() == 'idle'
    assert dev.stat('tx_packets') == 0
    # the same write on its own page is taken
    qp.ring_bf()
    assert (dev.stat('bf_posts'), dev.stat('bf_fallbacks')) == (1, 0)

def test_bf_stage_is_cleared_with_its_context():
    """Words staged by a context are not used by the next owner of the
    page: DEALLOC/ALLOC_UCTX clear the page's BF buffers."""
    w = q.World(2)
    dev = w.devs[0]
    u = dev.alloc_uctx()
    base = u * 0x1000 + 0x800
    for i in range(8):
        dev.db_write(base + 8 * i, 0x1122334455667788, 8)
    dev.destroy('DEALLOC_UCTX', u)
    assert dev.alloc_uctx() == u
    pd = dev.alloc_pd(uctx=u)
    cq = dev.create_cq(6, uctx=u)
    qp = dev.create_qp(pd, cq, cq, uctx=u)
    fb = dev.stat('bf_fallbacks')
    qp.post_send('SEND', inline=b'', ring=False, check=False)
    dev.db_write(base + 0x100, qp.qpn | (8 << 24) | (1 << 32), 8)
    assert dev.stat('bf_fallbacks') == fb + 1     # torn: nothing staged since

def test_random_bf_writes_never_crash():
    """Random stores anywhere in the BF area (any size, any value, control
    words for the QP with any nwords and index), with the device running
    in between: its lists stay consistent, and a connection made after
    the storm posts by BF as usual."""
    rng = random.Random(23)
    w, c, src, dst = _pair()
    dev = c.a.dev
    for _ in range(3000):
        if rng.random() < 0.3:
            off = 0x800 + rng.randrange(2) * 0x200 + 0x100
            val = c.qa.qpn | rng.randrange(256) << 24 | rng.randrange(4) << 32
            size = 8
        else:
            off = 0x800 + rng.randrange(0x400)
            val = rng.getrandbits(64)
            size = rng.choice((1, 2, 4, 8, 8, 8))
        dev.db_write(off, val, size)
        if rng.random() < 0.05:
            w.run(max_iter=10000)
            dev.check()
    assert w.run() in ('idle', 'time')
    dev.check()
    st = dev.stats()
    assert st['doorbells_ignored'] > 0 and st['bf_fallbacks'] > 0
    c2 = q.connect_rc(w.devs[0], w.devs[1], mtu=1024)
    dst2 = c2.b.dev.reg_mr(c2.pdb, 4096)
    c2.qa.post_send('RDMA_WRITE', inline=b'survived', remote=(dst2, 0), ring=False)
    c2.qa.ring_bf()
    w.run()
    assert c2.cqa.poll()[0]['status_name'] == 'SUCCESS'
    assert dst2.read(0, 8) == b'survived'
    assert dev.stat('bf_posts') == st['bf_posts'] + 1


def test_bf_pending_across_save_and_load():
    """A BF WQE accepted but not yet fetched is not in the snapshot: after
    load the device reads it from the ring, which holds it too."""
    w, c, src, dst = _pair()
    c.qa.post_send('RDMA_WRITE', inline=b'migrated', remote=(dst, 0), ring=False)
    c.qa.ring_bf()
    stream = c.a.dev.save()
    c.a.dev.load(stream)
    reads = c.a.dev.dma_stats()['reads']
    assert w.run() == 'idle'
    assert c.cqa.poll()[0]['status_name'] == 'SUCCESS'
    assert dst.read(0, 8) == b'migrated'
    assert c.a.dev.dma_stats()['reads'] - reads >= 2      # header + inline from the ring

def _one_way(bf, **tm):
    """cx5-100g: ns from the post (the doorbell or BF write) of an 8 B inline
    WRITE to its data being visible in the responder's memory (second WRITE
    on the connection, so caches are warm)."""
    w, c, src, dst = _pair('cx5-100g', **tm)
    times = []
    for i in range(2):
        c.qa.post_send('RDMA_WRITE', inline=b'one-way!', remote=(dst, 8 * i), ring=not bf)
        t0 = w.now
        if bf:
            c.qa.ring_bf()
        while dst.read(8 * i, 8) != b'one-way!':
            assert w.run_to_write(1) == 'stop'
        times.append(w.now - t0)
        w.run()
        assert c.cqa.poll()[0]['status_name'] == 'SUCCESS'
    return times[1]

def test_bf_one_way_time_under_cx5():
    """BF replaces the WQE header and inline-data reads (two dependent
    PCIe reads of pcie_read_ns each) by the BF write (bf_write_ns and the
    bytes): the one-way time drops by that difference."""
    ring, bf = _one_way(False), _one_way(True)
    assert ring - bf >= 2 * 250 - 160 - 20
    assert bf < ring
    # bf_write_ns is charged: more of it, later data
    assert _one_way(True, bf_write_ns=1150) - bf == 1000
    assert _one_way(False, bf_write_ns=1150) == ring
