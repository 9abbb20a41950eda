# SPDX-License-Identifier: GPL-2.0-or-later
"""Python API over libqrnic_harness.so (tests/harness/harness.c).

A World holds N simulated hosts, each with one qrnic device and its own DMA
memory, a shared virtual clock, and cables between device pairs.  Each
Device object is a small driver: everything it does goes through the
device's registers, doorbells and the rings in simulated host memory.

    w = World(2)                        # two devices, cabled, brought up
    c = connect_rc(w.devs[0], w.devs[1], mtu=1024)
    mr = c.a.dev.reg_mr(c.a.pd, 4096)
    ...
    c.qa.post_send('SEND', sges=[(mr, 0, 100)])
    w.run()
    c.cqa.poll()  ->  [{'status': 0, 'status_name': 'SUCCESS', ...}]
"""
import ctypes
import ipaddress
import os
import random
import struct

import qrnic_api as api

# ---- ABI constants (model/abi/*.h) ------------------------------------------
MAX_SGE = 30
GRH_BYTES = 40

QPT = {'RC': 2, 'UC': 3, 'UD': 4, 'GSI': 0xf1, 'XRC_INI': 9, 'XRC_TGT': 10}
QPS = {'RESET': 0, 'INIT': 1, 'RTR': 2, 'RTS': 3, 'SQD': 4, 'SQE': 5, 'ERR': 6}
QPS_NAME = {v: k for k, v in QPS.items()}

ACCESS_LOCAL_WRITE = 1
ACCESS_REMOTE_WRITE = 2
ACCESS_REMOTE_READ = 4
ACCESS_REMOTE_ATOMIC = 8
ACCESS_ALL = 0xf
ACCESS_REMOTE = ACCESS_REMOTE_WRITE | ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC
ACCESS_MW_BIND = 0x10

WR = {'RDMA_WRITE': 0, 'RDMA_WRITE_WITH_IMM': 1, 'SEND': 2, 'SEND_WITH_IMM': 3,
      'RDMA_READ': 4, 'ATOMIC_CMP_AND_SWP': 5, 'ATOMIC_FETCH_AND_ADD': 6,
      'LOCAL_INV': 7, 'BIND_MW': 8, 'SEND_WITH_INV': 9, 'REG_MR': 0x20}
WR['CMP_AND_SWP'] = WR['ATOMIC_CMP_AND_SWP']
WR['FETCH_AND_ADD'] = WR['ATOMIC_FETCH_AND_ADD']

WQE_F_SIGNALED = 1
WQE_F_SOLICITED = 2
WQE_F_INLINE = 4
WQE_F_FENCE = 8

WC_STATUS = ['SUCCESS', 'LOC_LEN_ERR', 'LOC_QP_OP_ERR', 'LOC_EEC_OP_ERR', 'LOC_PROT_ERR',
             'WR_FLUSH_ERR', 'MW_BIND_ERR', 'BAD_RESP_ERR', 'LOC_ACCESS_ERR',
             'REM_INV_REQ_ERR', 'REM_ACCESS_ERR', 'REM_OP_ERR', 'RETRY_EXC_ERR',
             'RNR_RETRY_EXC_ERR', 'LOC_RDD_VIOL_ERR', 'REM_INV_RD_REQ_ERR', 'REM_ABORT_ERR',
             'INV_EECN_ERR', 'INV_EEC_STATE_ERR', 'FATAL_ERR', 'RESP_TIMEOUT_ERR',
             'GENERAL_ERR']
WC = {n: i for i, n in enumerate(WC_STATUS)}
WC_OP = {0: 'SEND', 1: 'RDMA_WRITE', 2: 'RDMA_READ', 3: 'COMP_SWAP', 4: 'FETCH_ADD',
         5: 'BIND_MW', 6: 'LOCAL_INV', 10: 'REG_MR', 128: 'RECV', 129: 'RECV_RDMA_WITH_IMM'}
CQE_F_WITH_IMM = 1
CQE_F_GRH = 2
CQE_F_IPV4 = 4
CQE_F_SEND = 8
CQE_F_WITH_INV = 16
CQE_F_XRC = 32
SRQ_F_XRC = 1
SRQ_F_PAGELIST = 2
VERR = ['NONE', 'BAD_WQE', 'LKEY', 'PD', 'BOUNDS', 'ACCESS', 'DMA', 'LENGTH', 'NAK',
        'RETRY', 'FLUSH', 'INJECTED', 'BAD_AH', 'ALIGN', 'MR_STATE']

EQE_COMPLETION = 0
EQE_ASYNC = 1
EV = {'CQ_ERR': 0, 'QP_FATAL': 1, 'QP_REQ_ERR': 2, 'QP_ACCESS_ERR': 3, 'COMM_EST': 4,
      'SQ_DRAINED': 5, 'DEVICE_FATAL': 8, 'PORT_ACTIVE': 9, 'PORT_ERR': 10,
      'SRQ_LIMIT_REACHED': 15, 'QP_LAST_WQE_REACHED': 16}
EV_NAME = {v: k for k, v in EV.items()}

NET_IPV4 = 1
NET_IPV6 = 2
MTU = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}

CMD = {'QUERY_DEVICE': 0x01, 'QUERY_PORT': 0x02, 'SET_GID': 0x03, 'QUERY_GID': 0x04,
       'ALLOC_UCTX': 0x05, 'DEALLOC_UCTX': 0x06, 'CREATE_PD': 0x07, 'DESTROY_PD': 0x08,
       'CREATE_CQ': 0x09, 'DESTROY_CQ': 0x0a, 'CREATE_QP': 0x0b, 'MODIFY_QP': 0x0c,
       'QUERY_QP': 0x0d, 'DESTROY_QP': 0x0e, 'REG_MR': 0x0f, 'DEREG_MR': 0x10,
       'QUERY_MR': 0x11, 'CREATE_AH': 0x12, 'DESTROY_AH': 0x13, 'CREATE_EQ': 0x14,
       'DESTROY_EQ': 0x15, 'QUERY_STATS': 0x16, 'CREATE_SRQ': 0x17, 'MODIFY_SRQ': 0x18,
       'QUERY_SRQ': 0x19, 'DESTROY_SRQ': 0x1a, 'ATTACH_MCAST': 0x1b, 'DETACH_MCAST': 0x1c,
       'ALLOC_MR': 0x1d, 'ALLOC_MW': 0x1e, 'RESIZE_CQ': 0x1f, 'MODIFY_CQ': 0x20,
       'REREG_MR': 0x21, 'ALLOC_XRCD': 0x22, 'DEALLOC_XRCD': 0x23,
       'QUERY_CC': 0x24, 'SET_CC': 0x25}
CMD_MAX = 0x25
# QUERY_CC/SET_CC parameters by id (QRNIC_CC_P_*, ABI 1.9): configuration parameter names
CC_PARAMS = ['cc_algo', 'np_enable', 'np_min_time_between_cnps', 'np_cnp_dscp', 'rp_enable',
             'rp_dce_tcp_g', 'rp_dce_tcp_rtt', 'rp_initial_alpha_value', 'rp_min_rate',
             'rp_min_dec_fac', 'rp_time_reset', 'rp_byte_reset', 'rp_threshold', 'rp_ai_rate',
             'rp_hai_rate', 'rp_initial_rate', 'timely_t_low', 'timely_t_high',
             'timely_min_rtt', 'timely_delta', 'timely_beta', 'timely_alpha', 'timely_hai_n']
MCAST_QPN = 0xffffff
SRQ_ATTR_MAX_WR, SRQ_ATTR_LIMIT = 1, 2
AQ_STATUS = ['OK', 'BAD_OPCODE', 'BAD_PARAM', 'BAD_HANDLE', 'NO_RESOURCES', 'BAD_STATE',
             'BUSY', 'DMA_ERROR', 'BAD_ATTR_MASK', 'NOT_SUPPORTED', 'INJECTED']
AQ = {n: i for i, n in enumerate(AQ_STATUS)}

QP_ATTR = {'STATE': 1 << 0, 'CUR_STATE': 1 << 1, 'EN_SQD_ASYNC': 1 << 2, 'ACCESS_FLAGS': 1 << 3,
           'PKEY_INDEX': 1 << 4, 'PORT': 1 << 5, 'QKEY': 1 << 6, 'AV': 1 << 7,
           'PATH_MTU': 1 << 8, 'TIMEOUT': 1 << 9, 'RETRY_CNT': 1 << 10, 'RNR_RETRY': 1 << 11,
           'RQ_PSN': 1 << 12, 'MAX_QP_RD_ATOMIC': 1 << 13, 'ALT_PATH': 1 << 14,
           'MIN_RNR_TIMER': 1 << 15, 'SQ_PSN': 1 << 16, 'MAX_DEST_RD_ATOMIC': 1 << 17,
           'PATH_MIG_STATE': 1 << 18, 'CAP': 1 << 19, 'DEST_QPN': 1 << 20, 'CC': 1 << 21}
# qp_attr field -> attr mask bit (used when modify() computes the mask)
_ATTR_BIT = {'qp_state': 'STATE', 'cur_qp_state': 'CUR_STATE',
             'en_sqd_async_notify': 'EN_SQD_ASYNC', 'qp_access_flags': 'ACCESS_FLAGS',
             'pkey_index': 'PKEY_INDEX', 'port_num': 'PORT', 'qkey': 'QKEY', 'av': 'AV',
             'path_mtu': 'PATH_MTU', 'timeout': 'TIMEOUT', 'retry_cnt': 'RETRY_CNT',
             'rnr_retry': 'RNR_RETRY', 'rq_psn': 'RQ_PSN', 'max_rd_atomic': 'MAX_QP_RD_ATOMIC',
             'min_rnr_timer': 'MIN_RNR_TIMER', 'sq_psn': 'SQ_PSN',
             'max_dest_rd_atomic': 'MAX_DEST_RD_ATOMIC', 'dest_qpn': 'DEST_QPN',
             'cc_algo': 'CC'}

REG = {'VERSION': 0x000, 'CAPS': 0x004, 'CTRL': 0x008, 'STATUS': 0x00c, 'FATAL_CODE': 0x010,
       'NUM_DB_PAGES': 0x014, 'NUM_VECTORS': 0x018, 'SCRATCH': 0x01c,
       'AQ_SQ_BASE_LO': 0x020, 'AQ_SQ_BASE_HI': 0x024, 'AQ_CQ_BASE_LO': 0x028,
       'AQ_CQ_BASE_HI': 0x02c, 'AQ_CTRL': 0x030, 'AQ_SQ_DB': 0x034, 'AQ_SQ_CI': 0x038,
       'AQ_STATUS': 0x03c, 'EQ_DB': 0x040, 'ETH_TX_BASE_LO': 0x080, 'ETH_TX_BASE_HI': 0x084,
       'ETH_RX_BASE_LO': 0x088, 'ETH_RX_BASE_HI': 0x08c, 'ETH_CTRL': 0x090, 'ETH_TX_DB': 0x094,
       'ETH_RX_DB': 0x098, 'ETH_TX_CI': 0x09c, 'ETH_RX_CI': 0x0a0, 'ETH_IRQ': 0x0a4,
       'MAC_LO': 0x0b0, 'MAC_HI': 0x0b4, 'PORT_STATUS': 0x0b8, 'ETH_MTU': 0x0bc,
       'CLOCK_LO': 0x0c0, 'CLOCK_HI': 0x0c4}
REG_CLOCK_LO = REG['CLOCK_LO']
BAR0_SIZE = 0x1000
DB_PAGE_SIZE = 0x1000
DB_SQ, DB_RQ, DB_CQ, DB_SRQ = 0x00, 0x08, 0x10, 0x18
DB_CLOCK = 0x20                 # read-only device clock in every doorbell page (ABI 1.7)
CQ_F_TIMESTAMP = 1              # CREATE_CQ flags: 64-byte CQEs with the timestamp
CQ_F_PAGELIST = 2               # CREATE_CQ/RESIZE_CQ: ring_addr is a page list (ABI 1.8)
QP_F_SQ_PAGELIST, QP_F_RQ_PAGELIST = 2, 4   # CREATE_QP flags (ABI 1.8)
CAP_RING_PAGELIST = 1 << 15
CAP_CC_PARAMS = 1 << 16      # QUERY_CC, SET_CC (ABI 1.9)
CAP_RQ_DBREC = 1 << 17       # CREATE_QP rq_dbrec_addr: RQ producer records (ABI 1.10)
CAP_SQ_DBREC = 1 << 18       # CREATE_QP sq_dbrec_addr: SQ records with a doorbell flag (ABI 1.11)
SQ_DBREC_NO_DB = 1 << 0      # struct qrnic_sq_dbrec flags: the device will read pi without a doorbell
RING_PAGE = 4096
CLOCK_KHZ = 1_000_000           # the device clock counts ns
CTRL_ENABLE, CTRL_RESET = 1, 2
STATUS_READY, STATUS_ENABLED, STATUS_FATAL = 1, 2, 4
AQ_CTRL_ENABLE = 1 << 31
AQ_STATUS_ENABLED, AQ_STATUS_ERROR = 1, 2
ABI_MAJOR = 1
ABI_MINOR = 11          # QRNIC_ABI_MINOR: 1 SRQ, 2 fast registration, 3 XRC, 4 per-QP CC, 5 BF,
                        # 6 ConnectX-5 limits (30 SGEs), 7 device clock and completion timestamps,
                        # 8 ring page lists, 9 QUERY_CC/SET_CC, 10 RQ producer records,
                        # 11 SQ records with a doorbell flag
