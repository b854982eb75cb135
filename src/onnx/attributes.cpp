// ONNX node attributes -> kiln Attributes (ints as int64_t, floats as double).
#include <onnx/onnx.pb.h>

#include "onnx/graph_reader.h"
#include "onnx/tensor_proto.h"
#include "support/error.h"

namespace kiln {
namespace {

using AP = ::onnx::AttributeProto;

std::string type_name(int t) {
  if (AP::AttributeType_IsValid(t)) return AP::AttributeType_Name(static_cast<AP::AttributeType>(t));
  return fmt::format("type {}", t);
}

// The kinds of payload an AttributeProto holds, whatever its declared type says.
std::vector<AP::AttributeType> payload_kinds(const AP& a) {
  std::vector<AP::AttributeType> kinds;
  if (a.has_f()) kinds.push_back(AP::FLOAT);
  if (a.has_i()) kinds.push_back(AP::INT);
  if (a.has_s()) kinds.push_back(AP::STRING);
  if (a.has_t()) kinds.push_back(AP::TENSOR);
  if (a.has_g()) kinds.push_back(AP::GRAPH);
  if (a.has_sparse_tensor()) kinds.push_back(AP::SPARSE_TENSOR);
  if (a.has_tp()) kinds.push_back(AP::TYPE_PROTO);
  if (a.floats_size()) kinds.push_back(AP::FLOATS);
  if (a.ints_size()) kinds.push_back(AP::INTS);
  if (a.strings_size()) kinds.push_back(AP::STRINGS);
  if (a.tensors_size()) kinds.push_back(AP::TENSORS);
  if (a.graphs_size()) kinds.push_back(AP::GRAPHS);
  if (a.sparse_tensors_size()) kinds.push_back(AP::SPARSE_TENSORS);
  if (a.type_protos_size()) kinds.push_back(AP::TYPE_PROTOS);
  return kinds;
}

}  // namespace

AttrMap convert_attributes(const ::onnx::NodeProto& node, const std::string& desc, const Options& options,
                           ExternalData* external, const SubgraphReader* subgraph) {
  AttrMap attrs;
  for (const AP& a : node.attribute()) {
    const std::string& name = a.name();
    if (name.empty()) user_error("{}: an attribute has no name", desc);
    if (attrs.count(name)) user_error("{}: attribute '{}' appears twice", desc, name);
    if (!a.ref_attr_name().empty())
      user_error("{}: attribute '{}' refers to '{}' (ref_attr_name), which is only valid inside a function", desc,
                 name, a.ref_attr_name());
    if (a.type() == AP::UNDEFINED) user_error("{}: attribute '{}' has no type", desc, name);
    for (AP::AttributeType k : payload_kinds(a)) {
      if ((k == AP::GRAPH && !subgraph) || k == AP::GRAPHS)
        unsupported("{}: attribute '{}': subgraphs are not supported", desc, name);
      if (k != a.type())
        user_error("{}: attribute '{}' is declared {} but holds a value of type {}", desc, name, type_name(a.type()),
                   type_name(k));
    }
    Attribute out;
    switch (a.type()) {
      case AP::INT: out.value = static_cast<int64_t>(a.i()); break;
      case AP::FLOAT: out.value = static_cast<double>(a.f()); break;
      case AP::STRING: out.value = a.s(); break;
      case AP::INTS: out.value = std::vector<int64_t>(a.ints().begin(), a.ints().end()); break;
      case AP::FLOATS: out.value = std::vector<double>(a.floats().begin(), a.floats().end()); break;
      case AP::STRINGS: out.value = std::vector<std::string>(a.strings().begin(), a.strings().end()); break;
      case AP::TENSOR:
        out.value = tensor_from_proto(a.t(), options, external, fmt::format("{}: attribute '{}'", desc, name));
        break;
      case AP::GRAPH:
        if (!subgraph) unsupported("{}: attribute '{}': subgraphs are not supported", desc, name);
        if (!a.has_g()) user_error("{}: attribute '{}' is declared GRAPH but holds no graph", desc, name);
        out.value = (*subgraph)(a);
        break;
      case AP::GRAPHS: unsupported("{}: attribute '{}': subgraphs are not supported", desc, name);
      case AP::UNDEFINED: user_error("{}: attribute '{}' has no type", desc, name);
      default: user_error("{}: attribute '{}' has type {}, which kiln does not support", desc, name, type_name(a.type()));
    }
    attrs.emplace(name, std::move(out));
  }
  return attrs;
}

}  // namespace kiln
