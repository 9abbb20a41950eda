# SPDX-License-Identifier: GPL-2.0-or-later
"""Interop helpers: qrnic against Linux Soft-RoCE (rdma_rxe) in guests.

Used by tests/test_guest_interop.py, bench/guest_vs_rxe and the tutorial's
lab (docs/tutorial/lab).  Host side only (the guest gets VERBS_CHECK, a
pyverbs program, through the agent).  See docs/interop.md.

What it adds to scripts/qrnic_vm (without changing it):

* Lab(name, ...): a Topology with
    - name 'T4': two VMs with virtio-net + rdma_rxe on the same kind of
      `-netdev dgram` link as T2/T3 (rxe <-> rxe, the benchmark's baseline);
    - pcap=True: `-device qrnic,...,pcap=<rundir>/vmN-qrnicK.pcap`, one file
      per device (the runner's qrnic_props is one string for every device,
      so it cannot name one file each), and for virtio-net NICs a QEMU
      `filter-dump` into <rundir>/vmN-vnetK.pcap;
    - profile='teach'|'cx5-100g'|...: `profile=` on every qrnic device;
    - trace=True: `-trace qrnic_event,file=<rundir>/vmN-events.log`;
    - dev_props='k=v,...': more -device qrnic properties.
  Device ids are the runner's: qrnic-0, qrnic-1, ... (nic index in the VM),
  so the QOM path of a device is /machine/peripheral/qrnic-K.
* qmp(vm, command, **args), fault(vm, rule, dev), qom_stats(vm, dev).
* VERBS_CHECK + verbs_check(): RC WRITE/READ/SEND/atomics between two RDMA
  devices with every byte checked (SHA-256 on both sides).
* perftest(): client/server perftest run with the interop options.
* read_pcap(), roce_frames(): RoCEv2 frames of a capture, decoded.
* serve()/LabClient: the tutorial lab daemon (keeps a Lab up; commands
  arrive over a unix socket).
"""
import base64
import json
import os
import shlex
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
if os.path.join(REPO, 'scripts') not in sys.path:
    sys.path.insert(0, os.path.join(REPO, 'scripts'))

from qrnic_vm import VM, Topology, VMError  # noqa: E402
from qrnic_vm.qmp import Qmp, QmpError  # noqa: E402,F401  (QmpError: for callers too)
from qrnic_vm.tools import ListenTimeout, client_server, next_port, perftest_table  # noqa: E402,F401

LAB_TOPOLOGIES = ('T1', 'T2', 'T3', 'T4')
QRNIC_FAULT = os.path.join(REPO, 'scripts', 'qrnic-fault')


