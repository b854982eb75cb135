/* A C program built against an installed kiln with pkg-config: runs MODEL through the C API on the
   inputs in IN_DIR (NAME.npy each, as `kiln run --save-inputs` writes them) and writes each output's
   raw elements to OUT_DIR/NAME.bin. usage: c_consumer MODEL IN_DIR OUT_DIR [SYMBOL=SIZE]... */
#include <kiln/kiln.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIMS 16
#define MAX_TENSORS 16

static int check(kiln_status s, const char* what) {
  if (s == KILN_OK) return 0;
  fprintf(stderr, "c_consumer: %s: %s: %s\n", what, kiln_status_name(s), kiln_last_error());
  return 1;
}

/* Reads a .npy file of format 1.0 with one of the dtypes below into a new tensor (NULL on failure). */
static kiln_tensor* read_npy(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char head[10];
  kiln_tensor* t = NULL;
  if (fread(head, 1, 10, f) == 10 && memcmp(head, "\x93NUMPY\x01", 7) == 0) {
    size_t len = (size_t)head[8] | ((size_t)head[9] << 8);
    char* dict = calloc(len + 1, 1);
    if (dict && fread(dict, 1, len, f) == len) {
      kiln_dtype dtype = KILN_F32;
      if (strstr(dict, "'<i8'")) dtype = KILN_I64;
      else if (strstr(dict, "'<i4'")) dtype = KILN_I32;
      else if (strstr(dict, "'|b1'")) dtype = KILN_BOOL;
      int64_t shape[MAX_DIMS];
      size_t rank = 0;
      const char* p = strchr(strstr(dict, "'shape'"), '(') + 1;
      while (*p != ')' && rank < MAX_DIMS) {
        char* end;
        long long d = strtoll(p, &end, 10);
        if (end == p) break;
        shape[rank++] = d;
        p = end + strspn(end, ", ");
      }
      if (kiln_tensor_create(dtype, shape, rank, NULL, &t) == KILN_OK) {
        size_t n = kiln_tensor_nbytes(t);
        void* data = malloc(n ? n : 1);
        if (fread(data, 1, n, f) == n) {
          kiln_tensor_destroy(t);
          t = NULL;
          kiln_tensor_create(dtype, shape, rank, data, &t);
        } else {
          kiln_tensor_destroy(t);
          t = NULL;
        }
        free(data);
      }
    }
    free(dict);
  }
  fclose(f);
  return t;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s MODEL IN_DIR OUT_DIR [SYMBOL=SIZE]...\n", argv[0]);
    return 2;
  }
  if (kiln_abi_version() != KILN_ABI_VERSION) {
    fprintf(stderr, "c_consumer: built for kiln ABI %d, the library has %d\n", KILN_ABI_VERSION, kiln_abi_version());
    return 1;
  }
  const char* names[MAX_DIMS];
  int64_t sizes[MAX_DIMS];
  size_t num_dims = 0;
  for (int i = 4; i < argc && num_dims < MAX_DIMS; ++i, ++num_dims) {
    char* eq = strchr(argv[i], '=');
    if (!eq) return 2;
    *eq = '\0';
    names[num_dims] = argv[i];
    sizes[num_dims] = strtoll(eq + 1, NULL, 10);
  }
  kiln_options* options = NULL;
  kiln_session* session = NULL;
  if (check(kiln_options_create(&options), "options") ||
      check(kiln_session_load(argv[1], KILN_MODE_COMPILED, options, names, sizes, num_dims, &session), "load"))
    return 1;
  size_t num_inputs = kiln_session_input_count(session), num_outputs = kiln_session_output_count(session);
  if (num_inputs > MAX_TENSORS || num_outputs > MAX_TENSORS) return 1;
  const char* input_names[MAX_TENSORS];
  kiln_tensor* inputs[MAX_TENSORS];
  char path[4096];
  for (size_t i = 0; i < num_inputs; ++i) {
    input_names[i] = kiln_session_input_name(session, i);
    snprintf(path, sizeof path, "%s/%s.npy", argv[2], input_names[i]);
    inputs[i] = read_npy(path);
    if (!inputs[i]) {
      fprintf(stderr, "c_consumer: cannot read %s\n", path);
      return 1;
    }
  }
  kiln_tensor* outputs[MAX_TENSORS];
  if (check(kiln_session_run(session, input_names, (const kiln_tensor* const*)inputs, num_inputs, outputs), "run"))
    return 1;
  for (size_t j = 0; j < num_outputs; ++j) {
    snprintf(path, sizeof path, "%s/%s.bin", argv[3], kiln_session_output_name(session, j));
    FILE* f = fopen(path, "wb");
    if (!f || fwrite(kiln_tensor_data(outputs[j]), 1, kiln_tensor_nbytes(outputs[j]), f) != kiln_tensor_nbytes(outputs[j]))
      return 1;
    fclose(f);
    printf("output %s: %zu bytes\n", kiln_session_output_name(session, j), kiln_tensor_nbytes(outputs[j]));
    kiln_tensor_destroy(outputs[j]);
  }
  for (size_t i = 0; i < num_inputs; ++i) kiln_tensor_destroy(inputs[i]);
  /* A bad call fails with a status and a message, and sets nothing. */
  kiln_session* none = NULL;
  if (kiln_session_load("/nonexistent.onnx", KILN_MODE_COMPILED, options, NULL, NULL, 0, &none) != KILN_ERROR_USER ||
      none != NULL || strstr(kiln_last_error(), "/nonexistent.onnx") == NULL) {
    fprintf(stderr, "c_consumer: loading a missing file did not fail as a user error naming it\n");
    return 1;
  }
  kiln_session_destroy(session);
  kiln_options_destroy(options);
  printf("c api: kiln %s, ABI %d\n", kiln_version(), kiln_abi_version());
  return 0;
}
