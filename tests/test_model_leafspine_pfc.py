# SPDX-License-Identifier: GPL-2.0-or-later
"""PFC and the shared buffer across the leaf-spine fabric (qrnic-sim
--incast --leaves L --spines S --pfc / --shared-buffer, docs/congestion.md).
Every leaf and every spine is one switch: its own buffer and its own
ingress counts per (port, priority).  Past xoff an ingress port sends an
802.1Qbb XOFF to whatever is at the other end of its link: a host, or the
port of the switch at the other end of a fabric link, whose output queue
of that priority then holds its frames (lossless) until the XON.

Hosts 0..3 are on leaf 0, 4..7 on leaf 1; host 0 receives from all.  The
senders on leaf 1 cross a spine: the queue to host 0 on leaf 0 fills, leaf
0's port from the spine pauses the spine's queue down to leaf 0, the
spine's port from leaf 1 then fills and pauses leaf 1's uplink, whose
ingress from the hosts pauses the senders: congestion spreading."""
import json
import os
import struct
import subprocess

import pytest

import qrnic_harness as q
from test_model_pfc import rc_pair
from test_model_switch_prio import done_at, write as prio_write
from tshark_fields import tshark_fields

SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
BASE = ['--incast', '--hosts', '8', '--leaves', '2', '--spines', '2', '--op', 'write',
        '--size', '65536', '--depth', '8', '--duration', '1ms', '--count', '0',
        '--profile', 'cx5-100g', '--rate', '100G', '--overhead', '24', '--latency', '1us',
        '--verify', 'end', '--device', 'cc_algo=0']
PFC = ['--buffer', '1M', '--xoff', '64K', '--xon', '32K']
B = 1800 * 1024
FRAME = 4096 + 100            # a full frame with headers and --overhead


def sim(*args):
    cmd = [SIM, '--json', '--deterministic'] + BASE + [str(a) for a in args]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, f'{cmd}: {r.stdout[-2000:]} {r.stderr[-2000:]}'
    j = json.loads(r.stdout)
    assert j['ok'] and j['verified']['errors'] == 0
    return j


def links(i, up):
    return {(x['leaf'], x['spine']): x for x in i['fabric']['links'] if x['up'] == up}


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    pcap = tmp_path_factory.mktemp('lspfc') / 'fabric.pcap'
    return sim(*PFC), sim(*PFC, '--pfc', '--pcap', pcap), pcap


def test_cross_leaf_incast_with_pfc_is_lossless(runs):
    off, on, _ = runs
    assert off['incast']['drops'] > 0                 # the same run without PFC loses frames
    assert off['stats'].get('retransmitted_packets', 0) > 0
    i = on['incast']
    assert i['drops'] == 0 and all(x['drops'] == 0 for x in i['fabric']['links'])
    assert on['stats'].get('retransmitted_packets', 0) == 0
    assert i['pfc_pauses'] > 0 and i['pfc_frames'] == i['pfc_received']   # the senders paused
    assert all(f['bytes'] > 0 for f in i['flows'])
    assert i['sum_gbps'] > off['incast']['sum_gbps']


def test_pauses_cross_the_fabric_links(runs):
    _, on, _ = runs
    f = on['incast']['fabric']
    up, down = links(on['incast'], True), links(on['incast'], False)
    # leaf 0's port from a spine (the ports of up[0][s]) paused the spine's
    # queue down to leaf 0; the spine's port from leaf 1 (down[1][s])
    # paused leaf 1's uplink
    assert sum(up[(0, s)]['pauses'] for s in range(2)) > 0
    assert sum(down[(1, s)]['pauses'] for s in range(2)) > 0
    for (l, s), u in up.items():
        d = down[(l, s)]
        # every 802.1Qbb frame one end sent arrived at the other end of its link
        assert u['pfc_frames'] == d['pfc_rx'] and d['pfc_frames'] == u['pfc_rx']
        assert u['pfc_frames'] >= 2 * u['pauses']  # each XOFF has its XON (and refreshes)
        # the queue the other end paused stood still about as long as that
        # end's ingress was held (within the cable's latency per pause)
        assert abs(d['paused_ns'] - u['ingress_paused_ns']) <= 2000 * (u['pauses'] + 1)
        assert abs(u['paused_ns'] - d['ingress_paused_ns']) <= 2000 * (d['pauses'] + 1)
    paused_down = sum(down[(0, s)]['paused_ns'] for s in range(2))
    paused_up = sum(up[(1, s)]['paused_ns'] for s in range(2))
    assert paused_down > 0 and paused_up > 0
    assert f['pauses'] == sum(x['pauses'] for x in f['links']) > 0
    assert f['pfc_frames'] == f['pfc_rx'] == sum(x['pfc_frames'] for x in f['links'])


