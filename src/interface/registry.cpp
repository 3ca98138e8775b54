// The process-wide list of backend registries; built-in backends register on first use. Devices are
// not cached: a registry may add devices later (the CPU registry's virtual devices), so the global
// device list is its registries' current device lists, in registration order.
#include <algorithm>
#include <cctype>
#include <mutex>
#include <vector>

#include "interface/backend-impl.h"
#include "interface/builtin.h"

namespace {

struct Registry {
    std::mutex mutex;
    std::vector<ggml_backend_reg_t> regs;

    void add(ggml_backend_reg_t reg) { regs.push_back(reg); }

    // The first device, in registration order, for which predicate is true; nullptr if none.
    template <class Predicate>
    ggml_backend_dev_t find_device(Predicate predicate) const {
        for (ggml_backend_reg_t reg : regs) {
            const size_t count = reg->device_count();
            for (size_t i = 0; i < count; ++i) {
                ggml_backend_dev_t device = reg->device(i);
                if (device && predicate(device)) return device;
            }
        }
        return nullptr;
    }
};

Registry & registry() {
    static Registry * instance = [] {
        auto * r = new Registry;  // never destroyed: backends may be freed during static destruction
        for (ggml_backend_reg_t reg : ggx::backend::builtin_registries())
            r->add(reg);
        return r;
    }();
    return *instance;
}

// Runs f on the registry with its lock held.
template <class F>
auto locked(F f) {
    Registry & r = registry();
    std::lock_guard lock(r.mutex);
    return f(r);
}

template <class T, class Predicate>
T find_if_or_null(const std::vector<T> & items, Predicate predicate) {
    const auto it = std::find_if(items.begin(), items.end(), predicate);
    return it == items.end() ? nullptr : *it;
}

bool equal_ignoring_case(const char * a, const char * b) {
    for (; *a && *b; ++a, ++b) {
        if (std::tolower(static_cast<unsigned char>(*a)) != std::tolower(static_cast<unsigned char>(*b)))
            return false;
    }
    return *a == *b;
}

}  // namespace

extern "C" {

const char * ggml_backend_reg_name(ggml_backend_reg_t reg) { return reg->name(); }
size_t ggml_backend_reg_dev_count(ggml_backend_reg_t reg) { return reg->device_count(); }
ggml_backend_dev_t ggml_backend_reg_dev_get(ggml_backend_reg_t reg, size_t index) {
    return index < reg->device_count() ? reg->device(index) : nullptr;
}
void * ggml_backend_reg_get_proc_address(ggml_backend_reg_t reg, const char * name) {
    return name ? reg->proc_address(name) : nullptr;
}

size_t ggml_backend_reg_count(void) {
    return locked([](Registry & r) { return r.regs.size(); });
}

ggml_backend_reg_t ggml_backend_reg_get(size_t index) {
    return locked([index](Registry & r) { return index < r.regs.size() ? r.regs[index] : nullptr; });
}

ggml_backend_reg_t ggml_backend_reg_by_name(const char * name) {
    return locked([name](Registry & r) {
        return find_if_or_null(r.regs, [name](auto reg) { return equal_ignoring_case(reg->name(), name); });
    });
}

bool ggml_backend_register(ggml_backend_reg_t reg) {
    const bool added = locked([reg](Registry & r) {
        if (!reg || std::find(r.regs.begin(), r.regs.end(), reg) != r.regs.end()) return false;
        r.add(reg);
        return true;
    });
    if (!added) ggx::backend::set_last_error("ggml_backend_register: registry is NULL or already registered");
    return added;
}

size_t ggml_backend_dev_count(void) {
    return locked([](Registry & r) {
        size_t count = 0;
        for (ggml_backend_reg_t reg : r.regs)
            count += reg->device_count();
        return count;
    });
}

ggml_backend_dev_t ggml_backend_dev_get(size_t index) {
    return locked([index](Registry & r) {
        size_t seen = 0;
        return r.find_device([&seen, index](ggml_backend_dev_t) { return seen++ == index; });
    });
}

ggml_backend_dev_t ggml_backend_dev_by_name(const char * name) {
    if (!name) return nullptr;
    return locked([name](Registry & r) {
        return r.find_device(
            [name](ggml_backend_dev_t dev) { return equal_ignoring_case(dev->name(), name); });
    });
}

ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type) {
    return locked([type](Registry & r) {
        return r.find_device([type](ggml_backend_dev_t dev) { return dev->type() == type; });
    });
}

ggml_backend_t ggml_backend_init_by_name(const char * name, const char * params) {
    ggml_backend_dev_t device = ggml_backend_dev_by_name(name);
    if (!device) {
        ggx::backend::set_last_error(std::string("no backend device named '") + (name ? name : "(null)") +
                                     "'");
        return nullptr;
    }
    return device->init_backend(params);
}

ggml_backend_t ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char * params) {
    ggml_backend_dev_t device = ggml_backend_dev_by_type(type);
    if (!device) {
        ggx::backend::set_last_error("no backend device of the requested type");
        return nullptr;
    }
    return device->init_backend(params);
}

ggml_backend_t ggml_backend_init_best(void) {
    ggml_backend_dev_t device = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU);
    if (!device) device = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    return device ? device->init_backend(nullptr) : nullptr;
}

}  // extern "C"
