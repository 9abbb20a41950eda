# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: -device qrnic,...,pcap=FILE (hw/qrnic.c, docs/qemu.md section 12).

Two devices on a hub, each with its own pcap= file, run every RC operation
(WRITE and WRITE with immediate, single and multi packet, READ, SEND and
SEND with immediate, CMP_AND_SWP, FETCH_AND_ADD) and UD SENDs through the
qtest driver; a third hub port (a dgram netdev whose other end is this test)
injects a plain Ethernet frame.  Then:

* tshark (`-d udp.port==4791,infiniband`) dissects every RoCEv2 frame: the
  BTH opcode, destination QP and PSN it shows are the bytes in the file, and
  every opcode the device sends is there (0x00..0x14, UD 0x64/0x65);
* every ICRC is valid: tshark 4.0 does not verify ICRCs, so the value it
  shows (infiniband.invariant.crc) is compared with ref_icrc() of
  tests/test_wire.py, an independent implementation;
* each device's file holds what it sent and what it received: a's sent
  frames are b's received frames, byte for byte, at the same virtual time;
  the plain Ethernet frame is in both files as received;
* QEMU's own `-object filter-dump` on a's netdev sees the same frames;
* the file is complete while QEMU still runs (nothing buffered);
* an uncreatable file stops QEMU with a clear error.
"""
import random
import re
import socket
import struct
from pathlib import Path

import pytest

from tshark_fields import tshark_fields
import qrnic_harness as h
from qtest import scenarios
from qtest.driver import World, mac_of
from qtest.qemu import try_start
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)
from test_wire import ref_icrc, wire_icrc

pytestmark = pytest.mark.qemu

FIELDS = ['frame.number', 'eth.src', 'eth.dst', 'eth.type', 'infiniband.bth.opcode',
          'infiniband.bth.destqp', 'infiniband.bth.psn', 'infiniband.invariant.crc',
          'infiniband.reth.dmalen', 'infiniband.deth.q_key']
MAC_A = mac_of(0)     # World.single: device i has mac_of(i)
PLAIN_TYPE = 0x88b5          # IEEE local experimental EtherType
PLAIN_PAYLOAD = b'qrnic pcap plain ethernet frame'.ljust(46, b'.')

# Every opcode the device sends in this scenario (docs/spec.md, IBTA table 38)
EXPECTED_OPS = set(range(0x00, 0x15)) | {0x64, 0x65}


def read_pcap(path):
    """[(t_ns, bytes)] of a classic pcap file (µs or ns timestamps)."""
    data = Path(path).read_bytes()
    assert len(data) >= 24, f'{path}: no pcap header'
    magic = struct.unpack('<I', data[:4])[0]
    assert magic in (0xa1b2c3d4, 0xa1b23c4d), hex(magic)
    scale = 1 if magic == 0xa1b23c4d else 1000
    major, minor, _, _, snap, link = struct.unpack('<HHiIII', data[4:24])
    assert (major, minor, link) == (2, 4, 1), (major, minor, link)
    out, off = [], 24
    while off < len(data):
        assert off + 16 <= len(data), f'{path}: truncated record header at {off}'
        sec, frac, incl, orig = struct.unpack('<IIII', data[off:off + 16])
        assert incl == orig <= snap
        frame = data[off + 16:off + 16 + incl]
        assert len(frame) == incl, f'{path}: truncated frame at {off}'
        out.append((sec * 1_000_000_000 + frac * scale, frame))
        off += 16 + incl
    return out


def tshark(pcap):
    return tshark_fields(pcap, FIELDS, required=True)


def is_roce(frame):
    et = frame[12:14]
    if et == b'\x08\x00':
        return frame[23] == 17 and struct.unpack('>H', frame[36:38])[0] == 4791
    if et == b'\x86\xdd':
        return frame[20] == 17 and struct.unpack('>H', frame[56:58])[0] == 4791
    return False


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_everything(conn, ud_pair, a, b, world):
    """Every operation; returns nothing, checks every completion."""
    rng = random.Random(7)
    la, rb = scenarios.mrs(conn, 16384)
    # WRITE: multi packet (FIRST/MIDDLE/LAST) and ONLY
    scenarios.rdma_write(conn, la, rb, rng, n=2500, sges=1, wr_id=0x10)
    scenarios.rdma_write(conn, la, rb, rng, n=100, sges=1, wr_id=0x11)
    # WRITE with immediate: LAST_WITH_IMM and ONLY_WITH_IMM, each consumes a receive
    for n, wr in ((2500, 0x12), (8, 0x13)):
        conn.qb.post_recv([(rb, 12000, 16)], wr_id=wr + 0x100)
        conn.qa.post_send('RDMA_WRITE_WITH_IMM', [(la, 0, n)], remote=(rb, 64), imm=0x1234,
                          wr_id=wr)
        scenarios.expect_success(scenarios.one_cqe(conn.cqa), 'RDMA_WRITE', wr, conn.qa.qpn)
        c = scenarios.one_cqe(conn.cqb)
        assert c['status_name'] == 'SUCCESS' and c['imm'] == 0x1234, c
    # READ: FIRST/MIDDLE/LAST responses and ONLY
    scenarios.rdma_read(conn, la, rb, rng, n=3000, wr_id=0x20)
    scenarios.rdma_read(conn, la, rb, rng, n=200, wr_id=0x21)
    # SEND and SEND with immediate, multi packet and ONLY
    scenarios.send_recv(conn, la, rb, rng, n=3000, imm=None, wr_id=0x30)
    scenarios.send_recv(conn, la, rb, rng, n=3000, imm=0xdeadbeef, wr_id=0x31)
    for op, wr in (('SEND', 0x32), ('SEND_WITH_IMM', 0x33)):     # ONLY, ONLY_WITH_IMM
        conn.qb.post_recv([(rb, 0, 256)], wr_id=wr + 0x100)
        data = la.fill_random(rng, 0, 100)
        conn.qa.post_send(op, [(la, 0, 100)], imm=0xfeedf00d, wr_id=wr)
        scenarios.expect_success(scenarios.one_cqe(conn.cqa), 'SEND', wr, conn.qa.qpn)
        c = scenarios.one_cqe(conn.cqb)
        scenarios.expect_success(c, 'RECV', wr + 0x100, conn.qb.qpn)
        assert c['byte_len'] == 100 and rb.read(0, 100) == data
    # CMP_AND_SWP (hit and miss), FETCH_AND_ADD
    scenarios.atomics(conn, la, rb, wr_id=0x40)
    # UD SEND and SEND with immediate
    ua, ub = ud_pair
    ma, mb = a.reg_mr(ua.pd, 4096), b.reg_mr(ub.pd, 4096)
    ma.write(0, b'datagram in a pcap')
    ah = a.ah_to(ua.pd, b)
    for op, wr in (('SEND', 0x50), ('SEND_WITH_IMM', 0x51)):
        ub.qp.post_recv([(mb, 0, 4096)], wr_id=wr + 0x100)
        ua.qp.post_send(op, [(ma, 0, 18)], ah=ah, remote_qpn=ub.qp.qpn, qkey=0x11111111,
                        imm=0x77, wr_id=wr)
        scenarios.expect_success(scenarios.one_cqe(ua.cq), 'SEND', wr, ua.qp.qpn)
        scenarios.expect_success(scenarios.one_cqe(ub.cq), 'RECV', wr + 0x100, ub.qp.qpn)


def test_pcap_every_opcode_dissects_with_valid_icrc(qemu_binary, tmp_path):  # noqa: F811
    pa, pb, dump = tmp_path / 'a.pcap', tmp_path / 'b.pcap', tmp_path / 'dump.pcap'
    qport = free_udp_port()
    inj = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    inj.bind(('127.0.0.1', 0))
    tport = inj.getsockname()[1]
    extra = ['-object', f'filter-dump,id=f0,netdev=p0,file={dump}',
             '-netdev', f'dgram,id=inj,local.type=inet,local.host=127.0.0.1,'
                        f'local.port={qport},remote.type=inet,remote.host=127.0.0.1,'
                        f'remote.port={tport}',
             '-netdev', 'hubport,id=p2,hubid=0,netdev=inj']
    w = World.single(qemu_binary, 2, dev_opts=[f'pcap={pa}', f'pcap={pb}'],
                     extra_args=extra, name='pcap')
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024, cq_log=6)
        ud_pair = (h.create_ud(a), h.create_ud(b))
        run_everything(conn, ud_pair, a, b, w)
        # a plain Ethernet frame (broadcast) from the third hub port
        plain = b'\xff' * 6 + bytes.fromhex('020000000099') + \
            struct.pack('>H', PLAIN_TYPE) + PLAIN_PAYLOAD
        inj.sendto(plain, ('127.0.0.1', qport))
        w.wait(lambda: any(f == plain for _, f in read_pcap(pb)), 10,
               'the plain Ethernet frame in b.pcap')
        # nothing is buffered in QEMU: the files are complete while it runs
        running = (read_pcap(pa), read_pcap(pb))
        t_end = w.qemus[0].clock()
    finally:
        w.close()
        inj.close()
    fa, fb = read_pcap(pa), read_pcap(pb)
    assert (fa, fb) == running, 'frames written after the traffic or lost at exit'

    # who sent what: a's file = a's frames + what a received (from b and the injector)
    mac_a = bytes.fromhex(MAC_A.replace(':', ''))
    a_tx = [(t, f) for t, f in fa if f[6:12] == mac_a]
    a_rx = [(t, f) for t, f in fa if f[6:12] != mac_a]
    b_tx = [(t, f) for t, f in fb if f[6:12] != mac_a and f != plain]
    b_rx = [(t, f) for t, f in fb if f[6:12] == mac_a or f == plain]
    assert len(a_tx) >= 20 and len(b_tx) >= 15
    assert b_rx == a_tx + [(t, f) for t, f in b_rx if f == plain], \
        "b did not receive exactly what a sent"
    assert [f for _, f in a_rx if f != plain] == [f for _, f in b_tx]
    assert plain in [f for _, f in a_rx] and plain in [f for _, f in b_rx]
    # virtual-clock timestamps: in order, within the run
    for frames in (fa, fb):
        ts = [t for t, _ in frames]
        assert ts == sorted(ts) and ts[-1] <= t_end

    # QEMU's filter-dump on a's netdev: the same frames, in the same order
    # (µs timestamps plus the wall-clock start, so only the bytes compare)
    assert [f for _, f in read_pcap(dump)] == [f for _, f in fa]

    # tshark dissects every RoCEv2 frame of both files; ICRCs are valid
    seen = set()
    for path, frames in ((pa, fa), (pb, fb)):
        rows = tshark(path)
        assert len(rows) == len(frames)
        for row, (_, f) in zip(rows, frames):
            if not is_roce(f):
                assert f == plain and int(row['eth.type'], 16) == PLAIN_TYPE, row
                continue
            op = int(row['infiniband.bth.opcode'], 0)
            bth = 14 + (20 if f[12:14] == b'\x08\x00' else 40) + 8
            assert op == f[bth], (row, f[bth])
            assert int(row['infiniband.bth.destqp'], 0) == \
                int.from_bytes(f[bth + 5:bth + 8], 'big')
            assert int(row['infiniband.bth.psn'], 0) == \
                int.from_bytes(f[bth + 9:bth + 12], 'big') & 0xffffff
            crc = int(row['infiniband.invariant.crc'], 0)
            assert crc.to_bytes(4, 'big') == ref_icrc(f), \
                f'frame {row["frame.number"]} of {path.name}: bad ICRC'
            if op in (0x64, 0x65):
                assert int(row['infiniband.deth.q_key'], 0) == 0x11111111
            seen.add(op)
    assert EXPECTED_OPS <= seen, sorted(hex(o) for o in EXPECTED_OPS - seen)


def test_pcap_file_that_cannot_be_created(qemu_binary, tmp_path):  # noqa: F811
    bad = tmp_path / 'no-such-dir' / 'x.pcap'
    rc, out = try_start(qemu_binary, ['-device', f'qrnic,pcap={bad}'])
    assert rc not in (None, 0), out
    assert f"qrnic: pcap: Could not create '{bad}'" in out and 'No such file' in out, out


def test_pcap_survives_reset_and_stays_valid(qemu_binary, tmp_path):  # noqa: F811
    """A device reset neither truncates nor ends the capture; the frames of
    the next connection follow those before it."""
    p = tmp_path / 'r.pcap'
    w = World.single(qemu_binary, 2, dev_opts=[f'pcap={p}', ''], name='pcap-reset')
    try:
        for _ in range(2):
            scenarios.healthy(w, *w.devs, n=3000)
            n = len(read_pcap(p))
            assert n >= 2
            w.reset_devices()
            assert len(read_pcap(p)) == n
        w.qemus[0].qmp('system_reset')
    finally:
        w.close()
    frames = read_pcap(p)
    assert len(frames) == n and all(is_roce(f) for _, f in frames)
    assert [ref_icrc(f) for _, f in frames] == [wire_icrc(f) for _, f in frames]


def test_pcap_times_are_the_virtual_clock(qemu_binary, tmp_path):  # noqa: F811
    """profile=teach: a frame is stamped when the device hands it to the
    netdev (its modelled departure plus the cable) and the peer's copy at the
    same virtual time; the peer's qrnic_event `rx` of it, and the timestamps
    of QEMU's trace, are on the same clock."""
    pa, pb, log = tmp_path / 'a.pcap', tmp_path / 'b.pcap', tmp_path / 'ev.log'
    w = World.single(qemu_binary, 2, dev_opts=[f'profile=teach,pcap={pa}',
                                               f'profile=teach,pcap={pb}'],
                     fixed_step_ns=1000, name='pcap-teach',
                     extra_args=['-trace', f'qrnic_event,file={log}'])
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024, cq_log=6)
        la, rb = a.reg_mr(conn.pda, 8192), b.reg_mr(conn.pdb, 8192)
        t0 = w.qemus[0].clock()
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 1024)], remote=(rb, 0), wr_id=9)
        scenarios.expect_success(scenarios.one_cqe(conn.cqa), 'RDMA_WRITE', 9, conn.qa.qpn)
    finally:
        w.close()
    fa, fb = read_pcap(pa), read_pcap(pb)
    assert [f for _, f in fa] == [f for _, f in fb]          # WRITE_ONLY, then the ACK
    assert [f[14 + 20 + 8] for _, f in fa] == [0x0a, 0x11]
    assert [t for t, _ in fa] == [t for t, _ in fb]
    (t_data, _), (t_ack, _) = fa
    # teach: the WQE and payload reads (4 us each at least) and the cable (5 us)
    assert t_data - t0 >= 2 * 4000 + 5000 and t_ack - t_data >= 5000
    rx = [int(m.group(1)) for m in re.finditer(r'qrnic_event dev \d+ rx t=(\d+) ', log.read_text())]
    assert rx == [t_data, t_ack], (rx, t_data, t_ack)


