# SPDX-License-Identifier: GPL-2.0-or-later
"""802.1Qbb PFC frames (model/pfc.c, spec 12.15, docs/congestion.md).

Device a runs two RC connections to b under cx5-100g (100 Gb/s): one with
traffic class DSCP 0 (priority 0), one with DSCP 26 (priority 3, DSCP >> 3).
A PFC frame injected into a pauses the priorities it names for time x 512
bit times at 100 Gb/s (5.12 ns per quantum); the other priority goes on;
time 0 (XON) resumes at once.  The frames on the wire, their times and the
bytes written in b's memory are checked.  A switch's PFC frames are decoded
by tshark as PFC."""
import json
import os
import struct
import subprocess

import pytest

from test_model_rxbuf_pfc import tshark_pfc  # one tshark PFC decoder (a field superset)
import qrnic_harness as q

QUANTUM_NS = 512 / 100e9 * 1e9       # 5.12 ns at the cx5-100g port's 100 Gb/s
SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')


def pfc_frame(enable, times, smac=b'\x02\x5c\x00\x00\x00\x09', opcode=0x0101,
              dst=b'\x01\x80\xc2\x00\x00\x01', pad=True):
    f = dst + smac + b'\x88\x08' + struct.pack('>HH', opcode, enable)
    f += b''.join(struct.pack('>H', times.get(p, 0)) for p in range(8))
    return f + bytes(60 - len(f)) if pad else f


def rc_pair(a, b, tclass):
    """An RC connection a -> b whose a side sends with traffic class tclass."""
    sides = []
    for dev in (a, b):
        pd = dev.alloc_pd()
        cq = dev.create_cq(10)
        sides.append((dev, pd, cq, dev.create_qp(pd, cq, cq, 'RC')))
    (_, pda, cqa, qa), (_, pdb, cqb, qb) = sides
    for me, peer, dev, tc in ((qa, qb, b, tclass), (qb, qa, a, 0)):
        me.to_init(q.ACCESS_REMOTE)
        gid, nt = dev.gids[0]
        me.modify('RTR', av=q.make_av(gid, dev.mac, nt, traffic_class=tc), path_mtu=q.MTU[1024],
                  dest_qpn=peer.qpn, rq_psn=0, max_dest_rd_atomic=4, min_rnr_timer=1)
    for me in (qa, qb):
        me.to_rts(sq_psn=0)
    return qa, pda, cqa, qb, pdb


@pytest.fixture
def two():
    w = q.World(2, framelog=1 << 16)
    a, b = w.devs
    for d in w.devs:
        d.set_timing('cx5-100g')
    c0 = rc_pair(a, b, 0)            # priority 0
    c3 = rc_pair(a, b, 26 << 2)      # priority 3
    yield w, a, b, c0, c3
    w.close()


def post_write(w, a, b, conn, rng, size=16384):
    qa, pda, cqa, qb, pdb = conn
    src, dst = a.reg_mr(pda, size), b.reg_mr(pdb, size)
    data = bytes(rng.getrandbits(8) for _ in range(size))
    src.write(0, data)
    qa.post_send('RDMA_WRITE', [(src, 0, size)], remote=(dst, 0), wr_id=7)
    return qa, dst, data


def data_frames(w, qa):
    return [f for f in w.frames(roce_only=True) if f.src == 0 and f.dqpn is not None
            and f.opname and 'WRITE' in f.opname]


def sent_times(w, dqpn):
    return [f.t for f in w.frames(roce_only=True)
            if f.src == 0 and f.opname and 'WRITE' in f.opname and f.dqpn == dqpn]


def test_pause_holds_only_its_priority_for_its_time(two, rng):
    w, a, b, c0, c3 = two
    t0 = w.now
    assert a.inject(pfc_frame(0x01, {0: 20000})) >= 0       # priority 0 for 102.4 us
    w.run(0)
    assert a.stat('pfc_received') == 1 and a.stat('pfc_malformed') == 0
    qa0, dst0, d0 = post_write(w, a, b, c0, rng)
    qa3, dst3, d3 = post_write(w, a, b, c3, rng)
    w.run()
    t_p0 = sent_times(w, c0[3].qpn)
    t_p3 = sent_times(w, c3[3].qpn)
    assert len(t_p0) == len(t_p3) == 16
    until = t0 + 20000 * QUANTUM_NS
    assert min(t_p0) >= until                 # held for the whole pause
    assert min(t_p0) < until + 5000           # and sent right after it
    assert max(t_p3) < t0 + 20000             # priority 3 went on
    assert a.stat('pfc_deferred_frames') >= 1
    assert dst0.read(0, len(d0)) == d0 and dst3.read(0, len(d3)) == d3
    assert t_p0 == sorted(t_p0)               # in order
    assert b.stat('seq_naks_sent') == 0


