# SPDX-License-Identifier: GPL-2.0-or-later
"""Fast registration and invalidation (issue: Verbs II, item 1; spec 12.12):
ALLOC_MR, the REG_MR and LOCAL_INV WQEs, SEND_WITH_INV and the responder's
remote invalidation, the key's 8-bit variant, bad input, and all of it under
loss, duplicates and reordering."""
import random

import pytest

import qrnic_harness as q

AQ = {n: i for i, n in enumerate(q.AQ_STATUS)}
RW = q.ACCESS_LOCAL_WRITE | q.ACCESS_REMOTE_WRITE | q.ACCESS_REMOTE_READ


def one(cq, n=1):
    got = cq.wait(n)
    assert len(got) == n, got
    return got if n > 1 else got[0]


def registered(conn, length=3 * 4096 + 100, access=RW, max_pages=64, **kw):
    """An FRMR on side a, registered through a's QP; returns it."""
    a = conn.a.dev
    mr = a.alloc_mr(conn.pda, max_pages)
    mr.register(conn.qa, length, access=access, wr_id=0x5e9, **kw)
    c = one(conn.cqa)
    assert (c['status_name'], c['opcode_name'], c['wr_id']) == ('SUCCESS', 'REG_MR', 0x5e9), c
    return mr


def test_alloc_register_use_invalidate(conn, rng):
    """The whole life: free after ALLOC_MR (its key refused), valid after
    REG_MR (peer WRITE and READ land in the page-list pages), free again
    after LOCAL_INV (the peer's WRITE is NAKed)."""
    a, b = conn.a.dev, conn.b.dev
    mr = a.alloc_mr(conn.pda, 16)
    e = mr.query()
    assert e['flags'] == 4 and e['max_pages'] == 16 and e['key'] == mr.key  # FAST, not VALID
    assert a.query_device()['max_fast_reg_pages'] == 4096
    assert a.query_device()['caps'] & (1 << 8)

    mr.register(conn.qa, 2 * 4096 + 300, page_shift=12, access=RW, wr_id=7)
    c = one(conn.cqa)
    assert (c['status_name'], c['opcode_name'], c['wr_id']) == ('SUCCESS', 'REG_MR', 7)
    e = mr.query()
    assert e['flags'] == 4 | 1 and e['key'] == mr.key and e['length'] == 2 * 4096 + 300
    assert e['npages'] == len(mr.pages) and e['iova'] == mr.iova

    src = b.reg_mr(conn.pdb, 1 << 14)
    data = src.fill_random(rng, 0, mr.length)
    conn.qb.post_send('RDMA_WRITE', [(src, 0, mr.length)], remote=(mr, 0), wr_id=1)
    assert one(conn.cqb)['status_name'] == 'SUCCESS'
    assert mr.read() == data                       # the bytes are in the listed pages
    back = b.reg_mr(conn.pdb, 1 << 14)
    conn.qb.post_send('RDMA_READ', [(back, 0, 777)], remote=(mr, 4000), wr_id=2)
    assert one(conn.cqb)['status_name'] == 'SUCCESS'
    assert back.read(0, 777) == data[4000:4777]

    conn.qa.post_send('LOCAL_INV', invalidate=mr.key, wr_id=8)
    c = one(conn.cqa)
    assert (c['status_name'], c['opcode_name'], c['wr_id']) == ('SUCCESS', 'LOCAL_INV', 8)
    assert mr.query()['flags'] == 4
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 64)], remote=(mr, 0), wr_id=3)
    c = one(conn.cqb)
    assert c['status_name'] == 'REM_ACCESS_ERR', c
    assert mr.read(0, 64) == data[:64]             # nothing written
    assert a.stat('access_naks_sent') == 1


