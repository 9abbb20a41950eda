# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: frames between qrnic ports of one QEMU go without a copy
(hw/qrnic.c, qrnic_host_tx_buf; docs/qemu.md section 5).  The sender hands
its frame buffer through the net layer and the qrnic port the frame is
addressed to takes that very buffer (trace point qrnic_rx_handoff) instead
of copying it.  These tests check that the bytes still land right, that
the handoff really happens on a back-to-back hub, and that on a hub of
three ports the third port still gets (a copy of) every frame while the
addressed port takes the buffer."""
import random

import pytest

import qrnic_harness as h
from qtest import scenarios
from qtest.driver import World
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu


def _count(log, name):
    text = log.read_text() if log.exists() else ''
    return sum(1 for line in text.splitlines() if line.split(' ', 1)[0].split(':')[-1] == name)


def _sizes(log, name):
    """Frame sizes of the trace lines of event name ('frame of N bytes ...')."""
    text = log.read_text() if log.exists() else ''
    return [int(line.split('frame of ', 1)[1].split()[0]) for line in text.splitlines()
            if line.split(' ', 1)[0].split(':')[-1] == name and 'frame of ' in line]


def _world(qemu_binary, tmp_path, ndev, name):
    log = tmp_path / 'qemu.log'
    w = World.single(qemu_binary, ndev, name=name,
                     extra_args=['-trace', 'qrnic_rx', '-trace', 'qrnic_rx_handoff',
                                 '-D', str(log)])
    return w, log


def _icrc_faulted_writes(w, port, direction, count, writes):
    """RDMA WRITEs from port 0 to port 1 of w with a fault rule on `port`
    corrupting the ICRC of `count` of that port's WRITE frames in
    `direction` (tx: as sent, rx: as received); `writes` are (seed, bytes,
    SGEs, more rdma_write arguments).  Returns (frames the rule corrupted,
    ICRC drops at port 1); scenarios.rdma_write checks the bytes landed."""
    a, b = w.devs
    conn = h.connect_rc(a, b, mtu=1024)
    la, rb = scenarios.mrs(conn)
    dev, qp = (a, conn.qa) if port == 0 else (b, conn.qb)
    (rid,) = dev.fault(f'corrupt dir={direction} part=icrc qp={qp.qpn} op=write nth=2 count={count}')
    before = b.query_stats()['rx_drop_icrc']
    for seed, n, sges, kw in writes:
        scenarios.rdma_write(conn, la, rb, random.Random(seed), n=n, sges=sges, **kw)
    w.settle()
    return dev.fault_rule(rid)['fired'], b.query_stats()['rx_drop_icrc'] - before


def test_back_to_back_frames_are_handed_over(qemu_binary, tmp_path):  # noqa: F811
    w, log = _world(qemu_binary, tmp_path, 2, 'handoff2')
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024)
        la, rb = scenarios.mrs(conn)
        before_rx = b.query_stats()['rx_packets']
        scenarios.rdma_write(conn, la, rb, random.Random(11), n=12000, sges=3)
        scenarios.rdma_read(conn, la, rb, random.Random(12), n=9000)
        scenarios.send_recv(conn, la, rb, random.Random(13), imm=0x0a0b0c0d)
        w.settle()
        data_pkts = b.query_stats()['rx_packets'] - before_rx
        assert data_pkts >= 12000 // 1024, data_pkts
        rx, taken = _count(log, 'qrnic_rx'), _count(log, 'qrnic_rx_handoff')
        # every frame between the two ports is RoCE to the peer's MAC: all taken
        assert taken > 0 and taken == rx, (taken, rx)
        # ... and, on a hub of these two ports only, by the hub's shortcut
        # (no receive queue filled up here, so all of them)
        sa, sb = (d.qom_counters('host-calls') for d in (a, b))
        assert sa['shortcut'] == sb['rx'] > 12000 // 1024 and sb['shortcut'] == sa['rx'] > 0, \
            (sa, sb)
        assert w.alive()
    finally:
        w.close()


def _taken(d):
    c = d.qom_counters('host-calls')
    return c['taken'], c['taken-described']


def test_hub_shortcut_keeps_the_link_down(qemu_binary, tmp_path):  # noqa: F811
    """The hub's shortcut (qrnic_net_walk) skips QEMU's net layer only while
    every link on the way is up: with the receiving port's netdev down
    (QMP set_link), a WRITE's frames reach nobody -- not the receiving
    port (host-calls rx), not by the shortcut -- as QEMU's hub drops
    them; once it is up again the retransmission lands the bytes, by the
    shortcut."""
    w = World.single(qemu_binary, 2, name='shortcut-link')
    try:
        a, b = w.devs
        q = a.qemu
        conn = h.connect_rc(a, b, mtu=1024)
        la, rb = scenarios.mrs(conn)
        data = la.fill_random(random.Random(71), 0, 5000)
        q.qmp('set_link', name='p1', up=False)
        w.settle()
        before = [d.qom_counters('host-calls') for d in (a, b)]
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 5000)], remote=(rb, 0), wr_id=0x71)
        w.settle()
        mid = [d.qom_counters('host-calls') for d in (a, b)]
        assert a.query_stats()['tx_packets'] > 0
        assert mid[1]['rx'] == before[1]['rx'], 'a frame reached a port whose link is down'
        assert mid[0]['shortcut'] == before[0]['shortcut'], (before[0], mid[0])
        q.qmp('set_link', name='p1', up=True)
        scenarios.expect_success(scenarios.one_cqe(conn.cqa), 'RDMA_WRITE', 0x71, conn.qa.qpn)
        assert rb.read(0, 5000) == data
        assert a.qom_counters('host-calls')['shortcut'] > mid[0]['shortcut']
        assert w.alive()
    finally:
        w.close()


def test_handed_over_frames_go_with_headers_by_description(qemu_binary, tmp_path):  # noqa: F811
    """Between two qrnic ports on a hub of their own, a frame whose payload
    goes by reference (an RC WRITE from one MR) and an ACK leave with
    their headers by description, not built: the taker takes the packet
    as parsing would give it (QOM host-calls taken-described).  The bytes
    land (scenarios check them) and a capture on the sender, which reads
    every frame it sends and receives, has them built: then none is
    described, and the capture's frames are whole."""
    for pcap in (None, tmp_path / 'a.pcap'):
        w = World.single(qemu_binary, 2, name='described',
                         dev_opts=[f'pcap={pcap}' if pcap else '', ''])
        try:
            a, b = w.devs
            conn = h.connect_rc(a, b, mtu=1024)
            la, rb = scenarios.mrs(conn)
            (bt0, bd0), (at0, ad0) = _taken(b), _taken(a)
            scenarios.rdma_write(conn, la, rb, random.Random(14), n=12000, sges=1)
            w.settle()
            (bt, bd), (at, ad) = _taken(b), _taken(a)
            assert bt - bt0 >= 12000 // 1024 and at - at0 > 0, (bt0, bt, at0, at)
            if pcap:    # the capture built every frame a sent and took
                assert bd == bd0 and ad == ad0, (bd0, bd, ad0, ad)
            else:       # every ACK, and every WRITE frame but those whose
                # payload spans two pages of the MR (not contiguous in host
                # memory maybe: then it is copied into the frame and built)
                ps = 1 << la.page_shift
                spans = sum(1 for k in range(0, 12000, 1024)
                            if (la.iova + k) // ps != (la.iova + min(k + 1024, 12000) - 1) // ps)
                assert bt - bt0 - spans <= bd - bd0 <= bt - bt0, (bd0, bd, bt0, bt, spans)
                assert ad - ad0 == at - at0, (ad0, ad, at0, at)
            assert b.query_stats()['rx_drop_icrc'] == 0 and w.alive()
        finally:
            w.close()
    frames = _pcap_roce(pcap)
    _assert_icrcs(frames, "a's capture")
    assert len([f for f in frames if len(f) > 1000]) >= 12000 // 1024


def test_three_port_hub_other_port_gets_a_copy(qemu_binary, tmp_path):  # noqa: F811
    w, log = _world(qemu_binary, tmp_path, 3, 'handoff3')
    try:
        a, b, c = w.devs
        c_before = sum(v for k, v in c.query_stats().items() if 'rx' in k)
        conn = h.connect_rc(a, b, mtu=1024)
        la, rb = scenarios.mrs(conn)
        scenarios.rdma_write(conn, la, rb, random.Random(21), n=12000, sges=2)
        scenarios.rdma_read(conn, la, rb, random.Random(22), n=5000)
        w.settle()
        rx, taken = _count(log, 'qrnic_rx'), _count(log, 'qrnic_rx_handoff')
        # each frame reaches both other ports; only the addressed one takes it
        assert taken > 0 and rx >= 2 * taken, (taken, rx)
        c_after = sum(v for k, v in c.query_stats().items() if 'rx' in k)
        assert c_after > c_before, 'the third port saw none of the frames'
        # a hub of three ports: no shortcut (the third port reads every frame)
        assert [d.qom_counters('host-calls')['shortcut'] for d in w.devs] == [0, 0, 0]
        # the third port works on the same hub afterwards
        conn2 = h.connect_rc(c, a, mtu=1024)
        lc, ra = scenarios.mrs(conn2)
        scenarios.rdma_write(conn2, lc, ra, random.Random(23), n=7000, sges=1)
        assert w.alive()
    finally:
        w.close()


def test_sender_fault_plan_turns_the_handover_off(qemu_binary, tmp_path):  # noqa: F811
    """A fault plan on the SENDING port (a tx rule that corrupts the ICRC of
    some frames) must turn the hand-over off: the frames are copied, so the
    receiver checks every ICRC it gets (a vouched frame would skip the check
    and take the corrupted bytes); the corrupted ones are dropped there and
    retransmitted, and the data lands intact."""
    w, log = _world(qemu_binary, tmp_path, 2, 'handoff-txfault')
    try:
        fired, drops = _icrc_faulted_writes(w, 0, 'tx', 3, [(31, 12000, 2, {})])
        assert fired == 3 and drops == 3, (fired, drops)
        # the trace names no port: tell a's WRITEs (MTU-sized) from b's ACKs (small)
        big = lambda name: [n for n in _sizes(log, name) if n > 512]  # noqa: E731
        assert len(big('qrnic_rx')) >= 12000 // 1024 + 3, big('qrnic_rx')
        assert big('qrnic_rx_handoff') == [], 'a sender with a fault plan handed frames over'
        # b has no fault plan: its ACKs to a are still handed over (a checks them itself)
        assert _sizes(log, 'qrnic_rx_handoff'), 'no hand-over at all: the test proves nothing'
        assert w.alive()
    finally:
        w.close()


# ---- the lazy ICRC (issue 23) -------------------------------------------------
# On a hub of qrnic ports only (no filter, no other netdev) a qrnic port
# sends its RoCEv2 frames with the ICRC not yet computed
# (qrnic_dev_set_lazy_icrc): the port that takes a frame does not read it;
# every other reader -- a capture, a fault plan, a port not addressed, a
# net queue that keeps a copy -- has it computed first.  These tests check
# each reader sees the right ICRC while the hand-over still happens.

def _pcap_roce(path):
    from test_qemu_pcap import is_roce, read_pcap
    return [f for _, f in read_pcap(path) if is_roce(f)]


def _assert_icrcs(frames, what):
    from test_wire import ref_icrc, wire_icrc
    assert frames, f'{what}: no RoCE frame captured'
    bad = [i for i, f in enumerate(frames) if wire_icrc(f) != ref_icrc(f)]
    assert not bad, f'{what}: {len(bad)} of {len(frames)} frames with a wrong ICRC, first #{bad[0]}'


def test_lazy_icrc_captures_of_handed_over_frames(qemu_binary, tmp_path):  # noqa: F811
    """A capture on the taking port only, and one on the third (not
    addressed) port of a 3-port qrnic hub: each frame a hands over to b is
    in both captures with a valid ICRC, as are b's ACKs in b's own."""
    pb, pc = tmp_path / 'b.pcap', tmp_path / 'c.pcap'
    log = tmp_path / 'qemu.log'
    w = World.single(qemu_binary, 3, name='lazy-pcap', dev_opts=['', f'pcap={pb}', f'pcap={pc}'],
                     extra_args=['-trace', 'qrnic_rx', '-trace', 'qrnic_rx_handoff',
                                 '-D', str(log)])
    try:
        a, b, c = w.devs
        conn = h.connect_rc(a, b, mtu=1024)
        la, rb = scenarios.mrs(conn)
        scenarios.rdma_write(conn, la, rb, random.Random(41), n=12000, sges=3)
        scenarios.rdma_read(conn, la, rb, random.Random(42), n=9000)
        w.settle()
        assert b.query_stats()['rx_drop_icrc'] == 0 and a.query_stats()['rx_drop_icrc'] == 0
        assert [n for n in _sizes(log, 'qrnic_rx_handoff') if n > 1000], 'no hand-over of a WRITE'
        assert w.alive()
    finally:
        w.close()
    fb, fc = _pcap_roce(pb), _pcap_roce(pc)
    _assert_icrcs(fb, "b's capture")
    _assert_icrcs(fc, "c's capture")
    assert len([f for f in fb if len(f) > 1000]) >= 12000 // 1024 + 9000 // 1024


def test_lazy_icrc_with_a_filter_dump_on_the_hub(qemu_binary, tmp_path):  # noqa: F811
    """A net filter (QEMU's filter-dump on the taking port's netdev) reads
    every frame during the send: the ICRCs in its file are valid."""
    from test_qemu_pcap import is_roce, read_pcap
    dump = tmp_path / 'dump.pcap'
    w = World.single(qemu_binary, 2, name='lazy-dump',
                     extra_args=['-object', f'filter-dump,id=f0,netdev=p1,file={dump}'])
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=4096)
        la, rb = scenarios.mrs(conn, 65536)
        scenarios.rdma_write(conn, la, rb, random.Random(51), n=60000, sges=5)
        w.settle()
        assert b.query_stats()['rx_drop_icrc'] == 0
        # a filter on the way: the net layer, not the hub's shortcut
        assert [d.qom_counters('host-calls')['shortcut'] for d in w.devs] == [0, 0]
        assert w.alive()
    finally:
        w.close()
    frames = [f for _, f in read_pcap(dump) if is_roce(f)]
    _assert_icrcs(frames, 'filter-dump')
    assert len([f for f in frames if len(f) > 4000]) >= 60000 // 4096


