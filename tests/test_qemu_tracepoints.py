# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: the model's typed trace points (model/qrnic_tracepoints.h)
through QEMU's log trace backend.  -trace 'qrnic_err_*' and a few guest
errors (a bad send WQE, a bad admin command field, out-of-range and stray
doorbells) give the typed lines with the right fields; the typed device
events come one per qrnic_event record, right after it, with the same time
and values.  The unit-tier twin is test_tracepoints.py."""
import re

import pytest

import qrnic_harness as h
from qtest import scenarios
from qtest.driver import World
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

# qrnic_event type -> typed device event (model/tracepoints.c)
EVENT_TYPED = {'doorbell': 'doorbell', 'wqe_fetch': 'wqe_fetch', 'translate': 'translate',
               'tx': 'pkt_tx', 'rx': 'pkt_rx', 'drop': 'pkt_drop', 'dma_read': 'dma_read',
               'dma_write': 'dma_write', 'ack': 'ack', 'nak': ('nak', 'rnr_nak'),
               'retransmit': 'retransmit', 'window': 'loss_window', 'cqe': 'cqe',
               'eqe': 'eqe', 'irq': 'interrupt', 'qp_state': 'qp_state', 'admin': 'admin_cmd'}
LINE = re.compile(r'^(?:\d+@\d+\.\d+:)?(qrnic_\w+) (.*)$')


def parse(text):
    """[(event, {field: value})] of the qrnic trace lines: 'k v' pairs, and
    t=N (values as ints; qrnic_event's type word under 'type')."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        name, toks = m.group(1), m.group(2).split()
        f = {}
        if name == 'qrnic_event':
            f['type'] = toks.pop(2)        # dev N <type> t=...
        i = 0
        while i < len(toks):
            if toks[i].startswith('t='):
                f['t'] = int(toks[i][2:])
                i += 1
                continue
            if i + 1 >= len(toks):
                break
            try:
                f[toks[i]] = int(toks[i + 1], 0)
            except ValueError:
                f[toks[i]] = toks[i + 1]
            i += 2
        out.append((name, f))
    return out


def test_guest_errors_as_typed_trace_points(qemu_binary, tmp_path):  # noqa: F811
    log = tmp_path / 'qemu.log'
    w = World.single(qemu_binary, 2, name='tp-err',
                     extra_args=['-trace', 'qrnic_err_*', '-D', str(log)])
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b)
        la = a.reg_mr(conn.pda, 4096)
        # doorbells: no such QP, then an SQ producer index 100000 ahead
        a.db_write(h.DB_SQ, 999 | (1 << 32))
        a.db_write(h.DB_SQ, conn.qa.qpn | (100000 << 32))
        w.settle()
        # an admin command with a bad field: CREATE_CQ of depth 2^16
        assert a.create_cq(23, check=False) is None   # log > QRNIC_MAX_QUEUE_LOG
        bad_cmd = a.last_cqe()
        assert bad_cmd['status'] == h.AQ['BAD_PARAM'] and bad_cmd['detail']
        # a send WQE with 31 SGEs (over QRNIC_MAX_SGE)
        a.patch_next_wqe('num_sge', 31)
        conn.qa.post_send('SEND', [(la, 0, 16)], wr_id=1)
        c = scenarios.one_cqe(conn.cqa)
        assert c['status_name'] == 'LOC_QP_OP_ERR' and c['vendor_err_name'] == 'BAD_WQE'
        assert w.alive()
    finally:
        w.close()
    lines = parse(log.read_text(errors='replace'))
    names = [n for n, _ in lines]
    # only err_ events: the pattern selects them by name
    assert names and all(n.startswith('qrnic_err_') for n in names), set(names)
    typed = [(n, f) for n, f in lines if n != 'qrnic_err_guest']
    assert typed == [
        ('qrnic_err_db_no_qp', {'dev': 0, 'off': h.DB_SQ, 'val': 999 | (1 << 32)}),
        ('qrnic_err_qp_db_index', {'dev': 0, 'qpn': conn.qa.qpn, 'rq': 0, 'pi': 100000,
                                   'ci': 0, 'depth': 1 << conn.qa.sq_log}),
        ('qrnic_err_admin_cmd', {'dev': 0, 'opcode': h.CMD['CREATE_CQ'],
                                 'cmd_id': bad_cmd['cmd_id'], 'status': h.AQ['BAD_PARAM'],
                                 'field': bad_cmd['detail']}),
        ('qrnic_err_bad_send_wqe', {'dev': 0, 'qpn': conn.qa.qpn, 'idx': 0,
                                    'opcode': h.WR['SEND'], 'flags': h.WQE_F_SIGNALED,
                                    'sge': 31, 'inline': 0}),
    ], typed
    # each still comes with its free-text line too
    assert names.count('qrnic_err_guest') == len(typed)


