// The version steps of the importer that take code rather than a row of data: each brings one
// operator's form of the version before to the form of the version it is registered for
// (version_adapters.cpp holds the table).
#pragma once
#include "onnx/graph_reader.h"

namespace kiln::legacy {

void axes_to_input(OnnxGraphReader& b, NodeForm& n);     // attribute 'axes' -> input 1
void split_to_input(OnnxGraphReader& b, NodeForm& n);    // Split-13: attribute 'split' -> input 1
void split_num_outputs(OnnxGraphReader& b, NodeForm& n); // Split-18: no sizes means num_outputs parts
void slice_attrs_to_inputs(OnnxGraphReader& b, NodeForm& n);  // Slice-10: starts, ends, axes -> inputs
void clip_attrs_to_inputs(OnnxGraphReader& b, NodeForm& n);   // Clip-11: min, max -> inputs
void pad_attrs_to_inputs(OnnxGraphReader& b, NodeForm& n);    // Pad-11: pads, value -> inputs
void topk_k_to_input(OnnxGraphReader& b, NodeForm& n);        // TopK-10: k -> input K
void dft_axis_to_input(OnnxGraphReader& b, NodeForm& n);      // DFT-20: axis -> input 2 (17's default 1)
void softmax_single_axis(OnnxGraphReader& b, NodeForm& n);    // Softmax/LogSoftmax-13: one axis
void resize_roi_input(OnnxGraphReader& b, NodeForm& n);       // Resize-11: roi input, Upsample's coordinates
void batchnorm_no_spatial(OnnxGraphReader& b, NodeForm& n);   // BatchNormalization-9: no 'spatial'
void batchnorm_inference(OnnxGraphReader& b, NodeForm& n);    // BatchNormalization-14: training_mode
void upsample_scales_input(OnnxGraphReader& b, NodeForm& n);  // Upsample-9: scales as input 1
void dropout_bool_mask(OnnxGraphReader& b, NodeForm& n);      // Dropout-10: the mask is bool
void dropout_ratio_input(OnnxGraphReader& b, NodeForm& n);    // Dropout-12: ratio as input 1
void grid_sample_mode_names(OnnxGraphReader& b, NodeForm& n); // GridSample-20: bilinear -> linear, ...
void scan_batch_major(OnnxGraphReader& b, NodeForm& n);       // Scan-9: no batch axis, directions renamed
void roi_align_output_half_pixel(OnnxGraphReader& b, NodeForm& n);  // RoiAlign-16: coordinate mode

}  // namespace kiln::legacy
