// Writing an extension (docs/extensions.md): a new operator, example.softsign.v1, y = scale * x / (1 + |x|),
// with a CPU kernel that runs on the backend's thread pool through the ggml_ext_cpu_parallel_v1 service;
// an override of the built-in GGML_OP_SCALE that asks to be preferred over native; both checked with
// ggml_ext_check_kernel, then run through a scheduler on the CPU backend.
#include <ggml-cpu.h>
#include <ggml-ext.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace {

// ---- the operator --------------------------------------------------------------------------------

struct SoftsignAttrs {
    float scale;
};

// Output metadata: an F32 tensor of the input's shape (the runtime makes it contiguous, out of place).
bool softsign_infer(const ggml_tensor * const * inputs, int, const void *, size_t, ggml_type * type,
                    int64_t ne[GGML_MAX_DIMS], char * why, size_t why_size, void *) {
    if (inputs[0]->type != GGML_TYPE_F32) {
        std::snprintf(why, why_size, "x must be f32, got %s", ggml_type_name(inputs[0]->type));
        return false;
    }
    *type = GGML_TYPE_F32;
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        ne[i] = inputs[0]->ne[i];
    return true;
}

// ---- its CPU kernel ------------------------------------------------------------------------------

const ggml_ext_cpu_parallel_v1 * g_parallel = nullptr;  // the service, looked up once

bool softsign_supports(ggml_backend_dev_t, const ggml_tensor * node, void *) {
    // Any layout of x: the kernel walks x through its strides (ggml_ext_check_kernel holds it to that).
    return node->type == GGML_TYPE_F32 && node->src[0]->type == GGML_TYPE_F32;
}

struct SoftsignWork {
    const ggml_tensor * x;
    ggml_tensor * y;
    float scale;
};

// One thread's share of the rows.
void softsign_task(const ggml_ext_cpu_task * task) {
    const auto * w = static_cast<const SoftsignWork *>(task->user_data);
    const ggml_tensor * x = w->x;
    const int64_t rows = x->ne[1] * x->ne[2] * x->ne[3];
    const int64_t per_task = (rows + task->nth - 1) / task->nth;
    const int64_t end = std::min(rows, (task->ith + 1) * per_task);
    for (int64_t r = task->ith * per_task; r < end; ++r) {
        if (g_parallel->should_stop(task)) return;  // abort callback, or another task failed
        const int64_t i1 = r % x->ne[1], i2 = r / x->ne[1] % x->ne[2], i3 = r / (x->ne[1] * x->ne[2]);
        const char * in = static_cast<const char *>(x->data) + i1 * x->nb[1] + i2 * x->nb[2] + i3 * x->nb[3];
        auto * out = static_cast<float *>(w->y->data) + r * w->y->ne[0];  // y is contiguous
        for (int64_t i0 = 0; i0 < x->ne[0]; ++i0) {
            const float v = *reinterpret_cast<const float *>(in + i0 * x->nb[0]);
            out[i0] = w->scale * v / (1.0f + std::fabs(v));
        }
    }
}

ggml_status softsign_execute(const ggml_ext_execute_params * params) {
    SoftsignAttrs attrs;
    std::memcpy(&attrs, ggml_ext_node_attrs(params->node, nullptr), sizeof attrs);  // attributes: memcpy
    SoftsignWork work{params->node->src[0], params->node, attrs.scale};
    return g_parallel->run(params->backend, softsign_task, &work, 0);  // every thread of the pool
}

// The reference for ggml_ext_check_kernel (the CPU has no native softsign), in double precision.
bool softsign_reference(const ggml_tensor * node, const double * const * inputs, double * output, void *) {
    SoftsignAttrs attrs;
    std::memcpy(&attrs, ggml_ext_node_attrs(node, nullptr), sizeof attrs);
    for (int64_t i = 0; i < ggml_nelements(node); ++i)
        output[i] = attrs.scale * inputs[0][i] / (1.0 + std::fabs(inputs[0][i]));
    return true;
}

// ---- an override of GGML_OP_SCALE ----------------------------------------------------------------

