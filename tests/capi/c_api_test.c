/* The C API, used from C99 through the versioned table, against the shared library.
 * Usage: onyx_c_api_test MODEL [CUSTOM_OP_LIBRARY CUSTOM_OP_MODEL]   (MODEL: the file tests/capi/make_capi_model.cpp
 * writes; its header comment lists the inputs and outputs. With the other two, custom ops too: the test library
 * tests/custom_op/custom_op_library.c and ONNX Runtime's custom_op_test.onnx).
 * Prints "N checks passed" and exits 0, or lists the failed checks and exits 1. With ONYX_CAPI_TEST_VERBOSE set in
 * the environment it also prints every expected error message. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onyx/onyx.h"

static const OnyxApi* api;
static int checks, failures;

static void check(int ok, const char* what, int line) {
  ++checks;
  if (!ok) {
    ++failures;
    fprintf(stderr, "c_api_test.c:%d: check failed: %s\n", line, what);
  }
}
#define CHECK(cond) check((cond) != 0, #cond, __LINE__)

/* A prerequisite of what follows: stop at once when it does not hold. */
#define REQUIRE(cond)                                                             \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "c_api_test.c:%d: required: %s; stopping\n", __LINE__, #cond); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

/* The call must succeed. */
static int ok_status(OnyxStatus* s, const char* what, int line) {
  ++checks;
  if (!s) return 1;
  ++failures;
  fprintf(stderr, "c_api_test.c:%d: %s failed: %s\n", line, what, api->status_message(s));
  api->status_release(s);
  return 0;
}
#define OK(call) ok_status((call), #call, __LINE__)

/* The call must fail with `code` and a message containing `needle`. */
static void fails_status(OnyxStatus* s, OnyxErrorCode code, const char* needle, const char* what, int line) {
  ++checks;
  if (!s) {
    ++failures;
    fprintf(stderr, "c_api_test.c:%d: %s succeeded; expected error %d (\"%s\")\n", line, what, (int)code, needle);
    return;
  }
  if (api->status_code(s) != code || !strstr(api->status_message(s), needle)) {
    ++failures;
    fprintf(stderr, "c_api_test.c:%d: %s: got error %d \"%s\"; expected error %d containing \"%s\"\n", line, what,
            (int)api->status_code(s), api->status_message(s), (int)code, needle);
  } else if (getenv("ONYX_CAPI_TEST_VERBOSE")) {
    printf("c_api_test.c:%d: error %d: %s\n", line, (int)code, api->status_message(s));
  }
  api->status_release(s);
}
#define FAILS(call, code, needle) fails_status((call), (code), (needle), #call, __LINE__)

static int close_to(double a, double b) { return fabs(a - b) < 1e-6; }

static const float* float_data(const OnyxValue* v) {
  const void* p = NULL;
  if (!OK(api->tensor_data(v, &p))) return NULL;
  return (const float*)p;
}

/* ---- the table, the library and status basics ---- */
static void test_api(void) {
  CHECK(onyx_get_api(0) == NULL);
  CHECK(onyx_get_api(ONYX_API_VERSION + 1) == NULL);
  CHECK(api->version >= ONYX_API_VERSION);
  CHECK(onyx_get_api(1) == api);
  /* The table holds the exported functions themselves. */
  CHECK(api->session_run == onyx_session_run);
  CHECK(api->tensor_set_string == onyx_tensor_set_string);
  CHECK(strlen(api->version_string()) > 0);
  CHECK(strcmp(api->element_type_name(ONYX_TYPE_FLOAT), "float") == 0);
  CHECK(strcmp(api->element_type_name(ONYX_TYPE_FLOAT8E4M3FN), "float8e4m3fn") == 0);
  CHECK(strcmp(api->element_type_name(ONYX_TYPE_INT2), "int2") == 0);
  CHECK(strcmp(api->element_type_name((OnyxElementType)99), "undefined") == 0);
  CHECK(api->status_code(NULL) == ONYX_OK);
  CHECK(strcmp(api->status_message(NULL), "") == 0);
  api->status_release(NULL);
  api->session_release(NULL);
  api->session_options_release(NULL);
  api->run_options_release(NULL);
  api->value_release(NULL);
}

