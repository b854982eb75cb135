// cuBLASLt's route (backend/cuda/cublaslt.h) on the GPU (cublaslt_host_test.cpp has what runs without
// one): the matmuls need a usable GPU and skip with "SKIPPED: <why>" without one. Every GPU result is checked element by element against an fp64 host
// reference, for every algorithm the heuristic returned, with guard bytes on both sides of D.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <thread>

#include "backend/cuda/cublaslt.h"
#include "backend/cuda/nvrtc.h"
#include "cublaslt_test_util.h"
#include "cuda_test_util.h"
#include "kiln/errors.h"
#include "kiln/tensor.h"

namespace kiln::backend::cuda::testing {
namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// ---- GPU ----

class CublasLtGpuTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    std::string why;
    if (!cublaslt_available(&why)) GTEST_SKIP() << "SKIPPED: cuBLASLt is not available here: " << why;
  }
};

size_t element_size(DType t) { return t == DType::f32 ? 4 : 2; }

double round_to(DType t, double x) {
  float f = static_cast<float>(x);
  if (t == DType::bf16) return bf16_to_float(float_to_bf16(f));
  if (t == DType::f16) return half_to_float(float_to_half(f));
  return f;
}

void encode(DType t, double x, uint8_t* out) {
  float f = static_cast<float>(x);
  if (t == DType::f32) {
    std::memcpy(out, &f, 4);
    return;
  }
  uint16_t h = t == DType::bf16 ? float_to_bf16(f) : float_to_half(f);
  std::memcpy(out, &h, 2);
}

double decode(DType t, const uint8_t* in) {
  if (t == DType::f32) {
    float f;
    std::memcpy(&f, in, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, in, 2);
  return t == DType::bf16 ? bf16_to_float(h) : half_to_float(h);
}

// A device buffer and its pinned mirror, the tensor at `offset` in both (256-aligned plus `misalign`
// bytes), with kGuard bytes of kSentinel on each side, copied whole so that a stray write shows.
constexpr size_t kGuard = 256;
constexpr uint8_t kSentinel = 0xA5;  // 0xA5A5A5A5 as f32, 0xA5A5 as bf16/f16: small negative numbers

struct Staged {
  DeviceBuffer device;
  PinnedBuffer host;
  size_t offset = 0, bytes = 0;
  CUdeviceptr ptr() const { return bytes == 0 ? 0 : device.ptr() + offset; }
  uint8_t* data() const { return static_cast<uint8_t*>(host.data()) + offset; }
  void fill_sentinel() const { std::memset(host.data(), kSentinel, host.bytes()); }
};

Staged stage(const Context& context, const Stream& stream, size_t bytes, size_t misalign) {
  size_t total = bytes + 2 * kGuard + 256 + misalign;
  Staged s{DeviceBuffer(stream, total), PinnedBuffer(context, total)};
  s.offset = kGuard + (256 - s.device.ptr() % 256) % 256 + misalign;
  s.bytes = bytes;
  s.fill_sentinel();
  return s;
}

void upload(const Stream& stream, const Staged& s) { copy_to_device(stream, s.device, s.host, s.host.bytes()); }
void download(const Stream& stream, const Staged& s) { copy_to_host(stream, s.host, s.device, s.host.bytes()); }

// Exact input values (already rounded to the dtype), and where a test puts NaN and Inf.
struct Inputs {
  std::vector<double> a, b, bias, r;
};

int64_t span(int64_t batch, int64_t stride, int64_t matrix) { return batch == 0 ? 0 : (batch - 1) * stride + matrix; }

Inputs make_inputs(const GemmProblem& p, uint64_t seed, bool specials) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  auto draw = [&](int64_t count) {
    std::vector<double> v(static_cast<size_t>(count));
    for (double& x : v) x = round_to(p.dtype, uniform(random));
    return v;
  };
  Inputs in;
  in.a = draw(span(p.batch, p.batch_stride_a, p.m * p.k));
  in.b = draw(span(p.batch, p.batch_stride_b, p.k * p.n));
  in.bias = draw(p.epilogue == GemmEpilogue::none || p.epilogue == GemmEpilogue::relu ? 0 : p.n);
  in.r = draw(p.residual ? span(p.batch, p.batch_stride_residual, p.m * p.n) : 0);
  if (specials) {  // a NaN in A (a row of D), +Inf in B (a column), -Inf in R, NaN in the bias
    in.a[in.a.size() / 3] = kNan;
    in.b[in.b.size() / 2] = kInf;
    in.b[in.b.size() - 1] = -kInf;
    if (!in.r.empty()) in.r[in.r.size() / 4] = -kInf;
    if (!in.bias.empty()) in.bias[in.bias.size() - 1] = kNan;
  }
  return in;
}

