# SPDX-License-Identifier: GPL-2.0-or-later
"""A completion that overruns its CQ moves the QP to error, and the error
flushes the QP's queues at once -- from inside the completion loop that was
posting.  That loop must not go on as if nothing happened: it used to count
the flushed WQE once more, leaving the send queue's consumer index past its
producer, and the next flush of the QP then looped 2^32 times (a guest
could hang the host: found by fuzz_guest).  Now the loop stops, and a flush
refuses to run more than a ring's worth (counted as a self-check failure)."""
import pytest

import qrnic_harness as q


@pytest.mark.parametrize('nwqe', [3, 4, 7])
def test_completion_overrunning_its_cq_then_more_work(world, nwqe):
    a, b = world.devs
    c = q.connect_rc(a, b, cq_log=1)            # a CQ of 2 CQEs, never polled
    src = a.reg_mr(c.pda, 1 << 14)
    dst = b.reg_mr(c.pdb, 1 << 14)
    for i in range(nwqe):
        c.qa.post_send('RDMA_WRITE', [(src, 0, 512)], remote=(dst, 0), wr_id=i)
    assert world.run() == 'idle'
    assert a.stat('cq_overruns') == 1
    assert c.qa.query()['state_name'] == 'ERR'
    a.check()                                   # no self-check failure
    v = {x['qpn']: x for x in a.view('qp')}[c.qa.qpn]
    # the consumer index never passes the producer (it was one past it)
    assert v['sq_ci'] == v['sq_pi'] == nwqe, v
    # more work on the QP in error: a doorbell and its flush
    c.qa.post_send('RDMA_WRITE', [(src, 0, 512)], remote=(dst, 0), wr_id=99)
    assert world.run(ns=1_000_000_000, max_iter=200_000) == 'idle'
    a.check()
    v = {x['qpn']: x for x in a.view('qp')}[c.qa.qpn]
    assert v['sq_ci'] == v['sq_pi'], v          # everything flushed, nothing beyond