def test_lazy_icrc_taker_with_a_fault_plan_checks_it(qemu_binary, tmp_path):  # noqa: F811
    """The taking port with a fault plan checks the ICRC of what it takes
    (computed for it): exactly the frames its rule corrupts are dropped
    (and retransmitted), no other, and the data lands intact."""
    w, log = _world(qemu_binary, tmp_path, 2, 'lazy-rxfault')
    try:
        fired, drops = _icrc_faulted_writes(w, 1, 'rx', 2, [(61, 12000, 2, {}),
                                                           (62, 7000, 1, {'wr_id': 0x2001})])
        assert fired == 2 and drops == 2, (fired, drops)
        assert [n for n in _sizes(log, 'qrnic_rx_handoff') if n > 512], 'no hand-over of a WRITE'
        assert w.alive()
    finally:
        w.close()


def test_lazy_icrc_frames_queued_while_stopped(qemu_binary, tmp_path):  # noqa: F811
    """Frames sent while the VM is stopped wait in QEMU's net queues as
    copies and arrive (not handed over) once it runs again, as do frames
    held back while the receive queue is full: the receiver checks their
    ICRC, which must be there.  Large multi-SGE WRITEs over page
    boundaries, the bytes compared in full."""
    log = tmp_path / 'qemu.log'
    w = World.single(qemu_binary, 2, name='lazy-stop',
                     extra_args=['-trace', 'qrnic_rx_paused', '-D', str(log)])
    try:
        a, b = w.devs
        q = w.qemus[0]
        conn = h.connect_rc(a, b, mtu=4096)
        size = 1 << 18
        src, dst = a.reg_mr(conn.pda, size), b.reg_mr(conn.pdb, size)
        rng = random.Random(71)
        data = bytes(rng.getrandbits(8) for _ in range(size))
        src.write(0, data)
        for rnd in range(2):
            if rnd == 0:
                q.qmp('stop')
            # 8 WRITEs, each of 3 SGEs at odd offsets across pages, into one range
            expect = bytearray(size)
            for i in range(8):
                off = i * (size // 8)
                pieces = [(src, off + 1, 5000), (src, off + 9000, 12345), (src, off + 30000, 777)]
                conn.qa.post_send('RDMA_WRITE', pieces, remote=(dst, off + 3), wr_id=i,
                                  signaled=True)
                blob = data[off + 1:off + 5001] + data[off + 9000:off + 21345] + \
                    data[off + 30000:off + 30777]
                expect[off + 3:off + 3 + len(blob)] = blob
            if rnd == 0:
                w.settle()
                q.qmp('cont')
            cqes = conn.cqa.wait(8, timeout=60)
            assert len(cqes) == 8 and all(c['status_name'] == 'SUCCESS' for c in cqes), cqes
            got = dst.read(0, size)
            for i in range(8):
                off = i * (size // 8)
                n = 5000 + 12345 + 777
                assert got[off + 3:off + 3 + n] == bytes(expect[off + 3:off + 3 + n]), (rnd, i)
            dst.write(0, bytes(size))
        assert b.query_stats()['rx_drop_icrc'] == 0 and a.query_stats()['rx_drop_icrc'] == 0
        assert w.alive()
    finally:
        w.close()


# ---- payloads by reference (issue 23, the third round) ------------------------
# On a hub of qrnic ports only, the sender maps the guest memory of a
# payload (address_space_map, QOM dma-maps counts it) and the taking port
# copies it from there into its own memory: one copy instead of two.  Every
# other reader fills the frame first (the payload copied in, the mapping
# released).  These tests check the bytes wherever they are read, that the
# mappings are really made, and that each is released exactly once.

def _maps(d):
    """Process-wide payload mappings made and released (QOM dma-maps)."""
    return d.qom_counters('dma-maps')


def _assert_released(d, what, made_at_least=1):
    m = _maps(d)
    assert m['map'] >= made_at_least, f'{what}: {m}: no payload went by reference'
    assert m['map'] == m['unmap'], f'{what}: mappings not released once each: {m}'
    return m


_WRITE_OPS = {0x06: 16, 0x07: 0, 0x08: 0, 0x09: 4, 0x0a: 16, 0x0b: 20}   # RC, header bytes
_READ_RESP_OPS = {0x0d: 4, 0x0e: 0, 0x0f: 4, 0x10: 4}


def _payloads(frames, ops):
    """The payloads of the IPv4 RoCEv2 frames with a BTH opcode in ops, in
    order, joined (Ethernet 14 + IPv4 20 + UDP 8, then BTH 12, the opcode's
    extension headers, the payload, its pad, the ICRC)."""
    out = b''
    for f in frames:
        op = f[42]
        if op in ops:
            pad = (f[43] >> 4) & 3
            out += f[54 + ops[op]:len(f) - 4 - pad]
    return out


def _byref_traffic(w, seed, n_write=60000, n_read=30000, mtu=4096):
    """Large multi-SGE WRITEs and a READ from port 0 to port 1 of w, over
    page boundaries at odd offsets (scenarios check the bytes that land).
    Returns (the WRITE's payload, the READ's payload) as they landed."""
    a, b = w.devs[0], w.devs[1]
    conn = h.connect_rc(a, b, mtu=mtu)
    la, rb = scenarios.mrs(conn, 1 << 17)
    rng = random.Random(seed)
    scenarios.rdma_write(conn, la, rb, rng, n=n_write, sges=5)
    wrote = rb.read(64, n_write)
    scenarios.rdma_read(conn, la, rb, rng, n=n_read)
    read = la.read(100, n_read)
    w.settle()
    return wrote, read


def test_byref_bytes_land_and_mappings_are_released(qemu_binary, tmp_path):  # noqa: F811
    """WRITEs (5 SGEs over page boundaries) and READs between two ports land
    byte for byte (scenarios compare guest memory); the payloads went by
    reference (at least one mapping per MTU-sized WRITE or READ frame) and
    every mapping was released once the traffic is over."""
    w, log = _world(qemu_binary, tmp_path, 2, 'byref2')
    try:
        a, b = w.devs
        m0 = _maps(a)
        assert m0['map'] == m0['unmap'], m0
        _byref_traffic(w, 81)
        m = _assert_released(a, 'after WRITE and READ')
        assert m['map'] - m0['map'] >= 60000 // 4096 + 30000 // 4096, (m0, m)
        assert b.query_stats()['rx_drop_icrc'] == 0 and a.query_stats()['rx_drop_icrc'] == 0
        assert [n for n in _sizes(log, 'qrnic_rx_handoff') if n > 4000], 'no hand-over'
        # an MTU of 1024: payloads of a quarter page, unaligned in the frame
        conn = h.connect_rc(a, b, mtu=1024)
        la, rb = scenarios.mrs(conn, 1 << 16)
        for i in range(3):
            scenarios.rdma_write(conn, la, rb, random.Random(90 + i), n=20000 + 777 * i, sges=3)
            scenarios.rdma_read(conn, la, rb, random.Random(95 + i), n=15000 + 333 * i)
        w.settle()
        _assert_released(a, 'after MTU 1024', m['map'] + 20000 // 1024)
        assert w.alive()
    finally:
        w.close()


def test_byref_captures_see_the_payload(qemu_binary, tmp_path):  # noqa: F811
    """A capture on the taking port and one on a third hub port: the WRITE
    and READ-response payloads in them are the bytes that landed, each
    frame with a valid ICRC; the mappings are all released."""
    pb, pc = tmp_path / 'b.pcap', tmp_path / 'c.pcap'
    w = World.single(qemu_binary, 3, name='byref-pcap', dev_opts=['', f'pcap={pb}', f'pcap={pc}'])
    try:
        wrote, read = _byref_traffic(w, 101)
        _assert_released(w.devs[0], 'with captures')
        assert w.alive()
    finally:
        w.close()
    for path, what in ((pb, "the taker's capture"), (pc, "the third port's capture")):
        frames = _pcap_roce(path)
        _assert_icrcs(frames, what)
        assert _payloads(frames, _WRITE_OPS) == wrote, f'{what}: WRITE payloads differ'
        assert _payloads(frames, _READ_RESP_OPS) == read, f'{what}: READ payloads differ'


def test_byref_filter_dump_sees_the_payload(qemu_binary, tmp_path):  # noqa: F811
    """filter-dump on the taking port's netdev reads every frame during the
    send: its payloads are the bytes that landed, its ICRCs valid."""
    from test_qemu_pcap import is_roce, read_pcap
    dump = tmp_path / 'dump.pcap'
    w = World.single(qemu_binary, 2, name='byref-dump',
                     extra_args=['-object', f'filter-dump,id=f0,netdev=p1,file={dump}'])
    try:
        wrote, read = _byref_traffic(w, 111)
        m = _maps(w.devs[0])
        assert m['map'] == m['unmap'], m
        assert w.alive()
    finally:
        w.close()
    frames = [f for _, f in read_pcap(dump) if is_roce(f)]
    _assert_icrcs(frames, 'filter-dump')
    assert _payloads(frames, _WRITE_OPS) == wrote
    assert _payloads(frames, _READ_RESP_OPS) == read


def test_byref_taker_fault_plan(qemu_binary, tmp_path):  # noqa: F811
    """A fault plan on the taker corrupts the ICRC of two WRITE frames it
    receives: exactly those are dropped and retransmitted, the data lands,
    the payloads went by reference and every mapping was released."""
    w, log = _world(qemu_binary, tmp_path, 2, 'byref-rxfault')
    try:
        m0 = _maps(w.devs[0])
        fired, drops = _icrc_faulted_writes(w, 1, 'rx', 2, [(121, 12000, 3, {})])
        assert fired == 2 and drops == 2, (fired, drops)
        _assert_released(w.devs[0], 'taker with a fault plan', m0['map'] + 1)
        assert w.alive()
    finally:
        w.close()


def test_byref_frames_queued_while_stopped(qemu_binary, tmp_path):  # noqa: F811
    """WRITEs posted while the VM is stopped wait as copies in QEMU's net
    queues (the payload filled in, its mapping released at once) and land
    intact once it runs; then the same by reference."""
    w = World.single(qemu_binary, 2, name='byref-stop')
    try:
        a, b = w.devs
        q = w.qemus[0]
        conn = h.connect_rc(a, b, mtu=4096)
        size = 1 << 17
        src, dst = a.reg_mr(conn.pda, size), b.reg_mr(conn.pdb, size)
        data = bytes(random.Random(131).getrandbits(8) for _ in range(size))
        src.write(0, data)
        for stopped in (True, False):
            m0 = _maps(a)
            if stopped:
                q.qmp('stop')
            for i in range(4):
                off = i * (size // 4)
                conn.qa.post_send('RDMA_WRITE', [(src, off + 5, 9000), (src, off + 12000, 13000)],
                                  remote=(dst, off + 1), wr_id=i)
            if stopped:
                w.settle()
                m = _maps(a)
                assert m['map'] == m['unmap'], ('mappings held while stopped', m)
                q.qmp('cont')
            cqes = conn.cqa.wait(4, timeout=60)
            assert [c['status_name'] for c in cqes] == ['SUCCESS'] * 4, cqes
            got = dst.read(0, size)
            for i in range(4):
                off = i * (size // 4)
                assert got[off + 1:off + 1 + 22000] == data[off + 5:off + 9005] + \
                    data[off + 12000:off + 25000], (stopped, i)
            dst.write(0, bytes(size))
            w.settle()
            _assert_released(a, f'stopped={stopped}', m0['map'] + (0 if stopped else 1))
        assert w.alive()
    finally:
        w.close()


def test_byref_source_not_in_ram_falls_back(qemu_binary, tmp_path):  # noqa: F811
    """A WRITE from an MR outside RAM completes with a local DMA error and
    maps nothing; one from an MR over the other port's register BAR reads
    the registers (MMIO, by dma_read: not mapped, not read twice) and lands
    them; one from RAM after both still goes by reference."""
    w = World.single(qemu_binary, 2, name='byref-noram')
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=4096)
        rb = b.reg_mr(conn.pdb, 8192)
        m0 = _maps(a)
        bad = a.reg_mr(conn.pda, 8192, iova=0xffff_f000_0000, phys=True, check=False)
        assert bad is not None, a.last_cqe()
        conn.qa.post_send('RDMA_WRITE', [(bad, 0, 5000)], remote=(rb, 0), wr_id=1)
        c = scenarios.one_cqe(conn.cqa)
        assert c['status_name'] != 'SUCCESS' and c['vendor_err_name'] == 'DMA', c
        assert rb.read(0, 5000) == bytes(5000)
        assert _maps(a) == m0, (m0, _maps(a))
        w.settle()
        # the QP is in error now: a fresh one for the MMIO source
        conn = h.connect_rc(a, b, mtu=4096)
        rb = b.reg_mr(conn.pdb, 8192)
        b.reg_write('SCRATCH', 0x1234abcd)
        bar = a.reg_mr(conn.pda, 4096, iova=b.regs, phys=True, check=False)
        assert bar is not None, a.last_cqe()
        conn.qa.post_send('RDMA_WRITE', [(bar, 0x1c, 4)], remote=(rb, 8), wr_id=2)
        c = scenarios.one_cqe(conn.cqa)
        assert c['status_name'] == 'SUCCESS', c
        assert rb.read(8, 4) == (0x1234abcd).to_bytes(4, 'little')
        assert _maps(a) == m0, (m0, _maps(a))
        la = a.reg_mr(conn.pda, 8192)
        scenarios.rdma_write(conn, la, rb, random.Random(141), n=6000, sges=2)
        w.settle()
        _assert_released(a, 'after the fallbacks', m0['map'] + 1)
        assert w.alive()
    finally:
        w.close()


def test_byref_not_for_uc(qemu_binary, tmp_path):  # noqa: F811
    """A UC request completes when it leaves, and its buffer may be reused
    while the frame waits in the peer's receive queue: UC payloads are
    copied into the frame at send, never mapped.  The bytes land; an RC
    WRITE on the same ports afterwards still maps."""
    w = World.single(qemu_binary, 2, name='byref-uc')
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024, qp_type='UC')
        la, rb = scenarios.mrs(conn, 1 << 16)
        m0 = _maps(a)
        data = la.fill_random(random.Random(151), 0, 40000)
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 40000)], remote=(rb, 0), wr_id=7)
        c = scenarios.one_cqe(conn.cqa)
        assert c['status_name'] == 'SUCCESS', c
        assert w.run_until(lambda: rb.read(0, 40000) == data, 20)
        w.settle()
        assert _maps(a) == m0, (m0, _maps(a))
        conn = h.connect_rc(a, b, mtu=1024)
        la, rb = scenarios.mrs(conn)
        scenarios.rdma_write(conn, la, rb, random.Random(152), n=9000, sges=1)
        w.settle()
        _assert_released(a, 'RC after UC', m0['map'] + 1)
        assert w.alive()
    finally:
        w.close()


