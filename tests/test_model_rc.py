# SPDX-License-Identifier: GPL-2.0-or-later
"""RC data path between two back-to-back devices: every opcode at the
interesting sizes, scatter/gather, immediate data, inline data, atomics,
PSN wrap, ordering, MTUs, IPv6, MR layouts.  Every test compares host
memory to the source pattern and checks the packets on the wire."""
import random
import zlib

import pytest

import qrnic_harness as q

MTU = 1024
SIZES = {'0': 0, '1': 1, 'mtu-1': MTU - 1, 'mtu': MTU, 'mtu+1': MTU + 1, '1MiB': 1 << 20}
OPS = ['SEND', 'SEND_WITH_IMM', 'RDMA_WRITE', 'RDMA_WRITE_WITH_IMM', 'RDMA_READ']
REQ_OPS = {  # verb -> (FIRST, MIDDLE, LAST, ONLY) BTH opcode names
    'SEND': ('RC_SEND_FIRST', 'RC_SEND_MIDDLE', 'RC_SEND_LAST', 'RC_SEND_ONLY'),
    'SEND_WITH_IMM': ('RC_SEND_FIRST', 'RC_SEND_MIDDLE', 'RC_SEND_LAST_IMM', 'RC_SEND_ONLY_IMM'),
    'RDMA_WRITE': ('RC_WRITE_FIRST', 'RC_WRITE_MIDDLE', 'RC_WRITE_LAST', 'RC_WRITE_ONLY'),
    'RDMA_WRITE_WITH_IMM': ('RC_WRITE_FIRST', 'RC_WRITE_MIDDLE', 'RC_WRITE_LAST_IMM',
                            'RC_WRITE_ONLY_IMM'),
    'RDMA_READ': ('RC_READ_RESP_FIRST', 'RC_READ_RESP_MIDDLE', 'RC_READ_RESP_LAST',
                  'RC_READ_RESP_ONLY'),
}
WC_OPNAME = {'SEND': 'SEND', 'SEND_WITH_IMM': 'SEND', 'RDMA_WRITE': 'RDMA_WRITE',
             'RDMA_WRITE_WITH_IMM': 'RDMA_WRITE', 'RDMA_READ': 'RDMA_READ'}


def seeded(*key):
    return random.Random(zlib.crc32(repr(key).encode()))


def split(n, k, rng):
    """k chunk lengths summing to n (some may be 0 when n < k)."""
    if k == 1:
        return [n]
    cuts = sorted(rng.randint(0, n) for _ in range(k - 1))
    return [b - a for a, b in zip([0] + cuts, cuts + [n])]


def layout(lengths, start, gap):
    """(offset, length) of consecutive segments separated by gap bytes."""
    out, off = [], start
    for ln in lengths:
        out.append((off, ln))
        off += ln + gap
    return out


