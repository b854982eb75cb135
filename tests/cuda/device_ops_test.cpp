// DeviceOps, data movement: the source compiles cleanly (NVRTC only, runs everywhere); Gather, Concat,
// Split and the strided copy against kiln's CPU eager kernels (GPU). The pooling and im2col kernels are
// in device_ops_window_test.cpp; the fixture, with its guarded buffers, in device_ops_fixture.h.
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/cuda/device_ops.h"
#include "cuda_test_util.h"
#include "device_ops_fixture.h"
#include "kiln/errors.h"
#include "ops/registry.h"
#include "ops/shape/shape_ops.h"

namespace kiln::backend::cuda::testing {
namespace {

TEST(DeviceOpsSource, EveryKernelStartsWithTheGridPrologue) {
  // Each kernel macro is one text; any that does not start so fails inside.
  EXPECT_GE(kernels_starting_with_the_prologue(DeviceOps::source(), "device ops"), 8);
}

TEST_F(NvrtcTest, DeviceOpsSourceCompilesForSm90aWithAnEmptyLog) {
  CompiledCubin compiled = compile_to_cubin(DeviceOps::source(), "kiln_device_ops.cu", "sm_90a");
  EXPECT_FALSE(compiled.cubin.empty());
  EXPECT_EQ(compiled.log, "");
}

// The bf16 narrowing is cvt.rn.bf16.f32 from sm_80 and integer arithmetic below it: both branches.
TEST_F(NvrtcTest, DeviceOpsSourceCompilesForSm75AndSm80WithAnEmptyLog) {
  const std::vector<int>& archs = nvrtc().supported_archs;
  int compiled_archs = 0;
  for (int number : {75, 80}) {
    if (std::find(archs.begin(), archs.end(), number) == archs.end()) continue;
    SCOPED_TRACE(number);
    CompiledCubin compiled =
        compile_to_cubin(DeviceOps::source(), "kiln_device_ops.cu", "sm_" + std::to_string(number));
    EXPECT_FALSE(compiled.cubin.empty());
    EXPECT_EQ(compiled.log, "");
    ++compiled_archs;
  }
  if (compiled_archs == 0) GTEST_SKIP() << "SKIPPED: this NVRTC supports neither sm_75 nor sm_80";
}

TEST(DeviceOpsGeometry, ErrorMessageNamesTheOpAndSite) {
  DeviceOpError e{"Gather", 3, 7, 5};
  EXPECT_EQ(e.message(), "device cuda: Gather (site 3): index 7 is out of range for an axis of size 5");
  e.site = -1;
  EXPECT_EQ(e.message(), "device cuda: Gather: index 7 is out of range for an axis of size 5");
}

// ---- CPU references: kiln's eager kernels, from a registry of just their families

const OpRegistry& shape_ops_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    shape_ops::register_gather_ops(r);
    shape_ops::register_concat_split_ops(r);
    return r;
  }();
  return registry;
}

Node make_node(OpKind op, size_t inputs, size_t outputs, int64_t axis) {
  Node n;
  n.op = op;
  n.name = "device_ops_test";
  for (size_t i = 0; i < inputs; ++i) n.inputs.push_back(static_cast<ValueId>(i));
  for (size_t i = 0; i < outputs; ++i) n.outputs.push_back(static_cast<ValueId>(100 + i));
  n.attrs["axis"] = Attribute{axis};
  return n;
}

// Inference then the kernel, as run_node does; omitted outputs stay undefined.
std::vector<Tensor> run_cpu(const Node& n, const std::vector<const Tensor*>& in) {
  const OpDef* def = shape_ops_registry().find(n.op);
  KILN_INTERNAL_CHECK(def, "no CPU kernel for {}", op_name(n.op));
  std::vector<TensorType> types(in.size());
  std::vector<const TensorType*> type_of;
  for (size_t i = 0; i < in.size(); ++i) {
    types[i] = TensorType{in[i]->dtype(), shape_of(in[i]->shape())};
    type_of.push_back(&types[i]);
  }
  int fresh = 0;
  InferContext ctx(n, type_of, in, &fresh, 16);
  std::vector<TensorType> out_types = def->infer(ctx);
  std::vector<Tensor> out(n.outputs.size());
  for (size_t k = 0; k < out.size(); ++k)
    if (n.outputs[k] != kNoValue) out[k] = Tensor::empty(out_types.at(k).dtype, static_dims(out_types[k].shape));
  KernelContext kctx;
  def->kernel(n, in, out, kctx);
  return out;
}

