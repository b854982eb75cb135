// TfIdfVectorizer on token rows whose counts are worked out by hand: unigrams and bigrams, skips,
// a minimum gram length, IDF and TFIDF weights, a batch of two rows; then bad attributes.
#include <cstdint>

#include "shape_test_util.h"

namespace kiln::shape_test {
namespace {

// Pool: unigrams 1, 2 (columns 0, 1) and bigrams (1, 2), (2, 3) (columns 2, 3).
Node tfidf(const char* mode, int64_t min_gram, int64_t max_skip) {
  Node n = make_node(OpKind::TfIdfVectorizer, 1);
  set_attr(n, "mode", std::string(mode));
  set_attr(n, "min_gram_length", min_gram);
  set_attr(n, "max_gram_length", int64_t{2});
  set_attr(n, "max_skip_count", max_skip);
  set_attr(n, "pool_int64s", std::vector<int64_t>{1, 2, 1, 2, 2, 3});
  set_attr(n, "ngram_counts", std::vector<int64_t>{0, 2});
  set_attr(n, "ngram_indexes", std::vector<int64_t>{0, 1, 2, 3});
  return n;
}

TEST(TfIdfVectorizer, CountsUnigramsBigramsAndSkips) {
  Tensor x = i64v({1, 2, 3, 1, 2});
  EXPECT_EQ(values(run1(tfidf("TF", 1, 0), {&x})), (std::vector<double>{2, 2, 2, 1}));
  // Skipping one token: (1, 2) from positions 0 and 2; unigrams still count once.
  Tensor skips = i64v({1, 5, 2, 3});
  EXPECT_EQ(values(run1(tfidf("TF", 1, 1), {&skips})), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(values(run1(tfidf("TF", 1, 0), {&skips})), (std::vector<double>{1, 1, 0, 1}));
  EXPECT_EQ(values(run1(tfidf("TF", 2, 1), {&skips})), (std::vector<double>{0, 0, 1, 1}));
  // Two rows: [B, 4].
  Tensor rows = i64({2, 3}, {1, 2, 3, 3, 3, 3});
  Tensor y = run1(tfidf("TF", 1, 0), {&rows});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(values(y), (std::vector<double>{1, 1, 1, 1, 0, 0, 0, 0}));
}

TEST(TfIdfVectorizer, IdfAndTfidfWeights) {
  Tensor x = i64v({1, 2, 3, 1, 2});
  Node idf = tfidf("IDF", 1, 0), weighted = tfidf("TFIDF", 1, 0);
  EXPECT_EQ(values(run1(idf, {&x})), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(values(run1(weighted, {&x})), (std::vector<double>{2, 2, 2, 1}));
  set_attr(idf, "weights", std::vector<double>{0.5, 1, 2, 4});
  set_attr(weighted, "weights", std::vector<double>{0.5, 1, 2, 4});
  EXPECT_EQ(values(run1(idf, {&x})), (std::vector<double>{0.5, 1, 2, 4}));
  EXPECT_EQ(values(run1(weighted, {&x})), (std::vector<double>{1, 2, 4, 4}));
}

TEST(TfIdfVectorizer, BadAttributesAreUserErrors) {
  Tensor x = i64v({1, 2, 3});
  EXPECT_THROW(run1(tfidf("BM25", 1, 0), {&x}), UserError);
  Node n = tfidf("TF", 1, 0);
  set_attr(n, "ngram_counts", std::vector<int64_t>{0, 3});  // three tokens are not whole bigrams
  EXPECT_THROW(run1(n, {&x}), UserError);
  n = tfidf("TF", 1, 0);
  set_attr(n, "ngram_indexes", std::vector<int64_t>{0, 1});
  EXPECT_THROW(run1(n, {&x}), UserError);
  n = tfidf("TF", 3, 0);  // min above max
  EXPECT_THROW(run1(n, {&x}), UserError);
  n = tfidf("TF", 1, 0);
  set_attr(n, "pool_strings", std::vector<std::string>{"a"});
  EXPECT_THROW(run1(n, {&x}), UserError);
}

}  // namespace
}  // namespace kiln::shape_test