# ---- the guest program ---------------------------------------------------------------
# Installed as /root/verbs_check.py by install_verbs_check(); run by verbs_check().
VERBS_CHECK = r'''#!/usr/bin/python3
"""verbs_check: RC data transfers between two RDMA devices, every byte checked.

    python3 verbs_check.py server -d DEV [-x GIDIDX] [-p PORT]
    python3 verbs_check.py client -d DEV [-x GIDIDX] [-p PORT] [--size N] SERVER_IP

Out-of-band exchange over TCP (QPN, PSN, GID, MTU, rkeys, addresses, device
limits), then the client drives these steps and the server checks each:

  write       RDMA WRITE of a random buffer (SIZE bytes) into the server's
              buffer; the server compares SHA-256 of what arrived
  write-odd   RDMA WRITE of 3 SGEs at odd offsets and odd lengths
  write-imm   RDMA WRITE with immediate (the server's receive CQE carries it)
  read        RDMA READ of the server's random buffer; the client compares
              SHA-256 with the server's
  read-odd    RDMA READ at an odd offset, odd length
  send        SEND of a random buffer into the server's posted receive
  atomic      FETCH_AND_ADD, then CMP_AND_SWAP (hit), then CMP_AND_SWAP
              (miss), on an 8-byte aligned word: returned values and the final
              word checked on both sides
  zero        zero-length RDMA WRITE and zero-length SEND
  rnr         SEND (1000 bytes, one packet) while the server has no receive
              posted: the server posts one 0.3 s later; the requester must get
              through RNR NAKs (rnr_retry 7) and the data must arrive
  rnr-multi   (--rnr-multi) the same with a SEND of two packets
then, with --error, one step that ends the connection (the QP goes to ERROR):
  misaligned  FETCH_AND_ADD on an address that is not 8-byte aligned; the
              completion status is reported (IB: remote invalid request)
  access      RDMA WRITE past the end of the server's MR (IB: remote access
              error)
  rkey        RDMA READ with a wrong rkey (IB: remote access error)

The path MTU is the smaller active MTU of the two ports, the initiator depth
(max_rd_atomic) the smaller of the two devices' limits.  Prints one JSON line
{"role", "ok", "steps": {name: {"ok", ...}}} and exits 0 when every step is
correct.  Standard library + python3-pyverbs.
"""
import argparse
import hashlib
import json
import os
import random
import socket
import struct
import sys
import time

from pyverbs.addr import AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SGE, SendWR
from pyverbs.pyverbs_error import PyverbsRDMAError
import pyverbs.enums as e

ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
          | e.IBV_ACCESS_REMOTE_ATOMIC)
IMM = 0x1234abcd


def sha(b):
    return hashlib.sha256(b).hexdigest()


class Chan:
    """JSON lines over a TCP socket."""

    def __init__(self, sock):
        self.s = sock
        self.f = sock.makefile('rwb')

    def send(self, obj):
        self.f.write(json.dumps(obj).encode() + b'\n')
        self.f.flush()

    def recv(self):
        line = self.f.readline()
        if not line:
            raise EOFError('peer closed the connection')
        return json.loads(line)


class Side:
    def __init__(self, dev, gid_index, size, seed):
        self.ctx = Context(name=dev)
        self.dev = dev
        self.gidx = gid_index
        attr = self.ctx.query_device()
        port = self.ctx.query_port(1)
        self.max_rd = min(attr.max_qp_rd_atom, attr.max_qp_init_rd_atom)
        self.mtu = port.active_mtu
        self.gid = str(self.ctx.query_gid(1, gid_index))
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256)
        cap = QPCap(max_send_wr=64, max_recv_wr=64, max_send_sge=4, max_recv_sge=4)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
        self.psn = random.Random(seed).randrange(1 << 24)
        self.size = size
        rnd = random.Random(seed ^ 0x5a5a)
        # wbuf: target of the peer's WRITEs; rbuf: source of the peer's READs / our data;
        # lbuf: our receive/READ landing zone; atom: 64 bytes, word 0 the atomic target,
        # word 1.. the atomic results
        self.wbuf = MR(self.pd, size, ACCESS)
        self.rbuf = MR(self.pd, size, ACCESS)
        self.lbuf = MR(self.pd, size, ACCESS)
        self.atom = MR(self.pd, 64, ACCESS)
        self.rdata = rnd.randbytes(size)
        self.rbuf.write(self.rdata, size, 0)
        self.wbuf.write(bytes(size), size, 0)
        self.lbuf.write(bytes(size), size, 0)
        self.atom0 = rnd.getrandbits(63)
        self.atom.write(struct.pack('<Q', self.atom0) + bytes(56), 64, 0)

    def info(self):
        return {'qpn': self.qp.qp_num, 'psn': self.psn, 'gid': self.gid, 'mtu': self.mtu,
                'max_rd': self.max_rd, 'dev': self.dev,
                'wbuf': [self.wbuf.buf, self.wbuf.rkey], 'rbuf': [self.rbuf.buf, self.rbuf.rkey],
                'atom': [self.atom.buf, self.atom.rkey], 'rsha': sha(self.rdata),
                'atom0': self.atom0, 'size': self.size}

    def connect(self, peer):
        self.peer = peer
        mtu = min(self.mtu, peer['mtu'])
        rd = min(self.max_rd, peer['max_rd'])
        a = QPAttr(port_num=1)
        a.qp_access_flags = ACCESS
        a.pkey_index = 0
        self.qp.to_init(a)
        a = QPAttr(port_num=1)
        a.path_mtu = mtu
        a.dest_qp_num = peer['qpn']
        a.rq_psn = peer['psn']
        a.max_dest_rd_atomic = rd
        a.min_rnr_timer = 12
        gr = GlobalRoute(dgid=GID(peer['gid']), sgid_index=self.gidx, hop_limit=64)
        a.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
        self.qp.to_rtr(a)
        a.sq_psn = self.psn
        a.timeout = 14
        a.retry_cnt = 7
        a.rnr_retry = 7
        a.max_rd_atomic = rd
        self.qp.to_rts(a)
        return {'path_mtu': 128 << mtu, 'max_rd_atomic': rd}

    def post_recv(self, n=4):
        for i in range(n):
            self.qp.post_recv(RecvWR(wr_id=100 + i, num_sge=1, sg=[SGE(self.lbuf.buf, self.size, self.lbuf.lkey)]))

    def poll(self, n=1, timeout=60):
        got = []
        deadline = time.monotonic() + timeout
        while len(got) < n:
            k, wcs = self.cq.poll(n - len(got))
            if k > 0:
                got += wcs[:k]
                continue
            if time.monotonic() > deadline:
                raise TimeoutError('no completion within %ss (%d of %d)' % (timeout, len(got), n))
            time.sleep(0.0005)
        return got

    def post(self, opcode, sges, remote=None, atomic=None, imm=None, wait=True):
        wr = SendWR(wr_id=1, opcode=opcode, num_sge=len(sges),
                    sg=[SGE(m.buf + off, ln, m.lkey) for m, off, ln in sges],
                    send_flags=e.IBV_SEND_SIGNALED)
        if remote is not None:
            wr.set_wr_rdma(remote[1], remote[0])
        if atomic is not None:
            (addr, rkey), cmp_add, swap = atomic
            wr.set_wr_atomic(rkey, addr, cmp_add, swap)
        if imm is not None:
            wr.imm_data = imm
        self.qp.post_send(wr)
        if not wait:
            return None
        wc = self.poll(1)[0]
        return wc.status, wc.opcode


def wc_ok(st):
    return st == e.IBV_WC_SUCCESS


def run_server(a):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('0.0.0.0', a.port))
    ls.listen(1)
    print('listening on %d' % a.port, file=sys.stderr, flush=True)
    conn, _ = ls.accept()
    ch = Chan(conn)
    peer = ch.recv()
    s = Side(a.dev, a.gid, peer['size'], a.seed ^ 1)
    conn_info = s.connect(peer)
    ch.send(s.info())
    steps = {}
    while True:
        m = ch.recv()
        step = m['step']
        if step == 'done':
            break
        try:
            if step in ('write', 'write-odd'):
                got = s.wbuf.read(m['len'], m['off'])
                r = {'ok': sha(got) == m['sha'], 'sha': sha(got)}
            elif step in ('write-imm', 'send'):
                wc = s.poll(1)[0]
                r = {'wc_status': wc.status, 'wc_opcode': wc.opcode, 'byte_len': wc.byte_len}
                ok = wc_ok(wc.status)
                if step == 'write-imm':
                    r['imm'] = socket.ntohl(wc.imm_data) if wc.wc_flags & e.IBV_WC_WITH_IMM else None
                    got = s.wbuf.read(m['len'], m['off'])
                    ok = ok and wc.opcode == e.IBV_WC_RECV_RDMA_WITH_IMM and r['imm'] == m['imm']
                else:
                    got = s.lbuf.read(m['len'], 0)
                    ok = ok and wc.opcode == e.IBV_WC_RECV and wc.byte_len == m['len']
                r['ok'] = ok and sha(got) == m['sha']
                r['sha'] = sha(got)
            elif step == '_post_recv':
                s.post_recv(m['n'])
                r = {'ok': True}
            elif step == 'zero':
                wc = s.poll(1)[0]
                r = {'ok': wc_ok(wc.status) and wc.opcode == e.IBV_WC_RECV and wc.byte_len == 0,
                     'wc_status': wc.status, 'byte_len': wc.byte_len}
            elif step in ('rnr', 'rnr-multi'):
                time.sleep(m['delay'])
                s.post_recv(1)
                wc = s.poll(1, timeout=20)[0]
                got = s.lbuf.read(m['len'], 0)
                r = {'ok': wc_ok(wc.status) and wc.byte_len == m['len'] and sha(got) == m['sha'],
                     'wc_status': wc.status, 'byte_len': wc.byte_len}
            elif step.startswith('error-'):
                time.sleep(0.5)
                n, wcs = s.cq.poll(4)
                r = {'ok': True, 'server_wcs': [(w.status, w.opcode) for w in wcs[:n]] if n > 0 else []}
            elif step == 'read-odd':
                r = {'ok': True, 'sha': sha(s.rdata[m['off']:m['off'] + m['len']])}
            elif step == 'atomic':
                v = struct.unpack('<Q', s.atom.read(8, 0))[0]
                r = {'ok': v == m['final'], 'final': v}
            else:
                r = {'ok': True}
        except Exception as ex:     # report, keep serving
            r = {'ok': False, 'error': '%s: %s' % (type(ex).__name__, ex)}
        if not step.startswith('_'):
            steps[step] = r
        ch.send(r)
    ok = all(v['ok'] for v in steps.values())
    print(json.dumps({'role': 'server', 'dev': a.dev, 'ok': ok, 'conn': conn_info, 'steps': steps}))
    return 0 if ok else 1


def run_client(a):
    sock = socket.create_connection((a.server, a.port), timeout=120)
    sock.settimeout(None)
    ch = Chan(sock)
    c = Side(a.dev, a.gid, a.size, a.seed ^ 2)
    ch.send(c.info())
    peer = ch.recv()
    conn_info = c.connect(peer)
    conn_mtu = min(c.mtu, peer['mtu'])
    size = a.size
    src = random.Random(a.seed ^ 3).randbytes(size)
    c.rbuf.write(src, size, 0)           # our rbuf doubles as the source of WRITE/SEND
    steps = {}

    def check(step, local, **m):
        m['step'] = step
        ch.send(m)
        r = ch.recv()
        r.update(local)
        r['ok'] = r['ok'] and local.get('ok', True)
        steps[step] = r

    # WRITE of the whole random buffer
    st, _ = c.post(e.IBV_WR_RDMA_WRITE, [(c.rbuf, 0, size)], remote=peer['wbuf'])
    check('write', {'ok': wc_ok(st), 'wc_status': st}, off=0, len=size, sha=sha(src))
    # WRITE from 3 SGEs at odd offsets, odd lengths, to an odd remote offset
    l1, l2, l3 = 1001, 2999, max(1, min(size // 3, 5003))
    pieces = [(c.rbuf, 7, l1), (c.rbuf, 7 + l1 + 13, l2), (c.rbuf, size - l3, l3)]
    data = b''.join(src[o:o + ln] for _, o, ln in pieces)
    roff = 3
    st, _ = c.post(e.IBV_WR_RDMA_WRITE, pieces, remote=(peer['wbuf'][0] + roff, peer['wbuf'][1]))
    check('write-odd', {'ok': wc_ok(st), 'wc_status': st}, off=roff, len=len(data), sha=sha(data))
    ch.send({'step': '_post_recv', 'n': 2})       # for write-imm and send
    ch.recv()
    # WRITE with immediate (consumes a receive at the server)
    ln = min(size, 4096 + 5)
    data = src[size - ln:]
    st, _ = c.post(e.IBV_WR_RDMA_WRITE_WITH_IMM, [(c.rbuf, size - ln, ln)],
                   remote=(peer['wbuf'][0] + 64, peer['wbuf'][1]), imm=socket.htonl(IMM))
    check('write-imm', {'ok': wc_ok(st), 'wc_status': st}, off=64, len=ln, sha=sha(data), imm=IMM)
    # READ of the server's random buffer
    st, _ = c.post(e.IBV_WR_RDMA_READ, [(c.lbuf, 0, size)], remote=peer['rbuf'])
    got = c.lbuf.read(size, 0)
    check('read', {'ok': wc_ok(st) and sha(got) == peer['rsha'], 'wc_status': st, 'local_sha': sha(got)})
    # READ at an odd remote offset, odd length, into an odd local offset
    ro, ln = 5, max(1, size - 11)
    c.lbuf.write(bytes(size), size, 0)
    st, _ = c.post(e.IBV_WR_RDMA_READ, [(c.lbuf, 1, ln)], remote=(peer['rbuf'][0] + ro, peer['rbuf'][1]))
    got = c.lbuf.read(ln, 1)
    # the server sends the SHA-256 of that slice of its buffer
    check('read-odd', {'ok': wc_ok(st), 'wc_status': st, 'local_sha': sha(got)}, off=ro, len=ln)
    steps['read-odd']['ok'] &= steps['read-odd'].get('sha') == sha(got)
    # SEND
    ln = min(size, 3 * 1024 + 17)
    st, _ = c.post(e.IBV_WR_SEND, [(c.rbuf, 0, ln)])
    check('send', {'ok': wc_ok(st), 'wc_status': st}, len=ln, sha=sha(src[:ln]))
    # atomics on the server's word 0; results into our atom words 1..3
    a0, add, swap = peer['atom0'], 0x1000000001, random.Random(a.seed).getrandbits(64)
    ok = True
    st1, _ = c.post(e.IBV_WR_ATOMIC_FETCH_AND_ADD, [(c.atom, 8, 8)], atomic=(peer['atom'], add, 0))
    st2, _ = c.post(e.IBV_WR_ATOMIC_CMP_AND_SWP, [(c.atom, 16, 8)], atomic=(peer['atom'], (a0 + add) & (2**64 - 1), swap))
    st3, _ = c.post(e.IBV_WR_ATOMIC_CMP_AND_SWP, [(c.atom, 24, 8)], atomic=(peer['atom'], a0, 7))
    r1, r2, r3 = struct.unpack('<QQQ', c.atom.read(24, 8))
    want = (a0, (a0 + add) & (2**64 - 1), swap)
    ok = all(wc_ok(x) for x in (st1, st2, st3)) and (r1, r2, r3) == want
    check('atomic', {'ok': ok, 'returned': [r1, r2, r3], 'expected': list(want),
                     'wc_status': [st1, st2, st3]}, final=swap)
    # zero-length WRITE (to an address that does not matter) and SEND
    ch.send({'step': '_post_recv', 'n': 1})
    ch.recv()
    # (pyverbs wants one SGE: one of length 0)
    st1, _ = c.post(e.IBV_WR_RDMA_WRITE, [(c.rbuf, 0, 0)], remote=(0, peer['wbuf'][1]))
    st2, _ = c.post(e.IBV_WR_SEND, [(c.rbuf, 0, 0)])
    check('zero', {'ok': wc_ok(st1) and wc_ok(st2), 'wc_status': [st1, st2]})
    # RNR: SEND with no receive posted; the server posts one after 0.3 s.  One packet
    # (1000 bytes), and with --rnr-multi also a SEND of 2 packets at the path MTU
    rnr_steps = [('rnr', 1000)]
    if a.rnr_multi:
        rnr_steps.append(('rnr-multi', min(size, (128 << conn_mtu) + 500)))
    for name, ln in rnr_steps:
        t0 = time.monotonic()
        c.post(e.IBV_WR_SEND, [(c.rbuf, 11, ln)], wait=False)
        ch.send({'step': name, 'delay': 0.3, 'len': ln, 'sha': sha(src[11:11 + ln])})
        r = ch.recv()
        try:
            wc = c.poll(1)[0]
            r['client_wc_status'] = wc.status
            r['ok'] = r['ok'] and wc_ok(wc.status)
        except TimeoutError as ex:
            r.update({'ok': False, 'error': str(ex)})
        r['seconds'] = round(time.monotonic() - t0, 3)
        steps[name] = r
        if not r['ok']:
            break
    if a.error and all(v['ok'] for v in steps.values()):
        # one step that breaks the connection: report the completion status
        try:
            if a.error == 'misaligned':
                want = e.IBV_WC_REM_INV_REQ_ERR
                wc_st = c.post(e.IBV_WR_ATOMIC_FETCH_AND_ADD, [(c.atom, 8, 8)],
                               atomic=((peer['atom'][0] + 4, peer['atom'][1]), 1, 0))[0]
            elif a.error == 'access':
                want = e.IBV_WC_REM_ACCESS_ERR
                wc_st = c.post(e.IBV_WR_RDMA_WRITE, [(c.rbuf, 0, 64)],
                               remote=(peer['wbuf'][0] + size - 32, peer['wbuf'][1]))[0]
            else:
                want = e.IBV_WC_REM_ACCESS_ERR
                wc_st = c.post(e.IBV_WR_RDMA_READ, [(c.lbuf, 0, 64)],
                               remote=(peer['rbuf'][0], peer['rbuf'][1] ^ 0x5a5a00))[0]
            outcome = 'wc %d' % wc_st
        except PyverbsRDMAError as ex:
            # refused by the local provider/driver at post time (nothing on the wire)
            wc_st, outcome = None, 'post errno %d' % ex.error_code
        ch.send({'step': 'error-' + a.error})
        r = ch.recv()
        r.update({'wc_status': wc_st, 'outcome': outcome, 'expected_status': want,
                  'ok': wc_st == want or wc_st is None})
        steps['error-' + a.error] = r
    ch.send({'step': 'done'})
    ok = all(v['ok'] for v in steps.values())
    print(json.dumps({'role': 'client', 'dev': a.dev, 'ok': ok, 'conn': conn_info, 'size': size,
                      'steps': steps}))
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('role', choices=('server', 'client'))
    p.add_argument('server', nargs='?')
    p.add_argument('-d', '--dev', required=True)
    p.add_argument('-x', '--gid', type=int, default=1)
    p.add_argument('-p', '--port', type=int, default=18515)
    p.add_argument('--size', type=int, default=256 * 1024)
    p.add_argument('--error', choices=('misaligned', 'access', 'rkey'))
    p.add_argument('--rnr-multi', action='store_true', help='also the RNR step with a 2-packet SEND')
    p.add_argument('--seed', type=int, default=int.from_bytes(os.urandom(4), 'little'))
    a = p.parse_args()
    if a.role == 'client' and not a.server:
        p.error('client needs the server address')
    return run_server(a) if a.role == 'server' else run_client(a)


if __name__ == '__main__':
    sys.exit(main())
'''
VERBS_CHECK_PATH = '/root/verbs_check.py'


