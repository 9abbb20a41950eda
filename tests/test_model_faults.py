# SPDX-License-Identifier: GPL-2.0-or-later
"""Fault injection inside the device model (model/fault.c, docs/faults.md).

Unlike the harness's wire rules (World.rule), these faults live in the
model: rules are loaded per device as text and act at the model's choke
points: frames leaving (tx) or entering (rx) the device, host memory
accesses, CQE/EQE writes, admin commands, and timed events."""
import random
import zlib

import pytest

import qrnic_harness as q

MTU = 1024


def pair(world, **kw):
    kw.setdefault('mtu', MTU)
    return q.connect_rc(world.devs[0], world.devs[1], **kw)


def statuses(cq):
    return [c['status_name'] for c in cq.poll()]


def roce_from(world, src, **match):
    out = []
    for f in world.frames(roce_only=True):
        if f.src != src:
            continue
        if all(getattr(f, k) == v if not isinstance(v, (set, tuple)) else getattr(f, k) in v
               for k, v in match.items()):
            out.append(f)
    return out


def async_events(dev):
    return [(e['event'], e['handle'], e['data']) for e in dev.async_eq.poll() if e['type'] == 1]


# ---- plan language and control ------------------------------------------------------
GOOD = """# a plan: comments, blank lines, ';' between rules
drop dir=tx qp=5 op=read-resp nth=3 count=1

corrupt dir=rx part=icrc qp=5 prob=1% seed=7 ; dup dir=tx copies=2 op=atomic
reorder dir=tx hold=2 release=3 timeout=50us
delay dir=rx ns=200us jitter=10us prob=0.05
nak dir=rx type=rnr timer=3 count=2
link-down after=5ms for=200ms
link-up at=2s
dma-fail dir=read nth=10 count=1
dma-fail dir=write range=0x1000-0x2000
dma-fail range=0x100000000+4096 prob=50000ppm
cqe-error cq=3 status=REM_ACCESS_ERR
cqe-error qp=7 wc=recv status=12 qp-state=keep
qp-error qp=7 event=qp-req-err after=1.5ms
cq-overrun cq=3
eq-overflow eq=async
admin-fail op=CREATE_QP status=NO_RESOURCES count=1
admin-timeout op=any
fatal after=10ms
event port-down
event qp-fatal qp=9 after=1us
"""


def test_plan_loads_every_kind(world):
    a = world.devs[0]
    assert q.check_fault_plan(GOOD) == 21
    ids = a.fault_plan(GOOD)
    assert ids == list(range(21))
    assert a.fault_ids() == ids
    listing = a.fault_list().splitlines()
    assert len(listing) == 21
    assert listing[0] == '0 matched=0 fired=0 drop dir=tx qp=5 op=read-resp nth=3 count=1'
    assert a.fault_stats(2)['text'] == 'dup dir=tx copies=2 op=atomic'
    a.fault_del(3)
    assert 3 not in a.fault_ids() and len(a.fault_ids()) == 20
    with pytest.raises(q.HarnessError):
        a.fault_del(3)
    a.fault_clear()
    assert a.fault_ids() == []
    # ids are not reused
    assert a.fault("drop count=1") == 21


BAD_LINES = [
    ('dorp dir=tx', "unknown fault 'dorp'"),
    ('drop dir=sideways', "bad value 'sideways' for dir"),
    ('drop qp=5 qp=6', 'qp= given twice'),
    ('drop frobnicate=1', "unknown key 'frobnicate'"),
    ('drop copies=2', "no key 'copies'"),
    ('drop prob=1.5', "bad value '1.5' for prob"),
    ('drop prob=5', "bad value '5' for prob"),
    ('drop op=read-rsp', "unknown op 'read-rsp'"),
    ('drop psn=0x1000000', "bad value '0x1000000' for psn"),
    ('drop nth=0', "bad value '0' for nth"),
    ('drop at=1ms after=2ms', 'not both'),
    ('drop dir=tx oops', "expected key=value, got 'oops'"),
    ('drop qp=', 'empty value for qp'),
    ('delay dir=tx', 'ns= is required'),
    ('delay ns=5parsecs', "bad value '5parsecs' for ns"),
    ('reorder hold=0', "bad value '0' for hold"),
    ('corrupt part=trailer', "bad value 'trailer' for part"),
    ('corrupt part=icrc off=4', 'off= must be 0..3'),
    ('nak', 'type= is required'),
    ('nak type=seq timer=3', 'timer= goes with type=rnr'),
    ('dma-fail dir=tx', "bad value 'tx' for dir"),
    ('dma-fail range=0x2000-0x1000', "bad value '0x2000-0x1000' for range"),
    ('cqe-error status=SUCCESS', "bad value 'SUCCESS' for status"),
    ('cqe-error status=NO_RESOURCES', "bad value 'NO_RESOURCES' for status"),
    ('admin-fail status=REM_ACCESS_ERR', "bad value 'REM_ACCESS_ERR' for status"),
    ('admin-fail op=MAKE_COFFEE', "bad value 'MAKE_COFFEE' for op"),
    ('qp-error', 'qp= is required'),
    ('qp-error qp=3 count=2', "no key 'count'"),
    ('cq-overrun', 'cq= is required'),
    ('eq-overflow eq=first', "bad value 'first' for eq"),
    ('event', 'type= is required'),
    ('event qp-fatal', 'needs qp='),
    ('event port-sideways', "bad value 'port-sideways' for type"),
    ('link-down for=0', "bad value '0' for for"),
    ('link-up for=1ms', "no key 'for'"),
]


