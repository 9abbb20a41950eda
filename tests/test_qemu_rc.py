# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: one QEMU (q35, -accel qtest) with two qrnic devices cabled back
to back through a hub (-netdev hubport).  The test is the guest: it maps the
BARs, enables MSI-X with message addresses in guest RAM, brings the admin
queues up and moves data through the doorbells (tests/qtest/driver.py)."""
import random

import pytest

import qrnic_harness as h
from qtest import abi, scenarios
from qtest.fixtures import qemu_binary, shared_world  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu


qworld, world = shared_world('rc')


@pytest.fixture
def conn(world):
    return h.connect_rc(*world.devs, mtu=1024)


def test_abi_mirrors_match_c_layout():
    """The admin command mirrors of tests/qtest/abi.py match the C structures."""
    try:
        h.lib()
    except RuntimeError as e:
        pytest.fail(str(e))
    abi.check_layout()
    assert abi.STAT_NAMES == [h.lib().hx_stat_name(i).decode()
                              for i in range(h.lib().hx_stat_count())]


def test_bringup_and_queries(world):
    a, b = world.devs
    for i, d in enumerate(world.devs):
        assert d.reg_read('VERSION') == abi.ABI_VERSION
        assert d.reg_read('STATUS') == h.STATUS_READY | h.STATUS_ENABLED
        assert d.reg_read('AQ_STATUS') == h.AQ_STATUS_ENABLED
        assert d.reg_read('NUM_VECTORS') == 8
        assert d.reg_read('NUM_DB_PAGES') == 64
        assert d.reg_read('PORT_STATUS') & 1
        assert d.mac == bytes.fromhex(f'5254005e00{i + 1:02x}')
        attr = d.attr
        assert attr['abi_version'] == abi.ABI_VERSION
        assert attr['max_sge'] == h.MAX_SGE == 30 and attr['max_qp'] == 65536
        assert attr['mac'] == d.mac
        port = d.query_port()
        assert port['state'] == 4 and port['eth_mtu'] == 4200 and port['mac'] == d.mac
        assert d.query_gid(0) == h.gid_v4(f'10.0.0.{d.idx + 1}')
    st = a.query_stats()
    assert st['admin_cmds'] >= 6 and st['admin_errors'] == 0


def test_rdma_write(conn):
    la, rb = scenarios.mrs(conn)
    scenarios.rdma_write(conn, la, rb, random.Random(1), n=12000, sges=3)


def test_rdma_read(conn):
    la, rb = scenarios.mrs(conn)
    scenarios.rdma_read(conn, la, rb, random.Random(2), n=10000)


def test_send_recv_with_and_without_imm(conn):
    la, rb = scenarios.mrs(conn)
    scenarios.send_recv(conn, la, rb, random.Random(3), imm=0x01020304)
    scenarios.send_recv(conn, la, rb, random.Random(4), n=2500, imm=None, wr_id=0x2000)


def test_atomics(conn):
    la, rb = scenarios.mrs(conn)
    scenarios.atomics(conn, la, rb)
    st = conn.b.dev.query_stats()
    assert st['atomics_executed'] == 3


def test_inline_write_and_write_with_imm(conn):
    la, rb = scenarios.mrs(conn)
    conn.qa.post_send('RDMA_WRITE', inline=b'inline payload!', remote=(rb, 100), wr_id=5)
    scenarios.expect_success(scenarios.one_cqe(conn.cqa), 'RDMA_WRITE', 5, conn.qa.qpn)
    assert rb.read(100, 15) == b'inline payload!'
    conn.qb.post_recv([], wr_id=6)
    la.write(0, b'W' * 300)
    conn.qa.post_send('RDMA_WRITE_WITH_IMM', [(la, 0, 300)], remote=(rb, 200), imm=77, wr_id=7)
    scenarios.expect_success(scenarios.one_cqe(conn.cqa), 'RDMA_WRITE', 7, conn.qa.qpn)
    cr = scenarios.one_cqe(conn.cqb)
    assert cr['opcode_name'] == 'RECV_RDMA_WITH_IMM' and cr['imm'] == 77, cr
    assert rb.read(200, 300) == b'W' * 300


def test_both_directions_and_mr_layouts(world):
    """Traffic b -> a too, with a 2-level PBL, a contiguous (level 0) MR and
    64 KiB pages."""
    a, b = world.devs
    conn = h.connect_rc(b, a, mtu=4096)
    rng = random.Random(9)
    big = conn.a.dev.reg_mr(conn.pda, 600 * 4096, levels=2)          # 2-level PBL
    flat = conn.b.dev.reg_mr(conn.pdb, 3 * 65536, page_shift=16, levels=1)
    cont = conn.b.dev.reg_mr(conn.pdb, 64 * 1024, contig=True, levels=0)
    data = rng.randbytes(150000)
    big.write(512 * 4096 - 1000, data)
    conn.qa.post_send('RDMA_WRITE', [(big, 512 * 4096 - 1000, len(data))], remote=(flat, 7),
                      wr_id=1)
    scenarios.expect_success(scenarios.one_cqe(conn.cqa), 'RDMA_WRITE', 1, conn.qa.qpn)
    assert flat.read(7, len(data)) == data
    conn.qa.post_send('RDMA_READ', [(big, 5, 60000)], remote=(cont, 100), wr_id=2)
    scenarios.expect_success(scenarios.one_cqe(conn.cqa), 'RDMA_READ', 2, conn.qa.qpn)
    assert big.read(5, 60000) == cont.read(100, 60000)


def test_1mib_write_and_read(world):
    a, b = world.devs
    conn = h.connect_rc(a, b, mtu=4096)
    rng = random.Random(11)
    la, rb = a.reg_mr(conn.pda, 1 << 20), b.reg_mr(conn.pdb, 1 << 20)
    data = la.fill_random(rng)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 1 << 20)], remote=(rb, 0), wr_id=1)
    scenarios.expect_success(scenarios.one_cqe(conn.cqa, 60), 'RDMA_WRITE', 1, conn.qa.qpn)
    assert rb.read() == data
    lc = a.reg_mr(conn.pda, 1 << 20)
    conn.qa.post_send('RDMA_READ', [(lc, 0, 1 << 20)], remote=(rb, 0), wr_id=2)
    scenarios.expect_success(scenarios.one_cqe(conn.cqa, 60), 'RDMA_READ', 2, conn.qa.qpn)
    assert lc.read() == data
    st = b.query_stats()
    assert st['rx_packets'] >= 256 and st['rx_drop_other'] == 0


def test_ud_send(world):
    a, b = world.devs
    ua, ub = h.create_ud(a), h.create_ud(b)
    ma, mb = a.reg_mr(ua.pd, 4096), b.reg_mr(ub.pd, 4096)
    ma.write(0, b'datagram over a hub')
    ub.qp.post_recv([(mb, 0, 4096)], wr_id=3)
    ah = a.ah_to(ua.pd, b)
    ua.qp.post_send('SEND', [(ma, 0, 19)], ah=ah, remote_qpn=ub.qp.qpn, qkey=0x11111111,
                    wr_id=4)
    scenarios.expect_success(scenarios.one_cqe(ua.cq), 'SEND', 4, ua.qp.qpn)
    c = scenarios.one_cqe(ub.cq)
    scenarios.expect_success(c, 'RECV', 3, ub.qp.qpn)
    assert c['byte_len'] == h.GRH_BYTES + 19 and c['src_qp'] == ua.qp.qpn
    assert mb.read(h.GRH_BYTES, 19) == b'datagram over a hub'


# ---- interrupts -------------------------------------------------------------------------
def test_msix_admin_completion(world):
    """An admin completion raises vector 0: a 4-byte write of the programmed
    data to the programmed address in guest RAM."""
    a = world.devs[0]
    a.irq_clear()
    a.alloc_pd()
    assert a.irq_wait(abi.AQ_VECTOR, 5), 'no MSI-X write for the admin CQE'
    assert a.qemu.readl(a.msi_addr(abi.AQ_VECTOR)) == 0      # irq_wait cleared it
    for v in range(3, 8):
        assert not a.irq_fired(v), f'unexpected MSI-X vector {v}'
    assert a.query_stats()['interrupts'] >= 1


def test_msix_cq_event(conn):
    """An armed CQ gets a completion: an EQE in the completion EQ and that
    EQ's vector (2) fires; an unarmed CQ raises nothing."""
    a = conn.a.dev
    la, rb = scenarios.mrs(conn)
    a.irq_clear()
    conn.cqa.arm()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=1)
    assert a.irq_wait(a.comp_eq.vector, 10), 'no MSI-X write for the CQ event'
    eqes = a.comp_eq.poll()
    assert [(e['type_name'], e['handle']) for e in eqes] == [('COMPLETION', conn.cqa.cqn)]
    assert [c['wr_id'] for c in conn.cqa.poll()] == [1]
    a.comp_eq.arm()
    # not re-armed: a second completion raises no event
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=2)
    assert [c['wr_id'] for c in conn.cqa.wait(1)] == [2]
    world = a.world
    world.settle()
    assert not a.irq_fired(a.comp_eq.vector)
    assert a.comp_eq.poll() == []