struct Expected {
  std::vector<double> value, magnitude;  // magnitude: |alpha| sum |a b| + |bias| + |r|, for the bounds
};

Expected reference(const GemmProblem& p, const Inputs& in) {
  Expected e;
  size_t count = static_cast<size_t>(p.batch * p.m * p.n);
  e.value.resize(count);
  e.magnitude.resize(count);
  bool relu = p.epilogue == GemmEpilogue::relu || p.epilogue == GemmEpilogue::bias_relu;
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t kk = 0; kk < p.k; ++kk) {
          double x = in.a[static_cast<size_t>(b * p.batch_stride_a + (p.trans_a ? kk * p.m + i : i * p.k + kk))];
          double y = in.b[static_cast<size_t>(b * p.batch_stride_b + (p.trans_b ? j * p.k + kk : kk * p.n + j))];
          sum += x * y;
          magnitude += std::abs(x * y);
        }
        double value = static_cast<double>(p.alpha) * sum;
        magnitude *= std::abs(static_cast<double>(p.alpha));
        if (!in.bias.empty()) {
          value += in.bias[static_cast<size_t>(j)];
          magnitude += std::abs(in.bias[static_cast<size_t>(j)]);
        }
        if (p.residual) {
          double r = in.r[static_cast<size_t>(b * p.batch_stride_residual + i * p.n + j)];
          value += r;
          magnitude += std::abs(r);
        }
        if (relu && value < 0) value = 0;  // ONNX Relu: NaN stays NaN
        size_t at = static_cast<size_t>((b * p.m + i) * p.n + j);
        e.value[at] = value;
        e.magnitude[at] = magnitude;
      }
    }
  }
  return e;
}

// How far a result may be from the fp64 reference. Accumulating k products in fp32 in any order (split-k
// included) is off by at most about k units of 2^-24 times sum |a b|; the bound below is twice that plus
// the roundings of alpha, R and bias. bf16 and f16 results are then rounded to 8 or 11 significant bits,
// at most twice (an intermediate and the output), so they are bounded by 2^-8 or 2^-11 of the magnitude
// per rounding: far looser, as the formats are. TF32 rounds each input to 11 bits first.
double tolerance(const GemmProblem& p, double magnitude) {
  double accumulate = static_cast<double>(p.k + 4) * std::ldexp(magnitude, -23);
  if (p.allow_tf32) accumulate += std::ldexp(magnitude, -9);
  switch (p.dtype) {
    case DType::bf16: return accumulate + 2 * std::ldexp(magnitude, -8) + std::ldexp(1.0, -133);
    case DType::f16: return accumulate + 2 * std::ldexp(magnitude, -11) + std::ldexp(1.0, -24);
    default: return accumulate + std::ldexp(1.0, -140);
  }
}

struct RunResult {
  std::vector<double> d;
  bool guards_intact = true;
};