@pytest.mark.parametrize('bad,msg', BAD_LINES, ids=[b for b, _ in BAD_LINES])
def test_bad_plan_line_reports_line_and_changes_nothing(world, bad, msg):
    a, b = world.devs
    first = a.fault('drop count=1 psn=0xffffff')  # an existing rule stays as it is
    plan = '# header\n\ndrop dir=tx prob=0.5\ndup dir=rx\n' + bad + '\ndrop dir=rx\n'
    with pytest.raises(q.FaultError) as ei:
        a.fault_plan(plan)
    assert str(ei.value).startswith('line 5: '), str(ei.value)
    assert msg in str(ei.value)
    with pytest.raises(q.FaultError) as ei:
        q.check_fault_plan(plan)
    assert str(ei.value).startswith('line 5: ')
    assert a.fault_ids() == [first]
    with pytest.raises(q.FaultError) as ei:
        a.fault(bad)
    assert msg in str(ei.value) and 'line' not in str(ei.value)
    assert a.fault_ids() == [first]
    # and traffic is untouched
    conn = pair(world)
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    src = la.fill_random(random.Random(1))
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 4096)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS']
    assert rb.read() == src
    assert a.stat('faults_injected') == 0 and a.fault_totals()['injected'] == 0


def test_add_rejects_several_rules(world):
    with pytest.raises(q.FaultError, match='one rule expected'):
        world.devs[0].fault('drop; dup')
    assert world.devs[0].fault('drop count=1   # trailing comment') == 0


def test_value_forms():
    plan = '\n'.join([
        'drop prob=0.05', 'drop prob=5%', 'drop prob=50000ppm', 'drop prob=1', 'drop prob=0',
        'delay ns=1.5ms', 'delay ns=0x100', 'delay ns=3s', 'delay ns=250', 'delay ns=7us',
        'drop op=RC_READ_RESP_LAST,atomic-ack,0x11', 'drop psn=0xfffffe-0x1',
        'dma-fail range=4096+4096', 'admin-fail op=0x0b status=4', 'admin-fail op=cmd_create_qp',
        'cqe-error status=wc_rem_op_err', 'DROP DIR=TX', 'event port_up', 'event cq-err cq=2',
        'drop count=inf', 'drop count=unlimited',
    ])
    assert q.check_fault_plan(plan) == 21


