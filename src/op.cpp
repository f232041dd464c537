#include "op_impl.hpp"

namespace selgraph {

op::op(size_t id, kind akind, const std::string &verbose_name)
    : impl_(std::make_shared<impl>()) {
    impl_->id = id;
    impl_->kind = akind;
    impl_->name = verbose_name;
}

op::op(size_t id, kind akind, const std::vector<logical_tensor> &inputs,
       const std::vector<logical_tensor> &outputs,
       const std::string &verbose_name)
    : op(id, akind, verbose_name) {
    impl_->inputs = inputs;
    impl_->outputs = outputs;
}

void op::add_input(const logical_tensor &t) {
    impl_->inputs.push_back(t);
}
void op::add_inputs(const std::vector<logical_tensor> &ts) {
    impl_->inputs.insert(impl_->inputs.end(), ts.begin(), ts.end());
}
void op::add_output(const logical_tensor &t) {
    impl_->outputs.push_back(t);
}
void op::add_outputs(const std::vector<logical_tensor> &ts) {
    impl_->outputs.insert(impl_->outputs.end(), ts.begin(), ts.end());
}

size_t op::get_id() const {
    return impl_->id;
}
op::kind op::get_kind() const {
    return impl_->kind;
}

template <typename Type>
op &op::set_attr(attr name, const Type &value) {
    impl_->attrs[name] = value;
    return *this;
}

op &op::set_attr(attr name, const char *value) {
    return set_attr<std::string>(name, std::string(value ? value : ""));
}

template op &op::set_attr<std::string>(attr, const std::string &);
template op &op::set_attr<int64_t>(attr, const int64_t &);
template op &op::set_attr<float>(attr, const float &);
template op &op::set_attr<bool>(attr, const bool &);
template op &op::set_attr<std::vector<int64_t>>(attr,
                                                const std::vector<int64_t> &);
template op &op::set_attr<std::vector<float>>(attr, const std::vector<float> &);

const char *op_kind2str(op::kind k) noexcept {
    // clang-format off
#define SELGRAPH_KIND(x) case op::kind::x: return #x;
    switch (k) {
        SELGRAPH_KIND(Abs)
        SELGRAPH_KIND(AbsBackward)
        SELGRAPH_KIND(Add)
        SELGRAPH_KIND(AvgPool)
        SELGRAPH_KIND(AvgPoolBackward)
        SELGRAPH_KIND(BatchNormForwardTraining)
        SELGRAPH_KIND(BatchNormInference)
        SELGRAPH_KIND(BatchNormTrainingBackward)
        SELGRAPH_KIND(BiasAdd)
        SELGRAPH_KIND(BiasAddBackward)
        SELGRAPH_KIND(Clamp)
        SELGRAPH_KIND(ClampBackward)
        SELGRAPH_KIND(Concat)
        SELGRAPH_KIND(Convolution)
        SELGRAPH_KIND(ConvolutionBackwardData)
        SELGRAPH_KIND(ConvolutionBackwardWeights)
        SELGRAPH_KIND(ConvTranspose)
        SELGRAPH_KIND(ConvTransposeBackwardData)
        SELGRAPH_KIND(ConvTransposeBackwardWeights)
        SELGRAPH_KIND(Dequantize)
        SELGRAPH_KIND(Divide)
        SELGRAPH_KIND(DynamicDequantize)
        SELGRAPH_KIND(DynamicQuantize)
        SELGRAPH_KIND(Elu)
        SELGRAPH_KIND(EluBackward)
        SELGRAPH_KIND(End)
        SELGRAPH_KIND(Exp)
        SELGRAPH_KIND(GELU)
        SELGRAPH_KIND(GELUBackward)
        SELGRAPH_KIND(HardSigmoid)
        SELGRAPH_KIND(HardSigmoidBackward)
        SELGRAPH_KIND(HardSwish)
        SELGRAPH_KIND(HardSwishBackward)
        SELGRAPH_KIND(Interpolate)
        SELGRAPH_KIND(InterpolateBackward)
        SELGRAPH_KIND(LayerNorm)
        SELGRAPH_KIND(LayerNormBackward)
        SELGRAPH_KIND(LeakyReLU)
        SELGRAPH_KIND(Log)
        SELGRAPH_KIND(LogSoftmax)
        SELGRAPH_KIND(LogSoftmaxBackward)
        SELGRAPH_KIND(MatMul)
        SELGRAPH_KIND(Maximum)
        SELGRAPH_KIND(MaxPool)
        SELGRAPH_KIND(MaxPoolBackward)
        SELGRAPH_KIND(Minimum)
        SELGRAPH_KIND(Mish)
        SELGRAPH_KIND(MishBackward)
        SELGRAPH_KIND(Multiply)
        SELGRAPH_KIND(Pow)
        SELGRAPH_KIND(PReLU)
        SELGRAPH_KIND(PReLUBackward)
        SELGRAPH_KIND(Quantize)
        SELGRAPH_KIND(Reciprocal)
        SELGRAPH_KIND(ReduceL1)
        SELGRAPH_KIND(ReduceL2)
        SELGRAPH_KIND(ReduceMax)
        SELGRAPH_KIND(ReduceMean)
        SELGRAPH_KIND(ReduceMin)
        SELGRAPH_KIND(ReduceProd)
        SELGRAPH_KIND(ReduceSum)
        SELGRAPH_KIND(ReLU)
        SELGRAPH_KIND(ReLUBackward)
        SELGRAPH_KIND(Reorder)
        SELGRAPH_KIND(Round)
        SELGRAPH_KIND(Select)
        SELGRAPH_KIND(Sigmoid)
        SELGRAPH_KIND(SigmoidBackward)
        SELGRAPH_KIND(SoftMax)
        SELGRAPH_KIND(SoftMaxBackward)
        SELGRAPH_KIND(SoftPlus)
        SELGRAPH_KIND(SoftPlusBackward)
        SELGRAPH_KIND(Sqrt)
        SELGRAPH_KIND(SqrtBackward)
        SELGRAPH_KIND(Square)
        SELGRAPH_KIND(SquaredDifference)
        SELGRAPH_KIND(StaticReshape)
        SELGRAPH_KIND(StaticTranspose)
        SELGRAPH_KIND(Subtract)
        SELGRAPH_KIND(Tanh)
        SELGRAPH_KIND(TanhBackward)
        SELGRAPH_KIND(TypeCast)
        SELGRAPH_KIND(Wildcard)
        SELGRAPH_KIND(GenIndex)
        SELGRAPH_KIND(GreaterEqual)
        SELGRAPH_KIND(GroupNorm)
        SELGRAPH_KIND(RMSNorm)
        SELGRAPH_KIND(LastSymbol)
    }
#undef SELGRAPH_KIND
    // clang-format on
    return "unknown";
}

namespace impl {

const char *attr2str(op::attr a) {
    // clang-format off
#define SELGRAPH_ATTR(x) case op::attr::x: return #x;
    switch (a) {
        SELGRAPH_ATTR(undef)
        SELGRAPH_ATTR(alpha)
        SELGRAPH_ATTR(beta)
        SELGRAPH_ATTR(epsilon)
        SELGRAPH_ATTR(max)
        SELGRAPH_ATTR(min)
        SELGRAPH_ATTR(momentum)
        SELGRAPH_ATTR(scales)
        SELGRAPH_ATTR(axis)
        SELGRAPH_ATTR(begin_norm_axis)
        SELGRAPH_ATTR(groups)
        SELGRAPH_ATTR(axes)
        SELGRAPH_ATTR(dilations)
        SELGRAPH_ATTR(dst_shape)
        SELGRAPH_ATTR(kernel)
        SELGRAPH_ATTR(order)
        SELGRAPH_ATTR(output_padding)
        SELGRAPH_ATTR(pads_begin)
        SELGRAPH_ATTR(pads_end)
        SELGRAPH_ATTR(shape)
        SELGRAPH_ATTR(sizes)
        SELGRAPH_ATTR(src_shape)
        SELGRAPH_ATTR(strides)
        SELGRAPH_ATTR(weights_shape)
        SELGRAPH_ATTR(zps)
        SELGRAPH_ATTR(group_shape)
        SELGRAPH_ATTR(exclude_pad)
        SELGRAPH_ATTR(keep_dims)
        SELGRAPH_ATTR(keep_stats)
        SELGRAPH_ATTR(per_channel_broadcast)
        SELGRAPH_ATTR(special_zero)
        SELGRAPH_ATTR(transpose_a)
        SELGRAPH_ATTR(transpose_b)
        SELGRAPH_ATTR(use_affine)
        SELGRAPH_ATTR(use_dst)
        SELGRAPH_ATTR(auto_broadcast)
        SELGRAPH_ATTR(auto_pad)
        SELGRAPH_ATTR(coordinate_transformation_mode)
        SELGRAPH_ATTR(data_format)
        SELGRAPH_ATTR(mode)
        SELGRAPH_ATTR(qtype)
        SELGRAPH_ATTR(rounding_type)
        SELGRAPH_ATTR(weights_format)
    }
#undef SELGRAPH_ATTR
    // clang-format on
    return "unknown";
}

} // namespace impl
} // namespace selgraph
