# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: shared receive queues (spec 12.10) through the kernel driver
and the provider, with the unmodified tools: ibv_devinfo -v reports the SRQ
limits; ibv_srq_pingpong with buffer validation (-c), by default 16 RC QPs
on one SRQ, and 4 QPs on an 8-entry SRQ (the ring laps many times and the
provider finds room through the device's consumer record); ib_send_bw and
ib_send_lat --use-srq (perftest); ibv_srq_pingpong with both ends on one
device (local loopback: every frame looped back, none on the wire).  T1
(two ports of one VM) and T2 (two VMs).

ibv_srq_pingpong -c of rdma-core 56.1 compares the first byte of every
page with `i / page_size % sizeof(char)`, i.e. 0, in a buffer that starts
zeroed: it catches garbage written there, little more.  The payload of SRQ
receives is compared byte by byte in guest-driver/provider/tests
(qrnic_provider_test) and tests/test_model_srq.py."""
import re

import pytest

from guest.vmlib import (check_pair, client_server, guest_dmesg, need_driver, next_port,  # noqa: F401
                         one_device, pair, perftest_table, run_local, topo)

pytestmark = [pytest.mark.guest, pytest.mark.slow]

T1_T2 = pytest.mark.parametrize('topo', ['T1', 'T2'], indirect=True)

# (ids, options): the default 16 QPs on a 500-entry SRQ; 4 QPs on an 8-entry one
SRQ_PINGPONG = [('16qp', '-s 4096'), ('4qp-rx8', '-q 4 -r 8 -s 16384')]


def devinfo_field(out, name):
    m = re.search(r'^\s*%s:\s+(\d+)\s*$' % re.escape(name), out, re.M)
    assert m, '%s not in:\n%s' % (name, out)
    return int(m.group(1))


def check_srq_pingpong(srv, cli, iters):
    check_pair(srv, cli)
    for r in (srv, cli):
        assert '%d iters in' % iters in r.output, r.output
        assert 'invalid data' not in r.output, r.output


@T1_T2
def test_devinfo_reports_srq(topo):
    need_driver(topo)
    for e in topo.endpoints():
        out = e.vm.run('ibv_devinfo -v -d %s' % e.ibdev)
        assert devinfo_field(out, 'max_srq') > 0, out
        # the device: one WQE limit for QPs and SRQs; SRQ SGEs as a QP's
        assert devinfo_field(out, 'max_srq_wr') == devinfo_field(out, 'max_qp_wr'), out
        assert devinfo_field(out, 'max_srq_sge') == devinfo_field(out, 'max_sge'), out


@T1_T2
@pytest.mark.parametrize('opts', [o for _, o in SRQ_PINGPONG], ids=[i for i, _ in SRQ_PINGPONG])
def test_srq_pingpong_validated(topo, opts):
    s, c = pair(topo)
    port = next_port()
    common = '-p %d %s -n 100 -c' % (port, opts)
    srv, cli = client_server(s.vm, 'ibv_srq_pingpong -d %s -g %d %s' % (s.ibdev, s.gid, common),
                             c.vm, 'ibv_srq_pingpong -d %s -g %d %s %s' % (c.ibdev, c.gid, common, s.ip),
                             port, timeout=180)
    check_srq_pingpong(srv, cli, 100)


@T1_T2
@pytest.mark.parametrize('tool', ['ib_send_bw', 'ib_send_lat'])
def test_perftest_use_srq(topo, tool):
    """perftest's SEND tests with the receives on an SRQ (the bw server's, both
    ends' for lat)."""
    s, c = pair(topo)
    port = next_port()
    common = '--use-srq -p %d -n 100 -F' % port
    if tool.endswith('_bw'):
        common += ' -s 65536'
    srv, cli = client_server(s.vm, '%s -d %s -x %d %s' % (tool, s.ibdev, s.gid, common),
                             c.vm, '%s -d %s -x %d %s %s' % (tool, c.ibdev, c.gid, common, s.ip), port,
                             timeout=180)
    check_pair(srv, cli)
    assert re.search(r'Using SRQ\s*:\s*ON', srv.output), srv.output
    row = perftest_table(cli.output)
    assert row, 'no result table in:\n' + cli.output
    assert int(row['#iterations']) == 100, row
    key = next(k for k in row if k.startswith(('BW_average', 't_avg')))
    assert float(row[key]) > 0, row


@pytest.mark.parametrize('topo', ['T1'], indirect=True)
def test_srq_pingpong_one_device(topo):
    """Both ends on one device: 16 QPs per end, 32 on the device, each end's
    16 on its own SRQ."""
    ep = one_device(topo)
    common = 'ibv_srq_pingpong -d %s -g %d -p %%(port)d -s 4096 -n 100 -c' % (ep.ibdev, ep.gid)
    srv, cli, looped = run_local(ep, common, common + ' ' + ep.ip, timeout=180)
    check_srq_pingpong(srv, cli, 100)
    assert looped >= 200        # 100 SENDs each way, at least
