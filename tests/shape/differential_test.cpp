// Differential checks on random data: each kernel against a naive index-by-index implementation (every
// dtype, compared bytewise), and f32 eager against the fp64 reference path.
#include <algorithm>
#include <functional>
#include <limits>

#include "shape_test_util.h"

namespace kiln::shape_test {
namespace {

// Random bytes of `dtype` (bool: 0/1; floats: real values with NaN/Inf mixed in).
Tensor random_tensor(DType dtype, std::vector<int64_t> shape, std::mt19937& rng) {
  if (dtype == DType::f32) return random_f32(std::move(shape), rng);
  Tensor f = random_f32(shape, rng);
  Tensor t = Tensor::empty(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = f.data<float>()[i];
    switch (dtype) {
      case DType::f16: t.data<uint16_t>()[i] = float_to_half(v); break;
      case DType::bf16: t.data<uint16_t>()[i] = float_to_bf16(v); break;
      case DType::f64: t.data<double>()[i] = v; break;
      case DType::boolean: t.data<bool>()[i] = v > 0; break;
      default:  // integers: random bytes
        for (size_t b = 0; b < dtype_size(dtype); ++b)
          static_cast<uint8_t*>(t.raw())[static_cast<size_t>(i) * dtype_size(dtype) + b] = static_cast<uint8_t>(rng());
        break;
    }
  }
  return t;
}

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    idx[k] = flat % dims[k];
    flat /= dims[k];
  }
  return idx;
}
int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t flat = 0;
  for (size_t k = 0; k < dims.size(); ++k) flat = flat * dims[k] + idx[k];
  return flat;
}

// out[i] = src(i) element by element: `source(out_index)` gives (input number, input flat index).
Tensor naive(DType dtype, const std::vector<int64_t>& out_dims, const std::vector<const Tensor*>& in,
             const std::function<std::pair<size_t, int64_t>(const std::vector<int64_t>&)>& source) {
  Tensor out = Tensor::empty(dtype, out_dims);
  size_t es = dtype_size(dtype);
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto [which, at] = source(unravel(i, out_dims));
    std::memcpy(static_cast<char*>(out.raw()) + i * es, static_cast<const char*>(in[which]->raw()) + at * es, es);
  }
  return out;
}

std::vector<int64_t> random_dims(std::mt19937& rng, int rank, int max_dim) {
  std::vector<int64_t> d;
  for (int k = 0; k < rank; ++k) d.push_back(std::uniform_int_distribution<int>(0, 9)(rng) == 0 ? 0 :
                                             std::uniform_int_distribution<int>(1, max_dim)(rng));
  return d;
}

constexpr DType kDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64,
                             DType::i32, DType::i8,  DType::u8,   DType::boolean};

TEST(Differential, TransposeMatchesNaive) {
  std::mt19937 rng(1);
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> fixed = {
      {{2, 67, 3, 33}, {0, 2, 1, 3}},  // [B,S,H,D] -> [B,H,S,D]
      {{3, 70, 45}, {0, 2, 1}},        // last two swapped, odd sizes (partial tiles)
      {{130, 257}, {1, 0}},            // large enough for the parallel path
      {{5, 1, 7, 1, 3}, {4, 2, 0, 3, 1}},
  };
  for (int trial = 0; trial < 60; ++trial) {
    int rank = std::uniform_int_distribution<int>(1, 5)(rng);
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    for (int k = 0; k < rank; ++k) perm[static_cast<size_t>(k)] = k;
    std::shuffle(perm.begin(), perm.end(), rng);
    fixed.push_back({random_dims(rng, rank, 7), perm});
  }
  int case_no = 0;
  for (const auto& dims_and_perm : fixed) {
    // References, not a structured binding: clang 14 (the fuzz build) cannot capture those in a lambda.
    const auto& dims = dims_and_perm.first;
    const auto& perm = dims_and_perm.second;
    DType dt = kDTypes[case_no++ % std::size(kDTypes)];
    Tensor x = random_tensor(dt, dims, rng);
    Node n = make_node(OpKind::Transpose, 1);
    set_attr(n, "perm", perm);
    std::vector<int64_t> out_dims;
    for (int64_t p : perm) out_dims.push_back(dims[static_cast<size_t>(p)]);
    Tensor want = naive(dt, out_dims, {&x}, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> i(dims.size());
      for (size_t k = 0; k < perm.size(); ++k) i[static_cast<size_t>(perm[k])] = o[k];
      return std::pair<size_t, int64_t>{0, ravel(i, dims)};
    });
    EXPECT_TRUE(same_bytes(run1(n, {&x}), want)) << "case " << case_no << " " << x.shape_string();
  }
}

