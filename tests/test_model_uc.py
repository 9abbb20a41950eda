# SPDX-License-Identifier: GPL-2.0-or-later
"""UC (unreliable connected) QPs (issue: Verbs I, item 3; spec 12.9):
SEND and RDMA WRITE (with immediate) over the UC opcodes, no ACKs, a send
WQE complete once its packets left; a lost or bad packet drops its message
at the receiver, which goes on with the next one; never an error CQE for a
remote fault."""
import random

import pytest

import qrnic_harness as q

MTU = 1024
UC_OPS = {'UC_SEND_FIRST', 'UC_SEND_MIDDLE', 'UC_SEND_LAST', 'UC_SEND_LAST_IMM',
          'UC_SEND_ONLY', 'UC_SEND_ONLY_IMM', 'UC_WRITE_FIRST', 'UC_WRITE_MIDDLE',
          'UC_WRITE_LAST', 'UC_WRITE_LAST_IMM', 'UC_WRITE_ONLY', 'UC_WRITE_ONLY_IMM'}


def uc(world, a=0, b=1, **kw):
    return q.connect_rc(world.devs[a], world.devs[b], mtu=MTU, qp_type='UC', **kw)


def mrs(c, size=1 << 16, seed=1):
    la = c.a.dev.reg_mr(c.pda, size)
    rb = c.b.dev.reg_mr(c.pdb, size)
    data = la.fill_random(random.Random(seed))
    return la, rb, data


@pytest.mark.parametrize('loopback', [False, True], ids=['wire', 'loopback'])
def test_uc_send_write_imm(world, loopback):
    c = uc(world, 0, 0 if loopback else 1)
    la, rb, data = mrs(c)
    for i in range(4):
        c.qb.post_recv([(rb, 0x8000 + i * 0x1000, 0x1000)], wr_id=100 + i)
    c.qa.post_send('RDMA_WRITE', [(la, 0, 10000)], remote=(rb, 0), wr_id=1)
    c.qa.post_send('SEND', [(la, 0, 3000)], wr_id=2)
    c.qa.post_send('SEND_WITH_IMM', [(la, 100, 0)], imm=0x1234, wr_id=3)
    c.qa.post_send('RDMA_WRITE_WITH_IMM', [(la, 20000, 2048)], remote=(rb, 0x6000), imm=7,
                   wr_id=4)
    c.qa.post_send('SEND', inline=data[5:6], wr_id=5)
    assert world.run() == 'idle'
    assert [(x['wr_id'], x['status_name'], x['opcode_name']) for x in c.cqa.poll()] == [
        (1, 'SUCCESS', 'RDMA_WRITE'), (2, 'SUCCESS', 'SEND'), (3, 'SUCCESS', 'SEND'),
        (4, 'SUCCESS', 'RDMA_WRITE'), (5, 'SUCCESS', 'SEND')]
    got = c.cqb.poll()
    assert [(x['wr_id'], x['status_name'], x['byte_len'], x['opcode_name']) for x in got] == [
        (100, 'SUCCESS', 3000, 'RECV'), (101, 'SUCCESS', 0, 'RECV'),
        (102, 'SUCCESS', 2048, 'RECV_RDMA_WITH_IMM'), (103, 'SUCCESS', 1, 'RECV')]
    assert got[1]['imm'] == 0x1234 and got[2]['imm'] == 7
    assert rb.read(0, 10000) == data[:10000]
    assert rb.read(0x8000, 3000) == data[:3000]
    assert rb.read(0x6000, 2048) == data[20000:22048]
    assert rb.read(0xb000, 1) == data[5:6]
    fr = world.frames(roce_only=True)
    assert {f.opname for f in fr} <= UC_OPS, {f.opname for f in fr}
    assert not any(f.opname == 'RC_ACK' for f in fr)
    assert c.a.dev.stat('acks_rcvd') == 0 and c.b.dev.stat('acks_sent') == 0


def test_uc_lost_packet_drops_only_its_message(world):
    """The 2nd packet of the 2nd of three 3-packet SENDs is lost: the
    receiver drops the rest of that message, reuses its receive WQE for
    the 3rd SEND, and nothing reports an error; the sender sees three
    successful sends."""
    c = uc(world)
    la, rb, data = mrs(c)
    for i in range(3):
        c.qb.post_recv([(rb, i * 0x4000, 0x4000)], wr_id=100 + i)
    world.rule('drop', src=0, index=4)                  # SEND #2, packet 2 of 3
    for i in range(3):
        c.qa.post_send('SEND', [(la, i * 0x1000, 3000)], wr_id=i)
    assert world.run() == 'idle'
    assert [(x['wr_id'], x['status_name']) for x in c.cqa.poll()] == \
        [(0, 'SUCCESS'), (1, 'SUCCESS'), (2, 'SUCCESS')]
    got = c.cqb.poll()
    assert [(x['wr_id'], x['status_name'], x['byte_len']) for x in got] == \
        [(100, 'SUCCESS', 3000), (101, 'SUCCESS', 3000)]
    assert rb.read(0, 3000) == data[:3000]
    assert rb.read(0x4000, 3000) == data[0x2000:0x2000 + 3000]    # the 3rd message
    assert c.b.dev.stat('rx_drop_other') == 1                        # its last packet
    assert c.qb.state == 'RTS' and c.qa.state == 'RTS'
    assert c.a.dev.stat('retransmitted_packets') == 0