def test_msix_masked_vector_is_pending_then_delivered(conn):
    """A masked vector latches its PBA bit; unmasking delivers the message
    (QEMU's MSI-X emulation seen through the device's vectors)."""
    a = conn.a.dev
    la, rb = scenarios.mrs(conn)
    v = a.comp_eq.vector
    a.irq_clear()
    a.pci.msix_mask(v, True)
    conn.cqa.arm()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 10)], remote=(rb, 0), wr_id=1)
    assert len(conn.cqa.wait(1)) == 1
    assert a.world.run_until(lambda: a.pci.msix_pending(v), 5), 'PBA bit not set'
    assert not a.irq_fired(v)
    a.pci.msix_mask(v, False)
    assert a.irq_fired(v), 'unmasking did not deliver the pending message'
    assert not a.pci.msix_pending(v)
    assert a.qemu.readl(a.msi_addr(v)) == 0


def test_async_event_port_down_up(world):
    """set_link (QMP) reaches the device: PORT_ERR/PORT_ACTIVE async events,
    PORT_STATUS follows, and the async EQ's vector fires."""
    a = world.devs[0]
    q = a.qemu
    a.irq_clear()
    a.async_eq.poll()
    a.async_eq.arm()
    q.qmp('set_link', name='qrnic0', up=False)
    assert a.irq_wait(a.async_eq.vector, 5)
    ev = a.async_eq.poll()
    assert [e['event'] for e in ev] == ['PORT_ERR'], ev
    assert not a.reg_read('PORT_STATUS') & 1
    a.async_eq.arm()
    q.qmp('set_link', name='qrnic0', up=True)
    assert a.irq_wait(a.async_eq.vector, 5)
    assert [e['event'] for e in a.async_eq.poll()] == ['PORT_ACTIVE']
    assert a.reg_read('PORT_STATUS') & 1
    scenarios.healthy(world, *world.devs)


