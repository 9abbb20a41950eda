# SPDX-License-Identifier: GPL-2.0-or-later
"""SQ doorbells that ride on the acknowledgement (qrnic_dev_set_db_batch;
QEMU's doorbell-batch, docs/qemu.md section 3; issue 18).  With the host
setting on, an SQ doorbell of an RC QP whose packets await an ACK records
the producer index without asking the host for a run: the ACK's arrival
(or a NAK, or the retransmission timer) kicks the QP and the new WQEs go
then, in order.  Every other doorbell -- an idle QP, the setting off, a
timing profile -- asks for a run at once, as before.  The harness checks
after every run that no device is busy without having asked for one
(busy_unscheduled)."""
import pytest

import qrnic_harness as q

LAT = 20_000        # ns one way: an ACK takes 40 us to come back


def pattern(n, seed):
    return bytes((i * 31 + seed) & 0xff for i in range(n))


def write_in_flight(world, on, size=16384):
    """A connection with a WRITE whose packets are out and whose ACK is not
    back yet; returns (conn, src, dst)."""
    a, b = world.devs
    world.db_batch(a.idx, on)
    world.set_latency(LAT)
    c = q.connect_rc(a, b, mtu=1024)
    src, dst = a.reg_mr(c.pda, 1 << 16), b.reg_mr(c.pdb, 1 << 16)
    src.write(0, pattern(1 << 16, 3))
    tx0 = a.stat('tx_packets')
    c.qa.post_send('RDMA_WRITE', [(src, 0, size)], remote=(dst, 0), wr_id=1)
    world.run_for(LAT // 2)            # sent, not yet acknowledged
    assert a.stat('tx_packets') - tx0 == size // 1024
    assert not world.sched_pending(a.idx)
    return c, src, dst


def test_doorbell_waits_for_the_ack_and_its_wqes_go_then(world):
    a, b = world.devs
    c, src, dst = write_in_flight(world, on=True)
    tx = a.stat('tx_packets')
    for i in range(2, 6):          # four more WRITEs, each with its own doorbell
        c.qa.post_send('RDMA_WRITE', [(src, i * 4096, 4096)], remote=(dst, i * 4096), wr_id=i)
    assert world.db_batched(a.idx) == 4
    assert not world.sched_pending(a.idx)      # no run asked for
    world.run_for(LAT // 4)
    assert a.stat('tx_packets') == tx          # nothing left before the ACK
    got = c.cqa.wait(5)
    assert [(e['wr_id'], e['status_name']) for e in got] == [(i, 'SUCCESS') for i in range(1, 6)]
    assert dst.read(0, 6 * 4096) == pattern(1 << 16, 3)[:6 * 4096]
    assert world.wire_stats()['busy_unscheduled'] == 0
    assert a.stat('tx_packets') - tx == 4 * 4      # 4 KiB at MTU 1024, once each


def test_setting_off_takes_the_doorbell_at_once(world):
    a, b = world.devs
    c, src, dst = write_in_flight(world, on=False)
    tx = a.stat('tx_packets')
    c.qa.post_send('RDMA_WRITE', [(src, 0, 1024)], remote=(dst, 32768), wr_id=2)
    assert world.db_batched(a.idx) == 0
    assert world.sched_pending(a.idx)
    world.run_for(LAT // 4)
    assert a.stat('tx_packets') == tx + 1      # out before the first ACK
    assert [e['status_name'] for e in c.cqa.wait(2)] == ['SUCCESS'] * 2


def test_idle_qp_rings_at_once(world):
    """Nothing awaiting an ACK: the doorbell is taken at once even with the
    setting on (a ping-pong never waits a round trip)."""
    a, b = world.devs
    world.db_batch(a.idx, True)
    c = q.connect_rc(a, b)
    src, dst = a.reg_mr(c.pda, 4096), b.reg_mr(c.pdb, 4096)
    src.write(0, pattern(4096, 9))
    for i in range(3):
        c.qa.post_send('RDMA_WRITE', [(src, 0, 4096)], remote=(dst, 0), wr_id=i)
        assert world.sched_pending(a.idx)
        assert [e['status_name'] for e in c.cqa.wait(1)] == ['SUCCESS']
    assert world.db_batched(a.idx) == 0
    assert dst.read(0, 4096) == pattern(4096, 9)


@pytest.mark.parametrize('lost', ['ack', 'request'])
def test_lost_ack_or_request_the_timer_takes_them(world, lost):
    """The packet the QP waits on is lost: the retransmission timer (short
    here) resends it, and the WQEs posted meanwhile follow; every byte
    arrives once."""
    a, b = world.devs
    world.db_batch(a.idx, True)
    world.set_latency(LAT)
    c = q.connect_rc(a, b, mtu=1024, timeout=8, retry_cnt=7)     # ~1 ms
    src, dst = a.reg_mr(c.pda, 1 << 16), b.reg_mr(c.pdb, 1 << 16)
    src.write(0, pattern(1 << 16, 5))
    if lost == 'ack':
        world.rule('drop', src=b.idx, opcode='RC_ACK')
    else:
        world.rule('drop', src=a.idx, index=0)
    c.qa.post_send('RDMA_WRITE', [(src, 0, 1024)], remote=(dst, 0), wr_id=1)
    world.run_for(LAT // 2)
    c.qa.post_send('RDMA_WRITE', [(src, 1024, 8192)], remote=(dst, 1024), wr_id=2)
    assert world.db_batched(a.idx) == 1
    got = c.cqa.wait(2)
    assert [(e['wr_id'], e['status_name']) for e in got] == [(1, 'SUCCESS'), (2, 'SUCCESS')]
    assert dst.read(0, 9216) == pattern(1 << 16, 5)[:9216]
    assert a.stat('retransmit_timeouts') >= 1
    assert world.wire_stats()['busy_unscheduled'] == 0


def test_timing_profile_takes_every_doorbell_at_once(world):
    """Under a timing profile the doorbell starts the calibrated clock of
    the WQE (doorbell to wire): never batched."""
    a, b = world.devs
    a.set_timing('cx5-100g')
    c, src, dst = write_in_flight(world, on=True)
    c.qa.post_send('RDMA_WRITE', [(src, 0, 1024)], remote=(dst, 32768), wr_id=2)
    assert world.db_batched(a.idx) == 0
    assert [e['status_name'] for e in c.cqa.wait(2)] == ['SUCCESS'] * 2


@pytest.mark.parametrize('on', [True, False])
def test_rq_doorbell_asks_for_no_run_and_the_receives_work(world, on):
    """With the setting on, an RQ doorbell of a QP in RTS asks for no run
    (its WQEs are taken when the SENDs arrive); the SENDs land in them in
    order either way."""
    a, b = world.devs
    world.db_batch(b.idx, on)
    c = q.connect_rc(a, b)
    src, dst = a.reg_mr(c.pda, 4096), b.reg_mr(c.pdb, 4 * 4096)
    src.write(0, pattern(4096, 7))
    world.run()
    q0 = world.db_batched(b.idx, rq=True)
    for i in range(4):
        c.qb.post_recv([(dst, i * 4096, 4096)], wr_id=10 + i)
        assert world.sched_pending(b.idx) == (not on)
        world.run()
    assert world.db_batched(b.idx, rq=True) - q0 == (4 if on else 0)
    for i in range(4):
        c.qa.post_send('SEND', [(src, 0, 1024 * (i + 1))], wr_id=i)
    got = c.cqb.wait(4)
    assert [(e['wr_id'], e['status_name'], e['byte_len']) for e in got] == \
        [(10 + i, 'SUCCESS', 1024 * (i + 1)) for i in range(4)]
    assert all(dst.read(i * 4096, 1024 * (i + 1)) == pattern(4096, 7)[:1024 * (i + 1)]
               for i in range(4))
    assert world.wire_stats()['busy_unscheduled'] == 0


def test_rq_doorbell_in_err_still_flushes(world):
    """A QP in ERR needs a run for the receives posted to it (flushed): the
    doorbell asks for one with the setting on."""
    a, b = world.devs
    world.db_batch(b.idx, True)
    c = q.connect_rc(a, b)
    dst = b.reg_mr(c.pdb, 4096)
    c.qb.modify('ERR')
    world.run()
    q0 = world.db_batched(b.idx, rq=True)
    c.qb.post_recv([(dst, 0, 4096)], wr_id=77)
    assert world.sched_pending(b.idx)
    got = c.cqb.wait(1)
    assert [(e['wr_id'], e['status_name']) for e in got] == [(77, 'WR_FLUSH_ERR')]
    assert world.db_batched(b.idx, rq=True) == q0


def test_setting_survives_a_snapshot(world):
    """hx_dev_snapshot makes the device anew as a migration's target would,
    with the same host settings: a doorbell after it still waits for the
    ACK of the WRITE that was in flight across the snapshot."""
    a, b = world.devs
    c, src, dst = write_in_flight(world, on=True)
    a.snapshot()
    c.qa.post_send('RDMA_WRITE', [(src, 0, 1024)], remote=(dst, 32768), wr_id=2)
    assert world.db_batched(a.idx) == 1
    assert not world.sched_pending(a.idx)
    got = c.cqa.wait(2)
    assert [(e['wr_id'], e['status_name']) for e in got] == [(1, 'SUCCESS'), (2, 'SUCCESS')]
    assert dst.read(0, 16384) == pattern(1 << 16, 3)[:16384]
    assert dst.read(32768, 1024) == pattern(1 << 16, 3)[:1024]
