# SPDX-License-Identifier: GPL-2.0-or-later
"""QEMU's generic-fuzz on the qrnic device (tier "qfuzz", docs/fuzzing.md
section 7): the seeds of tests/fuzz/corpus/qemu run cleanly through
qemu-fuzz-x86_64 (clang, ASan, UBSan), really bring the device up (the
device fetches admin commands from the rings the seeds program), and a
short run of "scripts/fuzz.sh qemu" from the seeds finds new inputs, no
crash, and more coverage than an input that does nothing.

The binary: QRNIC_QEMU_FUZZ=/path, else scripts/build-qemu.sh --variant fuzz
(cached; a cold build is long).  The tier is opt-in (QRNIC_TIERS=...,qfuzz);
when it is selected a missing binary or failed build is a failure."""
import os
import re
import subprocess

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
CORPUS = os.path.join(TESTS, 'fuzz', 'corpus', 'qemu')
FUZZ_SH = os.path.join(REPO, 'scripts', 'fuzz.sh')
TARGET = '--fuzz-target=generic-fuzz-qrnic'
SECONDS = int(os.environ.get('QRNIC_QFUZZ_SECONDS', '60'))

pytestmark = pytest.mark.qfuzz


@pytest.fixture(scope='module')
def qemu_fuzz():
    env = os.environ.get('QRNIC_QEMU_FUZZ')
    if env:
        assert os.access(env, os.X_OK), f'QRNIC_QEMU_FUZZ={env} is not executable'
        return env
    r = subprocess.run(['bash', os.path.join(REPO, 'scripts', 'build-qemu.sh'), '--variant', 'fuzz'],
                       cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=7200)
    path = (r.stdout.strip().splitlines() or [''])[-1]
    assert r.returncode == 0 and os.access(path, os.X_OK), r.stderr[-4000:]
    return path


def run_inputs(binary, paths, tmp_path, env=None):
    e = dict(os.environ)
    e.setdefault('ASAN_OPTIONS', 'detect_leaks=0')
    e.setdefault('UBSAN_OPTIONS', 'print_stacktrace=1:halt_on_error=1')
    e.update(env or {})
    return subprocess.run([binary, TARGET, '-runs=1'] + list(paths), cwd=str(tmp_path),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600, env=e)


def seeds():
    return sorted(os.path.join(CORPUS, f) for f in os.listdir(CORPUS))


def test_seeds_run_cleanly(qemu_fuzz, tmp_path):
    """Every seed once: exit 0, each one executed, no sanitizer report."""
    s = seeds()
    assert len(s) >= 8
    r = run_inputs(qemu_fuzz, s, tmp_path)
    assert r.returncode == 0, r.stdout[-6000:]
    assert len(re.findall(r'^Executed .* in \d+ ms', r.stdout, re.M)) == len(s), r.stdout[-3000:]
    assert 'qrnic-regs' in r.stdout and 'qrnic-doorbells' in r.stdout, r.stdout[:3000]
    for m in ('AddressSanitizer', 'runtime error:'):
        assert m not in r.stdout, r.stdout[-6000:]


def test_seed_brings_the_device_up(qemu_fuzz, tmp_path):
    """aq_query_device programs the admin rings at 0x100000 / 0x110000 and
    rings AQ_SQ_DB: the device must fetch the SQE, which generic-fuzz
    answers with the seed's DMA pattern (QUERY_DEVICE), logged as a qtest
    write at the SQ base.  A device that was not brought up, or a seed
    that misses its registers, makes no such fetch."""
    r = run_inputs(qemu_fuzz, [os.path.join(CORPUS, 'aq_query_device')], tmp_path,
                   env={'QTEST_LOG': '1', 'FUZZ_SERIALIZE_QTEST': '1'})
    assert r.returncode == 0, r.stdout[-6000:]
    # the DMA fill of the SQE fetch, logged by qtest: "write 0x100000 0x80 0x01..."
    # (opcode 0x01 = QUERY_DEVICE first)
    fetch = re.search(r'write 0x100000 0x[0-9a-f]+ 0x01', r.stdout)
    assert fetch, r.stdout[-6000:]


@pytest.mark.slow
def test_fuzz_sh_qemu_smoke(qemu_fuzz, tmp_path):
    """scripts/fuzz.sh --seconds N qemu from the seeds: exit 0, executions,
    new inputs, coverage above the floor (docs/fuzzing.md section 7)."""
    env = dict(os.environ)
    env['QRNIC_QEMU_FUZZ'] = qemu_fuzz
    r = subprocess.run(['bash', FUZZ_SH, '--seconds', str(SECONDS), '--fresh',
                        '--build-dir', str(tmp_path), 'qemu'],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=SECONDS + 900, env=env)
    assert r.returncode == 0, r.stdout[-4000:]
    m = re.search(r'^qemu-generic\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)', r.stdout, re.M)
    assert m, r.stdout
    execs, rate, cov, ft, result = m.groups()
    assert result == 'ok' and int(execs) > 0, r.stdout
    assert int(cov) > COV_FLOOR, f'cov {cov} <= {COV_FLOOR}\n{r.stdout}'
    with open(os.path.join(tmp_path, 'logs', 'fuzz_qemu.log')) as f:
        log = f.read()
    added = re.search(r'^stat::new_units_added:\s*(\d+)', log, re.M)
    assert added and int(added.group(1)) > 0, log[-3000:]


# Coverage floor (libFuzzer cov): the seeds alone reached 3698 on the
# development VM, 600 s from them 4149 (docs/fuzzing.md section 7).  The
# floor sits below the seeds, so a slow machine passes; what an input that
# does nothing reaches was not measured (to do: put the floor above it).
COV_FLOOR = 3500
