// The row product of the planar CONV_2D_DW kernel (conv.cpp): one output row as the sum over the
// taps of weighted, shifted input rows, held in registers across all taps, on Highway vectors of the
// best target this CPU has (compiled for every target, chosen at run time).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/depthwise_row.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace ggx::cpu::depthwise_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out[ow] = sum over kh < KH with rows[kh] and kw < KW of w[kh * KW + kw] * rows[kh][ow + kw * d0],
// summed in that order (taps outer, as the scalar loop it replaces), four vectors of outputs at a time.
void Row(const float * const * rows, int64_t KH, const float * w, int64_t KW, int64_t d0, float * out,
         int64_t OW) {
    const hn::ScalableTag<float> d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    int64_t ow = 0;
    for (; ow + 4 * L <= OW; ow += 4 * L) {
        auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
        for (int64_t kh = 0; kh < KH; ++kh) {
            if (rows[kh] == nullptr) continue;
            for (int64_t kw = 0; kw < KW; ++kw) {
                const float * in = rows[kh] + ow + kw * d0;
                const auto wv = hn::Set(d, w[kh * KW + kw]);
                a0 = hn::MulAdd(wv, hn::LoadU(d, in), a0);
                a1 = hn::MulAdd(wv, hn::LoadU(d, in + L), a1);
                a2 = hn::MulAdd(wv, hn::LoadU(d, in + 2 * L), a2);
                a3 = hn::MulAdd(wv, hn::LoadU(d, in + 3 * L), a3);
            }
        }
        hn::StoreU(a0, d, out + ow);
        hn::StoreU(a1, d, out + ow + L);
        hn::StoreU(a2, d, out + ow + 2 * L);
        hn::StoreU(a3, d, out + ow + 3 * L);
    }
    const hn::CappedTag<float, 1> d1;  // the tail with the same (fused or not) multiply-add
    for (; ow < OW; ++ow) {
        auto acc = hn::Zero(d1);
        for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; rows[kh] != nullptr && kw < KW; ++kw)
                acc = hn::MulAdd(hn::Set(d1, w[kh * KW + kw]), hn::Set(d1, rows[kh][ow + kw * d0]), acc);
        out[ow] = hn::GetLane(acc);
    }
}

}  // namespace HWY_NAMESPACE
}  // namespace ggx::cpu::depthwise_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "cpu/kernels/common.h"

namespace ggx::cpu {
namespace depthwise_simd {
HWY_EXPORT(Row);
}  // namespace depthwise_simd

void depthwise_row_f32(const float * const * rows, int64_t KH, const float * w, int64_t KW, int64_t d0,
                       float * out, int64_t OW) {
    HWY_DYNAMIC_DISPATCH(depthwise_simd::Row)(rows, KH, w, KW, d0, out, OW);
}

}  // namespace ggx::cpu
#endif  // HWY_ONCE
