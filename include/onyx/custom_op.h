/* Custom operators from shared libraries: the C interface between onyx and a library of ops of the user's own.
 * Pure C99 and self-contained: a library includes only this header and links nothing of onyx (onyx hands it every
 * function it may call, in OnyxCustomOpApi).
 *
 * Loading
 *   A session loads the libraries its options name (C++ SessionOptions::custom_op_libraries, C
 *   onyx_session_options_add_custom_op_library, Python SessionOptions.register_custom_ops_library) with dlopen,
 *   then calls the function each exports under the name ONYX_CUSTOM_OPS_ENTRY_POINT:
 *
 *     ONYX_CUSTOM_OP_EXPORT OnyxCustomOpStatus* onyx_register_custom_ops(const OnyxCustomOpApi* api,
 *                                                                        OnyxCustomOpRegistry* registry);
 *
 *   It registers its ops with api->register_op and returns NULL, or an error from api->make_error (the session is
 *   then not created, and the message says which library failed). It should first check api->version against
 *   the version it needs (ONYX_CUSTOM_OP_API_VERSION of the header it was built with) and fail if it is older.
 *   The ops a library registers are visible to that session only; a session keeps each library loaded as long
 *   as it, or any kernel made from it, lives. Loading one library into several sessions calls its entry point
 *   once per session.
 *
 * Binding
 *   A node binds to a registered op by domain, op_type and version: the highest since_version not above the
 *   model's opset_import of the domain. A model that imports no version of a domain a library registers gets the
 *   domain's highest registered version (ONNX Runtime accepts such models too). Domains onyx implements as
 *   standard (ai.onnx, ai.onnx.ml, ai.onnx.preview, ai.onnx.preview.training), and ops onyx already has, cannot
 *   be registered. Custom ops are never run at session creation (constant folding leaves them alone).
 *
 * Errors
 *   Every callback and every api function that can fail returns OnyxCustomOpStatus*: NULL on success, otherwise
 *   an error. A callback returns either NULL, an error it made with api->make_error, or an error an api function
 *   gave it; onyx takes ownership of the returned error and frees it. A callback that ignores an api error must
 *   pass it to api->release_status. onyx reports callback errors as errors that name the model, the node, the op
 *   and the library. Callbacks must not throw C++ exceptions or longjmp out.
 *
 * Versioning (the ABI contract)
 *   OnyxCustomOpApi and OnyxCustomOp only grow at their end; members are never removed, reordered or changed.
 *   Each addition increments ONYX_CUSTOM_OP_API_VERSION and is commented "since V". OnyxCustomOp carries the
 *   version the library was built with, so onyx reads only the members that library knows. Handles are opaque.
 *   Element types are ONNX's TensorProto.DataType numbers (1 float, 6 int32, 7 int64, 9 bool as one byte 0/1,
 *   11 double, ...; the same numbers as OnyxElementType in onyx/onyx.h); 0 means unknown or absent.
 *
 * Threads
 *   A session may run on several threads at once: `compute` may be called concurrently, also for one kernel
 *   instance, and must only read the kernel state that create_kernel made.
 *
 * Building a library (see tests/custom_op/custom_op_library.c for a complete one):
 *   cc -shared -fPIC -I<onyx>/include my_ops.c -o libmy_ops.so
 */
#ifndef ONYX_CUSTOM_OP_H
#define ONYX_CUSTOM_OP_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define ONYX_CUSTOM_OP_EXPORT __attribute__((visibility("default")))
#else
#define ONYX_CUSTOM_OP_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The newest version of OnyxCustomOpApi and OnyxCustomOp this header describes. */
#define ONYX_CUSTOM_OP_API_VERSION 1
/* The name of the function a custom-op library exports (see the signature above and OnyxRegisterCustomOpsFn). */
#define ONYX_CUSTOM_OPS_ENTRY_POINT "onyx_register_custom_ops"

