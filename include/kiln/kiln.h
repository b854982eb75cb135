/* kiln's C API: load an ONNX model, run it, read its outputs. C99; every function is safe to call from
   C or C++. Handles are opaque and owned by the caller once returned (destroy each with its
   kiln_*_destroy; destroying NULL does nothing). A function that can fail returns a kiln_status;
   on failure kiln_last_error() holds the message for the calling thread until its next failed call.
   Link with -lkiln (pkg-config kiln, or find_package(kiln) and kiln::kiln). */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C compilers give these enums the type unsigned int (no negative enumerators); in C++ they get it
   explicitly, so that any value a C caller passes is one the library may read (without a fixed type, a
   value outside the enumerators' range is undefined behaviour in C++). */
#ifdef __cplusplus
#define KILN_ENUM(name) enum name : unsigned int
#else
#define KILN_ENUM(name) enum name
#endif

/* The ABI this header describes. kiln_abi_version() returns the library's: a program built against
   another ABI must not use the library (check both at start-up). */
#define KILN_ABI_VERSION 1

typedef KILN_ENUM(kiln_status) {
  KILN_OK = 0,
  KILN_ERROR_INVALID_ARGUMENT = 1, /* a NULL handle or pointer, an index out of range */
  KILN_ERROR_USER = 2,             /* the model, an input or a setting is wrong (the message says which) */
  KILN_ERROR_UNSUPPORTED = 3,      /* a valid model that uses something kiln does not implement */
  KILN_ERROR_OUT_OF_MEMORY = 4,
  KILN_ERROR_INTERNAL = 5,         /* a bug in kiln */
  KILN_STATUS_MAX_ENUM = 0x7fffffff /* not a status: keeps the enum an int for every value */
} kiln_status;

/* Element types (values fixed by the ABI). */
typedef KILN_ENUM(kiln_dtype) {
  KILN_F32 = 0, KILN_F16 = 1, KILN_BF16 = 2, KILN_F64 = 3, KILN_I64 = 4,
  KILN_I32 = 5, KILN_I8 = 6, KILN_U8 = 7, KILN_BOOL = 8,
  KILN_I16 = 9, KILN_U16 = 10, KILN_U32 = 11, KILN_U64 = 12,
  KILN_DTYPE_MAX_ENUM = 0x7fffffff /* not a dtype: keeps the enum an int for every value */
} kiln_dtype;

/* How a session runs (values fixed by the ABI). */
typedef KILN_ENUM(kiln_mode) {
  KILN_MODE_COMPILED = 0, KILN_MODE_EAGER = 1, KILN_MODE_REFERENCE = 2,
  KILN_MODE_MAX_ENUM = 0x7fffffff /* not a mode: keeps the enum an int for every value */
} kiln_mode;

typedef struct kiln_options kiln_options;
typedef struct kiln_session kiln_session;
typedef struct kiln_tensor kiln_tensor;

const char* kiln_version(void);    /* "0.1.0" */
int kiln_abi_version(void);        /* the library's KILN_ABI_VERSION */
const char* kiln_last_error(void); /* "" when this thread's calls have not failed */
const char* kiln_status_name(kiln_status status);

/* Settings (`kiln settings` lists them): the defaults with KILN_* environment variables applied. */
kiln_status kiln_options_create(kiln_options** out);
/* One setting by name, as `--set NAME=VALUE`; unknown names and refused values are KILN_ERROR_USER. */
kiln_status kiln_options_set(kiln_options* options, const char* name, const char* value);
void kiln_options_destroy(kiln_options* options);

/* Loads and prepares the model at `path`: an ONNX file, or a saved model (`kiln compile -o`, which loads
   without compiling, in its own mode, sizes and settings). `options` may be NULL (the environment's).
   dim_names[i] gets size dim_sizes[i] (symbolic input dimensions such as batch or seq); num_dims may be 0. */
kiln_status kiln_session_load(const char* path, kiln_mode mode, const kiln_options* options,
                              const char* const* dim_names, const int64_t* dim_sizes, size_t num_dims,
                              kiln_session** out);
void kiln_session_destroy(kiln_session* session);
size_t kiln_session_input_count(const kiln_session* session);
size_t kiln_session_output_count(const kiln_session* session);
/* Names, valid while the session lives; NULL for an index out of range. */
const char* kiln_session_input_name(const kiln_session* session, size_t index);
const char* kiln_session_output_name(const kiln_session* session, size_t index);
/* Runs with inputs[i] as the input named input_names[i] (every input given once). Fills outputs[j] with
   a new tensor for output j (kiln_session_output_count of them, in that order), each owned by the
   caller. On failure no output is set. Safe to call from several threads on one session. */
kiln_status kiln_session_run(const kiln_session* session, const char* const* input_names,
                             const kiln_tensor* const* inputs, size_t num_inputs, kiln_tensor** outputs);

/* A tensor that owns a copy of `data` (NULL: zeros); `shape` has `rank` sizes (rank 0: a scalar). */
kiln_status kiln_tensor_create(kiln_dtype dtype, const int64_t* shape, size_t rank, const void* data,
                               kiln_tensor** out);
/* A tensor over the caller's buffer, no copy: `data` (row-major, shape's element count) must outlive
   the tensor and every run it is given to. */
kiln_status kiln_tensor_wrap(kiln_dtype dtype, const int64_t* shape, size_t rank, void* data, kiln_tensor** out);
void kiln_tensor_destroy(kiln_tensor* tensor);
kiln_dtype kiln_tensor_dtype(const kiln_tensor* tensor);
size_t kiln_tensor_rank(const kiln_tensor* tensor);
const int64_t* kiln_tensor_shape(const kiln_tensor* tensor); /* rank sizes, valid while the tensor lives */
const void* kiln_tensor_data(const kiln_tensor* tensor);     /* row-major elements */
size_t kiln_tensor_nbytes(const kiln_tensor* tensor);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_H */
