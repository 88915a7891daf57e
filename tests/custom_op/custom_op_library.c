/* A custom-op library for the tests (tests/exec/custom_op_test.cpp), and an example of include/onyx/custom_op.h.
 * Domain "test.customop", as ONNX Runtime's test library (testdata/custom_op_library/custom_op_test.onnx):
 *   CustomOpOne(A, B) -> float: A + B, for float tensors of one shape
 *   CustomOpTwo(X)    -> int32: each float rounded to the nearest integer
 *   ScaleShift(X)     -> float: X * scale + shift (float attributes; `mode` string attribute must be "linear"), with
 *                        a kernel state made at creation and freed with the session
 * Built with -DONYX_TEST_NO_ENTRY_POINT it exports the same function under another name, so it lacks the entry
 * point (the tests' library that lacks it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onyx/custom_op.h"

static const OnyxCustomOpApi* g_api;

static size_t element_count(const int64_t* dims, size_t rank) {
  size_t n = 1;
  size_t k;
  for (k = 0; k < rank; ++k) n *= (size_t)dims[k];
  return n;
}

/* Inference of the elementwise ops: output 0 has input 0's shape, of `type`. */
static OnyxCustomOpStatus* infer_float_to(OnyxCustomOpInferContext* ctx, int32_t type) {
  int32_t in = g_api->infer_input_element_type(ctx, 0);
  if (in != 0 && in != 1) return g_api->make_error("input 0 must be float");
  return g_api->infer_set_output_like_input(ctx, 0, 0, type);
}

static OnyxCustomOpStatus* one_infer(void* op_data, OnyxCustomOpInferContext* ctx) {
  (void)op_data;
  return infer_float_to(ctx, 1);
}

static OnyxCustomOpStatus* one_compute(void* op_data, void* kernel, OnyxCustomOpKernelContext* ctx) {
  int32_t ta, tb;
  const int64_t *da, *db;
  size_t ra, rb, n, k;
  const void *a, *b;
  void* out;
  OnyxCustomOpStatus* s;
  (void)op_data;
  (void)kernel;
  if ((s = g_api->kernel_input(ctx, 0, &ta, &da, &ra, &a))) return s;
  if ((s = g_api->kernel_input(ctx, 1, &tb, &db, &rb, &b))) return s;
  if (ta != 1 || tb != 1) return g_api->make_error("inputs must be float");
  if (ra != rb || memcmp(da, db, ra * sizeof(int64_t)) != 0) return g_api->make_error("inputs must have one shape");
  if ((s = g_api->kernel_allocate_output(ctx, 0, 1, da, ra, &out))) return s;
  n = element_count(da, ra);
  for (k = 0; k < n; ++k) ((float*)out)[k] = ((const float*)a)[k] + ((const float*)b)[k];
  return NULL;
}

static OnyxCustomOpStatus* two_infer(void* op_data, OnyxCustomOpInferContext* ctx) {
  (void)op_data;
  return infer_float_to(ctx, 6);
}

static OnyxCustomOpStatus* two_compute(void* op_data, void* kernel, OnyxCustomOpKernelContext* ctx) {
  int32_t t;
  const int64_t* dims;
  size_t rank, n, k;
  const void* x;
  void* out;
  OnyxCustomOpStatus* s;
  (void)op_data;
  (void)kernel;
  if ((s = g_api->kernel_input(ctx, 0, &t, &dims, &rank, &x))) return s;
  if (t != 1) return g_api->make_error("input must be float");
  if ((s = g_api->kernel_allocate_output(ctx, 0, 6, dims, rank, &out))) return s;
  n = element_count(dims, rank);
  for (k = 0; k < n; ++k) ((int32_t*)out)[k] = (int32_t)lroundf(((const float*)x)[k]);
  return NULL;
}

typedef struct {
  float scale, shift;
} ScaleShift;

/* Counts live ScaleShift kernels, for the test that sessions free them (read through the exported function). */
static int g_live_kernels;
ONYX_CUSTOM_OP_EXPORT int custom_op_library_live_kernels(void) { return g_live_kernels; }

static OnyxCustomOpStatus* scale_create(void* op_data, const OnyxCustomOpKernelInfo* info, void** kernel) {
  const OnyxCustomOpAttributes* attrs = g_api->kernel_info_attributes(info);
  ScaleShift* state;
  const char* mode = "linear";
  float scale = 1, shift = 0;
  OnyxCustomOpStatus* s;
  (void)op_data;
  if ((s = g_api->attribute_float(attrs, "scale", &scale))) return s; /* required */
  if (g_api->has_attribute(attrs, "shift") && (s = g_api->attribute_float(attrs, "shift", &shift))) return s;
  if (g_api->has_attribute(attrs, "mode") && (s = g_api->attribute_string(attrs, "mode", &mode, NULL))) return s;
  if (strcmp(mode, "linear") != 0) return g_api->make_error("mode must be \"linear\"");
  state = (ScaleShift*)malloc(sizeof *state);
  if (!state) return g_api->make_error("out of memory");
  state->scale = scale;
  state->shift = shift;
  *kernel = state;
  ++g_live_kernels;
  return NULL;
}

static void scale_destroy(void* op_data, void* kernel) {
  (void)op_data;
  free(kernel);
  --g_live_kernels;
}

static OnyxCustomOpStatus* scale_compute(void* op_data, void* kernel, OnyxCustomOpKernelContext* ctx) {
  const ScaleShift* state = (const ScaleShift*)kernel;
  int32_t t;
  const int64_t* dims;
  size_t rank, n, k;
  const void* x;
  void* out;
  OnyxCustomOpStatus* s;
  (void)op_data;
  if ((s = g_api->kernel_input(ctx, 0, &t, &dims, &rank, &x))) return s;
  if (t != 1) return g_api->make_error("input must be float");
  if ((s = g_api->kernel_allocate_output(ctx, 0, 1, dims, rank, &out))) return s;
  n = element_count(dims, rank);
  for (k = 0; k < n; ++k) ((float*)out)[k] = ((const float*)x)[k] * state->scale + state->shift;
  return NULL;
}

#ifdef ONYX_TEST_NO_ENTRY_POINT
#define ENTRY_POINT custom_op_library_misnamed_entry_point
#else
#define ENTRY_POINT onyx_register_custom_ops
#endif
ONYX_CUSTOM_OP_EXPORT OnyxCustomOpStatus* ENTRY_POINT(const OnyxCustomOpApi* api, OnyxCustomOpRegistry* registry) {
  OnyxCustomOp op;
  OnyxCustomOpStatus* s;
  /* make_error is in every version: an older onyx can still be told why. */
  if (api->version < ONYX_CUSTOM_OP_API_VERSION) return api->make_error("onyx is older than this library needs");
  g_api = api;

  memset(&op, 0, sizeof op);
  op.version = ONYX_CUSTOM_OP_API_VERSION;
  op.domain = "test.customop";
  op.since_version = 1;
  op.min_outputs = op.max_outputs = 1;

  op.op_type = "CustomOpOne";
  op.min_inputs = op.max_inputs = 2;
  op.infer = one_infer;
  op.compute = one_compute;
  if ((s = api->register_op(registry, &op))) return s;

  op.op_type = "CustomOpTwo";
  op.min_inputs = op.max_inputs = 1;
  op.infer = two_infer;
  op.compute = two_compute;
  if ((s = api->register_op(registry, &op))) return s;

  op.op_type = "ScaleShift";
  op.infer = one_infer;
  op.create_kernel = scale_create;
  op.destroy_kernel = scale_destroy;
  op.compute = scale_compute;
  return api->register_op(registry, &op);
}