def install_verbs_check(vm):
    vm.put(VERBS_CHECK_PATH, VERBS_CHECK, mode=0o755)


def verbs_check(srv, cli, size=256 * 1024, timeout=180, extra=''):
    """Run VERBS_CHECK between Endpoints srv and cli.  Returns (server Result, client Result,
    server JSON or None, client JSON or None)."""
    for v in {srv.vm, cli.vm}:
        install_verbs_check(v)
    port = next_port()
    s, c = client_server(
        srv.vm, 'python3 %s server -d %s -x %d -p %d %s' % (VERBS_CHECK_PATH, srv.ibdev, srv.gid, port, extra),
        cli.vm, 'python3 %s client -d %s -x %d -p %d --size %d %s %s'
        % (VERBS_CHECK_PATH, cli.ibdev, cli.gid, port, size, extra, srv.ip), port, timeout=timeout)
    return s, c, _last_json(s.out), _last_json(c.out)


def _last_json(text):
    for ln in reversed(text.splitlines()):
        ln = ln.strip()
        if ln.startswith('{'):
            try:
                return json.loads(ln)
            except ValueError:
                return None
    return None


# ---- topologies with per-device options ------------------------------------------------
class LabVM(VM):
    """A VM whose QEMU command line gets per-NIC -device properties (dev_props: {nic index:
    'k=v,...'}) on top of what the runner builds (which adds extra_args)."""

    dev_props = None

    def qemu_args(self):
        a = super().qemu_args()
        for i, (model, _netdev, _mac) in enumerate(self.nics):
            props = (self.dev_props or {}).get(i)
            if not props:
                continue
            head = '%s,netdev=n%d,' % (model, i)
            idx = [j for j in range(1, len(a)) if a[j - 1] == '-device' and a[j].startswith(head)]
            if len(idx) != 1:
                raise VMError('interop.LabVM: cannot find "-device %s..." in the runner\'s command line '
                              '(has scripts/qrnic_vm/runner.py changed its -device format?)' % head)
            a[idx[0]] += ',' + props
        return a    # the runner's VM adds self.extra_args itself