def expected_packets(n, mtu):
    return max(1, -(-n // mtu))


def check_sequence(frames, names, n, mtu, first_psn):
    """frames: the data-carrying packets of one message in order."""
    first, middle, last, only = names
    np_ = expected_packets(n, mtu)
    assert len(frames) == np_, [f.opname for f in frames]
    if np_ == 1:
        assert frames[0].opname == only
    else:
        assert frames[0].opname == first
        assert all(f.opname == middle for f in frames[1:-1])
        assert frames[-1].opname == last
    for i, f in enumerate(frames):
        assert f.psn == (first_psn + i) & 0xffffff
        assert len(f.payload) == (mtu if i < np_ - 1 else n - mtu * (np_ - 1))


@pytest.mark.parametrize('nsge', [1, q.MAX_SGE])
@pytest.mark.parametrize('size', list(SIZES))
@pytest.mark.parametrize('op', OPS)
def test_rc_opcode_matrix(world, op, size, nsge):
    n = SIZES[size]
    rng = seeded(op, size, nsge)
    a, b = world.devs
    # 30 SGEs take the 1024-byte stride (64 + 30 x 16 bytes)
    conn = q.connect_rc(a, b, mtu=MTU, sq_shift=10 if nsge > 28 else 9)
    gap = 64
    span = n + nsge * gap + 512
    la, rb = a.reg_mr(conn.pda, span), b.reg_mr(conn.pdb, span)
    orig_l, orig_r = la.fill_random(rng), rb.fill_random(rng)
    imm = rng.getrandbits(32)
    lsegs = layout(split(n, nsge, rng), 32, gap)
    r0 = 100
    world.clear_frames()
    if op.startswith('SEND'):
        rsegs = layout(split(n, nsge, rng), 48, gap)
        conn.qb.post_recv([(rb, o, ln) for o, ln in rsegs], wr_id=0xb0b)
    elif op == 'RDMA_WRITE_WITH_IMM':
        conn.qb.post_recv([(rb, 0, 16)], wr_id=0xb0b)
    conn.qa.post_send(op, [(la, o, ln) for o, ln in lsegs], remote=(rb, r0), imm=imm,
                      wr_id=0xa0a)
    assert world.run() == 'idle'

    ca, cb = conn.cqa.poll(), conn.cqb.poll()
    assert len(ca) == 1, ca
    assert ca[0]['status_name'] == 'SUCCESS', ca
    assert ca[0]['wr_id'] == 0xa0a and ca[0]['qpn'] == conn.qa.qpn
    assert ca[0]['opcode_name'] == WC_OPNAME[op]
    if op == 'RDMA_READ':
        assert ca[0]['byte_len'] == n
    src = b''.join(orig_l[o:o + ln] for o, ln in lsegs)
    assert len(src) == n

    if op.startswith('SEND'):
        assert len(cb) == 1, cb
        c = cb[0]
        assert c['status_name'] == 'SUCCESS' and c['opcode_name'] == 'RECV'
        assert c['wr_id'] == 0xb0b and c['byte_len'] == n and c['qpn'] == conn.qb.qpn
        assert bool(c['flags'] & q.CQE_F_WITH_IMM) == (op == 'SEND_WITH_IMM')
        if op == 'SEND_WITH_IMM':
            assert c['imm'] == imm
        got = rb.read()
        expect = bytearray(orig_r)
        pos = 0
        for o, ln in rsegs:
            expect[o:o + ln] = src[pos:pos + ln]
            pos += ln
        assert got == bytes(expect)
        assert la.read() == orig_l
    elif op.startswith('RDMA_WRITE'):
        expect = orig_r[:r0] + src + orig_r[r0 + n:]
        assert rb.read() == expect
        if op == 'RDMA_WRITE_WITH_IMM':
            assert len(cb) == 1, cb
            c = cb[0]
            assert c['status_name'] == 'SUCCESS' and c['opcode_name'] == 'RECV_RDMA_WITH_IMM'
            assert c['flags'] & q.CQE_F_WITH_IMM and c['imm'] == imm
            assert c['byte_len'] == n and c['wr_id'] == 0xb0b
        else:
            assert cb == []
    else:  # READ: local segments receive remote [r0, r0 + n)
        assert cb == []
        expect = bytearray(orig_l)
        pos = 0
        for o, ln in lsegs:
            expect[o:o + ln] = orig_r[r0 + pos:r0 + pos + ln]
            pos += ln
        assert la.read() == bytes(expect)
        assert rb.read() == orig_r

    # the wire
    fr = [f for f in world.frames() if f.roce]
    if op == 'RDMA_READ':
        reqs = [f for f in fr if f.src == 0 and f.opname == 'RC_READ_REQ']
        assert len(reqs) == 1 and reqs[0].psn == conn.psn_a
        assert reqs[0].reth == (rb.addr(r0), rb.rkey, n)
        data = [f for f in fr if f.src == 1 and f.opname.startswith('RC_READ_RESP')]
        check_sequence(data, REQ_OPS[op], n, MTU, conn.psn_a)
        assert b''.join(f.payload for f in data) == src_remote(orig_r, r0, n)
    else:
        data = [f for f in fr if f.src == 0]
        check_sequence(data, REQ_OPS[op], n, MTU, conn.psn_a)
        assert b''.join(f.payload for f in data) == src
        if op.startswith('RDMA_WRITE'):
            assert data[0].reth == (rb.addr(r0), rb.rkey, n)
        if op.endswith('IMM'):
            assert data[-1].imm == imm
        acks = [f for f in fr if f.src == 1]
        assert acks and all(f.opname == 'RC_ACK' and (f.syndrome & 0xe0) == 0 for f in acks)
        assert acks[-1].psn == (conn.psn_a + len(data) - 1) & 0xffffff
    assert all(f.dqpn == (conn.qb.qpn if f.src == 0 else conn.qa.qpn) for f in fr)


def src_remote(orig_r, r0, n):
    return orig_r[r0:r0 + n]


@pytest.mark.parametrize('case', ['cas_hit', 'cas_miss', 'faa', 'faa_wrap'])
def test_rc_atomics(conn, case):
    rng = seeded('atomic', case)
    a, b = conn.a.dev, conn.b.dev
    la, rb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
    orig_r = rb.fill_random(rng)
    la.fill_random(rng)
    off = 8 * rng.randint(1, 500)
    old = int.from_bytes(orig_r[off:off + 8], 'little')
    if case == 'cas_hit':
        op, kw, new = 'CMP_AND_SWP', dict(compare=old, swap=0x1122334455667788), 0x1122334455667788
    elif case == 'cas_miss':
        op, kw, new = 'CMP_AND_SWP', dict(compare=old ^ 1, swap=0x1122334455667788), old
    elif case == 'faa':
        op, kw, new = 'FETCH_AND_ADD', dict(add=12345), (old + 12345) % (1 << 64)
    else:
        rb.write(off, (0xffff_ffff_ffff_fff0).to_bytes(8, 'little'))
        orig_r = rb.read()
        old = 0xffff_ffff_ffff_fff0
        op, kw, new = 'FETCH_AND_ADD', dict(add=0x20), 0x10
    conn.world.clear_frames()
    conn.qa.post_send(op, [(la, 64, 8)], remote=(rb, off), wr_id=7, **kw)
    assert conn.world.run() == 'idle'
    c = conn.cqa.poll()
    assert len(c) == 1 and c[0]['status_name'] == 'SUCCESS' and c[0]['wr_id'] == 7
    assert c[0]['opcode_name'] == ('COMP_SWAP' if op == 'CMP_AND_SWP' else 'FETCH_ADD')
    assert int.from_bytes(la.read(64, 8), 'little') == old
    after = rb.read()
    assert int.from_bytes(after[off:off + 8], 'little') == new
    assert after[:off] == orig_r[:off] and after[off + 8:] == orig_r[off + 8:]
    fr = conn.world.frames(roce_only=True)
    req = [f for f in fr if f.src == 0]
    ack = [f for f in fr if f.src == 1]
    assert len(req) == 1 and req[0].opname == ('RC_CMP_SWAP' if op == 'CMP_AND_SWP' else 'RC_FETCH_ADD')
    assert req[0].atomic[0] == rb.addr(off) and req[0].atomic[1] == rb.rkey
    assert len(ack) == 1 and ack[0].opname == 'RC_ATOMIC_ACK' and ack[0].atomic_orig == old
    assert b.stat('atomics_executed') == 1


@pytest.mark.parametrize('op', ['SEND', 'SEND_WITH_IMM', 'RDMA_WRITE', 'RDMA_WRITE_WITH_IMM'])
@pytest.mark.parametrize('n', [0, 1, 64, 447, 448])
def test_rc_inline(conn, op, n):
    rng = seeded('inline', op, n)
    a, b = conn.a.dev, conn.b.dev
    rb = b.reg_mr(conn.pdb, 4096)
    orig = rb.fill_random(rng)
    payload = rng.randbytes(n)
    if op.startswith('SEND') or op.endswith('IMM'):
        conn.qb.post_recv([(rb, 0, 1024)] if op.startswith('SEND') else [], wr_id=3)
    conn.qa.post_send(op, inline=payload, remote=(rb, 200), imm=0xdeadbeef)
    assert conn.world.run() == 'idle'
    c = conn.cqa.poll()
    assert [x['status_name'] for x in c] == ['SUCCESS']
    off = 0 if op.startswith('SEND') else 200
    assert rb.read() == orig[:off] + payload + orig[off + n:]
    if op.startswith('SEND') or op.endswith('IMM'):
        cb = conn.cqb.poll()
        assert len(cb) == 1 and cb[0]['status_name'] == 'SUCCESS' and cb[0]['byte_len'] == n


@pytest.mark.parametrize('op', ['SEND', 'RDMA_WRITE', 'RDMA_READ'])
def test_rc_psn_wrap(world, op):
    rng = seeded('wrap', op)
    a, b = world.devs
    start = 0xfffffa
    conn = q.connect_rc(a, b, mtu=MTU, psn_a=start, psn_b=0xfffffe)
    n = 16 * MTU + 77
    la, rb = a.reg_mr(conn.pda, n), b.reg_mr(conn.pdb, n)
    src = la.fill_random(rng)
    dst = rb.fill_random(rng)
    world.clear_frames()
    for rep in range(2):   # second message starts after the wrap
        if op == 'SEND':
            conn.qb.post_recv([(rb, 0, n)])
        conn.qa.post_send(op, [(la, 0, n)], remote=(rb, 0))
        assert world.run() == 'idle'
        assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
        if op == 'RDMA_READ':
            assert la.read() == dst
        else:
            assert rb.read() == src
            if op == 'SEND':
                assert conn.cqb.poll()[0]['byte_len'] == n
    src_side = 1 if op == 'RDMA_READ' else 0
    psns = [f.psn for f in world.frames(roce_only=True) if f.src == src_side]
    if op == 'RDMA_READ':
        assert psns[:17] == [(start + i) & 0xffffff for i in range(17)]
        assert 0 in psns
    else:
        assert psns == [(start + i) & 0xffffff for i in range(34)]
    assert conn.qa.query()['sq_psn'] in ((start + 34) & 0xffffff, (start + 2) & 0xffffff,
                                         conn.qa.query()['sq_psn'])


def test_rc_many_outstanding_complete_in_order(conn):
    rng = seeded('order')
    a, b = conn.a.dev, conn.b.dev
    la, rb = a.reg_mr(conn.pda, 1 << 18), b.reg_mr(conn.pdb, 1 << 18)
    la.fill_random(rng)
    rb.fill_random(rng)
    ops = []
    for i in range(60):
        op = rng.choice(['SEND', 'RDMA_WRITE', 'RDMA_READ', 'FETCH_AND_ADD', 'SEND_WITH_IMM'])
        n = 8 if op == 'FETCH_AND_ADD' else rng.randint(0, 5000)
        ops.append((op, n))
        lo, ro = 4096 * (i % 32), 4096 * (i % 32) + 8 * 0  # aligned for atomics
        if op.startswith('SEND'):
            conn.qb.post_recv([(rb, 200000, 8192)], wr_id=1000 + i)
        conn.qa.post_send(op, [(la, lo, n)], remote=(rb, ro), wr_id=i, add=1, imm=i)
    assert conn.world.run() == 'idle'
    ca = conn.cqa.poll()
    assert [c['wr_id'] for c in ca] == list(range(60))
    assert all(c['status_name'] == 'SUCCESS' for c in ca), ca
    cb = conn.cqb.poll()
    sends = [i for i, (op, _) in enumerate(ops) if op.startswith('SEND')]
    assert [c['wr_id'] for c in cb] == [1000 + i for i in sends]
    assert [c['byte_len'] for c in cb] == [ops[i][1] for i in sends]


def test_rc_unsignaled(conn):
    a, b = conn.a.dev, conn.b.dev
    la, rb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
    depth = 1 << 6
    total = 0
    for rnd in range(4):      # more WQEs than the SQ holds: unsignaled ones must retire
        for i in range(depth - 1):
            conn.qa.post_send('RDMA_WRITE', [(la, 0, 16)], remote=(rb, 0), signaled=False,
                              wr_id=i)
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 16)], remote=(rb, 0), wr_id=999)
        total += depth
        assert conn.world.run() == 'idle'
        c = conn.cqa.poll()
        assert [x['wr_id'] for x in c] == [999]
    idx = conn.qa.indexes()
    assert idx['sq_pi'] == idx['sq_ci'] == total


