# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: the extended verbs API of the provider (guest-driver/provider/README.md),
with unmodified upstream programs and a pyverbs program, between the two qrnic ports of
one T1 guest and between two T2 guests (one qrnic each, across the dgram wire):

- ibv_rc_pingpong -N (the ibv_wr_* post API: ibv_create_qp_ex + ibv_wr_start/send/
  set_sge/complete) with buffer validation (-c), 4 KiB messages and 32-byte ones (those
  go inline: IBV_SEND_INLINE in wr_flags with ibv_wr_set_sge);
- ibv_rc_pingpong -t (completion timestamps, ABI 1.7: ibv_create_cq_ex with
  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, ibv_wc_read_completion_ts): the deltas it prints
  between receive completions are positive and no longer than its run's wall time
  through hca_core_clock (a timestamp going back would wrap to ~2^64);
- ibv_devinfo -v: ibv_query_device_ex answers (completion timestamp mask and core
  clock, device_cap_flags_ex shown);
- a pyverbs program (python3-pyverbs of the guest; there is no compiler in the guest
  image): CQEX (ibv_create_cq_ex with completion timestamps, start/next/end_poll, every
  ibv_wc_read_* the CQ supports) and QPEx with every RC opcode through ibv_wr_* (SGE
  lists, inline data, SOLICITED, FENCE), payloads checked; the completion timestamps
  non-decreasing per CQ, between ibv_query_rt_values_ex read before and after, and that
  clock interval against the program's wall time through hca_core_clock; one side's QP,
  CQ and MR made with a parent domain; an error completion (LOCAL_INV of an ordinary
  MR's key + the flushed SEND behind it); the EOPNOTSUPP answers (wall-clock
  timestamps, BIND_MW on UD)."""
import re

import pytest

from guest.qrnic_pv import assert_checks, run_script
from guest.vmlib import check_pair, client_server, guest_dmesg, next_port, pair, topo  # noqa: F401

pytestmark = [pytest.mark.guest, pytest.mark.slow]
BOTH = pytest.mark.parametrize('topo', ['T1', 'T2'], indirect=True)
T1 = pytest.mark.parametrize('topo', ['T1'], indirect=True)   # both ends in one VM

SCRIPT = '/tmp/qrnic_ext_verbs.py'
GUEST_SCRIPT = r'''#!/usr/bin/env python3
# Guest side of tests/test_guest_ext_verbs.py: extended verbs (CQEX, QPEx, parent
# domain) between two local qrnic devices with pyverbs.  Prints "RESULT <json>":
# {"checks": [[name, ok, detail], ...]}.
import argparse
import errno
import json
import os
import struct
import sys
import time

import pyverbs.enums as e
from pyverbs.cq import CQEX, CqInitAttrEx, PollCqAttr
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD, ParentDomain, ParentDomainInitAttr
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QPCap, QPEx, QPInitAttrEx
from pyverbs.wr import SGE, RecvWR
from qrnic_pv import connect_rc

ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ |
          e.IBV_ACCESS_REMOTE_ATOMIC)
RC_OPS = (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_SEND_WITH_IMM | e.IBV_QP_EX_WITH_SEND_WITH_INV |
          e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
          e.IBV_QP_EX_WITH_RDMA_READ | e.IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
          e.IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | e.IBV_QP_EX_WITH_LOCAL_INV)
WC_FLAGS = (e.IBV_WC_EX_WITH_BYTE_LEN | e.IBV_WC_EX_WITH_IMM | e.IBV_WC_EX_WITH_QP_NUM |
            e.IBV_WC_EX_WITH_SRC_QP | e.IBV_WC_EX_WITH_SLID | e.IBV_WC_EX_WITH_SL |
            e.IBV_WC_EX_WITH_DLID_PATH_BITS | e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
checks = []


def check(name, ok, detail=''):
    checks.append([name, bool(ok), str(detail)[:400]])


def errno_of(fn):
    try:
        fn()
    except PyverbsRDMAError as ex:
        return ex.error_code
    return 0


class Side:
    def __init__(self, name, gid_index, parent):
        self.ctx = Context(name=name)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(port_num=1, index=gid_index)
        self.pd = PD(self.ctx)
        self.dom = ParentDomain(self.ctx, ParentDomainInitAttr(pd=self.pd)) if parent else self.pd
        ca = CqInitAttrEx(cqe=64, wc_flags=WC_FLAGS)
        if parent:
            ca.parent_domain = self.dom
            ca.comp_mask = e.IBV_CQ_INIT_ATTR_MASK_PD
        self.cq = CQEX(self.ctx, ca)
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=2, max_recv_sge=2,
                    max_inline_data=64)
        ia = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap, pd=self.dom,
                          comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                          send_ops_flags=RC_OPS)
        self.qp = QPEx(self.ctx, ia)
        self.mr = MR(self.dom, 1 << 18, ACCESS)

    def connect(self, peer):
        connect_rc(self.qp, ACCESS, peer.qp.qp_num, peer.gid, self.gid_index, rd_atomic=4)

    def poll(self, n, timeout=60.0):
        """n completions through start_poll/next_poll/end_poll and the read functions."""
        out, deadline = [], time.monotonic() + timeout
        cq = self.cq
        while len(out) < n and time.monotonic() < deadline:
            if cq.start_poll(PollCqAttr()) != 0:
                time.sleep(0.0005)
                continue
            while True:
                flags = cq.read_wc_flags()
                out.append({'wr_id': cq.wr_id, 'status': int(cq.status),
                            'opcode': int(cq.read_opcode()), 'vendor_err': cq.read_vendor_err(),
                            'byte_len': cq.read_byte_len(), 'wc_flags': flags,
                            'imm': cq.read_imm_data() if flags & e.IBV_WC_WITH_IMM else None,
                            'qp_num': cq.read_qp_num(), 'src_qp': cq.read_src_qp(),
                            'slid': cq.read_slid(), 'sl': cq.read_sl(),
                            'dlid_path_bits': cq.read_dlid_path_bits(),
                            'ts': cq.read_timestamp()})
                if len(out) >= n or cq.poll_next() != 0:
                    break
            cq.end_poll()
        return out


def be32(v):
    """An immediate as pyverbs reads it back (read_imm_data: the __be32 as a native
    integer; wr_send_imm/wr_rdma_write_imm take it in host order)."""
    return struct.unpack('=I', struct.pack('>I', v))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--dev-a')
    ap.add_argument('--gid-a', type=int)
    ap.add_argument('--dev-b')
    ap.add_argument('--gid-b', type=int)
    a_ = ap.parse_args()

    a = Side(a_.dev_a, a_.gid_a, parent=True)     # QP, CQ, MR of a parent domain
    b = Side(a_.dev_b, a_.gid_b, parent=False)
    a.connect(b)
    b.connect(a)

    # --- query_device_ex, query_rt_values_ex, what create refuses ---
    dx = a.ctx.query_device_ex()
    khz = dx.hca_core_clock
    check('query_device_ex', dx.completion_timestamp_mask == (1 << 64) - 1 and
          khz == 1000000 and
          dx.orig_attr.max_qp == a.ctx.query_device().max_qp and dx.orig_attr.max_qp > 0,
          (dx.completion_timestamp_mask, khz, dx.orig_attr.max_qp))
    r1, r2 = a.ctx.query_rt_values_ex(), b.ctx.query_rt_values_ex()
    check('query_rt_values_ex', r1[0] == 0 and r2[0] == 0 and 0 < r1[1] <= r2[1], (r1, r2))
    rc = errno_of(lambda: CQEX(a.ctx, CqInitAttrEx(
        cqe=4, wc_flags=WC_FLAGS | e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)))
    check('create_cq_ex wallclock EOPNOTSUPP', rc == errno.EOPNOTSUPP, rc)

    def clock():
        return a.ctx.query_rt_values_ex()[1]
    rc = errno_of(lambda: QPEx(a.ctx, QPInitAttrEx(
        qp_type=e.IBV_QPT_UD, scq=a.cq, rcq=a.cq, cap=QPCap(), pd=a.pd,
        comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        send_ops_flags=e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_BIND_MW)))
    check('create_qp_ex UD BIND_MW EOPNOTSUPP', rc == errno.EOPNOTSUPP, rc)

    # --- every RC opcode through ibv_wr_*, twice ---
    for rnd in range(2):
        src = os.urandom(65536)
        a.mr.write(src, len(src), 0)
        b.mr.write(b'\0' * 65536, 65536, 65536)
        rsrc = os.urandom(8192)
        b.mr.write(rsrc, len(rsrc), 0x20000)
        a.mr.write(b'\0' * 8192, 8192, 0x20000)
        b.mr.write(struct.pack('<QQ', 5, 100), 16, 0x30000)
        recv_off = [0x10000, 0x11000, 0x12000, 0x13000]
        for i, off in enumerate(recv_off):
            b.qp.post_recv(RecvWR(wr_id=0x20 + i, num_sge=1, sg=[SGE(b.mr.buf + off, 4096, b.mr.lkey)]))
        x = a.qp
        x.wr_start()
        x.wr_id, x.wr_flags = 0x10, e.IBV_SEND_SIGNALED | e.IBV_SEND_SOLICITED
        x.wr_send()
        x.wr_set_sge_list(2, [SGE(a.mr.buf + 0, 3000, a.mr.lkey), SGE(a.mr.buf + 5000, 1000, a.mr.lkey)])
        x.wr_id, x.wr_flags = 0x11, e.IBV_SEND_SIGNALED
        x.wr_send_imm(0x1000 + rnd)      # pyverbs: host order in
        x.wr_set_inline_data(a.mr.buf + 100, 60)
        x.wr_id, x.wr_flags = 0x12, e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE
        x.wr_send()
        x.wr_set_sge(SGE(a.mr.buf + 200, 48, a.mr.lkey))
        x.wr_id, x.wr_flags = 0x13, e.IBV_SEND_SIGNALED
        x.wr_rdma_write(b.mr.rkey, b.mr.buf + 0x18000)
        x.wr_set_sge(SGE(a.mr.buf + 8192, 20000, a.mr.lkey))
        x.wr_id, x.wr_flags = 0x14, e.IBV_SEND_SIGNALED
        x.wr_rdma_write_imm(b.mr.rkey, b.mr.buf + 0x1f000, 0xbeef00 + rnd)
        x.wr_set_inline_data(a.mr.buf + 300, 64)
        x.wr_id, x.wr_flags = 0x15, e.IBV_SEND_SIGNALED | e.IBV_SEND_FENCE
        x.wr_rdma_read(b.mr.rkey, b.mr.buf + 0x20000)
        x.wr_set_sge(SGE(a.mr.buf + 0x20000, 8192, a.mr.lkey))
        x.wr_id, x.wr_flags = 0x16, e.IBV_SEND_SIGNALED
        x.wr_atomic_cmp_swp(b.mr.rkey, b.mr.buf + 0x30000, 5, 77 + rnd)
        x.wr_set_sge(SGE(a.mr.buf + 0x30000, 8, a.mr.lkey))
        x.wr_id, x.wr_flags = 0x17, e.IBV_SEND_SIGNALED
        x.wr_atomic_fetch_add(b.mr.rkey, b.mr.buf + 0x30008, 3)
        x.wr_set_sge(SGE(a.mr.buf + 0x30008, 8, a.mr.lkey))
        clk0, wall0 = clock(), time.monotonic_ns()
        x.wr_complete()
        aw, bw = a.poll(8), b.poll(4)
        clk1, wall1 = clock(), time.monotonic_ns()
        tag = 'round %d: ' % rnd
        ats, bts = [w['ts'] for w in aw], [w['ts'] for w in bw]
        check(tag + 'timestamps non-decreasing, between the clock reads',
              ats == sorted(ats) and bts == sorted(bts) and
              all(clk0 <= t <= clk1 for t in ats + bts), (clk0, ats, bts, clk1))
        # the device clock is the VM's virtual time, the wall clock the guest's
        # monotonic one: both follow real time under TCG, not tick for tick
        clk_ns = (clk1 - clk0) * 1000000 // khz
        wall_ns = wall1 - wall0
        check(tag + 'clock interval ~ wall time', 0.5 * wall_ns - 5e6 <= clk_ns <=
              1.1 * wall_ns + 5e6, (clk_ns, wall_ns))
        check(tag + 'requester completions',
              [w['wr_id'] for w in aw] == list(range(0x10, 0x18)) and
              all(w['status'] == e.IBV_WC_SUCCESS and w['qp_num'] == a.qp.qp_num for w in aw) and
              [w['opcode'] for w in aw] == [e.IBV_WC_SEND] * 3 + [e.IBV_WC_RDMA_WRITE] * 2 +
              [e.IBV_WC_RDMA_READ, e.IBV_WC_COMP_SWAP, e.IBV_WC_FETCH_ADD] and
              aw[5]['byte_len'] == 8192, aw)
        check(tag + 'responder completions', len(bw) == 4 and
              [w['wr_id'] for w in bw] == [0x20, 0x21, 0x22, 0x23] and
              all(w['status'] == e.IBV_WC_SUCCESS and w['src_qp'] == a.qp.qp_num and
                  w['qp_num'] == b.qp.qp_num and w['slid'] == 0 and w['sl'] == 0 and
                  w['dlid_path_bits'] == 0 for w in bw) and
              [w['byte_len'] for w in bw][:3] == [4000, 60, 48] and
              bw[0]['wc_flags'] == 0 and bw[1]['wc_flags'] == e.IBV_WC_WITH_IMM and
              bw[1]['imm'] == be32(0x1000 + rnd) and
              bw[3]['opcode'] == e.IBV_WC_RECV_RDMA_WITH_IMM and bw[3]['imm'] == be32(0xbeef00 + rnd),
              bw)
        got = b.mr.read(4000, 0x10000)
        check(tag + 'SEND, 2 SGEs', got == src[0:3000] + src[5000:6000])
        check(tag + 'SEND_WITH_IMM, set_inline_data', b.mr.read(60, 0x11000) == src[100:160])
        check(tag + 'SEND, INLINE + set_sge', b.mr.read(48, 0x12000) == src[200:248])
        check(tag + 'RDMA_WRITE', b.mr.read(20000, 0x18000) == src[8192:28192])
        check(tag + 'RDMA_WRITE_WITH_IMM inline', b.mr.read(64, 0x1f000) == src[300:364])
        check(tag + 'RDMA_READ', a.mr.read(8192, 0x20000) == rsrc)
        old_cs, old_fa = struct.unpack('<QQ', a.mr.read(16, 0x30000))
        new_cs, new_fa = struct.unpack('<QQ', b.mr.read(16, 0x30000))
        check(tag + 'atomics', (old_cs, old_fa, new_cs, new_fa) == (5, 100, 77 + rnd, 103),
              (old_cs, old_fa, new_cs, new_fa))

    # --- an error completion through the extended CQ ---
    x = a.qp
    x.wr_start()
    x.wr_id, x.wr_flags = 0x40, e.IBV_SEND_SIGNALED
    x.wr_local_inv(a.mr.lkey)           # an ordinary MR: not invalidatable
    x.wr_id = 0x41
    x.wr_send()
    x.wr_set_sge(SGE(a.mr.buf, 8, a.mr.lkey))
    x.wr_complete()
    aw = a.poll(2)
    check('LOCAL_INV of an ordinary MR', len(aw) == 2 and aw[0]['wr_id'] == 0x40 and
          aw[0]['status'] == e.IBV_WC_LOC_QP_OP_ERR and aw[0]['opcode'] == e.IBV_WC_LOCAL_INV and
          aw[0]['vendor_err'] != 0 and aw[1]['wr_id'] == 0x41 and
          aw[1]['status'] == e.IBV_WC_WR_FLUSH_ERR, aw)
    print('RESULT ' + json.dumps({'checks': checks}), flush=True)


main()
'''


@BOTH
def test_rc_pingpong_new_send(topo):
    """ibv_rc_pingpong -N (ibv_wr_* post API) -c (buffer validation); 4 KiB messages and
    32-byte ones, which go inline (IBV_SEND_INLINE in wr_flags, ibv_wr_set_sge)."""
    s, c = pair(topo)
    for size in (4096, 32):
        port = next_port()
        common = '-N -c -p %d -s %d -n 100' % (port, size)
        srv, cli = client_server(s.vm, 'ibv_rc_pingpong -d %s -g %d %s' % (s.ibdev, s.gid, common),
                                 c.vm, 'ibv_rc_pingpong -d %s -g %d %s %s' % (c.ibdev, c.gid, common, s.ip),
                                 port)
        check_pair(srv, cli)
        assert '100 iters in' in cli.output, cli.output
        assert '100 iters in' in srv.output, srv.output


@BOTH
def test_rc_pingpong_timestamps(topo):
    """ibv_rc_pingpong -t: CQ of completion timestamps (ibv_create_cq_ex,
    ibv_wc_read_completion_ts).  It prints the max/min/average delta between
    receive completions in clock ticks: each must be positive (a timestamp going
    back would show as a wrapped delta of ~2^64) and the max no more than the
    whole run's wall time in ticks (hca_core_clock 1000000 kHz: ns)."""
    s, c = pair(topo)
    port = next_port()
    iters = 200
    common = '-t -p %d -s 1024 -n %d' % (port, iters)
    srv, cli = client_server(s.vm, 'ibv_rc_pingpong -d %s -g %d %s' % (s.ibdev, s.gid, common),
                             c.vm, 'ibv_rc_pingpong -d %s -g %d %s %s' % (c.ibdev, c.gid, common, s.ip),
                             port)
    check_pair(srv, cli)
    for out in (srv.output, cli.output):
        m = re.search(r'%d iters in ([0-9.]+) seconds' % iters, out)
        assert m, out
        run_ticks = (float(m.group(1)) + 0.01) * 1e9     # printed to 10 ms
        got = {k: float(v) for k, v in re.findall(
            r'^(Max|Min|Average) receive completion clock cycles = ([0-9.]+)$', out, re.M)}
        assert set(got) == {'Max', 'Min', 'Average'}, out
        assert 0 < got['Min'] <= got['Average'] <= got['Max'] <= run_ticks, (got, run_ticks)


