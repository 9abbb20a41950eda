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
zeroed: it catches garbage written there, little more.  So a pyverbs
program (python3-pyverbs, T1) checks what the tools do not: random
payloads scattered over two SGEs of SRQ WQEs shared by three QPs, ENOMEM
when the SRQ is full, no RQ on an SRQ QP, query/modify (the limit, no
resize), IBV_EVENT_SRQ_LIMIT_REACHED and IBV_EVENT_QP_LAST_WQE_REACHED."""
import re

import pytest

from guest.qrnic_pv import run_script
from guest.vmlib import (check_pair, client_server, guest_dmesg, need_driver, next_port,  # noqa: F401
                         one_device, pair, perftest_figure, perftest_table, run_local, topo)

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
    v = perftest_figure(row, cli.output)    # None: perftest could not time itself
    assert v is None or v > 0, (row, cli.output[-2000:])


@pytest.mark.parametrize('topo', ['T1'], indirect=True)
def test_srq_pingpong_one_device(topo):
    """Both ends on one device: 16 QPs per end, 32 on the device, each end's
    16 on its own SRQ."""
    ep = one_device(topo)
    common = 'ibv_srq_pingpong -d %s -g %d -p %%(port)d -s 4096 -n 100 -c' % (ep.ibdev, ep.gid)
    srv, cli, looped = run_local(ep, common, common + ' ' + ep.ip, timeout=180)
    check_srq_pingpong(srv, cli, 100)
    assert looped >= 200        # 100 SENDs each way, at least


# ---- pyverbs: what the tools do not check ------------------------------------------------
SCRIPT = '/tmp/qrnic_srq_verbs.py'
SCRIPT_TEXT = r'''#!/usr/bin/env python3
# Guest side of tests/test_guest_srq.py::test_srq_pyverbs: RC QPs of port A
# send to QPs of port B that share one SRQ.  Prints "RESULT <json>".
import errno
import json
import random
import signal
import sys

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR
from qrnic_pv import connect_rc

signal.alarm(150)                   # a missing completion or event fails, never hangs
DEV_A, GID_A, DEV_B, GID_B = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
NQP, DEPTH, LIMIT, SLOT, SPLIT = 3, 16, 4, 8192, 1000   # SRQ WQE: SPLIT + (4096 - SPLIT) bytes
ROUNDS, PER_ROUND = 4, 13
rng = random.Random(12345)


class Port:
    def __init__(self, name, gid_index):
        self.ctx = Context(name=name)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(port_num=1, index=gid_index)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256, None, None, 0)
        self.mr = MR(self.pd, DEPTH * SLOT, e.IBV_ACCESS_LOCAL_WRITE)


def connect(qp, me, peer_qp, peer):
    connect_rc(qp, 0, peer_qp.qp_num, peer.gid, me.gid_index)


def poll(cq, n):
    wcs = []
    while len(wcs) < n:
        k, got = cq.poll(n - len(wcs))
        wcs += got[:k]
    return wcs


def errno_of(fn):
    try:
        fn()
    except PyverbsRDMAError as ex:
        return ex.error_code
    return 0


def wait_event(ctx, want, others):
    while True:
        ev = ctx.get_async_event()
        t = int(ev.event_type)
        ev.ack()
        if t == want:
            return
        others.append(t)


res = {'others': [], 'bad': []}
a, b = Port(DEV_A, GID_A), Port(DEV_B, GID_B)
srq = SRQ(b.pd, SrqInitAttr(SrqAttr(max_wr=DEPTH, max_sge=2)))
q = srq.query()
res['query'] = [q.max_wr, q.max_sge, q.srq_limit]
# RQ capabilities are ignored with an SRQ
cap = QPCap(max_send_wr=4, max_recv_wr=DEPTH, max_send_sge=1, max_recv_sge=1)
qb = [QP(b.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=b.cq, rcq=b.cq, srq=srq, cap=cap))
      for _ in range(NQP)]
qa = [QP(a.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=a.cq, rcq=a.cq,
                          cap=QPCap(max_send_wr=PER_ROUND, max_recv_wr=1)))
      for _ in range(NQP)]
for x, y in zip(qa, qb):
    connect(x, a, y, b)
    connect(y, b, x, a)
res['recv_cap'] = [qp.query(e.IBV_QP_CAP)[0].cap.max_recv_wr for qp in qb]
res['post_recv_on_srq_qp'] = errno_of(
    lambda: qb[0].post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(b.mr.buf, 64, b.mr.lkey)])))

posted = {}                         # wr_id -> slot


def post(wr_id):
    slot = wr_id % DEPTH
    base = b.mr.buf + slot * SLOT
    b.mr.write(b'\0' * SLOT, SLOT, slot * SLOT)
    srq.post_recv(RecvWR(wr_id=wr_id, num_sge=2,
                         sg=[SGE(base, SPLIT, b.mr.lkey), SGE(base + 4096, 4096 - SPLIT, b.mr.lkey)]))
    posted[wr_id] = slot


for i in range(DEPTH):
    post(i)
res['full'] = errno_of(lambda: post(DEPTH))
res['resize'] = errno_of(lambda: srq.modify(SrqAttr(max_wr=2 * DEPTH), e.IBV_SRQ_MAX_WR))
srq.modify(SrqAttr(srq_limit=LIMIT), e.IBV_SRQ_LIMIT)
res['armed'] = srq.query().srq_limit

next_id, received, limit_events = DEPTH, 0, 0
for rnd in range(ROUNDS):
    sent = [[] for _ in range(NQP)]              # per QP, in order: the payloads
    for m in range(PER_ROUND):
        k = rng.randrange(NQP)
        data = rng.randbytes(rng.choice((1, 17, SPLIT, SPLIT + 1, 2500, 4096)))
        a.mr.write(data, len(data), SLOT * (m % DEPTH))
        qa[k].post_send(SendWR(wr_id=m, opcode=e.IBV_WR_SEND, num_sge=1,
                               sg=[SGE(a.mr.buf + SLOT * (m % DEPTH), len(data), a.mr.lkey)],
                               send_flags=e.IBV_SEND_SIGNALED))
        sent[k].append(data)
    for wc in poll(a.cq, PER_ROUND):
        if wc.status != e.IBV_WC_SUCCESS:
            res['bad'].append(['send', rnd, wc.wr_id, int(wc.status)])
    seen = [0] * NQP
    for wc in poll(b.cq, PER_ROUND):
        k = [qp.qp_num for qp in qb].index(wc.qp_num)
        data = sent[k][seen[k]]
        seen[k] += 1
        slot = posted.pop(wc.wr_id, None)
        if wc.status != e.IBV_WC_SUCCESS or slot is None or wc.byte_len != len(data):
            res['bad'].append(['recv', rnd, wc.wr_id, int(wc.status), wc.byte_len, len(data)])
            continue
        got = b.mr.read(SPLIT, slot * SLOT) + b.mr.read(4096 - SPLIT, slot * SLOT + 4096)
        if got[:len(data)] != data:
            res['bad'].append(['data', rnd, wc.wr_id])
        received += 1
    if rnd == 0:
        # 13 of 16 taken: 3 left < LIMIT, the event fired once and disarmed the limit
        wait_event(b.ctx, e.IBV_EVENT_SRQ_LIMIT_REACHED, res['others'])
        limit_events += 1
        res['after_event'] = srq.query().srq_limit
    for _ in range(PER_ROUND):                     # refill: the ring laps
        post(next_id)
        next_id += 1
res['received'] = received
res['limit_events'] = limit_events

# a QP on an SRQ that enters ERROR: it takes no more WQEs (IBTA 11.6.3.3)
qb[0].modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
wait_event(b.ctx, e.IBV_EVENT_QP_LAST_WQE_REACHED, res['others'])
res['last_wqe'] = 1
for qp in qa + qb:
    qp.close()
srq.close()
print('RESULT ' + json.dumps(res), flush=True)
'''


@pytest.mark.parametrize('topo', ['T1'], indirect=True)
def test_srq_pyverbs(topo):
    s, c = pair(topo)
    assert s.vm is c.vm, 'T1: both ports in one VM'
    res = run_script(s.vm, SCRIPT, SCRIPT_TEXT, '%s %d %s %d' % (c.ibdev, c.gid, s.ibdev, s.gid),
                     merge=False, tail=3000)
    assert res['bad'] == [], res
    assert res['query'][0] == 16 and res['query'][1] >= 2 and res['query'][2] == 0, res
    assert res['recv_cap'] == [0, 0, 0], res
    assert res['post_recv_on_srq_qp'] == 22, res       # EINVAL: no RQ
    assert res['full'] == 12, res                      # ENOMEM: 16 posted, none taken
    assert res['resize'] == 95, res                    # EOPNOTSUPP
    assert res['armed'] == 4 and res['after_event'] == 0, res
    assert res['limit_events'] == 1 and res['received'] == 4 * 13, res
    assert res['last_wqe'] == 1, res
    # no other async event (COMM_EST at most)
    assert set(res['others']) <= {4}, res