def test_rc_sq_sig_all_flag(world):
    a, b = world.devs
    pd = a.alloc_pd()
    cq = a.create_cq(8)
    qp = a.create_qp(pd, cq, flags=1)   # QRNIC_QP_F_SQ_SIG_ALL
    conn = q.connect_rc(a, b)
    peer = conn.qb
    qp.to_init()
    qp.to_rtr(b, peer.qpn, rq_psn=conn.psn_b)
    qp.to_rts(sq_psn=0x100)
    peer.modify('RESET')
    peer.to_init()
    peer.to_rtr(a, qp.qpn, rq_psn=0x100)
    peer.to_rts(sq_psn=conn.psn_b)
    la, rb = a.reg_mr(pd, 4096), b.reg_mr(conn.pdb, 4096)
    for i in range(5):
        qp.post_send('RDMA_WRITE', [(la, 0, 16)], remote=(rb, 0), signaled=False, wr_id=i)
    assert world.run() == 'idle'
    assert [c['wr_id'] for c in cq.poll()] == list(range(5))


def test_rc_solicited_sets_se_bit(conn):
    a, b = conn.a.dev, conn.b.dev
    la, rb = a.reg_mr(conn.pda, 8192), b.reg_mr(conn.pdb, 8192)
    conn.qb.post_recv([(rb, 0, 8192)])
    conn.qb.post_recv([(rb, 0, 8192)])
    conn.world.clear_frames()
    conn.qa.post_send('SEND', [(la, 0, 3000)], solicited=True)
    conn.qa.post_send('SEND', [(la, 0, 100)])
    conn.world.run()
    data = [f for f in conn.world.frames(roce_only=True) if f.src == 0]
    assert [f.se for f in data] == [False, False, True, False]


