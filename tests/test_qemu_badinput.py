# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: hostile guest input against the device inside QEMU.  After each
case QEMU must still be running and answering (qtest readl of VERSION), the
device must report the defined error (admin CQE status, error CQE, counters
from QUERY_STATS, AQ_STATUS/STATUS registers, LOG_GUEST_ERROR lines), and a
fresh connection must still move data.  The model-level versions of these
cases are in test_model_badinput.py / test_model_admin.py; here they go
through QEMU's memory core, PCI DMA, MSI-X and reset paths."""
import os
import random
import struct

import pytest

import qrnic_harness as h
from qtest import abi, scenarios
from qtest.driver import World
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

AQ = h.AQ
OUTSIDE_RAM = 0xffff_f000_0000       # nothing is mapped there on q35


# Every case twice: the model run with the BQL held (qtest's default) and
# without it (unlocked-run=on, docs/qemu.md section 13), where the device
# itself, not QEMU's re-entrancy guard, refuses DMA into its own BARs.
@pytest.fixture(scope='module', params=['unlocked-run=off', 'unlocked-run=on'],
                ids=['bql', 'unlocked'])
def qworld(qemu_binary, tmp_path_factory, request):  # noqa: F811
    log = str(tmp_path_factory.mktemp('qemu-badinput') / 'qemu.log')
    w = World.single(qemu_binary, ndev=2, init=False, name='badinput', dev_opts=request.param,
                     extra_args=['-d', 'guest_errors', '-D', log])
    w.log_path = log
    yield w
    w.close()


def alive_and_answering(world):
    for q in world.qemus:
        assert q.alive(), f'QEMU died:\n{q.stderr()}'
    for d in world.devs:
        assert d.reg_read('VERSION') == abi.ABI_VERSION


@pytest.fixture
def world(qworld):
    alive_and_answering(qworld)
    qworld.reset_devices()
    qworld.log_mark = os.path.getsize(qworld.log_path)
    yield qworld
    alive_and_answering(qworld)


def guest_log(world):
    """LOG_GUEST_ERROR (-d guest_errors -D file) lines written during this test."""
    with open(world.log_path, 'rb') as f:
        f.seek(world.log_mark)
        return f.read().decode(errors='replace')


def healthy(world):
    alive_and_answering(world)
    scenarios.healthy(world, *world.devs)


def stats_delta(dev, before):
    now = dev.query_stats()
    return {k: now[k] - before[k] for k in now if now[k] != before[k]}


def pair(world, cq_ring=None, sq_addr=None, rq_addr=None, cq_log=4):
    """An RC QP pair a<->b; a's CQ ring / SQ / RQ may be placed by the caller."""
    a, b = world.devs
    pda, pdb = a.alloc_pd(), b.alloc_pd()
    cqa = a.create_cq(cq_log, ring=cq_ring)
    cqb = b.create_cq(cq_log)
    qa = a.create_qp(pda, cqa, sq_addr=sq_addr, rq_addr=rq_addr)
    qb = b.create_qp(pdb, cqb)
    for me, peer in ((qa, qb), (qb, qa)):
        me.to_init()
        me.to_rtr(peer.dev, peer.qpn, rq_psn=0x100)
        me.to_rts(sq_psn=0x100)
    la, rb = a.reg_mr(pda, 8192), b.reg_mr(pdb, 8192)
    return qa, qb, cqa, cqb, la, rb


def ring_without_writing(qp):
    """Ring the SQ doorbell for one more WQE without writing the slot (for
    rings the test itself must not, or cannot, write)."""
    qp.sq_pi += 1
    qp.ring_sq()