class Lab(Topology):
    """A Topology (T1, T2, T3) or T4 (rxe <-> rxe), with captures, a timing profile and traces.

    pcap      True: every qrnic device writes <rundir>/vmN-qrnicK.pcap (-device qrnic,pcap=),
              every virtio-net NIC's netdev is dumped to <rundir>/vmN-vnetK.pcap (filter-dump)
    profile   timing profile of every qrnic device (functional, cx5-100g, teach)
    trace     True: -trace qrnic_event,file=<rundir>/vmN-events.log
    dev_props more -device qrnic properties, 'k=v,...'
    The other keywords are Topology's (mem, smp, append, build, rundir, ...)."""

    def __init__(self, name='T3', pcap=False, profile=None, trace=False, dev_props='', **kw):
        if name not in LAB_TOPOLOGIES:
            raise ValueError('unknown topology %r (choose from %s)' % (name, ', '.join(LAB_TOPOLOGIES)))
        super().__init__('T3' if name == 'T4' else name, **kw)
        self.name = name
        if name == 'T4':
            # vm0 becomes a copy of T3's vm1 on the other end of the same dgram link
            v0, v1 = self.vms
            model, netdev, mac = v0.nics[0]
            v0.nics = [('virtio-net-pci', netdev, mac)]
            v0.append = [w for w in v0.append if not w.startswith('qrnicvm.ip=')] + [
                'qrnicvm.vnet_ip=' + self.ips[0], 'qrnicvm.rxe=1', 'qrnicvm.load=0']
        self.pcaps, self.traces = {}, {}
        for v in self.vms:
            v.__class__ = LabVM
            v.dev_props, v.extra_args = {}, []
            for i, (model, _netdev, _mac) in enumerate(v.nics):
                props = []
                if model == 'qrnic':
                    if profile:
                        props.append('profile=' + profile)
                    if dev_props:
                        props.append(dev_props)
                    if pcap:
                        f = os.path.join(self.rundir, '%s-qrnic%d.pcap' % (v.name, i))
                        props.append('pcap=' + f)
                        self.pcaps['%s/qrnic-%d' % (v.name, i)] = f
                elif pcap:
                    f = os.path.join(self.rundir, '%s-vnet%d.pcap' % (v.name, i))
                    v.extra_args += ['-object', 'filter-dump,id=dump%d,netdev=n%d,file=%s' % (i, i, f)]
                    self.pcaps['%s/%s-%d' % (v.name, model.split('-')[0], i)] = f
                if props:
                    v.dev_props[i] = ','.join(props)
            if trace and any(n[0] == 'qrnic' for n in v.nics):
                f = os.path.join(self.rundir, '%s-events.log' % v.name)
                v.extra_args += ['-trace', 'qrnic_event,file=' + f]
                self.traces[v.name] = f

    def pair(self, refresh=False):
        """(server, client): T1 port 0 / port 1; T2, T3, T4 vm0 / vm1 (T3: qrnic / rxe)."""
        return super().pair(refresh)

    def describe(self):
        """Paths and endpoints, for people."""
        out = {'topology': self.name, 'rundir': self.rundir, 'vms': []}
        eps = self.endpoints()
        for v in self.vms:
            out['vms'].append({
                'name': v.name, 'qmp': v.qmp_sock, 'console': v.console_log,
                'nics': ['%s id=%s-%d' % (m, m.split('-')[0], i) for i, (m, _n, _mac) in enumerate(v.nics)],
                'pcap': [f for k, f in sorted(self.pcaps.items()) if k.startswith(v.name + '/')],
                'trace': self.traces.get(v.name),
                'endpoints': ['%s netdev %s ip %s gid %s' % (e.ibdev, e.netdev, e.ip, e.gid)
                              for e in eps if e.vm is v]})
        return out