DType dtype_of_size(int element_bytes) {
  switch (element_bytes) {
    case 1: return DType::u8;
    case 2: return DType::f16;
    case 4: return DType::i32;
    default: return DType::f64;  // random bytes: NaNs of every payload, copied as bits
  }
}

Tensor random_tensor(DType dtype, std::vector<int64_t> shape, std::mt19937& random) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  auto* p = static_cast<unsigned char*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<unsigned char>(random());
  return t;
}

Bytes bytes_of(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.raw());
  return Bytes(p, p + t.nbytes());
}


// ---- Gather

struct GatherCase {
  int64_t outer, axis_dim, inner;
  std::vector<int64_t> indices;
};

TEST_F(DeviceOpsTest, GatherMatchesTheCpuKernel) {
  const std::vector<GatherCase> cases = {
      {1, 1, 1, {0}},          {1, 1, 1, {-1, 0, -1}},      {3, 5, 1, {4, -5, 0, 2, -1}},
      {2, 31, 3, {30, -31, 7}}, {1, 1000, 31, {999, -1000, 0, 500}}, {31, 3, 1000, {2, -3}},
      {3, 7, 1, {}},           {1, 4, 5, std::vector<int64_t>(1000, -2)},
  };
  for (const GatherCase& c : cases)
    for (int element_bytes : {1, 2, 4, 8})
      for (bool i64 : {false, true})
        for (size_t offset : {size_t{0}, static_cast<size_t>(element_bytes)}) {
          SCOPED_TRACE(::testing::Message() << "[" << c.outer << ", " << c.axis_dim << ", " << c.inner << "] "
                                            << c.indices.size() << " indices, " << element_bytes << "-byte, "
                                            << (i64 ? "i64" : "i32") << ", offset " << offset);
          Tensor data = random_tensor(dtype_of_size(element_bytes), {c.outer, c.axis_dim, c.inner}, random_);
          Tensor indices = Tensor::from_vector(i64 ? DType::i64 : DType::i32,
                                               {static_cast<int64_t>(c.indices.size())}, c.indices);
          Tensor expected = run_cpu(make_node(OpKind::Gather, 2, 1, 1), {&data, &indices}).at(0);
          Buffer d = upload(bytes_of(data), offset), ix = upload(bytes_of(indices)), out = output(expected.nbytes(), offset);
          ops().gather(stream(), d.ptr(), ix.ptr(), i64, out.ptr(), c.outer, c.axis_dim,
                       static_cast<int64_t>(c.indices.size()), c.inner, element_bytes, 9);
          EXPECT_EQ(download(out), bytes_of(expected));
          EXPECT_NO_THROW(ops().check_errors(stream()));
        }
}

TEST_F(DeviceOpsTest, GatherOfNothingLaunchesNothing) {
  Buffer out = output(0);
  ops().gather(stream(), 0, 0, false, out.ptr(), 0, 5, 3, 2, 4);
  ops().gather(stream(), 0, 0, true, out.ptr(), 2, 5, 0, 2, 4);
  ops().gather(stream(), 0, 0, true, out.ptr(), 2, 5, 3, 0, 8);
  EXPECT_EQ(download(out), Bytes{});
  EXPECT_FALSE(ops().take_error(stream()));
}

TEST_F(DeviceOpsTest, AnOutOfRangeIndexGivesZerosAndAnErrorNamingGatherAndTheSite) {
  const int64_t outer = 3, dim = 5, inner = 31;
  const std::vector<int64_t> idx = {1, 5, -6, -5};
  Tensor data = random_tensor(DType::f32, {outer, dim, inner}, random_);
  Tensor indices = Tensor::from_vector(DType::i64, {4}, idx);
  Buffer d = upload(bytes_of(data)), ix = upload(bytes_of(indices)), out = output(outer * 4 * inner * 4);
  ops().gather(stream(), d.ptr(), ix.ptr(), true, out.ptr(), outer, dim, 4, inner, 4, 42);
  std::optional<DeviceOpError> e = ops().take_error(stream());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->op, "Gather");
  EXPECT_EQ(e->site, 42);
  EXPECT_EQ(e->bound, dim);
  EXPECT_TRUE(e->value == 5 || e->value == -6) << e->value;
  Bytes got = download(out);
  const auto* src = static_cast<const unsigned char*>(data.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < 4; ++k) {
      const int64_t row = inner * 4;
      const unsigned char* at = got.data() + (o * 4 + k) * row;
      int64_t v = idx[static_cast<size_t>(k)] < 0 ? idx[static_cast<size_t>(k)] + dim : idx[static_cast<size_t>(k)];
      if (v < 0 || v >= dim) {
        EXPECT_EQ(Bytes(at, at + row), Bytes(static_cast<size_t>(row), 0)) << "slice " << o << ", " << k;
      } else {
        EXPECT_EQ(0, std::memcmp(at, src + (o * dim + v) * row, static_cast<size_t>(row))) << "slice " << o << ", " << k;
      }
    }
  // Taken means cleared; a second bad gather is reported again, this time by check_errors.
  EXPECT_FALSE(ops().take_error(stream()));
  ops().gather(stream(), d.ptr(), ix.ptr(), true, out.ptr(), outer, dim, 4, inner, 4);
  try {
    ops().check_errors(stream());
    ADD_FAILURE() << "no error";
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("device cuda: Gather: index "), std::string::npos) << err.what();
  }
  EXPECT_NO_THROW(ops().check_errors(stream()));
}

