# SPDX-License-Identifier: GPL-2.0-or-later
"""The device's receive buffer and the 802.1Qbb frames it sends (model/pfc.c,
spec 12.15, docs/congestion.md).

Two hosts cabled back to back under cx5-100g (100 Gb/s, 1 us cable).  The
receiver's pipeline takes frame bytes at rx_drain_mbps (a slow receiver), so
a sender at line rate fills its rx_buffer.  Without PFC the buffer drops and
RC retransmits; with rx_pfc_xoff/xon the receiver sends real PFC frames
(checked decoded by tshark from the pcap), the sender defers that priority,
and nothing is lost."""
import json
import os
import subprocess

import pytest

from tshark_fields import tshark_fields
import qrnic_harness as q

SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
RATE = 100e9
LAT_NS = 1000
MTU_FRAME = 4096 + 100          # a full 4 KiB data frame with its headers, rounded up
BASE = ['--op', 'write', '--size', '64K', '--depth', '8', '--profile', 'cx5-100g',
        '--rate', '100G', '--overhead', '24', '--latency', '1us', '--ack-timeout', '8']
RX_MAC = '02:00:00:00:00:02'    # host 1, the receiver


def sim(*args, device, count=200, pcap=None):
    cmd = [SIM, '--json', '--deterministic', *BASE, '--count', str(count), '--device', device,
           *args]
    if pcap:
        cmd += ['--pcap', str(pcap)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def tshark_pfc(pcap):
    fields = ['frame.time_relative', 'eth.src', 'eth.dst', 'eth.type', 'macc.opcode',
              'macc.cbfc.enbv'] + [f'macc.cbfc.pause_time.c{p}' for p in range(8)]
    return tshark_fields(pcap, fields, display_filter='macc')


def ok(o, n):
    """every message completed and its data checked"""
    return o['ok'] and o['messages'] == n and o['lost'] == 0 and \
        o['verified']['messages'] == n and o['verified']['errors'] == 0


def rxb(out, host=1):
    return next(b for b in out['rx_buffer'] if b['host'] == host)


def pfc_dev(xoff, xon, buf=262144, drain=50000):
    return (f'rx_buffer={buf},rx_drain_mbps={drain},rx_pfc_xoff={xoff},rx_pfc_xon={xon}')


def test_no_loss_with_pfc_and_loss_without():
    off = sim(device='rx_buffer=262144,rx_drain_mbps=50000')
    on = sim(device=pfc_dev(131072, 65536))
    for o in (off, on):
        assert ok(o, 200)
    # without PFC the full buffer drops and RC retransmits
    assert rxb(off)['drops'] > 0 and off['stats']['rx_buffer_drops'] == rxb(off)['drops']
    assert off['stats'].get('retransmitted_packets', 0) > 0
    assert off['stats'].get('pfc_sent', 0) == 0
    assert rxb(off)['max_used'] > 262144 - MTU_FRAME
    # with PFC: nothing dropped, nothing sent twice
    assert rxb(on)['drops'] == 0 and on['stats'].get('rx_buffer_drops', 0) == 0
    assert on['stats'].get('retransmitted_packets', 0) == 0
    assert on['stats']['pfc_sent'] == on['stats']['pfc_received'] > 0
    assert on['stats']['pfc_deferred_frames'] > 0
    # the drain rate is the bottleneck: PFC keeps it busy, loss does not
    assert on['bandwidth_bps'] > off['bandwidth_bps']


def test_pfc_frames_on_the_wire_decode_in_tshark(tmp_path):
    pcap = tmp_path / 'rxb.pcap'
    o = sim(device=pfc_dev(131072, 65536), pcap=pcap)
    rows = tshark_pfc(pcap)
    assert len(rows) == o['stats']['pfc_sent'] > 0
    for x in rows:
        assert x['eth.src'] == RX_MAC and x['eth.dst'] == '01:80:c2:00:00:01'
        assert int(x['eth.type'], 0) == 0x8808 and int(x['macc.opcode'], 0) == 0x0101
        assert int(x['macc.cbfc.enbv'], 0) == 0x01            # priority 0 (DSCP 0) only
        assert all(int(x[f'macc.cbfc.pause_time.c{p}'], 0) == 0 for p in range(1, 8))
    times = [int(x['macc.cbfc.pause_time.c0'], 0) for x in rows]
    assert set(times) == {0xffff, 0}
    # each XOFF is followed by its XON (no refresh needed at this drain rate)
    assert times == [0xffff, 0] * (len(times) // 2)


def test_thresholds_and_hysteresis(tmp_path):
    """The buffer reaches xoff but no more than the frames in flight during
    the XOFF's round trip; each XOFF..XON lasts at least the time the
    pipeline needs to drain xoff - xon; a wider hysteresis pauses less often."""
    drain = 50000
    headroom = 2 * LAT_NS * 1e-9 * RATE / 8 + 2 * MTU_FRAME
    runs = {}
    for name, xoff, xon in (('narrow', 131072, 122880), ('wide', 131072, 16384)):
        pcap = tmp_path / f'{name}.pcap'
        o = sim(device=pfc_dev(xoff, xon, drain=drain), pcap=pcap)
        b = rxb(o)
        assert b['drops'] == 0 and xoff <= b['prio_max'][0] <= xoff + headroom, b
        assert b['prio_max'][1:] == [0] * 7 and b['used'] == 0
        rows = tshark_pfc(pcap)
        t = [(float(x['frame.time_relative']), int(x['macc.cbfc.pause_time.c0'], 0))
             for x in rows]
        assert [v for _, v in t] == [0xffff, 0] * (len(t) // 2)
        min_ns = (xoff - xon) * 8 / (drain * 1e6) * 1e9
        for (t_off, _), (t_on, _) in zip(t[0::2], t[1::2]):
            assert (t_on - t_off) * 1e9 >= min_ns - 1
        runs[name] = len(t) // 2
    assert runs['narrow'] > 2 * runs['wide'] > 0, runs


def test_no_pause_frame_below_xoff():
    """A receiver that keeps up (no rx_drain_mbps: the per-packet cost only)
    never reaches xoff: no pause frame, no drop."""
    o = sim(device='rx_buffer=262144,rx_pfc_xoff=131072,rx_pfc_xon=65536')
    b = rxb(o)
    assert ok(o, 200) and b['drops'] == 0 and 0 < b['max_used'] < 131072
    assert o['stats'].get('pfc_sent', 0) == 0 and o['stats'].get('pfc_received', 0) == 0


def test_xoff_is_sent_again_while_the_buffer_stays_above_xon(tmp_path):
    """At 1 Gb/s the buffer takes longer than half a pause (0xffff quanta =
    335.5 us at 100 Gb/s) to drain to xon: the XOFF is sent again every
    167.8 us until the XON, and nothing is lost."""
    pcap = tmp_path / 'slow.pcap'
    o = sim('--ack-timeout', '14', device=pfc_dev(65536, 8192, drain=1000), count=20, pcap=pcap)
    assert ok(o, 20) and rxb(o)['drops'] == 0
    assert o['stats'].get('retransmitted_packets', 0) == 0
    t = [(float(x['frame.time_relative']) * 1e9, int(x['macc.cbfc.pause_time.c0'], 0))
         for x in tshark_pfc(pcap)]
    half = 0xffff * 512 / RATE * 1e9 / 2
    refreshes = 0
    for (t0, v0), (t1, v1) in zip(t, t[1:]):
        if v0 == 0xffff and v1 == 0xffff:
            refreshes += 1
            assert t1 - t0 == pytest.approx(half, abs=2)
    assert refreshes > 0 and t[-1][1] == 0


def test_priority_from_dscp_pauses_only_that_priority():
    """The sender's WRITEs carry DSCP 26 (priority 3): the receiver's XOFFs
    name priority 3 alone, the sender defers only those frames, and a
    priority 0 connection finishes its WRITE meanwhile."""
    from test_model_pfc import post_write, rc_pair
    import random
    rng = random.Random(5)
    w = q.World(2, cfg=['', pfc_dev(32768, 16384, buf=131072, drain=20000)], framelog=1 << 16)
    try:
        a, b = w.devs
        for d in w.devs:
            d.set_timing('cx5-100g')
        c0 = rc_pair(a, b, 0)
        c3 = rc_pair(a, b, 26 << 2)
        qa3, dst3, d3 = post_write(w, a, b, c3, rng, size=512 << 10)
        qa0, dst0, d0 = post_write(w, a, b, c0, rng, size=16384)
        w.run()
        assert dst3.read(0, len(d3)) == d3 and dst0.read(0, len(d0)) == d0
        info = b.rxbuf_info()
        assert info['prio_max'][3] >= 32768 and info['prio_max'][0] < 32768, info
        assert info['xoff'] == 0 and info['used'] == 0
        assert b.stat('rx_buffer_drops') == 0 and b.stat('pfc_sent') > 0
        assert a.stat('pfc_received') == b.stat('pfc_sent') and a.stat('pfc_deferred_frames') > 0
        pfc = [f.data for f in w.frames() if f.src == 1 and len(f.data) >= 60
               and f.data[12:14] == b'\x88\x08']
        assert len(pfc) == b.stat('pfc_sent')
        for f in pfc:
            assert f[:6] == b'\x01\x80\xc2\x00\x00\x01' and f[6:12] == bytes(b.mac)
            assert f[14:16] == b'\x01\x01' and f[16:18] == b'\x00\x08'
            times = [int.from_bytes(f[18 + 2 * p:20 + 2 * p], 'big') for p in range(8)]
            assert times[3] in (0xffff, 0) and times[:3] + times[4:] == [0] * 7
        assert a.rxbuf_info() is None          # off on a: nothing to report
        a.check()
        b.check()
    finally:
        w.close()


def test_migration_keeps_the_buffer():
    """Every device saved, made anew and loaded every few run steps (the
    receive buffer's frames, times and XOFF state in the stream) gives the
    same bytes of output."""
    for dev in (pfc_dev(131072, 65536), 'rx_buffer=262144,rx_drain_mbps=50000'):
        ref = sim(device=dev, count=30)
        assert ref['stats'].get('pfc_sent', 0) or ref['stats'].get('rx_buffer_drops', 0)
        for n in (5, 9):
            m = sim('--migrate-every', str(n), device=dev, count=30)
            assert m.pop('migrations') > 0
            assert m == ref


@pytest.mark.parametrize('dev,msg', [
    ('rx_buffer=1000,rx_pfc_xoff=2000', 'rx_pfc_xoff must be in 0..1000'),
    ('rx_buffer=10000,rx_pfc_xoff=2000,rx_pfc_xon=2000', 'rx_pfc_xon must be in 0..1999'),
    ('rx_buffer=99999999', 'rx_buffer must be in'),
])
def test_bad_thresholds_are_refused(dev, msg):
    r = subprocess.run([SIM, '--count', '1', '--device', dev], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
