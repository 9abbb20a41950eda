#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One SEND between the two qrnic ports of a T1 guest, its receive posted late.

    python3 send_recv.py [--src qrnic_1] [--dst qrnic_0] [--size 4096]
                         [--recv-after 200] [--min-rnr-timer 12] [--rnr-retry 7]

Like first_write.py (both QPs in this process, no socket exchange), but
two-sided: the requester posts a SEND, and the responder's receive WQE --
which says where the data goes -- is posted only --recv-after milliseconds
later ('never': not at all; 0: before the SEND, as a correct program does).
Until then every SEND that arrives finds the receive queue empty: the
responder's NIC answers with an RNR NAK carrying its min_rnr_timer, the
requester's NIC waits that long and sends again, using up one of
--rnr-retry retries each time (7 = retry for ever).  When they run out the
SEND completes with status 13, RNR_RETRY_EXC_ERR.

Prints both completions; `rdma statistic` shows the RNR counters.

Docs: docs/tutorial/08-send-recv.md.  Needs python3-pyverbs (in the guest).
"""
import argparse
import os
import time

from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SGE, SendWR
import pyverbs.enums as e

GID_INDEX = 1          # the RoCE v2 GID made from the port's IPv4 address


class Side:
    def __init__(self, dev, size):
        self.ctx = Context(name=dev)
        self.pd = PD(self.ctx)
        self.mr = MR(self.pd, size, e.IBV_ACCESS_LOCAL_WRITE)
        self.cq = CQ(self.ctx, 16)
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
        self.gid = self.ctx.query_gid(1, GID_INDEX)
        self.psn = int.from_bytes(os.urandom(3), 'little')

    def connect(self, peer, min_rnr_timer, rnr_retry):
        a = QPAttr(port_num=1)
        a.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
        self.qp.to_init(a)
        a = QPAttr(port_num=1)
        a.path_mtu = e.IBV_MTU_1024
        a.dest_qp_num = peer.qp.qp_num
        a.rq_psn = peer.psn
        a.max_dest_rd_atomic = 1
        a.min_rnr_timer = min_rnr_timer     # what OUR RNR NAKs tell the peer to wait
        a.ah_attr = AHAttr(port_num=1, is_global=1,
                           gr=GlobalRoute(dgid=peer.gid, sgid_index=GID_INDEX, hop_limit=64))
        self.qp.to_rtr(a)
        a.sq_psn = self.psn
        a.timeout = 14
        a.retry_cnt = 7
        a.rnr_retry = rnr_retry             # how many RNR NAKs WE accept (7: for ever)
        a.max_rd_atomic = 1
        self.qp.to_rts(a)


def poll(cq, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        n, wcs = cq.poll()
        if n:
            return wcs[0]
    return None


def number(lo, hi):
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f'{v} is not in {lo}..{hi}')
        return v
    return parse


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--src', default='qrnic_1', help='requester device (default qrnic_1)')
    p.add_argument('--dst', default='qrnic_0', help='responder device (default qrnic_0)')
    p.add_argument('--size', type=number(1, 1 << 20), default=4096)
    p.add_argument('--recv-after', default='200', metavar='MS',
                   help="post the receive WQE this many ms after the SEND, or 'never' (default 200)")
    p.add_argument('--min-rnr-timer', type=number(0, 31), default=12, metavar='CODE',
                   help="responder's min_rnr_timer, IBTA code (12 = 0.64 ms, as perftest)")
    p.add_argument('--rnr-retry', type=number(0, 7), default=7, metavar='N',
                   help='requester rnr_retry, 7 = for ever (default 7)')
    a = p.parse_args()
    if a.recv_after != 'never':
        try:
            after = float(a.recv_after)
            if after < 0:
                raise ValueError
        except ValueError:
            p.error(f"--recv-after: '{a.recv_after}' is not a number of ms or 'never'")
    elif a.rnr_retry == 7:
        p.error('--recv-after never with --rnr-retry 7 would retry for ever; give --rnr-retry 0..6')

    src, dst = Side(a.src, a.size), Side(a.dst, a.size)
    src.connect(dst, a.min_rnr_timer, a.rnr_retry)
    dst.connect(src, a.min_rnr_timer, a.rnr_retry)
    data = os.urandom(a.size)
    src.mr.write(data, a.size, 0)
    recv = RecvWR(wr_id=7, num_sge=1, sg=[SGE(dst.mr.buf, a.size, dst.mr.lkey)])
    if a.recv_after != 'never' and after == 0:
        dst.qp.post_recv(recv)
        print('receive WQE posted before the SEND')
    src.qp.post_send(SendWR(wr_id=42, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[SGE(src.mr.buf, a.size, src.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED))
    print(f'SEND of {a.size} bytes posted on {a.src}')
    if a.recv_after != 'never' and after > 0:
        time.sleep(after / 1000)
        dst.qp.post_recv(recv)
        print(f'receive WQE posted on {a.dst} {after:g} ms later')
    wc = poll(src.cq, 60)
    if wc is None:
        print('no send completion within 60 s')
        return 1
    names = {0: 'success', 12: 'transport retry counter exceeded', 13: 'RNR retry counter exceeded'}
    print('send completion: wr_id %d, status %d (%s)' % (wc.wr_id, wc.status, names.get(wc.status, 'error')))
    ok = wc.status == e.IBV_WC_SUCCESS
    if a.recv_after != 'never':
        rwc = poll(dst.cq, 10)
        if rwc is None:
            print('no receive completion')
            return 1
        same = dst.mr.read(a.size, 0) == data
        print('receive completion: wr_id %d, status %d, %d bytes: %s'
              % (rwc.wr_id, rwc.status, rwc.byte_len, 'identical' if same else 'DIFFERENT'))
        ok = ok and same and rwc.status == e.IBV_WC_SUCCESS
    return 0 if ok else 1


if __name__ == '__main__':
    raise SystemExit(main())