/* ---- session options and session creation errors ---- */
static void test_session_errors(const char* path) {
  OnyxSessionOptions* opts = NULL;
  OnyxSession* s = NULL;
  const char garbage[] = "this is not an onnx model";
  REQUIRE(OK(api->session_options_create(&opts)));
  OK(api->session_options_set_threads(opts, 2));
  OK(api->session_options_set_optimization_level(opts, 2));
  OK(api->session_options_set_log_level(opts, 3));
  FAILS(api->session_options_set_threads(opts, -1), ONYX_ERROR_INVALID_ARGUMENT, "threads is -1");
  FAILS(api->session_options_set_optimization_level(opts, 4), ONYX_ERROR_INVALID_ARGUMENT, "optimization level is 4");
  FAILS(api->session_options_set_log_level(opts, 5), ONYX_ERROR_INVALID_ARGUMENT, "log level is 5");
  FAILS(api->session_options_set_threads(NULL, 1), ONYX_ERROR_INVALID_ARGUMENT, "options is NULL");
  /* Since version 2 (the refusal itself is tested through the C++ API, which this option sets). */
  OK(api->session_options_set_accept_newer_versions(opts, 1));
  FAILS(api->session_options_set_accept_newer_versions(NULL, 1), ONYX_ERROR_INVALID_ARGUMENT, "options is NULL");
  /* Since version 3 (the limit itself is tested through the C++ API). */
  OK(api->session_options_set_memory_limit_mb(opts, 4096));
  FAILS(api->session_options_set_memory_limit_mb(opts, (uint64_t)1 << 41), ONYX_ERROR_INVALID_ARGUMENT, "at most 2^40");
  FAILS(api->session_options_create(NULL), ONYX_ERROR_INVALID_ARGUMENT, "out is NULL");

  FAILS(api->session_create("/nonexistent/dir/model.onnx", opts, &s), ONYX_ERROR_NO_SUCH_FILE,
        "/nonexistent/dir/model.onnx");
  CHECK(s == NULL);
  FAILS(api->session_create("/", opts, &s), ONYX_ERROR_INVALID_MODEL, "");
  FAILS(api->session_create(NULL, opts, &s), ONYX_ERROR_INVALID_ARGUMENT, "path is NULL");
  FAILS(api->session_create(path, opts, NULL), ONYX_ERROR_INVALID_ARGUMENT, "out is NULL");
  FAILS(api->session_create_from_bytes(garbage, sizeof garbage - 1, NULL, &s), ONYX_ERROR_INVALID_MODEL, "<bytes>");
  FAILS(api->session_create_from_bytes(garbage, 0, NULL, &s), ONYX_ERROR_INVALID_MODEL, "");
  FAILS(api->session_create_from_bytes(NULL, 10, NULL, &s), ONYX_ERROR_INVALID_ARGUMENT, "data is NULL");
  CHECK(s == NULL);
  api->session_options_release(opts);
}

/* ---- inputs and outputs as the model declares them ---- */
static void test_io(const OnyxSession* s) {
  size_t n = 0;
  const char* name = NULL;
  OnyxValueKind kind = ONYX_VALUE_UNKNOWN;
  OnyxElementType type = ONYX_TYPE_UNDEFINED;
  int64_t rank = 0, dims[4] = {0, 0, 0, 0};
  const char* symbols[4] = {NULL, NULL, NULL, NULL};

  /* B and I have initializers: optional, so not listed. */
  OK(api->session_io_count(s, ONYX_IO_INPUT, &n));
  CHECK(n == 3);
  OK(api->session_io_count(s, ONYX_IO_OUTPUT, &n));
  CHECK(n == 5);
  OK(api->session_io_name(s, ONYX_IO_INPUT, 0, &name));
  CHECK(name && strcmp(name, "X") == 0);
  OK(api->session_io_name(s, ONYX_IO_INPUT, 1, &name));
  CHECK(name && strcmp(name, "S") == 0);
  OK(api->session_io_name(s, ONYX_IO_INPUT, 2, &name));
  CHECK(name && strcmp(name, "M") == 0);
  OK(api->session_io_name(s, ONYX_IO_OUTPUT, 2, &name));
  CHECK(name && strcmp(name, "Upper") == 0);

  OK(api->session_io_kind(s, ONYX_IO_INPUT, 0, &kind));
  CHECK(kind == ONYX_VALUE_TENSOR);
  OK(api->session_io_element_type(s, ONYX_IO_INPUT, 0, &type));
  CHECK(type == ONYX_TYPE_FLOAT);
  OK(api->session_io_element_type(s, ONYX_IO_INPUT, 1, &type));
  CHECK(type == ONYX_TYPE_STRING);
  OK(api->session_io_element_type(s, ONYX_IO_INPUT, 2, &type));
  CHECK(type == ONYX_TYPE_INT64);

  /* X: [N, 3] */
  OK(api->session_io_rank(s, ONYX_IO_INPUT, 0, &rank));
  CHECK(rank == 2);
  OK(api->session_io_dims(s, ONYX_IO_INPUT, 0, dims, symbols, 4));
  CHECK(dims[0] == -1 && symbols[0] && strcmp(symbols[0], "N") == 0);
  CHECK(dims[1] == 3 && symbols[1] && strcmp(symbols[1], "") == 0);
  OK(api->session_io_dims(s, ONYX_IO_INPUT, 0, dims, NULL, 2));
  CHECK(dims[0] == -1 && dims[1] == 3);
  FAILS(api->session_io_dims(s, ONYX_IO_INPUT, 0, dims, symbols, 1), ONYX_ERROR_INVALID_ARGUMENT, "capacity is 1");
  /* M: no declared shape. */
  OK(api->session_io_rank(s, ONYX_IO_INPUT, 2, &rank));
  CHECK(rank == -1);
  FAILS(api->session_io_dims(s, ONYX_IO_INPUT, 2, dims, symbols, 4), ONYX_ERROR_INVALID_ARGUMENT, "no declared shape");
  /* Upper: one dim, neither fixed nor named. */
  OK(api->session_io_rank(s, ONYX_IO_OUTPUT, 2, &rank));
  CHECK(rank == 1);
  symbols[0] = NULL;
  OK(api->session_io_dims(s, ONYX_IO_OUTPUT, 2, dims, symbols, 4));
  CHECK(dims[0] == -1 && symbols[0] && strcmp(symbols[0], "") == 0);
  /* Count and Picked: scalars. */
  OK(api->session_io_element_type(s, ONYX_IO_OUTPUT, 3, &type));
  CHECK(type == ONYX_TYPE_INT64);
  OK(api->session_io_rank(s, ONYX_IO_OUTPUT, 4, &rank));
  CHECK(rank == 0);
  OK(api->session_io_dims(s, ONYX_IO_OUTPUT, 4, NULL, NULL, 0));

  FAILS(api->session_io_name(s, ONYX_IO_INPUT, 3, &name), ONYX_ERROR_INVALID_ARGUMENT, "input index 3 is out of range");
  FAILS(api->session_io_name(s, ONYX_IO_OUTPUT, 9, &name), ONYX_ERROR_INVALID_ARGUMENT, "output index 9");
  FAILS(api->session_io_count(s, (OnyxIo)7, &n), ONYX_ERROR_INVALID_ARGUMENT, "which is 7");
  FAILS(api->session_io_count(NULL, ONYX_IO_INPUT, &n), ONYX_ERROR_INVALID_ARGUMENT, "session is NULL");
}

