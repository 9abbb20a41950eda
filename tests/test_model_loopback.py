# SPDX-License-Identifier: GPL-2.0-or-later
"""Local loopback (issue: Verbs I, item 0): a frame addressed to the port's
own MAC is received by the port itself, never reaching the wire, with the
transport, timing model and fault points of the wire.  Both ends of every
connection here are QPs of one device; the cabled peer must see nothing."""
import random

import pytest

from tshark_fields import tshark_fields
import qrnic_harness as q

MTU = 1024


def lb_conn(world, dev=0, **kw):
    d = world.devs[dev]
    c = q.connect_rc(d, d, mtu=MTU, **kw)
    return c


def assert_all_loopback(world, dev=0):
    fr = world.frames(roce_only=True)
    assert fr, 'no frames'
    assert all(f.loopback and f.src == dev and f.dst == dev for f in fr), fr[:5]
    peer = world.devs[1 - dev]
    assert peer.stat('rx_packets') == 0 and peer.stat('rx_drop_other') == 0
    return fr


@pytest.mark.parametrize('gid_index', [0, 1], ids=['ipv4', 'ipv6'])
def test_rc_write_read_send_atomics_on_one_device(world, gid_index):
    a = world.devs[0]
    c = lb_conn(world, gid_index=gid_index)
    rng = random.Random(3)
    src = a.reg_mr(c.pda, 1 << 16)
    dst = a.reg_mr(c.pdb, 1 << 16)
    data = src.fill_random(rng, 0, 40000)
    c.qa.post_send('RDMA_WRITE', [(src, 0, 40000)], remote=(dst, 0), wr_id=1)
    # READ back into the source's second half what the WRITE put there
    c.qa.post_send('RDMA_READ', [(src, 0x8000 + 0, 4000)], remote=(dst, 100), wr_id=2)
    c.qb.post_recv([(dst, 0xc000, 512)], wr_id=3)
    c.qa.post_send('SEND', [(src, 0, 300)], wr_id=4)
    dst.write(0xf000, (7).to_bytes(8, 'little'))
    c.qa.post_send('FETCH_AND_ADD', [(src, 0xf000, 8)], remote=(dst, 0xf000), add=5, wr_id=5)
    assert world.run() == 'idle'
    got = [(x['wr_id'], x['status_name']) for x in c.cqa.poll()]
    assert got == [(1, 'SUCCESS'), (2, 'SUCCESS'), (4, 'SUCCESS'), (5, 'SUCCESS')]
    rc = c.cqb.poll()
    assert [(x['wr_id'], x['status_name'], x['byte_len']) for x in rc] == [(3, 'SUCCESS', 300)]
    assert dst.read(0, 40000) == data
    assert src.read(0x8000, 4000) == data[100:4100]
    assert dst.read(0xc000, 300) == data[:300]
    assert src.read(0xf000, 8) == (7).to_bytes(8, 'little')
    assert dst.read(0xf000, 8) == (12).to_bytes(8, 'little')
    fr = assert_all_loopback(world)
    assert a.stat('loopback_frames') == len(fr)
    assert a.stat('rx_packets') == len(fr) and a.stat('tx_packets') == len(fr)
    ops = {f.opname for f in fr}
    assert {'RC_WRITE_FIRST', 'RC_READ_REQ', 'RC_READ_RESP_FIRST', 'RC_SEND_ONLY',
            'RC_FETCH_ADD', 'RC_ATOMIC_ACK', 'RC_ACK'} <= ops, ops
    a.check()


def test_two_connections_both_directions_on_one_device(world):
    """Two loopback connections at once, each writing both ways: 8 QPs' data
    all right and nothing dropped by the device's own receive queue."""
    a = world.devs[0]
    rng = random.Random(8)
    conns = [lb_conn(world) for _ in range(2)]
    checks = []
    for c in conns:
        for me, pd, peer_pd, qp in ((c, c.pda, c.pdb, c.qa), (c, c.pdb, c.pda, c.qb)):
            s = a.reg_mr(pd, 1 << 18)
            d = a.reg_mr(peer_pd, 1 << 18)
            data = s.fill_random(rng)
            for k in range(4):
                qp.post_send('RDMA_WRITE', [(s, k << 16, 1 << 16)], remote=(d, k << 16))
            checks.append((d, data))
    assert world.run() == 'idle'
    for c in conns:
        assert [x['status_name'] for x in c.cqa.poll()] == ['SUCCESS'] * 4
        assert [x['status_name'] for x in c.cqb.poll()] == ['SUCCESS'] * 4
    for d, data in checks:
        assert d.read() == data
    assert a.stat('rx_drop_other') == 0 and a.stat('retransmit_timeouts') == 0
    assert_all_loopback(world)


def test_ud_send_to_own_qp(world):
    a = world.devs[0]
    s1 = q.create_ud(a)
    s2 = q.create_ud(a, pd=s1.pd)
    buf = a.reg_mr(s1.pd, 8192)
    buf.write(0, b'ud to myself')
    s2.qp.post_recv([(buf, 4096, 4096)], wr_id=11)
    ah = a.ah_to(s1.pd, a)
    s1.qp.post_send('SEND', [(buf, 0, 12)], ah=ah, remote_qpn=s2.qp.qpn,
                    qkey=0x11111111, wr_id=10)
    assert world.run() == 'idle'
    assert [(x['wr_id'], x['status_name']) for x in s1.cq.poll()] == [(10, 'SUCCESS')]
    rc = s2.cq.poll()
    assert len(rc) == 1
    recv = rc[0]
    assert recv['wr_id'] == 11
    assert recv['status_name'] == 'SUCCESS' and recv['byte_len'] == 40 + 12
    assert recv['src_qp'] == s1.qp.qpn
    assert buf.read(4096 + 40, 12) == b'ud to myself'
    assert_all_loopback(world)


