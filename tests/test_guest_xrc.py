# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: XRC (spec 12.14; ABI 1.3) through the kernel driver and the
provider, with the unmodified rdma-core example ibv_xsrq_pingpong: an XRC
domain opened by each end (ibv_open_xrcd), one XRC SRQ with its own CQ,
per client an XRC RECV (TGT) QP and an XRC SEND (INI) QP whose WRs name
the peer's SRQ (wr.qp_type.xrc.remote_srqn), completions matched to the
RECV QP by wc.qp_num.  T1: server on one port, client on the other; and
both ends on one device.

ibv_xsrq_pingpong has no payload check (it prints "success" once every
SEND of every client completed and every client's receives came back):
what it proves is the XRC plumbing, the ping-pong count and no error
completion."""
import re

import pytest

from guest.vmlib import check_pair, client_server, need_driver, next_port, one_device, pair, run_local, topo  # noqa: F401

pytestmark = [pytest.mark.guest, pytest.mark.slow]

T1 = pytest.mark.parametrize('topo', ['T1'], indirect=True)


def check_xsrq(srv, cli):
    check_pair(srv, cli)
    for r in (srv, cli):
        assert re.search(r'^success$', r.output, re.M), r.output
        assert 'error' not in r.output.lower(), r.output


@T1
def test_devinfo_reports_xrc(topo):
    need_driver(topo)
    for e in topo.endpoints():
        out = e.vm.run('ibv_devinfo -v -d %s' % e.ibdev)
        assert re.search(r'^\s*XRC\s*$', out, re.M), out


@T1
@pytest.mark.parametrize('opts', ['-n 50', '-s 16384 -n 20 -m 1024'], ids=['4k', '16k'])
def test_xsrq_pingpong(topo, opts):
    s, c = pair(topo)
    port = next_port()
    common = '-p %d %s' % (port, opts)
    srv, cli = client_server(s.vm, 'ibv_xsrq_pingpong -d %s -g %d %s' % (s.ibdev, s.gid, common),
                             c.vm, 'ibv_xsrq_pingpong -d %s -g %d %s %s' % (c.ibdev, c.gid, common, s.ip),
                             port, timeout=180)
    check_xsrq(srv, cli)


@T1
def test_xsrq_pingpong_one_device(topo):
    """Both ends on one device: two XRC domains, SRQs and QP pairs on it."""
    ep = one_device(topo)
    common = 'ibv_xsrq_pingpong -d %s -g %d -p %%(port)d -n 50' % (ep.ibdev, ep.gid)
    srv, cli, looped = run_local(ep, common, common + ' ' + ep.ip, timeout=180)
    check_xsrq(srv, cli)
    assert looped >= 100
