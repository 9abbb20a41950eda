# SPDX-License-Identifier: GPL-2.0-or-later
"""Priority queues at the simulator's switch ports (tests/harness/harness.c,
hx_switch_cfg.prio_queues, qrnic-sim --prio-queues; docs/congestion.md).

One queue per (output port, priority), strict priority between them, and a
host's 802.1Qbb frame pauses only the queues of the priorities it names.
Hosts 1 and 2 send RDMA WRITEs to host 0 through one switch, host 1 with
DSCP 0 (priority 0), host 2 with DSCP 24 (priority 3)."""
import json
import os
import random
import struct
import subprocess

import pytest

import qrnic_harness as q
from test_model_pfc import rc_pair

SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
QUANTUM_NS = 512 / 100e9 * 1e9


def pfc_frame(src_mac, enable, times):
    f = b'\x01\x80\xc2\x00\x00\x01' + bytes(src_mac) + b'\x88\x08' + \
        struct.pack('>HH', 0x0101, enable)
    f += b''.join(struct.pack('>H', times.get(p, 0)) for p in range(8))
    return f + bytes(60 - len(f))


@pytest.fixture
def star():
    w = q.World(3, cable=False, framelog=1 << 16)
    for d in w.devs:
        d.set_timing('cx5-100g')
    w.switch_attach(rate_bps=100 * 10**9, overhead=24, latency_ns=1000, buffer=1 << 20,
                    prio_queues=1)
    h0, h1, h2 = w.devs
    c0 = rc_pair(h1, h0, 0)            # priority 0
    c3 = rc_pair(h2, h0, 24 << 2)      # priority 3
    yield w, h0, c0, c3
    w.close()


def write(w, conn, size, seed):
    qa, pda, cqa, qb, pdb = conn
    rng = random.Random(seed)
    src, dst = qa.dev.reg_mr(pda, size), qb.dev.reg_mr(pdb, size)
    data = bytes(rng.getrandbits(8) for _ in range(size))
    src.write(0, data)
    qa.post_send('RDMA_WRITE', [(src, 0, size)], remote=(dst, 0), wr_id=1)
    return qa, cqa, dst, data


def done_at(w, qa, cqa, limit=100000):
    """run until qa's WRITE completes (at most limit steps of 500 ns); the time it did"""
    for _ in range(limit):
        c = cqa.poll(1)
        if c:
            assert c[0]['status'] == 0, c[0]
            return w.now
        w.run(ns=500)
    raise AssertionError('no completion')


def test_a_paused_priority_does_not_block_the_other(star):
    w, h0, c0, c3 = star
    pause = 0xffff                     # 335.5 us at 100 Gb/s
    t0 = w.now
    w.wire_send(0, pfc_frame(h0.mac, 0x08, {3: pause}))      # host 0: XOFF priority 3
    w.run(ns=3000)                 # it crossed the cable
    qa3, cq3, dst3, d3 = write(w, c3, 65536, 3)
    qa0, cq0, dst0, d0 = write(w, c0, 65536, 0)
    t_p0 = done_at(w, qa0, cq0)
    # priority 0 went through its queue while priority 3 waits in its own
    assert t_p0 - t0 < 20000
    assert dst0.read(0, len(d0)) == d0
    q3 = w.switch_queue(0, 3)
    assert q3['q_now'] > 0 and w.switch_queue(0, 0)['q_now'] == 0
    assert cq3.poll(1) == []
    t_p3 = done_at(w, qa3, cq3)
    assert t_p3 >= t0 + pause * QUANTUM_NS
    assert dst3.read(0, len(d3)) == d3
    assert w.switch_queue(0, 3)['paused_ns'] >= pause * QUANTUM_NS - 3000
    assert w.switch_queue(0, 0)['paused_ns'] == 0