# ---- admin queue -------------------------------------------------------------------------
def test_garbage_admin_commands(world):
    """300 commands of random bytes: each completes with a defined status,
    cmd_id and opcode are echoed, non-zero header flags are refused."""
    d = world.devs[0]
    rng = random.Random(1234)
    s0 = d.query_stats()
    errors = 0
    for i in range(300):
        cmd = bytearray(rng.randbytes(128))
        if i % 2:
            cmd[0] = rng.randint(1, h.CMD_MAX)
        if i % 4 == 1:
            cmd[1] = 0
        st, cqe = d.admin(bytes(cmd), raw=True)
        assert 0 <= st <= AQ['INJECTED'], (i, st)
        assert cqe['cmd_id'] == int.from_bytes(cmd[2:4], 'little')
        assert cqe['opcode'] == cmd[0]
        if cmd[1]:
            assert st != 0, 'non-zero header flags must be rejected'
        errors += st != 0
    assert d.reg_read('AQ_STATUS') == h.AQ_STATUS_ENABLED
    assert not d.reg_read('STATUS') & h.STATUS_FATAL
    delta = stats_delta(d, s0)
    assert delta['admin_cmds'] >= 300 and delta['admin_errors'] >= errors
    world.reset_devices()           # garbage may have created objects
    healthy(world)


@pytest.mark.parametrize('opcode', [0x00, h.CMD_MAX + 1, 0x7f, 0xff])
def test_admin_bad_opcode(world, opcode):
    d = world.devs[0]
    s0 = d.query_stats()
    st, cqe = d.admin(abi.command(opcode))
    assert st == AQ['BAD_OPCODE'] and cqe['opcode'] == opcode
    assert stats_delta(d, s0)['admin_errors'] == 1


def test_admin_oversized_counts(world):
    """Sizes and counts beyond the ABI limits: BAD_PARAM, nothing created."""
    d = world.devs[0]
    pd = d.alloc_pd()
    cq = d.create_cq(4)
    BP = AQ['BAD_PARAM']
    # log 23 > QRNIC_MAX_QUEUE_LOG (22)
    assert d.create_cq(23, check=False) is None and d.last_status == BP
    assert d.create_cq(0, check=False) is None and d.last_status == BP
    assert d.create_eq(23, vector=1, check=False) is None and d.last_status == BP
    assert d.create_eq(4, vector=8, check=False) is None and d.last_status == BP
    assert d.create_eq(4, vector=0xffff, check=False) is None and d.last_status == BP
    for kw in ({'sq_log': 16}, {'rq_log': 16}, {'sq_shift': 11}, {'sq_shift': 5},
               {'rq_shift': 10}, {'rq_shift': 4}, {'sq_log': 14, 'sq_shift': 9}):
        assert d.create_qp(pd, cq, check=False, **kw) is None, kw
        assert d.last_status in (BP, AQ['NO_RESOURCES']), (kw, d.last_status)
    # REG_MR: npages that does not match the range, and a length beyond max_mr_size
    d.patch_next_cmd('reg_mr.npages', 3)
    assert d.reg_mr(pd, 8192, iova=0x10000, check=False) is None and d.last_status == BP
    d.patch_next_cmd('reg_mr.length', (1 << 32) + 4096)
    assert d.reg_mr(pd, 4096, check=False) is None and d.last_status == BP
    d.patch_next_cmd('reg_mr.page_shift', 31)
    assert d.reg_mr(pd, 4096, check=False) is None and d.last_status == BP
    # query answers truncated to resp_len, never longer
    d.qemu.memset(d.scratch, 4096, 0xee)
    st, _ = d.admin(abi.command('QUERY_DEVICE', abi.CmdQuery(resp_addr=d.scratch, resp_len=12)))
    assert st == 0
    got = d.qemu.memread(d.scratch, 16)
    assert struct.unpack('<I', got[:4])[0] == abi.ABI_VERSION and got[12:] == b'\xee' * 4
    healthy(world)


