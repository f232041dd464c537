// selgraph: a oneDNN Graph-style API for the Select operation.
//
// Code written against oneDNN's Graph API (include/oneapi/dnnl/dnnl_graph.hpp,
// oneDNN v3) for a Select op ports by replacing `dnnl::graph::` with
// `selgraph::`: class names, method names, enum names and argument orders are
// the same. The engine and the stream are oneDNN's own (`dnnl::engine`,
// `dnnl::stream`).
#ifndef SELGRAPH_SELGRAPH_HPP
#define SELGRAPH_SELGRAPH_HPP

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

namespace selgraph {

using engine = dnnl::engine;
using stream = dnnl::stream;

/// Status codes, numerically equal to `dnnl::graph::status`.
enum class status {
    success = 0,
    out_of_memory = 1,
    invalid_arguments = 2,
    unimplemented = 3,
    last_impl_reached = 4,
    runtime_error = 5,
    not_required = 6,
    invalid_graph = 7,
    invalid_graph_op = 8,
    invalid_shape = 9,
    invalid_data_type = 10,
};

/// The name of a status ("invalid_shape", ...).
const char *status2str(status s) noexcept;

/// Every failure of the library is reported with this exception: `status`
/// says which kind of failure, `what()` says why, naming the op, the port and
/// the shapes or types involved.
class error : public std::exception {
public:
    error(selgraph::status astatus, std::string message);
    const char *what() const noexcept override { return message_.c_str(); }

    selgraph::status status;

private:
    std::string message_;
};

/// Describes a tensor without its data: id, data type, shape and layout.
class logical_tensor {
public:
    using dim = int64_t;
    using dims = std::vector<dim>;

    /// Number of dimensions a logical tensor can have (as `DNNL_MAX_NDIMS`).
    static constexpr int max_ndims = 12;
    /// An unknown dimension (or stride), equal to oneDNN v3's
    /// `DNNL_GRAPH_UNKNOWN_DIM`. -1 means unknown as well; any other
    /// negative dim is rejected (`invalid_shape`).
    static constexpr dim unknown_dim = INT64_MIN;
    static constexpr int32_t unknown_ndims = -1;

    /// Element types. Every value oneDNN has is numerically equal to
    /// oneDNN's `dnnl_data_type_t` (`dnnl::graph::logical_tensor::data_type`),
    /// so a `static_cast` or a serialized value means the same type. u16,
    /// s16, u32 and u64, which oneDNN lacks (DirectML has them), are
    /// selgraph extensions numbered from 256, clear of oneDNN's values.
    enum class data_type {
        undef = 0,
        f16 = 1,
        bf16 = 2,
        f32 = 3,
        s32 = 4,
        s8 = 5,
        u8 = 6,
        f64 = 7,
        boolean = 8,
        f8_e5m2 = 9,
        f8_e4m3 = 10,
        s4 = 11,
        u4 = 12,
        s64 = 16,
        // selgraph extensions (not in oneDNN)
        u16 = 256,
        s16 = 257,
        u32 = 258,
        u64 = 259,
    };

    enum class layout_type { undef = 0, any = 1, strided = 2, opaque = 3 };

    /// `host_scalar`: a 0-D value passed on the host at execute, through
    /// `tensor::make_scalar_tensor` (as oneDNN's).
    enum class property_type {
        undef = 0,
        variable = 1,
        constant = 2,
        host_scalar = 3,
    };

    /// An empty logical tensor (id 0, undef type, unknown ndims).
    logical_tensor();

    /// Known number of dimensions, unknown dims.
    logical_tensor(size_t tid, data_type dtype, int32_t ndims,
                   layout_type ltype,
                   property_type ptype = property_type::undef);

    /// Unknown number of dimensions.
    logical_tensor(size_t tid, data_type dtype,
                   layout_type ltype = layout_type::undef);

    /// Dims and a layout type (strided means dense row-major strides). A
    /// dim is known (>= 0) or unknown (`unknown_dim` or -1); any other
    /// negative dim throws `invalid_shape`.
    logical_tensor(size_t tid, data_type dtype, const dims &adims,
                   layout_type ltype,
                   property_type ptype = property_type::undef);

    /// Dims and explicit strides, in elements.
    logical_tensor(size_t tid, data_type dtype, const dims &adims,
                   const dims &strides,
                   property_type ptype = property_type::undef);