def _contig_world(qemu_binary, name, seed):
    """Two ports, an RC connection at MTU 4096, a 64 KiB physically
    contiguous MR on port 0 filled with random bytes (seed) and a 64 KiB MR
    on port 1: (world, connection, source MR, target MR, the bytes)."""
    w = World.single(qemu_binary, 2, name=name)
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=4096)
        la = a.reg_mr(conn.pda, 1 << 16, contig=True)
        rb = b.reg_mr(conn.pdb, 1 << 16)
        return w, conn, la, rb, la.fill_random(random.Random(seed))
    except BaseException:
        w.close()
        raise


def test_byref_payload_of_several_mappings(qemu_binary, tmp_path):  # noqa: F811
    """A frame's payload from several DMA reads contiguous in host memory
    goes by reference as one (up to 4 mappings), a fifth falls back to
    copying what was mapped: SGEs laid end to end in a physically
    contiguous MR, and payloads crossing page boundaries at odd offsets.
    The bytes land and every mapping made is released."""
    w, conn, la, rb, data = _contig_world(qemu_binary, 'byref-pieces', 161)
    try:
        a = w.devs[0]
        m0 = _maps(a)
        for nsge, size in ((2, 1500), (4, 1000), (5, 800), (8, 500)):
            rb.write(0, bytes(1 << 16))
            pieces = [(la, 0x777 + i * size, size) for i in range(nsge)]
            conn.qa.post_send('RDMA_WRITE', pieces, remote=(rb, 5), wr_id=nsge)
            c = scenarios.one_cqe(conn.cqa)
            assert c['status_name'] == 'SUCCESS', c
            n = nsge * size
            assert rb.read(0, n + 10) == bytes(5) + data[0x777:0x777 + n] + bytes(5), nsge
            # one frame; a DMA read per SGE and page: at most 4 mapped, a
            # fifth mapped and given back at once (then the payload is copied)
            base = la.iova & 0xfff
            reads = sum(((base + off + ln - 1) >> 12) - ((base + off) >> 12) + 1
                        for _, off, ln in pieces)
            w.settle()
            m1 = _maps(a)
            assert m1['map'] - m0['map'] == min(reads, 5), (nsge, reads, m0, m1)
            assert m1['map'] == m1['unmap'], m1
            m0 = m1
        # 40000 bytes from an odd offset, 10 frames across page boundaries:
        # the first frame's payload is mapped page by page (one or two), the
        # nine after it go on its train as one run of host memory mapped
        # once (the MR is contiguous: model/mr.c qrnic_sgl_map_run)
        scenarios.rdma_write(conn, la, rb, random.Random(162), n=40000, sges=1)
        w.settle()
        m = _assert_released(a, 'several mappings', m0['map'] + 2)
        assert m['map'] - m0['map'] <= 3, (m0, m)
        assert w.alive()
    finally:
        w.close()


