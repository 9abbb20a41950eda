/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/* qrnic ABI: everything shared by model, firmware, kernel driver and provider. */
#ifndef QRNIC_ABI_H
#define QRNIC_ABI_H
#include "qrnic_abi_types.h"
#include "qrnic_regs.h"
#include "qrnic_queue.h"
#include "qrnic_mem.h"
#include "qrnic_admin.h"
#endif
