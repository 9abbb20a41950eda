# SPDX-License-Identifier: GPL-2.0-or-later
"""CQ resize and moderation (issue: Verbs II, item 3; spec 6.6.17,
6.6.18): RESIZE_CQ with completions in flight loses none and keeps their
order, bigger and smaller, under the timing model too; too small is
refused with nothing changed; MODIFY_CQ's count and period decide when
the completion event comes; bad input."""
import random

import pytest

import qrnic_harness as q

AQ = {n: i for i, n in enumerate(q.AQ_STATUS)}


def sends(conn, n, size=64, signaled=True, base=0):
    src = conn.a.dev.reg_mr(conn.pda, 4096)
    dst = conn.b.dev.reg_mr(conn.pdb, 4096 * 4)
    for i in range(n):
        conn.qb.post_recv([(dst, (i % 4) * 4096, 4096)], wr_id=1000 + base + i)
    for i in range(n):
        conn.qa.post_send('SEND', [(src, 0, size)], wr_id=base + i, signaled=signaled)


@pytest.mark.parametrize('profile', ['functional', 'cx5-100g'])
@pytest.mark.parametrize('nsend,new_log', [(40, 9), (12, 4)], ids=['bigger', 'smaller'])
def test_resize_with_completions_in_flight(world, profile, nsend, new_log):
    """SENDs in flight; the CQ (depth 64) is resized after some of their
    CQEs were polled while others are outstanding or not yet written (under
    the timing model, CQEs reserved and not yet visible are written first):
    every CQE arrives exactly once, in order, across the old and new ring.
    (The new depth covers what can be outstanding, as on any RNIC.)"""
    for d in world.devs:
        d.set_timing(profile)
    conn = q.connect_rc(*world.devs, cq_log=6, sq_log=6)
    sends(conn, nsend)
    world.run_for(7_000)                      # some completions, not all (timed)
    got = conn.cqa.poll(5)
    assert conn.cqa.resize(new_log) is not None
    for _ in range(10_000):                   # poll as a consumer would
        if len(got) == nsend:
            break
        world.run_for(500)
        got += conn.cqa.poll()
    assert [c['wr_id'] for c in got] == list(range(nsend))
    assert all(c['status_name'] == 'SUCCESS' for c in got)
    assert conn.cqa.poll() == []
    assert conn.a.dev.stat('cq_overruns') == 0


def test_resize_smaller_than_outstanding_is_refused(world):
    a = world.devs[0]
    conn = q.connect_rc(*world.devs, cq_log=6, sq_log=6)
    sends(conn, 40)
    assert world.run() == 'idle'
    got = conn.cqa.poll(5)
    assert conn.cqa.resize(4, check=False) is None      # 35 left, 16 slots
    assert (a.last_status, a.last_cqe()['detail']) == \
        (AQ['BAD_PARAM'], q.cmd_offset('resize_cq.log_depth'))
    got += conn.cqa.poll(30)                  # the old ring still works
    assert conn.cqa.resize(4) == 5            # now they fit
    got += conn.cqa.poll()
    assert [c['wr_id'] for c in got] == list(range(40))


def test_resize_carried_count_and_wrap(world):
    """CQEs carried over = those not consumed; the new ring wraps correctly
    afterwards (owner bits of its later passes)."""
    conn = q.connect_rc(*world.devs, cq_log=3, sq_log=6)
    sends(conn, 6)
    assert world.run() == 'idle'
    assert len(conn.cqa.poll(2)) == 2
    assert conn.cqa.resize(2) == 4            # exactly full
    assert [c['wr_id'] for c in conn.cqa.poll()] == [2, 3, 4, 5]
    for rnd in range(5):                      # 5 passes of the 4-entry ring
        sends(conn, 3, base=100 + 3 * rnd)
        got = conn.cqa.wait(3)
        assert [c['wr_id'] for c in got] == [100 + 3 * rnd + i for i in range(3)]
    assert conn.a.dev.stat('cq_overruns') == 0


def test_resize_errors_change_nothing(world):
    a = world.devs[0]
    conn = q.connect_rc(*world.devs, cq_log=4)
    sends(conn, 10)
    assert world.run() == 'idle'
    cq = conn.cqa
    for log, field in ((3, 'resize_cq.log_depth'), (0, 'resize_cq.log_depth'),
                       (23, 'resize_cq.log_depth')):
        assert cq.resize(log, check=False) is None
        assert (a.last_status, a.last_cqe()['detail']) == (AQ['BAD_PARAM'], q.cmd_offset(field))
    assert a.destroy('DESTROY_CQ', 0x777, check=False) == AQ['BAD_HANDLE']
    # raw commands: reserved bytes, a misaligned ring, an unknown CQ
    for patch, st, field in ((('resize_cq.rsvd', 1), 'BAD_PARAM', 'resize_cq.rsvd'),
                             (('resize_cq.rsvd2', 1), 'BAD_PARAM', 'resize_cq.rsvd2'),
                             (('resize_cq.ring_addr', 0x1234), 'BAD_PARAM', 'resize_cq.ring_addr'),
                             (('resize_cq.cqn', 0x777), 'BAD_HANDLE', 'resize_cq.cqn')):
        a.patch_next_cmd(*patch)
        assert cq.resize(5, check=False) is None
        assert (a.last_status, a.last_cqe()['detail']) == (AQ[st], q.cmd_offset(field))
    assert [c['wr_id'] for c in cq.poll()] == list(range(10))   # all still there


