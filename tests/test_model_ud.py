# SPDX-License-Identifier: GPL-2.0-or-later
"""UD: SEND/RECV with the GRH area, immediate data, Q_Key checks, address
handles, IPv4 and IPv6; completion events and CQ overrun."""
import ipaddress
import random

import pytest

import qrnic_harness as q

QKEY = 0x11111111


def ud_pair(world, gid_index=0):
    a, b = world.devs
    sa, sb = q.create_ud(a, qkey=QKEY), q.create_ud(b, qkey=QKEY)
    ah = a.ah_to(sa.pd, b, gid_index=gid_index)
    return sa, sb, ah


@pytest.mark.parametrize('gid_index', [0, 1], ids=['ipv4', 'ipv6'])
@pytest.mark.parametrize('n', [0, 1, 1000, 4096])
def test_ud_send_recv_with_grh(world, gid_index, n):
    rng = random.Random(n)
    sa, sb, ah = ud_pair(world, gid_index)
    a, b = world.devs
    la = a.reg_mr(sa.pd, 8192)
    rb = b.reg_mr(sb.pd, 8192)
    src = la.fill_random(rng)
    orig = rb.fill_random(rng)
    sb.qp.post_recv([(rb, 0, q.GRH_BYTES + 4096)], wr_id=21)
    sa.qp.post_send('SEND', [(la, 0, n)], ah=ah, remote_qpn=sb.qp.qpn, qkey=QKEY, wr_id=20)
    assert world.run() == 'idle'
    assert [(c['wr_id'], c['status_name']) for c in sa.cq.poll()] == [(20, 'SUCCESS')]
    c = sb.cq.poll()
    assert len(c) == 1, c
    c = c[0]
    assert c['status_name'] == 'SUCCESS' and c['wr_id'] == 21 and c['opcode_name'] == 'RECV'
    assert c['byte_len'] == n + q.GRH_BYTES
    assert c['src_qp'] == sa.qp.qpn and c['qpn'] == sb.qp.qpn
    assert c['flags'] & q.CQE_F_GRH
    grh = rb.read(0, q.GRH_BYTES)
    if gid_index == 0:
        assert c['flags'] & q.CQE_F_IPV4
        ip = grh[20:]
        assert ip[0] >> 4 == 4
        assert ipaddress.IPv4Address(ip[12:16]) == ipaddress.IPv4Address('10.0.0.1')
        assert ipaddress.IPv4Address(ip[16:20]) == ipaddress.IPv4Address('10.0.0.2')
    else:
        assert not c['flags'] & q.CQE_F_IPV4
        assert grh[0] >> 4 == 6
        assert grh[8:24] == q.gid_v6('fd00::1') and grh[24:40] == q.gid_v6('fd00::2')
    assert rb.read(q.GRH_BYTES, n) == src[:n]
    assert rb.read(q.GRH_BYTES + n) == orig[q.GRH_BYTES + n:]
    fr = [f for f in world.frames(roce_only=True) if f.src == 0]
    assert len(fr) == 1 and fr[0].opname == 'UD_SEND_ONLY'
    assert fr[0].deth == (QKEY, sa.qp.qpn) and fr[0].dqpn == sb.qp.qpn


def test_ud_send_with_imm(world):
    sa, sb, ah = ud_pair(world)
    a, b = world.devs
    la, rb = a.reg_mr(sa.pd, 4096), b.reg_mr(sb.pd, 4096)
    sb.qp.post_recv([(rb, 0, 4096)])
    sa.qp.post_send('SEND_WITH_IMM', [(la, 0, 10)], ah=ah, remote_qpn=sb.qp.qpn, qkey=QKEY,
                    imm=0xcafef00d)
    assert world.run() == 'idle'
    c = sb.cq.poll()
    assert len(c) == 1 and c[0]['flags'] & q.CQE_F_WITH_IMM and c[0]['imm'] == 0xcafef00d
    fr = [f for f in world.frames(roce_only=True) if f.src == 0]
    assert fr[0].opname == 'UD_SEND_ONLY_IMM' and fr[0].imm == 0xcafef00d