/* Values fed to the model in most runs: X (caller memory), S (strings), M (trip count). */
typedef struct Feeds {
  float x[6];
  int64_t m;
  OnyxValue* X;
  OnyxValue* S;
  OnyxValue* M;
} Feeds;

static void make_feeds(Feeds* f) {
  static const int64_t x_dims[2] = {2, 3};
  static const int64_t s_dims[1] = {3};
  static const char* const words[3] = {"hello", "World", "onyx"};
  int i;
  for (i = 0; i < 6; ++i) f->x[i] = (float)(i + 1);
  f->m = 5;
  REQUIRE(OK(api->tensor_create_with_data(ONYX_TYPE_FLOAT, x_dims, 2, f->x, sizeof f->x, &f->X)));
  REQUIRE(OK(api->tensor_create_strings(s_dims, 1, words, NULL, 3, &f->S)));
  REQUIRE(OK(api->tensor_create_with_data(ONYX_TYPE_INT64, NULL, 0, &f->m, sizeof f->m, &f->M)));
}

static void free_feeds(Feeds* f) {
  api->value_release(f->X);
  api->value_release(f->S);
  api->value_release(f->M);
}

/* ---- a full run: zero-copy input, every output checked ---- */
static void test_run(const OnyxSession* s) {
  Feeds f;
  const char* names[3] = {"X", "S", "M"};
  const OnyxValue* inputs[3];
  OnyxValue* out[5] = {NULL, NULL, NULL, NULL, NULL};
  const void* p = NULL;
  const float* y;
  const float* xcopy;
  const char* str = NULL;
  size_t len = 0, rank = 0, count = 0, bytes = 0;
  int64_t dims[2] = {0, 0};
  OnyxElementType type = ONYX_TYPE_UNDEFINED;
  OnyxValueKind kind = ONYX_VALUE_UNKNOWN;
  void* w = NULL;
  int i;

  make_feeds(&f);
  inputs[0] = f.X;
  inputs[1] = f.S;
  inputs[2] = f.M;
  /* Zero copy: the tensor's data is the caller's array, and a write after creation is what the run sees. */
  OK(api->tensor_data(f.X, &p));
  CHECK(p == (const void*)f.x);
  OK(api->tensor_mutable_data(f.X, &w));
  CHECK(w == (void*)f.x);
  f.x[0] = 10.0f;

  if (!OK(api->session_run(s, NULL, names, inputs, 3, NULL, 5, out))) {
    free_feeds(&f);
    return;
  }
  /* Y = X * 2 + B (B defaults to its initializer 0.5) */
  y = float_data(out[0]);
  REQUIRE(y != NULL);
  CHECK(close_to(y[0], 20.5));
  for (i = 1; i < 6; ++i) CHECK(close_to(y[i], 2.0 * (i + 1) + 0.5));
  OK(api->tensor_element_type(out[0], &type));
  CHECK(type == ONYX_TYPE_FLOAT);
  OK(api->tensor_rank(out[0], &rank));
  CHECK(rank == 2);
  OK(api->tensor_dims(out[0], dims, 2));
  CHECK(dims[0] == 2 && dims[1] == 3);
  OK(api->tensor_element_count(out[0], &count));
  CHECK(count == 6);
  OK(api->tensor_byte_size(out[0], &bytes));
  CHECK(bytes == 6 * sizeof(float));
  FAILS(api->tensor_dims(out[0], dims, 1), ONYX_ERROR_INVALID_ARGUMENT, "capacity is 1");
  FAILS(api->tensor_mutable_data(out[0], &w), ONYX_ERROR_INVALID_ARGUMENT, "read-only");

  /* Xcopy = Identity(X) holds X's values but not the caller's memory: it survives changes to x. */
  xcopy = float_data(out[1]);
  REQUIRE(xcopy != NULL);
  CHECK(xcopy != f.x);
  f.x[1] = -1.0f;
  CHECK(close_to(xcopy[0], 10.0) && close_to(xcopy[1], 2.0) && close_to(xcopy[5], 6.0));

  /* Upper = uppercase S */
  OK(api->value_kind(out[2], &kind));
  CHECK(kind == ONYX_VALUE_TENSOR);
  OK(api->tensor_element_type(out[2], &type));
  CHECK(type == ONYX_TYPE_STRING);
  OK(api->tensor_element_count(out[2], &count));
  CHECK(count == 3);
  OK(api->tensor_string(out[2], 0, &str, &len));
  CHECK(str && len == 5 && strcmp(str, "HELLO") == 0);
  OK(api->tensor_string(out[2], 1, &str, NULL));
  CHECK(str && strcmp(str, "WORLD") == 0);
  OK(api->tensor_string(out[2], 2, &str, &len));
  CHECK(str && len == 4 && strcmp(str, "ONYX") == 0);
  FAILS(api->tensor_string(out[2], 3, &str, &len), ONYX_ERROR_INVALID_ARGUMENT, "index 3 is out of range");
  FAILS(api->tensor_data(out[2], &p), ONYX_ERROR_INVALID_ARGUMENT, "string tensor");
  FAILS(api->tensor_string(out[0], 0, &str, &len), ONYX_ERROR_INVALID_ARGUMENT, "holds float, not strings");

  /* Count = M loop iterations; Picked = B[I] with I's initializer 0 */
  OK(api->tensor_data(out[3], &p));
  CHECK(p && *(const int64_t*)p == 5);
  OK(api->tensor_rank(out[4], &rank));
  CHECK(rank == 0);
  y = float_data(out[4]);
  CHECK(y && close_to(y[0], 0.5));

  /* An output fed back as an input: Y as X. Xcopy then equals Y, in its own memory. */
  {
    OnyxValue* again[1] = {NULL};
    const char* xname[1] = {"Xcopy"};
    const OnyxValue* in2[3];
    in2[0] = out[0];
    in2[1] = f.S;
    in2[2] = f.M;
    if (OK(api->session_run(s, NULL, names, in2, 3, xname, 1, again))) {
      const float* z = float_data(again[0]);
      const float* y0 = float_data(out[0]);
      CHECK(z && y0 && z != y0 && memcmp(z, y0, 6 * sizeof(float)) == 0);
      api->value_release(again[0]);
    }
  }
  for (i = 0; i < 5; ++i) api->value_release(out[i]);
  free_feeds(&f);
}