def test_byref_translation_cache_dropped_by_a_topology_change(qemu_binary, tmp_path):  # noqa: F811
    """A payload mapping inside the RAM section the device's last one was
    translated in takes its translation from the device's cache (QOM
    dma-maps 'cached'); a commit of the memory topology (here bus
    mastering turned off and on again) drops the cache: the next mapping
    is translated afresh, the one after it comes from the cache again.
    The bytes land every time and every mapping is released."""
    w, conn, la, rb, data = _contig_world(qemu_binary, 'byref-xcache', 171)
    try:
        a = w.devs[0]

        def write(i):
            """One 1000-byte WRITE from page i of la (one mapping): how
            many mappings came from the cache."""
            m0 = _maps(a)
            off = 0x100 + i * 0x1000
            conn.qa.post_send('RDMA_WRITE', [(la, off, 1000)], remote=(rb, 0), wr_id=i)
            c = scenarios.one_cqe(conn.cqa)
            assert c['status_name'] == 'SUCCESS', c
            assert rb.read(0, 1000) == data[off:off + 1000], i
            w.settle()
            m1 = _maps(a)
            assert m1['map'] - m0['map'] == 1 and m1['map'] == m1['unmap'], (i, m0, m1)
            return m1['cached'] - m0['cached']

        write(0)
        assert write(1) == 1, 'the same RAM section: the translation is cached'
        cmd = a.pci.cfg_read(0x04, 2)
        a.pci.cfg_write(0x04, cmd & ~0x4, 2)
        a.pci.cfg_write(0x04, cmd, 2)
        assert write(2) == 0, 'a topology commit must drop the cached translation'
        assert write(3) == 1
        assert w.alive()
    finally:
        w.close()