ABI_VERSION = (ABI_MAJOR << 16) | ABI_MINOR

# BTH opcodes
OP = {'RC_SEND_FIRST': 0x00, 'RC_SEND_MIDDLE': 0x01, 'RC_SEND_LAST': 0x02,
      'RC_SEND_LAST_IMM': 0x03, 'RC_SEND_ONLY': 0x04, 'RC_SEND_ONLY_IMM': 0x05,
      'RC_WRITE_FIRST': 0x06, 'RC_WRITE_MIDDLE': 0x07, 'RC_WRITE_LAST': 0x08,
      'RC_WRITE_LAST_IMM': 0x09, 'RC_WRITE_ONLY': 0x0a, 'RC_WRITE_ONLY_IMM': 0x0b,
      'RC_READ_REQ': 0x0c, 'RC_READ_RESP_FIRST': 0x0d, 'RC_READ_RESP_MIDDLE': 0x0e,
      'RC_READ_RESP_LAST': 0x0f, 'RC_READ_RESP_ONLY': 0x10, 'RC_ACK': 0x11,
      'RC_ATOMIC_ACK': 0x12, 'RC_CMP_SWAP': 0x13, 'RC_FETCH_ADD': 0x14,
      'RC_SEND_LAST_INV': 0x16, 'RC_SEND_ONLY_INV': 0x17,
      'UC_SEND_FIRST': 0x20, 'UC_SEND_MIDDLE': 0x21, 'UC_SEND_LAST': 0x22,
      'UC_SEND_LAST_IMM': 0x23, 'UC_SEND_ONLY': 0x24, 'UC_SEND_ONLY_IMM': 0x25,
      'UC_WRITE_FIRST': 0x26, 'UC_WRITE_MIDDLE': 0x27, 'UC_WRITE_LAST': 0x28,
      'UC_WRITE_LAST_IMM': 0x29, 'UC_WRITE_ONLY': 0x2a, 'UC_WRITE_ONLY_IMM': 0x2b,
      'UD_SEND_ONLY': 0x64, 'UD_SEND_ONLY_IMM': 0x65, 'CNP': 0x81}
# XRC (transport 101): the RC opcodes + 0xa0; requests carry an XRCETH
OP.update({'XRC' + k[2:]: v | 0xa0 for k, v in list(OP.items()) if k.startswith('RC_')})
XRC_RESPONSES = (0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2)
OP_NAME = {v: k for k, v in OP.items()}
# AETH syndromes
AETH_ACK = 0x00            # 0x00-0x1f (credit count in low bits)
AETH_RNR_NAK = 0x20        # 0x20-0x3f (timer in low bits)
NAK_PSN_SEQ = 0x60
NAK_INV_REQ = 0x61
NAK_REM_ACCESS = 0x62
NAK_REM_OP = 0x63

# harness constants (harness.h)
E_TIMEOUT, E_NOAQ, E_FULL, E_NOOBJ, E_INVAL, E_NOMEM, E_DEV = \
    -1000, -1001, -1002, -1003, -1004, -1005, -1006
RUN_RESULT = {0: 'idle', 1: 'time', 2: 'iter', 3: 'stop'}
ACT = {'drop': 0, 'dup': 1, 'hold': 2, 'corrupt': 3, 'mark_ce': 4}
F_DELIVERED, F_DROP_RULE, F_DROP_RANDOM, F_DUPLICATED, F_HELD, F_CORRUPTED, F_RX_FULL, \
    F_NO_CABLE, F_LOOPBACK = (1 << i for i in range(9))
MR_SHUFFLE, MR_CONTIG, MR_PHYS = 1, 2, 4
ADMIN_RAW = 1
WIRE_STATS = ['tx', 'delivered', 'drop_rule', 'drop_random', 'duplicated', 'held', 'corrupted',
              'rx_full', 'no_cable', 'injected', 'busy_unscheduled', 'stale_admin_cqes', 'described',
              'loopback']

# ---- ABI structures (checked against the C layout by check_layout()) ---------
LE = ctypes.LittleEndianStructure


class Av(LE):
    _pack_ = 1
    _fields_ = [('dgid', ctypes.c_uint8 * 16), ('flow_label', ctypes.c_uint32),
                ('sgid_index', ctypes.c_uint8), ('hop_limit', ctypes.c_uint8),
                ('traffic_class', ctypes.c_uint8), ('net_type', ctypes.c_uint8),
                ('dmac', ctypes.c_uint8 * 6), ('rsvd', ctypes.c_uint16)]


class QpAttr(LE):
    _pack_ = 1
    _fields_ = [('attr_mask', ctypes.c_uint32), ('qp_state', ctypes.c_uint8),
                ('cur_qp_state', ctypes.c_uint8), ('path_mtu', ctypes.c_uint8),
                ('timeout', ctypes.c_uint8), ('retry_cnt', ctypes.c_uint8),
                ('rnr_retry', ctypes.c_uint8), ('min_rnr_timer', ctypes.c_uint8),
                ('max_rd_atomic', ctypes.c_uint8), ('max_dest_rd_atomic', ctypes.c_uint8),
                ('sq_draining', ctypes.c_uint8), ('en_sqd_async_notify', ctypes.c_uint8),
                ('port_num', ctypes.c_uint8), ('pkey_index', ctypes.c_uint16),
                ('cc_algo', ctypes.c_uint8), ('rsvd', ctypes.c_uint8),
                ('qkey', ctypes.c_uint32), ('rq_psn', ctypes.c_uint32),
                ('sq_psn', ctypes.c_uint32), ('dest_qpn', ctypes.c_uint32),
                ('qp_access_flags', ctypes.c_uint32), ('av', Av)]


class Cqe(LE):
    _pack_ = 1
    _fields_ = [('wr_id', ctypes.c_uint64), ('byte_len', ctypes.c_uint32),
                ('imm_data', ctypes.c_uint32), ('qpn', ctypes.c_uint32),
                ('src_qp', ctypes.c_uint32), ('status', ctypes.c_uint8),
                ('opcode', ctypes.c_uint8), ('flags', ctypes.c_uint8),
                ('vendor_err', ctypes.c_uint8), ('wqe_index', ctypes.c_uint16),
                ('rsvd', ctypes.c_uint8), ('owner', ctypes.c_uint8)]


class Eqe(LE):
    _pack_ = 1
    _fields_ = [('type', ctypes.c_uint8), ('subtype', ctypes.c_uint8), ('rsvd0', ctypes.c_uint16),
                ('handle', ctypes.c_uint32), ('data', ctypes.c_uint32),
                ('rsvd1', ctypes.c_uint8 * 3), ('owner', ctypes.c_uint8)]


class AqCqe(LE):
    _pack_ = 1
    _fields_ = [('result', ctypes.c_uint32 * 4), ('cmd_id', ctypes.c_uint16),
                ('opcode', ctypes.c_uint8), ('status', ctypes.c_uint8), ('sq_ci', ctypes.c_uint32),
                ('detail', ctypes.c_uint32), ('rsvd', ctypes.c_uint8 * 3), ('owner', ctypes.c_uint8)]


class DeviceAttr(LE):
    _pack_ = 1
    _fields_ = [(n, ctypes.c_uint32) for n in (
        'abi_version', 'fw_version', 'max_qp', 'max_qp_wr', 'max_sge', 'max_inline', 'max_cq',
        'max_cqe', 'max_mr', 'max_pd', 'max_ah', 'max_eq', 'max_uctx', 'max_mtt',
        'max_qp_rd_atom', 'max_qp_init_rd_atom', 'max_msg_size', 'num_vectors', 'gid_tbl_len',
        'caps')] + [('page_size_cap', ctypes.c_uint64), ('max_mr_size', ctypes.c_uint64),
                    ('mac', ctypes.c_uint8 * 6), ('rsvd0', ctypes.c_uint8 * 2),
                    ('max_srq', ctypes.c_uint32), ('max_srq_wr', ctypes.c_uint32),
                    ('max_mcg', ctypes.c_uint32), ('max_mcg_qp', ctypes.c_uint32),
                    ('max_fast_reg_pages', ctypes.c_uint32), ('max_mw', ctypes.c_uint32),
                    ('max_xrcd', ctypes.c_uint32), ('hca_core_clock', ctypes.c_uint32),
                    ('timestamp_mask', ctypes.c_uint64)]


class PortAttr(LE):
    _pack_ = 1
    _fields_ = [('state', ctypes.c_uint8), ('phys_state', ctypes.c_uint8),
                ('max_mtu', ctypes.c_uint8), ('active_mtu', ctypes.c_uint8),
                ('gid_tbl_len', ctypes.c_uint32), ('speed_mbps', ctypes.c_uint32),
                ('eth_mtu', ctypes.c_uint32), ('mac', ctypes.c_uint8 * 6),
                ('rsvd', ctypes.c_uint8 * 10)]


class MptEntry(LE):
    _pack_ = 1
    _fields_ = [('flags', ctypes.c_uint32), ('key', ctypes.c_uint32), ('pdn', ctypes.c_uint32),
                ('access', ctypes.c_uint32), ('iova', ctypes.c_uint64), ('length', ctypes.c_uint64),
                ('mtt_base', ctypes.c_uint32), ('npages', ctypes.c_uint32),
                ('page_shift', ctypes.c_uint8), ('rsvd', ctypes.c_uint8 * 3),
                ('max_pages', ctypes.c_uint32)]


class SendWqe(LE):
    _pack_ = 1
    _fields_ = [('opcode', ctypes.c_uint8), ('flags', ctypes.c_uint8), ('num_sge', ctypes.c_uint8),
                ('rsvd0', ctypes.c_uint8), ('inline_len', ctypes.c_uint32),
                ('wr_id', ctypes.c_uint64), ('imm_data', ctypes.c_uint32), ('rkey', ctypes.c_uint32),
                ('remote_addr', ctypes.c_uint64), ('compare_add', ctypes.c_uint64),
                ('swap', ctypes.c_uint64), ('ah', ctypes.c_uint32), ('remote_qpn', ctypes.c_uint32),
                ('remote_qkey', ctypes.c_uint32), ('xrc_srqn', ctypes.c_uint32)]


class Sge(LE):
    _pack_ = 1
    _fields_ = [('addr', ctypes.c_uint64), ('length', ctypes.c_uint32), ('lkey', ctypes.c_uint32)]


class RecvWqe(LE):
    _pack_ = 1
    _fields_ = [('wr_id', ctypes.c_uint64), ('num_sge', ctypes.c_uint8), ('rsvd', ctypes.c_uint8 * 7)]


class TraceEv(LE):
    _pack_ = 1
    _fields_ = [('t_ns', ctypes.c_uint64), ('type', ctypes.c_uint32), ('qpn', ctypes.c_uint32),
                ('psn', ctypes.c_uint32), ('a', ctypes.c_uint32), ('b', ctypes.c_uint32),
                ('rsvd_pad', ctypes.c_uint32), ('addr', ctypes.c_uint64)]


class TraceRec(LE):
    _pack_ = 1
    _fields_ = [('ev', TraceEv), ('dev', ctypes.c_uint32), ('rsvd', ctypes.c_uint32)]


class FrameInfo(LE):
    _pack_ = 1
    _fields_ = [('t_ns', ctypes.c_uint64), ('seq', ctypes.c_uint64), ('src_seq', ctypes.c_uint64),
                ('src', ctypes.c_int32), ('dst', ctypes.c_int32), ('len', ctypes.c_uint32),
                ('fate', ctypes.c_uint32)]


class SwitchCfg(ctypes.Structure):
    """struct hx_switch_cfg (tests/harness/harness.h), native layout"""
    _fields_ = [('rate_bps', ctypes.c_uint64), ('overhead', ctypes.c_uint32),
                ('latency_ns', ctypes.c_uint64), ('buffer', ctypes.c_uint64),
                ('kmin', ctypes.c_uint64), ('kmax', ctypes.c_uint64), ('pmax', ctypes.c_double),
                ('pfc', ctypes.c_int), ('xoff', ctypes.c_uint64), ('xon', ctypes.c_uint64),
                ('seed', ctypes.c_uint64), ('leaves', ctypes.c_int), ('spines', ctypes.c_int),
                ('hosts_per_leaf', ctypes.c_int), ('shared_buffer', ctypes.c_uint64),
                ('alpha', ctypes.c_double), ('pfc_resume', ctypes.c_uint64),
                ('prio_queues', ctypes.c_int), ('ets', ctypes.c_int),
                ('ets_weight', ctypes.c_uint8 * 8), ('pfc_lossy', ctypes.c_uint8)]