// Checks D against the reference: NaN for NaN, the same infinity, else within tolerance(). With
// `relu_nan_may_be_zero` a NaN of the reference may also come back as 0 (cuBLASLt's ReLU); `clipped`
// counts those.
void expect_matches(const GemmProblem& p, const Expected& e, const RunResult& run, const std::string& what,
                    bool relu_nan_may_be_zero = false, int* clipped = nullptr) {
  EXPECT_TRUE(run.guards_intact) << what << ": a write outside D";
  int mismatches = 0;
  for (size_t i = 0; i < e.value.size() && mismatches < 8; ++i) {
    double want = e.value[i], got = run.d[i];
    bool ok;
    if (std::isnan(want)) {
      ok = std::isnan(got) || (relu_nan_may_be_zero && got == 0);
      if (ok && !std::isnan(got) && clipped) ++*clipped;
    } else if (std::isinf(want)) {
      ok = got == want;
    } else {
      ok = std::abs(got - want) <= tolerance(p, e.magnitude[i]);
    }
    if (!ok) {
      ++mismatches;
      int64_t row = static_cast<int64_t>(i) / p.n;
      ADD_FAILURE() << what << ": D[" << row / p.m << "][" << row % p.m << "][" << static_cast<int64_t>(i) % p.n
                    << "] = " << got << ", reference " << want << " (tolerance " << tolerance(p, e.magnitude[i])
                    << ")";
    }
  }
}

// Uploads the inputs, runs `algorithm` into a sentinel-filled D and brings D back.
class Bench {
 public:
  Bench(const Context& context, const Stream& stream, const GemmProblem& p, const Inputs& in)
      : context_(context), p_(p) {
    size_t misalign = p.pointer_alignment < 256 ? p.pointer_alignment : 0;  // exactly that aligned, no more
    auto put = [&](const std::vector<double>& values) {
      Staged s = stage(context, stream, values.size() * element_size(p.dtype), misalign);
      for (size_t i = 0; i < values.size(); ++i) encode(p.dtype, values[i], s.data() + i * element_size(p.dtype));
      upload(stream, s);
      return s;
    };
    a_ = put(in.a);
    b_ = put(in.b);
    bias_ = put(in.bias);
    r_ = put(in.r);
    d_bytes_ = static_cast<size_t>(p.batch * p.m * p.n) * element_size(p.dtype);
    misalign_ = misalign;
    stream.synchronize();
  }

  RunResult run(const Stream& stream, const LtMatmul& matmul, int algorithm) const {
    Staged d = stage(context_, stream, d_bytes_, misalign_);
    upload(stream, d);
    size_t workspace_bytes = matmul.workspace_bytes(algorithm);
    Staged workspace = stage(context_, stream, workspace_bytes, 0);
    matmul.run(stream, algorithm, a_.ptr(), b_.ptr(), bias_.ptr(), r_.ptr(), d.ptr(), workspace.ptr(), workspace_bytes);
    std::memset(d.host.data(), 0, d.host.bytes());  // what comes back is the device's
    download(stream, d);
    stream.synchronize();
    RunResult out;
    const uint8_t* host = static_cast<const uint8_t*>(d.host.data());
    for (size_t i = 0; i < d.host.bytes(); ++i) {
      bool in_d = i >= d.offset && i < d.offset + d_bytes_;
      if (!in_d && host[i] != kSentinel) out.guards_intact = false;
    }
    for (size_t i = 0; i < d_bytes_ / element_size(p_.dtype); ++i) {
      out.d.push_back(decode(p_.dtype, d.data() + i * element_size(p_.dtype)));
    }
    return out;
  }

 private:
  Context context_;
  GemmProblem p_;
  Staged a_, b_, bias_, r_;
  size_t d_bytes_ = 0, misalign_ = 0;
};