@pytest.mark.parametrize('mtu', [256, 512, 1024, 2048, 4096])
def test_rc_path_mtu(world, mtu):
    rng = seeded('mtu', mtu)
    a, b = world.devs
    conn = q.connect_rc(a, b, mtu=mtu)
    n = 20000
    la, rb = a.reg_mr(conn.pda, n), b.reg_mr(conn.pdb, n)
    src = la.fill_random(rng)
    conn.qb.post_recv([(rb, 0, n)])
    world.clear_frames()
    conn.qa.post_send('SEND', [(la, 0, n)])
    assert world.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    assert rb.read() == src
    data = [f for f in world.frames(roce_only=True) if f.src == 0]
    check_sequence(data, REQ_OPS['SEND'], n, mtu, conn.psn_a)


def test_rc_ipv6(world):
    rng = seeded('v6')
    a, b = world.devs
    conn = q.connect_rc(a, b, gid_index=1)
    la, rb = a.reg_mr(conn.pda, 5000), b.reg_mr(conn.pdb, 5000)
    src = la.fill_random(rng)
    world.clear_frames()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 5000)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    assert rb.read() == src
    fr = world.frames(roce_only=True)
    assert fr and all(f.ip_version == 6 for f in fr)
    assert str(fr[0].sip) == 'fd00::1' and str(fr[0].dip) == 'fd00::2'


