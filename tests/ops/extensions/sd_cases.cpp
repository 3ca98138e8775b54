// Cases of the sd extension pack (extensions/sd, ../shared/spec/sd-ops.md): every sd.* operator over
// the shapes, layouts and attribute values it accepts (odd sizes, partial rotation, every ConvRot
// group, every input kind of the INT8 linear), then scheduled graphs shaped like the model's sites
// so that each of the pack's fusion rules fires on the devices that register it (CPU:
// sd.rms_norm_mul_rope.cpu and the ConvRot and affine fusions; Vulkan: the RoPE, INT8, modulation,
// ConvRot and affine fusions). Devices without a rule
// run the same graphs unfused, which checks them too. The attention operators (Sage, Sol) also have
// perf cases, with flash attention at Sage's shape beside them.
#include <sd-ggml-ext.h>

#include <cmath>

#include "ggx-ops/case.h"

namespace ggx::ops {
namespace {

constexpr const char * kRope = "sd.rope_apply.v1";
constexpr const char * kQuantize = "sd.quantize_i8_convrot.v1";
constexpr const char * kLinear = "sd.linear_i8.v1";
constexpr const char * kSage = "sd.sage_attn.v1";
constexpr const char * kSol = "sd.sol_attn.v1";

const Gen kCodes = Gen::integer(-127, 128);        // I8 weights and activations
const Gen kScales = Gen::uniform(0.001, 0.02);     // per-row / per-output scales
const Gen kActivations = Gen::uniform(-2.0, 2.0);  // F32 activations

// ---- sd.rope_apply.v1 ---------------------------------------------------------------------------

struct RopeShape {
    int64_t d, h, l, b, pairs;  // a [d, h, l, b], pe [2, 2, pairs, l]
};

std::string rope_detail(const RopeShape & s, bool interleaved, Layout a_layout, Layout pe_layout) {
    return format("%s a[%lld,%lld,%lld,%lld] %s pe P=%lld %s", interleaved ? "interleaved" : "split-half",
                  static_cast<long long>(s.d), static_cast<long long>(s.h), static_cast<long long>(s.l),
                  static_cast<long long>(s.b), layout_name(a_layout), static_cast<long long>(s.pairs),
                  layout_name(pe_layout));
}

void add_rope_apply_cases(CaseList & list) {
    // Full rotation (P = D/2) and partial (P < D/2: the tail is copied), D a multiple of 2 only.
    const RopeShape shapes[] = {
        {6, 3, 5, 1, 3}, {34, 2, 3, 2, 17}, {64, 1, 7, 1, 32}, {40, 3, 2, 1, 9}, {6, 1, 1, 1, 1}};
    for (const bool interleaved : {true, false}) {
        for (const RopeShape & s : shapes) {
            for (const Layout layout : kAllLayouts) {
                list.add_ext(kRope, rope_detail(s, interleaved, layout, Layout::Contiguous), [=](Graph & g) {
                    ggml_tensor * a = g.input(GGML_TYPE_F32, {s.d, s.h, s.l, s.b}, layout);
                    ggml_tensor * pe = g.input(GGML_TYPE_F32, {2, 2, s.pairs, s.l});
                    return ggml_rope_apply(g.ctx(), a, pe, interleaved);
                });
            }
        }
        // pe through strides too.
        for (const Layout pe_layout : {Layout::Permuted, Layout::Strided}) {
            const RopeShape s{34, 2, 3, 2, 11};
            list.add_ext(kRope, rope_detail(s, interleaved, Layout::Strided, pe_layout), [=](Graph & g) {
                ggml_tensor * a = g.input(GGML_TYPE_F32, {s.d, s.h, s.l, s.b}, Layout::Strided);
                ggml_tensor * pe = g.input(GGML_TYPE_F32, {2, 2, s.pairs, s.l}, pe_layout);
                return ggml_rope_apply(g.ctx(), a, pe, interleaved);
            });
        }
    }
}

// ---- sd.quantize_i8_convrot.v1 ------------------------------------------------------------------

void add_quantize_case(CaseList & list, int group, Shape ne, Gen gen = kActivations, const char * note = "") {
    list.add_ext(kQuantize, format("G=%d %s%s", group, str(ne).c_str(), note), [=](Graph & g) {
        return ggml_quantize_i8_convrot(g.ctx(), g.input(GGML_TYPE_F32, ne, Layout::Contiguous, gen), group);
    });
}

void add_quantize_cases(CaseList & list) {
    // Every group size, row counts that need padding rows (rows % 4 != 0) and ones that do not.
    for (const int group : {1, 4, 16, 64, 256}) {
        const int64_t k = group < 16 ? 32 : 2 * group;
        add_quantize_case(list, group, {k, 3, 1, 1});
        add_quantize_case(list, group, {k, 4, 1, 1});
        add_quantize_case(list, group, {k, 5, 2, 1});
    }
    add_quantize_case(list, 4, {12, 1, 1, 1});  // one row: the scale row is mostly tail
    add_quantize_case(list, 1, {6, 3, 1, 1});   // K % 4 != 0 (the CPU only)
    add_quantize_case(list, 16, {48, 2, 3, 2});
    // Rows longer than one pass keeps resident (rotated twice).
    add_quantize_case(list, 256, {4352, 2, 1, 1});
    add_quantize_case(list, 64, {4160, 3, 1, 1});
    // All-zero rows: scale 0, zero codes.
    add_quantize_case(list, 16, {32, 3, 1, 1}, Gen::integer(0, 1), " zeros");
    // Rows of 0..254 (amax 254, scale 2): the odd values are halves, rounded half to even.
    add_quantize_case(list, 1, {256, 3, 1, 1}, Gen::distinct(255), " ties");
}

// ---- sd.linear_i8.v1 ----------------------------------------------------------------------------

struct LinearInputs {
    ggml_tensor *w, *ws, *bias;
};

LinearInputs linear_inputs(Graph & g, int64_t k, int64_t n, bool ws, bool bias, bool ws_2d = false) {
    LinearInputs in{};
    in.w = g.input(GGML_TYPE_I8, {k, n, 1, 1}, Layout::Contiguous, kCodes);
    if (ws)
        in.ws = g.input(GGML_TYPE_F32, ws_2d ? Shape{1, n, 1, 1} : Shape{n, 1, 1, 1}, Layout::Contiguous,
                        kScales);
    if (bias) in.bias = g.input(GGML_TYPE_F32, {n, 1, 1, 1});
    return in;
}

std::string vectors(bool ws, bool bias) {
    return std::string(ws ? " ws" : "") + (bias ? " bias" : "") + (!ws && !bias ? " plain" : "");
}

void add_linear_cases(CaseList & list) {
    // F32 activations quantized inside the op: every rotation, with and without scale and bias.
    for (const bool ws : {true, false}) {
        for (const bool bias : {true, false}) {
            list.add_ext(kLinear, "f32 G=0 K=36 N=5 M=3" + vectors(ws, bias), [=](Graph & g) {
                const LinearInputs in = linear_inputs(g, 36, 5, ws, bias);
                ggml_tensor * x = g.input(GGML_TYPE_F32, {36, 3, 1, 1}, Layout::Contiguous, kActivations);
                return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, x, in.ws, in.bias, 0, nullptr);
            });
        }
    }
    for (const int group : {1, 4, 16, 64, 256}) {
        const int64_t k = group < 64 ? 64 : 2 * group;
        list.add_ext(
            kLinear, format("f32 G=%d K=%lld N=7 M=5 ws bias", group, static_cast<long long>(k)),
            [=](Graph & g) {
                const LinearInputs in = linear_inputs(g, k, 7, true, true);
                ggml_tensor * x = g.input(GGML_TYPE_F32, {k, 5, 1, 1}, Layout::Contiguous, kActivations);
                return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, x, in.ws, in.bias, group, nullptr);
            });
    }
    // K not a multiple of 4 (the CPU only), strided F32 rows (the CPU only), batches, [1, N] scales,
    // one output, one row.
    list.add_ext(kLinear, "f32 G=0 K=37 N=6 M=3 ws bias", [](Graph & g) {
        const LinearInputs in = linear_inputs(g, 37, 6, true, true);
        ggml_tensor * x = g.input(GGML_TYPE_F32, {37, 3, 1, 1}, Layout::Contiguous, kActivations);
        return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, x, in.ws, in.bias, 0, nullptr);
    });
    list.add_ext(kLinear, "f32 G=4 K=20 N=9 M=7 strided rows ws bias", [](Graph & g) {
        const LinearInputs in = linear_inputs(g, 20, 9, true, true);
        ggml_tensor * x = g.input(GGML_TYPE_F32, {20, 7, 1, 1}, Layout::Strided, kActivations);
        return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, x, in.ws, in.bias, 4, nullptr);
    });
    list.add_ext(kLinear, "f32 G=16 K=48 N=5 x[48,3,2,2] ws[1,N] bias", [](Graph & g) {
        const LinearInputs in = linear_inputs(g, 48, 5, true, true, true);
        ggml_tensor * x = g.input(GGML_TYPE_F32, {48, 3, 2, 2}, Layout::Contiguous, kActivations);
        return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, x, in.ws, in.bias, 16, nullptr);
    });
    list.add_ext(kLinear, "f32 G=0 K=16 N=1 M=1 ws", [](Graph & g) {
        const LinearInputs in = linear_inputs(g, 16, 1, true, false);
        ggml_tensor * x = g.input(GGML_TYPE_F32, {16, 1, 1, 1}, Layout::Contiguous, kActivations);
        return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, x, in.ws, nullptr, 0, nullptr);
    });
    // Packed activations from sd.quantize_i8_convrot.v1 (G 1 also with convrot_group_size 0).
    for (const int group : {1, 16, 256}) {
        for (const int requested : {group, 0}) {
            if (requested == 0 && group != 1) continue;
            const int64_t k = group < 64 ? 64 : 2 * group;
            list.add_ext(
                kLinear,
                format("packed G=%d requested %d K=%lld N=7 x[K,5,3] ws bias", group, requested,
                       static_cast<long long>(k)),
                [=](Graph & g) {
                    const LinearInputs in = linear_inputs(g, k, 7, true, true);
                    ggml_tensor * x = g.input(GGML_TYPE_F32, {k, 5, 3, 1}, Layout::Contiguous, kActivations);
                    ggml_tensor * q = ggml_quantize_i8_convrot(g.ctx(), x, group);
                    return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, q, in.ws, in.bias, requested, nullptr);
                });
        }
    }
    // Plain I8 codes, with input scales of each accepted shape or none.
    list.add_ext(kLinear, "i8 K=36 N=7 M=5 xs[M] ws bias", [](Graph & g) {
        const LinearInputs in = linear_inputs(g, 36, 7, true, true);
        ggml_tensor * x = g.input(GGML_TYPE_I8, {36, 5, 1, 1}, Layout::Contiguous, kCodes);
        ggml_tensor * xs = g.input(GGML_TYPE_F32, {5, 1, 1, 1}, Layout::Contiguous, kScales);
        return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, x, in.ws, in.bias, 0, xs);
    });
    list.add_ext(kLinear, "i8 K=20 N=3 x[20,3,2] xs[1,3,2] ws", [](Graph & g) {
        const LinearInputs in = linear_inputs(g, 20, 3, true, false);
        ggml_tensor * x = g.input(GGML_TYPE_I8, {20, 3, 2, 1}, Layout::Contiguous, kCodes);
        ggml_tensor * xs = g.input(GGML_TYPE_F32, {1, 3, 2, 1}, Layout::Contiguous, kScales);
        return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, x, in.ws, nullptr, 0, xs);
    });
    list.add_ext(kLinear, "i8 K=24 N=5 x[24,3,2] xs[3,2] bias", [](Graph & g) {
        const LinearInputs in = linear_inputs(g, 24, 5, false, true);
        ggml_tensor * x = g.input(GGML_TYPE_I8, {24, 3, 2, 1}, Layout::Contiguous, kCodes);
        ggml_tensor * xs = g.input(GGML_TYPE_F32, {3, 2, 1, 1}, Layout::Contiguous, kScales);
        return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, x, nullptr, in.bias, 0, xs);
    });
    list.add_ext(kLinear, "i8 K=12 N=4 M=3 no scales", [](Graph & g) {
        const LinearInputs in = linear_inputs(g, 12, 4, false, false);
        ggml_tensor * x = g.input(GGML_TYPE_I8, {12, 3, 1, 1}, Layout::Contiguous, Gen::integer(-8, 8));
        return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, x, nullptr, nullptr, 0, nullptr);
    });
}

