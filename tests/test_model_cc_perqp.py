# SPDX-License-Identifier: GPL-2.0-or-later
"""Per-QP congestion control (ABI 1.4, spec 12.15): MODIFY_QP with
QRNIC_QP_ATTR_CC sets a QP's algorithm (cc_algo n: algorithm n - 1; 0:
the device's cc_algo, the default).  Its packets are ECN-capable or not
by the QP's algorithm, CE-marked packets make CNPs only for QPs with
congestion control, the value is checked, kept by a snapshot and reset
by a return to RESET."""
import pytest

import qrnic_harness as q


def pair(cfg=''):
    w = q.World(2, cfg=cfg)
    a, b = w.devs
    c1 = q.connect_rc(a, b)
    c2 = q.connect_rc(a, b, pd_a=c1.pda, pd_b=c1.pdb)
    return w, a, b, c1, c2


def write(w, a, b, conn):
    la, rb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 4096)], remote=(rb, 0))
    w.run()
    assert len(conn.cqa.poll(4)) == 1


def qp_frames(w, qpn_a, qpn_b):
    return [f for f in w.frames(roce_only=True) if f.opcode != 0x81 and
            ((f.src == 0 and f.dqpn == qpn_b) or (f.src == 1 and f.dqpn == qpn_a))]


def test_a_qp_with_dcqcn_on_a_device_without():
    w, a, b, c1, c2 = pair()
    try:
        for qp in (c1.qa, c1.qb):
            qp.modify(cc_algo=2)          # DCQCN (algorithm 1)
        assert a.qp_cc(c1.qa.qpn)['algo'] == 1 and a.qp_cc(c2.qa.qpn)['algo'] == 0
        w.rule('mark_ce', src=0, count=-1)
        write(w, a, b, c1)
        write(w, a, b, c2)
        f1 = qp_frames(w, c1.qa.qpn, c1.qb.qpn)
        f2 = qp_frames(w, c2.qa.qpn, c2.qb.qpn)
        assert f1 and {f.ecn for f in f1 if f.src == 1} == {2}   # ACKs: ECT(0)
        assert f2 and {f.ecn for f in f2} == {0}                  # not ECN-capable
        cnps = [f for f in w.frames(roce_only=True) if f.opcode == 0x81]
        assert cnps and {f.dqpn for f in cnps} == {c1.qa.qpn}
        assert a.qp_cc(c1.qa.qpn)['cnps'] == len(cnps) and a.qp_cc(c2.qa.qpn)['cnps'] == 0
    finally:
        w.close()


def test_a_qp_without_cc_on_a_dcqcn_device():
    w, a, b, c1, c2 = pair('cc_algo=1')
    try:
        for qp in (c2.qa, c2.qb):
            qp.modify(cc_algo=1)          # none
        w.rule('mark_ce', src=0, count=-1)
        write(w, a, b, c1)
        write(w, a, b, c2)
        assert {f.ecn for f in qp_frames(w, c2.qa.qpn, c2.qb.qpn)} == {0}
        cnps = [f for f in w.frames(roce_only=True) if f.opcode == 0x81]
        assert cnps and {f.dqpn for f in cnps} == {c1.qa.qpn}
        assert a.qp_cc(c2.qa.qpn)['algo'] == 0 and a.qp_cc(c1.qa.qpn)['algo'] == 1
    finally:
        w.close()


def test_bad_value_refused_and_reset_clears_it():
    w, a, b, c1, c2 = pair()
    try:
        with pytest.raises(q.AdminError) as e:
            c1.qa.modify(cc_algo=4)
        assert e.value.status_name == 'BAD_PARAM'
        c1.qa.modify(cc_algo=3)           # TIMELY
        assert a.qp_cc(c1.qa.qpn)['algo'] == 2
        s = a.save()
        a.load(s)
        assert a.qp_cc(c1.qa.qpn)['algo'] == 2
        c1.qa.modify('RESET')
        assert a.qp_cc(c1.qa.qpn)['algo'] == 0
    finally:
        w.close()
