// DeviceOps: the source compiles cleanly (NVRTC only, runs everywhere); the pooling geometry matches
// the CPU ops' (host only); each kernel against kiln's CPU eager kernel or a host loop (GPU).
// GPU outputs sit in buffers with guard bytes after them (and are pre-filled with a pattern), so a
// write past the end or a missed element shows.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "backend/cuda/device_ops.h"
#include "cuda_test_util.h"
#include "kiln/errors.h"
#include "ops/linalg/linalg_ops.h"
#include "ops/registry.h"
#include "ops/shape/shape_ops.h"

namespace kiln::backend::cuda::testing {
namespace {

using Bytes = std::vector<unsigned char>;

TEST_F(NvrtcTest, DeviceOpsSourceCompilesForSm90aWithAnEmptyLog) {
  CompiledCubin compiled = compile_to_cubin(DeviceOps::source(), "kiln_device_ops.cu", "sm_90a");
  EXPECT_FALSE(compiled.cubin.empty());
  EXPECT_EQ(compiled.log, "");
}

// ---- pooling geometry, host only

TEST(DeviceOpsGeometry, PoolOutputSizeIsTheCpuOpsWindowAxis) {
  Node node;
  node.op = OpKind::MaxPool;
  node.name = "pool";
  for (int64_t in : {1, 2, 3, 5, 7, 31, 112})
    for (int64_t kernel : {1, 2, 3})
      for (int64_t stride : {1, 2, 3})
        for (int64_t dilation : {1, 2})
          for (int64_t pb : {0, 1, 2})
            for (int64_t pe : {0, 1})
              for (bool ceil_mode : {false, true}) {
                linalg_ops::WindowAttrs w;
                w.spatial = 1;
                w.kernel = {kernel};
                w.strides = {stride};
                w.dilations = {dilation};
                w.pads = {pb, pe};
                w.ceil_mode = ceil_mode;
                if (in + pb + pe < (kernel - 1) * dilation + 1) {
                  EXPECT_THROW(pool_output_size(in, kernel, stride, dilation, pb, pe, ceil_mode), UserError);
                  continue;
                }
                EXPECT_EQ(pool_output_size(in, kernel, stride, dilation, pb, pe, ceil_mode),
                          linalg_ops::window_axis(node, w, 0, in).out)
                    << in << " " << kernel << " " << stride << " " << dilation << " " << pb << " " << pe << " "
                    << ceil_mode;
              }
}

TEST(DeviceOpsGeometry, MaxPool2dShapeTakesOnnxPadOrder) {
  const int64_t kernel[2] = {3, 2}, strides[2] = {2, 1}, pads[4] = {1, 0, 0, 1}, dilations[2] = {1, 1};
  Pool2dShape g = make_max_pool2d_shape(2, 3, 8, 5, kernel, strides, pads, dilations, true, DType::f32);
  EXPECT_EQ(g.planes, 6);
  EXPECT_EQ(g.pad_top, 1);
  EXPECT_EQ(g.pad_left, 0);
  EXPECT_EQ(g.out_h, pool_output_size(8, 3, 2, 1, 1, 0, true));
  EXPECT_EQ(g.out_w, pool_output_size(5, 2, 1, 1, 0, 1, true));
}

TEST(DeviceOpsGeometry, Im2colShapeHasConvOutputSizes) {
  struct Case {
    int64_t h, w, kernel[2], strides[2], pads[4], dilations[2], out_h, out_w;
  };
  const std::vector<Case> cases = {
      {224, 224, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 112, 112},    // ResNet's stem
      {56, 56, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 56, 56},        // 3x3 same
      {7, 9, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 7, 9},            // odd, non-square
      {56, 56, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 28, 28},        // 1x1 downsample
      {57, 57, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 29, 29},        // odd: the last pixel is taken
      {56, 56, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 28, 28},        // strided 3x3
      {224, 224, {16, 16}, {16, 16}, {0, 0, 0, 0}, {1, 1}, 14, 14},  // ViT patchify
      {10, 10, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 10, 10},        // dilated, same
      {8, 5, {3, 2}, {2, 1}, {1, 0, 0, 1}, {1, 1}, 4, 5},            // ONNX pad order: top, left, bottom, right
      {3, 3, {5, 5}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, 1},            // the kernel exactly covers the padded input
      {7, 7, {3, 3}, {3, 3}, {0, 0, 0, 0}, {1, 1}, 2, 2},            // no ceil_mode: floor (ceil: 3)
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.h << "x" << c.w << " kernel " << c.kernel[0] << "x" << c.kernel[1]);
    Im2colShape g = make_im2col_shape(2, 3, c.h, c.w, c.kernel, c.strides, c.pads, c.dilations, DType::f32);
    EXPECT_EQ(g.out_h, c.out_h);
    EXPECT_EQ(g.out_w, c.out_w);
    EXPECT_EQ(g.n, 2);
    EXPECT_EQ(g.c, 3);
    EXPECT_EQ(g.in_h, c.h);
    EXPECT_EQ(g.in_w, c.w);
    EXPECT_EQ(g.kernel_h, c.kernel[0]);
    EXPECT_EQ(g.kernel_w, c.kernel[1]);
    EXPECT_EQ(g.stride_h, c.strides[0]);
    EXPECT_EQ(g.stride_w, c.strides[1]);
    EXPECT_EQ(g.pad_top, c.pads[0]);
    EXPECT_EQ(g.pad_left, c.pads[1]);
    EXPECT_EQ(g.dilation_h, c.dilations[0]);
    EXPECT_EQ(g.dilation_w, c.dilations[1]);
    EXPECT_EQ(g.dtype, DType::f32);
    EXPECT_EQ(g.rows(), 3 * c.kernel[0] * c.kernel[1]);
    EXPECT_EQ(g.pixels(), c.out_h * c.out_w);
  }
  const int64_t k7[2] = {7, 7}, k3[2] = {3, 3}, s1[2] = {1, 1}, d1[2] = {1, 1}, d2[2] = {2, 2};
  const int64_t p0[4] = {0, 0, 0, 0}, p1[4] = {1, 1, 1, 1}, p_bottom[4] = {0, 0, 1, 0};
  EXPECT_THROW(make_im2col_shape(1, 3, 5, 5, k7, s1, p0, d1, DType::f32), UserError);  // 7 > 5
  EXPECT_THROW(make_im2col_shape(1, 3, 4, 4, k7, s1, p1, d1, DType::f32), UserError);  // 7 > 4 + 2
  EXPECT_THROW(make_im2col_shape(1, 3, 4, 4, k3, s1, p0, d2, DType::f32), UserError);  // extent 5 > 4
  EXPECT_THROW(make_im2col_shape(1, 3, 6, 4, k3, s1, p0, d2, DType::f32), UserError);  // the width only
  EXPECT_EQ(make_im2col_shape(1, 3, 4, 5, k3, s1, p_bottom, d2, DType::f32).out_h, 1);  // 4 + 1 covers 5
  try {
    make_im2col_shape(1, 3, 5, 5, k7, s1, p0, d1, DType::f32);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("Conv kernel extent 7 is larger than the padded input 5"), std::string::npos)
        << e.what();
  }
  // Every axis as the CPU ops' window rule without ceil_mode.
  Node node;
  node.op = OpKind::Conv;
  node.name = "conv";
  for (int64_t in : {1, 2, 5, 7, 31, 224})
    for (int64_t k : {1, 2, 3, 7})
      for (int64_t stride : {1, 2, 3})
        for (int64_t dilation : {1, 2})
          for (int64_t pb : {0, 1, 3})
            for (int64_t pe : {0, 2}) {
              const int64_t kernel[2] = {k, 1}, strides[2] = {stride, 1}, pads[4] = {pb, 0, pe, 0},
                            dilations[2] = {dilation, 1};
              if (in + pb + pe < (k - 1) * dilation + 1) continue;
              linalg_ops::WindowAttrs w;
              w.spatial = 1;
              w.kernel = {k};
              w.strides = {stride};
              w.dilations = {dilation};
              w.pads = {pb, pe};
              w.ceil_mode = false;
              EXPECT_EQ(make_im2col_shape(1, 1, in, 1, kernel, strides, pads, dilations, DType::f32).out_h,
                        linalg_ops::window_axis(node, w, 0, in).out)
                  << in << " " << k << " " << stride << " " << dilation << " " << pb << " " << pe;
            }
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

// ---- the device side

constexpr size_t kGuard = 64;
constexpr unsigned char kPattern = 0xA5;

class DeviceOpsTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    device_.emplace(probe_.device);
    context_.emplace(*device_);
    stream_.emplace(*context_);
    ops_.emplace(*context_);
  }

  const Stream& stream() const { return *stream_; }
  const DeviceOps& ops() const { return *ops_; }

  // A device buffer holding `bytes` (placed `offset` bytes into it, to test unaligned views) and then
  // kGuard pattern bytes.
  struct Buffer {
    DeviceBuffer memory;
    size_t offset = 0, bytes = 0;
    CUdeviceptr ptr() const { return memory.ptr() + offset; }
  };

  Buffer upload(const Bytes& data, size_t offset = 0) const {
    Buffer b{DeviceBuffer(stream(), offset + data.size() + kGuard), offset, data.size()};
    PinnedBuffer host(*context_, b.memory.bytes());
    auto* p = static_cast<unsigned char*>(host.data());
    std::memset(p, kPattern, host.bytes());
    if (!data.empty()) std::memcpy(p + offset, data.data(), data.size());
    copy_to_device(stream(), b.memory, host, host.bytes());
    stream().synchronize();
    return b;
  }
  Buffer output(size_t bytes, size_t offset = 0) const { return upload(Bytes(bytes, kPattern), offset); }

  // The payload; fails the test if a guard byte (or a byte before an offset view) changed.
  Bytes download(const Buffer& b) const {
    PinnedBuffer host(*context_, b.memory.bytes());
    copy_to_host(stream(), host, b.memory, host.bytes());
    stream().synchronize();
    const auto* p = static_cast<const unsigned char*>(host.data());
    for (size_t i = 0; i < host.bytes(); ++i)
      if (i < b.offset || i >= b.offset + b.bytes) {
        EXPECT_EQ(p[i], kPattern) << "guard byte " << i << " of a " << b.bytes << "-byte output overwritten";
        if (p[i] != kPattern) break;
      }
    return Bytes(p + b.offset, p + b.offset + b.bytes);
  }

  std::optional<Device> device_;
  std::optional<Context> context_;
  std::optional<Stream> stream_;
  std::optional<DeviceOps> ops_;
  std::mt19937 random_{1234};
};

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