// ---- sd.sage_attn.v1 and sd.sol_attn.v1 ---------------------------------------------------------

// The fork's test inputs (sd-ops.md 5.1): standard deviation 0.6 (uniform on [-1.04, 1.04)).
const Gen kAttnValues = Gen::uniform(-1.04, 1.04);
const Gen kZeros = Gen::integer(0, 1);

struct AttnShape {
    int64_t d, tq, tk, hq, hkv, b;
};

std::string attn_detail(const AttnShape & s, float scale, const char * note) {
    return format("D=%lld Tq=%lld Tk=%lld H=%lld/%lld B=%lld scale=%g%s", static_cast<long long>(s.d),
                  static_cast<long long>(s.tq), static_cast<long long>(s.tk), static_cast<long long>(s.hq),
                  static_cast<long long>(s.hkv), static_cast<long long>(s.b), scale, note);
}

// k plus the per-channel bias 32 sin(c) the fork's test uses to exercise smoothing, built in the
// graph (arange -> sin -> scale, broadcast over tokens, heads and batch).
ggml_tensor * biased(Graph & g, ggml_tensor * k) {
    ggml_tensor * c = ggml_arange(g.ctx(), 0.0f, static_cast<float>(k->ne[0]), 1.0f);
    return ggml_add(g.ctx(), k, ggml_scale(g.ctx(), ggml_sin(g.ctx(), c), 32.0f));
}

