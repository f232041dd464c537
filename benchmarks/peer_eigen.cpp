// Peer (c): Eigen 3.4 Tensor. Every input is a TensorMap of its stored
// shape in the folded 2-D problem ([rows, inner], [1, inner], [rows, 1] or
// [1, 1]) broadcast to dst's shape (an all-ones broadcast is Eigen's copy
// fast path), and the cond map's .select() picks between them:
//
//   dst.device(dev) = cond.broadcast(bc).select(src_0.broadcast(b0),
//                                               src_1.broadcast(b1));
//
// bf16 and f16 use Eigen::bfloat16 and Eigen::half, moved bit for bit.
#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/Tensor>

#include "bench_suite.hpp"

namespace sgbench {

namespace {

using index2 = Eigen::array<Eigen::Index, 2>;

index2 stored_dims(const problem2d &p, int op) {
    switch (p.roles[op]) {
        case role::full: return { p.rows, p.inner };
        case role::row: return { 1, p.inner };
        case role::col: return { p.rows, 1 };
        default: return { 1, 1 };
    }
}

index2 bcast_factors(const problem2d &p, int op) {
    switch (p.roles[op]) {
        case role::full: return { 1, 1 };
        case role::row: return { p.rows, 1 };
        case role::col: return { 1, p.inner };
        default: return { p.rows, p.inner };
    }
}

template <typename T>
class eigen_runner : public runner {
public:
    eigen_runner(case_data &d, int nthreads)
        : p_(d.p)
        , cond_(d.cond.as<const uint8_t>(), stored_dims(p_, op_cond))
        , src0_(d.src0.as<const T>(), stored_dims(p_, op_src0))
        , src1_(d.src1.as<const T>(), stored_dims(p_, op_src1))
        , dst_(d.dst.as<T>(), index2 { p_.rows, p_.inner })
        , nthreads_(nthreads) {
        if (nthreads_ > 1) {
            pool_ = std::make_unique<Eigen::ThreadPool>(nthreads_);
            device_ = std::make_unique<Eigen::ThreadPoolDevice>(pool_.get(),
                                                                nthreads_);
        }
    }

    void run() override {
        const auto expr =
                cond_.broadcast(bcast_factors(p_, op_cond))
                        .select(src0_.broadcast(bcast_factors(p_, op_src0)),
                                src1_.broadcast(bcast_factors(p_, op_src1)));
        if (device_)
            dst_.device(*device_) = expr;
        else
            dst_ = expr;
    }

    std::string label() const override {
        return nthreads_ > 1 ? "Eigen::ThreadPoolDevice("
                                       + std::to_string(nthreads_) + ")"
                             : "Eigen::DefaultDevice";
    }

private:
    using cmap = Eigen::TensorMap<
            Eigen::Tensor<const uint8_t, 2, Eigen::RowMajor, Eigen::Index>>;
    using smap = Eigen::TensorMap<
            Eigen::Tensor<const T, 2, Eigen::RowMajor, Eigen::Index>>;
    using dmap = Eigen::TensorMap<
            Eigen::Tensor<T, 2, Eigen::RowMajor, Eigen::Index>>;

    problem2d p_;
    cmap cond_;
    smap src0_, src1_;
    dmap dst_;
    int nthreads_;
    std::unique_ptr<Eigen::ThreadPool> pool_;
    std::unique_ptr<Eigen::ThreadPoolDevice> device_;
};

} // namespace

std::unique_ptr<runner> make_eigen(case_data &d, int nthreads,
                                   std::string &why) {
    why.clear();
    switch (d.type) {
        case dtype::f32:
            return std::make_unique<eigen_runner<float>>(d, nthreads);
        case dtype::bf16:
            return std::make_unique<eigen_runner<Eigen::bfloat16>>(d, nthreads);
        case dtype::f64:
            return std::make_unique<eigen_runner<double>>(d, nthreads);
        case dtype::s8:
            return std::make_unique<eigen_runner<int8_t>>(d, nthreads);
        default:
            return std::make_unique<eigen_runner<Eigen::half>>(d, nthreads);
    }
}

std::string eigen_version() {
    return std::to_string(EIGEN_WORLD_VERSION) + "."
           + std::to_string(EIGEN_MAJOR_VERSION) + "."
           + std::to_string(EIGEN_MINOR_VERSION);
}

} // namespace sgbench
