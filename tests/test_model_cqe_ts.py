# SPDX-License-Identifier: GPL-2.0-or-later
"""The device clock and completion timestamps (ABI 1.7, spec 4.4 and 7.4).

* QRNIC_REG_CLOCK_LO/HI and every doorbell page's QRNIC_DB_CLOCK read the
  model's clock (the harness's virtual time), 64-bit or as two halves;
  writes do not change it;
* a CQ created with CQ_F_TIMESTAMP has 64-byte CQEs: the first half is
  the 32-byte CQE, the second the timestamp and 24 zero bytes; each
  timestamp is the model clock when the device wrote the CQE (the CQE
  trace record's time), under the functional and a timing profile,
  non-decreasing in CQE order;
* a CQ without the flag keeps 32-byte CQEs, bytes unchanged;
* RESIZE_CQ of a timestamp CQ carries the timestamps over;
* ring validation uses the 64-byte stride; unknown flags are refused;
* every byte of a 64-byte CQE is written (poison), exactly once, and
  nothing of the ring beyond the CQEs."""
import struct

import pytest

import qrnic_harness as q

P = 0xa4


def test_query_device_reports_the_clock(world):
    a = world.devs[0]
    attr = a.query_device()
    assert attr['abi_version'] == q.ABI_VERSION >= (1 << 16) | 7   # the clock since 1.7
    assert attr['hca_core_clock'] == q.CLOCK_KHZ == 1_000_000
    assert attr['timestamp_mask'] == (1 << 64) - 1
    assert attr['caps'] & (1 << 13)
    assert a.reg_read('CAPS') & (1 << 13)


def test_clock_register_is_the_model_clock(world):
    a = world.devs[0]
    world.advance(123_456)
    t0 = world.now
    assert t0 > 0
    assert a.clock() == t0
    assert a.reg_read('CLOCK_LO') == t0 & 0xffffffff
    assert a.reg_read('CLOCK_HI') == t0 >> 32
    # every doorbell page shows it, allocated or not
    for page in (0, 1, 5):
        assert a.clock(db_page=page) == t0
        assert a.db_read(page * q.DB_PAGE_SIZE + q.DB_CLOCK, 4) == t0 & 0xffffffff
        assert a.db_read(page * q.DB_PAGE_SIZE + q.DB_CLOCK + 4, 4) == t0 >> 32
    world.advance(1_000_000)
    assert a.clock() == world.now > t0
    # read-only: a write is refused and changes nothing
    n = a.tracepoint_count()
    a.reg_write('CLOCK_LO', 0)
    a.reg_write('CLOCK_HI', 0)
    a.db_write(q.DB_CLOCK, 0)
    assert a.clock() == world.now
    assert a.tracepoint_count() >= n + 3
    # a reset does not stop or restart it
    a.reg_write('CTRL', q.CTRL_RESET)
    assert a.clock() == world.now > t0


def test_clock_survives_odd_reads(world):
    """Unaligned or odd-sized reads of the clock are reads of nothing (0)
    with a guest error, never a crash."""
    a = world.devs[0]
    world.advance(5000)
    for off, size in ((q.REG_CLOCK_LO + 1, 4), (q.REG_CLOCK_LO + 4, 8), (q.REG_CLOCK_LO, 2)):
        assert a.reg_read(off, size) == 0
    assert a.db_read(q.DB_CLOCK + 4, 8) == 0
    assert a.db_read(q.DB_CLOCK, 2) == 0


def _rc(world, timestamp, profile=None, cq_log=7):
    """An RC pair with (timestamp) CQs: (a, pda, cqa, qa), (b, pdb, cqb, qb)."""
    if profile:
        for d in world.devs:
            d.set_timing(profile)
    c = q.connect_rc(*world.devs, mtu=1024, cq_log=cq_log, cq_timestamp=timestamp)
    return ((c.a.dev, c.pda, c.cqa, c.qa), (c.b.dev, c.pdb, c.cqb, c.qb))


