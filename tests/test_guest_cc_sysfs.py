# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: the congestion control knobs of the Linux driver,
/sys/class/infiniband/<dev>/cc/<name> (ABI 1.9, QUERY_CC / SET_CC; the
driver's README lists the mlx5 equivalents).  A read is what the device
has in use (QMP qom-get of the device's "cc" property, and of the -device
property before any change); a write changes the device; a bad write is
EINVAL and changes nothing; `rdma statistic show` lists the CNP and ECN
counters."""
import re

import pytest

from guest.vmlib import guest_dmesg, need_driver, one_device, topo  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.guest, pytest.mark.slow]

NAMES = ['cc_algo', 'np_enable', 'np_min_time_between_cnps', 'np_cnp_dscp', 'rp_enable',
         'rp_dce_tcp_g', 'rp_dce_tcp_rtt', 'rp_initial_alpha_value', 'rp_min_rate',
         'rp_min_dec_fac', 'rp_time_reset', 'rp_byte_reset', 'rp_threshold', 'rp_ai_rate',
         'rp_hai_rate', 'rp_initial_rate', 'timely_t_low', 'timely_t_high', 'timely_min_rtt',
         'timely_delta', 'timely_beta', 'timely_alpha', 'timely_hai_n']


def _read_all(e):
    out = e.vm.run('cd /sys/class/infiniband/%s/cc && grep . *' % e.ibdev).output
    return {k: int(v) for k, v in (ln.split(':', 1) for ln in out.split() if ':' in ln)}


def _qom_cc(e):
    return [e.vm.qmp_cmd('qom-get', path=p, property='cc') for p in e.vm.qrnic_paths()]


def test_cc_files_read_what_the_device_has(topo):
    need_driver(topo, provider=False)
    e = one_device(topo)
    files = e.vm.run('ls /sys/class/infiniband/%s/cc' % e.ibdev).output.split()
    assert sorted(files) == sorted(NAMES)
    got = _read_all(e)
    assert set(got) == set(NAMES)
    qom = _qom_cc(e)
    assert got in qom, (got, qom)
    # before any change, the values are the -device properties
    path = e.vm.qrnic_paths()[qom.index(got)]
    for name in ('cc_algo', 'rp_min_dec_fac', 'np_min_time_between_cnps', 'timely_beta'):
        prop = e.vm.qmp_cmd('qom-get', path=path, property=name.replace('_', '-'))
        assert got[name] == int(prop), name


def test_cc_writes_reach_the_device_and_bad_ones_are_einval(topo, guest_dmesg):
    need_driver(topo, provider=False)
    e = one_device(topo)
    d = '/sys/class/infiniband/%s/cc' % e.ibdev
    before = _read_all(e)
    path = e.vm.qrnic_paths()[_qom_cc(e).index(before)]
    guest_dmesg.allow(r'admin command SET_CC failed')
    try:
        e.vm.run('echo 80 > %s/rp_min_dec_fac && echo 1 > %s/cc_algo && echo 0x20 > %s/np_cnp_dscp'
                 % (d, d, d))
        now = _read_all(e)
        assert now['rp_min_dec_fac'] == 80 and now['cc_algo'] == 1 and now['np_cnp_dscp'] == 32
        assert e.vm.qmp_cmd('qom-get', path=path, property='cc') == now
        for name, bad in (('rp_min_dec_fac', '101'), ('cc_algo', '3'), ('np_enable', '2'),
                          ('timely_beta', '0'), ('rp_min_rate', 'abc'), ('rp_ai_rate', '-1'),
                          ('rp_byte_reset', '4294967296')):
            r = e.vm.run('echo %s > %s/%s' % (bad, d, name), check=False)
            assert r.rc != 0 and re.search('Invalid argument', r.output), (name, r.output)
        assert _read_all(e) == now
        assert e.vm.qmp_cmd('qom-get', path=path, property='cc') == now
    finally:
        for name in ('rp_min_dec_fac', 'cc_algo', 'np_cnp_dscp'):
            e.vm.run('echo %d > %s/%s' % (before[name], d, name))
    assert _read_all(e) == before


def test_rdma_statistic_lists_the_cnp_and_ecn_counters(topo):
    need_driver(topo, provider=False)
    e = one_device(topo)
    out = e.vm.run('rdma statistic show link %s/1' % e.ibdev).output
    for c in ('cnp_sent', 'cnp_received', 'ecn_marked_received'):
        assert re.search(r'\b%s \d+' % c, out), (c, out)
