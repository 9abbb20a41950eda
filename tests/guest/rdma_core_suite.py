# SPDX-License-Identifier: GPL-2.0-or-later
"""rdma-core 56.1's own pyverbs test suite (tests/*.py of its source tree),
run inside a guest against a qrnic device: one place for copying the suite
into the guest, running a selection of its tests and reading unittest's
verdicts.  Used by tests/test_guest_mw_cq.py, test_guest_xrc.py and
test_guest_rereg.py."""
import os
import re

import pytest

RDMA_CORE = os.path.join(os.environ.get('QRNIC_CACHE', '/var/cache/qrnic'), 'rdma-core-56.1')
# The tests package of rdma-core: its __init__ imports every test_*.py present, so
# only the test modules wanted and what they import are copied.
BASE_FILES = ['__init__.py', 'args_parser.py', 'base.py', 'utils.py', 'mlx5_base.py',
              'efa_base.py', 'irdma_base.py', 'run_tests.py']


def unittest_results(out):
    """{test id: 'ok' | 'FAIL' | 'ERROR' | 'skipped <reason>'} from unittest -v output."""
    res = {}
    for m in re.finditer(r'^(test\w+) \(([\w.]+)\)(?:\n.*?)?\s\.\.\.\s(ok|FAIL|ERROR|skipped.*)$',
                         out, re.M):
        where = m.group(2).split('.')
        if where[-1] == m.group(1):    # Python >= 3.11: "(module.Class.test)"
            where.pop()
        res['%s.%s' % (where[-1], m.group(1))] = m.group(3)
    return res


def run_suite(ep, modules, tests, suite_dir, if_missing='skip', timeout=600):
    """Copy BASE_FILES + modules (test_*.py names) of the cached rdma-core
    source to suite_dir in ep's guest and run `tests` (unittest ids) there
    against ep's device.  A missing source skips the test (if_missing
    'skip') or fails it ('fail').  Returns (results dict, the run's result)."""
    files = BASE_FILES + list(modules)
    missing = [f for f in files if not os.path.exists(os.path.join(RDMA_CORE, 'tests', f))]
    if missing:
        why = ('rdma-core 56.1 source not cached at %s (run scripts/build-provider.sh): '
               'missing %s' % (RDMA_CORE, ', '.join(missing)))
        if if_missing == 'fail':
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    v = ep.vm
    v.run('rm -rf %s && mkdir -p %s/tests' % (suite_dir, suite_dir), timeout=30)
    for f in files:
        with open(os.path.join(RDMA_CORE, 'tests', f), 'rb') as fh:
            v.put('%s/tests/%s' % (suite_dir, f), fh.read())
    r = v.run('cd %s && python3 -u tests/run_tests.py --dev %s --gid %d -v %s'
              % (suite_dir, ep.ibdev, ep.gid, ' '.join(tests)),
              timeout=timeout, check=False, merge=True)
    return unittest_results(r.output), r
