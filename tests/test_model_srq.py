# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared receive queues (issue: Verbs I, item 1; spec 12.10): many QPs
(RC, UC, UD) taking receives from one SRQ, the consumer record, the limit
event, LAST_WQE_REACHED, RNR on an empty SRQ, bad input."""
import random

import pytest

import qrnic_harness as q

AQ = {n: i for i, n in enumerate(q.AQ_STATUS)}
MTU = 1024


def srq_conns(world, n=3, qp_type='RC', srq_log=6, limit=0, loopback=False, **kw):
    """n connections from device 0 into QPs of device 1 (or of device 0 itself)
    that all share one SRQ on the receiving side."""
    a, b = world.devs
    b = a if loopback else b
    pda, pdb = a.alloc_pd(), (b.alloc_pd() if not loopback else None)
    pdb = pdb or pda
    srq = b.create_srq(pdb, log_depth=srq_log, limit=limit)
    conns = []
    for _ in range(n):
        cqa, cqb = a.create_cq(10), b.create_cq(10)
        qa = a.create_qp(pda, cqa, cqa, qp_type)
        qb = b.create_qp(pdb, cqb, cqb, qp_type, srq=srq)
        for me, peer, rq in ((qa, qb, 0x200), (qb, qa, 0x100)):
            me.to_init(q.ACCESS_ALL)
            me.to_rtr(peer.dev, peer.qpn, mtu=MTU, rq_psn=rq)
        qa.to_rts(sq_psn=0x100, **kw)
        qb.to_rts(sq_psn=0x200, **kw)
        conns.append((qa, qb, cqa, cqb))
    return srq, pda, pdb, conns


@pytest.mark.parametrize('qp_type', ['RC', 'UC'])
@pytest.mark.parametrize('loopback', [False, True], ids=['wire', 'loopback'])
def test_three_qps_share_one_srq(world, qp_type, loopback):
    srq, pda, pdb, conns = srq_conns(world, 3, qp_type, loopback=loopback)
    a = world.devs[0]
    b = a if loopback else world.devs[1]
    src = a.reg_mr(pda, 1 << 16)
    dst = b.reg_mr(pdb, 1 << 16)
    data = src.fill_random(random.Random(9))
    for i in range(12):
        srq.post_recv([(dst, i * 0x1000, 0x1000)], wr_id=100 + i)
    # interleaved: QP 0, 1, 2, 0, 1, 2 ... each SENDs 2 KiB (2 packets)
    for i in range(12):
        qa = conns[i % 3][0]
        qa.post_send('SEND', [(src, i * 2048, 2048)], wr_id=i)
    assert world.run() == 'idle'
    recvs = []
    for qa, qb, cqa, cqb in conns:
        assert [c['status_name'] for c in cqa.poll()] == ['SUCCESS'] * 4
        got = cqb.poll()
        assert len(got) == 4 and all(c['qpn'] == qb.qpn for c in got)
        recvs += got
    assert sorted(c['wr_id'] for c in recvs) == list(range(100, 112))
    # every WQE once; the CQE's wqe_index is the SRQ slot of its wr_id
    for c in recvs:
        assert c['status_name'] == 'SUCCESS' and c['byte_len'] == 2048
        assert c['wqe_index'] == c['wr_id'] - 100
        slot = c['wr_id'] - 100
        sent = [i for i in range(12) if conns[i % 3][1].qpn == c['qpn']]
        assert dst.read(slot * 0x1000, 2048) in [data[i * 2048:(i + 1) * 2048] for i in sent]
    # all twelve messages landed somewhere, each exactly once
    landed = sorted(dst.read(s * 0x1000, 2048) for s in range(12))
    assert landed == sorted(data[i * 2048:(i + 1) * 2048] for i in range(12))
    assert srq.ci == 12
    assert srq.query() == {'limit': 0, 'max_wr': 64, 'posted': 0}


def test_ud_qps_on_an_srq(world):
    a, b = world.devs
    pd = b.alloc_pd()
    srq = b.create_srq(pd)
    cq = b.create_cq(8)
    uds = []
    for _ in range(2):
        qp = b.create_qp(pd, cq, cq, 'UD', srq=srq)
        qp.to_init(qkey=0x11111111)
        qp.to_rtr()
        qp.to_rts()
        uds.append(qp)
    s = q.create_ud(a)
    buf = a.reg_mr(s.pd, 4096)
    buf.write(0, b'to an srq')
    dst = b.reg_mr(pd, 8192)
    srq.post_recv([(dst, 0, 4096)], wr_id=1)
    srq.post_recv([(dst, 4096, 4096)], wr_id=2)
    ah = a.ah_to(s.pd, b)
    for qp in uds:
        s.qp.post_send('SEND', [(buf, 0, 9)], ah=ah, remote_qpn=qp.qpn, qkey=0x11111111)
    assert world.run() == 'idle'
    got = cq.poll()
    assert sorted((c['qpn'], c['wr_id']) for c in got) == [(uds[0].qpn, 1), (uds[1].qpn, 2)]
    assert dst.read(40, 9) == b'to an srq' and dst.read(4096 + 40, 9) == b'to an srq'


def test_empty_srq_rnr_then_delivery(world):
    """RC on an empty SRQ: RNR NAK, the requester waits, the SEND lands once a
    WQE is posted; UC on an empty SRQ drops the message."""
    srq, pda, pdb, conns = srq_conns(world, 1, 'RC', rnr_retry=7)
    a, b = world.devs
    qa, qb, cqa, cqb = conns[0]
    src = a.reg_mr(pda, 4096)
    dst = b.reg_mr(pdb, 4096)
    src.write(0, b'late receive')
    qa.post_send('SEND', [(src, 0, 12)], wr_id=5)
    world.run_for(50_000)
    assert b.stat('rnr_naks_sent') >= 1 and not cqb.poll()
    srq.post_recv([(dst, 0, 4096)], wr_id=6)
    assert world.run() == 'idle'
    assert [c['status_name'] for c in cqa.poll()] == ['SUCCESS']
    assert [(c['wr_id'], c['byte_len']) for c in cqb.poll()] == [(6, 12)]
    assert dst.read(0, 12) == b'late receive'


def test_srq_limit_event_fires_once_below_limit(world):
    srq, pda, pdb, conns = srq_conns(world, 1, 'RC', limit=3)
    a, b = world.devs
    qa, qb, cqa, cqb = conns[0]
    src = a.reg_mr(pda, 4096)
    dst = b.reg_mr(pdb, 1 << 16)
    b.async_eq.poll()
    for i in range(6):
        srq.post_recv([(dst, i * 4096, 4096)], wr_id=i)
    for i in range(4):
        qa.post_send('SEND', [(src, 0, 16)], wr_id=i)
    assert world.run() == 'idle'
    ev = [(e['event'], e['handle']) for e in b.async_eq.poll()]
    # 6 posted: taking the 4th leaves 2 < 3 -> one event, the limit disarmed
    assert ev == [('SRQ_LIMIT_REACHED', srq.srqn)]
    assert srq.query()['limit'] == 0 and srq.query()['posted'] == 2
    for i in range(2):
        qa.post_send('SEND', [(src, 0, 16)], wr_id=10 + i)
    assert world.run() == 'idle'
    assert b.async_eq.poll() == []          # not armed any more
    srq.modify(limit=1)                      # re-arm: fires when one is taken below 1
    srq.post_recv([(dst, 0, 4096)], wr_id=20)
    qa.post_send('SEND', [(src, 0, 16)], wr_id=12)
    assert world.run() == 'idle'
    assert [(e['event'], e['handle']) for e in b.async_eq.poll()] == \
        [('SRQ_LIMIT_REACHED', srq.srqn)]
    assert len(cqb.poll()) == 7


def test_last_wqe_reached_and_flush_on_error(world):
    """A QP on an SRQ moved to ERROR: its receive in progress is flushed,
    LAST_WQE_REACHED is raised, the SRQ's other WQEs stay for other QPs."""
    srq, pda, pdb, conns = srq_conns(world, 2, 'RC')
    a, b = world.devs
    src = a.reg_mr(pda, 1 << 16)
    dst = b.reg_mr(pdb, 1 << 16)
    for i in range(4):
        srq.post_recv([(dst, i * 4096, 4096)], wr_id=i)
    b.async_eq.poll()
    (qa0, qb0, cqa0, cqb0), (qa1, qb1, cqa1, cqb1) = conns
    qb0.modify('ERR')
    assert world.run() == 'idle'
    assert [(e['event'], e['handle']) for e in b.async_eq.poll()] == \
        [('QP_LAST_WQE_REACHED', qb0.qpn)]
    assert cqb0.poll() == []                 # it had taken no WQE
    assert srq.query()['posted'] == 4
    qa1.post_send('SEND', [(src, 0, 100)], wr_id=1)
    assert world.run() == 'idle'
    assert [(c['wr_id'], c['status_name']) for c in cqb1.poll()] == [(0, 'SUCCESS')]


