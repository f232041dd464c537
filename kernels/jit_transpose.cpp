#include "jit_transpose.hpp"

#include <cstring>

namespace selgraph {
namespace impl {

namespace {

template <typename T>
void tr(const transpose_call_args *a) {
    const char *s = static_cast<const char *>(a->src);
    char *d = static_cast<char *>(a->dst);
    for (uint64_t r = 0; r < a->rows; ++r)
        for (uint64_t c = 0; c < a->cols; ++c) {
            T v;
            std::memcpy(&v,
                        s + static_cast<int64_t>(c) * a->src_ld + r * sizeof(T),
                        sizeof(T));
            std::memcpy(d + static_cast<int64_t>(r) * a->dst_ld + c * sizeof(T),
                        &v, sizeof(T));
        }
}

class loop_kernel : public transpose_kernel {
public:
    loop_kernel(transpose_kernel_fn f, std::string n)
        : f_(f)
        , n_(std::move(n)) {}
    transpose_kernel_fn fn() const override { return f_; }
    const std::string &name() const override { return n_; }

private:
    transpose_kernel_fn f_;
    std::string n_;
};

} // namespace

const transpose_kernel *get_transpose_kernel(const transpose_key &key) {
    static const loop_kernel k1(tr<uint8_t>, "tr_e1"),
            k2(tr<uint16_t>, "tr_e2"), k4(tr<uint32_t>, "tr_e4"),
            k8(tr<uint64_t>, "tr_e8");
    if (key.isa == kernel_isa::ref)
        return nullptr;
    switch (key.elem_size) {
        case 1: return &k1;
        case 2: return &k2;
        case 4: return &k4;
        default: return &k8;
    }
}

void ref_transpose(const transpose_call_args &a, int elem_size) {
    switch (elem_size) {
        case 1: tr<uint8_t>(&a); break;
        case 2: tr<uint16_t>(&a); break;
        case 4: tr<uint32_t>(&a); break;
        default: tr<uint64_t>(&a); break;
    }
}

} // namespace impl
} // namespace selgraph
