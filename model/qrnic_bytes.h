/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic: big- and little-endian field access byte by byte (wire.c, crc.c):
 * independent of host endianness and alignment.
 */
#ifndef QRNIC_BYTES_H
#define QRNIC_BYTES_H

#include <stdint.h>

static inline uint16_t rd16(const uint8_t *b)
{
	return (uint16_t)((b[0] << 8) | b[1]);
}
static inline uint32_t rd24(const uint8_t *b)
{
	return ((uint32_t)b[0] << 16) | ((uint32_t)b[1] << 8) | b[2];
}
static inline uint32_t rd32(const uint8_t *b)
{
	return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}
static inline uint64_t rd64(const uint8_t *b)
{
	return ((uint64_t)rd32(b) << 32) | rd32(b + 4);
}
static inline uint32_t rd32le(const uint8_t *b)
{
	return ((uint32_t)b[3] << 24) | ((uint32_t)b[2] << 16) | ((uint32_t)b[1] << 8) | b[0];
}
static inline void wr16(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}
static inline void wr24(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 16);
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)v;
}
static inline void wr32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}
static inline void wr64(uint8_t *b, uint64_t v)
{
	wr32(b, (uint32_t)(v >> 32));
	wr32(b + 4, (uint32_t)v);
}
static inline void wr32le(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

#endif