# ---- wire faults ---------------------------------------------------------------------
def test_drop_third_read_response(world):
    """Recipe: make the 3rd READ response disappear."""
    rng = random.Random(3)
    conn = pair(world)
    b = world.devs[1]
    n = 8 * MTU
    la, rb = conn.a.dev.reg_mr(conn.pda, n), conn.b.dev.reg_mr(conn.pdb, n)
    dst = rb.fill_random(rng)
    rid = b.fault(f'drop dir=tx qp={conn.qa.qpn} op=read-resp nth=3 count=1')
    conn.qa.post_send('RDMA_READ', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS']
    assert la.read() == dst
    st = b.fault_stats(rid)
    assert st['fired'] == 1 and st['done'] and st['matched'] >= 8
    # READ responses carry the request's PSNs
    resp = [f.psn - conn.psn_a for f in roce_from(world, 1, opcode={0x0d, 0x0e, 0x0f, 0x10})]
    # the 3rd response (PSN offset 2) never left the device the first time
    assert resp[:7] == [0, 1, 3, 4, 5, 6, 7]
    assert 2 in resp[7:]
    assert b.stat('faults_injected') == 1


def test_drop_rx_after_the_wire(world):
    rng = random.Random(4)
    conn = pair(world)
    b = world.devs[1]
    n = 6 * MTU
    la, rb = conn.a.dev.reg_mr(conn.pda, n), conn.b.dev.reg_mr(conn.pdb, n)
    src = la.fill_random(rng)
    psn = conn.psn_a + 2
    rid = b.fault(f'drop dir=rx qp={conn.qb.qpn} psn={psn} count=1')
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src
    assert b.fault_fired(rid) == 1
    # dropped inside the receiver: the wire shows it sent twice
    assert len(roce_from(world, 0, psn=psn)) == 2
    assert b.stat('seq_naks_sent') == 1


@pytest.mark.parametrize('where', ['tx', 'rx'])
def test_duplicated_atomic_runs_once(world, where):
    conn = pair(world)
    a, b = world.devs
    la, rb = conn.a.dev.reg_mr(conn.pda, 64), conn.b.dev.reg_mr(conn.pdb, 64)
    rb.write(8, (500).to_bytes(8, 'little'))
    dev = a if where == 'tx' else b
    rid = dev.fault(f'dup dir={where} op=atomic copies=3 count=1')
    conn.qa.post_send('FETCH_AND_ADD', [(la, 0, 8)], remote=(rb, 8), add=7)
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS']
    assert int.from_bytes(rb.read(8, 8), 'little') == 507
    assert int.from_bytes(la.read(0, 8), 'little') == 500
    assert dev.fault_fired(rid) == 1
    assert b.stat('atomics_executed') == 1
    assert b.stat('duplicate_requests') == 3
    assert len(roce_from(world, 0, opname='RC_FETCH_ADD')) == (4 if where == 'tx' else 1)


def test_reorder_tx_burst_order_on_the_wire(world):
    rng = random.Random(5)
    conn = pair(world)
    a = world.devs[0]
    n = 8 * MTU
    la, rb = conn.a.dev.reg_mr(conn.pda, n), conn.b.dev.reg_mr(conn.pdb, n)
    src = la.fill_random(rng)
    p = conn.psn_a
    rid = a.fault(f'reorder dir=tx op=write psn={p + 2}-{p + 3} hold=2 release=3 count=1')
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src
    assert a.fault_fired(rid) == 1
    order = [f.psn - p for f in roce_from(world, 0)][:8]
    assert order == [0, 1, 4, 5, 6, 2, 3, 7]
    assert world.devs[1].stat('seq_naks_sent') >= 1


def test_reorder_rx_released_by_timeout(world):
    rng = random.Random(6)
    conn = pair(world)
    b = world.devs[1]
    la, rb = conn.a.dev.reg_mr(conn.pda, 64), conn.b.dev.reg_mr(conn.pdb, 64)
    src = la.fill_random(rng)
    world.trace_enable()
    rid = b.fault('reorder dir=rx op=send hold=1 release=100 timeout=50us count=1')
    conn.qb.post_recv([(rb, 0, 64)], wr_id=1)
    t0 = world.now
    conn.qa.post_send('SEND', [(la, 0, 64)])
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src
    assert b.fault_fired(rid) == 1 and b.fault_totals()['held'] == 0
    rx = [e for e in world.trace() if e['dev'] == 1 and e['name'] == 'rx']
    assert rx and rx[0]['t_ns'] - t0 == 50_000


@pytest.mark.parametrize('where', ['tx', 'rx'])
def test_delay(world, where):
    rng = random.Random(7)
    conn = pair(world)
    a, b = world.devs
    n = 4 * MTU
    la, rb = conn.a.dev.reg_mr(conn.pda, n), conn.b.dev.reg_mr(conn.pdb, n)
    src = la.fill_random(rng)
    p = conn.psn_a + 1
    dev = a if where == 'tx' else b
    world.trace_enable()
    rid = dev.fault(f'delay dir={where} psn={p} ns=200us count=1')
    t0 = world.now
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src
    assert dev.fault_fired(rid) == 1 and dev.fault_totals()['held'] == 0
    rx = [e['t_ns'] - t0 for e in world.trace()
          if e['dev'] == 1 and e['name'] == 'rx' and e['psn'] == p]
    assert 200_000 in rx, rx
    if where == 'tx':
        late = [f.t - t0 for f in roce_from(world, 0, psn=p)]
        assert 200_000 in late


def test_delay_holds_bounded_frames(world):
    conn = pair(world)
    a, b = world.devs
    la, rb = conn.a.dev.reg_mr(conn.pda, 64), conn.b.dev.reg_mr(conn.pdb, 64)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0))
    assert world.run() == 'idle'
    frame = roce_from(world, 0, opname='RC_WRITE_ONLY')[0].data
    b.fault('delay dir=rx ns=1ms')
    for _ in range(1100):
        assert b.inject(frame) == 0
    tot = b.fault_totals()
    assert tot['held'] == 1024 and tot['held_overflow'] == 1100 - 1024
    assert world.run() == 'idle'
    assert b.fault_totals()['held'] == 0
    assert b.stat('duplicate_requests') == 1024


@pytest.mark.parametrize('part', ['payload', 'header', 'icrc'])
@pytest.mark.parametrize('where', ['tx', 'rx'])
def test_corrupt_caught_by_receiver(world, part, where):
    rng = random.Random(8)
    conn = pair(world)
    a, b = world.devs
    n = 4 * MTU
    la, rb = conn.a.dev.reg_mr(conn.pda, n), conn.b.dev.reg_mr(conn.pdb, n)
    src = la.fill_random(rng)
    dev = a if where == 'tx' else b
    rid = dev.fault(f'corrupt dir={where} part={part} qp={conn.qb.qpn} '
                    f'psn={conn.psn_a + 1} count=1 seed=9')
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src
    assert dev.fault_fired(rid) == 1
    assert b.stat('rx_drop_icrc') + b.stat('rx_drop_malformed') == 1
    if part != 'header':
        assert b.stat('rx_drop_icrc') == 1
    if where == 'tx':
        # the corrupted copy and the retransmission differ in exactly one bit
        f1, f2 = roce_from(world, 0, psn=conn.psn_a + 1)[:2]
        diff = [(i, x ^ y) for i, (x, y) in enumerate(zip(f1.data, f2.data)) if x != y]
        assert len(diff) == 1 and bin(diff[0][1]).count('1') == 1


