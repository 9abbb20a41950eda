# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier, pvrdma CVE classes at the QEMU level (issue 21, item 4):

* leaks: create/destroy cycles of every object kind through the admin
  queue; the QEMU process's RSS (VmRSS of /proc/PID/status) after N and
  after 10N cycles must not grow with the number of cycles (the figures
  are printed; run with -s to see them);
* no abort reachable by a guest: a random sequence of what a guest can do
  (admin commands with random bodies, BAR0 register writes including
  CTRL.RESET, doorbell writes, guest memory scribbles over the rings,
  clock steps) against a running QEMU; the process must never die and
  must answer at the end.  (The static audit of every assert/abort in
  model/, firmware/ and hw/ is tests/test_no_guest_abort.py.)
* TOCTOU through QEMU: the guest rewrites a WQE between the doorbell and
  its processing (the device runs only when the qtest clock steps, so the
  rewrite is ordered after the doorbell and before the device's read; with
  the cx5-100g timing profile the WQE read itself is timed): the device
  acts on the bytes it read, once."""
import os
import random
import struct

import pytest

import qrnic_harness as h
from qtest import abi
from qtest.driver import World, WaitTimeout
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu


def rss_kib(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    raise AssertionError('no VmRSS')


def one_cycle(d, rng):
    """Create one object of every kind the admin queue makes, then destroy
    them all (in reverse order)."""
    uctx = d.alloc_uctx()
    pd = d.alloc_pd()
    eq = d.create_eq(4, vector=1)
    cq = d.create_cq(6)
    srq = d.create_srq(pd, log_depth=4)
    qp = d.create_qp(pd, cq, sq_log=4, rq_log=4)
    qp2 = d.create_qp(pd, cq, qp_type='UD', sq_log=2, rq_log=2)
    qp.to_init()                      # a QP that went through INIT
    mr = d.reg_mr(pd, 3 * 4096 + rng.randrange(4096))
    ah = d.ah_to(pd, d)
    d.set_gid(3, bytes(range(16)))
    d.set_gid(3, bytes(16), valid=False)
    d.destroy('DESTROY_AH', ah.ahn)
    mr.dereg()
    qp2.destroy()
    qp.destroy()
    srq.destroy()
    cq.destroy()
    eq.destroy()
    pd.destroy()
    d.destroy('DEALLOC_UCTX', uctx)


def test_create_destroy_cycles_rss_does_not_grow(qemu_binary):  # noqa: F811
    n = int(os.environ.get('QRNIC_LEAK_CYCLES', '250'))
    with World.single(qemu_binary, ndev=1, name='leak') as w:
        d = w.devs[0]
        qemu = w.qemus[0]
        pid = qemu.proc.pid
        rng = random.Random(3)
        qemu.mem.mark()

        def cycles(k):
            for _ in range(k):
                one_cycle(d, rng)
                qemu.mem.release()

        # warm-up: malloc arenas, code pages, QEMU caches.  Measured (N=250
        # steps): RSS rises ~800 KiB over the first 500 cycles, flat after.
        cycles(2 * n)
        r0 = rss_kib(pid)
        cycles(n)
        r1 = rss_kib(pid)
        cycles(9 * n)
        r10 = rss_kib(pid)
        per_cycle = (r10 - r1) / (9 * n)
        print(f'\nqemu RSS: after {2 * n} warm-up cycles {r0} KiB, after N={n} more {r1} KiB, '
              f'after 10N={10 * n} ({9 * n} more) {r10} KiB; growth {r10 - r1} KiB over '
              f'{9 * n} cycles = {per_cycle:.2f} KiB/cycle')
        # one cycle allocates a QP's send window, an SRQ, a CQ, an EQ, an MR's
        # MTT entries (several KiB together): a leak of any would show as
        # >= 1 KiB per cycle (>= 2 MiB over 9N = 2250 cycles).  The allowance
        # (256 KiB) covers malloc arena noise after the warm-up.
        assert r10 - r1 <= 256, f'RSS grew {r10 - r1} KiB over {9 * n} cycles'
        assert d.query_stats()['admin_errors'] == 0
        assert qemu.alive()


def test_random_guest_actions_never_kill_qemu(qemu_binary):  # noqa: F811
    steps = int(os.environ.get('QRNIC_RANDOM_STEPS', '1500'))
    rng = random.Random(int(os.environ.get('QRNIC_RANDOM_SEED', '21')))
    regs = sorted(h.REG.values())
    with World.single(qemu_binary, ndev=2, name='randguest') as w:
        a, b = w.devs
        qemu = w.qemus[0]
        kinds = {}
        for i in range(steps):
            d = rng.choice((a, b))
            k = rng.randrange(8)
            kinds[k] = kinds.get(k, 0) + 1
            try:
                if k == 0:          # admin command: a valid opcode, random body
                    cmd = bytearray(rng.randbytes(128))
                    cmd[0] = rng.randint(1, h.CMD_MAX)
                    cmd[1] = 0
                    d.admin(bytes(cmd), raw=True, timeout=0.05)
                elif k == 1:        # admin command, small random values (handles, counts)
                    cmd = bytearray(128)
                    cmd[0] = rng.randint(1, h.CMD_MAX)
                    for off in range(8, 64, 4):
                        cmd[off:off + 4] = struct.pack('<I', rng.choice(
                            (0, 1, 2, 3, 0xffffffff, rng.randrange(1 << 16))))
                    d.admin(bytes(cmd), raw=True, timeout=0.05)
                elif k == 2:        # BAR0 register write (CTRL.RESET rarely)
                    off = rng.choice(regs) if rng.random() < 0.8 else rng.randrange(0, 0x1000, 4)
                    if off == 0 and rng.random() < 0.9:
                        continue
                    d.reg_write(off, rng.getrandbits(32), rng.choice((1, 2, 4, 8)))
                elif k == 3:        # doorbell writes anywhere in the doorbell pages
                    d.db_write(rng.randrange(0, 0x4000, 8), rng.getrandbits(64),
                               rng.choice((4, 8)))
                elif k == 4:        # scribble over guest memory the device may be using
                    base = 0x100_0000 + rng.randrange(0, 0x40_0000, 64)
                    qemu.memwrite(base, rng.randbytes(rng.choice((8, 64, 512))))
                elif k == 5:        # register and doorbell reads
                    d.reg_read(rng.randrange(0, 0x1000, 4), rng.choice((1, 2, 4, 8)))
                elif k == 6:
                    w.step(rng.choice((1000, 100_000, 10_000_000)))
                else:               # back to a working device now and then
                    if rng.random() < 0.05:
                        w.reset_devices()
            except (WaitTimeout, h.AdminError, AssertionError, ValueError):
                pass
            if i % 100 == 0:
                assert qemu.alive(), f'QEMU died at step {i}:\n{qemu.stderr()[-4000:]}'
        assert qemu.alive(), qemu.stderr()[-4000:]
        print(f'\n{steps} random guest actions by kind: {dict(sorted(kinds.items()))}')
        w.reset_devices()
        for d in w.devs:
            assert d.reg_read('VERSION') == abi.ABI_VERSION


def test_wqe_rewritten_between_doorbell_and_processing(qemu_binary):  # noqa: F811
    """cx5-100g timing, fixed clock steps: the doorbell is rung; the device
    reads the WQE in its bottom half right away (no virtual time passes),
    but sends its packets only as the qtest clock moves (PCIe and wire
    timing).  Between the two the guest rewrites the WQE's remote address
    and wr_id.  The completion and the data must follow one copy, whole:
    wr_id 0x111 with the data at 0x800 (the copy read before the rewrite:
    what happens in practice), or wr_id 0x222 with the data at 0x2000;
    never a mixture, never both.  Then the guest rewrites the slot again
    after the completion: nothing more happens."""
    with World.single(qemu_binary, ndev=2, dev_opts='profile=cx5-100g', fixed_step_ns=1000,
                      name='toctou') as w:
        a, b = w.devs
        pda, pdb = a.alloc_pd(), b.alloc_pd()
        cqa, cqb = a.create_cq(4), b.create_cq(4)
        qa, qb = a.create_qp(pda, cqa), b.create_qp(pdb, cqb)
        for me, peer in ((qa, qb), (qb, qa)):
            me.to_init()
            me.to_rtr(peer.dev, peer.qpn, rq_psn=0x100)
            me.to_rts(sq_psn=0x100)
        src, dst = a.reg_mr(pda, 8192), b.reg_mr(pdb, 16384)
        data = src.fill_random(random.Random(5), 0, 3000)
        slot = qa.sq_addr + ((qa.sq_pi & ((1 << qa.sq_log) - 1)) << qa.sq_shift)
        tx0 = a.stat('tx_packets')
        qa.post_send('RDMA_WRITE', [(src, 0, 3000)], remote=(dst, 0x800), wr_id=0x111)
        # rung; nothing sent yet (the clock has not moved): rewrite the WQE
        wqe = bytearray(a.mem_read(slot, 64))
        struct.pack_into('<Q', wqe, 8, 0x222)                  # wr_id
        struct.pack_into('<Q', wqe, 24, dst.addr(0x2000))      # remote_addr
        a.mem_write(slot, bytes(wqe))
        assert a.stat('tx_packets') == tx0, 'the device sent before the rewrite'
        got = cqa.wait(1)
        assert len(got) == 1 and got[0]['status_name'] == 'SUCCESS', got
        at_old, at_new = dst.read(0x800, 3000), dst.read(0x2000, 3000)
        if got[0]['wr_id'] == 0x111:
            assert at_old == data and at_new == bytes(3000)
        else:
            assert got[0]['wr_id'] == 0x222, got
            assert at_new == data and at_old == bytes(3000)
        print(f"\nthe device used the copy {'read before' if got[0]['wr_id'] == 0x111 else 'read after'}"
              ' the rewrite')
        assert a.stat('tx_packets') - tx0 == 3                 # 3000 bytes, MTU 1024
        # the read is done: a rewrite now changes nothing already decided
        wqe2 = bytearray(wqe)
        struct.pack_into('<Q', wqe2, 8, 0x333)
        struct.pack_into('<Q', wqe2, 24, dst.addr(0x3000))
        a.mem_write(slot, bytes(wqe2))
        w.step(10_000_000)
        assert not cqa.poll()
        assert dst.read(0x3000, 3000) == bytes(3000)
        assert a.stat('tx_packets') - tx0 == 3
