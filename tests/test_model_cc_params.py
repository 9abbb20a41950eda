# SPDX-License-Identifier: GPL-2.0-or-later
"""Congestion control parameters at run time (ABI 1.9, QUERY_CC / SET_CC,
docs/spec.md 6.6.22): every parameter round-trips, every out-of-range
value is refused with nothing changed, a changed parameter changes what
the reaction and notification points do, a reset restores the
configuration, and a snapshot carries the changes (the CC.. section)."""
import pytest

import qrnic_harness as q
from test_model_cc import Dcqcn, captured_cnp, check, cnp_frames, inject_cnps, marked_stream

TABLE = {p['name']: p for p in q.config_params()}
OFF_PARAM, OFF_VALUE, OFF_RSVD = 8, 12, 16     # command offsets of struct qrnic_cmd_cc


def all_cc(dev):
    return {n: dev.query_cc(n)['value'] for n in q.CC_PARAMS}


def test_caps_version_and_the_parameter_list():
    w = q.World(1)
    try:
        a = w.devs[0]
        attr = a.query_device()
        assert attr['abi_version'] == q.ABI_VERSION >= 0x10009
        assert attr['caps'] & q.CAP_CC_PARAMS
        assert a.reg_read(q.REG['CAPS']) & q.CAP_CC_PARAMS
        # every parameter is one of the configuration table: its range, its default
        for i, name in enumerate(q.CC_PARAMS):
            r = a.query_cc(i)
            p = TABLE[name]
            assert (r['value'], r['min'], r['max'], r['configured']) == \
                (p['default'], p['min'], p['max'], p['default']), name
        # the next id is no parameter
        assert a.query_cc(len(q.CC_PARAMS), check=False) is None
        cqe = a.last_cqe()
        assert cqe['status'] == q.AQ['BAD_PARAM'] and cqe['detail'] == OFF_PARAM
        assert list(cqe['result']) == [0, 0, 0, 0]
    finally:
        w.close()


def test_every_parameter_round_trips():
    """min, max and a middle value of each parameter read back; no other
    parameter moves; the configured value stays what the device was made with."""
    w = q.World(1, cfg='cc_algo=1,rp_min_rate=7')
    try:
        a = w.devs[0]
        before = all_cc(a)
        assert before['cc_algo'] == 1 and before['rp_min_rate'] == 7
        for name in q.CC_PARAMS:
            p = TABLE[name]
            for v in (p['min'], p['max'], (p['min'] + p['max']) // 2, before[name]):
                assert a.set_cc(name, v) == 0
                now = all_cc(a)
                assert now[name] == v, name
                assert {k: x for k, x in now.items() if k != name} == \
                    {k: x for k, x in before.items() if k != name}, name
                assert a.query_cc(name)['configured'] == before[name]
        assert all_cc(a) == before
    finally:
        w.close()


def test_every_out_of_range_value_is_refused_and_nothing_changes():
    w = q.World(1)
    try:
        a = w.devs[0]
        a.set_cc('rp_ai_rate', 123)
        before = all_cc(a)
        errors = a.stat('admin_errors')
        a.clear_logs()
        n = 0
        for i, name in enumerate(q.CC_PARAMS):
            p = TABLE[name]
            bad = [v for v in (p['min'] - 1, p['max'] + 1, 0xffffffff)
                   if 0 <= v <= 0xffffffff and not p['min'] <= v <= p['max']]
            assert bad, name
            for v in bad:
                with pytest.raises(q.AdminError):
                    a.set_cc(name, v)
                cqe = a.last_cqe()
                assert cqe['status'] == q.AQ['BAD_PARAM'] and cqe['detail'] == OFF_VALUE
                assert all_cc(a) == before, (name, v)
                n += 1
                tp = [f for t, f, _ in a.tracepoints() if t == 'err_cc_param']
                assert tp[-1] == {'param': i, 'value': v, 'min': p['min'], 'max': p['max']}
        assert a.stat('admin_errors') == errors + n
        # an unknown parameter, a reserved field
        assert a.set_cc(len(q.CC_PARAMS), 1, check=False) == q.AQ['BAD_PARAM']
        assert a.last_cqe()['detail'] == OFF_PARAM
        assert a.set_cc(0xffffffff, 1, check=False) == q.AQ['BAD_PARAM']
        assert a.set_cc('cc_algo', 1, rsvd=1, check=False) == q.AQ['BAD_PARAM']
        assert a.last_cqe()['detail'] == OFF_RSVD
        assert a.query_cc('cc_algo', rsvd=1 << 63, check=False) is None
        assert a.last_cqe()['detail'] == OFF_RSVD
        assert all_cc(a) == before
    finally:
        w.close()


CFG = 'cc_algo=1,np_min_time_between_cnps=0'


def test_a_changed_decrease_factor_is_the_rate_after_a_cnp():
    """rp_min_dec_fac and rp_initial_alpha_value set by SET_CC before the
    first CNP: the rate after it follows them (not the configured ones);
    rp_min_rate set while the QP is limited is its floor at the next CNP."""
    w = q.World(2, cfg=CFG)
    try:
        a, b = w.devs
        a.set_cc('rp_min_dec_fac', 80)
        a.set_cc('rp_initial_alpha_value', 600)
        conn, cnp = captured_cnp(w, a, b)
        m = Dcqcn(min_dec=80, alpha0=600)
        m.cnp(w.now)
        info = a.qp_cc(conn.qa.qpn)
        check(info, m)
        assert info['rate'] == pytest.approx(80000.0)     # 80 % of 100 Gb/s, not 50 %
        # the running QP sees a new floor at its next rate event
        a.set_cc('rp_min_rate', 70000)
        t = w.now + 2000
        inject_cnps(w, a, cnp, [t])
        m.min_rate = 70000
        m.cnp(t)
        check(a.qp_cc(conn.qa.qpn), m)
        assert a.qp_cc(conn.qa.qpn)['rate'] == pytest.approx(70000.0)
    finally:
        w.close()


def test_the_same_without_the_change_halves():
    """The control: with the configured rp_min_dec_fac 50 the first CNP halves."""
    w = q.World(2, cfg=CFG)
    try:
        a, b = w.devs
        conn, _ = captured_cnp(w, a, b)
        assert a.qp_cc(conn.qa.qpn)['rate'] == pytest.approx(50000.0, rel=1e-3)
    finally:
        w.close()


def test_np_enable_off_sends_no_cnps_and_rp_enable_off_ignores_them():
    w = q.World(2, cfg=CFG)
    try:
        a, b = w.devs
        b.set_cc('np_enable', 0)
        conn, rid = marked_stream(w, a, b, n=4)
        w.run()
        assert w.rule_fired(rid) > 0
        assert b.stat('ecn_marked_received') == w.rule_fired(rid)
        assert b.stat('cnp_sent') == 0 and not cnp_frames(w)
        # the notification point on again: CNPs; the reaction point off: ignored
        b.set_cc('np_enable', 1)
        a.set_cc('rp_enable', 0)
        la, rb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
        for i in range(4):
            conn.qa.post_send('RDMA_WRITE', [(la, 0, 4096)], remote=(rb, 0), wr_id=100 + i)
        w.run()
        assert b.stat('cnp_sent') > 0
        assert a.stat('cnp_received') == b.stat('cnp_sent')
        assert not a.qp_cc(conn.qa.qpn)['limited']
        a.set_cc('rp_enable', 1)
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 4096)], remote=(rb, 0), wr_id=200)
        w.run()
        assert a.qp_cc(conn.qa.qpn)['limited']
    finally:
        w.close()


