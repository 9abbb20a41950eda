# SPDX-License-Identifier: GPL-2.0-or-later
"""UD multicast (issue: Verbs I, item 4; spec 12.11): ATTACH/DETACH_MCAST,
delivery of one packet to every member QP, multicast loopback to the
sender's own device, IPv4 and IPv6 group addresses, bad input."""
import pytest

import qrnic_harness as q

AQ = {n: i for i, n in enumerate(q.AQ_STATUS)}
GROUPS = {'ipv4': (q.gid_v4('239.1.2.3'), 0), 'ipv6': (q.gid_v6('ff0e::1:2:3'), 1)}


def members(dev, n, pd=None):
    pd = pd or dev.alloc_pd()
    out = []
    for _ in range(n):
        s = q.create_ud(dev, pd=pd)
        buf = dev.reg_mr(pd, 8192)
        s.qp.post_recv([(buf, 0, 4096)], wr_id=0x10)
        s.qp.post_recv([(buf, 4096, 4096)], wr_id=0x11)
        out.append((s, buf))
    return pd, out


def mcast_ah(dev, pd, gid, sgid_index):
    net = q.NET_IPV4 if sgid_index == 0 else q.NET_IPV6
    return dev.create_ah(pd, gid, q.mcast_mac(gid), net_type=net, sgid_index=sgid_index)


@pytest.mark.parametrize('family', list(GROUPS))
def test_one_send_reaches_every_member_on_both_devices(world, family):
    """b has three members, a has one plus the sender: one UD SEND to the
    group reaches all four members (a's by multicast loopback) with the
    same bytes and the sender's QPN as source, and goes on the wire once."""
    gid, sgi = GROUPS[family]
    a, b = world.devs
    _, mb = members(b, 3)
    pda, ma = members(a, 1)
    for s, _ in mb:
        b.attach_mcast(s.qp, gid)
    a.attach_mcast(ma[0][0].qp, gid)
    sender = q.create_ud(a, pd=pda)
    src = a.reg_mr(pda, 4096)
    src.write(0, b'to the whole group')
    ah = mcast_ah(a, pda, gid, sgi)
    sender.qp.post_send('SEND_WITH_IMM', [(src, 0, 18)], ah=ah, remote_qpn=q.MCAST_QPN,
                        qkey=0x11111111, imm=0x77, wr_id=1)
    assert world.run() == 'idle'
    assert [c['status_name'] for c in sender.cq.poll()] == ['SUCCESS']
    for s, buf in mb + ma:
        got = s.cq.poll()
        assert len(got) == 1, got
        c = got[0]
        assert c['status_name'] == 'SUCCESS' and c['wr_id'] == 0x10
        assert c['byte_len'] == 40 + 18 and c['src_qp'] == sender.qp.qpn and c['imm'] == 0x77
        assert buf.read(40, 18) == b'to the whole group'
    fr = world.frames(roce_only=True)
    assert len(fr) == 1 and fr[0].dqpn == q.MCAST_QPN and fr[0].src == 0
    assert fr[0].data[:6] == q.mcast_mac(gid)
    assert a.stat('loopback_frames') == 1 and b.stat('rx_packets') == 1


def test_detach_and_other_groups(world):
    gid, _ = GROUPS['ipv4']
    other = q.gid_v4('239.9.9.9')
    a, b = world.devs
    _, mb = members(b, 2)
    b.attach_mcast(mb[0][0].qp, gid)
    b.attach_mcast(mb[1][0].qp, other)
    b.attach_mcast(mb[0][0].qp, gid)              # twice: still one membership
    sender = q.create_ud(a)
    src = a.reg_mr(sender.pd, 4096)
    ah = mcast_ah(a, sender.pd, gid, 0)
    sender.qp.post_send('SEND', [(src, 0, 8)], ah=ah, remote_qpn=q.MCAST_QPN,
                        qkey=0x11111111)
    assert world.run() == 'idle'
    assert len(mb[0][0].cq.poll()) == 1 and mb[1][0].cq.poll() == []
    b.detach_mcast(mb[0][0].qp, gid)
    with pytest.raises(q.AdminError) as e:
        b.detach_mcast(mb[0][0].qp, gid)            # not a member any more
    assert e.value.status_name == 'BAD_PARAM'
    sender.qp.post_send('SEND', [(src, 0, 8)], ah=ah, remote_qpn=q.MCAST_QPN,
                        qkey=0x11111111)
    assert world.run() == 'idle'
    assert mb[0][0].cq.poll() == []
    # no member here: the frame goes to the Ethernet path, not to a QP
    assert b.stat('eth_rx_frames') + b.stat('eth_rx_drops') >= 1


def test_wrong_qkey_and_unicast_qpn_not_delivered(world):
    gid, _ = GROUPS['ipv4']
    a, b = world.devs
    _, mb = members(b, 1)
    b.attach_mcast(mb[0][0].qp, gid)
    sender = q.create_ud(a)
    src = a.reg_mr(sender.pd, 4096)
    ah = mcast_ah(a, sender.pd, gid, 0)
    sender.qp.post_send('SEND', [(src, 0, 8)], ah=ah, remote_qpn=q.MCAST_QPN, qkey=0x22)
    sender.qp.post_send('SEND', [(src, 0, 8)], ah=ah, remote_qpn=mb[0][0].qp.qpn,
                        qkey=0x11111111)
    assert world.run() == 'idle'
    assert mb[0][0].cq.poll() == []
    assert b.stat('rx_drop_other') >= 1


def test_destroyed_qp_leaves_its_groups(world):
    """A QPN freed while attached must not receive for the QP that reuses
    it: DESTROY_QP detaches."""
    gid, _ = GROUPS['ipv4']
    b = world.devs[1]
    _, mb = members(b, 1)
    b.attach_mcast(mb[0][0].qp, gid)
    mb[0][0].qp.destroy()
    with pytest.raises(q.AdminError) as e:
        b.detach_mcast(mb[0][0].qp.qpn, gid)
    assert e.value.status_name == 'BAD_HANDLE'


def test_attach_validation_and_limits(world):
    a = world.devs[0]
    pd = a.alloc_pd()
    cq = a.create_cq(6)
    rc = a.create_qp(pd, cq)
    ud = q.create_ud(a, pd=pd)
    gid, _ = GROUPS['ipv6']
    assert a.attach_mcast(rc, gid, check=False) == AQ['BAD_PARAM']          # not UD
    assert a.attach_mcast(999, gid, check=False) == AQ['BAD_HANDLE']
    assert a.attach_mcast(ud.qp, q.gid_v6('fd00::1'), check=False) == AQ['BAD_PARAM']
    assert a.attach_mcast(ud.qp, q.gid_v4('10.0.0.1'), check=False) == AQ['BAD_PARAM']
    assert a.query_device()['max_mcg'] == 256 and a.query_device()['max_mcg_qp'] == 32
    # 256 groups fit, the 257th does not
    for i in range(256):
        a.attach_mcast(ud.qp, q.gid_v6('ff0e::%x' % (i + 1)))
    assert a.attach_mcast(ud.qp, q.gid_v6('ff0e::ffff'), check=False) == AQ['NO_RESOURCES']
    # 32 QPs per group
    g = q.gid_v4('239.0.0.7')
    a.detach_mcast(ud.qp, q.gid_v6('ff0e::1'))
    qps = [q.create_ud(a, pd=pd, cq=ud.cq).qp for _ in range(33)]
    for qp in qps[:32]:
        a.attach_mcast(qp, g)
    assert a.attach_mcast(qps[32], g, check=False) == AQ['NO_RESOURCES']