@pytest.mark.parametrize('profile', ['functional', 'cx5-100g'])
def test_timestamps_are_the_model_clock_at_cqe_write(world, profile):
    world.trace_enable()
    (a, pda, cqa, qa), (b, pdb, cqb, qb) = _rc(world, True, profile)
    src = a.reg_mr(pda, 1 << 14)
    dst = b.reg_mr(pdb, 1 << 15)
    world.advance(10_000)
    for i in range(12):
        qb.post_recv([(dst, 4096 * (i % 8), 4096)], wr_id=100 + i)
    for i in range(12):
        qa.post_send('SEND', [(src, 0, 512 + 64 * i)], wr_id=i + 1)
        if i % 3 == 0:
            qa.post_send('RDMA_WRITE', [(src, 0, 8192)], remote=(dst, 0), wr_id=1000 + i)
    assert world.run() == 'idle'
    # the time of each CQE's trace record: when the device wrote it
    written = {}
    for ev in world.trace():
        if ev['name'] == 'cqe':
            written[(ev['dev'], ev['a'], ev['addr'])] = ev['t_ns']
    seen = 0
    for dev, cq in ((a, cqa), (b, cqb)):
        got = cq.poll()
        assert len(got) == (16 if dev is a else 12)
        ts = [c['timestamp'] for c in got]
        assert all(x > 0 for x in ts)
        assert ts == sorted(ts), ts                 # non-decreasing in CQE order
        for c in got:
            assert c['status_name'] == 'SUCCESS'
            assert c['timestamp'] == written[(dev.idx, cq.cqn, c['wr_id'])], c
            seen += 1
        assert ts[-1] <= world.now
    assert seen == 28
    if profile == 'cx5-100g':
        # the modelled time: CQEs of one run are not all at one instant
        assert len(set(c for c in written.values())) > 10


def test_cqe64_layout_and_poison(world):
    """Every byte of a 64-byte CQE is written: the first half is exactly a
    32-byte CQE, timestamp at 32, zeros after; no write outside the ring."""
    (a, pda, cqa, qa), (b, pdb, cqb, qb) = _rc(world, True)
    src = a.reg_mr(pda, 8192)
    dst = b.reg_mr(pdb, 8192)
    for cq in (cqa, cqb):
        cq.dev.mem_write(cq.ring_addr, bytes([P]) * (64 << cq.log_depth))
    world.advance(50_000)
    for d in (a, b):
        d.dma_log_start()
    qb.post_recv([(dst, 0, 4096)], wr_id=7)
    qa.post_send('SEND_WITH_IMM', [(src, 0, 300)], imm=0x01020304, wr_id=8)
    qa.post_send('RDMA_WRITE', [(src, 0, 100)], remote=(dst.rkey ^ 0x100, dst.addr(0)), wr_id=9)
    assert world.run() == 'idle'
    for cq, n in ((cqa, 2), (cqb, 1)):
        ring = cq.ring_addr
        log, lost = cq.dev.dma_log()
        assert lost == 0
        ring_writes = [(addr, size) for addr, size in log
                       if ring <= addr < ring + (64 << cq.log_depth)]
        # the CQE writes: whole 64-byte slots 0..n-1 and nothing else of the ring
        assert ring_writes and all(addr + size <= ring + 64 * n for addr, size in ring_writes)
        assert sum(size for _, size in ring_writes) == 64 * n, ring_writes
        raws = [cq.dev.mem_read(ring + 64 * i, 64) for i in range(n)]
        got = cq.poll()
        assert len(got) == n
        for raw, c in zip(raws, got):
            head = q.Cqe.from_buffer_copy(raw[:32])
            assert head.wr_id == c['wr_id'] and head.owner == 1 and head.rsvd == 0
            assert struct.unpack_from('<Q', raw, 32)[0] == c['timestamp'] > 0
            assert raw[40:] == bytes(24)
            assert bytes([P, P]) not in raw[:32]
        # the next slot is untouched
        assert cq.dev.mem_read(ring + 64 * n, 64) == bytes([P]) * 64
    assert [c['wr_id'] for c in got] == [7] and got[0]['imm'] == 0x01020304


def test_cq32_unchanged(world):
    """Without the flag a CQ has 32-byte CQEs, exactly as before ABI 1.5:
    consecutive slots, 32 bytes apart, no timestamp written after them."""
    (a, pda, cqa, qa), (b, pdb, cqb, qb) = _rc(world, False)
    src = a.reg_mr(pda, 8192)
    dst = b.reg_mr(pdb, 8192)
    a.mem_write(cqa.ring_addr, bytes([P]) * (32 << cqa.log_depth))
    for i in range(3):
        qa.post_send('RDMA_WRITE', [(src, 0, 64)], remote=(dst, 0), wr_id=i + 1)
    assert world.run() == 'idle'
    raws = [a.mem_read(cqa.ring_addr + 32 * i, 32) for i in range(4)]
    got = cqa.poll()
    assert [c['wr_id'] for c in got] == [1, 2, 3]
    assert all('timestamp' not in c for c in got)
    for i in range(3):
        assert q.Cqe.from_buffer_copy(raws[i]).wr_id == i + 1
    assert raws[3] == bytes([P]) * 32