TEST(Differential, ConcatMatchesNaive) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 60; ++trial) {
    DType dt = kDTypes[static_cast<size_t>(trial) % std::size(kDTypes)];
    bool big = trial < 3;  // large enough for the parallel paths
    int rank = big ? 3 : std::uniform_int_distribution<int>(1, 4)(rng);
    std::vector<int64_t> base = random_dims(rng, rank, big ? 40 : 6);
    int axis = std::uniform_int_distribution<int>(0, rank - 1)(rng);
    int count = std::uniform_int_distribution<int>(1, 4)(rng);
    std::vector<Tensor> xs;
    for (int i = 0; i < count; ++i) {
      std::vector<int64_t> d = base;
      d[static_cast<size_t>(axis)] = std::uniform_int_distribution<int>(0, 5)(rng);
      xs.push_back(random_tensor(dt, d, rng));
    }
    std::vector<const Tensor*> in;
    for (auto& t : xs) in.push_back(&t);
    Node n = make_node(OpKind::Concat, in.size());
    set_attr(n, "axis", int64_t{axis - (trial % 2 ? rank : 0)});  // negative half the time
    std::vector<int64_t> out_dims = base;
    out_dims[static_cast<size_t>(axis)] = 0;
    for (auto& t : xs) out_dims[static_cast<size_t>(axis)] += t.shape()[static_cast<size_t>(axis)];
    Tensor want = naive(dt, out_dims, in, [&](std::vector<int64_t> o) {
      size_t which = 0;
      while (o[static_cast<size_t>(axis)] >= xs[which].shape()[static_cast<size_t>(axis)])
        o[static_cast<size_t>(axis)] -= xs[which++].shape()[static_cast<size_t>(axis)];
      return std::pair<size_t, int64_t>{which, ravel(o, xs[which].shape())};
    });
    EXPECT_TRUE(same_bytes(run1(n, in), want)) << "trial " << trial;
  }
}

TEST(Differential, GatherMatchesNaive) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 60; ++trial) {
    DType dt = kDTypes[static_cast<size_t>(trial) % std::size(kDTypes)];
    bool big = trial < 3;
    int rank = big ? 3 : std::uniform_int_distribution<int>(1, 4)(rng);
    std::vector<int64_t> dims = random_dims(rng, rank, big ? 40 : 6);
    int axis = std::uniform_int_distribution<int>(0, rank - 1)(rng);
    int64_t d = dims[static_cast<size_t>(axis)];
    std::vector<int64_t> idx_dims = random_dims(rng, std::uniform_int_distribution<int>(0, 2)(rng), 5);
    if (d == 0) idx_dims.push_back(0);  // nothing can be gathered from an empty axis
    Tensor idx = Tensor::empty(trial % 2 ? DType::i32 : DType::i64, idx_dims);
    std::vector<int64_t> raw(static_cast<size_t>(idx.numel()));
    for (auto& v : raw) v = std::uniform_int_distribution<int64_t>(-d, std::max<int64_t>(d - 1, 0))(rng);
    idx = Tensor::from_vector(idx.dtype(), idx_dims, raw);
    Tensor x = random_tensor(dt, dims, rng);
    Node n = make_node(OpKind::Gather, 2);
    set_attr(n, "axis", int64_t{axis});
    std::vector<int64_t> out_dims(dims.begin(), dims.begin() + axis);
    out_dims.insert(out_dims.end(), idx_dims.begin(), idx_dims.end());
    out_dims.insert(out_dims.end(), dims.begin() + axis + 1, dims.end());
    size_t ir = idx_dims.size();
    Tensor want = naive(dt, out_dims, {&x}, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> i(o.begin(), o.begin() + axis);
      std::vector<int64_t> j(o.begin() + axis, o.begin() + axis + static_cast<std::ptrdiff_t>(ir));
      int64_t v = raw[static_cast<size_t>(ravel(j, idx_dims))];
      i.push_back(v < 0 ? v + d : v);
      i.insert(i.end(), o.begin() + axis + static_cast<std::ptrdiff_t>(ir), o.end());
      return std::pair<size_t, int64_t>{0, ravel(i, dims)};
    });
    EXPECT_TRUE(same_bytes(run1(n, {&x, &idx}), want)) << "trial " << trial;
  }
}

