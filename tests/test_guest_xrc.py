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
completion.  Payloads are validated by rdma-core 56.1's own XRC tests
(test_rdma_core_xrc_tests: SEND and SEND_WITH_IMM through
ibv_wr_set_xrc_srqn, post_send with remote_srqn polled through
ibv_cq_ex, XRC atomics), run on one device."""
import json
import re

import pytest

from guest.rdma_core_suite import run_suite
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


# ---- rdma-core's own XRC tests: payloads validated -------------------------------------
# only the modules wanted (and what they import) are copied
SUITE_MODULES = ['test_qpex.py', 'test_cqex.py', 'test_atomic.py']
SUITE_DIR = '/tmp/rdma-core-xrc-tests'
# XRCResources: per side an XRC domain (ibv_open_xrcd on a file), an XRC SRQ, two XRC
# RECV and two XRC SEND QPs; utils.xrc_traffic sends both ways through every QP pair
# (remote SRQ from ibv_get_srq_num) and validates every received message
SUITE_TESTS = ['test_qpex.QpExTestCase.test_qp_ex_xrc_send',
               'test_qpex.QpExTestCase.test_qp_ex_xrc_send_imm',
               'test_cqex.CqExTestCase.test_xrc_traffic_cq_ex',
               'test_atomic.AtomicTest.test_xrc_atomic_fetch_and_add',
               'test_atomic.AtomicTest.test_xrc_atomic_cmp_and_swap']


@T1
def test_rdma_core_xrc_tests(topo):
    """rdma-core 56.1's XRC tests (ibv_wr_set_xrc_srqn with SEND and SEND_WITH_IMM,
    post_send with remote_srqn polled through ibv_cq_ex, XRC atomics) against one
    qrnic device (the suite's client and server share it): all 5 pass, none skipped."""
    s, c = pair(topo)
    res, r = run_suite(c, SUITE_MODULES, SUITE_TESTS, SUITE_DIR)
    print('rdma-core XRC tests on %s: %s' % (c.ibdev, json.dumps(res, indent=1, sort_keys=True)))
    assert len(res) == len(SUITE_TESTS), (sorted(res), r.output[-6000:])
    bad = {k: v_ for k, v_ in res.items() if v_ != 'ok'}
    assert not bad and r.rc == 0, '%s\n%s' % (bad, r.output[-8000:])