def test_many_qps_interleaved(world):
    """8 connections at once, each with WRITE + SEND posted before any wait."""
    a, b = world.devs
    rng = random.Random(21)
    conns = [h.connect_rc(a, b, mtu=2048, cq_log=6) for _ in range(8)]
    jobs = []
    for i, c in enumerate(conns):
        la, rb = a.reg_mr(c.pda, 8192), b.reg_mr(c.pdb, 8192)
        d = la.fill_random(rng, 0, 5000)
        c.qb.post_recv([(rb, 6000, 2000)], wr_id=100 + i)
        c.qa.post_send('RDMA_WRITE', [(la, 0, 5000)], remote=(rb, 0), wr_id=i)
        c.qa.post_send('SEND', [(la, 0, 1500)], wr_id=50 + i)
        jobs.append((c, rb, d))
    for i, (c, rb, d) in enumerate(jobs):
        got = c.cqa.wait(2)
        assert [(x['wr_id'], x['status_name']) for x in got] == \
            [(i, 'SUCCESS'), (50 + i, 'SUCCESS')]
        r = c.cqb.wait(1)
        assert r[0]['wr_id'] == 100 + i and r[0]['byte_len'] == 1500
        assert rb.read(0, 5000) == d and rb.read(6000, 1500) == d[:1500]


def test_counters_via_query_stats(conn):
    a, b = conn.a.dev, conn.b.dev
    sa0, sb0 = a.query_stats(), b.query_stats()
    la, rb = scenarios.mrs(conn)
    scenarios.rdma_write(conn, la, rb, random.Random(5), n=4000, sges=1)
    sa, sb = a.query_stats(), b.query_stats()
    assert sa['tx_packets'] - sa0['tx_packets'] == 4          # MTU 1024
    assert sb['rx_packets'] - sb0['rx_packets'] == 4
    assert sa['cqes'] - sa0['cqes'] == 1
    assert sa['doorbells'] > sa0['doorbells']
    assert sa['dma_errors'] == 0 and sb['dma_errors'] == 0


