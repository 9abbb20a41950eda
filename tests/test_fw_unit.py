# SPDX-License-Identifier: GPL-2.0-or-later
"""Firmware and memory-translation unit test (tests/c/test_fw_mr.c): PBL
levels 0-3 including a 1 GiB MR, translation across pages, stale keys,
MTT exhaustion and unwinding, the MPT slot and MTT allocators (reuse of
freed slots and ranges, clean refusal when full, fragmentation, random
churn against a first-fit / lowest-slot reference, a snapshot round trip
after the churn), the QP state machine table and ~100k garbage admin
commands, all under AddressSanitizer and UBSan."""
import glob
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_fw_mr_unit_sanitized(tmp_path):
    exe = tmp_path / 'test_fw_mr'
    srcs = sorted(glob.glob(str(ROOT / 'model' / '*.c')) + glob.glob(str(ROOT / 'firmware' / '*.c')))
    cmd = [os.environ.get('CC', 'cc'), '-std=gnu11', '-O1', '-g', '-fsanitize=address,undefined',
           '-fno-sanitize-recover=undefined', '-I', str(ROOT / 'model'), '-I', str(ROOT / 'model/abi'),
           '-I', str(ROOT / 'firmware')] + srcs + [str(ROOT / 'tests/c/test_fw_mr.c'), '-o', str(exe)]
    subprocess.run(cmd, check=True)
    env = dict(os.environ, QRNIC_GARBAGE_ITERS=os.environ.get('QRNIC_GARBAGE_ITERS', '20000'),
               ASAN_OPTIONS='detect_leaks=1:halt_on_error=1')
    r = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert ' 0 failures' in r.stdout, r.stdout[-2000:]