/* ---- onyx-allocated tensors; optional inputs fed; outputs selected by name ---- */
static void test_allocated(const OnyxSession* s) {
  Feeds f;
  static const int64_t b_dims[1] = {3};
  OnyxValue* B = NULL;
  OnyxValue* I = NULL;
  void* w = NULL;
  size_t count = 0, bytes = 0;
  OnyxElementType type = ONYX_TYPE_UNDEFINED;
  int64_t dims[1] = {0};
  const char* names[5] = {"X", "S", "M", "B", "I"};
  const OnyxValue* inputs[5];
  const char* wanted[2] = {"Picked", "Y"};
  OnyxValue* out[2] = {NULL, NULL};
  float* b;
  const float* v;

  make_feeds(&f);
  REQUIRE(OK(api->tensor_create(ONYX_TYPE_FLOAT, b_dims, 1, &B)));
  OK(api->tensor_element_type(B, &type));
  CHECK(type == ONYX_TYPE_FLOAT);
  OK(api->tensor_dims(B, dims, 1));
  CHECK(dims[0] == 3);
  OK(api->tensor_element_count(B, &count));
  CHECK(count == 3);
  OK(api->tensor_byte_size(B, &bytes));
  CHECK(bytes == 12);
  REQUIRE(OK(api->tensor_mutable_data(B, &w)));
  REQUIRE(w != NULL);
  CHECK(((uintptr_t)w) % 64 == 0);
  b = (float*)w;
  CHECK(b[0] == 0.0f && b[1] == 0.0f && b[2] == 0.0f); /* zero-filled */
  b[0] = 100.0f;
  b[1] = 200.0f;
  b[2] = 300.0f;
  REQUIRE(OK(api->tensor_create(ONYX_TYPE_INT64, NULL, 0, &I)));
  REQUIRE(OK(api->tensor_mutable_data(I, &w)));
  *(int64_t*)w = 2;

  inputs[0] = f.X;
  inputs[1] = f.S;
  inputs[2] = f.M;
  inputs[3] = B;
  inputs[4] = I;
  if (OK(api->session_run(s, NULL, names, inputs, 5, wanted, 2, out))) {
    v = float_data(out[0]);
    CHECK(v && close_to(v[0], 300.0)); /* Picked = B[2] */
    v = float_data(out[1]);
    CHECK(v && close_to(v[0], 102.0) && close_to(v[1], 204.0) && close_to(v[5], 312.0));
    api->value_release(out[0]);
    api->value_release(out[1]);
  }
  api->value_release(B);
  api->value_release(I);
  free_feeds(&f);
}