# ---- QMP, faults, device counters ------------------------------------------------------
def qmp(vm, command, **arguments):
    """One QMP command on vm's monitor socket; returns its 'return' value (QmpError:
    qrnic_vm.qmp's, with QEMU's error class and description)."""
    with Qmp(vm.qmp_sock, timeout=30, name=vm.name) as q:
        return q.execute(command, arguments)


def qom_stats(vm, dev='qrnic-0'):
    """Every device counter of a qrnic device (QOM property stats), as a dict."""
    return qmp(vm, 'qom-get', path='/machine/peripheral/' + dev, property='stats')


def fault(vm, rule, dev='qrnic-0'):
    """Add a fault rule through scripts/qrnic-fault (as a user would); returns its output."""
    r = subprocess.run([sys.executable, QRNIC_FAULT, '--qmp', vm.qmp_sock, '--dev', dev, 'add', rule],
                       capture_output=True, text=True, timeout=60)
    if r.returncode:
        raise QmpError('qrnic-fault add %r: %s' % (rule, (r.stderr or r.stdout).strip()))
    return r.stdout


def rdma_counters(vm, ibdev):
    """`rdma statistic show link IBDEV/1` as {name: int} (qrnic and rxe alike)."""
    out = vm.run('rdma -j statistic show link %s/1' % ibdev, timeout=30, check=False).out
    try:
        data = json.loads(out or '[]')
    except ValueError:
        return {}
    res = {}
    for ent in data if isinstance(data, list) else [data]:
        if isinstance(ent, dict):
            for k, v in ent.items():
                if isinstance(v, int) and k not in ('port',):
                    res[k] = v
    return res