struct AttnInputs {
    Gen q = kAttnValues, k = kAttnValues, v = kAttnValues;
    bool bias = false;  // Sage: k + 32 sin(c)
};

void add_sage_case(CaseList & list, const AttnShape & s, float scale, const char * note, AttnInputs in = {}) {
    list.add_ext(kSage, attn_detail(s, scale, note), [=](Graph & g) {
        ggml_tensor * q = g.input(GGML_TYPE_F32, {s.d, s.tq, s.hq, s.b}, Layout::Contiguous, in.q);
        ggml_tensor * k = g.input(GGML_TYPE_F32, {s.d, s.tk, s.hkv, s.b}, Layout::Contiguous, in.k);
        ggml_tensor * v = g.input(GGML_TYPE_F16, {s.d, s.tk, s.hkv, s.b}, Layout::Contiguous, in.v);
        return ggml_sage_attn(g.ctx(), q, in.bias ? biased(g, k) : k, v, scale, GGML_SAGE_ATTN_AUTO);
    });
}

void add_sage_cases(CaseList & list) {
    // Lengths 1 .. 1042 (multiples of the 64-token blocks and not), both head sizes, GQA 1-4.
    const AttnShape shapes[] = {{64, 1, 1, 1, 1, 1},      {64, 7, 65, 2, 1, 1},   {128, 64, 64, 3, 3, 1},
                                {128, 100, 129, 4, 1, 2}, {64, 200, 77, 4, 2, 1}, {128, 1042, 1042, 1, 1, 1},
                                {64, 1042, 300, 2, 2, 1}};
    for (const AttnShape & s : shapes)
        for (const float scale : {1.0f, 0.7f}) {
            add_sage_case(list, s, scale, "");
            add_sage_case(list, s, scale, " k+32sin(c)", {.bias = true});
        }
    // All-zero q and k: the mean of v; all-zero v: 0.
    add_sage_case(list, {128, 70, 130, 2, 1, 1}, 1.0f, " q=k=0", {.q = kZeros, .k = kZeros});
    add_sage_case(list, {64, 70, 130, 3, 3, 1}, 1.0f, " v=0", {.v = kZeros});
}

