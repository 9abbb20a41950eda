# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: QUERY_CC / SET_CC (ABI 1.9, spec 6.6.22) through the QEMU
device over qtest: the configured value is the QEMU property (qom-get),
every parameter round-trips, out-of-range values are refused with nothing
changed, and the run-time values survive a migration (the device stream's
CC.. section) while the properties stay what the command line says."""
import pytest

import qrnic_harness as h
from qtest.fixtures import qemu_binary, shared_world  # noqa: F401  (fixture)
from test_qemu_migration import migrate

pytestmark = pytest.mark.qemu

TABLE = {p['name']: p for p in h.config_params()}


qworld, world = shared_world('ccparams', dev_opts='cc-algo=1,rp-ai-rate=9,np-enable=on')


def all_cc(d):
    return {n: d.query_cc(n)['value'] for n in h.CC_PARAMS}


def test_caps_and_the_configured_values_are_the_properties(world):
    d = world.devs[0]
    assert d.reg_read('CAPS') & h.CAP_CC_PARAMS
    q = d.qemu
    for name in h.CC_PARAMS:
        prop = TABLE[name]['prop']
        r = d.query_cc(name)
        qom = q.qmp('qom-get', path=d.qom_path, property=prop)
        assert r['configured'] == r['value'] == int(qom), name
        assert (r['min'], r['max']) == (TABLE[name]['min'], TABLE[name]['max'])
    assert d.query_cc('cc_algo')['value'] == 1 and d.query_cc('rp_ai_rate')['value'] == 9


def test_round_trip_and_refusals(world):
    d = world.devs[0]
    before = all_cc(d)
    for name in h.CC_PARAMS:
        p = TABLE[name]
        d.set_cc(name, p['max'])
        assert d.query_cc(name)['value'] == p['max']
        d.set_cc(name, before[name])
        assert d.set_cc(name, p['max'] + 1, check=False) == h.AQ['BAD_PARAM']
        assert d.last_cqe()['detail'] == 12            # the value field
        assert all_cc(d) == before, name
    assert d.set_cc(len(h.CC_PARAMS), 0, check=False) == h.AQ['BAD_PARAM']
    assert d.last_cqe()['detail'] == 8                 # the param field
    # a function reset brings back the properties
    d.set_cc('rp_ai_rate', 500)
    world.reset_devices()
    assert d.query_cc('rp_ai_rate')['value'] == 9


def test_run_time_values_survive_migration(world, tmp_path):
    a, b = world.devs
    a.set_cc('rp_min_dec_fac', 70)
    a.set_cc('cc_algo', 2)
    b.set_cc('np_min_time_between_cnps', 33)
    want = [all_cc(a), all_cc(b)]
    st, dst = migrate(world, tmp_path / 'mig.bin', name='ccparams-dst')
    assert [all_cc(a), all_cc(b)] == want
    # the properties (configured values) are the command line's, not the changes
    assert a.query_cc('rp_min_dec_fac')['configured'] == 50
    assert int(dst.qmp('qom-get', path=a.qom_path, property='cc-algo')) == 1
    blob = (tmp_path / 'mig.bin').read_bytes()
    assert blob.count(b'CC..') >= 2                    # one section per device


def test_the_cc_property_shows_the_values_in_use(world):
    d = world.devs[1]
    q = d.qemu
    assert q.qmp('qom-get', path=d.qom_path, property='cc') == all_cc(d)
    d.set_cc('timely_delta', 77)
    got = q.qmp('qom-get', path=d.qom_path, property='cc')
    assert got['timely_delta'] == 77 and got == all_cc(d)
    assert int(q.qmp('qom-get', path=d.qom_path, property='timely-delta')) == 10