@pytest.mark.parametrize('rule', [
    'drop dir=tx op=write nth=7',
    'drop dir=rx op=read-req count=1',
    'dup dir=tx op=write nth=5',
    'reorder dir=tx op=write nth=4 hold=2',
    'corrupt dir=rx op=write nth=9 count=2',
    'delay dir=rx op=read-resp ns=20us count=3',
])
def test_loopback_under_device_faults(world, rule):
    """The device's own fault rules act on loopback frames in both
    directions (tx: where they leave the port, rx: where they arrive);
    the transport recovers and the data is intact."""
    a = world.devs[0]
    a.fault(rule)
    c = lb_conn(world, timeout=8)
    rng = random.Random(4)
    src = a.reg_mr(c.pda, 1 << 17)
    dst = a.reg_mr(c.pdb, 1 << 17)
    data = src.fill_random(rng)
    c.qa.post_send('RDMA_WRITE', [(src, 0, 1 << 16)], remote=(dst, 0), wr_id=1)
    c.qa.post_send('RDMA_READ', [(src, 1 << 16, 1 << 15)], remote=(dst, 0), wr_id=2)
    assert world.run() == 'idle'
    assert [(x['wr_id'], x['status_name']) for x in c.cqa.poll()] == \
        [(1, 'SUCCESS'), (2, 'SUCCESS')]
    assert dst.read(0, 1 << 16) == data[:1 << 16]
    assert src.read(1 << 16, 1 << 15) == data[:1 << 15]
    assert a.stat('faults_injected') >= 1
    assert world.devs[1].stat('rx_packets') == 0


def test_loopback_takes_the_port_time_under_a_timing_profile(world):
    """cx5-100g: a 1 MiB WRITE to itself is paced by the port like one on the
    wire (at least its bytes at 100 Gb/s), not delivered in zero time."""
    a = world.devs[0]
    a.set_timing('cx5-100g')
    c = lb_conn(world)
    src = a.reg_mr(c.pda, 1 << 20)
    dst = a.reg_mr(c.pdb, 1 << 20)
    data = src.fill_random(random.Random(2))
    t0 = world.now
    c.qa.post_send('RDMA_WRITE', [(src, 0, 1 << 20)], remote=(dst, 0))
    cqe = c.cqa.wait(1)
    assert [x['status_name'] for x in cqe] == ['SUCCESS']
    elapsed = world.now - t0
    assert elapsed >= (1 << 20) * 8 / 100      # ns at 100 Gb/s
    assert dst.read() == data
    assert_all_loopback(world)


def test_link_down_drops_loopback_frames_too(world):
    """A port whose link is down sends nothing, to itself neither: the
    requester retries, then reports RETRY_EXC_ERR."""
    a = world.devs[0]
    c = lb_conn(world, timeout=1, retry_cnt=1)
    src = a.reg_mr(c.pda, 4096)
    dst = a.reg_mr(c.pdb, 4096)
    a.set_link(False)
    c.qa.post_send('RDMA_WRITE', [(src, 0, 64)], remote=(dst, 0), wr_id=1)
    assert world.run() == 'idle'
    assert [x['status_name'] for x in c.cqa.poll()] == ['RETRY_EXC_ERR']
    assert a.stat('loopback_frames') == 0 and a.stat('rx_packets') == 0


def test_frame_to_other_mac_still_goes_on_the_wire(world):
    """Only the port's own MAC loops back: the same connection between the
    two cabled devices puts every frame on the wire."""
    a, b = world.devs
    c = q.connect_rc(a, b, mtu=MTU)
    src = a.reg_mr(c.pda, 8192)
    dst = b.reg_mr(c.pdb, 8192)
    src.write(0, b'x' * 100)
    c.qa.post_send('RDMA_WRITE', [(src, 0, 100)], remote=(dst, 0))
    assert world.run() == 'idle'
    fr = world.frames(roce_only=True)
    assert fr and not any(f.loopback for f in fr)
    assert a.stat('loopback_frames') == 0 and b.stat('loopback_frames') == 0
    assert dst.read(0, 100) == b'x' * 100


def test_loopback_pcap_records_the_frames(world, tmp_path):
    """The harness's capture holds loopback frames (source and destination
    MAC the port's own), and tshark decodes them as RoCEv2."""
    pcap = tmp_path / 'lb.pcap'
    world.pcap(str(pcap))
    a = world.devs[0]
    c = lb_conn(world)
    src = a.reg_mr(c.pda, 8192)
    dst = a.reg_mr(c.pdb, 8192)
    src.write(0, b'captured')
    c.qa.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(dst, 0))
    assert world.run() == 'idle'
    world.pcap_close()
    fields = ['eth.src', 'eth.dst', 'infiniband.bth.opcode']
    rows = [[r[f] for f in fields] for r in tshark_fields(pcap, fields)]
    assert len(rows) == 2, rows                  # the WRITE and its ACK
    mac = q.mac_str(a.mac)
    assert all(r[0] == r[1] == mac for r in rows), rows
    assert [int(r[2]) for r in rows] == [10, 17]  # RC WRITE_ONLY, ACKNOWLEDGE