@pytest.mark.parametrize('impair', ['dup', 'reorder'])
def test_uc_duplicates_and_reordering(world, impair):
    """A duplicated packet is out of sequence (dropped); a reordered one
    breaks its message; the messages that arrive whole are intact and in
    order, and no receive completes with wrong data."""
    c = uc(world)
    la, rb, data = mrs(c, 1 << 17)
    n = 16
    for i in range(n):
        c.qb.post_recv([(rb, i * 0x2000, 0x2000)], wr_id=i)
    if impair == 'dup':
        world.rule('dup', src=0, index=5, count=3)
    else:
        world.rule('hold', src=0, index=7, arg=2)
    for i in range(n):
        c.qa.post_send('SEND', [(la, i * 0x2000, 2500)], wr_id=i)
    assert world.run() == 'idle'
    assert [x['status_name'] for x in c.cqa.poll(64)] == ['SUCCESS'] * n
    got = c.cqb.poll(64)
    assert all(x['status_name'] == 'SUCCESS' and x['byte_len'] == 2500 for x in got)
    # receive WQEs are consumed in order by the messages that arrived whole
    assert [x['wr_id'] for x in got] == list(range(len(got)))
    assert n - 2 <= len(got) < n + 1
    k = 0
    for i in range(n):          # which messages arrived: in order, each intact
        if k < len(got) and rb.read(k * 0x2000, 2500) == data[i * 0x2000:i * 0x2000 + 2500]:
            k += 1
    assert k == len(got)
    assert c.qb.state == 'RTS'


def test_uc_remote_errors_drop_silently(world):
    """A WRITE to a bad rkey, a SEND longer than the receive buffer and a
    SEND without a posted receive are dropped at the receiver (no NAK, no
    error CQE on either side); the next good message gets through."""
    c = uc(world)
    la, rb, data = mrs(c)
    c.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb.rkey ^ 0x100, rb.addr(0)), wr_id=1)
    c.qa.post_send('SEND', [(la, 0, 500)], wr_id=2)           # no receive posted yet
    assert world.run() == 'idle'
    c.qb.post_recv([(rb, 0x1000, 100)], wr_id=10)           # too small for the next one
    c.qa.post_send('SEND', [(la, 0, 200)], wr_id=3)
    assert world.run() == 'idle'
    c.qb.post_recv([(rb, 0x2000, 4096)], wr_id=11)
    c.qa.post_send('SEND', [(la, 300, 64)], wr_id=4)
    assert world.run() == 'idle'
    assert [(x['wr_id'], x['status_name']) for x in c.cqa.poll()] == \
        [(1, 'SUCCESS'), (2, 'SUCCESS'), (3, 'SUCCESS'), (4, 'SUCCESS')]
    got = c.cqb.poll()
    # WQE 10 (100 bytes) was not consumed by the 200-byte SEND; the
    # 64-byte one fits and takes it
    assert [(x['wr_id'], x['status_name'], x['byte_len']) for x in got] == [(10, 'SUCCESS', 64)]
    assert rb.read(0x1000, 64) == data[300:364]
    assert rb.read(0, 100) == b'\0' * 100
    assert c.b.dev.stat('rx_drop_other') == 3
    assert not [f for f in world.frames(roce_only=True) if f.src == 1]
    assert c.qb.state == 'RTS'


def test_uc_rejects_read_and_atomics_as_bad_wqes(world):
    c = uc(world)
    la, rb, _ = mrs(c)
    c.qa.post_send('RDMA_READ', [(la, 0, 64)], remote=(rb, 0), wr_id=1)
    assert world.run() == 'idle'
    got = c.cqa.poll()
    assert [(x['wr_id'], x['status_name'], x['vendor_err_name']) for x in got] == \
        [(1, 'LOC_QP_OP_ERR', 'BAD_WQE')]
    assert c.a.dev.stat('bad_wqes') == 1
    assert not world.frames(roce_only=True)


def test_uc_bad_receive_wqe_is_a_local_error(world):
    """The receiver's own malformed receive WQE: completed with
    LOC_QP_OP_ERR, the QP goes to ERROR (QP_FATAL), as for RC."""
    c = uc(world)
    la, rb, _ = mrs(c)
    c.qb.post_recv([(rb, 0, 16)] * (q.MAX_SGE + 1), wr_id=9, check=False)  # over the limit
    c.qa.post_send('SEND', [(la, 0, 64)], wr_id=1)
    assert world.run() == 'idle'
    got = c.cqb.poll()
    assert got and got[0]['wr_id'] == 9 and got[0]['status_name'] == 'LOC_QP_OP_ERR'
    assert c.qb.state == 'ERR'
    assert [x['status_name'] for x in c.cqa.poll()] == ['SUCCESS']


def test_uc_modify_qp_attribute_rules(world):
    """UC takes the RC transitions without the reliability attributes:
    RTR without max_dest_rd_atomic/min_rnr_timer, RTS with sq_psn only;
    a RC-only attribute is refused (BAD_ATTR_MASK)."""
    a, b = world.devs
    pd = a.alloc_pd()
    cq = a.create_cq(6)
    qp = a.create_qp(pd, cq, cq, 'UC')
    qp.to_init()
    gid, nt = b.gids[0]
    av = q.make_av(gid, b.mac, nt)
    with pytest.raises(q.AdminError) as e:
        qp.modify('RTR', av=av, path_mtu=q.MTU[1024], dest_qpn=5, rq_psn=0,
                  max_dest_rd_atomic=4, min_rnr_timer=1)
    assert e.value.status_name == 'BAD_ATTR_MASK'
    qp.modify('RTR', av=av, path_mtu=q.MTU[1024], dest_qpn=5, rq_psn=0)
    with pytest.raises(q.AdminError) as e:
        qp.modify('RTS', sq_psn=0, timeout=14)
    assert e.value.status_name == 'BAD_ATTR_MASK'
    qp.modify('RTS', sq_psn=0)
    assert qp.state == 'RTS'