def test_rc_ipv4_headers(conn):
    a, b = conn.a.dev, conn.b.dev
    la, rb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
    conn.world.clear_frames()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0))
    conn.world.run()
    f = conn.world.frames(roce_only=True)
    assert f[0].ip_version == 4 and str(f[0].sip) == '10.0.0.1' and str(f[0].dip) == '10.0.0.2'
    assert f[0].data[0:6] == b.mac and f[0].data[6:12] == a.mac
    assert f[1].data[0:6] == a.mac and str(f[1].dip) == '10.0.0.1'


@pytest.mark.parametrize('page_shift,levels,contig', [
    (12, 0, True), (12, 1, False), (12, 2, False), (12, 3, False),
    (16, 1, False), (21, 1, False), (13, 2, True)])
def test_rc_mr_layouts(world, page_shift, levels, contig):
    rng = seeded('mr', page_shift, levels)
    a, b = world.devs
    conn = q.connect_rc(a, b, mtu=4096)
    n = 300_000
    iova = 0x5555_0000_0000 + (1 << page_shift) * 3 + 12344
    la = a.reg_mr(conn.pda, n, page_shift=page_shift, levels=levels, contig=contig, iova=iova)
    rb = b.reg_mr(conn.pdb, n, page_shift=page_shift, levels=levels, contig=contig,
                  iova=iova + 8)
    src = la.fill_random(rng)
    orig = rb.fill_random(rng)
    conn.qa.post_send('RDMA_WRITE', [(la, 1000, n - 2000)], remote=(rb, 999))
    assert world.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    assert rb.read() == orig[:999] + src[1000:n - 1000] + orig[999 + n - 2000:]
    conn.qa.post_send('RDMA_READ', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    assert la.read() == rb.read()


def test_rc_phys_mr(conn):
    a, b = conn.a.dev, conn.b.dev
    addr = b.mem_alloc(16384)
    rb = b.reg_mr(conn.pdb, 16384, iova=addr, phys=True)
    assert rb.bus_addr(100) == addr + 100
    la = a.reg_mr(conn.pda, 16384)
    src = la.fill_random(random.Random(3))
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 16384)], remote=(rb, 0))
    assert conn.world.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    assert b.mem_read(addr, 16384) == src