/* ---- string tensors made and read from C ---- */
static void test_strings(void) {
  static const int64_t dims[2] = {1, 2};
  const char* const parts[2] = {"a\0b", "xyz"};
  const size_t lengths[2] = {3, 3};
  const char* const with_null[2] = {"ok", NULL};
  OnyxValue* t = NULL;
  const char* str = NULL;
  size_t len = 0;
  void* w = NULL;

  REQUIRE(OK(api->tensor_create_strings(dims, 2, parts, lengths, 2, &t)));
  OK(api->tensor_string(t, 0, &str, &len));
  CHECK(str && len == 3 && memcmp(str, "a\0b", 3) == 0);
  OK(api->tensor_string(t, 1, &str, &len));
  CHECK(str && len == 3 && strcmp(str, "xyz") == 0);
  OK(api->tensor_set_string(t, 1, "longer string", 13));
  OK(api->tensor_string(t, 1, &str, &len));
  CHECK(str && len == 13 && strcmp(str, "longer string") == 0);
  FAILS(api->tensor_set_string(t, 2, "x", 1), ONYX_ERROR_INVALID_ARGUMENT, "index 2 is out of range");
  FAILS(api->tensor_mutable_data(t, &w), ONYX_ERROR_INVALID_ARGUMENT, "string tensor");
  api->value_release(t);

  /* onyx_tensor_create of strings: empty strings to fill in. */
  t = NULL;
  REQUIRE(OK(api->tensor_create(ONYX_TYPE_STRING, dims, 2, &t)));
  OK(api->tensor_string(t, 1, &str, &len));
  CHECK(str && len == 0 && str[0] == '\0');
  OK(api->tensor_set_string(t, 1, "filled", 6));
  OK(api->tensor_string(t, 1, &str, &len));
  CHECK(str && len == 6 && strcmp(str, "filled") == 0);
  api->value_release(t);

  t = NULL;
  FAILS(api->tensor_create_strings(dims, 2, parts, NULL, 3, &t), ONYX_ERROR_INVALID_ARGUMENT, "count is 3");
  FAILS(api->tensor_create_strings(dims, 2, with_null, NULL, 2, &t), ONYX_ERROR_INVALID_ARGUMENT,
        "strings[1] is NULL");
  FAILS(api->tensor_create_strings(dims, 2, NULL, NULL, 2, &t), ONYX_ERROR_INVALID_ARGUMENT, "strings is NULL");
  CHECK(t == NULL);
}

/* ---- tensor constructor and accessor errors ---- */
static void test_tensor_errors(void) {
  static const int64_t good[2] = {2, 3};
  static const int64_t negative[2] = {2, -2};
  static const int64_t huge[2] = {INT64_MAX, 3};
  double storage[4];
  float floats[6];
  OnyxValue* t = NULL;
  OnyxValueKind kind;
  size_t rank;

  FAILS(api->tensor_create((OnyxElementType)99, good, 2, &t), ONYX_ERROR_INVALID_ARGUMENT, "element type 99");
  FAILS(api->tensor_create(ONYX_TYPE_UNDEFINED, good, 2, &t), ONYX_ERROR_INVALID_ARGUMENT, "element type 0");
  FAILS(api->tensor_create(ONYX_TYPE_FLOAT, negative, 2, &t), ONYX_ERROR_INVALID_ARGUMENT, "dims[1] is -2");
  FAILS(api->tensor_create(ONYX_TYPE_FLOAT, huge, 2, &t), ONYX_ERROR_INVALID_ARGUMENT, "overflows");
  FAILS(api->tensor_create(ONYX_TYPE_FLOAT, NULL, 2, &t), ONYX_ERROR_INVALID_ARGUMENT, "dims is NULL");
  FAILS(api->tensor_create(ONYX_TYPE_FLOAT, good, 2, NULL), ONYX_ERROR_INVALID_ARGUMENT, "out is NULL");
  FAILS(api->tensor_create_with_data(ONYX_TYPE_FLOAT, good, 2, floats, 20, &t), ONYX_ERROR_INVALID_ARGUMENT,
        "byte_size is 20, but a float[2,3] tensor takes 24 bytes");
  FAILS(api->tensor_create_with_data(ONYX_TYPE_FLOAT, good, 2, NULL, 24, &t), ONYX_ERROR_INVALID_ARGUMENT,
        "data is NULL");
  FAILS(api->tensor_create_with_data(ONYX_TYPE_FLOAT, good, 2, (char*)storage + 1, 24, &t),
        ONYX_ERROR_INVALID_ARGUMENT, "not aligned to 4 bytes");
  FAILS(api->tensor_create_with_data(ONYX_TYPE_STRING, good, 2, floats, 24, &t), ONYX_ERROR_INVALID_ARGUMENT,
        "string tensors cannot view caller memory");
  FAILS(api->tensor_create_with_data(ONYX_TYPE_FLOAT, huge, 2, floats, 24, &t), ONYX_ERROR_INVALID_ARGUMENT,
        "overflows");
  CHECK(t == NULL);
  /* Packed sub-byte types: 3 int4 elements take 2 bytes, and byte alignment will do. */
  {
    static const int64_t three[1] = {3};
    unsigned char packed[2] = {0x21, 0x03};
    if (OK(api->tensor_create_with_data(ONYX_TYPE_INT4, three, 1, packed, 2, &t))) api->value_release(t);
    t = NULL;
  }
  /* An empty tensor may have no data. */
  {
    static const int64_t empty[2] = {0, 5};
    size_t bytes = 1;
    if (OK(api->tensor_create_with_data(ONYX_TYPE_FLOAT, empty, 2, NULL, 0, &t))) {
      OK(api->tensor_byte_size(t, &bytes));
      CHECK(bytes == 0);
      api->value_release(t);
    }
    t = NULL;
  }
  FAILS(api->value_kind(NULL, &kind), ONYX_ERROR_INVALID_ARGUMENT, "value is NULL");
  FAILS(api->tensor_rank(NULL, &rank), ONYX_ERROR_INVALID_ARGUMENT, "value is NULL");
}