def test_corrupt_chosen_byte(world):
    """Recipe: corrupt the ICRC on a QP, and a chosen payload byte."""
    rng = random.Random(10)
    conn = pair(world)
    a, b = world.devs
    n = 2 * MTU
    la, rb = conn.a.dev.reg_mr(conn.pda, n), conn.b.dev.reg_mr(conn.pdb, n)
    src = la.fill_random(rng)
    r1 = a.fault(f'corrupt dir=tx part=payload off=100 xor=0x5a qp={conn.qb.qpn} '
                 f'psn={conn.psn_a} count=1')
    r2 = a.fault(f'corrupt dir=tx part=icrc off=0 qp={conn.qb.qpn} psn={conn.psn_a + 1} count=1')
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src
    assert a.fault_fired(r1) == a.fault_fired(r2) == 1
    bad, good = roce_from(world, 0, psn=conn.psn_a)[:2]
    assert bad.payload[100] == good.payload[100] ^ 0x5a
    assert bad.payload[:100] == good.payload[:100] and bad.payload[101:] == good.payload[101:]
    bad, good = roce_from(world, 0, psn=conn.psn_a + 1)[:2]
    assert bad.icrc[0] == good.icrc[0] ^ 0xff and bad.icrc[1:] == good.icrc[1:]
    assert b.stat('rx_drop_icrc') == 2


# ---- link ------------------------------------------------------------------------------
def test_link_down_for_200ms(world):
    """Recipe: kill the link for 200 ms."""
    rng = random.Random(11)
    conn = pair(world, timeout=14, retry_cnt=7)
    a = world.devs[0]
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    src = la.fill_random(rng)
    world.trace_enable()
    t0 = world.now
    rid = a.fault('link-down after=1ms for=200ms')
    assert world.run(ns=2_000_000) == 'time'
    assert a.reg_read('PORT_STATUS') == 0
    assert a.query_port()['state'] == 1      # QRNIC_PORT_DOWN
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 4096)], remote=(rb, 0))
    assert world.run(ns=150_000_000) == 'time'
    assert conn.cqa.poll() == []
    assert world.run() == 'idle'
    assert a.reg_read('PORT_STATUS') == 1
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src
    assert a.fault_stats(rid)['fired'] == 1
    ev = async_events(a)
    assert [e[0] for e in ev] == ['PORT_ERR', 'PORT_ACTIVE']
    eqes = [e['t_ns'] - t0 for e in world.trace() if e['dev'] == 0 and e['name'] == 'eqe']
    assert 1_000_000 in eqes and 201_000_000 in eqes


def test_link_down_until_link_up_rule(world):
    a = world.devs[0]
    a.fault('link-down')
    a.fault('link-up after=5ms')
    assert world.run(ns=1_000_000) == 'time'
    assert a.reg_read('PORT_STATUS') == 0
    assert world.run() == 'idle'
    assert a.reg_read('PORT_STATUS') == 1
    assert [e[0] for e in async_events(a)] == ['PORT_ERR', 'PORT_ACTIVE']


# ---- retry and RNR exhaustion through injected faults --------------------------------------
@pytest.mark.parametrize('what', ['requests', 'acks'])
def test_retry_exceeded(world, what):
    conn = pair(world, retry_cnt=2, timeout=8)
    a, b = world.devs
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    if what == 'requests':
        rid = a.fault('drop dir=tx op=write')
        dev = a
    else:
        rid = b.fault('drop dir=tx op=ack')
        dev = b
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=1)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=2)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert [(x['wr_id'], x['status']) for x in c] == [(1, 12), (2, q.WC['WR_FLUSH_ERR'])]
    assert c[0]['status_name'] == 'RETRY_EXC_ERR'
    assert dev.fault_fired(rid) >= 3
    assert conn.qa.state == 'ERR'


@pytest.mark.parametrize('where', ['requester-rx', 'responder-tx'])
def test_rnr_retry_exceeded_with_receives_posted(world, where):
    conn = pair(world, rnr_retry=3, min_rnr_timer=1)
    a, b = world.devs
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    for i in range(4):
        conn.qb.post_recv([(rb, 0, 4096)], wr_id=10 + i)
    if where == 'requester-rx':
        dev, rid = a, a.fault(f'nak dir=rx qp={conn.qa.qpn} type=rnr timer=1')
    else:
        dev, rid = b, b.fault('nak dir=tx type=rnr timer=1')
    conn.qa.post_send('SEND', [(la, 0, 100)], wr_id=1)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert [(x['wr_id'], x['status']) for x in c] == [(1, 13)]
    assert c[0]['status_name'] == 'RNR_RETRY_EXC_ERR'
    assert conn.qa.state == 'ERR'
    assert dev.fault_fired(rid) == 4          # rnr_retry + 1 RNR NAKs
    assert a.stat('rnr_naks_rcvd') == 4 and b.stat('rnr_naks_sent') == 0
    # the receiver did take the message, once
    assert [(x['wr_id'], x['status_name']) for x in conn.cqb.poll()] == [(10, 'SUCCESS')]