def test_device_events_follow_qrnic_event(qemu_binary, tmp_path):  # noqa: F811
    """Every qrnic_event record is followed by its typed device event: same
    device, same modelled time, same values."""
    log = tmp_path / 'qemu.log'
    evs = sorted({n for v in EVENT_TYPED.values() for n in ((v,) if isinstance(v, str) else v)})
    args = ['-trace', 'qrnic_event']
    for n in evs:
        args += ['-trace', f'qrnic_{n}']
    w = World.single(qemu_binary, 2, name='tp-ev', extra_args=args + ['-D', str(log)])
    try:
        a, b = w.devs
        scenarios.healthy(w, a, b)
        assert w.alive()
    finally:
        w.close()
    lines = parse(log.read_text(errors='replace'))
    seen = set()
    n_events = 0
    for i, (name, f) in enumerate(lines):
        if name != 'qrnic_event':
            continue
        n_events += 1
        want = EVENT_TYPED[f['type']]
        tname, tf = lines[i + 1]
        assert tname in ([f'qrnic_{want}'] if isinstance(want, str)
                         else [f'qrnic_{x}' for x in want]), (f, lines[i + 1])
        assert tf['dev'] == f['dev'] and tf['t'] == f['t'], (f, tf)
        seen.add(tname)
        if f['type'] == 'cqe':
            assert (tf['cqn'], tf['qpn'], tf['status'], tf['wr_id']) == \
                (f['a'], f['qpn'], f['b'], f['addr'])
        elif f['type'] == 'doorbell':
            assert (tf['queue'], tf['idx']) == (f['a'], f['b'])
            assert tf['qn'] == (f['qpn'] if f['a'] < 2 else f['addr'])
        elif f['type'] in ('tx', 'rx'):
            assert (tf['dqpn'], tf['psn'], tf['opcode'], tf['len']) == \
                (f['qpn'], f['psn'], f['a'], f['b'])
        elif f['type'] == 'admin':
            assert (tf['opcode'], tf['status']) == (f['a'], f['b'])
    typed = sum(1 for n, _ in lines if n != 'qrnic_event')
    assert n_events > 100 and typed == n_events
    for ev in ('qrnic_doorbell', 'qrnic_wqe_fetch', 'qrnic_pkt_tx', 'qrnic_pkt_rx',
               'qrnic_ack', 'qrnic_cqe', 'qrnic_eqe', 'qrnic_interrupt', 'qrnic_admin_cmd',
               'qrnic_dma_read', 'qrnic_dma_write', 'qrnic_qp_state'):
        assert ev in seen, f'{ev} missing: {sorted(seen)}'


def test_device_events_follow_trace_state_set_over_qmp(qemu_binary, tmp_path):  # noqa: F811
    """The model builds its trace records only while a trace event reads
    them (hw/qrnic.c, qrnic_trace_sync): none before qrnic_event or a typed
    device event is enabled over QMP, every one while it is, none after."""
    import random
    log = tmp_path / 'qemu.log'
    w = World.single(qemu_binary, 2, name='tp-qmp', extra_args=['-D', str(log)])

    def events():
        text = log.read_text(errors='replace') if log.exists() else ''
        return [(n, f) for n, f in parse(text) if n in ('qrnic_event', 'qrnic_pkt_tx')]
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024)
        la, rb = scenarios.mrs(conn)
        q = w.qemus[0]
        scenarios.rdma_write(conn, la, rb, random.Random(1), n=3000, sges=1)
        assert events() == []
        q.qmp('trace-event-set-state', name='qrnic_event', enable=True)
        scenarios.rdma_write(conn, la, rb, random.Random(2), n=3000, sges=1)
        on = events()
        tx = [f for n, f in on if n == 'qrnic_event' and f['type'] == 'tx']
        # the 3 WRITE packets from a, and b's ACK(s)
        assert sum(f['dev'] == 0 for f in tx) == 3 and sum(f['dev'] == 1 for f in tx) >= 1, tx
        q.qmp('trace-event-set-state', name='qrnic_event', enable=False)
        q.qmp('trace-event-set-state', name='qrnic_pkt_tx', enable=True)
        scenarios.rdma_write(conn, la, rb, random.Random(3), n=3000, sges=1)
        typed = [f for n, f in events()[len(on):] if n == 'qrnic_pkt_tx']
        assert len(typed) >= 3, events()[len(on):]
        q.qmp('trace-event-set-state', name='qrnic_pkt_tx', enable=False)
        n_before = len(events())
        scenarios.rdma_write(conn, la, rb, random.Random(4), n=3000, sges=1)
        assert len(events()) == n_before
        assert w.alive()
    finally:
        w.close()
