# SPDX-License-Identifier: GPL-2.0-or-later
"""qrnic-switch (tests/harness/qrnic_switch.c, scripts/qrnic-switch,
docs/congestion.md "VM topologies") alone, driven by UDP sockets as QEMU's
-netdev dgram would: learning and flooding, tail drop over --buffer, RED/ECN
marks, 802.1Qbb XOFF/XON to a host past --xoff, malformed datagrams counted,
bad arguments exit 2.  The switch is the simulator's (hx_switch_*): these
check the glue (ports, learning, clock, counters), the switch's own
mechanisms are checked by test_model_cc_switch.py and friends."""
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest

import qrnic_harness as q

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'scripts'))
from qrnic_vm.ports import free_udp_ports  # noqa: E402

SWITCH = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-switch')

MAC = [bytes([0x02, 0, 0, 0, 0, i + 1]) for i in range(4)]
BCAST = b'\xff' * 6


class Switch:
    """qrnic-switch with n ports, each linked to a Python UDP socket."""

    def __init__(self, n, *args, tmp=None):
        self.hosts = []
        specs = []
        hs = []
        for _ in range(n):
            h = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            h.bind(('127.0.0.1', 0))
            h.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            hs.append(h)
        # after the hosts' (open) sockets: the switch binds these (a race
        # with other processes: unlikely)
        for h, sport in zip(hs, free_udp_ports(n)):
            specs += ['--port', f'127.0.0.1:{sport}=127.0.0.1:{h.getsockname()[1]}']
            self.hosts.append((h, ('127.0.0.1', sport)))
        self.stats = os.path.join(tmp, 'sw.json') if tmp else None
        cmd = [SWITCH] + specs + [str(a) for a in args] + \
            (['--stats', self.stats, '--stats-interval', '50ms'] if tmp else [])
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stderr.readline()
        assert 'ready' in line, line + self.p.stderr.read()

    def send(self, i, frame):
        h, addr = self.hosts[i]
        h.sendto(frame, addr)

    def recv_all(self, i, quiet=0.3, limit=10.0):
        """every datagram host i gets until none came for `quiet` seconds"""
        h = self.hosts[i][0]
        out, end = [], time.monotonic() + limit
        while time.monotonic() < end:
            r, _, _ = select.select([h], [], [], quiet)
            if not r:
                break
            out.append(h.recv(65536))
        return out

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        out, err = self.p.communicate(timeout=20)
        assert self.p.returncode == 0, err
        for h, _ in self.hosts:
            h.close()
        return json.loads(out)


def eth(dst, src, payload=b'', et=0x88b5, size=64):
    f = dst + src + struct.pack('>H', et) + payload
    return f + bytes(max(0, size - len(f)))


