// Operator and kernel registrations, node construction, selection and capability queries.
#include "ext/registry.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/internal.h"
#include "interface/backend-impl.h"

namespace ggx::ext {
namespace {

constexpr size_t kMaxOps = 4096;
constexpr int kMarkerSlot = 0, kIdSlot = 1, kSizeSlot = 2, kAttrSlot = 3;

using KernelList =
    std::vector<const KernelRegistration *>;         // by priority, highest first; ties: registration order
using FusionList = std::vector<const FusionRule *>;  // the same order

struct Registry {
    std::mutex mutex;
    std::deque<ggml_ext_op> ops;  // stable addresses
    std::unordered_map<std::string, ggml_ext_op *> ops_by_name;
    std::array<std::atomic<ggml_ext_op *>, kMaxOps + 1> ops_by_id{};  // lock-free lookup from nodes
    std::deque<KernelRegistration> kernels;
    std::map<ggml_backend_dev_t, std::shared_ptr<const KernelList>> device_kernels;
    std::set<ggml_backend_dev_t> disabled;  // selection policy: native only
    std::deque<FusionRule> fusion_rules;
    std::map<ggml_backend_dev_t, std::shared_ptr<const FusionList>> device_fusions;
    // Registration order per device, for the enumeration API (the lists above are by priority).
    std::map<ggml_backend_dev_t, std::vector<const KernelRegistration *>> kernels_registered;
    std::map<ggml_backend_dev_t, std::vector<const FusionRule *>> fusions_registered;
    std::atomic<int> n_kernels{0};
    std::atomic<uint64_t> generation{1};
};

Registry & registry() {
    static Registry r;
    return r;
}

bool fail(const std::string & message) {
    backend::set_last_error(message);
    return false;
}

// fail, for functions returning a handle.
std::nullptr_t refuse(const std::string & message) {
    backend::set_last_error(message);
    return nullptr;
}

// A constructor's failure, recorded in its context.
std::nullptr_t refuse_node(ggml_context * ctx, const std::string & message) {
    core::report_error(ctx, message);
    return nullptr;
}

// "<namespace>.<name>.v<N>": lowercase letters, digits and '_' in dot-separated parts, the last "v<N>".
bool is_versioned_name(const std::string & name) {
    if (name.empty() || name.size() >= GGML_EXT_MAX_NAME) return false;
    const size_t last_dot = name.rfind('.');
    if (last_dot == std::string::npos || name.find('.') == last_dot) return false;
    const std::string version = name.substr(last_dot + 1);
    if (version.size() < 2 || version[0] != 'v' ||
        !std::all_of(version.begin() + 1, version.end(), [](char c) { return std::isdigit(c); })) {
        return false;
    }
    bool part_empty = true;
    for (char c : name.substr(0, last_dot + 1)) {
        if (c == '.') {
            if (part_empty) return false;
            part_empty = true;
        } else if (std::islower(static_cast<unsigned char>(c)) ||
                   std::isdigit(static_cast<unsigned char>(c)) || c == '_') {
            part_empty = false;
        } else {
            return false;
        }
    }
    return true;
}

std::shared_ptr<const KernelList> kernels_of(ggml_backend_dev_t device) {
    Registry & r = registry();
    if (r.n_kernels.load(std::memory_order_acquire) == 0) return nullptr;
    std::lock_guard lock(r.mutex);
    const auto it = r.device_kernels.find(device);
    return it == r.device_kernels.end() || r.disabled.count(device) ? nullptr : it->second;
}

std::shared_ptr<const FusionList> fusions_of(ggml_backend_dev_t device) {
    Registry & r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.device_fusions.find(device);
    return it == r.device_fusions.end() || r.disabled.count(device) ? nullptr : it->second;
}

// Inserts item into a priority-ordered list shared with readers (copy on write).
template <class T>
void insert_by_priority(std::shared_ptr<const std::vector<const T *>> & list, const T * item) {
    auto updated = std::make_shared<std::vector<const T *>>(list ? *list : std::vector<const T *>{});
    const auto after = std::upper_bound(updated->begin(), updated->end(), item->desc.priority,
                                        [](int p, const T * other) { return p > other->desc.priority; });
    updated->insert(after, item);
    list = std::move(updated);
}

// What a kernel must be registered for to serve node: the built-in op, or the custom operator.
bool serves(const KernelRegistration & k, const ggml_tensor * node, const ggml_ext_op * custom) {
    return custom ? k.desc.op == GGML_OP_CUSTOM && k.desc.custom_op == custom : k.desc.op == node->op;
}

// Capability queries in progress on this thread, to catch a callback asking about its own op.
struct ActiveQuery {
    ggml_backend_dev_t device;
    int op;  // ggml_op, or GGML_OP_COUNT + custom op id
};
thread_local std::vector<ActiveQuery> active_queries;

int query_key(const ggml_tensor * node, const ggml_ext_op * custom) {
    return custom ? GGML_OP_COUNT + custom->id : node->op;
}

// Runs callback(k) with recursion detection; a recursive query answers false and is reported.
template <class F>
bool guarded_call(ggml_backend_dev_t device, const KernelRegistration & k, const ggml_tensor * node,
                  const ggml_ext_op * custom, const char * what, F && callback) {
    const int key = query_key(node, custom);
    for (const ActiveQuery & q : active_queries) {
        if (q.device == device && q.op == key) {
            return fail("ggml_backend_dev_supports_op: a kernel callback asked the capability query about " +
                        describe(node) + " on device '" + device->name() +
                        "' while that same query was running (" + what + " of kernel '" + k.name +
                        "'); callbacks must inspect metadata only. Answered false.");
        }
    }
    active_queries.push_back({device, key});
    const bool result = callback();
    active_queries.pop_back();
    return result;
}

// The registrations' callbacks behind the one Kernel descriptor.
const KernelRegistration & registration(const ggx::Kernel & k) {
    return *static_cast<const KernelRegistration *>(k.impl);
}
const FusionRule & rule_of(const ggx::Kernel & k) { return *static_cast<const FusionRule *>(k.impl); }

bool extension_supports(const ggx::Kernel & k, ggml_backend_dev_t device, const ggml_tensor * node) {
    const ggml_ext_kernel_desc & d = registration(k).desc;
    return d.supports(device, node, d.user_data);
}

ggml_status extension_prepare(const ggx::Kernel & k, const ggx::KernelPrepare & step, void ** state,
                              size_t * workspace_bytes) {
    const ggml_ext_kernel_desc & d = registration(k).desc;
    const ggml_ext_prepare_params params{sizeof params, step.backend->device(), step.nodes[0], d.user_data};
    return d.prepare(&params, state, workspace_bytes);
}

ggml_status extension_execute(const ggx::Kernel & k, const ggx::KernelCall & call) {
    const ggml_ext_kernel_desc & d = registration(k).desc;
    const ggml_ext_execute_params params{sizeof params,       call.backend,   call.nodes[0],
                                         call.state,          call.workspace, call.workspace_data,
                                         call.workspace_size, d.user_data};
    return d.execute(&params);
}

void extension_destroy(const ggx::Kernel & k, void * state) {
    const ggml_ext_kernel_desc & d = registration(k).desc;
    d.destroy(state, d.user_data);
}

ggml_status fusion_prepare(const ggx::Kernel & k, const ggx::KernelPrepare & step, void ** state,
                           size_t * workspace_bytes) {
    const ggml_ext_fusion_desc & d = rule_of(k).desc;
    const ggml_ext_fusion_prepare_params params{sizeof params, step.backend->device(), step.nodes,
                                                step.n_nodes, d.user_data};
    return d.prepare(&params, state, workspace_bytes);
}

ggml_status fusion_execute(const ggx::Kernel & k, const ggx::KernelCall & call) {
    const ggml_ext_fusion_desc & d = rule_of(k).desc;
    const ggml_ext_fusion_execute_params params{sizeof params,       call.backend,        call.nodes,
                                                call.n_nodes,        call.state,          call.workspace,
                                                call.workspace_data, call.workspace_size, d.user_data};
    return d.execute(&params);
}

void fusion_destroy(const ggx::Kernel & k, void * state) {
    const ggml_ext_fusion_desc & d = rule_of(k).desc;
    d.destroy(state, d.user_data);
}

// The Kernel's replay opt-in from a registration's capture-safe and replay-reusable flags.
uint32_t replay_of(uint32_t flags, uint32_t capture_safe, uint32_t reusable) {
    return ((flags & capture_safe) ? ggx::Kernel::kCaptureSafe : 0u) |
           ((flags & reusable) ? ggx::Kernel::kReplayReusable : 0u);
}

// Why a registration's flags are refused ("" when accepted): bits outside the replay flags and
// other_flags, or replay reuse without capture safety.
std::string replay_flags_error(uint32_t flags, uint32_t capture_safe, uint32_t reusable, uint32_t other_flags) {
    if (flags & ~(capture_safe | reusable | other_flags)) return "unknown flags " + std::to_string(flags);
    if ((flags & reusable) && !(flags & capture_safe))
        return "REPLAY_REUSABLE requires CAPTURE_SAFE (reuse across rebuilds is a kind of replay)";
    return "";
}

}  // namespace

KernelRegistration::KernelRegistration(const ggml_ext_kernel_desc & d, uint32_t kernel_flags)
    : desc(d), name(d.name), flags(kernel_flags) {
    desc.struct_size = sizeof(ggml_ext_kernel_desc);
    desc.name = name.c_str();
    kernel = {name.c_str(),
              ggx::Kernel::Kind::kExtension,
              extension_supports,
              desc.prepare ? extension_prepare : nullptr,
              extension_execute,
              desc.destroy ? extension_destroy : nullptr,
              this,
              replay_of(flags, GGML_EXT_KERNEL_CAPTURE_SAFE, GGML_EXT_KERNEL_REPLAY_REUSABLE)};
}

FusionRule::FusionRule(const ggml_ext_fusion_desc & d) : desc(d), name(d.name) {
    desc.struct_size = sizeof(ggml_ext_fusion_desc);
    desc.name = name.c_str();
    kernel = {name.c_str(),
              ggx::Kernel::Kind::kFusion,
              nullptr,
              desc.prepare ? fusion_prepare : nullptr,
              fusion_execute,
              desc.destroy ? fusion_destroy : nullptr,
              this,
              replay_of(desc.flags, GGML_EXT_FUSION_CAPTURE_SAFE, GGML_EXT_FUSION_REPLAY_REUSABLE)};
}

uint64_t generation() { return registry().generation.load(std::memory_order_acquire); }

bool has_kernels(ggml_backend_dev_t device) { return kernels_of(device) != nullptr; }

std::string describe(const ggml_tensor * node) {
    std::string text = "'";
    text.append(node->name).append("' (").append(ggml_op_desc(node));
    if (const ggml_ext_op * op = ggml_ext_node_op(node)) text.append(" ").append(op->name);
    text.append(" ").append(ggml_type_name(node->type)).append(" [");
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        text.append(std::to_string(node->ne[i])).append(i + 1 < GGML_MAX_DIMS ? ", " : "])");
    return text;
}

namespace {
thread_local std::string * explain_sink = nullptr;

void explain(const std::string & line) {
    if (explain_sink) explain_sink->append(line).push_back('\n');
}

std::string kernel_label(const KernelRegistration & k) {
    return "kernel '" + k.name + "' (priority " + std::to_string(k.desc.priority) + ")";
}
}  // namespace

ExplainScope::ExplainScope(std::string * text) : previous_(explain_sink) { explain_sink = text; }
ExplainScope::~ExplainScope() { explain_sink = previous_; }

Selection select(ggml_backend_dev_t device, const ggml_tensor * node) {
    const ggx::Kernel * native = device->native_kernel(node);
    const Selection native_or_none{native ? Selection::Kind::kNative : Selection::Kind::kNone, native};
    const auto decided = [&](const Selection & s, const std::string & why) {
        if (explain_sink) {
            const std::string what =
                s.kind == Selection::Kind::kExtension
                    ? kernel_label(*static_cast<const KernelRegistration *>(s.kernel->impl))
                : s.kind == Selection::Kind::kNative ? std::string("native")
                                                     : std::string("nothing");
            explain("  " + describe(node) + ": " + what + " (" + why + ")");
        }
        return s;
    };
    const char * fallback = native ? "native supports it" : "the device does not support it";
    const std::shared_ptr<const KernelList> kernels = kernels_of(device);
    if (!kernels) return decided(native_or_none, std::string("no extension kernels; ") + fallback);
    if (node->view_src && node->op != GGML_OP_CUSTOM)
        return decided(native_or_none, "explicit views and in-place nodes are not intercepted");
    const ggml_ext_op * custom = ggml_ext_node_op(node);
    if (node->op == GGML_OP_CUSTOM && !custom) return decided(native_or_none, "a CPU callback node");
    std::string considered;
    for (const KernelRegistration * k : *kernels) {
        if (!serves(*k, node, custom)) continue;
        const auto & d = k->desc;
        if (!guarded_call(device, *k, node, custom, "supports",
                          [&] { return d.supports(device, node, d.user_data); })) {
            considered += kernel_label(*k) + ": supports said no; ";
            continue;
        }
        const Selection extension{Selection::Kind::kExtension, &k->kernel};
        if (!native) return decided(extension, considered + "native does not support it");
        if (d.preferred && guarded_call(device, *k, node, custom, "preferred",
                                        [&] { return d.preferred(device, node, d.user_data); }))
            return decided(extension, considered + "preferred over native");
        considered += kernel_label(*k) + (d.preferred ? ": not preferred over native; "
                                                      : ": no preferred callback, native stays; ");
    }
    return decided(native_or_none, considered + fallback);
}

void optimize(ggml_backend_dev_t device, ggml_cgraph * graph) {
    if (const auto rules = fusions_of(device))
        for (const FusionRule * rule : *rules)
            if (rule->desc.optimize) rule->desc.optimize(device, graph, rule->desc.user_data);
}

std::vector<FusedGroup> match_fusions(ggml_backend_dev_t device, const ggml_cgraph * graph, int begin,
                                      int end) {
    std::vector<FusedGroup> groups;
    const auto rules = fusions_of(device);
    if (!rules) return groups;
    for (int i = begin; i < end;) {
        int taken = 1;
        for (const FusionRule * rule : *rules) {
            const int n = rule->desc.match(device, graph, i, rule->desc.user_data);
            if (n < 2) continue;
            const std::string candidate = "  fusion '" + rule->name + "' matched nodes [" +
                                          std::to_string(i) + ", " + std::to_string(i + n) + ")";
            if (i + n > end) {
                explain(candidate + ": rejected, the range crosses the split's end (node " +
                        std::to_string(end) + ")");
                continue;
            }
            if (!fusion_is_legal(graph, i, n)) {
                explain(candidate + ": rejected, " + ggml_backend_get_last_error());
                continue;
            }
            explain(candidate + ": accepted");
            groups.push_back({i, n, rule});
            taken = n;
            break;
        }
        i += taken;
    }
    return groups;
}

bool supports(ggml_backend_dev_t device, const ggml_tensor * node) {
    if (device->supports_op(node)) return true;
    return select(device, node).kind == Selection::Kind::kExtension;
}

}  // namespace ggx::ext