/* ---- run errors: each reported with its code and the name at fault, every output slot NULL ---- */
static void test_run_errors(const OnyxSession* s) {
  Feeds f;
  static const int64_t x_dims[2] = {2, 3};
  static const int64_t flat[1] = {6};
  static const int64_t wide[2] = {2, 4};
  double d[6] = {0, 0, 0, 0, 0, 0};
  float wide_data[8];
  int64_t seven = 7;
  OnyxValue* Xd = NULL;
  OnyxValue* Xflat = NULL;
  OnyxValue* Xwide = NULL;
  OnyxValue* I7 = NULL;
  OnyxValue* sentinel = (OnyxValue*)&seven; /* never dereferenced; must be overwritten with NULL */
  OnyxValue* out[5];
  const char* names[4] = {"X", "S", "M", "Q"};
  const OnyxValue* inputs[4];
  const char* one_out[1] = {"Nope"};
  int i;

  make_feeds(&f);
  REQUIRE(OK(api->tensor_create_with_data(ONYX_TYPE_DOUBLE, x_dims, 2, d, sizeof d, &Xd)));
  REQUIRE(OK(api->tensor_create_with_data(ONYX_TYPE_FLOAT, flat, 1, f.x, sizeof f.x, &Xflat)));
  REQUIRE(OK(api->tensor_create_with_data(ONYX_TYPE_FLOAT, wide, 2, wide_data, sizeof wide_data, &Xwide)));
  REQUIRE(OK(api->tensor_create_with_data(ONYX_TYPE_INT64, NULL, 0, &seven, sizeof seven, &I7)));
  inputs[0] = f.X;
  inputs[1] = f.S;
  inputs[2] = f.M;
  inputs[3] = f.M;

#define RUN_FAILS(n_in, outnames, n_out, code, needle)                                          \
  do {                                                                                          \
    for (i = 0; i < 5; ++i) out[i] = sentinel;                                                  \
    FAILS(api->session_run(s, NULL, names, inputs, (n_in), (outnames), (n_out), out), (code), (needle)); \
    for (i = 0; i < (int)(n_out); ++i) CHECK(out[i] == NULL);                                   \
  } while (0)

  /* an unknown input name */
  RUN_FAILS(4, NULL, 5, ONYX_ERROR_INVALID_ARGUMENT, "'Q' is not an input of the model");
  /* a value that is not an input */
  names[3] = "Y";
  RUN_FAILS(4, NULL, 5, ONYX_ERROR_INVALID_ARGUMENT, "'Y' is not an input of the model");
  /* the same input twice */
  names[3] = "X";
  inputs[3] = f.X;
  RUN_FAILS(4, NULL, 5, ONYX_ERROR_INVALID_ARGUMENT, "input 'X' is fed more than once");
  /* a missing input */
  RUN_FAILS(2, NULL, 5, ONYX_ERROR_INVALID_ARGUMENT, "input 'M' is missing");
  /* wrong element type, rank, dimension */
  inputs[0] = Xd;
  RUN_FAILS(3, NULL, 5, ONYX_ERROR_INVALID_ARGUMENT, "input 'X': expected element type float, got double");
  inputs[0] = Xflat;
  RUN_FAILS(3, NULL, 5, ONYX_ERROR_INVALID_ARGUMENT, "input 'X': expected rank 2");
  inputs[0] = Xwide;
  RUN_FAILS(3, NULL, 5, ONYX_ERROR_INVALID_ARGUMENT, "input 'X': dimension 1 must be 3, got 4");
  /* a string tensor where a number is expected */
  inputs[0] = f.S;
  RUN_FAILS(3, NULL, 5, ONYX_ERROR_INVALID_ARGUMENT, "expected element type float, got string");
  inputs[0] = f.X;
  /* outputs: unknown name, wrong count for "all", none */
  RUN_FAILS(3, one_out, 1, ONYX_ERROR_INVALID_ARGUMENT, "'Nope' is not an output of the model");
  RUN_FAILS(3, NULL, 4, ONYX_ERROR_INVALID_ARGUMENT, "the model has 5 outputs");
  RUN_FAILS(3, one_out, 0, ONYX_ERROR_INVALID_ARGUMENT, "output_count is 0");
  /* NULL arguments */
  names[1] = NULL;
  RUN_FAILS(3, NULL, 5, ONYX_ERROR_INVALID_ARGUMENT, "input_names[1] is NULL");
  names[1] = "S";
  inputs[2] = NULL;
  RUN_FAILS(3, NULL, 5, ONYX_ERROR_INVALID_ARGUMENT, "inputs[2] ('M') is NULL");
  inputs[2] = f.M;
  FAILS(api->session_run(NULL, NULL, names, inputs, 3, NULL, 5, out), ONYX_ERROR_INVALID_ARGUMENT, "session is NULL");
  FAILS(api->session_run(s, NULL, names, inputs, 3, NULL, 5, NULL), ONYX_ERROR_INVALID_ARGUMENT, "outputs is NULL");
  /* a node failing on its data: Gather(B, I) with I = 7 */
  names[3] = "I";
  inputs[3] = I7;
  RUN_FAILS(4, NULL, 5, ONYX_ERROR_RUNTIME, "Gather");
  RUN_FAILS(4, NULL, 5, ONYX_ERROR_RUNTIME, "out of range");
#undef RUN_FAILS

  api->value_release(Xd);
  api->value_release(Xflat);
  api->value_release(Xwide);
  api->value_release(I7);
  free_feeds(&f);
}