bool scale_supports(ggml_backend_dev_t, const ggml_tensor * node, void *) {
    return node->type == GGML_TYPE_F32 && node->src[0]->type == GGML_TYPE_F32 &&
           ggml_is_contiguous(node->src[0]);
}

// Take SCALE nodes from native whenever supported (a real override would decide by shape or type).
bool scale_preferred(ggml_backend_dev_t, const ggml_tensor *, void *) { return true; }

ggml_status scale_execute(const ggml_ext_execute_params * params) {
    const ggml_tensor * y = params->node;
    float s, b;  // op_params of SCALE: the factor and the bias
    std::memcpy(&s, &y->op_params[0], sizeof s);
    std::memcpy(&b, &y->op_params[1], sizeof b);
    const auto * in = static_cast<const float *>(y->src[0]->data);
    auto * out = static_cast<float *>(y->data);  // may alias in: the allocator can reuse x's storage
    for (int64_t i = 0; i < ggml_nelements(y); ++i)
        out[i] = in[i] * s + b;
    return GGML_STATUS_SUCCESS;
}

ggml_tensor * build_scale(ggml_context * ctx, ggml_tensor ** inputs, int, void *) {
    return ggml_scale_bias(ctx, inputs[0], 0.5f, 0.25f);
}

// ---- checking the kernels ------------------------------------------------------------------------

bool check(ggml_backend_dev_t device, const ggml_ext_kernel_desc & kernel, const ggml_ext_check_case * cases,
           int n_cases) {
    ggml_ext_check_params params{};
    params.struct_size = sizeof params;
    params.version = GGML_EXT_CHECK_PARAMS_VERSION;
    params.device = device;
    params.kernel = &kernel;
    params.cases = cases;
    params.n_cases = n_cases;
    params.max_nmse = 1e-10;
    params.reference = softsign_reference;  // used only where native does not support the node
    params.seed = 1;
    ggml_ext_check_report report{};
    report.struct_size = sizeof report;
    report.version = GGML_EXT_CHECK_REPORT_VERSION;
    const bool ok = ggml_ext_check_kernel(&params, &report);
    std::printf("check %s: %d/%d cases passed, %d layouts run, %d skipped%s%s\n", kernel.name,
                report.n_passed, report.n_cases, report.n_runs, report.n_skipped, ok ? "" : ": ",
                report.first_failure);
    return ok;
}

ggml_ext_check_case make_case(const char * name, int64_t ne0, int64_t ne1, int64_t ne2, const void * attrs,
                              size_t attr_size) {
    ggml_ext_check_case c{};
    c.struct_size = sizeof c;
    c.version = GGML_EXT_CHECK_CASE_VERSION;
    c.name = name;
    c.n_inputs = 1;
    c.types[0] = GGML_TYPE_F32;
    c.ne[0][0] = ne0, c.ne[0][1] = ne1, c.ne[0][2] = ne2, c.ne[0][3] = 1;
    c.range[0][0] = -4.0, c.range[0][1] = 4.0;
    c.attrs = attrs;
    c.attr_size = attr_size;
    c.non_contiguous = true;
    return c;
}

}  // namespace

