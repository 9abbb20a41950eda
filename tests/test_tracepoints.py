# SPDX-License-Identifier: GPL-2.0-or-later
"""Typed trace points (model/qrnic_tracepoints.h): the list, QEMU's
hw/trace-events and docs/qemu.md generated from it and current, every guest
error reported with a typed point, and the points the model emits, with
their fields, for a few guest errors (through the harness, which keeps the
err_/ub_ points per device).  The qemu-tier twin is test_qemu_tracepoints.py."""
import os
import re
import subprocess
import sys

import pytest

import qrnic_harness as q

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = {'err': 'err_', 'ub': 'ub_'}


@pytest.fixture(scope='module')
def points():
    return q.tracepoints()


def source(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def c_sources():
    for d in ('model', 'firmware'):
        for name in sorted(os.listdir(os.path.join(ROOT, d))):
            if name.endswith('.c'):
                yield f'{d}/{name}', source(d, name)


def test_generated_files_are_current():
    """hw/trace-events and docs/qemu.md hold what scripts/qrnic-trace-events
    makes of the built list (run it with --write after changing the list)."""
    env = dict(os.environ, QRNIC_BUILD_DIR=q.build_dir())
    r = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'qrnic-trace-events'),
                        '--check'], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr


def test_list_and_trace_events_match(points):
    """Parsed back from hw/trace-events: one line per point, same name, the
    device first, then the same fields in the same order and types."""
    text = source('hw', 'trace-events')
    events = {}
    for line in text.splitlines():
        m = re.match(r'^(qrnic_\w+)\((.*?)\)\s*(".*)$', line)
        if m:
            assert m.group(1) not in events, f'{m.group(1)} twice in hw/trace-events'
            events[m.group(1)] = ([a.strip() for a in m.group(2).split(',')], m.group(3))
    typed = {'qrnic_' + p['name'] for p in points}
    block = text[text.index('# BEGIN qrnic_tracepoints'):text.index('# END qrnic_tracepoints')]
    in_block = set(re.findall(r'^(qrnic_\w+)\(', block, re.M))
    assert in_block == typed
    for p in points:
        args, fmt = events['qrnic_' + p['name']]
        assert args == ['unsigned dev'] + [f'{t} {n}' for t, n in p['fields']], p['name']
        assert fmt.startswith('"dev %u ')
        # one conversion per field, after dev
        convs = re.findall(r'%[-#0-9.]*[a-z]|%"PRI\w+', fmt)
        assert len(convs) == 1 + len(p['fields']), (p['name'], convs)


def test_names_and_categories(points):
    names = [p['name'] for p in points]
    assert len(names) == len(set(names))
    for p in points:
        assert re.fullmatch(r'[a-z][a-z0-9_]*', p['name'])
        if p['category'] in PREFIX:
            assert p['name'].startswith(PREFIX[p['category']]), p['name']
        else:
            assert not p['name'].startswith(('err_', 'ub_')), p['name']
        assert 1 <= len(p['fields']) <= q.TP_MAX_FIELDS
        assert all(t in ('uint32_t', 'uint64_t') for t, _ in p['fields']), p
        assert p['doc']
    cats = [p['category'] for p in points]
    assert cats.count('err') >= 40 and cats.count('ub') >= 2 and cats.count('ev') >= 17
    # QEMU's own qrnic events (hw/qrnic.c) keep their names
    hand = set(re.findall(r'^(qrnic_\w+)\(', source('hw', 'trace-events').split(
        '# BEGIN qrnic_tracepoints')[0], re.M))
    assert not hand & {'qrnic_' + n for n in names}


def test_every_guest_error_is_typed(points):
    """No free-text-only guest error is left in the model or the firmware:
    each goes through qrnic_guest_err (typed point + log line); and every
    err_/ub_ point is emitted somewhere, every device event by
    qrnic_tp_from_trace."""
    bare = []
    used = set()
    for path, text in c_sources():
        for m in re.finditer(r'\bqrnic_guest_error\(', text):
            line = text[:m.start()].count('\n') + 1
            if not (path == 'model/device.c' and text[m.start() - 5:m.start()] == 'void '):
                bare.append(f'{path}:{line}')
        used |= set(re.findall(r'\bqrnic_guest_err\(\w+,\s*(\w+)', text))
        used |= set(re.findall(r'\bdb_ignored\(\w+,\s*(\w+)', text))
        used |= set(re.findall(r'\bqrnic_tp_(\w+)\(', text))
    assert not bare, f'qrnic_guest_error() without a typed point: {bare}'
    missing = [p['name'] for p in points if p['name'] not in used]
    assert not missing, f'trace points never emitted: {missing}'
    conv = source('model', 'tracepoints.c')
    for p in points:
        if p['category'] == 'ev':
            assert f'qrnic_tp_{p["name"]}(d, t' in conv, p['name']
    # every trace record type has its case there
    types = re.findall(r'^\s*(QRNIC_TR_\w+),', source('model', 'qrnic_model.h'), re.M)
    assert types and all(f'case {t}:' in conv for t in types if t != 'QRNIC_TR_COUNT')


