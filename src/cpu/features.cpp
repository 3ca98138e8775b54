// ggml-cpu.h's system information: the instruction-set features of the CPU running the process
// (x86: cpuid, with xgetbv for the register state the OS enables; AArch64: the kernel's hwcaps),
// NUMA detection and ggml_cpu_init.
#include <ggml-cpu.h>

#include <dirent.h>

#include <cstring>
#include <utility>
#include <vector>

#include "cpu/backend.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

namespace {

struct Features {
    bool sse3, ssse3, avx, avx_vnni, avx2, bmi2, f16c, fma, avx512, avx512_vbmi, avx512_vnni, avx512_bf16,
        amx_int8, amx_bf16;
    bool neon, arm_fma, fp16_va, dotprod, matmul_int8, sve, sme, sme2;
    int sve_bytes;
};

#if defined(__x86_64__) || defined(__i386__)
struct CpuidRegs {
    unsigned a = 0, b = 0, c = 0, d = 0;
};

CpuidRegs cpuid(unsigned leaf, unsigned subleaf) {
    CpuidRegs r;
    if (!__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d)) r = {};
    return r;
}

bool bit(unsigned reg, int n) { return (reg >> n) & 1u; }

// The register state the OS saves (XCR0); 0 when the OS does not enable xgetbv.
unsigned long long enabled_state(const CpuidRegs & leaf1) {
    if (!bit(leaf1.c, 27)) return 0;  // OSXSAVE
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<unsigned long long>(hi) << 32) | lo;
}

// Linux gives a process the AMX tile data state only on request (arch_prctl, once per process: the
// permission covers every thread). false where the kernel refuses or predates the request.
bool request_tile_data() {
#if defined(__linux__) && defined(__x86_64__)
    constexpr int kReqXcompPerm = 0x1023, kXfeatureTileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureTileData) == 0;
#else
    return false;
#endif
}

void detect_x86(Features & f) {
    const CpuidRegs leaf1 = cpuid(1, 0), leaf7 = cpuid(7, 0), leaf7_1 = cpuid(7, 1);
    const unsigned long long xcr0 = enabled_state(leaf1);
    const bool avx_state = (xcr0 & 0x6) == 0x6;          // SSE and AVX registers
    const bool avx512_state = (xcr0 & 0xE6) == 0xE6;     // plus opmask and ZMM registers
    const bool amx_state = (xcr0 & 0x60000) == 0x60000;  // tile configuration and data
    f.sse3 = bit(leaf1.c, 0);
    f.ssse3 = bit(leaf1.c, 9);
    f.avx = avx_state && bit(leaf1.c, 28);
    f.fma = f.avx && bit(leaf1.c, 12);
    f.f16c = f.avx && bit(leaf1.c, 29);
    f.avx2 = f.avx && bit(leaf7.b, 5);
    f.bmi2 = bit(leaf7.b, 8);
    f.avx_vnni = f.avx && bit(leaf7_1.a, 4);
    f.avx512 = avx512_state && bit(leaf7.b, 16);
    f.avx512_vbmi = f.avx512 && bit(leaf7.c, 1);
    f.avx512_vnni = f.avx512 && bit(leaf7.c, 11);
    f.avx512_bf16 = f.avx512 && bit(leaf7_1.a, 5);
    const bool amx_tiles = amx_state && bit(leaf7.d, 24) && request_tile_data();
    f.amx_int8 = amx_tiles && bit(leaf7.d, 25);
    f.amx_bf16 = amx_tiles && bit(leaf7.d, 22);
}
#endif

#if defined(__aarch64__)
void detect_arm(Features & f) {
    const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
    f.neon = hwcap & HWCAP_ASIMD;
    f.arm_fma = f.neon;  // fused multiply-add is part of AdvSIMD on AArch64
    f.fp16_va = hwcap & HWCAP_ASIMDHP;
    f.dotprod = hwcap & HWCAP_ASIMDDP;
#ifdef HWCAP2_I8MM
    f.matmul_int8 = hwcap2 & HWCAP2_I8MM;
#endif
#ifdef HWCAP2_SME
    f.sme = hwcap2 & HWCAP2_SME;
#endif
#ifdef HWCAP2_SME2
    f.sme2 = hwcap2 & HWCAP2_SME2;
#endif
    f.sve = hwcap & HWCAP_SVE;
#ifdef PR_SVE_GET_VL
    if (f.sve) f.sve_bytes = prctl(PR_SVE_GET_VL) & PR_SVE_VL_LEN_MASK;
#endif
}
#endif

