# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: the one Python device API (tests/qrnic_api.py) over its two
back ends.  The same scenario runs on two devices of the C harness
(qrnic_harness.World) and on two qrnic devices in one QEMU (qtest): every
value it observes (admin results, SRQ attributes, completions, bytes moved)
must be the same on both."""
import pytest

import qrnic_api
import qrnic_harness as h
from qtest.fixtures import qemu_binary, shared_world  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

qworld, world = shared_world('api')

KEEP = ('status_name', 'opcode_name', 'wr_id', 'byte_len', 'imm', 'flags', 'vendor_err_name')


def scenario(a, b):
    """What the device answers to one sequence of API calls from a to b."""
    seen = {'gid0': a.query_gid(0) == a.gids[0][0], 'gid9': a.query_gid(9, check=False)}
    pd = a.alloc_pd()
    srq = a.create_srq(pd, log_depth=4)
    seen['srq_modify'] = srq.modify(limit=3)
    seen['srq'] = srq.query()
    seen['srq_modify_bad'] = srq.modify(limit=1 << 20, check=False)
    ud = qrnic_api.create_ud(a, pd)
    mgid = h.gid_v6('ff0e::1234')
    seen['mcast'] = (a.attach_mcast(ud.qp, mgid), a.detach_mcast(ud.qp, mgid),
                     a.detach_mcast(ud.qp, mgid, check=False))
    c = qrnic_api.connect_rc(a, b)
    src = a.reg_mr(c.pda, 8192)
    dst = b.reg_mr(c.pdb, 8192)
    seen['mr_query'] = {k: v for k, v in src.query().items() if k in ('access', 'length')}
    payload = bytes(range(256)) * 12
    src.write(100, payload)
    c.qb.post_recv([(dst, 0, 4096)], wr_id=7)
    c.qa.post_send('SEND_WITH_IMM', [(src, 100, len(payload))], imm=0x12345678, wr_id=8)
    c.qa.post_send('RDMA_WRITE', [(src, 100, 1000)], remote=(dst, 5000), wr_id=9)
    cqes = c.cqa.wait(2) + c.cqb.wait(1)
    seen['cqes'] = [{k: e[k] for k in KEEP} for e in cqes]
    seen['bytes'] = (dst.read(0, len(payload)) == payload, dst.read(5000, 1000) == payload[:1000])
    seen['moderate'] = c.cqa.moderate(count=4, period_us=10)
    seen['destroy_srq'] = srq.destroy()
    return seen


def test_same_answers_from_both_back_ends(world):
    got_qtest = scenario(*world.devs)
    w = h.World(2)
    try:
        got_harness = scenario(*w.devs)
    finally:
        w.close()
    assert got_qtest == got_harness
    # and they are the answers the spec gives
    assert got_qtest['gid0'] and got_qtest['gid9'] == bytes(16)      # an unset GID reads as zeros
    assert got_qtest['srq'] == {'limit': 3, 'max_wr': 16, 'posted': 0}
    assert got_qtest['srq_modify'] == 0 and got_qtest['srq_modify_bad'] < 0
    assert got_qtest['mcast'][:2] == (0, 0) and got_qtest['mcast'][2] != 0
    assert [e['status_name'] for e in got_qtest['cqes']] == ['SUCCESS'] * 3
    assert got_qtest['cqes'][2]['imm'] == 0x12345678
    assert got_qtest['bytes'] == (True, True)