// Every algorithm of the heuristic against the reference.
void check_problem(const Context& context, const Stream& stream, const GemmProblem& p, bool specials = false,
                   uint64_t seed = 1) {
  SCOPED_TRACE(describe(p));
  Inputs in = make_inputs(p, seed, specials);
  Expected e = reference(p, in);
  LtMatmul matmul(context, p);
  ASSERT_GE(matmul.algorithms(), 1);
  std::cout << "  " << matmul.summary() << "\n";
  if (p.dtype == DType::f32 && !p.allow_tf32) {
    EXPECT_NE(matmul.compute_type(), CUBLAS_COMPUTE_32F_FAST_TF32);
  }
  Bench bench(context, stream, p, in);
  for (int algorithm = 0; algorithm < matmul.algorithms(); ++algorithm) {
    expect_matches(p, e, bench.run(stream, matmul, algorithm), "algorithm " + std::to_string(algorithm));
  }
}

GemmProblem with(GemmProblem p, GemmEpilogue epilogue, bool residual) {
  p.epilogue = epilogue;
  p.residual = residual;
  if (residual) p.batch_stride_residual = p.m * p.n;
  return p;
}

TEST_F(CublasLtGpuTest, F32MatchesTheFp64ReferenceOnOddShapesEveryEpilogueAndTransposition) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 64, 37}, {45, 1, 19}, {17, 23, 1}, {7, 13, 29}, {130, 67, 250}};
  for (const auto& s : shapes) {
    for (int trans = 0; trans < 4; ++trans) {
      for (GemmEpilogue epilogue : {GemmEpilogue::none, GemmEpilogue::bias}) {
        for (bool residual : {false, true}) {
          GemmProblem p = with(problem(DType::f32, s[0], s[1], s[2]), epilogue, residual);
          p.trans_a = trans & 1;
          p.trans_b = trans & 2;
          check_problem(context, stream, p);
        }
      }
    }
  }
}

TEST_F(CublasLtGpuTest, F32LinearLayerSizesWithAlpha) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  GemmProblem linear = with(problem(DType::f32, 128, 768, 768), GemmEpilogue::bias, false);
  linear.trans_b = true;  // weights [n, k], as Linear and ONNX Gemm transB
  check_problem(context, stream, linear);
  GemmProblem mlp = with(problem(DType::f32, 33, 3072, 768), GemmEpilogue::bias, true);
  mlp.trans_b = true;
  mlp.alpha = -0.5f;
  check_problem(context, stream, mlp);
  GemmProblem plain = problem(DType::f32, 128, 768, 768);
  plain.alpha = 3.0f;
  check_problem(context, stream, plain);
}

TEST_F(CublasLtGpuTest, BatchesWithSharedAOrBAndPaddedStrides) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  for (DType dtype : {DType::f32, DType::bf16}) {
    // Shared weights (B stride 0): folded into one matmul of batch * m rows.
    GemmProblem shared_b = with(problem(dtype, 7, 13, 29), GemmEpilogue::bias, true);
    shared_b.batch = 3;
    shared_b.batch_stride_a = 7 * 29;
    shared_b.trans_b = true;
    ASSERT_TRUE(column_major_shape(shared_b).folded);
    check_problem(context, stream, shared_b);
    // The same, not folded: A transposed.
    GemmProblem shared_b_t = shared_b;
    shared_b_t.trans_a = true;
    ASSERT_FALSE(column_major_shape(shared_b_t).folded);
    check_problem(context, stream, shared_b_t);
    // A shared, B per batch; R shared too.
    GemmProblem shared_a = with(problem(dtype, 9, 33, 17), GemmEpilogue::none, true);
    shared_a.batch = 4;
    shared_a.batch_stride_b = 33 * 17;
    shared_a.trans_b = true;
    shared_a.batch_stride_residual = 0;
    check_problem(context, stream, shared_a);
    // Both per batch with padded (unaligned) strides, and a batch of one matrix each.
    GemmProblem padded = with(problem(dtype, 5, 11, 23), GemmEpilogue::bias, false);
    padded.batch = 5;
    padded.batch_stride_a = 5 * 23 + 3;
    padded.batch_stride_b = 23 * 11 + 7;
    check_problem(context, stream, padded);
    GemmProblem ones = problem(dtype, 1, 1, 1);
    ones.batch = 6;
    ones.batch_stride_a = 1;
    ones.batch_stride_b = 1;
    check_problem(context, stream, ones);
  }
}

