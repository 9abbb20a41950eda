# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: BlueFlame (spec 3.2.1) from the unmodified tools.  With the
kernel driver's `qrnic.bf=1` the provider posts a single small WQE by BF
(as rdma-core's mlx5 does); perftest's latency tests (inline data) and
ibv_rc_pingpong (one SGE) then run with the device counting BF posts in its
hw_counters, and none falling back.  QRNIC_NO_BF=1 makes the provider ring
plain doorbells, and so does the default `qrnic.bf=0` (BF is slower under
emulation: guest-driver/kernel/README.md): then nothing is counted.  T1:
two ports of one VM."""
import pytest

from guest.vmlib import (check_pair, client_server, hw_counters, module_param,  # noqa: F401
                         need_driver, next_port, pair, set_module_param, topo)

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]

N = 200
PARAM = '/sys/module/qrnic/parameters/bf'


@pytest.fixture
def bf_on(topo):
    need_driver(topo)
    vm = topo.vm(0)
    set_module_param(vm, 'bf', True)   # for contexts opened from now on
    try:
        yield vm
    finally:
        set_module_param(vm, 'bf', False)   # the default


def _run(topo, tool, env=''):
    s, c = pair(topo)
    port = next_port()
    before = {d: hw_counters(ep.vm, ep.ibdev) for d, ep in (('s', s), ('c', c))}
    if tool == 'ibv_rc_pingpong':
        common = '-p %d -s 64 -n %d -c' % (port, N)
        srv_cmd = '%sibv_rc_pingpong -d %s -g %d %s' % (env, s.ibdev, s.gid, common)
        cli_cmd = '%sibv_rc_pingpong -d %s -g %d %s %s' % (env, c.ibdev, c.gid, common, s.ip)
    else:
        common = '-p %d -n %d -s 8 -F' % (port, N)
        srv_cmd = '%s%s -d %s -x %d %s' % (env, tool, s.ibdev, s.gid, common)
        cli_cmd = '%s%s -d %s -x %d %s %s' % (env, tool, c.ibdev, c.gid, common, s.ip)
    srv, cli = client_server(s.vm, srv_cmd, c.vm, cli_cmd, port, timeout=180)
    check_pair(srv, cli)
    after = {d: hw_counters(ep.vm, ep.ibdev) for d, ep in (('s', s), ('c', c))}
    delta = {d: {k: after[d][k] - before[d][k] for k in after[d]} for d in after}
    return cli.output, delta


@pytest.mark.parametrize('tool', ['ib_write_lat', 'ib_send_lat', 'ibv_rc_pingpong'])
def test_bf_counted(topo, bf_on, tool):
    out, delta = _run(topo, tool)
    if tool == 'ibv_rc_pingpong':
        assert '%d iters in' % N in out, out
    for side in ('s', 'c'):
        d = delta[side]
        # every side posts at least its N messages one WQE at a time
        assert d['bf_posts'] >= N, (side, d)
        assert d['bf_fallbacks'] == 0, (side, d)


def test_no_bf_when_turned_off(topo, bf_on):
    out, delta = _run(topo, 'ib_write_lat', env='QRNIC_NO_BF=1 ')
    for side in ('s', 'c'):
        assert delta[side]['bf_posts'] == 0, delta
        assert delta[side]['doorbells'] >= N, delta


def test_no_bf_by_default(topo):
    """qrnic.bf is off unless asked for: the kernel gives contexts no BF buffers
    and the provider rings doorbells.  The parameter takes booleans only."""
    need_driver(topo)
    vm = topo.vm(0)
    assert module_param(vm, 'bf') == 'N'
    for bad in ('x', '2', '-1'):
        r = vm.run('echo %s > %s' % (bad, PARAM), check=False)
        assert not r.ok and 'Invalid argument' in r.output, (bad, r.output)
        assert module_param(vm, 'bf') == 'N', bad
    out, delta = _run(topo, 'ib_write_lat')
    for side in ('s', 'c'):
        assert delta[side]['bf_posts'] == 0, delta
        assert delta[side]['doorbells'] >= N, delta