def test_cc_algo_at_run_time():
    """A device made without congestion control: SET_CC cc_algo 1 makes its
    packets ECT(0) and its CNPs go; back to 0, a limited QP that follows the
    device's algorithm starts over (unlimited), one with its own stays."""
    w = q.World(2)
    try:
        a, b = w.devs
        for d in (a, b):
            d.set_cc('cc_algo', 1)
        conn, rid = marked_stream(w, a, b, n=2)
        own = q.connect_rc(a, b)
        own.qa.modify(cc_algo=2)                       # DCQCN of its own
        w.run()
        assert {f.ecn for f in w.frames(roce_only=True) if f.opcode != 0x81} <= {2, 3}
        assert cnp_frames(w) and a.qp_cc(conn.qa.qpn)['limited']
        cnp = cnp_frames(w)[0].data
        w.clear_rules()
        # the own-algorithm QP gets a CNP too (its QPN patched into the frame)
        fr = bytearray(cnp)
        fr[14 + 20 + 8 + 5:14 + 20 + 8 + 8] = own.qa.qpn.to_bytes(3, 'big')
        a.inject_vouched(bytes(fr))
        w.run()
        assert a.qp_cc(own.qa.qpn)['limited']
        a.set_cc('cc_algo', 0)
        assert not a.qp_cc(conn.qa.qpn)['limited'] and a.qp_cc(conn.qa.qpn)['algo'] == 0
        assert a.qp_cc(own.qa.qpn)['limited'] and a.qp_cc(own.qa.qpn)['algo'] == 1
    finally:
        w.close()


def test_a_reset_restores_the_configuration():
    w = q.World(1, cfg='rp_ai_rate=9')
    try:
        a = w.devs[0]
        a.set_cc('rp_ai_rate', 1000)
        a.set_cc('cc_algo', 2)
        a.reg_write(q.REG['CTRL'], q.CTRL_RESET)
        a.bringup()
        r = a.query_cc('rp_ai_rate')
        assert r['value'] == r['configured'] == 9
        assert a.query_cc('cc_algo')['value'] == 0
    finally:
        w.close()