def test_uc_burst_pauses_instead_of_dropping(world):
    """UC has no retransmission: a burst larger than the receiver's queue
    (48 x 16 KiB SENDs = 768 packets at MTU 256, more than QRNIC_RXQ_DEPTH
    frames in one run of the sender) arrives whole because the receiving
    port pauses its netdev while its queue is full (docs/qemu.md section
    5), and every byte is right."""
    a, b = world.devs
    conn = h.connect_rc(a, b, mtu=256, qp_type='UC', sq_log=6, rq_log=6)
    n, size = 48, 16384
    la = a.reg_mr(conn.pda, n * size)
    rb = b.reg_mr(conn.pdb, n * size)
    data = la.fill_random(random.Random(31))
    s0 = b.query_stats()
    for i in range(n):
        conn.qb.post_recv([(rb, i * size, size)], wr_id=i)
    for i in range(n):
        conn.qa.post_send('SEND', [(la, i * size, size)], wr_id=i, signaled=(i == n - 1),
                          ring=(i == n - 1))         # one doorbell: one burst
    got = []
    assert world.run_until(lambda: got.extend(conn.cqb.poll()) or len(got) >= n, 20), \
        (len(got), str({k: v - s0[k] for k, v in b.query_stats().items() if v != s0[k]}))
    assert [(c['wr_id'], c['status_name'], c['byte_len']) for c in got] == \
        [(i, 'SUCCESS', size) for i in range(n)]
    assert rb.read() == data
    s1 = b.query_stats()
    assert s1['rx_drop_other'] == s0['rx_drop_other']
    assert s1['rx_packets'] - s0['rx_packets'] == n * size // 256
    c = scenarios.one_cqe(conn.cqa)                 # the one signaled send
    assert c['wr_id'] == n - 1 and c['status_name'] == 'SUCCESS'


def test_srq_shared_by_two_qps_register_level(world):
    """Two RC QPs of b on one SRQ (spec 12.10), driven through the ring and
    the QRNIC_DB_SRQ doorbell in BAR2: both connections' SENDs land in the
    SRQ's buffers, the device writes its consumer index to the record, a
    SRQ_LIMIT_REACHED async event arrives on the async EQ, and a QP moved
    to ERROR raises LAST_WQE_REACHED."""
    a, b = world.devs
    pda, pdb = a.alloc_pd(), b.alloc_pd()
    srq = b.create_srq(pdb, log_depth=4, limit=3)
    conns = []
    for _ in range(2):
        cqa, cqb = a.create_cq(6), b.create_cq(6)
        qa = a.create_qp(pda, cqa)
        qb = b.create_qp(pdb, cqb, srq=srq)
        for me, peer in ((qa, qb), (qb, qa)):
            me.to_init(h.ACCESS_ALL)
            me.to_rtr(peer.dev, peer.qpn, mtu=1024, rq_psn=0)
        qa.to_rts(sq_psn=0)
        qb.to_rts(sq_psn=0)
        conns.append((qa, qb, cqa, cqb))
    la = a.reg_mr(pda, 8192)
    rb = b.reg_mr(pdb, 6 * 1024)
    data = la.fill_random(random.Random(4))
    for i in range(6):
        srq.post_recv([(rb, i * 1024, 1024)], wr_id=0x500 + i)
    b.async_eq.poll()
    b.async_eq.arm()
    for i in range(4):
        qa = conns[i % 2][0]
        qa.post_send('SEND', [(la, i * 1000, 1000)], wr_id=i)
        scenarios.expect_success(scenarios.one_cqe(conns[i % 2][2]), 'SEND', i, qa.qpn)
    got = []
    for i in range(4):
        got.append(scenarios.one_cqe(conns[i % 2][3]))
    assert sorted(c['wr_id'] for c in got) == [0x500 + i for i in range(4)]
    for c in got:
        assert c['status_name'] == 'SUCCESS' and c['byte_len'] == 1000
    # in this order each SEND took the next SRQ slot
    for i in range(4):
        assert rb.read(i * 1024, 1000) == data[i * 1000:(i + 1) * 1000]
    assert srq.ci == 4
    assert b.irq_wait(b.async_eq.vector, 5)
    assert [(e['event'], e['handle']) for e in b.async_eq.poll()] == \
        [('SRQ_LIMIT_REACHED', srq.srqn)]
    b.async_eq.arm()
    conns[1][1].modify('ERR')
    assert b.irq_wait(b.async_eq.vector, 5)
    assert [(e['event'], e['handle']) for e in b.async_eq.poll()] == \
        [('QP_LAST_WQE_REACHED', conns[1][1].qpn)]
    # a doorbell that laps the consumer is ignored and counted
    s0 = b.query_stats()
    srq.ring_db(srq.ci + 17)
    world.run_until(lambda: b.query_stats()['doorbells_ignored'] > s0['doorbells_ignored'], 5)
    assert b.query_stats()['doorbells_ignored'] == s0['doorbells_ignored'] + 1
    scenarios.healthy(world, a, b)