void add_sol_case(CaseList & list, const AttnShape & s, float scale, float tau, AttnInputs in = {}) {
    list.add_ext(kSol, attn_detail(s, scale, format(" tau=%g", tau).c_str()), [=](Graph & g) {
        const Shape ne{s.d, s.tq, s.hq, s.b};
        return ggml_sol_attn(g.ctx(), g.input(GGML_TYPE_F32, ne, Layout::Contiguous, in.q),
                             g.input(GGML_TYPE_F32, ne, Layout::Contiguous, in.k),
                             g.input(GGML_TYPE_F32, ne, Layout::Contiguous, in.v), scale, tau);
    });
}

void add_sol_cases(CaseList & list) {
    const float scale = 1.0f / std::sqrt(128.0f);
    // Dense (tau -100) over lengths below, at and above one tile and the dense-sequence limit.
    for (const int64_t t : {1, 63, 64, 129, 200, 1042})
        add_sol_case(list, {128, t, t, t > 200 ? 1 : 2, t > 200 ? 1 : 2, 1}, scale, -100.0f);
    // Selective: typical tau, with scale 1 (peaked scores) and 0.7 too.
    for (const float tau : {0.5f, 0.9f, 1.3f}) {
        add_sol_case(list, {128, 300, 300, 2, 2, 2}, scale, tau);
        add_sol_case(list, {128, 1042, 1042, 1, 1, 1}, 1.0f, tau);
    }
    add_sol_case(list, {128, 257, 257, 3, 3, 1}, 0.7f, 0.9f);
    // All-zero q and k: every share is 1 (kept), the mean of v; all-zero v: 0.
    add_sol_case(list, {128, 200, 200, 2, 2, 1}, scale, 1.3f, {.q = kZeros, .k = kZeros});
    add_sol_case(list, {128, 200, 200, 2, 2, 1}, scale, 0.5f, {.v = kZeros});
}