def test_wrong_qp_state_transitions(world):
    d, peer = world.devs
    pd = d.alloc_pd()
    qp = d.create_qp(pd, d.create_cq(4))
    BS = AQ['BAD_STATE']
    s0 = d.query_stats()
    assert qp.modify('RTR', check=False) in (BS, AQ['BAD_ATTR_MASK'])
    assert qp.to_rts(check=False) == BS
    assert qp.modify('SQD', check=False) == BS
    assert qp.modify(9, check=False) in (BS, AQ['BAD_PARAM'])
    qp.to_init()
    assert qp.to_rts(check=False) == BS
    qp.to_rtr(peer, 5)
    assert qp.to_init(check=False) == BS
    qp.to_rts()
    assert qp.state == 'RTS'
    assert qp.to_rtr(peer, 5, check=False) == BS
    qp.modify('ERR')
    assert qp.to_init(check=False) == BS
    qp.modify('RESET')
    assert qp.state == 'RESET'
    assert stats_delta(d, s0)['admin_errors'] == 8
    # a QP that does not exist
    st, _ = d.admin(abi.command('MODIFY_QP', abi.CmdModifyQp(qpn=777)))
    assert st == AQ['BAD_HANDLE']


def test_admin_producer_index_jump(world):
    """AQ_SQ_DB beyond the ring depth: AQ_STATUS.ERROR, nothing executed;
    disabling the AQ clears the error and a new bring-up works."""
    d = world.devs[0]
    ci = d.reg_read('AQ_SQ_CI')
    d.reg_write('AQ_SQ_DB', d.aq_pi + (1 << d.aq_log) + 3)
    assert world.run_until(lambda: d.reg_read('AQ_STATUS') & h.AQ_STATUS_ERROR, 5)
    assert d.reg_read('AQ_SQ_CI') == ci
    st, _ = d.admin(abi.command('CREATE_PD'), timeout=0.3)
    assert st == h.E_TIMEOUT
    d.reg_write('AQ_CTRL', 0)
    assert not d.reg_read('AQ_STATUS') & h.AQ_STATUS_ERROR
    d.bringup()
    assert d.alloc_pd() is not None
    healthy(world)


def test_admin_rings_outside_ram(world):
    d = world.devs[0]
    d.reg_write('CTRL', h.CTRL_RESET)
    world.wait(lambda: d.reg_read('STATUS') == h.STATUS_READY)
    for reg, v in (('AQ_SQ_BASE_LO', 0), ('AQ_SQ_BASE_HI', OUTSIDE_RAM >> 32),
                   ('AQ_CQ_BASE_LO', 0x1000), ('AQ_CQ_BASE_HI', OUTSIDE_RAM >> 32)):
        d.reg_write(reg, v)
    d.reg_write('AQ_CTRL', 4 | h.AQ_CTRL_ENABLE)
    d.reg_write('CTRL', h.CTRL_ENABLE)
    d.reg_write('AQ_SQ_DB', 1)

    def failed():
        return d.reg_read('STATUS') & h.STATUS_FATAL or \
            d.reg_read('AQ_STATUS') & h.AQ_STATUS_ERROR
    assert world.run_until(failed, 5), 'no defined error for unreachable admin rings'
    if d.reg_read('STATUS') & h.STATUS_FATAL:
        assert d.reg_read('FATAL_CODE') in (1, 3)     # QRNIC_FATAL_DMA / _AQ
    assert 'qrnic' in guest_log(world)
    world.reset_devices()
    healthy(world)


# ---- work requests -----------------------------------------------------------------------
@pytest.mark.parametrize('num_sge', [29, 31, 255])   # 29: over the 512-byte stride
def test_send_wqe_num_sge_too_large(world, num_sge):
    a, b = world.devs
    conn = h.connect_rc(a, b)
    la, rb = scenarios.mrs(conn, 8192)
    rb.fill_random(random.Random(2))
    before = rb.read()
    s0, sb0 = a.query_stats(), b.query_stats()
    a.patch_next_wqe('num_sge', num_sge)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 16)] * 16, remote=(rb, 0), wr_id=1)
    c = scenarios.one_cqe(conn.cqa)
    assert c['status_name'] == 'LOC_QP_OP_ERR' and c['vendor_err_name'] == 'BAD_WQE', c
    assert c['wr_id'] == 1
    assert rb.read() == before
    assert stats_delta(a, s0).get('bad_wqes') == 1
    assert stats_delta(b, sb0).get('rx_packets', 0) == 0
    assert conn.qa.state == 'ERR'
    healthy(world)