/* ---- terminate: set before a run, and from another thread during one ---- */
typedef struct Job {
  const OnyxSession* session;
  const OnyxRunOptions* options;
  const char* const* names;
  const OnyxValue* const* inputs;
  OnyxValue* out[1];
  OnyxStatus* status;
} Job;

static void* run_job(void* arg) {
  Job* job = (Job*)arg;
  static const char* const count[1] = {"Count"};
  job->status = api->session_run(job->session, job->options, job->names, job->inputs, 3, count, 1, job->out);
  return NULL;
}

static void test_terminate(const OnyxSession* s) {
  Feeds f;
  OnyxRunOptions* ro = NULL;
  const char* names[3] = {"X", "S", "M"};
  const OnyxValue* inputs[3];
  const char* const count[1] = {"Count"};
  OnyxValue* out[1] = {NULL};
  const void* p = NULL;
  Job job;
  pthread_t thread;
  struct timespec pause = {0, 50 * 1000 * 1000};

  make_feeds(&f);
  inputs[0] = f.X;
  inputs[1] = f.S;
  inputs[2] = f.M;
  REQUIRE(OK(api->run_options_create(&ro)));
  FAILS(api->run_options_set_terminate(NULL, 1), ONYX_ERROR_INVALID_ARGUMENT, "options is NULL");
  OK(api->run_options_set_terminate(ro, 1));
  FAILS(api->session_run(s, ro, names, inputs, 3, count, 1, out), ONYX_ERROR_TERMINATED, "terminated");
  CHECK(out[0] == NULL);
  OK(api->run_options_set_terminate(ro, 0));
  if (OK(api->session_run(s, ro, names, inputs, 3, count, 1, out))) {
    OK(api->tensor_data(out[0], &p));
    CHECK(p && *(const int64_t*)p == 5);
    api->value_release(out[0]);
  }

  /* M = INT64_MAX: the loop runs until the flag, set from this thread, stops it (else ctest's timeout fails it). */
  f.m = INT64_MAX;
  job.session = s;
  job.options = ro;
  job.names = names;
  job.inputs = inputs;
  job.out[0] = NULL;
  job.status = NULL;
  REQUIRE(pthread_create(&thread, NULL, run_job, &job) == 0);
  nanosleep(&pause, NULL);
  OK(api->run_options_set_terminate(ro, 1));
  REQUIRE(pthread_join(thread, NULL) == 0);
  FAILS(job.status, ONYX_ERROR_TERMINATED, "run terminated by the caller");
  CHECK(job.out[0] == NULL);

  /* Since version 3: the same loop stops at a deadline. */
  OK(api->run_options_set_terminate(ro, 0));
  FAILS(api->run_options_set_timeout_ms(ro, -1), ONYX_ERROR_INVALID_ARGUMENT, "must not be negative");
  OK(api->run_options_set_timeout_ms(ro, 50));
  FAILS(api->session_run(s, ro, names, inputs, 3, count, 1, out), ONYX_ERROR_TIMEOUT, "deadline (timeout of 50 ms)");
  CHECK(out[0] == NULL);
  f.m = 5;
  if (OK(api->session_run(s, ro, names, inputs, 3, count, 1, out))) api->value_release(out[0]);
  api->run_options_release(ro);
  free_feeds(&f);
}

