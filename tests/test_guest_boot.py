# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: the guest boots with the qrnic devices, the driver binds, the
verbs devices are usable (ibv_devices, ibv_devinfo -v).  T1 and T2."""
import re

import pytest

from guest.vmlib import guest_dmesg, need_driver, topo  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1', 'T2'], indirect=True)]


def qrnic_count(v):
    return sum(1 for n in v.nics if n[0] == 'qrnic')


def test_pci_devices(topo):
    for v in topo.vms:
        out = v.run('lspci -n -d 1af4:10f7')
        assert len(out.splitlines()) == qrnic_count(v), out


def test_modules_loaded(topo):
    need_driver(topo, provider=False)
    for v in topo.vms:
        mods = {ln.split()[0] for ln in v.run('cat /proc/modules').splitlines()}
        assert {'ib_core', 'ib_uverbs', 'rdma_ucm', 'qrnic'} <= mods, sorted(mods)
        bound = v.run('ls /sys/bus/pci/drivers/qrnic/ | grep -c "^0000:" || true').strip()
        assert int(bound) == qrnic_count(v)


def test_interfaces_and_gids(topo):
    need_driver(topo, provider=False)
    eps = topo.endpoints(refresh=True)
    assert len(eps) == 2, eps
    for e in eps:
        assert e.netdev and e.ip and e.gid is not None, e
    srv, cli = topo.pair()
    assert {srv.ip, cli.ip} == {'10.0.0.1', '10.0.0.2'}


def test_ibv_devices(topo):
    need_driver(topo)
    for v in topo.vms:
        out = v.run('ibv_devices')
        devs = re.findall(r'^\s+(\S+)\s+[0-9a-f]{16}\s*$', out, re.M)
        assert len(devs) == qrnic_count(v), out


def test_sysfs_parent_is_the_pci_function(topo):
    """/sys/class/infiniband/<dev>/device is the qrnic PCI function (ib_device's parent), so
    tools that look for the device's PCI identity (rdma-core's PCI match, udev, rdma link)
    find it."""
    need_driver(topo, provider=False)
    for e in topo.endpoints():
        d = '/sys/class/infiniband/%s/device' % e.ibdev
        link = e.vm.run('readlink -f %s' % d).strip()
        assert re.search(r'/0000:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$', link), link
        ids = e.vm.run('cat %s/vendor %s/device' % (d, d)).split()
        assert ids == ['0x1af4', '0x10f7'], ids
        assert e.vm.run('basename $(readlink %s/driver)' % d).strip() == 'qrnic'


def test_ibv_devinfo_verbose(topo):
    need_driver(topo)
    for e in topo.endpoints():
        out = e.vm.run('ibv_devinfo -v -d %s' % e.ibdev)
        assert 'PORT_ACTIVE' in out, out
        assert re.search(r'link_layer:\s+Ethernet', out), out
        assert re.search(r'vendor_id:\s+0x1af4', out), out
        for key in ('max_qp:', 'max_cq:', 'max_mr_size:', 'max_pd:', 'atomic_cap:'):
            assert key in out, key
        # the RoCE v2 GID of the interface's IPv4 address is in the table
        assert re.search(r'GID\[\s*%d\]:\s+::ffff:%s, RoCE v2' % (e.gid, re.escape(e.ip)), out), out


def test_agent_basics(topo):
    v = topo.vm(0)
    r = v.run('echo out; echo err >&2; exit 3', check=False)
    assert (r.rc, r.out, r.err) == (3, 'out\n', 'err\n')
    r = v.run('sleep 30', timeout=2, check=False)
    assert r.timed_out and r.rc is None
    v.put('/tmp/agent-test', b'\x00\x01binary\xff')
    assert v.get('/tmp/agent-test') == b'\x00\x01binary\xff'