def test_fabric_pause_frames_decode_in_tshark(runs):
    _, on, pcap = runs
    f = on['incast']['fabric']
    fields = ['eth.src', 'eth.dst', 'eth.type', 'macc.opcode', 'macc.cbfc.enbv',
              'macc.cbfc.pause_time.c0']
    rows = tshark_fields(pcap, fields, display_filter='macc')
    # leaf ports: 02:5c:01:<leaf>:<spine>:00, spine ports: 02:5c:02:<spine>:<leaf>:00
    fab = [x for x in rows if x['eth.src'].startswith(('02:5c:01:', '02:5c:02:'))]
    hosts = [x for x in rows if x['eth.src'].startswith('02:5c:00:')]
    assert len(fab) == f['pfc_frames'] > 0
    assert len(hosts) == on['incast']['pfc_frames']
    for x in fab:
        assert x['eth.dst'] == '01:80:c2:00:00:01' and int(x['eth.type'], 0) == 0x8808
        assert int(x['macc.opcode'], 0) == 0x0101 and int(x['macc.cbfc.enbv'], 0) == 0x01
        assert int(x['macc.cbfc.pause_time.c0'], 0) in (0, 0xffff)
    up, down = links(on['incast'], True), links(on['incast'], False)
    for (l, s), u in up.items():
        assert sum(x['eth.src'] == f'02:5c:01:{l:02x}:{s:02x}:00' for x in fab) == u['pfc_frames']
        d = down[(l, s)]
        assert sum(x['eth.src'] == f'02:5c:02:{s:02x}:{l:02x}:00' for x in fab) == d['pfc_frames']
    xoff = [x for x in fab if int(x['macc.cbfc.pause_time.c0'], 0) == 0xffff]
    assert len(xoff) >= f['pauses'] > 0


def test_a_paused_uplink_delays_but_never_reorders(runs):
    _, on, _ = runs
    up = links(on['incast'], True)
    assert sum(up[(1, s)]['paused_ns'] for s in range(2)) > 0   # leaf 1's uplink stood still
    st = on['stats']
    # the frames it held went on in order: no receiver saw a PSN gap
    assert st.get('seq_naks_sent', 0) == 0 and st.get('duplicate_requests', 0) == 0
    assert st.get('retransmit_timeouts', 0) == 0
    # the senders behind it (hosts 4..7) all moved data
    assert all(f['bytes'] > 0 for f in on['incast']['flows'] if f['host'] >= 4)


@pytest.mark.parametrize('alpha', [1, 0.25])
def test_each_switch_has_its_own_shared_buffer(alpha):
    """Without PFC: a congested queue in each leaf (the queue to host 0 on
    leaf 0, leaf 1's uplink) settles at alpha x (B - its switch's bytes)
    = alpha B / (1 + alpha), each in its own switch's buffer (one buffer
    for both would hold each at alpha B / (1 + 2 alpha))."""
    j = sim('--shared-buffer', B, '--alpha', alpha)
    i = j['incast']
    bound = alpha * B / (1 + alpha)
    sw = i['fabric']['switches']
    assert [x.get('leaf', x.get('spine')) for x in sw] == [0, 1, 0, 1]
    (q0,) = [x for x in i['queues'] if x['port'] == 0 and x['prio'] == 0]
    upl = max(x['q_max'] for x in i['fabric']['links'] if x['up'] and x['leaf'] == 1)
    for qm in (q0['q_max'], upl):
        assert 0.95 * bound <= qm <= bound + FRAME
    assert q0['drops'] > 0 and sum(x['drops'] for x in i['fabric']['links']) > 0
    for x in sw:
        assert x['used'] == 0 and x['used_max'] <= B
    assert sw[0]['used_max'] >= q0['q_max'] and sw[1]['used_max'] >= upl
    assert i['shared']['used_max'] == max(x['used_max'] for x in sw)


def test_shared_buffer_with_pfc_across_leaves_is_lossless():
    j = sim('--shared-buffer', B, '--alpha', 0.125, '--pfc')
    i = j['incast']
    assert i['drops'] == 0 and i['pfc_pauses'] > 0 and i['fabric']['pauses'] > 0
    assert j['stats'].get('retransmitted_packets', 0) == 0
    assert all(0 < x['used_max'] < B for x in i['fabric']['switches'] if 'leaf' in x)