def test_xrc_send_register_level(world):
    """XRC through the admin queue and the rings (spec 6.6.20, 12.14): an XRC
    domain, two XRC SRQs of it on b (each with its own CQ), an XRC INI QP on a
    and an XRC TGT QP on b.  The INI QP takes the responder attributes RC takes
    and QUERY_QP reports them (issue 16).  SENDs naming either SRQ in the WQE's
    xrc_srqn land in that SRQ's buffers, byte for byte, complete on its CQ (XRC
    flag, src_qp = the SRQ, qpn = the TGT QP) and on the INI QP's CQ; a WQE
    naming an SRQ outside the domain is NAKed (REM_INV_REQ_ERR); the domain is
    busy until its SRQs and TGT QP are gone."""
    a, b = world.devs
    pda, pdb = a.alloc_pd(), b.alloc_pd()
    xrcd = b.alloc_xrcd()
    assert xrcd and b.alloc_xrcd(uctx=99, check=False) is None
    scq = [b.create_cq(6) for _ in range(2)]
    srq = [b.create_xrc_srq(pdb, xrcd, cq, log_depth=4) for cq in scq]
    plain = b.create_srq(pdb, log_depth=4)
    cqa = a.create_cq(6)
    ini = a.create_xrc_ini(pda, cqa)
    tgt = b.create_xrc_tgt(xrcd)
    assert ini.modify('INIT', pkey_index=0, port_num=1, qp_access_flags=h.ACCESS_ALL) == 0
    tgt.to_init(h.ACCESS_ALL)
    gid, nt = b.gids[0]
    assert ini.modify('RTR', av=h.make_av(gid, b.mac, nt, sgid_index=0), path_mtu=h.MTU[1024],
                      dest_qpn=tgt.qpn, rq_psn=0x40, max_dest_rd_atomic=2, min_rnr_timer=9) == 0
    tgt.to_rtr(a, ini.qpn, mtu=1024, rq_psn=0x80)
    ini.to_rts(sq_psn=0x80)
    tgt.to_rts(sq_psn=0x40)
    got = ini.query()
    assert (got['state_name'], got['qp_access_flags'], got['max_dest_rd_atomic'],
            got['min_rnr_timer']) == ('RTS', h.ACCESS_ALL, 2, 9), got
    assert tgt.query()['state_name'] == 'RTS'

    la = a.reg_mr(pda, 16384)
    rb = b.reg_mr(pdb, 16384)
    data = la.fill_random(random.Random(12))
    for s in range(2):
        for i in range(2):
            srq[s].post_recv([(rb, (s * 2 + i) * 4096, 4096)], wr_id=0x700 + s * 16 + i)
    sizes = [3000, 100, 4096, 1]
    for i, n in enumerate(sizes):
        ini.post_send('SEND', [(la, i * 4096, n)], wr_id=i, xrc_srqn=srq[i % 2].srqn)
        scenarios.expect_success(scenarios.one_cqe(cqa), 'SEND', i, ini.qpn)
    for s in range(2):
        cqes = scq[s].wait(2)
        assert len(cqes) == 2, cqes
        for k, c in enumerate(cqes):
            i = s + 2 * k                        # the i-th SEND named SRQ i % 2
            assert c['status_name'] == 'SUCCESS' and c['byte_len'] == sizes[i], c
            assert c['wr_id'] == 0x700 + s * 16 + k and c['qpn'] == tgt.qpn, c
            assert c['flags'] & h.CQE_F_XRC and c['src_qp'] == srq[s].srqn, c
            assert rb.read((s * 2 + k) * 4096, sizes[i]) == data[i * 4096:i * 4096 + sizes[i]]
        assert srq[s].ci == 2
    # an SRQ that is not of the domain: NAK invalid request at the INI QP
    ini.post_send('SEND', [(la, 0, 64)], wr_id=9, xrc_srqn=plain.srqn)
    c = scenarios.one_cqe(cqa)
    assert (c['wr_id'], c['status_name']) == (9, 'REM_INV_REQ_ERR'), c
    assert b.dealloc_xrcd(xrcd, check=False) == h.AQ_STATUS.index('BUSY')
    tgt.destroy()
    for x in srq:
        x.destroy()
    plain.destroy()
    ini.destroy()
    assert b.dealloc_xrcd(xrcd) == 0
    scenarios.healthy(world, a, b)