# ---- what the model emits ---------------------------------------------------------------
def last(dev, name):
    got = [(n, f, t) for n, f, t in dev.tracepoints() if n == name]
    assert got, f'no {name} in {dev.tracepoints()}'
    return got[-1]


def test_bad_send_wqe(world):
    a, b = world.devs
    conn = q.connect_rc(a, b)
    la = a.reg_mr(conn.pda, 4096)
    a.clear_logs()
    a.patch_next_wqe('num_sge', 31)
    conn.qa.post_send('SEND', [(la, 0, 16)], wr_id=1)
    assert world.run() == 'idle'
    _, f, text = last(a, 'err_bad_send_wqe')
    assert f == {'qpn': conn.qa.qpn, 'idx': 0, 'opcode': q.WR['SEND'],
                 'flags': q.WQE_F_SIGNALED, 'sge': 31, 'inline_len': 0}
    assert text == f'qpn {conn.qa.qpn} idx 0 opcode 2 flags 0x1 sge 31 inline 0'
    # the free-text log line stays as it was
    assert any('bad send WQE 0 (opcode 2 flags 0x1 sge 31 inline 0)' in m for _, m in a.logs())
    assert a.tracepoint_count() == a.guest_errors == 1


def test_send_lkey(world):
    a, b = world.devs
    conn = q.connect_rc(a, b)
    la = a.reg_mr(conn.pda, 4096)
    a.clear_logs()
    conn.qa.post_send('SEND', [(la, 4000, 200)], wr_id=1)     # beyond the MR
    assert world.run() == 'idle'
    assert conn.cqa.poll()[0]['status_name'] == 'LOC_PROT_ERR'
    _, f, _ = last(a, 'err_send_lkey')
    assert f['qpn'] == conn.qa.qpn and f['idx'] == 0 and f['verr'] != 0
    assert a.guest_errors == 0          # a typed point only, no log line


def test_bad_admin_field(world):
    d = world.devs[0]
    d.clear_logs()
    assert d.create_cq(23, check=False) is None   # log > QRNIC_MAX_QUEUE_LOG
    cqe = d.last_cqe()
    assert cqe['status'] == q.AQ['BAD_PARAM']
    _, f, _ = last(d, 'err_admin_cmd')
    assert f == {'opcode': q.CMD['CREATE_CQ'], 'cmd_id': cqe['cmd_id'],
                 'status': q.AQ['BAD_PARAM'], 'field': cqe['detail']}
    assert f['field'] != 0


def test_doorbells(world):
    a, b = world.devs
    conn = q.connect_rc(a, b)
    a.clear_logs()
    a.db_write(q.DB_SQ, 999 | (1 << 32))                       # no such QP
    a.db_write(q.DB_SQ, conn.qa.qpn | (100000 << 32))          # SQ index jump
    a.db_write(q.DB_CQ, conn.cqa.cqn | (5000 << 32))           # CQ index jump
    a.db_write(q.DB_SQ, conn.qa.qpn | (1 << 32), 4)            # not 64-bit
    world.run()
    got = [(n, f) for n, f, _ in a.tracepoints()]
    assert got[0] == ('err_db_no_qp', {'off': q.DB_SQ, 'val': 999 | (1 << 32)})
    assert got[1] == ('err_qp_db_index', {'qpn': conn.qa.qpn, 'rq': 0, 'pi': 100000,
                                          'ci': 0, 'depth': 1 << conn.qa.sq_log})
    assert got[2][0] == 'err_cq_db_index' and got[2][1]['cqn'] == conn.cqa.cqn
    assert got[2][1]['ci'] == 5000
    assert got[3] == ('err_db_size', {'off': q.DB_SQ, 'val': conn.qa.qpn | (1 << 32)})
    assert len(got) == a.guest_errors == 4


def test_registers_and_fatal_writes(world):
    d = world.devs[0]
    d.clear_logs()
    d.reg_read(0x7c)                                # undefined register
    d.reg_write('VERSION', 1)                       # read-only register
    d.reg_read(q.REG['CTRL'], 2)                    # wrong size
    got = [(n, f) for n, f, _ in d.tracepoints()]
    assert got == [('err_mmio_read_undefined', {'off': 0x7c}),
                   ('err_mmio_write_ro', {'off': q.REG['VERSION'], 'value': 1}),
                   ('err_mmio_read_size', {'off': q.REG['CTRL'], 'size': 2})]