def test_bad_srq_wqe_completes_in_error(world):
    srq, pda, pdb, conns = srq_conns(world, 1, 'RC')
    a, b = world.devs
    qa, qb, cqa, cqb = conns[0]
    src = a.reg_mr(pda, 4096)
    dst = b.reg_mr(pdb, 4096)
    srq.post_recv([(dst, 0, 16)] * (q.MAX_SGE + 1), wr_id=7, check=False)  # > QRNIC_MAX_SGE
    qa.post_send('SEND', [(src, 0, 16)], wr_id=1)
    assert world.run() == 'idle'
    got = cqb.poll()
    assert [(c['wr_id'], c['status_name']) for c in got] == [(7, 'LOC_QP_OP_ERR')]
    assert qb.state == 'ERR'
    assert b.stat('bad_wqes') == 1


def test_srq_admin_validation(world):
    a, b = world.devs
    pd = a.alloc_pd()
    cq = a.create_cq(6)

    def st(fn, *args, **kw):
        r = fn(*args, check=False, **kw)
        return AQ['OK'] if r is not None else a.last_status

    assert st(a.create_srq, pd, log_depth=0) == AQ['BAD_PARAM']
    assert st(a.create_srq, pd, log_depth=16) == AQ['BAD_PARAM']
    assert st(a.create_srq, pd, wqe_shift=4) == AQ['BAD_PARAM']
    assert st(a.create_srq, pd, wqe_shift=10) == AQ['BAD_PARAM']
    assert st(a.create_srq, pd, log_depth=4, limit=16) == AQ['BAD_PARAM']
    assert st(a.create_srq, 999) == AQ['BAD_HANDLE']
    srq = a.create_srq(pd, log_depth=4)
    # a QP on an SRQ of another context, on no SRQ, or with its own RQ too
    assert st(a.create_qp, pd, cq, srq=999) == AQ['BAD_HANDLE']
    a.patch_next_cmd('create_qp.srqn', srq.srqn)
    assert st(a.create_qp, pd, cq) == AQ['BAD_PARAM']          # RQ and SRQ
    qp = a.create_qp(pd, cq, srq=srq)
    # busy while a QP uses it; its PD too
    assert srq.destroy(check=False) == AQ['BUSY']
    assert pd.destroy(check=False) == AQ['BUSY']
    with pytest.raises(q.AdminError) as e:
        srq.modify(limit=16)
    assert e.value.status_name == 'BAD_PARAM'
    with pytest.raises(q.AdminError) as e:
        srq.modify(mask=q.SRQ_ATTR_MAX_WR)
    assert e.value.status_name == 'NOT_SUPPORTED'
    qp.destroy()
    srq.destroy()
    assert a.destroy('DESTROY_SRQ', srq.srqn, check=False) == AQ['BAD_HANDLE']
    pd.destroy()


def test_srq_doorbell_bad_index_ignored(world):
    a = world.devs[0]
    pd = a.alloc_pd()
    srq = a.create_srq(pd, log_depth=2)
    before = a.stat('doorbells_ignored')
    # a producer index more than depth ahead of the consumer
    a.db_write(q.DB_SRQ, srq.srqn | (100 << 32))
    assert a.stat('doorbells_ignored') == before + 1
    # an SRQ number that does not exist
    a.db_write(q.DB_SRQ, 999 | (1 << 32))
    assert a.stat('doorbells_ignored') == before + 2
    assert srq.query()['posted'] == 0
