# SPDX-License-Identifier: GPL-2.0-or-later
"""Memory windows type 1 and 2 (issue: Verbs II, item 2; spec 12.13):
ALLOC_MW, BIND_MW, the window's bounds and rights on remote access, MW_BIND
on the MR enforced, type 2 bound to one QP, invalidation local and remote,
binds racing incoming WRITEs, DEREG_MR refused while windows are bound,
bad input."""
import random

import pytest

import qrnic_harness as q

AQ = {n: i for i, n in enumerate(q.AQ_STATUS)}
RW_BIND = q.ACCESS_LOCAL_WRITE | q.ACCESS_REMOTE_WRITE | q.ACCESS_REMOTE_READ | q.ACCESS_MW_BIND
RR, RW = q.ACCESS_REMOTE_READ, q.ACCESS_REMOTE_WRITE


def one(cq):
    got = cq.wait(1)
    assert len(got) == 1, got
    return got[0]


def bound(conn, mw_type=2, off=4096, length=8192, access=RR | RW, mr_len=4 * 4096):
    """An MR on side a with MW_BIND, a window of mw_type bound through a's QP."""
    a = conn.a.dev
    mr = a.reg_mr(conn.pda, mr_len, access=RW_BIND)
    mw = a.alloc_mw(conn.pda, mw_type)
    assert mw.query()['flags'] == (0x8 | (0x10 if mw_type == 2 else 0))   # MW, not VALID
    mw.bind(conn.qa, mr, off, length, access=access, wr_id=0xb1)
    c = one(conn.cqa)
    assert (c['status_name'], c['opcode_name'], c['wr_id']) == ('SUCCESS', 'BIND_MW', 0xb1), c
    return mr, mw


@pytest.mark.parametrize('mw_type', [1, 2])
def test_window_grants_its_range_only(world, mw_type):
    """Peer WRITE and READ through the window's rkey land in the MR inside
    the window; one byte past it, a byte before it, or a right it lacks is
    NAKed and writes nothing."""
    rng = random.Random(mw_type)
    a, b = world.devs
    conn = q.connect_rc(a, b)
    mr, mw = bound(conn, mw_type, off=4096 + 100, length=5000, access=RW)
    e = mw.query()
    assert e['flags'] & 1 and e['iova'] == mr.addr(4196) and e['length'] == 5000
    assert e['max_pages'] == mr.key >> 8                        # its MR's index
    src = b.reg_mr(conn.pdb, 8192)
    data = src.fill_random(rng, 0, 5000)
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 5000)], remote=(mw, 0))
    assert one(conn.cqb)['status_name'] == 'SUCCESS'
    assert mr.read(4196, 5000) == data and mr.read(0, 4196) == bytes(4196)
    src.fill_random(rng, 0, 8192)
    for op, n, off in (('RDMA_WRITE', 2, 4999), ('RDMA_WRITE', 1, -1), ('RDMA_READ', 16, 0)):
        if mw_type == 2:   # it answers only the QP bound through: bind it on a new one
            conn2 = q.connect_rc(a, b, pd_a=conn.pda, pd_b=conn.pdb)
            conn.qa.destroy()                        # frees the window (it may be in ERR)
            mw.bind(conn2.qa, mr, 4096 + 100, 5000, access=RW)
            assert one(conn2.cqa)['status_name'] == 'SUCCESS'
            conn = conn2
            req = conn.qb
            cq = conn.cqb
        else:              # any QP of the PD
            c2 = q.connect_rc(b, a, pd_a=conn.pdb, pd_b=conn.pda)
            req, cq = c2.qa, c2.cqa
        req.post_send(op, [(src, 0, n)], remote=(mw.rkey, mw.addr(0) + off))
        assert one(cq)['status_name'] == 'REM_ACCESS_ERR', (op, n, off)
    assert mr.read(4196, 5000) == data and mr.read(0, 4196) == bytes(4196)
    assert mr.read(4196 + 5000) == bytes(mr.length - 4196 - 5000)


