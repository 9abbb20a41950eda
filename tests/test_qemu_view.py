# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: the read-only QOM properties "qps", "cqs", "eqs", "srqs"
(docs/qemu.md section 11, model/query.c) and scripts/qrnic-view's QEMU
source, with the qtest driver playing the guest: QPs created through the
admin queue are reported with their state and PSNs, the PSNs move by the
packets sent, and the view's JSON has them and the frames of the
qrnic_event trace log."""
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

import qrnic_harness as h
from qtest.driver import World
from qtest.fixtures import REPO, qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

VIEW = os.path.join(REPO, 'scripts', 'qrnic-view')
sys.path.insert(0, os.path.join(REPO, 'scripts'))


@pytest.fixture(scope='module')
def env(qemu_binary):  # noqa: F811
    tmp = tempfile.mkdtemp(prefix='qrnic-view-')
    sock = os.path.join(tmp, 'qmp.sock')
    log = os.path.join(tmp, 'events.log')
    w = World.single(qemu_binary, ndev=2, name='view', extra_args=[
        '-qmp', f'unix:{sock},server=on,wait=off', '-trace', f'qrnic_event,file={log}'])
    yield w, sock, log
    w.close()


def qps(dev):
    return dev.qom_get('qps')


def test_qps_property_after_create_and_traffic(env):
    w, _, _ = env
    a, b = w.devs
    assert qps(a) == [] and qps(b) == []
    c = h.connect_rc(a, b, mtu=1024, psn_a=0x100, psn_b=0x200, cq_log=6, sq_log=5, rq_log=4)
    qa, = qps(a)
    qb, = qps(b)
    assert qa['qpn'] == c.qa.qpn and qb['qpn'] == c.qb.qpn
    assert (qa['state-name'], qa['type-name'], qa['state']) == ('RTS', 'RC', 3)
    assert (qa['next_psn'], qa['una_psn'], qa['epsn']) == (0x100, 0x100, 0x200)
    assert (qb['next_psn'], qb['epsn']) == (0x200, 0x100)
    assert qa['dest_qpn'] == c.qb.qpn and qa['path_mtu'] == 1024
    assert (qa['sq_depth'], qa['rq_depth'], qa['retry_cnt'], qa['timeout']) == (32, 16, 7, 14)
    src = a.reg_mr(c.pda, 8192)
    dst = b.reg_mr(c.pdb, 8192)
    for _ in range(3):          # 3 x 2 KiB at MTU 1024: 6 packets
        c.qa.post_send('RDMA_WRITE', [(src, 0, 2048)], remote=(dst, 0))
    got = c.cqa.wait(3, 30)
    assert [x['status_name'] for x in got] == ['SUCCESS'] * 3
    qa, = qps(a)
    qb, = qps(b)
    assert (qa['next_psn'], qa['una_psn'], qa['inflight']) == (0x106, 0x106, 0)
    assert (qa['sq_pi'], qa['sq_next'], qa['sq_ci']) == (3, 3, 3)
    assert (qb['epsn'], qb['msn']) == (0x106, 3)
    cq, = [x for x in a.qom_get('cqs') if x['cqn'] == c.cqa.cqn]
    assert (cq['depth'], cq['written'], cq['pi']) == (64, 3, 3)
    assert (cq['mod_count'], cq['mod_period_us']) == (0, 0)
    eqs = a.qom_get('eqs')
    assert eqs and all(e['depth'] > 0 for e in eqs)
    assert a.qom_get('srqs') == []
    # moved to ERR through the admin queue: reported so
    c.qb.modify('ERR')
    assert qps(b)[0]['state-name'] == 'ERR'


def test_view_state_from_qemu(env):
    w, sock, log = env
    r = subprocess.run([sys.executable, VIEW, '--state', 'qemu', '--qmp', sock,
                        '--trace-log', log], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st['source'] == 'qemu' and len(st['devices']) == 2
    qa = st['devices'][0]['qps'][0]
    assert qa['state_name'] == 'RTS' and qa['next_psn'] == 0x106
    assert st['devices'][1]['qps'][0]['state_name'] == 'ERR'
    # the 6 WRITE packets and their ACKs, from the trace log, delivered
    writes = [f for f in st['frames'] if f['src'] == 0 and 'WRITE' in f['op']]
    assert [f['psn'] for f in writes] == list(range(0x100, 0x106))
    assert all(f['status'] == 'delivered' and f['dst'] == 1 for f in writes)
    assert st['frame_counts']['lost'] == 0
    assert st['devices'][0]['stats']['tx_packets'] >= 6


def test_view_pause_continue_over_qmp(env):
    w, sock, log = env
    from qrnic_view.qemu import QemuSource
    src = QemuSource(sock, devs=['qrnic0'], trace_log=log)
    try:
        assert src.pause() == {'ok': True, 'running': False}
        assert src.state()['running'] is False
        assert src.resume()['running'] is True
        assert src.state()['running'] is True
        assert src.timeline_svg(1).startswith('<?xml')
    finally:
        src.close()


def test_view_bad_qemu_arguments(env):
    w, sock, log = env
    r = subprocess.run([sys.executable, VIEW, '--state', 'qemu', '--qmp', sock, '--dev', 'nope'],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and 'no qrnic device with id nope' in r.stderr
    assert 'qrnic0' in r.stderr
    r = subprocess.run([sys.executable, VIEW, '--state', 'qemu', '--qmp', sock,
                        '--trace-log', '/nonexistent/log'], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and 'no such trace log' in r.stderr
