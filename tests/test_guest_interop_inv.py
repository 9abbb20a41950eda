# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: invalidation between qrnic and Linux Soft-RoCE (rdma_rxe), topology T3
(vm0: qrnic, vm1: virtio-net + rdma_rxe; tests/test_guest_interop.py boots it).

* SEND_WITH_INV: the kernel NVMe-oF stack across the two implementations.  nvmet +
  nvmet-rdma export a memory-backed null_blk (512-byte blocks) on one VM, nvme-rdma
  connects from the other (`nvme connect -t rdma`).  nvme-rdma registers each I/O's
  buffer with IB_WR_REG_MR and asks for remote invalidation; nvmet-rdma answers with
  SEND_WITH_INV.  'rxe-tgt': rxe sends SEND_WITH_INV, qrnic's responder invalidates
  the host's FRMR (qrnic's debugfs mem_mgt: recv_inv grows with reg_mr_posted);
  'qrnic-tgt': qrnic posts SEND_WITH_INV (send_inv_posted) and rxe invalidates.
  A random pattern is written with dd (O_DIRECT) at offsets that are not 4 KiB
  aligned, read back and compared by sha256, then the whole region once more;
  then fio randwrite with verify=crc32c behind it.
* MW-protected WRITE: a pyverbs pair (MW_CHECK).  The binder allocates a type 2
  memory window, binds it over part of an MR with IBV_WR_BIND_MW and sends the
  window's rkey and address over TCP; the writer RDMA-WRITEs through it and READs
  back through it (sha256 on both sides); the binder invalidates the window with
  LOCAL_INV and the writer's next WRITE completes with IBV_WC_REM_ACCESS_ERR, the
  binder's memory unchanged.  'qrnic-binds' and 'rxe-binds'; 'local' (the binder's
  LOCAL_INV) and 'remote' (the writer's SEND_WITH_INV naming the window's rkey: the
  binder's receive completion reports the invalidation)."""
import json
import re
import time

import pytest

from guest.interop import _last_json
from guest.storage import dd_verify, fio_job, fio_verify
from guest.vmlib import check_pair, client_server, guest_dmesg, next_port  # noqa: F401
from test_guest_interop import endpoints, topo  # noqa: F401
from test_guest_nvmeof import MODULES, NQN, connect, disconnect, mem_mgt, nvmet_teardown, setup_target

pytestmark = [pytest.mark.guest, pytest.mark.slow]

NS_MB = 16
REGION = 4 << 20
FIO_MB = 1               # fio: two regions of 1 MiB behind REGION
DD_CASES = [(4096, 0), (8192, 12800), (65536, 198144), (131072 + 512, 527872), (1048576, 1049088)]


def _qrnic_rxe(topo):
    q, r = endpoints(topo, 'qrnic-srv')
    return q, r


def _dd_io(vm, bdev):
    """dd O_DIRECT writes of a random pattern, each read back and compared (sha256), then the
    whole region; returns the bytes compared."""
    dd_verify(vm, bdev, REGION, DD_CASES, '/tmp/inv-pattern', timeout=600)
    # the whole region: the pattern where dd wrote, zeros elsewhere
    out = vm.run(r'''python3 - %s <<'PY'
import hashlib, json, os, sys
pat = open('/tmp/inv-pattern', 'rb').read()
cases = %s
exp = bytearray(%d)
for size, off in cases:
    exp[off:off + size] = pat[off:off + size]
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
import mmap
m = mmap.mmap(-1, len(exp))
got = 0
while got < len(exp):
    n = os.preadv(fd, [memoryview(m)[got:got + (1 << 20)]], got)
    assert n > 0
    got += n
print(json.dumps({'region_ok': hashlib.sha256(m).hexdigest() == hashlib.sha256(exp).hexdigest()}))
PY''' % (bdev, json.dumps(DD_CASES), REGION), timeout=600)
    assert json.loads(out.strip().splitlines()[-1])['region_ok'], out
    return 2 * sum(s for s, _ in DD_CASES) + REGION


@pytest.mark.parametrize('direction', ['rxe-tgt', 'qrnic-tgt'])
def test_nvme_rdma_send_with_inv(topo, guest_dmesg, direction):
    q, r = _qrnic_rxe(topo)
    tgt, host = (r, q) if direction == 'rxe-tgt' else (q, r)
    for ep in (tgt, host):
        nvmet_teardown(ep.vm)
    before = mem_mgt(q)
    assert before['supported'] == 1, before
    for ep in (tgt, host):
        missing = ep.vm.run('for m in %s; do modinfo -n $m >/dev/null 2>&1 || echo $m; done' % ' '.join(MODULES))
        assert not missing.strip(), '%s lacks the modules: %s' % (ep.ibdev, missing.split())
    ctrl = None
    if direction == 'rxe-tgt':
        # docs/interop.md 3.10: with qrnic as the active side, rdma_cm's path MTU is qrnic's 4096
        # and the passive rxe takes it as is; with its netdev at 1500 rxe's 4 KiB WRITE packets
        # never leave the VM.  rxe's netdev MTU raised to 4200 (rxe active MTU 4096).
        r.vm.run('ip link set %s mtu 4200 && sleep 0.5 && ibv_devinfo -d %s | grep -q "active_mtu:.*4096"'
                 % (r.netdev, r.ibdev))
    try:
        setup_target(tgt.vm, tgt.ip)
        host.vm.run('modprobe -a nvme-fabrics nvme-rdma', timeout=120)
        ctrl, bdev, address = connect(host.vm, tgt.ip, host.ip)
        assert int(host.vm.run('cat /sys/block/%s/queue/logical_block_size' % bdev[5:])) == 512
        t0 = time.monotonic()
        verified = _dd_io(host.vm, bdev)
        # fio: random writes behind the region, read back with crc32c verification
        wrote, read = fio_verify(host.vm, fio_job(FIO_MB << 20, dev=bdev, offset=REGION))
        assert wrote == read == 2 * (FIO_MB << 20), (wrote, read)
        verified += wrote + read
        after = mem_mgt(q)
        d = {k: after[k] - before[k] for k in after}
        print('\nnvme-rdma %s: host %s (%s) -> target %s: %d bytes verified in %.0f s; qrnic mem_mgt %s'
              % (direction, host.ibdev, address, tgt.ibdev, verified, time.monotonic() - t0, json.dumps(d)))
        assert d['errors'] == 0, d
        if direction == 'rxe-tgt':
            # qrnic is the host: every FRMR it registered was invalidated, by rxe's
            # SEND_WITH_INV (IB_WC_WITH_INVALIDATE) or, failing that, a LOCAL_INV
            assert d['reg_mr_posted'] >= len(DD_CASES), d
            assert d['recv_inv'] > 0, d
            assert d['recv_inv'] + d['local_inv_posted'] == d['reg_mr_posted'], d
        else:
            # qrnic is the target: it answered rxe's I/Os with SEND_WITH_INV
            assert d['send_inv_posted'] >= 2 * len(DD_CASES), d
            assert d['reg_mr_posted'] == 0, d
        disconnect(host.vm, ctrl)
        ctrl = None
    finally:
        if ctrl:
            nvmet_teardown(host.vm)
        for ep in (host, tgt):
            nvmet_teardown(ep.vm)
        if direction == 'rxe-tgt':
            r.vm.run('ip link set %s mtu 1500' % r.netdev)
    log = '\n'.join(t for rec in guest_dmesg.new().values() for _, t in rec)
    bad = [ln for ln in log.splitlines() if 'nvme' in ln and
           re.search(r'failed with status|Bogus remote invalidation|memreg|error recovery|'
                     r'reconnect|I/O error|timeout', ln, re.I)]
    assert not bad, '\n'.join(bad)
    assert re.search(r'new ctrl: (NQN )?"%s"' % re.escape(NQN), log), log[-3000:]


# ---- memory windows ---------------------------------------------------------------------------
MW_CHECK = r'''
import hashlib, json, random, socket, sys, time
from pyverbs.addr import AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR, MW, MWBindInfo
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SGE, SendWR
import pyverbs.enums as e

role, dev, gidx, port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
inv_mode = sys.argv[5]          # local: the binder posts LOCAL_INV; remote: the writer SEND_WITH_INV
peer_ip = sys.argv[6] if len(sys.argv) > 6 else None
SIZE, WOFF, WLEN, WR = 64 * 1024, 4096, 16384, 8192
RACC = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
sha = lambda b: hashlib.sha256(bytes(b)).hexdigest()
out = {'role': role, 'dev': dev, 'steps': {}}

if role == 'binder':
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('0.0.0.0', port)); ls.listen(1); s, _ = ls.accept()
else:
    s = socket.create_connection((peer_ip, port))
f = s.makefile('rwb')
def send(o): f.write(json.dumps(o).encode() + b'\n'); f.flush()
def recv():
    ln = f.readline()
    if not ln: raise EOFError('peer closed')
    return json.loads(ln)

ctx = Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, 64)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                       cap=QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)))
mtu = ctx.query_port(1).active_mtu
psn = random.randrange(1 << 24)
send({'qpn': qp.qp_num, 'psn': psn, 'gid': str(ctx.query_gid(1, gidx)), 'mtu': mtu})
peer = recv()
a = QPAttr(port_num=1); a.qp_access_flags = RACC; a.pkey_index = 0
qp.to_init(a)
a = QPAttr(port_num=1)
a.path_mtu = min(mtu, peer['mtu']); a.dest_qp_num = peer['qpn']; a.rq_psn = peer['psn']
a.max_dest_rd_atomic = 1; a.min_rnr_timer = 12
a.ah_attr = AHAttr(gr=GlobalRoute(dgid=GID(peer['gid']), sgid_index=gidx, hop_limit=64), is_global=1, port_num=1)
qp.to_rtr(a)
a.sq_psn = psn; a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7; a.max_rd_atomic = 1
qp.to_rts(a)

def poll(timeout=60):
    t = time.monotonic() + timeout
    while True:
        n, wcs = cq.poll(1)
        if n:
            return wcs[0]
        if time.monotonic() > t:
            raise TimeoutError('no completion')
        time.sleep(0.0005)

if role == 'binder':
    mr = MR(pd, SIZE, RACC | e.IBV_ACCESS_MW_BIND)
    rmr = MR(pd, 4096, RACC)
    qp.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(rmr.buf, 4096, rmr.lkey)]))
    base = random.Random(0x3a7).randbytes(SIZE)
    mr.write(base, SIZE, 0)
    mw = MW(pd, e.IBV_MW_TYPE_2)
    wr = SendWR(opcode=e.IBV_WR_BIND_MW, send_flags=e.IBV_SEND_SIGNALED)
    wr.set_bind_wr(mw, MWBindInfo(mr, mr.buf + WOFF, WLEN, e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ))
    qp.post_send(wr)
    wc = poll()
    rkey = wr.rkey
    out['steps']['bind'] = {'ok': wc.status == 0, 'status': wc.status, 'opcode': wc.opcode,
                            'mw_rkey': mw.rkey, 'rkey': rkey, 'mr_rkey': mr.rkey}
    send({'addr': mr.buf + WOFF, 'rkey': rkey, 'len': WLEN,
          'tail_sha': sha(base[WOFF + WR:WOFF + WLEN]), 'bound': wc.status == 0})
    m = recv()   # the writer wrote WR bytes at the window's start and read the window back
    now = mr.read(SIZE, 0)
    exp = bytearray(base); exp[WOFF:WOFF + WR] = bytes.fromhex(m['wdata'])
    out['steps']['write-read'] = {'ok': sha(now) == sha(exp), 'sha': sha(now)}
    if inv_mode == 'local':
        inv = SendWR(opcode=e.IBV_WR_LOCAL_INV, send_flags=e.IBV_SEND_SIGNALED)
        inv.imm_data = rkey          # invalidate_rkey shares the union with imm_data
        qp.post_send(inv)
        wc = poll()
        out['steps']['local-inv'] = {'ok': wc.status == 0, 'status': wc.status, 'opcode': wc.opcode}
    else:
        send({'remote_inv': True})
        wc = poll()                  # the writer's SEND_WITH_INV
        flags = wc.wc_flags
        # the invalidation flag: IBV_WC_WITH_INV (8); rxe reports the kernel's
        # IB_WC_WITH_INVALIDATE bit (4, IBV_WC_IP_CSUM_OK in libibverbs): the test checks which
        out['steps']['remote-inv'] = {'ok': wc.status == 0 and wc.opcode == e.IBV_WC_RECV and
                                      bool(flags & 0xc) and wc.imm_data == rkey and wc.byte_len == 64,
                                      'status': wc.status, 'opcode': wc.opcode, 'wc_flags': flags,
                                      'invalidated_rkey': wc.imm_data, 'byte_len': wc.byte_len,
                                      'sender': recv()['sent']}
    send({'invalidated': wc.status == 0})
    m = recv()   # the writer's WRITE through the invalidated window
    same = sha(mr.read(SIZE, 0)) == sha(exp)
    out['steps']['after-inv'] = {'ok': same, 'memory_unchanged': same, 'writer_status': m['status']}
    send({'bye': 1})
else:
    lmr = MR(pd, SIZE, RACC)
    wdata = random.Random(0x77).randbytes(WR)
    lmr.write(wdata, WR, 0)
    lmr.write(bytes(SIZE - WR), SIZE - WR, WR)
    m = recv()
    out['window'] = {'rkey': m['rkey'], 'len': m['len']}
    if not m['bound']:
        out['steps']['bind'] = {'ok': False}
    def rdma(op, loff, ln, raddr):
        wr = SendWR(opcode=op, num_sge=1, sg=[SGE(lmr.buf + loff, ln, lmr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(m['rkey'], raddr)
        qp.post_send(wr)
        return poll().status
    st = rdma(e.IBV_WR_RDMA_WRITE, 0, WR, m['addr'])
    out['steps']['write'] = {'ok': st == 0, 'status': st}
    st = rdma(e.IBV_WR_RDMA_READ, WR, WLEN, m['addr'])
    back = lmr.read(WLEN, WR)
    out['steps']['read'] = {'ok': st == 0 and sha(back[:WR]) == sha(wdata) and sha(back[WR:]) == m['tail_sha'],
                            'status': st}
    send({'wdata': wdata.hex()})
    m2 = recv()
    if m2.get('remote_inv'):
        wr = SendWR(opcode=e.IBV_WR_SEND_WITH_INV, num_sge=1, sg=[SGE(lmr.buf, 64, lmr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.imm_data = m['rkey']      # invalidate_rkey
        qp.post_send(wr)
        st = poll().status
        out['steps']['send-inv'] = {'ok': st == 0, 'status': st}
        send({'sent': st})
        m2 = recv()
    st = rdma(e.IBV_WR_RDMA_WRITE, WR, 512, m['addr'])
    out['steps']['write-after-inv'] = {'ok': m2['invalidated'] and st == e.IBV_WC_REM_ACCESS_ERR, 'status': st}
    send({'status': st})
    recv()
out['ok'] = all(v['ok'] for v in out['steps'].values())
print(json.dumps(out))
'''
MW_PATH = '/root/mw_check.py'


@pytest.mark.parametrize('inv', ['local', 'remote'])
@pytest.mark.parametrize('direction', ['qrnic-binds', 'rxe-binds'])
def test_mw_write_invalidate(topo, direction, inv):
    q, r = _qrnic_rxe(topo)
    b, w = (q, r) if direction == 'qrnic-binds' else (r, q)
    for ep in (b, w):
        ep.vm.put(MW_PATH, MW_CHECK)
    port = next_port()
    srv, cli = client_server(b.vm, 'python3 %s binder %s %d %d %s' % (MW_PATH, b.ibdev, b.gid, port, inv),
                             w.vm, 'python3 %s writer %s %d %d %s %s' % (MW_PATH, w.ibdev, w.gid, port, inv, b.ip),
                             port, timeout=120)
    bj, wj = _last_json(srv.out), _last_json(cli.out)
    print('\nMW %s %s: binder %s, writer %s' % (direction, inv, json.dumps(bj), json.dumps(wj)))
    check_pair(srv, cli)
    assert bj and wj, (srv.output[-3000:], cli.output[-3000:])
    assert bj['ok'] and wj['ok'], (bj, wj)
    assert set(bj['steps']) == {'bind', 'write-read', inv + '-inv', 'after-inv'}, bj
    assert set(wj['steps']) == {'write', 'read', 'write-after-inv'} | ({'send-inv'} if inv == 'remote' else set()), wj
    assert wj['steps']['write-after-inv']['status'] == 10, wj     # IBV_WC_REM_ACCESS_ERR
    if inv == 'remote':
        flags = bj['steps']['remote-inv']['wc_flags']
        if direction == 'qrnic-binds':
            assert flags & 8, bj        # IBV_WC_WITH_INV
        else:
            # docs/interop.md 3.11: rxe's receive completion carries bit 2 (the kernel's
            # IB_WC_WITH_INVALIDATE; IBV_WC_IP_CSUM_OK to libibverbs), not IBV_WC_WITH_INV;
            # invalidated_rkey is right and the window is invalid (the next WRITE is refused)
            assert flags & 4 and not flags & 8, bj