def test_type2_window_only_through_its_qp(world):
    a, b = world.devs
    conn = q.connect_rc(a, b)
    mr, mw = bound(conn, 2)
    other = q.connect_rc(a, b, pd_a=conn.pda, pd_b=conn.pdb)   # same PDs, other QPs
    src = b.reg_mr(conn.pdb, 4096)
    other.qb.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(mw, 0))
    assert one(other.cqb)['status_name'] == 'REM_ACCESS_ERR'
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(mw, 0))
    assert one(conn.cqb)['status_name'] == 'SUCCESS'


def test_type1_window_any_qp_of_the_pd_and_rebind(world):
    """Type 1: usable through any QP of its PD; binding again moves it (the
    old rkey dies); length 0 unbinds."""
    a, b = world.devs
    conn = q.connect_rc(a, b)
    mr, mw = bound(conn, 1, off=0, length=4096)
    old = mw.rkey
    other = q.connect_rc(a, b, pd_a=conn.pda, pd_b=conn.pdb)
    src = b.reg_mr(conn.pdb, 4096)
    other.qb.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(mw, 0))
    assert one(other.cqb)['status_name'] == 'SUCCESS'
    mw.bind(conn.qa, mr, 8192, 4096)                 # rebind elsewhere, new variant
    assert one(conn.cqa)['status_name'] == 'SUCCESS'
    assert mw.rkey != old and mw.rkey >> 8 == old >> 8
    other.qb.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(old, mr.addr(0)))
    assert one(other.cqb)['status_name'] == 'REM_ACCESS_ERR'
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(mw, 0))
    assert one(conn.cqb)['status_name'] == 'SUCCESS'
    assert a.query_mr(mr.key)['key'] == mr.key
    mw.bind(conn.qa, mr, 0, 0)                       # unbind
    assert one(conn.cqa)['status_name'] == 'SUCCESS'
    assert mw.query()['flags'] == 0x8
    mr.dereg()                                       # nothing bound any more


def test_invalidate_type2_locally_and_remotely(world):
    rng = random.Random(4)
    a, b = world.devs
    conn = q.connect_rc(a, b)
    mr, mw = bound(conn, 2)
    conn.qa.post_send('LOCAL_INV', invalidate=mw.rkey, wr_id=3)
    c = one(conn.cqa)
    assert (c['status_name'], c['opcode_name']) == ('SUCCESS', 'LOCAL_INV'), c
    assert mw.query()['flags'] == 0x18
    src = b.reg_mr(conn.pdb, 4096)
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(mw.rkey, mr.addr(4096)))
    assert one(conn.cqb)['status_name'] == 'REM_ACCESS_ERR'
    # bound again (a type 2 window must be free to bind), then remote invalidation
    conn = q.connect_rc(a, b, pd_a=conn.pda, pd_b=conn.pdb)
    mw.bind(conn.qa, mr, 0, 4096)
    assert one(conn.cqa)['status_name'] == 'SUCCESS'
    dst = a.reg_mr(conn.pda, 4096)
    conn.qa.post_recv([(dst, 0, 4096)])
    msg = src.fill_random(rng, 0, 100)
    conn.qb.post_send('SEND_WITH_INV', [(src, 0, 100)], invalidate=mw.rkey)
    assert one(conn.cqb)['status_name'] == 'SUCCESS'
    r = one(conn.cqa)
    assert r['invalidated_rkey'] == mw.rkey and dst.read(0, 100) == msg
    assert mw.query()['flags'] == 0x18
    mw.dealloc()
    mr.dereg()


