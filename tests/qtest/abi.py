# SPDX-License-Identifier: GPL-2.0-or-later
"""The qtest back end's ABI constants (model/abi/qrnic_regs.h and friends).

The ABI structures, the admin command bodies (CMD_MIRRORS) and every
constant come from tests/qrnic_harness.py; this module adds what only the
qtest back end needs (PCI identity, ring sizes, doorbell fields, the
statistics order).  check_layout() compares the command mirrors with the C
layout table of the harness library.
"""
import ctypes

import qrnic_harness as h


# qrnic_regs.h: PCI identity and BARs
PCI_VENDOR_ID = 0x1af4
PCI_DEVICE_ID = 0x10f7
PCI_SUBSYS_VENDOR_ID = 0x1af4
PCI_SUBSYS_ID = 0x0001
PCI_REVISION = 0x01
PCI_CLASS = 0x020000
BAR_REGS, BAR_DB, BAR_MSIX = 0, 2, 4
ABI_VERSION = h.ABI_VERSION

AQ_SQE_SIZE = 128
AQ_CQE_SIZE = 32
AQ_VECTOR = 0
CQE_SIZE = ctypes.sizeof(h.Cqe)
EQE_SIZE = ctypes.sizeof(h.Eqe)
SEND_WQE_SIZE = ctypes.sizeof(h.SendWqe)
RECV_WQE_SIZE = ctypes.sizeof(h.RecvWqe)
SGE_SIZE = ctypes.sizeof(h.Sge)
PBL_ENTRIES = 512
QP_F_SQ_SIG_ALL = 1
MR_F_PHYS = 1
EQ_F_ASYNC = 1
EQ_DB_ARM = 1 << 16
DB_CQ_ARM = 1 << 24
DB_CQ_SOLICITED = 1 << 25
DB_QN_MASK = 0xffffff
# BlueFlame buffers of a doorbell page (qrnic_regs.h QRNIC_DB_BF_*, spec 3.2.1)
DB_BF_BASE, DB_BF_STRIDE, BF_CTRL = 0x800, 0x200, 0x100

STAT_NAMES = [
    'tx_packets', 'tx_bytes', 'rx_packets', 'rx_bytes', 'rx_drop_malformed', 'rx_drop_icrc',
    'rx_drop_no_qp', 'rx_drop_qp_state', 'rx_drop_other', 'duplicate_requests',
    'seq_naks_sent', 'seq_naks_rcvd', 'rnr_naks_sent', 'rnr_naks_rcvd', 'access_naks_sent',
    'inv_req_naks_sent', 'retransmit_timeouts', 'retransmitted_packets', 'acks_sent',
    'acks_rcvd', 'cqes', 'cqe_errors', 'cq_overruns', 'eqes', 'interrupts', 'doorbells',
    'doorbells_ignored', 'bad_wqes', 'dma_errors', 'admin_cmds', 'admin_errors',
    'atomics_executed', 'atomics_replayed', 'eth_tx_frames', 'eth_rx_frames', 'eth_rx_drops',
    'late_events', 'late_ns_total', 'faults_injected', 'window_cuts', 'qpc_cache_hits', 'qpc_cache_misses',
    'mpt_cache_hits', 'mpt_cache_misses', 'mtt_cache_hits', 'mtt_cache_misses',
    'loopback_frames', 'ecn_marked_received', 'cnp_sent', 'cnp_received', 'bf_posts',
    'bf_fallbacks', 'pfc_received', 'pfc_malformed', 'pfc_deferred_frames', 'pfc_sent', 'rx_buffer_drops']   # QRNIC_STATS() order


# The admin command bodies live with the other ABI mirrors in qrnic_harness
# (one definition for both back ends of tests/qrnic_api.py).
from qrnic_harness import (AqHdr, CmdAllocXrcd, CmdCreateAh, CmdCreateCq, CmdCreateEq,  # noqa: F401,E402
                           CmdCreatePd, CmdCreateQp, CmdCreateSrq, CmdGid, CmdHandle, CmdModifyQp,
                           CmdModifySrq, CmdQuery, CmdQueryQp, CmdRegMr, command)

MIRRORS = h.CMD_MIRRORS


def check_layout():
    """Assert that the mirrors here match the C structures (needs the harness library)."""
    lay = h.layout()
    for cname, py in MIRRORS.items():
        c = lay[cname]
        assert ctypes.sizeof(py) == c['__size__'][0], (cname, ctypes.sizeof(py))
        for field, (off, size) in c.items():
            if field == '__size__':
                continue
            d = getattr(py, field)
            assert (d.offset, d.size) == (off, size), (cname, field, d.offset, d.size, off, size)
