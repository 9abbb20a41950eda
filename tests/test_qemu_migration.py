# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: migration and snapshots of -device qrnic (issue 20,
docs/qemu.md section 9).

A QEMU with two devices on a hub and an RC connection between them is
migrated (to a file, then into a second QEMU started with -incoming) while
a WRITE, a READ and a SEND are in flight under the teach timing profile;
the second QEMU finishes them: the completions, the bytes in guest memory
and the device timeline (-trace qrnic_event) are those of the same script
run without migration.  A corrupt device stream is refused with a reason
and the target QEMU survives it; -only-migratable accepts the device; the
VMState layout is the one docs/qemu.md documents."""
import json
import os
import random
import re
import subprocess
import time

import pytest

import qrnic_harness as h
from qtest import Qemu, scenarios
from qtest.driver import World, parse_counters
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wait_migration(q, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        st = q.qmp('query-migrate')
        if st.get('status') in ('completed', 'failed'):
            return st
        time.sleep(0.05)
    raise AssertionError(f'{q.name}: migration did not end: {st}')


def migrate(world, path, name='dst', extra_args=(), before_close=None):
    """Migrate world's QEMU through a file into a new QEMU and make the
    world's devices use it.  Returns (source status, the new QEMU).
    before_close() runs once the source has stopped, before it exits."""
    src = world.qemus[0]
    clock = src.clock()
    st = src.qmp('migrate', uri=f'file:{path}')
    st = wait_migration(src)
    assert st['status'] == 'completed', st
    dst = Qemu(src.binary, src.args + list(extra_args) + ['-incoming', 'defer'], name=name)
    # no self-announce: its RARP frames would reach the other device on the
    # hub (counted as eth_rx_drops) and make the counters differ
    dst.qmp('migrate-set-parameters', **{'announce-rounds': 0})
    dst.qmp('migrate-incoming', uri=f'file:{path}')
    st = wait_migration(dst)
    assert st['status'] == 'completed', (st, dst.stderr()[-2000:])
    # -accel qtest keeps its virtual clock outside the migrated state: go on
    # from where the source stopped (with a real accelerator the clock
    # travels with the VM)
    if dst.clock() < clock:
        dst.clock_set(clock)
    dst.mem = src.mem
    dst.mem.qemu = dst
    dst.mmio = src.mmio
    for d in world.devs:
        d.qemu = dst
    world.qemus[0] = dst
    if before_close:
        before_close()
    src.close()
    return st, dst


def _script(binary, tmp_path, tag, mig_at=None, do_migrate=True):
    """WRITE, READ and SEND in flight at once; mig_at ns after they were
    posted, migrate (do_migrate) or not (the same script otherwise).
    Returns (CQEs, memory, trace lines, stats)."""
    logs = [tmp_path / f'ev-{tag}-src.log']
    w = World.single(binary, 2, dev_opts='profile=teach', fixed_step_ns=2000,
                     name=f'mig-{tag}', extra_args=['-trace', f'qrnic_event,file={logs[0]}'])
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024, cq_log=6)
        la, rb = scenarios.mrs(conn, 32768)
        rng = random.Random(5)
        data = la.fill_random(rng, 0, 32768)
        rb.fill_random(rng, 0, 32768)
        conn.qb.post_recv([(rb, 0x6000, 4096)], wr_id=7)
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 12000)], remote=(rb, 0), wr_id=1)
        conn.qa.post_send('RDMA_READ', [(la, 0x4000, 6000)], remote=(rb, 0x3000), wr_id=2)
        conn.qa.post_send('SEND', [(la, 0x200, 3000)], wr_id=3)
        if mig_at is not None:
            w.step(mig_at)
            assert conn.cqa.peek() < 3, 'all done before the migration: move it earlier'
        if mig_at is not None and do_migrate:
            logs.append(tmp_path / f'ev-{tag}-dst.log')
            # the trace option of the target names its own file
            args = w.qemus[0].args
            i = args.index('-trace')
            w.qemus[0].args = args[:i] + args[i + 2:]
            # the source's trace ends with the migration: its exit (the netdev
            # going away: a PORT_ERR event) is not part of the VM's timeline
            src_lines = []
            migrate(w, str(tmp_path / f'mig-{tag}.bin'), name=f'mig-{tag}-dst',
                    extra_args=['-trace', f'qrnic_event,file={logs[1]}'],
                    before_close=lambda: src_lines.append(
                        len(logs[0].read_text().splitlines())))
        ca = conn.cqa.wait(3, timeout=60)
        cb = conn.cqb.wait(1, timeout=60)
        cqes = [(c['wr_id'], c['status_name'], c['byte_len']) for c in ca + cb]
        mem = (la.read(0, 32768), rb.read(0, 32768))
        stats = [d.qom_get('stats') for d in w.devs]
        # the timeline ends here: QEMU's exit (the netdev going away, a
        # PORT_ERR event) is not part of it
        final_n = len(logs[-1].read_text().splitlines())
        assert mem[1][:12000] == data[:12000]
        assert mem[0][0x4000:0x4000 + 6000] == mem[1][0x3000:0x3000 + 6000]
        assert mem[1][0x6000:0x6000 + 3000] == data[0x200:0x200 + 3000]
    finally:
        w.close()
    lines = []
    for i, lg in enumerate(logs):
        text = lg.read_text().splitlines()
        text = text[:src_lines[0] if i < len(logs) - 1 else final_n]
        lines += [ln for ln in text if ln.startswith('qrnic_event ')]
    return cqes, mem, lines, stats


def test_migration_with_operations_in_flight_changes_nothing(qemu_binary, tmp_path):  # noqa: F811
    cq, mem, ev, _ = _script(qemu_binary, tmp_path, 'plain')
    assert cq == [(1, 'SUCCESS', 0), (2, 'SUCCESS', 6000), (3, 'SUCCESS', 0),
                   (7, 'SUCCESS', 3000)], cq0
    times = [int(re.search(r' t=(\d+) ', ln).group(1)) for ln in ev]
    span = max(times) - min(times)
    assert span > 100_000, span
    for frac in (0.45,):
        at = int(span * frac)
        cq0, mem0, ev0, st0 = _script(qemu_binary, tmp_path, f'p{frac}', mig_at=at,
                                      do_migrate=False)
        assert cq0 == cq and mem0 == mem
        cq1, mem1, ev1, st1 = _script(qemu_binary, tmp_path, f'm{frac}',
                                      mig_at=at)
        assert cq1 == cq0
        assert mem1 == mem0
        for i in range(2):
            diff = {k: (st0[i][k], st1[i].get(k)) for k in st0[i] if st0[i][k] != st1[i].get(k)}
            assert not diff, f'device {i} counters differ (without, with migration): {diff}'
        # each device's own timeline: the two devices' lines interleave in
        # the order QEMU's main loop ran them, which a restart may change
        for dev in ('dev 0 ', 'dev 1 '):
            e0 = [ln for ln in ev0 if dev in ln]
            e1 = [ln for ln in ev1 if dev in ln]
            assert len(e0) > 50
            if e1 != e0:
                first = next((i for i, (x, y) in enumerate(zip(e0, e1)) if x != y),
                             min(len(e0), len(e1)))
                pytest.fail(f'{dev}timelines differ at event {first} of {len(e0)}:\n'
                            f'  {e0[first:first + 1]}\n  {e1[first:first + 1]}')


def _stream_offset(blob):
    i = blob.find(b'QRNS\x01\x00\x00\x00')
    assert i > 8, 'no device stream in the migration file'
    return i


def test_a_corrupt_device_stream_is_refused_and_the_target_survives(qemu_binary, tmp_path):  # noqa: F811,E501
    w = World.single(qemu_binary, 2)
    try:
        conn = h.connect_rc(*w.devs, mtu=1024)
        la, rb = scenarios.mrs(conn)
        scenarios.rdma_write(conn, la, rb, random.Random(1), n=3000)
        path = tmp_path / 'good.bin'
        src = w.qemus[0]
        src.qmp('migrate', uri=f'file:{path}')
        assert wait_migration(src)['status'] == 'completed'
        args = src.args
    finally:
        w.close()
    good = path.read_bytes()
    off = _stream_offset(good)
    blob = bytearray(good)
    # a device stream whose magic is wrong, one cut short (the be64 length
    # before it still claims the full size: the migration file ends first),
    # and one with a byte of the QPS. section flipped
    bad = {}
    b1 = bytearray(blob)
    b1[off:off + 4] = b'XXXX'
    bad['magic'] = (bytes(b1), 'not a qrnic device stream')
    q = blob.find(b'QPS.', off)
    b2 = bytearray(blob)
    b2[q + 16:q + 20] = (0xfffffff).to_bytes(4, 'little')     # the first QPN
    bad['qpn'] = (bytes(b2), 'QP')
    b3 = bytearray(blob)
    b3[off - 8:off] = (1 << 40).to_bytes(8, 'big')
    bad['length'] = (bytes(b3), 'refused')
    for name, (data, why) in bad.items():
        p = tmp_path / f'bad-{name}.bin'
        p.write_bytes(data)
        dst = Qemu(qemu_binary, args + ['-incoming', 'defer'], name=f'bad-{name}')
        try:
            dst.qmp('migrate-incoming', uri=f'file:{p}', **{'exit-on-error': False})
            st = wait_migration(dst)
            assert st['status'] == 'failed', st
            assert dst.alive(), dst.stderr()[-2000:]
            log = dst.stderr()
            assert 'qrnic: migration' in log and why in log, log[-2000:]
            dst.qmp('query-status')     # still answers
        finally:
            dst.close()


def test_only_migratable_accepts_the_device(qemu_binary, tmp_path):  # noqa: F811
    # QEMU refuses to start when a device would block migration
    q = Qemu(qemu_binary, ['-only-migratable', '-device', 'qrnic'], name='onlymig')
    try:
        assert q.qmp('query-migrate').get('blocked-reasons') is None
        q.qmp('migrate', uri=f'file:{tmp_path / "m.bin"}')
        assert wait_migration(q)['status'] == 'completed'
    finally:
        q.close()


def test_vmstate_layout_is_the_documented_one(qemu_binary, tmp_path):  # noqa: F811
    """As scripts/vmstate-static-checker.py reads it: -dump-vmstate's entry
    for qrnic, against the table in docs/qemu.md section 9."""
    out = tmp_path / 'vmstate.json'
    r = subprocess.run([qemu_binary, '-M', 'q35', '-accel', 'qtest', '-display', 'none',
                        '-dump-vmstate', str(out)], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    vm = json.loads(out.read_text())['qrnic']
    # a field without a description of its own is the model's stream
    got = [(f['field'], f.get('Description', {}).get('name', 'qrnic-model-stream'))
           for f in vm['Description']['Fields']]
    doc = open(os.path.join(REPO, 'docs', 'qemu.md')).read()
    m = re.search(r'VMState `qrnic` version (\d+)', doc)
    assert m and int(m.group(1)) == vm['version_id'], 'docs/qemu.md: the VMState version'
    table = doc[m.end():].split('\n\n')[1]
    rows = re.findall(r'^\| `([a-z_]+)` \| `([A-Za-z0-9:_-]+)` \|', table, re.M)
    assert rows, 'docs/qemu.md: no VMState field table'
    assert rows == got, got


def test_migrating_a_device_in_every_kind_of_state(qemu_binary, tmp_path):  # noqa: F811
    """A QP in ERR, an armed CQ, an async event not yet read by the driver,
    a fault rule half way through its count: after the migration each is
    as it was and behaves as it would have."""
    w = World.single(qemu_binary, 2)
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024, timeout=8)
        bad = h.connect_rc(a, b, mtu=1024)
        la, rb = scenarios.mrs(conn)
        rng = random.Random(3)
        # a rule that dropped one WRITE packet of three so far (every second
        # one: the first WRITE passes, the second is dropped once and resent)
        rid, = a.fault('drop dir=tx op=write nth=2 count=3')
        for _ in range(2):
            scenarios.rdma_write(conn, la, rb, rng, n=800, sges=1)
        before = {r['id']: r for r in a.qom_get('fault-rules')}[rid]
        assert before['fired'] == 1 and not before['done']
        # a QP in ERR with a WQE flushed
        bad.qa.modify('ERR')
        bad.qa.post_send('SEND', [(la, 0, 64)], wr_id=0x77)
        flushed = bad.cqa.wait(1)
        assert flushed[0]['status_name'] == 'WR_FLUSH_ERR'
        # an armed CQ with nothing in it, and a PORT_ERR event the driver
        # has not read
        conn.cqb.arm()
        a.qemu.qmp('set_link', name='qrnic0', up=False)
        w.settle()
        stats0 = [d.qom_get('stats') for d in w.devs]

        migrate(w, str(tmp_path / 'states.bin'))

        assert [d.qom_get('stats') for d in w.devs] == stats0
        # the event is still there to be read
        ev = a.async_eq.poll()
        assert [e['event'] for e in ev] == ['PORT_ERR'], ev
        a.qemu.qmp('set_link', name='qrnic0', up=True)
        w.settle()
        assert [e['event'] for e in a.async_eq.poll()] == ['PORT_ACTIVE']
        # the QP is still in ERR: a new WQE is flushed
        assert bad.qa.query()['state_name'] == 'ERR'
        bad.qa.post_send('SEND', [(la, 0, 64)], wr_id=0x78)
        c = bad.cqa.wait(1)
        assert (c[0]['wr_id'], c[0]['status_name']) == (0x78, 'WR_FLUSH_ERR')
        # the rule goes on from its count: two more drops, then done
        after = {r['id']: r for r in a.qom_get('fault-rules')}[rid]
        assert (after['matched'], after['fired']) == (before['matched'], before['fired'])
        # the armed CQ raises its event (and its MSI-X) on the next CQE
        b.irq_fired(b.comp_eq.vector)
        conn.qb.post_recv([(rb, 0, 4096)], wr_id=5)
        for _ in range(2):
            scenarios.rdma_write(conn, la, rb, rng, n=800, sges=1)
        conn.qa.post_send('SEND', [(la, 0, 100)], wr_id=6)
        assert scenarios.one_cqe(conn.cqa)['status_name'] == 'SUCCESS'
        got = conn.cqb.wait(1)
        assert got[0]['wr_id'] == 5
        assert [e['type_name'] for e in b.comp_eq.poll()] == ['COMPLETION']
        assert b.irq_fired(b.comp_eq.vector)
        rule = {r['id']: r for r in a.qom_get('fault-rules')}[rid]
        assert rule['fired'] == 3 and rule['done'], rule
        assert a.qom_get('stats')['retransmit_timeouts'] == 3
    finally:
        w.close()


def test_migration_with_payloads_by_reference_in_flight(qemu_binary, tmp_path):  # noqa: F811
    """Under the teach profile frames wait (in the sender's timed transmit,
    in the receiver's queue) holding a mapping of the sender's guest memory
    for their payload (docs/qemu.md section 5): some are held when the
    migration starts; saving copies each payload into its frame and
    releases the mapping, so none is left once the source has stopped; the
    target finishes the WRITE and READ with the right bytes."""
    w = World.single(qemu_binary, 2, dev_opts='profile=teach', fixed_step_ns=2000,
                     name='mig-byref')
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024, cq_log=6)
        la, rb = scenarios.mrs(conn, 32768)
        rng = random.Random(9)
        data = la.fill_random(rng, 0, 32768)
        src = rb.fill_random(rng, 0, 32768)
        m0 = a.qom_counters('dma-maps')
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 12000), (la, 0x5001, 9000)], remote=(rb, 0),
                          wr_id=1)
        conn.qa.post_send('RDMA_READ', [(la, 0x6000, 8000)], remote=(rb, 0x6001), wr_id=2)
        held = []
        for _ in range(400):
            w.step(2000)
            m = a.qom_counters('dma-maps')
            if m['map'] > m['unmap']:
                held.append(m)
                break
        assert held, f'no mapping held while frames were in flight: {a.qom_counters("dma-maps")}, {m0}'
        assert conn.cqa.peek() < 2, 'all done before the migration'
        left, srcq = [], w.qemus[0]
        migrate(w, str(tmp_path / 'mig-byref.bin'), name='mig-byref-dst',
                before_close=lambda: left.append(parse_counters(
                    srcq.qmp('qom-get', path=a.qom_path, property='dma-maps'))))
        assert left[0]['map'] == left[0]['unmap'], (held, left)
        cqes = conn.cqa.wait(2, timeout=60)
        assert [(c['wr_id'], c['status_name']) for c in cqes] == [(1, 'SUCCESS'), (2, 'SUCCESS')]
        assert rb.read(0, 21000) == data[:12000] + data[0x5001:0x5001 + 9000]
        assert la.read(0x6000, 8000) == src[0x6001:0x6001 + 8000]
        w.settle()
        m = a.qom_counters('dma-maps')
        assert m['map'] == m['unmap'], m
    finally:
        w.close()
