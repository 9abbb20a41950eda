# SPDX-License-Identifier: GPL-2.0-or-later
"""pytest fixtures of the qemu tier; test modules import them:

    from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

qemu_binary: the qemu-system-x86_64 with the qrnic device.  QRNIC_QEMU=/path
uses that binary; otherwise scripts/build-qemu.sh builds (or finds in its
cache) the binary and prints its path as the last stdout line.  The fixture
only runs when the qemu tier is selected (tests/conftest.py deselects the
tier otherwise), so a missing binary or a failed build is a test failure,
never a skip.
"""
import os
import subprocess

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(TESTS)
BUILD_SCRIPT = os.path.join(REPO, 'scripts', 'build-qemu.sh')
BUILD_TIMEOUT = int(os.environ.get('QRNIC_QEMU_BUILD_TIMEOUT', '5400'))

_cached = {}


def locate_qemu():
    """Path of the QEMU binary, or raises RuntimeError with the reason."""
    if 'path' in _cached:
        return _cached['path']
    env = os.environ.get('QRNIC_QEMU')
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise RuntimeError(f'QRNIC_QEMU={env} is not an executable file')
        _cached['path'] = env
        return env
    if not os.path.exists(BUILD_SCRIPT):
        raise RuntimeError(f'{BUILD_SCRIPT} is missing and QRNIC_QEMU is not set')
    try:
        r = subprocess.run(['bash', BUILD_SCRIPT], cwd=REPO, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f'scripts/build-qemu.sh took more than {BUILD_TIMEOUT}s')
    lines = r.stdout.strip().splitlines()
    path = lines[-1].strip() if lines else ''
    if r.returncode or not path or not os.access(path, os.X_OK):
        raise RuntimeError(f'scripts/build-qemu.sh failed (exit {r.returncode}); '
                           f'stdout: {r.stdout.strip()[-500:]!r}\nstderr (tail):\n'
                           f'{r.stderr[-4000:]}')
    _cached['path'] = path
    return path


@pytest.fixture(scope='session')
def qemu_binary():
    try:
        return locate_qemu()
    except RuntimeError as e:
        pytest.fail(f'qemu tier selected (QRNIC_TIERS) but no QEMU with qrnic: {e}',
                    pytrace=False)


def shared_world(name, ndev=2, dev_opts='', **attrs):
    """The fixtures most qemu-tier modules want: `qworld`, one QEMU for the
    module (devices not brought up, with the -device options dev_opts;
    attrs set on the World, e.g. fixed_step_ns), and `world`, that QEMU with
    its devices reset and brought up again for each test, alive before and
    after.  In a test module:

        qworld, world = shared_world('rc')
    """
    from qtest.driver import World

    @pytest.fixture(scope='module')
    def qworld(qemu_binary):
        w = World.single(qemu_binary, ndev=ndev, init=False, name=name, dev_opts=dev_opts)
        for k, v in attrs.items():
            setattr(w, k, v)
        yield w
        w.close()

    @pytest.fixture
    def world(qworld):
        assert qworld.alive(), qworld.qemus[0].stderr()
        qworld.reset_devices()
        yield qworld
        assert qworld.alive(), qworld.qemus[0].stderr()

    return qworld, world