def test_recv_wqe_num_sge_too_large(world):
    a, b = world.devs
    conn = h.connect_rc(a, b)
    la, rb = scenarios.mrs(conn, 8192)
    conn.qb.post_recv_raw(bytes(h.RecvWqe(wr_id=3, num_sge=40)))
    conn.qa.post_send('SEND', [(la, 0, 10)], wr_id=4)
    c = scenarios.one_cqe(conn.cqb)
    assert c['status_name'] != 'SUCCESS' and c['wr_id'] == 3, c
    assert rb.read(0, 10) == b'\0' * 10
    healthy(world)


def test_garbage_wqes(world):
    """Random bytes as send WQEs: every one completes (with an error), none
    hangs the QP or the device."""
    a, b = world.devs
    conn = h.connect_rc(a, b)
    rng = random.Random(7)
    s0 = a.query_stats()
    for i in range(8):
        w = bytearray(rng.randbytes(512))
        w[8:16] = struct.pack('<Q', 100 + i)      # wr_id
        w[1] |= h.WQE_F_SIGNALED
        conn.qa.post_send_raw(bytes(w))
        c = scenarios.one_cqe(conn.cqa)
        assert c['wr_id'] == 100 + i
        assert c['status_name'] != 'SUCCESS' or i
        if conn.qa.state == 'ERR':
            conn.qa.modify('RESET')
            conn.qa.to_init()
            conn.qa.to_rtr(b, conn.qb.qpn, rq_psn=conn.psn_b)
            conn.qa.to_rts(sq_psn=conn.psn_a)
    assert stats_delta(a, s0).get('cqe_errors', 0) >= 1
    world.reset_devices()
    healthy(world)


# ---- doorbells ---------------------------------------------------------------------------
def test_doorbells_for_missing_queues(world):
    a = world.devs[0]
    s0 = a.query_stats()
    for qn in (0, 2, 500, 0xffffff):
        a.db_write(h.DB_SQ, qn | (1 << 32))
        a.db_write(h.DB_RQ, qn | (1 << 32))
        a.db_write(h.DB_CQ, qn | (1 << 32))
    for page in (1, 63, 64):            # pages of user contexts that do not exist
        a.db_write(page * h.DB_PAGE_SIZE + h.DB_SQ, 2 | (1 << 32))
    world.settle()
    assert stats_delta(a, s0)['doorbells_ignored'] >= 12 + 2
    log = guest_log(world)
    assert 'no such QP' in log, log[-2000:]
    healthy(world)


@pytest.mark.parametrize('size', [1, 2, 4])
def test_doorbell_wrong_size(world, size):
    a, b = world.devs
    conn = h.connect_rc(a, b)
    la, rb = scenarios.mrs(conn, 4096)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb, 0), ring=False, wr_id=1)
    s0 = a.query_stats()
    a.db_write(h.DB_SQ, conn.qa.qpn | (1 << 32), size)
    a.db_write(h.DB_SQ + 4, 1, size)
    world.settle()
    assert conn.cqa.poll() == []
    assert stats_delta(a, s0)['doorbells_ignored'] >= 1
    assert 'aligned 64-bit' in guest_log(world)
    conn.qa.ring_sq()
    assert [c['wr_id'] for c in conn.cqa.wait(1)] == [1]


