#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write the seed corpus of QEMU's generic-fuzz target for qrnic
(tests/fuzz/corpus/qemu/), run by "scripts/fuzz.sh qemu" (docs/fuzzing.md).

generic-fuzz (QEMU 10.0.2 tests/qtest/fuzz/generic_fuzz.c) reads an input as
commands separated by the bytes "FUZZ"; a command's first byte modulo 10 is
the opcode and the rest its operands, copied into a C struct (with its
natural padding, little endian):

    0 in      {u8 size, u8 base, u16 offset}            PIO (qrnic has none)
    1 out     {u8 size, u8 base, u16 offset, u32 value}
    2 read    {u8 size, u8 base, pad2, u32 offset}       size 0..3 = 1,2,4,8 bytes
    3 write   {u8 size, u8 base, pad2, u32 offset, u64 value}
    4 pci_rd  {u8 size, u8 base, u8 offset}              config space, size 0..2
    5 pci_wr  {u8 size, u8 base, u8 offset, pad1, u32 value}
    6 disable PCI (no more config accesses in this input)
    7 dma pattern {u8 index, u8 stride, bytes...}: every DMA read the device
                  makes from guest RAM is filled with the patterns in turn
    8 clear dma patterns
    9 clock step (advance the virtual clock to the next timer)

"base" picks the index'th matched MemoryRegion in address order (wrapping):
with the qrnic config of scripts/build-qemu.sh (QEMU_FUZZ_OBJECTS='qrnic*'),
generic-fuzz maps the BARs in order, so 0 = qrnic-regs (BAR0), 1 =
qrnic-doorbells (BAR2), 2 = msix-table, 3 = msix-pba (BAR4).