def test_send_with_inv_invalidates_remotely(conn, rng):
    """SEND_WITH_INV (one packet and three): the frames carry the IETH, the
    receive CQE says which rkey was invalidated, and the key is dead."""
    a, b = conn.a.dev, conn.b.dev
    mr = registered(conn)
    src = b.reg_mr(conn.pdb, 1 << 14)
    dst = a.reg_mr(conn.pda, 1 << 14)
    msg = src.fill_random(rng, 0, 3000)
    for n, size in ((1, 100), (3, 3000)):
        if n == 3:   # a second registration with the next variant
            mr.register(conn.qa, 4096 * 2, access=RW, wr_id=9)
            assert one(conn.cqa)['status_name'] == 'SUCCESS'
        conn.qa.post_recv([(dst, 0, 4096)], wr_id=50 + n)
        q.World.clear_frames(conn.world)
        conn.qb.post_send('SEND_WITH_INV', [(src, 0, size)], invalidate=mr.rkey, wr_id=n)
        assert one(conn.cqb)['status_name'] == 'SUCCESS'
        c = one(conn.cqa)
        assert (c['status_name'], c['opcode_name'], c['byte_len']) == ('SUCCESS', 'RECV', size)
        assert c['flags'] & q.CQE_F_WITH_INV and c['invalidated_rkey'] == mr.rkey, c
        assert not c['flags'] & q.CQE_F_WITH_IMM
        assert dst.read(0, size) == msg[:size]
        reqs = [f for f in conn.world.frames(roce_only=True) if f.src == 1 and
                f.opname.startswith('RC_SEND')]
        names = [f.opname for f in reqs]
        assert names == (['RC_SEND_ONLY_INV'] if n == 1 else
                         ['RC_SEND_FIRST', 'RC_SEND_MIDDLE', 'RC_SEND_LAST_INV']), names
        assert reqs[-1].ieth == mr.rkey and all(f.ieth is None for f in reqs[:-1])
        assert mr.query()['flags'] == 4            # free again
        conn.qb.post_send('RDMA_READ', [(src, 0, 8)], remote=(mr, 0), wr_id=99)
        c = one(conn.cqb)
        assert c['status_name'] == 'REM_ACCESS_ERR'
        # the QP pair is dead now (an access NAK): a fresh one for round two
        if n == 1:
            fresh = q.connect_rc(a, b, pd_a=conn.pda, pd_b=conn.pdb)
            conn.qa, conn.qb, conn.cqa, conn.cqb = fresh.qa, fresh.qb, fresh.cqa, fresh.cqb


def test_key_variant_is_checked_everywhere(conn, rng):
    """Registering with a new variant kills the old key: remote access with
    it is NAKed, a local SGE with it fails, LOCAL_INV of it fails."""
    a, b = conn.a.dev, conn.b.dev
    mr = registered(conn)
    old = mr.key
    conn.qa.post_send('LOCAL_INV', invalidate=old)
    assert one(conn.cqa)['status_name'] == 'SUCCESS'
    mr.register(conn.qa, 4096, access=RW, key=mr.new_key(0x42))
    assert one(conn.cqa)['status_name'] == 'SUCCESS'
    assert mr.key & 0xff == 0x42 and mr.key >> 8 == old >> 8 and mr.key != old
    src = b.reg_mr(conn.pdb, 4096)
    # a local SGE of the old variant: LOC_PROT_ERR, vendor LKEY
    conn.qa.post_send('SEND', [(mr, 0, 16, old)], wr_id=1)
    c = one(conn.cqa)
    assert (c['status_name'], c['vendor_err_name']) == ('LOC_PROT_ERR', 'LKEY'), c
    # remote access with the old variant from b: NAKed
    fresh = q.connect_rc(b, a, pd_a=conn.pdb, pd_b=conn.pda)
    fresh.qa.post_send('RDMA_WRITE', [(src, 0, 16)], remote=(old, mr.iova))
    assert one(fresh.cqa)['status_name'] == 'REM_ACCESS_ERR'
    # with the new one: fine
    fresh2 = q.connect_rc(b, a, pd_a=conn.pdb, pd_b=conn.pda)
    data = src.fill_random(rng, 0, 16)
    fresh2.qa.post_send('RDMA_WRITE', [(src, 0, 16)], remote=(mr, 0))
    assert one(fresh2.cqa)['status_name'] == 'SUCCESS'
    assert mr.read(0, 16) == data
    # LOCAL_INV with the old variant: LKEY, the MR stays valid
    fresh3 = q.connect_rc(a, b, pd_a=conn.pda, pd_b=conn.pdb)
    fresh3.qa.post_send('LOCAL_INV', invalidate=old)
    c = one(fresh3.cqa)
    assert (c['status_name'], c['vendor_err_name']) == ('LOC_QP_OP_ERR', 'LKEY'), c
    assert mr.query()['flags'] == 5