def test_sq_producer_index_jump(world):
    """A doorbell claiming 100000 new WQEs on a 64-entry SQ: ignored."""
    a, b = world.devs
    conn = h.connect_rc(a, b)
    s0 = a.query_stats()
    a.db_write(h.DB_SQ, conn.qa.qpn | (100000 << 32))
    a.db_write(h.DB_CQ, conn.cqa.cqn | (5000 << 32) | abi.DB_CQ_ARM)
    world.settle()
    assert stats_delta(a, s0)['doorbells_ignored'] == 2
    assert conn.cqa.poll() == []
    healthy(world)


# ---- DMA outside guest RAM and into MMIO -------------------------------------------------
def test_cq_ring_outside_ram(world):
    """A CQ ring at 0xffff_f000_0000: creation succeeds (the device cannot
    know), the first CQE write fails: dma_errors, CQ_ERR and QP_FATAL async
    events, the QP goes to ERR, the device is not fatal."""
    a, b = world.devs
    a.async_eq.poll()
    qa, qb, cqa, cqb, la, rb = pair(world, cq_ring=OUTSIDE_RAM)
    s0 = a.query_stats()
    la.write(0, b'12345678')
    qa.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb, 0), wr_id=1)
    assert world.run_until(lambda: qa.query()['state_name'] == 'ERR', 10)
    delta = stats_delta(a, s0)
    assert delta['dma_errors'] >= 1, delta
    events = [(e['event'], e['handle']) for e in a.async_eq.poll()]
    assert ('CQ_ERR', cqa.cqn) in events and ('QP_FATAL', qa.qpn) in events, events
    assert rb.read(0, 8) == b'12345678'      # the data itself went through
    assert not a.reg_read('STATUS') & h.STATUS_FATAL
    healthy(world)


def test_sq_ring_outside_ram(world):
    a, b = world.devs
    qa, qb, cqa, cqb, la, rb = pair(world, sq_addr=OUTSIDE_RAM)
    s0 = a.query_stats()
    ring_without_writing(qa)
    c = scenarios.one_cqe(cqa)
    assert c['status_name'] == 'LOC_QP_OP_ERR' and c['vendor_err_name'] == 'DMA', c
    assert stats_delta(a, s0)['dma_errors'] >= 1
    assert qa.state == 'ERR'
    healthy(world)


def test_eq_ring_outside_ram(world):
    """An EQ ring outside RAM: the EQE write fails.  The EQ is device
    internal state, so that is a device fatal error (STATUS.FATAL,
    FATAL_CODE = QRNIC_FATAL_DMA, a DEVICE_FATAL async event), admin and
    doorbells stop, and only a reset recovers."""
    a = world.devs[0]
    eq = a.create_eq(4, vector=3, ring=OUTSIDE_RAM)
    cq = a.create_cq(4, eq=eq)
    eq.arm()
    cq.arm()
    pd = a.alloc_pd()
    qp = a.create_qp(pd, cq)
    qp.to_init()
    qp.modify('ERR')
    qp.post_send('SEND', [], wr_id=1)      # flushed at once: a CQE, then an EQE
    assert world.run_until(lambda: a.reg_read('STATUS') & h.STATUS_FATAL, 10)
    assert a.reg_read('FATAL_CODE') == 1                       # QRNIC_FATAL_DMA
    assert [c['status_name'] for c in cq.poll()] == ['WR_FLUSH_ERR']
    ev = a.async_eq.poll()
    assert [(e['event'], e['data']) for e in ev] == [('DEVICE_FATAL', 1)], ev
    assert not a.irq_fired(3)
    assert 'device fatal error' in guest_log(world)
    st, _ = a.admin(abi.command('CREATE_PD'), timeout=0.3)
    assert st == h.E_TIMEOUT                                  # admin stopped
    world.reset_devices()
    healthy(world)


