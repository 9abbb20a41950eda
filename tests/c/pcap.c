/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pcap.h"

/* Records are written little endian explicitly so the file does not depend
 * on the host (magic a1b2c3d4 stored LE = d4 c3 b2 a1). */
static int put32(FILE *f, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	return fwrite(b, 1, 4, f) == 4 ? 0 : -1;
}

static int put16(FILE *f, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	return fwrite(b, 1, 2, f) == 2 ? 0 : -1;
}

FILE *qpcap_open(const char *path, uint32_t linktype)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return NULL;
	if (put32(f, 0xa1b2c3d4u) || put16(f, 2) || put16(f, 4) || put32(f, 0) ||
	    put32(f, 0) || put32(f, 65535) || put32(f, linktype)) {
		fclose(f);
		return NULL;
	}
	return f;
}

int qpcap_write(FILE *f, const void *frame, size_t len, uint32_t ts_sec, uint32_t ts_usec)
{
	uint32_t cap = len > 65535 ? 65535 : (uint32_t)len;

	if (put32(f, ts_sec) || put32(f, ts_usec) || put32(f, cap) || put32(f, (uint32_t)len))
		return -1;
	return fwrite(frame, 1, cap, f) == cap ? 0 : -1;
}

int qpcap_close(FILE *f)
{
	int r = fflush(f);

	return (fclose(f) || r) ? -1 : 0;
}
