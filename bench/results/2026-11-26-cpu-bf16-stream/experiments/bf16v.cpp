#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
static inline uint16_t sc(const float* in, size_t i) {
  uint32_t u;
  memcpy(&u, in + i, 4);
  return (u + 0x7FFF + ((u >> 16) & 1)) >> 16;
}
extern "C" T void v0(const float* in, uint16_t* out, size_t n) {
  const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF), one = _mm512_set1_epi32(1),
                sub_top = _mm512_set1_epi32(0x007FFFFE), inf_bits = _mm512_set1_epi32(0x7F800000);
  const __m256i sign16 = _mm256_set1_epi16((short)0x8000), qnan16 = _mm256_set1_epi16(0x7FC0);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(in + i);
    const __m512i a = _mm512_and_si512(_mm512_castps_si512(x), mag);
    const __mmask16 sub = _mm512_cmple_epu32_mask(_mm512_sub_epi32(a, one), sub_top);
    if (__builtin_expect(sub != 0, 0)) {
      for (size_t k = i; k < i + 16; ++k) out[k] = sc(in, k);
      continue;
    }
    __m256i h = (__m256i)_mm512_cvtneps_pbh(x);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(a, inf_bits);
    h = _mm256_mask_mov_epi16(h, nan, _mm256_or_si256(_mm256_and_si256(h, sign16), qnan16));
    _mm256_storeu_si256((__m256i*)(out + i), h);
  }
  for (; i < n; ++i) out[i] = sc(in, i);
}
extern "C" T void v1(const float* in, uint16_t* out, size_t n) {
  const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF), one = _mm512_set1_epi32(1),
                sub_top = _mm512_set1_epi32(0x007FFFFE), inf_bits = _mm512_set1_epi32(0x7F800000);
  const __m512i sign16 = _mm512_set1_epi16((short)0x8000), qnan16 = _mm512_set1_epi16(0x7FC0);
  size_t i = 0;
  size_t head = ((64 - ((uintptr_t)out % 64)) % 64) / 2;
  if (head > n) head = n;
  for (; i < head; ++i) out[i] = sc(in, i);
  for (; i + 32 <= n; i += 32) {
    const __m512 x0 = _mm512_loadu_ps(in + i), x1 = _mm512_loadu_ps(in + i + 16);
    const __m512i a0 = _mm512_and_si512(_mm512_castps_si512(x0), mag),
                  a1 = _mm512_and_si512(_mm512_castps_si512(x1), mag);
    const __mmask16 s0 = _mm512_cmple_epu32_mask(_mm512_sub_epi32(a0, one), sub_top),
                    s1 = _mm512_cmple_epu32_mask(_mm512_sub_epi32(a1, one), sub_top);
    if (__builtin_expect((s0 | s1) != 0, 0)) {
      for (size_t k = i; k < i + 32; ++k) out[k] = sc(in, k);
      continue;
    }
    __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
    const __mmask32 nan = (__mmask32)_mm512_cmpgt_epu32_mask(a0, inf_bits) |
                          ((__mmask32)_mm512_cmpgt_epu32_mask(a1, inf_bits) << 16);
    h = _mm512_mask_mov_epi16(h, nan, _mm512_or_si512(_mm512_and_si512(h, sign16), qnan16));
    _mm512_store_si512((__m512i*)(out + i), h);
  }
  for (; i < n; ++i) out[i] = sc(in, i);
}
// v2: like v1 but streaming (non-temporal) stores
extern "C" T void v2(const float* in, uint16_t* out, size_t n) {
  const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF), one = _mm512_set1_epi32(1),
                sub_top = _mm512_set1_epi32(0x007FFFFE), inf_bits = _mm512_set1_epi32(0x7F800000);
  const __m512i sign16 = _mm512_set1_epi16((short)0x8000), qnan16 = _mm512_set1_epi16(0x7FC0);
  size_t i = 0;
  size_t head = ((64 - ((uintptr_t)out % 64)) % 64) / 2;
  if (head > n) head = n;
  for (; i < head; ++i) out[i] = sc(in, i);
  for (; i + 32 <= n; i += 32) {
    const __m512 x0 = _mm512_loadu_ps(in + i), x1 = _mm512_loadu_ps(in + i + 16);
    const __m512i a0 = _mm512_and_si512(_mm512_castps_si512(x0), mag),
                  a1 = _mm512_and_si512(_mm512_castps_si512(x1), mag);
    const __mmask16 s0 = _mm512_cmple_epu32_mask(_mm512_sub_epi32(a0, one), sub_top),
                    s1 = _mm512_cmple_epu32_mask(_mm512_sub_epi32(a1, one), sub_top);
    if (__builtin_expect((s0 | s1) != 0, 0)) {
      for (size_t k = i; k < i + 32; ++k) out[k] = sc(in, k);
      continue;
    }
    __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
    const __mmask32 nan = (__mmask32)_mm512_cmpgt_epu32_mask(a0, inf_bits) |
                          ((__mmask32)_mm512_cmpgt_epu32_mask(a1, inf_bits) << 16);
    h = _mm512_mask_mov_epi16(h, nan, _mm512_or_si512(_mm512_and_si512(h, sign16), qnan16));
    _mm512_stream_si512((__m512i*)(out + i), h);
  }
  _mm_sfence();
  for (; i < n; ++i) out[i] = sc(in, i);
}
// v3: v0 with 32-byte non-temporal stores after a head that aligns the output to 32 bytes
extern "C" T void v3(const float* in, uint16_t* out, size_t n) {
  const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF), one = _mm512_set1_epi32(1),
                sub_top = _mm512_set1_epi32(0x007FFFFE), inf_bits = _mm512_set1_epi32(0x7F800000);
  const __m256i sign16 = _mm256_set1_epi16((short)0x8000), qnan16 = _mm256_set1_epi16(0x7FC0);
  size_t i = 0;
  size_t head = ((32 - ((uintptr_t)out % 32)) % 32) / 2;
  if (head > n) head = n;
  for (; i < head; ++i) out[i] = sc(in, i);
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(in + i);
    const __m512i a = _mm512_and_si512(_mm512_castps_si512(x), mag);
    const __mmask16 sub = _mm512_cmple_epu32_mask(_mm512_sub_epi32(a, one), sub_top);
    if (__builtin_expect(sub != 0, 0)) {
      for (size_t k = i; k < i + 16; ++k) out[k] = sc(in, k);
      continue;
    }
    __m256i h = (__m256i)_mm512_cvtneps_pbh(x);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(a, inf_bits);
    h = _mm256_mask_mov_epi16(h, nan, _mm256_or_si256(_mm256_and_si256(h, sign16), qnan16));
    _mm256_stream_si256((__m256i*)(out + i), h);
  }
  _mm_sfence();
  for (; i < n; ++i) out[i] = sc(in, i);
}
