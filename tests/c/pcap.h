/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Minimal classic-pcap writer for tests (linktype 1, Ethernet).  Not used
 * by the model. */
#ifndef QRNIC_TEST_PCAP_H
#define QRNIC_TEST_PCAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define QPCAP_LINKTYPE_ETHERNET 1

/* Create path and write the global header; NULL on error. */
FILE *qpcap_open(const char *path, uint32_t linktype);
/* Append one record; returns 0 or -1. */
int qpcap_write(FILE *f, const void *frame, size_t len, uint32_t ts_sec, uint32_t ts_usec);
/* Flush and close; returns 0 or -1. */
int qpcap_close(FILE *f);

#endif
