// The verifier catches each broken invariant, naming the pass and the node.
#include <functional>

#include "irtext_helpers.h"

namespace kiln {
namespace {
using namespace testing_irtext;

// x -> Relu "r" -> y -> Neg "n" -> z, with constant c feeding Add "a".
Graph small_graph() {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {2});
  ValueId c = b.constant("c", Tensor::from_vector<float>(DType::f32, {2}, {1, 2}));
  ValueId y = b.op(OpKind::Relu, {x}, {}, "r");
  ValueId z = b.op(OpKind::Neg, {y}, {}, "n");
  ValueId s = b.op(OpKind::Add, {z, c}, {}, "a");
  b.output(s);
  return b.build();
}

struct Breakage {
  const char* what;
  std::function<void(Graph&)> damage;
  const char* expected;  // fragment of the message
};

TEST(IrVerifier, AcceptsValidGraphs) {
  Graph g = small_graph();
  EXPECT_NO_THROW(verify_graph(g, "x"));
  g.nodes[1].inputs.push_back(kNoValue);  // an omitted optional input is fine
  EXPECT_NO_THROW(verify_graph(g, "x"));
  g.value(0).type = TensorType{DType::f32, {Dim::sym("n")}};
  EXPECT_NO_THROW(verify_graph(g, "x"));
  g.value(1).type = TensorType{};  // unknown constant type: not compared
  EXPECT_NO_THROW(verify_graph(g, "x"));
}

TEST(IrVerifier, CatchesEachBrokenInvariant) {
  // Values: 0 x, 1 c, 2 r's output, 3 n's output, 4 a's output. Nodes: 0 r, 1 n, 2 a.
  const Breakage cases[] = {
      {"input id out of range", [](Graph& g) { g.nodes[1].inputs[0] = 99; }, "node 'n' (Neg) #1: input 0 is value id 99, out of range"},
      {"negative input id", [](Graph& g) { g.nodes[1].inputs[0] = -7; }, "node 'n' (Neg) #1: input 0 is value id -7"},
      {"output id out of range", [](Graph& g) { g.nodes[0].outputs[0] = 42; }, "node 'r' (Relu) #0: output 0 is value id 42"},
      {"value produced twice",
       [](Graph& g) { g.nodes[1].outputs[0] = 2; },
       "node 'n' (Neg) #1: output 0 (value 2 'r') is also produced by node 'r' (Relu) #0"},
      {"producer field wrong", [](Graph& g) { g.value(3).producer = 0; }, "node 'n' (Neg) #1: value 3 'n' has producer field 0"},
      {"producer field without node", [](Graph& g) { g.value(1).producer = 2; }, "graph: value 1 'c' has producer field 2, but no node produces it"},
      {"not topological",
       [](Graph& g) {
         std::swap(g.nodes[0], g.nodes[1]);
         g.value(2).producer = 1;
         g.value(3).producer = 0;
       },
       "node 'n' (Neg) #0: input 0 (value 2 'r') is produced later, by node 'r' (Relu) #1"},
      {"dangling use",
       [](Graph& g) {
         ValueId d = g.add_value("dangling", TensorType{});
         g.nodes[2].inputs[1] = d;
       },
       "node 'a' (Add) #2: input 1 (value 5 'dangling') is neither a graph input, a constant nor a node output"},
      {"graph input produced by a node", [](Graph& g) { g.inputs.push_back(2); }, "node 'r' (Relu) #0: produces graph input 1"},
      {"graph input listed twice", [](Graph& g) { g.inputs.push_back(0); }, "graph input 1 (value 0 'x') is listed twice"},
      {"graph input out of range", [](Graph& g) { g.inputs.push_back(17); }, "graph input 1 is value id 17"},
      {"graph output out of range", [](Graph& g) { g.outputs.push_back(-1); }, "graph output 1 is value id -1"},
      {"graph output undefined",
       [](Graph& g) { g.outputs.push_back(g.add_value("lost", TensorType{})); },
       "graph output 1 (value 5 'lost') is neither"},
      {"constant dtype mismatch",
       [](Graph& g) { g.value(1).type.dtype = DType::i64; },
       "constant value 1 'c' is declared i64[2] but holds f32[2]"},
      {"constant shape mismatch",
       [](Graph& g) { g.value(1).type.shape = {Dim::fixed(3)}; },
       "constant value 1 'c' is declared f32[3]"},
      {"constant rank mismatch",
       [](Graph& g) { g.value(1).type.shape.push_back(Dim::fixed(1)); },
       "is declared f32[2,1] but holds f32[2]"},
      {"constant produced by a node",
       [](Graph& g) { g.value(3).constant = std::make_shared<const Tensor>(Tensor::scalar<float>(DType::f32, 1)); },
       "node 'n' (Neg) #1: produces value 3 'n', which is also a constant"},
      {"constant without data",
       [](Graph& g) {
         g.value(1).constant = std::make_shared<const Tensor>(Tensor::wrap(DType::f32, {2}, nullptr, nullptr));
       },
       "constant value 1 'c' has no data"},
      {"op out of range", [](Graph& g) { g.nodes[2].op = static_cast<OpKind>(kNumOps + 3); }, "#2: op kind out of range"},
  };
  for (const Breakage& c : cases) {
    SCOPED_TRACE(c.what);
    Graph g = small_graph();
    c.damage(g);
    try {
      verify_graph(g, "my_pass");
      ADD_FAILURE() << "not caught";
    } catch (const InternalError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("after pass 'my_pass'"), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
    }
    // Printing a broken graph must still work (it is what one looks at when debugging).
    EXPECT_NO_THROW(print_graph(g));
  }
}

}  // namespace
}  // namespace kiln
