# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: the inline doorbell (hw/qrnic.c qrnic_db_write, docs/qemu.md
section 3): a doorbell that finds the device idle runs the device in the
thread that rang it (inline-doorbell=on); the default, off, leaves every
doorbell to the bottom half.  Both give the same bytes and completions; the QOM counter
inline-runs says which path ran."""
import pytest

import qrnic_harness as h
from qtest.fixtures import qemu_binary, shared_world  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

# devices 0 and 1 with inline-doorbell=on, 2 and 3 with the default (off), on one hub
qworld, world = shared_world('inline', ndev=4,
                             dev_opts=['inline-doorbell=on', 'inline-doorbell=on', '', ''])


def _write_and_send(a, b):
    """An RDMA WRITE and a SEND, each posted alone on an idle device, then a
    batch of 8 WRITEs under one doorbell; returns the sender's inline-runs
    before and after."""
    c = h.connect_rc(a, b, mtu=1024)
    src, dst = a.reg_mr(c.pda, 65536), b.reg_mr(c.pdb, 65536)
    data = bytes((i * 7 + 3) & 0xff for i in range(8192))
    src.write(0, data)
    n0 = a.qom_get('inline-runs')
    c.qa.post_send('RDMA_WRITE', [(src, 0, 3000)], remote=(dst, 100))
    assert [e['status_name'] for e in c.cqa.wait(1)] == ['SUCCESS']
    c.qb.post_recv([(dst, 8192, 4096)])
    c.qa.post_send('SEND', [(src, 3000, 2000)])
    assert [e['status_name'] for e in c.cqa.wait(1)] == ['SUCCESS']
    r = c.cqb.wait(1)
    assert r[0]['status_name'] == 'SUCCESS' and r[0]['byte_len'] == 2000
    for i in range(8):
        c.qa.post_send('RDMA_WRITE', [(src, i * 1024, 1024)], remote=(dst, 16384 + i * 1024),
                       ring=(i == 7))
    assert [e['status_name'] for e in c.cqa.wait(8)] == ['SUCCESS'] * 8
    assert dst.read(100, 3000) == data[:3000]
    assert dst.read(8192, 2000) == data[3000:5000]
    assert dst.read(16384, 8192) == data
    return n0, a.qom_get('inline-runs')


def test_inline_doorbell_on(world):
    """Three doorbells, each on an idle device: each ran the device inline."""
    a, b = world.devs[:2]
    assert a.qom_get('inline-doorbell') is True
    n0, n1 = _write_and_send(a, b)
    assert n1 - n0 == 3


def test_inline_doorbell_off(world):
    a, b = world.devs[2:]
    assert a.qom_get('inline-doorbell') is False
    n0, n1 = _write_and_send(a, b)
    assert n0 == n1 == 0


def _host_calls(d):
    """The QOM host-calls counters of a device, as a dict of ints."""
    return d.qom_counters('host-calls')


def test_host_calls_count_the_device_entries(world):
    """host-calls counts what entered the device from QEMU: doorbell writes,
    frames from the net layer, bottom halves, the kick timer (under qtest
    every schedule also arms it: the clock jumps), model timer arms.  On a
    hub every port hears every frame, so what b's net client received is
    what a sent, and the reverse; the sender counted its doorbells, the
    third port none; by register (db-sq, db-rq...) they add up to db: a rang
    three SQ doorbells, b one RQ doorbell and no SQ one."""
    a, b, c = world.devs[2], world.devs[3], world.devs[0]
    h0 = {d: _host_calls(d) for d in (a, b, c)}
    tx0 = {d: d.stat('tx_packets') for d in (a, b)}
    _write_and_send(a, b)
    h1 = {d: _host_calls(d) for d in (a, b, c)}
    d = {x: {k: h1[x][k] - h0[x][k] for k in h0[x]} for x in (a, b, c)}
    sent = {x: x.stat('tx_packets') - tx0[x] for x in (a, b)}
    assert sent[a] >= 13 and sent[b] >= 1       # 3 + 2 + 8 data frames, ACKs
    assert d[b]['rx'] == sent[a] and d[a]['rx'] == sent[b]
    assert d[c]['rx'] == sent[a] + sent[b]      # the hub's third port heard both
    assert d[a]['db'] >= 3 and d[b]['db'] >= 1  # a: three SQ doorbells (+ CQ); b: one RQ
    for x in (a, b):
        assert d[x]['sched'] >= 1 and d[x]['bh'] >= 1 and d[x]['kick'] >= 1
    assert d[c]['db'] == 0
    kinds = ('db-sq', 'db-rq', 'db-cq', 'db-srq', 'db-other')
    for x in (a, b, c):
        assert sum(d[x][k] for k in kinds) == d[x]['db'], d[x]
    assert d[a]['db-sq'] == 3 and d[b]['db-rq'] == 1 and d[b]['db-sq'] == 0, (d[a], d[b])