class SwitchStats(ctypes.Structure):
    """struct hx_switch_stats (one port)"""
    _fields_ = [(n, ctypes.c_uint64) for n in ('frames', 'bytes', 'marks', 'drops', 'q_now',
                                               'q_max')] + \
        [('q_avg', ctypes.c_double)] + \
        [(n, ctypes.c_uint64) for n in ('win_max', 'pauses', 'paused_ns', 'ingress',
                                        'pfc_frames', 'pfc_rx')]


class SwitchQueueStats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in
                ('frames', 'bytes', 'drops', 'marks', 'paused_ns', 'q_now', 'q_max',
                 'tx_frames', 'tx_bytes')]


# C struct name -> Python mirror
class RegMrWqe(LE):
    _pack_ = 1
    _fields_ = [('opcode', ctypes.c_uint8), ('flags', ctypes.c_uint8), ('page_shift', ctypes.c_uint8),
                ('access', ctypes.c_uint8), ('npages', ctypes.c_uint32), ('wr_id', ctypes.c_uint64),
                ('key', ctypes.c_uint32), ('rsvd0', ctypes.c_uint32), ('iova', ctypes.c_uint64),
                ('length', ctypes.c_uint64), ('pbl_addr', ctypes.c_uint64),
                ('rsvd1', ctypes.c_uint8 * 16)]


class BindMwWqe(LE):
    _pack_ = 1
    _fields_ = [('opcode', ctypes.c_uint8), ('flags', ctypes.c_uint8), ('rsvd0', ctypes.c_uint8),
                ('access', ctypes.c_uint8), ('mr_lkey', ctypes.c_uint32), ('wr_id', ctypes.c_uint64),
                ('key', ctypes.c_uint32), ('rsvd1', ctypes.c_uint32), ('addr', ctypes.c_uint64),
                ('length', ctypes.c_uint64), ('rsvd2', ctypes.c_uint8 * 24)]


MIRRORS = {'qrnic_av': Av, 'qrnic_qp_attr': QpAttr, 'qrnic_cqe': Cqe, 'qrnic_eqe': Eqe,
           'qrnic_aq_cqe': AqCqe, 'qrnic_device_attr': DeviceAttr, 'qrnic_port_attr': PortAttr,
           'qrnic_mpt_entry': MptEntry, 'qrnic_send_wqe': SendWqe, 'qrnic_sge': Sge,
           'qrnic_recv_wqe': RecvWqe, 'qrnic_trace_ev': TraceEv, 'hx_trace_rec': TraceRec,
           'hx_frame_info': FrameInfo, 'qrnic_reg_mr_wqe': RegMrWqe,
           'qrnic_bind_mw_wqe': BindMwWqe}


# ---- admin command layouts (model/abi/qrnic_admin.h), checked by check_layout() ----
AQ_SQE_BYTES = 128
u8, u16, u32, u64 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64


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
                ('flags', u32), ('srqn', u32), ('sq_addr', u64), ('rq_addr', u64),
                ('rq_dbrec_addr', u64), ('sq_dbrec_addr', u64)]


class CmdModifyQp(LE):
    _pack_ = 1
    _fields_ = [('qpn', u32), ('rsvd', u32), ('attr', QpAttr)]


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
    _fields_ = [('pdn', u32), ('rsvd', u32), ('av', Av)]


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


CMD_MIRRORS = {'qrnic_aq_hdr': AqHdr, 'qrnic_cmd_query': CmdQuery, 'qrnic_cmd_gid': CmdGid,
               'qrnic_cmd_create_cq': CmdCreateCq, 'qrnic_cmd_create_qp': CmdCreateQp,
               'qrnic_cmd_modify_qp': CmdModifyQp, 'qrnic_cmd_query_qp': CmdQueryQp,
               'qrnic_cmd_reg_mr': CmdRegMr, 'qrnic_cmd_create_ah': CmdCreateAh,
               'qrnic_cmd_create_eq': CmdCreateEq, 'qrnic_cmd_create_srq': CmdCreateSrq,
               'qrnic_cmd_modify_srq': CmdModifySrq, 'qrnic_cmd_alloc_xrcd': CmdAllocXrcd}


def command(opcode, body=None, cmd_id=0, flags=0):
    """128 bytes of an admin command: header + body (a ctypes structure or bytes)."""
    op = CMD[opcode] if isinstance(opcode, str) else opcode
    hdr = bytes(AqHdr(opcode=op, flags=flags, cmd_id=cmd_id))
    b = bytes(body) if body is not None else b''
    return (hdr + b).ljust(AQ_SQE_BYTES, b'\0')[:AQ_SQE_BYTES]


def to_dict(s):
    out = {}
    for name, _ in s._fields_:
        v = getattr(s, name)
        if isinstance(v, ctypes.Array):
            v = bytes(v) if v._type_ is ctypes.c_uint8 else list(v)
        elif isinstance(v, ctypes.Structure):
            v = to_dict(v)
        out[name] = v
    return out


# ---- library loading -------------------------------------------------------------
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_lib = None


def build_dir():
    return os.environ.get('QRNIC_BUILD_DIR') or os.path.join(_REPO, 'build')


def lib_path():
    return os.path.join(build_dir(), 'tests', 'harness', 'libqrnic_harness.so')


_U8P = ctypes.POINTER(ctypes.c_uint8)
_SIGS = {
    # name: (restype, [argtypes])
    'hx_world_new': (ctypes.c_void_p, [ctypes.c_uint64, ctypes.c_uint64]),
    'hx_world_free': (None, [ctypes.c_void_p]),
    'hx_world_error': (ctypes.c_char_p, [ctypes.c_void_p]),
    'hx_dev_add': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    'hx_cfg_param': (ctypes.c_int, [ctypes.c_int] + [ctypes.POINTER(ctypes.c_char_p)] * 3 +
                     [ctypes.POINTER(ctypes.c_uint64)] * 3 + [ctypes.POINTER(ctypes.c_uint32)] +
                     [ctypes.POINTER(ctypes.c_char_p)] * 2),
    'hx_num_devs': (ctypes.c_int, [ctypes.c_void_p]),
    'hx_cable': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_now': (ctypes.c_uint64, [ctypes.c_void_p]),
    'hx_run': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64]),
    'hx_watch_writes': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_watched_writes': (ctypes.c_uint64, [ctypes.c_void_p]),
    'hx_run_to_write': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64,
                                       ctypes.c_uint64]),
    'hx_run_iterations': (ctypes.c_uint64, [ctypes.c_void_p]),
    'hx_timer_deadline': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_sched_pending': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int]),
    'hx_wire_stat': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_set_admin_timeout': (None, [ctypes.c_void_p, ctypes.c_uint64]),
    'hx_reg_read': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint]),
    'hx_reg_write': (None, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint]),
    'hx_db_read': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint]),
    'hx_db_write': (None, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint]),
    'hx_dev_reset': (None, [ctypes.c_void_p, ctypes.c_int]),
    'hx_set_link': (None, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_set_ring_pagelist': (None, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_set_rq_dbrec': (None, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_set_sq_dbrec': (None, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_sq_db_skipped': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_qp_sq_dbrec': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]),
    'hx_qp_rq_dbrec': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]),
    'hx_port_pause': (None, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_port_paused': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int]),
    'hx_rxbuf_info': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]),
    'hx_switch_attach': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    'hx_switch_queue_stats': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                             ctypes.c_void_p]),
    'hx_switch_stats': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]),
    'hx_switch_shared_used': (ctypes.c_uint64, [ctypes.c_void_p,
                                                ctypes.POINTER(ctypes.c_uint64)]),
    'hx_switch_fabric_queue_stats': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                                    ctypes.c_int, ctypes.c_int, ctypes.c_void_p]),
    'hx_wire_send': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p,
                                    ctypes.c_uint32]),
    'hx_set_timing': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p]),
    'hx_dev_busy': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int]),
    'hx_dev_check': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]),
    'hx_dev_selfcheck': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_dev_save': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64]),
    'hx_dev_load': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint64]),
    'hx_dev_snapshot': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int]),
    'hx_snap_describe': (ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_char_p,
                                        ctypes.c_uint32]),
    'hx_advance': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64]),
    'hx_dev_stat': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_qp_cc': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_uint64)]),
    'hx_query_view': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint32,
                                     ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint,
                                     ctypes.POINTER(ctypes.c_uint32)]),
    'hx_view_nfields': (ctypes.c_int, [ctypes.c_int]),
    'hx_view_field': (ctypes.c_char_p, [ctypes.c_int, ctypes.c_int]),
    'qrnic_qp_state_name': (ctypes.c_char_p, [ctypes.c_uint32]),
    'qrnic_qp_type_name': (ctypes.c_char_p, [ctypes.c_uint32]),
    'hx_stat_name': (ctypes.c_char_p, [ctypes.c_int]),
    'hx_stat_count': (ctypes.c_int, []),
    'hx_irq_count': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint]),
    'hx_irq_total': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_rx_inject': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]),
    'hx_rx_inject_vouched': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p,
                                            ctypes.c_uint32]),
    'hx_set_vouch': (None, [ctypes.c_void_p, ctypes.c_int]),
    'hx_set_dma_refs': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int]),
    'hx_dma_refs_stats': (None, [ctypes.POINTER(ctypes.c_uint64)] * 3),
    'hx_set_lazy_icrc': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_set_trains': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_wire_land': (ctypes.c_uint64, [ctypes.c_void_p]),
    'hx_set_db_batch': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_db_batched': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_sq_rec_taken': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_mac': (_U8P, [ctypes.c_void_p, ctypes.c_int]),
    'hx_log_total': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_log_get': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]),
    'hx_log_clear': (None, [ctypes.c_void_p, ctypes.c_int]),
    'hx_tp_total': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_tp_get': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                 ctypes.POINTER(ctypes.c_uint64)]),
    'hx_tp_count': (ctypes.c_int, []),
    'qrnic_tp_name': (ctypes.c_char_p, [ctypes.c_uint]),
    'qrnic_tp_category': (ctypes.c_int, [ctypes.c_uint]),
    'qrnic_tp_doc': (ctypes.c_char_p, [ctypes.c_uint]),
    'qrnic_tp_format_src': (ctypes.c_char_p, [ctypes.c_uint]),
    'qrnic_tp_fields_src': (ctypes.c_char_p, [ctypes.c_uint]),
    'qrnic_tp_nfields': (ctypes.c_uint, [ctypes.c_uint]),
    'qrnic_tp_format': (ctypes.c_int, [ctypes.c_uint, ctypes.POINTER(ctypes.c_uint64),
                                       ctypes.c_char_p, ctypes.c_size_t]),
    'hx_trace_enable': (None, [ctypes.c_void_p, ctypes.c_uint32]),
    'hx_trace_total': (ctypes.c_uint64, [ctypes.c_void_p]),
    'hx_next_event': (ctypes.c_uint64, [ctypes.c_void_p]),
    'hx_trace_read': (ctypes.c_uint32, [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p,
                                        ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64)]),
    'hx_trace_name': (ctypes.c_char_p, [ctypes.c_uint32]),
    'hx_mem_base': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_mem_size': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_mem_alloc': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]),
    'hx_mem_read': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64]),
    'hx_mem_write': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64]),
    'hx_mem_deny': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]),
    'hx_mem_deny_clear': (None, [ctypes.c_void_p, ctypes.c_int]),
    'hx_dma_stat': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_mem_mark': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_mem_release': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]),
    'hx_dma_trap': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64,
                                   ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64]),
    'hx_dma_trap_state': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                         ctypes.POINTER(ctypes.c_uint64)]),
    'hx_dma_log_start': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]),
    'hx_dma_log_count': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int,
                                           ctypes.POINTER(ctypes.c_uint64)]),
    'hx_dma_log_get': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                                      ctypes.POINTER(ctypes.c_uint64),
                                      ctypes.POINTER(ctypes.c_uint64)]),
    'hx_wire_set_latency': (None, [ctypes.c_void_p, ctypes.c_uint64]),
    'hx_wire_set_rate': (None, [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32]),
    'hx_wire_rule_add': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_int,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_uint32, ctypes.c_int64,
                                        ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32]),
    'hx_wire_rule_fired': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_wire_rules_clear': (None, [ctypes.c_void_p]),
    'hx_wire_random': (None, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                              ctypes.c_uint32, ctypes.c_uint64]),
    'hx_pcap_open': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    'hx_wire_trusted': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int]),
    'hx_pcap_close': (None, [ctypes.c_void_p]),
    'hx_framelog_enable': (None, [ctypes.c_void_p, ctypes.c_uint32]),
    'hx_framelog_count': (ctypes.c_uint32, [ctypes.c_void_p]),
    'hx_framelog_get': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                       ctypes.c_void_p, ctypes.c_uint32]),
    'hx_framelog_clear': (None, [ctypes.c_void_p]),
    'hx_drv_aq_alloc': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint]),
    'hx_drv_bringup': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint]),
    'hx_drv_forget': (None, [ctypes.c_void_p, ctypes.c_int]),
    'hx_drv_aq_addr': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_drv_aq_pi': (ctypes.c_uint32, [ctypes.c_void_p, ctypes.c_int]),
    'hx_drv_aq_ci': (ctypes.c_uint32, [ctypes.c_void_p, ctypes.c_int]),
    'hx_admin': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint32]),
    'hx_last_cqe': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]),
    'hx_patch_next_cmd': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint32]),
    'hx_patch_next_wqe': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint32]),
    'hx_scratch': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_query': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint8, ctypes.c_uint32,
                                ctypes.c_void_p, ctypes.c_uint32]),
    'hx_set_gid': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_int,
                                  ctypes.c_int, ctypes.c_char_p]),
    'hx_query_gid': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p]),
    'hx_alloc_uctx': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int]),
    'hx_destroy': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint8, ctypes.c_uint32]),
    'hx_create_pd': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]),
    'hx_create_eq': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint32]),
    'hx_create_cq': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32,
                                      ctypes.c_uint, ctypes.c_int]),
    'hx_create_cq_flags': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                            ctypes.c_uint32, ctypes.c_uint, ctypes.c_int,
                                            ctypes.c_uint]),
    'hx_resize_cq': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint]),
    'hx_modify_cq': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint,
                                    ctypes.c_uint]),
    'hx_create_qp': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32,
                                      ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint, ctypes.c_uint,
                                      ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint32]),
    'hx_modify_qp': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p]),
    'hx_create_qp_srq': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                          ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                          ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                                          ctypes.c_uint32, ctypes.c_uint32]),
    'hx_create_srq': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                       ctypes.c_uint32, ctypes.c_uint, ctypes.c_uint,
                                       ctypes.c_uint32, ctypes.c_int]),
    'hx_srq_ci': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]),
    'hx_ring_srq': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]),
    'hx_post_srq_recv': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                          ctypes.c_uint64, ctypes.c_uint, ctypes.c_void_p,
                                          ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]),
    'hx_modify_srq': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                     ctypes.c_uint32, ctypes.c_uint32]),
    'hx_query_srq': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                    ctypes.c_void_p]),
    'hx_query_qp': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p]),
    'hx_reg_mr': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32,
                                   ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint, ctypes.c_int,
                                   ctypes.c_uint32]),
    'hx_query_mr': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p]),
    'hx_create_ah': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p]),
    'hx_mr_write': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64,
                                   ctypes.c_char_p, ctypes.c_uint64]),
    'hx_mr_read': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64,
                                  ctypes.c_void_p, ctypes.c_uint64]),
    'hx_mr_bus_addr': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64]),
    'hx_mr_host_span': (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64,
                                          ctypes.POINTER(ctypes.c_uint64)]),
    'hx_mr_pbl_addr': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]),
    'hx_post_send': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint,
                                      ctypes.c_uint, ctypes.c_uint64, ctypes.c_uint,
                                      ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                      ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32,
                                      ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int]),
    'hx_post_send_raw': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                          ctypes.c_char_p, ctypes.c_uint32, ctypes.c_int]),
    'hx_post_recv': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64,
                                      ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.c_int]),
    'hx_post_recv_raw': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                          ctypes.c_char_p, ctypes.c_uint32, ctypes.c_int]),
    'hx_ring_sq': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]),
    'hx_ring_sq_bf': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint,
                                     ctypes.c_uint, ctypes.c_uint32, ctypes.c_int64,
                                     ctypes.c_int64]),
    'hx_ring_rq': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]),
    'hx_qp_indexes': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p]),
    'hx_poll_cq': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_int]),
    'hx_poll_cq_ts': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                                     ctypes.c_void_p, ctypes.c_int]),
    'hx_peek_cq': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]),
    'hx_arm_cq': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_int]),
    'hx_cq_ci': (ctypes.c_uint32, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]),
    'hx_poll_eq': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_int]),
    'hx_arm_eq': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]),
    'hx_layout': (ctypes.c_char_p, []),
}


