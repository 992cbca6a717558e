/* SHA-256 (OpenSSL EVP) and the deterministic test byte pattern. See CPocketTestTLS.h. */
#include "CPocketTestTLS.h"

#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

/* The opaque handle is the EVP context itself. */
pktt_sha256 *pktt_sha256_new(void) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        ctx = NULL;
    }
    return (pktt_sha256 *)ctx;
}

void pktt_sha256_update(pktt_sha256 *hasher, const void *bytes, size_t length) {
    if (length > 0) EVP_DigestUpdate((EVP_MD_CTX *)hasher, bytes, length);
}

int pktt_sha256_final_hex(pktt_sha256 *hasher, char out[65]) {
    static const char digits[] = "0123456789abcdef";
    EVP_MD_CTX *ctx = (EVP_MD_CTX *)hasher;
    unsigned char digest[32];
    unsigned int length = 0;
    out[0] = 0;
    if (EVP_DigestFinal_ex(ctx, digest, &length) != 1 || length != 32) return 0;
    for (unsigned int i = 0; i < 32; i++) {
        out[2 * i] = digits[digest[i] >> 4];
        out[2 * i + 1] = digits[digest[i] & 15];
    }
    out[64] = 0;
    return EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
}

void pktt_sha256_free(pktt_sha256 *hasher) { EVP_MD_CTX_free((EVP_MD_CTX *)hasher); }

/* SplitMix64 output number `index` (0-based) of a generator seeded with `seed`. */
static uint64_t pattern_word(uint64_t seed, uint64_t index) {
    uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Stores `word` little-endian into 8 bytes. */
static void store_le(unsigned char bytes[8], uint64_t word) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(bytes, &word, 8);
#else
    for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)(word >> (8 * i));
#endif
}

void pktt_pattern_fill(unsigned long long seed, unsigned long long offset, void *out, size_t length) {
    unsigned char *p = out;
    uint64_t index = offset >> 3;
    unsigned skip = (unsigned)(offset & 7);
    unsigned char bytes[8];
    if (skip != 0 && length > 0) { /* a partial first word */
        store_le(bytes, pattern_word(seed, index++));
        size_t take = 8 - skip < length ? 8 - skip : length;
        memcpy(p, bytes + skip, take);
        p += take;
        length -= take;
    }
    for (; length >= 8; length -= 8, p += 8) store_le(p, pattern_word(seed, index++));
    if (length > 0) { /* a partial last word */
        store_le(bytes, pattern_word(seed, index));
        memcpy(p, bytes, length);
    }
}