def ipv4_udp(dst, src, size, tos=0x02):
    """an IPv4/UDP frame (RoCEv2's port) with ECN bits tos & 3 (ECT(0))"""
    ulen = size - 14 - 20
    ip = struct.pack('>BBHHHBBH4s4s', 0x45, tos, 20 + ulen, 0, 0x4000, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    s = sum(struct.unpack('>10H', ip))
    while s > 0xffff:
        s = (s & 0xffff) + (s >> 16)
    ip = ip[:10] + struct.pack('>H', ~s & 0xffff) + ip[12:]
    udp = struct.pack('>HHHH', 49152, 4791, ulen, 0)
    return dst + src + b'\x08\x00' + ip + udp + bytes(ulen - 8)


def ip_csum_ok(f):
    s = sum(struct.unpack('>10H', f[14:34]))
    while s > 0xffff:
        s = (s & 0xffff) + (s >> 16)
    return s == 0xffff


@pytest.fixture
def sw_factory(tmp_path):
    made = []

    def make(n, *args):
        s = Switch(n, *args, tmp=str(tmp_path))
        made.append(s)
        return s
    yield make
    for s in made:
        if s.p.poll() is None:
            s.p.kill()
            s.p.wait()


def test_learning_and_flooding(sw_factory):
    sw = sw_factory(3, '--rate', 'inf')
    # broadcast from host 0: to 1 and 2, not back to 0
    sw.send(0, eth(BCAST, MAC[0], b'arp?'))
    got = [sw.recv_all(i) for i in range(3)]
    assert [len(g) for g in got] == [0, 1, 1]
    assert got[1][0][:14] == BCAST + MAC[0] + b'\x88\xb5'
    # host 1 answers host 0 (learned on port 0): only host 0 gets it
    sw.send(1, eth(MAC[0], MAC[1], b'reply'))
    got = [sw.recv_all(i) for i in range(3)]
    assert [len(g) for g in got] == [1, 0, 0]
    assert got[0][0][6:12] == MAC[1] and b'reply' in got[0][0]
    # now both are learned: 0 -> 1 is unicast
    for k in range(5):
        sw.send(0, eth(MAC[1], MAC[0], bytes([k]) * 100, size=200))
    got = [sw.recv_all(i) for i in range(3)]
    assert [len(g) for g in got] == [0, 5, 0]
    assert [g[14] for g in got[1]] == list(range(5))	# in order, bytes intact
    # unknown unicast and multicast flood
    sw.send(2, eth(MAC[3], MAC[2], b'who'))
    sw.send(2, eth(b'\x33\x33\x00\x00\x00\x01', MAC[2], b'nd', et=0x86dd))
    got = [sw.recv_all(i) for i in range(3)]
    assert [len(g) for g in got] == [2, 2, 0]
    j = sw.stop()
    p = j['ports']
    assert [x['rx_frames'] for x in p] == [6, 1, 2]
    assert [x['flooded'] for x in p] == [1, 0, 2]
    assert [x['tx_frames'] for x in p] == [3, 8, 1]
    assert [x['frames'] for x in p] == [3, 8, 1]	# the switch's output queues
    assert all(x['drops'] == 0 and x['malformed'] == 0 for x in p)


def test_buffer_overflow_drops(sw_factory):
    # 1 Mb/s out, 20 KiB queue: 60 x 1000-byte frames at once cannot fit
    sw = sw_factory(3, '--rate', '1M', '--buffer', '20K', '--kmax', '0')
    sw.send(2, eth(BCAST, MAC[2]))
    for i in range(3):
        sw.recv_all(i, quiet=0.1)
    for k in range(30):
        sw.send(0, eth(MAC[2], MAC[0], struct.pack('>H', k), size=1000))
        sw.send(1, eth(MAC[2], MAC[1], struct.pack('>H', k), size=1000))
    got = sw.recv_all(2, quiet=1.0, limit=30)
    j = sw.stop()
    p2 = j['ports'][2]
    assert p2['drops'] > 0
    assert p2['frames'] + p2['drops'] == 60
    assert len(got) == p2['frames'] == p2['tx_frames']
    assert p2['q_max'] <= 20 * 1024
    # the queue drains at the port rate: more than a frame's worth stayed queued
    assert p2['q_max'] >= 10 * 1024


def test_shared_buffer_drops(sw_factory):
    # one shared buffer of 20 KiB, dynamic threshold alpha x free bytes
    sw = sw_factory(2, '--rate', '1M', '--shared-buffer', '20K', '--alpha', '1', '--kmax', '0')
    sw.send(1, eth(BCAST, MAC[1]))
    sw.recv_all(0, quiet=0.1)
    for k in range(30):
        sw.send(0, eth(MAC[1], MAC[0], struct.pack('>H', k), size=1000))
    got = sw.recv_all(1, quiet=1.0, limit=30)
    j = sw.stop()
    p1 = j['ports'][1]
    assert p1['drops'] > 0 and p1['frames'] + p1['drops'] == 30 == len(got) + p1['drops']
    # alpha 1: a queue stops at half the buffer (q < free bytes)
    assert 0 < j['shared_max'] <= 10 * 1024 + 1024
    assert j['config']['shared_buffer'] == 20 * 1024 and j['shared_used'] == 0


def test_red_ecn_marks(sw_factory):
    sw = sw_factory(2, '--rate', '1M', '--buffer', '1M', '--kmin', '2K', '--kmax', '4K',
                    '--pmax', '1')
    sw.send(1, eth(BCAST, MAC[1]))
    sw.recv_all(0, quiet=0.1)
    for k in range(20):
        sw.send(0, ipv4_udp(MAC[1], MAC[0], 1000))
    sw.send(0, ipv4_udp(MAC[1], MAC[0], 1000, tos=0))	# not ECN-capable: never marked
    got = sw.recv_all(1, quiet=1.0, limit=30)
    j = sw.stop()
    assert len(got) == 21
    ce = [f for f in got if f[15] & 3 == 3]
    assert all(ip_csum_ok(f) for f in got)
    assert got[-1][15] & 3 == 0
    assert got[0][15] & 3 == 2	# an empty queue marks nothing
    # q >= kmax (4 frames of 1024 bytes queued) marks every ECT frame
    assert all(f[15] & 3 == 3 for f in got[6:20])
    assert len(ce) == j['ports'][1]['marks'] >= 14
    assert j['ports'][1]['queues'][0]['marks'] == len(ce)


def test_pfc_xoff_xon(sw_factory):
    sw = sw_factory(2, '--rate', '1M', '--pfc', '--xoff', '6K', '--xon', '3K', '--kmax', '0')
    sw.send(1, eth(BCAST, MAC[1]))
    sw.recv_all(0, quiet=0.1)
    # priority 3 (DSCP 24 << 2): its ingress bytes pass xoff
    for k in range(10):
        sw.send(0, ipv4_udp(MAC[1], MAC[0], 1000, tos=24 << 2 | 2))
    got0 = sw.recv_all(0, quiet=1.0, limit=20)
    got1 = sw.recv_all(1, quiet=0.5, limit=20)
    j = sw.stop()
    assert len(got1) == 10
    pfc = [f for f in got0 if f[12:14] == b'\x88\x08']
    assert len(pfc) >= 2, got0
    for f in pfc:
        assert f[:6] == b'\x01\x80\xc2\x00\x00\x01'
        assert struct.unpack('>H', f[14:16])[0] == 0x0101	# PFC opcode
        assert struct.unpack('>H', f[16:18])[0] == 1 << 3	# class-enable: priority 3
    times = [struct.unpack('>8H', f[18:34])[3] for f in pfc]
    assert times[0] == 0xffff	# XOFF first
    assert times[-1] == 0	# XON once the ingress fell to xon
    p0 = j['ports'][0]
    assert p0['pauses'] >= 1 and p0['pfc_sent'] == len(pfc)


def test_malformed_datagrams(sw_factory):
    sw = sw_factory(2)
    sw.send(0, b'short')
    sw.send(0, b'')
    sw.send(0, eth(BCAST, MAC[0], size=9019))
    sw.send(0, eth(BCAST, MAC[0], size=65000))
    sw.send(0, eth(BCAST, MAC[0], size=9018))	# the longest a port takes (9000 MTU)
    got = sw.recv_all(1)
    j = sw.stop()
    assert [len(f) for f in got] == [9018]
    assert j['ports'][0]['malformed'] == 4
    assert j['ports'][0]['rx_frames'] == 1


def test_stats_file_and_sigusr1(sw_factory, tmp_path):
    sw = sw_factory(2, '--stats-interval', '10s')
    sw.send(0, eth(BCAST, MAC[0]))
    sw.recv_all(1)
    sw.p.send_signal(signal.SIGUSR1)
    path = tmp_path / 'sw.json'
    for _ in range(100):
        if path.exists():
            j = json.loads(path.read_text())
            if j['ports'][0]['rx_frames'] == 1:
                break
        time.sleep(0.05)
    else:
        pytest.fail('no stats after SIGUSR1')
    assert j['ports'][1]['tx_frames'] == 1
    sw.stop()


@pytest.mark.parametrize('args, msg', [
    ([], 'at least 2 --port'),
    (['--port', '127.0.0.1:5'], 'at least 2 --port'),
    (['--port', 'x:1', '--port', '2'], 'not an IPv4 address'),
    (['--port', '70000', '--port', '2'], 'bad UDP port'),
    (['--port', '1', '--port', '1'], 'bind the same address'),
    (['--port', '1', '--port', '2', '--rate', 'fast'], '--rate'),
    (['--port', '1', '--port', '2', '--kmin', '10K', '--kmax', '5K'], '--kmax'),
    (['--port', '1', '--port', '2', '--pmax', '2'], '--pmax'),
    (['--port', '1', '--port', '2', '--pfc', '--xoff', '1K', '--xon', '2K'], '--xon'),
    (['--port', '1', '--port', '2', '--buffer', '1K'], '--buffer'),
    (['--port', '1', '--port', '2', '--alpha', '0'], '--alpha'),
    (['--port', '1', '--port', '2', '--ets', '50,50'], '--ets'),
    (['--port', '1', '--port', '2', '--prio-queues', '--pfc-prios', '3'], 'needs --pfc'),
    (['--port', '1', '--port', '2', '--pfc', '--pfc-prios', '3,3'], 'twice'),
    (['--port', '1', '--port', '2', '--pfc', '--pfc-prios', '8'], 'not a priority'),
    (['--port', '1', '--port', '2', '--bogus'], "unknown option '--bogus'"),
    (['--port', '1', '--port', '2', '--rate'], '--rate needs a value'),
    (['--port', '1', '--port', '2', 'extra'], "unexpected argument 'extra'"),
    (['--port', '1', '--port', '2', '--duration', '5 parsecs'], '--duration'),
])
def test_bad_args_exit_2(args, msg):
    r = subprocess.run([SWITCH] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=20)
    assert r.returncode == 2, r.stderr
    assert msg in r.stderr
    assert r.stderr.startswith('qrnic-switch: ')


def test_duration_exits_with_counters():
    r = subprocess.run([SWITCH, '--port', '127.0.0.1:0', '--port', '127.0.0.1:0'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=20)
    assert r.returncode == 2 and 'bad UDP port' in r.stderr
    r = subprocess.run([SWITCH, '--port', '127.0.0.1:47391', '--port', '127.0.0.1:47392',
                        '--duration', '200ms'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert len(j['ports']) == 2 and j['uptime_ns'] >= 200e6


def test_runner_switchproc(tmp_path, monkeypatch):
    """The VM runner's glue (scripts/qrnic_vm/runner.py SwitchProc, used by the S4
    topology): started as a child, counters on demand and at stop, files in the run
    directory; the star topology names."""
    from qrnic_vm.runner import SwitchProc, star_size
    assert [star_size(n) for n in ('S3', 'S4', 'S16', 'S2', 'S17', 'T2', 'S', 'Sx', None)] == \
        [3, 4, 16, None, None, None, None, None, None]
    monkeypatch.setenv('QRNIC_SWITCH', SWITCH)
    hosts = []
    for _ in range(3):
        h = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        h.bind(('127.0.0.1', 0))
        hosts.append(h)
    # distinct (bound and closed one at a time, the kernel may hand the same
    # port out again: CI had two switch ports on one address)
    sports = free_udp_ports(3)
    sp = SwitchProc(str(tmp_path), [(sports[i], hosts[i].getsockname()[1]) for i in range(3)],
                    ['--rate', '1G'])
    sp.start(timeout=30)
    try:
        hosts[0].sendto(eth(BCAST, MAC[0]), ('127.0.0.1', sports[0]))
        for h in hosts[1:]:
            h.settimeout(5)
            assert h.recv(65536)[6:12] == MAC[0]
        j = sp.stats()
        assert [p['rx_frames'] for p in j['ports']] == [1, 0, 0]
        assert [p['tx_frames'] for p in j['ports']] == [0, 1, 1]
        assert j['config']['rate_bps'] == 1000000000
    finally:
        final = sp.stop()
        for h in hosts:
            h.close()
    assert final['ports'][0]['flooded'] == 1
    assert (tmp_path / 'switch.log').read_text().startswith('qrnic-switch: ready')
    assert '--rate 1G' in (tmp_path / 'switch-cmdline.txt').read_text()


def test_ets_weights_between_priority_queues(sw_factory):
    """--prio-queues --ets 25,0,0,75,...: 200 frames of priority 0 (host 1)
    and 200 of priority 3 (host 2), 1000 bytes each, sent at once into host
    0's port at 10 Mb/s (0.8 ms a frame): once both queues are backlogged,
    every 100 frames host 0 gets hold 75 of priority 3 within the DWRR
    bound (|S3 - 3 S0| <= 3 Q_75 + 4 M = 26596 B, 26 frames: 75 +- 6.5;
    tests/test_model_switch_ets.py), not the 100 of strict priority"""
    sw = sw_factory(3, '--rate', '10M', '--buffer', '4M', '--kmax', '0', '--prio-queues',
                    '--ets', '25,0,0,75,0,0,0,0')
    sw.send(0, eth(BCAST, MAC[0], b'hello'))          # learn host 0
    for i in (1, 2):
        sw.recv_all(i, quiet=0.1)
    for k in range(200):
        sw.send(1, ipv4_udp(MAC[0], MAC[1], 1000, tos=0 << 5))
    for k in range(200):
        sw.send(2, ipv4_udp(MAC[0], MAC[2], 1000, tos=3 << 5))
    got = sw.recv_all(0, quiet=1.0, limit=30)
    prios = [f[15] >> 5 for f in got]
    assert len(prios) == 400 and prios.count(0) == prios.count(3) == 200
    window = prios[30:130]       # both backlogged (priority 0 sends a quarter)
    print(f"priority 3: {window.count(3)} of frames 30..129")
    assert 68 <= window.count(3) <= 82, window
    j = sw.stop()
    assert j['config']['ets'] == [25, 0, 0, 75, 0, 0, 0, 0]
    q0 = {x['prio']: x for x in j['ports'][0]['queues']}
    assert q0[0]['weight'] == 25 and q0[3]['weight'] == 75
    assert q0[0]['tx_bytes'] == q0[3]['tx_bytes'] == 200 * 1024