    size_t get_id() const { return id_; }
    data_type get_data_type() const { return dtype_; }
    layout_type get_layout_type() const { return ltype_; }
    property_type get_property_type() const { return ptype_; }
    /// -1 when unknown.
    int32_t get_ndims() const { return ndims_; }
    /// Throws `invalid_arguments` if the number of dimensions is unknown.
    dims get_dims() const;
    /// Throws `invalid_arguments` unless the layout is strided.
    dims get_strides() const;
    /// Bytes spanned by the tensor's elements; 0 for an empty tensor.
    /// Throws `invalid_shape` if dims are unknown or the size overflows.
    size_t get_mem_size() const;
    /// Same id, type, dims, layout and strides.
    bool is_equal(const logical_tensor &lt) const;

private:
    friend class compiled_partition; // checks tensors without copies
    friend class tensor;
    size_t id_ = 0;
    data_type dtype_ = data_type::undef;
    layout_type ltype_ = layout_type::undef;
    property_type ptype_ = property_type::undef;
    int32_t ndims_ = unknown_ndims;
    dim dims_[max_ndims] = {};
    dim strides_[max_ndims] = {};
};

/// An operation of the graph. Every oneDNN Graph op kind can be named so that
/// real graphs can be handed in; only `Select` is claimed by this backend.
class op {
public:
    enum class kind {
        Abs,
        AbsBackward,
        Add,
        AvgPool,
        AvgPoolBackward,
        BatchNormForwardTraining,
        BatchNormInference,
        BatchNormTrainingBackward,
        BiasAdd,
        BiasAddBackward,
        Clamp,
        ClampBackward,
        Concat,
        Convolution,
        ConvolutionBackwardData,
        ConvolutionBackwardWeights,
        ConvTranspose,
        ConvTransposeBackwardData,
        ConvTransposeBackwardWeights,
        Dequantize,
        Divide,
        DynamicDequantize,
        DynamicQuantize,
        Elu,
        EluBackward,
        End,
        Exp,
        GELU,
        GELUBackward,
        HardSigmoid,
        HardSigmoidBackward,
        HardSwish,
        HardSwishBackward,
        Interpolate,
        InterpolateBackward,
        LayerNorm,
        LayerNormBackward,
        LeakyReLU,
        Log,
        LogSoftmax,
        LogSoftmaxBackward,
        MatMul,
        Maximum,
        MaxPool,
        MaxPoolBackward,
        Minimum,
        Mish,
        MishBackward,
        Multiply,
        Pow,
        PReLU,
        PReLUBackward,
        Quantize,
        Reciprocal,
        ReduceL1,
        ReduceL2,
        ReduceMax,
        ReduceMean,
        ReduceMin,
        ReduceProd,
        ReduceSum,
        ReLU,
        ReLUBackward,
        Reorder,
        Round,
        Select,
        Sigmoid,
        SigmoidBackward,
        SoftMax,
        SoftMaxBackward,
        SoftPlus,
        SoftPlusBackward,
        Sqrt,
        SqrtBackward,
        Square,
        SquaredDifference,
        StaticReshape,
        StaticTranspose,
        Subtract,
        Tanh,
        TanhBackward,
        TypeCast,
        Wildcard,
        GenIndex,
        GreaterEqual,
        GroupNorm,
        RMSNorm,
        LastSymbol,
    };

    enum class attr {
        undef = 0,
        alpha,
        beta,
        epsilon,
        max,
        min,
        momentum,
        scales,
        axis,
        begin_norm_axis,
        groups,
        axes,
        dilations,
        dst_shape,
        kernel,
        order,
        output_padding,
        pads_begin,
        pads_end,
        shape,
        sizes,
        src_shape,
        strides,
        weights_shape,
        zps,
        group_shape,
        exclude_pad,
        keep_dims,
        keep_stats,
        per_channel_broadcast,
        special_zero,
        transpose_a,
        transpose_b,
        use_affine,
        use_dst,
        auto_broadcast,
        auto_pad,
        coordinate_transformation_mode,
        data_format,
        mode,
        qtype,
        rounding_type,
        weights_format,
    };

    op(size_t id, kind akind, const std::string &verbose_name = "");
    op(size_t id, kind akind, const std::vector<logical_tensor> &inputs,
       const std::vector<logical_tensor> &outputs,
       const std::string &verbose_name = "");

    void add_input(const logical_tensor &t);
    void add_inputs(const std::vector<logical_tensor> &ts);
    void add_output(const logical_tensor &t);
    void add_outputs(const std::vector<logical_tensor> &ts);

    /// Supported value types: std::string, int64_t, float, bool,
    /// std::vector<int64_t>, std::vector<float>.
    template <typename Type>
    op &set_attr(attr name, const Type &value);
    /// So that `set_attr(op::attr::auto_broadcast, "none")` works too.
    op &set_attr(attr name, const char *value);

    size_t get_id() const;
    kind get_kind() const;

