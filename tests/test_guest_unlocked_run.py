# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: the model runs without the BQL (unlocked-run, the default with a
guest CPU; hw/qrnic.c qrnic_run_unlocked, docs/qemu.md section 13).  A
doorbell a vCPU rings while the main loop runs the model is queued instead of
waiting for the BQL; the queue goes to the model in order.  T1 (two ports of
one VM, one main loop for both) with 1 MiB messages keeps the main loop busy,
so the guest rings doorbells during runs: ibv_rc_pingpong checks every byte
(-c), and QOM host-calls shows the runs (unlocked) and the queued doorbells
(db-queued).  The whole guest tier runs with it on; test_guest_verbs.py's
pingpong checks the runs happen there too."""
import pytest

from guest.vmlib import check_pair, client_server, next_port, pair, perftest_table, topo  # noqa: F401

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]


def _host_calls(vm):
    tot = {}
    for p in vm.qrnic_paths():
        for k, v in vm.qmp_cmd('qom-get', path=p, property='host-calls').items():
            tot[k] = tot.get(k, 0) + v
    return tot


def test_doorbells_queued_during_runs_keep_every_byte(topo):
    s, c = pair(topo)
    vm = s.vm
    assert all(vm.qmp_cmd('qom-get', path=p, property='unlocked-run') == 'auto'
               for p in vm.qrnic_paths())
    h0 = _host_calls(vm)
    port = next_port()
    common = '-p %d -s 1048576 -n 100 -c' % port
    srv, cli = client_server(s.vm, 'ibv_rc_pingpong -d %s -g %d %s' % (s.ibdev, s.gid, common),
                             c.vm, 'ibv_rc_pingpong -d %s -g %d %s %s' % (c.ibdev, c.gid, common, s.ip),
                             port, timeout=300)
    check_pair(srv, cli)
    assert '100 iters in' in cli.output, cli.output
    port = next_port()
    common = '-p %d -s 1048576 -n 300 -F' % port
    srv, cli = client_server(s.vm, 'ib_write_bw -d %s -x %d %s' % (s.ibdev, s.gid, common),
                             c.vm, 'ib_write_bw -d %s -x %d %s %s' % (c.ibdev, c.gid, common, s.ip),
                             port, timeout=300)
    check_pair(srv, cli)
    row = perftest_table(cli.output)
    assert row and int(row['#iterations']) == 300, cli.output
    d = {k: v - h0[k] for k, v in _host_calls(vm).items()}
    assert d['unlocked'] > 0 and d['db-queued'] > 0, d
    assert d['kick'] == 0, d