const Features & features() {
    static const Features detected = [] {
        Features f{};
#if defined(__x86_64__) || defined(__i386__)
        detect_x86(f);
#elif defined(__aarch64__)
        detect_arm(f);
#endif
        return f;
    }();
    return detected;
}

// Nodes listed by sysfs (node0, node1, ...); 1 when it cannot be read.
int count_numa_nodes() {
    DIR * dir = opendir("/sys/devices/system/node");
    if (!dir) return 1;
    int nodes = 0;
    while (const dirent * entry = readdir(dir)) {
        if (std::strncmp(entry->d_name, "node", 4) == 0 && entry->d_name[4] >= '0' && entry->d_name[4] <= '9') ++nodes;
    }
    closedir(dir);
    return nodes > 0 ? nodes : 1;
}

int numa_nodes = 1;

}  // namespace

namespace ggx::cpu {

ggml_backend_feature * feature_list() {
    static std::vector<ggml_backend_feature> list = [] {
        const Features & f = features();
        const std::pair<const char *, bool> named[] = {
            {"SSE3", f.sse3},
            {"SSSE3", f.ssse3},
            {"AVX", f.avx},
            {"AVX_VNNI", f.avx_vnni},
            {"AVX2", f.avx2},
            {"BMI2", f.bmi2},
            {"F16C", f.f16c},
            {"FMA", f.fma},
            {"AVX512", f.avx512},
            {"AVX512_VBMI", f.avx512_vbmi},
            {"AVX512_VNNI", f.avx512_vnni},
            {"AVX512_BF16", f.avx512_bf16},
            {"AMX_INT8", f.amx_int8},
            {"AMX_BF16", f.amx_bf16},
            {"NEON", f.neon},
            {"ARM_FMA", f.arm_fma},
            {"FP16_VA", f.fp16_va},
            {"DOTPROD", f.dotprod},
            {"MATMUL_INT8", f.matmul_int8},
            {"SVE", f.sve},
            {"SME", f.sme},
            {"SME2", f.sme2},
        };
        std::vector<ggml_backend_feature> present;
        for (const auto & [name, has] : named)
            if (has) present.push_back({name, "1"});
        present.push_back({nullptr, nullptr});
        return present;
    }();
    return list.data();
}

bool has_amx_bf16() { return features().amx_bf16; }

}  // namespace ggx::cpu

extern "C" {

void ggml_cpu_init(void) { features(); }

void ggml_numa_init(enum ggml_numa_strategy) { numa_nodes = count_numa_nodes(); }
bool ggml_is_numa(void) { return numa_nodes > 1; }

int ggml_cpu_has_sse3(void) { return features().sse3; }
int ggml_cpu_has_ssse3(void) { return features().ssse3; }
int ggml_cpu_has_avx(void) { return features().avx; }
int ggml_cpu_has_avx_vnni(void) { return features().avx_vnni; }
int ggml_cpu_has_avx2(void) { return features().avx2; }
int ggml_cpu_has_bmi2(void) { return features().bmi2; }
int ggml_cpu_has_f16c(void) { return features().f16c; }
int ggml_cpu_has_fma(void) { return features().fma; }
int ggml_cpu_has_avx512(void) { return features().avx512; }
int ggml_cpu_has_avx512_vbmi(void) { return features().avx512_vbmi; }
int ggml_cpu_has_avx512_vnni(void) { return features().avx512_vnni; }
int ggml_cpu_has_avx512_bf16(void) { return features().avx512_bf16; }
int ggml_cpu_has_amx_int8(void) { return features().amx_int8; }
int ggml_cpu_has_neon(void) { return features().neon; }
int ggml_cpu_has_arm_fma(void) { return features().arm_fma; }
int ggml_cpu_has_fp16_va(void) { return features().fp16_va; }
int ggml_cpu_has_dotprod(void) { return features().dotprod; }
int ggml_cpu_has_matmul_int8(void) { return features().matmul_int8; }
int ggml_cpu_has_sve(void) { return features().sve; }
int ggml_cpu_get_sve_cnt(void) { return features().sve_bytes; }
int ggml_cpu_has_sme(void) { return features().sme; }
int ggml_cpu_has_sme2(void) { return features().sme2; }
// ggx builds for x86-64 and AArch64 only: the features of other architectures are absent.
int ggml_cpu_has_riscv_v(void) { return 0; }
int ggml_cpu_get_rvv_vlen(void) { return 0; }
int ggml_cpu_has_vsx(void) { return 0; }
int ggml_cpu_has_vxe(void) { return 0; }
int ggml_cpu_has_wasm_simd(void) { return 0; }
int ggml_cpu_has_llamafile(void) { return 0; }

}  // extern "C"
