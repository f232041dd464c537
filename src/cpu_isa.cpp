#include "cpu_isa.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include <xbyak/xbyak_util.h>

#include "common.hpp"

namespace selgraph {
namespace impl {

namespace {

constexpr int no_override = -1;
thread_local int tls_cap = no_override;
thread_local bool tls_no_vbmi = false;

std::mutex cap_mutex;
bool cap_set = false;    // by set_max_cpu_isa
bool cap_frozen = false; // by the first dispatch
cpu_isa cap_value = cpu_isa::isa_all;

kernel_isa to_kernel_isa(cpu_isa isa) {
    switch (isa) {
        case cpu_isa::none: return kernel_isa::ref;
        case cpu_isa::avx2: return kernel_isa::avx2;
        default: return kernel_isa::avx512_core;
    }
}

cpu_isa frozen_cap() {
    std::lock_guard<std::mutex> lock(cap_mutex);
    if (!cap_frozen) {
        const char *env = std::getenv("SELGRAPH_MAX_CPU_ISA");
        cpu_isa isa;
        if (!cap_set && env && *env && parse_cpu_isa(env, isa))
            cap_value = isa;
        cap_frozen = true;
    }
    return cap_value;
}

kernel_isa best_cpu_isa() {
    static const kernel_isa best = [] {
        const Xbyak::util::Cpu cpu;
        using C = Xbyak::util::Cpu;
        if (cpu.has(C::tAVX512F) && cpu.has(C::tAVX512BW)
            && cpu.has(C::tAVX512VL) && cpu.has(C::tAVX512DQ)
            && cpu.has(C::tBMI2))
            return kernel_isa::avx512_core;
        if (cpu.has(C::tAVX2))
            return kernel_isa::avx2;
        return kernel_isa::ref;
    }();
    return best;
}

} // namespace

bool parse_cpu_isa(const char *s, cpu_isa &isa) {
    std::string v(s);
    for (auto &ch : v)
        ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (v == "ALL" || v == "DEFAULT")
        isa = cpu_isa::isa_all;
    else if (v == "AVX512_CORE")
        isa = cpu_isa::avx512_core;
    else if (v == "AVX2")
        isa = cpu_isa::avx2;
    else if (v == "NONE")
        isa = cpu_isa::none;
    else
        return false;
    return true;
}

bool cpu_has(kernel_isa isa) {
    return static_cast<int>(isa) <= static_cast<int>(best_cpu_isa());
}

cpu_kind cpu_kind_of(bool amd, unsigned family, bool avx512) {
    if (!amd)
        return cpu_kind::other;
    if (avx512 && family == 0x19)
        return cpu_kind::amd_zen4;
    if (avx512 && family == 0x1a)
        return cpu_kind::amd_zen5;
    return cpu_kind::amd;
}

cpu_kind this_cpu_kind() {
    static const cpu_kind kind = [] {
        const Xbyak::util::Cpu cpu;
        return cpu_kind_of(cpu.has(Xbyak::util::Cpu::tAMD),
                           static_cast<unsigned>(cpu.displayFamily),
                           best_cpu_isa() == kernel_isa::avx512_core);
    }();
    return kind;
}

bool cpu_has_prefetchw() {
    static const bool has =
            Xbyak::util::Cpu().has(Xbyak::util::Cpu::tPREFETCHW);
    return has;
}

bool cpu_has_avx512_vbmi() {
    static const bool has =
            Xbyak::util::Cpu().has(Xbyak::util::Cpu::tAVX512_VBMI);
    return has && !tls_no_vbmi;
}

scoped_no_vbmi::scoped_no_vbmi()
    : prev_(tls_no_vbmi) {
    tls_no_vbmi = true;
}

scoped_no_vbmi::~scoped_no_vbmi() {
    tls_no_vbmi = prev_;
}

kernel_isa max_kernel_isa() {
    kernel_isa cap = to_kernel_isa(frozen_cap());
    if (tls_cap != no_override) {
        const kernel_isa t = to_kernel_isa(static_cast<cpu_isa>(tls_cap));
        if (static_cast<int>(t) < static_cast<int>(cap))
            cap = t;
    }
    const kernel_isa best = best_cpu_isa();
    return static_cast<int>(cap) < static_cast<int>(best) ? cap : best;
}

scoped_isa_cap::scoped_isa_cap(cpu_isa isa)
    : prev_(tls_cap) {
    tls_cap = static_cast<int>(isa);
}

scoped_isa_cap::~scoped_isa_cap() {
    tls_cap = prev_;
}

} // namespace impl

void set_max_cpu_isa(cpu_isa isa) {
    std::lock_guard<std::mutex> lock(impl::cap_mutex);
    if (impl::cap_frozen && impl::cap_value != isa)
        impl::fail(status::invalid_arguments,
                   "set_max_cpu_isa: the ISA cap must be set before the first ",
                   "compile; it is already in use");
    impl::cap_value = isa;
    impl::cap_set = true;
}

cpu_isa get_effective_cpu_isa() {
    switch (impl::max_kernel_isa()) {
        case impl::kernel_isa::avx512_core: return cpu_isa::avx512_core;
        case impl::kernel_isa::avx2: return cpu_isa::avx2;
        default: return cpu_isa::none;
    }
}

} // namespace selgraph
