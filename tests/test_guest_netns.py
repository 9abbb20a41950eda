# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: T2 with each VM on a "host" of its own (Topology(hosts='netns'), docs/guest.md
"VMs on several hosts").  The two QEMUs run in different network namespaces, their dgram
link is a UDP socket pair between the two host addresses (10.77.n.1 <-> 10.77.n.2), and RC
traffic between the guests (ibv_rc_pingpong -c: the receiver checks every buffer's bytes)
crosses the veths and the bridge between the namespaces: their counters grow by at least
the bytes the guests exchanged.  Stopping the topology removes the namespaces.  The same
with hosts='netns-vxlan': each VM on a tap in a bridge with a VXLAN device to the other host,
the frames crossing the hosts' eth0 as VXLAN packets."""
import os
import re
import shutil
import subprocess

import pytest

from guest.vmlib import get_topology, guest_dmesg, pair, rc_pingpong  # noqa: F401
from qrnic_vm import PrereqError, hosts as hostsmod

pytestmark = [pytest.mark.guest, pytest.mark.slow]

ITERS = 300
SIZE = 4096


@pytest.fixture(scope='module', params=['netns', 'netns-vxlan'])
def kind(request):
    return request.param


@pytest.fixture(scope='module')
def topo(request, kind):
    if os.geteuid() != 0 or not shutil.which('ip'):
        pytest.fail("hosts='netns' needs root and iproute2's ip", pytrace=False)
    try:
        return get_topology('T2', request.config, hosts=kind)
    except PrereqError as e:
        pytest.fail('guest prerequisites: %s' % e, pytrace=False)


def ns_inode(path):
    return os.stat(path).st_ino


def test_qemus_run_in_their_hosts_namespaces(topo):
    h = topo.netns_hosts
    assert topo.hosts in ('netns', 'netns-vxlan') and h is not None and h.created
    mine = ns_inode('/proc/self/ns/net')
    got = []
    for i, v in enumerate(topo.vms):
        assert v.netns == h.ns(i)
        ino = ns_inode('/proc/%d/ns/net' % v.proc.pid)
        # the QEMU process itself (ip netns exec execs it), in the namespace named for its host
        with open('/proc/%d/comm' % v.proc.pid) as f:
            assert f.read().strip().startswith('qrnic-'), 'not QEMU'   # -name ...,process=qrnic-vmN
        assert ino == ns_inode('/run/netns/' + h.ns(i))
        got.append(ino)
    assert len(set(got + [mine])) == 3, got


def test_link_sockets_bind_the_host_addresses(topo):
    """Each QEMU's dgram socket (made by the runner in the namespace, passed as an fd) is bound
    to its host's address and connected to the other host's; netns-vxlan: QEMU holds the tap
    of its host (the tap has a carrier)."""
    h = topo.netns_hosts
    for i, v in enumerate(topo.vms):
        link = v.nics[0][1]
        if h.vxlan:
            with open(os.path.join(topo.rundir, v.name + '-cmdline.txt')) as f:
                cmdline = f.read()
            assert cmdline.startswith('ip netns exec %s ' % h.ns(i)), cmdline[:200]
            assert 'tap,ifname=%s,script=no,downscript=no' % h.tap(i) in cmdline
            out = hostsmod.ip('-j', 'link', 'show', 'dev', h.tap(i), ns=h.ns(i))
            assert 'LOWER_UP' in out and '"master":"brq"' in out, out
            continue
        assert (link.host, link.remote_host) == (h.addr(i), h.addr(1 - i))
        with open(os.path.join(topo.rundir, v.name + '-cmdline.txt')) as f:
            cmdline = f.read()
        assert cmdline.startswith('ip netns exec %s ' % h.ns(i)), cmdline[:200]
        assert 'dgram,local.type=fd' in cmdline or link.rcvbuf == 0
        out = subprocess.run(h.exec_prefix(i) + ['ss', '-Hnuap'], capture_output=True, text=True,
                             timeout=30).stdout
        # QEMU's own socket (QRNIC_LINK_RCVBUF=0) is not connected: it sends to the peer
        peer = r'0\.0\.0\.0:\*' if link.rcvbuf == 0 else r'%s:%d' % (re.escape(h.addr(1 - i)), link.remote)
        want = r'%s:%d\s+%s\s.*pid=%d,' % (re.escape(h.addr(i)), link.local, peer, v.proc.pid)
        assert re.search(want, out), out


def test_rc_pingpong_crosses_the_veths(topo):
    h = topo.netns_hosts
    s, c = pair(topo)
    assert s.vm is topo.vms[0] and c.vm is topo.vms[1]
    before = {(i, hub): h.link_stats(i, hub=hub) for i in (0, 1) for hub in (False, True)}
    srv, cli = rc_pingpong(s, c, '-c -s %d -n %d' % (SIZE, ITERS))
    for r in (srv, cli):
        assert '%d iters in' % ITERS in r.output, r.output
        assert 'Failed' not in r.output, r.output
    after = {k: h.link_stats(*k) for k in before}

    def d(i, hub, key):
        return after[(i, hub)][key] - before[(i, hub)][key]
    # each side sent ITERS messages of SIZE bytes (in RoCE frames of the path MTU, 1024 for
    # ibv_rc_pingpong), each frame one UDP datagram of the link: host 0 eth0 -> p0 -> br0 -> p1 -> host 1 eth0, and back
    need = ITERS * SIZE
    for i in (0, 1):
        assert d(i, False, 'tx_bytes') >= need, (i, d(i, False, 'tx_bytes'))
        assert d(i, False, 'rx_bytes') >= need, (i, d(i, False, 'rx_bytes'))
        assert d(i, False, 'tx_packets') >= ITERS and d(i, False, 'rx_packets') >= ITERS
        assert d(i, True, 'rx_bytes') >= need and d(i, True, 'tx_bytes') >= need
        assert d(i, False, 'rx_dropped') == 0 and d(i, False, 'tx_dropped') == 0
    if h.vxlan:
        for i in (0, 1):
            assert d(i, False, 'tx_packets') >= ITERS
            vx = [h.link_stats(i, dev='vxq')['tx_bytes'], h.link_stats(i, dev='vxq')['rx_bytes']]
            assert min(vx) >= need, vx
    print('veth counters over %d x %d B pingpong: %s' % (ITERS, SIZE, {
        '%s%d' % ('p' if hub else 'h', i): (d(i, hub, 'tx_packets'), d(i, hub, 'rx_packets'))
        for i, hub in before}))


def test_stop_removes_the_namespaces(request, kind):
    """Last test of the module: the topology's stop() deletes its namespaces (the vmlib
    cache boots a new one for any later user).  Not through the `topo` fixture: the guests'
    kernel-log check after a test needs them running."""
    from guest import vmlib
    topo = get_topology('T2', request.config, hosts=kind)
    h = topo.netns_hosts
    names = h.names + [h.hub]
    assert set(names) <= set(hostsmod.list_netns())
    topo.stop()
    for k, t in list(vmlib._topos.items()):
        if t is topo:
            del vmlib._topos[k]
    assert not set(names) & set(hostsmod.list_netns())
    assert not h.created
