// The version steps that take code: attributes that became inputs, Softmax's change of meaning,
// Resize-10's coordinates, the training-only parts of older BatchNormalization and Dropout.
#include "onnx/legacy_rewrites.h"

#include <fmt/format.h>

#include "support/error.h"

namespace kiln::legacy {

void axes_to_input(OnnxGraphReader& b, NodeForm& n) { n.attr_to_input(b, "axes", 1); }

void split_to_input(OnnxGraphReader& b, NodeForm& n) { n.attr_to_input(b, "split", 1); }

// Before 18, no 'split' meant equal parts, one per output; 18 says so with num_outputs.
void split_num_outputs(OnnxGraphReader&, NodeForm& n) {
  if (!n.has_input(1) && !n.attrs.count("num_outputs"))
    n.attrs["num_outputs"] = Attribute{static_cast<int64_t>(n.outputs.size())};
}

void slice_attrs_to_inputs(OnnxGraphReader& b, NodeForm& n) {
  if (n.inputs.size() > 1) user_error("{}: takes one input (starts, ends and axes are attributes)", n.desc());
  if (!n.attrs.count("starts") || !n.attrs.count("ends"))
    user_error("{}: attributes 'starts' and 'ends' are required", n.desc());
  n.attr_to_input(b, "starts", 1);
  n.attr_to_input(b, "ends", 2);
  n.attr_to_input(b, "axes", 3);
}

void clip_attrs_to_inputs(OnnxGraphReader& b, NodeForm& n) {
  if (n.inputs.size() > 1) user_error("{}: takes one input (min and max are attributes)", n.desc());
  n.float_attr_to_input(b, "min", 1);
  n.float_attr_to_input(b, "max", 2);
}

void topk_k_to_input(OnnxGraphReader& b, NodeForm& n) {
  if (n.inputs.size() > 1) user_error("{}: takes one input (k is an attribute)", n.desc());
  auto it = n.attrs.find("k");
  if (it == n.attrs.end()) user_error("{}: attribute 'k' is required", n.desc());
  const auto* k = std::get_if<int64_t>(&it->second.value);
  if (!k) user_error("{}: attribute 'k' must be an integer", n.desc());
  n.inputs.resize(2, kNoValue);
  n.inputs[1] = b.constant_i64(fmt::format("{}_k", n.name), {*k});
  n.attrs.erase(it);
}

void dft_axis_to_input(OnnxGraphReader& b, NodeForm& n) {
  const int64_t axis = n.int_attr("axis", 1);  // 17's default; 20's (absent input) is -2
  n.attrs.erase("axis");
  n.inputs.resize(3, kNoValue);
  n.inputs[2] = b.graph().add_constant(b.unique_name(n.name + "_axis"), Tensor::scalar(DType::i64, axis));
}

void pad_attrs_to_inputs(OnnxGraphReader& b, NodeForm& n) {
  if (n.inputs.size() > 1) user_error("{}: takes one input (pads and value are attributes)", n.desc());
  if (!n.attrs.count("pads")) user_error("{}: attribute 'pads' is required", n.desc());
  n.attr_to_input(b, "pads", 1);
  n.float_attr_to_input(b, "value", 2);
}

// Softmax/LogSoftmax before opset 13 normalise over all dims from `axis` on (the input seen as 2-D).
// When `axis` is the last axis this is the opset-13 meaning; otherwise rewrite as
// Flatten(X, axis) -> op(axis=-1) -> Reshape(Shape(X)).
void softmax_single_axis(OnnxGraphReader& b, NodeForm& n) {
  int64_t axis = n.int_attr("axis", 1);
  n.attrs["axis"] = Attribute{int64_t{-1}};
  if (!n.has_input(0) || !n.has_output(0)) return;  // malformed: shape inference reports it
  ValueId x = n.inputs[0];
  std::optional<int> rank = b.known_rank(x);
  if (rank && *rank > 0 && (axis == *rank - 1 || axis == -1)) return;
  AttrMap flatten_attrs;
  flatten_attrs["axis"] = Attribute{axis};
  std::string flat = b.unique_name(n.name + "_flat");
  NodeId f = b.add_node(OpKind::Flatten, {x}, {flat}, b.unique_name(n.name + "_flatten"), std::move(flatten_attrs));
  n.inputs[0] = b.graph().nodes[static_cast<size_t>(f)].outputs[0];
  std::string out = n.outputs[0], normed = b.unique_name(n.name + "_2d");
  n.outputs[0] = normed;
  std::string name = n.name;
  n.then.push_back([x, normed, out, name](OnnxGraphReader& r) {
    std::string shape = r.unique_name(name + "_shape");
    NodeId sh = r.add_node(OpKind::Shape, {x}, {shape}, r.unique_name(name + "_shape_of"), {});
    ValueId shape_id = r.graph().nodes[static_cast<size_t>(sh)].outputs[0];
    r.add_node(OpKind::Reshape, {*r.find(normed), shape_id}, {out}, r.unique_name(name + "_reshape"), {});
  });
}

// Resize-10 is Upsample-9 under a new name: (X, scales), asymmetric coordinates, nearest rounds down.
void resize_roi_input(OnnxGraphReader&, NodeForm& n) {
  if (n.inputs.size() != 2) user_error("{}: takes two inputs (X, scales), got {}", n.desc(), n.inputs.size());
  n.inputs = {n.inputs[0], kNoValue, n.inputs[1]};
  n.attrs["coordinate_transformation_mode"] = Attribute{std::string("asymmetric")};
  n.attrs["nearest_mode"] = Attribute{std::string("floor")};
}

void batchnorm_no_spatial(OnnxGraphReader&, NodeForm& n) {
  if (n.int_attr("spatial", 1) != 1) unsupported("{}: spatial=0 (statistics per element) is not supported", n.desc());
  n.attrs.erase("spatial");
}

// Before 14 the outputs after Y were the training statistics; kiln runs inference only.
void batchnorm_inference(OnnxGraphReader&, NodeForm& n) {
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.has_output(i)) unsupported("{}: the training outputs (mean, var, saved statistics) are not supported", n.desc());
  n.outputs.resize(1);
}

