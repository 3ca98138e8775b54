// ggx-ops case table: application CPU callbacks: CUSTOM nodes (ggml_custom_4d) with zero, one and two
// sources and MAP_CUSTOM1..3 nodes (ggml_map_custom1..3), strided and permuted sources, one thread and
// every thread.
#include <cstring>

#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

float load(const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    float v;
    std::memcpy(
        &v,
        static_cast<const char *>(t->data) + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3],
        sizeof v);
    return v;
}

// dst = 2 * a + b + c (each source optional), plus the element's flat index / 64; rows split between
// the threads.
void combine(ggml_tensor * dst, const ggml_tensor * a, const ggml_tensor * b, const ggml_tensor * c, int ith,
             int nth) {
    const int64_t rows = dst->ne[1] * dst->ne[2] * dst->ne[3];
    for (int64_t r = ith; r < rows; r += nth) {
        const int64_t i1 = r % dst->ne[1], i2 = r / dst->ne[1] % dst->ne[2],
                      i3 = r / (dst->ne[1] * dst->ne[2]);
        for (int64_t i0 = 0; i0 < dst->ne[0]; ++i0) {
            float v = static_cast<float>(i0 + dst->ne[0] * r) / 64.0f;
            if (a) v += 2.0f * load(a, i0, i1, i2, i3);
            if (b) v += load(b, i0, i1, i2, i3);
            if (c) v += load(c, i0, i1, i2, i3);
            std::memcpy(static_cast<char *>(dst->data) + i0 * dst->nb[0] + i1 * dst->nb[1] + i2 * dst->nb[2] +
                            i3 * dst->nb[3],
                        &v, sizeof v);
        }
    }
}

void axpb(ggml_tensor * dst, int ith, int nth, void *) {
    combine(dst, dst->src[0], dst->src[1], nullptr, ith, nth);
}
void map1(ggml_tensor * dst, const ggml_tensor * a, int ith, int nth, void *) {
    combine(dst, a, nullptr, nullptr, ith, nth);
}
void map2(ggml_tensor * dst, const ggml_tensor * a, const ggml_tensor * b, int ith, int nth, void *) {
    combine(dst, a, b, nullptr, ith, nth);
}
void map3(ggml_tensor * dst, const ggml_tensor * a, const ggml_tensor * b, const ggml_tensor * c, int ith,
          int nth, void *) {
    combine(dst, a, b, c, ith, nth);
}

// MAP_CUSTOM1..3 with a of layout (its result has a's shape), b and c contiguous.
void add_map_custom_cases(CaseList & list, const Shape & ne, int n_tasks, const std::string & tail) {
    for (Layout layout : {Layout::Contiguous, Layout::Strided, Layout::Permuted}) {
        const std::string detail = std::string("map ") + layout_name(layout) + tail;
        list.add(GGML_OP_MAP_CUSTOM1, detail, [=](Graph & g) {
            return ggml_map_custom1(g.ctx(), g.input(GGML_TYPE_F32, ne, layout), map1, n_tasks, nullptr);
        });
        list.add(GGML_OP_MAP_CUSTOM2, detail, [=](Graph & g) {
            return ggml_map_custom2(g.ctx(), g.input(GGML_TYPE_F32, ne, layout), g.input(GGML_TYPE_F32, ne),
                                    map2, n_tasks, nullptr);
        });
        list.add(GGML_OP_MAP_CUSTOM3, detail, [=](Graph & g) {
            return ggml_map_custom3(g.ctx(), g.input(GGML_TYPE_F32, ne, layout), g.input(GGML_TYPE_F32, ne),
                                    g.input(GGML_TYPE_F32, ne), map3, n_tasks, nullptr);
        });
    }
}

}  // namespace

void add_custom_cases(CaseList & list) {
    const Shape shapes[] = {{1, 1, 1, 1}, {7, 3, 1, 1}, {16, 5, 3, 1}, {33, 2, 3, 2}, {5, 0, 2, 1}};
    for (const Shape & ne : shapes) {
        for (int n_tasks : {1, GGML_N_TASKS_MAX}) {
            const std::string tail = " f32 " + str(ne) + (n_tasks == 1 ? " 1 thread" : " all threads");
            add_map_custom_cases(list, ne, n_tasks, tail);
            for (int n_args : {0, 1, 2}) {
                for (Layout layout : {Layout::Contiguous, Layout::Strided, Layout::Permuted}) {
                    if (n_args == 0 && layout != Layout::Contiguous) continue;
                    const std::string detail =
                        "callback " + std::to_string(n_args) + " args " + layout_name(layout) + tail;
                    list.add(GGML_OP_CUSTOM, detail, [=](Graph & g) {
                        ggml_tensor * args[2] = {g.input(GGML_TYPE_F32, ne, layout),
                                                 g.input(GGML_TYPE_F32, ne)};
                        return ggml_custom_4d(g.ctx(), GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3], args,
                                              n_args, axpb, n_tasks, nullptr);
                    });
                }
            }
        }
    }
}

}  // namespace ggx::ops