def test_pcap_loopback_frames(qemu_binary, tmp_path):  # noqa: F811
    """Two QPs of one device (local loopback): every frame is in the
    device's capture with its own MAC as source and destination and a valid
    ICRC, and none reached the netdev (QEMU's filter-dump on it is empty of
    RoCEv2) or the other device."""
    pa, dump = tmp_path / 'a.pcap', tmp_path / 'dump.pcap'
    w = World.single(qemu_binary, 2, dev_opts=[f'pcap={pa}', ''],
                     extra_args=['-object', f'filter-dump,id=f0,netdev=p0,file={dump}'],
                     name='pcap-lb')
    try:
        a, b = w.devs
        conn = h.connect_rc(a, a, mtu=1024, cq_log=6)
        scenarios.exercise_rc(conn, seed=5)
        sa, sb = a.query_stats(), b.query_stats()
    finally:
        w.close()
    frames = [f for _, f in read_pcap(pa) if is_roce(f)]
    mac_a = bytes.fromhex(MAC_A.replace(':', ''))
    assert len(frames) >= 20
    assert all(f[0:6] == mac_a and f[6:12] == mac_a for f in frames)
    assert sa['loopback_frames'] == len(frames)
    assert sa['rx_packets'] == sa['tx_packets'] == len(frames)
    assert sb['rx_packets'] == 0
    assert not [f for _, f in read_pcap(dump) if is_roce(f)]
    rows = [r for r in tshark(pa) if r.get('infiniband.bth.opcode')]
    assert len(rows) == len(frames)
    for row, f in zip(rows, frames):
        assert int(row['infiniband.invariant.crc'], 0).to_bytes(4, 'big') == ref_icrc(f)
