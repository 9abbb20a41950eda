# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest-side pyverbs helpers shared by the guest test scripts.

The guest tests run small pyverbs programs inside the VMs (tests/
test_guest_mw_cq.py, test_guest_ext_verbs.py, test_guest_faults.py,
test_guest_srq.py).  Their RC connection set-up is one function here:
the host side copies this file next to the script (put_helper) and the
script does `from qrnic_pv import connect_rc` (Python puts the script's
directory first on sys.path).  pyverbs is imported only inside the
functions the guest calls, so the host can import this module too.

Host side: run_script() puts a script and this module into a guest, runs it
and returns the JSON of its "RESULT <json>" line; assert_checks() reads a
{"checks": [[name, ok, detail], ...]} result."""
import json
import os
import re


def put_helper(vm, script):
    """Copy this module into the guest directory of `script` (a guest path)."""
    with open(os.path.abspath(__file__), 'rb') as f:
        vm.put(os.path.join(os.path.dirname(script), 'qrnic_pv.py'), f.read())


def result_json(r, tail=4000):
    """The JSON of the "RESULT <json>" line of a finished guest run r (exit status 0)."""
    m = re.search(r'^RESULT (.*)$', r.output, re.M)
    assert r.rc == 0 and m, 'pyverbs program failed (rc %s):\n%s' % (r.rc, r.output[-tail:])
    return json.loads(m.group(1))


def run_script(vm, path, text, args, timeout=240, merge=True, tail=4000):
    """Put the pyverbs program `text` at guest path `path` (with this module
    beside it), run `python3 -u path args` and return its RESULT JSON."""
    vm.put(path, text.encode())
    put_helper(vm, path)
    r = vm.run('python3 -u %s %s' % (path, args), timeout=timeout, check=False, merge=merge)
    return result_json(r, tail)


def assert_checks(res, at_least):
    """Every [name, ok, detail] of res['checks'] passed, and there are at least at_least."""
    bad = [ck for ck in res['checks'] if not ck[1]]
    print('%d checks, %d failed' % (len(res['checks']), len(bad)))
    assert len(res['checks']) >= at_least and not bad, '\n'.join('%s: %s' % (n, d) for n, _, d in bad)


def connect_rc(qp, access, dest_qpn, dgid, sgid_index, rd_atomic=1, timeout=14, retry_cnt=7,
               rnr_retry=7):
    """RESET -> INIT -> RTR -> RTS for an RC QP over RoCEv2 (port 1, MTU 1024,
    PSNs 0, hop limit 64, RNR timer 0.01 ms) towards QP dest_qpn at GID dgid;
    rd_atomic: both max_dest_rd_atomic and max_rd_atomic."""
    import pyverbs.enums as e
    from pyverbs.addr import AHAttr, GlobalRoute
    from pyverbs.qp import QPAttr

    attr = QPAttr(port_num=1)
    attr.qp_access_flags = access
    attr.pkey_index = 0
    qp.to_init(attr)
    attr = QPAttr(port_num=1)
    attr.path_mtu = e.IBV_MTU_1024
    attr.dest_qp_num = dest_qpn
    attr.rq_psn = 0
    attr.max_dest_rd_atomic = rd_atomic
    attr.min_rnr_timer = 1
    gr = GlobalRoute(dgid=dgid, sgid_index=sgid_index)
    gr.hop_limit = 64
    attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    qp.to_rtr(attr)
    attr.timeout = timeout
    attr.retry_cnt = retry_cnt
    attr.rnr_retry = rnr_retry
    attr.sq_psn = 0
    attr.max_rd_atomic = rd_atomic
    qp.to_rts(attr)