def test_forged_nak_ends_the_qp(world):
    conn = pair(world)
    a = world.devs[0]
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    a.fault('nak dir=rx type=rem-access count=1')
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=1)
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['REM_ACCESS_ERR']


# ---- lossy wires: data intact, atomics exactly once -----------------------------------------
def lossy_plans(p, seed):
    """Loss, duplication and reordering at rate p in both directions, each
    fault kind once at a tx and once at an rx choke point."""
    return (f'drop dir=tx prob={p} seed={seed}\n'
            f'dup dir=rx prob={p} seed={seed + 1}\n'
            f'reorder dir=tx prob={p} hold=2 release=3 seed={seed + 2}\n',
            f'drop dir=rx prob={p} seed={seed + 3}\n'
            f'dup dir=tx prob={p} seed={seed + 4}\n'
            f'reorder dir=rx prob={p} hold=1 release=2 seed={seed + 5}\n')


@pytest.mark.parametrize('mtu', [1024, 4096])
@pytest.mark.parametrize('rate', [0.01, 0.05, 0.10], ids=['1%', '5%', '10%'])
def test_lossy_write_read_atomics(world, rate, mtu):
    rng = random.Random(int(rate * 100) + mtu)
    # responder resources above the initiator depth: see
    # test_late_duplicate_atomic_does_not_block_new_one for why
    conn = pair(world, mtu=mtu, timeout=8, retry_cnt=7, max_dest_rd_atomic=16)
    a, b = world.devs
    pa, pb = lossy_plans(rate, 11)
    ra, rb_ids = a.fault_plan(pa), b.fault_plan(pb)
    n = 1 << 20

    la = a.reg_mr(conn.pda, n)
    rb = b.reg_mr(conn.pdb, n)
    src = la.fill_random(rng)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0), wr_id=1)
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS']
    assert zlib.crc32(rb.read()) == zlib.crc32(src)

    lb = a.reg_mr(conn.pda, n)
    dst = rb.fill_random(rng)
    conn.qa.post_send('RDMA_READ', [(lb, 0, n)], remote=(rb, 0), wr_id=2)
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS']
    assert zlib.crc32(lb.read()) == zlib.crc32(dst)

    ctr = b.reg_mr(conn.pdb, 64)
    res = a.reg_mr(conn.pda, 8 * 200)
    executed0 = b.stat('atomics_executed')
    done = []
    for i in range(200):
        conn.qa.post_send('FETCH_AND_ADD', [(res, 8 * i, 8)], remote=(ctr, 0), add=1, wr_id=100 + i)
        if i % 32 == 31 or i == 199:
            assert world.run() == 'idle'
            done += conn.cqa.poll()
    assert [(c['wr_id'], c['status_name']) for c in done] == \
        [(100 + i, 'SUCCESS') for i in range(200)]
    assert int.from_bytes(ctr.read(0, 8), 'little') == 200
    assert sorted(int.from_bytes(res.read(8 * i, 8), 'little') for i in range(200)) == \
        list(range(200))
    assert b.stat('atomics_executed') - executed0 == 200

    for dev, ids in ((a, ra), (b, rb_ids)):
        for rid in ids:
            assert dev.fault_fired(rid) > 0, dev.fault_stats(rid)
    assert a.fault_totals()['held'] == b.fault_totals()['held'] == 0


def test_late_duplicate_atomic_does_not_block_new_one(world):
    conn = pair(world)
    a, b = world.devs
    ctr, res = b.reg_mr(conn.pdb, 64), a.reg_mr(conn.pda, 64)
    p0 = conn.psn_a
    # a copy of the first atomic, held in the network for 1 ms
    a.fault(f'dup dir=tx psn={p0} count=1')
    b.fault(f'delay dir=rx psn={p0} skip=1 count=1 ns=1ms')
    for i in range(4):
        conn.qa.post_send('FETCH_AND_ADD', [(res, 8 * i, 8)], remote=(ctr, 0), add=1, wr_id=i)
    assert world.run(ns=500_000) == 'time'
    assert statuses(conn.cqa) == ['SUCCESS'] * 4
    # the 5th atomic (a legal new request: 4 outstanding at most) arrives
    # together with the stale copy
    b.fault(f'delay dir=rx psn={p0 + 4} ns=500us')
    conn.qa.post_send('FETCH_AND_ADD', [(res, 32, 8)], remote=(ctr, 0), add=1, wr_id=4)
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS']
    assert int.from_bytes(ctr.read(0, 8), 'little') == 5