// Perf: Sage at the fork's benchmark shape (D 128, 48 query heads over 12 kv heads, N 1042), flash
// attention (F16 K/V, no mask) at the same shape, and Sol at D 128, 24 heads, N 1042.
void add_attention_perf_cases(CaseList & list) {
    const int64_t d = 128, n = 1042, hq = 48, hkv = 12;
    const double flops = 4.0 * d * n * n * hq;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    list.add_perf_ext(kSage, "perf d128 h48/12 n1042", flops, [=](Graph & g) {
        ggml_tensor * q = g.input(GGML_TYPE_F32, {d, n, hq, 1}, Layout::Contiguous, kAttnValues);
        ggml_tensor * k = g.input(GGML_TYPE_F32, {d, n, hkv, 1}, Layout::Contiguous, kAttnValues);
        ggml_tensor * v = g.input(GGML_TYPE_F16, {d, n, hkv, 1}, Layout::Contiguous, kAttnValues);
        return ggml_sage_attn(g.ctx(), q, k, v, scale, GGML_SAGE_ATTN_AUTO);
    });
    list.add_perf(
        GGML_OP_FLASH_ATTN_EXT, "perf d128 h48/12 q1042 kv1042 f16 no-mask (sage's shape)", flops,
        [=](Graph & g) {
            ggml_tensor * q = g.input(GGML_TYPE_F32, {d, n, hq, 1}, Layout::Contiguous, kAttnValues);
            ggml_tensor * k = g.input(GGML_TYPE_F16, {d, n, hkv, 1}, Layout::Contiguous, kAttnValues);
            ggml_tensor * v = g.input(GGML_TYPE_F16, {d, n, hkv, 1}, Layout::Contiguous, kAttnValues);
            return ggml_flash_attn_ext(g.ctx(), q, k, v, nullptr, scale, 0.0f, 0.0f);
        });
    for (const float tau : {-100.0f, 0.9f}) {
        list.add_perf_ext(
            kSol, format("perf d128 h24 n1042 tau=%g", tau), 4.0 * d * n * n * 24, [=](Graph & g) {
                const Shape ne{d, n, 24, 1};
                return ggml_sol_attn(g.ctx(), g.input(GGML_TYPE_F32, ne, Layout::Contiguous, kAttnValues),
                                     g.input(GGML_TYPE_F32, ne, Layout::Contiguous, kAttnValues),
                                     g.input(GGML_TYPE_F32, ne, Layout::Contiguous, kAttnValues), scale, tau);
            });
    }
}

// ---- fusions (scheduled) ------------------------------------------------------------------------

// RMSNorm -> Mul(1-D weight) -> RoPE: the Q/K norm (sd-ops.md 2).
ggml_tensor * qk_norm_rope(Graph & g, const RopeShape & s, Layout x_layout, bool interleaved) {
    ggml_tensor * x = g.input(GGML_TYPE_F32, {s.d, s.h, s.l, s.b}, x_layout);
    ggml_tensor * w = g.input(GGML_TYPE_F32, {s.d, 1, 1, 1});
    ggml_tensor * pe = g.input(GGML_TYPE_F32, {2, 2, s.pairs, s.l});
    ggml_tensor * norm = ggml_rms_norm(g.ctx(), x, 1e-6f);
    return ggml_rope_apply(g.ctx(), ggml_mul(g.ctx(), norm, w), pe, interleaved);
}

// An INT8 linear over shared activations: packed (quantized from F32 in the graph) or I8 codes with
// input scales.
struct Activations {
    ggml_tensor *x, *xs;
    int group;
};

Activations packed_activations(Graph & g, int64_t k, Shape rows, int group) {
    ggml_tensor * x =
        g.input(GGML_TYPE_F32, {k, rows[1], rows[2], rows[3]}, Layout::Contiguous, kActivations);
    return {ggml_quantize_i8_convrot(g.ctx(), x, group), nullptr, group};
}

