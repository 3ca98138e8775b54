// The process-wide list of backend registries; the built-in backends register on first use. Devices
// are not cached: a registry may add devices later (the CPU registry's virtual devices), so the
// device list is computed from the registries' current devices and the individually registered
// ones, in registration order with the CPU devices last (GPUs first, as ggml enumerates them).
#include <algorithm>
#include <cctype>
#include <mutex>
#include <string>
#include <vector>

#include "interface/backend-impl.h"
#include "registry/registry.h"

namespace {

struct Entry {
    ggml_backend_reg_t reg;
    void * module;  // the dlopen handle it came from, or nullptr
};

bool equal_ignoring_case(const char * a, const char * b) {
    for (; *a && *b; ++a, ++b) {
        if (std::tolower(static_cast<unsigned char>(*a)) != std::tolower(static_cast<unsigned char>(*b)))
            return false;
    }
    return *a == *b;
}

struct Registry {
    std::mutex mutex;
    std::vector<Entry> entries;
    std::vector<ggml_backend_dev_t> lone_devices;  // ggml_backend_device_register's

    const Entry * find(ggml_backend_reg_t reg) const {
        const auto it =
            std::find_if(entries.begin(), entries.end(), [reg](const Entry & e) { return e.reg == reg; });
        return it == entries.end() ? nullptr : &*it;
    }

    ggml_backend_reg_t find_by_name(const char * name) const {
        for (const Entry & e : entries) {
            if (equal_ignoring_case(e.reg->name(), name)) return e.reg;
        }
        return nullptr;
    }

    std::vector<ggml_backend_dev_t> devices() const {
        std::vector<ggml_backend_dev_t> all;
        for (const Entry & e : entries) {
            const size_t count = e.reg->device_count();
            for (size_t i = 0; i < count; ++i) {
                if (ggml_backend_dev_t device = e.reg->device(i)) all.push_back(device);
            }
        }
        all.insert(all.end(), lone_devices.begin(), lone_devices.end());
        std::stable_partition(all.begin(), all.end(), [](ggml_backend_dev_t device) {
            return device->type() != GGML_BACKEND_DEVICE_TYPE_CPU;
        });
        return all;
    }

    // The first device, in enumeration order, for which predicate is true; nullptr if none.
    template <class Predicate>
    ggml_backend_dev_t find_device(Predicate predicate) const {
        const std::vector<ggml_backend_dev_t> all = devices();
        const auto it = std::find_if(all.begin(), all.end(), predicate);
        return it == all.end() ? nullptr : *it;
    }
};

Registry & registry() {
    static Registry * instance = [] {
        auto * r = new Registry;  // never destroyed: backends may be freed during static destruction
        for (ggml_backend_reg_t reg : ggx::registry::builtin_registries())
            r->entries.push_back({reg, nullptr});
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

// Installed when the library loads, so that a backend adding a device (a CPU virtual device) sees
// every registered device's name even before the application's first registry call.
const struct DeviceLookupInstaller {
    DeviceLookupInstaller() { ggx::backend::set_device_lookup(ggml_backend_dev_by_name); }
} device_lookup_installer;

}  // namespace

namespace ggx::registry {

std::string add(ggml_backend_reg_t reg, void * module) {
    return locked([&](Registry & r) -> std::string {
        if (r.find(reg)) return "registry '" + std::string(reg->name()) + "' is already registered";
        if (r.find_by_name(reg->name()))
            return "another registry named '" + std::string(reg->name()) + "' is registered";
        r.entries.push_back({reg, module});
        return "";
    });
}

bool contains(ggml_backend_reg_t reg) {
    return locked([reg](Registry & r) { return r.find(reg) != nullptr; });
}

bool remove(ggml_backend_reg_t reg, void *& module) {
    return locked([&](Registry & r) {
        const Entry * entry = r.find(reg);
        if (!entry) return false;
        module = entry->module;
        r.entries.erase(r.entries.begin() + (entry - r.entries.data()));
        return true;
    });
}

}  // namespace ggx::registry

extern "C" {

size_t ggml_backend_reg_count(void) {
    return locked([](Registry & r) { return r.entries.size(); });
}

ggml_backend_reg_t ggml_backend_reg_get(size_t index) {
    return locked(
        [index](Registry & r) { return index < r.entries.size() ? r.entries[index].reg : nullptr; });
}

ggml_backend_reg_t ggml_backend_reg_by_name(const char * name) {
    if (!name) return nullptr;
    return locked([name](Registry & r) { return r.find_by_name(name); });
}

void ggml_backend_register(ggml_backend_reg_t reg) {
    if (!reg) {
        ggx::backend::set_last_error("ggml_backend_register: the registry is NULL");
        return;
    }
    const std::string refused = ggx::registry::add(reg, nullptr);
    if (!refused.empty()) ggx::backend::set_last_error("ggml_backend_register: " + refused);
}

void ggml_backend_device_register(ggml_backend_dev_t device) {
    const bool added = device && locked([device](Registry & r) {
                           const std::vector<ggml_backend_dev_t> all = r.devices();
                           if (std::find(all.begin(), all.end(), device) != all.end()) return false;
                           r.lone_devices.push_back(device);
                           return true;
                       });
    if (!added)
        ggx::backend::set_last_error("ggml_backend_device_register: device is NULL or already registered");
}

size_t ggml_backend_dev_count(void) {
    return locked([](Registry & r) { return r.devices().size(); });
}

ggml_backend_dev_t ggml_backend_dev_get(size_t index) {
    return locked([index](Registry & r) {
        const std::vector<ggml_backend_dev_t> all = r.devices();
        return index < all.size() ? all[index] : nullptr;
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
