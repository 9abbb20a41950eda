/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qrnic ABI: fixed-width types usable from the device model, the firmware,
 * the Linux kernel driver and the rdma-core provider.
 *
 * Every multi-byte field of every structure in the qrnic ABI is little
 * endian (qrnic_le16/32/64), except the few that are in network byte order
 * (qrnic_be32: immediate data).  The structures contain no implicit
 * padding; each has a static assertion on its size and on the offsets that
 * matter.
 *
 * In the Linux kernel, and under sparse (__CHECKER__) anywhere, the types
 * are the kernel's __le16/__le32/__le64/__be32: bitwise types that sparse
 * (make C=2) rejects in arithmetic or assignment without
 * cpu_to_le32()/le32_to_cpu() and friends, so the driver cannot forget a
 * conversion.  Elsewhere they are plain fixed-width integers holding the
 * little-endian (resp. network order) bytes:
 *   - the rdma-core provider converts every field with htole32()/le32toh()
 *     and works on hosts of either byte order;
 *   - the device model and the firmware use the fields as native integers,
 *     so they need a little-endian host (as QEMU's qrnic device on x86-64
 *     and aarch64 hosts); only their byte-string code (packets on the wire,
 *     snapshots, pcaps, page lists) is independent of the host's byte order.
 */
#ifndef QRNIC_ABI_TYPES_H
#define QRNIC_ABI_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#define QRNIC_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#include <stdint.h>
#include <stddef.h>
#define QRNIC_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#if defined(__KERNEL__) || defined(__CHECKER__)
#ifndef __KERNEL__
#include <linux/types.h>	/* the uapi __le32 etc.: __bitwise under sparse */
#endif
typedef __le16 qrnic_le16;
typedef __le32 qrnic_le32;
typedef __le64 qrnic_le64;
typedef __be32 qrnic_be32;
#else
typedef uint16_t qrnic_le16;
typedef uint32_t qrnic_le32;
typedef uint64_t qrnic_le64;
typedef uint32_t qrnic_be32;
#endif

#define QRNIC_ASSERT_SIZE(type, size) \
	QRNIC_STATIC_ASSERT(sizeof(type) == (size), #type " must be " #size " bytes")
#define QRNIC_ASSERT_OFFSET(type, field, off) \
	QRNIC_STATIC_ASSERT(offsetof(type, field) == (off), #type "." #field " must be at " #off)

#endif
