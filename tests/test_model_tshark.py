# SPDX-License-Identifier: GPL-2.0-or-later
"""Frames the model's engines put on the wire, decoded by tshark.

Two devices run one RC connection through every operation (SEND with and
without immediate, multi-packet RDMA WRITE with immediate, RDMA READ,
CMP_AND_SWP, FETCH_AND_ADD) plus UD SENDs over IPv4 and IPv6.  The wire is
captured to a pcap; tshark (a decoder nobody here wrote) must decode each
frame's opcode, destination QP and PSN as the harness saw them, the RETH of
every WRITE/READ request with the exact remote address, rkey and length the
test posted, the AETH of ACKs and READ responses, the AtomicETH/AtomicAckETH
values, and each frame's ICRC must equal the independent reference ICRC of
test_wire.py (tshark 4.0 shows, but does not verify, the ICRC).
"""


from tshark_fields import tshark_fields
import qrnic_harness as q
from test_wire import ref_icrc

FIELDS = ['infiniband.bth.opcode', 'infiniband.bth.destqp', 'infiniband.bth.psn',
          'infiniband.reth.va', 'infiniband.reth.r_key', 'infiniband.reth.dmalen',
          'infiniband.aeth.syndrome', 'infiniband.aeth.msn',
          'infiniband.atomiceth.swapdt', 'infiniband.atomiceth.cmpdt',
          'infiniband.atomicacketh.origremdt', 'infiniband.deth.q_key',
          'infiniband.deth.srcqp', 'infiniband.immdt', 'infiniband.invariant.crc']


def tshark(pcap):
    return tshark_fields(pcap, FIELDS)


def val(row, field):
    assert row[field] != '', f'{field} missing in {row}'
    return int(row[field], 0)


def test_engine_frames_decode_in_tshark(world, tmp_path, rng):
    pcap = tmp_path / 'engines.pcap'
    world.pcap(pcap)
    a, b = world.devs
    conn = q.connect_rc(a, b, mtu=1024)
    la, lb = a.reg_mr(conn.pda, 1 << 16), b.reg_mr(conn.pdb, 1 << 16)
    la.fill_random(rng, 0, 1 << 16)
    lb.write(0x8000, (1000).to_bytes(8, 'little'))
    lb.write(0x8008, (7).to_bytes(8, 'little'))
    posted = []   # (op, remote va, rkey, length)
    conn.qb.post_recv([(lb, 0, 4096)], wr_id=1)
    conn.qb.post_recv([(lb, 4096, 4096)], wr_id=2)
    conn.qa.post_send('SEND', [(la, 0, 700)])
    conn.qa.post_send('SEND_WITH_IMM', [(la, 0, 100)], imm=0x11223344)
    conn.qa.post_send('RDMA_WRITE_WITH_IMM', [(la, 0, 2500)], remote=(lb, 0x2000), imm=5)
    conn.qb.post_recv([(lb, 0, 16)], wr_id=3)
    conn.qb.post_recv([(lb, 0xa000, 4096)], wr_id=4)
    posted.append(('WRITE', lb.addr(0x2000), lb.rkey, 2500))
    conn.qa.post_send('RDMA_READ', [(la, 0x4000, 3000)], remote=(lb, 0x100))
    posted.append(('READ', lb.addr(0x100), lb.rkey, 3000))
    conn.qa.post_send('ATOMIC_CMP_AND_SWP', [(la, 0x9000, 8)], remote=(lb, 0x8000),
                      compare=1000, swap=0xabcdef)
    conn.qa.post_send('ATOMIC_FETCH_AND_ADD', [(la, 0x9008, 8)], remote=(lb, 0x8008), add=35)
    conn.qa.post_send('SEND', [(la, 0, 3000)])      # FIRST, MIDDLE, LAST
    assert world.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll(16)] == ['SUCCESS'] * 7
    # READ responses overtaking the coalesced ACK must not look lost
    assert a.stat('retransmit_timeouts') == 0 and a.stat('retransmitted_packets') == 0
    # UD over IPv4 (GID 0) and IPv6 (GID 1)
    uds = []
    for gid in (0, 1):
        ua, ub = q.create_ud(a), q.create_ud(b)
        ma, mb = a.reg_mr(ua.pd, 4096), b.reg_mr(ub.pd, 4096)
        ub.qp.post_recv([(mb, 0, 4096)])
        ah = a.ah_to(ua.pd, b, gid_index=gid)
        ua.qp.post_send('SEND', [(ma, 0, 64)], ah=ah, remote_qpn=ub.qp.qpn, qkey=0x11111111)
        uds.append((ua.qp.qpn, ub.qp.qpn))
    assert world.run() == 'idle'
    world.pcap_close()

    frames = world.frames(roce_only=True)
    rows = tshark(pcap)
    assert len(rows) == len(frames) >= 19
    seen = set()
    reqs = iter(posted)
    for row, f in zip(rows, frames):
        op = val(row, 'infiniband.bth.opcode')
        assert op == f.opcode and val(row, 'infiniband.bth.destqp') == f.dqpn
        assert val(row, 'infiniband.bth.psn') == f.psn
        assert bytes.fromhex('%08x' % val(row, 'infiniband.invariant.crc')) == ref_icrc(f.data)
        seen.add(op)
        name = f.opname
        if name in ('RC_WRITE_FIRST', 'RC_READ_REQ') or name.startswith('RC_WRITE_ONLY'):
            kind, va, rkey, length = next(reqs)
            assert kind in name
            assert val(row, 'infiniband.reth.va') == va
            assert val(row, 'infiniband.reth.r_key') == rkey
            assert val(row, 'infiniband.reth.dmalen') == length
        if name in ('RC_ACK', 'RC_READ_RESP_FIRST', 'RC_READ_RESP_LAST'):
            assert val(row, 'infiniband.aeth.syndrome') == 0x1f
            assert 0 < val(row, 'infiniband.aeth.msn') <= 7
        if name == 'RC_CMP_SWAP':
            assert val(row, 'infiniband.reth.va') == lb.addr(0x8000)   # tshark shows AtomicETH VA here
            assert val(row, 'infiniband.atomiceth.swapdt') == 0xabcdef
            assert val(row, 'infiniband.atomiceth.cmpdt') == 1000
        if name == 'RC_FETCH_ADD':
            assert val(row, 'infiniband.atomiceth.swapdt') == 35
        if name == 'RC_ATOMIC_ACK':
            assert val(row, 'infiniband.atomicacketh.origremdt') in (1000, 7)
        if name.startswith('UD_SEND'):
            assert val(row, 'infiniband.deth.q_key') == 0x11111111
            assert (val(row, 'infiniband.deth.srcqp'), f.dqpn) in uds
        if 'IMM' in name:   # FT_BYTES: the 4 wire bytes in hex
            assert int(row['infiniband.immdt'], 16) in (0x11223344, 5)
    assert next(reqs, None) is None
    # every RC opcode the engines use, and both IP versions for UD
    for op in (0x00, 0x01, 0x02, 0x04, 0x05, 0x06, 0x07, 0x09, 0x0c, 0x0d, 0x0f, 0x11, 0x12,
               0x13, 0x14, 0x64):
        assert op in seen, hex(op)
    assert {f.ip_version for f in frames} == {4, 6}