int main() {
    ggml_backend_reg_t cpu_reg = ggml_backend_cpu_reg();
    ggml_backend_dev_t cpu_dev = ggml_backend_reg_dev_get(cpu_reg, 0);

    // Services are discovered by name; check the table's size and version before using it.
    g_parallel = static_cast<const ggml_ext_cpu_parallel_v1 *>(
        ggml_backend_reg_get_proc_address(cpu_reg, GGML_EXT_CPU_PARALLEL_V1));
    if (!g_parallel || g_parallel->struct_size < sizeof(ggml_ext_cpu_parallel_v1) ||
        g_parallel->version < GGML_EXT_CPU_PARALLEL_V1_VERSION) {
        std::printf("no ggml_ext_cpu_parallel_v1 service\n");
        return 1;
    }

    // 1. Register the operator, then the kernels, before any capability query or allocation.
    ggml_ext_op_desc op_desc{};
    op_desc.struct_size = sizeof op_desc;
    op_desc.version = GGML_EXT_OP_DESC_VERSION;
    op_desc.name = "example.softsign.v1";
    op_desc.attr_size = sizeof(SoftsignAttrs);
    op_desc.min_inputs = op_desc.max_inputs = 1;
    op_desc.infer = softsign_infer;
    ggml_ext_op_t softsign = ggml_ext_register_op(&op_desc);

    ggml_ext_kernel_desc softsign_kernel{};
    softsign_kernel.struct_size = sizeof softsign_kernel;
    softsign_kernel.version = GGML_EXT_KERNEL_DESC_VERSION;
    softsign_kernel.name = "example.softsign.cpu";
    softsign_kernel.op = GGML_OP_CUSTOM;
    softsign_kernel.custom_op = softsign;
    softsign_kernel.supports = softsign_supports;
    softsign_kernel.execute = softsign_execute;

    ggml_ext_kernel_desc scale_kernel{};
    scale_kernel.struct_size = sizeof scale_kernel;
    scale_kernel.version = GGML_EXT_KERNEL_DESC_VERSION;
    scale_kernel.name = "example.scale.cpu";
    scale_kernel.op = GGML_OP_SCALE;
    scale_kernel.priority = 10;
    scale_kernel.supports = scale_supports;
    scale_kernel.preferred = scale_preferred;
    scale_kernel.execute = scale_execute;

    if (!softsign || !ggml_ext_register_kernel(cpu_dev, &softsign_kernel) ||
        !ggml_ext_register_kernel(cpu_dev, &scale_kernel)) {
        std::printf("registration failed: %s\n", ggml_backend_get_last_error());
        return 1;
    }

    // 2. Check both kernels: softsign against its reference, the SCALE override against native.
    const SoftsignAttrs check_attrs{1.5f};
    const ggml_ext_check_case softsign_cases[] = {
        make_case("softsign [37, 5, 3]", 37, 5, 3, &check_attrs, sizeof check_attrs),
        make_case("softsign [1024, 16, 1]", 1024, 16, 1, &check_attrs, sizeof check_attrs)};
    ggml_ext_check_case scale_case = make_case("scale_bias [33, 4, 2]", 33, 4, 2, nullptr, 0);
    scale_case.build = build_scale;
    if (!check(cpu_dev, softsign_kernel, softsign_cases, 2) || !check(cpu_dev, scale_kernel, &scale_case, 1))
        return 1;

    // 3. A graph y = 0.5 * softsign(x; scale 2), computed through a scheduler on the CPU backend.
    ggml_context * ctx = ggml_init({.mem_size = 1 << 20, .mem_buffer = nullptr, .no_alloc = true});
    ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    ggml_set_input(x);
    const SoftsignAttrs attrs{2.0f};
    ggml_tensor * s = ggml_ext_op_create(ctx, softsign, &x, 1, &attrs, sizeof attrs);
    ggml_tensor * y = ggml_scale(ctx, s, 0.5f);
    ggml_set_output(y);
    ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, y);

    ggml_backend_t cpu = ggml_backend_dev_init(cpu_dev, nullptr);
    ggml_backend_sched_t sched =
        ggml_backend_sched_new(&cpu, nullptr, 1, GGML_DEFAULT_GRAPH_SIZE, false, false);
    std::printf("selected: %s, %s\n", ggml_ext_dev_selected_kernel(cpu_dev, s),
                ggml_ext_dev_selected_kernel(cpu_dev, y));
    if (!ggml_backend_sched_alloc_graph(sched, graph)) return 1;
    const float x_data[8] = {-3.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 3.0f, 10.0f};
    ggml_backend_tensor_set(x, x_data, 0, sizeof x_data);
    if (ggml_backend_sched_graph_compute(sched, graph) != GGML_STATUS_SUCCESS) {
        std::printf("compute failed: %s\n", ggml_backend_get_last_error());
        return 1;
    }
    float result[8];
    ggml_backend_tensor_get(y, result, 0, sizeof result);
    std::printf("result:");
    for (float v : result)
        std::printf(" %.6f", v);
    std::printf("\n");

    ggml_backend_sched_free(sched);  // graphs and backends go before the registrations' code
    ggml_backend_free(cpu);
    ggml_free(ctx);
    return 0;
}
