# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: the QEMU side of the device: -device properties and their
limits, PCI identity and capabilities, BAR and MSI-X layout, MAC address,
trace events, LOG_GUEST_ERROR, the migration blocker, hotplug/unplug."""
import re

import pytest

import qrnic_harness as h
from qtest import Qemu, abi, scenarios
from qtest.driver import World
from qtest.pci import PCI_CAP_ID_EXP, PCI_CAP_ID_MSIX
from qtest.qemu import run_device_help, try_start
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

PROPS = {  # property -> default shown by -device qrnic,help
    'max-qp': '1024', 'max-qp-wr': '8192', 'max-cq': '1024', 'max-cqe': '32768',
    'max-mr': '4096', 'max-mr-size': '4294967296', 'max-mtt': '1048576', 'max-pd': '1024',
    'max-ah': '1024', 'max-eq': '64', 'max-uctx': '64', 'max-srq': '1024', 'num-vectors': '8',
    'gid-table-len': '16', 'mtu': '4200', 'loss-window': 'on', 'profile': None,
    'netdev': None, 'mac': None}


def test_device_help_lists_properties(qemu_binary):  # noqa: F811
    rc, out = run_device_help(qemu_binary)
    assert rc == 0, out
    for prop, default in PROPS.items():
        m = re.search(rf'^\s*{re.escape(prop)}=<[^>]+>(.*)$', out, re.M)
        assert m, f'property {prop} missing from -device qrnic,help:\n{out}'
        if default is not None:
            assert f'(default: {default})' in m.group(1), (prop, m.group(0))


@pytest.mark.parametrize('opt,msg', [
    ('max-qp=1', "'max-qp'"), ('max-qp=65537', "'max-qp'"), ('mtu=100', "'mtu'"),
    ('mtu=9001', "'mtu'"), ('profile=bogus', 'profile'), ('num-vectors=0', "'num-vectors'"),
    ('num-vectors=2049', "'num-vectors'"), ('max-uctx=0', "'max-uctx'"),
    ('max-uctx=4097', "'max-uctx'"), ('gid-table-len=0', "'gid-table-len'"),
    ('gid-table-len=257', "'gid-table-len'"), ('max-cqe=1000', 'powers of two'),
    ('max-qp-wr=3', 'powers of two'), ('max-qp-wr=65536', "'max-qp-wr'"),
    ('max-mr=1', "'max-mr'"), ('max-mr-size=4095', "'max-mr-size'"),
    ('max-mtt=0', "'max-mtt'"), ('max-eq=1', "'max-eq'"), ('max-pd=1', "'max-pd'"),
    ('max-ah=1', "'max-ah'"), ('max-cq=1', "'max-cq'"), ('max-srq=1', "'max-srq'"),
    ('mac=01:00:5e:00:00:01', "'mac'"), ('max-qp=abc', 'max-qp'), ('loss-window=maybe', 'loss-window'),
])
def test_invalid_property_rejected(qemu_binary, opt, msg):  # noqa: F811
    rc, out = try_start(qemu_binary, ['-device', f'qrnic,{opt}'])
    assert rc not in (None, 0), f'QEMU accepted -device qrnic,{opt}:\n{out}'
    assert msg in out and 'qrnic' in out, out


@pytest.fixture(scope='module')
def limits(qemu_binary):  # noqa: F811
    """One QEMU with a minimal and a maximal device."""
    q = Qemu(qemu_binary, [
        '-device', 'qrnic,id=small,addr=04.0,max-qp=4,max-cq=2,max-mr=2,max-pd=2,max-ah=2,'
                   'max-eq=2,max-uctx=1,num-vectors=1,mtu=576,max-qp-wr=2,max-cqe=2,'
                   'gid-table-len=1,max-mtt=1,max-mr-size=4096,mac=02:00:00:00:00:01',
        '-device', 'qrnic,id=big,addr=05.0,num-vectors=2048,max-uctx=4096,mtu=9000,'
                   'max-eq=2048,profile=functional,mac=02:00:00:00:00:02',
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
    assert bars[abi.BAR_DB][1:] == (64 * h.DB_PAGE_SIZE, True)
    assert abi.BAR_MSIX in bars
    info = p.msix_info()
    assert info['vectors'] == 8 and info['table_bir'] == abi.BAR_MSIX
    assert info['pba_bir'] == abi.BAR_MSIX
    assert set(bars) == {0, 2, 4}


def test_register_reset_values(limits):
    d = next(x for x in limits.devs if x.pci.devfn == 6 << 3)
    expect = {'VERSION': abi.ABI_VERSION, 'CTRL': 0, 'STATUS': h.STATUS_READY, 'FATAL_CODE': 0,
              'NUM_DB_PAGES': 64, 'NUM_VECTORS': 8, 'SCRATCH': 0, 'AQ_CTRL': 0,
              'AQ_STATUS': 0, 'AQ_SQ_CI': 0, 'ETH_CTRL': 0, 'ETH_MTU': 4200,
              'CAPS': 0x7ff, 'PORT_STATUS': 1}
    for reg, v in expect.items():
        assert d.reg_read(reg) == v, reg


def test_limits_reach_the_device(limits):
    by = {x.pci.devfn >> 3: x for x in limits.devs}
    small, big = by[4], by[5]
    assert small.reg_read('NUM_VECTORS') == 1 and small.pci.msix_vectors == 1
    assert small.reg_read('NUM_DB_PAGES') == 1 and small.pci.bars[2][1] == h.DB_PAGE_SIZE
    assert small.reg_read('ETH_MTU') == 576
    assert big.reg_read('NUM_VECTORS') == 2048 and big.pci.msix_vectors == 2048
    assert big.reg_read('NUM_DB_PAGES') == 4096
    assert big.pci.bars[2][1] == 4096 * h.DB_PAGE_SIZE
    assert big.reg_read('ETH_MTU') == 9000
    # the small device works within its limits: AQ, 1 EQ... and refuses more
    small.bringup()
    attr = small.query_device()
    assert (attr['max_qp'], attr['max_mr'], attr['max_eq'], attr['num_vectors'],
            attr['gid_tbl_len'], attr['max_mtt'], attr['max_mr_size']) == \
        (4, 2, 2, 1, 1, 1, 4096)
    assert small.query_port()['eth_mtu'] == 576
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


def test_migration_is_blocked(limits):
    q = limits.qemus[0]
    blocked = q.qmp('query-migrate').get('blocked-reasons', [])
    assert any('qrnic' in r for r in blocked), blocked
    with pytest.raises(Exception, match='non-migratable device.*qrnic'):
        q.qmp('migrate', uri='exec:cat >/dev/null')
    assert q.alive()


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