# ---- perftest --------------------------------------------------------------------------
def perftest(srv, cli, tool, args='', timeout=240, outs=16):
    """Run perftest TOOL between Endpoints srv (server) and cli.  Returns (server Result,
    client Result, result row dict or None).

    outs: `-o N` (outstanding READ/ATOMIC) on both sides for READ and ATOMIC tools.  perftest
    sets the local QP's max_rd_atomic to the *peer's* outstanding-reads figure, which is the
    peer device's max_qp_rd_atom by default (rxe 128, qrnic 16): without -o the side with the
    smaller limit fails `Failed to modify QP to RTS` (linux-rdma/perftest issue #114)."""
    port = next_port()
    common = '-p %d -F %s' % (port, args)
    if outs and ('read' in tool or 'atomic' in tool):
        common += ' -o %d' % outs
    s, c = client_server(srv.vm, '%s -d %s -x %d %s' % (tool, srv.ibdev, srv.gid, common),
                         cli.vm, '%s -d %s -x %d %s %s' % (tool, cli.ibdev, cli.gid, common, srv.ip),
                         port, timeout=timeout)
    return s, c, perftest_table(c.output)


# ---- pcap --------------------------------------------------------------------------------
def read_pcap(path):
    """[(t_ns, frame bytes)] of a classic pcap (µs or ns timestamps, Ethernet)."""
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 24:
        return []
    magic = struct.unpack('<I', data[:4])[0]
    if magic not in (0xa1b2c3d4, 0xa1b23c4d):
        raise ValueError('%s: not a little-endian classic pcap (magic %#x)' % (path, magic))
    scale = 1 if magic == 0xa1b23c4d else 1000
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack('<IIII', data[off:off + 16])
        frame = data[off + 16:off + 16 + incl]
        if len(frame) < incl:
            break                       # a record still being written
        out.append((sec * 1000000000 + frac * scale, frame))
        off += 16 + incl
    return out


