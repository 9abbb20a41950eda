# SPDX-License-Identifier: GPL-2.0-or-later
"""REREG_MR (issue: Verbs II, item 3; spec 6.6.19): new translation, PD and
access for a registered MR, keeping its key; everything checked before
anything changes; refused while windows are bound."""
import random

import qrnic_harness as q

AQ = {n: i for i, n in enumerate(q.AQ_STATUS)}


def one(cq):
    got = cq.wait(1)
    assert len(got) == 1, got
    return got[0]


def test_rereg_translation_keeps_the_key(conn):
    """The peer WRITEs through the same rkey before and after: the second
    WRITE lands in the new pages, the old ones keep the first."""
    rng = random.Random(1)
    a, b = conn.a.dev, conn.b.dev
    mr = a.reg_mr(conn.pda, 8192)
    src = b.reg_mr(conn.pdb, 8192)
    first = src.fill_random(rng, 0, 8192)
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 8192)], remote=(mr, 0))
    assert one(conn.cqb)['status_name'] == 'SUCCESS'
    old = [mr.bus_addr(0), mr.bus_addr(4096)]
    new = a.mem_alloc(3 * 4096)                       # contiguous pages
    iova = 0x5000_0000 + 100
    a.rereg_mr(mr.key, {'trans'}, iova=iova, length=9000, pbl_addr=new, npages=3,
               access=q.ACCESS_ALL)
    e = a.query_mr(mr.key)
    assert (e['key'], e['iova'], e['length'], e['npages']) == (mr.key, iova, 9000, 3)
    second = src.fill_random(rng, 0, 8192)
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 8192)], remote=(mr.rkey, iova + 500))
    assert one(conn.cqb)['status_name'] == 'SUCCESS'
    assert a.mem_read(new + 600, 8192) == second
    assert a.mem_read(old[0], 4096) + a.mem_read(old[1], 4096) == first
    # the old range is gone from the key
    assert not iova <= mr.iova < iova + 9000
    conn.qb.post_send('RDMA_READ', [(src, 0, 8)], remote=(mr.rkey, mr.iova))
    assert one(conn.cqb)['status_name'] == 'REM_ACCESS_ERR'


def test_rereg_access_and_pd(world):
    a, b = world.devs
    conn = q.connect_rc(a, b)
    mr = a.reg_mr(conn.pda, 4096, access=q.ACCESS_LOCAL_WRITE | q.ACCESS_REMOTE_READ)
    src = b.reg_mr(conn.pdb, 4096)
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(mr, 0))
    assert one(conn.cqb)['status_name'] == 'REM_ACCESS_ERR'    # no remote write yet
    a.rereg_mr(mr.key, {'access'}, access=q.ACCESS_ALL)
    conn = q.connect_rc(a, b, pd_a=conn.pda, pd_b=conn.pdb)
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(mr, 0))
    assert one(conn.cqb)['status_name'] == 'SUCCESS'
    pd2 = a.alloc_pd()
    a.rereg_mr(mr.key, {'pd'}, pd=pd2)
    assert a.query_mr(mr.key)['pdn'] == pd2.pdn
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(mr, 0))
    assert one(conn.cqb)['status_name'] == 'REM_ACCESS_ERR'    # now another PD's
    assert a.destroy('DESTROY_PD', pd2.pdn, check=False) == AQ['BUSY']   # the MR moved there


def test_rereg_failures_change_nothing(conn):
    a = conn.a.dev
    mr = a.reg_mr(conn.pda, 8192)
    before = a.query_mr(mr.key)
    new = a.mem_alloc(2 * 4096)
    off = q.cmd_offset
    cases = [
        (dict(change=0), 'BAD_PARAM', 'rereg_mr.change'),
        (dict(change=8), 'BAD_PARAM', 'rereg_mr.change'),
        (dict(change={'access'}, access=q.ACCESS_REMOTE_WRITE), 'BAD_PARAM', 'rereg_mr.reg.access'),
        (dict(change={'access'}, access=0x40), 'BAD_PARAM', 'rereg_mr.reg.access'),
        (dict(change={'pd'}, pd=0x777), 'BAD_HANDLE', 'rereg_mr.reg.pdn'),
        (dict(change={'trans'}, iova=0x1000, length=8192, pbl_addr=new, npages=3,
              access=q.ACCESS_ALL), 'BAD_PARAM', 'rereg_mr.reg.npages'),
        (dict(change={'trans'}, iova=0x1000, length=0, pbl_addr=new, npages=0,
              access=q.ACCESS_ALL), 'BAD_PARAM', 'rereg_mr.reg.length'),
        (dict(change={'trans'}, iova=0x1000, length=8192, pbl_addr=new + 8, npages=2,
              access=q.ACCESS_ALL), 'BAD_PARAM', 'rereg_mr.reg.pbl_addr'),
        (dict(change={'trans'}, flags=1, iova=new, length=8192, access=q.ACCESS_ALL, pd=0),
         None, None),   # a DMA MR of a kernel PD: allowed
    ]
    for kw, st, field in cases:
        kw = dict(kw)
        change = kw.pop('change')
        if st is None:
            assert a.rereg_mr(mr.key, change, **kw) == 0
            continue
        assert a.rereg_mr(mr.key, change, check=False, **kw) == AQ[st], kw
        assert a.last_cqe()['detail'] == off(field), kw
        assert a.query_mr(mr.key) == before
    assert a.rereg_mr(mr.key ^ 1, {'access'}, access=1, check=False) == AQ['BAD_HANDLE']
    fr = a.alloc_mr(conn.pda, 4)
    assert a.rereg_mr(fr.key, {'access'}, access=1, check=False) == AQ['BAD_HANDLE']


def test_rereg_refused_while_windows_are_bound(conn):
    a = conn.a.dev
    mr = a.reg_mr(conn.pda, 4096, access=q.ACCESS_ALL | q.ACCESS_MW_BIND)
    mw = a.alloc_mw(conn.pda, 2)
    mw.bind(conn.qa, mr, 0, 100)
    assert one(conn.cqa)['status_name'] == 'SUCCESS'
    assert a.rereg_mr(mr.key, {'access'}, access=q.ACCESS_ALL, check=False) == AQ['BUSY']
    mw.dealloc()
    assert a.rereg_mr(mr.key, {'access'}, access=q.ACCESS_ALL) == 0
