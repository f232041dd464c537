// The Select benchmark suite (cases S1..S8), the buffers every implementation
// of a case runs on, and the entry points of the limit kernels and the peers.
//
// Every case has two descriptions:
// - the N-d shapes handed to selgraph (numpy broadcast, as in the suite), and
// - the folded 2-D problem: `rows` x `inner` elements of dst, and per input a
//   role, full [rows, inner], row [1, inner], col [rows, 1] or scalar [1, 1],
//   which the peers run.
// Both describe the same bytes: an input's stored elements are the same in
// either description (checked at start-up).
#ifndef SELGRAPH_BENCHMARKS_BENCH_SUITE_HPP
#define SELGRAPH_BENCHMARKS_BENCH_SUITE_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace sgbench {

enum class dtype { f32, bf16, f16, f64, s8 };
const char *dtype_name(dtype t);
int dtype_size(dtype t);

/// How an input of the folded 2-D problem is stored.
enum class role : uint8_t {
    full,   ///< [rows, inner]
    row,    ///< [1, inner]: reused for every row
    col,    ///< [rows, 1]: one element per row
    scalar, ///< [1, 1]
};

/// Operand indices, in port order.
enum operand { op_cond = 0, op_src0 = 1, op_src1 = 2, op_dst = 3 };

struct problem2d {
    int64_t rows = 1;
    int64_t inner = 1;
    role roles[3] = { role::full, role::full, role::full };

    int64_t dst_elems() const { return rows * inner; }
    /// Elements of operand `op` as stored.
    int64_t elems(int op) const;
    /// Element strides of operand `op` between rows and along a row.
    int64_t row_stride(int op) const;
    int64_t inner_stride(int op) const;
};

struct bench_case {
    std::string id;
    std::vector<int64_t> dims[4]; ///< cond, src_0, src_1, dst (N-d)
    problem2d p;
};

/// S1..S9 of the suite.
const std::vector<bench_case> &suite();

/// M1..M3: dense [n/1024, 1024] with n = 64K, 256K and 1M elements, where a
/// parallel region's fork and join weigh against the work (the thread
/// sweep's mid-sized tensors).
const std::vector<bench_case> &midsize_cases();

/// Bytes of cond + src_0 + src_1 (as stored) + dst, the suite's byte count
/// for effective GB/s.
int64_t effective_bytes(const problem2d &p, int w);

/// One allocation, page-aligned, freed with the object.
struct buffer {
    buffer() = default;
    explicit buffer(size_t bytes);
    void *get() const { return p_.get(); }
    template <typename T>
    T *as() const {
        return static_cast<T *>(p_.get());
    }

private:
    struct deleter {
        void operator()(void *p) const;
    };
    std::unique_ptr<void, deleter> p_;
};

struct operands {
    const uint8_t *cond = nullptr;
    const void *src0 = nullptr;
    const void *src1 = nullptr;
    void *dst = nullptr;
};

/// Fills n bytes with random bits from `rng`, 8 bytes per draw, or with
/// random 0/1 bytes (p = 0.5) from one bit per byte where `cond`: the
/// layout cases and the survey, whose tensors of hundreds of MB took
/// seconds each at a draw per byte.
void fill_random_bytes(uint8_t *p, size_t n, bool cond, std::mt19937_64 &rng);

/// The tensors of one (case, type): cond random 0/1 with p = 0.5, sources
/// random in [1, 2) (exactly representable in f32, bf16 and f16, and such
/// that src_1 + (src_0 - src_1) == src_0 exactly: see peer_onednn.cpp),
/// from a fixed seed. `scratch` is a dst-sized buffer for peers that need a
/// temporary; `cond_f` the cond converted to the source type, for oneDNN.
struct case_data {
    case_data(const problem2d &p, dtype t);
    problem2d p;
    dtype type;
    buffer cond, src0, src1, dst;
    buffer cond_f, scratch; // made on first use
    operands ops() const {
        return { cond.as<uint8_t>(), src0.get(), src1.get(), dst.get() };
    }
    void *get_cond_f();
    void *get_scratch();
};

/// Compares dst with cond ? src_0 : src_1, bit for bit; on a mismatch says
/// where.
bool check_dst(const case_data &d, std::string &why);

/// Fills dst with a pattern no implementation produces.
void poison_dst(const case_data &d);

// --- the bandwidth limit (peer_loops.cpp) ------------------------------------

/// Select's byte mix over n elements: one 1-byte read, two w-byte reads and
/// one w-byte write per element (d = a ^ b ^ c bits), with regular or
/// non-temporal stores, over OpenMP's threads.
void stream_mix(int64_t n, int w, const uint8_t *c, const void *a,
                const void *b, void *d, bool nt);
/// What stream_mix runs, for the benchmark's label: AVX-512 vectors, or
/// AVX2 ones in a build for a CPU without AVX-512.
const char *stream_label(bool nt);
/// memcpy of `bytes`, split over OpenMP's threads.
void memcpy_mt(void *dst, const void *src, size_t bytes);

// --- peers (peer_loops.cpp, peer_eigen.cpp, peer_onednn.cpp)
// ------------------

/// (a) d[i] = c[i] ? a[i] : b[i] over the folded 2-D problem, strides known
/// only at run time.
void loop_rt(const problem2d &p, int w, const operands &o);
/// (b) the same with the strides of each role fixed at compile time.
void loop_ct(const problem2d &p, int w, const operands &o);
/// (b) for one row of n dense elements, no threading (latency reference).
void loop_serial(int64_t n, int w, const operands &o);
/// (d) the same over `nd` dims (at most 8) of any layout: `st[op][i]` is
/// operand op's element stride along dst's dim i (dims right-aligned, 0
/// where broadcast), the dims in logical order, the last one innermost,
/// the outer ones split over `nthreads` OpenMP threads. The layout
/// benchmarks' plain loop and oracle, and the survey's plain loop.
void loop_nd(int nd, const int64_t *dims, const int64_t (*st)[8], int w,
             const operands &o, int nthreads);
/// One operand's row of loop_nd's `st`: the element `strides` of an operand
/// of dims `d`, right-aligned to `nd` dims, 0 where it is broadcast (a dim
/// it lacks or has as 1).
void loop_nd_strides(int nd, const std::vector<int64_t> &d,
                     const std::vector<int64_t> &strides, int64_t *out);

/// A peer set up once (outside the timed region) and run many times.
class runner {
public:
    virtual ~runner() = default;
    virtual void run() = 0;
    /// What runs (implementation names), for the benchmark's label.
    virtual std::string label() const = 0;
};

/// (c) Eigen 3.4 Tensor: cond.broadcast().select(src_0.broadcast(),
/// src_1.broadcast()); DefaultDevice for 1 thread, ThreadPoolDevice beyond.
/// Null with `why` set if the type is not supported.
std::unique_ptr<runner> make_eigen(case_data &d, int nthreads,
                                   std::string &why);
/// "3.4.0".
std::string eigen_version();

/// (d) oneDNN 2.6 binary primitives emulating Select. Null with `why` set if
/// oneDNN cannot (e.g. f16 on this CPU).
std::unique_ptr<runner> make_onednn(case_data &d, std::string &why);

} // namespace sgbench

#endif
