/* hash.h - the daemon's hashes: one of bytes and one mixer of words, for every table it keeps.
 * hash_bytes is also stored (stacks.hash is that of a stack's folded text): it must never change. */
#ifndef FLAMED_HASH_H
#define FLAMED_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV_OFFSET 0xcbf29ce484222325ULL

/* 64-bit FNV-1a of len bytes, continued from h (HASH_FNV_OFFSET to start one). */
static inline uint64_t hash_bytes(uint64_t h, const void *p, size_t len)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ s[i]) * 0x100000001b3ULL;
	return h;
}

/* Mixes n words into one hash: each is folded in, then multiplied and shifted so that every bit of
 * it reaches the low bits a table indexes with. */
static inline uint64_t hash_words(const uint64_t *v, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= v[i];
		h *= 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 31;
	}
	return h;
}

#endif