// The elements one Slice axis selects, walked step by step as the spec describes.
std::vector<int64_t> naive_slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (dim == 0) return {};
  auto fix = [dim](int64_t v) { return v < 0 ? v + dim : v; };
  start = fix(start);
  end = fix(end);
  std::vector<int64_t> r;
  if (step > 0) {
    for (int64_t i = std::max<int64_t>(start, 0); i < std::min(end, dim); i += step) r.push_back(i);
  } else {
    // The spec clamps a backward start into [0, dim-1] (numpy would give nothing for a start before 0).
    for (int64_t i = std::max<int64_t>(std::min(start, dim - 1), 0); i > std::max<int64_t>(end, -1); i += step)
      r.push_back(i);
  }
  return r;
}

TEST(Differential, SliceMatchesNaive) {
  std::mt19937 rng(4);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  auto pick = [&](int64_t dim) -> int64_t {
    switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
      case 0: return kMax;
      case 1: return kMin;
      default: return std::uniform_int_distribution<int64_t>(-dim - 2, dim + 2)(rng);
    }
  };
  for (int trial = 0; trial < 100; ++trial) {
    DType dt = kDTypes[static_cast<size_t>(trial) % std::size(kDTypes)];
    bool big = trial < 3;
    int rank = big ? 3 : std::uniform_int_distribution<int>(1, 4)(rng);
    std::vector<int64_t> dims = random_dims(rng, rank, big ? 40 : 7);
    std::vector<int64_t> axes, starts, ends, steps;
    for (int k = 0; k < rank; ++k)
      if (rng() % 2) axes.push_back(k);
    std::shuffle(axes.begin(), axes.end(), rng);
    std::vector<std::vector<int64_t>> picked(static_cast<size_t>(rank));
    for (int k = 0; k < rank; ++k)
      for (int64_t i = 0; i < dims[static_cast<size_t>(k)]; ++i) picked[static_cast<size_t>(k)].push_back(i);
    for (int64_t& a : axes) {
      int64_t dim = dims[static_cast<size_t>(a)];
      starts.push_back(pick(dim));
      ends.push_back(pick(dim));
      int64_t st = std::uniform_int_distribution<int64_t>(-3, 3)(rng);
      steps.push_back(st == 0 ? 1 : st);
      picked[static_cast<size_t>(a)] = naive_slice_axis(dim, starts.back(), ends.back(), steps.back());
      if (rng() % 2) a -= rank;  // negative axes
    }
    Tensor x = random_tensor(dt, dims, rng);
    Tensor s = i64v(starts), e = i64v(ends), a = i64v(axes), st = i64v(steps);
    std::vector<int64_t> out_dims;
    for (auto& p : picked) out_dims.push_back(static_cast<int64_t>(p.size()));
    Tensor want = naive(dt, out_dims, {&x}, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> i(o.size());
      for (size_t k = 0; k < o.size(); ++k) i[k] = picked[k][static_cast<size_t>(o[k])];
      return std::pair<size_t, int64_t>{0, ravel(i, dims)};
    });
    EXPECT_TRUE(same_bytes(run1(make_node(OpKind::Slice, 5), {&x, &s, &e, &a, &st}), want)) << "trial " << trial;
  }
}

TEST(Differential, ExpandAndTileMatchNaive) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    DType dt = kDTypes[static_cast<size_t>(trial) % std::size(kDTypes)];
    int rank = std::uniform_int_distribution<int>(1, 4)(rng);
    std::vector<int64_t> dims = random_dims(rng, rank, 5), target, reps;
    for (int64_t d : dims) {
      target.push_back(d == 1 ? std::uniform_int_distribution<int64_t>(0, 4)(rng) : (rng() % 2 ? d : 1));
      reps.push_back(std::uniform_int_distribution<int64_t>(0, 3)(rng));
    }
    if (rng() % 2) target.insert(target.begin(), 3);
    Tensor x = random_tensor(dt, dims, rng);
    Tensor t = i64v(target), r = i64v(reps);
    std::vector<int64_t> out_dims = target;
    size_t off = target.size() - dims.size();
    for (size_t k = 0; k < dims.size(); ++k) out_dims[off + k] = dims[k] == 1 ? target[off + k] : dims[k];
    Tensor want = naive(dt, out_dims, {&x}, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> i(dims.size());
      for (size_t k = 0; k < dims.size(); ++k) i[k] = dims[k] == 1 ? 0 : o[off + k];
      return std::pair<size_t, int64_t>{0, ravel(i, dims)};
    });
    EXPECT_TRUE(same_bytes(run1(make_node(OpKind::Expand, 2), {&x, &t}), want)) << "expand " << trial;
    std::vector<int64_t> tiled;
    for (size_t k = 0; k < dims.size(); ++k) tiled.push_back(dims[k] * reps[k]);
    Tensor want_tile = naive(dt, tiled, {&x}, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> i(dims.size());
      for (size_t k = 0; k < dims.size(); ++k) i[k] = o[k] % dims[k];
      return std::pair<size_t, int64_t>{0, ravel(i, dims)};
    });
    EXPECT_TRUE(same_bytes(run1(make_node(OpKind::Tile, 2), {&x, &r}), want_tile)) << "tile " << trial;
  }
}

