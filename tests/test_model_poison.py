# SPDX-License-Identifier: GPL-2.0-or-later
"""pvrdma CVE class 'uninitialised data reaching the guest' (issue 21,
item 4), with every byte the device writes accounted for.

Every place the device writes to (admin completion ring, async and
completion EQ rings, CQ rings, receive buffers, RDMA target buffers,
query answer buffers) is filled with a poison byte before the workload;
the harness logs every DMA write (hx_dma_log_*).  The workload covers
each entry type the device writes: admin completions of every query
(QUERY_DEVICE, _PORT, _STATS, _QP, _MR, _GID, _SRQ) and of creates and
destroys, CQEs of successes (SEND, SEND with immediate, WRITE, READ,
atomic, UD receive with GRH), of a remote access error and of flushes,
and EQEs (completion events, async QP error).  Then:

* every DMA write lies inside a range the device was asked to write to
  (rings, doorbell records, answer buffers, receive/target MRs, and the
  UD GRH): no other guest byte changed, and the poison outside the
  written entries is intact;
* every admin completion, CQE, EQE and query answer the device wrote is
  whole: no two consecutive poison bytes left in it (a field the device
  skipped), reserved bytes 0;
* a query answer is written exactly as long as the CQE says
  (result[1]), and the bytes after it keep their poison.

(tests/test_model_hardening.py checks CQE/EQE reserved fields field by
field; this test adds the admin completions, the query answers and the
write log.)"""
import random
import struct

import qrnic_harness as q

P = 0xa4          # even: its owner bit reads "not written yet"
PP = bytes([P, P])


def poison(dev, addr, n):
    dev.mem_write(addr, bytes([P]) * n)


def raw_query(dev, opcode, resp, resp_len=4096, port=0, handle=None):
    """A query with the answer DMA-written to 'resp' (poisoned first)."""
    poison(dev, resp, resp_len)
    if handle is None:
        body = struct.pack('<QII', resp, resp_len, port)
    else:
        body = struct.pack('<IIQ', handle, resp_len, resp)
    cmd = struct.pack('<BBHI', opcode, 0, 0x4242, 0) + body
    st, cqe = dev.admin(cmd)
    assert st == 0, (hex(opcode), st, cqe)
    n = cqe['result'][1]
    assert 0 < n <= resp_len and n == min(cqe['result'][0], resp_len), cqe
    ans = dev.mem_read(resp, n)
    assert PP not in ans, (hex(opcode), ans.hex())
    assert dev.mem_read(resp + n, resp_len - n) == bytes([P]) * (resp_len - n)
    return n