def _reg_fail(conn, mr, expect_verr, **kw):
    idx = mr.register(conn.qa, kw.pop('length', 4096), access=kw.pop('access', RW), **kw)
    c = one(conn.cqa)
    assert (c['status_name'], c['opcode_name'], c['vendor_err_name']) == \
        ('LOC_QP_OP_ERR', 'REG_MR', expect_verr), c
    assert c['wqe_index'] == idx & 0xffff
    assert conn.qa.state == 'ERR'
    assert mr.query()['flags'] == 4                # still free: nothing changed


BAD_REG = {
    'page_shift_11': ({'page_shift': 11}, 'BAD_WQE'),
    'page_shift_31': ({'page_shift': 31, 'pages': [0x1000], 'iova': 0}, 'BAD_WQE'),
    'access_bit_5': ({'access': RW | 0x20}, 'BAD_WQE'),
    'remote_write_no_local': ({'access': q.ACCESS_REMOTE_WRITE}, 'BAD_WQE'),
    'length_0': ({'length': 0, 'pages': [], 'npages': 0}, 'BAD_WQE'),
    'npages_short': ({'length': 3 * 4096, 'iova': 0x10000, 'npages': 2}, 'BAD_WQE'),
    'npages_over_max': ({'length': 9 * 4096, 'iova': 0x10000}, 'BAD_WQE'),
    'pbl_misaligned': ({'pbl_addr': 'odd'}, 'BAD_WQE'),
    'page_misaligned': ({'pages': 'odd'}, 'BAD_WQE'),
    'pbl_dma_fails': ({'pbl_addr': 'denied'}, 'DMA'),
    'iova_wraps': ({'iova': (1 << 64) - 4096, 'length': 8192}, 'BAD_WQE'),
}


@pytest.mark.parametrize('case', sorted(BAD_REG))
def test_reg_mr_bad_wqe(conn, case):
    kw, verr = BAD_REG[case]
    kw = dict(kw)
    a = conn.a.dev
    mr = a.alloc_mr(conn.pda, 8)
    if kw.get('pbl_addr') == 'odd':
        kw['pbl_addr'] = a.mem_alloc(64, 8) + 4
    elif kw.get('pbl_addr') == 'denied':
        kw['pbl_addr'] = a.mem_alloc(4096)
        a.mem_deny(kw['pbl_addr'], 4096)
    if kw.get('pages') == 'odd':
        kw['pages'] = [a.mem_alloc(4096) + 8]
        kw['iova'] = 0x1000
    if kw.get('iova') == (1 << 64) - 4096:
        kw['pages'] = [a.mem_alloc(4096), a.mem_alloc(4096)]
        kw['npages'] = 2
    _reg_fail(conn, mr, verr, **kw)


def test_reg_mr_state_pd_and_key_errors(world):
    """REG_MR of a valid FRMR (MR_STATE), of an ordinary MR (MR_STATE), of
    another PD's FRMR (PD), of a key whose index holds nothing (LKEY)."""
    a, b = world.devs
    cases = []
    for what in ('valid', 'ordinary', 'other_pd', 'no_mr'):
        conn = q.connect_rc(a, b)
        fr = a.alloc_mr(conn.pda, 8)
        if what == 'valid':
            fr.register(conn.qa, 4096, access=RW)
            assert one(conn.cqa)['status_name'] == 'SUCCESS'
            fr.register(conn.qa, 4096, access=RW)
            c = one(conn.cqa)
        elif what == 'ordinary':
            mr = a.reg_mr(conn.pda, 4096)
            fr.register(conn.qa, 4096, access=RW, key=mr.key)
            c = one(conn.cqa)
        elif what == 'other_pd':
            other = a.alloc_mr(a.alloc_pd(), 8)
            other.register(conn.qa, 4096, access=RW)
            c = one(conn.cqa)
        else:
            fr.register(conn.qa, 4096, access=RW, key=(a.query_device()['max_mr'] - 1) << 8)
            c = one(conn.cqa)
        cases.append((what, c['status_name'], c['vendor_err_name']))
    assert cases == [('valid', 'LOC_QP_OP_ERR', 'MR_STATE'),
                     ('ordinary', 'LOC_QP_OP_ERR', 'MR_STATE'),
                     ('other_pd', 'LOC_QP_OP_ERR', 'PD'),
                     ('no_mr', 'LOC_QP_OP_ERR', 'LKEY')], cases