/* An error: made by api->make_error or returned by an api function; owned by whoever holds it last. */
typedef struct OnyxCustomOpStatus OnyxCustomOpStatus;
/* Where the entry point registers ops (valid only during the entry point's call). */
typedef struct OnyxCustomOpRegistry OnyxCustomOpRegistry;
/* What type/shape inference knows of a node's inputs (valid only during the infer callback). */
typedef struct OnyxCustomOpInferContext OnyxCustomOpInferContext;
/* A node's attributes (valid only during the callback that got it: infer or create_kernel). */
typedef struct OnyxCustomOpAttributes OnyxCustomOpAttributes;
/* The node a kernel is made for (valid only during create_kernel). */
typedef struct OnyxCustomOpKernelInfo OnyxCustomOpKernelInfo;
/* One node's run: its inputs and outputs (valid only during compute). */
typedef struct OnyxCustomOpKernelContext OnyxCustomOpKernelContext;

/* One op. register_op copies it, strings included: it may live on the entry point's stack. */
typedef struct OnyxCustomOp {
  uint32_t version;       /* ONYX_CUSTOM_OP_API_VERSION of the header the library was built with */
  const char* domain;     /* e.g. "com.example"; not empty and not a standard domain */
  const char* op_type;    /* e.g. "MyOp" */
  int32_t since_version;  /* the opset version of `domain` the op exists from (>= 1) */
  /* The node's input and output counts must lie in [min, max]; max -1: no upper bound (variadic). An input left
   * empty in the model (an omitted optional input) counts, and reads as absent (element type 0). */
  int32_t min_inputs, max_inputs;
  int32_t min_outputs, max_outputs;
  void* op_data; /* passed to every callback of the op; the library owns it (it lives as long as the library) */

  /* Type and shape inference, at session creation: sets each output's element type and shape with
   * api->infer_set_output / api->infer_set_output_like_input. Outputs it does not set stay unknown. NULL: every
   * output is unknown until run time. */
  OnyxCustomOpStatus* (*infer)(void* op_data, OnyxCustomOpInferContext* context);
  /* Optional (NULL: the kernel state is NULL): makes the state of one node's kernel (attributes read and checked,
   * say) at session creation and stores it in *kernel. */
  OnyxCustomOpStatus* (*create_kernel)(void* op_data, const OnyxCustomOpKernelInfo* info, void** kernel);
  /* Optional: frees a state create_kernel made, when the session goes. */
  void (*destroy_kernel)(void* op_data, void* kernel);
  /* Required: runs the node, reading inputs with api->kernel_input and writing outputs it makes with
   * api->kernel_allocate_output. Every output the node has must be allocated. */
  OnyxCustomOpStatus* (*compute)(void* op_data, void* kernel, OnyxCustomOpKernelContext* context);
} OnyxCustomOp;