def test_snapshot_carries_the_changes():
    """Changed values travel in the CC.. section, right after CONF; a device
    without changes writes none; a bad section is refused, the device reset."""
    w = q.World(2, cfg=CFG)
    try:
        a, b = w.devs
        assert 'CC..' not in q.snap_sections(a.save())
        a.set_cc('rp_hai_rate', 777)
        a.set_cc('timely_beta', 100)
        a.set_cc('np_enable', 0)
        want = all_cc(a)
        s = a.save()
        secs = list(q.snap_sections(s))
        assert secs[:2] == ['CONF', 'CC..']
        a.snapshot()                                 # a new device of the configuration
        assert all_cc(a) == want
        assert a.query_cc('rp_hai_rate')['configured'] == TABLE['rp_hai_rate']['default']
        assert q.snap_sections(a.save())['CC..'] == q.snap_sections(s)['CC..']
        # back to the configured values: the section goes
        a.set_cc('rp_hai_rate', TABLE['rp_hai_rate']['default'])
        a.set_cc('timely_beta', TABLE['timely_beta']['default'])
        a.set_cc('np_enable', 1)
        assert 'CC..' not in q.snap_sections(a.save())
        # a value out of range in the stream: refused
        # count (u32), then per parameter its name (u8 length, bytes) and value (u64)
        bad = bytearray(q.snap_sections(s)['CC..'][1])
        assert int.from_bytes(bad[:4], 'little') == 3
        off = bad.index(b'timely_beta') + len('timely_beta')
        assert int.from_bytes(bad[off:off + 8], 'little') == 100
        bad[off:off + 8] = (5000).to_bytes(8, 'little')
        with pytest.raises(q.HarnessError, match='timely_beta = 5000 out of range'):
            a.load(q.snap_replace(s, 'CC..', bytes(bad)))
        # the stream as it was loads (read back without admin commands: the
        # harness's driver state is not the stream's after an in-place load)
        a.load(s)
        assert q.snap_sections(a.save())['CC..'] == q.snap_sections(s)['CC..']
    finally:
        w.close()


def test_a_paced_qp_goes_on_at_the_line_rate_when_cc_algo_goes_to_none():
    """cx5-100g: a QP paced at a low DCQCN rate, waiting for its limiter,
    when SET_CC turns the device's algorithm off: it is serviced again at
    once and its packets leave back to back at the line rate (the armed
    limiter event is stale, nothing strands it)."""
    w = q.World(2, cfg=CFG + ',rp_time_reset=100000,rp_byte_reset=0,rp_min_dec_fac=0,'
                'rp_min_rate=100')
    try:
        a, b = w.devs
        for d in (a, b):
            d.set_timing('cx5-100g')
        conn, cnp = captured_cnp(w, a, b)
        inject_cnps(w, a, cnp, [w.now + 1000 * i for i in range(1, 12)])
        rate = a.qp_cc(conn.qa.qpn)['rate']
        assert rate < 1000
        la, rb = a.reg_mr(conn.pda, 65536), b.reg_mr(conn.pdb, 65536)
        start = len(w.frames())
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 65536)], remote=(rb, 0))
        w.run(ns=100_000)                       # a few packets at the low rate
        sent = [f for f in w.frames()[start:] if f.roce and f.src == 0]
        assert 1 <= len(sent) < 64
        t = w.now
        a.set_cc('cc_algo', 0)
        assert not a.qp_cc(conn.qa.qpn)['limited']
        w.run()
        fr = [f for f in w.frames()[start:] if f.roce and f.src == 0 and
              f.opname.startswith('RC_WRITE')]
        assert len(fr) == 64
        late = [f1.t - f0.t for f0, f1 in zip(fr, fr[1:]) if f0.t >= t]
        assert late and max(late) < 1000        # 1 KiB at 100 Gb/s: ~90 ns apart
        # the write of captured_cnp, then this one
        assert [c['status_name'] for c in conn.cqa.poll(8)] == ['SUCCESS', 'SUCCESS']
        assert a.stat('retransmit_timeouts') == 0 and a.stat('retransmitted_packets') == 0
    finally:
        w.close()


def test_a_paced_qp_goes_on_when_its_own_algorithm_goes_to_none():
    """The same through MODIFY_QP with QRNIC_QP_ATTR_CC in RTS (ABI 1.4)."""
    w = q.World(2, cfg=CFG + ',rp_time_reset=100000,rp_byte_reset=0,rp_min_dec_fac=0,'
                'rp_min_rate=100')
    try:
        a, b = w.devs
        for d in (a, b):
            d.set_timing('cx5-100g')
        conn, cnp = captured_cnp(w, a, b)
        inject_cnps(w, a, cnp, [w.now + 1000 * i for i in range(1, 12)])
        la, rb = a.reg_mr(conn.pda, 65536), b.reg_mr(conn.pdb, 65536)
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 65536)], remote=(rb, 0))
        w.run(ns=100_000)
        conn.qa.modify(cc_algo=1)                       # algorithm 0: none
        assert not a.qp_cc(conn.qa.qpn)['limited']
        w.run()
        assert [c['status_name'] for c in conn.cqa.poll(8)] == ['SUCCESS', 'SUCCESS']
        assert a.stat('retransmit_timeouts') == 0 and a.stat('retransmitted_packets') == 0
    finally:
        w.close()