The seeds bring the device up the way the driver does (tests/qtest/driver.py
bringup()): read VERSION/CAPS/STATUS, program and enable the admin queue,
enable the device, then ring AQ_SQ_DB with admin commands supplied as DMA
patterns (the device's SQE fetch is answered with them); others enable the
Ethernet rings, ring doorbells, reset, and enable MSI-X.

    /usr/bin/python3 tests/fuzz/make_qemu_corpus.py      # rewrites the corpus
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import qrnic_harness as h  # noqa: E402  (constants and command layouts only)

SEP = b'FUZZ'
REGS, DB, MSIX_TABLE = 0, 1, 2
B, W, L, Q = 0, 1, 2, 3
R = h.REG

# guest physical addresses (generic-fuzz runs with -m 512M)
AQ_SQ, AQ_CQ, RESP, EQ_RING, CQ_RING, DBREC = (0x100000, 0x110000, 0x120000, 0x130000,
                                              0x140000, 0x150000)
ETH_TX, ETH_RX = 0x160000, 0x170000


def read(off, size=L, base=REGS):
    return bytes([2]) + struct.pack('<BBxxI', size, base, off)


def write(off, value, size=L, base=REGS):
    return bytes([3]) + struct.pack('<BBxxIQ', size, base, off, value)


def pci_read(off, size=L):
    return bytes([4]) + struct.pack('<BBB', size, 0, off)


def pci_write(off, value, size=L):
    return bytes([5]) + struct.pack('<BBBxI', size, 0, off, value)


def dma(data, index=0, stride=0):
    assert SEP not in data
    return bytes([7]) + struct.pack('<BB', index, stride) + data


def clear_dma():
    return bytes([8])


def clock():
    return bytes([9])


def reg(name):
    return R[name]


def cmd(opcode, body=None, cmd_id=1):
    return h.command(opcode, body, cmd_id=cmd_id)


def bringup(aq_log=5):
    return [read(reg('VERSION')), read(reg('CAPS')), read(reg('STATUS')),
            write(reg('AQ_CTRL'), 0),
            write(reg('AQ_SQ_BASE_LO'), AQ_SQ), write(reg('AQ_SQ_BASE_HI'), 0),
            write(reg('AQ_CQ_BASE_LO'), AQ_CQ), write(reg('AQ_CQ_BASE_HI'), 0),
            write(reg('AQ_CTRL'), aq_log | h.AQ_CTRL_ENABLE),
            write(reg('CTRL'), h.CTRL_ENABLE),
            read(reg('STATUS')), read(reg('AQ_STATUS'))]


def run_admin(commands, pi=None):
    """The commands as DMA patterns (one SQE fetch each, in turn), then the doorbell."""
    ops = [clear_dma()] + [dma(c) for c in commands]
    ops += [write(reg('AQ_SQ_DB'), len(commands) if pi is None else pi), clock(), clock(),
            read(reg('AQ_SQ_CI')), read(reg('AQ_STATUS')), read(reg('STATUS'))]
    return ops


def query(name, port=0):
    return cmd(name, h.CmdQuery(resp_addr=RESP, resp_len=256, port=port))


def seeds():
    s = {}
    s['regs_read'] = [read(off, sz) for off in range(0, 0xc8, 4) for sz in (L,)] + \
        [read(reg('CLOCK_LO'), Q), read(0, B), read(2, W), read(0xffc), read(0x1000 - 8, Q)]
    s['aq_query_device'] = bringup() + run_admin([query('QUERY_DEVICE')])
    s['aq_queries'] = bringup() + run_admin(
        [query('QUERY_DEVICE'), query('QUERY_PORT', 1), query('QUERY_STATS'),
         cmd('QUERY_GID', h.CmdGid(index=0))])
    gid = h.CmdGid(index=0, valid=1, net_type=h.NET_IPV4)
    gid.gid[:] = list(h.gid_v4('10.0.0.1'))
    s['aq_objects'] = bringup() + run_admin(
        [cmd('ALLOC_UCTX'), cmd('CREATE_PD', h.CmdHandle(handle=0)), cmd('SET_GID', gid),
         cmd('CREATE_EQ', h.CmdCreateEq(log_depth=6, vector=1, ring_addr=EQ_RING)),
         cmd('CREATE_CQ', h.CmdCreateCq(uctx=0, eqn=0, log_depth=6, ring_addr=CQ_RING,
                                        dbrec_addr=DBREC))])
    s['aq_bad_depth'] = bringup(aq_log=13) + run_admin([query('QUERY_DEVICE')], pi=100)
    s['aq_bad_opcode'] = bringup() + run_admin([cmd(0x7f), cmd('DESTROY_QP', h.CmdHandle(9))])
    s['reset'] = bringup() + run_admin([query('QUERY_DEVICE')]) + [
        write(reg('CTRL'), h.CTRL_RESET), read(reg('STATUS')), clock()] + bringup() + \
        run_admin([query('QUERY_PORT', 1)])
    s['eth_rings'] = bringup() + [
        write(reg('ETH_TX_BASE_LO'), ETH_TX), write(reg('ETH_TX_BASE_HI'), 0),
        write(reg('ETH_RX_BASE_LO'), ETH_RX), write(reg('ETH_RX_BASE_HI'), 0),
        write(reg('ETH_IRQ'), 0 | (1 << 31)),
        write(reg('ETH_CTRL'), 4 | (4 << 4) | (1 << 30) | (1 << 31)),
        clear_dma(), dma(struct.pack('<QIHH', ETH_RX + 0x8000, 60, 0, 0) + bytes(16)),
        write(reg('ETH_RX_DB'), 8), write(reg('ETH_TX_DB'), 1), clock(), clock(),
        read(reg('ETH_TX_CI')), read(reg('ETH_RX_CI')), read(reg('PORT_STATUS'))]
    s['doorbells'] = bringup() + run_admin([cmd('ALLOC_UCTX')]) + [
        write(h.DB_SQ, 1 | (1 << 32), Q, DB), write(h.DB_RQ, 1 | (2 << 32), Q, DB),
        write(h.DB_CQ, 1 | (1 << 24), Q, DB), write(h.DB_SRQ, 1, Q, DB),
        read(h.DB_CLOCK, Q, DB), write(0x800, 0x1234, Q, DB), clock(),
        write(reg('EQ_DB'), (1 << 16), Q)]
    # MSI-X: the capability is found by walking config space from 0x34;
    # generic-fuzz enabled memory decoding and bus mastering already.
    s['msix'] = [pci_read(0x34, B)] + [pci_read(off) for off in range(0x40, 0x100, 4)] + \
        [pci_write(off, 0x80000000) for off in (0x40, 0x48, 0x50, 0x60, 0x70, 0x90, 0x98, 0xa0)] + \
        [write(0, 0xfee00000, L, MSIX_TABLE), write(8, 0x40, L, MSIX_TABLE),
         write(12, 0, L, MSIX_TABLE)] + bringup() + [
        clear_dma(), dma(cmd('CREATE_EQ', h.CmdCreateEq(log_depth=6, vector=0,
                                                            ring_addr=EQ_RING))),
        write(reg('AQ_SQ_DB'), 1), clock(), write(reg('EQ_DB'), (1 << 16), Q), clock()]
    return s


def main():
    out = os.path.join(HERE, 'corpus', 'qemu')
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        os.unlink(os.path.join(out, name))
    for name, ops in sorted(seeds().items()):
        data = SEP.join(ops)
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
        print('%-18s %3d commands, %5d bytes' % (name, len(ops), len(data)))


if __name__ == '__main__':
    main()
