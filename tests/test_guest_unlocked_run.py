# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: the model runs without the BQL (unlocked-run, the default with a
guest CPU; hw/qrnic_run.c qrnic_run_unlocked, docs/qemu.md section 13).  A
doorbell a vCPU rings while the main loop runs the model is queued instead of
waiting for the BQL; the queue goes to the model in order.  T1 (two ports of
one VM, one main loop for both) with 1 MiB messages keeps the main loop busy,
so the guest rings doorbells during runs: ibv_rc_pingpong checks every byte
(-c), and QOM host-calls shows the runs (unlocked) and the queued doorbells
(db-queued), the SQ doorbells of a QP with WRITEs in flight that asked
for no run (db-batched, -device qrnic,doorbell-batch) and, in ib_send_bw,
the RQ doorbells that asked for none (rq-db-quiet).  The whole guest tier
runs with both on; test_guest_verbs.py's pingpong checks the runs happen there
too."""
import pytest

from guest.vmlib import (check_pair, client_server, host_calls, next_port, pair,  # noqa: F401
                         perftest_table, set_module_param, topo)

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]


def _both(s, c, tool, opts):
    """tool on both ports (server first), OPTS with a fresh port; the client's output."""
    port = next_port()
    common = '-p %d %s' % (port, opts)
    srv, cli = client_server(s.vm, '%s -d %s %s' % (tool, s.ibdev, common % s.gid),
                             c.vm, '%s -d %s %s %s' % (tool, c.ibdev, common % c.gid, s.ip),
                             port, timeout=300)
    check_pair(srv, cli)
    return cli.output


def test_doorbells_queued_during_runs_keep_every_byte(topo):
    s, c = pair(topo)
    vm = s.vm
    assert all(vm.qmp_cmd('qom-get', path=p, property='unlocked-run') == 'auto'
               for p in vm.qrnic_paths())
    # every post rings here: with SQ records (ABI 1.11, the default) a post
    # while the device runs for its QP rings nothing, so few doorbells
    # would meet a run (tests/test_guest_sq_dbrec.py covers the records)
    set_module_param(vm, 'sq_dbrec', False)
    try:
        _doorbells_during_runs(s, c, vm)
    finally:
        set_module_param(vm, 'sq_dbrec', True)


def _doorbells_during_runs(s, c, vm):
    h0 = host_calls(vm)
    out = _both(s, c, 'ibv_rc_pingpong', '-g %d -s 1048576 -n 100 -c')
    assert '100 iters in' in out, out
    out = _both(s, c, 'ib_write_bw', '-x %d -s 1048576 -n 300 -F')
    row = perftest_table(out)
    assert row and int(row['#iterations']) == 300, out
    d = {k: v - h0[k] for k, v in host_calls(vm).items()}
    assert d['unlocked'] > 0 and d['db-queued'] > 0, d
    # ib_write_bw keeps WRITEs in flight: the SQ doorbells that find no run
    # ride on the ACK (doorbell-batch, on by default with a guest CPU)
    assert d['db-batched'] > 0, d
    # the server re-posts its receives in RTS: RQ doorbells that ask for no run
    h1 = host_calls(vm)
    out = _both(s, c, 'ib_send_bw', '-x %d -s 65536 -n 300 -F')
    row = perftest_table(out)
    assert row and int(row['#iterations']) == 300, out
    assert host_calls(vm)['rq-db-quiet'] > h1['rq-db-quiet']
    assert d['kick'] == 0, d