// ---- pooling: host loops with the CPU kernels' semantics

template <class T>
std::vector<T> max_pool_reference(const std::vector<T>& x, const Pool2dShape& g) {
  std::vector<T> y;
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        T acc = -std::numeric_limits<T>::infinity();
        for (int64_t kh = 0; kh < g.kernel_h; ++kh)
          for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
            int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
            int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
            if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) continue;
            T v = x[static_cast<size_t>((p * g.in_h + ih) * g.in_w + iw)];
            if (v > acc || v != v) acc = v;  // the CPU kernel's take rule: the first NaN is kept
          }
        y.push_back(acc);
      }
  return y;
}

template <class T>
Bytes as_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <class T>
std::vector<T> random_values(size_t n, std::mt19937& random, double special_rate) {
  std::uniform_real_distribution<double> uniform(-100, 100), coin(0, 1);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(-0.0)};
  std::vector<T> v(n);
  for (T& e : v) e = coin(random) < special_rate ? specials[random() % 4] : static_cast<T>(uniform(random));
  return v;
}

struct PoolCase {
  int64_t n, c, h, w;
  int64_t kernel[2], strides[2], pads[4], dilations[2];
  bool ceil_mode;
};

TEST_F(DeviceOpsTest, MaxPool2dMatchesTheCpuSemanticsWithNanInfPadsAndCeilMode) {
  const std::vector<PoolCase> cases = {
      {1, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
      {1, 3, 31, 31, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},  // ResNet's stem pool
      {2, 3, 7, 5, {2, 3}, {2, 2}, {0, 1, 1, 0}, {1, 1}, true},
      {1, 2, 8, 9, {3, 2}, {3, 2}, {0, 0, 2, 1}, {2, 1}, true},     // dilation, ceil_mode, end pads
      {3, 1, 5, 5, {2, 2}, {1, 1}, {2, 2, 0, 0}, {1, 1}, false},    // first windows only on padding: -inf
      {1, 1, 1000, 3, {5, 3}, {1, 1}, {2, 1, 2, 1}, {1, 1}, false},
      {0, 3, 7, 7, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},    // empty
  };
  for (const PoolCase& c : cases)
    for (DType dtype : {DType::f32, DType::f64})
      for (double special_rate : {0.0, 0.05}) {
        SCOPED_TRACE(::testing::Message() << "[" << c.n << ", " << c.c << ", " << c.h << ", " << c.w << "] kernel "
                                          << c.kernel[0] << "x" << c.kernel[1] << (c.ceil_mode ? " ceil" : "") << " "
                                          << (dtype == DType::f32 ? "f32" : "f64") << " specials " << special_rate);
        Pool2dShape g = make_max_pool2d_shape(c.n, c.c, c.h, c.w, c.kernel, c.strides, c.pads, c.dilations,
                                              c.ceil_mode, dtype);
        const size_t n_in = static_cast<size_t>(c.n * c.c * c.h * c.w);
        Bytes x, expected;
        if (dtype == DType::f32) {
          std::vector<float> v = random_values<float>(n_in, random_, special_rate);
          x = as_bytes(v), expected = as_bytes(max_pool_reference(v, g));
        } else {
          std::vector<double> v = random_values<double>(n_in, random_, special_rate);
          x = as_bytes(v), expected = as_bytes(max_pool_reference(v, g));
        }
        Buffer in = upload(x), out = output(expected.size());
        ops().max_pool2d(stream(), in.ptr(), out.ptr(), g);
        EXPECT_EQ(download(out), expected);  // max is exact and NaNs are moved, not made: bitwise
      }
}

template <class T>
void expect_means(const std::vector<T>& got, const std::vector<T>& x, int64_t spatial) {
  for (size_t p = 0; p < got.size(); ++p) {
    double sum = 0, magnitude = 0;
    for (int64_t j = 0; j < spatial; ++j) {
      sum += static_cast<double>(x[p * static_cast<size_t>(spatial) + static_cast<size_t>(j)]);
      magnitude += std::abs(static_cast<double>(x[p * static_cast<size_t>(spatial) + static_cast<size_t>(j)]));
    }
    if (spatial == 0 || std::isnan(sum)) {
      EXPECT_TRUE(std::isnan(got[p])) << "plane " << p << ": " << got[p];
      continue;
    }
    const double mean = sum / static_cast<double>(spatial);
    if (std::isinf(mean)) {
      EXPECT_EQ(got[p], static_cast<T>(mean)) << "plane " << p;
      continue;
    }
    // The double sums differ by order only (n ulps of the magnitude); then one rounding to T.
    const double tolerance = static_cast<double>(spatial) * std::ldexp(magnitude / static_cast<double>(spatial), -52) +
                             std::abs(mean) * std::numeric_limits<T>::epsilon();
    EXPECT_LE(std::abs(static_cast<double>(got[p]) - mean), tolerance) << "plane " << p;
  }
}

TEST_F(DeviceOpsTest, GlobalAveragePoolMatchesTheFp64Mean) {
  struct Case {
    int64_t planes, spatial;
    double special_rate;
  };
  const std::vector<Case> cases = {{1, 1, 0}, {3, 49, 0}, {31, 1000, 0}, {1000, 3, 0}, {2, 4096, 0},
                                   {5, 50000, 0}, {64, 49, 0.1}, {3, 3000, 0.001}, {4, 0, 0}, {0, 7, 0}};
  for (const Case& c : cases)
    for (DType dtype : {DType::f32, DType::f64}) {
      SCOPED_TRACE(::testing::Message() << c.planes << " planes of " << c.spatial << ", "
                                        << (dtype == DType::f32 ? "f32" : "f64") << ", specials " << c.special_rate);
      const size_t n = static_cast<size_t>(c.planes * c.spatial);
      auto run = [&](auto tag) {
        using T = decltype(tag);
        std::vector<T> x = random_values<T>(n, random_, c.special_rate);
        Buffer in = upload(as_bytes(x)), out = output(static_cast<size_t>(c.planes) * sizeof(T));
        ops().global_average_pool(stream(), in.ptr(), out.ptr(), c.planes, c.spatial, dtype);
        Bytes got = download(out);
        std::vector<T> y(static_cast<size_t>(c.planes));
        if (!y.empty()) std::memcpy(y.data(), got.data(), got.size());
        expect_means(y, x, c.spatial);
      };
      if (dtype == DType::f32) run(float{});
      else run(double{});
    }
}

// ---- im2col, against the definition as a host loop

template <class T>
std::vector<T> im2col_reference(const std::vector<T>& x, const Im2colShape& g) {
  std::vector<T> cols;
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t ci = 0; ci < g.c; ++ci)
      for (int64_t ki = 0; ki < g.kernel_h; ++ki)
        for (int64_t kj = 0; kj < g.kernel_w; ++kj)  // row (ci * kernel_h + ki) * kernel_w + kj
          for (int64_t oh = 0; oh < g.out_h; ++oh)
            for (int64_t ow = 0; ow < g.out_w; ++ow) {
              const int64_t ih = oh * g.stride_h - g.pad_top + ki * g.dilation_h;
              const int64_t iw = ow * g.stride_w - g.pad_left + kj * g.dilation_w;
              const bool inside = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
              cols.push_back(inside ? x[static_cast<size_t>(((b * g.c + ci) * g.in_h + ih) * g.in_w + iw)] : T(0));
            }
  return cols;
}