def test_ud_qkey_mismatch_dropped(world):
    sa, sb, ah = ud_pair(world)
    a, b = world.devs
    la, rb = a.reg_mr(sa.pd, 4096), b.reg_mr(sb.pd, 4096)
    orig = rb.fill_random(random.Random(1))
    sb.qp.post_recv([(rb, 0, 4096)], wr_id=1)
    sa.qp.post_send('SEND', [(la, 0, 100)], ah=ah, remote_qpn=sb.qp.qpn, qkey=QKEY ^ 1)
    assert world.run() == 'idle'
    assert [c['status_name'] for c in sa.cq.poll()] == ['SUCCESS']   # UD: unreliable
    assert sb.cq.poll() == []
    assert rb.read() == orig
    # the receive WQE is still there for a good packet
    sa.qp.post_send('SEND', [(la, 0, 100)], ah=ah, remote_qpn=sb.qp.qpn, qkey=QKEY)
    assert world.run() == 'idle'
    assert [c['wr_id'] for c in sb.cq.poll()] == [1]


def test_ud_no_receive_posted_dropped(world):
    sa, sb, ah = ud_pair(world)
    a = world.devs[0]
    la = a.reg_mr(sa.pd, 4096)
    sa.qp.post_send('SEND', [(la, 0, 100)], ah=ah, remote_qpn=sb.qp.qpn, qkey=QKEY)
    assert world.run() == 'idle'
    assert [c['status_name'] for c in sa.cq.poll()] == ['SUCCESS']
    assert sb.cq.poll() == []
    assert not [f for f in world.frames(roce_only=True) if f.src == 1]   # no NAK for UD


def test_ud_wrong_dest_qpn_dropped(world):
    sa, sb, ah = ud_pair(world)
    a, b = world.devs
    la, rb = a.reg_mr(sa.pd, 4096), b.reg_mr(sb.pd, 4096)
    sb.qp.post_recv([(rb, 0, 4096)])
    sa.qp.post_send('SEND', [(la, 0, 100)], ah=ah, remote_qpn=sb.qp.qpn + 100, qkey=QKEY)
    assert world.run() == 'idle'
    assert sb.cq.poll() == []
    assert b.stat('rx_drop_no_qp') == 1


def test_ud_larger_than_mtu_is_an_error(world):
    sa, sb, ah = ud_pair(world)
    a, b = world.devs
    la = a.reg_mr(sa.pd, 16384)
    sa.qp.post_send('SEND', [(la, 0, 4097)], ah=ah, remote_qpn=sb.qp.qpn, qkey=QKEY)
    assert world.run() == 'idle'
    c = sa.cq.poll()
    assert len(c) == 1 and c[0]['status_name'] != 'SUCCESS'
    assert not [f for f in world.frames(roce_only=True) if f.src == 0]


def test_ud_receive_buffer_too_small(world):
    sa, sb, ah = ud_pair(world)
    a, b = world.devs
    la, rb = a.reg_mr(sa.pd, 4096), b.reg_mr(sb.pd, 4096)
    orig = rb.fill_random(random.Random(2))
    sb.qp.post_recv([(rb, 0, q.GRH_BYTES + 50)], wr_id=3)
    sa.qp.post_send('SEND', [(la, 0, 100)], ah=ah, remote_qpn=sb.qp.qpn, qkey=QKEY)
    assert world.run() == 'idle'
    c = sb.cq.poll()
    assert len(c) == 1 and c[0]['status_name'] == 'LOC_LEN_ERR'
    assert rb.read(q.GRH_BYTES + 50) == orig[q.GRH_BYTES + 50:]


def test_ud_bad_ah(world):
    sa, sb, ah = ud_pair(world)
    la = world.devs[0].reg_mr(sa.pd, 4096)
    sa.qp.post_send('SEND', [(la, 0, 10)], ah=ah.ahn + 50, remote_qpn=sb.qp.qpn, qkey=QKEY)
    assert world.run() == 'idle'
    c = sa.cq.poll()
    assert len(c) == 1 and c[0]['status_name'] != 'SUCCESS' and c[0]['vendor_err_name'] == 'BAD_AH'
    assert not [f for f in world.frames(roce_only=True) if f.src == 0]


def test_ud_many_to_one(world):
    sa, sb, ah = ud_pair(world)
    a, b = world.devs
    la, rb = a.reg_mr(sa.pd, 4096), b.reg_mr(sb.pd, 64 * 256)
    for i in range(64):
        sb.qp.post_recv([(rb, i * 256, 256)], wr_id=i)
    for i in range(64):
        la.write(i, bytes([i]))
        sa.qp.post_send('SEND', [(la, i, 1)], ah=ah, remote_qpn=sb.qp.qpn, qkey=QKEY)
    assert world.run() == 'idle'
    c = sb.cq.poll()
    assert [x['wr_id'] for x in c] == list(range(64))
    for i in range(64):
        assert rb.read(i * 256 + q.GRH_BYTES, 1) == bytes([i])