TEST_F(DeviceOpsTest, FirstUseFromSeveralThreadsCompilesOnce) {
  const std::vector<int32_t> idx = {2, 0, -1};
  Tensor data = random_tensor(DType::i64, {2, 3, 3}, random_);
  Tensor indices = Tensor::from_vector(DType::i32, {3}, idx);
  Tensor expected = run_cpu(make_node(OpKind::Gather, 2, 1, 1), {&data, &indices}).at(0);
  Buffer d = upload(bytes_of(data)), ix = upload(bytes_of(indices));
  DeviceOps fresh(*context_);  // not compiled yet
  std::vector<Buffer> outs;
  for (int t = 0; t < 4; ++t) outs.push_back(output(expected.nbytes()));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Stream own(*context_);
      fresh.gather(own, d.ptr(), ix.ptr(), false, outs[static_cast<size_t>(t)].ptr(), 2, 3, 3, 3, 8);
      own.synchronize();
    });
  for (std::thread& t : threads) t.join();
  for (const Buffer& out : outs) EXPECT_EQ(download(out), bytes_of(expected));
}

// ---- Concat and Split

struct PiecesCase {
  int64_t outer, inner;
  std::vector<int64_t> lens;
};

std::vector<PiecesCase> pieces_cases() {
  std::vector<PiecesCase> cases = {{1, 1, {1}},        {3, 1, {1, 3, 0, 31}}, {2, 5, {0, 7, 1}},
                                   {1, 1000, {3, 1}},  {31, 3, {2, 2, 2}},    {1000, 1, {1, 0, 2}}};
  std::vector<int64_t> many;  // more inputs than one launch takes
  for (int i = 0; i < 75; ++i) many.push_back(i % 4);
  cases.push_back({3, 2, many});
  return cases;
}

TEST_F(DeviceOpsTest, ConcatMatchesTheCpuKernel) {
  for (const PiecesCase& c : pieces_cases())
    for (int element_bytes : {1, 2, 4, 8})
      for (size_t offset : {size_t{0}, static_cast<size_t>(element_bytes)}) {
        SCOPED_TRACE(::testing::Message() << c.lens.size() << " inputs, outer " << c.outer << ", inner " << c.inner
                                          << ", " << element_bytes << "-byte, offset " << offset);
        std::vector<Tensor> in;
        std::vector<const Tensor*> in_ptrs;
        for (int64_t len : c.lens) in.push_back(random_tensor(dtype_of_size(element_bytes), {c.outer, len, c.inner}, random_));
        for (const Tensor& t : in) in_ptrs.push_back(&t);
        Tensor expected = run_cpu(make_node(OpKind::Concat, in.size(), 1, 1), in_ptrs).at(0);
        std::vector<Buffer> dev;
        std::vector<CUdeviceptr> ptrs;
        for (const Tensor& t : in) dev.push_back(upload(bytes_of(t), offset));
        for (const Buffer& b : dev) ptrs.push_back(b.ptr());
        Buffer out = output(expected.nbytes(), offset);
        ops().concat(stream(), ptrs, c.lens, out.ptr(), c.outer, c.inner, element_bytes);
        EXPECT_EQ(download(out), bytes_of(expected));
      }
}

