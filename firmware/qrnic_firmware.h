/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic firmware: the interface for whoever creates a device (QEMU glue,
 * the simulator, the test harness).
 *
 * The firmware is the device's admin engine: it executes the commands of
 * the admin queue.  The model does not link it in by itself; the creator
 * hands it over:
 *
 *     dev = qrnic_dev_new(&cfg, &host_ops, host, &qrnic_fw_admin_ops, NULL);
 *
 * The engine keeps its state in the device, so one table (and a NULL
 * opaque) serves every device.
 */
#ifndef QRNIC_FIRMWARE_H
#define QRNIC_FIRMWARE_H

#include "qrnic_model.h"

extern const struct qrnic_admin_ops qrnic_fw_admin_ops;

#endif