# ---- determinism ------------------------------------------------------------------------------
def frame_log_of_run(seed):
    w = q.World(2)
    try:
        conn = q.connect_rc(w.devs[0], w.devs[1], mtu=1024, timeout=8)
        a, b = w.devs
        pa, pb = lossy_plans(0.05, seed)
        a.fault_plan(pa + f'corrupt dir=tx part=payload prob=0.02 seed={seed + 9}\n'
                     f'delay dir=tx ns=20us jitter=30us prob=0.03 seed={seed + 10}\n')
        b.fault_plan(pb + f'corrupt dir=rx part=header prob=0.02 seed={seed + 19}\n')
        rng = random.Random(5)
        n = 1 << 18
        la, rb = a.reg_mr(conn.pda, n), b.reg_mr(conn.pdb, n)
        la.fill_random(rng)
        rb.fill_random(rng)
        conn.qa.post_send('RDMA_WRITE', [(la, 0, n // 2)], remote=(rb, 0))
        conn.qa.post_send('RDMA_READ', [(la, n // 2, n // 2)], remote=(rb, n // 2))
        for i in range(20):
            conn.qa.post_send('FETCH_AND_ADD', [(la, 8 * i, 8)], remote=(rb, 0), add=1)
        assert w.run() == 'idle'
        assert statuses(conn.cqa) == ['SUCCESS'] * 22
        return [(f.t, f.src, f.dst, f.fate, f.data) for f in w.frames()], \
            a.fault_list() + b.fault_list()
    finally:
        w.close()


def test_same_plan_and_seed_same_frames():
    log1, rules1 = frame_log_of_run(21)
    log2, rules2 = frame_log_of_run(21)
    assert len(log1) > 500
    assert log1 == log2
    assert rules1 == rules2
    log3, _ = frame_log_of_run(22)
    assert log3 != log1


# ---- device faults: DMA -------------------------------------------------------------------------
def test_dma_write_fault_on_receive_buffer(world):
    """Data path DMA failure at the responder: its QP goes to ERR."""
    conn = pair(world)
    a, b = world.devs
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 8192)
    page = rb.bus_addr(4096)
    rid = b.fault(f'dma-fail dir=write range={page:#x}+4096')
    conn.qb.post_recv([(rb, 4096, 4096)], wr_id=7)
    conn.qb.post_recv([(rb, 0, 4096)], wr_id=8)
    conn.qa.post_send('SEND', [(la, 0, 200)], wr_id=1)
    assert world.run() == 'idle'
    assert b.fault_fired(rid) == 1
    cb = conn.cqb.poll()
    assert [(c['wr_id'], c['status_name'], c['vendor_err_name']) for c in cb] == \
        [(7, 'LOC_QP_OP_ERR', 'DMA'), (8, 'WR_FLUSH_ERR', 'FLUSH')]
    assert conn.qb.state == 'ERR'
    assert ('QP_FATAL', conn.qb.qpn, 0) in async_events(b)
    assert statuses(conn.cqa) == ['REM_OP_ERR']
    assert b.stat('dma_errors') == 1
    assert not b.reg_read('STATUS') & q.STATUS_FATAL


@pytest.mark.parametrize('op', ['RDMA_WRITE', 'RDMA_READ'])
def test_dma_fault_on_responder_memory(world, op):
    """The responder cannot reach the target memory: an access NAK ends both QPs."""
    conn = pair(world)
    a, b = world.devs
    la, rb = conn.a.dev.reg_mr(conn.pda, 8192), conn.b.dev.reg_mr(conn.pdb, 8192)
    rid = b.fault(f'dma-fail dir={"write" if op == "RDMA_WRITE" else "read"} '
                  f'range={rb.bus_addr(4096):#x}+4096')
    conn.qa.post_send(op, [(la, 0, 8192)], remote=(rb, 0), wr_id=1)
    assert world.run() == 'idle'
    assert b.fault_fired(rid) == 1
    assert statuses(conn.cqa) == ['REM_ACCESS_ERR']
    assert conn.qb.state == 'ERR' and conn.qa.state == 'ERR'
    assert ('QP_ACCESS_ERR', conn.qb.qpn, 0) in async_events(b)
    assert not b.reg_read('STATUS') & q.STATUS_FATAL


def test_dma_read_fault_on_local_buffer(world):
    """Data path DMA failure at the requester: the WQE fails, the QP goes to ERR."""
    conn = pair(world)
    a = world.devs[0]
    la, rb = conn.a.dev.reg_mr(conn.pda, 8192), conn.b.dev.reg_mr(conn.pdb, 8192)
    rid = a.fault(f'dma-fail dir=read range={la.bus_addr(0):#x}+4096')
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 4096)], remote=(rb, 0), wr_id=1)
    conn.qa.post_send('RDMA_WRITE', [(la, 4096, 4096)], remote=(rb, 0), wr_id=2)
    assert world.run() == 'idle'
    assert a.fault_fired(rid) == 1
    c = conn.cqa.poll()
    assert [(x['wr_id'], x['status_name'], x['vendor_err_name']) for x in c] == \
        [(1, 'LOC_PROT_ERR', 'DMA'), (2, 'WR_FLUSH_ERR', 'FLUSH')]
    assert conn.qa.state == 'ERR'
    assert not a.reg_read('STATUS') & q.STATUS_FATAL


def test_dma_read_nth_access(world):
    """dma-fail nth=: the Nth matching access fails (here: WQE fetches)."""
    conn = pair(world)
    a = world.devs[0]
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    sq = conn.qa.sq_addr
    # each send WQE is fetched with two reads (header, SGEs): the 3rd read of
    # the SQ ring (64 WQEs of 512 bytes) is WQE 1's header
    rid = a.fault(f'dma-fail dir=read range={sq:#x}+{64 * 512} nth=3 count=1')
    for i in range(3):
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0), wr_id=i)
    assert world.run() == 'idle'
    st = a.fault_stats(rid)
    assert st['fired'] == 1 and st['done']
    c = conn.cqa.poll()
    # (the failed WQE could not be read: its CQE has no wr_id)
    assert [(x['wqe_index'], x['status_name'], x['vendor_err_name']) for x in c] == \
        [(0, 'SUCCESS', 'NONE'), (1, 'LOC_QP_OP_ERR', 'DMA'), (2, 'WR_FLUSH_ERR', 'FLUSH')]