def icrc(frame):
    """The ICRC a RoCEv2 frame must carry (IBTA A17; same as tests/test_wire.py's ref_icrc)."""
    if frame[12:14] == b'\x08\x00':
        iphl, iplen = 20, struct.unpack('>H', frame[16:18])[0]
        ip = bytearray(frame[14:14 + iplen])
        ip[1] = 0xff
        ip[8] = 0xff
        ip[10:12] = b'\xff\xff'
    else:
        iphl, iplen = 40, 40 + struct.unpack('>H', frame[18:20])[0]
        ip = bytearray(frame[14:14 + iplen])
        ip[0] |= 0x0f
        ip[1:4] = b'\xff\xff\xff'
        ip[7] = 0xff
    ip[iphl + 6:iphl + 8] = b'\xff\xff'
    ip[iphl + 8 + 4] = 0xff
    return struct.pack('<I', zlib.crc32(b'\xff' * 8 + bytes(ip[:-4])))


def roce_frames(path):
    """RoCEv2 (IPv4 or IPv6, UDP 4791) frames of a capture, decoded:
    [{'t', 'src_mac', 'ip_src', 'ip_dst', 'ttl', 'tos', 'df', 'ip_id', 'sport', 'udp_csum',
      'opcode', 'se', 'mig', 'pad', 'tver', 'pkey', 'resv8a', 'dqpn', 'ackreq', 'psn',
      'aeth' (syndrome, msn) or None, 'len', 'icrc_ok'}]"""
    res = []
    for t, fr in read_pcap(path):
        et = fr[12:14]
        if et == b'\x08\x00' and len(fr) >= 42 and fr[23] == 17:
            ihl = (fr[14] & 0xf) * 4
            u = 14 + ihl
            iplen = struct.unpack('>H', fr[16:18])[0]
            ipf = {'ip_src': socket.inet_ntop(socket.AF_INET, fr[26:30]),
                   'ip_dst': socket.inet_ntop(socket.AF_INET, fr[30:34]),
                   'ttl': fr[22], 'tos': fr[15], 'df': bool(fr[20] & 0x40),
                   'ip_id': struct.unpack('>H', fr[18:20])[0]}
            end = 14 + iplen
        elif et == b'\x86\xdd' and len(fr) >= 62 and fr[20] == 17:
            u = 54
            ipf = {'ip_src': socket.inet_ntop(socket.AF_INET6, fr[22:38]),
                   'ip_dst': socket.inet_ntop(socket.AF_INET6, fr[38:54]),
                   'ttl': fr[21], 'tos': ((fr[14] & 0xf) << 4) | (fr[15] >> 4), 'df': None, 'ip_id': None}
            end = 54 + struct.unpack('>H', fr[18:20])[0]
        else:
            continue
        sport, dport, _ulen, ucsum = struct.unpack('>HHHH', fr[u:u + 8])
        if dport != 4791:
            continue
        b = u + 8
        op, flags = fr[b], fr[b + 1]
        d = dict(ipf, t=t, src_mac=fr[6:12].hex(':'), sport=sport, udp_csum=ucsum, opcode=op,
                 se=bool(flags & 0x80), mig=bool(flags & 0x40), pad=(flags >> 4) & 3, tver=flags & 0xf,
                 pkey=struct.unpack('>H', fr[b + 2:b + 4])[0], resv8a=fr[b + 4],
                 dqpn=int.from_bytes(fr[b + 5:b + 8], 'big'), ackreq=bool(fr[b + 8] & 0x80),
                 psn=int.from_bytes(fr[b + 9:b + 12], 'big'), len=len(fr), aeth=None)
        if op in (0x0d, 0x0f, 0x10, 0x11, 0x12):
            d['aeth'] = (fr[b + 12], int.from_bytes(fr[b + 13:b + 16], 'big'))
        d['icrc_ok'] = fr[end - 4:end] == icrc(fr[:end])
        res.append(d)
    return res