TEST(Differential, LongRowsSplitAcrossThreads) {
  std::mt19937 rng(8);
  // Concat on axis 0: one output row, blocks larger than one copy piece.
  Tensor a = random_tensor(DType::f32, {300, 100}, rng), b = random_tensor(DType::f32, {7, 100}, rng);
  Node cat = make_node(OpKind::Concat, 2);
  set_attr(cat, "axis", int64_t{0});
  Tensor want = naive(DType::f32, {307, 100}, {&a, &b}, [&](const std::vector<int64_t>& o) {
    return o[0] < 300 ? std::pair<size_t, int64_t>{0, o[0] * 100 + o[1]} : std::pair<size_t, int64_t>{1, (o[0] - 300) * 100 + o[1]};
  });
  EXPECT_TRUE(same_bytes(run1(cat, {&a, &b}), want));
  // Split of a few long rows: the strided copy cuts rows into chunks.
  Tensor x = random_tensor(DType::f16, {3, 90001}, rng);
  Node sp = make_node(OpKind::Split, 2, 2);
  set_attr(sp, "axis", int64_t{1});
  Tensor sizes = i64v({40000, 50001});
  auto parts = run(sp, {&x, &sizes});
  for (int k = 0; k < 2; ++k) {
    int64_t start = k == 0 ? 0 : 40000;
    Tensor part = naive(DType::f16, {3, k == 0 ? 40000 : 50001}, {&x}, [&](const std::vector<int64_t>& o) {
      return std::pair<size_t, int64_t>{0, o[0] * 90001 + start + o[1]};
    });
    EXPECT_TRUE(same_bytes(parts[static_cast<size_t>(k)], part)) << k;
  }
}

// Pad's source position along one axis, computed the slow way (reflect by repeated mirroring).
int64_t naive_pad_source(const std::string& mode, int64_t i, int64_t d) {
  if (mode == "constant") return i >= 0 && i < d ? i : -1;
  if (mode == "edge") return std::min(std::max<int64_t>(i, 0), d - 1);
  if (mode == "wrap") return ((i % d) + d) % d;
  if (d == 1) return 0;
  while (i < 0 || i >= d) i = i < 0 ? -i : 2 * (d - 1) - i;
  return i;
}

TEST(Differential, PadMatchesNaive) {
  std::mt19937 rng(7);
  const std::string modes[] = {"constant", "reflect", "edge", "wrap"};
  for (int trial = 0; trial < 80; ++trial) {
    DType dt = kDTypes[static_cast<size_t>(trial) % std::size(kDTypes)];
    std::string mode = modes[trial % 4];
    int rank = std::uniform_int_distribution<int>(1, 4)(rng);
    std::vector<int64_t> dims = random_dims(rng, rank, 6), pads(2 * static_cast<size_t>(rank)), out_dims;
    for (int k = 0; k < rank; ++k) {
      int64_t d = dims[static_cast<size_t>(k)];
      for (int side = 0; side < 2; ++side) {
        int64_t lo = mode == "constant" ? -d / 2 : 0;  // crops too
        pads[static_cast<size_t>(k + side * rank)] = d == 0 && mode != "constant" ? 0 : std::uniform_int_distribution<int64_t>(lo, 7)(rng);
      }
      out_dims.push_back(d + pads[static_cast<size_t>(k)] + pads[static_cast<size_t>(k + rank)]);
    }
    Tensor x = random_tensor(dt, dims, rng);
    Tensor fill = random_tensor(dt, {}, rng);
    Tensor p = i64v(pads);
    std::vector<const Tensor*> in{&x, &fill};
    Tensor want = naive(dt, out_dims, in, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> i(o.size());
      for (size_t k = 0; k < o.size(); ++k) {
        i[k] = naive_pad_source(mode, o[k] - pads[k], dims[k]);
        if (i[k] < 0) return std::pair<size_t, int64_t>{1, 0};
      }
      return std::pair<size_t, int64_t>{0, ravel(i, dims)};
    });
    Node n = make_node(OpKind::Pad, 3);
    set_attr(n, "mode", mode);
    EXPECT_TRUE(same_bytes(run1(n, {&x, &p, &fill}), want)) << mode << " trial " << trial << " " << x.shape_string();
  }
}