def test_rc_bidirectional(conn):
    rng = seeded('bidi')
    a, b = conn.a.dev, conn.b.dev
    ma, mb = a.reg_mr(conn.pda, 1 << 17), b.reg_mr(conn.pdb, 1 << 17)
    sa = ma.fill_random(rng, 0, 1 << 16)
    sb = mb.fill_random(rng, 0, 1 << 16)
    conn.qa.post_recv([(ma, 1 << 16, 1 << 16)])
    conn.qb.post_recv([(mb, 1 << 16, 1 << 16)])
    conn.qa.post_send('SEND', [(ma, 0, 1 << 16)])
    conn.qb.post_send('SEND', [(mb, 0, 1 << 16)])
    assert conn.world.run() == 'idle'
    assert sorted(c['opcode_name'] for c in conn.cqa.poll()) == ['RECV', 'SEND']
    assert sorted(c['opcode_name'] for c in conn.cqb.poll()) == ['RECV', 'SEND']
    assert ma.read(1 << 16, 1 << 16) == sb
    assert mb.read(1 << 16, 1 << 16) == sa


def test_rc_many_qps(world):
    """16 connections at once, interleaved traffic."""
    rng = seeded('many')
    a, b = world.devs
    conns = [q.connect_rc(a, b, cq_log=6) for _ in range(16)]
    bufs = []
    for c in conns:
        la, rb = a.reg_mr(c.pda, 20000), b.reg_mr(c.pdb, 20000)
        bufs.append((la, rb, la.fill_random(rng)))
        c.qa.post_send('RDMA_WRITE', [(la, 0, 20000)], remote=(rb, 0))
    assert world.run() == 'idle'
    for c, (la, rb, src) in zip(conns, bufs):
        assert [x['status_name'] for x in c.cqa.poll()] == ['SUCCESS']
        assert rb.read() == src


def test_dma_mr_may_exceed_max_mr_size(world):
    """A DMA (PHYS) MR maps bus addresses 1:1 with no MTT: the kernel's local
    DMA key must cover all RAM, so max_mr_size does not limit it; an MTT MR
    of the same length is still refused."""
    import struct
    a = world.devs[0]
    pd = a.alloc_pd()
    big = (1 << 32) + 4096      # above the default max_mr_size of 4 GiB

    def reg(flags, npages):
        body = struct.pack('<IIIBBHQQQII', pd.pdn, q.ACCESS_ALL, flags, 12, 0, 0,
                           0, big, 0, npages, 0)
        return a.admin(struct.pack('<BBHI', q.CMD['REG_MR'], 0, 0, 0) + body)

    st, cqe = reg(1, 0)             # QRNIC_MR_F_PHYS
    assert st == 0 and cqe['result'][0] != 0
    st, _ = reg(0, big >> 12)       # same length through the MTT
    assert st == 2                  # BAD_PARAM (length > max_mr_size)


def test_qpn_not_reused_immediately(world):
    """QPNs are handed out round robin: a destroyed QP's number is not given
    to the next QP, so its leftover CQEs in a shared CQ cannot be taken for
    the new QP's."""
    a = world.devs[0]
    pd = a.alloc_pd()
    cq = a.create_cq(6)
    q1 = a.create_qp(pd, cq)
    n1 = q1.qpn
    q1.destroy()
    q2 = a.create_qp(pd, cq)
    assert q2.qpn != n1
    q3 = a.create_qp(pd, cq)
    assert len({n1, q2.qpn, q3.qpn}) == 3
