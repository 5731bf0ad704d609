// NVIDIA's int8 "linear" input format: clip to [-128, 127], then truncate toward zero (scale 1.0),
// exactly as np.clip(x, -128, 127).astype(np.int8). NaN becomes 0, as numpy's cast gives on x86-64.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace harness_native {

inline std::int8_t quantize_one(float x) {
  x = x != x ? 0.0f : x;  // NaN
  x = x < -128.0f ? -128.0f : x;
  x = x > 127.0f ? 127.0f : x;
  return static_cast<std::int8_t>(static_cast<std::int32_t>(x));  // truncates toward zero
}

inline void quantize_int8_linear(const float* src, std::int8_t* dst, std::size_t count) {
  std::size_t i = 0;
#if defined(__SSE2__)
  // 16 values a step with SSE2 (every x86-64 has it): zero NaNs, clamp, truncate, narrow. The
  // values are in [-128, 127] before narrowing, so the saturating packs change nothing.
  const __m128 low = _mm_set1_ps(-128.0f), high = _mm_set1_ps(127.0f);
  auto clamp = [&](__m128 x) {
    x = _mm_and_ps(x, _mm_cmpord_ps(x, x));  // NaN -> +0.0
    return _mm_cvttps_epi32(_mm_min_ps(_mm_max_ps(x, low), high));
  };
  for (; i + 16 <= count; i += 16) {
    __m128i a = clamp(_mm_loadu_ps(src + i));
    __m128i b = clamp(_mm_loadu_ps(src + i + 4));
    __m128i c = clamp(_mm_loadu_ps(src + i + 8));
    __m128i d = clamp(_mm_loadu_ps(src + i + 12));
    __m128i bytes = _mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), bytes);
  }
#endif
  for (; i < count; ++i) dst[i] = quantize_one(src[i]);
}

}  // namespace harness_native