# ---- events -----------------------------------------------------------------------
def test_armed_cq_raises_completion_event(conn):
    a, b = conn.a.dev, conn.b.dev
    la, rb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
    vec = b.comp_eq.vector
    irq0 = b.irq_count(vec)
    conn.cqb.arm()
    conn.qb.post_recv([(rb, 0, 100)])
    conn.qa.post_send('SEND', [(la, 0, 10)])
    assert conn.world.run() == 'idle'
    ev = b.comp_eq.poll()
    assert [(e['type'], e['handle']) for e in ev] == [(q.EQE_COMPLETION, conn.cqb.cqn)]
    assert b.irq_count(vec) == irq0 + 1
    assert len(conn.cqb.poll()) == 1
    # not re-armed: the next completion raises nothing
    b.comp_eq.arm()
    conn.qb.post_recv([(rb, 0, 100)])
    conn.qa.post_send('SEND', [(la, 0, 10)])
    conn.world.run()
    assert b.comp_eq.poll() == []
    assert b.irq_count(vec) == irq0 + 1


def test_solicited_only_arm(conn):
    a, b = conn.a.dev, conn.b.dev
    la, rb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
    conn.cqb.arm(solicited=True)
    for _ in range(2):
        conn.qb.post_recv([(rb, 0, 100)])
    conn.qa.post_send('SEND', [(la, 0, 10)])
    conn.world.run()
    assert b.comp_eq.poll() == []
    conn.qa.post_send('SEND', [(la, 0, 10)], solicited=True)
    conn.world.run()
    assert [e['handle'] for e in b.comp_eq.poll()] == [conn.cqb.cqn]


def test_cq_overrun_raises_cq_error(world):
    a, b = world.devs
    conn = q.connect_rc(a, b, cq_log=2)
    la, rb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
    for i in range(6):
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb, 0), wr_id=i)
    world.run()
    ev = a.async_eq.poll()
    assert (q.EV['CQ_ERR'], conn.cqa.cqn) in [(e['subtype'], e['handle']) for e in ev
                                            if e['type'] == q.EQE_ASYNC]
    assert a.stat('cq_overruns') >= 1
    assert a.irq_count(a.async_eq.vector) >= 1
    c = conn.cqa.poll()
    assert [x['wr_id'] for x in c] == [0, 1, 2, 3]


def test_async_event_on_qp_error(world):
    conn = q.connect_rc(*world.devs)
    a, b = world.devs
    la, rb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb.rkey ^ 0x33, rb.addr(0)))
    world.run()
    evb = [(e['event'], e['handle']) for e in b.async_eq.poll()]
    assert ('QP_ACCESS_ERR', conn.qb.qpn) in evb
    eva = [(e['event'], e['handle']) for e in a.async_eq.poll()]
    assert any(h == conn.qa.qpn for _, h in eva) or eva == []


@pytest.mark.parametrize('migrate', [False, True], ids=['run', 'snapshot'])
def test_arm_with_unconsumed_cqes_raises_each_event_once(world, migrate):
    """A CQ armed while it holds unconsumed CQEs gets its event from the
    run loop, which looks only at the CQs so marked (not the whole
    65536-entry table): two such CQs far apart in the CQ number space
    each get one EQE, also when the device is migrated in between (the
    load widens the marks to every queue)."""
    a, b = world.devs
    c1 = q.connect_rc(a, b)
    fillers = [b.create_cq(log_depth=1) for _ in range(40)]
    c2 = q.connect_rc(a, b)
    assert c2.cqb.cqn - c1.cqb.cqn > 40
    for c in (c1, c2):
        la, rb = a.reg_mr(c.pda, 4096), b.reg_mr(c.pdb, 4096)
        c.qb.post_recv([(rb, 0, 100)])
        c.qa.post_send('SEND', [(la, 0, 10)])
    assert world.run() == 'idle'
    assert b.comp_eq.poll() == []             # nothing armed yet
    vec = b.comp_eq.vector
    irq0 = b.irq_count(vec)
    c2.cqb.arm()
    c1.cqb.arm()
    if migrate:
        b.snapshot()
    assert world.run() == 'idle'
    ev = b.comp_eq.poll()
    assert sorted((e['type'], e['handle']) for e in ev) == \
        sorted([(q.EQE_COMPLETION, c1.cqb.cqn), (q.EQE_COMPLETION, c2.cqb.cqn)])
    assert b.irq_count(vec) == irq0 + 1
    assert world.run() == 'idle'
    assert b.comp_eq.poll() == []             # once each
    assert len(c1.cqb.poll()) == 1 and len(c2.cqb.poll()) == 1
    del fillers
