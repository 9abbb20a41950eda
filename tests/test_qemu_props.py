# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: the QEMU side of the device: -device properties and their
limits, PCI identity and capabilities, BAR and MSI-X layout, MAC address,
trace events, LOG_GUEST_ERROR, no migration blocker, hotplug/unplug."""
import re

import pytest

import qrnic_harness as h
from qtest import Qemu, abi, scenarios
from qtest.driver import World
from qtest.pci import PCI_CAP_ID_EXP, PCI_CAP_ID_MSIX
from qtest.qemu import run_device_help, try_start
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

# The configuration parameters with a -device property (model/config.c's
# table, through the harness library); the MAC is QEMU's NIC property.
CONFIG = [p for p in h.config_params() if p['prop'] and p['type'] != 'mac']
BY_PROP = {p['prop']: p for p in CONFIG}
PROPS = {  # property -> default shown by -device qrnic,help (None: not checked)
    **{p['prop']: h.config_value_str(p, p['default']) for p in CONFIG},
    'profile': None, 'netdev': None, 'mac': None}


def test_device_help_lists_properties(qemu_binary):  # noqa: F811
    rc, out = run_device_help(qemu_binary)
    assert rc == 0, out
    assert len(CONFIG) >= 15
    for prop, default in PROPS.items():
        m = re.search(rf'^\s*{re.escape(prop)}=<[^>]+>(.*)$', out, re.M)
        assert m, f'property {prop} missing from -device qrnic,help:\n{out}'
        if default is not None:
            assert f'(default: {default})' in m.group(1), (prop, m.group(0))
        if prop in BY_PROP:
            assert BY_PROP[prop]['help'] in m.group(1), (prop, m.group(0))


def out_of_range():
    """(option, message): every bound of every numeric property, one past it."""
    cases = []
    for p in CONFIG:
        if p['type'] == 'bool':
            continue
        lo, hi = p['min'], p['max']
        pow2 = 'a power of two in ' if p['pow2'] else ''
        for v in ([lo - 1] if lo > 0 else []) + [hi + 1]:
            if p['type'] == 'uint32' and v > 0xffffffff:
                continue
            cases.append((f"{p['prop']}={v}",
                          f"qrnic: property '{p['prop']}' must be {'' if pow2 else 'in '}"
                          f"{pow2}{lo}..{hi} (got {v})"))
        if p['pow2']:
            v = lo + 1 if lo > 1 else 3
            cases.append((f"{p['prop']}={v}",
                          f"qrnic: property '{p['prop']}' must be a power of two in "
                          f"{lo}..{hi} (got {v})"))
    return cases


@pytest.mark.parametrize('opt,msg', out_of_range() + [
    ('profile=bogus', 'profile'),
    ('mac=01:00:5e:00:00:01',
     "qrnic: property 'mac' must be a unicast address (got 01:00:5e:00:00:01)"),
    ('max-qp=abc', 'max-qp'), ('loss-window=maybe', 'loss-window'),
])
def test_invalid_property_rejected(qemu_binary, opt, msg):  # noqa: F811
    rc, out = try_start(qemu_binary, ['-device', f'qrnic,{opt}'])
    assert rc not in (None, 0), f'QEMU accepted -device qrnic,{opt}:\n{out}'
    assert msg in out and 'qrnic' in out, out


MIN = {p: c['min'] for p, c in BY_PROP.items()}
MAX = {p: c['max'] for p, c in BY_PROP.items()}
DFLT = {p: c['default'] for p, c in BY_PROP.items()}
# the maximal device: the properties whose maximum costs little
BIG = ('num-vectors', 'max-uctx', 'mtu', 'max-eq')


@pytest.fixture(scope='module')
def limits(qemu_binary):  # noqa: F811
    """One QEMU with a minimal (every numeric property at its minimum) and a
    maximal device, and two with the defaults."""
    small = ','.join(f'{p}={MIN[p]}' for p, c in BY_PROP.items() if c['type'] != 'bool')
    big = ','.join(f'{p}={MAX[p]}' for p in BIG)
    q = Qemu(qemu_binary, [
        '-device', f'qrnic,id=small,addr=04.0,{small},mac=02:00:00:00:00:01',
        '-device', f'qrnic,id=big,addr=05.0,{big},profile=functional,mac=02:00:00:00:00:02',
        '-device', 'qrnic,id=dflt1,addr=06.0', '-device', 'qrnic,id=dflt2,addr=07.0'],
        name='limits')
    w = World([q])
    w.attach(q, 4)
    yield w
    w.close()


def test_pci_identity_and_layout(limits):
    d = next(x for x in limits.devs if x.pci.devfn == 6 << 3)
    p = d.pci
    assert p.vendor_id == abi.PCI_VENDOR_ID and p.device_id == abi.PCI_DEVICE_ID
    assert p.cfg_read(0x2c, 2) == abi.PCI_SUBSYS_VENDOR_ID
    assert p.cfg_read(0x2e, 2) == abi.PCI_SUBSYS_ID
    assert p.cfg_read(0x08, 1) == abi.PCI_REVISION
    assert p.cfg_read(0x08) >> 8 == abi.PCI_CLASS
    assert p.cfg_read(0x3d, 1) == 0, 'no legacy interrupt pin'
    caps = dict(p.capabilities())
    assert PCI_CAP_ID_EXP in caps and PCI_CAP_ID_MSIX in caps
    # on the root complex: a root-complex integrated endpoint (type 9)
    assert p.cfg_read(caps[PCI_CAP_ID_EXP] + 2, 2) >> 4 & 0xf == 9
    bars = p.bars
    assert bars[abi.BAR_REGS][1:] == (h.BAR0_SIZE, True)
    assert bars[abi.BAR_DB][1:] == (DFLT['max-uctx'] * h.DB_PAGE_SIZE, True)
    assert abi.BAR_MSIX in bars
    info = p.msix_info()
    assert info['vectors'] == DFLT['num-vectors'] and info['table_bir'] == abi.BAR_MSIX
    assert info['pba_bir'] == abi.BAR_MSIX
    assert set(bars) == {0, 2, 4}


def test_register_reset_values(limits):
    d = next(x for x in limits.devs if x.pci.devfn == 6 << 3)
    expect = {'VERSION': abi.ABI_VERSION, 'CTRL': 0, 'STATUS': h.STATUS_READY, 'FATAL_CODE': 0,
              'NUM_DB_PAGES': DFLT['max-uctx'], 'NUM_VECTORS': DFLT['num-vectors'],
              'SCRATCH': 0, 'AQ_CTRL': 0, 'AQ_STATUS': 0, 'AQ_SQ_CI': 0, 'ETH_CTRL': 0,
              'ETH_MTU': DFLT['mtu'],
              'CAPS': 0x7ffff, 'PORT_STATUS': 1}
    for reg, v in expect.items():
        assert d.reg_read(reg) == v, reg


def test_limits_reach_the_device(limits):
    by = {x.pci.devfn >> 3: x for x in limits.devs}
    small, big = by[4], by[5]
    nvec, nuctx, mtu = MIN['num-vectors'], MIN['max-uctx'], MIN['mtu']
    assert small.reg_read('NUM_VECTORS') == nvec and small.pci.msix_vectors == nvec
    assert small.reg_read('NUM_DB_PAGES') == nuctx
    assert small.pci.bars[2][1] == nuctx * h.DB_PAGE_SIZE
    assert small.reg_read('ETH_MTU') == mtu
    nvec, nuctx, mtu = MAX['num-vectors'], MAX['max-uctx'], MAX['mtu']
    assert big.reg_read('NUM_VECTORS') == nvec and big.pci.msix_vectors == nvec
    assert big.reg_read('NUM_DB_PAGES') == nuctx
    assert big.pci.bars[2][1] == nuctx * h.DB_PAGE_SIZE
    assert big.reg_read('ETH_MTU') == mtu
    # the small device works within its limits: AQ, 1 EQ... and refuses more
    # (the comments below say what happens at today's minimums)
    small.bringup()
    attr = small.query_device()
    for p, c in BY_PROP.items():
        if c['name'] in attr:
            assert attr[c['name']] == MIN[p], p
    assert small.query_port()['eth_mtu'] == MIN['mtu']
    eq = small.create_eq(4, vector=0)
    assert small.create_eq(4, vector=1, check=False) is None
    assert small.last_status == h.AQ['BAD_PARAM']
    pd = small.alloc_pd()
    assert small.alloc_pd(check=False) is None                 # max-pd=2: PD 0 is reserved
    assert small.last_status == h.AQ['NO_RESOURCES']
    small.create_cq(1, eq=eq)
    assert small.create_cq(2, eq=eq, check=False) is None      # max-cqe=2 -> log 1
    assert small.alloc_uctx(check=False) is None               # max-uctx=1: only uctx 0
    assert small.reg_mr(pd, 4096, iova=0x10000) is not None
    assert small.reg_mr(pd, 4096, iova=0x20000, check=False) is None     # max-mtt=1
    assert small.last_status == h.AQ['NO_RESOURCES']
    small.function_reset()


def test_mac_default_and_property(limits):
    by = {x.pci.devfn >> 3: x for x in limits.devs}
    assert by[4].mac == bytes.fromhex('020000000001')
    assert by[5].mac == bytes.fromhex('020000000002')
    # no mac=: QEMU's usual 52:54:00:12:34:xx, different for every NIC
    d1, d2 = by[6].mac, by[7].mac
    assert d1[:3] == b'\x52\x54\x00' and d2[:3] == b'\x52\x54\x00'
    assert d1 != d2, 'two qrnic devices without mac= got the same MAC address'
    q = limits.qemus[0]
    assert q.qmp('qom-get', path='/machine/peripheral/dflt1', property='mac') == \
        ':'.join(f'{b:02x}' for b in d1)


def test_migration_is_not_blocked(limits):
    """The device migrates (tests/test_qemu_migration.py): no blocker."""
    q = limits.qemus[0]
    blocked = q.qmp('query-migrate').get('blocked-reasons', [])
    assert not any('qrnic' in r for r in blocked), blocked


def test_trace_events_and_guest_errors(qemu_binary, tmp_path):  # noqa: F811
    """-trace 'qrnic_*' (log backend) and -d guest_errors into one -D file."""
    log = tmp_path / 'qemu.log'
    w = World.single(qemu_binary, 2, name='trace',
                     extra_args=['-trace', 'qrnic_*', '-d', 'guest_errors', '-D', str(log)])
    try:
        a, b = w.devs
        scenarios.healthy(w, a, b)
        a.db_write(h.DB_SQ, 999 | (1 << 32))         # no such QP: a guest error
        a.reg_read(0x7c)                               # undefined register
        a.reg_write('VERSION', 1)                      # read-only register
        w.settle()
        assert w.alive()
    finally:
        w.close()
    text = log.read_text(errors='replace')
    for ev in ('qrnic_reset', 'qrnic_mmio_read', 'qrnic_mmio_write', 'qrnic_db_write',
               'qrnic_irq', 'qrnic_tx', 'qrnic_rx', 'qrnic_event', 'qrnic_err_guest'):
        assert re.search(rf'^(\S*:)?{ev} ', text, re.M), f'trace event {ev} missing'
    assert 'no such QP' in text
    assert re.search(r'^qrnic: .*', text, re.M), 'no LOG_GUEST_ERROR line'
