// The C API (include/kiln/kiln.h) in process: statuses and messages for every kind of bad call, runs on
// kiln-owned and caller-owned buffers, outputs untouched by a failed run.
#include "kiln/kiln.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace {

// y = x + 1 over x: f32[2,3] (a hostile-corpus control).
const std::string kModel = std::string(KILN_SOURCE_DIR) + "/tests/data/malformed/valid_add.onnx";

struct Loaded {
  kiln_session* session = nullptr;
  Loaded() {
    EXPECT_EQ(kiln_session_load(kModel.c_str(), KILN_MODE_COMPILED, nullptr, nullptr, nullptr, 0, &session), KILN_OK)
        << kiln_last_error();
  }
  ~Loaded() { kiln_session_destroy(session); }
};

TEST(CApi, VersionAndAbi) {
  EXPECT_EQ(std::string(kiln_version()), KILN_VERSION);
  EXPECT_EQ(kiln_abi_version(), KILN_ABI_VERSION);
  EXPECT_EQ(std::string(kiln_status_name(KILN_ERROR_USER)), "user error");
}

TEST(CApi, RunsOnKilnAndCallerBuffers) {
  Loaded m;
  ASSERT_NE(m.session, nullptr);
  ASSERT_EQ(kiln_session_input_count(m.session), 1u);
  ASSERT_EQ(kiln_session_output_count(m.session), 1u);
  EXPECT_STREQ(kiln_session_input_name(m.session, 0), "x");
  EXPECT_STREQ(kiln_session_output_name(m.session, 0), "y");
  EXPECT_EQ(kiln_session_input_name(m.session, 1), nullptr);

  const int64_t shape[] = {2, 3};
  std::vector<float> values = {0.5f, -1, 2, 1e30f, -0.0f, 3};
  kiln_tensor* copied = nullptr;
  kiln_tensor* wrapped = nullptr;
  ASSERT_EQ(kiln_tensor_create(KILN_F32, shape, 2, values.data(), &copied), KILN_OK);
  ASSERT_EQ(kiln_tensor_wrap(KILN_F32, shape, 2, values.data(), &wrapped), KILN_OK);
  EXPECT_EQ(kiln_tensor_data(wrapped), values.data());  // no copy
  EXPECT_NE(kiln_tensor_data(copied), values.data());
  for (kiln_tensor* input : {copied, wrapped}) {
    const char* names[] = {"x"};
    const kiln_tensor* inputs[] = {input};
    kiln_tensor* out = nullptr;
    ASSERT_EQ(kiln_session_run(m.session, names, inputs, 1, &out), KILN_OK) << kiln_last_error();
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(kiln_tensor_dtype(out), KILN_F32);
    ASSERT_EQ(kiln_tensor_rank(out), 2u);
    EXPECT_EQ(kiln_tensor_shape(out)[0], 2);
    EXPECT_EQ(kiln_tensor_shape(out)[1], 3);
    ASSERT_EQ(kiln_tensor_nbytes(out), 6 * sizeof(float));
    const float* y = static_cast<const float*>(kiln_tensor_data(out));
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(y[i], values[i] + 1.0f) << i;
    kiln_tensor_destroy(out);
  }
  kiln_tensor_destroy(copied);
  kiln_tensor_destroy(wrapped);
}