def test_xon_resumes_at_once(two, rng):
    w, a, b, c0, c3 = two
    t0 = w.now
    a.inject(pfc_frame(0x09, {0: 0xffff, 3: 0xffff}))      # 335 us on both
    w.run(0)
    qa0, dst0, d0 = post_write(w, a, b, c0, rng)
    w.advance(20000)
    assert sent_times(w, c0[3].qpn) == []
    a.inject(pfc_frame(0x01, {0: 0}))                      # XON for priority 0 only
    t_xon = w.now
    qa3, dst3, d3 = post_write(w, a, b, c3, rng)
    w.run(0)
    w.advance(50000)
    t_p0 = sent_times(w, c0[3].qpn)
    assert len(t_p0) == 16 and t_xon <= min(t_p0) < t_xon + 5000
    assert sent_times(w, c3[3].qpn) == []               # priority 3 still paused
    w.run()
    assert min(sent_times(w, c3[3].qpn)) >= t0 + 0xffff * QUANTUM_NS
    assert dst0.read(0, len(d0)) == d0 and dst3.read(0, len(d3)) == d3
    assert a.stat('pfc_received') == 2


def test_8023x_pause_holds_every_priority(two, rng):
    w, a, b, c0, c3 = two
    t0 = w.now
    f = pfc_frame(0, {}, opcode=0x0001)
    f = f[:16] + struct.pack('>H', 10000) + f[18:]          # pause_time 10000 quanta
    a.inject(f)
    post_write(w, a, b, c0, rng)
    post_write(w, a, b, c3, rng)
    w.run()
    for conn in (c0, c3):
        assert min(sent_times(w, conn[3].qpn)) >= t0 + 10000 * QUANTUM_NS
    assert a.stat('pfc_received') == 1


def test_malformed_pause_frames_are_counted_and_ignored(two, rng):
    w, a, b, c0, c3 = two
    bad = [pfc_frame(1, {0: 0xffff}, pad=False),              # 34 bytes: not padded to 60
           pfc_frame(1, {0: 0xffff}, opcode=0x0202),          # unknown opcode
           pfc_frame(1, {0: 0xffff}, dst=b'\x01\x80\xc2\x00\x00\x02'),   # not the PFC address
           b'\x01\x80\xc2\x00\x00\x01' + bytes(6) + b'\x88\x08']      # headers only
    for f in bad:
        a.inject(f)
    for n in range(200):                                      # random bytes, EtherType 0x8808
        body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 80)))
        a.inject(b'\x01\x80\xc2\x00\x00\x01' + bytes(6) + b'\x88\x08' + body)
    w.run(0)
    assert a.stat('pfc_malformed') >= len(bad)
    t0 = w.now
    # whatever the random frames did, an XON for every priority clears it
    a.inject(pfc_frame(0xff, {}))
    qa0, dst0, d0 = post_write(w, a, b, c0, rng)
    w.run()
    assert min(sent_times(w, c0[3].qpn)) < t0 + 5000          # not paused
    assert dst0.read(0, len(d0)) == d0
    a.check()


def test_pause_state_survives_migration(two, rng):
    w, a, b, c0, c3 = two
    t0 = w.now
    a.inject(pfc_frame(0x01, {0: 20000}))
    w.run(0)
    post_write(w, a, b, c0, rng)
    w.advance(2000)                 # frames deferred behind the pause
    a.snapshot()
    w.run()
    assert min(sent_times(w, c0[3].qpn)) >= t0 + 20000 * QUANTUM_NS


def test_switch_pfc_frames_decode_in_tshark(tmp_path):
    pcap = tmp_path / 'pfc.pcap'
    cmd = [SIM, '--json', '--deterministic', '--incast', '--hosts', '5', '--op', 'write',
           '--size', '65536', '--depth', '8', '--duration', '300us', '--count', '0',
           '--profile', 'cx5-100g', '--rate', '100G', '--overhead', '24', '--latency', '1us',
           '--buffer', '1800K', '--device', 'cc_algo=0', '--pfc', '--xoff', '200K',
           '--xon', '100K', '--pcap', str(pcap)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    i = json.loads(r.stdout)['incast']
    assert i['drops'] == 0 and i['pfc_pauses'] > 0
    assert i['pfc_frames'] == i['pfc_received'] > 0
    rows = tshark_pfc(pcap)
    assert len(rows) == i['pfc_frames']
    xoff = [x for x in rows if int(x['macc.cbfc.pause_time.c0'], 0) == 0xffff]
    xon = [x for x in rows if int(x['macc.cbfc.pause_time.c0'], 0) == 0]
    assert len(xoff) >= i['pfc_pauses'] and xon
    for x in rows:
        assert x['eth.dst'] == '01:80:c2:00:00:01' and int(x['eth.type'], 0) == 0x8808
        assert int(x['macc.opcode'], 0) == 0x0101 and int(x['macc.cbfc.enbv'], 0) == 0x01
