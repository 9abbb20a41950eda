# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: memory windows and CQ resize/moderation (kernel driver alloc_mw,
resize_cq, modify_cq; provider ibv_alloc_mw/ibv_bind_mw/IBV_WR_BIND_MW,
ibv_resize_cq; guest-driver/kernel/README.md, guest-driver/provider/README.md), in one
T1 guest:

- rdma-core 56.1's own pyverbs test suite (the guest's rdma-core version): the files of
  its tests/ package that the memory-window and CQ tests need are copied from the
  cached source tree ($QRNIC_CACHE/rdma-core-56.1, scripts/build-provider.sh unpacks
  it) into the guest and run with its run_tests.py --dev <a qrnic device> (the suite's
  client and server share that device): test_mr.MWTest (type
  1 and type 2 windows: bind, RDMA WRITE through the window with data validation,
  invalidation by rebind, LOCAL_INV, SEND_WITH_INV and dealloc, a wrong type) and
  test_cq.CQTest / CQAPITest (resize bigger, smaller, and too small for the
  completions pending: EINVAL).  Every test must pass; none may be skipped;
- a pyverbs program of its own: ibv_resize_cq of a user CQ while RDMA WRITEs complete
  into it (some polled, some pending, some still on the wire): every completion
  arrives once, in order; 60 resizes between two sizes under traffic;