Activations i8_activations(Graph & g, int64_t k, int64_t m) {
    return {g.input(GGML_TYPE_I8, {k, m, 1, 1}, Layout::Contiguous, kCodes),
            g.input(GGML_TYPE_F32, {m, 1, 1, 1}, Layout::Contiguous, kScales), 0};
}

ggml_tensor * linear_of(Graph & g, const Activations & a, int64_t n, bool ws, bool bias) {
    const LinearInputs in = linear_inputs(g, a.x->ne[0], n, ws, bias);
    return ggml_mul_mat_i8_tensorwise(g.ctx(), in.w, a.x, in.ws, in.bias, a.group, a.xs);
}

void add_fusion_cases(CaseList & list) {
    // sd.rms_norm_mul_rope.{cpu,vulkan}
    list.add_fusion(GGML_OP_CUSTOM, "rms_norm_mul_rope interleaved D=64 H=3 L=5", [](Graph & g) {
        return qk_norm_rope(g, {64, 3, 5, 1, 32}, Layout::Contiguous, true);
    });
    list.add_fusion(GGML_OP_CUSTOM, "rms_norm_mul_rope split-half D=34 H=2 L=3 B=2 strided x", [](Graph & g) {
        return qk_norm_rope(g, {34, 2, 3, 2, 17}, Layout::Strided, false);
    });
    list.add_fusion(GGML_OP_CUSTOM, "rms_norm_mul_rope interleaved partial D=40 P=10", [](Graph & g) {
        return qk_norm_rope(g, {40, 3, 2, 1, 10}, Layout::Contiguous, true);
    });
    // sd.rms_norm_mul_rope_scale_f16.vulkan: the chain -> SCALE -> CPY into F16 (a cast, a cache view).
    for (const Layout dst_layout : {Layout::Contiguous, Layout::Strided}) {
        list.add_fusion(
            GGML_OP_CPY,
            std::string("rms_norm_mul_rope_scale_f16 D=64 H=2 L=3 into ") + layout_name(dst_layout) + " f16",
            [=](Graph & g) {
                ggml_tensor * r = qk_norm_rope(g, {64, 2, 3, 1, 32}, Layout::Contiguous, true);
                ggml_tensor * dst = g.input(GGML_TYPE_F16, {64, 3, 2, 1}, dst_layout);
                return ggml_cpy(g.ctx(), ggml_scale(g.ctx(), r, 0.125f), dst);
            });
    }
    // sd.linear_i8_gated_residual.vulkan: linear [-> SCALE] -> MUL(gate) -> ADD(residual).
    for (const bool scaled : {false, true}) {
        list.add_fusion(GGML_OP_ADD,
                        std::string("linear_i8_gated_residual i8 K=64 N=24 M=5") + (scaled ? " scaled" : ""),
                        [=](Graph & g) {
                            ggml_tensor * y = linear_of(g, i8_activations(g, 64, 5), 24, true, true);
                            if (scaled) y = ggml_scale(g.ctx(), y, 0.5f);
                            ggml_tensor * gate = g.input(GGML_TYPE_F32, {24, 1, 1, 1});
                            ggml_tensor * residual = g.input(GGML_TYPE_F32, {24, 5, 1, 1});
                            return ggml_add(g.ctx(), ggml_mul(g.ctx(), y, gate), residual);
                        });
    }
    list.add_fusion(GGML_OP_ADD, "linear_i8_gated_residual packed G=64 K=128 N=16 x[K,3,2]", [](Graph & g) {
        ggml_tensor * y = linear_of(g, packed_activations(g, 128, {128, 3, 2, 1}, 64), 16, true, false);
        ggml_tensor * gate = g.input(GGML_TYPE_F32, {16, 1, 2, 1});
        ggml_tensor * residual = g.input(GGML_TYPE_F32, {16, 3, 2, 1});
        return ggml_add(g.ctx(), ggml_mul(g.ctx(), y, gate), residual);
    });
    // sd.linear_i8_swiglu.vulkan: one linear's [2F] output -> SWIGLU, merged and swapped.
    for (const bool swapped : {false, true}) {
        list.add_fusion(
            GGML_OP_GLU,
            std::string("linear_i8_swiglu packed G=16 K=64 2F=34 M=5") + (swapped ? " swapped" : ""),
            [=](Graph & g) {
                ggml_tensor * y = linear_of(g, packed_activations(g, 64, {64, 5, 1, 1}, 16), 34, true, true);
                return swapped ? ggml_swiglu_swapped(g.ctx(), y) : ggml_swiglu(g.ctx(), y);
            });
    }
    // sd.linear_i8_swiglu_split.vulkan: two linears over the same activations -> swiglu_split.
    list.add_fusion(GGML_OP_GLU, "linear_i8_swiglu_split packed G=256 K=256 F=20 M=3", [](Graph & g) {
        const Activations a = packed_activations(g, 256, {256, 3, 1, 1}, 256);
        ggml_tensor * gate = linear_of(g, a, 20, true, false);
        ggml_tensor * up = linear_of(g, a, 20, true, false);
        return ggml_swiglu_split(g.ctx(), gate, up);
    });
    list.add_fusion(GGML_OP_GLU, "linear_i8_swiglu_split i8 K=32 F=12 M=7 bias", [](Graph & g) {
        const Activations a = i8_activations(g, 32, 7);
        ggml_tensor * gate = linear_of(g, a, 12, false, true);
        ggml_tensor * up = linear_of(g, a, 12, false, true);
        return ggml_swiglu_split(g.ctx(), gate, up);
    });
    // sd.linear_i8_concat.vulkan: two linears, or a gated chain and a tensor, -> CONCAT of rows.
    list.add_fusion(GGML_OP_CONCAT, "linear_i8_concat two linears dim 1 K=32 N=8", [](Graph & g) {
        ggml_tensor * a = linear_of(g, i8_activations(g, 32, 3), 8, true, true);
        ggml_tensor * b = linear_of(g, i8_activations(g, 32, 5), 8, true, true);
        return ggml_concat(g.ctx(), a, b, 1);
    });
    list.add_fusion(GGML_OP_CONCAT, "linear_i8_concat gated chain and tensor dim 2 K=64 N=8", [](Graph & g) {
        ggml_tensor * y = linear_of(g, i8_activations(g, 64, 5), 8, true, false);
        ggml_tensor * gate = g.input(GGML_TYPE_F32, {8, 1, 1, 1});
        ggml_tensor * residual = g.input(GGML_TYPE_F32, {8, 5, 1, 1});
        ggml_tensor * chain = ggml_add(g.ctx(), ggml_mul(g.ctx(), y, gate), residual);
        ggml_tensor * other = g.input(GGML_TYPE_F32, {8, 5, 2, 1});
        return ggml_concat(g.ctx(), other, chain, 2);
    });
    // sd.modulate_convrot.vulkan: [RMS_]NORM -> modulation steps -> ConvRot quantization.
    list.add_fusion(GGML_OP_CUSTOM, "modulate_convrot norm mul add G=64 K=128 M=5", [](Graph & g) {
        ggml_tensor * x = g.input(GGML_TYPE_F32, {128, 5, 1, 1}, Layout::Contiguous, kActivations);
        ggml_tensor * scale = g.input(GGML_TYPE_F32, {128, 1, 1, 1});
        ggml_tensor * shift = g.input(GGML_TYPE_F32, {128, 1, 1, 1});
        ggml_tensor * v = ggml_add(g.ctx(), ggml_mul(g.ctx(), ggml_norm(g.ctx(), x, 1e-6f), scale), shift);
        return ggml_quantize_i8_convrot(g.ctx(), v, 64);
    });
    list.add_fusion(
        GGML_OP_CUSTOM, "modulate_convrot rms_norm v+v*s G=256 K=256 M=3 strided x", [](Graph & g) {
            ggml_tensor * x = g.input(GGML_TYPE_F32, {256, 3, 1, 1}, Layout::Strided, kActivations);
            ggml_tensor * s = g.input(GGML_TYPE_F32, {256, 3, 1, 1});
            ggml_tensor * n = ggml_rms_norm(g.ctx(), x, 1e-6f);
            ggml_tensor * v = ggml_add(g.ctx(), n, ggml_mul(g.ctx(), n, s));
            return ggml_quantize_i8_convrot(g.ctx(), v, 256);
        });
    // sd.scale_convrot, sd.swiglu_convrot, sd.activation_mul_convrot (.cpu and .vulkan).
    list.add_fusion(GGML_OP_CUSTOM, "scale_convrot G=64 K=128 M=5", [](Graph & g) {
        ggml_tensor * x = g.input(GGML_TYPE_F32, {128, 5, 1, 1}, Layout::Contiguous, kActivations);
        return ggml_quantize_i8_convrot(g.ctx(), ggml_scale_bias(g.ctx(), x, 0.75f, 0.125f), 64);
    });
    for (const bool swapped : {false, true}) {
        list.add_fusion(
            GGML_OP_CUSTOM, std::string("swiglu_convrot G=16 K=64 M=3") + (swapped ? " swapped" : ""),
            [=](Graph & g) {
                ggml_tensor * x = g.input(GGML_TYPE_F32, {128, 3, 1, 1}, Layout::Contiguous, kActivations);
                ggml_tensor * y = swapped ? ggml_swiglu_swapped(g.ctx(), x) : ggml_swiglu(g.ctx(), x);
                return ggml_quantize_i8_convrot(g.ctx(), y, 16);
            });
    }
    list.add_fusion(GGML_OP_CUSTOM, "swiglu_convrot split G=256 K=256 M=2", [](Graph & g) {
        ggml_tensor * gate = g.input(GGML_TYPE_F32, {256, 2, 1, 1}, Layout::Contiguous, kActivations);
        ggml_tensor * up = g.input(GGML_TYPE_F32, {256, 2, 1, 1}, Layout::Contiguous, kActivations);
        return ggml_quantize_i8_convrot(g.ctx(), ggml_swiglu_split(g.ctx(), gate, up), 256);
    });
    for (const bool sigmoid : {false, true}) {
        list.add_fusion(
            GGML_OP_CUSTOM,
            std::string(sigmoid ? "sigmoid" : "silu") + "_mul_convrot G=4 K=64 M=3x2 row-broadcast up",
            [=](Graph & g) {
                ggml_tensor * x = g.input(GGML_TYPE_F32, {64, 3, 2, 1}, Layout::Contiguous, kActivations);
                ggml_tensor * up = g.input(GGML_TYPE_F32, {64, 1, 2, 1}, Layout::Contiguous, kActivations);
                ggml_tensor * act = sigmoid ? ggml_sigmoid(g.ctx(), x) : ggml_silu(g.ctx(), x);
                return ggml_quantize_i8_convrot(g.ctx(), ggml_mul(g.ctx(), act, up), 4);
            });
    }
    // sd.mul_add, sd.concat_f16, sd.cont_scale_f16 (.cpu and .vulkan).
    list.add_fusion(GGML_OP_ADD, "mul_add gate [K,1] residual first K=40 M=6", [](Graph & g) {
        ggml_tensor * x = g.input(GGML_TYPE_F32, {40, 6, 1, 1});
        ggml_tensor * gate = g.input(GGML_TYPE_F32, {40, 1, 1, 1});
        ggml_tensor * residual = g.input(GGML_TYPE_F32, {40, 6, 1, 1});
        return ggml_add(g.ctx(), residual, ggml_mul(g.ctx(), x, gate));
    });
    for (const bool permuted : {false, true}) {
        list.add_fusion(GGML_OP_CPY, std::string("concat_f16 dim 1") + (permuted ? " permuted" : ""),
                        [=](Graph & g) {
                            ggml_tensor * a = g.input(GGML_TYPE_F32, {16, 3, 4, 1});
                            ggml_tensor * b = g.input(GGML_TYPE_F32, {16, 5, 4, 1});
                            ggml_tensor * c = ggml_concat(g.ctx(), a, b, 1);
                            if (permuted) c = ggml_permute(g.ctx(), c, 0, 2, 1, 3);
                            return ggml_cast(g.ctx(), c, GGML_TYPE_F16);
                        });
    }
    list.add_fusion(GGML_OP_CPY, "cont_scale_f16 transposed x permuted", [](Graph & g) {
        ggml_tensor * y = g.input(GGML_TYPE_F32, {6, 20, 3, 1});
        ggml_tensor * s = ggml_scale(g.ctx(), ggml_cont(g.ctx(), ggml_transpose(g.ctx(), y)), 0.125f);
        return ggml_cast(g.ctx(), ggml_permute(g.ctx(), s, 1, 0, 2, 3), GGML_TYPE_F16);
    });
}

}  // namespace

void add_sd_cases(CaseList & list) {
    add_rope_apply_cases(list);
    add_quantize_cases(list);
    add_linear_cases(list);
    add_sage_cases(list);
    add_sol_cases(list);
    add_attention_perf_cases(list);
    add_fusion_cases(list);
}

}  // namespace ggx::ops
