# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: fault injection in QEMU (docs/faults.md section 11).

Rules go in through QMP (qom-set on /machine/peripheral/<id>: fault,
fault-del, fault-clear; qom-get: fault, fault-rules, fault-totals,
faults-injected), through -device qrnic,fault-plan=FILE / fault=RULES at
start, and through scripts/qrnic-fault.  They act on real frames between two
qrnic devices on a hub, on admin commands and on the device state."""
import os
import random
import shutil
import subprocess
import sys
import tempfile

import pytest

import qrnic_harness as h
from qtest import Qemu, scenarios
from qtest.driver import World
from qtest.qemu import try_start
from qtest.fixtures import REPO, qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

CLI = os.path.join(REPO, 'scripts', 'qrnic-fault')


@pytest.fixture(scope='module')
def qworld(qemu_binary):  # noqa: F811
    w = World.single(qemu_binary, ndev=2, init=False, name='faults')
    yield w
    w.close()


@pytest.fixture
def world(qworld):
    """Both devices reset and up, no fault rules (rules survive resets)."""
    assert qworld.alive(), qworld.qemus[0].stderr()
    for d in qworld.devs:
        d.qom_set('fault-clear', True)
    qworld.reset_devices()
    yield qworld
    for d in qworld.devs:
        d.qom_set('fault-clear', True)
    assert qworld.alive(), qworld.qemus[0].stderr()


@pytest.fixture
def conn(world):
    return h.connect_rc(*world.devs, mtu=1024, cq_log=6)


def qmp_error(fn, *args):
    with pytest.raises(Exception) as ei:
        fn(*args)
    return str(ei.value)


# ---- control over QMP ------------------------------------------------------------------------
def test_add_list_del_clear_over_qmp(world):
    a = world.devs[0]
    q = a.qemu
    path = a.qom_path
    assert q.qmp('qom-get', path=path, property='fault') == ''
    assert q.qmp('qom-get', path=path, property='fault-rules') == []
    # plain qom-set: one rule, then a plan of three (newline and ';' separated)
    q.qmp('qom-set', path=path, property='fault', value='drop dir=tx op=read-resp nth=3 count=1')
    q.qmp('qom-set', path=path, property='fault',
          value='corrupt dir=rx part=icrc qp=5 prob=1% seed=7\n'
                'delay dir=tx ns=10us # comment\n\n'
                'dup dir=rx copies=2; reorder dir=tx hold=2')
    rules = q.qmp('qom-get', path=path, property='fault-rules')
    assert [r['id'] for r in rules] == [0, 1, 2, 3, 4]
    assert rules[0] == {'id': 0, 'rule': 'drop dir=tx op=read-resp nth=3 count=1',
                        'matched': 0, 'fired': 0, 'done': False}
    text = q.qmp('qom-get', path=path, property='fault')
    lines = text.splitlines()
    assert lines[0] == '0 matched=0 fired=0 drop dir=tx op=read-resp nth=3 count=1'
    assert lines[1].startswith('1 matched=0 fired=0 corrupt dir=rx part=icrc qp=5')
    assert len(lines) == 5
    q.qmp('qom-set', path=path, property='fault-del', value=1)
    assert [r['id'] for r in a.qom_get('fault-rules')] == [0, 2, 3, 4]
    assert 'no fault rule 1' in qmp_error(a.qom_set, 'fault-del', 1)
    assert 'not readable' in qmp_error(a.qom_get, 'fault-del')
    q.qmp('qom-set', path=path, property='fault-clear', value=False)     # no-op
    assert len(a.qom_get('fault-rules')) == 4
    q.qmp('qom-set', path=path, property='fault-clear', value=True)
    assert a.qom_get('fault') == '' and a.qom_get('fault-rules') == []
    assert a.fault('drop dir=tx') == [5], 'ids are never reused'
    assert a.fault('# only a comment\n\n') == [] and a.fault('') == []


@pytest.mark.parametrize('rule,msg', [
    ('dorp dir=tx', "unknown fault 'dorp' (one of: drop, dup"),
    ('drop prob=1.5', "drop: bad value '1.5' for prob (expected a probability"),
    ('delay dir=rx', 'delay: ns= is required'),
    ('drop dir=sideways', 'drop: bad value'),
    ('admin-fail op=NO_SUCH_CMD', 'admin-fail'),
    ('drop dir=tx\ndrop bogus=1', "line 2: drop: unknown key 'bogus'"),
    ('drop dir=tx; nak type=bogus', "nak: bad value 'bogus' for type"),
])
def test_bad_rule_is_a_qmp_error(world, rule, msg):
    a = world.devs[0]
    a.fault('dup dir=rx')
    err = qmp_error(a.qom_set, 'fault', rule)
    assert 'GenericError' in err and 'qrnic: fault: ' in err and msg in err, err
    # all or none: nothing was added
    assert [r['rule'] for r in a.qom_get('fault-rules')] == ['dup dir=rx']


def test_counters_and_totals(world, conn):
    """faults-injected (a device counter: reset clears it) and fault-totals
    (survives resets); rules and their counts survive a device reset."""
    a, b = world.devs
    (rid,) = a.fault('dup dir=tx op=write copies=1')
    la, rb = scenarios.mrs(conn, 8192)
    scenarios.rdma_write(conn, la, rb, random.Random(1), n=3000, sges=1)
    fired = a.fault_rule(rid)['fired']
    assert fired == 3                       # 3 WRITE packets at MTU 1024, each duplicated
    assert a.qom_get('faults-injected') == fired == a.query_stats()['faults_injected']
    assert a.qom_get('stats')['faults_injected'] == fired
    assert a.qom_get('fault-totals')['injected'] == fired
    assert b.query_stats()['duplicate_requests'] == fired
    a.function_reset()
    assert a.qom_get('faults-injected') == 0
    assert a.qom_get('fault-totals') == {'injected': fired, 'held': 0, 'held-overflow': 0,
                                         'held-flushed': 0, 'aq-hung': 0}
    assert a.fault_rule(rid)['fired'] == fired, 'rules survive a device reset'
    a.init()


# ---- faults on the wire between the two devices ----------------------------------------------
def test_dropped_read_response_is_recovered(world, conn):
    """'Make the 3rd READ response disappear': the responder (device 1) does
    not send it; the requester asks again and the data still arrives."""
    a, b = world.devs
    (rid,) = b.fault(f'drop dir=tx qp={conn.qa.qpn} op=read-resp nth=3 count=1')
    la, rb = scenarios.mrs(conn, 16384)
    scenarios.rdma_read(conn, la, rb, random.Random(3), n=8192)
    r = b.fault_rule(rid)
    assert r['fired'] == 1 and r['done'] and r['matched'] >= 3, r
    sa, sb = a.query_stats(), b.query_stats()
    assert sb['faults_injected'] == 1 and sa['faults_injected'] == 0
    assert sa['retransmitted_packets'] >= 1, sa       # the READ request again
    assert sb['duplicate_requests'] >= 1, sb
    # the responder sent the dropped packet again: 8 responses + at least 1
    assert sb['tx_packets'] >= 9


def test_corrupted_icrc_dropped_and_repaired(world, conn):
    """'Corrupt the ICRC on QP N' (here the responder's QP, at its rx): the
    frame is dropped as rx_drop_icrc and the requester resends it."""
    a, b = world.devs
    (rid,) = b.fault(f'corrupt dir=rx part=icrc qp={conn.qb.qpn} nth=2 count=1')
    la, rb = scenarios.mrs(conn, 16384)
    scenarios.rdma_write(conn, la, rb, random.Random(4), n=4096, sges=1)
    assert b.fault_rule(rid)['fired'] == 1
    assert b.query_stats()['rx_drop_icrc'] == 1
    assert a.query_stats()['retransmitted_packets'] >= 1


def test_every_frame_dropped_exhausts_retries(world):
    a, b = world.devs
    conn = h.connect_rc(a, b, mtu=1024, cq_log=6, timeout=8, retry_cnt=2)
    a.fault('drop dir=tx op=write')
    la, rb = scenarios.mrs(conn, 4096)
    world.clock_rate = 20.0
    try:
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=9)
        c = scenarios.one_cqe(conn.cqa)
    finally:
        world.clock_rate = 1.0
    assert c['status_name'] == 'RETRY_EXC_ERR', c


def test_link_down_for_200ms(world, conn):
    """'Kill the link for 200 ms': PORT_ERR at once... PORT_ACTIVE 200 ms of
    virtual time later; a WRITE posted meanwhile completes once it is back."""
    a, b = world.devs
    q = a.qemu
    a.async_eq.poll()
    a.async_eq.arm()
    a.fault('link-down after=1ms for=200ms')
    q.clock_step(999_000)
    world.settle()
    assert a.reg_read('PORT_STATUS') & 1, 'link went down too early'
    q.clock_step(2_000)
    world.settle()
    assert not a.reg_read('PORT_STATUS') & 1
    assert [e['event'] for e in a.async_eq.poll()] == ['PORT_ERR']
    assert a.query_port()['state'] != 4
    a.async_eq.arm()
    la, rb = scenarios.mrs(conn, 8192)
    la.write(0, b'L' * 2000)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 2000)], remote=(rb, 0), wr_id=0x11)
    q.clock_step(150_000_000)
    world.settle()
    assert conn.cqa.peek() == 0 and not a.reg_read('PORT_STATUS') & 1
    q.clock_step(50_000_000)
    world.settle()
    assert a.reg_read('PORT_STATUS') & 1, 'link not back after 200 ms'
    assert [e['event'] for e in a.async_eq.poll()] == ['PORT_ACTIVE']
    c = scenarios.one_cqe(conn.cqa)
    assert c['status_name'] == 'SUCCESS' and c['wr_id'] == 0x11, c
    assert rb.read(0, 2000) == b'L' * 2000


# ---- device faults ---------------------------------------------------------------------------
def test_admin_fail_create_qp(world):
    """'Fail the next CREATE_QP' with the injected status; the one after works."""
    a = world.devs[0]
    pd = a.alloc_pd()
    cq = a.create_cq(4)
    a.fault('admin-fail op=CREATE_QP status=NO_RESOURCES')
    assert a.alloc_pd() is not None, 'other commands are not affected'
    assert a.create_qp(pd, cq, check=False) is None
    assert a.last_status == h.AQ['NO_RESOURCES']
    assert a.create_qp(pd, cq) is not None
    a.fault('admin-fail op=CREATE_QP')                 # default status: INJECTED
    assert a.create_qp(pd, cq, check=False) is None
    assert a.last_status == h.AQ['INJECTED']
    assert a.query_stats()['admin_errors'] == 2


def test_fatal_then_reset_recovers(world):
    a, b = world.devs
    a.async_eq.poll()
    a.async_eq.arm()
    a.fault('fatal')
    world.wait(lambda: a.reg_read('STATUS') & h.STATUS_FATAL, 5, 'STATUS.FATAL')
    assert a.reg_read('FATAL_CODE') == 2                 # QRNIC_FATAL_INJECTED
    ev = a.async_eq.poll()
    assert [e['event'] for e in ev] == ['DEVICE_FATAL'], ev
    assert a.qom_get('fault-rules')[0]['done']
    a.function_reset()                                   # CTRL.RESET
    assert a.reg_read('STATUS') == h.STATUS_READY
    a.init()
    scenarios.healthy(world, a, b)


def test_dma_fail_on_a_receive_buffer(world, conn):
    a, b = world.devs
    la, rb = scenarios.mrs(conn, 8192)
    b.fault(f'dma-fail dir=write range={rb.bus_addr(0):#x}+4096')
    conn.qb.post_recv([(rb, 0, 4096)], wr_id=5)
    conn.qa.post_send('SEND', [(la, 0, 100)], wr_id=6)
    cs = scenarios.one_cqe(conn.cqa)
    cr = scenarios.one_cqe(conn.cqb)
    assert cs['status_name'] == 'REM_OP_ERR', cs
    assert cr['status_name'] == 'LOC_QP_OP_ERR', cr
    assert b.query_stats()['dma_errors'] == 1


# ---- rules at start: fault-plan=FILE, fault=RULES ---------------------------------------------
def test_fault_plan_file_loaded_at_start(qemu_binary, tmp_path):  # noqa: F811
    plan = tmp_path / 'plan.txt'
    plan.write_text('# test plan\n'
                    'admin-fail op=CREATE_QP status=BUSY\n'
                    '\n'
                    'drop dir=tx op=read-resp nth=3 count=1   # the 3rd READ response\n'
                    'dup dir=rx; link-down at=10s for=1s\n')
    w = World.single(qemu_binary, 2, name='plan',
                     dev_opts=[f'fault-plan={plan},fault=drop dir=rx qp=77', ''])
    try:
        a, b = w.devs
        rules = [r['rule'] for r in a.qom_get('fault-rules')]
        assert rules == ['admin-fail op=CREATE_QP status=BUSY',
                         'drop dir=tx op=read-resp nth=3 count=1', 'dup dir=rx',
                         'link-down at=10s for=1s', 'drop dir=rx qp=77']
        assert b.qom_get('fault-rules') == []
        assert a.qom_get('fault-plan') == str(plan)
        pd = a.alloc_pd()
        assert a.create_qp(pd, a.create_cq(4), check=False) is None
        assert a.last_status == h.AQ['BUSY']
    finally:
        w.close()


def test_bad_fault_plan_refuses_to_start(qemu_binary, tmp_path):  # noqa: F811
    plan = tmp_path / 'bad.plan'
    plan.write_text('# comment\ndrop dir=tx nth=3\n\ndelay dir=rx jitter=5us\n')
    rc, out = try_start(qemu_binary, ['-device', f'qrnic,fault-plan={plan}'])
    assert rc not in (None, 0), out
    assert f'qrnic: fault-plan {plan}:4: delay: ns= is required' in out, out
    plan.write_text('drop dir=tx\ndrop prob=2\n')
    rc, out = try_start(qemu_binary, ['-device', f'qrnic,fault-plan={plan}'])
    assert rc not in (None, 0) and f'{plan}:2: drop: bad value' in out, out
    rc, out = try_start(qemu_binary, ['-device', f'qrnic,fault-plan={tmp_path}/missing'])
    assert rc not in (None, 0) and 'qrnic: fault-plan: ' in out and 'missing' in out, out
    rc, out = try_start(qemu_binary, ['-device', 'qrnic,fault=dorp'])
    assert rc not in (None, 0) and "qrnic: fault: unknown fault 'dorp'" in out, out


def test_timed_rule_from_plan_survives_system_reset(qemu_binary, tmp_path):  # noqa: F811
    """A timed rule loaded at start fires at its time even across a
    system_reset (rules are configuration, not device state)."""
    plan = tmp_path / 'plan.txt'
    plan.write_text('link-down at=5ms for=1ms\n')
    q = Qemu(qemu_binary, ['-device', f'qrnic,id=r,fault-plan={plan}'], name='timed')
    try:
        q.system_reset()
        q.clock_step(6_000_000)
        rules = q.qmp('qom-get', path='/machine/peripheral/r', property='fault-rules')
        assert rules[0]['done'] and rules[0]['fired'] == 1, rules
    finally:
        q.close()


# ---- scripts/qrnic-fault ----------------------------------------------------------------------
@pytest.fixture(scope='module')
def cli_world(qemu_binary):  # noqa: F811
    d = tempfile.mkdtemp(prefix='qrnic-cli-')
    sock = os.path.join(d, 'qmp.sock')
    w = World.single(qemu_binary, 2, name='cli',
                     extra_args=['-qmp', f'unix:{sock},server=on,wait=off'])
    w.sock = sock
    yield w
    w.close()
    shutil.rmtree(d, ignore_errors=True)


def cli(world, *args, dev='qrnic0', check=True):
    cmd = [sys.executable, CLI, '--qmp', world.sock] + (['--dev', dev] if dev else []) \
        + list(args)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=30)
    if check:
        assert r.returncode == 0, (cmd, r.stdout, r.stderr)
    return r


def test_cli_add_list_del_clear(cli_world, tmp_path):
    w = cli_world
    cli(w, 'clear')
    r = cli(w, 'add', 'drop dir=tx op=read-resp nth=3 count=1', 'dup dir=rx')
    out = r.stdout.splitlines()
    assert len(out) == 2 and 'drop dir=tx op=read-resp nth=3 count=1' in out[0], r.stdout
    ids = [int(x.split()[0]) for x in out]
    listed = cli(w, 'list').stdout
    assert 'matched=0 fired=0  drop dir=tx op=read-resp nth=3 count=1' in listed
    assert cli(w, '--json', 'list').stdout.count('"rule"') == 2
    cli(w, 'del', str(ids[0]))
    assert 'drop' not in cli(w, 'list').stdout
    r = cli(w, 'del', '999', check=False)
    assert r.returncode == 1 and 'no fault rule 999' in r.stderr
    cli(w, 'clear')
    assert cli(w, 'list').stdout == ''
    assert w.devs[0].qom_get('fault-rules') == []


def test_cli_errors(cli_world, tmp_path):
    w = cli_world
    r = cli(w, 'add', 'drop prob=2', check=False)
    assert r.returncode == 1 and "qrnic: fault: drop: bad value '2' for prob" in r.stderr, r
    plan = tmp_path / 'p.txt'
    plan.write_text('drop dir=tx\n\ndorp dir=rx\n')
    r = cli(w, 'load', str(plan), check=False)
    assert r.returncode == 1 and f"{plan}:3: unknown fault 'dorp'" in r.stderr, r
    assert cli(w, 'list').stdout == '', 'a bad plan adds nothing'
    r = cli(w, 'load', str(tmp_path / 'nope'), check=False)
    assert r.returncode == 2
    r = cli(w, 'list', dev=None, check=False)    # two qrnic devices: --dev needed
    assert r.returncode == 1 and 'qrnic0' in r.stderr and 'qrnic1' in r.stderr, r
    r = cli(w, 'list', dev='nosuch', check=False)
    assert r.returncode == 1, r
    r = subprocess.run([sys.executable, CLI, '--qmp', str(tmp_path / 'no.sock'), 'list'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 2 and 'cannot talk QMP' in r.stderr


def test_cli_load_and_faults_act(cli_world, tmp_path):
    """The rules added by the CLI act on the devices; stats shows them."""
    w = cli_world
    a, b = w.devs
    for d in ('qrnic0', 'qrnic1'):
        cli(w, 'clear', dev=d)
    w.reset_devices()
    conn = h.connect_rc(a, b, mtu=1024, cq_log=6)
    plan = tmp_path / 'plan.txt'
    plan.write_text(f'# lose the 3rd READ response\ndrop dir=tx qp={conn.qa.qpn} '
                    'op=read-resp nth=3 count=1\n')
    r = cli(w, 'load', str(plan), dev='qrnic1')
    assert '1 rules loaded' in r.stdout
    la, rb = scenarios.mrs(conn, 16384)
    scenarios.rdma_read(conn, la, rb, random.Random(7), n=8192)
    st = cli(w, 'stats', dev='qrnic1').stdout
    assert 'faults-injected  1' in st and 'late-events      0' in st, st
    js = cli(w, '--json', 'stats', '--all', dev='qrnic1').stdout
    assert '"faults_injected": 1' in js and '"late-events": 0' in js
    cli(w, 'add', 'admin-fail op=CREATE_QP status=NO_RESOURCES', dev='qrnic0')
    assert a.create_qp(conn.pda, conn.cqa, check=False) is None
    assert a.last_status == h.AQ['NO_RESOURCES']
    t = cli(w, 'timing', dev='qrnic0').stdout
    assert t.startswith('profile functional') and 'pcie-read-ns' in t
    for d in ('qrnic0', 'qrnic1'):
        cli(w, 'clear', dev=d)


# ---- docs/faults.md section 11: the recipes work as written ----------------------------------
def _doc_recipe_lines():
    with open(os.path.join(REPO, 'docs', 'faults.md'), encoding='utf-8') as f:
        text = f.read()
    sec = text[text.index('### Recipes (QEMU)'):]
    out, fenced = [], False
    for ln in sec.splitlines():
        if ln.startswith('```'):
            fenced = not fenced
            continue
        if fenced and (ln.startswith('scripts/qrnic-fault ') or ln.startswith('{"execute"')
                       or ln.startswith('(qemu) ')):
            out.append(ln)
    return out


def test_docs_recipes_work_as_written(qemu_binary, tmp_path):  # noqa: F811
    """Every CLI, QMP and HMP line of the QEMU recipes in docs/faults.md, in
    order, against a QEMU with devices rn0 and rn1 (socket and plan paths
    replaced)."""
    import json
    import shlex
    lines = _doc_recipe_lines()
    assert sum(ln.startswith('scripts/') for ln in lines) >= 8, lines
    assert sum(ln.startswith('{') for ln in lines) >= 8, lines
    assert sum(ln.startswith('(qemu)') for ln in lines) >= 4, lines
    d = tempfile.mkdtemp(prefix='qrnic-doc-')
    sock = os.path.join(d, 'qmp.sock')
    plan = tmp_path / 'plan.txt'
    plan.write_text('dup dir=rx prob=1% seed=3\nreorder dir=tx prob=1% hold=2\n')
    q = Qemu(qemu_binary, ['-netdev', 'hubport,id=p0,hubid=0', '-netdev', 'hubport,id=p1,hubid=0',
                           '-device', 'qrnic,id=rn0,netdev=p0,mac=52:54:00:5e:00:01',
                           '-device', 'qrnic,id=rn1,netdev=p1,mac=52:54:00:5e:00:02',
                           '-qmp', f'unix:{sock},server=on,wait=off'], name='docs')
    try:
        for ln in lines:
            ln = ln.replace('/tmp/qmp.sock', sock).replace('/tmp/plan.txt', str(plan))
            if ln.startswith('scripts/'):
                argv = shlex.split(ln)
                r = subprocess.run([sys.executable, os.path.join(REPO, argv[0])] + argv[1:],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   timeout=30)
                assert r.returncode == 0, (ln, r.stdout, r.stderr)
            elif ln.startswith('{'):
                msg = json.loads(ln)
                q.qmp(msg['execute'], **msg.get('arguments', {}))
            else:
                r = q.qmp('human-monitor-command', **{'command-line': ln[len('(qemu) '):]})
                assert 'Error' not in r, (ln, r)
        q.clock_step(300_000_000)
        st = q.qmp('qom-get', path='/machine/peripheral/rn0', property='fault-totals')
        assert st['injected'] >= 1        # fatal fired (the link-downs were removed before 1 ms)
        assert q.qmp('qom-get', path='/machine/peripheral/rn0', property='fault-rules') == []
        assert len(q.qmp('qom-get', path='/machine/peripheral/rn1', property='fault-rules')) == 6
    finally:
        q.close()
        shutil.rmtree(d, ignore_errors=True)