def test_bind_errors(world):
    """Each failure completes with MW_BIND_ERR and the reason, the QP goes to
    ERROR, the window is unchanged."""
    a, b = world.devs
    pd = a.alloc_pd()
    no_bind = a.reg_mr(pd, 4096, access=q.ACCESS_ALL)            # no MW_BIND
    ro = a.reg_mr(pd, 4096, access=q.ACCESS_REMOTE_READ | q.ACCESS_MW_BIND)  # no LOCAL_WRITE
    good = a.reg_mr(pd, 4096, access=RW_BIND)
    other_pd_mr = a.reg_mr(a.alloc_pd(), 4096, access=RW_BIND)
    cases = {
        'mr_without_mw_bind': (dict(mr=no_bind), 'ACCESS'),
        'remote_write_no_local_write': (dict(mr=ro, access=RW), 'ACCESS'),
        'mr_of_other_pd': (dict(mr=other_pd_mr), 'PD'),
        'outside_the_mr': (dict(mr=good, off=4000, length=200), 'BOUNDS'),
        'stale_mr_key': (dict(mr=good, mr_lkey=good.key ^ 1), 'LKEY'),
        'zero_based': (dict(mr=good, access=RR | 0x20), 'BAD_WQE'),
        'local_write_right': (dict(mr=good, access=q.ACCESS_LOCAL_WRITE), 'BAD_WQE'),
        'key_of_an_mr': (dict(mr=good, key=good.key), 'MR_STATE'),
    }
    got = {}
    for name, (kw, _) in cases.items():
        conn = q.connect_rc(a, b, pd_a=pd)
        mw = a.alloc_mw(pd, 2)
        kw = dict(kw)
        mr = kw.pop('mr')
        mw.bind(conn.qa, mr, kw.pop('off', 0), kw.pop('length', 1024), **kw)
        c = one(conn.cqa)
        got[name] = (c['status_name'], c['opcode_name'], c['vendor_err_name'])
        assert conn.qa.state == 'ERR'
        assert a.query_mr(mw.key & ~0xff)['flags'] == 0x18 if name != 'key_of_an_mr' else True
    want = {n: ('MW_BIND_ERR', 'BIND_MW', v) for n, (_, v) in cases.items()}
    assert got == want
    # a bound type 2 window cannot be bound again before it is invalidated
    conn = q.connect_rc(a, b, pd_a=pd)
    mw = a.alloc_mw(pd, 2)
    mw.bind(conn.qa, good, 0, 100)
    assert one(conn.cqa)['status_name'] == 'SUCCESS'
    mw.bind(conn.qa, good, 0, 200)
    c = one(conn.cqa)
    assert (c['status_name'], c['vendor_err_name']) == ('MW_BIND_ERR', 'MR_STATE'), c


def test_mw_rkey_is_no_lkey_and_type1_is_not_invalidated(conn):
    mr, mw = bound(conn, 1, off=0, length=4096)
    conn.qa.post_send('SEND', [(mr.addr(0), 8, mw.rkey)])     # the window's rkey as an lkey
    c = one(conn.cqa)
    assert (c['status_name'], c['vendor_err_name']) == ('LOC_PROT_ERR', 'LKEY'), c
    conn2 = q.connect_rc(conn.a.dev, conn.b.dev, pd_a=conn.pda, pd_b=conn.pdb)
    conn2.qa.post_send('LOCAL_INV', invalidate=mw.rkey)
    c = one(conn2.cqa)
    assert (c['status_name'], c['vendor_err_name']) == ('LOC_QP_OP_ERR', 'MR_STATE'), c


def test_dereg_and_invalidate_refused_while_bound(conn):
    """DEREG_MR of an MR with a window bound: BUSY; LOCAL_INV of an FRMR
    with a window bound: MR_STATE.  After the window is freed both work."""
    a = conn.a.dev
    mr, mw = bound(conn, 2)
    assert a.destroy('DEREG_MR', mr.key, check=False) == AQ['BUSY']
    fr = a.alloc_mr(conn.pda, 4)
    fr.register(conn.qa, 4096, access=RW_BIND)
    assert one(conn.cqa)['status_name'] == 'SUCCESS'
    mw2 = a.alloc_mw(conn.pda, 2)
    mw2.bind(conn.qa, fr, 0, 4096)
    assert one(conn.cqa)['status_name'] == 'SUCCESS'
    conn.qa.post_send('LOCAL_INV', invalidate=fr.key)
    c = one(conn.cqa)
    assert (c['status_name'], c['vendor_err_name']) == ('LOC_QP_OP_ERR', 'MR_STATE'), c
    assert fr.query()['flags'] == 5
    assert mw.dealloc() == 0 and mw2.dealloc() == 0                    # frees them
    assert mr.dereg() == 0 and fr.dereg() == 0


def test_destroying_the_qp_frees_its_type2_windows(world):
    a, b = world.devs
    conn = q.connect_rc(a, b)
    mr, mw = bound(conn, 2)
    conn.qa.destroy()
    assert mw.query()['flags'] == 0x18               # free: a new QP of that QPN gets nothing
    assert mr.dereg() == 0