def test_dma_fault_on_eq_is_fatal(world):
    conn = pair(world)
    a = world.devs[0]
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    eq = a.comp_eq
    rid = a.fault(f'dma-fail dir=write range={eq.ring_addr:#x}+{16 << eq.log_depth}')
    conn.cqa.arm()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert a.fault_fired(rid) >= 1
    assert a.reg_read('STATUS') & q.STATUS_FATAL
    assert a.reg_read('FATAL_CODE') == 1     # QRNIC_FATAL_DMA


def test_dma_fault_on_admin_queue_is_fatal(world):
    a = world.devs[0]
    rid = a.fault(f'dma-fail dir=read range={a.aq_addr():#x}+{128 << 5}')
    world.set_admin_timeout(10_000_000)
    assert a.alloc_pd(check=False) is None
    assert a.fault_fired(rid) == 1
    assert a.reg_read('STATUS') & q.STATUS_FATAL
    assert a.reg_read('FATAL_CODE') == 3     # QRNIC_FATAL_AQ
    # recovery: reset and bring up again
    a.fault_clear()
    a.reg_write('CTRL', q.CTRL_RESET)
    a.forget()
    a.init()
    assert a.alloc_pd() is not None


def test_dma_fault_on_cq_ring_overruns_cq(world):
    conn = pair(world)
    a = world.devs[0]
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    a.fault(f'dma-fail dir=write range={conn.cqa.ring_addr:#x}+{32 << 10}')
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert a.stat('cq_overruns') == 1
    assert ('CQ_ERR', conn.cqa.cqn, 0) in async_events(a)
    assert conn.qa.state == 'ERR'


# ---- device faults: CQE, QP, CQ, EQ --------------------------------------------------------------
def test_cqe_error_reaches_consumer(world):
    conn = pair(world)
    a = world.devs[0]
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    rid = a.fault(f'cqe-error cq={conn.cqa.cqn} status=REM_ACCESS_ERR')
    for i in range(3):
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0), wr_id=i)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert [(x['wr_id'], x['status'], x['vendor_err_name']) for x in c] == \
        [(0, q.WC['REM_ACCESS_ERR'], 'INJECTED'), (1, 5, 'FLUSH'), (2, 5, 'FLUSH')]
    assert a.fault_fired(rid) == 1
    assert conn.qa.state == 'ERR'
    assert a.stat('cqe_errors') == 3


def test_cqe_error_on_receive_keep_state(world):
    conn = pair(world)
    b = world.devs[1]
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    rid = b.fault(f'cqe-error qp={conn.qb.qpn} wc=recv status=GENERAL_ERR qp-state=keep')
    for i in range(2):
        conn.qb.post_recv([(rb, 0, 4096)], wr_id=10 + i)
        conn.qa.post_send('SEND', [(la, 0, 64)], wr_id=i)
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS', 'SUCCESS']
    cb = conn.cqb.poll()
    assert [(x['wr_id'], x['status'], x['vendor_err']) for x in cb] == \
        [(10, 21, 11), (11, 0, 0)]
    assert b.fault_fired(rid) == 1
    assert conn.qb.state == 'RTS'


def test_qp_error(world):
    conn = pair(world)
    b = world.devs[1]
    rb = conn.b.dev.reg_mr(conn.pdb, 4096)
    conn.qb.post_recv([(rb, 0, 4096)], wr_id=5)
    rid = b.fault(f'qp-error qp={conn.qb.qpn}')
    assert b.fault_stats(rid)['fired'] == 0  # timed faults run from the event heap
    assert world.run() == 'idle'
    assert conn.qb.state == 'ERR'
    assert [(x['wr_id'], x['status_name']) for x in conn.cqb.poll()] == [(5, 'WR_FLUSH_ERR')]
    assert async_events(b) == [('QP_FATAL', conn.qb.qpn, 0)]
    assert b.fault_stats(rid)['done']


def test_cq_overrun(world):
    conn = pair(world)
    a = world.devs[0]
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    rid = a.fault(f'cq-overrun cq={conn.cqa.cqn}')
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert a.fault_fired(rid) == 1
    assert conn.cqa.poll() == []
    assert a.stat('cq_overruns') == 1
    assert ('CQ_ERR', conn.cqa.cqn, 0) in async_events(a)
    assert conn.qa.state == 'ERR'