def test_reg_mr_wqe_reserved_bytes(conn):
    mr = conn.a.dev.alloc_mr(conn.pda, 8)
    mr.register(conn.qa, 4096, access=RW, rsvd=1)
    c = one(conn.cqa)
    assert (c['status_name'], c['vendor_err_name']) == ('LOC_QP_OP_ERR', 'BAD_WQE'), c
    assert conn.a.dev.stat('bad_wqes') == 1


def test_local_inv_of_ordinary_mr_fails_like_rxe(conn):
    mr = conn.a.dev.reg_mr(conn.pda, 4096)
    conn.qa.post_send('LOCAL_INV', invalidate=mr.key, wr_id=4)
    c = one(conn.cqa)
    assert (c['status_name'], c['opcode_name'], c['vendor_err_name']) == \
        ('LOC_QP_OP_ERR', 'LOCAL_INV', 'MR_STATE'), c
    assert mr.query()['flags'] == 1                # still valid


def test_local_inv_bad_fields(conn):
    """LOCAL_INV with SGEs, INLINE or SOLICITED: a bad WQE."""
    mr = registered(conn)
    conn.qa.post_send('LOCAL_INV', invalidate=mr.key, solicited=True)
    c = one(conn.cqa)
    assert (c['status_name'], c['vendor_err_name']) == ('LOC_QP_OP_ERR', 'BAD_WQE'), c
    assert mr.query()['flags'] == 5


def test_send_with_inv_of_a_bad_rkey(conn, rng):
    """The responder cannot invalidate: it NAKs (the requester gets
    REM_INV_REQ_ERR), its receive completes in error, both QPs go to ERR."""
    a, b = conn.a.dev, conn.b.dev
    ordinary = a.reg_mr(conn.pda, 4096)
    src = b.reg_mr(conn.pdb, 4096)
    dst = a.reg_mr(conn.pda, 4096)
    conn.qa.post_recv([(dst, 0, 4096)], wr_id=77)
    conn.qb.post_send('SEND_WITH_INV', [(src, 0, 64)], invalidate=ordinary.key, wr_id=5)
    c = one(conn.cqb)
    assert (c['status_name'], c['wr_id']) == ('REM_INV_REQ_ERR', 5), c
    r = one(conn.cqa)
    assert (r['wr_id'], r['status_name'], r['vendor_err_name']) == \
        (77, 'REM_INV_REQ_ERR', 'MR_STATE'), r
    assert conn.qa.state == 'ERR' and conn.qb.state == 'ERR'
    assert ordinary.query()['flags'] == 1          # untouched
    assert a.stat('inv_req_naks_sent') == 1


@pytest.mark.parametrize('qp_type', ['UC', 'UD'])
def test_send_with_inv_is_rc_only(world, qp_type):
    a, b = world.devs
    if qp_type == 'UC':
        conn = q.connect_rc(a, b, qp_type='UC')
        qp, cq, pd = conn.qa, conn.cqa, conn.pda
    else:
        pd = a.alloc_pd()
        side = q.create_ud(a, pd)
        qp, cq = side.qp, side.cq
    src = a.reg_mr(pd, 4096)
    qp.post_send('SEND_WITH_INV', [(src, 0, 16)], invalidate=0x100)
    c = one(cq)
    assert (c['status_name'], c['vendor_err_name']) == ('LOC_QP_OP_ERR', 'BAD_WQE'), c


