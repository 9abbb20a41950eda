#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One RDMA WRITE between the two qrnic ports of a T1 guest, in one program.

    python3 first_write.py [--src qrnic_1] [--dst qrnic_0] [--size 8192] [--ops write,read] [--count N]

Every step a verbs application goes through, without the usual socket
exchange (both QPs live in this process, so each side's QP number, PSN and
GID are simply read from the other object):

  1. open the devices, allocate a protection domain (PD) on each;
  2. register memory (MR): a source buffer on the requester, a target on
     the responder, which allows REMOTE_WRITE and hands out an rkey;
  3. create a completion queue (CQ) and a reliable-connected queue pair
     (QP) on each side;
  4. move both QPs RESET -> INIT -> RTR (ready to receive: the peer's QPN,
     PSN and GID) -> RTS (ready to send: our own PSN, retry settings);
  5. post one RDMA WRITE work request (local address + lkey, remote
     address + rkey), wait for its completion;
  6. compare the two buffers.

--ops write,read,... does these operations in this order on the same QP
(read: an RDMA READ, the requester fetches the responder's buffer); --count N
repeats the list N times.  Each operation waits for its completion.

Docs: docs/tutorial/02-first-write.md.  Needs python3-pyverbs (in the guest).
"""
import argparse
import os

from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR
import pyverbs.enums as e

GID_INDEX = 1          # the RoCE v2 GID made from the port's IPv4 address


class Side:
    def __init__(self, dev, size, access, spare_qps=0):
        self.ctx = Context(name=dev)                                # 1
        self.pd = PD(self.ctx)
        self.mr = MR(self.pd, size, access)                         # 2
        self.cq = CQ(self.ctx, 16)                                  # 3
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        # (unused QPs, so that the two devices' QPs get different numbers, which keeps the
        # QPNs of lesson 4's trace apart; the trace records also name their device)
        self.spare = [QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
                      for _ in range(spare_qps)]
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
        self.gid = self.ctx.query_gid(1, GID_INDEX)
        self.psn = int.from_bytes(os.urandom(3), 'little')
        print('%s: QPN %d, PSN %d, GID %s, MR addr %#x lkey %#x rkey %#x'
              % (dev, self.qp.qp_num, self.psn, self.gid, self.mr.buf, self.mr.lkey, self.mr.rkey))

    def connect(self, peer):                                        # 4
        a = QPAttr(port_num=1)
        a.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
        self.qp.to_init(a)
        a = QPAttr(port_num=1)
        a.path_mtu = e.IBV_MTU_1024
        a.dest_qp_num = peer.qp.qp_num
        a.rq_psn = peer.psn
        a.max_dest_rd_atomic = 1
        a.min_rnr_timer = 12
        a.ah_attr = AHAttr(port_num=1, is_global=1,
                           gr=GlobalRoute(dgid=peer.gid, sgid_index=GID_INDEX, hop_limit=64))
        self.qp.to_rtr(a)
        a.sq_psn = self.psn
        a.timeout = 14            # 4.096 us * 2^14 = 67 ms before a retransmission
        a.retry_cnt = 7
        a.rnr_retry = 7
        a.max_rd_atomic = 1
        self.qp.to_rts(a)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--src', default='qrnic_1', help='requester device (default qrnic_1)')
    p.add_argument('--dst', default='qrnic_0', help='responder device (default qrnic_0)')
    p.add_argument('--size', type=int, default=8192)
    p.add_argument('--ops', default='write', help='comma-separated: write, read (default write)')
    p.add_argument('--count', type=int, default=1, help='repeat --ops this many times')
    a = p.parse_args()
    ops = a.ops.split(',')
    if set(ops) - {'write', 'read'}:
        p.error('--ops takes write and read')

    src = Side(a.src, a.size, e.IBV_ACCESS_LOCAL_WRITE)
    dst = Side(a.dst, a.size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ,
               spare_qps=1)
    src.connect(dst)
    dst.connect(src)

    ok = True
    for i, op in enumerate(ops * a.count):
        a.read = op == 'read'
        data = os.urandom(a.size)
        # WRITE: our buffer -> the responder's; READ: the responder's -> ours
        (src if not a.read else dst).mr.write(data, a.size, 0)
        (dst if not a.read else src).mr.write(bytes(a.size), a.size, 0)

        wr = SendWR(wr_id=42 + i, opcode=e.IBV_WR_RDMA_READ if a.read else e.IBV_WR_RDMA_WRITE,   # 5
                    num_sge=1, sg=[SGE(src.mr.buf, a.size, src.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(dst.mr.rkey, dst.mr.buf)
        src.qp.post_send(wr)
        while True:
            n, wcs = src.cq.poll()
            if n:
                break
        wc = wcs[0]
        print('completion: wr_id %d, status %d (%s), opcode %d' % (
            wc.wr_id, wc.status, 'success' if wc.status == e.IBV_WC_SUCCESS else 'ERROR', wc.opcode))

        same = (dst if not a.read else src).mr.read(a.size, 0) == data                     # 6
        if a.read:
            print('%d bytes read by %s from %s: %s' % (a.size, a.src, a.dst, 'identical' if same else 'DIFFERENT'))
        else:
            print('%d bytes written from %s to %s: %s' % (a.size, a.src, a.dst, 'identical' if same else 'DIFFERENT'))
        ok = ok and same and wc.status == e.IBV_WC_SUCCESS
    return 0 if ok else 1


if __name__ == '__main__':
    raise SystemExit(main())