def lib():
    global _lib
    if _lib is None:
        path = lib_path()
        if not os.path.exists(path):
            raise RuntimeError(f'{path} not found: build first (bash scripts/test.sh, or '
                               f'meson setup build && ninja -C build)')
        l = ctypes.CDLL(path)
        for name, (res, args) in _SIGS.items():
            f = getattr(l, name)
            f.restype = res
            f.argtypes = args
        _lib = l
    return _lib


TP_MAX_FIELDS = 8
TP_CATEGORY = ('err', 'ub', 'ev')


def tracepoints():
    """The typed trace points (model/qrnic_tracepoints.h), in list order:
    [{'name', 'category' ('err', 'ub', 'ev'), 'doc', 'format' (the format
    as written in C, e.g. '"addr 0x%" PRIx64'), 'fields': [(type, name)]}]."""
    l = lib()
    out = []
    for tp in range(l.hx_tp_count()):
        fields = []
        for f in l.qrnic_tp_fields_src(tp).decode().split('),'):
            t, n = f.strip().strip('()').split(',')
            fields.append((t.strip(), n.strip()))
        assert len(fields) == l.qrnic_tp_nfields(tp)
        out.append({'name': l.qrnic_tp_name(tp).decode(),
                    'category': TP_CATEGORY[l.qrnic_tp_category(tp)],
                    'doc': l.qrnic_tp_doc(tp).decode(),
                    'format': l.qrnic_tp_format_src(tp).decode(),
                    'fields': fields})
    return out


def layout():
    """The C layout table: {struct: {field: (offset, size)}, '__size__'}"""
    out = {}
    for line in lib().hx_layout().decode().splitlines():
        s, f, off, size = line.split()
        out.setdefault(s, {})[f] = (int(off), int(size))
    return out


CFG_POW2 = 1 << 0    # QRNIC_CFG_POW2


def config_params():
    """The model's configuration table (model/config.c), in its order: a
    list of dicts name, prop (None: no QEMU property), type ('uint32',
    'uint64', 'bool', 'mac'), default, min, max, pow2, help, seen."""
    out = []
    i = 0
    while True:
        strs = [ctypes.c_char_p() for _ in range(5)]
        nums = [ctypes.c_uint64() for _ in range(3)]
        flags = ctypes.c_uint32()
        name, prop, typ, help_, seen = strs
        if lib().hx_cfg_param(i, ctypes.byref(name), ctypes.byref(prop), ctypes.byref(typ),
                              *[ctypes.byref(n) for n in nums], ctypes.byref(flags),
                              ctypes.byref(help_), ctypes.byref(seen)) != 0:
            return out
        dec = (lambda b: b.value.decode() if b.value is not None else None)
        out.append({'name': dec(name), 'prop': dec(prop), 'type': dec(typ),
                    'default': nums[0].value, 'min': nums[1].value, 'max': nums[2].value,
                    'pow2': bool(flags.value & CFG_POW2), 'help': dec(help_),
                    'seen': dec(seen)})
        i += 1


def config_value_str(p, v):
    """A parameter's value as QEMU's -device help shows it."""
    if p['type'] == 'bool':
        return 'on' if v else 'off'
    if p['type'] == 'mac':
        return ':'.join(f'{v >> s & 0xff:02x}' for s in range(40, -8, -8))
    return str(v)


def config_doc_table():
    """docs/spec.md section 16.2's table, made from config_params()."""
    def num(v):
        return f'2^{v.bit_length() - 1}' if v >= 1 << 20 and not v & (v - 1) else str(v)

    rows = ['| Field | QEMU property | Range | Default | Meaning | Seen as |',
            '|---|---|---|---|---|---|']
    for p in config_params():
        if p['type'] == 'mac':
            rng, dflt = 'unicast', f"`{config_value_str(p, p['default'])}`"
        elif p['type'] == 'bool':
            rng, dflt = 'off, on', config_value_str(p, p['default'])
        else:
            rng = f"{num(p['min'])}..{num(p['max'])}"
            if p['pow2']:
                rng = 'power of two, ' + rng
            dflt = num(p['default'])
        prop = f"`{p['prop']}`" if p['prop'] else '—'
        rows.append(f"| `{p['name']}` | {prop} | {rng} | {dflt} | {p['help']} | {p['seen']} |")
    return '\n'.join(rows) + '\n'


def check_layout():
    """Raise AssertionError if a Python mirror differs from the C structure."""
    lay = layout()
    for cname, py in list(MIRRORS.items()) + list(CMD_MIRRORS.items()):
        c = lay[cname]
        assert ctypes.sizeof(py) == c['__size__'][0], \
            f'{cname}: size {ctypes.sizeof(py)} != C {c["__size__"][0]}'
        for field, (off, size) in c.items():
            if field == '__size__':
                continue
            d = getattr(py, field)
            assert (d.offset, d.size) == (off, size), \
                f'{cname}.{field}: python ({d.offset},{d.size}) != C ({off},{size})'


_CMD_BODY = {'query': 'qrnic_cmd_query', 'gid': 'qrnic_cmd_gid', 'create_cq': 'qrnic_cmd_create_cq',
             'create_qp': 'qrnic_cmd_create_qp', 'modify_qp': 'qrnic_cmd_modify_qp',
             'query_qp': 'qrnic_cmd_query_qp', 'reg_mr': 'qrnic_cmd_reg_mr',
             'create_ah': 'qrnic_cmd_create_ah', 'create_eq': 'qrnic_cmd_create_eq',
             'alloc_mr': 'qrnic_cmd_alloc_mr', 'alloc_mw': 'qrnic_cmd_alloc_mw',
             'resize_cq': 'qrnic_cmd_resize_cq', 'modify_cq': 'qrnic_cmd_modify_cq',
             'rereg_mr': 'qrnic_cmd_rereg_mr', 'create_srq': 'qrnic_cmd_create_srq',
             'alloc_xrcd': 'qrnic_cmd_alloc_xrcd',
             'hdr': 'qrnic_aq_hdr'}
_NESTED = {'attr': 'qrnic_qp_attr', 'av': 'qrnic_av', 'reg': 'qrnic_cmd_reg_mr'}


def cmd_offset(path):
    """Byte offset of a command field: 'hdr.flags', 'create_qp.sq_log_depth',
    'modify_qp.attr.path_mtu', 'create_ah.av.dmac', 'handle' (-> 8)."""
    lay = layout()
    parts = path.split('.')
    if parts[0] in ('handle', 'create_pd'):   # single u32 bodies
        return 8
    st = _CMD_BODY[parts[0]]
    off = 0 if parts[0] == 'hdr' else 8
    for p in parts[1:]:
        o, _ = lay[st][p]
        off += o
        st = _NESTED.get(p, st)
    return off


def wqe_offset(field):
    return getattr(SendWqe, field).offset


def _check(rc, what):
    if rc < 0:
        raise HarnessError(f'{what}: harness error {rc}')
    return rc


class HarnessError(Exception):
    pass


# ---- snapshot streams (model/qrnic_snap.h, docs/qemu.md section 9) ----------
def snap_sections(stream):
    """{tag: (version, payload, flags)} of a device snapshot stream, in order."""
    import struct
    assert stream[:4] == b'QRNS', 'not a snapshot stream'
    out, off = {}, 8
    while off < len(stream):
        tag, ver, flags, n = struct.unpack_from('<4sHHI', stream, off)
        off += 12
        out[tag.decode()] = (ver, stream[off:off + n], flags)
        off += n
    return out


def snap_describe(stream):
    """The model's own listing of the sections (qrnic_snap_describe)."""
    out = ctypes.create_string_buffer(4096)
    if lib().hx_snap_describe(stream, len(stream), out, len(out)) != 0:
        raise HarnessError('malformed stream')
    return out.value.decode()


def snap_replace(stream, tag, payload):
    """The stream with section tag's payload replaced."""
    import struct
    out, off = bytearray(stream[:8]), 8
    while off < len(stream):
        t, ver, flags, n = struct.unpack_from('<4sHHI', stream, off)
        body = stream[off + 12:off + 12 + n]
        if t.decode() == tag:
            body = payload
        out += struct.pack('<4sHHI', t, ver, flags, len(body)) + body
        off += 12 + n
    return bytes(out)


class AdminError(HarnessError):
    def __init__(self, what, status, detail=None):
        self.status = status
        self.status_name = aq_status_name(status)
        self.detail = detail
        super().__init__(f'{what}: {self.status_name} ({status})'
                         + (f' detail={detail}' if detail else ''))


def aq_status_name(st):
    if st == E_TIMEOUT:
        return 'TIMEOUT'
    if 0 <= st < len(AQ_STATUS):
        return AQ_STATUS[st]
    if st < 0:
        return f'HARNESS_ERROR_{st}'
    return f'UNKNOWN_{st}'


def wc_status_name(st):
    return WC_STATUS[st] if 0 <= st < len(WC_STATUS) else f'UNKNOWN_{st}'


def gid_v4(ip):
    return b'\0' * 10 + b'\xff\xff' + ipaddress.IPv4Address(ip).packed


