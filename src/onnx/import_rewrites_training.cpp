// The optimizer operators of ai.onnx.preview.training (version 1): Adagrad, Adam and Momentum, each
// one step of its update rule over N tensors, read as the pointwise chain of its definition. R (the
// learning rate) and T (the step count) are scalars; the tensors follow as N X's, N G's, then the
// optimizer's state (N H's; N V's; N V's and N H's), and the outputs are the new X's, then the new state.
#include <fmt/format.h>

#include "onnx/import_rewrites.h"
#include "support/error.h"

namespace kiln::rewrites {
namespace {

// One optimizer node: its scalars cast to the tensors' type, and constants of that type.
struct Step {
  OnnxGraphReader& b;
  const NodeForm& n;
  size_t count;  // N

  ValueId op(OpKind kind, std::vector<ValueId> in, const std::string& out = {}) {
    return add(b, n, kind, std::move(in), std::string(op_name(kind)), {}, out);
  }
  ValueId like(ValueId v, ValueId x) { return op(OpKind::CastLike, {v, x}); }
  ValueId c(double v, ValueId x) { return b.scalar_like(n.name + "_c", v, x); }
  // norm * X + G: the gradient of 0.5 * norm * ||X||^2 added.
  ValueId regularized(ValueId x, ValueId g, double norm) {
    return norm == 0 ? g : op(OpKind::Add, {op(OpKind::Mul, {c(norm, x), x}), g});
  }
  ValueId input(size_t group, size_t i) const { return n.inputs[2 + group * count + i]; }
  const std::string& output(size_t group, size_t i) const { return n.outputs[group * count + i]; }
};

// Checks the input and output counts (2 + groups_in * N inputs, groups_out * N outputs) and returns N.
size_t tensor_count(const NodeForm& n, size_t groups_in, size_t groups_out) {
  const size_t tensors = n.inputs.size() >= 2 ? n.inputs.size() - 2 : 0;
  if (tensors == 0 || tensors % groups_in != 0)
    user_error("{}: needs R, T and {} groups of tensors, it has {} inputs", n.desc(), groups_in, n.inputs.size());
  const size_t count = tensors / groups_in;
  if (n.outputs.size() != groups_out * count)
    user_error("{}: {} tensors need {} outputs, it has {}", n.desc(), count, groups_out * count, n.outputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (!n.has_input(i)) user_error("{}: input {} is missing", n.desc(), i);
  return count;
}

// T > 0 as a bool scalar.
ValueId step_taken(Step& s) { return s.op(OpKind::Greater, {s.n.inputs[1], int_scalar_like(s.b, s.n.name + "_zero", 0, s.n.inputs[1])}); }

void emit_output(Step& s, size_t group, size_t i, ValueId value) {
  if (s.output(group, i).empty()) return;
  s.op(OpKind::Identity, {value}, s.output(group, i));
}

// r = R / (1 + T * decay_factor); H' = H + g^2; X' = X - r * g / (sqrt(H') + epsilon), g regularized.
void adagrad(OnnxGraphReader& b, NodeForm& n) {
  Step s{b, n, tensor_count(n, 3, 2)};
  const double decay = n.float_attr("decay_factor", 0), epsilon = n.float_attr("epsilon", 0),
               norm = n.float_attr("norm_coefficient", 0);
  for (size_t i = 0; i < s.count; ++i) {
    const ValueId x = s.input(0, i), g = s.regularized(x, s.input(1, i), norm), h = s.input(2, i);
    const ValueId t = s.like(n.inputs[1], x);
    const ValueId r = s.op(OpKind::Div, {s.like(n.inputs[0], x),
                                         s.op(OpKind::Add, {s.c(1, x), s.op(OpKind::Mul, {t, s.c(decay, x)})})});
    const ValueId h_new = s.op(OpKind::Add, {h, s.op(OpKind::Mul, {g, g})});
    const ValueId h_sqrt = s.op(OpKind::Add, {s.op(OpKind::Sqrt, {h_new}), s.c(epsilon, x)});
    emit_output(s, 0, i, s.op(OpKind::Sub, {x, s.op(OpKind::Div, {s.op(OpKind::Mul, {r, g}), h_sqrt})}));
    emit_output(s, 1, i, h_new);
  }
}

// V' = alpha V + (1 - alpha) g; H' = beta H + (1 - beta) g^2; r = R sqrt(1 - beta^T) / (1 - alpha^T)
// where T > 0, else R; X' = (1 - norm_post) (X - r V' / (sqrt(H') + epsilon)).
void adam(OnnxGraphReader& b, NodeForm& n) {
  Step s{b, n, tensor_count(n, 4, 3)};
  const double alpha = n.float_attr("alpha", 0.9), beta = n.float_attr("beta", 0.999),
               epsilon = n.float_attr("epsilon", 0), norm = n.float_attr("norm_coefficient", 0),
               norm_post = n.float_attr("norm_coefficient_post", 0);
  const ValueId taken = step_taken(s);
  for (size_t i = 0; i < s.count; ++i) {
    const ValueId x = s.input(0, i), g = s.regularized(x, s.input(1, i), norm);
    const ValueId v = s.input(2, i), h = s.input(3, i);
    const ValueId v_new = s.op(OpKind::Add, {s.op(OpKind::Mul, {s.c(alpha, x), v}), s.op(OpKind::Mul, {s.c(1 - alpha, x), g})});
    const ValueId h_new = s.op(OpKind::Add, {s.op(OpKind::Mul, {s.c(beta, x), h}),
                                             s.op(OpKind::Mul, {s.c(1 - beta, x), s.op(OpKind::Mul, {g, g})})});
    const ValueId h_sqrt = s.op(OpKind::Add, {s.op(OpKind::Sqrt, {h_new}), s.c(epsilon, x)});
    const ValueId t = s.like(n.inputs[1], x), r = s.like(n.inputs[0], x);
    const ValueId one = s.c(1, x);
    const ValueId corrected = s.op(OpKind::Div, {s.op(OpKind::Mul, {r, s.op(OpKind::Sqrt, {s.op(OpKind::Sub, {one, s.op(OpKind::Pow, {s.c(beta, x), t})})})}),
                                                 s.op(OpKind::Sub, {one, s.op(OpKind::Pow, {s.c(alpha, x), t})})});
    const ValueId r_adjusted = s.op(OpKind::Where, {taken, corrected, r});
    ValueId x_new = s.op(OpKind::Sub, {x, s.op(OpKind::Mul, {r_adjusted, s.op(OpKind::Div, {v_new, h_sqrt})})});
    if (norm_post != 0) x_new = s.op(OpKind::Mul, {s.c(1 - norm_post, x), x_new});
    emit_output(s, 0, i, x_new);
    emit_output(s, 1, i, v_new);
    emit_output(s, 2, i, h_new);
  }
}

// V' = alpha V + beta' g with beta' = beta where T > 0, else 1; X' = X - R V' (standard) or
// X - R (g + alpha V') (nesterov).
void momentum(OnnxGraphReader& b, NodeForm& n) {
  Step s{b, n, tensor_count(n, 3, 2)};
  for (const char* required : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!n.attrs.count(required)) user_error("{}: attribute '{}' is required", n.desc(), required);
  const double alpha = n.float_attr("alpha", 0), beta = n.float_attr("beta", 0),
               norm = n.float_attr("norm_coefficient", 0);
  const std::string mode = n.string_attr("mode", "");
  if (mode != "standard" && mode != "nesterov") user_error("{}: mode '{}' is not standard or nesterov", n.desc(), mode);
  const ValueId taken = step_taken(s);
  for (size_t i = 0; i < s.count; ++i) {
    const ValueId x = s.input(0, i), g = s.regularized(x, s.input(1, i), norm), v = s.input(2, i);
    const ValueId beta_adjusted = s.op(OpKind::Where, {taken, s.c(beta, x), s.c(1, x)});
    const ValueId v_new = s.op(OpKind::Add, {s.op(OpKind::Mul, {s.c(alpha, x), v}), s.op(OpKind::Mul, {beta_adjusted, g})});
    const ValueId step = mode == "standard" ? v_new : s.op(OpKind::Add, {g, s.op(OpKind::Mul, {s.c(alpha, x), v_new})});
    emit_output(s, 0, i, s.op(OpKind::Sub, {x, s.op(OpKind::Mul, {s.like(n.inputs[0], x), step})}));
    emit_output(s, 1, i, v_new);
  }
}

constexpr RewriteRow kTraining[] = {
    {"Adagrad", adagrad},
    {"Adam", adam},
    {"Momentum", momentum},
};

}  // namespace

std::span<const RewriteRow> training_rewrites() { return kTraining; }

}  // namespace kiln::rewrites