TEST_F(DeviceOpsTest, Im2colMatchesTheHostLoop) {
  struct Case {
    int64_t n, c, h, w;
    int64_t kernel[2], strides[2], pads[4], dilations[2];
  };
  const std::vector<Case> cases = {
      {1, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {1, 1, 5, 7, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},         // same, odd sizes
      {2, 3, 9, 11, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},        // strided
      {2, 3, 13, 9, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}},        // a small ResNet stem
      {1, 3, 224, 224, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}},     // the ResNet stem: 1.8M elements
      {2, 3, 10, 9, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}},        // dilation 2
      {1, 3, 11, 12, {3, 2}, {1, 2}, {2, 0, 0, 1}, {2, 1}},       // mixed per axis, uneven pads
      {2, 3, 7, 7, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}},         // 1x1: a copy
      {2, 1, 9, 7, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}},         // 1x1 stride 2
      {1, 3, 32, 48, {16, 16}, {16, 16}, {0, 0, 0, 0}, {1, 1}},   // ViT patchify
      {1, 1, 3, 3, {5, 5}, {1, 1}, {1, 1, 1, 1}, {1, 1}},         // one pixel, mostly padding
      {1, 2, 2, 2, {3, 3}, {1, 1}, {3, 3, 3, 3}, {1, 1}},         // pixels seeing only padding
      {0, 3, 7, 7, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},         // empty batch
      {2, 0, 7, 7, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},         // no channels
  };
  for (const Case& c : cases)
    for (DType dtype : {DType::f32, DType::f64}) {
      SCOPED_TRACE(::testing::Message() << "[" << c.n << ", " << c.c << ", " << c.h << ", " << c.w << "] kernel "
                                        << c.kernel[0] << "x" << c.kernel[1] << " stride " << c.strides[0] << "x"
                                        << c.strides[1] << " dilation " << c.dilations[0] << "x" << c.dilations[1]
                                        << " " << (dtype == DType::f32 ? "f32" : "f64"));
      Im2colShape g = make_im2col_shape(c.n, c.c, c.h, c.w, c.kernel, c.strides, c.pads, c.dilations, dtype);
      const size_t n_in = static_cast<size_t>(c.n * c.c * c.h * c.w);
      Bytes x, expected;
      if (dtype == DType::f32) {
        std::vector<float> v = random_values<float>(n_in, random_, 0.05);  // NaNs and -0 are copied as bits
        x = as_bytes(v), expected = as_bytes(im2col_reference(v, g));
      } else {
        std::vector<double> v = random_values<double>(n_in, random_, 0.05);
        x = as_bytes(v), expected = as_bytes(im2col_reference(v, g));
      }
      ASSERT_EQ(expected.size(), static_cast<size_t>(g.n * g.rows() * g.pixels()) * (dtype == DType::f32 ? 4 : 8));
      Buffer in = upload(x), out = output(expected.size());
      ops().im2col(stream(), in.ptr(), out.ptr(), g);
      EXPECT_EQ(download(out), expected);  // bitwise, padding +0
    }
}

TEST_F(DeviceOpsTest, PoolingRejectsOtherDtypes) {
  Pool2dShape g;
  g.dtype = DType::f16;
  EXPECT_THROW(ops().max_pool2d(stream(), 0, 0, g), UnsupportedError);
  EXPECT_THROW(ops().global_average_pool(stream(), 0, 0, 1, 1, DType::i32), UnsupportedError);
  Im2colShape i;
  i.dtype = DType::f16;
  EXPECT_THROW(ops().im2col(stream(), 0, 0, i), UnsupportedError);
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
