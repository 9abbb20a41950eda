# SPDX-License-Identifier: GPL-2.0-or-later
"""Transfers with their checks, shared by the qemu-tier tests (one QEMU with
two devices on a hub, or two QEMUs joined by a dgram netdev)."""
import random
import struct

import qrnic_harness as h


def one_cqe(cq, timeout=30.0):
    c = cq.wait(1, timeout)
    assert len(c) == 1, f'{cq}: expected one CQE, got {c}'
    return c[0]


def expect_success(c, opcode_name, wr_id, qpn):
    assert c['status_name'] == 'SUCCESS', c
    assert c['opcode_name'] == opcode_name, c
    assert c['wr_id'] == wr_id, c
    assert c['qpn'] == qpn, c


def mrs(conn, size=16384):
    la = conn.a.dev.reg_mr(conn.pda, size)
    rb = conn.b.dev.reg_mr(conn.pdb, size)
    return la, rb


def rdma_write(conn, la, rb, rng, n=10000, sges=2, wr_id=0x1001):
    """WRITE n bytes from la (in `sges` pieces with gaps) to rb at offset 64."""
    data = la.fill_random(rng, 0, n + 64 * sges)
    before = rb.read()
    pieces, off, expect = [], 0, b''
    step = -(-n // sges)
    for i in range(sges):
        ln = min(step, n - i * step)
        pieces.append((la, off, ln))
        expect += data[off:off + ln]
        off += ln + 64
    conn.qa.post_send('RDMA_WRITE', pieces, remote=(rb, 64), wr_id=wr_id)
    c = one_cqe(conn.cqa)
    expect_success(c, 'RDMA_WRITE', wr_id, conn.qa.qpn)
    after = rb.read()
    assert after[64:64 + n] == expect
    assert after[:64] == before[:64] and after[64 + n:] == before[64 + n:], \
        'bytes outside the target range changed'
    assert conn.cqb.poll() == [], 'a plain WRITE must not complete on the responder'
    return c


def rdma_read(conn, la, rb, rng, n=9000, wr_id=0x1002):
    src = rb.fill_random(rng, 0, n + 100)
    la.write(0, b'\0' * (n + 100))
    conn.qa.post_send('RDMA_READ', [(la, 100, n)], remote=(rb, 50), wr_id=wr_id)
    c = one_cqe(conn.cqa)
    expect_success(c, 'RDMA_READ', wr_id, conn.qa.qpn)
    assert c['byte_len'] == n, c
    got = la.read(0, n + 100)
    assert got[100:] == src[50:50 + n]
    assert got[:100] == b'\0' * 100
    return c


def send_recv(conn, la, rb, rng, n=3000, imm=0xdeadbeef, wr_id=0x1003):
    conn.qb.post_recv([(rb, 0, 2000), (rb, 4096, 4096)], wr_id=wr_id + 0x100)
    data = la.fill_random(rng, 0, n)
    op = 'SEND_WITH_IMM' if imm is not None else 'SEND'
    conn.qa.post_send(op, [(la, 0, n)], imm=imm or 0, wr_id=wr_id)
    cs = one_cqe(conn.cqa)
    expect_success(cs, 'SEND', wr_id, conn.qa.qpn)
    cr = one_cqe(conn.cqb)
    expect_success(cr, 'RECV', wr_id + 0x100, conn.qb.qpn)
    assert cr['byte_len'] == n, cr
    if imm is not None:
        assert cr['flags'] & h.CQE_F_WITH_IMM and cr['imm'] == imm, cr
    assert rb.read(0, 2000) + rb.read(4096, n - 2000) == data
    return cs, cr


def atomics(conn, la, rb, wr_id=0x1004):
    """CMP_AND_SWP (hit and miss) and FETCH_AND_ADD on an 8-byte remote word."""
    target = 0x1000
    rb.write(target, struct.pack('<Q', 0x1111_2222_3333_4444))
    la.write(0, b'\0' * 32)
    # compare hits: swap
    conn.qa.post_send('CMP_AND_SWP', [(la, 0, 8)], remote=(rb, target),
                      compare=0x1111_2222_3333_4444, swap=0x5555_6666_7777_8888, wr_id=wr_id)
    c = one_cqe(conn.cqa)
    expect_success(c, 'COMP_SWAP', wr_id, conn.qa.qpn)
    assert struct.unpack('<Q', la.read(0, 8))[0] == 0x1111_2222_3333_4444
    assert struct.unpack('<Q', rb.read(target, 8))[0] == 0x5555_6666_7777_8888
    # compare misses: remote unchanged, original returned
    conn.qa.post_send('CMP_AND_SWP', [(la, 8, 8)], remote=(rb, target),
                      compare=1, swap=2, wr_id=wr_id + 1)
    c = one_cqe(conn.cqa)
    expect_success(c, 'COMP_SWAP', wr_id + 1, conn.qa.qpn)
    assert struct.unpack('<Q', la.read(8, 8))[0] == 0x5555_6666_7777_8888
    assert struct.unpack('<Q', rb.read(target, 8))[0] == 0x5555_6666_7777_8888
    # fetch and add (wraps at 2^64)
    conn.qa.post_send('FETCH_AND_ADD', [(la, 16, 8)], remote=(rb, target),
                      add=0xb000_0000_0000_0001, wr_id=wr_id + 2)
    c = one_cqe(conn.cqa)
    expect_success(c, 'FETCH_ADD', wr_id + 2, conn.qa.qpn)
    assert struct.unpack('<Q', la.read(16, 8))[0] == 0x5555_6666_7777_8888
    assert struct.unpack('<Q', rb.read(target, 8))[0] == \
        (0x5555_6666_7777_8888 + 0xb000_0000_0000_0001) & (2 ** 64 - 1)


def send_with_cq_event(conn, la, rb, size=64):
    """A SEND into rb[0:size] of la's first bytes with the receiver's CQ
    armed: the receiver's completion EQ writes its MSI-X message (the
    device raised the CQ event), the CQE and the EQE name the right
    work request and CQ; the EQ is armed again."""
    b = conn.b.dev
    b.irq_clear()
    conn.cqb.arm()
    conn.qb.post_recv([(rb, 0, max(size, 4096))], wr_id=1)
    conn.qa.post_send('SEND', [(la, 0, size)], wr_id=2)
    assert b.irq_wait(b.comp_eq.vector, 10), 'receiver: no MSI-X write for the CQ event'
    assert [c['wr_id'] for c in conn.cqb.poll()] == [1]
    assert [c['wr_id'] for c in conn.cqa.wait(1)] == [2]
    assert [e['handle'] for e in b.comp_eq.poll()] == [conn.cqb.cqn]
    b.comp_eq.arm()


def exercise_rc(conn, seed=1, size=16384):
    """WRITE, READ, SEND/RECV with immediate, atomics over one RC connection."""
    rng = random.Random(seed)
    la, rb = mrs(conn, size)
    rdma_write(conn, la, rb, rng, n=min(10000, size - 200))
    rdma_read(conn, la, rb, rng, n=min(9000, size - 200))
    send_recv(conn, la, rb, rng)
    atomics(conn, la, rb)


def healthy(world, a, b, n=5000, seed=77):
    """A fresh RC connection between a and b moves data correctly."""
    conn = h.connect_rc(a, b, cq_log=6)
    la, rb = mrs(conn, 8192)
    rdma_write(conn, la, rb, random.Random(seed), n=n, sges=1, wr_id=0x77)
    for d in (a, b):
        assert not d.reg_read('STATUS') & h.STATUS_FATAL
    assert world.alive()
    return conn


def start_stuck_traffic(conn, la, rb):
    """Post work that is certainly still in flight when the caller acts:
    a 1 MiB WRITE, a SEND the responder has no receive for (RNR NAK; the
    requester waits for its RNR timer, which fires only when the virtual
    clock moves), then another 1 MiB WRITE and a 1 MiB READ behind it.
    At most the first WRITE can complete on its own: returns 4, the number
    of signaled WQEs."""
    n = min(la.length, rb.length, 1 << 20)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0), wr_id=0x51)
    conn.qa.post_send('SEND', [(la, 0, 64)], wr_id=0x52)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0), wr_id=0x53)
    conn.qa.post_send('RDMA_READ', [(la, 0, n)], remote=(rb, 0), wr_id=0x54)
    return 4