/* What onyx offers a library. Every pointer argument must be non-NULL unless its comment says otherwise. */
typedef struct OnyxCustomOpApi {
  uint32_t version; /* onyx's ONYX_CUSTOM_OP_API_VERSION (>= 1) */

  /* since 1 */

  /* ---- registration and errors ---- */
  /* Registers one op; an error when a field is invalid or the same (domain, op_type, since_version) is there. */
  OnyxCustomOpStatus* (*register_op)(OnyxCustomOpRegistry* registry, const OnyxCustomOp* op);
  /* A new error with a copy of `message`; never NULL. */
  OnyxCustomOpStatus* (*make_error)(const char* message);
  /* The message of an error (owned by it); "" for NULL. */
  const char* (*status_message)(const OnyxCustomOpStatus* status);
  /* Frees an error the library will not return; accepts NULL. */
  void (*release_status)(OnyxCustomOpStatus* status);

  /* ---- inference ---- */
  size_t (*infer_input_count)(const OnyxCustomOpInferContext* context);
  size_t (*infer_output_count)(const OnyxCustomOpInferContext* context);
  /* Input `index`'s element type; 0 when unknown, absent, out of range or not a tensor. */
  int32_t (*infer_input_element_type)(const OnyxCustomOpInferContext* context, size_t index);
  /* Input `index`'s rank; -1 when unknown (or absent, out of range, not a tensor). */
  int64_t (*infer_input_rank)(const OnyxCustomOpInferContext* context, size_t index);
  /* Dim `axis` of input `index`; -1 when it is not a known number (symbolic or unknown), or out of range. */
  int64_t (*infer_input_dim)(const OnyxCustomOpInferContext* context, size_t index, size_t axis);
  /* Output `index` is a tensor of `element_type` (0: unknown). rank -1: shape unknown (dims may be NULL); else
   * `rank` dims, each >= 0 or -1 for an unknown dim. */
  OnyxCustomOpStatus* (*infer_set_output)(OnyxCustomOpInferContext* context, size_t index, int32_t element_type,
                                          const int64_t* dims, int64_t rank);
  /* Output `output` is a tensor of `element_type` with input `input`'s shape (its symbolic dims included). */
  OnyxCustomOpStatus* (*infer_set_output_like_input)(OnyxCustomOpInferContext* context, size_t output,
                                                     size_t input, int32_t element_type);
  const OnyxCustomOpAttributes* (*infer_attributes)(const OnyxCustomOpInferContext* context);

  /* ---- attributes (of the infer context or kernel info they come from; strings owned by the session) ---- */
  /* 1 when the node has attribute `name` (of any type), else 0. */
  int32_t (*has_attribute)(const OnyxCustomOpAttributes* attributes, const char* name);
  /* The attribute's value; an error naming it when it is missing or of another type. */
  OnyxCustomOpStatus* (*attribute_int)(const OnyxCustomOpAttributes* attributes, const char* name, int64_t* value);
  OnyxCustomOpStatus* (*attribute_float)(const OnyxCustomOpAttributes* attributes, const char* name, float* value);
  /* A NUL-terminated string and its length in bytes (length may be NULL). */
  OnyxCustomOpStatus* (*attribute_string)(const OnyxCustomOpAttributes* attributes, const char* name,
                                          const char** value, size_t* length);
  /* A list: *count gets its length; the first min(count, capacity) elements go to `values` (NULL when capacity
   * is 0), so a call with capacity 0 asks for the length. */
  OnyxCustomOpStatus* (*attribute_ints)(const OnyxCustomOpAttributes* attributes, const char* name,
                                        int64_t* values, size_t capacity, size_t* count);
  OnyxCustomOpStatus* (*attribute_floats)(const OnyxCustomOpAttributes* attributes, const char* name,
                                          float* values, size_t capacity, size_t* count);

  /* ---- kernel creation ---- */
  const OnyxCustomOpAttributes* (*kernel_info_attributes)(const OnyxCustomOpKernelInfo* info);
  size_t (*kernel_info_input_count)(const OnyxCustomOpKernelInfo* info);
  size_t (*kernel_info_output_count)(const OnyxCustomOpKernelInfo* info);
  /* Input `index`'s element type as inferred at creation; 0 when unknown. */
  int32_t (*kernel_info_input_element_type)(const OnyxCustomOpKernelInfo* info, size_t index);

  /* ---- compute ---- */
  size_t (*kernel_input_count)(const OnyxCustomOpKernelContext* context);
  size_t (*kernel_output_count)(const OnyxCustomOpKernelContext* context);
  /* Input `index`: a tensor of `*element_type` with `*rank` dims at `*dims` and its elements at `*data`
   * (row-major, packed for sub-byte types; read-only; NULL when it has no elements). An absent optional input gives
   * element type 0, rank 0 and NULL pointers. An error for string tensors and values that are not tensors. Any
   * of the out-pointers may be NULL. The pointers stay valid until compute returns. */
  OnyxCustomOpStatus* (*kernel_input)(const OnyxCustomOpKernelContext* context, size_t index, int32_t* element_type,
                                      const int64_t** dims, size_t* rank, const void** data);
  /* Makes output `index` a tensor of `element_type` and `rank` dims (each >= 0; dims may be NULL for rank 0),
   * zero-filled, and gives its memory in *data (NULL when it has no elements), valid until compute returns.
   * Calling it again for the same output replaces the earlier tensor. Not for string tensors. */
  OnyxCustomOpStatus* (*kernel_allocate_output)(OnyxCustomOpKernelContext* context, size_t index,
                                                int32_t element_type, const int64_t* dims, size_t rank,
                                                void** data);

  /* Members of later versions are appended here. */
} OnyxCustomOpApi;

/* The type of the entry point a library exports as ONYX_CUSTOM_OPS_ENTRY_POINT. */
typedef OnyxCustomOpStatus* (*OnyxRegisterCustomOpsFn)(const OnyxCustomOpApi* api, OnyxCustomOpRegistry* registry);

#ifdef __cplusplus
}
#endif

#endif /* ONYX_CUSTOM_OP_H */