def test_mr_pbl_and_pages_outside_ram(world):
    """REG_MR with its PBL outside RAM: DMA_ERROR, nothing registered.  An MR
    whose pages are outside RAM (a DMA MR at such an address): the WRITE
    that reads them completes with a local DMA error, nothing is sent."""
    a, b = world.devs
    pd = a.alloc_pd()
    a.patch_next_cmd('reg_mr.pbl_addr', OUTSIDE_RAM)
    assert a.reg_mr(pd, 8192, levels=1, check=False) is None
    assert a.last_status == AQ['DMA_ERROR']
    conn = h.connect_rc(a, b)
    rb = b.reg_mr(conn.pdb, 4096)
    bad = a.reg_mr(conn.pda, 8192, iova=OUTSIDE_RAM, phys=True, check=False)
    assert bad is not None, a.last_cqe()
    sb0 = b.query_stats()
    conn.qa.post_send('RDMA_WRITE', [(bad, 0, 100)], remote=(rb, 0), wr_id=1)
    c = scenarios.one_cqe(conn.cqa)
    assert c['status_name'] != 'SUCCESS' and c['vendor_err_name'] == 'DMA', c
    assert stats_delta(b, sb0).get('rx_packets', 0) == 0
    assert rb.read(0, 100) == b'\0' * 100
    healthy(world)


@pytest.mark.parametrize('where', ['cq', 'sq'])
def test_rings_in_own_mmio_bar(world, where):
    """Rings pointing at the device's own BAR0: QEMU's re-entrancy guard
    refuses the DMA (device -> its own MMIO); the device reports a DMA
    error, its registers are untouched."""
    a, b = world.devs
    a.reg_write('SCRATCH', 0x5a5aa5a5)
    qa, qb, cqa, cqb, la, rb = pair(world, **({'cq_ring': a.regs} if where == 'cq'
                                               else {'sq_addr': a.regs}))
    s0 = a.query_stats()
    if where == 'cq':
        qa.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb, 0), wr_id=1)
        assert world.run_until(lambda: qa.query()['state_name'] == 'ERR', 10)
    else:
        ring_without_writing(qa)
        c = scenarios.one_cqe(cqa)
        assert c['vendor_err_name'] == 'DMA', c
    assert stats_delta(a, s0)['dma_errors'] >= 1
    assert a.reg_read('SCRATCH') == 0x5a5aa5a5
    assert a.reg_read('STATUS') == h.STATUS_READY | h.STATUS_ENABLED
    healthy(world)


def test_link_change_eqe_into_own_mmio_bar(world):
    """An async EQ whose ring is the device's own BAR0, then a link change
    (QMP set_link): the PORT_ERR EQE is written by DMA from the netdev's
    link callback, which runs outside the bottom half.  It too engages the
    re-entrancy guard: the write is refused, the device
    reports a DMA fatal error, and no register took the EQE's bytes."""
    a = world.devs[0]
    a.reg_write('SCRATCH', 0x5a5aa5a5)
    a.async_eq.destroy()
    a.async_eq = a.create_eq(4, vector=1, async_events=True, ring=a.regs)
    a.qemu.qmp('set_link', name='qrnic0', up=False)
    assert world.run_until(lambda: a.reg_read('STATUS') & h.STATUS_FATAL, 10)
    assert a.reg_read('FATAL_CODE') == 1                       # QRNIC_FATAL_DMA
    assert a.reg_read('SCRATCH') == 0x5a5aa5a5
    assert a.reg_read('VERSION') == abi.ABI_VERSION
    a.qemu.qmp('set_link', name='qrnic0', up=True)
    world.reset_devices()
    healthy(world)


