# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: the storage recipes of docs/storage.md work as written
(issue 18: "the recipe in docs/storage.md works copied line by line").

The recipes are the fenced blocks of docs/storage.md whose info string is
`sh <protocol>-<role>` (nvmeof-target, nvmeof-host, nvmeof-host-down,
nvmeof-target-down; nfs-server, nfs-client, ...; iser-target,
iser-initiator, ...).  Each block's first line may set the addresses
(TARGET=, SERVER=, HOST=): the test replaces their values with the VMs'
own and changes nothing else, writes the block to a file in the guest and
runs it with `bash -e -x` (line by line, stopping at the first line that
fails, each line traced in the failure message).

T2: the target/server in vm0, the host/client/initiator in vm1, across the
dgram wire.  Per protocol: the target block, the host block; then 8 MiB of
random data written with dd (O_DIRECT) to the remote disk (NVMe-oF, iSER)
or to a file on the mount (NFS) and read back (sha256); the host's
teardown block, the host block again (iSER: logout and login, waiting on the target) and
the data read back once more; then both teardown blocks.  It checks that the transport was RDMA
(nvme-rdma's controller, `proto=rdma` mount, iSER iface), that both qrnic
ports sent and received and nothing looped back, and that the teardowns
left no module loaded.  One test per protocol; the three took 105 s
under TCG with the boot (host load average 8)."""
import os
import re

import pytest

from guest.storage import sha256_read, sha256_write
from guest.vmlib import guest_dmesg, hw_counters, need_driver, topo  # noqa: F401


DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'docs', 'storage.md')
DATA_MB = 8
# the address variables a block's first line may set: which endpoint's address each is
ADDRS = {'TARGET': 'srv', 'SERVER': 'srv', 'HOST': 'cli'}
# protocol: (server role, client role, modules that must be gone after the teardowns)
PROTOCOLS = {
    'nvmeof': ('target', 'host', ('nvmet', 'nvmet_rdma', 'nvme_rdma', 'null_blk')),
    'nfs': ('server', 'client', ('nfsd', 'rpcrdma', 'nfsv4')),
    'iser': ('target', 'initiator', ('ib_isert', 'iscsi_target_mod', 'target_core_mod', 'ib_iser')),
}
# the blocks that set a protocol up, in order, and where each runs (default: the
# server's block, then the client's).  iSER: the initiator logs in with a manual
# scan, the target shows the session, then the initiator scans (docs/storage.md:
# LIO's login race)
SETUP = {'iser': [('srv', 'iser-target'), ('cli', 'iser-initiator'),
                  ('srv', 'iser-target-session'), ('cli', 'iser-initiator-scan')]}
# the blocks that make a new connection (default: the client's teardown and setup);
# iSER logs out and in again, the target between the steps
AGAIN = {'iser': [('cli', 'iser-initiator-logout'), ('srv', 'iser-target-nosession'),
                  ('cli', 'iser-initiator-login'), ('srv', 'iser-target-session'),
                  ('cli', 'iser-initiator-scan')]}


def setup_steps(proto):
    srole, crole, _mods = PROTOCOLS[proto]
    return SETUP.get(proto, [('srv', '%s-%s' % (proto, srole)), ('cli', '%s-%s' % (proto, crole))])


def again_steps(proto):
    crole = PROTOCOLS[proto][1]
    return AGAIN.get(proto, [('cli', '%s-%s-down' % (proto, crole)), ('cli', '%s-%s' % (proto, crole))])


FENCE = re.compile(r'^```sh ([a-z]+-[a-z-]+)\s*$')


def recipe_blocks(path=DOC):
    """{name: [lines]} of the fenced `sh <protocol>-<role>` blocks of docs/storage.md."""
    blocks, name = {}, None
    with open(path, encoding='utf-8') as f:
        for ln in f.read().splitlines():
            if name is None:
                m = FENCE.match(ln)
                if m:
                    name = m.group(1)
                    assert name not in blocks, 'block %s twice in %s' % (name, path)
                    blocks[name] = []
            elif ln.startswith('```'):
                name = None
            else:
                blocks[name].append(ln)
    assert name is None, 'unterminated block in %s' % path
    return blocks


def substitute(lines, addrs):
    """The block's text with the first line's address values replaced by addrs[VAR];
    nothing else changes."""
    first = lines[0] if lines else ''
    words = first.split()
    names = [w.split('=', 1)[0] for w in words]
    if words and all(re.fullmatch(r'[A-Z_]+=\S+', w) for w in words) and all(n in ADDRS for n in names):
        lines = [' '.join('%s=%s' % (n, addrs[n]) for n in names)] + lines[1:]
    return '\n'.join(lines) + '\n'


def test_recipe_blocks_parse():
    """(unit tier) Every protocol has its four blocks; addresses only in the
    first lines, which set every address variable the block uses."""
    blocks = recipe_blocks()
    for proto, (srole, crole, _mods) in PROTOCOLS.items():
        for role in (srole, crole, crole + '-down', srole + '-down'):
            assert proto + '-' + role in blocks, (proto, role, sorted(blocks))
        for _where, name in setup_steps(proto) + again_steps(proto):
            assert name in blocks, (name, sorted(blocks))
    for name, lines in blocks.items():
        assert lines and all(ln.strip() for ln in lines), name
        for ln in lines[1:]:
            assert not re.search(r'\b10\.0\.0\.\d+\b', ln), 'address outside the first line of %s: %r' % (name, ln)
        used = set(re.findall(r'\$(%s)\b' % '|'.join(ADDRS), '\n'.join(lines)))
        first = substitute(lines, dict.fromkeys(ADDRS, '192.0.2.9')).splitlines()[0]
        assert all('%s=192.0.2.9' % v in first.split() for v in used), (name, used, first)


def run_block(vm, blocks, name, addrs, timeout=300):
    """Run the recipe block name in vm with bash -e -x; fails with its trace."""
    path = '/tmp/qrnic-recipe-%s.sh' % name
    vm.put(path, substitute(blocks[name], addrs))
    # output to a file, not the agent's pipe: the daemons a block starts
    # (rpcbind, rpc.mountd, iscsid) keep their stdout open
    r = vm.run('bash -e -x %s > %s.log 2>&1 </dev/null; rc=$?; cat %s.log; exit $rc' % (path, path, path),
               timeout=timeout, check=False)
    assert r.ok, 'recipe block %s failed in %s (rc %s):\n%s' % (name, vm.name, r.rc, r.output[-3000:])
    return r.out


def remote_disk(vm, proto):
    """The host's view of the export: a block device (nvmeof, iser) or a file path (nfs)."""
    if proto == 'nfs':
        mounts = vm.run('grep " /mnt/qrnic-nfs " /proc/mounts')
        assert 'proto=rdma' in mounts, mounts
        return '/mnt/qrnic-nfs/recipe-data'
    if proto == 'nvmeof':
        script = r'''
for i in $(seq 100); do
  for c in /sys/class/nvme/nvme*; do
    [ "$(cat $c/subsysnqn 2>/dev/null)" = nqn.2026-12.io.qrnic:frwr-test ] || continue
    [ "$(cat $c/state)" = live ] && [ "$(cat $c/transport)" = rdma ] || continue
    # the namespace's disk (native multipath: /sys/block/nvmeXnY, its paths nvmeXcZnY hidden)
    for b in /sys/block/nvme*n*; do
      case ${b##*/} in *c*) continue ;; esac
      [ -b /dev/${b##*/} ] && { echo /dev/${b##*/}; exit 0; }
    done
  done
  sleep 0.2
done; ls -l /sys/class/nvme/; exit 1'''
    else:
        script = r'''
for i in $(seq 100); do
  d=$(iscsiadm -m session -P3 2>/dev/null | sed -n 's/.*Attached scsi disk \(sd[a-z]*\).*State: running.*/\1/p' | head -n1)
  [ -n "$d" ] && [ -b /dev/$d ] && iscsiadm -m session -P3 | grep -q 'Iface Transport: iser' && { echo /dev/$d; exit 0; }
  sleep 0.2
done; iscsiadm -m session -P3; exit 1'''
    return vm.run(script, timeout=180).strip().split()[-1]


def cleanup(proto, svm, cvm):
    """Whatever a failed run left (the other tests' teardowns; no check)."""
    if proto == 'nvmeof':
        from test_guest_nvmeof import nvmet_teardown
        nvmet_teardown(cvm)
        nvmet_teardown(svm)
    elif proto == 'nfs':
        from test_guest_nfs_rdma import nfs_teardown
        nfs_teardown(cvm)
        nfs_teardown(svm)
    else:
        from test_guest_iser import initiator_teardown, target_teardown
        initiator_teardown(cvm)
        target_teardown(svm)


@pytest.mark.guest
@pytest.mark.slow
@pytest.mark.parametrize('topo', ['T2'], indirect=True)
@pytest.mark.parametrize('proto', sorted(PROTOCOLS))
def test_storage_recipe(topo, guest_dmesg, proto):
    need_driver(topo, provider=False)     # kernel only
    srv, cli = topo.pair()
    svm, cvm = srv.vm, cli.vm
    assert svm is not cvm
    blocks = recipe_blocks()
    srole, crole, mods = PROTOCOLS[proto]
    addrs = {v: (srv.ip if ep == 'srv' else cli.ip) for v, ep in ADDRS.items()}
    size = DATA_MB << 20
    hw0 = {vm.name: hw_counters(vm, ep.ibdev) for vm, ep in ((svm, srv), (cvm, cli))}
    done = False
    try:
        vms = {'srv': svm, 'cli': cvm}
        for where, name in setup_steps(proto):
            run_block(vms[where], blocks, name, addrs)
        dev = remote_disk(cvm, proto)
        digest = sha256_write(cvm, dev, size)
        assert sha256_read(cvm, dev, size) == digest
        if proto == 'nfs':      # the server's own copy
            assert sha256_read(svm, '/srv/qrnic-nfs/recipe-data', size, iflag='') == digest
        hw1 = {vm.name: hw_counters(vm, ep.ibdev) for vm, ep in ((svm, srv), (cvm, cli))}
        # across the wire: both ports sent and received, nothing looped back, no failed completion
        for n in hw1:
            d = {k: hw1[n][k] - hw0[n][k] for k in ('tx_packets', 'rx_packets', 'loopback_frames', 'cqe_errors')}
            assert d['tx_packets'] > 0 and d['rx_packets'] > 0 and d['loopback_frames'] == 0, (n, d)
            assert d['cqe_errors'] == 0, (n, d)

        # the host's teardown, the host block again (iSER: logout, login): the data is still there
        for where, name in again_steps(proto):
            run_block(vms[where], blocks, name, addrs)
        dev = remote_disk(cvm, proto)
        if proto == 'nfs':
            cvm.run('echo 3 > /proc/sys/vm/drop_caches')
        assert sha256_read(cvm, dev, size) == digest
        run_block(cvm, blocks, '%s-%s-down' % (proto, crole), addrs)
        run_block(svm, blocks, '%s-%s-down' % (proto, srole), addrs)
        for vm in (svm, cvm):
            left = vm.run('for m in %s; do [ -d /sys/module/$m ] && echo $m; done; true' % ' '.join(mods)).split()
            assert not left, 'still loaded in %s after the teardown blocks: %s' % (vm.name, left)
        print('\nrecipe %s: %s-%s in %s, %s-%s in %s, %d MiB verified twice (sha256) on %s'
              % (proto, proto, srole, svm.name, proto, crole, cvm.name, DATA_MB, dev))
        done = True
    finally:
        if not done:
            cleanup(proto, svm, cvm)
    problems = guest_dmesg.problems()
    assert not problems, '\n'.join(problems)
