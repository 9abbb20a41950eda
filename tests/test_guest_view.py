# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: scripts/qrnic-view against a T1 guest (docs/view.md).

The view talks to the VM's own QMP socket and reads the device's
qrnic_event records from the VM's QEMU log (QEMU's log trace backend
writes to stderr, which the VM runner keeps in vmN-qemu.log; the event is
switched on over QMP with trace-event-set-state for the test only).  While
ibv_rc_pingpong runs between the two qrnic ports, the view must show both
RC QPs in RTS with their PSNs moving, the SEND frames and their ACKs
delivered between the devices; pausing must stop the VM and the frames,
a step must let the device run until it traces, and the last operation
must come out as a timeline SVG."""
import time

import pytest

from guest.vmlib import ensure_driver, guest_dmesg, need_driver, next_port, pair, topo  # noqa: F401
from guest.vmlib import wait_tcp_listen
from qrnic_vm.qmp import Qmp  # noqa: E402  (scripts/ is on sys.path through guest.vmlib)
from test_view import Server

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]


def _wait(cond, what, limit=120):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.25)
    raise AssertionError(f'timed out waiting for {what}')


def _rc_rts(st):
    """{(dev, qpn): next_psn} of the RC QPs in RTS."""
    return {(d['index'], q['qpn']): q['next_psn'] for d in st['devices'] for q in d['qps']
            if q['type_name'] == 'RC' and q['state_name'] == 'RTS'}


def test_view_live_on_t1(topo):
    s, c = pair(topo)
    vm = s.vm
    assert vm is c.vm, 'T1: both ports in one VM'
    with Qmp(vm.qmp_sock, timeout=10) as q:
        q.cmd('trace-event-set-state', name='qrnic_event', enable=True)
    srv = jobs = None
    try:
        srv = Server('qemu', '--qmp', vm.qmp_sock, '--trace-log', vm.qemu_log)
        st = srv.json('/api/state')[1]
        assert st['source'] == 'qemu' and st['running'] is True
        assert sorted(d['name'].split()[0] for d in st['devices']) == ['qrnic-0', 'qrnic-1']
        port = next_port()
        common = '-p %d -s 64 -n 1000000' % port
        jobs = [vm.spawn('ibv_rc_pingpong -d %s -g %d %s' % (s.ibdev, s.gid, common))]
        assert wait_tcp_listen(vm, port), 'ibv_rc_pingpong server does not listen'
        jobs.append(vm.spawn('ibv_rc_pingpong -d %s -g %d %s %s' % (c.ibdev, c.gid, common, s.ip)))
        # the two RC QPs come up, and their PSNs move while traffic runs
        first = _wait(lambda: (lambda r: r if len(r) >= 2 else None)(
            _rc_rts(srv.json('/api/state')[1])), 'two RC QPs in RTS')
        moved = _wait(lambda: (lambda r: r if any(k in r and r[k] != v for k, v in first.items())
                               else None)(_rc_rts(srv.json('/api/state')[1])), 'a PSN to move')
        assert moved
        st = _wait(lambda: (lambda s_: s_ if s_['frame_counts']['delivered'] >= 20 else None)(
            srv.json('/api/state')[1]), 'frames in the diagram')
        ops = {f['op'] for f in st['frames'] if f['status'] == 'delivered'}
        assert any(o.startswith('SEND') for o in ops) and 'ACK' in ops, ops
        assert {f['src'] for f in st['frames']} == {0, 1}
        assert all(d['stats'].get('tx_packets', 0) > 0 for d in st['devices'])
        # pause: the VM stops, and with it the frames
        assert srv.json('/api/pause', 'POST')[1] == {'ok': True, 'running': False}
        time.sleep(0.5)
        n1 = srv.json('/api/state')[1]
        time.sleep(1.5)
        n2 = srv.json('/api/state')[1]
        assert n1['running'] is False and n2['running'] is False
        assert n2['frame_counts']['events'] == n1['frame_counts']['events']
        # step: run until the device traces, stop again
        code, r = srv.json('/api/step', 'POST')
        assert code == 200 and r['ok'] and r['stepped'] and r['events'] > 0, r
        assert srv.json('/api/state')[1]['running'] is False
        assert srv.json('/api/continue', 'POST')[1]['running'] is True
        code, ct, svg = srv.get('/api/timeline.svg?n=1')
        assert code == 200 and ct.startswith('image/svg+xml') and b'SEND' in svg
    finally:
        for j in reversed(jobs or []):
            j.stop()
        if srv:
            srv.close()
        with Qmp(vm.qmp_sock, timeout=10) as q:
            if not q.cmd('query-status').get('running'):
                q.cmd('cont')
            q.cmd('trace-event-set-state', name='qrnic_event', enable=False)
