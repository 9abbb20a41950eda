# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier (no guest booted): the kernel driver is sparse clean.

The ABI fields of model/abi/ are __le16/__le32/__le64/__be32 in the kernel
(qrnic_abi_types.h), so sparse rejects every device field the driver writes
without cpu_to_le*() or reads without le*_to_cpu().  These tests build the
module the way the guest image does (scripts/build-kmod.sh, same kernel
headers, W=1) with --sparse (make C=2: every file checked):

- the driver as it is has no sparse (or compiler) warning in a qrnic file,
  and sparse did check each of its .c files;
- the check is live: a copy of the driver with one conversion dropped on
  each side (a WQE field written, a CQE field read) fails the build, and
  sparse names both lines.

The same for the rdma-core provider, which rdma-core itself can build
under sparse (CC=cgcc; its annotated endian.h makes htole32() return
__le32): scripts/build-provider.sh --sparse, on the provider as it is and
on a copy with one htole32() dropped.  The copy goes through the shared
rdma-core tree under $QRNIC_CACHE, so the clean run comes last and leaves
the real sources there.

Needs the kernel build tree that scripts/build-kmod.sh unpacks under
$QRNIC_CACHE, the rdma-core tree of scripts/build-provider.sh (both fetch
what is missing) and the sparse package, which they install."""
import glob
import os
import re
import shutil
import subprocess

import pytest

pytestmark = [pytest.mark.guest]

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
KSRC = os.path.join(REPO, 'guest-driver', 'kernel')
PSRC = os.path.join(REPO, 'guest-driver', 'provider')
ABI = os.path.join(REPO, 'model', 'abi')
SCRIPT = os.path.join(REPO, 'scripts', 'build-kmod.sh')
PSCRIPT = os.path.join(REPO, 'scripts', 'build-provider.sh')


def build_sparse(out, src=None):
    env = dict(os.environ)
    env.pop('QRNIC_KMOD_ALLOW_WARNINGS', None)
    if src:
        env['QRNIC_KMOD_SRC'] = str(src)
    r = subprocess.run(['bash', SCRIPT, '--sparse', '--clean', str(out)], env=env,
                       capture_output=True, text=True, timeout=1800)
    log_path = os.path.join(str(out), 'build.log')
    log = open(log_path, encoding='utf-8', errors='replace').read() \
        if os.path.exists(log_path) else ''
    return r, log


def qrnic_diags(log, bld):
    """sparse/gcc diagnostics in qrnic files: (file, line, text)."""
    rx = re.compile(r'^(%s|%s)/([^:]+):(\d+):\d+: (?:warning|error): (.*)$'
                    % (re.escape(str(bld)), re.escape(ABI)), re.M)
    return [(m.group(2), int(m.group(3)), m.group(4)) for m in rx.finditer(log)]


def test_driver_is_sparse_clean(tmp_path):
    r, log = build_sparse(tmp_path)
    bld = tmp_path / 'src'
    assert r.returncode == 0, r.stderr[-4000:]
    assert qrnic_diags(log, bld) == [], log[-4000:]
    checked = set(re.findall(r'^\s*CHECK\s+\S*/([^/\s]+\.c)$', log, re.M))
    sources = {os.path.basename(p) for p in glob.glob(os.path.join(KSRC, '*.c'))}
    assert len(sources) >= 10 and checked == sources, (sorted(checked), sorted(sources))
    assert os.path.getsize(tmp_path / 'qrnic.ko') > 0


def _drop(path, before, after):
    text = path.read_text()
    assert text.count(before) == 1, (path, before)
    path.write_text(text.replace(before, after))
    return 1 + text[:text.index(before)].count('\n')


def test_sparse_catches_a_missing_conversion(tmp_path):
    src = tmp_path / 'kernel'
    shutil.copytree(KSRC, src)
    # written to the device without cpu_to_le32, read from it without le32_to_cpu
    wline = _drop(src / 'qrnic_qp.c', 'wqe->inline_len = cpu_to_le32(len);',
                  'wqe->inline_len = len;')
    rline = _drop(src / 'qrnic_cq.c', 'wc->byte_len = le32_to_cpu(cqe->byte_len);',
                  'wc->byte_len = cqe->byte_len;')
    out = tmp_path / 'out'
    r, log = build_sparse(out, src)
    assert r.returncode != 0, 'build-kmod.sh --sparse accepted an unconverted field'
    assert 'sparse: ' in r.stderr and 'warning(s) in qrnic files' in r.stderr, r.stderr[-2000:]
    diags = qrnic_diags(log, out / 'src')
    where = {(f, n) for f, n, _ in diags}
    assert ('qrnic_qp.c', wline) in where and ('qrnic_cq.c', rline) in where, diags
    assert len(where) == 2, diags
    texts = ' | '.join(t for _, _, t in diags)
    assert 'incorrect type in assignment' in texts, texts


PROVIDER_DIAG = re.compile(r'^(?:\S*/)?providers/qrnic/([^:]+):(\d+):\d+: (?:warning|error): (.*)$', re.M)


def build_provider_sparse(out, src=None):
    env = dict(os.environ)
    env.pop('QRNIC_PROVIDER_SRC', None)
    if src:
        env['QRNIC_PROVIDER_SRC'] = str(src)
    return subprocess.run(['bash', PSCRIPT, '--sparse', '--no-test', '--out', str(out)],
                          env=env, capture_output=True, text=True, timeout=3600)


def test_provider_sparse_catches_a_missing_conversion(tmp_path):
    src = tmp_path / 'provider'
    shutil.copytree(PSRC, src)
    line = _drop(src / 'qrnic_wqe.h', 'h->inv_key = htole32(key);', 'h->inv_key = key;')
    r = build_provider_sparse(tmp_path / 'out', src)
    assert r.returncode != 0, 'build-provider.sh --sparse accepted an unconverted field'
    assert 'warning(s) in providers/qrnic' in r.stderr, r.stderr[-3000:]
    where = {(f, int(n)) for f, n, _ in PROVIDER_DIAG.findall(r.stderr)}
    assert where == {('qrnic_wqe.h', line)}, r.stderr[-3000:]


def test_provider_is_sparse_clean(tmp_path):
    """Last: also puts the real provider back into the shared rdma-core tree."""
    r = build_provider_sparse(tmp_path / 'out')
    assert r.returncode == 0, r.stderr[-4000:]
    assert 'sparse: no warning in providers/qrnic' in r.stderr, r.stderr[-3000:]
    assert PROVIDER_DIAG.findall(r.stderr) == [], r.stderr[-3000:]
    assert os.path.getsize(tmp_path / 'out' / 'libqrnic-rdmav34.so') > 0