    struct impl;

private:
    friend class graph;
    std::shared_ptr<impl> impl_;
};

/// Name of an op kind ("Select", ...).
const char *op_kind2str(op::kind k) noexcept;

class compiled_partition;

/// A part of the graph that the backend compiles and executes as a whole.
class partition {
public:
    enum class policy { fusion = 1, debug = 0 };

    partition() = default;

    bool is_supported() const;
    std::vector<size_t> get_ops() const;
    size_t get_ops_num() const;
    size_t get_id() const;
    engine::kind get_engine_kind() const;
    std::vector<logical_tensor> get_input_ports() const;
    std::vector<logical_tensor> get_output_ports() const;

    /// Infers the output shape, validates shapes and layouts, folds the
    /// broadcast pattern and gets (or JIT-generates) the kernel for it.
    compiled_partition compile(const std::vector<logical_tensor> &inputs,
                               const std::vector<logical_tensor> &outputs,
                               const engine &e) const;

    struct impl;

private:
    friend class graph;
    std::shared_ptr<const impl> impl_;
};

/// A data handle bound to a logical tensor and an engine.
class tensor {
public:
    tensor() = default;
    tensor(const logical_tensor &lt, const engine &aengine, void *handle);
    /// The library allocates the buffer (`lt.get_mem_size()` bytes, aligned
    /// to 64 bytes); it lives as long as the last copy of the tensor, and
    /// `set_data_handle` does not free it. Throws `invalid_arguments` for
    /// unknown dims and `out_of_memory` when the allocation fails.
    tensor(const logical_tensor &lt, const engine &aengine);

    /// A host scalar (a `host_scalar` logical tensor of one element): the
    /// value at `scalar` (`dtype` bytes) is copied into the tensor, which
    /// needs no engine. Throws `invalid_arguments` unless `lt` is a
    /// host_scalar of one element with a byte-sized type and `scalar` is
    /// not null.
    static tensor make_scalar_tensor(const logical_tensor &lt, void *scalar);

    void *get_data_handle() const { return handle_; }
    void set_data_handle(void *handle) { handle_ = handle; }
    engine get_engine() const { return engine_; }
    logical_tensor get_logical_tensor() const { return lt_; }

private:
    friend class compiled_partition; // checks tensors without copies
    logical_tensor lt_;
    engine engine_;
    void *handle_ = nullptr;
    std::shared_ptr<void> owned_; // the buffer the library allocated
};

/// A partition compiled for concrete shapes: immutable, and safe to execute
/// from many threads at once.
class compiled_partition {
public:
    compiled_partition() = default;

    /// The logical tensor of port `tid` as compiled: for dst, the inferred
    /// shape with dense strides (or the strides the user gave).
    logical_tensor query_logical_tensor(size_t tid) const;

    /// (input id, output id) pairs that may share one buffer.
    std::vector<std::pair<size_t, size_t>> get_inplace_ports() const;

    /// Runs the kernel. Tensors are matched to ports by logical tensor id.
    void execute(stream &astream, const std::vector<tensor> &inputs,
                 const std::vector<tensor> &outputs) const;

    struct impl;

private:
    friend class partition;
    std::shared_ptr<const impl> impl_;
};

/// A graph of ops, for one engine kind.
class graph {
public:
    explicit graph(engine::kind engine_kind);

    /// Validates the op against its schema (arity, data types, attributes)
    /// and adds it. Returns success, or throws when `allow_exception`;
    /// otherwise returns the failure status.
    status add_op(const op &aop, bool allow_exception = true);
    void finalize();
    bool is_finalized() const;
    std::vector<partition>
    get_partitions(partition::policy policy = partition::policy::fusion);

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

/// Instruction sets the dispatcher can use, as a cap (like `dnnl::cpu_isa`).
enum class cpu_isa {
    none = 0, ///< reference kernel only
    avx2 = 1,
    avx512_core = 2,
    isa_all = 3, ///< the best the CPU has (default)
};

/// Caps the instruction set the kernels may use. Like oneDNN, it must be
/// called before the first compile; later calls throw `invalid_arguments`
/// unless they ask for the cap already in force. The environment variable
/// `SELGRAPH_MAX_CPU_ISA` (`AVX512_CORE`, `AVX2`, `NONE`, `ALL`) sets the
/// same cap.
void set_max_cpu_isa(cpu_isa isa);

/// The best instruction set the kernels use on this CPU, given the cap.
cpu_isa get_effective_cpu_isa();

/// Kernel cache capacity (number of kernels), default 1024.
int get_kernel_cache_capacity();
void set_kernel_cache_capacity(int capacity);

} // namespace selgraph

#endif // SELGRAPH_SELGRAPH_HPP
