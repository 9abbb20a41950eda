/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic pcap writer: classic pcap (version 2.4, link type 1 Ethernet,
 * frames without FCS, snap length 65535), written little endian whatever
 * the host.  QEMU-free; the one writer of the device's pcap=FILE
 * (hw/qrnic.c), the test harness (hx_pcap_open(), qrnic-sim --pcap) and
 * the wire self test.
 *
 * Each record is one writev() of its header and bytes and nothing is
 * buffered, so the file is complete at every moment (at exit, reset, even
 * after a kill).  Error texts go to err (errlen bytes, NUL-terminated; err
 * may be NULL) and name the file.
 */
#ifndef QRNIC_PCAP_H
#define QRNIC_PCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct qrnic_pcap;

/* Create (truncate) path and write the file header: timestamps in
 * nanoseconds (magic a1b23c4d) if nsec, else microseconds (a1b2c3d4).
 * NULL on error ("Could not create 'PATH': REASON" or "cannot write
 * 'PATH': REASON"), errno set. */
struct qrnic_pcap *qrnic_pcap_open(const char *path, bool nsec, char *err, size_t errlen);

/* The same on fd, already open for writing (the caller created it); the
 * writer owns fd from here on, also on error.  name is for messages. */
struct qrnic_pcap *qrnic_pcap_open_fd(int fd, const char *name, bool nsec, char *err,
				      size_t errlen);

/* Append one frame stamped ts_ns (nanoseconds; cut to microseconds in a
 * microsecond file), cut to the snap length.  0, or -errno (-EIO for a
 * short write) with "write error on 'PATH' (REASON)" in err.  The capture
 * stays open: whether to go on is the caller's choice. */
int qrnic_pcap_write(struct qrnic_pcap *pc, const void *frame, size_t len, uint64_t ts_ns,
		     char *err, size_t errlen);

/* Frames written so far. */
uint64_t qrnic_pcap_frames(const struct qrnic_pcap *pc);

/* Close the file and free pc (NULL: nothing).  0 or -errno. */
int qrnic_pcap_close(struct qrnic_pcap *pc);

#endif
