# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: -device qrnic,doorbell-batch=on|off|auto (hw/qrnic.c,
qrnic_dev_set_db_batch; docs/qemu.md section 3).  The model's side is
tests/test_model_db_batch.py; a guest's, tests/test_guest_unlocked_run.py
(T1 ib_write_bw counts batched doorbells)."""
import pytest

import qrnic_harness as h
from qtest.driver import World
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu


def test_doorbell_batch_rides_on_the_ack(qemu_binary):  # noqa: F811
    """doorbell-batch (qrnic_dev_set_db_batch): an SQ doorbell of a QP whose
    packets await an ACK asks for no run; the QP's WQEs go when what it
    waits for comes (an ACK dropped on arrival keeps the QP waiting while
    the seven doorbells are rung).  Under
    qtest the default (auto) is off.  Counted in host-calls.db-batched."""
    w = World.single(qemu_binary, 4, dev_opts=['doorbell-batch=on', '', '', ''],
                     name='db-batch')
    try:
        a, b, c2, d2 = w.devs
        assert a.qom_get('doorbell-batch') == 'on' and c2.qom_get('doorbell-batch') == 'auto'
        for x, y in ((a, b), (c2, d2)):
            c = h.connect_rc(x, y, mtu=1024, timeout=16)
            src, dst = x.reg_mr(c.pda, 65536), y.reg_mr(c.pdb, 65536)
            data = bytes((i * 11 + 1) & 0xff for i in range(65536))
            src.write(0, data)
            x.fault('drop dir=rx op=ack count=1')       # the first ACK is lost
            b0 = x.qom_counters('host-calls')['db-batched']
            c.qa.post_send('RDMA_WRITE', [(src, 0, 4096)], remote=(dst, 0), wr_id=0)
            assert w.run_until(lambda: x.query_stats()['faults_injected'] >= 1, what='ACK dropped')
            for i in range(1, 8):
                c.qa.post_send('RDMA_WRITE', [(src, i * 4096, 4096)], remote=(dst, i * 4096),
                               wr_id=i)
            batched = x.qom_counters('host-calls')['db-batched'] - b0
            got = c.cqa.wait(8)
            assert [(e['wr_id'], e['status_name']) for e in got] == \
                [(i, 'SUCCESS') for i in range(8)]
            assert dst.read(0, 8 * 4096) == data[:8 * 4096]
            assert batched == (7 if x is a else 0)
    finally:
        w.close()
