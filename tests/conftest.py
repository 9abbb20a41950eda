# SPDX-License-Identifier: GPL-2.0-or-later
"""pytest configuration for qrnic.

Tiers: every test belongs to one tier, chosen by marker:
    (no tier marker)  -> "unit"   model + firmware through the C harness
    @pytest.mark.qemu -> "qemu"   needs a QEMU binary with the device
    @pytest.mark.guest-> "guest"  boots a guest with the driver stack
    @pytest.mark.qfuzz-> "qfuzz"  QEMU's generic-fuzz on qrnic (opt-in)
QRNIC_TIERS (comma list, default "unit") selects which tiers run; the
others are deselected (not skipped), so adding a tier to CI is a one-line
change in scripts/test.sh.

Build: unless QRNIC_NO_BUILD=1 (scripts/test.sh sets it after building),
the session starts with `meson setup [--reconfigure] build && ninja -C build`.
QRNIC_BUILD_DIR overrides the build directory.
"""
import os
import random
import subprocess
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
sys.path.insert(0, TESTS)

TIER_MARKERS = ('qemu', 'guest', 'qfuzz')


def enabled_tiers():
    return {t.strip() for t in os.environ.get('QRNIC_TIERS', 'unit').split(',') if t.strip()}


def pytest_configure(config):
    config.addinivalue_line('markers', 'qemu: needs QEMU with the qrnic device (tier "qemu")')
    config.addinivalue_line('markers', 'guest: boots a guest with the driver stack (tier "guest")')
    config.addinivalue_line('markers', 'qfuzz: QEMU generic-fuzz on qrnic (tier "qfuzz", opt-in)')
    config.addinivalue_line('markers', 'slow: takes more than a few seconds')
    if os.environ.get('QRNIC_NO_BUILD') != '1' and not hasattr(config, 'workerinput'):
        _build()


def _build():
    bdir = os.environ.get('QRNIC_BUILD_DIR') or os.path.join(REPO, 'build')
    if os.path.exists(os.path.join(bdir, 'build.ninja')):
        cmd = ['meson', 'setup', '--reconfigure', bdir]
    else:
        cmd = ['meson', 'setup', bdir]
    for c in (cmd, ['ninja', '-C', bdir]):
        r = subprocess.run(c, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            raise pytest.UsageError(f'build failed: {" ".join(c)}\n{r.stdout[-4000:]}')


def pytest_collection_modifyitems(config, items):
    tiers = enabled_tiers()
    keep, drop = [], []
    for item in items:
        tier = next((t for t in TIER_MARKERS if item.get_closest_marker(t)), 'unit')
        (keep if tier in tiers else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_report_header(config):
    return f'qrnic tiers: {",".join(sorted(enabled_tiers()))}'


# ---- fixtures ----------------------------------------------------------------------
@pytest.fixture
def rng():
    return random.Random(0x9e1)


@pytest.fixture
def world():
    """Two cabled devices, brought up (AQ, EQs, GIDs)."""
    import qrnic_harness as q
    w = q.World(2)
    yield w
    w.close()


@pytest.fixture
def devs(world):
    return world.devs


@pytest.fixture
def conn(world):
    """An RC connection (MTU 1024) between the two devices of `world`."""
    import qrnic_harness as q
    return q.connect_rc(world.devs[0], world.devs[1], mtu=1024)
