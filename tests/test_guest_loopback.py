# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: both ends on ONE qrnic device (local loopback, spec 12.8),
with the unmodified tools: ibv_rc_pingpong, ibv_uc_pingpong and
ibv_ud_pingpong with buffer validation (-c), ib_write_bw and ib_read_lat, ib_send_bw over rdma_cm (-R),
rping with validation (-V).  Server and client run in the same guest on the
same device and the client connects to the device's own address.  The
device's counters must show every frame looped back and none on the wire."""
import pytest

from guest.vmlib import (check_pair, client_server, guest_dmesg, next_port, pair,  # noqa: F401
                         perftest_table, topo)

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]


def hw_counters(vm, ibdev):
    """The device's QUERY_STATS counters (the driver's hw_counters in sysfs)."""
    out = vm.run('cd /sys/class/infiniband/%s/ports/1/hw_counters && grep . *' % ibdev,
                 timeout=60).output
    return {k: int(v) for k, v in (ln.split(':', 1) for ln in out.split() if ':' in ln)}


def one_device(topo):
    s, _ = pair(topo)
    return s


def run_local(ep, server_cmd, client_cmd, **kw):
    """Server and client in the same guest, on the same device; returns the
    client's result and how many frames the device looped back meanwhile."""
    before = hw_counters(ep.vm, ep.ibdev)
    port = next_port()
    srv, cli = client_server(ep.vm, server_cmd % {'port': port},
                             ep.vm, client_cmd % {'port': port}, port, **kw)
    check_pair(srv, cli)
    after = hw_counters(ep.vm, ep.ibdev)
    looped = after['loopback_frames'] - before['loopback_frames']
    assert looped > 0, (before, after)
    # every RoCE frame this device sent came back to it: nothing went on the
    # wire (tx_packets also counts the netdev's own Ethernet frames)
    d = {k: after[k] - before[k] for k in after}
    assert d['tx_packets'] - d['eth_tx_frames'] == looped, d
    return cli, looped


@pytest.mark.parametrize('size', [4096, 100])
def test_rc_pingpong_one_device(topo, size):
    ep = one_device(topo)
    common = '-d %s -g %d -p %%(port)d -s %d -n 50 -c' % (ep.ibdev, ep.gid, size)
    cli, looped = run_local(ep, 'ibv_rc_pingpong ' + common,
                            'ibv_rc_pingpong ' + common + ' ' + ep.ip)
    assert '50 iters in' in cli.output, cli.output
    assert looped >= 200        # 100 SENDs each way... at least their packets


def test_uc_pingpong_one_device(topo):
    ep = one_device(topo)
    common = '-d %s -g %d -p %%(port)d -s 4096 -n 50 -c' % (ep.ibdev, ep.gid)
    cli, _ = run_local(ep, 'ibv_uc_pingpong ' + common, 'ibv_uc_pingpong ' + common + ' ' + ep.ip)
    assert '50 iters in' in cli.output, cli.output


def test_ud_pingpong_one_device(topo):
    ep = one_device(topo)
    common = '-d %s -g %d -p %%(port)d -s 1024 -n 50 -c' % (ep.ibdev, ep.gid)
    cli, _ = run_local(ep, 'ibv_ud_pingpong ' + common, 'ibv_ud_pingpong ' + common + ' ' + ep.ip)
    assert '50 iters in' in cli.output, cli.output


@pytest.mark.parametrize('tool', ['ib_write_bw', 'ib_read_lat'])
def test_perftest_one_device(topo, tool):
    ep = one_device(topo)
    common = '%s -d %s -x %d -p %%(port)d -n 100 -F' % (tool, ep.ibdev, ep.gid)
    cli, _ = run_local(ep, common, common + ' ' + ep.ip, timeout=180)
    row = perftest_table(cli.output)
    assert row and int(row['#iterations']) == 100, cli.output


def test_perftest_rdma_cm_one_device(topo):
    """ib_send_bw with rdma_cm (-R): the connection manager resolves the
    device's own address to its own MAC."""
    ep = one_device(topo)
    common = 'ib_send_bw -d %s -x %d -p %%(port)d -n 100 -F -R' % (ep.ibdev, ep.gid)
    cli, _ = run_local(ep, common, common + ' --bind_source_ip=%s %s' % (ep.ip, ep.ip),
                       listen='cm', timeout=180)
    assert perftest_table(cli.output), cli.output


def test_rping_validated_one_device(topo):
    ep = one_device(topo)
    cli, _ = run_local(ep, 'rping -s -a %s -p %%(port)d -v -V -C 5' % ep.ip,
                       'rping -c -a %s -I %s -p %%(port)d -v -V -C 5' % (ep.ip, ep.ip), listen='cm')
    assert cli.output.count('ping data: rdma-ping-') == 5, cli.output