# ---- MMIO --------------------------------------------------------------------------------
def test_bar0_every_offset_every_size_read(world):
    d = world.devs[0]
    implemented = set(h.REG.values())
    q = d.qemu
    for size in (1, 2, 4, 8):
        for off in range(0, h.BAR0_SIZE - size + 1, size):
            v = q.read_sized(d.regs + off, size)
            assert v < (1 << (8 * size))
            if size == 4 and off not in implemented:
                assert v == 0, f'undefined offset {off:#x} reads {v:#x}'
        # and unaligned accesses (QEMU's memory core or the device refuse them)
        for off in range(1, 64, 3):
            q.read_sized(d.regs + off, size)
    assert d.reg_read('VERSION') == abi.ABI_VERSION
    assert d.reg_read('STATUS') == h.STATUS_READY | h.STATUS_ENABLED
    healthy(world)


def test_bar0_every_offset_every_size_write(world):
    """Random values written to every BAR0 offset at sizes 1/2/4/8 (CTRL
    without ENABLE, so the device stays off while its rings are garbage),
    then the device enabled on rings outside RAM, then CTRL.RESET."""
    d = world.devs[0]
    q = d.qemu
    rng = random.Random(99)
    ctrl = h.REG['CTRL']
    for size in (1, 2, 4, 8):
        for off in range(0, h.BAR0_SIZE - size + 1, size):
            v = rng.getrandbits(8 * size)
            if off <= ctrl < off + size:
                v &= ~(h.CTRL_ENABLE << (8 * (ctrl - off)))
            q.write_sized(d.regs + off, v, size)
    assert q.alive()
    assert d.reg_read('VERSION') == abi.ABI_VERSION
    # phase 2: enabled, every ring outside RAM, every doorbell rung
    for reg in ('AQ_SQ_BASE_HI', 'AQ_CQ_BASE_HI', 'ETH_TX_BASE_HI', 'ETH_RX_BASE_HI'):
        d.reg_write(reg, OUTSIDE_RAM >> 32)
    for reg in ('AQ_SQ_BASE_LO', 'AQ_CQ_BASE_LO', 'ETH_TX_BASE_LO', 'ETH_RX_BASE_LO'):
        d.reg_write(reg, 0x10000)
    d.reg_write('AQ_CTRL', 0)
    d.reg_write('AQ_CTRL', 5 | h.AQ_CTRL_ENABLE)
    d.reg_write('ETH_CTRL', 3 | (3 << 4) | (1 << 30) | (1 << 31))   # 8 entries, RX+TX on
    d.reg_write('CTRL', h.CTRL_ENABLE)
    d.reg_write('AQ_SQ_DB', 2)
    d.reg_write('ETH_TX_DB', 2)
    d.reg_write('ETH_RX_DB', 2)
    d.reg_write('EQ_DB', 0xffff_ffff_0001_0003, 8)
    world.settle(50)
    st = d.reg_read('STATUS')
    assert st & h.STATUS_FATAL or d.reg_read('AQ_STATUS') & h.AQ_STATUS_ERROR, hex(st)
    world.reset_devices()
    healthy(world)


def test_bar2_reads_zero_writes_ignored(world):
    d = world.devs[0]
    q = d.qemu
    pages = d.reg_read('NUM_DB_PAGES')
    rng = random.Random(5)
    s0 = d.query_stats()
    n = 0
    clock = (h.DB_CLOCK, h.DB_CLOCK + 4)    # the read-only device clock (ABI 1.7)
    for page in (0, 1, pages - 1):
        for off in range(0, h.DB_PAGE_SIZE, 8 if page else 4):
            for size in (4, 8):
                if off % size == 0 and (page or off < 0x40) and \
                        not (off in clock and (size == 4 or off == h.DB_CLOCK)):
                    assert q.read_sized(d.db + page * h.DB_PAGE_SIZE + off, size) == 0
        base = d.db + page * h.DB_PAGE_SIZE
        t = q.clock()
        assert q.read_sized(base + h.DB_CLOCK, 8) == t
        assert (q.read_sized(base + h.DB_CLOCK + 4, 4) << 32 |
                q.read_sized(base + h.DB_CLOCK, 4)) == t
        # 0x7f8: below the BlueFlame buffers; 0x908, 0xb08: undefined
        # offsets within them (a BF data word at 0x800 is taken, spec 3.2.1)
        for off in (0x18, 0x20, 0x7f8, 0x908, 0xb08, 0xff8):
            q.writeq(d.db + page * h.DB_PAGE_SIZE + off, rng.getrandbits(64))
            n += 1
    world.settle()
    assert stats_delta(d, s0)['doorbells_ignored'] >= n
    healthy(world)


