#ifndef SELGRAPH_KERNELS_JIT_GENERATOR_HPP
#define SELGRAPH_KERNELS_JIT_GENERATOR_HPP

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <xbyak/xbyak.h>

#include "src/common.hpp"
#include "src/verbose.hpp"

namespace selgraph {
namespace impl {

/// The base of every kernel generator in kernels/, in the manner of
/// oneDNN's jit_generator. `Kernel` is the interface a kernel is used
/// through (select_kernel, transpose_kernel), with its key_type, fn_type,
/// args_type and name_of(key). The base holds the key and the kernel's name,
/// and what every generator writes the same way:
/// - the code buffer, only ever read+write while the most derived
///   constructor generates into it, then read+execute (ready()): never
///   writable and executable at once;
/// - the callee-saved registers (System V) a kernel uses, pushed in one
///   list and popped in reverse;
/// - the end of a call: the sfence that a non-temporal call's arguments
///   ask for, and vzeroupper.
/// Generators are built by make_jit_kernel(), never directly.
template <typename Kernel>
class jit_generator : public Xbyak::CodeGenerator, public Kernel {
public:
    using interface_type = Kernel;
    using key_type = typename Kernel::key_type;
    using fn_type = typename Kernel::fn_type;
    using args_type = typename Kernel::args_type;

    fn_type fn() const override { return fn_; }
    const std::string &name() const override { return name_; }
    const key_type &key() const override { return key_; }

protected:
    jit_generator(const key_type &key, size_t code_size)
        : Xbyak::CodeGenerator(code_size, Xbyak::AutoGrow)
        , key_(key)
        , name_(Kernel::name_of(key)) {}

    /// Called by the most derived constructor once the code is generated:
    /// the buffer becomes read+execute, and fn() its entry.
    void ready() {
        readyRE();
        fn_ = getCode<fn_type>();
    }

    /// Pushes `regs` in order; pop_saved() pops them in reverse.
    void push_saved(std::initializer_list<Xbyak::Reg64> regs) {
        saved_.assign(regs.begin(), regs.end());
        for (const Xbyak::Reg64 &r : saved_)
            push(r);
    }
    void pop_saved() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
            pop(*it);
    }

    /// The end of a call's vector code: for a key with non-temporal
    /// stores, an sfence where the call's arguments (at `args`) ask for it
    /// (the caller may fence once after a run of calls instead); then
    /// vzeroupper.
    void end_vector_code(const Xbyak::Reg64 &args) {
        if (key_.nt_stores) {
            Xbyak::Label l_no_fence;
            cmp(qword[args + offsetof(args_type, fence)], 0);
            je(l_no_fence, T_NEAR);
            sfence();
            L(l_no_fence);
        }
        vzeroupper();
    }

    const key_type key_;
    const std::string name_;

private:
    std::vector<Xbyak::Reg64> saved_;
    fn_type fn_ = nullptr;
};

/// The kernel that generator `Gen` (a jit_generator) builds for `key`, its
/// code reported to the verbose and profiling hooks. A failure to generate
/// throws selgraph::error (runtime_error; out_of_memory), never an Xbyak
/// exception.
template <typename Gen, typename Key>
std::shared_ptr<const typename Gen::interface_type>
make_jit_kernel(const Key &key) {
    try {
        auto gen = std::make_shared<Gen>(key);
        jit_generated(gen->name(), gen->getCode(), gen->getSize());
        return gen;
    } catch (const Xbyak::Error &e) {
        fail(status::runtime_error, "Select JIT: generating ",
             Gen::interface_type::name_of(key), " failed: ", e.what());
    } catch (const std::bad_alloc &) {
        fail(status::out_of_memory, "Select JIT: out of memory generating ",
             Gen::interface_type::name_of(key));
    }
}

} // namespace impl
} // namespace selgraph

#endif
