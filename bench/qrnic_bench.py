# SPDX-License-Identifier: GPL-2.0-or-later
"""What the bench/ scripts share: where the simulator is.

A script imports it after putting its own directory first on sys.path
(``sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))``): a
script run as a program gets that directory anyway, one loaded by a test
(tests/script_module.py) does not."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_dir():
    """$QRNIC_BUILD_DIR (relative to the working directory, as for
    scripts/qrnic-sim), or the repository's build/."""
    return os.path.abspath(os.environ.get('QRNIC_BUILD_DIR') or os.path.join(ROOT, 'build'))


def find_sim():
    """The qrnic-sim to run: $QRNIC_SIM if set (any binary, e.g. an older
    build to compare with), else build_dir()'s, brought up to date first by
    scripts/qrnic-sim (ninja, or meson then ninja for a new build
    directory).  RuntimeError, saying why, if there is none."""
    if os.environ.get('QRNIC_SIM'):
        path = os.environ['QRNIC_SIM']
    else:
        r = subprocess.run([os.path.join(ROOT, 'scripts', 'qrnic-sim'), '--help'],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, QRNIC_BUILD_DIR=build_dir()))
        path = os.path.join(build_dir(), 'tests', 'harness', 'qrnic-sim')
        if r.returncode and not os.access(path, os.X_OK):
            raise RuntimeError(f'qrnic-sim could not be built:\n{r.stderr[-2000:]}')
    if not os.access(path, os.X_OK):
        raise RuntimeError(f'{path} is not an executable qrnic-sim')
    return path


def sim_binary(who):
    """find_sim(), or exit with its reason prefixed by WHO (a script's name)."""
    try:
        return find_sim()
    except RuntimeError as e:
        sys.exit(f'{who}: {e}')


# Issue 19's incast, shared by bench/cc_incast and bench/sim_instr: the
# DCQCN parameters it is run with and qrnic-sim's arguments for one run
# (64 KiB WRITEs, 8 outstanding, 100 Gb/s, a 1800 KB switch buffer).
DCQCN = 'cc_algo=1,rp_time_reset=55,rp_byte_reset=0,rp_ai_rate=40,rp_hai_rate=200'


def incast_args(duration='2ms'):
    """qrnic-sim arguments of the incast (add --hosts N and --device ...)."""
    return ['--incast', '--op', 'write', '--size', '65536', '--depth', '8', '--duration', duration,
            '--count', '0', '--profile', 'cx5-100g', '--rate', '100G', '--overhead', '24',
            '--latency', '1us', '--verify', 'end', '--buffer', '1800K', '--sample', '100us']