def test_bad_combinations_are_refused():
    for bad, word in ((['--pfc-prios', '3'], '--pfc'),
                      (['--shared-buffer', B, '--alpha', 0], 'alpha'),
                      (['--pfc', '--xoff', '10K', '--xon', '20K'], '--xon')):
        r = subprocess.run([SIM] + BASE + [str(a) for a in bad], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2 and word in r.stderr, r.stderr


# ---- per priority across the tiers, through the harness's C API ----------------------
def pfc_frame(src_mac, enable, times):
    f = b'\x01\x80\xc2\x00\x00\x01' + bytes(src_mac) + b'\x88\x08' + \
        struct.pack('>HH', 0x0101, enable)
    f += b''.join(struct.pack('>H', times.get(p, 0)) for p in range(8))
    return f + bytes(60 - len(f))


@pytest.fixture
def fabric():
    """Hosts 0, 1 on leaf 0, hosts 2, 3 on leaf 1, one spine; host 2 WRITEs
    to host 0 at priority 0, host 3 at priority 3 (DSCP 24): both cross
    leaf 1's uplink and the spine's downlink to leaf 0."""
    w = q.World(4, cable=False, framelog=1 << 16)
    for d in w.devs:
        d.set_timing('cx5-100g')
    w.switch_attach(rate_bps=100 * 10**9, overhead=24, latency_ns=1000, buffer=4 << 20,
                    pfc=1, xoff=64 << 10, xon=32 << 10, leaves=2, spines=1, hosts_per_leaf=2)
    h0, h1, h2, h3 = w.devs
    c0 = rc_pair(h2, h0, 0)
    c3 = rc_pair(h3, h0, 24 << 2)
    yield w, h0, c0, c3
    w.close()


def write(conn, size, seed):
    return prio_write(None, conn, size, seed)


def test_strict_priority_on_the_fabric_links(fabric):
    w, h0, c0, c3 = fabric
    qa0, cq0, dst0, d0 = write(c0, 1 << 20, 5)
    qa3, cq3, dst3, d3 = write(c3, 1 << 20, 6)
    t3 = done_at(w, qa3, cq3, limit=200000)
    assert cq0.poll(1) == []                     # priority 0 is still behind it
    t0 = done_at(w, qa0, cq0, limit=200000)
    assert t0 > t3
    assert dst0.read(0, len(d0)) == d0 and dst3.read(0, len(d3)) == d3
    # two 100 Gb/s senders into one 100 Gb/s uplink: priority 0 waited there
    u0, u3 = w.switch_fabric_queue(True, 1, 0, 0), w.switch_fabric_queue(True, 1, 0, 3)
    assert u0['frames'] > 0 and u3['frames'] > 0
    assert u0['q_max'] > 4 * u3['q_max']
    for d in w.devs:
        assert d.stat('seq_naks_sent') == 0


def test_a_host_pause_spreads_back_per_priority(fabric):
    """Host 0 pauses priority 3: its queue at leaf 0 fills, leaf 0's port
    from the spine pauses the spine's queue of priority 3, the spine's
    port from leaf 1 pauses leaf 1's uplink queue of priority 3, and leaf 1
    pauses host 3.  Priority 0 keeps flowing on the same links."""
    w, h0, c0, c3 = fabric
    w.wire_send(0, pfc_frame(h0.mac, 0x08, {3: 0xffff}))      # XOFF priority 3, 335 us
    w.run(ns=3000)
    qa3, cq3, dst3, d3 = write(c3, 1 << 20, 3)
    w.run(ns=60000)
    qa0, cq0, dst0, d0 = write(c0, 256 << 10, 4)
    t0 = done_at(w, qa0, cq0, limit=200000)
    assert cq3.poll(1) == [] and dst0.read(0, len(d0)) == d0
    down3, up3 = w.switch_fabric_queue(False, 0, 0, 3), w.switch_fabric_queue(True, 1, 0, 3)
    assert down3['paused_ns'] > 0 and up3['paused_ns'] > 0     # both tiers held priority 3
    assert down3['q_now'] > 0 and up3['q_now'] > 0
    assert w.switch_fabric_queue(False, 0, 0, 0)['paused_ns'] == 0
    assert w.switch_fabric_queue(True, 1, 0, 0)['paused_ns'] == 0
    t_xon = w.now
    w.wire_send(0, pfc_frame(h0.mac, 0x08, {3: 0}))           # XON
    t3 = done_at(w, qa3, cq3, limit=200000)
    assert t0 <= t_xon < t3
    assert dst3.read(0, len(d3)) == d3
    assert sum(w.switch_queue(0, p)['drops'] for p in range(8)) == 0
    for d in w.devs:
        assert d.stat('seq_naks_sent') == 0 and d.stat('retransmitted_packets') == 0