def test_eq_overflow(world):
    conn = pair(world)
    a = world.devs[0]
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    eq = a.comp_eq
    eq.poll()
    rid = a.fault(f'eq-overflow eq={eq.eqn}')
    conn.cqa.arm()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0), wr_id=1)
    assert world.run() == 'idle'
    assert a.fault_fired(rid) == 1
    assert eq.poll() == []                   # the completion event was lost
    assert [c['wr_id'] for c in conn.cqa.poll()] == [1]
    conn.cqa.arm()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0), wr_id=2)
    assert world.run() == 'idle'
    assert [(e['type_name'], e['handle']) for e in eq.poll()] == [('COMPLETION', conn.cqa.cqn)]


# ---- device faults: admin ------------------------------------------------------------------------
def test_admin_fail_next_create_qp(world):
    """Recipe: fail the next CREATE_QP."""
    a = world.devs[0]
    pd, cq = a.alloc_pd(), a.create_cq(6)
    rid = a.fault('admin-fail op=CREATE_QP status=NO_RESOURCES')
    pd2 = a.alloc_pd()                       # other commands pass
    with pytest.raises(q.AdminError) as ei:
        a.create_qp(pd, cq)
    assert ei.value.status == q.AQ['NO_RESOURCES']
    assert a.fault_stats(rid)['done']
    qp = a.create_qp(pd, cq)                 # not executed: no QP was leaked
    assert qp.qpn == 2
    assert pd2 is not None


def test_admin_fail_default_status(world):
    a = world.devs[0]
    a.fault('admin-fail skip=1')
    assert a.alloc_pd() is not None
    assert a.alloc_pd(check=False) is None
    assert a.last_status == q.AQ['INJECTED']
    assert a.alloc_pd() is not None
    assert a.stat('admin_errors') == 1


def test_admin_timeout_then_reset(world):
    a = world.devs[0]
    world.set_admin_timeout(50_000_000)
    pd = a.alloc_pd()
    rid = a.fault('admin-timeout op=CREATE_PD')
    with pytest.raises(q.AdminError) as ei:
        a.alloc_pd()
    assert ei.value.status == q.E_TIMEOUT
    assert a.fault_totals()['aq_hung'] == 1
    assert a.busy() is False
    # hung: no command completes, whatever it is
    with pytest.raises(q.AdminError):
        a.query_device()
    assert a.fault_stats(rid)['fired'] == 1
    # the driver recovers with a function reset
    a.reg_write('CTRL', q.CTRL_RESET)
    a.forget()
    assert a.fault_totals()['aq_hung'] == 0
    a.init()
    assert a.alloc_pd().pdn == pd.pdn        # the hung CREATE_PD never ran


def test_fatal(world):
    a = world.devs[0]
    a.fault('fatal after=1ms')
    assert world.run(ns=500_000) == 'time'
    assert not a.reg_read('STATUS') & q.STATUS_FATAL
    assert world.run() == 'idle'
    assert a.reg_read('STATUS') & q.STATUS_FATAL
    assert a.reg_read('FATAL_CODE') == 2     # QRNIC_FATAL_INJECTED
    assert async_events(a) == [('DEVICE_FATAL', 0, 2)]


def test_injected_async_events(world):
    conn = pair(world)
    a = world.devs[0]
    a.fault_plan(f'event port-down\nevent qp-fatal qp={conn.qa.qpn} after=1us\n'
                 f'event cq-err cq={conn.cqa.cqn} after=2us\nevent port-up after=3us')
    assert world.run() == 'idle'
    assert async_events(a) == [('PORT_ERR', 1, 0), ('QP_FATAL', conn.qa.qpn, 0),
                               ('CQ_ERR', conn.cqa.cqn, 0), ('PORT_ACTIVE', 1, 0)]
    # events only: nothing changed state
    assert a.reg_read('PORT_STATUS') == 1
    assert conn.qa.state == 'RTS'
    assert a.stat('faults_injected') == 4


# ---- windows, reset --------------------------------------------------------------------------------
def test_active_window(world):
    conn = pair(world, timeout=8)
    a = world.devs[0]
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    rid = a.fault('drop dir=tx after=1ms for=1ms')
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert a.fault_fired(rid) == 0           # before the window
    a.fault('link-up after=1200us')          # a no-op timed rule, to move the clock
    assert world.run() == 'idle'
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS', 'SUCCESS']
    assert a.fault_fired(rid) >= 1           # dropped until the window closed


def test_reset_discards_held_frames_keeps_rules(world):
    conn = pair(world)
    a = world.devs[0]
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    rid = a.fault('delay dir=tx ns=10ms')
    a.fault('link-down after=50ms for=1ms')
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0))
    assert world.run(ns=1_000_000) == 'time'
    assert a.fault_totals()['held'] == 1
    a.reg_write('CTRL', q.CTRL_RESET)
    a.forget()
    assert a.fault_totals()['held'] == 0 and a.fault_totals()['held_flushed'] == 1
    assert a.fault_ids() == [rid, rid + 1]
    a.init()
    assert world.run() == 'idle'
    assert [e[0] for e in async_events(a)] == ['PORT_ERR', 'PORT_ACTIVE']
    assert a.stat('faults_injected') == 1    # the link-down, after the reset cleared stats
    assert a.fault_totals()['injected'] == 2
