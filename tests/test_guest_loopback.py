# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: both ends on ONE qrnic device (local loopback, spec 12.8),
with the unmodified tools: ibv_rc_pingpong, ibv_uc_pingpong and
ibv_ud_pingpong with buffer validation (-c), ib_write_bw and ib_read_lat, ib_send_bw over rdma_cm (-R),
rping with validation (-V).  Server and client run in the same guest on the
same device and the client connects to the device's own address.  The
device's counters must show every frame looped back and none on the wire."""
import pytest

from guest.vmlib import guest_dmesg, one_device, perftest_table, run_local, topo  # noqa: F401

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]


@pytest.mark.parametrize('size', [4096, 100])
def test_rc_pingpong_one_device(topo, size):
    ep = one_device(topo)
    common = '-d %s -g %d -p %%(port)d -s %d -n 50 -c' % (ep.ibdev, ep.gid, size)
    _, cli, looped = run_local(ep, 'ibv_rc_pingpong ' + common,
                            'ibv_rc_pingpong ' + common + ' ' + ep.ip)
    assert '50 iters in' in cli.output, cli.output
    assert looped >= 200        # 100 SENDs each way... at least their packets


def test_uc_pingpong_one_device(topo):
    ep = one_device(topo)
    common = '-d %s -g %d -p %%(port)d -s 4096 -n 50 -c' % (ep.ibdev, ep.gid)
    _, cli, _ = run_local(ep, 'ibv_uc_pingpong ' + common, 'ibv_uc_pingpong ' + common + ' ' + ep.ip)
    assert '50 iters in' in cli.output, cli.output


def test_ud_pingpong_one_device(topo):
    ep = one_device(topo)
    common = '-d %s -g %d -p %%(port)d -s 1024 -n 50 -c' % (ep.ibdev, ep.gid)
    _, cli, _ = run_local(ep, 'ibv_ud_pingpong ' + common, 'ibv_ud_pingpong ' + common + ' ' + ep.ip)
    assert '50 iters in' in cli.output, cli.output


@pytest.mark.parametrize('tool', ['ib_write_bw', 'ib_read_lat'])
def test_perftest_one_device(topo, tool):
    ep = one_device(topo)
    common = '%s -d %s -x %d -p %%(port)d -n 100 -F' % (tool, ep.ibdev, ep.gid)
    _, cli, _ = run_local(ep, common, common + ' ' + ep.ip, timeout=180)
    row = perftest_table(cli.output)
    assert row and int(row['#iterations']) == 100, cli.output


def test_perftest_rdma_cm_one_device(topo):
    """ib_send_bw with rdma_cm (-R): the connection manager resolves the
    device's own address to its own MAC."""
    ep = one_device(topo)
    common = 'ib_send_bw -d %s -x %d -p %%(port)d -n 100 -F -R' % (ep.ibdev, ep.gid)
    _, cli, _ = run_local(ep, common, common + ' --bind_source_ip=%s %s' % (ep.ip, ep.ip),
                       listen='cm', timeout=180)
    assert perftest_table(cli.output), cli.output


def test_rping_validated_one_device(topo):
    ep = one_device(topo)
    _, cli, _ = run_local(ep, 'rping -s -a %s -p %%(port)d -v -V -C 5' % ep.ip,
                       'rping -c -a %s -I %s -p %%(port)d -v -V -C 5' % (ep.ip, ep.ip), listen='cm')
    assert cli.output.count('ping data: rdma-ping-') == 5, cli.output