void upsample_scales_input(OnnxGraphReader& b, NodeForm& n) {
  auto it = n.attrs.find("scales");
  if (it == n.attrs.end()) user_error("{}: attribute 'scales' is required", n.desc());
  const auto* scales = std::get_if<std::vector<double>>(&it->second.value);
  if (!scales) user_error("{}: attribute 'scales' must be a list of floats", n.desc());
  if (n.inputs.size() != 1) user_error("{}: takes one input (scales is an attribute)", n.desc());
  std::vector<float> f(scales->begin(), scales->end());
  Tensor t = Tensor::from_vector<float>(DType::f32, {static_cast<int64_t>(f.size())}, f);
  n.inputs.push_back(b.graph().add_constant(b.unique_name(n.name + "_scales"), std::move(t)));
  n.attrs.erase(it);
}

// Dropout's mask had the input's type before 10; a mask that is used is not converted.
void dropout_bool_mask(OnnxGraphReader&, NodeForm& n) {
  if (n.has_output(1)) unsupported("{}: the mask output of Dropout before opset 10 (of the input's type) is not supported", n.desc());
}

void dropout_ratio_input(OnnxGraphReader& b, NodeForm& n) {
  auto it = n.attrs.find("ratio");
  if (it == n.attrs.end()) return;
  const auto* v = std::get_if<double>(&it->second.value);
  if (!v) user_error("{}: attribute 'ratio' must be a float", n.desc());
  if (n.inputs.size() > 1) user_error("{}: takes one input (ratio is an attribute)", n.desc());
  n.inputs.push_back(b.graph().add_constant(b.unique_name(n.name + "_ratio"), Tensor::scalar(DType::f32, static_cast<float>(*v))));
  n.attrs.erase(it);
}

// Scan-8 scans axis 1 of inputs with a leading batch axis, each batch entry on its own (its length
// from the optional sequence_lens, kiln's Scan's input 0); its `directions` are 9's
// scan_input_directions. Kiln's Scan keeps that form under the attribute batch_major = 1.
void scan_batch_major(OnnxGraphReader&, NodeForm& n) {
  if (auto it = n.attrs.find("directions"); it != n.attrs.end()) {
    n.attrs["scan_input_directions"] = it->second;
    n.attrs.erase(it);
  }
  n.attrs["batch_major"] = Attribute{int64_t{1}};
}

// GridSample-16 names its modes bilinear, nearest and bicubic; 20 calls them linear, nearest and cubic
// (and takes any number of spatial dims).
void grid_sample_mode_names(OnnxGraphReader&, NodeForm& n) {
  const std::string mode = n.string_attr("mode", "bilinear");
  const char* renamed = mode == "bilinear" ? "linear" : mode == "bicubic" ? "cubic" : mode == "nearest" ? "nearest" : nullptr;
  if (!renamed) user_error("{}: unknown mode '{}' (expected bilinear, nearest or bicubic)", n.desc(), mode);
  n.attrs["mode"] = Attribute{std::string(renamed)};
}

// RoiAlign-10 shifts only the output samples by half a pixel; 16 names that mode and defaults to
// half_pixel.
void roi_align_output_half_pixel(OnnxGraphReader&, NodeForm& n) {
  n.attrs["coordinate_transformation_mode"] = Attribute{std::string("output_half_pixel")};
}

}  // namespace kiln::legacy