# ---- resets while busy -------------------------------------------------------------------
def _busy_transfer(world, mtu=1024):
    a, b = world.devs
    conn = h.connect_rc(a, b, mtu=mtu)
    la, rb = a.reg_mr(conn.pda, 1 << 20), b.reg_mr(conn.pdb, 1 << 20)
    la.fill_random(random.Random(3))
    n = scenarios.start_stuck_traffic(conn, la, rb)
    return conn, la, rb, n


@pytest.mark.parametrize('who', ['requester', 'responder'])
def test_ctrl_reset_during_1mib_transfer(world, who):
    conn, la, rb, n = _busy_transfer(world)
    a, b = world.devs
    dev = a if who == 'requester' else b
    dev.reg_write('CTRL', h.CTRL_RESET)
    world.wait(lambda: dev.reg_read('STATUS') == h.STATUS_READY, 10, 'READY after reset')
    assert dev.reg_read('AQ_STATUS') == 0 and dev.reg_read('CTRL') == 0
    assert conn.cqa.peek() < n, 'the transfer was over before the reset'
    if who == 'responder':
        # the requester's QP retries into the void, then reports it
        world.clock_rate = 50.0
        try:
            got = conn.cqa.wait(n, 60)
        finally:
            world.clock_rate = 1.0
        st = [c['status_name'] for c in got]
        assert 'RETRY_EXC_ERR' in st and set(st) <= {'SUCCESS', 'RETRY_EXC_ERR',
                                                      'WR_FLUSH_ERR'}, st
    else:
        world.run_until(lambda: False, 0.2)      # the responder copes with the silence
        assert conn.cqb.poll() == []
    alive_and_answering(world)
    world.reset_devices()
    healthy(world)


def test_system_reset_during_1mib_transfer(world):
    """QMP system_reset in the middle of traffic: PCI state back to power-on
    (BARs, command register, MSI-X off), device registers at reset values,
    and the device works again once re-programmed."""
    conn, la, rb, n = _busy_transfer(world)
    q = world.qemus[0]
    q.system_reset()
    assert conn.cqa.peek() < n, 'the transfer was over before the reset'
    for d in world.devs:
        assert d.pci.cfg_read(0x04, 2) & 0x6 == 0           # memory + master off
        assert d.pci.cfg_read(0x10) & ~0xf == 0            # BAR0 unassigned
        assert not d.pci.msix_enabled()
    q.mem.release()
    for d in world.devs:
        d.after_system_reset()
        assert d.reg_read('STATUS') == h.STATUS_READY
        assert d.reg_read('CTRL') == 0 and d.reg_read('AQ_CTRL') == 0
        assert d.reg_read('AQ_STATUS') == 0 and d.reg_read('SCRATCH') == 0
    for d in world.devs:
        d.init()
    assert all(d.query_stats()['tx_packets'] == 0 for d in world.devs)
    healthy(world)


def test_bus_master_off_blocks_dma(world):
    """With bus mastering disabled the device cannot reach guest RAM: admin
    commands do not complete; re-enabling it lets them through."""
    d = world.devs[0]
    cmdreg = d.pci.cfg_read(0x04, 2)
    d.pci.cfg_write(0x04, cmdreg & ~0x4, 2)
    st, _ = d.admin(abi.command('CREATE_PD'), timeout=0.3)
    assert st == h.E_TIMEOUT
    d.pci.cfg_write(0x04, cmdreg, 2)
    world.reset_devices()
    healthy(world)
