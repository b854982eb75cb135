// ONNX operators that kiln reads as others, each in its newest version (version_adapters.cpp brings
// older ones there): Upsample as Resize, Dropout (inference) as Identity, the Reduce operators kiln
// has no kernel of as ReduceSum / ReduceMax with their pointwise neighbours, and (in
// import_rewrites_nn.cpp) RMSNormalization and the two loss operators.
#include "onnx/import_rewrites.h"

#include <fmt/format.h>

#include <string_view>

#include "support/error.h"

namespace kiln {
namespace rewrites {

ValueId add(OnnxGraphReader& b, const NodeForm& n, OpKind op, std::vector<ValueId> inputs, const std::string& what,
            AttrMap attrs, const std::string& out) {
  std::string name = out.empty() ? b.unique_name(n.name + "_" + what) : out;
  NodeId id = b.add_node(op, std::move(inputs), {name}, b.unique_name(n.name + "_" + what + "_node"), std::move(attrs));
  return b.graph().nodes[static_cast<size_t>(id)].outputs[0];
}

AttrMap one_attr(const char* name, Attribute a) {
  AttrMap m;
  m[name] = std::move(a);
  return m;
}

ValueId cast_to(OnnxGraphReader& b, const NodeForm& n, ValueId x, DType to, const std::string& out) {
  return add(b, n, OpKind::Cast, {x}, "cast", one_attr("to", Attribute{std::string(dtype_name(to))}), out);
}

void need_io(const NodeForm& n) {
  if (!n.has_output(0)) user_error("{}: output 0 is missing", n.desc());
  if (!n.has_input(0)) user_error("{}: input 0 is missing", n.desc());
}

ValueId int_scalar_like(OnnxGraphReader& b, const std::string& base, int64_t v, ValueId like) {
  ValueId c = b.graph().add_constant(b.unique_name(base), Tensor::scalar(DType::i64, v));
  if (b.known_dtype(like) == DType::i64) return c;
  NodeId n = b.add_node(OpKind::CastLike, {c, like}, {b.unique_name(base + "_like")}, b.unique_name(base + "_cast"), {});
  return b.graph().nodes[static_cast<size_t>(n)].outputs[0];
}

}  // namespace rewrites

namespace {

using namespace rewrites;

// Upsample-9 is Resize with asymmetric coordinates, nearest rounding down: out[i] = in[floor(i / scale)].
void upsample(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (n.inputs.size() != 2 || !n.has_input(1)) user_error("{}: takes two inputs (X, scales)", n.desc());
  AttrMap attrs;
  std::string mode = "nearest";
  if (auto it = n.attrs.find("mode"); it != n.attrs.end()) {
    const auto* s = std::get_if<std::string>(&it->second.value);
    if (!s) user_error("{}: attribute 'mode' must be a string", n.desc());
    mode = *s;
  }
  if (mode != "nearest" && mode != "linear") unsupported("{}: mode '{}' is not supported (nearest, linear)", n.desc(), mode);
  attrs["mode"] = Attribute{mode};
  attrs["coordinate_transformation_mode"] = Attribute{std::string("asymmetric")};
  attrs["nearest_mode"] = Attribute{std::string("floor")};
  b.add_node(OpKind::Resize, {n.inputs[0], kNoValue, n.inputs[1]}, {n.outputs[0]}, n.name, std::move(attrs));
}

// Dropout in inference, or in training with ratio 0: the output is the input and the mask all true.
// Training with another ratio drops at random, which kiln does not do; where training_mode or ratio is
// known only at run time, kiln's Dropout node checks them then (src/ops/shape/dropout.cpp).
void dropout(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  auto constant = [&](size_t i) -> const Tensor* {
    const Tensor* t = n.has_input(i) ? b.graph().value(n.inputs[i]).constant.get() : nullptr;
    return t && t->numel() == 1 ? t : nullptr;
  };
  const Tensor *mode = constant(2), *ratio = constant(1);
  if (n.has_input(2) && !(mode && mode->as_double(0) == 0)) {  // training, or maybe
    if (mode && (!n.has_input(1) || (ratio && ratio->as_double(0) != 0)))  // ratio 0.5 when omitted
      unsupported("{}: training_mode is true and ratio is not 0 (random dropout is not supported; kiln runs Dropout in "
                  "training mode only with ratio 0)", n.desc());
    if (!mode || !ratio) {
      b.add_node(OpKind::Dropout, n.inputs, n.outputs, n.name, {});
      return;
    }
  }
  b.add_node(OpKind::Identity, {n.inputs[0]}, {n.outputs[0]}, n.name, {});
  if (n.has_output(1)) {
    ValueId shape = add(b, n, OpKind::Shape, {n.inputs[0]}, "shape");
    Tensor one = Tensor::empty(DType::boolean, {1});
    *static_cast<uint8_t*>(one.raw()) = 1;
    AttrMap attrs;
    attrs["value"] = Attribute{std::move(one)};
    add(b, n, OpKind::ConstantOfShape, {shape}, "mask", std::move(attrs), n.outputs[1]);
  }
}

// The attributes and axes of a Reduce node, for the ReduceSum / ReduceMax it becomes.
struct ReduceParts {
  ValueId axes = kNoValue;
  AttrMap attrs;  // keepdims, noop_with_empty_axes
};

ReduceParts reduce_parts(NodeForm& n) {
  need_io(n);
  if (n.inputs.size() > 2) user_error("{}: takes at most two inputs (data, axes)", n.desc());
  ReduceParts p;
  if (n.has_input(1)) p.axes = n.inputs[1];
  for (const char* a : {"keepdims", "noop_with_empty_axes"})
    if (n.attrs.count(a)) p.attrs[a] = Attribute{n.int_attr(a, 0)};
  for (const auto& [name, _] : n.attrs)
    if (name != "keepdims" && name != "noop_with_empty_axes") user_error("{}: unknown attribute '{}'", n.desc(), name);
  return p;
}

ValueId reduce(OnnxGraphReader& b, NodeForm& n, OpKind op, ValueId x, const ReduceParts& p,
               const std::string& out = {}, std::optional<int64_t> keepdims = {}) {
  AttrMap attrs = p.attrs;
  if (keepdims) attrs["keepdims"] = Attribute{*keepdims};
  std::vector<ValueId> in{x};
  if (p.axes != kNoValue) in.push_back(p.axes);
  return add(b, n, op, std::move(in), out.empty() ? "reduce" : "out", std::move(attrs), out);
}

void reduce_sum_square(OnnxGraphReader& b, NodeForm& n) {
  ReduceParts p = reduce_parts(n);
  ValueId sq = add(b, n, OpKind::Mul, {n.inputs[0], n.inputs[0]}, "square");
  reduce(b, n, OpKind::ReduceSum, sq, p, n.outputs[0]);
}

void reduce_l1(OnnxGraphReader& b, NodeForm& n) {
  ReduceParts p = reduce_parts(n);
  ValueId abs = add(b, n, OpKind::Abs, {n.inputs[0]}, "abs");
  reduce(b, n, OpKind::ReduceSum, abs, p, n.outputs[0]);
}

void reduce_l2(OnnxGraphReader& b, NodeForm& n) {
  ReduceParts p = reduce_parts(n);
  ValueId sq = add(b, n, OpKind::Mul, {n.inputs[0], n.inputs[0]}, "square");
  ValueId sum = reduce(b, n, OpKind::ReduceSum, sq, p);
  add(b, n, OpKind::Sqrt, {sum}, "sqrt", {}, n.outputs[0]);
}

void reduce_log_sum(OnnxGraphReader& b, NodeForm& n) {
  ReduceParts p = reduce_parts(n);
  ValueId sum = reduce(b, n, OpKind::ReduceSum, n.inputs[0], p);
  add(b, n, OpKind::Log, {sum}, "log", {}, n.outputs[0]);
}

// log(sum(exp(x - m))) + m with m the maximum (0 where it is infinite), so that exp cannot overflow.
void reduce_log_sum_exp(OnnxGraphReader& b, NodeForm& n) {
  ReduceParts p = reduce_parts(n);
  ValueId x = n.inputs[0];
  ValueId m = reduce(b, n, OpKind::ReduceMax, x, p, {}, 1);
  ValueId inf = add(b, n, OpKind::IsInf, {m}, "max_inf");
  ValueId zero = b.scalar_like(n.name + "_zero", 0.0, x);
  ValueId m0 = add(b, n, OpKind::Where, {inf, zero, m}, "max_finite");
  ValueId e = add(b, n, OpKind::Exp, {add(b, n, OpKind::Sub, {x, m0}, "shifted")}, "exp");
  ValueId lse = add(b, n, OpKind::Log, {reduce(b, n, OpKind::ReduceSum, e, p)}, "log");
  ValueId m_out = n.int_attr("keepdims", 1) ? m0 : reduce(b, n, OpKind::ReduceMax, m0, p);
  add(b, n, OpKind::Add, {lse, m_out}, "add", {}, n.outputs[0]);
}

constexpr RewriteRow kRewrites[] = {
    {"Attention", attention_rewrite},
    {"BatchNormalization", batch_normalization},
    {"Dropout", dropout},
    {"GroupNormalization", group_normalization},
    {"InstanceNormalization", instance_normalization},
    {"LRN", lrn},
    {"NegativeLogLikelihoodLoss", negative_log_likelihood_loss},
    {"RMSNormalization", rms_normalization},
    {"ReduceL1", reduce_l1},
    {"ReduceL2", reduce_l2},
    {"ReduceLogSum", reduce_log_sum},
    {"ReduceLogSumExp", reduce_log_sum_exp},
    {"ReduceSumSquare", reduce_sum_square},
    {"SoftmaxCrossEntropyLoss", softmax_cross_entropy_loss},
    {"Upsample", upsample},
};

const RewriteRow* find_rewrite(std::string_view op) {
  for (const RewriteRow& r : kRewrites)
    if (r.op == op) return &r;
  for (const RewriteRow& r : math_rewrites())
    if (r.op == op) return &r;
  for (const RewriteRow& r : shape_rewrites())
    if (r.op == op) return &r;
  for (const RewriteRow& r : quantize_rewrites())
    if (r.op == op) return &r;
  for (const RewriteRow& r : recurrent_rewrites())
    if (r.op == op) return &r;
  for (const RewriteRow& r : einsum_rewrites())
    if (r.op == op) return &r;
  for (const RewriteRow& r : crop_rotary_rewrites())
    if (r.op == op) return &r;
  for (const RewriteRow& r : dft_rewrites())
    if (r.op == op) return &r;
  return nullptr;
}

// The other domains kiln reads operators of, and from which opset of the domain.
struct DomainRows {
  std::string_view domain;
  int since;
  std::span<const RewriteRow> (*rows)();
};
constexpr DomainRows kDomains[] = {
    {"ai.onnx.preview.training", 1, training_rewrites},
};

const RewriteRow* find_domain_rewrite(std::string_view domain, std::string_view op, int* since) {
  for (const DomainRows& d : kDomains) {
    if (d.domain != domain) continue;
    for (const RewriteRow& r : d.rows())
      if (r.op == op) {
        if (since) *since = d.since;
        return &r;
      }
  }
  return nullptr;
}

}  // namespace

bool is_rewritten_op(std::string_view op_type) { return find_rewrite(op_type) != nullptr; }

int domain_op_since(std::string_view domain, std::string_view op_type) {
  int since = 0;
  return find_domain_rewrite(domain, op_type, &since) ? since : 0;
}

bool add_rewritten_node(OnnxGraphReader& b, NodeForm& n) {
  const RewriteRow* r = n.domain.empty() ? find_rewrite(n.op_type) : find_domain_rewrite(n.domain, n.op_type, nullptr);
  if (!r) return false;
  r->rewrite(b, n);
  return true;
}

}  // namespace kiln