def test_local_inv_waits_for_earlier_wqes(conn, rng):
    """A WRITE from the FRMR (as local source) whose packet is lost, then
    LOCAL_INV of the FRMR: the retransmission still reads the MR, the WRITE
    succeeds, and the invalidation completes after it."""
    a, b = conn.a.dev, conn.b.dev
    mr = registered(conn, length=4096)
    data = mr.fill_random(rng, 0, 4096)
    dst = b.reg_mr(conn.pdb, 4096)
    conn.world.rule('drop', src=0, opcode='RC_WRITE_FIRST', count=1)
    conn.qa.post_send('RDMA_WRITE', [(mr, 0, 4096)], remote=(dst, 0), wr_id=1)
    conn.qa.post_send('LOCAL_INV', invalidate=mr.key, wr_id=2)
    got = conn.cqa.wait(2)
    assert [(c['wr_id'], c['opcode_name'], c['status_name']) for c in got] == \
        [(1, 'RDMA_WRITE', 'SUCCESS'), (2, 'LOCAL_INV', 'SUCCESS')], got
    assert dst.read() == data
    assert a.stat('retransmitted_packets') >= 1
    assert mr.query()['flags'] == 4


def test_reg_mr_then_send_carrying_the_key(conn, rng):
    """The storage pattern: REG_MR unsignaled, then a SEND telling the peer
    the rkey; the peer READs and WRITEs through it at once."""
    a, b = conn.a.dev, conn.b.dev
    mr = a.alloc_mr(conn.pda, 32)
    cmd = a.reg_mr(conn.pda, 4096)
    rbuf = b.reg_mr(conn.pdb, 4096)
    bbuf = b.reg_mr(conn.pdb, 1 << 17)
    for rnd in range(4):
        length = rng.randrange(1, 32 * 4096 - 4096)
        mr.register(conn.qa, length, access=RW, signaled=False)
        data = mr.fill_random(rng)
        cmd.write(0, mr.rkey.to_bytes(4, 'little') + mr.iova.to_bytes(8, 'little') +
                  length.to_bytes(4, 'little'))
        conn.qb.post_recv([(rbuf, 0, 64)])
        conn.qa.post_send('SEND', [(cmd, 0, 16)], wr_id=rnd)
        assert one(conn.cqa)['opcode_name'] == 'SEND'   # REG_MR was unsignaled
        assert one(conn.cqb)['status_name'] == 'SUCCESS'
        raw = rbuf.read(0, 16)
        rkey, va, ln = (int.from_bytes(raw[0:4], 'little'), int.from_bytes(raw[4:12], 'little'),
                        int.from_bytes(raw[12:16], 'little'))
        conn.qb.post_send('RDMA_READ', [(bbuf, 0, ln)], remote=(rkey, va), wr_id=10)
        assert one(conn.cqb)['status_name'] == 'SUCCESS'
        assert bbuf.read(0, ln) == data
        new = rng.randbytes(ln)
        bbuf.write(0, new)
        conn.qb.post_send('RDMA_WRITE', [(bbuf, 0, ln)], remote=(rkey, va), wr_id=11)
        assert one(conn.cqb)['status_name'] == 'SUCCESS'
        assert mr.read() == new
        # the peer invalidates it for us, with its answer
        conn.qa.post_recv([(cmd, 64, 64)], wr_id=20)
        conn.qb.post_send('SEND_WITH_INV', [(bbuf, 0, 8)], invalidate=rkey, wr_id=12)
        assert one(conn.cqb)['status_name'] == 'SUCCESS'
        c = one(conn.cqa)
        assert c['invalidated_rkey'] == rkey
    assert a.guest_errors == 0