def test_create_cq_flags_and_ring_checks(world):
    a = world.devs[0]
    eqn = a.comp_eq.eqn
    ring = a.mem_alloc(64 << 4)

    def create(flags, log_depth=4, addr=ring, rsvd=bytes(6)):
        cmd = struct.pack('<BBHI', q.CMD['CREATE_CQ'], 0, 0, 0) + \
            struct.pack('<IIBB6sQQ', 0, eqn, log_depth, flags, rsvd, addr, 0)
        return a.admin(cmd)

    st, cqe = create(4)                              # unknown flag (ABI 1.8: 2 = PAGELIST)
    assert st == q.AQ['BAD_PARAM'] and cqe['detail'] == 8 + 9
    st, cqe = create(0x80)
    assert st == q.AQ['BAD_PARAM'] and cqe['detail'] == 8 + 9
    st, cqe = create(0, rsvd=b'\0\0\0\0\0\1')        # the rest is still reserved
    assert st == q.AQ['BAD_PARAM'] and cqe['detail'] == 8 + 15
    # the 64-byte ring must not wrap the address space (32-byte one fits)
    top = (1 << 64) - 4096                          # 128 32-byte CQEs fit, 128 64-byte not
    st, cqe = create(1, log_depth=7, addr=top)
    assert st == q.AQ['BAD_PARAM'] and cqe['detail'] == 8 + 16
    st, cqe = create(1, log_depth=6, addr=top)
    assert st == q.AQ['OK']
    st, cqe = create(0, log_depth=7, addr=top)
    assert st == q.AQ['OK']
    st, cqe = create(1)
    assert st == q.AQ['OK'] and cqe['result'][0] > 0
    # resize of a timestamp CQ checks the 64-byte ring too
    cqn = cqe['result'][0]
    cmd = struct.pack('<BBHI', q.CMD['RESIZE_CQ'], 0, 0, 0) + \
        struct.pack('<IB3sQQ', cqn, 7, bytes(3), top, 0)
    st, cqe = a.admin(cmd)
    assert st == q.AQ['BAD_PARAM'] and cqe['detail'] == 8 + 8


@pytest.mark.parametrize('profile', ['functional', 'cx5-100g'])
def test_resize_keeps_timestamps(world, profile):
    (a, pda, cqa, qa), (b, pdb, cqb, qb) = _rc(world, True, profile)
    src = a.reg_mr(pda, 8192)
    dst = b.reg_mr(pdb, 8192)
    for i in range(6):
        qa.post_send('RDMA_WRITE', [(src, 0, 256)], remote=(dst, 0), wr_id=i + 1)
    assert world.run() == 'idle'
    first = cqa.poll(2)
    raw = {i: a.mem_read(cqa.ring_addr + 64 * i, 64) for i in range(2, 6)}
    before = {struct.unpack_from('<Q', r, 0)[0]: struct.unpack_from('<Q', r, 32)[0]
              for r in raw.values()}
    assert cqa.resize(3) == 4
    for i in range(4):
        qa.post_send('RDMA_WRITE', [(src, 0, 256)], remote=(dst, 0), wr_id=10 + i)
    assert world.run() == 'idle'
    rest = cqa.poll()
    assert [c['wr_id'] for c in rest] == [3, 4, 5, 6, 10, 11, 12, 13]
    for c in rest[:4]:
        assert c['timestamp'] == before[c['wr_id']]
    ts = [c['timestamp'] for c in first + rest]
    assert ts == sorted(ts) and ts[-1] <= world.now


def test_timestamp_cq_snapshot_roundtrip(world):
    """The flag travels in the snapshot: the loaded device keeps writing
    64-byte CQEs into the ring."""
    (a, pda, cqa, qa), (b, pdb, cqb, qb) = _rc(world, True)
    src = a.reg_mr(pda, 8192)
    dst = b.reg_mr(pdb, 8192)
    qa.post_send('RDMA_WRITE', [(src, 0, 64)], remote=(dst, 0), wr_id=1)
    assert world.run() == 'idle'
    blob = a.save()
    a.load(blob)
    qa.post_send('RDMA_WRITE', [(src, 0, 64)], remote=(dst, 0), wr_id=2)
    assert world.run() == 'idle'
    got = cqa.poll()
    assert [c['wr_id'] for c in got] == [1, 2]
    assert 0 < got[0]['timestamp'] <= got[1]['timestamp'] <= world.now
    raw = a.mem_read(cqa.ring_addr + 64, 64)
    assert struct.unpack_from('<Q', raw, 0)[0] == 2 and raw[40:] == bytes(24)