def gid_v6(ip):
    return ipaddress.IPv6Address(ip).packed


def mcast_mac(gid):
    """The Ethernet multicast address of a multicast GID (RFC 1112 / RFC 2464)."""
    gid = bytes(gid)
    if gid[:12] == b'\0' * 10 + b'\xff\xff':
        return bytes([0x01, 0x00, 0x5e, gid[13] & 0x7f, gid[14], gid[15]])
    return b'\x33\x33' + gid[12:16]


def mac_str(m):
    return ':'.join(f'{b:02x}' for b in m)


def _u64_array(vals):
    return (ctypes.c_uint64 * max(1, len(vals)))(*vals)


def _u32_array(vals):
    return (ctypes.c_uint32 * max(1, len(vals)))(*vals)


# ---- frames on the wire --------------------------------------------------------------
class Frame:
    """A frame from the world's frame log, decoded (RoCEv2 fields when it is one)."""

    def __init__(self, info, data):
        self.t = info.t_ns
        self.seq = info.seq
        self.src_seq = info.src_seq
        self.src = info.src
        self.dst = info.dst
        self.fate = info.fate
        self.data = data
        self.roce = False
        self.opcode = None
        self.opname = None
        self.syndrome = None
        self.imm = None
        self.reth = None
        self.atomic = None
        self.atomic_orig = None
        self.deth = None
        self.ieth = None
        self.xrc_srqn = None
        self.cnp_rsvd = None
        self.tclass = None
        self.payload = b''
        self._decode()

    def _decode(self):
        d = self.data
        if len(d) < 14:
            return
        off = 14
        et = struct.unpack_from('>H', d, 12)[0]
        if et == 0x8100:
            et = struct.unpack_from('>H', d, 16)[0]
            off = 18
        if et == 0x0800 and len(d) >= off + 20:
            ihl = (d[off] & 0xf) * 4
            self.ip_version = 4
            self.tos = d[off + 1]
            self.tclass = self.tos
            self.ttl = d[off + 8]
            self.sip = ipaddress.IPv4Address(d[off + 12:off + 16])
            self.dip = ipaddress.IPv4Address(d[off + 16:off + 20])
            ip_end = off + struct.unpack_from('>H', d, off + 2)[0]
            if d[off + 9] != 17:
                return
            l4 = off + ihl
        elif et == 0x86dd and len(d) >= off + 40:
            self.ip_version = 6
            self.tclass = (struct.unpack_from('>I', d, off)[0] >> 20) & 0xff
            self.sip = ipaddress.IPv6Address(d[off + 8:off + 24])
            self.dip = ipaddress.IPv6Address(d[off + 24:off + 40])
            self.ttl = d[off + 7]
            ip_end = off + 40 + struct.unpack_from('>H', d, off + 4)[0]
            if d[off + 6] != 17:
                return
            l4 = off + 40
        else:
            return
        if len(d) < l4 + 20 or struct.unpack_from('>H', d, l4 + 2)[0] != 4791:
            return
        self.udp_sport = struct.unpack_from('>H', d, l4)[0]
        b = l4 + 8
        self.roce = True
        self.opcode = d[b]
        self.opname = OP_NAME.get(self.opcode, f'0x{self.opcode:02x}')
        self.se = bool(d[b + 1] & 0x80)
        self.padcnt = (d[b + 1] >> 4) & 3
        self.pkey = struct.unpack_from('>H', d, b + 2)[0]
        self.fecn = bool(d[b + 4] & 0x80)
        self.becn = bool(d[b + 4] & 0x40)
        self.dqpn = int.from_bytes(d[b + 5:b + 8], 'big')
        self.ackreq = bool(d[b + 8] & 0x80)
        self.psn = int.from_bytes(d[b + 9:b + 12], 'big')
        p = b + 12
        op = self.opcode
        if 0x60 <= op < 0x80:  # UD: DETH
            self.deth = (struct.unpack_from('>I', d, p)[0], int.from_bytes(d[p + 5:p + 8], 'big'))
            p += 8
        if op >= 0xa0:  # XRC: the RC layout, with an XRCETH on requests
            if op not in XRC_RESPONSES:
                self.xrc_srqn = int.from_bytes(d[p + 1:p + 4], 'big')
                p += 4
            op &= 0x1f
        if op in (0x06, 0x0a, 0x0b, 0x0c, 0x26, 0x2a, 0x2b):
            self.reth = struct.unpack_from('>QII', d, p)  # va, rkey, len
            p += 16
        if op in (0x13, 0x14):
            self.atomic = struct.unpack_from('>QIQQ', d, p)  # va, rkey, swap_add, cmp
            p += 28
        if op in (0x0d, 0x0f, 0x10, 0x11, 0x12):
            self.syndrome = d[p]
            self.msn = int.from_bytes(d[p + 1:p + 4], 'big')
            p += 4
        if op == 0x12:
            self.atomic_orig = struct.unpack_from('>Q', d, p)[0]
            p += 8
        if op in (0x03, 0x05, 0x09, 0x0b, 0x23, 0x25, 0x29, 0x2b, 0x65):
            self.imm = struct.unpack_from('>I', d, p)[0]
            p += 4
        if op in (0x16, 0x17):
            self.ieth = struct.unpack_from('>I', d, p)[0]  # the R_Key to invalidate
            p += 4
        if op == 0x81:  # CNP: 16 reserved bytes
            self.cnp_rsvd = bytes(d[p:p + 16])
            p += 16
        end = min(ip_end, len(d)) - 4 - self.padcnt
        self.payload = bytes(d[p:end]) if end > p else b''
        self.icrc = bytes(d[min(ip_end, len(d)) - 4:min(ip_end, len(d))])

    @property
    def ecn(self):
        """The IP ECN field: 0 Not-ECT, 2 ECT(0), 1 ECT(1), 3 CE (None if not IP)."""
        return None if self.tclass is None else self.tclass & 3

    @property
    def is_nak(self):
        return self.syndrome is not None and (self.syndrome & 0xe0) == 0x60

    @property
    def is_rnr_nak(self):
        return self.syndrome is not None and (self.syndrome & 0xe0) == 0x20

    @property
    def delivered(self):
        return bool(self.fate & F_DELIVERED)

    @property
    def loopback(self):
        """The device received this frame itself (local loopback, src == dst)."""
        return bool(self.fate & F_LOOPBACK)

    def __repr__(self):
        if not self.roce:
            return f'<Frame t={self.t} {self.src}->{self.dst} len={len(self.data)} non-RoCE>'
        extra = f' syn=0x{self.syndrome:02x}' if self.syndrome is not None else ''
        return (f'<Frame t={self.t} {self.src}->{self.dst} {self.opname} psn={self.psn:#x} '
                f'dqpn={self.dqpn} len={len(self.data)}{extra} fate={self.fate:#x}>')


# ---- the world ---------------------------------------------------------------------
class World:
    """N devices with their hosts, one virtual clock, cables.

    World(2) creates, cables (0<->1) and initializes (bring-up, EQs, GIDs)
    two devices.  cfg: "key=value,..." applied to every device (or a list,
    one per device)."""

    DMA_REFS = {'ptr': 0, 'none': 1, 'checked': 2, 'live': 3}

    def __init__(self, ndev=2, mem_mb=256, seed=1, cable=True, init=True, cfg='',
                 framelog=100000, dma_refs=None):
        self._l = lib()
        self.w = self._l.hx_world_new(mem_mb << 20, seed)
        if not self.w:
            raise HarnessError('hx_world_new failed')
        if dma_refs is not None:    # the devices' dma_map/dma_unmap (hx_set_dma_refs)
            _check(self._l.hx_set_dma_refs(self.w, self.DMA_REFS[dma_refs]), 'dma_refs')
        self.rng = random.Random(seed)
        self.devs = []
        for i in range(ndev):
            c = cfg[i] if isinstance(cfg, (list, tuple)) else cfg
            self.add_device(c)
        if cable and ndev >= 2:
            for i in range(0, ndev - 1, 2):
                self.cable(i, i + 1)
        if framelog:
            self._l.hx_framelog_enable(self.w, framelog)
        if init:
            for d in self.devs:
                d.init()

    def add_device(self, cfg=''):
        idx = self._l.hx_dev_add(self.w, cfg.encode())
        if idx < 0:
            raise HarnessError(f'hx_dev_add({cfg!r}): {self.error()}')
        d = Device(self, idx)
        self.devs.append(d)
        return d

    def error(self):
        return self._l.hx_world_error(self.w).decode()

    def close(self):
        if self.w:
            self._l.hx_world_free(self.w)
            self.w = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def cable(self, a, b):
        _check(self._l.hx_cable(self.w, a, b), 'cable')

    @property
    def now(self):
        return self._l.hx_now(self.w)

    def run(self, ns=100_000_000_000, max_iter=50_000_000):
        """Run until idle (returns 'idle'), or ns of virtual time passed ('time'),
        or max_iter loop iterations ('iter')."""
        return RUN_RESULT[self._l.hx_run(self.w, ns, max_iter)]

    def run_to_write(self, dev, ns=100_000_000_000, max_iter=50_000_000):
        """Run until device dev's next DMA write into its host memory is
        visible (returns 'stop'), or as run() does.  The clock (now) is then
        the instant the write became visible (hx_run_to_write)."""
        self._l.hx_watch_writes(self.w, dev, 1)
        since = self._l.hx_watched_writes(self.w)
        r = self._l.hx_run_to_write(self.w, ns, max_iter, since)
        self._l.hx_watch_writes(self.w, dev, 0)
        return RUN_RESULT[r]

    def run_for(self, ns):
        return self.run(ns=ns)

    def next_event(self):
        """Virtual time of the earliest pending event (frame arrival, device
        timer), or None if there is none (hx_next_event)."""
        t = self._l.hx_next_event(self.w)
        return None if t == (1 << 64) - 1 else t

    def advance(self, ns):
        """Run for ns; the clock ends ns later even if everything went idle."""
        return RUN_RESULT[self._l.hx_advance(self.w, ns)]

    @property
    def iterations(self):
        return self._l.hx_run_iterations(self.w)

    def set_admin_timeout(self, ns):
        self._l.hx_set_admin_timeout(self.w, ns)

    # -- wire
    def set_latency(self, ns):
        self._l.hx_wire_set_latency(self.w, ns)

    def set_rate(self, bits_per_s, overhead_bytes=0):
        """Serialize frames on the wire at this rate (0: instantly)."""
        self._l.hx_wire_set_rate(self.w, int(bits_per_s), overhead_bytes)

    def rule(self, action, src=-1, index=-1, opcode=-1, psn=-1, dqpn=-1, skip=0, count=1,
             arg=0, arg2=0):
        """Add a wire rule.  action: 'drop' | 'dup' | 'hold' (arg = release after arg
        more frames from the same sender) | 'corrupt' (arg = byte offset, arg2 = xor) |
        'mark_ce' (IP ECN to CE on ECN-capable frames; arg = mark one in every arg matches).
        Match: src device, index (that sender's frame index if src given, else the
        global one), BTH opcode (int or name), psn, dqpn; -1 = any.  skip: let the
        first 'skip' matches pass; count: fire this many times (-1 = always).
        Returns a rule id (see rule_fired)."""
        if isinstance(opcode, str):
            opcode = OP[opcode]
        rid = self._l.hx_wire_rule_add(self.w, src, index, opcode, psn, dqpn, skip, count,
                                       ACT[action], arg, arg2)
        return _check(rid, 'rule')

    def rule_fired(self, rid):
        return self._l.hx_wire_rule_fired(self.w, rid)

    def clear_rules(self):
        self._l.hx_wire_rules_clear(self.w)

    def random_impairments(self, loss=0.0, dup=0.0, reorder=0.0, corrupt=0.0, seed=1):
        ppm = lambda p: int(p * 1_000_000)
        self._l.hx_wire_random(self.w, ppm(loss), ppm(dup), ppm(reorder), ppm(corrupt), seed)

    def vouch(self, on=True):
        """Deliver the frames nothing changed on the way as frames the host
        vouches for (qrnic_dev_rx_frame_buf_vouched: no ICRC check)."""
        self._l.hx_set_vouch(self.w, 1 if on else 0)

    def lazy_icrc(self, d, on=True):
        """qrnic_dev_set_lazy_icrc on device d."""
        _check(self._l.hx_set_lazy_icrc(self.w, d, 1 if on else 0), 'lazy_icrc')

    def trains(self, d, on=True):
        """qrnic_dev_set_trains on device d: its trains go whole while the
        wire reads no frames (no frame log, capture, rules, random faults,
        tap or switch), else as their frames."""
        _check(self._l.hx_set_trains(self.w, d, 1 if on else 0), 'trains')

    def wire_land(self):
        """Every frame in flight arrives now in its device's receive queue;
        no device runs (hx_wire_land).  Returns how many arrived."""
        return self._l.hx_wire_land(self.w)

    def db_batch(self, d, on=True):
        """qrnic_dev_set_db_batch on device d."""
        _check(self._l.hx_set_db_batch(self.w, d, 1 if on else 0), 'db_batch')

    def db_batched(self, d, rq=False):
        """qrnic_dev_db_batched of device d: SQ doorbells that waited for the
        ACK; rq: qrnic_dev_rq_db_quiet, RQ doorbells that asked for no run."""
        return self._l.hx_db_batched(self.w, d, 1 if rq else 0)

    def sq_rec_taken(self, d):
        """qrnic_dev_sq_rec_taken of device d: SQ indexes the device took from
        QPs' SQ records (ABI 1.11) that no doorbell had brought."""
        return self._l.hx_sq_rec_taken(self.w, d)

    def sched_pending(self, d):
        """Whether device d asked its host for a run (ops->schedule) that has not run yet."""
        return bool(self._l.hx_sched_pending(self.w, d))

    @staticmethod
    def dma_refs_stats():
        """(maps, unmaps, live) of the checked payload mappings (World(dma_refs=
        'checked')), over the process."""
        v = [ctypes.c_uint64() for _ in range(3)]
        lib().hx_dma_refs_stats(*[ctypes.byref(x) for x in v])
        return tuple(x.value for x in v)

    def trusted_wire(self, on=True):
        """Ask for a trusted wire (no ICRCs); returns whether it is in effect."""
        return bool(self._l.hx_wire_trusted(self.w, 1 if on else 0))

    def pcap(self, path):
        _check(self._l.hx_pcap_open(self.w, str(path).encode()), 'pcap')

    def pcap_close(self):
        self._l.hx_pcap_close(self.w)

    def switch_attach(self, **kw):
        """Cable every device to one output-queued switch (hx_switch_attach;
        docs/congestion.md): keyword arguments are struct hx_switch_cfg's
        fields (rate_bps, latency_ns, buffer, kmin, kmax, pmax, pfc, xoff,
        xon, prio_queues, ...)."""
        c = SwitchCfg(**kw)
        rc = self._l.hx_switch_attach(self.w, ctypes.byref(c))
        if rc:
            raise HarnessError(f'hx_switch_attach: {self.error()}')

    def switch_queue(self, port, prio):
        """The switch's output queue (port, priority): a dict of frames,
        bytes, drops, marks, paused_ns, q_now, q_max."""
        st = SwitchQueueStats()
        _check(self._l.hx_switch_queue_stats(self.w, port, prio, ctypes.byref(st)),
               'switch_queue')
        return {n: getattr(st, n) for n, _ in SwitchQueueStats._fields_}

    def switch_port(self, port):
        """The switch's port: a dict of struct hx_switch_stats (its output
        queue, and PFC on its ingress: pauses, pfc_frames, ...)."""
        st = SwitchStats()
        _check(self._l.hx_switch_stats(self.w, port, ctypes.byref(st)), 'switch_port')
        return {n: getattr(st, n) for n, _ in SwitchStats._fields_}

    def shared_used(self):
        """shared buffer: (bytes in use now, the most so far)"""
        mx = ctypes.c_uint64()
        now = self._l.hx_switch_shared_used(self.w, ctypes.byref(mx))
        return now, mx.value

    def switch_fabric_queue(self, up, leaf, spine, prio):
        """Leaf-spine: the queue of priority prio of leaf 'leaf''s port up to
        spine 'spine' (up true) or of that spine's port down to the leaf: a
        dict as switch_queue's (paused_ns: the time the other end of the
        link kept it paused)."""
        st = SwitchQueueStats()
        _check(self._l.hx_switch_fabric_queue_stats(self.w, 1 if up else 0, leaf, spine, prio,
                                                    ctypes.byref(st)), 'switch_fabric_queue')
        return {n: getattr(st, n) for n, _ in SwitchQueueStats._fields_}

    def wire_send(self, dev, frame):
        """Device dev's port sends a frame of its own onto its cable (or to
        the switch): e.g. a pause frame."""
        _check(self._l.hx_wire_send(self.w, dev, bytes(frame), len(frame)), 'wire_send')

    def frames(self, roce_only=False):
        out = []
        info = FrameInfo()
        buf = ctypes.create_string_buffer(16384)
        for i in range(self._l.hx_framelog_count(self.w)):
            n = self._l.hx_framelog_get(self.w, i, ctypes.byref(info), buf, len(buf))
            f = Frame(info, buf.raw[:n])
            if f.roce or not roce_only:
                out.append(f)
        return out

    def clear_frames(self):
        self._l.hx_framelog_clear(self.w)

    def wire_stats(self):
        return {n: self._l.hx_wire_stat(self.w, i) for i, n in enumerate(WIRE_STATS)}

    # -- trace
    def trace_enable(self, capacity=1 << 16):
        self._l.hx_trace_enable(self.w, capacity)

    def trace(self, from_seq=0, max_events=1 << 20):
        total = self._l.hx_trace_total(self.w)
        n = int(min(max_events, max(0, total - from_seq)))
        if n <= 0:
            return []
        arr = (TraceRec * n)()
        first = ctypes.c_uint64()
        got = self._l.hx_trace_read(self.w, from_seq, arr, n, ctypes.byref(first))
        out = []
        for r in arr[:got]:
            d = to_dict(r.ev)
            d.pop('rsvd_pad', None)
            d['dev'] = r.dev
            d['name'] = self._l.hx_trace_name(r.ev.type).decode()
            out.append(d)
        return out