using ggx::ext::KernelRegistration;
using ggx::ext::registry;

extern "C" {

ggml_ext_op_t ggml_ext_register_op(const ggml_ext_op_desc * desc) {
    using ggx::ext::refuse;
    const std::string where = "ggml_ext_register_op";
    if (!desc) return refuse(where + ": the descriptor is NULL");
    if (desc->struct_size < sizeof(ggml_ext_op_desc) || desc->version < GGML_EXT_OP_DESC_VERSION) {
        return refuse(where + ": descriptor struct_size " + std::to_string(desc->struct_size) +
                      " / version " + std::to_string(desc->version) + " is older than this runtime's (" +
                      std::to_string(sizeof(ggml_ext_op_desc)) + " / " +
                      std::to_string(GGML_EXT_OP_DESC_VERSION) + ")");
    }
    const std::string name = desc->name ? desc->name : "";
    if (!ggx::ext::is_versioned_name(name)) {
        return refuse(
            where + ": '" + name +
            "' is not a versioned operator name ('<namespace>.<name>.v<N>': lowercase letters, digits "
            "and '_', shorter than " +
            std::to_string(GGML_EXT_MAX_NAME) + " characters)");
    }
    if (desc->attr_size > GGML_EXT_MAX_ATTR_SIZE) {
        return refuse(where + " '" + name + "': attributes of " + std::to_string(desc->attr_size) +
                      " bytes do not fit op_params (at most " + std::to_string(GGML_EXT_MAX_ATTR_SIZE) + ")");
    }
    if (desc->min_inputs < 0 || desc->min_inputs > desc->max_inputs || desc->max_inputs > GGML_MAX_SRC) {
        return refuse(where + " '" + name + "': inputs [" + std::to_string(desc->min_inputs) + ", " +
                      std::to_string(desc->max_inputs) +
                      "] must satisfy 0 <= min <= max <= " + std::to_string(GGML_MAX_SRC));
    }
    if (!desc->infer) return refuse(where + " '" + name + "': no output metadata inference callback");

    auto & r = registry();
    std::lock_guard lock(r.mutex);
    if (r.ops_by_name.count(name)) {
        return refuse(where + ": an operator named '" + name +
                      "' is already registered; the live one is kept");
    }
    if (r.ops.size() >= ggx::ext::kMaxOps) {
        return refuse(where + " '" + name + "': too many operators (" + std::to_string(ggx::ext::kMaxOps) +
                      ")");
    }
    ggml_ext_op & op = r.ops.emplace_back();
    op.desc = *desc;
    op.desc.struct_size = sizeof(ggml_ext_op_desc);
    op.name = name;
    op.desc.name = op.name.c_str();
    op.id = static_cast<int32_t>(r.ops.size());
    r.ops_by_name[name] = &op;
    r.ops_by_id[op.id].store(&op, std::memory_order_release);
    r.generation.fetch_add(1, std::memory_order_acq_rel);
    return &op;
}

ggml_ext_op_t ggml_ext_find_op(const char * name) {
    if (!name) return nullptr;
    auto & r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.ops_by_name.find(name);
    return it == r.ops_by_name.end() ? nullptr : it->second;
}

const char * ggml_ext_op_name(ggml_ext_op_t op) { return op ? op->name.c_str() : nullptr; }

ggml_tensor * ggml_ext_op_create(ggml_context * ctx, ggml_ext_op_t op, ggml_tensor ** inputs, int n_inputs,
                                 const void * attrs, size_t attr_size) {
    using ggx::ext::refuse_node;
    if (!op) return refuse_node(ctx, "ggml_ext_op_create: the operator is NULL");
    const std::string where = "ggml_ext_op_create '" + op->name + "'";
    if (n_inputs < op->desc.min_inputs || n_inputs > op->desc.max_inputs || (n_inputs > 0 && !inputs)) {
        return refuse_node(
            ctx, where + ": " + std::to_string(n_inputs) + " inputs given, the operator takes " +
                     std::to_string(op->desc.min_inputs) + " to " + std::to_string(op->desc.max_inputs));
    }
    for (int i = 0; i < n_inputs; ++i)
        if (!inputs[i]) return nullptr;  // an earlier failure, already reported
    if (attr_size != op->desc.attr_size || (attr_size > 0 && !attrs)) {
        return refuse_node(ctx, where + ": attributes of " + std::to_string(attr_size) +
                                    " bytes given, the operator's are " + std::to_string(op->desc.attr_size));
    }
    ggml_type type = GGML_TYPE_COUNT;
    int64_t ne[GGML_MAX_DIMS] = {1, 1, 1, 1};
    char why[256] = "";
    if (!op->desc.infer(inputs, n_inputs, attrs, attr_size, &type, ne, why, sizeof why, op->desc.user_data)) {
        why[sizeof why - 1] = '\0';
        return refuse_node(ctx, where + ": inputs rejected: " + (why[0] ? why : "no reason given"));
    }
    if (type < 0 || type >= GGML_TYPE_COUNT || ggml_type_size(type) == 0 ||
        std::any_of(ne, ne + GGML_MAX_DIMS, [](int64_t n) { return n < 0; })) {
        return refuse_node(ctx, where + ": the inference callback gave an invalid type or shape");
    }
    ggml_tensor * node = ggml_new_tensor(ctx, type, GGML_MAX_DIMS, ne);
    if (!node) return nullptr;
    node->op = GGML_OP_CUSTOM;
    for (int i = 0; i < n_inputs; ++i)
        node->src[i] = inputs[i];
    ggx::core::set_param<uint32_t>(node, ggx::ext::kMarkerSlot, GGML_CUSTOM_MARKER_EXTENSION);
    ggx::core::set_param<int32_t>(node, ggx::ext::kIdSlot, op->id);
    ggx::core::set_param<int32_t>(node, ggx::ext::kSizeSlot, static_cast<int32_t>(attr_size));
    if (attr_size) std::memcpy(&node->op_params[ggx::ext::kAttrSlot], attrs, attr_size);
    return node;
}

ggml_ext_op_t ggml_ext_node_op(const ggml_tensor * node) {
    if (!node || ggml_get_custom_kind(node) != GGML_CUSTOM_KIND_EXTENSION) return nullptr;
    const int32_t id = ggx::core::get_param<int32_t>(node, ggx::ext::kIdSlot);
    if (id < 1 || id > static_cast<int32_t>(ggx::ext::kMaxOps)) return nullptr;
    return registry().ops_by_id[id].load(std::memory_order_acquire);
}

const void * ggml_ext_node_attrs(const ggml_tensor * node, size_t * attr_size) {
    if (!ggml_ext_node_op(node)) return nullptr;
    if (attr_size) *attr_size = static_cast<size_t>(ggx::core::get_param<int32_t>(node, ggx::ext::kSizeSlot));
    return &node->op_params[ggx::ext::kAttrSlot];
}

bool ggml_ext_register_kernel(ggml_backend_dev_t device, const ggml_ext_kernel_desc * desc) {
    return ggml_ext_register_kernel_ex(device, desc, 0);
}

bool ggml_ext_register_kernel_ex(ggml_backend_dev_t device, const ggml_ext_kernel_desc * desc, uint32_t flags) {
    using ggx::ext::fail;
    std::string where = flags ? "ggml_ext_register_kernel_ex" : "ggml_ext_register_kernel";
    if (!device) return fail(where + ": the device is NULL");
    where += std::string(" on '") + device->name() + "'";
    if (!desc) return fail(where + ": the descriptor is NULL");
    if (const std::string why = ggx::ext::replay_flags_error(flags, GGML_EXT_KERNEL_CAPTURE_SAFE,
                                                             GGML_EXT_KERNEL_REPLAY_REUSABLE, 0);
        !why.empty())
        return fail(where + ": " + why);
    if (desc->struct_size < sizeof(ggml_ext_kernel_desc) || desc->version < GGML_EXT_KERNEL_DESC_VERSION) {
        return fail(where + ": descriptor struct_size " + std::to_string(desc->struct_size) + " / version " +
                    std::to_string(desc->version) + " is older than this runtime's (" +
                    std::to_string(sizeof(ggml_ext_kernel_desc)) + " / " +
                    std::to_string(GGML_EXT_KERNEL_DESC_VERSION) + ")");
    }
    const std::string name = desc->name ? desc->name : "";
    if (name.empty() || name.size() >= GGML_EXT_MAX_NAME) {
        return fail(where + ": a kernel needs a name shorter than " + std::to_string(GGML_EXT_MAX_NAME) +
                    " characters");
    }
    where += " '" + name + "'";
    if (desc->op < 0 || desc->op >= GGML_OP_COUNT) return fail(where + ": op is not a ggml_op");
    if (desc->op == GGML_OP_CUSTOM) {
        if (!desc->custom_op || ggml_ext_find_op(desc->custom_op->name.c_str()) != desc->custom_op)
            return fail(where + ": GGML_OP_CUSTOM needs custom_op, a registered operator");
    } else if (desc->custom_op) {
        return fail(where + ": custom_op is set but op is the built-in " + ggml_op_name(desc->op));
    } else if (ggx::core::is_layout_op(desc->op)) {
        return fail(where + ": " + ggml_op_name(desc->op) +
                    " nodes compute nothing and cannot be overridden");
    }
    if (!desc->supports || !desc->execute) return fail(where + ": supports and execute are required");

    auto & r = registry();
    std::lock_guard lock(r.mutex);
    auto & list = r.device_kernels[device];
    if (list && std::any_of(list->begin(), list->end(),
                            [&](const KernelRegistration * k) { return k->name == name; }))
        return fail(where + ": the device already has a kernel of that name; the live one is kept");
    const KernelRegistration * added = &r.kernels.emplace_back(*desc, flags);
    ggx::ext::insert_by_priority(list, added);
    r.kernels_registered[device].push_back(added);
    r.n_kernels.fetch_add(1, std::memory_order_acq_rel);
    r.generation.fetch_add(1, std::memory_order_acq_rel);
    return true;
}

bool ggml_ext_register_fusion(ggml_backend_dev_t device, const ggml_ext_fusion_desc * desc) {
    using ggx::ext::fail;
    std::string where = "ggml_ext_register_fusion";
    if (!device) return fail(where + ": the device is NULL");
    where += std::string(" on '") + device->name() + "'";
    if (!desc) return fail(where + ": the descriptor is NULL");
    // Version 1 ended before flags; it is accepted with flags 0.
    constexpr size_t kFirstSize = offsetof(ggml_ext_fusion_desc, flags);
    if (desc->struct_size < kFirstSize || desc->version < 1) {
        return fail(where + ": descriptor struct_size " + std::to_string(desc->struct_size) + " / version " +
                    std::to_string(desc->version) + " is older than the first version (" +
                    std::to_string(kFirstSize) + " / 1)");
    }
    ggml_ext_fusion_desc accepted{};
    std::memcpy(&accepted, desc, std::min(desc->struct_size, sizeof accepted));
    if (desc->version < 2 || desc->struct_size < sizeof accepted) accepted.flags = 0;
    if (const std::string why = ggx::ext::replay_flags_error(
            accepted.flags, GGML_EXT_FUSION_CAPTURE_SAFE, GGML_EXT_FUSION_REPLAY_REUSABLE,
            GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE | GGML_EXT_FUSION_OUTPUT_IN_PLACE);
        !why.empty())
        return fail(where + ": " + why);
    desc = &accepted;
    const std::string name = desc->name ? desc->name : "";
    if (name.empty() || name.size() >= GGML_EXT_MAX_NAME) {
        return fail(where + ": a fusion rule needs a name shorter than " + std::to_string(GGML_EXT_MAX_NAME) +
                    " characters");
    }
    where += " '" + name + "'";
    if (!desc->match || !desc->execute) return fail(where + ": match and execute are required");
    auto & r = registry();
    std::lock_guard lock(r.mutex);
    auto & list = r.device_fusions[device];
    if (list && std::any_of(list->begin(), list->end(), [&](const auto * f) { return f->name == name; }))
        return fail(where + ": the device already has a fusion rule of that name; the live one is kept");
    const ggx::ext::FusionRule * added = &r.fusion_rules.emplace_back(*desc);
    ggx::ext::insert_by_priority(list, added);
    r.fusions_registered[device].push_back(added);
    r.generation.fetch_add(1, std::memory_order_acq_rel);
    return true;
}

bool ggml_ext_dev_supports_native_op(ggml_backend_dev_t device, const ggml_tensor * op) {
    return device->supports_op(op);
}

void ggml_ext_dev_set_enabled(ggml_backend_dev_t device, bool enabled) {
    auto & r = registry();
    std::lock_guard lock(r.mutex);
    const bool changed = enabled ? r.disabled.erase(device) > 0 : r.disabled.insert(device).second;
    if (changed) r.generation.fetch_add(1, std::memory_order_acq_rel);
}

bool ggml_ext_dev_get_enabled(ggml_backend_dev_t device) {
    auto & r = registry();
    std::lock_guard lock(r.mutex);
    return r.disabled.count(device) == 0;
}

const char * ggml_ext_dev_selected_kernel(ggml_backend_dev_t device, const ggml_tensor * node) {
    const ggx::ext::Selection s = ggx::ext::select(device, node);
    switch (s.kind) {
        case ggx::ext::Selection::Kind::kExtension:
            return s.kernel->name;
        case ggx::ext::Selection::Kind::kNative:
            return "native";
        default:
            return nullptr;
    }
}

int ggml_ext_get_n_ops(void) {
    auto & r = registry();
    std::lock_guard lock(r.mutex);
    return static_cast<int>(r.ops.size());
}

ggml_ext_op_t ggml_ext_get_op(int i) {
    auto & r = registry();
    std::lock_guard lock(r.mutex);
    return i >= 0 && static_cast<size_t>(i) < r.ops.size() ? &r.ops[static_cast<size_t>(i)] : nullptr;
}

int ggml_ext_dev_get_n_kernels(ggml_backend_dev_t device) {
    auto & r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.kernels_registered.find(device);
    return it == r.kernels_registered.end() ? 0 : static_cast<int>(it->second.size());
}

bool ggml_ext_dev_get_kernel(ggml_backend_dev_t device, int i, ggml_ext_kernel_info * info) {
    // The first version of the struct ends with priority.
    constexpr size_t kFirstSize = offsetof(ggml_ext_kernel_info, priority) + sizeof(int);
    if (!info || info->struct_size < kFirstSize || i < 0) return false;
    auto & r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.kernels_registered.find(device);
    if (it == r.kernels_registered.end() || static_cast<size_t>(i) >= it->second.size()) return false;
    const KernelRegistration & k = *it->second[static_cast<size_t>(i)];
    info->name = k.name.c_str();
    info->op = k.desc.op;
    info->custom_op = k.desc.op == GGML_OP_CUSTOM ? k.desc.custom_op : nullptr;
    info->priority = k.desc.priority;
    if (info->struct_size >= sizeof(ggml_ext_kernel_info)) info->flags = k.flags;
    return true;
}

int ggml_ext_dev_get_n_fusions(ggml_backend_dev_t device) {
    auto & r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.fusions_registered.find(device);
    return it == r.fusions_registered.end() ? 0 : static_cast<int>(it->second.size());
}

const char * ggml_ext_dev_get_fusion_name(ggml_backend_dev_t device, int i) {
    if (i < 0) return nullptr;
    auto & r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.fusions_registered.find(device);
    if (it == r.fusions_registered.end() || static_cast<size_t>(i) >= it->second.size()) return nullptr;
    return it->second[static_cast<size_t>(i)]->name.c_str();
}

void ggml_ext_set_error(const char * message) { ggx::backend::set_last_error(message ? message : ""); }

}  // extern "C"
