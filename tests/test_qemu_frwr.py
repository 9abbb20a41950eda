# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: the Verbs II device features at the register level (spec
12.12, 12.13, 6.6.17-6.6.19): ALLOC_MR and ALLOC_MW through the admin
queue, REG_MR, LOCAL_INV and BIND_MW WQEs through the SQ doorbell,
SEND_WITH_INV between two devices in one QEMU, RESIZE_CQ with completions
in guest RAM, MODIFY_CQ, REREG_MR; bytes checked in guest RAM."""
import random

import pytest

import qrnic_harness as h
from qtest.fixtures import qemu_binary, shared_world  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu
RW = h.ACCESS_LOCAL_WRITE | h.ACCESS_REMOTE_WRITE | h.ACCESS_REMOTE_READ


qworld, world = shared_world('frwr')


@pytest.fixture
def conn(world):
    yield h.connect_rc(*world.devs, mtu=1024)


def test_frwr_write_then_remote_invalidate(conn):
    rng = random.Random(5)
    a, b = conn.a.dev, conn.b.dev
    assert a.query_device()['caps'] & (1 << 8)
    mr = a.alloc_mr(conn.pda, 8)
    assert mr.query()['flags'] == 4
    mr.register(conn.qa, 3 * 4096 - 5, access=RW, wr_id=11)
    c = conn.cqa.wait(1)[0]
    assert (c['status_name'], c['opcode_name'], c['wr_id']) == ('SUCCESS', 'REG_MR', 11), c
    src = b.reg_mr(conn.pdb, 4 * 4096)
    data = src.fill_random(rng, 0, mr.length)
    conn.qb.post_send('RDMA_WRITE', [(src, 0, mr.length)], remote=(mr.rkey, mr.iova))
    assert conn.cqb.wait(1)[0]['status_name'] == 'SUCCESS'
    assert mr.read() == data                     # in the guest pages the list named
    dst = a.reg_mr(conn.pda, 4096)
    conn.qa.post_recv([(dst, 0, 4096)], wr_id=3)
    conn.qb.post_send('SEND_WITH_INV', [(src, 0, 50)], invalidate=mr.rkey)
    assert conn.cqb.wait(1)[0]['status_name'] == 'SUCCESS'
    r = conn.cqa.wait(1)[0]
    assert r['status_name'] == 'SUCCESS' and r['flags'] & h.CQE_F_WITH_INV, r
    assert r['imm_data'] == mr.rkey and dst.read(0, 50) == data[:50]
    assert mr.query()['flags'] == 4
    conn.qb.post_send('RDMA_READ', [(src, 0, 8)], remote=(mr.rkey, mr.iova))
    assert conn.cqb.wait(1)[0]['status_name'] == 'REM_ACCESS_ERR'


def test_local_inv_and_bad_reg_mr(conn):
    a = conn.a.dev
    mr = a.alloc_mr(conn.pda, 4)
    mr.register(conn.qa, 4096, access=RW)
    conn.qa.post_send('LOCAL_INV', invalidate=mr.key, wr_id=2)
    got = conn.cqa.wait(2)
    assert [(c['opcode_name'], c['status_name']) for c in got] == \
        [('REG_MR', 'SUCCESS'), ('LOCAL_INV', 'SUCCESS')], got
    # five pages into an MR of four: the guest gets an error CQE, QEMU lives
    mr.register(conn.qa, 5 * 4096, iova=0x10000, access=RW, wr_id=9)
    c = conn.cqa.wait(1)[0]
    assert (c['status_name'], c['vendor_err']) == ('LOC_QP_OP_ERR', 1), c
    assert conn.qa.state == 'ERR'
    assert a.stat('bad_wqes') == 0               # a REG_MR that fails its checks is no bad WQE
    mr.dereg()


def test_memory_window_type2(conn):
    """A type 2 window over part of an MR: the peer's WRITE through it lands
    in guest RAM, one past its end is NAKed, and after SEND_WITH_INV of its
    rkey the window is free again."""
    rng = random.Random(8)
    a, b = conn.a.dev, conn.b.dev
    mr = a.reg_mr(conn.pda, 4 * 4096, access=RW | h.ACCESS_MW_BIND)
    mw = a.alloc_mw(conn.pda, 2)
    mw.bind(conn.qa, mr, 4096, 4096, access=h.ACCESS_REMOTE_WRITE, wr_id=4)
    c = conn.cqa.wait(1)[0]
    assert (c['status_name'], c['opcode_name'], c['wr_id']) == ('SUCCESS', 'BIND_MW', 4), c
    src = b.reg_mr(conn.pdb, 8192)
    data = src.fill_random(rng, 0, 4096)
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 4096)], remote=(mw.rkey, mw.iova))
    assert conn.cqb.wait(1)[0]['status_name'] == 'SUCCESS'
    assert mr.read(4096, 4096) == data and mr.read(0, 4096) == bytes(4096)
    dst = a.reg_mr(conn.pda, 4096)
    conn.qa.post_recv([(dst, 0, 4096)])
    conn.qb.post_send('SEND_WITH_INV', [(src, 0, 16)], invalidate=mw.rkey)
    assert conn.cqb.wait(1)[0]['status_name'] == 'SUCCESS'
    r = conn.cqa.wait(1)[0]
    assert r['flags'] & h.CQE_F_WITH_INV and r['imm_data'] == mw.rkey, r
    assert mw.query()['flags'] == 0x18
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(mw.rkey, mw.iova))
    assert conn.cqb.wait(1)[0]['status_name'] == 'REM_ACCESS_ERR'
    assert mw.dealloc() == 0 and mr.dereg() == 0


def test_resize_cq_moderation_and_rereg(conn):
    """Twenty SENDs complete into a 1024-entry CQ; after polling five the
    CQ moves to a 32-entry ring with the other fifteen carried, in order;
    moderation delays the event to the fourth CQE; REREG_MR moves an MR's
    translation under the same rkey."""
    a, b = conn.a.dev, conn.b.dev
    src = a.reg_mr(conn.pda, 4096)
    dst = b.reg_mr(conn.pdb, 4096)
    for i in range(20):
        conn.qb.post_recv([(dst, 0, 4096)])
    for i in range(20):
        conn.qa.post_send('SEND', [(src, 0, 64)], wr_id=i)
    got = conn.cqa.wait(5)
    qworld = conn.a.dev.world
    qworld.run_until(lambda: conn.cqa.peek() >= 15, 30.0)
    assert conn.cqa.resize(5) == 15
    got += conn.cqa.poll()
    assert [c['wr_id'] for c in got] == list(range(20))
    # moderation: count 4, no period
    assert conn.cqa.moderate(4, 0) == 0
    conn.cqa.arm()
    a.irq_clear()
    for i in range(4):
        conn.qb.post_recv([(dst, 0, 4096)])
    for i in range(3):
        conn.qa.post_send('SEND', [(src, 0, 64)], wr_id=100 + i)
    got = conn.cqa.wait(3)
    assert [c['wr_id'] for c in got] == [100, 101, 102]
    assert not any(e['type'] == h.EQE_COMPLETION for e in a.comp_eq.poll())
    conn.qa.post_send('SEND', [(src, 0, 64)], wr_id=103)
    conn.cqa.wait(1)
    assert any(e['type'] == h.EQE_COMPLETION and e['handle'] == conn.cqa.cqn
               for e in a.comp_eq.poll())
    # REREG_MR: the peer's WRITE through the same rkey lands in new pages
    mr = b.reg_mr(conn.pdb, 4096)
    new = b.mem_alloc(4096)
    assert b.rereg_mr(mr.key, {'trans'}, iova=0x9000_0000, length=4096, pbl_addr=new,
                      npages=1, access=h.ACCESS_ALL) == 0
    src.write(0, b'rereg!' * 10)
    conn.qa.post_send('RDMA_WRITE', [(src, 0, 60)], remote=(mr.key, 0x9000_0000), wr_id=7)
    assert conn.cqa.wait(1)[0]['status_name'] == 'SUCCESS'
    assert b.mem_read(new, 60) == b'rereg!' * 10