# ---- device + driver objects ---------------------------------------------------------
class Device(api.Device):
    def __init__(self, world, idx):
        self.world = world
        self.idx = idx
        self._l = world._l
        self.async_eq = None
        self.comp_eq = None
        self.attr = None
        self.gids = {}

    @property
    def w(self):
        return self.world.w

    @property
    def mac(self):
        p = self._l.hx_mac(self.w, self.idx)
        return bytes(p[:6])

    def __repr__(self):
        return f'<Device {self.idx} {mac_str(self.mac)}>'

    # -- registers and doorbells
    def reg_read(self, off, size=4):
        if isinstance(off, str):
            off = REG[off]
        return self._l.hx_reg_read(self.w, self.idx, off, size)

    def reg_write(self, off, val, size=4):
        if isinstance(off, str):
            off = REG[off]
        self._l.hx_reg_write(self.w, self.idx, off, val, size)

    def db_read(self, off, size=8):
        return self._l.hx_db_read(self.w, self.idx, off, size)

    def db_write(self, off, val, size=8):
        self._l.hx_db_write(self.w, self.idx, off, val, size)

    def flr(self):
        """Host-level function reset (qrnic_dev_reset) and forget driver state."""
        self._l.hx_dev_reset(self.w, self.idx)
        self.forget()

    def forget(self):
        self._l.hx_drv_forget(self.w, self.idx)
        self.async_eq = self.comp_eq = None

    def set_link(self, up):
        self._l.hx_set_link(self.w, self.idx, 1 if up else 0)

    def set_ring_pagelist(self, on=True):
        """From now on this driver hands every CQ, QP and SRQ ring of a page
        or more to the device as a page list (ABI 1.8) naming the ring's
        pages in reverse order."""
        self.ring_pagelist = bool(on)
        self._l.hx_set_ring_pagelist(self.w, self.idx, 1 if on else 0)

    def set_sq_dbrec(self, on=True):
        """From now on QPs created with an SQ get an SQ record (ABI 1.11,
        spec 8.6.2): post_send writes the producer index there and rings the
        SQ doorbell only if the device's flag there is clear (Qp.ring_sq
        still rings; sq_db_skipped counts the posts that rang none)."""
        self._l.hx_set_sq_dbrec(self.w, self.idx, 1 if on else 0)

    @property
    def sq_db_skipped(self):
        """Posts that rang no SQ doorbell because the device's flag said so."""
        return self._l.hx_sq_db_skipped(self.w, self.idx)

    def set_rq_dbrec(self, on=True):
        """From now on QPs created with an RQ get an RQ producer index
        record (ABI 1.10, spec 8.6.1) and post_recv writes it instead of
        ringing the RQ doorbell (Qp.ring_rq still rings it)."""
        self._l.hx_set_rq_dbrec(self.w, self.idx, 1 if on else 0)

    def port_pause(self, paused):
        """PFC: pause (True, an XOFF) or resume (False, an XON) the port."""
        self._l.hx_port_pause(self.w, self.idx, 1 if paused else 0)

    @property
    def port_paused(self):
        return bool(self._l.hx_port_paused(self.w, self.idx))

    def rxbuf_info(self):
        """The receive buffer (rx_buffer, spec 12.15): a dict with used,
        max_used, prio[8], prio_max[8] (bytes) and xoff (the priorities the
        port sent an XOFF for and no XON yet), or None if it is off."""
        out = (ctypes.c_uint64 * 19)()
        if self._l.hx_rxbuf_info(self.w, self.idx, out):
            return None
        return {'used': out[0], 'max_used': out[1], 'prio': list(out[2:10]),
                'prio_max': list(out[10:18]), 'xoff': out[18]}

    def set_timing(self, profile='functional', **overrides):
        """Select a timing profile (functional, cx5-100g, teach) with
        parameter overrides, e.g. set_timing('cx5-100g', mtt_entries=64)."""
        ov = ','.join(f'{k}={v}' for k, v in overrides.items())
        _check(self._l.hx_set_timing(self.w, self.idx, profile.encode(), ov.encode()), 'set_timing')

    def busy(self):
        return bool(self._l.hx_dev_busy(self.w, self.idx))

    def selfcheck(self, on=True):
        """Check the device's QP lists after every service step as well;
        check() then also fails if any of those checks did."""
        _check(self._l.hx_dev_selfcheck(self.w, self.idx, 1 if on else 0), 'selfcheck')

    # -- snapshots (docs/qemu.md section 9)
    def save(self):
        """The device's whole state as a snapshot stream (bytes)."""
        n = self._l.hx_dev_save(self.w, self.idx, None, 0)
        if n < 0:
            raise HarnessError(self._l.hx_world_error(self.w).decode())
        buf = ctypes.create_string_buffer(n)
        if self._l.hx_dev_save(self.w, self.idx, buf, n) != n:
            raise HarnessError('save: the stream changed size')
        return buf.raw

    def load(self, stream):
        """Load a snapshot stream; raises HarnessError with the device's
        reason if it refuses it (the device is then reset)."""
        stream = bytes(stream)
        if self._l.hx_dev_load(self.w, self.idx, stream, len(stream)) != 0:
            raise HarnessError(self._l.hx_world_error(self.w).decode(errors='replace'))

    def snapshot(self):
        """Migrate in place: save, make the device anew, load."""
        if self._l.hx_dev_snapshot(self.w, self.idx) != 0:
            raise HarnessError(self._l.hx_world_error(self.w).decode())

    def check(self):
        """The device's internal QP lists and MR allocators are consistent
        (raises if not)."""
        why = ctypes.create_string_buffer(256)
        if self._l.hx_dev_check(self.w, self.idx, why, len(why)) != 0:
            raise HarnessError('device %d: %s' % (self.idx, why.value.decode()))

    def inject(self, frame):
        return self._l.hx_rx_inject(self.w, self.idx, bytes(frame), len(frame))

    def inject_vouched(self, frame):
        """inject(), the host vouching for the frame's ICRC (not checked)."""
        return self._l.hx_rx_inject_vouched(self.w, self.idx, bytes(frame), len(frame))

    # -- stats, irqs, logs
    def stats(self):
        """Device counters through the host API (qrnic_dev_stat)."""
        return {self._l.hx_stat_name(i).decode(): self._l.hx_dev_stat(self.w, self.idx, i)
                for i in range(self._l.hx_stat_count())}

    def stat(self, name):
        return self.stats()[name]

    def qp_cc(self, qpn):
        """A QP's congestion control state (spec 12.15), timers brought up to now:
        dict of algo, limited, rate (Mb/s), target (Mb/s), alpha, t_stage, b_stage, cnps,
        rtt (ns, TIMELY's latest sample), rtts (TIMELY's samples)."""
        out = (ctypes.c_double * 4)()
        st = (ctypes.c_uint64 * 6)()
        _check(self._l.hx_qp_cc(self.w, self.idx, qpn, out, st), 'qp_cc')
        return {'rate': out[0], 'target': out[1], 'alpha': out[2], 'algo': st[0],
                'limited': bool(st[1]), 't_stage': st[2], 'b_stage': st[3], 'cnps': st[4],
                'rtt': out[3], 'rtts': st[5]}

    VIEW_KINDS = ('qp', 'cq', 'eq', 'srq')      # enum qrnic_view_kind

    def view(self, kind):
        """The model's read-only snapshot of every valid object of a kind ('qp',
        'cq', 'eq', 'srq'; qrnic_dev_view, model/query.c): a list of dicts of
        the view's fields, in number order; QPs also get 'state_name' and
        'type_name'."""
        k = self.VIEW_KINDS.index(kind)
        names = [self._l.hx_view_field(k, i).decode()
                 for i in range(self._l.hx_view_nfields(k))]
        nf, chunk = len(names), 64
        buf = (ctypes.c_uint32 * (nf * chunk))()
        nxt = ctypes.c_uint32(0)
        out, start = [], 0
        while True:
            n = self._l.hx_query_view(self.w, self.idx, k, start, buf, chunk, ctypes.byref(nxt))
            _check(n, 'query_view')
            for r in range(n):
                rec = dict(zip(names, buf[r * nf:(r + 1) * nf]))
                if kind == 'qp':
                    rec['state_name'] = self._l.qrnic_qp_state_name(rec['state']).decode()
                    rec['type_name'] = self._l.qrnic_qp_type_name(rec['type']).decode()
                out.append(rec)
            if not nxt.value:
                return out
            start = nxt.value

    def irq_count(self, vector):
        return self._l.hx_irq_count(self.w, self.idx, vector)

    def irq_total(self):
        return self._l.hx_irq_total(self.w, self.idx)

    def logs(self):
        """Kept log messages, oldest first: [(level, text)] (0 guest error, 1 unimp, 2 info)."""
        out = []
        buf = ctypes.create_string_buffer(300)
        i = 0
        while True:
            lvl = self._l.hx_log_get(self.w, self.idx, i, buf, len(buf))
            if lvl < 0:
                break
            out.append((lvl, buf.value.decode(errors='replace')))
            i += 1
        return out[::-1]

    def log_count(self, level=-1):
        return self._l.hx_log_total(self.w, self.idx, level)

    @property
    def guest_errors(self):
        return self.log_count(0)

    def clear_logs(self):
        """Forget the kept log messages and trace points."""
        self._l.hx_log_clear(self.w, self.idx)

    def tracepoints(self):
        """Kept err_*/ub_* trace points, oldest first:
        [(name, {field: value}, text)], text as the point's format prints it."""
        points = tracepoints()
        out = []
        args = (ctypes.c_uint64 * TP_MAX_FIELDS)()
        buf = ctypes.create_string_buffer(300)
        i = 0
        while True:
            tp = self._l.hx_tp_get(self.w, self.idx, i, args)
            if tp < 0:
                break
            p = points[tp]
            self._l.qrnic_tp_format(tp, args, buf, len(buf))
            out.append((p['name'], {n: args[k] for k, (_, n) in enumerate(p['fields'])},
                        buf.value.decode()))
            i += 1
        return out[::-1]

    def tracepoint_count(self):
        """err_*/ub_* trace points so far (since the last clear_logs)."""
        return self._l.hx_tp_total(self.w, self.idx)

    def dma_stats(self):
        return dict(zip(('reads', 'writes', 'read_bytes', 'write_bytes', 'fails'),
                        (self._l.hx_dma_stat(self.w, self.idx, i) for i in range(5))))

    # -- memory
    @property
    def mem_base(self):
        return self._l.hx_mem_base(self.w, self.idx)

    @property
    def mem_size(self):
        return self._l.hx_mem_size(self.w, self.idx)

    def mem_alloc(self, size, align=4096):
        a = self._l.hx_mem_alloc(self.w, self.idx, size, align)
        if not a:
            raise HarnessError(f'mem_alloc({size}): {self.world.error()}')
        return a

    def mem_read(self, addr, n):
        buf = ctypes.create_string_buffer(max(1, n))
        _check(self._l.hx_mem_read(self.w, self.idx, addr, buf, n), 'mem_read')
        return buf.raw[:n]

    def mem_write(self, addr, data):
        data = bytes(data)
        _check(self._l.hx_mem_write(self.w, self.idx, addr, data, len(data)), 'mem_write')

    def mem_deny(self, addr, length):
        _check(self._l.hx_mem_deny(self.w, self.idx, addr, length), 'mem_deny')

    def mem_mark(self):
        """The simulated memory allocator's current end (for mem_release)."""
        return self._l.hx_mem_mark(self.w, self.idx)

    def mem_release(self, mark):
        """Free everything allocated since mem_mark() (destroy its users first)."""
        _check(self._l.hx_mem_release(self.w, self.idx, mark), 'mem_release')

    def dma_trap(self, addr, length, waddr, data):
        """TOCTOU: right after the device's first DMA read overlapping
        [addr, addr+length) copied its bytes, 'data' is written at 'waddr'
        (the guest racing the device); waddr None: the bytes that read
        fetched are overwritten with 'data' repeated.  length 0 disarms.
        Later device reads of bytes that first read fetched count as
        re-fetches (dma_trap_state)."""
        if waddr is None:
            waddr = (1 << 64) - 1
        data = bytes(data)
        _check(self._l.hx_dma_trap(self.w, self.idx, addr, length, waddr, data,
                                   len(data)), 'dma_trap')

    def dma_trap_state(self):
        """(state, refetches): state 0 off, 1 armed (not read yet), 2 fired;
        refetches: device reads of the range after the rewrite."""
        n = ctypes.c_uint64()
        st = self._l.hx_dma_trap_state(self.w, self.idx, ctypes.byref(n))
        return st, n.value

    def dma_log_start(self, cap=1 << 20):
        _check(self._l.hx_dma_log_start(self.w, self.idx, cap), 'dma_log_start')

    def dma_log(self):
        """The logged DMA writes [(addr, len)], and how many were lost."""
        lost = ctypes.c_uint64()
        n = self._l.hx_dma_log_count(self.w, self.idx, ctypes.byref(lost))
        a, ln = ctypes.c_uint64(), ctypes.c_uint64()
        out = []
        for i in range(n):
            self._l.hx_dma_log_get(self.w, self.idx, i, ctypes.byref(a), ctypes.byref(ln))
            out.append((a.value, ln.value))
        return out, lost.value

    def mem_deny_clear(self):
        self._l.hx_mem_deny_clear(self.w, self.idx)

    # -- bring-up
    def bringup(self, aq_log=5):
        rc = self._l.hx_drv_bringup(self.w, self.idx, aq_log)
        if rc:
            raise HarnessError(f'bringup dev {self.idx}: {rc} {self.world.error()}')

    # -- admin
    def admin(self, cmd, raw=False):
        """Submit 128 command bytes; returns (status, AqCqe dict)."""
        cmd = bytes(cmd).ljust(128, b'\0')[:128]
        cqe = AqCqe()
        st = self._l.hx_admin(self.w, self.idx, cmd, ctypes.byref(cqe), ADMIN_RAW if raw else 0)
        return st, to_dict(cqe)

    @property
    def last_status(self):
        """Status of the last admin command (helpers with check=False return None)."""
        return self.last_cqe()['status']

    def last_cqe(self):
        cqe = AqCqe()
        self._l.hx_last_cqe(self.w, self.idx, ctypes.byref(cqe))
        return to_dict(cqe)

    def _patch_cmd(self, off, value):
        _check(self._l.hx_patch_next_cmd(self.w, self.idx, off, value, len(value)), 'patch')

    def _patch_wqe(self, off, value):
        _check(self._l.hx_patch_next_wqe(self.w, self.idx, off, value, len(value)), 'patch')

    def aq_indexes(self):
        return self._l.hx_drv_aq_pi(self.w, self.idx), self._l.hx_drv_aq_ci(self.w, self.idx)

    def aq_addr(self, cq=False):
        return self._l.hx_drv_aq_addr(self.w, self.idx, 1 if cq else 0)

    def _admin_detail(self, st=None):
        return self.last_cqe()['detail']

    def _handle(self, r, what, check):
        if r < 0:
            if not check:
                return None
            raise AdminError(what, -r if r > -1000 else r, self._admin_detail())
        return r

    def query(self, opcode, struct_type, port=0, check=True):
        if isinstance(opcode, str):
            opcode = CMD[opcode]
        out = struct_type()
        st = self._l.hx_query(self.w, self.idx, opcode, port, ctypes.byref(out), ctypes.sizeof(out))
        if self._status(st, f'query {opcode:#x}', check):
            return None
        return to_dict(out)

    def _query_handle(self, opcode, handle, struct_type, check):
        """QUERY_QP / QUERY_MR through the C driver's scratch page."""
        out = struct_type()
        fn = {'QUERY_QP': self._l.hx_query_qp, 'QUERY_MR': self._l.hx_query_mr}[opcode]
        st = fn(self.w, self.idx, handle, ctypes.byref(out))
        if self._status(st, opcode.lower(), check):
            return None
        return to_dict(out)

    def query_stats(self, check=True):
        n = self._l.hx_stat_count()
        arr = (ctypes.c_uint64 * n)()
        st = self._l.hx_query(self.w, self.idx, CMD['QUERY_STATS'], 0, arr, 8 * n)
        if self._status(st, 'query_stats', check):
            return None
        return {self._l.hx_stat_name(i).decode(): arr[i] for i in range(n)}

    def destroy(self, opcode, handle, check=True):
        if isinstance(opcode, str):
            opcode = CMD[opcode]
        st = self._l.hx_destroy(self.w, self.idx, opcode, handle)
        return self._status(st, f'destroy {opcode:#x} {handle}', check)

    def create_eq(self, log_depth=8, vector=2, async_events=False, check=True):
        r = self._handle(self._l.hx_create_eq(self.w, self.idx, log_depth, vector,
                                              1 if async_events else 0), 'create_eq', check)
        return None if r is None else Eq(self, r, log_depth, vector)

    def create_cq(self, log_depth=8, eq=None, uctx=0, dbrec=True, check=True, timestamp=False):
        """timestamp=True: CQ_F_TIMESTAMP, 64-byte CQEs whose poll() dicts
        carry 'timestamp' (ABI 1.7)."""
        eqn = api._num(eq, 'eqn') if eq is not None else (self.comp_eq.eqn if self.comp_eq
                                                           else 0)
        flags = CQ_F_TIMESTAMP if timestamp else 0
        r = self._handle(self._l.hx_create_cq_flags(self.w, self.idx, uctx, eqn, log_depth,
                                                    1 if dbrec else 0, flags), 'create_cq', check)
        return None if r is None else Cq(self, r, log_depth, flags)

    def create_qp(self, pd, send_cq, recv_cq=None, qp_type='RC', sq_log=6, sq_shift=9,
                  rq_log=6, rq_shift=9, uctx=0, flags=0, srq=None, check=True):
        """srq: an Srq (or srqn) to take receives from; the QP then has no RQ."""
        recv_cq = recv_cq or send_cq
        t = QPT[qp_type] if isinstance(qp_type, str) else qp_type
        pdn = api._num(pd, 'pdn')
        scq = api._num(send_cq, 'cqn')
        rcq = api._num(recv_cq, 'cqn')
        if srq is not None:
            srqn = api._num(srq, 'srqn')
            r = self._l.hx_create_qp_srq(self.w, self.idx, uctx, pdn, scq, rcq, t, sq_log,
                                         sq_shift, srqn, flags)
            rq_log = rq_shift = 0
        else:
            r = self._l.hx_create_qp(self.w, self.idx, uctx, pdn, scq, rcq, t, sq_log, sq_shift,
                                     rq_log, rq_shift, flags)
        r = self._handle(r, 'create_qp', check)
        if r is None:
            return None
        return Qp(self, r, t, pd if hasattr(pd, 'pdn') else None, send_cq, recv_cq,
                  sq_log, sq_shift, rq_log, rq_shift)

    def create_xrc_ini(self, pd, send_cq, sq_log=6, sq_shift=9, uctx=0, flags=0, check=True):
        """An XRC INI QP: send side only (no receive CQ, no RQ)."""
        r = self._l.hx_create_qp_srq(self.w, self.idx, uctx, api._num(pd, 'pdn'),
                                     api._num(send_cq, 'cqn'), 0, QPT['XRC_INI'],
                                     sq_log, sq_shift, 0, flags)
        r = self._handle(r, 'create_qp', check)
        if r is None:
            return None
        return Qp(self, r, QPT['XRC_INI'], pd if hasattr(pd, 'pdn') else None, send_cq, None,
                  sq_log, sq_shift, 0, 0)

    def create_xrc_tgt(self, xrcd, uctx=0, check=True):
        """An XRC TGT QP of domain xrcd: no PD, CQs, SQ or RQ."""
        r = self._l.hx_create_qp_srq(self.w, self.idx, uctx, 0, 0, 0, QPT['XRC_TGT'], 0, 0,
                                     xrcd, 0)
        r = self._handle(r, 'create_qp', check)
        if r is None:
            return None
        return Qp(self, r, QPT['XRC_TGT'], None, None, None, 0, 0, 0, 0)

    def create_srq(self, pd, log_depth=6, wqe_shift=9, limit=0, uctx=0, dbrec=True, check=True):
        r = self._handle(self._l.hx_create_srq(self.w, self.idx, uctx, api._num(pd, 'pdn'),
                                               log_depth, wqe_shift, limit, 1 if dbrec else 0),
                         'create_srq', check)
        return None if r is None else Srq(self, r, log_depth)

    def reg_mr(self, pd, length, access=ACCESS_ALL, iova=None, page_shift=12, levels=None,
               shuffle=True, contig=False, phys=False, check=True):
        """Register 'length' bytes of fresh simulated memory (zeroed).  By default
        4 KiB pages mapped in shuffled physical order through a 1/2/3-level PBL
        (chosen from the size); iova defaults to a virtual-looking address."""
        if iova is None:
            iova = 0x7f00_0000_0000 + self.world.rng.randrange(0, 1 << 20) * 4096 \
                + self.world.rng.randrange(0, 64) * 8
        flags = (MR_SHUFFLE if shuffle else 0) | (MR_CONTIG if contig else 0) | \
            (MR_PHYS if phys else 0)
        pdn = api._num(pd, 'pdn')
        k = self._handle(self._l.hx_reg_mr(self.w, self.idx, pdn, access, iova, length,
                                           page_shift, -1 if levels is None else levels, flags),
                         'reg_mr', check)
        return None if k is None else Mr(self, k, pdn, iova, length, access)