TEST_F(CublasLtGpuTest, Bf16AndF16AccumulateInFp32) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (int trans = 0; trans < 4; ++trans) {
      GemmProblem p = with(problem(dtype, 7, 13, 29), GemmEpilogue::bias, true);
      p.trans_a = trans & 1;
      p.trans_b = trans & 2;
      check_problem(context, stream, p);
    }
    check_problem(context, stream, problem(dtype, 1, 1, 1));
    GemmProblem mlp = with(problem(dtype, 33, 3072, 768), GemmEpilogue::bias, true);
    mlp.trans_b = true;
    check_problem(context, stream, mlp);
    check_problem(context, stream, with(problem(dtype, 128, 768, 768), GemmEpilogue::none, false));
  }
}

TEST_F(CublasLtGpuTest, Tf32IsUsedOnlyWhenAllowedAndStaysWithinItsBound) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  GemmProblem p = with(problem(DType::f32, 128, 768, 768), GemmEpilogue::bias, false);
  p.allow_tf32 = true;
  LtMatmul tf32(context, p);
  EXPECT_EQ(tf32.compute_type(), CUBLAS_COMPUTE_32F_FAST_TF32);
  check_problem(context, stream, p);
  p.allow_tf32 = false;
  LtMatmul ieee(context, p);
  EXPECT_TRUE(ieee.compute_type() == CUBLAS_COMPUTE_32F_PEDANTIC || ieee.compute_type() == CUBLAS_COMPUTE_32F);
}

TEST_F(CublasLtGpuTest, PointersAlignedOnlyToTheirElementWork) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    GemmProblem p = with(problem(dtype, 7, 13, 29), GemmEpilogue::bias, true);
    p.pointer_alignment = static_cast<uint32_t>(element_size(dtype));
    check_problem(context, stream, p);
    p.trans_b = true;
    p.m = 64;
    p.n = 96;
    p.k = 128;
    p.batch_stride_residual = p.m * p.n;
    check_problem(context, stream, p);
  }
  // A pointer less aligned than promised is refused before cuBLASLt sees it.
  GemmProblem p = problem(DType::f32, 8, 8, 8);
  LtMatmul matmul(context, p);
  DeviceBuffer buffer(stream, 4096);
  EXPECT_THROW(matmul.run(stream, 0, buffer.ptr() + 4, buffer.ptr(), 0, 0, buffer.ptr() + 2048, 0, 0),
               InternalError);
  stream.synchronize();
}

TEST_F(CublasLtGpuTest, NanAndInfPropagate) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (int trans = 0; trans < 4; ++trans) {
      GemmProblem p = with(problem(dtype, 16, 24, 40), GemmEpilogue::bias, true);
      p.trans_a = trans & 1;
      p.trans_b = trans & 2;
      check_problem(context, stream, p, /*specials=*/true);
    }
    GemmProblem batched = with(problem(dtype, 6, 10, 12), GemmEpilogue::none, true);
    batched.batch = 3;
    batched.batch_stride_a = 6 * 12;
    check_problem(context, stream, batched, /*specials=*/true);
  }
}

