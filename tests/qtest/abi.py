# SPDX-License-Identifier: GPL-2.0-or-later
"""Admin command layouts (model/abi/qrnic_admin.h) as ctypes mirrors.

The other ABI structures (CQE, EQE, WQE, SGE, QP attributes, AV, query
answers) and every constant come from tests/qrnic_harness.py; this module
only adds the command bodies that the C harness builds in C.  check_layout()
compares them with the C layout table of the harness library.
"""
import ctypes

import qrnic_harness as h

LE = ctypes.LittleEndianStructure
u8, u16, u32, u64 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64

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
    'bf_fallbacks', 'pfc_received', 'pfc_malformed', 'pfc_deferred_frames']   # QRNIC_STATS() order


class AqHdr(LE):
    _pack_ = 1
    _fields_ = [('opcode', u8), ('flags', u8), ('cmd_id', u16), ('rsvd', u32)]


class CmdQuery(LE):
    _pack_ = 1
    _fields_ = [('resp_addr', u64), ('resp_len', u32), ('port', u32)]


class CmdGid(LE):
    _pack_ = 1
    _fields_ = [('index', u32), ('valid', u8), ('net_type', u8), ('rsvd', u16), ('gid', u8 * 16)]


class CmdHandle(LE):
    _pack_ = 1
    _fields_ = [('handle', u32)]


class CmdCreatePd(LE):
    _pack_ = 1
    _fields_ = [('uctx', u32)]


class CmdCreateCq(LE):
    _pack_ = 1
    _fields_ = [('uctx', u32), ('eqn', u32), ('log_depth', u8), ('flags', u8), ('rsvd', u8 * 6),
                ('ring_addr', u64), ('dbrec_addr', u64)]


class CmdCreateQp(LE):
    _pack_ = 1
    _fields_ = [('uctx', u32), ('pdn', u32), ('send_cqn', u32), ('recv_cqn', u32),
                ('qp_type', u8), ('sq_log_depth', u8), ('sq_wqe_shift', u8),
                ('rq_log_depth', u8), ('rq_wqe_shift', u8), ('rsvd0', u8 * 3),
                ('flags', u32), ('srqn', u32), ('sq_addr', u64), ('rq_addr', u64)]


class CmdModifyQp(LE):
    _pack_ = 1
    _fields_ = [('qpn', u32), ('rsvd', u32), ('attr', h.QpAttr)]


class CmdQueryQp(LE):
    _pack_ = 1
    _fields_ = [('handle', u32), ('resp_len', u32), ('resp_addr', u64)]


class CmdRegMr(LE):
    _pack_ = 1
    _fields_ = [('pdn', u32), ('access', u32), ('flags', u32), ('page_shift', u8),
                ('pbl_levels', u8), ('rsvd', u16), ('iova', u64), ('length', u64),
                ('pbl_addr', u64), ('npages', u32), ('rsvd2', u32)]


class CmdCreateAh(LE):
    _pack_ = 1
    _fields_ = [('pdn', u32), ('rsvd', u32), ('av', h.Av)]


class CmdCreateEq(LE):
    _pack_ = 1
    _fields_ = [('log_depth', u8), ('rsvd0', u8), ('vector', u16), ('flags', u32),
                ('ring_addr', u64)]


class CmdCreateSrq(LE):
    _pack_ = 1
    _fields_ = [('uctx', u32), ('pdn', u32), ('log_depth', u8), ('wqe_shift', u8),
                ('flags', u16), ('limit', u32), ('ring_addr', u64), ('dbrec_addr', u64),
                ('xrcd', u32), ('cqn', u32), ('rsvd1', u64)]


class CmdAllocXrcd(LE):
    _pack_ = 1
    _fields_ = [('uctx', u32), ('rsvd', u32)]


class CmdModifySrq(LE):
    _pack_ = 1
    _fields_ = [('srqn', u32), ('attr_mask', u32), ('limit', u32), ('rsvd', u32)]


MIRRORS = {'qrnic_aq_hdr': AqHdr, 'qrnic_cmd_query': CmdQuery, 'qrnic_cmd_gid': CmdGid,
           'qrnic_cmd_create_cq': CmdCreateCq, 'qrnic_cmd_create_qp': CmdCreateQp,
           'qrnic_cmd_modify_qp': CmdModifyQp, 'qrnic_cmd_query_qp': CmdQueryQp,
           'qrnic_cmd_reg_mr': CmdRegMr, 'qrnic_cmd_create_ah': CmdCreateAh,
           'qrnic_cmd_create_eq': CmdCreateEq, 'qrnic_cmd_create_srq': CmdCreateSrq,
           'qrnic_cmd_modify_srq': CmdModifySrq, 'qrnic_cmd_alloc_xrcd': CmdAllocXrcd}


def command(opcode, body=None, cmd_id=0, flags=0):
    """128 bytes of an admin command: header + body (a ctypes structure or bytes)."""
    op = h.CMD[opcode] if isinstance(opcode, str) else opcode
    hdr = bytes(AqHdr(opcode=op, flags=flags, cmd_id=cmd_id))
    b = bytes(body) if body is not None else b''
    return (hdr + b).ljust(AQ_SQE_SIZE, b'\0')[:AQ_SQE_SIZE]


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