def _cmd_field_size(path):
    lay = layout()
    parts = path.split('.')
    if parts[0] in ('handle', 'create_pd'):
        return 4
    st = _CMD_BODY[parts[0]]
    size = 4
    for p in parts[1:]:
        _, size = lay[st][p]
        st = _NESTED.get(p, st)
    return size


# ---- the object model (tests/qrnic_api.py) over the C test driver -------------------------
make_av, cqe_dict, eqe_dict, _sge_list = api.make_av, api.cqe_dict, api.eqe_dict, api._sge_list
Pd, Ah, FastMr, Mw, QpTransitions = api.Pd, api.Ah, api.FastMr, api.Mw, api.QpTransitions
Side, Conn, connect_rc, create_ud = api.Side, api.Conn, api.connect_rc, api.create_ud


class _Obj:
    """The ctypes handles of the C driver an object's calls go through."""

    @property
    def _w(self):
        return self.dev.w

    @property
    def _l(self):
        return self.dev._l

    @property
    def _i(self):
        return self.dev.idx


class Eq(_Obj, api.Eq):
    def _poll_raw(self, n):
        arr = (Eqe * n)()
        got = _check(self._l.hx_poll_eq(self._w, self._i, self.eqn, arr, n), 'poll_eq')
        return arr[:got]

    def arm(self):
        _check(self._l.hx_arm_eq(self._w, self._i, self.eqn), 'arm_eq')