// What cuBLASLt's ReLU epilogues do with NaN, which is why kiln does not use them by default: finite
// results must be right either way; each NaN of ONNX's Relu may come back NaN or 0, and the test says which.
TEST_F(CublasLtGpuTest, ReluEpilogueOfNanIsReported) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  for (GemmEpilogue epilogue : {GemmEpilogue::relu, GemmEpilogue::bias_relu}) {
    GemmProblem p = with(problem(DType::f32, 16, 24, 40), epilogue, false);
    p.relu_may_clip_nan = true;
    Inputs in = make_inputs(p, 7, /*specials=*/false);
    for (int64_t kk = 0; kk < p.k; ++kk) in.a[static_cast<size_t>(3 * p.k + kk)] = kNan;  // row 3 of D is NaN
    Expected e = reference(p, in);
    LtMatmul matmul(context, p);
    Bench bench(context, stream, p, in);
    for (int algorithm = 0; algorithm < matmul.algorithms(); ++algorithm) {
      int clipped = 0;
      expect_matches(p, e, bench.run(stream, matmul, algorithm), "algorithm " + std::to_string(algorithm),
                     /*relu_nan_may_be_zero=*/true, &clipped);
      std::cout << "  cuBLASLt " << epilogue_name(epilogue) << " epilogue, algorithm " << algorithm << ": "
                << (clipped == 0 ? "NaN propagates" : std::to_string(clipped) + " of 24 NaN results became 0")
                << "\n";
    }
  }
}

TEST_F(CublasLtGpuTest, EmptyProblemsLaunchNothing) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  for (GemmProblem p : {problem(DType::f32, 0, 13, 29), problem(DType::bf16, 7, 0, 29), problem(DType::f16, 0, 0, 0)}) {
    p.epilogue = GemmEpilogue::bias;
    LtMatmul matmul(context, p);
    EXPECT_EQ(matmul.algorithms(), 1);
    EXPECT_EQ(matmul.workspace_bytes(0), 0u);
    matmul.run(stream, 0, 0, 0, 0, 0, 0, 0, 0);
  }
  GemmProblem none = problem(DType::f32, 7, 13, 29);
  none.batch = 0;
  LtMatmul matmul(context, none);
  matmul.run(stream, 0, 0, 0, 0, 0, 0, 0, 0);
  EXPECT_THROW(matmul.run(stream, 1, 0, 0, 0, 0, 0, 0, 0), InternalError);  // no algorithm 1
  stream.synchronize();
}

TEST_F(CublasLtGpuTest, RunIsThreadSafeAcrossStreams) {
  Device device(probe_.device);
  Context context(device);
  Stream setup(context);
  GemmProblem p = with(problem(DType::f32, 64, 96, 80), GemmEpilogue::bias, true);
  Inputs in = make_inputs(p, 3, false);
  Expected e = reference(p, in);
  LtMatmul matmul(context, p);
  Bench bench(context, setup, p, in);
  const int threads = 4;
  std::vector<RunResult> runs(threads);
  std::vector<std::string> errors(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      try {
        Stream stream(context);
        for (int repeat = 0; repeat < 5; ++repeat) runs[static_cast<size_t>(t)] = bench.run(stream, matmul, 0);
      } catch (const std::exception& ex) {
        errors[static_cast<size_t>(t)] = ex.what();
      }
    });
  }
  for (std::thread& w : workers) w.join();
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(errors[static_cast<size_t>(t)], "");
    expect_matches(p, e, runs[static_cast<size_t>(t)], "thread " + std::to_string(t));
  }
}

TEST_F(CublasLtGpuTest, TooSmallAWorkspaceAndAForeignAlgorithmAreRefused) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  GemmProblem p = problem(DType::f32, 8, 8, 8);
  LtMatmul matmul(context, p);
  EXPECT_THROW(matmul.workspace_bytes(matmul.algorithms()), InternalError);
  EXPECT_THROW(matmul.workspace_bytes(-1), InternalError);
  for (int algorithm = 0; algorithm < matmul.algorithms(); ++algorithm) {
    size_t needed = matmul.workspace_bytes(algorithm);
    if (needed == 0) continue;
    DeviceBuffer buffer(stream, 4096);
    EXPECT_THROW(matmul.run(stream, algorithm, buffer.ptr(), buffer.ptr(), 0, 0, buffer.ptr(), buffer.ptr(), needed - 1),
                 InternalError);
  }
  stream.synchronize();
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