def test_alloc_mr_bad_input(world):
    a = world.devs[0]
    pd = a.alloc_pd()
    u = a.alloc_uctx()
    upd = a.alloc_pd(uctx=u)
    off = q.cmd_offset
    for pdn, pages, flags, rsvd, st, field in (
            (pd.pdn, 0, 0, 0, 'BAD_PARAM', 'alloc_mr.max_pages'),
            (pd.pdn, 4097, 0, 0, 'BAD_PARAM', 'alloc_mr.max_pages'),
            (pd.pdn, 1, 1, 0, 'BAD_PARAM', 'alloc_mr.flags'),
            (pd.pdn, 1, 0, 1, 'BAD_PARAM', 'alloc_mr.rsvd'),
            (upd.pdn, 1, 0, 0, 'BAD_PARAM', 'alloc_mr.pdn'),
            (0x7777, 1, 0, 0, 'BAD_HANDLE', 'alloc_mr.pdn')):
        assert a.alloc_mr(pdn, pages, flags, rsvd, check=False) is None
        cqe = a.last_cqe()
        assert (cqe['status'], cqe['detail']) == (AQ[st], off(field)), (pdn, pages, cqe)
    # the MTT is exhausted honestly, and DEREG_MR gives it all back
    max_mtt = a.query_device()['max_mtt']
    mrs = []
    while True:
        mr = a.alloc_mr(pd, 4096, check=False)
        if mr is None:
            assert a.last_status == AQ['NO_RESOURCES']
            break
        mrs.append(mr)
        assert len(mrs) <= max_mtt // 4096
    assert len(mrs) >= 1
    assert a.destroy('DESTROY_PD', pd.pdn, check=False) == AQ['BUSY']   # the FRMRs hold it
    for mr in mrs:
        mr.dereg()
    again = [a.alloc_mr(pd, 4096) for _ in mrs]    # all of the MTT came back
    for mr in again:   # DEREG_MR takes the key with any variant
        assert a.destroy('DEREG_MR', (mr.key & ~0xff) | ((mr.key + 0x33) & 0xff)) == 0
        assert a.query_mr(mr.key, check=False) is None
    pd.destroy()


def test_frwr_under_loss_dup_reorder(world):
    """Cycles of REG_MR, peer WRITE + READ through the rkey, and remote
    invalidation by SEND_WITH_INV, on a lossy, duplicating, reordering wire:
    every byte right, every key dead after its SEND_WITH_INV, each
    invalidation executed once (a duplicate SEND_WITH_INV does not
    invalidate the next registration)."""
    rng = random.Random(31)
    a, b = world.devs
    conn = q.connect_rc(a, b, timeout=8, retry_cnt=7)
    world.random_impairments(loss=0.05, dup=0.05, reorder=0.05, seed=7)
    mr = a.alloc_mr(conn.pda, 16)
    rbuf = a.reg_mr(conn.pda, 4096)
    src = b.reg_mr(conn.pdb, 16 * 4096)
    back = b.reg_mr(conn.pdb, 16 * 4096)
    for rnd in range(25):
        length = rng.randrange(1, 15 * 4096)
        mr.register(conn.qa, length, access=RW, signaled=False)
        conn.qa.post_recv([(rbuf, 0, 4096)], wr_id=rnd)
        data = src.fill_random(rng, 0, length)
        conn.qb.post_send('RDMA_WRITE', [(src, 0, length)], remote=(mr, 0), signaled=False)
        conn.qb.post_send('RDMA_READ', [(back, 0, length)], remote=(mr, 0), signaled=False)
        conn.qb.post_send('SEND_WITH_INV', [(src, 0, 1500)], invalidate=mr.rkey, wr_id=rnd,
                          fence=True)
        c = one(conn.cqb)
        assert (c['status_name'], c['wr_id']) == ('SUCCESS', rnd), c
        r = one(conn.cqa)
        assert (r['status_name'], r['wr_id'], r['invalidated_rkey']) == \
            ('SUCCESS', rnd, mr.rkey), r
        assert mr.read() == data and back.read(0, length) == data
        assert mr.query()['flags'] == 4, rnd
    ws = world.wire_stats()
    assert a.stat('duplicate_requests') + b.stat('duplicate_requests') > 0, ws
    assert a.stat('retransmitted_packets') + b.stat('retransmitted_packets') > 0
    assert a.guest_errors == 0 and b.guest_errors == 0