class Srq(_Obj, api.Srq):
    def _post(self, wr_id, addrs, lens, keys, ring, check):
        r = self._l.hx_post_srq_recv(self._w, self._i, self.srqn, wr_id, len(addrs),
                                     _u64_array(addrs), _u32_array(lens), _u32_array(keys),
                                     1 if ring else 0)
        if r < 0 and check:
            raise HarnessError(f'post_srq_recv: {r}')
        return r

    def ring(self):
        _check(self._l.hx_ring_srq(self._w, self._i, self.srqn), 'ring_srq')

    @property
    def ci(self):
        """The consumer index the device wrote to the SRQ's record."""
        return _check(self._l.hx_srq_ci(self._w, self._i, self.srqn), 'srq_ci')


class Cq(_Obj, api.Cq):
    def resize(self, log_depth, check=True):
        """RESIZE_CQ to a fresh ring; returns the CQEs carried over."""
        r = self._l.hx_resize_cq(self._w, self._i, self.cqn, log_depth)
        if r < 0:
            self.dev._status(-r if r > -1000 else r, f'resize_cq {self.cqn}', check)
            return None
        self.log_depth = log_depth
        return r

    def _poll_raw(self, n):
        out = []
        while n > 0:
            k = min(n, 1024)
            arr = (Cqe * k)()
            ts = (ctypes.c_uint64 * k)()
            got = _check(self._l.hx_poll_cq_ts(self._w, self._i, self.cqn, arr, ts, k),
                         'poll_cq')
            out += zip(arr[:got], ts[:got])
            n -= got
            if got < k:
                break
        return out

    def peek(self):
        return _check(self._l.hx_peek_cq(self._w, self._i, self.cqn), 'peek_cq')

    def wait(self, n=1, ns=100_000_000_000):
        """Run the world until n CQEs are ready (or idle/time limit); poll them."""
        out = self.poll(n)
        deadline = self.dev.world.now + ns
        while len(out) < n:
            left = deadline - self.dev.world.now
            if left <= 0:
                break
            r = self.dev.world.run(ns=min(left, 1_000_000), max_iter=100000)
            out += self.poll(n - len(out))
            if r == 'idle':
                break
        return out

    def arm(self, solicited=False):
        _check(self._l.hx_arm_cq(self._w, self._i, self.cqn, 1 if solicited else 0), 'arm_cq')

    @property
    def ci(self):
        return self._l.hx_cq_ci(self._w, self._i, self.cqn)


class Mr(_Obj, api.Mr):
    def write(self, off, data):
        data = bytes(data)
        _check(self._l.hx_mr_write(self._w, self._i, self.key, off, data, len(data)), 'mr_write')

    def read(self, off=0, n=None):
        if n is None:
            n = self.length - off
        buf = ctypes.create_string_buffer(max(1, n))
        _check(self._l.hx_mr_read(self._w, self._i, self.key, off, buf, n), 'mr_read')
        return buf.raw[:n]

    def bus_addr(self, off=0):
        return self._l.hx_mr_bus_addr(self._w, self._i, self.key, off)

    def host_span(self, off, n):
        """hx_mr_host_span: the bytes of the contiguous host memory from MR
        byte off (at most n of them), or None."""
        ln = ctypes.c_uint64(n)
        p = self._l.hx_mr_host_span(self._w, self._i, self.key, off, ctypes.byref(ln))
        return None if not p else ctypes.string_at(p, ln.value)

    @property
    def pbl_addr(self):
        return self._l.hx_mr_pbl_addr(self._w, self._i, self.key)


class Qp(_Obj, api.Qp):
    def _modify_attr(self, a):
        return self._l.hx_modify_qp(self._w, self._i, self.qpn, ctypes.byref(a))

    def _post_send(self, op, flags, wr_id, addrs, lens, keys, inl, imm, rkey, raddr, cmp_add,
                   swap, ahn, remote_qpn, qkey, xrc_srqn, ring, check):
        if xrc_srqn:
            self.dev.patch_next_wqe('xrc_srqn', xrc_srqn)
        inl = inl or b''
        r = self._l.hx_post_send(self._w, self._i, self.qpn, op, flags, wr_id, len(addrs),
                                 _u64_array(addrs), _u32_array(lens), _u32_array(keys),
                                 inl, len(inl), imm, rkey, raddr, cmp_add, swap, ahn,
                                 remote_qpn, qkey, 1 if ring else 0)
        if r < 0 and check:
            raise HarnessError(f'post_send: {r}')
        return r

    def post_send_raw(self, wqe_bytes, ring=True):
        return self._l.hx_post_send_raw(self._w, self._i, self.qpn, bytes(wqe_bytes),
                                        len(wqe_bytes), 1 if ring else 0)

    def _post_recv(self, wr_id, addrs, lens, keys, ring, check):
        r = self._l.hx_post_recv(self._w, self._i, self.qpn, wr_id, len(addrs),
                                 _u64_array(addrs), _u32_array(lens), _u32_array(keys),
                                 1 if ring else 0)
        if r < 0 and check:
            raise HarnessError(f'post_recv: {r}')
        return r

    def post_recv_raw(self, wqe_bytes, ring=True):
        return self._l.hx_post_recv_raw(self._w, self._i, self.qpn, bytes(wqe_bytes),
                                        len(wqe_bytes), 1 if ring else 0)

    def ring_sq(self):
        _check(self._l.hx_ring_sq(self._w, self._i, self.qpn), 'ring_sq')

    def ring_bf(self, nwords=0, buf=0, skip=0, page=-1, pi=-1):
        """BlueFlame doorbell (spec 3.2.1) for the WQE last put on the ring
        (post_send(..., ring=False)): nwords 8-byte words of it (default:
        0: the header and what it says follows, rounded up to a word), except
        the words whose bit is set in skip, into BF buffer buf of doorbell
        page 'page' (-1: the QP's own), then the control word with
        producer index pi (-1: the ring's)."""
        _check(self._l.hx_ring_sq_bf(self._w, self._i, self.qpn, buf, nwords, skip, page, pi),
               'ring_sq_bf')

    def ring_rq(self):
        _check(self._l.hx_ring_rq(self._w, self._i, self.qpn), 'ring_rq')

    @property
    def rq_dbrec(self):
        """The address of the QP's RQ producer record (0: none)."""
        return self._l.hx_qp_rq_dbrec(self._w, self._i, self.qpn)

    @property
    def sq_dbrec(self):
        """The address of the QP's SQ record (0: none)."""
        return self._l.hx_qp_sq_dbrec(self._w, self._i, self.qpn)

    def indexes(self):
        arr = (ctypes.c_uint32 * 4)()
        _check(self._l.hx_qp_indexes(self._w, self._i, self.qpn, arr), 'qp_indexes')
        return dict(zip(('sq_pi', 'sq_ci', 'rq_pi', 'rq_ci'), arr))


# ---- fault injection (model/fault.c; rule grammar: docs/faults.md) -----------------
_SIGS.update({
    'hx_fault_add': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]),
    'hx_fault_load_plan': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]),
    'hx_fault_check_plan': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    'hx_fault_del': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_fault_clear': (None, [ctypes.c_void_p, ctypes.c_int]),
    'hx_fault_info': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                     ctypes.c_char_p, ctypes.c_uint32]),
    'hx_fault_ids': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int]),
    'hx_fault_list': (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]),
    'hx_fault_total': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    'hx_drv_ring_addr': (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint32]),
})

FAULT_TOTALS = ('injected', 'held', 'held_overflow', 'held_flushed', 'aq_hung')


class FaultError(HarnessError):
    """A fault rule or plan was rejected; str() is the parser's message."""


def _fault_add(self, rule):
    """Add one fault rule (docs/faults.md) to this device; returns its id."""
    r = self._l.hx_fault_add(self.w, self.idx, rule.encode())
    if r < 0:
        raise FaultError(self.world.error())
    return r


def _fault_plan(self, text):
    """Load a plan (one rule per line, all or nothing); returns the rule ids."""
    before = set(self.fault_ids())
    n = self._l.hx_fault_load_plan(self.w, self.idx, text.encode())
    if n < 0:
        raise FaultError(self.world.error())
    return [i for i in self.fault_ids() if i not in before]


def _fault_ids(self):
    n = self._l.hx_fault_ids(self.w, self.idx, None, 0)
    arr = (ctypes.c_int * max(1, n))()
    self._l.hx_fault_ids(self.w, self.idx, arr, n)
    return list(arr[:n])


def _fault_stats(self, rid):
    """{'matched', 'fired', 'done', 'text'} of rule rid."""
    out = (ctypes.c_uint64 * 3)()
    text = ctypes.create_string_buffer(512)
    _check(self._l.hx_fault_info(self.w, self.idx, rid, out, text, len(text)), 'fault_info')
    return {'matched': out[0], 'fired': out[1], 'done': bool(out[2]),
            'text': text.value.decode()}


def _fault_fired(self, rid):
    return self.fault_stats(rid)['fired']


def _fault_del(self, rid):
    _check(self._l.hx_fault_del(self.w, self.idx, rid), 'fault_del')


def _fault_clear(self):
    self._l.hx_fault_clear(self.w, self.idx)


def _fault_list(self):
    n = self._l.hx_fault_list(self.w, self.idx, None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    self._l.hx_fault_list(self.w, self.idx, buf, n + 1)
    return buf.value.decode()


def _fault_totals(self):
    return {n: self._l.hx_fault_total(self.w, self.idx, i) for i, n in enumerate(FAULT_TOTALS)}


def check_fault_plan(text):
    """Parse a plan without a device: number of rules, or FaultError."""
    w = World(0, mem_mb=1, init=False, framelog=0)
    try:
        n = w._l.hx_fault_check_plan(w.w, text.encode())
        if n < 0:
            raise FaultError(w.error())
        return n
    finally:
        w.close()


for _n, _f in (('fault', _fault_add), ('fault_plan', _fault_plan), ('fault_ids', _fault_ids),
               ('fault_stats', _fault_stats), ('fault_fired', _fault_fired),
               ('fault_del', _fault_del), ('fault_clear', _fault_clear),
               ('fault_list', _fault_list), ('fault_totals', _fault_totals)):
    setattr(Device, _n, _f)

RING_KIND = {'cq': 0, 'eq': 1, 'sq': 2, 'rq': 3}


def _ring_addr(obj, kind):
    return obj._l.hx_drv_ring_addr(obj._w, obj._i, RING_KIND[kind], obj.handle)


Cq.ring_addr = property(lambda self: _ring_addr(self, 'cq'))
Eq.ring_addr = property(lambda self: _ring_addr(self, 'eq'))
Qp.sq_addr = property(lambda self: _ring_addr(self, 'sq'))
Qp.rq_addr = property(lambda self: _ring_addr(self, 'rq'))