TEST(CApi, RunsFromManyThreadsOnOneSession) {
  Loaded m;
  ASSERT_NE(m.session, nullptr);
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const int64_t shape[] = {2, 3};
      std::vector<float> x(6, static_cast<float>(t));
      kiln_tensor* in = nullptr;
      kiln_tensor* out = nullptr;
      const char* names[] = {"x"};
      if (kiln_tensor_wrap(KILN_F32, shape, 2, x.data(), &in) != KILN_OK) return;
      const kiln_tensor* inputs[] = {in};
      if (kiln_session_run(m.session, names, inputs, 1, &out) == KILN_OK)
        ok[t] = static_cast<const float*>(kiln_tensor_data(out))[5] == static_cast<float>(t) + 1.0f;
      kiln_tensor_destroy(out);
      kiln_tensor_destroy(in);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

TEST(CApi, BadCallsFailWithAStatusAndAMessage) {
  kiln_session* s = reinterpret_cast<kiln_session*>(0x1);
  EXPECT_EQ(kiln_session_load("/nonexistent/m.onnx", KILN_MODE_COMPILED, nullptr, nullptr, nullptr, 0, &s),
            KILN_ERROR_USER);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(std::string(kiln_last_error()).find("/nonexistent/m.onnx"), std::string::npos) << kiln_last_error();
  EXPECT_EQ(kiln_session_load(nullptr, KILN_MODE_COMPILED, nullptr, nullptr, nullptr, 0, &s), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_load(kModel.c_str(), static_cast<kiln_mode>(7), nullptr, nullptr, nullptr, 0, &s),
            KILN_ERROR_INVALID_ARGUMENT);
  const char* dim_names[] = {"batch", "batch"};
  const int64_t dim_sizes[] = {1, 2};
  EXPECT_EQ(kiln_session_load(kModel.c_str(), KILN_MODE_COMPILED, nullptr, dim_names, dim_sizes, 2, &s), KILN_ERROR_USER);
  EXPECT_NE(std::string(kiln_last_error()).find("'batch' given twice"), std::string::npos) << kiln_last_error();

  kiln_options* o = nullptr;
  ASSERT_EQ(kiln_options_create(&o), KILN_OK);
  EXPECT_EQ(kiln_options_set(o, "autotune", "maybe"), KILN_ERROR_USER);
  EXPECT_NE(std::string(kiln_last_error()).find("not one of off, fast, max"), std::string::npos) << kiln_last_error();
  EXPECT_EQ(kiln_options_set(o, "no_such_setting", "1"), KILN_ERROR_USER);
  EXPECT_EQ(kiln_options_set(o, "autotune", "off"), KILN_OK);
  EXPECT_EQ(kiln_options_set(nullptr, "autotune", "off"), KILN_ERROR_INVALID_ARGUMENT);
  kiln_options_destroy(o);

  kiln_tensor* t = nullptr;
  const int64_t negative[] = {2, -1};
  EXPECT_EQ(kiln_tensor_create(KILN_F32, negative, 2, nullptr, &t), KILN_ERROR_USER);
  EXPECT_EQ(kiln_tensor_create(static_cast<kiln_dtype>(42), negative, 1, nullptr, &t), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_tensor_create(KILN_F32, nullptr, 2, nullptr, &t), KILN_ERROR_INVALID_ARGUMENT);
  const int64_t two[] = {2};
  EXPECT_EQ(kiln_tensor_wrap(KILN_F32, two, 1, nullptr, &t), KILN_ERROR_USER);
  EXPECT_EQ(t, nullptr);
  // Destroying NULL does nothing.
  kiln_tensor_destroy(nullptr);
  kiln_session_destroy(nullptr);
  kiln_options_destroy(nullptr);
}

TEST(CApi, AFailedRunLeavesTheOutputsAlone) {
  Loaded m;
  ASSERT_NE(m.session, nullptr);
  const int64_t wrong[] = {3, 3};
  kiln_tensor* in = nullptr;
  ASSERT_EQ(kiln_tensor_create(KILN_F32, wrong, 2, nullptr, &in), KILN_OK);
  kiln_tensor* sentinel = reinterpret_cast<kiln_tensor*>(0x2);
  kiln_tensor* out = sentinel;
  const char* names[] = {"x"};
  const kiln_tensor* inputs[] = {in};
  EXPECT_EQ(kiln_session_run(m.session, names, inputs, 1, &out), KILN_ERROR_USER);
  EXPECT_EQ(out, sentinel);
  EXPECT_NE(std::string(kiln_last_error()).find("input 'x'"), std::string::npos) << kiln_last_error();
  const char* unknown[] = {"z"};
  EXPECT_EQ(kiln_session_run(m.session, unknown, inputs, 1, &out), KILN_ERROR_USER);
  const char* twice[] = {"x", "x"};
  const kiln_tensor* two_inputs[] = {in, in};
  EXPECT_EQ(kiln_session_run(m.session, twice, two_inputs, 2, &out), KILN_ERROR_USER);
  EXPECT_NE(std::string(kiln_last_error()).find("given twice"), std::string::npos) << kiln_last_error();
  EXPECT_EQ(kiln_session_run(m.session, nullptr, nullptr, 1, &out), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(out, sentinel);
  kiln_tensor_destroy(in);
}

}  // namespace
