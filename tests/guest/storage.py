# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers shared by the storage-over-RDMA guest tests (NVMe-oF, NFS over
RDMA, iSER; docs/storage.md): fio with data verification, and sha256 of
data written with dd."""
import json

# fio: two jobs, one after the other (stonewall), random writes of 4 KiB and
# of 128 KiB blocks at iodepth 16, O_DIRECT, every block with a crc32c header
# that fio checks when it reads the data back (do_verify).  With --verify_only
# fio replays the same writes (same seed) without doing them and checks what
# the device holds: the data survived a disconnect/remount.
FIO_JOB = '''[global]
ioengine=libaio
direct=1
iodepth=16
verify=crc32c
verify_fatal=1
verify_dump=1
do_verify=1
randrepeat=1
rw=randwrite
size=%(size)d
%(where)s
[small]
bs=4k
%(small)s
[large]
stonewall
bs=128k
%(large)s
'''


def fio_job(size, dev=None, offset=0, directory=None):
    """A fio job file: on the block device dev (two regions of size bytes from
    offset), or as two files of size bytes in directory."""
    if dev is not None:
        return FIO_JOB % {'size': size, 'where': 'filename=%s' % dev,
                          'small': 'offset=%d' % offset, 'large': 'offset=%d' % (offset + size)}
    return FIO_JOB % {'size': size, 'where': 'directory=%s' % directory,
                      'small': 'filename=fio-small', 'large': 'filename=fio-large'}


def fio_verify(vm, job, verify_only=False, timeout=600):
    """Run the fio job file job in vm; returns (bytes written, bytes read and
    verified).  Fails (AssertionError) on any fio or verification error."""
    vm.put('/tmp/qrnic-storage.fio', job)
    r = vm.run('fio --output-format=json %s /tmp/qrnic-storage.fio'
               % ('--verify_only' if verify_only else ''), timeout=timeout, check=False)
    assert r.ok, 'fio%s failed:\n%s' % (' --verify_only' if verify_only else '', r.output[-4000:])
    res = json.loads(r.out[r.out.index('{'):])
    wrote = read = 0
    for j in res['jobs']:
        assert j['error'] == 0, j
        wrote += j['write']['io_bytes']
        read += j['read']['io_bytes']
    return wrote, read


def sha256_write(vm, path, size, oflag='direct', seed='/tmp/qrnic-storage-pattern'):
    """Write size random bytes to path with dd (bs 1 MiB) and return their sha256."""
    out = vm.run('set -e; head -c %d /dev/urandom > %s; dd if=%s of=%s bs=1M %s status=none; '
                 'sync; sha256sum < %s' % (size, seed, seed, path,
                                           ('oflag=%s' % oflag) if oflag else '', seed), timeout=300)
    return out.split()[0]


def sha256_read(vm, path, size, iflag='direct'):
    out = vm.run('dd if=%s bs=1M count=%d %s status=none | head -c %d | sha256sum'
                 % (path, (size + (1 << 20) - 1) >> 20, ('iflag=%s' % iflag) if iflag else '', size),
                 timeout=300)
    return out.split()[0]


def dd_verify(vm, bdev, region, cases, pattern, timeout=300):
    """Write `region` random bytes to the guest file `pattern`, then with dd
    O_DIRECT each (size, offset) of `cases` from it to the same offset of
    bdev; read each back (O_DIRECT) and compare sha256 with the pattern's."""
    vm.run('head -c %d /dev/urandom > %s' % (region, pattern))
    script = ['set -e']
    for size, off in cases:
        script.append('dd if=%s of=%s bs=%d count=1 iflag=skip_bytes skip=%d '
                      'oflag=direct,seek_bytes seek=%d status=none' % (pattern, bdev, size, off, off))
    for size, off in cases:
        script.append('a=$(dd if=%s bs=%d count=1 iflag=skip_bytes skip=%d status=none '
                      '| sha256sum); b=$(dd if=%s bs=%d count=1 iflag=direct,skip_bytes skip=%d '
                      'status=none | sha256sum); [ "$a" = "$b" ] && echo "dd %d@%d ok" || echo "dd %d@%d BAD"'
                      % (pattern, size, off, bdev, size, off, size, off, size, off))
    dd = vm.run('\n'.join(script), timeout=timeout)
    assert dd.count(' ok') == len(cases) and 'BAD' not in dd, dd