def test_alloc_mw_bad_input(world):
    a = world.devs[0]
    pd = a.alloc_pd()
    off = q.cmd_offset
    for kw, st, field in ((dict(mw_type=0), 'BAD_PARAM', 'alloc_mw.type'),
                          (dict(mw_type=3), 'BAD_PARAM', 'alloc_mw.type'),
                          (dict(rsvd0=1), 'BAD_PARAM', 'alloc_mw.rsvd0'),
                          (dict(flags=1), 'BAD_PARAM', 'alloc_mw.flags'),
                          (dict(rsvd=1), 'BAD_PARAM', 'alloc_mw.rsvd')):
        assert a.alloc_mw(pd, check=False, **kw) is None
        cqe = a.last_cqe()
        assert (cqe['status'], cqe['detail']) == (AQ[st], off(field)), kw
    assert a.alloc_mw(0x7777, check=False) is None and a.last_status == AQ['BAD_HANDLE']
    u = a.alloc_uctx()
    assert a.alloc_mw(a.alloc_pd(uctx=u), 1) is not None          # user PDs may
    mw = a.alloc_mw(pd, 2)
    assert a.destroy('DESTROY_PD', pd.pdn, check=False) == AQ['BUSY']
    assert a.destroy('DEREG_MR', (mw.key & ~0xff) | 0x77) == 0     # any variant
    pd.destroy()
    assert a.query_device()['max_mw'] == a.query_device()['max_mr']


def test_binds_racing_incoming_writes(world):
    """A stream of peer WRITEs through a type 1 window while its owner keeps
    moving it between two halves of the MR, on a lossy, duplicating,
    reordering wire: a WRITE that succeeds landed where it was aimed, a
    refused one ends the connection (a fresh one follows), and the guard
    pages no window ever covered stay untouched."""
    rng = random.Random(77)
    a, b = world.devs
    world.random_impairments(loss=0.03, reorder=0.05, dup=0.03, seed=3)
    pda, pdb = a.alloc_pd(), b.alloc_pd()
    mr = a.reg_mr(pda, 3 * 8192, access=RW_BIND)     # halves 0 and 1, then a guard
    mw = a.alloc_mw(pda, 1)
    src = b.reg_mr(pdb, 8192)
    owner = q.connect_rc(a, b, pd_a=pda, pd_b=pdb, timeout=8)
    writer = q.connect_rc(b, a, pd_a=pdb, pd_b=pda, timeout=8)
    ok = refused = moved = 0
    for rnd in range(30):
        half = rnd % 2
        mw.bind(owner.qa, mr, half * 8192, 8192, access=RW)
        assert one(owner.cqa)['status_name'] == 'SUCCESS'
        rkey, va = mw.rkey, mw.addr(0)
        pat = bytes([rnd + 1]) * 2000
        src.write(0, pat)
        for k in range(3):
            writer.qa.post_send('RDMA_WRITE', [(src, 0, 2000)], remote=(rkey, va + k * 2000),
                                wr_id=k)
        if rng.random() < 0.5:   # the owner moves the window while they fly
            mw.bind(owner.qa, mr, (1 - half) * 8192, 8192, access=RW)
            assert one(owner.cqa)['status_name'] == 'SUCCESS'
            moved += 1
        got = writer.cqa.wait(3)
        assert len(got) == 3, got
        st = [c['status_name'] for c in got]
        assert set(st) <= {'SUCCESS', 'REM_ACCESS_ERR', 'WR_FLUSH_ERR'}, st
        for c in got:
            if c['status_name'] == 'SUCCESS':
                ok += 1
                assert mr.read(half * 8192 + c['wr_id'] * 2000, 2000) == pat
        if 'REM_ACCESS_ERR' in st:
            refused += 1
            writer = q.connect_rc(b, a, pd_a=pdb, pd_b=pda, timeout=8)
    assert ok > 0 and refused > 0 and moved > 0, (ok, refused, moved)
    assert mr.read(2 * 8192) == bytes(8192)
    a.check()
    b.check()
