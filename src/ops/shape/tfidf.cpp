// TfIdfVectorizer over integer tokens: X [C] or [B, C] -> f32 [output_size] or [B, output_size], the
// count of each pooled n-gram in each row (TF), 1 or its weight where it occurs (IDF), or its weight
// times the count (TFIDF; the count without weights). pool_int64s lists the n-grams by size,
// ngram_counts[i] the start of the (i+1)-grams, ngram_indexes each n-gram's output column; only sizes
// in [min_gram_length, max_gram_length] are counted. An n-gram may skip up to max_skip_count tokens
// between its items (the same skip throughout); unigrams count once. String pools are not supported.
#include <algorithm>
#include <map>

#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

enum class Weighting { tf, idf, tfidf };

struct TfIdf {
  int64_t min_gram = 1, max_gram = 1, max_skip = 0, output_size = 0;
  Weighting weighting = Weighting::tf;
  std::map<std::vector<int64_t>, int64_t> column;  // n-gram -> output column
  std::vector<double> weights;
};

TfIdf read_tfidf(const Node& node) {
  auto fail = [&](const std::string& what) { user_error("node '{}' (TfIdfVectorizer): {}", node.name, what); };
  if (node.has_attr("pool_strings")) unsupported("node '{}' (TfIdfVectorizer): pool_strings (string tokens) are not supported", node.name);
  TfIdf t;
  t.min_gram = node.attr_int("min_gram_length", 0), t.max_gram = node.attr_int("max_gram_length", 0);
  t.max_skip = node.attr_int("max_skip_count", 0);
  if (t.min_gram < 1 || t.max_gram < t.min_gram) fail(fmt::format("gram lengths {} to {} are not 1 <= min <= max", t.min_gram, t.max_gram));
  if (t.max_skip < 0) fail(fmt::format("max_skip_count {} is negative", t.max_skip));
  const std::string mode = node.attr_string("mode", "");
  if (mode == "TF") t.weighting = Weighting::tf;
  else if (mode == "IDF") t.weighting = Weighting::idf;
  else if (mode == "TFIDF") t.weighting = Weighting::tfidf;
  else fail(fmt::format("unknown mode '{}' (expected TF, IDF or TFIDF)", mode));
  const std::vector<int64_t> pool = node.attr_ints("pool_int64s"), counts = node.attr_ints("ngram_counts"),
                             indexes = node.attr_ints("ngram_indexes");
  t.weights = node.attr_floats("weights");
  int64_t id = 0;  // n-grams are numbered across every size, in pool order
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t size = int64_t(i) + 1, begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : int64_t(pool.size());
    if (begin < 0 || begin > end || end > int64_t(pool.size()) || (end - begin) % size != 0)
      fail(fmt::format("ngram_counts {} does not split the pool of {} into {}-grams", begin, pool.size(), size));
    for (int64_t at = begin; at < end; at += size, ++id) {
      if (id >= int64_t(indexes.size())) fail(fmt::format("ngram_indexes has {} entries, fewer than the n-grams", indexes.size()));
      if (indexes[size_t(id)] < 0) fail(fmt::format("ngram_indexes holds {}", indexes[size_t(id)]));
      t.output_size = std::max(t.output_size, indexes[size_t(id)] + 1);
      if (size >= t.min_gram && size <= t.max_gram)
        t.column[std::vector<int64_t>(pool.begin() + at, pool.begin() + at + size)] = indexes[size_t(id)];
    }
  }
  if (!t.weights.empty() && int64_t(t.weights.size()) < t.output_size)
    fail(fmt::format("weights has {} entries for {} outputs", t.weights.size(), t.output_size));
  return t;
}

std::vector<TensorType> infer_tfidf(InferContext& ctx) {
  const TfIdf t = read_tfidf(ctx.node());
  const TensorType& x = ctx.in(0);
  if (x.dtype != DType::i32 && x.dtype != DType::i64) ctx.fail("X must be i32 or i64 tokens, is {}", dtype_name(x.dtype));
  if (x.rank() != 1 && x.rank() != 2) ctx.fail("X must be [C] or [B, C], has rank {}", x.rank());
  if (x.rank() == 1) return {TensorType{DType::f32, {Dim::fixed(t.output_size)}}};
  return {TensorType{DType::f32, {x.shape[0], Dim::fixed(t.output_size)}}};
}

void kernel_tfidf(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const TfIdf t = read_tfidf(node);
  const Tensor& x = *in[0];
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, C = x.dim(-1);
  std::vector<int64_t> freq(size_t(rows * t.output_size), 0), gram;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t skip = 0; skip <= t.max_skip; ++skip) {
      const int64_t stride = skip + 1, smallest = skip == 0 ? t.min_gram : std::max<int64_t>(t.min_gram, 2);
      for (int64_t start = 0; start < C; ++start) {
        gram.clear();
        for (int64_t n = 1; n <= t.max_gram && start + (n - 1) * stride < C; ++n) {
          gram.push_back(x.as_int64(r * C + start + (n - 1) * stride));
          if (n < smallest) continue;
          auto it = t.column.find(gram);
          if (it != t.column.end()) ++freq[size_t(r * t.output_size + it->second)];
        }
      }
    }
  float* y = out[0].data<float>();
  for (size_t i = 0; i < freq.size(); ++i) {
    const double w = t.weights.empty() ? 1.0 : t.weights[i % size_t(t.output_size)];
    const double f = double(freq[i]);
    y[i] = float(t.weighting == Weighting::tf ? f : t.weighting == Weighting::idf ? (f > 0 ? w : 0) : w * f);
  }
}

}  // namespace

void register_tfidf_op(OpRegistry& r) {
  OpDef def;
  def.infer = infer_tfidf;
  def.kernel = kernel_tfidf;
  def.min_inputs = def.max_inputs = 1;
  r.add(OpKind::TfIdfVectorizer, def);
}

}  // namespace kiln::shape_ops
