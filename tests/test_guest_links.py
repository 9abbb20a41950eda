# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: T2 on the VM runner's other cables (docs/guest.md "Topologies"): 'unix' (a
unix-domain datagram socketpair) and 'shm' (shared-memory rings preloaded into both QEMUs,
bench/shm_wire.c: an experiment for issue 18).  RC traffic between the guests
(ibv_rc_pingpong -c: the receiver checks every buffer's bytes) crosses each, and each QEMU
holds the cable the runner made for it, not a UDP socket."""
import subprocess

import pytest

from guest.vmlib import get_topology, pair, rc_pingpong
from qrnic_vm import PrereqError

pytestmark = [pytest.mark.guest, pytest.mark.slow]

ITERS = 300
SIZE = 4096


@pytest.fixture(scope='module', params=['unix', 'shm'])
def topo(request):
    try:
        return get_topology('T2', request.config, link=request.param)
    except PrereqError as e:
        pytest.fail('guest prerequisites: %s' % e, pytrace=False)


def qemu_holds_its_cable(topo):
    for i, v in enumerate(topo.vms):
        pid = v.proc.pid
        if topo.link == 'shm':
            with open('/proc/%d/environ' % pid, 'rb') as f:
                env = dict(kv.split(b'=', 1) for kv in f.read().split(b'\0') if b'=' in kv)
            assert env[b'QRNIC_SHM_WIRE'].endswith(b',%d' % i), env.get(b'QRNIC_SHM_WIRE')
            with open('/proc/%d/maps' % pid) as f:
                maps = f.read()
            assert 'shm_wire.so' in maps and 'memfd:qrnic-shm-wire' in maps
        else:
            out = subprocess.run(['ss', '-Hxap'], capture_output=True, text=True, timeout=30).stdout
            assert any(ln.startswith('u_dgr') and 'pid=%d,' % pid in ln for ln in out.splitlines()), out[-2000:]
        out = subprocess.run(['ss', '-Hunap'], capture_output=True, text=True, timeout=30).stdout
        assert 'pid=%d,' % pid not in out, 'QEMU %d has a UDP socket' % pid


def test_rc_pingpong_crosses_the_cable(topo):
    qemu_holds_its_cable(topo)
    s, c = pair(topo)
    srv, cli = rc_pingpong(s, c, '-c -s %d -n %d' % (SIZE, ITERS))
    for r in (srv, cli):
        assert '%d iters in' % ITERS in r.output, r.output
        assert 'Failed' not in r.output, r.output
    # the frames went over the cable: the devices' counters, both ways
    for v in topo.vms:
        st = v.qmp_cmd('qom-get', path=v.qrnic_paths()[0], property='stats')
        assert st['rx_packets'] >= ITERS and st['tx_packets'] >= ITERS, st