OPCODES = {0x00: 'SEND_FIRST', 0x01: 'SEND_MIDDLE', 0x02: 'SEND_LAST', 0x03: 'SEND_LAST_IMM',
           0x04: 'SEND_ONLY', 0x05: 'SEND_ONLY_IMM', 0x06: 'WRITE_FIRST', 0x07: 'WRITE_MIDDLE',
           0x08: 'WRITE_LAST', 0x09: 'WRITE_LAST_IMM', 0x0a: 'WRITE_ONLY', 0x0b: 'WRITE_ONLY_IMM',
           0x0c: 'READ_REQUEST', 0x0d: 'READ_RESP_FIRST', 0x0e: 'READ_RESP_MIDDLE',
           0x0f: 'READ_RESP_LAST', 0x10: 'READ_RESP_ONLY', 0x11: 'ACK', 0x12: 'ATOMIC_ACK',
           0x13: 'CMP_SWAP', 0x14: 'FETCH_ADD',
           0x20: 'UC_SEND_FIRST', 0x21: 'UC_SEND_MIDDLE', 0x22: 'UC_SEND_LAST',
           0x23: 'UC_SEND_LAST_IMM', 0x24: 'UC_SEND_ONLY', 0x25: 'UC_SEND_ONLY_IMM',
           0x26: 'UC_WRITE_FIRST', 0x27: 'UC_WRITE_MIDDLE', 0x28: 'UC_WRITE_LAST',
           0x29: 'UC_WRITE_LAST_IMM', 0x2a: 'UC_WRITE_ONLY', 0x2b: 'UC_WRITE_ONLY_IMM',
           0x64: 'UD_SEND_ONLY', 0x65: 'UD_SEND_ONLY_IMM'}


# ---- the tutorial's lab daemon ----------------------------------------------------------
# docs/tutorial/lab starts `serve()` in a background process: it boots a Lab, keeps it up and
# answers requests (one JSON line each way per connection) on <dir>/lab.sock, so that the
# guests can be used from many shell commands in a row, next to host tools (tshark,
# scripts/qrnic-fault, scripts/qrnic-timeline) working on the same run directory.

def _result_dict(r):
    return {'rc': r.rc, 'out': r.out, 'err': r.err, 'dt': r.dt, 'timed_out': r.timed_out,
            'running': getattr(r, 'running', False)}


def serve(lab, sock_path, ready_path):
    """Boot lab, write ready_path (JSON: describe() or {'error'}), serve until 'down'."""
    try:
        lab.start()
        info = lab.describe()
    except Exception as ex:                       # noqa: BLE001 - reported to `lab up`
        with open(ready_path, 'w') as f:
            json.dump({'error': '%s: %s' % (type(ex).__name__, ex)}, f)
        lab.stop()
        return 1
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    ls.bind(sock_path)
    ls.listen(8)
    with open(ready_path, 'w') as f:
        json.dump(info, f)
    done = threading.Event()
    jobs = {}

    def handle(conn):
        f = conn.makefile('rwb')
        try:
            req = json.loads(f.readline())
            op = req.get('op')
            vm = lab.vm(int(req.get('vm', 0))) if op in ('run', 'spawn', 'wait', 'put', 'get') else None
            if op == 'run':
                rep = _result_dict(vm.run(req['cmd'], timeout=req.get('timeout', 120), check=False))
            elif op == 'spawn':
                j = vm.spawn(req['cmd'])
                jobs[(vm.name, j.id)] = j
                rep = {'job': j.id}
            elif op == 'wait':
                j = jobs.get((vm.name, req['job']))
                if j is None:
                    rep = {'error': 'no job %s in %s' % (req['job'], vm.name)}
                else:
                    rep = _result_dict(j.wait(req.get('timeout', 60), kill=req.get('kill', False)))
            elif op == 'put':
                vm.put(req['path'], base64.b64decode(req['data']), mode=req.get('mode'))
                rep = {}
            elif op == 'get':
                rep = {'data': base64.b64encode(vm.get(req['path'])).decode()}
            elif op == 'info':
                rep = lab.describe()
            elif op == 'down':
                rep = {}
                done.set()
            else:
                rep = {'error': 'unknown op %r' % op}
        except Exception as ex:                   # noqa: BLE001 - sent back to the client
            rep = {'error': '%s: %s' % (type(ex).__name__, ex)}
        try:
            f.write(json.dumps(rep).encode() + b'\n')
            f.flush()
        except OSError:
            pass
        conn.close()

    ls.settimeout(0.5)
    try:
        while not done.is_set():
            if not all(v.alive() for v in lab.vms):
                print('lab: a VM died; shutting down (logs in %s)' % lab.rundir, file=sys.stderr, flush=True)
                break
            try:
                conn, _ = ls.accept()
            except socket.timeout:
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()
    finally:
        ls.close()
        # Stop the VMs before the socket goes: `lab down` returns when it is gone, and a
        # QEMU still shutting down would unlink the QMP socket of the next lab's QEMU at
        # the same path when it exits.
        lab.stop()
        os.unlink(sock_path)
    return 0


class LabClient:
    """Talks to a running lab daemon."""

    def __init__(self, sock_path):
        self.path = sock_path

    def request(self, req, timeout=None):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(self.path)
        try:
            f = s.makefile('rwb')
            f.write(json.dumps(req).encode() + b'\n')
            f.flush()
            ln = f.readline()
            if not ln:
                raise VMError('lab: no answer (is the lab still up?)')
            rep = json.loads(ln)
        finally:
            s.close()
        if 'error' in rep:
            raise VMError('lab: ' + rep['error'])
        return rep


def shell_quote(args):
    return ' '.join(shlex.quote(a) for a in args)
