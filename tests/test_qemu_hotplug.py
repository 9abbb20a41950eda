# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: realize and unrealize at run time.  A qrnic is hot-plugged
behind a pcie-root-port (which the test programs as firmware would),
brought up, connected over the hub to a qrnic on the root complex, and
ejected (ACPI PCI hotplug, as the guest's _EJ0 method does) while a 1 MiB
transfer is in flight: qrnic_exit() must tear down the device with its
bottom half scheduled and its retransmission timer armed."""
import random

import pytest

import qrnic_harness as h
from qtest import Qemu, abi, scenarios
from qtest.driver import World
from qtest.pci import PCI_CAP_ID_EXP, PciDevice, find_devices, setup_bridge
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

ACPI_PCIHP_ADDR_ICH9 = 0x0cc0       # hw/acpi/ich9.h
PCI_EJ_BASE, PCI_SEL_BASE = 0x08, 0x10
RP_SLOT = 3                          # root port at 00:03.0, its bus is bus 1


@pytest.fixture(scope='module')
def hp(qemu_binary):  # noqa: F811
    q = Qemu(qemu_binary, [
        '-netdev', 'hubport,id=p0,hubid=0', '-netdev', 'hubport,id=p1,hubid=0',
        '-device', 'qrnic,netdev=p0,id=qrnic0,mac=52:54:00:5e:00:01,addr=02.0',
        '-device', f'pcie-root-port,id=rp0,chassis=1,slot=1,addr={RP_SLOT:02x}.0'],
        name='hotplug')
    w = World([q])
    w.attach(q, 1, first_idx=0)
    rp = PciDevice(q, 0, RP_SLOT << 3)
    w.rp_mmio = setup_bridge(rp, 1, q.mmio)
    w.rp = rp
    w.devs[0].init()
    yield w
    w.close()


def plug(w, dev_id='hp0'):
    q = w.qemus[0]
    q.qmp('device_add', driver='qrnic', bus='rp0', id=dev_id, netdev='p1',
          mac='52:54:00:5e:00:02')
    w.rp_mmio.next = w.rp_mmio.base        # the slot's BAR space is reused each time
    d, = w.attach(q, 1, first_idx=1, bus=1, mmio=w.rp_mmio)
    return d


def eject(w, dev, dev_id='hp0'):
    """device_del, then the guest side of ACPI hotplug: select the bus, eject the slot."""
    q = w.qemus[0]
    q.events = [e for e in q.events if e['event'] != 'DEVICE_DELETED']
    q.qmp('device_del', id=dev_id)
    bsel = q.qmp('qom-get', path='/machine/peripheral/rp0/rp0', property='acpi-pcihp-bsel')
    q.outl(ACPI_PCIHP_ADDR_ICH9 + PCI_SEL_BASE, bsel)
    q.outl(ACPI_PCIHP_ADDR_ICH9 + PCI_EJ_BASE, 1 << (dev.pci.devfn >> 3))
    ev = q.qmp_wait_event('DEVICE_DELETED', 10)
    while ev['data'].get('device') != dev_id:
        ev = q.qmp_wait_event('DEVICE_DELETED', 10)
    w.detach(dev)


def test_device_add_invalid_properties(hp):
    q = hp.qemus[0]
    for props in ({'max-qp': 1}, {'mtu': 20000}, {'num-vectors': 0}, {'profile': 'x'}):
        with pytest.raises(Exception, match='qrnic'):
            q.qmp('device_add', driver='qrnic', bus='rp0', id='bad', **props)
        assert q.alive()
    assert find_devices(q, abi.PCI_VENDOR_ID, abi.PCI_DEVICE_ID, bus=1) == []


def test_hotplug_use_unplug_idle(hp):
    a = hp.devs[0]
    d = plug(hp)
    caps = dict(d.pci.capabilities())
    assert d.pci.cfg_read(caps[PCI_CAP_ID_EXP] + 2, 2) >> 4 & 0xf == 0   # PCIe endpoint
    d.init()
    conn = h.connect_rc(a, d, mtu=1024)
    scenarios.exercise_rc(conn, seed=5)
    eject(hp, d)
    assert find_devices(hp.qemus[0], abi.PCI_VENDOR_ID, abi.PCI_DEVICE_ID, bus=1) == []
    assert hp.qemus[0].alive()


@pytest.mark.parametrize('side', ['requester', 'responder'])
def test_unplug_during_1mib_transfer(hp, side):
    """Eject the hot-plugged device with traffic in flight; the remaining
    device sees its peer vanish (its QP retries, then RETRY_EXC_ERR)."""
    a = hp.devs[0]
    for cycle in range(2):
        d = plug(hp)
        d.init()
        req, resp = (d, a) if side == 'requester' else (a, d)
        conn = h.connect_rc(req, resp, mtu=1024)
        la, rb = req.reg_mr(conn.pda, 1 << 20), resp.reg_mr(conn.pdb, 1 << 20)
        la.fill_random(random.Random(cycle))
        n = scenarios.start_stuck_traffic(conn, la, rb)
        eject(hp, d)
        assert hp.qemus[0].alive()
        assert a.reg_read('VERSION') == abi.ABI_VERSION
        # the transfer was still running when the device went away
        assert conn.cqa.peek() < n, conn.cqa.poll()
        if side == 'responder':
            hp.clock_rate = 50.0
            try:
                got = conn.cqa.wait(n, 60)
            finally:
                hp.clock_rate = 1.0
            st = [c['status_name'] for c in got]
            assert 'RETRY_EXC_ERR' in st and set(st) <= {'SUCCESS', 'RETRY_EXC_ERR',
                                                          'WR_FLUSH_ERR'}, st
        a.function_reset()
        a.init()
    # the survivor works with a freshly plugged peer
    d = plug(hp)
    d.init()
    scenarios.healthy(hp, a, d)
    eject(hp, d)
