# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: the qcow2 images the guest runner writes itself
(scripts/qrnic_vm/runner.py make_qcow2_overlay; the QEMU of build-qemu.sh has
no qemu-img): QEMU opens them, reads fall through to the backing file,
writes stay in the overlay, and savevm/loadvm work on them (the root overlay
of a migratable guest, the blank drive of the deterministic runner)."""
import os
import re
import subprocess
import sys

import pytest

from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'scripts'))
from qrnic_vm.runner import QEMU_DATA_ARGS, make_qcow2_overlay  # noqa: E402

pytestmark = pytest.mark.qemu


def hmp(qemu, drive, commands):
    """Run HMP commands on a stopped machine with drive `d`; returns the monitor's output."""
    args = [qemu, '-M', 'q35', '-accel', 'tcg', '-S', '-display', 'none', '-nodefaults', '-no-user-config'
            ] + QEMU_DATA_ARGS + ['-drive', 'file=%s,if=none,id=d,format=qcow2' % drive, '-monitor', 'stdio']
    p = subprocess.run(args, input='\n'.join(commands + ['quit']) + '\n', stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    # the monitor echoes what it reads with terminal escapes; keep QEMU's own lines,
    # less ASan's coroutine warnings (an ASan QEMU of the qsan tier; its reports stay)
    return '\n'.join(ln for ln in p.stdout.replace('\r', '').splitlines()
                     if '\x1b' not in ln and not _asan_coroutine_warning(ln))


def _asan_coroutine_warning(line):
    return (re.match(r'==\d+==WARNING: ASan (doesn.t fully support makecontext|is ignoring '
                     r'requested __asan_handle_no_return)', line) is not None
            or line in ('False positive error reports may follow',
                        'For details see https://github.com/google/sanitizers/issues/189'))


def test_overlay_backing_and_snapshots(qemu_binary, tmp_path):  # noqa: F811
    base = tmp_path / 'base.img'
    base.write_bytes(b'\x33' * (4 << 20))
    ov = make_qcow2_overlay(str(tmp_path / 'ov.qcow2'), str(base), 'raw')
    out = hmp(qemu_binary, ov, [
        'qemu-io d "read -P 0x33 0 4M"',            # all from the backing file
        'qemu-io d "write -P 0x5a 1M 128k"',
        'savevm s1',
        'qemu-io d "write -P 0x11 1M 64k"',
        'info snapshots',
        'loadvm s1',
        'qemu-io d "read -P 0x5a 1M 128k"',         # the snapshot's content again
        'qemu-io d "read -P 0x33 2M 64k"',
    ])
    assert 'Pattern verification failed' not in out, out
    assert out.count('read ') == 3, out
    assert ' s1 ' in out, out
    assert 'Error' not in out and 'error' not in out, out
    assert base.read_bytes() == b'\x33' * (4 << 20)     # the backing file is untouched


def test_blank_image_holds_a_snapshot(qemu_binary, tmp_path):  # noqa: F811
    img = make_qcow2_overlay(str(tmp_path / 'blank.qcow2'), None, size=64 << 20)
    out = hmp(qemu_binary, img, ['qemu-io d "read -P 0 0 64M"', 'savevm a', 'info snapshots', 'loadvm a'])
    assert 'Pattern verification failed' not in out, out
    assert ' a ' in out, out
    assert 'Error' not in out and 'error' not in out, out
    assert os.path.getsize(img) > 3 * 65536                # the VM state went into it