def test_every_device_write_is_whole_and_in_bounds(world):
    a, b = world.devs
    rng = random.Random(7)
    conn = q.connect_rc(a, b, mtu=1024, separate_cqs=True)
    ud_a, ud_b = q.create_ud(a), q.create_ud(b)
    srq = b.create_srq(conn.pdb, log_depth=4)
    la = a.reg_mr(conn.pda, 1 << 16)
    rb = b.reg_mr(conn.pdb, 1 << 16)
    ud_buf = b.reg_mr(ud_b.pd, 8192)
    ud_src = a.reg_mr(ud_a.pd, 4096)
    ah = a.ah_to(ud_a.pd, b)
    la.fill_random(rng)
    ud_src.fill_random(rng)
    cqs = [conn.cqa, conn.cqb, conn.a.rcq, conn.b.rcq, ud_a.cq, ud_b.cq]
    allowed = {a: [], b: []}

    def allow(dev, addr, n):
        allowed[dev].append((addr, addr + n))

    resp = {d: d.mem_alloc(4096) for d in (a, b)}
    for d in (a, b):
        aq_depth = 32
        # the admin CQ has wrapped already: each slot keeps its owner byte
        # (the "not written yet" value of the current pass)
        for i in range(aq_depth):
            slot = d.aq_addr(cq=True) + 32 * i
            d.mem_write(slot, bytes([P]) * 31)
        allow(d, d.aq_addr(cq=True), 32 * aq_depth)
        for eq in (d.async_eq, d.comp_eq):
            poison(d, eq.ring_addr, 16 << eq.log_depth)
            allow(d, eq.ring_addr, 16 << eq.log_depth)
        allow(d, resp[d], 4096)
    for cq in cqs:
        poison(cq.dev, cq.ring_addr, 32 << cq.log_depth)
        allow(cq.dev, cq.ring_addr, 32 << cq.log_depth)
    # data targets: b's MR (SEND/WRITE/atomic), a's MR (READ/atomic result), UD buffer
    for mr, d, n in ((la, a, 1 << 16), (rb, b, 1 << 16), (ud_buf, b, 8192)):
        for off in range(0, n, 4096):               # shuffled pages: each one
            allow(d, mr.bus_addr(off) & ~0xfff, 4096)
    for d in (a, b):
        d.dma_log_start()
    # -- traffic: successes of every opcode, UD with GRH, an error, flushes
    for d in (a, b):
        for cq in cqs:
            if cq.dev is d:
                cq.arm()
    conn.qb.post_recv([(rb, 0, 4096)], wr_id=1)
    conn.qb.post_recv([(rb, 4096, 4096)], wr_id=2)
    conn.qa.post_send('SEND', [(la, 0, 100)], wr_id=10)
    conn.qa.post_send('SEND_WITH_IMM', [(la, 0, 0)], imm=0x12345678, wr_id=11)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 3000)], remote=(rb, 0x8000), wr_id=12)
    conn.qa.post_send('RDMA_READ', [(la, 0x4000, 2000)], remote=(rb, 0x8000), wr_id=13)
    conn.qa.post_send('FETCH_AND_ADD', [(la, 0x6000, 8)], remote=(rb, 0xa000), add=1, wr_id=14)
    assert world.run() == 'idle'
    ud_b.qp.post_recv([(ud_buf, 0, 4096)], wr_id=20)
    ud_a.qp.post_send('SEND', [(ud_src, 0, 64)], ah=ah, remote_qpn=ud_b.qp.qpn,
                      qkey=0x11111111, wr_id=21)
    assert world.run() == 'idle'
    conn.qb.post_recv([(rb, 0, 64)], wr_id=3)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb.rkey ^ 0x200, rb.addr(0)), wr_id=15)
    conn.qa.post_send('SEND', [(la, 0, 64)], wr_id=16)
    assert world.run() == 'idle'
    conn.qb.modify('ERR')
    assert world.run() == 'idle'
    # -- admin completions of every query, creates and destroys
    answers = {}
    for d, qp, mr in ((a, conn.qa, la), (b, conn.qb, rb)):
        answers[d] = [raw_query(d, q.CMD['QUERY_DEVICE'], resp[d]),
                      raw_query(d, q.CMD['QUERY_PORT'], resp[d], port=1),
                      raw_query(d, q.CMD['QUERY_STATS'], resp[d]),
                      raw_query(d, q.CMD['QUERY_QP'], resp[d], handle=qp.qpn),
                      raw_query(d, q.CMD['QUERY_MR'], resp[d], handle=mr.key)]
        d.query_gid(0)
        pd = d.alloc_pd()
        cq = d.create_cq(4)
        x = d.create_qp(pd, cq)
        x.destroy()
        cq.destroy()
        pd.destroy()
    srq.query()
    # -- every logged write in bounds
    for d in (a, b):
        log, lost = d.dma_log()
        assert lost == 0 and log
        for addr, n in log:
            assert any(lo <= addr and addr + n <= hi for lo, hi in allowed[d]), \
                f'dev {d.idx}: DMA write outside the allowed ranges: {addr:#x}+{n}'
    # -- admin completions whole
    n_aq = 0
    for d in (a, b):
        base = d.aq_addr(cq=True)
        slots = sorted({(addr - base) // 32 for addr, n in d.dma_log()[0]
                        if base <= addr < base + 32 * 32})
        for i in slots:
            raw = d.mem_read(base + 32 * i, 32)
            n_aq += 1
            c = q.AqCqe.from_buffer_copy(raw)
            assert bytes(c.rsvd) == b'\0\0\0' and c.owner in (0, 1), raw.hex()
            assert PP not in raw, raw.hex()
    assert n_aq >= 12
    # -- CQEs and EQEs whole
    seen = 0
    for cq in cqs:
        n = len(cq.poll())
        for i in range(n):
            raw = cq.dev.mem_read(cq.ring_addr + 32 * i, 32)
            c = q.Cqe.from_buffer_copy(raw)
            assert c.rsvd == 0 and c.owner in (0, 1) and PP not in raw, raw.hex()
            seen += 1
        assert cq.dev.mem_read(cq.ring_addr + 32 * n, 32) == bytes([P]) * 32
    assert seen >= 12
    events = 0
    for d in (a, b):
        for eq in (d.async_eq, d.comp_eq):
            got = eq.poll()
            for i in range(len(got)):
                raw = d.mem_read(eq.ring_addr + 16 * i, 16)
                assert PP not in raw, raw.hex()
                events += 1
            assert d.mem_read(eq.ring_addr + 16 * len(got), 16) == bytes([P]) * 16
    assert events >= 3
    assert all(len(v) == 5 for v in answers.values())