TEST_F(DeviceOpsTest, SplitMatchesTheCpuKernelAndSkipsOmittedOutputs) {
  for (const PiecesCase& c : pieces_cases())
    for (int element_bytes : {1, 4, 8})
      for (bool omit : {false, true}) {
        SCOPED_TRACE(::testing::Message() << c.lens.size() << " outputs, outer " << c.outer << ", inner " << c.inner
                                          << ", " << element_bytes << "-byte" << (omit ? ", some omitted" : ""));
        int64_t total = 0;
        for (int64_t len : c.lens) total += len;
        Tensor x = random_tensor(dtype_of_size(element_bytes), {c.outer, total, c.inner}, random_);
        Tensor split = Tensor::from_vector(DType::i64, {static_cast<int64_t>(c.lens.size())}, c.lens);
        Node node = make_node(OpKind::Split, 2, c.lens.size(), 1);
        if (omit)
          for (size_t k = 1; k < c.lens.size(); k += 2) node.outputs[k] = kNoValue;
        std::vector<Tensor> expected = run_cpu(node, {&x, &split});
        Buffer in = upload(bytes_of(x));
        std::vector<Buffer> outs;
        std::vector<CUdeviceptr> ptrs;
        for (size_t k = 0; k < c.lens.size(); ++k)
          outs.push_back(output(static_cast<size_t>(c.outer * c.lens[k] * c.inner * element_bytes)));
        for (size_t k = 0; k < outs.size(); ++k) ptrs.push_back(node.outputs[k] == kNoValue ? 0 : outs[k].ptr());
        ops().split(stream(), in.ptr(), ptrs, c.lens, c.outer, c.inner, element_bytes);
        for (size_t k = 0; k < outs.size(); ++k) {
          Bytes got = download(outs[k]);
          if (node.outputs[k] == kNoValue) EXPECT_EQ(got, Bytes(got.size(), kPattern)) << "omitted output " << k;
          else EXPECT_EQ(got, bytes_of(expected[k])) << "output " << k;
        }
      }
}

// ---- strided copy, against the CPU ops' strided_copy (Slice, Expand, Split)

struct StridedCase {
  std::vector<int64_t> in_shape, out_shape, strides;  // strides in elements, over in (contiguous)
  int64_t offset;
};

TEST_F(DeviceOpsTest, StridedCopyMatchesTheCpuHelper) {
  const std::vector<StridedCase> cases = {
      {{1}, {1}, {1}, 0},
      {{1000}, {1000}, {1}, 0},                       // contiguous: one wide run
      {{1000}, {31}, {-3}, 999},                      // reversed, strided slice
      {{3}, {31, 3}, {0, 1}, 0},                      // Expand of a row
      {{3, 1}, {3, 1000}, {1, 0}, 0},                 // Expand of a column
      {{1}, {3, 31, 1}, {0, 0, 0}, 0},                // Expand of a scalar
      {{7, 31, 5}, {5, 31, 7}, {1, 5, 155}, 0},       // a transpose
      {{4, 6, 8}, {2, 3, 4}, {-48, 2, 2}, 3 * 48 + 1},  // a Slice with negative steps and an offset
      {{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, {2, 2, 2, 2, 2, 2, 2, 2, 2, 1},
       {512, 256, 128, 64, 32, 16, 8, 4, 2, 1}, 0},  // rank 10, merges to a short rank
      {{5}, {0, 5}, {0, 1}, 0},                        // empty: launches nothing
      {{1}, {}, {}, 0},                                // rank 0: one element
  };
  for (const StridedCase& c : cases)
    for (int element_bytes : {1, 2, 4, 8}) {
      SCOPED_TRACE(::testing::Message() << "case with " << c.out_shape.size() << " dims, " << element_bytes << "-byte");
      Tensor x = random_tensor(dtype_of_size(element_bytes), c.in_shape, random_);
      size_t out_bytes = static_cast<size_t>(element_bytes);
      for (int64_t d : c.out_shape) out_bytes *= static_cast<size_t>(d);
      Bytes expected(out_bytes);
      if (c.out_shape.empty())  // rank 0: the one element at the offset
        std::memcpy(expected.data(), static_cast<const unsigned char*>(x.raw()) + c.offset * element_bytes, out_bytes);
      else if (out_bytes > 0)
        shape_ops::strided_copy(static_cast<size_t>(element_bytes), c.out_shape, c.strides,
                                static_cast<const unsigned char*>(x.raw()) + c.offset * element_bytes, expected.data());
      Buffer in = upload(bytes_of(x)), out = output(out_bytes);
      ops().strided_copy(stream(), in.ptr(), out.ptr(), c.out_shape, c.strides, c.offset, element_bytes);
      EXPECT_EQ(download(out), expected);
    }
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
