/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qrnic ABI: fixed-width types usable from the device model, the firmware,
 * the Linux kernel driver and the rdma-core provider.
 *
 * Every multi-byte field of every structure in the qrnic ABI is little
 * endian.  The structures contain no implicit padding; each has a static
 * assertion on its size and on the offsets that matter.
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

#define QRNIC_ASSERT_SIZE(type, size) \
	QRNIC_STATIC_ASSERT(sizeof(type) == (size), #type " must be " #size " bytes")
#define QRNIC_ASSERT_OFFSET(type, field, off) \
	QRNIC_STATIC_ASSERT(offsetof(type, field) == (off), #type "." #field " must be at " #off)

#endif