def test_resize_of_an_overrun_cq_is_refused(world):
    a = world.devs[0]
    conn = q.connect_rc(*world.devs, cq_log=2)
    sends(conn, 6)                            # 6 CQEs into 4 slots
    world.run()
    assert a.stat('cq_overruns') == 1
    assert conn.cqa.resize(6, check=False) is None and a.last_status == AQ['BAD_STATE']


def eq_count(dev, cqn):
    return sum(1 for e in dev.comp_eq.poll() if e['type'] == q.EQE_COMPLETION and
               e['handle'] == cqn)


@pytest.mark.parametrize('count,period,n,expect', [
    (0, 0, 5, 1),          # no moderation: the first CQE raises it
    (8, 0, 5, 0),          # five CQEs, count 8, no period: not yet
    (4, 0, 5, 1),          # the fourth raises it
    (8, 50, 5, 1),         # the period ends it
])
def test_moderation(world, count, period, n, expect):
    a = world.devs[0]
    conn = q.connect_rc(*world.devs)
    cq = conn.cqa
    cq.moderate(count, period)
    eq_count(a, cq.cqn)
    cq.arm()
    sends(conn, n)
    assert world.run() == 'idle'
    assert len(cq.poll()) == n
    assert eq_count(a, cq.cqn) == expect


def test_moderation_period_timing(world):
    """With count 100 and a 20 us period, the event comes 20 us after the
    first CQE since arming, not at it."""
    a = world.devs[0]
    conn = q.connect_rc(*world.devs)
    cq = conn.cqa
    cq.moderate(100, 20)
    eq_count(a, cq.cqn)
    cq.arm()
    sends(conn, 1)
    t0 = None
    while world.now < 10_000_000:
        world.run_for(1000)
        if t0 is None and cq.peek():
            t0 = world.now
        if eq_count(a, cq.cqn):
            break
    assert t0 is not None
    assert 19_000 <= world.now - t0 <= 22_000, (t0, world.now)


def test_error_cqe_is_not_moderated(world):
    a = world.devs[0]
    conn = q.connect_rc(*world.devs)
    cq = conn.cqa
    cq.moderate(100, 0)
    eq_count(a, cq.cqn)
    cq.arm()
    conn.qa.post_send('SEND', [(0x1000, 8, 0x12345)])   # bad lkey: an error CQE
    assert world.run() == 'idle'
    assert eq_count(a, cq.cqn) == 1


def test_modify_cq_bad_input(world):
    a = world.devs[0]
    cq = a.create_cq(6)
    a.patch_next_cmd('modify_cq.rsvd', 1)
    assert cq.moderate(1, 1, check=False) == AQ['BAD_PARAM']
    assert a.last_cqe()['detail'] == q.cmd_offset('modify_cq.rsvd')
    a.patch_next_cmd('modify_cq.cqn', 0x777)
    assert cq.moderate(1, 1, check=False) == AQ['BAD_HANDLE']


def test_resize_again_and_again_under_timing(world):
    """Resized every 100 ns of modelled time while 60 SENDs complete under
    the cx5-100g profile, often while CQEs are reserved and not yet written
    (they are written into the old ring first, then carried): every CQE
    exactly once, in order."""
    for d in world.devs:
        d.set_timing('cx5-100g')
    conn = q.connect_rc(*world.devs, cq_log=7, sq_log=7, rq_log=7)
    sends(conn, 60)
    got, logs, k = [], (7, 8), 0
    for _ in range(20_000):
        if len(got) == 60:
            break
        world.run_for(100)
        assert conn.cqa.resize(logs[k % 2]) is not None
        k += 1
        if k % 3 == 0:
            got += conn.cqa.poll(2)
    got += conn.cqa.poll()
    assert [c['wr_id'] for c in got] == list(range(60))
    assert k > 50 and conn.a.dev.stat('cq_overruns') == 0


def test_resize_below_posted_sends_is_refused(world):
    """Sends posted (doorbells rung) but not yet run when RESIZE_CQ comes:
    each will write a CQE, so a shrink below them is refused (EINVAL in the
    driver) and the CQ keeps them all; a resize that holds them passes.
    (rdma-core's test_cq.CQTest.test_resize_cq does exactly this; before,
    the shrink succeeded and the sends then overran the 2-entry ring.)"""
    a = world.devs[0]
    conn = q.connect_rc(*world.devs, cq_log=6, sq_log=6)
    sends(conn, 6)                            # posted, the device has not run
    assert conn.cqa.resize(1, check=False) is None
    assert a.last_status == AQ['BAD_PARAM']
    assert conn.cqa.resize(3) == 0            # 8 slots hold the 6 to come
    assert world.run() == 'idle'
    got = conn.cqa.poll()
    assert [(c['wr_id'], c['status_name']) for c in got] == [(i, 'SUCCESS') for i in range(6)]
    assert a.stat('cq_overruns') == 0