def test_xon_resumes_the_queue(star):
    w, h0, c0, c3 = star
    t0 = w.now
    w.wire_send(0, pfc_frame(h0.mac, 0x08, {3: 0xffff}))
    w.run(ns=3000)
    qa3, cq3, dst3, d3 = write(w, c3, 65536, 4)
    w.run(ns=20000)
    assert cq3.poll(1) == [] and w.switch_queue(0, 3)['q_now'] > 0
    t_xon = w.now
    w.wire_send(0, pfc_frame(h0.mac, 0x08, {3: 0}))           # XON
    t3 = done_at(w, qa3, cq3)
    assert t_xon < t3 < t_xon + 30000 < t0 + 0xffff * QUANTUM_NS
    assert dst3.read(0, len(d3)) == d3


def test_strict_priority_serves_the_higher_queue_first(star):
    """Both WRITEs at once into one port: priority 3 finishes first although
    priority 0's frames are there as early."""
    w, h0, c0, c3 = star
    qa0, cq0, dst0, d0 = write(w, c0, 1 << 20, 5)
    qa3, cq3, dst3, d3 = write(w, c3, 1 << 20, 6)
    t3 = done_at(w, qa3, cq3)
    assert cq0.poll(1) == []
    t0 = done_at(w, qa0, cq0)
    assert t0 > t3
    assert dst0.read(0, len(d0)) == d0 and dst3.read(0, len(d3)) == d3
    # priority 0 queued up behind; priority 3's queue stayed short
    assert w.switch_queue(0, 0)['q_max'] > 4 * w.switch_queue(0, 3)['q_max']


def sim(*args):
    cmd = [SIM, '--json', '--deterministic', '--incast', '--hosts', '3', '--op', 'write',
           '--size', '64K', '--depth', '8', '--count', '100', '--profile', 'cx5-100g',
           '--rate', '100G', '--overhead', '24', '--latency', '1us', '--buffer', '1800K',
           '--dscp', '0,24', '--pfc', '--xoff', '200K', '--xon', '100K', '--ack-timeout', '10',
           '--device', 'cc_algo=0,rx_buffer=262144,rx_drain_mbps=50000,'
           'rx_pfc_xoff=65536,rx_pfc_xon=32768', *args]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_receiver_pfc_through_the_switch_is_lossless():
    """A slow receiver's pause frames pause the switch's queues (per
    priority), whose ingress PFC then pauses the senders: no loss anywhere.
    Without priority queues the switch ignores them and the receiver drops."""
    on, off = sim('--prio-queues'), sim()
    for o in (on, off):
        assert o['ok'] and o['messages'] == 200 and o['verified']['errors'] == 0
    rx_on, rx_off = on['rx_buffer'][0], off['rx_buffer'][0]
    assert rx_off['drops'] > 0 and off['stats']['retransmitted_packets'] > 0
    assert rx_on['drops'] == 0 and on['stats'].get('retransmitted_packets', 0) == 0
    assert on['incast']['drops'] == 0 and rx_on['pfc_sent'] > 0
    assert rx_on['prio_max'][0] > 0 and rx_on['prio_max'][3] > 0
    qs = {(x['port'], x['prio']): x for x in on['incast']['queues']}
    assert qs[(0, 0)]['paused_ns'] > 0 and qs[(0, 3)]['paused_ns'] > 0
    assert on['incast']['pfc_frames'] > 0          # the switch paused the senders
    assert on['sim_ns'] < off['sim_ns']


def test_prio_queues_refused_where_not_modelled():
    # with --shared-buffer and --leaves they run (tests/test_model_switch_prio_shared.py)
    for extra, word in (([], '--prio-queues is for --incast'),
                        (['--incast', '--pfc-prios', '3'], 'needs --pfc'),
                        (['--incast', '--pfc', '--pfc-prios', '3,9'], 'not a priority')):
        r = subprocess.run([SIM, '--hosts', '4', '--count', '1', '--prio-queues', *extra],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and word in r.stderr, r.stderr