// f32 eager against the fp64 reference path: data movement must agree exactly (NaN where NaN).
void expect_reference_agrees(const Node& n, const std::vector<const Tensor*>& in) {
  std::vector<Tensor> wide;
  std::vector<const Tensor*> ref_in;
  wide.reserve(in.size());
  for (const Tensor* t : in) {
    if (t && t->dtype() == DType::f32) {
      wide.push_back(convert_tensor(*t, DType::f64));
      ref_in.push_back(&wide.back());
    } else {
      ref_in.push_back(t);
    }
  }
  std::vector<Tensor> eager = run(n, in), ref = run(n, ref_in, true);
  ASSERT_EQ(eager.size(), ref.size());
  for (size_t k = 0; k < eager.size(); ++k) {
    ASSERT_EQ(eager[k].shape(), ref[k].shape()) << op_name(n.op);
    for (int64_t i = 0; i < eager[k].numel(); ++i) {
      double a = eager[k].as_double(i), b = ref[k].as_double(i);
      if (std::isnan(a) || std::isnan(b)) EXPECT_TRUE(std::isnan(a) && std::isnan(b)) << op_name(n.op);
      else EXPECT_EQ(a, b) << op_name(n.op) << " output " << k << " element " << i;
    }
  }
}

TEST(Differential, EagerF32MatchesReferenceF64) {
  std::mt19937 rng(6);
  Tensor x = random_f32({3, 1, 5, 4}, rng), y = random_f32({3, 2, 5, 4}, rng);
  Node tr = make_node(OpKind::Transpose, 1);
  set_attr(tr, "perm", std::vector<int64_t>{3, 1, 0, 2});
  expect_reference_agrees(tr, {&x});
  Node cat = make_node(OpKind::Concat, 2);
  set_attr(cat, "axis", int64_t{1});
  expect_reference_agrees(cat, {&x, &y});
  Tensor idx = i64v({2, -1, 0});
  Node g = make_node(OpKind::Gather, 2);
  set_attr(g, "axis", int64_t{-2});
  expect_reference_agrees(g, {&y, &idx});
  Tensor s = i64v({4, 1}), e = i64v({std::numeric_limits<int64_t>::min(), 5}), a = i64v({2, -1}), st = i64v({-2, 2});
  expect_reference_agrees(make_node(OpKind::Slice, 5), {&y, &s, &e, &a, &st});
  Node sp = make_node(OpKind::Split, 1, 2);
  set_attr(sp, "axis", int64_t{2});
  expect_reference_agrees(sp, {&y});
  Tensor shape = i64v({2, 3, 1, 5, 4});
  expect_reference_agrees(make_node(OpKind::Expand, 2), {&x, &shape});
  Tensor reps = i64v({1, 2, 1, 3});
  expect_reference_agrees(make_node(OpKind::Tile, 2), {&x, &reps});
  Tensor pads = i64v({0, 0, 2, 1, 0, 0, 1, 3});
  Node pr = make_node(OpKind::Pad, 2);
  set_attr(pr, "mode", std::string("reflect"));
  expect_reference_agrees(pr, {&x, &pads});
  Tensor cv = Tensor::scalar(DType::f32, -INFINITY);
  expect_reference_agrees(make_node(OpKind::Pad, 3), {&x, &pads, &cv});
  Tensor k = Tensor::scalar(DType::i64, int64_t{-1});
  expect_reference_agrees(make_node(OpKind::Trilu, 2), {&y, &k});
  Tensor ge_idx = i64({3, 1, 2, 4}, std::vector<int64_t>(24, -1));
  expect_reference_agrees(make_node(OpKind::GatherElements, 2), {&x, &ge_idx});
  Tensor rs = i64v({0, -1});
  expect_reference_agrees(make_node(OpKind::Reshape, 2), {&y, &rs});
  Tensor r0 = Tensor::scalar(DType::f32, 0.5f), r1 = Tensor::scalar(DType::f32, 7.0f), r2 = Tensor::scalar(DType::f32, 0.75f);
  expect_reference_agrees(make_node(OpKind::Range, 3), {&r0, &r1, &r2});
}

}  // namespace
}  // namespace kiln::shape_test
