# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: the device clock and completion timestamps (ABI 1.7, spec 4.6,
9.8) in QEMU, register by register.

* CLOCK_LO/HI (BAR0 0x0c0/0x0c4) and QRNIC_DB_CLOCK of every doorbell page
  (BAR2) read QEMU's virtual clock: exactly what qtest's clock says, moving
  by exactly what clock_step moves it, 64-bit or as halves; writes change
  nothing; a device reset does not touch it;
* a CQ created with CQ_F_TIMESTAMP gets 64-byte CQEs whose timestamp is
  the virtual time the CQE was written: after the doorbell, not after the
  poll that saw it; with a fixed virtual step per poll, within one step of
  it; 32-byte CQs unchanged next to it."""
import struct

import pytest

import qrnic_harness as h
from qtest.driver import World
from qtest.fixtures import qemu_binary, shared_world  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

STEP = 1000     # ns of virtual time per poll


qworld, world = shared_world('clock', fixed_step_ns=STEP)


def test_clock_register_is_qemu_virtual_time(world):
    a, b = world.devs
    q = world.qemus[0]
    assert a.reg_read('VERSION') == h.ABI_VERSION >= (1 << 16) | 7   # the clock since 1.7
    assert a.reg_read('CAPS') & (1 << 13)
    assert a.attr['hca_core_clock'] == 1_000_000
    assert a.attr['timestamp_mask'] == (1 << 64) - 1
    t = q.clock_step(1_000_000)
    assert t >= 1_000_000 and q.clock() == t
    assert a.reg_read(h.REG_CLOCK_LO, 8) == t == b.reg_read(h.REG_CLOCK_LO, 8)
    assert a.reg_read('CLOCK_LO') == t & 0xffffffff
    assert a.reg_read('CLOCK_HI') == t >> 32
    # every doorbell page, the kernel's and one of no context
    for page in (0, 3):
        assert a.db_read(page * h.DB_PAGE_SIZE + h.DB_CLOCK, 8) == t
        assert a.db_read(page * h.DB_PAGE_SIZE + h.DB_CLOCK, 4) == t & 0xffffffff
        assert a.db_read(page * h.DB_PAGE_SIZE + h.DB_CLOCK + 4, 4) == t >> 32
    # it moves with virtual time, by exactly as much
    for step in (1, 999, 123_456_789):
        t2 = q.clock_step(step)
        assert t2 == t + step
        assert a.reg_read(h.REG_CLOCK_LO, 8) == t2 == a.db_read(h.DB_CLOCK, 8)
        t = t2
    # read-only; a function reset does not restart it
    a.reg_write('CLOCK_LO', 0)
    a.reg_write('CLOCK_HI', 0)
    a.db_write(h.DB_CLOCK, 0)
    assert a.reg_read(h.REG_CLOCK_LO, 8) == t
    a.function_reset()
    assert a.reg_read(h.REG_CLOCK_LO, 8) == q.clock() >= t


def test_cqe64_carries_the_virtual_time(world):
    a, b = world.devs
    q = world.qemus[0]
    conn = h.connect_rc(a, b, mtu=1024, cq_timestamp=True)
    plain = a.create_cq(6)
    assert conn.cqa.size == 64 and plain.size == 32
    la = a.reg_mr(conn.pda, 8192)
    rb = b.reg_mr(conn.pdb, 8192)
    seen = []
    for i in range(5):
        q.clock_step(50_000)
        t_post = q.clock()
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 1000 + i)], remote=(rb, 0), wr_id=10 + i)
        got = conn.cqa.wait(1, timeout=30)
        t_seen = q.clock()
        assert len(got) == 1 and got[0]['wr_id'] == 10 + i and got[0]['status_name'] == 'SUCCESS'
        ts = got[0]['timestamp']
        # written after the doorbell, and at most one poll step before we saw it
        assert t_post <= ts <= t_seen, (t_post, ts, t_seen)
        assert t_seen - ts <= STEP, (ts, t_seen)
        seen.append(ts)
    assert seen == sorted(seen) and len(set(seen)) == len(seen)
    # the raw slot: the 32-byte CQE, the timestamp, 24 zero bytes
    raw = q.memread(conn.cqa.ring + 64 * 4, 64)
    assert struct.unpack_from('<Q', raw, 0)[0] == 14
    assert struct.unpack_from('<Q', raw, 32)[0] == seen[-1] and raw[40:] == bytes(24)
    # resize keeps them
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0), wr_id=20)
    world.run_until(lambda: conn.cqa.peek() == 1, timeout=30)
    before = struct.unpack_from('<Q', q.memread(conn.cqa._slot(conn.cqa.ci), 64), 32)[0]
    assert conn.cqa.resize(4) == 1
    got = conn.cqa.poll()
    assert [c['wr_id'] for c in got] == [20] and got[0]['timestamp'] == before >= seen[-1]
    plain.destroy()


def test_timestamp_cq_migrates(qemu_binary, tmp_path):  # noqa: F811
    """A timestamp CQ with a CQE not yet polled, migrated into a second QEMU:
    the CQE keeps its timestamp, the CQ keeps writing 64-byte CQEs, and the
    clock goes on from where it was (qtest's clock is set on like the
    migration tests do: -accel qtest does not migrate it)."""
    from test_qemu_migration import migrate
    w = World.single(qemu_binary, 2, name='clock-mig')
    w.fixed_step_ns = STEP
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024, cq_timestamp=True)
        la = a.reg_mr(conn.pda, 8192)
        rb = b.reg_mr(conn.pdb, 8192)
        w.qemus[0].clock_step(10_000_000)
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=1)
        w.run_until(lambda: conn.cqa.peek() == 1, timeout=30)
        ts1 = struct.unpack_from('<Q', w.qemus[0].memread(conn.cqa._slot(0), 64), 32)[0]
        clk = a.reg_read(h.REG_CLOCK_LO, 8)
        assert 10_000_000 <= ts1 <= clk

        _, dst = migrate(w, str(tmp_path / 'clock.bin'))

        assert a.reg_read(h.REG_CLOCK_LO, 8) >= clk
        dst.clock_step(5_000_000)
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=2)
        got = conn.cqa.wait(2, timeout=30)
        assert [c['wr_id'] for c in got] == [1, 2]
        assert got[0]['timestamp'] == ts1
        assert got[1]['timestamp'] >= clk + 5_000_000 > ts1
        raw = dst.memread(conn.cqa._slot(1), 64)
        assert struct.unpack_from('<Q', raw, 0)[0] == 2 and raw[40:] == bytes(24)
    finally:
        w.close()