static char* read_file(const char* path, size_t* size) {
  FILE* fp = fopen(path, "rb");
  char* data;
  long n;
  if (!fp) return NULL;
  if (fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
    fclose(fp);
    return NULL;
  }
  data = (char*)malloc((size_t)n + 1);
  if (data && fread(data, 1, (size_t)n, fp) != (size_t)n) {
    free(data);
    data = NULL;
  }
  fclose(fp);
  *size = (size_t)n;
  return data;
}

/* ---- custom-op libraries ---- */
static void test_custom_ops(const char* library, const char* model) {
  OnyxSessionOptions* opts = NULL;
  OnyxSession* s = NULL;
  OnyxValue *a = NULL, *b = NULL;
  OnyxValue* out = NULL;
  const char* names[2] = {"input_1", "input_2"};
  const OnyxValue* inputs[2];
  const int64_t dims[2] = {3, 5};
  const void* p = NULL;
  void* w = NULL;
  OnyxElementType type = ONYX_TYPE_UNDEFINED;
  int i;

  REQUIRE(OK(api->session_options_create(&opts)));
  FAILS(api->session_options_add_custom_op_library(NULL, library), ONYX_ERROR_INVALID_ARGUMENT, "options");
  FAILS(api->session_options_add_custom_op_library(opts, NULL), ONYX_ERROR_INVALID_ARGUMENT, "path");
  /* Without the library the model's domain is unknown. */
  FAILS(api->session_create(model, opts, &s), ONYX_ERROR_INVALID_MODEL, "domain 'test.customop' is not imported");
  OK(api->session_options_add_custom_op_library(opts, library));
  REQUIRE(OK(api->session_create(model, opts, &s)));
  REQUIRE(OK(api->tensor_create(ONYX_TYPE_FLOAT, dims, 2, &a)));
  REQUIRE(OK(api->tensor_create(ONYX_TYPE_FLOAT, dims, 2, &b)));
  OK(api->tensor_mutable_data(a, &w));
  for (i = 0; i < 15; ++i) ((float*)w)[i] = 1.0f; /* input_2 stays zeros */
  inputs[0] = a;
  inputs[1] = b;
  if (OK(api->session_run(s, NULL, names, inputs, 2, NULL, 1, &out))) {
    OK(api->tensor_element_type(out, &type));
    CHECK(type == ONYX_TYPE_INT32);
    OK(api->tensor_data(out, &p));
    for (i = 0; p && i < 15; ++i) CHECK(((const int32_t*)p)[i] == 1);
    api->value_release(out);
  }
  api->value_release(a);
  api->value_release(b);
  api->session_release(s);
  s = NULL;
  api->session_options_release(opts);
  /* A library that cannot be loaded: the error names it. */
  REQUIRE(OK(api->session_options_create(&opts)));
  OK(api->session_options_add_custom_op_library(opts, "/nonexistent/libnothing.so"));
  FAILS(api->session_create(model, opts, &s), ONYX_ERROR_INVALID_MODEL,
        "custom op library '/nonexistent/libnothing.so' cannot be loaded");
  api->session_options_release(opts);
}

int main(int argc, char** argv) {
  OnyxSessionOptions* opts = NULL;
  OnyxSession* from_file = NULL;
  OnyxSession* from_bytes = NULL;
  char* bytes;
  size_t size = 0;

  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: %s MODEL [CUSTOM_OP_LIBRARY CUSTOM_OP_MODEL] (MODEL: the model tests/capi/make_capi_model.cpp writes)\n",
            argv[0]);
    return 2;
  }
  api = onyx_get_api(ONYX_API_VERSION);
  REQUIRE(api != NULL);
  test_api();
  test_session_errors(argv[1]);
  test_strings();
  test_tensor_errors();

  REQUIRE(OK(api->session_options_create(&opts)));
  OK(api->session_options_set_threads(opts, 1));
  REQUIRE(OK(api->session_create(argv[1], opts, &from_file)));
  api->session_options_release(opts); /* the session keeps its own copy */
  bytes = read_file(argv[1], &size);
  REQUIRE(bytes != NULL);
  REQUIRE(OK(api->session_create_from_bytes(bytes, size, NULL, &from_bytes)));
  memset(bytes, 0, size); /* the session copied them */
  free(bytes);

  test_io(from_file);
  test_io(from_bytes);
  test_run(from_file);
  test_run(from_bytes);
  test_allocated(from_bytes);
  test_run_errors(from_file);
  test_terminate(from_file);
  if (argc == 4) test_custom_ops(argv[2], argv[3]);

  api->session_release(from_file);
  api->session_release(from_bytes);
  if (failures) {
    fprintf(stderr, "%d of %d checks failed\n", failures, checks);
    return 1;
  }
  printf("%d checks passed\n", checks);
  return 0;
}