@BOTH
def test_devinfo_ex(topo):
    """ibv_devinfo -v: the ibv_query_device_ex part (the completion timestamp mask and
    the core clock of ABI 1.7)."""
    s, _ = pair(topo)
    out = s.vm.run('ibv_devinfo -v -d %s' % s.ibdev, timeout=60).output
    assert re.search(r'completion timestamp_mask:\s+0xffffffffffffffff', out), out
    assert re.search(r'hca_core_clock:\s+1000000kHZ', out), out
    m = re.search(r'device_cap_flags_ex:\s*0x([0-9A-Fa-f]+)', out)
    assert m, out
    assert re.search(r'max_qp:\s*[1-9]', out), out


@T1
def test_pyverbs_ext_verbs(topo):
    """The pyverbs program: CQEX (with completion timestamps) + QPEx, every RC ibv_wr_*
    opcode, payloads checked, the timestamps against ibv_query_rt_values_ex and the wall
    clock, a parent domain's QP/CQ/MR, an error completion, the EOPNOTSUPP answers."""
    s, c = pair(topo)
    assert s.vm is c.vm, 'the pyverbs program needs both endpoints in one VM (T1)'
    res = run_script(c.vm, SCRIPT, GUEST_SCRIPT, '--dev-a %s --gid-a %d --dev-b %s --gid-b %d'
                     % (c.ibdev, c.gid, s.ibdev, s.gid))
    assert_checks(res, 20)
