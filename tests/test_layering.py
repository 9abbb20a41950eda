# SPDX-License-Identifier: GPL-2.0-or-later
"""The dependency between model and firmware goes one way (house issue 22).

The model (model/) knows "an admin engine" handed to qrnic_dev_new()
(struct qrnic_admin_ops); the firmware (firmware/) registers as that engine
(qrnic_fw_admin_ops) and uses only the model services listed in
model/qrnic_fw_services.h.  Checked on the meson build's libraries:
libqrnic_model.a needs no symbol that it does not define itself (other
than the C library's), model_alone (the model linked whole, no firmware)
runs, and every model function libqrnic_fw.a calls is a listed service.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def build_dir():
    return Path(os.environ.get('QRNIC_BUILD_DIR') or ROOT / 'build').resolve()


def nm(archive, *flags):
    """Global symbol names of an archive's members (nm FLAGS)."""
    path = build_dir() / archive
    if not path.exists():
        pytest.fail(f'{path} missing: build with meson first')
    out = subprocess.run(['nm', '-g', *flags, str(path)], check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.endswith(':'):
            names.add(parts[-1])
    return names


def test_model_needs_nothing_from_the_firmware():
    undefined = nm('libqrnic_model.a', '-u')
    defined = nm('libqrnic_model.a', '--defined-only')
    missing = sorted(s for s in undefined - defined if s.startswith('qrnic'))
    assert not missing, f'the model calls outside itself: {missing}'


def test_model_alone_runs_without_firmware():
    exe = build_dir() / 'tests' / 'model_alone'
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ' 0 failures' in r.stdout, r.stdout + r.stderr


def fw_services():
    text = (ROOT / 'model' / 'qrnic_fw_services.h').read_text()
    block = text[text.index('#define QRNIC_FW_SERVICES(X)'):]
    block = block[:block.index('\n\n')]
    return set(re.findall(r'X\((\w+)\)', block))


def test_firmware_uses_only_listed_model_services():
    services = fw_services()
    assert 'qrnic_dma_read' in services
    undefined = nm('libqrnic_fw.a', '-u')
    defined = nm('libqrnic_fw.a', '--defined-only')
    model = nm('libqrnic_model.a', '--defined-only')
    used = {s for s in undefined - defined if s.startswith('qrnic')}
    unlisted = sorted(used - services)
    assert not unlisted, (f'the firmware calls model functions that are not in '
                          f'QRNIC_FW_SERVICES (model/qrnic_fw_services.h): {unlisted}; '
                          f'add them there if the firmware is meant to use them')
    assert used <= model, f'not defined by the model: {sorted(used - model)}'
    assert services <= model, f'listed but not in the model: {sorted(services - model)}'


def test_model_sources_do_not_include_firmware_headers():
    fw_headers = {p.name for p in (ROOT / 'firmware').glob('*.h')}
    for src in sorted((ROOT / 'model').glob('*.[ch]')):
        for inc in re.findall(r'#include\s+"([^"]+)"', src.read_text()):
            assert inc not in fw_headers, f'{src.name} includes firmware header {inc}'