- ibv_devinfo -v: max_mw, the memory window capability flags, the CQ moderation caps.
"""
import json
import re

import pytest

from guest.qrnic_pv import assert_checks, run_script
from guest.rdma_core_suite import run_suite
from guest.vmlib import pair, topo  # noqa: F401

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]

# only the two test modules wanted and what they import are copied
SUITE_MODULES = ['test_mr.py', 'test_cq.py']
SUITE_DIR = '/tmp/rdma-core-tests'
SUITE_TESTS = ['test_mr.MWTest', 'test_cq.CQTest', 'test_cq.CQAPITest']


def test_rdma_core_mw_and_cq_tests(topo):
    """rdma-core's MWTest, CQTest and CQAPITest against one qrnic device (its client and
    server on it): all 11 pass, none skipped."""
    s, c = pair(topo)
    res, r = run_suite(c, SUITE_MODULES, SUITE_TESTS, SUITE_DIR)
    print('rdma-core tests on %s: %s' % (c.ibdev, json.dumps(res, indent=1, sort_keys=True)))
    assert res, 'no unittest results:\n%s' % r.output[-6000:]
    mw = {k: v_ for k, v_ in res.items() if k.startswith('MWTest.')}
    assert len(mw) == 7, (sorted(mw), r.output[-6000:])
    assert 'CQTest.test_resize_cq' in res and len(res) == 11, (sorted(res), r.output[-6000:])
    bad = {k: v_ for k, v_ in res.items() if v_ != 'ok'}
    assert not bad and r.rc == 0, '%s\n%s' % (bad, r.output[-8000:])


SCRIPT = '/tmp/qrnic_resize_cq.py'
GUEST_SCRIPT = r'''#!/usr/bin/env python3
# Guest side of tests/test_guest_mw_cq.py: ibv_resize_cq with completions in flight.
# Prints "RESULT <json>": {"checks": [[name, ok, detail], ...]}.
import argparse
import json
import time

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR
from qrnic_pv import connect_rc

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
checks = []


def check(name, ok, detail=''):
    checks.append([name, bool(ok), str(detail)[:400]])


class Side:
    def __init__(self, name, gid_index, cqe):
        self.ctx = Context(name=name)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(port_num=1, index=gid_index)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, cqe)
        cap = QPCap(max_send_wr=64, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq,
                                         cap=cap))
        self.mr = MR(self.pd, 1 << 20, ACCESS)

    def connect(self, peer):
        connect_rc(self.qp, ACCESS, peer.qp.qp_num, peer.gid, self.gid_index)


def poll(cq, n, timeout=30.0):
    out, deadline = [], time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        k, wcs = cq.poll(n - len(out))
        out += [(w.wr_id, w.status) for w in wcs[:k]]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--dev-a')
    ap.add_argument('--gid-a', type=int)
    ap.add_argument('--dev-b')
    ap.add_argument('--gid-b', type=int)
    a_ = ap.parse_args()
    a = Side(a_.dev_a, a_.gid_a, 8)
    b = Side(a_.dev_b, a_.gid_b, 8)
    a.connect(b)
    b.connect(a)
    wr_id = 1
    errs = []

    def writes(n):
        nonlocal wr_id
        first = wr_id
        for i in range(n):
            a.mr.write(bytes([wr_id & 0xff]) * 256, 256, 256 * (i % 64))
            wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                        sg=[SGE(a.mr.buf + 256 * (i % 64), 256, a.mr.lkey)])
            wr.set_wr_rdma(b.mr.rkey, b.mr.buf + 256 * (i % 64))
            a.qp.post_send(wr)
            wr_id += 1
        return first

    # some polled, some pending, some in flight; then bigger and smaller
    first = writes(6)
    got = poll(a.cq, 2)
    writes(2)
    a.cq.resize(32)
    check('resize to 32', a.cq.cqe >= 32, a.cq.cqe)
    got += poll(a.cq, 6)
    check('in-flight completions after resize', got == [(first + i, 0) for i in range(8)], got)
    first = writes(3)
    a.cq.resize(4)
    check('resize to 4', 4 <= a.cq.cqe < 8, a.cq.cqe)
    got = poll(a.cq, 3)
    check('completions after shrinking', got == [(first + i, 0) for i in range(3)], got)
    # too small for what is pending: EINVAL, nothing lost
    first = writes(4)
    time.sleep(0.2)
    try:
        a.cq.resize(2)
        check('too small refused', False, 'accepted')
    except Exception as ex:  # PyverbsRDMAError
        check('too small refused', getattr(ex, 'error_code', None) == 22, ex)
    got = poll(a.cq, 4)
    check('pending kept on a refused resize', got == [(first + i, 0) for i in range(4)], got)
    for k in range(60):
        n = 1 + k % 4
        first = writes(n)
        a.cq.resize(8 if k % 2 else 4)
        got = poll(a.cq, n)
        if got != [(first + i, 0) for i in range(n)]:
            errs.append((k, got))
    check('60 resizes under traffic', not errs, errs[:3])
    check('nothing more', poll(a.cq, 1, timeout=0.3) == [])
    print('RESULT ' + json.dumps({'checks': checks}))


main()
'''


def test_pyverbs_resize_cq_in_flight(topo):
    """ibv_resize_cq of a user CQ with completions polled, pending and on the wire."""
    s, c = pair(topo)
    assert s.vm is c.vm, 'the pyverbs program needs both endpoints in one VM (T1)'
    res = run_script(c.vm, SCRIPT, GUEST_SCRIPT, '--dev-a %s --gid-a %d --dev-b %s --gid-b %d'
                     % (c.ibdev, c.gid, s.ibdev, s.gid))
    assert_checks(res, 8)


def test_devinfo_mw_and_cq_moderation(topo):
    """ibv_devinfo -v: windows (max_mw, MEM_WINDOW, MEM_WINDOW_TYPE_2B) and CQ moderation."""
    s, _ = pair(topo)
    out = s.vm.run('ibv_devinfo -v -d %s' % s.ibdev, timeout=60).output
    m = re.search(r'max_mw:\s*(\d+)', out)
    assert m and int(m.group(1)) > 0, out
    assert 'MEM_WINDOW' in out and 'MEM_WINDOW_TYPE_2B' in out, out
    assert re.search(r'max_cq_count:\s*65535', out), out
    assert re.search(r'max_cq_period:\s*65535', out), out
